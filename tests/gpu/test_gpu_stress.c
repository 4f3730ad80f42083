/* Threads and streams on a GPU: the embedding contract of memra.h.
 *
 *   streams   4 streams x 2 host threads (8 jobs), each job with its own inputs
 *             and outputs, every lane: f16 mirror (gemm_f16 on an f32
 *             activation), f16 pre-converted (x_is_f16), FP8 per-tensor
 *             (gemm_fp8), FP8 block-128 (gemm_fp8_blk), the MMQ floor
 *             (quant_q8_1 + gemm_q8_0r on a Q8_0 weight without a mirror), and
 *             the grouped experts call (memra_matmul_experts, op gemm_experts) on
 *             Q8_0 experts (the floor's grouped tiles on the q8_1 records sorted
 *             into expert order, per-call scratch from each stream's arena) and,
 *             on cc 9.0, on block-128 FP8 experts (fp8blk's tensor-map tile and
 *             its per-call expert maps), each job with its own routing, and
 *             (lane xewg) Q8_0 experts at k = XE_WG_K with XE_WG_M rows (the
 *             128-row table: on cc 9.x the seeded warpgroup tile over the
 *             gathered records and the experts' per-call tensor maps, asked for
 *             with MEMRA_MMQ_XE_WG=1 so that a call falling back to the records
 *             tiles is a logged warning, which fails the test), and (lane kq) a
 *             Q4_K weight on the K-quant floor at KQ_M tokens (on cc 9.x the
 *             prepared warpgroup tile, its per-call images in each stream's
 *             scratch), and (lane w16, cc 9.0 only) a Q6_K weight on gemm_w16 (the W16
 *             operand, MEMRA_W16=auto with memra_device_w16_set on for its prepare alone) at W16_M
 *             tokens, a shape whose plan splits k (the split-k parts and the f16 activations in
 *             each stream's scratch);
 *             REPS calls of each lane per job, all queued without a wait, two
 *             threads on each stream. Every output must equal, bit for bit, the
 *             same call made alone on one stream before the threads start.
 *   graphs    two threads capture one stream each into a CUDA graph at the same
 *             time (thread-local capture mode), after memra_stream_reserve; the
 *             graphs are replayed twice with fresh inputs, and every output must
 *             equal the same calls made directly (not captured) afterwards.
 * The ledger must show a GPU module serving each lane. Exits 77 without a GPU.
 * MEMRA_TEST_STRESS_LANES=fp8blk,mmq (a comma list of f16, f16pre, fp8, fp8blk, mmq, xe, xefp8blk, xewg, kq, w16) runs
 * those lanes only: with MEMRA_DISABLE=sm90, memra's own kernels alone (racecheck).
 * Comparisons are tools/judge.h's judge_bytes; MEMRA_TEST_INJECT_FAULT=1
 * flips a bit of the first value of every comparison: both cases must FAIL.
 * Racecheck/memcheck: run under compute-sanitizer (see docs/ARCHITECTURE.md). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
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


#define STREAMS 4
#define PER_STREAM 2
#define JOBS (STREAMS * PER_STREAM)
#define REPS 6
#define OUT_F 1024
#define IN_F 2048

enum { L_F16, L_F16_PRE, L_FP8, L_FP8_BLK, L_MMQ, L_XE, L_XE_FP8BLK, L_XE_WG, L_KQ, L_W16, L_N };
static const char *const k_lane[L_N] = {"f16 mirror", "f16 pre-converted", "fp8", "fp8 block-128", "mmq floor",
                                        "experts q8_0", "experts fp8 blk", "experts q8_0 wg", "k-quant floor",
                                        "w16 tile"};
static const char *const k_op[L_N] = {"gemm_f16", "gemm_f16", "gemm_fp8", "gemm_fp8_blk", "gemm_q8_0r",
                                      "gemm_experts", "gemm_experts", "gemm_experts", "gemm_kr", "gemm_w16"};
#define XE_E 8
/* xewg: k from MEMRA_MMQ_XE_WG's auto threshold (mmq_ops.c MMQ_XE_WG_AUTO_K) and at least 96 rows an
 * expert on average (the 128-row table, mmq_ops.c xe_tile_pick), not a multiple of 128 */
#define XE_WG_K 4096
#define XE_WG_M 800
/* kq: a Q4_K weight on the floor at KQ_M tokens, from 1024 on cc 9.x the prepared warpgroup tile (its
 * per-call images in each stream's scratch: MEMRA_MMQ_KR_WG's default), off the 128-token tile */
