/* The sm90 module against the host reference, op by op, on fresh random data
 * (never zeros), through the public API: memra_module_call(dev, "sm90", ...)
 * on the GPU and memra_module_call(host, "host", ...) on the same inputs.
 *
 *   test_sm90_ops CASE    cvt scale dequant nan_count fp8_to_q8_0
 *                         gemm_f16 gemm_fp8 gemm_fp8_blk graph declines mmq_capture
 *   (dequant: dequant_f16 of each format; for the K-quants also dequant_kr_f16 of the
 *   same blocks repacked as K records, byte for byte dequant_f16's and the host's)
 *   test_sm90_ops bench   TFLOP/s of the three GEMM lanes at the 27b sheet (not a test)
 *
 * Exits 77 when there is no cc 9.0 GPU. Every comparison is tools/judge.h's:
 * bit-identical ops compare bytes (judge_bytes); the GEMMs run the SAME
 * quantisation on both sides, so what differs is the accumulation only, and
 * are judged per element by e = |got - ref| / mass, ref and mass both from
 * the host module (the mass as the host GEMM of the absolute operands), with
 * judge.h's bands (memra check's, derived there):
 *   gemm_f16      JUDGE_BAND_F16 1e-5 per element. Was 2e-5 relative
 *                 Frobenius (measured <= 7.1e-6 on the H200 over the sheet,
 *                 k up to 17408) plus max |err| <= 40 x band x rms(ref); the
 *                 per-element error is below the relative Frobenius one
 *                 (mass >= |ref|), so this is not looser.
 *   gemm_fp8      JUDGE_BAND_FP8 5e-4 per element (derived in tools/judge.h). Was 5e-4 relative
 *   gemm_fp8_blk  Frobenius (measured 2.2e-4 .. 2.5e-4 on the H200, set by the
 *                 FP8 accumulator) plus the 40 x band x rms max; a wrong scale
 *                 or a dropped 128-block still fails by two orders or more.
 * Relative Frobenius is printed as a secondary figure. Every element of y
 * outside the written range must keep its sentinel. MEMRA_TEST_INJECT_FAULT=1
 * moves the first judged element (byte) of every comparison: every case
 * must then FAIL.
 */
#include <dlfcn.h>
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

/* ---- the driver, for streams, graphs and events (test only) ----------------- */

typedef int CUresult;
typedef void *CUstream, *CUgraph, *CUgraphExec, *CUevent, *CUcontext;
static struct {
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamBeginCapture_v2)(CUstream, int);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
} cu;

static void cu_open(void)
{
    void *h = cu_test_open();
#define SYM(name) CU_TEST_SYM(h, cu, name)
    SYM(cuCtxSetCurrent) SYM(cuStreamCreate) SYM(cuStreamSynchronize) SYM(cuStreamBeginCapture_v2)
    SYM(cuStreamEndCapture) SYM(cuGraphInstantiateWithFlags) SYM(cuGraphLaunch) SYM(cuEventCreate)
    SYM(cuEventRecord) SYM(cuEventSynchronize) SYM(cuEventElapsedTime)
#undef SYM
}

/* ---- runtime, devices, buffers ------------------------------------------------- */

static memra_runtime *g_rt;
static memra_device *g_dev, *g_host;
static uint64_t g_rng;
static CUstream g_stream; /* NULL until a case needs its own stream */

static void setup(void)
{
    CHECK_OK(memra_open(NULL, &g_rt));
    g_host = memra_device_host(g_rt);
    for (int i = 0; i < memra_device_count(g_rt); i++) {
        memra_device *d = memra_device_get(g_rt, i);
        const memra_device_caps *c = memra_device_caps_get(d);
        if (c->cc == 90) {
            g_dev = d;
            break;
        }
    }
    if (g_dev == NULL) TEST_SKIP("no cc 9.0 GPU (driver: %s)", memra_driver_status(g_rt));
    CHECK_OK(memra_device_w16_set(g_dev, 0)); /* weights without mirrors on the floor, whatever MEMRA_W16 says */
    const memra_device_caps *c = memra_device_caps_get(g_dev);
    printf("device: %s (cc %d, %d SMs, profile %s)\n", c->name, c->cc, c->sm_count, c->profile);
    if (memra_module_score(g_dev, "sm90") <= 0) {
        for (int i = 0; i < memra_module_count(g_rt); i++) {
            memra_module_info mi;
            if (memra_module_info_get(g_rt, i, &mi) == MEMRA_STATUS_OK)
                printf("module %s: %s %s\n", mi.name, mi.loaded ? "loaded" : "refused", mi.reason);
        }
        TEST_FAIL_AT("the sm90 module is not admitted on a cc 9.0 device (profile %s)", c->profile);
    }
    g_rng = test_seed();
    cu_open();
    CU_CHECK(cu.cuCtxSetCurrent(c->cu_context));
}

typedef struct pair {
    memra_buffer *d, *h;
    size_t bytes;
} pair;

static pair pair_new(size_t bytes, const void *init)
{
    pair p = {NULL, NULL, bytes};
    CHECK_OK(memra_buffer_create(g_dev, bytes, &p.d));
    CHECK_OK(memra_buffer_create(g_host, bytes, &p.h));
    if (init != NULL) {
        CHECK_OK(memra_buffer_write(p.d, 0, init, bytes));
        CHECK_OK(memra_buffer_write(p.h, 0, init, bytes));
    }
    return p;
}

static void pair_write(pair *p, const void *src)
{
    CHECK_OK(memra_buffer_write(p->d, 0, src, p->bytes));
    CHECK_OK(memra_buffer_write(p->h, 0, src, p->bytes));
}

static void pair_free(pair *p)
{
    memra_buffer_destroy(p->d);
    memra_buffer_destroy(p->h);
}

static memra_dptr D(const pair *p) { return memra_buffer_ptr(p->d); }
static memra_dptr H(const pair *p) { return memra_buffer_ptr(p->h); }

/* Read the device side back; the host side's bytes are at H(p). */
static void *pair_read_dev(const pair *p)
{
    if (g_stream) CU_CHECK(cu.cuStreamSynchronize(g_stream));
    void *out = malloc(p->bytes);
    CHECK(out != NULL);
    CHECK_OK(memra_buffer_read(p->d, 0, out, p->bytes));
    return out;
}

static memra_status run(memra_device *dev, memra_op op, memra_op_args *a)
{
    a->struct_size = sizeof *a;
    a->stream = dev == g_dev ? g_stream : NULL;
    a->decline_reason = NULL;
    return memra_module_call(dev, dev == g_dev ? "sm90" : "host", op, a);
}

/* Run op on both sides: dev_args on the GPU, host_args on the host. */
static void run_both(memra_op op, memra_op_args *dev_args, memra_op_args *host_args)
{
    memra_status st = run(g_dev, op, dev_args);
    if (st != MEMRA_STATUS_OK)
        TEST_FAIL_AT("sm90 %s: %s: %s %s", memra_op_name(op), memra_status_str(st), memra_last_error(),
                     dev_args->decline_reason ? dev_args->decline_reason : "");
    st = run(g_host, op, host_args);
    if (st != MEMRA_STATUS_OK)
        TEST_FAIL_AT("host %s: %s: %s", memra_op_name(op), memra_status_str(st), memra_last_error());
}

/* Byte-exact comparison (judge_bytes); prints up to ten mismatches. */
static int same_bytes(const char *what, const void *got, const void *want, size_t n, int elem)
{
    judge jd;
    judge_init(&jd, what, 0.0, stdout);
    jd.inject = test_inject_fault();
    const uint64_t bad = judge_bytes(&jd, got, want, n, (size_t)elem);
    printf("%-34s %10zu elements  %s (%llu differ)\n", what, n / (size_t)elem, bad ? "FAIL" : "PASS bit-identical",
           (unsigned long long)bad);
    return bad == 0;
}

