/* The admission self-check: before a module loaded at run time is published
 * into any routing snapshot, each op it provides runs on each device where it
 * was admitted, at small shapes with fresh random inputs, and is judged
 * against the built-in host module (the reference, itself exempt).
 *
 * Cases (two shapes per GEMM, so a module wrong on some shapes is caught):
 *   GEMMs (gemm_f16, gemm_bf16, gemm_fp8, gemm_fp8_blk, gemm_q8_0, gemm_q8_0r, gemm_kr, gemm_w16)
 *     m x n x k = 4 x 64 x 256 and 33 x 144 x 512, y rows written from row 1
 *     of a (m + 2)-row output with ldy = n + 4 (the rest must stay as filled).
 *     n = 144 is a multiple of 16 (cuBLASLt's FP8 needs it) and of no tile
 *     width the GPU modules use (64, 96, 128), so partial tiles run; m = 33
 *     leaves a partial row tile.
 *     Judged per element by e = |got - ref| / mass, mass = the host op on the
 *     absolute values of the inputs (sum_k |x_k w_k| with the op's scales),
 *     against the bands of `memra check` (tools/check.c, where each is
 *     derived): f16 / bf16 1e-5, q8_0 / q8_0r 2e-6, fp8 / fp8_blk 5e-4.
 *     For gemm_q8_0 / gemm_q8_0r the mass comes from the same weight's f16
 *     decode and the activation's absolute values (a q8 block's codes and
 *     scale cannot be "absolute-valued" in place); the bound is the same.
 *     gemm_fp8 / gemm_fp8_blk run their 33-row case at a given activation
 *     scale (the one-pass quantisers): a static x_scale = 0.75 / 448 (values
 *     above 0.75 saturate), and for gemm_fp8_blk producer maxima x_amax at
 *     80% of each (row, 128) block's, which win over it; the mass stays that
 *     of the unquantised x.
 *     gemm_kr runs Q5_K records on the 4-row case, Q6_K records on the
 *     33-row one and Q4_K records on a third, 17-row case (n 96, k 512: the
 *     mmq module's default TF32 min-term fold) (random super-blocks, repacked
 *     by memra_kr_repack); its mass
 *     counts the scale and the min term apart (|x| (|s q| + |mn|)), the sum
 *     the fold rounds against, and its band is 4e-6: judge_band_fold with
 *     2 k/32 terms (scale and min, or the two 16-value halves) plus 16
 *     split-k roundings at k = 512 is 50 u = 3e-6, and MEMRA_MMQ_KR_TC's
 *     fold (the min term on TF32 MMAs) 59 u = 3.5e-6 (tools/judge.h).
 *     gemm_w16 runs a random one of Q8_0, Q4_0, Q4_K, Q5_K, Q6_K in each case (random blocks with finite
 *     positive scales, repacked by memra_w16_repack); its mass and band are gemm_f16's on the operand's f16
 *     mirror (memra_w16_decode_f16).
 *   bit-identical ops (cvt_f16, scale, quant_q8_1, dequant_f16 of Q8_0,
 *     dequant_kr_f16 of Q4_K, Q5_K or Q6_K K records or Q8_0 records, fp8_blk_to_q8_0,
 *     repack_q8_0, fp8_nan_count): every output byte equal.
 *   accprobe is an instrument (time only) and is not judged.
 * A case the module declines is not a failure (a lane may decline shapes; the
 * dispatcher falls through); an op whose every case declined is noted.
 * A mismatch, an error status, or the whole check running past
 * MEMRA_ADMISSION_TIMEOUT_MS quarantines the module. An op that never returns
 * cannot be interrupted inside the process: the limit is checked after each
 * case (the contained trial in memra-trial is where a hang at load is caught).
 * On a GPU inputs and outputs move by synchronous copies (cuCtxSynchronize
 * first), which is acceptable once per load and never on a call's path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/observe/admission.h"
#include "core/device/device.h"
#include "core/routing/routing.h"
#include "core/routing/verdict.h"
#include "base/error.h"
#include "memra/formats.h"

#define BAND_F16 1e-5
#define BAND_Q8_0 2e-6
#define BAND_FP8 5e-4 /* JUDGE_BAND_FP8, derived in tools/judge.h */
#define BAND_KR 4e-6

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}
static float rng_unit(rng *r) { return (float)((double)(rng_next(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void memra__acase_free(acase *c)
{
    for (int i = 0; i < c->n_in; i++) free(c->in[i]);
    free(c->out_init);
    memset(c, 0, sizeof *c);
}

static void *add_in(acase *c, size_t bytes, size_t off)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (p == NULL) return NULL;
    c->in[c->n_in] = p;
    c->in_bytes[c->n_in] = bytes;
    c->in_off[c->n_in] = off;
    c->n_in++;
    return p;
}


/* Run c on (dev, ops, ctx): fresh buffers on dev, the output read back into
 * `out` (c->out_bytes). DECLINED is returned with *why set. */
memra_status memra__acase_run(memra_device *dev, const memra__modrec *r, const acase *c, void *out, const char **why,
                               int variant)
{
    memra_op_args a = c->a;
    a.struct_size = sizeof a;
    memra_dptr bufs[MEMRA__ACASE_MAX_IN + 1] = {0};
    memra_status st = MEMRA_STATUS_OK;
    void *host_copy[MEMRA__ACASE_MAX_IN] = {0};
    for (int i = 0; i < c->n_in && st == MEMRA_STATUS_OK; i++) {
        if (dev->is_host) {
            /* Copy: an op must not be able to change the caller's inputs for the next run. */
            host_copy[i] = malloc(c->in_bytes[i] ? c->in_bytes[i] : 1);
            if (host_copy[i] == NULL) st = MEMRA_STATUS_OUT_OF_MEMORY;
            else {
                memcpy(host_copy[i], c->in[i], c->in_bytes[i]);
                bufs[i] = (memra_dptr)(uintptr_t)host_copy[i];
            }
        } else {
            st = memra__dev_alloc(dev, c->in_bytes[i], &bufs[i]);
            if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, bufs[i], c->in[i], c->in_bytes[i]);
        }
        if (st == MEMRA_STATUS_OK) memcpy((char *)&a + c->in_off[i], &bufs[i], sizeof(memra_dptr));
    }
    memra_dptr ob = 0;
    if (st == MEMRA_STATUS_OK) {
        if (dev->is_host) {
            memcpy(out, c->out_init, c->out_bytes);
            ob = (memra_dptr)(uintptr_t)out;
        } else {
            st = memra__dev_alloc(dev, c->out_bytes, &ob);
            if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, ob, c->out_init, c->out_bytes);
        }
        memcpy((char *)&a + c->out_off, &ob, sizeof ob);
    }
    if (st == MEMRA_STATUS_OK) {
        memra__lane lane = {.mod = (memra__modrec *)(uintptr_t)r, .ctx = r->ctx[dev->index], .score = 0, .cell = NULL,
                            .variant = variant};
        st = memra__lane_run(dev, &lane, c->op, &a);
        if (st == MEMRA_STATUS_DECLINED) *why = a.decline_reason;
        if (st == MEMRA_STATUS_OK && !dev->is_host) st = memra__dev_download(dev, out, ob, c->out_bytes);
    }
    for (int i = 0; i < c->n_in; i++) {
        if (dev->is_host) free(host_copy[i]);
        else memra__dev_free(dev, bufs[i]);
    }
    if (!dev->is_host) memra__dev_free(dev, ob);
    return st;
}

static memra_status run_case(memra_device *dev, const memra__modrec *r, const acase *c, void *out, const char **why)
{
    return memra__acase_run(dev, r, c, out, why, -1);
}

/* ---- case builders ---------------------------------------------------------- */

static int e4m3_code(rng *g)
{
    for (;;) {
        uint8_t c = (uint8_t)rng_next(g);
        if (!memra_e4m3_is_nan(c)) return c;
    }
}

static void fill_f32(rng *g, float *p, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) p[i] = rng_unit(g) * scale;
    p[0] = scale * 0.75f; /* never all zeros */
}

