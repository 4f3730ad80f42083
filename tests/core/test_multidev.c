/* Several devices in one process, without GPUs: MEMRA_TEST_FAKE_DEVICES=2 gives
 * two host-backed stand-ins for CUDA ordinals 0 and 1 (core/runtime/runtime.c), each
 * with its own profile, registry admission, snapshots, scratch pool, ledger
 * and weight operands; the real memra_open, registry and weight code run.
 *
 *   test_multidev arch                 per-device MEMRA_ARCH through settings and force_arch, bad forms
 *   test_multidev operands             per-device operands and budgets, results per device, destroy frees all
 *   test_multidev kpacked              K-quant weights K-packed per device (the GGUF bytes), gemm_kr per device
 *   test_multidev routing <testprof.so>  0:sm90,1:cuda: a module scored by profile is admitted on one only
 *   test_multidev concurrent <testprof.so>  one thread per device: prepare + every lane, bit for bit
 *                                      against a serial run, while testprof is hot-added */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"

#define OUT_F 64
#define IN_F 256
#define M 6

static uint64_t g_rng;

static memra_runtime *open_fake(const char *arch, const char *force_arch, memra_status want)
{
    char a[128];
    snprintf(a, sizeof a, "MEMRA_ARCH=%s", arch ? arch : "");
    const char *settings[] = {"MEMRA_TEST_FAKE_DEVICES=2", "MEMRA_HOST_THREADS=1", arch ? a : NULL, NULL};
    memra_options o = {.struct_size = sizeof o, .no_default_modules = 1, .allow_unsafe_modules = 1,
                       .force_arch = force_arch, .settings = settings, .ignore_environment = 1};
    memra_runtime *rt = NULL;
    memra_status st = memra_open(&o, &rt);
    if (st != want) TEST_FAIL_AT("memra_open(MEMRA_ARCH=%s, force_arch=%s): %s, want %s: %s", arch ? arch : "-",
                                 force_arch ? force_arch : "-", memra_status_str(st), memra_status_str(want),
                                 memra_last_error());
    return rt;
}

static void check_dev(memra_runtime *rt, int i, const char *profile, int forced)
{
    memra_device *d = memra_device_get(rt, i);
    CHECK(d != NULL);
    CHECK_STR_EQ(memra_device_caps_get(d)->profile, profile);
    CHECK_INT_EQ(memra_device_caps_get(d)->ordinal, i);
    CHECK_INT_EQ(memra_device_profile_forced(d), forced);
}

