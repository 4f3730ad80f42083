/* memra check: every op of every loaded module, on every device where it is
 * admitted, against the host reference on fresh random data.
 *
 *  - the host module on the host device is judged against check_ref.c, an
 *    independent plain f64 computation under the same quantisation;
 *  - every other (device, module) is judged against the host module run on the
 *    host device on the same inputs (buffers created on each device).
 *
 * Bit-identical ops (cvt_f16, quant_q8_1, dequant_f16, fp8_blk_to_q8_0,
 * fp8_nan_count, scale, repack_q8_0) must match byte for byte. The GEMMs are
 * judged per element by tools/judge.h's normalised error
 *
 *     e = |got - ref| / mass,   mass = sum_k |x_k * w_k|
 *
 * over the QUANTISED operands with every scale applied. The bands, with their
 * derivations, are judge.h's table: host vs check_ref JUDGE_BAND_HOST (1e-6),
 * gemm_f16 / gemm_bf16 JUDGE_BAND_F16 / _BF16 (1e-5), gemm_q8_0 / gemm_q8_0r
 * JUDGE_BAND_Q8_0 (2e-6), gemm_fp8 / gemm_fp8_blk JUDGE_BAND_FP8 (5e-4).
 * gemm_q8_0r reads the same numbers from the records (dw widened exactly from
 * f16 by repack_q8_0), so it has gemm_q8_0's contract, reference and band:
 * its weight operand is the records of the module's own repack_q8_0 (the
 * reference repack when it has none), its reference gemm_q8_0's on the Q8_0
 * blocks. Its cross-check row ("vs q8_0") compares it with the same module's
 * gemm_q8_0 on the blocks, element by element, normalised by the same mass,
 * in the same band: both sides fold the same exact integer sums, so they
 * differ by at most the two fold errors (each 2.8e-7 or less on the H200; in
 * this check's first H200 run, m up to 4096, the largest were 4.5e-8 against
 * the reference and 5.6e-8 between the two); on the host both sum in double
 * and agree to the last bit.
 *
 * What the bands still catch (k = 17408, the largest in_f of the sheets):
 * a dropped 128-block moves an element by ~sqrt(128)/k of its mass ~ 8e-4 (and
 * far more at smaller k); a wrong scale moves it by |ref| |s - 1| / mass, up to
 * ~4/sqrt(k) = 3e-2 on the largest elements; both fail every band above. The
 * injected fault (MEMRA_CHECK_INJECT_FAULT=1: the module under test gets its
 * weight's first code moved by one quantisation step in the first case of each
 * op, for gemm_q8_0r the first code of record (0, 0), which its cross-check
 * row also sees; bit-identical ops get one result element moved by one step)
 * lands at 5e-5 (f16) to 5e-3 (fp8) and must FAIL: that proves the
 * comparison can fail.
 *
 * The FP8 GEMMs also get rows with a given activation scale (DESIGN.md,
 * "Activation scales"; shape suffix " xs": a static x_scale at 60% of the
 * batch's amax / 448, so its top values saturate; " amax": producer maxima
 * x_amax at 75% (per tensor) or 75% .. 100% (per row and 128-block) of the
 * true ones), judged like the rest against a reference quantised at the same
 * scales (the judged rows' maxima taken with the rows).
 *
 * Big shapes (m > 32) are judged on 16 sampled rows, always including row 0
 * where the activation's largest value is planted, so the per-batch FP8 scale
 * of the sampled rows equals the full batch's.
 *
 * gemm_kr (Q4_K / Q5_K / Q6_K on K records) and gemm_q8_0r on a Q4_0
 * weight's records have their rows in check_kr.c (its header: reference,
 * mass, band judge_band_kr(k, tc) for gemm_kr: judge_band_fold(2 k/32, 16), 36 for Q4_K / Q5_K).
 *
 * `memra check --model FILE` (check_model.c) runs the same GEMM cases,
 * reference and bands on a model file's own bytes (tools/check.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/check.h"
#include "tools/check_ref.h"
#include "tools/judge.h"
#include "tools/tool.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"
#include "tools/tool_fmt.h"

/* The progress line of the run (per device, module and op), cleared before each row. */
static tool_progress g_check_pg;

#define SAMPLE_ROWS 16
#define TAIL 64 /* guard bytes after every output */
#define Y_SENTINEL CHECK_Y_SENTINEL


void check_print_header(void)
{
    printf("%-12s %-16s %-8s %-22s %-14s %-8s %6s  %s\n", "device", "op", "module", "shape (m n k)", "max err",
           "band", "hits", "result");
}

void check_add_row(checker *c, row *r)
{
    char err[32], band[16];
    if (r->result[0] == 'n' || strcmp(r->result, "DECLINED") == 0) snprintf(err, sizeof err, "-");
    else if (r->exact) {
        if (r->mismatches) snprintf(err, sizeof err, "%llu mismatch", (unsigned long long)r->mismatches);
        else snprintf(err, sizeof err, "exact");
    } else if (r->mismatches && !(r->err > r->band)) {
        snprintf(err, sizeof err, "%llu stray", (unsigned long long)r->mismatches);
    } else {
        snprintf(err, sizeof err, "%.3g", r->err);
    }
    if (r->result[0] == 'n') snprintf(band, sizeof band, "-");
    else if (r->exact) snprintf(band, sizeof band, "exact");
    else snprintf(band, sizeof band, "%.2g", r->band);
    tool_progress_clear(&g_check_pg);
    printf("%-12s %-16s %-8s %-22s %-14s %-8s %6llu  %s%s%s%s\n", r->device, r->op, r->module, r->shape, err, band,
           (unsigned long long)r->hits, r->result, r->injected ? " (injected fault)" : "", r->note[0] ? ": " : "",
           r->note);
    tool_stdout_flush();
    if (strcmp(r->result, "PASS") == 0) c->passed++;
    else if (strcmp(r->result, "FAIL") == 0) c->failed++;
    else if (strcmp(r->result, "DECLINED") == 0) c->declined++;
    if (c->nrows == c->caprows) {
        size_t cap = c->caprows ? 2 * c->caprows : 64;
        row *n = realloc(c->rows, cap * sizeof *n);
        if (n == NULL) return; /* the table is printed; only the JSON loses the row */
        c->rows = n;
        c->caprows = cap;
    }
    c->rows[c->nrows++] = *r;
}

row check_new_row(const checker *c, memra_op op)
{
    row r;
    memset(&r, 0, sizeof r);
    snprintf(r.device, sizeof r.device, "%s", c->devlabel);
    snprintf(r.module, sizeof r.module, "%s", c->module != NULL ? c->module : "-");
    r.op = memra_op_name(op);
    r.result = "FAIL";
    return r;
}

/* The first case of each op carries the injected fault, when asked. */
static int take_injection(checker *c, memra_op op)
{
    if (!c->inject || c->injected_op[op]) return 0;
    c->injected_op[op] = 1;
    return 1;
}

static void fail_note(row *r, const char *what, memra_status st)
{
    snprintf(r->note, sizeof r->note, "%s: %s: %.120s", what, memra_status_str(st), memra_last_error());
    r->result = "FAIL";
}

/* ---- running one op on one device ---------------------------------------------- */

typedef struct gemm_io {
    memra_op op;
    int32_t m, n, k;
    const void *x;
    size_t x_bytes;
    int x_is_f16;
    const void *w;
    size_t w_bytes;
    const float *grid;
    size_t grid_count;
    float w_scale, alpha;
    int64_t off, ldy;
    float x_scale;         /* gemm_fp8 / _blk: memra_gemm_args.x_scale */
    const float *x_amax;   /* memra_gemm_args.x_amax's values (uploaded), NULL: none */
    size_t x_amax_count;
} gemm_io;

/* y_out: (off + m + 1) * ldy floats, prefilled with Y_SENTINEL on the device. */
static memra_status exec_gemm(memra_device *dev, const char *mod, const gemm_io *g, float *y_out, const char **why)
{
    memra_buffer *bx = NULL, *bw = NULL, *bg = NULL, *by = NULL, *ba = NULL;
    const size_t ycount = (size_t)(g->off + g->m + 1) * (size_t)g->ldy;
    memra_status st = tool_upload(dev, g->x, g->x_bytes, &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, g->w, g->w_bytes, &bw);
    if (st == MEMRA_STATUS_OK && g->x_amax) st = tool_upload(dev, g->x_amax, g->x_amax_count * sizeof(float), &ba);
    if (st == MEMRA_STATUS_OK && g->grid) st = tool_upload(dev, g->grid, g->grid_count * sizeof(float), &bg);
    for (size_t e = 0; e < ycount; e++) y_out[e] = Y_SENTINEL;
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, y_out, ycount * sizeof(float), &by);
    if (st == MEMRA_STATUS_OK) {
        memra_op_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = g->m, .n = g->n, .k = g->k,
                                   .w = memra_buffer_ptr(bw), .w_scale_grid = bg ? memra_buffer_ptr(bg) : 0,
                                   .w_scale = g->w_scale, .x = memra_buffer_ptr(bx), .x_is_f16 = g->x_is_f16,
                                   .y = memra_buffer_ptr(by), .ldy = g->ldy, .y_row_offset = g->off,
                                   .alpha = g->alpha, .x_scale = g->x_scale,
                                   .x_amax = ba ? memra_buffer_ptr(ba) : 0};
        st = memra_module_call(dev, mod, g->op, &a);
        if (st == MEMRA_STATUS_DECLINED) *why = a.decline_reason ? a.decline_reason : "(no reason)";
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(by, 0, y_out, ycount * sizeof(float));
    }
    memra_buffer_destroy(bx);
    memra_buffer_destroy(bw);
    memra_buffer_destroy(bg);
    memra_buffer_destroy(by);
    memra_buffer_destroy(ba);
    return st;
}

/* An element-wise / conversion op. out gets dst_bytes + TAIL bytes. */
typedef struct xop {
    memra_op op;
    memra_format format;
    const void *src;
    size_t src_bytes;
    const void *aux;
    size_t aux_bytes;
    const void *dst_init; /* NULL: 0xA5 bytes; scale: the y values (in place) */
    size_t dst_bytes;
    int64_t rows, cols, n;
    float s;
} xop;

static memra_status exec_xop(memra_device *dev, const char *mod, const xop *o, uint8_t *out, const char **why)
{
    memra_buffer *bs = NULL, *ba = NULL, *bd = NULL;
    memra_status st = MEMRA_STATUS_OK;
    memset(out, 0xA5, o->dst_bytes + TAIL);
    if (o->dst_init) memcpy(out, o->dst_init, o->dst_bytes);
    if (o->op != MEMRA_OP_scale) st = tool_upload(dev, o->src, o->src_bytes, &bs);
    if (st == MEMRA_STATUS_OK && o->aux) st = tool_upload(dev, o->aux, o->aux_bytes, &ba);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, out, o->dst_bytes + TAIL, &bd);
    if (st == MEMRA_STATUS_OK) {
        memra_op_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.format = o->format;
        a.src = o->op == MEMRA_OP_scale ? memra_buffer_ptr(bd) : memra_buffer_ptr(bs);
        a.aux = ba ? memra_buffer_ptr(ba) : 0;
        a.dst = memra_buffer_ptr(bd);
        a.rows = o->rows;
        a.cols = o->cols;
        a.n = o->n;
        a.s = o->s;
        st = memra_module_call(dev, mod, o->op, &a);
        if (st == MEMRA_STATUS_DECLINED) *why = a.decline_reason ? a.decline_reason : "(no reason)";
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(bd, 0, out, o->dst_bytes + TAIL);
    }
    memra_buffer_destroy(bs);
    memra_buffer_destroy(ba);
    memra_buffer_destroy(bd);
    return st;
}

