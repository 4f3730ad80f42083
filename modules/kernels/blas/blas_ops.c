/* The blas lanes: gemm_f16, gemm_fp8 and gemm_fp8_blk on cuBLASLt (the
 * runtime's lt.c), with the activation converted (convert family) or
 * quantised (fp8_act family) in-stream: argument checks, scratch, launches
 * and cuBLASLt calls, all enqueued on call->stream (see gpu.h for the rules).
 * The family loads no image: its load opens cuBLASLt, after convert and
 * fp8_act (which a module lists before it). */
#include <math.h>

#include "kernels/convert/convert_ops.h"
#include "memra/formats.h"

#define GPU_OF(call) ((memra__gpu *)(call)->module_ctx)
#define CV(gpu) ((const memra__convert_state *)memra__gpu_state((gpu), &memra__gpu_family_convert))
#define FA(gpu) ((memra__fp8_act_state *)memra__gpu_state((gpu), &memra__gpu_family_fp8_act))
#define LAUNCH MEMRA__GPU_LAUNCH

static memra_status blas_load(memra__gpu *gpu, void *state)
{
    (void)state;
    const memra__fp8_act_state *fa = FA(gpu);
    if (CV(gpu) == NULL || fa == NULL)
        return gpu->host->set_error(MEMRA_STATUS_MODULE_ERROR,
                                    "%s: the blas family needs the convert and fp8_act families listed before it",
                                    gpu->name);
    memra_status st = memra__gpu_lt_open(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    gpu->host->log(MEMRA_LOG_INFO, gpu->name,
                   "%s: %d kernel images for %s loaded (%s); %s; fp8 per-batch quantiser: %s (%u blocks)",
                   gpu->caps->name ? gpu->caps->name : "device", gpu->n_images, gpu->target,
                   gpu->owns_modules ? "driver" : "image loader", gpu->lt_why,
                   fa->fused_blocks == 0 ? "2pass"
                   : fa->fp8_quant == MEMRA__FP8Q_FUSED_NOCAPTURE ? "fused, 2pass while capturing"
                                                                  : "fused",
                   fa->fused_blocks);
    return MEMRA_STATUS_OK;
}

const memra__gpu_family memra__gpu_family_blas = {.name = "blas", .state_size = 0, .load = blas_load};

/* Short names for the runtime's helpers (gpu.h). */
static memra_status decline(memra_call *call, const char *reason) { return memra__gpu_decline(call, reason); }
static int aligned(memra_dptr p, unsigned a) { return memra__gpu_aligned(p, a); }
static memra_status bad_arg(memra__gpu *gpu, const char *op, const char *what) { return memra__gpu_bad_arg(gpu, op, what); }

static memra_status scratch(memra_call *call, memra__gpu *gpu, const char *name, uint64_t bytes, memra_dptr *out)
{
    if (!MEMRA_HAS_MEMBER(gpu->host, memra_host_services, scratch_get))
        return gpu->host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the core has no named scratch", gpu->name);
    return gpu->host->scratch_get(call, name, (size_t)(bytes < 256 ? 256 : (bytes + 255) / 256 * 256), out);
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

/* The two 16-bit lanes: the activation converted in scratch (RNE) unless it
 * comes pre-converted (gemm_f16's x_is_f16), then cuBLASLt with f32
 * accumulation into y. */
static memra_status gemm_16bit(memra_call *call, const memra_gemm_args *a, int bf16)
{
    memra__gpu *gpu = GPU_OF(call);
    const char *op = bf16 ? "gemm_bf16" : "gemm_f16";
    int64_t ldy = 0;
    memra_status st = gemm_check(gpu, op, a, &ldy);
    if (st != MEMRA_STATUS_OK) return st;
    if (bf16 && a->x_is_f16) return bad_arg(gpu, op, "the activation is f32 (x_is_f16 is for gemm_f16)");
    if (gpu->lt == NULL) return decline(call, "cuBLASLt is not available");
    memra__lt_gemm g = {.lane = bf16 ? MEMRA__LT_BF16 : MEMRA__LT_F16, .m = a->m, .n = a->n, .k = a->k, .a = a->w,
                        .b = a->x, .d = a->y + (memra_dptr)(a->y_row_offset * ldy * 4), .ldd = ldy,
                        .alpha = a->alpha, .stream = call->stream};
    if ((st = memra__gpu_enter(gpu)) != MEMRA_STATUS_OK) return st;
    if ((st = workspace(call, gpu, &g)) != MEMRA_STATUS_OK) goto out;
    if (!a->x_is_f16) {
        long long n = (long long)a->m * a->k;
        memra_dptr x = a->x;
        if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_XOP, (uint64_t)n * 2, &g.b)) != MEMRA_STATUS_OK) goto out;
        if (bf16)
            st = LAUNCH(gpu, CV(gpu), cvt_f32_bf16, memra__gpu_blocks(gpu, n, 256 * 4), 256, call->stream, &x, &g.b, &n);
        else
            st = LAUNCH(gpu, CV(gpu), cvt_f32_f16, memra__convert_grid(gpu, n), 256, call->stream, &x, &g.b, &n);
        if (st != MEMRA_STATUS_OK) goto out;
    }
    st = memra__lt_matmul(gpu->lt, call, &g);
