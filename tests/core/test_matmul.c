/* memra_matmul through the dispatcher on the host device, every weight class:
 * the lane the policy picks (from the ledger), the result against an
 * independent f64 computation under the same quantisation, the f16
 * activation form, the row offset into a larger output, and weight
 * validation errors. The MMQ floor's Q8_0 records: which operands a weight
 * holds (memra_weight_operands), gemm_q8_0r serving, and gemm_q8_0 serving
 * the same answer when gemm_q8_0r is disabled, declined (test module
 * testq8r, argv[1]) or turned off (MEMRA_Q8_0_RECORDS=0).
 *
 * Judged by tools/judge.h: per element e = |y - ref| / mass, mass =
 * sum_k |x_k w_k| over the quantised operands, band JUDGE_BAND_HOST (1e-6:
 * the host module accumulates in double and rounds once to f32, and so does
 * this reference; judge.h derives it). Far below what a wrong scale (>= 2x),
 * a dropped 32- or 128-block (>= 1/k of the mass) or a wrong quantiser would
 * cause. MEMRA_TEST_INJECT_FAULT=1 moves the first element of every
 * comparison out of band: the test must then fail. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "tools/judge.h"

static uint64_t g_rng;

static float f16r(float v) { return memra_f32_from_f16(memra_f16_from_f32(v)); }

/* Reference activation quantisers, written from the brief. */
static void ref_q8_1(const float *x, int k, int8_t *q, float *d)
{
    for (int b = 0; b < k / 32; b++) {
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
        float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
        d[b] = db;
        for (int i = 0; i < 32; i++) q[b * 32 + i] = (int8_t)roundf(x[b * 32 + i] * id);
    }
}

typedef struct matrix {
    int m, n, k;
    float *x;     /* m x k */
    double *ref;  /* m x n */
    double *mass; /* m x n: sum |terms| */
} matrix;

static void compare(const char *what, const matrix *mx, const float *y, int64_t ldy, int64_t row0)
{
    judge jd;
    judge_init(&jd, what, JUDGE_BAND_HOST, stderr);
    jd.inject = test_inject_fault();
    for (int i = 0; i < mx->m; i++)
        for (int j = 0; j < mx->n; j++)
            judge_elem(&jd, i, j, y[(size_t)(row0 + i) * ldy + j], mx->ref[(size_t)i * mx->n + j],
                       mx->mass[(size_t)i * mx->n + j]);
    printf("%-28s m=%-3d n=%-4d k=%-4d max |err|/mass %.3g %s\n", what, mx->m, mx->n, mx->k, jd.max_err,
           judge_ok(&jd) ? "ok" : "FAIL");
    if (!judge_ok(&jd)) TEST_FAIL_AT("%s: %llu mismatches", what, (unsigned long long)jd.bad);
}

/* MEMRA_Q8_0_RECORDS is read once at memra_open: a runtime of its own with
 * the knob at 0 (as an option; the budget as given). */
static memra_runtime *open_no_records(const char *budget)
{
    char b[64];
    snprintf(b, sizeof b, "MEMRA_F16_BUDGET_MB=%s", budget);
    const char *settings[] = {"MEMRA_Q8_0_RECORDS=0", b, NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

/* MEMRA_FLOOR_F16_M is read once at memra_open too: a runtime of its own with the route from 8 tokens and no
 * mirror budget */
static memra_runtime *open_floor_f16(void)
{
    const char *settings[] = {"MEMRA_FLOOR_F16_M=8", "MEMRA_F16_BUDGET_MB=0", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

static memra_weight *make(memra_runtime *rt, const memra_weight_desc *d)
{
    memra_weight *w;
    CHECK_OK(memra_weight_create(rt, d, &w));
    return w;
}

/* Run y = x.W^T on the host device with a row offset and ldy > n, and check
 * untouched rows and padding stay as they were. Returns the whole output
 * buffer (y_size floats; the caller frees it). */
static size_t y_size(const matrix *mx) { return (size_t)(mx->m + 4) * (size_t)(mx->n + 3); }

static float *run_check_keep(memra_runtime *rt, memra_weight *w, const matrix *mx, const char *what, const char *op,
                             int as_f16)
{
    memra_device *host = memra_device_host(rt);
    int64_t ldy = mx->n + 3, row0 = 2;
    size_t ysz = (size_t)(mx->m + 4) * (size_t)ldy;
    float *y = malloc(ysz * sizeof *y);
    for (size_t i = 0; i < ysz; i++) y[i] = -7.0f;
    uint16_t *x16 = NULL;
    memra_matmul_args a = {.struct_size = sizeof a, .x = (memra_dptr)(uintptr_t)mx->x, .m = mx->m,
                           .y = (memra_dptr)(uintptr_t)y, .ldy = ldy, .y_row_offset = row0};
    if (as_f16) {
        x16 = malloc((size_t)mx->m * mx->k * 2);
        for (int i = 0; i < mx->m * mx->k; i++) x16[i] = memra_f16_from_f32(mx->x[i]);
        a.x = (memra_dptr)(uintptr_t)x16;
        a.x_is_f16 = 1;
    }
    memra_op opn = memra_op_from_name(op);
    uint64_t before = memra_ledger_hits(host, opn, "host");
    CHECK_OK(memra_matmul_ex(host, w, &a));
    if (memra_ledger_hits(host, opn, "host") != before + 1)
        TEST_FAIL_AT("%s: the ledger shows no %s hit on host", what, op);
    compare(what, mx, y, ldy, row0);
    for (int64_t r = 0; r < mx->m + 4; r++)
        for (int64_t c = 0; c < ldy; c++)
            if ((r < row0 || r >= row0 + mx->m || c >= mx->n) && y[r * ldy + c] != -7.0f)
                TEST_FAIL_AT("%s: wrote outside its rows/cols at [%lld,%lld]", what, (long long)r, (long long)c);
    free(x16);
    return y;
}

static void run_and_check(memra_runtime *rt, memra_weight *w, const matrix *mx, const char *what, const char *op,
                          int as_f16)
{
    free(run_check_keep(rt, w, mx, what, op, as_f16));
}

/* Two outputs of run_check_keep, bit for bit (gemm_q8_0r and gemm_q8_0 share
 * one numeric contract, and on the host one code path). */
static void same_bits(const char *what, const matrix *mx, const float *a, const float *b)
{
    for (size_t e = 0; e < y_size(mx); e++)
        if (memcmp(&a[e], &b[e], sizeof(float)) != 0)
            TEST_FAIL_AT("%s: output %zu is %.9g, the records path gave %.9g", what, e, (double)b[e], (double)a[e]);
}

static void check_operands(memra_runtime *rt, memra_weight *w, unsigned want, const char *what)
{
    unsigned got = memra_weight_operands(w, memra_device_host(rt));
    if (got != want) TEST_FAIL_AT("%s: operands 0x%x, want 0x%x", what, got, want);
}

static matrix new_matrix(int m, int n, int k)
{
    matrix mx = {.m = m, .n = n, .k = k};
    mx.x = malloc((size_t)m * k * sizeof(float));
    mx.ref = calloc((size_t)m * n, sizeof(double));
    mx.mass = calloc((size_t)m * n, sizeof(double));
    for (int i = 0; i < m * k; i++) mx.x[i] = 4.0f * test_rand_f32(&g_rng);
    return mx;
}

static void free_matrix(matrix *mx)
{
    free(mx->x);
    free(mx->ref);
    free(mx->mass);
}

/* Reference for f16-mirror lanes: f16(x) . f16(decode(W)). */
static void ref_f16(matrix *mx, const float *wdec)
{
    for (int i = 0; i < mx->m; i++)
        for (int j = 0; j < mx->n; j++) {
            double s = 0, a = 0;
            for (int k = 0; k < mx->k; k++) {
                double t = (double)f16r(mx->x[(size_t)i * mx->k + k]) * f16r(wdec[(size_t)j * mx->k + k]);
                s += t;
                a += fabs(t);
            }
            mx->ref[(size_t)i * mx->n + j] = s;
            mx->mass[(size_t)i * mx->n + j] = a;
        }
}

/* Reference for the MMQ floor: Q8_0 weight x q8_1 activation. */
static void ref_mmq(matrix *mx, const uint8_t *wq8)
{
    int nb = mx->k / 32;
    int8_t *q = malloc((size_t)mx->k);
    float *d = malloc((size_t)nb * sizeof(float));
    for (int i = 0; i < mx->m; i++) {
        ref_q8_1(mx->x + (size_t)i * mx->k, mx->k, q, d);
        for (int j = 0; j < mx->n; j++) {
            double s = 0, a = 0;
            for (int b = 0; b < nb; b++) {
                const uint8_t *blk = wq8 + ((size_t)j * nb + b) * MEMRA_Q8_0_BYTES;
                float dw = memra_f32_from_f16((uint16_t)(blk[0] | blk[1] << 8));
                int32_t isum = 0;
                for (int t = 0; t < 32; t++) isum += (int32_t)(int8_t)blk[2 + t] * q[b * 32 + t];
                double tt = (double)dw * d[b] * isum;
                s += tt;
                a += fabs(tt);
            }
            mx->ref[(size_t)i * mx->n + j] = s;
            mx->mass[(size_t)i * mx->n + j] = a + 1e-30;
        }
    }
    free(q);
    free(d);
}

static uint8_t *random_q8_0(int n, int k)
{
    size_t nb = (size_t)n * (k / 32);
    uint8_t *w = malloc(nb * MEMRA_Q8_0_BYTES);
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
    for (size_t i = 0; i < (size_t)n * k; i++) {
        uint8_t c;
        do c = (uint8_t)test_rand_u64(&g_rng);
        while (memra_e4m3_is_nan(c) || (c & 0x7F) == 0);
        w[i] = c;
    }
    return w;
}

static void test_q8_0(memra_runtime *rt, int m, int n, int k)
{
    uint8_t *wq = random_q8_0(n, k);
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k, .data = wq,
                           .size = (size_t)n * (k / 32) * MEMRA_Q8_0_BYTES, .name = "q8_0"};
    float *wdec = malloc((size_t)n * k * sizeof(float));
    for (int j = 0; j < n; j++) memra_decode_row(MEMRA_FORMAT_Q8_0, wq + (size_t)j * (k / 32) * 34, k, wdec + (size_t)j * k);

    matrix mx = new_matrix(m, n, k);
    const uint64_t budget0 = memra_device_f16_budget_get(memra_device_host(rt));
    CHECK_OK(memra_device_f16_budget_set(memra_device_host(rt), 1024));
    memra_weight *w = make(rt, &d);
    ref_f16(&mx, wdec);
    run_and_check(rt, w, &mx, "Q8_0 mirror -> gemm_f16", "gemm_f16", 0);
    run_and_check(rt, w, &mx, "Q8_0 mirror, f16 activation", "gemm_f16", 1);
    memra_weight_state ws;
    CHECK_OK(memra_weight_query(w, memra_device_host(rt), &ws));
    CHECK(ws.has_f16_mirror);
    memra_weight_destroy(w);

    /* No mirror: the MMQ floor on Q8_0 records, the raw copy freed. */
    memra_device *host = memra_device_host(rt);
    CHECK_OK(memra_device_f16_budget_set(host, 0));
    w = make(rt, &d);
    ref_mmq(&mx, wq);
    check_operands(rt, w, 0, "Q8_0 before prepare");
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_Q8_0_RECORDS, "Q8_0 no mirror");
    uint64_t blocks_hits = memra_ledger_hits(host, MEMRA_OP_gemm_q8_0, "host");
    float *y_rec = run_check_keep(rt, w, &mx, "Q8_0 no mirror -> records", "gemm_q8_0r", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_gemm_q8_0, "host"), blocks_hits);
    CHECK_OK(memra_weight_query(w, host, &ws));
    CHECK(!ws.has_f16_mirror);
    CHECK(!ws.has_q8_0_slab); /* records of a Q8_0 weight are not a slab */
    CHECK_STR_CONTAINS(ws.note, "MEMRA_F16_BUDGET_MB");
    /* An f16 activation has no lane here: a clear error. */
    memra_matmul_args a = {.struct_size = sizeof a, .x = (memra_dptr)(uintptr_t)mx.x, .x_is_f16 = 1, .m = m,
                           .y = (memra_dptr)(uintptr_t)mx.x};
    CHECK_STATUS(memra_matmul_ex(host, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);

    /* gemm_q8_0r disabled after prepare: the blocks come back (uploaded from
     * the host copy) and gemm_q8_0 gives the same bits. */
    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_q8_0r"));
    float *y_blk = run_check_keep(rt, w, &mx, "Q8_0 records disabled -> gemm_q8_0", "gemm_q8_0", 0);
    same_bits("Q8_0 gemm_q8_0 after the records", &mx, y_rec, y_blk);
    check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_RECORDS, "Q8_0 blocks made again");
    run_and_check(rt, w, &mx, "Q8_0 blocks, second call", "gemm_q8_0", 0);
    /* and the records serve again once the lane is back */
    CHECK_OK(memra_routing_configure(rt, NULL, ""));
    run_and_check(rt, w, &mx, "Q8_0 records again", "gemm_q8_0r", 0);
    memra_weight_destroy(w);
    free(y_blk);

    /* MEMRA_Q8_0_RECORDS=0: no records; gemm_q8_0 on the raw bytes. */
    memra_runtime *rt_nr = open_no_records("0");
    memra_device *host_nr = memra_device_host(rt_nr);
    w = make(rt_nr, &d);
    CHECK_OK(memra_weight_prepare(w, host_nr));
    check_operands(rt_nr, w, MEMRA_OPERAND_RAW, "Q8_0 with MEMRA_Q8_0_RECORDS=0");
    uint64_t rec_hits = memra_ledger_hits(host_nr, MEMRA_OP_gemm_q8_0r, "host");
    y_blk = run_check_keep(rt_nr, w, &mx, "Q8_0 MEMRA_Q8_0_RECORDS=0 -> MMQ", "gemm_q8_0", 0);
    CHECK_INT_EQ(memra_ledger_hits(host_nr, MEMRA_OP_gemm_q8_0r, "host"), rec_hits);
    same_bits("Q8_0 without records", &mx, y_rec, y_blk);
    memra_weight_destroy(w);
    memra_close(rt_nr);
    free(y_blk);

    /* No repack lane when the weight is prepared: no records either. */
    CHECK_OK(memra_routing_configure(rt, NULL, "repack_q8_0"));
    w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_RAW, "Q8_0 with repack_q8_0 disabled");
    run_and_check(rt, w, &mx, "Q8_0 no repack lane -> MMQ", "gemm_q8_0", 0);
    CHECK_OK(memra_routing_configure(rt, NULL, ""));
    memra_weight_destroy(w);
    free(y_rec);
    CHECK_OK(memra_device_f16_budget_set(host, budget0));
    free_matrix(&mx);
    free(wq);
    free(wdec);
}

