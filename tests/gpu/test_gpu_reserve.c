/* gpu: memra_stream_reserve sizes a stream's scratch for every m up to m_max, not only the m its walk
 * ran. Q8_0 weights without a mirror (the MMQ floor: gemm_q8_0r, whose plan splits k into slices
 * whose partial sums are scratch, and whose slices and tile change with m) at four shapes where the
 * split-k scratch is not monotone in m (17408 -> 5120, 14336 -> 4096, 6144 -> 5120, 5120 -> 5120: a
 * fake-driver probe of the plan found a walk of steps short at m = 1749, 1643, 314 and 257), plus a
 * fifth weight of the last one's kind (other values, the same format, shape and operands). The walk
 * runs every m to 1024 and steps above, once per kind, and sizes every m above 1024 without running
 * it (memra_call.sizing, which the mmq module honours): the ledger must count exactly the walk's real
 * calls (NW at M_MAX, then the walk's other m for each of the 4 kinds), none of the sized ones. After
 * reserving M_MAX rows, every m from M_MAX down to 1 of every weight is captured into one CUDA graph
 * on that stream (thread-local capture mode): each capture must return OK, since a reserved stream's
 * capture that lacks scratch fails with NOT_SUPPORTED naming memra_stream_reserve. The graph is then
 * replayed (its launches must run), and the last captured call of each weight (m = 1, written last)
 * must equal, bit for bit, the same call made directly afterwards. While the reserve runs, a second
 * thread calls memra_matmul on its own stream (the fourth weight at m = 1500, inside the range the
 * reserve sizes without running), over and over until the reserve returns: the sizing is the
 * reserving thread's alone (dispatch.c, thread-local), so each of its calls must run and equal, bit
 * for bit, the same call made before the reserve (its output is refilled with a sentinel first, so
 * a call that launched nothing fails), and its calls are the only ones the ledger counts beyond the
 * walk's. Exits 77 without a GPU or where the mmq module does not serve gemm_q8_0r.
 *   test_gpu_reserve */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "test_blocks.h"
#include "gpu/cu_streams.h"
#include "../../core/weights/reserve_walk.h" /* the walk's m, to count its calls */

#define M_MAX 2048
#define NW 5
#define KINDS 4
#define IN_MAX 17408
#define OUT_MAX 5120

static const int k_out[NW] = {5120, 4096, 5120, 5120, 5120}, k_in[NW] = {17408, 14336, 6144, 5120, 5120};

static uint64_t g_rng;

/* The second thread's calls (see the header): weight w, m = B_M, its own stream and output */
#define B_M 1500
typedef struct side {
    memra_device *gpu;
    memra_weight *w;
    memra_buffer *x, *y;
    CUstream stream;
    const float *ref, *sentinel;
    float *got;
    size_t n;
    atomic_int done; /* set by the main thread once the reserve returned */
    int calls, bad;
} side;

static void *side_thread(void *arg)
{
    side *b = arg;
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(b->gpu)->cu_context));
    do { /* at least once, then until the reserve is over */
        CHECK_OK(memra_buffer_write(b->y, 0, b->sentinel, b->n * sizeof(float)));
        const memra_status st = memra_matmul(b->gpu, b->w, memra_buffer_ptr(b->x), B_M, memra_buffer_ptr(b->y), b->stream);
        CU_CHECK(cu.cuStreamSynchronize(b->stream));
        b->calls++;
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "side call %d: %s (%s)\n", b->calls, memra_status_str(st), memra_last_error());
            b->bad++;
            continue;
        }
        CHECK_OK(memra_buffer_read(b->y, 0, b->got, b->n * sizeof(float)));
        if (memcmp(b->got, b->ref, b->n * sizeof(float)) != 0) b->bad++;
    } while (!atomic_load(&b->done));
    return NULL;
}

/* A random Q8_0 weight [out x in] (test_blocks.h: random codes, small positive scales). */
static memra_weight *q8_weight(memra_runtime *rt, memra_device *gpu, int out, int in, const char *name)
{
    const size_t nb = (size_t)out * (size_t)(in / 32);
    uint8_t *q = malloc(nb * MEMRA_Q8_0_BYTES);
    CHECK(q != NULL);
    test_fill_quant_blocks(&g_rng, MEMRA_FORMAT_Q8_0, q, nb * MEMRA_Q8_0_BYTES);
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = out, .in_f = in,
                           .data = q, .size = nb * MEMRA_Q8_0_BYTES, .name = name};
    memra_weight *w;
    CHECK_OK(memra_weight_create(rt, &d, &w));
    free(q);
    CHECK_OK(memra_weight_prepare(w, gpu));
    return w;
}