out:
    memra__gpu_leave(gpu);
    return st;
}

memra_status memra__gpu_gemm_f16(memra_call *call, const memra_gemm_args *a) { return gemm_16bit(call, a, 0); }

/* bf16 weight x activation converted to bf16 in scratch (RNE), cuBLASLt
 * CUDA_R_16BF with f32 accumulate into y. */
memra_status memra__gpu_gemm_bf16(memra_call *call, const memra_gemm_args *a) { return gemm_16bit(call, a, 1); }

/* The fused per-batch quantiser (fp8_act.cu, memra_k_quant_e4m3_fused) when
 * enabled and possible: one cooperative launch of at most fused_blocks
 * blocks (co-resident by construction; what does not fit in registers is
 * re-read by the same threads after the grid barrier). Returns DECLINED (no
 * error recorded) when the caller should run the two passes instead. */
static memra_status quant_fused(memra__gpu *gpu, memra_call *call, memra_dptr x, long long n, float w_scale,
                                memra_dptr scales, memra_dptr q)
{
    memra__fp8_act_state *fa = FA(gpu);
    unsigned fb = __atomic_load_n(&fa->fused_blocks, __ATOMIC_RELAXED); /* another thread may zero it */
    if (fb == 0 || n % 4 != 0 || !aligned(x, 16) || !aligned(q, 4)) return MEMRA_STATUS_DECLINED;
    if (fa->fp8_quant == MEMRA__FP8Q_FUSED_NOCAPTURE) {
        int cs = MEMRA__CU_STREAM_CAPTURE_STATUS_NONE;
        if (gpu->cu.cuStreamIsCapturing((CUstream)call->stream, &cs) != MEMRA__CU_SUCCESS ||
            cs != MEMRA__CU_STREAM_CAPTURE_STATUS_NONE)
            return MEMRA_STATUS_DECLINED;
    }
    long long want = (n / 4 + 255) / 256; /* one float4 per thread at least */
    unsigned grid = want < (long long)fb ? (unsigned)(want < 1 ? 1 : want) : fb;
    memra_dptr partial = scales + 256;
    /* The grid barrier's word: a scratch block of its own (one per stream's
     * arena, so concurrent launches on other streams have words of their own),
     * zero-filled by the core when the block is new and then kept by the
     * kernel itself (each launch leaves the word as the next needs it, see
     * fp8_act.cu), so no memset runs per call. A core without
     * scratch_get_zeroed: the word in bytes 128..131 of the scales block,
     * zeroed in stream order before each launch. */
    memra_dptr bar = 0;
    if (MEMRA_HAS_MEMBER(gpu->host, memra_host_services, scratch_get_zeroed)) {
        memra_status sb = gpu->host->scratch_get_zeroed(call, MEMRA__GPU_SLOT_FP8BAR, 256, &bar);
        /* none in a capture whose arena lacks it (NOT_SUPPORTED): the two passes,
         * which need no block of their own, serve the call */
        if (sb == MEMRA_STATUS_NOT_SUPPORTED) return MEMRA_STATUS_DECLINED;
        if (sb != MEMRA_STATUS_OK) return sb;
    } else {
        bar = scales + 128;
        CUresult rz = gpu->cu.cuMemsetD32Async(bar, 0, 1, (CUstream)call->stream);
        if (rz != MEMRA__CU_SUCCESS)
            return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, rz, "cuMemsetD32Async (fused barrier)");
    }
    void *args[] = {&x, &n, &w_scale, &scales, &partial, &q, &bar};
    CUresult r = gpu->cu.cuLaunchCooperativeKernel(fa->quant_e4m3_fused, grid, 1, 1, 256, 1, 1, 0,
                                                   (CUstream)call->stream, args);
    if (r == MEMRA__CU_SUCCESS) return MEMRA_STATUS_OK;
    /* Refused (e.g. fewer SMs than the device reports under MPS): the two passes
     * from now on. Nothing was enqueued. */
    gpu->host->log(MEMRA_LOG_WARN, gpu->name, "cooperative launch of memra_k_quant_e4m3_fused (%u blocks) failed (%d): "
                   "gemm_fp8 quantises in two passes from now on", grid, (int)r);
    __atomic_store_n(&fa->fused_blocks, 0u, __ATOMIC_RELAXED);
    return MEMRA_STATUS_DECLINED;
}

/* The given activation scale of an FP8 lane (memra_gemm_args.x_amax, then
 * x_scale; module.h): 1 when the one-pass quantiser serves, 0 for the own
 * amax pass, -1 after an error for a bad x_scale or x_amax. */
static int given_scale(memra__gpu *gpu, const char *op, const memra_gemm_args *a)
{
    if (!MEMRA_HAS_MEMBER(a, memra_gemm_args, x_amax)) return 0;
    if (!isfinite(a->x_scale) || a->x_scale < 0.0f) {
        bad_arg(gpu, op, "x_scale is negative or not finite");
        return -1;
    }
    if (a->x_amax != 0 && !aligned(a->x_amax, 4)) {
        bad_arg(gpu, op, "x_amax is not 4-byte aligned");
        return -1;
    }
    return a->x_amax != 0 || a->x_scale > 0.0f;
}