/* A Q8_0 weight [rows x cols] from random floats. */
static void fill_q8_0(rng *g, uint8_t *w, int64_t rows, int64_t cols)
{
    float v[32];
    for (int64_t b = 0; b < rows * cols / 32; b++) {
        for (int i = 0; i < 32; i++) v[i] = rng_unit(g);
        v[0] = 0.9f;
        memra_q8_0_encode(v, w + b * MEMRA_Q8_0_BYTES);
    }
}

/* Q8_0 records (memra_q8_0r_bytes) of a random Q8_0 weight [rows x cols]: per record the four blocks' f16
 * scales widened to f32 and their codes, zeros past cols */
static int fill_q8_0r(rng *g, uint8_t *w, int64_t rows, int64_t cols)
{
    uint8_t *b = malloc((size_t)(rows * cols / 32) * MEMRA_Q8_0_BYTES);
    if (b == NULL) return 0;
    fill_q8_0(g, b, rows, cols);
    const int64_t nb = cols / 32;
    for (int64_t gi = 0; gi < (cols + 127) / 128; gi++)
        for (int64_t j = 0; j < rows; j++) {
            uint8_t *rec = w + (size_t)(gi * rows + j) * 144u;
            memset(rec, 0, 144);
            for (int s = 0; s < 4 && 4 * gi + s < nb; s++) {
                const uint8_t *blk = b + (size_t)(j * nb + 4 * gi + s) * MEMRA_Q8_0_BYTES;
                const float d = memra_f32_from_f16((uint16_t)(blk[0] | (blk[1] << 8)));
                memcpy(rec + 4 * s, &d, 4);
                memcpy(rec + 16 + 32 * s, blk + 2, 32);
            }
        }
    free(b);
    return 1;
}

/* Random blocks of a format for rows x cols: Q8_0 encoded from random values; Q4_0 / Q4_K / Q5_K / Q6_K
 * every byte random, then finite positive f16 d (and dmin). NULL when out of memory; the caller frees. */
static uint8_t *random_blocks(rng *g, memra_format f, int64_t rows, int64_t cols)
{
    const uint64_t bytes = memra_format_row_bytes(f, cols) * (uint64_t)rows;
    uint8_t *b = malloc(bytes ? bytes : 1);
    if (b == NULL) return NULL;
    if (f == MEMRA_FORMAT_Q8_0) {
        fill_q8_0(g, b, rows, cols);
        return b;
    }
    for (uint64_t i = 0; i < bytes; i++) b[i] = (uint8_t)rng_next(g);
    const int bb = memra_format_block_bytes(f);
    for (uint64_t o = 0; o < bytes; o += (uint64_t)bb) {
        const uint16_t d = memra_f16_from_f32((0.5f + fabsf(rng_unit(g))) / 64.0f);
        const uint16_t dm = memra_f16_from_f32((0.5f + fabsf(rng_unit(g))) / 128.0f);
        const size_t at = f == MEMRA_FORMAT_Q6_K ? 208 : 0;
        b[o + at] = (uint8_t)d, b[o + at + 1] = (uint8_t)(d >> 8);
        if (f == MEMRA_FORMAT_Q4_K || f == MEMRA_FORMAT_Q5_K) b[o + 2] = (uint8_t)dm, b[o + 3] = (uint8_t)(dm >> 8);
    }
    return b;
}

