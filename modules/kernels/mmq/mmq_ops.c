/* The MMQ family (mmq.cu): argument checks (the host reference's, so both
 * sides refuse the same calls), declines for the cases the kernels do not
 * take, plans, scratch, and launches on call->stream. Ops quant_q8_1,
 * repack_q8_0, gemm_q8_0r, gemm_q8_0, gemm_kr, accprobe, gemm_experts. mmq.h holds the constants
 * this file and mmq.cu share; mmq.cu, the kernels and their preconditions. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "memra/formats.h"
#include "mmq.h"

#define MMQ_OF(call) ((memra__gpu *)(call)->module_ctx)
#define PROBE_BIAS_S32 (-MMQ_MAGIC) /* mmq.cu: the fold's 1.5 * 2^23 */

/* Named scratch (host->scratch_get: per call and stream). */
#define MEMRA__MMQ_SLOT_PART "q8_0r.splitk" /* gemm_q8_0r: split-k partial sums, or the stream-k tile's slots */
#define MEMRA__MMQ_SLOT_KW "kr.widened"     /* gemm_kr, MEMRA_MMQ_KR_WG=pre / pre2: the call's widened weight image */
#define MEMRA__MMQ_SLOT_KT "kr.tokens"      /* and with pre2 the tokens' part of the stages */
/* MEMRA_MMQ_WG=auto (the default): the seeded warpgroup tile serves gemm_q8_0r calls of at least this many
 * tokens (runs i1 / i4: faster on every 27b row at 1024, 2048 and 4096, on half of them at 512), and
 * smaller calls where the plan's model prices it under the records tiles (run_tiles, step_wg) */
#define MMQ_WG_AUTO_M 1024
/* MEMRA_MMQ_KR_WG=auto: =pre2 from this many tokens, the records tiles below (a first guess from run m1's tile
 * times and the passes' fixed cost; not yet timed against the records tiles as a whole call) */
#define MMQ_KR_WG_AUTO_M 1024
/* MEMRA_MMQ_XE_WG=auto (the default): gemm_experts' 128-row table on the seeded warpgroup tile from this k
 * (run j2, H100, bench moe: Mixtral-like k = 4096 / 14336 4-9% faster at m = 4096, gate and down 4-14% at
 * 512; Qwen3-like at m = 4096, k = 2048 / 768, 7% / 27% slower: the short k loop does not pay for the
 * tile's one CTA an SM) */
#define MMQ_XE_WG_AUTO_K 4096

/* The gemm_q8_0r tiles: mmq.cu's entry points, tokens x weight rows per CTA,
 * dynamic shared memory. Index order is the loader's and the plan's. */
#define MEMRA__MMQ_R3_TILES 4
typedef struct memra__mmq_r3_tile {
    const char *kernel;
    int bm, bn;
    unsigned smem;
    int one; /* built for one CTA per SM (__launch_bounds__(256, 1)): never shares its SM */
} memra__mmq_r3_tile;

static const memra__mmq_r3_tile memra__mmq_r3_tiles[MEMRA__MMQ_R3_TILES] = {
    {"memra_k_gemm_q8_0r_mt4", 128, 128, R3_SMEM_BYTES(4, 4), 0},
    {"memra_k_gemm_q8_0r_mt2", 64, 128, R3_SMEM_BYTES(2, 4), 0},
    {"memra_k_gemm_q8_0r_mt4n3", 128, 96, R3_SMEM_BYTES(4, 3), 0},
    {"memra_k_gemm_q8_0r_mt2n3", 64, 96, R3_SMEM_BYTES(2, 3), 0},
};
/* MEMRA_MMQ_R3_UNROLL=1: the same tiles, the 64-token ones with their k32 groups unrolled (mmq.cu,
 * the _u entry points; bit for bit the rolled tiles' outputs) */
static const memra__mmq_r3_tile memra__mmq_r3_tiles_u[MEMRA__MMQ_R3_TILES] = {
    {"memra_k_gemm_q8_0r_mt4", 128, 128, R3_SMEM_BYTES(4, 4), 0},
    {"memra_k_gemm_q8_0r_mt2u", 64, 128, R3_SMEM_BYTES(2, 4), 0},
    {"memra_k_gemm_q8_0r_mt4n3", 128, 96, R3_SMEM_BYTES(4, 3), 0},
    {"memra_k_gemm_q8_0r_mt2n3u", 64, 96, R3_SMEM_BYTES(2, 3), 0},
};

/* cc 9.0 and up (off with MEMRA_MMQ_BULK=0): the same tiles with each stage's two record runs
 * brought by the bulk copy engine (mmq.cu, the _b entry points; bit for bit the cp.async tiles'
 * outputs; ptxas sm_90a: 1001 -> 853 instructions a step at 128 x 128, 644 -> 522 at 64 x 128) */
static const memra__mmq_r3_tile memra__mmq_r3_tiles_b[MEMRA__MMQ_R3_TILES] = {
    {"memra_k_gemm_q8_0r_mt4b", 128, 128, R3_SMEM_BYTES(4, 4), 0},
    {"memra_k_gemm_q8_0r_mt2b", 64, 128, R3_SMEM_BYTES(2, 4), 0},
    {"memra_k_gemm_q8_0r_mt4n3b", 128, 96, R3_SMEM_BYTES(4, 3), 0},
    {"memra_k_gemm_q8_0r_mt2n3b", 64, 96, R3_SMEM_BYTES(2, 3), 0},
};
/* MEMRA_MMQ_ONE=1 (with the bulk tiles): the same at one CTA per SM (mmq.cu _bo) */
static const memra__mmq_r3_tile memra__mmq_r3_tiles_bo[MEMRA__MMQ_R3_TILES] = {
    {"memra_k_gemm_q8_0r_mt4bo", 128, 128, R3_SMEM_BYTES(4, 4), 1},
    {"memra_k_gemm_q8_0r_mt2bo", 64, 128, R3_SMEM_BYTES(2, 4), 1},
    {"memra_k_gemm_q8_0r_mt4n3bo", 128, 96, R3_SMEM_BYTES(4, 3), 1},
    {"memra_k_gemm_q8_0r_mt2n3bo", 64, 96, R3_SMEM_BYTES(2, 3), 1},
};

/* The knobs a gemm plan reads: MEMRA_MMQ_BM / BN / SPLIT (0: chosen per
 * shape) and MEMRA_MMQ_PDL=0 (pdl_off). */
typedef struct mmq_knobs {
    int bm, bn, split, pdl_off;
} mmq_knobs;

/* ---- variants (memra_module_desc.variants) ------------------------------------------
 * Each is a named set of knob values (module.h): `set` says which members of
 * `k` it sets; the others keep the values read at init. gemm_q8_0: the three
 * token tiles (MEMRA_MMQ_BM=128|64|32). gemm_q8_0r: the four tiles
 * (MEMRA_MMQ_BM/BN; split-k still chosen by the plan), no split-k
 * (MEMRA_MMQ_SPLIT=1) and plain launches (MEMRA_MMQ_PDL=0, not on the
 * portable module, which never launches dependents). Numerics: every tile
 * folds each output's k in the same order (mmq.cu: ascending k steps, v2's
 * two-FFMA fold per 32-block), so two plans with the same split-k count
 * agree bitwise whatever the tile; a split into S slices adds S partial sums
 * in slice order (one more rounding per slice), so a variant whose plan
 * splits differently from the default (any tile variant may, "nosplit"
 * never splits) differs within the q8 band, not bitwise. The stream-k tile
 * (MEMRA_MMQ_WG_SK, auto by default) adds a split tile's segments in k order:
 * where the default plan takes it, a tile variant (which turns it off) differs
 * within the band too. gemm_q8_0's tiles agree bitwise. PDL changes nothing but launch overlap; "nopdl" covers the
 * op's own launches (the tile and the split-k sum), while quant_q8_1 before
 * it is another op and keeps the setting read at init. */
#define MMQ_SET_BM 1
#define MMQ_SET_BN 2
#define MMQ_SET_SPLIT 4
#define MMQ_SET_PDL 8
typedef struct mmq_variant_def {
    const char *name, *knobs;
    int set;
    mmq_knobs k;
    int tile; /* gemm_q8_0r: memra__mmq_r3_tiles index it needs (-1: none) */
    int pdl;  /* 1: only where the module launches dependents */
} mmq_variant_def;

static const mmq_variant_def k_q8_0_defs[] = {
    {"bm128", "MEMRA_MMQ_BM=128", MMQ_SET_BM, {128, 0, 0, 0}, -1, 0},
    {"bm64", "MEMRA_MMQ_BM=64", MMQ_SET_BM, {64, 0, 0, 0}, -1, 0},
    {"bm32", "MEMRA_MMQ_BM=32", MMQ_SET_BM, {32, 0, 0, 0}, -1, 0},
};
#define MMQ_Q8R_DEFS 6
static const mmq_variant_def k_q8r_defs[MMQ_Q8R_DEFS] = {
    {"bm128_bn128", "MEMRA_MMQ_BM=128,MEMRA_MMQ_BN=128", MMQ_SET_BM | MMQ_SET_BN, {128, 128, 0, 0}, 0, 0},
    {"bm64_bn128", "MEMRA_MMQ_BM=64,MEMRA_MMQ_BN=128", MMQ_SET_BM | MMQ_SET_BN, {64, 128, 0, 0}, 1, 0},
    {"bm128_bn96", "MEMRA_MMQ_BM=128,MEMRA_MMQ_BN=96", MMQ_SET_BM | MMQ_SET_BN, {128, 96, 0, 0}, 2, 0},
    {"bm64_bn96", "MEMRA_MMQ_BM=64,MEMRA_MMQ_BN=96", MMQ_SET_BM | MMQ_SET_BN, {64, 96, 0, 0}, 3, 0},
    {"nosplit", "MEMRA_MMQ_SPLIT=1", MMQ_SET_SPLIT, {0, 0, 1, 0}, -1, 0},
    {"nopdl", "MEMRA_MMQ_PDL=0", MMQ_SET_PDL, {0, 0, 0, 1}, -1, 1},
};
/* The lists handed out: memra_variant arrays built once per process from the
 * definitions, one per (with PDL, 128 x 128 tile fits) combination; the
 * definition behind entry i of list L is k_q8r_map[L][i]. */
static memra_variant k_q8_0_list[3];
static memra_variant k_q8r_list[4][MMQ_Q8R_DEFS];
static int k_q8r_map[4][MMQ_Q8R_DEFS];
static size_t k_q8r_n[4];
static pthread_once_t k_lists_once = PTHREAD_ONCE_INIT;

static void lists_build(void)
{
    for (int i = 0; i < 3; i++) k_q8_0_list[i] = (memra_variant){k_q8_0_defs[i].name, k_q8_0_defs[i].knobs};
    for (int l = 0; l < 4; l++) {
        const int with_pdl = l & 1, big = (l >> 1) & 1;
        size_t n = 0;
        for (int i = 0; i < MMQ_Q8R_DEFS; i++) {
            const mmq_variant_def *d = &k_q8r_defs[i];
            if ((d->pdl && !with_pdl) || (d->tile == 0 && !big)) continue;
            k_q8r_list[l][n] = (memra_variant){d->name, d->knobs};
            k_q8r_map[l][n++] = i;
        }
        k_q8r_n[l] = n;
    }
}

/* Which gemm_q8_0r list a device gets: the 128 x 128 tile where its shared
 * memory fits (as mmq_load decides), PDL unless portable. */
static int q8r_list_of(const memra_device_caps *caps, int portable)
{
    const int big = caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= R3_SMEM_BYTES(4, 4);
    return (portable ? 0 : 1) | (big ? 2 : 0);
}

const memra_variant *memra__mmq_variants(const memra_device_caps *caps, memra_op op, int portable, size_t *out_count)
{
    pthread_once(&k_lists_once, lists_build);
    if (caps == NULL || caps->arch == MEMRA_ARCH_HOST) {
        *out_count = 0;
        return NULL;
    }
    if (op == MEMRA_OP_gemm_q8_0) {
        *out_count = 3;
        return k_q8_0_list;
    }
    if (op == MEMRA_OP_gemm_q8_0r) {
        const int l = q8r_list_of(caps, portable);
        *out_count = k_q8r_n[l];
        return k_q8r_list[l];
    }
    *out_count = 0;
    return NULL;
}

/* The gemm_kr tiles (mmq.cu "gemm_kr"): the same four shapes per K-quant
 * (Q4_K, Q5_K, Q6_K: each its own widening of the K-packed bytes),
 * KR_SMEM_BYTES each. */
#define MMQ_KR_FORMATS 3
#define MMQ_KR_TILES(F, NAME)                                                                  \
    {{"memra_k_gemm_kr_" NAME "_mt4", 128, 128, KR_SMEM_BYTES(F, 4, 4), 0},                       \
     {"memra_k_gemm_kr_" NAME "_mt2", 64, 128, KR_SMEM_BYTES(F, 2, 4), 0},                        \
     {"memra_k_gemm_kr_" NAME "_mt4n3", 128, 96, KR_SMEM_BYTES(F, 4, 3), 0},                      \
     {"memra_k_gemm_kr_" NAME "_mt2n3", 64, 96, KR_SMEM_BYTES(F, 2, 3), 0}}
static const memra__mmq_r3_tile memra__mmq_kr_tiles[MMQ_KR_FORMATS][MEMRA__MMQ_R3_TILES] = {
    MMQ_KR_TILES(0, "q4_k"),
    MMQ_KR_TILES(1, "q5_k"),
    MMQ_KR_TILES(2, "q6_k"),
};
#undef MMQ_KR_TILES
/* MEMRA_MMQ_KR_TC (Q4_K and Q5_K by default since run d3; q4_k Q4_K alone; run x1): Q4_K / Q5_K on the same tiles with the min term on
 * TF32 MMAs once a step (mmq.cu mmq_step TC, the _t entry points); Q6_K has no min term */
#define MMQ_KR_TILES_TC(F, NAME)                                                               \
    {{"memra_k_gemm_kr_" NAME "_mt4t", 128, 128, KR_SMEM_BYTES(F, 4, 4), 0},                      \
     {"memra_k_gemm_kr_" NAME "_mt2t", 64, 128, KR_SMEM_BYTES(F, 2, 4), 0},                       \
     {"memra_k_gemm_kr_" NAME "_mt4n3t", 128, 96, KR_SMEM_BYTES(F, 4, 3), 0},                     \
     {"memra_k_gemm_kr_" NAME "_mt2n3t", 64, 96, KR_SMEM_BYTES(F, 2, 3), 0}}
static const memra__mmq_r3_tile memra__mmq_kr_tiles_tc[2][MEMRA__MMQ_R3_TILES] = {
    MMQ_KR_TILES_TC(0, "q4_k"),
    MMQ_KR_TILES_TC(1, "q5_k"),
};
#undef MMQ_KR_TILES_TC
/* MEMRA_MMQ_ONE (Q6_K by default, =1 all): each format at its default fold (Q4_K TC, Q5_K,
 * Q6_K) at one CTA per SM (mmq.cu _to / _o); a format on the other fold keeps its two-CTA tiles */
#define MMQ_KR_TILES_ONE(F, NAME, SFX)                                                                \
    {{"memra_k_gemm_kr_" NAME "_mt4" SFX, 128, 128, KR_SMEM_BYTES(F, 4, 4), 1},                      \
     {"memra_k_gemm_kr_" NAME "_mt2" SFX, 64, 128, KR_SMEM_BYTES(F, 2, 4), 1},                       \
     {"memra_k_gemm_kr_" NAME "_mt4n3" SFX, 128, 96, KR_SMEM_BYTES(F, 4, 3), 1},                     \
     {"memra_k_gemm_kr_" NAME "_mt2n3" SFX, 64, 96, KR_SMEM_BYTES(F, 2, 3), 1}}
static const memra__mmq_r3_tile memra__mmq_kr_tiles_one[MMQ_KR_FORMATS][MEMRA__MMQ_R3_TILES] = {
    MMQ_KR_TILES_ONE(0, "q4_k", "to"),
    MMQ_KR_TILES_ONE(1, "q5_k", "o"),
    MMQ_KR_TILES_ONE(2, "q6_k", "o"),
};
#undef MMQ_KR_TILES_ONE
/* MEMRA_MMQ_KR6_BULK (default 1 since run f1; cc 9.x): Q6_K's one-CTA tiles on the bulk copies (mmq.cu
 * gemm_krb_body, the _ob entry points), with the D window after P */
static const memra__mmq_r3_tile memra__mmq_kr_tiles_ob6[MEMRA__MMQ_R3_TILES] = {
    {"memra_k_gemm_kr_q6_k_mt4ob", 128, 128, KR6B_SMEM_BYTES(4, 4), 1},
    {"memra_k_gemm_kr_q6_k_mt2ob", 64, 128, KR6B_SMEM_BYTES(2, 4), 1},
    {"memra_k_gemm_kr_q6_k_mt4n3ob", 128, 96, KR6B_SMEM_BYTES(4, 3), 1},
    {"memra_k_gemm_kr_q6_k_mt2n3ob", 64, 96, KR6B_SMEM_BYTES(2, 3), 1}};
/* MEMRA_MMQ_KR_SUMS (default 1): Q4_K (TC fold) and Q5_K (per-32 here, TC below) on two-CTA tiles
 * reading the min term's t from the q8_1 records' sum plane (mmq.cu mmq_step XS, the _tx / _x
 * entry points), not from an all-ones MMA per (m16 tile, block) */
#define MMQ_KR_TILES_X(F, NAME, SFX)                                                                  \
    {{"memra_k_gemm_kr_" NAME "_mt4" SFX, 128, 128, KR_SMEM_BYTES(F, 4, 4), 0},                      \
     {"memra_k_gemm_kr_" NAME "_mt2" SFX, 64, 128, KR_SMEM_BYTES(F, 2, 4), 0},                       \
     {"memra_k_gemm_kr_" NAME "_mt4n3" SFX, 128, 96, KR_SMEM_BYTES(F, 4, 3), 0},                     \
     {"memra_k_gemm_kr_" NAME "_mt2n3" SFX, 64, 96, KR_SMEM_BYTES(F, 2, 3), 0}}
static const memra__mmq_r3_tile memra__mmq_kr_tiles_x[2][MEMRA__MMQ_R3_TILES] = {
    MMQ_KR_TILES_X(0, "q4_k", "tx"),
    MMQ_KR_TILES_X(1, "q5_k", "x"),
};
/* and Q5_K on the TC fold (its default since run d3, MEMRA_MMQ_KR_TC) on the sum plane (_tx) */
static const memra__mmq_r3_tile memra__mmq_kr_tiles_x5t[MEMRA__MMQ_R3_TILES] = MMQ_KR_TILES_X(1, "q5_k", "tx");
/* MEMRA_MMQ_KR_BULK (default 1, cc 9.x): the _tx tiles with their stages brought by the bulk copy engine
 * (mmq.cu gemm_krb_body, the _txb entry points) */
static const memra__mmq_r3_tile memra__mmq_kr_tiles_xb[2][MEMRA__MMQ_R3_TILES] = {
    MMQ_KR_TILES_X(0, "q4_k", "txb"),
    MMQ_KR_TILES_X(1, "q5_k", "txb"),
};
#undef MMQ_KR_TILES_X

/* Issue 26 item 5: the tiles an sm_120 GPU (99 KB of shared memory per
 * block) can load and pick are every one but 128 x 128, for both record
 * GEMMs (mmq_load loads a tile only where its shared memory fits; these
 * asserts keep the list true as the tiles change). */
_Static_assert(R3_SMEM_BYTES(2, 4) <= MMQ_SM120_SMEM && R3_SMEM_BYTES(4, 3) <= MMQ_SM120_SMEM &&
                   R3_SMEM_BYTES(2, 3) <= MMQ_SM120_SMEM,
               "gemm_q8_0r: every tile but 128 x 128 fits sm_120");
_Static_assert(KR_SMEM_BYTES(2, 2, 4) <= MMQ_SM120_SMEM && KR_SMEM_BYTES(2, 4, 3) <= MMQ_SM120_SMEM &&
                   KR_SMEM_BYTES(2, 2, 3) <= MMQ_SM120_SMEM && KR_SMEM_BYTES(1, 2, 4) <= MMQ_SM120_SMEM &&
                   KR_SMEM_BYTES(0, 2, 4) <= MMQ_SM120_SMEM && KR_SMEM_BYTES(1, 4, 3) <= MMQ_SM120_SMEM &&
                   KR_SMEM_BYTES(0, 4, 3) <= MMQ_SM120_SMEM,
               "gemm_kr: every tile but 128 x 128 fits sm_120 (Q6_K's are the largest)");

