/* The ops of the GPU modules: argument checks, scratch, kernel launches and
 * cuBLASLt calls, all enqueued on call->stream (see gpu.h for the rules). */
#include <math.h>

#include "gpu.h"
#include "memra/formats.h"

#define GPU_OF(call) ((memra__gpu *)(call)->module_ctx)

static memra_status decline(memra_call *call, const char *reason)
{
    call->decline_reason = reason;
    return MEMRA_STATUS_DECLINED;
}

static memra_status bad_arg(memra__gpu *gpu, const char *op, const char *what)
{
    return gpu->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: %s", gpu->name, op, what);
}

static memra_status scratch(memra_call *call, memra__gpu *gpu, const char *name, uint64_t bytes, memra_dptr *out)
{
    if (!MEMRA_HAS_MEMBER(gpu->host, memra_host_services, scratch_get))
        return gpu->host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the core has no named scratch", gpu->name);
    return gpu->host->scratch_get(call, name, (size_t)(bytes < 256 ? 256 : (bytes + 255) / 256 * 256), out);
}

static int aligned(memra_dptr p, unsigned a) { return (p & (memra_dptr)(a - 1)) == 0; }

#define LAUNCH(gpu, kernel, grid, block, stream, ...)                                               \
    memra__gpu_launch((gpu), (gpu)->k.kernel, #kernel, (grid), (block), (stream), (void *[]){__VA_ARGS__})

/* ---- element-wise ----------------------------------------------------------- */

/* Blocks for `units` equal pieces of work handed round-robin to the blocks of a
 * grid-stride kernel when `resident` blocks fit on the device at once: as many
 * rounds as it takes, the units spread evenly over them (so the last round is
 * not a thin tail: 10880 units on 1056 slots -> 990 blocks of 11 rounds, not
 * 1056 blocks of which 320 run an 11th). */
static unsigned grid_balanced(int64_t units, int64_t resident)
{
    if (resident < 1) resident = 1;
    if (units <= 1) return 1;
    if (units <= resident) return (unsigned)units;
    const int64_t rounds = (units + resident - 1) / resident;
    return (unsigned)((units + rounds - 1) / rounds);
}

/* Blocks for memra_k_cvt_f32_f16 (convert.cu): one chunk of 4 x 256 float4 per
 * block and round, every block resident (8 blocks of 256 threads per SM on
 * sm_90, 5 on sm_120: the kernels' __launch_bounds__). Any grid is correct. */
static unsigned cvt_grid(const memra__gpu *gpu, int64_t n)
{
    const int64_t sms = gpu->caps->sm_count > 0 ? gpu->caps->sm_count : 16;
    const int64_t per_sm = gpu->caps->cc >= 120 ? 5 : 8;
    return grid_balanced((n / 4 + 1023) / 1024, sms * per_sm);
}

memra_status memra__gpu_cvt_f16(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n)
{
    memra__gpu *gpu = GPU_OF(call);
    if (n < 0 || (n > 0 && (src_f32 == 0 || dst_f16 == 0))) return bad_arg(gpu, "cvt_f16", "null buffer or n < 0");
    if (n == 0) return MEMRA_STATUS_OK;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    st = LAUNCH(gpu, memra_k_cvt_f32_f16, cvt_grid(gpu, n), 256, call->stream, &src_f32, &dst_f16, &n);
    memra__gpu_leave(gpu);
    return st;
}

memra_status memra__gpu_scale(memra_call *call, memra_dptr y, int64_t n, float s)
{
    memra__gpu *gpu = GPU_OF(call);
    if (n < 0 || (n > 0 && y == 0)) return bad_arg(gpu, "scale", "null buffer or n < 0");
    if (n == 0) return MEMRA_STATUS_OK;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    st = LAUNCH(gpu, memra_k_scale_f32, memra__gpu_blocks(gpu, n, 1024), 256, call->stream, &y, &n, &s);
    memra__gpu_leave(gpu);
    return st;
}

/* ---- load-time ops ------------------------------------------------------------ */

/* dequant.cu: a persistent grid over tiles of `tb` blocks when src is 16-byte
 * aligned (the kernel decides by the same test), the remaining blocks (all of
 * them otherwise) one 16-byte output octet per thread, grid-stride. */
memra_status memra__gpu_dequant_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                    int64_t cols, memra_dptr dst_f16)
{
    memra__gpu *gpu = GPU_OF(call);
    CUfunction f;
    const char *name;
    int64_t qk, tb; /* values per block, blocks per tile (dq_fmt_* in dequant.cu) */
    switch (format) {
    case MEMRA_FORMAT_Q8_0: f = gpu->k.memra_k_dequant_q8_0, name = "memra_k_dequant_q8_0", qk = 32, tb = 256; break;
    case MEMRA_FORMAT_Q4_0: f = gpu->k.memra_k_dequant_q4_0, name = "memra_k_dequant_q4_0", qk = 32, tb = 256; break;
    case MEMRA_FORMAT_Q4_K: f = gpu->k.memra_k_dequant_q4_k, name = "memra_k_dequant_q4_k", qk = 256, tb = 32; break;
    case MEMRA_FORMAT_Q5_K: f = gpu->k.memra_k_dequant_q5_k, name = "memra_k_dequant_q5_k", qk = 256, tb = 32; break;
    case MEMRA_FORMAT_Q6_K: f = gpu->k.memra_k_dequant_q6_k, name = "memra_k_dequant_q6_k", qk = 256, tb = 32; break;
    default: return decline(call, "dequant_f16 takes Q8_0, Q4_0, Q4_K, Q5_K and Q6_K only");
    }
    if (rows <= 0 || cols <= 0 || src == 0 || dst_f16 == 0) return bad_arg(gpu, "dequant_f16", "empty shape or null buffer");
    if (cols % qk != 0) return bad_arg(gpu, "dequant_f16", "cols is not a multiple of the format's block");
    if (!aligned(dst_f16, 16)) return decline(call, "dequant_f16 needs a 16-byte aligned destination");
    long long nblocks = (long long)(rows * (cols / qk));
    const int64_t ntiles = aligned(src, 16) ? nblocks / tb : 0;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    unsigned grid;
    if (ntiles > 0) {
        int per_sm = 0;
        if (gpu->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 256, 0) != MEMRA__CU_SUCCESS || per_sm < 1)
            per_sm = 4;
        grid = grid_balanced(ntiles, (int64_t)(gpu->caps->sm_count > 0 ? gpu->caps->sm_count : 16) * per_sm);
    } else {
        grid = memra__gpu_blocks(gpu, nblocks * (qk / 8), 256);
    }
    st = memra__gpu_launch(gpu, f, name, grid, 256, call->stream, (void *[]){&src, &nblocks, &dst_f16});
    memra__gpu_leave(gpu);
    return st;
}

