/* The mmq module: the MMQ floor (quant_q8_1, repack_q8_0 + gemm_q8_0r on
 * Q8_0 records, gemm_q8_0 on Q8_0 blocks, gemm_kr on the K records of Q4_K /
 * Q5_K / Q6_K weights; int8 tensor cores) and the
 * accumulator probe, on any CUDA device with cc >= 8.0 for
 * which the module carries a kernel image (sm_90a and sm_120a in this build:
 * init refuses other devices, naming the targets it has). Its kernels use
 * sm_80 features only, so the same source serves every CUDA profile; the
 * probe's FP8 arms use the device's FP8 MMA (and MX only on sm_120a).
 * A descriptor: the mmq kernel family (modules/kernels/mmq) on the GPU runtime. */
#include "kernels/kernels.h"

#define MMQ_NAME "mmq"
#define MMQ_VERSION "0.1.0"

static int mmq_score(const memra_device_caps *caps)
{
    if (caps == NULL || caps->arch == MEMRA_ARCH_HOST || caps->cc < 80) return 0;
    return 50;
}

static memra_status mmq_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    static const memra__gpu_family *const families[] = {&memra__gpu_family_mmq};
    memra__gpu *q = NULL;
    memra_status st = memra__gpu_create(host, caps, MMQ_NAME, families, 1, &q);
    if (st == MEMRA_STATUS_OK) *out_ctx = q;
    return st;
}

static void mmq_fini(void *ctx) { memra__gpu_destroy((memra__gpu *)ctx); }

/* gemm_q8_0's token tiles, gemm_q8_0r's tiles, split-k off, PDL off (mmq_ops.c). */
static const memra_variant *mmq_variants(const memra_device_caps *caps, memra_op op, size_t *out_count)
{
    return memra__mmq_variants(caps, op, 0, out_count);
}

static const memra_op_table k_mmq_ops = {
    .struct_size = sizeof(memra_op_table),
    .quant_q8_1 = memra__mmq_quant_q8_1,
    .gemm_q8_0 = memra__mmq_gemm_q8_0,
    .accprobe = memra__mmq_accprobe,
    .repack_q8_0 = memra__mmq_repack_q8_0,
    .gemm_q8_0r = memra__mmq_gemm_q8_0r,
    .gemm_kr = memra__mmq_gemm_kr,
    .gemm_experts = memra__mmq_gemm_experts,
};

static const memra_module_desc k_mmq_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = MMQ_NAME,
    .version = MMQ_VERSION,
    .score = mmq_score,
    .init = mmq_init,
    .fini = mmq_fini,
    .ops = &k_mmq_ops,
    .variants = mmq_variants,
    .q8_1_sums = 1, /* quant_q8_1 writes the sum plane */
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_mmq_desc; }
