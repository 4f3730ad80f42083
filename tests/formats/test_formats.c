/* Known-answer tests of the block formats, f16 and e4m3 (include/memra/formats.h).
 *
 *   test_formats <case>     case: table f16 e4m3 q8_0 q4_0 q4_k q5_k q6_k kpacked kr_tc wg_seed w16
 *
 * Expected values come from the layout written down here value by value (an
 * index -> byte/bit mapping independent of the decoder's loops), from literal
 * numbers worked out on paper, or from independent formulas in double.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../modules/kernels/mmq/mmq.h" /* the seeded warpgroup tile's numbers (R3W_SD_*, MMQ_MAGIC) */
#include "memra/formats.h"
#include "test.h"
#include "tools/judge.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#define CHECK_F32_EQ(got, want)                                                     \
    do {                                                                            \
        float g_ = (got), w_ = (want);                                              \
        if (!(g_ == w_ && !!signbit(g_) == !!signbit(w_)))                               \
            TEST_FAIL_AT("%s == %s: %.9g (0x%08x) != %.9g (0x%08x)", #got, #want,   \
                         (double)g_, (unsigned)bits_of(g_), (double)w_, (unsigned)bits_of(w_)); \
    } while (0)

#define CHECK_HEX_EQ(got, want)                                                     \
    do {                                                                            \
        unsigned g_ = (unsigned)(got), w_ = (unsigned)(want);                       \
        if (g_ != w_) TEST_FAIL_AT("%s == %s: 0x%x != 0x%x", #got, #want, g_, w_);  \
    } while (0)

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* ---- format table ------------------------------------------------------- */

static void case_table(void)
{
    CHECK_INT_EQ(memra_format_block_values(MEMRA_FORMAT_Q8_0), 32);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_Q8_0), 34);
    CHECK_INT_EQ(memra_format_block_values(MEMRA_FORMAT_Q4_0), 32);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_Q4_0), 18);
    CHECK_INT_EQ(memra_format_block_values(MEMRA_FORMAT_Q4_K), 256);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_Q4_K), 144);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_Q5_K), 176);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_Q6_K), 210);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_E4M3), 1);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_F16), 2);
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_F32), 4);
    CHECK_INT_EQ(memra_format_block_values((memra_format)99), 0);
    CHECK_STR_EQ(memra_format_name(MEMRA_FORMAT_Q5_K), "q5_k");
    CHECK_STR_EQ(memra_format_name((memra_format)99), "unknown");
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_Q4_K, 2048), 8 * 144);
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_Q8_0, 96), 3 * 34);
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_Q8_0, 100), 0);
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_Q6_K, -256), 0);
    CHECK_INT_EQ(memra_format_row_bytes(MEMRA_FORMAT_E4M3, 7), 7);
    CHECK_INT_EQ(memra_fp8_grid_rows(129), 2);
    CHECK_INT_EQ(memra_fp8_grid_cols(128), 1);
    CHECK_INT_EQ(memra_q8_1_bytes(3, 100), 4 * 3 * 160);
    CHECK_INT_EQ(memra_q8_1_plane(3, 100), 4 * 3 * 144);
    CHECK_INT_EQ(memra_q8_1_bytes(2, 513), 8 * 2 * 160);
}

/* ---- f16 ------------------------------------------------------------------ */

/* The value of an f16 code, from the IEEE definition, in double. */
static double f16_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static void case_bf16(void)
{
    /* literal conversions worked out by hand */
    CHECK_HEX_EQ(memra_bf16_from_f32(1.0f), 0x3F80);
    CHECK_HEX_EQ(memra_bf16_from_f32(-2.0f), 0xC000);
    CHECK_HEX_EQ(memra_bf16_from_f32(-0.0f), 0x8000);
    CHECK_HEX_EQ(memra_bf16_from_f32(1.0f + 0x1p-8f), 0x3F80);     /* tie, even mantissa 0 stays */
    CHECK_HEX_EQ(memra_bf16_from_f32(1.0f + 3 * 0x1p-8f), 0x3F82); /* tie between 0x3F81 and 0x3F82 */
    CHECK_HEX_EQ(memra_bf16_from_f32(nextafterf(1.0f + 0x1p-8f, 2.0f)), 0x3F81);
    CHECK_HEX_EQ(memra_bf16_from_f32(0x1p-133f), 0x0001);          /* smallest bf16 subnormal */
    CHECK_HEX_EQ(memra_bf16_from_f32(0x1p-149f), 0x0000);          /* below half of it: zero */
    CHECK_HEX_EQ(memra_bf16_from_f32(3.3895314e38f), 0x7F7F);      /* the largest bf16 */
    CHECK_HEX_EQ(memra_bf16_from_f32(3.4028235e38f), 0x7F80);      /* FLT_MAX rounds to infinity */
    CHECK_HEX_EQ(memra_bf16_from_f32(-INFINITY), 0xFF80);
    CHECK_HEX_EQ(memra_bf16_from_f32(1e30f), 0x714A);               /* 0x7149F2CA rounds up; f16 would overflow */
    const uint16_t hn = memra_bf16_from_f32(-NAN);
    CHECK((hn & 0x7F80) == 0x7F80 && (hn & 0x7F) != 0 && (hn & 0x8000));
    /* every code decodes exactly and encodes back to itself (NaN: to a NaN) */
    for (uint32_t h = 0; h < 65536; h++) {
        const float v = memra_f32_from_bf16((uint16_t)h);
        uint32_t u;
        memcpy(&u, &v, 4);
        CHECK_HEX_EQ(u, h << 16);
        if (v == v) CHECK_HEX_EQ(memra_bf16_from_f32(v), h);
        else CHECK(memra_f32_from_bf16(memra_bf16_from_f32(v)) != memra_f32_from_bf16(memra_bf16_from_f32(v)));
    }
    CHECK_INT_EQ(memra_format_block_bytes(MEMRA_FORMAT_BF16), 2);
    CHECK_STR_EQ(memra_format_name(MEMRA_FORMAT_BF16), "bf16");
}

static void case_f16(void)
{
    /* literal conversions worked out by hand */
    CHECK_HEX_EQ(memra_f16_from_f32(1.0f), 0x3C00);
    CHECK_HEX_EQ(memra_f16_from_f32(-2.0f), 0xC000);
    CHECK_HEX_EQ(memra_f16_from_f32(0.0f), 0x0000);
    CHECK_HEX_EQ(memra_f16_from_f32(-0.0f), 0x8000);
    CHECK_HEX_EQ(memra_f16_from_f32(65504.0f), 0x7BFF);
    CHECK_HEX_EQ(memra_f16_from_f32(65519.996f), 0x7BFF);   /* just under the halfway point */
    CHECK_HEX_EQ(memra_f16_from_f32(65520.0f), 0x7C00);     /* tie: 0x7BFF is odd, goes up to inf */
    CHECK_HEX_EQ(memra_f16_from_f32(-1e10f), 0xFC00);
    CHECK_HEX_EQ(memra_f16_from_f32(INFINITY), 0x7C00);
    CHECK_HEX_EQ(memra_f16_from_f32(-INFINITY), 0xFC00);
    CHECK_HEX_EQ(memra_f16_from_f32(0x1p-14f), 0x0400);     /* smallest normal */
    CHECK_HEX_EQ(memra_f16_from_f32(0x1p-24f), 0x0001);     /* smallest subnormal */
    CHECK_HEX_EQ(memra_f16_from_f32(0x1p-25f), 0x0000);     /* tie between 0 and 1: even */
    CHECK_HEX_EQ(memra_f16_from_f32(nextafterf(0x1p-25f, 1.0f)), 0x0001);
    CHECK_HEX_EQ(memra_f16_from_f32(-0x1p-26f), 0x8000);
    CHECK_HEX_EQ(memra_f16_from_f32(0x1p-149f), 0x0000);    /* f32 subnormal */
    CHECK_HEX_EQ(memra_f16_from_f32(3 * 0x1p-25f), 0x0002); /* 1.5 units: tie to 2 */
    CHECK_HEX_EQ(memra_f16_from_f32(5 * 0x1p-25f), 0x0002); /* 2.5 units: tie to 2 */
    CHECK_HEX_EQ(memra_f16_from_f32(1023 * 0x1p-24f), 0x03FF);
    CHECK_HEX_EQ(memra_f16_from_f32(2047 * 0x1p-25f), 0x0400); /* 1023.5 units: tie to 1024 = normal */
    CHECK_HEX_EQ(memra_f16_from_f32(1.0f + 0x1p-11f), 0x3C00); /* tie, even mantissa 0 */
    CHECK_HEX_EQ(memra_f16_from_f32(1.0f + 3 * 0x1p-11f), 0x3C02); /* tie between 0x3C01 and 0x3C02 */
    CHECK_HEX_EQ(memra_f16_from_f32(-(1.0f + 0x1p-10f)), 0xBC01);
    CHECK_HEX_EQ(memra_f16_from_f32(2047.0f), 0x67FF);  /* exponent 25, mantissa all ones */
    CHECK_HEX_EQ(memra_f16_from_f32(4095.0f), 0x6C00);  /* tie between 4094 (odd) and 4096 */
    CHECK_HEX_EQ(memra_f16_from_f32(0.1f), 0x2E66);
    uint16_t hn = memra_f16_from_f32(NAN);
    CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0);
    hn = memra_f16_from_f32(-NAN);
    CHECK((hn & 0xFC00) == 0xFC00 && (hn & 0x3FF) != 0);
    hn = memra_f16_from_f32(float_of(0x7F800001u)); /* signalling NaN with a low payload stays NaN */
    CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0);

    /* every code decodes to its IEEE value, and finite codes round-trip */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = memra_f32_from_f16((uint16_t)h);
        double want = f16_value((uint16_t)h);
        if (isnan(want)) {
            CHECK(isnan(f));
            CHECK_INT_EQ(!!signbit(f), h >> 15);
            continue;
        }
        if (!((double)f == want && !!signbit(f) == (int)(h >> 15)))
            TEST_FAIL_AT("f32_from_f16(0x%04x) = %.9g, want %.9g", (unsigned)h, (double)f, want);
        CHECK_HEX_EQ(memra_f16_from_f32(f), h);
    }

    /* random f32 in and around the f16 range: the result is a nearest code, ties even */
    uint64_t st = test_seed();
    for (int it = 0; it < 200000; it++) {
        int e = (int)(test_rand_u64(&st) % 48) - 30;  /* 2^-30 .. 2^17 */
        float x = ldexpf(1.0f + (float)(test_rand_u64(&st) >> 41) * 0x1p-23f, e);
        if (it % 7 == 0) x = ldexpf((float)(test_rand_u64(&st) % 4096) * 0.5f, -25); /* ties among subnormals */
        if (it % 2) x = -x;
        uint16_t h = memra_f16_from_f32(x);
        double ax = fabs((double)x);
        if (ax >= 65520.0) {
            CHECK_HEX_EQ(h & 0x7FFF, 0x7C00);
            continue;
        }
        uint16_t mag = h & 0x7FFF;
        CHECK_INT_EQ(h >> 15, x < 0 || signbit(x));
        double d0 = fabs(ax - f16_value(mag));
        double dlo = mag > 0 ? fabs(ax - f16_value((uint16_t)(mag - 1))) : INFINITY;
        double dhi = fabs(ax - (mag + 1 == 0x7C00 ? 65536.0 : f16_value((uint16_t)(mag + 1))));
        if (d0 > dlo || d0 > dhi || ((d0 == dlo || d0 == dhi) && (mag & 1)))
            TEST_FAIL_AT("f16_from_f32(%.9g) = 0x%04x is not the nearest-even code", (double)x, (unsigned)h);
    }
}

