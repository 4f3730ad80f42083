/* Expert weights and memra_matmul_experts on the host device (issue 30).
 *
 * Each format case makes E experts of fresh random non-zero bytes, an expert
 * weight over them, and E dense weights over the same bytes; routes rows
 * unevenly (expert 0 no rows, expert 1 one row, expert 2 most of the rows,
 * ids unsorted) and checks that the grouped call equals, bit for bit, a loop
 * of memra_matmul calls on the dense weights over each expert's gathered rows,
 * with a row offset and ldy > n (untouched rows and padding stay as they were),
 * that the lane is the dense one (plan and ledger) and that gemm_experts ran.
 *
 *   test_experts <case>   cases: f16mirror_q8_0 q8_0 q4_0 q4_k q5_k q6_k f16 f32 bf16 fp8 fp8blk
 *                                w16_q8_0 w16_q4_0 w16_q4_k w16_q5_k w16_q6_k (MEMRA_W16=1, no mirror budget: the
 *                                experts on the W16 operand, gemm_experts on lane gemm_w16; w16_q8_0 also with an
 *                                f16 activation) fp8blk_floor budget bad_ids refusals file
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "memra/file.h"
#include "files/writer.h"
#include "test.h"
#include "test_blocks.h"

#define E 6
#define ROWS 37
#define SENT (-777.25f)

static uint64_t g_rng;

static memra_runtime *open_rt(const char *budget_mb, const char *profile_fp8_slab)
{
    char b[64];
    snprintf(b, sizeof b, "MEMRA_F16_BUDGET_MB=%s", budget_mb);
    const char *settings[] = {b, profile_fp8_slab, NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

/* Fresh random bytes of one expert: never all zero, every format's scales sane. */
static void random_expert(memra_format f, int64_t n, int64_t k, uint8_t *out)
{
    const size_t bytes = (size_t)n * memra_format_row_bytes(f, k);
    switch (f) {
    case MEMRA_FORMAT_F32:
        for (int64_t i = 0; i < n * k; i++) {
            float v = test_rand_f32(&g_rng);
            memcpy(out + 4 * i, &v, 4);
        }
        return;
    case MEMRA_FORMAT_F16:
    case MEMRA_FORMAT_BF16:
        for (int64_t i = 0; i < n * k; i++) {
            const float v = test_rand_f32(&g_rng);
            const uint16_t h = f == MEMRA_FORMAT_F16 ? memra_f16_from_f32(v) : memra_bf16_from_f32(v);
            out[2 * i] = (uint8_t)h, out[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return;
    case MEMRA_FORMAT_Q8_0:
        for (int64_t b = 0; b < n * k / 32; b++) {
            float v[32];
            for (int i = 0; i < 32; i++) v[i] = test_rand_f32(&g_rng) * 0.5f;
            memra_q8_0_encode(v, out + b * MEMRA_Q8_0_BYTES);
        }
        return;
    case MEMRA_FORMAT_E4M3:
        for (size_t i = 0; i < bytes; i++) {
            uint8_t c;
            do c = (uint8_t)test_rand_u64(&g_rng);
            while (memra_e4m3_is_nan(c) || (c & 0x7F) == 0);
            out[i] = c;
        }
        return;
    default: /* Q4_0 and the K-quants: random codes, small positive f16 scales */
        test_fill_quant_blocks(&g_rng, f, out, bytes);
    }
}

/* Uneven, unsorted routing: expert 0 none, expert 1 one row, expert 2 most. */
static void uneven_ids(int32_t *ids, int rows)
{
    for (int r = 0; r < rows; r++) ids[r] = 2;
    ids[5] = 1;
    for (int r = 0; r < 12; r++) ids[7 + 2 * r] = 3 + r % (E - 3);
    for (int r = rows - 1; r > 0; r--) { /* shuffle */
        const int j = (int)(test_rand_u64(&g_rng) % (uint64_t)(r + 1));
        const int32_t t = ids[r];
        ids[r] = ids[j], ids[j] = t;
    }
    int count[E] = {0};
    for (int r = 0; r < rows; r++) count[ids[r]]++;
    CHECK(count[0] == 0 && count[1] == 1 && count[2] > rows / 2);
}

static uint64_t hits(memra_device *dev, memra_op op) { return memra_ledger_hits(dev, op, "host"); }

typedef struct fcase {
    memra_format format;
    int64_t n, k;
    int grid;          /* E4M3: block-128 grids */
    const char *lane;  /* the plan's lane wanted */
    memra_op gemm;     /* the dense GEMM the lane runs (judged through the ledger) */
} fcase;

/* One format case on rt; ids may hold out-of-range values (their rows must stay SENT). */
static void run_case(memra_runtime *rt, const fcase *fc, const int32_t *ids, int rows)
{
    memra_device *dev = memra_device_host(rt);
    const int64_t n = fc->n, k = fc->k, ldy = n + 3, off = 2;
    const size_t each = (size_t)n * memra_format_row_bytes(fc->format, k);
    uint8_t *bytes = malloc(each * E);
    for (int e = 0; e < E; e++) random_expert(fc->format, n, k, bytes + (size_t)e * each);
    const size_t gc = (size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k));
    float *grid = fc->grid ? malloc(gc * E * sizeof(float)) : NULL;
    float scales[E];
    for (size_t i = 0; grid && i < gc * E; i++) grid[i] = 0.001f + 0.01f * fabsf(test_rand_f32(&g_rng));
    for (int e = 0; e < E; e++) scales[e] = 0.01f + 0.02f * fabsf(test_rand_f32(&g_rng));
    const int per_tensor = fc->format == MEMRA_FORMAT_E4M3 && !fc->grid;
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = fc->format, .n_experts = E, .out_f = n, .in_f = k,
                             .data = bytes, .size = each * E, .scales = per_tensor ? scales : NULL, .grid = grid,
                             .grid_count = grid ? gc * E : 0, .name = "experts"};
    memra_weight *xw;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &xw));
    CHECK_INT_EQ(memra_weight_experts(xw), E);
    memra_weight *dw[E];
    for (int e = 0; e < E; e++) {
        memra_weight_desc d = {.struct_size = sizeof d, .format = fc->format, .out_f = n, .in_f = k,
                               .data = bytes + (size_t)e * each, .size = each,
                               .scale = per_tensor ? scales[e] : 0.0f, .grid = grid ? grid + (size_t)e * gc : NULL,
                               .grid_count = grid ? gc : 0, .name = "dense"};
        CHECK_OK(memra_weight_create(rt, &d, &dw[e]));
        CHECK_INT_EQ(memra_weight_experts(dw[e]), 0);
    }
    /* the plan: the dense lane's, served by gemm_experts */
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(xw, dev, &p));
    printf("plan: %s: %s\n", p.lane, p.why);
    CHECK_STR_EQ(p.lane, fc->lane);
    int grouped = 0;
    for (int i = 0; i < p.n_steps; i++) grouped += p.ops[i] == MEMRA_OP_gemm_experts;
    CHECK_INT_EQ(grouped, 1);

    float *x = malloc((size_t)rows * (size_t)k * sizeof(float));
    for (int64_t i = 0; i < rows * k; i++) x[i] = test_rand_f32(&g_rng) * 2.0f;
    const size_t ysz = (size_t)(rows + off + 2) * (size_t)ldy;
    float *yg = malloc(ysz * sizeof(float)), *yl = malloc(ysz * sizeof(float));
    for (size_t i = 0; i < ysz; i++) yg[i] = yl[i] = SENT;

    memra_ledger_reset(rt);
    memra_matmul_experts_args a = {.struct_size = sizeof a, .x = (memra_dptr)(uintptr_t)x, .rows = rows,
                                   .ids = (memra_dptr)(uintptr_t)ids, .y = (memra_dptr)(uintptr_t)yg, .ldy = ldy,
                                   .y_row_offset = off, .alpha = 0.75f};
    CHECK_OK(memra_matmul_experts_ex(dev, xw, &a));
    CHECK_INT_EQ(hits(dev, MEMRA_OP_gemm_experts), 1);
    if (fc->gemm == MEMRA_OP_gemm_q8_0 || fc->gemm == MEMRA_OP_gemm_q8_0r || fc->gemm == MEMRA_OP_gemm_kr)
        CHECK_INT_EQ(hits(dev, MEMRA_OP_quant_q8_1), 1);
    CHECK_INT_EQ(hits(dev, fc->gemm), 0); /* the grouped op served, no dense call */

    /* the loop of dense calls over each expert's gathered rows */
    float *xe = malloc((size_t)rows * (size_t)k * sizeof(float));
    float *ye = malloc((size_t)rows * (size_t)n * sizeof(float));
    int rowsof[ROWS + 8];
    for (int e = 0; e < E; e++) {
        int me = 0;
        for (int r = 0; r < rows; r++)
            if (ids[r] == e) rowsof[me++] = r;
        if (me == 0) continue;
        for (int i = 0; i < me; i++) memcpy(xe + (size_t)i * k, x + (size_t)rowsof[i] * k, (size_t)k * sizeof(float));
        memra_matmul_args ma = {.struct_size = sizeof ma, .x = (memra_dptr)(uintptr_t)xe, .m = me,
                                .y = (memra_dptr)(uintptr_t)ye, .alpha = 0.75f};
        CHECK_OK(memra_matmul_ex(dev, dw[e], &ma));
        for (int i = 0; i < me; i++)
            memcpy(yl + (size_t)(off + rowsof[i]) * ldy, ye + (size_t)i * n, (size_t)n * sizeof(float));
    }
    CHECK(hits(dev, fc->gemm) > 0); /* the dense loop took the lane the plan named */
    memra_weight_plan dp = {.struct_size = sizeof dp};
    CHECK_OK(memra_weight_plan_get(dw[0], dev, &dp));
    CHECK_STR_EQ(dp.lane, p.lane);

    if (test_inject_fault()) /* prove the comparison can fail: move one routed element */
        for (int r = 0; r < rows; r++)
            if (ids[r] >= 0 && ids[r] < E) {
                yg[(size_t)(off + r) * ldy] = nextafterf(yg[(size_t)(off + r) * ldy], INFINITY);
                break;
            }
    size_t bad = 0, nonzero = 0;
    for (size_t i = 0; i < ysz; i++) {
        uint32_t bg, bl;
        memcpy(&bg, &yg[i], 4), memcpy(&bl, &yl[i], 4);
        if (yg[i] != SENT && yg[i] != 0.0f) nonzero++;
        if (bg != bl && bad++ < 10)
            fprintf(stderr, "  y[row %zu, col %zu]: grouped %.9g, dense loop %.9g\n", i / (size_t)ldy,
                    i % (size_t)ldy, (double)yg[i], (double)yl[i]);
    }
    int valid = 0;
    for (int r = 0; r < rows; r++) valid += ids[r] >= 0 && ids[r] < E;
    printf("%s: %d rows (%d routed), %zu elements differ, %zu non-zero\n", memra_format_name(fc->format), rows,
           valid, bad, nonzero);
    CHECK_INT_EQ(bad, 0);
    CHECK(nonzero > (size_t)valid * (size_t)n / 2);
    for (int r = 0; r < rows; r++) /* skipped rows, the rows around and the padding: untouched */
        for (int64_t j = 0; j < ldy; j++)
            if (!(ids[r] >= 0 && ids[r] < E) || j >= n) CHECK(yg[(size_t)(off + r) * ldy + j] == SENT);
    for (int64_t j = 0; j < ldy; j++) CHECK(yg[j] == SENT && yg[(size_t)(off + rows) * ldy + j] == SENT);

    memra_weight_state ws;
    CHECK_OK(memra_weight_query(xw, dev, &ws));
    CHECK_INT_EQ(ws.prepared, 1);
    for (int e = 0; e < E; e++) memra_weight_destroy(dw[e]);
    memra_weight_destroy(xw);
    free(bytes), free(grid), free(x), free(xe), free(ye), free(yg), free(yl);
}

