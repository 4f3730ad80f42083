/* libFuzzer harness: memra_weight_create_experts + memra_weight_prepare +
 * memra_matmul_experts_ex on the host device, with fuzzed expert descriptors
 * (format, expert count, shape, byte length, per-expert scales, grids and
 * their length, struct size) and fuzzed grouped calls (rows, every row's
 * expert id: valid, negative, E, INT32_MAX / MIN; ldy, row offset, alpha,
 * f16 activations, struct size), on three runtimes: the defaults (f16
 * mirrors), no mirror budget (the floor's records and blocks, fp8's slab) and
 * no mirror budget with MEMRA_W16=1 (quantised experts on the W16 operand and
 * the host's grouped gemm_w16).
 *
 * The harness keeps the caller's side of every contract the library cannot
 * check, so whatever AddressSanitizer reports is the library's:
 *  - desc.data has exactly desc.size bytes, desc.scales n_experts floats
 *    (when E is small enough to allocate), desc.grid exactly grid_count;
 *  - the descriptor and the argument struct are allocated with exactly the
 *    struct_size they declare;
 *  - x, ids and y are host buffers that cover what rows, ldy and the row
 *    offset describe when those are valid; invalid values come with a small
 *    buffer and must be refused.
 * After a successful call, every y element outside rows [off, off + rows)
 * and columns [0, out_f), and every element of a row whose id is outside
 * [0, E), must still hold its sentinel: the library writes nowhere else. */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "tests/fuzz/fuzz_input.h"

#define MAX_BYTES (1u << 20)
#define SENTINEL 0xFFC0DEADu /* a NaN no computation produces */

#define N_RT 3
static memra_runtime *g_rt[N_RT]; /* the defaults; MEMRA_F16_BUDGET_MB=0; that and MEMRA_W16=1 */
static memra_device *g_host[N_RT];
static int g_trace; /* FUZZ_TRACE=1: each step's status on stderr (for writing seeds) */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_trace = getenv("FUZZ_TRACE") != NULL;
    setenv("MEMRA_ARCH", "host", 1); /* never the CUDA driver: the host device only */
    if (getenv("MEMRA_LOG") == NULL) setenv("MEMRA_LOG", "error", 1);
    static const char *const k_floor[] = {"MEMRA_F16_BUDGET_MB=0", NULL};
    static const char *const k_w16[] = {"MEMRA_F16_BUDGET_MB=0", "MEMRA_W16=1", NULL};
    static const char *const *const k_settings[N_RT] = {NULL, k_floor, k_w16};
    for (int i = 0; i < N_RT; i++) {
        memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .settings = k_settings[i]};
        if (memra_open(&o, &g_rt[i]) != MEMRA_STATUS_OK) {
            fprintf(stderr, "fuzz_experts: memra_open: %s\n", memra_last_error());
            abort();
        }
        g_host[i] = memra_device_host(g_rt[i]);
        if (g_host[i] == NULL) abort();
    }
    return 0;
}

static const int64_t k_dims[] = {0, 1, 2, 31, 32, 33, 64, 96, 127, 128, 129, 160, 256, 257, -1,
                                  1 << 24, INT32_MAX, INT64_MAX, INT64_MIN};
static const int32_t k_experts[] = {1, 2, 3, 4, 5, 8, 16, 64, 0, -1, 65536, 65537, INT32_MAX, INT32_MIN};
static const uint32_t k_desc_sizes[] = {0, 1, 4, 8, 16, 24, 40, 48, 56, 64, 72, 1024,
                                        (uint32_t)offsetof(memra_experts_desc, name)};
static const uint32_t k_args_sizes[] = {0, 1, 4, 8, 16, 24, 32, 48, 56, 64, 1024,
                                        (uint32_t)offsetof(memra_matmul_experts_args, stream)};
