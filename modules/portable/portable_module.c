/* The portable module: every CUDA GPU of cc >= 8.0 that no better module
 * claims (the `cuda` profile: A100, A10, L4, L40S, RTX 30xx/40xx, B200, B300,
 * Jetson Thor, ... and any GPU forced to MEMRA_ARCH=cuda). A descriptor on
 * the GPU runtime, loaded with memra__gpu_create_portable: each kernel image
 * is the embedded SASS for the device's plain sm_<cc> (sm_80, sm_86, sm_89 in
 * the default build), else the compute_80 PTX that the driver compiles for the
 * device at load (the log line names the origin of every image).
 *   families  convert, dequant, fp8_act, fp8_weight, blas, mmq
 *   ops       cvt_f16, scale, dequant_f16, fp8_blk_to_q8_0, fp8_nan_count
 *             (load-time kernels, sm_80 features only); gemm_f16, gemm_bf16
 *             (cuBLASLt); gemm_fp8 (cuBLASLt e4m3: cc 8.9+, DECLINED below);
 *             gemm_fp8_blk (cuBLASLt block scales: cc 9.0 and 10.x, DECLINED
 *             elsewhere: the Q8_0 slab + MMQ floor serve such a weight);
 *             quant_q8_1, repack_q8_0, gemm_q8_0r, gemm_q8_0, gemm_kr (the MMQ floor,
 *             int8 mma.sync, sm_80+)
 * No programmatic dependent launches (gpu.h). Score 10 on the `cuda` profile;
 * on the sm90 / sm120 profiles 0 where the build carries that device's own
 * sm_<cc>a images (the sm90 / sm120 / mmq modules serve every op there, and
 * loading this module too would JIT its PTX at every open for lanes the
 * routing never picks), else 10 (e.g. cc 12.1 in a build without 121a). */
#include <stdio.h>
#include <string.h>

#include "kernels/kernels.h"

#define PORTABLE_NAME "portable"
#define PORTABLE_VERSION "0.1.0"

static int has_native_images(int cc)
{
    char t[16];
    snprintf(t, sizeof t, "sm_%da", cc);
    return memra__gpu_image_find("convert", t) != NULL && memra__gpu_image_find("mmq", t) != NULL;
}

static int portable_score(const memra_device_caps *caps)
{
    if (caps == NULL || caps->arch == MEMRA_ARCH_HOST || caps->cc < 80) return 0;
    if (caps->arch == MEMRA_ARCH_CUDA) return 10;
    return has_native_images(caps->cc) ? 0 : 10;
}

static memra_status portable_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    static const memra__gpu_family *const families[] = {
        &memra__gpu_family_convert,    &memra__gpu_family_dequant, &memra__gpu_family_fp8_act,
        &memra__gpu_family_fp8_weight, &memra__gpu_family_blas,    &memra__gpu_family_mmq};
    memra__gpu *gpu = NULL;
    memra_status st = memra__gpu_create_portable(host, caps, PORTABLE_NAME, families,
                                                 sizeof families / sizeof families[0], &gpu);
    if (st == MEMRA_STATUS_OK) *out_ctx = gpu;
    return st;
}

static void portable_fini(void *ctx) { memra__gpu_destroy((memra__gpu *)ctx); }

/* The MMQ family's variants, as the mmq module lists them, less "nopdl". */
static const memra_variant *portable_variants(const memra_device_caps *caps, memra_op op, size_t *out_count)
{
    return memra__mmq_variants(caps, op, 1, out_count);
}

static const memra_op_table k_portable_ops = {
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
    .quant_q8_1 = memra__mmq_quant_q8_1,
    .gemm_q8_0 = memra__mmq_gemm_q8_0,
    .repack_q8_0 = memra__mmq_repack_q8_0,
    .gemm_q8_0r = memra__mmq_gemm_q8_0r,
    .gemm_kr = memra__mmq_gemm_kr,
    .gemm_experts = memra__mmq_gemm_experts,
};

static const memra_module_desc k_portable_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = PORTABLE_NAME,
    .version = PORTABLE_VERSION,
    .score = portable_score,
    .init = portable_init,
    .fini = portable_fini,
    .ops = &k_portable_ops,
    .variants = portable_variants,
    .q8_1_sums = 1, /* quant_q8_1 (mmq.cu) writes the sum plane */
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_portable_desc; }
