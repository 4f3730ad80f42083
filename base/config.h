/* The configuration layer (private): every MEMRA_* knob, parsed once at
 * memra_open from memra_options and the environment into one structure.
 * See base/config.c for the table of knobs; docs/ARCHITECTURE.md for the rules. */
#ifndef MEMRA_BASE_CONFIG_H
#define MEMRA_BASE_CONFIG_H

#include <stdint.h>

#include "memra/memra.h"

/* X(id, env name, owner, kind, allowed, default text, help).
 * kind: BOOL ("0"/"1"), UINT (allowed = "min..max", or "min..max|auto" where the word auto is a value too), ENUM (allowed = "a|b|c"),
 * STR (free text), TILE (BMxBN or BMxBNxWMxWN), MB (a size in MB, decimals),
 * ARCH (one of allowed, or a per-device list "ORDINAL:profile,..." without host). */
#define MEMRA__KNOB_LIST(X)                                                                                         \
    X(LOG, "MEMRA_LOG", "core", ENUM, "error|warn|info|debug", "warn", "log level (messages up to it are logged)") \
    X(ARCH, "MEMRA_ARCH", "core", ARCH, "sm90|sm120|cuda|host", "",                                               \
      "profile forced on every CUDA device, or per device: 0:sm90,1:cuda")                                          \
    X(MODULE_PATH, "MEMRA_MODULE_PATH", "core", STR, "", "", "colon list of module folders searched first")        \
    X(PREFER, "MEMRA_PREFER", "core", STR, "", "", "routing preferences op=module,...")                          \
    X(DISABLE, "MEMRA_DISABLE", "core", STR, "", "", "routing disables op|module|op=module,...")                 \
    X(ALLOW_UNSAFE_MODULES, "MEMRA_ALLOW_UNSAFE_MODULES", "core", BOOL, "", "0",                                  \
      "1: load modules from folders others can write")                                                            \
    X(MODULE_TRIAL, "MEMRA_MODULE_TRIAL", "core", BOOL, "", "1", "0: no contained trial load (memra-trial) first")       \
    X(TRIAL_TIMEOUT_MS, "MEMRA_TRIAL_TIMEOUT_MS", "core", UINT, "1..600000", "30000",                            \
      "a trial's init and self-check (in memra-trial) past this many ms refuse the module")                        \
    X(ADMISSION, "MEMRA_ADMISSION", "core", ENUM, "all|hot|off", "all",                                          \
      "module self-check against the host before publishing: every load, hot loads only, off")                   \
    X(TUNE_FILE, "MEMRA_TUNE_FILE", "core", STR, "", "<cache root>/tune/tuning.memra",                            \
      "tuning file read at open (absolute path)")                                                                \
    X(TUNE, "MEMRA_TUNE", "core", BOOL, "", "1", "0: routing ignores the tuning file")                                \
    X(SHADOW_RATE, "MEMRA_SHADOW_RATE", "core", UINT, "1..1000000", "16", "a shadow samples one call in N")      \
    X(SHADOW_AGREE, "MEMRA_SHADOW_AGREE", "core", UINT, "1..1000000", "20", "agreeing samples before promotion")  \
    X(SHADOW_MARGIN_PCT, "MEMRA_SHADOW_MARGIN_PCT", "core", UINT, "0..1000", "5",                                \
      "the shadow must be this many percent faster to be promoted")                                              \
    X(SHADOW_AUTO_PROMOTE, "MEMRA_SHADOW_AUTO_PROMOTE", "core", BOOL, "", "1", "0: promotion only by API call")   \
    X(ADMISSION_TIMEOUT_MS, "MEMRA_ADMISSION_TIMEOUT_MS", "core", UINT, "1..600000", "2000",                     \
      "a module's self-check past this many ms is quarantined")                                                  \
    X(F16_BUDGET_MB, "MEMRA_F16_BUDGET_MB", "core", UINT, "0..1099511627776", "(profile)",                        \
      "MB of f16 mirrors per device; also memra_device_f16_budget_set")                                           \
    X(Q8_0_RECORDS, "MEMRA_Q8_0_RECORDS", "core", BOOL, "", "1", "0: the MMQ floor keeps Q8_0 blocks (no records)") \
    X(FLOOR_F16_M, "MEMRA_FLOOR_F16_M", "core", UINT, "0..2147483647|auto", "0",                           \
      "N >= 1: calls of at least N tokens on a weight the floor holds as records (Q4_K / Q5_K / Q6_K K records, Q8_0 / Q4_0 Q8_0 records; no mirror) run dequant_kr_f16 into scratch + gemm_f16 in place of the floor, the f16 mirror's results bit for bit; without memory for the f16 copy the floor serves; auto: the device's profile's measured crossover (sm90: 256 on K records, 512 on Q8_0 records, where an H100 ran the pair in 0.82x and 0.88x the floor's time; elsewhere never); 0 (the default): never, the dispatcher's order (the floor before a per-call f16 copy); memra_device_floor_f16_m_set overrides it per device") \
    X(W16, "MEMRA_W16", "core", ENUM, "auto|0|1", "0",                                                            \
      "gemm_w16 (the w16 module's fused-dequant f16 tile, cc 9.0): 0 (the default: DESIGN.md's dispatcher puts a quantised weight without a mirror on the integer floor): off, its kernels not loaded; auto (opt-in): a Q8_0 / Q4_0 / Q4_K / Q5_K / Q6_K weight without a mirror on a GPU whose routing has gemm_w16 gets the W16 operand (the GGUF's codes and scales re-laid out, 1.00-1.03x its bytes) in place of the floor's records and runs gemm_w16, the f16 mirror's numbers (an H100 ran it 1.4-2.2x the floor's speed at m = 512 and 1.6-2.8x at 4096, geomeans per format over the 27b sheet, run aa); expert weights likewise, whatever their expert count (an H100 ran the grouped tile in 0.62-0.74x the grouped floor's time with 8 experts at m = 512 and 0.57x at 4096, 0.99-1.03x and 0.81-0.88x with 128); 1: also on the host device (its reference gemm_w16)") \
    X(W16_TILE, "MEMRA_W16_TILE", "gpu modules", ENUM, "auto|64|128|160|256", "auto",                             \
      "gemm_w16's token tile: 256 (two m64n256 warpgroups a CTA), 128 (m64n128: twice the CTAs), 160 (m64n160: an expert of 129-160 rows in one CTA; the grouped call only, dense calls take auto), 64 (m64n64, two CTAs an SM: the grouped call only, dense calls take auto), auto: dense calls by MEMRA_W16_SPLIT's plan (waves: the wave model's tile; fill: 128 where m <= 2048 and the 256-token grid's last wave is under 80% full), grouped 64 under 64 rows a mean expert, 256 from 384, between by the wave model (160 where one 160-token CTA holds an expert a tenth over the mean: a mean of about 117-145 rows; 256 where the 256-token CTAs an expert are a tenth under the 128-token ones: a mean of about 146-232 or 349-383 rows, for the K-quants 146-383), else 128") \
    X(W16_SPLIT, "MEMRA_W16_SPLIT", "gpu modules", UINT, "1..16|auto|waves|fill", "auto",                      \
      "gemm_w16's split-k slices: N; fill: slices until every SM has a CTA, each slice at least 8 k steps of 64, at most 16 (the grouped call's auto); auto = waves (the default): a dense call's token tile (128 or 256, unless MEMRA_W16_TILE names one) and slices by a model of its waves (whole waves of one-CTA-an-SM tiles, each format's tile times from an H100's run, the slices' partial sums), taken where it is at least a tenth under fill's plan in the same model (an H100 ran the 27b sheet at m = 512 in 0.52-1.01x fill's time, geomean 0.83-0.85 on Q8_0 / Q4_0 and 0.70-0.71 on the K-quants)") \
    X(W16_XE_RASTER, "MEMRA_W16_XE_RASTER", "gpu modules", UINT, "0..64|auto", "auto",                         \
      "gemm_experts on lane gemm_w16: N >= 1 walks the grouped tile's grid in groups of N token tiles (each group's row tiles outermost), so that a wave holds a few experts' tokens and their weight rows instead of every token tile of the call; 0: the grid (token tiles, row tiles); auto (the default): 8 where the rows fill 16 token tiles or more (an H100 ran the Mixtral-like Q8_0 rows at m = 4096 in 1.78 ms a call against 1.95-2.89 on the grid, the Qwen3-like ones at 4096 in 0.54-0.57 against 0.71-0.76), else 0 (Mixtral-like down rows at m = 512, 8 token tiles: 0.45 ms against 0.36)") \
    X(W16_XE_FIT, "MEMRA_W16_XE_FIT", "gpu modules", BOOL, "", "0",                                              \
      "1: gemm_experts on lane gemm_w16, where it takes the 160-token tile: each CTA's wgmmas 64, 128 or 160 tokens wide by its expert's rows in the tile (an expert of 73 rows pays 128 token columns, not 160), the same decoders and outputs (opt-in, untimed)") \
    X(XE_MIRROR, "MEMRA_XE_MIRROR", "core", BOOL, "", "0",                                                        \
      "1: quantised experts on a GPU take f16 mirrors within the budget (run t2: slower than the floor)")         \
    X(HOST_THREADS, "MEMRA_HOST_THREADS", "core", UINT, "1..256", "(CPUs online)", "threads of the host device")   \
    X(STATS, "MEMRA_STATS", "core", BOOL, "", "0", "1: print the dispatch ledger at memra_close")                  \
    X(CUDA_DRIVER, "MEMRA_CUDA_DRIVER", "core", STR, "", "libcuda.so.1", "CUDA driver library to open")            \
    X(CUBLASLT_LIBRARY, "MEMRA_CUBLASLT_LIBRARY", "core", STR, "", "libcublasLt.so.13|12", "cuBLASLt library")     \
    X(NVRTC_LIBRARY, "MEMRA_NVRTC_LIBRARY", "jit", STR, "", "libnvrtc.so.13|12", "NVRTC library")                 \
    X(CACHE_DIR, "MEMRA_CACHE_DIR", "jit", STR, "", "$XDG_CACHE_HOME/memra or ~/.cache/memra", "JIT cache root")   \
    X(JIT_CACHE, "MEMRA_JIT_CACHE", "jit", BOOL, "", "1", "0: no disk cache")                                     \
    X(JIT_CACHE_MAX_MB, "MEMRA_JIT_CACHE_MAX_MB", "jit", MB, "", "(jit default)", "disk cache size cap")          \
    X(FP8_QUANT, "MEMRA_FP8_QUANT", "gpu modules", ENUM, "fused|nocapture|2pass", "fused",                       \
      "gemm_fp8's activation quantiser")                                                                          \
    X(FP8BLK_TILE, "MEMRA_FP8BLK_TILE", "mmq modules", TILE, "", "(module default)",                              \
      "fp8blk_gemm tile BMxBN[xWARPS_MxWARPS_N]")                                                                 \
    X(FP8BLK_JIT, "MEMRA_FP8BLK_JIT", "mmq modules", BOOL, "", "1", "0: embedded fp8blk images only, no JIT")     \
    X(FP8BLK_WGMMA, "MEMRA_FP8BLK_WGMMA", "mmq modules", ENUM, "auto|tma|mbwide|mb|wide|bar|0", "auto",             \
      "fp8blk's sm_90a kernel: TMA warp-specialised (cp.async where no tensor maps), the same, cp.async tile by shape, 128x128, 128x256, CTA barriers, 0: mma.sync") \
    X(FP8BLK_XE_HALF, "MEMRA_FP8BLK_XE_HALF", "mmq modules", BOOL, "", "0",                                    \
      "1 (opt-in; run aa3, H100: loses, 0.96-1.11x the time, geomean 1.03): gemm_experts' persistent 256-wide grouped tile (_gsp, without MEMRA_FP8BLK_XE_L2) as its twin _gsp_half, whose tiles of at most 64 rows (an expert's last rows) run on both consumer warpgroups, a column half each, where _gsp leaves one idle and runs both halves on the other (outputs bit for bit _gsp's)") \
    X(FP8BLK_XE_QU, "MEMRA_FP8BLK_XE_QU", "mmq modules", ENUM, "4|8", "4",                                          \
      "gemm_experts on fp8blk: the activation's quantiser in expert order with N items (a row's 128-column blocks) a warp; 8 (opt-in; run ab, H100, m = 4096: the grouped call 0.99-1.19x the 4-item one's time): memra_k_fp8blk_quant_sorted8, the same codes and scales, each warp's dependent read of the row permutation over twice the bytes (run z2, H100, m = 4096: the 4-item one took 74.5 us where the dense quantiser took 55 for the same bytes)") \
    X(FP8BLK_XE_WIDE, "MEMRA_FP8BLK_XE_WIDE", "mmq modules", BOOL, "", "0",                                      \
      "1: fp8blk's gemm_experts on 128x256 tiles (run s3: no faster)")                                            \
    X(FP8BLK_XE_ONE, "MEMRA_FP8BLK_XE_ONE", "mmq modules", ENUM, "0|1|all", "0",                                 \
      "1: fp8blk's gemm_experts on one tile-major table where experts average 128+ rows (run t2: 5-10% slower); all: always") \
    X(FP8BLK_XE_TMA, "MEMRA_FP8BLK_XE_TMA", "mmq modules", BOOL, "", "1",                                        \
      "0: fp8blk gemm_experts on the cp.async tiles, not the tensor-map tile (run v1: 0.53 -> 0.76 of dense)") \
    X(FP8BLK_XE_N128, "MEMRA_FP8BLK_XE_N128", "mmq modules", ENUM, "auto|0|1", "auto",                           \
      "the tensor-map grouped tile 128 columns wide: auto where the 256-wide grid is under 4 CTAs an SM (run y1), 1 always, 0 never") \
    X(FP8BLK_XE_TMA64, "MEMRA_FP8BLK_XE_TMA64", "mmq modules", BOOL, "", "0",                                    \
      "1: beside the tensor-map grouped tile, the experts' last 1..64 rows on the 64-row tile (run w1: loses)") \
    X(FP8BLK_XE_SPLIT, "MEMRA_FP8BLK_XE_SPLIT", "mmq modules", UINT, "0..16", "0 (no split)",                     \
      "fp8blk gemm_experts: the tensor-map tile's k blocks in N slices, summed after (2..16; run x2: loses)")   \
    X(FP8BLK_XE_PF, "MEMRA_FP8BLK_XE_PF", "mmq modules", ENUM, "0|4|8", "0",                                      \
      "fp8blk gemm_experts: the tensor-map tile prefetches the weight 4 or 8 k blocks ahead into L2 (run x3: loses)") \
    X(FP8BLK_XE_GS, "MEMRA_FP8BLK_XE_GS", "mmq modules", BOOL, "", "1",                                          \
      "0: fp8blk gemm_experts' 256-wide tensor-map tile reads the weight grid's scales itself, not through its stages (run y1: 3% slower)") \
    X(FP8BLK_XE_PIPE, "MEMRA_FP8BLK_XE_PIPE", "mmq modules", BOOL, "", "0",                                      \
      "1: fp8blk gemm_experts on the 128-wide tensor-map tile whose fold overlaps the next block's wgmmas (run y1: loses)") \
    X(FP8BLK_XE_PERSIST, "MEMRA_FP8BLK_XE_PERSIST", "mmq modules", BOOL, "", "1",                                \
      "0: fp8blk gemm_experts on one-tile-a-CTA tensor-map tiles, not persistent ones (runs z1, z6: up to 38% slower)") \
    X(FP8BLK_XE_L2, "MEMRA_FP8BLK_XE_L2", "mmq modules", ENUM, "0|1|2", "0",                                      \
      "fp8blk gemm_experts' persistent tiles with L2 eviction priorities: 1 x rows kept, weight first out; 2 x rows kept (unmeasured)") \
    X(FP8BLK_XE_RASTER, "MEMRA_FP8BLK_XE_RASTER", "mmq modules", UINT, "0..64|auto", "auto",                     \
      "fp8blk gemm_experts' persistent tiles walk their tiles in groups of N table tiles, each group's weight columns outermost, so that the tiles in flight hold a few experts' rows (L2-sized) and read each weight column for the group together, where the plain walk takes every table tile of a column side by side (the w16 lane's grouped tile gained 1.1-1.6x from the same order at m = 4096 in run x2); auto (the default): 8 where the mean expert has 384 rows or more (an H100 ran the Mixtral-like rows at m = 4096 in 1.04-1.23 ms a call against 1.07-1.24 on the plain walk); 0: the plain walk") \
    X(FP8BLK_XE_CTAS, "MEMRA_FP8BLK_XE_CTAS", "mmq modules", UINT, "0..65535", "0",                          \
      "fp8blk gemm_experts' persistent tiles on at most N CTAs (0, the default: one an SM); for tests, so that a small call walks several tiles a CTA") \
    X(FP8BLK_XE_TALL, "MEMRA_FP8BLK_XE_TALL", "mmq modules", BOOL, "", "0",                                      \
      "1: fp8blk gemm_experts on 256-row persistent tiles 128 wide (an expert of up to 256 rows one tile a column; unmeasured)") \
    X(FP8BLK_XE_PT, "MEMRA_FP8BLK_XE_PT", "mmq modules", BOOL, "", "1",                                          \
      "0: fp8blk does not serve gemm_experts on per-tensor e4m3 experts (lane gemm_fp8)")                         \
    X(MMQ_WG_SK, "MEMRA_MMQ_WG_SK", "mmq modules", ENUM, "0|1|auto", "auto",                                      \
      "gemm_q8_0r's seeded tile with a stream-k remainder: auto where a plain grid ends in a sparse last wave (run p10: m = 512, 2.5-10% faster on four 27b rows), 1 every warpgroup call, 0 never") \
    X(MMQ_QUANT_LEAN, "MEMRA_MMQ_QUANT_LEAN", "mmq modules", BOOL, "", "1",                                       \
      "quant_q8_1 on a 2-D grid with no grid-stride loop (memra_k_quant_q8_1l: the same bytes, about a quarter fewer instructions a pass; run r2, H100: 8% faster at m = 512, 4% at 4096, 1.13x its byte bound there); 0: the 1-D grid-stride kernel") \
    X(MMQ_PDL, "MEMRA_MMQ_PDL", "mmq modules", ENUM, "0|1|pack", "1",                                            \
      "0: no programmatic dependent launches; pack: without the one-CTA-an-SM shared memory of one-wave records grids") \
    X(MMQ_BM, "MEMRA_MMQ_BM", "mmq modules", UINT, "0..1024", "0 (chosen per shape)", "MMQ tile rows forced")     \
    X(MMQ_BN, "MEMRA_MMQ_BN", "mmq modules", UINT, "0..1024", "0 (chosen per shape)", "gemm_q8_0r tile cols forced") \
    X(MMQ_SPLIT, "MEMRA_MMQ_SPLIT", "mmq modules", UINT, "0..4096", "0 (chosen per shape)",                       \
      "gemm_q8_0r split-k forced")                                                                                \
    X(MMQ_R3_UNROLL, "MEMRA_MMQ_R3_UNROLL", "mmq modules", BOOL, "", "0",                                        \
      "1: gemm_q8_0r's 64-token tiles with their k32 groups unrolled (12% fewer instructions, 1-8% slower: run w1)") \
    X(MMQ_BULK, "MEMRA_MMQ_BULK", "mmq modules", BOOL, "", "1 (cc 9.0+)",                                        \
      "0: gemm_q8_0r's and the sorted grouped Q8_0 tiles' stages by cp.async, not the bulk copy engine (run y2: 5-14% slower)") \
    X(MMQ_ONE, "MEMRA_MMQ_ONE", "mmq modules", ENUM, "0|q6_k|1", "q6_k",                                       \
      "the floor's dense tiles at one CTA per SM, no spills: q6_k Q6_K only (run c1: 5% faster at m = 4096), 1 every format (Q8_0 / Q4_0 3-4% slower), 0 none") \
    X(MMQ_KR_TC, "MEMRA_MMQ_KR_TC", "mmq modules", ENUM, "0|q4_k|1", "1",                                     \
      "gemm_kr's min term on TF32 MMAs once a step: 1 Q4_K and Q5_K (run d3, on the sum plane: Q5_K 2-4% faster), q4_k Q4_K only, 0 neither") \
    X(MMQ_KR_SUMS, "MEMRA_MMQ_KR_SUMS", "mmq modules", BOOL, "", "1",                                          \
      "0: gemm_kr's Q4_K / Q5_K min term sums the activation's codes by an MMA in the tile, not from the q8_1 records' sum plane") \
    X(MMQ_KR_BULK, "MEMRA_MMQ_KR_BULK", "mmq modules", BOOL, "", "1",                                          \
      "0: gemm_kr's Q4_K / Q5_K sum-plane tiles take their stages by cp.async, not the bulk copy engine (cc 9.x; runs e1 / e2: bulk 3-10% faster)") \
    X(MMQ_KR6_BULK, "MEMRA_MMQ_KR6_BULK", "mmq modules", BOOL, "", "1",                                        \
      "0: gemm_kr's Q6_K one-CTA tiles take their stages by cp.async, not the bulk copy engine (cc 9.x; run f1: bulk 3.7% faster at m = 4096, even at 512)") \
    X(MMQ_WG, "MEMRA_MMQ_WG", "mmq modules", ENUM, "0|1|all|auto", "auto",                                     \
      "gemm_q8_0r on the warpgroup MMA (cc 9.x, tensor maps): auto at m >= 1024 (runs i1 / i4, H100: 6-12% faster than the records tiles on every 27b row there, 1.76x on one), 1 where the plan picks a 128-token tile, all always, 0 never") \
    X(MMQ_WG_TR, "MEMRA_MMQ_WG_TR", "mmq modules", BOOL, "", "0",                                              \
      "1: with MEMRA_MMQ_WG_SEED=0, MEMRA_MMQ_WG's tile with the token scales transposed by its producer warp (16 fewer loads a k32 group; run g4: 5% faster than without)") \
    X(MMQ_WG_PERSIST, "MEMRA_MMQ_WG_PERSIST", "mmq modules", UINT, "0..4096", "0",                              \
      "1: MEMRA_MMQ_WG's tile persistent (one CTA an SM loops over the tiles; token scales transposed; run g4: 6-10% slower); N >= 2: at most N CTAs") \
    X(MMQ_WG_TAIL, "MEMRA_MMQ_WG_TAIL", "mmq modules", BOOL, "", "0",                                          \
      "1: the seeded tile's last row tile, where it holds 1 .. 96 tokens (m mod 128), on the fewest of 32, 64 or 96 token columns that hold them, not 128 (memra_k_gemm_q8_0r_wgst; bit for bit _wgs; untimed)") \
    X(MMQ_WG_SEED, "MEMRA_MMQ_WG_SEED", "mmq modules", ENUM, "0|1|smem|xp|pp|pin|iadd", "1",                               \
      "0: MEMRA_MMQ_WG's tile without the u8 MMA that seeds each k32 group's accumulators (the seed by MOVs: 238 instructions a group where the seeded tile has 172; run i1, H100: the seeded tile 3-12% faster); smem: the seed's A from shared memory, not registers (_wgsa; run j6: level with 1); xp: smem with the token scales loaded a group ahead (_wgsax; run l1: level with 1); pp: 1 with its two consumer warpgroups folding in turn (_wgspp, and gemm_experts' _wgspp; bit for bit 1; run r1, H100: 7-13% slower, barrier stalls); 1 (the default): the seeded tile as ptxas schedules it, each group's s8 wgmma issued two thirds into the fold (_wgs; MEMRA_MMQ_WG_TAIL, MEMRA_MMQ_XE_WG_REM and MEMRA_MMQ_XE_OVERLAP need it); pin: each group's fold pinned behind its s8 wgmma (_wgsf, its stream-k twin _wgskf, gemm_experts' _wgsf and MEMRA_MMQ_KR_WG=pre2's _wgw2f; bit for bit 1; run t1, H100: the microbenchmark's group 8% shorter; run u2, H100: the kernels 5-8% slower on Q8_0); iadd: the dense tile without the seed's u8 MMA, the fold adding the seed to each product with an integer add (_wgsi, its stream-k twin _wgski and gemm_experts' _wgsi; bit for bit 1; untimed)") \
    X(MMQ_KR_WG, "MEMRA_MMQ_KR_WG", "mmq modules", ENUM, "0|1|mma|pre|pre2|auto", "auto",                                       \
      "1: gemm_kr's Q4_K / Q5_K on the seeded warpgroup tile (cc 9.x, tensor maps, the sum plane; bit for bit the per-32 _x tiles; run i2, H100: 0.75-0.96x the records tiles' speed but on the smallest row); mma: the same with the min term by two tf32 wgmmas a step, not 64 FFMA a group (runs j5 and l, H100: 0.91-1.00x the records tiles); pre: mma fed by a per-call widening pass (the weight widened once into scratch, KW_BLOCK_BYTES a 128 x 128 block; bit for bit mma; untimed); pre2: the same with the mins' tf32 tiles and the tokens' part in scratch too, the producer's copies alone (run n1, H100, the whole call: 0.77-0.78x the records tiles' time at m = 1024, 0.80-0.82x at 4096, 0.99x at 512; scratch about 26 KB per 128 x 128 weight block, 145 MB at 17408 x 5120); auto (the default): pre2 from 1024 tokens, the records tiles below; 0: the records tiles always") \
    X(MMQ_XE_LOOP2, "MEMRA_MMQ_XE_LOOP2", "mmq modules", BOOL, "", "0",                                        \
      "1: gemm_experts' bulk-copy K-quant tiles run a full tile's k loop apart from a short tile's (_stxb2; untimed)") \
    X(MMQ_XE_TALL, "MEMRA_MMQ_XE_TALL", "mmq modules", BOOL, "", "0",                                          \
      "1: gemm_experts' Q8_0 / Q4_K rows at 96-160 an expert on one 160 x 96 tile each, no 32-row remainder (cc 9.x; run q4, H100: level with the default on Q8_0, q3: 6-9% slower on Q4_K)") \
    X(MMQ_XE_WG, "MEMRA_MMQ_XE_WG", "mmq modules", ENUM, "0|1|auto", "auto",                                   \
      "gemm_experts' Q8_0 / Q4_0 128-row tiles on the seeded warpgroup tile (cc 9.x, tensor maps, the records' gather; bit for bit the records tiles): auto from k = 4096 (run j2, H100: Mixtral-like rows 4-9% faster at m = 4096; Qwen3-like k = 2048 / 768 7-27% slower), 1 at every k, 0 never") \
    X(MMQ_XE_WG_REM, "MEMRA_MMQ_XE_WG_REM", "mmq modules", BOOL, "", "0",                                      \
      "1: with MEMRA_MMQ_XE_WG's tile, the experts' remainders of at most 32 rows in the same grid, on the tile with 32 token columns (memra_k_experts_q8_0r_wgsr: beside their expert's full tiles, the weight from L2; bit for bit the records tiles; run s1, H100: no gain, grouped / dense 0.60-0.70 against 0.65-0.72 at m = 512)") \
    X(MMQ_XE_RASTER, "MEMRA_MMQ_XE_RASTER", "mmq modules", ENUM, "0|1|auto", "1",                             \
      "gemm_experts on MEMRA_MMQ_XE_WG's tile: 1 (the default) walks its grid in groups of 8 table tiles, each group's weight row blocks outermost (a 1-D grid), so that a wave holds a few experts' tokens and reads each weight block for the group's tiles together, where the plain grid streams every tile's tokens again each wave (an H100 ran the Mixtral-like Q8_0 rows at m = 512 in 0.48-0.55 ms a call against 0.51-0.59 on the plain grid, at 4096 the gate and up rows 2-3% faster and the down rows 1-5% slower); auto: where the mean expert has 384 rows or more; 0: the plain grid") \
    X(MMQ_XE_BM, "MEMRA_MMQ_XE_BM", "mmq modules", UINT, "0..1024", "0 (from rows per expert)",                  \
      "gemm_experts grouped tile rows forced (32|64|128)")                                                        \
    X(MMQ_XE_SPLIT, "MEMRA_MMQ_XE_SPLIT", "mmq modules", UINT, "0..16", "0 (chosen per call)",                  \
      "gemm_experts grouped split-k slices forced")                                                               \
    X(MMQ_XE_MERGE, "MEMRA_MMQ_XE_MERGE", "mmq modules", BOOL, "", "0",                                          \
      "1: gemm_experts' full and remainder tiles in one tile-major launch (run s2, first order: +3%)")            \
    X(MMQ_XE_OVERLAP, "MEMRA_MMQ_XE_OVERLAP", "mmq modules", BOOL, "", "0",                                      \
      "1: gemm_experts' remainder launch starts beside the full tiles' last wave (programmatic launch)")          \
    X(MMQ_XE_PF, "MEMRA_MMQ_XE_PF", "mmq modules", BOOL, "", "0",                                                \
      "1 (opt-in; run aa3, H100: loses, 1.05-1.22x the time on the Mixtral-like rows, geomean 1.15; its main tiles 459 us against 371): gemm_experts' Q8_0 warpgroup tile (_wgs, MEMRA_MMQ_WG_SEED=1, without MEMRA_MMQ_XE_WG_REM or _OVERLAP) as its twin _wgs_pf, whose producer also brings each expert's weight into L2 8 steps ahead of the stage it fills (the grouped tiles stream every expert's weight from DRAM; outputs bit for bit _wgs's)") \
    X(MMQ_XE_SORT, "MEMRA_MMQ_XE_SORT", "mmq modules", BOOL, "", "1",                                            \
      "0: gemm_experts' grouped tiles gather their rows, no records in expert order (run v1: 0.84 -> 0.91)")     \
    X(MMQ_XE_F16, "MEMRA_MMQ_XE_F16", "mmq modules", BOOL, "", "1",                                              \
      "0: the mmq family does not serve gemm_experts on the f16 and bf16 lanes")                                  \
    X(MMQ_XE_H16, "MEMRA_MMQ_XE_H16", "mmq modules", ENUM, "k64|k32|n8|n8k64", "k64",                         \
      "the 16-bit grouped tile: 64 values a stage, 32, 32 on 256 columns, 64 on 256 columns (run t3)")          \
    X(SM120_FP8BLK, "MEMRA_SM120_FP8BLK", "sm120", ENUM, "mxf8f6f4|f8f6f4", "mxf8f6f4",                          \
      "sm120 gemm_fp8_blk kernel")                                                                                \
    X(CHECK_INJECT_FAULT, "MEMRA_CHECK_INJECT_FAULT", "memra check", STR, "", "", "test hook of memra check")     \
    X(SHADOW_TEST_CORRUPT, "MEMRA_SHADOW_TEST_CORRUPT", "tests", BOOL, "", "0",                                  \
      "test hook: a shadow's result is perturbed before it is judged (forces a rollback)")                       \
    X(TEST_SEED, "MEMRA_TEST_SEED", "tests", STR, "", "", "seed of the test programs")                       \
    X(TEST_INJECT_FAULT, "MEMRA_TEST_INJECT_FAULT", "tests", STR, "", "", "test hook: the test programs' judges fail") \
    X(TEST_SCRATCH_ZERO, "MEMRA_TEST_SCRATCH_ZERO", "tests", BOOL, "", "0",                                       \
      "test hook: every new scratch block zero-filled (sanitizer evidence runs)")                                  \
    X(TEST_FAKE_DEVICES, "MEMRA_TEST_FAKE_DEVICES", "tests", UINT, "0..8", "0",                                   \
      "test hook: N host-backed stand-ins for CUDA devices (ordinals 0..N-1), no driver used")                   \
    X(TEST_STRESS_LANES, "MEMRA_TEST_STRESS_LANES", "tests", STR, "", "",                                       \
      "test_gpu_stress's lanes, a comma list of f16, f16pre, fp8, fp8blk, mmq (default all)")                     \
    X(FUZZ_SECONDS, "MEMRA_FUZZ_SECONDS", "tests", STR, "", "",                                                 \
      "seconds each libFuzzer target fuzzes in ctest (tests/fuzz/run_fuzzer.sh; not read by the library)")       \
    X(LIBRARY, "MEMRA_LIBRARY", "python", STR, "", "", "the libmemra the python package loads (not read here)")

