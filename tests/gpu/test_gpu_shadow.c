/* gpu: shadow A/B on a GPU (core/observe/shadow.c, the side-stream path). One GEMM op
 * that two admitted GPU modules provide on the device (the first of
 * gemm_q8_0r, gemm_q8_0, gemm_f16, gemm_fp8_blk with two lanes, or the op
 * named by argv[2]: on an H200, gemm_fp8_blk: sm90's cuBLASLt lane and the
 * fp8blk module), a random weight of the op's format ([N x K], never zero)
 * and random activations, calls through memra_matmul on a stream of the
 * test's own.
 *   promote   the second lane shadows the first at MEMRA_SHADOW_RATE=2,
 *             MEMRA_SHADOW_AUTO_PROMOTE=0: 40 calls; every caller output is
 *             bit-identical to the incumbent's output without a shadow (the
 *             shadow only reads); at least 8 samples agree, none mismatches;
 *             the shadow's ledger cell counts its runs; memra_shadow_promote
 *             routes the op to it (the next call is its hit).
 *   rollback  MEMRA_SHADOW_TEST_CORRUPT=1 (the test hook perturbs the
 *             shadow's result before it is judged): the second lane shadows
 *             the first; within 12 calls the first judged sample rolls it
 *             back with a "mismatch" reason; the caller's outputs stay
 *             bit-identical; the op is disabled for the shadow module.
 *   capture   a shadow watching, memra_matmul captured into a CUDA graph on
 *             a reserved stream (thread-local capture): every captured call
 *             is skipped (cuStreamIsCapturing), the capture ends and the
 *             graph replays to the same output as an uncaptured call.
 *   auto      MEMRA_SHADOW_AUTO_PROMOTE=1, the rule at its defaults (shadow.c's
 *             agree(): MEMRA_SHADOW_AGREE = 20 agreeing samples and a speed
 *             ratio, the incumbent's summed event time over the shadow's
 *             across the agreeing samples, >= 1 + MEMRA_SHADOW_MARGIN_PCT
 *             (5) / 100): calls until the shadow leaves watching or 400
 *             calls. After every call: promoted exactly at the first
 *             agreement count >= 20 whose ratio is >= 1.05, never before,
 *             never later; promoted, routing puts the shadow first and the
 *             next call is its ledger hit, not the incumbent's; still
 *             watching at the cap, at least 20 agreed and the ratio is below
 *             1.05 (printed). Twice (right after the start, where the first
 *             sample makes the shadow's stream, events and buffers; and at a
 *             later sample, which judges the finished run and enqueues the
 *             next) the test's stream is blocked by a host function
 *             (cuLaunchHostFunc) waiting on a flag, 8 calls are issued, at
 *             least one sample must be enqueued among them, and only then is
 *             the flag set: a call that waited for its stream would have
 *             returned only after the host function gave up (5 s), which
 *             fails the case. Prints the median host time per call (enqueue
 *             only, the stream idle before each) without the shadow, and with
 *             it for sampled and unsampled calls. Caller outputs stay
 *             bit-identical to the incumbent's throughout.
 * Exits 77 without a CUDA device or without an op two GPU modules provide.
 *   test_gpu_shadow promote|rollback|capture|auto [OP] */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "gpu/cu_streams.h"


#define M 64
#define N 512
#define K 1024
#define RATE 2 /* MEMRA_SHADOW_RATE in every case */

/* The automatic promotion rule of core/observe/shadow.c (agree()) at its
 * defaults, which main() leaves in force (it unsets the knobs). */
#define RULE_AGREE 20     /* MEMRA_SHADOW_AGREE's default */
#define RULE_MARGIN_PCT 5 /* MEMRA_SHADOW_MARGIN_PCT's default */
#define RULE_RATIO (1.0 + RULE_MARGIN_PCT / 100.0)

static uint64_t g_rng;
static memra_runtime *g_rt;
static memra_device *g_gpu;
static memra_op g_op;
static const char *g_inc, *g_sh; /* interned by memra_routing_get: live until memra_close */
static memra_weight *g_w;
static memra_buffer *g_x, *g_y;
static CUstream g_stream;

