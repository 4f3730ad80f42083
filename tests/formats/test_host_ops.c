/* The host reference module, op by op, against plain f64 computations written
 * here, on fresh random data (never zeros).
 *
 *   test_host_ops <case>   case: desc cvt_f16 gemm_f16 gemm_fp8 gemm_fp8_blk gemm_fp8_given
 *                          gemm_fp8_blk_given quant_q8_1
 *                          gemm_q8_0 dequant_f16 fp8_blk_to_q8_0 fp8_nan_count scale
 *                          accprobe repack_q8_0 gemm_q8_0r gemm_kr invalid threads perf
 *
 * The module is linked directly (memra__host_module_entry) and initialised
 * with host services filled in here. The reference shares each op's
 * quantisation (f16 cast, e4m3 activation scales, q8_1 records: the encoders
 * are known-answer tested in test_formats), so each band below only covers
 * accumulation order and the final f32 rounding. The loss the quantisation
 * itself causes is printed against an unquantised f64 product.
 *
 * u = 2^-53 (double), r = 2^-24 (half an f32 ulp, relative).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "memra/formats.h"
#include "memra/memra.h"
#include "modules/host/host_module.h"
#include "test.h"

#define U53 0x1p-53
#define R24 0x1p-24
#define SENTINEL 12345.5f

static uint64_t g_rng;

/* ---- the module under test ------------------------------------------------------ */

static void test_log(int level, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%d] %s: ", level, module ? module : "?");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static const memra_host_services g_host = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_host_services),
    .log = test_log,
    .set_error = memra__set_error,
};

typedef struct fixture {
    const memra_module_desc *desc;
    const memra_op_table *ops;
    memra_device_caps caps;
    void *ctx;
    memra_call call;
} fixture;

static void fixture_open(fixture *f, int threads)
{
    memset(f, 0, sizeof *f);
    f->desc = memra__host_module_entry();
    CHECK(f->desc != NULL);
    f->ops = f->desc->ops;
    f->caps = (memra_device_caps){.struct_size = sizeof(memra_device_caps), .arch = MEMRA_ARCH_HOST,
                                  .profile = "host", .name = "host", .ordinal = -1, .sm_count = threads};
    CHECK_OK(f->desc->init(&g_host, &f->caps, &f->ctx));
    f->call = (memra_call){.struct_size = sizeof(memra_call), .module_ctx = f->ctx, .caps = &f->caps};
}

static void fixture_close(fixture *f) { f->desc->fini(f->ctx); }

#define DP(p) ((memra_dptr)(uintptr_t)(p))

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) TEST_FAIL_AT("out of memory (%zu bytes)", n);
    return p;
}

static float *rand_f32(int64_t n, float mag)
{
    float *v = xmalloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = test_rand_f32(&g_rng) * mag;
    return v;
}

/* e4m3 bytes of random finite values (no NaN codes) of either sign. */
static uint8_t *rand_e4m3(int64_t n)
{
    uint8_t *w = xmalloc((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        uint8_t c;
        do c = (uint8_t)test_rand_u64(&g_rng);
        while (memra_e4m3_is_nan(c));
        w[i] = c;
    }
    return w;
}

/* ---- comparison ------------------------------------------------------------------ */

/* |got - ref| <= band per element; print the first mismatches, max abs and max rel. */
static void compare(const char *what, const float *got, const double *ref, const double *band, int64_t rows,
                    int64_t cols, int64_t ldg)
{
    int bad = 0;
    double max_abs = 0, max_rel = 0, max_ratio = 0;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            double g = got[i * ldg + j], r = ref[i * cols + j], b = band[i * cols + j];
            double e = fabs(g - r);
            if (!(e <= b)) {
                if (bad < 10)
                    fprintf(stderr, "  %s mismatch [%lld,%lld]: got %.9g ref %.12g |diff| %.3g band %.3g\n", what,
                            (long long)i, (long long)j, g, r, e, b);
                bad++;
            }
            if (e > max_abs) max_abs = e;
            if (r != 0 && e / fabs(r) > max_rel) max_rel = e / fabs(r);
            if (b > 0 && e / b > max_ratio) max_ratio = e / b;
        }
    }
    printf("  %-28s max abs %.3g  max rel %.3g  max err/band %.3f  %s\n", what, max_abs, max_rel, max_ratio,
           bad ? "FAIL" : "ok");
    if (bad) TEST_FAIL_AT("%s: %d of %lld elements outside the band", what, bad, (long long)(rows * cols));
}

/* Rows outside [off, off + m) and columns n..ldy-1 keep their sentinel. */
static float *y_alloc(int64_t rows_total, int64_t ldy)
{
    float *y = xmalloc((size_t)(rows_total * ldy) * sizeof *y);
    for (int64_t e = 0; e < rows_total * ldy; e++) y[e] = SENTINEL;
    return y;
}

static void y_check_untouched(const float *y, int64_t rows_total, int64_t ldy, int64_t off, int64_t m, int64_t n)
{
    for (int64_t i = 0; i < rows_total; i++)
        for (int64_t j = 0; j < ldy; j++)
            if ((i < off || i >= off + m || j >= n) && y[i * ldy + j] != SENTINEL)
                TEST_FAIL_AT("y[%lld,%lld] outside the output was written", (long long)i, (long long)j);
}

/* Relative Frobenius error of got against an unquantised f64 product: the
 * quantisation loss, reported (and loosely bounded) separately. */
static void quant_loss(const char *what, const float *got, int64_t ldg, const float *x, const double *wv, int64_t m,
                       int64_t n, int64_t k, double alpha, double limit)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t c = 0; c < k; c++) s += (double)x[i * k + c] * wv[j * k + c];
            s *= alpha;
            num += (got[i * ldg + j] - s) * (got[i * ldg + j] - s);
            den += s * s;
        }
    double rel = sqrt(num / den);
    printf("  %-28s quantisation loss vs unquantised f64: %.3g (relative Frobenius; sanity limit %.3g)\n", what, rel,
           limit);
    if (!(rel <= limit)) TEST_FAIL_AT("%s: quantisation loss %.3g above %.3g", what, rel, limit);
}

typedef struct shape {
    int32_t m, n, k;
} shape;

/* m = 1, 15, 16, 17; n and k not multiples of 128 where the format allows. */
static const shape g_shapes[] = {{1, 40, 96}, {15, 130, 200}, {16, 128, 256}, {17, 257, 300}, {16, 64, 1000}};
/* Q8_0 needs k % 32 == 0; 544 leaves a partial 512-group of q8_1 records. */
static const shape g_shapes_q8[] = {{1, 40, 96}, {15, 130, 224}, {16, 128, 256}, {17, 257, 544}, {16, 64, 1024}};
#define NSHAPES ((int)(sizeof g_shapes / sizeof g_shapes[0]))

static memra_gemm_args gemm_args(shape s, const void *w, const void *x, float *y, int64_t off, int64_t ldy, float alpha)
{
    return (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = s.m, .n = s.n, .k = s.k, .w = DP(w),
                             .x = DP(x), .y = DP(y), .ldy = ldy, .y_row_offset = off, .alpha = alpha};
}

/* ---- cases ---------------------------------------------------------------------- */

static void case_desc(void)
{
    const memra_module_desc *d = memra__host_module_entry();
    CHECK_INT_EQ(d->abi_version, MEMRA_MODULE_ABI_VERSION);
    CHECK_INT_EQ(d->struct_size, sizeof(memra_module_desc));
    CHECK_STR_EQ(d->name, "host");
    CHECK_STR_EQ(d->version, MEMRA_VERSION_STRING);
    memra_device_caps caps = {.struct_size = sizeof caps, .arch = MEMRA_ARCH_HOST, .sm_count = 0};
    CHECK_INT_EQ(d->score(&caps), 1);
    caps.arch = MEMRA_ARCH_SM90;
    CHECK_INT_EQ(d->score(&caps), 0);
    CHECK_INT_EQ(d->score(NULL), 0);
    void *ctx = NULL;
    CHECK_STATUS(d->init(&g_host, &caps, &ctx), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "not the host device");
    CHECK(ctx == NULL);
    caps.arch = MEMRA_ARCH_HOST; /* sm_count 0 still gives one thread */
    CHECK_OK(d->init(&g_host, &caps, &ctx));
    CHECK(ctx != NULL);
    d->fini(ctx);
    const memra_op_table *t = d->ops;
    CHECK_INT_EQ(t->struct_size, sizeof(memra_op_table));
#define CHECK_OP_SET(name) CHECK(t->name != NULL);
    MEMRA_OP_LIST(CHECK_OP_SET)
#undef CHECK_OP_SET
}

static void case_cvt_f16(void)
{
    fixture f;
    fixture_open(&f, 2);
    const int64_t n = 10007;
    float *x = rand_f32(n, 100.0f);
    x[0] = 65520.0f, x[1] = -0.0f, x[2] = 0x1p-25f, x[3] = 3 * 0x1p-25f, x[4] = INFINITY, x[5] = 1e-8f;
    uint16_t *h = xmalloc((size_t)n * 2);
    CHECK_OK(f.ops->cvt_f16(&f.call, DP(x), DP(h), n));
    for (int64_t i = 0; i < n; i++) CHECK_INT_EQ(h[i], memra_f16_from_f32(x[i]));
    CHECK_INT_EQ(h[0], 0x7C00);
    CHECK_INT_EQ(h[1], 0x8000);
    CHECK_INT_EQ(h[2], 0x0000);
    CHECK_INT_EQ(h[3], 0x0002);
    CHECK_OK(f.ops->cvt_f16(&f.call, 0, 0, 0));
    printf("  cvt_f16 %lld values: bit-exact\n", (long long)n);
    free(x);
    free(h);
    fixture_close(&f);
}