#define KQ_M 1100
/* w16: 3 x 8 tiles of 128 x 128 over 2048 / 64 = 32 k steps: the plan (w16_ops.c) splits k into 4 slices of
 * 8 steps to fill the SMs, so each call writes its parts to its stream's scratch and sums them */
#define W16_M 300
/* unaligned and aligned, each lane its own; the grouped lanes' rows over XE_E experts */
static const int k_m[L_N] = {77, 64, 130, 33, 96, 200, 150, XE_WG_M, KQ_M, W16_M};
static int in_f(int lane) { return lane == L_XE_WG ? XE_WG_K : IN_F; }
static int is_xe(int lane) { return lane == L_XE || lane == L_XE_FP8BLK || lane == L_XE_WG; }
/* MEMRA_TEST_STRESS_LANES: a comma list of these names runs those lanes only (default: all),
 * e.g. "fp8blk,mmq" for memra's own kernels alone under racecheck, with no cuBLASLt kernel */
static const char *const k_lane_key[L_N] = {"f16", "f16pre", "fp8", "fp8blk", "mmq", "xe", "xefp8blk", "xewg", "kq",
                                                 "w16"};
static int g_on[L_N];
#define M_MAX KQ_M
/* MEMRA_MMQ_XE_WG=1's warnings: a call of lane xewg that the tile should take but does not */
static test_log_count g_wg_log = {"MEMRA_MMQ_XE_WG", 0, NULL, 0};
/* test_log_sink, but for one note: lane xe's calls (200 rows over 8 experts) pick the 32-row table and, under
 * MEMRA_MMQ_XE_WG=1, the module says so once ("... rows over ... experts pick the 32-row table; MEMRA_MMQ_XE_WG=1
 * applies to the 128-row one only"). That is no fallback of lane xewg, whose table is fixed by its mean (XE_WG_M
 * rows over XE_E experts: the 128-row table), so only that note naming xewg's rows counts. (Run t2 on an H100:
 * stress_streams and stress_graphs failed on lane xe's note.) */
static void stress_log_sink(int level, const char *component, const char *message, void *user)
{
    char mine[48];
    snprintf(mine, sizeof mine, "%d rows over %d experts", XE_WG_M, XE_E);
    const int other = strstr(message, " rows over ") != NULL && strstr(message, mine) == NULL;
    test_log_sink(level, component, message, other ? NULL : user);
}

static memra_runtime *g_rt;
static memra_device *g_dev;
static uint64_t g_rng;
static memra_weight *g_w[L_N];
static CUstream g_stream[STREAMS];
static atomic_int g_bad;

typedef struct job {
    int s;                          /* stream index */
    memra_buffer *x[L_N];           /* f32 [m x in_f(lane)], f16 for L_F16_PRE */
    memra_buffer *ids[L_N];         /* the grouped lanes: int32 [m], this job's routing */
    memra_buffer *y[L_N][REPS];     /* f32 [m x OUT_F] */
    float *ref[L_N];                /* serial result */
} job;
static job g_job[JOBS];

static float *rand_f32(size_t n, float scale)
{
    float *v = malloc(n * sizeof(float));
    CHECK(v != NULL);
    for (size_t i = 0; i < n; i++) v[i] = test_rand_f32(&g_rng) * scale;
    return v;
}

static memra_buffer *upload(const void *p, size_t bytes)
{
    memra_buffer *b;
    CHECK_OK(memra_buffer_create(g_dev, bytes, &b));
    CHECK_OK(memra_buffer_write(b, 0, p, bytes));
    return b;
}

static float *download(memra_buffer *b, size_t bytes)
{
    float *p = malloc(bytes);
    CHECK(p != NULL);
    CHECK_OK(memra_buffer_read(b, 0, p, bytes));
    return p;
}

static memra_buffer *x_buffer(int lane)
{
    const size_t n = (size_t)k_m[lane] * in_f(lane);
    float *x = rand_f32(n, 3.0f);
    memra_buffer *b;
    if (lane == L_F16_PRE) {
        uint16_t *h = malloc(n * 2);
        CHECK(h != NULL);
        for (size_t i = 0; i < n; i++) h[i] = memra_f16_from_f32(x[i]);
        b = upload(h, n * 2);
        free(h);
    } else {
        b = upload(x, n * 4);
    }
    free(x);
    return b;
}

