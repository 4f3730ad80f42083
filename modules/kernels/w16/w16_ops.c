/* The w16 family (w16.cu, sm_90a): op gemm_w16, the fused-dequant f16 tile on the W16 operand (module.h
 * memra_w16_off). Argument checks (the host reference's), declines for what the tile does not take, the plan
 * (token tile, split-k), scratch, launches on call->stream:
 *   1. memra_k_w16_x16: x f32 -> the f16 token tiles in scratch (MEMRA__W16_SLOT_X16); x f16 (x_is_f16):
 *      memra_k_w16_x16h moves it into them;
 *   2. memra_k_w16_<fmt>_n<BN>: the tile, into y, or with split-k into the slices' partial sums
 *      (MEMRA__W16_SLOT_PART);
 *   3. with split-k, memra_k_w16_sum: the slices added in slice order, times alpha, into y.
 * And gemm_experts on lane gemm_w16 (memra__gpu_w16_experts below: the same tile over a routing table).
 * Knobs (read at load): MEMRA_W16 (unset or 0, the default: no image loaded, every call declines; auto, 1: loaded),
 * MEMRA_W16_TILE (auto | 64 | 128 | 160 | 256; 64 and 160 the grouped tile's only), MEMRA_W16_SPLIT (auto = waves
 * | fill | 1..16), MEMRA_W16_XE_RASTER (auto, the default | 0 | 1..64). */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

#define W16_OF(call) ((memra__gpu *)(call)->module_ctx)
#define MEMRA__W16_SLOT_X16 "w16.x16"   /* the activation as f16 token tiles */
#define MEMRA__W16_SLOT_PART "w16.part" /* split-k's partial sums, [slices][m][n] f32 */
#define MEMRA__W16_SLOT_ROUTE "w16.route" /* gemm_experts: the tile count, the table, offsets, permutation */
#define W16_XE_MAX 4096                   /* w16.cu's routing kernel: its shared counters */
/* w16_tile.cuh's constants: rows a CTA, k a step, the stages' dynamic shared memory (w16_smem<BN>: 4 stages of
 * 8192 + 512 + BN x 128 bytes, + 1024): BN 256 and 128 (one CTA an SM) take the 256-token size, the grouped
 * tile's BN 64 (two CTAs an SM) its own */
#define W16_BM 128
#define W16_BK 64
#define W16_SMEM_BYTES (4u * 41472u + 1024u)
#define W16_SMEM_N64 (4u * 16896u + 1024u)
#define W16_SMEM_N160 (4u * 29184u + 1024u)
#define W16_THREADS 384
#define W16_XE_RASTER_AUTO 8 /* MEMRA_W16_XE_RASTER=auto's group (rows of at least 16 token tiles) */

typedef struct memra__w16_state {
    CUfunction tile[2][5]; /* [BN 256, 128][Q8_0, Q4_0, Q4_K, Q6_K, Q5_K] */
    CUfunction x16, x16h, sum;
    CUfunction xe_tile[4][5]; /* the grouped tile: [BN 256, 128, 64, 160][the formats as tile's] */
    CUfunction xe_route, xe_x16, xe_sum;
    CUfunction xe_fit[5]; /* MEMRA_W16_XE_FIT=1: the 160-token tile with its wgmmas' width by the tile's rows */
    int tile_knob;  /* 0 auto, else 256 / 128 (and 64, 160: the grouped tile only) */
    int split_knob; /* -1 waves (auto, the default: dense calls; grouped ones take fill), 0 fill, else 1..16 */
    int raster;     /* MEMRA_W16_XE_RASTER: -1 auto, 0 the (token tiles, row tiles) grid, else its group of token tiles */
    int off;        /* MEMRA_W16=0: nothing loaded */
    int fit;        /* MEMRA_W16_XE_FIT=1: xe_fit loaded, taken where the grouped call's tile is 160 */
} memra__w16_state;