/* The grouped tiles of gemm_experts (mmq.cu "gemm_experts on the records
 * tile"): lane 0 gemm_q8_0r, lanes 1..3 gemm_kr on Q4_K, Q5_K, Q6_K; tiles of
 * 32, 64, 128 gathered rows x 128 weight rows. */
#define MMQ_XE_KR(F, NAME)                                                                     \
    {{"memra_k_experts_kr_" NAME "_mt1", 32, 128, KR_SMEM_BYTES(F, 1, 4), 0},                     \
     {"memra_k_experts_kr_" NAME "_mt2", 64, 128, KR_SMEM_BYTES(F, 2, 4), 0},                     \
     {"memra_k_experts_kr_" NAME "_mt4", 128, 128, KR_SMEM_BYTES(F, 4, 4), 0}}
static const memra__mmq_r3_tile memra__mmq_xe_tiles[1 + MMQ_KR_FORMATS][MMQ_XE_TILES] = {
    {{"memra_k_experts_q8_0r_mt1", 32, 128, R3_SMEM_BYTES(1, 4), 0},
     {"memra_k_experts_q8_0r_mt2", 64, 128, R3_SMEM_BYTES(2, 4), 0},
     {"memra_k_experts_q8_0r_mt4", 128, 128, R3_SMEM_BYTES(4, 4), 0}},
    MMQ_XE_KR(0, "q4_k"),
    MMQ_XE_KR(1, "q5_k"),
    MMQ_XE_KR(2, "q6_k"),
};
#undef MMQ_XE_KR
/* The merged launches' kernels (MEMRA_MMQ_XE_MERGE=1), by lane and main tile: a 64- or
 * 128-row main tile with its remainders on 32 rows (mmq.cu, XE_ENTRY2). */
#define MMQ_XE_MERGED(P) {NULL, P "_mt2r1", P "_mt4r1"}
static const char *const memra__mmq_xe_merged[1 + MMQ_KR_FORMATS][MMQ_XE_TILES] = {
    MMQ_XE_MERGED("memra_k_experts_q8_0r"), MMQ_XE_MERGED("memra_k_experts_kr_q4_k"),
    MMQ_XE_MERGED("memra_k_experts_kr_q5_k"), MMQ_XE_MERGED("memra_k_experts_kr_q6_k")};
#undef MMQ_XE_MERGED
/* MEMRA_MMQ_XE_OVERLAP=1's kernels (mmq.cu XE_OVL_MAIN), by lane and tile: the 64- and 128-row
 * full tiles that let the remainder launch start beside their last wave, and the 32-row
 * remainder tile that waits for them at its end instead of its start */
#define MMQ_XE_OVL(P) {P "_mt1_o2", P "_mt2_o1", P "_mt4_o1"}
static const char *const memra__mmq_xe_ovl[1 + MMQ_KR_FORMATS][MMQ_XE_TILES] = {
    MMQ_XE_OVL("memra_k_experts_q8_0r"), MMQ_XE_OVL("memra_k_experts_kr_q4_k"), MMQ_XE_OVL("memra_k_experts_kr_q5_k"),
    MMQ_XE_OVL("memra_k_experts_kr_q6_k")};
#undef MMQ_XE_OVL
/* MEMRA_MMQ_XE_SORT=1's tiles (mmq.cu memra_k_experts_gather_q8_1): the same heights on the q8_1
 * records gathered into expert order first, each tile's rows one contiguous run */
#define MMQ_XE_SORTED(P) {P "_mt1_s", P "_mt2_s", P "_mt4_s"}
static const char *const memra__mmq_xe_sorted[1 + MMQ_KR_FORMATS][MMQ_XE_TILES] = {
    MMQ_XE_SORTED("memra_k_experts_q8_0r"), MMQ_XE_SORTED("memra_k_experts_kr_q4_k"),
    MMQ_XE_SORTED("memra_k_experts_kr_q5_k"), MMQ_XE_SORTED("memra_k_experts_kr_q6_k")};
#undef MMQ_XE_SORTED
/* with the bulk-copy tiles: the sorted Q8_0 tiles on the bulk copies (mmq.cu, the _sb entries, cc 9.0+) */
static const char *const memra__mmq_xe_sorted_b[MMQ_XE_TILES] = {
    "memra_k_experts_q8_0r_mt1_sb", "memra_k_experts_q8_0r_mt2_sb", "memra_k_experts_q8_0r_mt4_sb"};
/* MEMRA_MMQ_XE_TALL=1 (opt-in; runs q3 / q4: level with the default on Q8_0, slower on Q4_K; cc 9.x, with the
 * sorted bulk tiles): one 160 x 96 tile with its
 * warps' m16 tiles interleaved (mmq.cu, the _sbi / _stxbi entries), [lane] for Q8_0 and Q4_K. Where the
 * mean rows per expert would pick the 128-row tile and is at most 160, an expert of up to 160 rows takes
 * one such tile instead of a 128-row one plus a 32-row remainder that streams its weight again. */
static const memra__mmq_r3_tile memra__mmq_xe_tall[2] = {
    {"memra_k_experts_q8_0r_mt5n3_sbi", 160, 96, R3_SMEM_BYTES(5, 3), 0},
    {"memra_k_experts_kr_q4_k_mt5n3_stxbi", 160, 96, KR_SMEM_BYTES(0, 5, 3), 0}};
/* MEMRA_MMQ_KR_TC: the sorted Q4_K / Q5_K tiles with the TF32 min term (mmq.cu, the _st entries), [lane - 1] */
static const char *const memra__mmq_xe_sorted_tc[2][MMQ_XE_TILES] = {
    {"memra_k_experts_kr_q4_k_mt1_st", "memra_k_experts_kr_q4_k_mt2_st", "memra_k_experts_kr_q4_k_mt4_st"},
    {"memra_k_experts_kr_q5_k_mt1_st", "memra_k_experts_kr_q5_k_mt2_st", "memra_k_experts_kr_q5_k_mt4_st"}};
/* MEMRA_MMQ_KR_SUMS: the sorted tiles of Q4_K (TC fold) and Q5_K (either fold) reading the min term's t
 * from the sum plane the gather brings along (mmq.cu, the _stx / _sx entries), [lane - 1][TC fold] */
static const char *const memra__mmq_xe_sorted_x[2][2][MMQ_XE_TILES] = {
    {{NULL, NULL, NULL},
     {"memra_k_experts_kr_q4_k_mt1_stx", "memra_k_experts_kr_q4_k_mt2_stx", "memra_k_experts_kr_q4_k_mt4_stx"}},
    {{"memra_k_experts_kr_q5_k_mt1_sx", "memra_k_experts_kr_q5_k_mt2_sx", "memra_k_experts_kr_q5_k_mt4_sx"},
     {"memra_k_experts_kr_q5_k_mt1_stx", "memra_k_experts_kr_q5_k_mt2_stx", "memra_k_experts_kr_q5_k_mt4_stx"}}};
/* MEMRA_MMQ_KR_BULK (default, cc 9.x as the dense _txb tiles): the _stx tiles on the bulk copies (mmq.cu,
 * the _stxb entries), [lane - 1] */
static const char *const memra__mmq_xe_sorted_xb[2][MMQ_XE_TILES] = {
    {"memra_k_experts_kr_q4_k_mt1_stxb", "memra_k_experts_kr_q4_k_mt2_stxb", "memra_k_experts_kr_q4_k_mt4_stxb"},
    {"memra_k_experts_kr_q5_k_mt1_stxb", "memra_k_experts_kr_q5_k_mt2_stxb", "memra_k_experts_kr_q5_k_mt4_stxb"}};
/* MEMRA_MMQ_XE_LOOP2=1 (opt-in until timed): the _stxb tiles with a full tile's k loop apart (mmq.cu, _stxb2) */
static const char *const memra__mmq_xe_sorted_xb2[2][MMQ_XE_TILES] = {
    {"memra_k_experts_kr_q4_k_mt1_stxb2", "memra_k_experts_kr_q4_k_mt2_stxb2", "memra_k_experts_kr_q4_k_mt4_stxb2"},
    {"memra_k_experts_kr_q5_k_mt1_stxb2", "memra_k_experts_kr_q5_k_mt2_stxb2", "memra_k_experts_kr_q5_k_mt4_stxb2"}};
/* sm_120 (99 KB, + 512 bytes of static row indices) loads every grouped tile but the 128-row ones */
_Static_assert(R3_SMEM_BYTES(2, 4) + 256 <= MMQ_SM120_SMEM && KR_SMEM_BYTES(2, 2, 4) + 256 <= MMQ_SM120_SMEM,
               "gemm_experts: the 32- and 64-row tiles fit sm_120");

typedef struct mmq_state {
    CUfunction quant_q8_1, gemm_q8_0, probe[3];
    /* MEMRA_MMQ_QUANT_LEAN (on unless 0): memra_k_quant_q8_1l (the same bytes, a 2-D grid), else NULL */
    CUfunction quant_q8_1l;
    CUfunction repack_q8_0, splitk_sum;
    CUfunction gemm_q8_0r[MEMRA__MMQ_R3_TILES]; /* r3_tiles[i]'s kernel, NULL where its shared memory does not fit */
    const memra__mmq_r3_tile *r3_tiles; /* memra__mmq_r3_tiles, _u with MEMRA_MMQ_R3_UNROLL=1, _b on cc 9.0+ (MEMRA_MMQ_BULK) */
    mmq_knobs knobs; /* read at load (memra__gpu_knob) */
    /* A dependent launch of a records tile whose grid is at most one CTA an SM asks for one_pad bytes
     * of shared memory (more than half the SM's, so that no SM holds two of its CTAs, nor two padded
     * CTAs of consecutive calls), where the tile could otherwise share an SM (the functions' limits are
     * set for it at load); 0: never. MEMRA_MMQ_PDL=pack (pdl_pack): the tile's own bytes. */
    unsigned one_pad;
    int pdl_pack;
    int q8r_list;    /* q8r_list_of(this device): which list memra_call.variant indexes */
    CUfunction gemm_kr[MMQ_KR_FORMATS][MEMRA__MMQ_R3_TILES]; /* kr_tiles[f][i]'s kernel, likewise */
    const memra__mmq_r3_tile *kr_tiles[MMQ_KR_FORMATS];       /* memra__mmq_kr_tiles[f], or _tc (bit f of kr_tc) */
    int bulk;  /* the bulk-copy tiles took (cc 9.0+ unless MEMRA_MMQ_BULK=0): gemm_q8_0r's _b, the sorted Q8_0 _sb */
    int kr_tc; /* the K-quant formats (bit f of memra__mmq_kr_tiles) on the TC fold: MEMRA_MMQ_KR_TC (read at load) */
    int kr_sums; /* MEMRA_MMQ_KR_SUMS (read at load): the default folds' tiles read the q8_1 sum plane */
    int kr_bulk; /* MEMRA_MMQ_KR_BULK on a cc 9.x GPU (read at load): the sum-plane TC tiles on the bulk copies */
    CUfunction experts_route;                                 /* gemm_experts (issue 30): the routing kernel */
    CUfunction experts_splitk_sum;                            /* and its split-k sum over the routed rows */
    CUfunction experts[1 + MMQ_KR_FORMATS][MMQ_XE_TILES];     /* and the grouped tiles (memra__mmq_xe_tiles), NULL where they do not fit */
    int xe_bm;                                                /* MEMRA_MMQ_XE_BM (0: from the rows per expert) */
    int xe_split;                                             /* MEMRA_MMQ_XE_SPLIT (0: chosen per call) */
    /* MEMRA_MMQ_XE_MERGE=1: both tables in one launch, [lane][main tile] (the _mt2r1 / _mt4r1
     * kernels: a main tile of 64 or 128 rows, remainders on 32), else NULL */
    CUfunction experts_merged[1 + MMQ_KR_FORMATS][MMQ_XE_TILES];
    /* MEMRA_MMQ_XE_OVERLAP=1: memra__mmq_xe_ovl's kernels, [lane][tile], else NULL */
    CUfunction experts_ovl[1 + MMQ_KR_FORMATS][MMQ_XE_TILES];
    /* MEMRA_MMQ_XE_SORT=1: the records' gather into expert order and memra__mmq_xe_sorted's
     * tiles, [lane][tile], else NULL */
    CUfunction experts_gather, experts_sorted[1 + MMQ_KR_FORMATS][MMQ_XE_TILES];
    CUfunction experts_tall[2]; /* MEMRA_MMQ_XE_TALL=1: memra__mmq_xe_tall's kernels (Q8_0, Q4_K), else NULL */
    /* MEMRA_MMQ_XE_WG (auto, the default, from k = MMQ_XE_WG_AUTO_K; =1 every k; cc 9.x, tensor maps, the
     * gather): gemm_experts' Q8_0 128-row
     * tiles on the seeded warpgroup tile (mmq.cu memra_k_experts_q8_0r_wgs) and its maps kernel, else NULL */
    CUfunction experts_wg, experts_wg_maps;
    CUfunction experts_wg_ovl; /* and with MEMRA_MMQ_XE_OVERLAP=1 its early-trigger entry (_wgs_o1), else NULL */
    const char *xe_wg_name;    /* experts_wg's kernel: _wgs, or _wgspp / _wgsf / _wgsi under MEMRA_MMQ_WG_SEED=pp / pin / iadd */
    /* MEMRA_MMQ_XE_WG_REM=1 (with experts_wg as _wgs): both tables in one grid, the remainders on the 32-column
     * tile (mmq.cu memra_k_experts_q8_0r_wgsr), else NULL */
    CUfunction experts_wg_rem;
    int xe_wg_min_k;           /* auto (the default): MMQ_XE_WG_AUTO_K, the calls' least k; =1: 0 (every k) */
    int xe_raster;             /* MEMRA_MMQ_XE_RASTER: 0 off, 1 on (the default), 2 auto (experts of 384 rows and more) */
    int xe_wg_asked;           /* =1 given: a call the tile should take but cannot warns (auto: debug) */
    int sorted_xs[1 + MMQ_KR_FORMATS]; /* the lane's sorted tiles read the sum plane (the gather copies it) */
    const char *const *sorted_names[1 + MMQ_KR_FORMATS]; /* their names: memra__mmq_xe_sorted[l], or _tc (KR_TC) */
    /* the f16 / bf16 lanes of gemm_experts (off with MEMRA_MMQ_XE_F16=0), [bf16][tile] (the 32,
     * 64 and 128-row tiles, memra_k_experts_h16_*) and the activation's conversions (f16, bf16,
     * f16 copied), else NULL (the lanes decline) */
    CUfunction experts_h16[2][MMQ_XE_TILES], experts_cvt16[3];
    int h16_var; /* MEMRA_MMQ_XE_H16: the row of h16_tiles loaded */
    /* MEMRA_MMQ_WG (cc 9.x): gemm_q8_0r on the warpgroup MMA (mmq.cu memra_k_gemm_q8_0r_wgs by default,
     * 128 x 128, fed by tensor maps), else NULL; wg_all: every call takes it (=all); wg_min_m > 0 (auto,
     * the default): the calls with at least that many tokens, and smaller ones where the plan's model
     * prices it under the records tiles (run_tiles); else the calls whose planned tile has 128 tokens (=1) */
    CUfunction gemm_q8_0r_wg;
    /* MEMRA_MMQ_WG_TAIL=1 (with _wgs, not persistent): _wgs whose last row tile of 1 .. 96 tokens runs with 32, 64
     * or 96 token columns (mmq.cu memra_k_gemm_q8_0r_wgst), else NULL */
    CUfunction gemm_q8_0r_wgst;
    int wg_all, wg_min_m;
    int wg_fit; /* the kernel is _wgs or _wgsf, not persistent: auto weighs it below wg_min_m (run_tiles) */
    const char *wg_name; /* its kernel: _wgs (the default), _wgsa / _wgsax / _wgspp / _wgsf (SEED=smem / xp / pp /
                          * pin), or with SEED=0 _wg / _wgt (TR=1) */
    unsigned wg_smem;
    /* MEMRA_MMQ_WG_PERSIST=1 (implies WG_TR): the persistent _wgp, where every slice has steps, else NULL;
     * =N >= 2: at most N CTAs (a test's way to give each CTA several tiles), wgp_cap N, else 0 */
    CUfunction gemm_q8_0r_wgp;
    /* MEMRA_MMQ_WG_SK (auto by default; with _wgs): the seeded tile with a stream-k remainder
     * (memra_k_gemm_q8_0r_wgsk) and its fix-up (memra_k_gemm_q8_0r_skfix), else NULL */
    CUfunction gemm_q8_0r_wgsk, skfix;
    const char *wgsk_name; /* its kernel: _wgsk, or _wgskf / _wgski under MEMRA_MMQ_WG_SEED=pin / iadd (the fold pinned,
                            * run u2: slower; no seed wgmma, untimed) */
    int sk_mode; /* 1: every warpgroup-tile call (=1); 2: auto, where the plain grid's last wave is sparse (run_tiles) */
    int wgp_cap;
    const char *wgp_name; /* the persistent kernel: _wgps (seeded), or _wgp with MEMRA_MMQ_WG_SEED=0 */
    /* MEMRA_MMQ_KR_WG=1 (cc 9.x, opt-in; run i2: 0.75-0.96x the records tiles): gemm_kr's Q4_K / Q5_K on
     * the seeded warpgroup tile (mmq.cu memra_k_gemm_kr_q4_k_wgs / _q5_k_wgs; the records' sum plane), or
     * with =mma the tile whose min term is two tf32 wgmmas a step (_wgm, untimed), else NULL; kr_wg_names
     * and kr_wg_smem those of the loaded pair */
    CUfunction gemm_kr_wg[2];
    const char *const *kr_wg_names;
    unsigned kr_wg_smem;
    /* MEMRA_MMQ_KR_WG=pre / pre2 (kr_pre 1 / 2, with the _wgm pair above): the widening pass per format
     * (memra_k_kq_widen_q4_k / _q5_k; pre2: memra_k_kq_prep2_*, which also writes the tokens' image) and
     * the _wgm tile fed by the images (memra_k_gemm_kr_kq_wgw / _wgw2), else NULL and 0. A call without
     * scratch for the images runs the _wgm tile: the same stage contents, the same results. */
    CUfunction kq_widen[2], gemm_kr_wgw;
    int kr_pre;
    int kr_wg_min_m; /* =auto: the K-quant warpgroup tile from this many tokens (MMQ_KR_WG_AUTO_M), else 0 */
    int kr_auto;     /* MEMRA_MMQ_KR_WG unset or auto: the fallbacks are no news (logged at INFO / DEBUG) */
    const char *const *kq_widen_names;
    const char *kr_wgw_name;
    atomic_int xe_pick_warned; /* one-way: gemm_experts' table-pick warning was logged (then at DEBUG) */
    atomic_int kw_short; /* one-way: a call found no scratch for the image (logged once at WARN, INFO under auto, then
                          * DEBUG) */
} mmq_state;

/* The 16-bit grouped tiles (mmq.cu "gemm_experts on the f16 / bf16 lanes"), [variant][tile of
 * 32 / 64 / 128 rows]: MEMRA_MMQ_XE_H16 = k64 (the default since run t3: 128 columns, 64 values
 * a stage, 3 stages), k32 (32 values a stage, 4 stages: run t2's tile), n8 (k32 with 256 columns
 * where the tile has 64 or 128 rows), n8k64 (k64 with 256 columns on the 128-row tile); smem =
 * mmq.cu's H16_SMEM(MT, NT, BK, ST). Run t3 (f16, m = 512): k64 0.21 ms on the Qwen3-like rows
 * and 0.62 / 0.75 ms on the Mixtral-like gate / down rows, k32 0.25 and 0.75 / 1.03, n8 0.25 and
 * 0.86 / 1.19, n8k64 0.21 and 0.66 / 0.96. */