static void test_fp8(memra_runtime *rt, int m, int n, int k, int with_grid, int with_nan)
{
    uint8_t *w8 = random_e4m3(n, k);
    if (with_nan) w8[(size_t)(n / 2) * k + 3] = 0xFF;
    int64_t gr = memra_fp8_grid_rows(n), gc = memra_fp8_grid_cols(k);
    float *grid = malloc((size_t)(gr * gc) * sizeof(float));
    for (int64_t i = 0; i < gr * gc; i++) grid[i] = 0.01f + 0.05f * fabsf(test_rand_f32(&g_rng));
    float wscale = with_grid ? 1.0f : 0.37f;
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_E4M3, .out_f = n, .in_f = k, .data = w8,
                           .size = (size_t)n * k, .scale = wscale, .grid = with_grid ? grid : NULL,
                           .grid_count = with_grid ? (size_t)(gr * gc) : 0, .name = "fp8"};
    memra_weight *w = make(rt, &d);
    matrix mx = new_matrix(m, n, k);
    if (with_nan) {
        /* Block weights with NaN codes go to the Q8_0 slab; the slab is the
         * host re-encode of dec(w) * grid (NaN codes included, whatever they
         * make) and only rows without NaN are compared. */
        memra_device *host = memra_device_host(rt);
        float *y = malloc((size_t)m * n * sizeof(float));
        uint64_t rec_hits = memra_ledger_hits(host, MEMRA_OP_gemm_q8_0r, "host");
        CHECK_OK(memra_matmul(host, w, (memra_dptr)(uintptr_t)mx.x, m, (memra_dptr)(uintptr_t)y, NULL));
        CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_gemm_q8_0r, "host"), rec_hits + 1);
        memra_weight_state ws;
        CHECK_OK(memra_weight_query(w, host, &ws));
        CHECK_INT_EQ(ws.nan_codes, 1);
        CHECK(ws.has_q8_0_slab); /* its records, which replaced the slab */
        check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_RECORDS, "FP8 block with NaN codes");
        free(y);
    } else {
        /* Activation quantisers from the brief. */
        double *xs = malloc((size_t)m * gc * sizeof(double));
        float *xq = malloc((size_t)m * k * sizeof(float));
        if (!with_grid) {
            float amax = 0.0f;
            for (int i = 0; i < m * k; i++) amax = fmaxf(amax, fabsf(mx.x[i]));
            float sx = amax / 448.0f;
            for (int i = 0; i < m * k; i++) xq[i] = memra_e4m3_decode(memra_e4m3_encode(mx.x[i] / sx));
            for (int i = 0; i < m * gc; i++) xs[i] = sx;
        } else {
            for (int i = 0; i < m; i++)
                for (int b = 0; b < gc; b++) {
                    float amax = 0.0f;
                    int k1 = (b + 1) * 128 < k ? (b + 1) * 128 : k;
                    for (int t = b * 128; t < k1; t++) amax = fmaxf(amax, fabsf(mx.x[(size_t)i * k + t]));
                    float s = amax / 448.0f;
                    xs[i * gc + b] = s;
                    for (int t = b * 128; t < k1; t++)
                        xq[(size_t)i * k + t] = memra_e4m3_decode(memra_e4m3_encode(mx.x[(size_t)i * k + t] / s));
                }
        }
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0, a = 0;
                for (int t = 0; t < k; t++) {
                    double sc = xs[i * gc + t / 128] * (with_grid ? grid[(j / 128) * gc + t / 128] : wscale);
                    double tt = sc * xq[(size_t)i * k + t] * memra_e4m3_decode(w8[(size_t)j * k + t]);
                    s += tt;
                    a += fabs(tt);
                }
                mx.ref[(size_t)i * n + j] = s;
                mx.mass[(size_t)i * n + j] = a;
            }
        run_and_check(rt, w, &mx, with_grid ? "FP8 block-128 -> gemm_fp8_blk" : "FP8 per-tensor -> gemm_fp8",
                      with_grid ? "gemm_fp8_blk" : "gemm_fp8", 0);
        free(xs);
        free(xq);
    }
    memra_weight_destroy(w);
    free_matrix(&mx);
    free(w8);
    free(grid);
}

