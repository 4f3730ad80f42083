/* The sm120 module: consumer Blackwell (cc 12.x, RTX 5090).
 *
 *   gemm_f16, gemm_bf16, gemm_fp8  cuBLASLt with scalar scales (the blas family, shared with sm90)
 *   gemm_fp8_blk               memra's block-128 FP8 GEMM (fp8blk_gemm.cu): kind::mxf8f6f4
 *                              with unit scales by default, kind::f8f6f4 with
 *                              MEMRA_SM120_FP8BLK=f8f6f4 (read at init); both
 *                              are loaded on cc 12.x and listed as the variants
 *                              "mxf8f6f4" and "f8f6f4" (memra tune races them)
 *   quant_q8_1, gemm_q8_0,     the MMQ floor and the probe (mmq.cu; MX arm included);
 *   repack_q8_0, gemm_q8_0r,   gemm_q8_0r on the tiles whose shared memory fits sm_120's
 *   accprobe                   99 KB (128 x 96, 64 x 128, 64 x 96; not 128 x 128's 108 KB),
 *                              one CTA per SM in the plan's model
 *   cvt_f16, dequant_f16, fp8_blk_to_q8_0, fp8_nan_count, scale   the load-time ops
 *
 * Under a forced profile on another GPU (MEMRA_ARCH=sm120 on an H200) the
 * arch-independent lanes run from that GPU's images, and the sm_120a kernels
 * are declined with a reason, never launched.
 *
 * The gemm_fp8_blk kernels are compiled by the JIT for the device's target
 * (sm_120a / sm_121a) at init, with the embedded cubins as the fallback;
 * jit_sources declares both variants (fp8blk_gemm.f8f6f4, fp8blk_gemm.mxf8f6f4)
 * so `memra jit warm` compiles them ahead. See modules/kernels/fp8blk/fp8blk_jit.h
 * for MEMRA_FP8BLK_JIT and MEMRA_FP8BLK_TILE.
 *
 * A descriptor: one GPU runtime context serving the families convert,
 * dequant, fp8_act, fp8_weight, blas, mmq and fp8blk (mx, plain, or the "off"
 * descriptor that declines on a device that is not cc 12.x); the op table
 * points straight at the families' ops. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define SM120_NAME "sm120"
#define SM120_VERSION "0.1.0"

static int sm120_score(const memra_device_caps *caps)
{
    if (caps == NULL) return 0;
    return caps->arch == MEMRA_ARCH_SM120 ? 100 : 0;
}

static void sm120_fini(void *p) { memra__gpu_destroy((memra__gpu *)p); }

static memra_status sm120_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    const int native = caps->cc / 10 == 12;
    const char *v = MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL
                        ? host->knob(caps, "MEMRA_SM120_FP8BLK")
                        : NULL; /* read once, here */
    const int mx = !(v != NULL && strcmp(v, "f8f6f4") == 0);
    /* Both MMA kinds on cc 12.x (the variants), the knob's first: it is the
     * default (memra__mmq_gemm_fp8_blk serves the first one loaded). */
    const memra__gpu_family *const families[] = {
        &memra__gpu_family_convert,
        &memra__gpu_family_dequant,
        &memra__gpu_family_fp8_act,
        &memra__gpu_family_fp8_weight,
        &memra__gpu_family_blas,
        &memra__gpu_family_mmq,
        !native ? &memra__gpu_family_fp8blk_off_sm120 : mx ? &memra__gpu_family_fp8blk_mx : &memra__gpu_family_fp8blk,
        mx ? &memra__gpu_family_fp8blk : &memra__gpu_family_fp8blk_mx,
    };
    const size_t n_families = sizeof families / sizeof families[0] - (native ? 0 : 1);
    memra__gpu *gpu = NULL;
    memra_status st = memra__gpu_create(host, caps, SM120_NAME, families, n_families, &gpu);
    if (st == MEMRA_STATUS_OK) *out_ctx = gpu;
    return st;
}

/* Both sm_120a variants on cc 12.x; nothing elsewhere (a forced profile on
 * another GPU declines gemm_fp8_blk rather than compile it). */
static const memra_jit_source *sm120_jit_sources(const memra_device_caps *caps, size_t *out_count)
{
    if (caps == NULL || caps->cc / 10 != 12) {
        *out_count = 0;
        return NULL;
    }
    return memra__fp8blk_jit_sources(caps, out_count);
}

/* gemm_fp8_blk's MMA kinds on cc 12.x (both loaded at init); the MMQ
 * family's variants for gemm_q8_0 / gemm_q8_0r. The two kinds multiply the
 * same e4m3 bytes at unit scales (the mx kind's ue8m0 scales are 2^0) and
 * accumulate in f32 inside the MMA, whose internal order is the hardware's:
 * they agree within the fp8_blk band, not necessarily bitwise. */
static const memra_variant k_sm120_kinds[] = {
    {"mxf8f6f4", "MEMRA_SM120_FP8BLK=mxf8f6f4"},
    {"f8f6f4", "MEMRA_SM120_FP8BLK=f8f6f4"},
};

static const memra_variant *sm120_variants(const memra_device_caps *caps, memra_op op, size_t *out_count)
{
    if (op == MEMRA_OP_gemm_fp8_blk) {
        const int native = caps != NULL && caps->cc / 10 == 12;
        *out_count = native ? 2 : 0;
        return native ? k_sm120_kinds : NULL;
    }
    return memra__mmq_variants(caps, op, 0, out_count);
}

static memra_status sm120_gemm_fp8_blk(memra_call *call, const memra_gemm_args *a)
{
    const int v = MEMRA_HAS_MEMBER(call, memra_call, variant) ? call->variant : -1;
    if (v == 0) return memra__mmq_gemm_fp8_blk_of(call, a, &memra__gpu_family_fp8blk_mx);
    if (v == 1) return memra__mmq_gemm_fp8_blk_of(call, a, &memra__gpu_family_fp8blk);
    return memra__mmq_gemm_fp8_blk(call, a);
}

static const memra_op_table k_sm120_ops = {
    .struct_size = sizeof(memra_op_table),
    .cvt_f16 = memra__gpu_cvt_f16,
    .gemm_f16 = memra__gpu_gemm_f16,
    .gemm_fp8 = memra__gpu_gemm_fp8,
    .gemm_fp8_blk = sm120_gemm_fp8_blk,
    .quant_q8_1 = memra__mmq_quant_q8_1,
    .gemm_q8_0 = memra__mmq_gemm_q8_0,
    .dequant_f16 = memra__gpu_dequant_f16,
    .dequant_kr_f16 = memra__gpu_dequant_kr_f16,
    .fp8_blk_to_q8_0 = memra__gpu_fp8_blk_to_q8_0,
    .fp8_nan_count = memra__gpu_fp8_nan_count,
    .scale = memra__gpu_scale,
    .accprobe = memra__mmq_accprobe,
    .repack_q8_0 = memra__mmq_repack_q8_0,
    .gemm_q8_0r = memra__mmq_gemm_q8_0r,
    .gemm_kr = memra__mmq_gemm_kr,
    .gemm_experts = memra__mmq_gemm_experts,
    .gemm_bf16 = memra__gpu_gemm_bf16,
};

static const memra_module_desc k_sm120_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = SM120_NAME,
    .version = SM120_VERSION,
    .score = sm120_score,
    .init = sm120_init,
    .fini = sm120_fini,
    .ops = &k_sm120_ops,
    .jit_sources = sm120_jit_sources,
    .variants = sm120_variants,
    .q8_1_sums = 1, /* quant_q8_1 (mmq.cu) writes the sum plane */
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_sm120_desc; }