typedef struct {
    const char *kernel[2]; /* f16, bf16 */
    int bn;
    unsigned smem;
} h16_tile;
#define H16_T(S, MT, NT, BK, ST)                                                                                      \
    {{"memra_k_experts_h16_f16_mt" #MT S, "memra_k_experts_h16_bf16_mt" #MT S}, 32 * (NT),                        \
     (unsigned)((ST) * (32 * (MT) + 32 * (NT)) * (2 * (BK) + 16))}
static const h16_tile h16_tiles[4][MMQ_XE_TILES] = {
    {H16_T("_k64", 1, 4, 64, 3), H16_T("_k64", 2, 4, 64, 3), H16_T("_k64", 4, 4, 64, 3)},
    {H16_T("", 1, 4, 32, 4), H16_T("", 2, 4, 32, 4), H16_T("", 4, 4, 32, 4)},
    {H16_T("", 1, 4, 32, 4), H16_T("_n8", 2, 8, 32, 4), H16_T("_n8", 4, 8, 32, 4)},
    {H16_T("_k64", 1, 4, 64, 3), H16_T("_k64", 2, 4, 64, 3), H16_T("_n8k64", 4, 8, 64, 3)},
};
#undef H16_T
static const char *const h16_var_names[4] = {"k64", "k32", "n8", "n8k64"};

#define MMQ_K(q) ((const mmq_state *)memra__gpu_state((q), &memra__gpu_family_mmq))

/* MEMRA_MMQ_KR_WG's kernels, Q4_K and Q5_K */
static const char *const k_kr_wg_names[2] = {"memra_k_gemm_kr_q4_k_wgs", "memra_k_gemm_kr_q5_k_wgs"};
static const char *const k_kr_wgm_names[2] = {"memra_k_gemm_kr_q4_k_wgm", "memra_k_gemm_kr_q5_k_wgm"};
static const char *const k_kq_widen_names[2][2] = {{"memra_k_kq_widen_q4_k", "memra_k_kq_widen_q5_k"},
                                                   {"memra_k_kq_prep2_q4_k", "memra_k_kq_prep2_q5_k"}};
static const char *const k_kr_wgw_names[2] = {"memra_k_gemm_kr_kq_wgw", "memra_k_gemm_kr_kq_wgw2"};

/* Short names for the runtime's helpers (gpu.h). */
static memra_status decline(memra_call *call, const char *reason) { return memra__gpu_decline(call, reason); }
static int aligned(memra_dptr p, unsigned a) { return memra__gpu_aligned(p, a); }
static unsigned blocks(const memra__gpu *q, int64_t items, int64_t per_block) { return memra__gpu_blocks(q, items, per_block); }
static memra_status check_gemm(memra__gpu *q, const char *op, const memra_gemm_args *a) { return memra__gpu_check_gemm(q, op, a); }
static memra_dptr y_base(const memra_gemm_args *a) { return memra__gpu_y_base(a); }
/* memra_call.sizing: the core wants only the call's scratch requests (memra_stream_reserve); once they
 * are made, sized() says so and the call returns without launching */
static int sizing(const memra_call *call) { return MEMRA_HAS_MEMBER(call, memra_call, sizing) && call->sizing == 1; }
static memra_status sized(memra_call *call)
{
    call->sizing = 2;
    return MEMRA_STATUS_OK;
}

/* The device's SMs for the plans and grids (16 where the caps do not say) */
static int64_t sms_of(const memra__gpu *q) { return q->caps->sm_count > 0 ? q->caps->sm_count : 16; }

/* The stream-k tile's partial-sum slots on P CTAs: 2 P tiles of 128 x 128 floats */
#define MMQ_SK_SLOT_BYTES(P) ((size_t)(P) * 2u * 65536u)

/* Whether image m holds every kernel of a tile table (a miss is not an error: an older or PTX image may lack
 * a variant's entry points; memra__gpu_has_kernel reads the image before it asks the driver). */
static int tiles_present(const memra__gpu *q, CUmodule m, const memra__mmq_r3_tile *tiles)
{
    for (int t = 0; t < MEMRA__MMQ_R3_TILES; t++)
        if (!memra__gpu_has_kernel(q, m, tiles[t].kernel)) return 0;
    return 1;
}
/* and a grouped table's MMQ_XE_TILES kernel names */
static int names_present(const memra__gpu *q, CUmodule m, const char *const *names)
{
    for (int t = 0; t < MMQ_XE_TILES; t++)
        if (!memra__gpu_has_kernel(q, m, names[t])) return 0;
    return 1;
}


/* A records tile two of which fit an SM's shared memory (the SM's is the per-block opt-in limit + 1 KB,
 * and each block reserves 1 KB), as plan_tiles counts them */
static int tile_two(const memra_device_caps *caps, const memra__mmq_r3_tile *tl)
{
    const size_t optin = caps->smem_per_block_optin;
    return !tl->one && (optin == 0 || optin >= 2 * (size_t)tl->smem + 1024);
}

/* The bytes that keep a block alone on its SM: past half the SM's shared memory, with 256 to spare;
 * 0 where the opt-in limit is unknown */
static unsigned one_pad_of(const memra_device_caps *caps)
{
    const size_t optin = caps->smem_per_block_optin;
    if (optin == 0 || optin > (size_t)UINT32_MAX) return 0;
    const size_t pad = (optin + 1024) / 2 - 1024 + 256;
    return pad <= optin ? (unsigned)pad : 0;
}

/* An opt-in twin of the grouped warpgroup tile (knob=1 loads kernel in _wgs's place): refused, with a warning and the
 * tile kept, unless the tile is _wgs itself (MEMRA_MMQ_WG_SEED=1, no other twin) without XE_WG_REM or XE_OVERLAP
 * and the image has the twin */
static void xe_wg_twin(memra__gpu *q, CUmodule m, mmq_state *s, const char *knob, const char *kernel, unsigned smem)
{
    const char *v = memra__gpu_knob(q, knob);
    CUfunction f = NULL;
    if (v == NULL || strcmp(v, "1") != 0) return;
    if (s->experts_wg == NULL || strcmp(s->xe_wg_name, "memra_k_experts_q8_0r_wgs") != 0 || s->experts_wg_rem != NULL ||
        s->experts_wg_ovl != NULL || !memra__gpu_function_optional(q, m, kernel, smem, &f))
        q->host->log(MEMRA_LOG_WARN, q->name,
                     "%s=1: needs %s as memra_k_experts_q8_0r_wgs (MEMRA_MMQ_WG_SEED=1, no other twin), without "
                     "MEMRA_MMQ_XE_WG_REM or _OVERLAP, and this image's %s; the tile runs without it",
                     knob, s->xe_wg_name, kernel);
    else
        s->experts_wg = f, s->xe_wg_name = kernel;
}

/* The dynamic shared memory a records tile's function is set up for: its own, or one_pad where a
 * dependent launch of a one-wave grid may ask that (run_tiles) */
static unsigned tile_smem_max(const mmq_state *s, const memra_device_caps *caps, const memra__mmq_r3_tile *tl)
{
    return tile_two(caps, tl) && s->one_pad > tl->smem ? s->one_pad : tl->smem;
}

/* the seeded tile, pinned or not, or seeded by the fold (_wgs, _wgsf, _wgsi): the one the stream-k tile and the plan's
 * fit below 1024 tokens serve */
static int wg_seeded_plain(const char *wg_name)
{
    return strcmp(wg_name, "memra_k_gemm_q8_0r_wgs") == 0 || strcmp(wg_name, "memra_k_gemm_q8_0r_wgsf") == 0 ||
           strcmp(wg_name, "memra_k_gemm_q8_0r_wgsi") == 0;
}

/* The MEMRA_MMQ_WG_SEED values whose seeded tile has twins elsewhere, and their kernels: the dense tile, its stream-k
 * tile (NULL: none, _wgsk's name stays and the plain check refuses it), gemm_experts' tile and =pre2's K-quant
 * tile (NULL: _wgw2). Unset: "1", or "pin" where mmq.h makes it the default. smem / xp / 0 have no twins. */
typedef struct {
    const char *value, *dense, *sk, *xe, *kr;
} seed_twins;
static const seed_twins mmq_seed_twins[] = {
    {"1", "memra_k_gemm_q8_0r_wgs", "memra_k_gemm_q8_0r_wgsk", "memra_k_experts_q8_0r_wgs", NULL},
    {"pp", "memra_k_gemm_q8_0r_wgspp", NULL, "memra_k_experts_q8_0r_wgspp", NULL},
    {"pin", "memra_k_gemm_q8_0r_wgsf", "memra_k_gemm_q8_0r_wgskf", "memra_k_experts_q8_0r_wgsf",
     "memra_k_gemm_kr_kq_wgw2f"},
    {"iadd", "memra_k_gemm_q8_0r_wgsi", "memra_k_gemm_q8_0r_wgski", "memra_k_experts_q8_0r_wgsi", NULL},
};

static const seed_twins *seed_twins_of(const char *sd)
{
    const char *v = sd != NULL ? sd : MMQ_WG_SEED_PIN_DEFAULT ? "pin" : "1";
    for (size_t i = 0; i < sizeof mmq_seed_twins / sizeof mmq_seed_twins[0]; i++)
        if (strcmp(v, mmq_seed_twins[i].value) == 0) return &mmq_seed_twins[i];
    return NULL;
}

static memra_status mmq_load(memra__gpu *q, void *state)
{
    mmq_state *s = state;
    const memra_device_caps *caps = q->caps;
    if (caps->smem_per_block_optin != 0 && caps->smem_per_block_optin < MMQ_SMEM_BYTES)
        return q->host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the tile needs %zu bytes of shared memory, %s offers %zu",
                                  q->name, (size_t)MMQ_SMEM_BYTES, caps->name ? caps->name : "the device",
                                  caps->smem_per_block_optin);
    CUmodule m = NULL;
    memra_status st = memra__gpu_image_load(q, "mmq", &m);
    if (st != MEMRA_STATUS_OK) return st;
    static const char *const probes[3] = {"memra_k_probe_s32", "memra_k_probe_f32", "memra_k_probe_mx"};
    st = memra__gpu_function(q, m, "memra_k_quant_q8_1", 0, &s->quant_q8_1);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(q, m, "memra_k_gemm_q8_0", MMQ_SMEM_BYTES, &s->gemm_q8_0);
    for (int a = 0; a < 3 && st == MEMRA_STATUS_OK; a++)
        st = memra__gpu_function(q, m, probes[a], MMQ_SMEM_BYTES, &s->probe[a]);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(q, m, "memra_k_repack_q8_0", 0, &s->repack_q8_0);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(q, m, "memra_k_splitk_sum", 0, &s->splitk_sum);
    if (st == MEMRA_STATUS_OK) st = memra__gpu_function(q, m, "memra_k_experts_route", 0, &s->experts_route);
    if (st == MEMRA_STATUS_OK)
        st = memra__gpu_function(q, m, "memra_k_experts_splitk_sum", 0, &s->experts_splitk_sum);
    for (int l = 0; l < 1 + MMQ_KR_FORMATS && st == MEMRA_STATUS_OK; l++)
        for (int t = 0; t < MMQ_XE_TILES && st == MEMRA_STATUS_OK; t++)
            if (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= memra__mmq_xe_tiles[l][t].smem)
                st = memra__gpu_function(q, m, memra__mmq_xe_tiles[l][t].kernel, memra__mmq_xe_tiles[l][t].smem,
                                         &s->experts[l][t]);
    /* MEMRA_MMQ_QUANT_LEAN (on unless =0; run r2: 4-8% faster): the 2-D-grid quantiser, where the image has it
     * (every image built from mmq.cu); one without it is news only where =1 asked for it */
    if (st == MEMRA_STATUS_OK) {
        const char *lean = memra__gpu_knob(q, "MEMRA_MMQ_QUANT_LEAN");
        s->quant_q8_1l = NULL;
        if ((lean == NULL || strcmp(lean, "0") != 0) &&
            !memra__gpu_function_optional(q, m, "memra_k_quant_q8_1l", 0, &s->quant_q8_1l))
            q->host->log(lean != NULL && strcmp(lean, "1") == 0 ? MEMRA_LOG_WARN : MEMRA_LOG_DEBUG, q->name,
                         "MEMRA_MMQ_QUANT_LEAN=%s: this image has no memra_k_quant_q8_1l; memra_k_quant_q8_1 serves",
                         lean != NULL ? lean : "1 (the default)");
    }
    /* each gemm_q8_0r tile only where its shared memory fits (sm_120's 99 KB
     * takes all but the 128 x 128 one) */
    {
        const char *un = memra__gpu_knob(q, "MEMRA_MMQ_R3_UNROLL");
        s->r3_tiles = un != NULL && strcmp(un, "1") == 0 ? memra__mmq_r3_tiles_u : memra__mmq_r3_tiles;
        /* the bulk-copy tiles on cc 9.0+ where all of them load, else these: on unless
         * MEMRA_MMQ_BULK=0 (run y2: 12-14% faster at m = 512, 5-7% at 4096 on the 27b sheet), and
         * not where MEMRA_MMQ_R3_UNROLL=1 alone asks for the unrolled tiles */
        const char *bk = memra__gpu_knob(q, "MEMRA_MMQ_BULK");
        const int bulk_asked = bk != NULL && strcmp(bk, "1") == 0;
        if (bulk_asked || ((bk == NULL || strcmp(bk, "0") != 0) && s->r3_tiles != memra__mmq_r3_tiles_u)) {
            /* probed with the driver alone (a miss is not an error: the PTX images have no _b tiles);
             * the loop below loads the table chosen */
            if (caps->cc >= 90 && tiles_present(q, m, memra__mmq_r3_tiles_b)) {
                if (s->r3_tiles == memra__mmq_r3_tiles_u)
                    q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_BULK=1 wins over MEMRA_MMQ_R3_UNROLL=1");
                s->r3_tiles = memra__mmq_r3_tiles_b;
                s->bulk = 1;
            } else if (bulk_asked) {
                q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_BULK=1: the bulk-copy tiles need cc 9.0+ and this "
                                                      "image's _b kernels; the cp.async tiles serve");
            }
        }
    }
    /* MEMRA_MMQ_ONE: the floor's tiles at one CTA per SM (the two-CTA bound's 128 registers spill
     * and serialise the MMAs; one CTA halves the warps). Default q6_k: Q6_K's (250 registers at
     * one CTA) only, run c1: Q6_K 5% faster at m = 4096 and level at 512, every other format 1-7%
     * slower; 1: every format; 0: none. The images' _bo / _to / _o kernels, probed like the bulk
     * ones (an older image lacks them: the two-CTA tiles serve) */
    const char *one = memra__gpu_knob(q, "MEMRA_MMQ_ONE");
    const int one_asked = one != NULL && strcmp(one, "1") == 0;
    const int one_q6 = one_asked || one == NULL || strcmp(one, "q6_k") == 0; /* Q6_K's default */
    if (one_asked) {
        if (s->bulk && tiles_present(q, m, memra__mmq_r3_tiles_bo)) s->r3_tiles = memra__mmq_r3_tiles_bo;
        else
            q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_ONE=1: gemm_q8_0r's one-CTA tiles need the bulk-copy "
                                                  "tiles (cc 9.0+) and this image's _bo kernels; the two-CTA tiles serve");
    }
    s->one_pad = one_pad_of(caps);
    for (int t = 0; t < MEMRA__MMQ_R3_TILES && st == MEMRA_STATUS_OK; t++)
        if (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= s->r3_tiles[t].smem)
            st = memra__gpu_function(q, m, s->r3_tiles[t].kernel, tile_smem_max(s, caps, &s->r3_tiles[t]),
                                     &s->gemm_q8_0r[t]);
    /* MEMRA_MMQ_WG_SEED, read once: the dense seeded tile's variant below, and pp / pin / iadd also pick the
     * grouped tile's twin, pin / iadd the stream-k tile's, and pin the prepared K-quant tile's (mmq_seed_twins) */
    const char *sd = memra__gpu_knob(q, "MEMRA_MMQ_WG_SEED");
    /* 1 / pp / pin / iadd (and unset): mmq_seed_twins' row; pp: _wgspp, its consumer warpgroups folding in turn (run
     * r1: slower); pin: _wgsf, each group's fold pinned behind its s8 wgmma (mmq.cu r3w_pin; run u2: 5-8% slower);
     * iadd: _wgsi, no seed wgmma, the fold adds the seed (untimed) */
    const seed_twins *tw = seed_twins_of(sd);
    /* MEMRA_MMQ_WG: gemm_q8_0r on the warpgroup MMA where the GPU is cc 9.x, the driver encodes tensor
     * maps and the image has the kernel (sm_90a SASS only). auto (the default): the calls of at least
     * MMQ_WG_AUTO_M tokens, seeded by the tensor cores (runs i1 / i4, H100: _wgs 6-12% faster than the
     * records tiles on all six 27b rows at m = 1024, 2048 and 4096; at 512 faster on three, slower on
     * three, so below 1024 the plan's model chooses); =1: the plan's 128-token picks; =all: every call */
    s->gemm_q8_0r_wg = s->gemm_q8_0r_wgst = NULL;
    {
        const char *wg = memra__gpu_knob(q, "MEMRA_MMQ_WG");
        const int autom = wg == NULL || strcmp(wg, "auto") == 0;
        s->wg_all = wg != NULL && strcmp(wg, "all") == 0;
        s->wg_min_m = autom ? MMQ_WG_AUTO_M : 0;
        s->gemm_q8_0r_wgp = NULL;
        s->gemm_q8_0r_wgsk = s->skfix = NULL;
        s->wgsk_name = "memra_k_gemm_q8_0r_wgsk";
        s->sk_mode = 0;
        if (st == MEMRA_STATUS_OK && (autom || strcmp(wg, "1") == 0 || s->wg_all)) {
            const char *tr = memra__gpu_knob(q, "MEMRA_MMQ_WG_TR"), *pe = memra__gpu_knob(q, "MEMRA_MMQ_WG_PERSIST");
            char *pend = NULL;
            const long pv = pe != NULL ? strtol(pe, &pend, 10) : 0;
            const int per = pe != NULL && pend != pe && *pend == '\0' && pv >= 1 && pv <= 4096;
            s->wgp_cap = per && pv >= 2 ? (int)pv : 0;
            /* on by default (runs i1 / i4); smem: _wgsa, the seed's A from shared memory (untimed) */
            const int sda = sd != NULL && strcmp(sd, "smem") == 0;
            /* xp: _wgsax, _wgsa with the token scales loaded a group ahead (untimed) */
            const int sdx = sd != NULL && strcmp(sd, "xp") == 0;
            const int seed = tw != NULL || sda || sdx;
            const int t = seed || per || (tr != NULL && strcmp(tr, "1") == 0);
            s->wg_name = tw != NULL ? tw->dense
                         : sdx      ? "memra_k_gemm_q8_0r_wgsax"
                         : sda      ? "memra_k_gemm_q8_0r_wgsa"
                         : t        ? "memra_k_gemm_q8_0r_wgt"
                                    : "memra_k_gemm_q8_0r_wg";
            s->wgp_name = seed ? "memra_k_gemm_q8_0r_wgps" : "memra_k_gemm_q8_0r_wgp";
            s->wg_smem = seed ? R3W_SMEM_BYTES_SD(1) : R3W_SMEM_BYTES_OF(t);
            const int ok = caps->cc / 10 == 9 && q->cuTensorMapEncodeTiled != NULL && !q->from_ptx &&
                           (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= s->wg_smem);
            if (!ok || !memra__gpu_function_optional(q, m, s->wg_name, s->wg_smem, &s->gemm_q8_0r_wg)) {
                s->gemm_q8_0r_wg = NULL;
                /* a default that cannot apply (another GPU, a PTX image) is no news: said at debug level */
                q->host->log(autom ? MEMRA_LOG_DEBUG : MEMRA_LOG_WARN, q->name,
                             "MEMRA_MMQ_WG=%s: the warpgroup gemm_q8_0r tile needs cc 9.x, the driver's tensor maps "
                             "and this image's %s; the records tiles serve", wg != NULL ? wg : "auto", s->wg_name);
            } else if (per && !memra__gpu_function_optional(q, m, s->wgp_name, s->wg_smem, &s->gemm_q8_0r_wgp)) {
                q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_WG_PERSIST=%s: this image has no %s; %s serves", pe,
                             s->wgp_name, s->wg_name);
            }
            const char *sk = memra__gpu_knob(q, "MEMRA_MMQ_WG_SK");
            /* auto by default (run p10, H100, m = 512, two rounds: the four rows it takes 2.5-10% faster, the
             * others level); 1 every warpgroup call; 0 never */
            s->sk_mode = sk != NULL && strcmp(sk, "0") == 0 ? 0 : sk != NULL && strcmp(sk, "1") == 0 ? 1 : 2;
            s->wgsk_name = tw != NULL && tw->sk != NULL ? tw->sk : "memra_k_gemm_q8_0r_wgsk";
            if (s->sk_mode != 0 && s->gemm_q8_0r_wg != NULL) {
                if (s->gemm_q8_0r_wgp != NULL || !wg_seeded_plain(s->wg_name) ||
                    !memra__gpu_function_optional(q, m, s->wgsk_name, s->wg_smem, &s->gemm_q8_0r_wgsk) ||
                    !memra__gpu_function_optional(q, m, "memra_k_gemm_q8_0r_skfix", 0, &s->skfix)) {
                    s->gemm_q8_0r_wgsk = s->skfix = NULL;
                    /* a default that cannot apply is no news */
                    q->host->log(sk == NULL || strcmp(sk, "auto") == 0 ? MEMRA_LOG_DEBUG : MEMRA_LOG_WARN, q->name,
                                 "MEMRA_MMQ_WG_SK=%s: the stream-k tile needs the seeded tile (MEMRA_MMQ_WG_SEED=1 or "
                                 "pin, no MEMRA_MMQ_WG_PERSIST) and this image's %s; %s serves",
                                 sk, s->wgsk_name, s->wg_name);
                }
            }
        }
        /* MEMRA_MMQ_WG_TAIL=1: the tile's twin whose short last row tile has 32, 64 or 96 token columns (untimed) */
        const char *wt = memra__gpu_knob(q, "MEMRA_MMQ_WG_TAIL");
        if (wt != NULL && strcmp(wt, "1") == 0 &&
            (s->gemm_q8_0r_wg == NULL || s->gemm_q8_0r_wgp != NULL || strcmp(s->wg_name, "memra_k_gemm_q8_0r_wgs") != 0 ||
             !memra__gpu_function_optional(q, m, "memra_k_gemm_q8_0r_wgst", s->wg_smem, &s->gemm_q8_0r_wgst))) {
            s->gemm_q8_0r_wgst = NULL;
            q->host->log(MEMRA_LOG_WARN, q->name,
                         "MEMRA_MMQ_WG_TAIL=1: needs the seeded tile memra_k_gemm_q8_0r_wgs (MEMRA_MMQ_WG_SEED=1, not "
                         "persistent) and this image's memra_k_gemm_q8_0r_wgst; the tile's last row tile keeps 128 "
                         "token columns");
        }
        /* the plan's step_wg was fitted to _wgs alone: the other kernels keep auto's fixed threshold, but for _wgsf
         * and _wgsi (the same tile and plan, its fold pinned, or seeded by the fold) */
        s->wg_fit = s->gemm_q8_0r_wg != NULL && s->gemm_q8_0r_wgp == NULL && wg_seeded_plain(s->wg_name);
    }
    {
        const char *tc = memra__gpu_knob(q, "MEMRA_MMQ_KR_TC");
        /* Q4_K and Q5_K by default (run x1: Q4_K 3-7% faster on the 27b sheet; run d3, both on the
         * sum plane: Q5_K 2-4% faster, where with the MMA sums it was 2-4% slower); q4_k: Q4_K only;
         * MEMRA_MMQ_KR_TC=0: neither */
        s->kr_tc = tc == NULL || strcmp(tc, "1") == 0 ? 3 : strcmp(tc, "q4_k") == 0 ? 1 : 0;
        /* MEMRA_MMQ_KR_SUMS: the min term's t from the records' sum plane (default), 0: by an MMA */
        const char *xs = memra__gpu_knob(q, "MEMRA_MMQ_KR_SUMS");
        const int sums = xs == NULL || strcmp(xs, "0") != 0;
        s->kr_sums = sums;
        /* MEMRA_MMQ_KR_BULK: the TF32-fold sum-plane tiles on the bulk copies, cc 9.x, by default (runs
         * e1 / e2, three rounds: Q4_K 5% faster at m = 4096 and 512, Q5_K 3% / 10%); 0: the cp.async
         * tiles. Elsewhere the cp.async tiles serve, with a warning only where 1 was asked. */
        const char *kb = memra__gpu_knob(q, "MEMRA_MMQ_KR_BULK");
        const int kr_bulk_asked = kb != NULL && strcmp(kb, "1") == 0;
        const int kr_bulk = kb == NULL || kr_bulk_asked;
        s->kr_bulk = kr_bulk && caps->cc / 10 == 9;
        /* MEMRA_MMQ_KR6_BULK: Q6_K's one-CTA tiles on the bulk copies, cc 9.x, by default (run f1, one
         * round: 3.7% less time at m = 4096 on every shape, 0.955-0.967; m = 512 even, 1.001, 0.970-1.019);
         * 0: the cp.async _o tiles. Elsewhere those serve, with a warning only where 1 was asked. */
        const char *kb6 = memra__gpu_knob(q, "MEMRA_MMQ_KR6_BULK");
        const int kr6_asked = kb6 != NULL && strcmp(kb6, "1") == 0;
        const int kr6_bulk = kb6 == NULL || kr6_asked;
        for (int f = 0; f < MMQ_KR_FORMATS; f++) {
            s->kr_tiles[f] = f < 2 && (s->kr_tc >> f & 1) ? memra__mmq_kr_tiles_tc[f] : memra__mmq_kr_tiles[f];
            /* the one-CTA kernels exist for Q4_K's TC fold and Q5_K's / Q6_K's per-32 fold only;
             * one CTA (no sum plane) wins where both are asked */
            const int dflt = f == 0 ? (s->kr_tc & 1) != 0 : f == 1 ? (s->kr_tc & 2) == 0 : 1;
            const int one_f = f == 2 ? one_q6 : one_asked; /* f 2: Q6_K */
            /* the sum plane: Q4_K on the TC fold, Q5_K on either (Q4_K's per-32 fold keeps the MMA sums) */
            const int tcf = f < 2 && (s->kr_tc >> f & 1);
            const memra__mmq_r3_tile *xt = f == 0 ? (tcf ? memra__mmq_kr_tiles_x[0] : NULL)
                                           : f == 1 ? (tcf ? memra__mmq_kr_tiles_x5t : memra__mmq_kr_tiles_x[1]) : NULL;
            if (sums && xt != NULL && tiles_present(q, m, xt)) s->kr_tiles[f] = xt;
            if (kr_bulk && sums && tcf) {
                /* cc 9.x only: on sm_120 Q5_K's 128 x 96 tile takes all 99 KB, leaving no room for the
                 * bulk tiles' static mbarriers */
                if (caps->cc / 10 == 9 && tiles_present(q, m, memra__mmq_kr_tiles_xb[f]))
                    s->kr_tiles[f] = memra__mmq_kr_tiles_xb[f];
                else if (kr_bulk_asked)
                    q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_KR_BULK=1: gemm_kr's bulk-copy tiles need cc 9.x "
                                                          "and this image's _txb kernels; the cp.async tiles serve");
            }
            if (one_f && dflt && tiles_present(q, m, memra__mmq_kr_tiles_one[f])) s->kr_tiles[f] = memra__mmq_kr_tiles_one[f];
            if (f == 2 && kr6_bulk) {
                if (caps->cc / 10 == 9 && s->kr_tiles[2] == memra__mmq_kr_tiles_one[2] &&
                    tiles_present(q, m, memra__mmq_kr_tiles_ob6))
                    s->kr_tiles[2] = memra__mmq_kr_tiles_ob6;
                else if (kr6_asked)
                    q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_KR6_BULK=1: Q6_K's bulk-copy tiles need cc 9.x, its "
                                                          "one-CTA tiles (MEMRA_MMQ_ONE not 0) and this image's _ob "
                                                          "kernels; the cp.async tiles serve");
            }
        }
    }
    /* MEMRA_MMQ_KR_WG=1 / mma / pre: Q4_K / Q5_K on the seeded warpgroup tile, which reads the records' sum
     * plane (pre: the _wgm pair, then the widening pass and the tile on its image) */
    s->gemm_kr_wg[0] = s->gemm_kr_wg[1] = NULL;
    s->kq_widen[0] = s->kq_widen[1] = s->gemm_kr_wgw = NULL;
    s->kr_pre = 0;
    atomic_init(&s->kw_short, 0);
    atomic_init(&s->xe_pick_warned, 0);
    {
        const char *kw = memra__gpu_knob(q, "MEMRA_MMQ_KR_WG"), *kwn = kw != NULL ? kw : "auto";
        /* auto (the default): =pre2 from MMQ_KR_WG_AUTO_M tokens (run n1, H100: 0.78x / 0.81x the records tiles'
         * time at m = 1024 / 4096); where it cannot apply (another GPU, a PTX image) the records tiles serve, said
         * at debug level */
        const int autom = kw == NULL || strcmp(kw, "auto") == 0;
        const int quiet = autom ? MEMRA_LOG_DEBUG : MEMRA_LOG_WARN;
        s->kr_auto = autom;
        const int pre = autom ? 2 : strcmp(kw, "pre") == 0 ? 1 : strcmp(kw, "pre2") == 0 ? 2 : 0;
        s->kr_wg_min_m = autom ? MMQ_KR_WG_AUTO_M : 0;
        s->kq_widen_names = k_kq_widen_names[pre == 2];
        s->kr_wgw_name = k_kr_wgw_names[pre == 2];
        /* MEMRA_MMQ_WG_SEED=pin: =pre2's tile with the fold pinned behind the s8 wgmma (_wgw2f; untimed) */
        if (pre == 2 && tw != NULL && tw->kr != NULL) s->kr_wgw_name = tw->kr;
        const int mma = pre > 0 || strcmp(kw, "mma") == 0;
        s->kr_wg_names = mma ? k_kr_wgm_names : k_kr_wg_names;
        s->kr_wg_smem = mma ? R3W_SMEM_BYTES_KM : R3W_SMEM_BYTES_KQ;
        const int on = mma || strcmp(kw, "1") == 0;
        if (st == MEMRA_STATUS_OK && on && !s->kr_sums) {
            q->host->log(quiet, q->name,
                         "MEMRA_MMQ_KR_WG=%s: the warpgroup K-quant tile reads the records' sum plane, which "
                         "MEMRA_MMQ_KR_SUMS=0 turns off; the records tiles serve", kwn);
        } else if (st == MEMRA_STATUS_OK && on) {
            const int ok = caps->cc / 10 == 9 && q->cuTensorMapEncodeTiled != NULL && !q->from_ptx &&
                           (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= s->kr_wg_smem);
            for (int f = 0; f < 2; f++)
                if (!ok || !memra__gpu_function_optional(q, m, s->kr_wg_names[f], s->kr_wg_smem, &s->gemm_kr_wg[f])) {
                    s->gemm_kr_wg[f] = NULL;
                    q->host->log(quiet, q->name,
                                 "MEMRA_MMQ_KR_WG=%s: %s needs cc 9.x, the driver's tensor maps and this image's kernel; "
                                 "the records tiles serve",
                                 kwn, s->kr_wg_names[f]);
                }
            if (pre && s->gemm_kr_wg[0] != NULL && s->gemm_kr_wg[1] != NULL) {
                if (memra__gpu_function_optional(q, m, s->kr_wgw_name, R3W_SMEM_BYTES_KM, &s->gemm_kr_wgw) &&
                    memra__gpu_function_optional(q, m, s->kq_widen_names[0], 0, &s->kq_widen[0]) &&
                    memra__gpu_function_optional(q, m, s->kq_widen_names[1], 0, &s->kq_widen[1]))
                    s->kr_pre = pre;
                else {
                    s->kq_widen[0] = s->kq_widen[1] = s->gemm_kr_wgw = NULL;
                    q->host->log(quiet, q->name,
                                 "MEMRA_MMQ_KR_WG=%s: this image lacks %s or its passes; the _wgm tiles serve (the same "
                                 "results)",
                                 kwn, s->kr_wgw_name);
                }
            }
        }
    }
    for (int f = 0; f < MMQ_KR_FORMATS && st == MEMRA_STATUS_OK; f++)
        for (int t = 0; t < MEMRA__MMQ_R3_TILES && st == MEMRA_STATUS_OK; t++)
            if (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= s->kr_tiles[f][t].smem)
                st = memra__gpu_function(q, m, s->kr_tiles[f][t].kernel, tile_smem_max(s, caps, &s->kr_tiles[f][t]),
                                         &s->gemm_kr[f][t]);
    if (st != MEMRA_STATUS_OK) return st;
    {
        /* Knobs, read once here (never per call). */
        const char *pdl = memra__gpu_knob(q, "MEMRA_MMQ_PDL");
        const char *bm = memra__gpu_knob(q, "MEMRA_MMQ_BM"), *bn = memra__gpu_knob(q, "MEMRA_MMQ_BN");
        const char *split = memra__gpu_knob(q, "MEMRA_MMQ_SPLIT");
        s->knobs.pdl_off = pdl != NULL && strcmp(pdl, "0") == 0;
        s->pdl_pack = pdl != NULL && strcmp(pdl, "pack") == 0;
        s->knobs.bm = bm ? atoi(bm) : 0;
        s->knobs.bn = bn ? atoi(bn) : 0;
        s->knobs.split = split ? atoi(split) : 0;
        const char *xe_bm = memra__gpu_knob(q, "MEMRA_MMQ_XE_BM");
        s->xe_bm = xe_bm ? atoi(xe_bm) : 0;
        const char *xe_split = memra__gpu_knob(q, "MEMRA_MMQ_XE_SPLIT");
        s->xe_split = xe_split ? atoi(xe_split) : 0;
        const char *xe_merge = memra__gpu_knob(q, "MEMRA_MMQ_XE_MERGE");
        for (int l = 0; xe_merge != NULL && strcmp(xe_merge, "1") == 0 && l < 1 + MMQ_KR_FORMATS; l++)
            for (int t = 1; t < MMQ_XE_TILES; t++) {
                if (s->experts[l][t] == NULL || s->experts[l][0] == NULL) continue; /* both tiles must fit */
                if (memra__gpu_function(q, m, memra__mmq_xe_merged[l][t], memra__mmq_xe_tiles[l][t].smem,
                                        &s->experts_merged[l][t]) != MEMRA_STATUS_OK) {
                    s->experts_merged[l][t] = NULL; /* the two launches then, as without the knob */
                    q->host->log(MEMRA_LOG_WARN, q->name, "gemm_experts: MEMRA_MMQ_XE_MERGE=1 but %s did not load",
                                 memra__mmq_xe_merged[l][t]);
                }
            }
    }
    {
        const char *xe_ovl = memra__gpu_knob(q, "MEMRA_MMQ_XE_OVERLAP");
        for (int l = 0; xe_ovl != NULL && strcmp(xe_ovl, "1") == 0 && l < 1 + MMQ_KR_FORMATS; l++)
            for (int t = 0; t < MMQ_XE_TILES; t++) {
                if (s->experts[l][t] == NULL) continue; /* where the plain tile fits */
                if (memra__gpu_function(q, m, memra__mmq_xe_ovl[l][t], memra__mmq_xe_tiles[l][t].smem,
                                        &s->experts_ovl[l][t]) != MEMRA_STATUS_OK) {
                    s->experts_ovl[l][t] = NULL; /* the plain pair then */
                    q->host->log(MEMRA_LOG_WARN, q->name, "gemm_experts: MEMRA_MMQ_XE_OVERLAP=1 but %s did not load",
                                 memra__mmq_xe_ovl[l][t]);
                }
            }
    }
    {
        const char *xe_sort = memra__gpu_knob(q, "MEMRA_MMQ_XE_SORT");
        const int sort_on = xe_sort == NULL || strcmp(xe_sort, "0") != 0; /* on unless MEMRA_MMQ_XE_SORT=0 */
        const char *xe_loop2 = memra__gpu_knob(q, "MEMRA_MMQ_XE_LOOP2");
        const int loop2 = xe_loop2 != NULL && strcmp(xe_loop2, "1") == 0;
        /* the K-quant lanes on the TC fold (kr_tc) take it here too (the
         * dense _t tiles' fold: grouped and dense outputs stay bit for bit the same) */
        for (int l = 0; l < 1 + MMQ_KR_FORMATS; l++) {
            s->sorted_names[l] = (l == 1 || l == 2) && (s->kr_tc >> (l - 1) & 1) ? memra__mmq_xe_sorted_tc[l - 1]
                                                                                  : memra__mmq_xe_sorted[l];
            /* MEMRA_MMQ_KR_SUMS, as the dense tiles: Q4_K's TC fold and Q5_K's two on the sum plane */
            const char *const *xn = l == 1 || l == 2 ? memra__mmq_xe_sorted_x[l - 1][s->kr_tc >> (l - 1) & 1] : NULL;
            s->sorted_xs[l] = 0;
            if (s->kr_sums && xn != NULL && xn[0] != NULL) {
                const int xs_ok = names_present(q, m, xn);
                if (xs_ok) s->sorted_names[l] = xn, s->sorted_xs[l] = 1;
                /* and on the bulk copies with the dense tiles (TC fold, cc 9.x), where the image has them all */
                const int xb_ok = xs_ok && s->kr_bulk && (s->kr_tc >> (l - 1) & 1) &&
                                  names_present(q, m, memra__mmq_xe_sorted_xb[l - 1]);
                if (xb_ok) s->sorted_names[l] = memra__mmq_xe_sorted_xb[l - 1];
                /* MEMRA_MMQ_XE_LOOP2=1: their full tiles' k loop apart, where the image has them all */
                if (xb_ok && loop2 && names_present(q, m, memra__mmq_xe_sorted_xb2[l - 1]))
                    s->sorted_names[l] = memra__mmq_xe_sorted_xb2[l - 1];
                else if (loop2 && l == 1)
                    q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_XE_LOOP2=1: the _stxb2 tiles need the bulk-copy sorted "
                                                          "tiles (cc 9.x, MEMRA_MMQ_KR_BULK, the TC fold) and this image's "
                                                          "_stxb2 kernels; the _stxb / _stx tiles serve");
            }
        }
        /* Q8_0 on the bulk copies, where the image has every _sb tile */
        if (s->bulk && names_present(q, m, memra__mmq_xe_sorted_b)) s->sorted_names[0] = memra__mmq_xe_sorted_b;
        if (sort_on &&
            memra__gpu_function(q, m, "memra_k_experts_gather_q8_1", 0, &s->experts_gather) == MEMRA_STATUS_OK) {
            for (int l = 0; l < 1 + MMQ_KR_FORMATS; l++)
                for (int t = 0; t < MMQ_XE_TILES; t++)
                    if (s->experts[l][t] != NULL &&
                        memra__gpu_function(q, m, s->sorted_names[l][t], memra__mmq_xe_tiles[l][t].smem,
                                            &s->experts_sorted[l][t]) != MEMRA_STATUS_OK)
                        s->experts_sorted[l][t] = NULL;
        } else if (sort_on) {
            s->experts_gather = NULL;
            q->host->log(MEMRA_LOG_WARN, q->name,
                         "gemm_experts: the records' gather kernel did not load: the grouped tiles gather their rows");
        }
        /* MEMRA_MMQ_XE_TALL=1: the 160 x 96 tiles, each beside its lane's sorted bulk tiles (Q8_0 _sb,
         * Q4_K _stxb or, with MEMRA_MMQ_XE_LOOP2=1, _stxb2: cc 9.x, the defaults there) and the gather */
        const char *xe_tall = memra__gpu_knob(q, "MEMRA_MMQ_XE_TALL");
        for (int l = 0; l < 2; l++) {
            s->experts_tall[l] = NULL;
            if (xe_tall == NULL || strcmp(xe_tall, "1") != 0) continue;
            const int base_ok = caps->cc / 10 == 9 &&
                                (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= memra__mmq_xe_tall[l].smem) &&
                                s->experts_gather != NULL && s->experts_sorted[l][0] != NULL &&
                                (l == 0 ? s->sorted_names[l] == memra__mmq_xe_sorted_b
                                        : s->sorted_names[l] == memra__mmq_xe_sorted_xb[0] ||
                                              s->sorted_names[l] == memra__mmq_xe_sorted_xb2[0]);
            if (!base_ok || memra__gpu_function(q, m, memra__mmq_xe_tall[l].kernel, memra__mmq_xe_tall[l].smem,
                                                &s->experts_tall[l]) != MEMRA_STATUS_OK) {
                s->experts_tall[l] = NULL;
                q->host->log(MEMRA_LOG_WARN, q->name,
                             "MEMRA_MMQ_XE_TALL=1: %s needs cc 9.x, the sorted bulk-copy tiles (%s) and this image's "
                             "kernel; the 128-row tiles serve",
                             memra__mmq_xe_tall[l].kernel, l == 0 ? "_sb" : "_stxb");
            }
        }
        /* MEMRA_MMQ_XE_WG (auto / 1): the 128-row table's Q8_0 tiles on the seeded warpgroup tile (the dense _wgs'
         * wgmmas and fold: its outputs the records tiles' bit for bit), over the gathered records */
        const char *xe_wg = memra__gpu_knob(q, "MEMRA_MMQ_XE_WG");
        s->experts_wg = s->experts_wg_maps = s->experts_wg_ovl = s->experts_wg_rem = NULL;
        const int xe_auto = xe_wg == NULL || strcmp(xe_wg, "auto") == 0;
        s->xe_wg_asked = xe_wg != NULL && strcmp(xe_wg, "1") == 0;
        s->xe_wg_min_k = xe_auto ? MMQ_XE_WG_AUTO_K : 0;
        const char *xra = memra__gpu_knob(q, "MEMRA_MMQ_XE_RASTER");
        s->xe_raster = xra == NULL ? 1 : strcmp(xra, "auto") == 0 ? 2 : strcmp(xra, "1") == 0;
        /* MEMRA_MMQ_WG_SEED=pp / pin / iadd: the grouped tile's twin (memra_k_experts_q8_0r_wgspp / _wgsf / _wgsi) */
        s->xe_wg_name = tw != NULL ? tw->xe : "memra_k_experts_q8_0r_wgs";
        if (xe_auto || s->xe_wg_asked) {
            const unsigned smem = R3W_SMEM_BYTES_SD(1);
            const int base_ok = caps->cc / 10 == 9 && q->cuTensorMapEncodeTiled != NULL && !q->from_ptx &&
                                (caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= smem) &&
                                s->experts_gather != NULL;
            if (!base_ok || !memra__gpu_function_optional(q, m, s->xe_wg_name, smem, &s->experts_wg) ||
                !memra__gpu_function_optional(q, m, "memra_k_experts_maps_q8_0r", 0, &s->experts_wg_maps)) {
                s->experts_wg = s->experts_wg_maps = NULL;
                /* a default that cannot apply (another GPU, a PTX image) is no news: said at debug level */
                q->host->log(s->xe_wg_asked ? MEMRA_LOG_WARN : MEMRA_LOG_DEBUG, q->name,
                             "MEMRA_MMQ_XE_WG=%s: %s needs cc 9.x, the driver's tensor maps, "
                             "the records' gather (MEMRA_MMQ_XE_SORT) and this image's kernel; the records tiles serve",
                             xe_wg != NULL ? xe_wg : "auto", s->xe_wg_name);
            }
            /* MEMRA_MMQ_XE_WG_REM=1 beside it: the remainders in the tile's grid (not with the folds in turn) */
            const char *xr = memra__gpu_knob(q, "MEMRA_MMQ_XE_WG_REM");
            if (xr != NULL && strcmp(xr, "1") == 0 &&
                (s->experts_wg == NULL || strcmp(s->xe_wg_name, "memra_k_experts_q8_0r_wgs") != 0 ||
                 !memra__gpu_function_optional(q, m, "memra_k_experts_q8_0r_wgsr", smem, &s->experts_wg_rem))) {
                s->experts_wg_rem = NULL;
                q->host->log(MEMRA_LOG_WARN, q->name,
                             "MEMRA_MMQ_XE_WG_REM=1: needs MEMRA_MMQ_XE_WG's tile as memra_k_experts_q8_0r_wgs "
                             "(MEMRA_MMQ_WG_SEED=1) and this image's memra_k_experts_q8_0r_wgsr; the remainders "
                             "run in their own launch");
            }
            /* MEMRA_MMQ_XE_OVERLAP=1 beside it: the tile's early-trigger entry, with the remainder table's _mt1_o2 */
            const char *xo = memra__gpu_knob(q, "MEMRA_MMQ_XE_OVERLAP");
            const int xe_pp = strcmp(s->xe_wg_name, "memra_k_experts_q8_0r_wgs") != 0;
            if (s->experts_wg != NULL && xo != NULL && strcmp(xo, "1") == 0 && xe_pp)
                q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_XE_OVERLAP=1 needs MEMRA_MMQ_WG_SEED=1: the pp "
                                                      "and pin tiles have no early-trigger entry; the remainders run "
                                                      "after the tiles");
            else if (s->experts_wg != NULL && xo != NULL && strcmp(xo, "1") == 0 &&
                     !memra__gpu_function_optional(q, m, "memra_k_experts_q8_0r_wgs_o1", smem, &s->experts_wg_ovl))
                q->host->log(MEMRA_LOG_WARN, q->name, "MEMRA_MMQ_XE_WG with MEMRA_MMQ_XE_OVERLAP=1: this image has no "
                                                      "memra_k_experts_q8_0r_wgs_o1; the remainders run after the tiles");
            /* MEMRA_MMQ_XE_PF=1 (opt-in): _wgs's twin that also prefetches the expert's weight into L2 8 steps
             * ahead (mmq.cu memra_k_experts_q8_0r_wgs_pf); MEMRA_MMQ_XE_QS=1 (opt-in): its quick-start twin
             * (memra_k_experts_q8_0r_wgs_q: the tile's count and entry in one round trip, the scatter's places in
             * shared memory). The same launch, outputs bit for bit; one twin at most */
            xe_wg_twin(q, m, s, "MEMRA_MMQ_XE_PF", "memra_k_experts_q8_0r_wgs_pf", smem);
            xe_wg_twin(q, m, s, "MEMRA_MMQ_XE_QS", "memra_k_experts_q8_0r_wgs_q", smem);
        }
    }
    {
        const char *xe_f16 = memra__gpu_knob(q, "MEMRA_MMQ_XE_F16");
        if (xe_f16 == NULL || strcmp(xe_f16, "0") != 0) { /* on unless MEMRA_MMQ_XE_F16=0 */
            const char *xv = memra__gpu_knob(q, "MEMRA_MMQ_XE_H16");
            s->h16_var = 0;
            for (int v = 1; v < 4 && xv != NULL; v++)
                if (strcmp(xv, h16_var_names[v]) == 0) s->h16_var = v;
            const h16_tile *ht = h16_tiles[s->h16_var];
            static const char *const cvt[3] = {"memra_k_experts_cvt16_f16", "memra_k_experts_cvt16_bf16",
                                               "memra_k_experts_copy16"};
            int okc = 1;
            for (int c = 0; c < 3; c++)
                okc &= memra__gpu_function(q, m, cvt[c], 0, &s->experts_cvt16[c]) == MEMRA_STATUS_OK;
            for (int b = 0; b < 2 && okc; b++)
                for (int t = 0; t < MMQ_XE_TILES; t++) {
                    const unsigned smem = ht[t].smem;
                    if ((caps->smem_per_block_optin == 0 || caps->smem_per_block_optin >= smem) &&
                        memra__gpu_function(q, m, ht[t].kernel[b], smem, &s->experts_h16[b][t]) != MEMRA_STATUS_OK)
                        s->experts_h16[b][t] = NULL;
                }
            if (!okc) {
                memset(s->experts_h16, 0, sizeof s->experts_h16);
                q->host->log(MEMRA_LOG_WARN, q->name, "gemm_experts: the 16-bit lanes' conversions did not load");
            }
        }
    }
    pthread_once(&k_lists_once, lists_build);
    s->q8r_list = q8r_list_of(caps, q->portable);
    q->host->log(MEMRA_LOG_INFO, q->name, "%s: MMQ-family kernels for %s loaded", caps->name ? caps->name : "device",
                 q->target);
    return MEMRA_STATUS_OK;
}