/* A routing of m rows over XE_E experts, every row routed, uneven: about a third of the rows to one
 * expert (a different one per call of this), the rest uniform; expert XE_E - 1 gets none unless drawn
 * for the large share (test_gpu_experts covers skipped ids: here every row's output is compared) */
static memra_buffer *ids_buffer(int lane)
{
    int32_t ids[M_MAX];
    const int big = (int)(test_rand_u64(&g_rng) % XE_E);
    for (int r = 0; r < k_m[lane]; r++) {
        const int32_t u = (int32_t)(test_rand_u64(&g_rng) % (XE_E - 1));
        ids[r] = r % 3 == 0 ? big : u;
    }
    return upload(ids, (size_t)k_m[lane] * sizeof(int32_t));
}

static memra_status enqueue(int lane, memra_buffer *x, memra_buffer *ids, memra_buffer *y, CUstream s)
{
    if (is_xe(lane))
        return memra_matmul_experts(g_dev, g_w[lane], memra_buffer_ptr(x), k_m[lane], memra_buffer_ptr(ids),
                                    memra_buffer_ptr(y), s);
    memra_matmul_args a = {.struct_size = sizeof a, .x = memra_buffer_ptr(x), .x_is_f16 = lane == L_F16_PRE,
                           .m = k_m[lane], .y = memra_buffer_ptr(y), .alpha = 1.0f, .stream = s};
    return memra_matmul_ex(g_dev, g_w[lane], &a);
}

/* Bit-identical (tools/judge.h's judge_bytes): the same job on the same data
 * must give the same bits. */
static int same(const char *what, int j, int lane, const float *got, const float *want)
{
    const size_t n = (size_t)k_m[lane] * OUT_F;
    char label[160];
    snprintf(label, sizeof label, "%s: job %d %s (element = f32)", what, j, k_lane[lane]);
    judge jd;
    judge_init(&jd, label, 0.0, stderr);
    jd.inject = test_inject_fault();
    const uint64_t diff = judge_bytes(&jd, got, want, n * 4, 4);
    if (diff) fprintf(stderr, "%s: %llu of %zu values differ\n", label, (unsigned long long)diff, n);
    return diff == 0;
}

/* The lanes to run (MEMRA_TEST_STRESS_LANES); an unknown name is an error. */
static void pick_lanes(void)
{
    const char *v = getenv("MEMRA_TEST_STRESS_LANES");
    for (int l = 0; l < L_N; l++) g_on[l] = v == NULL || *v == '\0';
    if (v == NULL || *v == '\0') return;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        int l = 0;
        while (l < L_N && strcmp(t, k_lane_key[l]) != 0) l++;
        if (l == L_N) {
            fprintf(stderr, "MEMRA_TEST_STRESS_LANES: unknown lane '%s' (f16, f16pre, fp8, fp8blk, mmq, xe, xefp8blk, xewg, kq, w16)\n", t);
            exit(1);
        }
        g_on[l] = 1;
    }
}

/* XE_E random Q8_0 experts of [OUT_F x in_f(lane)] into g_w[lane], prepared on the floor's records */
static void q8_experts(int lane, const char *name)
{
    const size_t nb = (size_t)OUT_F * (in_f(lane) / 32), each = nb * MEMRA_Q8_0_BYTES;
    uint8_t *xq = malloc(each * XE_E);
    CHECK(xq != NULL);
    for (int e = 0; e < XE_E; e++) {
        float *ve = rand_f32(nb * 32, 0.5f);
        for (size_t b = 0; b < nb; b++) memra_q8_0_encode(ve + b * 32, xq + e * each + b * MEMRA_Q8_0_BYTES);
        free(ve);
    }
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = XE_E,
                             .out_f = OUT_F, .in_f = in_f(lane), .data = xq, .size = each * XE_E, .name = name};
    CHECK_OK(memra_weight_create_experts(g_rt, &ed, &g_w[lane]));
    CHECK_OK(memra_weight_prepare(g_w[lane], g_dev));
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(g_w[lane], g_dev, &p));
    CHECK_STR_EQ(p.lane, "mmq records"); /* the floor's grouped tiles, no mirror */
    free(xq);
}

/* A K-quant weight of format f ([OUT_F x IN_F], random codes and small positive scales) into g_w[lane], prepared
 * with the device's W16 switch at w16 (back off after), holding operand `want` */