/* ---- e4m3 ------------------------------------------------------------------ */

static double e4m3_value(uint8_t c)
{
    int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return NAN;
    double v = e == 0 ? m / 512.0 : (1.0 + m / 8.0) * pow(2.0, e - 7);
    return s ? -v : v;
}

static void case_e4m3(void)
{
    /* literals */
    CHECK_F32_EQ(memra_e4m3_decode(0x7E), 448.0f);
    CHECK_F32_EQ(memra_e4m3_decode(0xFE), -448.0f);
    CHECK_F32_EQ(memra_e4m3_decode(0x38), 1.0f);
    CHECK_F32_EQ(memra_e4m3_decode(0xB8), -1.0f);
    CHECK_F32_EQ(memra_e4m3_decode(0x3F), 1.875f);
    CHECK_F32_EQ(memra_e4m3_decode(0x77), 240.0f);
    CHECK_F32_EQ(memra_e4m3_decode(0x08), 0.015625f);
    CHECK_F32_EQ(memra_e4m3_decode(0x07), 0.013671875f); /* 7 * 2^-9 */
    CHECK_F32_EQ(memra_e4m3_decode(0x01), 0.001953125f);
    CHECK_F32_EQ(memra_e4m3_decode(0x80), -0.0f);
    CHECK(isnan(memra_e4m3_decode(0x7F)) && !signbit(memra_e4m3_decode(0x7F)));
    CHECK(isnan(memra_e4m3_decode(0xFF)) && signbit(memra_e4m3_decode(0xFF)));

    /* all 256 codes against the formula; every non-NaN code round-trips */
    int nans = 0;
    for (int c = 0; c < 256; c++) {
        double want = e4m3_value((uint8_t)c);
        float got = memra_e4m3_decode((uint8_t)c);
        if (isnan(want)) {
            CHECK(isnan(got));
            CHECK(memra_e4m3_is_nan((uint8_t)c));
            CHECK_HEX_EQ(memra_e4m3_encode(got), c);
            nans++;
            continue;
        }
        CHECK(!memra_e4m3_is_nan((uint8_t)c));
        if (!((double)got == want && !!signbit(got) == (c >> 7)))
            TEST_FAIL_AT("e4m3_decode(0x%02x) = %.9g, want %.9g", (unsigned)c, (double)got, want);
        CHECK_HEX_EQ(memra_e4m3_encode(got), c);
    }
    CHECK_INT_EQ(nans, 2);

    /* zeros, NaN, saturation */
    CHECK_HEX_EQ(memra_e4m3_encode(0.0f), 0x00);
    CHECK_HEX_EQ(memra_e4m3_encode(-0.0f), 0x80);
    CHECK_HEX_EQ(memra_e4m3_encode(NAN), 0x7F);
    CHECK_HEX_EQ(memra_e4m3_encode(-NAN), 0xFF);
    CHECK_HEX_EQ(memra_e4m3_encode(INFINITY), 0x7E);
    CHECK_HEX_EQ(memra_e4m3_encode(-INFINITY), 0xFE);
    CHECK_HEX_EQ(memra_e4m3_encode(448.0f), 0x7E);
    CHECK_HEX_EQ(memra_e4m3_encode(nextafterf(448.0f, 1e9f)), 0x7E);
    CHECK_HEX_EQ(memra_e4m3_encode(456.0f), 0x7E); /* would tie to the NaN slot: saturates */
    CHECK_HEX_EQ(memra_e4m3_encode(464.0f), 0x7E);
    CHECK_HEX_EQ(memra_e4m3_encode(480.0f), 0x7E);
    CHECK_HEX_EQ(memra_e4m3_encode(-1e30f), 0xFE);
    CHECK_HEX_EQ(memra_e4m3_encode(FLT_MAX), 0x7E);
    CHECK_HEX_EQ(memra_e4m3_encode(440.0f), 0x7E);  /* tie 416 (m=5) / 448 (m=6): even 448 */
    CHECK_HEX_EQ(memra_e4m3_encode(432.0f), 0x7E);  /* closer to 448 */
    CHECK_HEX_EQ(memra_e4m3_encode(431.0f), 0x7D);  /* closer to 416 */
    /* denormals (units of 2^-9) and the ties among them */
    CHECK_HEX_EQ(memra_e4m3_encode(0x1p-9f), 0x01);
    CHECK_HEX_EQ(memra_e4m3_encode(0x1p-10f), 0x00); /* tie 0 / 1: even */
    CHECK_HEX_EQ(memra_e4m3_encode(-0x1p-10f), 0x80);
    CHECK_HEX_EQ(memra_e4m3_encode(nextafterf(0x1p-10f, 1.0f)), 0x01);
    CHECK_HEX_EQ(memra_e4m3_encode(0x1p-11f), 0x00);
    CHECK_HEX_EQ(memra_e4m3_encode(0x1p-149f), 0x00);
    CHECK_HEX_EQ(memra_e4m3_encode(3 * 0x1p-10f), 0x02);  /* 1.5 units -> 2 */
    CHECK_HEX_EQ(memra_e4m3_encode(-3 * 0x1p-10f), 0x82);
    CHECK_HEX_EQ(memra_e4m3_encode(5 * 0x1p-10f), 0x02);  /* 2.5 -> 2 */
    CHECK_HEX_EQ(memra_e4m3_encode(7 * 0x1p-10f), 0x04);  /* 3.5 -> 4 */
    CHECK_HEX_EQ(memra_e4m3_encode(15 * 0x1p-10f), 0x08); /* 7.5 -> 8 = smallest normal 2^-6 */
    CHECK_HEX_EQ(memra_e4m3_encode(nextafterf(15 * 0x1p-10f, 0.0f)), 0x07);
    /* ties between every pair of adjacent finite codes, in every binade, both signs */
    for (int c = 0; c < 0x7E; c++) {
        float lo = memra_e4m3_decode((uint8_t)c), hi = memra_e4m3_decode((uint8_t)(c + 1));
        float mid = (lo + hi) * 0.5f; /* exact: a 5-bit mantissa */
        CHECK((double)mid == ((double)lo + (double)hi) / 2);
        int even = (c & 1) ? c + 1 : c;
        CHECK_HEX_EQ(memra_e4m3_encode(mid), even);
        CHECK_HEX_EQ(memra_e4m3_encode(-mid), 0x80 | even);
        CHECK_HEX_EQ(memra_e4m3_encode(nextafterf(mid, 0.0f)), c);
        CHECK_HEX_EQ(memra_e4m3_encode(nextafterf(mid, 1e9f)), c + 1);
        CHECK_HEX_EQ(memra_e4m3_encode(-nextafterf(mid, 1e9f)), 0x80 | (c + 1));
    }
}

/* ---- Q8_0 ------------------------------------------------------------------ */

