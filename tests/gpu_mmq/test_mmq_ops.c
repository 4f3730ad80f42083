/* The mmq and fp8blk modules against the host reference, through the public
 * API: memra_module_call(gpu, "mmq" | "fp8blk", ...) and
 * memra_module_call(host, "host", ...) on the same bytes, fresh random data.
 *
 *   test_mmq_ops CASE   quant gemm_q8_0 gemm_q8_0r gemm_kr accprobe fp8blk fp8given prefer
 *                       (fp8given: every GPU module's gemm_fp8 / gemm_fp8_blk with the own
 *                       amax pass, a static x_scale and producer x_amax, against the host
 *                       bit for bit on an identity weight; see given_case)
 *   test_mmq_ops sweep_kr [q4_k|q5_k|q6_k] [M] [SHAPE]
 *                       gemm_kr at every tile x split (not a test; see the function)
 *   test_mmq_ops bench  gemm_q8_0 (quantiser apart and together) and accprobe
 *                       S32 / F32 at 5120 -> 12288 (27b), m = 512 and 4096,
 *                       arms interleaved per repetition, medians (not a test)
 *
 * Exits 77 when there is no GPU the modules are admitted on. Every comparison
 * is tools/judge.h's (bytes by judge_bytes; GEMMs per element by
 * e = |got - ref| / mass over the quantised operands; sentinels by
 * judge_sentinel_f32); MEMRA_TEST_INJECT_FAULT=1 moves the first judged
 * element (byte) of every comparison, so every case must then FAIL. Bands
 * (the GEMM ones tighter than memra check's and derived per element, as
 * judge.h allows):
 *
 *  quant_q8_1    bit-identical bytes.
 *  gemm_q8_0     per 32-block the s32 dot I is exact on both sides, so only the
 *                f32 fold differs: t_b = fl(fl(dx * dw) * I_b) accumulated in f32
 *                in block order (FFMA: one rounding for product-and-add), vs the
 *                host's double sum. Recursive summation with nb terms gives
 *                |got - ref| <= gamma(nb + 2) * sum_b |dx dw I_b| (+ one final
 *                rounding u |y|), gamma(j) = j u / (1 - j u), u = 2^-24.
 *                Checked per element as the normalised error
 *                |got - ref| / (|alpha| sum_b |dx dw I_b|) <= gamma(nb + 2) + u.
 *                A dropped block or a wrong scale moves one term, ~1/nb of the
 *                sum (>= 2e-3 here), far above the band (<= 3e-5 at k = 5120).
 *  repack_q8_0   bit-identical to the records built here from the layout's
 *                definition (module.h, memra_q8_0r_bytes).
 *  gemm_q8_0r    the same per-block terms as gemm_q8_0; split-k adds at most S
 *                (<= 16) more roundings on any path (each slice's sum is a
 *                recursive sum of its blocks, then the slices are added in
 *                order), so the band is gamma(nb + 18) + u, checked per element
 *                like gemm_q8_0's, at the launcher's own choice and at forced
 *                tiles and split counts (MEMRA_MMQ_BM, _BN, _SPLIT).
 *  gemm_kr       Q4_K / Q5_K / Q6_K K-packed (memra_kr_repack: the GGUF's bytes,
 *                asserted; the kernel widens them in its load stage) and Q4_0 as
 *                its exact Q8_0 records (gemm_q8_0r), against the host module
 *                on the same records and q8_1 bytes. Integer sums exact on both
 *                sides (per 32, or per 16 for Q6_K); the fold adds two terms
 *                per 32-block (scale and min, or the two 16-value halves),
 *                each with one rounding, and split-k up to 16 more: band
 *                judge_band_kr(k, tc) (judge_band_fold(2 nb, 16); 36 for Q4_K /
 *                Q5_K, whose tiles may run the TC fold), normalised by
 *                sum_k |dx xq| (|s q| + |mn|) (Q6_K / Q4_0: |s q|), which
 *                bounds the sum of the fold's absolute terms. At the
 *                launcher's choice and forced tiles / split counts, m in
 *                {1, 17, 512, 4096}, n off the 128- and 96-row tiles (1000, 333,
 *                520, 100), k off
 *                512 (and odd super-block counts: 768 at n = 333 leaves
 *                Q6_K's d plane an odd length), forced split counts that start
 *                slices on odd 128-value steps (the second half of a
 *                super-block); then memra_matmul at f16 budget 0 (the core's K
 *                records and gemm_kr, no dequant_f16 in the ledger), same band.
 *  gemm_fp8_blk  each 128-deep block B is summed by the FP8 tensor cores with
 *                f32 accumulation; Hopper's FP8 MMA keeps about 14 significant
 *                bits between promotions (DeepSeek-V3 report), so one block can
 *                be off by ~ a few 2^-14 of sum |q w| over the block; the fold
 *                is f32 (FFMA per block). Band: relative Frobenius error
 *                ||got - ref|| / ||ref|| <= 5e-4 (the sm90 lane's band; cuBLASLt
 *                block-scaled measured 1.3e-4), and per element the normalised
 *                error |got - ref| / sum_b |s_b g_b| sum_k |q w| <= 2^-12 (four
 *                chained k32 MMAs each keeping >= 14 bits: 4 x 2^-14, plus the
 *                f32 fold): JUDGE_BAND_FP8_MMA. The pass/fail decision is the
 *                per-element band alone (judge.h: one metric); the relative
 *                Frobenius figure is still printed. Its 5e-4 gate is dropped
 *                for a reason: the faults it was there for (a wrong grid
 *                entry, a dropped 128-block) move every element they touch
 *                by about that block's share of the mass (>= 1/40 at the
 *                largest k here) times the scale error, orders of magnitude
 *                above 2^-12, so the per-element band fails them first.
 *                Measured on the H200 (sm_90a e4m3 mma.sync): ~1e-7
 *                both ways, so the MMA there keeps far more than 14 bits. Grids span 2^-6..2^6
 *                so a block scaled by the wrong grid entry fails by orders of
 *                magnitude (a dropped block of 40 is ~0.15 Frobenius).
 *  accprobe      time only; the S32 arm must equal the host's exact integer
 *                sum within the f32 fold (JUDGE_BAND_EXACT_FOLD 1e-6,
 *                normalised by the mass bound 32 * 126^2 * nb), F32 finite,
 *                MX must decline on anything but sm_120a.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "memra/module.h" /* MEMRA_LOG_WARN */
#include "test.h"
#include "tools/judge.h"

static memra_runtime *g_rt;
static memra_device *g_dev, *g_host;
static uint64_t g_rng;

static uint64_t rnd(void)
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 0x2545F4914F6CDD1Dull;
}
static double unif(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); } /* [0, 1) */
static float nz(void) /* nonzero, either sign, in (0.05, 1) */
{
    float v = (float)(0.05 + 0.95 * unif());
    return (rnd() & 1) ? -v : v;
}

/* MEMRA_MMQ_WG refusals logged (the warpgroup bit-for-bit cases must not pass by comparing the records
 * tile with itself) */
static test_log_count g_wg_log = {"_WG", 0, NULL, 0}; /* MEMRA_MMQ_WG*, MEMRA_MMQ_KR_WG */

static void setup(const char *module)
{
    memra_options o = {.struct_size = sizeof o, .log_fn = test_log_sink, .log_user = &g_wg_log};
    CHECK_OK(memra_open(&o, &g_rt));
    g_host = memra_device_host(g_rt);
    for (int i = 0; i < memra_device_count(g_rt) && g_dev == NULL; i++) {
        memra_device *d = memra_device_get(g_rt, i);
        if (d != g_host && memra_device_caps_get(d)->cc > 0 && memra_module_score(d, module) > 0) g_dev = d;
    }
    if (g_dev == NULL) TEST_SKIP("no GPU admits module %s (driver: %s)", module, memra_driver_status(g_rt));
    CHECK_OK(memra_device_w16_set(g_dev, 0)); /* the floor's tests: no W16 operand, whatever MEMRA_W16 says */
    const memra_device_caps *c = memra_device_caps_get(g_dev);
    printf("device: %s (cc %d, %d SMs, profile %s), module %s\n", c->name, c->cc, c->sm_count, c->profile, module);
    g_rng = test_seed();
}

/* The mmq module reads its knobs (MEMRA_MMQ_BM/BN/SPLIT/PDL) at init: set them
 * through memra_config_set and load the module again, only when they change.
 * NULL: the knob's default. */
/* MEMRA_MMQ_WG / _WG_TR / _WG_PERSIST / _WG_SEED for the next mmq_knobs (NULL: the environment's) */
/* and MEMRA_MMQ_KR_TC / MEMRA_MMQ_KR_WG likewise */
/* and MEMRA_MMQ_WG_TAIL */
static const char *g_wg, *g_wg_tr, *g_wg_per, *g_wg_sd, *g_kr_tc, *g_kr_wg, *g_wg_tail;
enum { NKNOBS = 11 };
static void mmq_knobs(const char *bm, const char *bn, const char *split, const char *pdl)
{
    static const char *cur[NKNOBS];
    static int known;
    const char *want[NKNOBS] = {bm, bn, split, pdl, g_wg != NULL ? g_wg : getenv("MEMRA_MMQ_WG"),
                                g_wg_tr != NULL ? g_wg_tr : getenv("MEMRA_MMQ_WG_TR"),
                                g_wg_per != NULL ? g_wg_per : getenv("MEMRA_MMQ_WG_PERSIST"),
                                g_wg_sd != NULL ? g_wg_sd : getenv("MEMRA_MMQ_WG_SEED"),
                                g_kr_tc != NULL ? g_kr_tc : getenv("MEMRA_MMQ_KR_TC"),
                                g_kr_wg != NULL ? g_kr_wg : getenv("MEMRA_MMQ_KR_WG"),
                                g_wg_tail != NULL ? g_wg_tail : getenv("MEMRA_MMQ_WG_TAIL")};
    int same = known;
    for (int i = 0; i < NKNOBS && same; i++)
        same = (cur[i] == NULL && want[i] == NULL) || (cur[i] && want[i] && strcmp(cur[i], want[i]) == 0);
    if (same) return;
    static const char *const names[NKNOBS] = {"MEMRA_MMQ_BM",      "MEMRA_MMQ_BN",         "MEMRA_MMQ_SPLIT",
                                              "MEMRA_MMQ_PDL",     "MEMRA_MMQ_WG",         "MEMRA_MMQ_WG_TR",
                                              "MEMRA_MMQ_WG_PERSIST", "MEMRA_MMQ_WG_SEED", "MEMRA_MMQ_KR_TC",
                                              "MEMRA_MMQ_KR_WG",   "MEMRA_MMQ_WG_TAIL"};
    for (int i = 0; i < NKNOBS; i++) CHECK_OK(memra_config_set(g_rt, names[i], want[i]));
    char path[4096] = "";
    for (int i = 0; i < memra_module_count(g_rt); i++) {
        memra_module_info mi;
        CHECK_OK(memra_module_info_get(g_rt, i, &mi));
        if (mi.loaded && strcmp(mi.name, "mmq") == 0) snprintf(path, sizeof path, "%s", mi.path);
    }
    CHECK(path[0] == '/');
    CHECK_OK(memra_module_unload(g_rt, "mmq"));
    CHECK_OK(memra_module_load(g_rt, path));
    CHECK(memra_module_score(g_dev, "mmq") > 0);
    for (int i = 0; i < NKNOBS; i++) cur[i] = want[i];
    known = 1;
}

static memra_buffer *buf(memra_device *d, size_t bytes, const void *init)
{
    memra_buffer *b = NULL;
    CHECK_OK(memra_buffer_create(d, bytes, &b));
    if (init != NULL) CHECK_OK(memra_buffer_write(b, 0, init, bytes));
    return b;
}

static void *readback(memra_buffer *b, size_t bytes)
{
    void *p = malloc(bytes);
    CHECK(p != NULL);
    CHECK_OK(memra_buffer_read(b, 0, p, bytes));
    return p;
}

