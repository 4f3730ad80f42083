/* Host reference: gemm_experts, the expert-grouped GEMM (module.h,
 * memra_gemm_experts_args).
 *
 * Defined as a loop of this module's dense ops: for each expert e in order,
 * the rows r with ids[r] == e are gathered in row order (f32 / f16 rows, or
 * their q8_1 records), the dense op `lane` runs on them with expert e's
 * operand into a temporary [m_e x n], and the rows are scattered back to
 * y[y_row_offset + r]. So every number is the dense lane's on the gathered
 * rows, bit for bit: the row-local quantisers give the same codes, and
 * gemm_fp8's per-batch scale is the amax of expert e's rows. Rows whose id is
 * outside [0, n_experts) are skipped (their output rows are not written).
 * Experts with no rows cost nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "modules/host/host_internal.h"

#define FAIL_ARG(ctx, ...) ((ctx)->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, __VA_ARGS__))
#define FAIL_OOM(ctx, what) ((ctx)->host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of host memory", what))

typedef memra_status (*dense_fn)(memra_call *call, const memra_gemm_args *args);

static dense_fn lane_fn(int32_t lane)
{
    switch (lane) {
    case MEMRA_OP_gemm_f16: return memra__host_gemm_f16;
    case MEMRA_OP_gemm_bf16: return memra__host_gemm_bf16;
    case MEMRA_OP_gemm_fp8: return memra__host_gemm_fp8;
    case MEMRA_OP_gemm_fp8_blk: return memra__host_gemm_fp8_blk;
    case MEMRA_OP_gemm_q8_0: return memra__host_gemm_q8_0;
    case MEMRA_OP_gemm_q8_0r: return memra__host_gemm_q8_0r;
    case MEMRA_OP_gemm_kr: return memra__host_gemm_kr;
    case MEMRA_OP_gemm_w16: return memra__host_gemm_w16;
    default: return NULL;
    }
}

static int lane_reads_q8_1(int32_t lane)
{
    return lane == MEMRA_OP_gemm_q8_0 || lane == MEMRA_OP_gemm_q8_0r || lane == MEMRA_OP_gemm_kr;
}

memra_status memra__host_gemm_experts(memra_call *call, const memra_gemm_args *args,
                                      const memra_gemm_experts_args *ex)
{
    memra__host_ctx *ctx = memra__host_call_ctx(call);
    if (ctx == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (args == NULL || ex == NULL) return FAIL_ARG(ctx, "gemm_experts: args is NULL");
    if (!MEMRA_HAS_MEMBER(args, memra_gemm_args, alpha) ||
        !MEMRA_HAS_MEMBER(ex, memra_gemm_experts_args, w_scales))
        return FAIL_ARG(ctx, "gemm_experts: args struct_size %u / %u too small", (unsigned)args->struct_size,
                        (unsigned)ex->struct_size);
    const dense_fn fn = lane_fn(ex->lane);
    if (fn == NULL) return FAIL_ARG(ctx, "gemm_experts: lane %d is not a dense GEMM op", (int)ex->lane);
    if (ex->n_experts < 1) return FAIL_ARG(ctx, "gemm_experts: n_experts = %d", (int)ex->n_experts);
    const int64_t m = args->m, n = args->n, k = args->k;
    if (m < 0 || n < 0 || k < 0)
        return FAIL_ARG(ctx, "gemm_experts: m = %d, n = %d, k = %d must be >= 0", (int)m, (int)n, (int)k);
    if (args->ldy < n) return FAIL_ARG(ctx, "gemm_experts: ldy = %lld is less than n = %d", (long long)args->ldy, (int)n);
    if (args->y_row_offset < 0) return FAIL_ARG(ctx, "gemm_experts: negative y_row_offset");
    if (m == 0 || n == 0) return MEMRA_STATUS_OK;
    if (ex->ids == 0 || args->w == 0 || args->x == 0 || args->y == 0)
        return FAIL_ARG(ctx, "gemm_experts: ids, w, x or y is NULL");
    if (ex->lane == MEMRA_OP_gemm_fp8_blk && args->w_scale_grid == 0)
        return FAIL_ARG(ctx, "gemm_experts: gemm_fp8_blk needs the grids' table");
    if (ex->lane == MEMRA_OP_gemm_fp8 && ex->w_scales == 0)
        return FAIL_ARG(ctx, "gemm_experts: gemm_fp8 needs the per-expert scales");

    const int32_t *ids = MEMRA__HOST_PTR(const int32_t, ex->ids);
    const memra_dptr *wt = MEMRA__HOST_PTR(const memra_dptr, args->w);
    const memra_dptr *gt = MEMRA__HOST_PTR(const memra_dptr, args->w_scale_grid);
    const float *sc = MEMRA__HOST_PTR(const float, ex->w_scales);
    const int q8 = lane_reads_q8_1(ex->lane);
    /* what one row of x is: f32 / f16 values, or nkb q8_1 records */
    const int64_t nkb = (k + 511) / 512 * 4;
    const size_t xrow = q8 ? 0 : (size_t)k * (args->x_is_f16 ? 2u : 4u);

    /* rows per expert (counting sort, stable: rows keep their order) */
    const int32_t ne = ex->n_experts;
    int64_t *start = memra__host_alloc((uint64_t)ne + 1, sizeof *start);
    int64_t *perm = memra__host_alloc((uint64_t)m, sizeof *perm);
    if (start == NULL || perm == NULL) {
        free(start), free(perm);
        return FAIL_OOM(ctx, "gemm_experts");
    }
    memset(start, 0, ((size_t)ne + 1) * sizeof *start);
    for (int64_t r = 0; r < m; r++)
        if (ids[r] >= 0 && ids[r] < ne) start[ids[r] + 1]++;
    int64_t most = 0;
    for (int32_t e = 0; e < ne; e++) {
        if (start[e + 1] > most) most = start[e + 1];
        start[e + 1] += start[e];
    }
    {
        int64_t *fill = memra__host_alloc((uint64_t)ne, sizeof *fill);
        if (fill == NULL) {
            free(start), free(perm);
            return FAIL_OOM(ctx, "gemm_experts");
        }
        memcpy(fill, start, (size_t)ne * sizeof *fill);
        for (int64_t r = 0; r < m; r++)
            if (ids[r] >= 0 && ids[r] < ne) perm[fill[ids[r]]++] = r;
        free(fill);
    }
    memra_status st = MEMRA_STATUS_OK;
    if (most == 0) goto done;
    const uint64_t xbytes = q8 ? memra_q8_1_bytes(most, k) : (uint64_t)most * xrow;
    uint8_t *xg = memra__host_alloc(xbytes, 1);
    float *yg = memra__host_alloc((uint64_t)most * (uint64_t)n, sizeof(float));
    if (xg == NULL || yg == NULL) {
        free(xg), free(yg);
        st = FAIL_OOM(ctx, "gemm_experts");
        goto done;
    }
    const uint8_t *x = MEMRA__HOST_PTR(const uint8_t, args->x);
    float *y = MEMRA__HOST_PTR(float, args->y);
    for (int32_t e = 0; e < ne && st == MEMRA_STATUS_OK; e++) {
        const int64_t me = start[e + 1] - start[e];
        if (me == 0) continue;
        const int64_t *rows = perm + start[e];
        if (q8) {
            for (int64_t kb = 0; kb < nkb; kb++)
                for (int64_t i = 0; i < me; i++)
                    memcpy(xg + (uint64_t)(kb * me + i) * MEMRA_Q8_1_RECORD_BYTES,
                           x + (uint64_t)(kb * m + rows[i]) * MEMRA_Q8_1_RECORD_BYTES, MEMRA_Q8_1_RECORD_BYTES);
        } else {
            for (int64_t i = 0; i < me; i++) memcpy(xg + (size_t)i * xrow, x + (size_t)rows[i] * xrow, xrow);
        }
        memra_gemm_args g = *args;
        g.struct_size = sizeof g;
        g.m = (int32_t)me;
        g.w = wt[e];
        g.w_scale_grid = ex->lane == MEMRA_OP_gemm_fp8_blk ? gt[e] : 0;
        g.w_scale = ex->lane == MEMRA_OP_gemm_fp8 ? sc[e] : args->w_scale;
        g.x = (memra_dptr)(uintptr_t)xg;
        g.y = (memra_dptr)(uintptr_t)yg;
        g.ldy = n;
        g.y_row_offset = 0;
        if (!MEMRA_HAS_MEMBER(args, memra_gemm_args, w_format)) g.w_format = 0;
        /* a producer's maxima are laid out for the whole batch's rows, not this expert's gathered ones:
         * each expert's dense call takes its own amax pass (a static x_scale, per tensor, still applies) */
        g.x_amax = 0;
        if (!MEMRA_HAS_MEMBER(args, memra_gemm_args, x_scale)) g.x_scale = 0.0f;
        st = fn(call, &g);
        for (int64_t i = 0; i < me && st == MEMRA_STATUS_OK; i++)
            memcpy(y + (args->y_row_offset + rows[i]) * args->ldy, yg + i * n, (size_t)n * sizeof(float));
    }
    free(xg);
    free(yg);
done:
    free(start);
    free(perm);
    return st;
}
