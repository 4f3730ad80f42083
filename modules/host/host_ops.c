/* Host reference: the element-wise and conversion ops.
 *
 *  cvt_f16          dst[i] = f16_rne(src[i])                      (memra_f16_from_f32)
 *  quant_q8_1       f32 [m x k] -> 144-byte records (f32 d[4], int8 qs[128]) and their sum plane; k padded
 *                   with zeros to a multiple of 512; record (kb, t) at kb * m + t.
 *                   Per 32 values: amax = max |x| (f32, NaN ignored), d = amax / 127.0f,
 *                   id = d != 0 ? 1.0f / d : 0.0f, q = roundf(x * id) (ties away from
 *                   zero; clamped to +-127, NaN -> 0). Padding gives d = 0, q = 0.
 *  dequant_f16      per row: memra_decode_row (GGML's arithmetic), then f16_rne. Every
 *                   format of memra_decode_row is taken; cols a multiple of its block.
 *  dequant_kr_f16   K-packed Q4_K / Q5_K / Q6_K (memra_kr_repack) -> f16: per record memra_kr_record,
 *                   v = s q - mn (Q4_K / Q5_K) or s q (Q6_K) in f32, then f16_rne. s q is exact, so v is
 *                   the decoder's value bit for bit and the output dequant_f16's of the GGUF blocks.
 *                   Format Q8_0: Q8_0 records (memra_q8_0r_bytes), v = q d, dequant_f16's of the blocks.
 *  fp8_blk_to_q8_0  v = e4m3_decode(w[j, c]) * grid[j / 128][c / 128]   (one f32 product)
 *                   then memra_q8_0_encode per 32 values. cols % 32 != 0: DECLINED.
 *  fp8_nan_count    *out += number of bytes with (b & 0x7F) == 0x7F.
 *  repack_q8_0      Q8_0 [rows x cols] -> records of 128 columns (memra_q8_0r_bytes):
 *                   record (g, j) at g * rows + j holds f32 d[4] = f16_to_f32(block scale)
 *                   (exact widening, memra_f32_from_f16) and the blocks' int8 qs[128]
 *                   copied; blocks past cols (padding to 128) get d = 0, qs = 0.
 *                   cols % 32 != 0: INVALID_ARGUMENT (no Q8_0 weight has that shape).
 *  scale            y[i] = y[i] * s (f32).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/quant.h"
#include "memra/formats.h"
#include "modules/host/host_internal.h"

#define FAIL_ARG(ctx, ...) ((ctx)->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, __VA_ARGS__))
#define FAIL_OOM(ctx, what) ((ctx)->host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of host memory", what))

memra_status memra__host_cvt_f16(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (n < 0) return FAIL_ARG(ctx, "cvt_f16: n = %lld must be >= 0", (long long)n);
    if (n > 0 && (src_f32 == 0 || dst_f16 == 0)) return FAIL_ARG(ctx, "cvt_f16: NULL source or destination");
    const float *src = MEMRA__HOST_PTR(const float, src_f32);
    uint16_t *dst = MEMRA__HOST_PTR(uint16_t, dst_f16);
    for (int64_t i = 0; i < n; i++) dst[i] = memra_f16_from_f32(src[i]);
    return MEMRA_STATUS_OK;
}

/* ---- quant_q8_1 -------------------------------------------------------------- */

memra_status memra__host_quant_q8_1(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (m < 0 || k < 0) return FAIL_ARG(ctx, "quant_q8_1: m = %d and k = %d must be >= 0", (int)m, (int)k);
    if (m == 0 || k == 0) return MEMRA_STATUS_OK;
    if (x == 0 || dst == 0) return FAIL_ARG(ctx, "quant_q8_1: NULL x or destination");
    const float *xs = MEMRA__HOST_PTR(const float, x);
    uint8_t *out = MEMRA__HOST_PTR(uint8_t, dst);
    const int64_t nkb = ((int64_t)k + 511) / 512 * 4; /* records of 128 per token */
    uint8_t *const plane = out + memra_q8_1_plane(m, k);
    for (int64_t kb = 0; kb < nkb; kb++) {
        for (int64_t t = 0; t < m; t++) {
            uint8_t *rec = out + (uint64_t)(kb * m + t) * MEMRA_Q8_1_RECORD_BYTES;
            uint8_t *sums = plane + (uint64_t)(kb * m + t) * MEMRA_Q8_1_SUM_BYTES;
            const float *row = xs + t * (int64_t)k;
            for (int g = 0; g < 4; g++) {
                float v[32];
                const int64_t c0 = kb * 128 + 32 * g;
                float amax = 0.0f;
                for (int l = 0; l < 32; l++) {
                    v[l] = c0 + l < k ? row[c0 + l] : 0.0f;
                    float a = fabsf(v[l]);
                    if (a > amax) amax = a;
                }
                const float d = amax / 127.0f;
                const float id = d != 0.0f ? 1.0f / d : 0.0f;
                memcpy(rec + 4 * g, &d, sizeof d);
                int8_t *qs = (int8_t *)(rec + 16 + 32 * g);
                int32_t sum = 0;
                for (int l = 0; l < 32; l++) {
                    qs[l] = memra__round_i8(v[l] * id, 127.0f);
                    sum += qs[l];
                }
                /* the plane's t = fl(S d), +0 for S = 0 (also where d is not finite) */
                const float ts = sum != 0 ? (float)sum * d : 0.0f;
                memcpy(sums + 4 * g, &ts, sizeof ts);
            }
        }
    }
    return MEMRA_STATUS_OK;
}

