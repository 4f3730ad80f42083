/* memra tune: race every admissible module and variant per (device, op, shape
 * class) (memra_tune_race: each arm checked against the host first; rotated
 * repetitions, every sample one warm-up call and a timed batch; the gain over
 * the scores' pick with its bootstrap interval; the noise floor from the pick
 * raced against itself), write a win only where it is real and "no win"
 * elsewhere, then verify: the tuned and untuned routings timed through
 * memra_matmul, interleaved, each class's measured gain beside its claim. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/tool.h"
#include "tools/tool_fmt.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"
#include "memra/formats.h"

typedef struct shape {
    int32_t out_f, in_f; /* n, k */
} shape;

/* The seed sheets (as memra bench); on the host device every dimension is
 * divided by 16 (all stay multiples of 32), so a run takes seconds. */
static const shape k_27b[] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
static const shape k_1p7b[] = {{2048, 2048}, {2048, 1024}, {2048, 6144}, {6144, 2048}};

static const char k_help[] =
    "usage: memra tune [--device N|host] [--sheet 27b|1p7b] [--m M [M...]] [--op OP] [--reps R]\n"
    "                  [--min-reps N] [--budget-ms MS] [--target-pct P] [--json FILE|-]\n"
    "                  [--dry-run] [--no-verify] [--quiet]\n"
    "       memra tune --verify [--device N|host] [--op OP] [--reps R] [--json FILE|-]\n"
    "       memra tune --clear\n"
    "  Races, for each GEMM op and each shape of the sheet at each m, every module admitted on\n"
    "  the device and every variant it lists: each arm's first result is checked against the\n"
    "  host module within the op's band before any time counts. Then repetitions: each times\n"
    "  every ok arm and a twin of the scores' pick (the baseline), in an order rotated every\n"
    "  repetition; a sample is one untimed warm-up call of the arm (its operands warm in L2,\n"
    "  or the CPU caches, as for every arm) then a batch of calls back to back (the same batch\n"
    "  for all arms, sized to about 0.5 ms), timed together. Each arm's gain over the baseline\n"
    "  is the geometric mean of the paired per-repetition ratios with a 95% bootstrap interval\n"
    "  (seeded, deterministic); the noise floor is the widest miss of 1 by the baseline's race\n"
    "  against its twin, at least 3%. A class (op, n, k, m rounded up to a power of two) gets\n"
    "  an entry only when its best arm's interval lies above 1 and its gain reaches the floor,\n"
    "  and in a second race of the class the same arm clears both again (a win must reproduce);\n"
    "  otherwise the file says 'no win' for it and routing keeps the scores' pick.\n"
    "  Repetitions stop after --min-reps (default 5) once the intervals that decide are\n"
    "  narrower than --target-pct (default 1%), or when --budget-ms per class is spent, or\n"
    "  at --reps (defaults: on a GPU 100 and 1000 ms; on the host 30 and 2000 ms).\n"
    "  The file: MEMRA_TUNE_FILE, else <cache root>/tune/tuning.memra; memra_open reads it and\n"
    "  routing consults it before the scores (see 'memra info'). An op with one arm is skipped.\n"
    "  Then (unless --no-verify or --dry-run) every active entry of the device is verified: the\n"
    "  tuned and untuned routings (memra_tune_use) timed through memra_matmul by the same\n"
    "  protocol, interleaved; the measured gain and interval are printed beside the claimed\n"
    "  ones, 'agree' when the two intervals overlap. --verify does only that, on the file's\n"
    "  entries (at m = the class). --dry-run races and prints but writes nothing. --clear\n"
    "  removes every entry and the file. Times are median ms with their spread (half the\n"
    "  interquartile range); a progress line goes to stderr (--quiet: none). --json FILE\n"
    "  writes the receipt (format memra-tune, version 3: per-repetition times, intervals,\n"
    "  noise floor, claimed and verified gains). Sheets: 27b on a GPU, m=512; on the host\n"
    "  1p7b with every dimension / 16, m=16.\n";

static const struct option k_opts[] = {
    {"device", required_argument, NULL, 'd'}, {"sheet", required_argument, NULL, 'S'},
    {"m", required_argument, NULL, 'm'},      {"op", required_argument, NULL, 'o'},
    {"reps", required_argument, NULL, 'r'},   {"json", required_argument, NULL, 'j'},
    {"clear", no_argument, NULL, 'c'},        {"dry-run", no_argument, NULL, 'n'},
    {"verify", no_argument, NULL, 'V'},       {"no-verify", no_argument, NULL, 'N'},
    {"min-reps", required_argument, NULL, 'M'}, {"budget-ms", required_argument, NULL, 'B'},
    {"target-pct", required_argument, NULL, 'T'},
    {"help", no_argument, NULL, 'h'}, {"quiet", no_argument, NULL, TOOL_OPT_QUIET}, {0, 0, 0, 0}};
static const tool_cmd k_cmd = {"memra tune", k_help, k_opts};

static int is_gemm(memra_op op)
{
    return op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 || op == MEMRA_OP_gemm_fp8 ||
           op == MEMRA_OP_gemm_fp8_blk || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
}

/* The knobs of the protocol, shared by the race and the verify run. */
typedef struct knobs {
    int reps, min_reps;
    double budget_ms, target_pct;
} knobs;

static void json_times(FILE *jf, const char *name, const double *v, int n, size_t stride)
{
    fprintf(jf, ",\"%s\":[", name);
    for (int i = 0; i < n; i++) fprintf(jf, "%s%.3f", i ? "," : "", v[(size_t)i * stride]);
    fprintf(jf, "]");
}

