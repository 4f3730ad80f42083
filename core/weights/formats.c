/* Block formats: GGML's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K byte for byte, IEEE f16,
 * bfloat16, OCP e4m3 (E4M3FN).
 *
 * Every decoder reproduces the arithmetic of GGML's reference decoders
 * (dequantize_row_*): scales are widened from f16 to f32 exactly, and each
 * value is formed with f32 operations in the same order GGML uses, so the
 * results are identical bit for bit. The conversions f16 <-> f32 and
 * e4m3 <-> f32 are done on the bit patterns with integer arithmetic, so they do
 * not depend on the FPU's rounding mode, on _Float16 support or on flush-to-zero.
 *
 * Why each K-quant product cannot be contracted into an FMA differently on
 * another compiler: in Q4_K/Q5_K, d*sc (11 + 6 bits) and (d*sc)*q (+5 bits)
 * are exact in f32, so "d1 * q - m1" has one rounding with or without FMA.
 * In Q6_K the product (d*sc)*q can round, but nothing is added to it.
 */
#include "memra/formats.h"

#include <math.h>
#include <string.h>

#include "base/quant.h"

/* ---- format table ---------------------------------------------------------- */

int memra_format_block_values(memra_format format)
{
    switch (format) {
    case MEMRA_FORMAT_F32:
    case MEMRA_FORMAT_F16:
    case MEMRA_FORMAT_BF16:
    case MEMRA_FORMAT_E4M3: return 1;
    case MEMRA_FORMAT_Q8_0: return MEMRA_QK8_0;
    case MEMRA_FORMAT_Q4_0: return MEMRA_QK4_0;
    case MEMRA_FORMAT_Q4_K:
    case MEMRA_FORMAT_Q5_K:
    case MEMRA_FORMAT_Q6_K: return MEMRA_QK_K;
    }
    return 0;
}

int memra_format_block_bytes(memra_format format)
{
    switch (format) {
    case MEMRA_FORMAT_F32: return 4;
    case MEMRA_FORMAT_F16: return 2;
    case MEMRA_FORMAT_BF16: return 2;
    case MEMRA_FORMAT_E4M3: return 1;
    case MEMRA_FORMAT_Q8_0: return MEMRA_Q8_0_BYTES;
    case MEMRA_FORMAT_Q4_0: return MEMRA_Q4_0_BYTES;
    case MEMRA_FORMAT_Q4_K: return MEMRA_Q4_K_BYTES;
    case MEMRA_FORMAT_Q5_K: return MEMRA_Q5_K_BYTES;
    case MEMRA_FORMAT_Q6_K: return MEMRA_Q6_K_BYTES;
    }
    return 0;
}

const char *memra_format_name(memra_format format)
{
    switch (format) {
    case MEMRA_FORMAT_F32: return "f32";
    case MEMRA_FORMAT_F16: return "f16";
    case MEMRA_FORMAT_E4M3: return "e4m3";
    case MEMRA_FORMAT_BF16: return "bf16";
    case MEMRA_FORMAT_Q8_0: return "q8_0";
    case MEMRA_FORMAT_Q4_0: return "q4_0";
    case MEMRA_FORMAT_Q4_K: return "q4_k";
    case MEMRA_FORMAT_Q5_K: return "q5_k";
    case MEMRA_FORMAT_Q6_K: return "q6_k";
    }
    return "unknown";
}

uint64_t memra_format_row_bytes(memra_format format, int64_t cols)
{
    int64_t bv = memra_format_block_values(format);
    int64_t bb = memra_format_block_bytes(format);
    if (bv == 0 || cols < 0 || cols % bv != 0) return 0;
    if ((uint64_t)(cols / bv) > UINT64_MAX / (uint64_t)bb) return 0; /* would wrap */
    return (uint64_t)(cols / bv) * (uint64_t)bb;
}