/* ---- the GEMMs ------------------------------------------------------------ */


/* The two MMQ GEMMs: Q8_0 weight (as blocks or as records) x q8_1 records. */
static int is_q8(memra_op op) { return op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r; }

void check_gemm_data_free(gemm_data *d)
{
    free(d->x);
    free(d->w);
    free(d->grid);
    free(d->w_abs);
    free(d->wr);
    free(d->c_ref);
    free(d->c_mass);
    free(d->c_x);
    memset(d, 0, sizeof *d);
}

/* gemm_q8_0r's weight operand: the records of d->w made by the module's own
 * repack_q8_0 where it has one (so the pair the core uses is what is judged),
 * else by ref_repack_q8_0. Records that differ from the reference fail every
 * case of this weight (repack_q8_0's own rows say where). */
static int check_make_records(checker *c, gemm_data *d)
{
    d->wr_bytes = (size_t)memra_q8_0r_bytes(d->n, d->k);
    d->wr = tool_alloc(d->wr_bytes + TAIL, 1);
    uint8_t *ref = tool_alloc(d->wr_bytes, 1);
    if (d->wr == NULL || ref == NULL) {
        free(ref);
        return -1;
    }
    ref_repack_q8_0(d->w, d->n, d->k, ref);
    if (memra_module_provides(c->dev, c->module, MEMRA_OP_repack_q8_0)) {
        xop o = {.op = MEMRA_OP_repack_q8_0, .src = d->w, .src_bytes = d->w_bytes, .dst_bytes = d->wr_bytes,
                 .rows = d->n, .cols = d->k};
        const char *why = NULL;
        memra_status st = exec_xop(c->dev, c->module, &o, d->wr, &why);
        if (st == MEMRA_STATUS_OK) {
            d->wr_differs = memcmp(d->wr, ref, d->wr_bytes) != 0;
            snprintf(d->wr_note, sizeof d->wr_note, "records by %s/repack_q8_0%s", c->module,
                     d->wr_differs ? " DIFFER from the reference repack" : "");
        } else {
            memcpy(d->wr, ref, d->wr_bytes);
            snprintf(d->wr_note, sizeof d->wr_note, "reference records (%s/repack_q8_0: %s)", c->module,
                     st == MEMRA_STATUS_DECLINED ? why : memra_status_str(st));
        }
    } else {
        memcpy(d->wr, ref, d->wr_bytes);
        snprintf(d->wr_note, sizeof d->wr_note, "reference records (%s has no repack_q8_0)", c->module);
    }
    free(ref);
    return 0;
}

int check_gemm_data_alloc(checker *c, memra_op op, int64_t n, int64_t k, int64_t mmax, gemm_data *d)
{
    memset(d, 0, sizeof *d);
    d->op = op;
    d->n = n;
    d->k = k;
    d->mmax = mmax;
    d->x = tool_alloc((size_t)(mmax * k), sizeof(float));
    size_t elems = (size_t)(n * k);
    d->w_bytes = op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 ? elems * 2 : is_q8(op) ? elems / 32 * MEMRA_Q8_0_BYTES : elems;
    d->w = tool_alloc(d->w_bytes, 1);
    d->w_abs = tool_alloc(d->w_bytes, 1);
    if (d->x == NULL || d->w == NULL || d->w_abs == NULL) return -1;
    tool_fill_x(&c->rng, d->x, (size_t)(mmax * k));
    d->x[0] = 4.0f;
    d->w_scale = 1.0f;
    return 0;
}

int check_gemm_data_finish(checker *c, gemm_data *d)
{
    const size_t elems = (size_t)(d->n * d->k);
    if (d->op == MEMRA_OP_gemm_f16 || d->op == MEMRA_OP_gemm_bf16) {
        memcpy(d->w_abs, d->w, d->w_bytes);
        judge_abs_16((uint16_t *)(void *)d->w_abs, elems);
    } else if (is_q8(d->op)) {
        memcpy(d->w_abs, d->w, d->w_bytes);
        judge_abs_q8_0(d->w_abs, elems / 32);
    } else {
        memcpy(d->w_abs, d->w, d->w_bytes);
        judge_abs_e4m3(d->w_abs, elems);
    }
    return d->op == MEMRA_OP_gemm_q8_0r ? check_make_records(c, d) : 0;
}

static int gemm_data_make(checker *c, memra_op op, int64_t n, int64_t k, int64_t mmax, gemm_data *d)
{
    if (check_gemm_data_alloc(c, op, n, k, mmax, d) != 0) return -1;
    const size_t elems = (size_t)(n * k);
    if (op == MEMRA_OP_gemm_f16) {
        uint16_t *w = (uint16_t *)(void *)d->w;
        tool_fill_f16_w(&c->rng, w, elems);
        w[0] = 0x3800; /* 0.5 */
    } else if (op == MEMRA_OP_gemm_bf16) {
        uint16_t *w = (uint16_t *)(void *)d->w;
        for (size_t e = 0; e < elems; e++) w[e] = memra_bf16_from_f32(tool_rng_signed(&c->rng, 0.01f, 0.5f));
        w[0] = 0x3F00; /* 0.5 */
    } else if (is_q8(op)) {
        tool_fill_q8_0_w(&c->rng, d->w, n, k);
        d->w[2] = 127;
    } else {
        tool_fill_e4m3_w(&c->rng, d->w, elems);
        d->w[0] = 0x48; /* 4.0 */
        if (op == MEMRA_OP_gemm_fp8) {
            d->w_scale = (float)(0.05 + 0.5 * tool_rng_unit(&c->rng));
        } else {
            d->grid_count = (size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k));
            d->grid = tool_alloc(d->grid_count, sizeof(float));
            if (d->grid == NULL) return -1;
            tool_fill_grid(&c->rng, d->grid, d->grid_count);
        }
    }
    return check_gemm_data_finish(c, d);
}

/* The module side's activation operand for rows [0, m): f32, f16 bits or q8_1 records. */
static void *check_make_x_operand(const gemm_data *d, const float *x, int64_t m, int x_is_f16, size_t *bytes)
{
    const int64_t k = d->k;
    if (is_q8(d->op)) {
        *bytes = (size_t)memra_q8_1_bytes(m, k);
        uint8_t *q = tool_alloc(*bytes, 1);
        if (q) ref_quant_q8_1(x, m, k, q);
        return q;
    }
    if (x_is_f16) {
        *bytes = (size_t)(m * k) * 2;
        uint16_t *h = tool_alloc((size_t)(m * k), 2);
        if (h)
            for (int64_t e = 0; e < m * k; e++) h[e] = memra_f16_from_f32(x[e]);
        return h;
    }
    *bytes = (size_t)(m * k) * sizeof(float);
    float *f = tool_alloc((size_t)(m * k), sizeof(float));
    if (f) memcpy(f, x, *bytes);
    return f;
}

/* |operand| in place (same layout as check_make_x_operand's result). */
static void abs_x_operand(const gemm_data *d, void *xo, size_t bytes, int x_is_f16)
{
    if (is_q8(d->op)) judge_abs_q8_1(xo, bytes / MEMRA_Q8_1_RECORD_BYTES);
    else if (x_is_f16) judge_abs_16(xo, bytes / 2);
    else judge_abs_f32(xo, bytes / sizeof(float));
}

double check_gemm_band(const checker *c, memra_op op)
{
    if (c->indep) return JUDGE_BAND_HOST;
    switch (op) {
    case MEMRA_OP_gemm_f16: return JUDGE_BAND_F16;
    case MEMRA_OP_gemm_bf16: return JUDGE_BAND_BF16;
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r: return JUDGE_BAND_Q8_0;
    default: return JUDGE_BAND_FP8; /* gemm_fp8, gemm_fp8_blk */
    }
}

/* e = |y - want| / mass over the judged rows (tools/judge.h); returns the
 * elements outside r->band and sets r->err to the largest e. */
uint64_t check_judge_rows(row *r, const float *y, int64_t off, int64_t ldy, const int64_t *rows, int64_t nrow,
                           int64_t n, const double *want, const double *mass)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s [%s] %s", r->op, r->module, r->device, r->shape);
    judge jd;
    judge_init(&jd, what, r->band, stderr);
    for (int64_t s = 0; s < nrow; s++)
        for (int64_t j = 0; j < n; j++)
            judge_elem(&jd, rows[s], j, y[(off + rows[s]) * ldy + j], want[s * n + j], mass[s * n + j]);
    r->err = jd.max_err;
    return jd.bad;
}

/* Writes outside rows [off, off + m) x cols [0, n) of a (off + m + 1) x ldy output. */
uint64_t check_count_stray(const float *y, int64_t off, int64_t m, int64_t ldy, int64_t n)
{
    judge jd;
    judge_init(&jd, "stray", 0.0, NULL);
    return judge_sentinel_f32(&jd, y, off + m + 1, ldy, off, m, n, Y_SENTINEL);
}

void check_gemm_row_result(row *r, uint64_t bad, uint64_t stray, int64_t nrow, int64_t m, const char *extra)
{
    r->mismatches = bad + stray;
    if (stray) snprintf(r->note, sizeof r->note, "%llu writes outside the output rows/cols", (unsigned long long)stray);
    if (nrow < m && !r->note[0]) snprintf(r->note, sizeof r->note, "%lld sampled rows", (long long)nrow);
    if (extra && extra[0]) {
        const size_t l = strlen(r->note);
        snprintf(r->note + l, sizeof r->note - l, "%s%s", l ? "; " : "", extra);
    }
    if (r->hits == 0) snprintf(r->note, sizeof r->note, "the ledger shows no hit of %s by %s", r->op, r->module);
    r->result = (bad == 0 && stray == 0 && r->hits > 0) ? "PASS" : "FAIL";
}

/* Run g on the module under check into y, counting its ledger hits into r.
 * 1 when it ran; 0 with r set DECLINED (note: decline_prefix + the reason) or
 * failed (fail_note with `what`). */
static int check_run_module_gemm(checker *c, const gemm_io *g, float *y, row *r, const char *decline_prefix,
                           const char *what)
{
    const char *why = NULL;
    const uint64_t h0 = memra_ledger_hits(c->dev, g->op, c->module);
    const memra_status st = exec_gemm(c->dev, c->module, g, y, &why);
    r->hits = memra_ledger_hits(c->dev, g->op, c->module) - h0;
    if (st == MEMRA_STATUS_DECLINED) {
        r->result = "DECLINED";
        snprintf(r->note, sizeof r->note, "%s%s", decline_prefix, why);
        return 0;
    }
    if (st != MEMRA_STATUS_OK) {
        fail_note(r, what, st);
        return 0;
    }
    return 1;
}