/* gemm_f16. Products of two f16 values are exact in double, so the host and
 * the reference differ only in summation order: each is within k u sum|p| of
 * the exact sum (Higham's gamma_k). got is that double times alpha rounded to
 * f32, so |got - ref| <= r |ref| + (2k + 2) u |alpha| sum|p| (x 1.01 slack). */
static void run_gemm_f16(fixture *f, shape s, int x_is_f16)
{
    const int64_t m = s.m, n = s.n, k = s.k, off = 3, ldy = n + 5;
    const float alpha = 0.75f;
    float *x = rand_f32(m * k, 2.0f);
    float *wf = rand_f32(n * k, 0.5f);
    uint16_t *w = xmalloc((size_t)(n * k) * 2), *xh = xmalloc((size_t)(m * k) * 2);
    double *wv = xmalloc((size_t)(n * k) * sizeof(double));
    for (int64_t e = 0; e < n * k; e++) {
        w[e] = memra_f16_from_f32(wf[e]);
        wv[e] = memra_f32_from_f16(w[e]);
    }
    for (int64_t e = 0; e < m * k; e++) xh[e] = memra_f16_from_f32(x[e]);
    float *y = y_alloc(off + m + 2, ldy);
    memra_gemm_args a = gemm_args(s, w, x_is_f16 ? (const void *)xh : (const void *)x, y, off, ldy, alpha);
    a.x_is_f16 = x_is_f16;
    CHECK_OK(f->ops->gemm_f16(&f->call, &a));
    double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0, sabs = 0;
            for (int64_t c = 0; c < k; c++) {
                double p = (double)memra_f32_from_f16(xh[i * k + c]) * wv[j * k + c];
                sum += p;
                sabs += fabs(p);
            }
            ref[i * n + j] = (double)alpha * sum;
            band[i * n + j] = R24 * fabs(ref[i * n + j]) + 1.01 * (2.0 * (double)k + 2.0) * U53 * fabs(alpha) * sabs;
        }
    char what[96];
    snprintf(what, sizeof what, "gemm_f16%s m=%d n=%d k=%d", x_is_f16 ? "(x16)" : "", s.m, s.n, s.k);
    compare(what, y + off * ldy, ref, band, m, n, ldy);
    y_check_untouched(y, off + m + 2, ldy, off, m, n);
    quant_loss(what, y + off * ldy, ldy, x, wv, m, n, k, alpha, 2e-3); /* f16 x: ~2^-11 relative per value */
    free(x), free(wf), free(w), free(xh), free(wv), free(y), free(ref), free(band);
}

static void case_gemm_f16(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int i = 0; i < NSHAPES; i++) {
        run_gemm_f16(&f, g_shapes[i], 0);
        run_gemm_f16(&f, g_shapes[i], 1);
    }
    fixture_close(&f);
}

/* gemm_bf16: gemm_f16's argument (products exact in double, only the order of
 * the double sum differs), same band. The activation's bf16 rounding is done
 * here bit by bit from its definition (the upper 16 bits, rounded to nearest
 * even on the dropped 16), independent of memra_bf16_from_f32. One weight row
 * holds values near 2^-120 (bf16 keeps f32's exponents; as f16 they would be
 * zero): its outputs must be non-zero and in band. */
static uint16_t bf16_rne_ref(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t hi = u >> 16, lo = u & 0xFFFFu;
    if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) hi++;
    return (uint16_t)hi;
}

static double bf16_val(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return (double)f;
}

static void case_gemm_bf16(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes[si];
        const int64_t m = s.m, n = s.n, k = s.k, off = 2, ldy = n + 3;
        const float alpha = 0.75f;
        float *x = rand_f32(m * k, 2.0f);
        float *wf = rand_f32(n * k, 0.5f);
        uint16_t *w = xmalloc((size_t)(n * k) * 2);
        for (int64_t e = 0; e < n * k; e++) w[e] = bf16_rne_ref(e < k ? wf[e] * 0x1p-120f : wf[e]);
        float *y = y_alloc(off + m + 2, ldy);
        memra_gemm_args a = gemm_args(s, w, x, y, off, ldy, alpha);
        CHECK_OK(f.ops->gemm_bf16(&f.call, &a));
        double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
        double *wv = xmalloc((size_t)(n * k) * sizeof(double));
        for (int64_t e = 0; e < n * k; e++) wv[e] = bf16_val(w[e]);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0, sabs = 0;
                for (int64_t c = 0; c < k; c++) {
                    double p = bf16_val(bf16_rne_ref(x[i * k + c])) * wv[j * k + c];
                    sum += p;
                    sabs += fabs(p);
                }
                ref[i * n + j] = (double)alpha * sum;
                /* + 2^-150: row 0's outputs can cancel into f32's subnormals, where the result's rounding
                 * is absolute, half the subnormal step 2^-149, not R24 of its value (seed 1451311777:
                 * -2.78e-41 off by 7.0e-46 against a relative band of 2.9e-48) */
                band[i * n + j] = R24 * fabs(ref[i * n + j]) + 1.01 * (2.0 * (double)k + 2.0) * U53 * fabs(alpha) * sabs +
                                  0x1p-150;
            }
        if (s.k > 0 && s.m > 0) /* row 0 of W is tiny: its outputs must not be zero */
            for (int64_t i = 0; i < m; i++) CHECK(y[(off + i) * ldy] != 0.0f || ref[i * n] == 0.0);
        char what[96];
        snprintf(what, sizeof what, "gemm_bf16 m=%d n=%d k=%d", s.m, s.n, s.k);
        compare(what, y + off * ldy, ref, band, m, n, ldy);
        y_check_untouched(y, off + m + 2, ldy, off, m, n);
        free(x), free(wf), free(w), free(y), free(ref), free(band), free(wv);
    }
    fixture_close(&f);
}

/* gemm_fp8. The reference quantises x with the same rule (sx = amax/448 in
 * f32, q = encode(x / sx)). Every dec(q) dec(w) is a multiple of 2^-18 below
 * 2^18, so both sums are exact (k < 2^17); the reference's three scale
 * products round differently from the host's by at most 4u relative. So
 * got = fl32(ref (1 + 4u)): |got - ref| <= (r + 5u) |ref|. A wrong or dropped
 * scale fails by many orders of magnitude. */
static void case_gemm_fp8(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes[si];
        const int64_t m = s.m, n = s.n, k = s.k, off = 1, ldy = n + 1;
        const float alpha = 1.25f, w_scale = 0.0123f;
        float *x = rand_f32(m * k, 3.0f);
        uint8_t *w = rand_e4m3(n * k);
        float *y = y_alloc(off + m + 1, ldy);
        memra_gemm_args a = gemm_args(s, w, x, y, off, ldy, alpha);
        a.w_scale = w_scale;
        CHECK_OK(f.ops->gemm_fp8(&f.call, &a));
        float amax = 0;
        for (int64_t e = 0; e < m * k; e++) amax = fmaxf(amax, fabsf(x[e]));
        const float sx = amax == 0 ? 1.0f : amax / 448.0f;
        double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
        double *wv = xmalloc((size_t)(n * k) * sizeof(double));
        for (int64_t e = 0; e < n * k; e++) wv[e] = (double)memra_e4m3_decode(w[e]) * w_scale;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sum = 0;
                for (int64_t c = 0; c < k; c++)
                    sum += (double)memra_e4m3_decode(memra_e4m3_encode(x[i * k + c] / sx)) *
                           (double)memra_e4m3_decode(w[j * k + c]);
                ref[i * n + j] = sum * (double)sx * (double)w_scale * (double)alpha;
                band[i * n + j] = (R24 + 5 * U53) * fabs(ref[i * n + j]);
            }
        char what[96];
        snprintf(what, sizeof what, "gemm_fp8 m=%d n=%d k=%d", s.m, s.n, s.k);
        compare(what, y + off * ldy, ref, band, m, n, ldy);
        y_check_untouched(y, off + m + 1, ldy, off, m, n);
        quant_loss(what, y + off * ldy, ldy, x, wv, m, n, k, alpha, 0.1); /* e4m3: 3 mantissa bits */
        free(x), free(w), free(y), free(ref), free(band), free(wv);
    }
    fixture_close(&f);
}

/* gemm_fp8_blk. Same quantisation per row and 128-column block. Each block
 * sum B is exact; T = sum_b (s g) B has, in host and reference alike, one
 * rounding for s g, one for (s g) B and nb - 1 additions: each within
 * (nb + 2) u sum_b |s g B|. |got - ref| <= r |ref| + 2 (nb + 3) u |alpha| sum_b |s g B|. */