static const char *const k_tile_names[2][5] = {
    {"memra_k_w16_q8_0_n256", "memra_k_w16_q4_0_n256", "memra_k_w16_q4_k_n256", "memra_k_w16_q6_k_n256",
     "memra_k_w16_q5_k_n256"},
    {"memra_k_w16_q8_0_n128", "memra_k_w16_q4_0_n128", "memra_k_w16_q4_k_n128", "memra_k_w16_q6_k_n128",
     "memra_k_w16_q5_k_n128"},
};
static const char *const k_xe_names[4][5] = {
    {"memra_k_w16_xe_q8_0_n256", "memra_k_w16_xe_q4_0_n256", "memra_k_w16_xe_q4_k_n256", "memra_k_w16_xe_q6_k_n256",
     "memra_k_w16_xe_q5_k_n256"},
    {"memra_k_w16_xe_q8_0_n128", "memra_k_w16_xe_q4_0_n128", "memra_k_w16_xe_q4_k_n128", "memra_k_w16_xe_q6_k_n128",
     "memra_k_w16_xe_q5_k_n128"},
    {"memra_k_w16_xe_q8_0_n64", "memra_k_w16_xe_q4_0_n64", "memra_k_w16_xe_q4_k_n64", "memra_k_w16_xe_q6_k_n64",
     "memra_k_w16_xe_q5_k_n64"},
    {"memra_k_w16_xe_q8_0_n160", "memra_k_w16_xe_q4_0_n160", "memra_k_w16_xe_q4_k_n160", "memra_k_w16_xe_q6_k_n160",
     "memra_k_w16_xe_q5_k_n160"},
};
static const unsigned k_xe_smem[4] = {W16_SMEM_BYTES, W16_SMEM_BYTES, W16_SMEM_N64, W16_SMEM_N160};
static const char *const k_xe_fit_names[5] = {"memra_k_w16_xe_q8_0_n160f", "memra_k_w16_xe_q4_0_n160f",
                                              "memra_k_w16_xe_q4_k_n160f", "memra_k_w16_xe_q6_k_n160f",
                                              "memra_k_w16_xe_q5_k_n160f"};

static memra_status w16_load(memra__gpu *gpu, void *state)
{
    memra__w16_state *s = state;
    /* MEMRA_W16 unset or 0 (the default: the brief's dispatcher puts a quantised weight without a mirror on the
     * integer floor; W16 is opt-in): no image, every call declines */
    const char *on = memra__gpu_knob(gpu, "MEMRA_W16");
    if (on == NULL || strcmp(on, "0") == 0) {
        s->off = 1;
        return MEMRA_STATUS_OK;
    }
    CUmodule m;
    memra_status st = memra__gpu_image_load(gpu, "w16", &m);
    for (int b = 0; b < 2 && st == MEMRA_STATUS_OK; b++)
        for (int f = 0; f < 5 && st == MEMRA_STATUS_OK; f++)
            st = memra__gpu_function(gpu, m, k_tile_names[b][f], W16_SMEM_BYTES, &s->tile[b][f]);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_w16_x16", 0, &s->x16);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_w16_x16h", 0, &s->x16h);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_w16_sum", 0, &s->sum);
    for (int b = 0; b < 4 && st == MEMRA_STATUS_OK; b++)
        for (int f = 0; f < 5 && st == MEMRA_STATUS_OK; f++)
            st = memra__gpu_function(gpu, m, k_xe_names[b][f], k_xe_smem[b], &s->xe_tile[b][f]);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_w16_route", 0, &s->xe_route);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_w16_x16g", 0, &s->xe_x16);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(gpu, m, "memra_k_w16_sumg", 0, &s->xe_sum);
    if (st != MEMRA_STATUS_OK) return st;
    const char *t = memra__gpu_knob(gpu, "MEMRA_W16_TILE"), *z = memra__gpu_knob(gpu, "MEMRA_W16_SPLIT");
    s->tile_knob = t != NULL && strcmp(t, "auto") != 0 ? atoi(t) : 0;
    s->split_knob = z == NULL || strcmp(z, "auto") == 0 || strcmp(z, "waves") == 0 ? -1
                    : strcmp(z, "fill") == 0                                         ? 0
                                                                                     : atoi(z);
    const char *rs = memra__gpu_knob(gpu, "MEMRA_W16_XE_RASTER");
    s->raster = rs == NULL || strcmp(rs, "auto") == 0 ? -1 : atoi(rs);
    /* MEMRA_W16_XE_FIT=1: the twins, where the image has all five (else a warning, and the plain 160-token tile) */
    const char *ft = memra__gpu_knob(gpu, "MEMRA_W16_XE_FIT");
    s->fit = ft != NULL && strcmp(ft, "1") == 0;
    for (int f = 0; f < 5 && s->fit; f++) {
        if (!memra__gpu_has_kernel(gpu, m, k_xe_fit_names[f])) {
            gpu->host->log(MEMRA_LOG_WARN, gpu->name,
                           "gemm_experts: MEMRA_W16_XE_FIT=1 but the w16 image has no %s (the plain 160-token tile "
                           "serves)",
                           k_xe_fit_names[f]);
            s->fit = 0;
        }
    }
    for (int f = 0; f < 5 && s->fit; f++) {
        st = memra__gpu_function(gpu, m, k_xe_fit_names[f], W16_SMEM_N160, &s->xe_fit[f]);
        if (st != MEMRA_STATUS_OK) return st;
    }
    if (s->fit)
        gpu->host->log(MEMRA_LOG_INFO, gpu->name,
                       "gemm_experts: MEMRA_W16_XE_FIT=1: the 160-token grouped tile sizes its wgmmas by its rows "
                       "(memra_k_w16_xe_<fmt>_n160f)");
    return MEMRA_STATUS_OK;
}

