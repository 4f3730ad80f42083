/* Model files: GGUF and safetensors written by tests/files/writer.c, read
 * through memra/file.h; weights made from the files match weights made from
 * the same bytes bit for bit through memra_matmul on the host device; every
 * malformed case is refused with the right status, the file name and the
 * byte offset. One case per run: test_files <case> [dir]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files/writer.h"
#include "memra/file.h"
#include "memra/formats.h"
#include "memra/memra.h"
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "tools/judge.h"

static uint64_t g_rng;
static char g_dir[256];

/* ---- helpers ---------------------------------------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) TEST_FAIL_AT("out of memory (%zu bytes)", n);
    return p;
}

static void tmp_dir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/memra-files-XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(g_dir) == NULL) TEST_FAIL_AT("mkdtemp %s failed", g_dir);
}

static void rm_dir(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", g_dir);
}

static const char *in_dir(const char *name)
{
    static char p[2][512];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

/* Random bytes of a format with finite f16 scales (the block's d/dmin) and no
 * e4m3 NaN codes, never all zero. */
static uint8_t *rand_format(memra_format fmt, int64_t rows, int64_t cols, size_t *bytes)
{
    const uint64_t rb = memra_format_row_bytes(fmt, cols);
    *bytes = (size_t)(rb * (uint64_t)rows);
    uint8_t *p = xmalloc(*bytes);
    for (size_t e = 0; e < *bytes; e++) p[e] = (uint8_t)test_rand_u64(&g_rng);
    const int bb = memra_format_block_bytes(fmt);
    for (size_t o = 0; o < *bytes; o += (size_t)bb) {
        const uint16_t h1 = (uint16_t)((0x2000 + test_rand_u64(&g_rng) % 0x2000) | (test_rand_u64(&g_rng) & 0x8000));
        const uint16_t h2 = (uint16_t)(0x2000 + test_rand_u64(&g_rng) % 0x2000);
        switch (fmt) {
        case MEMRA_FORMAT_Q8_0:
        case MEMRA_FORMAT_Q4_0:
        case MEMRA_FORMAT_F16: memcpy(p + o, &h1, 2); break;
        case MEMRA_FORMAT_BF16: {
            const uint16_t b = memra_bf16_from_f32(test_rand_f32(&g_rng));
            memcpy(p + o, &b, 2);
            break;
        }
        case MEMRA_FORMAT_Q4_K:
        case MEMRA_FORMAT_Q5_K: memcpy(p + o, &h1, 2), memcpy(p + o + 2, &h2, 2); break;
        case MEMRA_FORMAT_Q6_K: memcpy(p + o + 208, &h1, 2); break;
        case MEMRA_FORMAT_E4M3:
            if (memra_e4m3_is_nan(p[o])) p[o] = 0x33;
            break;
        case MEMRA_FORMAT_F32: {
            const float v = test_rand_f32(&g_rng);
            memcpy(p + o, &v, 4);
            break;
        }
        }
    }
    return p;
}

static memra_runtime *host_rt(void)
{
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt = NULL;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

/* y = x . W^T on the host device for m = 3 rows of fresh random x. */
static float *run_matmul(memra_runtime *rt, memra_weight *w, int64_t out_f, int64_t in_f, const float *x)
{
    memra_device *dev = memra_device_host(rt);
    const int m = 3;
    memra_buffer *bx, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)(m * in_f) * 4, &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)(m * out_f) * 4, &by));
    CHECK_OK(memra_buffer_write(bx, 0, x, (size_t)(m * in_f) * 4));
    CHECK_OK(memra_matmul(dev, w, memra_buffer_ptr(bx), m, memra_buffer_ptr(by), NULL));
    float *y = xmalloc((size_t)(m * out_f) * 4);
    CHECK_OK(memra_buffer_read(by, 0, y, (size_t)(m * out_f) * 4));
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    return y;
}

static float *rand_x(int64_t in_f)
{
    float *x = xmalloc((size_t)(3 * in_f) * 4);
    for (int64_t e = 0; e < 3 * in_f; e++) x[e] = test_rand_f32(&g_rng);
    return x;
}

/* The file's weight `name` and a weight made from `bytes` (copied) give the
 * same y bit for bit; and the y is not all zeros. */
static void same_as_bytes(memra_runtime *rt, const memra_file *f, const char *name, memra_format fmt, int64_t out_f,
                          int64_t in_f, const void *bytes, size_t nbytes, float scale, const float *grid,
                          size_t grid_count)
{
    memra_weight *wf = NULL, *wb = NULL;
    CHECK_OK(memra_file_weight_create(rt, f, name, &wf));
    CHECK_INT_EQ(memra_weight_format(wf), fmt);
    int64_t o = 0, i = 0;
    CHECK_OK(memra_weight_shape(wf, &o, &i));
    CHECK_INT_EQ(o, out_f);
    CHECK_INT_EQ(i, in_f);
    memra_weight_desc d = {.struct_size = sizeof d, .format = fmt, .out_f = out_f, .in_f = in_f, .data = bytes,
                           .size = nbytes, .scale = scale, .grid = grid, .grid_count = grid_count, .name = "bytes",
                           .input_scale = memra_weight_input_scale(wf)}; /* checked against the file by its callers */
    CHECK_OK(memra_weight_create(rt, &d, &wb));
    float *x = rand_x(in_f);
    float *y1 = run_matmul(rt, wf, out_f, in_f, x), *y2 = run_matmul(rt, wb, out_f, in_f, x);
    int nonzero = 0;
    for (int64_t e = 0; e < 3 * out_f; e++) {
        uint32_t a, b;
        memcpy(&a, &y1[e], 4);
        memcpy(&b, &y2[e], 4);
        if (a != b) TEST_FAIL_AT("%s: y[%lld] = %.9g from the file, %.9g from the bytes", name, (long long)e, y1[e], y2[e]);
        nonzero |= y1[e] != 0.0f;
    }
    CHECK(nonzero);
    printf("  %s %s [%lld x %lld]: file weight == byte weight, bit for bit\n", name, memra_format_name(fmt),
           (long long)out_f, (long long)in_f);
    free(x), free(y1), free(y2);
    memra_weight_destroy(wf);
    memra_weight_destroy(wb);
}

/* ---- GGUF: every supported type ------------------------------------------------ */

typedef struct gt {
    const char *name;
    uint32_t ggml;
    memra_format fmt;
    const char *type;
} gt;

static const gt k_gguf_types[] = {
    {"blk.0.f32.weight", 0, MEMRA_FORMAT_F32, "F32"},    {"blk.0.f16.weight", 1, MEMRA_FORMAT_F16, "F16"},
    {"blk.0.bf16.weight", 30, MEMRA_FORMAT_BF16, "BF16"}, {"blk.0.q8_0.weight", 8, MEMRA_FORMAT_Q8_0, "Q8_0"},
    {"blk.0.q4_0.weight", 2, MEMRA_FORMAT_Q4_0, "Q4_0"}, {"blk.0.q4_k.weight", 12, MEMRA_FORMAT_Q4_K, "Q4_K"},
    {"blk.0.q5_k.weight", 13, MEMRA_FORMAT_Q5_K, "Q5_K"}, {"blk.0.q6_k.weight", 14, MEMRA_FORMAT_Q6_K, "Q6_K"},
};
#define N_GGUF_TYPES (sizeof k_gguf_types / sizeof k_gguf_types[0])

typedef struct gguf_fixture {
    tw_gguf_tensor t[N_GGUF_TYPES + 1];
    uint8_t *data[N_GGUF_TYPES + 1];
    int64_t out_f[N_GGUF_TYPES + 1], in_f[N_GGUF_TYPES + 1];
    float norm[64];
    tw_gguf g;
    tw_buf b;
} gguf_fixture;

static void gguf_fixture_make(gguf_fixture *fx, uint32_t version, uint32_t alignment)
{
    memset(fx, 0, sizeof *fx);
    for (size_t i = 0; i < N_GGUF_TYPES; i++) {
        const int64_t out_f = 3 + (int64_t)i, in_f = 512;
        size_t bytes;
        fx->data[i] = rand_format(k_gguf_types[i].fmt, out_f, in_f, &bytes);
        fx->out_f[i] = out_f;
        fx->in_f[i] = in_f;
        fx->t[i] = (tw_gguf_tensor){.name = k_gguf_types[i].name, .type = k_gguf_types[i].ggml, .n_dims = 2,
                                    .ne = {(uint64_t)in_f, (uint64_t)out_f}, .data = fx->data[i], .bytes = bytes,
                                    .offset_override = -1};
    }
    for (int e = 0; e < 64; e++) fx->norm[e] = test_rand_f32(&g_rng);
    fx->t[N_GGUF_TYPES] = (tw_gguf_tensor){.name = "output_norm.weight", .type = 0, .n_dims = 1, .ne = {64},
                                           .data = fx->norm, .bytes = sizeof fx->norm, .offset_override = -1};
    fx->g = (tw_gguf){.version = version, .alignment = alignment, .with_meta = 1, .tensors = fx->t,
                      .n_tensors = N_GGUF_TYPES + 1};
    tw_gguf_build(&fx->g, &fx->b);
}

