/* memra check's rows for the integer MMQ floor of the 4- to 6-bit formats:
 * gemm_kr on the K-packed layout of Q4_K, Q5_K and Q6_K weights, and gemm_q8_0r on the
 * Q8_0 records of a Q4_0 weight (the exact conversion the core makes at
 * prepare: d kept, q - 8 as int8). Each case: fresh random blocks (every byte
 * random but the f16 scales: tool_fill_blocks_w), the operand the core would
 * make (memra_kr_repack; the Q4_0 records built here the way the core
 * builds them), an activation x (+-[0.25, 4), x[0][0] = 4) quantised by the
 * host module's quant_q8_1 (bit-identical on every module), then the module
 * under check on c->dev, judged against
 *  - the host module's gemm_kr / gemm_q8_0r on the host device (GPU and test
 *    modules), in the op's band, or
 *  - for the host module itself, an independent f64 product of GGML's
 *    decoded weight (memra_decode_row) with the decoded activation
 *    (dx * xq): it differs from the exact contract only by the decoder's one
 *    f32 rounding per value (<= u |w| <= u of the value's mass) and the
 *    double sums, inside JUDGE_BAND_HOST.
 * The mass of an element is sum over k of |dx xq| (|s q| + |mn|) for Q4_K /
 * Q5_K (the scale and the min term are two terms of the fold, so the bound is
 * on their sum, not on |s q - mn|), |dx xq| |s q| for Q6_K and Q4_0.
 * Band of gemm_kr: judge_band_kr(k, tc) (judge_band_fold(2 k/32, 16); 36 for Q4_K / Q5_K, whose
 * dense and sorted grouped tiles may run MEMRA_MMQ_KR_TC's fold) (two terms per 32-block, up to
 * 16 split-k roundings; tools/judge.h); gemm_q8_0r (Q4_0): its own band.
 * Shapes: n = 200 (off the 128- and 96-row tiles), k = 768 (K: three
 * super-blocks, off the quantiser's 512) / 800 (Q4_0: off the 128-value step),
 * m = 1 and 17, and on a GPU also m = 512 and 1100 (from 1024 tokens the default plan runs Q4_K / Q5_K
 * on the prepared warpgroup tile, MEMRA_MMQ_KR_WG=auto; 1100 is off the 128-token tile) and
 * n x k = 1000 x 2816 (split-k).
 * m > 32 is judged on 16 sampled rows (row 0 always). The injected fault
 * (MEMRA_CHECK_INJECT_FAULT=1) adds 1/4 to the first scale of row 0 in the
 * module's operand (kr_fault) in the first case of each op: it must FAIL. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "tools/check.h"
#include "tools/judge.h"

typedef struct kr_case {
    memra_format format;
    memra_op op;
    int64_t n, k;
    uint8_t *blocks; /* the weight in its own format */
    uint8_t *rec;    /* the op's weight operand */
    size_t rec_bytes;
    uint8_t *wide;   /* gemm_kr: rec widened (memra_kr_widen), for the mass */
} kr_case;

/* The injected fault in a copy of the operand: 1/4 added to the first scale
 * (Q8_0 records: d of block 0 of row 0; K-packed: the f16 d of super-block 0
 * of row 0, in plane S or D, module.h). */
static void kr_fault(const kr_case *kc, uint8_t *w)
{
    if (kc->op != MEMRA_OP_gemm_kr) {
        float s0;
        memcpy(&s0, w, 4);
        s0 += 0.25f;
        memcpy(w, &s0, 4);
        return;
    }
    const uint64_t G = (uint64_t)kc->k / 128u, n = (uint64_t)kc->n;
    const uint64_t at = kc->format == MEMRA_FORMAT_Q6_K ? G * n * 96u + G / 2u * n * 16u
                        : G * n * (kc->format == MEMRA_FORMAT_Q5_K ? 80u : 64u);
    const uint16_t d = (uint16_t)(w[at] | (w[at + 1] << 8));
    const uint16_t e = memra_f16_from_f32(memra_f32_from_f16(d) + 0.25f);
    w[at] = (uint8_t)e, w[at + 1] = (uint8_t)(e >> 8);
}

/* Q4_0 [rows x cols] as Q8_0 records (module.h memra_q8_0r_bytes): f32 d
 * widened from the f16, int8 q - 8; padding blocks zero. */
