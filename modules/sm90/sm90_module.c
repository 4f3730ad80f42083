/* The sm90 module: Hopper (cc 9.0, H100/H200). A descriptor: its score, the
 * kernel families it serves (modules/kernels) and its op table.
 *   families  convert, dequant, fp8_act, fp8_weight, blas
 *   ops       gemm_f16, gemm_bf16, gemm_fp8, gemm_fp8_blk (cuBLASLt: block
 *             scales exist on sm_90 only); cvt_f16, scale, dequant_f16,
 *             fp8_blk_to_q8_0, fp8_nan_count (the load-time kernels)
 * The kernels are compiled ahead of time for sm_90a (and sm_120a, so one build
 * carries both) and embedded; init loads the sm_90a images, so a build without
 * them is refused at start-up. */
#include "kernels/kernels.h"

#define SM90_NAME "sm90"
#define SM90_VERSION "0.1.0"

static int sm90_score(const memra_device_caps *caps)
{
    if (caps == NULL) return 0;
    return caps->arch == MEMRA_ARCH_SM90 && caps->cc == 90 ? 100 : 0;
}

static memra_status sm90_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    static const memra__gpu_family *const families[] = {&memra__gpu_family_convert, &memra__gpu_family_dequant,
                                                        &memra__gpu_family_fp8_act, &memra__gpu_family_fp8_weight,
                                                        &memra__gpu_family_blas};
    memra__gpu *gpu = NULL;
    memra_status st = memra__gpu_create(host, caps, SM90_NAME, families, sizeof families / sizeof families[0], &gpu);
    if (st == MEMRA_STATUS_OK) *out_ctx = gpu;
    return st;
}

static void sm90_fini(void *ctx) { memra__gpu_destroy((memra__gpu *)ctx); }

static const memra_op_table k_sm90_ops = {
    .struct_size = sizeof(memra_op_table),
    .cvt_f16 = memra__gpu_cvt_f16,
    .gemm_f16 = memra__gpu_gemm_f16,
    .gemm_fp8 = memra__gpu_gemm_fp8,
    .gemm_fp8_blk = memra__gpu_gemm_fp8_blk,
    .dequant_f16 = memra__gpu_dequant_f16,
    .dequant_kr_f16 = memra__gpu_dequant_kr_f16,
    .fp8_blk_to_q8_0 = memra__gpu_fp8_blk_to_q8_0,
    .fp8_nan_count = memra__gpu_fp8_nan_count,
    .scale = memra__gpu_scale,
    .gemm_bf16 = memra__gpu_gemm_bf16,
};

static const memra_module_desc k_sm90_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = SM90_NAME,
    .version = SM90_VERSION,
    .score = sm90_score,
    .init = sm90_init,
    .fini = sm90_fini,
    .ops = &k_sm90_ops,
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_sm90_desc; }