/* ---- bit helpers ------------------------------------------------------------- */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* v >> s rounded to nearest, ties to even; 1 <= s <= 31. */
static uint32_t shift_rne(uint32_t v, unsigned s)
{
    uint32_t q = v >> s;
    uint32_t rem = v & ((1u << s) - 1u);
    uint32_t half = 1u << (s - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return q;
}

/* ---- IEEE binary16 ------------------------------------------------------------ */

uint16_t memra_f16_from_f32(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7FFFFFFFu;
    if (x > 0x7F800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7E00u | ((x >> 13) & 0x3FFu));
    if (x >= 0x477FF000u) /* >= 65520 rounds to infinity (65504 is odd, tie goes up) */
        return (uint16_t)(sign | 0x7C00u);
    if (x >= 0x38800000u) /* >= 2^-14: normal; rebias 127 -> 15, carries may bump the exponent */
        return (uint16_t)(sign | shift_rne(x - (112u << 23), 13));
    /* Subnormal in f16: units of 2^-24. value = mant * 2^(e - 150) -> mant >> (126 - e). */
    uint32_t e = x >> 23;
    if (e < 102) return sign; /* below 2^-25 (half the smallest subnormal): zero */
    uint32_t mant = (x & 0x7FFFFFu) | 0x800000u;
    return (uint16_t)(sign | shift_rne(mant, 126u - e));
}

float memra_f32_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1F) return f32_from_bits(sign | 0x7F800000u | (m << 13));
    if (e != 0) return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return f32_from_bits(sign);
    /* subnormal: m * 2^-24, normalise the mantissa */
    uint32_t exp = 113; /* exponent field of 2^-14 */
    while ((m & 0x400u) == 0) {
        m <<= 1;
        exp--;
    }
    return f32_from_bits(sign | (exp << 23) | ((m & 0x3FFu) << 13));
}

/* ---- bfloat16 --------------------------------------------------------------------- */

uint16_t memra_bf16_from_f32(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep the sign and top payload, force quiet */
        return (uint16_t)((x >> 16) | 0x0040u);
    /* Round the low 16 bits to nearest even; a carry into the exponent is the
     * right answer (up to infinity for values past the largest bf16). */
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float memra_f32_from_bf16(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

/* ---- OCP e4m3 ------------------------------------------------------------------ */

float memra_e4m3_decode(uint8_t code)
{
    uint32_t sign = (uint32_t)(code & 0x80u) << 24;
    uint32_t e = (code >> 3) & 0xFu;
    uint32_t m = code & 7u;
    if ((code & 0x7Fu) == 0x7Fu) return f32_from_bits(sign | 0x7FC00000u);
    if (e != 0) return f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
    /* denormal m * 2^-9: exact in f32 */
    return f32_from_bits(sign | f32_bits((float)m * 0x1p-9f));
}

uint8_t memra_e4m3_encode(float f)
{
    uint32_t x = f32_bits(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    x &= 0x7FFFFFFFu;
    if (x > 0x7F800000u) return (uint8_t)(sign | 0x7Fu);  /* NaN */
    if (x >= 0x43E00000u) return (uint8_t)(sign | 0x7Eu); /* >= 448 (and inf): saturate */
    if (x >= 0x3C800000u) /* >= 2^-6: normal, rebias 127 -> 7; 20 mantissa bits dropped */
        return (uint8_t)(sign | shift_rne(x - (120u << 23), 20));
    /* denormal: units of 2^-9. value = mant * 2^(e - 150) -> mant >> (141 - e). */
    uint32_t e = x >> 23;
    if (e < 116) return sign; /* below 2^-11, under half of 2^-9: zero (the shift would give 0 too) */
    uint32_t mant = (x & 0x7FFFFFu) | 0x800000u;
    return (uint8_t)(sign | shift_rne(mant, 141u - e));
}

/* ---- Q8_0 ---------------------------------------------------------------------- */

static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static void store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xFF);
    p[1] = (uint8_t)(v >> 8);
}

void memra_q8_0_encode(const float *x, uint8_t *block)
{
    if (x == NULL || block == NULL) return;
    float amax = 0.0f;
    for (int j = 0; j < MEMRA_QK8_0; j++) {
        float a = fabsf(x[j]);
        if (a > amax) amax = a; /* NaN never wins */
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(block, memra_f16_from_f32(d));
    for (int j = 0; j < MEMRA_QK8_0; j++) block[2 + j] = (uint8_t)memra__round_i8(x[j] * id, 127.0f);
}

/* ---- decoders ------------------------------------------------------------------ */

static void decode_q8_0(const uint8_t *b, float *y)
{
    const float d = memra_f32_from_f16(load_u16(b));
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

static void decode_q4_0(const uint8_t *b, float *y)
{
    const float d = memra_f32_from_f16(load_u16(b));
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((qs[j] & 0x0F) - 8) * d;
        y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
    }
}

/* Q4_K and Q5_K share everything but the fifth bit; qh == NULL for Q4_K. */
static void decode_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, float *y)
{
    const float d = memra_f32_from_f16(load_u16(b));
    const float dmin = memra_f32_from_f16(load_u16(b + 2));
    const uint8_t *scales = b + 4;
    for (int chunk = 0; chunk < 4; chunk++) { /* 64 values: 32 low nibbles, then 32 high */
        for (int half = 0; half < 2; half++) {
            uint8_t sc, mn;
            memra__k4_scale_min(scales, 2 * chunk + half, &sc, &mn);
            const float ds = d * (float)sc;
            const float ms = dmin * (float)mn;
            const unsigned shift = 4u * (unsigned)half;
            const unsigned hbit = 2u * (unsigned)chunk + (unsigned)half;
            for (int l = 0; l < 32; l++) {
                int q = (qs[32 * chunk + l] >> shift) & 0x0F;
                if (qh != NULL && ((qh[l] >> hbit) & 1u)) q += 16;
                *y++ = ds * (float)q - ms;
            }
        }
    }
}

static void decode_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b;
    const uint8_t *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    const float d = memra_f32_from_f16(load_u16(b + 208));
    for (int v = 0; v < 256; v++) {
        const int half = v >> 7;   /* 128 values share 64 ql bytes and 32 qh bytes */
        const int quad = (v >> 5) & 3; /* which 32 of the 128 */
        const int l = v & 31;
        const uint8_t lo = ql[64 * half + 32 * (quad & 1) + l];
        const int low4 = quad < 2 ? (lo & 0x0F) : (lo >> 4);
        const int high2 = (qh[32 * half + l] >> (2 * quad)) & 3;
        const int q = (low4 | (high2 << 4)) - 32;
        const int s = sc[8 * half + 2 * quad + (l >> 4)];
        y[v] = d * (float)s * (float)q;
    }
}

