/* The sm120 module: consumer Blackwell (cc 12.x, RTX 5090).
 *
 *   gemm_f16, gemm_bf16, gemm_fp8  cuBLASLt with scalar scales (modules/cuda, shared with sm90)
 *   gemm_fp8_blk               memra's block-128 FP8 GEMM (fp8blk_gemm.cu): kind::mxf8f6f4
 *                              with unit scales by default, kind::f8f6f4 with
 *                              MEMRA_SM120_FP8BLK=f8f6f4 (read at init)
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
 * so `memra jit warm` compiles them ahead. See modules/mmq/fp8blk_jit.h for
 * MEMRA_FP8BLK_JIT and MEMRA_FP8BLK_TILE. */
#include <stdlib.h>
#include <string.h>

#include "../cuda/gpu.h"
#include "../mmq/mmq_gpu.h"

#define SM120_NAME "sm120"
#define SM120_VERSION "0.1.0"

typedef struct sm120_ctx {
    memra__gpu *gpu; /* shared GPU code: cuBLASLt, load-time kernels */
    memra__mmq *mmq; /* MMQ floor, probe, block-128 FP8 */
} sm120_ctx;

static int sm120_score(const memra_device_caps *caps)
{
    if (caps == NULL) return 0;
    return caps->arch == MEMRA_ARCH_SM120 ? 100 : 0;
}

static void sm120_fini(void *p)
{
    sm120_ctx *c = (sm120_ctx *)p;
    if (c == NULL) return;
    memra__mmq_destroy(c->mmq);
    memra__gpu_destroy(c->gpu);
    free(c);
}

static memra_status sm120_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    sm120_ctx *c = calloc(1, sizeof *c);
    if (c == NULL) return host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", SM120_NAME);
    memra_status st = memra__gpu_create(host, caps, SM120_NAME, &c->gpu);
    if (st == MEMRA_STATUS_OK) {
        const int native = caps->cc / 10 == 12;
        const char *v = MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL
                            ? host->knob(caps, "MEMRA_SM120_FP8BLK")
                            : NULL;
        const int mx = !(v != NULL && strcmp(v, "f8f6f4") == 0);
        unsigned fam = MEMRA__MMQ_FAM_MMQ;
        if (native) fam |= mx ? MEMRA__MMQ_FAM_FP8BLK_MX : MEMRA__MMQ_FAM_FP8BLK;
        st = memra__mmq_create(host, caps, SM120_NAME, fam, mx, &c->mmq);
        if (st == MEMRA_STATUS_OK && !native)
            c->mmq->fp8blk_decline = "gemm_fp8_blk: the sm120 kernels (kind::f8f6f4 / mxf8f6f4) need a cc 12.x device";
    }
    if (st != MEMRA_STATUS_OK) {
        sm120_fini(c);
        return st;
    }
    *out_ctx = c;
    return MEMRA_STATUS_OK;
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

/* Each op runs the shared implementation with module_ctx swapped to the part
 * that serves it; the decline reason travels back. */
#define SM120_FORWARD(part, call, expr)                                                                      \
    do {                                                                                                     \
        memra_call sub_ = *(call);                                                                           \
        sub_.module_ctx = ((sm120_ctx *)(call)->module_ctx)->part;                                          \
        memra_call *c_ = &sub_;                                                                              \
        memra_status st_ = (expr);                                                                           \
        (call)->decline_reason = sub_.decline_reason;                                                        \
        return st_;                                                                                          \
    } while (0)

static memra_status sm120_cvt_f16(memra_call *call, memra_dptr s, memra_dptr d, int64_t n)
{
    SM120_FORWARD(gpu, call, memra__gpu_cvt_f16(c_, s, d, n));
}
static memra_status sm120_gemm_f16(memra_call *call, const memra_gemm_args *a)
{
    SM120_FORWARD(gpu, call, memra__gpu_gemm_f16(c_, a));
}
static memra_status sm120_gemm_bf16(memra_call *call, const memra_gemm_args *a)
{
    SM120_FORWARD(gpu, call, memra__gpu_gemm_bf16(c_, a));
}
static memra_status sm120_gemm_fp8(memra_call *call, const memra_gemm_args *a)
{
    SM120_FORWARD(gpu, call, memra__gpu_gemm_fp8(c_, a));
}
static memra_status sm120_gemm_fp8_blk(memra_call *call, const memra_gemm_args *a)
{
    SM120_FORWARD(mmq, call, memra__mmq_gemm_fp8_blk(c_, a));
}
static memra_status sm120_quant_q8_1(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst)
{
    SM120_FORWARD(mmq, call, memra__mmq_quant_q8_1(c_, x, m, k, dst));
}
static memra_status sm120_gemm_q8_0(memra_call *call, const memra_gemm_args *a)
{
    SM120_FORWARD(mmq, call, memra__mmq_gemm_q8_0(c_, a));
}
static memra_status sm120_dequant_f16(memra_call *call, memra_format f, memra_dptr src, int64_t rows, int64_t cols,
                                      memra_dptr dst)
{
    SM120_FORWARD(gpu, call, memra__gpu_dequant_f16(c_, f, src, rows, cols, dst));
}
static memra_status sm120_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows, int64_t cols,
                                          memra_dptr dst)
{
    SM120_FORWARD(gpu, call, memra__gpu_fp8_blk_to_q8_0(c_, w, grid, rows, cols, dst));
}
static memra_status sm120_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out)
{
    SM120_FORWARD(gpu, call, memra__gpu_fp8_nan_count(c_, w, nbytes, out));
}
static memra_status sm120_scale(memra_call *call, memra_dptr y, int64_t n, float s)
{
    SM120_FORWARD(gpu, call, memra__gpu_scale(c_, y, n, s));
}
static memra_status sm120_accprobe(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *a)
{
    SM120_FORWARD(mmq, call, memra__mmq_accprobe(c_, arm, a));
}
static memra_status sm120_repack_q8_0(memra_call *call, memra_dptr src, int64_t rows, int64_t cols, memra_dptr dst)
{
    SM120_FORWARD(mmq, call, memra__mmq_repack_q8_0(c_, src, rows, cols, dst));
}
static memra_status sm120_gemm_q8_0r(memra_call *call, const memra_gemm_args *a)
{
    SM120_FORWARD(mmq, call, memra__mmq_gemm_q8_0r(c_, a));
}

static const memra_op_table k_sm120_ops = {
    .struct_size = sizeof(memra_op_table),
    .cvt_f16 = sm120_cvt_f16,
    .gemm_f16 = sm120_gemm_f16,
    .gemm_fp8 = sm120_gemm_fp8,
    .gemm_fp8_blk = sm120_gemm_fp8_blk,
    .quant_q8_1 = sm120_quant_q8_1,
    .gemm_q8_0 = sm120_gemm_q8_0,
    .dequant_f16 = sm120_dequant_f16,
    .fp8_blk_to_q8_0 = sm120_fp8_blk_to_q8_0,
    .fp8_nan_count = sm120_fp8_nan_count,
    .scale = sm120_scale,
    .accprobe = sm120_accprobe,
    .repack_q8_0 = sm120_repack_q8_0,
    .gemm_q8_0r = sm120_gemm_q8_0r,
    .gemm_bf16 = sm120_gemm_bf16,
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
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_sm120_desc; }