static void case_q8_0(void)
{
    float x[32], y[32];
    uint8_t b[34];
    /* amax 127 -> d = 1.0 (0x3C00), id = 1: q = roundf(x), ties away from zero */
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16) * 0.25f;
    x[0] = -127.0f;
    x[1] = 127.0f;
    x[2] = 2.5f;
    x[3] = -2.5f;
    x[4] = 0.49f;
    x[5] = -0.5f;
    x[6] = 100.4f;
    memra_q8_0_encode(x, b);
    CHECK_HEX_EQ(b[0], 0x00);
    CHECK_HEX_EQ(b[1], 0x3C);
    const int want[7] = {-127, 127, 3, -3, 0, -1, 100};
    for (int j = 0; j < 7; j++) CHECK_INT_EQ((int8_t)b[2 + j], want[j]);
    for (int j = 7; j < 32; j++) CHECK_INT_EQ((int8_t)b[2 + j], (int)roundf((float)(j - 16) * 0.25f));
    memra_decode_row(MEMRA_FORMAT_Q8_0, b, 32, y);
    CHECK_F32_EQ(y[0], -127.0f);
    CHECK_F32_EQ(y[2], 3.0f);
    CHECK_F32_EQ(y[5], -1.0f);
    /* amax 254 -> d = 2 (0x4000), id = 0.5 */
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    x[9] = -254.0f;
    x[10] = 3.0f;  /* 1.5 -> 2 */
    x[11] = -5.0f; /* -2.5 -> -3 */
    x[12] = 0.9f;  /* 0.45 -> 0 */
    memra_q8_0_encode(x, b);
    CHECK_HEX_EQ(b[0] | (b[1] << 8), 0x4000);
    CHECK_INT_EQ((int8_t)b[2 + 9], -127);
    CHECK_INT_EQ((int8_t)b[2 + 10], 2);
    CHECK_INT_EQ((int8_t)b[2 + 11], -3);
    CHECK_INT_EQ((int8_t)b[2 + 12], 0);
    CHECK_INT_EQ((int8_t)b[2 + 0], 0);
    /* all zeros: d = 0, q = 0 */
    memset(x, 0, sizeof x);
    memra_q8_0_encode(x, b);
    for (int j = 0; j < 34; j++) CHECK_INT_EQ(b[j], 0);
    /* decode literals: d = 0.5 and d = -65504 and the smallest subnormal scale */
    memset(b, 0, sizeof b);
    put16(b, 0x3800);
    b[2] = 0x80; /* -128 */
    b[3] = 0x7F;
    b[4] = 0x01;
    b[5] = 0xFF;
    memra_decode_row(MEMRA_FORMAT_Q8_0, b, 32, y);
    CHECK_F32_EQ(y[0], -64.0f);
    CHECK_F32_EQ(y[1], 63.5f);
    CHECK_F32_EQ(y[2], 0.5f);
    CHECK_F32_EQ(y[3], -0.5f);
    CHECK_F32_EQ(y[4], 0.0f);
    put16(b, 0xFBFF);
    memra_decode_row(MEMRA_FORMAT_Q8_0, b, 32, y);
    CHECK_F32_EQ(y[0], 8384512.0f); /* -128 * -65504 */
    CHECK_F32_EQ(y[1], -8319008.0f);
    put16(b, 0x0001);
    memra_decode_row(MEMRA_FORMAT_Q8_0, b, 32, y);
    CHECK_F32_EQ(y[1], 127 * 0x1p-24f);
    /* round trips on random data, several blocks in one row:
     * |q * dh - x| <= d/2 (rounding of x * id, id = 1/d up to 1 ulp) + 127 |dh - d| */
    uint64_t st = test_seed();
    for (int it = 0; it < 2000; it++) {
        float row[96], back[96];
        uint8_t blk[3 * 34];
        float mag = ldexpf(1.0f, (int)(test_rand_u64(&st) % 40) - 20);
        for (int j = 0; j < 96; j++) row[j] = test_rand_f32(&st) * mag;
        for (int blkn = 0; blkn < 3; blkn++) memra_q8_0_encode(row + 32 * blkn, blk + 34 * blkn);
        memra_decode_row(MEMRA_FORMAT_Q8_0, blk, 96, back);
        for (int blkn = 0; blkn < 3; blkn++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(row[32 * blkn + j]));
            double d = (double)(amax / 127.0f);
            double dh = (double)memra_f32_from_f16((uint16_t)(blk[34 * blkn] | (blk[34 * blkn + 1] << 8)));
            CHECK_HEX_EQ(memra_f16_from_f32(amax / 127.0f), blk[34 * blkn] | (blk[34 * blkn + 1] << 8));
            for (int j = 0; j < 32; j++) {
                double err = fabs((double)back[32 * blkn + j] - (double)row[32 * blkn + j]);
                double band = 0.5 * d * (1 + 1e-4) + 127 * fabs(dh - d) + 1e-30; /* x * id is off x / d by a few ulp of 127 */
                if (err > band)
                    TEST_FAIL_AT("q8_0 round trip block %d [%d]: %.9g -> %.9g, err %.3g > band %.3g", blkn, j,
                                 (double)row[32 * blkn + j], (double)back[32 * blkn + j], err, band);
            }
        }
    }
}

/* ---- Q4_0 ------------------------------------------------------------------ */

static void case_q4_0(void)
{
    uint8_t b[2 * 18];
    float y[64];
    /* value j < 16: low nibble of qs[j]; j >= 16: high nibble of qs[j - 16]; (nib - 8) * d */
    put16(b, 0x4000); /* d = 2 */
    for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)(j | ((15 - j) << 4));
    put16(b + 18, 0xC000); /* second block d = -2, same nibbles */
    memcpy(b + 20, b + 2, 16);
    memra_decode_row(MEMRA_FORMAT_Q4_0, b, 64, y);
    CHECK_F32_EQ(y[0], -16.0f);
    CHECK_F32_EQ(y[8], 0.0f);
    CHECK_F32_EQ(y[15], 14.0f);
    CHECK_F32_EQ(y[16], 14.0f);
    CHECK_F32_EQ(y[31], -16.0f);
    CHECK_F32_EQ(y[32], 16.0f);
    CHECK_F32_EQ(y[63], 16.0f);
    for (int j = 0; j < 16; j++) {
        CHECK_F32_EQ(y[j], (float)(2 * (j - 8)));
        CHECK_F32_EQ(y[16 + j], (float)(2 * (7 - j)));
        CHECK_F32_EQ(y[32 + j], (float)(j - 8) * -2.0f); /* j = 8 gives -0 */
    }
    /* extreme scales: 65504 and the smallest subnormal */
    put16(b, 0x7BFF);
    memra_decode_row(MEMRA_FORMAT_Q4_0, b, 32, y);
    CHECK_F32_EQ(y[0], -524032.0f);
    CHECK_F32_EQ(y[15], 458528.0f);
    put16(b, 0x0001);
    memra_decode_row(MEMRA_FORMAT_Q4_0, b, 32, y);
    CHECK_F32_EQ(y[15], 7 * 0x1p-24f);
    CHECK_F32_EQ(y[31], -8 * 0x1p-24f);
    /* every nibble position alone */
    for (int j = 0; j < 32; j++) {
        memset(b, 0x88, 18); /* all nibbles 8 -> value 0 */
        put16(b, 0x3C00);
        uint8_t *q = b + 2 + (j % 16);
        *q = j < 16 ? (uint8_t)((*q & 0xF0) | 0x0F) : (uint8_t)((*q & 0x0F) | 0x00);
        memra_decode_row(MEMRA_FORMAT_Q4_0, b, 32, y);
        for (int v = 0; v < 32; v++) CHECK_F32_EQ(y[v], v == j ? (j < 16 ? 7.0f : -8.0f) : 0.0f);
    }
}

/* ---- K-quants: the by-index reference ----------------------------------------------- */

/* Pack 8 six-bit scales and mins into GGML's 12 bytes, written from the layout:
 * sc[0..3] in bytes 0..3 bits 0..5, mn[0..3] in bytes 4..7 bits 0..5;
 * for s = 4..7: low 4 bits of sc[s] in byte s+4 bits 0..3, of mn[s] in bits 4..7;
 * the top 2 bits of sc[s] in byte s-4 bits 6..7, of mn[s] in byte s bits 6..7. */
static void pack_k4(const int sc[8], const int mn[8], uint8_t out[12])
{
    memset(out, 0, 12);
    for (int s = 0; s < 4; s++) {
        out[s] |= (uint8_t)(sc[s] & 63);
        out[s + 4] |= (uint8_t)(mn[s] & 63);
    }
    for (int s = 4; s < 8; s++) {
        out[s + 4] |= (uint8_t)((sc[s] & 15) | ((mn[s] & 15) << 4));
        out[s - 4] |= (uint8_t)((sc[s] >> 4) << 6);
        out[s] |= (uint8_t)((mn[s] >> 4) << 6);
    }
}

/* Value v (0..255) of a Q4_K/Q5_K super-block: sub-block v/32 (scale, min);
 * 64 values per 32 qs bytes, the first 32 in the low nibbles, the next 32 in
 * the high; Q5_K's fifth bit of value v is bit (v/32) of qh[v % 32]. */
static void ref_k45(const uint8_t *blk, int is_q5, const int sc[8], const int mn[8], float *y)
{
    const float d = memra_f32_from_f16((uint16_t)(blk[0] | (blk[1] << 8)));
    const float dmin = memra_f32_from_f16((uint16_t)(blk[2] | (blk[3] << 8)));
    const uint8_t *qh = blk + 16, *qs = blk + (is_q5 ? 48 : 16);
    for (int v = 0; v < 256; v++) {
        int sub = v / 32, byte = (v / 64) * 32 + v % 32;
        int q = (sub % 2) ? qs[byte] >> 4 : qs[byte] & 15;
        if (is_q5) q += ((qh[v % 32] >> sub) & 1) * 16;
        y[v] = d * (float)sc[sub] * (float)q - dmin * (float)mn[sub];
    }
}

static void check_row(const float *got, const float *want, int n, const char *what, int a, int b)
{
    for (int v = 0; v < n; v++)
        if (!(got[v] == want[v]))
            TEST_FAIL_AT("%s (%d, %d): value %d = %.9g, want %.9g", what, a, b, v, (double)got[v], (double)want[v]);
}

