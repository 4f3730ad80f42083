/* The block-128 FP8 family (fp8blk_gemm.cu): its load (the kernels from the
 * JIT when it can serve them, else the embedded cubin, the reason logged), the
 * op gemm_fp8_blk and, on cc 9.0, gemm_experts with lane gemm_fp8_blk. fp8blk.h holds the constants this file, fp8blk_jit.c
 * and fp8blk_gemm.cu share; fp8blk_jit.h the JIT sources and the tile knob. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8blk.h"
#include "kernels/kernels.h"

#define MMQ_OF(call) ((memra__gpu *)(call)->module_ctx)

/* Named scratch (host->scratch_get: per call and stream). */
#define MEMRA__MMQ_SLOT_XQ "fp8blk.xq" /* gemm_fp8_blk: e4m3 activation */
#define MEMRA__MMQ_SLOT_XS "fp8blk.xs" /* gemm_fp8_blk: activation scales */
#define MEMRA__FP8BLK_SLOT_ROUTE "fp8blk.experts.route" /* gemm_experts: offsets, permutation, tile table */
#define MEMRA__FP8BLK_SLOT_AMAX "fp8blk.experts.amax"   /* gemm_experts lane gemm_fp8: per-expert and per-row maxima */
#define MEMRA__FP8BLK_SLOT_MAPS "fp8blk.experts.maps"   /* MEMRA_FP8BLK_XE_TMA=1: a tensor map per expert's weight */
#define MEMRA__FP8BLK_SLOT_PART "fp8blk.experts.splitk" /* MEMRA_FP8BLK_XE_SPLIT: the slices' partial sums */
#define FP8BLK_XE_PART_MAX (1024.0 * 1024.0 * 1024.0) /* their bytes at most (S lowered to fit) */

typedef struct fp8blk_state {
    CUfunction quant, gemm;
    CUfunction quant_given;  /* memra_k_fp8blk_quant_given: one pass at x_amax / x_scale */
    CUfunction wgmma;        /* sm_90a: the 128 x 128 warpgroup kernel, served instead of gemm; NULL elsewhere */
    const char *wgmma_name;  /* its name (memra_k_fp8blk_wgmma_mb, or _wgmma with MEMRA_FP8BLK_WGMMA=bar) */
    unsigned wgmma_smem;     /* its dynamic shared memory */
    CUfunction wgmma_wide;   /* sm_90a: the 128 x 256 one (memra_k_fp8blk_wgmma_wide), or NULL */
    CUfunction wgmma_tma;    /* MEMRA_FP8BLK_WGMMA=tma: memra_k_fp8blk_wgmma_tma (needs tensor maps), or NULL */
    int wide_always;         /* MEMRA_FP8BLK_WGMMA=wide: the wide tile at every shape */
    /* gemm_experts (sm_90a, where a warpgroup kernel serves gemm_fp8_blk): the routing kernel, the
     * quantisers in expert order and the grouped 128 x 128 tile; NULL elsewhere (the op declines) */
    CUfunction xe_route, xe_quant, xe_quant_given, xe_gemm;
    /* MEMRA_FP8BLK_XE_QU=8 (opt-in): xe_quant is memra_k_fp8blk_quant_sorted8 (8 items a warp, the same codes);
     * xe_qu: the items a warp of xe_quant, 4 (MEMRA_ROW128_U) or 8 */
    int xe_qu;
    CUfunction xe_gemm64; /* the 64-row remainder tile, or NULL: one table of 128-row tiles */
    CUfunction xe_wide;   /* MEMRA_FP8BLK_XE_WIDE=1: the 128-row tiles on 128 x 256 (experts_wgmma_wide), or NULL */
    CUfunction xe_one;    /* MEMRA_FP8BLK_XE_ONE=1|all: one table of 128-row tiles, tile-major (experts_wgmma_t), or NULL */
    int xe_one_all;       /* MEMRA_FP8BLK_XE_ONE=all: that table at every mean (tests), not only from 128 rows */
    /* MEMRA_FP8BLK_XE_TMA=1 (where the driver encodes tensor maps): the experts' weight maps
     * (experts_maps) and the warp-specialised grouped tile on them (experts_tma), or NULL */
    CUfunction xe_maps, xe_tma;
    int xe_tma_nh; /* its tile's column halves: 2 (256 columns) or 1 (128: MEMRA_FP8BLK_XE_N128=1 or _PIPE=1) */
    /* MEMRA_FP8BLK_XE_N128=auto (the default): beside the 256-wide tile, the 128-wide one
     * (experts_tma_n128) for calls whose 256-wide grid is under four CTAs an SM; NULL otherwise */
    CUfunction xe_tma128;
    /* the persistent tiles (off with MEMRA_FP8BLK_XE_PERSIST=0), [0] 128 wide (experts_tma_n128gp),
     * [1] 256 wide (experts_tma_gsp), taking the place of the one-tile-a-CTA ones of that width */
    CUfunction xe_tma_p[2];
    /* MEMRA_FP8BLK_XE_L2=1|2 (opt-in): the persistent tiles' L2 eviction priorities (xe_l2, 0: none);
     * xe_tma_p_l2[h]: xe_tma_p[h] is the hinted form (_gsph<xe_l2> / _n128gph<xe_l2>) */
    int xe_l2, xe_tma_p_l2[2];
    /* MEMRA_FP8BLK_XE_HALF=1 (opt-in): xe_tma_p[1] is _gsp's twin _gsp_half (tiles of at most 64 rows on both
     * consumer warpgroups, a column half each); 0: _gsp (or a hinted form) */
    int xe_half;
    /* MEMRA_FP8BLK_XE_RASTER (0 | N | auto: -1, the default): the persistent tiles' walk in groups of N table tiles
     * (fp8blk_gemm.cu xe_walk); auto: groups of 8 where the mean expert has 384 rows or more (runs y1 / y5 on an
     * H100, Mixtral-like rows at m = 4096: 1.04-1.23 ms a call against 1.07-1.24 on the plain walk) */
    int xe_raster;
    int xe_ctas; /* MEMRA_FP8BLK_XE_CTAS=N (tests): the persistent tiles on at most N CTAs (0: one an SM), so that a
                  * small call walks several tiles a CTA */
    /* MEMRA_FP8BLK_XE_TALL=1 (opt-in): the 256 x 128 persistent tile (experts_tma_tall) and the
     * routing into 256-row tiles it reads (experts_route_tall), or NULL */
    CUfunction xe_tall, xe_route_tall;
    int xe_pipe;   /* MEMRA_FP8BLK_XE_PIPE=1 (opt-in): the 128-wide tile with the pipelined consumer (_n128p) */
    int xe_tma64;  /* MEMRA_FP8BLK_XE_TMA64=1: the 64-row remainder table beside it (experts_wgmma64) */
    int xe_split;  /* MEMRA_FP8BLK_XE_SPLIT=S (2..16, opt-in): its k blocks in S slices */
    CUfunction xe_tma_split, xe_sum; /* the split tile and the slices' sum; NULL: unsplit */
    int xe_pf;              /* MEMRA_FP8BLK_XE_PF=4|8 (opt-in): the weight's L2 prefetch distance, 0: none */
    CUfunction xe_tma_pf;   /* experts_tma_pf<xe_pf> (the 256-wide tile), or NULL */
    CUfunction xe_tma_gs;   /* experts_tma_gs (grid scales in the stages; off with MEMRA_FP8BLK_XE_GS=0), or NULL */
    /* lane gemm_fp8 (per-tensor e4m3 experts; off with MEMRA_FP8BLK_XE_PT=0): the per-expert
     * amax, its expansion to rows, the quantiser at those maxima and the tile-major per-tensor
     * tile; NULL otherwise (the lane declines) */
    CUfunction xe_pt_amax, xe_pt_expand, xe_pt_quant, xe_pt;
    memra__fp8blk_variant variant;
    memra__fp8blk_tile tile; /* the tile the loaded gemm kernel was compiled with */
    unsigned threads;
    unsigned smem;
    const char *path;    /* "jit" or "embedded" */
    const char *decline; /* non-NULL: gemm_fp8_blk declines with this */
} fp8blk_state;

/* memra__gpu_family_fp8blk_tiles: the default kernels, then each tile variant's
 * (memra__fp8blk_tile_variants), JIT only: a variant the JIT cannot serve
 * declines with why. */
typedef struct fp8blk_tiles_state {
    fp8blk_state def;
    fp8blk_state var[MEMRA__FP8BLK_TILE_VARIANTS];
    char why[MEMRA__FP8BLK_TILE_VARIANTS][200];
} fp8blk_tiles_state;

/* The three descriptors' configuration: the image (and variant) to load, or
 * none with the decline reason. */
typedef struct fp8blk_config {
    int mx;              /* kind::mxf8f6f4 (image fp8blk_mx) */
    const char *decline; /* non-NULL: load nothing, decline with this */
} fp8blk_config;

static const fp8blk_config k_cfg_default = {0, NULL};
static const fp8blk_config k_cfg_mx = {1, NULL};
static const fp8blk_config k_cfg_off_sm120 = {
    0, "gemm_fp8_blk: the sm120 kernels (kind::f8f6f4 / mxf8f6f4) need a cc 12.x device"};

/* The state of the first block-128 family in the context's family order (a
 * module that loads two, as sm120 does for its MMA-kind variants, lists its
 * default first). */