/* gemm_q8_0r's cross-check: the same module's gemm_q8_0 on the Q8_0 blocks the
 * records came from, same activation records, same output placement; y_r is
 * gemm_q8_0r's output. Judged per element by |y_r - y_blocks| / mass against
 * gemm_q8_0r's band (see the top of the file). The row carries the injected
 * fault of the case it follows: the faulted records must disagree too. */
static void cross_case(checker *c, const gemm_data *d, const gemm_io *gr, const float *y_r, const int64_t *rows,
                       int64_t nrow, const double *mass, int injected)
{
    const int64_t m = gr->m, n = d->n, off = gr->off, ldy = gr->ldy;
    row r = check_new_row(c, MEMRA_OP_gemm_q8_0r);
    snprintf(r.shape, sizeof r.shape, "%lld %lld %lld%s vs q8_0", (long long)m, (long long)n, (long long)d->k,
             off ? " off" : "");
    r.band = check_gemm_band(c, MEMRA_OP_gemm_q8_0r);
    r.injected = injected;
    r.vs = "gemm_q8_0";
    float *y = tool_alloc((size_t)((off + m + 1) * ldy), sizeof(float));
    double *want = tool_alloc((size_t)(nrow * n), sizeof(double));
    if (y == NULL || want == NULL) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    gemm_io g = *gr;
    g.op = MEMRA_OP_gemm_q8_0;
    g.w = d->w;
    g.w_bytes = d->w_bytes;
    if (!check_run_module_gemm(c, &g, y, &r, "gemm_q8_0 declined: ", "gemm_q8_0")) goto done;
    for (int64_t s = 0; s < nrow; s++)
        for (int64_t j = 0; j < n; j++) want[s * n + j] = y[(off + rows[s]) * ldy + j];
    const uint64_t bad = check_judge_rows(&r, y_r, off, ldy, rows, nrow, n, want, mass);
    check_gemm_row_result(&r, bad, check_count_stray(y, off, m, ldy, n), nrow, m, "vs this module's gemm_q8_0 on the blocks");
    if (r.hits == 0) snprintf(r.note, sizeof r.note, "the ledger shows no hit of gemm_q8_0 by %s", r.module);
done:
    check_add_row(c, &r);
    free(y);
    free(want);
}

/* The rows of an m-row case that are judged: all of them against the
 * independent reference or when m <= 2 * SAMPLE_ROWS, else SAMPLE_ROWS
 * spread over [0, m) starting with row 0. rows has room for
 * check_judged_count(c, m). */
int64_t check_judged_count(const checker *c, int64_t m) { return (c->indep || m <= 2 * SAMPLE_ROWS) ? m : SAMPLE_ROWS; }

void check_judged_rows(int64_t m, int64_t nrow, int64_t *rows)
{
    for (int64_t s = 0; s < nrow; s++) rows[s] = nrow == m ? s : s * (m - 1) / (SAMPLE_ROWS - 1);
}

/* Keep ref and mass as d's cached reference (nothing kept when out of memory). */
static void cache_reference(const checker *c, gemm_data *d, const float *xsub, int64_t nrow, int x_is_f16,
                            float alpha, const double *ref, const double *mass)
{
    const size_t nr = (size_t)(nrow * d->n), nx = (size_t)(nrow * d->k);
    free(d->c_ref);
    free(d->c_mass);
    free(d->c_x);
    d->c_ref = malloc(nr * sizeof(double));
    d->c_mass = malloc(nr * sizeof(double));
    d->c_x = malloc(nx * sizeof(float));
    if (d->c_ref == NULL || d->c_mass == NULL || d->c_x == NULL) {
        free(d->c_ref);
        free(d->c_mass);
        free(d->c_x);
        d->c_ref = d->c_mass = NULL;
        d->c_x = NULL;
        return;
    }
    memcpy(d->c_ref, ref, nr * sizeof(double));
    memcpy(d->c_mass, mass, nr * sizeof(double));
    memcpy(d->c_x, xsub, nx * sizeof(float));
    d->c_nrow = nrow;
    d->c_f16 = x_is_f16;
    d->c_indep = c->indep;
    d->c_alpha = alpha;
    d->c_given = d->case_amax != NULL || d->case_xs != d->x_scale;
}

int check_gemm_reference(checker *c, gemm_data *d, const float *xsub, int64_t nrow, int x_is_f16, float alpha,
                         double *ref, double *mass, row *r)
{
    const memra_op op = d->op;
    const int64_t n = d->n, k = d->k;
    const int given = d->case_amax != NULL || d->case_xs != d->x_scale; /* a case's own scales: never cached */
    if (d->c_ref != NULL && !given && !d->c_given && d->c_nrow == nrow && d->c_f16 == x_is_f16 &&
        d->c_indep == c->indep && d->c_alpha == alpha && memcmp(d->c_x, xsub, (size_t)(nrow * k) * sizeof(float)) == 0) {
        memcpy(ref, d->c_ref, (size_t)(nrow * n) * sizeof(double));
        memcpy(mass, d->c_mass, (size_t)(nrow * n) * sizeof(double));
        return 0;
    }
    /* gemm_q8_0r is judged by gemm_q8_0's reference on the Q8_0 blocks: the
     * records must compute exactly what the blocks do */
    const memra_op ref_op = op == MEMRA_OP_gemm_q8_0r ? MEMRA_OP_gemm_q8_0 : op;
    size_t sb = 0;
    void *xs_op = check_make_x_operand(d, xsub, nrow, x_is_f16, &sb), *xs_abs = NULL;
    float *yr = NULL, *ym = NULL, *gabs = NULL;
    int rc = -1;
    if (xs_op == NULL) {
        snprintf(r->note, sizeof r->note, "out of host memory");
        goto done;
    }
    if (c->indep) {
        ref_gemm rg = {.op = ref_op, .m = nrow, .n = n, .k = k, .x = xsub, .w = d->w, .w_scale = d->w_scale,
                       .grid = d->grid, .alpha = alpha, .x_scale = d->case_xs, .x_amax = d->case_amax};
        if (x_is_f16) rg.xh = xs_op;
        if (is_q8(op)) rg.xq = xs_op;
        ref_gemm_run(&rg, ref, mass);
        cache_reference(c, d, xsub, nrow, x_is_f16, alpha, ref, mass);
        rc = 0;
        goto done;
    }
    /* The host module on the host device: the value, then the mass as the
     * same product of absolute operands (every quantiser here is symmetric
     * in sign and keeps the amax, so |q(x)| = q(|x|)). */
    xs_abs = check_make_x_operand(d, xsub, nrow, x_is_f16, &sb);
    yr = tool_alloc((size_t)((nrow + 1) * n), sizeof(float));
    ym = tool_alloc((size_t)((nrow + 1) * n), sizeof(float));
    if (d->grid) gabs = tool_alloc(d->grid_count, sizeof(float));
    if (xs_abs == NULL || yr == NULL || ym == NULL || (d->grid && gabs == NULL)) {
        snprintf(r->note, sizeof r->note, "out of host memory");
        goto done;
    }
    abs_x_operand(d, xs_abs, sb, x_is_f16);
    for (size_t e = 0; gabs && e < d->grid_count; e++) gabs[e] = fabsf(d->grid[e]);
    gemm_io h = {.op = ref_op, .m = (int32_t)nrow, .n = (int32_t)n, .k = (int32_t)k, .x = xs_op, .x_bytes = sb,
                 .x_is_f16 = x_is_f16, .w = d->w, .w_bytes = d->w_bytes, .grid = d->grid,
                 .grid_count = d->grid_count, .w_scale = d->w_scale, .alpha = alpha, .off = 0, .ldy = n,
                 .x_scale = d->case_xs, .x_amax = d->case_amax,
                 .x_amax_count = op == MEMRA_OP_gemm_fp8 ? 1 : (size_t)(((k + 127) / 128) * nrow)};
    /* the mass: the same scales on |x| (e4m3 is symmetric, so q(|x|) = |q(x)|, saturated ones too) */
    const char *hwhy = NULL;
    memra_status st = exec_gemm(c->host, "host", &h, yr, &hwhy);
    if (st == MEMRA_STATUS_OK) {
        h.x = xs_abs;
        h.w = d->w_abs;
        h.grid = gabs;
        h.w_scale = fabsf(d->w_scale);
        h.alpha = fabsf(alpha);
        st = exec_gemm(c->host, "host", &h, ym, &hwhy);
    }
    if (st != MEMRA_STATUS_OK) {
        fail_note(r, "host reference", st);
        goto done;
    }
    for (int64_t e = 0; e < nrow * n; e++) {
        ref[e] = yr[e];
        mass[e] = ym[e];
    }
    cache_reference(c, d, xsub, nrow, x_is_f16, alpha, ref, mass);
    rc = 0;
done:
    free(xs_op);
    free(xs_abs);
    free(yr);
    free(ym);
    free(gabs);
    return rc;
}

/* Flip the sign of weight element (0, col) in the op's operand layout: f16 /
 * bf16 bits, e4m3 codes, Q8_0 blocks, or Q8_0 records of `rows` rows. */
static void flip_sign(memra_op op, uint8_t *w, int64_t rows, int64_t col)
{
    uint8_t *q;
    if (op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16) {
        w[2 * col + 1] ^= 0x80u;
        return;
    }
    if (op == MEMRA_OP_gemm_fp8 || op == MEMRA_OP_gemm_fp8_blk) {
        w[col] ^= 0x80u;
        return;
    }
    if (op == MEMRA_OP_gemm_q8_0) q = w + (col / 32) * MEMRA_Q8_0_BYTES + 2 + col % 32;
    else q = w + (size_t)(col / 128) * (size_t)rows * MEMRA_Q8_1_RECORD_BYTES + 16 + col % 128;
    const int v = (int8_t)*q;
    *q = (uint8_t)(int8_t)(v == -128 ? 127 : -v);
}

/* The given activation scales of an FP8 case (DESIGN.md, "Activation
 * scales"), from the batch's own maxima over rows [0, m): variant 3 a static
 * scale at 60% of the batch's own amax / 448 (its top values saturate);
 * variant 4 producer maxima at 75% (per tensor) or 75% .. 100% (each row's
 * 128-block, [ceil(k/128) x m], row fastest) of the true ones. *amax: NULL, or
 * malloc'd (*count floats). */