static void kquant_weight(int lane, memra_format f, const char *name, int w16, unsigned want)
{
    const size_t kb = memra_format_row_bytes(f, IN_F) * OUT_F;
    uint8_t *q = malloc(kb);
    CHECK(q != NULL);
    test_fill_quant_blocks(&g_rng, f, q, kb);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = OUT_F, .in_f = IN_F, .data = q, .size = kb,
                           .name = name};
    CHECK_OK(memra_weight_create(g_rt, &d, &g_w[lane]));
    CHECK_OK(memra_device_w16_set(g_dev, w16));
    CHECK_OK(memra_weight_prepare(g_w[lane], g_dev));
    CHECK_OK(memra_device_w16_set(g_dev, 0));
    CHECK(memra_weight_operands(g_w[lane], g_dev) & want);
    free(q);
}

static void make_weights(void)
{
    const size_t nb = (size_t)OUT_F * (IN_F / 32);
    uint8_t *q8 = malloc(nb * MEMRA_Q8_0_BYTES);
    CHECK(q8 != NULL);
    float *v = rand_f32(nb * 32, 0.5f);
    for (size_t b = 0; b < nb; b++) memra_q8_0_encode(v + b * 32, q8 + b * MEMRA_Q8_0_BYTES);
    free(v);
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = OUT_F, .in_f = IN_F,
                           .data = q8, .size = nb * MEMRA_Q8_0_BYTES, .name = "stress.q8_0 mirror"};
    if (g_on[L_F16] || g_on[L_F16_PRE]) {
        CHECK_OK(memra_weight_create(g_rt, &d, &g_w[L_F16]));
        CHECK_OK(memra_weight_prepare(g_w[L_F16], g_dev));
        memra_weight_state ws;
        CHECK_OK(memra_weight_query(g_w[L_F16], g_dev, &ws));
        CHECK(ws.has_f16_mirror);
    }
    g_w[L_F16_PRE] = g_w[L_F16];
    /* The floor's weight: another Q8_0 weight prepared with no mirror budget. */
    const uint64_t budget = memra_device_f16_budget_get(g_dev);
    CHECK_OK(memra_device_f16_budget_set(g_dev, 0));
    d.name = "stress.q8_0 floor";
    if (g_on[L_MMQ]) {
        CHECK_OK(memra_weight_create(g_rt, &d, &g_w[L_MMQ]));
        CHECK_OK(memra_weight_prepare(g_w[L_MMQ], g_dev));
        CHECK(memra_weight_operands(g_w[L_MMQ], g_dev) & MEMRA_OPERAND_Q8_0_RECORDS);
    }
    /* Q8_0 experts: XE_E experts of [OUT_F x IN_F] (and of [OUT_F x XE_WG_K] for xewg), prepared with
     * no mirror budget too (quantised experts take the floor on a GPU) */
    if (g_on[L_XE]) q8_experts(L_XE, "stress.experts q8_0");
    if (g_on[L_XE_WG]) q8_experts(L_XE_WG, "stress.experts q8_0 k4096");
    /* the K-quant floor's weight: Q4_K blocks (random codes, small positive scales), K records */
    if (g_on[L_KQ]) kquant_weight(L_KQ, MEMRA_FORMAT_Q4_K, "stress.q4_k floor", 0, MEMRA_OPERAND_K_RECORDS);
    /* the w16 lane's weight: Q6_K blocks with the device's W16 switch on for its prepare alone (every other
     * weight above was prepared with it off: the floor's records) */
    if (g_on[L_W16]) {
        kquant_weight(L_W16, MEMRA_FORMAT_Q6_K, "stress.q6_k w16", 1, MEMRA_OPERAND_W16);
        memra_weight_plan p = {.struct_size = sizeof p};
        CHECK_OK(memra_weight_plan_get(g_w[L_W16], g_dev, &p));
        CHECK_STR_EQ(p.lane, "w16");
    }
    CHECK_OK(memra_device_f16_budget_set(g_dev, budget));
    free(q8);

    uint8_t *e = malloc((size_t)OUT_F * IN_F);
    CHECK(e != NULL);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < (size_t)OUT_F * IN_F; i++) {
            uint8_t c;
            do c = (uint8_t)test_rand_u64(&g_rng);
            while (memra_e4m3_is_nan(c) || (c & 0x7F) == 0);
            e[i] = c;
        }
        memra_weight_desc f = {.struct_size = sizeof f, .format = MEMRA_FORMAT_E4M3, .out_f = OUT_F, .in_f = IN_F,
                               .data = e, .size = (size_t)OUT_F * IN_F};
        float *grid = NULL;
        if (pass == 0) {
            f.scale = 0.013f;
            f.name = "stress.e4m3";
        } else {
            f.grid_count = (size_t)(memra_fp8_grid_rows(OUT_F) * memra_fp8_grid_cols(IN_F));
            grid = malloc(f.grid_count * sizeof(float));
            CHECK(grid != NULL);
            for (size_t i = 0; i < f.grid_count; i++) grid[i] = 0.004f + 0.001f * (float)(test_rand_u64(&g_rng) % 8);
            f.grid = grid;
            f.name = "stress.e4m3 block-128";
        }
        const int lane = pass == 0 ? L_FP8 : L_FP8_BLK;
        if (g_on[lane]) {
            CHECK_OK(memra_weight_create(g_rt, &f, &g_w[lane]));
            CHECK_OK(memra_weight_prepare(g_w[lane], g_dev));
        }
        free(grid);
    }
    free(e);
    /* block-128 FP8 experts: e4m3 codes and a grid per expert */
    if (g_on[L_XE_FP8BLK]) {
        const size_t each = (size_t)OUT_F * IN_F, gc = (size_t)(memra_fp8_grid_rows(OUT_F) * memra_fp8_grid_cols(IN_F));
        uint8_t *codes = malloc(each * XE_E);
        float *grid = malloc(gc * XE_E * sizeof(float));
        CHECK(codes != NULL && grid != NULL);
        for (size_t i = 0; i < each * XE_E; i++) {
            uint8_t c;
            do c = (uint8_t)test_rand_u64(&g_rng);
            while (memra_e4m3_is_nan(c) || (c & 0x7F) == 0);
            codes[i] = c;
        }
        for (size_t i = 0; i < gc * XE_E; i++) grid[i] = 0.004f + 0.001f * (float)(test_rand_u64(&g_rng) % 8);
        memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_E4M3, .n_experts = XE_E,
                                 .out_f = OUT_F, .in_f = IN_F, .data = codes, .size = each * XE_E, .grid = grid,
                                 .grid_count = gc * XE_E, .name = "stress.experts e4m3 block-128"};
        CHECK_OK(memra_weight_create_experts(g_rt, &ed, &g_w[L_XE_FP8BLK]));
        CHECK_OK(memra_weight_prepare(g_w[L_XE_FP8BLK], g_dev));
        memra_weight_plan p = {.struct_size = sizeof p};
        CHECK_OK(memra_weight_plan_get(g_w[L_XE_FP8BLK], g_dev, &p));
        CHECK_STR_EQ(p.lane, "fp8 block-128");
        free(codes);
        free(grid);
    }
}