/* Random Q4_K / Q5_K / Q6_K super-blocks (random_blocks), then their K records at w. */
static int fill_kr(rng *g, memra_format f, uint8_t *w, int64_t rows, int64_t cols)
{
    uint8_t *b = random_blocks(g, f, rows, cols);
    const int ok = b != NULL && memra_kr_repack(f, b, rows, cols, w) == 0;
    free(b);
    return ok;
}

/* A random Q8_0 / Q4_0 / K-quant weight (random_blocks), then its W16 operand at w. */
static int fill_w16(rng *g, memra_format f, uint8_t *w, int64_t rows, int64_t cols)
{
    uint8_t *b = random_blocks(g, f, rows, cols);
    const int ok = b != NULL && memra_w16_repack(f, b, rows, cols, w) == 0;
    free(b);
    return ok;
}

static int build_gemm(rng *g, memra_op op, int m, int n, int k, acase *c)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    c->gemm = 1;
    snprintf(c->shape, sizeof c->shape, "m=%d n=%d k=%d", m, n, k);
    const int64_t ldy = n + 4, yrows = m + 2;
    memra_gemm_args *ga = &c->a.gemm;
    *ga = (memra_gemm_args){.struct_size = sizeof *ga, .m = m, .n = n, .k = k, .ldy = ldy, .y_row_offset = 1,
                            .alpha = 0.5f + 0.5f * fabsf(rng_unit(g))};
    const size_t wn = (size_t)n * (size_t)k;
    switch (op) {
    case MEMRA_OP_gemm_f16:
    case MEMRA_OP_gemm_bf16: {
        uint16_t *w = add_in(c, wn * 2, OFF(gemm.w));
        if (w == NULL) return 0;
        for (size_t i = 0; i < wn; i++)
            w[i] = op == MEMRA_OP_gemm_f16 ? memra_f16_from_f32(rng_unit(g)) : memra_bf16_from_f32(rng_unit(g));
        c->band = BAND_F16;
        break;
    }
    case MEMRA_OP_gemm_fp8:
    case MEMRA_OP_gemm_fp8_blk: {
        uint8_t *w = add_in(c, wn, OFF(gemm.w));
        if (w == NULL) return 0;
        for (size_t i = 0; i < wn; i++) w[i] = (uint8_t)e4m3_code(g);
        if (op == MEMRA_OP_gemm_fp8) {
            ga->w_scale = 0.5f + fabsf(rng_unit(g));
        } else {
            size_t gn = (size_t)memra_fp8_grid_rows(n) * (size_t)memra_fp8_grid_cols(k);
            float *grid = add_in(c, gn * 4, OFF(gemm.w_scale_grid));
            if (grid == NULL) return 0;
            for (size_t i = 0; i < gn; i++) grid[i] = (0.5f + fabsf(rng_unit(g))) / 64.0f;
        }
        c->band = BAND_FP8;
        break;
    }
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r: {
        /* The weight operand is built by the host module (records for q8_0r),
         * the activation's q8_1 records too: see admission_check_device. */
        uint8_t *w = add_in(c, wn / 32 * MEMRA_Q8_0_BYTES, OFF(gemm.w));
        if (w == NULL) return 0;
        fill_q8_0(g, w, n, k);
        c->band = BAND_Q8_0;
        break;
    }
    case MEMRA_OP_gemm_kr: {
        /* the 4-row case Q5_K, the 33-row one Q6_K, the 17-row one Q4_K (the mmq module's default
         * TF32 min-term fold, MEMRA_MMQ_KR_TC) */
        ga->w_format = m == 4 ? MEMRA_FORMAT_Q5_K : m == 17 ? MEMRA_FORMAT_Q4_K : MEMRA_FORMAT_Q6_K;
        uint8_t *w = add_in(c, memra_kr_bytes((memra_format)ga->w_format, n, k), OFF(gemm.w));
        if (w == NULL || !fill_kr(g, (memra_format)ga->w_format, w, n, k)) return 0;
        c->band = BAND_KR;
        break;
    }
    case MEMRA_OP_gemm_w16: {
        static const memra_format fm[5] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                           MEMRA_FORMAT_Q6_K};
        ga->w_format = fm[rng_next(g) % 5u];
        uint8_t *w = add_in(c, memra_w16_bytes((memra_format)ga->w_format, n, k), OFF(gemm.w));
        if (w == NULL || !fill_w16(g, (memra_format)ga->w_format, w, n, k)) return 0;
        c->band = BAND_F16;
        snprintf(c->shape, sizeof c->shape, "m=%d n=%d k=%d %s", m, n, k, memra_format_name((memra_format)ga->w_format));
        break;
    }
    default: return 0;
    }
    float *x = add_in(c, (size_t)m * (size_t)k * 4, OFF(gemm.x));
    if (x == NULL) return 0;
    fill_f32(g, x, (size_t)m * (size_t)k, 1.0f);
    c->out_bytes = (size_t)(yrows * ldy) * 4;
    c->out_off = OFF(gemm.y);
    float *y = c->out_init = malloc(c->out_bytes);
    if (y == NULL) return 0;
    for (int64_t i = 0; i < yrows * ldy; i++) y[i] = 1234.5f + (float)(i % 7);
    return 1;
}

