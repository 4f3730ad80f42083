/* Hot-add under load, through memra_matmul: worker threads call memra_matmul
 * on BF16 weights (served by the GEMM test modules and the host) and Q8_0
 * weights (the host's quantiser and MMQ floor) while a control thread loads,
 * unloads, shadows, promotes and rolls back modules: testgemm and testslow
 * unloaded and loaded again (admission self-check under load), testfail
 * quarantined at each load, testgemm promoted over testslow by API, testwrong
 * (in the start-up folder, unchecked under MEMRA_ADMISSION=hot) shadowed
 * until its first live mismatch rolls it back. Every result is compared with
 * the host module's; every close of a test library reports its calls in
 * flight through memra_testhook_closed (its destructor, run by dlclose), and
 * that count must be 0: the old library is closed only after its last call
 * returned. Each module is loaded from two files in turn (<name>_a.so,
 * <name>_b.so): the dynamic loader maps one file once, so a reload of the same
 * file while the old record is still referenced would share the old mapping.
 * usage: test_hotload <folder of the copies> <folder with testwrong.so only> */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"

#define THREADS 4
#define N 48
#define K 128
#define ITER 12

static atomic_int g_closes[4];
static atomic_long g_closed_in_flight;
static atomic_int g_stop, g_fail;
static atomic_long g_calls;
void memra_testhook_closed(const char *name, long in_flight);
void memra_testhook_closed(const char *name, long in_flight)
{
    static const char *const names[4] = {"testgemm", "testslow", "testwrong", "testfail"};
    for (int i = 0; i < 4; i++)
        if (strcmp(name, names[i]) == 0) atomic_fetch_add(&g_closes[i], 1);
    atomic_fetch_add(&g_closed_in_flight, in_flight);
}

static memra_runtime *g_rt;
static memra_device *g_host;
static const char *g_dir;

typedef struct wk {
    int id;
    memra_weight *w[2]; /* bf16, q8_0 */
    float *x;           /* [16 x K] */
    float *ref[2][17];  /* host results per m */
} wk;

static void *worker(void *p)
{
    wk *t = p;
    float *y = malloc((size_t)16 * N * 4);
    uint64_t r = 0x1234567ull + (uint64_t)t->id;
    while (!atomic_load(&g_stop) && atomic_load(&g_fail) == 0) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        int which = (int)(r % 2), m = 1 + (int)((r >> 8) % 16);
        memra_status st = memra_matmul(g_host, t->w[which], (memra_dptr)(uintptr_t)t->x, m, (memra_dptr)(uintptr_t)y, NULL);
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "worker %d: matmul %s m=%d: %s: %s\n", t->id, which ? "q8_0" : "bf16", m,
                    memra_status_str(st), memra_last_error());
            atomic_fetch_add(&g_fail, 1);
            break;
        }
        const float *ref = t->ref[which][m];
        for (int i = 0; i < m * N; i++)
            if (!(fabsf(y[i] - ref[i]) <= 1e-6f * (1.0f + fabsf(ref[i])))) {
                fprintf(stderr, "worker %d: %s m=%d y[%d] = %.9g, host %.9g\n", t->id, which ? "q8_0" : "bf16", m, i,
                        y[i], ref[i]);
                atomic_fetch_add(&g_fail, 1);
                break;
            }
        atomic_fetch_add(&g_calls, 1);
    }
    free(y);
    return NULL;
}

static void load(const char *name, memra_status want)
{
    static int turn[3]; /* per module: a, b, a, ... */
    const int id = strcmp(name, "testgemm") == 0 ? 0 : strcmp(name, "testslow") == 0 ? 1 : 2;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s_%c.so", g_dir, name, turn[id]++ % 2 ? 'b' : 'a');
    CHECK_STATUS(memra_module_load(g_rt, p), want);
}