const memra__gpu_family memra__gpu_family_w16 = {.name = "w16", .state_size = sizeof(memra__w16_state), .load = w16_load};

/* The format's index in the tile table, -1 for another */
static int fmt_index(int32_t f)
{
    switch (f) {
    case MEMRA_FORMAT_Q8_0: return 0;
    case MEMRA_FORMAT_Q4_0: return 1;
    case MEMRA_FORMAT_Q4_K: return 2;
    case MEMRA_FORMAT_Q6_K: return 3;
    case MEMRA_FORMAT_Q5_K: return 4;
    default: return -1;
    }
}

/* The token tile: 128 where m <= 2048 and the 256-token grid would leave its last wave under 80% full, else
 * 256 (the knob overrides) */
static int tile_for(int64_t m, int64_t row_tiles, int64_t sms, int knob)
{
    if (knob == 128 || knob == 256) return knob;
    const int64_t c256 = (m + 255) / 256 * row_tiles, waves = (c256 + sms - 1) / sms;
    return m <= 2048 && (double)c256 / (double)(waves * sms) < 0.8 ? 128 : 256;
}

/* split-k's slices (MEMRA_W16_SPLIT=fill, and the grouped call's): until every SM has a CTA, each slice at least
 * 8 k steps, at most 16 (a number in the knob overrides, capped at the steps) */
static int slices_for(int64_t ctas, int64_t steps, int64_t sms, int knob)
{
    if (knob >= 1) return (int)(knob < steps ? knob : steps);
    int z = 1;
    while (ctas * z < sms && z < 16 && steps / (z + 1) >= 8) z++;
    return z;
}

/* MEMRA_W16_SPLIT=waves (= auto, the default since run aa: an H100 ran the 27b sheet's w16 arms in 0.52-1.01x fill's
 * time at m = 512, geomean 0.83-0.85 (Q8_0, Q4_0) and 0.70-0.71 (K-quants), and 0.80-0.83x at m = 4096 on
 * 5120->1024, the other shapes' plans unchanged): a dense call's token tile and slices by a model of its waves. A
 * CTA holds its SM for its whole k range (one CTA an SM), so bn-token tiles in z slices run ceil(CTAs z / SMs)
 * waves, each CTA 1 / z of the tile's k loop. The tile's time, from run z1's 27b rows (an H100, 5120->12288, the
 * activations' pass taken off): a 256-token tile does 256 x 128 x k multiply-adds at W16_MODEL_FLOPS_SM times the
 * format's k_w16_t256 (the K-quants' decoding is not all hidden behind the wgmmas: 1.13-1.29x Q8_0's time); a
 * 128-token tile takes k_w16_r128 of that (0.63 for Q8_0 / Q4_0, 0.76-0.77 for the K-quants: far from half, as the
 * decoding is a weight's whatever the token count). z > 1 adds the partial sums' traffic (the tiles write z m n
 * floats where they would write m n, the sum reads them and writes y: 2 z m n floats more) at W16_MODEL_BYTES, and a
 * launch. Over both tiles (the one MEMRA_W16_TILE names, where it does) and 1 .. 16 slices (each at least 8 steps,
 * the partial sums at most 512 MB) the least estimate is taken where it is at least a tenth under fill's plan
 * (tile_for, slices_for) in the same model, else fill's. The model fits z1's tiles within about 10% (its long-k
 * rows, 17408->5120, 12-25% over). */
