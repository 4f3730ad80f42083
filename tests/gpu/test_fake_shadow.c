/* gpu-build: the GPU shadow path's mechanics on a fake CUDA driver
 * (fake_cuda.c: launches run nothing, device memory is host memory, events
 * are always complete and 1 ms apart), so no GPU is needed and ASan sees every
 * stream, event, buffer and pinned block the shadow makes and frees. A fake
 * cc 12.0 device, where sm120 and mmq both provide gemm_q8_0r: mmq shadows
 * sm120 through memra_matmul on a Q8_0 weight.
 *   agree     MEMRA_SHADOW_RATE=2, MEMRA_SHADOW_AGREE=5, automatic promotion
 *             at margin 0: the run started at one sampled call is judged at
 *             the next (outputs of the fake are all zero and agree; the
 *             events give both 1 ms, ratio 1), so promotion comes at the
 *             sixth sampled call (five judged); the shadow's ledger cell
 *             counts its runs; routing then puts mmq first.
 *   rollback  MEMRA_SHADOW_TEST_CORRUPT=1: the first judged sample (the
 *             second sampled call) rolls back with a "mismatch" reason.
 *   unload    the shadow module unloaded while a run is pending: the
 *             unload stops the shadow first (state stopped, the reason names
 *             the unload; the run waited for and its GPU side freed), then no
 *             more samples; a stop after it finds no shadow (NOT_FOUND).
 *   close     memra_close with a run pending (freed there; ASan's leak check).
 *   rows      the judged rows and the copies: y holds 7.0 in row 2 only, the fake's
 *             kernels write nothing, so the shadow's output is all zeros; with M = 20
 *             the rows judged are 0, 2, .., 14 (stride (M - 1) / 7 = 2), so the first
 *             judged sample must roll back naming y[2, 0] with the incumbent's 7 (a
 *             copy at any other stride would carry zeros and agree); and a sampled
 *             call enqueues 4 copies (the activation, the incumbent's rows in one
 *             strided copy, their read-back and the shadow's strided read-back): the
 *             one sample of the 4 calls (the second sampled call judges it and rolls
 *             back) makes 4, where copying row by row made 25.
 * The numerics of a real run are tests/gpu/test_gpu_shadow.c's (label gpu).
 *   test_fake_shadow FAKE_CUDA_SO agree|rollback|unload|close|rows */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "fake_env.h"

#define M 20
#define N 256
#define K 512

static memra_runtime *g_rt;
static memra_device *g_dev;
static memra_weight *g_w;
static memra_buffer *g_x, *g_y;

static memra_shadow_info info(void)
{
    memra_shadow_info i = {.struct_size = sizeof i};
    CHECK_OK(memra_shadow_get(g_dev, MEMRA_OP_gemm_q8_0r, &i));
    printf("  state %d calls %llu samples %llu agreements %llu mismatches %llu skipped %llu ratio %.2f %s\n", i.state,
           (unsigned long long)i.calls, (unsigned long long)i.samples, (unsigned long long)i.agreements,
           (unsigned long long)i.mismatches, (unsigned long long)i.skipped, i.speed_ratio, i.reason);
    return i;
}

static void call(void)
{
    CHECK_OK(memra_matmul(g_dev, g_w, memra_buffer_ptr(g_x), M, memra_buffer_ptr(g_y), NULL));
}

static void open_fake(void)
{
    CHECK_OK(memra_open(NULL, &g_rt));
    for (int i = 0; i < memra_device_count(g_rt) && g_dev == NULL; i++)
        if (memra_device_caps_get(memra_device_get(g_rt, i))->cc == 120) g_dev = memra_device_get(g_rt, i);
    if (g_dev == NULL) TEST_SKIP("no fake cc 12.0 device served (driver: %s)", memra_driver_status(g_rt));
    const char *names[8];
    const int n = memra_routing_get(g_dev, MEMRA_OP_gemm_q8_0r, names, 8);
    if (n < 2 || strcmp(names[0], "sm120") != 0 || strcmp(names[1], "mmq") != 0)
        TEST_SKIP("gemm_q8_0r on the fake cc 12.0 device is not sm120 then mmq (%d lanes): no sm_120a images?", n);
    CHECK_OK(memra_device_f16_budget_set(g_dev, 0)); /* the floor, not an f16 mirror */
    const size_t nb = (size_t)N * (K / 32);
    uint8_t *q = malloc(nb * MEMRA_Q8_0_BYTES);
    CHECK(q != NULL);
    uint64_t rng = test_seed();
    for (size_t b = 0; b < nb * MEMRA_Q8_0_BYTES; b++) q[b] = (uint8_t)(test_rand_u64(&rng) % 255u);
    for (size_t b = 0; b < nb; b++) { /* finite f16 scales */
        const uint16_t s = memra_f16_from_f32(0.01f);
        q[b * MEMRA_Q8_0_BYTES] = (uint8_t)s, q[b * MEMRA_Q8_0_BYTES + 1] = (uint8_t)(s >> 8);
    }
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = N, .in_f = K, .data = q,
                           .size = nb * MEMRA_Q8_0_BYTES, .name = "fake shadow"};
    CHECK_OK(memra_weight_create(g_rt, &d, &g_w));
    free(q);
    CHECK_OK(memra_weight_prepare(g_w, g_dev));
    CHECK(memra_weight_operands(g_w, g_dev) & MEMRA_OPERAND_Q8_0_RECORDS);
    CHECK_OK(memra_buffer_create(g_dev, (size_t)M * K * 4, &g_x));
    CHECK_OK(memra_buffer_create(g_dev, (size_t)M * N * 4, &g_y));
}