/* Given activation scales through memra_matmul_ex (DESIGN.md, "Activation
 * scales"): the weight's input_scale, then the producer's x_amax, which wins;
 * the reference quantises at those scales (values above 448 s saturate). */
static void ref_fp8_given(matrix *mx, const uint8_t *w8, const float *grid, float wscale, const float *sc, int gc)
{
    const int m = mx->m, n = mx->n, k = mx->k;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, a = 0;
            for (int t = 0; t < k; t++) {
                const float st = sc[i * gc + t / 128];
                const double q = memra_e4m3_decode(memra_e4m3_encode(mx->x[(size_t)i * k + t] / st));
                const double tt = (double)st * (grid ? grid[(j / 128) * gc + t / 128] : wscale) * q *
                                  memra_e4m3_decode(w8[(size_t)j * k + t]);
                s += tt;
                a += fabs(tt);
            }
            mx->ref[(size_t)i * n + j] = s;
            mx->mass[(size_t)i * n + j] = a;
        }
}

static void test_fp8_given(memra_runtime *rt, int m, int n, int k, int with_grid)
{
    memra_device *host = memra_device_host(rt);
    uint8_t *w8 = random_e4m3(n, k);
    const int gr = (int)memra_fp8_grid_rows(n), gc = (int)memra_fp8_grid_cols(k);
    float *grid = malloc((size_t)gr * gc * sizeof(float));
    for (int i = 0; i < gr * gc; i++) grid[i] = 0.01f + 0.05f * fabsf(test_rand_f32(&g_rng));
    const float wscale = with_grid ? 1.0f : 0.37f;
    matrix mx = new_matrix(m, n, k);
    float amax = 0.0f;
    for (int i = 0; i < m * k; i++) amax = fmaxf(amax, fabsf(mx.x[i]));
    const float xs = amax / 448.0f * 0.55f; /* the top of the batch saturates */
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_E4M3, .out_f = n, .in_f = k, .data = w8,
                           .size = (size_t)n * k, .scale = wscale, .grid = with_grid ? grid : NULL,
                           .grid_count = with_grid ? (size_t)gr * gc : 0, .name = "fp8 given",
                           .input_scale = xs};
    memra_weight *w = make(rt, &d);
    CHECK(memra_weight_input_scale(w) == xs);
    const char *op = with_grid ? "gemm_fp8_blk" : "gemm_fp8";
    const memra_op opn = memra_op_from_name(op);
    float *sc = malloc((size_t)m * gc * sizeof(float)), *am = malloc((size_t)m * gc * sizeof(float));
    float *y = malloc((size_t)m * n * sizeof(float));
    memra_matmul_args a = {.struct_size = sizeof a, .x = (memra_dptr)(uintptr_t)mx.x, .m = m,
                           .y = (memra_dptr)(uintptr_t)y};
    char what[64];
    /* the weight's static scale */
    uint64_t hits = memra_ledger_hits(host, opn, "host");
    CHECK_OK(memra_matmul_ex(host, w, &a));
    CHECK_INT_EQ(memra_ledger_hits(host, opn, "host"), hits + 1);
    for (int i = 0; i < m * gc; i++) sc[i] = xs;
    ref_fp8_given(&mx, w8, with_grid ? grid : NULL, wscale, sc, gc);
    snprintf(what, sizeof what, "%s input_scale", op);
    compare(what, &mx, y, n, 0);
    /* the producer's maxima (per tensor: one; block: [gc x m], row fastest) */
    if (!with_grid) {
        am[0] = amax * 0.8f;
        for (int i = 0; i < m * gc; i++) sc[i] = am[0] / 448.0f;
    } else {
        for (int i = 0; i < m; i++)
            for (int b = 0; b < gc; b++) {
                float bm = 0.0f;
                for (int t = b * 128; t < k && t < b * 128 + 128; t++) bm = fmaxf(bm, fabsf(mx.x[(size_t)i * k + t]));
                am[b * m + i] = bm * (0.75f + 0.25f * test_rand_f32(&g_rng));
                sc[i * gc + b] = am[b * m + i] / 448.0f;
            }
    }
    a.x_amax = (memra_dptr)(uintptr_t)am;
    CHECK_OK(memra_matmul_ex(host, w, &a));
    ref_fp8_given(&mx, w8, with_grid ? grid : NULL, wscale, sc, gc);
    snprintf(what, sizeof what, "%s x_amax", op);
    compare(what, &mx, y, n, 0);
    /* an args struct of the first version has no x_amax: the static scale serves */
    memra_matmul_args old = a;
    old.struct_size = (uint32_t)(offsetof(memra_matmul_args, stream) + sizeof old.stream);
    CHECK_OK(memra_matmul_ex(host, w, &old));
    for (int i = 0; i < m * gc; i++) sc[i] = xs;
    ref_fp8_given(&mx, w8, with_grid ? grid : NULL, wscale, sc, gc);
    snprintf(what, sizeof what, "%s v1 args: input_scale", op);
    compare(what, &mx, y, n, 0);
    a.x_amax = (memra_dptr)(uintptr_t)am + 2;
    CHECK_STATUS(memra_matmul_ex(host, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "x_amax");
    memra_weight_destroy(w);
    /* the descriptor's checks */
    memra_weight_desc bad = d;
    bad.input_scale = -1.0f;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "input_scale");
    bad.input_scale = NAN;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    bad = d;
    bad.struct_size = (uint32_t)offsetof(memra_weight_desc, input_scale); /* older callers: no static scale */
    CHECK_OK(memra_weight_create(rt, &bad, &w));
    CHECK(memra_weight_input_scale(w) == 0.0f);
    memra_weight_destroy(w);
    free(sc), free(am), free(y), free(grid), free(w8);
    free_matrix(&mx);
}

/* Block-128 FP8 on the MMQ floor (gemm_fp8_blk disabled): the host profile
 * builds the Q8_0 slab at prepare, then its records, and frees the slab. The
 * reference is the MMQ product on the slab written from the contract
 * (dec(w) * grid in f32, then the Q8_0 encode). With gemm_q8_0r disabled too
 * the slab is rebuilt and gemm_q8_0 gives the same bits; with
 * MEMRA_Q8_0_RECORDS=0 the slab stays and serves. */
static void test_fp8_slab_records(memra_runtime *rt, int m, int n, int k)
{
    memra_device *host = memra_device_host(rt);
    uint8_t *w8 = random_e4m3(n, k);
    const int64_t gr = memra_fp8_grid_rows(n), gc = memra_fp8_grid_cols(k), nb = k / 32;
    float *grid = malloc((size_t)(gr * gc) * sizeof(float));
    for (int64_t i = 0; i < gr * gc; i++) grid[i] = 0.01f + 0.05f * fabsf(test_rand_f32(&g_rng));
    uint8_t *slab = malloc((size_t)(n * nb) * MEMRA_Q8_0_BYTES);
    for (int j = 0; j < n; j++)
        for (int64_t b = 0; b < nb; b++) {
            float v[32];
            const float sc = grid[(j / 128) * gc + (32 * b) / 128];
            for (int l = 0; l < 32; l++) v[l] = memra_e4m3_decode(w8[(size_t)j * k + 32 * b + l]) * sc;
            memra_q8_0_encode(v, slab + ((size_t)j * nb + b) * MEMRA_Q8_0_BYTES);
        }
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_E4M3, .out_f = n, .in_f = k, .data = w8,
                           .size = (size_t)n * k, .grid = grid, .grid_count = (size_t)(gr * gc), .name = "fp8 slab"};
    matrix mx = new_matrix(m, n, k);
    ref_mmq(&mx, slab);
    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_fp8_blk"));

    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_RECORDS, "FP8 block, records");
    memra_weight_state ws;
    CHECK_OK(memra_weight_query(w, host, &ws));
    CHECK(ws.has_q8_0_slab);
    uint64_t blocks_hits = memra_ledger_hits(host, MEMRA_OP_gemm_q8_0, "host");
    float *y_rec = run_check_keep(rt, w, &mx, "FP8 block -> slab records", "gemm_q8_0r", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_gemm_q8_0, "host"), blocks_hits);

    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_fp8_blk,gemm_q8_0r"));
    float *y_blk = run_check_keep(rt, w, &mx, "FP8 block, records disabled", "gemm_q8_0", 0);
    same_bits("FP8 slab rebuilt", &mx, y_rec, y_blk);
    check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_SLAB | MEMRA_OPERAND_Q8_0_RECORDS,
                   "FP8 block, slab rebuilt");
    free(y_blk);
    memra_weight_destroy(w);

    {
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)memra_device_f16_budget_get(host));
        memra_runtime *rt_nr = open_no_records(b);
        CHECK_OK(memra_routing_configure(rt_nr, NULL, "gemm_fp8_blk"));
        w = make(rt_nr, &d);
        CHECK_OK(memra_weight_prepare(w, memra_device_host(rt_nr)));
        check_operands(rt_nr, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_SLAB, "FP8 block, MEMRA_Q8_0_RECORDS=0");
        y_blk = run_check_keep(rt_nr, w, &mx, "FP8 block, slab, no records", "gemm_q8_0", 0);
        same_bits("FP8 slab without records", &mx, y_rec, y_blk);
        memra_weight_destroy(w);
        memra_close(rt_nr);
    }
    CHECK_OK(memra_routing_configure(rt, NULL, ""));
    free(y_blk);
    free(y_rec);
    free_matrix(&mx);
    free(w8);
    free(grid);
    free(slab);
}