static void given_scales(checker *c, const gemm_data *d, int64_t m, int variant, float *xs, float **amax,
                         size_t *count)
{
    const int64_t k = d->k, kb = (k + 127) / 128;
    float t = 0.0f;
    for (int64_t e = 0; e < m * k; e++) t = fmaxf(t, fabsf(d->x[e]));
    *xs = variant == 3 ? t / 448.0f * 0.6f : d->x_scale;
    *amax = NULL;
    *count = 0;
    if (variant != 4) return;
    *count = d->op == MEMRA_OP_gemm_fp8 ? 1 : (size_t)(kb * m);
    float *a = tool_alloc(*count, sizeof(float));
    if (a == NULL) return;
    if (d->op == MEMRA_OP_gemm_fp8) {
        a[0] = t * 0.75f;
    } else {
        for (int64_t i = 0; i < m; i++)
            for (int64_t b = 0; b < kb; b++) {
                float bm = 0.0f;
                for (int64_t e = b * 128; e < k && e < b * 128 + 128; e++) bm = fmaxf(bm, fabsf(d->x[i * k + e]));
                a[b * m + i] = bm * (float)(0.75 + 0.25 * tool_rng_unit(&c->rng));
            }
    }
    *amax = a;
}

/* variant 0: plain; 1: row offset 2, ldy n+3, alpha 0.75; 2: f16 activation;
 * 3: a static activation scale (x_scale); 4: producer maxima (x_amax, over
 * x_scale) (gemm_fp8 and gemm_fp8_blk). */
void check_gemm_case(checker *c, gemm_data *d, int64_t m, int variant)
{
    const memra_op op = d->op;
    const int64_t n = d->n, k = d->k;
    row r = check_new_row(c, op);
    const int x_is_f16 = variant == 2;
    const int64_t off = variant == 1 ? 2 : 0, ldy = variant == 1 ? n + 3 : n;
    const float alpha = variant == 1 ? 0.75f : 1.0f;
    snprintf(r.shape, sizeof r.shape, "%lld %lld %lld%s", (long long)m, (long long)n, (long long)k,
             variant == 1 ? " off" : variant == 2 ? " x16" : variant == 3 ? " xs" : variant == 4 ? " amax" : "");
    float xs = d->x_scale, *amax = NULL, *amax_sub = NULL;
    size_t amax_count = 0;
    if (variant >= 3) given_scales(c, d, m, variant, &xs, &amax, &amax_count);
    r.band = check_gemm_band(c, op);
    r.injected = take_injection(c, op);
    /* the module's weight operand: gemm_q8_0r reads the records, the rest the bytes */
    const int recs = op == MEMRA_OP_gemm_q8_0r;
    uint8_t *const wop = recs ? d->wr : d->w;
    const size_t wop_bytes = recs ? d->wr_bytes : d->w_bytes;

    size_t xb = 0;
    void *xo = check_make_x_operand(d, d->x, m, x_is_f16, &xb);
    float *y = tool_alloc((size_t)((off + m + 1) * ldy), sizeof(float));
    uint8_t *wmod = r.injected ? tool_alloc(wop_bytes, 1) : wop;
    const int64_t nrow = check_judged_count(c, m);
    int64_t *rows = tool_alloc((size_t)nrow, sizeof *rows);
    double *ref = tool_alloc((size_t)(nrow * n), sizeof(double));
    double *mass = tool_alloc((size_t)(nrow * n), sizeof(double));
    float *xsub = tool_alloc((size_t)(nrow * k), sizeof(float));
    int judged = 0;
    if (amax_count) amax_sub = tool_alloc(amax_count, sizeof(float)); /* at most the full one */
    if (xo == NULL || y == NULL || wmod == NULL || rows == NULL || ref == NULL || mass == NULL || xsub == NULL ||
        (amax_count && (amax == NULL || amax_sub == NULL))) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    if (r.injected) {
        memcpy(wmod, wop, wop_bytes);
        if (d->inj_sign) flip_sign(op, wmod, n, d->inj_col); /* file data: the largest |w| of row 0 */
        else if (op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16) wmod[0] ^= 1; /* 0.5 -> next f16 / bf16 */
        else if (op == MEMRA_OP_gemm_q8_0) wmod[2] = 126;   /* 127 -> 126 */
        else if (recs) wmod[16] = 126;                      /* record (0, 0), code 0: 127 -> 126 */
        else wmod[0] = 0x49;                                /* 4.0 -> 4.5 */
    }
    gemm_io g = {.op = op, .m = (int32_t)m, .n = (int32_t)n, .k = (int32_t)k, .x = xo, .x_bytes = xb,
                 .x_is_f16 = x_is_f16, .w = wmod, .w_bytes = wop_bytes, .grid = d->grid,
                 .grid_count = d->grid_count, .w_scale = d->w_scale, .alpha = alpha, .off = off, .ldy = ldy,
                 .x_scale = xs, .x_amax = amax, .x_amax_count = amax_count};
    if (!check_run_module_gemm(c, &g, y, &r, "", "module")) goto done;
    check_judged_rows(m, nrow, rows);
    for (int64_t s = 0; s < nrow; s++) memcpy(xsub + s * k, d->x + rows[s] * k, (size_t)k * sizeof(float));
    if (amax_sub) { /* the judged rows' maxima, in the layout of nrow rows */
        if (op == MEMRA_OP_gemm_fp8) amax_sub[0] = amax[0];
        else
            for (int64_t b = 0; b < (k + 127) / 128; b++)
                for (int64_t s = 0; s < nrow; s++) amax_sub[b * nrow + s] = amax[b * m + rows[s]];
    }
    d->case_xs = xs;
    d->case_amax = amax_sub;
    const int rc = check_gemm_reference(c, d, xsub, nrow, x_is_f16, alpha, ref, mass, &r);
    d->case_xs = d->x_scale;
    d->case_amax = NULL;
    if (rc != 0) goto done;
    const uint64_t bad = check_judge_rows(&r, y, off, ldy, rows, nrow, n, ref, mass);
    check_gemm_row_result(&r, bad + (recs && d->wr_differs), check_count_stray(y, off, m, ldy, n), nrow, m,
                    recs ? d->wr_note : NULL);
    judged = 1;
done:
    check_add_row(c, &r);
    if (judged && recs && memra_module_provides(c->dev, c->module, MEMRA_OP_gemm_q8_0))
        cross_case(c, d, &g, y, rows, nrow, mass, r.injected);
    free(xo);
    free(y);
    if (wmod != wop) free(wmod);
    free(rows);
    free(ref);
    free(mass);
    free(xsub);
    free(amax);
    free(amax_sub);
}

/* ---- bit-identical ops -------------------------------------------------------- */

/* Run o on the module under test and on the reference (check_ref via ref_fn,
 * or the host module), compare dst bytes and the guard tail. */
