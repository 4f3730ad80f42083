/* libFuzzer harness: memra_weight_create + memra_weight_prepare +
 * memra_matmul_ex on the host device (each input twice: the defaults, and no
 * f16 budget with MEMRA_W16=1, the W16 operand's path), with fuzzed descriptors (format,
 * shape, byte length, scale, grid and its length, struct size) and fuzzed
 * call arguments (m, ldy, row offset, alpha, f16 activations, struct size),
 * and the given activation scales: the descriptor's input_scale (any float)
 * and memra_matmul_args.x_amax (a host buffer of the maxima the weight's FP8
 * lane reads, fuzzed values, or a misaligned pointer that must be refused).
 *
 * The harness keeps the caller's side of every contract the library cannot
 * check, so whatever AddressSanitizer reports is the library's:
 *  - desc.data has exactly desc.size bytes, desc.grid exactly grid_count
 *    floats, desc.name is a string or NULL;
 *  - the descriptor and the argument struct are allocated with exactly the
 *    struct_size they declare (the struct_size member itself always fits),
 *    so a member read past the declared size is an overflow;
 *  - x and y are host buffers that cover what m, ldy and the row offset
 *    describe when those are valid (m >= 1, ldy 0 or >= out_f, offset >= 0);
 *    x_amax, when given, has ceil(in_f/128) x m floats (one for a weight
 *    without a block-128 grid);
 *    invalid values come with a small buffer and must be refused.
 * After a successful matmul, every y element outside rows [off, off + m) and
 * columns [0, out_f) must still hold its sentinel: the library writes nowhere
 * else. Shapes are kept small enough (weights up to 1 MiB) that one input
 * runs in milliseconds. */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "tests/fuzz/fuzz_input.h"

#define MAX_BYTES (1u << 20)
#define SENTINEL 0xFFC0DEADu /* a NaN no computation produces */

/* every input runs twice: [0] the defaults, [1] no f16 budget with MEMRA_W16=1 (a Q8_0 / Q4_0 / K-quant weight
 * then takes the W16 operand and the host's gemm_w16) */
static memra_runtime *g_rts[2];
static memra_device *g_hosts[2];
static memra_runtime *g_rt;
static memra_device *g_host;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("MEMRA_ARCH", "host", 1); /* never the CUDA driver: the host device only */
    if (getenv("MEMRA_LOG") == NULL) setenv("MEMRA_LOG", "error", 1);
    static const char *const k_w16[] = {"MEMRA_F16_BUDGET_MB=0", "MEMRA_W16=1", NULL};
    for (int i = 0; i < 2; i++) {
        memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .settings = i ? k_w16 : NULL};
        if (memra_open(&o, &g_rts[i]) != MEMRA_STATUS_OK) {
            fprintf(stderr, "fuzz_matmul: memra_open: %s\n", memra_last_error());
            abort();
        }
        g_hosts[i] = memra_device_host(g_rts[i]);
        if (g_hosts[i] == NULL) abort();
    }
    return 0;
}

static const int64_t k_dims[] = {0,  1,   2,   31,  32,  33,  64,     96,      127,        128,      129,
                                 160, 256, 257, 384, 512, -1,  1 << 24, (1 << 24) + 1, INT32_MAX, INT64_MAX, INT64_MIN};
static const uint32_t k_struct_sizes[] = {0,  1,  4,  8,  16, 24, 40, 48, 56, 60, 64, 72, 80, 1024,
                                          (uint32_t)offsetof(memra_matmul_args, x_amax),
                                          (uint32_t)offsetof(memra_weight_desc, input_scale)};

static int64_t take_dim(fuzz_in *in)
{
    const uint8_t b = take_u8(in);
    if (b < 128) return (int64_t)(b % 64) * 8 + 8 * (b >= 64); /* small multiples of 8 */
    if (b < 192) return (int64_t)take_u(in, 2) % 600;
    return k_dims[b % (sizeof k_dims / sizeof k_dims[0])];
}

static void check_y(const float *y, int64_t rows, int64_t ldy, int64_t off, int64_t m, int64_t out_f)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < ldy; c++) {
            if (r >= off && r < off + m && c < out_f) continue;
            uint32_t u;
            memcpy(&u, &y[r * ldy + c], sizeof u);
            if (u != SENTINEL) {
                fprintf(stderr, "fuzz_matmul: y[%lld][%lld] written outside rows [%lld, %lld) x cols [0, %lld)\n",
                        (long long)r, (long long)c, (long long)off, (long long)(off + m), (long long)out_f);
                abort();
            }
        }
}

typedef struct mm_params {
    int32_t m;
    int ldy_zero;       /* ldy = 0 (read as out_f) */
    int64_t ldy, off;   /* ldy: out_f + this, unless ldy_zero */
    int x_is_f16;
    float alpha;
    uint32_t struct_size;
    int amax_mode;      /* 0: no x_amax; 1: the maxima buffer; 2: it, misaligned by 2 bytes (refused) */
} mm_params;