static void gguf_fixture_free(gguf_fixture *fx)
{
    for (size_t i = 0; i < N_GGUF_TYPES; i++) free(fx->data[i]);
    tw_free(&fx->b);
}

static void check_gguf_file(gguf_fixture *fx, const char *path, uint32_t align)
{
    memra_runtime *rt = host_rt();
    memra_file *f = NULL;
    CHECK_OK(memra_file_open(path, &f));
    CHECK_INT_EQ(memra_file_kind_get(f), MEMRA_FILE_GGUF);
    CHECK_INT_EQ(memra_file_tensor_count(f), N_GGUF_TYPES + 1);
    for (size_t i = 0; i <= N_GGUF_TYPES; i++) {
        memra_tensor_info t;
        CHECK_OK(memra_file_tensor_get(f, i, &t));
        CHECK_STR_EQ(t.name, fx->t[i].name);
        CHECK_INT_EQ(t.bytes, fx->t[i].bytes);
        CHECK_INT_EQ((t.offset - fx->g.at_data) % align, 0);
        const void *p;
        size_t n;
        CHECK_OK(memra_file_tensor_data(f, i, &p, &n));
        CHECK(n == fx->t[i].bytes && memcmp(p, fx->t[i].data, n) == 0);
        if (i == N_GGUF_TYPES) {
            CHECK_STR_EQ(t.type, "F32");
            CHECK_INT_EQ(t.n_dims, 1);
            CHECK_INT_EQ(t.shape[0], 64);
            CHECK_STATUS(memra_file_weight_create(rt, f, t.name, &(memra_weight *){NULL}), MEMRA_STATUS_NOT_SUPPORTED);
            CHECK_STR_CONTAINS(memra_last_error(), "2D");
            continue;
        }
        CHECK_STR_EQ(t.type, k_gguf_types[i].type);
        CHECK(t.has_format);
        CHECK_INT_EQ(t.format, k_gguf_types[i].fmt);
        CHECK_INT_EQ(t.n_dims, 2);
        CHECK_INT_EQ(t.shape[0], fx->out_f[i]); /* outermost first: GGUF's ne reversed */
        CHECK_INT_EQ(t.shape[1], fx->in_f[i]);
        size_t idx;
        CHECK_OK(memra_file_tensor_find(f, t.name, &idx));
        CHECK_INT_EQ(idx, i);
        same_as_bytes(rt, f, t.name, t.format, fx->out_f[i], fx->in_f[i], fx->t[i].data, fx->t[i].bytes, 0, NULL, 0);
    }
    size_t idx;
    CHECK_STATUS(memra_file_tensor_find(f, "nope", &idx), MEMRA_STATUS_NOT_FOUND);
    memra_meta_info m;
    CHECK_OK(memra_file_meta_find(f, "general.name", &m));
    CHECK_INT_EQ(m.type, MEMRA_META_STRING);
    CHECK_STR_EQ(m.text, "memra test model");
    CHECK_OK(memra_file_meta_find(f, "t.i8", &m));
    CHECK_INT_EQ(m.i, -5);
    CHECK_OK(memra_file_meta_find(f, "t.i16", &m));
    CHECK_INT_EQ(m.i, -2);
    CHECK_OK(memra_file_meta_find(f, "t.u16", &m));
    CHECK_INT_EQ(m.u, 0x1234);
    CHECK_OK(memra_file_meta_find(f, "t.u32", &m));
    CHECK_INT_EQ(m.u, 4000000000u);
    CHECK_OK(memra_file_meta_find(f, "t.i32", &m));
    CHECK_INT_EQ(m.i, -123456);
    CHECK_OK(memra_file_meta_find(f, "t.f32", &m));
    CHECK(m.type == MEMRA_META_FLOAT && m.f == 1.5);
    CHECK_OK(memra_file_meta_find(f, "t.bool", &m));
    CHECK(m.type == MEMRA_META_BOOL && m.i == 1);
    CHECK_OK(memra_file_meta_find(f, "t.u64", &m));
    CHECK_INT_EQ(m.u, 1ull << 40);
    CHECK_OK(memra_file_meta_find(f, "t.arr_u32", &m));
    CHECK(m.type == MEMRA_META_ARRAY && m.elem_type == MEMRA_META_UINT && m.count == 3);
    CHECK_STR_EQ(m.text, "[3 x u32: 1, 2, 3]");
    CHECK_OK(memra_file_meta_find(f, "t.arr_str", &m));
    CHECK_STR_EQ(m.text, "[2 x string]");
    CHECK_STATUS(memra_file_meta_find(f, "nope", &m), MEMRA_STATUS_NOT_FOUND);
    memra_file_close(f);
    memra_close(rt);
}

static void case_gguf_types(void)
{
    gguf_fixture fx;
    gguf_fixture_make(&fx, 3, 0);
    tw_save(&fx.b, in_dir("t.gguf"));
    check_gguf_file(&fx, in_dir("t.gguf"), 32);
    gguf_fixture_free(&fx);
}

static void case_gguf_v2_align(void)
{
    gguf_fixture fx;
    gguf_fixture_make(&fx, 2, 64);
    tw_save(&fx.b, in_dir("t2.gguf"));
    check_gguf_file(&fx, in_dir("t2.gguf"), 64);
    memra_file *f;
    CHECK_OK(memra_file_open(in_dir("t2.gguf"), &f));
    CHECK_STR_EQ(memra_file_describe(f), "GGUF v2");
    memra_meta_info m;
    CHECK_OK(memra_file_meta_find(f, "general.alignment", &m));
    CHECK_INT_EQ(m.u, 64);
    memra_file_close(f);
    gguf_fixture_free(&fx);
}

/* The mapping outlives the file object while a weight needs it. */
static void case_lifetime(void)
{
    gguf_fixture fx;
    gguf_fixture_make(&fx, 3, 0);
    tw_save(&fx.b, in_dir("l.gguf"));
    memra_runtime *rt = host_rt();
    memra_file *f;
    CHECK_OK(memra_file_open(in_dir("l.gguf"), &f));
    memra_weight *w1, *w2;
    CHECK_OK(memra_file_weight_create(rt, f, "blk.0.q8_0.weight", &w1));
    CHECK_OK(memra_file_weight_create(rt, f, "blk.0.q4_k.weight", &w2));
    memra_file_close(f);
    CHECK(unlink(in_dir("l.gguf")) == 0);
    float *x = rand_x(512);
    float *y1 = run_matmul(rt, w1, fx.out_f[3], 512, x); /* prepare reads the mapping after the close */
    memra_weight_destroy(w1);
    float *y2 = run_matmul(rt, w2, fx.out_f[5], 512, x);
    memra_weight_destroy(w2);
    CHECK(y1[0] == y1[0] && y2[0] == y2[0]);
    printf("  weights prepared after memra_file_close and unlink: ok\n");
    free(x), free(y1), free(y2);
    memra_close(rt);
    gguf_fixture_free(&fx);
}

/* ---- safetensors --------------------------------------------------------------- */