static int case_arch(void)
{
    memra_runtime *rt = open_fake(NULL, NULL, MEMRA_STATUS_OK);
    CHECK_INT_EQ(memra_device_count(rt), 3);
    check_dev(rt, 0, "sm90", 0);
    check_dev(rt, 1, "sm90", 0);
    CHECK_INT_EQ(memra_device_profile_forced(memra_device_host(rt)), 0);
    memra_close(rt);

    rt = open_fake("0:sm90,1:cuda", NULL, MEMRA_STATUS_OK);
    check_dev(rt, 0, "sm90", 1);
    check_dev(rt, 1, "cuda", 1);
    CHECK_STR_EQ(memra_device_caps_get(memra_device_host(rt))->profile, "host");
    memra_close(rt);

    rt = open_fake(NULL, "1:sm120", MEMRA_STATUS_OK); /* the typed option */
    check_dev(rt, 0, "sm90", 0);
    check_dev(rt, 1, "sm120", 1);
    memra_close(rt);

    rt = open_fake("cuda", NULL, MEMRA_STATUS_OK); /* the plain form forces every device */
    check_dev(rt, 0, "cuda", 1);
    check_dev(rt, 1, "cuda", 1);
    memra_close(rt);

    static const struct {
        const char *v, *why;
    } bad[] = {
        {"0:nosuch", "not one of"},    {"x:sm90", "not a decimal"},   {"0:sm90,0:cuda", "named twice"},
        {"2:sm90", "ordinal 2 is no device"}, {"0:host", "host is only the plain form"}, {"0:sm90,", "ORDINAL:profile"},
        {"16:sm90", "above 15"},        {"sm91", "expected one of"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        open_fake(bad[i].v, NULL, MEMRA_STATUS_INVALID_ARGUMENT);
        char want[64];
        snprintf(want, sizeof want, "MEMRA_ARCH=%s", bad[i].v);
        CHECK_STR_CONTAINS(memra_last_error(), want);
        CHECK_STR_CONTAINS(memra_last_error(), bad[i].why);
    }
    /* No CUDA at all: a per-device list names no device. */
    const char *settings[] = {"MEMRA_ARCH=0:sm90", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings,
                       .ignore_environment = 1};
    CHECK_STATUS(memra_open(&o, &rt), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "ordinal 0 is no device");
    printf("arch: per-device forcing and %zu bad forms ok\n", sizeof bad / sizeof bad[0]);
    return 0;
}

static uint8_t *random_q8_0(int n, int k)
{
    size_t nb = (size_t)n * (k / 32);
    uint8_t *w = malloc(nb * MEMRA_Q8_0_BYTES);
    CHECK(w != NULL);
    float v[32];
    for (size_t b = 0; b < nb; b++) {
        for (int i = 0; i < 32; i++) v[i] = test_rand_f32(&g_rng) * 0.5f;
        memra_q8_0_encode(v, w + b * MEMRA_Q8_0_BYTES);
    }
    return w;
}

static uint8_t *random_e4m3(int n, int k)
{
    uint8_t *w = malloc((size_t)n * k);
    CHECK(w != NULL);
    for (size_t i = 0; i < (size_t)n * k; i++) {
        uint8_t c;
        do c = (uint8_t)test_rand_u64(&g_rng);
        while (memra_e4m3_is_nan(c) || (c & 0x7F) == 0);
        w[i] = c;
    }
    return w;
}

static float *random_f32(size_t n, float s)
{
    float *x = malloc(n * sizeof(float));
    CHECK(x != NULL);
    for (size_t i = 0; i < n; i++) x[i] = test_rand_f32(&g_rng) * s;
    return x;
}

/* The weights every case uses: Q8_0, E4M3 per-tensor, E4M3 block-128, F32. */
#define N_W 4
typedef struct weights {
    uint8_t *q8, *e1, *e2;
    float *f32, *grid;
    size_t gcount;
} weights;

static void weights_make(weights *ws)
{
    ws->q8 = random_q8_0(OUT_F, IN_F);
    ws->e1 = random_e4m3(OUT_F, IN_F);
    ws->e2 = random_e4m3(OUT_F, IN_F);
    ws->f32 = random_f32((size_t)OUT_F * IN_F, 0.25f);
    ws->gcount = (size_t)(memra_fp8_grid_rows(OUT_F) * memra_fp8_grid_cols(IN_F));
    ws->grid = malloc(ws->gcount * sizeof(float));
    CHECK(ws->grid != NULL);
    for (size_t i = 0; i < ws->gcount; i++) ws->grid[i] = 0.002f + 0.001f * (float)(test_rand_u64(&g_rng) % 16);
}

static memra_weight *weight_of(memra_runtime *rt, const weights *ws, int which)
{
    memra_weight_desc d = {.struct_size = sizeof d, .out_f = OUT_F, .in_f = IN_F};
    switch (which) {
    case 0: d.format = MEMRA_FORMAT_Q8_0, d.data = ws->q8, d.size = (size_t)OUT_F * (IN_F / 32) * MEMRA_Q8_0_BYTES; break;
    case 1: d.format = MEMRA_FORMAT_E4M3, d.data = ws->e1, d.size = (size_t)OUT_F * IN_F, d.scale = 0.03f; break;
    case 2:
        d.format = MEMRA_FORMAT_E4M3, d.data = ws->e2, d.size = (size_t)OUT_F * IN_F, d.grid = ws->grid,
        d.grid_count = ws->gcount;
        break;
    default: d.format = MEMRA_FORMAT_F32, d.data = ws->f32, d.size = (size_t)OUT_F * IN_F * 4; break;
    }
    memra_weight *w = NULL;
    CHECK_OK(memra_weight_create(rt, &d, &w));
    return w;
}

static void matmul(memra_device *dev, memra_weight *w, const float *x, int m, float *y)
{
    memset(y, 0xA5, (size_t)m * OUT_F * sizeof(float));
    memra_status st = memra_matmul(dev, w, (memra_dptr)(uintptr_t)x, m, (memra_dptr)(uintptr_t)y, NULL);
    if (st != MEMRA_STATUS_OK) TEST_FAIL_AT("memra_matmul on %s: %s: %s", memra_device_caps_get(dev)->profile,
                                            memra_status_str(st), memra_last_error());
}

static void check_same(const float *a, const float *b, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) TEST_FAIL_AT("%s: y[%d] = %a vs %a", what, i, (double)a[i], (double)b[i]);
    int nz = 0;
    for (int i = 0; i < n; i++) nz += a[i] != 0.0f;
    CHECK(nz > n / 2);
}

