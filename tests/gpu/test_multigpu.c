/* Several GPUs in one process (issue 21): one host thread per device, each on
 * its own stream, through every matmul lane. Exits 77 with fewer than two CUDA
 * devices.
 *
 *   bench [receipt.json]   per device: one call per lane alone = the reference;
 *                          then ROUNDS rounds of CALLS calls (lanes in turn) on each
 *                          device alone, then on both at once. Checks: every
 *                          output bit-identical to the reference after each phase;
 *                          each device's throughput with both busy >= 95% of its
 *                          throughput alone (medians of the rounds). Prints (and
 *                          writes) the per-call host time inside memra_matmul with 1
 *                          and 2 devices busy: the evidence that no lock is shared
 *                          across devices on the hot path.
 *   hotadd <fp8blk.so>     fp8blk unloaded, both devices serving in a loop, then
 *                          fp8blk hot-loaded: each device admits it by its own score
 *                          (10 on an sm90 profile at cc 9.0, 0 elsewhere, e.g. with
 *                          MEMRA_ARCH=1:cuda), and every output stays bit-identical.
 *
 * Lanes: f16 (Q8_0 with its f16 mirror: gemm_f16), mmq (Q8_0 without a mirror:
 * quant_q8_1 + gemm_q8_0r), fp8 (E4M3 per-tensor: gemm_fp8), fp8blk (E4M3
 * block-128: gemm_fp8_blk), bf16 (gemm_bf16). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "gpu/cu_test.h"

typedef int CUresult;
typedef void *CUstream, *CUcontext;
static struct {
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
} cu;

static void cu_open(void)
{
    void *h = cu_test_open();
#define SYM(name) CU_TEST_SYM(h, cu, name)
    SYM(cuCtxSetCurrent) SYM(cuStreamCreate) SYM(cuStreamDestroy_v2) SYM(cuStreamSynchronize)
#undef SYM
}

#define M 512
#define OUT_F 4096
#define IN_F 4096
#define CALLS 1000
#define ROUNDS 5
#define NBUF 4 /* output buffers per lane, used in turn */

#define MAXD 8
enum { L_F16, L_MMQ, L_FP8, L_FP8_BLK, L_BF16, L_N };
static const char *const k_lane[L_N] = {"f16", "mmq", "fp8", "fp8blk", "bf16"};
static const memra_op k_op[L_N] = {MEMRA_OP_gemm_f16, MEMRA_OP_gemm_q8_0r, MEMRA_OP_gemm_fp8, MEMRA_OP_gemm_fp8_blk,
                                   MEMRA_OP_gemm_bf16};

/* The ops a lane needs on a device (prepare's and matmul's); a lane the
 * device's routing lacks (e.g. every lane but mmq on a profile forced to cuda)
 * is skipped there and said so. */
static const memra_op k_need[L_N][3] = {
    {MEMRA_OP_dequant_f16, MEMRA_OP_gemm_f16, MEMRA_OP_gemm_f16},
    {MEMRA_OP_quant_q8_1, MEMRA_OP_gemm_q8_0r, MEMRA_OP_repack_q8_0},
    {MEMRA_OP_fp8_nan_count, MEMRA_OP_gemm_fp8, MEMRA_OP_gemm_fp8},
    {MEMRA_OP_fp8_nan_count, MEMRA_OP_gemm_fp8_blk, MEMRA_OP_gemm_fp8_blk},
    {MEMRA_OP_gemm_bf16, MEMRA_OP_gemm_bf16, MEMRA_OP_gemm_bf16},
};
static int g_use[MAXD][L_N], g_lanes[MAXD][L_N], g_nl[MAXD];

static uint64_t g_rng;
static memra_runtime *g_rt;
static int g_nd;
static memra_device *g_dev[MAXD];
static CUstream g_stream[MAXD];
static memra_weight *g_w[L_N];
static memra_buffer *g_x[MAXD], *g_y[MAXD][L_N][NBUF];
static float *g_ref[MAXD][L_N];

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static memra_weight *make_weight(memra_format f, const void *data, size_t size, float scale, const float *grid,
                                 size_t gcount, const char *name)
{
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = OUT_F, .in_f = IN_F, .data = data,
                           .size = size, .scale = scale, .grid = grid, .grid_count = gcount, .name = name};
    memra_weight *w;
    CHECK_OK(memra_weight_create(g_rt, &d, &w));
    return w;
}

