/* The fp8_weight family (fp8_weight.cu): the load-time passes over an e4m3
 * weight. Ops fp8_blk_to_q8_0 (bit-identical to the host re-encode) and
 * fp8_nan_count. */
#include "kernels/kernels.h"

#define GPU_OF(call) ((memra__gpu *)(call)->module_ctx)

typedef struct memra__fp8_weight_state {
    CUfunction fp8_blk_to_q8_0, fp8_nan_count;
} memra__fp8_weight_state;

#define FW(gpu) ((const memra__fp8_weight_state *)memra__gpu_state((gpu), &memra__gpu_family_fp8_weight))

/* The family's kernels, looked up by the runtime at create. */
static const memra__gpu_kernel k_kernels[] = {
    MEMRA__GPU_KERNEL(memra__fp8_weight_state, fp8_blk_to_q8_0),
    MEMRA__GPU_KERNEL(memra__fp8_weight_state, fp8_nan_count),
};

const memra__gpu_family memra__gpu_family_fp8_weight = {MEMRA__GPU_FAMILY_IMAGE("fp8_weight", memra__fp8_weight_state, k_kernels)};

memra_status memra__gpu_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows, int64_t cols,
                                        memra_dptr dst_q8_0)
{
    memra__gpu *gpu = GPU_OF(call);
    if (rows <= 0 || cols <= 0 || w == 0 || grid == 0 || dst_q8_0 == 0)
        return memra__gpu_bad_arg(gpu, "fp8_blk_to_q8_0", "empty shape or null buffer");
    if (cols % 32 != 0) return memra__gpu_decline(call, "fp8_blk_to_q8_0 needs cols to be a multiple of 32");
    if (!memra__gpu_aligned(dst_q8_0, 2)) return memra__gpu_decline(call, "fp8_blk_to_q8_0 needs a 2-byte aligned destination");
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    long long r = rows, c = cols;
    st = MEMRA__GPU_LAUNCH(gpu, FW(gpu), fp8_blk_to_q8_0, memra__gpu_blocks(gpu, rows * (cols / 32), 8), 256, call->stream, &w,
                &grid, &r, &c, &dst_q8_0);
    memra__gpu_leave(gpu);
    return st;
}

memra_status memra__gpu_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64)
{
    memra__gpu *gpu = GPU_OF(call);
    if (nbytes < 0 || out_u64 == 0 || (nbytes > 0 && w == 0)) return memra__gpu_bad_arg(gpu, "fp8_nan_count", "null buffer or nbytes < 0");
    if (!memra__gpu_aligned(out_u64, 8)) return memra__gpu_bad_arg(gpu, "fp8_nan_count", "the counter is not 8-byte aligned");
    if (nbytes == 0) return MEMRA_STATUS_OK;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    long long n = nbytes;
    st = MEMRA__GPU_LAUNCH(gpu, FW(gpu), fp8_nan_count, memra__gpu_blocks(gpu, nbytes, 256 * 16), 256, call->stream, &w, &n,
                &out_u64);
    memra__gpu_leave(gpu);
    return st;
}