/* ---- streams x threads ------------------------------------------------------ */

static void *stream_worker(void *arg)
{
    job *jb = arg;
    const int j = (int)(jb - g_job);
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_dev)->cu_context));
    for (int r = 0; r < REPS; r++)
        for (int l = 0; l < L_N; l++) {
            const int lane = (l + j + r) % L_N; /* the lanes in a different order per job */
            if (!g_on[lane]) continue;
            memra_status st = enqueue(lane, jb->x[lane], jb->ids[lane], jb->y[lane][r], g_stream[jb->s]);
            if (st != MEMRA_STATUS_OK) {
                fprintf(stderr, "job %d rep %d %s: %s: %s\n", j, r, k_lane[lane], memra_status_str(st),
                        memra_last_error());
                atomic_fetch_add(&g_bad, 1);
            }
        }
    return NULL;
}

static int case_streams(void)
{
    for (int j = 0; j < JOBS; j++) {
        job *jb = &g_job[j];
        jb->s = j % STREAMS;
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            jb->x[l] = x_buffer(l);
            jb->ids[l] = is_xe(l) ? ids_buffer(l) : NULL;
            for (int r = 0; r < REPS; r++) CHECK_OK(memra_buffer_create(g_dev, (size_t)k_m[l] * OUT_F * 4, &jb->y[l][r]));
        }
    }
    printf("stage: streams: inputs and outputs allocated\n");
    /* Serial: each call alone on stream 0, waited for. */
    for (int j = 0; j < JOBS; j++)
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            CHECK_OK(enqueue(l, g_job[j].x[l], g_job[j].ids[l], g_job[j].y[l][0], g_stream[0]));
            CU_CHECK(cu.cuStreamSynchronize(g_stream[0]));
            g_job[j].ref[l] = download(g_job[j].y[l][0], (size_t)k_m[l] * OUT_F * 4);
        }
    for (int j = 0; j < JOBS; j++)
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            for (int r = 0; r < REPS; r++) {
                /* poison every output so a call that wrote nothing fails */
                float *junk = rand_f32((size_t)k_m[l] * OUT_F, 1e30f);
                CHECK_OK(memra_buffer_write(g_job[j].y[l][r], 0, junk, (size_t)k_m[l] * OUT_F * 4));
                free(junk);
            }
        }
    printf("stage: streams: serial reference done\n");
    pthread_t th[JOBS];
    for (int j = 0; j < JOBS; j++) CHECK_INT_EQ(pthread_create(&th[j], NULL, stream_worker, &g_job[j]), 0);
    for (int j = 0; j < JOBS; j++) pthread_join(th[j], NULL);
    printf("stage: streams: %d threads joined\n", JOBS);
    CHECK_OK(memra_device_synchronize(g_dev));
    printf("stage: streams: device synchronised, comparing\n");
    int ok = atomic_load(&g_bad) == 0, checked = 0;
    for (int j = 0; j < JOBS; j++)
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            for (int r = 0; r < REPS; r++) {
                float *got = download(g_job[j].y[l][r], (size_t)k_m[l] * OUT_F * 4);
                char what[48];
                snprintf(what, sizeof what, "streams rep %d", r);
                ok &= same(what, j, l, got, g_job[j].ref[l]);
                free(got);
                checked++;
            }
        }
    printf("streams: %d streams x %d threads, %d outputs compared bit for bit with serial: %s\n", STREAMS, PER_STREAM,
           checked, ok ? "ok" : "FAIL");
    return ok;
}