static void case_st_types(void)
{
    size_t b32, b16, bbf, b8, b8b;
    uint8_t *d32 = rand_format(MEMRA_FORMAT_F32, 5, 96, &b32);
    uint8_t *d16 = rand_format(MEMRA_FORMAT_F16, 6, 96, &b16);
    uint8_t *dbf = rand_format(MEMRA_FORMAT_BF16, 7, 96, &bbf);
    uint8_t *d8 = rand_format(MEMRA_FORMAT_E4M3, 9, 160, &b8);    /* per-tensor scale */
    uint8_t *d8b = rand_format(MEMRA_FORMAT_E4M3, 130, 160, &b8b); /* block-128 grid [2 x 2] */
    const float scale = 0.0123f;
    float grid[4];
    uint16_t grid_bf[4];
    for (int e = 0; e < 4; e++) {
        grid_bf[e] = memra_bf16_from_f32(0.001f + 0.01f * (float)(test_rand_u64(&g_rng) % 100));
        grid[e] = memra_f32_from_bf16(grid_bf[e]);
    }
    const uint16_t scale_bf = memra_bf16_from_f32(0.5f);
    const float in_q = 0.0371f;                             /* input_scale, F32 */
    const uint16_t in_r = memra_bf16_from_f32(0.0625f);     /* input_scale, BF16 */
    const tw_st_tensor t[] = {
        {"model.a.weight", "F32", 2, {5, 96}, d32, b32},
        {"model.b.weight", "F16", 2, {6, 96}, d16, b16},
        {"model.c.weight", "BF16", 2, {7, 96}, dbf, bbf},
        {"model.q.weight", "F8_E4M3", 2, {9, 160}, d8, b8},
        {"model.q.weight_scale", "F32", 0, {0}, &scale, 4},
        {"model.q.input_scale", "F32", 0, {0}, &in_q, 4},
        {"model.r.weight", "F8_E4M3", 2, {130, 160}, d8b, b8b},
        {"model.r.weight_scale_inv", "BF16", 2, {2, 2}, grid_bf, sizeof grid_bf},
        {"model.r.input_scale", "BF16", 1, {1}, &in_r, 2},
        {"model.s.weight", "F8_E4M3", 2, {9, 160}, d8, b8},
        {"model.s.weight_scale", "BF16", 1, {1}, &scale_bf, 2},
        {"model.ids", "I64", 1, {2}, "\1\0\0\0\0\0\0\0\2\0\0\0\0\0\0\0", 16},
    };
    tw_buf b;
    tw_st_build(t, sizeof t / sizeof t[0], "{\"format\":\"pt\",\"note\":\"caf\\u00e9\"}", &b);
    tw_save(&b, in_dir("t.safetensors"));
    memra_runtime *rt = host_rt();
    memra_file *f;
    CHECK_OK(memra_file_open(in_dir("t.safetensors"), &f));
    CHECK_INT_EQ(memra_file_kind_get(f), MEMRA_FILE_SAFETENSORS);
    CHECK_INT_EQ(memra_file_tensor_count(f), sizeof t / sizeof t[0]);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        memra_tensor_info ti;
        CHECK_OK(memra_file_tensor_get(f, i, &ti)); /* file order = data order = written order */
        CHECK_STR_EQ(ti.name, t[i].name);
        CHECK_STR_EQ(ti.type, t[i].dtype);
        CHECK_INT_EQ(ti.n_dims, t[i].n_dims);
        CHECK_INT_EQ(ti.bytes, t[i].bytes);
        const void *p;
        size_t n;
        CHECK_OK(memra_file_tensor_data(f, i, &p, &n));
        CHECK(n == t[i].bytes && memcmp(p, t[i].data, n) == 0);
    }
    memra_meta_info m;
    CHECK_OK(memra_file_meta_find(f, "note", &m));
    CHECK_STR_EQ(m.text, "caf\xc3\xa9");
    same_as_bytes(rt, f, "model.a.weight", MEMRA_FORMAT_F32, 5, 96, d32, b32, 0, NULL, 0);
    same_as_bytes(rt, f, "model.b.weight", MEMRA_FORMAT_F16, 6, 96, d16, b16, 0, NULL, 0);
    same_as_bytes(rt, f, "model.c.weight", MEMRA_FORMAT_BF16, 7, 96, dbf, bbf, 0, NULL, 0);
    same_as_bytes(rt, f, "model.q.weight", MEMRA_FORMAT_E4M3, 9, 160, d8, b8, scale, NULL, 0);
    same_as_bytes(rt, f, "model.r.weight", MEMRA_FORMAT_E4M3, 130, 160, d8b, b8b, 0, grid, 4);
    same_as_bytes(rt, f, "model.s.weight", MEMRA_FORMAT_E4M3, 9, 160, d8, b8, 0.5f, NULL, 0);
    memra_weight *w = NULL;
    /* the static activation scales beside the FP8 weights (none for model.s) */
    const char *in_names[] = {"model.q.weight", "model.r.weight", "model.s.weight"};
    const float in_want[] = {in_q, 0.0625f, 0.0f};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(memra_file_weight_create(rt, f, in_names[i], &w));
        if (memra_weight_input_scale(w) != in_want[i])
            TEST_FAIL_AT("%s: input_scale %g, want %g", in_names[i], (double)memra_weight_input_scale(w),
                         (double)in_want[i]);
        memra_weight_destroy(w);
    }
    w = NULL;
    CHECK_STATUS(memra_file_weight_create(rt, f, "model.ids", &w), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STR_CONTAINS(memra_last_error(), "I64");
    memra_file_close(f);
    memra_close(rt);
    tw_free(&b);
    free(d32), free(d16), free(dbf), free(d8), free(d8b);
}

/* A sharded set: an index naming two shards. */
static void case_st_sharded(void)
{
    size_t b1, b2, b3;
    uint8_t *d1 = rand_format(MEMRA_FORMAT_BF16, 4, 64, &b1), *d2 = rand_format(MEMRA_FORMAT_F16, 5, 64, &b2);
    uint8_t *d3 = rand_format(MEMRA_FORMAT_F32, 6, 64, &b3);
    const tw_st_tensor s1[] = {{"l.0.q.weight", "BF16", 2, {4, 64}, d1, b1}, {"l.0.k.weight", "F16", 2, {5, 64}, d2, b2}};
    const tw_st_tensor s2[] = {{"l.1.down.weight", "F32", 2, {6, 64}, d3, b3}};
    tw_buf a, b;
    tw_st_build(s1, 2, NULL, &a);
    tw_st_build(s2, 1, NULL, &b);
    tw_save(&a, in_dir("model-00001-of-00002.safetensors"));
    tw_save(&b, in_dir("model-00002-of-00002.safetensors"));
    const char *idx = "{\"metadata\": {\"total_size\": 1234, \"format\": \"pt\"},\n \"weight_map\": {\n"
                      "  \"l.1.down.weight\": \"model-00002-of-00002.safetensors\",\n"
                      "  \"l.0.q.weight\": \"model-00001-of-00002.safetensors\",\n"
                      "  \"l.0.k.weight\": \"model-00001-of-00002.safetensors\"}}\n";
    tw_buf ib = {0};
    tw_put(&ib, idx, strlen(idx));
    tw_save(&ib, in_dir("model.safetensors.index.json"));
    memra_runtime *rt = host_rt();
    memra_file *f;
    CHECK_OK(memra_file_open(in_dir("model.safetensors.index.json"), &f));
    CHECK_INT_EQ(memra_file_kind_get(f), MEMRA_FILE_SAFETENSORS_INDEX);
    CHECK_STR_EQ(memra_file_describe(f), "safetensors index (2 shards)");
    CHECK_INT_EQ(memra_file_tensor_count(f), 3);
    memra_tensor_info t;
    CHECK_OK(memra_file_tensor_get(f, 0, &t)); /* shards in order of first mention */
    CHECK_STR_EQ(t.name, "l.1.down.weight");
    CHECK_STR_CONTAINS(t.path, "model-00002-of-00002.safetensors");
    memra_meta_info m;
    CHECK_OK(memra_file_meta_find(f, "total_size", &m));
    CHECK(m.type == MEMRA_META_UINT && m.u == 1234);
    same_as_bytes(rt, f, "l.0.q.weight", MEMRA_FORMAT_BF16, 4, 64, d1, b1, 0, NULL, 0);
    same_as_bytes(rt, f, "l.0.k.weight", MEMRA_FORMAT_F16, 5, 64, d2, b2, 0, NULL, 0);
    same_as_bytes(rt, f, "l.1.down.weight", MEMRA_FORMAT_F32, 6, 64, d3, b3, 0, NULL, 0);
    memra_file_close(f);
    memra_close(rt);
    tw_free(&a), tw_free(&b), tw_free(&ib);
    free(d1), free(d2), free(d3);
}

/* ---- malformed files ----------------------------------------------------------- */

/* Open the image from memory (an exact-size heap copy, so a sanitizer sees any
 * read past it) and expect `want` with the name and "byte <at>" in the message
 * (at < 0: any byte). */
static void expect_bad(const char *name, const uint8_t *p, size_t n, memra_status want, long long at, const char *has)
{
    uint8_t *copy = xmalloc(n);
    memcpy(copy, p, n);
    memra_file *f = NULL;
    memra_status st = memra_file_open_memory(name, copy, n, &f);
    if (st != want) TEST_FAIL_AT("%s: got %s, want %s: %s", name, memra_status_str(st), memra_status_str(want), memra_last_error());
    CHECK(f == NULL);
    const char *e = memra_last_error();
    CHECK_STR_CONTAINS(e, name);
    if (at >= 0) {
        char b[48];
        snprintf(b, sizeof b, "byte %lld:", at);
        CHECK_STR_CONTAINS(e, b);
    } else {
        CHECK_STR_CONTAINS(e, "byte ");
    }
    if (has) CHECK_STR_CONTAINS(e, has);
    printf("  %s: %s\n", memra_status_str(st), e);
    free(copy);
}