int memra__acase_gemm(uint64_t seed, memra_op op, int m, int n, int k, acase *c)
{
    rng g = {.s = seed ? seed : 88172645463325252ull};
    return build_gemm(&g, op, m, n, k, c);
}

static int build_exact(rng *g, memra_op op, acase *c)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    memra_op_args *a = &c->a;
    switch (op) {
    case MEMRA_OP_scale: {
        int64_t n = 1031;
        a->n = n;
        a->s = 0.5f + fabsf(rng_unit(g));
        c->out_bytes = (size_t)n * 4;
        c->out_off = OFF(src);
        float *y = c->out_init = malloc(c->out_bytes);
        if (y == NULL) return 0;
        fill_f32(g, y, (size_t)n, 3.0f);
        snprintf(c->shape, sizeof c->shape, "n=%lld", (long long)n);
        return 1;
    }
    case MEMRA_OP_cvt_f16: {
        int64_t n = 1031;
        a->n = n;
        float *x = add_in(c, (size_t)n * 4, OFF(src));
        if (x == NULL) return 0;
        fill_f32(g, x, (size_t)n, 70000.0f); /* past f16's range too: rounding to inf is part of the contract */
        for (int64_t i = 0; i < n; i += 5) x[i] *= 1e-6f;
        c->out_bytes = (size_t)n * 2;
        c->out_off = OFF(dst);
        snprintf(c->shape, sizeof c->shape, "n=%lld", (long long)n);
        break;
    }
    case MEMRA_OP_quant_q8_1: {
        int m = 5, k = 640;
        a->rows = m;
        a->cols = k;
        float *x = add_in(c, (size_t)m * k * 4, OFF(src));
        if (x == NULL) return 0;
        fill_f32(g, x, (size_t)m * k, 2.0f);
        c->out_bytes = memra_q8_1_bytes(m, k);
        c->out_off = OFF(dst);
        snprintf(c->shape, sizeof c->shape, "m=%d k=%d", m, k);
        break;
    }
    case MEMRA_OP_dequant_f16:
    case MEMRA_OP_repack_q8_0: {
        int64_t rows = 9, cols = 288;
        a->rows = rows;
        a->cols = cols;
        a->format = MEMRA_FORMAT_Q8_0;
        uint8_t *w = add_in(c, (size_t)(rows * cols / 32) * MEMRA_Q8_0_BYTES, OFF(src));
        if (w == NULL) return 0;
        fill_q8_0(g, w, rows, cols);
        c->out_bytes = op == MEMRA_OP_dequant_f16 ? (size_t)(rows * cols) * 2 : memra_q8_0r_bytes(rows, cols);
        c->out_off = OFF(dst);
        snprintf(c->shape, sizeof c->shape, "%lld x %lld", (long long)rows, (long long)cols);
        break;
    }
    case MEMRA_OP_dequant_kr_f16: {
        /* 9 rows: K records of two super-blocks, Q4_K / Q5_K / Q6_K, or Q8_0 records of 288 columns (the last
         * record padded), by a random turn (random blocks, repacked) */
        static const memra_format fm[4] = {MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K, MEMRA_FORMAT_Q8_0};
        a->format = fm[rng_next(g) % 4u];
        const int q8 = a->format == MEMRA_FORMAT_Q8_0;
        int64_t rows = 9, cols = q8 ? 288 : 512;
        a->rows = rows;
        a->cols = cols;
        uint8_t *w = add_in(c, q8 ? memra_q8_0r_bytes(rows, cols) : memra_kr_bytes(a->format, rows, cols), OFF(src));
        if (w == NULL || !(q8 ? fill_q8_0r(g, w, rows, cols) : fill_kr(g, a->format, w, rows, cols))) return 0;
        c->out_bytes = (size_t)(rows * cols) * 2;
        c->out_off = OFF(dst);
        snprintf(c->shape, sizeof c->shape, "%s %lld x %lld", memra_format_name(a->format), (long long)rows,
                 (long long)cols);
        break;
    }
    case MEMRA_OP_fp8_blk_to_q8_0: {
        int64_t rows = 130, cols = 256;
        a->rows = rows;
        a->cols = cols;
        uint8_t *w = add_in(c, (size_t)(rows * cols), OFF(src));
        size_t gn = (size_t)memra_fp8_grid_rows(rows) * (size_t)memra_fp8_grid_cols(cols);
        float *grid = add_in(c, gn * 4, OFF(aux));
        if (w == NULL || grid == NULL) return 0;
        for (int64_t i = 0; i < rows * cols; i++) w[i] = (uint8_t)e4m3_code(g);
        for (size_t i = 0; i < gn; i++) grid[i] = (0.5f + fabsf(rng_unit(g))) / 64.0f;
        c->out_bytes = (size_t)(rows * cols / 32) * MEMRA_Q8_0_BYTES;
        c->out_off = OFF(dst);
        snprintf(c->shape, sizeof c->shape, "%lld x %lld", (long long)rows, (long long)cols);
        break;
    }
    case MEMRA_OP_fp8_nan_count: {
        int64_t n = 4099;
        a->n = n;
        uint8_t *w = add_in(c, (size_t)n, OFF(src));
        if (w == NULL) return 0;
        for (int64_t i = 0; i < n; i++) w[i] = (uint8_t)rng_next(g); /* ~1/128 of them NaN codes */
        w[0] = 0x7F;
        c->out_bytes = 8;
        c->out_off = OFF(dst);
        uint64_t *o = c->out_init = malloc(8);
        if (o == NULL) return 0;
        *o = rng_next(g) >> 40; /* the op adds to what is there */
        snprintf(c->shape, sizeof c->shape, "%lld bytes", (long long)n);
        return 1;
    }
    default: return 0;
    }
    c->out_init = malloc(c->out_bytes);
    if (c->out_init == NULL) return 0;
    memset(c->out_init, 0xA5, c->out_bytes);
    return 1;
}

