/* memra check's rows for gemm_w16: the fused-dequant f16 tile on the W16 operand of Q8_0, Q4_0, Q4_K, Q5_K
 * and Q6_K weights. Each case: fresh random blocks (tool_fill_blocks_w: every byte random but the f16 scales),
 * the operand the core makes at prepare (memra_w16_repack), an activation x (+-[0.25, 4), x[0][0] = 4), then
 * the module under check on c->dev, judged against
 *  - the host module's gemm_w16 on the host device (GPU and test modules), in gemm_f16's band
 *    (JUDGE_BAND_F16: the same numbers, the f16 mirror's, the same f32 accumulation), or
 *  - for the host module itself, an independent f64 product of f16(GGML's decoded weight) with f16(x)
 *    (JUDGE_BAND_HOST).
 * The mass of an element is sum over k of |f16(w) f16(x)|. Shapes: n = 200 (off the 128-row tile), k = 768
 * (three K super-blocks, twelve 64-column steps), m = 1 and 17; on a GPU also m = 512 and 1100 (off the
 * 128- and 256-token tiles), n x k = 1000 x 2816 at every m, and 1024 x 5120 at m = 512 (the 27b down
 * projection: 128-token tiles and 5 split-k slices on 132 SMs); and at 200 x 768, m = 17 once more with the
 * activation given as f16 (x_is_f16: rounded here, moved by the tile's pass; row "x16"). m > 32 is judged on sampled rows (row 0
 * always). The injected fault (MEMRA_CHECK_INJECT_FAULT=1) adds 1/4 to the first scale of row 0 in the
 * module's operand (Q8_0 / Q4_0: the f16 d of group 0 in section S; K-quants: the f16 d of super-block 0
 * in section D) in the first case: it must FAIL. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "tools/check.h"
#include "tools/judge.h"

typedef struct w16_case {
    memra_format format;
    int64_t n, k;
    uint8_t *blocks; /* the weight in its own format */
    uint8_t *op;     /* its W16 operand */
    size_t op_bytes;
    uint16_t *mirror; /* memra_w16_decode_f16 of op: the f16 mirror, for the mass and the independent reference */
} w16_case;

static void w16_fault(const w16_case *wc, uint8_t *w)
{
    const int kq = wc->format == MEMRA_FORMAT_Q4_K || wc->format == MEMRA_FORMAT_Q5_K || wc->format == MEMRA_FORMAT_Q6_K;
    const uint64_t at = memra_w16_off(wc->format, wc->n, wc->k, kq ? 'D' : 'S');
    const uint16_t d = (uint16_t)(w[at] | (w[at + 1] << 8));
    const uint16_t e = memra_f16_from_f32(memra_f32_from_f16(d) + 0.25f);
    w[at] = (uint8_t)e, w[at + 1] = (uint8_t)(e >> 8);
}

/* One gemm_w16 call on dev by module `mod`: w, x uploaded, y (sentinel-filled, (off + m + 1) x ldy) read back. */
static memra_status run_w16(memra_device *dev, const char *mod, const w16_case *wc, const uint8_t *w, const float *x,
                            int64_t m, int64_t off, int64_t ldy, float *y, const char **why, int xh)
{
    memra_buffer *bx = NULL, *bw = NULL, *by = NULL;
    const size_t ycount = (size_t)((off + m + 1) * ldy), nx = (size_t)(m * wc->k);
    for (size_t e = 0; e < ycount; e++) y[e] = CHECK_Y_SENTINEL;
    uint16_t *x16 = xh ? tool_alloc(nx, sizeof(uint16_t)) : NULL; /* x_is_f16: the activation rounded here */
    if (xh && x16 == NULL) return MEMRA_STATUS_OUT_OF_MEMORY;
    for (size_t e = 0; xh && e < nx; e++) x16[e] = memra_f16_from_f32(x[e]);
    memra_status st = xh ? tool_upload(dev, x16, nx * 2, &bx) : tool_upload(dev, x, nx * sizeof(float), &bx);
    free(x16);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, w, wc->op_bytes, &bw);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, y, ycount * sizeof(float), &by);
    if (st == MEMRA_STATUS_OK) {
        memra_op_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = (int32_t)m, .n = (int32_t)wc->n,
                                   .k = (int32_t)wc->k, .w = memra_buffer_ptr(bw), .x = memra_buffer_ptr(bx),
                                   .y = memra_buffer_ptr(by), .ldy = ldy, .y_row_offset = off, .alpha = 1.0f,
                                   .w_format = (int32_t)wc->format, .x_is_f16 = xh};
        st = memra_module_call(dev, mod, MEMRA_OP_gemm_w16, &a);
        if (st == MEMRA_STATUS_DECLINED) *why = a.decline_reason ? a.decline_reason : "(no reason)";
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(by, 0, y, ycount * sizeof(float));
    }
    memra_buffer_destroy(bx);
    memra_buffer_destroy(bw);
    memra_buffer_destroy(by);
    return st;
}