const memra__gpu_family memra__gpu_family_mmq = {.name = "mmq", .state_size = sizeof(mmq_state), .load = mmq_load};

/* Launch a (gx, gy, gz) grid of `threads`-thread blocks. pdl: as a
 * programmatic dependent of the stream's previous kernel (the kernel waits in
 * griddepcontrol.wait before touching memory, so it may be made resident
 * while that kernel finishes); where the driver lacks cuLaunchKernelEx, or
 * MEMRA_MMQ_PDL=0, a plain launch (memra__gpu_launch_ex). */
static memra_status launch_pdl(memra__gpu *q, CUfunction f, const char *name, unsigned gx, unsigned gy, unsigned gz,
                               unsigned threads, unsigned smem, memra_stream_t stream, void **args, int pdl);

static memra_status launch_n(memra__gpu *q, CUfunction f, const char *name, unsigned gx, unsigned gy, unsigned threads,
                             unsigned smem, memra_stream_t stream, void **args)
{
    return launch_pdl(q, f, name, gx, gy, 1, threads, smem, stream, args, 0);
}

static int pdl_on(const memra__gpu *q)
{
    if (q->cuLaunchKernelEx == NULL || atomic_load_explicit(&q->pdl_refused, memory_order_relaxed)) return 0;
    return 1;
}

