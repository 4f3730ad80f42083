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
 * Exits 77 without a CUDA device or without an op two GPU modules provide.
 *   test_gpu_shadow promote|rollback|capture [OP] */
#include <math.h>
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
    printf("the automatic rule (%d agreeing, ratio >= 1.05) %s have promoted it\n", 20,
           i.agreements >= 20 && i.speed_ratio >= 1.05 ? "would" : "would not");
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

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "promote") != 0 && strcmp(argv[1], "rollback") != 0 &&
                     strcmp(argv[1], "capture") != 0)) {
        fprintf(stderr, "usage: test_gpu_shadow promote|rollback|capture [OP]\n");
        return 2;
    }
    g_rng = test_seed();
    setenv("MEMRA_SHADOW_RATE", "2", 1);
    setenv("MEMRA_SHADOW_AUTO_PROMOTE", "0", 1);
    setenv("MEMRA_SHADOW_TEST_CORRUPT", strcmp(argv[1], "rollback") == 0 ? "1" : "0", 1);
    if (!setup(argc > 2 ? argv[2] : NULL)) TEST_SKIP("no CUDA device, or no GEMM op with two GPU modules");
    int fails = strcmp(argv[1], "promote") == 0    ? case_promote()
                : strcmp(argv[1], "rollback") == 0 ? case_rollback()
                                                   : case_capture();
    teardown();
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