/* ---- random data ---------------------------------------------------------------- */

static float rnd(void) { return test_rand_f32(&g_rng); }

/* x [m x k]: uniform in +-1 scaled per row and per 128-column block by 2^(0..5),
 * so per-row and per-block scales differ. Never zero. */
static float *rand_x(int64_t m, int64_t k)
{
    float *x = malloc((size_t)(m * k) * sizeof *x);
    CHECK(x != NULL);
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++) x[i * k + c] = rnd() * (float)(1 << ((i * 3 + c / 128) % 6));
    return x;
}

static uint8_t rand_e4m3(void)
{
    uint8_t b;
    do b = (uint8_t)(test_rand_u64(&g_rng) >> 56);
    while ((b & 0x7F) == 0x7F || (b & 0x7F) == 0);
    return b;
}

static uint16_t rand_f16(float scale) { return memra_f16_from_f32(rnd() * scale); }

/* ---- cases: element-wise and load-time ops ---------------------------------------- */

static int case_cvt(void)
{
    int64_t n = 5120 * 17 + 3;
    float *x = rand_x(1, n);
    for (int64_t i = 0; i < n; i += 97) x[i] *= 70000.0f; /* some overflow to inf, some subnormal */
    for (int64_t i = 1; i < n; i += 89) x[i] *= 1e-6f;
    pair px = pair_new((size_t)n * 4, x), py = pair_new((size_t)n * 2 + 2, NULL);
    /* the unaligned path too: source offset by one float */
    int ok = 1;
    for (int off = 0; off < 2; off++) {
        memra_op_args a = {.src = D(&px) + 4 * (uint64_t)off, .dst = D(&py), .n = n - off};
        memra_op_args b = {.src = H(&px) + 4 * (uint64_t)off, .dst = H(&py), .n = n - off};
        run_both(MEMRA_OP_cvt_f16, &a, &b);
        void *got = pair_read_dev(&py);
        ok &= same_bytes(off ? "cvt_f16 (unaligned source)" : "cvt_f16", got, (void *)(uintptr_t)H(&py),
                         (size_t)(n - off) * 2, 2);
        free(got);
    }
    pair_free(&px);
    pair_free(&py);
    free(x);
    return ok;
}

static int case_scale(void)
{
    int64_t n = 1000003;
    float *x = rand_x(1, n);
    pair p = pair_new((size_t)n * 4, x);
    memra_op_args a = {.src = D(&p), .n = n, .s = 0.7071067f}, b = {.src = H(&p), .n = n, .s = 0.7071067f};
    run_both(MEMRA_OP_scale, &a, &b);
    void *got = pair_read_dev(&p);
    int ok = same_bytes("scale", got, (void *)(uintptr_t)H(&p), (size_t)n * 4, 4);
    free(got);
    pair_free(&p);
    free(x);
    return ok;
}

static int case_dequant(void)
{
    static const struct {
        memra_format f;
        int bytes, qk, d_off[2];
    } fmts[] = {
        {MEMRA_FORMAT_Q8_0, 34, 32, {0, -1}},   {MEMRA_FORMAT_Q4_0, 18, 32, {0, -1}},
        {MEMRA_FORMAT_Q4_K, 144, 256, {0, 2}},  {MEMRA_FORMAT_Q5_K, 176, 256, {0, 2}},
        {MEMRA_FORMAT_Q6_K, 210, 256, {208, -1}},
    };
    int ok = 1;
    const int64_t rows = 300, cols = 5120;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        const int64_t nb = rows * cols / fmts[f].qk;
        uint8_t *src = malloc((size_t)(nb * fmts[f].bytes));
        CHECK(src != NULL);
        for (int64_t i = 0; i < nb * fmts[f].bytes; i++) src[i] = (uint8_t)(test_rand_u64(&g_rng) >> 56);
        for (int64_t b = 0; b < nb; b++)
            for (int j = 0; j < 2; j++)
                if (fmts[f].d_off[j] >= 0) {
                    uint16_t h = rand_f16(j ? 0.02f : 0.05f);
                    memcpy(src + b * fmts[f].bytes + fmts[f].d_off[j], &h, 2);
                }
        pair ps = pair_new((size_t)(nb * fmts[f].bytes), src), pd = pair_new((size_t)(rows * cols * 2), NULL);
        memra_op_args a = {.format = fmts[f].f, .src = D(&ps), .rows = rows, .cols = cols, .dst = D(&pd)};
        memra_op_args b = {.format = fmts[f].f, .src = H(&ps), .rows = rows, .cols = cols, .dst = H(&pd)};
        run_both(MEMRA_OP_dequant_f16, &a, &b);
        void *got = pair_read_dev(&pd);
        char what[64];
        snprintf(what, sizeof what, "dequant_f16 %s", memra_format_name(fmts[f].f));
        ok &= same_bytes(what, got, (void *)(uintptr_t)H(&pd), pd.bytes, 2);
        free(got);
        if (fmts[f].qk == 256) { /* dequant_kr_f16 of the same blocks as K records: dequant_f16's bytes */
            const uint64_t kb = memra_kr_bytes(fmts[f].f, rows, cols);
            uint8_t *kr = malloc((size_t)kb);
            CHECK(kr != NULL && memra_kr_repack(fmts[f].f, src, rows, cols, kr) == 0);
            pair pk = pair_new((size_t)kb, kr), pe = pair_new((size_t)(rows * cols * 2), NULL);
            memra_op_args ak = {.format = fmts[f].f, .src = D(&pk), .rows = rows, .cols = cols, .dst = D(&pe)};
            memra_op_args bk = {.format = fmts[f].f, .src = H(&pk), .rows = rows, .cols = cols, .dst = H(&pe)};
            run_both(MEMRA_OP_dequant_kr_f16, &ak, &bk);
            got = pair_read_dev(&pe);
            snprintf(what, sizeof what, "dequant_kr_f16 %s vs dequant_f16", memra_format_name(fmts[f].f));
            ok &= same_bytes(what, got, (void *)(uintptr_t)H(&pd), pd.bytes, 2);
            snprintf(what, sizeof what, "dequant_kr_f16 %s vs the host's", memra_format_name(fmts[f].f));
            ok &= same_bytes(what, got, (void *)(uintptr_t)H(&pe), pe.bytes, 2);
            free(got);
            pair_free(&pk);
            pair_free(&pe);
            free(kr);
        }
        pair_free(&ps);
        pair_free(&pd);
        free(src);
    }
    return ok;
}

static int case_nan_count(void)
{
    const int64_t n = 12345679;
    uint8_t *w = malloc((size_t)n);
    CHECK(w != NULL);
    for (int64_t i = 0; i < n; i++) w[i] = rand_e4m3();
    uint64_t want = 0;
    for (int64_t i = 0; i < n; i += 1 + (int64_t)(test_rand_u64(&g_rng) % 50000)) {
        w[i] = (i & 1) ? 0xFF : 0x7F;
        want++;
    }
    uint64_t seed_count = 7; /* the op adds to the counter */
    pair pw = pair_new((size_t)n, w), pc = pair_new(8, &seed_count);
    int ok = 1;
    for (int off = 0; off < 2; off++) {
        uint64_t want_off = want - (off && ((w[0] & 0x7F) == 0x7F) ? 1 : 0);
        pair_write(&pc, &seed_count);
        memra_op_args a = {.src = D(&pw) + (uint64_t)off, .n = n - off, .dst = D(&pc)};
        memra_op_args b = {.src = H(&pw) + (uint64_t)off, .n = n - off, .dst = H(&pc)};
        run_both(MEMRA_OP_fp8_nan_count, &a, &b);
        uint64_t *got = pair_read_dev(&pc), host = *(uint64_t *)(uintptr_t)H(&pc);
        int good = same_bytes(off ? "fp8_nan_count (unaligned) vs host" : "fp8_nan_count vs host", got, &host, 8, 8) &&
                   *got == seed_count + want_off;
        printf("fp8_nan_count%-21s %10lld bytes  gpu %llu host %llu planted %llu+%llu  %s\n", off ? " (unaligned)" : "",
               (long long)(n - off), (unsigned long long)*got, (unsigned long long)host,
               (unsigned long long)seed_count, (unsigned long long)want_off, good ? "PASS" : "FAIL");
        ok &= good;
        free(got);
    }
    pair_free(&pw);
    pair_free(&pc);
    free(w);
    return ok;
}