static void kquant_bits(memra_format fmt)
{
    const int is_q5 = fmt == MEMRA_FORMAT_Q5_K;
    const int bytes = is_q5 ? 176 : 144;
    uint8_t blk[176];
    float y[256], want[256];
    int sc[8], mn[8];
    /* each bit of each scale and of each min, alone */
    for (int which = 0; which < 2; which++) {
        for (int s = 0; s < 8; s++) {
            for (int bit = 0; bit < 6; bit++) {
                memset(blk, 0, sizeof blk);
                put16(blk, 0x3C00);     /* d = 1 */
                put16(blk + 2, 0x3C00); /* dmin = 1 */
                memset(sc, 0, sizeof sc);
                memset(mn, 0, sizeof mn);
                (which ? mn : sc)[s] = 1 << bit;
                pack_k4(sc, mn, blk + 4);
                memset(blk + (is_q5 ? 48 : 16), 0x21, 128); /* low nibble 1, high 2 */
                memra_decode_row(fmt, blk, 256, y);
                for (int v = 0; v < 256; v++) {
                    float w = 0.0f;
                    if (v / 32 == s) w = which ? -(float)(1 << bit) : (float)((1 << bit) * (s % 2 ? 2 : 1));
                    want[v] = w;
                }
                check_row(y, want, 256, which ? "min bit" : "scale bit", s, bit);
            }
        }
    }
    /* each fifth bit of Q5_K alone: qh byte B bit t is value 32 t + B */
    if (is_q5) {
        for (int byte = 0; byte < 32; byte++) {
            for (int t = 0; t < 8; t++) {
                memset(blk, 0, sizeof blk);
                put16(blk, 0x3C00);
                for (int s = 0; s < 8; s++) sc[s] = 1, mn[s] = 0;
                pack_k4(sc, mn, blk + 4);
                blk[16 + byte] = (uint8_t)(1u << t);
                memra_decode_row(fmt, blk, 256, y);
                for (int v = 0; v < 256; v++) want[v] = v == 32 * t + byte ? 16.0f : 0.0f;
                check_row(y, want, 256, "q5_k high bit", byte, t);
            }
        }
    }
    /* every nibble alone */
    for (int byte = 0; byte < 128; byte++) {
        for (int hi = 0; hi < 2; hi++) {
            memset(blk, 0, sizeof blk);
            put16(blk, 0x3C00);
            for (int s = 0; s < 8; s++) sc[s] = 1, mn[s] = 0;
            pack_k4(sc, mn, blk + 4);
            blk[(is_q5 ? 48 : 16) + byte] = (uint8_t)(hi ? 0xF0 : 0x0F);
            memra_decode_row(fmt, blk, 256, y);
            int at = (byte / 32) * 64 + hi * 32 + byte % 32;
            for (int v = 0; v < 256; v++) want[v] = v == at ? 15.0f : 0.0f;
            check_row(y, want, 256, "nibble", byte, hi);
        }
    }
    /* random blocks against the by-index reference, two in a row */
    uint64_t st = test_seed();
    for (int it = 0; it < 500; it++) {
        uint8_t row[2 * 176];
        float got[512], ref[512];
        for (int bk = 0; bk < 2; bk++) {
            uint8_t *p = row + bk * bytes;
            for (int i = 0; i < bytes; i++) p[i] = (uint8_t)test_rand_u64(&st);
            put16(p, (uint16_t)(test_rand_u64(&st) & 0x7BFF)); /* finite scales of either magnitude */
            put16(p + 2, (uint16_t)(test_rand_u64(&st) & 0xFBFF));
            for (int s = 0; s < 8; s++) sc[s] = (int)(test_rand_u64(&st) % 64), mn[s] = (int)(test_rand_u64(&st) % 64);
            pack_k4(sc, mn, p + 4);
            ref_k45(p, is_q5, sc, mn, ref + 256 * bk);
        }
        memra_decode_row(fmt, row, 512, got);
        check_row(got, ref, 512, "random block", it, 0);
    }
}

static void case_q4_k(void)
{
    /* literal: d = 0.5, dmin = 0.25, sc = {63,1,17,32,48,5,63,16}, mn = {0,63,2,33,15,63,40,1},
     * qs[l] = (l & 15) | ((15 - (l & 15)) << 4). */
    const int sc[8] = {63, 1, 17, 32, 48, 5, 63, 16}, mn[8] = {0, 63, 2, 33, 15, 63, 40, 1};
    uint8_t blk[144];
    float y[256];
    put16(blk, 0x3800);
    put16(blk + 2, 0x3400);
    pack_k4(sc, mn, blk + 4);
    /* the packing itself, byte by byte:
     * 0: 63 | (48>>4)<<6 = 0xFF   1: 1 | (5>>4)<<6 = 0x01   2: 17 | (63>>4)<<6 = 0xD1   3: 32 | (16>>4)<<6 = 0x60
     * 4: 0 | (15>>4)<<6 = 0x00    5: 63 | (63>>4)<<6 = 0xFF 6: 2 | (40>>4)<<6 = 0x82    7: 33 | (1>>4)<<6 = 0x21
     * 8: 48&15 | (15&15)<<4 = 0xF0  9: 5 | 15<<4 = 0xF5  10: 15 | 8<<4 = 0x8F  11: 0 | 1<<4 = 0x10 */
    const uint8_t packed[12] = {0xFF, 0x01, 0xD1, 0x60, 0x00, 0xFF, 0x82, 0x21, 0xF0, 0xF5, 0x8F, 0x10};
    CHECK(memcmp(blk + 4, packed, 12) == 0);
    for (int l = 0; l < 128; l++) blk[16 + l] = (uint8_t)((l & 15) | ((15 - (l & 15)) << 4));
    memra_decode_row(MEMRA_FORMAT_Q4_K, blk, 256, y);
    CHECK_F32_EQ(y[0], 0.0f);      /* 31.5 * 0 - 0 */
    CHECK_F32_EQ(y[31], 472.5f);   /* 31.5 * 15 */
    CHECK_F32_EQ(y[32], -8.25f);   /* 0.5 * 15 - 15.75 */
    CHECK_F32_EQ(y[100], 167.75f); /* sub 3: 16 * 11 - 8.25 */
    CHECK_F32_EQ(y[160], 21.75f);  /* sub 5: 2.5 * 15 - 15.75 */
    CHECK_F32_EQ(y[192], -10.0f);  /* sub 6: 31.5 * 0 - 10 */
    CHECK_F32_EQ(y[200], 242.0f);  /* sub 6: 31.5 * 8 - 10 */
    CHECK_F32_EQ(y[255], -0.25f);  /* sub 7: 8 * 0 - 0.25 */
    kquant_bits(MEMRA_FORMAT_Q4_K);
}

