/* memra check --model FILE: each distinct (format, scale kind, shape) of a
 * model file's 2D weights, on the file's own bytes, through
 *
 *  - memra_matmul on the weight memra_file_weight_create makes (no host copy;
 *    prepared on the device), the routed lane: row "... matmul", its op and
 *    module the GEMM the ledger shows served the call;
 *  - the lane's GEMM op on every module admitted on the device that provides
 *    it, through memra_module_call (check.c's gemm case), on the operand the
 *    lane reads built from the file's bytes by check_ref.c: the f16 mirror of a
 *    GGML block tensor (ref_dequant_f16) or of an F32 tensor (RNE), the BF16 /
 *    F16 / E4M3 bytes themselves, the scale or block-128 grid beside an E4M3
 *    weight (widened from BF16 / F16 exactly), the Q8_0 slab of a block-128
 *    E4M3 weight (ref_fp8_blk_to_q8_0), Q8_0 records (the module's repack).
 *
 * Judging is check.c's, the same metric and bands: the host device against
 * the independent f64 reference, every other device against the host module
 * on the host device, on sampled rows when m > 32. The activation is fresh
 * random data (check.c's generator); row 0 holds its largest value (4) at the
 * column of the largest |w| of weight row 0, where MEMRA_CHECK_INJECT_FAULT=1
 * flips that weight element's sign in every module row (the file's values are
 * not planted, so a one-step move could be lost in a small element; the sign
 * flip of the row's largest element moves y[0][0] by 8 |w|max against a mass
 * of about k |x| |w| on average, 2e-3 at k = 17408 for Gaussian weights:
 * over every band). The matmul row reads the file's bytes unchanged and is
 * never injected.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/file.h"
#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/check.h"
#include "tools/check_ref.h"
#include "tools/judge.h"
#include "tools/model_util.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

static const memra_op k_gemms[] = {MEMRA_OP_gemm_f16,  MEMRA_OP_gemm_bf16,  MEMRA_OP_gemm_fp8, MEMRA_OP_gemm_fp8_blk,
                                   MEMRA_OP_gemm_q8_0, MEMRA_OP_gemm_q8_0r, MEMRA_OP_gemm_kr,  MEMRA_OP_gemm_w16};

/* The op whose reference and band judge a GEMM: gemm_w16 gives the f16 mirror's numbers from the W16 operand, so
 * it is judged as gemm_f16 on the mirror of the file's bytes (its own rows: memra check --op gemm_w16) */
static memra_op judged_as(memra_op op) { return op == MEMRA_OP_gemm_w16 ? MEMRA_OP_gemm_f16 : op; }
#define N_GEMMS (sizeof k_gemms / sizeof k_gemms[0])
#define MAX_MODS 32

static const char *scale_name(tool_scale_kind s)
{
    return s == TOOL_SCALE_BLOCK128 ? "block-128" : s == TOOL_SCALE_TENSOR ? "per-tensor" : "none";
}