/* Activations with per-row magnitudes spread over 2^-8..2^8 and one outlier per row. */
static float *make_x(int m, int k)
{
    float *x = malloc((size_t)m * k * sizeof *x);
    CHECK(x != NULL);
    for (int i = 0; i < m; i++) {
        const float mag = ldexpf(1.0f, (int)(rnd() % 17) - 8);
        for (int c = 0; c < k; c++) x[(size_t)i * k + c] = mag * nz();
        x[(size_t)i * k + rnd() % k] *= 7.0f;
    }
    return x;
}

/* ---- quant_q8_1 --------------------------------------------------------------- */

static memra_status call_quant(memra_device *d, const char *mod, memra_buffer *x, int m, int k, memra_buffer *q)
{
    memra_op_args a = {.struct_size = sizeof a, .src = memra_buffer_ptr(x), .dst = memra_buffer_ptr(q), .rows = m,
                       .cols = k};
    return memra_module_call(d, mod, MEMRA_OP_quant_q8_1, &a);
}

/* Quantise on both devices; compare bytes; return the host records (caller frees). */
static uint8_t *quant_both(const float *x, int m, int k, memra_buffer **out_dq, int *ok)
{
    const size_t qb = memra_q8_1_bytes(m, k);
    memra_buffer *xd = buf(g_dev, (size_t)m * k * 4, x), *xh = buf(g_host, (size_t)m * k * 4, x);
    memra_buffer *qd = buf(g_dev, qb, NULL), *qh = buf(g_host, qb, NULL);
    CHECK_OK(call_quant(g_dev, "mmq", xd, m, k, qd));
    CHECK_OK(call_quant(g_host, "host", xh, m, k, qh));
    CHECK_OK(memra_device_synchronize(g_dev));
    uint8_t *gd = readback(qd, qb), *gh = readback(qh, qb);
    char what[64];
    snprintf(what, sizeof what, "quant_q8_1 m=%d k=%d (element = byte)", m, k);
    judge jd;
    judge_init(&jd, what, 0.0, stdout);
    jd.inject = test_inject_fault();
    const uint64_t bad = judge_bytes(&jd, gd, gh, qb, 1);
    printf("  quant_q8_1 m=%-5d k=%-5d %8zu bytes: %llu differ  %s\n", m, k, qb, (unsigned long long)bad,
           bad ? "FAIL" : "ok");
    if (bad) *ok = 0;
    memra_buffer_destroy(xd);
    memra_buffer_destroy(xh);
    memra_buffer_destroy(qh);
    free(gd);
    if (out_dq)
        *out_dq = qd;
    else
        memra_buffer_destroy(qd);
    return gh;
}

static int case_quant(void)
{
    /* records per call not a multiple of the kernel's 8 per warp ({1, 32},
     * {1, 4192}, {5, 1501}); k not a multiple of 4 (the scalar-load path);
     * {4096, 5120}: more records than one pass of the capped grid */
    static const int shapes[][2] = {{1, 32},   {1, 4192},  {15, 1000}, {17, 5120},
                                    {64, 544}, {300, 2080}, {5, 1501}, {4096, 5120}};
    int ok = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        float *x = make_x(shapes[s][0], shapes[s][1]);
        if (s == 2) { /* a zero group and a NaN: d = 0 / NaN -> 0 paths */
            for (int c = 0; c < 32; c++) x[c] = 0.0f;
            x[40] = NAN;
        }
        if (s == 3) x[5120 + 70] = INFINITY; /* amax inf: d = inf, id = 0, every code of the group 0 */
        if (s == 4)
            for (int c = 64; c < 96; c++) x[c] = NAN; /* a group of NaNs alone: d = 0, codes 0 */
        free(quant_both(x, shapes[s][0], shapes[s][1], NULL, &ok));
        free(x);
    }
    return ok;
}

/* ---- gemm_q8_0 -------------------------------------------------------------------- */

/* g_wide: rows of magnitude 2^-16 .. 2^22, so the f16 block scales run from subnormal (2^-23) to 2^15
 * (the seeded warpgroup tiles scale them by 2^111 and 2^-19: exact over the f16 range, checked here) */
static int g_wide;
static uint8_t *make_q8_0(int n, int k)
{
    const size_t nb = (size_t)k / 32;
    uint8_t *w = malloc((size_t)n * nb * MEMRA_Q8_0_BYTES);
    CHECK(w != NULL);
    float v[32];
    for (int j = 0; j < n; j++) {
        const float mag = g_wide ? ldexpf(1.0f, (int)(rnd() % 39) - 16) : ldexpf(1.0f, (int)(rnd() % 9) - 4);
        for (size_t b = 0; b < nb; b++) {
            for (int l = 0; l < 32; l++) v[l] = mag * nz();
            memra_q8_0_encode(v, w + ((size_t)j * nb + b) * MEMRA_Q8_0_BYTES);
        }
    }
    return w;
}

static memra_status call_gemm(memra_device *d, const char *mod, memra_op op, const memra_gemm_args *g)
{
    memra_op_args a = {.struct_size = sizeof a, .gemm = *g};
    memra_status st = memra_module_call(d, mod, op, &a);
    if (st == MEMRA_STATUS_DECLINED) printf("    %s declined: %s\n", mod, a.decline_reason);
    return st;
}

#define ROW_OFF 2

static int g_records; /* gemm_q8_case also runs repack_q8_0 + gemm_q8_0r */

/* Q8_0 records of w [n x k] from the layout's definition (module.h). */
static uint8_t *records_of(const uint8_t *w, int n, int k)
{
    const int nb = k / 32, G = (k + 127) / 128;
    uint8_t *r = calloc(memra_q8_0r_bytes(n, k), 1);
    CHECK(r != NULL);
    for (int g = 0; g < G; g++)
        for (int j = 0; j < n; j++) {
            uint8_t *rec = r + ((size_t)g * n + j) * 144;
            for (int c = 0; c < 4 && 4 * g + c < nb; c++) {
                const uint8_t *blk = w + ((size_t)j * nb + 4 * g + c) * MEMRA_Q8_0_BYTES;
                const float d = memra_f32_from_f16((uint16_t)(blk[0] | blk[1] << 8));
                memcpy(rec + 4 * c, &d, 4);
                memcpy(rec + 16 + 32 * c, blk + 2, 32);
            }
        }
    return r;
}

/* Per-element check of y (rows ROW_OFF.., stride ldy) against the host's
 * gemm_q8_0 output ref (tools/judge.h), normalised by alpha sum_b |dx dw I_b|,
 * band judge_band_fold(nb, extra_roundings); sentinels kept. */
static int check_against(const char *what, const float *got, const float *ref, const uint8_t *w, const uint8_t *q,
                         int m, int n, int k, float alpha, int64_t ldy, int64_t yrows, int extra_roundings)
{
    const int nb = k / 32;
    judge jd;
    judge_init(&jd, what, judge_band_fold(nb, extra_roundings), stdout);
    jd.inject = test_inject_fault();
    for (int i = 0; i < m; i++)
        for (int c = 0; c < n; c++) {
            double sabs = 0.0;
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = w + ((size_t)c * nb + b) * MEMRA_Q8_0_BYTES;
                const uint8_t *rec = q + ((size_t)(b >> 2) * m + i) * MEMRA_Q8_1_RECORD_BYTES;
                float dx;
                memcpy(&dx, rec + 4 * (b & 3), 4);
                const float dw = memra_f32_from_f16((uint16_t)(blk[0] | blk[1] << 8));
                int32_t is = 0;
                for (int l = 0; l < 32; l++) is += (int8_t)blk[2 + l] * (int8_t)rec[16 + 32 * (b & 3) + l];
                sabs += fabs((double)dw * dx * is);
            }
            const int64_t e = (int64_t)(i + ROW_OFF) * ldy + c;
            judge_elem(&jd, i, c, got[e], ref[e], fabs(alpha) * sabs);
        }
    judge_sentinel_f32(&jd, got, yrows, ldy, ROW_OFF, m, n, -12345.0f);
    printf("    %-22s max normalised %.3g (band %.3g), %llu over, %llu sentinels overwritten  %s\n", what, jd.max_err,
           jd.band, (unsigned long long)jd.bad, (unsigned long long)jd.stray, judge_ok(&jd) ? "ok" : "FAIL");
    return judge_ok(&jd);
}

/* repack_q8_0 on the device (bit-identical to records_of), then gemm_q8_0r on
 * those records at the launcher's choice and at forced tiles / split counts. */