static const fp8blk_state *fb_state(const memra__gpu *q)
{
    for (int i = 0; i < q->n_families; i++)
        if (q->families[i] == &memra__gpu_family_fp8blk || q->families[i] == &memra__gpu_family_fp8blk_mx ||
            q->families[i] == &memra__gpu_family_fp8blk_off_sm120 || q->families[i] == &memra__gpu_family_fp8blk_tiles)
            return q->state[i]; /* fp8blk_tiles_state starts with the default's fp8blk_state */
    return NULL;
}

/* The block-128 FP8 kernels of variant v into *m: from the JIT when it
 * serves them, else from the embedded image `image`; says which at info level. */
static memra_status load_fp8blk(memra__gpu *q, fp8blk_state *fb, const char *image, memra__fp8blk_variant v, CUmodule *mod)
{
    const memra_host_services *host = q->host;
    const memra_device_caps *caps = q->caps;
    const memra__fp8blk_tile def = MEMRA__FP8BLK_TILE_DEFAULT;
    const char *tile_why = NULL;
    const memra__fp8blk_tile tile = memra__fp8blk_tile_env(&tile_why);
    if (tile_why != NULL)
        host->log(MEMRA_LOG_WARN, q->name, "MEMRA_FP8BLK_TILE=%s refused (%s); using %dx%d (%dx%d warps)",
                  memra__fp8blk_tile_knob(), tile_why, def.bm, def.bn, def.warps_m, def.warps_n);
    const size_t smem = memra__fp8blk_tile_smem(&tile);
    const memra_jit_source *src = memra__fp8blk_jit_source(v);
    const char *no_jit = memra__gpu_jit_unavailable(q);
    char why[224];
    why[0] = '\0';
    if (!memra__fp8blk_jit_enabled()) {
        snprintf(why, sizeof why, "MEMRA_FP8BLK_JIT=0");
    } else if (no_jit != NULL) {
        snprintf(why, sizeof why, "%s", no_jit);
    } else if (caps->smem_per_block_optin != 0 && caps->smem_per_block_optin < smem) {
        snprintf(why, sizeof why, "tile %dx%d needs %zu bytes of shared memory, the device offers %zu", tile.bm,
                 tile.bn, smem, caps->smem_per_block_optin);
    } else {
        double ms = 0.0;
        if (memra__gpu_jit_load(q, src, mod, &ms, why, sizeof why) == MEMRA_STATUS_OK) {
            fb->tile = tile;
            fb->path = "jit";
            host->log(MEMRA_LOG_INFO, q->name,
                      "gemm_fp8_blk: %s served by the JIT for %s, tile %dx%d (%dx%d warps), %.2f ms "
                      "(memory / disk / nvrtc: the jit line above)",
                      src->name, caps->jit_target, tile.bm, tile.bn, tile.warps_m, tile.warps_n, ms);
            return MEMRA_STATUS_OK;
        }
    }
    memra_status st = memra__gpu_image_load(q, image, mod);
    if (st != MEMRA_STATUS_OK) return st;
    fb->tile = def;
    fb->path = "embedded";
    host->log(MEMRA_LOG_INFO, q->name, "gemm_fp8_blk: %s served by the embedded cubin (%s, tile %dx%d); JIT not used: %s",
              src->name, q->target, def.bm, def.bn, why);
    if (!memra__fp8blk_tile_is_default(&tile))
        host->log(MEMRA_LOG_WARN, q->name, "MEMRA_FP8BLK_TILE=%dx%dx%dx%d ignored: the embedded cubin has tile %dx%dx%dx%d",
                  tile.bm, tile.bn, tile.warps_m, tile.warps_n, def.bm, def.bn, def.warps_m, def.warps_n);
    return MEMRA_STATUS_OK;
}

/* One warpgroup kernel of the image with its dynamic shared memory: the
 * function, or NULL with the reason logged (absent from the image, or more
 * shared memory than the device gives). */
static CUfunction wgmma_function(memra__gpu *q, const fp8blk_state *fb, CUmodule m, const char *name, unsigned smem)
{
    const memra_host_services *host = q->host;
    const CUfunction f = memra__gpu_kernel_lookup(q, m, name);
    if (f == NULL) {
        host->log(MEMRA_LOG_INFO, q->name, "gemm_fp8_blk: the %s image has no %s", fb->path, name);
        return NULL;
    }
    if ((q->caps->smem_per_block_optin != 0 && q->caps->smem_per_block_optin < smem) ||
        q->cu.cuFuncSetAttribute(f, MEMRA__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem) !=
            MEMRA__CU_SUCCESS) {
        host->log(MEMRA_LOG_WARN, q->name, "gemm_fp8_blk: %s cannot get %u bytes of shared memory (the device offers "
                  "%zu); not used", name, smem, q->caps->smem_per_block_optin);
        return NULL;
    }
    return f;
}

/* The warpgroup kernels of an sm_90a image (the e4m3 variant on cc 9.0), by
 * MEMRA_FP8BLK_WGMMA: auto (the default: the warp-specialised 128 x 256 kernel on
 * tensor maps where the driver encodes them, 0.77x / 0.83x of cuBLASLt's block
 * lane at m = 512 / 4096 on the H200, run p; the 128 x 128 mbarrier kernel for a
 * call whose maps cannot be encoded), tma (the same), mbwide (the 128 x 256 tile
 * where it fills at least four waves of the SMs, else 128 x 128, both with
 * mbarriers and per-thread cp.async: the default before run p, 0.61x), mb
 * (128 x 128 always), wide (128 x 256 always), bar (128 x 128, the warpgroups in
 * step through CTA barriers), 0 (none: the mma.sync kernel, the sm_120 design,
 * serves). Absent from other images (sm_89, sm_120a), which is not an error. */