static void make_weights(void)
{
    const size_t n = (size_t)OUT_F * IN_F, nb = n / 32;
    float *v = malloc(n * sizeof(float));
    uint8_t *q8 = malloc(nb * MEMRA_Q8_0_BYTES), *e = malloc(n);
    uint16_t *bf = malloc(n * 2);
    const size_t gcount = (size_t)(memra_fp8_grid_rows(OUT_F) * memra_fp8_grid_cols(IN_F));
    float *grid = malloc(gcount * sizeof(float));
    CHECK(v && q8 && e && bf && grid);
    for (size_t i = 0; i < n; i++) v[i] = test_rand_f32(&g_rng) * 0.5f;
    for (size_t b = 0; b < nb; b++) memra_q8_0_encode(v + 32 * b, q8 + b * MEMRA_Q8_0_BYTES);
    for (size_t i = 0; i < n; i++) bf[i] = memra_bf16_from_f32(v[i]);
    for (size_t i = 0; i < n; i++) {
        uint8_t c;
        do c = (uint8_t)test_rand_u64(&g_rng);
        while (memra_e4m3_is_nan(c) || (c & 0x7F) == 0);
        e[i] = c;
    }
    for (size_t i = 0; i < gcount; i++) grid[i] = 0.002f + 0.001f * (float)(test_rand_u64(&g_rng) % 16);
    g_w[L_F16] = make_weight(MEMRA_FORMAT_Q8_0, q8, nb * MEMRA_Q8_0_BYTES, 0, NULL, 0, "q8_0 mirrored");
    g_w[L_MMQ] = make_weight(MEMRA_FORMAT_Q8_0, q8, nb * MEMRA_Q8_0_BYTES, 0, NULL, 0, "q8_0 floor");
    g_w[L_FP8] = make_weight(MEMRA_FORMAT_E4M3, e, n, 0.01f, NULL, 0, "e4m3");
    g_w[L_FP8_BLK] = make_weight(MEMRA_FORMAT_E4M3, e, n, 0, grid, gcount, "e4m3 block-128");
    g_w[L_BF16] = make_weight(MEMRA_FORMAT_BF16, bf, n * 2, 0, NULL, 0, "bf16");
    /* Each device's operands under its own budget: the mirror for the f16
     * lane, none for the floor's weight (budget 0 while it is prepared). */
    for (int d = 0; d < g_nd; d++) {
        const uint64_t keep = memra_device_f16_budget_get(g_dev[d]);
        if (g_use[d][L_F16]) {
            if (keep < 64) CHECK_OK(memra_device_f16_budget_set(g_dev[d], 64));
            CHECK_OK(memra_weight_prepare(g_w[L_F16], g_dev[d]));
            CHECK(memra_weight_operands(g_w[L_F16], g_dev[d]) & MEMRA_OPERAND_F16_MIRROR);
        }
        CHECK_OK(memra_device_f16_budget_set(g_dev[d], 0));
        CHECK_OK(memra_device_w16_set(g_dev[d], 0)); /* the floor's lane: no W16 operand, whatever MEMRA_W16 says */
        if (g_use[d][L_MMQ]) {
            CHECK_OK(memra_weight_prepare(g_w[L_MMQ], g_dev[d]));
            CHECK(!(memra_weight_operands(g_w[L_MMQ], g_dev[d]) & MEMRA_OPERAND_F16_MIRROR));
        }
        CHECK_OK(memra_device_f16_budget_set(g_dev[d], keep));
        for (int l = L_FP8; l < L_N; l++)
            if (g_use[d][l]) CHECK_OK(memra_weight_prepare(g_w[l], g_dev[d]));
    }
    free(v), free(q8), free(e), free(bf), free(grid);
}

static void make_buffers(void)
{
    float *x = malloc((size_t)M * IN_F * sizeof(float));
    CHECK(x != NULL);
    for (size_t i = 0; i < (size_t)M * IN_F; i++) x[i] = test_rand_f32(&g_rng) * 2.0f;
    for (int d = 0; d < g_nd; d++) {
        CHECK_OK(memra_buffer_create(g_dev[d], (size_t)M * IN_F * sizeof(float), &g_x[d]));
        CHECK_OK(memra_buffer_write(g_x[d], 0, x, (size_t)M * IN_F * sizeof(float)));
        for (int l = 0; l < L_N; l++)
            for (int b = 0; b < NBUF; b++) CHECK_OK(memra_buffer_create(g_dev[d], (size_t)M * OUT_F * 4, &g_y[d][l][b]));
    }
    free(x);
}

static memra_status call(int d, int l, int b)
{
    return memra_matmul(g_dev[d], g_w[l], memra_buffer_ptr(g_x[d]), M, memra_buffer_ptr(g_y[d][l][b]),
                        (memra_stream_t)g_stream[d]);
}