static void exact_case(checker *c, const xop *o, const char *shape, size_t elem,
                       void (*ref_fn)(const xop *o, uint8_t *out))
{
    row r = check_new_row(c, o->op);
    r.exact = 1;
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    r.injected = take_injection(c, o->op);
    uint8_t *got = tool_alloc(o->dst_bytes + TAIL, 1), *ref = tool_alloc(o->dst_bytes + TAIL, 1);
    if (got == NULL || ref == NULL) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    const char *why = NULL;
    uint64_t h0 = memra_ledger_hits(c->dev, o->op, c->module);
    memra_status st = exec_xop(c->dev, c->module, o, got, &why);
    r.hits = memra_ledger_hits(c->dev, o->op, c->module) - h0;
    if (st == MEMRA_STATUS_DECLINED) {
        r.result = "DECLINED";
        snprintf(r.note, sizeof r.note, "%s", why);
        goto done;
    }
    if (st != MEMRA_STATUS_OK) {
        fail_note(&r, "module", st);
        goto done;
    }
    if (r.injected) { /* one step of the first result element */
        if (o->op == MEMRA_OP_quant_q8_1 || o->op == MEMRA_OP_repack_q8_0) /* record 0, code 0 */
            got[16] = (uint8_t)((int8_t)got[16] == 127 ? 126 : (int8_t)got[16] + 1);
        else if (o->op == MEMRA_OP_fp8_blk_to_q8_0) got[2] = (uint8_t)((int8_t)got[2] == 127 ? 126 : (int8_t)got[2] + 1);
        else got[0] = (uint8_t)(got[0] + 1);
    }
    if (c->indep) {
        memset(ref, 0xA5, o->dst_bytes + TAIL);
        if (o->dst_init) memcpy(ref, o->dst_init, o->dst_bytes);
        ref_fn(o, ref);
    } else {
        st = exec_xop(c->host, "host", o, ref, &why);
        if (st != MEMRA_STATUS_OK) {
            fail_note(&r, "host reference", st);
            goto done;
        }
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s [%s]", r.op, r.module, r.device);
    judge jd;
    judge_init(&jd, what, 0.0, stderr);
    const uint64_t bad = judge_bytes(&jd, got, ref, o->dst_bytes / elem * elem, elem);
    const uint64_t stray = judge_tail(&jd, got + o->dst_bytes, TAIL, 0xA5);
    r.mismatches = bad + stray;
    if (stray) snprintf(r.note, sizeof r.note, "wrote past the end of its output");
    if (r.hits == 0) snprintf(r.note, sizeof r.note, "the ledger shows no hit of %s by %s", r.op, r.module);
    r.result = (bad == 0 && stray == 0 && r.hits > 0) ? "PASS" : "FAIL";
done:
    check_add_row(c, &r);
    free(got);
    free(ref);
}

static void ref_cvt(const xop *o, uint8_t *out)
{
    const float *s = o->src;
    for (int64_t i = 0; i < o->n; i++) {
        uint16_t h = ref_f16_bits(s[i]);
        memcpy(out + 2 * i, &h, 2);
    }
}
static void ref_quant(const xop *o, uint8_t *out) { ref_quant_q8_1(o->src, o->rows, o->cols, out); }
/* dequant_f16 of the blocks (src; dequant_kr_f16: aux, the GGUF blocks its K records were repacked from) */
static void ref_dequant(const xop *o, uint8_t *out)
{
    uint16_t *h = tool_alloc((size_t)(o->rows * o->cols), 2);
    if (h == NULL) return;
    ref_dequant_f16(o->format, o->op == MEMRA_OP_dequant_kr_f16 ? o->aux : o->src, o->rows, o->cols, h);
    memcpy(out, h, o->dst_bytes);
    free(h);
}
static void ref_reencode(const xop *o, uint8_t *out) { ref_fp8_blk_to_q8_0(o->src, o->aux, o->rows, o->cols, out); }
static void ref_repack(const xop *o, uint8_t *out) { ref_repack_q8_0(o->src, o->rows, o->cols, out); }
static void ref_nan(const xop *o, uint64_t *total)
{
    const uint8_t *b = o->src;
    for (int64_t i = 0; i < o->n; i++) *total += (b[i] & 0x7F) == 0x7F;
}
static void ref_nan_count(const xop *o, uint8_t *out)
{
    uint64_t t;
    memcpy(&t, out, sizeof t);
    ref_nan(o, &t);
    memcpy(out, &t, sizeof t);
}
static void ref_scale(const xop *o, uint8_t *out)
{
    for (int64_t i = 0; i < o->n; i++) {
        float v;
        memcpy(&v, out + 4 * i, 4);
        v = (float)((double)v * (double)o->s); /* one rounding of the exact product */
        memcpy(out + 4 * i, &v, 4);
    }
}

static void case_cvt(checker *c, int64_t n)
{
    float *x = tool_alloc((size_t)n, sizeof(float));
    if (x == NULL) return;
    for (int64_t i = 0; i < n; i++) { /* magnitudes 2^-26 .. 2^17: f16 subnormals, ties, overflow */
        double e = -26.0 + 43.0 * tool_rng_unit(&c->rng);
        x[i] = (float)(ldexp(1.0 + tool_rng_unit(&c->rng), (int)floor(e)) * ((tool_rng_u64(&c->rng) & 1) ? -1 : 1));
        if (i % 7 == 3) { /* an exact f16 tie: 11 significant bits + 1 */
            float t = (float)ldexp(2049.0 + 2.0 * (double)(tool_rng_u64(&c->rng) % 1000), -12);
            x[i] = t;
        }
    }
    char shape[48];
    snprintf(shape, sizeof shape, "n=%lld", (long long)n);
    xop o = {.op = MEMRA_OP_cvt_f16, .src = x, .src_bytes = (size_t)n * 4, .dst_bytes = (size_t)n * 2, .n = n};
    exact_case(c, &o, shape, 2, ref_cvt);
    free(x);
}

static void case_quant(checker *c, int64_t m, int64_t k)
{
    float *x = tool_alloc((size_t)(m * k), sizeof(float));
    if (x == NULL) return;
    tool_fill_x(&c->rng, x, (size_t)(m * k));
    char shape[48];
    snprintf(shape, sizeof shape, "%lld - %lld", (long long)m, (long long)k);
    xop o = {.op = MEMRA_OP_quant_q8_1, .src = x, .src_bytes = (size_t)(m * k) * 4,
             .dst_bytes = (size_t)memra_q8_1_bytes(m, k), .rows = m, .cols = k};
    exact_case(c, &o, shape, MEMRA_Q8_1_RECORD_BYTES, ref_quant);
    free(x);
}

/* rows x cols of random blocks of format f through dequant_f16, or (kr) the K-quant blocks repacked as K
 * records through dequant_kr_f16, judged against dequant_f16's reference on the same blocks */
static void case_dequant(checker *c, memra_format f, int64_t rows, int64_t cols, int kr)
{
    const int bv = memra_format_block_values(f), bb = memra_format_block_bytes(f);
    const int64_t nb = rows * (cols / bv);
    uint8_t *w = tool_alloc((size_t)(nb * bb), 1);
    if (w == NULL) return;
    for (int64_t i = 0; i < nb * bb; i++) w[i] = (uint8_t)tool_rng_u64(&c->rng);
    for (int64_t b = 0; b < nb; b++) { /* finite f16 scales, some tiny (f16 subnormal results) */
        uint8_t *blk = w + b * bb;
        const int doff = f == MEMRA_FORMAT_Q6_K ? 208 : 0;
        const int nsc = (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K) ? 2 : 1;
        for (int s = 0; s < nsc; s++) {
            double mag = ldexp(1.0 + tool_rng_unit(&c->rng), -20 + (int)(tool_rng_u64(&c->rng) % 16));
            uint16_t h = memra_f16_from_f32((float)((tool_rng_u64(&c->rng) & 1) ? -mag : mag));
            blk[doff + 2 * s] = (uint8_t)(h & 0xFF);
            blk[doff + 2 * s + 1] = (uint8_t)(h >> 8);
        }
    }
    char shape[48];
    snprintf(shape, sizeof shape, "%s %lldx%lld", memra_format_name(f), (long long)rows, (long long)cols);
    xop o = {.op = MEMRA_OP_dequant_f16, .format = f, .src = w, .src_bytes = (size_t)(nb * bb),
             .dst_bytes = (size_t)(rows * cols) * 2, .rows = rows, .cols = cols};
    if (!kr) exact_case(c, &o, shape, 2, ref_dequant);
    const int q8 = f == MEMRA_FORMAT_Q8_0; /* its records: ref_repack_q8_0's, gemm_q8_0r's operand */
    const uint64_t kb = !kr ? 0 : q8 ? memra_q8_0r_bytes(rows, cols) : memra_kr_bytes(f, rows, cols);
    uint8_t *rec = kb ? tool_alloc((size_t)kb, 1) : NULL;
    if (rec != NULL && q8) ref_repack_q8_0(w, rows, cols, rec);
    if (rec != NULL && (q8 || memra_kr_repack(f, w, rows, cols, rec) == 0)) {
        xop ok = {.op = MEMRA_OP_dequant_kr_f16, .format = f, .src = rec, .src_bytes = (size_t)kb, .aux = w,
                  .aux_bytes = (size_t)(nb * bb), .dst_bytes = (size_t)(rows * cols) * 2, .rows = rows, .cols = cols};
        exact_case(c, &ok, shape, 2, ref_dequant);
    }
    free(rec);
    free(w);
}

static void case_reencode(checker *c, int64_t rows, int64_t cols)
{
    const size_t gn = (size_t)(memra_fp8_grid_rows(rows) * memra_fp8_grid_cols(cols));
    uint8_t *w = tool_alloc((size_t)(rows * cols), 1);
    float *g = tool_alloc(gn, sizeof(float));
    if (w && g) {
        tool_fill_e4m3_w(&c->rng, w, (size_t)(rows * cols));
        tool_fill_grid(&c->rng, g, gn);
        char shape[48];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
        xop o = {.op = MEMRA_OP_fp8_blk_to_q8_0, .src = w, .src_bytes = (size_t)(rows * cols), .aux = g,
                 .aux_bytes = gn * sizeof(float), .dst_bytes = (size_t)(rows * (cols / 32)) * MEMRA_Q8_0_BYTES,
                 .rows = rows, .cols = cols};
        exact_case(c, &o, shape, MEMRA_Q8_0_BYTES, ref_reencode);
    }
    free(w);
    free(g);
}

/* Q8_0 blocks as the FP8 slab makes them (fp8_blk_to_q8_0: d = amax/127 of
 * e4m3 x grid, so scales from ~1e-8 to ~1, many f16 subnormals) and beyond:
 * f16 scales with exponents 2^-26 .. 2^3 (subnormals, the smallest and the
 * largest subnormal, the smallest normal, 65504), one in sixteen negative;
 * codes are any non-zero byte (-128 too: repacking copies bytes). Nothing is
 * zero, so a record left as padding (d = 0, codes 0) cannot pass for data. */
static void case_repack(checker *c, int64_t rows, int64_t cols)
{
    const int64_t nb = rows * (cols / 32);
    uint8_t *w = tool_alloc((size_t)nb * MEMRA_Q8_0_BYTES, 1);
    if (w == NULL) return;
    static const uint16_t planted[] = {0x0001, 0x03FF, 0x0400, 0x7BFF, 0x8001};
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = w + (size_t)b * MEMRA_Q8_0_BYTES;
        const uint64_t u = tool_rng_u64(&c->rng);
        uint16_t h;
        if ((size_t)b < sizeof planted / sizeof planted[0]) {
            h = planted[b];
        } else {
            const double mag = ldexp(1.0 + tool_rng_unit(&c->rng), -26 + (int)(u % 30));
            h = memra_f16_from_f32((float)mag);
            if ((h & 0x7FFFu) == 0) h = 1;
            if ((u >> 8) % 16 == 0) h |= 0x8000u;
        }
        blk[0] = (uint8_t)(h & 0xFF);
        blk[1] = (uint8_t)(h >> 8);
        for (int l = 0; l < 32; l++) {
            uint8_t q = (uint8_t)tool_rng_u64(&c->rng);
            blk[2 + l] = q ? q : 1;
        }
    }
    char shape[48];
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
    xop o = {.op = MEMRA_OP_repack_q8_0, .src = w, .src_bytes = (size_t)nb * MEMRA_Q8_0_BYTES,
             .dst_bytes = (size_t)memra_q8_0r_bytes(rows, cols), .rows = rows, .cols = cols};
    exact_case(c, &o, shape, MEMRA_Q8_1_RECORD_BYTES, ref_repack);
    free(w);
}

static void case_nan(checker *c, int64_t n)
{
    uint8_t *w = tool_alloc((size_t)n, 1);
    if (w == NULL) return;
    for (int64_t i = 0; i < n; i++) w[i] = (uint8_t)tool_rng_u64(&c->rng); /* all 256 codes: NaN is the point */
    w[n - 1] = 0xFF;
    uint64_t init = 5; /* the op adds to what is there */
    char shape[48];
    snprintf(shape, sizeof shape, "bytes=%lld", (long long)n);
    xop o = {.op = MEMRA_OP_fp8_nan_count, .src = w, .src_bytes = (size_t)n, .dst_init = &init,
             .dst_bytes = sizeof init, .n = n};
    exact_case(c, &o, shape, 8, ref_nan_count);
    free(w);
}

static void case_scale(checker *c, int64_t n)
{
    float *y = tool_alloc((size_t)n, sizeof(float));
    if (y == NULL) return;
    tool_fill_x(&c->rng, y, (size_t)n);
    float s = tool_rng_signed(&c->rng, 0.3f, 3.0f);
    char shape[48];
    snprintf(shape, sizeof shape, "n=%lld", (long long)n);
    xop o = {.op = MEMRA_OP_scale, .dst_init = y, .dst_bytes = (size_t)n * 4, .n = n, .s = s};
    exact_case(c, &o, shape, 4, ref_scale);
    free(y);
}

/* ---- the case table --------------------------------------------------------- */

typedef struct nk {
    int64_t n, k; /* out_f, in_f */
} nk;

static const nk k_awkward[] = {{40, 64}, {129, 160}, {64, 256}, {33, 96}, {200, 352}};
static const int64_t k_awkward_m[] = {1, 15, 16, 17};
static const nk k_sheets[] = {{12288, 5120}, {1024, 5120}, {5120, 6144}, {17408, 5120}, {5120, 17408},
                              {5120, 5120},  {2048, 2048}, {1024, 2048}, {6144, 2048},  {2048, 6144}};
static const int64_t k_sheet_m[] = {1, 16, 17, 512};
/* The MMQ GEMMs on a GPU: the floor serves prefill from one token to a long
 * prompt, and their tiles switch at 16, 32, 64 and 128 tokens; two extra
 * shapes have in_f not a multiple of 512 (128-column records padded: 5152 =
 * 40 x 128 + 32) and out_f not a multiple of 128. */
static const int64_t k_q8_m[] = {1, 15, 16, 17, 512, 4096};
static const nk k_q8_extra[] = {{1000, 5152}, {2100, 2080}};