static void print_row(const memra_ledger_row *r, void *user)
{
    (void)user;
    if (r->reason == NULL && strcmp(r->op, memra_op_name(g_op)) == 0 && strncmp(r->device, "cuda", 4) == 0)
        printf("  ledger %-14s %-12s %-10s entries %-5llu hits %-5llu errors %llu\n", r->device, r->op, r->module,
               (unsigned long long)r->entries, (unsigned long long)r->hits, (unsigned long long)r->errors);
}

static void print_shadow(const char *when)
{
    memra_shadow_info i = {.struct_size = sizeof i};
    CHECK_OK(memra_shadow_get(g_gpu, g_op, &i));
    static const char *const states[] = {"none", "watching", "promoted", "rolled back", "stopped"};
    printf("%s: shadow %s of %s on %s: state %s, calls %llu, samples %llu, agreements %llu, mismatches %llu, "
           "skipped %llu, incumbent %.1f us, shadow %.1f us, ratio %.3f%s%s\n",
           when, i.module, i.incumbent, memra_op_name(g_op), (unsigned)i.state < 5 ? states[i.state] : "?",
           (unsigned long long)i.calls, (unsigned long long)i.samples, (unsigned long long)i.agreements,
           (unsigned long long)i.mismatches, (unsigned long long)i.skipped, i.incumbent_us, i.shadow_us, i.speed_ratio,
           i.reason[0] ? ", reason: " : "", i.reason);
    memra_ledger_visit(g_rt, print_row, NULL);
}

static memra_shadow_info shadow_info(void)
{
    memra_shadow_info i = {.struct_size = sizeof i};
    CHECK_OK(memra_shadow_get(g_gpu, g_op, &i));
    return i;
}

/* A weight whose memra_matmul runs g_op on the GPU. */
static memra_weight *make_weight(void)
{
    memra_weight_desc d = {.struct_size = sizeof d, .out_f = N, .in_f = K, .name = "shadow test"};
    void *data = NULL;
    float *grid = NULL;
    if (g_op == MEMRA_OP_gemm_q8_0r || g_op == MEMRA_OP_gemm_q8_0) {
        const size_t nb = (size_t)N * (K / 32);
        uint8_t *q = malloc(nb * MEMRA_Q8_0_BYTES);
        CHECK(q != NULL);
        for (size_t b = 0; b < nb; b++) {
            uint8_t *blk = q + b * MEMRA_Q8_0_BYTES;
            const uint16_t s = memra_f16_from_f32(0.004f + 0.002f * (1.0f + test_rand_f32(&g_rng)));
            blk[0] = (uint8_t)s, blk[1] = (uint8_t)(s >> 8);
            for (int j = 2; j < MEMRA_Q8_0_BYTES; j++) blk[j] = (uint8_t)test_rand_u64(&g_rng);
        }
        d.format = MEMRA_FORMAT_Q8_0, d.data = q, d.size = nb * MEMRA_Q8_0_BYTES;
        data = q;
    } else if (g_op == MEMRA_OP_gemm_f16) {
        uint16_t *h = malloc((size_t)N * K * 2);
        CHECK(h != NULL);
        for (size_t i = 0; i < (size_t)N * K; i++) h[i] = memra_f16_from_f32(0.05f * test_rand_f32(&g_rng) + 0.001f);
        d.format = MEMRA_FORMAT_F16, d.data = h, d.size = (size_t)N * K * 2;
        data = h;
    } else { /* gemm_fp8_blk: e4m3 bytes (no NaN codes) and a block-128 grid */
        uint8_t *e = malloc((size_t)N * K);
        CHECK(e != NULL);
        for (size_t i = 0; i < (size_t)N * K; i++) {
            uint8_t b = (uint8_t)test_rand_u64(&g_rng);
            if ((b & 0x7F) == 0x7F) b ^= 0x01;
            e[i] = b;
        }
        const size_t gc = (size_t)((N + 127) / 128) * ((K + 127) / 128);
        grid = malloc(gc * sizeof(float));
        CHECK(grid != NULL);
        for (size_t i = 0; i < gc; i++) grid[i] = 0.01f * (1.5f + test_rand_f32(&g_rng));
        d.format = MEMRA_FORMAT_E4M3, d.data = e, d.size = (size_t)N * K, d.grid = grid, d.grid_count = gc;
        data = e;
    }
    /* the op's own operand, never an f16 mirror of it */
    if (g_op != MEMRA_OP_gemm_f16) CHECK_OK(memra_device_f16_budget_set(g_gpu, 0));
    memra_weight *w;
    CHECK_OK(memra_weight_create(g_rt, &d, &w));
    free(data);
    free(grid);
    CHECK_OK(memra_weight_prepare(w, g_gpu));
    return w;
}

