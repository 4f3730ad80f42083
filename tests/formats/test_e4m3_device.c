/* The device's e4m3 encoders (modules/kernels/common/e4m3.cuh) compiled for the
 * CPU, against the host's memra_e4m3_encode (core/weights/formats.c), and the
 * reciprocal division (memra_div_y, memra_div4_y) against IEEE division.
 *
 *   test_e4m3_device <e4m3.cuh>      a fixed set of bit patterns: every
 *       sign / exponent / top-3-mantissa combination with the 20 low bits at
 *       each rounding edge (0, 1, half - 1, half, half + 1, all ones), every
 *       pattern below 2^-6 whose low 10 bits are an edge of the same kind
 *       (the e4m3 denormals round on bit 22 - e), 2^24 patterns of a fixed
 *       stride; then 2^22 random (x, amax) pairs through the division.
 *   MEMRA_TEST_EXHAUSTIVE=1: all 2^32 patterns (about a minute).
 *
 * The header is included as C with the few CUDA names it uses defined here
 * (MEMRA_E4M3_ENCODERS_ONLY leaves out the quantiser loops). On the host
 * memra_e4m3_pack4 is the encoder's four calls; the hardware conversion it
 * uses on sm_89 and later is checked on the device by test_e4m3_hw. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "test.h"

#define __device__
#define __forceinline__ static inline
typedef struct float4 {
    float x, y, z, w;
} float4;
static inline float4 make_float4(float x, float y, float z, float w) { return (float4){x, y, z, w}; }
static inline unsigned int __float_as_uint(float f)
{
    unsigned int u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float __uint_as_float(unsigned int u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline unsigned int __float2uint_rn(float f) { return (unsigned int)rintf(f); }

#define MEMRA_E4M3_ENCODERS_ONLY 1
#define memra_e4m3_encode memra_e4m3_encode_dev /* the device's names beside the host's */
#define memra_e4m3_decode memra_e4m3_decode_dev
#include "modules/kernels/common/e4m3.cuh"
#undef memra_e4m3_encode
#undef memra_e4m3_decode

static long g_bad;

static void check_pattern(uint32_t u)
{
    const float f = __uint_as_float(u);
    const unsigned int want = memra_e4m3_encode(f);
    const unsigned int a = memra_e4m3_encode_sel(f), b = memra_e4m3_encode_dev(f) & 0xFFu;
    const unsigned int p = memra_e4m3_pack4(f, f, f, f);
    if (a != want || b != want || p != want * 0x01010101u) {
        if (g_bad++ < 8)
            printf("  0x%08x (%g): host 0x%02x, encode_sel 0x%02x, encode 0x%02x, pack4 0x%08x  FAIL\n", u, (double)f,
                   want, a, b, p);
    }
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv;
    const char *ex = getenv("MEMRA_TEST_EXHAUSTIVE");
    long n = 0;
    if (ex != NULL && strcmp(ex, "1") == 0) {
        for (uint64_t u = 0; u <= 0xFFFFFFFFull; u++) check_pattern((uint32_t)u);
        n = 1L << 32;
    } else {
        static const uint32_t edge20[] = {0, 1, 0x7FFFF, 0x80000, 0x80001, 0xFFFFF};
        for (uint32_t top = 0; top < 4096; top++)
            for (size_t e = 0; e < sizeof edge20 / sizeof edge20[0]; e++, n++) check_pattern(top << 20 | edge20[e]);
        /* below 2^-6: the code is rint(|f| * 512); its edges sit at every low-bit position */
        static const uint32_t edge10[] = {0, 1, 0x1FF, 0x200, 0x201, 0x3FF};
        for (uint32_t hi = 0; hi < (0x3C800000u >> 10); hi++)
            for (size_t e = 0; e < sizeof edge10 / sizeof edge10[0]; e++, n += 2) {
                check_pattern(hi << 10 | edge10[e]);
                check_pattern(0x80000000u | hi << 10 | edge10[e]);
            }
        for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 251, n++) check_pattern((uint32_t)u);
    }
    printf("encoders: %ld patterns, %ld differ from the host's memra_e4m3_encode\n", n, g_bad);
    /* the reciprocal division of the quantisers: x / (amax / 448) with amax >= |x|, and any pair */
    long dbad = 0;
    for (long i = 0; i < (1L << 22); i++) {
        float x = __uint_as_float((rnd() & 0x8FFFFFFFu) | (rnd() & 0x70000000u)), amax;
        if (i & 1) {
            amax = fabsf(x) * (1.0f + (float)(rnd() % 1000) / 100.0f);
        } else {
            amax = __uint_as_float(rnd() & 0x7FFFFFFFu);
        }
        if (!(amax > 0.0f) || !isfinite(amax) || isnan(x)) continue;
        const float s = memra_div_y(amax, 448.0f, 0x1.24924ap-9f);
        if (s != amax / 448.0f) {
            if (dbad++ < 8) printf("  scale of amax %a: %a, IEEE %a  FAIL\n", (double)amax, (double)s, (double)(amax / 448.0f));
            continue;
        }
        const float y = s >= 0x1p-96f && s <= 0x1p96f ? 1.0f / s : 0.0f;
        const float4 v = make_float4(x, -x * 0.5f, x * 0.25f, __uint_as_float(rnd() & 0x3FFFFFFFu));
        const float4 q = memra_div4_y(v, s, y);
        const float want[4] = {v.x / s, v.y / s, v.z / s, v.w / s}, got[4] = {q.x, q.y, q.z, q.w};
        for (int j = 0; j < 4; j++)
            if (memcmp(&want[j], &got[j], 4) != 0 && dbad++ < 8)
                printf("  %a / %a: %a, IEEE %a  FAIL\n", (double)((const float *)&v)[j], (double)s, (double)got[j],
                       (double)want[j]);
    }
    printf("division: 2^22 pairs, %ld differ from IEEE division\n", dbad);
    CHECK(g_bad == 0 && dbad == 0);
    printf("PASS\n");
    return 0;
}