/* One weight of the format memra_matmul routes to `op`, n x k, on dev (0 when
 * the op has no weight format here; *why says so). */
static memra_status verify_weight(memra_runtime *rt, memra_device *dev, memra_op op, int32_t n, int32_t k,
                                  memra_weight **out, const char **why)
{
    tool_rng rng;
    tool_rng_seed(&rng, 0x7475e3d1ull ^ ((uint64_t)n << 20) ^ (uint64_t)k);
    const size_t nk = (size_t)n * (size_t)k;
    memra_weight_desc d = {.struct_size = sizeof d, .out_f = n, .in_f = k, .name = "tune.verify"};
    void *data = NULL;
    float *grid = NULL;
    const char *budget = NULL;
    switch (op) {
    case MEMRA_OP_gemm_f16:
        data = tool_alloc(nk, 2);
        if (data) tool_fill_f16_w(&rng, data, nk);
        d.format = MEMRA_FORMAT_F16, d.size = nk * 2;
        break;
    case MEMRA_OP_gemm_bf16:
        data = tool_alloc(nk, 2);
        for (size_t i = 0; data && i < nk; i++)
            ((uint16_t *)data)[i] = memra_bf16_from_f32(tool_rng_signed(&rng, -0.5f, 0.5f));
        d.format = MEMRA_FORMAT_BF16, d.size = nk * 2;
        break;
    case MEMRA_OP_gemm_fp8:
    case MEMRA_OP_gemm_fp8_blk: {
        data = tool_alloc(nk, 1);
        if (data) tool_fill_e4m3_w(&rng, data, nk);
        d.format = MEMRA_FORMAT_E4M3, d.size = nk;
        if (op == MEMRA_OP_gemm_fp8) d.scale = 0.01f;
        else {
            const size_t gc = (size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k));
            grid = tool_alloc(gc, sizeof(float));
            if (grid) tool_fill_grid(&rng, grid, gc);
            d.grid = grid, d.grid_count = gc;
        }
        break;
    }
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r: {
        const size_t qb = (size_t)memra_format_row_bytes(MEMRA_FORMAT_Q8_0, k) * (size_t)n;
        data = tool_alloc(qb, 1);
        if (data) tool_fill_q8_0_w(&rng, data, n, k);
        d.format = MEMRA_FORMAT_Q8_0, d.size = qb;
        budget = "0"; /* no f16 copy and no W16 operand: the integer lane */
        break;
    }
    default: *why = "no weight format routes to this op"; return MEMRA_STATUS_NOT_SUPPORTED;
    }
    if (data == NULL || (op == MEMRA_OP_gemm_fp8_blk && grid == NULL)) {
        free(data);
        free(grid);
        return MEMRA_STATUS_OUT_OF_MEMORY;
    }
    d.data = data;
    const uint64_t saved = memra_device_f16_budget_get(dev);
    if (budget) {
        memra_device_f16_budget_set(dev, 0);
        memra_device_w16_set(dev, 0);
    }
    memra_weight *w = NULL;
    memra_status st = memra_weight_create(rt, &d, &w);
    if (st == MEMRA_STATUS_OK) st = memra_weight_prepare(w, dev);
    if (budget) {
        memra_device_f16_budget_set(dev, saved);
        memra_device_w16_set(dev, -1);
    }
    free(data);
    free(grid);
    if (st != MEMRA_STATUS_OK) {
        memra_weight_destroy(w);
        *why = memra_last_error();
        return st;
    }
    *out = w;
    return MEMRA_STATUS_OK;
}

static uint64_t op_hits(memra_device *dev, memra_op op)
{
    const char *lanes[16];
    const int nl = memra_routing_get(dev, op, lanes, 16);
    uint64_t h = 0;
    for (int l = 0; l < nl && l < 16; l++) h += memra_ledger_hits(dev, op, lanes[l]);
    return h;
}

/* Whether a memra_matmul of op's weight format runs op on dev: a small weight, one call,
 * the ledger. An op no memra_matmul reaches here (gemm_q8_0 where the floor's records
 * are served: a Q8_0 weight then runs gemm_q8_0r) would only get entries routing never
 * consults. Returns 1 reached, 0 not (*ran names the op that ran, or why), -1 unknown. */
static int op_reached(memra_runtime *rt, memra_device *dev, memra_op op, const char **ran)
{
    enum { PN = 512, PK = 512, PM = 64 };
    memra_weight *w = NULL;
    memra_buffer *xb = NULL, *yb = NULL;
    *ran = NULL;
    if (verify_weight(rt, dev, op, PN, PK, &w, ran) != MEMRA_STATUS_OK) return -1;
    float *x = tool_alloc((size_t)PM * PK, sizeof(float));
    memra_status st = x ? MEMRA_STATUS_OK : MEMRA_STATUS_OUT_OF_MEMORY;
    if (st == MEMRA_STATUS_OK) {
        tool_rng rng;
        tool_rng_seed(&rng, 0x9e37ull);
        tool_fill_x(&rng, x, (size_t)PM * PK);
        st = tool_upload(dev, x, (size_t)PM * PK * sizeof(float), &xb);
    }
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, NULL, (size_t)PM * PN * sizeof(float), &yb);
    uint64_t before[MEMRA_OP_COUNT_] = {0};
    for (int o = 0; o < MEMRA_OP_COUNT_; o++) before[o] = op_hits(dev, (memra_op)o);
    if (st == MEMRA_STATUS_OK) st = memra_matmul(dev, w, memra_buffer_ptr(xb), PM, memra_buffer_ptr(yb), NULL);
    if (st == MEMRA_STATUS_OK) st = memra_device_synchronize(dev);
    int verdict = -1;
    if (st == MEMRA_STATUS_OK) {
        verdict = op_hits(dev, op) > before[op];
        for (int o = 0; o < MEMRA_OP_COUNT_ && !verdict; o++)
            if (op_hits(dev, (memra_op)o) > before[o]) *ran = memra_op_name((memra_op)o);
        if (!verdict && *ran == NULL) *ran = "no op's ledger moved";
    } else
        *ran = memra_last_error();
    memra_buffer_destroy(xb);
    memra_buffer_destroy(yb);
    memra_weight_destroy(w);
    free(x);
    return verdict;
}

