/* Host reference: the GEMMs, y[y_row_offset + i, j] (row stride ldy) for
 * i < m, j < n, with W [n x k] and x [m x k]. Double accumulation throughout.
 *
 *  gemm_f16      xh = f16_rne(x) (or x as given f16 when x_is_f16), wh = W (f16).
 *                y = (float)((double)alpha * S), S = sum_k (double)(xh * wh).
 *                Each product of two f16 values is exact in f32, so S is the double
 *                sum of exact products; only its order differs from another
 *                implementation (here 8 interleaved partial sums, fixed).
 *  gemm_bf16     xb = bf16_rne(x), wb = W (bf16).
 *                y = (float)((double)alpha * S), S = sum_k (double)xb * (double)wb.
 *                A bf16 x bf16 product has 16 significant bits but may fall below
 *                f32's range (bf16 keeps f32's exponents), so it is formed in
 *                double, where it is exact; S is the double sum of exact products
 *                (8 interleaved partial sums, fixed order, as gemm_f16).
 *  gemm_fp8      amax = max |x| over all m*k values (f32, NaN ignored);
 *                sx = amax / 448.0f, or 1.0f when amax == 0;
 *                q = e4m3_encode(x / sx) (f32 division, RNE, saturating);
 *                y = (float)((double)alpha * (double)w_scale * (double)sx * S),
 *                S = sum_k dec(q) * dec(w), evaluated left to right.
 *                Every e4m3 x e4m3 product is a multiple of 2^-18 below 2^18, so
 *                S is EXACT in double for k < 2^17 whatever the order.
 *                Given scales (memra_gemm_args.x_amax / x_scale, in that order):
 *                sx = amax > 0 ? amax / 448.0f : 1.0f from the producer's *x_amax,
 *                else sx = x_scale when > 0; q as above, so |x| above 448 sx
 *                saturates (e4m3_encode's rule).
 *  gemm_fp8_blk  per row i and 128-column block b (the last may be short):
 *                s[i,b] = amax / 448.0f (1.0f when amax == 0), q = e4m3_encode(x / s).
 *                Given scales: amax = x_amax[b * m + i] (s as above, 1 unless
 *                amax > 0), else s[i,b] = x_scale for every block.
 *                y = (float)((double)alpha * T),
 *                T = sum over b in order of ((double)s[i,b] * (double)grid[j/128][b]) * B,
 *                B = sum_{k in b} dec(q) * dec(w) (exact in double).
 *  gemm_q8_0     W Q8_0 (row j = k/32 blocks of 34 bytes), x = quant_q8_1 records.
 *                per 32-block: I = sum int8 * int8 (int32, exact);
 *                T = sum over blocks in order of ((double)f16_to_f32(dw) * (double)dx) * I;
 *                y = (float)((double)alpha * T).
 *  gemm_q8_0r    W as Q8_0 records (repack_q8_0: f32 d already widened from the f16,
 *                the same int8 qs), x = quant_q8_1 records: gemm_q8_0's arithmetic
 *                through the same code, so both give bit-identical y for one weight.
 *  gemm_kr       W K-packed (memra_kr_repack of Q4_K / Q5_K / Q6_K at their GGUF
 *                width; args->w_format names which), each 128-value record
 *                widened by memra_kr_record to what the kernel's load stage
 *                makes (f32 s[8], int8 q[128]), x = quant_q8_1 records; k a
 *                multiple of 256. Per
 *                32-block b of the row (dx its activation scale, xq its 32 codes):
 *                Q4_K / Q5_K (s = d sc, mn = dmin m, q in [0, 31]):
 *                  I = sum q * xq, S = sum xq (int32, exact);
 *                  T += ((double)s * dx) * I - ((double)mn * dx) * S;
 *                Q6_K (s_lo / s_hi = d sc of the block's first / second 16 values):
 *                  I_lo, I_hi = sum q * xq over each 16 (int32, exact);
 *                  T += ((double)s_lo * dx) * I_lo + ((double)s_hi * dx) * I_hi;
 *                blocks in k order; y = (float)((double)alpha * T).
 *  accprobe      time only: S32 = int8 bytes, int32 per 32, y = (float)(int64 sum);
 *                F32 = bytes decoded as e4m3, f32 products summed in f32 in k order;
 *                MX declined. y written like the GEMMs (row offset, ldy); alpha unused.
 *
 * Work is split over j (weight rows): each thread decodes its weight rows once
 * and produces every i of those columns.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "modules/host/host_internal.h"

#define FAIL_ARG(ctx, ...) ((ctx)->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, __VA_ARGS__))
#define FAIL_OOM(ctx, what) ((ctx)->host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of host memory", what))

/* ---- validation ------------------------------------------------------------ */