/* One value of a scale tensor as f32 (F32, BF16 or F16; exact widening). */
static float scale_value(const memra_tensor_info *s, const uint8_t *p, size_t i)
{
    if (strcmp(s->type, "F32") == 0) {
        float v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    return (float)(strcmp(s->type, "BF16") == 0 ? ref_bf16_value(h) : ref_f16_value(h));
}

/* The scale tensor beside E4M3 weight t ("<base>.weight_scale_inv" or
 * "<base>.weight_scale"). */
static int find_scale(const memra_file *f, const memra_tensor_info *t, int inv, memra_tensor_info *out,
                      const uint8_t **data)
{
    char nm[600];
    const size_t n = strlen(t->name);
    const int base = (int)(n >= 7 && strcmp(t->name + n - 7, ".weight") == 0 ? n - 7 : n);
    snprintf(nm, sizeof nm, "%.*s.%s", base, t->name, inv ? "weight_scale_inv" : "weight_scale");
    size_t idx, bytes;
    const void *p;
    if (memra_file_tensor_find(f, nm, &idx) != MEMRA_STATUS_OK || memra_file_tensor_get(f, idx, out) != MEMRA_STATUS_OK ||
        memra_file_tensor_data(f, idx, &p, &bytes) != MEMRA_STATUS_OK)
        return -1;
    *data = p;
    return 0;
}

/* |w(0, j)| of op's operand (its row 0), for the injection's column. */
static double row0_abs(const gemm_data *d, int64_t j)
{
    uint16_t h;
    switch (d->op) {
    case MEMRA_OP_gemm_f16: memcpy(&h, d->w + 2 * j, 2); return fabs(ref_f16_value(h));
    case MEMRA_OP_gemm_bf16: memcpy(&h, d->w + 2 * j, 2); return fabs(ref_bf16_value(h));
    case MEMRA_OP_gemm_fp8:
    case MEMRA_OP_gemm_fp8_blk: {
        const double v = fabs(ref_e4m3_value(d->w[j]));
        return isnan(v) ? 0.0 : v;
    }
    default: {
        const uint8_t *b = d->w + (j / 32) * MEMRA_Q8_0_BYTES;
        memcpy(&h, b, 2);
        return fabs(ref_f16_value(h)) * fabs((double)(int8_t)b[2 + j % 32]);
    }
    }
}

/* d->w (and scale, grid) for op from tensor t's bytes; x is d's. 0, or -1
 * with why set. */
static int fill_operand(const memra_file *f, const memra_tensor_info *t, const uint8_t *src, gemm_data *d, char *why,
                        size_t len)
{
    const int64_t rows = t->shape[0], cols = t->shape[1];
    const size_t elems = (size_t)(rows * cols);
    const memra_op op = d->op;
    memra_tensor_info st;
    const uint8_t *sp = NULL;
    if (t->format == MEMRA_FORMAT_E4M3 && op != MEMRA_OP_gemm_fp8) {
        if (find_scale(f, t, 1, &st, &sp) != 0) {
            snprintf(why, len, "%s: no weight_scale_inv grid for %s", t->name, memra_op_name(op));
            return -1;
        }
        d->grid_count = (size_t)(memra_fp8_grid_rows(rows) * memra_fp8_grid_cols(cols));
        if (st.elements != d->grid_count) {
            snprintf(why, len, "%s: grid of %llu values, want %zu", t->name, (unsigned long long)st.elements,
                     d->grid_count);
            return -1;
        }
        d->grid = tool_alloc(d->grid_count, sizeof(float));
        if (d->grid == NULL) return -1;
        for (size_t i = 0; i < d->grid_count; i++) d->grid[i] = scale_value(&st, sp, i);
    }
    switch (op) {
    case MEMRA_OP_gemm_f16: {
        uint16_t *h = (uint16_t *)(void *)d->w;
        if (t->format == MEMRA_FORMAT_F16) {
            memcpy(d->w, src, elems * 2);
        } else if (t->format == MEMRA_FORMAT_F32) {
            for (size_t e = 0; e < elems; e++) {
                float v;
                memcpy(&v, src + 4 * e, 4);
                h[e] = ref_f16_bits(v);
            }
        } else if (memra_format_block_values(t->format) > 1) {
            ref_dequant_f16(t->format, src, rows, cols, h);
        } else {
            snprintf(why, len, "%s: no f16 operand for %s", t->name, memra_format_name(t->format));
            return -1;
        }
        return 0;
    }
    case MEMRA_OP_gemm_bf16:
    case MEMRA_OP_gemm_fp8_blk: memcpy(d->w, src, d->w_bytes); return 0;
    case MEMRA_OP_gemm_fp8:
        memcpy(d->w, src, d->w_bytes);
        if (find_scale(f, t, 0, &st, &sp) != 0 || st.elements != 1) {
            snprintf(why, len, "%s: no per-tensor weight_scale", t->name);
            return -1;
        }
        d->w_scale = scale_value(&st, sp, 0);
        return 0;
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r:
        if (t->format == MEMRA_FORMAT_Q8_0) memcpy(d->w, src, d->w_bytes);
        else if (t->format == MEMRA_FORMAT_E4M3 && d->grid) ref_fp8_blk_to_q8_0(src, d->grid, rows, cols, d->w);
        else if (t->format == MEMRA_FORMAT_Q4_0) ref_q4_0_to_q8_0(src, rows, cols, d->w);
        else {
            snprintf(why, len, "%s: no Q8_0 operand for %s", t->name, memra_format_name(t->format));
            return -1;
        }
        /* the MMQ GEMMs read the Q8_0 blocks; the grid went into them */
        free(d->grid);
        d->grid = NULL;
        d->grid_count = 0;
        return 0;
    default: snprintf(why, len, "%s: %s is not a GEMM", t->name, memra_op_name(op)); return -1;
    }
}

/* d for op on tensor t with the activation x [m x k] (NULL: fresh random). */
static int model_data(checker *c, const memra_file *f, size_t ti, memra_op op, int64_t m, const float *x,
                      gemm_data *d, char *why, size_t len)
{
    memra_tensor_info t;
    const void *src;
    size_t bytes;
    if (memra_file_tensor_get(f, ti, &t) != MEMRA_STATUS_OK || memra_file_tensor_data(f, ti, &src, &bytes) != MEMRA_STATUS_OK) {
        snprintf(why, len, "tensor %zu: %s", ti, memra_last_error());
        return -1;
    }
    const int64_t n = t.shape[0], k = t.shape[1];
    if (check_gemm_data_alloc(c, op, n, k, m, d) != 0 || fill_operand(f, &t, src, d, why, len) != 0) {
        if (!why[0]) snprintf(why, len, "out of host memory");
        return -1;
    }
    d->inj_sign = 1;
    double best = -1.0;
    for (int64_t j = 0; j < k; j++) {
        const double a = row0_abs(d, j);
        if (a > best) {
            best = a;
            d->inj_col = j;
        }
    }
    if (x) memcpy(d->x, x, (size_t)(m * k) * sizeof(float));
    else d->x[d->inj_col] = 4.0f;
    if (check_gemm_data_finish(c, d) != 0) {
        snprintf(why, len, "out of host memory");
        return -1;
    }
    return 0;
}

/* The last GEMM of the plan (the lane's). */
static memra_op plan_gemm(const memra_weight_plan *p)
{
    for (int s = p->n_steps - 1; s >= 0; s--)
        for (size_t g = 0; g < N_GEMMS; g++)
            if (p->ops[s] == k_gemms[g]) return p->ops[s];
    return MEMRA_OP_COUNT_;
}

typedef struct gemm_hits {
    uint64_t h[N_GEMMS][MAX_MODS];
} gemm_hits;

static void hits_snap(memra_device *dev, const char *const *mods, int nmods, gemm_hits *s)
{
    for (size_t g = 0; g < N_GEMMS; g++)
        for (int i = 0; i < nmods; i++) s->h[g][i] = memra_ledger_hits(dev, k_gemms[g], mods[i]);
}

/* The routed lane: memra_matmul on the file weight, judged as the GEMM that
 * the ledger shows served it. */
static void matmul_case(checker *c, const memra_file *f, size_t ti, memra_weight *w, gemm_data *d,
                        const char *const *mods, int nmods)
{
    const int64_t m = d->mmax, n = d->n, k = d->k;
    row r = check_new_row(c, d->op);
    snprintf(r.shape, sizeof r.shape, "%lld %lld %lld matmul", (long long)m, (long long)n, (long long)k);
    snprintf(r.module, sizeof r.module, "-");
    memra_buffer *bx = NULL, *by = NULL;
    float *y = tool_alloc((size_t)((m + 1) * n), sizeof(float));
    const int64_t nrow = check_judged_count(c, m);
    int64_t *rows = tool_alloc((size_t)nrow, sizeof *rows);
    double *ref = tool_alloc((size_t)(nrow * n), sizeof(double));
    double *mass = tool_alloc((size_t)(nrow * n), sizeof(double));
    float *xsub = tool_alloc((size_t)(nrow * k), sizeof(float));
    gemm_data d2;
    memset(&d2, 0, sizeof d2);
    gemm_data *dj = d;
    if (y == NULL || rows == NULL || ref == NULL || mass == NULL || xsub == NULL) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    for (int64_t e = 0; e < (m + 1) * n; e++) y[e] = CHECK_Y_SENTINEL;
    memra_status st = tool_upload(c->dev, d->x, (size_t)(m * k) * sizeof(float), &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, y, (size_t)((m + 1) * n) * sizeof(float), &by);
    gemm_hits h0, h1;
    hits_snap(c->dev, mods, nmods, &h0);
    if (st == MEMRA_STATUS_OK) st = memra_matmul(c->dev, w, memra_buffer_ptr(bx), (int32_t)m, memra_buffer_ptr(by), NULL);
    if (st == MEMRA_STATUS_OK) st = memra_buffer_read(by, 0, y, (size_t)((m + 1) * n) * sizeof(float));
    hits_snap(c->dev, mods, nmods, &h1);
    if (st != MEMRA_STATUS_OK) {
        snprintf(r.note, sizeof r.note, "memra_matmul: %s: %.150s", memra_status_str(st), memra_last_error());
        goto done;
    }
    memra_op served = MEMRA_OP_COUNT_;
    for (size_t g = 0; g < N_GEMMS; g++)
        for (int i = 0; i < nmods; i++)
            if (h1.h[g][i] > h0.h[g][i]) {
                served = k_gemms[g];
                r.hits += h1.h[g][i] - h0.h[g][i];
                snprintf(r.module, sizeof r.module, "%s", mods[i]);
            }
    if (served == MEMRA_OP_COUNT_) {
        snprintf(r.note, sizeof r.note, "the ledger shows no GEMM hit for memra_matmul");
        goto done;
    }
    if (judged_as(served) != d->op) { /* fell through to another lane: judge it as that lane */
        char why[200] = "";
        if (model_data(c, f, ti, judged_as(served), m, d->x, &d2, why, sizeof why) != 0) {
            snprintf(r.note, sizeof r.note, "served by %s: %.160s", memra_op_name(served), why);
            goto done;
        }
        dj = &d2;
    }
    r.op = memra_op_name(served);
    r.band = check_gemm_band(c, judged_as(served));
    check_judged_rows(m, nrow, rows);
    for (int64_t s = 0; s < nrow; s++) memcpy(xsub + s * k, d->x + rows[s] * k, (size_t)k * sizeof(float));
    if (check_gemm_reference(c, dj, xsub, nrow, 0, 1.0f, ref, mass, &r) != 0) goto done;
    const uint64_t bad = check_judge_rows(&r, y, 0, n, rows, nrow, n, ref, mass);
        memra_tensor_info t;
    memra_file_tensor_get(f, ti, &t);
    char note[160];
    snprintf(note, sizeof note, "memra_matmul on %.120s", t.name);
    check_gemm_row_result(&r, bad, check_count_stray(y, 0, m, n, n), nrow, m, note);
done:
    check_add_row(c, &r);
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    check_gemm_data_free(&d2);
    free(y);
    free(rows);
    free(ref);
    free(mass);
    free(xsub);
}

/* The rows of one routed GEMM on a model weight w at m: memra_matmul judged as op, then each module's op on
 * the same data (the K-quant floor: check_kr.c's rows on the file's blocks) */
static void op_cases(checker *c, const memra_file *f, const tool_wshape *ws, memra_weight *w, memra_op op, int64_t m,
                     const char *const *mods, int nmods)
{
    if (op == MEMRA_OP_gemm_kr) { /* the K-quant floor: check_kr.c's rows on the file's blocks */
        const void *src = NULL;
        size_t bytes = 0;
        if (memra_file_tensor_data(f, ws->first, &src, &bytes) == MEMRA_STATUS_OK)
            check_kr_model(c, ws->format, src, ws->out_f, ws->in_f, m, w, mods, nmods);
        return;
    }
    gemm_data d;
    char why[200] = "";
    const int dev_is_host = c->dev == c->host;
    if (model_data(c, f, ws->first, op, m, NULL, &d, why, sizeof why) != 0) {
        row r = check_new_row(c, op);
        snprintf(r.shape, sizeof r.shape, "%lld %lld %lld", (long long)m, (long long)ws->out_f,
                 (long long)ws->in_f);
        snprintf(r.note, sizeof r.note, "%s", why);
        check_add_row(c, &r);
    } else {
        /* the weight's static activation scale applies to the matmul row and to every module row */
        d.x_scale = d.case_xs = memra_weight_input_scale(w);
        c->module = "-";
        c->indep = dev_is_host;
        matmul_case(c, f, ws->first, w, &d, mods, nmods);
        for (int i = 0; i < nmods; i++) {
            if (memra_module_score(c->dev, mods[i]) <= 0 || !memra_module_provides(c->dev, mods[i], op)) continue;
            c->module = mods[i];
            c->indep = dev_is_host && strcmp(mods[i], "host") == 0;
            memset(c->injected_op, 0, sizeof c->injected_op); /* every module row carries the fault */
            check_gemm_case(c, &d, m, 0);
        }
    }
    check_gemm_data_free(&d);
}

/* One distinct shape on one device: the matmul row and the module rows;
 * appends its lane to the model section. */
static void shape_case(checker *c, const memra_file *f, const tool_wshape *ws, int64_t m, const char *const *mods,
                       int nmods, FILE *js, int first)
{
    memra_tensor_info t;
    memra_file_tensor_get(f, ws->first, &t);
    char tag[24];
    snprintf(tag, sizeof tag, "%s%s", memra_format_name(ws->format),
             ws->scale == TOOL_SCALE_BLOCK128 ? "/b128" : ws->scale == TOOL_SCALE_TENSOR ? "/t" : "");
    memra_weight *w = NULL;
    memra_weight_plan p = {.struct_size = sizeof p};
    memra_status st = memra_file_weight_create(c->rt, f, t.name, &w);
    if (st == MEMRA_STATUS_OK) st = memra_weight_prepare(w, c->dev);
    if (st == MEMRA_STATUS_OK) st = memra_weight_plan_get(w, c->dev, &p);
    memra_op op = st == MEMRA_STATUS_OK ? plan_gemm(&p) : MEMRA_OP_COUNT_;
    /* the floor's records at m from the route's threshold on: dequant_kr_f16 + gemm_f16, judged as gemm_f16;
     * then the floor's rows with the route off */
    const int64_t f16_m = st == MEMRA_STATUS_OK ? memra_weight_floor_f16_m(w, c->dev) : 0;
    const int routed = f16_m > 0 && m >= f16_m && (op == MEMRA_OP_gemm_kr || op == MEMRA_OP_gemm_q8_0r);
    const memra_op floor_op = op;
    if (routed) op = MEMRA_OP_gemm_f16;
    printf("  %s: %s [%lld x %lld] (%zu tensor%s), lane '%s'%s\n", t.name, tag, (long long)ws->out_f,
           (long long)ws->in_f, ws->count, ws->count == 1 ? "" : "s", st == MEMRA_STATUS_OK ? p.lane : "-",
           routed ? ", at this m dequant_kr_f16 + gemm_f16 (MEMRA_FLOOR_F16_M)" : "");
    fprintf(js, "%s\n{\"device\":", first ? "" : ",");
    tool_json_str(js, c->devlabel);
    fprintf(js, ",\"tensor\":");
    tool_json_str(js, t.name);
    fprintf(js, ",\"format\":\"%s\",\"scale\":\"%s\",\"out_f\":%lld,\"in_f\":%lld,\"count\":%zu,\"m\":%lld,\"lane\":",
            memra_format_name(ws->format), scale_name(ws->scale), (long long)ws->out_f, (long long)ws->in_f, ws->count,
            (long long)m);
    tool_json_str(js, st == MEMRA_STATUS_OK ? p.lane : "-");
    fprintf(js, ",\"op\":");
    if (op != MEMRA_OP_COUNT_) tool_json_str(js, memra_op_name(op));
    else fprintf(js, "null");
    fprintf(js, "}");
    if (st != MEMRA_STATUS_OK || op == MEMRA_OP_COUNT_) {
        row r = check_new_row(c, op == MEMRA_OP_COUNT_ ? MEMRA_OP_gemm_f16 : op);
        snprintf(r.shape, sizeof r.shape, "%lld %lld %lld matmul", (long long)m, (long long)ws->out_f,
                 (long long)ws->in_f);
        if (st != MEMRA_STATUS_OK)
            snprintf(r.note, sizeof r.note, "%s: %s: %.150s", t.name, memra_status_str(st), memra_last_error());
        else
            snprintf(r.note, sizeof r.note, "%s: lane '%s' has no GEMM", t.name, p.lane);
        check_add_row(c, &r);
        memra_weight_destroy(w);
        return;
    }
    op_cases(c, f, ws, w, judged_as(op), m, mods, nmods); /* lane w16: judged as the mirror, the module rows gemm_f16's */
    if (routed) { /* the floor's own kernels on the model's shape too, the route off for them */
        memra_device_floor_f16_m_set(c->dev, 0);
        op_cases(c, f, ws, w, floor_op, m, mods, nmods);
        memra_device_floor_f16_m_set(c->dev, -1);
    }
    memra_weight_destroy(w);
}

/* ---- expert groups: memra_matmul_experts against a loop of memra_matmul ---------
 *
 * The group's expert weight (memra_file_experts_create) and its experts as
 * dense weights (3D: each expert's slice; per-expert tensors: the file's own
 * tensor), m tokens routed top-k (8 for 64 experts or more, else 2; seeded):
 * uniform (distinct experts per token) and skewed (half the rows to expert
 * 0). The grouped call must equal the loop of dense calls over each expert's
 * gathered rows bit for bit on a device served by the host module (the host
 * and fake devices); on a GPU the two run different kernels: per element
 * |grouped - loop| / (sqrt(k) max_j |loop row|) within twice the lane's band
 * (the live estimate of the mass shadow.c uses, since both sides are
 * approximations). The injected fault moves one grouped output element. */
static void fail_note_model(row *r, const char *what, memra_status st)
{
    snprintf(r->note, sizeof r->note, "%s: %s: %.150s", what, memra_status_str(st), memra_last_error());
    r->result = "FAIL";
}

static double experts_band(memra_op op)
{
    switch (op) {
    case MEMRA_OP_gemm_f16:
    case MEMRA_OP_gemm_w16: return JUDGE_BAND_F16;
    case MEMRA_OP_gemm_bf16: return JUDGE_BAND_BF16;
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r: return JUDGE_BAND_Q8_0;
    case MEMRA_OP_gemm_kr: return 4e-6;
    default: return JUDGE_BAND_FP8;
    }
}

static void group_case(checker *c, const memra_file *f, const memra_expert_group_info *gi, int64_t tokens, int skewed,
                       FILE *js, int first)
{
    row r = check_new_row(c, MEMRA_OP_gemm_experts);
    const int32_t E = gi->n_experts, topk = E >= 64 ? 8 : E >= 2 ? 2 : 1;
    const int64_t n = gi->out_f, k = gi->in_f, rows = tokens * topk;
    snprintf(r.shape, sizeof r.shape, "E%d %s %lldx%lldx%lld", (int)E, skewed ? "skew" : "unif", (long long)rows,
             (long long)n, (long long)k);
    memra_weight *xw = NULL, **dw = calloc((size_t)E, sizeof *dw);
    float *x = tool_alloc((size_t)(rows * k), sizeof(float)), *xs = tool_alloc((size_t)(rows * k), sizeof(float));
    float *yg = tool_alloc((size_t)(rows * n), sizeof(float)), *yl = tool_alloc((size_t)(rows * n), sizeof(float));
    int32_t *ids = tool_alloc((size_t)rows, sizeof *ids);
    int64_t *start = tool_alloc((size_t)E + 1, sizeof *start), *perm = tool_alloc((size_t)rows, sizeof *perm);
    memra_buffer *bx = NULL, *bxs = NULL, *bi = NULL, *byg = NULL, *byl = NULL;
    memra_weight_plan p = {.struct_size = sizeof p};
    memra_status st = MEMRA_STATUS_OK;
    if (!dw || !x || !xs || !yg || !yl || !ids || !start || !perm) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    st = memra_file_experts_create(c->rt, f, gi->name, &xw);
    for (int32_t e = 0; e < E && st == MEMRA_STATUS_OK; e++) {
        if (gi->from_3d) {
            size_t ti, bytes;
            const void *data;
            st = memra_file_tensor_find(f, gi->name, &ti);
            if (st == MEMRA_STATUS_OK) st = memra_file_tensor_data(f, ti, &data, &bytes);
            memra_weight_desc d = {.struct_size = sizeof d, .format = gi->format, .out_f = n, .in_f = k,
                                   .data = (const uint8_t *)data + (size_t)e * (bytes / (size_t)E),
                                   .size = bytes / (size_t)E, .name = gi->name};
            if (st == MEMRA_STATUS_OK) st = memra_weight_create(c->rt, &d, &dw[e]);
        } else {
            char name[600];
            const char *star = strchr(gi->name, '*');
            snprintf(name, sizeof name, "%.*s%d%s", (int)(star - gi->name), gi->name, (int)e, star + 1);
            st = memra_file_weight_create(c->rt, f, name, &dw[e]);
        }
    }
    if (st == MEMRA_STATUS_OK) st = memra_weight_plan_get(xw, c->dev, &p);
    if (st != MEMRA_STATUS_OK) {
        fail_note_model(&r, "expert weights", st);
        goto done;
    }
    for (int i = 0; i < p.n_steps; i++)
        if (p.ops[i] == MEMRA_OP_gemm_experts && p.modules[i]) snprintf(r.module, sizeof r.module, "%s", p.modules[i]);
    if (strcmp(p.lane, "none") == 0) {
        r.result = "DECLINED";
        snprintf(r.note, sizeof r.note, "no grouped lane on this device: %.150s", p.why);
        goto done;
    }
    /* routing, the rows and the loop's gathered copy */
    for (int64_t t = 0; t < tokens; t++)
        for (int32_t j = 0; j < topk; j++) {
            int32_t id;
            int dup;
            do {
                id = skewed && (tool_rng_u64(&c->rng) & 1) ? 0 : (int32_t)(tool_rng_u64(&c->rng) % (uint64_t)E);
                dup = 0;
                for (int32_t i = 0; i < j && !skewed; i++) dup |= ids[t * topk + i] == id;
            } while (dup);
            ids[t * topk + j] = id;
        }
    tool_fill_x(&c->rng, x, (size_t)(rows * k));
    memset(start, 0, ((size_t)E + 1) * sizeof *start);
    for (int64_t i = 0; i < rows; i++) start[ids[i] + 1]++;
    for (int32_t e = 0; e < E; e++) start[e + 1] += start[e];
    {
        int64_t *fill = tool_alloc((size_t)E, sizeof *fill);
        if (fill == NULL) goto done;
        memcpy(fill, start, (size_t)E * sizeof *fill);
        for (int64_t i = 0; i < rows; i++) perm[fill[ids[i]]++] = i;
        free(fill);
    }
    for (int64_t i = 0; i < rows; i++) memcpy(xs + i * k, x + perm[i] * k, (size_t)k * sizeof(float));
    st = tool_upload(c->dev, x, (size_t)(rows * k) * sizeof(float), &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, xs, (size_t)(rows * k) * sizeof(float), &bxs);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, ids, (size_t)rows * sizeof *ids, &bi);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, NULL, (size_t)(rows * n) * sizeof(float), &byg);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, NULL, (size_t)(rows * n) * sizeof(float), &byl);
    const uint64_t h0 = memra_ledger_hits(c->dev, MEMRA_OP_gemm_experts, p.modules[p.n_steps - 1] ? p.modules[p.n_steps - 1] : "");
    if (st == MEMRA_STATUS_OK)
        st = memra_matmul_experts(c->dev, xw, memra_buffer_ptr(bx), (int32_t)rows, memra_buffer_ptr(bi),
                                  memra_buffer_ptr(byg), NULL);
    r.hits = memra_ledger_hits(c->dev, MEMRA_OP_gemm_experts, p.modules[p.n_steps - 1] ? p.modules[p.n_steps - 1] : "") - h0;
    if (st == MEMRA_STATUS_DECLINED) { /* the grouped lane does not take this lane (a GPU module serving some only) */
        r.result = "DECLINED";
        snprintf(r.note, sizeof r.note, "%.190s", memra_last_error());
        goto done;
    }
    /* the loop on the grouped call's lane: memra_matmul's route from the floor to dequant_kr_f16 + gemm_f16
     * (memra_weight_floor_f16_m; an expert with most of the rows reaches it) off for the loop */
    memra_device_floor_f16_m_set(c->dev, 0);
    for (int32_t e = 0; e < E && st == MEMRA_STATUS_OK; e++) {
        const int64_t me = start[e + 1] - start[e];
        if (me > 0)
            st = memra_matmul(c->dev, dw[e], memra_buffer_ptr(bxs) + (memra_dptr)(start[e] * k * 4), (int32_t)me,
                              memra_buffer_ptr(byl) + (memra_dptr)(start[e] * n * 4), NULL);
    }
    memra_device_floor_f16_m_set(c->dev, -1);
    if (st == MEMRA_STATUS_OK) st = memra_buffer_read(byg, 0, yg, (size_t)(rows * n) * sizeof(float));
    if (st == MEMRA_STATUS_OK) st = memra_buffer_read(byl, 0, yl, (size_t)(rows * n) * sizeof(float));
    if (st != MEMRA_STATUS_OK) {
        fail_note_model(&r, "memra_matmul_experts", st);
        goto done;
    }
    memra_weight_plan dp = {.struct_size = sizeof dp};
    memra_weight_plan_get(dw[0], c->dev, &dp);
    const int exact = memra_device_caps_get(c->dev)->arch == MEMRA_ARCH_HOST;
    r.exact = exact;
    r.band = exact ? 0.0 : 2.0 * experts_band(plan_gemm(&dp));
    if (c->inject && !c->injected_op[MEMRA_OP_gemm_experts]) {
        c->injected_op[MEMRA_OP_gemm_experts] = 1;
        yg[perm[0] * n] += 1e-2f * fabsf(yg[perm[0] * n]) + 1e-3f;
        r.injected = 1;
    }
    uint64_t bad = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *a = yg + perm[i] * n, *b = yl + i * n;
        double amax = 0;
        for (int64_t j = 0; j < n; j++) amax = fmax(amax, fabs((double)b[j]));
        const double mass = sqrt((double)k) * amax + 1e-30;
        for (int64_t j = 0; j < n; j++) {
            const double e = fabs((double)a[j] - (double)b[j]) / mass;
            if (e > r.err || e != e) r.err = e;
            if (exact ? memcmp(&a[j], &b[j], 4) != 0 : !(e <= r.band)) bad++;
        }
    }
    r.mismatches = bad;
    r.vs = "loop of memra_matmul";
    snprintf(r.note, sizeof r.note, "lane '%s'%s", p.lane, exact ? ", bit for bit" : "");
    if (r.hits == 0) snprintf(r.note, sizeof r.note, "the ledger shows no hit of gemm_experts");
    r.result = bad == 0 && r.hits > 0 ? "PASS" : "FAIL";