static memra_shadow_state shadow_state(void)
{
    memra_shadow_info i = {.struct_size = sizeof i};
    CHECK_OK(memra_shadow_get(g_host, MEMRA_OP_gemm_bf16, &i));
    return i.state;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) TEST_FAIL_AT("usage: test_hotload <gemm module folder> <testwrong folder>");
    g_dir = argv[1];
    /* The self-check is timed by the wall clock: under load and sanitizers testslow (8 repetitions)
     * takes seconds, so the limit is raised here. MEMRA_MODULE_TRIAL=0: what is checked here is the
     * self-check in this process while calls run (the trial would quarantine testfail first, in
     * memra-trial, and the library would never be opened here; trust.init covers that). */
    const char *settings[] = {"MEMRA_ADMISSION=hot", "MEMRA_SHADOW_RATE=1", "MEMRA_SHADOW_AUTO_PROMOTE=0",
                              "MEMRA_ADMISSION_TIMEOUT_MS=120000", "MEMRA_MODULE_TRIAL=0",
                              "MEMRA_F16_BUDGET_MB=0", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .ignore_environment = 1,
                       .module_path = argv[2], .settings = settings};
    CHECK_OK(memra_open(&o, &g_rt));
    g_host = memra_device_host(g_rt);
    /* testwrong came in unchecked (start-up, MEMRA_ADMISSION=hot): keep it off gemm_bf16 from the start. */
    CHECK_OK(memra_routing_configure(g_rt, "", "gemm_bf16=testwrong"));
    load("testslow", MEMRA_STATUS_OK);
    load("testgemm", MEMRA_STATUS_OK);

    static wk t[THREADS];
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)time(NULL);
    for (int i = 0; i < THREADS; i++) {
        t[i].id = i;
        uint16_t *wb = malloc((size_t)N * K * 2);
        uint8_t *wq = malloc((size_t)N * K / 32 * MEMRA_Q8_0_BYTES);
        t[i].x = malloc((size_t)16 * K * 4);
        CHECK(wb && wq && t[i].x);
        for (int e = 0; e < N * K; e++) wb[e] = memra_bf16_from_f32(test_rand_f32(&rng));
        for (int b = 0; b < N * K / 32; b++) {
            float v[32];
            for (int e = 0; e < 32; e++) v[e] = test_rand_f32(&rng);
            memra_q8_0_encode(v, wq + (size_t)b * MEMRA_Q8_0_BYTES);
        }
        for (int e = 0; e < 16 * K; e++) t[i].x[e] = 2.0f * test_rand_f32(&rng);
        t[i].x[0] = 1.5f;
        memra_weight_desc d0 = {.struct_size = sizeof d0, .format = MEMRA_FORMAT_BF16, .out_f = N, .in_f = K,
                                .data = wb, .size = (size_t)N * K * 2};
        memra_weight_desc d1 = {.struct_size = sizeof d1, .format = MEMRA_FORMAT_Q8_0, .out_f = N, .in_f = K,
                                .data = wq, .size = (size_t)N * K / 32 * MEMRA_Q8_0_BYTES};
        CHECK_OK(memra_weight_create(g_rt, &d0, &t[i].w[0]));
        CHECK_OK(memra_weight_create(g_rt, &d1, &t[i].w[1]));
        CHECK_OK(memra_weight_prepare(t[i].w[0], g_host));
        CHECK_OK(memra_weight_prepare(t[i].w[1], g_host));
        for (int m = 1; m <= 16; m++) {
            for (int f = 0; f < 2; f++) {
                t[i].ref[f][m] = malloc((size_t)m * N * 4);
                CHECK(t[i].ref[f][m] != NULL);
            }
            /* bf16: the host module directly; q8_0: the serial matmul (host lanes only). */
            memra_op_args a = {.struct_size = sizeof a};
            a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = m, .n = N, .k = K,
                                       .w = (memra_dptr)(uintptr_t)wb, .x = (memra_dptr)(uintptr_t)t[i].x,
                                       .y = (memra_dptr)(uintptr_t)t[i].ref[0][m], .ldy = N, .alpha = 1.0f};
            CHECK_OK(memra_module_call(g_host, "host", MEMRA_OP_gemm_bf16, &a));
            CHECK_OK(memra_matmul(g_host, t[i].w[1], (memra_dptr)(uintptr_t)t[i].x, m,
                                  (memra_dptr)(uintptr_t)t[i].ref[1][m], NULL));
        }
        free(wb);
        free(wq);
    }
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[i], NULL, worker, &t[i]) == 0);

    int rollbacks = 0, promotions = 0;
    for (int it = 0; it < ITER && atomic_load(&g_fail) == 0; it++) {
        /* Rollback: testwrong as a shadow until a sampled m >= 8 call mismatches. */
        CHECK_OK(memra_shadow_start(g_host, MEMRA_OP_gemm_bf16, "testwrong", NULL));
        CHECK_OK(memra_routing_configure(g_rt, "", "")); /* the shadow alone keeps testwrong off the op */
        /* Under a loaded machine a sampled m >= 8 call may take a while: up to 60 s. */
        for (int w = 0; w < 60000 && shadow_state() == MEMRA_SHADOW_WATCHING && atomic_load(&g_fail) == 0; w++)
            sleep_ms(1);
        CHECK_INT_EQ(atomic_load(&g_fail), 0);
        CHECK_INT_EQ(shadow_state(), MEMRA_SHADOW_ROLLED_BACK);
        rollbacks++;
        /* Promotion by API: testgemm over testslow. */
        CHECK_OK(memra_shadow_start(g_host, MEMRA_OP_gemm_bf16, "testgemm", NULL));
        sleep_ms(2);
        CHECK_OK(memra_shadow_promote(g_host, MEMRA_OP_gemm_bf16));
        promotions++;
        CHECK_OK(memra_routing_configure(g_rt, "", "gemm_bf16=testwrong"));
        /* Unload and load again under load: the old libraries close once their last call returns. */
        CHECK_OK(memra_module_unload(g_rt, "testgemm"));
        load("testgemm", MEMRA_STATUS_OK);
        CHECK_OK(memra_module_unload(g_rt, "testslow"));
        load("testslow", MEMRA_STATUS_OK);
        load("testfail", MEMRA_STATUS_MODULE_ERROR); /* quarantined by the self-check, under load */
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CHECK_INT_EQ(atomic_load(&g_fail), 0);
    printf("  %ld calls, %d rollbacks, %d promotions, closes: testgemm %d testslow %d testfail %d testwrong %d\n",
           atomic_load(&g_calls), rollbacks, promotions, atomic_load(&g_closes[0]), atomic_load(&g_closes[1]),
           atomic_load(&g_closes[3]), atomic_load(&g_closes[2]));
    for (int i = 0; i < THREADS; i++) {
        memra_weight_destroy(t[i].w[0]);
        memra_weight_destroy(t[i].w[1]);
        free(t[i].x);
        for (int m = 1; m <= 16; m++) free(t[i].ref[0][m]), free(t[i].ref[1][m]);
    }
    memra_close(g_rt);
    /* Every unload closed its library (ITER times each, plus memra_close), never under a call. */
    CHECK_INT_EQ(atomic_load(&g_closes[0]), ITER + 1);
    CHECK_INT_EQ(atomic_load(&g_closes[1]), ITER + 1);
    CHECK_INT_EQ(atomic_load(&g_closes[3]), ITER);
    CHECK_INT_EQ(atomic_load(&g_closed_in_flight), 0);
    CHECK(atomic_load(&g_calls) > 0);
    printf("ok\n");
    return 0;
}