static void case_gemm_fp8_blk(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes[si];
        const int64_t m = s.m, n = s.n, k = s.k, off = 0, ldy = n;
        const int64_t gr = memra_fp8_grid_rows(n), gc = memra_fp8_grid_cols(k);
        const float alpha = 0.5f;
        float *x = rand_f32(m * k, 4.0f);
        /* give each activation block its own magnitude so per-block scales matter */
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < k; c++) x[i * k + c] *= ldexpf(1.0f, (int)((i + c / 128) % 7) - 3);
        uint8_t *w = rand_e4m3(n * k);
        float *grid = xmalloc((size_t)(gr * gc) * sizeof(float));
        for (int64_t e = 0; e < gr * gc; e++) grid[e] = (1.5f + test_rand_f32(&g_rng)) * 1e-3f;
        float *y = y_alloc(m, ldy);
        memra_gemm_args a = gemm_args(s, w, x, y, off, ldy, alpha);
        a.w_scale_grid = DP(grid);
        CHECK_OK(f.ops->gemm_fp8_blk(&f.call, &a));
        double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
        double *wv = xmalloc((size_t)(n * k) * sizeof(double));
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < k; c++)
                wv[j * k + c] = (double)memra_e4m3_decode(w[j * k + c]) * grid[(j / 128) * gc + c / 128];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double t = 0, tabs = 0;
                for (int64_t b = 0; b < gc; b++) {
                    const int64_t c0 = b * 128, c1 = c0 + 128 < k ? c0 + 128 : k;
                    float amax = 0;
                    for (int64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(x[i * k + c]));
                    const float sb = amax == 0 ? 1.0f : amax / 448.0f;
                    double bs = 0;
                    for (int64_t c = c0; c < c1; c++)
                        bs += (double)memra_e4m3_decode(memra_e4m3_encode(x[i * k + c] / sb)) *
                              (double)memra_e4m3_decode(w[j * k + c]);
                    const double term = bs * (double)grid[(j / 128) * gc + b] * (double)sb;
                    t += term;
                    tabs += fabs(term);
                }
                ref[i * n + j] = (double)alpha * t;
                band[i * n + j] = R24 * fabs(ref[i * n + j]) + 2.0 * ((double)gc + 3.0) * U53 * fabs(alpha) * tabs;
            }
        char what[96];
        snprintf(what, sizeof what, "gemm_fp8_blk m=%d n=%d k=%d", s.m, s.n, s.k);
        compare(what, y, ref, band, m, n, ldy);
        quant_loss(what, y, ldy, x, wv, m, n, k, alpha, 0.1);
        free(x), free(w), free(grid), free(y), free(ref), free(band), free(wv);
    }
    fixture_close(&f);
}

/* ---- given activation scales (DESIGN.md, "Activation scales") ------------------ */

/* Elements of got outside ref's band (no failure): shows that a wrong scale is
 * caught by the same comparison. */
static int64_t count_outside(const float *got, int64_t ldg, const double *ref, const double *band, int64_t m, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            if (!(fabs(got[i * ldg + j] - ref[i * n + j]) <= band[i * n + j])) bad++;
    return bad;
}

/* The per-tensor reference at a given sx (the contract: q = e4m3(x / sx)); the
 * band as case_gemm_fp8's. Returns how many of the m x k values saturate. */
static int64_t ref_fp8_at(const float *x, const uint8_t *w, int64_t m, int64_t n, int64_t k, float sx, float w_scale,
                          float alpha, double *ref, double *band)
{
    int64_t sat = 0;
    for (int64_t e = 0; e < m * k; e++) sat += fabsf(x[e] / sx) > 448.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t c = 0; c < k; c++)
                sum += (double)memra_e4m3_decode(memra_e4m3_encode(x[i * k + c] / sx)) *
                       (double)memra_e4m3_decode(w[j * k + c]);
            ref[i * n + j] = sum * (double)sx * (double)w_scale * (double)alpha;
            band[i * n + j] = (R24 + 5 * U53) * fabs(ref[i * n + j]);
        }
    return sat;
}

/* gemm_fp8 with a static scale (x_scale) and with a producer amax (x_amax):
 * one pass at the given scale, values above 448 sx saturating; the amax wins
 * over x_scale; a wrong scale is outside the band; bad x_scale refused. */
static void case_gemm_fp8_given(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes[si];
        const int64_t m = s.m, n = s.n, k = s.k, ldy = n;
        const float alpha = 0.75f, w_scale = 0.031f;
        float *x = rand_f32(m * k, 2.5f);
        uint8_t *w = rand_e4m3(n * k);
        float *y = y_alloc(m, ldy);
        double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
        float amax = 0;
        for (int64_t e = 0; e < m * k; e++) amax = fmaxf(amax, fabsf(x[e]));
        /* a static scale at 60% of the batch's own: the top values saturate */
        const float xs = amax / 448.0f * 0.6f;
        memra_gemm_args a = gemm_args(s, w, x, y, 0, ldy, alpha);
        a.w_scale = w_scale;
        a.x_scale = xs;
        CHECK_OK(f.ops->gemm_fp8(&f.call, &a));
        int64_t sat = ref_fp8_at(x, w, m, n, k, xs, w_scale, alpha, ref, band);
        char what[96];
        snprintf(what, sizeof what, "gemm_fp8 x_scale m=%d n=%d k=%d", s.m, s.n, s.k);
        if (sat == 0) TEST_FAIL_AT("%s: no value saturates at 60%% of the amax", what);
        compare(what, y, ref, band, m, n, ldy);
        printf("  %-28s %lld of %lld values saturated\n", what, (long long)sat, (long long)(m * k));
        /* the batch's own scale is not what ran */
        ref_fp8_at(x, w, m, n, k, amax / 448.0f, w_scale, alpha, ref, band);
        if (count_outside(y, ldy, ref, band, m, n) == 0) TEST_FAIL_AT("%s: matches the own-amax result", what);
        /* a producer amax (70% of the true one) wins over x_scale */
        float given = amax * 0.7f;
        a.x_amax = DP(&given);
        CHECK_OK(f.ops->gemm_fp8(&f.call, &a));
        sat = ref_fp8_at(x, w, m, n, k, given / 448.0f, w_scale, alpha, ref, band);
        snprintf(what, sizeof what, "gemm_fp8 x_amax m=%d n=%d k=%d", s.m, s.n, s.k);
        if (sat == 0) TEST_FAIL_AT("%s: no value saturates at 70%% of the amax", what);
        compare(what, y, ref, band, m, n, ldy);
        ref_fp8_at(x, w, m, n, k, xs, w_scale, alpha, ref, band);
        if (count_outside(y, ldy, ref, band, m, n) == 0) TEST_FAIL_AT("%s: x_scale won over x_amax", what);
        /* the producer's exact amax gives the lane's own result bit for bit */
        float *y2 = y_alloc(m, ldy);
        memra_gemm_args own = gemm_args(s, w, x, y2, 0, ldy, alpha);
        own.w_scale = w_scale;
        CHECK_OK(f.ops->gemm_fp8(&f.call, &own));
        given = amax;
        CHECK_OK(f.ops->gemm_fp8(&f.call, &a));
        if (memcmp(y, y2, (size_t)(m * ldy) * sizeof(float)) != 0)
            TEST_FAIL_AT("%s: the exact amax differs from the own pass", what);
        /* amax 0 and NaN read as scale 1 */
        given = 0.0f;
        CHECK_OK(f.ops->gemm_fp8(&f.call, &a));
        ref_fp8_at(x, w, m, n, k, 1.0f, w_scale, alpha, ref, band);
        compare("gemm_fp8 x_amax = 0", y, ref, band, m, n, ldy);
        given = NAN;
        CHECK_OK(f.ops->gemm_fp8(&f.call, &a));
        compare("gemm_fp8 x_amax = NaN", y, ref, band, m, n, ldy);
        free(x), free(w), free(y), free(y2), free(ref), free(band);
    }
    /* a bad static scale */
    float x1[96], y1[40];
    uint8_t w1[40 * 96];
    memset(x1, 0, sizeof x1), memset(w1, 0x38, sizeof w1);
    memra_gemm_args a = gemm_args(g_shapes[0], w1, x1, y1, 0, 40, 1.0f);
    a.w_scale = 1.0f;
    const float bad[] = {-1.0f, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        a.x_scale = bad[i];
        CHECK_STATUS(f.ops->gemm_fp8(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(f.ops->gemm_fp8_blk(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    }
    fixture_close(&f);
}

/* The block reference at given scales sc[i * gc + b]; case_gemm_fp8_blk's band. */
static int64_t ref_blk_at(const float *x, const uint8_t *w, const float *grid, int64_t m, int64_t n, int64_t k,
                          const float *sc, float alpha, double *ref, double *band)
{
    const int64_t gc = memra_fp8_grid_cols(k);
    int64_t sat = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < k; c++) sat += fabsf(x[i * k + c] / sc[i * gc + c / 128]) > 448.0f;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double t = 0, tabs = 0;
            for (int64_t b = 0; b < gc; b++) {
                const int64_t c0 = b * 128, c1 = c0 + 128 < k ? c0 + 128 : k;
                const float sb = sc[i * gc + b];
                double bs = 0;
                for (int64_t c = c0; c < c1; c++)
                    bs += (double)memra_e4m3_decode(memra_e4m3_encode(x[i * k + c] / sb)) *
                          (double)memra_e4m3_decode(w[j * k + c]);
                const double term = bs * (double)grid[(j / 128) * gc + b] * (double)sb;
                t += term;
                tabs += fabs(term);
            }
            ref[i * n + j] = (double)alpha * t;
            band[i * n + j] = R24 * fabs(ref[i * n + j]) + 2.0 * ((double)gc + 3.0) * U53 * fabs(alpha) * tabs;
        }
    return sat;
}

/* gemm_fp8_blk with a static per-tensor scale (every block's) and with
 * producer maxima [ceil(k/128) x m] (row fastest): as case_gemm_fp8_given. */
static void case_gemm_fp8_blk_given(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes[si];
        const int64_t m = s.m, n = s.n, k = s.k, ldy = n;
        const int64_t gr = memra_fp8_grid_rows(n), gc = memra_fp8_grid_cols(k);
        const float alpha = 1.5f;
        float *x = rand_f32(m * k, 3.0f);
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < k; c++) x[i * k + c] *= ldexpf(1.0f, (int)((i + c / 128) % 5) - 2);
        uint8_t *w = rand_e4m3(n * k);
        float *grid = xmalloc((size_t)(gr * gc) * sizeof(float));
        for (int64_t e = 0; e < gr * gc; e++) grid[e] = (1.5f + test_rand_f32(&g_rng)) * 1e-3f;
        float *y = y_alloc(m, ldy);
        double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
        float *sc = xmalloc((size_t)(m * gc) * sizeof(float)), *am = xmalloc((size_t)(m * gc) * sizeof(float));
        float amax = 0;
        for (int64_t e = 0; e < m * k; e++) amax = fmaxf(amax, fabsf(x[e]));
        /* one static scale for every block: the batch's amax / 448 at 50%: the
         * largest blocks saturate, the small ones keep few bits */
        const float xs = amax / 448.0f * 0.5f;
        memra_gemm_args a = gemm_args(s, w, x, y, 0, ldy, alpha);
        a.w_scale_grid = DP(grid);
        a.x_scale = xs;
        CHECK_OK(f.ops->gemm_fp8_blk(&f.call, &a));
        for (int64_t e = 0; e < m * gc; e++) sc[e] = xs;
        int64_t sat = ref_blk_at(x, w, grid, m, n, k, sc, alpha, ref, band);
        char what[96];
        snprintf(what, sizeof what, "gemm_fp8_blk x_scale m=%d n=%d k=%d", s.m, s.n, s.k);
        if (sat == 0) TEST_FAIL_AT("%s: no value saturates", what);
        compare(what, y, ref, band, m, n, ldy);
        printf("  %-28s %lld of %lld values saturated\n", what, (long long)sat, (long long)(m * k));
        for (int64_t e = 0; e < m * gc; e++) sc[e] = xs * 1.03f;
        ref_blk_at(x, w, grid, m, n, k, sc, alpha, ref, band);
        if (count_outside(y, ldy, ref, band, m, n) == 0) TEST_FAIL_AT("%s: a 3%% wrong scale matches", what);
        /* producer maxima, each at 40% .. 100% of its block's own, at amax[b * m + i] */
        for (int64_t i = 0; i < m; i++)
            for (int64_t b = 0; b < gc; b++) {
                float bm = 0;
                for (int64_t c = b * 128; c < k && c < b * 128 + 128; c++) bm = fmaxf(bm, fabsf(x[i * k + c]));
                am[b * m + i] = bm * (0.7f + 0.3f * test_rand_f32(&g_rng));
                sc[i * gc + b] = am[b * m + i] > 0 ? am[b * m + i] / 448.0f : 1.0f;
            }
        a.x_amax = DP(am); /* wins over x_scale */
        CHECK_OK(f.ops->gemm_fp8_blk(&f.call, &a));
        sat = ref_blk_at(x, w, grid, m, n, k, sc, alpha, ref, band);
        snprintf(what, sizeof what, "gemm_fp8_blk x_amax m=%d n=%d k=%d", s.m, s.n, s.k);
        if (sat == 0) TEST_FAIL_AT("%s: no value saturates", what);
        compare(what, y, ref, band, m, n, ldy);
        /* the transposed layout ([m x ceil(k/128)]) is wrong */
        if (m > 1 && gc > 1) {
            for (int64_t i = 0; i < m; i++)
                for (int64_t b = 0; b < gc; b++) sc[i * gc + b] = am[i * gc + b] > 0 ? am[i * gc + b] / 448.0f : 1.0f;
            ref_blk_at(x, w, grid, m, n, k, sc, alpha, ref, band);
            if (count_outside(y, ldy, ref, band, m, n) == 0) TEST_FAIL_AT("%s: the row-major layout matches", what);
        }
        free(x), free(w), free(grid), free(y), free(ref), free(band), free(sc), free(am);
    }
    fixture_close(&f);
}

