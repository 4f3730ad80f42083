/* memra_matmul_experts on a GPU (issue 30): the first GPU lane (gemm_experts,
 * lane gemm_q8_0r: Q8_0 experts on the floor, MEMRA_F16_BUDGET_MB=0).
 *
 *   test_gpu_experts run      eager: the GPU against the host device on the same
 *                             expert weight, uneven routing (expert 0 no rows, 1 one
 *                             row, 2 most), skipped ids left untouched, the ledger
 *   test_gpu_experts graph    the grouped call captured into a CUDA graph once
 *                             (scratch reserved first), replayed with two different
 *                             routings written into the same ids buffer: each
 *                             replay equals the eager call of its routing bit for
 *                             bit (the routing is read on the device at replay)
 * Judged per element e = |gpu - host| / (sqrt(k) max_j |host row|) within
 * 2 x JUDGE_BAND_Q8_0 (the live estimate of the mass, as shadow A/B uses).
 * Exits 77 without a CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "tools/judge.h"
#include "gpu/cu_test.h"

typedef int CUresult;
typedef void *CUstream, *CUgraph, *CUgraphExec, *CUcontext;
static struct {
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy_v2)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, int);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
} cu;

#define E 16
#define N 256
#define K 512
#define ROWS 300
#define SENT 1234.5f

static uint64_t g_rng;

static void routing(int32_t *ids, int variant)
{
    for (int r = 0; r < ROWS; r++) ids[r] = variant ? (int32_t)(test_rand_u64(&g_rng) % E) : 2;
    if (!variant) {
        ids[3] = 1;
        for (int r = 0; r < 60; r++) ids[10 + 4 * r] = 3 + r % (E - 3);
    }
    ids[7] = -1, ids[ROWS - 1] = E; /* skipped */
    if (variant) ids[0] = 0;
}

