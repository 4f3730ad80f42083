/* What `memra check` shares with `memra check --model` (check_model.c):
 * the table of rows, the GEMM cases and their judging (check.c's header
 * comment gives the metric and the bands). Tool code, one thread. */
#ifndef MEMRA_TOOLS_CHECK_H
#define MEMRA_TOOLS_CHECK_H

#include <stdint.h>
#include <stdio.h>

#include "memra/memra.h"
#include "tools/tool_util.h"

typedef struct row {
    char device[48];
    const char *op;
    char module[32];
    char shape[48];
    int exact;
    double err;           /* max normalised error (GEMMs) */
    uint64_t mismatches;  /* elements outside band / not identical, plus stray writes */
    double band;
    uint64_t hits;
    const char *result;   /* PASS FAIL DECLINED "not checked" */
    char note[200];
    int injected;
    const char *vs;       /* a cross-check row: what it is compared with (else NULL: the reference) */
} row;

typedef struct checker {
    memra_runtime *rt;
    memra_device *host, *dev;
    char devlabel[48];
    const char *module;
    int indep;  /* 1: judge against check_ref.c (host module on host device) */
    int gpu, quick, inject;
    int injected_op[MEMRA_OP_COUNT_];
    tool_rng rng;
    row *rows;
    size_t nrows, caprows;
    int passed, failed, declined;
} checker;

typedef struct gemm_data {
    memra_op op;
    int64_t n, k, mmax;
    float *x;         /* [mmax x k], x[0][0] = 4 (the largest value; file data: x[0][inj_col]) */
    uint8_t *w;       /* weight bytes, element (0,0) planted large */
    size_t w_bytes;
    float *grid;
    size_t grid_count;
    float w_scale;
    /* gemm_fp8 / _blk: the static activation scale of every case (a model
     * weight's input_scale; 0: none), and the given scales of the case being
     * judged (check_gemm_reference reads them): x_scale, and x_amax for the
     * judged rows (NULL: none) */
    float x_scale;
    float case_xs;
    const float *case_amax;
    uint8_t *w_abs;   /* |w|, for the mass of the host-module path */
    /* gemm_q8_0r: the module's operand, Q8_0 records of w (memra_q8_0r_bytes) */
    uint8_t *wr;
    size_t wr_bytes;
    int wr_differs;   /* the module's repack_q8_0 disagreed with ref_repack_q8_0 */
    char wr_note[120];
    /* the injected fault: 0 moves element (0, 0) planted above by one step;
     * 1 (file data, nothing planted) flips the sign of element (0, inj_col) */
    int inj_sign;
    int64_t inj_col;
    /* the last reference check_gemm_reference computed, reused for the same
     * rows, activation form, alpha and reference kind (the model check judges
     * the matmul row and every module row of one shape on one reference) */
    double *c_ref, *c_mass;
    float *c_x;
    int64_t c_nrow;
    int c_f16, c_indep, c_given;
    float c_alpha;
} gemm_data;

void check_print_header(void);
/* Print r as a table line, count it, keep it for the receipt. */
void check_add_row(checker *c, row *r);
/* A FAIL row of op on c's device and module (the caller fills it in). */
row check_new_row(const checker *c, memra_op op);
/* The receipt ("memra-check"); `model`: NULL, or a JSON object text written as "model". */
void check_write_json(const checker *c, FILE *f, uint64_t seed, const char *model);
void check_device_label(memra_device *dev, int index, char *buf, size_t len);

/* d for op on [n x k] with a fresh random x [mmax x k] (x[0][0] = 4) and
 * room for the weight operand (d->w, d->w_bytes); 0, or -1 out of memory. */
int check_gemm_data_alloc(checker *c, memra_op op, int64_t n, int64_t k, int64_t mmax, gemm_data *d);
/* After d->w (and scale / grid) are filled: |w| for the mass and, for
 * gemm_q8_0r, the records (the module's own repack_q8_0). 0 or -1. */
int check_gemm_data_finish(checker *c, gemm_data *d);
void check_gemm_data_free(gemm_data *d);
/* One case of c->module's d->op at m rows through memra_module_call,
 * judged against the reference; adds its row (and gemm_q8_0r's cross row). */
void check_gemm_case(checker *c, gemm_data *d, int64_t m, int variant);

/* The band of op for c's (device, module). */
double check_gemm_band(const checker *c, memra_op op);
/* How many rows of an m-row case are judged (all, or a sample). */
int64_t check_judged_count(const checker *c, int64_t m);
/* Those rows: 0 .. m-1, or nrow spread over [0, m) from row 0. */
void check_judged_rows(int64_t m, int64_t nrow, int64_t *rows);
/* The reference of d's GEMM for the nrow rows xsub [nrow x k] (the
 * independent one when c->indep, else the host module on the host device):
 * ref and mass [nrow x n]. 0, or -1 with r's note set. */
