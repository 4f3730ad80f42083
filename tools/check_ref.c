/* memra check's independent f64 reference (see check_ref.h). Nothing here
 * calls the host module or core/weights/formats.c: conversions, quantisers and the
 * GGML block decoders are written again from their specifications, so a bug
 * shared by the host module and this file would have to be made twice. */
#include "tools/check_ref.h"

#include "memra/formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- scalar conversions ------------------------------------------------------ */

uint16_t ref_f16_bits(float f)
{
    const uint16_t sign = signbit(f) ? 0x8000u : 0u;
    if (isnan(f)) return (uint16_t)(sign | 0x7E00u);
    const double a = fabs((double)f);
    if (a == 0.0) return sign;
    if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u); /* halfway to 2^16 and above: inf */
    int ex;
    frexp(a, &ex);
    int e = ex - 1; /* a in [2^e, 2^(e+1)) */
    if (e < -14) e = -14;
    double q = nearbyint(a / ldexp(1.0, e - 10)); /* exact quotient, round half even */
    if (e == -14 && q < 1024.0) return (uint16_t)(sign | (uint16_t)q); /* subnormal */
    if (q >= 2048.0) {
        q = 1024.0;
        e++;
    }
    if (e > 15) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((int)q - 1024));
}

uint16_t ref_bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
    /* the f32 value split at bit 16: the upper half, and the dropped half
     * compared with the midpoint as integers; ties to an even upper half */
    const uint32_t hi = u >> 16, lo = u & 0xFFFFu;
    return (uint16_t)(hi + (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))));
}

double ref_bf16_value(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return (double)f;
}

double ref_f16_value(uint16_t h)
{
    const int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp((double)(1024 + m), e - 25);
    return (h & 0x8000u) ? -v : v;
}

double ref_e4m3_value(uint8_t c)
{
    if ((c & 0x7F) == 0x7F) return NAN;
    const int e = (c >> 3) & 15, m = c & 7;
    const double v = e == 0 ? ldexp((double)m, -9) : ldexp((double)(8 + m), e - 10);
    return (c & 0x80) ? -v : v;
}

uint8_t ref_e4m3_encode(float f)
{
    const uint8_t sign = signbit(f) ? 0x80u : 0u;
    if (isnan(f)) return (uint8_t)(sign | 0x7F);
    const double a = fabs((double)f);
    if (a == 0.0) return sign;
    if (a >= 448.0) return (uint8_t)(sign | 0x7E);
    int ex;
    frexp(a, &ex);
    int e = ex - 1;
    if (e < -6) e = -6;
    double q = nearbyint(a / ldexp(1.0, e - 3)); /* 3 mantissa bits */
    if (e == -6 && q < 8.0) return (uint8_t)(sign | (uint8_t)q);
    if (q >= 16.0) {
        q = 8.0;
        e++;
    }
    int code = ((e + 7) << 3) | ((int)q - 8);
    if (code > 0x7E) code = 0x7E;
    return (uint8_t)(sign | code);
}

/* roundf (ties away from zero) clamped to +-127; NaN -> 0. */
static int8_t q127(float v)
{
    if (isnan(v)) return 0;
    float r = roundf(v);
    if (r > 127.0f) r = 127.0f;
    if (r < -127.0f) r = -127.0f;
    return (int8_t)r;
}

/* One block of 32: d = amax/127 (f32), q = roundf(v * (1/d)). */
static float quant32(const float *v, int8_t *q)
{
    float amax = 0.0f;
    for (int l = 0; l < 32; l++)
        if (fabsf(v[l]) > amax) amax = fabsf(v[l]);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int l = 0; l < 32; l++) q[l] = q127(v[l] * id);
    return d;
}

void ref_quant_q8_1(const float *x, int64_t m, int64_t k, uint8_t *out)
{
    const int64_t nkb = (k + 511) / 512 * 4;
    for (int64_t kb = 0; kb < nkb; kb++)
        for (int64_t t = 0; t < m; t++) {
            uint8_t *rec = out + (size_t)(kb * m + t) * 144u;
            uint8_t *sums = out + (size_t)memra_q8_1_plane(m, k) + (size_t)(kb * m + t) * 16u;
            for (int g = 0; g < 4; g++) {
                float v[32];
                for (int l = 0; l < 32; l++) {
                    const int64_t c = kb * 128 + 32 * g + l;
                    v[l] = c < k ? x[t * k + c] : 0.0f;
                }
                int8_t q[32];
                const float d = quant32(v, q);
                memcpy(rec + 4 * g, &d, sizeof d);
                memcpy(rec + 16 + 32 * g, q, 32);
                int32_t sum = 0; /* the sum plane: fl(S d), +0 for S = 0 */
                for (int l = 0; l < 32; l++) sum += q[l];
                const float ts = sum != 0 ? (float)sum * d : 0.0f;
                memcpy(sums + 4 * g, &ts, sizeof ts);
            }
        }
}

