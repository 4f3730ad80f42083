/* memra bench moe: the MoE sheet (issue 30), the grouped call beside its
 * competitor.
 *
 *   memra bench moe [--m M]... [--routing uniform|skewed|both] [--format F] [--sheet qwen3moe|mixtral|all]
 *                   [--device N|host] [--reps R] [--seed S] [--json FILE|-]
 *
 * Sheets: qwen3moe (Qwen3-30B-A3B-like: E = 128, top-8, gate/up 2048 -> 768,
 * down 768 -> 2048) and mixtral (E = 8, top-2, 4096 -> 14336, 14336 -> 4096),
 * m = 512 and 4096 tokens on a GPU. On the host device every dimension is
 * divided by 8 and m = 16, so the default run takes seconds.
 *
 * Per (sheet, projection, m, routing), arms interleaved inside each repetition
 * (the first arm alternating), two warm-up rounds, medians:
 *  - grouped: one memra_matmul_experts over the m x k rows (token-major, the
 *    ids as the routing gave them, unsorted);
 *  - loop: the engine's way without the op (the competitor): for each
 *    expert with rows, one memra_matmul on a dense weight of that expert's bytes
 *    over its rows, which the loop is handed already gathered (the gather and
 *    scatter, and knowing the counts on the host, are not timed: the
 *    competitor's best case);
 *  - dense: the same lane's dense throughput for the same FLOPs (the issue's
 *    0.85x target on long expert rows): one memra_matmul of expert 0's dense
 *    weight over all the rows.
 * Routing (seeded): uniform: each token picks top-k distinct experts
 * uniformly; skewed: each row goes to expert 0 with probability 1/2, else to a
 * uniform other expert (synthetic: a token may meet an expert twice).
 * Before timing, the grouped output is compared with the loop's (bit for bit
 * where both run the same lane on the host; else the max normalised
 * difference is printed). The ledger proves each arm ran (gemm_experts hits
 * for grouped, the dense op's for the loop). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/file.h"
#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/model_util.h"
#include "tools/tool.h"
#include "tools/tool_fmt.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

typedef struct moe_shape {
    const char *sheet, *proj;
    int32_t experts, topk;
    int64_t in_f, out_f;
} moe_shape;

static const moe_shape k_shapes[] = {
    {"qwen3moe", "gate", 128, 8, 2048, 768}, {"qwen3moe", "up", 128, 8, 2048, 768},
    {"qwen3moe", "down", 128, 8, 768, 2048}, {"mixtral", "gate", 8, 2, 4096, 14336},
    {"mixtral", "up", 8, 2, 4096, 14336},    {"mixtral", "down", 8, 2, 14336, 4096},
};

static const char k_usage[] =
    "usage: memra bench moe [--m M]... [--routing uniform|skewed|both] [--format F]\n"
    "                       [--sheet qwen3moe|mixtral|all] [--device N|host] [--reps R] [--seed S]\n"
    "                       [--json FILE|-]\n"
    "  The MoE sheet: memra_matmul_experts beside a host loop of per-expert memra_matmul calls\n"
    "  on the same lane (the loop gets its rows pre-gathered; that is not timed). Sheets:\n"
    "  qwen3moe (E 128, top-8, 2048->768 gate/up, 768->2048 down), mixtral (E 8, top-2,\n"
    "  4096->14336, 14336->4096). Defaults: both sheets, m 512 and 4096, both routings,\n"
    "  format q8_0, 10 reps on a GPU; on the host dimensions / 8, m 16, 3 reps.\n"
    "  --format: f16 f32 bf16 q8_0 q4_0 q4_k q5_k q6_k fp8 fp8blk (the weights' format; the lane\n"
    "  follows the device's policy and f16 budget, printed per arm)\n"
    "  --model FILE: the file's expert groups (memra model ls) instead of the sheets, at each m,\n"
    "  both routings (top-8 for 64 experts or more, else top-2)\n"
    "  --json writes the receipt (memra-bench-moe v3; '-': stdout, the table then on stderr).\n";
static const struct option k_opts[] = {
    {"m", required_argument, NULL, 'm'},       {"reps", required_argument, NULL, 'r'},
    {"sheet", required_argument, NULL, 'S'},   {"routing", required_argument, NULL, 'R'},
    {"format", required_argument, NULL, 'f'},  {"device", required_argument, NULL, 'd'},
    {"json", required_argument, NULL, 'j'},    {"seed", required_argument, NULL, 's'},
    {"model", required_argument, NULL, 'F'},
    {"help", no_argument, NULL, 'h'},          {"quiet", no_argument, NULL, TOOL_OPT_QUIET},
    {0, 0, 0, 0}};
static const tool_cmd k_cmd = {"memra bench moe", k_usage, k_opts};

static int parse_format(const char *s, memra_format *f, int *grid)
{
    static const struct {
        const char *name;
        memra_format f;
        int grid;
    } k[] = {{"f16", MEMRA_FORMAT_F16, 0},   {"f32", MEMRA_FORMAT_F32, 0},   {"bf16", MEMRA_FORMAT_BF16, 0},
             {"q8_0", MEMRA_FORMAT_Q8_0, 0}, {"q4_0", MEMRA_FORMAT_Q4_0, 0}, {"q4_k", MEMRA_FORMAT_Q4_K, 0},
             {"q5_k", MEMRA_FORMAT_Q5_K, 0}, {"q6_k", MEMRA_FORMAT_Q6_K, 0}, {"fp8", MEMRA_FORMAT_E4M3, 0},
             {"fp8blk", MEMRA_FORMAT_E4M3, 1}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(s, k[i].name) == 0) {
            *f = k[i].f;
            *grid = k[i].grid;
            return 0;
        }
    fprintf(stderr, "memra bench moe: unknown --format '%s'\n", s);
    return 2;
}

static void fill_weight(tool_rng *r, memra_format f, uint8_t *w, int64_t rows, int64_t cols)
{
    switch (f) {
    case MEMRA_FORMAT_F16: tool_fill_f16_w(r, (uint16_t *)(void *)w, (size_t)(rows * cols)); break;
    case MEMRA_FORMAT_BF16:
        for (int64_t i = 0; i < rows * cols; i++) {
            const uint16_t h = memra_bf16_from_f32(tool_rng_signed(r, 0.01f, 0.5f));
            memcpy(w + 2 * i, &h, 2);
        }
        break;
    case MEMRA_FORMAT_F32:
        for (int64_t i = 0; i < rows * cols; i++) {
            const float v = tool_rng_signed(r, 0.01f, 0.5f);
            memcpy(w + 4 * i, &v, 4);
        }
        break;
    case MEMRA_FORMAT_Q8_0: tool_fill_q8_0_w(r, w, rows, cols); break;
    case MEMRA_FORMAT_E4M3: tool_fill_e4m3_w(r, w, (size_t)(rows * cols)); break;
    default: tool_fill_blocks_w(r, f, w, rows, cols); break;
    }
}

/* Routing rows (token-major, slot-minor) into ids. */
static void make_routing(tool_rng *r, int skewed, int32_t e, int32_t topk, int64_t m, int32_t *ids)
{
    for (int64_t t = 0; t < m; t++)
        for (int32_t j = 0; j < topk; j++) {
            int32_t id;
            if (skewed) {
                id = (tool_rng_u64(r) & 1) || e == 1 ? 0 : 1 + (int32_t)(tool_rng_u64(r) % (uint64_t)(e - 1));
            } else {
                int dup;
                do {
                    id = (int32_t)(tool_rng_u64(r) % (uint64_t)e);
                    dup = 0;
                    for (int32_t i = 0; i < j && topk <= e; i++) dup |= ids[t * topk + i] == id;
                } while (dup);
            }
            ids[t * topk + j] = id;
        }
}