static void q4_0_records(const uint8_t *src, int64_t rows, int64_t cols, uint8_t *dst)
{
    const int64_t nb = cols / 32;
    memset(dst, 0, (size_t)memra_q8_0r_bytes(rows, cols));
    for (int64_t j = 0; j < rows; j++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *q4 = src + (j * nb + b) * MEMRA_Q4_0_BYTES;
            uint8_t *r = dst + (size_t)((b / 4) * rows + j) * MEMRA_Q8_1_RECORD_BYTES;
            const float d = memra_f32_from_f16((uint16_t)(q4[0] | (q4[1] << 8)));
            memcpy(r + 4 * (b % 4), &d, 4);
            int8_t *q = (int8_t *)(r + 16 + 32 * (b % 4));
            for (int l = 0; l < 16; l++) {
                q[l] = (int8_t)((q4[2 + l] & 0x0F) - 8);
                q[16 + l] = (int8_t)((q4[2 + l] >> 4) - 8);
            }
        }
}

/* One op call on dev by module `mod`: w, x uploaded, y (sentinel-filled,
 * (off + m + 1) x ldy) read back. */
static memra_status run_gemm(memra_device *dev, const char *mod, const kr_case *kc, const uint8_t *w,
                             const uint8_t *xr, size_t xr_bytes, int64_t m, int64_t off, int64_t ldy, float *y,
                             const char **why)
{
    memra_buffer *bx = NULL, *bw = NULL, *by = NULL;
    const size_t ycount = (size_t)((off + m + 1) * ldy);
    for (size_t e = 0; e < ycount; e++) y[e] = CHECK_Y_SENTINEL;
    memra_status st = tool_upload(dev, xr, xr_bytes, &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, w, kc->rec_bytes, &bw);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, y, ycount * sizeof(float), &by);
    if (st == MEMRA_STATUS_OK) {
        memra_op_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = (int32_t)m, .n = (int32_t)kc->n,
                                   .k = (int32_t)kc->k, .w = memra_buffer_ptr(bw), .x = memra_buffer_ptr(bx),
                                   .y = memra_buffer_ptr(by), .ldy = ldy, .y_row_offset = off, .alpha = 1.0f,
                                   .w_format = (int32_t)kc->format};
        st = memra_module_call(dev, mod, kc->op, &a);
        if (st == MEMRA_STATUS_DECLINED) *why = a.decline_reason ? a.decline_reason : "(no reason)";
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(by, 0, y, ycount * sizeof(float));
    }
    memra_buffer_destroy(bx);
    memra_buffer_destroy(bw);
    memra_buffer_destroy(by);
    return st;
}

/* x [m x k] -> q8_1 records by the host module; NULL on failure. */
static uint8_t *quantise(checker *c, const float *x, int64_t m, int64_t k, size_t *out_bytes)
{
    const size_t bytes = (size_t)memra_q8_1_bytes(m, k);
    uint8_t *out = tool_alloc(bytes, 1);
    memra_buffer *bx = NULL, *bq = NULL;
    memra_status st = out ? tool_upload(c->host, x, (size_t)(m * k) * sizeof(float), &bx) : MEMRA_STATUS_OUT_OF_MEMORY;
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->host, out, bytes, &bq);
    if (st == MEMRA_STATUS_OK) {
        memra_op_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.src = memra_buffer_ptr(bx);
        a.dst = memra_buffer_ptr(bq);
        a.rows = m;
        a.cols = k;
        st = memra_module_call(c->host, "host", MEMRA_OP_quant_q8_1, &a);
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(bq, 0, out, bytes);
    }
    memra_buffer_destroy(bx);
    memra_buffer_destroy(bq);
    if (st != MEMRA_STATUS_OK) {
        free(out);
        return NULL;
    }
    *out_bytes = bytes;
    return out;
}