static void check_gemm_op(checker *c, memra_op op)
{
    const size_t nawk = c->quick ? 2 : sizeof k_awkward / sizeof k_awkward[0];
    for (size_t s = 0; s < nawk; s++) {
        gemm_data d;
        if (gemm_data_make(c, op, k_awkward[s].n, k_awkward[s].k, 17, &d) == 0) {
            for (size_t i = 0; i < sizeof k_awkward_m / sizeof k_awkward_m[0]; i++) {
                if (c->quick && (k_awkward_m[i] == 15 || k_awkward_m[i] == 16)) continue;
                check_gemm_case(c, &d, k_awkward_m[i], 0);
            }
            if (s == 1) {
                check_gemm_case(c, &d, 17, 1);
                if (op == MEMRA_OP_gemm_f16) check_gemm_case(c, &d, 17, 2);
            }
            if (op == MEMRA_OP_gemm_fp8 || op == MEMRA_OP_gemm_fp8_blk) /* given scales: static, producer amax */
                for (int v = 3; v <= 4; v++) check_gemm_case(c, &d, s == 0 ? 1 : 17, v);
        }
        check_gemm_data_free(&d);
    }
    if (!c->gpu) return;
    const int q8 = is_q8(op);
    const int64_t *ms = q8 ? k_q8_m : k_sheet_m;
    const size_t nm = q8 ? sizeof k_q8_m / sizeof k_q8_m[0] : sizeof k_sheet_m / sizeof k_sheet_m[0];
    const size_t nsheet = sizeof k_sheets / sizeof k_sheets[0];
    const size_t nextra = q8 ? sizeof k_q8_extra / sizeof k_q8_extra[0] : 0;
    const size_t first = c->quick ? 6 : 0; /* quick: the 1p7b sheet (and the extra shapes) at m = 17 */
    for (size_t s = first; s < nsheet + nextra; s++) {
        const nk sh = s < nsheet ? k_sheets[s] : k_q8_extra[s - nsheet];
        gemm_data d;
        if (gemm_data_make(c, op, sh.n, sh.k, c->quick ? 17 : ms[nm - 1], &d) == 0) {
            for (size_t i = 0; i < nm; i++)
                if (!c->quick || ms[i] == 17) check_gemm_case(c, &d, ms[i], 0);
            /* the one-pass quantisers on one sheet shape (sampled rows at m = 512) */
            if ((s == first || s == nsheet - 1) && (op == MEMRA_OP_gemm_fp8 || op == MEMRA_OP_gemm_fp8_blk))
                for (int v = 3; v <= 4; v++) check_gemm_case(c, &d, c->quick ? 17 : 512, v);
        }
        check_gemm_data_free(&d);
    }
}

/* ---- gemm_experts: the grouped op, expert by expert -------------------------------
 *
 * XE experts of fresh random weights (each its own gemm_data), routed
 * unevenly and unsorted: expert 0 no rows, expert 1 one row, expert 2 most of
 * them, the others two each, and two rows with ids outside [0, XE) that must
 * stay unwritten. Every routed row is judged against the dense reference of
 * its own expert over that expert's rows (check_gemm_reference: the per-batch
 * FP8 scale is the expert's, as the contract says), in the dense lane's band;
 * skipped rows, padding and the rows around stay sentinels. */
#define XE CHECK_XE

void check_experts_route(checker *c, int64_t routed, int64_t *cnt, int32_t *ids, int64_t *where, int64_t *base)
{
    const int64_t m = routed + 2;
    cnt[0] = 0, cnt[1] = 1;
    for (int e = 3; e < XE; e++) cnt[e] = 2;
    cnt[2] = routed - 1 - 2 * (XE - 3);
    for (int64_t i = 0, p = 0; i < routed; p++)
        for (int64_t j = 0; j < cnt[p] && i < routed; j++) ids[i++] = (int32_t)p;
    ids[routed] = -1, ids[routed + 1] = XE;
    for (int64_t i = m - 1; i > 0; i--) {
        const int64_t j = (int64_t)(tool_rng_u64(&c->rng) % (uint64_t)(i + 1));
        const int32_t t = ids[i];
        ids[i] = ids[j], ids[j] = t;
    }
    int64_t seen[XE] = {0};
    base[0] = 0;
    for (int e = 0; e < XE; e++) base[e + 1] = base[e] + cnt[e];
    for (int64_t i = 0; i < m; i++)
        if (ids[i] >= 0 && ids[i] < XE) where[base[ids[i]] + seen[ids[i]]++] = i;
}

memra_status check_experts_call(checker *c, row *r, memra_op_args *a, memra_buffer *by, float *y, size_t ycount)
{
    const uint64_t h0 = memra_ledger_hits(c->dev, MEMRA_OP_gemm_experts, c->module);
    memra_status st = memra_module_call(c->dev, c->module, MEMRA_OP_gemm_experts, a);
    r->hits = memra_ledger_hits(c->dev, MEMRA_OP_gemm_experts, c->module) - h0;
    if (st == MEMRA_STATUS_DECLINED) {
        r->result = "DECLINED";
        snprintf(r->note, sizeof r->note, "%s", a->decline_reason ? a->decline_reason : "(no reason)");
        return st;
    }
    if (st == MEMRA_STATUS_OK) st = memra_buffer_read(by, 0, y, ycount * sizeof(float));
    if (st != MEMRA_STATUS_OK) fail_note(r, "gemm_experts", st);
    return st;
}

static uint64_t check_experts_stray(const float *y, int64_t off, int64_t m, int64_t ldy, int64_t n, const int32_t *ids)
{
    uint64_t stray = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < ldy; j++)
            stray += (j >= n || ids[i] < 0 || ids[i] >= XE) && y[(off + i) * ldy + j] != Y_SENTINEL;
    for (int64_t j = 0; j < ldy; j++) stray += (y[j] != Y_SENTINEL) + (y[(off + m) * ldy + j] != Y_SENTINEL);
    return stray;
}

memra_status check_experts_inputs(checker *c, row *r, const void *wt, size_t wt_bytes, const int32_t *ids, int64_t m,
                                  const void *x, size_t xbytes, float *y, size_t ycount, memra_buffer **bt,
                                  memra_buffer **bi, memra_buffer **bx, memra_buffer **by)
{
    for (size_t e = 0; e < ycount; e++) y[e] = Y_SENTINEL;
    memra_status st = tool_upload(c->dev, wt, wt_bytes, bt);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, ids, (size_t)m * sizeof *ids, bi);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, x, xbytes, bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, y, ycount * sizeof(float), by);
    if (st != MEMRA_STATUS_OK)
        snprintf(r->note, sizeof r->note, "gemm_experts inputs: %s: %.120s", memra_status_str(st), memra_last_error());
    return st;
}

void check_experts_result(row *r, uint64_t bad, const float *y, int64_t off, int64_t m, int64_t ldy, int64_t n,
                          const int32_t *ids)
{
    check_gemm_row_result(r, bad, check_experts_stray(y, off, m, ldy, n, ids), m, m,
                          "experts 0 / 1 / 2 get 0 / 1 / most rows; 2 rows skipped");
}

uint64_t check_experts_judge(row *r, const float *y, int64_t off, int64_t ldy, const int64_t *rows, int64_t cnt,
                             int64_t n, const double *ref, const double *mass)
{
    const double keep = r->err;
    const uint64_t bad = check_judge_rows(r, y, off, ldy, rows, cnt, n, ref, mass);
    if (keep > r->err) r->err = keep;
    return bad;
}

static void check_experts_case(checker *c, memra_op lane, int64_t n, int64_t k, int64_t routed)
{
    row r = check_new_row(c, MEMRA_OP_gemm_experts);
    const int64_t m = routed + 2, off = 1, ldy = n + 2;
    snprintf(r.shape, sizeof r.shape, "%s E%d %lldx%lldx%lld", memra_op_name(lane) + 5, XE, (long long)m,
             (long long)n, (long long)k);
    r.band = check_gemm_band(c, lane);
    int64_t cnt[XE], ebase[XE + 1];
    cnt[2] = routed - 1 - 2 * (XE - 3); /* (check_experts_route's, for the sizes below) */
    gemm_data d[XE];
    memset(d, 0, sizeof d);
    int32_t *ids = tool_alloc((size_t)m, sizeof *ids);
    int64_t *where = tool_alloc((size_t)m, sizeof *where); /* row of the i-th row of each expert, expert-major */
    float *xg = tool_alloc((size_t)(m * k), sizeof(float));
    const size_t ycount = (size_t)(off + m + 1) * (size_t)ldy;
    float *y = tool_alloc(ycount, sizeof(float));
    double *ref = tool_alloc((size_t)(cnt[2] * n), sizeof(double)), *mass = tool_alloc((size_t)(cnt[2] * n), sizeof(double));
    memra_buffer *bw[XE] = {0}, *bg[XE] = {0}, *bt = NULL, *bgt = NULL, *bs = NULL, *bi = NULL, *bx = NULL, *by = NULL;
    void *xo = NULL;
    int ok = ids && where && xg && y && ref && mass;
    if (ok) check_experts_route(c, routed, cnt, ids, where, ebase);
    for (int e = 0; e < XE && ok; e++) ok = gemm_data_make(c, lane, n, k, cnt[e] > 0 ? cnt[e] : 1, &d[e]) == 0;
    if (!ok) {
        snprintf(r.note, sizeof r.note, "out of host memory");
        goto done;
    }
    for (int64_t i = 0; i < m; i++)
        if (ids[i] < 0 || ids[i] >= XE)
            for (int64_t j = 0; j < k; j++) xg[i * k + j] = 1.0f;
    for (int e = 0; e < XE; e++) /* expert e's s-th row is its data's row s */
        for (int64_t s2 = 0; s2 < cnt[e]; s2++)
            memcpy(xg + where[ebase[e] + s2] * k, d[e].x + s2 * k, (size_t)k * sizeof(float));
    size_t xbytes = 0;
    xo = check_make_x_operand(&d[0], xg, m, 0, &xbytes);
    memra_dptr wt[XE], gt[XE];
    float sc[XE];
    memra_status st = xo ? MEMRA_STATUS_OK : MEMRA_STATUS_OUT_OF_MEMORY;
    for (int e = 0; e < XE && st == MEMRA_STATUS_OK; e++) {
        const int rec = lane == MEMRA_OP_gemm_q8_0r;
        st = tool_upload(c->dev, rec ? d[e].wr : d[e].w, rec ? d[e].wr_bytes : d[e].w_bytes, &bw[e]);
        wt[e] = st == MEMRA_STATUS_OK ? memra_buffer_ptr(bw[e]) : 0;
        gt[e] = 0;
        sc[e] = d[e].w_scale;
        if (st == MEMRA_STATUS_OK && d[e].grid) {
            st = tool_upload(c->dev, d[e].grid, d[e].grid_count * sizeof(float), &bg[e]);
            if (st == MEMRA_STATUS_OK) gt[e] = memra_buffer_ptr(bg[e]);
        }
    }
    for (size_t e = 0; e < ycount; e++) y[e] = Y_SENTINEL;
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, wt, sizeof wt, &bt);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, gt, sizeof gt, &bgt);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, sc, sizeof sc, &bs);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, ids, (size_t)m * sizeof *ids, &bi);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, xo, xbytes, &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(c->dev, y, ycount * sizeof(float), &by);
    if (st != MEMRA_STATUS_OK) {
        fail_note(&r, "gemm_experts", st);
        goto done;
    }
    memra_op_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = (int32_t)m, .n = (int32_t)n, .k = (int32_t)k,
                               .w = memra_buffer_ptr(bt), .w_scale_grid = lane == MEMRA_OP_gemm_fp8_blk ? memra_buffer_ptr(bgt) : 0,
                               .x = memra_buffer_ptr(bx), .y = memra_buffer_ptr(by), .ldy = ldy,
                               .y_row_offset = off, .alpha = 1.0f};
    a.experts = (memra_gemm_experts_args){.struct_size = sizeof a.experts, .lane = (int32_t)lane, .n_experts = XE,
                                          .ids = memra_buffer_ptr(bi),
                                          .w_scales = lane == MEMRA_OP_gemm_fp8 ? memra_buffer_ptr(bs) : 0};
    if (check_experts_call(c, &r, &a, by, y, ycount) != MEMRA_STATUS_OK) goto done;
    uint64_t bad = 0;
    int64_t base = 0;
    for (int e = 0; e < XE; e++) {
        if (cnt[e] == 0) continue;
        if (check_gemm_reference(c, &d[e], d[e].x, cnt[e], 0, 1.0f, ref, mass, &r) != 0) goto done;
        if (e == 2 && take_injection(c, MEMRA_OP_gemm_experts)) {
            y[(off + where[base]) * ldy] += (float)(0.01 * mass[0]);
            r.injected = 1;
        }
        bad += check_experts_judge(&r, y, off, ldy, where + base, cnt[e], n, ref, mass);
        base += cnt[e];
    }
    check_experts_result(&r, bad, y, off, m, ldy, n, ids);