/* The w16 cases beyond run_case: the experts hold the W16 operand and no floor operand; an f16 activation (the
 * f32 one rounded) gives the f32 activation's bits; with the device's switch off (memra_device_w16_set 0) a new
 * expert weight takes the floor's records again. */
static void w16_checks(memra_runtime *rt, const fcase *fc, const int32_t *ids, int rows)
{
    memra_device *dev = memra_device_host(rt);
    const int64_t n = fc->n, k = fc->k;
    const size_t each = (size_t)n * memra_format_row_bytes(fc->format, k);
    uint8_t *bytes = malloc(each * E);
    CHECK(bytes != NULL);
    for (int e = 0; e < E; e++) random_expert(fc->format, n, k, bytes + (size_t)e * each);
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = fc->format, .n_experts = E, .out_f = n, .in_f = k,
                             .data = bytes, .size = each * E, .name = "experts w16"};
    memra_weight *xw;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &xw));
    CHECK_OK(memra_weight_prepare(xw, dev));
    const unsigned ops = memra_weight_operands(xw, dev);
    CHECK(ops & MEMRA_OPERAND_W16);
    CHECK(!(ops & (MEMRA_OPERAND_Q8_0_RECORDS | MEMRA_OPERAND_K_RECORDS | MEMRA_OPERAND_F16_MIRROR)));
    float *x = malloc((size_t)rows * (size_t)k * sizeof(float));
    uint16_t *xh = malloc((size_t)rows * (size_t)k * sizeof(uint16_t));
    float *y = malloc((size_t)rows * (size_t)n * sizeof(float)), *yh = malloc((size_t)rows * (size_t)n * sizeof(float));
    CHECK(x && xh && y && yh);
    for (int64_t i = 0; i < rows * k; i++) {
        xh[i] = memra_f16_from_f32(test_rand_f32(&g_rng) * 2.0f);
        x[i] = memra_f32_from_f16(xh[i]); /* f16 values: rounding them again changes nothing */
    }
    for (int64_t i = 0; i < rows * n; i++) y[i] = yh[i] = SENT;
    memra_matmul_experts_args a = {.struct_size = sizeof a, .x = (memra_dptr)(uintptr_t)x, .rows = rows,
                                   .ids = (memra_dptr)(uintptr_t)ids, .y = (memra_dptr)(uintptr_t)y, .alpha = 1.0f};
    CHECK_OK(memra_matmul_experts_ex(dev, xw, &a));
    a.x = (memra_dptr)(uintptr_t)xh, a.x_is_f16 = 1, a.y = (memra_dptr)(uintptr_t)yh;
    CHECK_OK(memra_matmul_experts_ex(dev, xw, &a));
    if (test_inject_fault()) yh[0] = nextafterf(yh[0], INFINITY);
    size_t bad = 0;
    for (int64_t i = 0; i < rows * n; i++) bad += memcmp(&y[i], &yh[i], 4) != 0;
    printf("%s experts on w16: f16 activation against f32 (its values): %zu of %lld differ\n",
           memra_format_name(fc->format), bad, (long long)(rows * n));
    CHECK_INT_EQ(bad, 0);
    memra_weight_destroy(xw);
    /* the switch off: a new expert weight on the floor */
    CHECK_OK(memra_device_w16_set(dev, 0));
    CHECK_OK(memra_weight_create_experts(rt, &ed, &xw));
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(xw, dev, &p));
    CHECK(strcmp(p.lane, "w16") != 0);
    CHECK_OK(memra_weight_prepare(xw, dev));
    CHECK(!(memra_weight_operands(xw, dev) & MEMRA_OPERAND_W16));
    CHECK_OK(memra_weight_plan_get(xw, dev, &p));
    printf("memra_device_w16_set 0: plan %s\n", p.lane);
    CHECK(strcmp(p.lane, "w16") != 0);
    CHECK_OK(memra_device_w16_set(dev, -1));
    memra_weight_destroy(xw);
    free(bytes), free(x), free(xh), free(y), free(yh);
}