static void fp8blk_load_wgmma(memra__gpu *q, fp8blk_state *fb, CUmodule m)
{
    const memra_host_services *host = q->host;
    fb->wgmma = fb->wgmma_wide = fb->wgmma_tma = NULL;
    if (fb->variant != MEMRA__FP8BLK_E4M3 || q->caps->cc != 90) return;
    const char *knob = MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL
                           ? host->knob(q->caps, "MEMRA_FP8BLK_WGMMA")
                           : NULL;
    const char *mode = knob != NULL && knob[0] != '\0' ? knob : "auto";
    if (strcmp(mode, "0") == 0) {
        host->log(MEMRA_LOG_INFO, q->name, "gemm_fp8_blk: MEMRA_FP8BLK_WGMMA=0: the mma.sync kernel serves sm_90a");
        return;
    }
    if (strcmp(mode, "auto") == 0 || strcmp(mode, "tma") == 0) {
        /* the warp-specialised kernel on the bulk tensor copy engine; the 128 x 128 mbarrier kernel stays
         * loaded for a call whose tensor maps cannot be encoded (a row stride not a multiple of 16 bytes) */
        if (q->cuTensorMapEncodeTiled == NULL)
            host->log(strcmp(mode, "tma") == 0 ? MEMRA_LOG_WARN : MEMRA_LOG_INFO, q->name,
                      "gemm_fp8_blk: the driver has no cuTensorMapEncodeTiled; the 128x128 / 128x256 wgmma "
                      "kernels on cp.async serve");
        else
            fb->wgmma_tma = wgmma_function(q, fb, m, "memra_k_fp8blk_wgmma_tma", FP8BLK_WG_SMEM_BYTES_OF(2));
        mode = fb->wgmma_tma != NULL ? "mb" : "mbwide";
    }
    if (strcmp(mode, "wide") != 0) {
        const int bar = strcmp(mode, "bar") == 0;
        fb->wgmma_name = bar ? "memra_k_fp8blk_wgmma" : "memra_k_fp8blk_wgmma_mb";
        fb->wgmma_smem = bar ? FP8BLK_WG_SMEM_BYTES : FP8BLK_WG_SMEM_BYTES_OF(1);
        fb->wgmma = wgmma_function(q, fb, m, fb->wgmma_name, fb->wgmma_smem);
    }
    if (strcmp(mode, "mbwide") == 0 || strcmp(mode, "wide") == 0)
        fb->wgmma_wide = wgmma_function(q, fb, m, "memra_k_fp8blk_wgmma_wide", FP8BLK_WG_SMEM_BYTES_OF(2));
    fb->wide_always = strcmp(mode, "wide") == 0;
    /* gemm_experts: its grouped tile is memra_k_fp8blk_wgmma_mb's, bit for bit what every warpgroup
     * kernel computes, so it serves wherever one of them serves gemm_fp8_blk (not with
     * MEMRA_FP8BLK_WGMMA=0, whose mma.sync kernel rounds differently) */
    if (fb->wgmma != NULL || fb->wgmma_wide != NULL || fb->wgmma_tma != NULL) {
        if (q->cu.cuModuleGetFunction(&fb->xe_route, m, "memra_k_fp8blk_experts_route") != MEMRA__CU_SUCCESS ||
            q->cu.cuModuleGetFunction(&fb->xe_quant, m, "memra_k_fp8blk_quant_sorted") != MEMRA__CU_SUCCESS ||
            q->cu.cuModuleGetFunction(&fb->xe_quant_given, m, "memra_k_fp8blk_quant_sorted_given") != MEMRA__CU_SUCCESS) {
            host->log(MEMRA_LOG_INFO, q->name, "gemm_experts: the %s image has no grouped kernels", fb->path);
            fb->xe_route = fb->xe_quant = fb->xe_quant_given = NULL;
        }
        fb->xe_qu = MEMRA_ROW128_U;
        const char *qu = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_QU");
        if (fb->xe_quant != NULL && qu != NULL && strcmp(qu, "8") == 0) {
            const CUfunction f8 = memra__gpu_kernel_lookup(q, m, "memra_k_fp8blk_quant_sorted8");
            if (f8 != NULL)
                fb->xe_quant = f8, fb->xe_qu = 8;
            else
                host->log(MEMRA_LOG_WARN, q->name,
                          "gemm_experts: MEMRA_FP8BLK_XE_QU=8 but the %s image has no memra_k_fp8blk_quant_sorted8 "
                          "(the 4-item quantiser serves)",
                          fb->path);
        }
        fb->xe_gemm = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_wgmma", FP8BLK_WG_SMEM_BYTES_OF(1));
        fb->xe_gemm64 = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_wgmma64", FP8BLK_XE64_SMEM_BYTES);
        const char *xw = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_WIDE");
        if (xw != NULL && strcmp(xw, "1") == 0)
            fb->xe_wide = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_wgmma_wide", FP8BLK_WG_SMEM_BYTES_OF(2));
        const char *xo = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_ONE");
        if (xo != NULL && (strcmp(xo, "1") == 0 || strcmp(xo, "all") == 0)) {
            fb->xe_one = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_wgmma_t", FP8BLK_WG_SMEM_BYTES_OF(1));
            fb->xe_one_all = strcmp(xo, "all") == 0;
        }
        const char *xt = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_TMA");
        if ((xt == NULL || strcmp(xt, "0") != 0) && q->cuTensorMapEncodeTiled != NULL) { /* on unless =0 */
            const char *xn = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_N128");
            const char *x64 = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_TMA64");
            fb->xe_tma64 = x64 != NULL && strcmp(x64, "1") == 0;
            const char *xpp = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_PIPE");
            fb->xe_pipe = xpp != NULL && strcmp(xpp, "1") == 0;
            fb->xe_tma_nh = fb->xe_pipe || (xn != NULL && strcmp(xn, "1") == 0) ? 1 : 2;
            /* auto (unset or any value but 0 / 1): both widths, chosen per call (run y1: the
             * 128-wide tile 7% faster on the Mixtral down rows at m = 512, a 256-CTA grid of
             * 256-wide tiles; 13-17% slower where that grid has 896 or more) */
            const int n128_auto = fb->xe_tma_nh == 2 && (xn == NULL || (strcmp(xn, "0") != 0 && strcmp(xn, "1") != 0));
            fb->xe_tma = fb->xe_tma_nh == 1 ? wgmma_function(q, fb, m,
                                                             fb->xe_pipe ? "memra_k_fp8blk_experts_tma_n128p"
                                                                         : "memra_k_fp8blk_experts_tma_n128",
                                                             FP8BLK_WG_SMEM_BYTES_OF(1))
                                            : wgmma_function(q, fb, m, "memra_k_fp8blk_experts_tma",
                                                             FP8BLK_WG_SMEM_BYTES_OF(2));
            if (fb->xe_tma != NULL && q->cu.cuModuleGetFunction(&fb->xe_maps, m, "memra_k_fp8blk_experts_maps") !=
                                          MEMRA__CU_SUCCESS)
                fb->xe_tma = fb->xe_maps = NULL;
            if (fb->xe_tma != NULL && n128_auto)
                fb->xe_tma128 = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_tma_n128", FP8BLK_WG_SMEM_BYTES_OF(1));
            /* the persistent tiles of the widths in use (both with the grid's scales through the
             * stages, whatever MEMRA_FP8BLK_XE_GS says): on unless MEMRA_FP8BLK_XE_PERSIST=0 (run
             * z1: gate / up 1.01-1.04 of dense at m = 4096 against 0.88-0.90, 0.75-0.86 at 512
             * against 0.73-0.78; down 0.85 / 0.55-0.57 against 0.82-0.83 / 0.52-0.56) */
            const char *xq = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_PERSIST");
            const int persist_asked = xq != NULL && strcmp(xq, "1") == 0;
            if (fb->xe_tma != NULL && (xq == NULL || strcmp(xq, "0") != 0)) {
                if (fb->xe_pipe && persist_asked)
                    q->host->log(MEMRA_LOG_WARN, q->name,
                                 "gemm_experts: MEMRA_FP8BLK_XE_PIPE wins over MEMRA_FP8BLK_XE_PERSIST (no persistent form)");
                const int want128 = !fb->xe_pipe && (fb->xe_tma_nh == 1 || fb->xe_tma128 != NULL);
                const int want256 = !fb->xe_pipe && fb->xe_tma_nh == 2;
                /* MEMRA_FP8BLK_XE_L2=1|2 (opt-in): the persistent tiles with L2 eviction priorities
                 * on their copies (1: the x rows evict_last, the weight evict_first; 2: the x rows
                 * evict_last); the plain ones where that image lacks them (a warning) */
                const char *xc = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_CTAS");
                fb->xe_ctas = xc != NULL ? atoi(xc) : 0;
                const char *xr = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_RASTER");
                fb->xe_raster = xr == NULL || strcmp(xr, "auto") == 0 ? -1 : atoi(xr);
                const char *xl = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_L2");
                fb->xe_l2 = xl != NULL && (strcmp(xl, "1") == 0 || strcmp(xl, "2") == 0) ? xl[0] - '0' : 0;
                const char *xh = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_HALF");
                const int half_asked = xh != NULL && strcmp(xh, "1") == 0;
                for (int h = 0; h < 2; h++) {
                    if (!(h == 0 ? want128 : want256)) continue;
                    const char *base = h == 0 ? "memra_k_fp8blk_experts_tma_n128gp" : "memra_k_fp8blk_experts_tma_gsp";
                    const size_t smem = FP8BLK_WG_SMEM_BYTES_OF(h + 1);
                    if (fb->xe_l2 != 0) {
                        char name[64];
                        snprintf(name, sizeof name, "%sh%d", base, fb->xe_l2);
                        fb->xe_tma_p[h] = wgmma_function(q, fb, m, name, smem);
                        if (fb->xe_tma_p[h] == NULL)
                            q->host->log(MEMRA_LOG_WARN, q->name,
                                         "gemm_experts: MEMRA_FP8BLK_XE_L2=%d but %s did not load (the tile without "
                                         "hints serves)",
                                         fb->xe_l2, name);
                    }
                    if (fb->xe_tma_p[h] != NULL) {
                        fb->xe_tma_p_l2[h] = 1;
                        continue;
                    }
                    /* MEMRA_FP8BLK_XE_HALF=1 (opt-in, the 256-wide tile without hints): _gsp_half, whose tiles of
                     * at most 64 rows (an expert's last) run on both consumer warpgroups, a column half each */
                    if (h == 1 && half_asked) {
                        fb->xe_tma_p[h] = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_tma_gsp_half", smem);
                        fb->xe_half = fb->xe_tma_p[h] != NULL;
                        if (!fb->xe_half)
                            q->host->log(MEMRA_LOG_WARN, q->name,
                                         "gemm_experts: MEMRA_FP8BLK_XE_HALF=1 but memra_k_fp8blk_experts_tma_gsp_half "
                                         "did not load (_gsp serves)");
                    }
                    if (fb->xe_tma_p[h] == NULL) fb->xe_tma_p[h] = wgmma_function(q, fb, m, base, smem);
                }
                if (half_asked && fb->xe_l2 != 0 && fb->xe_tma_p_l2[1])
                    q->host->log(MEMRA_LOG_WARN, q->name,
                                 "gemm_experts: MEMRA_FP8BLK_XE_HALF=1 applies to the 256-wide persistent tile without "
                                 "MEMRA_FP8BLK_XE_L2's hints (the hinted tile serves)");
                else if (half_asked && !want256)
                    q->host->log(MEMRA_LOG_WARN, q->name,
                                 "gemm_experts: MEMRA_FP8BLK_XE_HALF=1 applies to the 256-wide persistent tile, which "
                                 "MEMRA_FP8BLK_XE_N128=1 / _PIPE=1 leave out");
                if (persist_asked && ((want128 && fb->xe_tma_p[0] == NULL) || (want256 && fb->xe_tma_p[1] == NULL)))
                    q->host->log(MEMRA_LOG_WARN, q->name,
                                 "gemm_experts: MEMRA_FP8BLK_XE_PERSIST=1 but a persistent tile did not load (the "
                                 "one-tile-a-CTA tile of that width serves)");
            }
            const char *xtall = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_TALL");
            if (fb->xe_tma != NULL && xtall != NULL && strcmp(xtall, "1") == 0) {
                fb->xe_tall = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_tma_tall", FP8BLK_WG_TALL_SMEM_BYTES);
                if (fb->xe_tall != NULL && q->cu.cuModuleGetFunction(&fb->xe_route_tall, m,
                                                                      "memra_k_fp8blk_experts_route_tall") !=
                                               MEMRA__CU_SUCCESS)
                    fb->xe_tall = fb->xe_route_tall = NULL;
                if (fb->xe_tall == NULL)
                    q->host->log(MEMRA_LOG_WARN, q->name,
                                 "gemm_experts: MEMRA_FP8BLK_XE_TALL=1 but the 256-row tile did not load (the "
                                 "128-row tiles serve)");
            }
            const char *xl2 = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_L2");
            if (fb->xe_tma != NULL && xl2 != NULL && strcmp(xl2, "0") != 0 && fb->xe_tma_p[0] == NULL &&
                fb->xe_tma_p[1] == NULL)
                q->host->log(MEMRA_LOG_WARN, q->name,
                             "gemm_experts: MEMRA_FP8BLK_XE_L2 applies to the persistent tiles only, which are off here");
            const char *xs = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_SPLIT");
            fb->xe_split = xs != NULL ? atoi(xs) : 0;
            if (fb->xe_tma != NULL && fb->xe_tma_nh == 2 && fb->xe_split > 1) {
                fb->xe_tma_split = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_tma_split", FP8BLK_WG_SMEM_BYTES_OF(2));
                if (fb->xe_tma_split == NULL ||
                    q->cu.cuModuleGetFunction(&fb->xe_sum, m, "memra_k_fp8blk_experts_sum") != MEMRA__CU_SUCCESS)
                    fb->xe_tma_split = fb->xe_sum = NULL; /* unsplit then */
            }
            const char *xf = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_PF");
            fb->xe_pf = xf != NULL ? atoi(xf) : 0;
            if (fb->xe_tma != NULL && fb->xe_tma_nh == 2 && (fb->xe_pf == 4 || fb->xe_pf == 8)) {
                fb->xe_tma_pf = wgmma_function(q, fb, m, fb->xe_pf == 4 ? "memra_k_fp8blk_experts_tma_pf4"
                                                                          : "memra_k_fp8blk_experts_tma_pf8",
                                               FP8BLK_WG_SMEM_BYTES_OF(2));
                if (fb->xe_tma_pf == NULL)
                    q->host->log(MEMRA_LOG_WARN, q->name, "gemm_experts: MEMRA_FP8BLK_XE_PF=%d but its tile did not load",
                                 fb->xe_pf);
            }
            /* the 256-wide tile with the grid's scales through its stages: on unless
             * MEMRA_FP8BLK_XE_GS=0 (run y1: 3% shorter launches, gate / up 0.68-0.78 of dense at
             * m = 512 against 0.68-0.75) */
            const char *xg = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_GS");
            const int gs_asked = xg != NULL && strcmp(xg, "1") == 0;
            if (fb->xe_tma_pf != NULL && gs_asked)
                q->host->log(MEMRA_LOG_WARN, q->name, "gemm_experts: MEMRA_FP8BLK_XE_PF wins over MEMRA_FP8BLK_XE_GS");
            if ((fb->xe_tma_pf != NULL || fb->xe_tma_split != NULL) && persist_asked &&
                (fb->xe_tma_p[0] != NULL || fb->xe_tma_p[1] != NULL))
                q->host->log(MEMRA_LOG_WARN, q->name,
                             "gemm_experts: MEMRA_FP8BLK_XE_PF / _SPLIT win over MEMRA_FP8BLK_XE_PERSIST");
            if (fb->xe_tma != NULL && fb->xe_tma_nh == 2 && (xg == NULL || strcmp(xg, "0") != 0)) {
                fb->xe_tma_gs = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_tma_gs", FP8BLK_WG_SMEM_BYTES_OF(2));
                if (fb->xe_tma_gs == NULL && gs_asked)
                    q->host->log(MEMRA_LOG_WARN, q->name, "gemm_experts: MEMRA_FP8BLK_XE_GS=1 but its tile did not load");
            }
        }
        const char *xp = memra__gpu_knob(q, "MEMRA_FP8BLK_XE_PT");
        if (xp == NULL || strcmp(xp, "0") != 0) { /* on unless MEMRA_FP8BLK_XE_PT=0 */
            fb->xe_pt = wgmma_function(q, fb, m, "memra_k_fp8blk_experts_wgmma_pt", FP8BLK_WG_SMEM_BYTES_OF(1));
            if (q->cu.cuModuleGetFunction(&fb->xe_pt_amax, m, "memra_k_fp8blk_experts_amax") != MEMRA__CU_SUCCESS ||
                q->cu.cuModuleGetFunction(&fb->xe_pt_expand, m, "memra_k_fp8blk_experts_expand") != MEMRA__CU_SUCCESS ||
                q->cu.cuModuleGetFunction(&fb->xe_pt_quant, m, "memra_k_fp8blk_quant_sorted_amax") != MEMRA__CU_SUCCESS)
                fb->xe_pt = NULL;
        }
        if (fb->xe_route == NULL || fb->xe_quant == NULL || fb->xe_quant_given == NULL)
            fb->xe_gemm = fb->xe_wide = fb->xe_one = fb->xe_pt = fb->xe_tma = fb->xe_maps = fb->xe_tma_split = fb->xe_sum =
                fb->xe_tma_pf = fb->xe_tma_gs = fb->xe_tma128 = fb->xe_tma_p[0] = fb->xe_tma_p[1] = fb->xe_tall =
                    fb->xe_route_tall = NULL, fb->xe_half = 0;
    }
}