static memra_status check_gemm(memra__host_ctx *ctx, const char *op, const memra_gemm_args *a)
{
    if (a == NULL) return FAIL_ARG(ctx, "%s: args is NULL", op);
    if (!MEMRA_HAS_MEMBER(a, memra_gemm_args, alpha))
        return FAIL_ARG(ctx, "%s: args struct_size %u is smaller than the v1 struct (%zu)", op, (unsigned)a->struct_size,
                        sizeof(memra_gemm_args));
    if (a->m < 0 || a->n < 0 || a->k < 0)
        return FAIL_ARG(ctx, "%s: m = %d, n = %d, k = %d must be >= 0", op, (int)a->m, (int)a->n, (int)a->k);
    if (a->ldy < a->n) return FAIL_ARG(ctx, "%s: ldy = %lld is less than n = %d", op, (long long)a->ldy, (int)a->n);
    if (a->y_row_offset < 0) return FAIL_ARG(ctx, "%s: y_row_offset = %lld must be >= 0", op, (long long)a->y_row_offset);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    /* the last byte written, (y_row_offset + m) * ldy floats, must be addressable */
    if (a->y_row_offset > INT64_MAX - a->m || a->y_row_offset + a->m > INT64_MAX / 4 / a->ldy)
        return FAIL_ARG(ctx, "%s: y_row_offset %lld + m %d rows of ldy %lld floats overflows", op,
                        (long long)a->y_row_offset, (int)a->m, (long long)a->ldy);
    if (a->y == 0) return FAIL_ARG(ctx, "%s: y is NULL", op);
    if (a->k > 0 && (a->x == 0 || a->w == 0)) return FAIL_ARG(ctx, "%s: x or w is NULL", op);
    return MEMRA_STATUS_OK;
}

static float *y_base(const memra_gemm_args *a) { return MEMRA__HOST_PTR(float, a->y) + a->y_row_offset * a->ldy; }

/* sum_k (double)(a[k] * b[k]) for operands whose f32 products are exact; 8
 * interleaved partial sums in a fixed order so the compiler can vectorise. */
static double dot_exact(const float *a, const float *b, int64_t n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)(a[i + l] * b[i + l]);
    double tail = 0.0;
    for (; i < n; i++) tail += (double)(a[i] * b[i]);
    return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) + tail;
}

/* sum_k (double)a[k] * (double)b[k]: the products formed in double (exact for
 * bf16 operands), summed as dot_exact does. */
static double dot_wide(const float *a, const float *b, int64_t n)
{
    double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)a[i + l] * (double)b[i + l];
    double tail = 0.0;
    for (; i < n; i++) tail += (double)a[i] * (double)b[i];
    return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) + tail;
}

/* ---- the float-operand GEMMs (f16, fp8, fp8 block) --------------------------------- */

typedef enum wkind { WKIND_F16, WKIND_E4M3, WKIND_BF16 } wkind;

typedef struct fgemm_job {
    const memra__host_ctx *ctx;
    wkind kind;
    const void *w;         /* f16, bf16 or e4m3 [n x k] */
    const float *xv;       /* [m x k] activation values (already quantised) */
    const float *xs;       /* fp8_blk: [m x nkb] activation scales; NULL otherwise */
    const float *grid;     /* fp8_blk: [ceil(n/128) x nkb]; NULL otherwise */
    int64_t m, n, k, nkb;
    double scale;          /* the folded scalar (alpha, or alpha * w_scale * sx) */
    float *y;
    int64_t ldy;
    float *scratch;        /* k floats per thread */
} fgemm_job;