memra_status memra__gpu_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows, int64_t cols,
                                        memra_dptr dst_q8_0)
{
    memra__gpu *gpu = GPU_OF(call);
    if (rows <= 0 || cols <= 0 || w == 0 || grid == 0 || dst_q8_0 == 0)
        return bad_arg(gpu, "fp8_blk_to_q8_0", "empty shape or null buffer");
    if (cols % 32 != 0) return decline(call, "fp8_blk_to_q8_0 needs cols to be a multiple of 32");
    if (!aligned(dst_q8_0, 2)) return decline(call, "fp8_blk_to_q8_0 needs a 2-byte aligned destination");
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    long long r = rows, c = cols;
    st = LAUNCH(gpu, memra_k_fp8_blk_to_q8_0, memra__gpu_blocks(gpu, rows * (cols / 32), 8), 256, call->stream, &w,
                &grid, &r, &c, &dst_q8_0);
    memra__gpu_leave(gpu);
    return st;
}

memra_status memra__gpu_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64)
{
    memra__gpu *gpu = GPU_OF(call);
    if (nbytes < 0 || out_u64 == 0 || (nbytes > 0 && w == 0)) return bad_arg(gpu, "fp8_nan_count", "null buffer or nbytes < 0");
    if (!aligned(out_u64, 8)) return bad_arg(gpu, "fp8_nan_count", "the counter is not 8-byte aligned");
    if (nbytes == 0) return MEMRA_STATUS_OK;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    long long n = nbytes;
    st = LAUNCH(gpu, memra_k_fp8_nan_count, memra__gpu_blocks(gpu, nbytes, 256 * 16), 256, call->stream, &w, &n,
                &out_u64);
    memra__gpu_leave(gpu);
    return st;
}