int check_gemm_reference(checker *c, gemm_data *d, const float *xsub, int64_t nrow, int x_is_f16, float alpha,
                         double *ref, double *mass, row *r);
/* Elements of y (rows off + rows[s], leading dimension ldy) outside r->band;
 * r->err is set to the largest normalised error. */
uint64_t check_judge_rows(row *r, const float *y, int64_t off, int64_t ldy, const int64_t *rows, int64_t nrow,
                          int64_t n, const double *want, const double *mass);
/* Writes outside rows [off, off + m) x cols [0, n) of a sentinel-filled
 * (off + m + 1) x ldy output. */
uint64_t check_count_stray(const float *y, int64_t off, int64_t m, int64_t ldy, int64_t n);
void check_gemm_row_result(row *r, uint64_t bad, uint64_t stray, int64_t nrow, int64_t m, const char *extra);
/* The sentinel every checked output is filled with first. */
#define CHECK_Y_SENTINEL 1234.5f

/* The floor rows of the 4- to 6-bit formats (check_kr.c): op gemm_kr (Q4_K,
 * Q5_K, Q6_K on K records) or gemm_q8_0r (Q4_0 as Q8_0 records). */
void check_kfloor_op(checker *c, memra_op op);
/* The rows of gemm_w16 (check_w16.c): Q8_0, Q4_0, Q4_K, Q5_K, Q6_K on their W16 operand. */
void check_w16_op(checker *c);
/* The gemm_experts rows' shared parts (check.c): CHECK_XE experts routed unevenly and
 * unsorted, expert 0 no rows, 1 one, 2 most, the others two each, then two rows with ids
 * outside [0, CHECK_XE) (-1 and CHECK_XE); m = routed + 2 rows, shuffled (c->rng). Fills
 * cnt[CHECK_XE], ids[m], where[routed] (the rows of each expert, expert-major, ascending) and
 * base[CHECK_XE + 1] (where's expert offsets). */
#define CHECK_XE 8
void check_experts_route(checker *c, int64_t routed, int64_t *cnt, int32_t *ids, int64_t *where, int64_t *base);
/* c->module's gemm_experts with a, the row's hits, y read back from by (ycount floats); a
 * decline or a failure noted in r (non-OK returned). */
memra_status check_experts_call(checker *c, row *r, memra_op_args *a, memra_buffer *by, float *y, size_t ycount);
/* The grouped call's inputs on c->dev: the experts' operand table (wt_bytes), ids [m], x (xbytes) and y (ycount
 * floats, set to the sentinel first); a failure noted in r (non-OK returned). */
memra_status check_experts_inputs(checker *c, row *r, const void *wt, size_t wt_bytes, const int32_t *ids, int64_t m,
                                  const void *x, size_t xbytes, float *y, size_t ycount, memra_buffer **bt,
                                  memra_buffer **bi, memra_buffer **bx, memra_buffer **by);
/* One expert's cnt routed rows (rows: their rows of y) judged against ref / mass (check_judge_rows), r->err
 * kept the largest over the experts; returns the failures. */
uint64_t check_experts_judge(row *r, const float *y, int64_t off, int64_t ldy, const int64_t *rows, int64_t cnt,
                             int64_t n, const double *ref, const double *mass);
/* The row's result: bad failures over the m rows, and the values written where they must not be (the skipped
 * rows, the columns past n, the rows around). */
void check_experts_result(row *r, uint64_t bad, const float *y, int64_t off, int64_t m, int64_t ldy, int64_t n,
                          const int32_t *ids);
/* gemm_experts rows on the K-quant floor (lane gemm_kr, Q4_K / Q5_K / Q6_K experts; check_kr.c). */
void check_kr_experts(checker *c);
/* gemm_experts on lane gemm_w16 (check_w16.c): experts on their W16 operands. */
void check_w16_experts(checker *c);
/* memra check --model's rows of a weight whose lane is gemm_kr: the
 * memra_matmul row (w prepared on c->dev) and one row per module providing
 * gemm_kr, on the file's own blocks [n x k] of format f at m rows. */
void check_kr_model(checker *c, memra_format f, const uint8_t *blocks, int64_t n, int64_t k, int64_t m, memra_weight *w,
                    const char *const *mods, int nmods);

/* memra check --model (check_model.c): returns the exit code. */
int check_model_run(checker *c, const char *path, int64_t m, int64_t dev_sel, FILE *receipt, const char *json,
                    uint64_t seed);

#endif