#define W16_MODEL_FLOPS_SM 5.0e12
#define W16_MODEL_BYTES 2.5e12
#define W16_MODEL_LAUNCH 3.0e-6
static const double k_w16_t256[5] = {1.00, 0.99, 1.13, 1.235, 1.29}; /* fmt_index order: Q8_0 Q4_0 Q4_K Q6_K Q5_K */
static const double k_w16_r128[5] = {0.63, 0.63, 0.76, 0.76, 0.77};
/* the grouped call on 160-token tiles over its time on 256-token ones, one CTA an expert either way (run ab, an H100,
 * the Mixtral-like rows at m = 512, uniform: 0.84 Q8_0, 0.88 Q4_K; Q4_0 taken as Q8_0, Q5_K and Q6_K as Q4_K) */
static const double k_w16_r160[5] = {0.84, 0.84, 0.88, 0.88, 0.88};

static double w16_model(int64_t m, int64_t n, int64_t k, int fi, int64_t tiles, int64_t sms, int bn, int z)
{
    const double t256 = 256.0 * W16_BM * (double)k * 2.0 / W16_MODEL_FLOPS_SM * k_w16_t256[fi];
    const double t = bn == 256 ? t256 : t256 * k_w16_r128[fi], mn4 = (double)m * (double)n * 4.0;
    const int64_t ctas = (m + bn - 1) / bn * tiles;
    return (double)((ctas * z + sms - 1) / sms) * t / z +
           (z > 1 ? 2.0 * z * mn4 / W16_MODEL_BYTES + W16_MODEL_LAUNCH : 0.0);
}

/* *bn: fill's token tile (tile_for) on entry; fill's slices join it as the plan to beat */
static void plan_by_waves(int64_t m, int64_t n, int64_t k, int fi, int64_t tiles, int64_t sms, int tile_knob, int *bn,
                          int *z)
{
    *z = slices_for((m + *bn - 1) / *bn * tiles, k / W16_BK, sms, 0);
    const double base = w16_model(m, n, k, fi, tiles, sms, *bn, *z);
    double best = base;
    int bb = *bn, zb = *z;
    for (int b = 256; b >= 128; b -= 128) {
        if ((tile_knob == 128 || tile_knob == 256) && b != tile_knob) continue;
        for (int zz = 1; zz <= 16 && (zz == 1 || (k / W16_BK / zz >= 8 && (double)zz * m * n * 4.0 <= 536870912.0));
             zz++) {
            const double e = w16_model(m, n, k, fi, tiles, sms, b, zz);
            if (e < best) best = e, bb = b, zb = zz;
        }
    }
    if (best <= 0.9 * base) *bn = bb, *z = zb;
}

/* The host reference's refusals of both ops (the GEMM arguments, then the W16 format and its block); *fi the
 * format's index in the tile tables */
static memra_status w16_check_args(memra__gpu *gpu, const char *op, const memra_gemm_args *a, int *fi)
{
    memra_status st = memra__gpu_check_gemm(gpu, op, a);
    if (st != MEMRA_STATUS_OK) return st;
    if (!MEMRA_HAS_MEMBER(a, memra_gemm_args, w_format)) return memra__gpu_bad_arg(gpu, op, "args has no w_format");
    *fi = fmt_index(a->w_format);
    if (*fi < 0) return memra__gpu_bad_arg(gpu, op, "w_format is not Q8_0, Q4_0, Q4_K, Q5_K or Q6_K");
    if (a->n > 0 && a->k > 0 && memra_w16_bytes((memra_format)a->w_format, a->n, a->k) == 0)
        return memra__gpu_bad_arg(gpu, op, "k is not a multiple of the format's block (32; K-quants 256)");
    return MEMRA_STATUS_OK;
}

/* memra_call.sizing: the core wants only the call's scratch requests (memra_stream_reserve); once they are made,
 * the call says so and launches nothing */
static int w16_sized(memra_call *call)
{
    if (!MEMRA_HAS_MEMBER(call, memra_call, sizing) || call->sizing != 1) return 0;
    call->sizing = 2;
    return 1;
}