typedef struct mm_side {
    memra_device *dev;
    memra_weight *w;
    memra_dptr x, y;
    int32_t m;
    memra_timer *timer;
} mm_side;

/* One sample through memra_matmul under the routing `tuned`: a warm-up call, then `batch` timed together. */
static memra_status mm_sample(memra_runtime *rt, const mm_side *c, int tuned, int batch, double *us)
{
    memra_status st = memra_tune_use(rt, tuned);
    if (st == MEMRA_STATUS_OK) st = memra_matmul(c->dev, c->w, c->x, c->m, c->y, NULL);
    if (st == MEMRA_STATUS_OK) st = memra_timer_start(c->timer, NULL);
    for (int b = 0; b < batch && st == MEMRA_STATUS_OK; b++) st = memra_matmul(c->dev, c->w, c->x, c->m, c->y, NULL);
    double ms = 0.0;
    if (st == MEMRA_STATUS_OK) st = memra_timer_stop(c->timer, NULL);
    if (st == MEMRA_STATUS_OK) st = memra_timer_elapsed_ms(c->timer, &ms);
    *us = ms * 1e3 / (double)batch;
    return st;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Verify one active entry: untuned / tuned through memra_matmul, interleaved.
 * Returns 1 agree, 0 disagree, -1 not verified (printed with the reason). */
static int verify_entry(memra_runtime *rt, memra_device *dev, const memra_tune_entry *e, int32_t m, const knobs *kn,
                        FILE *jf, int *jfirst)
{
    const char *why = NULL;
    memra_weight *w = NULL;
    memra_buffer *xb = NULL, *yb = NULL;
    mm_side c = {.dev = dev, .m = m};
    double *ut = calloc((size_t)kn->reps, sizeof *ut), *tt = calloc((size_t)kn->reps, sizeof *tt);
    int verdict = -1, r = 0, batch = 1;
    double p = 0, lo = 0, hi = 0;
    char name[96];
    snprintf(name, sizeof name, "%s%s%s", e->module, e->variant[0] ? "." : "", e->variant);
    printf("  %-12s n=%-6d k=%-6d m=%-5d (class %d) -> %-20s claimed %.3fx [%.3f, %.3f]", memra_op_name(e->op), e->n,
           e->k, m, e->m_class, name, e->gain, e->gain_lo, e->gain_hi);
    memra_status st = ut && tt ? verify_weight(rt, dev, e->op, e->n, e->k, &w, &why) : MEMRA_STATUS_OUT_OF_MEMORY;
    float *x = st == MEMRA_STATUS_OK ? tool_alloc((size_t)m * (size_t)e->k, sizeof(float)) : NULL;
    if (st == MEMRA_STATUS_OK && x == NULL) st = MEMRA_STATUS_OUT_OF_MEMORY;
    if (st == MEMRA_STATUS_OK) {
        tool_rng rng;
        tool_rng_seed(&rng, 0x5eedull);
        tool_fill_x(&rng, x, (size_t)m * (size_t)e->k);
        st = tool_upload(dev, x, (size_t)m * (size_t)e->k * sizeof(float), &xb);
    }
    if (st == MEMRA_STATUS_OK) st = tool_upload(dev, NULL, (size_t)m * (size_t)e->n * sizeof(float), &yb);
    if (st == MEMRA_STATUS_OK) st = memra_timer_create(dev, &c.timer);
    if (st == MEMRA_STATUS_OK) {
        c.w = w, c.x = memra_buffer_ptr(xb), c.y = memra_buffer_ptr(yb);
        /* the op a memra_matmul of this weight runs must be the entry's */
        const uint64_t h0 = op_hits(dev, e->op);
        double u1 = 0, t1 = 0;
        st = mm_sample(rt, &c, 0, 1, &u1);
        if (st == MEMRA_STATUS_OK) st = mm_sample(rt, &c, 1, 1, &t1);
        if (st == MEMRA_STATUS_OK && op_hits(dev, e->op) - h0 != 4) {
            why = "memra_matmul of this weight does not run the entry's op here";
            st = MEMRA_STATUS_NOT_SUPPORTED;
        }
        const double tmin = u1 < t1 ? u1 : t1;
        batch = tmin > 0.0 ? (int)ceil(500.0 / tmin) : 1;
        batch = batch < 1 ? 1 : batch > 16 ? 16 : batch;
    }
    const double t0 = now_ms();
    for (r = 0; r < kn->reps && st == MEMRA_STATUS_OK; r++) {
        for (int j = 0; j < 2 && st == MEMRA_STATUS_OK; j++) {
            const int tuned = (j + r) % 2;
            st = mm_sample(rt, &c, tuned, batch, tuned ? &tt[r] : &ut[r]);
        }
        if (st != MEMRA_STATUS_OK || r + 1 < kn->min_reps) continue;
        if (kn->budget_ms > 0.0 && now_ms() - t0 >= kn->budget_ms) {
            r++;
            break;
        }
        if (memra_tune_gain(ut, tt, r + 1, 500, &p, &lo, &hi) &&
            (hi / p - 1.0 < kn->target_pct * 1e-2 && 1.0 - lo / p < kn->target_pct * 1e-2)) {
            r++;
            break;
        }
    }
    memra_tune_use(rt, 1);
    if (st == MEMRA_STATUS_OK && memra_tune_gain(ut, tt, r, 0, &p, &lo, &hi)) {
        verdict = lo <= e->gain_hi && e->gain_lo <= hi;
        printf(", measured %.3fx [%.3f, %.3f] (%d reps x %d): %s\n", p, lo, hi, r, batch,
               verdict ? "agree" : "DISAGREE");
    } else {
        if (why == NULL) why = st != MEMRA_STATUS_OK ? memra_last_error() : "too few repetitions";
        printf(": not verified: %s\n", why);
    }
    if (jf) {
        fprintf(jf, "%s{\"op\":\"%s\",\"n\":%d,\"k\":%d,\"m\":%d,\"m_class\":%d,\"module\":", *jfirst ? "" : ",",
                memra_op_name(e->op), e->n, e->k, m, e->m_class);
        *jfirst = 0;
        tool_json_str(jf, e->module);
        fprintf(jf, ",\"variant\":");
        tool_json_str(jf, e->variant);
        fprintf(jf, ",\"claimed\":{\"gain\":%.4f,\"lo\":%.4f,\"hi\":%.4f,\"noise_floor\":%.4f,\"reps\":%d}", e->gain,
                e->gain_lo, e->gain_hi, e->noise_floor, e->reps);
        if (verdict >= 0) {
            fprintf(jf, ",\"verified\":{\"gain\":%.4f,\"lo\":%.4f,\"hi\":%.4f,\"reps\":%d,\"batch\":%d}", p, lo, hi, r,
                    batch);
            json_times(jf, "untuned_us", ut, r, 1);
            json_times(jf, "tuned_us", tt, r, 1);
            fprintf(jf, ",\"agree\":%s}", verdict ? "true" : "false");
        } else {
            fprintf(jf, ",\"verified\":null,\"agree\":null,\"why\":");
            tool_json_str(jf, why);
            fprintf(jf, "}");
        }
    }
    memra_timer_destroy(c.timer);
    memra_buffer_destroy(xb);
    memra_buffer_destroy(yb);
    memra_weight_destroy(w);
    free(x);
    free(ut);
    free(tt);
    return verdict;
}

/* A class raced in this run, for the verify run's m. */
/* A race's result block with the protocol's knobs in it; rep_us (optional) receives the per-repetition
 * times (kn->reps rows) */
static void race_setup(memra_tune_result *r, const knobs *kn, double *rep_us)
{
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->budget_ms = kn->budget_ms;
    r->target_pct = kn->target_pct;
    r->min_reps = kn->min_reps;
    r->rep_us = rep_us;
    r->rep_cap = rep_us != NULL ? kn->reps : 0;
}

typedef struct raced {
    memra_op op;
    int32_t n, k, m;
} raced;

/* Verify every active entry of dev (op filter): returns the disagreements; *unverified counts the rest. */
static int verify_all(memra_runtime *rt, memra_device *dev, memra_op only, const knobs *kn, const raced *rc, int nrc,
                      FILE *jf, int *agreed, int *unverified)
{
    int bad = 0, jfirst = 1, any = 0;
    printf("\nverify: the tuned and untuned routings through memra_matmul, interleaved (gain = untuned / tuned;\n"
           "        'agree' when the measured interval overlaps the claimed one)\n");
    if (jf) fprintf(jf, ",\"verify\":[");
    for (int i = 0; i < memra_tune_count(rt); i++) {
        memra_tune_entry e = {.struct_size = sizeof e};
        if (memra_tune_entry_get(rt, i, &e) != MEMRA_STATUS_OK || e.device < 0 ||
            memra_device_get(rt, e.device) != dev || !e.win || strcmp(e.state, "active") != 0)
            continue;
        if (only != MEMRA_OP_COUNT_ && e.op != only) continue;
        int32_t m = e.m_class;
        for (int j = 0; j < nrc; j++)
            if (rc[j].op == e.op && rc[j].n == e.n && rc[j].k == e.k && memra_tune_m_class(rc[j].m) == e.m_class)
                m = rc[j].m;
        any = 1;
        /* an entry is for its op: the floor's GEMMs are verified with memra_matmul's route to dequant_kr_f16 +
         * gemm_f16 off (where MEMRA_FLOOR_F16_M turns it on, from its m it would serve the call instead) */
        memra_device_floor_f16_m_set(dev, 0);
        const int v = verify_entry(rt, dev, &e, m, kn, jf, &jfirst);
        memra_device_floor_f16_m_set(dev, -1);
        if (v == 1) (*agreed)++;
        else if (v == 0) bad++;
        else (*unverified)++;
    }
    if (!any) printf("  no active entry on this device: nothing to verify\n");
    if (jf) fprintf(jf, "]");
    printf("verify: %d agree, %d disagree, %d not verified\n", *agreed, bad, *unverified);
    return bad;
}

static int parse_pct(const char *v, double *out)
{
    char *end = NULL;
    const double d = strtod(v, &end);
    if (end == v || *end != '\0' || !(d > 0.0 && d <= 50.0)) {
        fprintf(stderr, "memra tune: --target-pct wants a number in (0, 50], not '%s'\n", v);
        return 2;
    }
    *out = d;
    return 0;
}

int memra_tool_tune(int argc, char **argv)
{
    int64_t dev_sel = -3, reps = 0, ms[16], min_reps = 0, budget = -1;
    double target = 0.0;
    int n_m = 0, clear = 0, dry = 0, verify_only = 0, no_verify = 0, o, rc = 0;
    const char *sheet = NULL, *json = NULL;
    memra_op only = MEMRA_OP_COUNT_;
    while ((o = tool_opt_next(&k_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        if (o == TOOL_OPT_EXIT) return rc;
        switch (o) {
        case 'd': rc = tool_opt_device(&k_cmd, optarg, 0, &dev_sel); break;
        case 'S':
            if (strcmp(optarg, "27b") != 0 && strcmp(optarg, "1p7b") != 0) {
                fprintf(stderr, "memra tune: --sheet wants 27b or 1p7b, not '%s'\n", optarg);
                return 2;
            }
            sheet = optarg;
            break;
        case 'm':
            if (n_m == 16) {
                fprintf(stderr, "memra tune: at most 16 values of --m\n");
                return 2;
            }
            rc = tool_opt_i64(&k_cmd, "--m", optarg, 1, 1 << 20, &ms[n_m]);
            if (rc == 0) n_m++;
            break;
        case 'o':
            only = memra_op_from_name(optarg);
            if (only == MEMRA_OP_COUNT_ || !is_gemm(only)) {
                fprintf(stderr, "memra tune: --op wants a GEMM op (gemm_f16, gemm_bf16, gemm_fp8, gemm_fp8_blk, "
                                "gemm_q8_0, gemm_q8_0r), not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'r': rc = tool_opt_i64(&k_cmd, "--reps", optarg, 2, 10000, &reps); break;
        case 'M': rc = tool_opt_i64(&k_cmd, "--min-reps", optarg, 3, 10000, &min_reps); break;
        case 'B': rc = tool_opt_i64(&k_cmd, "--budget-ms", optarg, 0, 3600000, &budget); break;
        case 'T': rc = parse_pct(optarg, &target); break;
        case 'j': json = optarg; break;
        case 'c': clear = 1; break;
        case 'n': dry = 1; break;
        case 'V': verify_only = 1; break;
        case 'N': no_verify = 1; break;
        default: return 2;
        }
        if (rc != 0) return rc;
    }
    /* `--m 512 4096`: integers after the options are more m values. */
    for (int i = optind; i < argc; i++) {
        if (n_m == 16) return tool_opt_unexpected(&k_cmd, argv[i]);
        char *end = NULL;
        long v = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0' || v < 1 || v > (1 << 20)) return tool_opt_unexpected(&k_cmd, argv[i]);
        ms[n_m++] = v;
    }
    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) return 1;
    if (clear) {
        memra_status st = memra_tune_clear(rt);
        if (st != MEMRA_STATUS_OK) fprintf(stderr, "memra tune: --clear: %s\n", memra_last_error());
        else printf("memra tune: cleared %s\n", memra_tune_file(rt));
        memra_close(rt);
        return st == MEMRA_STATUS_OK ? 0 : 1;
    }
    memra_device *dev = NULL;
    if (dev_sel == -2) dev = memra_device_host(rt);
    else if (dev_sel >= 0) {
        dev = memra_device_get(rt, (int)dev_sel);
        if (dev == NULL || dev == memra_device_host(rt)) {
            fprintf(stderr, "memra tune: no CUDA device %lld (see 'memra info')\n", (long long)dev_sel);
            memra_close(rt);
            return 2;
        }
    } else {
        dev = memra_device_count(rt) > 1 ? memra_device_get(rt, 0) : memra_device_host(rt);
    }
    const memra_device_caps *caps = memra_device_caps_get(dev);
    const int gpu = caps->arch != MEMRA_ARCH_HOST;
    if (sheet == NULL) sheet = gpu ? "27b" : "1p7b";
    const shape *sh = strcmp(sheet, "27b") == 0 ? k_27b : k_1p7b;
    const int nsh = strcmp(sheet, "27b") == 0 ? 6 : 4, div = gpu ? 1 : 16;
    if (n_m == 0) ms[n_m++] = gpu ? 512 : 16;
    knobs kn = {.reps = reps ? (int)reps : gpu ? 100 : 30, .min_reps = min_reps ? (int)min_reps : 5,
                .budget_ms = budget >= 0 ? (double)budget : gpu ? 1000.0 : 2000.0,
                .target_pct = target > 0.0 ? target : 1.0};
    if (kn.min_reps > kn.reps) kn.min_reps = kn.reps;
    FILE *jf = NULL;
    if (json != NULL && tool_receipt_open(&k_cmd, json, &jf) != 0) {
        memra_close(rt);
        return 2;
    }
    const double t_start = now_ms();
    printf("memra tune: %s (%s), sheet %s%s; repetitions %d to %d, stopping when the deciding intervals are within "
           "+-%.1f%% or after %.0f ms per class\n",
           caps->name, caps->profile, sheet, div > 1 ? " (every dimension / 16 on the host)" : "", kn.min_reps,
           kn.reps, kn.target_pct, kn.budget_ms);
    if (jf) {
        /* version 3 (issue 29): per-repetition times, gains with intervals, the noise floor, the verify run */
        fprintf(jf, "{\"format\":\"memra-tune\",\"version\":3,\"memra_tune\":1,\"memra\":");
        tool_json_str(jf, memra_version());
        fprintf(jf, ",\"device\":");
        tool_json_str(jf, caps->name);
        fprintf(jf, ",\"profile\":");
        tool_json_str(jf, caps->profile);
        fprintf(jf, ",\"sheet\":\"%s\",\"divisor\":%d,\"reps\":%d,\"min_reps\":%d,\"budget_ms\":%.0f,"
                    "\"target_pct\":%.3f,\"verify_only\":%s,\"results\":[",
                sheet, div, kn.reps, kn.min_reps, kn.budget_ms, kn.target_pct, verify_only ? "true" : "false");
    }
    int failures = 0, recorded = 0, wins = 0, first = 1, nrc = 0;
    raced rcd[256];
    memra_tune_result *res = malloc(sizeof *res), *res2 = malloc(sizeof *res2); /* res2: a win's second race */
    double *rep_us = malloc((size_t)kn.reps * (MEMRA_TUNE_MAX_ARMS + 1) * sizeof(double));
    if (res == NULL || res2 == NULL || rep_us == NULL) {
        free(res), free(res2), free(rep_us);
        memra_close(rt);
        return 1;
    }
    size_t nops = 0;
    for (int op = 0; op < MEMRA_OP_COUNT_ && !verify_only; op++)
        if (is_gemm((memra_op)op) && (only == MEMRA_OP_COUNT_ || op == (int)only) &&
            memra_routing_get(dev, (memra_op)op, NULL, 0) > 0)
            nops++;
    tool_progress pg;
    tool_progress_begin(&pg, "memra tune", nops * (size_t)nsh * (size_t)n_m);
    for (int op = 0; op < MEMRA_OP_COUNT_ && !verify_only; op++) {
        if (!is_gemm((memra_op)op) || (only != MEMRA_OP_COUNT_ && op != (int)only)) continue;
        if (memra_routing_get(dev, (memra_op)op, NULL, 0) == 0) continue;
        {
            /* An op with one arm (one module, no variants) has nothing to race: skipped before
             * any input is made (on a GPU the 27b sheet's host reference is the costly part). */
            const char *lanes[16];
            const int nl = memra_routing_get(dev, (memra_op)op, lanes, 16);
            int arms = 0;
            for (int l = 0; l < nl && l < 16; l++) {
                const int nv = memra_module_variants(dev, lanes[l], (memra_op)op, NULL, NULL, 0);
                arms += 1 + (nv > 0 ? nv : 0);
            }
            if (arms < 2) {
                for (int i = 0; i < nsh * n_m; i++) pg.done++; /* its steps are not run */
                printf("\n%s: one arm (%s, no variants): nothing to race\n", memra_op_name((memra_op)op),
                       nl > 0 ? lanes[0] : "?");
                continue;
            }
            const char *ran = NULL;
            const int reached = op_reached(rt, dev, (memra_op)op, &ran);
            if (reached == 0 && only == MEMRA_OP_COUNT_) {
                for (int i = 0; i < nsh * n_m; i++) pg.done++;
                printf("\n%s: not raced: memra_matmul of its weight format runs %s on this device, so routing "
                       "would never consult its entries (--op %s races it anyway)\n",
                       memra_op_name((memra_op)op), ran, memra_op_name((memra_op)op));
                continue;
            }
            if (reached == 0)
                printf("\n%s: raced as asked, but memra_matmul of its weight format runs %s on this device: its "
                       "entries serve memra_module_call callers only and cannot be verified\n",
                       memra_op_name((memra_op)op), ran);
            else if (reached < 0)
                printf("\n%s: could not tell whether memra_matmul reaches it (%s): raced\n",
                       memra_op_name((memra_op)op), ran ? ran : "?");
        }
        for (int si = 0; si < nsh; si++)
            for (int mi = 0; mi < n_m; mi++) {
                const int32_t n = sh[si].out_f / div, k = sh[si].in_f / div, m = (int32_t)ms[mi];
                race_setup(res, &kn, rep_us);
                char what[96];
                snprintf(what, sizeof what, "%s m=%d n=%d k=%d", memra_op_name((memra_op)op), m, n, k);
                tool_progress_step(&pg, what);
                memra_status st = memra_tune_race(dev, (memra_op)op, m, n, k, kn.reps, res);
                tool_progress_clear(&pg);
                if (st != MEMRA_STATUS_OK) {
                    fprintf(stderr, "memra tune: %s m=%d n=%d k=%d: %s: %s\n", memra_op_name((memra_op)op), m, n, k,
                            memra_status_str(st), memra_last_error());
                    failures++;
                    continue;
                }
                if (nrc < 256) rcd[nrc++] = (raced){(memra_op)op, n, k, m};
                printf("\n%s m=%d n=%d k=%d (m class %d): %d arm%s (median ms, spread: half the interquartile range;"
                       " gain over the baseline [95%%])\n",
                       memra_op_name((memra_op)op), m, n, k, memra_tune_m_class(m), res->n_arms,
                       res->n_arms == 1 ? "" : "s");
                for (int a = 0; a < res->n_arms; a++) {
                    const memra_tune_arm *ar = &res->arms[a];
                    char name[96];
                    snprintf(name, sizeof name, "%s%s%s", ar->module, ar->variant[0] ? "." : "", ar->variant);
                    char spread[16] = "", rate[32] = "", gain[48] = "";
                    if (ar->median_us > 0.0) {
                        snprintf(spread, sizeof spread, "+-%.1f%%", 50.0 * (res->q3_us[a] - res->q1_us[a]) / ar->median_us);
                        tool_rate(2.0 * (double)m * (double)n * (double)k / (ar->median_us * 1e-6), "FLOP/s", rate,
                                  sizeof rate);
                    }
                    if (a == res->baseline) snprintf(gain, sizeof gain, "baseline");
                    else if (res->gain[a] > 0.0)
                        snprintf(gain, sizeof gain, "%.3fx [%.3f, %.3f]", res->gain[a], res->gain_lo[a], res->gain_hi[a]);
                    printf("  %c %-24s %10.4f ms %8s %15s  %-26s hits %-6llu %s\n", a == res->chosen ? '*' : ' ', name,
                           ar->median_us * 1e-3, spread, rate, gain, (unsigned long long)ar->hits, ar->verdict);
                }
                if (res->baseline >= 0 && res->self_gain > 0.0)
                    printf("  self-race (baseline against its twin): %.3fx [%.3f, %.3f]: noise floor %.1f%%\n",
                           res->self_gain, res->self_lo, res->self_hi, 100.0 * res->noise_floor);
                printf("  %d repetition%s x batch %d (stopped: %s); setup %.2f s, timing %.2f s\n", res->reps_done,
                       res->reps_done == 1 ? "" : "s", res->batch, res->stop, res->setup_ms * 1e-3,
                       res->race_ms * 1e-3);
                if (jf) {
                    fprintf(jf, "%s{\"op\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"m_class\":%d,\"winner\":%d,\"baseline\":%d,"
                                "\"chosen\":%d,\"reps_done\":%d,\"batch\":%d,\"stop\":",
                            first ? "" : ",", memra_op_name((memra_op)op), m, n, k, memra_tune_m_class(m),
                            res->winner, res->baseline, res->chosen, res->reps_done, res->batch);
                    tool_json_str(jf, res->stop);
                    fprintf(jf, ",\"setup_ms\":%.1f,\"race_ms\":%.1f,\"noise_floor\":%.4f,"
                                "\"self\":{\"gain\":%.4f,\"lo\":%.4f,\"hi\":%.4f}",
                            res->setup_ms, res->race_ms, res->noise_floor, res->self_gain, res->self_lo, res->self_hi);
                    if (res->baseline >= 0)
                        json_times(jf, "twin_us", rep_us + MEMRA_TUNE_MAX_ARMS, res->reps_done, MEMRA_TUNE_MAX_ARMS + 1);
                    fprintf(jf, ",\"arms\":[");
                    first = 0;
                    for (int a = 0; a < res->n_arms; a++) {
                        const memra_tune_arm *ar = &res->arms[a];
                        fprintf(jf, "%s{\"module\":\"%s\",\"variant\":\"%s\",\"median_us\":%.3f,\"median_ms\":%.6g,"
                                    "\"q1_ms\":%.6g,\"q3_ms\":%.6g,\"gain\":%.4f,\"gain_lo\":%.4f,\"gain_hi\":%.4f,"
                                    "\"hits\":%llu,\"ok\":%s",
                                a ? "," : "", ar->module, ar->variant, ar->median_us, ar->median_us * 1e-3,
                                res->q1_us[a] * 1e-3, res->q3_us[a] * 1e-3, res->gain[a], res->gain_lo[a],
                                res->gain_hi[a], (unsigned long long)ar->hits, ar->ok ? "true" : "false");
                        if (ar->ok) json_times(jf, "times_us", rep_us + a, res->reps_done, MEMRA_TUNE_MAX_ARMS + 1);
                        fprintf(jf, ",\"verdict\":");
                        tool_json_str(jf, ar->verdict);
                        fprintf(jf, "}");
                    }
                    fprintf(jf, "]");
                }
                int record = 0;
                memra_tune_claim cl = {.struct_size = sizeof cl, .noise_floor = res->noise_floor,
                                       .reps = res->reps_done};
                if (res->n_arms < 2) printf("  one arm: nothing to race, nothing recorded\n");
                else if (res->winner < 0) {
                    printf("  no arm passed: nothing recorded\n");
                    failures++;
                } else if (res->baseline < 0 || res->reps_done < 2) {
                    printf("  no baseline to compare with (the scores' pick did not pass): nothing recorded\n");
                } else {
                    const int pick = res->chosen >= 0 ? res->chosen : res->winner;
                    const memra_tune_arm *w = &res->arms[pick];
                    cl.win = res->chosen >= 0;
                    cl.module = w->module, cl.variant = w->variant;
                    cl.median_us = w->median_us, cl.baseline_us = res->arms[res->baseline].median_us;
                    cl.gain = res->gain[pick], cl.gain_lo = res->gain_lo[pick], cl.gain_hi = res->gain_hi[pick];
                    /* A win is recorded only if it reproduces: in a second race of the class (its own
                     * repetitions, arms and twin) the same arm's interval must again lie above 1 and its gain
                     * reach that race's floor. Otherwise the class is a no win with the second race's numbers,
                     * so a chance interval above 1 (a busy machine, one lucky race) never becomes routing. */
                    int confirmed = 1;
                    if (cl.win) {
                        race_setup(res2, &kn, NULL);
                        const memra_status st2 = memra_tune_race(dev, (memra_op)op, m, n, k, kn.reps, res2);
                        /* the same arm in the second race (arms of equal speed may swap places: what must
                         * reproduce is this arm's win over the scores' pick, not its rank) */
                        int p2 = -1;
                        for (int a = 0; st2 == MEMRA_STATUS_OK && res2->baseline >= 0 && a < res2->n_arms; a++)
                            if (a != res2->baseline && res2->arms[a].ok && strcmp(res2->arms[a].module, w->module) == 0 &&
                                strcmp(res2->arms[a].variant, w->variant) == 0)
                                p2 = a;
                        confirmed = p2 >= 0 && res2->gain_lo[p2] > 1.0 && res2->gain[p2] >= 1.0 + res2->noise_floor;
                        if (confirmed)
                            printf("  the second race agrees: %s%s%s %.3fx [%.3f, %.3f] (floor %.1f%%)\n", w->module,
                                   w->variant[0] ? "." : "", w->variant, res2->gain[p2], res2->gain_lo[p2],
                                   res2->gain_hi[p2], 100.0 * res2->noise_floor);
                        else {
                            const int b2 = st2 == MEMRA_STATUS_OK && res2->baseline >= 0 && res2->winner >= 0
                                               ? res2->winner
                                               : -1;
                            if (p2 >= 0)
                                printf("  the second race does not reproduce it: %.3fx [%.3f, %.3f] (floor %.1f%%)\n",
                                       res2->gain[p2], res2->gain_lo[p2], res2->gain_hi[p2], 100.0 * res2->noise_floor);
                            else
                                printf("  the second race does not reproduce it (%s)\n",
                                       st2 != MEMRA_STATUS_OK ? memra_status_str(st2) : "the arm or the baseline did not pass");
                            cl.win = 0;
                            if (b2 >= 0 && b2 != res2->baseline) { /* its best arm's numbers for the no-win record */
                                w = &res2->arms[b2];
                                cl.module = w->module, cl.variant = w->variant, cl.median_us = w->median_us;
                                cl.baseline_us = res2->arms[res2->baseline].median_us;
                                cl.gain = res2->gain[b2], cl.gain_lo = res2->gain_lo[b2], cl.gain_hi = res2->gain_hi[b2];
                                cl.noise_floor = res2->noise_floor, cl.reps = res2->reps_done;
                            } else { /* the scores' pick was the fastest: a gain of 1 */
                                cl.gain = cl.gain_lo = cl.gain_hi = 1.0;
                            }
                        }
                    }
                    if (cl.win)
                        printf("  win %s%s%s: %.3fx [%.3f, %.3f] the scores' pick (floor %.1f%%): an entry\n", w->module,
                               w->variant[0] ? "." : "", w->variant, cl.gain, cl.gain_lo, cl.gain_hi,
                               100.0 * res->noise_floor);
                    else
                        printf("  no win: the best, %s%s%s, %.3fx [%.3f, %.3f], does not clear 1 and the floor %.1f%%: "
                               "routing keeps the scores' pick\n",
                               w->module, w->variant[0] ? "." : "", w->variant, cl.gain, cl.gain_lo, cl.gain_hi,
                               100.0 * res->noise_floor);
                    record = 1;
                }
                if (jf) {
                    fprintf(jf, ",\"claim\":");
                    if (record)
                        fprintf(jf, "{\"win\":%s,\"module\":\"%s\",\"variant\":\"%s\",\"gain\":%.4f,\"lo\":%.4f,"
                                    "\"hi\":%.4f,\"noise_floor\":%.4f}}",
                                cl.win ? "true" : "false", cl.module, cl.variant, cl.gain, cl.gain_lo, cl.gain_hi,
                                cl.noise_floor);
                    else fprintf(jf, "null}");
                }
                if (record && !dry) {
                    st = memra_tune_record_claim(dev, (memra_op)op, m, n, k, &cl);
                    if (st != MEMRA_STATUS_OK) {
                        fprintf(stderr, "memra tune: recording: %s\n", memra_last_error());
                        failures++;
                    } else recorded++, wins += cl.win;
                }
            }
    }
    tool_progress_end(&pg);
    free(res);
    free(res2);
    free(rep_us);
    if (jf) fprintf(jf, "]");
    if (!verify_only) {
        if (!dry && recorded > 0) {
            if (memra_tune_save(rt) != MEMRA_STATUS_OK) {
                fprintf(stderr, "memra tune: %s\n", memra_last_error());
                failures++;
            } else {
                printf("\nmemra tune: %d class%s recorded to %s: %d entr%s (a real win), %d no win\n", recorded,
                       recorded == 1 ? "" : "es", memra_tune_file(rt), wins, wins == 1 ? "y" : "ies", recorded - wins);
            }
        } else if (!dry) {
            printf("\nmemra tune: nothing recorded\n");
        }
        printf("memra tune: raced in %.1f s\n", (now_ms() - t_start) * 1e-3);
    }
    int agreed = 0, unverified = 0, disagreed = 0;
    if (verify_only || (!dry && !no_verify)) {
        disagreed = verify_all(rt, dev, only, &kn, rcd, nrc, jf, &agreed, &unverified);
        printf("memra tune: %.1f s in all\n", (now_ms() - t_start) * 1e-3);
    }
    if (jf) fprintf(jf, ",\"agreed\":%d,\"disagreed\":%d,\"unverified\":%d,\"seconds\":%.2f}\n", agreed, disagreed,
                    unverified, (now_ms() - t_start) * 1e-3);
    if (tool_receipt_close(&k_cmd, json, jf) != 0) failures++;
    memra_close(rt);
    return failures ? 1 : 0;
}