/* ---- GGML block decoders, f32 arithmetic as GGML writes it ----------------- */

static uint16_t u16le(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static float f16f(const uint8_t *p) { return (float)ref_f16_value(u16le(p)); }

/* get_scale_min_k4: 6-bit scale and min of sub-block j from 12 packed bytes. */
static void k4_scale_min(int j, const uint8_t *q, float *sc, float *mn)
{
    uint8_t d, m;
    if (j < 4) {
        d = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
    *sc = (float)d;
    *mn = (float)m;
}

static void dec_block(memra_format f, const uint8_t *b, float *y)
{
    switch (f) {
    case MEMRA_FORMAT_Q8_0: {
        const float d = f16f(b);
        for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
        break;
    }
    case MEMRA_FORMAT_Q4_0: {
        const float d = f16f(b);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)((b[2 + j] & 0xF) - 8) * d;
            y[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
        }
        break;
    }
    case MEMRA_FORMAT_Q4_K:
    case MEMRA_FORMAT_Q5_K: {
        const int five = f == MEMRA_FORMAT_Q5_K;
        const float d = f16f(b), dmin = f16f(b + 2);
        const uint8_t *sc = b + 4, *qh = b + 16, *qs = five ? b + 48 : b + 16;
        for (int c = 0; c < 4; c++) { /* 64 values: low nibbles then high nibbles */
            float s1, m1, s2, m2;
            k4_scale_min(2 * c, sc, &s1, &m1);
            k4_scale_min(2 * c + 1, sc, &s2, &m2);
            const float d1 = d * s1, mm1 = dmin * m1, d2 = d * s2, mm2 = dmin * m2;
            for (int l = 0; l < 32; l++) {
                const int lo = (qs[32 * c + l] & 0xF) + (five && (qh[l] >> (2 * c) & 1) ? 16 : 0);
                const int hi = (qs[32 * c + l] >> 4) + (five && (qh[l] >> (2 * c + 1) & 1) ? 16 : 0);
                y[64 * c + l] = d1 * (float)lo - mm1;
                y[64 * c + 32 + l] = d2 * (float)hi - mm2;
            }
        }
        break;
    }
    case MEMRA_FORMAT_Q6_K: {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        const float d = f16f(b + 208);
        for (int h = 0; h < 2; h++) { /* two halves of 128 */
            for (int l = 0; l < 32; l++) {
                const int is = l / 16;
                const int q1 = ((ql[64 * h + l] & 0xF) | ((qh[32 * h + l] >> 0 & 3) << 4)) - 32;
                const int q2 = ((ql[64 * h + l + 32] & 0xF) | ((qh[32 * h + l] >> 2 & 3) << 4)) - 32;
                const int q3 = ((ql[64 * h + l] >> 4) | ((qh[32 * h + l] >> 4 & 3) << 4)) - 32;
                const int q4 = ((ql[64 * h + l + 32] >> 4) | ((qh[32 * h + l] >> 6 & 3) << 4)) - 32;
                float *o = y + 128 * h;
                o[l] = d * (float)sc[8 * h + is] * (float)q1;
                o[l + 32] = d * (float)sc[8 * h + is + 2] * (float)q2;
                o[l + 64] = d * (float)sc[8 * h + is + 4] * (float)q3;
                o[l + 96] = d * (float)sc[8 * h + is + 6] * (float)q4;
            }
        }
        break;
    }
    default: break;
    }
}

static int block_values(memra_format f) { return f == MEMRA_FORMAT_Q8_0 || f == MEMRA_FORMAT_Q4_0 ? 32 : 256; }
static int block_bytes(memra_format f)
{
    switch (f) {
    case MEMRA_FORMAT_Q8_0: return 34;
    case MEMRA_FORMAT_Q4_0: return 18;
    case MEMRA_FORMAT_Q4_K: return 144;
    case MEMRA_FORMAT_Q5_K: return 176;
    case MEMRA_FORMAT_Q6_K: return 210;
    default: return 0;
    }
}

void ref_dequant_f16(memra_format format, const uint8_t *src, int64_t rows, int64_t cols, uint16_t *out)
{
    const int bv = block_values(format), bb = block_bytes(format);
    float y[256];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < cols / bv; b++) {
            dec_block(format, src + (size_t)(r * (cols / bv) + b) * (size_t)bb, y);
            for (int l = 0; l < bv; l++) out[r * cols + b * bv + l] = ref_f16_bits(y[l]);
        }
}

