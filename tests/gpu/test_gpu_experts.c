/* memra_matmul_experts on a GPU (issue 30): the grouped tiles of the integer
 * floor (gemm_experts, lanes gemm_q8_0r and gemm_kr: mmq.cu's
 * memra_k_experts_q8_0r_* / memra_k_experts_kr_*), MEMRA_F16_BUDGET_MB=0.
 *
 *   test_gpu_experts run      Q8_0 experts, eager, two routings (uneven: expert 0 no
 *                             rows, 1 one row, 2 most; uniform), skipped ids left
 *                             untouched, the ledger
 *   test_gpu_experts graph    the same, then the grouped call captured into a CUDA graph
 *                             once (scratch reserved first), replayed with the two
 *                             routings written into the same ids buffer: each replay
 *                             equals the eager call of its routing bit for bit (the
 *                             routing is read on the device at replay)
 *   test_gpu_experts bm32 | bm64 | bm128
 *                             run with the grouped tile forced (MEMRA_MMQ_XE_BM): 32, 64
 *                             or 128 gathered rows per tile (expert 2's rows span many
 *                             tiles; 128 is not loaded on sm_120, which takes 64)
 *   test_gpu_experts skew     half the rows to one expert, the rest uniform
 *   test_gpu_experts q4_0 | q4_k | q5_k | q6_k
 *                             run on Q4_0 experts (the records of their Q8_0
 *                             conversion) and on K-quant experts (gemm_kr's tile)
 *   test_gpu_experts tall | tall_q4_k | tall3 | tall3_q4_k
 *                             Q8_0 / Q4_K over 2 experts (150 rows each: uniform; 169 and 129:
 *                             uneven) or 3 (100 each; 160, 111, 27) with MEMRA_MMQ_XE_TALL=1:
 *                             on cc 9.0 the 160 x 96 interleaved tiles (169 rows: one of them and
 *                             a 32-row remainder tile of 9; 160: one, full), failing there if the
 *                             module refused them or a call's rows picked a shorter table (a log
 *                             sink: until the thirty-third session these were tall4 / tall4_q4_k
 *                             over 4 experts, whose 300 rows picked the 64-row table, so they never
 *                             ran the tall tile); elsewhere the knob warns and the usual tiles serve
 *   test_gpu_experts wg | wg_graph | wg_split | wg4 | wg_bm128 | wg_skew | wg_q4_0 | wg_raster | wg_plain | wg_pf |
 *                    wg_qs | wg_qs2
 *                             Q8_0 (and Q4_0) with MEMRA_MMQ_XE_WG=1: on cc 9.x the 128-row table's
 *                             tiles on the seeded warpgroup tile (memra_k_experts_q8_0r_wgs, _wgsf under pin), failing
 *                             there if the module refused it or fell back in a call (a log sink).
 *                             wg, wg_graph, wg_split (3 k slices), wg_q4_0: 2 experts (169 rows: two
 *                             warpgroup tiles, the second of 41 rows, above the 32-row remainder; 129:
 *                             one, then a 32-row records tile of 1 row); on the one 128-row table
 *                             (MEMRA_MMQ_XE_BM=128): wg4 (4 experts: tiles of 128 + 71, 60, 10 and 29
 *                             rows), wg_bm128 (16 experts, the uneven routing: expert 0 without rows,
 *                             tiles of 1 row, of 4-5 rows for experts 3-15, and 128 + 109 for expert
 *                             2) and wg_skew (16 experts, half the rows to one); wg_raster as wg_skew on the
 *                             rastered grid (MEMRA_MMQ_XE_RASTER=1, the default the others take too: 19 table
 *                             tiles x 2 row blocks in groups of 8, the last of 3), wg_plain as wg_skew on the
 *                             plain grid (MEMRA_MMQ_XE_RASTER=0), wg_pf as wg_skew on _wgs's twin that also
 *                             prefetches the weight into L2 (MEMRA_MMQ_XE_PF=1, MEMRA_MMQ_WG_SEED=1) at k = 1312
 *                             (11 steps, the last partial: the first step prefetches steps 4-8, the next two 9
 *                             and 10; a refusal of either knob logged fails it on cc 9.x); wg_qs as wg_skew and
 *                             wg_qs2 as wg on _wgs's quick-start twin (MEMRA_MMQ_XE_QS=1, MEMRA_MMQ_WG_SEED=1: the
 *                             table entry read before its bound, the scatter's places from shared memory; the
 *                             routing's zeros past the table and past the routed rows, which two rows of ids
 *                             outside [0, E) leave, are what initcheck sees it read). Elsewhere the knob
 *                             warns and the records tiles serve.
 *   test_gpu_experts wg_rem | wg_rem_graph | wg_rem_split | wg_rem3
 *                             the same with MEMRA_MMQ_XE_WG_REM=1: the remainders of at most 32 rows in the
 *                             tile's grid on the 32-column tile (memra_k_experts_q8_0r_wgsr): wg_rem, _graph,
 *                             _split (3 k slices) as wg (129 rows: a remainder tile of 1 row); wg_rem3 over 3
 *                             experts (300 rows pick the 128-row table: 96 or more an expert) with 160 rows
 *                             (a full tile and a full 32-row remainder tile: every token column of the fold),
 *                             111 (one full tile) and 27 (a remainder tile alone). A refusal fails them on
 *                             cc 9.x as above.
 *   test_gpu_experts split | split_q6_k
 *                             Q8_0 (uniform) and Q6_K (skewed) with the grouped tiles on
 *                             3 k slices (MEMRA_MMQ_XE_SPLIT=3, the dense lane compared
 *                             with on 3 too: MEMRA_MMQ_SPLIT=3) and the grouped split-k sum
 *   test_gpu_experts fp8blk | fp8blk_graph | fp8blk_skew | fp8blk_raster
 *                             block-128 FP8 experts (e4m3 and a grid each) on the
 *                             fp8blk module's grouped warpgroup tile (lane
 *                             gemm_fp8_blk: memra_k_fp8blk_experts_wgmma, cc 9.0;
 *                             MEMRA_PREFER=gemm_fp8_blk=fp8blk so that the dense
 *                             lane compared with is fp8blk's own); eager, captured,
 *                             skewed; fp8blk_raster skewed on the persistent tiles
 *                             walking in groups of 3 table tiles on 5 CTAs, each
 *                             CTA several tiles (MEMRA_FP8BLK_XE_RASTER=3,
 *                             MEMRA_FP8BLK_XE_CTAS=5); fp8blk_half skewed on the
 *                             256-wide persistent tile's twin whose tiles of at most 64
 *                             rows run a column half on each warpgroup
 *                             (MEMRA_FP8BLK_XE_HALF=1, MEMRA_FP8BLK_XE_N128=0: n = 200 is
 *                             one 256-wide column, its second half partial; 5 CTAs, so a
 *                             CTA walks half and whole tiles; a logged refusal fails it);
 *                             fp8blk_qu8 skewed with the activation quantised 8 items a warp
 *                             (MEMRA_FP8BLK_XE_QU=8, memra_k_fp8blk_quant_sorted8).
 *                             Skips (77) on a GPU that is not cc 9.0.
 *   test_gpu_experts w16 | w16_graph | w16_q4_0 | w16_q4_k | w16_q5_k | w16_q6_k | w16_skew | w16_split
 *                    | w16_n128 | w16_n128_skew | w16_raster | w16_n256_skew | w16_n160 | w16_n160_skew
 *                    | w16_n160_split | w16_n160_raster | w16_fit | w16_fit_skew | w16_fit_split | w16_fit_edge
 *                    | w16_fit_edge2
 *                             experts on the W16 operand (MEMRA_W16=auto), the w16 module's grouped tile
 *                             (gemm_experts on lane gemm_w16: memra_k_w16_xe_*, cc 9.0): Q8_0 (k = 576, the
 *                             tile's 64-column steps), Q4_0, the K-quants; eager, captured, skewed (Q4_K), and
 *                             on 3 k slices (w16_split, Q6_K skewed: MEMRA_W16_SPLIT=3 for the dense lane too);
 *                             300 rows over 16 experts take the 64-token tile (two CTAs an SM), the _n128 cases
 *                             the 128-token one (MEMRA_W16_TILE=128; the dense lane's tile is its own), the _n160
 *                             ones the 160-token one (MEMRA_W16_TILE=160, m64n160: the uneven routing's largest
 *                             expert takes two tiles, the second partial; skewed, expert 5's rows one or two;
 *                             _split on 3 k slices (Q6_K skewed), _raster walked in groups of 2 token tiles,
 *                             MEMRA_W16_XE_RASTER=2, Q5_K uneven); the _fit ones the 160-token tile's twin
 *                             whose wgmmas take 64, 128 or 160 tokens by the tile's rows (MEMRA_W16_XE_FIT=1;
 *                             uneven, Q8_0: expert 2's second tile of 77 rows at 128, the small experts'
 *                             at 64, its first at 160; skewed Q4_K; Q6_K uneven on 3 k slices; _edge, Q4_0,
 *                             experts of 129, 64, 65 and 40 rows; _edge2, Q5_K, 128, 160 and 10: each width's
 *                             edges; each fails unless the module logs the twins' load);
 *                             w16_raster (skewed) walks the grid in groups of 3 token tiles (MEMRA_W16_XE_RASTER=3);
 *                             w16_n256_skew (Q5_K) the 256-token tile in groups of 8 (MEMRA_W16_XE_RASTER=8, the
 *                             group auto takes where the rows fill 16 token tiles; 300 rows do not, so auto
 *                             leaves every case here on the plain grid) over the grid's 18 worst-case token
 *                             tiles; the skewed table holds about 16, so the last group's CTAs exit: w16_raster
 *                             covers a partial group with rows.
 *                             The host reference has its W16 switch on (memra_device_w16_set): the f16 mirror's
 *                             numbers, JUDGE_BAND_F16. Skips (77) on a GPU that is not cc 9.0.
 *   test_gpu_experts budget    "run" with the experts prepared under the default f16 budget:
 *                             they take the floor (quantised experts on a GPU: MEMRA_XE_MIRROR=0),
 *                             no mirror bytes used; the references then at budget 0 (the floor)
 *   test_gpu_experts f16 | bf16
 *                             f16 (uneven routing) and bf16 (skewed) experts on the mmq
 *                             family's 16-bit grouped tile (MEMRA_MMQ_XE_F16, on), judged
 *                             against the host only (the dense lanes are cuBLASLt's)
 *   test_gpu_experts fp8pt | fp8pt_skew
 *                             per-tensor e4m3 experts (a scale each) on the fp8blk module's
 *                             lane gemm_fp8 (MEMRA_FP8BLK_XE_PT, on: each expert's amax, the
 *                             per-tensor tile): judged against the host only (the dense
 *                             per-tensor lane is cuBLASLt's, which sums all of k before
 *                             scaling, so no bit-for-bit comparison)
 *   test_gpu_experts fp8blk_split
 *                             fp8blk on the tensor-map tile with its k blocks in 2 slices
 *                             (MEMRA_FP8BLK_XE_SPLIT=2: 2 + 3 of k = 544's 5 blocks) and the
 *                             slices' sum; judged against the host only (the dense lane does not
 *                             split, so no bit-for-bit comparison)
 *   test_gpu_experts fp8blk_one | fp8blk_one_skew
 *                             the same on the one-table tile-major kernel
 *                             (MEMRA_FP8BLK_XE_ONE=all: memra_k_fp8blk_experts_wgmma_t,
 *                             an expert's remainder rows on a 128-row tile whose
 *                             second warpgroup may have none).
 * Every case judges each routed row twice: against the host device within
 * 2 x the lane's band per element (JUDGE_BAND_Q8_0, JUDGE_BAND_FP8 for the block-128
 * FP8 lane; e = |gpu - host| / (sqrt(k) max_j |host row|), the live estimate of
 * the mass, as shadow A/B uses), and bit for bit against the dense GPU lane
 * (memra_matmul, MEMRA_MMQ_SPLIT=1) of its own expert on that expert's gathered
 * rows: the grouped tile runs the dense tile's MMAs and fold in the same order,
 * so any difference is a gathering or scattering bug.
 * n = 200 (a partial weight-row tile), k = 544 for Q8_0 / Q4_0 (a partial last
 * 128-step), 768 for the K-quants. Exits 77 without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "test_blocks.h"
#include "tools/judge.h"
#include "gpu/cu_streams.h"


#define E 16
#define N 200
#define ROWS 300
#define SENT 1234.5f

typedef struct xcase {
    const char *name;
    memra_format format;
    const char *bm; /* MEMRA_MMQ_XE_BM, NULL: the launcher's choice */
    int skew;       /* routing 0 sends half the rows to one expert */
    int graph;
    const char *lane;   /* the plan's lane on the GPU */
    const char *module; /* the module whose gemm_experts must serve; NULL: the routing's first */
    int split;          /* MEMRA_MMQ_XE_SPLIT and the dense MEMRA_MMQ_SPLIT (0: 1 for the dense lane, unforced);
                         * fp8blk_split: MEMRA_FP8BLK_XE_SPLIT (the floor's split then at its default) */
    int ne;             /* experts (0: E) */
} xcase;