void memra_decode_row(memra_format format, const void *src, int64_t n, float *dst)
{
    const uint8_t *p = (const uint8_t *)src;
    const int64_t bv = memra_format_block_values(format);
    const int64_t bb = memra_format_block_bytes(format);
    if (bv == 0 || n <= 0 || n % bv != 0 || src == NULL || dst == NULL) return;
    for (int64_t blk = 0; blk < n / bv; blk++, p += bb, dst += bv) {
        switch (format) {
        case MEMRA_FORMAT_F32: memcpy(dst, p, 4); break;
        case MEMRA_FORMAT_F16: dst[0] = memra_f32_from_f16(load_u16(p)); break;
        case MEMRA_FORMAT_BF16: dst[0] = memra_f32_from_bf16(load_u16(p)); break;
        case MEMRA_FORMAT_E4M3: dst[0] = memra_e4m3_decode(p[0]); break;
        case MEMRA_FORMAT_Q8_0: decode_q8_0(p, dst); break;
        case MEMRA_FORMAT_Q4_0: decode_q4_0(p, dst); break;
        case MEMRA_FORMAT_Q4_K: decode_k45(p, NULL, p + 16, dst); break;
        case MEMRA_FORMAT_Q5_K: decode_k45(p, p + 16, p + 48, dst); break;
        case MEMRA_FORMAT_Q6_K: decode_q6_k(p, dst); break;
        }
    }
}

/* ---- the K-packed layout (gemm_kr; module.h memra_kr_bytes) ------------------------ */

/* The planes of a [rows x cols] K-packed weight. */
typedef struct kp_planes {
    uint64_t n, h, s, d; /* byte offsets of N, H, S, D from the base */
    int hb;              /* H bytes per record: 0, 16 or 32 */
} kp_planes;

static kp_planes kp_planes_of(memra_format f, int64_t rows, int64_t cols)
{
    const uint64_t g = (uint64_t)cols / 128u, sb = (uint64_t)cols / 256u, r = (uint64_t)rows;
    kp_planes p = {.n = 0, .hb = f == MEMRA_FORMAT_Q5_K ? 16 : f == MEMRA_FORMAT_Q6_K ? 32 : 0};
    p.h = g * r * 64u;
    p.s = p.h + g * r * (uint64_t)p.hb;
    p.d = p.s + sb * r * 16u;
    return p;
}

/* The unsigned codes q[128] of the 128 values from 128 h of one GGUF block
 * (h = 0 or 1): Q4_K / Q5_K 0..15 / 0..31, Q6_K the 6-bit code 0..63. */