/* The q8_1 quantiser written from the contract: records (kb, t) at kb*m + t,
 * k zero-padded to 512, per 32: d = amax / 127, q = roundf(x / d) via 1/d;
 * then the sum plane, entry (kb, t) at kb*m + t: f32 t = S d per 32 (S the
 * codes' sum; +0 for S = 0). */
static uint8_t *ref_q8_1(const float *x, int64_t m, int64_t k)
{
    const uint64_t bytes = memra_q8_1_bytes(m, k);
    uint8_t *r = xmalloc((size_t)bytes);
    const int64_t nrec = ((k + 511) / 512) * 4;
    for (int64_t kb = 0; kb < nrec; kb++)
        for (int64_t t = 0; t < m; t++) {
            uint8_t *rec = r + (kb * m + t) * 144;
            for (int g = 0; g < 4; g++) {
                float v[32], amax = 0;
                for (int l = 0; l < 32; l++) {
                    int64_t c = kb * 128 + g * 32 + l;
                    v[l] = c < k ? x[t * k + c] : 0.0f;
                    amax = fmaxf(amax, fabsf(v[l]));
                }
                float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
                memcpy(rec + 4 * g, &d, 4);
                int sum = 0;
                for (int l = 0; l < 32; l++) {
                    rec[16 + 32 * g + l] = (uint8_t)(int8_t)roundf(v[l] * id);
                    sum += (int8_t)rec[16 + 32 * g + l];
                }
                const float ts = sum != 0 ? (float)sum * d : 0.0f;
                memcpy(r + memra_q8_1_plane(m, k) + (kb * m + t) * 16 + 4 * g, &ts, 4);
            }
        }
    return r;
}

static void case_quant_q8_1(void)
{
    fixture f;
    fixture_open(&f, 2);
    const int32_t ms[] = {1, 15, 16, 17}, ks[] = {32, 100, 128, 544, 1000, 2048};
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
            const int64_t m = ms[a], k = ks[b];
            float *x = rand_f32(m * k, 10.0f);
            const uint64_t bytes = memra_q8_1_bytes(m, k);
            uint8_t *got = xmalloc((size_t)bytes + 16);
            memset(got, 0xA5, (size_t)bytes + 16);
            CHECK_OK(f.ops->quant_q8_1(&f.call, DP(x), (int32_t)m, (int32_t)k, DP(got)));
            uint8_t *want = ref_q8_1(x, m, k);
            for (uint64_t e = 0; e < bytes; e++)
                if (got[e] != want[e])
                    TEST_FAIL_AT("quant_q8_1 m=%lld k=%lld: byte %llu (record %llu, offset %llu; the sum plane from record "
                                 "%llu on) = 0x%02x, want 0x%02x",
                                 (long long)m, (long long)k, (unsigned long long)e, (unsigned long long)(e / 144),
                                 (unsigned long long)(e % 144), (unsigned long long)(memra_q8_1_plane(m, k) / 144),
                                 got[e], want[e]);
            for (int e = 0; e < 16; e++) CHECK_INT_EQ(got[bytes + (uint64_t)e], 0xA5); /* nothing past the end */
            /* and the records mean what they say: |d q - x| <= d/2 (+ a few ulp of 127) */
            for (int64_t t = 0; t < m; t++)
                for (int64_t c = 0; c < k; c++) {
                    const uint8_t *rec = got + ((c / 128) * m + t) * 144;
                    float d;
                    memcpy(&d, rec + 4 * ((c % 128) / 32), 4);
                    double v = (double)d * (int8_t)rec[16 + c % 128];
                    CHECK(fabs(v - x[t * k + c]) <= 0.5 * d * (1 + 1e-4));
                }
            free(x), free(got), free(want);
        }
    printf("  quant_q8_1 m in {1,15,16,17} x k in {32,100,128,544,1000,2048}: bit-exact, padding zero\n");
    fixture_close(&f);
}

/* gemm_q8_0 on the host's own q8_1 records (bit-checked by quant_q8_1). Per
 * block the int32 sum I is exact; T = sum_b (dw dx) I: one rounding for dw dx,
 * one for the product with I, nb - 1 additions, in both implementations:
 * |got - ref| <= r |ref| + 2 (nb + 3) u |alpha| sum_b |dw dx I|. */
static void case_gemm_q8_0(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes_q8[si];
        const int64_t m = s.m, n = s.n, k = s.k, nb = k / 32, off = 2, ldy = n + 7;
        const float alpha = -1.5f;
        float *x = rand_f32(m * k, 5.0f);
        float *wf = rand_f32(n * k, 0.1f);
        for (int64_t e = 0; e < n * k; e++) wf[e] *= ldexpf(1.0f, (int)((e / 32) % 5) - 2); /* per-block magnitudes */
        uint8_t *w = xmalloc((size_t)(n * nb * 34));
        for (int64_t b = 0; b < n * nb; b++) memra_q8_0_encode(wf + 32 * b, w + 34 * b);
        uint8_t *xq = xmalloc((size_t)memra_q8_1_bytes(m, k));
        CHECK_OK(f.ops->quant_q8_1(&f.call, DP(x), (int32_t)m, (int32_t)k, DP(xq)));
        float *y = y_alloc(off + m, ldy);
        memra_gemm_args a = gemm_args(s, w, xq, y, off, ldy, alpha);
        CHECK_OK(f.ops->gemm_q8_0(&f.call, &a));
        double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double t = 0, tabs = 0;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *wb = w + (j * nb + b) * 34;
                    const uint8_t *rec = xq + ((b / 4) * m + i) * 144;
                    float dx;
                    memcpy(&dx, rec + 4 * (b % 4), 4);
                    long isum = 0;
                    for (int l = 0; l < 32; l++) isum += (long)(int8_t)wb[2 + l] * (int8_t)rec[16 + 32 * (b % 4) + l];
                    double term = (double)memra_f32_from_f16((uint16_t)(wb[0] | (wb[1] << 8))) * (double)dx * (double)isum;
                    t += term;
                    tabs += fabs(term);
                }
                ref[i * n + j] = (double)alpha * t;
                band[i * n + j] = R24 * fabs(ref[i * n + j]) + 2.0 * ((double)nb + 3.0) * U53 * fabs(alpha) * tabs;
            }
        char what[96];
        snprintf(what, sizeof what, "gemm_q8_0 m=%d n=%d k=%d", s.m, s.n, s.k);
        compare(what, y + off * ldy, ref, band, m, n, ldy);
        y_check_untouched(y, off + m, ldy, off, m, n);
        double *wv = xmalloc((size_t)(n * k) * sizeof(double));
        for (int64_t e = 0; e < n * k; e++) wv[e] = wf[e];
        quant_loss(what, y + off * ldy, ldy, x, wv, m, n, k, alpha, 0.03); /* int8 both sides: ~1% */
        free(x), free(wf), free(w), free(xq), free(y), free(ref), free(band), free(wv);
    }
    fixture_close(&f);
}