static float *rand_grid(int64_t rows, int64_t cols)
{
    int64_t n = memra_fp8_grid_rows(rows) * memra_fp8_grid_cols(cols);
    float *g = malloc((size_t)n * sizeof *g);
    CHECK(g != NULL);
    for (int64_t i = 0; i < n; i++) g[i] = (1.5f + rnd()) * 0.01f;
    return g;
}

static int case_fp8_to_q8_0(void)
{
    int ok = 1;
    static const int64_t shapes[][2] = {{300, 2080}, {1024, 5120}};
    for (size_t s = 0; s < 2; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1];
        uint8_t *w = malloc((size_t)(rows * cols));
        CHECK(w != NULL);
        for (int64_t i = 0; i < rows * cols; i++) w[i] = rand_e4m3();
        float *grid = rand_grid(rows, cols);
        const int64_t gn = memra_fp8_grid_rows(rows) * memra_fp8_grid_cols(cols);
        pair pw = pair_new((size_t)(rows * cols), w), pg = pair_new((size_t)gn * 4, grid);
        pair pq = pair_new((size_t)(rows * cols / 32 * 34), NULL);
        memra_op_args a = {.src = D(&pw), .aux = D(&pg), .rows = rows, .cols = cols, .dst = D(&pq)};
        memra_op_args b = {.src = H(&pw), .aux = H(&pg), .rows = rows, .cols = cols, .dst = H(&pq)};
        run_both(MEMRA_OP_fp8_blk_to_q8_0, &a, &b);
        void *got = pair_read_dev(&pq);
        char what[64];
        snprintf(what, sizeof what, "fp8_blk_to_q8_0 %lldx%lld (bytes)", (long long)rows, (long long)cols);
        const uint8_t *gb = got, *hb = (const uint8_t *)(uintptr_t)H(&pq);
        if (!same_bytes(what, got, hb, pq.bytes, 1)) {
            ok = 0;
            /* where in the 34-byte block the differences fall, and the first bad block */
            long hist[34] = {0}, first = -1;
            for (size_t i = 0; i < pq.bytes; i++)
                if (gb[i] != hb[i]) {
                    hist[i % 34]++;
                    if (first < 0) first = (long)(i / 34);
                }
            /* none when the only difference is the injected one (MEMRA_TEST_INJECT_FAULT=1:
             * the judge flips a byte of its own view, not of `got`) */
            if (first < 0) {
                printf("  no byte of the buffers differs: the judge's injected fault\n");
                goto next;
            }
            printf("  differences by byte of the block:");
            for (int i = 0; i < 34; i++)
                if (hist[i]) printf(" [%d]=%ld", i, hist[i]);
            printf("\n  block %ld gpu :", first);
            for (int i = 0; i < 34; i++) printf(" %02x", gb[first * 34 + i]);
            printf("\n  block %ld host:", first);
            for (int i = 0; i < 34; i++) printf(" %02x", hb[first * 34 + i]);
            uint16_t dg, dh;
            memcpy(&dg, gb + first * 34, 2);
            memcpy(&dh, hb + first * 34, 2);
            printf("\n  d gpu %.9g host %.9g\n", memra_f32_from_f16(dg), memra_f32_from_f16(dh));
        }
    next:
        free(got);
        pair_free(&pw);
        pair_free(&pg);
        pair_free(&pq);
        free(w);
        free(grid);
    }
    return ok;
}

/* ---- cases: GEMMs --------------------------------------------------------------------- */

typedef struct shape {
    int m, n, k;
    int64_t ldy_extra, row_off;
    float alpha;
} shape;

#define SHEET(m)                                                                                   \
    {m, 12288, 5120, 0, 0, 1.0f}, {m, 1024, 5120, 0, 0, 1.0f}, {m, 5120, 6144, 0, 0, 1.0f},         \
        {m, 17408, 5120, 0, 0, 1.0f}, {m, 5120, 17408, 0, 0, 1.0f}, {m, 5120, 5120, 0, 0, 1.0f},    \
        {m, 2048, 2048, 0, 0, 1.0f}, {m, 1024, 2048, 0, 0, 1.0f}, {m, 6144, 2048, 0, 0, 1.0f},      \
        {m, 2048, 6144, 0, 0, 1.0f}

static const shape k_shapes[] = {
    SHEET(1), SHEET(16), SHEET(17),
    /* m = 512 on the 1p7b sheet and 27b's k/v */
    {512, 2048, 2048, 0, 0, 1.0f}, {512, 1024, 2048, 0, 0, 1.0f}, {512, 6144, 2048, 0, 0, 1.0f},
    {512, 2048, 6144, 0, 0, 1.0f}, {512, 1024, 5120, 0, 0, 1.0f},
    /* awkward: n not a multiple of 128, k not of 128 (k-blocks not of 4), row offset, ldy > n, alpha */
    {33, 1000, 2064, 24, 5, 0.5f}, {5, 300, 4112, 0, 3, 2.0f}, {7, 136, 400, 8, 0, 1.0f},
};

typedef enum lane { LANE_F16, LANE_F16_PRE, LANE_FP8, LANE_FP8_BLK } lane;
static const char *const k_lane_names[] = {"gemm_f16", "gemm_f16 (x pre-converted)", "gemm_fp8", "gemm_fp8_blk"};
static const double k_band[] = {JUDGE_BAND_F16, JUDGE_BAND_F16, JUDGE_BAND_FP8, JUDGE_BAND_FP8};

typedef struct gemm_case {
    lane ln;
    shape s;
    pair w, grid, x, xh, y;
    float w_scale;
    int64_t ldy, rows_y;
} gemm_case;

static const float k_sentinel = 12345.0f;

static void gemm_setup(gemm_case *c, lane ln, const shape *s)
{
    memset(c, 0, sizeof *c);
    c->ln = ln;
    c->s = *s;
    const int64_t n = s->n, k = s->k, m = s->m;
    if (ln == LANE_F16 || ln == LANE_F16_PRE) {
        uint16_t *w = malloc((size_t)(n * k) * 2);
        CHECK(w != NULL);
        for (int64_t i = 0; i < n * k; i++) w[i] = rand_f16(0.5f);
        c->w = pair_new((size_t)(n * k) * 2, w);
        free(w);
    } else {
        uint8_t *w = malloc((size_t)(n * k));
        CHECK(w != NULL);
        for (int64_t i = 0; i < n * k; i++) w[i] = rand_e4m3();
        c->w = pair_new((size_t)(n * k), w);
        free(w);
        c->w_scale = 0.0123f;
        if (ln == LANE_FP8_BLK) {
            float *g = rand_grid(n, k);
            c->grid = pair_new((size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k)) * 4, g);
            free(g);
        }
    }
    float *x = rand_x(m, k);
    c->x = pair_new((size_t)(m * k) * 4, x);
    free(x);
    if (ln == LANE_F16_PRE) c->xh = pair_new((size_t)(m * k) * 2, NULL);
    c->ldy = n + s->ldy_extra;
    c->rows_y = m + s->row_off + (s->row_off ? 2 : 0);
    float *y = malloc((size_t)(c->rows_y * c->ldy) * 4);
    CHECK(y != NULL);
    for (int64_t i = 0; i < c->rows_y * c->ldy; i++) y[i] = k_sentinel;
    c->y = pair_new((size_t)(c->rows_y * c->ldy) * 4, y);
    free(y);
}