static memra_status fp8blk_load_cfg(memra__gpu *q, fp8blk_state *fb, const fp8blk_config *cfg)
{
    const memra_device_caps *caps = q->caps;
    if (cfg->decline != NULL) {
        fb->decline = cfg->decline;
        return MEMRA_STATUS_OK;
    }
    const size_t need = FP8BLK_SMEM_BYTES_OF(FP8BLK_BM, FP8BLK_BN);
    if (caps->smem_per_block_optin != 0 && caps->smem_per_block_optin < need)
        return q->host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the tile needs %zu bytes of shared memory, %s offers %zu",
                                  q->name, need, caps->name ? caps->name : "the device", caps->smem_per_block_optin);
    fb->variant = cfg->mx ? MEMRA__FP8BLK_MX : caps->cc >= 100 ? MEMRA__FP8BLK_F8F6F4 : MEMRA__FP8BLK_E4M3;
    CUmodule m = NULL;
    memra_status st = load_fp8blk(q, fb, cfg->mx ? "fp8blk_mx" : "fp8blk", fb->variant, &m);
    if (st != MEMRA_STATUS_OK) return st;
    fb->threads = memra__fp8blk_tile_threads(&fb->tile);
    fb->smem = (unsigned)memra__fp8blk_tile_smem(&fb->tile);
    st = memra__gpu_function(q, m, "memra_k_fp8blk_quant", 0, &fb->quant);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(q, m, "memra_k_fp8blk_quant_given", 0, &fb->quant_given);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(q, m, "memra_k_fp8blk_gemm", fb->smem, &fb->gemm);
    if (st != MEMRA_STATUS_OK) return st;
    fp8blk_load_wgmma(q, fb, m);
    q->host->log(MEMRA_LOG_INFO, q->name, "%s: block-128 FP8 kernels for %s loaded; gemm_fp8_blk variant %s%s from %s",
                 caps->name ? caps->name : "device", q->target, memra__fp8blk_variant_name(fb->variant),
                 fb->wgmma_tma  ? ", wgmma 128x256 on tensor maps, warp-specialised"
                 : fb->wgmma_wide ? (fb->wide_always ? ", wgmma 128x256" : ", wgmma 128x128 / 128x256")
                 : fb->wgmma    ? (strcmp(fb->wgmma_name, "memra_k_fp8blk_wgmma") == 0 ? ", wgmma 128x128, CTA barriers"
                                                                                        : ", wgmma 128x128")
                 : fb->variant == MEMRA__FP8BLK_E4M3 ? ", mma.sync" : "",
                 fb->path);
    return MEMRA_STATUS_OK;
}

/* The fp8blk sources' knobs, process-wide, taken at the first init (also one
 * that then fails: the JIT sources a module declares follow them). */
static void fp8blk_knobs(const memra_host_services *host, const memra_device_caps *caps)
{
    if (MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL)
        memra__fp8blk_jit_configure(host->knob(caps, "MEMRA_FP8BLK_TILE"), host->knob(caps, "MEMRA_FP8BLK_JIT"));
}

static memra_status fp8blk_load(memra__gpu *q, void *state) { return fp8blk_load_cfg(q, state, &k_cfg_default); }
static memra_status fp8blk_mx_load(memra__gpu *q, void *state) { return fp8blk_load_cfg(q, state, &k_cfg_mx); }
static memra_status fp8blk_off_load(memra__gpu *q, void *state) { return fp8blk_load_cfg(q, state, &k_cfg_off_sm120); }