/* The mass [nrow x n] from the operand records and the activation records. */
static void kr_mass(const kr_case *kc, const uint8_t *xr, int64_t nrow, double *mass)
{
    const int64_t n = kc->n, k = kc->k;
    for (int64_t i = 0; i < nrow; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t c = 0; c < k; c++) {
                const int g = (int)((c % 128) / 32);
                const uint8_t *x = xr + (size_t)((c / 128) * nrow + i) * MEMRA_Q8_1_RECORD_BYTES;
                float dx;
                memcpy(&dx, x + 4 * g, 4);
                const double ax = fabs((double)dx * (double)(int8_t)x[16 + c % 128]);
                double aw;
                if (kc->op == MEMRA_OP_gemm_q8_0r) {
                    const uint8_t *w = kc->rec + (size_t)((c / 128) * n + j) * MEMRA_Q8_1_RECORD_BYTES;
                    float d;
                    memcpy(&d, w + 4 * g, 4);
                    aw = fabs((double)d * (double)(int8_t)w[16 + c % 128]);
                } else {
                    const uint8_t *w = kc->wide + (size_t)((c / 128) * n + j) * MEMRA_KR_WIDE_BYTES;
                    float s0, s1;
                    memcpy(&s0, w + 4 * g, 4);
                    memcpy(&s1, w + 16 + 4 * g, 4);
                    const double q = (double)(int8_t)w[32 + c % 128];
                    if (kc->format == MEMRA_FORMAT_Q6_K) aw = fabs((c % 32 < 16 ? s0 : s1) * q);
                    else aw = fabs(s0 * q) + fabs((double)s1);
                }
                s += ax * aw;
            }
            mass[i * n + j] = s;
        }
}

/* The independent f64 reference: GGML's decoded weight x (dx * xq). */
static void kr_indep(const kr_case *kc, const uint8_t *xr, int64_t nrow, double *ref)
{
    const int64_t n = kc->n, k = kc->k;
    float *wrow = malloc((size_t)k * sizeof *wrow);
    if (wrow == NULL) return;
    const uint64_t rb = memra_format_row_bytes(kc->format, k);
    for (int64_t j = 0; j < n; j++) {
        memra_decode_row(kc->format, kc->blocks + (size_t)(j * (int64_t)rb), k, wrow);
        for (int64_t i = 0; i < nrow; i++) {
            double s = 0.0;
            for (int64_t c = 0; c < k; c++) {
                const uint8_t *x = xr + (size_t)((c / 128) * nrow + i) * MEMRA_Q8_1_RECORD_BYTES;
                float dx;
                memcpy(&dx, x + 4 * ((c % 128) / 32), 4);
                s += (double)wrow[c] * ((double)dx * (double)(int8_t)x[16 + c % 128]);
            }
            ref[i * n + j] = s;
        }
    }
    free(wrow);
}

/* memra_matmul of w (prepared on c->dev) on x [m x k] into y (sentinel-filled
 * (off + m + 1) x ldy); the module whose kc->op hits grew goes into r. */
static memra_status run_matmul(checker *c, memra_weight *w, const kr_case *kc, const float *x, int64_t m, int64_t off,
                               int64_t ldy, float *y, const char *const *mods, int nmods, row *r)
{
    memra_buffer *bx = NULL, *by = NULL;
    const size_t ycount = (size_t)((off + m + 1) * ldy);
    for (size_t e = 0; e < ycount; e++) y[e] = CHECK_Y_SENTINEL;
    uint64_t h0[64];
    for (int i = 0; i < nmods && i < 64; i++) h0[i] = memra_ledger_hits(c->dev, kc->op, mods[i]);
    memra_status st = tool_upload(c->dev, x, (size_t)(m * kc->k) * sizeof(float), &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, y, ycount * sizeof(float), &by);
    if (st == MEMRA_STATUS_OK) {
        memra_matmul_args a = {.struct_size = sizeof a, .x = memra_buffer_ptr(bx), .m = (int32_t)m,
                               .y = memra_buffer_ptr(by), .ldy = ldy, .y_row_offset = off, .alpha = 1.0f};
        st = memra_matmul_ex(c->dev, w, &a);
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(by, 0, y, ycount * sizeof(float));
    }
    for (int i = 0; i < nmods && i < 64; i++) {
        const uint64_t h = memra_ledger_hits(c->dev, kc->op, mods[i]) - h0[i];
        if (h > 0) {
            r->hits += h;
            snprintf(r->module, sizeof r->module, "%s", mods[i]);
        }
    }
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    return st;
}

/* One row: c->module's op (w == NULL), or memra_matmul of w (the model
 * check's routed lane, judged as kc->op). */