/* The knobs of this call: the init's, overridden by those its variant sets
 * (memra_call.variant, an index into memra__mmq_variants' list for op). */
static mmq_knobs call_knobs(const memra_call *call, const memra__gpu *q, memra_op op)
{
    const mmq_state *ks = MMQ_K(q);
    mmq_knobs k = ks->knobs;
    const int v = MEMRA_HAS_MEMBER(call, memra_call, variant) ? call->variant : -1;
    const mmq_variant_def *d = NULL;
    if (op == MEMRA_OP_gemm_q8_0 && v >= 0 && v < 3) d = &k_q8_0_defs[v];
    else if (op == MEMRA_OP_gemm_q8_0r && v >= 0 && (size_t)v < k_q8r_n[ks->q8r_list])
        d = &k_q8r_defs[k_q8r_map[ks->q8r_list][v]];
    if (d == NULL) return k;
    if (d->set & MMQ_SET_BM) k.bm = d->k.bm;
    if (d->set & MMQ_SET_BN) k.bn = d->k.bn;
    if (d->set & MMQ_SET_SPLIT) k.split = d->k.split;
    if (d->set & MMQ_SET_PDL) k.pdl_off = d->k.pdl_off;
    return k;
}

static memra_status launch_pdl(memra__gpu *q, CUfunction f, const char *name, unsigned gx, unsigned gy, unsigned gz,
                               unsigned threads, unsigned smem, memra_stream_t stream, void **args, int pdl)
{
    return memra__gpu_launch_ex(q, f, name, gx, gy, gz, threads, smem, stream, args, pdl && pdl_on(q));
}

/* A launch_pdl whose dependent launch also follows MEMRA_MMQ_PDL of the call's knobs. */
static memra_status launch_pdl_k(memra__gpu *q, const mmq_knobs *kn, CUfunction f, const char *name, unsigned gx,
                                 unsigned gy, unsigned gz, unsigned threads, unsigned smem, memra_stream_t stream,
                                 void **args)
{
    return launch_pdl(q, f, name, gx, gy, gz, threads, smem, stream, args, !kn->pdl_off);
}

static memra_status launch(memra__gpu *q, CUfunction f, const char *name, unsigned gx, unsigned gy, unsigned smem,
                           memra_stream_t stream, void **args)
{
    return launch_n(q, f, name, gx, gy, 256, smem, stream, args);
}

/* ---- quant_q8_1 ---------------------------------------------------------------- */