static void kp_codes(memra_format f, const uint8_t *b, int h, uint8_t q[128])
{
    if (f == MEMRA_FORMAT_Q6_K) {
        const uint8_t *ql = b, *qh = b + 128;
        for (int quad = 0; quad < 4; quad++)
            for (int l = 0; l < 32; l++) {
                const uint8_t lo = ql[64 * h + 32 * (quad & 1) + l];
                const int low4 = quad < 2 ? (lo & 0x0F) : (lo >> 4);
                const int high2 = (qh[32 * h + l] >> (2 * quad)) & 3;
                q[32 * quad + l] = (uint8_t)(low4 | (high2 << 4));
            }
        return;
    }
    const int has_qh = f == MEMRA_FORMAT_Q5_K;
    const uint8_t *qh = has_qh ? b + 16 : NULL, *qs = b + (has_qh ? 48 : 16);
    for (int blk = 0; blk < 4; blk++) {
        const int sub = 4 * h + blk, chunk = sub / 2, half = sub % 2;
        for (int l = 0; l < 32; l++) {
            int v = (qs[32 * chunk + l] >> (4 * half)) & 0x0F;
            if (qh != NULL && ((qh[l] >> sub) & 1u)) v += 16;
            q[32 * blk + l] = (uint8_t)v;
        }
    }
}

int memra_kr_repack(memra_format format, const void *src, int64_t rows, int64_t cols, void *dst)
{
    if (format != MEMRA_FORMAT_Q4_K && format != MEMRA_FORMAT_Q5_K && format != MEMRA_FORMAT_Q6_K) return -1;
    if (rows < 0 || cols < 0 || cols % MEMRA_QK_K != 0) return -1;
    if (rows == 0 || cols == 0) return 0;
    if (src == NULL || dst == NULL) return -1;
    const int64_t bb = memra_format_block_bytes(format), nsb = cols / MEMRA_QK_K;
    const kp_planes p = kp_planes_of(format, rows, cols);
    uint8_t *const out = (uint8_t *)dst;
    for (int64_t j = 0; j < rows; j++)
        for (int64_t sb = 0; sb < nsb; sb++) {
            const uint8_t *b = (const uint8_t *)src + (j * nsb + sb) * bb;
            const uint64_t hs = (uint64_t)(sb * rows + j);
            if (format == MEMRA_FORMAT_Q6_K) {
                memcpy(out + p.s + hs * 16u, b + 192, 16);
                memcpy(out + p.d + hs * 2u, b + 208, 2);
            } else {
                memcpy(out + p.s + hs * 16u, b, 16);
            }
            for (int h = 0; h < 2; h++) {
                uint8_t q[128];
                kp_codes(format, b, h, q);
                const uint64_t rec = (uint64_t)((2 * sb + h) * rows + j);
                uint8_t *nib = out + p.n + rec * 64u, *hi = out + p.h + rec * (uint64_t)p.hb;
                if (p.hb != 0) memset(hi, 0, (size_t)p.hb);
                for (int u = 0; u < 4; u++) {
                    for (int i = 0; i < 16; i++)
                        nib[16 * u + i] = (uint8_t)((q[32 * u + i] & 15) | ((q[32 * u + 16 + i] & 15) << 4));
                    for (int o = 0; o < 8 && p.hb != 0; o++)
                        for (int i = 0; i < 4; i++) {
                            const unsigned top = q[32 * u + 4 * o + i] >> 4;
                            if (format == MEMRA_FORMAT_Q5_K) hi[4 * u + i] |= (uint8_t)((top & 1u) << o);
                            else hi[4 * (2 * u + o / 4) + i] |= (uint8_t)((top & 3u) << (2 * (o % 4)));
                        }
                }
            }
        }
    return 0;
}