static mm_params take_mm(fuzz_in *in)
{
    static const int32_t k_m[] = {1, 2, 3, 4, 7, 8, 16, 17, 0, -1, INT32_MIN};
    static const int64_t k_ldy_extra[] = {0, 0, 1, 3, -1, -100, INT64_MIN};
    mm_params p;
    p.m = TAKE_PICK(in, k_m);
    const uint8_t lmode = take_u8(in);
    p.ldy_zero = lmode % 4 == 0;
    p.ldy = p.ldy_zero ? 0 : TAKE_PICK(in, k_ldy_extra);
    p.off = (int64_t)((lmode >> 2) % 5) - 1; /* -1 .. 3 */
    p.x_is_f16 = take_u8(in) % 4 == 1;
    p.alpha = take_u8(in) % 2 ? take_f32(in) : 1.0f;
    p.struct_size = take_u8(in) % 3 == 0 ? TAKE_PICK(in, k_struct_sizes) : (uint32_t)sizeof(memra_matmul_args);
    p.amax_mode = take_u8(in) % 4;
    if (p.amax_mode == 3) p.amax_mode = 0;
    return p;
}

static void run_matmul(fuzz_in *in, const mm_params *p, memra_weight *w, int64_t out_f, int64_t in_f, int blk)
{
    const int32_t m = p->m;
    const int64_t ldy = p->ldy_zero ? 0 : out_f + p->ldy, off = p->off;
    const int x_is_f16 = p->x_is_f16;
    const float alpha = p->alpha;
    const uint32_t ssize = p->struct_size;
    const int valid = m >= 1 && (ldy == 0 || ldy >= out_f) && off >= 0;
    const int64_t eff_ldy = ldy == 0 ? out_f : ldy;
    const int64_t rows = valid ? off + m : 1, xcount = valid ? (int64_t)m * in_f : 1;
    const int64_t ycount = valid ? rows * eff_ldy : 1;
    if ((uint64_t)xcount * 4 > 8 * MAX_BYTES || (uint64_t)ycount * 4 > 8 * MAX_BYTES) return;

    memra_buffer *bx = NULL, *by = NULL;
    const size_t xbytes = (size_t)xcount * (x_is_f16 ? 2 : 4), ybytes = (size_t)ycount * 4;
    if (memra_buffer_create(g_host, xbytes, &bx) != MEMRA_STATUS_OK ||
        memra_buffer_create(g_host, ybytes, &by) != MEMRA_STATUS_OK) {
        memra_buffer_destroy(bx);
        return;
    }
    uint8_t *xs = malloc(xbytes);
    float *ys = malloc(ybytes);
    /* the producer's maxima: fuzzed floats (NaN, negatives, zeros read as scale 1) */
    const size_t na = p->amax_mode && valid ? (blk ? (size_t)((in_f + 127) / 128) * (size_t)m : 1) : 0;
    float *amax = na ? malloc(na * sizeof(float) + 4) : NULL;
    if (xs == NULL || ys == NULL || (na && amax == NULL)) goto out;
    for (size_t i = 0; i < na; i++) amax[i] = take_u8(in) % 4 == 0 ? take_f32(in) : 0.5f + (float)(i % 7);
    for (size_t i = 0; i < xbytes; i++) xs[i] = in->n ? take_u8(in) : (uint8_t)(0x3C + i % 7); /* never all zeros */
    for (size_t i = 0; i < (size_t)ycount; i++) memcpy(&ys[i], &(uint32_t){SENTINEL}, 4);
    if (memra_buffer_write(bx, 0, xs, xbytes) != MEMRA_STATUS_OK || memra_buffer_write(by, 0, ys, ybytes) != MEMRA_STATUS_OK)
        goto out;

    memra_matmul_args a = {.struct_size = ssize, .x = memra_buffer_ptr(bx), .x_is_f16 = x_is_f16, .m = m,
                           .y = memra_buffer_ptr(by), .ldy = ldy, .y_row_offset = off, .alpha = alpha,
                           .x_amax = amax ? (memra_dptr)(uintptr_t)amax + (p->amax_mode == 2 ? 2u : 0u) : 0};
    memra_matmul_args *pa = exact_struct(&a, sizeof a, ssize);
    if (pa == NULL) goto out;
    const memra_status st = memra_matmul_ex(g_host, w, pa);
    const int amax_seen = MEMRA_HAS_MEMBER(pa, memra_matmul_args, x_amax) && pa->x_amax != 0;
    free(pa);
    if (st == MEMRA_STATUS_OK) {
        if (amax_seen && p->amax_mode == 2) {
            fprintf(stderr, "fuzz_matmul: matmul accepted a misaligned x_amax\n");
            abort();
        }
        if (!valid) {
            fprintf(stderr, "fuzz_matmul: matmul accepted m=%d ldy=%lld off=%lld for out_f %lld\n", m, (long long)ldy,
                    (long long)off, (long long)out_f);
            abort();
        }
        if (memra_device_synchronize(g_host) == MEMRA_STATUS_OK &&
            memra_buffer_read(by, 0, ys, ybytes) == MEMRA_STATUS_OK)
            check_y(ys, rows, eff_ldy, off, m, out_f);
    }
out:
    free(xs);
    free(ys);
    free(amax);
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
}