typedef struct decline_find {
    const char *module, *reason;
    uint64_t declines;
} decline_find;

static void find_decline(const memra_ledger_row *r, void *user)
{
    decline_find *f = user;
    if (r->reason != NULL && strcmp(r->op, "gemm_q8_0r") == 0 && strcmp(r->module, f->module) == 0 &&
        strcmp(r->reason, f->reason) == 0)
        f->declines = r->declines;
}

static uint64_t q8r_declines(memra_runtime *rt)
{
    decline_find f = {.module = "testq8r", .reason = "testq8r declines every gemm_q8_0r"};
    memra_ledger_visit(rt, find_decline, &f);
    return f.declines;
}

/* A gemm_q8_0r lane that DECLINES (testq8r, loaded after prepare): with it as
 * the only lane matmul falls back to gemm_q8_0 on blocks made again; with the
 * host lane behind it the host serves the records. Then the module goes. */
static void test_q8_0_records_declined(memra_runtime *rt, const char *testq8r)
{
    memra_device *host = memra_device_host(rt);
    const int m = 9, n = 70, k = 160;
    uint8_t *wq = random_q8_0(n, k);
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k, .data = wq,
                           .size = (size_t)n * (k / 32) * MEMRA_Q8_0_BYTES, .name = "q8_0 declined"};
    matrix mx = new_matrix(m, n, k);
    ref_mmq(&mx, wq);
    const uint64_t budget0 = memra_device_f16_budget_get(host);
    CHECK_OK(memra_device_f16_budget_set(host, 0));
    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_Q8_0_RECORDS, "Q8_0 before the declining module");

    CHECK_OK(memra_module_load(rt, testq8r));
    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_q8_0r=host"));
    const char *names[4];
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_gemm_q8_0r, names, 4), 1);
    CHECK_STR_EQ(names[0], "testq8r");
    run_and_check(rt, w, &mx, "Q8_0 records declined -> gemm_q8_0", "gemm_q8_0", 0);
    CHECK_INT_EQ(q8r_declines(rt), 1);
    check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_RECORDS, "Q8_0 after a declined gemm_q8_0r");

    CHECK_OK(memra_routing_configure(rt, NULL, ""));
    CHECK_INT_EQ(memra_routing_get(host, MEMRA_OP_gemm_q8_0r, names, 4), 2);
    run_and_check(rt, w, &mx, "Q8_0 records, decline then host", "gemm_q8_0r", 0);
    CHECK_INT_EQ(q8r_declines(rt), 2);
    CHECK_OK(memra_module_unload(rt, "testq8r"));
    CHECK_OK(memra_device_f16_budget_set(host, budget0));
    memra_weight_destroy(w);
    free_matrix(&mx);
    free(wq);
}

/* Random K-quant blocks: every byte random but the f16 scales (d in
 * [0.01, 0.02), dmin in [0, 0.005)), so codes, sub-block scales and mins
 * cover their whole range and the weight is never all zeros. */
/* GGML's decoded values of an [n x k] weight of format f (memra_decode_row a row), malloc'd */
static float *decoded(memra_format f, const uint8_t *wq, int n, int k)
{
    float *wdec = malloc((size_t)n * k * sizeof(float));
    const uint64_t rb = memra_format_row_bytes(f, k);
    for (int j = 0; j < n; j++) memra_decode_row(f, wq + (size_t)j * rb, k, wdec + (size_t)j * k);
    return wdec;
}

static uint8_t *random_kquant(memra_format f, int n, int k, size_t *out_bytes)
{
    const size_t bb = (size_t)memra_format_block_bytes(f), nb = (size_t)n * (size_t)(k / 256);
    uint8_t *wq = malloc(nb * bb);
    for (size_t i = 0; i < nb * bb; i++) wq[i] = (uint8_t)test_rand_u64(&g_rng);
    for (size_t b = 0; b < nb; b++) {
        uint16_t dd = memra_f16_from_f32(0.01f + 0.01f * fabsf(test_rand_f32(&g_rng)));
        uint16_t dm = memra_f16_from_f32(0.005f * fabsf(test_rand_f32(&g_rng)));
        uint8_t *p = wq + b * bb;
        if (f == MEMRA_FORMAT_Q6_K) {
            p[208] = (uint8_t)dd, p[209] = (uint8_t)(dd >> 8);
        } else {
            p[0] = (uint8_t)dd, p[1] = (uint8_t)(dd >> 8), p[2] = (uint8_t)dm, p[3] = (uint8_t)(dm >> 8);
        }
    }
    *out_bytes = nb * bb;
    return wq;
}

/* The K-quant floor's reference: GGML's decoded weight (memra_decode_row) times
 * the decoded q8_1 activation (dx * q, the test's own quantiser), in double.
 * The mass is sum |dx q| (|s q| + |mn|) (Q6_K: |s q|) from the K records, the
 * terms the fold adds: gemm_kr adds the scale and the min term apart. The host
 * module's exact value differs from this reference only by the decoder's one
 * f32 rounding per value (<= u of its mass term) and the final f32 rounding:
 * JUDGE_BAND_HOST. */
static void ref_kr(matrix *mx, memra_format f, const float *wdec, const uint8_t *rec)
{
    const int nb = mx->k / 32;
    int8_t *q = malloc((size_t)mx->k);
    float *d = malloc((size_t)nb * sizeof(float));
    uint8_t *wide = malloc((size_t)memra_kr_wide_bytes(mx->n, mx->k)); /* the K-packed records widened */
    CHECK(wide != NULL);
    CHECK_INT_EQ(memra_kr_widen(f, rec, mx->n, mx->k, wide), 0);
    for (int i = 0; i < mx->m; i++) {
        ref_q8_1(mx->x + (size_t)i * mx->k, mx->k, q, d);
        for (int j = 0; j < mx->n; j++) {
            double s = 0, a = 0;
            for (int c = 0; c < mx->k; c++) {
                const double xv = (double)d[c / 32] * (double)q[c];
                s += (double)wdec[(size_t)j * mx->k + c] * xv;
                const uint8_t *r = wide + ((size_t)(c / 128) * mx->n + j) * MEMRA_KR_WIDE_BYTES;
                float s0, s1;
                memcpy(&s0, r + 4 * ((c % 128) / 32), 4);
                memcpy(&s1, r + 16 + 4 * ((c % 128) / 32), 4);
                const double qv = (double)(int8_t)r[32 + c % 128];
                a += fabs(xv) * (f == MEMRA_FORMAT_Q6_K ? fabs((c % 32 < 16 ? s0 : s1) * qv) : fabs(s0 * qv) + fabs(s1));
            }
            mx->ref[(size_t)i * mx->n + j] = s;
            mx->mass[(size_t)i * mx->n + j] = a + 1e-30;
        }
    }
    free(q);
    free(wide);
    free(d);
}

static void count_kq_fallback(const memra_ledger_row *r, void *user)
{
    if (r->reason != NULL && strcmp(r->op, "dequant_f16") == 0 && strcmp(r->module, "core") == 0 &&
        strstr(r->reason, "K-quant floor declined") != NULL)
        *(uint64_t *)user += r->declines;
}

/* Q4_K / Q5_K / Q6_K without a mirror: K records at prepare (memra_kr_repack,
 * whose values are checked here against GGML's decoder, exactly) in place of
 * the raw copy, matmul is quant_q8_1 + gemm_kr with no per-call
 * dequantisation; with gemm_kr disabled the same weight falls to the per-call
 * dequantisation (the raw copy made again, dequant_f16 + gemm_f16, the f16
 * reference) and the ledger names it as a core decline. */