done:
    check_add_row(c, &r);
    for (int e = 0; e < XE; e++) {
        check_gemm_data_free(&d[e]);
        memra_buffer_destroy(bw[e]);
        memra_buffer_destroy(bg[e]);
    }
    memra_buffer_destroy(bt), memra_buffer_destroy(bgt), memra_buffer_destroy(bs);
    memra_buffer_destroy(bi), memra_buffer_destroy(bx), memra_buffer_destroy(by);
    free(ids), free(where), free(xg), free(y), free(ref), free(mass), free(xo);
}

static void check_experts_op(checker *c)
{
    static const memra_op lanes[] = {MEMRA_OP_gemm_f16,    MEMRA_OP_gemm_bf16, MEMRA_OP_gemm_fp8,
                                     MEMRA_OP_gemm_fp8_blk, MEMRA_OP_gemm_q8_0, MEMRA_OP_gemm_q8_0r};
    for (size_t i = 0; i < sizeof lanes / sizeof lanes[0]; i++) {
        check_experts_case(c, lanes[i], 96, 256, 37);
        if (!c->quick) check_experts_case(c, lanes[i], 160, 384, 61);
        if (c->gpu && !c->quick) check_experts_case(c, lanes[i], 2048, 768, 4096);
    }
    check_kr_experts(c); /* lane gemm_kr (check_kr.c) */
    check_w16_experts(c); /* lane gemm_w16 (check_w16.c) */
}

static void check_op(checker *c, memra_op op)
{
    const int q = c->quick, g = c->gpu && !q;
    switch (op) {
    case MEMRA_OP_gemm_f16:
    case MEMRA_OP_gemm_bf16:
    case MEMRA_OP_gemm_fp8:
    case MEMRA_OP_gemm_fp8_blk:
    case MEMRA_OP_gemm_q8_0: check_gemm_op(c, op); break;
    case MEMRA_OP_gemm_q8_0r:
        check_gemm_op(c, op);
        check_kfloor_op(c, op); /* Q4_0 on the floor */
        break;
    case MEMRA_OP_gemm_kr: check_kfloor_op(c, op); break;
    case MEMRA_OP_gemm_w16: check_w16_op(c); break;
    case MEMRA_OP_gemm_experts: check_experts_op(c); break;
    case MEMRA_OP_repack_q8_0: /* rows and cols not multiples of 128: padded records, partial row tiles */
        case_repack(c, 1, 32);
        case_repack(c, 130, 160);
        if (!q) case_repack(c, 257, 5120 + 32);
        if (g) {
            case_repack(c, 2049, 2080);
            case_repack(c, 5121, 17408 + 32);
        }
        break;
    case MEMRA_OP_cvt_f16:
        case_cvt(c, 1000);
        case_cvt(c, 1);
        if (!q) case_cvt(c, 4097);
        if (g) case_cvt(c, 512 * 5120);
        break;
    case MEMRA_OP_quant_q8_1:
        case_quant(c, 1, 96);
        case_quant(c, 17, 1000);
        if (!q) {
            case_quant(c, 15, 160);
            case_quant(c, 16, 512);
        }
        if (g) {
            case_quant(c, 512, 5120);
            case_quant(c, 17, 17408);
        }
        break;
    case MEMRA_OP_dequant_f16: {
        static const memra_format fm[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                          MEMRA_FORMAT_Q6_K};
        for (size_t i = 0; i < sizeof fm / sizeof fm[0]; i++) {
            const int kq = memra_format_block_values(fm[i]) == 256;
            case_dequant(c, fm[i], 3, kq ? 256 : 96, 0);
            if (!q) case_dequant(c, fm[i], 37, kq ? 768 : 160, 0);
            if (g) case_dequant(c, fm[i], 1024, 5120, 0);
        }
        break;
    }
    case MEMRA_OP_dequant_kr_f16: { /* K records, and Q8_0 records (96, 160: the last record padded) */
        static const memra_format fm[] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K, MEMRA_FORMAT_Q8_0};
        for (size_t i = 0; i < sizeof fm / sizeof fm[0]; i++) {
            const int q8 = fm[i] == MEMRA_FORMAT_Q8_0;
            case_dequant(c, fm[i], 3, q8 ? 96 : 256, 1);
            if (!q) case_dequant(c, fm[i], 37, q8 ? 160 : 768, 1);
            if (g) case_dequant(c, fm[i], 1024, 5120, 1);
        }
        break;
    }
    case MEMRA_OP_fp8_blk_to_q8_0:
        case_reencode(c, 5, 96);
        case_reencode(c, 130, 160);
        if (!q) case_reencode(c, 257, 384);
        if (g) case_reencode(c, 2048, 6144);
        break;
    case MEMRA_OP_fp8_nan_count:
        case_nan(c, 1000);
        case_nan(c, 1);
        if (!q) case_nan(c, 4097);
        if (g) case_nan(c, (int64_t)5120 * 17408);
        break;
    case MEMRA_OP_scale:
        case_scale(c, 1000);
        case_scale(c, 1);
        if (!q) case_scale(c, 4097);
        if (g) case_scale(c, 1 << 22);
        break;
    default: break;
    }
}

/* ---- the command -------------------------------------------------------------- */

static const char k_check_usage[] =
    "usage: memra check [--device N|host|all] [--module NAME] [--op NAME] [--quick] [--json FILE|-] [--seed S]\n"
    "  --device   one device (an index from 'memra info', or 'host'); default all\n"
    "  --module   only this module's rows (an error when it is not loaded or not admitted)\n"
    "  --op       only this op's rows (an error when no selected module provides it), so each\n"
    "             (op, module) can run in a process of its own\n"
    "  --quick    fewer shapes; --seed S replays a run; --json writes the rows ('-': stdout,\n"
    "             the table then goes to stderr)\n"
    "  Runs every op of every loaded module, on every device where it is admitted, on fresh\n"
    "  random data at several shapes (m = 1, 15, 16, 17; in_f and out_f not multiples of 128;\n"
    "  on a GPU also the 27b and 1p7b sheets at m = 1, 16, 17, 512, and for the MMQ GEMMs\n"
    "  at m = 1, 15, 16, 17, 512, 4096 plus in_f 5152 and 2080) and compares with the host\n"
    "  module on the host device. The host module itself is compared with an independent f64\n"
    "  computation. Bit-identical ops (repack_q8_0 included) must match exactly; GEMMs are\n"
    "  judged by |got - ref| / sum_k |x_k w_k| against a band per lane. gemm_q8_0r runs on\n"
    "  the weight as the module's own repack_q8_0 lays it out, is judged like gemm_q8_0 on\n"
    "  the Q8_0 blocks, and again against the module's own gemm_q8_0 (rows 'vs q8_0'). accprobe is\n"
    "  time only. MEMRA_CHECK_INJECT_FAULT=1 plants one fault in the first case of every op.\n"
    "  Exit: 0 all passed, 1 a failure, 2 usage error.\n"
    "\n"
    "       memra check --model FILE [--m M] [--device N|host|all] [--json FILE|-] [--seed S]\n"
    "  Each distinct (format, scale kind, shape) of the file's 2D weights (a .gguf, .safetensors\n"
    "  or model.safetensors.index.json) on the file's own bytes: memra_matmul on the weight made\n"
    "  by memra_file_weight_create (the routed lane, row 'matmul'), and the lane's GEMM on every\n"
    "  module that provides it, with its operand built from the file's bytes (the f16 mirror, the\n"
    "  repacked integer layout, ...), judged as above. M rows of fresh random activation (default 4 on the host\n"
    "  device, 512 on a GPU). A malformed file exits 1 naming the byte.\n";

void check_write_json(const checker *c, FILE *f, uint64_t seed, const char *model)
{
    /* version 2 adds "model" (memra check --model; null otherwise) */
    fprintf(f, "{\"format\":\"memra-check\",\"version\":2,\"memra\":");
    tool_json_str(f, memra_version());
    fprintf(f, ",\"model\":%s", model ? model : "null");
    fprintf(f, ",\"seed\":%llu,\"passed\":%d,\"failed\":%d,\"declined\":%d,\"rows\":[", (unsigned long long)seed,
            c->passed, c->failed, c->declined);
    for (size_t i = 0; i < c->nrows; i++) {
        const row *r = &c->rows[i];
        fprintf(f, "%s\n{\"device\":", i ? "," : "");
        tool_json_str(f, r->device);
        fprintf(f, ",\"op\":");
        tool_json_str(f, r->op);
        fprintf(f, ",\"module\":");
        tool_json_str(f, r->module);
        fprintf(f, ",\"shape\":");
        tool_json_str(f, r->shape);
        fprintf(f, ",\"metric\":\"%s\",", r->exact ? "exact" : "normalised");
        if (r->exact || !isfinite(r->err)) fprintf(f, "\"max_err\":null");
        else fprintf(f, "\"max_err\":%.6g", r->err);
        fprintf(f, ",\"band\":%.6g,\"mismatches\":%llu,\"hits\":%llu,\"result\":", r->exact ? 0.0 : r->band,
                (unsigned long long)r->mismatches, (unsigned long long)r->hits);
        tool_json_str(f, r->result);
        fprintf(f, ",\"injected\":%s,\"vs\":", r->injected ? "true" : "false");
        if (r->vs) tool_json_str(f, r->vs);
        else fprintf(f, "null");
        fprintf(f, ",\"note\":");
        tool_json_str(f, r->note);
        fprintf(f, "}");
    }
    fprintf(f, "]}\n");
}

void check_device_label(memra_device *dev, int index, char *buf, size_t len)
{
    const memra_device_caps *caps = memra_device_caps_get(dev);
    if (caps->ordinal < 0) snprintf(buf, len, "[%d] host", index);
    else snprintf(buf, len, "[%d] %s", index, caps->profile);
}