/* Every output buffer of device d equals its reference, bit for bit. */
static int check_outputs(int d, const char *phase)
{
    int bad = 0;
    float *y = malloc((size_t)M * OUT_F * 4);
    CHECK(y != NULL);
    for (int l = 0; l < L_N; l++)
        for (int b = 0; b < NBUF && g_use[d][l]; b++) {
            CHECK_OK(memra_buffer_read(g_y[d][l][b], 0, y, (size_t)M * OUT_F * 4));
            if (memcmp(y, g_ref[d][l], (size_t)M * OUT_F * 4) != 0) {
                size_t j = 0;
                while (memcmp(&y[j], &g_ref[d][l][j], 4) == 0) j++;
                fprintf(stderr, "%s: device %d lane %s buffer %d: y[%zu] = %a, alone %a\n", phase, d, k_lane[l], b, j,
                        (double)y[j], (double)g_ref[d][l][j]);
                bad++;
            }
        }
    free(y);
    return bad;
}

static void references(void)
{
    for (int d = 0; d < g_nd; d++) {
        CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_dev[d])->cu_context));
        for (int l = 0; l < L_N; l++) {
            if (!g_use[d][l]) continue;
            memra_status st = call(d, l, 0);
            if (st != MEMRA_STATUS_OK) TEST_FAIL_AT("device %d lane %s: %s", d, k_lane[l], memra_last_error());
            CU_CHECK(cu.cuStreamSynchronize(g_stream[d]));
            g_ref[d][l] = malloc((size_t)M * OUT_F * 4);
            CHECK(g_ref[d][l] != NULL);
            CHECK_OK(memra_buffer_read(g_y[d][l][0], 0, g_ref[d][l], (size_t)M * OUT_F * 4));
            int nz = 0;
            for (int i = 0; i < M * OUT_F; i += 97) nz += g_ref[d][l][i] != 0.0f;
            CHECK(nz > M * OUT_F / 97 / 2);
        }
    }
}

/* ---- one thread per device ---------------------------------------------------- */

typedef struct job {
    int d;
    long calls;          /* fixed count; < 0: until -calls calls after g_loaded */
    double wall_s, host_s; /* wall time to the last completion, time inside memra_matmul */
    long done;
    int errors;
} job;

static pthread_barrier_t g_bar;
static atomic_int g_loaded;

static void *run_job(void *arg)
{
    job *j = arg;
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_dev[j->d])->cu_context));
    pthread_barrier_wait(&g_bar);
    const double t0 = now_s();
    long after = 0;
    for (long i = 0;; i++) {
        if (j->calls >= 0 && i >= j->calls) break;
        if (j->calls < 0 && atomic_load(&g_loaded) && ++after > -j->calls) break;
        const double c0 = now_s();
        const int nl = g_nl[j->d];
        memra_status st = call(j->d, g_lanes[j->d][i % nl], (int)((i / nl) % NBUF));
        j->host_s += now_s() - c0;
        if (st != MEMRA_STATUS_OK) {
            if (j->errors++ < 3) fprintf(stderr, "device %d call %ld: %s\n", j->d, i, memra_last_error());
        }
        j->done++;
    }
    CU_CHECK(cu.cuStreamSynchronize(g_stream[j->d]));
    j->wall_s = now_s() - t0;
    return NULL;
}