static void test_kquant_floor(memra_runtime *rt, memra_format f, int m, int n, int k)
{
    size_t bytes = 0;
    uint8_t *wq = random_kquant(f, n, k, &bytes);
    float *wdec = decoded(f, wq, n, k);
    uint8_t *rec = malloc((size_t)memra_kr_bytes(f, n, k));
    CHECK_INT_EQ(memra_kr_repack(f, wq, n, k, rec), 0);
    /* exactly the GGUF bytes: the codes and scales at their width */
    CHECK_INT_EQ((long long)memra_kr_bytes(f, n, k), (long long)bytes);
    uint8_t *wide = malloc((size_t)memra_kr_wide_bytes(n, k));
    CHECK(wide != NULL);
    CHECK_INT_EQ(memra_kr_widen(f, rec, n, k, wide), 0);
    /* the repack is exact: each record value, formed in double, is GGML's f32 decode up to its one rounding */
    for (int j = 0; j < n; j++)
        for (int c = 0; c < k; c++) {
            const uint8_t *r = wide + ((size_t)(c / 128) * n + j) * MEMRA_KR_WIDE_BYTES;
            float s0, s1;
            memcpy(&s0, r + 4 * ((c % 128) / 32), 4);
            memcpy(&s1, r + 16 + 4 * ((c % 128) / 32), 4);
            const double qv = (double)(int8_t)r[32 + c % 128];
            const double v = f == MEMRA_FORMAT_Q6_K ? (c % 32 < 16 ? s0 : s1) * qv : s0 * qv - s1;
            const float dec = wdec[(size_t)j * k + c];
            if ((float)v != dec)
                TEST_FAIL_AT("%s record value [%d,%d] = %.9g, the decoder gives %.9g", memra_format_name(f), j, c, v,
                             (double)dec);
        }
    CHECK_INT_EQ(memra_kr_repack(MEMRA_FORMAT_Q8_0, wq, n, k, rec), -1);
    CHECK_INT_EQ(memra_kr_repack(f, wq, n, k - 32, rec), -1);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = wq, .size = bytes,
                           .name = memra_format_name(f)};
    memra_device *host = memra_device_host(rt);
    const uint64_t budget0 = memra_device_f16_budget_get(host);
    CHECK_OK(memra_device_f16_budget_set(host, 0));
    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant no mirror (records replace the raw copy)");
    memra_weight_state ws;
    CHECK_OK(memra_weight_query(w, host, &ws));
    CHECK(!ws.has_f16_mirror);
    CHECK_STR_CONTAINS(ws.note, "on the MMQ floor as K records");
    memra_weight_plan plan = {.struct_size = sizeof plan};
    CHECK_OK(memra_weight_plan_get(w, host, &plan));
    CHECK_STR_EQ(plan.lane, "mmq K records");
    matrix mx = new_matrix(m, n, k);
    ref_kr(&mx, f, wdec, rec);
    uint64_t deq = memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host");
    char what[64];
    snprintf(what, sizeof what, "%s no mirror -> gemm_kr", memra_format_name(f));
    run_and_check(rt, w, &mx, what, "gemm_kr", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq);
    /* f16 activations (the floor takes f32 only): the per-call dequantisation of the K records, no raw copy */
    free_matrix(&mx);
    mx = new_matrix(m, n, k);
    ref_f16(&mx, wdec);
    const uint64_t dk = memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host");
    snprintf(what, sizeof what, "%s f16 activation -> f16", memra_format_name(f));
    run_and_check(rt, w, &mx, what, "gemm_f16", 1);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host"), dk + 1);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq);
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant, f16 activation (no raw copy made)");
    /* the floor's lane gone: the per-call dequantisation, named in the ledger, from the K records
     * (dequant_kr_f16: no raw copy made again) */
    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_kr"));
    snprintf(what, sizeof what, "%s gemm_kr disabled -> f16", memra_format_name(f));
    float *yk = run_check_keep(rt, w, &mx, what, "gemm_f16", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host"), dk + 2);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq);
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant after the fall-back from K records");
    /* and without dequant_kr_f16 too: from the raw copy, made again; the same bits */
    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_kr,dequant_kr_f16"));
    snprintf(what, sizeof what, "%s gemm_kr, dequant_kr_f16 disabled", memra_format_name(f));
    float *yr = run_check_keep(rt, w, &mx, what, "gemm_f16", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq + 1);
    same_bits("dequant_f16 of the raw copy vs dequant_kr_f16 of the K records", &mx, yk, yr);
    free(yk);
    free(yr);
    check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_K_RECORDS, "K-quant after the fall-back");
    uint64_t named = 0;
    memra_ledger_visit(rt, count_kq_fallback, &named);
    CHECK(named >= 1); /* the ledger's core decline of dequant_f16 names the K-quant fall-back */
    CHECK_OK(memra_routing_configure(rt, NULL, ""));
    CHECK_OK(memra_device_f16_budget_set(host, budget0));
    memra_weight_destroy(w);
    free_matrix(&mx);
    free(wq);
    free(wdec);
    free(rec);
    free(wide);
}

/* MEMRA_FLOOR_F16_M=8 (read at open: a runtime of its own, budget 0): a K-quant weight held as K records runs
 * dequant_kr_f16 + gemm_f16 from 8 tokens (m = 17: the ledger shows both and no gemm_kr, dequant_f16 or raw
 * copy; judged against the f16 reference) and the floor below (m = 1: gemm_kr). dequant_kr_f16 is dequant_f16
 * of the blocks bit for bit, so the output equals, bit for bit, the per-call dequantisation's of the same
 * weight in a runtime with MEMRA_Q8_0_RECORDS=0 (raw copy, dequant_f16 + gemm_f16). */
static void test_kquant_f16_route(memra_format f, int n, int k)
{
    memra_runtime *rt = open_floor_f16(), *rt0 = open_no_records("0");
    size_t bytes = 0;
    uint8_t *wq = random_kquant(f, n, k, &bytes);
    float *wdec = decoded(f, wq, n, k);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = wq, .size = bytes,
                           .name = memra_format_name(f)};
    memra_device *host = memra_device_host(rt), *host0 = memra_device_host(rt0);
    memra_weight *w = make(rt, &d), *w0 = make(rt0, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant, MEMRA_FLOOR_F16_M (K records, no raw copy)");
    memra_weight_plan plan = {.struct_size = sizeof plan};
    CHECK_OK(memra_weight_plan_get(w, host, &plan));
    CHECK_STR_EQ(plan.lane, "mmq K records");
    CHECK_STR_CONTAINS(plan.why, "from 8 tokens dequant_kr_f16 + gemm_f16");
    matrix mx = new_matrix(17, n, k);
    ref_f16(&mx, wdec);
    const uint64_t kr0 = memra_ledger_hits(host, MEMRA_OP_gemm_kr, "host"),
                   dq0 = memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"),
                   dk0 = memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host");
    char what[64];
    snprintf(what, sizeof what, "%s m=17 FLOOR_F16_M=8 -> f16", memra_format_name(f));
    float *y = run_check_keep(rt, w, &mx, what, "gemm_f16", 0);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host"), (long long)dk0 + 1);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_gemm_kr, "host"), (long long)kr0);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), (long long)dq0);
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant after dequant_kr_f16 (no raw copy made)");
    /* the per-call dequantisation of the raw copy (no records at all): the same bits */
    snprintf(what, sizeof what, "%s m=17 no records -> f16", memra_format_name(f));
    const uint64_t dr0 = memra_ledger_hits(host0, MEMRA_OP_dequant_f16, "host");
    float *y0 = run_check_keep(rt0, w0, &mx, what, "gemm_f16", 0);
    CHECK_INT_EQ((long long)memra_ledger_hits(host0, MEMRA_OP_dequant_f16, "host"), (long long)dr0 + 1);
    same_bits("dequant_kr_f16 + gemm_f16 vs the raw copy's dequant_f16 + gemm_f16", &mx, y0, y);
    printf("%-44s bit for bit the raw copy's dequant_f16 + gemm_f16  PASS\n", what);
    free(y);
    free(y0);
    free_matrix(&mx);
    /* below the threshold: the floor */
    mx = new_matrix(1, n, k);
    memset(mx.ref, 0, (size_t)n * sizeof(double));
    memset(mx.mass, 0, (size_t)n * sizeof(double));
    uint8_t *rec = malloc((size_t)memra_kr_bytes(f, n, k));
    CHECK_INT_EQ(memra_kr_repack(f, wq, n, k, rec), 0);
    ref_kr(&mx, f, wdec, rec);
    snprintf(what, sizeof what, "%s m=1 FLOOR_F16_M=8 -> gemm_kr", memra_format_name(f));
    run_and_check(rt, w, &mx, what, "gemm_kr", 0);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host"), (long long)dk0 + 1);
    free_matrix(&mx);
    free(rec);
    memra_weight_destroy(w);
    memra_weight_destroy(w0);
    memra_close(rt);
    memra_close(rt0);
    free(wq);
    free(wdec);
}

/* memra_device_floor_f16_m_set from another thread while calls run: the threshold is read once a call, so each
 * call is the floor's (gemm_kr) or the route's (dequant_kr_f16 + gemm_f16) whole, bit for bit one of the two
 * outputs made first with the route off and on; the hits of the two ops add up to the calls. */
typedef struct toggle_arg {
    memra_device *dev;
    atomic_int stop;
} toggle_arg;

static void *toggle_route(void *p)
{
    toggle_arg *t = p;
    for (unsigned i = 0; !atomic_load(&t->stop); i++) CHECK_OK(memra_device_floor_f16_m_set(t->dev, i & 1 ? 1 : 0));
    return NULL;
}

