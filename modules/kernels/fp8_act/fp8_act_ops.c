/* The fp8_act family (fp8_act.cu): the FP8 activation quantisers the blas
 * lanes launch (per-batch amax + quantise, the fused cooperative quantiser,
 * per-row-per-128 with VEC128 scales, the weight grid's padding). It has no op
 * of its own; its state (memra__fp8_act_state, kernels.h) is read by
 * blas_ops.c. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

static memra_status fp8_act_load(memra__gpu *gpu, void *state)
{
    memra__fp8_act_state *s = state;
    CUmodule m = NULL;
    memra_status st = memra__gpu_image_load(gpu, "fp8_act", &m);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_amax_partial", 0, &s->amax_partial);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_quant_e4m3_tensor", 0, &s->quant_e4m3_tensor);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_quant_e4m3_fused", 0, &s->quant_e4m3_fused);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_quant_e4m3_row128", 0, &s->quant_e4m3_row128);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_grid_pad", 0, &s->grid_pad);
    if (st != MEMRA_STATUS_OK) return st;
    /* The fused FP8 quantiser needs all its blocks co-resident: at most
     * (blocks per SM at 256 threads) x SMs; a cooperative launch that is still
     * refused falls back to the two passes (blas_ops.c). */
    {
        int per_sm = 0;
        const char *q = getenv("MEMRA_FP8_QUANT");
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
    .name = "fp8_act", .state_size = sizeof(memra__fp8_act_state), .load = fp8_act_load};