static void new_x(void)
{
    float *x = malloc((size_t)M * K * sizeof(float));
    CHECK(x != NULL);
    for (size_t i = 0; i < (size_t)M * K; i++) x[i] = test_rand_f32(&g_rng) + 0.01f;
    CHECK_OK(memra_buffer_write(g_x, 0, x, (size_t)M * K * sizeof(float)));
    free(x);
}

/* One memra_matmul on the test's stream; the output read back (the test waits; the library never does). */
static void call(float *y)
{
    CHECK_OK(memra_matmul(g_gpu, g_w, memra_buffer_ptr(g_x), M, memra_buffer_ptr(g_y), g_stream));
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    CHECK_OK(memra_buffer_read(g_y, 0, y, (size_t)M * N * sizeof(float)));
}

static int setup(const char *want_op)
{
    CHECK_OK(memra_open(NULL, &g_rt));
    for (int i = 0; i < memra_device_count(g_rt) && g_gpu == NULL; i++)
        if (memra_device_caps_get(memra_device_get(g_rt, i))->arch != MEMRA_ARCH_HOST) g_gpu = memra_device_get(g_rt, i);
    if (g_gpu == NULL) {
        printf("driver: %s\n", memra_driver_status(g_rt));
        memra_close(g_rt);
        return 0;
    }
    CHECK_OK(memra_device_w16_set(g_gpu, 0)); /* a Q8_0 weight on the floor's ops, whatever MEMRA_W16 says */
    static const memra_op ops[] = {MEMRA_OP_gemm_q8_0r, MEMRA_OP_gemm_q8_0, MEMRA_OP_gemm_f16, MEMRA_OP_gemm_fp8_blk};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        if (want_op != NULL && strcmp(want_op, memra_op_name(ops[o])) != 0) continue;
        const char *names[16];
        int n = memra_routing_get(g_gpu, ops[o], names, 16);
        printf("%s on %s: %d lane%s%s%s%s%s\n", memra_op_name(ops[o]), memra_device_caps_get(g_gpu)->name, n,
               n == 1 ? "" : "s", n > 0 ? " (" : "", n > 0 ? names[0] : "", n > 1 ? ", " : "",
               n > 1 ? names[1] : "");
        if (n >= 2 && g_inc == NULL) {
            g_op = ops[o], g_inc = names[0], g_sh = names[1];
            /* gemm_q8_0 rides only a Q8_0 weight without records */
            if (g_op == MEMRA_OP_gemm_q8_0 && memra_routing_get(g_gpu, MEMRA_OP_gemm_q8_0r, NULL, 0) > 0) g_inc = NULL;
        }
    }
    if (g_inc == NULL) {
        memra_close(g_rt);
        return 0;
    }
    printf("op %s: incumbent %s, shadow %s\n", memra_op_name(g_op), g_inc, g_sh);
    cu_streams_open();
    /* a stream belongs to the context current on the thread: the device's (memra's primary context) */
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_gpu)->cu_context));
    CU_CHECK(cu.cuStreamCreate(&g_stream, 1 /* non-blocking */));
    g_w = make_weight();
    CHECK_OK(memra_buffer_create(g_gpu, (size_t)M * K * sizeof(float), &g_x));
    CHECK_OK(memra_buffer_create(g_gpu, (size_t)M * N * sizeof(float), &g_y));
    return 1;
}

