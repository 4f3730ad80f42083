/* The one numeric judge: how memra check (tools/check.c) and every test that
 * compares a module's output with a host reference (tests/core/test_matmul.c,
 * tests/gpu/test_sm90_ops.c, tests/gpu/test_gpu_stress.c,
 * tests/gpu_mmq/test_mmq_ops.c, tests/files/test_files.c gpu_matmul) decide.
 *
 * GEMMs are judged per element by the normalised error
 *
 *     e = |got - ref| / (mass + tiny),   mass = sum_k |x_k w_k|
 *
 * over the QUANTISED operands with every scale applied (the quantities both
 * sides multiply), so e measures accumulation error only; pass when every
 * e <= band (NaN counts as infinite). The mass comes from the host module run
 * on the absolute operands (judge_abs_* below: every quantiser here is
 * symmetric in sign and keeps the amax, so |q(x)| = q(|x|)) or from the
 * caller's own f64 loop. Relative Frobenius ||got - ref|| / ||ref|| is kept as
 * a reported figure only (judge_rel_fro); it decides nothing.
 * Bit-identical ops are judged byte for byte (judge_bytes); stray writes by
 * a sentinel / guard-tail scan (judge_sentinel_f32, judge_tail).
 * Mismatches: the first JUDGE_PRINT_MAX are printed with their indices.
 *
 * The bands, in one place (derivations; u = 2^-24 unless said):
 *
 *  JUDGE_BAND_HOST 1e-6   host module vs an independent f64 reference
 *      (tools/check_ref.c, test_matmul's loops). Both sum in double and round
 *      once to f32: a one-ulp difference in the final rounding is
 *      2^-23 |ref| <= 1.2e-7 mass; the double sums differ by < k 2^-53 mass.
 *      8x headroom.
 *  JUDGE_BAND_F16  1e-5   gemm_f16 (GPU). f16 x f16 products are exact in f32;
 *      only the f32 accumulation order differs (tensor-core tiles, split-K).
 *      A random-sign f32 sum of k terms errs by ~u |partial sums| per add,
 *      which normalised by the mass stays near u = 6e-8 for any k; 1e-5
 *      (~170 u) is the design brief's "near 1e-5" for f16/int8 lanes.
 *  JUDGE_BAND_BF16 1e-5   gemm_bf16 (GPU). The activation rounded to bf16 on
 *      both sides; bf16 x bf16 products have 16 significant bits, exact in
 *      f32; only the f32 accumulation order differs: gemm_f16's argument.
 *  JUDGE_BAND_Q8_0 2e-6   gemm_q8_0, gemm_q8_0r (GPU, any k check uses).
 *      Integer products and s32 sums per 32 are exact; only the f32 fold
 *      (dw * dx * isum over k/32 blocks) rounds: a few u per block term,
 *      ~32 u with the sum. Where the test knows nb = k/32 it uses the tighter
 *      per-element bound judge_band_fold(nb, extra) below.
 *  judge_band_fold(nb, extra) = gamma(nb + 2 + extra) + u,
 *      gamma(j) = j u / (1 - j u): recursive f32 summation of nb block terms
 *      t_b = fl(fl(dx dw) I_b) (FFMA: one rounding for product-and-add) vs
 *      the host's double sum errs by <= gamma(nb + 2) sum_b |dx dw I_b| plus
 *      the final rounding u |y| <= u mass. Split-k (gemm_q8_0r) adds at most
 *      S <= 16 roundings on any path: extra = 16. Always <= JUDGE_BAND_Q8_0
 *      for nb <= 30 and tighter than it beyond; test_mmq_ops uses it.
 *  gemm_kr (GPU) and the K-quant floor: judge_band_fold(2 nb, 16), normalised
 *      by sum_k |dx xq| (|s q| + |mn|) (Q6_K: |s q|). Integer sums exact (per
 *      32, or per 16 for Q6_K); the fold adds two terms per 32-block, each
 *      with one rounding: Q4_K / Q5_K fl(s I) dx then the min term
 *      fl(dx S) mn (S = sum xq), Q6_K fl(s_hi I_hi) chained into
 *      fl(s_lo I_lo + .) then dx (mmq.cu "gemm_kr"). So it is gemm_q8_0r's
 *      argument with 2 nb terms: the recursive f32 sum errs by
 *      <= gamma(2 nb + 2) times the sum of the absolute terms, which the
 *      normaliser bounds (|s I| <= s sum |q xq|, |mn S| <= mn sum |xq|), plus
 *      16 split-k roundings and the final one: gamma(2 nb + 18) + u
 *      (4.4e-5 at k = 17408, 3.4e-6 at k = 768). The min term cannot hide in
 *      the normaliser: a dropped min moves an element by mn |S dx|, ~1/3 of its
 *      mass for random codes. MEMRA_MMQ_KR_TC=1 (Q4_K / Q5_K, mmq.cu mmq_step TC)
 *      moves the min term out of the per-32 fold: per 128-step D = sum_b t_b m_b
 *      (t_b = fl(dx S), m_b the 6-bit mins) from two TF32 MMAs on t split as
 *      hi + lo (|t - hi - lo| <= 2u |t|: lo's rounding can lose its last bit
 *      against t's, e.g. t = 0x3f800801; for |t| >= 2^-103, where t - hi is
 *      normal: below, as for t = fl(S dx) itself in either fold, the error is
 *      absolute), the products exact, each MMA's f32
 *      additions taken at <= 2u of the running magnitude (truncation): the hi
 *      MMA's 4 adds <= 8u, the lo MMA's 5 <= 10u, so |dD| <= 20u sum |t m|;
 *      then acc -= dmin D, one add a step. Bound: gamma(nb + nb/4 + 18) + 20u
 *      over the same normaliser, above gamma(2 nb + 18) only for nb < 27.
 *      judge_band_kr(k, 1) = judge_band_fold(2 nb, 36) covers both folds at
 *      every k (nb = 8: 54u against 48u; 16: 70u against 58u); Q6_K, which
 *      never runs the TC fold, keeps judge_band_fold(2 nb, 16)
 *      (judge_band_kr(k, 0)). test_formats kr_tc emulates both folds on
 *      the host (the accumulator truncating) against these bands. memra
 *      check, test_mmq_ops gemm_kr and the
 *      admission case (4e-6 at k <= 512: the TC fold's bound there is 59u =
 *      3.5e-6) use it; the host module against
 *      GGML's decoded weight in double is JUDGE_BAND_HOST (the decoder rounds
 *      each value once: <= u of that value's term).
 *  JUDGE_BAND_FP8  5e-4 gemm_fp8, gemm_fp8_blk (GPU, cuBLASLt). Both sides
 *      quantise x the same way, so what is left is the accumulation: Hopper's
 *      FP8 MMA keeps about 14 bits between promotions to f32 (take 13: at
 *      most 2^-13 of the running magnitude lost per k32 step, truncation);
 *      cuBLASLt without fast accumulation (its default, which memra keeps)
 *      promotes to f32 periodically; its interval is not documented and we
 *      take 4 k32 steps (the usual one), so each promoted partial errs by
 *      <= 4 x 2^-13 of its own mass and the partials' masses add up to the
 *      element's: 4.88e-4, plus the f32 fold of <= k/128 + 2 partials,
 *      gamma(138) = 8.2e-6 at k = 17408: below 5e-4 for every sheet k. (Was
 *      2.6e-4, twice a measured relative Frobenius error: an H200 admission
 *      self-check at m=4 n=64 k=256 measured 2.89e-4 and quarantined sm90.)
 *  JUDGE_BAND_FP8_MMA 2^-12 = 2.44e-4  the fp8blk module's own mma.sync
 *      kernel: each 128-deep block is four chained k32 MMAs each keeping
 *      >= 14 bits (4 x 2^-14) plus the f32 fold. Tighter than JUDGE_BAND_FP8
 *      and derived from that kernel's accumulator; test_mmq_ops fp8blk. On
 *      sm_90 that MMA is f16 HMMAs with f32 adds (SASS), so the bound is loose
 *      there. The sm_90a wgmma kernel (fp8blk's default on cc 9.0) chains four
 *      wgmmas in Hopper's FP8 accumulator per block and takes JUDGE_BAND_FP8:
 *      an H200 run measured 2.93e-4 against it, past 2^-12.
 *  JUDGE_BAND_EXACT_FOLD 1e-6  the accprobe S32 arm: exact int32 sums per 32,
 *      folded in f32; normalised by the mass bound 32 * 126^2 * nb (>= mass).
 *
 * What the bands still catch (k = 17408, the largest in_f of the sheets): a
 * dropped 128-block moves an element by ~sqrt(128)/k of its mass ~ 8e-4 (and
 * far more at smaller k); a wrong scale moves it by |ref| |s - 1| / mass, up
 * to ~4/sqrt(k) = 3e-2 on the largest elements; both fail every band above.
 *
 * Fault injection: a judge with .inject set moves the first element it is
 * given by 1e-3 of its mass (above every band) or flips the low bit of the
 * first byte (judge_bytes), so a test can prove its comparison fails
 * (the tests set it from MEMRA_TEST_INJECT_FAULT=1; memra check injects its
 * own fault into the module's weight instead).
 *
 * Not thread-safe per judge (one judge per comparison); no allocation; no
 * status: plain counters the caller reads.
 */
