/* The kernel families as the module descriptors see them: one
 * memra__gpu_family per family (modules/kernels/<family>/), to list in
 * memra__gpu_create, and the ops each family serves (memra_op_table
 * signatures; call->module_ctx is the module's memra__gpu).
 *
 *   family        image(s)              ops
 *   convert       convert               cvt_f16, scale
 *   dequant       dequant               dequant_f16, dequant_kr_f16
 *   fp8_act       fp8_act               (the FP8 activation quantisers of the blas lanes)
 *   fp8_weight    fp8_weight            fp8_blk_to_q8_0, fp8_nan_count
 *   blas          (cuBLASLt; needs convert and fp8_act listed before it)
 *                                       gemm_f16, gemm_bf16, gemm_fp8, gemm_fp8_blk
 *   mmq           mmq                   quant_q8_1, repack_q8_0, gemm_q8_0r, gemm_q8_0, gemm_kr, accprobe
 *   w16           w16 (sm_90a only)     gemm_w16 (the fused-dequant f16 tile on the W16 operand; module w16)
 *   fp8blk        fp8blk | fp8blk_mx    gemm_fp8_blk (JIT first, embedded cubin as fall-back),
 *                                       gemm_experts (lane gemm_fp8_blk, sm_90a)
 *
 * fp8blk comes in three descriptors: memra__gpu_family_fp8blk (e4m3 mma.sync
 * on cc < 10.0, kind::f8f6f4 above), memra__gpu_family_fp8blk_mx
 * (kind::mxf8f6f4 at unit scales), and memra__gpu_family_fp8blk_off_sm120,
 * which loads nothing and makes gemm_fp8_blk decline (a forced sm120 profile
 * on another GPU). */
#ifndef MEMRA_MODULES_KERNELS_KERNELS_H
#define MEMRA_MODULES_KERNELS_KERNELS_H

#include "gpu/gpu.h"
#include "kernels/fp8blk/fp8blk_jit.h"

/* Items (row, 128-column block) per warp of the per-row-per-128 quantisers
 * (memra_row128_quant, common/e4m3.cuh, which defines the same number): their
 * launchers size the grid by it, one warp per MEMRA_ROW128_U items, no grid stride. */
#define MEMRA_ROW128_U 4

extern const memra__gpu_family memra__gpu_family_convert;
extern const memra__gpu_family memra__gpu_family_dequant;
extern const memra__gpu_family memra__gpu_family_fp8_act;
extern const memra__gpu_family memra__gpu_family_fp8_weight;
extern const memra__gpu_family memra__gpu_family_blas;
extern const memra__gpu_family memra__gpu_family_mmq;
extern const memra__gpu_family memra__gpu_family_w16;
extern const memra__gpu_family memra__gpu_family_fp8blk;
extern const memra__gpu_family memra__gpu_family_fp8blk_mx;
extern const memra__gpu_family memra__gpu_family_fp8blk_off_sm120;
/* fp8blk's default kernels plus its tile variants (JIT only): the fp8blk module's family. */
extern const memra__gpu_family memra__gpu_family_fp8blk_tiles;

/* ---- state the blas lanes read from the families they build on ---- */

typedef struct memra__convert_state {
    CUfunction cvt_f32_f16, cvt_f32_bf16, scale_f32, copy_rows_f32;
} memra__convert_state;

typedef struct memra__fp8_act_state {
    CUfunction amax_partial, quant_e4m3_tensor, quant_e4m3_fused, quant_e4m3_row128, grid_pad;
    CUfunction quant_e4m3_given, quant_e4m3_row128_given; /* one pass at a given scale (x_amax / x_scale) */
    /* gemm_fp8's per-batch quantiser (MEMRA_FP8_QUANT, read at load):
     * FUSED one cooperative launch of memra_k_quant_e4m3_fused (default),
     * FUSED_NOCAPTURE the same except while the stream is capturing a graph,
     * TWO_PASS memra_k_amax_partial + memra_k_quant_e4m3_tensor. */
    enum { MEMRA__FP8Q_FUSED, MEMRA__FP8Q_FUSED_NOCAPTURE, MEMRA__FP8Q_TWO_PASS } fp8_quant;
    unsigned fused_blocks; /* co-resident blocks of 256 for the fused quantiser; 0: two passes only */
} memra__fp8_act_state;

/* ---- ops ---- */
memra_status memra__gpu_cvt_f16(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n);
memra_status memra__gpu_scale(memra_call *call, memra_dptr y, int64_t n, float s);
memra_status memra__gpu_dequant_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                    int64_t cols, memra_dptr dst_f16);
memra_status memra__gpu_dequant_kr_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                       int64_t cols, memra_dptr dst_f16);
memra_status memra__gpu_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows, int64_t cols,
                                        memra_dptr dst_q8_0);
memra_status memra__gpu_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64);
memra_status memra__gpu_gemm_f16(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_bf16(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_fp8(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_fp8_blk(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_w16(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_w16_experts(memra_call *call, const memra_gemm_args *args, const memra_gemm_experts_args *ex);

memra_status memra__mmq_quant_q8_1(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst);
memra_status memra__mmq_gemm_q8_0(memra_call *call, const memra_gemm_args *args);
memra_status memra__mmq_repack_q8_0(memra_call *call, memra_dptr src, int64_t rows, int64_t cols, memra_dptr dst);
memra_status memra__mmq_gemm_q8_0r(memra_call *call, const memra_gemm_args *args);
memra_status memra__mmq_gemm_kr(memra_call *call, const memra_gemm_args *args);
memra_status memra__mmq_accprobe(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *args);
memra_status memra__mmq_gemm_experts(memra_call *call, const memra_gemm_args *args,
                                     const memra_gemm_experts_args *experts);
memra_status memra__mmq_gemm_fp8_blk(memra_call *call, const memra_gemm_args *args);
/* gemm_fp8_blk on the kernels of one loaded block-128 family (DECLINED when
 * the context has not loaded it). */
/* gemm_fp8_blk of memra__gpu_family_fp8blk_tiles: memra_call.variant picks a
 * tile of memra__fp8blk_tile_variants (DECLINED with the reason when the JIT
 * could not build it), -1 the default kernels. */
memra_status memra__mmq_gemm_fp8_blk_tiles(memra_call *call, const memra_gemm_args *args);
memra_status memra__mmq_gemm_fp8_blk_of(memra_call *call, const memra_gemm_args *args, const memra__gpu_family *family);
/* gemm_experts with lane gemm_fp8_blk on the block-128 family's grouped
 * warpgroup tile (fp8blk_ops.c; cc 9.0 only: DECLINED elsewhere, and for
 * every other lane). */
memra_status memra__fp8blk_gemm_experts(memra_call *call, const memra_gemm_args *args,
                                        const memra_gemm_experts_args *experts);
/* The MMQ family's variants (memra_module_desc.variants) for gemm_q8_0 and
 * gemm_q8_0r on caps (portable: a module made by memra__gpu_create_portable,
 * which never launches dependents: no "nopdl"); NULL / 0 for other ops.
 * Static storage; thread-safe. */
const memra_variant *memra__mmq_variants(const memra_device_caps *caps, memra_op op, int portable, size_t *out_count);

#endif