static void teardown(void)
{
    memra_buffer_destroy(g_x);
    memra_buffer_destroy(g_y);
    memra_weight_destroy(g_w);
    memra_close(g_rt);
    CU_CHECK(cu.cuStreamDestroy_v2(g_stream));
}

static int same(const float *a, const float *b, const char *what, int call_no)
{
    if (memcmp(a, b, (size_t)M * N * sizeof(float)) == 0) return 1;
    for (size_t i = 0; i < (size_t)M * N; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            fprintf(stderr, "%s, call %d: y[%zu,%zu] = %.9g, without a shadow %.9g\n", what, call_no, i / N, i % N,
                    a[i], b[i]);
            break;
        }
    return 0;
}

static int case_promote(void)
{
    float *ref = malloc((size_t)M * N * 4), *y = malloc((size_t)M * N * 4);
    CHECK(ref != NULL && y != NULL);
    new_x();
    call(ref); /* the incumbent alone */
    const uint64_t sh_hits0 = memra_ledger_hits(g_gpu, g_op, g_sh);
    CHECK_OK(memra_shadow_start(g_gpu, g_op, g_sh, NULL));
    int fails = 0;
    for (int c = 0; c < 40; c++) {
        call(y);
        fails += !same(y, ref, "caller output under a shadow", c);
    }
    print_shadow("after 40 calls");
    memra_shadow_info i = shadow_info();
    CHECK_INT_EQ(i.state, MEMRA_SHADOW_WATCHING);
    CHECK_STR_EQ(i.incumbent, g_inc);
    CHECK(i.calls == 40);
    CHECK(i.agreements >= 8);
    CHECK(i.mismatches == 0);
    CHECK(i.incumbent_us > 0.0 && i.shadow_us > 0.0 && i.speed_ratio > 0.0);
    const uint64_t sh_hits = memra_ledger_hits(g_gpu, g_op, g_sh) - sh_hits0;
    printf("shadow runs in %s's ledger cell: %llu (samples %llu)\n", g_sh, (unsigned long long)sh_hits,
           (unsigned long long)i.samples);
    CHECK(sh_hits == i.samples);
    printf("the automatic rule (%d agreeing, ratio >= %.2f) %s have promoted it\n", RULE_AGREE, RULE_RATIO,
           i.agreements >= RULE_AGREE && i.speed_ratio >= RULE_RATIO ? "would" : "would not");
    CHECK_OK(memra_shadow_promote(g_gpu, g_op));
    const char *names[4];
    CHECK(memra_routing_get(g_gpu, g_op, names, 4) >= 1);
    printf("routing of %s after the promotion: %s first\n", memra_op_name(g_op), names[0]);
    CHECK_STR_EQ(names[0], g_sh);
    const uint64_t h1 = memra_ledger_hits(g_gpu, g_op, g_sh);
    call(y);
    CHECK(memra_ledger_hits(g_gpu, g_op, g_sh) == h1 + 1);
    print_shadow("promoted");
    CHECK_INT_EQ(shadow_info().state, MEMRA_SHADOW_PROMOTED);
    free(ref), free(y);
    return fails;
}

static int case_rollback(void)
{
    float *ref = malloc((size_t)M * N * 4), *y = malloc((size_t)M * N * 4);
    CHECK(ref != NULL && y != NULL);
    new_x();
    call(ref);
    CHECK_OK(memra_shadow_start(g_gpu, g_op, g_sh, NULL));
    int fails = 0, c = 0;
    for (; c < 12 && shadow_info().state == MEMRA_SHADOW_WATCHING; c++) {
        call(y);
        fails += !same(y, ref, "caller output under a wrong shadow", c);
    }
    print_shadow("rolled back");
    memra_shadow_info i = shadow_info();
    CHECK_INT_EQ(i.state, MEMRA_SHADOW_ROLLED_BACK);
    CHECK(i.mismatches == 1);
    CHECK_STR_CONTAINS(i.reason, "mismatch");
    printf("rolled back after %d calls\n", c);
    /* the shadow module no longer serves or shadows the op; the incumbent does */
    const char *names[4];
    const int n = memra_routing_get(g_gpu, g_op, names, 4);
    for (int l = 0; l < n; l++) CHECK(strcmp(names[l], g_sh) != 0);
    call(y);
    fails += !same(y, ref, "caller output after the rollback", c);
    free(ref), free(y);
    return fails;
}