/* ---- two graphs captured at once -------------------------------------------- */

typedef struct cap_job {
    int s;
    memra_buffer *x[L_N], *ids[L_N], *y[L_N], *y_direct[L_N];
    CUgraphExec exec;
    int failed;
} cap_job;
static cap_job g_cap[2];
static pthread_barrier_t g_bar;

static void *capture_worker(void *arg)
{
    cap_job *c = arg;
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_dev)->cu_context));
    pthread_barrier_wait(&g_bar);
    CU_CHECK(cu.cuStreamBeginCapture_v2(g_stream[c->s], 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */));
    for (int l = 0; l < L_N && !c->failed; l++) {
        if (!g_on[l]) continue;
        memra_status st = enqueue(l, c->x[l], c->ids[l], c->y[l], g_stream[c->s]);
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "capture on stream %d, %s: %s: %s\n", c->s, k_lane[l], memra_status_str(st),
                    memra_last_error());
            c->failed = 1;
        }
    }
    CUgraph g = NULL;
    CUresult r = cu.cuStreamEndCapture(g_stream[c->s], &g);
    if (r != 0 || c->failed) {
        fprintf(stderr, "capture on stream %d: end %d\n", c->s, r);
        c->failed = 1;
        return NULL;
    }
    CU_CHECK(cu.cuGraphInstantiateWithFlags(&c->exec, g, 0));
    CU_CHECK(cu.cuGraphDestroy(g));
    return NULL;
}