typedef struct arm_time {
    double *t;
    double med;
} arm_time;

static memra_op lane_gemm(const memra_weight_plan *p)
{
    for (int i = p->n_steps - 1; i >= 0; i--)
        if (p->ops[i] != MEMRA_OP_quant_q8_1 && p->ops[i] != MEMRA_OP_dequant_f16 &&
            p->ops[i] != MEMRA_OP_fp8_blk_to_q8_0 && p->ops[i] != MEMRA_OP_repack_q8_0)
            return p->ops[i];
    return MEMRA_OP_COUNT_;
}

static uint64_t all_hits(memra_device *dev, memra_op op)
{
    const char *names[16];
    int n = memra_routing_get(dev, op, names, 16);
    uint64_t h = 0;
    for (int i = 0; i < n && i < 16; i++) h += memra_ledger_hits(dev, op, names[i]);
    return h;
}

/* One (weights, m, routing) row: xw an expert weight of E experts [n x k],
 * dw its experts as dense weights (the loop's). uni_ms: on a skewed row, the same shape's uniform grouped
 * median (0: none), whose ratio the row then states (issue 30's skew target: at most 1.3); *grp_ms gets the
 * row's grouped median (0 where the grouped arm did not run). Returns 0, or 1 on an error. */
static int moe_run_floor(memra_device *dev, const char *sheet, const char *proj, memra_weight *xw, memra_weight **dw,
                         int32_t E, int32_t topk, int64_t n, int64_t k, int64_t m, int skewed, int64_t reps,
                         tool_rng *rng, FILE *jf, int *first_json, double uni_ms, double *grp_ms);