done:
    check_add_row(c, &r);
    fprintf(js, "%s\n{\"device\":", first ? "" : ",");
    tool_json_str(js, c->devlabel);
    fprintf(js, ",\"experts\":");
    tool_json_str(js, gi->name);
    fprintf(js, ",\"format\":\"%s\",\"n_experts\":%d,\"out_f\":%lld,\"in_f\":%lld,\"rows\":%lld,\"routing\":\"%s\","
                "\"lane\":",
            memra_format_name(gi->format), (int)E, (long long)n, (long long)k, (long long)rows,
            skewed ? "skewed" : "uniform");
    tool_json_str(js, p.lane ? p.lane : "-");
    fprintf(js, ",\"op\":\"gemm_experts\"}");
    memra_buffer_destroy(bx), memra_buffer_destroy(bxs), memra_buffer_destroy(bi);
    memra_buffer_destroy(byg), memra_buffer_destroy(byl);
    memra_weight_destroy(xw);
    for (int32_t e = 0; dw && e < E; e++) memra_weight_destroy(dw[e]);
    free(dw), free(x), free(xs), free(yg), free(yl), free(ids), free(start), free(perm);
}

int check_model_run(checker *c, const char *path, int64_t m, int64_t dev_sel, FILE *receipt, const char *json,
                    uint64_t seed)
{
    static const tool_cmd k_cmd_stub = {"memra check", "", NULL};
    memra_file *f = NULL;
    memra_status st = memra_file_open(path, &f);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra check: %s: %s\n", memra_status_str(st), memra_last_error());
        tool_receipt_close(&k_cmd_stub, json, receipt);
        return 1;
    }
    const size_t nw = tool_weights2d(f, NULL, 0);
    size_t nshape = 0;
    tool_wshape *ws = tool_alloc(nw ? nw : 1, sizeof *ws); /* at most one shape per weight */
    char *model = NULL;
    size_t model_len = 0;
    FILE *js = open_memstream(&model, &model_len);
    int rc = 0, ran = 0;
    if (ws == NULL || js == NULL) {
        rc = 1;
        goto done;
    }
    nshape = tool_weight_shapes(f, ws, nw);
    if (nshape == 0 && memra_file_expert_group_count(f) == 0) {
        fprintf(stderr, "memra check: %s: no 2D weight of a memra format (see 'memra model ls %s')\n", path, path);
        rc = 1;
        goto done;
    }
    const char *mods[MAX_MODS];
    int nmods = 0;
    for (int i = 0; i < memra_module_count(c->rt) && nmods < MAX_MODS; i++) {
        memra_module_info mi;
        if (memra_module_info_get(c->rt, i, &mi) == MEMRA_STATUS_OK && mi.loaded) mods[nmods++] = mi.name;
    }
    printf("memra check --model %s: %s, %zu 2D weights in %zu distinct (format, scale, shape); seed %llu (replay "
           "with --seed %llu)%s\n",
           path, memra_file_describe(f), nw, nshape, (unsigned long long)seed, (unsigned long long)seed,
           c->inject ? ", INJECTED FAULTS" : "");
    check_print_header();
    fprintf(js, "{\"file\":");
    tool_json_str(js, path);
    fprintf(js, ",\"kind\":");
    tool_json_str(js, memra_file_describe(f));
    fprintf(js, ",\"tensors\":%zu,\"weights2d\":%zu,\"shapes\":[", memra_file_tensor_count(f), nw);
    int first = 1;
    const int ndev = memra_device_count(c->rt);
    for (int dv = 0; dv < ndev; dv++) {
        if (dev_sel >= 0 && dv != dev_sel) continue;
        c->dev = memra_device_get(c->rt, dv);
        c->gpu = memra_device_caps_get(c->dev)->arch != MEMRA_ARCH_HOST;
        check_device_label(c->dev, dv, c->devlabel, sizeof c->devlabel);
        const int64_t mm = m ? m : c->gpu ? 512 : 4;
        for (size_t s = 0; s < nshape; s++) {
            tool_rng_seed(&c->rng, seed ^ ((uint64_t)(dv + 1) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(s + 1) << 40));
            shape_case(c, f, &ws[s], mm, mods, nmods, js, first);
            first = 0;
        }
        for (size_t g = 0; g < memra_file_expert_group_count(f); g++) { /* the expert groups */
            memra_expert_group_info gi;
            if (memra_file_expert_group_get(f, g, &gi) != MEMRA_STATUS_OK) continue;
            printf("  %s: %s [%d x %lld x %lld], experts through memra_matmul_experts\n", gi.name,
                   memra_format_name(gi.format), (int)gi.n_experts, (long long)gi.out_f, (long long)gi.in_f);
            for (int sk = 0; sk < 2; sk++) {
                tool_rng_seed(&c->rng, seed ^ ((uint64_t)(dv + 1) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(g + 1) << 44) ^
                                           (uint64_t)sk);
                group_case(c, f, &gi, mm, sk, js, first);
                first = 0;
            }
        }
    }
    fprintf(js, "]}");
    if (c->declined) printf("%d declined (a lane that does not take a case; not a failure)\n", c->declined);
    printf("%d passed, %d failed\n", c->passed, c->failed);
    rc = c->failed ? 1 : 0;
    ran = 1;
done:
    if (js != NULL) fclose(js);
    if (receipt != NULL && ran && model != NULL) check_write_json(c, receipt, seed, model);
    const int wrc = tool_receipt_close(&k_cmd_stub, json, receipt);
    free(model);
    free(ws);
    memra_file_close(f);
    return rc ? rc : wrc;
}