int memra_kr_record(memra_format format, const void *kr, int64_t rows, int64_t cols, int64_t g, int64_t j, float s[8],
                    int8_t q[128])
{
    if (format != MEMRA_FORMAT_Q4_K && format != MEMRA_FORMAT_Q5_K && format != MEMRA_FORMAT_Q6_K) return -1;
    if (kr == NULL || s == NULL || q == NULL || rows <= 0 || cols <= 0 || cols % MEMRA_QK_K != 0) return -1;
    if (g < 0 || g >= cols / 128 || j < 0 || j >= rows) return -1;
    const kp_planes p = kp_planes_of(format, rows, cols);
    const uint8_t *const base = (const uint8_t *)kr;
    const uint64_t rec = (uint64_t)(g * rows + j), hs = (uint64_t)((g / 2) * rows + j);
    const uint8_t *nib = base + p.n + rec * 64u, *hi = base + p.h + rec * (uint64_t)p.hb, *hd = base + p.s + hs * 16u;
    const int h = (int)(g % 2);
    for (int c = 0; c < 128; c++) {
        const int u = c / 32, l = c % 32, o = l / 4, i = l % 4;
        int v = (nib[16 * u + (l % 16)] >> (4 * (l / 16))) & 15; /* the byte's high nibble holds value 16 + l */
        if (format == MEMRA_FORMAT_Q5_K) v |= ((hi[4 * u + i] >> o) & 1) << 4; /* bit 8 i + o of word u */
        if (format == MEMRA_FORMAT_Q6_K) v |= ((hi[4 * (2 * u + o / 4) + i] >> (2 * (o % 4))) & 3) << 4;
        q[c] = (int8_t)(format == MEMRA_FORMAT_Q6_K ? v - 32 : v);
    }
    if (format == MEMRA_FORMAT_Q6_K) {
        const float d = memra_f32_from_f16(load_u16(base + p.d + hs * 2u));
        const int8_t *sc = (const int8_t *)hd;
        for (int b = 0; b < 4; b++) {
            s[b] = d * (float)sc[8 * h + 2 * b];         /* the first 16 of 32-block b: 11 x 8 bits, exact */
            s[4 + b] = d * (float)sc[8 * h + 2 * b + 1]; /* the second 16 */
        }
    } else {
        const float d = memra_f32_from_f16(load_u16(hd)), dmin = memra_f32_from_f16(load_u16(hd + 2));
        for (int b = 0; b < 4; b++) {
            uint8_t sc, mn;
            memra__k4_scale_min(hd + 4, 4 * h + b, &sc, &mn);
            s[b] = d * (float)sc; /* 11 x 6 bits: exact */
            s[4 + b] = dmin * (float)mn;
        }
    }
    return 0;
}

int memra_kr_widen(memra_format format, const void *kr, int64_t rows, int64_t cols, void *dst)
{
    if (format != MEMRA_FORMAT_Q4_K && format != MEMRA_FORMAT_Q5_K && format != MEMRA_FORMAT_Q6_K) return -1;
    if (rows < 0 || cols < 0 || cols % MEMRA_QK_K != 0) return -1;
    if (rows == 0 || cols == 0) return 0;
    if (kr == NULL || dst == NULL) return -1;
    for (int64_t g = 0; g < cols / 128; g++)
        for (int64_t j = 0; j < rows; j++) {
            uint8_t *rec = (uint8_t *)dst + (uint64_t)(g * rows + j) * MEMRA_KR_WIDE_BYTES;
            float s[8];
            if (memra_kr_record(format, kr, rows, cols, g, j, s, (int8_t *)(rec + sizeof s)) != 0) return -1;
            memcpy(rec, s, sizeof s);
        }
    return 0;
}

/* ---- the W16 layout (gemm_w16; module.h memra_w16_off, formats.h memra_w16_repack) ---- */

/* Where the code of tile row R, group column K lives in its group's CB bytes: the byte, and the shift of a
 * nibble in it (Q4_0, Q4_K, Q5_K's and Q6_K's low bits); *hi_byte / *hi_shift Q5_K's fifth bit or Q6_K's top two. */
static void w16_pos(memra_format f, int R, int K, uint32_t *byte, int *shift, uint32_t *hi_byte, int *hi_shift)
{
    const int P = R / 16, l = 4 * (R % 8) + (K % 8) / 2, rr = (R % 16) / 8, h = K / 16, hi = (K % 16) / 8, e = K % 2;
    const uint32_t L = (uint32_t)(32 * P + l);
    if (f == MEMRA_FORMAT_Q8_0) {
        *byte = 16u * L + (uint32_t)(8 * h + 4 * rr + 2 * hi + e);
        *shift = 0;
        return;
    }
    const int j = 2 * hi + rr + 4 * e;
    *byte = 4u * (2u * L + (uint32_t)h) + (uint32_t)(j / 2);
    *shift = 4 * (j % 2);
    if (f == MEMRA_FORMAT_Q5_K) { /* the fifth bit: bit 8 h + j of the lane's u16 after the nibbles */
        *hi_byte = 2048u + 2u * L + (uint32_t)h;
        *hi_shift = j;
        return;
    }
    const int bit = 2 * (8 * h + j);
    *hi_byte = 4u * (512u + L) + (uint32_t)(bit / 8);
    *hi_shift = bit % 8;
}