static int records_case(int m, int n, int k, float alpha, const uint8_t *w, const uint8_t *q, memra_buffer *qd,
                        const float *sent, const float *ref, int64_t ldy, int64_t yrows)
{
    int ok = 1;
    const size_t wb = (size_t)n * (k / 32) * MEMRA_Q8_0_BYTES, rb = memra_q8_0r_bytes(n, k);
    uint8_t *want = records_of(w, n, k);
    uint8_t *junk = malloc(rb);
    CHECK(junk != NULL);
    for (size_t e = 0; e < rb; e++) junk[e] = (uint8_t)(0xA5 ^ e); /* a repack that skips bytes shows */
    memra_buffer *wd = buf(g_dev, wb, w), *rd = buf(g_dev, rb, junk);
    memra_op_args ra = {.struct_size = sizeof ra, .src = memra_buffer_ptr(wd), .rows = n, .cols = k,
                        .dst = memra_buffer_ptr(rd)};
    CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_repack_q8_0, &ra));
    CHECK_OK(memra_device_synchronize(g_dev));
    uint8_t *got_r = readback(rd, rb);
    judge jr;
    judge_init(&jr, "repack_q8_0 (element = record)", 0.0, stdout);
    jr.inject = test_inject_fault();
    const uint64_t diff = judge_bytes(&jr, got_r, want, rb, 144);
    printf("    repack_q8_0            %zu records, %llu records differ  %s\n", rb / 144, (unsigned long long)diff,
           diff ? "FAIL" : "ok");
    ok &= diff == 0;

    static const struct { const char *bm, *bn, *split; } cfg[] = {
        {NULL, NULL, NULL},   {"128", "128", "1"}, {"64", "128", "1"}, {"128", "128", "3"}, {"64", "128", "7"},
        {"128", "128", "16"}, {"128", "96", "1"},  {"64", "96", "1"},  {"128", "96", "5"},  {"64", "96", "2"}};
    const int cfgs = (int)(sizeof cfg / sizeof cfg[0]);
    memra_buffer *yd = buf(g_dev, (size_t)(yrows * ldy) * 4, sent);
    for (int c = 0; c < cfgs; c++) {
        /* the first with every knob at its default (on cc 9.x from 1024 tokens the seeded warpgroup tile,
         * MEMRA_MMQ_WG=auto), the others on the records tiles (MEMRA_MMQ_WG=0), which they steer */
        g_wg = c == 0 ? NULL : "0";
        mmq_knobs(cfg[c].bm, cfg[c].bn, cfg[c].split, NULL);
        g_wg = NULL;
        CHECK_OK(memra_buffer_write(yd, 0, sent, (size_t)(yrows * ldy) * 4));
        memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = ldy, .y_row_offset = ROW_OFF,
                             .alpha = alpha, .w = memra_buffer_ptr(rd), .x = memra_buffer_ptr(qd),
                             .y = memra_buffer_ptr(yd)};
        CHECK_OK(call_gemm(g_dev, "mmq", MEMRA_OP_gemm_q8_0r, &g));
        CHECK_OK(memra_device_synchronize(g_dev));
        float *got = readback(yd, (size_t)(yrows * ldy) * 4);
        char what[64];
        snprintf(what, sizeof what, "gemm_q8_0r %sx%s split=%s%s", cfg[c].bm ? cfg[c].bm : "auto",
                 cfg[c].bn ? cfg[c].bn : "auto", cfg[c].split ? cfg[c].split : "auto", c ? " WG=0" : "");
        ok &= check_against(what, got, ref, w, q, m, n, k, alpha, ldy, yrows, 16);
        free(got);
    }
    /* cc 9.x: the warpgroup tiles (MEMRA_MMQ_WG=all, mmq.cu memra_k_gemm_q8_0r_wg, and with MEMRA_MMQ_WG_TR=1
     * _wgt) bit for bit the records tiles' outputs at the same split (the same FFMAs on the same products, in
     * order; the split forced: in place of a 64-token pick =all chooses its own) */
    if (memra_device_caps_get(g_dev)->cc / 10 == 9) {
        static const struct { const char *bm, *bn, *split; } wc[] = {
            {"128", "128", "1"}, {"128", "128", "3"}, {"64", "96", "2"}, {"128", "128", "16"}};
        for (size_t c = 0; c < sizeof wc / sizeof wc[0]; c++) {
            /* records, _wg, _wgt, _wgp (persistent; _wgt where the split exceeds the steps), _wgp on at most 8
             * CTAs (each then takes several tiles: the ring and the next tile's first group across tiles), and
             * the three seeded by the tensor cores (MEMRA_MMQ_WG_SEED=1: their sums 2^-38 of the others', the
             * power of two exact, so bit for bit too while every partial sum is normal in both domains,
             * as here: mmq.cu r3w_sd_inner), and _wgsa (MEMRA_MMQ_WG_SEED=smem: the same seed with its A read
             * from shared memory), and _wgsax (MEMRA_MMQ_WG_SEED=xp: _wgsa with the token scales loaded a group
             * ahead), and _wgspp (MEMRA_MMQ_WG_SEED=pp: _wgs with its consumer warpgroups folding in turn), and
             * _wgst (MEMRA_MMQ_WG_TAIL=1: _wgs whose last row tile of 1 .. 96 tokens runs on 32, 64 or 96 token
             * columns: the cases with m mod 128 in 1 .. 96 take that path), and _wgsf (MEMRA_MMQ_WG_SEED=pin: _wgs
             * with each group's fold pinned behind its s8 wgmma), and _wgsi (MEMRA_MMQ_WG_SEED=iadd: _wgs without
             * the seed's MMA, the fold adding the seed) */
            enum { NV = 14 };
            static const char *const vname[NV] = {"records", "_wg", "_wgt", "_wgp", "_wgp on 8 CTAs", "_wgs",
                                                  "_wgps", "_wgps on 8 CTAs", "_wgsa", "_wgsax", "_wgspp", "_wgst",
                                                  "_wgsf", "_wgsi"};
            float *out[NV];
            for (int v = 0; v < NV; v++) {
                g_wg = v ? "all" : "0";
                g_wg_tr = v == 2 ? "1" : "0";
                g_wg_per = v == 3 || v == 6 ? "1" : v == 4 || v == 7 ? "8" : "0";
                g_wg_sd = v == 13   ? "iadd"
                          : v == 12 ? "pin"
                          : v == 10 ? "pp"
                          : v == 9  ? "xp"
                          : v == 8  ? "smem"
                          : v >= 5  ? "1"
                                    : "0";
                g_wg_tail = v == 11 ? "1" : "0";
                const int refused = g_wg_log.n;
                mmq_knobs(wc[c].bm, wc[c].bn, wc[c].split, NULL);
                if (g_wg_log.n != refused) {
                    printf("    gemm_q8_0r WG=all variant %d: the module loaded without its warpgroup kernel  FAIL\n", v);
                    ok = 0;
                }
                CHECK_OK(memra_buffer_write(yd, 0, sent, (size_t)(yrows * ldy) * 4));
                memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = ldy,
                                     .y_row_offset = ROW_OFF, .alpha = alpha, .w = memra_buffer_ptr(rd),
                                     .x = memra_buffer_ptr(qd), .y = memra_buffer_ptr(yd)};
                CHECK_OK(call_gemm(g_dev, "mmq", MEMRA_OP_gemm_q8_0r, &g));
                CHECK_OK(memra_device_synchronize(g_dev));
                out[v] = readback(yd, (size_t)(yrows * ldy) * 4);
            }
            g_wg = NULL, g_wg_tr = NULL, g_wg_per = NULL, g_wg_sd = NULL, g_wg_tail = NULL;
            for (int v = 1; v < NV; v++) {
                judge jw;
                judge_init(&jw, "gemm_q8_0r warpgroup tile vs records tile (element = float)", 0.0, stdout);
                jw.inject = test_inject_fault();
                const uint64_t d = judge_bytes(&jw, (const uint8_t *)out[v], (const uint8_t *)out[0],
                                               (size_t)(yrows * ldy) * 4, 4);
                printf("    gemm_q8_0r WG=all %s %sx%s split=%s: %llu of %lld floats differ from the records "
                       "tile  %s\n",
                       vname[v], wc[c].bm ? wc[c].bm : "auto", wc[c].bn ? wc[c].bn : "auto",
                       wc[c].split ? wc[c].split : "auto", (unsigned long long)d, (long long)(yrows * ldy),
                       d ? "FAIL" : "ok");
                ok &= d == 0;
            }
            for (int v = 0; v < NV; v++) free(out[v]);
        }
    }
    mmq_knobs(NULL, NULL, NULL, NULL);
    memra_buffer_destroy(wd), memra_buffer_destroy(rd), memra_buffer_destroy(yd);
    free(want), free(junk), free(got_r);
    return ok;
}

static int gemm_q8_case(int m, int n, int k, float alpha)
{
    int ok = 1;
    const int nb = k / 32;
    const int64_t ldy = n + 3, yrows = m + ROW_OFF + 1;
    float *x = make_x(m, k);
    uint8_t *w = make_q8_0(n, k);
    const size_t wb = (size_t)n * nb * MEMRA_Q8_0_BYTES;
    memra_buffer *qd = NULL;
    uint8_t *q = quant_both(x, m, k, &qd, &ok);
    memra_buffer *qh = buf(g_host, memra_q8_1_bytes(m, k), q);
    memra_buffer *wd = buf(g_dev, wb, w), *wh = buf(g_host, wb, w);
    float *sent = malloc((size_t)(yrows * ldy) * 4);
    CHECK(sent != NULL);
    for (int64_t e = 0; e < yrows * ldy; e++) sent[e] = -12345.0f;
    memra_buffer *yd = buf(g_dev, (size_t)(yrows * ldy) * 4, sent), *yh = buf(g_host, (size_t)(yrows * ldy) * 4, sent);
    memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = ldy, .y_row_offset = ROW_OFF,
                         .alpha = alpha};
    g.w = memra_buffer_ptr(wd), g.x = memra_buffer_ptr(qd), g.y = memra_buffer_ptr(yd);
    CHECK_OK(call_gemm(g_dev, "mmq", MEMRA_OP_gemm_q8_0, &g));
    g.w = memra_buffer_ptr(wh), g.x = memra_buffer_ptr(qh), g.y = memra_buffer_ptr(yh);
    CHECK_OK(call_gemm(g_host, "host", MEMRA_OP_gemm_q8_0, &g));
    CHECK_OK(memra_device_synchronize(g_dev));
    float *got = readback(yd, (size_t)(yrows * ldy) * 4), *ref = readback(yh, (size_t)(yrows * ldy) * 4);

    printf("  gemm_q8_0 m=%-5d n=%-5d k=%-5d alpha=%g\n", m, n, k, alpha);
    ok &= check_against("gemm_q8_0", got, ref, w, q, m, n, k, alpha, ldy, yrows, 0);
    if (g_records) ok &= records_case(m, n, k, alpha, w, q, qd, sent, ref, ldy, yrows);
    memra_buffer_destroy(qd);
    memra_buffer_destroy(qh);
    memra_buffer_destroy(wd);
    memra_buffer_destroy(wh);
    memra_buffer_destroy(yd);
    memra_buffer_destroy(yh);
    free(x), free(w), free(q), free(sent), free(got), free(ref);
    return ok;
}

static int case_gemm_q8_0(void)
{
    /* m in {1, 15, 16, 17, 512, 4096, 280, 350, 352, 300}; k not a multiple of 512 (nor 128 at times); n not a multiple of 128 */
    int ok = 1;
    ok &= gemm_q8_case(1, 1000, 1056, 1.0f);
    ok &= gemm_q8_case(15, 333, 800, 0.5f);
    ok &= gemm_q8_case(16, 256, 5120, 1.0f);
    ok &= gemm_q8_case(17, 130, 4128, -2.0f);
    ok &= gemm_q8_case(512, 1000, 2080, 1.0f);
    ok &= gemm_q8_case(4096, 200, 1312, 1.0f);
    /* three row tiles, the last of 24 / 94 / 96 tokens (MEMRA_MMQ_WG_TAIL's 32- and 96-column paths, the last a full
     * 96-column tile; 300 below takes its 64) */
    ok &= gemm_q8_case(280, 200, 1312, 1.0f);
    ok &= gemm_q8_case(350, 200, 1312, 1.0f);
    ok &= gemm_q8_case(352, 130, 1056, 1.0f);
    g_wide = 1;
    ok &= gemm_q8_case(300, 520, 1312, 1.0f);
    g_wide = 0;
    return ok;
}

/* ---- gemm_kr (and Q4_0 on gemm_q8_0r) -------------------------------------------- */

/* Random blocks of f: every byte random but the f16 scales (finite, non-zero). */
static uint8_t *make_blocks(memra_format f, int n, int k, size_t *bytes)
{
    const size_t bb = (size_t)memra_format_block_bytes(f), nb = (size_t)n * (size_t)(k / memra_format_block_values(f));
    uint8_t *w = malloc(nb * bb);
    CHECK(w != NULL);
    for (size_t i = 0; i < nb * bb; i++) w[i] = (uint8_t)rnd();
    for (size_t b = 0; b < nb; b++) {
        const uint16_t d = memra_f16_from_f32((float)(0.005 + 0.01 * unif()));
        const uint16_t dm = memra_f16_from_f32((float)(0.001 + 0.004 * unif()));
        uint8_t *p = w + b * bb;
        const size_t at = f == MEMRA_FORMAT_Q6_K ? 208 : 0;
        p[at] = (uint8_t)d, p[at + 1] = (uint8_t)(d >> 8);
        if (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K) p[2] = (uint8_t)dm, p[3] = (uint8_t)(dm >> 8);
    }
    *bytes = nb * bb;
    return w;
}

/* The op's weight operand: K records, or Q4_0's Q8_0 records (d kept, q - 8). */
static uint8_t *operand_of(memra_format f, const uint8_t *w, int n, int k, size_t *bytes)
{
    if (f != MEMRA_FORMAT_Q4_0) {
        *bytes = (size_t)memra_kr_bytes(f, n, k);
        uint8_t *r = malloc(*bytes);
        CHECK(r != NULL);
        CHECK_INT_EQ(memra_kr_repack(f, w, n, k, r), 0);
        return r;
    }
    const int nb = k / 32;
    uint8_t *q8 = malloc((size_t)n * nb * MEMRA_Q8_0_BYTES);
    CHECK(q8 != NULL);
    for (size_t b = 0; b < (size_t)n * nb; b++) {
        const uint8_t *s4 = w + b * MEMRA_Q4_0_BYTES;
        uint8_t *d8 = q8 + b * MEMRA_Q8_0_BYTES;
        d8[0] = s4[0], d8[1] = s4[1];
        for (int l = 0; l < 16; l++) {
            d8[2 + l] = (uint8_t)(int8_t)((s4[2 + l] & 15) - 8);
            d8[18 + l] = (uint8_t)(int8_t)((s4[2 + l] >> 4) - 8);
        }
    }
    uint8_t *r = records_of(q8, n, k);
    free(q8);
    *bytes = memra_q8_0r_bytes(n, k);
    return r;
}

/* mass[i][j] = sum_k |dx xq| (|s q| + |mn|) (Q6_K / Q4_0: |s q|), from the
 * per-value magnitudes of both operands (tabled once). */