void ref_fp8_blk_to_q8_0(const uint8_t *w, const float *grid, int64_t rows, int64_t cols, uint8_t *out)
{
    const int64_t gc = (cols + 127) / 128, nb = cols / 32;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nb; b++) {
            const float s = grid[(r / 128) * gc + (32 * b) / 128];
            float v[32];
            for (int l = 0; l < 32; l++) v[l] = (float)ref_e4m3_value(w[r * cols + 32 * b + l]) * s;
            int8_t q[32];
            const float d = quant32(v, q);
            uint8_t *blk = out + (size_t)(r * nb + b) * 34u;
            const uint16_t dh = ref_f16_bits(d);
            blk[0] = (uint8_t)(dh & 0xFF);
            blk[1] = (uint8_t)(dh >> 8);
            memcpy(blk + 2, q, 32);
        }
}

void ref_repack_q8_0(const uint8_t *src, int64_t rows, int64_t cols, uint8_t *out)
{
    const int64_t nb = cols / 32, ng = (cols + 127) / 128;
    for (int64_t g = 0; g < ng; g++)
        for (int64_t j = 0; j < rows; j++) {
            uint8_t *rec = out + (size_t)(g * rows + j) * 144u;
            for (int s = 0; s < 4; s++) {
                const int64_t b = 4 * g + s; /* Q8_0 block b of row j, or padding */
                float d = 0.0f;
                int8_t q[32];
                memset(q, 0, sizeof q);
                if (b < nb) {
                    const uint8_t *blk = src + (size_t)(j * nb + b) * 34u;
                    d = (float)ref_f16_value(u16le(blk)); /* every f16 is exact in f32 */
                    memcpy(q, blk + 2, 32);
                }
                memcpy(rec + 4 * s, &d, sizeof d);
                memcpy(rec + 16 + 32 * s, q, 32);
            }
        }
}

/* ---- the GEMMs ------------------------------------------------------------ */

static float absmax_f32(const float *x, int64_t n)
{
    float a = 0.0f;
    for (int64_t e = 0; e < n; e++)
        if (fabsf(x[e]) > a) a = fabsf(x[e]);
    return a;
}