static void fgemm_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    const fgemm_job *jb = (const fgemm_job *)arg;
    const int64_t k = jb->k;
    float *wr = jb->scratch + (int64_t)tid * k;
    for (int64_t j = begin; j < end; j++) {
        if (jb->kind == WKIND_F16) {
            const uint16_t *src = (const uint16_t *)jb->w + j * k;
            for (int64_t c = 0; c < k; c++) wr[c] = memra_f32_from_f16(src[c]);
        } else if (jb->kind == WKIND_BF16) {
            const uint16_t *src = (const uint16_t *)jb->w + j * k;
            for (int64_t c = 0; c < k; c++) wr[c] = memra_f32_from_bf16(src[c]);
        } else {
            const uint8_t *src = (const uint8_t *)jb->w + j * k;
            for (int64_t c = 0; c < k; c++) wr[c] = jb->ctx->e4m3[src[c]];
        }
        const float *g = jb->grid ? jb->grid + (j / 128) * jb->nkb : NULL;
        for (int64_t i = 0; i < jb->m; i++) {
            const float *xi = jb->xv + i * k;
            double t;
            if (jb->kind == WKIND_BF16) {
                t = dot_wide(xi, wr, k);
            } else if (g == NULL) {
                t = dot_exact(xi, wr, k);
            } else {
                t = 0.0;
                for (int64_t b = 0; b < jb->nkb; b++) {
                    const int64_t c0 = b * 128, len = k - c0 < 128 ? k - c0 : 128;
                    const double bs = dot_exact(xi + c0, wr + c0, len);
                    t += ((double)jb->xs[i * jb->nkb + b] * (double)g[b]) * bs;
                }
            }
            jb->y[i * jb->ldy + j] = (float)(jb->scale * t);
        }
    }
}

static memra_status fgemm_run(memra__host_ctx *ctx, const char *op, fgemm_job *jb)
{
    const int threads = memra__host_threads(ctx, jb->n, 2.0 * (double)jb->m * (double)jb->k + (double)jb->k);
    jb->scratch = memra__host_alloc((uint64_t)jb->k * (uint64_t)threads, sizeof(float));
    if (jb->scratch == NULL) return FAIL_OOM(ctx, op);
    memra__host_run(threads, jb->n, fgemm_rows, jb);
    free(jb->scratch);
    jb->scratch = NULL;
    return MEMRA_STATUS_OK;
}

memra_status memra__host_gemm_f16(memra_call *call, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, "gemm_f16", args);
    if (st != MEMRA_STATUS_OK || args->m == 0 || args->n == 0) return st;
    const int64_t m = args->m, k = args->k;
    float *xv = memra__host_alloc((uint64_t)(m * k), sizeof(float));
    if (xv == NULL) return FAIL_OOM(ctx, "gemm_f16");
    if (args->x_is_f16) {
        const uint16_t *xh = MEMRA__HOST_PTR(const uint16_t, args->x);
        for (int64_t e = 0; e < m * k; e++) xv[e] = memra_f32_from_f16(xh[e]);
    } else {
        const float *xf = MEMRA__HOST_PTR(const float, args->x);
        for (int64_t e = 0; e < m * k; e++) xv[e] = memra_f32_from_f16(memra_f16_from_f32(xf[e]));
    }
    fgemm_job jb = {.ctx = ctx, .kind = WKIND_F16, .w = MEMRA__HOST_PTR(const void, args->w), .xv = xv,
                    .m = m, .n = args->n, .k = k, .scale = (double)args->alpha, .y = y_base(args), .ldy = args->ldy};
    st = fgemm_run(ctx, "gemm_f16", &jb);
    free(xv);
    return st;
}

/* gemm_w16: the W16 operand decoded to its f16 mirror (memra_w16_decode_f16: dequant_f16's bits), then
 * gemm_f16's reference on it, the activation f32 rounded to f16 */