/* ---- judging ------------------------------------------------------------------ */

static int is_gemm(memra_op op)
{
    return op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 || op == MEMRA_OP_gemm_fp8 ||
           op == MEMRA_OP_gemm_fp8_blk || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r ||
           op == MEMRA_OP_gemm_kr || op == MEMRA_OP_gemm_w16;
}

/* The host module's record (the reference) and the host device. */
memra__modrec *memra__host_rec(memra_runtime *rt)
{
    for (int i = 0; i < rt->n_mods; i++)
        if (rt->mods[i]->dl == NULL && rt->mods[i]->loaded && strcmp(rt->mods[i]->name, "host") == 0) return rt->mods[i];
    return NULL;
}

/* The mass of a GEMM case: sum_k |x_k| |w_k| times the op's scales, per
 * element, computed in double from the decoded weight. */
static int gemm_mass(const acase *c, double *mass)
{
    const memra_gemm_args *ga = &c->a.gemm;
    const int m = ga->m, n = ga->n, k = ga->k;
    const float *x = NULL;
    const void *w = NULL;
    const float *grid = NULL;
    for (int i = 0; i < c->n_in; i++) {
        if (c->in_off[i] == OFF(gemm.x)) x = c->in[i];
        if (c->in_off[i] == OFF(gemm.w)) w = c->in[i];
        if (c->in_off[i] == OFF(gemm.w_scale_grid)) grid = c->in[i];
    }
    float *row = malloc((size_t)k * sizeof *row);
    /* gemm_kr: the K-packed weight widened once to f32 scales and int8 codes */
    uint8_t *wide = c->op == MEMRA_OP_gemm_kr ? malloc((size_t)memra_kr_wide_bytes(n, k)) : NULL;
    /* gemm_w16: the W16 operand's f16 mirror */
    uint16_t *wh = c->op == MEMRA_OP_gemm_w16 ? malloc((size_t)n * (size_t)k * 2) : NULL;
    if (row == NULL || x == NULL || w == NULL ||
        (c->op == MEMRA_OP_gemm_kr &&
         (wide == NULL || memra_kr_widen((memra_format)ga->w_format, w, n, k, wide) != 0)) ||
        (c->op == MEMRA_OP_gemm_w16 &&
         (wh == NULL || memra_w16_decode_f16((memra_format)ga->w_format, w, n, k, wh) != 0))) {
        free(row);
        free(wide);
        free(wh);
        return 0;
    }
    const int64_t gc = memra_fp8_grid_cols(k);
    for (int j = 0; j < n; j++) {
        switch (c->op) {
        case MEMRA_OP_gemm_f16: memra_decode_row(MEMRA_FORMAT_F16, (const uint16_t *)w + (size_t)j * k, k, row); break;
        case MEMRA_OP_gemm_bf16: memra_decode_row(MEMRA_FORMAT_BF16, (const uint16_t *)w + (size_t)j * k, k, row); break;
        case MEMRA_OP_gemm_w16: memra_decode_row(MEMRA_FORMAT_F16, wh + (size_t)j * k, k, row); break;
        case MEMRA_OP_gemm_fp8:
        case MEMRA_OP_gemm_fp8_blk:
            for (int q = 0; q < k; q++) {
                float s = c->op == MEMRA_OP_gemm_fp8 ? ga->w_scale : grid[(j / 128) * gc + q / 128];
                row[q] = memra_e4m3_decode(((const uint8_t *)w)[(size_t)j * k + q]) * s;
            }
            break;
        case MEMRA_OP_gemm_kr:
            /* |s q| + |mn| per value (Q6_K: |s q|), from the widened records */
            for (int q = 0; q < k; q++) {
                const uint8_t *rec = wide + ((size_t)(q / 128) * n + j) * MEMRA_KR_WIDE_BYTES;
                const int c2 = q % 128, b = c2 / 32;
                float s0, s1;
                memcpy(&s0, rec + 4 * b, 4);
                memcpy(&s1, rec + 16 + 4 * b, 4);
                const double qv = (double)(int8_t)rec[32 + c2];
                row[q] = ga->w_format == MEMRA_FORMAT_Q6_K ? (float)fabs((c2 % 32 < 16 ? s0 : s1) * qv)
                                                           : (float)(fabs(s0 * qv) + fabs((double)s1));
            }
            break;
        default:
            memra_decode_row(MEMRA_FORMAT_Q8_0, (const uint8_t *)w + (size_t)j * (k / 32) * MEMRA_Q8_0_BYTES, k, row);
            break;
        }
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int q = 0; q < k; q++) s += fabs((double)x[(size_t)i * k + q] * row[q]);
            /* The mass uses x before any activation quantisation: both sides
             * quantise it the same way, and the band is relative. */
            mass[(size_t)i * n + j] = s * fabs((double)ga->alpha);
        }
    }
    free(row);
    free(wide);
    free(wh);
    return 1;
}