memra_status memra__mmq_quant_q8_1(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst)
{
    memra__gpu *q = MMQ_OF(call);
    if (m < 0 || k < 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.quant_q8_1: m = %d and k = %d must be >= 0",
                                  q->name, (int)m, (int)k);
    if (m == 0 || k == 0) return MEMRA_STATUS_OK;
    if (x == 0 || dst == 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.quant_q8_1: NULL x or destination", q->name);
    if (!aligned(x, 4) || !aligned(dst, 16)) return decline(call, "quant_q8_1: x must be 4-byte and the records 16-byte aligned");
    if (sizing(call)) return sized(call);
    const int64_t per_row = ((int64_t)k + 511) / 512 * 4, records = per_row * m;
    /* MEMRA_MMQ_QUANT_LEAN (the default): grid (ceil(m / 64), records a row), a warp QUANT_RECS tokens of one record
     * column */
    if (MMQ_K(q)->quant_q8_1l != NULL && per_row <= 65535)
        return launch_pdl_k(q, &MMQ_K(q)->knobs, MMQ_K(q)->quant_q8_1l, "memra_k_quant_q8_1l",
                            (unsigned)(((int64_t)m + 8 * QUANT_RECS - 1) / (8 * QUANT_RECS)), (unsigned)per_row, 1, 256, 0,
                            call->stream, (void *[]){&x, &m, &k, &dst});
    /* 8 warps per block, QUANT_RECS records per warp and pass; a
     * programmatic dependent of the kernel before it (it waits before reading x) */
    return launch_pdl_k(q, &MMQ_K(q)->knobs, MMQ_K(q)->quant_q8_1, "memra_k_quant_q8_1", blocks(q, records, 8 * QUANT_RECS), 1,
                        1, 256, 0, call->stream, (void *[]){&x, &m, &k, &dst});
}

/* ---- gemm_q8_0 ------------------------------------------------------------------- */

memra_status memra__mmq_gemm_q8_0(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *q = MMQ_OF(call);
    memra_status st = check_gemm(q, "gemm_q8_0", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (a->k % MEMRA_QK8_0 != 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                  "%s.gemm_q8_0: k = %d is not a multiple of the Q8_0 block (32)", q->name, (int)a->k);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (!aligned(a->w, 2) || !aligned(a->x, 16))
        return decline(call, "gemm_q8_0: needs a 2-byte aligned weight and 16-byte aligned q8_1 records");
    if ((a->n + 127) / 128 > 65535) return decline(call, "gemm_q8_0: n above 65535 tiles of 128");
    memra_dptr y = y_base(a);
    int m = a->m, n = a->n, k = a->k;
    long long ldy = a->ldy;
    float alpha = a->alpha;
    memra_dptr w = a->w, x = a->x;
    /* The kernel's `variant` (mmq.cu) = MT: 32 * variant tokens x 128 rows per
     * CTA. MEMRA_MMQ_BM=128|64|32 forces the tile; by default the one with
     * the fewest waves x per-CTA cost (~ 4 MT + 2: the weight tile's load and
     * realign do not shrink with MT), two CTAs per SM, ties to the larger. */
    int variant = 0;
    const int forced = call_knobs(call, q, MEMRA_OP_gemm_q8_0).bm;
    if (forced == 128 || forced == 64 || forced == 32) {
        variant = forced / 32;
    } else {
        const int64_t slots = 2 * sms_of(q);
        const int64_t tn = (n + 127) / 128;
        int64_t best = 0;
        for (int mt = 4; mt >= 1; mt /= 2) {
            const int64_t tiles = ((int64_t)m + 32 * mt - 1) / (32 * mt) * tn;
            const int64_t cost = (tiles + slots - 1) / slots * (4 * mt + 2);
            if (variant == 0 || cost < best) variant = mt, best = cost;
        }
    }
    const int bm = 32 * variant;
    /* mmq.cu's Q2_SMEM_BYTES(MT) (77824 bytes at MT = 4, within the function's MMQ_SMEM_BYTES limit) */
    const unsigned smem = (unsigned)Q2_SMEM_BYTES(variant);
    return launch(q, MMQ_K(q)->gemm_q8_0, "memra_k_gemm_q8_0", (unsigned)((m + bm - 1) / bm), (unsigned)((n + 127) / 128),
                  smem, call->stream, (void *[]){&w, &x, &y, &m, &n, &k, &ldy, &alpha, &variant});
}

/* ---- repack_q8_0 / gemm_q8_0r ------------------------------------------------------ */

memra_status memra__mmq_repack_q8_0(memra_call *call, memra_dptr src, int64_t rows, int64_t cols, memra_dptr dst)
{
    memra__gpu *q = MMQ_OF(call);
    if (rows < 0 || cols < 0 || rows > INT32_MAX || cols > INT32_MAX)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.repack_q8_0: rows %lld / cols %lld out of range",
                                  q->name, (long long)rows, (long long)cols);
    if (cols % MEMRA_QK8_0 != 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                  "%s.repack_q8_0: cols = %lld is not a multiple of the Q8_0 block (32)", q->name,
                                  (long long)cols);
    if (rows == 0 || cols == 0) return MEMRA_STATUS_OK;
    if (src == 0 || dst == 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.repack_q8_0: NULL source or destination", q->name);
    if (!aligned(src, 2) || !aligned(dst, 16))
        return decline(call, "repack_q8_0: needs a 2-byte aligned Q8_0 source and 16-byte aligned records");
    /* records this module's gemm_q8_0r could never read are not made (the core
     * then keeps the blocks for gemm_q8_0) */
    int tiles = 0;
    for (int t = 0; t < MEMRA__MMQ_R3_TILES; t++) tiles += MMQ_K(q)->gemm_q8_0r[t] != NULL;
    if (tiles == 0) return decline(call, "repack_q8_0: no gemm_q8_0r tile fits this device's shared memory");
    if ((rows + 127) / 128 > 65535) return decline(call, "repack_q8_0: rows above 65535 tiles of 128 (gemm_q8_0r's limit)");
    long long r = rows;
    int c = (int)cols;
    const int64_t records = (cols + 127) / 128 * rows;
    return launch(q, MMQ_K(q)->repack_q8_0, "memra_k_repack_q8_0", blocks(q, records, 8), 1, 0, call->stream,
                  (void *[]){&src, &r, &c, &dst});
}

/* The tile and the split-k count of one gemm_q8_0r call, from a model of
 * the time in "paired steps" (one k step of a 128 x 128 CTA that shares its SM
 * with a second one): C = tiles x S CTAs spread over the SMs, two resident at
 * a time where two fit (one otherwise), so the busiest SM runs ceil(C / SMs)
 * of them, in pairs, and a last odd one alone at LONE of a paired step's time
 * (it has the SM to itself); each CTA runs ceil(G / S) steps plus FILL for its
 * pipeline's fill and drain; a step of a smaller tile costs STEP of a
 * 128 x 128 one (the token tile's copy does not shrink with the rows, nor the
 * weight tile's with the tokens); split-k adds its partial sums' traffic,
 * (S + 1) m n floats, at BYTES bytes per step. The constants are fitted to a
 * sweep of every tile x split (4 x 6 arms) on the H200 at the 27b sheet, m = 512
 * and 4096 (`test_mmq_ops sweep`, bench/RESULTS.md run G), where the model picked
 * the fastest arm on all 12 shapes. The 128 x 96 step is refitted for the bulk-copy
 * tiles (run b2, m = 4096: 128 x 96 is 3.8% and 1.7% faster than 128 x 128 at
 * 5120->12288 and 5120->17408, 0.5% and 1.1% slower at 6144->5120 and 17408->5120):
 * 0.715 to 0.735 picks the faster of the two on all five shapes run b2 timed and
 * leaves the m = 512 picks as they were; 0.725 is the middle. gemm_kr keeps run G's
 * 0.76 (STEP_KR) until a sweep_kr measures its tiles. MEMRA_MMQ_BM=128|64,
 * MEMRA_MMQ_BN=128|96 and MEMRA_MMQ_SPLIT=1..16 force the choice (sweeps,
 * tests). tile = -1: no tile can take the shape. */
typedef struct q8r_plan {
    int tile; /* index into memra__mmq_r3_tiles */
    int split;
    double cost; /* the model's time for it, in paired steps */
} q8r_plan;

#define Q8R_PART_MAX (256.0 * 1024 * 1024) /* bytes of split-k partial sums the plan may ask for */

/* The plan's constants per profile. The H200's are the fit above; sm_120's
 * (RTX 5090) are kept apart so that a fit there changes nothing on the H200.
 * They are the H200's values for now and UNTESTED on real sm_120 hardware
 * (no such GPU has been lent); the 128 x 128 tiles never load there (99 KB of
 * shared memory per block), so its step cost is unused. */
typedef struct mmq_plan_consts {
    double fill, lone, bytes;            /* FILL, LONE, BYTES of the model above */
    double step[MEMRA__MMQ_R3_TILES];    /* STEP per tile of gemm_q8_0r, memra__mmq_r3_tiles order */
    double step_kr[MEMRA__MMQ_R3_TILES]; /* STEP per tile of gemm_kr (run G's q8_0r fit, not refitted) */
    double step_wg;                      /* STEP of gemm_q8_0r's seeded warpgroup tile (one CTA an SM) */
} mmq_plan_consts;
/* step_wg: fitted to run i1 (H100, the same 132 SMs): at m = 4096, 5120 -> 12288 the records plan
 * (128 x 96, 4096 CTAs: 16 paired rounds of 41 steps x 0.725) ran its GEMM in 1.446 ms and _wgs
 * (3072 CTAs: 24 lone rounds of 41 steps x 0.59 x STEP) in 1.361 ms, so STEP = 0.771. With it the
 * model picks the faster of the two on each of the six 27b rows run i1 timed at m = 512 (the seeded
 * tile on 5120->12288, 5120->1024 and 17408->5120) and the seeded tile on every row at 1024, 2048
 * and 4096, as runs i1 / i4 measured. */
static const mmq_plan_consts k_plan_h200 = {1.0, 0.59, 5.0e6, {1.0, 0.6, 0.725, 0.41}, {1.0, 0.6, 0.76, 0.41}, 0.771};
static const mmq_plan_consts k_plan_sm120 = {1.0, 0.59, 5.0e6, {1.0, 0.6, 0.76, 0.41},
                                             {1.0, 0.6, 0.76, 0.41}, 0.771}; /* untested on sm_120 (and
                                                                                 the warpgroup tile is
                                                                                 sm_90a only) */

static const mmq_plan_consts *plan_consts(const memra__gpu *q)
{
    return q->caps->cc / 10 == 12 ? &k_plan_sm120 : &k_plan_h200;
}

/* plan_tiles(q, memra__mmq_r3_tiles, gemm_q8_0r's kernels, step, ...) is that plan;
 * the same model serves gemm_kr's tiles (their own shared-memory sizes decide
 * which run two to an SM) with step_kr, run G's gemm_q8_0r fit, not refitted
 * for the K folds (a K step does 1 + 1/NT (min) or 2 (q6) MMAs per q8_0r MMA),
 * and the warpgroup tiles on a table of their own (run_tiles). */
static q8r_plan plan_tiles(const memra__gpu *q, const mmq_knobs *kn, const memra__mmq_r3_tile *tiles,
                           const CUfunction *fns, const double *step, const char *op, int m, int n, int k)
{
    int fb = kn->bm, fn = kn->bn, fs = kn->split;
    if (fb < 0) fb = 0; /* a negative value is no forcing */
    if (fn < 0) fn = 0;
    if (fs < 0) fs = 0;
    const int64_t sms = sms_of(q);
    const int64_t G = ((int64_t)k + 127) / 128;
    const mmq_plan_consts *pc = plan_consts(q);
    q8r_plan best = {-1, 1, 0.0}, any = {-1, 1, 0.0};
    double best_cost = -1.0;
    for (int t = 0; t < MEMRA__MMQ_R3_TILES; t++) {
        const memra__mmq_r3_tile *tl = &tiles[t];
        const int64_t ty = ((int64_t)n + tl->bn - 1) / tl->bn;
        if (fns[t] == NULL || ty > 65535) continue;
        if (any.tile < 0) any.tile = t;
        if ((fb != 0 && fb != tl->bm) || (fn != 0 && fn != tl->bn)) continue;
        /* two CTAs per SM: 2 (smem + 1 KB reserved) within the SM's shared
         * memory, which is the per-block opt-in limit + 1 KB */
        const int two = tile_two(q->caps, tl);
        const int64_t ctas = ((int64_t)m + tl->bm - 1) / tl->bm * ty;
        for (int s = 1; s <= 16; s++) {
            if (fs > 0 ? s != fs : (s > 1 && G / s < 4)) continue;
            /* the partial sums live in scratch: keep them under Q8R_PART_MAX unless forced */
            if (fs == 0 && s > 1 && (double)s * (double)m * (double)n * 4.0 > Q8R_PART_MAX) continue;
            const int64_t per_sm = (ctas * s + sms - 1) / sms;
            const double steps = (double)((G + s - 1) / s) + pc->fill;
            const double rounds = two ? (double)(per_sm / 2) + (double)(per_sm % 2) * pc->lone : (double)per_sm * pc->lone;
            double cost = rounds * steps * step[t];
            if (s > 1) cost += (double)(s + 1) * (double)m * (double)n * 4.0 / pc->bytes;
            if (best_cost < 0.0 || cost < best_cost) best = (q8r_plan){t, s, cost}, best_cost = cost;
        }
    }
    if (best.tile < 0 && any.tile >= 0) best = any; /* a forced choice that cannot be met: the first tile that fits */
    if (best.tile >= 0 && ((fb != 0 && fb != tiles[best.tile].bm) ||
                           (fn != 0 && fn != tiles[best.tile].bn) || (fs != 0 && fs != best.split)))
        q->host->log(MEMRA_LOG_DEBUG, q->name,
                     "%s: MEMRA_MMQ_BM=%d / BN=%d / SPLIT=%d cannot be met here; running %d x %d, %d slices", op, fb,
                     fn, fs, tiles[best.tile].bm, tiles[best.tile].bn, best.split);
    return best;
}

/* The four tensor maps of memra_k_gemm_q8_0r_wg (mmq.cu): the weight's and the tokens' records as
 * [G steps][rows][144 bytes] (G = ceil(k / 128); record (g, row) at (g rows + row) 144, the layout
 * of repack_q8_0 and quant_q8_1), each as its rows' 128 code bytes (box 128 x 128 rows x 1 step,
 * 128-byte swizzle: the wgmma operand layout) and their 16-byte heads (box 16 x 128 x 1, no
 * swizzle); rows past n or m read as zeros. 1 when the driver encoded all four. */
/* One of them: the records at p ([steps][rows][144 bytes]), their code bytes (head 0: a 128 x 128 box,
 * swizzled) or heads (head 1: 16 x 128, plain) */
static int r3w_map(const memra__gpu *q, memra__cu_tensor_map *map, memra_dptr p, int rows, int k, int head)
{
    const uint64_t steps = ((uint64_t)k + 127) / 128;
    const uint64_t dims[3] = {MMQ_ROW, (uint64_t)rows, steps}, stride[2] = {MMQ_ROW, (uint64_t)rows * MMQ_ROW};
    const uint32_t box[3] = {head ? 16u : 128u, 128u, 1u}, es[3] = {1, 1, 1};
    return q->cuTensorMapEncodeTiled(map, MEMRA__CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, (void *)(uintptr_t)p, dims, stride,
                                     box, es, MEMRA__CU_TENSOR_MAP_INTERLEAVE_NONE,
                                     head ? MEMRA__CU_TENSOR_MAP_SWIZZLE_NONE : MEMRA__CU_TENSOR_MAP_SWIZZLE_128B,
                                     MEMRA__CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                     MEMRA__CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == MEMRA__CU_SUCCESS;
}
static int r3w_maps(const memra__gpu *q, memra__cu_tensor_map maps[4], memra_dptr w, memra_dptr x, int m, int n, int k)
{
    for (int i = 0; i < 4; i++)
        if (!r3w_map(q, &maps[i], i < 2 ? w : x, i < 2 ? n : m, k, i & 1)) return 0;
    return 1;
}

/* Plan, scratch and launch of one records GEMM (gemm_q8_0r, gemm_kr) on
 * `tiles` / `fns`; the arguments are checked by the caller. */
static memra_status run_tiles(memra__gpu *q, memra_call *call, const memra_gemm_args *a, memra_op op_id,
                              const memra__mmq_r3_tile *tiles, const CUfunction *fns, const char *op)
{
    memra_status st;
    const mmq_knobs kn = call_knobs(call, q, op_id); /* the init's knobs, or the call's variant's */
    const mmq_plan_consts *pc = plan_consts(q);
    q8r_plan p = plan_tiles(q, &kn, tiles, fns, strcmp(op, "gemm_kr") == 0 ? pc->step_kr : pc->step, op, a->m, a->n, a->k);
    if (p.tile < 0)
        return decline(call, strcmp(op, "gemm_kr") == 0
                                 ? "gemm_kr: no tile fits the device's shared memory, or n is above 65535 tiles of 128"
                                 : "gemm_q8_0r: no tile fits the device's shared memory, or n is above 65535 tiles of 128");
    memra_dptr y = y_base(a), w = a->w, x = a->x, part = 0;
    int m = a->m, n = a->n, k = a->k;
    long long ldy = a->ldy;
    float alpha = a->alpha;
    /* The warpgroup tiles (gemm_q8_0r's MEMRA_MMQ_WG, gemm_kr's MEMRA_MMQ_KR_WG) take their split from
     * the same plan on a table of that tile alone (one CTA an SM; MEMRA_MMQ_SPLIT still forces one,
     * MEMRA_MMQ_BM / BN do not apply to it) */
    const memra__mmq_r3_tile *tl = &tiles[p.tile];
    memra__cu_tensor_map maps[4]; /* their tensor maps: a refused encoding leaves the plan as it was */
    const int kf = op_id == MEMRA_OP_gemm_kr && a->w_format == MEMRA_FORMAT_Q4_K   ? 0
                   : op_id == MEMRA_OP_gemm_kr && a->w_format == MEMRA_FORMAT_Q5_K ? 1
                                                                                   : -1;
    const int wgk = op_id == MEMRA_OP_gemm_q8_0r && MMQ_K(q)->gemm_q8_0r_wg != NULL;
    const int kwgk = kf >= 0 && MMQ_K(q)->gemm_kr_wg[kf] != NULL && m >= MMQ_K(q)->kr_wg_min_m;
    q8r_plan wp = {-1, 1, 0.0};
    double wcost = -1.0; /* the warpgroup tile's cost where auto weighs it below wg_min_m, else -1 */
    if (wgk || kwgk) {
        const memra__mmq_r3_tile wt[MEMRA__MMQ_R3_TILES] = {
            {kwgk ? MMQ_K(q)->kr_wg_names[kf] : MMQ_K(q)->wg_name, 128, 128,
             kwgk ? MMQ_K(q)->kr_wg_smem : MMQ_K(q)->wg_smem, 1},
            {NULL, 128, 128, 0, 1}, {NULL, 128, 128, 0, 1}, {NULL, 128, 128, 0, 1}};
        const CUfunction wf[MEMRA__MMQ_R3_TILES] = {kwgk ? MMQ_K(q)->gemm_kr_wg[kf] : MMQ_K(q)->gemm_q8_0r_wg, NULL,
                                                    NULL, NULL};
        /* the split at a step of 1.0 (the splits runs i1 / i4 timed) */
        const double ws[MEMRA__MMQ_R3_TILES] = {kwgk ? pc->step_kr[0] : 1.0, 1.0, 1.0, 1.0};
        mmq_knobs wk = kn;
        wk.bm = wk.bn = 0;
        wp = plan_tiles(q, &wk, wt, wf, ws, op, m, n, k);
        /* auto below wg_min_m, on _wgs (the kernel step_wg was fitted to), no records tile forced: that
         * plan's cost at step_wg, against the records plan's */
        if (wgk && MMQ_K(q)->wg_fit && MMQ_K(q)->wg_min_m > 0 && m < MMQ_K(q)->wg_min_m && kn.bm <= 0 && kn.bn <= 0 &&
            wp.tile >= 0) {
            const double wf_step[MEMRA__MMQ_R3_TILES] = {pc->step_wg, 1.0, 1.0, 1.0};
            mmq_knobs wk2 = wk;
            wk2.split = wp.split;
            wcost = plan_tiles(q, &wk2, wt, wf, wf_step, op, m, n, k).cost;
        }
    }
    /* MEMRA_MMQ_WG: =1 in place of a 128-token pick (either width), =all of every pick; auto (the
     * default) from wg_min_m tokens, and below it where the model prices the tile (at its split and
     * step_wg) under the records plan */
    const int wg_cheaper = wcost >= 0.0 && wcost < p.cost;
    /* MEMRA_MMQ_WG_SK=auto (the default): the stream-k tile where a plain grid of 128 x 128 tiles would end in a sparse last
     * wave (at most a quarter of the SMs busy) after at most five waves, unless a tile or split is forced (run
     * p8, H100, m = 512: 160 tiles 7-11% and 5% faster, 544 tiles 2%, than the default plan; with a full last
     * wave, 384 or 256 tiles, and at m = 4096 slower) */
    const int64_t tiles128 = (int64_t)((m + 127) / 128) * ((n + 127) / 128); /* the warpgroup tiles' grid */
    int sk_auto = 0;
    if (wgk && MMQ_K(q)->gemm_q8_0r_wgsk != NULL && MMQ_K(q)->sk_mode == 2 && kn.bm <= 0 && kn.bn <= 0 &&
        kn.split <= 0) {
        const int64_t P = sms_of(q), f = tiles128 % P;
        sk_auto = tiles128 >= P && tiles128 <= 5 * P && f != 0 && f <= P / 4;
    }
    const int wg = wgk &&
                   (MMQ_K(q)->wg_min_m > 0 ? m >= MMQ_K(q)->wg_min_m || wg_cheaper || sk_auto
                                           : tl->bm == 128 || MMQ_K(q)->wg_all || sk_auto) &&
                   r3w_maps(q, maps, w, x, m, n, k);
    /* MEMRA_MMQ_KR_WG: Q4_K / Q5_K on the seeded warpgroup tile, every pick (its token codes' map alone) */
    const int kwg = kwgk && r3w_map(q, &maps[2], x, m, k, 0);
    if (wg || kwg) p.split = wp.split;
    /* MEMRA_MMQ_WG_SK=1: the warpgroup tile's steps in equal ranges over P CTAs (one an SM, at most one a
     * step), the split tiles' partial sums in 2 P slots of 64 KB, unsplit otherwise */
    int64_t sk_p = 0;
    memra_dptr sk_part = 0;
    if (wg && MMQ_K(q)->gemm_q8_0r_wgsk != NULL && ((MMQ_K(q)->sk_mode == 1 && kn.split <= 0) || sk_auto)) {
        const int64_t units = tiles128 * ((k + 127) / 128);
        sk_p = sms_of(q);
        if (sk_p > units) sk_p = units;
        if (units > INT32_MAX / 2) sk_p = 0;
        const memra_status kst =
            sk_p > 0 ? q->host->scratch_get(call, MEMRA__MMQ_SLOT_PART, MMQ_SK_SLOT_BYTES(sk_p), &sk_part)
                     : MEMRA_STATUS_OK;
        if (kst == MEMRA_STATUS_NOT_SUPPORTED) return kst; /* a capture without reserved scratch */
        if (kst != MEMRA_STATUS_OK) sk_p = 0;              /* no memory for the slots: the plain tile */
        if (sk_p > 0) p.split = 1;
    }
    const memra_status sst =
        p.split > 1 ? q->host->scratch_get(call, MEMRA__MMQ_SLOT_PART, (size_t)p.split * (size_t)m * (size_t)n * 4u, &part)
                    : MEMRA_STATUS_OK;
    /* in a graph capture without reserved scratch: the error, never a different summation order */
    if (sst == MEMRA_STATUS_NOT_SUPPORTED) return sst;
    if (sst != MEMRA_STATUS_OK) {
        /* no memory for the partial sums: the unsplit tile needs none */
        q->host->log(MEMRA_LOG_DEBUG, q->name, "%s: no scratch for %d split-k slices, running unsplit", op, p.split);
        p.split = 1;
    }
    /* MEMRA_MMQ_KR_WG=pre / pre2: the weight widened once for the call into an image (KW_BLOCK_BYTES or
     * KW2_BLOCK_BYTES a 128-row tile and step; pre2: the tokens' part too, KT_BLOCK_BYTES a 128-token tile
     * and step); without scratch for them the _wgm tile, whose stages hold the same bytes */
    memra_dptr img = 0, timg = 0;
    int kpre = kwg && MMQ_K(q)->gemm_kr_wgw != NULL ? MMQ_K(q)->kr_pre : 0;
    if (kpre) {
        const size_t G = (size_t)((k + 127) / 128);
        const size_t ib = (size_t)((n + 127) / 128) * G * (size_t)(kpre == 2 ? KW2_BLOCK_BYTES : KW_BLOCK_BYTES);
        const size_t tb = (size_t)((m + 127) / 128) * G * (size_t)KT_BLOCK_BYTES;
        if (q->host->scratch_get(call, MEMRA__MMQ_SLOT_KW, ib, &img) != MEMRA_STATUS_OK ||
            (kpre == 2 && q->host->scratch_get(call, MEMRA__MMQ_SLOT_KT, tb, &timg) != MEMRA_STATUS_OK)) {
            /* (the module's one-way switch: its state is otherwise read-only after init) */
            atomic_int *once = &((mmq_state *)MMQ_K(q))->kw_short;
            const int first = atomic_exchange_explicit(once, 1, memory_order_relaxed) == 0;
            q->host->log(!first ? MEMRA_LOG_DEBUG : MMQ_K(q)->kr_auto ? MEMRA_LOG_INFO : MEMRA_LOG_WARN, q->name,
                         "MEMRA_MMQ_KR_WG=%s: no scratch for the widened images (%zu bytes); the _wgm tile serves, "
                         "with the same results%s",
                         MMQ_K(q)->kr_auto ? "auto" : kpre == 2 ? "pre2" : "pre", ib + (kpre == 2 ? tb : 0),
                         first ? " (logged once; later calls at DEBUG)" : "");
            kpre = 0;
        }
    }
    /* memra_stream_reserve walks some m above 1024 in steps: where the stream-k tile may serve this weight, its
     * slots are asked at every m it sizes, so that a capture at an m the walk stepped over still finds them (a
     * capture without them fails rather than run another summation order) */
    if (sizing(call) && sk_p == 0 && wgk && MMQ_K(q)->gemm_q8_0r_wgsk != NULL && MMQ_K(q)->sk_mode != 0) {
        memra_dptr unused = 0;
        (void)q->host->scratch_get(call, MEMRA__MMQ_SLOT_PART, MMQ_SK_SLOT_BYTES(sms_of(q)), &unused);
    }
    if (sizing(call)) return sized(call); /* every scratch request made: memra_stream_reserve's sizing */
    /* Both kernels are programmatic dependents of the kernel before them in the
     * stream (in memra_matmul: the quantiser, then the tile; both trigger early,
     * mmq.cu). */
    /* the persistent tiles where every slice has steps: a 1-D grid of at most one CTA an SM */
    const int64_t wtiles = tiles128 * p.split;
    int64_t wsms = sms_of(q);
    if (MMQ_K(q)->wgp_cap > 0 && MMQ_K(q)->wgp_cap < wsms) wsms = MMQ_K(q)->wgp_cap;
    if (sk_p > 0) {
        int pp = (int)sk_p;
        st = launch_pdl_k(q, &kn, MMQ_K(q)->gemm_q8_0r_wgsk, MMQ_K(q)->wgsk_name, (unsigned)pp, 1, 1, R3W_THREADS,
                          MMQ_K(q)->wg_smem, call->stream,
                          (void *[]){&maps[0], &maps[1], &maps[2], &maps[3], &y, &m, &n, &k, &ldy, &alpha, &sk_part});
        /* the tiles past the whole waves, split over every CTA: their fix-up, a block a tile and 8 rows */
        const int64_t rem = tiles128 - tiles128 / pp * pp;
        if (st != MEMRA_STATUS_OK || rem == 0) return st;
        return launch_pdl_k(q, &kn, MMQ_K(q)->skfix, "memra_k_gemm_q8_0r_skfix", (unsigned)rem, 16, 1, 256, 0,
                            call->stream, (void *[]){&sk_part, &y, &ldy, &alpha, &m, &n, &k, &pp});
    }
    if (wg && MMQ_K(q)->gemm_q8_0r_wgp != NULL && p.split <= (k + 127) / 128 && wtiles <= INT32_MAX) {
        int sl = p.split;
        st = launch_pdl_k(q, &kn, MMQ_K(q)->gemm_q8_0r_wgp, MMQ_K(q)->wgp_name,
                          (unsigned)(wtiles < wsms ? wtiles : wsms), 1, 1, R3W_THREADS, MMQ_K(q)->wg_smem, call->stream,
                          (void *[]){&maps[0], &maps[1], &maps[2], &maps[3], &y, &m, &n, &k, &ldy, &alpha, &part, &sl});
    } else if (kwg) {
        memra_dptr xs = x + memra_q8_1_plane(m, k), wk = w;
        st = MEMRA_STATUS_OK;
        int g = (k + 127) / 128;
        /* the pass: grid (row tiles (pre2: then token tiles), steps), a dependent like the tile, which reads
         * its images */
        if (kpre == 1)
            st = launch_pdl_k(q, &kn, MMQ_K(q)->kq_widen[kf], MMQ_K(q)->kq_widen_names[kf], (unsigned)((n + 127) / 128),
                              (unsigned)g, 1, KW_THREADS, 0, call->stream, (void *[]){&w, &img, &n, &g});
        else if (kpre == 2)
            st = launch_pdl_k(q, &kn, MMQ_K(q)->kq_widen[kf], MMQ_K(q)->kq_widen_names[kf],
                              (unsigned)((n + 127) / 128 + (m + 127) / 128), (unsigned)g, 1, KW_THREADS, 0, call->stream,
                              (void *[]){&w, &img, &n, &g, &x, &xs, &timg, &m});
        if (kpre) wk = img;
        /* the tile: (map, weight or its image, then pre2: the tokens' image, else the records and their sum
         * plane, y ...) */
        void *ta[] = {&maps[2], &wk, &x, &xs, &y, &m, &n, &k, &ldy, &alpha, &part};
        void *ta2[] = {&maps[2], &wk, &timg, &y, &m, &n, &k, &ldy, &alpha, &part};
        if (st == MEMRA_STATUS_OK)
            st = launch_pdl_k(q, &kn, kpre ? MMQ_K(q)->gemm_kr_wgw : MMQ_K(q)->gemm_kr_wg[kf],
                              kpre ? MMQ_K(q)->kr_wgw_name : MMQ_K(q)->kr_wg_names[kf], (unsigned)((m + 127) / 128),
                              (unsigned)((n + 127) / 128), (unsigned)p.split, R3W_THREADS, MMQ_K(q)->kr_wg_smem,
                              call->stream, kpre == 2 ? ta2 : ta);
    } else if (wg) {
        /* MEMRA_MMQ_WG_TAIL=1: where the last row tile holds 1 .. 96 tokens, the twin that runs it on 32, 64 or 96
         * token columns */
        const int tail = MMQ_K(q)->gemm_q8_0r_wgst != NULL && m % 128 >= 1 && m % 128 <= 96;
        st = launch_pdl_k(q, &kn, tail ? MMQ_K(q)->gemm_q8_0r_wgst : MMQ_K(q)->gemm_q8_0r_wg,
                          tail ? "memra_k_gemm_q8_0r_wgst" : MMQ_K(q)->wg_name, (unsigned)((m + 127) / 128),
                          (unsigned)((n + 127) / 128), (unsigned)p.split, R3W_THREADS, MMQ_K(q)->wg_smem, call->stream,
                          (void *[]){&maps[0], &maps[1], &maps[2], &maps[3], &y, &m, &n, &k, &ldy, &alpha, &part});
    } else {
        /* A dependent launch may place its CTAs while the kernel before it still runs: a grid of at most
         * one CTA an SM whose tile two of fit an SM could then put two CTAs on one SM beside an idle one,
         * and run the whole wave at half speed there (runs l2 / n3: 6144->5120 at m = 384 0.168 ms with
         * PDL, 0.107 without). Asking for more than half the SM's shared memory keeps each CTA alone. */
        const int64_t ctas = (int64_t)((m + tl->bm - 1) / tl->bm) * ((n + tl->bn - 1) / tl->bn) * p.split;
        const int64_t sms = sms_of(q);
        const unsigned smem = !kn.pdl_off && !MMQ_K(q)->pdl_pack && ctas <= sms && tile_two(q->caps, tl) &&
                                      MMQ_K(q)->one_pad > tl->smem
                                  ? MMQ_K(q)->one_pad
                                  : tl->smem;
        st = launch_pdl_k(q, &kn, fns[p.tile], tl->kernel, (unsigned)((m + tl->bm - 1) / tl->bm),
                          (unsigned)((n + tl->bn - 1) / tl->bn), (unsigned)p.split, MMQ_THREADS, smem, call->stream,
                          (void *[]){&w, &x, &y, &m, &n, &k, &ldy, &alpha, &part});
    }
    if (st != MEMRA_STATUS_OK || p.split == 1) return st;
    int s = p.split;
    /* a thread per 4 columns where rows of n floats are 16-byte aligned (n % 4 == 0), else per column */
    const int cols = n % 4 == 0 ? n / 4 : n;
    const unsigned gx = (unsigned)((cols + 255) / 256), gy = (unsigned)(m < 65535 ? m : 65535);
    return launch_pdl_k(q, &kn, MMQ_K(q)->splitk_sum, "memra_k_splitk_sum", gx, gy, 1, 256, 0, call->stream,
                        (void *[]){&part, &s, &m, &n, &y, &ldy, &alpha});
}

memra_status memra__mmq_gemm_q8_0r(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *q = MMQ_OF(call);
    memra_status st = check_gemm(q, "gemm_q8_0r", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (a->k % MEMRA_QK8_0 != 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                  "%s.gemm_q8_0r: k = %d is not a multiple of the Q8_0 block (32)", q->name, (int)a->k);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (!aligned(a->w, 16) || !aligned(a->x, 16))
        return decline(call, "gemm_q8_0r: needs 16-byte aligned weight records and q8_1 records");
    return run_tiles(q, call, a, MEMRA_OP_gemm_q8_0r, MMQ_K(q)->r3_tiles, MMQ_K(q)->gemm_q8_0r, "gemm_q8_0r");
}

memra_status memra__mmq_gemm_kr(memra_call *call, const memra_gemm_args *a)
{
    memra__gpu *q = MMQ_OF(call);
    memra_status st = check_gemm(q, "gemm_kr", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (!MEMRA_HAS_MEMBER(a, memra_gemm_args, w_format))
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_kr: args struct_size %u has no w_format",
                                  q->name, (unsigned)a->struct_size);
    const int32_t f = a->w_format;
    if (f != MEMRA_FORMAT_Q4_K && f != MEMRA_FORMAT_Q5_K && f != MEMRA_FORMAT_Q6_K)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_kr: w_format %d is not Q4_K, Q5_K or Q6_K",
                                  q->name, (int)f);
    if (a->k % MEMRA_QK_K != 0)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                  "%s.gemm_kr: k = %d is not a multiple of the K-quant super-block (256)", q->name,
                                  (int)a->k);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (!aligned(a->w, 16) || !aligned(a->x, 16))
        return decline(call, "gemm_kr: needs a 16-byte aligned K-packed weight and q8_1 records");
    const int fi = f == MEMRA_FORMAT_Q4_K ? 0 : f == MEMRA_FORMAT_Q5_K ? 1 : 2;
    return run_tiles(q, call, a, MEMRA_OP_gemm_kr, MMQ_K(q)->kr_tiles[fi], MMQ_K(q)->gemm_kr[fi], "gemm_kr");
}

/* ---- accprobe -------------------------------------------------------------------- */

memra_status memra__mmq_accprobe(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *a)
{
    memra__gpu *q = MMQ_OF(call);
    if (arm != MEMRA_ACCPROBE_S32 && arm != MEMRA_ACCPROBE_F32 && arm != MEMRA_ACCPROBE_MX)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.accprobe: unknown arm %d", q->name, (int)arm);
    if (arm == MEMRA_ACCPROBE_MX && q->caps->cc / 10 != 12) return decline(call, "accprobe: mxf8f6f4 needs sm_120a");
    if (arm == MEMRA_ACCPROBE_F32 && q->caps->cc < 89) return decline(call, "accprobe: e4m3 mma.sync needs cc 8.9+");
    if (arm == MEMRA_ACCPROBE_F32 && q->from_ptx)
        return decline(call, "accprobe: the compute_80 PTX has no e4m3 mma.sync (SASS for cc 8.9+ only)");
    memra_status st = check_gemm(q, "accprobe", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (a->k % 32 != 0) return decline(call, "accprobe: k not a multiple of 32 (the MMQ tile)");
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (!aligned(a->w, 16) || !aligned(a->x, 16)) return decline(call, "accprobe: needs 16-byte aligned x and w");
    if ((a->n + 127) / 128 > 65535) return decline(call, "accprobe: n above 65535 tiles of 128");
    static const char *const names[3] = {"memra_k_probe_s32", "memra_k_probe_f32", "memra_k_probe_mx"};
    memra_dptr y = y_base(a), w = a->w, x = a->x;
    int m = a->m, n = a->n, k = a->k;
    long long ldy = a->ldy;
    float bias = arm == MEMRA_ACCPROBE_S32 ? PROBE_BIAS_S32 : 0.0f;
    return launch(q, MMQ_K(q)->probe[arm], names[arm], (unsigned)((m + 127) / 128), (unsigned)((n + 127) / 128),
                  MMQ_SMEM_BYTES, call->stream, (void *[]){&w, &x, &y, &m, &n, &k, &ldy, &bias});
}

/* ---- gemm_experts (issue 30) ------------------------------------------------------
 * The integer floor's lanes (module.h, memra_gemm_experts_args): gemm_q8_0r
 * (Q8_0 records; Q4_0 experts arrive as the records of their exact Q8_0
 * conversion) and gemm_kr (Q4_K / Q5_K / Q6_K K-packed). Two launches of
 * fixed shape for a given m, no host read, capturable: the routing kernel
 * builds offsets, the permutation and the tile table in scratch on the
 * device for tiles of bm rows, then the grouped tile kernel, a programmatic
 * dependent, runs on a grid sized by the worst case (ceil(n / 128) x
 * ceil(m / bm) + E tiles), its CTAs past the table exiting.
 *
 * The scheduler's one host-side choice is bm (the tile's token height: 32, 64
 * or 128), from what the host knows without reading ids: the mean rows per
 * expert m / E. A tile of bm rows wastes at most bm - 1 rows per expert; an
 * expert of hundreds of rows takes many tiles (ceil(c / bm)), each a CTA per
 * 128 weight rows, so a large expert fills the machine like a dense GEMM.
 * Mean >= 96: 128 rows (the dense floor's 128 x 128 tile: Mixtral-like
 * shapes, E = 8, top-2); >= 48: 64; else 32 (Qwen3-MoE-like, E = 128, top-8:
 * ~32 rows each, three CTAs per SM). Only tiles loaded on the device (their
 * shared memory fits) are candidates: the largest loaded one not above the
 * choice. Above the smallest loaded tile, an expert's rows past its last full
 * tile, when they are at most the smallest tile's height (32 rows), go to one
 * tile of it in a second table and a third launch; a larger remainder keeps a
 * full tile. (Run q1 sent every remainder to 32-row tiles: an expert of 120
 * rows then ran four of them after the full tiles' wave, each streaming its
 * whole k, and mixtral down at m = 512 took 0.84 ms against 0.70 ms with
 * half-empty full tiles. This rule is a guess between the two, to be measured
 * against MEMRA_MMQ_XE_BM=128, the single table.) MEMRA_MMQ_XE_BM=32|64|128
 * forces one height and one table (sweeps, tests; the dense
 * lanes' MEMRA_MMQ_BM does not apply). The thresholds are a first guess, not
 * fitted on a GPU (no GPU in the session that wrote them). Skewed routing
 * changes only how the table's tiles fall on experts, never the launch. Other
 * lanes are declined (the core then has no other lane on a GPU). */
#define MEMRA__MMQ_SLOT_ROUTE "experts.route"
#define MEMRA__MMQ_SLOT_XE_PART "experts.splitk" /* the grouped split-k partial sums */
#define MEMRA__MMQ_SLOT_XE_A16 "experts.a16"      /* the f16 / bf16 lanes: the activation in expert order */
#define MEMRA__MMQ_SLOT_XE_XS "experts.xs"        /* MEMRA_MMQ_XE_SORT=1: the q8_1 records in expert order */
#define MEMRA__MMQ_SLOT_XE_MAPS "experts.maps"    /* MEMRA_MMQ_XE_WG: the experts' weight tensor maps */

/* Split-k of the grouped tiles: S slices of the k steps (the dense kernels' split: slice z
 * takes steps G z / S .. G (z + 1) / S - 1), each writing its raw sums to part[z][row][j],
 * memra_k_experts_splitk_sum adding them in slice order over the routed rows. For long k
 * with few tiles (mixtral down, k = 14336, n = 4096, about 128 rows an expert: 8 experts x
 * 32 column tiles fill one wave, and the remainder tiles' launch a second wave of all of k;
 * run q1: 0.84 ms against 0.67 ms for the loop of dense calls, which split k). S: the
 * smallest of 1 .. 4 whose slices of the first launch's estimated tiles (ceil(m / bm) x
 * ceil(n / bn), the rows as if in full tiles) reach two CTAs per slot (2 per SM, 3 for the
 * 32-row tile), keeping 16 steps a slice and the partial sums within Q8R_PART_MAX.
 * MEMRA_MMQ_XE_SPLIT=1..16 forces it (at most G). A guess, not fitted on a GPU. */
static int xe_split_pick(const memra__gpu *q, int forced, int64_t m, int64_t n, int64_t k, int bm, int bn)
{
    const int64_t G = (k + 127) / 128;
    if (forced > 0) return (int)(forced < G ? forced : G > 0 ? G : 1);
    const int64_t sms = sms_of(q);
    const int64_t slots = sms * (bm <= 32 ? 3 : 2);
    const int64_t ctas = (m + bm - 1) / bm * ((n + bn - 1) / bn);
    int S = 1;
    while (S < 4 && ctas * S < 2 * slots && G / (S + 1) >= 16 && (double)(S + 1) * (double)m * (double)n * 4.0 <= Q8R_PART_MAX)
        S++;
    return S;
}

static size_t up16(size_t b) { return (b + 15u) & ~(size_t)15u; }

/* The grouped tile for m rows over E experts among `fns` (memra__mmq_xe_tiles
 * order), f: MEMRA_MMQ_XE_BM; -1 when none is loaded. */
static int xe_tile_pick(int f, const CUfunction *fns, int64_t m, int64_t E)
{
    const int want = f == 32 || f == 64 || f == 128 ? f : m >= 96 * E ? 128 : m >= 48 * E ? 64 : 32;
    int best = -1;
    for (int t = 0; t < MMQ_XE_TILES; t++)
        if (fns[t] != NULL && (best < 0 || memra__mmq_xe_tiles[0][t].bm <= want)) best = t;
    return best;
}

/* gemm_experts on the f16 / bf16 lanes (off with MEMRA_MMQ_XE_F16=0; run t2): the routing's
 * one table for tiles of bm rows (the grouped floor's pick from the mean rows per expert), the
 * activation rounded to 16 bits in expert order (memra_k_experts_cvt16_*: the host's rounding),
 * then the tile-major 16-bit tile (mmq.cu "gemm_experts on the f16 / bf16 lanes"). a->w: E
 * pointers to each expert's f16 (bf16) [n x k]. Plain stream-ordered launches, no host read. */
static memra_status h16_experts(memra_call *call, const memra_gemm_args *a, const memra_gemm_experts_args *ex)
{
    memra__gpu *q = MMQ_OF(call);
    const int bf = ex->lane == MEMRA_OP_gemm_bf16;
    const CUfunction *fns = MMQ_K(q)->experts_h16[bf];
    if (fns[0] == NULL && fns[1] == NULL && fns[2] == NULL)
        return decline(call, "gemm_experts: the f16 and bf16 lanes are off (MEMRA_MMQ_XE_F16=0) or did not load");
    memra_status st = check_gemm(q, "gemm_experts", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (ex->n_experts < 1)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: n_experts = %d", q->name,
                                  (int)ex->n_experts);
    if (bf && a->x_is_f16)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                  "%s.gemm_experts: lane gemm_bf16 reads an f32 activation (x_is_f16 is for gemm_f16)",
                                  q->name);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (ex->ids == 0) return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: ids is NULL", q->name);
    if (a->k % 8 != 0) return decline(call, "gemm_experts: the f16 / bf16 tile needs in_f a multiple of 8");
    if (!aligned(a->x, 16) || !aligned(a->w, 8))
        return decline(call, "gemm_experts: needs a 16-byte aligned x and an 8-byte aligned expert table");
    const int32_t E = ex->n_experts;
    if (E > MMQ_XE_MAX) return decline(call, "gemm_experts: more than 4096 experts (the routing kernel's shared memory)");
    const int tile = xe_tile_pick(MMQ_K(q)->xe_bm, fns, a->m, E);
    if (tile < 0) return decline(call, "gemm_experts: no 16-bit grouped tile fits the device's shared memory");
    int bm = memra__mmq_xe_tiles[0][tile].bm, bm2 = 0;
    const int64_t tiles_max = ((int64_t)a->m + bm - 1) / bm + E;
    const h16_tile *ht = &h16_tiles[MMQ_K(q)->h16_var][tile];
    if (tiles_max > 0x7fffffff || ((int64_t)a->n + ht->bn - 1) / ht->bn > 65535)
        return decline(call, "gemm_experts: the grid's limits (row tiles or column blocks)");
    const size_t b_off = up16(((size_t)E + 1) * 4), b_perm = up16((size_t)a->m * 4), b_tiles = up16((size_t)tiles_max * 8);
    memra_dptr p = 0, a16 = 0;
    st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_ROUTE, b_off + b_perm + b_tiles + 8 + 32, &p);
    if (st == MEMRA_STATUS_OK)
        st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_XE_A16, (size_t)a->m * (size_t)a->k * 2u + 16u, &a16);
    if (st != MEMRA_STATUS_OK) return st;
    memra_dptr offsets = p, perm = p + b_off, tiles = perm + b_perm, ntiles = tiles + b_tiles, tiles2 = ntiles + 16,
               ntiles2 = ntiles + 8;
    memra_dptr ids = ex->ids, w = a->w, x = a->x, y = y_base(a);
    int mm = a->m, ee = E, nn = a->n, kk = a->k;
    long long ldy = a->ldy;
    float alpha = a->alpha;
    st = launch_n(q, MMQ_K(q)->experts_route, "memra_k_experts_route", 1, 1, 1024, 0, call->stream,
                  (void *[]){&ids, &mm, &ee, &bm, &offsets, &perm, &tiles, &ntiles, &bm2, &tiles2, &ntiles2});
    if (st != MEMRA_STATUS_OK) return st;
    static const char *const cvt_names[3] = {"memra_k_experts_cvt16_f16", "memra_k_experts_cvt16_bf16",
                                             "memra_k_experts_copy16"};
    const int c = bf ? 1 : a->x_is_f16 ? 2 : 0;
    const int64_t items = (int64_t)a->m * (a->k / 4);
    const unsigned gx = (unsigned)((items + 255) / 256 < 8192 ? (items + 255) / 256 : 8192);
    st = launch_n(q, MMQ_K(q)->experts_cvt16[c], cvt_names[c], gx, 1, 256, 0, call->stream,
                  (void *[]){&x, &perm, &offsets, &ee, &kk, &a16});
    if (st != MEMRA_STATUS_OK) return st;
    return launch_n(q, fns[tile], ht->kernel[bf], (unsigned)tiles_max, (unsigned)((a->n + ht->bn - 1) / ht->bn),
                    MMQ_THREADS, ht->smem, call->stream, (void *[]){&w, &a16, &nn, &kk, &offsets, &perm, &tiles, &ntiles, &y, &ldy, &alpha});
}