/* One tile variant's kernels from the JIT into *fb (fb->gemm stays NULL and why says why when it cannot). */
static void fp8blk_load_variant(memra__gpu *q, int i, fp8blk_state *fb, char *why, size_t len)
{
    const memra_device_caps *caps = q->caps;
    const memra__fp8blk_tile *t = memra__fp8blk_tile_variant(i);
    const memra_jit_source *src = memra__fp8blk_tile_variant_source(i);
    const char *no_jit = memra__gpu_jit_unavailable(q);
    const size_t smem = memra__fp8blk_tile_smem(t);
    memset(fb, 0, sizeof *fb);
    fb->variant = MEMRA__FP8BLK_E4M3;
    if (!memra__fp8blk_jit_enabled()) {
        snprintf(why, len, "gemm_fp8_blk: tile %dx%d needs the JIT (MEMRA_FP8BLK_JIT=0)", t->bm, t->bn);
        return;
    }
    if (no_jit != NULL) {
        snprintf(why, len, "gemm_fp8_blk: tile %dx%d needs the JIT (%.140s)", t->bm, t->bn, no_jit);
        return;
    }
    if (caps->smem_per_block_optin != 0 && caps->smem_per_block_optin < smem) {
        snprintf(why, len, "gemm_fp8_blk: tile %dx%d needs %zu bytes of shared memory", t->bm, t->bn, smem);
        return;
    }
    CUmodule m = NULL;
    double ms = 0.0;
    char jwhy[224];
    if (memra__gpu_jit_load(q, src, &m, &ms, jwhy, sizeof jwhy) != MEMRA_STATUS_OK) {
        snprintf(why, len, "gemm_fp8_blk: tile %dx%d: %.150s", t->bm, t->bn, jwhy);
        q->host->log(MEMRA_LOG_WARN, q->name, "%s", why);
        return;
    }
    fb->tile = *t;
    fb->threads = memra__fp8blk_tile_threads(t);
    fb->smem = (unsigned)smem;
    fb->path = "jit";
    if (memra__gpu_function(q, m, "memra_k_fp8blk_quant", 0, &fb->quant) != MEMRA_STATUS_OK ||
        memra__gpu_function(q, m, "memra_k_fp8blk_quant_given", 0, &fb->quant_given) != MEMRA_STATUS_OK ||
        memra__gpu_function(q, m, "memra_k_fp8blk_gemm", fb->smem, &fb->gemm) != MEMRA_STATUS_OK) {
        snprintf(why, len, "gemm_fp8_blk: tile %dx%d: the JIT image lacks its kernels", t->bm, t->bn);
        fb->gemm = NULL;
        return;
    }
    q->host->log(MEMRA_LOG_INFO, q->name, "gemm_fp8_blk: variant %s (tile %dx%d) served by the JIT, %.2f ms",
                 memra__fp8blk_tile_variants[i].name, t->bm, t->bn, ms);
}

static memra_status fp8blk_tiles_load(memra__gpu *q, void *state)
{
    fp8blk_tiles_state *ts = state;
    memra_status st = fp8blk_load_cfg(q, &ts->def, &k_cfg_default);
    if (st != MEMRA_STATUS_OK) return st;
    for (int i = 0; i < MEMRA__FP8BLK_TILE_VARIANTS; i++) fp8blk_load_variant(q, i, &ts->var[i], ts->why[i], sizeof ts->why[i]);
    return MEMRA_STATUS_OK;
}

const memra__gpu_family memra__gpu_family_fp8blk_tiles = {
    .name = "fp8blk_tiles", .state_size = sizeof(fp8blk_tiles_state), .load = fp8blk_tiles_load,
    .knobs = fp8blk_knobs};

const memra__gpu_family memra__gpu_family_fp8blk = {
    .name = "fp8blk", .state_size = sizeof(fp8blk_state), .load = fp8blk_load,
    .knobs = fp8blk_knobs};
const memra__gpu_family memra__gpu_family_fp8blk_mx = {
    .name = "fp8blk_mx", .state_size = sizeof(fp8blk_state), .load = fp8blk_mx_load,
    .knobs = fp8blk_knobs};
const memra__gpu_family memra__gpu_family_fp8blk_off_sm120 = {
    .name = "fp8blk (off)", .state_size = sizeof(fp8blk_state), .load = fp8blk_off_load,
    .knobs = fp8blk_knobs};

/* ---- gemm_fp8_blk ---------------------------------------------------------------- */

static memra_status gemm_fp8_blk(memra_call *call, const memra_gemm_args *a, const fp8blk_state *fb);

memra_status memra__mmq_gemm_fp8_blk(memra_call *call, const memra_gemm_args *a)
{
    return gemm_fp8_blk(call, a, fb_state(MMQ_OF(call)));
}

memra_status memra__mmq_gemm_fp8_blk_of(memra_call *call, const memra_gemm_args *a, const memra__gpu_family *family)
{
    return gemm_fp8_blk(call, a, memra__gpu_state(MMQ_OF(call), family));
}


/* A tensor map over an e4m3 matrix of `rows` rows of k bytes at addr, as the tensor-map tiles
 * read it: box 128 bytes x box_rows rows, 128-byte swizzle, rows past the end zero-filled.
 * 1 when the driver encoded it. */
static int fp8blk_tmap(const memra__gpu *q, memra__cu_tensor_map *map, memra_dptr addr, int64_t rows, int64_t k,
                       uint32_t box_rows)
{
    const uint64_t dims[2] = {(uint64_t)k, (uint64_t)rows}, stride[1] = {(uint64_t)k};
    const uint32_t box[2] = {128, box_rows}, es[2] = {1, 1};
    return q->cuTensorMapEncodeTiled(map, MEMRA__CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)(uintptr_t)addr, dims, stride,
                                     box, es, MEMRA__CU_TENSOR_MAP_INTERLEAVE_NONE, MEMRA__CU_TENSOR_MAP_SWIZZLE_128B,
                                     MEMRA__CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     MEMRA__CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == MEMRA__CU_SUCCESS;
}

memra_status memra__mmq_gemm_fp8_blk_tiles(memra_call *call, const memra_gemm_args *a)
{
    const fp8blk_tiles_state *ts = memra__gpu_state(MMQ_OF(call), &memra__gpu_family_fp8blk_tiles);
    const int v = MEMRA_HAS_MEMBER(call, memra_call, variant) ? call->variant : -1;
    if (ts == NULL) return memra__gpu_decline(call, "gemm_fp8_blk: no block-128 FP8 kernel loaded for this device");
    if (v < 0 || v >= MEMRA__FP8BLK_TILE_VARIANTS) return gemm_fp8_blk(call, a, &ts->def);
    if (ts->var[v].gemm == NULL) return memra__gpu_decline(call, ts->why[v][0] ? ts->why[v] : "gemm_fp8_blk: no kernel");
    return gemm_fp8_blk(call, a, &ts->var[v]);
}

static memra_status gemm_fp8_blk(memra_call *call, const memra_gemm_args *a, const fp8blk_state *fb)
{
    memra__gpu *q = MMQ_OF(call);
    if (fb == NULL) return memra__gpu_decline(call, "gemm_fp8_blk: no block-128 FP8 kernel loaded for this device");
    if (fb->gemm == NULL) return memra__gpu_decline(call, fb->decline ? fb->decline : "gemm_fp8_blk: no kernel");
    memra_status st = memra__gpu_check_gemm(q, "gemm_fp8_blk", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (a->k > 0 && a->w_scale_grid == 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_fp8_blk: w_scale_grid is NULL", q->name);
    if (a->k == 0) return memra__gpu_decline(call, "gemm_fp8_blk: k = 0 (nothing to accumulate)");
    if (a->k % 16 != 0) return memra__gpu_decline(call, "gemm_fp8_blk: in_f not a multiple of 16");
    if (!memra__gpu_aligned(a->w, 16) || !memra__gpu_aligned(a->x, 16)) return memra__gpu_decline(call, "gemm_fp8_blk: needs 16-byte aligned w and x");
    if (!memra__gpu_aligned(a->w_scale_grid, 4)) return memra__gpu_decline(call, "gemm_fp8_blk: needs a 4-byte aligned scale grid");
    const int bm = fb->tile.bm, bn = fb->tile.bn;
    if ((a->n + bn - 1) / bn > 65535) return memra__gpu_decline(call, "gemm_fp8_blk: n above 65535 tiles");
    int m = a->m, n = a->n, k = a->k;
    const int64_t nkb = ((int64_t)k + 127) / 128;
    memra_dptr xq = 0, xs = 0;
    st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_XQ, (size_t)((int64_t)m * k + 256), &xq);
    if (st == MEMRA_STATUS_OK) st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_XS, (size_t)(nkb * m * 4 + 256), &xs);
    if (st != MEMRA_STATUS_OK) return st;
    memra_dptr x = a->x;
    /* the activation's scales: the producer's maxima ([nkb x m], row fastest), else the static scale, else
     * the own amax pass (module.h, memra_gemm_args.x_amax) */
    const int has_given = MEMRA_HAS_MEMBER(a, memra_gemm_args, x_amax);
    memra_dptr amax = has_given ? a->x_amax : 0;
    float xsc = has_given ? a->x_scale : 0.0f;
    if (!isfinite(xsc) || xsc < 0.0f)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_fp8_blk: x_scale %g is negative or not finite",
                                  q->name, (double)xsc);
    if (amax != 0 && !memra__gpu_aligned(amax, 4))
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_fp8_blk: x_amax is not 4-byte aligned", q->name);
    const unsigned qgrid = (unsigned)((nkb * m + 8 * MEMRA_ROW128_U - 1) / (8 * MEMRA_ROW128_U));
    if (amax != 0 || xsc > 0.0f)
        st = memra__gpu_launch_ex(q, fb->quant_given, "memra_k_fp8blk_quant_given", qgrid, 1, 1, 256, 0, call->stream,
                                  (void *[]){&x, &m, &k, &xq, &xs, &amax, &xsc}, 0);
    else
        st = memra__gpu_launch_ex(q, fb->quant, "memra_k_fp8blk_quant", qgrid, 1, 1, 256, 0, call->stream,
                                  (void *[]){&x, &m, &k, &xq, &xs}, 0);
    if (st != MEMRA_STATUS_OK) return st;
    memra_dptr w = a->w, grid = a->w_scale_grid, y = memra__gpu_y_base(a);
    long long ldy = a->ldy;
    float alpha = a->alpha;
    if (fb->wgmma_tma != NULL && q->cuTensorMapEncodeTiled != NULL) {
        /* xq as [m rows x k bytes], w as [n x k], 128-byte swizzle, boxes 128 x 128 and 256 x 128 */
        memra__cu_tensor_map mx, mw;
        if (fp8blk_tmap(q, &mx, xq, m, k, FP8BLK_WG_BM) && fp8blk_tmap(q, &mw, w, n, k, 256))
            return memra__gpu_launch_ex(q, fb->wgmma_tma, "memra_k_fp8blk_wgmma_tma",
                                        (unsigned)((m + FP8BLK_WG_BM - 1) / FP8BLK_WG_BM), (unsigned)((n + 255) / 256),
                                        1, FP8BLK_TMA_THREADS, FP8BLK_WG_SMEM_BYTES_OF(2), call->stream,
                                        (void *[]){&mx, &mw, &grid, &xs, &y, &m, &n, &k, &ldy, &alpha}, 0);
        /* an encoding the driver refused: the 128 x 128 kernel below */
    }
    if (fb->wgmma_wide != NULL) {
        /* the wide tile reads a quarter fewer operand bytes per FLOP, but has half the tiles: taken where
         * they still fill four waves of the SMs (the last wave's idle share then stays under an eighth) */
        const int64_t tiles = (int64_t)((m + FP8BLK_WG_BM - 1) / FP8BLK_WG_BM) * ((n + 255) / 256);
        if (fb->wide_always || fb->wgmma == NULL || tiles >= 4 * (int64_t)(q->caps->sm_count > 0 ? q->caps->sm_count : 1))
            return memra__gpu_launch_ex(q, fb->wgmma_wide, "memra_k_fp8blk_wgmma_wide",
                                        (unsigned)((m + FP8BLK_WG_BM - 1) / FP8BLK_WG_BM), (unsigned)((n + 255) / 256),
                                        1, FP8BLK_WG_THREADS, FP8BLK_WG_SMEM_BYTES_OF(2), call->stream,
                                        (void *[]){&w, &grid, &xq, &xs, &y, &m, &n, &k, &ldy, &alpha}, 0);
    }
    if (fb->wgmma != NULL)
        return memra__gpu_launch_ex(q, fb->wgmma, fb->wgmma_name, (unsigned)((m + FP8BLK_WG_BM - 1) / FP8BLK_WG_BM),
                                    (unsigned)((n + FP8BLK_WG_BN - 1) / FP8BLK_WG_BN), 1, FP8BLK_WG_THREADS,
                                    fb->wgmma_smem, call->stream, (void *[]){&w, &grid, &xq, &xs, &y, &m, &n, &k, &ldy, &alpha}, 0);
    return memra__gpu_launch_ex(q, fb->gemm, "memra_k_fp8blk_gemm", (unsigned)((m + bm - 1) / bm),
                                (unsigned)((n + bn - 1) / bn), 1, fb->threads, fb->smem, call->stream,
                                (void *[]){&w, &grid, &xq, &xs, &y, &m, &n, &k, &ldy, &alpha}, 0);
}