/* The loop and dense arms are the grouped lane's own (the floor's, where the experts are quantised): the
 * route to dequant_kr_f16 + gemm_f16 that memra_matmul takes from some m (memra_weight_floor_f16_m) is
 * off on dev for the run, back to the default afterwards */
static int moe_run(memra_device *dev, const char *sheet, const char *proj, memra_weight *xw, memra_weight **dw,
                   int32_t E, int32_t topk, int64_t n, int64_t k, int64_t m, int skewed, int64_t reps, tool_rng *rng,
                   FILE *jf, int *first_json, double uni_ms, double *grp_ms)
{
    memra_device_floor_f16_m_set(dev, 0);
    const int rc = moe_run_floor(dev, sheet, proj, xw, dw, E, topk, n, k, m, skewed, reps, rng, jf, first_json,
                                 uni_ms, grp_ms);
    memra_device_floor_f16_m_set(dev, -1);
    return rc;
}

static int moe_run_floor(memra_device *dev, const char *sheet, const char *proj, memra_weight *xw, memra_weight **dw,
                         int32_t E, int32_t topk, int64_t n, int64_t k, int64_t m, int skewed, int64_t reps,
                         tool_rng *rng, FILE *jf, int *first_json, double uni_ms, double *grp_ms)
{
    *grp_ms = 0;
    const int64_t rows = m * topk;
    const int gpu = memra_device_caps_get(dev)->arch != MEMRA_ARCH_HOST;
    int rc = 0;
    float *x = tool_alloc((size_t)(rows * k), sizeof(float)), *xs = tool_alloc((size_t)(rows * k), sizeof(float));
    float *yg = tool_alloc((size_t)(rows * n), sizeof(float)), *yl = tool_alloc((size_t)(rows * n), sizeof(float));
    int32_t *ids = tool_alloc((size_t)rows, sizeof(int32_t));
    int64_t *start = tool_alloc((size_t)E + 1, sizeof(int64_t)), *perm = tool_alloc((size_t)rows, sizeof(int64_t));
    arm_time at[3] = {{tool_alloc((size_t)reps, sizeof(double)), 0},
                      {tool_alloc((size_t)reps, sizeof(double)), 0},
                      {tool_alloc((size_t)reps, sizeof(double)), 0}};
    memra_buffer *bx = NULL, *bxs = NULL, *bi = NULL, *byg = NULL, *byl = NULL, *byd = NULL;
    memra_timer *timer = NULL;
    memra_status st = MEMRA_STATUS_OK;
    if (!x || !xs || !yg || !yl || !ids || !start || !perm || !at[0].t || !at[1].t || !at[2].t) {
        fprintf(stderr, "memra bench moe: out of host memory\n");
        rc = 1;
        goto out;
    }
    tool_fill_x(rng, x, (size_t)(rows * k));
    make_routing(rng, skewed, E, topk, m, ids);
    /* the loop's gathered rows */
    memset(start, 0, ((size_t)E + 1) * sizeof *start);
    for (int64_t r = 0; r < rows; r++) start[ids[r] + 1]++;
    int64_t most = 0;
    for (int32_t e = 0; e < E; e++) {
        if (start[e + 1] > most) most = start[e + 1];
        start[e + 1] += start[e];
    }
    {
        int64_t *fill = tool_alloc((size_t)E, sizeof *fill);
        if (fill == NULL) {
            rc = 1;
            goto out;
        }
        memcpy(fill, start, (size_t)E * sizeof *fill);
        for (int64_t r = 0; r < rows; r++) perm[fill[ids[r]]++] = r;
        free(fill);
    }
    for (int64_t i = 0; i < rows; i++) memcpy(xs + i * k, x + perm[i] * k, (size_t)k * sizeof(float));
    memra_weight_plan pg = {.struct_size = sizeof pg}, pl = {.struct_size = sizeof pl};
    /* the expert weight first: its mirrors are all or none against the budget */
    st = memra_weight_plan_get(xw, dev, &pg);
    int grouped_ok = st == MEMRA_STATUS_OK && strcmp(pg.lane, "none") != 0;
    if (st == MEMRA_STATUS_OK && grouped_ok) st = memra_weight_prepare(xw, dev);
    /* the loop's and the dense arm's weights on the grouped call's lane: the W16 operand (gemm_w16) where the
     * experts took it, else none (the floor's kernels), whatever MEMRA_W16 says */
    memra_device_w16_set(dev, grouped_ok && strcmp(pg.lane, "w16") == 0);
    for (int32_t e = 0; e < E && st == MEMRA_STATUS_OK; e++) st = memra_weight_prepare(dw[e], dev);
    memra_device_w16_set(dev, -1);
    if (st == MEMRA_STATUS_OK) st = memra_weight_plan_get(dw[0], dev, &pl);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, x, (size_t)(rows * k) * sizeof(float), &bx);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, xs, (size_t)(rows * k) * sizeof(float), &bxs);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, ids, (size_t)rows * sizeof(int32_t), &bi);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, NULL, (size_t)(rows * n) * sizeof(float), &byg);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, NULL, (size_t)(rows * n) * sizeof(float), &byl);
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, NULL, (size_t)(rows * n) * sizeof(float), &byd);
    if (st == MEMRA_STATUS_OK) st = memra_timer_create(dev, &timer);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench moe: %s %s: %s: %s\n", sheet, proj, memra_status_str(st), memra_last_error());
        rc = 1;
        goto out;
    }
    const memra_dptr X = memra_buffer_ptr(bx), XS = memra_buffer_ptr(bxs), I = memra_buffer_ptr(bi);
    const memra_dptr YG = memra_buffer_ptr(byg), YL = memra_buffer_ptr(byl), YD = memra_buffer_ptr(byd);
    char gwhy[256] = "";
    if (grouped_ok) { /* a lane the plan names may still decline the call (a GPU module serving some lanes only) */
        const memra_status gs = memra_matmul_experts(dev, xw, X, (int32_t)rows, I, YG, NULL);
        if (gs == MEMRA_STATUS_DECLINED || gs == MEMRA_STATUS_NOT_SUPPORTED) {
            snprintf(gwhy, sizeof gwhy, "%s", memra_last_error());
            grouped_ok = 0;
        } else if (gs != MEMRA_STATUS_OK) {
            st = gs;
        }
    }
    const memra_op dense_op = lane_gemm(&pl);
    const uint64_t g0 = all_hits(dev, MEMRA_OP_gemm_experts), l0 = dense_op < MEMRA_OP_COUNT_ ? all_hits(dev, dense_op) : 0;
    for (int64_t r = -2; r < reps && st == MEMRA_STATUS_OK; r++) {
        for (int i = 0; i < 3 && st == MEMRA_STATUS_OK; i++) {
            const int arm = (int)(((r < 0 ? 0 : r) + i) % 3); /* 0 grouped, 1 loop, 2 dense */
            if (arm == 0 && !grouped_ok) continue;
            double ms = 0;
            st = memra_timer_start(timer, NULL);
            if (arm == 0 && st == MEMRA_STATUS_OK) {
                st = memra_matmul_experts(dev, xw, X, (int32_t)rows, I, YG, NULL);
            } else if (arm == 2 && st == MEMRA_STATUS_OK) {
                st = memra_matmul(dev, dw[0], XS, (int32_t)rows, YD, NULL);
            } else {
                for (int32_t e = 0; e < E && st == MEMRA_STATUS_OK; e++) {
                    const int64_t me = start[e + 1] - start[e];
                    if (me == 0) continue;
                    st = memra_matmul(dev, dw[e], XS + (memra_dptr)(start[e] * k * 4), (int32_t)me,
                                      YL + (memra_dptr)(start[e] * n * 4), NULL);
                }
            }
            if (st == MEMRA_STATUS_OK) st = memra_timer_stop(timer, NULL);
            if (st == MEMRA_STATUS_OK) st = memra_timer_elapsed_ms(timer, &ms);
            if (st == MEMRA_STATUS_OK && r >= 0) at[arm].t[r] = ms;
        }
    }
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench moe: %s %s m=%lld: %s: %s\n", sheet, proj, (long long)m, memra_status_str(st),
                memra_last_error());
        rc = 1;
        goto out;
    }
    const uint64_t gh = all_hits(dev, MEMRA_OP_gemm_experts) - g0;
    const uint64_t lh = dense_op < MEMRA_OP_COUNT_ ? all_hits(dev, dense_op) - l0 : 0;
    /* agreement: the loop's rows scattered back against the grouped rows */
    double maxdiff = 0;
    size_t differ = 0;
    if (grouped_ok) {
        st = memra_buffer_read(byg, 0, yg, (size_t)(rows * n) * sizeof(float));
        if (st == MEMRA_STATUS_OK) st = memra_buffer_read(byl, 0, yl, (size_t)(rows * n) * sizeof(float));
        for (int64_t i = 0; i < rows && st == MEMRA_STATUS_OK; i++) {
            const float *a = yg + perm[i] * n, *b = yl + i * n;
            double amax = 0;
            for (int64_t j = 0; j < n; j++) amax = fmax(amax, fabs((double)b[j]));
            for (int64_t j = 0; j < n; j++) {
                if (memcmp(&a[j], &b[j], 4) != 0) differ++;
                const double dd = fabs((double)a[j] - (double)b[j]) / (amax > 0 ? amax : 1.0);
                if (!(dd <= maxdiff)) maxdiff = dd;
            }
        }
    }
    const double flops = 2.0 * (double)rows * (double)n * (double)k;
    at[1].med = tool_median(at[1].t, (size_t)reps);
    at[2].med = tool_median(at[2].t, (size_t)reps);
    at[0].med = grouped_ok ? tool_median(at[0].t, (size_t)reps) : 0;
    char s0[16] = "-", s1[16], s2[16], r0[32] = "-", r1[32], name[160];
    if (grouped_ok) tool_spread(at[0].t, (size_t)reps, s0, sizeof s0);
    tool_spread(at[1].t, (size_t)reps, s1, sizeof s1);
    tool_spread(at[2].t, (size_t)reps, s2, sizeof s2);
    if (grouped_ok) tool_rate(flops / (at[0].med * 1e-3), "FLOP/s", r0, sizeof r0);
    tool_rate(flops / (at[1].med * 1e-3), "FLOP/s", r1, sizeof r1);
    snprintf(name, sizeof name, "%s %s %lld->%lld", sheet, proj, (long long)k, (long long)n);
    int active = 0;
    for (int32_t e = 0; e < E; e++) active += start[e + 1] > start[e];
    const char *lg = grouped_ok ? pg.lane : "-";
    printf("%-30s %6lld %-7s %4d/%-4d %5lld %10.4f %8s %10.4f %8s %8.2fx %14s %14s %9.4f %8s %7.2fx  %s (%s%s%s)\n",
           name, (long long)m, skewed ? "skewed" : "uniform", active, (int)E, (long long)most, at[0].med, s0, at[1].med,
           s1, grouped_ok ? at[1].med / at[0].med : 0.0, r0, r1, at[2].med, s2,
           grouped_ok ? at[2].med / at[0].med : 0.0,
           !grouped_ok ? "grouped: no lane" : differ == 0 ? "bitwise" : "differs", lg,
           strcmp(lg, pl.lane) ? " / loop " : "", strcmp(lg, pl.lane) ? pl.lane : "");
    if (grouped_ok && differ) printf("    %zu elements differ, max |diff| / row amax %.3g\n", differ, maxdiff);
    *grp_ms = at[0].med;
    const double skew_ratio = skewed && grouped_ok && uni_ms > 0 ? at[0].med / uni_ms : 0;
    if (skew_ratio > 0) printf("    skewed / uniform (grouped): %.2fx\n", skew_ratio);
    if (!grouped_ok) printf("    grouped arm not run: %s\n", gwhy[0] ? gwhy : pg.why);
    if (grouped_ok && gh == 0) {
        printf("    INVALID: the ledger shows no gemm_experts hit\n");
        rc = 1;
    }
    if (lh == 0 && dense_op < MEMRA_OP_COUNT_) {
        printf("    INVALID: the ledger shows no %s hit for the loop\n", memra_op_name(dense_op));
        rc = 1;
    }
    if (!gpu && grouped_ok && differ && strcmp(pg.lane, pl.lane) == 0) {
        printf("    FAIL: the host's grouped call must equal the loop bit for bit\n");
        rc = 1;
    }
    if (jf) {
        fprintf(jf, "%s{\"sheet\":", *first_json ? "" : ",");
        tool_json_str(jf, sheet);
        fprintf(jf, ",\"proj\":");
        tool_json_str(jf, proj);
        fprintf(jf, ",\"experts\":%d,\"topk\":%d,\"in_f\":%lld,\"out_f\":%lld,"
                    "\"m\":%lld,\"rows\":%lld,\"routing\":\"%s\",\"active_experts\":%d,\"most_rows\":%lld,"
                    "\"flops\":%.0f,\"grouped_lane\":",
                (int)E, (int)topk, (long long)k, (long long)n, (long long)m, (long long)rows,
                skewed ? "skewed" : "uniform", active, (long long)most, flops);
        tool_json_str(jf, grouped_ok ? pg.lane : "none");
        fprintf(jf, ",\"loop_lane\":");
        tool_json_str(jf, pl.lane);
        if (skew_ratio > 0) fprintf(jf, ",\"skewed_over_uniform\":%.6g", skew_ratio);
        fprintf(jf, ",\"grouped_ms\":%.6g,\"loop_ms\":%.6g,\"speedup\":%.6g,\"grouped_hits\":%llu,\"loop_hits\":%llu,"
                    "\"elements_differ\":%zu,\"max_diff\":%.6g,\"dense_ms\":%.6g,\"of_dense\":%.6g",
                at[0].med, at[1].med, grouped_ok ? at[1].med / at[0].med : 0.0, (unsigned long long)gh,
                (unsigned long long)lh, differ, maxdiff, at[2].med, grouped_ok ? at[2].med / at[0].med : 0.0);
        for (int a = 0; a < 3; a++) {
            fprintf(jf, ",\"%s_times_ms\":[", a == 2 ? "dense" : a ? "loop" : "grouped");
            for (int64_t r = 0; r < reps && (a || grouped_ok); r++) fprintf(jf, "%s%.6g", r ? "," : "", at[a].t[r]);
            fprintf(jf, "]");
        }
        fprintf(jf, "}");
        *first_json = 0;
    }