/* Random bytes of a block format with finite f16 scales of either sign. */
static uint8_t *rand_blocks(memra_format fmt, int64_t rows, int64_t cols)
{
    const uint64_t rb = memra_format_row_bytes(fmt, cols), bytes = rb * (uint64_t)rows;
    uint8_t *p = xmalloc((size_t)bytes);
    for (uint64_t e = 0; e < bytes; e++) p[e] = (uint8_t)test_rand_u64(&g_rng);
    const int bb = memra_format_block_bytes(fmt);
    for (uint64_t o = 0; o < bytes; o += (uint64_t)bb) {
        uint16_t h1 = (uint16_t)(0x2000 + test_rand_u64(&g_rng) % 0x2000) | (uint16_t)(test_rand_u64(&g_rng) & 0x8000);
        uint16_t h2 = (uint16_t)(0x2000 + test_rand_u64(&g_rng) % 0x2000);
        switch (fmt) {
        case MEMRA_FORMAT_Q8_0:
        case MEMRA_FORMAT_Q4_0: memcpy(p + o, &h1, 2); break;
        case MEMRA_FORMAT_Q4_K:
        case MEMRA_FORMAT_Q5_K: memcpy(p + o, &h1, 2), memcpy(p + o + 2, &h2, 2); break;
        case MEMRA_FORMAT_Q6_K: memcpy(p + o + 208, &h1, 2); break;
        case MEMRA_FORMAT_F16: memcpy(p + o, &h1, 2); break;
        case MEMRA_FORMAT_BF16: memcpy(p + o, &h1, 2); break;
        case MEMRA_FORMAT_E4M3: if (memra_e4m3_is_nan(p[o])) p[o] = 0x33; break;
        case MEMRA_FORMAT_F32: {
            float v = test_rand_f32(&g_rng);
            memcpy(p + o, &v, 4);
            break;
        }
        }
    }
    return p;
}

static void case_dequant_f16(void)
{
    fixture f;
    fixture_open(&f, 3);
    const memra_format fmts[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                 MEMRA_FORMAT_Q6_K, MEMRA_FORMAT_E4M3, MEMRA_FORMAT_F16, MEMRA_FORMAT_F32};
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        const memra_format fmt = fmts[fi];
        const int64_t bv = memra_format_block_values(fmt), rows = 37, cols = bv >= 256 ? 3 * bv : 5 * 32;
        uint8_t *src = rand_blocks(fmt, rows, cols);
        uint16_t *got = xmalloc((size_t)(rows * cols) * 2);
        float *tmp = xmalloc((size_t)cols * sizeof(float));
        CHECK_OK(f.ops->dequant_f16(&f.call, fmt, DP(src), rows, cols, DP(got)));
        const uint64_t rb = memra_format_row_bytes(fmt, cols);
        for (int64_t r = 0; r < rows; r++) {
            memra_decode_row(fmt, src + (uint64_t)r * rb, cols, tmp);
            for (int64_t c = 0; c < cols; c++)
                if (got[r * cols + c] != memra_f16_from_f32(tmp[c]))
                    TEST_FAIL_AT("dequant_f16 %s [%lld,%lld] = 0x%04x, want 0x%04x", memra_format_name(fmt),
                                 (long long)r, (long long)c, got[r * cols + c], memra_f16_from_f32(tmp[c]));
        }
        printf("  dequant_f16 %-5s %lld x %lld: bit-exact\n", memra_format_name(fmt), (long long)rows, (long long)cols);
        free(src), free(got), free(tmp);
    }
    fixture_close(&f);
}

/* Q8_0 re-encode written from the contract (amax, d = amax/127, id = 1/d, roundf). */
static void ref_q8_0(const float *v, uint8_t *out)
{
    float amax = 0;
    for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(v[l]));
    float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    uint16_t h = memra_f16_from_f32(d);
    out[0] = (uint8_t)h, out[1] = (uint8_t)(h >> 8);
    for (int l = 0; l < 32; l++) out[2 + l] = (uint8_t)(int8_t)roundf(v[l] * id);
}

static void case_fp8_blk_to_q8_0(void)
{
    fixture f;
    fixture_open(&f, 3);
    const int64_t shapes[][2] = {{1, 32}, {130, 160}, {257, 416}, {128, 256}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t rows = shapes[si][0], cols = shapes[si][1], nb = cols / 32;
        const int64_t gr = memra_fp8_grid_rows(rows), gc = memra_fp8_grid_cols(cols);
        uint8_t *w = rand_e4m3(rows * cols);
        float *grid = xmalloc((size_t)(gr * gc) * sizeof(float));
        for (int64_t e = 0; e < gr * gc; e++) grid[e] = ldexpf(1.0f + 0.5f * test_rand_f32(&g_rng), (int)(e % 9) - 12);
        uint8_t *got = xmalloc((size_t)(rows * nb * 34));
        CHECK_OK(f.ops->fp8_blk_to_q8_0(&f.call, DP(w), DP(grid), rows, cols, DP(got)));
        for (int64_t r = 0; r < rows; r++)
            for (int64_t b = 0; b < nb; b++) {
                float v[32];
                uint8_t want[34];
                for (int l = 0; l < 32; l++)
                    v[l] = memra_e4m3_decode(w[r * cols + 32 * b + l]) * grid[(r / 128) * gc + (32 * b) / 128];
                ref_q8_0(v, want);
                if (memcmp(want, got + (r * nb + b) * 34, 34) != 0)
                    TEST_FAIL_AT("fp8_blk_to_q8_0 %lldx%lld: block (%lld, %lld) differs", (long long)rows,
                                 (long long)cols, (long long)r, (long long)b);
            }
        printf("  fp8_blk_to_q8_0 %lld x %lld: bit-exact\n", (long long)rows, (long long)cols);
        free(w), free(grid), free(got);
    }
    /* NaN codes: ignored by the block's amax, encoded as 0 */
    uint8_t w[32], out[34];
    float one = 1.0f;
    for (int l = 0; l < 32; l++) w[l] = 0x38; /* 1.0 */
    w[5] = 0x7F, w[6] = 0xFF, w[7] = 0x40; /* NaN, -NaN, 2.0 */
    CHECK_OK(f.ops->fp8_blk_to_q8_0(&f.call, DP(w), DP(&one), 1, 32, DP(out)));
    CHECK_INT_EQ(out[0] | (out[1] << 8), memra_f16_from_f32(2.0f / 127.0f));
    CHECK_INT_EQ((int8_t)out[2 + 5], 0);
    CHECK_INT_EQ((int8_t)out[2 + 6], 0);
    CHECK_INT_EQ((int8_t)out[2 + 7], 127);
    CHECK_INT_EQ((int8_t)out[2 + 0], 64); /* roundf(63.5) */
    /* cols not a multiple of 32: declined with a reason */
    f.call.decline_reason = NULL;
    CHECK_STATUS(f.ops->fp8_blk_to_q8_0(&f.call, DP(w), DP(&one), 1, 48, DP(out)), MEMRA_STATUS_DECLINED);
    CHECK_STR_CONTAINS(f.call.decline_reason, "multiple of 32");
    fixture_close(&f);
}

static void case_fp8_nan_count(void)
{
    fixture f;
    fixture_open(&f, 2);
    const int64_t n = 100003;
    uint8_t *w = xmalloc((size_t)n);
    uint64_t want = 5;
    for (int64_t i = 0; i < n; i++) {
        w[i] = (uint8_t)test_rand_u64(&g_rng);
        want += (w[i] == 0x7F || w[i] == 0xFF);
    }
    uint64_t out = 5; /* the op adds */
    CHECK_OK(f.ops->fp8_nan_count(&f.call, DP(w), n, DP(&out)));
    CHECK_INT_EQ(out, want);
    CHECK_OK(f.ops->fp8_nan_count(&f.call, DP(w), 0, DP(&out)));
    CHECK_INT_EQ(out, want);
    printf("  fp8_nan_count: %llu NaN codes in %lld bytes (plus 5 already there)\n", (unsigned long long)(want - 5),
           (long long)n);
    free(w);
    fixture_close(&f);
}

static void case_scale(void)
{
    fixture f;
    fixture_open(&f, 2);
    const int64_t n = 4099;
    float *y = rand_f32(n, 7.0f), *y0 = xmalloc((size_t)n * sizeof(float));
    memcpy(y0, y, (size_t)n * sizeof(float));
    CHECK_OK(f.ops->scale(&f.call, DP(y), n, -0.3f));
    for (int64_t i = 0; i < n; i++) CHECK(y[i] == y0[i] * -0.3f); /* one f32 product: exact match */
    printf("  scale %lld values: bit-exact\n", (long long)n);
    free(y), free(y0);
    fixture_close(&f);
}

/* accprobe is an instrument (time only), but the host's numbers are still
 * checked: S32 exactly; F32 sums exact e4m3 products in f32 in k order, so
 * |got - ref| <= k r sum|p| (gamma_k for f32). */