memra_status memra__host_gemm_w16(memra_call *call, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, "gemm_w16", args);
    if (st != MEMRA_STATUS_OK) return st;
    if (!MEMRA_HAS_MEMBER(args, memra_gemm_args, w_format))
        return FAIL_ARG(ctx, "gemm_w16: args struct_size %u has no w_format", (unsigned)args->struct_size);
    const memra_format f = (memra_format)args->w_format;
    if (memra_w16_cb(f) == 0)
        return FAIL_ARG(ctx, "gemm_w16: w_format %d is not Q8_0, Q4_0, Q4_K, Q5_K or Q6_K", (int)f);
    if (memra_w16_bytes(f, args->n, args->k) == 0 && args->n > 0 && args->k > 0)
        return FAIL_ARG(ctx, "gemm_w16: k = %d is not a multiple of %s's block (%d)", (int)args->k,
                        memra_format_name(f), f == MEMRA_FORMAT_Q8_0 || f == MEMRA_FORMAT_Q4_0 ? 32 : 256);
    if (args->m == 0 || args->n == 0) return MEMRA_STATUS_OK;
    uint16_t *wh = memra__host_alloc((uint64_t)args->n * (uint64_t)args->k, sizeof(uint16_t));
    if (wh == NULL) return FAIL_OOM(ctx, "gemm_w16");
    if (args->k > 0 && memra_w16_decode_f16(f, MEMRA__HOST_PTR(const void, args->w), args->n, args->k, wh) != 0) {
        free(wh);
        return FAIL_ARG(ctx, "gemm_w16: the %s W16 operand of %d x %d was refused", memra_format_name(f), (int)args->n,
                        (int)args->k);
    }
    memra_gemm_args a = *args;
    a.struct_size = sizeof a;
    a.w = (memra_dptr)(uintptr_t)wh;
    st = memra__host_gemm_f16(call, &a);
    free(wh);
    return st;
}

memra_status memra__host_gemm_bf16(memra_call *call, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, "gemm_bf16", args);
    if (st != MEMRA_STATUS_OK || args->m == 0 || args->n == 0) return st;
    if (args->x_is_f16) return FAIL_ARG(ctx, "gemm_bf16: the activation is f32 (x_is_f16 is for gemm_f16)");
    const int64_t m = args->m, k = args->k;
    float *xv = memra__host_alloc((uint64_t)(m * k), sizeof(float));
    if (xv == NULL) return FAIL_OOM(ctx, "gemm_bf16");
    const float *xf = MEMRA__HOST_PTR(const float, args->x);
    for (int64_t e = 0; e < m * k; e++) xv[e] = memra_f32_from_bf16(memra_bf16_from_f32(xf[e]));
    fgemm_job jb = {.ctx = ctx, .kind = WKIND_BF16, .w = MEMRA__HOST_PTR(const void, args->w), .xv = xv,
                    .m = m, .n = args->n, .k = k, .scale = (double)args->alpha, .y = y_base(args), .ldy = args->ldy};
    st = fgemm_run(ctx, "gemm_bf16", &jb);
    free(xv);
    return st;
}

/* amax of n floats, NaN ignored (like fmaxf). */
static float absmax(const float *x, int64_t n)
{
    float amax = 0.0f;
    for (int64_t e = 0; e < n; e++) {
        const float a = fabsf(x[e]);
        if (a > amax) amax = a;
    }
    return amax;
}

/* The scale of an amax, the lanes' rule: NaN, zero and negatives give 1. */
static float amax_scale(float amax) { return amax > 0.0f ? amax / 448.0f : 1.0f; }

/* The given activation scale of an FP8 GEMM (memra_gemm_args.x_amax, then
 * x_scale): *amax the producer's maxima (NULL: none), *xs the static scale
 * (0: none). INVALID_ARGUMENT for a bad x_scale. */
