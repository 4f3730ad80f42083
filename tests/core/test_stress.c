/* Concurrency on the host device: 8 threads, each with its own Q8_0, E4M3
 * (per-tensor) and E4M3 block-128 weight plus one Q6_K weight shared by all,
 * 200 calls each at varying m (memra_matmul, memra_matmul_ex, and a direct
 * memra_module_call of quant_q8_1 every fifth call), while another thread
 * loops memra_routing_configure and the load / unload of two test modules
 * (testgood: a scale op matmul never uses; testq8r: a gemm_q8_0r lane that
 * declines every call, so the host lane behind it still serves). Every result
 * is compared bit for bit with the same call made serially before the threads
 * start: the lanes serving each call are the same in both runs, so any
 * difference is a race (shared scratch, a torn routing snapshot).
 *
 * The f16 budget is 0, so the Q8_0 weights ride the MMQ floor (the core's
 * q8_1 scratch, the records) and the Q6_K weight a transient f16 mirror (the
 * core's f16_mirror scratch): the two places where per-device scratch used to
 * be shared by every caller. gemm_kr is disabled at open (MEMRA_DISABLE), so
 * the Q6_K weight gets no K records at prepare and keeps the transient
 * mirror whatever the chaos thread does to the routing later.
 *
 * usage: test_stress <testgood.so> <testq8r.so> */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"

#define THREADS 8
#define CALLS 200
#define M_MAX 8
#define OUT_F 64
#define IN_F 256
#define N_W 4 /* per thread: q8_0, e4m3, e4m3 block-128, shared q6_k */

static uint64_t g_rng;
static memra_runtime *g_rt;
static memra_device *g_host;
static memra_weight *g_w[THREADS][N_W];
static float *g_x[THREADS][N_W];              /* [M_MAX x IN_F] */
static float *g_ref[THREADS][N_W][M_MAX + 1]; /* [m x OUT_F] serial results */
static uint8_t *g_qref[THREADS];              /* quant_q8_1 of g_x[t][0] at M_MAX, serial */
static atomic_int g_stop;
static atomic_int g_failures;
static const char *g_mod_good, *g_mod_q8r;

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

/* Q6_K blocks (kept off the K-quant floor here, see above): random ql, qh and int8 sub-block scales, and
 * an f16 d in [2^-8, 2^-4) (exponent 7..10, random mantissa) at bytes 208..209. */