static int case_operands(void)
{
    weights ws;
    weights_make(&ws);
    float *x = random_f32((size_t)M * IN_F, 2.0f), y0[M * OUT_F], y1[M * OUT_F], yh[M * OUT_F];
    memra_runtime *rt = open_fake("0:sm90,1:cuda", NULL, MEMRA_STATUS_OK);
    memra_device *d0 = memra_device_get(rt, 0), *d1 = memra_device_get(rt, 1), *h = memra_device_host(rt);
    /* Budgets are per device and come from each device's profile. */
    CHECK_INT_EQ(memra_device_f16_budget_get(d0), 65536);
    CHECK_INT_EQ(memra_device_f16_budget_get(d1), 4096);

    /* Block-128 E4M3: sm90 keeps no slab (gemm_fp8_blk serves), cuda builds it
     * (as records: the host module has repack_q8_0 and gemm_q8_0r). */
    memra_weight *blk = weight_of(rt, &ws, 2);
    CHECK_OK(memra_weight_prepare(blk, d0));
    CHECK_INT_EQ(memra_weight_operands(blk, d1), 0); /* nothing on device 1 until it is prepared there */
    CHECK_INT_EQ(memra_weight_operands(blk, d0), MEMRA_OPERAND_RAW);
    CHECK_OK(memra_weight_prepare(blk, d1));
    CHECK_INT_EQ(memra_weight_operands(blk, d1), MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_RECORDS);
    CHECK_INT_EQ(memra_weight_operands(blk, d0), MEMRA_OPERAND_RAW);
    matmul(d0, blk, x, M, y0);
    matmul(d1, blk, x, M, y1);
    check_same(y0, y1, M * OUT_F, "block-128 on device 0 vs 1 (both gemm_fp8_blk)");

    /* Q8_0 under each device's budget: device 0 mirrors it, device 1 (budget 0)
     * and the host (budget 0) ride the MMQ floor on records. */
    CHECK_OK(memra_device_f16_budget_set(d1, 0));
    memra_weight *mirrored_on_host = weight_of(rt, &ws, 0);
    CHECK_OK(memra_weight_prepare(mirrored_on_host, h)); /* host budget 65536: mirror */
    CHECK_OK(memra_device_f16_budget_set(h, 0));
    memra_weight *q8 = weight_of(rt, &ws, 0);
    CHECK_OK(memra_weight_prepare(q8, d0));
    CHECK_OK(memra_weight_prepare(q8, d1));
    CHECK_OK(memra_weight_prepare(q8, h));
    CHECK(memra_weight_operands(q8, d0) & MEMRA_OPERAND_F16_MIRROR);
    CHECK_INT_EQ(memra_weight_operands(q8, d1), MEMRA_OPERAND_Q8_0_RECORDS);
    CHECK_INT_EQ(memra_weight_operands(q8, h), MEMRA_OPERAND_Q8_0_RECORDS);
    const uint64_t f16_0 = memra_ledger_hits(d0, MEMRA_OP_gemm_f16, "host");
    const uint64_t r_1 = memra_ledger_hits(d1, MEMRA_OP_gemm_q8_0r, "host");
    matmul(d0, q8, x, M, y0);
    matmul(d1, q8, x, M, y1);
    CHECK_INT_EQ(memra_ledger_hits(d0, MEMRA_OP_gemm_f16, "host"), f16_0 + 1);
    CHECK_INT_EQ(memra_ledger_hits(d0, MEMRA_OP_gemm_q8_0r, "host"), 0);
    CHECK_INT_EQ(memra_ledger_hits(d1, MEMRA_OP_gemm_q8_0r, "host"), r_1 + 1);
    CHECK_INT_EQ(memra_ledger_hits(d1, MEMRA_OP_gemm_f16, "host"), 0);
    matmul(h, q8, x, M, yh);
    check_same(y1, yh, M * OUT_F, "q8_0 records: device 1 vs host");
    matmul(h, mirrored_on_host, x, M, yh);
    check_same(y0, yh, M * OUT_F, "q8_0 mirror: device 0 vs host");

    memra_weight_destroy(blk);
    memra_weight_destroy(q8);
    memra_weight_destroy(mirrored_on_host);
    /* Destroy frees every device's operands: each device's mirror budget
     * (1 MB, exactly one 512 x 1024 mirror) is free again afterwards. */
    CHECK_OK(memra_device_f16_budget_set(d0, 1));
    CHECK_OK(memra_device_f16_budget_set(d1, 1));
    float *big = random_f32(512 * 1024, 0.1f);
    memra_weight_desc bd = {.struct_size = sizeof bd, .format = MEMRA_FORMAT_Q8_0, .out_f = 512, .in_f = 1024};
    uint8_t *bq = malloc((size_t)512 * 32 * MEMRA_Q8_0_BYTES);
    CHECK(bq != NULL);
    for (int b = 0; b < 512 * 32; b++) memra_q8_0_encode(big + b * 32, bq + (size_t)b * MEMRA_Q8_0_BYTES);
    bd.data = bq;
    bd.size = (size_t)512 * 32 * MEMRA_Q8_0_BYTES;
    memra_weight *wa, *wb, *wc;
    CHECK_OK(memra_weight_create(rt, &bd, &wa));
    CHECK_OK(memra_weight_create(rt, &bd, &wb));
    CHECK_OK(memra_weight_create(rt, &bd, &wc));
    CHECK_OK(memra_weight_prepare(wa, d0));
    CHECK_OK(memra_weight_prepare(wa, d1));
    CHECK_OK(memra_weight_prepare(wb, d0));
    CHECK_OK(memra_weight_prepare(wb, d1));
    CHECK(memra_weight_operands(wa, d0) & MEMRA_OPERAND_F16_MIRROR);
    CHECK(memra_weight_operands(wa, d1) & MEMRA_OPERAND_F16_MIRROR);
    CHECK(!(memra_weight_operands(wb, d0) & MEMRA_OPERAND_F16_MIRROR));
    CHECK(!(memra_weight_operands(wb, d1) & MEMRA_OPERAND_F16_MIRROR));
    memra_weight_destroy(wa);
    CHECK_OK(memra_weight_prepare(wc, d0));
    CHECK_OK(memra_weight_prepare(wc, d1));
    CHECK(memra_weight_operands(wc, d0) & MEMRA_OPERAND_F16_MIRROR);
    CHECK(memra_weight_operands(wc, d1) & MEMRA_OPERAND_F16_MIRROR);
    memra_weight_destroy(wb);
    memra_weight_destroy(wc);
    memra_close(rt);
    free(big);
    free(bq);
    free(x);
    free(ws.q8), free(ws.e1), free(ws.e2), free(ws.f32), free(ws.grid);
    printf("operands: per-device operands, budgets, routes and destroy ok\n");
    return 0;
}