static const xcase k_cases[] = {
    {"run", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 0},
    {"budget", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 0},
    {"graph", MEMRA_FORMAT_Q8_0, NULL, 0, 1, "mmq records", NULL, 0, 0},
    {"bm32", MEMRA_FORMAT_Q8_0, "32", 0, 0, "mmq records", NULL, 0, 0},
    {"bm64", MEMRA_FORMAT_Q8_0, "64", 0, 0, "mmq records", NULL, 0, 0},
    {"bm128", MEMRA_FORMAT_Q8_0, "128", 0, 0, "mmq records", NULL, 0, 0},
    {"skew", MEMRA_FORMAT_Q8_0, NULL, 1, 0, "mmq records", NULL, 0, 0},
    {"q4_0", MEMRA_FORMAT_Q4_0, NULL, 0, 0, "mmq records (Q4_0 as Q8_0)", NULL, 0, 0},
    {"q4_k", MEMRA_FORMAT_Q4_K, NULL, 0, 0, "mmq K records", NULL, 0, 0},
    {"q5_k", MEMRA_FORMAT_Q5_K, NULL, 0, 0, "mmq K records", NULL, 0, 0},
    {"q6_k", MEMRA_FORMAT_Q6_K, NULL, 0, 0, "mmq K records", NULL, 0, 0},
    {"fp8blk", MEMRA_FORMAT_E4M3, NULL, 0, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_graph", MEMRA_FORMAT_E4M3, NULL, 0, 1, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_skew", MEMRA_FORMAT_E4M3, NULL, 1, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_raster", MEMRA_FORMAT_E4M3, NULL, 1, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_half", MEMRA_FORMAT_E4M3, NULL, 1, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_qu8", MEMRA_FORMAT_E4M3, NULL, 1, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_split", MEMRA_FORMAT_E4M3, NULL, 0, 0, "fp8 block-128", "fp8blk", 2, 0},
    {"fp8blk_one", MEMRA_FORMAT_E4M3, NULL, 0, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"fp8blk_one_skew", MEMRA_FORMAT_E4M3, NULL, 1, 0, "fp8 block-128", "fp8blk", 0, 0},
    {"f16", MEMRA_FORMAT_F16, NULL, 0, 0, "f16", NULL, 0, 0},
    {"bf16", MEMRA_FORMAT_BF16, NULL, 1, 0, "bf16", NULL, 0, 0},
    {"fp8pt", MEMRA_FORMAT_E4M3, NULL, 0, 0, "fp8", "fp8blk", 0, 0},
    {"fp8pt_skew", MEMRA_FORMAT_E4M3, NULL, 1, 0, "fp8", "fp8blk", 0, 0},
    {"split", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 3, 0},
    {"split_q6_k", MEMRA_FORMAT_Q6_K, NULL, 1, 0, "mmq K records", NULL, 3, 0},
    {"tall", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 2},
    {"tall_q4_k", MEMRA_FORMAT_Q4_K, NULL, 0, 0, "mmq K records", NULL, 0, 2},
    {"tall3", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 3},
    {"tall3_q4_k", MEMRA_FORMAT_Q4_K, NULL, 0, 0, "mmq K records", NULL, 0, 3},
    {"wg", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 2},
    {"wg_graph", MEMRA_FORMAT_Q8_0, NULL, 0, 1, "mmq records", NULL, 0, 2},
    {"wg_split", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 3, 2},
    {"wg4", MEMRA_FORMAT_Q8_0, "128", 0, 0, "mmq records", NULL, 0, 4},
    {"wg_bm128", MEMRA_FORMAT_Q8_0, "128", 0, 0, "mmq records", NULL, 0, 0},
    {"wg_skew", MEMRA_FORMAT_Q8_0, "128", 1, 0, "mmq records", NULL, 0, 0},
    {"wg_raster", MEMRA_FORMAT_Q8_0, "128", 1, 0, "mmq records", NULL, 0, 0},
    {"wg_plain", MEMRA_FORMAT_Q8_0, "128", 1, 0, "mmq records", NULL, 0, 0},
    {"wg_pf", MEMRA_FORMAT_Q8_0, "128", 1, 0, "mmq records", NULL, 0, 0},
    {"wg_qs", MEMRA_FORMAT_Q8_0, "128", 1, 0, "mmq records", NULL, 0, 0},
    {"wg_qs2", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 2},
    {"wg_q4_0", MEMRA_FORMAT_Q4_0, NULL, 0, 0, "mmq records (Q4_0 as Q8_0)", NULL, 0, 2},
    {"wg_rem", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 2},
    {"wg_rem_graph", MEMRA_FORMAT_Q8_0, NULL, 0, 1, "mmq records", NULL, 0, 2},
    {"wg_rem_split", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 3, 2},
    {"wg_rem3", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "mmq records", NULL, 0, 3},
    {"w16", MEMRA_FORMAT_Q8_0, NULL, 0, 0, "w16", "w16", 0, 0},
    {"w16_graph", MEMRA_FORMAT_Q8_0, NULL, 0, 1, "w16", "w16", 0, 0},
    {"w16_q4_0", MEMRA_FORMAT_Q4_0, NULL, 0, 0, "w16", "w16", 0, 0},
    {"w16_q4_k", MEMRA_FORMAT_Q4_K, NULL, 0, 0, "w16", "w16", 0, 0},
    {"w16_q5_k", MEMRA_FORMAT_Q5_K, NULL, 0, 0, "w16", "w16", 0, 0},
    {"w16_q6_k", MEMRA_FORMAT_Q6_K, NULL, 0, 0, "w16", "w16", 0, 0},
    {"w16_skew", MEMRA_FORMAT_Q4_K, NULL, 1, 0, "w16", "w16", 0, 0},
    {"w16_split", MEMRA_FORMAT_Q6_K, NULL, 1, 0, "w16", "w16", 3, 0},
    {"w16_n128", MEMRA_FORMAT_Q8_0, "128", 0, 0, "w16", "w16", 0, 0},
    {"w16_n128_skew", MEMRA_FORMAT_Q4_K, "128", 1, 0, "w16", "w16", 0, 0},
    {"w16_raster", MEMRA_FORMAT_Q8_0, NULL, 1, 0, "w16", "w16", 0, 0},
    {"w16_n256_skew", MEMRA_FORMAT_Q5_K, "256", 1, 0, "w16", "w16", 0, 0},
    {"w16_n160", MEMRA_FORMAT_Q8_0, "160", 0, 0, "w16", "w16", 0, 0},
    {"w16_n160_skew", MEMRA_FORMAT_Q4_K, "160", 1, 0, "w16", "w16", 0, 0},
    {"w16_n160_split", MEMRA_FORMAT_Q6_K, "160", 1, 0, "w16", "w16", 3, 0},
    {"w16_n160_raster", MEMRA_FORMAT_Q5_K, "160", 0, 0, "w16", "w16", 0, 0},
    {"w16_fit", MEMRA_FORMAT_Q8_0, "160", 0, 0, "w16", "w16", 0, 0},
    {"w16_fit_skew", MEMRA_FORMAT_Q4_K, "160", 1, 0, "w16", "w16", 0, 0},
    {"w16_fit_split", MEMRA_FORMAT_Q6_K, "160", 0, 0, "w16", "w16", 3, 0},
    {"w16_fit_edge", MEMRA_FORMAT_Q4_0, "160", 0, 0, "w16", "w16", 0, 0},
    {"w16_fit_edge2", MEMRA_FORMAT_Q5_K, "160", 0, 0, "w16", "w16", 0, 0},
};