static const struct option k_check_opts[] = {
    {"device", required_argument, NULL, 'd'}, {"module", required_argument, NULL, 'M'},
    {"op", required_argument, NULL, 'o'},     {"quick", no_argument, NULL, 'q'},
    {"json", required_argument, NULL, 'j'},   {"seed", required_argument, NULL, 's'},
    {"model", required_argument, NULL, 'F'},  {"m", required_argument, NULL, 'm'},
    {"help", no_argument, NULL, 'h'}, {"quiet", no_argument, NULL, TOOL_OPT_QUIET}, {0, 0, 0, 0}};
static const tool_cmd k_check_cmd = {"memra check", k_check_usage, k_check_opts};

static int loaded_module(memra_runtime *rt, const char *name)
{
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        if (memra_module_info_get(rt, i, &mi) == MEMRA_STATUS_OK && mi.loaded && strcmp(mi.name, name) == 0) return 1;
    }
    return 0;
}

/* The --module / --op selection names something that runs on the selected
 * device(s); else a message naming it and 2. */
static int check_selection(memra_runtime *rt, int64_t dev_sel, const char *mod_sel, memra_op op_sel)
{
    const int ndev = memra_device_count(rt);
    if (mod_sel != NULL && !loaded_module(rt, mod_sel)) {
        for (int i = 0; i < memra_module_count(rt); i++) {
            memra_module_info mi;
            if (memra_module_info_get(rt, i, &mi) == MEMRA_STATUS_OK && !mi.loaded && strcmp(mi.name, mod_sel) == 0) {
                fprintf(stderr, "memra check: --module %s: the module was found (%s) but refused: %s\n", mod_sel,
                        mi.path, mi.reason);
                return 2;
            }
        }
        fprintf(stderr, "memra check: --module %s: no module of that name was found; loaded:", mod_sel);
        for (int i = 0; i < memra_module_count(rt); i++) {
            memra_module_info mi;
            if (memra_module_info_get(rt, i, &mi) == MEMRA_STATUS_OK && mi.loaded) fprintf(stderr, " %s", mi.name);
        }
        fprintf(stderr, " (see 'memra info')\n");
        return 2;
    }
    int admitted = 0, provides = 0;
    for (int d = 0; d < ndev; d++) {
        if (dev_sel >= 0 && d != dev_sel) continue;
        memra_device *dev = memra_device_get(rt, d);
        for (int mi = 0; mi < memra_module_count(rt); mi++) {
            memra_module_info info;
            if (memra_module_info_get(rt, mi, &info) != MEMRA_STATUS_OK || !info.loaded) continue;
            if (mod_sel != NULL && strcmp(mod_sel, info.name) != 0) continue;
            if (memra_module_score(dev, info.name) <= 0) continue;
            admitted = 1;
            if (op_sel != MEMRA_OP_COUNT_ && memra_module_provides(dev, info.name, op_sel)) provides = 1;
        }
    }
    if (mod_sel != NULL && !admitted) {
        fprintf(stderr, "memra check: --module %s is loaded but not admitted on the selected device(s) (see 'memra info')\n",
                mod_sel);
        return 2;
    }
    if (op_sel != MEMRA_OP_COUNT_ && !provides) {
        if (mod_sel != NULL)
            fprintf(stderr, "memra check: --op %s: module '%s' does not provide it on the selected device(s)\n",
                    memra_op_name(op_sel), mod_sel);
        else
            fprintf(stderr, "memra check: --op %s: no admitted module provides it on the selected device(s)\n",
                    memra_op_name(op_sel));
        return 2;
    }
    return 0;
}

int memra_tool_check(int argc, char **argv)
{
    int64_t dev_sel = -1;
    const char *mod_sel = NULL, *json = NULL;
    memra_op op_sel = MEMRA_OP_COUNT_;
    uint64_t seed = 0;
    const char *model = NULL;
    int64_t model_m = 0;
    int have_seed = 0, quick = 0, opt, rc = 0;
    while ((opt = tool_opt_next(&k_check_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        switch (opt) {
        case TOOL_OPT_EXIT: return rc;
        case 'q': quick = 1; break;
        case 'd':
            if (tool_opt_device(&k_check_cmd, optarg, 1, &dev_sel)) return 2;
            break;
        case 'M': mod_sel = optarg; break;
        case 'o':
            op_sel = memra_op_from_name(optarg);
            if (op_sel == MEMRA_OP_COUNT_) {
                fprintf(stderr, "memra check: --op %s: no such op; ops:", optarg);
                for (int i = 0; i < MEMRA_OP_COUNT_; i++) fprintf(stderr, " %s", memra_op_name((memra_op)i));
                fprintf(stderr, "\n");
                return 2;
            }
            break;
        case 'j': json = optarg; break;
        case 'F': model = optarg; break;
        case 'm':
            if (tool_opt_i64(&k_check_cmd, "--m", optarg, 1, 1 << 16, &model_m)) return 2;
            break;
        case 's':
            if (tool_opt_u64(&k_check_cmd, "--seed", optarg, &seed)) return 2;
            have_seed = 1;
            break;
        default: return 2;
        }
    }
    if (optind < argc) return tool_opt_unexpected(&k_check_cmd, argv[optind]);
    if (model == NULL && model_m != 0) {
        fprintf(stderr, "memra check: --m is for --model FILE\n(see 'memra check --help')\n");
        return 2;
    }
    if (model != NULL && (mod_sel != NULL || op_sel != MEMRA_OP_COUNT_ || quick)) {
        fprintf(stderr, "memra check: --model takes none of --module, --op, --quick (it checks each lane of the file)\n");
        return 2;
    }
    if (!have_seed) seed = tool_clock_seed();
    FILE *receipt = NULL;
    if (json != NULL && tool_receipt_open(&k_check_cmd, json, &receipt) != 0) return 2;

    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
        tool_receipt_close(&k_check_cmd, json, receipt);
        return 1;
    }
    const int ndev = memra_device_count(rt);
    if (dev_sel == -2) dev_sel = ndev - 1; /* the host device is listed last */
    if (dev_sel >= ndev) {
        fprintf(stderr, "memra check: no device %lld (there are %d; see 'memra info')\n", (long long)dev_sel, ndev);
        rc = 2;
    }
    if (rc == 0) rc = check_selection(rt, dev_sel, mod_sel, op_sel);
    if (rc != 0) {
        tool_receipt_close(&k_check_cmd, json, receipt);
        memra_close(rt);
        return rc;
    }
    checker c;
    memset(&c, 0, sizeof c);
    c.rt = rt;
    c.host = memra_device_host(rt);
    c.quick = quick;
    const char *inj = memra_config_value(rt, "MEMRA_CHECK_INJECT_FAULT"); /* read at memra_open */
    c.inject = inj != NULL && strcmp(inj, "0") != 0 && inj[0] != '\0';
    if (model != NULL) {
        rc = check_model_run(&c, model, model_m, dev_sel, receipt, json, seed);
        free(c.rows);
        memra_close(rt);
        return rc;
    }
    printf("memra check: seed %llu (replay with --seed %llu)%s%s\n", (unsigned long long)seed,
           (unsigned long long)seed, quick ? ", quick" : "", c.inject ? ", INJECTED FAULTS" : "");
    check_print_header();
    size_t steps = 0;
    for (int d = 0; d < ndev; d++) {
        if (dev_sel >= 0 && d != dev_sel) continue;
        memra_device *dev = memra_device_get(rt, d);
        for (int mi = 0; mi < memra_module_count(rt); mi++) {
            memra_module_info info;
            if (memra_module_info_get(rt, mi, &info) != MEMRA_STATUS_OK || !info.loaded) continue;
            if ((mod_sel && strcmp(mod_sel, info.name) != 0) || memra_module_score(dev, info.name) <= 0) continue;
            for (int o = 0; o < MEMRA_OP_COUNT_; o++)
                if ((op_sel == MEMRA_OP_COUNT_ || o == (int)op_sel) && memra_module_provides(dev, info.name, (memra_op)o))
                    steps++;
        }
    }
    tool_progress_begin(&g_check_pg, "memra check", steps);
    for (int d = 0; d < ndev; d++) {
        if (dev_sel >= 0 && d != dev_sel) continue;
        memra_device *dev = memra_device_get(rt, d);
        c.dev = dev;
        c.gpu = memra_device_caps_get(dev)->arch != MEMRA_ARCH_HOST;
        check_device_label(dev, d, c.devlabel, sizeof c.devlabel);
        int admitted = 0;
        for (int mi = 0; mi < memra_module_count(rt); mi++) {
            memra_module_info info;
            if (memra_module_info_get(rt, mi, &info) != MEMRA_STATUS_OK || !info.loaded) continue;
            if (mod_sel && strcmp(mod_sel, info.name) != 0) continue;
            if (memra_module_score(dev, info.name) <= 0) continue;
            admitted = 1;
            c.module = info.name;
            c.indep = dev == c.host && strcmp(info.name, "host") == 0;
            memset(c.injected_op, 0, sizeof c.injected_op);
            int any = 0;
            for (int o = 0; o < MEMRA_OP_COUNT_; o++) {
                if (op_sel != MEMRA_OP_COUNT_ && o != (int)op_sel) continue;
                if (!memra_module_provides(dev, info.name, (memra_op)o)) continue;
                any = 1;
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", c.devlabel, info.name, memra_op_name((memra_op)o));
                tool_progress_step(&g_check_pg, what);
                /* each (device, module, op) gets its own stream of data from the seed */
                tool_rng_seed(&c.rng, seed ^ ((uint64_t)(d + 1) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(o + 1) << 40) ^
                                          ((uint64_t)(mi + 1) << 52));
                if (o == MEMRA_OP_accprobe) {
                    row r = check_new_row(&c, MEMRA_OP_accprobe);
                    r.result = "not checked (time only)";
                    check_add_row(&c, &r);
                    continue;
                }
                check_op(&c, (memra_op)o);
            }
            if (any) {
                tool_progress_clear(&g_check_pg);
                printf("ledger %s %s:", c.devlabel, info.name);
                for (int o = 0; o < MEMRA_OP_COUNT_; o++)
                    if (memra_module_provides(dev, info.name, (memra_op)o) &&
                        (op_sel == MEMRA_OP_COUNT_ || o == (int)op_sel))
                        printf(" %s=%llu", memra_op_name((memra_op)o),
                               (unsigned long long)memra_ledger_hits(dev, (memra_op)o, info.name));
                printf("\n");
            }
        }
        if (!admitted && !mod_sel)
            printf("%-12s (no module admitted on this device: nothing to check; see 'memra info')\n", c.devlabel);
    }
    tool_progress_end(&g_check_pg);
    if (c.declined) printf("%d declined (a lane that does not take a case; not a failure)\n", c.declined);
    printf("%d passed, %d failed\n", c.passed, c.failed);
    rc = c.failed ? 1 : 0;
    if (receipt != NULL) check_write_json(&c, receipt, seed, NULL);
    const int wrc = tool_receipt_close(&k_check_cmd, json, receipt);
    free(c.rows);
    memra_close(rt);
    return rc ? rc : wrc;
}