/* testprof is admitted on the sm90 device only, by its own score. */
static void check_prof_routing(memra_runtime *rt)
{
    memra_device *d0 = memra_device_get(rt, 0), *d1 = memra_device_get(rt, 1);
    const char *names[8];
    CHECK_INT_EQ(memra_module_score(d0, "testprof"), 30);
    CHECK_INT_EQ(memra_module_score(d1, "testprof"), 0);
    CHECK_INT_EQ(memra_routing_get(d0, MEMRA_OP_gemm_f16, names, 8), 2);
    CHECK_STR_EQ(names[0], "testprof");
    CHECK_STR_EQ(names[1], "host");
    CHECK_INT_EQ(memra_routing_get(d1, MEMRA_OP_gemm_f16, names, 8), 1);
    CHECK_STR_EQ(names[0], "host");
}

typedef struct decl_count {
    const char *device;
    uint64_t entries;
} decl_count;

static void count_prof(const memra_ledger_row *r, void *user)
{
    decl_count *c = user;
    if (r->reason == NULL && strcmp(r->module, "testprof") == 0 && strcmp(r->device, c->device) == 0)
        c->entries += r->entries;
}

static uint64_t prof_entries(memra_runtime *rt, memra_device *dev)
{
    char label[64];
    snprintf(label, sizeof label, "fake:%d %s", memra_device_caps_get(dev)->ordinal, memra_device_caps_get(dev)->profile);
    decl_count c = {.device = label};
    memra_ledger_visit(rt, count_prof, &c);
    return c.entries;
}