memra_status memra__gpu_gemm_fp8(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *gpu = GPU_OF(call);
    int64_t ldy = 0;
    memra_status st = gemm_check(gpu, "gemm_fp8", a, &ldy);
    if (st != MEMRA_STATUS_OK) return st;
    if (!isfinite(a->w_scale)) return bad_arg(gpu, "gemm_fp8", "w_scale is not finite");
    const int given = given_scale(gpu, "gemm_fp8", a);
    if (given < 0) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (gpu->caps->cc < 89) return decline(call, "FP8 GEMM needs cc 8.9+ (cuBLASLt has no e4m3 GEMM below)");
    if (gpu->lt == NULL) return decline(call, "cuBLASLt is not available");
    if (a->k % 16 != 0) return decline(call, "FP8 GEMM needs k to be a multiple of 16");
    if (!aligned(a->w, 16)) return decline(call, "FP8 GEMM needs a 16-byte aligned weight");
    long long n = (long long)a->m * a->k;
    int n_partial = (int)memra__gpu_blocks(gpu, n, 256 * 16); /* blocks of the amax pass, one partial each */
    if (n_partial > 1024) n_partial = 1024;
    /* partials: the two-pass amax blocks or the fused kernel's blocks */
    const uint64_t fused = __atomic_load_n(&FA(gpu)->fused_blocks, __ATOMIC_RELAXED);
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
    if (given) {
        /* one pass at the producer's amax or the static scale: no reduction, no barrier */
        memra_dptr amax = a->x_amax;
        float xs = a->x_scale;
        st = LAUNCH(gpu, FA(gpu), quant_e4m3_given, memra__gpu_blocks(gpu, n, 1024), 256, call->stream, &x, &n, &amax,
                    &xs, &w_scale, &scales, &g.b);
    } else {
        st = quant_fused(gpu, call, x, n, w_scale, scales, g.b);
    }
    if (st == MEMRA_STATUS_DECLINED) {
        memra_dptr partial = scales + 256;
        st = LAUNCH(gpu, FA(gpu), amax_partial, (unsigned)n_partial, 256, call->stream, &x, &n, &partial);
        if (st != MEMRA_STATUS_OK) goto out;
        st = LAUNCH(gpu, FA(gpu), quant_e4m3_tensor, memra__gpu_blocks(gpu, n, 1024), 256, call->stream, &x, &n,
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
    const int given = given_scale(gpu, "gemm_fp8_blk", a);
    if (given < 0) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (gpu->caps->cc != 90 && gpu->caps->cc / 10 != 10)
        return decline(call, "block-scaled FP8 GEMM: cuBLASLt has it on cc 9.0 and 10.x only (the slab + MMQ floor serve it)");
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
        st = LAUNCH(gpu, FA(gpu), grid_pad, memra__gpu_blocks(gpu, (int64_t)grid_rows * ld_grid, 256), 256,
                    call->stream, &src, &grid_rows, &kb, &g.a_scale, &ld_grid);
        if (st != MEMRA_STATUS_OK) goto out;
    }
    if (m_pad != m) {
        if ((st = scratch(call, gpu, MEMRA__GPU_SLOT_DPAD, (uint64_t)m_pad * n * 4, &g.d)) != MEMRA_STATUS_OK) goto out;
        g.ldd = n;
    }
    /* one warp per MEMRA_ROW128_U (row, k-block) items, 8 warps per block; not grid-stride */
    {
        const int64_t warps = ((int64_t)m_pad * kb + MEMRA_ROW128_U - 1) / MEMRA_ROW128_U;
        memra_dptr x = a->x, amax = a->x_amax;
        float xs = a->x_scale;
        if (given) /* the producer's maxima [kb x m] or the static scale, one pass */
            st = LAUNCH(gpu, FA(gpu), quant_e4m3_row128_given, (unsigned)((warps + 7) / 8), 256, call->stream, &x, &m,
                        &m_pad, &k, &g.b, &g.b_scale, &m_pad, &amax, &xs);
        else
            st = LAUNCH(gpu, FA(gpu), quant_e4m3_row128, (unsigned)((warps + 7) / 8), 256, call->stream, &x, &m,
                        &m_pad, &k, &g.b, &g.b_scale, &m_pad);
        if (st != MEMRA_STATUS_OK) goto out;
    }
    if ((st = memra__lt_matmul(gpu->lt, call, &g)) != MEMRA_STATUS_OK) goto out;
    if (m_pad != m) {
        memra_dptr y = a->y + (memra_dptr)(a->y_row_offset * ldy * 4);
        long long ld = ldy;
        st = LAUNCH(gpu, CV(gpu), copy_rows_f32, memra__gpu_blocks(gpu, (int64_t)m * n, 1024), 256, call->stream, &g.d,
                    &y, &m, &n, &ld);
    }
out:
    memra__gpu_leave(gpu);
    return st;
}