static void case_q5_k(void)
{
    /* literal: d = 1, dmin = 0.5, sc = 2 for all, mn = {0..7}; low nibbles 3, high nibbles 12;
     * qh: byte 0 = 0xFF (every sub-block's value l = 0 gets +16), others 0. */
    const int sc[8] = {2, 2, 2, 2, 2, 2, 2, 2}, mn[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    uint8_t blk[176];
    float y[256];
    memset(blk, 0, sizeof blk);
    put16(blk, 0x3C00);
    put16(blk + 2, 0x3800);
    pack_k4(sc, mn, blk + 4);
    blk[16] = 0xFF;
    memset(blk + 48, 0xC3, 128);
    memra_decode_row(MEMRA_FORMAT_Q5_K, blk, 256, y);
    CHECK_F32_EQ(y[0], 38.0f);   /* 2 * (3 + 16) - 0 */
    CHECK_F32_EQ(y[1], 6.0f);    /* 2 * 3 */
    CHECK_F32_EQ(y[32], 55.5f);  /* 2 * (12 + 16) - 0.5 */
    CHECK_F32_EQ(y[33], 23.5f);  /* 2 * 12 - 0.5 */
    CHECK_F32_EQ(y[224], 52.5f); /* sub 7: 2 * 28 - 3.5 */
    CHECK_F32_EQ(y[255], 20.5f); /* 2 * 12 - 3.5 */
    kquant_bits(MEMRA_FORMAT_Q5_K);
}

/* Value v of a Q6_K super-block, from the layout: 128 values per half (ql 64
 * bytes, qh 32 bytes, 8 scales); within a half, quarter t = 0..3 of 32 values
 * takes the low nibbles of ql[32 (t & 1) + l] for t < 2 and the high for t >= 2,
 * bits 2t..2t+1 of qh[l] as bits 4..5; scale index 2t + l / 16. q - 32. */
static float ref_q6_value(const uint8_t *blk, int v)
{
    const float d = memra_f32_from_f16((uint16_t)(blk[208] | (blk[209] << 8)));
    int h = v / 128, t = (v % 128) / 32, l = v % 32;
    uint8_t lb = blk[64 * h + 32 * (t & 1) + l];
    int q = (t < 2 ? lb & 15 : lb >> 4) | (((blk[128 + 32 * h + l] >> (2 * t)) & 3) << 4);
    int s = (int8_t)blk[192 + 8 * h + 2 * t + l / 16];
    return d * (float)s * (float)(q - 32);
}

static void case_q6_k(void)
{
    uint8_t blk[2 * 210];
    float y[512], want[512];
    /* literal: d = 0.5, scales all -3, ql nibbles 5, qh fields 2 -> q = 5 | 32 = 37 -> 5: -7.5 */
    memset(blk, 0x55, 128);
    memset(blk + 128, 0xAA, 64);
    memset(blk + 192, 0xFD, 16);
    put16(blk + 208, 0x3800);
    memra_decode_row(MEMRA_FORMAT_Q6_K, blk, 256, y);
    for (int v = 0; v < 256; v++) CHECK_F32_EQ(y[v], -7.5f);
    /* extreme: d = 65504, scale 127, q = 31 (ql 15, qh 1): 65504 * 127 * 31 = 257889248 (exact) */
    memset(blk, 0xFF, 128);
    memset(blk + 128, 0xFF, 64);
    memset(blk + 192, 0x7F, 16);
    put16(blk + 208, 0x7BFF);
    memra_decode_row(MEMRA_FORMAT_Q6_K, blk, 256, y);
    CHECK_F32_EQ(y[17], 257889248.0f);
    /* zero everything but d = 1 and scales 1: every value is -32 */
    memset(blk, 0, 210);
    memset(blk + 192, 1, 16);
    put16(blk + 208, 0x3C00);
    /* each 2-bit high field alone (set to 3: q = 48 - 32 = 16): qh byte B field t is value 128 (B/32) + 32 t + B%32 */
    for (int byte = 0; byte < 64; byte++) {
        for (int t = 0; t < 4; t++) {
            blk[128 + byte] = (uint8_t)(3u << (2 * t));
            memra_decode_row(MEMRA_FORMAT_Q6_K, blk, 256, y);
            int at = 128 * (byte / 32) + 32 * t + byte % 32;
            for (int v = 0; v < 256; v++) want[v] = v == at ? 16.0f : -32.0f;
            check_row(y, want, 256, "q6_k high field", byte, t);
            blk[128 + byte] = 0;
        }
    }
    /* each nibble alone (15: q = -17): ql byte B nibble n is value 128 (B/64) + 32 ((B%64)/32 + 2n) + B%32 */
    for (int byte = 0; byte < 128; byte++) {
        for (int n = 0; n < 2; n++) {
            blk[byte] = (uint8_t)(n ? 0xF0 : 0x0F);
            memra_decode_row(MEMRA_FORMAT_Q6_K, blk, 256, y);
            int at = 128 * (byte / 64) + 32 * ((byte % 64) / 32 + 2 * n) + byte % 32;
            for (int v = 0; v < 256; v++) want[v] = v == at ? -17.0f : -32.0f;
            check_row(y, want, 256, "q6_k nibble", byte, n);
            blk[byte] = 0;
        }
    }
    /* each scale alone at -128 (value -128 * -32 = 4096): scale i covers 16 values from
     * 128 (i/8) + 32 ((i%8)/2) + 16 (i%2) */
    for (int i = 0; i < 16; i++) {
        blk[192 + i] = 0x80;
        memra_decode_row(MEMRA_FORMAT_Q6_K, blk, 256, y);
        int from = 128 * (i / 8) + 32 * ((i % 8) / 2) + 16 * (i % 2);
        for (int v = 0; v < 256; v++) want[v] = v >= from && v < from + 16 ? 4096.0f : -32.0f;
        check_row(y, want, 256, "q6_k scale", i, 0);
        blk[192 + i] = 1;
    }
    /* random blocks, two in a row */
    uint64_t st = test_seed();
    for (int it = 0; it < 500; it++) {
        for (int i = 0; i < 420; i++) blk[i] = (uint8_t)test_rand_u64(&st);
        put16(blk + 208, (uint16_t)(test_rand_u64(&st) & 0xFBFF));
        put16(blk + 418, (uint16_t)(test_rand_u64(&st) & 0xFBFF));
        memra_decode_row(MEMRA_FORMAT_Q6_K, blk, 512, y);
        for (int v = 0; v < 512; v++) want[v] = ref_q6_value(blk + 210 * (v / 256), v % 256);
        check_row(y, want, 512, "q6_k random", it, 0);
    }
}

/* ---- the K-packed layout (module.h memra_kr_bytes, memra_kr_repack / _record) ---- */

/* The kernel's load stage (mmq.cu kr_word / kr_widen) in C, word for word:
 * output word o of unit u, and the four scales of one part, from the packed
 * planes as module.h lays them out. The test holds it to memra_kr_record,
 * which holds to GGML's decoders: a mistake in the kernel's bit tricks shows
 * here, on the host, before a GPU runs them. */
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint32_t kp_word(memra_format f, const uint8_t *nib16, uint32_t h0, uint32_t h1, int o)
{
    const uint32_t wq = rd32(nib16 + 4 * (o % 4));
    uint32_t v = (o < 4 ? wq : wq >> 4) & 0x0F0F0F0Fu;
    if (f == MEMRA_FORMAT_Q5_K) v |= (o <= 4 ? h0 << (4 - o) : h0 >> (o - 4)) & 0x10101010u;
    if (f == MEMRA_FORMAT_Q6_K) {
        const int s2 = 2 * (o % 4);
        const uint32_t h = o < 4 ? h0 : h1;
        v |= (s2 <= 4 ? h << (4 - s2) : h >> (s2 - 4)) & 0x30303030u;
        v = (v + 0x60606060u) ^ 0x80808080u;
    }
    return v;
}

static void kp_emulate(memra_format f, const uint8_t *kr, int64_t rows, int64_t cols, int64_t g, int64_t j, float s[8],
                       int8_t q[128])
{
    const int hb = f == MEMRA_FORMAT_Q5_K ? 16 : f == MEMRA_FORMAT_Q6_K ? 32 : 0;
    const uint64_t G = (uint64_t)cols / 128, R = (uint64_t)rows, rec = (uint64_t)(g * rows + j);
    const uint64_t hs = (uint64_t)((g / 2) * rows + j);
    const uint8_t *S = kr + G * R * (64u + (uint64_t)hb);
    for (int u = 0; u < 4; u++) {
        const uint8_t *nib = kr + rec * 64 + 16u * (unsigned)u;
        const uint8_t *hi = kr + G * R * 64 + rec * (uint64_t)hb + (uint64_t)(hb / 4) * (unsigned)u;
        const uint32_t h0 = hb >= 16 ? rd32(hi) : 0, h1 = hb == 32 ? rd32(hi + 4) : 0;
        for (int o = 0; o < 8; o++) {
            const uint32_t w = kp_word(f, nib, h0, h1, o);
            for (int i = 0; i < 4; i++) q[32 * u + 4 * o + i] = (int8_t)(uint8_t)(w >> (8 * i));
        }
    }
    const uint8_t *hd = S + hs * 16;
    if (f == MEMRA_FORMAT_Q6_K) {
        const uint8_t *D = S + (uint64_t)(cols / 256) * R * 16;
        /* the aligned word holding d, then its half (the kernel's cp.async of 4 bytes) */
        const uint64_t ent = hs;
        const uint8_t *dw = D + (ent & ~1ull) * 2;
        const uint16_t dh = (uint16_t)((ent & 1) ? (dw[2] | dw[3] << 8) : (dw[0] | dw[1] << 8));
        const float d = memra_f32_from_f16(dh);
        const uint8_t *sc = hd + 8 * (g % 2);
        for (int b = 0; b < 4; b++) {
            s[b] = d * (float)(int8_t)sc[2 * b];
            s[4 + b] = d * (float)(int8_t)sc[2 * b + 1];
        }
    } else {
        const uint32_t x = rd32(hd), y = rd32(hd + 4), z = rd32(hd + 8), w = rd32(hd + 12);
        const float d = memra_f32_from_f16((uint16_t)(x & 0xFFFF)), dmin = memra_f32_from_f16((uint16_t)(x >> 16));
        const int h1 = (int)(g % 2);
        const uint32_t vs = h1 ? (w & 0x0F0F0F0Fu) | ((y >> 2) & 0x30303030u) : y & 0x3F3F3F3Fu;
        const uint32_t vm = h1 ? ((w >> 4) & 0x0F0F0F0Fu) | ((z >> 2) & 0x30303030u) : z & 0x3F3F3F3Fu;
        for (int b = 0; b < 4; b++) {
            s[b] = d * (float)((vs >> (8 * b)) & 0xFF);
            s[4 + b] = dmin * (float)((vm >> (8 * b)) & 0xFF);
        }
    }
}

/* For Q4_K, Q5_K and Q6_K at shapes with odd rows and odd super-block counts:
 *  - the operand is exactly the GGUF bytes (<= 1.1x is the contract);
 *  - every record value from memra_kr_record, formed in f32 as GGML's decoder
 *    forms it, is the decoder's value bit for bit (random blocks, every byte
 *    random, finite d / dmin of either sign and magnitude);
 *  - the kernel's word-level widening, emulated, gives the same int8 codes
 *    and the same f32 scales bit for bit;
 *  - memra_kr_widen is memra_kr_record record by record;
 *  - the refusals. */
static void case_kpacked(void)
{
    static const memra_format fm[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    static const int64_t shapes[][2] = {{1, 256}, {3, 768}, {37, 1280}, {8, 512}};
    uint64_t st = test_seed();
    for (size_t fi = 0; fi < 3; fi++) {
        const memra_format f = fm[fi];
        const int bb = memra_format_block_bytes(f);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int64_t rows = shapes[si][0], cols = shapes[si][1];
            const uint64_t gguf = memra_format_row_bytes(f, cols) * (uint64_t)rows;
            const uint64_t kb = memra_kr_bytes(f, rows, cols);
            CHECK_INT_EQ((long long)kb, (long long)gguf);       /* the GGUF's bytes, moved */
            CHECK((double)kb <= 1.1 * (double)gguf);              /* the contract */
            uint8_t *w = malloc((size_t)gguf), *kr = malloc((size_t)kb + 1);
            uint8_t *wide = malloc((size_t)memra_kr_wide_bytes(rows, cols));
            float *dec = malloc((size_t)cols * sizeof(float));
            CHECK(w != NULL && kr != NULL && wide != NULL && dec != NULL);
            for (uint64_t i = 0; i < gguf; i++) w[i] = (uint8_t)test_rand_u64(&st);
            for (uint64_t o = 0; o < gguf; o += (uint64_t)bb) {
                const size_t at = f == MEMRA_FORMAT_Q6_K ? 208 : 0;
                put16(w + o + at, (uint16_t)(test_rand_u64(&st) & 0xFBFF)); /* finite, either sign */
                if (f != MEMRA_FORMAT_Q6_K) put16(w + o + 2, (uint16_t)(test_rand_u64(&st) & 0xFBFF));
            }
            kr[kb] = 0xA5; /* the repack writes kb bytes, not one more */
            CHECK_INT_EQ(memra_kr_repack(f, w, rows, cols, kr), 0);
            CHECK_HEX_EQ(kr[kb], 0xA5);
            CHECK_INT_EQ(memra_kr_widen(f, kr, rows, cols, wide), 0);
            for (int64_t j = 0; j < rows; j++) {
                memra_decode_row(f, w + (size_t)j * memra_format_row_bytes(f, cols), cols, dec);
                for (int64_t g = 0; g < cols / 128; g++) {
                    float s[8], se[8];
                    int8_t q[128], qe[128];
                    CHECK_INT_EQ(memra_kr_record(f, kr, rows, cols, g, j, s, q), 0);
                    kp_emulate(f, kr, rows, cols, g, j, se, qe);
                    const uint8_t *wr = wide + (size_t)(g * rows + j) * MEMRA_KR_WIDE_BYTES;
                    for (int b = 0; b < 8; b++) {
                        CHECK_HEX_EQ(bits_of(se[b]), bits_of(s[b]));
                        float sw;
                        memcpy(&sw, wr + 4 * b, 4);
                        CHECK_HEX_EQ(bits_of(sw), bits_of(s[b]));
                    }
                    for (int c = 0; c < 128; c++) {
                        if (qe[c] != q[c] || (int8_t)wr[32 + c] != q[c])
                            TEST_FAIL_AT("%s %lldx%lld record (%lld, %lld) code %d: kernel %d, record %d, widened %d",
                                         memra_format_name(f), (long long)rows, (long long)cols, (long long)g,
                                         (long long)j, c, qe[c], q[c], (int8_t)wr[32 + c]);
                        const int b = c / 32;
                        float v;
                        if (f == MEMRA_FORMAT_Q6_K) {
                            CHECK(q[c] >= -32 && q[c] <= 31);
                            v = s[b + 4 * ((c / 16) & 1)] * (float)q[c];
                        } else {
                            CHECK(q[c] >= 0 && q[c] <= (f == MEMRA_FORMAT_Q5_K ? 31 : 15));
                            v = s[b] * (float)q[c] - s[4 + b]; /* s q exact: one rounding, the decoder's */
                        }
                        if (bits_of(v) != bits_of(dec[128 * g + c]) && !(v == 0.0f && dec[128 * g + c] == 0.0f))
                            TEST_FAIL_AT("%s %lldx%lld value [%lld, %lld] = %.9g, the decoder gives %.9g",
                                         memra_format_name(f), (long long)rows, (long long)cols, (long long)j,
                                         (long long)(128 * g + c), (double)v, (double)dec[128 * g + c]);
                    }
                }
            }
            float s[8];
            int8_t q[128];
            CHECK_INT_EQ(memra_kr_record(f, kr, rows, cols, cols / 128, 0, s, q), -1);
            CHECK_INT_EQ(memra_kr_record(f, kr, rows, cols, 0, rows, s, q), -1);
            CHECK_INT_EQ(memra_kr_record(MEMRA_FORMAT_Q8_0, kr, rows, cols, 0, 0, s, q), -1);
            CHECK_INT_EQ(memra_kr_repack(f, w, rows, cols - 128, kr), -1);
            CHECK_INT_EQ(memra_kr_repack(MEMRA_FORMAT_Q4_0, w, rows, cols, kr), -1);
            CHECK_INT_EQ(memra_kr_repack(f, NULL, rows, cols, kr), -1);
            CHECK_INT_EQ((long long)memra_kr_bytes(f, rows, cols - 128), 0);
            CHECK_INT_EQ((long long)memra_kr_bytes(MEMRA_FORMAT_Q8_0, rows, cols), 0);
            free(w), free(kr), free(wide), free(dec);
        }
        printf("  %s: %d B per 256 values K-packed = %.2fx the GGUF (contract <= 1.1x)\n", memra_format_name(f),
               (int)memra_kr_bytes(f, 1, 256), (double)memra_kr_bytes(f, 1, 256) / (double)bb);
    }
}


/* ---- gemm_kr's TC fold (MEMRA_MMQ_KR_TC, mmq.cu mmq_step TC) against its band ----------- */

/* mmq.cu tf32_rna, transcribed: a finite f32 rounded to TF32 (nearest, ties away). */
static float kt_tf32_rna(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    b = (b + 0x1000u) & 0xFFFFE000u;
    float r;
    memcpy(&r, &b, 4);
    return r;
}

/* The same rounding from its definition: the multiple of TF32's unit nearest |x| (ties up in
 * magnitude), the unit 2^(e - 10) for |x| in [2^e, 2^(e+1)), 2^-136 below the normals. */
static float kt_tf32_ref(float x)
{
    if (x == 0.0f) return x;
    int e;
    frexp(fabs((double)x), &e); /* |x| in [2^(e-1), 2^e) */
    const double unit = ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 10);
    const double r = floor(fabs((double)x) / unit + 0.5) * unit;
    return (float)(x < 0 ? -r : r);
}