static float *matmul_plain(memra_device *dev, memra_weight *w, const matrix *mx)
{
    float *y = malloc((size_t)mx->m * mx->n * sizeof *y);
    CHECK(y != NULL);
    CHECK_OK(memra_matmul(dev, w, (memra_dptr)(uintptr_t)mx->x, mx->m, (memra_dptr)(uintptr_t)y, NULL));
    return y;
}

static void test_floor_f16_m_threads(memra_format f, int n, int k)
{
    memra_runtime *rt = open_floor_f16();
    memra_device *host = memra_device_host(rt);
    size_t bytes = 0;
    uint8_t *wq = random_kquant(f, n, k, &bytes);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = wq, .size = bytes,
                           .name = memra_format_name(f)};
    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    matrix mx = new_matrix(5, n, k);
    CHECK_OK(memra_device_floor_f16_m_set(host, 0));
    float *yf = matmul_plain(host, w, &mx);
    CHECK_OK(memra_device_floor_f16_m_set(host, 1));
    float *yr = matmul_plain(host, w, &mx);
    const size_t ny = (size_t)mx.m * n;
    CHECK(memcmp(yf, yr, ny * sizeof *yf) != 0); /* the two paths differ, so the check below can tell them apart */
    const uint64_t kr0 = memra_ledger_hits(host, MEMRA_OP_gemm_kr, "host"),
                   dk0 = memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host");
    toggle_arg t = {.dev = host};
    atomic_init(&t.stop, 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, toggle_route, &t) == 0);
    const int calls = 64;
    int n_floor = 0, n_route = 0;
    for (int c = 0; c < calls; c++) {
        float *y = matmul_plain(host, w, &mx);
        const int is_floor = memcmp(y, yf, ny * sizeof *y) == 0, is_route = memcmp(y, yr, ny * sizeof *y) == 0;
        if (!is_floor && !is_route) TEST_FAIL_AT("call %d under a toggling threshold: neither path's output", c);
        n_floor += is_floor, n_route += is_route;
        free(y);
    }
    atomic_store(&t.stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    const uint64_t kr = memra_ledger_hits(host, MEMRA_OP_gemm_kr, "host") - kr0,
                   dk = memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host") - dk0;
    CHECK_INT_EQ((long long)(kr + dk), calls);
    CHECK_INT_EQ((long long)kr, n_floor);
    printf("%-44s %d calls under a toggling threshold: %d floor, %d route, each whole  PASS\n",
           memra_format_name(f), calls, n_floor, n_route);
    free(yf);
    free(yr);
    free_matrix(&mx);
    memra_weight_destroy(w);
    memra_close(rt);
    free(wq);
}

/* MEMRA_FLOOR_F16_M=8 on Q8_0 and Q4_0 weights held as Q8_0 records (budget 0): from 8 tokens dequant_kr_f16
 * of the records + gemm_f16, whose output is bit for bit the f16 mirror's (dequant_f16 of the blocks at
 * prepare, gemm_f16) in a runtime with the default budget; below 8 the floor (gemm_q8_0r). */
static void test_q8_f16_route(memra_format f, int n, int k)
{
    memra_options om = {.struct_size = sizeof om, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt = open_floor_f16(), *rtm;
    CHECK_OK(memra_open(&om, &rtm));
    const size_t nb = (size_t)n * (k / 32), bb = f == MEMRA_FORMAT_Q8_0 ? MEMRA_Q8_0_BYTES : MEMRA_Q4_0_BYTES;
    uint8_t *wq = f == MEMRA_FORMAT_Q8_0 ? random_q8_0(n, k) : malloc(nb * bb);
    if (f == MEMRA_FORMAT_Q4_0)
        for (size_t b = 0; b < nb; b++) {
            const uint16_t d = memra_f16_from_f32(0.005f + 0.005f * (1.0f + test_rand_f32(&g_rng)));
            wq[b * bb] = (uint8_t)d, wq[b * bb + 1] = (uint8_t)(d >> 8);
            for (size_t j = 2; j < bb; j++) wq[b * bb + j] = (uint8_t)test_rand_u64(&g_rng);
        }
    float *wdec = malloc((size_t)n * k * sizeof(float));
    for (int j = 0; j < n; j++) memra_decode_row(f, wq + (size_t)j * (k / 32) * bb, k, wdec + (size_t)j * k);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = wq, .size = nb * bb,
                           .name = memra_format_name(f)};
    memra_device *host = memra_device_host(rt), *hostm = memra_device_host(rtm);
    memra_weight *w = make(rt, &d), *wm = make(rtm, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    CHECK_OK(memra_weight_prepare(wm, hostm));
    CHECK(memra_weight_operands(w, host) & MEMRA_OPERAND_Q8_0_RECORDS);
    CHECK(memra_weight_operands(wm, hostm) & MEMRA_OPERAND_F16_MIRROR);
    memra_weight_plan plan = {.struct_size = sizeof plan};
    CHECK_OK(memra_weight_plan_get(w, host, &plan));
    CHECK_STR_CONTAINS(plan.why, "from 8 tokens dequant_kr_f16 + gemm_f16");
    matrix mx = new_matrix(17, n, k);
    ref_f16(&mx, wdec);
    const uint64_t dk0 = memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host"),
                   r0 = memra_ledger_hits(host, MEMRA_OP_gemm_q8_0r, "host");
    char what[64];
    snprintf(what, sizeof what, "%s m=17 FLOOR_F16_M=8 -> f16", memra_format_name(f));
    float *y = run_check_keep(rt, w, &mx, what, "gemm_f16", 0);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_dequant_kr_f16, "host"), (long long)dk0 + 1);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_gemm_q8_0r, "host"), (long long)r0);
    snprintf(what, sizeof what, "%s m=17 f16 mirror", memra_format_name(f));
    float *ym = run_check_keep(rtm, wm, &mx, what, "gemm_f16", 0);
    same_bits("dequant_kr_f16 of the Q8_0 records vs the mirror", &mx, y, ym);
    printf("%-44s bit for bit the f16 mirror's  PASS\n", what);
    free(y);
    free(ym);
    free_matrix(&mx);
    memra_weight_destroy(w);
    memra_weight_destroy(wm);
    memra_close(rt);
    memra_close(rtm);
    free(wq);
    free(wdec);
}

/* A gemm_kr lane's own NOT_SUPPORTED (testkrns: what a GPU lane answers in a
 * CUDA graph capture without reserved scratch) is the call's answer: no
 * per-call dequantisation (another numeric path) behind it, no raw copy made
 * again, nothing dequantised; with testkrns gone the host's gemm_kr serves. */
static void test_kquant_lane_not_supported(memra_runtime *rt, const char *testkrns)
{
    const memra_format f = MEMRA_FORMAT_Q4_K;
    const int m = 5, n = 36, k = 256;
    size_t bytes = 0;
    uint8_t *wq = random_kquant(f, n, k, &bytes);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = wq, .size = bytes,
                           .name = "q4_k lane not supported"};
    memra_device *host = memra_device_host(rt);
    const uint64_t budget0 = memra_device_f16_budget_get(host);
    CHECK_OK(memra_device_f16_budget_set(host, 0));
    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant before testkrns");
    CHECK_OK(memra_module_load(rt, testkrns));
    const char *names[4];
    CHECK(memra_routing_get(host, MEMRA_OP_gemm_kr, names, 4) >= 1);
    CHECK_STR_EQ(names[0], "testkrns");
    float *x = malloc((size_t)m * k * sizeof *x), *y = malloc((size_t)m * n * sizeof *y);
    CHECK(x != NULL && y != NULL);
    for (int i = 0; i < m * k; i++) x[i] = test_rand_f32(&g_rng);
    const uint64_t deq = memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host");
    CHECK_STATUS(memra_matmul(host, w, (memra_dptr)(uintptr_t)x, m, (memra_dptr)(uintptr_t)y, NULL),
                 MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STR_CONTAINS(memra_last_error(), "testkrns");
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq);
    check_operands(rt, w, MEMRA_OPERAND_K_RECORDS, "K-quant after testkrns's NOT_SUPPORTED (no raw copy made)");
    printf("%-44s NOT_SUPPORTED from the lane is the answer, no fall-back  PASS\n", "q4_k gemm_kr lane NOT_SUPPORTED");
    CHECK_OK(memra_module_unload(rt, "testkrns"));
    CHECK_OK(memra_matmul(host, w, (memra_dptr)(uintptr_t)x, m, (memra_dptr)(uintptr_t)y, NULL));
    CHECK_OK(memra_device_f16_budget_set(host, budget0));
    memra_weight_destroy(w);
    free(x), free(y), free(wq);
}

/* Q4_0 without a mirror on the MMQ floor: prepare converts its blocks to Q8_0
 * (d kept, q - 8 as int8: the same values) and repacks them into records, so
 * matmul is gemm_q8_0r, and its result is the MMQ reference of those Q8_0
 * blocks (ref_mmq: same band as a Q8_0 weight). The conversion here is the
 * test's own, from the Q4_0 layout (f16 d, 16 bytes: low nibbles are values
 * 0..15, high nibbles 16..31). With gemm_q8_0r disabled it falls to the
 * per-call dequantisation (dequant_f16 + gemm_f16, the f16 reference) and the
 * ledger names that path. Random nibbles and d in [0.005, 0.015): never all
 * zeros. */