typedef enum memra__knob {
#define MEMRA__KNOB_ENUM(id, name, owner, kind, allowed, def, help) MEMRA__KNOB_##id,
    MEMRA__KNOB_LIST(MEMRA__KNOB_ENUM)
#undef MEMRA__KNOB_ENUM
    MEMRA__KNOB_COUNT
} memra__knob;

#define MEMRA__CONFIG_MAX_EXTRA 32
#define MEMRA__CONFIG_MAX_WARN 32

typedef struct memra__config {
    char *value[MEMRA__KNOB_COUNT]; /* NULL: default */
    int source[MEMRA__KNOB_COUNT];  /* 0 default, 1 environment, 2 option */
    /* MEMRA_* names no table row knows (an out-of-tree module's, or a typo) */
    int n_extra;
    char *extra_name[MEMRA__CONFIG_MAX_EXTRA], *extra_value[MEMRA__CONFIG_MAX_EXTRA];
    int extra_source[MEMRA__CONFIG_MAX_EXTRA];
    int n_warn;
    char *warn[MEMRA__CONFIG_MAX_WARN];
    /* values replaced by memra_config_set, freed at close (readers may hold them) */
    int n_old, cap_old;
    char **old;
    /* parsed */
    int log_level;
    int64_t f16_budget_mb; /* -1: the profile's */
    int q8_0_records, host_threads, stats, allow_unsafe, xe_mirror;
    int w16; /* MEMRA_W16: 0 never (the default), 1 every device (experts of any count), 2 auto (GPUs) */
    int64_t floor_f16_m; /* MEMRA_FLOOR_F16_M: N, 0 never (also unset), -2 auto (the profile's) */
} memra__config;