static void kr_mass_all(memra_format f, const uint8_t *rec, const uint8_t *q, int m, int n, int k, double *mass)
{
    double *ax = malloc((size_t)m * k * sizeof *ax), *aw = malloc((size_t)n * k * sizeof *aw);
    CHECK(ax != NULL && aw != NULL);
    uint8_t *wide = NULL; /* K-packed: widened to f32 scales and int8 codes once */
    if (f != MEMRA_FORMAT_Q4_0) {
        wide = malloc((size_t)memra_kr_wide_bytes(n, k));
        CHECK(wide != NULL);
        CHECK_INT_EQ(memra_kr_widen(f, rec, n, k, wide), 0);
    }
    for (int c = 0; c < k; c++) {
        const int g = (c % 128) / 32;
        for (int i = 0; i < m; i++) {
            const uint8_t *xr = q + ((size_t)(c / 128) * m + i) * MEMRA_Q8_1_RECORD_BYTES;
            float dx;
            memcpy(&dx, xr + 4 * g, 4);
            ax[(size_t)i * k + c] = fabs((double)dx * (int8_t)xr[16 + c % 128]);
        }
        for (int j = 0; j < n; j++) {
            float s0, s1 = 0.0f;
            if (f == MEMRA_FORMAT_Q4_0) {
                const uint8_t *r = rec + ((size_t)(c / 128) * n + j) * 144;
                memcpy(&s0, r + 4 * g, 4);
                aw[(size_t)j * k + c] = fabs((double)s0 * (int8_t)r[16 + c % 128]);
            } else {
                const uint8_t *r = wide + ((size_t)(c / 128) * n + j) * MEMRA_KR_WIDE_BYTES;
                memcpy(&s0, r + 4 * g, 4);
                memcpy(&s1, r + 16 + 4 * g, 4);
                const double qv = (int8_t)r[32 + c % 128];
                aw[(size_t)j * k + c] =
                    f == MEMRA_FORMAT_Q6_K ? fabs((c % 32 < 16 ? s0 : s1) * qv) : fabs(s0 * qv) + fabs((double)s1);
            }
        }
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            const double *a = ax + (size_t)i * k, *b = aw + (size_t)j * k;
            double t = 0.0;
            for (int c = 0; c < k; c++) t += a[c] * b[c];
            mass[(size_t)i * n + j] = t;
        }
    free(ax);
    free(wide);
    free(aw);
}

static int kr_judge(const char *what, const float *got, const float *ref, const double *mass, int m, int n, int k,
                    int64_t ldy, int64_t yrows, memra_format f)
{
    judge jd;
    judge_init(&jd, what, judge_band_kr(k, f != MEMRA_FORMAT_Q6_K), stdout);
    jd.inject = test_inject_fault();
    for (int i = 0; i < m; i++)
        for (int c = 0; c < n; c++) {
            const int64_t e = (int64_t)(i + ROW_OFF) * ldy + c;
            judge_elem(&jd, i, c, got[e], ref[e], mass[(size_t)i * n + c]);
        }
    judge_sentinel_f32(&jd, got, yrows, ldy, ROW_OFF, m, n, -12345.0f);
    printf("    %-30s max normalised %.3g (band %.3g), %llu over, %llu sentinels overwritten  %s\n", what, jd.max_err,
           jd.band, (unsigned long long)jd.bad, (unsigned long long)jd.stray, judge_ok(&jd) ? "ok" : "FAIL");
    return judge_ok(&jd);
}

static int kr_case(memra_format f, int m, int n, int k)
{
    int ok = 1;
    const memra_op op = f == MEMRA_FORMAT_Q4_0 ? MEMRA_OP_gemm_q8_0r : MEMRA_OP_gemm_kr;
    const int64_t ldy = n + 3, yrows = m + ROW_OFF + 1;
    float *x = make_x(m, k);
    size_t wbytes = 0, rbytes = 0;
    uint8_t *w = make_blocks(f, n, k, &wbytes), *rec = operand_of(f, w, n, k, &rbytes);
    if (f != MEMRA_FORMAT_Q4_0 && (rbytes != wbytes || (double)rbytes > 1.1 * (double)wbytes)) {
        printf("  %s: K-packed operand %zu bytes, the GGUF's %zu (the contract: <= 1.1x)  FAIL\n",
               memra_format_name(f), rbytes, wbytes);
        ok = 0;
    }
    memra_buffer *qd = NULL;
    uint8_t *q = quant_both(x, m, k, &qd, &ok);
    memra_buffer *qh = buf(g_host, memra_q8_1_bytes(m, k), q);
    memra_buffer *rd = buf(g_dev, rbytes, rec), *rh = buf(g_host, rbytes, rec);
    float *sent = malloc((size_t)(yrows * ldy) * 4);
    double *mass = malloc((size_t)m * n * sizeof *mass);
    CHECK(sent != NULL && mass != NULL);
    for (int64_t e = 0; e < yrows * ldy; e++) sent[e] = -12345.0f;
    kr_mass_all(f, rec, q, m, n, k, mass);
    memra_buffer *yd = buf(g_dev, (size_t)(yrows * ldy) * 4, sent), *yh = buf(g_host, (size_t)(yrows * ldy) * 4, sent);
    memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = ldy, .y_row_offset = ROW_OFF,
                         .alpha = 1.0f, .w_format = (int32_t)f};
    g.w = memra_buffer_ptr(rh), g.x = memra_buffer_ptr(qh), g.y = memra_buffer_ptr(yh);
    CHECK_OK(call_gemm(g_host, "host", op, &g));
    float *ref = readback(yh, (size_t)(yrows * ldy) * 4);
    printf("  %s %s m=%-5d n=%-5d k=%-5d\n", memra_op_name(op), memra_format_name(f), m, n, k);
    static const struct { const char *bm, *bn, *split; } cfg[] = {
        {NULL, NULL, NULL}, {"128", "128", "1"}, {"64", "128", "3"}, {"128", "96", "1"}, {"64", "96", "16"}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        if (c > 0 && m > 512) break; /* the biggest shape at the launcher's choice only */
        mmq_knobs(cfg[c].bm, cfg[c].bn, cfg[c].split, NULL);
        CHECK_OK(memra_buffer_write(yd, 0, sent, (size_t)(yrows * ldy) * 4));
        g.w = memra_buffer_ptr(rd), g.x = memra_buffer_ptr(qd), g.y = memra_buffer_ptr(yd);
        const uint64_t h0 = memra_ledger_hits(g_dev, op, "mmq");
        CHECK_OK(call_gemm(g_dev, "mmq", op, &g));
        CHECK_OK(memra_device_synchronize(g_dev));
        CHECK(memra_ledger_hits(g_dev, op, "mmq") == h0 + 1);
        float *got = readback(yd, (size_t)(yrows * ldy) * 4);
        char what[80];
        snprintf(what, sizeof what, "%s %sx%s split=%s", memra_format_name(f), cfg[c].bm ? cfg[c].bm : "auto",
                 cfg[c].bn ? cfg[c].bn : "auto", cfg[c].split ? cfg[c].split : "auto");
        ok &= kr_judge(what, got, ref, mass, m, n, k, ldy, yrows, f);
        free(got);
    }
    /* cc 9.x, Q4_K / Q5_K: the seeded warpgroup tile (MEMRA_MMQ_KR_WG=1) against the host, and bit for bit
     * the per-32 records tiles on the sum plane (MEMRA_MMQ_KR_TC=0: the _x tiles), at forced splits (their
     * folds the same FFMAs scaled by 2^-44: mmq.cu r3w_sd_inner, kq_fill); with =mma (the min term by tf32
     * wgmmas a step, about 2^-21 of each min product: inside the band, not bit for bit) against the host; with
     * =pre (=mma's tile on the call's widened image: the same stage bytes) bit for bit =mma, as =pre2 and =pre2 under
     * MEMRA_MMQ_WG_SEED=pin (_wgw2f, the fold pinned behind the s8 wgmma) */
    if (memra_device_caps_get(g_dev)->cc / 10 == 9 && (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K)) {
        static const char *const split[2] = {"1", "3"};
        static const char *const kv[6] = {"0", "1", "mma", "pre", "pre2", "pre2"};
        static const char *const kn[6] = {"0", "1", "mma", "pre", "pre2", "pre2 (SEED=pin)"};
        for (int c = 0; c < 2; c++) {
            float *out[6];
            for (int v = 0; v < 6; v++) {
                g_kr_tc = "0", g_kr_wg = kv[v], g_wg_sd = v == 5 ? "pin" : "1";
                const int refused = g_wg_log.n;
                mmq_knobs("128", "128", split[c], NULL);
                if (g_wg_log.n != refused) {
                    printf("    %s KR_WG=%s: the module loaded without its warpgroup kernel  FAIL\n", memra_format_name(f),
                           kn[v]);
                    ok = 0;
                }
                CHECK_OK(memra_buffer_write(yd, 0, sent, (size_t)(yrows * ldy) * 4));
                g.w = memra_buffer_ptr(rd), g.x = memra_buffer_ptr(qd), g.y = memra_buffer_ptr(yd);
                const int short0 = g_wg_log.n;
                CHECK_OK(call_gemm(g_dev, "mmq", op, &g));
                CHECK_OK(memra_device_synchronize(g_dev));
                if (g_wg_log.n != short0) { /* =pre without its image: the _wgm tile ran, the comparison is moot */
                    printf("    %s KR_WG=%s: the call warned (no scratch for the widened image?)  FAIL\n",
                           memra_format_name(f), kn[v]);
                    ok = 0;
                }
                out[v] = readback(yd, (size_t)(yrows * ldy) * 4);
            }
            g_kr_tc = NULL, g_kr_wg = NULL, g_wg_sd = NULL;
            char what[80];
            snprintf(what, sizeof what, "%s KR_WG=1 split=%s", memra_format_name(f), split[c]);
            ok &= kr_judge(what, out[1], ref, mass, m, n, k, ldy, yrows, f);
            judge jw;
            judge_init(&jw, "gemm_kr warpgroup tile vs the per-32 records tile (element = float)", 0.0, stdout);
            jw.inject = test_inject_fault();
            const uint64_t d = judge_bytes(&jw, (const uint8_t *)out[1], (const uint8_t *)out[0],
                                           (size_t)(yrows * ldy) * 4, 4);
            printf("    %s KR_WG=1 split=%s: %llu of %lld floats differ from the per-32 records tile  %s\n",
                   memra_format_name(f), split[c], (unsigned long long)d, (long long)(yrows * ldy), d ? "FAIL" : "ok");
            ok &= d == 0;
            snprintf(what, sizeof what, "%s KR_WG=mma split=%s", memra_format_name(f), split[c]);
            ok &= kr_judge(what, out[2], ref, mass, m, n, k, ldy, yrows, f);
            for (int v = 3; v < 6; v++) {
                judge jp;
                judge_init(&jp, "gemm_kr warpgroup tile on the widened images vs =mma (element = float)", 0.0, stdout);
                jp.inject = test_inject_fault();
                const uint64_t dp = judge_bytes(&jp, (const uint8_t *)out[v], (const uint8_t *)out[2],
                                                (size_t)(yrows * ldy) * 4, 4);
                printf("    %s KR_WG=%s split=%s: %llu of %lld floats differ from KR_WG=mma  %s\n", memra_format_name(f),
                       kn[v], split[c], (unsigned long long)dp, (long long)(yrows * ldy), dp ? "FAIL" : "ok");
                ok &= dp == 0;
            }
            for (int v = 0; v < 6; v++) free(out[v]);
        }
    }
    mmq_knobs(NULL, NULL, NULL, NULL);
    memra_buffer_destroy(qd), memra_buffer_destroy(qh), memra_buffer_destroy(rd), memra_buffer_destroy(rh);
    memra_buffer_destroy(yd), memra_buffer_destroy(yh);
    free(x), free(w), free(rec), free(q), free(sent), free(mass), free(ref);
    return ok;
}

/* Hits of op on dev by every loaded module. */
static uint64_t hits_all(memra_device *dev, memra_op op)
{
    uint64_t h = 0;
    for (int i = 0; i < memra_module_count(g_rt); i++) {
        memra_module_info mi;
        if (memra_module_info_get(g_rt, i, &mi) == MEMRA_STATUS_OK && mi.loaded) h += memra_ledger_hits(dev, op, mi.name);
    }
    return h;
}

/* memra_matmul at f16 budget 0: prepare makes the operand, matmul runs the
 * floor (ledger: the floor's GEMM by the plan's module, no dequant_f16), the
 * result judged against the host module's op on the test's own operand. */
