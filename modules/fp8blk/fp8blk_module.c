/* The fp8blk module: memra's own block-128 FP8 GEMM (modules/kernels/fp8blk)
 * in its sm_90a variant (e4m3 mma.sync), on Hopper. It scores below the sm90
 * module, whose cuBLASLt block-scaled lane is the default there, so it serves
 * gemm_fp8_blk only when preferred (MEMRA_PREFER=gemm_fp8_blk=fp8blk) or named
 * (memra_module_call, memra check / bench): the second implementation of one
 * op, to race against the first. The same kernels serve sm_120 through the
 * sm120 module.
 *
 * The kernels are compiled by the JIT for sm_90a at init (jit_sources declares
 * fp8blk_gemm.e4m3 so `memra jit warm` compiles it ahead), with the embedded
 * cubin as the fallback; see modules/kernels/fp8blk/fp8blk_jit.h for
 * MEMRA_FP8BLK_JIT and MEMRA_FP8BLK_TILE. It lists three tile variants
 * (bm64_bn128, bm128_bn64, bm64_bn64), compiled by the JIT at init too (a
 * variant the JIT cannot serve declines). It also serves gemm_experts with
 * lane gemm_fp8_blk (mixture-of-experts prefill on the grouped warpgroup tile,
 * fp8blk_ops.c), declining every other lane, and the load-time kernels of a
 * block-128 weight (fp8_nan_count, fp8_blk_to_q8_0: the fp8_weight family), so
 * it serves such weights with the sm90 module disabled. A descriptor: the
 * fp8_weight and fp8blk families (with its tiles) on the GPU runtime. */
#include <string.h>

#include "kernels/kernels.h"

#define FP8BLK_NAME "fp8blk"
#define FP8BLK_VERSION "0.1.0"

static int fp8blk_score(const memra_device_caps *caps)
{
    if (caps == NULL) return 0;
    return caps->arch == MEMRA_ARCH_SM90 && caps->cc == 90 ? 10 : 0;
}

static memra_status fp8blk_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    static const memra__gpu_family *const families[] = {&memra__gpu_family_fp8_weight, &memra__gpu_family_fp8blk_tiles};
    memra__gpu *q = NULL;
    memra_status st = memra__gpu_create(host, caps, FP8BLK_NAME, families, sizeof families / sizeof families[0], &q);
    if (st == MEMRA_STATUS_OK) *out_ctx = q;
    return st;
}

static void fp8blk_fini(void *ctx) { memra__gpu_destroy((memra__gpu *)ctx); }

/* e4m3 on sm_90a, the default tile and each variant's; nothing elsewhere (the module scores 0 there). */
static const memra_jit_source *fp8blk_jit_sources(const memra_device_caps *caps, size_t *out_count)
{
    size_t n = 0;
    const memra_jit_source *s = memra__fp8blk_jit_sources(caps, &n);
    if (s != NULL && n == 1 && strcmp(s->name, "fp8blk_gemm.e4m3") == 0)
        return memra__fp8blk_jit_sources_e4m3_tiles(out_count);
    *out_count = 0;
    return NULL;
}

/* gemm_fp8_blk's tiles (MEMRA_FP8BLK_TILE=64x128, 128x64, 64x64) on cc 9.0.
 * Numerics: each output folds its k blocks of 128 in ascending order, once
 * per block (fp8blk_gemm.cu), whatever the tile: bit-identical results. */
static const memra_variant *fp8blk_variants(const memra_device_caps *caps, memra_op op, size_t *out_count)
{
    const int on = caps != NULL && op == MEMRA_OP_gemm_fp8_blk && caps->arch == MEMRA_ARCH_SM90 && caps->cc == 90;
    *out_count = on ? MEMRA__FP8BLK_TILE_VARIANTS : 0;
    return on ? memra__fp8blk_tile_variants : NULL;
}

static const memra_op_table k_fp8blk_ops = {
    .struct_size = sizeof(memra_op_table),
    .gemm_fp8_blk = memra__mmq_gemm_fp8_blk_tiles,
    .gemm_experts = memra__fp8blk_gemm_experts, /* lane gemm_fp8_blk only (issue 30) */
    /* The load-time kernels a block-128 weight needs (its NaN census, the Q8_0
     * copy of the floor), so that the module serves such a weight on its own
     * when the sm90 module is disabled or refused (MEMRA_DISABLE=sm90). */
    .fp8_nan_count = memra__gpu_fp8_nan_count,
    .fp8_blk_to_q8_0 = memra__gpu_fp8_blk_to_q8_0,
};

static const memra_module_desc k_fp8blk_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = FP8BLK_NAME,
    .version = FP8BLK_VERSION,
    .score = fp8blk_score,
    .init = fp8blk_init,
    .fini = fp8blk_fini,
    .ops = &k_fp8blk_ops,
    .jit_sources = fp8blk_jit_sources,
    .variants = fp8blk_variants,
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_fp8blk_desc; }