out:
    memra_timer_destroy(timer);
    memra_buffer_destroy(bx), memra_buffer_destroy(bxs), memra_buffer_destroy(bi);
    memra_buffer_destroy(byg), memra_buffer_destroy(byl), memra_buffer_destroy(byd);
    free(x), free(xs), free(yg), free(yl), free(ids), free(start), free(perm);
    free(at[0].t), free(at[1].t), free(at[2].t);
    return rc;
}

/* One sheet row: random weights of the shape (dimensions / div). */
static int moe_row(memra_device *dev, memra_runtime *rt, const moe_shape *s, int div, int64_t m, int skewed,
                   memra_format fmt, int grid, int64_t reps, tool_rng *rng, FILE *jf, int *first_json, double uni_ms,
                   double *grp_ms)
{
    const int32_t E = s->experts;
    const int64_t k = s->in_f / div, n = s->out_f / div;
    const size_t each = (size_t)n * (size_t)memra_format_row_bytes(fmt, k);
    const size_t gc = grid ? (size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k)) : 0;
    int rc = 0;
    uint8_t *wb = tool_alloc(each * (size_t)E, 1);
    float *gr = grid ? tool_alloc(gc * (size_t)E, sizeof(float)) : NULL;
    float *sc = tool_alloc((size_t)E, sizeof(float));
    memra_weight **dw = calloc((size_t)E, sizeof *dw);
    memra_weight *xw = NULL;
    if (!wb || (grid && !gr) || !sc || !dw) {
        fprintf(stderr, "memra bench moe: out of host memory\n");
        rc = 1;
        goto out;
    }
    for (int32_t e = 0; e < E; e++) fill_weight(rng, fmt, wb + (size_t)e * each, n, k);
    if (grid) tool_fill_grid(rng, gr, gc * (size_t)E);
    for (int32_t e = 0; e < E; e++) sc[e] = (float)(0.01 + 0.02 * tool_rng_unit(rng));
    const int per_tensor = fmt == MEMRA_FORMAT_E4M3 && !grid;
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = fmt, .n_experts = E, .out_f = n, .in_f = k,
                             .data = wb, .size = each * (size_t)E, .scales = per_tensor ? sc : NULL, .grid = gr,
                             .grid_count = gc * (size_t)E, .name = s->proj};
    memra_status st = memra_weight_create_experts(rt, &ed, &xw);
    if (st == MEMRA_STATUS_INVALID_ARGUMENT) { /* a shape the format cannot hold (K-quants want in_f % 256) */
        printf("%s %s %lld->%lld: skipped: %s\n", s->sheet, s->proj, (long long)k, (long long)n, memra_last_error());
        goto out;
    }
    for (int32_t e = 0; e < E && st == MEMRA_STATUS_OK; e++) {
        memra_weight_desc d = {.struct_size = sizeof d, .format = fmt, .out_f = n, .in_f = k,
                               .data = wb + (size_t)e * each, .size = each, .scale = per_tensor ? sc[e] : 0.0f,
                               .grid = gr ? gr + (size_t)e * gc : NULL, .grid_count = gc, .name = s->proj};
        st = memra_weight_create(rt, &d, &dw[e]);
    }
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench moe: %s %s: %s: %s\n", s->sheet, s->proj, memra_status_str(st), memra_last_error());
        rc = 1;
        goto out;
    }
    rc = moe_run(dev, s->sheet, s->proj, xw, dw, E, s->topk, n, k, m, skewed, reps, rng, jf, first_json, uni_ms,
                 grp_ms);