/* Runs the jobs of the devices in `which` (a bit mask) at once. */
static void run_jobs(unsigned which, job *jobs, long calls)
{
    pthread_t th[MAXD];
    int n = 0;
    for (int d = 0; d < g_nd; d++)
        if (which & (1u << d)) n++;
    pthread_barrier_init(&g_bar, NULL, (unsigned)n);
    for (int d = 0; d < g_nd; d++) {
        memset(&jobs[d], 0, sizeof jobs[d]);
        jobs[d].d = d;
        jobs[d].calls = calls;
        if (which & (1u << d)) CHECK_INT_EQ(pthread_create(&th[d], NULL, run_job, &jobs[d]), 0);
    }
    for (int d = 0; d < g_nd; d++)
        if (which & (1u << d)) pthread_join(th[d], NULL);
    pthread_barrier_destroy(&g_bar);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int case_bench(const char *json)
{
    double alone[MAXD][ROUNDS], both[MAXD][ROUNDS], host1[MAXD][ROUNDS], host2[MAXD][ROUNDS];
    int bad = 0;
    job jobs[MAXD];
    for (int r = 0; r < ROUNDS; r++) {
        for (int d = 0; d < g_nd; d++) {
            run_jobs(1u << d, jobs, CALLS);
            bad += jobs[d].errors;
            alone[d][r] = (double)CALLS / jobs[d].wall_s;
            host1[d][r] = 1e6 * jobs[d].host_s / CALLS;
        }
        run_jobs((1u << g_nd) - 1, jobs, CALLS);
        for (int d = 0; d < g_nd; d++) {
            bad += jobs[d].errors;
            both[d][r] = (double)CALLS / jobs[d].wall_s;
            host2[d][r] = 1e6 * jobs[d].host_s / CALLS;
        }
    }
    for (int d = 0; d < g_nd; d++) bad += check_outputs(d, "after both busy");
    FILE *f = json ? fopen(json, "w") : NULL;
    if (json && f == NULL) TEST_FAIL_AT("cannot write %s", json);
    if (f) fprintf(f, "{\"format\":\"memra-multigpu\",\"version\":1,\"m\":%d,\"out_f\":%d,\"in_f\":%d,\"calls\":%d,"
                      "\"rounds\":%d,\"lanes\":[\"f16\",\"mmq\",\"fp8\",\"fp8blk\",\"bf16\"],\"devices\":[",
                   M, OUT_F, IN_F, CALLS, ROUNDS);
    int slow = 0;
    for (int d = 0; d < g_nd; d++) {
        const memra_device_caps *c = memra_device_caps_get(g_dev[d]);
        const double a = median(alone[d], ROUNDS), b = median(both[d], ROUNDS);
        const double h1 = median(host1[d], ROUNDS), h2 = median(host2[d], ROUNDS);
        printf("device %d (%s, %s%s): %.1f calls/s alone, %.1f with %d busy (%.1f%%); host time per call %.2f us "
               "(1 busy) / %.2f us (%d busy)\n",
               d, c->name, c->profile, memra_device_profile_forced(g_dev[d]) ? " forced" : "", a, b, g_nd,
               100.0 * b / a, h1, h2, g_nd);
        if (b < 0.95 * a) {
            fprintf(stderr, "device %d: throughput with all busy %.1f < 95%% of alone %.1f\n", d, b, a);
            slow++;
        }
        if (f) fprintf(f, "%s{\"index\":%d,\"name\":\"%s\",\"profile\":\"%s\",\"forced\":%s,\"calls_per_s_alone\":%.6g,"
                          "\"calls_per_s_all_busy\":%.6g,\"ratio\":%.6g,\"host_us_per_call_1_busy\":%.6g,"
                          "\"host_us_per_call_all_busy\":%.6g}",
                       d ? "," : "", d, c->name, c->profile, memra_device_profile_forced(g_dev[d]) ? "true" : "false", a,
                       b, b / a, h1, h2);
    }
    if (f) {
        fprintf(f, "],\"bit_identical\":%s,\"within_5_percent\":%s}\n", bad ? "false" : "true", slow ? "false" : "true");
        fclose(f);
    }
    printf("%d output mismatches or errors, %d devices slower than 95%% of alone\n", bad, slow);
    return bad == 0 && slow == 0 ? 0 : 1;
}

static int case_hotadd(const char *path)
{
    memra_status st = memra_module_unload(g_rt, "fp8blk");
    if (st != MEMRA_STATUS_OK && st != MEMRA_STATUS_NOT_FOUND) TEST_FAIL_AT("unload fp8blk: %s", memra_last_error());
    for (int d = 0; d < g_nd; d++) CHECK_INT_EQ(memra_module_score(g_dev[d], "fp8blk"), 0);
    job jobs[MAXD];
    atomic_store(&g_loaded, 0);
    /* the serving threads, in the background; this thread loads the module */
    pthread_barrier_init(&g_bar, NULL, (unsigned)g_nd + 1);
    pthread_t ths[MAXD];
    for (int d = 0; d < g_nd; d++) {
        memset(&jobs[d], 0, sizeof jobs[d]);
        jobs[d].d = d;
        jobs[d].calls = -200; /* 200 calls after the load returned */
        CHECK_INT_EQ(pthread_create(&ths[d], NULL, run_job, &jobs[d]), 0);
    }
    pthread_barrier_wait(&g_bar);
    usleep(50000);
    st = memra_module_load(g_rt, path);
    atomic_store(&g_loaded, 1);
    for (int d = 0; d < g_nd; d++) pthread_join(ths[d], NULL);
    pthread_barrier_destroy(&g_bar);
    if (st != MEMRA_STATUS_OK) TEST_FAIL_AT("hot load %s: %s", path, memra_last_error());
    int bad = 0;
    for (int d = 0; d < g_nd; d++) {
        const memra_device_caps *c = memra_device_caps_get(g_dev[d]);
        const int want = c->arch == MEMRA_ARCH_SM90 && c->cc == 90 ? 10 : 0;
        const int got = memra_module_score(g_dev[d], "fp8blk");
        const char *names[8];
        const int n = memra_routing_get(g_dev[d], MEMRA_OP_gemm_fp8_blk, names, 8);
        int routed = 0;
        for (int i = 0; i < n && i < 8; i++) routed |= strcmp(names[i], "fp8blk") == 0;
        printf("device %d (%s%s): fp8blk score %d (want %d), in gemm_fp8_blk's routing: %s; %ld calls, %ld after the "
               "load\n",
               d, c->profile, memra_device_profile_forced(g_dev[d]) ? " forced" : "", got, want, routed ? "yes" : "no",
               jobs[d].done, 200L);
        if (got != want || routed != (want > 0)) bad++;
        bad += jobs[d].errors;
        bad += check_outputs(d, "after the hot add");
    }
    printf("hotadd: %d failures\n", bad);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_multigpu bench [receipt.json] | hotadd <fp8blk.so>");
    g_rng = test_seed();
    CHECK_OK(memra_open(NULL, &g_rt));
    for (int i = 0; i < memra_device_count(g_rt) && g_nd < MAXD; i++) {
        memra_device *d = memra_device_get(g_rt, i);
        if (memra_device_caps_get(d)->ordinal >= 0 && memra_device_caps_get(d)->cu_context != NULL) g_dev[g_nd++] = d;
    }
    if (g_nd < 2) {
        printf("driver: %s; %d CUDA device(s)\n", memra_driver_status(g_rt), g_nd);
        memra_close(g_rt);
        TEST_SKIP("needs 2 GPUs");
    }
    cu_open();
    for (int d = 0; d < g_nd; d++) {
        CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(g_dev[d])->cu_context));
        CU_CHECK(cu.cuStreamCreate(&g_stream[d], 1 /* CU_STREAM_NON_BLOCKING */));
        const memra_device_caps *c = memra_device_caps_get(g_dev[d]);
        printf("device %d: %s, profile %s%s; lanes:", d, c->name, c->profile,
               memra_device_profile_forced(g_dev[d]) ? " (forced)" : "");
        for (int l = 0; l < L_N; l++) {
            const char *names[2];
            int ok = 1;
            for (int k = 0; k < 3; k++) ok &= memra_routing_get(g_dev[d], k_need[l][k], names, 2) > 0;
            g_use[d][l] = ok;
            if (ok) g_lanes[d][g_nl[d]++] = l;
            printf(" %s%s", k_lane[l], ok ? "" : " (not served: skipped)");
        }
        printf("\n");
        if (g_nl[d] == 0) TEST_FAIL_AT("device %d serves no lane", d);
    }
    make_weights();
    make_buffers();
    references();
    int rc;
    if (strcmp(argv[1], "bench") == 0) rc = case_bench(argc > 2 ? argv[2] : NULL);
    else if (strcmp(argv[1], "hotadd") == 0 && argc > 2) rc = case_hotadd(argv[2]);
    else TEST_FAIL_AT("unknown case %s", argv[1]);
    /* every lane was served by a GPU module on every device */
    for (int d = 0; d < g_nd; d++)
        for (int l = 0; l < L_N; l++) {
            if (!g_use[d][l]) continue;
            uint64_t hits = 0;
            static const char *const mods[] = {"sm90", "sm120", "mmq", "fp8blk"};
            for (int i = 0; i < 4; i++) hits += memra_ledger_hits(g_dev[d], k_op[l], mods[i]);
            if (hits == 0) {
                fprintf(stderr, "device %d: no GPU module served %s (lane %s)\n", d, memra_op_name(k_op[l]), k_lane[l]);
                rc = 1;
            }
        }
    for (int l = 0; l < L_N; l++) memra_weight_destroy(g_w[l]);
    for (int d = 0; d < g_nd; d++) {
        memra_buffer_destroy(g_x[d]);
        for (int l = 0; l < L_N; l++) {
            for (int b = 0; b < NBUF; b++) memra_buffer_destroy(g_y[d][l][b]);
            free(g_ref[d][l]);
        }
        cu.cuStreamDestroy_v2(g_stream[d]);
    }
    memra_close(g_rt);
    return rc;
}