static int kr_matmul_case(memra_format f, int m, int n, int k)
{
    const memra_op op = f == MEMRA_FORMAT_Q4_0 ? MEMRA_OP_gemm_q8_0r : MEMRA_OP_gemm_kr;
    size_t wbytes = 0, rbytes = 0;
    uint8_t *w = make_blocks(f, n, k, &wbytes), *rec = operand_of(f, w, n, k, &rbytes);
    float *x = make_x(m, k);
    const uint64_t budget0 = memra_device_f16_budget_get(g_dev);
    CHECK_OK(memra_device_f16_budget_set(g_dev, 0));
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = w, .size = wbytes,
                           .name = "kfloor"};
    memra_weight *wt = NULL;
    CHECK_OK(memra_weight_create(g_rt, &d, &wt));
    CHECK_OK(memra_weight_prepare(wt, g_dev));
    const unsigned want = f == MEMRA_FORMAT_Q4_0 ? MEMRA_OPERAND_Q8_0_RECORDS : MEMRA_OPERAND_K_RECORDS;
    int ok = (memra_weight_operands(wt, g_dev) & want) != 0;
    memra_weight_plan plan = {.struct_size = sizeof plan};
    CHECK_OK(memra_weight_plan_get(wt, g_dev, &plan));
    const char *mod = plan.n_steps > 0 ? plan.modules[plan.n_steps - 1] : NULL;
    CHECK(mod != NULL);
    const int64_t ldy = n + 3, yrows = m + ROW_OFF + 1;
    float *sent = malloc((size_t)(yrows * ldy) * 4);
    double *mass = malloc((size_t)m * n * sizeof *mass);
    CHECK(sent != NULL && mass != NULL);
    for (int64_t e = 0; e < yrows * ldy; e++) sent[e] = -12345.0f;
    memra_buffer *xd = buf(g_dev, (size_t)m * k * 4, x), *yd = buf(g_dev, (size_t)(yrows * ldy) * 4, sent);
    const uint64_t h0 = memra_ledger_hits(g_dev, op, mod), dq0 = hits_all(g_dev, MEMRA_OP_dequant_f16);
    memra_matmul_args a = {.struct_size = sizeof a, .x = memra_buffer_ptr(xd), .m = m, .y = memra_buffer_ptr(yd),
                           .ldy = ldy, .y_row_offset = ROW_OFF, .alpha = 1.0f};
    CHECK_OK(memra_matmul_ex(g_dev, wt, &a));
    CHECK_OK(memra_device_synchronize(g_dev));
    const int served = memra_ledger_hits(g_dev, op, mod) == h0 + 1 && hits_all(g_dev, MEMRA_OP_dequant_f16) == dq0;
    float *got = readback(yd, (size_t)(yrows * ldy) * 4);
    const size_t qb = memra_q8_1_bytes(m, k);
    memra_buffer *xh = buf(g_host, (size_t)m * k * 4, x), *qh = buf(g_host, qb, NULL);
    CHECK_OK(call_quant(g_host, "host", xh, m, k, qh));
    uint8_t *q = readback(qh, qb);
    memra_buffer *rh = buf(g_host, rbytes, rec), *yh = buf(g_host, (size_t)(yrows * ldy) * 4, sent);
    memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = ldy, .y_row_offset = ROW_OFF,
                         .alpha = 1.0f, .w_format = (int32_t)f, .w = memra_buffer_ptr(rh), .x = memra_buffer_ptr(qh),
                         .y = memra_buffer_ptr(yh)};
    CHECK_OK(call_gemm(g_host, "host", op, &g));
    float *ref = readback(yh, (size_t)(yrows * ldy) * 4);
    kr_mass_all(f, rec, q, m, n, k, mass);
    char what[80];
    snprintf(what, sizeof what, "memra_matmul %s budget 0", memra_format_name(f));
    ok &= kr_judge(what, got, ref, mass, m, n, k, ldy, yrows, f);
    printf("    %s: lane '%s', %s by %s, no dequant_f16: %s\n", memra_format_name(f), plan.lane, memra_op_name(op),
           mod, served ? "yes" : "NO  FAIL");
    ok &= served;
    CHECK_OK(memra_device_f16_budget_set(g_dev, budget0));
    memra_weight_destroy(wt);
    memra_buffer_destroy(xd), memra_buffer_destroy(yd), memra_buffer_destroy(xh), memra_buffer_destroy(qh);
    memra_buffer_destroy(rh), memra_buffer_destroy(yh);
    free(w), free(rec), free(x), free(sent), free(mass), free(got), free(q), free(ref);
    return ok;
}

static int case_gemm_kr(void)
{
    static const memra_format fm[] = {MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    int ok = 1;
    for (size_t i = 0; i < sizeof fm / sizeof fm[0]; i++) {
        const int q40 = fm[i] == MEMRA_FORMAT_Q4_0;
        ok &= kr_case(fm[i], 1, 1000, q40 ? 1056 : 1280);
        ok &= kr_case(fm[i], 17, 333, q40 ? 800 : 768);
        ok &= kr_case(fm[i], 512, 520, q40 ? 2080 : 2816);
        ok &= kr_case(fm[i], 4096, 100, q40 ? 1312 : 1280);
        ok &= kr_matmul_case(fm[i], 17, 200, q40 ? 800 : 768);
    }
    return ok;
}

/* ---- accprobe ------------------------------------------------------------------------- */

/* Bytes finite and non-NaN read as int8 or as e4m3: magnitude <= 126. */
static uint8_t *probe_bytes(size_t n)
{
    uint8_t *b = malloc(n);
    CHECK(b != NULL);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)((rnd() % 127) | ((rnd() & 1) << 7));
    return b;
}

static int case_accprobe(void)
{
    const int m = 100, n = 300, k = 1024;
    int ok = 1;
    uint8_t *x = probe_bytes((size_t)m * k), *w = probe_bytes((size_t)n * k);
    memra_buffer *xd = buf(g_dev, (size_t)m * k, x), *wd = buf(g_dev, (size_t)n * k, w);
    memra_buffer *xh = buf(g_host, (size_t)m * k, x), *wh = buf(g_host, (size_t)n * k, w);
    memra_buffer *yd = buf(g_dev, (size_t)m * n * 4, NULL), *yh = buf(g_host, (size_t)m * n * 4, NULL);
    for (int arm = 0; arm < 3; arm++) {
        memra_op_args a = {.struct_size = sizeof a, .arm = (memra_accprobe_arm)arm};
        a.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = m, .n = n, .k = k, .ldy = n,
                                   .alpha = 1.0f, .w = memra_buffer_ptr(wd), .x = memra_buffer_ptr(xd),
                                   .y = memra_buffer_ptr(yd)};
        memra_status st = memra_module_call(g_dev, "mmq", MEMRA_OP_accprobe, &a);
        const int sm120 = memra_device_caps_get(g_dev)->cc / 10 == 12;
        if (arm == MEMRA_ACCPROBE_MX && !sm120) {
            printf("  accprobe MX: %s (%s)  %s\n", memra_status_str(st), a.decline_reason ? a.decline_reason : "",
                   st == MEMRA_STATUS_DECLINED ? "ok" : "FAIL");
            ok &= st == MEMRA_STATUS_DECLINED;
            continue;
        }
        CHECK_OK(st);
        CHECK_OK(memra_device_synchronize(g_dev));
        float *got = readback(yd, (size_t)m * n * 4);
        if (arm == MEMRA_ACCPROBE_S32) {
            a.gemm.w = memra_buffer_ptr(wh), a.gemm.x = memra_buffer_ptr(xh), a.gemm.y = memra_buffer_ptr(yh);
            CHECK_OK(memra_module_call(g_host, "host", MEMRA_OP_accprobe, &a));
            float *ref = readback(yh, (size_t)m * n * 4);
            judge jd;
            judge_init(&jd, "accprobe S32", JUDGE_BAND_EXACT_FOLD, stdout);
            jd.inject = test_inject_fault();
            for (int i = 0; i < m * n; i++) judge_elem(&jd, i / n, i % n, got[i], ref[i], 32.0 * 126 * 126 * (k / 32));
            printf("  accprobe S32: max error / (k * 126^2) %.3g  %s\n", jd.max_err, judge_ok(&jd) ? "ok" : "FAIL");
            ok &= judge_ok(&jd);
            free(ref);
        } else {
            int finite = 1;
            for (int i = 0; i < m * n; i++) finite &= isfinite(got[i]) != 0;
            printf("  accprobe %s: output finite: %s\n", arm == 1 ? "F32" : "MX", finite ? "ok" : "FAIL");
            ok &= finite;
        }
        free(got);
    }
    memra_buffer_destroy(xd), memra_buffer_destroy(wd), memra_buffer_destroy(xh), memra_buffer_destroy(wh);
    memra_buffer_destroy(yd), memra_buffer_destroy(yh);
    free(x), free(w);
    return ok;
}

/* ---- gemm_fp8_blk ----------------------------------------------------------------------- */

static uint8_t *make_e4m3(int n, int k)
{
    uint8_t *w = malloc((size_t)n * k);
    CHECK(w != NULL);
    for (size_t i = 0; i < (size_t)n * k; i++) {
        uint8_t b;
        do b = (uint8_t)rnd();
        while ((b & 0x7F) == 0x7F || (b & 0x7F) == 0);
        w[i] = b;
    }
    return w;
}

static float *make_grid(int n, int k, size_t *count)
{
    const int gr = (n + 127) / 128, gc = (k + 127) / 128;
    float *g = malloc((size_t)gr * gc * 4);
    CHECK(g != NULL);
    for (int i = 0; i < gr * gc; i++) g[i] = ldexpf(1.0f + (float)unif(), (int)(rnd() % 13) - 6);
    *count = (size_t)gr * gc;
    return g;
}

/* Compare y (ldy = n) against the host reference on the same inputs. */
static int fp8_compare(const char *what, const float *got, const float *ref, const float *x, const uint8_t *w,
                       const float *grid, int m, int n, int k)
{
    const int nkb = (k + 127) / 128;
    judge jd;
    /* cc 9.0 runs the wgmma kernel unless MEMRA_FP8BLK_WGMMA=0: its block is four
     * chained wgmmas in Hopper's FP8 accumulator, which an H200 run measured at
     * 2.93e-4 normalised (m=4096 n=136 k=2064), past 4 x 2^-14: that accumulator
     * keeps 13 bits, not 14, the derivation of JUDGE_BAND_FP8 (tools/judge.h) */
    const char *wk = getenv("MEMRA_FP8BLK_WGMMA");
    const int wgmma = memra_device_caps_get(g_dev)->cc == 90 && !(wk != NULL && strcmp(wk, "0") == 0);
    judge_init(&jd, what, wgmma ? JUDGE_BAND_FP8 : JUDGE_BAND_FP8_MMA, stdout);
    jd.inject = test_inject_fault();
    float *q = malloc((size_t)k * 4), *s = malloc((size_t)nkb * 4);
    CHECK(q != NULL && s != NULL);
    for (int i = 0; i < m; i++) {
        for (int b = 0; b < nkb; b++) { /* the host quantiser, to size each term */
            const int c0 = b * 128, len = k - c0 < 128 ? k - c0 : 128;
            float amax = 0;
            for (int c = 0; c < len; c++) amax = fabsf(x[(size_t)i * k + c0 + c]) > amax ? fabsf(x[(size_t)i * k + c0 + c]) : amax;
            s[b] = amax == 0 ? 1.0f : amax / 448.0f;
            for (int c = 0; c < len; c++) q[c0 + c] = memra_e4m3_decode(memra_e4m3_encode(x[(size_t)i * k + c0 + c] / s[b]));
        }
        for (int j = 0; j < n; j++) {
            double sabs = 0;
            for (int b = 0; b < nkb; b++) {
                const int c0 = b * 128, len = k - c0 < 128 ? k - c0 : 128;
                double t = 0;
                for (int c = 0; c < len; c++) t += fabs((double)q[c0 + c] * memra_e4m3_decode(w[(size_t)j * k + c0 + c]));
                sabs += fabs((double)s[b] * grid[(j / 128) * nkb + b]) * t;
            }
            const size_t e = (size_t)i * n + j;
            judge_elem(&jd, i, j, got[e], ref[e], sabs);
        }
    }
    const int ok = judge_ok(&jd);
    printf("  %s m=%-5d n=%-5d k=%-5d: max normalised %.3g (band %.3g), rel Frobenius %.3g  %s\n", what, m, n, k,
           jd.max_err, jd.band, judge_rel_fro(&jd), ok ? "ok" : "FAIL");
    free(q), free(s);
    return ok;
}