/* ---- gemm_experts (issue 30) --------------------------------------------------------
 * Lane gemm_fp8_blk (module.h, memra_gemm_experts_args: a->w and a->w_scale_grid
 * are device tables of E pointers, each expert's e4m3 [n x k] and its f32
 * block-128 grid), on cc 9.0 where a warpgroup kernel serves gemm_fp8_blk. Three
 * or four launches of fixed shape for a given m, no host read, capturable:
 *   memra_k_fp8blk_experts_route       (1 x 1024) offsets, the permutation, the
 *                                      table of 128-row tiles and the table of 64-row
 *                                      remainder tiles, in scratch;
 *   memra_k_fp8blk_quant_sorted(_given) the activation quantised per row per 128
 *                                      columns in expert order (sorted row s = x row
 *                                      perm[s]: each expert's rows contiguous), grid
 *                                      sized for all m rows; _given with a static
 *                                      x_scale (x_amax is ignored: module.h);
 *   memra_k_fp8blk_experts_wgmma       the grouped 128 x 128 tile on (ceil(n / 128),
 *                                      tiles_max), CTAs past the table's count exiting;
 *                                      outputs scattered to y[perm[s]];
 *                                      (MEMRA_FP8BLK_XE_WIDE=1: memra_k_fp8blk_experts_wgmma_wide,
 *                                      the same table on 128 x 256, ceil(n / 256) columns;
 *                                      MEMRA_FP8BLK_XE_ONE=1 (all: at any mean), where the mean expert has at
 *                                      least 128 rows: memra_k_fp8blk_experts_wgmma_t on one
 *                                      table of 128-row tiles, tile-major (ceil(n / 128) on
 *                                      grid.y), an expert's tiles side by side on the same
 *                                      weight rows, no remainder launch);
 *   memra_k_fp8blk_experts_wgmma64     the 64 x 128 tile (one warpgroup, two CTAs an SM)
 *                                      on (ceil(n / 128), tiles2_max) for the second
 *                                      table: an expert whose rows past its 128-row
 *                                      tiles number 1 .. 64 takes one 64-row tile for
 *                                      them, so a tile wastes at most 63 rows, not 127
 *                                      (Qwen3-like routing, E 128 top-8, ~32 rows an
 *                                      expert, ran three-quarters-empty 128-row tiles).
 * Grids by the worst case: with the second table every 128-row tile holds more than
 * 64 rows, tiles_max = min(ceil(m / 128) + E, floor(m / 65)), tiles2_max = min(E, m);
 * without it (the 64-row kernel not loaded) tiles_max = min(ceil(m / 128) + E, m) (an
 * expert of c rows takes ceil(c / 128) <= c / 128 + 1 tiles, each holds a row). A
 * launch whose worst case is 0 tiles is skipped (m < 65: no 128-row tile). The two
 * grouped launches write different rows of y. Plain stream-ordered launches (no
 * programmatic dependents yet). Each output equals the dense gemm_fp8_blk lane's (any
 * of its warpgroup kernels) for the expert's rows, bit for bit: both tiles run
 * wg_mb_tile's per-row wgmmas and fold. Each expert's operand must be 16-byte aligned
 * (the core's tables and memra check's are). */
/* Lane gemm_fp8's activation in expert order at each expert's own amax (the host's per-batch
 * scale of that expert's rows): the maxima zeroed, memra_k_fp8blk_experts_amax into them,
 * _expand to one value a sorted row, then the quantiser at those maxima. */
static memra_status fp8blk_experts_pt_quant(memra__gpu *q, const fp8blk_state *fb, memra_call *call, memra_dptr x,
                                            memra_dptr ids, memra_dptr perm, memra_dptr offsets, int E, int m, int k,
                                            memra_dptr xq, memra_dptr xs, unsigned qgrid)
{
    memra_dptr am = 0;
    const size_t b_am = ((size_t)E * 4 + 15) / 16 * 16;
    memra_status st = q->host->scratch_get(call, MEMRA__FP8BLK_SLOT_AMAX, b_am + (size_t)m * 4 + 16, &am);
    if (st != MEMRA_STATUS_OK) return st;
    memra_dptr ar = am + b_am;
    const CUresult rz = q->cu.cuMemsetD32Async(am, 0, (size_t)E, (CUstream)call->stream);
    if (rz != MEMRA__CU_SUCCESS) return memra__cu_fail(q->host, &q->cu, q->name, rz, "cuMemsetD32Async (expert maxima)");
    const unsigned rows_blocks = (unsigned)((m + 7) / 8 < 4096 ? (m + 7) / 8 : 4096); /* a warp a row, 8 a block */
    const unsigned exp_blocks = (unsigned)((m + 255) / 256 < 4096 ? (m + 255) / 256 : 4096);
    st = memra__gpu_launch_ex(q, fb->xe_pt_amax, "memra_k_fp8blk_experts_amax", rows_blocks, 1, 1, 256, 0, call->stream,
                              (void *[]){&x, &ids, &perm, &offsets, &E, &k, &am}, 0);
    if (st == MEMRA_STATUS_OK)
        st = memra__gpu_launch_ex(q, fb->xe_pt_expand, "memra_k_fp8blk_experts_expand", exp_blocks, 1, 1, 256, 0,
                                  call->stream, (void *[]){&ids, &perm, &offsets, &E, &am, &ar}, 0);
    if (st == MEMRA_STATUS_OK)
        st = memra__gpu_launch_ex(q, fb->xe_pt_quant, "memra_k_fp8blk_quant_sorted_amax", qgrid, 1, 1, 256, 0,
                                  call->stream, (void *[]){&x, &perm, &offsets, &E, &m, &k, &xq, &xs, &ar}, 0);
    return st;
}