static int case_capture(void)
{
    float *ref = malloc((size_t)M * N * 4), *y = malloc((size_t)M * N * 4);
    CHECK(ref != NULL && y != NULL);
    new_x();
    CHECK_OK(memra_stream_reserve(g_gpu, g_stream, &g_w, 1, M));
    call(ref);
    CHECK_OK(memra_shadow_start(g_gpu, g_op, g_sh, NULL));
    const memra_shadow_info before = shadow_info();
    CU_CHECK(cu.cuStreamBeginCapture_v2(g_stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */));
    for (int c = 0; c < 4; c++)
        CHECK_OK(memra_matmul(g_gpu, g_w, memra_buffer_ptr(g_x), M, memra_buffer_ptr(g_y), g_stream));
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CU_CHECK(cu.cuStreamEndCapture(g_stream, &graph));
    CU_CHECK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
    const memra_shadow_info after = shadow_info();
    print_shadow("after a capture of 4 calls");
    /* rate 2: calls 2 and 4 were due for a sample; both skipped, none ran */
    CHECK(after.calls == before.calls + 4);
    CHECK(after.samples == before.samples);
    CHECK(after.skipped == before.skipped + 2);
    float *zero = calloc((size_t)M * N, sizeof(float));
    CHECK(zero != NULL);
    CHECK_OK(memra_buffer_write(g_y, 0, zero, (size_t)M * N * sizeof(float)));
    CU_CHECK(cu.cuGraphLaunch(exec, g_stream));
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    CHECK_OK(memra_buffer_read(g_y, 0, y, (size_t)M * N * sizeof(float)));
    int fails = !same(y, ref, "graph replay under a shadow", 0);
    CU_CHECK(cu.cuGraphExecDestroy(exec));
    CU_CHECK(cu.cuGraphDestroy(graph));
    CHECK_OK(memra_shadow_stop(g_gpu, g_op));
    free(ref), free(y), free(zero);
    return fails;
}

/* ---- auto: the automatic promotion and a live call that never waits ---------------- */

#define AUTO_CAP 400       /* calls: the rule needs >= 2 * 20 at rate 2; 10x that for skips and a slow verdict */
#define BLOCKED_CALLS 8    /* calls issued while the stream is blocked: 4 due for a sample */
#define GATE_TIMEOUT_S 5.0 /* how long the host function blocking the stream waits for the flag */
#define TIMED_NO_SHADOW 31

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A host function in the test's stream: blocks the stream until the test sets
 * `go` (after its calls returned) or GATE_TIMEOUT_S passes. */
typedef struct gate {
    atomic_int go, entered, timed_out;
    double waited_us;
} gate;

static void gate_wait(void *p)
{
    gate *g = p;
    atomic_store(&g->entered, 1);
    const double t0 = now_us();
    const struct timespec nap = {0, 50 * 1000};
    while (!atomic_load(&g->go)) {
        if (now_us() - t0 > GATE_TIMEOUT_S * 1e6) {
            atomic_store(&g->timed_out, 1);
            break;
        }
        nanosleep(&nap, NULL);
    }
    g->waited_us = now_us() - t0;
}

/* What the rule allows, checked after every call of the auto case. */
static struct {
    uint64_t agreements;      /* after the previous call */
    memra_shadow_state state; /* after the previous call */
    int calls;                /* memra_matmul calls since the start */
    double ratio_at_need;     /* the ratio when RULE_AGREE agreements were reached (0: not yet) */
} g_rule;