static int case_graphs(void)
{
    for (int i = 0; i < 2; i++) {
        cap_job *c = &g_cap[i];
        c->s = i + 1; /* streams 1 and 2 */
        memra_weight *ws[L_N];
        int nw = 0;
        for (int l = 0; l < L_N; l++)
            if (g_on[l]) ws[nw++] = g_w[l];
        CHECK_OK(memra_stream_reserve(g_dev, g_stream[c->s], ws, nw, M_MAX));
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            c->x[l] = x_buffer(l);
            c->ids[l] = is_xe(l) ? ids_buffer(l) : NULL;
            CHECK_OK(memra_buffer_create(g_dev, (size_t)k_m[l] * OUT_F * 4, &c->y[l]));
            CHECK_OK(memra_buffer_create(g_dev, (size_t)k_m[l] * OUT_F * 4, &c->y_direct[l]));
        }
    }
    /* A capture without a reservation is refused by name, not silently allocated:
     * stream 3 never reserved; a fresh stream has no arena at all. */
    CUstream fresh;
    CU_CHECK(cu.cuStreamCreate(&fresh, 1));
    CU_CHECK(cu.cuStreamBeginCapture_v2(fresh, 1));
    int first = 0;
    while (!g_on[first]) first++;
    memra_status st = enqueue(first, g_cap[0].x[first], g_cap[0].ids[first], g_cap[0].y[first], fresh);
    CUgraph gbad = NULL;
    cu.cuStreamEndCapture(fresh, &gbad);
    if (gbad) cu.cuGraphDestroy(gbad);
    int ok = 1;
    if (st != MEMRA_STATUS_NOT_SUPPORTED || strstr(memra_last_error(), "memra_stream_reserve") == NULL) {
        fprintf(stderr, "unreserved capture: got %s (%s), want NOT_SUPPORTED naming memra_stream_reserve\n",
                memra_status_str(st), memra_last_error());
        ok = 0;
    }
    CU_CHECK(cu.cuStreamDestroy_v2(fresh));

    pthread_barrier_init(&g_bar, NULL, 2);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK_INT_EQ(pthread_create(&th[i], NULL, capture_worker, &g_cap[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g_bar);
    if (g_cap[0].failed || g_cap[1].failed) return 0;
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < 2; i++)
            for (int l = 0; l < L_N; l++) {
                if (!g_on[l]) continue;
                /* fresh inputs, written in place (the graph holds the addresses) */
                memra_buffer *nx = x_buffer(l);
                const size_t bytes = memra_buffer_size(nx);
                void *tmp = malloc(bytes);
                CHECK_OK(memra_buffer_read(nx, 0, tmp, bytes));
                CHECK_OK(memra_buffer_write(g_cap[i].x[l], 0, tmp, bytes));
                free(tmp);
                memra_buffer_destroy(nx);
            }
        for (int i = 0; i < 2; i++) CU_CHECK(cu.cuGraphLaunch(g_cap[i].exec, g_stream[g_cap[i].s]));
        for (int i = 0; i < 2; i++) CU_CHECK(cu.cuStreamSynchronize(g_stream[g_cap[i].s]));
        for (int i = 0; i < 2; i++)
            for (int l = 0; l < L_N; l++) {
                if (!g_on[l]) continue;
                CHECK_OK(enqueue(l, g_cap[i].x[l], g_cap[i].ids[l], g_cap[i].y_direct[l], g_stream[0]));
                CU_CHECK(cu.cuStreamSynchronize(g_stream[0]));
                float *got = download(g_cap[i].y[l], (size_t)k_m[l] * OUT_F * 4);
                float *want = download(g_cap[i].y_direct[l], (size_t)k_m[l] * OUT_F * 4);
                char what[48];
                snprintf(what, sizeof what, "graph %d replay %d", i, rep + 1);
                ok &= same(what, i, l, got, want);
                free(got);
                free(want);
            }
    }
    for (int i = 0; i < 2; i++) CU_CHECK(cu.cuGraphExecDestroy(g_cap[i].exec));
    int lanes = 0;
    for (int l = 0; l < L_N; l++) lanes += g_on[l];
    printf("graphs: 2 streams captured at once, 2 replays with fresh inputs x %d lanes: %s\n", lanes, ok ? "ok" : "FAIL");
    return ok;
}

typedef struct gpu_hits {
    uint64_t hits[L_N];
} gpu_hits;