/* Compare got with ref: returns 1 when it passes; otherwise writes what failed. */
int memra__acase_judge(const acase *c, const void *got, const void *ref, char *why, size_t len)
{
    if (!c->gemm) {
        const uint8_t *a = got, *b = ref;
        for (size_t i = 0; i < c->out_bytes; i++)
            if (a[i] != b[i]) {
                snprintf(why, len, "%s %s: byte %zu is 0x%02x, the host's 0x%02x (bit-identical op)",
                         memra_op_name(c->op), c->shape, i, a[i], b[i]);
                return 0;
            }
        return 1;
    }
    const memra_gemm_args *ga = &c->a.gemm;
    const float *y = got, *r = ref;
    double *own = c->mass == NULL ? memra__acase_mass(c) : NULL;
    const double *mass = c->mass != NULL ? c->mass : own;
    if (mass == NULL) {
        snprintf(why, len, "out of memory judging %s", memra_op_name(c->op));
        return 0;
    }
    int ok = 1;
    const int64_t yrows = ga->m + 2;
    for (int64_t i = 0; i < yrows && ok; i++)
        for (int64_t j = 0; j < ga->ldy && ok; j++) {
            const int64_t e = i * ga->ldy + j;
            const int inside = i >= 1 && i <= ga->m && j < ga->n;
            if (!inside) {
                if (memcmp(&y[e], &r[e], 4) != 0) {
                    snprintf(why, len, "%s %s: wrote outside its output: y[%lld] (row %lld col %lld) is %.9g",
                             memra_op_name(c->op), c->shape, (long long)e, (long long)i, (long long)j, y[e]);
                    ok = 0;
                }
                continue;
            }
            double ms = mass[(size_t)(i - 1) * ga->n + j];
            double err = fabs((double)y[e] - (double)r[e]) / (ms > 0.0 ? ms : 1e-300);
            if (!(err <= c->band)) {
                snprintf(why, len, "%s %s: y[%lld,%lld] = %.9g, host %.9g, error %.3g of mass %.4g > band %.2g",
                         memra_op_name(c->op), c->shape, (long long)(i - 1), (long long)j, y[e], r[e], err, ms,
                         c->band);
                ok = 0;
            }
        }
    free(own);
    return ok;
}

double *memra__acase_mass(const acase *c)
{
    const memra_gemm_args *ga = &c->a.gemm;
    double *mass = malloc((size_t)ga->m * (size_t)ga->n * sizeof *mass);
    if (mass != NULL && !gemm_mass(c, mass)) {
        free(mass);
        mass = NULL;
    }
    return mass;
}

/* For q8 GEMMs the operands the op reads are made by the host module from the
 * case's Q8_0 weight and f32 activation: q8_1 records of x (both), records of
 * w (q8_0r). The case keeps x and w in f32 / blocks for the mass. */
int memra__acase_operands(memra_device *host, const memra__modrec *href, acase *c, acase *op_case)
{
    *op_case = *c;
    memra_gemm_args *ga = &c->a.gemm;
    const int m = ga->m, k = ga->k, n = ga->n;
    acase qa = {.op = MEMRA_OP_quant_q8_1};
    qa.a.rows = m;
    qa.a.cols = k;
    qa.n_in = 1;
    qa.in_off[0] = OFF(src);
    for (int i = 0; i < c->n_in; i++)
        if (c->in_off[i] == OFF(gemm.x)) qa.in[0] = c->in[i], qa.in_bytes[0] = c->in_bytes[i];
    qa.out_bytes = memra_q8_1_bytes(m, k);
    qa.out_off = OFF(dst);
    qa.out_init = calloc(1, qa.out_bytes);
    void *xrec = malloc(qa.out_bytes);
    const char *why = NULL;
    int ok = qa.out_init != NULL && xrec != NULL && run_case(host, href, &qa, xrec, &why) == MEMRA_STATUS_OK;
    free(qa.out_init);
    void *wrec = NULL;
    size_t wrec_bytes = 0;
    if (ok && c->op == MEMRA_OP_gemm_q8_0r) {
        acase ra = {.op = MEMRA_OP_repack_q8_0};
        ra.a.rows = n;
        ra.a.cols = k;
        ra.n_in = 1;
        ra.in_off[0] = OFF(src);
        for (int i = 0; i < c->n_in; i++)
            if (c->in_off[i] == OFF(gemm.w)) ra.in[0] = c->in[i], ra.in_bytes[0] = c->in_bytes[i];
        wrec_bytes = ra.out_bytes = memra_q8_0r_bytes(n, k);
        ra.out_off = OFF(dst);
        ra.out_init = calloc(1, ra.out_bytes);
        wrec = malloc(wrec_bytes);
        ok = ra.out_init != NULL && wrec != NULL && run_case(host, href, &ra, wrec, &why) == MEMRA_STATUS_OK;
        free(ra.out_init);
    }
    /* op_case borrows c's buffers except the ones replaced here (owned by op_case). */
    op_case->n_in = 0;
    for (int i = 0; i < c->n_in; i++) {
        void *p = c->in[i];
        size_t b = c->in_bytes[i];
        if (c->in_off[i] == OFF(gemm.x)) p = xrec, b = qa.out_bytes;
        if (c->in_off[i] == OFF(gemm.w) && wrec != NULL) p = wrec, b = wrec_bytes;
        op_case->in[op_case->n_in] = p;
        op_case->in_bytes[op_case->n_in] = b;
        op_case->in_off[op_case->n_in] = c->in_off[i];
        op_case->n_in++;
    }
    if (!ok) {
        free(xrec);
        free(wrec);
    }
    return ok;
}