/* The mass and the independent f64 reference of the nrow rows xsub [nrow x k]. */
static void w16_mass_ref(const w16_case *wc, const float *xsub, int64_t nrow, double *mass, double *ref)
{
    const int64_t n = wc->n, k = wc->k;
    for (int64_t i = 0; i < nrow; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0, a = 0.0;
            for (int64_t c = 0; c < k; c++) {
                const double t = (double)memra_f32_from_f16(wc->mirror[j * k + c]) *
                                 (double)memra_f32_from_f16(memra_f16_from_f32(xsub[i * k + c]));
                s += t;
                a += fabs(t);
            }
            mass[i * n + j] = a;
            if (ref != NULL) ref[i * n + j] = s;
        }
}

static void w16_one(checker *c, const w16_case *wc, const float *x, int64_t m, int xh)
{
    row r = check_new_row(c, MEMRA_OP_gemm_w16);
    snprintf(r.shape, sizeof r.shape, "%s %lld %lld %lld%s", memra_format_name(wc->format), (long long)m,
             (long long)wc->n, (long long)wc->k, xh ? " x16" : "");
    const int64_t n = wc->n, k = wc->k, off = 1, ldy = n + 3;
    r.band = c->indep ? JUDGE_BAND_HOST : JUDGE_BAND_F16;
    r.injected = 0;
    if (c->inject && !c->injected_op[MEMRA_OP_gemm_w16]) c->injected_op[MEMRA_OP_gemm_w16] = r.injected = 1;
    const int64_t nrow = check_judged_count(c, m);
    int64_t *rows = tool_alloc((size_t)nrow, sizeof *rows);
    float *y = tool_alloc((size_t)((off + m + 1) * ldy), sizeof(float));
    float *ysub = tool_alloc((size_t)((off + nrow + 1) * ldy), sizeof(float));
    float *xsub = tool_alloc((size_t)(nrow * k), sizeof(float));
    double *ref = tool_alloc((size_t)(nrow * n), sizeof(double)), *mass = tool_alloc((size_t)(nrow * n), sizeof(double));
    uint8_t *wmod = r.injected ? tool_alloc(wc->op_bytes, 1) : wc->op;
    const char *why = NULL;
    if (rows == NULL || y == NULL || ysub == NULL || xsub == NULL || ref == NULL || mass == NULL || wmod == NULL) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    if (r.injected) {
        memcpy(wmod, wc->op, wc->op_bytes);
        w16_fault(wc, wmod);
    }
    const uint64_t h0 = memra_ledger_hits(c->dev, MEMRA_OP_gemm_w16, c->module);
    memra_status st = run_w16(c->dev, c->module, wc, wmod, x, m, off, ldy, y, &why, xh);
    r.hits = memra_ledger_hits(c->dev, MEMRA_OP_gemm_w16, c->module) - h0;
    if (st == MEMRA_STATUS_DECLINED) {
        r.result = "DECLINED";
        snprintf(r.note, sizeof r.note, "%s", why);
        goto done;
    }
    if (st != MEMRA_STATUS_OK) {
        snprintf(r.note, sizeof r.note, "module: %s: %.120s", memra_status_str(st), memra_last_error());
        goto done;
    }
    check_judged_rows(m, nrow, rows);
    for (int64_t s = 0; s < nrow; s++) memcpy(xsub + s * k, x + rows[s] * k, (size_t)k * sizeof(float));
    w16_mass_ref(wc, xsub, nrow, mass, c->indep ? ref : NULL);
    if (!c->indep) {
        const char *hwhy = NULL;
        st = run_w16(c->host, "host", wc, wc->op, xsub, nrow, off, ldy, ysub, &hwhy, xh);
        if (st != MEMRA_STATUS_OK) {
            snprintf(r.note, sizeof r.note, "host reference: %s: %.120s", memra_status_str(st), memra_last_error());
            goto done;
        }
        for (int64_t s = 0; s < nrow; s++)
            for (int64_t j = 0; j < n; j++) ref[s * n + j] = ysub[(off + s) * ldy + j];
    }
    const uint64_t bad = check_judge_rows(&r, y, off, ldy, rows, nrow, n, ref, mass);
    check_gemm_row_result(&r, bad, check_count_stray(y, off, m, ldy, n), nrow, m, NULL);
done:
    check_add_row(c, &r);
    free(rows), free(y), free(ysub), free(xsub), free(ref), free(mass);
    if (wmod != wc->op) free(wmod);
}