static int g_ne = E; /* the case's experts (tall: 2, 150 rows an expert) */
/* w16_fit_edge (1) / _edge2 (2): routing 0 puts the widths' edges in the 160-token tiles: 129, 64, 65 and 40 rows
 * on experts 0-3 (m64n160, n64, n128, n64), or 128, 160 and 10 on experts 0-2 (n128, n160, n64) */
static int g_edges;

static uint64_t g_rng;

/* Expert bytes of format f: Q8_0 from random values; Q4_0 and the K-quants
 * random codes with small positive f16 scales (test_blocks.h, as tests/core/test_experts.c). */
static void fill_weight(memra_format f, uint8_t *out, size_t bytes)
{
    if (f == MEMRA_FORMAT_E4M3) { /* any code but NaN (0x7F / 0xFF) and the zeros */
        for (size_t i = 0; i < bytes; i++) {
            uint8_t c;
            do c = (uint8_t)test_rand_u64(&g_rng);
            while ((c & 0x7F) == 0x7F || (c & 0x7F) == 0);
            out[i] = c;
        }
        return;
    }
    if (f == MEMRA_FORMAT_F16 || f == MEMRA_FORMAT_BF16) { /* values in [-0.5, 0.5], never all zero */
        for (size_t i = 0; i < bytes / 2; i++) {
            const float v = test_rand_f32(&g_rng) * 0.5f;
            const uint16_t h = f == MEMRA_FORMAT_F16 ? memra_f16_from_f32(v) : memra_bf16_from_f32(v);
            out[2 * i] = (uint8_t)h, out[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return;
    }
    if (f == MEMRA_FORMAT_Q8_0) {
        for (size_t b = 0; b < bytes / MEMRA_Q8_0_BYTES; b++) {
            float v[32];
            for (int i = 0; i < 32; i++) v[i] = test_rand_f32(&g_rng) * 0.5f;
            memra_q8_0_encode(v, out + b * MEMRA_Q8_0_BYTES);
        }
        return;
    }
    test_fill_quant_blocks(&g_rng, f, out, bytes);
}

/* variant 0: uneven (expert 0 none, 1 one row, 2 most) or, with skew, half the
 * rows to expert 5 and the rest uniform; variant 1: uniform. Two rows skipped.
 * With 2 experts (tall, tall_q4_k) variant 0 sends rows 0-169 to expert 1 (169 routed:
 * a 160-row tile, then a 32-row remainder tile of 9) and the rest to expert 0 (129: one
 * 160-row tile whose first warp row's last m16 tile holds one row, the second's fifth
 * skipped). With 4 (wg4, on the forced 128-row table): expert 1 rows 0-199 (199), 3 rows 200-259 (60),
 * 0 rows 260-269 (10), 2 rows 270-298 (29). With 3 (wg_rem3, tall3, tall3_q4_k; 300 rows over 3 experts pick
 * the 128-row table): expert 1 rows 0-160 (160 routed, row 7 skipped: a full tile and a full 32-row remainder, or
 * one full tall tile), 0 rows 161-271 (111: one tile), 2 rows 272-298 (27: a remainder tile alone, or a tall
 * tile whose second warp row has nothing). */
static void routing(int32_t *ids, int variant, int skew)
{
    const int ne = g_ne;
    for (int r = 0; r < ROWS; r++)
        ids[r] = variant    ? (int32_t)(test_rand_u64(&g_rng) % ne)
                 : ne == 4 ? (r < 200 ? 1 : r < 260 ? 3 : r < 270 ? 0 : 2)
                 : ne == 3 ? (r < 161 ? 1 : r < 272 ? 0 : 2)
                 : ne < 6  ? (r < 170)
                           : 2;
    if (!variant && skew) {
        CHECK(ne >= 6);
        for (int r = 0; r < ROWS; r++) ids[r] = r % 2 ? 5 : (int32_t)(test_rand_u64(&g_rng) % ne);
    } else if (!variant && ne >= 6) {
        ids[3] = 1;
        for (int r = 0; r < 60; r++) ids[10 + 4 * r] = 3 + r % (ne - 3);
    }
    if (!variant && g_edges)
        for (int r = 0; r < ROWS; r++)
            ids[r] = g_edges == 1 ? (r < 130 ? 0 : r < 194 ? 1 : r < 259 ? 2 : 3) : (r < 129 ? 0 : r < 289 ? 1 : 2);
    ids[7] = -1, ids[ROWS - 1] = ne; /* skipped */
    if (variant) ids[0] = 0;
    if (!variant && g_edges) {
        int cnt[E] = {0};
        for (int r = 0; r < ROWS; r++)
            if (ids[r] >= 0 && ids[r] < ne) cnt[ids[r]]++;
        CHECK(g_edges == 1 ? cnt[0] == 129 && cnt[1] == 64 && cnt[2] == 65 && cnt[3] == 40
                           : cnt[0] == 128 && cnt[1] == 160 && cnt[2] == 10);
    } else if (!variant && !skew) {
        int cnt[E] = {0};
        for (int r = 0; r < ROWS; r++)
            if (ids[r] >= 0 && ids[r] < ne) cnt[ids[r]]++;
        CHECK(ne == 4  ? cnt[1] == 199 && cnt[3] == 60 && cnt[0] == 10 && cnt[2] == 29
              : ne == 3 ? cnt[1] == 160 && cnt[0] == 111 && cnt[2] == 27
              : ne < 6 ? cnt[1] == 169 && cnt[0] == ROWS - 171
                       : cnt[0] == 0 && cnt[1] == 1 && cnt[2] > ROWS / 2);
    }
}

/* MEMRA_MMQ_XE_TALL (or, in the wg cases, MEMRA_MMQ_XE_WG) refusals logged (those cases must not pass on
 * cc 9.x by comparing the records tiles with the dense lane) */
static test_log_count g_tall_log = {"MEMRA_MMQ_XE_TALL", 0, NULL, 0};

/* Compare y (GPU) with ref (host) over the routed rows; skipped rows must be SENT. */
static int judge_rows(const char *what, const float *y, const float *ref, const int32_t *ids, int k, double band)
{
    size_t bad = 0;
    double worst = 0;
    for (int r = 0; r < ROWS; r++) {
        const int skip = ids[r] < 0 || ids[r] >= g_ne;
        double amax = 0;
        for (int j = 0; j < N; j++) amax = fmax(amax, fabs((double)ref[r * N + j]));
        const double mass = sqrt((double)k) * amax + 1e-30;
        for (int j = 0; j < N; j++) {
            const float g = y[r * N + j];
            if (skip) {
                if (g != SENT && bad++ < 10) fprintf(stderr, "  %s: skipped row %d col %d written: %g\n", what, r, j, (double)g);
                continue;
            }
            const double e = fabs((double)g - (double)ref[r * N + j]) / mass;
            if (!(e <= worst)) worst = e;
            if (!(e <= 2 * band) && bad++ < 10)
                fprintf(stderr, "  %s: row %d (expert %d) col %d: gpu %.9g host %.9g (e %.3g)\n", what, r, ids[r], j,
                        (double)g, (double)ref[r * N + j], e);
        }
    }
    printf("%s: max e %.3g (band %.3g), %zu bad\n", what, worst, 2 * band, bad);
    return bad == 0;
}

/* Each expert's routed rows, gathered in row order, through the dense GPU lane
 * of that expert's own weight (we[e]); its rows of y must match bit for bit. */
static int dense_same(const char *what, memra_device *dev, memra_weight *const *we, const float *x, int k,
                      const float *y, const int32_t *ids)
{
    float *xg = malloc((size_t)ROWS * k * sizeof(float)), *yg = malloc((size_t)ROWS * N * sizeof(float));
    int *where = malloc(ROWS * sizeof(int));
    CHECK(xg && yg && where);
    memra_buffer *bx, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * k * sizeof(float), &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * N * sizeof(float), &by));
    size_t diff = 0;
    int experts = 0;
    for (int e = 0; e < g_ne; e++) {
        int c = 0;
        for (int r = 0; r < ROWS; r++)
            if (ids[r] == e) memcpy(xg + (size_t)c * k, x + (size_t)r * k, (size_t)k * sizeof(float)), where[c++] = r;
        if (c == 0) continue;
        experts++;
        CHECK_OK(memra_buffer_write(bx, 0, xg, (size_t)c * k * sizeof(float)));
        CHECK_OK(memra_matmul(dev, we[e], memra_buffer_ptr(bx), c, memra_buffer_ptr(by), NULL));
        CHECK_OK(memra_buffer_read(by, 0, yg, (size_t)c * N * sizeof(float)));
        for (int i = 0; i < c; i++)
            for (int j = 0; j < N; j++)
                if (memcmp(&yg[(size_t)i * N + j], &y[(size_t)where[i] * N + j], sizeof(float)) != 0 && diff++ < 10)
                    fprintf(stderr, "  %s: row %d (expert %d) col %d: grouped %.9g dense %.9g\n", what, where[i], e, j,
                            (double)y[(size_t)where[i] * N + j], (double)yg[(size_t)i * N + j]);
    }
    printf("%s: against the dense GPU lane of each of %d experts: %zu elements differ\n", what, experts, diff);
    memra_buffer_destroy(bx), memra_buffer_destroy(by);
    free(xg), free(yg), free(where);
    return diff == 0;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "run";
    const xcase *xc = NULL;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        if (strcmp(k_cases[i].name, name) == 0) xc = &k_cases[i];
    if (xc == NULL) {
        fprintf(stderr, "unknown case %s\n", name);
        return 2;
    }
    g_rng = test_seed();
    g_ne = xc->ne ? xc->ne : E;
    g_edges = strcmp(xc->name, "w16_fit_edge") == 0 ? 1 : strcmp(xc->name, "w16_fit_edge2") == 0 ? 2 : 0;
    /* the _fit cases: the module's line that the twins loaded (MEMRA_LOG=info), checked after the calls on cc 9.0 */
    const int wfit = strncmp(xc->name, "w16_fit", 7) == 0;
    g_tall_log.seen = wfit ? "MEMRA_W16_XE_FIT=1: the 160-token grouped tile" : NULL;
    g_tall_log.n_seen = 0;
    const int tall = strncmp(xc->name, "tall", 4) == 0; /* MEMRA_MMQ_XE_TALL=1: the 160 x 96 tiles (cc 9.0) */
    const int wgc = strncmp(xc->name, "wg", 2) == 0;    /* MEMRA_MMQ_XE_WG=1: the seeded warpgroup tile (cc 9.x) */
    /* wg_pf: the prefetch's refusals and the warpgroup tile's own fall-backs (MEMRA_MMQ_XE_PF / _WG) */
    const int fhalf = strcmp(xc->name, "fp8blk_half") == 0; /* MEMRA_FP8BLK_XE_HALF=1 (cc 9.0) */
    const int fqu = strcmp(xc->name, "fp8blk_qu8") == 0;    /* MEMRA_FP8BLK_XE_QU=8 (cc 9.0) */
    if (fhalf) g_tall_log.watch = "MEMRA_FP8BLK_XE_HALF";
    if (fqu) g_tall_log.watch = "MEMRA_FP8BLK_XE_QU";
    const int wqs = strncmp(xc->name, "wg_qs", 5) == 0; /* MEMRA_MMQ_XE_QS=1: the quick-start twin */
    if (wgc) g_tall_log.watch = strcmp(xc->name, "wg_pf") == 0 || wqs ? "MEMRA_MMQ_XE_" : "MEMRA_MMQ_XE_WG";
    char bm[32];
    snprintf(bm, sizeof bm, "MEMRA_MMQ_XE_BM=%s", xc->bm ? xc->bm : "");
    const int fp8 = xc->format == MEMRA_FORMAT_E4M3;
    /* split: the grouped tiles and the dense lane on the same k slices, so their sums agree bit
     * for bit (the same slice bounds, the same slice-order sum) */
    char dsplit[40], xsplit[40];
    snprintf(dsplit, sizeof dsplit, "MEMRA_MMQ_SPLIT=%d", xc->split ? xc->split : 1);
    snprintf(xsplit, sizeof xsplit, "MEMRA_MMQ_XE_SPLIT=%d", xc->split);
    const int fsplit = fp8 && xc->split > 0; /* fp8blk_split: MEMRA_FP8BLK_XE_SPLIT, not the floor's */
    if (fsplit) snprintf(xsplit, sizeof xsplit, "MEMRA_FP8BLK_XE_SPLIT=%d", xc->split);
    const int one = strncmp(xc->name, "fp8blk_one", 10) == 0; /* the one-table tile-major kernel */
    const int pt = strncmp(xc->name, "fp8pt", 5) == 0;         /* per-tensor e4m3 experts */
    const int h16 = xc->format == MEMRA_FORMAT_F16 || xc->format == MEMRA_FORMAT_BF16; /* the 16-bit tile */
    const int w16 = strncmp(xc->name, "w16", 3) == 0; /* the grouped w16 tile (MEMRA_W16=auto) */
    char w16split[40];
    snprintf(w16split, sizeof w16split, "MEMRA_W16_SPLIT=%d", xc->split ? xc->split : 1);
    if (w16) snprintf(xsplit, sizeof xsplit, "MEMRA_MMQ_XE_SPLIT=0");
    char w16tile[40]; /* the grouped w16 tile's token width (the case's bm) */
    snprintf(w16tile, sizeof w16tile, "MEMRA_W16_TILE=%s", xc->bm ? xc->bm : "auto");
    /* budget: the default f16 budget (quantised experts ride the floor on a GPU all the same) */
    if (fsplit) snprintf(dsplit, sizeof dsplit, "MEMRA_MMQ_SPLIT=1");
    const char *settings[] = {strcmp(xc->name, "budget") == 0 ? "MEMRA_LOG=warn" : "MEMRA_F16_BUDGET_MB=0", dsplit,
                              xc->split ? xsplit : "MEMRA_MMQ_XE_SPLIT=0",
                              fp8 ? "MEMRA_PREFER=gemm_fp8_blk=fp8blk" : xc->bm && !w16 ? bm : NULL,
                              one ? "MEMRA_FP8BLK_XE_ONE=all" : pt ? "MEMRA_FP8BLK_XE_PT=1" : tall ? "MEMRA_MMQ_XE_TALL=1" : NULL,
                              wgc ? "MEMRA_MMQ_XE_WG=1" : NULL,
                              strncmp(xc->name, "wg_rem", 6) == 0 ? "MEMRA_MMQ_XE_WG_REM=1" : NULL,
                              /* the remainders' tile (_wgsr) is the unpinned tile's twin: SEED=1 */
                              strncmp(xc->name, "wg_rem", 6) == 0 ? "MEMRA_MMQ_WG_SEED=1" : NULL,
                              w16 ? "MEMRA_W16=auto" : NULL, w16 ? w16split : NULL, w16 && xc->bm ? w16tile : NULL,
                              strcmp(xc->name, "w16_raster") == 0 ? "MEMRA_W16_XE_RASTER=3" : NULL,
                              strcmp(xc->name, "w16_n256_skew") == 0 ? "MEMRA_W16_XE_RASTER=8" : NULL,
                              strcmp(xc->name, "w16_n160_raster") == 0 ? "MEMRA_W16_XE_RASTER=2" : NULL,
                              /* the 160-token tile whose wgmmas are 64, 128 or 160 tokens wide by the tile's rows */
                              wfit ? "MEMRA_W16_XE_FIT=1" : NULL, wfit ? "MEMRA_LOG=info" : NULL,
                              /* the weight's L2 prefetch: _wgs's twin (SEED=1), on the default raster */
                              strcmp(xc->name, "wg_pf") == 0 ? "MEMRA_MMQ_XE_PF=1" : NULL,
                              strcmp(xc->name, "wg_pf") == 0 ? "MEMRA_MMQ_WG_SEED=1" : NULL,
                              /* the quick start: _wgs's twin (SEED=1) */
                              wqs ? "MEMRA_MMQ_XE_QS=1" : NULL, wqs ? "MEMRA_MMQ_WG_SEED=1" : NULL,
                              strcmp(xc->name, "wg_raster") == 0   ? "MEMRA_MMQ_XE_RASTER=1"
                              : strcmp(xc->name, "wg_plain") == 0 ? "MEMRA_MMQ_XE_RASTER=0"
                                                                  : NULL,
                              /* the persistent tiles' walk in groups of 3 table tiles (skewed rows) */
                              strcmp(xc->name, "fp8blk_raster") == 0 ? "MEMRA_FP8BLK_XE_RASTER=3" : NULL,
                              /* on 5 CTAs: each walks several tiles (the ring carried from tile to tile) */
                              strcmp(xc->name, "fp8blk_raster") == 0 ? "MEMRA_FP8BLK_XE_CTAS=5" : NULL,
                              /* the 256-wide persistent tile (N128=0: the width rule would take 128 here) as
                               * _gsp_half, on 5 CTAs that walk half and whole tiles in turn */
                              fhalf ? "MEMRA_FP8BLK_XE_HALF=1" : NULL, fhalf ? "MEMRA_FP8BLK_XE_N128=0" : NULL,
                              fhalf ? "MEMRA_FP8BLK_XE_CTAS=5" : NULL,
                              /* whatever the environment says: the persistent tile, without hints, no tall tile */
                              fhalf ? "MEMRA_FP8BLK_XE_PERSIST=1" : NULL, fhalf ? "MEMRA_FP8BLK_XE_L2=0" : NULL,
                              fhalf ? "MEMRA_FP8BLK_XE_TALL=0" : NULL,
                              /* the quantiser in expert order with 8 items a warp (its codes the 4-item one's) */
                              strcmp(xc->name, "fp8blk_qu8") == 0 ? "MEMRA_FP8BLK_XE_QU=8" : NULL, NULL};
    if (h16) settings[3] = "MEMRA_MMQ_XE_F16=1";
    /* the list ends at its first NULL: the slots left unset above are dropped, so that none hides the ones after
     * it (before, a case without MEMRA_MMQ_XE_BM ended the list there: the wg and tall cases ran without their
     * knob, on the records tiles, wherever the environment did not set it) */
    size_t ns = 0;
    for (size_t i = 0; i + 1 < sizeof settings / sizeof settings[0]; i++)
        if (settings[i] != NULL) settings[ns++] = settings[i];
    settings[ns] = NULL;
    memra_options o = {.struct_size = sizeof o, .settings = settings, .log_fn = test_log_sink, .log_user = &g_tall_log};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    memra_device *dev = NULL, *host = memra_device_host(rt);
    for (int i = 0; i < memra_device_count(rt) && dev == NULL; i++)
        if (memra_device_caps_get(memra_device_get(rt, i))->arch != MEMRA_ARCH_HOST) dev = memra_device_get(rt, i);
    if (dev == NULL) {
        printf("driver: %s\n", memra_driver_status(rt));
        memra_close(rt);
        TEST_SKIP("no CUDA device");
    }
    printf("device: %s (%s), case %s\n", memra_device_caps_get(dev)->name, memra_device_caps_get(dev)->profile, name);
    const int tall_cc9 = ((tall || wgc) && memra_device_caps_get(dev)->cc / 10 == 9) ||
                         ((fhalf || fqu) && memra_device_caps_get(dev)->cc == 90); /* checked after the calls */
    if (fp8 && memra_device_caps_get(dev)->cc != 90) {
        memra_close(rt);
        TEST_SKIP("the grouped block-128 FP8 lane is sm_90a's (cc 9.0)");
    }
    if (w16 && memra_device_caps_get(dev)->cc != 90) {
        memra_close(rt);
        TEST_SKIP("the w16 tile is sm_90a's (cc 9.0)");
    }
    /* w16: the host reference on the W16 operand too (the f16 mirror's numbers, not the floor's); the other
     * cases are the floor's and its grouped tiles': no W16 operand on the GPU, whatever MEMRA_W16 says */
    if (w16) CHECK_OK(memra_device_w16_set(host, 1));
    else CHECK_OK(memra_device_w16_set(dev, 0));
    const memra_format f = xc->format;
    const int K = strcmp(xc->name, "wg_pf") == 0                               ? 1312 /* 11 steps: the prefetch's both branches */
                  : w16 && (f == MEMRA_FORMAT_Q8_0 || f == MEMRA_FORMAT_Q4_0) ? 576
                  : f == MEMRA_FORMAT_Q8_0 || f == MEMRA_FORMAT_Q4_0 || fp8 ? 544
                                                                           : 768;
    const size_t each = (size_t)N * memra_format_row_bytes(f, K);
    /* block-128 FP8: a grid per expert, [ceil(N / 128) x ceil(K / 128)] (2 x 5: a partial last block each way) */
    const size_t gc = fp8 && !pt ? (size_t)(memra_fp8_grid_rows(N) * memra_fp8_grid_cols(K)) : 0;
    uint8_t *wb = malloc(each * g_ne);
    float *grid = gc ? malloc(gc * g_ne * sizeof(float)) : NULL, scales[E];
    CHECK(wb != NULL && (!gc || grid != NULL));
    fill_weight(f, wb, each * g_ne);
    for (size_t i = 0; i < gc * g_ne; i++) grid[i] = 0.001f + 0.01f * fabsf(test_rand_f32(&g_rng));
    for (int e = 0; e < g_ne; e++) scales[e] = 0.001f + 0.01f * fabsf(test_rand_f32(&g_rng)); /* per-tensor */
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = f, .n_experts = g_ne, .out_f = N,
                             .in_f = K, .data = wb, .size = each * g_ne, .scales = pt ? scales : NULL, .grid = grid,
                             .grid_count = gc * g_ne, .name = "gpu experts"};
    memra_weight *w, *we[E];
    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    for (int e = 0; e < g_ne; e++) {
        memra_weight_desc wd = {.struct_size = sizeof wd, .format = f, .out_f = N, .in_f = K,
                                .data = wb + (size_t)e * each, .size = each, .scale = pt ? scales[e] : 0.0f,
                                .grid = gc ? grid + (size_t)e * gc : NULL,
                                .grid_count = gc, .name = "dense expert"};
        CHECK_OK(memra_weight_create(rt, &wd, &we[e]));
    }
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(w, dev, &p));
    printf("plan on the GPU: %s: %s\n", p.lane, p.why);
    CHECK_STR_EQ(p.lane, xc->lane);
    if (strcmp(xc->name, "budget") == 0) {
        /* the experts prepared under the default budget reserve no mirror; the references (the
         * host device's call and the dense experts on the GPU) then get budget 0, so that they
         * take the floor too rather than their own f16 mirrors (run t3: against mirrors the
         * floor's band cannot hold) */
        CHECK_OK(memra_weight_prepare(w, dev));
        printf("after prepare under the default budget: %llu mirror bytes used on the GPU\n",
               (unsigned long long)memra_device_f16_used(dev));
        CHECK(memra_device_f16_used(dev) == 0);
        CHECK_OK(memra_device_f16_budget_set(dev, 0));
        CHECK_OK(memra_device_f16_budget_set(host, 0));
    }

    float *x = malloc((size_t)ROWS * K * sizeof(float)), *ref = malloc((size_t)ROWS * N * sizeof(float));
    float *y = malloc((size_t)ROWS * N * sizeof(float));
    int32_t ids[2][ROWS];
    routing(ids[0], 0, xc->skew);
    routing(ids[1], 1, 0);
    for (int i = 0; i < ROWS * K; i++) x[i] = test_rand_f32(&g_rng) * 2.0f;
    memra_buffer *bx, *bi, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * K * sizeof(float), &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * sizeof(int32_t), &bi));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * N * sizeof(float), &by));
    CHECK_OK(memra_buffer_write(bx, 0, x, (size_t)ROWS * K * sizeof(float)));
    int ok = 1;
    float *eager[2] = {malloc((size_t)ROWS * N * sizeof(float)), malloc((size_t)ROWS * N * sizeof(float))};
    for (int v = 0; v < 2; v++) {
        const char *what = v ? "eager, uniform routing" : xc->skew ? "eager, skewed routing" : "eager, uneven routing";
        for (int i = 0; i < ROWS * N; i++) ref[i] = y[i] = SENT;
        CHECK_OK(memra_matmul_experts(host, w, (memra_dptr)(uintptr_t)x, ROWS, (memra_dptr)(uintptr_t)ids[v],
                                      (memra_dptr)(uintptr_t)ref, NULL));
        CHECK_OK(memra_buffer_write(bi, 0, ids[v], sizeof ids[v]));
        CHECK_OK(memra_buffer_write(by, 0, y, (size_t)ROWS * N * sizeof(float)));
        memra_ledger_reset(rt);
        CHECK_OK(memra_matmul_experts(dev, w, memra_buffer_ptr(bx), ROWS, memra_buffer_ptr(bi), memra_buffer_ptr(by),
                                      NULL));
        CHECK_OK(memra_buffer_read(by, 0, eager[v], (size_t)ROWS * N * sizeof(float)));
        const char *names[4];
        const int nl = memra_routing_get(dev, MEMRA_OP_gemm_experts, names, 4);
        CHECK(nl > 0);
        const char *served = xc->module ? xc->module : names[0];
        printf("gemm_experts served by %s: %llu hit(s)\n", served,
               (unsigned long long)memra_ledger_hits(dev, MEMRA_OP_gemm_experts, served));
        CHECK(memra_ledger_hits(dev, MEMRA_OP_gemm_experts, served) == 1);
        if (test_inject_fault()) eager[v][5 * N] += 1.0f;
        ok &= judge_rows(what, eager[v], ref, ids[v], K,
                         fp8 ? JUDGE_BAND_FP8 : xc->format == MEMRA_FORMAT_F16 || w16 ? JUDGE_BAND_F16
                         : xc->format == MEMRA_FORMAT_BF16                    ? JUDGE_BAND_BF16
                                                                              : JUDGE_BAND_Q8_0);
        if (!pt && !h16 && !fsplit) ok &= dense_same(what, dev, we, x, K, eager[v], ids[v]);
    }
    if (xc->graph) {
        cu_streams_open();
        CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(dev)->cu_context));
        CUstream s;
        CU_CHECK(cu.cuStreamCreate(&s, 1 /* non-blocking */));
        /* the reservation runs the call at every m up to ROWS with every row on one expert (core/weights/weight.c),
         * so its small m pick short tables and may log the table-pick warning: not this case's calls */
        const int tw = g_tall_log.n;
        CHECK_OK(memra_stream_reserve(dev, s, &w, 1, ROWS));
        g_tall_log.n = tw;
        CU_CHECK(cu.cuStreamBeginCapture_v2(s, 1 /* thread-local */));
        const memra_status cs = memra_matmul_experts(dev, w, memra_buffer_ptr(bx), ROWS, memra_buffer_ptr(bi),
                                                     memra_buffer_ptr(by), s);
        CUgraph g = NULL;
        CU_CHECK(cu.cuStreamEndCapture(s, &g));
        CHECK_OK(cs);
        CUgraphExec ex;
        CU_CHECK(cu.cuGraphInstantiateWithFlags(&ex, g, 0));
        for (int v = 0; v < 2; v++) { /* the routing changes between replays, in the same buffer */
            for (int i = 0; i < ROWS * N; i++) y[i] = SENT;
            CHECK_OK(memra_buffer_write(by, 0, y, (size_t)ROWS * N * sizeof(float)));
            CHECK_OK(memra_buffer_write(bi, 0, ids[v], sizeof ids[v]));
            CU_CHECK(cu.cuGraphLaunch(ex, s));
            CU_CHECK(cu.cuStreamSynchronize(s));
            CHECK_OK(memra_buffer_read(by, 0, y, (size_t)ROWS * N * sizeof(float)));
            const int same = memcmp(y, eager[v], (size_t)ROWS * N * sizeof(float)) == 0;
            printf("graph replay %d (%s routing): %s the eager call\n", v, v ? "uniform" : "uneven",
                   same ? "bit for bit" : "DIFFERS from");
            ok &= same;
        }
        CU_CHECK(cu.cuGraphExecDestroy(ex));
        CU_CHECK(cu.cuGraphDestroy(g));
        CU_CHECK(cu.cuStreamDestroy_v2(s));
    }
    memra_buffer_destroy(bx), memra_buffer_destroy(bi), memra_buffer_destroy(by);
    for (int e = 0; e < g_ne; e++) memra_weight_destroy(we[e]);
    memra_weight_destroy(w);
    free(wb), free(grid), free(x), free(ref), free(y), free(eager[0]), free(eager[1]);
    memra_close(rt);
    /* the tall cases on cc 9.x: the module loaded its tall tiles (no refusal logged) */
    if (tall_cc9 && g_tall_log.n != 0) {
        printf("%s was refused on this cc 9.x GPU: its tiles did not run  FAIL\n",
               fhalf                          ? "MEMRA_FP8BLK_XE_HALF=1"
               : fqu                            ? "MEMRA_FP8BLK_XE_QU=8"
               : strcmp(xc->name, "wg_pf") == 0 ? "MEMRA_MMQ_XE_PF=1"
               : wqs                            ? "MEMRA_MMQ_XE_QS=1"
               : wgc                            ? "MEMRA_MMQ_XE_WG=1"
                                                : "MEMRA_MMQ_XE_TALL=1");
        ok = 0;
    }
    /* the _fit cases on cc 9.0 (past the skip above): the twins loaded, else the plain tile gave these numbers */
    if (wfit && g_tall_log.n_seen == 0) {
        printf("MEMRA_W16_XE_FIT=1: the module did not log the twins' load (memra_k_w16_xe_*_n160f)  FAIL\n");
        ok = 0;
    }
    printf("%s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