static memra_op gemm_op(lane ln)
{
    return ln == LANE_FP8 ? MEMRA_OP_gemm_fp8 : ln == LANE_FP8_BLK ? MEMRA_OP_gemm_fp8_blk : MEMRA_OP_gemm_f16;
}

static void gemm_args(const gemm_case *c, int dev, memra_op_args *a)
{
    memset(a, 0, sizeof *a);
    memra_dptr (*P)(const pair *) = dev ? D : H;
    a->gemm = (memra_gemm_args){.struct_size = sizeof a->gemm, .m = c->s.m, .n = c->s.n, .k = c->s.k, .w = P(&c->w),
                                .w_scale_grid = c->grid.bytes ? P(&c->grid) : 0, .w_scale = c->w_scale,
                                .x = P(&c->x), .y = P(&c->y), .ldy = c->ldy, .y_row_offset = c->s.row_off,
                                .alpha = c->s.alpha};
    if (c->ln == LANE_F16_PRE) {
        a->gemm.x = P(&c->xh);
        a->gemm.x_is_f16 = 1;
    }
}

/* Enqueue the op on the GPU (and the pre-convert for LANE_F16_PRE). */
static memra_status gemm_enqueue_dev(const gemm_case *c, memra_op_args *a)
{
    if (c->ln == LANE_F16_PRE) {
        memra_op_args cv = {.src = D(&c->x), .dst = D(&c->xh), .n = (int64_t)c->s.m * c->s.k};
        memra_status st = run(g_dev, MEMRA_OP_cvt_f16, &cv);
        if (st != MEMRA_STATUS_OK) return st;
    }
    gemm_args(c, 1, a);
    return run(g_dev, gemm_op(c->ln), a);
}

static void gemm_run_host(const gemm_case *c)
{
    memra_op_args b;
    if (c->ln == LANE_F16_PRE) {
        memra_op_args cv = {.src = H(&c->x), .dst = H(&c->xh), .n = (int64_t)c->s.m * c->s.k};
        CHECK_OK(run(g_host, MEMRA_OP_cvt_f16, &cv));
    }
    gemm_args(c, 0, &b);
    CHECK_OK(run(g_host, gemm_op(c->ln), &b));
}

/* The mass sum_k |x_k w_k| of every element of y (same layout), the host
 * module's GEMM of the absolute operands (every quantiser here is symmetric
 * in sign and keeps the amax, so |q(x)| = q(|x|)). Caller frees. */
static float *gemm_mass(const gemm_case *c)
{
    const int64_t mk = (int64_t)c->s.m * c->s.k, ycount = c->rows_y * c->ldy;
    memra_buffer *w = NULL, *g = NULL, *x = NULL, *xh = NULL, *y = NULL;
    CHECK_OK(memra_buffer_create(g_host, c->w.bytes, &w));
    void *wp = (void *)(uintptr_t)memra_buffer_ptr(w);
    memcpy(wp, (const void *)(uintptr_t)H(&c->w), c->w.bytes);
    if (c->ln == LANE_F16 || c->ln == LANE_F16_PRE) judge_abs_16(wp, c->w.bytes / 2);
    else judge_abs_e4m3(wp, c->w.bytes);
    if (c->grid.bytes) {
        CHECK_OK(memra_buffer_create(g_host, c->grid.bytes, &g));
        float *gp = (float *)(uintptr_t)memra_buffer_ptr(g);
        memcpy(gp, (const void *)(uintptr_t)H(&c->grid), c->grid.bytes);
        judge_abs_f32(gp, c->grid.bytes / 4);
    }
    CHECK_OK(memra_buffer_create(g_host, (size_t)mk * 4, &x));
    float *xp = (float *)(uintptr_t)memra_buffer_ptr(x);
    memcpy(xp, (const void *)(uintptr_t)H(&c->x), (size_t)mk * 4);
    judge_abs_f32(xp, (size_t)mk);
    CHECK_OK(memra_buffer_create(g_host, (size_t)ycount * 4, &y));
    memra_op_args a;
    memset(&a, 0, sizeof a);
    a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = c->s.m, .n = c->s.n, .k = c->s.k,
                               .w = memra_buffer_ptr(w), .w_scale_grid = g ? memra_buffer_ptr(g) : 0,
                               .w_scale = fabsf(c->w_scale), .x = memra_buffer_ptr(x), .y = memra_buffer_ptr(y),
                               .ldy = c->ldy, .y_row_offset = c->s.row_off, .alpha = fabsf(c->s.alpha)};
    if (c->ln == LANE_F16_PRE) {
        CHECK_OK(memra_buffer_create(g_host, (size_t)mk * 2, &xh));
        memra_op_args cv = {.src = memra_buffer_ptr(x), .dst = memra_buffer_ptr(xh), .n = mk};
        CHECK_OK(run(g_host, MEMRA_OP_cvt_f16, &cv));
        a.gemm.x = memra_buffer_ptr(xh);
        a.gemm.x_is_f16 = 1;
    }
    CHECK_OK(run(g_host, gemm_op(c->ln), &a));
    float *mass = malloc((size_t)ycount * 4);
    CHECK(mass != NULL);
    memcpy(mass, (const void *)(uintptr_t)memra_buffer_ptr(y), (size_t)ycount * 4);
    memra_buffer_destroy(w), memra_buffer_destroy(g), memra_buffer_destroy(x), memra_buffer_destroy(xh);
    memra_buffer_destroy(y);
    return mass;
}

/* Compare y (tools/judge.h): per element on the written rows, the sentinel
 * elsewhere. */
static int gemm_compare(const gemm_case *c, const char *tag)
{
    float *got = pair_read_dev(&c->y);
    const float *ref = (const float *)(uintptr_t)H(&c->y);
    float *mass = gemm_mass(c);
    char what[96];
    snprintf(what, sizeof what, "%s m=%d n=%d k=%d%s", k_lane_names[c->ln], c->s.m, c->s.n, c->s.k, tag);
    judge jd;
    judge_init(&jd, what, k_band[c->ln], stdout);
    jd.inject = test_inject_fault();
    for (int64_t r = c->s.row_off; r < c->s.row_off + c->s.m; r++)
        for (int64_t j = 0; j < c->s.n; j++) {
            const int64_t e = r * c->ldy + j;
            judge_elem(&jd, r, j, got[e], ref[e], mass[e]);
        }
    const uint64_t stray = judge_sentinel_f32(&jd, got, c->rows_y, c->ldy, c->s.row_off, c->s.m, c->s.n, k_sentinel);
    const int ok = judge_ok(&jd);
    printf("%-27s m=%-4d n=%-5d k=%-5d%s max err %.3e (band %.2g) rel_fro %.3e%s  %s\n", k_lane_names[c->ln], c->s.m,
           c->s.n, c->s.k, tag, jd.max_err, jd.band, judge_rel_fro(&jd), stray ? "  SENTINEL OVERWRITTEN" : "",
           ok ? "PASS" : "FAIL");
    free(got);
    free(mass);
    return ok;
}

static void gemm_free(gemm_case *c)
{
    pair_free(&c->w);
    if (c->grid.bytes) pair_free(&c->grid);
    pair_free(&c->x);
    if (c->xh.bytes) pair_free(&c->xh);
    pair_free(&c->y);
}