static const int32_t k_rows[] = {1, 2, 3, 5, 8, 16, 17, 33, 0, -1, INT32_MIN};
static const int64_t k_ldy_extra[] = {0, 0, 1, 3, -1, -100, INT64_MIN};

static int64_t take_dim(fuzz_in *in)
{
    const uint8_t b = take_u8(in);
    if (b < 128) return (int64_t)(b % 32) * 8 + 8 * (b >= 32); /* small multiples of 8 */
    if (b < 192) return (int64_t)take_u(in, 2) % 300;
    return k_dims[b % (sizeof k_dims / sizeof k_dims[0])];
}

/* One row's expert: valid (most), dropped (-1), or out of range either way. */
static int32_t take_id(fuzz_in *in, int32_t n_experts)
{
    const uint8_t b = take_u8(in);
    if (b < 200) return (int32_t)(b % (uint32_t)n_experts);
    static const int32_t k_bad[] = {-1, -2, INT32_MIN, INT32_MAX};
    if (b < 240) return b % 5 == 4 ? n_experts : k_bad[b % 4];
    return (int32_t)take_u(in, 4);
}

static void run_experts(fuzz_in *in, int rt, memra_weight *w, int32_t n_experts, int64_t out_f, int64_t in_f)
{
    const int32_t rows = TAKE_PICK(in, k_rows);
    const uint8_t lmode = take_u8(in);
    const int64_t ldy = lmode % 4 == 0 ? 0 : out_f + TAKE_PICK(in, k_ldy_extra);
    const int64_t off = (int64_t)((lmode >> 2) % 5) - 1; /* -1 .. 3 */
    const int x_is_f16 = take_u8(in) % 4 == 1;
    const float alpha = take_u8(in) % 2 ? take_f32(in) : 1.0f;
    const uint32_t ssize =
        take_u8(in) % 3 == 0 ? TAKE_PICK(in, k_args_sizes) : (uint32_t)sizeof(memra_matmul_experts_args);
    const int valid = rows >= 1 && (ldy == 0 || ldy >= out_f) && off >= 0;
    const int64_t eff_ldy = ldy == 0 ? out_f : ldy;
    const int64_t yrows = valid ? off + rows : 1, xcount = valid ? (int64_t)rows * in_f : 1;
    const int64_t ycount = valid ? yrows * eff_ldy : 1;
    if ((uint64_t)xcount * 4 > 8 * MAX_BYTES || (uint64_t)ycount * 4 > 8 * MAX_BYTES) return;

    memra_buffer *bx = NULL, *bi = NULL, *by = NULL;
    const size_t xbytes = (size_t)xcount * (x_is_f16 ? 2 : 4), ybytes = (size_t)ycount * 4;
    const size_t nid = valid ? (size_t)rows : 1;
    if (memra_buffer_create(g_host[rt], xbytes, &bx) != MEMRA_STATUS_OK ||
        memra_buffer_create(g_host[rt], nid * sizeof(int32_t), &bi) != MEMRA_STATUS_OK ||
        memra_buffer_create(g_host[rt], ybytes, &by) != MEMRA_STATUS_OK) {
        memra_buffer_destroy(bx);
        memra_buffer_destroy(bi);
        return;
    }
    uint8_t *xs = malloc(xbytes);
    float *ys = malloc(ybytes);
    int32_t *ids = malloc(nid * sizeof(int32_t));
    if (xs == NULL || ys == NULL || ids == NULL) goto out;
    for (size_t i = 0; i < nid; i++) ids[i] = take_id(in, n_experts);
    for (size_t i = 0; i < xbytes; i++) xs[i] = in->n ? take_u8(in) : (uint8_t)(0x3C + i % 7); /* never all zeros */
    for (size_t i = 0; i < (size_t)ycount; i++) memcpy(&ys[i], &(uint32_t){SENTINEL}, 4);
    if (memra_buffer_write(bx, 0, xs, xbytes) != MEMRA_STATUS_OK ||
        memra_buffer_write(bi, 0, ids, nid * sizeof(int32_t)) != MEMRA_STATUS_OK ||
        memra_buffer_write(by, 0, ys, ybytes) != MEMRA_STATUS_OK)
        goto out;

    memra_matmul_experts_args a = {.struct_size = ssize, .x = memra_buffer_ptr(bx), .x_is_f16 = x_is_f16,
                                   .rows = rows, .ids = memra_buffer_ptr(bi), .y = memra_buffer_ptr(by),
                                   .ldy = ldy, .y_row_offset = off, .alpha = alpha};
    memra_matmul_experts_args *pa = exact_struct(&a, sizeof a, ssize);
    if (pa == NULL) goto out;
    const memra_status st = memra_matmul_experts_ex(g_host[rt], w, pa);
    free(pa);
    if (g_trace) fprintf(stderr, "fuzz_experts: call rows %d: %s\n", rows, memra_status_str(st));
    if (st != MEMRA_STATUS_OK) goto out;
    if (!valid) {
        fprintf(stderr, "fuzz_experts: accepted rows=%d ldy=%lld off=%lld for out_f %lld\n", rows, (long long)ldy,
                (long long)off, (long long)out_f);
        abort();
    }
    if (memra_device_synchronize(g_host[rt]) != MEMRA_STATUS_OK ||
        memra_buffer_read(by, 0, ys, ybytes) != MEMRA_STATUS_OK)
        goto out;
    for (int64_t r = 0; r < yrows; r++) {
        const int own = r >= off && ids[r - off] >= 0 && ids[r - off] < n_experts;
        for (int64_t c = 0; c < eff_ldy; c++) {
            if (own && c < out_f) continue;
            uint32_t u;
            memcpy(&u, &ys[r * eff_ldy + c], sizeof u);
            if (u != SENTINEL) {
                fprintf(stderr, "fuzz_experts: y[%lld][%lld] written (rows [%lld, %lld), out_f %lld, id %d, E %d)\n",
                        (long long)r, (long long)c, (long long)off, (long long)(off + rows), (long long)out_f,
                        r >= off ? ids[r - off] : -1, n_experts);
                abort();
            }
        }
    }
out:
    free(xs);
    free(ys);
    free(ids);
    memra_buffer_destroy(bx);
    memra_buffer_destroy(bi);
    memra_buffer_destroy(by);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in in = {data, size};
    const int rt = take_u8(&in) % N_RT;
    const memra_format format = (memra_format)(take_u8(&in) % 10); /* 9 is not a format */
    const int32_t n_experts = TAKE_PICK(&in, k_experts);
    const int64_t out_f = take_dim(&in), in_f = take_dim(&in);
    const uint8_t smode = take_u8(&in);
    /* the byte length: what the shape needs, one off, or anything */
    uint64_t want = 0;
    if (n_experts >= 1 && n_experts <= 65536 && out_f > 0 && in_f > 0 && out_f <= (1 << 24) && in_f <= (1 << 24) &&
        memra_format_block_values(format) > 0 && in_f % memra_format_block_values(format) == 0)
        want = (uint64_t)n_experts * (uint64_t)out_f * memra_format_row_bytes(format, in_f);
    uint64_t nbytes = smode % 4 == 0 ? take_u(&in, 3) : smode % 4 == 1 ? want + 1 : smode % 4 == 2 ? want - (want > 0) : want;
    if (nbytes > MAX_BYTES) nbytes = take_u(&in, 2); /* keep the copy small: the size no longer matches */
    const uint8_t gmode = take_u8(&in);
    /* per-expert scales: NULL, or n_experts floats (only where E is allocatable) */
    const int with_scales = (gmode & 1) && n_experts >= 1 && n_experts <= 65536;
    const int with_grid = (gmode >> 1) % 3 == 0;
    size_t gcount = 0;
    if (with_grid && n_experts >= 1 && n_experts <= 64 && out_f > 0 && in_f > 0 && out_f <= (1 << 24) &&
        in_f <= (1 << 24))
        gcount = (size_t)n_experts * (size_t)(memra_fp8_grid_rows(out_f) * memra_fp8_grid_cols(in_f));
    if ((gmode >> 3) % 4 == 1) gcount += 1;
    else if ((gmode >> 3) % 4 == 2 && gcount) gcount -= 1;
    if (gcount > 65536) gcount = 0;
    const int grid_null = (gmode >> 5) % 5 == 0;
    const uint32_t ssize = take_u8(&in) % 3 == 0 ? TAKE_PICK(&in, k_desc_sizes) : (uint32_t)sizeof(memra_experts_desc);
    const int name_null = take_u8(&in) % 2;

    uint8_t *bytes = malloc(nbytes ? nbytes : 1);
    float *scales = with_scales ? malloc((size_t)n_experts * sizeof(float)) : NULL;
    float *grid = with_grid && !grid_null ? malloc((gcount ? gcount : 1) * sizeof(float)) : NULL;
    if (bytes == NULL || (with_scales && scales == NULL) || (with_grid && !grid_null && grid == NULL)) goto out;
    for (uint64_t i = 0; i < nbytes; i++) bytes[i] = in.n ? take_u8(&in) : (uint8_t)(0x11 + i % 13);
    for (int32_t e = 0; scales && e < n_experts; e++)
        scales[e] = take_u8(&in) % 8 == 0 ? take_f32(&in) : 0.125f * (float)(1 + e % 5);
    for (size_t i = 0; grid && i < gcount; i++) grid[i] = take_u8(&in) % 8 == 0 ? take_f32(&in) : 0.0625f * (float)(1 + i % 5);

    memra_experts_desc d = {.struct_size = ssize, .format = format, .n_experts = n_experts, .out_f = out_f,
                            .in_f = in_f, .data = bytes, .size = (size_t)nbytes, .scales = scales, .grid = grid,
                            .grid_count = with_grid ? gcount : (gmode >> 7 ? 1 : 0),
                            .name = name_null ? NULL : "fuzz.experts"};
    memra_experts_desc *pd = exact_struct(&d, sizeof d, ssize);
    if (pd == NULL) goto out;
    memra_weight *w = NULL;
    const memra_status st = memra_weight_create_experts(g_rt[rt], pd, &w);
    free(pd);
    if (g_trace)
        fprintf(stderr, "fuzz_experts: runtime %d format %d E %d %lld x %lld: create %s\n", rt, (int)format, n_experts,
                (long long)out_f, (long long)in_f, memra_status_str(st));
    if (st == MEMRA_STATUS_OK) {
        free(bytes); /* create copied them: the weight must not read the caller's bytes again */
        bytes = NULL;
        free(scales);
        scales = NULL;
        free(grid);
        grid = NULL;
        if (memra_weight_experts(w) != n_experts) {
            fprintf(stderr, "fuzz_experts: created %d experts for n_experts %d\n", memra_weight_experts(w), n_experts);
            abort();
        }
        const memra_status ps = memra_weight_prepare(w, g_host[rt]);
        if (g_trace) {
            memra_weight_plan plan = {.struct_size = sizeof plan};
            const int have = memra_weight_plan_get(w, g_host[rt], &plan) == MEMRA_STATUS_OK;
            fprintf(stderr, "fuzz_experts: prepare %s, lane %s\n", memra_status_str(ps), have ? plan.lane : "?");
        }
        if (ps == MEMRA_STATUS_OK) run_experts(&in, rt, w, n_experts, out_f, in_f);
        memra_weight_destroy(w);
    } else if (w != NULL) {
        fprintf(stderr, "fuzz_experts: memra_weight_create_experts failed but set *out_w\n");
        abort();
    }
out:
    free(bytes);
    free(scales);
    free(grid);
    return 0;
}