#ifndef MEMRA_TOOLS_JUDGE_H
#define MEMRA_TOOLS_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JUDGE_BAND_HOST 1e-6
#define JUDGE_BAND_F16 1e-5
#define JUDGE_BAND_BF16 1e-5
#define JUDGE_BAND_Q8_0 2e-6
#define JUDGE_BAND_FP8 5e-4
#define JUDGE_BAND_FP8_MMA 2.44140625e-4 /* 2^-12 */
#define JUDGE_BAND_EXACT_FOLD 1e-6
#define JUDGE_PRINT_MAX 10

typedef struct judge {
    const char *what;  /* label of the printed mismatches */
    double band;       /* pass: every e <= band */
    FILE *log;         /* mismatch lines; NULL: none */
    int inject;        /* move the first element judged (see above) */
    /* results */
    double max_err;    /* largest e (INFINITY for a NaN) */
    int64_t worst_i, worst_j;
    uint64_t checked, bad, stray;
    double sum_d2, sum_r2; /* for judge_rel_fro */
} judge;

/* A fresh judge; what is borrowed (must outlive the judge). */
void judge_init(judge *j, const char *what, double band, FILE *log);

/* One element at (i, c); returns e. */
double judge_elem(judge *j, int64_t i, int64_t c, double got, double ref, double mass);