static int case_gemm(lane ln)
{
    int ok = 1;
    for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++) {
        gemm_case c;
        gemm_setup(&c, ln, &k_shapes[i]);
        memra_op_args a;
        memra_status st = gemm_enqueue_dev(&c, &a);
        if (st != MEMRA_STATUS_OK) {
            printf("%-27s m=%-4d n=%-5d k=%-5d %s: %s %s  FAIL\n", k_lane_names[ln], c.s.m, c.s.n, c.s.k,
                   memra_status_str(st), a.decline_reason ? a.decline_reason : "", memra_last_error());
            ok = 0;
        } else {
            gemm_run_host(&c);
            ok &= gemm_compare(&c, "");
        }
        gemm_free(&c);
        if (ln == LANE_F16) { /* the pre-converted form, on the same sheet */
            gemm_setup(&c, LANE_F16_PRE, &k_shapes[i]);
            if ((st = gemm_enqueue_dev(&c, &a)) != MEMRA_STATUS_OK) {
                printf("%s: %s %s\n", k_lane_names[LANE_F16_PRE], memra_status_str(st), memra_last_error());
                ok = 0;
            } else {
                gemm_run_host(&c);
                ok &= gemm_compare(&c, "");
            }
            gemm_free(&c);
        }
    }
    const memra_op op = gemm_op(ln);
    printf("ledger: %s hits by sm90 on the GPU: %llu\n", memra_op_name(op),
           (unsigned long long)memra_ledger_hits(g_dev, op, "sm90"));
    if (memra_ledger_hits(g_dev, op, "sm90") == 0) ok = 0;
    return ok;
}

/* Capture the three lanes (with their in-stream activation work) into one CUDA
 * graph, then write fresh activations into the same buffers and replay: the
 * outputs must match the host on the new data (no pointer moved, the per-batch
 * FP8 scale was recomputed on the device). */
static int case_graph(void)
{
    CU_CHECK(cu.cuStreamCreate(&g_stream, 0));
    const shape s = {17, 2048, 6144, 8, 2, 0.75f};
    gemm_case cs[4];
    const lane lanes[4] = {LANE_F16, LANE_F16_PRE, LANE_FP8, LANE_FP8_BLK};
    memra_op_args a;
    for (int i = 0; i < 4; i++) {
        gemm_setup(&cs[i], lanes[i], &s);
        CHECK_OK(gemm_enqueue_dev(&cs[i], &a)); /* warm: scratch sized, plans built */
    }
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    CU_CHECK(cu.cuStreamBeginCapture_v2(g_stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */));
    for (int i = 0; i < 4; i++) {
        memra_status st = gemm_enqueue_dev(&cs[i], &a);
        if (st != MEMRA_STATUS_OK) {
            CUgraph gbad;
            cu.cuStreamEndCapture(g_stream, &gbad);
            TEST_FAIL_AT("capturing %s: %s: %s", k_lane_names[lanes[i]], memra_status_str(st), memra_last_error());
        }
    }
    CUgraph graph;
    CUgraphExec exec;
    CU_CHECK(cu.cuStreamEndCapture(g_stream, &graph));
    CU_CHECK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
    int ok = 1;
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < 4; i++) {
            float *x = rand_x(s.m, s.k);
            for (int64_t j = 0; j < (int64_t)s.m * s.k; j++) x[j] *= (float)(rep + 2); /* a new amax */
            pair_write(&cs[i].x, x);
            free(x);
        }
        CU_CHECK(cu.cuGraphLaunch(exec, g_stream));
        for (int i = 0; i < 4; i++) {
            gemm_run_host(&cs[i]);
            ok &= gemm_compare(&cs[i], rep ? " replay 2" : " replay 1");
        }
    }
    for (int i = 0; i < 4; i++) gemm_free(&cs[i]);
    return ok;
}

/* The MMQ floor's fall-back may not build operands inside a CUDA graph: a
 * Q8_0 weight prepared without a mirror holds records only; with gemm_q8_0r
 * disabled, a matmul on a capturing stream must fail with NOT_SUPPORTED and a
 * message (not allocate or wait mid-capture), and the same call outside the
 * capture must make the blocks, run gemm_q8_0, and agree with the records
 * result per element (tools/judge.h, mass by the host module on the absolute
 * q8_1 / Q8_0 operands): both fold the same exact integer sums in f32, so
 * they differ by at most the two fold bounds, judge_band_fold(nb, 16) for the
 * split-k records path plus judge_band_fold(nb, 0) for the blocks (was: max
 * difference within 1e-5 of max |y|). */
static int case_mmq_capture(void)
{
    CU_CHECK(cu.cuStreamCreate(&g_stream, 0));
    CHECK_OK(memra_device_f16_budget_set(g_dev, 0)); /* no mirror: the MMQ floor */
    const int m = 16, n = 256, k = 512, nb = k / 32;
    uint8_t *q8 = malloc((size_t)n * nb * MEMRA_Q8_0_BYTES);
    CHECK(q8 != NULL);
    float *v = rand_x(n, k);
    for (int64_t b = 0; b < (int64_t)n * nb; b++) memra_q8_0_encode(v + b * 32, q8 + b * MEMRA_Q8_0_BYTES);
    free(v);
    const memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k,
                                 .data = q8, .size = (size_t)n * nb * MEMRA_Q8_0_BYTES, .name = "capture.q8_0"};
    memra_weight *w = NULL;
    CHECK_OK(memra_weight_create(g_rt, &d, &w));
    CHECK_OK(memra_weight_prepare(w, g_dev));
    int ok = 1;
    const unsigned ops0 = memra_weight_operands(w, g_dev);
    printf("operands after prepare: 0x%x (records %s, raw %s)\n", ops0, ops0 & MEMRA_OPERAND_Q8_0_RECORDS ? "yes" : "no",
           ops0 & MEMRA_OPERAND_RAW ? "yes" : "no");
    ok &= (ops0 & MEMRA_OPERAND_Q8_0_RECORDS) && !(ops0 & MEMRA_OPERAND_RAW);
    float *x = rand_x(m, k);
    memra_buffer *xd = NULL, *yd = NULL;
    CHECK_OK(memra_buffer_create(g_dev, (size_t)m * k * 4, &xd));
    CHECK_OK(memra_buffer_write(xd, 0, x, (size_t)m * k * 4));
    CHECK_OK(memra_buffer_create(g_dev, (size_t)m * n * 4, &yd));
    const uint64_t r0 = memra_ledger_hits(g_dev, MEMRA_OP_gemm_q8_0r, "mmq");
    CHECK_OK(memra_matmul(g_dev, w, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), g_stream));
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    ok &= memra_ledger_hits(g_dev, MEMRA_OP_gemm_q8_0r, "mmq") > r0;
    float *y1 = malloc((size_t)m * n * 4), *y2 = malloc((size_t)m * n * 4);
    CHECK(y1 != NULL && y2 != NULL);
    CHECK_OK(memra_buffer_read(yd, 0, y1, (size_t)m * n * 4));

    CHECK_OK(memra_routing_configure(g_rt, NULL, "gemm_q8_0r"));
    CU_CHECK(cu.cuStreamBeginCapture_v2(g_stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */));
    const memra_status st = memra_matmul(g_dev, w, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), g_stream);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", memra_last_error());
    CUgraph graph;
    CU_CHECK(cu.cuStreamEndCapture(g_stream, &graph)); /* the capture must still be valid */
    const int refused = st == MEMRA_STATUS_NOT_SUPPORTED && strstr(msg, "captured") != NULL;
    printf("matmul in capture, gemm_q8_0r disabled: %s (%s)  %s\n", memra_status_str(st), msg,
           refused ? "PASS" : "FAIL");
    ok &= refused;
    ok &= !(memra_weight_operands(w, g_dev) & MEMRA_OPERAND_RAW); /* nothing was built in the capture */

    const uint64_t b0 = memra_ledger_hits(g_dev, MEMRA_OP_gemm_q8_0, "mmq");
    CHECK_OK(memra_matmul(g_dev, w, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), g_stream));
    CU_CHECK(cu.cuStreamSynchronize(g_stream));
    CHECK_OK(memra_buffer_read(yd, 0, y2, (size_t)m * n * 4));
    const int blocks = memra_ledger_hits(g_dev, MEMRA_OP_gemm_q8_0, "mmq") > b0 &&
                       (memra_weight_operands(w, g_dev) & MEMRA_OPERAND_RAW);
    /* the mass: the host module's gemm_q8_0 of |q8_1(x)| = q8_1(|x|) and |w| */
    memra_buffer *xa = NULL, *qa = NULL, *wa = NULL, *ma = NULL;
    const size_t wbytes = (size_t)n * nb * MEMRA_Q8_0_BYTES;
    CHECK_OK(memra_buffer_create(g_host, (size_t)m * k * 4, &xa));
    CHECK_OK(memra_buffer_create(g_host, (size_t)memra_q8_1_bytes(m, k), &qa));
    CHECK_OK(memra_buffer_create(g_host, wbytes, &wa));
    CHECK_OK(memra_buffer_create(g_host, (size_t)m * n * 4, &ma));
    float *xap = (float *)(uintptr_t)memra_buffer_ptr(xa);
    memcpy(xap, x, (size_t)m * k * 4);
    judge_abs_f32(xap, (size_t)m * k);
    uint8_t *wap = (uint8_t *)(uintptr_t)memra_buffer_ptr(wa);
    memcpy(wap, q8, wbytes);
    judge_abs_q8_0(wap, (size_t)n * nb);
    memra_op_args qa_args = {.src = memra_buffer_ptr(xa), .dst = memra_buffer_ptr(qa), .rows = m, .cols = k};
    CHECK_OK(run(g_host, MEMRA_OP_quant_q8_1, &qa_args));
    memra_op_args ga = {0};
    ga.gemm = (memra_gemm_args){.struct_size = sizeof ga.gemm, .m = m, .n = n, .k = k, .w = memra_buffer_ptr(wa),
                                .x = memra_buffer_ptr(qa), .y = memra_buffer_ptr(ma), .ldy = n, .alpha = 1.0f};
    CHECK_OK(run(g_host, MEMRA_OP_gemm_q8_0, &ga));
    const float *mass = (const float *)(uintptr_t)memra_buffer_ptr(ma);
    judge jd;
    judge_init(&jd, "records vs blocks", judge_band_fold(nb, 16) + judge_band_fold(nb, 0), stdout);
    jd.inject = test_inject_fault();
    for (int64_t e = 0; e < (int64_t)m * n; e++) judge_elem(&jd, e / n, e % n, y2[e], y1[e], mass[e]);
    const int agree = judge_ok(&jd);
    printf("outside the capture: gemm_q8_0 on blocks made again %s; |records - blocks| / mass max %.3g (band %.3g)  %s\n",
           blocks ? "yes" : "no", jd.max_err, jd.band, blocks && agree ? "PASS" : "FAIL");
    memra_buffer_destroy(xa), memra_buffer_destroy(qa), memra_buffer_destroy(wa), memra_buffer_destroy(ma);
    ok &= blocks && agree;
    CHECK_OK(memra_routing_configure(g_rt, NULL, ""));
    memra_buffer_destroy(xd), memra_buffer_destroy(yd);
    memra_weight_destroy(w);
    free(q8), free(x), free(y1), free(y2);
    return ok;
}

