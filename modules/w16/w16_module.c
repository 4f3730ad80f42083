/* The w16 module: gemm_w16, the fused-dequant f16 tile on GGUF codes (modules/kernels/w16), on Hopper (cc 9.0,
 * sm_90a: wgmma, setmaxnreg). A module of its own so that the admission self-check, which runs every module's ops
 * against the host at load, can quarantine this kernel alone: the sm90 module's cuBLASLt lanes and the mmq
 * module's floor never depend on it. Where it is absent or quarantined, weights without a mirror keep the
 * integer floor (the core builds the W16 operand only where a module routes gemm_w16). It also serves
 * gemm_experts on lane gemm_w16 (the grouped tile) and declines the other lanes. */
#include "kernels/kernels.h"

#define W16_NAME "w16"
#define W16_VERSION "0.1.0"

static int w16_score(const memra_device_caps *caps)
{
    if (caps == NULL) return 0;
    /* below the mmq module (50): gemm_w16 is this module's alone, but gemm_experts is both's, and the floor's
     * lanes (most grouped calls) should not ask this module first to be declined */
    return caps->arch == MEMRA_ARCH_SM90 && caps->cc == 90 ? 20 : 0;
}

static memra_status w16_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    static const memra__gpu_family *const families[] = {&memra__gpu_family_w16};
    memra__gpu *gpu = NULL;
    memra_status st = memra__gpu_create(host, caps, W16_NAME, families, sizeof families / sizeof families[0], &gpu);
    if (st == MEMRA_STATUS_OK) *out_ctx = gpu;
    return st;
}

static void w16_fini(void *ctx) { memra__gpu_destroy((memra__gpu *)ctx); }

static const memra_op_table k_w16_ops = {
    .struct_size = sizeof(memra_op_table),
    .gemm_w16 = memra__gpu_gemm_w16,
    .gemm_experts = memra__gpu_w16_experts,
};

static const memra_module_desc k_w16_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = W16_NAME,
    .version = W16_VERSION,
    .score = w16_score,
    .init = w16_init,
    .fini = w16_fini,
    .ops = &k_w16_ops,
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_w16_desc; }