/* ---- GEMM lanes ----------------------------------------------------------------- */

static memra_status gemm_check(memra__gpu *gpu, const char *op, const memra_gemm_args *a, int64_t *ldy)
{
    if (a == NULL || a->struct_size < sizeof(memra_gemm_args)) return bad_arg(gpu, op, "gemm arguments missing or too small");
    if (a->m <= 0 || a->n <= 0 || a->k <= 0) return bad_arg(gpu, op, "m, n and k must be positive");
    if (a->w == 0 || a->x == 0 || a->y == 0) return bad_arg(gpu, op, "null w, x or y");
    *ldy = a->ldy == 0 ? a->n : a->ldy;
    if (*ldy < a->n || a->y_row_offset < 0) return bad_arg(gpu, op, "ldy < n or negative row offset");
    if (!isfinite(a->alpha)) return bad_arg(gpu, op, "alpha is not finite");
    return MEMRA_STATUS_OK;
}

static memra_status workspace(memra_call *call, memra__gpu *gpu, memra__lt_gemm *g)
{
    g->workspace_size = MEMRA__GPU_WORKSPACE_BYTES;
    return scratch(call, gpu, MEMRA__GPU_SLOT_WORKSPACE, g->workspace_size, &g->workspace);
}

memra_status memra__gpu_gemm_f16(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *gpu = GPU_OF(call);
    int64_t ldy = 0;
    memra_status st = gemm_check(gpu, "gemm_f16", a, &ldy);
    if (st != MEMRA_STATUS_OK) return st;
    if (gpu->lt == NULL) return decline(call, "cuBLASLt is not available");
    memra__lt_gemm g = {.lane = MEMRA__LT_F16, .m = a->m, .n = a->n, .k = a->k, .a = a->w, .b = a->x,
                        .d = a->y + (memra_dptr)(a->y_row_offset * ldy * 4), .ldd = ldy, .alpha = a->alpha,
                        .stream = call->stream};
    if ((st = memra__gpu_enter(gpu)) != MEMRA_STATUS_OK) return st;
    if ((st = workspace(call, gpu, &g)) != MEMRA_STATUS_OK) goto out;
    if (!a->x_is_f16) {
        long long n = (long long)a->m * a->k;
        memra_dptr x = a->x;
        if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XOP, (uint64_t)n * 2, &g.b)) != MEMRA_STATUS_OK) goto out;
        st = LAUNCH(gpu, memra_k_cvt_f32_f16, cvt_grid(gpu, n), 256, call->stream, &x, &g.b, &n);
        if (st != MEMRA_STATUS_OK) goto out;
    }
    st = memra__lt_matmul(gpu->lt, call, &g);
out:
    memra__gpu_leave(gpu);
    return st;
}

/* bf16 weight x activation converted to bf16 in scratch (RNE), cuBLASLt
 * CUDA_R_16BF with f32 accumulate into y. */