memra_status memra__mmq_gemm_experts(memra_call *call, const memra_gemm_args *a, const memra_gemm_experts_args *ex)
{
    memra__gpu *q = MMQ_OF(call);
    if (ex == NULL || !MEMRA_HAS_MEMBER(ex, memra_gemm_experts_args, w_scales))
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: experts args missing or too small",
                                  q->name);
    if (ex->lane == MEMRA_OP_gemm_f16 || ex->lane == MEMRA_OP_gemm_bf16) return h16_experts(call, a, ex);
    if (ex->lane != MEMRA_OP_gemm_q8_0r && ex->lane != MEMRA_OP_gemm_kr)
        return decline(call, "gemm_experts: this module serves the gemm_q8_0r and gemm_kr lanes (the integer floor) "
                             "and gemm_f16 and gemm_bf16 only");
    memra_status st = check_gemm(q, "gemm_experts", a);
    if (st != MEMRA_STATUS_OK) return st;
    if (ex->n_experts < 1)
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: n_experts = %d", q->name,
                                  (int)ex->n_experts);
    int lane = 0; /* memra__mmq_xe_tiles' lane index */
    if (ex->lane == MEMRA_OP_gemm_kr) {
        const int32_t f = MEMRA_HAS_MEMBER(a, memra_gemm_args, w_format) ? a->w_format : -1;
        if (f != MEMRA_FORMAT_Q4_K && f != MEMRA_FORMAT_Q5_K && f != MEMRA_FORMAT_Q6_K)
            return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                      "%s.gemm_experts: lane gemm_kr, w_format %d is not Q4_K, Q5_K or Q6_K", q->name,
                                      (int)f);
        if (a->k % MEMRA_QK_K != 0)
            return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT,
                                      "%s.gemm_experts: lane gemm_kr, k = %d is not a multiple of 256", q->name,
                                      (int)a->k);
        lane = f == MEMRA_FORMAT_Q4_K ? 1 : f == MEMRA_FORMAT_Q5_K ? 2 : 3;
    } else if (a->k % MEMRA_QK8_0 != 0) {
        return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: k = %d is not a multiple of 32",
                                  q->name, (int)a->k);
    }
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (ex->ids == 0) return q->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.gemm_experts: ids is NULL", q->name);
    const int32_t E = ex->n_experts, m = a->m, n = a->n, k = a->k;
    if (E > MMQ_XE_MAX) return decline(call, "gemm_experts: more than 4096 experts (the routing kernel's shared memory)");
    const mmq_knobs kn = call_knobs(call, q, MEMRA_OP_gemm_experts);
    const CUfunction *fns = MMQ_K(q)->experts[lane];
    const int tile = xe_tile_pick(MMQ_K(q)->xe_bm, fns, m, E);
    if (tile < 0) return decline(call, "gemm_experts: no grouped tile fits the device's shared memory");
    const memra__mmq_r3_tile *tl = &memra__mmq_xe_tiles[lane][tile];
    int bm = tl->bm;
    /* the remainder tile: an expert's rows past its last full tile of bm go to the smallest loaded
     * tile (second table, second launch), unless MEMRA_MMQ_XE_BM forces one height */
    int small = -1, bm2 = 0;
    for (int t = 0; MMQ_K(q)->xe_bm == 0 && t < MMQ_XE_TILES; t++)
        if (fns[t] != NULL && memra__mmq_xe_tiles[lane][t].bm < bm &&
            (small < 0 || memra__mmq_xe_tiles[lane][t].bm < memra__mmq_xe_tiles[lane][small].bm))
            small = t;
    if (small >= 0) bm2 = memra__mmq_xe_tiles[lane][small].bm;
    /* MEMRA_MMQ_XE_TALL=1: where the mean rows per expert pick the 128-row tile and are at most 160,
     * the 160 x 96 interleaved tile on the sorted records (their scratch taken here, before the
     * routing builds a 160-row table; without it the 128-row tiles serve); remainders past 160 rows
     * still go to the 32-row tile */
    const memra__mmq_r3_tile *tall = NULL;
    /* a knob asked for (=1) whose tile this call's rows cannot take (the routing's mean picks a shorter table than
     * the 128-row one both tiles replace) says so: a test must not pass on the tiles that served instead. Once at
     * WARN a module, then at DEBUG: memra_stream_reserve runs the call at every m up to 1024 with every row on one
     * expert (run s1: 191 warnings for one reservation) */
    const int wg_note = lane == 0 && MMQ_K(q)->xe_wg_asked && MMQ_K(q)->experts_wg != NULL;
    if (tl->bm != 128 && MMQ_K(q)->xe_bm == 0 && (wg_note || (lane < 2 && MMQ_K(q)->experts_tall[lane] != NULL))) {
        /* (the module's one-way switch: its state is otherwise read-only after init) */
        atomic_int *once = &((mmq_state *)MMQ_K(q))->xe_pick_warned;
        const int first = atomic_exchange_explicit(once, 1, memory_order_relaxed) == 0;
        q->host->log(first ? MEMRA_LOG_WARN : MEMRA_LOG_DEBUG, q->name,
                     "gemm_experts: %d rows over %d experts pick the %d-row table; %s applies to the 128-row one "
                     "only, and the records tiles serve this call%s",
                     (int)m, (int)E, tl->bm, wg_note ? "MEMRA_MMQ_XE_WG=1" : "MEMRA_MMQ_XE_TALL=1",
                     first ? " (logged once; later calls at DEBUG)" : "");
    }
    if (lane < 2 && MMQ_K(q)->experts_tall[lane] != NULL && MMQ_K(q)->xe_bm == 0 && tl->bm == 128 && small >= 0 &&
        (int64_t)m <= (int64_t)160 * E && MMQ_K(q)->experts_merged[lane][tile] == NULL &&
        MMQ_K(q)->experts_sorted[lane][tile] != NULL && MMQ_K(q)->experts_sorted[lane][small] != NULL &&
        ((int64_t)k + 127) / 128 <= 65535 && ((int64_t)n + 95) / 96 <= 65535) {
        memra_dptr xs0 = 0;
        if (q->host->scratch_get(call, MEMRA__MMQ_SLOT_XE_XS, (size_t)memra_q8_1_bytes(m, k) + 256, &xs0) == MEMRA_STATUS_OK)
            tall = &memra__mmq_xe_tall[lane], tl = tall, bm = tall->bm;
    }
    /* table 1: ceil(c / bm) tiles per expert at most (a remainder above bm2 keeps its full
     * tile); table 2: one tile per expert at most, of at least one row */
    const int64_t tiles_max = ((int64_t)m + bm - 1) / bm + E;
    const int64_t tiles2_max = !bm2 ? 0 : (int64_t)E < (int64_t)m ? (int64_t)E : (int64_t)m;
    if (tiles_max > 65535 || tiles2_max > 65535) return decline(call, "gemm_experts: more than 65535 row tiles");
    /* each expert's operand must be 16-byte aligned too (cp.async): the
     * core's tables and memra check's are; the table itself is read as 8-byte words */
    if (!aligned(a->x, 16) || !aligned(a->w, 8))
        return decline(call, "gemm_experts: needs 16-byte aligned q8_1 records and an 8-byte aligned expert table");
    const size_t b_off = up16(((size_t)E + 1) * 4), b_perm = up16((size_t)m * 4), b_tiles = up16((size_t)tiles_max * 8);
    const size_t b_tiles2 = up16((size_t)tiles2_max * 8);
    memra_dptr p = 0;
    st = q->host->scratch_get(call, MEMRA__MMQ_SLOT_ROUTE, b_off + b_perm + b_tiles + b_tiles2 + 32, &p);
    if (st != MEMRA_STATUS_OK) return st;
    memra_dptr offsets = p, perm = p + b_off, tiles = perm + b_perm, tiles2 = tiles + b_tiles;
    memra_dptr ntiles = tiles2 + b_tiles2, ntiles2 = ntiles + 16;
    memra_dptr ids = ex->ids, w = a->w, x = a->x, y = y_base(a), part = 0;
    int mm = m, ee = E, nn = n, kk = k;
    long long ldy = a->ldy;
    float alpha = a->alpha;
    int S = xe_split_pick(q, MMQ_K(q)->xe_split, m, n, k, bm, tl->bn);
    if (S > 1) {
        const memra_status sst =
            q->host->scratch_get(call, MEMRA__MMQ_SLOT_XE_PART, (size_t)S * (size_t)m * (size_t)n * 4u, &part);
        /* in a graph capture without reserved scratch: the error, never a different summation order */
        if (sst == MEMRA_STATUS_NOT_SUPPORTED) return sst;
        if (sst != MEMRA_STATUS_OK) {
            q->host->log(MEMRA_LOG_DEBUG, q->name, "gemm_experts: no scratch for %d split-k slices, running unsplit", S);
            S = 1, part = 0;
        }
    }
    st = launch_n(q, MMQ_K(q)->experts_route, "memra_k_experts_route", 1, 1, 1024, 0, call->stream,
                  (void *[]){&ids, &mm, &ee, &bm, &offsets, &perm, &tiles, &ntiles, &bm2, &tiles2, &ntiles2});
    if (st != MEMRA_STATUS_OK) return st;
    /* the merged grid has the weight's 128-row blocks on grid.y (at most 65535) */
    const CUfunction merged = bm2 && (n + 127) / 128 <= 65535 ? MMQ_K(q)->experts_merged[lane][tile] : NULL;
    if (merged != NULL) {
        /* MEMRA_MMQ_XE_MERGE=1: both tables in one grid, tiles on x (x >= tiles_max the
         * remainder tiles), the weight's column blocks on y */
        int y1 = (int)tiles_max;
        st = launch_pdl_k(q, &kn, merged, memra__mmq_xe_merged[lane][tile], (unsigned)(tiles_max + tiles2_max),
                          (unsigned)((n + 127) / 128), (unsigned)S, MMQ_THREADS, tl->smem, call->stream,
                          (void *[]){&w, &x, &mm, &nn, &kk, &offsets, &perm, &tiles, &ntiles, &y, &ldy, &alpha, &part,
                                     &tiles2, &ntiles2, &y1});
    }
    /* the default, MEMRA_MMQ_XE_SORT=0 turns it off (not merged, the tiles loaded; run v1: 0.83-0.86 ->
     * 0.89-0.93 of dense at m = 4096, 0.60-0.75 -> 0.71-0.84 at m = 512): the records gathered into expert order
     * (a plain launch after the routing, into scratch), then the _s tiles copy each tile's rows
     * as one run; the same operands in the same order, so the outputs are the gathered tiles'
     * bit for bit. Where the scratch is not to be had (a capture without it reserved) the
     * gathered copy serves, with the same result, except for the formats on the TC fold (Q4_K and Q5_K by
     * default, MEMRA_MMQ_KR_TC): the gathered tiles keep the per-32 min term, within the band. */
    const CUfunction *srt = MMQ_K(q)->experts_sorted[lane];
    const int64_t G = ((int64_t)k + 127) / 128;
    int sorted = merged == NULL && MMQ_K(q)->experts_gather != NULL && srt[tile] != NULL &&
                 (!bm2 || srt[small] != NULL) && G <= 65535;
    if (st == MEMRA_STATUS_OK && sorted) {
        memra_dptr xs = 0;
        /* as large as the records (memra_q8_1_bytes): the sum plane at the same offset as in x */
        if (q->host->scratch_get(call, MEMRA__MMQ_SLOT_XE_XS, (size_t)memra_q8_1_bytes(m, k) + 256, &xs) != MEMRA_STATUS_OK) {
            q->host->log(MEMRA_LOG_DEBUG, q->name, "gemm_experts: no scratch for the sorted records, gathering per tile");
            sorted = 0;
        } else {
            int ch = MMQ_K(q)->sorted_xs[lane] ? 10 : 9; /* the records' 9 chunks a row, and its plane entry */
            long long plane = (long long)memra_q8_1_plane(m, k);
            st = launch_n(q, MMQ_K(q)->experts_gather, "memra_k_experts_gather_q8_1", (unsigned)((ch * (int64_t)m + 255) / 256),
                          (unsigned)G, 256, 0, call->stream, (void *[]){&x, &perm, &offsets, &ee, &mm, &xs, &ch, &plane});
            x = xs;
        }
    }
    if (sorted) fns = srt;
    /* MEMRA_MMQ_XE_OVERLAP=1 (unsplit, with a remainder launch, both kernels loaded, PDL on): the
     * remainder grid starts beside the full tiles' last wave (mmq.cu XE_OVL_MAIN); its CTAs
     * need the full tiles' grid to have started every CTA, which only a programmatic launch
     * of both lets happen early (without PDL they run one after the other, as plain) */
    const CUfunction *ovl = MMQ_K(q)->experts_ovl[lane];
    const int overlap = !sorted && merged == NULL && tiles_max > 0 && bm2 && S == 1 && !kn.pdl_off && ovl[tile] != NULL &&
                        ovl[small] != NULL;
    /* MEMRA_MMQ_XE_WG (auto: k >= MMQ_XE_WG_AUTO_K; =1: every k): the 128-row table's tiles on the seeded
     * warpgroup tile over the gathered records
     * (the dense _wgs' wgmmas and fold: the records tiles' outputs bit for bit), each expert's weight maps
     * built on the device from two templates (memra_k_experts_maps_q8_0r, a plain launch: 2 E maps of
     * 128 bytes in scratch), grid (tiles_max, ceil(n / 128), S); the remainder table as before. No
     * scratch for the maps, or an encoding the driver refused: the records tiles, the same outputs */
    memra__cu_tensor_map xm[4]; /* the weight's templates (codes, heads), then the sorted records' maps */
    memra_dptr maps = 0;
    const int wg_shape = st == MEMRA_STATUS_OK && lane == 0 && MMQ_K(q)->experts_wg != NULL && tall == NULL &&
                         merged == NULL && tl->bm == 128 && tiles_max > 0 && ((int64_t)n + 127) / 128 <= 65535 &&
                         k >= MMQ_K(q)->xe_wg_min_k;
    const int wgx = wg_shape && sorted &&
                    q->host->scratch_get(call, MEMRA__MMQ_SLOT_XE_MAPS, (size_t)E * 256 + 128, &maps) == MEMRA_STATUS_OK &&
                    r3w_map(q, &xm[0], x, n, k, 0) && r3w_map(q, &xm[1], x, n, k, 1) && r3w_map(q, &xm[2], x, m, k, 0) &&
                    r3w_map(q, &xm[3], x, m, k, 1);
    if (wg_shape && !wgx) /* =1: a warning (a test must not pass on the tiles it fell back to); auto: debug */
        q->host->log(MMQ_K(q)->xe_wg_asked ? MEMRA_LOG_WARN : MEMRA_LOG_DEBUG, q->name,
                     "gemm_experts: MEMRA_MMQ_XE_WG's tile applies but there is no scratch for the sorted records or the experts' tensor "
                     "maps (a capture without memra_stream_reserve), or the driver refused an encoding; the records "
                     "tiles serve this call");
    /* with MEMRA_MMQ_XE_OVERLAP=1 too (unsplit, a remainder table, PDL on): the tile triggers once it has
     * its tile (_wgs_o1, XE_OVL_MAIN) and the remainders run on _mt1_o2 (XE_OVL_REM: gathering their rows
     * from the records as quantised, x0) beside the tile's last wave */
    /* with MEMRA_MMQ_XE_WG_REM=1 (a 32-row remainder table): the remainders in the tile's grid, past its
     * tiles_max CTAs on grid.x (memra_k_experts_q8_0r_wgsr), and no remainder launch */
    const int wg_rem = wgx && bm2 == 32 && MMQ_K(q)->experts_wg_rem != NULL;
    const int wg_ovl = wgx && !wg_rem && bm2 && S == 1 && !kn.pdl_off && MMQ_K(q)->experts_wg_ovl != NULL &&
                       ovl[small] != NULL;
    if (wgx) {
        maps = (maps + 127) / 128 * 128;
        st = launch_n(q, MMQ_K(q)->experts_wg_maps, "memra_k_experts_maps_q8_0r", (unsigned)((2 * (int64_t)E + 3) / 4), 1,
                      128, 0, call->stream, (void *[]){&xm[0], &xm[1], &w, &ee, &maps});
        int t1 = (int)tiles_max;
        if (st == MEMRA_STATUS_OK && wg_rem)
            st = launch_pdl_k(q, &kn, MMQ_K(q)->experts_wg_rem, "memra_k_experts_q8_0r_wgsr",
                              (unsigned)(tiles_max + tiles2_max), (unsigned)((n + 127) / 128), (unsigned)S, R3W_THREADS,
                              R3W_SMEM_BYTES_SD(1), call->stream,
                              (void *[]){&xm[2], &xm[3], &maps, &offsets, &perm, &tiles, &ntiles, &y, &mm, &nn, &kk, &ldy,
                                         &alpha, &part, &tiles2, &ntiles2, &t1});
        else if (st == MEMRA_STATUS_OK) {
            /* MEMRA_MMQ_XE_RASTER (1, the default; auto: experts of 384 rows and more): a 1-D grid of tiles_max x
             * nty CTAs that the tile walks in groups of 8 table tiles (mmq.cu r3w_xe_raster). Runs y1 / y5 on an
             * H100, Mixtral-like Q8_0 rows: 0.48-0.55 ms a call at m = 512 against 0.51-0.59 on the plain grid,
             * 3.04-3.17 at 4096 against 3.01-3.17 (gate and up 2-3% faster, down 1-5% slower) */
            const int64_t nty = ((int64_t)n + 127) / 128;
            const int ras = nty > 1 && tiles_max * nty <= 0x7FFFFFFF &&
                            (MMQ_K(q)->xe_raster == 1 || (MMQ_K(q)->xe_raster == 2 && (int64_t)m >= 384 * (int64_t)E));
            st = launch_pdl_k(q, &kn, wg_ovl ? MMQ_K(q)->experts_wg_ovl : MMQ_K(q)->experts_wg,
                              wg_ovl ? "memra_k_experts_q8_0r_wgs_o1" : MMQ_K(q)->xe_wg_name,
                              (unsigned)(ras ? tiles_max * nty : tiles_max), (unsigned)(ras ? 1 : nty), (unsigned)S,
                              R3W_THREADS, R3W_SMEM_BYTES_SD(1), call->stream,
                              (void *[]){&xm[2], &xm[3], &maps, &offsets, &perm, &tiles, &ntiles, &y, &mm, &nn, &kk, &ldy,
                                         &alpha, &part});
        }
    }
    if (tall != NULL && !sorted) /* (the scratch was had above, every other condition checked there) */
        return q->host->set_error(MEMRA_STATUS_INTERNAL, "%s.gemm_experts: MEMRA_MMQ_XE_TALL's tile without the sorted records",
                                  q->name);
    if (st == MEMRA_STATUS_OK && merged == NULL && tiles_max > 0 && !wgx) {
        st = launch_pdl_k(q, &kn, tall ? MMQ_K(q)->experts_tall[lane] : overlap ? ovl[tile] : fns[tile],
                          tall      ? tall->kernel
                          : overlap ? memra__mmq_xe_ovl[lane][tile]
                          : sorted  ? MMQ_K(q)->sorted_names[lane][tile]
                                    : tl->kernel,
                          (unsigned)((n + tl->bn - 1) / tl->bn), (unsigned)tiles_max, (unsigned)S, MMQ_THREADS, tl->smem,
                          call->stream,
                          (void *[]){&w, &x, &mm, &nn, &kk, &offsets, &perm, &tiles, &ntiles, &y, &ldy, &alpha, &part});
    }
    if (st == MEMRA_STATUS_OK && bm2 && merged == NULL && !wg_rem) {
    /* the remainders write other rows of y than the full tiles; a dependent of the full tiles'
     * launch, whose griddepcontrol.wait orders it after that grid and so after the routing
     * (overlapped: it waits at its end, so it still completes after the full tiles) */
        const memra__mmq_r3_tile *t2 = &memra__mmq_xe_tiles[lane][small];
        const int ro = overlap || wg_ovl;
        memra_dptr xr = wg_ovl ? a->x : x; /* (wg_ovl: the gathering _o2 tile reads the records as quantised) */
        st = launch_pdl_k(q, &kn, ro ? ovl[small] : fns[small],
                          ro ? memra__mmq_xe_ovl[lane][small] : sorted ? MMQ_K(q)->sorted_names[lane][small] : t2->kernel,
                          (unsigned)((n + 127) / 128), (unsigned)tiles2_max, (unsigned)S, MMQ_THREADS, t2->smem,
                          call->stream,
                          (void *[]){&w, &xr, &mm, &nn, &kk, &offsets, &perm, &tiles2, &ntiles2, &y, &ldy, &alpha, &part});
    }
    if (st != MEMRA_STATUS_OK || S == 1) return st;
    /* the slices' sum over the routed rows, a dependent of the last tile launch (which waited for
     * the one before it) */
    const unsigned gx = (unsigned)((n + 255) / 256), gy = (unsigned)(m < 65535 ? m : 65535);
    return launch_pdl_k(q, &kn, MMQ_K(q)->experts_splitk_sum, "memra_k_experts_splitk_sum", gx, gy, 1, 256, 0,
                        call->stream, (void *[]){&part, &S, &mm, &nn, &perm, &offsets, &ee, &y, &ldy, &alpha});
}