static uint8_t g_small_q8[34 * 2 * 2];
static float g_small_f32[8];

/* A small valid GGUF: a [2 x 64] Q8_0 weight and an 8-float norm. */
static void small_gguf(tw_gguf *g, tw_gguf_tensor *t, tw_buf *b)
{
    for (size_t e = 0; e < sizeof g_small_q8; e++) g_small_q8[e] = (uint8_t)(e * 7 + 1);
    for (int e = 0; e < 8; e++) g_small_f32[e] = (float)e + 0.5f;
    t[0] = (tw_gguf_tensor){"w.weight", 8, 2, {64, 2}, g_small_q8, sizeof g_small_q8, -1};
    t[1] = (tw_gguf_tensor){"norm", 0, 1, {8}, g_small_f32, sizeof g_small_f32, -1};
    *g = (tw_gguf){.with_meta = 1, .tensors = t, .n_tensors = 2};
    tw_gguf_build(g, b);
}

static void put_u64_at(uint8_t *p, size_t at, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}
static void put_u32_at(uint8_t *p, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static void case_gguf_good_small(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    memra_file *f;
    CHECK_OK(memra_file_open_memory("small.gguf", b.p, b.n, &f));
    CHECK_INT_EQ(memra_file_tensor_count(f), 2);
    memra_file_close(f);
    tw_free(&b);
}

static void case_gguf_bad_magic(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    b.p[1] = 'X';
    expect_bad("bad_magic.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 0, "magic");
    tw_free(&b);
}

static void case_gguf_bad_version(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    put_u32_at(b.p, 4, 1);
    expect_bad("v1.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 4, "version 1");
    put_u32_at(b.p, 4, 4);
    expect_bad("v4.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 4, "version 4");
    tw_free(&b);
}

/* Every prefix of a valid file is refused (the cut lands in every field). */
static void case_gguf_truncated(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    for (size_t n = 1; n < b.n; n++) {
        uint8_t *copy = xmalloc(n);
        memcpy(copy, b.p, n);
        memra_file *f = NULL;
        memra_status st = memra_file_open_memory("cut.gguf", copy, n, &f);
        if (st != MEMRA_STATUS_INVALID_ARGUMENT)
            TEST_FAIL_AT("prefix of %zu of %zu bytes: %s (%s)", n, b.n, memra_status_str(st), memra_last_error());
        CHECK_STR_CONTAINS(memra_last_error(), "cut.gguf: byte ");
        free(copy);
    }
    printf("  %zu prefixes refused\n", b.n - 1);
    tw_free(&b);
}

static void case_gguf_past_end(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[1].offset_override = 4096;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("past_end.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "past the file");
    tw_free(&b);
}

static void case_gguf_overlap(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[1].offset_override = 64; /* inside the Q8_0 weight's 136 bytes */
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("overlap.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "overlaps");
    tw_free(&b);
}

static void case_gguf_ndims(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    put_u32_at(b.p, g.at_tinfo[1] + 8 + 4, 5); /* norm's n_dims */
    expect_bad("ndims.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, (long long)(g.at_tinfo[1] + 12), "n_dims 5");
    tw_free(&b);
}

static void case_gguf_dim_overflow(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[0].ne[0] = 1ull << 40;
    t[0].ne[1] = 1ull << 40;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("overflow.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "overflows");
    tw_free(&b);
}

/* Issue 27: elements x type size past 2^64 wrapped to a small size. */
static void case_gguf_size_overflow(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[0].type = 28; /* F64: [2^61 + 2] is 2^64 + 16 bytes */
    t[0].n_dims = 1;
    t[0].ne[0] = (1ull << 61) + 2;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("f64_wrap.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "more than 2^62 bytes");
    tw_free(&b);
    small_gguf(&g, t, &b);
    t[0].type = 0; /* F32 [2^31 x 2^31]: 2^64 bytes, which wrapped to 0 */
    t[0].n_dims = 2;
    t[0].ne[0] = 1ull << 31;
    t[0].ne[1] = 1ull << 31;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("f32_wrap.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "more than 2^62 bytes");
    tw_free(&b);
}

static void case_gguf_block_size(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[0].ne[0] = 48; /* Q8_0 blocks are 32 values */
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("block.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "multiple of Q8_0");
    tw_free(&b);
}

static void case_gguf_misaligned(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[1].offset_override = 136 + 4;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("misaligned.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "alignment");
    tw_free(&b);
}

static void case_gguf_dup_name(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[1].name = "norm";
    t[0].name = "norm";
    t[0].n_dims = 1;
    t[0].ne[0] = 64;
    t[0].type = 0;
    t[0].bytes = 256;
    uint8_t big[256] = {1};
    t[0].data = big;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("dup.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "duplicate tensor name \"norm\"");
    tw_free(&b);
}

static void case_gguf_dup_key(void)
{
    tw_buf b = {0};
    tw_put(&b, "GGUF", 4), tw_u32(&b, 3), tw_u64(&b, 0), tw_u64(&b, 2);
    tw_str(&b, "a.b"), tw_u32(&b, 4), tw_u32(&b, 1);
    const size_t at = b.n;
    tw_str(&b, "a.b"), tw_u32(&b, 4), tw_u32(&b, 2);
    expect_bad("dupkey.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, (long long)at, "duplicate key");
    tw_free(&b);
}

static void case_gguf_long_string(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    put_u64_at(b.p, g.at_first_kv, 1ull << 40); /* the first key's length */
    expect_bad("longstr.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, (long long)g.at_first_kv, "longer than");
    put_u64_at(b.p, g.at_first_kv, UINT64_MAX);
    expect_bad("longstr2.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, (long long)g.at_first_kv, "longer than");
    tw_free(&b);
}

static void case_gguf_huge_counts(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    put_u64_at(b.p, g.at_n_tensors, 1ull << 60);
    expect_bad("ntensors.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 8, "tensor count");
    put_u64_at(b.p, g.at_n_tensors, 2);
    put_u64_at(b.p, g.at_n_kv, UINT64_MAX);
    expect_bad("nkv.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 16, "metadata count");
    tw_free(&b);
    /* an array count past the file */
    tw_buf a = {0};
    tw_put(&a, "GGUF", 4), tw_u32(&a, 3), tw_u64(&a, 0), tw_u64(&a, 1);
    const size_t at = a.n;
    tw_str(&a, "arr"), tw_u32(&a, 9);
    tw_u32(&a, 4), tw_u64(&a, 1ull << 61), tw_u32(&a, 7);
    expect_bad("arr.gguf", a.p, a.n, MEMRA_STATUS_INVALID_ARGUMENT, (long long)(at + 3 + 8 + 4), "cannot fit");
    tw_free(&a);
}

static void case_gguf_unknown_type(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[1].type = 200;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("type.gguf", b.p, b.n, MEMRA_STATUS_NOT_SUPPORTED, -1, "unknown ggml type 200");
    tw_free(&b);
}

static void case_gguf_bad_alignment(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    g.alignment = 48;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("align.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "power of two");
    tw_free(&b);
}

/* A valid type that memra lists but does not serve. */
static void case_gguf_unsupported_weight(void)
{
    uint8_t q4_1[20 * 2] = {0};
    tw_gguf_tensor t[1] = {{"w", 3, 2, {32, 2}, q4_1, sizeof q4_1, -1}};
    tw_gguf g = {.tensors = t, .n_tensors = 1};
    tw_buf b;
    tw_gguf_build(&g, &b);
    memra_file *f;
    CHECK_OK(memra_file_open_memory("q41.gguf", b.p, b.n, &f));
    memra_tensor_info ti;
    CHECK_OK(memra_file_tensor_get(f, 0, &ti));
    CHECK_STR_EQ(ti.type, "Q4_1");
    CHECK(!ti.has_format);
    memra_runtime *rt = host_rt();
    memra_weight *w = NULL;
    CHECK_STATUS(memra_file_weight_create(rt, f, "w", &w), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STR_CONTAINS(memra_last_error(), "Q4_1");
    memra_close(rt);
    memra_file_close(f);
    tw_free(&b);
}

/* ---- malformed safetensors ------------------------------------------------------ */

static const uint8_t g_st_data[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                      17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static void st_header(const char *h, size_t data_len, memra_status want, long long at, const char *has)
{
    tw_buf b;
    tw_st_raw(h, strlen(h), g_st_data, data_len, &b);
    expect_bad("bad.safetensors", b.p, b.n, want, at, has);
    tw_free(&b);
}

static void case_st_good_small(void)
{
    const char *h = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                    "\"b\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[16,32]}}";
    tw_buf b;
    tw_st_raw(h, strlen(h), g_st_data, 32, &b);
    memra_file *f;
    CHECK_OK(memra_file_open_memory("small.safetensors", b.p, b.n, &f));
    CHECK_INT_EQ(memra_file_tensor_count(f), 2);
    memra_file_close(f);
    tw_free(&b);
}

static void case_st_truncated(void)
{
    const char *h = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                    "\"b\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[16,32]}}";
    tw_buf b;
    tw_st_raw(h, strlen(h), g_st_data, 32, &b);
    for (size_t n = 1; n < b.n; n++) {
        uint8_t *copy = xmalloc(n);
        memcpy(copy, b.p, n);
        memra_file *f = NULL;
        memra_status st = memra_file_open_memory("cut.safetensors", copy, n, &f);
        if (st != MEMRA_STATUS_INVALID_ARGUMENT)
            TEST_FAIL_AT("prefix of %zu of %zu bytes: %s (%s)", n, b.n, memra_status_str(st), memra_last_error());
        CHECK_STR_CONTAINS(memra_last_error(), "cut.safetensors: byte ");
        free(copy);
    }
    printf("  %zu prefixes refused\n", b.n - 1);
    tw_free(&b);
}

static void case_st_not_json(void)
{
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}", 16, MEMRA_STATUS_INVALID_ARGUMENT, -1,
              "JSON");
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],}}", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              8 + 54, "key");
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[04],\"data_offsets\":[0,16]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              8 + 29, "leading zero");
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}} x", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              8 + 56, "text after");
    st_header("[1,2]", 0, MEMRA_STATUS_INVALID_ARGUMENT, 8, "not a JSON object");
}

static void case_st_header_size(void)
{
    tw_buf b;
    tw_st_raw("{}", 2, NULL, 0, &b);
    put_u64_at(b.p, 0, 1000);
    expect_bad("claims.safetensors", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 0, "claims more");
    put_u64_at(b.p, 0, 200ull << 20);
    expect_bad("limit.safetensors", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, 0, "limit");
    tw_free(&b);
}

static void case_st_bad_utf8(void)
{
    st_header("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              8 + 3, "UTF-8");
    st_header("{\"a\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, 8 + 3, "UTF-8"); /* overlong '/' */
    st_header("{\"a\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, 8 + 3, "UTF-8"); /* an encoded surrogate */
    st_header("{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, 8 + 3, "surrogate");
    st_header("{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, -1, "NUL");
}

static void case_st_dup_key(void)
{
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
              16, MEMRA_STATUS_INVALID_ARGUMENT, 8 + 54, "duplicate key \"a\"");
    st_header("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, 8 + 20, "duplicate key");
}

static void case_st_layout(void)
{
    /* a hole */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
              20, MEMRA_STATUS_INVALID_ARGUMENT, -1, "hole");
    /* overlapping */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
              12, MEMRA_STATUS_INVALID_ARGUMENT, -1, "overlaps");
    /* past the end */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,32]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT, -1,
              "past the data area");
    /* the size disagrees with dtype x shape */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              -1, "disagree");
    /* trailing bytes nothing indexes */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT, -1,
              "not indexed");
    /* shape products that overflow, negative dims, too many dims */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, -1, "overflows");
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              -1, "non-negative");
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, -1, "dimensions");
    /* begin > end, a missing member, an unknown member */
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,0]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT,
              -1, "data_offsets");
    st_header("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", 16, MEMRA_STATUS_INVALID_ARGUMENT, -1, "shape");
    st_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16],\"x\":1}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, -1, "unknown member");
    /* __metadata__ values are strings */
    st_header("{\"__metadata__\":{\"k\":1},\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
              MEMRA_STATUS_INVALID_ARGUMENT, -1, "strings");
}

/* Issue 27: 2^62 F64 elements are 2^65 bytes, which wrapped to 0 and matched
 * data_offsets [0, 0]. */
static void case_st_size_overflow(void)
{
    const char *h = "{\"a\":{\"dtype\":\"F64\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,0]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    tw_buf b;
    tw_st_raw(h, strlen(h), g_st_data, 16, &b);
    expect_bad("wrap.safetensors", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "overflow a 64-bit byte size");
    tw_free(&b);
}

static void case_st_unknown_dtype(void)
{
    st_header("{\"a\":{\"dtype\":\"F7\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, MEMRA_STATUS_NOT_SUPPORTED, -1,
              "unknown dtype");
}

static void case_st_nesting(void)
{
    char h[600];
    int o = snprintf(h, sizeof h, "{\"__metadata__\":{\"k\":");
    for (int i = 0; i < 40; i++) h[o++] = '[';
    for (int i = 0; i < 40; i++) h[o++] = ']';
    snprintf(h + o, sizeof h - (size_t)o, "}}");
    st_header(h, 0, MEMRA_STATUS_INVALID_ARGUMENT, -1, "nesting");
    /* more values than the parser takes: [0,0,0,...] of 2^21 + 1 values in a 4 MB header */
    const size_t nv = (1u << 21) + 1, hl = 40 + 2 * nv;
    char *big = xmalloc(hl);
    int o2 = snprintf(big, hl, "{\"__metadata__\":{\"k\":[");
    for (size_t i = 0; i < nv; i++) big[o2++] = '0', big[o2++] = ',';
    big[o2 - 1] = ']';
    big[o2++] = '}', big[o2++] = '}', big[o2] = 0;
    st_header(big, 0, MEMRA_STATUS_INVALID_ARGUMENT, -1, "JSON values");
    free(big);
}

/* ---- the index ----------------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    tw_buf b = {0};
    tw_put(&b, text, strlen(text));
    tw_save(&b, path);
    tw_free(&b);
}

static void expect_bad_path(const char *path, memra_status want, const char *has)
{
    memra_file *f = NULL;
    memra_status st = memra_file_open(path, &f);
    if (st != want) TEST_FAIL_AT("%s: got %s, want %s: %s", path, memra_status_str(st), memra_status_str(want), memra_last_error());
    CHECK_STR_CONTAINS(memra_last_error(), path);
    CHECK_STR_CONTAINS(memra_last_error(), "byte ");
    if (has) CHECK_STR_CONTAINS(memra_last_error(), has);
    printf("  %s: %s\n", memra_status_str(st), memra_last_error());
}

/* Issue 27: what the readers open must be a regular file, checked before a
 * byte is read (a FIFO never blocks), and a symlink's target is named, never
 * its bytes. */
static void case_not_regular(void)
{
    alarm(20); /* a reader that blocks on the FIFO fails by SIGALRM */
    const char *fifo = in_dir("f.gguf");
    CHECK(mkfifo(fifo, 0600) == 0);
    memra_file *f = NULL;
    CHECK_STATUS(memra_file_open(fifo, &f), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "not a regular file (a FIFO)");
    printf("  %s\n", memra_last_error());
    /* a FIFO as a shard of an index */
    CHECK(mkfifo(in_dir("s2.safetensors"), 0600) == 0);
    const tw_st_tensor s1[] = {{"a", "U8", 1, {16}, g_st_data, 16}};
    tw_buf a;
    tw_st_build(s1, 1, NULL, &a);
    tw_save(&a, in_dir("s1.safetensors"));
    tw_free(&a);
    write_text(in_dir("fifo.index.json"), "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}");
    expect_bad_path(in_dir("fifo.index.json"), MEMRA_STATUS_INVALID_ARGUMENT, "a FIFO");
    /* a shard that is a symlink to some other file: named, its bytes not shown */
    const char *secret = "SECRET!!the rest of a private file\n";
    write_text(in_dir("private.txt"), secret);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | (uint8_t)secret[i];
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    CHECK(symlink(in_dir("private.txt"), in_dir("s3.safetensors")) == 0);
    write_text(in_dir("link.index.json"), "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s3.safetensors\"}}");
    CHECK_STATUS(memra_file_open(in_dir("link.index.json"), &f), MEMRA_STATUS_INVALID_ARGUMENT);
    printf("  %s\n", memra_last_error());
    CHECK_STR_CONTAINS(memra_last_error(), "s3.safetensors");
    CHECK_STR_CONTAINS(memra_last_error(), "not a safetensors file");
    CHECK(strstr(memra_last_error(), num) == NULL);
    CHECK(strstr(memra_last_error(), "SECRET") == NULL);
    /* a folder */
    CHECK_STATUS(memra_file_open(g_dir, &f), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "a folder");
    alarm(0);
}

/* Issue 27: escape bytes in a tensor name stay out of error messages raw. */
static void case_name_escapes(void)
{
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    t[0].name = "\x1b]0;owned\x07\x1b[2J";
    t[1].name = "\x1b]0;owned\x07\x1b[2J"; /* a duplicate: the error names it */
    tw_free(&b);
    tw_gguf_build(&g, &b);
    expect_bad("esc.gguf", b.p, b.n, MEMRA_STATUS_INVALID_ARGUMENT, -1, "\\x1b]0;owned\\x07");
    CHECK(strchr(memra_last_error(), 0x1b) == NULL && strchr(memra_last_error(), 0x07) == NULL);
    tw_free(&b);
}

static void case_index_bad(void)
{
    const tw_st_tensor s1[] = {{"a", "U8", 1, {16}, g_st_data, 16}};
    tw_buf a;
    tw_st_build(s1, 1, NULL, &a);
    tw_save(&a, in_dir("s1.safetensors"));
    tw_free(&a);
    write_text(in_dir("missing.index.json"), "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}");
    expect_bad_path(in_dir("missing.index.json"), MEMRA_STATUS_INVALID_ARGUMENT, "s2.safetensors");
    write_text(in_dir("wrong.index.json"), "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s1.safetensors\"}}");
    expect_bad_path(in_dir("wrong.index.json"), MEMRA_STATUS_INVALID_ARGUMENT, "does not hold it");
    write_text(in_dir("unnamed.index.json"), "{\"weight_map\":{}}");
    memra_file *f;
    CHECK_OK(memra_file_open(in_dir("unnamed.index.json"), &f));
    memra_file_close(f);
    write_text(in_dir("slash.index.json"), "{\"weight_map\":{\"a\":\"../s1.safetensors\"}}");
    expect_bad_path(in_dir("slash.index.json"), MEMRA_STATUS_INVALID_ARGUMENT, "plain file name");
    write_text(in_dir("json.index.json"), "{\"weight_map\":{\"a\":\"s1.safetensors\"}");
    expect_bad_path(in_dir("json.index.json"), MEMRA_STATUS_INVALID_ARGUMENT, "JSON");
    write_text(in_dir("nomap.index.json"), "{\"metadata\":{}}");
    expect_bad_path(in_dir("nomap.index.json"), MEMRA_STATUS_INVALID_ARGUMENT, "weight_map");
    /* a shard holding a tensor the index does not name */
    write_text(in_dir("partial.index.json"), "{\"weight_map\":{}, \"x\": [\"s1.safetensors\"]}");
    CHECK_OK(memra_file_open(in_dir("partial.index.json"), &f)); /* no shard named: nothing opened */
    memra_file_close(f);
}

/* ---- FP8 scale conventions -------------------------------------------------------- */

static void fp8_refused(const char *scale_name, const char *dtype, int nd, uint64_t d0, uint64_t d1, const char *has)
{
    static uint8_t w[130 * 64];
    for (size_t e = 0; e < sizeof w; e++) w[e] = (uint8_t)(0x30 + e % 16);
    static float s[260];
    for (int e = 0; e < 260; e++) s[e] = 0.5f;
    const uint64_t elems = nd == 0 ? 1 : nd == 1 ? d0 : d0 * d1;
    tw_st_tensor t[2] = {{"m.weight", "F8_E4M3", 2, {130, 64}, w, sizeof w},
                         {scale_name, dtype, nd, {d0, d1}, s, (size_t)elems * 4}};
    tw_buf b;
    tw_st_build(t, scale_name ? 2 : 1, NULL, &b);
    memra_file *f;
    CHECK_OK(memra_file_open_memory("fp8.safetensors", b.p, b.n, &f));
    memra_runtime *rt = host_rt();
    memra_weight *wt = NULL;
    CHECK_STATUS(memra_file_weight_create(rt, f, "m.weight", &wt), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STR_CONTAINS(memra_last_error(), has);
    printf("  refused: %s\n", memra_last_error());
    memra_close(rt);
    memra_file_close(f);
    tw_free(&b);
}

/* An input_scale beside a per-tensor weight_scale that the reader refuses. */
static void input_scale_refused(const char *dtype, int nd, uint64_t d0, float v, const char *has)
{
    static uint8_t w[130 * 64];
    for (size_t e = 0; e < sizeof w; e++) w[e] = (uint8_t)(0x30 + e % 16);
    static float s[64];
    for (int e = 0; e < 64; e++) s[e] = v;
    const float ws = 0.25f;
    tw_st_tensor t[3] = {{"m.weight", "F8_E4M3", 2, {130, 64}, w, sizeof w},
                         {"m.weight_scale", "F32", 0, {0}, &ws, 4},
                         {"m.input_scale", dtype, nd, {d0}, s, (size_t)(nd == 0 ? 1 : d0) * 4}};
    tw_buf b;
    tw_st_build(t, 3, NULL, &b);
    memra_file *f;
    CHECK_OK(memra_file_open_memory("fp8in.safetensors", b.p, b.n, &f));
    memra_runtime *rt = host_rt();
    memra_weight *wt = NULL;
    CHECK_STATUS(memra_file_weight_create(rt, f, "m.weight", &wt), MEMRA_STATUS_NOT_SUPPORTED);
    CHECK_STR_CONTAINS(memra_last_error(), has);
    printf("  refused: %s\n", memra_last_error());
    memra_close(rt);
    memra_file_close(f);
    tw_free(&b);
}

static void case_fp8_scales(void)
{
    input_scale_refused("F32", 1, 64, 0.5f, "not one value");
    input_scale_refused("I32", 0, 0, 0.5f, "I32");
    input_scale_refused("F32", 0, 0, 0.0f, "not a finite scale > 0");
    input_scale_refused("F32", 0, 0, -2.0f, "not a finite scale > 0");
    input_scale_refused("F32", 0, 0, INFINITY, "not a finite scale > 0");
    fp8_refused("m.weight_scale", "F32", 1, 130, 0, "per-row");
    fp8_refused("m.weight_scale", "F32", 2, 130, 1, "per-row");
    fp8_refused("m.weight_scale", "F32", 1, 64, 0, "per-column");
    fp8_refused("m.weight_scale_inv", "F32", 2, 2, 2, "block-128 wants [2, 1]");
    fp8_refused("m.weight_scale_inv", "F32", 1, 130, 0, "per-row");
    fp8_refused("m.weight_scale", "I32", 0, 0, 0, "I32");
    fp8_refused(NULL, NULL, 0, 0, 0, "without a scale");
}

/* ---- reference writers (gguf / safetensors Python packages) ------------------------ */

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) TEST_FAIL_AT("cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *p = xmalloc((size_t)len);
    if (fread(p, 1, (size_t)len, fp) != (size_t)len) TEST_FAIL_AT("cannot read %s", path);
    fclose(fp);
    *n = (size_t)len;
    return p;
}

/* Every tensor of dir/<file> decoded by memra equals dir/<name>.f32 (the
 * package's own decode) bit for bit. */
static void ref_file(const char *dir, const char *file, int expect)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    memra_file *f;
    CHECK_OK(memra_file_open(path, &f));
    int done = 0;
    for (size_t i = 0; i < memra_file_tensor_count(f); i++) {
        memra_tensor_info t;
        CHECK_OK(memra_file_tensor_get(f, i, &t));
        if (!t.has_format) continue;
        char vp[700];
        snprintf(vp, sizeof vp, "%s/%s.%s.f32", dir, file, t.name);
        size_t vn;
        uint8_t *want = read_all(vp, &vn);
        CHECK_INT_EQ(vn, t.elements * 4);
        const void *p;
        size_t n;
        CHECK_OK(memra_file_tensor_data(f, i, &p, &n));
        float *got = xmalloc((size_t)t.elements * 4);
        memra_decode_row(t.format, p, (int64_t)t.elements, got);
        for (uint64_t e = 0; e < t.elements; e++) {
            uint32_t a, b;
            memcpy(&a, &got[e], 4);
            memcpy(&b, want + e * 4, 4);
            const int both_nan = (a & 0x7FFFFFFFu) > 0x7F800000u && (b & 0x7FFFFFFFu) > 0x7F800000u;
            if (a != b && !both_nan)
                TEST_FAIL_AT("%s %s (%s) value %llu: memra %08x, reference %08x", file, t.name, t.type,
                             (unsigned long long)e, a, b);
        }
        printf("  %s %-8s %-20s %llu values bit for bit\n", file, t.type, t.name, (unsigned long long)t.elements);
        free(want);
        free(got);
        done++;
    }
    CHECK_INT_EQ(done, expect);
    memra_file_close(f);
}

static void case_reference(const char *dir)
{
    if (dir == NULL) TEST_FAIL_AT("usage: test_files reference DIR");
    ref_file(dir, "ref.gguf", 8);
    ref_file(dir, "ref.safetensors", 7);
    /* the FP8 weights made by safetensors.numpy carry their scales by convention */
    char path[600];
    snprintf(path, sizeof path, "%s/ref.safetensors", dir);
    memra_file *f;
    CHECK_OK(memra_file_open(path, &f));
    memra_runtime *rt = host_rt();
    memra_weight *w;
    CHECK_OK(memra_file_weight_create(rt, f, "fp8.tensor.weight", &w));
    memra_weight_destroy(w);
    CHECK_OK(memra_file_weight_create(rt, f, "fp8.block.weight", &w));
    memra_weight_destroy(w);
    memra_close(rt);
    memra_file_close(f);
}

/* ---- on a GPU: weights from a file through memra_matmul, against the host ---------- */

/* Every GGUF type and the safetensors FP8 (both scale kinds) and BF16 weights
 * of one file pair, on every GPU device, judged per element by tools/judge.h:
 * e = |y_gpu - y_host| / mass, mass = sum_k |x_k| |w_k| (scales applied; x
 * unquantised, within 1/16 of the quantised |x| for e4m3, so x2 headroom
 * on judge.h's bands: f16 / bf16 / mirror lanes 2 x JUDGE_BAND_F16 = 2e-5,
 * FP8 lanes 2 x JUDGE_BAND_FP8 = 1e-3). The ledger must show the expected
 * op ran. MEMRA_TEST_INJECT_FAULT=1 moves the first element out of band. */
static void gpu_one(memra_runtime *rt, memra_device *dev, const memra_file *f, const char *name, memra_op want_op,
                    double band, float scale, const float *grid)
{
    memra_weight *w;
    CHECK_OK(memra_file_weight_create(rt, f, name, &w));
    int64_t out_f, in_f;
    CHECK_OK(memra_weight_shape(w, &out_f, &in_f));
    size_t ti;
    CHECK_OK(memra_file_tensor_find(f, name, &ti));
    memra_tensor_info t;
    CHECK_OK(memra_file_tensor_get(f, ti, &t));
    const void *p;
    size_t n;
    CHECK_OK(memra_file_tensor_data(f, ti, &p, &n));
    float *wv = xmalloc((size_t)(out_f * in_f) * 4);
    for (int64_t r = 0; r < out_f; r++)
        memra_decode_row(t.format, (const uint8_t *)p + (size_t)r * memra_format_row_bytes(t.format, in_f), in_f,
                         wv + r * in_f);
    const int64_t gcols = (in_f + 127) / 128;
    for (int64_t r = 0; r < out_f; r++)
        for (int64_t c = 0; c < in_f; c++) wv[r * in_f + c] *= grid ? grid[(r / 128) * gcols + c / 128] : scale;
    float *x = rand_x(in_f);
    const int m = 3;
    float *yh = run_matmul(rt, w, out_f, in_f, x); /* the host device */
    memra_buffer *bx, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)(m * in_f) * 4, &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)(m * out_f) * 4, &by));
    CHECK_OK(memra_buffer_write(bx, 0, x, (size_t)(m * in_f) * 4));
    memra_weight_plan plan = {.struct_size = sizeof plan};
    CHECK_OK(memra_weight_plan_get(w, dev, &plan));
    const uint64_t h0 = plan.modules[plan.n_steps - 1] ? memra_ledger_hits(dev, want_op, plan.modules[plan.n_steps - 1]) : 0;
    CHECK_OK(memra_matmul(dev, w, memra_buffer_ptr(bx), m, memra_buffer_ptr(by), NULL));
    float *yg = xmalloc((size_t)(m * out_f) * 4);
    CHECK_OK(memra_buffer_read(by, 0, yg, (size_t)(m * out_f) * 4));
    CHECK(plan.ops[plan.n_steps - 1] == want_op || want_op == MEMRA_OP_COUNT_);
    if (want_op != MEMRA_OP_COUNT_)
        CHECK(memra_ledger_hits(dev, want_op, plan.modules[plan.n_steps - 1]) > h0);
    judge jd;
    judge_init(&jd, name, band, stderr);
    jd.inject = test_inject_fault();
    for (int i = 0; i < m; i++)
        for (int64_t j = 0; j < out_f; j++) {
            double mass = 0;
            for (int64_t k = 0; k < in_f; k++) mass += fabs((double)x[i * in_f + k] * (double)wv[j * in_f + k]);
            judge_elem(&jd, i, j, yg[i * out_f + j], yh[i * out_f + j], mass);
        }
    printf("  %s %s on %s: lane %s, max e %.3g (band %.2g)\n", name, t.type, memra_device_caps_get(dev)->profile,
           plan.lane, jd.max_err, band);
    if (!judge_ok(&jd)) TEST_FAIL_AT("%s: max e %.3g over the band %.2g", name, jd.max_err, band);
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    memra_weight_destroy(w);
    free(wv), free(x), free(yh), free(yg);
}

static void case_gpu_matmul(void)
{
    memra_runtime *rt = NULL;
    CHECK_OK(memra_open(NULL, &rt));
    int gpus = 0;
    gguf_fixture fx;
    gguf_fixture_make(&fx, 3, 0);
    tw_save(&fx.b, in_dir("g.gguf"));
    static uint8_t w8[256 * 384], wb[64 * 384 * 2];
    for (size_t e = 0; e < sizeof w8; e++) {
        w8[e] = (uint8_t)test_rand_u64(&g_rng);
        if (memra_e4m3_is_nan(w8[e])) w8[e] = 0x38;
    }
    for (size_t e = 0; e < sizeof wb; e += 2) {
        const uint16_t h = memra_bf16_from_f32(test_rand_f32(&g_rng));
        memcpy(wb + e, &h, 2);
    }
    float grid[6];
    for (int e = 0; e < 6; e++) grid[e] = 0.001f * (float)(1 + test_rand_u64(&g_rng) % 50);
    const float sc = 0.02f;
    const tw_st_tensor st[] = {
        {"fp8.r.weight", "F8_E4M3", 2, {256, 384}, w8, sizeof w8},
        {"fp8.r.weight_scale_inv", "F32", 2, {2, 3}, grid, sizeof grid},
        {"fp8.s.weight", "F8_E4M3", 2, {256, 384}, w8, sizeof w8},
        {"fp8.s.weight_scale", "F32", 0, {0}, &sc, 4},
        {"bf16.weight", "BF16", 2, {64, 384}, wb, sizeof wb},
    };
    tw_buf b;
    tw_st_build(st, sizeof st / sizeof st[0], NULL, &b);
    tw_save(&b, in_dir("g.safetensors"));
    tw_free(&b);
    memra_file *fg, *fs;
    CHECK_OK(memra_file_open(in_dir("g.gguf"), &fg));
    CHECK_OK(memra_file_open(in_dir("g.safetensors"), &fs));
    for (int d = 0; d < memra_device_count(rt); d++) {
        memra_device *dev = memra_device_get(rt, d);
        if (memra_device_caps_get(dev)->arch == MEMRA_ARCH_HOST) continue;
        gpus++;
        for (size_t i = 0; i < N_GGUF_TYPES; i++)
            gpu_one(rt, dev, fg, k_gguf_types[i].name,
                    k_gguf_types[i].fmt == MEMRA_FORMAT_BF16 ? MEMRA_OP_gemm_bf16 : MEMRA_OP_COUNT_,
                    2 * JUDGE_BAND_F16, 1.0f, NULL);
        gpu_one(rt, dev, fs, "bf16.weight", MEMRA_OP_gemm_bf16, 2 * JUDGE_BAND_BF16, 1.0f, NULL);
        gpu_one(rt, dev, fs, "fp8.s.weight", MEMRA_OP_gemm_fp8, 2 * JUDGE_BAND_FP8, sc, NULL);
        gpu_one(rt, dev, fs, "fp8.r.weight", MEMRA_OP_COUNT_, 2 * JUDGE_BAND_FP8, 1.0f, grid);
    }
    memra_file_close(fg);
    memra_file_close(fs);
    memra_close(rt);
    gguf_fixture_free(&fx);
    if (gpus == 0) {
        rm_dir();
        TEST_SKIP("no GPU device");
    }
}

/* Files for the tool tests and the fuzz seeds: written into dir, kept. */
static void case_write(const char *dir)
{
    if (dir == NULL) TEST_FAIL_AT("usage: test_files write DIR");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    gguf_fixture fx;
    gguf_fixture_make(&fx, 3, 0);
    tw_save(&fx.b, in_dir("model.gguf"));
    gguf_fixture_free(&fx);
    tw_gguf g;
    tw_gguf_tensor t[2];
    tw_buf b;
    small_gguf(&g, t, &b);
    tw_save(&b, in_dir("small.gguf"));
    b.p[4] = 9; /* version 9 */
    tw_save(&b, in_dir("bad.gguf"));
    tw_free(&b);
    {
        /* lm.gguf: a language model's ends beside one projection and a MoE
         * expert tensor (F32, 64 x 96): token_embd and output are not timed
         * by bench --model, the 3D tensor gets a note in model ls */
        static float f32[4 * 64 * 96];
        for (size_t e = 0; e < sizeof f32 / sizeof f32[0]; e++) f32[e] = test_rand_f32(&g_rng);
        const size_t w2 = 64 * 96 * 4;
        const tw_gguf_tensor lt[] = {
            {.name = "token_embd.weight", .type = 0, .n_dims = 2, .ne = {96, 64}, .data = f32, .bytes = w2, .offset_override = -1},
            {.name = "blk.0.attn_q.weight", .type = 0, .n_dims = 2, .ne = {96, 64}, .data = f32, .bytes = w2, .offset_override = -1},
            {.name = "blk.0.ffn_gate_exps.weight", .type = 0, .n_dims = 3, .ne = {96, 64, 4}, .data = f32,
             .bytes = sizeof f32, .offset_override = -1},
            {.name = "output.weight", .type = 0, .n_dims = 2, .ne = {96, 64}, .data = f32, .bytes = w2, .offset_override = -1},
        };
        tw_gguf lg = {.tensors = lt, .n_tensors = sizeof lt / sizeof lt[0]};
        tw_buf lb = {0};
        tw_gguf_build(&lg, &lb);
        tw_save(&lb, in_dir("lm.gguf"));
        tw_free(&lb);
    }
    /* names with escape bytes and invalid UTF-8 (model ls must escape them) */
    small_gguf(&g, t, &b);
    t[0].name = "blk.0.\x1b]0;owned\x07\x1b[2J.weight";
    t[1].name = "norm.\xff\xfe\xc0\xaf";
    tw_free(&b);
    tw_gguf_build(&g, &b);
    tw_save(&b, in_dir("names.gguf"));
    tw_free(&b);
    /* an F32 weight holding one NaN (memra check --model: the row says why it fails) */
    {
        static float wn[64 * 256];
        for (size_t e = 0; e < 64 * 256; e++) wn[e] = 0.01f * (float)((int)(e % 7) - 3);
        wn[5] = NAN;
        tw_gguf_tensor tn[1] = {{"blk.0.attn_q.weight", 0, 2, {256, 64}, wn, sizeof wn, -1}};
        tw_gguf gn = {.with_meta = 0, .tensors = tn, .n_tensors = 1};
        tw_gguf_build(&gn, &b);
        tw_save(&b, in_dir("nan.gguf"));
        tw_free(&b);
    }
    /* sizes that wrapped past 2^64 (issue 27; also seeds of the fuzz corpora) */
    small_gguf(&g, t, &b);
    t[0].type = 28;
    t[0].n_dims = 1;
    t[0].ne[0] = (1ull << 61) + 2;
    tw_free(&b);
    tw_gguf_build(&g, &b);
    tw_save(&b, in_dir("f64_wrap.gguf"));
    tw_free(&b);
    const char *wh = "{\"a\":{\"dtype\":\"F64\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,0]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    tw_st_raw(wh, strlen(wh), g_st_data, 16, &b);
    tw_save(&b, in_dir("wrap.safetensors"));
    tw_free(&b);
    static uint8_t w8[256 * 256], wb[64 * 256 * 2];
    for (size_t e = 0; e < sizeof w8; e++) w8[e] = (uint8_t)(0x28 + e % 24);
    for (size_t e = 0; e < sizeof wb; e += 2) {
        const uint16_t h = memra_bf16_from_f32(test_rand_f32(&g_rng));
        memcpy(wb + e, &h, 2);
    }
    static float grid[4] = {0.01f, 0.02f, 0.03f, 0.04f};
    const float sc = 0.05f, in_sc = 0.0078125f; /* 448 x 2^-7 = 3.5: the largest activations (4) saturate */
    const tw_st_tensor st[] = {
        {"model.layers.0.self_attn.q_proj.weight", "F8_E4M3", 2, {256, 256}, w8, sizeof w8},
        {"model.layers.0.self_attn.q_proj.weight_scale_inv", "F32", 2, {2, 2}, grid, sizeof grid},
        {"model.layers.0.mlp.down_proj.weight", "F8_E4M3", 2, {256, 256}, w8, sizeof w8},
        {"model.layers.0.mlp.down_proj.weight_scale", "F32", 0, {0}, &sc, 4},
        {"model.layers.0.mlp.down_proj.input_scale", "F32", 0, {0}, &in_sc, 4},
        {"model.layers.0.mlp.up_proj.weight", "BF16", 2, {64, 256}, wb, sizeof wb},
    };
    tw_st_build(st, sizeof st / sizeof st[0], "{\"format\":\"pt\"}", &b);
    tw_save(&b, in_dir("model.safetensors"));
    tw_free(&b);
    const tw_st_tensor s1[] = {{"model.layers.0.mlp.up_proj.weight", "BF16", 2, {64, 256}, wb, sizeof wb}};
    tw_st_build(s1, 1, NULL, &b);
    tw_save(&b, in_dir("shard-1.safetensors"));
    tw_free(&b);
    const char *idx = "{\"metadata\":{\"total_size\":32768},\"weight_map\":"
                      "{\"model.layers.0.mlp.up_proj.weight\":\"shard-1.safetensors\"}}";
    tw_buf ib = {0};
    tw_put(&ib, idx, strlen(idx));
    tw_save(&ib, in_dir("model.safetensors.index.json"));
    tw_free(&ib);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"gguf_types", case_gguf_types},
        {"gguf_size_overflow", case_gguf_size_overflow},
        {"st_size_overflow", case_st_size_overflow},
        {"not_regular", case_not_regular},
        {"name_escapes", case_name_escapes},
        {"gguf_v2_align", case_gguf_v2_align},
        {"lifetime", case_lifetime},
        {"st_types", case_st_types},
        {"st_sharded", case_st_sharded},
        {"gguf_good_small", case_gguf_good_small},
        {"gguf_bad_magic", case_gguf_bad_magic},
        {"gguf_bad_version", case_gguf_bad_version},
        {"gguf_truncated", case_gguf_truncated},
        {"gguf_past_end", case_gguf_past_end},
        {"gguf_overlap", case_gguf_overlap},
        {"gguf_ndims", case_gguf_ndims},
        {"gguf_dim_overflow", case_gguf_dim_overflow},
        {"gguf_block_size", case_gguf_block_size},
        {"gguf_misaligned", case_gguf_misaligned},
        {"gguf_dup_name", case_gguf_dup_name},
        {"gguf_dup_key", case_gguf_dup_key},
        {"gguf_long_string", case_gguf_long_string},
        {"gguf_huge_counts", case_gguf_huge_counts},
        {"gguf_unknown_type", case_gguf_unknown_type},
        {"gguf_bad_alignment", case_gguf_bad_alignment},
        {"gguf_unsupported_weight", case_gguf_unsupported_weight},
        {"st_good_small", case_st_good_small},
        {"st_truncated", case_st_truncated},
        {"st_not_json", case_st_not_json},
        {"st_header_size", case_st_header_size},
        {"st_bad_utf8", case_st_bad_utf8},
        {"st_dup_key", case_st_dup_key},
        {"st_layout", case_st_layout},
        {"st_unknown_dtype", case_st_unknown_dtype},
        {"st_nesting", case_st_nesting},
        {"index_bad", case_index_bad},
        {"fp8_scales", case_fp8_scales},
        {"gpu_matmul", case_gpu_matmul},
    };
    if (argc >= 2) {
        g_rng = test_seed();
        if (strcmp(argv[1], "write") == 0) {
            case_write(argc > 2 ? argv[2] : NULL);
            return 0;
        }
        if (strcmp(argv[1], "reference") == 0) {
            case_reference(argc > 2 ? argv[2] : NULL);
            printf("PASS reference\n");
            return 0;
        }
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
                tmp_dir();
                cases[i].fn();
                rm_dir();
                printf("PASS %s\n", cases[i].name);
                return 0;
            }
    }
    fprintf(stderr, "usage: %s <case> | reference DIR; cases:", argv[0]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
}