memra_status memra__gpu_gemm_bf16(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *gpu = GPU_OF(call);
    int64_t ldy = 0;
    memra_status st = gemm_check(gpu, "gemm_bf16", a, &ldy);
    if (st != MEMRA_STATUS_OK) return st;
    if (a->x_is_f16) return bad_arg(gpu, "gemm_bf16", "the activation is f32 (x_is_f16 is for gemm_f16)");
    if (gpu->lt == NULL) return decline(call, "cuBLASLt is not available");
    memra__lt_gemm g = {.lane = MEMRA__LT_BF16, .m = a->m, .n = a->n, .k = a->k, .a = a->w, .b = 0,
                        .d = a->y + (memra_dptr)(a->y_row_offset * ldy * 4), .ldd = ldy, .alpha = a->alpha,
                        .stream = call->stream};
    if ((st = memra__gpu_enter(gpu)) != MEMRA_STATUS_OK) return st;
    if ((st = workspace(call, gpu, &g)) != MEMRA_STATUS_OK) goto out;
    long long n = (long long)a->m * a->k;
    memra_dptr x = a->x;
    if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XOP, (uint64_t)n * 2, &g.b)) != MEMRA_STATUS_OK) goto out;
    st = LAUNCH(gpu, memra_k_cvt_f32_bf16, memra__gpu_blocks(gpu, n, 256 * 4), 256, call->stream, &x, &g.b, &n);
    if (st != MEMRA_STATUS_OK) goto out;
    st = memra__lt_matmul(gpu->lt, call, &g);
out:
    memra__gpu_leave(gpu);
    return st;
}

/* The fused per-batch quantiser (fp8_act.cu, memra_k_quant_e4m3_fused) when
 * enabled and possible: one cooperative launch of at most gpu->fused_blocks
 * blocks (co-resident by construction; what does not fit in registers is
 * re-read by the same threads after the grid barrier). Returns DECLINED (no
 * error recorded) when the caller should run the two passes instead. */
static memra_status quant_fused(memra__gpu *gpu, memra_call *call, memra_dptr x, long long n, float w_scale,
                                memra_dptr scales, memra_dptr q)
{
    unsigned fb = __atomic_load_n(&gpu->fused_blocks, __ATOMIC_RELAXED); /* another thread may zero it */
    if (fb == 0 || n % 4 != 0 || !aligned(x, 16) || !aligned(q, 4)) return MEMRA_STATUS_DECLINED;
    if (gpu->fp8_quant == MEMRA__FP8Q_FUSED_NOCAPTURE) {
        int cs = MEMRA__CU_STREAM_CAPTURE_STATUS_NONE;
        if (gpu->cu.cuStreamIsCapturing((CUstream)call->stream, &cs) != MEMRA__CU_SUCCESS ||
            cs != MEMRA__CU_STREAM_CAPTURE_STATUS_NONE)
            return MEMRA_STATUS_DECLINED;
    }
    long long want = (n / 4 + 255) / 256; /* one float4 per thread at least */
    unsigned grid = want < (long long)fb ? (unsigned)(want < 1 ? 1 : want) : fb;
    memra_dptr partial = scales + 256;
    /* The grid barrier's word lives in this call's scratch (bytes 128..131 of
     * the scales block), zeroed in stream order: concurrent launches on other
     * streams have words of their own. */
    memra_dptr bar = scales + 128;
    CUresult rz = gpu->cu.cuMemsetD32Async(bar, 0, 1, (CUstream)call->stream);
    if (rz != MEMRA__CU_SUCCESS) return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, rz, "cuMemsetD32Async (fused barrier)");
    void *args[] = {&x, &n, &w_scale, &scales, &partial, &q, &bar};
    CUresult r = gpu->cu.cuLaunchCooperativeKernel(gpu->k.memra_k_quant_e4m3_fused, grid, 1, 1, 256, 1, 1, 0,
                                                   (CUstream)call->stream, args);
    if (r == MEMRA__CU_SUCCESS) return MEMRA_STATUS_OK;
    /* Refused (e.g. fewer SMs than the device reports under MPS): the two passes
     * from now on. Nothing was enqueued. */
    gpu->host->log(MEMRA_LOG_WARN, gpu->name, "cooperative launch of memra_k_quant_e4m3_fused (%u blocks) failed (%d): "
                   "gemm_fp8 quantises in two passes from now on", grid, (int)r);
    __atomic_store_n(&gpu->fused_blocks, 0u, __ATOMIC_RELAXED);
    return MEMRA_STATUS_DECLINED;
}