static uint8_t *random_q6_k(int n, int k)
{
    size_t nb = (size_t)n * (k / 256);
    uint8_t *w = malloc(nb * MEMRA_Q6_K_BYTES);
    CHECK(w != NULL);
    for (size_t b = 0; b < nb; b++) {
        uint8_t *blk = w + b * MEMRA_Q6_K_BYTES;
        for (int i = 0; i < 208; i++) blk[i] = (uint8_t)test_rand_u64(&g_rng);
        uint16_t d = (uint16_t)(((7 + test_rand_u64(&g_rng) % 4) << 10) | (test_rand_u64(&g_rng) & 0x3FF));
        blk[208] = (uint8_t)d;
        blk[209] = (uint8_t)(d >> 8);
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

static memra_weight *make(memra_format f, const uint8_t *data, size_t size, float scale, const float *grid,
                          size_t grid_count, const char *name)
{
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = OUT_F, .in_f = IN_F, .data = data,
                           .size = size, .scale = scale, .grid = grid, .grid_count = grid_count, .name = name};
    memra_weight *w;
    CHECK_OK(memra_weight_create(g_rt, &d, &w));
    CHECK_OK(memra_weight_prepare(w, g_host));
    return w;
}

static void make_weights(void)
{
    uint8_t *q6 = random_q6_k(OUT_F, IN_F);
    memra_weight *shared = make(MEMRA_FORMAT_Q6_K, q6, (size_t)OUT_F * (IN_F / 256) * MEMRA_Q6_K_BYTES, 0.0f, NULL, 0,
                                "shared q6_k");
    free(q6);
    const size_t gcount = (size_t)(memra_fp8_grid_rows(OUT_F) * memra_fp8_grid_cols(IN_F));
    float *grid = malloc(gcount * sizeof(float));
    CHECK(grid != NULL);
    for (int t = 0; t < THREADS; t++) {
        uint8_t *q8 = random_q8_0(OUT_F, IN_F);
        g_w[t][0] = make(MEMRA_FORMAT_Q8_0, q8, (size_t)OUT_F * (IN_F / 32) * MEMRA_Q8_0_BYTES, 0.0f, NULL, 0, "q8_0");
        free(q8);
        uint8_t *e = random_e4m3(OUT_F, IN_F);
        g_w[t][1] = make(MEMRA_FORMAT_E4M3, e, (size_t)OUT_F * IN_F, 0.01f + 0.01f * (float)t, NULL, 0, "e4m3");
        free(e);
        e = random_e4m3(OUT_F, IN_F);
        for (size_t i = 0; i < gcount; i++) grid[i] = 0.002f + 0.001f * (float)((test_rand_u64(&g_rng) % 16));
        g_w[t][2] = make(MEMRA_FORMAT_E4M3, e, (size_t)OUT_F * IN_F, 0.0f, grid, gcount, "e4m3 block-128");
        free(e);
        g_w[t][3] = shared;
        for (int w = 0; w < N_W; w++) {
            g_x[t][w] = malloc((size_t)M_MAX * IN_F * sizeof(float));
            CHECK(g_x[t][w] != NULL);
            for (int i = 0; i < M_MAX * IN_F; i++) g_x[t][w][i] = test_rand_f32(&g_rng) * 4.0f;
        }
    }
    free(grid);
}

static int call_matmul(int t, int w, int m, float *y, int use_ex)
{
    if (use_ex) {
        memra_matmul_args a = {.struct_size = sizeof a, .x = (memra_dptr)(uintptr_t)g_x[t][w], .m = m,
                               .y = (memra_dptr)(uintptr_t)y, .alpha = 1.0f};
        return memra_matmul_ex(g_host, g_w[t][w], &a);
    }
    return memra_matmul(g_host, g_w[t][w], (memra_dptr)(uintptr_t)g_x[t][w], m, (memra_dptr)(uintptr_t)y, NULL);
}

static int call_quant(int t, uint8_t *dst)
{
    memra_op_args a = {.struct_size = sizeof a, .src = (memra_dptr)(uintptr_t)g_x[t][0], .rows = M_MAX, .cols = IN_F,
                       .dst = (memra_dptr)(uintptr_t)dst};
    return memra_module_call(g_host, "host", MEMRA_OP_quant_q8_1, &a);
}

static void serial_run(void)
{
    for (int t = 0; t < THREADS; t++) {
        for (int w = 0; w < N_W; w++) {
            for (int m = 1; m <= M_MAX; m++) {
                g_ref[t][w][m] = malloc((size_t)m * OUT_F * sizeof(float));
                CHECK(g_ref[t][w][m] != NULL);
                CHECK_OK(call_matmul(t, w, m, g_ref[t][w][m], 0));
            }
        }
        g_qref[t] = malloc(memra_q8_1_bytes(M_MAX, IN_F));
        CHECK(g_qref[t] != NULL);
        CHECK_OK(call_quant(t, g_qref[t]));
    }
    /* The serial results are real products: not all zero. */
    int nonzero = 0;
    for (int i = 0; i < M_MAX * OUT_F; i++) nonzero += g_ref[0][0][M_MAX][i] != 0.0f;
    CHECK(nonzero > M_MAX * OUT_F / 2);
}

static void *worker(void *arg)
{
    const int t = (int)(intptr_t)arg;
    float *y = malloc((size_t)M_MAX * OUT_F * sizeof(float));
    uint8_t *q = malloc(memra_q8_1_bytes(M_MAX, IN_F));
    if (y == NULL || q == NULL) TEST_FAIL_AT("out of memory");
    for (int i = 0; i < CALLS; i++) {
        const int w = i % N_W, m = 1 + (i * 7 + t) % M_MAX;
        memset(y, 0xA5, (size_t)M_MAX * OUT_F * sizeof(float));
        memra_status st = call_matmul(t, w, m, y, i & 1);
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "thread %d call %d (weight %d, m %d): %s: %s\n", t, i, w, m, memra_status_str(st),
                    memra_last_error());
            atomic_fetch_add(&g_failures, 1);
        } else if (memcmp(y, g_ref[t][w][m], (size_t)m * OUT_F * sizeof(float)) != 0) {
            int j = 0;
            while (j < m * OUT_F && memcmp(&y[j], &g_ref[t][w][m][j], sizeof(float)) == 0) j++;
            fprintf(stderr, "thread %d call %d (weight %d, m %d): y[%d] = %a, serial %a\n", t, i, w, m, j, (double)y[j],
                    (double)g_ref[t][w][m][j]);
            atomic_fetch_add(&g_failures, 1);
        }
        if (i % 5 == 0) {
            st = call_quant(t, q);
            if (st != MEMRA_STATUS_OK || memcmp(q, g_qref[t], memra_q8_1_bytes(M_MAX, IN_F)) != 0) {
                fprintf(stderr, "thread %d call %d: quant_q8_1 by memra_module_call differs from serial (%s)\n", t, i,
                        memra_status_str(st));
                atomic_fetch_add(&g_failures, 1);
            }
        }
    }
    free(y);
    free(q);
    return NULL;
}