static memra_status given_scale(memra__host_ctx *ctx, const char *op, const memra_gemm_args *a, const float **amax,
                                float *xs)
{
    *amax = NULL;
    *xs = 0.0f;
    if (!MEMRA_HAS_MEMBER(a, memra_gemm_args, x_amax)) return MEMRA_STATUS_OK;
    if (!isfinite(a->x_scale) || a->x_scale < 0.0f)
        return FAIL_ARG(ctx, "%s: x_scale = %g must be finite and >= 0", op, (double)a->x_scale);
    *amax = a->x_amax ? MEMRA__HOST_PTR(const float, a->x_amax) : NULL;
    *xs = a->x_scale;
    return MEMRA_STATUS_OK;
}

memra_status memra__host_gemm_fp8(memra_call *call, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, "gemm_fp8", args);
    if (st != MEMRA_STATUS_OK || args->m == 0 || args->n == 0) return st;
    const int64_t m = args->m, k = args->k;
    const float *given = NULL;
    float xs = 0.0f;
    if ((st = given_scale(ctx, "gemm_fp8", args, &given, &xs)) != MEMRA_STATUS_OK) return st;
    const float *x = MEMRA__HOST_PTR(const float, args->x);
    float *xv = memra__host_alloc((uint64_t)(m * k), sizeof(float));
    if (xv == NULL) return FAIL_OOM(ctx, "gemm_fp8");
    const float sx = given ? amax_scale(given[0]) : xs > 0.0f ? xs : amax_scale(absmax(x, m * k));
    for (int64_t e = 0; e < m * k; e++) xv[e] = ctx->e4m3[memra_e4m3_encode(x[e] / sx)];
    fgemm_job jb = {.ctx = ctx, .kind = WKIND_E4M3, .w = MEMRA__HOST_PTR(const void, args->w), .xv = xv,
                    .m = m, .n = args->n, .k = k,
                    .scale = (double)args->alpha * (double)args->w_scale * (double)sx,
                    .y = y_base(args), .ldy = args->ldy};
    st = fgemm_run(ctx, "gemm_fp8", &jb);
    free(xv);
    return st;
}

memra_status memra__host_gemm_fp8_blk(memra_call *call, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, "gemm_fp8_blk", args);
    if (st != MEMRA_STATUS_OK || args->m == 0 || args->n == 0) return st;
    if (args->k > 0 && args->w_scale_grid == 0) return FAIL_ARG(ctx, "gemm_fp8_blk: w_scale_grid is NULL");
    const int64_t m = args->m, k = args->k, nkb = memra_fp8_grid_cols(k);
    const float *given = NULL;
    float gs = 0.0f;
    if ((st = given_scale(ctx, "gemm_fp8_blk", args, &given, &gs)) != MEMRA_STATUS_OK) return st;
    const float *x = MEMRA__HOST_PTR(const float, args->x);
    float *xv = memra__host_alloc((uint64_t)(m * k), sizeof(float));
    float *xs = memra__host_alloc((uint64_t)(m * nkb), sizeof(float));
    if (xv == NULL || xs == NULL) {
        free(xv);
        free(xs);
        return FAIL_OOM(ctx, "gemm_fp8_blk");
    }
    for (int64_t i = 0; i < m; i++) {
        for (int64_t b = 0; b < nkb; b++) {
            const int64_t c0 = b * 128, len = k - c0 < 128 ? k - c0 : 128;
            const float *xb = x + i * k + c0;
            const float s = given ? amax_scale(given[b * m + i]) : gs > 0.0f ? gs : amax_scale(absmax(xb, len));
            xs[i * nkb + b] = s;
            for (int64_t c = 0; c < len; c++) xv[i * k + c0 + c] = ctx->e4m3[memra_e4m3_encode(xb[c] / s)];
        }
    }
    fgemm_job jb = {.ctx = ctx, .kind = WKIND_E4M3, .w = MEMRA__HOST_PTR(const void, args->w), .xv = xv, .xs = xs,
                    .grid = MEMRA__HOST_PTR(const float, args->w_scale_grid), .m = m, .n = args->n, .k = k,
                    .nkb = nkb, .scale = (double)args->alpha, .y = y_base(args), .ldy = args->ldy};
    st = fgemm_run(ctx, "gemm_fp8_blk", &jb);
    free(xv);
    free(xs);
    return st;
}