/* MEMRA_ARCH's value for CUDA ordinal `ordinal`: the profile name (into buf)
 * when the value forces one on that ordinal (the plain form forces every
 * ordinal), NULL when it does not. `value` is a checked value or NULL. */
const char *memra__config_arch_for(const char *value, int ordinal, char *buf, int len);
/* The ordinals a per-device MEMRA_ARCH names, in order (at most max); 0 for
 * the plain form or NULL. */
int memra__config_arch_ordinals(const char *value, int *ordinals, int max);

/* Parse options then environment (unless opts->ignore_environment) into cfg.
 * INVALID_ARGUMENT naming the variable and the value on any bad value. */
memra_status memra__config_parse(memra__config *cfg, const memra_options *opts);
void memra__config_free(memra__config *cfg);
/* memra_config_set: a module knob's new value (NULL: back to its default),
 * for modules initialised afterwards. Caller serialises (the registry lock). */
memra_status memra__config_set(memra__config *cfg, const char *name, const char *value);
/* Row k of the table (k < MEMRA__KNOB_COUNT). */
void memra__knob_info(int k, const char **name, const char **def, const char **owner, const char **help);
/* Effective text of a knob, NULL when at its default. */
const char *memra__config_str(const memra__config *cfg, memra__knob k);
/* Same by variable name, unknown names included (NULL when unset). */
const char *memra__config_lookup(const memra__config *cfg, const char *name);
void memra__config_warn(memra__config *cfg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The process-wide view for code that runs before or outside a runtime (the
 * driver, library and JIT loaders): the configuration of the runtime being
 * opened, else the most recently opened one. Copies into a per-thread buffer.
 * Names outside MEMRA_* (HOME, XDG_CACHE_HOME) are read from the environment. */
const char *memra__env(const char *name);
void memra__config_publish(const memra__config *cfg);
void memra__config_unpublish(const memra__config *cfg); /* forget it if it is the one published */

/* The process-wide log sink (set by memra_open, reset by the memra_close of
 * the runtime that set it). */
void memra__log_configure(int level, memra_log_fn fn, void *user, const void *owner);
void memra__log_release(const void *owner);

#endif