static void test_q4_0_floor(memra_runtime *rt, int m, int n, int k)
{
    size_t nb = (size_t)n * (k / 32);
    uint8_t *w4 = malloc(nb * MEMRA_Q4_0_BYTES), *w8 = malloc(nb * MEMRA_Q8_0_BYTES);
    for (size_t b = 0; b < nb; b++) {
        uint8_t *q4 = w4 + b * MEMRA_Q4_0_BYTES, *q8 = w8 + b * MEMRA_Q8_0_BYTES;
        uint16_t d = memra_f16_from_f32(0.005f + 0.005f * (1.0f + test_rand_f32(&g_rng)));
        q4[0] = q8[0] = (uint8_t)d;
        q4[1] = q8[1] = (uint8_t)(d >> 8);
        for (int j = 0; j < 16; j++) {
            q4[2 + j] = (uint8_t)test_rand_u64(&g_rng);
            q8[2 + j] = (uint8_t)(int8_t)((int)(q4[2 + j] & 15) - 8);
            q8[18 + j] = (uint8_t)(int8_t)((int)(q4[2 + j] >> 4) - 8);
        }
    }
    /* the two block streams decode to the same floats (the conversion is exact) */
    float *a4 = malloc((size_t)k * sizeof(float)), *a8 = malloc((size_t)k * sizeof(float));
    float *wdec = malloc((size_t)n * k * sizeof(float));
    for (int j = 0; j < n; j++) {
        memra_decode_row(MEMRA_FORMAT_Q4_0, w4 + (size_t)j * (k / 32) * MEMRA_Q4_0_BYTES, k, a4);
        memra_decode_row(MEMRA_FORMAT_Q8_0, w8 + (size_t)j * (k / 32) * MEMRA_Q8_0_BYTES, k, a8);
        if (memcmp(a4, a8, (size_t)k * sizeof(float)) != 0) TEST_FAIL_AT("Q4_0 row %d: the Q8_0 form decodes otherwise", j);
        memcpy(wdec + (size_t)j * k, a4, (size_t)k * sizeof(float));
    }
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q4_0, .out_f = n, .in_f = k, .data = w4,
                           .size = nb * MEMRA_Q4_0_BYTES, .name = "q4_0"};
    memra_device *host = memra_device_host(rt);
    const uint64_t budget0 = memra_device_f16_budget_get(host);
    CHECK_OK(memra_device_f16_budget_set(host, 0));
    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    check_operands(rt, w, MEMRA_OPERAND_RAW | MEMRA_OPERAND_Q8_0_RECORDS, "Q4_0 no mirror");
    memra_weight_state ws;
    CHECK_OK(memra_weight_query(w, host, &ws));
    CHECK(!ws.has_f16_mirror);
    CHECK_STR_CONTAINS(ws.note, "Q4_0 on the MMQ floor");
    matrix mx = new_matrix(m, n, k);
    ref_mmq(&mx, w8);
    uint64_t deq = memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host");
    run_and_check(rt, w, &mx, "Q4_0 no mirror -> records", "gemm_q8_0r", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq);
    /* the floor's lane gone: the per-call dequantisation, named in the ledger */
    CHECK_OK(memra_routing_configure(rt, NULL, "gemm_q8_0r"));
    free_matrix(&mx);
    mx = new_matrix(m, n, k);
    ref_f16(&mx, wdec);
    run_and_check(rt, w, &mx, "Q4_0 records disabled -> f16", "gemm_f16", 0);
    CHECK_INT_EQ(memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), deq + 1);
    CHECK_OK(memra_routing_configure(rt, NULL, ""));
    memra_weight_destroy(w);
    CHECK_OK(memra_device_f16_budget_set(host, budget0));
    free_matrix(&mx);
    free(w4), free(w8), free(a4), free(a8), free(wdec);
}