out:
    memra_weight_destroy(xw);
    for (int32_t e = 0; dw && e < E; e++) memra_weight_destroy(dw[e]);
    free(wb), free(gr), free(sc), free(dw);
    return rc;
}

/* The expert groups of a model file, each through both arms at m tokens,
 * uniform and skewed routing (memra bench moe --model, memra bench --model).
 * top-k: 8 for 64 experts or more, else 2 (never more than E). */
int tool_bench_moe_file(memra_runtime *rt, memra_device *dev, const char *path, int64_t m, int64_t reps,
                          uint64_t seed, FILE *jf, int *first_json)
{
    memra_file *f = NULL;
    memra_status st = memra_file_open(path, &f);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench: %s: %s\n", memra_status_str(st), memra_last_error());
        return 1;
    }
    tool_rng rng;
    tool_rng_seed(&rng, seed);
    int rc = 0;
    const size_t ng = memra_file_expert_group_count(f);
    for (size_t g = 0; g < ng && rc == 0; g++) {
        memra_expert_group_info gi;
        memra_file_expert_group_get(f, g, &gi);
        const int32_t E = gi.n_experts, topk = E >= 64 ? 8 : E >= 2 ? 2 : 1;
        memra_weight *xw = NULL;
        memra_weight **dw = calloc((size_t)E, sizeof *dw);
        st = dw ? memra_file_experts_create(rt, f, gi.name, &xw) : MEMRA_STATUS_OUT_OF_MEMORY;
        for (int32_t e = 0; e < E && st == MEMRA_STATUS_OK; e++) {
            if (gi.from_3d) { /* expert e's slice of the 3D tensor, copied */
                size_t ti;
                const void *data;
                size_t bytes;
                st = memra_file_tensor_find(f, gi.name, &ti);
                if (st == MEMRA_STATUS_OK) st = memra_file_tensor_data(f, ti, &data, &bytes);
                const size_t each = bytes / (size_t)E;
                memra_weight_desc d = {.struct_size = sizeof d, .format = gi.format, .out_f = gi.out_f,
                                       .in_f = gi.in_f, .data = (const uint8_t *)data + (size_t)e * each,
                                       .size = each, .name = gi.name};
                if (st == MEMRA_STATUS_OK) st = memra_weight_create(rt, &d, &dw[e]);
            } else { /* the file's own tensor of expert e */
                char name[600];
                const char *star = strchr(gi.name, '*');
                snprintf(name, sizeof name, "%.*s%d%s", (int)(star - gi.name), gi.name, (int)e, star + 1);
                st = memra_file_weight_create(rt, f, name, &dw[e]);
            }
        }
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "memra bench: %s: %s: %s\n", gi.name, memra_status_str(st), memra_last_error());
            rc = 1;
        }
        char proj[64];
        snprintf(proj, sizeof proj, "%s", tool_tclass_name(tool_tclass_of(gi.name)));
        double grp[2] = {0, 0};
        for (int sk = 0; sk < 2 && rc == 0; sk++)
            rc = moe_run(dev, "model", proj, xw, dw, E, topk, gi.out_f, gi.in_f, m, sk, reps, &rng, jf, first_json,
                         grp[0], &grp[sk]);
        memra_weight_destroy(xw);
        for (int32_t e = 0; dw && e < E; e++) memra_weight_destroy(dw[e]);
        free(dw);
    }
    memra_file_close(f);
    return rc;
}