memra_status memra__gpu_gemm_w16(memra_call *call, const memra_gemm_args *args)
{
    memra__gpu *gpu = W16_OF(call);
    const memra__w16_state *s = memra__gpu_state(gpu, &memra__gpu_family_w16);
    int fi = -1;
    memra_status st = w16_check_args(gpu, "gemm_w16", args, &fi);
    if (st != MEMRA_STATUS_OK) return st;
    if (args->m == 0 || args->n == 0) return MEMRA_STATUS_OK;
    if (s == NULL) return memra__gpu_decline(call, "gemm_w16: this module has no w16 kernels");
    if (s->off) return memra__gpu_decline(call, "gemm_w16 is off (MEMRA_W16=0, the default)");
    if (args->k == 0 || args->k % W16_BK != 0) return memra__gpu_decline(call, "gemm_w16's tile takes k a multiple of 64");
    const int64_t m = args->m, n = args->n, k = args->k, tiles = (n + W16_BM - 1) / W16_BM;
    if (tiles > 65535) return memra__gpu_decline(call, "gemm_w16: more than 65535 row tiles");
    if (!memra__gpu_aligned(args->w, 16) || !memra__gpu_aligned(args->x, 16) || !memra__gpu_aligned(args->y, 4))
        return memra__gpu_decline(call, "gemm_w16 needs a 16-byte aligned operand and activation");
    const int64_t sms = gpu->caps->sm_count > 0 ? gpu->caps->sm_count : 16;
    int bn = tile_for(m, tiles, sms, s->tile_knob), z = 0;
    if (s->split_knob < 0) plan_by_waves(m, n, k, fi, tiles, sms, s->tile_knob, &bn, &z);
    const int b = bn == 256 ? 0 : 1;
    const int64_t mp = (m + 255) / 256 * 256, ctas = (m + bn - 1) / bn * tiles;
    /* the pass's grid (a 16-byte chunk a thread) and the sum's (an output a thread) fit a 1-D grid */
    if ((mp * k / 8 + 255) / 256 > 0x7FFFFFFF || (m * n + 255) / 256 > 0x7FFFFFFF)
        return memra__gpu_decline(call, "gemm_w16: m x k or m x n too large for the pass's one-dimensional grid");
    if (s->split_knob >= 0) z = slices_for(ctas, k / W16_BK, sms, s->split_knob);
    const int xh = args->x_is_f16 != 0;
    memra_dptr x16 = 0, part = 0;
    if (!MEMRA_HAS_MEMBER(gpu->host, memra_host_services, scratch_get))
        return gpu->host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the core has no named scratch", gpu->name);
    st = gpu->host->scratch_get(call, MEMRA__W16_SLOT_X16, (size_t)(mp * k * 2), &x16);
    if (st == MEMRA_STATUS_OK && z > 1)
        st = gpu->host->scratch_get(call, MEMRA__W16_SLOT_PART, (size_t)z * (size_t)(m * n) * 4u, &part);
    if (st != MEMRA_STATUS_OK) return st;
    if (w16_sized(call)) return MEMRA_STATUS_OK;
    const memra_format f = (memra_format)args->w_format;
    memra_dptr codes = args->w, scales = args->w + memra_w16_off(f, n, k, 'S'), dd = args->w + memra_w16_off(f, n, k, 'D');
    memra_dptr y = memra__gpu_y_base(args), x = args->x;
    int bni = bn, mi = (int)m, ni = (int)n, ki = (int)k, mpi = (int)mp, zi = z;
    long long ldy = (long long)args->ldy;
    float alpha = args->alpha;
    const unsigned gx = (unsigned)((m + bn - 1) / bn);
    st = memra__gpu_launch_ex(gpu, xh ? s->x16h : s->x16, xh ? "memra_k_w16_x16h" : "memra_k_w16_x16",
                              (unsigned)((mp * k / 8 + 255) / 256), 1, 1, 256, 0, call->stream,
                              (void *[]){&x, &x16, &mi, &ki, &mpi, &bni}, 0);
    if (st == MEMRA_STATUS_OK)
        st = memra__gpu_launch_ex(gpu, s->tile[b][fi], k_tile_names[b][fi], gx, (unsigned)tiles, (unsigned)z,
                                  W16_THREADS, W16_SMEM_BYTES, call->stream,
                                  (void *[]){&codes, &scales, &dd, &x16, &y, &mi, &ni, &ki, &ldy, &alpha, &part}, 0);
    if (st == MEMRA_STATUS_OK && z > 1)
        st = memra__gpu_launch_ex(gpu, s->sum, "memra_k_w16_sum", (unsigned)((m * n + 255) / 256), 1, 1, 256, 0,
                                  call->stream, (void *[]){&part, &y, &mi, &ni, &ldy, &zi, &alpha}, 0);
    return st;
}