/* Judge the shadow's record after one more call; 1 when the call was due for a sample. */
static int observe_rule(void)
{
    const memra_shadow_info i = shadow_info();
    g_rule.calls++;
    if (i.state != MEMRA_SHADOW_WATCHING && i.state != MEMRA_SHADOW_PROMOTED) {
        print_shadow("unexpected state");
        TEST_FAIL_AT("call %d: the shadow is in state %d (reason: %s), neither watching nor promoted", g_rule.calls,
                     (int)i.state, i.reason);
    }
    if (i.agreements > g_rule.agreements + 1)
        TEST_FAIL_AT("call %d: agreements went from %llu to %llu in one call (one judged run per sampled call), so "
                     "the rule cannot be checked at each count",
                     g_rule.calls, (unsigned long long)g_rule.agreements, (unsigned long long)i.agreements);
    const int agreed_now = i.agreements == g_rule.agreements + 1;
    if (agreed_now && i.agreements == RULE_AGREE) g_rule.ratio_at_need = i.speed_ratio;
    /* speed_ratio is (sum/a)/(sum/a), agree() compares sum/sum: allow rounding at the threshold */
    const double lo = RULE_RATIO * (1.0 - 1e-9), hi = RULE_RATIO * (1.0 + 1e-9);
    if (i.state == MEMRA_SHADOW_PROMOTED) {
        print_shadow("promoted automatically");
        if (!agreed_now)
            TEST_FAIL_AT("call %d: promoted without a new agreeing sample (agreements %llu before and after)",
                         g_rule.calls, (unsigned long long)i.agreements);
        if (i.agreements < RULE_AGREE)
            TEST_FAIL_AT("call %d: promoted after %llu agreeing samples, before the rule's %d", g_rule.calls,
                         (unsigned long long)i.agreements, RULE_AGREE);
        if (!(i.speed_ratio >= lo))
            TEST_FAIL_AT("call %d: promoted at ratio %.4f, below the rule's %.2f", g_rule.calls, i.speed_ratio,
                         RULE_RATIO);
        char want[64];
        snprintf(want, sizeof want, "%llu samples agreed", (unsigned long long)i.agreements);
        CHECK_STR_CONTAINS(i.reason, want);
    } else if (agreed_now && i.agreements >= RULE_AGREE && i.speed_ratio >= hi) {
        print_shadow("rule met, not promoted");
        TEST_FAIL_AT("call %d: %llu agreeing samples at ratio %.4f >= %.2f, yet the shadow is still watching",
                     g_rule.calls, (unsigned long long)i.agreements, i.speed_ratio, RULE_RATIO);
    }
    g_rule.agreements = i.agreements;
    g_rule.state = i.state;
    return i.calls % RATE == 0;
}

/* The test's stream blocked by gate_wait, BLOCKED_CALLS live calls, then the
 * flag. A call that waited for the stream (or for the context) would have
 * returned only after the gate timed out. Returns the failures. */
static int blocked_round(const char *what, const float *ref, float *y)
{
    gate g;
    atomic_init(&g.go, 0), atomic_init(&g.entered, 0), atomic_init(&g.timed_out, 0);
    g.waited_us = 0.0;
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    const memra_shadow_info before = shadow_info();
    CU_CHECK(cu.cuLaunchHostFunc(g_stream, gate_wait, &g));
    const double t0 = now_us();
    for (int c = 0; c < BLOCKED_CALLS; c++) {
        CHECK_OK(memra_matmul(g_gpu, g_w, memra_buffer_ptr(g_x), M, memra_buffer_ptr(g_y), g_stream));
        observe_rule();
    }
    const double calls_us = now_us() - t0;
    const memra_shadow_info after = shadow_info();
    atomic_store(&g.go, 1); /* only now: the calls have returned */
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    CHECK(atomic_load(&g.entered));
    printf("blocked stream, %s: %d calls returned in %.0f us (samples %llu -> %llu, skipped %llu -> %llu); the host "
           "function waited %.0f us%s\n",
           what, BLOCKED_CALLS, calls_us, (unsigned long long)before.samples, (unsigned long long)after.samples,
           (unsigned long long)before.skipped, (unsigned long long)after.skipped, g.waited_us,
           atomic_load(&g.timed_out) ? ", then timed out" : " for the flag");
    int fails = 0;
    if (atomic_load(&g.timed_out)) {
        fprintf(stderr,
                "FAIL: %s: a live call synchronised the host with its stream: the host function blocking the stream "
                "timed out after %.0f s waiting for the calls to return (they took %.0f ms)\n",
                what, GATE_TIMEOUT_S, calls_us / 1e3);
        fails++;
    }
    CHECK_INT_EQ(after.calls, before.calls + BLOCKED_CALLS);
    if (after.samples == before.samples) {
        fprintf(stderr, "FAIL: %s: no sample was enqueued among the %d blocked calls, so they prove nothing\n", what,
                BLOCKED_CALLS);
        fails++;
    }
    CHECK_OK(memra_buffer_read(g_y, 0, y, (size_t)M * N * sizeof(float)));
    fails += !same(y, ref, "caller output of a blocked call", g_rule.calls);
    return fails;
}