int memra_tool_bench_moe(int argc, char **argv)
{
    int64_t ms[8], nm = 0, reps = 0, dev_sel = -1;
    const char *sheet = "all", *json = NULL, *fname = "q8_0", *model = NULL;
    int routing = 3, o, rc = 0, grid = 0; /* routing bits: 1 uniform, 2 skewed */
    memra_format fmt = MEMRA_FORMAT_Q8_0;
    uint64_t seed = tool_clock_seed();
    while ((o = tool_opt_next(&k_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        switch (o) {
        case TOOL_OPT_EXIT: return rc;
        case 'm':
            if (nm == 8) {
                fprintf(stderr, "memra bench moe: at most 8 --m\n");
                return 2;
            }
            rc = tool_opt_i64(&k_cmd, "--m", optarg, 1, 1 << 16, &ms[nm++]);
            break;
        case 'r': rc = tool_opt_i64(&k_cmd, "--reps", optarg, 1, 100000, &reps); break;
        case 'S':
            if (strcmp(optarg, "qwen3moe") && strcmp(optarg, "mixtral") && strcmp(optarg, "all")) {
                fprintf(stderr, "memra bench moe: --sheet wants qwen3moe, mixtral or all, not '%s'\n", optarg);
                rc = 2;
            }
            sheet = optarg;
            break;
        case 'R':
            routing = !strcmp(optarg, "uniform") ? 1 : !strcmp(optarg, "skewed") ? 2 : !strcmp(optarg, "both") ? 3 : 0;
            if (routing == 0) {
                fprintf(stderr, "memra bench moe: --routing wants uniform, skewed or both, not '%s'\n", optarg);
                rc = 2;
            }
            break;
        case 'f':
            fname = optarg;
            rc = parse_format(optarg, &fmt, &grid);
            break;
        case 'd': rc = tool_opt_device(&k_cmd, optarg, 0, &dev_sel); break;
        case 'j': json = optarg; break;
        case 's': rc = tool_opt_u64(&k_cmd, "--seed", optarg, &seed); break;
        case 'F': model = optarg; break;
        default: return 2;
        }
        if (rc != 0) return rc;
    }
    if (optind < argc) return tool_opt_unexpected(&k_cmd, argv[optind]);
    FILE *jf = NULL;
    if (json != NULL && tool_receipt_open(&k_cmd, json, &jf) != 0) return 2;
    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
        tool_receipt_close(&k_cmd, json, jf);
        return 1;
    }
    if (dev_sel == -2) dev_sel = memra_device_count(rt) - 1;
    memra_device *dev = memra_device_get(rt, dev_sel < 0 ? 0 : (int)dev_sel);
    if (dev == NULL) {
        fprintf(stderr, "memra bench moe: no device %lld\n", (long long)dev_sel);
        memra_close(rt);
        tool_receipt_close(&k_cmd, json, jf);
        return 2;
    }
    const memra_device_caps *caps = memra_device_caps_get(dev);
    const int gpu = caps->arch != MEMRA_ARCH_HOST, div = gpu ? 1 : 8;
    if (nm == 0) {
        if (gpu) ms[nm++] = 512, ms[nm++] = 4096;
        else ms[nm++] = 16;
    }
    if (reps == 0) reps = gpu ? 10 : 3;
    tool_rng rng;
    tool_rng_seed(&rng, seed);
    if (model)
        printf("memra bench moe: %s (%s), the expert groups of %s, reps %lld, seed %llu\n", caps->name, caps->profile,
               model, (long long)reps, (unsigned long long)seed);
    else
        printf("memra bench moe: %s (%s), format %s, reps %lld, seed %llu%s\n", caps->name, caps->profile, fname,
               (long long)reps, (unsigned long long)seed, gpu ? "" : ", host: dimensions / 8");
    printf("%-30s %6s %-7s %9s %5s %10s %8s %10s %8s %9s %14s %14s %9s %8s %8s  %s\n", "shape", "m", "routing",
           "experts", "most", "grouped ms", "spread", "loop ms", "spread", "loop/grp", "grouped rate", "loop rate",
           "dense ms", "spread", "of dense", "agree (lane)");
    if (jf) {
        /* version 3 adds timestamp, commit and host (as memra-bench's version 2 has them) */
        char ts[32], host[256];
        tool_utc_timestamp(ts, sizeof ts);
        tool_host_name(host, sizeof host);
        fprintf(jf, "{\"format\":\"memra-bench-moe\",\"version\":3,\"timestamp\":\"%s\",\"commit\":", ts);
        tool_json_str(jf, MEMRA_GIT_COMMIT);
        fprintf(jf, ",\"host\":");
        tool_json_str(jf, host);
        tool_json_settings(jf, rt); /* the knobs away from their defaults (since run v, any version) */
        fprintf(jf, ",\"memra\":\"%s\",\"device\":\"%s\",\"cc\":%d,"
                    "\"driver_version\":%d,\"weight_format\":\"%s\",\"reps\":%lld,\"seed\":%llu,\"div\":%d,\"rows\":[",
                memra_version(), caps->name, caps->cc, memra_driver_version(rt), model ? "model" : fname,
                (long long)reps, (unsigned long long)seed, model ? 1 : div);
    }
    int first = 1;
    double logsum = 0;
    for (int64_t mi = 0; model != NULL && mi < nm && rc == 0; mi++)
        rc = tool_bench_moe_file(rt, dev, model, ms[mi], reps, seed + (uint64_t)mi, jf, &first);
    for (size_t i = 0; model == NULL && i < sizeof k_shapes / sizeof k_shapes[0] && rc == 0; i++) {
        if (strcmp(sheet, "all") != 0 && strcmp(sheet, k_shapes[i].sheet) != 0) continue;
        for (int64_t mi = 0; mi < nm && rc == 0; mi++) {
            double grp[2] = {0, 0}; /* the uniform row's grouped median, for the skewed row's ratio */
            for (int sk = 0; sk < 2 && rc == 0; sk++)
                if (routing & (1 << sk))
                    rc = moe_row(dev, rt, &k_shapes[i], div, ms[mi], sk, fmt, grid, reps, &rng, jf, &first, grp[0],
                                 &grp[sk]);
        }
    }
    (void)logsum;
    if (jf) fprintf(jf, "],\"complete\":%s}\n", rc == 0 ? "true" : "false");
    memra_close(rt);
    const int wrc = tool_receipt_close(&k_cmd, json, jf);
    return rc ? rc : wrc;
}