/* ---- gemm_experts on lane gemm_w16 ---------------------------------------------------------------
 * module.h memra_gemm_experts_args with lane gemm_w16: a->w a device table of E addresses, each expert's W16
 * operand (the shared format a->w_format, shape n x k); x f32 (or f16, x_is_f16) for all m rows; ids on the
 * device. Four launches of fixed shape for a given m, no host read, capturable:
 *   memra_k_w16_route   (1 x 1024) rows counted per expert, offsets, the permutation and the table of BN-token
 *                       tiles (scratch MEMRA__W16_SLOT_ROUTE);
 *   memra_k_w16_x16g    the routed rows of x, in expert order, into the table's f16 token tiles (MEMRA__W16_SLOT_X16);
 *   memra_k_w16_xe_<fmt>_n<BN> the tile on (T, row tiles, slices): T = ceil(m / BN) + min(E, m) is the table's
 *                       worst case (an expert of c rows takes ceil(c / BN) <= c / BN + 1 tiles), capped at m (a
 *                       tile holds a row); CTAs past the table's count exit; each output row to y[perm[s]], or with
 *                       split-k to the parts by sorted row;
 *   memra_k_w16_sumg    with split-k, the slices added in slice order, times alpha, scattered to y[perm[s]].
 * Each output is the dense gemm_w16's for the expert's rows (the same tile, decoders and k order), bit for bit
 * where both calls take the same slice count: split-k is chosen here from the grouped grid, there from the
 * expert's rows, and a different count adds the same products in another order (within the f16 band).
 * The token tile: xe_tile_for below (MEMRA_W16_TILE overrides); split-k as fill's, over the worst-case grid. */
typedef struct w16_xe_arg { /* w16_tile.cuh's struct w16_xe, by value: the same layout */
    memra_dptr ntiles, tiles, offsets, perm, w;
    long long off_s, off_d;
} w16_xe_arg;

static size_t up16(size_t b) { return (b + 15) / 16 * 16; }

/* The grouped call's token tile, from the mean expert's rows (the host never reads the routing): 64 under 64 rows
 * (two CTAs an SM: a 128-token tile would be mostly padding); else an expert of c rows, c a tenth over the mean for
 * uneven routing, takes ceil(c / 256) 256-token CTAs or ceil(c / 128) 128-token ones at k_w16_r128 of the time each
 * (the dense plan's measured ratio, one CTA an SM either way), and 256 wins where it is a tenth under: for a mean of
 * about 146-232 rows (two 128-token CTAs against one: 1.26-1.54 of its time) and 349-383 (two against four: 2.52),
 * and for the K-quants 146-383. From a mean of 384 rows, 256 (the rule measured with the raster, runs x2 / y2).
 * Where c is 129-160 (a mean of 117-145 rows) one 160-token CTA holds the expert (m64n160: 160 / 256 of the 256-token
 * tile's MMAs) at k_w16_r160 of a 256-token one's time, and takes it where that is a tenth under both others.
 * On an H100, the Mixtral-like rows at m = 512 (1024 rows, 8 experts, 128 each; gate / up / down):
 * - run aa2, Q8_0 uniform: 256-token tiles took 0.81-1.01x the 128-token ones' time.
 * - run ab, Q8_0 uniform: 160 0.310 / 0.306 / 0.298 ms, 256 0.370 / 0.371 / 0.358, 128 0.356 / 0.355 / 0.355; Q4_K
 *   uniform: 160 0.356 / 0.358 / 0.354, 256 0.403 / 0.403 / 0.397, 128 0.477 / 0.507 / 0.491.
 * - skewed (half of the rows on one expert, the other seven about 73 each), run ab: Q8_0 160 0.382 / 0.378 / 0.379,
 *   256 0.416 / 0.451 / 0.493, 128 0.360 / 0.360 / 0.354; Q4_K 160 0.477 / 0.477 / 0.500, 256 0.498 / 0.498 /
 *   0.559, 128 0.478 / 0.481 / 0.478. The rule reads the mean only, so skew pays: 160 is up to 7% over 128 there.
 * 160 is not taken where an expert needs two or more CTAs of it (c over 160): the model would take it for c 257-320,
 * where it has not been timed, and at the Qwen3-like rows at m = 4096 (256 a mean expert, about half of them one
 * 256-token CTA) it would take two 160-token CTAs for every expert. */