static void format_case(const char *name)
{
    static const struct {
        const char *name, *budget;
        fcase fc;
    } cases[] = {
        {"f16mirror_q8_0", "1024", {MEMRA_FORMAT_Q8_0, 96, 256, 0, "f16 mirror", MEMRA_OP_gemm_f16}},
        {"q8_0", "0", {MEMRA_FORMAT_Q8_0, 96, 256, 0, "mmq records", MEMRA_OP_gemm_q8_0r}},
        {"q4_0", "0", {MEMRA_FORMAT_Q4_0, 96, 256, 0, "mmq records (Q4_0 as Q8_0)", MEMRA_OP_gemm_q8_0r}},
        {"q4_k", "0", {MEMRA_FORMAT_Q4_K, 96, 512, 0, "mmq K records", MEMRA_OP_gemm_kr}},
        {"q5_k", "0", {MEMRA_FORMAT_Q5_K, 96, 256, 0, "mmq K records", MEMRA_OP_gemm_kr}},
        {"q6_k", "0", {MEMRA_FORMAT_Q6_K, 96, 256, 0, "mmq K records", MEMRA_OP_gemm_kr}},
        {"f16", "0", {MEMRA_FORMAT_F16, 80, 160, 0, "f16", MEMRA_OP_gemm_f16}},
        {"f32", "0", {MEMRA_FORMAT_F32, 80, 160, 0, "f16 mirror", MEMRA_OP_gemm_f16}},
        {"bf16", "0", {MEMRA_FORMAT_BF16, 80, 160, 0, "bf16", MEMRA_OP_gemm_bf16}},
        {"fp8", "0", {MEMRA_FORMAT_E4M3, 80, 200, 0, "fp8", MEMRA_OP_gemm_fp8}},
        {"fp8blk", "0", {MEMRA_FORMAT_E4M3, 160, 384, 1, "fp8 block-128", MEMRA_OP_gemm_fp8_blk}},
        /* MEMRA_W16=1 (the host device too): experts without a mirror on the W16 operand */
        {"w16_q8_0", "0", {MEMRA_FORMAT_Q8_0, 96, 256, 0, "w16", MEMRA_OP_gemm_w16}},
        {"w16_q4_0", "0", {MEMRA_FORMAT_Q4_0, 96, 192, 0, "w16", MEMRA_OP_gemm_w16}},
        {"w16_q4_k", "0", {MEMRA_FORMAT_Q4_K, 96, 512, 0, "w16", MEMRA_OP_gemm_w16}},
        {"w16_q5_k", "0", {MEMRA_FORMAT_Q5_K, 130, 256, 0, "w16", MEMRA_OP_gemm_w16}},
        {"w16_q6_k", "0", {MEMRA_FORMAT_Q6_K, 96, 256, 0, "w16", MEMRA_OP_gemm_w16}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].name, name) != 0) continue;
        const int w16 = strncmp(name, "w16_", 4) == 0;
        memra_runtime *rt = open_rt(cases[i].budget, w16 ? "MEMRA_W16=1" : NULL);
        int32_t ids[ROWS];
        uneven_ids(ids, ROWS);
        run_case(rt, &cases[i].fc, ids, ROWS);
        if (w16) w16_checks(rt, &cases[i].fc, ids, ROWS);
        memra_close(rt);
        return;
    }
    TEST_FAIL_AT("unknown case %s", name);
}