static int case_routing(const char *prof)
{
    weights ws;
    weights_make(&ws);
    float *x = random_f32((size_t)M * IN_F, 2.0f), y0[M * OUT_F], y1[M * OUT_F];
    memra_runtime *rt = open_fake("0:sm90,1:cuda", NULL, MEMRA_STATUS_OK);
    memra_device *d0 = memra_device_get(rt, 0), *d1 = memra_device_get(rt, 1);
    CHECK_OK(memra_module_load(rt, prof));
    check_prof_routing(rt);
    memra_weight *w = weight_of(rt, &ws, 3);
    matmul(d0, w, x, M, y0);
    matmul(d1, w, x, M, y1);
    check_same(y0, y1, M * OUT_F, "f32 on device 0 (testprof declined) vs 1");
    CHECK_INT_EQ(prof_entries(rt, d0), 1);
    CHECK_INT_EQ(memra_ledger_hits(d0, MEMRA_OP_gemm_f16, "testprof"), 0);
    CHECK_INT_EQ(prof_entries(rt, d1), 0);
    CHECK_INT_EQ(memra_ledger_hits(d0, MEMRA_OP_gemm_f16, "host"), 1);
    CHECK_INT_EQ(memra_ledger_hits(d1, MEMRA_OP_gemm_f16, "host"), 1);
    memra_weight_destroy(w);
    memra_close(rt);
    /* Both on sm90: both admit it. */
    rt = open_fake(NULL, NULL, MEMRA_STATUS_OK);
    CHECK_OK(memra_module_load(rt, prof));
    CHECK_INT_EQ(memra_module_score(memra_device_get(rt, 0), "testprof"), 30);
    CHECK_INT_EQ(memra_module_score(memra_device_get(rt, 1), "testprof"), 30);
    memra_close(rt);
    free(x);
    free(ws.q8), free(ws.e1), free(ws.e2), free(ws.f32), free(ws.grid);
    printf("routing: testprof admitted by profile on device 0 only; results equal\n");
    return 0;
}

/* ---- one thread per device ---------------------------------------------------- */

#define CALLS 120
static memra_runtime *g_rt;
static memra_weight *g_w[N_W];
static float *g_x;
static float *g_ref[2][N_W][M + 1];
static pthread_barrier_t g_bar;
static atomic_int g_fail, g_loaded;
static int g_after[2]; /* calls each device made after the hot-add returned */