/* ---- gemm_q8_0, gemm_q8_0r ----------------------------------------------------- */

/* One code path for both weight layouts: only where block b of row j keeps
 * its scale and its 32 int8 differs. The scale is widened to f32 either way
 * (here, or by repack_q8_0 with the same decoder), so every term and its
 * order are the same and so is y, bit for bit. */
typedef struct q8_job {
    const uint8_t *w; /* Q8_0: [n rows x nb blocks of 34 bytes]; records: [ceil(nb/4) x n] of 144 */
    const uint8_t *x; /* q8_1 records */
    int records;      /* w is in the Q8_0 record layout (gemm_q8_0r) */
    int64_t m, n, nb;
    double alpha;
    float *y;
    int64_t ldy;
    float *scratch; /* nb floats per thread: the row's scales as f32 */
} q8_job;

static int32_t dot_i8_32(const int8_t *a, const int8_t *b)
{
    int32_t s = 0;
    for (int l = 0; l < 32; l++) s += (int32_t)a[l] * (int32_t)b[l];
    return s;
}

/* Block b of weight row j: its 144-byte record (records) or its 34-byte block. */
static const uint8_t *q8_w_at(const q8_job *jb, int64_t j, int64_t b)
{
    if (jb->records) return jb->w + (uint64_t)((b >> 2) * jb->n + j) * MEMRA_Q8_1_RECORD_BYTES;
    return jb->w + ((uint64_t)j * (uint64_t)jb->nb + (uint64_t)b) * MEMRA_Q8_0_BYTES;
}

static float q8_w_scale(const q8_job *jb, int64_t j, int64_t b)
{
    const uint8_t *p = q8_w_at(jb, j, b);
    if (!jb->records) return memra_f32_from_f16((uint16_t)(p[0] | (p[1] << 8)));
    float d;
    memcpy(&d, p + 4 * (b & 3), sizeof d);
    return d;
}

static const int8_t *q8_w_qs(const q8_job *jb, int64_t j, int64_t b)
{
    const uint8_t *p = q8_w_at(jb, j, b);
    return (const int8_t *)(jb->records ? p + 16 + 32 * (b & 3) : p + 2);
}

static void q8_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    const q8_job *jb = (const q8_job *)arg;
    float *dw = jb->scratch + (int64_t)tid * jb->nb;
    for (int64_t j = begin; j < end; j++) {
        for (int64_t b = 0; b < jb->nb; b++) dw[b] = q8_w_scale(jb, j, b);
        for (int64_t i = 0; i < jb->m; i++) {
            double t = 0.0;
            for (int64_t b = 0; b < jb->nb; b++) {
                const uint8_t *rec = jb->x + (uint64_t)((b >> 2) * jb->m + i) * MEMRA_Q8_1_RECORD_BYTES;
                const int g = (int)(b & 3);
                float dx;
                memcpy(&dx, rec + 4 * g, sizeof dx);
                const int32_t isum = dot_i8_32(q8_w_qs(jb, j, b), (const int8_t *)(rec + 16 + 32 * g));
                t += ((double)dw[b] * (double)dx) * (double)isum;
            }
            jb->y[i * jb->ldy + j] = (float)(jb->alpha * t);
        }
    }
}

static memra_status q8_gemm(memra_call *call, const memra_gemm_args *args, const char *op, int records)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, op, args);
    if (st != MEMRA_STATUS_OK) return st;
    if (args->k % MEMRA_QK8_0 != 0)
        return FAIL_ARG(ctx, "%s: k = %d is not a multiple of the Q8_0 block (32)", op, (int)args->k);
    if (args->m == 0 || args->n == 0) return MEMRA_STATUS_OK;
    q8_job jb = {.w = MEMRA__HOST_PTR(const uint8_t, args->w), .x = MEMRA__HOST_PTR(const uint8_t, args->x),
                 .records = records, .m = args->m, .n = args->n, .nb = args->k / MEMRA_QK8_0,
                 .alpha = (double)args->alpha, .y = y_base(args), .ldy = args->ldy};
    const int threads = memra__host_threads(ctx, jb.n, 2.0 * (double)jb.m * (double)args->k);
    jb.scratch = memra__host_alloc((uint64_t)jb.nb * (uint64_t)threads, sizeof(float));
    if (jb.scratch == NULL) return FAIL_OOM(ctx, op);
    memra__host_run(threads, jb.n, q8_rows, &jb);
    free(jb.scratch);
    return MEMRA_STATUS_OK;
}