/* Block-128 FP8 on the floor: the host's gemm_fp8_blk disabled, so the
 * grouped call falls to the slab's records (as the dense call does). */
static void test_fp8blk_floor(void)
{
    const char *settings[] = {"MEMRA_F16_BUDGET_MB=0", "MEMRA_DISABLE=gemm_fp8_blk", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = settings};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    int32_t ids[ROWS];
    uneven_ids(ids, ROWS);
    const fcase fc = {MEMRA_FORMAT_E4M3, 160, 384, 1, "mmq records (fp8 slab)", MEMRA_OP_gemm_q8_0r};
    run_case(rt, &fc, ids, ROWS);
    memra_close(rt);
}

/* Rows with ids outside [0, E) (negative: dropped) are skipped, on every lane. */
static void test_bad_ids(void)
{
    static const fcase cases[] = {
        {MEMRA_FORMAT_Q8_0, 64, 256, 0, "mmq records", MEMRA_OP_gemm_q8_0r},
        {MEMRA_FORMAT_F16, 64, 128, 0, "f16", MEMRA_OP_gemm_f16},
        {MEMRA_FORMAT_E4M3, 64, 256, 0, "fp8", MEMRA_OP_gemm_fp8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memra_runtime *rt = open_rt("0", NULL);
        int32_t ids[ROWS];
        uneven_ids(ids, ROWS);
        ids[0] = -1, ids[9] = E, ids[20] = INT32_MIN, ids[ROWS - 1] = INT32_MAX;
        run_case(rt, &cases[i], ids, ROWS);
        memra_close(rt);
    }
}

/* The f16 mirrors of an expert weight: all or none, each counted as one mirror. */
static void test_budget(void)
{
    const int64_t n = 256, k = 1024; /* one mirror 0.5 MB, six 3 MB */
    const size_t each = (size_t)n * memra_format_row_bytes(MEMRA_FORMAT_Q8_0, k);
    uint8_t *bytes = malloc(each * E);
    for (int e = 0; e < E; e++) random_expert(MEMRA_FORMAT_Q8_0, n, k, bytes + (size_t)e * each);
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = E, .out_f = n,
                             .in_f = k, .data = bytes, .size = each * E};
    for (int fits = 0; fits < 2; fits++) {
        memra_runtime *rt = open_rt(fits ? "4" : "2", NULL); /* 2 MB holds four mirrors, not six */
        memra_device *dev = memra_device_host(rt);
        memra_weight *w;
        CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
        CHECK_OK(memra_weight_prepare(w, dev));
        memra_weight_state s;
        CHECK_OK(memra_weight_query(w, dev, &s));
        CHECK_INT_EQ(s.has_f16_mirror, fits);
        CHECK_INT_EQ(memra_device_f16_used(dev), fits ? (uint64_t)E * (uint64_t)(n * k * 2) : 0);
        const unsigned ops = memra_weight_operands(w, dev);
        CHECK(fits ? (ops & MEMRA_OPERAND_F16_MIRROR) != 0 : (ops & MEMRA_OPERAND_Q8_0_RECORDS) != 0);
        memra_weight_plan p = {.struct_size = sizeof p};
        CHECK_OK(memra_weight_plan_get(w, dev, &p));
        CHECK_STR_EQ(p.lane, fits ? "f16 mirror" : "mmq records");
        CHECK_INT_EQ(p.operand_bytes, fits ? (uint64_t)E * (each + (uint64_t)(n * k * 2))
                                           : (uint64_t)E * memra_q8_0r_bytes(n, k));
        memra_weight_destroy(w);
        CHECK_INT_EQ(memra_device_f16_used(dev), 0);
        memra_close(rt);
    }
    free(bytes);
}