/* Two weights of d's bytes: *fl prepared without a mirror (budget 0: the floor's records), *mi with one */
static void floor_and_mirror(const memra_weight_desc *d, memra_weight **fl, memra_weight **mi)
{
    const uint64_t budget0 = memra_device_f16_budget_get(g_dev);
    CHECK_OK(memra_weight_create(g_rt, d, fl));
    CHECK_OK(memra_weight_create(g_rt, d, mi));
    CHECK_OK(memra_device_f16_budget_set(g_dev, 0));
    CHECK_OK(memra_weight_prepare(*fl, g_dev));
    CHECK_OK(memra_device_f16_budget_set(g_dev, 1024));
    CHECK_OK(memra_weight_prepare(*mi, g_dev));
    CHECK_OK(memra_device_f16_budget_set(g_dev, budget0));
}

/* y against the mirror's yref [m x n] within gemm_f16's band of sqrt(k) max |yref row|; *same counts the values
 * equal bit for bit */
static int judge_vs_mirror(const char *what, const float *y, const float *yref, int64_t m, int64_t n, int64_t k,
                           int64_t *same, double *max_err, double *band)
{
    judge jd;
    judge_init(&jd, what, JUDGE_BAND_F16, stdout);
    jd.inject = test_inject_fault();
    *same = 0;
    for (int64_t i = 0; i < m; i++) {
        double amax = 0;
        for (int64_t j = 0; j < n; j++) amax = fmax(amax, fabs((double)yref[i * n + j]));
        for (int64_t j = 0; j < n; j++) {
            *same += memcmp(&y[i * n + j], &yref[i * n + j], 4) == 0;
            judge_elem(&jd, i, j, y[i * n + j], yref[i * n + j], sqrt((double)k) * amax + 1e-30);
        }
    }
    *max_err = jd.max_err, *band = jd.band;
    return judge_ok(&jd);
}

/* memra_matmul's route from the floor to dequant_kr_f16 + gemm_f16 (memra_device_floor_f16_m_set(256);
 * ctest runs the GPU tests with MEMRA_FLOOR_F16_M=0): a Q4_K weight held as K records (budget 0) at m = 300 runs
 * dequant_kr_f16 + gemm_f16 (ledger: no gemm_kr) and agrees with the same bytes' f16 mirror (budget on; the two
 * f16 copies are the same bits, test dequant) within gemm_f16's band, JUDGE_BAND_F16 of sqrt(k) max |y row|
 * (two cuBLASLt calls on one shape: expected bit for bit, printed); the routed call captured into a CUDA graph
 * after memra_stream_reserve replays to the eager call's bits; at m = 255 the floor runs (gemm_kr); a Q8_0
 * weight on Q8_0 records at m = 300 is routed too (no gemm_q8_0r) and agrees with its mirror in the band;
 * memra_weight_floor_f16_m says 256 for the records weight and 0 for the mirror's, and after set(-1) the
 * environment's value, else 0 (off by default); set(MEMRA_FLOOR_F16_M_AUTO) the sm90 profile's 256. */