void memra__acase_operands_free(const acase *c, acase *op_case)
{
    for (int i = 0; i < op_case->n_in; i++)
        if (op_case->in[i] != c->in[i]) free(op_case->in[i]);
}

/* Run one case on the candidate and the reference, judge it. Returns OK
 * (passed), DECLINED (*declined set), or an error with `why` written. */
static memra_status one_case(memra_device *dev, memra_device *host, const memra__modrec *r,
                             const memra__modrec *href, acase *c, int variant, char *why, size_t len)
{
    acase run = *c;
    const int q8 = c->op == MEMRA_OP_gemm_q8_0 || c->op == MEMRA_OP_gemm_q8_0r || c->op == MEMRA_OP_gemm_kr;
    if (q8 && !memra__acase_operands(host, href, c, &run)) {
        snprintf(why, len, "%s: the host could not make its operands", memra_op_name(c->op));
        return MEMRA_STATUS_INTERNAL;
    }
    void *got = malloc(c->out_bytes), *ref = malloc(c->out_bytes);
    memra_status st = MEMRA_STATUS_OUT_OF_MEMORY;
    const char *dwhy = NULL;
    if (got != NULL && ref != NULL) {
        memra__clear_error();
        st = run_case(host, href, &run, ref, &dwhy);
        if (st != MEMRA_STATUS_OK) {
            snprintf(why, len, "%s %s: the host reference failed: %s: %s", memra_op_name(c->op), c->shape,
                     memra_status_str(st), memra_last_error());
            st = MEMRA_STATUS_INTERNAL;
        } else {
            memra__clear_error();
            st = memra__acase_run(dev, r, &run, got, &dwhy, variant);
            if (st == MEMRA_STATUS_DECLINED) {
                snprintf(why, len, "%s", dwhy ? dwhy : "(no reason)");
            } else if (st != MEMRA_STATUS_OK) {
                snprintf(why, len, "%s %s on %s returned %s: %s", memra_op_name(c->op), c->shape, dev->label,
                         memra_status_str(st), memra_last_error()[0] ? memra_last_error() : "(no detail)");
            } else if (!memra__acase_judge(c, got, ref, why, len)) {
                st = MEMRA_STATUS_MODULE_ERROR;
            }
            if (st != MEMRA_STATUS_OK && st != MEMRA_STATUS_DECLINED && variant >= 0) {
                size_t nv = 0;
                const memra_variant *v = memra__variants(r, dev, c->op, &nv);
                size_t l = strlen(why);
                if (v != NULL && (size_t)variant < nv && l < len)
                    snprintf(why + l, len - l, " (variant %s)", v[variant].name);
            }
        }
    }
    if (q8) memra__acase_operands_free(c, &run);
    free(got);
    free(ref);
    return st;
}

/* The FP8 GEMMs' second case at a given scale (x in (-1, 1)): a static
 * x_scale = 0.75 / 448 (values above 0.75 saturate); gemm_fp8_blk also gets
 * producer maxima at 80% of each (row, 128) block's, [ceil(k/128) x m] row
 * fastest, which win over it. 0 when out of memory. */
static int given_scale_case(acase *c)
{
    memra_gemm_args *ga = &c->a.gemm;
    ga->x_scale = 0.75f / 448.0f;
    if (c->op != MEMRA_OP_gemm_fp8_blk) return 1;
    const float *x = NULL;
    for (int i = 0; i < c->n_in; i++)
        if (c->in_off[i] == OFF(gemm.x)) x = c->in[i];
    const int m = ga->m, k = ga->k, kb = (k + 127) / 128;
    float *a = x ? add_in(c, (size_t)kb * (size_t)m * 4, OFF(gemm.x_amax)) : NULL;
    if (a == NULL) return 0;
    for (int i = 0; i < m; i++)
        for (int b = 0; b < kb; b++) {
            float bm = 0.0f;
            for (int e = b * 128; e < k && e < b * 128 + 128; e++) bm = fmaxf(bm, fabsf(x[(size_t)i * k + e]));
            a[b * m + i] = bm * 0.8f;
        }
    return 1;
}

static int provides(const memra__modrec *r, memra_op op)
{
    switch (op) {
#define MEMRA__OP_PROV(name)                                                        \
    case MEMRA_OP_##name:                                                           \
        return r->ops.name != NULL;
        MEMRA_OP_LIST(MEMRA__OP_PROV)
#undef MEMRA__OP_PROV
    default: return 0;
    }
}

static uint64_t seed_counter;

