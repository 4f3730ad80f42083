/* The fp8_act family (fp8_act.cu): the FP8 activation quantisers the blas
 * lanes launch (per-batch amax + quantise, the fused cooperative quantiser,
 * per-row-per-128 with VEC128 scales, the weight grid's padding). It has no op
 * of its own; its state (memra__fp8_act_state, kernels.h) is read by
 * blas_ops.c. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

/* The family's kernels, looked up by the runtime at create. */
static const memra__gpu_kernel k_kernels[] = {
    MEMRA__GPU_KERNEL(memra__fp8_act_state, amax_partial),
    MEMRA__GPU_KERNEL(memra__fp8_act_state, quant_e4m3_tensor),
    MEMRA__GPU_KERNEL(memra__fp8_act_state, quant_e4m3_fused),
    MEMRA__GPU_KERNEL(memra__fp8_act_state, quant_e4m3_row128),
    MEMRA__GPU_KERNEL(memra__fp8_act_state, grid_pad),
    MEMRA__GPU_KERNEL(memra__fp8_act_state, quant_e4m3_given),
    MEMRA__GPU_KERNEL(memra__fp8_act_state, quant_e4m3_row128_given),
};


static memra_status fp8_act_load(memra__gpu *gpu, void *state)
{
    memra__fp8_act_state *s = state;
    /* The fused FP8 quantiser needs all its blocks co-resident: at most
     * (blocks per SM at 256 threads) x SMs; a cooperative launch that is still
     * refused falls back to the two passes (blas_ops.c). */
    {
        int per_sm = 0;
        const char *q = memra__gpu_knob(gpu, "MEMRA_FP8_QUANT"); /* read once, here */
        s->fp8_quant = q && strcmp(q, "2pass") == 0       ? MEMRA__FP8Q_TWO_PASS
                       : q && strcmp(q, "nocapture") == 0 ? MEMRA__FP8Q_FUSED_NOCAPTURE
                                                          : MEMRA__FP8Q_FUSED;
        if (gpu->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, s->quant_e4m3_fused, 256, 0) ==
                MEMRA__CU_SUCCESS &&
            per_sm > 0 && gpu->caps->sm_count > 0)
            s->fused_blocks = (unsigned)per_sm * (unsigned)gpu->caps->sm_count;
        if (s->fused_blocks > 4096) s->fused_blocks = 4096; /* partials: see gemm_fp8 */
        if (s->fp8_quant == MEMRA__FP8Q_TWO_PASS) s->fused_blocks = 0;
    }
    return MEMRA_STATUS_OK;
}

const memra__gpu_family memra__gpu_family_fp8_act = {
    MEMRA__GPU_FAMILY_IMAGE("fp8_act", memra__fp8_act_state, k_kernels),
    .load = fp8_act_load, /* after the kernels: the fused quantiser's occupancy */
};