static int case_floor_route(void)
{
    const int64_t n = 512, k = 2048, nb = n * k / 256;
    uint8_t *q = malloc((size_t)(nb * 144));
    CHECK(q != NULL);
    for (int64_t i = 0; i < nb * 144; i++) q[i] = (uint8_t)(test_rand_u64(&g_rng) >> 56);
    for (int64_t b = 0; b < nb; b++) {
        const uint16_t d = rand_f16(0.05f), dm = rand_f16(0.02f);
        memcpy(q + b * 144, &d, 2), memcpy(q + b * 144 + 2, &dm, 2);
    }
    const memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q4_K, .out_f = n, .in_f = k,
                                 .data = q, .size = (size_t)(nb * 144), .name = "route.q4_k"};
    memra_weight *wf = NULL, *wm = NULL;
    floor_and_mirror(&d, &wf, &wm);
    int ok = (memra_weight_operands(wf, g_dev) & MEMRA_OPERAND_K_RECORDS) &&
             (memra_weight_operands(wm, g_dev) & MEMRA_OPERAND_F16_MIRROR);
    printf("operands: records weight 0x%x, mirror weight 0x%x  %s\n", memra_weight_operands(wf, g_dev),
           memra_weight_operands(wm, g_dev), ok ? "PASS" : "FAIL");
    CHECK_OK(memra_device_floor_f16_m_set(g_dev, 256));
    const int64_t tf = memra_weight_floor_f16_m(wf, g_dev), tm = memra_weight_floor_f16_m(wm, g_dev);
    printf("memra_weight_floor_f16_m after set(256): records %lld, mirror %lld  %s\n", (long long)tf, (long long)tm,
           tf == 256 && tm == 0 ? "PASS" : "FAIL");
    ok &= tf == 256 && tm == 0;
    const int m = 300;
    float *x = rand_x(m, k), *y1 = malloc((size_t)(m * n) * 4), *y2 = malloc((size_t)(m * n) * 4);
    CHECK(y1 != NULL && y2 != NULL);
    memra_buffer *xd = NULL, *yd = NULL;
    CHECK_OK(memra_buffer_create(g_dev, (size_t)(m * k) * 4, &xd));
    CHECK_OK(memra_buffer_write(xd, 0, x, (size_t)(m * k) * 4));
    CHECK_OK(memra_buffer_create(g_dev, (size_t)(m * n) * 4, &yd));
    for (int64_t i = 0; i < (int64_t)m * n; i++) y1[i] = NAN; /* y written first (a NaN left shows) */
    CHECK_OK(memra_buffer_write(yd, 0, y1, (size_t)(m * n) * 4));
    const uint64_t dk0 = memra_ledger_hits(g_dev, MEMRA_OP_dequant_kr_f16, "sm90"),
                   kr0 = memra_ledger_hits(g_dev, MEMRA_OP_gemm_kr, "mmq");
    CHECK_OK(memra_matmul(g_dev, wf, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), NULL));
    CHECK_OK(memra_buffer_read(yd, 0, y1, (size_t)(m * n) * 4));
    const uint64_t dk1 = memra_ledger_hits(g_dev, MEMRA_OP_dequant_kr_f16, "sm90") - dk0,
                   kr1 = memra_ledger_hits(g_dev, MEMRA_OP_gemm_kr, "mmq") - kr0;
    printf("m=%d on K records: dequant_kr_f16 x%llu, gemm_kr x%llu  %s\n", m, (unsigned long long)dk1,
           (unsigned long long)kr1, dk1 == 1 && kr1 == 0 ? "PASS" : "FAIL");
    ok &= dk1 == 1 && kr1 == 0;
    CHECK_OK(memra_matmul(g_dev, wm, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), NULL));
    CHECK_OK(memra_buffer_read(yd, 0, y2, (size_t)(m * n) * 4));
    int64_t same = 0;
    double err = 0, band = 0;
    const int agree = judge_vs_mirror("route vs f16 mirror", y1, y2, m, n, k, &same, &err, &band);
    printf("route vs mirror: %lld of %lld values bit for bit, max err %.3g (band %.3g)  %s\n", (long long)same,
           (long long)(m * n), err, band, agree ? "PASS" : "FAIL");
    ok &= agree;
    /* the route in a CUDA graph: a stream reserved for m = 300 captures the routed call (its f16 scratch sized
     * by the reserve's own calls), and the replay writes the eager call's bits */
    CU_CHECK(cu.cuStreamCreate(&g_stream, 0));
    memra_weight *ws[1] = {wf};
    CHECK_OK(memra_stream_reserve(g_dev, g_stream, ws, 1, m));
    for (int64_t i = 0; i < (int64_t)m * n; i++) y2[i] = NAN;
    CHECK_OK(memra_buffer_write(yd, 0, y2, (size_t)(m * n) * 4));
    CUgraph graph;
    CUgraphExec exec;
    CU_CHECK(cu.cuStreamBeginCapture_v2(g_stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */));
    const memra_status cst = memra_matmul(g_dev, wf, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), g_stream);
    if (cst != MEMRA_STATUS_OK) printf("  in the capture: %s\n", memra_last_error()); /* before a broken capture ends */
    CU_CHECK(cu.cuStreamEndCapture(g_stream, &graph));
    int cap = cst == MEMRA_STATUS_OK;
    if (cap) {
        CU_CHECK(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
        CU_CHECK(cu.cuGraphLaunch(exec, g_stream));
        CU_CHECK(cu.cuStreamSynchronize(g_stream));
        CHECK_OK(memra_buffer_read(yd, 0, y2, (size_t)(m * n) * 4));
        cap = memcmp(y1, y2, (size_t)(m * n) * 4) == 0;
    }
    printf("m=%d routed call captured after memra_stream_reserve: %s, replay %s the eager bits  %s\n", m,
           memra_status_str(cst), cap ? "equals" : "differs from", cap ? "PASS" : "FAIL");
    ok &= cap;
    const uint64_t kr2 = memra_ledger_hits(g_dev, MEMRA_OP_gemm_kr, "mmq"),
                   dk2 = memra_ledger_hits(g_dev, MEMRA_OP_dequant_kr_f16, "sm90");
    CHECK_OK(memra_matmul(g_dev, wf, memra_buffer_ptr(xd), 255, memra_buffer_ptr(yd), NULL));
    CHECK_OK(memra_buffer_read(yd, 0, y1, 4));
    const int floor = memra_ledger_hits(g_dev, MEMRA_OP_gemm_kr, "mmq") > kr2 &&
                      memra_ledger_hits(g_dev, MEMRA_OP_dequant_kr_f16, "sm90") == dk2;
    printf("m=255 on K records: the floor (gemm_kr)  %s\n", floor ? "PASS" : "FAIL");
    ok &= floor;
    /* Q8_0 records (the set value covers both kinds): m = 300 routed (no gemm_q8_0r), the f16 mirror's
     * results within gemm_f16's band */
    {
        const int64_t nb8 = n * k / 32;
        uint8_t *q8 = malloc((size_t)(nb8 * MEMRA_Q8_0_BYTES));
        CHECK(q8 != NULL);
        float *v = rand_x(n, k);
        for (int64_t b = 0; b < nb8; b++) memra_q8_0_encode(v + b * 32, q8 + b * MEMRA_Q8_0_BYTES);
        free(v);
        const memra_weight_desc d8 = {.struct_size = sizeof d8, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k,
                                      .data = q8, .size = (size_t)(nb8 * MEMRA_Q8_0_BYTES), .name = "route.q8_0"};
        memra_weight *w8 = NULL, *w8m = NULL;
        floor_and_mirror(&d8, &w8, &w8m);
        const uint64_t r0 = memra_ledger_hits(g_dev, MEMRA_OP_gemm_q8_0r, "mmq"),
                       e0 = memra_ledger_hits(g_dev, MEMRA_OP_dequant_kr_f16, "sm90");
        CHECK_OK(memra_matmul(g_dev, w8, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), NULL));
        CHECK_OK(memra_buffer_read(yd, 0, y1, (size_t)(m * n) * 4));
        const int routed = memra_ledger_hits(g_dev, MEMRA_OP_gemm_q8_0r, "mmq") == r0 &&
                           memra_ledger_hits(g_dev, MEMRA_OP_dequant_kr_f16, "sm90") == e0 + 1 &&
                           memra_weight_floor_f16_m(w8, g_dev) == 256;
        CHECK_OK(memra_matmul(g_dev, w8m, memra_buffer_ptr(xd), m, memra_buffer_ptr(yd), NULL));
        CHECK_OK(memra_buffer_read(yd, 0, y2, (size_t)(m * n) * 4));
        int64_t same8 = 0;
        double err8 = 0, band8 = 0;
        const int agree8 = judge_vs_mirror("Q8_0 route vs f16 mirror", y1, y2, m, n, k, &same8, &err8, &band8);
        printf("m=%d on Q8_0 records: routed %s, vs the mirror max err %.3g (band %.3g), %lld bit for bit  %s\n", m,
               routed ? "yes" : "no", err8, band8, (long long)same8, routed && agree8 ? "PASS" : "FAIL");
        ok &= routed && agree8;
        memra_weight_destroy(w8), memra_weight_destroy(w8m);
        free(q8);
    }
    CHECK_OK(memra_device_floor_f16_m_set(g_dev, -1));
    const char *env = getenv("MEMRA_FLOOR_F16_M");
    const int64_t want = env && strcmp(env, "auto") == 0 ? 256 : env && *env ? strtoll(env, NULL, 10) : 0,
                  got = memra_weight_floor_f16_m(wf, g_dev);
    printf("after set(-1): %lld (want %lld: %s)  %s\n", (long long)got, (long long)want,
           env && *env ? "MEMRA_FLOOR_F16_M" : "the default, off", got == want ? "PASS" : "FAIL");
    ok &= got == want;
    CHECK_OK(memra_device_floor_f16_m_set(g_dev, MEMRA_FLOOR_F16_M_AUTO));
    const int64_t ga = memra_weight_floor_f16_m(wf, g_dev);
    printf("set(MEMRA_FLOOR_F16_M_AUTO): %lld (the sm90 profile's 256)  %s\n", (long long)ga, ga == 256 ? "PASS" : "FAIL");
    ok &= ga == 256;
    CHECK_OK(memra_device_floor_f16_m_set(g_dev, -1));
    memra_buffer_destroy(xd), memra_buffer_destroy(yd);
    memra_weight_destroy(wf), memra_weight_destroy(wm);
    free(q), free(x), free(y1), free(y2);
    return ok;
}