static void kr_one(checker *c, const kr_case *kc, const float *x, int64_t m, memra_weight *w, const char *const *mods,
                   int nmods)
{
    row r = check_new_row(c, kc->op);
    snprintf(r.shape, sizeof r.shape, "%s %lld %lld %lld%s", memra_format_name(kc->format), (long long)m,
             (long long)kc->n, (long long)kc->k, w ? " matmul" : "");
    if (w) snprintf(r.module, sizeof r.module, "-");
    const int64_t n = kc->n, k = kc->k, off = 1, ldy = n + 3;
    r.band = c->indep ? JUDGE_BAND_HOST
             : kc->op == MEMRA_OP_gemm_kr ? judge_band_kr(k, kc->format != MEMRA_FORMAT_Q6_K)
                                          : check_gemm_band(c, kc->op);
    r.injected = 0;
    if (w == NULL && c->inject && !c->injected_op[kc->op]) c->injected_op[kc->op] = r.injected = 1;
    const int64_t nrow = check_judged_count(c, m);
    int64_t *rows = tool_alloc((size_t)nrow, sizeof *rows);
    float *y = tool_alloc((size_t)((off + m + 1) * ldy), sizeof(float));
    float *ysub = tool_alloc((size_t)((off + nrow + 1) * ldy), sizeof(float));
    float *xsub = tool_alloc((size_t)(nrow * k), sizeof(float));
    double *ref = tool_alloc((size_t)(nrow * n), sizeof(double)), *mass = tool_alloc((size_t)(nrow * n), sizeof(double));
    uint8_t *wmod = r.injected ? tool_alloc(kc->rec_bytes, 1) : kc->rec;
    size_t xb = 0, xsb = 0;
    uint8_t *xr = quantise(c, x, m, k, &xb), *xsr = NULL;
    const char *why = NULL;
    if (rows == NULL || y == NULL || ysub == NULL || xsub == NULL || ref == NULL || mass == NULL || wmod == NULL ||
        xr == NULL) {
        snprintf(r.note, sizeof r.note, "out of host memory (or the host quantiser failed)");
        goto done;
    }
    if (r.injected) {
        memcpy(wmod, kc->rec, kc->rec_bytes);
        kr_fault(kc, wmod);
    }
    memra_status st;
    if (w != NULL) {
        st = run_matmul(c, w, kc, x, m, off, ldy, y, mods, nmods, &r);
    } else {
        const uint64_t h0 = memra_ledger_hits(c->dev, kc->op, c->module);
        st = run_gemm(c->dev, c->module, kc, wmod, xr, xb, m, off, ldy, y, &why);
        r.hits = memra_ledger_hits(c->dev, kc->op, c->module) - h0;
    }
    if (st == MEMRA_STATUS_DECLINED) {
        r.result = "DECLINED";
        snprintf(r.note, sizeof r.note, "%s", why);
        goto done;
    }
    if (st != MEMRA_STATUS_OK) {
        snprintf(r.note, sizeof r.note, "%s: %s: %.120s", w ? "memra_matmul" : "module", memra_status_str(st),
                 memra_last_error());
        goto done;
    }
    check_judged_rows(m, nrow, rows);
    for (int64_t s = 0; s < nrow; s++) memcpy(xsub + s * k, x + rows[s] * k, (size_t)k * sizeof(float));
    xsr = quantise(c, xsub, nrow, k, &xsb); /* per-row quantisation: the same codes as rows[] of xr */
    if (xsr == NULL) {
        snprintf(r.note, sizeof r.note, "the host quantiser failed");
        goto done;
    }
    kr_mass(kc, xsr, nrow, mass);
    if (c->indep) {
        kr_indep(kc, xsr, nrow, ref);
    } else {
        const char *hwhy = NULL;
        st = run_gemm(c->host, "host", kc, kc->rec, xsr, xsb, nrow, off, ldy, ysub, &hwhy);
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
    free(rows);
    free(y);
    free(ysub);
    free(xsub);
    free(ref);
    free(mass);
    if (wmod != kc->rec) free(wmod);
    free(xr);
    free(xsr);
}

static void kr_shape(checker *c, memra_format f, int64_t n, int64_t k, const int64_t *ms, size_t nm)
{
    kr_case kc = {.format = f, .op = f == MEMRA_FORMAT_Q4_0 ? MEMRA_OP_gemm_q8_0r : MEMRA_OP_gemm_kr, .n = n, .k = k};
    const size_t bb = (size_t)memra_format_row_bytes(f, k) * (size_t)n;
    kc.rec_bytes = (size_t)(f == MEMRA_FORMAT_Q4_0 ? memra_q8_0r_bytes(n, k) : memra_kr_bytes(f, n, k));
    kc.blocks = tool_alloc(bb, 1);
    kc.rec = tool_alloc(kc.rec_bytes, 1);
    kc.wide = f == MEMRA_FORMAT_Q4_0 ? NULL : tool_alloc((size_t)memra_kr_wide_bytes(n, k), 1);
    int64_t mmax = 0;
    for (size_t i = 0; i < nm; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
    float *x = tool_alloc((size_t)(mmax * k), sizeof(float));
    if (kc.blocks != NULL && kc.rec != NULL && x != NULL && (f == MEMRA_FORMAT_Q4_0 || kc.wide != NULL)) {
        tool_fill_blocks_w(&c->rng, f, kc.blocks, n, k);
        if (f == MEMRA_FORMAT_Q4_0) q4_0_records(kc.blocks, n, k, kc.rec);
        else (void)(memra_kr_repack(f, kc.blocks, n, k, kc.rec) || memra_kr_widen(f, kc.rec, n, k, kc.wide));
        tool_fill_x(&c->rng, x, (size_t)(mmax * k));
        x[0] = 4.0f;
        for (size_t i = 0; i < nm; i++) kr_one(c, &kc, x, ms[i], NULL, NULL, 0);
    }
    free(kc.blocks);
    free(kc.rec);
    free(kc.wide);
    free(x);
}

void check_kfloor_op(checker *c, memra_op op)
{
    static const memra_format kq[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    static const int64_t m_host[] = {1, 17}, m_gpu[] = {1, 17, 512, 1100};
    const int64_t *ms = c->gpu && !c->quick ? m_gpu : m_host;
    const size_t nm = c->gpu && !c->quick ? 4 : 2;
    if (op == MEMRA_OP_gemm_q8_0r) {
        kr_shape(c, MEMRA_FORMAT_Q4_0, 200, 800, ms, nm);
        if (c->gpu && !c->quick) kr_shape(c, MEMRA_FORMAT_Q4_0, 1000, 2848, ms, nm);
        return;
    }
    for (size_t f = 0; f < sizeof kq / sizeof kq[0]; f++) {
        kr_shape(c, kq[f], 200, 768, ms, nm);
        if (c->gpu && !c->quick) kr_shape(c, kq[f], 1000, 2816, ms, nm);
    }
}

void check_kr_model(checker *c, memra_format f, const uint8_t *blocks, int64_t n, int64_t k, int64_t m, memra_weight *w,
                    const char *const *mods, int nmods)
{
    kr_case kc = {.format = f, .op = MEMRA_OP_gemm_kr, .n = n, .k = k,
                  .rec_bytes = (size_t)memra_kr_bytes(f, n, k)};
    kc.blocks = (uint8_t *)(uintptr_t)blocks;
    kc.rec = tool_alloc(kc.rec_bytes, 1);
    kc.wide = tool_alloc((size_t)memra_kr_wide_bytes(n, k), 1);
    float *x = tool_alloc((size_t)(m * k), sizeof(float));
    const int dev_is_host = c->dev == c->host;
    if (kc.rec != NULL && kc.wide != NULL && x != NULL && memra_kr_repack(f, blocks, n, k, kc.rec) == 0 &&
        memra_kr_widen(f, kc.rec, n, k, kc.wide) == 0) {
        tool_fill_x(&c->rng, x, (size_t)(m * k));
        x[0] = 4.0f;
        c->module = "-";
        c->indep = dev_is_host;
        kr_one(c, &kc, x, m, w, mods, nmods);
        for (int i = 0; i < nmods; i++) {
            if (memra_module_score(c->dev, mods[i]) <= 0 || !memra_module_provides(c->dev, mods[i], kc.op)) continue;
            c->module = mods[i];
            c->indep = dev_is_host && strcmp(mods[i], "host") == 0;
            memset(c->injected_op, 0, sizeof c->injected_op); /* every module row carries the fault */
            kr_one(c, &kc, x, m, NULL, NULL, 0);
        }
    } else {
        row r = check_new_row(c, kc.op);
        snprintf(r.note, sizeof r.note, "out of host memory, or K-packing of %s refused", memra_format_name(f));
        check_add_row(c, &r);
    }
    free(kc.rec);
    free(kc.wide);
    free(x);
}

/* ---- gemm_experts on the K-quant floor (lane gemm_kr) ------------------------------
 *
 * check_experts_case (check.c) for K-packed experts: XE_K experts of fresh random
 * blocks of format f (each repacked as the core does), routed unevenly and
 * unsorted (expert 0 no rows, 1 one row, 2 most, the others two each; two rows
 * with ids outside [0, XE_K) that must stay sentinels), x quantised once for all
 * rows by the host's quant_q8_1 (per row, so a row's codes do not depend on the
 * others). Every routed row is judged against its own expert's dense gemm_kr
 * (the host module on the host device; on the host module itself GGML's decoded
 * weight in f64) over that expert's rows, in gemm_kr's band. */
#define XE_K CHECK_XE

static void kr_experts_case(checker *c, memra_format f, int64_t n, int64_t k, int64_t routed)
{
    row r = check_new_row(c, MEMRA_OP_gemm_experts);
    const int64_t m = routed + 2, off = 1, ldy = n + 2;
    snprintf(r.shape, sizeof r.shape, "kr %s E%d %lldx%lldx%lld", memra_format_name(f), XE_K, (long long)m,
             (long long)n, (long long)k);
    r.band = c->indep ? JUDGE_BAND_HOST : judge_band_kr(k, f != MEMRA_FORMAT_Q6_K); /* (MEMRA_MMQ_KR_TC: the TC fold) */
    int64_t cnt[XE_K], base[XE_K + 1];
    cnt[2] = routed - 1 - 2 * (XE_K - 3); /* (check_experts_route's, for the sizes below) */
    kr_case kc[XE_K];
    memset(kc, 0, sizeof kc);
    const size_t bb = (size_t)memra_format_row_bytes(f, k) * (size_t)n;
    const size_t ycount = (size_t)((off + m + 1) * ldy);
    int32_t *ids = tool_alloc((size_t)m, sizeof *ids);
    int64_t *where = tool_alloc((size_t)m, sizeof *where); /* the rows of each expert, expert-major */
    float *x = tool_alloc((size_t)(m * k), sizeof(float)), *y = tool_alloc(ycount, sizeof(float));
    float *xsub = tool_alloc((size_t)(cnt[2] * k), sizeof(float));
    float *ysub = tool_alloc((size_t)((off + cnt[2] + 1) * ldy), sizeof(float));
    double *ref = tool_alloc((size_t)(cnt[2] * n), sizeof(double)), *mass = tool_alloc((size_t)(cnt[2] * n), sizeof(double));
    memra_buffer *bw[XE_K] = {0}, *bt = NULL, *bi = NULL, *bx = NULL, *by = NULL;
    uint8_t *xr = NULL, *xsr = NULL;
    size_t xb = 0, xsb = 0;
    int ok = ids && where && x && y && xsub && ysub && ref && mass;
    for (int e = 0; e < XE_K && ok; e++) {
        kc[e] = (kr_case){.format = f, .op = MEMRA_OP_gemm_kr, .n = n, .k = k,
                          .rec_bytes = (size_t)memra_kr_bytes(f, n, k)};
        kc[e].blocks = tool_alloc(bb, 1);
        kc[e].rec = tool_alloc(kc[e].rec_bytes, 1);
        kc[e].wide = tool_alloc((size_t)memra_kr_wide_bytes(n, k), 1);
        ok = kc[e].blocks && kc[e].rec && kc[e].wide;
        if (ok) {
            tool_fill_blocks_w(&c->rng, f, kc[e].blocks, n, k);
            ok = memra_kr_repack(f, kc[e].blocks, n, k, kc[e].rec) == 0 && memra_kr_widen(f, kc[e].rec, n, k, kc[e].wide) == 0;
        }
    }
    if (!ok) {
        snprintf(r.note, sizeof r.note, "out of host memory, or K-packing of %s refused", memra_format_name(f));
        goto done;
    }
    check_experts_route(c, routed, cnt, ids, where, base);
    tool_fill_x(&c->rng, x, (size_t)(m * k));
    x[0] = 4.0f;
    xr = quantise(c, x, m, k, &xb);
    memra_status st = xr ? MEMRA_STATUS_OK : MEMRA_STATUS_OUT_OF_MEMORY;
    memra_dptr wt[XE_K];
    for (int e = 0; e < XE_K && st == MEMRA_STATUS_OK; e++) {
        st = tool_upload(c->dev, kc[e].rec, kc[e].rec_bytes, &bw[e]);
        wt[e] = st == MEMRA_STATUS_OK ? memra_buffer_ptr(bw[e]) : 0;
    }
    if (st != MEMRA_STATUS_OK) {
        snprintf(r.note, sizeof r.note, "gemm_experts inputs: %s: %.120s", memra_status_str(st), memra_last_error());
        goto done;
    }
    if (check_experts_inputs(c, &r, wt, sizeof wt, ids, m, xr, xb, y, ycount, &bt, &bi, &bx, &by) != MEMRA_STATUS_OK)
        goto done;
    memra_op_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = (int32_t)m, .n = (int32_t)n, .k = (int32_t)k,
                               .w = memra_buffer_ptr(bt), .x = memra_buffer_ptr(bx), .y = memra_buffer_ptr(by),
                               .ldy = ldy, .y_row_offset = off, .alpha = 1.0f, .w_format = (int32_t)f};
    a.experts = (memra_gemm_experts_args){.struct_size = sizeof a.experts, .lane = MEMRA_OP_gemm_kr,
                                          .n_experts = XE_K, .ids = memra_buffer_ptr(bi)};
    if (check_experts_call(c, &r, &a, by, y, ycount) != MEMRA_STATUS_OK) goto done;
    uint64_t bad = 0;
    for (int e = 0; e < XE_K; e++) {
        if (cnt[e] == 0) continue;
        for (int64_t s = 0; s < cnt[e]; s++) memcpy(xsub + s * k, x + where[base[e] + s] * k, (size_t)k * sizeof(float));
        free(xsr);
        xsr = quantise(c, xsub, cnt[e], k, &xsb); /* per-row quantisation: the same codes as the rows of xr */
        if (xsr == NULL) {
            snprintf(r.note, sizeof r.note, "the host quantiser failed");
            goto done;
        }
        kr_mass(&kc[e], xsr, cnt[e], mass);
        if (c->indep) {
            kr_indep(&kc[e], xsr, cnt[e], ref);
        } else {
            const char *hwhy = NULL;
            st = run_gemm(c->host, "host", &kc[e], kc[e].rec, xsr, xsb, cnt[e], off, ldy, ysub, &hwhy);
            if (st != MEMRA_STATUS_OK) {
                snprintf(r.note, sizeof r.note, "host reference: %s: %.120s", memra_status_str(st), memra_last_error());
                goto done;
            }
            for (int64_t s = 0; s < cnt[e]; s++)
                for (int64_t j = 0; j < n; j++) ref[s * n + j] = ysub[(off + s) * ldy + j];
        }
        if (e == 2 && c->inject && !c->injected_op[MEMRA_OP_gemm_experts]) {
            c->injected_op[MEMRA_OP_gemm_experts] = r.injected = 1;
            y[(off + where[base[e]]) * ldy] += (float)(0.01 * mass[0]);
        }
        bad += check_experts_judge(&r, y, off, ldy, where + base[e], cnt[e], n, ref, mass);
    }
    check_experts_result(&r, bad, y, off, m, ldy, n, ids);
done:
    check_add_row(c, &r);
    for (int e = 0; e < XE_K; e++) {
        free(kc[e].blocks), free(kc[e].rec), free(kc[e].wide);
        memra_buffer_destroy(bw[e]);
    }
    memra_buffer_destroy(bt), memra_buffer_destroy(bi), memra_buffer_destroy(bx), memra_buffer_destroy(by);
    free(ids), free(where), free(x), free(y), free(xsub), free(ysub), free(ref), free(mass), free(xr), free(xsr);
}

void check_kr_experts(checker *c)
{
    static const memra_format kq[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
    for (size_t f = 0; f < sizeof kq / sizeof kq[0]; f++) {
        kr_experts_case(c, kq[f], 96, 512, 37);
        if (!c->quick) kr_experts_case(c, kq[f], 160, 768, 61);
        if (c->gpu && !c->quick) kr_experts_case(c, kq[f], 512, 768, 1024);
    }
}