static void test_refusals(void)
{
    memra_runtime *rt = open_rt("0", NULL);
    memra_device *dev = memra_device_host(rt);
    const int64_t n = 64, k = 128;
    const size_t each = (size_t)n * memra_format_row_bytes(MEMRA_FORMAT_Q8_0, k);
    uint8_t *bytes = malloc(each * E);
    for (int e = 0; e < E; e++) random_expert(MEMRA_FORMAT_Q8_0, n, k, bytes + (size_t)e * each);
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = E, .out_f = n,
                             .in_f = k, .data = bytes, .size = each * E};
    memra_weight *w = NULL;
    memra_experts_desc b = ed;
    b.size = each * E - 1;
    CHECK_STATUS(memra_weight_create_experts(rt, &b, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "bytes given");
    b = ed, b.n_experts = 0;
    CHECK_STATUS(memra_weight_create_experts(rt, &b, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    b = ed, b.in_f = 100;
    CHECK_STATUS(memra_weight_create_experts(rt, &b, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    float sc[E] = {2, 2, 2, 2, 2, 2}; /* scales apply to E4M3 only */
    b = ed, b.scales = sc;
    CHECK_STATUS(memra_weight_create_experts(rt, &b, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "expert 0");
    b = ed, b.struct_size = 8;
    CHECK_STATUS(memra_weight_create_experts(rt, &b, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK(w == NULL);
    /* FP8: a bad per-expert scale names its expert; a grid of the wrong size */
    const size_t e8 = (size_t)n * (size_t)k;
    uint8_t *f8 = malloc(e8 * E);
    for (int e = 0; e < E; e++) random_expert(MEMRA_FORMAT_E4M3, n, k, f8 + (size_t)e * e8);
    float bad[E] = {1, 1, 1, NAN, 1, 1};
    memra_experts_desc fd = {.struct_size = sizeof fd, .format = MEMRA_FORMAT_E4M3, .n_experts = E, .out_f = n,
                             .in_f = k, .data = f8, .size = e8 * E, .scales = bad};
    CHECK_STATUS(memra_weight_create_experts(rt, &fd, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "expert 3");
    float grid[E];
    fd.scales = NULL, fd.grid = grid, fd.grid_count = E - 1;
    CHECK_STATUS(memra_weight_create_experts(rt, &fd, &w), MEMRA_STATUS_INVALID_ARGUMENT);
    free(f8);

    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    float x[8 * 128] = {0}, y[8 * 64];
    int32_t ids[8] = {0, 1, 2, 3, 4, 5, 0, 1};
    const memra_dptr X = (memra_dptr)(uintptr_t)x, Y = (memra_dptr)(uintptr_t)y, I = (memra_dptr)(uintptr_t)ids;
    CHECK_STATUS(memra_matmul_experts(dev, w, X, 8, 0, Y, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_matmul_experts(dev, w, X, 0, I, Y, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_matmul_experts(dev, w, 0, 8, I, Y, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(memra_matmul_experts(NULL, w, X, 8, I, Y, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    memra_matmul_experts_args a = {.struct_size = sizeof a, .x = X, .rows = 8, .ids = I, .y = Y, .ldy = n - 1};
    CHECK_STATUS(memra_matmul_experts_ex(dev, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    a.ldy = 0, a.alpha = INFINITY;
    CHECK_STATUS(memra_matmul_experts_ex(dev, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    a.alpha = 1.0f, a.y_row_offset = -1;
    CHECK_STATUS(memra_matmul_experts_ex(dev, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    a.y_row_offset = 0, a.x_is_f16 = 1; /* budget 0: the floor, which takes f32 */
    CHECK_STATUS(memra_matmul_experts_ex(dev, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "f16 activation");
    a.x_is_f16 = 0, a.struct_size = 8;
    CHECK_STATUS(memra_matmul_experts_ex(dev, w, &a), MEMRA_STATUS_INVALID_ARGUMENT);
    a.struct_size = sizeof a;
    CHECK_OK(memra_matmul_experts_ex(dev, w, &a));
    /* an expert weight is not a dense weight, and the other way round */
    CHECK_STATUS(memra_matmul(dev, w, X, 8, Y, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "memra_matmul_experts");
    memra_weight *dw;
    memra_weight_desc dd = {.struct_size = sizeof dd, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k,
                            .data = bytes, .size = each};
    CHECK_OK(memra_weight_create(rt, &dd, &dw));
    CHECK_STATUS(memra_matmul_experts(dev, dw, X, 8, I, Y, NULL), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "dense weight");
    /* the op itself, called by name: a lane that is not a dense GEMM, no experts */
    memra_op_args oa = {.struct_size = sizeof oa};
    oa.gemm = (memra_gemm_args){.struct_size = sizeof oa.gemm, .m = 8, .n = (int32_t)n, .k = (int32_t)k, .x = X,
                                .y = Y, .ldy = n, .alpha = 1.0f, .w = X};
    oa.experts = (memra_gemm_experts_args){.struct_size = sizeof oa.experts, .lane = MEMRA_OP_scale, .n_experts = E,
                                           .ids = I};
    CHECK_STATUS(memra_module_call(dev, "host", MEMRA_OP_gemm_experts, &oa), MEMRA_STATUS_INVALID_ARGUMENT);
    oa.experts.lane = MEMRA_OP_gemm_f16, oa.experts.n_experts = 0;
    CHECK_STATUS(memra_module_call(dev, "host", MEMRA_OP_gemm_experts, &oa), MEMRA_STATUS_INVALID_ARGUMENT);
    oa.struct_size = (uint32_t)offsetof(memra_op_args, experts);
    CHECK_STATUS(memra_module_call(dev, "host", MEMRA_OP_gemm_experts, &oa), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_EQ(memra_op_name(MEMRA_OP_gemm_experts), "gemm_experts");
    memra_weight_destroy(dw);
    memra_weight_destroy(w);
    free(bytes);
    memra_close(rt);
}

/* Run xw and ref (two expert weights over the same bytes) on the same rows: bit for bit. */
static void same_results(memra_device *dev, memra_weight *xw, memra_weight *ref, int64_t n, int64_t k)
{
    int32_t ids[ROWS];
    uneven_ids(ids, ROWS);
    float *x = malloc((size_t)ROWS * (size_t)k * sizeof(float));
    float *y1 = malloc((size_t)ROWS * (size_t)n * sizeof(float)), *y2 = malloc((size_t)ROWS * (size_t)n * sizeof(float));
    for (int64_t i = 0; i < ROWS * k; i++) x[i] = test_rand_f32(&g_rng);
    CHECK_OK(memra_matmul_experts(dev, xw, (memra_dptr)(uintptr_t)x, ROWS, (memra_dptr)(uintptr_t)ids,
                                  (memra_dptr)(uintptr_t)y1, NULL));
    CHECK_OK(memra_matmul_experts(dev, ref, (memra_dptr)(uintptr_t)x, ROWS, (memra_dptr)(uintptr_t)ids,
                                  (memra_dptr)(uintptr_t)y2, NULL));
    if (test_inject_fault()) y1[0] = nextafterf(y1[0], INFINITY);
    CHECK(memcmp(y1, y2, (size_t)ROWS * (size_t)n * sizeof(float)) == 0);
    free(x), free(y1), free(y2);
}

/* Expert groups from files: a GGUF 3D tensor (ne = {in, out, E}) and the
 * per-expert 2D tensors of a safetensors file (FP8 block-128 with a
 * weight_scale_inv each), against expert weights made from the same bytes. */
static void test_file(const char *dir)
{
    memra_runtime *rt = open_rt("0", NULL);
    memra_device *dev = memra_device_host(rt);
    /* GGUF: Q8_0 [E x 64 x 256], and a run with a hole (experts 0, 1, 3: not grouped) */
    const int64_t n = 64, k = 256;
    const size_t each = (size_t)n * memra_format_row_bytes(MEMRA_FORMAT_Q8_0, k);
    uint8_t *q = malloc(each * E);
    for (int e = 0; e < E; e++) random_expert(MEMRA_FORMAT_Q8_0, n, k, q + (size_t)e * each);
    tw_gguf_tensor gt[] = {
        {.name = "blk.0.ffn_gate_exps.weight", .type = 8, .n_dims = 3, .ne = {(uint64_t)k, (uint64_t)n, E},
         .data = q, .bytes = each * E, .offset_override = -1},
        {.name = "blk.0.attn_q.weight", .type = 8, .n_dims = 2, .ne = {(uint64_t)k, (uint64_t)n}, .data = q,
         .bytes = each, .offset_override = -1},
    };
    tw_gguf g = {.tensors = gt, .n_tensors = 2};
    tw_buf b = {0};
    tw_gguf_build(&g, &b);
    char path[4096];
    if (dir) {
        snprintf(path, sizeof path, "%s/experts.gguf", dir);
        tw_save(&b, path);
    }
    memra_file *f;
    CHECK_OK(memra_file_open_memory("experts.gguf", b.p, b.n, &f));
    CHECK_INT_EQ(memra_file_expert_group_count(f), 1);
    memra_expert_group_info gi;
    CHECK_OK(memra_file_expert_group_get(f, 0, &gi));
    CHECK_STR_EQ(gi.name, "blk.0.ffn_gate_exps.weight");
    CHECK(gi.from_3d == 1 && gi.n_experts == E && gi.out_f == n && gi.in_f == k && gi.format == MEMRA_FORMAT_Q8_0);
    CHECK_INT_EQ(gi.bytes, each * E);
    CHECK_STATUS(memra_file_expert_group_get(f, 1, &gi), MEMRA_STATUS_INVALID_ARGUMENT);
    memra_weight *fw, *rw;
    CHECK_STATUS(memra_file_experts_create(rt, f, "blk.0.attn_q.weight", &fw), MEMRA_STATUS_NOT_FOUND);
    CHECK_OK(memra_file_experts_create(rt, f, "blk.0.ffn_gate_exps.weight", &fw));
    memra_file_close(f); /* the weight keeps the mapping */
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = E, .out_f = n,
                             .in_f = k, .data = q, .size = each * E};
    CHECK_OK(memra_weight_create_experts(rt, &ed, &rw));
    CHECK_INT_EQ(memra_weight_experts(fw), E);
    same_results(dev, fw, rw, n, k);
    memra_weight_destroy(fw);
    memra_weight_destroy(rw);
    tw_free(&b);

    /* safetensors: F8_E4M3 experts with block-128 grids, J = 0 .. E-1 in a shuffled order; a broken run beside */
    const int64_t fn_ = 160, fk = 384;
    const size_t fe = (size_t)fn_ * (size_t)fk, gc = (size_t)(memra_fp8_grid_rows(fn_) * memra_fp8_grid_cols(fk));
    uint8_t *w8 = malloc(fe * E);
    float *grid = malloc(gc * E * sizeof(float));
    for (int e = 0; e < E; e++) random_expert(MEMRA_FORMAT_E4M3, fn_, fk, w8 + (size_t)e * fe);
    for (size_t i = 0; i < gc * E; i++) grid[i] = 0.001f + 0.01f * fabsf(test_rand_f32(&g_rng));
    tw_st_tensor st[2 * E + 3];
    char names[2 * E + 3][96];
    size_t nt = 0;
    static const int order[E] = {3, 0, 5, 1, 4, 2};
    for (int i = 0; i < E; i++) {
        const int e = order[i];
        snprintf(names[nt], sizeof names[nt], "model.layers.0.mlp.experts.%d.up_proj.weight", e);
        st[nt] = (tw_st_tensor){.name = names[nt], .dtype = "F8_E4M3", .n_dims = 2,
                                .shape = {(uint64_t)fn_, (uint64_t)fk}, .data = w8 + (size_t)e * fe, .bytes = fe};
        nt++;
        snprintf(names[nt], sizeof names[nt], "model.layers.0.mlp.experts.%d.up_proj.weight_scale_inv", e);
        st[nt] = (tw_st_tensor){.name = names[nt], .dtype = "F32", .n_dims = 2,
                                .shape = {(uint64_t)memra_fp8_grid_rows(fn_), (uint64_t)memra_fp8_grid_cols(fk)},
                                .data = grid + (size_t)e * gc, .bytes = gc * sizeof(float)};
        nt++;
    }
    uint8_t bf[8 * 32 * 2];
    random_expert(MEMRA_FORMAT_BF16, 8, 32, bf);
    for (int e = 0; e < 3; e++) { /* experts 0, 1, 3 of down_proj: a hole, so no group */
        snprintf(names[nt], sizeof names[nt], "model.layers.0.mlp.experts.%d.down_proj.weight", e == 2 ? 3 : e);
        st[nt] = (tw_st_tensor){.name = names[nt], .dtype = "BF16", .n_dims = 2, .shape = {8, 32}, .data = bf,
                                .bytes = sizeof bf};
        nt++;
    }
    tw_st_build(st, nt, NULL, &b);
    if (dir) {
        snprintf(path, sizeof path, "%s/experts.safetensors", dir);
        tw_save(&b, path);
    }
    CHECK_OK(memra_file_open_memory("experts.safetensors", b.p, b.n, &f));
    CHECK_INT_EQ(memra_file_expert_group_count(f), 1);
    CHECK_OK(memra_file_expert_group_get(f, 0, &gi));
    CHECK_STR_EQ(gi.name, "model.layers.0.mlp.experts.*.up_proj.weight");
    CHECK(gi.from_3d == 0 && gi.n_experts == E && gi.out_f == fn_ && gi.in_f == fk && gi.format == MEMRA_FORMAT_E4M3);
    CHECK_OK(memra_file_experts_create(rt, f, gi.name, &fw));
    memra_file_close(f);
    memra_experts_desc fd = {.struct_size = sizeof fd, .format = MEMRA_FORMAT_E4M3, .n_experts = E, .out_f = fn_,
                             .in_f = fk, .data = w8, .size = fe * E, .grid = grid, .grid_count = gc * E};
    CHECK_OK(memra_weight_create_experts(rt, &fd, &rw));
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(fw, dev, &p));
    CHECK_STR_EQ(p.lane, "fp8 block-128");
    same_results(dev, fw, rw, fn_, fk);
    memra_weight_destroy(fw);
    memra_weight_destroy(rw);
    tw_free(&b);
    free(q), free(w8), free(grid);
    memra_close(rt);
}

/* Threads: four threads call one expert weight, unprepared, on the host device
 * at once (the first calls race to prepare it), each result bit for bit the
 * serial one; a fifth queries and plans meanwhile. */
typedef struct thr {
    memra_device *dev;
    memra_weight *w;
    const float *x;
    const int32_t *ids;
    float *y;
    int64_t n;
    memra_status st;
} thr;

static void *thr_main(void *arg)
{
    thr *t = arg;
    for (int i = 0; i < 8 && t->st == MEMRA_STATUS_OK; i++)
        t->st = memra_matmul_experts(t->dev, t->w, (memra_dptr)(uintptr_t)t->x, ROWS, (memra_dptr)(uintptr_t)t->ids,
                                     (memra_dptr)(uintptr_t)t->y, NULL);
    return NULL;
}

static void *thr_query(void *arg)
{
    thr *t = arg;
    for (int i = 0; i < 200; i++) {
        memra_weight_state ws;
        memra_weight_plan p = {.struct_size = sizeof p};
        if (memra_weight_query(t->w, t->dev, &ws) != MEMRA_STATUS_OK ||
            memra_weight_plan_get(t->w, t->dev, &p) != MEMRA_STATUS_OK)
            t->st = MEMRA_STATUS_INTERNAL;
        (void)memra_weight_operands(t->w, t->dev);
    }
    return NULL;
}

static void test_threads(void)
{
    const int64_t n = 96, k = 256;
    const size_t each = (size_t)n * memra_format_row_bytes(MEMRA_FORMAT_Q8_0, k);
    uint8_t *bytes = malloc(each * E);
    for (int e = 0; e < E; e++) random_expert(MEMRA_FORMAT_Q8_0, n, k, bytes + (size_t)e * each);
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = E, .out_f = n,
                             .in_f = k, .data = bytes, .size = each * E};
    int32_t ids[ROWS];
    uneven_ids(ids, ROWS);
    float *x = malloc((size_t)ROWS * (size_t)k * sizeof(float));
    for (int64_t i = 0; i < ROWS * k; i++) x[i] = test_rand_f32(&g_rng);
    for (int budget = 0; budget < 2; budget++) {
        memra_runtime *rt = open_rt(budget ? "64" : "0", NULL);
        memra_device *dev = memra_device_host(rt);
        memra_weight *ref, *w;
        CHECK_OK(memra_weight_create_experts(rt, &ed, &ref));
        CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
        float *want = malloc((size_t)ROWS * (size_t)n * sizeof(float));
        CHECK_OK(memra_matmul_experts(dev, ref, (memra_dptr)(uintptr_t)x, ROWS, (memra_dptr)(uintptr_t)ids,
                                      (memra_dptr)(uintptr_t)want, NULL));
        thr t[5];
        pthread_t tid[5];
        for (int i = 0; i < 5; i++) {
            t[i] = (thr){.dev = dev, .w = w, .x = x, .ids = ids, .n = n, .st = MEMRA_STATUS_OK,
                         .y = malloc((size_t)ROWS * (size_t)n * sizeof(float))};
            CHECK(pthread_create(&tid[i], NULL, i == 4 ? thr_query : thr_main, &t[i]) == 0);
        }
        for (int i = 0; i < 5; i++) pthread_join(tid[i], NULL);
        for (int i = 0; i < 5; i++) {
            CHECK_OK(t[i].st);
            if (i < 4) CHECK(memcmp(t[i].y, want, (size_t)ROWS * (size_t)n * sizeof(float)) == 0);
            free(t[i].y);
        }
        CHECK_INT_EQ(memra_device_f16_used(dev), budget ? 2u * E * (uint64_t)(n * k * 2) : 0);
        /* core.experts_threads_w16 (MEMRA_W16=1 in the environment): the experts raced on the W16 operand */
        const char *w16 = getenv("MEMRA_W16");
        if (!budget && w16 != NULL && strcmp(w16, "1") == 0) CHECK(memra_weight_operands(w, dev) == MEMRA_OPERAND_W16);
        memra_weight_destroy(w);
        memra_weight_destroy(ref);
        CHECK_INT_EQ(memra_device_f16_used(dev), 0);
        free(want);
        memra_close(rt);
    }
    free(x), free(bytes);
}

/* A producer's maxima given to the grouped op are ignored (each expert takes its own
 * amax pass over its gathered rows): gemm_fp8_blk by name, once with x_amax holding
 * maxima far from x's, once without; the two outputs are bit-identical and not zero. */
static void test_x_amax_ignored(void)
{
    enum { NE = 2, M = 6, N = 128, K = 256 };
    memra_runtime *rt = open_rt("0", NULL);
    memra_device *dev = memra_device_get(rt, memra_device_count(rt) - 1);
    static uint8_t wb[NE][N * K];
    static float grid[NE][1 * 2], x[M * K], y0[M * N], y1[M * N], amax[2 * M];
    for (int e = 0; e < NE; e++) {
        random_expert(MEMRA_FORMAT_E4M3, N, K, wb[e]);
        grid[e][0] = 0.01f * (float)(e + 1), grid[e][1] = 0.02f;
    }
    for (int i = 0; i < M * K; i++) x[i] = 4.0f * test_rand_f32(&g_rng);
    for (int i = 0; i < 2 * M; i++) amax[i] = 0.001f; /* far below |x|: every value would saturate */
    const int32_t ids[M] = {1, 0, 1, 1, 0, 1};
    memra_dptr wp[NE] = {(memra_dptr)(uintptr_t)wb[0], (memra_dptr)(uintptr_t)wb[1]};
    memra_dptr gp[NE] = {(memra_dptr)(uintptr_t)grid[0], (memra_dptr)(uintptr_t)grid[1]};
    for (int pass = 0; pass < 2; pass++) {
        memra_op_args oa = {.struct_size = sizeof oa};
        oa.gemm = (memra_gemm_args){.struct_size = sizeof oa.gemm, .m = M, .n = N, .k = K,
                                    .x = (memra_dptr)(uintptr_t)x, .y = (memra_dptr)(uintptr_t)(pass ? y1 : y0),
                                    .ldy = N, .alpha = 1.0f, .w = (memra_dptr)(uintptr_t)wp,
                                    .w_scale_grid = (memra_dptr)(uintptr_t)gp, .w_format = MEMRA_FORMAT_E4M3};
        oa.gemm.x_amax = pass ? (memra_dptr)(uintptr_t)amax : 0;
        oa.experts = (memra_gemm_experts_args){.struct_size = sizeof oa.experts, .lane = MEMRA_OP_gemm_fp8_blk,
                                               .n_experts = NE, .ids = (memra_dptr)(uintptr_t)ids};
        CHECK_OK(memra_module_call(dev, "host", MEMRA_OP_gemm_experts, &oa));
    }
    int nonzero = 0;
    for (int i = 0; i < M * N; i++) nonzero += y0[i] != 0.0f;
    CHECK(nonzero > M * N / 2);
    CHECK(memcmp(y0, y1, sizeof y0) == 0);
    memra_close(rt);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_experts <case>\n");
        return 2;
    }
    g_rng = test_seed();
    const char *c = argv[1];
    if (strcmp(c, "budget") == 0) test_budget();
    else if (strcmp(c, "bad_ids") == 0) test_bad_ids();
    else if (strcmp(c, "refusals") == 0) test_refusals();
    else if (strcmp(c, "fp8blk_floor") == 0) test_fp8blk_floor();
    else if (strcmp(c, "file") == 0) test_file(NULL);
    else if (strcmp(c, "threads") == 0) test_threads();
    else if (strcmp(c, "x_amax_ignored") == 0) test_x_amax_ignored();
    else if (strcmp(c, "write") == 0) test_file(getenv("EXPERTS_DIR")); /* the files, for the tool tests */
    else format_case(c);
    printf("ok\n");
    return 0;
}