static int fp8_case(int m, int n, int k)
{
    float *x = make_x(m, k);
    uint8_t *w = make_e4m3(n, k);
    size_t gc;
    float *grid = make_grid(n, k, &gc);
    memra_buffer *xd = buf(g_dev, (size_t)m * k * 4, x), *xh = buf(g_host, (size_t)m * k * 4, x);
    memra_buffer *wd = buf(g_dev, (size_t)n * k, w), *wh = buf(g_host, (size_t)n * k, w);
    memra_buffer *gd = buf(g_dev, gc * 4, grid), *gh = buf(g_host, gc * 4, grid);
    memra_buffer *yd = buf(g_dev, (size_t)m * n * 4, NULL), *yh = buf(g_host, (size_t)m * n * 4, NULL);
    memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = n, .alpha = 1.0f, .w_scale = 1.0f};
    g.w = memra_buffer_ptr(wd), g.x = memra_buffer_ptr(xd), g.y = memra_buffer_ptr(yd), g.w_scale_grid = memra_buffer_ptr(gd);
    CHECK_OK(call_gemm(g_dev, "fp8blk", MEMRA_OP_gemm_fp8_blk, &g));
    g.w = memra_buffer_ptr(wh), g.x = memra_buffer_ptr(xh), g.y = memra_buffer_ptr(yh), g.w_scale_grid = memra_buffer_ptr(gh);
    CHECK_OK(call_gemm(g_host, "host", MEMRA_OP_gemm_fp8_blk, &g));
    CHECK_OK(memra_device_synchronize(g_dev));
    float *got = readback(yd, (size_t)m * n * 4), *ref = readback(yh, (size_t)m * n * 4);
    const int ok = fp8_compare("gemm_fp8_blk (fp8blk)", got, ref, x, w, grid, m, n, k);
    memra_buffer_destroy(xd), memra_buffer_destroy(xh), memra_buffer_destroy(wd), memra_buffer_destroy(wh);
    memra_buffer_destroy(gd), memra_buffer_destroy(gh), memra_buffer_destroy(yd), memra_buffer_destroy(yh);
    free(x), free(w), free(grid), free(got), free(ref);
    return ok;
}

static int case_fp8blk(void)
{
    int ok = 1;
    ok &= fp8_case(1, 300, 272);
    ok &= fp8_case(16, 1000, 5120);
    ok &= fp8_case(17, 200, 1040);
    ok &= fp8_case(512, 1024, 5120);
    ok &= fp8_case(4096, 136, 2064);
    /* declines: in_f % 16 */
    memra_gemm_args g = {.struct_size = sizeof g, .m = 4, .n = 8, .k = 264, .ldy = 8, .alpha = 1.0f};
    memra_buffer *b = buf(g_dev, 1 << 16, NULL);
    g.w = g.x = g.y = g.w_scale_grid = memra_buffer_ptr(b);
    memra_op_args a = {.struct_size = sizeof a, .gemm = g};
    memra_status st = memra_module_call(g_dev, "fp8blk", MEMRA_OP_gemm_fp8_blk, &a);
    printf("  gemm_fp8_blk k=264: %s (%s)  %s\n", memra_status_str(st), a.decline_reason ? a.decline_reason : "",
           st == MEMRA_STATUS_DECLINED ? "ok" : "FAIL");
    ok &= st == MEMRA_STATUS_DECLINED;
    memra_buffer_destroy(b);
    return ok;
}

/* ---- the one-pass quantisers at a given scale ------------------------------------ */

/* Every module on the device that serves gemm_fp8 / gemm_fp8_blk, against the
 * host module, on an identity weight (w[j][j] = 1.0, grid 1, w_scale 1), so
 * y[i][j] = s * dec(q[i][j]): one exact product, scaled once. The quantised
 * activation is then visible in y, and the lanes must give the host's bits
 * (at most 1 ulp for a cuBLASLt epilogue that might scale in another order;
 * one e4m3 code apart is >= 2^-4 relative), for the own amax pass, a static
 * scale at 60% of the batch's amax / 448 (its top values saturate), and
 * producer maxima (per tensor 75% of the amax; block: 80% of each (row,
 * 128) block's, row 0's first block 0 = scale 1, [ceil(k/128) x m] row
 * fastest); and a static scale so far below the values (mode 3) that their quotient
 * overflows f32. */
static int given_case(memra_op op, int m, int k, int mode)
{
    const int n = k, kb = (k + 127) / 128;
    float *x = make_x(m, k);
    /* mode 3: a static scale of 2^-96 under values near 2^40, so x / s overflows f32 (the quotient the
     * reciprocal sequence would turn into inf - inf = NaN): every such value must saturate as the host's */
    for (int e = 0; mode == 3 && e < m * k; e++) x[e] *= 0x1p40f;
    uint8_t *w = calloc((size_t)n * k, 1);
    float *grid = malloc((size_t)kb * kb * sizeof(float)), *amax = malloc((size_t)kb * m * sizeof(float));
    CHECK(w != NULL && grid != NULL && amax != NULL);
    for (int j = 0; j < n; j++) w[(size_t)j * k + j] = 0x38; /* 1.0 */
    for (int e = 0; e < kb * kb; e++) grid[e] = 1.0f;
    float t = 0.0f;
    for (int e = 0; e < m * k; e++) t = fmaxf(t, fabsf(x[e]));
    const float xs = mode == 1 ? t / 448.0f * 0.6f : mode == 3 ? 0x1p-96f : 0.0f;
    const int na = op == MEMRA_OP_gemm_fp8 ? 1 : kb * m;
    if (op == MEMRA_OP_gemm_fp8) {
        amax[0] = t * 0.75f;
    } else {
        for (int i = 0; i < m; i++)
            for (int b = 0; b < kb; b++) {
                float bm = 0.0f;
                for (int c = b * 128; c < k && c < b * 128 + 128; c++) bm = fmaxf(bm, fabsf(x[(size_t)i * k + c]));
                amax[b * m + i] = i == 0 && b == 0 ? 0.0f : bm * 0.8f;
            }
    }
    const char *mname[] = {"own amax", "x_scale", "x_amax", "x_sc ovf"};
    memra_buffer *xh = buf(g_host, (size_t)m * k * 4, x), *wh = buf(g_host, (size_t)n * k, w);
    memra_buffer *gh = buf(g_host, (size_t)kb * kb * 4, grid), *ah = buf(g_host, (size_t)na * 4, amax);
    memra_buffer *yh = buf(g_host, (size_t)m * n * 4, NULL);
    memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = n, .alpha = 1.0f, .w_scale = 1.0f,
                         .x_scale = xs};
    g.w = memra_buffer_ptr(wh), g.x = memra_buffer_ptr(xh), g.y = memra_buffer_ptr(yh);
    g.w_scale_grid = op == MEMRA_OP_gemm_fp8_blk ? memra_buffer_ptr(gh) : 0;
    g.x_amax = mode == 2 ? memra_buffer_ptr(ah) : 0;
    CHECK_OK(call_gemm(g_host, "host", op, &g));
    float *ref = readback(yh, (size_t)m * n * 4);
    int ok = 1, ran = 0;
    for (int mi = 0; mi < memra_module_count(g_rt); mi++) {
        memra_module_info info;
        CHECK_OK(memra_module_info_get(g_rt, mi, &info));
        if (!info.loaded || strcmp(info.name, "host") == 0 || !memra_module_provides(g_dev, info.name, op)) continue;
        memra_buffer *xd = buf(g_dev, (size_t)m * k * 4, x), *wd = buf(g_dev, (size_t)n * k, w);
        memra_buffer *gd = buf(g_dev, (size_t)kb * kb * 4, grid), *ad = buf(g_dev, (size_t)na * 4, amax);
        memra_buffer *yd = buf(g_dev, (size_t)m * n * 4, NULL);
        g.w = memra_buffer_ptr(wd), g.x = memra_buffer_ptr(xd), g.y = memra_buffer_ptr(yd);
        g.w_scale_grid = op == MEMRA_OP_gemm_fp8_blk ? memra_buffer_ptr(gd) : 0;
        g.x_amax = mode == 2 ? memra_buffer_ptr(ad) : 0;
        const memra_status st = call_gemm(g_dev, info.name, op, &g);
        if (st == MEMRA_STATUS_OK) {
            CHECK_OK(memra_device_synchronize(g_dev));
            float *got = readback(yd, (size_t)m * n * 4);
            uint64_t exact = 0, bad = 0, sat = 0;
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    const size_t e = (size_t)i * n + j;
                    int32_t a, b;
                    memcpy(&a, &got[e], 4);
                    memcpy(&b, &ref[e], 4);
                    /* +0 and -0 are one value (a zero code's sign may fold either way in a sum) */
                    const int64_t d = got[e] == ref[e] ? 0 : (int64_t)a - (int64_t)b;
                    exact += d == 0;
                    if (d > 1 || d < -1) {
                        if (bad < 5)
                            printf("    %s %s [%d,%d]: got %.9g, host %.9g (x %.9g)\n", info.name, mname[mode], i, j,
                                   (double)got[e], (double)ref[e], (double)x[(size_t)i * k + j]);
                        bad++;
                    }
                }
            for (int e = 0; mode == 1 && e < m * k; e++) sat += fabsf(x[e]) > 448.0f * xs;
            printf("  %-12s %-9s %-8s m=%-4d k=%-5d: %llu of %d bit-identical, %llu beyond 1 ulp%s  %s\n",
                   memra_op_name(op), info.name, mname[mode], m, k, (unsigned long long)exact, m * n,
                   (unsigned long long)bad, mode == 1 ? "" : "", bad ? "FAIL" : "ok");
            if (mode == 1 && sat == 0) printf("    (no value saturated)\n");
            ok &= bad == 0;
            ran++;
            free(got);
        } else if (st != MEMRA_STATUS_DECLINED) {
            printf("  %s %s %s: %s: %s  FAIL\n", memra_op_name(op), info.name, mname[mode], memra_status_str(st),
                   memra_last_error());
            ok = 0;
        }
        memra_buffer_destroy(xd), memra_buffer_destroy(wd), memra_buffer_destroy(gd), memra_buffer_destroy(ad);
        memra_buffer_destroy(yd);
    }
    if (ran == 0) printf("  %s %s: no GPU module served it\n", memra_op_name(op), mname[mode]);
    memra_buffer_destroy(xh), memra_buffer_destroy(wh), memra_buffer_destroy(gh), memra_buffer_destroy(ah);
    memra_buffer_destroy(yh);
    free(x), free(w), free(grid), free(amax), free(ref);
    return ok;
}

static int case_fp8given(void)
{
    static const int shapes[][2] = {{33, 384}, {5, 272}, {512, 1024}, {1, 128}};
    int ok = 1;
    for (int op = 0; op < 2; op++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int mode = 0; mode < 4; mode++)
                ok &= given_case(op ? MEMRA_OP_gemm_fp8_blk : MEMRA_OP_gemm_fp8, shapes[s][0], shapes[s][1], mode);
    return ok;
}