memra_status memra__gpu_gemm_fp8(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *gpu = GPU_OF(call);
    int64_t ldy = 0;
    memra_status st = gemm_check(gpu, "gemm_fp8", a, &ldy);
    if (st != MEMRA_STATUS_OK) return st;
    if (!isfinite(a->w_scale)) return bad_arg(gpu, "gemm_fp8", "w_scale is not finite");
    if (gpu->lt == NULL) return decline(call, "cuBLASLt is not available");
    if (a->k % 16 != 0) return decline(call, "FP8 GEMM needs k to be a multiple of 16");
    if (!aligned(a->w, 16)) return decline(call, "FP8 GEMM needs a 16-byte aligned weight");
    long long n = (long long)a->m * a->k;
    int n_partial = (int)memra__gpu_blocks(gpu, n, 256 * 16); /* blocks of the amax pass, one partial each */
    if (n_partial > 1024) n_partial = 1024;
    /* partials: the two-pass amax blocks or the fused kernel's blocks */
    const uint64_t fused = __atomic_load_n(&gpu->fused_blocks, __ATOMIC_RELAXED);
    const uint64_t n_slots = (uint64_t)n_partial > fused ? (uint64_t)n_partial : fused;
    memra_dptr x = a->x;
    float w_scale = a->w_scale;
    memra__lt_gemm g = {.lane = MEMRA__LT_FP8, .m = a->m, .n = a->n, .k = a->k, .a = a->w,
                        .d = a->y + (memra_dptr)(a->y_row_offset * ldy * 4), .ldd = ldy, .alpha = a->alpha,
                        .stream = call->stream};
    memra_dptr scales;
    if ((st = memra__gpu_enter(gpu)) != MEMRA_STATUS_OK) return st;
    if ((st = workspace(call, gpu, &g)) != MEMRA_STATUS_OK) goto out;
    if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XOP, (uint64_t)n, &g.b)) != MEMRA_STATUS_OK) goto out;
    /* scales[0] = sx * w_scale (read by cuBLASLt), scales[1] = sx; the partial maxima from byte 256 */
    if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XSCALE, 256 + n_slots * 4, &scales)) != MEMRA_STATUS_OK) goto out;
    st = quant_fused(gpu, call, x, n, w_scale, scales, g.b);
    if (st == MEMRA_STATUS_DECLINED) {
        memra_dptr partial = scales + 256;
        st = LAUNCH(gpu, memra_k_amax_partial, (unsigned)n_partial, 256, call->stream, &x, &n, &partial);
        if (st != MEMRA_STATUS_OK) goto out;
        st = LAUNCH(gpu, memra_k_quant_e4m3_tensor, memra__gpu_blocks(gpu, n, 1024), 256, call->stream, &x, &n,
                    &partial, &n_partial, &w_scale, &scales, &g.b);
    }
    if (st != MEMRA_STATUS_OK) goto out;
    g.b_scale = scales; /* the folded scale, read by cuBLASLt on the device (256-byte aligned) */
    st = memra__lt_matmul(gpu->lt, call, &g);
out:
    memra__gpu_leave(gpu);
    return st;
}

/* Block-128 FP8: the weight's grid as cuBLASLt's BLK128x128_32F scale of A
 * (one f32 per 128 x 128 tile, tile rows of ceil(k/128) floats padded to a
 * multiple of 4), the activation quantised per row per 128 columns with its
 * scales as VEC128_32F of B (scale of row i, k-block j at j * m_pad + i: the
 * outer dimension fastest). m is padded to a multiple of 4 so that each
 * k-block's column of scales starts 16-byte aligned, as other callers of this
 * mode do (PyTorch, and the padded ld of the weight grid that cuBLASLt
 * requires); pad rows are quantised as zeros with scale 1 and their output
 * goes to scratch and is dropped. Unverified whether cuBLASLt needs it for m. */