memra_status memra__host_gemm_q8_0(memra_call *call, const memra_gemm_args *args)
{
    return q8_gemm(call, args, "gemm_q8_0", 0);
}

memra_status memra__host_gemm_q8_0r(memra_call *call, const memra_gemm_args *args)
{
    return q8_gemm(call, args, "gemm_q8_0r", 1);
}

/* ---- gemm_kr --------------------------------------------------------------------- */

typedef struct kr_job {
    const uint8_t *w; /* K-packed weight (module.h memra_kr_bytes) */
    const uint8_t *x; /* q8_1 records */
    memra_format format;
    int64_t m, n, k, nb;
    double alpha;
    float *y;
    int64_t ldy;
    uint8_t *scratch; /* per thread: the row's k/128 records widened, KR_WIDE bytes each */
} kr_job;

#define KR_WIDE (8 * sizeof(float) + 128) /* s[8] then q[128], as memra_kr_record gives them */

static void kr_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    const kr_job *jb = (const kr_job *)arg;
    uint8_t *wide = jb->scratch + (size_t)tid * (size_t)(jb->k / 128) * KR_WIDE;
    for (int64_t j = begin; j < end; j++) {
        /* the row's records as the kernel's load stage widens them (one decoder: formats.c) */
        for (int64_t g = 0; g < jb->k / 128; g++) {
            float sw[8];
            (void)memra_kr_record(jb->format, jb->w, jb->n, jb->k, g, j, sw, (int8_t *)(wide + g * KR_WIDE + sizeof sw));
            memcpy(wide + g * KR_WIDE, sw, sizeof sw);
        }
        for (int64_t i = 0; i < jb->m; i++) {
            double t = 0.0;
            for (int64_t b = 0; b < jb->nb; b++) {
                const int g = (int)(b & 3);
                const uint8_t *wr = wide + (b >> 2) * KR_WIDE;
                const uint8_t *xr = jb->x + (uint64_t)((b >> 2) * jb->m + i) * MEMRA_Q8_1_RECORD_BYTES;
                const int8_t *wq = (const int8_t *)(wr + 32 + 32 * g), *xq = (const int8_t *)(xr + 16 + 32 * g);
                float dx, s0, s1;
                memcpy(&dx, xr + 4 * g, sizeof dx);
                memcpy(&s0, wr + 4 * g, sizeof s0);
                memcpy(&s1, wr + 16 + 4 * g, sizeof s1);
                int32_t i0 = 0, i1 = 0, sx = 0;
                for (int l = 0; l < 16; l++) i0 += (int32_t)wq[l] * (int32_t)xq[l];
                for (int l = 16; l < 32; l++) i1 += (int32_t)wq[l] * (int32_t)xq[l];
                if (jb->format == MEMRA_FORMAT_Q6_K) {
                    t += ((double)s0 * (double)dx) * (double)i0 + ((double)s1 * (double)dx) * (double)i1;
                } else {
                    for (int l = 0; l < 32; l++) sx += (int32_t)xq[l];
                    t += ((double)s0 * (double)dx) * (double)(i0 + i1) - ((double)s1 * (double)dx) * (double)sx;
                }
            }
            jb->y[i * jb->ldy + j] = (float)(jb->alpha * t);
        }
    }
}