int memra__admission_check(memra_runtime *rt, memra__modrec *r)
{
    memra__modrec *href = memra__host_rec(rt);
    memra_device *host = rt->n_devices > 0 ? rt->devices[rt->n_devices - 1] : NULL;
    if (href == NULL || host == NULL || !host->is_host || !href->admitted[host->index]) {
        memra__verdict_admission(r, MEMRA__ADM_OFF, 0.0, 0, "no host reference: not checked");
        return 1;
    }
    int cases = 0;
    const char *lim = memra__config_lookup(&rt->cfg, "MEMRA_ADMISSION_TIMEOUT_MS");
    const double limit_ms = lim != NULL ? strtod(lim, NULL) : 2000.0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rng g = {.s = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (++seed_counter * 0x9E3779B97F4A7C15ull)};
    if (g.s == 0) g.s = 88172645463325252ull;
    const double t0 = now_ms();
    char why[512] = "", declined[256] = "";
    size_t dl = 0;
    int ok = 1;
    for (int d = 0; d < rt->n_devices && ok; d++) {
        memra_device *dev = rt->devices[d];
        if (!r->admitted[d]) continue;
        for (int op = 0; op < MEMRA_OP_COUNT_ && ok; op++) {
            /* gemm_experts has no admission case yet: the grouped op is checked by
             * `memra check` and the tests against the host module's loop of dense ops */
            if (!provides(r, (memra_op)op) || op == MEMRA_OP_accprobe || op == MEMRA_OP_gemm_experts) continue;
            size_t nv = 0;
            memra__variants(r, dev, (memra_op)op, &nv);
            const int per = op == MEMRA_OP_gemm_kr ? 3 : is_gemm((memra_op)op) ? 2 : 1;
            int n_cases = per * (1 + (int)nv), n_declined = 0;
            for (int ci = 0; ci < n_cases && ok; ci++) {
                const int variant = ci / per - 1; /* the default first, then each variant */
                acase c;
                int built = is_gemm((memra_op)op) ? (ci % per == 0   ? build_gemm(&g, (memra_op)op, 4, 64, 256, &c)
                                                     : ci % per == 1 ? build_gemm(&g, (memra_op)op, 33, 144, 512, &c)
                                                                     : build_gemm(&g, (memra_op)op, 17, 96, 512, &c))
                                                  : build_exact(&g, (memra_op)op, &c);
                /* the FP8 GEMMs' 33-row case at a given activation scale: the one-pass quantisers */
                if (built && ci % 2 == 1 && (op == MEMRA_OP_gemm_fp8 || op == MEMRA_OP_gemm_fp8_blk))
                    built = given_scale_case(&c);
                if (!built) {
                    memra__acase_free(&c);
                    snprintf(why, sizeof why, "out of memory building the %s case", memra_op_name((memra_op)op));
                    ok = 0;
                    break;
                }
                memra__trial_stage("self-check %s case %d on %s", memra_op_name((memra_op)op), ci + 1, dev->label);
                memra_status st = one_case(dev, host, r, href, &c, variant, why, sizeof why);
                memra__acase_free(&c);
                cases++;
                if (st == MEMRA_STATUS_DECLINED) n_declined++;
                else if (st != MEMRA_STATUS_OK) ok = 0;
                if (ok && now_ms() - t0 > limit_ms) {
                    snprintf(why, sizeof why, "self-check timed out: %.0f ms on %s at %s (limit %.0f ms, "
                             "MEMRA_ADMISSION_TIMEOUT_MS)", now_ms() - t0, dev->label, memra_op_name((memra_op)op),
                             limit_ms);
                    ok = 0;
                }
            }
            if (ok && n_declined == n_cases && dl < sizeof declined - 40)
                dl += (size_t)snprintf(declined + dl, sizeof declined - dl, "%s%s declined every case on %s",
                                       dl ? "; " : "", memra_op_name((memra_op)op), dev->label);
        }
    }
    const double ms = now_ms() - t0;
    if (!ok) {
        memra__verdict_admission(r, MEMRA__ADM_QUARANTINED, ms, cases, why);
        memra__log(MEMRA_LOG_WARN, "registry", "module %s quarantined by the admission self-check (%.1f ms): %s",
                   r->name, ms, why);
        return 0;
    }
    char note[sizeof r->adm_note];
    snprintf(note, sizeof note, "%d cases passed in %.1f ms%s%s", cases, ms, declined[0] ? "; " : "", declined);
    memra__verdict_admission(r, MEMRA__ADM_PASSED, ms, cases, note);
    memra__log(MEMRA_LOG_INFO, "registry", "module %s passed the admission self-check: %s", r->name, r->adm_note);
    return 1;
}

static int variant_name_ok(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > 32) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-')) return 0;
    return 1;
}

int memra__variants_validate(memra_runtime *rt, const memra__modrec *r, char *why, size_t len)
{
    if (r->desc.struct_size < offsetof(memra_module_desc, variants) + sizeof r->desc.variants ||
        r->desc.variants == NULL)
        return 1;
    for (int d = 0; d < rt->n_devices; d++) {
        if (!r->admitted[d]) continue;
        for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
            size_t n = 0;
            const memra_variant *v = r->desc.variants(&rt->devices[d]->caps, (memra_op)op, &n);
            if (v == NULL || n == 0) continue;
            if (n > 64) {
                snprintf(why, len, "%zu variants of %s (at most 64)", n, memra_op_name((memra_op)op));
                return 0;
            }
            if (!provides(r, (memra_op)op)) {
                snprintf(why, len, "variants listed for %s, which the module does not provide", memra_op_name((memra_op)op));
                return 0;
            }
            for (size_t i = 0; i < n; i++) {
                if (!variant_name_ok(v[i].name)) {
                    snprintf(why, len, "variant %zu of %s: name missing or not [a-z0-9_.-]{1,32}", i,
                             memra_op_name((memra_op)op));
                    return 0;
                }
                for (size_t j = 0; j < i; j++)
                    if (strcmp(v[i].name, v[j].name) == 0) {
                        snprintf(why, len, "variant name '%s' of %s appears twice", v[i].name,
                                 memra_op_name((memra_op)op));
                        return 0;
                    }
            }
        }
    }
    return 1;
}