/* ---- dequant_f16 ------------------------------------------------------------- */

typedef struct dequant_job {
    memra_format format;
    const uint8_t *src;
    uint64_t row_bytes;
    int64_t cols;
    uint16_t *dst;
    float *scratch; /* cols floats per thread */
} dequant_job;

static void dequant_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    dequant_job *jb = (dequant_job *)arg;
    float *tmp = jb->scratch + (int64_t)tid * jb->cols;
    for (int64_t r = begin; r < end; r++) {
        memra_decode_row(jb->format, jb->src + (uint64_t)r * jb->row_bytes, jb->cols, tmp);
        uint16_t *o = jb->dst + r * jb->cols;
        for (int64_t c = 0; c < jb->cols; c++) o[c] = memra_f16_from_f32(tmp[c]);
    }
}

memra_status memra__host_dequant_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                     int64_t cols, memra_dptr dst_f16)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    const int bv = memra_format_block_values(format);
    if (bv == 0) return FAIL_ARG(ctx, "dequant_f16: unknown format %d", (int)format);
    if (rows < 0 || cols < 0)
        return FAIL_ARG(ctx, "dequant_f16: rows = %lld and cols = %lld must be >= 0", (long long)rows, (long long)cols);
    if (cols % bv != 0)
        return FAIL_ARG(ctx, "dequant_f16: cols = %lld is not a multiple of the %s block (%d)", (long long)cols,
                        memra_format_name(format), bv);
    if (rows == 0 || cols == 0) return MEMRA_STATUS_OK;
    if (cols > INT64_MAX / 4 / rows) return FAIL_ARG(ctx, "dequant_f16: rows x cols overflows");
    if (src == 0 || dst_f16 == 0) return FAIL_ARG(ctx, "dequant_f16: NULL source or destination");
    const int threads = memra__host_threads(ctx, rows, 8.0 * (double)cols);
    dequant_job jb = {.format = format,
                      .src = MEMRA__HOST_PTR(const uint8_t, src),
                      .row_bytes = memra_format_row_bytes(format, cols),
                      .cols = cols,
                      .dst = MEMRA__HOST_PTR(uint16_t, dst_f16),
                      .scratch = memra__host_alloc((uint64_t)cols * (uint64_t)threads, sizeof(float))};
    if (jb.scratch == NULL) return FAIL_OOM(ctx, "dequant_f16");
    memra__host_run(threads, rows, dequant_rows, &jb);
    free(jb.scratch);
    return MEMRA_STATUS_OK;
}

/* ---- dequant_kr_f16 ------------------------------------------------------------ */

typedef struct dequant_kr_job {
    memra_format format;
    const uint8_t *src;
    int64_t rows, cols;
    uint16_t *dst;
} dequant_kr_job;

/* Row r's records (g, r) widened by memra_kr_record and formed as the format's value: s q - mn (Q4_K / Q5_K;
 * s q is exact, so one rounding, the decoder's), s q (Q6_K; likewise), then f16 round to nearest even */
static void dequant_kr_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    dequant_kr_job *jb = (dequant_kr_job *)arg;
    const int q6 = jb->format == MEMRA_FORMAT_Q6_K;
    if (jb->format == MEMRA_FORMAT_Q8_0) { /* Q8_0 records: v = q d (d the f16 scale widened), dequant_f16's product */
        for (int64_t r = begin; r < end; r++)
            for (int64_t c = 0; c < jb->cols; c++) {
                const uint8_t *rec = jb->src + (uint64_t)((c / 128) * jb->rows + r) * 144u;
                float d;
                memcpy(&d, rec + 4 * ((c % 128) / 32), sizeof d);
                jb->dst[r * jb->cols + c] = memra_f16_from_f32((float)(int8_t)rec[16 + c % 128] * d);
            }
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        uint16_t *o = jb->dst + r * jb->cols;
        for (int64_t g = 0; g < jb->cols / 128; g++) {
            float sc[8];
            int8_t q[128];
            if (memra_kr_record(jb->format, jb->src, jb->rows, jb->cols, g, r, sc, q) != 0) return; /* checked before */
            for (int c = 0; c < 128; c++) {
                const int b = c / 32;
                const float v = q6 ? sc[b + 4 * ((c / 16) & 1)] * (float)q[c] : sc[b] * (float)q[c] - sc[4 + b];
                o[128 * g + c] = memra_f16_from_f32(v);
            }
        }
    }
}