int main(void)
{
    g_rng = test_seed();
    memra_runtime *rt;
    CHECK_OK(memra_open(NULL, &rt));
    memra_device *gpu = NULL;
    for (int i = 0; i < memra_device_count(rt) && gpu == NULL; i++)
        if (memra_device_caps_get(memra_device_get(rt, i))->arch != MEMRA_ARCH_HOST) gpu = memra_device_get(rt, i);
    const char *lane[1] = {NULL};
    if (gpu == NULL || memra_routing_get(gpu, MEMRA_OP_gemm_q8_0r, lane, 1) == 0 || strcmp(lane[0], "mmq") != 0) {
        printf("driver: %s; gemm_q8_0r's first lane: %s\n", memra_driver_status(rt), lane[0] ? lane[0] : "none");
        memra_close(rt);
        TEST_SKIP("no CUDA device, or its gemm_q8_0r is not the mmq module's");
    }
    CHECK_OK(memra_device_f16_budget_set(gpu, 0)); /* the floor, never a mirror */
    CHECK_OK(memra_device_w16_set(gpu, 0));        /* nor the W16 operand, whatever MEMRA_W16 says */
    cu_streams_open();
    CU_CHECK(cu.cuCtxSetCurrent((CUcontext)memra_device_caps_get(gpu)->cu_context));
    CUstream stream;
    CU_CHECK(cu.cuStreamCreate(&stream, 1 /* non-blocking */));
    memra_weight *w[NW];
    for (int i = 0; i < NW; i++) {
        char name[32];
        snprintf(name, sizeof name, "reserve %d", i);
        w[i] = q8_weight(rt, gpu, k_out[i], k_in[i], name);
    }
    const size_t xn = (size_t)M_MAX * IN_MAX, yn = (size_t)M_MAX * OUT_MAX;
    float *xh = malloc(xn * sizeof(float)), *y1 = malloc(OUT_MAX * sizeof(float)), *y2 = malloc(OUT_MAX * sizeof(float));
    CHECK(xh != NULL && y1 != NULL && y2 != NULL);
    for (size_t i = 0; i < xn; i++) xh[i] = test_rand_f32(&g_rng) + 0.01f;
    memra_buffer *x, *y[NW];
    CHECK_OK(memra_buffer_create(gpu, xn * sizeof(float), &x));
    CHECK_OK(memra_buffer_write(x, 0, xh, xn * sizeof(float)));
    for (int i = 0; i < NW; i++) CHECK_OK(memra_buffer_create(gpu, yn * sizeof(float), &y[i]));
    /* the second thread's reference: its call made before the reserve, on its own stream */
    side b = {.gpu = gpu, .w = w[3], .x = x, .n = (size_t)B_M * (size_t)k_out[3]};
    atomic_init(&b.done, 0);
    float *bref = malloc(b.n * sizeof(float)), *bsent = malloc(b.n * sizeof(float));
    b.got = malloc(b.n * sizeof(float));
    CHECK(bref != NULL && bsent != NULL && b.got != NULL);
    for (size_t i = 0; i < b.n; i++) bsent[i] = -1234.5f;
    b.ref = bref, b.sentinel = bsent;
    CU_CHECK(cu.cuStreamCreate(&b.stream, 1 /* non-blocking */));
    CHECK_OK(memra_buffer_create(gpu, b.n * sizeof(float), &b.y));
    CHECK_OK(memra_buffer_write(b.y, 0, bsent, b.n * sizeof(float)));
    CHECK_OK(memra_matmul(gpu, b.w, memra_buffer_ptr(x), B_M, memra_buffer_ptr(b.y), b.stream));
    CU_CHECK(cu.cuStreamSynchronize(b.stream));
    CHECK_OK(memra_buffer_read(b.y, 0, bref, b.n * sizeof(float)));
    CHECK(memcmp(bref, bsent, b.n * sizeof(float)) != 0);
    const uint64_t hits0 = memra_ledger_hits(gpu, MEMRA_OP_gemm_q8_0r, "mmq");

    pthread_t bt;
    CHECK(pthread_create(&bt, NULL, side_thread, &b) == 0);
    CHECK_OK(memra_stream_reserve(gpu, stream, w, NW, M_MAX));
    atomic_store(&b.done, 1);
    CHECK(pthread_join(bt, NULL) == 0);
    const uint64_t hits1 = memra_ledger_hits(gpu, MEMRA_OP_gemm_q8_0r, "mmq");
    int ok = b.bad == 0;
    printf("side thread: %d calls at m = %d on its own stream during the reserve, %d failed or differed from the call "
           "before it  %s\n",
           b.calls, B_M, b.bad, ok ? "ok" : "FAIL");
    /* every weight at M_MAX, then the walk's other m once per kind; the sized m above 1024 uncounted; and
     * the side thread's calls */
    uint64_t walk = 0;
    for (int32_t m = M_MAX; m >= 1; m = memra__reserve_next_m(m)) walk++;
    const uint64_t want_calls = NW + KINDS * (walk - 1) + (uint64_t)b.calls;
    ok &= hits1 - hits0 == want_calls;
    printf("reserve: %llu gemm_q8_0r calls on mmq, want %llu (every weight at %d, the walk's %llu other m once per "
           "kind: %d kinds, the side thread's %d; the m it sized not counted)  %s\n",
           (unsigned long long)(hits1 - hits0), (unsigned long long)want_calls, M_MAX, (unsigned long long)(walk - 1),
           KINDS, b.calls, hits1 - hits0 == want_calls ? "ok" : "FAIL");
    int refused = 0;
    CU_CHECK(cu.cuStreamBeginCapture_v2(stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */));
    for (int m = M_MAX; m >= 1; m--)
        for (int i = 0; i < NW; i++) {
            const memra_status st = memra_matmul(gpu, w[i], memra_buffer_ptr(x), m, memra_buffer_ptr(y[i]), stream);
            if (st != MEMRA_STATUS_OK) {
                if (refused++ < 8)
                    fprintf(stderr, "capture %d -> %d at m = %d: %s (%s)  FAIL\n", k_in[i], k_out[i], m,
                            memra_status_str(st), memra_last_error());
                ok = 0;
            }
        }
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CU_CHECK(cu.cuStreamEndCapture(stream, &graph));
    printf("captured %d calls, %d refused\n", M_MAX * NW, refused);
    if (ok) {
        CU_CHECK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
        CU_CHECK(cu.cuGraphLaunch(exec, stream));
        CU_CHECK(cu.cuStreamSynchronize(stream));
        for (int i = 0; i < NW; i++) {
            CHECK_OK(memra_buffer_read(y[i], 0, y1, (size_t)k_out[i] * sizeof(float)));
            CHECK_OK(memra_matmul(gpu, w[i], memra_buffer_ptr(x), 1, memra_buffer_ptr(y[i]), stream));
            CU_CHECK(cu.cuStreamSynchronize(stream));
            CHECK_OK(memra_buffer_read(y[i], 0, y2, (size_t)k_out[i] * sizeof(float)));
            const int same = memcmp(y1, y2, (size_t)k_out[i] * sizeof(float)) == 0;
            printf("  %d -> %d: the replayed m = 1 row %s the direct call's  %s\n", k_in[i], k_out[i],
                   same ? "equals" : "differs from", same ? "ok" : "FAIL");
            ok &= same;
        }
        CU_CHECK(cu.cuGraphExecDestroy(exec));
    }
    if (graph) CU_CHECK(cu.cuGraphDestroy(graph));
    const uint64_t hits2 = memra_ledger_hits(gpu, MEMRA_OP_gemm_q8_0r, "mmq");
    printf("ledger: mmq gemm_q8_0r hits %llu  %s\n", (unsigned long long)(hits2 - hits0), hits2 > hits1 ? "ok" : "FAIL");
    ok &= hits2 > hits1 && hits1 > hits0;
    for (int i = 0; i < NW; i++) {
        memra_buffer_destroy(y[i]);
        memra_weight_destroy(w[i]);
    }
    memra_buffer_destroy(x);
    memra_buffer_destroy(b.y);
    free(xh), free(y1), free(y2), free(bref), free(bsent), free(b.got);
    CU_CHECK(cu.cuStreamDestroy_v2(b.stream));
    CU_CHECK(cu.cuStreamDestroy_v2(stream)); /* before memra_close releases the context */
    memra_close(rt);
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