static void count_hits(const memra_ledger_row *r, void *user)
{
    gpu_hits *h = user;
    if (r->reason != NULL || strcmp(r->device, "host") == 0 || strcmp(r->module, "host") == 0) return;
    const int fp8blk = strcmp(r->module, "fp8blk") == 0; /* the grouped lanes by the module that served them */
    for (int l = 0; l < L_N; l++)
        if ((strcmp(r->op, k_op[l]) == 0 && (!is_xe(l) || fp8blk == (l == L_XE_FP8BLK))) ||
            (l == L_MMQ && strcmp(r->op, "gemm_q8_0") == 0))
            h->hits[l] += r->hits;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "all";
    /* line-buffered: under a sanitizer that kills it (a time limit) the output so far survives */
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_rng = test_seed();
    /* MEMRA_MMQ_XE_WG=1 rather than its default (auto, the same tile at this k): a fallback warns.
     * MEMRA_W16=auto loads the w16 kernels; the device's switch is off but for lane w16's prepare. */
    const char *settings[] = {"MEMRA_MMQ_XE_WG=1", "MEMRA_W16=auto", NULL};
    memra_options o = {.struct_size = sizeof o, .settings = settings, .log_fn = stress_log_sink, .log_user = &g_wg_log};
    CHECK_OK(memra_open(&o, &g_rt));
    for (int i = 0; i < memra_device_count(g_rt) && g_dev == NULL; i++) {
        memra_device *d = memra_device_get(g_rt, i);
        if (memra_device_caps_get(d)->arch != MEMRA_ARCH_HOST) g_dev = d;
    }
    if (g_dev == NULL) {
        printf("driver: %s\n", memra_driver_status(g_rt));
        memra_close(g_rt);
        TEST_SKIP("no CUDA device");
    }
    cu_streams_open();
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_dev)->cu_context));
    for (int s = 0; s < STREAMS; s++) CU_CHECK(cu.cuStreamCreate(&g_stream[s], 1 /* CU_STREAM_NON_BLOCKING */));
    printf("device: %s, %d streams\n", memra_device_caps_get(g_dev)->name, STREAMS);
    pick_lanes();
    CHECK_OK(memra_device_w16_set(g_dev, 0));
    if (g_on[L_W16] && memra_device_caps_get(g_dev)->cc != 90) {
        printf("the w16 tile is sm_90a's (cc 9.0): lane '%s' left out\n", k_lane[L_W16]);
        g_on[L_W16] = 0;
    }
    if (g_on[L_XE_WG] && memra_device_caps_get(g_dev)->cc / 10 != 9)
        printf("lane '%s': the warpgroup tile is cc 9.x's; this device runs the records tiles\n", k_lane[L_XE_WG]);
    if (g_on[L_XE_FP8BLK] && memra_device_caps_get(g_dev)->cc != 90) {
        printf("the grouped block-128 FP8 lane is sm_90a's (cc 9.0): lane '%s' left out\n", k_lane[L_XE_FP8BLK]);
        g_on[L_XE_FP8BLK] = 0;
    }
    make_weights();
    int lanes = 0;
    for (int l = 0; l < L_N; l++) lanes += g_on[l];
    printf("stage: weights prepared (%d of %d lanes)\n", lanes, L_N);
    int ok = 1;
    if (strcmp(c, "all") == 0 || strcmp(c, "streams") == 0) ok &= case_streams();
    if (strcmp(c, "all") == 0 || strcmp(c, "graphs") == 0) ok &= case_graphs();
    if (g_wg_log.n != 0) {
        fprintf(stderr, "lane %s: %d calls fell back from MEMRA_MMQ_XE_WG's tile (warnings above)\n", k_lane[L_XE_WG],
                g_wg_log.n);
        ok = 0;
    }
    gpu_hits h = {{0}};
    memra_ledger_visit(g_rt, count_hits, &h);
    for (int l = 0; l < L_N; l++) {
        if (!g_on[l]) continue;
        printf("  %-18s %-13s GPU hits %llu\n", k_lane[l], k_op[l], (unsigned long long)h.hits[l]);
        if (h.hits[l] == 0) {
            fprintf(stderr, "no GPU module served %s\n", k_op[l]);
            ok = 0;
        }
    }
    memra_ledger_print(g_rt, stdout);
    for (int j = 0; j < JOBS; j++)
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            memra_buffer_destroy(g_job[j].x[l]);
            if (g_job[j].ids[l]) memra_buffer_destroy(g_job[j].ids[l]);
            for (int r = 0; r < REPS; r++) memra_buffer_destroy(g_job[j].y[l][r]);
            free(g_job[j].ref[l]);
        }
    for (int i = 0; i < 2; i++)
        for (int l = 0; l < L_N; l++) {
            if (!g_on[l]) continue;
            memra_buffer_destroy(g_cap[i].x[l]);
            if (g_cap[i].ids[l]) memra_buffer_destroy(g_cap[i].ids[l]);
            memra_buffer_destroy(g_cap[i].y[l]);
            memra_buffer_destroy(g_cap[i].y_direct[l]);
        }
    for (int l = 0; l < L_N; l++)
        if (l != L_F16_PRE) memra_weight_destroy(g_w[l]);
    for (int s = 0; s < STREAMS; s++) cu.cuStreamDestroy_v2(g_stream[s]);
    memra_close(g_rt);
    printf(ok ? "ok\n" : "FAIL\n");
    return ok ? 0 : 1;
}