void ref_gemm_run(const ref_gemm *g, double *ref, double *mass)
{
    const int64_t m = g->m, n = g->n, k = g->k;
    const double alpha = (double)g->alpha;
    if (g->op == MEMRA_OP_gemm_q8_0) {
        const uint8_t *w = g->w;
        const int64_t nb = k / 32;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0.0, a = 0.0;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *wb = w + (size_t)(j * nb + b) * 34u;
                    const uint8_t *rec = g->xq + (size_t)((b / 4) * m + i) * 144u;
                    float dx;
                    memcpy(&dx, rec + 4 * (b % 4), sizeof dx);
                    const double dd = ref_f16_value(u16le(wb)) * (double)dx;
                    int64_t isum = 0, iabs = 0;
                    for (int l = 0; l < 32; l++) {
                        const int p = (int)(int8_t)wb[2 + l] * (int)(int8_t)rec[16 + 32 * (b % 4) + l];
                        isum += p;
                        iabs += p < 0 ? -p : p;
                    }
                    s += dd * (double)isum;
                    a += fabs(dd) * (double)iabs;
                }
                ref[i * n + j] = alpha * s;
                mass[i * n + j] = fabs(alpha) * a;
            }
        return;
    }
    /* f16 / e4m3: quantise the activation to exact values, with per-element
     * activation scales xs (1 for f16). */
    const int64_t nkb = (k + 127) / 128;
    double *xv = malloc((size_t)(m * k) * sizeof *xv);
    double *xs = malloc((size_t)(m * nkb) * sizeof *xs);
    double *wv = malloc((size_t)k * sizeof *wv);
    if (xv == NULL || xs == NULL || wv == NULL) {
        for (int64_t e = 0; e < m * n; e++) ref[e] = mass[e] = NAN;
        free(xv);
        free(xs);
        free(wv);
        return;
    }
    double tscale = alpha; /* a scale common to every term */
    if (g->op == MEMRA_OP_gemm_f16) {
        for (int64_t e = 0; e < m * k; e++) xv[e] = ref_f16_value(g->xh ? g->xh[e] : ref_f16_bits(g->x[e]));
        for (int64_t e = 0; e < m * nkb; e++) xs[e] = 1.0;
    } else if (g->op == MEMRA_OP_gemm_bf16) {
        for (int64_t e = 0; e < m * k; e++) xv[e] = ref_bf16_value(ref_bf16_bits(g->x[e]));
        for (int64_t e = 0; e < m * nkb; e++) xs[e] = 1.0;
    } else if (g->op == MEMRA_OP_gemm_fp8) {
        const float amax = g->x_amax ? g->x_amax[0] : absmax_f32(g->x, m * k);
        const float sx = !g->x_amax && g->x_scale > 0.0f ? g->x_scale : amax > 0.0f ? amax / 448.0f : 1.0f;
        for (int64_t e = 0; e < m * k; e++) {
            const float v = g->x[e] / sx;
            xv[e] = ref_e4m3_value(ref_e4m3_encode(v));
        }
        for (int64_t e = 0; e < m * nkb; e++) xs[e] = 1.0;
        tscale = alpha * (double)g->w_scale * (double)sx;
    } else { /* gemm_fp8_blk */
        for (int64_t i = 0; i < m; i++)
            for (int64_t b = 0; b < nkb; b++) {
                const int64_t c0 = b * 128, len = k - c0 < 128 ? k - c0 : 128;
                const float amax = g->x_amax ? g->x_amax[b * m + i] : absmax_f32(g->x + i * k + c0, len);
                const float s = !g->x_amax && g->x_scale > 0.0f ? g->x_scale : amax > 0.0f ? amax / 448.0f : 1.0f;
                xs[i * nkb + b] = s;
                for (int64_t c = c0; c < c0 + len; c++) {
                    const float v = g->x[i * k + c] / s;
                    xv[i * k + c] = ref_e4m3_value(ref_e4m3_encode(v));
                }
            }
    }
    for (int64_t j = 0; j < n; j++) {
        for (int64_t c = 0; c < k; c++)
            wv[c] = g->op == MEMRA_OP_gemm_f16    ? ref_f16_value(((const uint16_t *)g->w)[j * k + c])
                    : g->op == MEMRA_OP_gemm_bf16 ? ref_bf16_value(((const uint16_t *)g->w)[j * k + c])
                                                  : ref_e4m3_value(((const uint8_t *)g->w)[j * k + c]);
        for (int64_t i = 0; i < m; i++) {
            double s = 0.0, a = 0.0;
            for (int64_t b = 0; b < nkb; b++) {
                double bs = 0.0, ba = 0.0;
                const int64_t c1 = (b + 1) * 128 < k ? (b + 1) * 128 : k;
                for (int64_t c = b * 128; c < c1; c++) {
                    const double t = xv[i * k + c] * wv[c];
                    bs += t;
                    ba += fabs(t);
                }
                double sc = xs[i * nkb + b];
                if (g->op == MEMRA_OP_gemm_fp8_blk) sc *= (double)g->grid[(j / 128) * nkb + b];
                s += sc * bs;
                a += fabs(sc) * ba;
            }
            ref[i * n + j] = tscale * s;
            mass[i * n + j] = fabs(tscale) * a;
        }
    }
    free(xv);
    free(xs);
    free(wv);
}

void ref_q4_0_to_q8_0(const uint8_t *src, int64_t rows, int64_t cols, uint8_t *out)
{
    const int64_t nb = rows * (cols / 32);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *in = src + b * MEMRA_Q4_0_BYTES;
        uint8_t *o = out + b * MEMRA_Q8_0_BYTES;
        memcpy(o, in, 2);
        for (int v = 0; v < 32; v++) {
            const int nib = v < 16 ? in[2 + v] & 0x0F : in[2 + v - 16] >> 4;
            o[2 + v] = (uint8_t)(int8_t)(nib - 8);
        }
    }
}