memra_status memra__gpu_gemm_fp8_blk(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *gpu = GPU_OF(call);
    int64_t ldy = 0;
    memra_status st = gemm_check(gpu, "gemm_fp8_blk", a, &ldy);
    if (st != MEMRA_STATUS_OK) return st;
    if (a->w_scale_grid == 0) return bad_arg(gpu, "gemm_fp8_blk", "null w_scale_grid");
    if (gpu->lt == NULL) return decline(call, "cuBLASLt is not available");
    if (memra__lt_version(gpu->lt) < MEMRA__LT_VERSION_BLOCK_SCALES)
        return decline(call, "cuBLASLt older than 12.9 has no block-scaled FP8");
    if (a->k % 16 != 0) return decline(call, "FP8 GEMM needs k to be a multiple of 16");
    if (!aligned(a->w, 16) || !aligned(a->x, 16)) return decline(call, "FP8 GEMM needs 16-byte aligned w and x");
    int m = a->m, n = a->n, k = a->k;
    int m_pad = (m + 3) & ~3;
    int kb = (k + 127) / 128, ld_grid = (kb + 3) & ~3, grid_rows = (n + 127) / 128;
    memra__lt_gemm g = {.lane = MEMRA__LT_FP8_BLK, .m = m_pad, .n = n, .k = k, .a = a->w, .a_scale = a->w_scale_grid,
                        .d = a->y + (memra_dptr)(a->y_row_offset * ldy * 4), .ldd = ldy, .alpha = a->alpha,
                        .stream = call->stream};
    if ((st = memra__gpu_enter(gpu)) != MEMRA_STATUS_OK) return st;
    if ((st = workspace(call, gpu, &g)) != MEMRA_STATUS_OK) goto out;
    if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XOP, (uint64_t)m_pad * k, &g.b)) != MEMRA_STATUS_OK) goto out;
    if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XSCALE, (uint64_t)kb * m_pad * 4, &g.b_scale)) != MEMRA_STATUS_OK) goto out;
    if (ld_grid != kb || !aligned(a->w_scale_grid, 16)) {
        memra_dptr src = a->w_scale_grid;
        if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_GRID, (uint64_t)grid_rows * ld_grid * 4, &g.a_scale)) != MEMRA_STATUS_OK)
            goto out;
        st = LAUNCH(gpu, memra_k_grid_pad, memra__gpu_blocks(gpu, (int64_t)grid_rows * ld_grid, 256), 256,
                    call->stream, &src, &grid_rows, &kb, &g.a_scale, &ld_grid);
        if (st != MEMRA_STATUS_OK) goto out;
    }
    if (m_pad != m) {
        if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_DPAD, (uint64_t)m_pad * n * 4, &g.d)) != MEMRA_STATUS_OK) goto out;
        g.ldd = n;
    }
    /* one warp per (row, k-block), 8 warps per block; not grid-stride */
    {
        const int64_t warps = (int64_t)m_pad * kb;
        memra_dptr x = a->x;
        st = LAUNCH(gpu, memra_k_quant_e4m3_row128, (unsigned)((warps + 7) / 8), 256, call->stream, &x, &m, &m_pad,
                    &k, &g.b, &g.b_scale, &m_pad);
        if (st != MEMRA_STATUS_OK) goto out;
    }
    if ((st = memra__lt_matmul(gpu->lt, call, &g)) != MEMRA_STATUS_OK) goto out;
    if (m_pad != m) {
        memra_dptr y = a->y + (memra_dptr)(a->y_row_offset * ldy * 4);
        long long ld = ldy;
        st = LAUNCH(gpu, memra_k_copy_rows_f32, memra__gpu_blocks(gpu, (int64_t)m * n, 1024), 256, call->stream, &g.d,
                    &y, &m, &n, &ld);
    }
out:
    memra__gpu_leave(gpu);
    return st;
}