/* f32 addition as a tensor core's accumulator is modelled here: the exact sum of an f32 and an
 * exact product, then rounded toward zero (the pessimistic side of its truncation) */
static float kt_add_rz(float acc, double prod)
{
    const double v = (double)acc + prod;
    float f = (float)v;
    if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
    return f;
}

/* One output element of gemm_kr's fold "min" over k values, both ways the kernel folds: per
 * 32-block (acc = fma(sx, fl(s I), acc), then fma(t, -mn, acc), t = fl(S sx)) and the TC fold
 * (the min term once a step of 4 blocks: D from hi and lo TF32 halves of t against the 6-bit
 * mins, the accumulator truncating, then fma(-dmin, D, acc)); each against the double sum of the
 * same operands, normalised by sum |dx xq| (|s q| + |mn|), within judge_band_kr(k, tc). Random
 * codes (0..15), activations (-127..127), scales and mins of an f16 d / dmin each super-block, and
 * block scales sx over six decades; also the rounding helper against its definition and the
 * hi / lo split's bound |t - hi - lo| <= 2u |t|. */
static void case_kr_tc(void)
{
    uint64_t st = test_seed();
    /* the rounding: random finite values (normals and subnormals, both signs), the carry into the
     * exponent, ties */
    static const uint32_t edge[] = {0x3f800fffu, 0x3f801000u, 0x3f802000u, 0x3fffffffu, 0x7f7fffffu & 0xfffff000u,
                                    0x00000001u, 0x00001000u, 0x007fffffu, 0x80801000u, 0x3f800801u};
    for (int i = 0; i < 200000 + (int)(sizeof edge / sizeof edge[0]); i++) {
        uint32_t b = i < (int)(sizeof edge / sizeof edge[0]) ? edge[i] : (uint32_t)test_rand_u64(&st);
        if ((b & 0x7f800000u) == 0x7f800000u) b &= 0xbfffffffu; /* finite */
        float x;
        memcpy(&x, &b, 4);
        const float hi = kt_tf32_rna(x), ref = kt_tf32_ref(x);
        if (bits_of(hi) != bits_of(ref) && !(hi == 0.0f && ref == 0.0f))
            TEST_FAIL_AT("tf32_rna(%a) = %a, the definition gives %a", (double)x, (double)hi, (double)ref);
        const float lo = kt_tf32_rna(x - hi);
        CHECK((double)x - (double)hi == (double)(x - hi)); /* t - hi exact */
        /* the relative bound wherever t - hi stays normal (t's f32 unit 2^(e-23) >= 2^-126: |t| >= 2^-103);
         * below, as t = fl(S sx) itself, every fold's error is absolute (2^-137 here) */
        if (fabs((double)x) >= ldexp(1.0, -103) && fabs((double)x - (double)hi - (double)lo) > ldexp(fabs((double)x), -23))
            TEST_FAIL_AT("t = %a: |t - hi - lo| = %a above 2u |t|", (double)x, fabs((double)x - (double)hi - (double)lo));
    }
    static const int ks[] = {256, 768, 2816, 17408};
    const float magic = 12582912.0f; /* mmq.cu MMQ_MAGIC: 1.5 2^23 */
    double worst[2] = {0, 0};
    for (size_t kc = 0; kc < sizeof ks / sizeof ks[0]; kc++) {
        const int k = ks[kc], nb = k / 32;
        for (int trial = 0; trial < 300; trial++) {
            float acc[2] = {0.0f, 0.0f};
            double ref = 0.0, norm = 0.0;
            float dmin = 0.0f, d = 0.0f, tb[4];
            int m6b[4];
            for (int b = 0; b < nb; b++) {
                if (b % 8 == 0) { /* a super-block's d and dmin: finite f16, either sign */
                    d = memra_f32_from_f16((uint16_t)(test_rand_u64(&st) & 0xFBFF));
                    dmin = memra_f32_from_f16((uint16_t)(test_rand_u64(&st) & 0xFBFF));
                }
                const int sc6 = (int)(test_rand_u64(&st) % 64), m6 = (int)(test_rand_u64(&st) % 64);
                const float s = d * (float)sc6, mn = dmin * (float)m6; /* exact: 11 + 6 bits */
                const float sx = (float)ldexp(1.0 + (double)(test_rand_u64(&st) % 1000) / 1000.0,
                                              -(int)(test_rand_u64(&st) % 20));
                int64_t I = 0, S = 0;
                double absx = 0, absxq = 0;
                for (int c = 0; c < 32; c++) {
                    const int q = (int)(test_rand_u64(&st) % 16), xq = (int)(test_rand_u64(&st) % 255) - 127;
                    I += (int64_t)q * xq;
                    S += xq;
                    absx += fabs((double)xq) * fabs((double)s * q);
                    absxq += fabs((double)xq);
                }
                ref += (double)sx * ((double)s * (double)I - (double)mn * (double)S);
                norm += (double)sx * (absx + absxq * fabs((double)mn));
                /* the main term, as fma(d, s, -M s) on D = M + I then fma(sx, ., acc) */
                const float D = magic + (float)I;
                const float v = fmaf(D, s, magic * -s);
                const float t = ((magic + (float)S) - magic) * sx;
                acc[0] = fmaf(t, -mn, fmaf(sx, v, acc[0]));
                acc[1] = fmaf(sx, v, acc[1]);
                tb[b % 4] = t, m6b[b % 4] = m6;
                if (b % 4 == 3) { /* the step's min term on the TF32 MMAs */
                    float dh = 0.0f;
                    for (int j = 0; j < 4; j++) dh = kt_add_rz(dh, (double)kt_tf32_rna(tb[j]) * m6b[j]);
                    float dd = dh;
                    for (int j = 0; j < 4; j++) {
                        const float hi = kt_tf32_rna(tb[j]);
                        dd = kt_add_rz(dd, (double)kt_tf32_rna(tb[j] - hi) * m6b[j]);
                    }
                    acc[1] = fmaf(-dmin, dd, acc[1]);
                }
            }
            for (int tc = 0; tc < 2; tc++) {
                const double e = fabs((double)acc[tc] - ref) / (norm + 1e-300), band = judge_band_kr(k, tc);
                if (e > worst[tc]) worst[tc] = e;
                if (!(e <= band))
                    TEST_FAIL_AT("k = %d trial %d, %s fold: e %.3g above the band %.3g (acc %.9g, ref %.9g)", k,
                                 trial, tc ? "TC" : "per-32", e, band, (double)acc[tc], ref);
            }
        }
    }
    printf("  gemm_kr fold min, emulated: worst e per-32 %.3g, TC %.3g (bands at k = 256: %.3g / %.3g)\n", worst[0],
           worst[1], judge_band_kr(256, 0), judge_band_kr(256, 1));
}