static void close_fake(void)
{
    memra_buffer_destroy(g_x);
    memra_buffer_destroy(g_y);
    memra_weight_destroy(g_w);
    memra_close(g_rt);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_fake_shadow FAKE_CUDA_SO agree|rollback|unload|close|rows\n");
        return 2;
    }
    const char *c = argv[2];
    fake_env_set(argv[1], "120");
    setenv("MEMRA_SHADOW_RATE", "2", 1);
    setenv("MEMRA_SHADOW_AGREE", "5", 1);
    setenv("MEMRA_SHADOW_MARGIN_PCT", "0", 1);
    setenv("MEMRA_SHADOW_AUTO_PROMOTE", "1", 1);
    setenv("MEMRA_SHADOW_TEST_CORRUPT", strcmp(c, "rollback") == 0 ? "1" : "0", 1);
    unsetenv("MEMRA_ARCH");
    unsetenv("MEMRA_PREFER");
    unsetenv("MEMRA_DISABLE");
    unsetenv("MEMRA_MODULE_PATH");
    open_fake();
    const memra_op op = MEMRA_OP_gemm_q8_0r;
    CHECK_OK(memra_shadow_start(g_dev, op, "mmq", NULL));
    const uint64_t h0 = memra_ledger_hits(g_dev, op, "mmq");
    if (strcmp(c, "agree") == 0) {
        int calls = 0;
        while (calls < 40 && info().state == MEMRA_SHADOW_WATCHING) call(), calls++;
        memra_shadow_info i = info();
        printf("promoted after %d calls\n", calls);
        CHECK_INT_EQ(i.state, MEMRA_SHADOW_PROMOTED);
        CHECK_INT_EQ(calls, 12); /* sampled calls 2, 4, ..., 12: the sixth judges the fifth run */
        CHECK(i.agreements == 5 && i.mismatches == 0);
        CHECK(i.speed_ratio > 0.99 && i.speed_ratio < 1.01);
        CHECK(memra_ledger_hits(g_dev, op, "mmq") - h0 == 5); /* the runs; the sixth sample judged, then promoted */
        const char *names[4];
        CHECK(memra_routing_get(g_dev, op, names, 4) >= 2);
        CHECK_STR_EQ(names[0], "mmq");
    } else if (strcmp(c, "rollback") == 0) {
        int calls = 0;
        while (calls < 40 && info().state == MEMRA_SHADOW_WATCHING) call(), calls++;
        memra_shadow_info i = info();
        CHECK_INT_EQ(i.state, MEMRA_SHADOW_ROLLED_BACK);
        CHECK_INT_EQ(calls, 4);
        CHECK(i.mismatches == 1);
        CHECK_STR_CONTAINS(i.reason, "mismatch");
        const char *names[4];
        const int n = memra_routing_get(g_dev, op, names, 4);
        for (int l = 0; l < n; l++) CHECK(strcmp(names[l], "mmq") != 0);
    } else if (strcmp(c, "rows") == 0) {
        void *fake = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD); /* the driver memra opened */
        int (*copies)(void) = NULL;
        if (fake != NULL) *(void **)&copies = dlsym(fake, "memra_fake_cuda_copies");
        CHECK(copies != NULL);
        float *y = calloc((size_t)M * N, sizeof *y);
        CHECK(y != NULL);
        for (int j = 0; j < N; j++) y[2 * N + j] = 7.0f;
        CHECK_OK(memra_buffer_write(g_y, 0, y, (size_t)M * N * sizeof *y));
        free(y);
        const int c0 = copies();
        int calls = 0;
        while (calls < 40 && info().state == MEMRA_SHADOW_WATCHING) call(), calls++;
        memra_shadow_info i = info();
        const int nc = copies() - c0;
        printf("rolled back after %d calls, %d copies\n", calls, nc);
        CHECK_INT_EQ(i.state, MEMRA_SHADOW_ROLLED_BACK);
        CHECK_INT_EQ(calls, 4);
        CHECK_STR_CONTAINS(i.reason, "y[2,0]");
        CHECK_STR_CONTAINS(i.reason, "incumbent 7,");
        CHECK_INT_EQ(i.samples, 1);
        CHECK_INT_EQ(nc, 4);
        dlclose(fake);
    } else if (strcmp(c, "unload") == 0) {
        call(), call(); /* a run pending */
        CHECK(info().samples == 1);
        CHECK_OK(memra_module_unload(g_rt, "mmq"));
        call(), call(); /* no shadow lane any more: nothing sampled */
        CHECK(info().samples == 1);
        memra_shadow_info i = info();
        CHECK_INT_EQ(i.state, MEMRA_SHADOW_STOPPED);
        CHECK_STR_CONTAINS(i.reason, "unloaded");
        CHECK_STATUS(memra_shadow_stop(g_dev, op), MEMRA_STATUS_NOT_FOUND); /* nothing left to stop */
        CHECK_INT_EQ(info().state, MEMRA_SHADOW_STOPPED);
    } else if (strcmp(c, "close") == 0) {
        call(), call(); /* a run pending when the runtime closes */
        CHECK(info().samples == 1);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    close_fake();
    printf("PASS\n");
    return 0;
}