memra_status memra__host_dequant_kr_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                        int64_t cols, memra_dptr dst_f16)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    const int q8 = format == MEMRA_FORMAT_Q8_0;
    if (format != MEMRA_FORMAT_Q4_K && format != MEMRA_FORMAT_Q5_K && format != MEMRA_FORMAT_Q6_K && !q8)
        return FAIL_ARG(ctx, "dequant_kr_f16: format %d is not Q4_K, Q5_K, Q6_K (K records) or Q8_0 (records)",
                        (int)format);
    if (rows < 0 || cols < 0)
        return FAIL_ARG(ctx, "dequant_kr_f16: rows = %lld and cols = %lld must be >= 0", (long long)rows,
                        (long long)cols);
    if (cols % (q8 ? 32 : MEMRA_QK_K) != 0)
        return FAIL_ARG(ctx, "dequant_kr_f16: cols = %lld is not a multiple of %d", (long long)cols,
                        q8 ? 32 : MEMRA_QK_K);
    if (rows == 0 || cols == 0) return MEMRA_STATUS_OK;
    if ((q8 ? memra_q8_0r_bytes(rows, cols) : memra_kr_bytes(format, rows, cols)) == 0 || cols > INT64_MAX / 4 / rows)
        return FAIL_ARG(ctx, "dequant_kr_f16: rows x cols overflows");
    if (src == 0 || dst_f16 == 0) return FAIL_ARG(ctx, "dequant_kr_f16: NULL source or destination");
    dequant_kr_job jb = {.format = format,
                         .src = MEMRA__HOST_PTR(const uint8_t, src),
                         .rows = rows,
                         .cols = cols,
                         .dst = MEMRA__HOST_PTR(uint16_t, dst_f16)};
    memra__host_run(memra__host_threads(ctx, rows, 8.0 * (double)cols), rows, dequant_kr_rows, &jb);
    return MEMRA_STATUS_OK;
}

/* ---- fp8_blk_to_q8_0 ------------------------------------------------------------ */

typedef struct reencode_job {
    const memra__host_ctx *ctx;
    const uint8_t *w;
    const float *grid;
    int64_t cols, grid_cols;
    uint8_t *dst;
} reencode_job;

static void reencode_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    reencode_job *jb = (reencode_job *)arg;
    const int64_t nb = jb->cols / 32;
    for (int64_t r = begin; r < end; r++) {
        const uint8_t *wr = jb->w + r * jb->cols;
        const float *g = jb->grid + (r / 128) * jb->grid_cols;
        uint8_t *o = jb->dst + (uint64_t)r * (uint64_t)nb * MEMRA_Q8_0_BYTES;
        for (int64_t b = 0; b < nb; b++) {
            float v[32];
            const float s = g[(32 * b) / 128];
            for (int l = 0; l < 32; l++) v[l] = jb->ctx->e4m3[wr[32 * b + l]] * s;
            memra_q8_0_encode(v, o + b * MEMRA_Q8_0_BYTES);
        }
    }
}

memra_status memra__host_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows,
                                         int64_t cols, memra_dptr dst_q8_0)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (rows < 0 || cols < 0)
        return FAIL_ARG(ctx, "fp8_blk_to_q8_0: rows = %lld and cols = %lld must be >= 0", (long long)rows,
                        (long long)cols);
    if (cols % 32 != 0) {
        call->decline_reason = "fp8_blk_to_q8_0: cols not a multiple of 32 (no Q8_0 layout)";
        return MEMRA_STATUS_DECLINED;
    }
    if (rows == 0 || cols == 0) return MEMRA_STATUS_OK;
    if (cols > INT64_MAX / 4 / rows) return FAIL_ARG(ctx, "fp8_blk_to_q8_0: rows x cols overflows");
    if (w == 0 || grid == 0 || dst_q8_0 == 0) return FAIL_ARG(ctx, "fp8_blk_to_q8_0: NULL weight, grid or destination");
    reencode_job jb = {.ctx = ctx,
                       .w = MEMRA__HOST_PTR(const uint8_t, w),
                       .grid = MEMRA__HOST_PTR(const float, grid),
                       .cols = cols,
                       .grid_cols = memra_fp8_grid_cols(cols),
                       .dst = MEMRA__HOST_PTR(uint8_t, dst_q8_0)};
    memra__host_run(memra__host_threads(ctx, rows, 6.0 * (double)cols), rows, reencode_rows, &jb);
    return MEMRA_STATUS_OK;
}