static void test_validation(memra_runtime *rt)
{
    uint8_t bytes[34 * 4] = {0};
    float grid[4] = {1, 1, 1, 1};
    memra_weight *w;
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = 2, .in_f = 64,
                           .data = bytes, .size = sizeof bytes};
    CHECK_OK(memra_weight_create(rt, &d, &w));
    memra_weight_destroy(w);
    memra_weight_desc bad = d;
    bad.in_f = 48;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "not a multiple of q8_0's block of 32");
    bad = d;
    bad.size = 100;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "100 bytes given");
    bad = d;
    bad.format = (memra_format)99;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    bad = d;
    bad.out_f = 0;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    bad = d;
    bad.data = NULL;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    bad = d;
    bad.scale = 2.0f;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "E4M3 weights only");
    bad = d;
    bad.input_scale = 0.5f;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "input_scale applies to E4M3 weights only");
    memra_weight_desc f = {.struct_size = sizeof f, .format = MEMRA_FORMAT_E4M3, .out_f = 2, .in_f = 64,
                           .data = bytes, .size = 128, .grid = grid, .grid_count = 1};
    CHECK_OK(memra_weight_create(rt, &f, &w));
    memra_weight_destroy(w);
    bad = f;
    bad.grid_count = 2;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "needs [1 x 1]");
    bad = f;
    grid[0] = NAN;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "not finite");
    grid[0] = 1.0f;
    bad = f;
    bad.scale = 2.0f;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    bad = f;
    bad.grid = NULL;
    bad.scale = INFINITY;
    bad.grid_count = 0;
    CHECK_STATUS(memra_weight_create(rt, &bad, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    /* Bad matmul arguments. */
    CHECK_OK(memra_weight_create(rt, &d, &w));
    float y[8];
    CHECK_STATUS(memra_matmul(memra_device_host(rt), w, 0, 1, (memra_dptr)(uintptr_t)y, NULL),
                 MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_matmul(memra_device_host(rt), w, (memra_dptr)(uintptr_t)y, 0, (memra_dptr)(uintptr_t)y, NULL),
                 MEMRA_STATUS_INVALID_ARGUMENT);
    memra_weight_destroy(w);
    memra_weight_destroy(NULL);
}

/* A module whose quant_q8_1 predates the records' sum plane (testqnosums: its descriptor ends
 * before q8_1_sums): it loads (its scale op is usable), but its quant_q8_1 is dropped, so the
 * routing, memra_module_provides and a direct memra_module_call never reach it, and the K-quant
 * floor still quantises on the host module, whose records carry the plane. */
static void test_quant_without_sums(memra_runtime *rt, const char *testqnosums)
{
    memra_device *host = memra_device_host(rt);
    CHECK_OK(memra_module_load(rt, testqnosums));
    CHECK(memra_module_provides(host, "testqnosums", MEMRA_OP_scale));
    CHECK(!memra_module_provides(host, "testqnosums", MEMRA_OP_quant_q8_1));
    const char *names[4];
    const int n = memra_routing_get(host, MEMRA_OP_quant_q8_1, names, 4);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK_STR_EQ(names[0], "host");
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = test_rand_f32(&g_rng) + 2.0f;
    uint8_t rec[640];
    memra_op_args a = {.struct_size = sizeof a, .src = (memra_dptr)(uintptr_t)x, .dst = (memra_dptr)(uintptr_t)rec,
                       .rows = 1, .cols = 64};
    CHECK(memra_module_call(host, "testqnosums", MEMRA_OP_quant_q8_1, &a) != MEMRA_STATUS_OK);
    test_kquant_floor(rt, MEMRA_FORMAT_Q4_K, 17, 33, 768);
    CHECK_OK(memra_module_unload(rt, "testqnosums"));
}

/* gemm_w16 on the host device (MEMRA_W16=1, read at open; budget 0: no mirror): a Q8_0 / Q4_0 / K-quant
 * weight gets the W16 operand in place of its raw copy and the floor's records (memra_weight_operands, the
 * plan's lane "w16"), the call runs gemm_w16 (ledger), judged against the f16 reference, and its output is,
 * bit for bit, that of the same blocks' f16 mirror (a runtime with the default budget: gemm_f16 on
 * dequant_f16's mirror). An f16 activation runs gemm_w16 too, the same bits. MEMRA_W16=0, or in_f off the tile's 64-column step: the floor's records as before. */
static memra_runtime *open_w16(const char *v)
{
    char b[32];
    snprintf(b, sizeof b, "MEMRA_W16=%s", v);
    const char *settings[] = {b, "MEMRA_F16_BUDGET_MB=0", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

static void test_w16_route(memra_runtime *rt_mirror, memra_format f, int m, int n, int k)
{
    memra_runtime *rt = open_w16("1"), *rt0 = open_w16("0");
    size_t bytes = 0;
    uint8_t *wq;
    if (f == MEMRA_FORMAT_Q8_0) {
        wq = random_q8_0(n, k);
        bytes = (size_t)n * (size_t)(k / 32) * MEMRA_Q8_0_BYTES;
    } else if (f == MEMRA_FORMAT_Q4_0) {
        bytes = (size_t)n * (size_t)(k / 32) * MEMRA_Q4_0_BYTES;
        wq = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) wq[i] = (uint8_t)test_rand_u64(&g_rng);
        for (size_t b = 0; b < bytes; b += MEMRA_Q4_0_BYTES) {
            const uint16_t d = memra_f16_from_f32(0.005f + 0.005f * fabsf(test_rand_f32(&g_rng)));
            wq[b] = (uint8_t)d, wq[b + 1] = (uint8_t)(d >> 8);
        }
    } else {
        wq = random_kquant(f, n, k, &bytes);
    }
    float *wdec = decoded(f, wq, n, k);
    memra_weight_desc d = {.struct_size = sizeof d, .format = f, .out_f = n, .in_f = k, .data = wq, .size = bytes,
                           .name = memra_format_name(f)};
    memra_device *host = memra_device_host(rt), *host0 = memra_device_host(rt0);
    memra_weight *w = make(rt, &d), *w0 = make(rt0, &d), *wm = make(rt_mirror, &d);
    CHECK_OK(memra_weight_prepare(w, host));
    char what[80];
    snprintf(what, sizeof what, "%s %dx%d MEMRA_W16=1", memra_format_name(f), n, k);
    check_operands(rt, w, MEMRA_OPERAND_W16, what);
    memra_weight_plan plan = {.struct_size = sizeof plan};
    CHECK_OK(memra_weight_plan_get(w, host, &plan));
    CHECK_STR_EQ(plan.lane, "w16");
    CHECK_INT_EQ((long long)plan.operand_bytes, (long long)memra_w16_bytes(f, n, k));
    CHECK(plan.n_steps == 1 && plan.ops[0] == MEMRA_OP_gemm_w16);
    matrix mx = new_matrix(m, n, k);
    ref_f16(&mx, wdec);
    snprintf(what, sizeof what, "%s m=%d %dx%d -> gemm_w16", memra_format_name(f), m, n, k);
    float *y = run_check_keep(rt, w, &mx, what, "gemm_w16", 0);
    snprintf(what, sizeof what, "%s m=%d %dx%d f16 mirror", memra_format_name(f), m, n, k);
    float *ym = run_check_keep(rt_mirror, wm, &mx, what, "gemm_f16", 0);
    same_bits("gemm_w16 vs gemm_f16 on the f16 mirror", &mx, ym, y);
    /* an f16 activation (x_is_f16, as gemm_f16 takes it): gemm_w16 too, the same bits (f16(x) is what the f32
     * call rounds to), no raw copy made */
    snprintf(what, sizeof what, "%s m=%d x f16 -> gemm_w16", memra_format_name(f), m);
    const uint64_t dq0 = memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host");
    float *yh = run_check_keep(rt, w, &mx, what, "gemm_w16", 1);
    CHECK_INT_EQ((long long)memra_ledger_hits(host, MEMRA_OP_dequant_f16, "host"), (long long)dq0);
    same_bits("x f16 vs x f32 on gemm_w16", &mx, yh, y);
    check_operands(rt, w, MEMRA_OPERAND_W16, "W16 after an f16 activation");
    printf("%-44s gemm_w16 bit for bit the f16 mirror's  PASS\n", memra_format_name(f));
    /* MEMRA_W16=0: the floor's records */
    CHECK_OK(memra_weight_prepare(w0, host0));
    check_operands(rt0, w0,
                   f == MEMRA_FORMAT_Q8_0   ? MEMRA_OPERAND_Q8_0_RECORDS
                   : f == MEMRA_FORMAT_Q4_0 ? MEMRA_OPERAND_Q8_0_RECORDS | MEMRA_OPERAND_RAW /* Q4_0 keeps its blocks */
                                            : MEMRA_OPERAND_K_RECORDS,
                   "MEMRA_W16=0");
    free(y), free(ym), free(yh);
    free_matrix(&mx);
    memra_weight_destroy(w), memra_weight_destroy(w0), memra_weight_destroy(wm);
    memra_close(rt), memra_close(rt0);
    free(wq), free(wdec);
}

/* in_f a multiple of 32 but not of the tile's 64: no W16 operand, the records */
static void test_w16_off_step(void)
{
    memra_runtime *rt = open_w16("1");
    uint8_t *wq = random_q8_0(40, 96);
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = 40, .in_f = 96, .data = wq,
                           .size = (size_t)40 * 3 * MEMRA_Q8_0_BYTES, .name = "q8_0 k96"};
    memra_weight *w = make(rt, &d);
    CHECK_OK(memra_weight_prepare(w, memra_device_host(rt)));
    check_operands(rt, w, MEMRA_OPERAND_Q8_0_RECORDS, "Q8_0 in_f 96 under MEMRA_W16=1");
    memra_weight_destroy(w);
    memra_close(rt);
    free(wq);
}

/* memra_device_w16_set from another thread while weights are prepared (MEMRA_W16=1): the setting is read once
 * a prepare, so each weight holds the W16 operand alone or the floor's records alone, never both or neither. */
typedef struct w16_toggle {
    memra_device *dev;
    atomic_int stop;
} w16_toggle;

static void *toggle_w16(void *p)
{
    w16_toggle *t = p;
    for (unsigned i = 0; !atomic_load(&t->stop); i++) CHECK_OK(memra_device_w16_set(t->dev, (int)(i & 1)));
    return NULL;
}

static void test_w16_set_threads(void)
{
    memra_runtime *rt = open_w16("1");
    memra_device *host = memra_device_host(rt);
    const int n = 40, k = 128;
    uint8_t *wq = random_q8_0(n, k);
    memra_weight_desc d = {.struct_size = sizeof d, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k, .data = wq,
                           .size = (size_t)n * (k / 32) * MEMRA_Q8_0_BYTES, .name = "q8_0 toggled"};
    w16_toggle t = {.dev = host};
    atomic_init(&t.stop, 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, toggle_w16, &t) == 0);
    int seen[2] = {0, 0};
    for (int i = 0; i < 64; i++) {
        memra_weight *w = make(rt, &d);
        CHECK_OK(memra_weight_prepare(w, host));
        const unsigned ops = memra_weight_operands(w, host);
        if (ops != MEMRA_OPERAND_W16 && ops != MEMRA_OPERAND_Q8_0_RECORDS)
            TEST_FAIL_AT("weight %d prepared while memra_device_w16_set toggles: operands 0x%x", i, ops);
        seen[ops == MEMRA_OPERAND_W16]++;
        memra_weight_destroy(w);
    }
    atomic_store(&t.stop, 1);
    CHECK(pthread_join(th, NULL) == 0);
    printf("%-44s W16 x%d, records x%d, never both  PASS\n", "memra_device_w16_set toggled", seen[1], seen[0]);
    CHECK_OK(memra_device_w16_set(host, -1));
    memra_close(rt);
    free(wq);
}

int main(int argc, char **argv)
{
    if (argc < 4) TEST_FAIL_AT("usage: test_matmul <path of testq8r.so> <path of testkrns.so> <path of testqnosums.so>");
    g_rng = test_seed();
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    test_validation(rt);
    static const int shapes[][3] = {{1, 40, 64}, {15, 129, 96}, {16, 64, 256}, {17, 33, 320}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        test_q8_0(rt, shapes[i][0], shapes[i][1], shapes[i][2]);
        test_q4_0_floor(rt, shapes[i][0], shapes[i][1], shapes[i][2]);
        test_fp8(rt, shapes[i][0], shapes[i][1], shapes[i][2], 0, 0);
        test_fp8(rt, shapes[i][0], shapes[i][1] + 100, shapes[i][2] + 80, 1, 0);
    }
    test_fp8(rt, 4, 130, 256, 1, 1);
    test_fp8_given(rt, 1, 40, 96, 0);
    test_fp8_given(rt, 15, 129, 200, 0);
    test_fp8_given(rt, 1, 40, 96, 1);
    test_fp8_given(rt, 17, 140, 300, 1);
    test_fp8_slab_records(rt, 5, 130, 160);
    test_fp8_slab_records(rt, 17, 33, 512);
    test_q8_0_records_declined(rt, argv[1]);
    static const memra_format kq[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    for (size_t f = 0; f < 3; f++) {
        test_kquant_floor(rt, kq[f], 1, 40, 256);
        test_kquant_floor(rt, kq[f], 17, 33, 768);
    }
    for (size_t f = 0; f < 3; f++) test_kquant_f16_route(kq[f], 33, 768);
    test_floor_f16_m_threads(MEMRA_FORMAT_Q4_K, 33, 768);
    test_q8_f16_route(MEMRA_FORMAT_Q8_0, 33, 288);
    test_q8_f16_route(MEMRA_FORMAT_Q4_0, 40, 160);
    static const memra_format wf[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                      MEMRA_FORMAT_Q6_K};
    for (size_t f = 0; f < 5; f++)
        test_w16_route(rt, wf[f], 17, 129, wf[f] == MEMRA_FORMAT_Q8_0 || wf[f] == MEMRA_FORMAT_Q4_0 ? 320 : 512);
    test_w16_off_step();
    test_w16_set_threads();
    test_kquant_lane_not_supported(rt, argv[2]);
    test_quant_without_sums(rt, argv[3]);
    memra_close(rt);
    return 0;
}