/* One row's group g (32 values from 32 g) of a GGUF row: the codes u[32] as W16 stores them, the group's
 * scale word(s) and the super-block's d | dmin << 16 (K-quants). */
typedef struct w16_group {
    uint8_t u[32];
    uint16_t s16;  /* Q8_0 / Q4_0: f16 d; Q4_K / Q5_K: sc | m << 8 */
    int8_t s6[2];  /* Q6_K: the two 16-value sub-blocks' scales */
    uint32_t dd;   /* Q4_K / Q5_K / Q6_K: f16 d | f16 dmin << 16 */
} w16_group;

static void w16_group_of(memra_format f, const uint8_t *row, int64_t g, w16_group *o)
{
    memset(o, 0, sizeof *o);
    if (f == MEMRA_FORMAT_Q8_0 || f == MEMRA_FORMAT_Q4_0) {
        const uint8_t *b = row + g * (f == MEMRA_FORMAT_Q8_0 ? MEMRA_Q8_0_BYTES : MEMRA_Q4_0_BYTES);
        o->s16 = load_u16(b);
        for (int i = 0; i < 32; i++)
            o->u[i] = f == MEMRA_FORMAT_Q8_0 ? (uint8_t)(b[2 + i] ^ 0x80u) /* q + 128 */
                                             : (uint8_t)(i < 16 ? b[2 + i] & 15 : b[2 + i - 16] >> 4);
        return;
    }
    const int sub = (int)(g % 8);
    const uint8_t *b = row + (g / 8) * memra_format_block_bytes(f);
    if (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K) {
        const int q5 = f == MEMRA_FORMAT_Q5_K;
        const uint8_t *qs = b + (q5 ? 48 : 16), *qh = b + 16;
        uint8_t sc, mn;
        memra__k4_scale_min(b + 4, sub, &sc, &mn);
        o->s16 = (uint16_t)(sc | mn << 8);
        o->dd = (uint32_t)load_u16(b) | (uint32_t)load_u16(b + 2) << 16;
        for (int l = 0; l < 32; l++)
            o->u[l] = (uint8_t)(((qs[32 * (sub / 2) + l] >> (4 * (sub % 2))) & 15) | (q5 ? ((qh[l] >> sub) & 1) << 4 : 0));
        return;
    }
    o->s6[0] = (int8_t)b[192 + 2 * sub];
    o->s6[1] = (int8_t)b[192 + 2 * sub + 1];
    o->dd = load_u16(b + 208);
    for (int l = 0; l < 32; l++) {
        const int v = 32 * sub + l, half = v >> 7, quad = (v >> 5) & 3;
        const uint8_t lo = b[64 * half + 32 * (quad & 1) + l];
        const int low4 = quad < 2 ? (lo & 0x0F) : (lo >> 4);
        o->u[l] = (uint8_t)(low4 | ((b[128 + 32 * half + l] >> (2 * quad)) & 3) << 4);
    }
}

static int w16_kquant(memra_format f)
{
    return f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K || f == MEMRA_FORMAT_Q6_K;
}

static int w16_shape_ok(memra_format f, int64_t rows, int64_t cols)
{
    if (memra_w16_cb(f) == 0 || rows < 0 || cols < 0) return 0;
    return cols % (w16_kquant(f) ? 256 : 32) == 0;
}