static void case_accprobe(void)
{
    fixture f;
    fixture_open(&f, 2);
    const shape s = {17, 70, 256};
    const int64_t m = s.m, n = s.n, k = s.k;
    uint8_t *w = rand_e4m3(n * k), *x = rand_e4m3(m * k);
    float *y = y_alloc(m, n);
    memra_gemm_args a = gemm_args(s, w, x, y, 0, n, 1.0f);
    CHECK_OK(f.ops->accprobe(&f.call, MEMRA_ACCPROBE_S32, &a));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            long t = 0;
            for (int64_t c = 0; c < k; c++) t += (long)(int8_t)x[i * k + c] * (int8_t)w[j * k + c];
            CHECK(y[i * n + j] == (float)t);
        }
    CHECK_OK(f.ops->accprobe(&f.call, MEMRA_ACCPROBE_F32, &a));
    double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double t = 0, tabs = 0;
            for (int64_t c = 0; c < k; c++) {
                double p = (double)memra_e4m3_decode(x[i * k + c]) * memra_e4m3_decode(w[j * k + c]);
                t += p;
                tabs += fabs(p);
            }
            ref[i * n + j] = t;
            band[i * n + j] = 1.01 * (double)k * R24 * tabs;
        }
    compare("accprobe f32 m=17 n=70 k=256", y, ref, band, m, n, n);
    f.call.decline_reason = NULL;
    CHECK_STATUS(f.ops->accprobe(&f.call, MEMRA_ACCPROBE_MX, &a), MEMRA_STATUS_DECLINED);
    CHECK_STR_CONTAINS(f.call.decline_reason, "sm_120a");
    a.k = 100;
    f.call.decline_reason = NULL;
    CHECK_STATUS(f.ops->accprobe(&f.call, MEMRA_ACCPROBE_S32, &a), MEMRA_STATUS_DECLINED);
    CHECK(f.call.decline_reason != NULL);
    free(w), free(x), free(y), free(ref), free(band);
    fixture_close(&f);
}

/* repack_q8_0, known answers: hand-built Q8_0 rows of 160 columns (5 blocks:
 * one full record and one with a single block and three padding blocks).
 * The scales are f16 codes whose f32 widening is written here by hand:
 * subnormals, both zeros, the extremes, a negative and an inexact-looking
 * one; each compared by bit pattern so -0 and +0 differ. */
static void case_repack_q8_0(void)
{
    fixture f;
    fixture_open(&f, 2);
    static const struct {
        uint16_t h;
        uint32_t f32_bits;
    } codes[] = {
        {0x0001, 0x33800000u}, /* smallest subnormal, 2^-24 */
        {0x03FF, 0x387FC000u}, /* largest subnormal, 1023 * 2^-24 */
        {0x8000, 0x80000000u}, /* -0 */
        {0x8001, 0xB3800000u}, /* -2^-24 */
        {0x0200, 0x38000000u}, /* subnormal 2^-15 */
        {0x3C00, 0x3F800000u}, /* 1 */
        {0xC000, 0xC0000000u}, /* -2 */
        {0x7BFF, 0x477FE000u}, /* 65504, max finite */
        {0x0400, 0x38800000u}, /* 2^-14, min normal */
        {0x3555, 0x3EAAA000u}, /* 0x555 * 2^-12 */
        {0x0000, 0x00000000u}, /* +0 */
        {0xFBFF, 0xC77FE000u}, /* -65504 */
        {0x2E66, 0x3DCCC000u}, /* 0x1.998p-4 */
        {0x83FF, 0xB87FC000u}, /* -(largest subnormal) */
        {0x1400, 0x3A800000u}, /* 2^-10 */
    };
    const int64_t rows = 3, cols = 160, nb = 5, ngroups = 2;
    uint8_t src[3 * 5 * 34];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *blk = src + (r * nb + b) * 34;
            const uint16_t h = codes[r * nb + b].h;
            blk[0] = (uint8_t)h, blk[1] = (uint8_t)(h >> 8);
            for (int l = 0; l < 32; l++) blk[2 + l] = (uint8_t)(int8_t)(r * 37 + b * 11 + l * 5 - 100);
        }
    const uint64_t bytes = memra_q8_0r_bytes(rows, cols);
    CHECK_INT_EQ(bytes, (uint64_t)(ngroups * rows * 144));
    uint8_t *dst = xmalloc((size_t)bytes + 16);
    memset(dst, 0xA5, (size_t)bytes + 16);
    CHECK_OK(f.ops->repack_q8_0(&f.call, DP(src), rows, cols, DP(dst)));
    for (int64_t g = 0; g < ngroups; g++)
        for (int64_t j = 0; j < rows; j++) {
            const uint8_t *rec = dst + (g * rows + j) * 144; /* record (g, j) at g * rows + j */
            for (int q = 0; q < 4; q++) {
                const int64_t b = 4 * g + q;
                uint32_t bits;
                memcpy(&bits, rec + 4 * q, 4);
                const uint32_t want = b < nb ? codes[j * nb + b].f32_bits : 0u; /* padding: +0 */
                if (bits != want)
                    TEST_FAIL_AT("repack_q8_0 record (%lld, %lld) d[%d] = 0x%08x, want 0x%08x (f16 0x%04x)",
                                 (long long)g, (long long)j, q, bits, want, b < nb ? codes[j * nb + b].h : 0);
                for (int l = 0; l < 32; l++) {
                    const int8_t got = (int8_t)rec[16 + 32 * q + l];
                    const int8_t wq = b < nb ? (int8_t)(j * 37 + b * 11 + l * 5 - 100) : 0;
                    if (got != wq)
                        TEST_FAIL_AT("repack_q8_0 record (%lld, %lld) qs[%d] = %d, want %d", (long long)g,
                                     (long long)j, 32 * q + l, got, wq);
                }
            }
        }
    for (int e = 0; e < 16; e++) CHECK_INT_EQ(dst[bytes + (uint64_t)e], 0xA5); /* nothing past the end */
    printf("  repack_q8_0 3 x 160 known answers: scales (subnormal, -0, extremes) widened exactly, qs copied, "
           "padding zero\n");
    free(dst);

    /* Fresh random weights at several shapes and thread counts: every record
     * against the blocks it came from. */
    const int64_t shapes[][2] = {{1, 32}, {37, 160}, {130, 256}, {257, 544}, {64, 1000 / 32 * 32}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int64_t rr = shapes[si][0], cc = shapes[si][1], nbk = cc / 32, ng = (cc + 127) / 128;
        uint8_t *w = rand_blocks(MEMRA_FORMAT_Q8_0, rr, cc);
        const uint64_t rb = memra_q8_0r_bytes(rr, cc);
        uint8_t *out = xmalloc((size_t)rb);
        memset(out, 0xA5, (size_t)rb);
        CHECK_OK(f.ops->repack_q8_0(&f.call, DP(w), rr, cc, DP(out)));
        for (int64_t j = 0; j < rr; j++)
            for (int64_t b = 0; b < ng * 4; b++) {
                const uint8_t *rec = out + ((b / 4) * rr + j) * 144;
                float d, want_d = 0.0f;
                memcpy(&d, rec + 4 * (b % 4), 4);
                uint8_t want_q[32] = {0};
                if (b < nbk) {
                    const uint8_t *blk = w + (j * nbk + b) * 34;
                    want_d = memra_f32_from_f16((uint16_t)(blk[0] | (blk[1] << 8)));
                    memcpy(want_q, blk + 2, 32);
                }
                if (memcmp(&d, &want_d, 4) != 0 || memcmp(rec + 16 + 32 * (b % 4), want_q, 32) != 0)
                    TEST_FAIL_AT("repack_q8_0 %lldx%lld: row %lld block %lld differs", (long long)rr, (long long)cc,
                                 (long long)j, (long long)b);
            }
        printf("  repack_q8_0 %lld x %lld: every record matches its blocks\n", (long long)rr, (long long)cc);
        free(w), free(out);
    }
    fixture_close(&f);
}

/* gemm_q8_0r on the records of a weight gives exactly gemm_q8_0's output on
 * its blocks (one contract, one code path), bit for bit, on fresh random data
 * with some subnormal and negative scales; y is also checked to be written
 * (not left at the sentinel) and nothing outside it touched. */
static void case_gemm_q8_0r(void)
{
    fixture f;
    fixture_open(&f, 3);
    for (int si = 0; si < NSHAPES; si++) {
        const shape s = g_shapes_q8[si];
        const int64_t m = s.m, n = s.n, k = s.k, off = 1, ldy = n + 3, total = off + m + 2;
        uint8_t *w = rand_blocks(MEMRA_FORMAT_Q8_0, n, k);
        for (int64_t b = 0; b < n * (k / 32); b += 7) { /* a few subnormal scales */
            const uint16_t h = (uint16_t)(0x0001 + test_rand_u64(&g_rng) % 0x3FF) | (uint16_t)((b / 7) % 2 ? 0x8000 : 0);
            w[b * 34] = (uint8_t)h, w[b * 34 + 1] = (uint8_t)(h >> 8);
        }
        float *x = rand_f32(m * k, 3.0f);
        uint8_t *xq = xmalloc((size_t)memra_q8_1_bytes(m, k));
        CHECK_OK(f.ops->quant_q8_1(&f.call, DP(x), (int32_t)m, (int32_t)k, DP(xq)));
        uint8_t *rec = xmalloc((size_t)memra_q8_0r_bytes(n, k));
        CHECK_OK(f.ops->repack_q8_0(&f.call, DP(w), n, k, DP(rec)));
        float *y0 = y_alloc(total, ldy), *y1 = y_alloc(total, ldy);
        memra_gemm_args a = gemm_args(s, w, xq, y0, off, ldy, 0.625f);
        CHECK_OK(f.ops->gemm_q8_0(&f.call, &a));
        a.w = DP(rec), a.y = DP(y1);
        CHECK_OK(f.ops->gemm_q8_0r(&f.call, &a));
        int64_t written = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) written += y1[(off + i) * ldy + j] != SENTINEL;
        if (written < m * n / 2) TEST_FAIL_AT("gemm_q8_0r wrote only %lld of %lld outputs", (long long)written,
                                               (long long)(m * n));
        y_check_untouched(y1, total, ldy, off, m, n);
        for (int64_t e = 0; e < total * ldy; e++)
            if (memcmp(&y0[e], &y1[e], sizeof(float)) != 0)
                TEST_FAIL_AT("gemm_q8_0r m=%d n=%d k=%d: y[%lld,%lld] = %.9g, gemm_q8_0 gave %.9g", s.m, s.n, s.k,
                             (long long)(e / ldy), (long long)(e % ldy), (double)y1[e], (double)y0[e]);
        printf("  gemm_q8_0r m=%d n=%d k=%d: bit-identical to gemm_q8_0\n", s.m, s.n, s.k);
        free(w), free(x), free(xq), free(rec), free(y0), free(y1);
    }
    fixture_close(&f);
}