/* ---- repack_q8_0 ---------------------------------------------------------------- */

typedef struct repack_job {
    const uint8_t *src;
    int64_t rows, nb, ngroups;
    uint8_t *dst;
} repack_job;

static void repack_rows(void *arg, int tid, int64_t begin, int64_t end)
{
    (void)tid;
    const repack_job *jb = (const repack_job *)arg;
    for (int64_t j = begin; j < end; j++) {
        const uint8_t *row = jb->src + (uint64_t)j * (uint64_t)jb->nb * MEMRA_Q8_0_BYTES;
        for (int64_t g = 0; g < jb->ngroups; g++) {
            uint8_t *rec = jb->dst + (uint64_t)(g * jb->rows + j) * MEMRA_Q8_1_RECORD_BYTES;
            for (int q = 0; q < 4; q++) {
                const int64_t b = 4 * g + q;
                float d = 0.0f;
                if (b < jb->nb) {
                    const uint8_t *blk = row + b * MEMRA_Q8_0_BYTES;
                    d = memra_f32_from_f16((uint16_t)(blk[0] | (blk[1] << 8)));
                    memcpy(rec + 16 + 32 * q, blk + 2, 32);
                } else {
                    memset(rec + 16 + 32 * q, 0, 32);
                }
                memcpy(rec + 4 * q, &d, sizeof d);
            }
        }
    }
}

memra_status memra__host_repack_q8_0(memra_call *call, memra_dptr src_q8_0, int64_t rows, int64_t cols,
                                     memra_dptr dst)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (rows < 0 || cols < 0)
        return FAIL_ARG(ctx, "repack_q8_0: rows = %lld and cols = %lld must be >= 0", (long long)rows,
                        (long long)cols);
    if (cols % MEMRA_QK8_0 != 0)
        return FAIL_ARG(ctx, "repack_q8_0: cols = %lld is not a multiple of the Q8_0 block (32)", (long long)cols);
    if (rows == 0 || cols == 0) return MEMRA_STATUS_OK;
    const int64_t ngroups = cols / 128 + (cols % 128 != 0);
    if (ngroups > INT64_MAX / MEMRA_Q8_1_RECORD_BYTES / rows)
        return FAIL_ARG(ctx, "repack_q8_0: rows x cols overflows");
    if (src_q8_0 == 0 || dst == 0) return FAIL_ARG(ctx, "repack_q8_0: NULL source or destination");
    repack_job jb = {.src = MEMRA__HOST_PTR(const uint8_t, src_q8_0),
                     .rows = rows,
                     .nb = cols / MEMRA_QK8_0,
                     .ngroups = ngroups,
                     .dst = MEMRA__HOST_PTR(uint8_t, dst)};
    memra__host_run(memra__host_threads(ctx, rows, 2.0 * (double)cols), rows, repack_rows, &jb);
    return MEMRA_STATUS_OK;
}

/* ---- fp8_nan_count, scale ------------------------------------------------------ */

memra_status memra__host_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (nbytes < 0) return FAIL_ARG(ctx, "fp8_nan_count: nbytes = %lld must be >= 0", (long long)nbytes);
    if (out_u64 == 0 || (nbytes > 0 && w == 0)) return FAIL_ARG(ctx, "fp8_nan_count: NULL weight or output");
    const uint8_t *b = MEMRA__HOST_PTR(const uint8_t, w);
    uint64_t count = 0;
    for (int64_t i = 0; i < nbytes; i++) count += (b[i] & 0x7Fu) == 0x7Fu;
    uint64_t total;
    memcpy(&total, MEMRA__HOST_PTR(void, out_u64), sizeof total);
    total += count;
    memcpy(MEMRA__HOST_PTR(void, out_u64), &total, sizeof total);
    return MEMRA_STATUS_OK;
}

memra_status memra__host_scale(memra_call *call, memra_dptr y, int64_t n, float s)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (n < 0) return FAIL_ARG(ctx, "scale: n = %lld must be >= 0", (long long)n);
    if (n > 0 && y == 0) return FAIL_ARG(ctx, "scale: NULL y");
    float *v = MEMRA__HOST_PTR(float, y);
    for (int64_t i = 0; i < n; i++) v[i] *= s;
    return MEMRA_STATUS_OK;
}