/* The seeded warpgroup tile's fold (mmq.cu r3w_sd_inner, MEMRA_MMQ_WG_SEED) against the records
 * tiles' on the CPU, with mmq.h's numbers: the register 2^19 + I read as an f32 bit pattern is
 * (2^19 + I) 2^-149 for every I a k32 group can give (|I| <= 32 x 128 x 128 with the s8 extremes);
 * fma(D, s 2^111, -s 2^-19) is fma(M + I, s, -M s) times 2^-38 bit for bit for every f16 scale; and
 * a k = 4096 sum over random groups (token scales 2^-40 .. 2^40, f16 scales of either sign from
 * subnormal to 65504) ends, times 2^38, on the records tiles' sum bit for bit. */
static void case_wg_seed(void)
{
    uint64_t st = test_seed();
    CHECK(R3W_SD_SEED == 32u * 128u * 128u);
    CHECK(R3W_SD_MIN == -(float)ldexp((double)R3W_SD_SEED, -149) * R3W_SD_SCALE);
    CHECK(R3W_SD_POST * (float)ldexp((double)R3W_SD_SCALE, -149) == 1.0f);
    /* the subnormal window: every I of a group */
    for (int32_t I = -32 * 128 * 128; I <= 32 * 128 * 128; I++) {
        const float d = float_of(R3W_SD_SEED + (uint32_t)I);
        if ((double)d != ldexp((double)(R3W_SD_SEED + (uint32_t)I), -149))
            TEST_FAIL_AT("I = %d: the register reads %a", I, (double)d);
    }
    /* the inner fold over every finite f16 scale, I at the extremes and at random */
    unsigned long long inner = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7C00u) == 0x7C00u) continue; /* inf, NaN */
        const float s = memra_f32_from_f16((uint16_t)h);
        for (int t = 0; t < 24; t++) {
            const int32_t I = t == 0 ? 0 : t == 1 ? 32 * 127 * 127 : t == 2 ? -32 * 127 * 127 : t == 3 ? 1 : t == 4 ? -1
                            : (int32_t)(test_rand_u64(&st) % (2u * 32 * 127 * 127 + 1)) - 32 * 127 * 127;
            const float rec = fmaf(float_of(MMQ_MAGIC_BITS + (uint32_t)I), s, MMQ_MAGIC * -s);
            const float sd = fmaf(float_of(R3W_SD_SEED + (uint32_t)I), s * R3W_SD_SCALE, s * R3W_SD_MIN);
            if (bits_of(sd) != bits_of((float)ldexp((double)rec, -38)))
                TEST_FAIL_AT("s = %a, I = %d: seeded %a, records %a x 2^-38", (double)s, I, (double)sd, (double)rec);
            inner++;
        }
    }
    /* whole sums: groups of a k = 4096 row, each with its own token and weight scale */
    for (int trial = 0; trial < 20000; trial++) {
        float acc_r = 0.0f, acc_s = 0.0f;
        for (int g = 0; g < 128; g++) {
            uint16_t h = (uint16_t)test_rand_u64(&st);
            if ((h & 0x7C00u) == 0x7C00u) h &= 0xBFFFu;
            const float s = memra_f32_from_f16(h);
            const float x = (float)ldexp(1.0 + (double)(test_rand_u64(&st) % 4096) / 4096.0,
                                         (int)(test_rand_u64(&st) % 81) - 40);
            const int32_t I = (int32_t)(test_rand_u64(&st) % (2u * 32 * 127 * 127 + 1)) - 32 * 127 * 127;
            acc_r = fmaf(x, fmaf(float_of(MMQ_MAGIC_BITS + (uint32_t)I), s, MMQ_MAGIC * -s), acc_r);
            acc_s = fmaf(x, fmaf(float_of(R3W_SD_SEED + (uint32_t)I), s * R3W_SD_SCALE, s * R3W_SD_MIN), acc_s);
        }
        const float out = acc_s * R3W_SD_POST;
        if (bits_of(out) != bits_of(acc_r) && !(isnan(out) && isnan(acc_r)))
            TEST_FAIL_AT("trial %d: seeded sum %a, records %a", trial, (double)out, (double)acc_r);
    }
    printf("  the seeded fold: %d group sums in the window, %llu inner folds and 20000 k = 4096 sums bit for bit "
           "the records tiles'\n", 2 * 32 * 128 * 128 + 1, inner);
}

/* ---- the W16 layout (gemm_w16's operand) ---- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* The f16 A fragment of thread l of warp v (0..7 over the two consumer warpgroups) for 16-column half h of
 * group g of row tile t, as w16_tile.cuh forms it: the same shared-memory offsets (the stage holds the
 * group's CB code bytes, then its 256 scale bytes, then the super-block's 128 d / dmin words), the same
 * words and the same decoder per register, written in C. a[r][e]: register r, half e (low first). */