/* Routing and module churn that changes no result. */
static void *chaos(void *arg)
{
    (void)arg;
    long rounds = 0;
    while (!atomic_load(&g_stop)) {
        memra_status st = memra_routing_configure(g_rt, "gemm_f16=host,gemm_q8_0r=host", "accprobe");
        if (st == MEMRA_STATUS_OK) st = memra_module_load(g_rt, g_mod_good);
        if (st == MEMRA_STATUS_OK) st = memra_module_load(g_rt, g_mod_q8r);
        if (st == MEMRA_STATUS_OK) st = memra_routing_configure(g_rt, "", "");
        if (st == MEMRA_STATUS_OK) st = memra_module_unload(g_rt, "testq8r");
        if (st == MEMRA_STATUS_OK) st = memra_module_unload(g_rt, "testgood");
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "chaos round %ld: %s: %s\n", rounds, memra_status_str(st), memra_last_error());
            atomic_fetch_add(&g_failures, 1);
            break;
        }
        rounds++;
    }
    printf("chaos: %ld rounds of routing_configure + load/unload of 2 modules\n", rounds);
    if (rounds == 0) atomic_fetch_add(&g_failures, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) TEST_FAIL_AT("usage: test_stress <testgood.so> <testq8r.so>");
    g_mod_good = argv[1];
    g_mod_q8r = argv[2];
    g_rng = test_seed();
    const char *settings[] = {"MEMRA_F16_BUDGET_MB=0", "MEMRA_HOST_THREADS=2", "MEMRA_DISABLE=gemm_kr", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .allow_unsafe_modules = 1,
                       .settings = settings};
    CHECK_OK(memra_open(&o, &g_rt));
    g_host = memra_device_host(g_rt);
    CHECK_INT_EQ(memra_device_f16_budget_get(g_host), 0);
    make_weights();
    serial_run();

    pthread_t th[THREADS], ch;
    CHECK_INT_EQ(pthread_create(&ch, NULL, chaos, NULL), 0);
    for (int t = 0; t < THREADS; t++) CHECK_INT_EQ(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t), 0);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    atomic_store(&g_stop, 1);
    pthread_join(ch, NULL);

    /* Every lane the test means to cover served calls. */
    static const char *const ops[] = {"gemm_q8_0r", "gemm_fp8", "quant_q8_1", "gemm_f16", "dequant_f16"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        uint64_t hits = memra_ledger_hits(g_host, memra_op_from_name(ops[i]), "host");
        printf("host %-12s hits %llu\n", ops[i], (unsigned long long)hits);
        CHECK(hits >= (uint64_t)THREADS * CALLS / N_W / 2);
    }
    const uint64_t blk = memra_ledger_hits(g_host, MEMRA_OP_gemm_fp8_blk, "host") +
                         memra_ledger_hits(g_host, MEMRA_OP_gemm_q8_0, "host");
    CHECK(blk > 0);
    const int failures = atomic_load(&g_failures);
    printf("%d threads x %d calls: %d mismatches or errors\n", THREADS, CALLS, failures);
    CHECK_INT_EQ(failures, 0);

    memra_weight_destroy(g_w[0][3]);
    for (int t = 0; t < THREADS; t++) {
        for (int w = 0; w < 3; w++) memra_weight_destroy(g_w[t][w]);
        for (int w = 0; w < N_W; w++) {
            free(g_x[t][w]);
            for (int m = 1; m <= M_MAX; m++) free(g_ref[t][w][m]);
        }
        free(g_qref[t]);
    }
    memra_close(g_rt);
    printf("ok\n");
    return 0;
}