memra_status memra__host_gemm_kr(memra_call *call, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    memra_status st = check_gemm(ctx, "gemm_kr", args);
    if (st != MEMRA_STATUS_OK) return st;
    if (!MEMRA_HAS_MEMBER(args, memra_gemm_args, w_format))
        return FAIL_ARG(ctx, "gemm_kr: args struct_size %u has no w_format", (unsigned)args->struct_size);
    const int32_t f = args->w_format;
    if (f != MEMRA_FORMAT_Q4_K && f != MEMRA_FORMAT_Q5_K && f != MEMRA_FORMAT_Q6_K)
        return FAIL_ARG(ctx, "gemm_kr: w_format %d is not Q4_K, Q5_K or Q6_K", (int)f);
    if (args->k % MEMRA_QK_K != 0)
        return FAIL_ARG(ctx, "gemm_kr: k = %d is not a multiple of the K-quant super-block (256)", (int)args->k);
    if (args->m == 0 || args->n == 0) return MEMRA_STATUS_OK;
    kr_job jb = {.w = MEMRA__HOST_PTR(const uint8_t, args->w), .x = MEMRA__HOST_PTR(const uint8_t, args->x),
                 .format = (memra_format)f, .m = args->m, .n = args->n, .k = args->k, .nb = args->k / 32,
                 .alpha = (double)args->alpha, .y = y_base(args), .ldy = args->ldy};
    const int threads = memra__host_threads(ctx, jb.n, 2.0 * (double)jb.m * (double)args->k);
    jb.scratch = memra__host_alloc((uint64_t)(args->k / 128) * (uint64_t)threads, KR_WIDE);
    if (jb.scratch == NULL) return FAIL_OOM(ctx, "gemm_kr");
    memra__host_run(threads, jb.n, kr_rows, &jb);
    free(jb.scratch);
    return MEMRA_STATUS_OK;
}

/* ---- accprobe ------------------------------------------------------------- */

typedef struct probe_job {
    const memra__host_ctx *ctx;
    memra_accprobe_arm arm;
    const uint8_t *w, *x;
    int64_t m, k;
    float *y;
    int64_t ldy;
} probe_job;

static void probe_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const probe_job *jb = (const probe_job *)arg;
    for (int64_t j = begin; j < end; j++) {
        const uint8_t *wr = jb->w + j * jb->k;
        for (int64_t i = 0; i < jb->m; i++) {
            const uint8_t *xr = jb->x + i * jb->k;
            if (jb->arm == MEMRA_ACCPROBE_S32) {
                int64_t t = 0;
                for (int64_t c = 0; c < jb->k; c += 32)
                    t += dot_i8_32((const int8_t *)(wr + c), (const int8_t *)(xr + c));
                jb->y[i * jb->ldy + j] = (float)t;
            } else {
                float t = 0.0f;
                for (int64_t c = 0; c < jb->k; c++) t += jb->ctx->e4m3[xr[c]] * jb->ctx->e4m3[wr[c]];
                jb->y[i * jb->ldy + j] = t;
            }
        }
    }
}

memra_status memra__host_accprobe(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *args)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (arm == MEMRA_ACCPROBE_MX) {
        call->decline_reason = "accprobe: mxf8f6f4 needs sm_120a";
        return MEMRA_STATUS_DECLINED;
    }
    if (arm != MEMRA_ACCPROBE_S32 && arm != MEMRA_ACCPROBE_F32)
        return FAIL_ARG(ctx, "accprobe: unknown arm %d", (int)arm);
    memra_status st = check_gemm(ctx, "accprobe", args);
    if (st != MEMRA_STATUS_OK) return st;
    if (args->k % 32 != 0) {
        call->decline_reason = "accprobe: k not a multiple of 32 (the MMQ tile)";
        return MEMRA_STATUS_DECLINED;
    }
    if (args->m == 0 || args->n == 0) return MEMRA_STATUS_OK;
    probe_job jb = {.ctx = ctx, .arm = arm, .w = MEMRA__HOST_PTR(const uint8_t, args->w),
                    .x = MEMRA__HOST_PTR(const uint8_t, args->x), .m = args->m, .k = args->k,
                    .y = y_base(args), .ldy = args->ldy};
    memra__host_run(memra__host_threads(ctx, args->n, 2.0 * (double)args->m * (double)args->k), args->n, probe_rows, &jb);
    return MEMRA_STATUS_OK;
}