static int xe_tile_for(int64_t m, int64_t E, int fi, int knob)
{
    if (knob == 64 || knob == 128 || knob == 160 || knob == 256) return knob;
    if (m >= 384 * E) return 256;
    if (m < 64 * E) return 64;
    const int64_t c = (m * 11 + 10 * E - 1) / (10 * E);
    const double t128 = (double)((c + 127) / 128) * k_w16_r128[fi], t256 = (double)((c + 255) / 256);
    if (c > 128 && c <= 160 && k_w16_r160[fi] <= 0.9 * (t128 < t256 ? t128 : t256)) return 160;
    return t256 <= 0.9 * t128 ? 256 : 128;
}

memra_status memra__gpu_w16_experts(memra_call *call, const memra_gemm_args *a, const memra_gemm_experts_args *ex)
{
    memra__gpu *gpu = W16_OF(call);
    const memra__w16_state *s = memra__gpu_state(gpu, &memra__gpu_family_w16);
    if (ex == NULL || !MEMRA_HAS_MEMBER(ex, memra_gemm_experts_args, w_scales))
        return gpu->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: experts args missing or too small",
                                    gpu->name);
    if (ex->lane != MEMRA_OP_gemm_w16) return memra__gpu_decline(call, "gemm_experts: this module serves lane gemm_w16 only");
    /* before the no-row return: the core asks with m = 0 whether a module takes the lane */
    if (s == NULL) return memra__gpu_decline(call, "gemm_experts: this module has no w16 kernels");
    if (s->off) return memra__gpu_decline(call, "gemm_experts: gemm_w16 is off (MEMRA_W16=0, the default)");
    int fi = -1;
    memra_status st = w16_check_args(gpu, "gemm_experts", a, &fi);
    if (st != MEMRA_STATUS_OK) return st;
    if (ex->n_experts < 1)
        return gpu->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: n_experts = %d", gpu->name,
                                    (int)ex->n_experts);
    if (a->k == 0 || a->k % W16_BK != 0) return memra__gpu_decline(call, "gemm_experts: gemm_w16's tile takes k a multiple of 64");
    if (ex->n_experts > W16_XE_MAX)
        return memra__gpu_decline(call, "gemm_experts: more than 4096 experts (the routing kernel's shared memory)");
    const int64_t m = a->m, n = a->n, k = a->k, E = ex->n_experts, rtiles = (n + W16_BM - 1) / W16_BM;
    if (rtiles > 65535) return memra__gpu_decline(call, "gemm_experts: more than 65535 row tiles");
    if (!memra__gpu_aligned(a->w, 8) || !memra__gpu_aligned(a->y, 4) || !memra__gpu_aligned(ex->ids, 4))
        return memra__gpu_decline(call, "gemm_experts: needs an 8-byte aligned expert table and 4-byte aligned y and ids");
    if (m == 0 || n == 0) return MEMRA_STATUS_OK;
    if (ex->ids == 0) return gpu->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: ids is NULL", gpu->name);
    const int bn = xe_tile_for(m, E, fi, s->tile_knob);
    const int b = bn == 256 ? 0 : bn == 128 ? 1 : bn == 64 ? 2 : 3, per_sm = bn == 64 ? 2 : 1;
    int64_t T = (m + bn - 1) / bn + (E < m ? E : m);
    if (T > m) T = m;
    if (T > 0x7FFFFFFF / 2 || (T * bn * k / 8 + 255) / 256 > 0x7FFFFFFF || (m * n + 255) / 256 > 0x7FFFFFFF)
        return memra__gpu_decline(call, "gemm_experts: rows x k or rows x n too large for the passes' one-dimensional grids");
    const int64_t sms = gpu->caps->sm_count > 0 ? gpu->caps->sm_count : 16;
    const int z = slices_for(T * rtiles, k / W16_BK, sms * per_sm, s->split_knob);
    const size_t o_tiles = 16, o_off = o_tiles + up16((size_t)T * 8), o_perm = o_off + up16((size_t)(E + 1) * 4),
                 route_bytes = o_perm + up16((size_t)m * 4);
    memra_dptr route = 0, x16 = 0, part = 0;
    if (!MEMRA_HAS_MEMBER(gpu->host, memra_host_services, scratch_get))
        return gpu->host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the core has no named scratch", gpu->name);
    st = gpu->host->scratch_get(call, MEMRA__W16_SLOT_ROUTE, route_bytes, &route);
    if (st == MEMRA_STATUS_OK) st = gpu->host->scratch_get(call, MEMRA__W16_SLOT_X16, (size_t)(T * bn * k * 2), &x16);
    if (st == MEMRA_STATUS_OK && z > 1)
        st = gpu->host->scratch_get(call, MEMRA__W16_SLOT_PART, (size_t)z * (size_t)(m * n) * 4u, &part);
    if (st != MEMRA_STATUS_OK) return st;
    if (w16_sized(call)) return MEMRA_STATUS_OK;
    const memra_format f = (memra_format)a->w_format;
    w16_xe_arg xe = {.ntiles = route, .tiles = route + o_tiles, .offsets = route + o_off, .perm = route + o_perm,
                     .w = a->w, .off_s = (long long)memra_w16_off(f, n, k, 'S'), .off_d = (long long)memra_w16_off(f, n, k, 'D')};
    memra_dptr ids = ex->ids, y = memra__gpu_y_base(a), x = a->x, xf = a->x_is_f16 ? 0 : a->x, xh = a->x_is_f16 ? a->x : 0;
    int mi = (int)m, ni = (int)n, ki = (int)k, ei = (int)E, bni = bn, ti = (int)T, zi = z;
    /* the raster's 1-D grid (T x row tiles CTAs on x) where the knob asks for it and the product fits; auto: groups
     * of W16_XE_RASTER_AUTO token tiles where the rows fill at least two groups of full token tiles (m >= 16 bn), so
     * that a wave holds a few experts' activations and their weight rows where the plain grid's waves hold every
     * token tile's activations and stream the weights from DRAM. On an H100 (runs x2, y2, y5, Q8_0): Mixtral-like
     * rows at m = 4096 (256-token tile) 1.78 ms a call against 1.95-2.89 on the plain grid; Qwen3-like rows at
     * m = 4096 (128-token tile) 0.54-0.57 against 0.71-0.76, at m = 512 (64-token tile) 0.15-0.16 against
     * 0.15-0.18. Off below: the Mixtral-like down rows at m = 512 (8 token tiles of 128) took 0.45 ms rastered
     * against 0.36 */
    const int want = s->raster >= 0 ? s->raster : m >= 16 * (int64_t)bn ? W16_XE_RASTER_AUTO : 0;
    int rg = want > 0 && T * rtiles <= 0x7FFFFFFF ? (int)(want < T ? want : T) : 0; /* rg x R <= T x R */
    int al = memra__gpu_aligned(x, 16);
    long long ldy = (long long)a->ldy;
    float alpha = a->alpha;
    st = memra__gpu_launch_ex(gpu, s->xe_route, "memra_k_w16_route", 1, 1, 1, 1024, 0, call->stream,
                              (void *[]){&ids, &mi, &ei, &bni, &xe.offsets, &xe.perm, &xe.tiles, &xe.ntiles}, 0);
    if (st == MEMRA_STATUS_OK)
        st = memra__gpu_launch_ex(gpu, s->xe_x16, "memra_k_w16_x16g", (unsigned)((T * bn * k / 8 + 255) / 256), 1, 1, 256,
                                  0, call->stream, (void *[]){&xf, &xh, &x16, &ki, &ti, &bni, &al, &xe}, 0);
    /* MEMRA_W16_XE_FIT=1 on the 160-token tile: its twin whose CTAs size their wgmmas by the tile's rows */
    const int fit = s->fit && bn == 160;
    if (st == MEMRA_STATUS_OK)
        st = memra__gpu_launch_ex(gpu, fit ? s->xe_fit[fi] : s->xe_tile[b][fi],
                                  fit ? k_xe_fit_names[fi] : k_xe_names[b][fi], (unsigned)(rg ? T * rtiles : T),
                                  (unsigned)(rg ? 1 : rtiles), (unsigned)z, W16_THREADS, k_xe_smem[b], call->stream,
                                  (void *[]){&x16, &y, &mi, &ni, &ki, &ldy, &alpha, &part, &xe, &rg}, 0);
    if (st == MEMRA_STATUS_OK && z > 1)
        st = memra__gpu_launch_ex(gpu, s->xe_sum, "memra_k_w16_sumg", (unsigned)((m * n + 255) / 256), 1, 1, 256, 0,
                                  call->stream, (void *[]){&part, &y, &mi, &ni, &ldy, &zi, &alpha, &ei, &xe}, 0);
    return st;
}