/* Through the dispatcher with MEMRA_PREFER=gemm_fp8_blk=fp8blk (set by ctest). */
static int case_prefer(void)
{
    const int m = 33, n = 260, k = 1040;
    const char *names[8];
    const int nr = memra_routing_get(g_dev, MEMRA_OP_gemm_fp8_blk, names, 8);
    printf("  gemm_fp8_blk routing:");
    for (int i = 0; i < nr && i < 8; i++) printf(" %s", names[i]);
    printf("\n");
    float *x = make_x(m, k);
    uint8_t *w = make_e4m3(n, k);
    size_t gc;
    float *grid = make_grid(n, k, &gc);
    memra_weight_desc wdsc = {.struct_size = sizeof wdsc, .format = MEMRA_FORMAT_E4M3, .out_f = n, .in_f = k,
                              .data = w, .size = (size_t)n * k, .scale = 1.0f, .grid = grid, .grid_count = gc,
                              .name = "prefer"};
    memra_weight *wt = NULL;
    CHECK_OK(memra_weight_create(g_rt, &wdsc, &wt));
    CHECK_OK(memra_weight_prepare(wt, g_dev));
    memra_buffer *xd = buf(g_dev, (size_t)m * k * 4, x), *yd = buf(g_dev, (size_t)m * n * 4, NULL);
    memra_ledger_reset(g_rt);
    CHECK_OK(memra_matmul(g_dev, wt, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), NULL));
    CHECK_OK(memra_device_synchronize(g_dev));
    const uint64_t hits = memra_ledger_hits(g_dev, MEMRA_OP_gemm_fp8_blk, "fp8blk");
    printf("  ledger: gemm_fp8_blk hits on fp8blk = %llu\n", (unsigned long long)hits);
    memra_buffer *xh = buf(g_host, (size_t)m * k * 4, x), *wh = buf(g_host, (size_t)n * k, w);
    memra_buffer *gh = buf(g_host, gc * 4, grid), *yh = buf(g_host, (size_t)m * n * 4, NULL);
    memra_gemm_args g = {.struct_size = sizeof g, .m = m, .n = n, .k = k, .ldy = n, .alpha = 1.0f, .w_scale = 1.0f,
                         .w = memra_buffer_ptr(wh), .x = memra_buffer_ptr(xh), .y = memra_buffer_ptr(yh),
                         .w_scale_grid = memra_buffer_ptr(gh)};
    CHECK_OK(call_gemm(g_host, "host", MEMRA_OP_gemm_fp8_blk, &g));
    float *got = readback(yd, (size_t)m * n * 4), *ref = readback(yh, (size_t)m * n * 4);
    int ok = fp8_compare("memra_matmul (preferred fp8blk)", got, ref, x, w, grid, m, n, k) && hits == 1;
    memra_weight_destroy(wt);
    memra_buffer_destroy(xd), memra_buffer_destroy(yd), memra_buffer_destroy(xh), memra_buffer_destroy(wh);
    memra_buffer_destroy(gh), memra_buffer_destroy(yh);
    free(x), free(w), free(grid), free(got), free(ref);
    return ok;
}

/* ---- bench ---------------------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { ARM_QUANT, ARM_GEMM, ARM_BOTH, ARM_S32, ARM_F32, ARM_COUNT };

static int case_bench(void)
{
    const int n = 12288, k = 5120, reps = 15;
    static const char *const arm_names[ARM_COUNT] = {"quant_q8_1", "gemm_q8_0", "quant+gemm", "accprobe S32",
                                                     "accprobe F32"};
    uint8_t *w = make_q8_0(n, k);
    uint8_t *pw = probe_bytes((size_t)n * k);
    memra_buffer *wd = buf(g_dev, (size_t)n * (k / 32) * MEMRA_Q8_0_BYTES, w), *pwd = buf(g_dev, (size_t)n * k, pw);
    memra_timer *t = NULL;
    CHECK_OK(memra_timer_create(g_dev, &t));
    for (int mi = 0; mi < 2; mi++) {
        const int m = mi ? 4096 : 512;
        float *x = make_x(m, k);
        uint8_t *px = probe_bytes((size_t)m * k);
        memra_buffer *xd = buf(g_dev, (size_t)m * k * 4, x), *qd = buf(g_dev, memra_q8_1_bytes(m, k), NULL);
        memra_buffer *pxd = buf(g_dev, (size_t)m * k, px), *yd = buf(g_dev, (size_t)m * n * 4, NULL);
        memra_op_args qa = {.struct_size = sizeof qa, .src = memra_buffer_ptr(xd), .dst = memra_buffer_ptr(qd),
                            .rows = m, .cols = k};
        memra_op_args ga = {.struct_size = sizeof ga};
        ga.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = m, .n = n, .k = k, .ldy = n,
                                    .alpha = 1.0f, .w = memra_buffer_ptr(wd), .x = memra_buffer_ptr(qd),
                                    .y = memra_buffer_ptr(yd)};
        memra_op_args pa = ga;
        pa.gemm.w = memra_buffer_ptr(pwd), pa.gemm.x = memra_buffer_ptr(pxd);
        double ms[ARM_COUNT][32];
        for (int r = -2; r < reps; r++) { /* two warm-up rounds */
            for (int arm = 0; arm < ARM_COUNT; arm++) {
                CHECK_OK(memra_timer_start(t, NULL));
                if (arm == ARM_QUANT || arm == ARM_BOTH) CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_quant_q8_1, &qa));
                if (arm == ARM_GEMM || arm == ARM_BOTH) CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_gemm_q8_0, &ga));
                if (arm == ARM_S32 || arm == ARM_F32) {
                    pa.arm = arm == ARM_S32 ? MEMRA_ACCPROBE_S32 : MEMRA_ACCPROBE_F32;
                    CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_accprobe, &pa));
                }
                CHECK_OK(memra_timer_stop(t, NULL));
                double e = 0;
                CHECK_OK(memra_timer_elapsed_ms(t, &e));
                if (r >= 0) ms[arm][r] = e;
            }
        }
        const double flop = 2.0 * m * n * k;
        double med[ARM_COUNT];
        for (int arm = 0; arm < ARM_COUNT; arm++) {
            med[arm] = median(ms[arm], reps);
            printf("BENCH m=%-5d %d->%d  %-13s %8.4f ms  %7.1f TFLOP/s\n", m, k, n, arm_names[arm], med[arm],
                   arm == ARM_QUANT ? 0.0 : flop / med[arm] * 1e-9);
        }
        printf("BENCH m=%-5d accprobe f32acc/s32acc time ratio %.3f (%+.1f pp)\n", m, med[ARM_F32] / med[ARM_S32],
               100.0 * (med[ARM_F32] / med[ARM_S32] - 1.0));
        memra_buffer_destroy(xd), memra_buffer_destroy(qd), memra_buffer_destroy(pxd), memra_buffer_destroy(yd);
        free(x), free(px);
    }
    memra_timer_destroy(t);
    memra_buffer_destroy(wd), memra_buffer_destroy(pwd);
    free(w), free(pw);
    return 1;
}

/* The floor's operands for one timing shape: fresh x [m x k] and a Q8_0
 * weight [n x k] on the device, the weight's records made by repack_q8_0,
 * room for the q8_1 records and y; qa quantises x, ga runs the GEMM on the
 * records (set ga.gemm.w to wd's blocks for gemm_q8_0). */
typedef struct floor_case {
    float *x;
    uint8_t *w;
    memra_buffer *wd, *rd, *xd, *qd, *yd;
    memra_op_args qa, ga;
} floor_case;

static void floor_case_make(floor_case *f, int m, int n, int k)
{
    f->x = make_x(m, k);
    f->w = make_q8_0(n, k);
    f->wd = buf(g_dev, (size_t)n * (k / 32) * MEMRA_Q8_0_BYTES, f->w);
    f->rd = buf(g_dev, memra_q8_0r_bytes(n, k), NULL);
    f->xd = buf(g_dev, (size_t)m * k * 4, f->x);
    f->qd = buf(g_dev, memra_q8_1_bytes(m, k), NULL);
    f->yd = buf(g_dev, (size_t)m * n * 4, NULL);
    memra_op_args ra = {.struct_size = sizeof ra, .src = memra_buffer_ptr(f->wd), .rows = n, .cols = k,
                        .dst = memra_buffer_ptr(f->rd)};
    CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_repack_q8_0, &ra));
    f->qa = (memra_op_args){.struct_size = sizeof f->qa, .src = memra_buffer_ptr(f->xd), .dst = memra_buffer_ptr(f->qd),
                            .rows = m, .cols = k};
    CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_quant_q8_1, &f->qa));
    f->ga = (memra_op_args){.struct_size = sizeof f->ga};
    f->ga.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = m, .n = n, .k = k, .ldy = n,
                                   .alpha = 1.0f, .w = memra_buffer_ptr(f->rd), .x = memra_buffer_ptr(f->qd),
                                   .y = memra_buffer_ptr(f->yd)};
}

static void floor_case_free(floor_case *f)
{
    memra_buffer_destroy(f->wd), memra_buffer_destroy(f->rd), memra_buffer_destroy(f->xd);
    memra_buffer_destroy(f->qd), memra_buffer_destroy(f->yd);
    free(f->x), free(f->w);
}

/* Not a test: gemm_q8_0 (blocks) against gemm_q8_0r (records) at the launcher's
 * choice and at every forced tile x split count, on the 27b sheet at m = 512
 * and 4096, arms interleaved per repetition, medians; each arm's time is that
 * of SWEEP_BATCH calls back to back over SWEEP_BATCH, so the host's launch
 * time hides behind the GPU's as in a prefill. One SWEEP line per shape,
 * one SWEEPJSON line per shape with every arm. For tuning the launcher's plan.
 * `sweep M SHAPE` runs only m = M and the sheet's shape SHAPE (0..5). */
#define SWEEP_BATCH 4
static int case_sweep(int only_m, int only_shape)
{
    static const int shapes[6][2] = {{5120, 12288}, {5120, 1024}, {6144, 5120},
                                     {5120, 17408}, {17408, 5120}, {5120, 5120}};
    static const char *const tiles[4][2] = {{"128", "128"}, {"64", "128"}, {"128", "96"}, {"64", "96"}};
    static const char *const splits[6] = {"1", "2", "3", "4", "5", "6"};
    enum { S_QUANT, S_V2, S_AUTO, S_CFG0, S_ARMS = S_CFG0 + 24 };
    const int narms = S_ARMS, reps = 7;
    memra_timer *t = NULL;
    CHECK_OK(memra_timer_create(g_dev, &t));
    for (int mi = 0; mi < 2; mi++) {
        const int m = mi ? 4096 : 512;
        if (only_m > 0 && m != only_m) continue;
        for (int si = 0; si < 6; si++) {
            if (only_shape >= 0 && si != only_shape) continue;
            const int k = shapes[si][0], n = shapes[si][1];
            floor_case f;
            floor_case_make(&f, m, n, k);
            double ms[S_ARMS][16];
            for (int r = -1; r < reps; r++)
                for (int i = 0; i < narms; i++) {
                    const int a = (i + (r < 0 ? 0 : r)) % narms;
                    /* the forced tiles are the records tiles' (MEMRA_MMQ_WG=0); the launcher's choice keeps
                     * the environment's MEMRA_MMQ_WG (default auto) */
                    g_wg = a >= S_CFG0 ? "0" : NULL;
                    if (a >= S_CFG0)
                        mmq_knobs(tiles[(a - S_CFG0) / 6][0], tiles[(a - S_CFG0) / 6][1], splits[(a - S_CFG0) % 6],
                                  NULL);
                    else
                        mmq_knobs(NULL, NULL, NULL, NULL);
                    g_wg = NULL;
                    f.ga.gemm.w = memra_buffer_ptr(a == S_V2 ? f.wd : f.rd);
                    CHECK_OK(memra_timer_start(t, NULL));
                    for (int b = 0; b < SWEEP_BATCH; b++) {
                        if (a == S_QUANT) CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_quant_q8_1, &f.qa));
                        else
                            CHECK_OK(memra_module_call(g_dev, "mmq",
                                                       a == S_V2 ? MEMRA_OP_gemm_q8_0 : MEMRA_OP_gemm_q8_0r, &f.ga));
                    }
                    CHECK_OK(memra_timer_stop(t, NULL));
                    double e = 0;
                    CHECK_OK(memra_timer_elapsed_ms(t, &e));
                    if (r >= 0) ms[a][r] = e / SWEEP_BATCH;
                }
            mmq_knobs(NULL, NULL, NULL, NULL);
            const double flop = 2.0 * m * n * k;
            printf("SWEEPJSON {\"m\":%d,\"in_f\":%d,\"out_f\":%d,\"batch\":%d,\"median_ms\":{", m, k, n, SWEEP_BATCH);
            double best = 1e30;
            int best_a = S_AUTO;
            char names[S_ARMS][32];
            for (int a = 0; a < narms; a++) {
                const double md = median(ms[a], reps);
                char *name = names[a];
                if (a == S_QUANT) snprintf(name, 32, "quant_q8_1");
                else if (a == S_V2) snprintf(name, 32, "gemm_q8_0");
                else if (a == S_AUTO) snprintf(name, 32, "gemm_q8_0r");
                else
                    snprintf(name, 32, "r_%sx%s_s%s", tiles[(a - S_CFG0) / 6][0], tiles[(a - S_CFG0) / 6][1],
                             splits[(a - S_CFG0) % 6]);
                printf("%s\"%s\":%.5f", a ? "," : "", name, md);
                if (a >= S_AUTO && md < best) best = md, best_a = a;
                ms[a][15] = md;
            }
            printf("}}\n");
            const double q = ms[S_QUANT][15], v2 = ms[S_V2][15], au = ms[S_AUTO][15];
            printf("SWEEP m=%-4d %5d->%-5d quant %.4f ms | v2 %.4f (%5.1f TF, with quant %5.1f) | q8_0r auto %.4f (%5.1f "
                   "TF, with quant %5.1f) | best %s %.4f (%5.1f TF)\n",
                   m, k, n, q, v2, flop / v2 * 1e-9, flop / (v2 + q) * 1e-9, au, flop / au * 1e-9,
                   flop / (au + q) * 1e-9, names[best_a], best, flop / best * 1e-9);
            floor_case_free(&f);
        }
    }
    memra_timer_destroy(t);
    return 1;
}