static void *device_thread(void *arg)
{
    const int d = (int)(intptr_t)arg;
    memra_device *dev = memra_device_get(g_rt, d);
    float y[M * OUT_F];
    pthread_barrier_wait(&g_bar);
    /* Prepare every weight on this device while the other thread does the same on its own. */
    for (int w = 0; w < N_W; w++) {
        memra_status st = memra_weight_prepare(g_w[w], dev);
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "device %d prepare %d: %s\n", d, w, memra_last_error());
            atomic_fetch_add(&g_fail, 1);
        }
    }
    for (int i = 0; i < CALLS || g_after[d] < 20; i++) {
        if (atomic_load(&g_loaded)) g_after[d]++;
        const int w = i % N_W, m = 1 + (i * 5 + d) % M;
        memset(y, 0xA5, sizeof y);
        memra_status st = memra_matmul(dev, g_w[w], (memra_dptr)(uintptr_t)g_x, m, (memra_dptr)(uintptr_t)y, NULL);
        if (st != MEMRA_STATUS_OK || memcmp(y, g_ref[d][w][m], (size_t)m * OUT_F * sizeof(float)) != 0) {
            fprintf(stderr, "device %d call %d (weight %d, m %d): %s\n", d, i, w, m,
                    st == MEMRA_STATUS_OK ? "differs from the serial run" : memra_last_error());
            atomic_fetch_add(&g_fail, 1);
        }
    }
    return NULL;
}

static int case_concurrent(const char *prof)
{
    weights ws;
    weights_make(&ws);
    g_x = random_f32((size_t)M * IN_F, 2.0f);
    /* Serial references: a first runtime, the same configuration, one call at a time. */
    memra_runtime *rt = open_fake("0:sm90,1:cuda", NULL, MEMRA_STATUS_OK);
    CHECK_OK(memra_device_f16_budget_set(memra_device_get(rt, 1), 0));
    for (int w = 0; w < N_W; w++) {
        memra_weight *wt = weight_of(rt, &ws, w);
        for (int d = 0; d < 2; d++)
            for (int m = 1; m <= M; m++) {
                g_ref[d][w][m] = malloc((size_t)m * OUT_F * sizeof(float));
                CHECK(g_ref[d][w][m] != NULL);
                matmul(memra_device_get(rt, d), wt, g_x, m, g_ref[d][w][m]);
            }
        memra_weight_destroy(wt);
    }
    memra_close(rt);

    g_rt = open_fake("0:sm90,1:cuda", NULL, MEMRA_STATUS_OK);
    CHECK_OK(memra_device_f16_budget_set(memra_device_get(g_rt, 1), 0));
    for (int w = 0; w < N_W; w++) g_w[w] = weight_of(g_rt, &ws, w);
    pthread_barrier_init(&g_bar, NULL, 3);
    pthread_t th[2];
    for (int d = 0; d < 2; d++) CHECK_INT_EQ(pthread_create(&th[d], NULL, device_thread, (void *)(intptr_t)d), 0);
    pthread_barrier_wait(&g_bar);
    /* Hot-add while both devices serve: each admits it by its own score. */
    CHECK_OK(memra_module_load(g_rt, prof));
    atomic_store(&g_loaded, 1);
    for (int d = 0; d < 2; d++) pthread_join(th[d], NULL);
    pthread_barrier_destroy(&g_bar);
    check_prof_routing(g_rt);
    const int fails = atomic_load(&g_fail);
    printf("concurrent: 2 devices x (prepare %d weights + %d calls), testprof hot-added: %d mismatches\n", N_W, CALLS,
           fails);
    CHECK_INT_EQ(fails, 0);
    /* Each device's lanes served: the floor on device 1, the mirror on device 0. */
    CHECK(memra_ledger_hits(memra_device_get(g_rt, 1), MEMRA_OP_gemm_q8_0r, "host") > 0);
    CHECK(memra_ledger_hits(memra_device_get(g_rt, 0), MEMRA_OP_gemm_q8_0r, "host") == 0);
    CHECK(memra_ledger_hits(memra_device_get(g_rt, 0), MEMRA_OP_gemm_fp8, "host") > 0);
    CHECK(memra_ledger_hits(memra_device_get(g_rt, 1), MEMRA_OP_gemm_fp8_blk, "host") > 0);
    for (int w = 0; w < N_W; w++) memra_weight_destroy(g_w[w]);
    memra_close(g_rt);
    for (int d = 0; d < 2; d++)
        for (int w = 0; w < N_W; w++)
            for (int m = 1; m <= M; m++) free(g_ref[d][w][m]);
    free(g_x);
    free(ws.q8), free(ws.e1), free(ws.e2), free(ws.f32), free(ws.grid);
    return 0;
}