static void w16_shape(checker *c, memra_format f, int64_t n, int64_t k, const int64_t *ms, size_t nm)
{
    w16_case wc = {.format = f, .n = n, .k = k, .op_bytes = (size_t)memra_w16_bytes(f, n, k)};
    const size_t bb = (size_t)memra_format_row_bytes(f, k) * (size_t)n;
    wc.blocks = tool_alloc(bb, 1);
    wc.op = tool_alloc(wc.op_bytes, 1);
    wc.mirror = tool_alloc((size_t)(n * k), sizeof(uint16_t));
    int64_t mmax = 0;
    for (size_t i = 0; i < nm; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
    float *x = tool_alloc((size_t)(mmax * k), sizeof(float));
    if (wc.blocks != NULL && wc.op != NULL && wc.mirror != NULL && x != NULL) {
        tool_fill_blocks_w(&c->rng, f, wc.blocks, n, k);
        if (memra_w16_repack(f, wc.blocks, n, k, wc.op) == 0 && memra_w16_decode_f16(f, wc.op, n, k, wc.mirror) == 0) {
            tool_fill_x(&c->rng, x, (size_t)(mmax * k));
            x[0] = 4.0f;
            for (size_t i = 0; i < nm; i++) w16_one(c, &wc, x, ms[i], 0);
            if (n == 200) w16_one(c, &wc, x, 17, 1); /* an f16 activation (x_is_f16) */
        }
    }
    free(wc.blocks), free(wc.op), free(wc.mirror), free(x);
}

void check_w16_op(checker *c)
{
    static const memra_format fm[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                      MEMRA_FORMAT_Q6_K};
    static const int64_t m_host[] = {1, 17}, m_gpu[] = {1, 17, 512, 1100}, m_sheet[] = {512};
    const int g = c->gpu && !c->quick;
    for (size_t f = 0; f < sizeof fm / sizeof fm[0]; f++) {
        w16_shape(c, fm[f], 200, 768, g ? m_gpu : m_host, g ? 4 : 2);
        if (g) {
            w16_shape(c, fm[f], 1000, 2816, m_gpu, 4);
            w16_shape(c, fm[f], 1024, 5120, m_sheet, 1);
        }
    }
}

/* ---- gemm_experts on lane gemm_w16 ----------------------------------------------------------------
 *
 * CHECK_XE experts of fresh random blocks of format f, each on its W16 operand (as the core makes it), routed
 * by check_experts_route (expert 0 no rows, 1 one row, 2 most, the others two each, two rows with ids outside
 * [0, CHECK_XE) that must stay sentinels; shuffled), x f32 for all rows (or f16, xh: x_is_f16). Every routed
 * row is judged against its own expert's gemm_w16 over that expert's rows: the host module's on the host device
 * in gemm_f16's band, or for the host module itself the f64 product of the expert's mirror (JUDGE_BAND_HOST). */
static void w16_experts_case(checker *c, memra_format f, int64_t n, int64_t k, int64_t routed, int xh)
{
    row r = check_new_row(c, MEMRA_OP_gemm_experts);
    const int64_t m = routed + 2, off = 1, ldy = n + 2;
    snprintf(r.shape, sizeof r.shape, "w16 %s E%d %lldx%lldx%lld%s", memra_format_name(f), CHECK_XE, (long long)m,
             (long long)n, (long long)k, xh ? " x16" : "");
    r.band = c->indep ? JUDGE_BAND_HOST : JUDGE_BAND_F16;
    int64_t cnt[CHECK_XE], base[CHECK_XE + 1];
    cnt[2] = routed - 1 - 2 * (CHECK_XE - 3); /* (check_experts_route's) */
    w16_case wc[CHECK_XE];
    memset(wc, 0, sizeof wc);
    const size_t bb = (size_t)memra_format_row_bytes(f, k) * (size_t)n, ycount = (size_t)((off + m + 1) * ldy);
    int32_t *ids = tool_alloc((size_t)m, sizeof *ids);
    int64_t *where = tool_alloc((size_t)m, sizeof *where);
    float *x = tool_alloc((size_t)(m * k), sizeof(float)), *y = tool_alloc(ycount, sizeof(float));
    float *xsub = tool_alloc((size_t)(cnt[2] * k), sizeof(float));
    float *ysub = tool_alloc((size_t)((off + cnt[2] + 1) * ldy), sizeof(float));
    double *ref = tool_alloc((size_t)(cnt[2] * n), sizeof(double)), *mass = tool_alloc((size_t)(cnt[2] * n), sizeof(double));
    uint16_t *xb16 = xh ? tool_alloc((size_t)(m * k), sizeof(uint16_t)) : NULL;
    memra_buffer *bw[CHECK_XE] = {0}, *bt = NULL, *bi = NULL, *bx = NULL, *by = NULL;
    int ok = ids && where && x && y && xsub && ysub && ref && mass && (!xh || xb16);
    for (int e = 0; e < CHECK_XE && ok; e++) {
        wc[e] = (w16_case){.format = f, .n = n, .k = k, .op_bytes = (size_t)memra_w16_bytes(f, n, k)};
        wc[e].blocks = tool_alloc(bb, 1);
        wc[e].op = tool_alloc(wc[e].op_bytes, 1);
        wc[e].mirror = tool_alloc((size_t)(n * k), sizeof(uint16_t));
        ok = wc[e].blocks && wc[e].op && wc[e].mirror;
        if (ok) {
            tool_fill_blocks_w(&c->rng, f, wc[e].blocks, n, k);
            ok = memra_w16_repack(f, wc[e].blocks, n, k, wc[e].op) == 0 &&
                 memra_w16_decode_f16(f, wc[e].op, n, k, wc[e].mirror) == 0;
        }
    }
    if (!ok) {
        snprintf(r.note, sizeof r.note, "out of host memory, or the W16 repack of %s refused", memra_format_name(f));
        goto done;
    }
    check_experts_route(c, routed, cnt, ids, where, base);
    tool_fill_x(&c->rng, x, (size_t)(m * k));
    x[0] = 4.0f;
    /* f16 activations: x rounded once here, so that the f32 rows below (the reference's) hold the same values */
    for (int64_t i = 0; xh && i < m * k; i++) x[i] = memra_f32_from_f16(xb16[i] = memra_f16_from_f32(x[i]));
    memra_dptr wt[CHECK_XE];
    memra_status st = MEMRA_STATUS_OK;
    for (int e = 0; e < CHECK_XE && st == MEMRA_STATUS_OK; e++) {
        uint8_t *op = wc[e].op;
        if (e == 2 && c->inject && !c->injected_op[MEMRA_OP_gemm_experts]) { /* expert 2's scale off: must FAIL */
            c->injected_op[MEMRA_OP_gemm_experts] = r.injected = 1;
            op = tool_alloc(wc[e].op_bytes, 1);
            if (op != NULL) memcpy(op, wc[e].op, wc[e].op_bytes), w16_fault(&wc[e], op);
        }
        st = op ? tool_upload(c->dev, op, wc[e].op_bytes, &bw[e]) : MEMRA_STATUS_OUT_OF_MEMORY;
        if (op != wc[e].op) free(op);
        wt[e] = st == MEMRA_STATUS_OK ? memra_buffer_ptr(bw[e]) : 0;
    }
    if (st != MEMRA_STATUS_OK) {
        snprintf(r.note, sizeof r.note, "gemm_experts inputs: %s: %.120s", memra_status_str(st), memra_last_error());
        goto done;
    }
    if (check_experts_inputs(c, &r, wt, sizeof wt, ids, m, xh ? (const void *)xb16 : (const void *)x,
                             (size_t)(m * k) * (xh ? 2u : 4u), y, ycount, &bt, &bi, &bx, &by) != MEMRA_STATUS_OK)
        goto done;
    memra_op_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = (int32_t)m, .n = (int32_t)n, .k = (int32_t)k,
                               .w = memra_buffer_ptr(bt), .x = memra_buffer_ptr(bx), .y = memra_buffer_ptr(by),
                               .ldy = ldy, .y_row_offset = off, .alpha = 1.0f, .w_format = (int32_t)f, .x_is_f16 = xh};
    a.experts = (memra_gemm_experts_args){.struct_size = sizeof a.experts, .lane = MEMRA_OP_gemm_w16,
                                          .n_experts = CHECK_XE, .ids = memra_buffer_ptr(bi)};
    if (check_experts_call(c, &r, &a, by, y, ycount) != MEMRA_STATUS_OK) goto done;
    uint64_t bad = 0;
    for (int e = 0; e < CHECK_XE; e++) {
        if (cnt[e] == 0) continue;
        for (int64_t s = 0; s < cnt[e]; s++) memcpy(xsub + s * k, x + where[base[e] + s] * k, (size_t)k * sizeof(float));
        w16_mass_ref(&wc[e], xsub, cnt[e], mass, c->indep ? ref : NULL);
        if (!c->indep) {
            const char *hwhy = NULL;
            st = run_w16(c->host, "host", &wc[e], wc[e].op, xsub, cnt[e], off, ldy, ysub, &hwhy, 0);
            if (st != MEMRA_STATUS_OK) {
                snprintf(r.note, sizeof r.note, "host reference: %s: %.120s", memra_status_str(st), memra_last_error());
                goto done;
            }
            for (int64_t s = 0; s < cnt[e]; s++)
                for (int64_t j = 0; j < n; j++) ref[s * n + j] = ysub[(off + s) * ldy + j];
        }
        bad += check_experts_judge(&r, y, off, ldy, where + base[e], cnt[e], n, ref, mass);
    }
    check_experts_result(&r, bad, y, off, m, ldy, n, ids);
done:
    check_add_row(c, &r);
    for (int e = 0; e < CHECK_XE; e++) {
        free(wc[e].blocks), free(wc[e].op), free(wc[e].mirror);
        memra_buffer_destroy(bw[e]);
    }
    memra_buffer_destroy(bt), memra_buffer_destroy(bi), memra_buffer_destroy(bx), memra_buffer_destroy(by);
    free(ids), free(where), free(x), free(y), free(xsub), free(ysub), free(ref), free(mass), free(xb16);
}

void check_w16_experts(checker *c)
{
    static const memra_format fm[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                      MEMRA_FORMAT_Q6_K};
    for (size_t f = 0; f < sizeof fm / sizeof fm[0]; f++) {
        if (c->quick && f > 0 && fm[f] != MEMRA_FORMAT_Q6_K) continue; /* --quick: Q8_0 and Q6_K */
        w16_experts_case(c, fm[f], 200, 768, 37, 0);
    }
    w16_experts_case(c, MEMRA_FORMAT_Q8_0, 200, 768, 37, 1); /* an f16 activation */
    /* on a GPU: expert 2 with 1289 rows (several 128-token tiles), the table's remainder tiles, split-k at n 1000 */
    if (c->gpu && !c->quick) {
        w16_experts_case(c, MEMRA_FORMAT_Q4_K, 1000, 2816, 1300, 0);
        w16_experts_case(c, MEMRA_FORMAT_Q8_0, 256, 4096, 300, 0);
    }
}