/* Stray writes: every element of a rows x ldy f32 output outside rows
 * [off, off + m) x cols [0, n) must still hold sentinel; returns the count
 * (also added to j->stray). */
uint64_t judge_sentinel_f32(judge *j, const float *y, int64_t rows, int64_t ldy, int64_t off, int64_t m, int64_t n,
                            float sentinel);

/* Bit-identical: bytes / elem elements of elem bytes; returns the elements
 * that differ (added to j->bad). */
uint64_t judge_bytes(judge *j, const void *got, const void *want, size_t bytes, size_t elem);

/* Guard tail: bytes past an output that must still hold fill; returns the
 * count (added to j->stray). */
uint64_t judge_tail(judge *j, const void *tail, size_t bytes, uint8_t fill);

/* 1 when nothing was out of band and nothing strayed. */
int judge_ok(const judge *j);

/* ||got - ref|| / ||ref|| over the elements judged (reported, never decides). */
double judge_rel_fro(const judge *j);

/* gamma(nb + 2 + extra) + u, u = 2^-24: the f32 fold bound above. */
double judge_band_fold(int64_t nb, int extra);
/* gemm_kr's band at depth k: judge_band_fold(2 k/32, 36) where the TC fold may run (tc: Q4_K / Q5_K
 * on the dense tiles, above), else the per-32 fold's judge_band_fold(2 k/32, 16) (Q6_K, the grouped
 * tiles). */
double judge_band_kr(int64_t k, int tc);

/* |operand| in place, for the mass through the host module. */
void judge_abs_f32(float *x, size_t n);
void judge_abs_16(uint16_t *h, size_t n);          /* f16 or bf16 bits */
void judge_abs_e4m3(uint8_t *b, size_t n);
void judge_abs_q8_0(uint8_t *blocks, size_t nblocks); /* 34-byte Q8_0 blocks */
void judge_abs_q8_1(uint8_t *recs, size_t nrecs);     /* 144-byte q8_1 records */

#endif