/* Compare y (GPU) with ref (host) over the routed rows; skipped rows must be SENT. */
static int judge_rows(const char *what, const float *y, const float *ref, const int32_t *ids)
{
    size_t bad = 0;
    double worst = 0;
    for (int r = 0; r < ROWS; r++) {
        const int skip = ids[r] < 0 || ids[r] >= E;
        double amax = 0;
        for (int j = 0; j < N; j++) amax = fmax(amax, fabs((double)ref[r * N + j]));
        const double mass = sqrt((double)K) * amax + 1e-30;
        for (int j = 0; j < N; j++) {
            const float g = y[r * N + j];
            if (skip) {
                if (g != SENT && bad++ < 10) fprintf(stderr, "  %s: skipped row %d col %d written: %g\n", what, r, j, (double)g);
                continue;
            }
            const double e = fabs((double)g - (double)ref[r * N + j]) / mass;
            if (!(e <= worst)) worst = e;
            if (!(e <= 2 * JUDGE_BAND_Q8_0) && bad++ < 10)
                fprintf(stderr, "  %s: row %d (expert %d) col %d: gpu %.9g host %.9g (e %.3g)\n", what, r, ids[r], j,
                        (double)g, (double)ref[r * N + j], e);
        }
    }
    printf("%s: max e %.3g (band %.3g), %zu bad\n", what, worst, 2 * JUDGE_BAND_Q8_0, bad);
    return bad == 0;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "run";
    g_rng = test_seed();
    const char *settings[] = {"MEMRA_F16_BUDGET_MB=0", NULL};
    memra_options o = {.struct_size = sizeof o, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    memra_device *dev = NULL, *host = memra_device_host(rt);
    for (int i = 0; i < memra_device_count(rt) && dev == NULL; i++)
        if (memra_device_caps_get(memra_device_get(rt, i))->arch != MEMRA_ARCH_HOST) dev = memra_device_get(rt, i);
    if (dev == NULL) {
        printf("driver: %s\n", memra_driver_status(rt));
        memra_close(rt);
        TEST_SKIP("no CUDA device");
    }
    printf("device: %s (%s)\n", memra_device_caps_get(dev)->name, memra_device_caps_get(dev)->profile);
    const size_t each = (size_t)N * memra_format_row_bytes(MEMRA_FORMAT_Q8_0, K);
    uint8_t *wb = malloc(each * E);
    for (size_t b = 0; b < each * E / MEMRA_Q8_0_BYTES; b++) {
        float v[32];
        for (int i = 0; i < 32; i++) v[i] = test_rand_f32(&g_rng) * 0.5f;
        memra_q8_0_encode(v, wb + b * MEMRA_Q8_0_BYTES);
    }
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = E, .out_f = N,
                             .in_f = K, .data = wb, .size = each * E, .name = "gpu experts"};
    memra_weight *w;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(w, dev, &p));
    printf("plan on the GPU: %s: %s\n", p.lane, p.why);
    CHECK_STR_EQ(p.lane, "mmq records");

    float *x = malloc((size_t)ROWS * K * sizeof(float)), *ref = malloc((size_t)ROWS * N * sizeof(float));
    float *y = malloc((size_t)ROWS * N * sizeof(float));
    int32_t ids[2][ROWS];
    routing(ids[0], 0);
    routing(ids[1], 1);
    for (int i = 0; i < ROWS * K; i++) x[i] = test_rand_f32(&g_rng) * 2.0f;
    memra_buffer *bx, *bi, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * K * sizeof(float), &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * sizeof(int32_t), &bi));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * N * sizeof(float), &by));
    CHECK_OK(memra_buffer_write(bx, 0, x, (size_t)ROWS * K * sizeof(float)));
    int ok = 1;
    float *eager[2] = {malloc((size_t)ROWS * N * sizeof(float)), malloc((size_t)ROWS * N * sizeof(float))};
    for (int v = 0; v < 2; v++) {
        for (int i = 0; i < ROWS * N; i++) ref[i] = y[i] = SENT;
        CHECK_OK(memra_matmul_experts(host, w, (memra_dptr)(uintptr_t)x, ROWS, (memra_dptr)(uintptr_t)ids[v],
                                      (memra_dptr)(uintptr_t)ref, NULL));
        CHECK_OK(memra_buffer_write(bi, 0, ids[v], sizeof ids[v]));
        CHECK_OK(memra_buffer_write(by, 0, y, (size_t)ROWS * N * sizeof(float)));
        memra_ledger_reset(rt);
        CHECK_OK(memra_matmul_experts(dev, w, memra_buffer_ptr(bx), ROWS, memra_buffer_ptr(bi), memra_buffer_ptr(by),
                                      NULL));
        CHECK_OK(memra_buffer_read(by, 0, eager[v], (size_t)ROWS * N * sizeof(float)));
        const char *names[4];
        const int nl = memra_routing_get(dev, MEMRA_OP_gemm_experts, names, 4);
        CHECK(nl > 0);
        CHECK(memra_ledger_hits(dev, MEMRA_OP_gemm_experts, names[0]) == 1);
        if (test_inject_fault()) eager[v][5 * N] += 1.0f;
        ok &= judge_rows(v ? "eager, uniform routing" : "eager, uneven routing", eager[v], ref, ids[v]);
    }
    if (strcmp(c, "graph") == 0) {
        void *h = cu_test_open();
#define SYM(name) CU_TEST_SYM(h, cu, name)
        SYM(cuCtxSetCurrent) SYM(cuStreamCreate) SYM(cuStreamDestroy_v2) SYM(cuStreamSynchronize)
        SYM(cuStreamBeginCapture_v2) SYM(cuStreamEndCapture) SYM(cuGraphInstantiateWithFlags) SYM(cuGraphLaunch)
        SYM(cuGraphExecDestroy) SYM(cuGraphDestroy)
#undef SYM
        CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(dev)->cu_context));
        CUstream s;
        CU_CHECK(cu.cuStreamCreate(&s, 1 /* non-blocking */));
        CHECK_OK(memra_stream_reserve(dev, s, &w, 1, ROWS));
        CU_CHECK(cu.cuStreamBeginCapture_v2(s, 1 /* thread-local */));
        const memra_status cs = memra_matmul_experts(dev, w, memra_buffer_ptr(bx), ROWS, memra_buffer_ptr(bi),
                                                     memra_buffer_ptr(by), s);
        CUgraph g = NULL;
        CU_CHECK(cu.cuStreamEndCapture(s, &g));
        CHECK_OK(cs);
        CUgraphExec ex;
        CU_CHECK(cu.cuGraphInstantiateWithFlags(&ex, g, 0));
        for (int v = 0; v < 2; v++) { /* the routing changes between replays, in the same buffer */
            for (int i = 0; i < ROWS * N; i++) y[i] = SENT;
            CHECK_OK(memra_buffer_write(by, 0, y, (size_t)ROWS * N * sizeof(float)));
            CHECK_OK(memra_buffer_write(bi, 0, ids[v], sizeof ids[v]));
            CU_CHECK(cu.cuGraphLaunch(ex, s));
            CU_CHECK(cu.cuStreamSynchronize(s));
            CHECK_OK(memra_buffer_read(by, 0, y, (size_t)ROWS * N * sizeof(float)));
            const int same = memcmp(y, eager[v], (size_t)ROWS * N * sizeof(float)) == 0;
            printf("graph replay %d (%s routing): %s the eager call\n", v, v ? "uniform" : "uneven",
                   same ? "bit for bit" : "DIFFERS from");
            ok &= same;
        }
        CU_CHECK(cu.cuGraphExecDestroy(ex));
        CU_CHECK(cu.cuGraphDestroy(g));
        CU_CHECK(cu.cuStreamDestroy_v2(s));
    }
    memra_buffer_destroy(bx), memra_buffer_destroy(bi), memra_buffer_destroy(by);
    memra_weight_destroy(w);
    free(wb), free(x), free(ref), free(y), free(eager[0]), free(eager[1]);
    memra_close(rt);
    printf("%s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