static int expect_decline(const char *what, memra_op op, memra_op_args *a)
{
    memra_status st = run(g_dev, op, a);
    int ok = st == MEMRA_STATUS_DECLINED && a->decline_reason != NULL;
    printf("%-44s -> %s (%s)  %s\n", what, memra_status_str(st), a->decline_reason ? a->decline_reason : memra_last_error(),
           ok ? "PASS" : "FAIL");
    return ok;
}

static int case_declines(void)
{
    int ok = 1;
    const shape s = {4, 256, 264, 0, 0, 1.0f}; /* k = 264: not a multiple of 16 */
    gemm_case c;
    gemm_setup(&c, LANE_FP8, &s);
    memra_op_args a;
    gemm_args(&c, 1, &a);
    ok &= expect_decline("gemm_fp8 with k = 264", MEMRA_OP_gemm_fp8, &a);
    gemm_args(&c, 1, &a);
    a.gemm.w_scale_grid = D(&c.x); /* any device pointer: the decline comes first */
    ok &= expect_decline("gemm_fp8_blk with k = 264", MEMRA_OP_gemm_fp8_blk, &a);
    memra_op_args d = {.format = MEMRA_FORMAT_E4M3, .src = D(&c.w), .rows = 1, .cols = 16, .dst = D(&c.y)};
    ok &= expect_decline("dequant_f16 of e4m3", MEMRA_OP_dequant_f16, &d);
    gemm_args(&c, 1, &a);
    a.gemm.m = -1;
    memra_status st = run(g_dev, MEMRA_OP_gemm_fp8, &a);
    printf("%-44s -> %s (%s)  %s\n", "gemm_fp8 with m = -1", memra_status_str(st), memra_last_error(),
           st == MEMRA_STATUS_INVALID_ARGUMENT ? "PASS" : "FAIL");
    ok &= st == MEMRA_STATUS_INVALID_ARGUMENT;
    gemm_free(&c);
    return ok;
}

/* Not a test: TFLOP/s of each lane at the 27b sheet, m from argv (default 512):
 * the median of 5 samples, each 10 back-to-back calls between two events, after
 * 3 warm-ups. "f16 pre" times the GEMM on an activation converted beforehand;
 * the other columns include the lane's in-stream activation work. */
static int case_bench(int m)
{
    CU_CHECK(cu.cuStreamCreate(&g_stream, 0));
    static const int sheet[][2] = {{12288, 5120}, {1024, 5120}, {5120, 6144}, {17408, 5120}, {5120, 17408}, {5120, 5120}};
    CUevent ev[2];
    for (int i = 0; i < 2; i++) CU_CHECK(cu.cuEventCreate(&ev[i], 0));
    printf("bench m=%d: TFLOP/s (median of 5 samples of 10 back-to-back calls)\n%-13s %10s %12s %10s %12s\n", m, "n x k", "f16 pre", "f16 cvt", "fp8",
           "fp8_blk");
    for (size_t si = 0; si < sizeof sheet / sizeof sheet[0]; si++) {
        const shape s = {m, sheet[si][0], sheet[si][1], 0, 0, 1.0f};
        double tf[4];
        const lane order[4] = {LANE_F16_PRE, LANE_F16, LANE_FP8, LANE_FP8_BLK};
        for (int li = 0; li < 4; li++) {
            gemm_case c;
            gemm_setup(&c, order[li], &s);
            memra_op_args a;
            if (order[li] == LANE_F16_PRE) { /* convert once, time the GEMM alone */
                memra_op_args cv = {.src = D(&c.x), .dst = D(&c.xh), .n = (int64_t)m * s.k};
                CHECK_OK(run(g_dev, MEMRA_OP_cvt_f16, &cv));
            }
            gemm_args(&c, 1, &a);
            float ms[20];
            memra_status st = run(g_dev, gemm_op(order[li]), &a);
            if (st != MEMRA_STATUS_OK) {
                printf("  %s n=%d k=%d: %s %s\n", k_lane_names[order[li]], s.n, s.k, memra_status_str(st),
                       a.decline_reason ? a.decline_reason : memra_last_error());
                tf[li] = -1;
                gemm_free(&c);
                continue;
            }
            /* 3 warm-ups, then 5 samples of 10 back-to-back calls between two
             * events (the queue stays full, so host overhead is hidden as in use) */
            for (int r = 0; r < 3; r++) CHECK_OK(run(g_dev, gemm_op(order[li]), &a));
            for (int smp = 0; smp < 5; smp++) {
                CU_CHECK(cu.cuEventRecord(ev[0], g_stream));
                for (int r = 0; r < 10; r++) CHECK_OK(run(g_dev, gemm_op(order[li]), &a));
                CU_CHECK(cu.cuEventRecord(ev[1], g_stream));
                CU_CHECK(cu.cuEventSynchronize(ev[1]));
                CU_CHECK(cu.cuEventElapsedTime(&ms[smp], ev[0], ev[1]));
                ms[smp] /= 10.0f;
            }
            for (int i = 1; i < 5; i++)
                for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
                    float t = ms[j];
                    ms[j] = ms[j - 1];
                    ms[j - 1] = t;
                }
            const double med = ms[2];
            tf[li] = 2.0 * m * s.n * s.k / (med * 1e-3) / 1e12;
            gemm_free(&c);
        }
        printf("%5dx%-7d %10.1f %12.1f %10.1f %12.1f\n", s.n, s.k, tf[0], tf[1], tf[2], tf[3]);
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s cvt|scale|dequant|nan_count|fp8_to_q8_0|gemm_f16|gemm_fp8|gemm_fp8_blk|graph|declines|mmq_capture|floor_route|bench [m]\n",
                argv[0]);
        return 2;
    }
    setup();
    const char *c = argv[1];
    int ok;
    if (strcmp(c, "cvt") == 0) ok = case_cvt();
    else if (strcmp(c, "scale") == 0) ok = case_scale();
    else if (strcmp(c, "dequant") == 0) ok = case_dequant();
    else if (strcmp(c, "nan_count") == 0) ok = case_nan_count();
    else if (strcmp(c, "fp8_to_q8_0") == 0) ok = case_fp8_to_q8_0();
    else if (strcmp(c, "gemm_f16") == 0) ok = case_gemm(LANE_F16);
    else if (strcmp(c, "gemm_fp8") == 0) ok = case_gemm(LANE_FP8);
    else if (strcmp(c, "gemm_fp8_blk") == 0) ok = case_gemm(LANE_FP8_BLK);
    else if (strcmp(c, "graph") == 0) ok = case_graph();
    else if (strcmp(c, "declines") == 0) ok = case_declines();
    else if (strcmp(c, "mmq_capture") == 0) ok = case_mmq_capture();
    else if (strcmp(c, "floor_route") == 0) ok = case_floor_route();
    else if (strcmp(c, "bench") == 0) ok = case_bench(argc > 2 ? atoi(argv[2]) : 512);
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    memra_close(g_rt);
    printf("%s: %s\n", c, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