int memra_w16_repack(memra_format format, const void *src, int64_t rows, int64_t cols, void *dst)
{
    if (!w16_shape_ok(format, rows, cols)) return -1;
    if (rows == 0 || cols == 0) return 0;
    const uint64_t total = memra_w16_bytes(format, rows, cols);
    if (src == NULL || dst == NULL || total == 0) return -1;
    uint8_t *const out = (uint8_t *)dst;
    memset(out, 0, (size_t)total);
    const uint64_t cb = memra_w16_cb(format), so = memra_w16_off(format, rows, cols, 'S'),
                   dof = memra_w16_off(format, rows, cols, 'D');
    const int64_t G = cols / 32, SB = cols / 256, rb = (int64_t)memra_format_row_bytes(format, cols);
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *row = (const uint8_t *)src + r * rb;
        const int64_t t = r / 128;
        const int R = (int)(r % 128);
        for (int64_t g = 0; g < G; g++) {
            w16_group w;
            w16_group_of(format, row, g, &w);
            uint8_t *grp = out + (uint64_t)(t * G + g) * cb, *sc = out + so + (uint64_t)(t * G + g) * 256u;
            for (int K = 0; K < 32; K++) {
                uint32_t byte, hb = 0;
                int sh, hs = 0;
                w16_pos(format, R, K, &byte, &sh, &hb, &hs);
                if (format == MEMRA_FORMAT_Q8_0) {
                    grp[byte] = w.u[K];
                    continue;
                }
                grp[byte] = (uint8_t)(grp[byte] | (w.u[K] & 15) << sh);
                if (format == MEMRA_FORMAT_Q6_K || format == MEMRA_FORMAT_Q5_K)
                    grp[hb] = (uint8_t)(grp[hb] | (w.u[K] >> 4) << hs);
            }
            if (format == MEMRA_FORMAT_Q6_K) {
                sc[R] = (uint8_t)w.s6[0];
                sc[128 + R] = (uint8_t)w.s6[1];
            } else {
                store_u16(sc + 2 * R, w.s16);
            }
            if (w16_kquant(format) && g % 8 == 0) {
                uint8_t *d = out + dof + ((uint64_t)(t * SB + g / 8) * 128u + (uint64_t)R) * 4u;
                store_u16(d, (uint16_t)(w.dd & 0xFFFFu));
                store_u16(d + 2, (uint16_t)(w.dd >> 16));
            }
        }
    }
    return 0;
}

int memra_w16_decode_f16(memra_format format, const void *w16, int64_t rows, int64_t cols, uint16_t *dst)
{
    if (!w16_shape_ok(format, rows, cols)) return -1;
    if (rows == 0 || cols == 0) return 0;
    if (w16 == NULL || dst == NULL || memra_w16_bytes(format, rows, cols) == 0) return -1;
    const uint8_t *const in = (const uint8_t *)w16;
    const uint64_t cb = memra_w16_cb(format), so = memra_w16_off(format, rows, cols, 'S'),
                   dof = memra_w16_off(format, rows, cols, 'D');
    const int64_t G = cols / 32, SB = cols / 256;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t t = r / 128;
        const int R = (int)(r % 128);
        for (int64_t g = 0; g < G; g++) {
            const uint8_t *grp = in + (uint64_t)(t * G + g) * cb, *sc = in + so + (uint64_t)(t * G + g) * 256u;
            float d = 0.0f, dmin = 0.0f;
            if (w16_kquant(format)) {
                const uint8_t *dd = in + dof + ((uint64_t)(t * SB + g / 8) * 128u + (uint64_t)R) * 4u;
                d = memra_f32_from_f16(load_u16(dd));
                dmin = memra_f32_from_f16(load_u16(dd + 2));
            }
            for (int K = 0; K < 32; K++) {
                uint32_t byte, hb = 0;
                int sh, hs = 0;
                w16_pos(format, R, K, &byte, &sh, &hb, &hs);
                float v;
                if (format == MEMRA_FORMAT_Q8_0) {
                    v = (float)((int)grp[byte] - 128) * memra_f32_from_f16(load_u16(sc + 2 * R));
                } else {
                    const int u4 = (grp[byte] >> sh) & 15;
                    if (format == MEMRA_FORMAT_Q4_0) {
                        v = (float)(u4 - 8) * memra_f32_from_f16(load_u16(sc + 2 * R));
                    } else if (format == MEMRA_FORMAT_Q4_K || format == MEMRA_FORMAT_Q5_K) {
                        const uint16_t s = load_u16(sc + 2 * R);
                        const float ds = d * (float)(s & 0xFF), ms = dmin * (float)(s >> 8);
                        const int u = u4 | (format == MEMRA_FORMAT_Q5_K ? ((grp[hb] >> hs) & 1) << 4 : 0);
                        v = ds * (float)u - ms;
                    } else {
                        const int u = u4 | ((grp[hb] >> hs) & 3) << 4;
                        const int s = (int8_t)sc[128 * (K / 16) + R];
                        v = d * (float)s * (float)(u - 32);
                    }
                }
                dst[r * cols + g * 32 + K] = memra_f16_from_f32(v);
            }
        }
    }
    return 0;
}