static void w16_emulate(memra_format f, const uint8_t *w16, int64_t rows, int64_t cols, int64_t t, int64_t g, int v,
                        int l, int h, uint16_t a[4][2])
{
    const uint64_t cb = memra_w16_cb(f), G = (uint64_t)cols / 32u, SB = (uint64_t)cols / 256u;
    const uint8_t *code = w16 + ((uint64_t)t * G + (uint64_t)g) * cb;
    const uint8_t *sc = w16 + memra_w16_off(f, rows, cols, 'S') + ((uint64_t)t * G + (uint64_t)g) * 256u;
    const uint8_t *dd = w16 + memra_w16_off(f, rows, cols, 'D') + ((uint64_t)t * SB + (uint64_t)g / 8u) * 512u;
    const int rowin = 16 * v + l / 4, L = 32 * v + l;
    float val[4][2];
    if (f == MEMRA_FORMAT_Q8_0) { /* LDS.128 at 16 L; scales of rows r0, r1 at 2 rowin, + 16 */
        const uint32_t w[4] = {rd32(code + 16 * L), rd32(code + 16 * L + 4), rd32(code + 16 * L + 8), rd32(code + 16 * L + 12)};
        const float s0 = memra_f32_from_f16(rd16(sc + 2 * rowin)), s1 = memra_f32_from_f16(rd16(sc + 2 * rowin + 16));
        const uint32_t w0 = h ? w[2] : w[0], w1 = h ? w[3] : w[1];
        /* deq(w0, s0) -> a0 (bytes 0, 1), a2 (bytes 2, 3); deq(w1, s1) -> a1, a3: (byte - 128) s */
        for (int e = 0; e < 2; e++) {
            val[0][e] = (float)((int)((w0 >> (8 * e)) & 0xFF) - 128) * s0;
            val[2][e] = (float)((int)((w0 >> (8 * (2 + e))) & 0xFF) - 128) * s0;
            val[1][e] = (float)((int)((w1 >> (8 * e)) & 0xFF) - 128) * s1;
            val[3][e] = (float)((int)((w1 >> (8 * (2 + e))) & 0xFF) - 128) * s1;
        }
    } else {
        const uint32_t w = rd32(code + 8 * L + 4 * h); /* LDS.64 at 8 L: word h */
        const uint32_t hiw = f == MEMRA_FORMAT_Q6_K   ? rd32(code + 2048 + 4 * L) >> (16 * h)
                             : f == MEMRA_FORMAT_Q5_K ? (uint32_t)rd16(code + 2048 + 2 * L) >> (8 * h) /* ld.shared.u16 */
                                                      : 0;
        for (int j = 0; j < 4; j++) /* register j: nibbles j (low half) and j + 4 (high half); row r1 when j odd */
            for (int e = 0; e < 2; e++) {
                const int u4 = (int)((w >> (4 * j + 16 * e)) & 15), r1 = j & 1;
                if (f == MEMRA_FORMAT_Q4_0) {
                    val[j][e] = (float)(u4 - 8) * memra_f32_from_f16(rd16(sc + 2 * rowin + 16 * r1));
                } else if (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K) {
                    const uint16_t sm = rd16(sc + 2 * rowin + 16 * r1);
                    const uint32_t ddw = rd32(dd + 4 * rowin + 32 * r1);
                    const float d1 = memra_f32_from_f16((uint16_t)(ddw & 0xFFFF)) * (float)(sm & 0xFF);
                    const float m1 = memra_f32_from_f16((uint16_t)(ddw >> 16)) * (float)(sm >> 8);
                    /* deqk<1>: slot j's fifth bit at bit j of hi, slot j + 4's at bit j + 4 */
                    const int u = u4 | (f == MEMRA_FORMAT_Q5_K ? (int)((hiw >> (j + 4 * e)) & 1) << 4 : 0);
                    val[j][e] = d1 * (float)u - m1;
                } else {
                    const int u = u4 | (int)((hiw >> (2 * j + 8 * e)) & 3) << 4;
                    const float d = memra_f32_from_f16((uint16_t)(rd32(dd + 4 * rowin + 32 * r1) & 0xFFFF));
                    const float esc = d * (float)(int8_t)sc[rowin + 8 * r1 + 128 * h];
                    val[j][e] = esc * (float)(u - 32);
                }
            }
    }
    for (int r = 0; r < 4; r++)
        for (int e = 0; e < 2; e++) a[r][e] = memra_f16_from_f32(val[r][e]);
}

/* memra_w16_repack of random blocks (finite scales, padding rows, several tiles and super-blocks):
 *  - the size: memra_w16_bytes, within 1.03x the GGUF's bytes plus the row padding, every byte written;
 *  - memra_w16_decode_f16 is the f16 of memra_decode_row, bit for bit;
 *  - every fragment register the tile forms (w16_emulate) holds the f16 mirror's value of the (row, column)
 *    the PTX ISA's f16 A fragment gives it: register r of thread l of warp v holds row 16 v + l / 4 (+ 8
 *    when r is odd), columns 16 h + 2 (l % 4) + e (+ 8 when r >= 2); padding rows decode to 0;
 *  - refusals: a format without the layout, cols off the block, negative rows. */
static void case_w16(void)
{
    static const memra_format fm[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                      MEMRA_FORMAT_Q6_K};
    static const int64_t shapes[][2] = {{1, 256}, {200, 512}, {129, 768}, {256, 256}};
    uint64_t st = test_seed();
    for (size_t fi = 0; fi < 5; fi++) {
        const memra_format f = fm[fi];
        const int bb = memra_format_block_bytes(f), kq = f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q6_K;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const int64_t rows = shapes[si][0], cols = shapes[si][1], rp = (rows + 127) / 128 * 128;
            const uint64_t gguf = memra_format_row_bytes(f, cols) * (uint64_t)rows, wb = memra_w16_bytes(f, rows, cols);
            const uint64_t per256 = f == MEMRA_FORMAT_Q8_0   ? 272
                                    : f == MEMRA_FORMAT_Q4_0 ? 144
                                    : f == MEMRA_FORMAT_Q4_K ? 148
                                    : f == MEMRA_FORMAT_Q5_K ? 180
                                                             : 212;
            CHECK_INT_EQ((long long)wb, (long long)((uint64_t)rp * (uint64_t)cols / 256u * per256));
            CHECK((double)wb <= 1.03 * (double)gguf * (double)rp / (double)rows + 1.0);
            uint8_t *w = malloc((size_t)gguf), *o = malloc((size_t)wb + 1);
            uint16_t *mir = malloc((size_t)(rows * cols) * 2);
            float *dec = malloc((size_t)cols * sizeof(float));
            CHECK(w != NULL && o != NULL && mir != NULL && dec != NULL);
            for (uint64_t i = 0; i < gguf; i++) w[i] = (uint8_t)test_rand_u64(&st);
            for (uint64_t b = 0; b < gguf; b += (uint64_t)bb) {
                const size_t at = f == MEMRA_FORMAT_Q6_K ? 208 : 0;
                put16(w + b + at, (uint16_t)(test_rand_u64(&st) & 0xFBFF)); /* finite, either sign */
                if (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K) put16(w + b + 2, (uint16_t)(test_rand_u64(&st) & 0xFBFF));
            }
            memset(o, 0xA5, (size_t)wb + 1);
            CHECK_INT_EQ(memra_w16_repack(f, w, rows, cols, o), 0);
            CHECK_HEX_EQ(o[wb], 0xA5); /* wb bytes, not one more */
            CHECK_INT_EQ(memra_w16_decode_f16(f, o, rows, cols, mir), 0);
            for (int64_t j = 0; j < rows; j++) {
                memra_decode_row(f, w + (size_t)j * memra_format_row_bytes(f, cols), cols, dec);
                for (int64_t c = 0; c < cols; c++)
                    if (mir[j * cols + c] != memra_f16_from_f32(dec[c]))
                        TEST_FAIL_AT("%s %lldx%lld (%lld, %lld): decode %04x, the format's %04x", memra_format_name(f),
                                     (long long)rows, (long long)cols, (long long)j, (long long)c,
                                     (unsigned)mir[j * cols + c], (unsigned)memra_f16_from_f32(dec[c]));
            }
            for (int64_t t = 0; t < rp / 128; t++)
                for (int64_t g = 0; g < cols / 32; g++)
                    for (int v = 0; v < 8; v++)
                        for (int l = 0; l < 32; l++)
                            for (int h = 0; h < 2; h++) {
                                uint16_t a[4][2];
                                w16_emulate(f, o, rows, cols, t, g, v, l, h, a);
                                for (int r = 0; r < 4; r++)
                                    for (int e = 0; e < 2; e++) {
                                        const int64_t row = 128 * t + 16 * v + l / 4 + 8 * (r & 1);
                                        const int64_t col = 32 * g + 16 * h + 2 * (l % 4) + e + 8 * (r >> 1);
                                        const uint16_t want = row < rows ? mir[row * cols + col] : 0;
                                        if ((a[r][e] & 0x7FFF) != (want & 0x7FFF) || (row < rows && a[r][e] != want))
                                            TEST_FAIL_AT("%s %lldx%lld tile %lld group %lld warp %d lane %d half %d reg %d.%d "
                                                         "(row %lld col %lld): fragment %04x, mirror %04x",
                                                         memra_format_name(f), (long long)rows, (long long)cols,
                                                         (long long)t, (long long)g, v, l, h, r, e, (long long)row,
                                                         (long long)col, (unsigned)a[r][e], (unsigned)want);
                                    }
                            }
            (void)kq;
            free(w), free(o), free(mir), free(dec);
        }
    }
    uint8_t b[64] = {0};
    CHECK_INT_EQ(memra_w16_bytes(MEMRA_FORMAT_E4M3, 4, 256), 0);
    CHECK_INT_EQ(memra_w16_repack(MEMRA_FORMAT_F16, b, 1, 256, b), -1);
    CHECK_INT_EQ(memra_w16_repack(MEMRA_FORMAT_Q4_K, b, 1, 288, b), -1); /* K-quant cols off 256 */
    CHECK_INT_EQ(memra_w16_repack(MEMRA_FORMAT_Q8_0, b, 1, 48, b), -1);  /* off 32 */
    CHECK_INT_EQ(memra_w16_repack(MEMRA_FORMAT_Q8_0, b, -1, 32, b), -1);
    CHECK_INT_EQ(memra_w16_repack(MEMRA_FORMAT_Q8_0, NULL, 1, 32, b), -1);
    CHECK_INT_EQ(memra_w16_decode_f16(MEMRA_FORMAT_Q6_K, b, 1, 256, NULL), -1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s table|f16|e4m3|q8_0|q4_0|q4_k|q5_k|q6_k|kpacked|kr_tc|wg_seed|w16\n", argv[0]);
        return 2;
    }
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"table", case_table}, {"f16", case_f16}, {"bf16", case_bf16},   {"e4m3", case_e4m3}, {"q8_0", case_q8_0},
                 {"q4_0", case_q4_0},   {"q4_k", case_q4_k}, {"q5_k", case_q5_k}, {"q6_k", case_q6_k},
                 {"kpacked", case_kpacked}, {"kr_tc", case_kr_tc}, {"wg_seed", case_wg_seed}, {"w16", case_w16}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].fn();
            printf("PASS %s\n", cases[i].name);
            return 0;
        }
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