/* One call alone (the stream idle before it): its host time, enqueue only. */
static double timed_call(void)
{
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    const double t0 = now_us();
    CHECK_OK(memra_matmul(g_gpu, g_w, memra_buffer_ptr(g_x), M, memra_buffer_ptr(g_y), g_stream));
    const double t = now_us() - t0;
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    return t;
}

static int case_auto(void)
{
    float *ref = malloc((size_t)M * N * 4), *y = malloc((size_t)M * N * 4);
    double *t_none = malloc(TIMED_NO_SHADOW * sizeof(double)), *t_sampled = malloc(AUTO_CAP * sizeof(double)),
           *t_plain = malloc(AUTO_CAP * sizeof(double));
    CHECK(ref != NULL && y != NULL && t_none != NULL && t_sampled != NULL && t_plain != NULL);
    new_x();
    call(ref);
    for (int c = 0; c < TIMED_NO_SHADOW; c++) t_none[c] = timed_call();
    const uint64_t inc_hits0 = memra_ledger_hits(g_gpu, g_op, g_inc), sh_hits0 = memra_ledger_hits(g_gpu, g_op, g_sh);
    CHECK_OK(memra_shadow_start(g_gpu, g_op, g_sh, NULL));
    g_rule.state = MEMRA_SHADOW_WATCHING;
    /* the first sampled call makes the shadow's stream, events and buffers: inside a blocked round */
    int fails = blocked_round("first sample", ref, y);
    int n_sampled = 0, n_plain = 0, did_later = 0;
    while (g_rule.state == MEMRA_SHADOW_WATCHING && g_rule.calls < AUTO_CAP) {
        if (!did_later && g_rule.calls >= 2 * BLOCKED_CALLS) {
            /* the run in flight finishes first, so the round's first sample judges it and enqueues the next */
            const struct timespec settle = {0, 20 * 1000 * 1000};
            nanosleep(&settle, NULL);
            fails += blocked_round("a later sample", ref, y);
            did_later = 1;
            continue;
        }
        const double t = timed_call();
        CHECK_OK(memra_buffer_read(g_y, 0, y, (size_t)M * N * sizeof(float)));
        fails += !same(y, ref, "caller output under an auto-promoting shadow", g_rule.calls);
        if (observe_rule()) t_sampled[n_sampled++] = t;
        else t_plain[n_plain++] = t;
    }
    CHECK(did_later);
    const memra_shadow_info i = shadow_info();
    const char *names[4];
    CHECK(memra_routing_get(g_gpu, g_op, names, 4) >= 1);
    if (i.state == MEMRA_SHADOW_PROMOTED) {
        printf("promoted automatically after %d calls, at agreement %llu (the rule's count %d; ratio there %.3f), "
               "ratio %.3f >= %.2f\n",
               g_rule.calls, (unsigned long long)i.agreements, RULE_AGREE, g_rule.ratio_at_need, i.speed_ratio,
               RULE_RATIO);
        printf("routing of %s after the promotion: %s first\n", memra_op_name(g_op), names[0]);
        CHECK_STR_EQ(names[0], g_sh);
        const uint64_t hi = memra_ledger_hits(g_gpu, g_op, g_inc), hs = memra_ledger_hits(g_gpu, g_op, g_sh);
        call(y);
        CHECK(memra_ledger_hits(g_gpu, g_op, g_sh) == hs + 1);
        CHECK(memra_ledger_hits(g_gpu, g_op, g_inc) == hi);
        print_shadow("serving");
    } else {
        print_shadow("at the cap");
        CHECK_INT_EQ(i.state, MEMRA_SHADOW_WATCHING);
        CHECK(g_rule.calls >= AUTO_CAP);
        if (i.agreements < RULE_AGREE)
            TEST_FAIL_AT("still watching after %d calls with only %llu agreeing samples (the rule needs %d): too "
                         "many skipped to decide",
                         AUTO_CAP, (unsigned long long)i.agreements, RULE_AGREE);
        if (!(i.speed_ratio < RULE_RATIO))
            TEST_FAIL_AT("still watching after %d calls, %llu agreeing, at ratio %.4f >= %.2f", AUTO_CAP,
                         (unsigned long long)i.agreements, i.speed_ratio, RULE_RATIO);
        printf("not promoted: after %d calls and %llu agreeing samples the shadow %s is %.3fx as fast as %s (ratio "
               "at %d agreements %.3f), below the rule's %.2f\n",
               AUTO_CAP, (unsigned long long)i.agreements, g_sh, i.speed_ratio, g_inc, RULE_AGREE,
               g_rule.ratio_at_need, RULE_RATIO);
        CHECK_STR_EQ(names[0], g_inc);
        CHECK_OK(memra_shadow_stop(g_gpu, g_op));
    }
    printf("shadow runs in %s's ledger cell: %llu (samples %llu); %s served %llu calls\n", g_sh,
           (unsigned long long)(memra_ledger_hits(g_gpu, g_op, g_sh) - sh_hits0), (unsigned long long)i.samples,
           g_inc, (unsigned long long)(memra_ledger_hits(g_gpu, g_op, g_inc) - inc_hits0));
    printf("host time per call (enqueue only, stream idle before it), median: without a shadow %.1f us (%d calls); "
           "with it, sampled %.1f us (%d calls), not sampled %.1f us (%d calls)\n",
           median(t_none, TIMED_NO_SHADOW), TIMED_NO_SHADOW, median(t_sampled, n_sampled), n_sampled,
           median(t_plain, n_plain), n_plain);
    free(ref), free(y), free(t_none), free(t_sampled), free(t_plain);
    return fails;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "promote") != 0 && strcmp(argv[1], "rollback") != 0 &&
                     strcmp(argv[1], "capture") != 0 && strcmp(argv[1], "auto") != 0)) {
        fprintf(stderr, "usage: test_gpu_shadow promote|rollback|capture|auto [OP]\n");
        return 2;
    }
    g_rng = test_seed();
    char rate[16];
    snprintf(rate, sizeof rate, "%d", RATE);
    setenv("MEMRA_SHADOW_RATE", rate, 1);
    setenv("MEMRA_SHADOW_AUTO_PROMOTE", strcmp(argv[1], "auto") == 0 ? "1" : "0", 1);
    setenv("MEMRA_SHADOW_TEST_CORRUPT", strcmp(argv[1], "rollback") == 0 ? "1" : "0", 1);
    unsetenv("MEMRA_SHADOW_AGREE"); /* the rule at its documented defaults (RULE_*) */
    unsetenv("MEMRA_SHADOW_MARGIN_PCT");
    if (!setup(argc > 2 ? argv[2] : NULL)) TEST_SKIP("no CUDA device, or no GEMM op with two GPU modules");
    int fails = strcmp(argv[1], "promote") == 0    ? case_promote()
                : strcmp(argv[1], "rollback") == 0 ? case_rollback()
                : strcmp(argv[1], "capture") == 0  ? case_capture()
                                                   : case_auto();
    teardown();
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