static void one_input(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int i = 0; i < 2; i++) {
        g_rt = g_rts[i];
        g_host = g_hosts[i];
        one_input(data, size);
    }
    return 0;
}

static void one_input(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    const memra_format format = (memra_format)(take_u8(&in) % 10); /* 8 and 9 are not formats */
    const int64_t out_f = take_dim(&in), in_f = take_dim(&in);
    const uint8_t smode = take_u8(&in);
    /* the byte length: what the shape needs, one off, or anything */
    uint64_t want = 0;
    if (out_f > 0 && in_f > 0 && out_f <= (1 << 24) && in_f <= (1 << 24) && memra_format_block_values(format) > 0 &&
        in_f % memra_format_block_values(format) == 0)
        want = (uint64_t)out_f * memra_format_row_bytes(format, in_f);
    uint64_t nbytes = smode % 4 == 0 ? take_u(&in, 3) : smode % 4 == 1 ? want + 1 : smode % 4 == 2 ? want - (want > 0) : want;
    if (nbytes > MAX_BYTES) nbytes = take_u(&in, 2); /* keep the copy small: the size no longer matches */
    const uint8_t gmode = take_u8(&in);
    float scale = gmode & 1 ? take_f32(&in) : 0.0f;
    const int with_grid = (gmode >> 1) % 3 == 0;
    size_t gcount = 0;
    if (with_grid && out_f > 0 && in_f > 0 && out_f <= (1 << 24) && in_f <= (1 << 24))
        gcount = (size_t)(memra_fp8_grid_rows(out_f) * memra_fp8_grid_cols(in_f));
    if ((gmode >> 3) % 4 == 1) gcount += 1;
    else if ((gmode >> 3) % 4 == 2 && gcount) gcount -= 1;
    if (gcount > 65536) gcount = 0;
    const int grid_null = (gmode >> 5) % 5 == 0;
    const uint32_t ssize = take_u8(&in) % 3 == 0 ? TAKE_PICK(&in, k_struct_sizes) : (uint32_t)sizeof(memra_weight_desc);
    const int name_null = take_u8(&in) % 2;
    const mm_params mp = take_mm(&in);
    /* the static activation scale: none, any float, or a plain one */
    const uint8_t imode = take_u8(&in) % 4;
    const float in_scale = imode == 1 ? take_f32(&in) : imode == 2 ? 0.03125f : 0.0f;

    uint8_t *bytes = malloc(nbytes ? nbytes : 1);
    float *grid = with_grid && !grid_null ? malloc((gcount ? gcount : 1) * sizeof(float)) : NULL;
    if (bytes == NULL || (with_grid && !grid_null && grid == NULL)) goto out;
    for (uint64_t i = 0; i < nbytes; i++) bytes[i] = in.n ? take_u8(&in) : (uint8_t)(0x11 + i % 13);
    for (size_t i = 0; grid && i < gcount; i++) grid[i] = take_u8(&in) % 8 == 0 ? take_f32(&in) : 0.0625f * (float)(1 + i % 5);

    memra_weight_desc d = {.struct_size = ssize, .format = format, .out_f = out_f, .in_f = in_f, .data = bytes,
                           .size = (size_t)nbytes, .scale = scale, .grid = grid,
                           .grid_count = with_grid ? gcount : (gmode >> 7 ? 1 : 0),
                           .name = name_null ? NULL : "fuzz.weight", .input_scale = in_scale};
    memra_weight_desc *pd = exact_struct(&d, sizeof d, ssize);
    if (pd == NULL) goto out;
    memra_weight *w = NULL;
    memra_status st = memra_weight_create(g_rt, pd, &w);
    free(pd);
    if (st == MEMRA_STATUS_OK) {
        free(bytes); /* create copied them: the weight must not read the caller's bytes again */
        bytes = NULL;
        if (memra_weight_prepare(w, g_host) == MEMRA_STATUS_OK)
            run_matmul(&in, &mp, w, out_f, in_f, grid != NULL);
        memra_weight_destroy(w);
    } else if (w != NULL) {
        fprintf(stderr, "fuzz_matmul: memra_weight_create failed but set *out_w\n");
        abort();
    }
out:
    free(bytes);
    free(grid);
}