/* Not a test: gemm_kr on K records of FORMAT (q4_k, q5_k or q6_k) at the
 * launcher's choice and at every forced tile x split count (1..6), on the 27b
 * sheet at m = 512 and 4096, arms interleaved per repetition, medians of
 * SWEEP_BATCH calls back to back; one KSWEEP line and one KSWEEPJSON line
 * per shape. For fitting gemm_kr's own plan constants (it uses gemm_q8_0r's).
 * `sweep_kr FORMAT M SHAPE` narrows it. */
static int case_sweep_kr(const char *fmt_name, int only_m, int only_shape)
{
    memra_format f = MEMRA_FORMAT_Q4_K;
    if (fmt_name && strcmp(fmt_name, "q5_k") == 0) f = MEMRA_FORMAT_Q5_K;
    if (fmt_name && strcmp(fmt_name, "q6_k") == 0) f = MEMRA_FORMAT_Q6_K;
    static const int shapes[6][2] = {{5120, 12288}, {5120, 1024}, {6144, 5120},
                                     {5120, 17408}, {17408, 5120}, {5120, 5120}};
    static const char *const tiles[4][2] = {{"128", "128"}, {"64", "128"}, {"128", "96"}, {"64", "96"}};
    static const char *const splits[6] = {"1", "2", "3", "4", "5", "6"};
    enum { K_AUTO, K_CFG0, K_ARMS = K_CFG0 + 24 };
    const int reps = 7;
    memra_timer *t = NULL;
    CHECK_OK(memra_timer_create(g_dev, &t));
    for (int mi = 0; mi < 2; mi++) {
        const int m = mi ? 4096 : 512;
        if (only_m > 0 && m != only_m) continue;
        for (int si = 0; si < 6; si++) {
            if (only_shape >= 0 && si != only_shape) continue;
            const int k = shapes[si][0], n = shapes[si][1];
            size_t wb = 0, rb = 0;
            uint8_t *w = make_blocks(f, n, k, &wb), *rec = operand_of(f, w, n, k, &rb);
            float *x = make_x(m, k);
            memra_buffer *rd = buf(g_dev, rb, rec), *xd = buf(g_dev, (size_t)m * k * 4, x);
            memra_buffer *qd = buf(g_dev, memra_q8_1_bytes(m, k), NULL), *yd = buf(g_dev, (size_t)m * n * 4, NULL);
            memra_op_args qa = {.struct_size = sizeof qa, .src = memra_buffer_ptr(xd), .dst = memra_buffer_ptr(qd),
                                .rows = m, .cols = k};
            CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_quant_q8_1, &qa));
            memra_op_args ga = {.struct_size = sizeof ga};
            ga.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = m, .n = n, .k = k, .ldy = n,
                                        .alpha = 1.0f, .w = memra_buffer_ptr(rd), .x = memra_buffer_ptr(qd),
                                        .y = memra_buffer_ptr(yd), .w_format = (int32_t)f};
            double ms[K_ARMS][16];
            for (int r = -1; r < reps; r++)
                for (int i = 0; i < K_ARMS; i++) {
                    const int a = (i + (r < 0 ? 0 : r)) % K_ARMS;
                    if (a >= K_CFG0)
                        mmq_knobs(tiles[(a - K_CFG0) / 6][0], tiles[(a - K_CFG0) / 6][1], splits[(a - K_CFG0) % 6],
                                  NULL);
                    else
                        mmq_knobs(NULL, NULL, NULL, NULL);
                    CHECK_OK(memra_timer_start(t, NULL));
                    for (int b = 0; b < SWEEP_BATCH; b++) CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_gemm_kr, &ga));
                    CHECK_OK(memra_timer_stop(t, NULL));
                    double e = 0;
                    CHECK_OK(memra_timer_elapsed_ms(t, &e));
                    if (r >= 0) ms[a][r] = e / SWEEP_BATCH;
                }
            mmq_knobs(NULL, NULL, NULL, NULL);
            const double flop = 2.0 * m * n * k;
            printf("KSWEEPJSON {\"format\":\"%s\",\"m\":%d,\"in_f\":%d,\"out_f\":%d,\"batch\":%d,\"median_ms\":{",
                   memra_format_name(f), m, k, n, SWEEP_BATCH);
            double best = 1e30, au = 0;
            int best_a = K_AUTO;
            char names[K_ARMS][32];
            for (int a = 0; a < K_ARMS; a++) {
                const double md = median(ms[a], reps);
                if (a == K_AUTO) snprintf(names[a], 32, "gemm_kr"), au = md;
                else
                    snprintf(names[a], 32, "kr_%sx%s_s%s", tiles[(a - K_CFG0) / 6][0], tiles[(a - K_CFG0) / 6][1],
                             splits[(a - K_CFG0) % 6]);
                printf("%s\"%s\":%.5f", a ? "," : "", names[a], md);
                if (md < best) best = md, best_a = a;
            }
            printf("}}\n");
            printf("KSWEEP %s m=%-4d %5d->%-5d auto %.4f ms (%5.1f TF) | best %s %.4f ms (%5.1f TF)\n",
                   memra_format_name(f), m, k, n, au, flop / au * 1e-9, names[best_a], best, flop / best * 1e-9);
            memra_buffer_destroy(rd), memra_buffer_destroy(xd), memra_buffer_destroy(qd), memra_buffer_destroy(yd);
            free(w), free(rec), free(x);
        }
    }
    memra_timer_destroy(t);
    return 1;
}

/* Not a test: quant_q8_1 + gemm_q8_0r (the floor's two calls, as memra_matmul
 * makes them) with the GEMM and the split-k sum launched as programmatic
 * dependents (the default) against plain launches (MEMRA_MMQ_PDL=0), on the
 * 27b sheet at m = M (default 512): each call alone between two events, and
 * SWEEP_BATCH calls back to back; the four arms interleaved per repetition,
 * medians, ratio plain / pdl. One PDL line per shape. */
static int case_pdl(int m)
{
    static const int shapes[6][2] = {{5120, 12288}, {5120, 1024}, {6144, 5120},
                                     {5120, 17408}, {17408, 5120}, {5120, 5120}};
    enum { A_PDL1, A_PLAIN1, A_PDLB, A_PLAINB, A_N };
    const int reps = 15;
    memra_timer *t = NULL;
    CHECK_OK(memra_timer_create(g_dev, &t));
    if (m <= 0) m = 512;
    for (int si = 0; si < 6; si++) {
        const int k = shapes[si][0], n = shapes[si][1];
        floor_case f;
        floor_case_make(&f, m, n, k);
        memra_op_args *qa = &f.qa, *ga = &f.ga;
        double ms[A_N][16];
        for (int r = -1; r < reps; r++)
            for (int i = 0; i < A_N; i++) {
                const int a = (i + (r < 0 ? 0 : r)) % A_N, calls = a >= A_PDLB ? SWEEP_BATCH : 1;
                mmq_knobs(NULL, NULL, NULL, (a == A_PLAIN1 || a == A_PLAINB) ? "0" : NULL);
                CHECK_OK(memra_timer_start(t, NULL));
                for (int b = 0; b < calls; b++) {
                    CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_quant_q8_1, qa));
                    CHECK_OK(memra_module_call(g_dev, "mmq", MEMRA_OP_gemm_q8_0r, ga));
                }
                CHECK_OK(memra_timer_stop(t, NULL));
                double e = 0;
                CHECK_OK(memra_timer_elapsed_ms(t, &e));
                if (r >= 0) ms[a][r] = e / calls;
            }
        /* the host's time per call: 64 calls of each op queued without a wait (far
         * below the launch queue's depth), CPU clock, PDL on then off */
        double host_us[2][2];
        for (int pl = 0; pl < 2; pl++) {
            mmq_knobs(NULL, NULL, NULL, pl ? "0" : NULL);
            for (int op = 0; op < 2; op++) {
                CHECK_OK(memra_device_synchronize(g_dev));
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                for (int b = 0; b < 64; b++)
                    CHECK_OK(memra_module_call(g_dev, "mmq", op ? MEMRA_OP_gemm_q8_0r : MEMRA_OP_quant_q8_1,
                                               op ? ga : qa));
                clock_gettime(CLOCK_MONOTONIC, &t1);
                host_us[pl][op] = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3) / 64;
            }
        }
        CHECK_OK(memra_device_synchronize(g_dev));
        mmq_knobs(NULL, NULL, NULL, NULL);
        printf("PDLHOST m=%-4d %5d->%-5d host us per call: quant %.2f, gemm_q8_0r %.2f (pdl) / %.2f (plain)\n", m, k, n,
               host_us[0][0], host_us[0][1], host_us[1][1]);
        double md[A_N];
        for (int a = 0; a < A_N; a++) md[a] = median(ms[a], reps);
        const double flop = 2.0 * m * n * k;
        printf("PDL m=%-4d %5d->%-5d each call: pdl %.4f ms (%5.1f TF) plain %.4f ms (%5.1f TF) plain/pdl %.3f | batch %d: "
               "pdl %.4f (%5.1f TF) plain %.4f (%5.1f TF) plain/pdl %.3f\n",
               m, k, n, md[A_PDL1], flop / md[A_PDL1] * 1e-9, md[A_PLAIN1], flop / md[A_PLAIN1] * 1e-9,
               md[A_PLAIN1] / md[A_PDL1], SWEEP_BATCH, md[A_PDLB], flop / md[A_PDLB] * 1e-9, md[A_PLAINB],
               flop / md[A_PLAINB] * 1e-9, md[A_PLAINB] / md[A_PDLB]);
        floor_case_free(&f);
    }
    memra_timer_destroy(t);
    return 1;
}


int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s quant|gemm_q8_0|gemm_q8_0r|gemm_kr|accprobe|fp8blk|fp8given|prefer|bench|sweep|sweep_kr|pdl\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    const int fp8 = strcmp(c, "fp8blk") == 0 || strcmp(c, "prefer") == 0 || strcmp(c, "fp8given") == 0;
    setup(fp8 ? "fp8blk" : "mmq");
    int ok;
    if (strcmp(c, "quant") == 0) ok = case_quant();
    else if (strcmp(c, "gemm_q8_0") == 0) ok = case_gemm_q8_0();
    else if (strcmp(c, "gemm_q8_0r") == 0) g_records = 1, ok = case_gemm_q8_0();
    else if (strcmp(c, "gemm_kr") == 0) ok = case_gemm_kr();
    else if (strcmp(c, "accprobe") == 0) ok = case_accprobe();
    else if (strcmp(c, "fp8blk") == 0) ok = case_fp8blk();
    else if (strcmp(c, "fp8given") == 0) ok = case_fp8given();
    else if (strcmp(c, "prefer") == 0) ok = case_prefer();
    else if (strcmp(c, "bench") == 0) ok = case_bench();
    else if (strcmp(c, "sweep") == 0) ok = case_sweep(argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : -1);
    else if (strcmp(c, "pdl") == 0) ok = case_pdl(argc > 2 ? atoi(argv[2]) : 0);
    else if (strcmp(c, "sweep_kr") == 0)
        ok = case_sweep_kr(argc > 2 ? argv[2] : NULL, argc > 3 ? atoi(argv[3]) : 0, argc > 4 ? atoi(argv[4]) : -1);
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    memra_close(g_rt);
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