/* The K-quant floor on fake devices (0: sm90, 1: sm120 profile): at f16
 * budget 0 prepare K-packs each Q4_K / Q5_K / Q6_K weight per device (its
 * operand: K records, exactly the GGUF bytes, in place of the raw copy; the
 * plan says so before prepare), and memra_matmul rides gemm_kr on each
 * device, bit for bit the host device's result on its own K-packed copy. */
static int case_kpacked(void)
{
    static const memra_format fm[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    memra_runtime *rt = open_fake("0:sm90,1:sm120", NULL, MEMRA_STATUS_OK);
    memra_device *dev[3] = {memra_device_get(rt, 0), memra_device_get(rt, 1), memra_device_host(rt)};
    for (int d = 0; d < 3; d++) CHECK_OK(memra_device_f16_budget_set(dev[d], 0));
    float *x = random_f32((size_t)M * IN_F, 2.0f), y[3][M * OUT_F];
    for (size_t fi = 0; fi < 3; fi++) {
        const memra_format f = fm[fi];
        const size_t bytes = (size_t)memra_format_row_bytes(f, IN_F) * OUT_F;
        uint8_t *wq = malloc(bytes);
        CHECK(wq != NULL);
        for (size_t i = 0; i < bytes; i++) wq[i] = (uint8_t)test_rand_u64(&g_rng);
        for (size_t o = 0; o < bytes; o += (size_t)memra_format_block_bytes(f)) { /* finite small d (and dmin) */
            const size_t at = f == MEMRA_FORMAT_Q6_K ? 208 : 0;
            wq[o + at] = (uint8_t)test_rand_u64(&g_rng), wq[o + at + 1] = 0x1C;
            if (f != MEMRA_FORMAT_Q6_K) wq[o + 2] = (uint8_t)test_rand_u64(&g_rng), wq[o + 3] = 0x9C;
        }
        memra_weight_desc wd = {.struct_size = sizeof wd, .format = f, .out_f = OUT_F, .in_f = IN_F, .data = wq,
                                .size = bytes, .name = memra_format_name(f)};
        memra_weight *w = NULL;
        CHECK_OK(memra_weight_create(rt, &wd, &w));
        for (int d = 0; d < 3; d++) {
            memra_weight_plan p = {.struct_size = sizeof p};
            CHECK_OK(memra_weight_plan_get(w, dev[d], &p));
            CHECK_STR_EQ(p.lane, "mmq K records");
            CHECK_INT_EQ((long long)p.operand_bytes, (long long)bytes); /* the GGUF's bytes, not 10 bits a value */
            CHECK_OK(memra_weight_prepare(w, dev[d]));
            CHECK_INT_EQ(memra_weight_operands(w, dev[d]), MEMRA_OPERAND_K_RECORDS);
            const uint64_t h0 = memra_ledger_hits(dev[d], MEMRA_OP_gemm_kr, "host");
            matmul(dev[d], w, x, M, y[d]);
            CHECK_INT_EQ(memra_ledger_hits(dev[d], MEMRA_OP_gemm_kr, "host"), h0 + 1);
        }
        check_same(y[0], y[2], M * OUT_F, "K-packed: device 0 (sm90) vs host");
        check_same(y[1], y[2], M * OUT_F, "K-packed: device 1 (sm120) vs host");
        memra_weight_destroy(w);
        free(wq);
    }
    memra_close(rt);
    free(x);
    printf("kpacked: K-packed operands (the GGUF bytes) prepared and served per fake device ok\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_multidev arch|operands|kpacked|routing|concurrent [testprof.so]");
    g_rng = test_seed();
    if (strcmp(argv[1], "arch") == 0) return case_arch();
    if (strcmp(argv[1], "operands") == 0) return case_operands();
    if (strcmp(argv[1], "kpacked") == 0) return case_kpacked();
    if (argc < 3) TEST_FAIL_AT("%s needs testprof.so", argv[1]);
    if (strcmp(argv[1], "routing") == 0) return case_routing(argv[2]);
    if (strcmp(argv[1], "concurrent") == 0) return case_concurrent(argv[2]);
    TEST_FAIL_AT("unknown case %s", argv[1]);
}