/* gemm_kr: the host reference on K-packed records (memra_kr_repack) against an f64
 * product written here from GGML's decoded weight (memra_decode_row) and the
 * decoded activation dx * xq. The decoder rounds each value once in f32
 * (Q4_K/Q5_K: d sc q - dmin m; Q6_K: (d sc) q), so the two differ by at most
 * u per value of its term (|s q| + |mn|, Q6_K |s q|), times |dx xq|, plus the
 * final f32 rounding and the double sums: JUDGE_BAND_HOST of the mass
 * sum |dx xq| (|s q| + |mn|). Random blocks (negative and tiny d included),
 * k = 256 and 768 (off 512), n off every tile, alpha != 1; y written only in
 * its rows and columns. Then the refusals: another w_format, k not a multiple
 * of 256, a struct without w_format. */
static void case_gemm_kr(void)
{
    fixture f;
    fixture_open(&f, 3);
    static const memra_format fm[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    static const shape sh[] = {{1, 40, 256}, {17, 130, 768}, {5, 3, 512}};
    for (size_t fi = 0; fi < 3; fi++)
        for (size_t si = 0; si < 3; si++) {
            const shape s = sh[si];
            const int64_t m = s.m, n = s.n, k = s.k, off = 1, ldy = n + 3, total = off + m + 2;
            const memra_format fmt = fm[fi];
            uint8_t *w = rand_blocks(fmt, n, k);
            uint8_t *rec = xmalloc((size_t)memra_kr_bytes(fmt, n, k));
            CHECK_INT_EQ(memra_kr_repack(fmt, w, n, k, rec), 0);
            uint8_t *wide = xmalloc((size_t)memra_kr_wide_bytes(n, k)); /* for the mass */
            CHECK_INT_EQ(memra_kr_widen(fmt, rec, n, k, wide), 0);
            float *x = rand_f32(m * k, 3.0f);
            uint8_t *xq = xmalloc((size_t)memra_q8_1_bytes(m, k));
            CHECK_OK(f.ops->quant_q8_1(&f.call, DP(x), (int32_t)m, (int32_t)k, DP(xq)));
            float *y = y_alloc(total, ldy), *wdec = xmalloc((size_t)k * sizeof(float));
            memra_gemm_args a = gemm_args(s, rec, xq, y, off, ldy, 0.625f);
            a.w_format = (int32_t)fmt;
            CHECK_OK(f.ops->gemm_kr(&f.call, &a));
            y_check_untouched(y, total, ldy, off, m, n);
            double *ref = xmalloc((size_t)(m * n) * sizeof(double)), *band = xmalloc((size_t)(m * n) * sizeof(double));
            for (int64_t j = 0; j < n; j++) {
                memra_decode_row(fmt, w + (size_t)j * memra_format_row_bytes(fmt, k), k, wdec);
                for (int64_t i = 0; i < m; i++) {
                    double t = 0.0, mass = 0.0;
                    for (int64_t c = 0; c < k; c++) {
                        const uint8_t *xr = xq + (size_t)((c / 128) * m + i) * MEMRA_Q8_1_RECORD_BYTES;
                        const uint8_t *wr = wide + (size_t)((c / 128) * n + j) * MEMRA_KR_WIDE_BYTES;
                        const int g = (int)((c % 128) / 32);
                        float dx, s0, s1;
                        memcpy(&dx, xr + 4 * g, 4);
                        memcpy(&s0, wr + 4 * g, 4);
                        memcpy(&s1, wr + 16 + 4 * g, 4);
                        const double xv = (double)dx * (double)(int8_t)xr[16 + c % 128];
                        const double qv = (double)(int8_t)wr[32 + c % 128];
                        t += (double)wdec[c] * xv;
                        mass += fabs(xv) * (fmt == MEMRA_FORMAT_Q6_K ? fabs((c % 32 < 16 ? s0 : s1) * qv)
                                                                     : fabs(s0 * qv) + fabs((double)s1));
                    }
                    /* the decoder's one rounding per value (<= 2^-24 of its mass term), the final f32
                     * rounding of y, and both double sums */
                    ref[i * n + j] = 0.625 * t;
                    band[i * n + j] = R24 * fabs(ref[i * n + j]) + 0.625 * mass * (R24 + 2.0 * ((double)k + 3.0) * U53);
                }
            }
            char what[64];
            snprintf(what, sizeof what, "gemm_kr %s m=%d n=%d k=%d", memra_format_name(fmt), s.m, s.n, s.k);
            compare(what, y + off * ldy, ref, band, m, n, ldy);
            free(ref), free(band);
            if (si == 0) {
                a.w_format = MEMRA_FORMAT_Q8_0;
                CHECK_STATUS(f.ops->gemm_kr(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
                CHECK_STR_CONTAINS(memra_last_error(), "gemm_kr: w_format");
                a.w_format = (int32_t)fmt, a.k = 128;
                CHECK_STATUS(f.ops->gemm_kr(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
                CHECK_STR_CONTAINS(memra_last_error(), "gemm_kr: k = 128 is not a multiple");
                a.k = s.k, a.struct_size = (uint32_t)offsetof(memra_gemm_args, w_format);
                CHECK_STATUS(f.ops->gemm_kr(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
                CHECK_STR_CONTAINS(memra_last_error(), "no w_format");
            }
            free(w), free(rec), free(wide), free(x), free(xq), free(y), free(wdec);
        }
    fixture_close(&f);
}

/* Every bad argument is refused with a message naming the op; nothing crashes
 * on zero sizes or shapes whose index arithmetic would overflow. */
static void case_invalid(void)
{
    fixture f;
    fixture_open(&f, 2);
    float x[64], y[64], grid[1] = {1.0f};
    uint8_t w[64 * 34];
    for (int i = 0; i < 64; i++) x[i] = 1.0f, y[i] = SENTINEL;
    memset(w, 0x38, sizeof w);
    const shape s = {2, 2, 32};
    typedef memra_status (*gemm_fn)(memra_call *, const memra_gemm_args *);
    const struct {
        const char *name;
        gemm_fn fn;
    } gemms[] = {{"gemm_f16", f.ops->gemm_f16},
                 {"gemm_fp8", f.ops->gemm_fp8},
                 {"gemm_fp8_blk", f.ops->gemm_fp8_blk},
                 {"gemm_q8_0", f.ops->gemm_q8_0},
                 {"gemm_q8_0r", f.ops->gemm_q8_0r}};
    for (size_t g = 0; g < sizeof gemms / sizeof gemms[0]; g++) {
        memra_gemm_args ok = gemm_args(s, w, x, y, 0, 2, 1.0f), a;
        ok.w_scale_grid = DP(grid);
        ok.w_scale = 1.0f;
        CHECK_STATUS(gemms[g].fn(NULL, &ok), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(gemms[g].fn(&f.call, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(memra_last_error(), gemms[g].name);
        a = ok, a.struct_size = 8;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(memra_last_error(), "struct_size");
        a = ok, a.m = -1;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(memra_last_error(), gemms[g].name);
        a = ok, a.k = -32;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        a = ok, a.ldy = 1;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(memra_last_error(), "ldy");
        a = ok, a.y_row_offset = -1;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        a = ok, a.y_row_offset = INT64_MAX - 1;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(memra_last_error(), "overflows");
        a = ok, a.ldy = INT64_MAX / 6; /* 2 rows of that many floats are more bytes than int64 holds */
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STR_CONTAINS(memra_last_error(), "overflows");
        a = ok, a.y = 0;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        a = ok, a.x = 0;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        a = ok, a.w = 0;
        CHECK_STATUS(gemms[g].fn(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
        /* zero sizes: OK, nothing written (y and x may be NULL) */
        a = ok, a.m = 0, a.y = 0, a.x = 0;
        CHECK_OK(gemms[g].fn(&f.call, &a));
        a = ok, a.n = 0, a.ldy = 0, a.w = 0;
        CHECK_OK(gemms[g].fn(&f.call, &a));
        for (int i = 0; i < 64; i++) CHECK(y[i] == SENTINEL);
    }
    memra_gemm_args a = gemm_args(s, w, x, y, 0, 2, 1.0f);
    a.k = 48;
    CHECK_STATUS(f.ops->gemm_q8_0(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "multiple");
    CHECK_STATUS(f.ops->gemm_q8_0r(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "gemm_q8_0r: k = 48 is not a multiple");
    a.k = 32, a.w_scale_grid = 0;
    CHECK_STATUS(f.ops->gemm_fp8_blk(&f.call, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "w_scale_grid");
    CHECK_STATUS(f.ops->accprobe(&f.call, (memra_accprobe_arm)7, &a), MEMRA_STATUS_INVALID_ARGUMENT);

    uint16_t h[64];
    uint64_t cnt = 0;
    CHECK_STATUS(f.ops->cvt_f16(&f.call, DP(x), DP(h), -1), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->cvt_f16(&f.call, 0, DP(h), 4), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "cvt_f16");
    CHECK_STATUS(f.ops->quant_q8_1(&f.call, DP(x), -1, 32, DP(w)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->quant_q8_1(&f.call, DP(x), 1, 32, 0), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_OK(f.ops->quant_q8_1(&f.call, 0, 0, 32, 0));
    CHECK_STATUS(f.ops->dequant_f16(&f.call, MEMRA_FORMAT_Q4_K, DP(w), 1, 100, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "q4_k");
    CHECK_STATUS(f.ops->dequant_f16(&f.call, (memra_format)42, DP(w), 1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->dequant_f16(&f.call, MEMRA_FORMAT_Q8_0, DP(w), -1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->dequant_f16(&f.call, MEMRA_FORMAT_Q8_0, DP(w), INT64_MAX / 128, 64, DP(h)),
                 MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->dequant_f16(&f.call, MEMRA_FORMAT_Q8_0, 0, 1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_OK(f.ops->dequant_f16(&f.call, MEMRA_FORMAT_Q8_0, 0, 0, 32, 0));
    CHECK_STATUS(f.ops->fp8_blk_to_q8_0(&f.call, DP(w), DP(grid), -1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->fp8_blk_to_q8_0(&f.call, DP(w), 0, 1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->fp8_blk_to_q8_0(&f.call, DP(w), DP(grid), INT64_MAX / 128, 64, DP(h)),
                 MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->fp8_nan_count(&f.call, DP(w), -3, DP(&cnt)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->fp8_nan_count(&f.call, DP(w), 3, 0), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->repack_q8_0(&f.call, DP(w), -1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "repack_q8_0");
    CHECK_STATUS(f.ops->repack_q8_0(&f.call, DP(w), 1, 48, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "multiple");
    CHECK_STATUS(f.ops->repack_q8_0(&f.call, 0, 1, 32, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->repack_q8_0(&f.call, DP(w), 1, 32, 0), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->repack_q8_0(&f.call, DP(w), INT64_MAX / 128, 128, DP(h)), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "overflows");
    CHECK_OK(f.ops->repack_q8_0(&f.call, 0, 0, 32, 0));
    CHECK_OK(f.ops->repack_q8_0(&f.call, 0, 4, 0, 0));
    CHECK_STATUS(f.ops->scale(&f.call, DP(y), -1, 2.0f), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(f.ops->scale(&f.call, 0, 4, 2.0f), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_OK(f.ops->scale(&f.call, 0, 0, 2.0f));
    memra_call nocontext = {.struct_size = sizeof(memra_call)};
    CHECK_STATUS(f.ops->scale(&nocontext, DP(y), 4, 2.0f), MEMRA_STATUS_INVALID_ARGUMENT);
    printf("  invalid arguments refused with messages; zero sizes accepted\n");
    fixture_close(&f);
}

/* Results do not depend on the thread count: bitwise identical at 1 and 3 threads. */
static void case_threads(void)
{
    fixture f1, f3;
    fixture_open(&f1, 1);
    fixture_open(&f3, 3);
    const shape s = {17, 1031, 512};
    const int64_t m = s.m, n = s.n, k = s.k;
    float *x = rand_f32(m * k, 1.0f);
    float *y1 = y_alloc(m, n), *y3 = y_alloc(m, n);
    uint16_t *wh = xmalloc((size_t)(n * k) * 2);
    uint8_t *w8 = rand_e4m3(n * k), *wq = xmalloc((size_t)(n * k / 32 * 34));
    float *grid = xmalloc((size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k)) * sizeof(float));
    for (int64_t e = 0; e < memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k); e++) grid[e] = 0.01f + (float)e * 1e-4f;
    float *wf = rand_f32(n * k, 1.0f);
    for (int64_t e = 0; e < n * k; e++) wh[e] = memra_f16_from_f32(wf[e]);
    for (int64_t b = 0; b < n * k / 32; b++) memra_q8_0_encode(wf + 32 * b, wq + 34 * b);
    uint8_t *xq = xmalloc((size_t)memra_q8_1_bytes(m, k));
    CHECK_OK(f1.ops->quant_q8_1(&f1.call, DP(x), (int32_t)m, (int32_t)k, DP(xq)));
    const char *names[] = {"gemm_f16", "gemm_fp8", "gemm_fp8_blk", "gemm_q8_0"};
    for (int op = 0; op < 4; op++) {
        const void *w = op == 0 ? (const void *)wh : op == 3 ? (const void *)wq : (const void *)w8;
        memra_gemm_args a = gemm_args(s, w, op == 3 ? (const void *)xq : (const void *)x, y1, 0, n, 0.9f);
        a.w_scale = 0.5f, a.w_scale_grid = DP(grid);
        memra_gemm_args b = a;
        b.y = DP(y3);
        const memra_op_table *t1 = f1.ops, *t3 = f3.ops;
        memra_status (*fn1)(memra_call *, const memra_gemm_args *) =
            op == 0 ? t1->gemm_f16 : op == 1 ? t1->gemm_fp8 : op == 2 ? t1->gemm_fp8_blk : t1->gemm_q8_0;
        memra_status (*fn3)(memra_call *, const memra_gemm_args *) =
            op == 0 ? t3->gemm_f16 : op == 1 ? t3->gemm_fp8 : op == 2 ? t3->gemm_fp8_blk : t3->gemm_q8_0;
        CHECK_OK(fn1(&f1.call, &a));
        CHECK_OK(fn3(&f3.call, &b));
        if (memcmp(y1, y3, (size_t)(m * n) * sizeof(float)) != 0) TEST_FAIL_AT("%s: 1 and 3 threads differ", names[op]);
        printf("  %s: 1 and 3 threads bitwise identical\n", names[op]);
    }
    free(x), free(y1), free(y3), free(wh), free(w8), free(wq), free(grid), free(wf), free(xq);
    fixture_close(&f1);
    fixture_close(&f3);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The 1p7b sheet at m = 16 on 2 threads: prints times (no assertion; machines vary). */
static void case_perf(void)
{
    fixture f;
    fixture_open(&f, 2);
    const int32_t sheet[][2] = {{2048, 2048}, {2048, 1024}, {2048, 6144}, {6144, 2048}};
    for (size_t si = 0; si < 4; si++) {
        const shape s = {16, sheet[si][1], sheet[si][0]};
        const int64_t m = s.m, n = s.n, k = s.k;
        float *x = rand_f32(m * k, 1.0f), *y = xmalloc((size_t)(m * n) * sizeof(float));
        uint8_t *w = xmalloc((size_t)(n * k * 2));
        for (int64_t e = 0; e < n * k * 2; e++) w[e] = (uint8_t)(test_rand_u64(&g_rng) & 0x3B); /* finite codes */
        float *grid = xmalloc((size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k)) * sizeof(float));
        for (int64_t e = 0; e < memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k); e++) grid[e] = 1.0f;
        uint8_t *xq = xmalloc((size_t)memra_q8_1_bytes(m, k));
        double t0 = now_s();
        CHECK_OK(f.ops->quant_q8_1(&f.call, DP(x), s.m, s.k, DP(xq)));
        double tq = now_s() - t0;
        memra_gemm_args a = gemm_args(s, w, x, y, 0, n, 1.0f);
        a.w_scale = 1.0f, a.w_scale_grid = DP(grid);
        double t[4];
        memra_status (*const fns[4])(memra_call *, const memra_gemm_args *) = {
            f.ops->gemm_f16, f.ops->gemm_fp8, f.ops->gemm_fp8_blk, f.ops->gemm_q8_0};
        for (int op = 0; op < 4; op++) {
            if (op == 3) a.x = DP(xq);
            t0 = now_s();
            CHECK_OK(fns[op](&f.call, &a));
            t[op] = now_s() - t0;
        }
        const double gf = 2.0 * (double)m * (double)n * (double)k * 1e-9;
        printf("  %5d->%-5d m=16: f16 %.3fs (%.2f GF/s)  fp8 %.3fs  fp8_blk %.3fs  q8_0 %.3fs (+quant %.4fs)\n", s.k,
               s.n, t[0], gf / t[0], t[1], t[2], t[3], tq);
        free(x), free(y), free(w), free(grid), free(xq);
    }
    fixture_close(&f);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"desc", case_desc},
                 {"cvt_f16", case_cvt_f16},
                 {"gemm_f16", case_gemm_f16},
                 {"gemm_bf16", case_gemm_bf16},
                 {"gemm_fp8", case_gemm_fp8},
                 {"gemm_fp8_blk", case_gemm_fp8_blk},
                 {"gemm_fp8_given", case_gemm_fp8_given},
                 {"gemm_fp8_blk_given", case_gemm_fp8_blk_given},
                 {"quant_q8_1", case_quant_q8_1},
                 {"gemm_q8_0", case_gemm_q8_0},
                 {"dequant_f16", case_dequant_f16},
                 {"fp8_blk_to_q8_0", case_fp8_blk_to_q8_0},
                 {"fp8_nan_count", case_fp8_nan_count},
                 {"scale", case_scale},
                 {"accprobe", case_accprobe},
                 {"repack_q8_0", case_repack_q8_0},
                 {"gemm_q8_0r", case_gemm_q8_0r},
                 {"gemm_kr", case_gemm_kr},
                 {"invalid", case_invalid},
                 {"threads", case_threads},
                 {"perf", case_perf}};
    if (argc == 2) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (strcmp(argv[1], cases[i].name) == 0) {
                g_rng = test_seed();
                cases[i].fn();
                printf("PASS %s\n", cases[i].name);
                return 0;
            }
        }
    }
    fprintf(stderr, "usage: %s <case>; cases:", argv[0]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
}