memra_status memra__fp8blk_gemm_experts(memra_call *call, const memra_gemm_args *a, const memra_gemm_experts_args *ex)
{
    memra__gpu *q = MMQ_OF(call);
    const fp8blk_state *fb = fb_state(q);
    if (ex == NULL || !MEMRA_HAS_MEMBER(ex, memra_gemm_experts_args, w_scales))
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: experts args missing or too small",
                                  q->name);
    const int pt = ex->lane == MEMRA_OP_gemm_fp8; /* per-tensor e4m3 experts */
    if (pt && (fb == NULL || fb->xe_pt == NULL))
        return memra__gpu_decline(call, "gemm_experts: lane gemm_fp8 is off (MEMRA_FP8BLK_XE_PT=0) or did not load");
    if (ex->lane != MEMRA_OP_gemm_fp8_blk && !pt)
        return memra__gpu_decline(call, "gemm_experts: this module serves the gemm_fp8_blk and gemm_fp8 lanes only");
    if (fb == NULL || fb->xe_gemm == NULL)
        return memra__gpu_decline(call, "gemm_experts: the grouped block-128 kernel needs sm_90a's warpgroup kernels "
                                        "(cc 9.0, MEMRA_FP8BLK_WGMMA not 0)");
    memra_status st = memra__gpu_check_gemm(q, "gemm_experts", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (ex->n_experts < 1)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: n_experts = %d", q->name,
                                  (int)ex->n_experts);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (ex->ids == 0) return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: ids is NULL", q->name);
    if (a->k > 0 && !pt && a->w_scale_grid == 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: w_scale_grid (the grids' table) is NULL",
                                  q->name);
    if (pt && ex->w_scales == 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                  "%s.gemm_experts: lane gemm_fp8 needs w_scales (the experts' weight scales)", q->name);
    const int has_given = MEMRA_HAS_MEMBER(a, memra_gemm_args, x_amax);
    float xsc = has_given ? a->x_scale : 0.0f;
    if (!isfinite(xsc) || xsc < 0.0f)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: x_scale %g is negative or not finite",
                                  q->name, (double)xsc);
    if (a->k == 0) return memra__gpu_decline(call, "gemm_experts: k = 0 (nothing to accumulate)");
    if (a->k % 16 != 0) return memra__gpu_decline(call, "gemm_experts: in_f not a multiple of 16");
    if (a->x_is_f16) return memra__gpu_decline(call, "gemm_experts: the block-128 lane reads an f32 activation");
    if (!memra__gpu_aligned(a->x, 16) || !memra__gpu_aligned(a->w, 8) || !memra__gpu_aligned(a->w_scale_grid, 8))
        return memra__gpu_decline(call, "gemm_experts: needs a 16-byte aligned x and 8-byte aligned expert tables");
    const int32_t E = ex->n_experts;
    if (E > FP8BLK_XE_MAX) return memra__gpu_decline(call, "gemm_experts: more than 4096 experts (the routing kernel's shared memory)");
    int m = a->m, n = a->n, k = a->k, ee = E;
    const int64_t nkb = ((int64_t)k + 127) / 128;
    /* the one-table tile-major launch where the mean expert fills a 128-row tile (Mixtral-like rows:
     * each expert's weight then streams once, its remainder tile reading it from L2); below that
     * (Qwen3-like, ~32 rows an expert) the 64-row remainder tiles' two CTAs an SM do better */
    /* MEMRA_FP8BLK_XE_TMA=1: one table of 128-row tiles on the tensor-map tile (its maps encoded here) */
    const int tma = !pt && fb->xe_tma != NULL && ((int64_t)a->n + 127) / 128 <= 65535;
    /* MEMRA_FP8BLK_XE_TMA64=1: the two tables, the 128-row one on the tensor-map tile and the
     * experts' last 1 .. 64 rows on the 64-row cp.async tile (two CTAs an SM), instead of one
     * table whose second, nearly empty 128-row tiles add a wave (run v: the Mixtral rows at m = 512) */
    const int tma64 = tma && fb->xe_tma64 && fb->xe_gemm64 != NULL;
    const int one = pt || (tma && !tma64) ||
                    (fb->xe_one != NULL && (fb->xe_one_all || (int64_t)a->m >= 128 * (int64_t)E) &&
                     ((int64_t)a->n + 127) / 128 <= 65535);
    if (pt && ((int64_t)a->n + 127) / 128 > 65535)
        return memra__gpu_decline(call, "gemm_experts: lane gemm_fp8: more than 65535 column blocks");
    const int two = !one && fb->xe_gemm64 != NULL;
    /* MEMRA_FP8BLK_XE_TALL=1 (opt-in): one table of 256-row tiles on the 256 x 128 persistent tile,
     * unless an opt-in split or prefetch was asked for (those keep their tile) */
    int tall = tma && !tma64 && fb->xe_tall != NULL && fb->xe_tma_split == NULL && fb->xe_tma_pf == NULL;
    /* the tables' buffers and the fallbacks below keep the 128-row tiles' bound; the tall grid its own */
    int64_t tiles_max = ((int64_t)m + FP8BLK_WG_BM - 1) / FP8BLK_WG_BM + E;
    const int64_t tiles_tall = ((int64_t)m + 255) / 256 + E < m ? ((int64_t)m + 255) / 256 + E : m;
    const int64_t tiles_cap = two ? (int64_t)m / 65 : (int64_t)m;
    if (tiles_max > tiles_cap) tiles_max = tiles_cap;
    const int64_t tiles2_max = !two ? 0 : E < m ? E : m;
    if (tiles_max > 65535 || tiles2_max > 65535) return memra__gpu_decline(call, "gemm_experts: more than 65535 row tiles");
    const size_t b_off = ((size_t)E + 1) * 4, b_perm = (size_t)m * 4, b_tiles = (size_t)tiles_max * 8;
    const size_t b_tiles2 = (size_t)tiles2_max * 8;
    const size_t o_perm = (b_off + 15) / 16 * 16, o_tiles = o_perm + (b_perm + 15) / 16 * 16;
    const size_t o_tiles2 = o_tiles + (b_tiles + 15) / 16 * 16, o_n = o_tiles2 + (b_tiles2 + 15) / 16 * 16;
    memra_dptr xq = 0, xs = 0, p = 0;
    st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_XQ, (size_t)((int64_t)m * k + 256), &xq);
    if (st == MEMRA_STATUS_OK) st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_XS, (size_t)(nkb * m * 4 + 256), &xs);
    if (st == MEMRA_STATUS_OK) st = q->host->scratch_get(call, MEMRA__FP8BLK_SLOT_ROUTE, o_n + 32, &p);
    if (st != MEMRA_STATUS_OK) return st;
    memra_dptr offsets = p, perm = p + o_perm, tiles = p + o_tiles, ntiles = p + o_n;
    memra_dptr tiles2 = two ? p + o_tiles2 : 0, ntiles2 = two ? p + o_n + 16 : 0;
    if (tall && tiles_max > 0) {
        /* the 256-row table only where the tall tile will run: its maps' scratch and encodings (the
         * same as below) checked first, since the cp.async fallbacks read 128-row tables */
        memra_dptr mp = 0;
        memra__cu_tensor_map t1, t2;
        if (q->host->scratch_get(call, MEMRA__FP8BLK_SLOT_MAPS, (size_t)E * 128 + 128, &mp) != MEMRA_STATUS_OK ||
            !fp8blk_tmap(q, &t1, xq, m, k, 256u) || !fp8blk_tmap(q, &t2, xq, n, k, 128u))
            tall = 0;
    }
    memra_dptr ids = ex->ids, x = a->x, w = a->w, grid = a->w_scale_grid, y = memra__gpu_y_base(a);
    long long ldy = a->ldy;
    float alpha = a->alpha;
    st = memra__gpu_launch_ex(q, tall ? fb->xe_route_tall : fb->xe_route,
                              tall ? "memra_k_fp8blk_experts_route_tall" : "memra_k_fp8blk_experts_route", 1, 1, 1, 1024,
                              0, call->stream,
                              (void *[]){&ids, &m, &ee, &offsets, &perm, &tiles, &ntiles, &tiles2, &ntiles2}, 0);
    if (st != MEMRA_STATUS_OK) return st;
    const unsigned qgrid = (unsigned)((nkb * m + 8 * MEMRA_ROW128_U - 1) / (8 * MEMRA_ROW128_U));
    /* xe_quant's own grid: 8 warps a block, xe_qu items a warp (the given and per-tensor quantisers keep 4) */
    const int qu = fb->xe_qu;
    const unsigned qgrid_q = (unsigned)((nkb * m + 8 * qu - 1) / (8 * qu));
    if (xsc > 0.0f)
        st = memra__gpu_launch_ex(q, fb->xe_quant_given, "memra_k_fp8blk_quant_sorted_given", qgrid, 1, 1, 256, 0,
                                  call->stream, (void *[]){&x, &perm, &offsets, &ee, &m, &k, &xq, &xs, &xsc}, 0);
    else if (pt)
        st = fp8blk_experts_pt_quant(q, fb, call, x, ids, perm, offsets, ee, m, k, xq, xs, qgrid);
    else
        st = memra__gpu_launch_ex(q, fb->xe_quant,
                                  qu == 8 ? "memra_k_fp8blk_quant_sorted8" : "memra_k_fp8blk_quant_sorted", qgrid_q, 1,
                                  1, 256, 0, call->stream,
                                  (void *[]){&x, &perm, &offsets, &ee, &m, &k, &xq, &xs}, 0);
    if (st != MEMRA_STATUS_OK) return st;
    const unsigned nx = (unsigned)((n + FP8BLK_WG_BN - 1) / FP8BLK_WG_BN);
    if (pt) /* the weights' per-tensor scales where the block lane's grids go */
        grid = ex->w_scales;
    if (tma && tiles_max > 0) {
        /* xq (expert order) as [m rows x k bytes] with the dense TMA kernel's box and swizzle; the
         * weights' template the same over an expert's [n x k] (any aligned address: each expert's
         * is put in by experts_maps), box 128 nh rows x 128 */
        memra__cu_tensor_map mx, mt;
        memra_dptr maps = 0;
        /* the 128-wide tile where the 256-wide grid (tiles_max row tiles, an upper bound, times its
         * column tiles) is under four CTAs an SM, unless an opt-in split, prefetch or 64-row table
         * (MEMRA_FP8BLK_XE_TMA64=1) was asked for: those keep the width they were measured at */
        const int64_t sms = q->caps->sm_count > 0 ? q->caps->sm_count : 16; /* unknown: as the other modules guess */
        const int narrow = !two && !tall && fb->xe_tma_nh == 2 && fb->xe_tma128 != NULL && fb->xe_tma_split == NULL &&
                           fb->xe_tma_pf == NULL && tiles_max * (((int64_t)n + 255) / 256) < 4 * sms;
        const int nh = narrow || tall ? 1 : fb->xe_tma_nh;
        if (q->host->scratch_get(call, MEMRA__FP8BLK_SLOT_MAPS, (size_t)E * 128 + 128, &maps) == MEMRA_STATUS_OK &&
            fp8blk_tmap(q, &mx, xq, m, k, tall ? 256u : FP8BLK_WG_BM) &&
            fp8blk_tmap(q, &mt, xq, n, k, 128u * (uint32_t)nh)) {
            maps = (maps + 127) / 128 * 128;
            st = memra__gpu_launch_ex(q, fb->xe_maps, "memra_k_fp8blk_experts_maps", (unsigned)((E + 3) / 4), 1, 1, 128,
                                      0, call->stream, (void *[]){&mt, &w, &ee, &maps}, 0);
            if (st != MEMRA_STATUS_OK) return st;
            const char *kname = nh == 2        ? "memra_k_fp8blk_experts_tma"
                                : fb->xe_pipe ? "memra_k_fp8blk_experts_tma_n128p"
                                              : "memra_k_fp8blk_experts_tma_n128";
            const unsigned cols = (unsigned)((n + 128 * nh - 1) / (128 * nh));
            const unsigned smem = tall      ? FP8BLK_WG_TALL_SMEM_BYTES
                                  : nh == 1 ? FP8BLK_WG_SMEM_BYTES_OF(1)
                                            : FP8BLK_WG_SMEM_BYTES_OF(2);
            /* MEMRA_FP8BLK_XE_SPLIT=S (opt-in, one table only): the k blocks in S slices, each CTA's raw
             * sums to part, memra_k_fp8blk_experts_sum adding them in slice order into y (a split in
             * the table's last wave for the long-k rows; not yet timed). No scratch (a capture without
             * a reservation for it): unsplit */
            int ks = !two && !narrow && fb->xe_tma_split != NULL && fb->xe_split > 1 ? fb->xe_split : 1;
            if (ks > nkb) ks = (int)nkb;
            while (ks > 1 && (double)ks * (double)m * (double)n * 4.0 > FP8BLK_XE_PART_MAX) ks--; /* the scratch's cap */
            memra_dptr part = 0;
            if (ks > 1 && q->host->scratch_get(call, MEMRA__FP8BLK_SLOT_PART, (size_t)ks * (size_t)m * (size_t)n * 4 + 256,
                                               &part) != MEMRA_STATUS_OK)
                ks = 1;
            /* MEMRA_FP8BLK_XE_PF (opt-in, unsplit): the same tile with the weight's L2 prefetch */
            CUfunction fn = narrow ? fb->xe_tma128 : fb->xe_tma;
            unsigned gx = (unsigned)tiles_max, gy = cols;
            int rg = 0; /* the persistent walk's raster group (0: plain) */
            if (ks > 1) { /* never with narrow (ks is 1 there; a split or prefetch tile keeps the width) */
                fn = fb->xe_tma_split;
                kname = "memra_k_fp8blk_experts_tma_split";
            } else if (fb->xe_tma_pf != NULL) {
                fn = fb->xe_tma_pf;
                kname = fb->xe_pf == 4 ? "memra_k_fp8blk_experts_tma_pf4" : "memra_k_fp8blk_experts_tma_pf8";
            } else if (tall) {
                /* MEMRA_FP8BLK_XE_TALL=1: the 256 x 128 persistent tile, a CTA an SM */
                fn = fb->xe_tall;
                kname = "memra_k_fp8blk_experts_tma_tall";
                const int64_t all = tiles_tall * (int64_t)cols;
                gx = (unsigned)(all < sms ? all : sms);
                gy = 1;
            } else if (fb->xe_tma_p[nh - 1] != NULL) {
                /* the default (off with MEMRA_FP8BLK_XE_PERSIST=0): a CTA an SM (at most one a tile) walking the tiles */
                fn = fb->xe_tma_p[nh - 1];
                static const char *const pnames[2][3] = {
                    {"memra_k_fp8blk_experts_tma_n128gp", "memra_k_fp8blk_experts_tma_n128gph1",
                     "memra_k_fp8blk_experts_tma_n128gph2"},
                    {"memra_k_fp8blk_experts_tma_gsp", "memra_k_fp8blk_experts_tma_gsph1",
                     "memra_k_fp8blk_experts_tma_gsph2"}};
                kname = nh == 2 && fb->xe_half ? "memra_k_fp8blk_experts_tma_gsp_half"
                                                : pnames[nh - 1][fb->xe_tma_p_l2[nh - 1] ? fb->xe_l2 : 0];
                rg = fb->xe_raster > 0 ? fb->xe_raster : fb->xe_raster < 0 && (int64_t)m >= 384 * (int64_t)E ? 8 : 0;
                const int64_t all = tiles_max * (int64_t)cols, cap = fb->xe_ctas > 0 && fb->xe_ctas < sms ? fb->xe_ctas : sms;
                gx = (unsigned)(all < cap ? all : cap);
                gy = 1;
            } else if (!narrow && fb->xe_tma_gs != NULL) { /* MEMRA_FP8BLK_XE_PERSIST=0: the grid's scales via the stages */
                fn = fb->xe_tma_gs;
                kname = "memra_k_fp8blk_experts_tma_gs";
            }
            /* (rg: the persistent and tall tiles' last argument; the others take 15 and read no further) */
            st = memra__gpu_launch_ex(q, fn, kname, gx, gy, (unsigned)ks, FP8BLK_TMA_THREADS, smem, call->stream,
                                      (void *[]){&mx, &maps, &grid, &xs, &offsets, &perm, &tiles, &ntiles, &y, &m, &n,
                                                 &k, &ldy, &alpha, &part, &rg},
                                      0);
            if (st == MEMRA_STATUS_OK && ks > 1) {
                const unsigned sx = (unsigned)((n + 255) / 256), sy = (unsigned)(m < 1024 ? m : 1024);
                st = memra__gpu_launch_ex(q, fb->xe_sum, "memra_k_fp8blk_experts_sum", sx, sy, 1, 256, 0, call->stream,
                                          (void *[]){&part, &ks, &m, &n, &offsets, &ee, &perm, &y, &ldy, &alpha}, 0);
            }
            if (st != MEMRA_STATUS_OK || !two) return st;
            return memra__gpu_launch_ex(q, fb->xe_gemm64, "memra_k_fp8blk_experts_wgmma64", nx, (unsigned)tiles2_max, 1,
                                        FP8BLK_XE64_THREADS, FP8BLK_XE64_SMEM_BYTES, call->stream,
                                        (void *[]){&w, &grid, &xq, &xs, &offsets, &perm, &tiles2, &ntiles2, &y, &m, &n,
                                                   &k, &ldy, &alpha},
                                        0);
        }
        /* no scratch or a refused encoding: the table(s) on the cp.async tiles below (one table of
         * 128-row tiles built with two == 0 on xe_wide / xe_gemm, CTAs past the count exiting; with
         * MEMRA_FP8BLK_XE_TMA64=1 the two tables as without the tensor-map tile; never with the
         * tall tile's 256-row table: its maps were checked before the routing) */
    }
    if (one && !tma)
        return tiles_max <= 0 ? MEMRA_STATUS_OK
                              : memra__gpu_launch_ex(q, pt ? fb->xe_pt : fb->xe_one,
                                                     pt ? "memra_k_fp8blk_experts_wgmma_pt" : "memra_k_fp8blk_experts_wgmma_t",
                                                     (unsigned)tiles_max, nx, 1, FP8BLK_WG_THREADS,
                                                     FP8BLK_WG_SMEM_BYTES_OF(1), call->stream,
                                                     (void *[]){&w, &grid, &xq, &xs, &offsets, &perm, &tiles, &ntiles,
                                                                &y, &m, &n, &k, &ldy, &alpha},
                                                     0);
    const int nh = fb->xe_wide != NULL ? 2 : 1; /* the 128-row tiles' width in 128-column halves */
    if (tiles_max > 0)
        st = memra__gpu_launch_ex(q, nh == 2 ? fb->xe_wide : fb->xe_gemm,
                                  nh == 2 ? "memra_k_fp8blk_experts_wgmma_wide" : "memra_k_fp8blk_experts_wgmma",
                                  (unsigned)((n + nh * FP8BLK_WG_BN - 1) / (nh * FP8BLK_WG_BN)), (unsigned)tiles_max, 1,
                                  FP8BLK_WG_THREADS, FP8BLK_WG_SMEM_BYTES_OF(nh), call->stream,
                                  (void *[]){&w, &grid, &xq, &xs, &offsets, &perm, &tiles, &ntiles, &y, &m, &n, &k, &ldy,
                                             &alpha},
                                  0);
    if (st != MEMRA_STATUS_OK || !two) return st;
    return memra__gpu_launch_ex(q, fb->xe_gemm64, "memra_k_fp8blk_experts_wgmma64", nx, (unsigned)tiles2_max, 1,
                                FP8BLK_XE64_THREADS, FP8BLK_XE64_SMEM_BYTES, call->stream,
                                (void *[]){&w, &grid, &xq, &xs, &offsets, &perm, &tiles2, &ntiles2, &y, &m, &n, &k, &ldy,
                                           &alpha},
                                0);
}
