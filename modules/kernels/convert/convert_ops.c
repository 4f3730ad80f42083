/* The convert family (convert.cu): f32 -> f16, f32 -> bf16, in-place scale, row copy.
 * Ops cvt_f16 and scale; memra__convert_grid for the blas lanes' convert. */
#include "convert.h"
#include "convert_ops.h"

#define GPU_OF(call) ((memra__gpu *)(call)->module_ctx)
#define CV(gpu) ((const memra__convert_state *)memra__gpu_state((gpu), &memra__gpu_family_convert))

/* The family's kernels, looked up by the runtime at create. */
static const memra__gpu_kernel k_kernels[] = {
    MEMRA__GPU_KERNEL(memra__convert_state, cvt_f32_f16),
    MEMRA__GPU_KERNEL(memra__convert_state, cvt_f32_bf16),
    MEMRA__GPU_KERNEL(memra__convert_state, scale_f32),
    MEMRA__GPU_KERNEL(memra__convert_state, copy_rows_f32),
};

const memra__gpu_family memra__gpu_family_convert = {MEMRA__GPU_FAMILY_IMAGE("convert", memra__convert_state, k_kernels)};

/* Blocks for memra_k_cvt_f32_f16 (convert.cu): one chunk of CVT_U x 256 float4
 * per block and round, every block resident (CVT_MIN_BLOCKS_OF: 8 blocks of 256
 * threads per SM on sm_90, 5 on sm_120, the kernel's __launch_bounds__). Any
 * grid is correct. */
unsigned memra__convert_grid(const memra__gpu *gpu, int64_t n)
{
    const int64_t sms = gpu->caps->sm_count > 0 ? gpu->caps->sm_count : 16;
    const int64_t per_sm = CVT_MIN_BLOCKS_OF(gpu->caps->cc);
    return memra__gpu_grid_balanced((n / 4 + CVT_U * 256 - 1) / (CVT_U * 256), sms * per_sm);
}

memra_status memra__gpu_cvt_f16(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n)
{
    memra__gpu *gpu = GPU_OF(call);
    if (n < 0 || (n > 0 && (src_f32 == 0 || dst_f16 == 0))) return memra__gpu_bad_arg(gpu, "cvt_f16", "null buffer or n < 0");
    if (n == 0) return MEMRA_STATUS_OK;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    st = MEMRA__GPU_LAUNCH(gpu, CV(gpu), cvt_f32_f16, memra__convert_grid(gpu, n), 256, call->stream, &src_f32, &dst_f16, &n);
    memra__gpu_leave(gpu);
    return st;
}

memra_status memra__gpu_scale(memra_call *call, memra_dptr y, int64_t n, float s)
{
    memra__gpu *gpu = GPU_OF(call);
    if (n < 0 || (n > 0 && y == 0)) return memra__gpu_bad_arg(gpu, "scale", "null buffer or n < 0");
    if (n == 0) return MEMRA_STATUS_OK;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    st = MEMRA__GPU_LAUNCH(gpu, CV(gpu), scale_f32, memra__gpu_blocks(gpu, n, 1024), 256, call->stream, &y, &n, &s);
    memra__gpu_leave(gpu);
    return st;
}

