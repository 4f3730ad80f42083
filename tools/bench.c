/* memra bench: the seed shape sheets through the lanes of the matmul policy.
 *
 * Arms (each a real weight through memra_matmul, so the ledger shows which
 * module served it):
 *   f16     Q8_0 weight with an f16 mirror          -> gemm_f16
 *   mmq     Q8_0 weight without one (budget 0)      -> quant_q8_1 + gemm_q8_0r on the
 *           Q8_0 records prepare made (repack_q8_0), or gemm_q8_0 on the Q8_0
 *           blocks where the device has no records lane; valid on either, and
 *           the note and receipt name the one the ledger shows
 *   fp8     E4M3 per-tensor                         -> gemm_fp8
 *   fp8blk  E4M3 + block-128 grid                   -> gemm_fp8_blk
 *   q4_0, q4_k, q5_k, q6_k
 *           that format without a mirror (budget 0: the floor only) ->
 *           quant_q8_1 + gemm_q8_0r on Q4_0's exact Q8_0 records, or
 *           quant_q8_1 + gemm_kr on the K records prepare made; valid only
 *           when the ledger shows that GEMM and no dequant_f16 (the per-call
 *           fall-back would be a different lane). On a GPU, 27b sheet at
 *           m = 512 or 4096, these rows and the mmq (Q8_0) row also print
 *           GGML's MUL_MAT time for the type and shape as issue 26's text
 *           gives it, the ratio, and a geometric mean of the ratios (not
 *           measured in this run: GGML cannot be built on the device, which
 *           has no network).
 * Inside each repetition every arm runs once, the starting arm rotating, so
 * drift (clocks, heat) falls on all arms alike; medians per arm and shape;
 * ratios to the first arm; geometric means over the sheet. The mmq arm's
 * quantiser and GEMMs are also timed apart through memra_module_call (the
 * "mmq split": quant_q8_1, then gemm_q8_0r on records made once outside
 * timing and gemm_q8_0 on the blocks, interleaved, so one run shows both).
 *
 * `--vs A B --op OP` races two modules' implementations of one op on the same
 * inputs, interleaved the same way: the tuning experiment.
 *
 * `--json FILE` writes a receipt (bench/README.md describes it).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/check_ref.h"
#include "tools/tool_fmt.h"
#include "tools/tool_json.h"
#include "tools/model_util.h"
#include "tools/tool.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

#define MAX_REPS 10000
#define MAX_MODS 32

typedef struct shape {
    int64_t in_f, out_f;
} shape;

static const shape k_27b[] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
static const shape k_1p7b[] = {{2048, 2048}, {2048, 1024}, {2048, 6144}, {6144, 2048}};

enum { ARM_F16, ARM_MMQ, ARM_FP8, ARM_FP8BLK, ARM_Q4_0, ARM_Q4_K, ARM_Q5_K, ARM_Q6_K,
       ARM_W8_0, ARM_W4_0, ARM_W4_K, ARM_W5_K, ARM_W6_K, ARM_COUNT };
static const char *const k_arm_name[ARM_COUNT] = {"f16",  "mmq",  "fp8",  "fp8blk", "q4_0", "q4_k", "q5_k",
                                                  "q6_k", "w8_0", "w4_0", "w4_k",   "w5_k", "w6_k"};
/* The w16 arms (ARM_W8_0 ..): Q8_0, Q4_0, Q4_K, Q5_K, Q6_K without a mirror on the W16 operand (gemm_w16),
 * beside the floor arms of the same formats (whose weights are prepared with memra_device_w16_set 0) */
#define ARM_WFIRST ARM_W8_0
#define N_WARMS 5
static const memra_format k_warm_format[N_WARMS] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K,
                                                    MEMRA_FORMAT_Q5_K, MEMRA_FORMAT_Q6_K};
/* The K-quant floor arms' formats (ARM_Q4_0 ..) */
#define ARM_KFIRST ARM_Q4_0
static const memra_format k_arm_format[4] = {MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                             MEMRA_FORMAT_Q6_K};
/* GGML's CUDA MUL_MAT on the H200 (ggml d99724f2, f32 activations), microseconds per call on the
 * 27b sheet in k_27b order, as issue 26's text gives them (not measured by memra):
 * [m = 512, m = 4096][the mmq arm's Q8_0, then Q4_0, Q4_K, Q5_K, Q6_K][shape] */
static const double k_ggml_27b_us[2][5][6] = {
    {{330.1, 45.6, 183.3, 465.1, 491.1, 153.5},
     {326.5, 48.8, 192.4, 465.5, 485.6, 161.6},
     {363.3, 52.1, 217.8, 516.3, 550.5, 181.8},
     {375.7, 52.4, 226.7, 540.5, 573.9, 192.4},
     {448.8, 63.5, 263.2, 651.3, 680.0, 222.6}},
    {{2578.7, 250.8, 1342.0, 3530.7, 3669.4, 1100.5},
     {2479.5, 247.6, 1292.8, 3399.3, 3543.2, 1066.9},
     {2790.0, 275.9, 1474.6, 3819.5, 4023.3, 1196.2},
     {2904.4, 280.4, 1525.7, 3958.2, 4162.7, 1244.2},
     {3597.8, 334.9, 1827.0, 4937.1, 5014.4, 1532.0}}};

/* The GEMM each arm is for; the mmq arm takes gemm_q8_0r (records) or, where
 * the weight has none, gemm_q8_0 (Q8_0 blocks): see arm_judge. */
static const memra_op k_arm_op[ARM_COUNT] = {MEMRA_OP_gemm_f16,   MEMRA_OP_gemm_q8_0r, MEMRA_OP_gemm_fp8,
                                             MEMRA_OP_gemm_fp8_blk, MEMRA_OP_gemm_q8_0r, MEMRA_OP_gemm_kr,
                                             MEMRA_OP_gemm_kr,      MEMRA_OP_gemm_kr,    MEMRA_OP_gemm_w16,
                                             MEMRA_OP_gemm_w16,     MEMRA_OP_gemm_w16,   MEMRA_OP_gemm_w16,
                                             MEMRA_OP_gemm_w16};
/* memra_weight_operands bits 0..5, in the receipt */
#define N_OPERAND_BITS 6
static const char *const k_operand_name[N_OPERAND_BITS] = {"raw", "f16_mirror", "q8_0_slab", "q8_0_records",
                                                           "k_records", "w16"};

/* Ledger hits of every (op, module) on one device. */
typedef struct ledger_snap {
    uint64_t h[MEMRA_OP_COUNT_][MAX_MODS];
} ledger_snap;

/* --compare OLD.json: every (shape, arm) this run measured, and the old receipt. */
#define MAX_CMP 1024
typedef struct cmp_row {
    char shape[32], arm[64];
    double med, q1, q3;
} cmp_row;
static cmp_row g_cmp[MAX_CMP];
static size_t g_ncmp;
static tool_json *g_old;        /* the parsed OLD.json */
static const char *g_old_path;

static void cmp_add(const char *shape_name, const char *arm, const double *t, int64_t n)
{
    if (g_old == NULL || g_ncmp == MAX_CMP || n <= 0) return;
    cmp_row *r = &g_cmp[g_ncmp++];
    snprintf(r->shape, sizeof r->shape, "%s", shape_name);
    snprintf(r->arm, sizeof r->arm, "%s", arm);
    r->med = tool_median(t, (size_t)n);
    tool_quartiles(t, (size_t)n, &r->q1, &r->q3);
}

typedef struct bench {
    memra_runtime *rt;
    memra_device *dev;
    int gpu, nmods;
    const char *mods[MAX_MODS];
    int64_t m, reps, warmup;
    int64_t batch; /* calls per timed interval (--batch); the interval is divided by it */
    const char *sheet_name;
    const shape *sheet;
    size_t nshapes;
    tool_rng rng;
    memra_timer *timer;
    FILE *json;
    int json_done; /* the receipt is whole (closed), even if the run's status is not 0 (an INVALID arm) */
    int failed;
    int version; /* of the receipt: 2, or 3 under --device all */
} bench;

/* GGML's quoted microseconds for arm a at shape s of a run, or 0 where none is quoted (host
 * runs, other sheets or m, the f16 and FP8 arms) */
static double ggml_quoted_us(const bench *b, int a, size_t s)
{
    if (!b->gpu || b->sheet != k_27b || s >= 6 || (b->m != 512 && b->m != 4096)) return 0.0;
    static const int wrow[N_WARMS] = {0, 1, 2, 3, 4}; /* the w16 arms: their format's GGML row */
    const int row = a == ARM_MMQ                                   ? 0
                    : a >= ARM_WFIRST                              ? wrow[a - ARM_WFIRST]
                    : a >= ARM_KFIRST                              ? 1 + a - ARM_KFIRST
                                                                   : -1;
    return row < 0 ? 0.0 : k_ggml_27b_us[b->m == 4096][row][s];
}

static void snap(const bench *b, ledger_snap *s)
{
    for (int o = 0; o < MEMRA_OP_COUNT_; o++)
        for (int i = 0; i < b->nmods; i++) s->h[o][i] = memra_ledger_hits(b->dev, (memra_op)o, b->mods[i]);
}

static void snap_add_delta(const bench *b, const ledger_snap *before, const ledger_snap *after, ledger_snap *acc)
{
    for (int o = 0; o < MEMRA_OP_COUNT_; o++)
        for (int i = 0; i < b->nmods; i++) acc->h[o][i] += after->h[o][i] - before->h[o][i];
}

static const char *flops_name(const bench *b) { return b->gpu ? "TFLOP/s" : "GFLOP/s"; }

/* A weight of the arm's class; budget_mb < 0: leave MEMRA_F16_BUDGET_MB as is. */
static memra_status make_weight(bench *b, const memra_weight_desc *d, const char *budget_mb, memra_weight **out)
{
    /* The budget is the device's (memra_device_f16_budget_set): set for this
     * prepare, then put back. */
    const uint64_t saved = memra_device_f16_budget_get(b->dev);
    if (budget_mb) memra_device_f16_budget_set(b->dev, strtoull(budget_mb, NULL, 10));
    memra_weight *w = NULL;
    memra_status st = memra_weight_create(b->rt, d, &w);
    if (st == MEMRA_STATUS_OK) st = memra_weight_prepare(w, b->dev);
    if (budget_mb) memra_device_f16_budget_set(b->dev, saved);
    if (st != MEMRA_STATUS_OK) {
        memra_weight_destroy(w);
        return st;
    }
    *out = w;
    return MEMRA_STATUS_OK;
}

/* One timed interval: b->batch calls of fn back to back between two timer
 * marks, *ms = the interval / b->batch. With batch 1 (the default) each call
 * is timed alone, so the host's time before its first launch is GPU idle time
 * inside the interval; with --batch N the host enqueues ahead while the GPU
 * runs, as in a prefill that issues its GEMMs back to back. */
static memra_status timed(bench *b, double *ms, memra_status (*fn)(void *), void *arg)
{
    memra_status st = memra_timer_start(b->timer, NULL);
    for (int64_t i = 0; i < b->batch && st == MEMRA_STATUS_OK; i++) st = fn(arg);
    if (st == MEMRA_STATUS_OK) st = memra_timer_stop(b->timer, NULL);
    if (st == MEMRA_STATUS_OK) st = memra_timer_elapsed_ms(b->timer, ms);
    if (st == MEMRA_STATUS_OK) *ms /= (double)b->batch;
    return st;
}

typedef struct mm_call {
    memra_device *dev;
    memra_weight *w;
    memra_dptr x, y;
    int32_t m;
} mm_call;

static memra_status run_matmul(void *p)
{
    mm_call *c = p;
    return memra_matmul(c->dev, c->w, c->x, c->m, c->y, NULL);
}

typedef struct mod_call {
    memra_device *dev;
    const char *module;
    memra_op op;
    memra_op_args args;
} mod_call;

static memra_status run_module(void *p)
{
    mod_call *c = p;
    memra_op_args a = c->args; /* decline_reason is written */
    memra_status st = memra_module_call(c->dev, c->module, c->op, &a);
    if (st == MEMRA_STATUS_DECLINED)
        fprintf(stderr, "memra bench: %s/%s declined: %s\n", c->module, memra_op_name(c->op),
                a.decline_reason ? a.decline_reason : "");
    return st;
}

static void json_times(FILE *f, const double *t, int64_t n)
{
    fprintf(f, "[");
    for (int64_t i = 0; i < n; i++) fprintf(f, "%s%.6g", i ? "," : "", t[i]);
    fprintf(f, "]");
}

static void json_header(bench *b, const char *mode)
{
    FILE *f = b->json;
    const memra_device_caps *caps = memra_device_caps_get(b->dev);
    memra_device_clocks clk = {0, 0};
    memra_device_clocks_get(b->dev, &clk);
    char ts[32], host[256];
    tool_utc_timestamp(ts, sizeof ts);
    tool_host_name(host, sizeof host);
    /* version 2 adds commit, host and clocks, version 3 mode "model" and its "model"
     * section, version 4 "per_device" (--device all; bench/README.md); earlier keys unchanged.
     * "settings" (the knobs away from their defaults) is in every version written since run v */
    fprintf(f, "{\"format\":\"memra-bench\",\"version\":%d,\"timestamp\":\"%s\",\"memra\":", b->version, ts);
    tool_json_str(f, memra_version());
    fprintf(f, ",\"commit\":");
    tool_json_str(f, MEMRA_GIT_COMMIT);
    fprintf(f, ",\"host\":");
    tool_json_str(f, host);
    tool_json_settings(f, b->rt);
    fprintf(f, ",\"clocks\":{\"sm_khz\":%d,\"mem_khz\":%d,\"source\":\"%s\",\"timer\":\"%s\"}", clk.sm_khz,
            clk.mem_khz, caps->ordinal >= 0 ? "driver attribute (maximum clock)" : "none (host)",
            caps->ordinal >= 0 ? "cuda-events" : "monotonic");
    fprintf(f, ",\"mode\":\"%s\",\"device\":{\"name\":", mode);
    tool_json_str(f, caps->name);
    fprintf(f, ",\"profile\":");
    tool_json_str(f, caps->profile);
    fprintf(f, ",\"cc\":%d,\"sm_count\":%d,\"sm_clock_khz\":%d,\"mem_clock_khz\":%d,\"total_mem\":%llu}", caps->cc,
            caps->sm_count, clk.sm_khz, clk.mem_khz, (unsigned long long)caps->total_mem);
    fprintf(f, ",\"driver_version\":%d,\"modules\":[", memra_driver_version(b->rt));
    for (int i = 0, first = 1; i < memra_module_count(b->rt); i++) {
        memra_module_info mi;
        if (memra_module_info_get(b->rt, i, &mi) != MEMRA_STATUS_OK) continue;
        fprintf(f, "%s{\"name\":", first ? "" : ",");
        tool_json_str(f, mi.name);
        fprintf(f, ",\"version\":");
        tool_json_str(f, mi.version);
        fprintf(f, ",\"loaded\":%s,\"score\":%d}", mi.loaded ? "true" : "false", memra_module_score(b->dev, mi.name));
        first = 0;
    }
    fprintf(f, "],\"sheet\":");
    tool_json_str(f, b->sheet_name);
    fprintf(f, ",\"m\":%lld,\"reps\":%lld,\"warmup\":%lld,\"batch\":%lld,\"flops_unit\":\"%s\",\"shapes\":[",
            (long long)b->m, (long long)b->reps, (long long)b->warmup, (long long)b->batch, flops_name(b));
}

/* ---- the arms ------------------------------------------------------------------ */

typedef struct arm_result {
    double *t;          /* reps */
    double median;
    ledger_snap served; /* hits during this arm's timed calls */
    memra_op op;        /* the GEMM that served it (the expected one when none did) */
    unsigned operands;  /* memra_weight_operands of the arm's weight after prepare */
    int64_t route_m;    /* memra_weight_floor_f16_m of the arm's weight: from this m the route, not the floor */
    int valid;
    char note[160];
} arm_result;

static void print_served(const bench *b, const arm_result *ar, int arm, FILE *f, int json)
{
    int first = 1;
    for (int o = 0; o < MEMRA_OP_COUNT_; o++)
        for (int i = 0; i < b->nmods; i++) {
            if (ar->served.h[o][i] == 0) continue;
            if (json) {
                fprintf(f, "%s{\"op\":\"%s\",\"module\":", first ? "" : ",", memra_op_name((memra_op)o));
                tool_json_str(f, b->mods[i]);
                fprintf(f, ",\"hits\":%llu}", (unsigned long long)ar->served.h[o][i]);
            } else {
                fprintf(f, "%s%s/%s x%llu", first ? "" : ", ", b->mods[i], memra_op_name((memra_op)o),
                        (unsigned long long)ar->served.h[o][i]);
            }
            first = 0;
        }
    if (!json && first) fprintf(f, "(nothing)");
    (void)arm;
}

static uint64_t op_hits(const bench *b, const ledger_snap *s, memra_op op)
{
    uint64_t t = 0;
    for (int i = 0; i < b->nmods; i++) t += s->h[op][i];
    return t;
}

/* The GEMM the ledger must show for arm a, in words. */
static const char *arm_expect(int a)
{
    return a == ARM_MMQ ? "gemm_q8_0r or gemm_q8_0 (or every call dequant_kr_f16 + gemm_f16)"
           : a >= ARM_WFIRST ? "gemm_w16"
           : a >= ARM_KFIRST ? a == ARM_Q4_0 ? "gemm_q8_0r (or every call dequant_kr_f16 + gemm_f16)"
                                             : "gemm_kr (or every call dequant_kr_f16 + gemm_f16)"
                             : memra_op_name(k_arm_op[a]);
}

/* A floor arm whose calls ran dequant_kr_f16 (dk times) + gemm_f16. Valid as the route from the floor to the
 * f16 tensor cores (MEMRA_FLOOR_F16_M=N, or auto: the sm90 profile's 256 / 512 tokens) when the weight takes it at
 * this m (memra_weight_floor_f16_m) and every call took it (no floor GEMM, hf 0, and gemm_f16 as often); the
 * op in the receipt is then dequant_kr_f16. Otherwise the floor declined and the per-call fall-back ran:
 * INVALID. The note says which. */
static void arm_judge_route(const bench *b, arm_result *ar, uint64_t hf, uint64_t dk)
{
    const uint64_t h16 = op_hits(b, &ar->served, MEMRA_OP_gemm_f16);
    const int route = ar->route_m > 0 && b->m >= ar->route_m;
    ar->valid = route && hf == 0 && h16 == dk;
    if (ar->valid) ar->op = MEMRA_OP_dequant_kr_f16;
    const size_t l = strlen(ar->note);
    if (route)
        snprintf(ar->note + l, sizeof ar->note - l,
                 "%sdequant_kr_f16 + gemm_f16 x%llu: the route from %lld tokens, not the floor (MEMRA_FLOOR_F16_M=0 "
                 "times the floor)", l ? "; " : "", (unsigned long long)dk, (long long)ar->route_m);
    else
        snprintf(ar->note + l, sizeof ar->note - l, "%sdequant_kr_f16 + gemm_f16 x%llu: the floor declined",
                 l ? "; " : "", (unsigned long long)dk);
}

/* Which GEMM served the arm, from its ledger hits: the mmq arm is valid when
 * gemm_q8_0r (the weight's Q8_0 records) or gemm_q8_0 (its Q8_0 blocks) ran,
 * and its note says which; every other arm needs its own op. */
static void arm_judge(const bench *b, arm_result *ar, int a)
{
    const size_t l = strlen(ar->note);
    char *note = ar->note + l;
    const size_t room = sizeof ar->note - l;
    const char *sep = l ? "; " : "";
    ar->op = k_arm_op[a];
    if (a == ARM_MMQ) {
        const uint64_t hr = op_hits(b, &ar->served, MEMRA_OP_gemm_q8_0r);
        const uint64_t hb = op_hits(b, &ar->served, MEMRA_OP_gemm_q8_0);
        ar->valid = hr + hb > 0;
        if (hr && hb)
            snprintf(note, room, "%sgemm_q8_0r on records x%llu, gemm_q8_0 on Q8_0 blocks x%llu", sep,
                     (unsigned long long)hr, (unsigned long long)hb);
        else if (hr)
            snprintf(note, room, "%sgemm_q8_0r on records", sep);
        else if (hb)
            snprintf(note, room, "%sgemm_q8_0 on Q8_0 blocks%s", sep,
                     ar->operands & MEMRA_OPERAND_Q8_0_RECORDS ? " (the weight has records)" : "");
        if (hb && !hr) ar->op = MEMRA_OP_gemm_q8_0;
        const uint64_t dk = op_hits(b, &ar->served, MEMRA_OP_dequant_kr_f16);
        if (dk) arm_judge_route(b, ar, hr + hb, dk);
    } else if (a >= ARM_KFIRST && a < ARM_WFIRST) {
        const uint64_t dq = op_hits(b, &ar->served, MEMRA_OP_dequant_f16);
        const uint64_t dk = op_hits(b, &ar->served, MEMRA_OP_dequant_kr_f16);
        const uint64_t hf = op_hits(b, &ar->served, k_arm_op[a]);
        ar->valid = hf > 0 && dq == 0; /* the floor, not the per-call fall-back */
        if (dq) snprintf(note, room, "%sdequant_f16 ran x%llu (the per-call fall-back)", sep, (unsigned long long)dq);
        else if (dk) arm_judge_route(b, ar, hf, dk);
    } else {
        ar->valid = op_hits(b, &ar->served, k_arm_op[a]) > 0;
    }
    if (!ar->valid) {
        const size_t l2 = strlen(ar->note);
        snprintf(ar->note + l2, sizeof ar->note - l2, "%sINVALID: no %s hit in the ledger", l2 ? "; " : "",
                 arm_expect(a));
    }
}

static const char *first_module(memra_device *dev, memra_op op)
{
    const char *names[1] = {NULL};
    return memra_routing_get(dev, op, names, 1) > 0 ? names[0] : NULL;
}

/* ---- the mmq split: the quantiser and both MMQ GEMMs timed apart ------------- */

/* Inside each repetition, after the arms: quant_q8_1 on the activation, then
 * (starting side rotating) gemm_q8_0r on Q8_0 records made once by
 * repack_q8_0 outside timing, and gemm_q8_0 on the same weight's Q8_0 blocks,
 * each through memra_module_call on the module that routes it. A column the
 * device lacks, or that fails, is left out with the reason. */
typedef struct mmq_split {
    const char *qmod, *gmod, *rmod; /* routed quant_q8_1, gemm_q8_0 (blocks), gemm_q8_0r (records) */
    memra_buffer *brec;             /* the weight's Q8_0 records */
    mod_call cq, cg, cr;
    double *tq, *tg, *tr;
    uint64_t hg, hr;                /* ledger hits during the timed GEMM calls */
    char skip[320];                 /* the whole split is off: why ("" = on) */
    char gskip[320], rskip[320];    /* a GEMM column is off: why */
    char rby[96];                   /* who made the records */
} mmq_split;

static void split_free(mmq_split *sp)
{
    memra_buffer_destroy(sp->brec);
    free(sp->tq);
    free(sp->tg);
    free(sp->tr);
    memset(sp, 0, sizeof *sp);
}

static int split_on(const mmq_split *sp) { return sp->skip[0] == '\0' && (sp->gmod != NULL || sp->rmod != NULL); }

/* Why the split is off (only when !split_on). */
static const char *split_why(const mmq_split *sp, char *buf, size_t len)
{
    if (sp->skip[0]) return sp->skip;
    snprintf(buf, len, "%s; %s", sp->gskip, sp->rskip);
    return buf;
}

/* x: f32 activation, xq: room for its q8_1 records, q8: the Q8_0 weight
 * (host bytes q8_host, device copy bq), y: [m x n] f32. */
static int split_setup(bench *b, mmq_split *sp, memra_buffer *x, memra_buffer *xq, const uint8_t *q8_host,
                       memra_buffer *bq, memra_buffer *y, int64_t m, int64_t n, int64_t k)
{
    memset(sp, 0, sizeof *sp);
    sp->tq = calloc((size_t)b->reps, sizeof(double));
    sp->tg = calloc((size_t)b->reps, sizeof(double));
    sp->tr = calloc((size_t)b->reps, sizeof(double));
    if (!sp->tq || !sp->tg || !sp->tr) return -1;
    memra_device *dev = b->dev;
    sp->qmod = first_module(dev, MEMRA_OP_quant_q8_1);
    sp->gmod = first_module(dev, MEMRA_OP_gemm_q8_0);
    sp->rmod = first_module(dev, MEMRA_OP_gemm_q8_0r);
    if (sp->qmod == NULL) snprintf(sp->skip, sizeof sp->skip, "no quant_q8_1 on this device");
    if (sp->gmod == NULL) snprintf(sp->gskip, sizeof sp->gskip, "no gemm_q8_0 on this device");
    if (sp->rmod == NULL) snprintf(sp->rskip, sizeof sp->rskip, "no gemm_q8_0r on this device");
    sp->cq = (mod_call){.dev = dev, .module = sp->qmod, .op = MEMRA_OP_quant_q8_1};
    sp->cq.args.struct_size = sizeof sp->cq.args;
    sp->cq.args.src = memra_buffer_ptr(x);
    sp->cq.args.dst = memra_buffer_ptr(xq);
    sp->cq.args.rows = m;
    sp->cq.args.cols = k;
    sp->cg = (mod_call){.dev = dev, .module = sp->gmod, .op = MEMRA_OP_gemm_q8_0};
    sp->cg.args.struct_size = sizeof sp->cg.args;
    sp->cg.args.gemm = (memra_gemm_args){.struct_size = sizeof(memra_gemm_args), .m = (int32_t)m, .n = (int32_t)n,
                                         .k = (int32_t)k, .w = memra_buffer_ptr(bq), .x = memra_buffer_ptr(xq),
                                         .y = memra_buffer_ptr(y), .ldy = n, .alpha = 1.0f};
    if (sp->rmod == NULL) return 0;
    /* the records, once, outside timing: the routed repack_q8_0, else the
     * reference repack (the layout is the same on every device) */
    const size_t rbytes = (size_t)memra_q8_0r_bytes(n, k);
    const char *pmod = first_module(dev, MEMRA_OP_repack_q8_0);
    memra_status st = tool_upload(dev, NULL, rbytes, &sp->brec);
    if (st == MEMRA_STATUS_OK && pmod != NULL) {
        memra_op_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.src = memra_buffer_ptr(bq);
        a.rows = n;
        a.cols = k;
        a.dst = memra_buffer_ptr(sp->brec);
        st = memra_module_call(dev, pmod, MEMRA_OP_repack_q8_0, &a);
        if (st == MEMRA_STATUS_OK) st = memra_device_synchronize(dev);
        snprintf(sp->rby, sizeof sp->rby, "%s/repack_q8_0", pmod);
    } else if (st == MEMRA_STATUS_OK) {
        uint8_t *rec = tool_alloc(rbytes, 1);
        if (rec == NULL) return -1;
        ref_repack_q8_0(q8_host, n, k, rec);
        st = memra_buffer_write(sp->brec, 0, rec, rbytes);
        free(rec);
        snprintf(sp->rby, sizeof sp->rby, "the reference repack (no repack_q8_0 on this device)");
    }
    if (st != MEMRA_STATUS_OK) {
        snprintf(sp->rskip, sizeof sp->rskip, "no records (%s): %s: %.100s", sp->rby[0] ? sp->rby : "upload",
                 memra_status_str(st), memra_last_error());
        sp->rmod = NULL;
        return 0;
    }
    sp->cr = sp->cg;
    sp->cr.module = sp->rmod;
    sp->cr.op = MEMRA_OP_gemm_q8_0r;
    sp->cr.args.gemm.w = memra_buffer_ptr(sp->brec);
    return 0;
}

/* One repetition (r < 0: warm-up, not recorded). */
static void split_rep(bench *b, mmq_split *sp, int64_t r)
{
    if (!split_on(sp)) return;
    double ms = 0.0;
    memra_status st = timed(b, &ms, run_module, &sp->cq);
    if (st != MEMRA_STATUS_OK) {
        snprintf(sp->skip, sizeof sp->skip, "quant_q8_1 (%s): %s: %.100s", sp->qmod, memra_status_str(st),
                 memra_last_error());
        return;
    }
    if (r >= 0) sp->tq[r] = ms;
    for (int i = 0; i < 2; i++) {
        const int recs = (int)(((r < 0 ? 0 : r) + i) % 2) == 0;
        const char **mod = recs ? &sp->rmod : &sp->gmod;
        if (*mod == NULL) continue;
        mod_call *c = recs ? &sp->cr : &sp->cg;
        const uint64_t h0 = memra_ledger_hits(b->dev, c->op, *mod);
        st = timed(b, &ms, run_module, c);
        if (st != MEMRA_STATUS_OK) {
            snprintf(recs ? sp->rskip : sp->gskip, sizeof sp->rskip, "%s (%s): %s: %.100s", memra_op_name(c->op),
                     *mod, memra_status_str(st), memra_last_error());
            *mod = NULL;
            continue;
        }
        if (r < 0) continue;
        (recs ? sp->tr : sp->tg)[r] = ms;
        *(recs ? &sp->hr : &sp->hg) += memra_ledger_hits(b->dev, c->op, *mod) - h0;
    }
}

/* The "mmq split" line under a shape's arms. */
static void split_print(const bench *b, const mmq_split *sp)
{
    const size_t n = (size_t)b->reps;
    if (!split_on(sp)) {
        char why[660];
        printf("%-14s %-8s %10s %8s %15s %8s  not timed: %s\n", "", "mmq split", "-", "", "", "",
               split_why(sp, why, sizeof why));
        return;
    }
    const double q = tool_median(sp->tq, n), g = tool_median(sp->tg, n), rr = tool_median(sp->tr, n);
    const int have_r = sp->rmod != NULL;
    printf("%-14s %-8s %10.3f %8s %15s %8s  quant_q8_1 (%s) %.3f ms + %s (%s) %.3f ms", "", "mmq split",
           q + (have_r ? rr : g), "", "", "", sp->qmod, q, have_r ? "gemm_q8_0r" : "gemm_q8_0",
           have_r ? sp->rmod : sp->gmod, have_r ? rr : g);
    if (have_r && sp->gmod) printf("; gemm_q8_0 on blocks (%s) %.3f ms (records/blocks %.2fx)", sp->gmod, g, rr / g);
    else if (have_r) printf("; gemm_q8_0 on blocks not timed: %s", sp->gskip);
    else printf("; gemm_q8_0r on records not timed: %s", sp->rskip);
    if (have_r && strncmp(sp->rby, "the reference", 13) == 0) printf("; records by %s", sp->rby);
    printf("\n");
}

static void json_str_or_null(FILE *f, const char *s)
{
    if (s && s[0]) tool_json_str(f, s);
    else fprintf(f, "null");
}

/* ,"<key>_ms":[the times],"<key>_median_ms":median (null when there are none) */
static void json_times_median(FILE *f, const char *key, const double *t, int64_t count)
{
    fprintf(f, ",\"%s_ms\":", key);
    json_times(f, t, count);
    if (count > 0) fprintf(f, ",\"%s_median_ms\":%.6g", key, tool_median(t, (size_t)count));
    else fprintf(f, ",\"%s_median_ms\":null", key);
}

static void split_json(const bench *b, const mmq_split *sp, FILE *f)
{
    const size_t n = (size_t)b->reps;
    const int on = split_on(sp), have_g = on && sp->gmod != NULL, have_r = on && sp->rmod != NULL;
    char why[660];
    fprintf(f, ",\"mmq_split\":{\"skipped\":");
    json_str_or_null(f, on ? NULL : split_why(sp, why, sizeof why));
    if (!on) {
        fprintf(f, "}");
        return;
    }
    fprintf(f, ",\"quant_module\":");
    tool_json_str(f, sp->qmod);
    json_times_median(f, "quant", sp->tq, b->reps);
    fprintf(f, ",\"gemm_op\":\"gemm_q8_0\",\"gemm_module\":");
    json_str_or_null(f, have_g ? sp->gmod : NULL);
    json_times_median(f, "gemm", sp->tg, have_g ? b->reps : 0);
    fprintf(f, ",\"gemm_hits\":%llu,\"gemm_skipped\":", (unsigned long long)sp->hg);
    json_str_or_null(f, have_g ? NULL : sp->gskip);
    fprintf(f, ",\"records_op\":\"gemm_q8_0r\",\"records_module\":");
    json_str_or_null(f, have_r ? sp->rmod : NULL);
    fprintf(f, ",\"records_by\":");
    json_str_or_null(f, have_r ? sp->rby : NULL);
    json_times_median(f, "records_gemm", sp->tr, have_r ? b->reps : 0);
    fprintf(f, ",\"records_gemm_hits\":%llu,\"records_skipped\":", (unsigned long long)sp->hr);
    json_str_or_null(f, have_r ? NULL : sp->rskip);
    if (have_r && have_g) fprintf(f, ",\"records_over_blocks\":%.6g", tool_median(sp->tr, n) / tool_median(sp->tg, n));
    else fprintf(f, ",\"records_over_blocks\":null");
    fprintf(f, "}");
}

static int bench_arms(bench *b)
{
    /* the w16 arms (the last ones) only where gemm_w16's kernels are on (MEMRA_W16 auto or 1; the default 0 loads
     * none, so a W16 weight would not be made) */
    const char *w16v = memra_config_value(b->rt, "MEMRA_W16");
    const int narms = w16v != NULL && strcmp(w16v, "0") != 0 ? ARM_COUNT : ARM_WFIRST;
    double *logsum = calloc(ARM_COUNT, sizeof(double));
    arm_result all_served[ARM_COUNT];
    memset(all_served, 0, sizeof all_served);
    if (logsum == NULL) return 1;
    int invalid[ARM_COUNT] = {0};
    double ggml_logsum[ARM_COUNT] = {0};
    /* each arm's lowest ratio to GGML's quoted figure and its shape (the "at every shape" targets) */
    double ggml_min[ARM_COUNT];
    char ggml_min_shape[ARM_COUNT][32];
    for (int a = 0; a < ARM_COUNT; a++) ggml_min[a] = 0.0, ggml_min_shape[a][0] = '\0';
    const int ggml_run = ggml_quoted_us(b, ARM_MMQ, 0) > 0.0;
    if (ggml_run)
        printf("GGML figures quoted, not measured in this run: GGML's CUDA MUL_MAT on the H200 (ggml d99724f2, "
               "us per call), quoted beside the mmq (Q8_0) and q4_0 / q4_k / q5_k / q6_k arms; GGML cannot be "
               "built on the device (no network), so no GGML arm runs here\n");
    printf("%-14s %-8s %10s %8s %15s %8s  %s\n", "shape", "arm", "median ms", "spread", "rate", "vs f16", "note");
    tool_progress pg;
    tool_progress_begin(&pg, "memra bench", b->nshapes * (size_t)(b->reps + b->warmup));
    for (size_t s = 0; s < b->nshapes; s++) {
        const int64_t k = b->sheet[s].in_f, n = b->sheet[s].out_f, m = b->m;
        const double flops = 2.0 * (double)m * (double)n * (double)k;
        const size_t qbytes = (size_t)(n * (k / 32)) * MEMRA_Q8_0_BYTES;
        const size_t gcount = (size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k));
        uint8_t *q8 = tool_alloc(qbytes, 1), *e8 = tool_alloc((size_t)(n * k), 1);
        float *grid = tool_alloc(gcount, sizeof(float)), *x = tool_alloc((size_t)(m * k), sizeof(float));
        memra_weight *w[ARM_COUNT] = {NULL};
        uint8_t *kq[4] = {NULL, NULL, NULL, NULL};
        memra_buffer *bx = NULL, *by = NULL, *bq = NULL, *brec = NULL;
        arm_result ar[ARM_COUNT];
        memset(ar, 0, sizeof ar);
        mmq_split sp;
        memset(&sp, 0, sizeof sp);
        int rc = 0;
        if (!q8 || !e8 || !grid || !x) {
            rc = 1;
            goto shape_done;
        }
        tool_fill_q8_0_w(&b->rng, q8, n, k);
        tool_fill_e4m3_w(&b->rng, e8, (size_t)(n * k));
        tool_fill_grid(&b->rng, grid, gcount);
        tool_fill_x(&b->rng, x, (size_t)(m * k));
        memra_weight_desc dq = {.struct_size = sizeof dq, .format = MEMRA_FORMAT_Q8_0, .out_f = n, .in_f = k,
                                .data = q8, .size = qbytes, .name = "bench.q8_0"};
        memra_weight_desc de = {.struct_size = sizeof de, .format = MEMRA_FORMAT_E4M3, .out_f = n, .in_f = k,
                                .data = e8, .size = (size_t)(n * k), .scale = 0.01f, .name = "bench.e4m3"};
        memra_weight_desc db = de;
        db.scale = 0.0f;
        db.grid = grid;
        db.grid_count = gcount;
        db.name = "bench.e4m3blk";
        memra_status st = make_weight(b, &dq, "1048576", &w[ARM_F16]);
        /* the floor arms' weights without W16 (the integer floor), the w16 arms' with it */
        memra_device_w16_set(b->dev, 0);
        if (st == MEMRA_STATUS_OK) st = make_weight(b, &dq, "0", &w[ARM_MMQ]);
        if (st == MEMRA_STATUS_OK) st = make_weight(b, &de, NULL, &w[ARM_FP8]);
        if (st == MEMRA_STATUS_OK) st = make_weight(b, &db, NULL, &w[ARM_FP8BLK]);
        for (int f = 0; f < 4 && st == MEMRA_STATUS_OK; f++) {
            const size_t kb = (size_t)memra_format_row_bytes(k_arm_format[f], k) * (size_t)n;
            kq[f] = tool_alloc(kb, 1);
            if (kq[f] == NULL) {
                st = MEMRA_STATUS_OUT_OF_MEMORY;
                break;
            }
            tool_fill_blocks_w(&b->rng, k_arm_format[f], kq[f], n, k);
            memra_weight_desc dk = {.struct_size = sizeof dk, .format = k_arm_format[f], .out_f = n, .in_f = k,
                                    .data = kq[f], .size = kb, .name = k_arm_name[ARM_KFIRST + f]};
            st = make_weight(b, &dk, "0", &w[ARM_KFIRST + f]);
            /* the same blocks on the W16 operand, for the w16 arm of that format */
            for (int v = 0; v < N_WARMS && st == MEMRA_STATUS_OK && narms > ARM_WFIRST; v++)
                if (k_warm_format[v] == k_arm_format[f]) {
                    memra_device_w16_set(b->dev, 1);
                    dk.name = k_arm_name[ARM_WFIRST + v];
                    st = make_weight(b, &dk, "0", &w[ARM_WFIRST + v]);
                    memra_device_w16_set(b->dev, 0);
                }
        }
        if (st == MEMRA_STATUS_OK && narms > ARM_WFIRST) {
            memra_device_w16_set(b->dev, 1);
            memra_weight_desc dw = dq;
            dw.name = k_arm_name[ARM_W8_0];
            st = make_weight(b, &dw, "0", &w[ARM_W8_0]);
        }
        memra_device_w16_set(b->dev, -1);
        const size_t recb = (size_t)memra_q8_1_bytes(m, k);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, x, (size_t)(m * k) * sizeof(float), &bx);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, NULL, (size_t)(m * n) * sizeof(float), &by);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, q8, qbytes, &bq);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, NULL, recb, &brec);
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "memra bench: preparing %lld->%lld: %s: %s\n", (long long)k, (long long)n,
                    memra_status_str(st), memra_last_error());
            rc = 1;
            goto shape_done;
        }
        memra_weight_state ws;
        if (memra_weight_query(w[ARM_F16], b->dev, &ws) == MEMRA_STATUS_OK && !ws.has_f16_mirror)
            snprintf(ar[ARM_F16].note, sizeof ar[ARM_F16].note, "no f16 mirror: %s", ws.note);
        if (memra_weight_query(w[ARM_MMQ], b->dev, &ws) == MEMRA_STATUS_OK && ws.has_f16_mirror)
            snprintf(ar[ARM_MMQ].note, sizeof ar[ARM_MMQ].note, "has an f16 mirror despite budget 0");
        for (int a = 0; a < narms; a++) {
            ar[a].t = calloc((size_t)b->reps, sizeof(double));
            if (ar[a].t == NULL) rc = 1;
            ar[a].operands = memra_weight_operands(w[a], b->dev);
            ar[a].route_m = memra_weight_floor_f16_m(w[a], b->dev);
        }
        if (rc || split_setup(b, &sp, bx, brec, q8, bq, by, m, n, k) != 0) {
            rc = 1;
            goto shape_done;
        }
        for (int64_t r = -b->warmup; r < b->reps; r++) {
            char what[64];
            snprintf(what, sizeof what, "%lld->%lld %s %lld", (long long)k, (long long)n, r < 0 ? "warm-up" : "rep",
                     (long long)(r < 0 ? -r : r + 1));
            tool_progress_step(&pg, what);
            for (int i = 0; i < narms; i++) {
                const int a = (int)(((r < 0 ? 0 : r) + i) % narms);
                mm_call mc = {.dev = b->dev, .w = w[a], .x = memra_buffer_ptr(bx), .y = memra_buffer_ptr(by),
                              .m = (int32_t)m};
                ledger_snap s0, s1;
                snap(b, &s0);
                double ms = 0.0;
                st = timed(b, &ms, run_matmul, &mc);
                snap(b, &s1);
                if (st != MEMRA_STATUS_OK) {
                    tool_progress_clear(&pg);
                    fprintf(stderr, "memra bench: %s at %lld->%lld: %s: %s\n", k_arm_name[a], (long long)k,
                            (long long)n, memra_status_str(st), memra_last_error());
                    rc = 1;
                    goto shape_done;
                }
                if (r >= 0) {
                    ar[a].t[r] = ms;
                    snap_add_delta(b, &s0, &s1, &ar[a].served);
                }
            }
            split_rep(b, &sp, r); /* the mmq arm apart: quantiser, then both GEMMs */
        }
        tool_progress_clear(&pg);
        for (int a = 0; a < narms; a++) {
            ar[a].median = tool_median(ar[a].t, (size_t)b->reps);
            arm_judge(b, &ar[a], a);
            if (!ar[a].valid) invalid[a] = 1;
            for (int o = 0; o < MEMRA_OP_COUNT_; o++)
                for (int i = 0; i < b->nmods; i++) all_served[a].served.h[o][i] += ar[a].served.h[o][i];
        }
        char name[32];
        snprintf(name, sizeof name, "%lld->%lld", (long long)k, (long long)n);
        for (int a = 0; a < narms; a++) {
            const double ratio = ar[ARM_F16].median / ar[a].median;
            logsum[a] += log(ratio);
            char gg[96] = "";
            /* GGML's figure beside the integer floor's arms: 27b sheet, m = 512 or 4096, GPU only */
            const double gus = ggml_quoted_us(b, a, s);
            if (gus > 0.0) {
                ggml_logsum[a] += log(gus / (ar[a].median * 1e3));
                if (ggml_min_shape[a][0] == '\0' || gus / (ar[a].median * 1e3) < ggml_min[a]) {
                    ggml_min[a] = gus / (ar[a].median * 1e3);
                    snprintf(ggml_min_shape[a], sizeof ggml_min_shape[a], "%s", name);
                }
                snprintf(gg, sizeof gg, "%sGGML %.1f us (quoted): %.2fx", ar[a].note[0] ? "; " : "", gus,
                         gus / (ar[a].median * 1e3));
            }
            char rate[32], spread[16];
            cmp_add(name, k_arm_name[a], ar[a].t, b->reps);
            printf("%-14s %-8s %10.3f %8s %15s %7.3fx  %s%s\n", a == 0 ? name : "", k_arm_name[a], ar[a].median,
                   tool_spread(ar[a].t, (size_t)b->reps, spread, sizeof spread),
                   tool_rate(flops / (ar[a].median * 1e-3), "FLOP/s", rate, sizeof rate), ratio, ar[a].note, gg);
        }
        split_print(b, &sp);
        if (b->json) {
            FILE *f = b->json;
            fprintf(f, "%s\n{\"shape\":\"%s\",\"in_f\":%lld,\"out_f\":%lld,\"flops\":%.0f,\"arms\":[", s ? "," : "",
                    name, (long long)k, (long long)n, flops);
            for (int a = 0; a < narms; a++) {
                fprintf(f, "%s{\"arm\":\"%s\",\"op\":\"%s\",\"operands\":[", a ? "," : "", k_arm_name[a],
                        memra_op_name(ar[a].op));
                for (int bit = 0, first = 1; bit < N_OPERAND_BITS; bit++)
                    if (ar[a].operands & (1u << bit)) {
                        fprintf(f, "%s\"%s\"", first ? "" : ",", k_operand_name[bit]);
                        first = 0;
                    }
                double q1, q3;
                tool_quartiles(ar[a].t, (size_t)b->reps, &q1, &q3);
                fprintf(f, "],\"times_ms\":");
                json_times(f, ar[a].t, b->reps);
                fprintf(f, ",\"q1_ms\":%.6g,\"q3_ms\":%.6g", q1, q3);
                fprintf(f, ",\"median_ms\":%.6g,\"flops_per_s\":%.6g,\"ratio_to_f16\":%.6g,\"valid\":%s,\"note\":",
                        ar[a].median, flops / (ar[a].median * 1e-3), ar[ARM_F16].median / ar[a].median,
                        ar[a].valid ? "true" : "false");
                tool_json_str(f, ar[a].note);
                if (ggml_quoted_us(b, a, s) > 0.0)
                    fprintf(f, ",\"ggml_issue_text_us\":%.6g", ggml_quoted_us(b, a, s));
                fprintf(f, ",\"served\":[");
                print_served(b, &ar[a], a, f, 1);
                fprintf(f, "]}");
            }
            fprintf(f, "]");
            split_json(b, &sp, f);
            fprintf(f, "}");
        }
    shape_done:
        for (int a = 0; a < narms; a++) {
            memra_weight_destroy(w[a]);
            free(ar[a].t);
        }
        memra_buffer_destroy(bx);
        memra_buffer_destroy(by);
        memra_buffer_destroy(bq);
        memra_buffer_destroy(brec);
        free(q8);
        free(e8);
        free(grid);
        free(x);
        for (int f = 0; f < 4; f++) free(kq[f]);
        split_free(&sp);
        if (rc) {
            free(logsum);
            return 1;
        }
    }
    tool_progress_end(&pg);
    printf("geometric mean over %zu shapes (speed relative to f16):", b->nshapes);
    for (int a = 0; a < narms; a++) printf(" %s %.3fx", k_arm_name[a], exp(logsum[a] / (double)b->nshapes));
    if (ggml_run) {
        printf("\ngeometric mean over %zu shapes (speed relative to GGML's quoted figures):", b->nshapes);
        for (int a = 0; a < narms; a++)
            if (ggml_quoted_us(b, a, 0) > 0.0) printf(" %s %.3fx", k_arm_name[a], exp(ggml_logsum[a] / (double)b->nshapes));
        printf("\nlowest shape (speed relative to GGML's quoted figures):");
        for (int a = 0; a < narms; a++)
            if (ggml_min_shape[a][0] != '\0') printf(" %s %.2fx (%s)", k_arm_name[a], ggml_min[a], ggml_min_shape[a]);
    }
    printf("\nserved (from the ledger):\n");
    int rc = 0;
    for (int a = 0; a < narms; a++) {
        printf("  %-8s ", k_arm_name[a]);
        print_served(b, &all_served[a], a, stdout, 0);
        if (invalid[a]) {
            printf("  INVALID: no %s hit", arm_expect(a));
            rc = 1;
        }
        printf("\n");
    }
    if (b->json) {
        fprintf(b->json, "],\"geomean_ratio_to_f16\":{");
        for (int a = 0; a < narms; a++)
            fprintf(b->json, "%s\"%s\":%.6g", a ? "," : "", k_arm_name[a], exp(logsum[a] / (double)b->nshapes));
        fprintf(b->json, "}");
        if (ggml_run) {
            fprintf(b->json, ",\"geomean_ratio_to_ggml_quoted\":{");
            for (int a = 0, first = 1; a < narms; a++)
                if (ggml_quoted_us(b, a, 0) > 0.0) {
                    fprintf(b->json, "%s\"%s\":%.6g", first ? "" : ",", k_arm_name[a],
                            exp(ggml_logsum[a] / (double)b->nshapes));
                    first = 0;
                }
            fprintf(b->json, "},\"lowest_ratio_to_ggml_quoted\":{");
            for (int a = 0, first = 1; a < narms; a++)
                if (ggml_min_shape[a][0] != '\0') {
                    fprintf(b->json, "%s\"%s\":{\"ratio\":%.6g,\"shape\":", first ? "" : ",", k_arm_name[a], ggml_min[a]);
                    tool_json_str(b->json, ggml_min_shape[a]);
                    fprintf(b->json, "}");
                    first = 0;
                }
            fprintf(b->json, "}");
        }
        fprintf(b->json, ",\"invalid_arms\":[");
        for (int a = 0, first = 1; a < narms; a++)
            if (invalid[a]) {
                fprintf(b->json, "%s\"%s\"", first ? "" : ",", k_arm_name[a]);
                first = 0;
            }
        fprintf(b->json, "]}\n");
        b->json_done = 1;
    }
    free(logsum);
    return rc;
}

/* ---- --vs: two modules, one op ------------------------------------------------- */

typedef struct vs_inputs {
    memra_buffer *buf[4];
    memra_op_args args;
    double flops; /* 0 for non-GEMM ops */
    double bytes; /* bytes a non-GEMM op reads and writes (its rate is GB/s) */
} vs_inputs;

static void vs_free(vs_inputs *v)
{
    for (int i = 0; i < 4; i++) memra_buffer_destroy(v->buf[i]);
    memset(v, 0, sizeof *v);
}

/* Why vs_make returned NOT_SUPPORTED or INTERNAL (NULL: the library's
 * memra_last_error() says why). */
static const char *g_vs_reason;

/* Inputs of `op` for shape (m, n = out_f, k = in_f), uploaded to dev. */
static memra_status vs_make(bench *b, memra_op op, int64_t m, int64_t n, int64_t k, vs_inputs *v)
{
    memset(v, 0, sizeof *v);
    g_vs_reason = NULL;
    memra_status st = MEMRA_STATUS_OK;
    const size_t mk = (size_t)(m * k), nk = (size_t)(n * k), mn = (size_t)(m * n);
    const size_t gcount = (size_t)(memra_fp8_grid_rows(n) * memra_fp8_grid_cols(k));
    float *x = tool_alloc(mk, sizeof(float));
    uint8_t *wb = tool_alloc(nk * 2 + 64, 1); /* big enough for f16, e4m3 or Q8_0 */
    float *grid = tool_alloc(gcount, sizeof(float));
    uint8_t *rec = NULL, *wrec = NULL;
    if (!x || !wb || !grid) {
        st = MEMRA_STATUS_OUT_OF_MEMORY;
        goto out;
    }
    tool_fill_x(&b->rng, x, mk);
    tool_fill_grid(&b->rng, grid, gcount);
    memra_op_args *a = &v->args;
    a->struct_size = sizeof *a;
    a->gemm.struct_size = sizeof a->gemm;
    a->gemm.m = (int32_t)m;
    a->gemm.n = (int32_t)n;
    a->gemm.k = (int32_t)k;
    a->gemm.ldy = n;
    a->gemm.alpha = 1.0f;
    a->gemm.w_scale = 0.01f;
    const size_t q8b = nk / 32 * MEMRA_Q8_0_BYTES;
    switch (op) {
    case MEMRA_OP_gemm_f16:
    case MEMRA_OP_gemm_fp8:
    case MEMRA_OP_gemm_fp8_blk:
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r:
    case MEMRA_OP_gemm_bf16:
    case MEMRA_OP_gemm_kr:
    case MEMRA_OP_accprobe: {
        size_t wbytes = nk, xbytes = mk * sizeof(float);
        const void *xsrc = x, *wsrc = wb;
        if (op == MEMRA_OP_gemm_kr && k % 256 != 0) {
            g_vs_reason = "gemm_kr needs in_f a multiple of 256 (a K-quant super-block)";
            st = MEMRA_STATUS_NOT_SUPPORTED;
            goto out;
        }
        if (op == MEMRA_OP_gemm_bf16) {
            /* bf16 of +-[0.01, 0.5): the top half of the f32, rounded to nearest even */
            uint16_t *h = (uint16_t *)(void *)wb;
            for (size_t e = 0; e < nk; e++) {
                const float f = tool_rng_signed(&b->rng, 0.01f, 0.5f);
                uint32_t u;
                memcpy(&u, &f, 4);
                h[e] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
            }
            wbytes = nk * 2;
        } else if (op == MEMRA_OP_gemm_kr) {
            /* Q4_K blocks, repacked into the K records every module's gemm_kr reads */
            const size_t kb = (size_t)memra_format_row_bytes(MEMRA_FORMAT_Q4_K, k) * (size_t)n;
            uint8_t *blocks = tool_alloc(kb, 1);
            wbytes = (size_t)memra_kr_bytes(MEMRA_FORMAT_Q4_K, n, k);
            wrec = tool_alloc(wbytes, 1);
            if (blocks == NULL || wrec == NULL) {
                free(blocks);
                st = MEMRA_STATUS_OUT_OF_MEMORY;
                goto out;
            }
            tool_fill_blocks_w(&b->rng, MEMRA_FORMAT_Q4_K, blocks, n, k);
            const int krc = memra_kr_repack(MEMRA_FORMAT_Q4_K, blocks, n, k, wrec);
            free(blocks);
            if (krc != 0) {
                g_vs_reason = "memra_kr_repack refused the Q4_K blocks";
                st = MEMRA_STATUS_INTERNAL;
                goto out;
            }
            wsrc = wrec;
            a->gemm.w_format = MEMRA_FORMAT_Q4_K;
        } else if (op == MEMRA_OP_gemm_f16) {
            tool_fill_f16_w(&b->rng, (uint16_t *)(void *)wb, nk);
            wbytes = nk * 2;
        } else if (op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r) {
            tool_fill_q8_0_w(&b->rng, wb, n, k);
            wbytes = q8b;
            if (op == MEMRA_OP_gemm_q8_0r) { /* the records every module's repack_q8_0 makes */
                wbytes = (size_t)memra_q8_0r_bytes(n, k);
                wrec = tool_alloc(wbytes, 1);
                if (wrec == NULL) {
                    st = MEMRA_STATUS_OUT_OF_MEMORY;
                    goto out;
                }
                ref_repack_q8_0(wb, n, k, wrec);
                wsrc = wrec;
            }
        } else if (op == MEMRA_OP_accprobe) {
            for (size_t e = 0; e < nk; e++) wb[e] = (uint8_t)(tool_rng_u64(&b->rng) & 0x3F); /* int8 and e4m3 safe */
            rec = tool_alloc(mk, 1);
            if (rec == NULL) {
                st = MEMRA_STATUS_OUT_OF_MEMORY;
                goto out;
            }
            for (size_t e = 0; e < mk; e++) rec[e] = (uint8_t)(tool_rng_u64(&b->rng) & 0x3F);
            xsrc = rec;
            xbytes = mk;
        } else {
            tool_fill_e4m3_w(&b->rng, wb, nk);
        }
        if (op == MEMRA_OP_gemm_kr || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r) {
            /* the integer floor's activation: q8_1 records, as quant_q8_1 makes them */
            xbytes = (size_t)memra_q8_1_bytes(m, k);
            rec = tool_alloc(xbytes, 1);
            if (rec == NULL) {
                st = MEMRA_STATUS_OUT_OF_MEMORY;
                goto out;
            }
            ref_quant_q8_1(x, m, k, rec);
            xsrc = rec;
        }
        st = tool_upload(b->dev, wsrc, wbytes, &v->buf[0]);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, xsrc, xbytes, &v->buf[1]);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, NULL, mn * sizeof(float), &v->buf[2]);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, grid, gcount * sizeof(float), &v->buf[3]);
        if (st != MEMRA_STATUS_OK) goto out;
        a->gemm.w = memra_buffer_ptr(v->buf[0]);
        a->gemm.x = memra_buffer_ptr(v->buf[1]);
        a->gemm.y = memra_buffer_ptr(v->buf[2]);
        if (op == MEMRA_OP_gemm_fp8_blk) a->gemm.w_scale_grid = memra_buffer_ptr(v->buf[3]);
        a->arm = MEMRA_ACCPROBE_S32;
        v->flops = 2.0 * (double)m * (double)n * (double)k;
        break;
    }
    case MEMRA_OP_quant_q8_1:
    case MEMRA_OP_cvt_f16:
        st = tool_upload(b->dev, x, mk * sizeof(float), &v->buf[0]);
        if (st == MEMRA_STATUS_OK)
            st = tool_upload(b->dev, NULL, op == MEMRA_OP_cvt_f16 ? mk * 2 : (size_t)memra_q8_1_bytes(m, k),
                             &v->buf[1]);
        v->bytes = (double)(mk * sizeof(float)) +
                   (double)(op == MEMRA_OP_cvt_f16 ? mk * 2 : (size_t)memra_q8_1_bytes(m, k));
        if (st != MEMRA_STATUS_OK) goto out;
        a->src = memra_buffer_ptr(v->buf[0]);
        a->dst = memra_buffer_ptr(v->buf[1]);
        a->rows = m;
        a->cols = k;
        a->n = (int64_t)mk;
        break;
    case MEMRA_OP_dequant_f16:
    case MEMRA_OP_fp8_blk_to_q8_0:
    case MEMRA_OP_fp8_nan_count:
    case MEMRA_OP_repack_q8_0: {
        const int from_q8 = op == MEMRA_OP_dequant_f16 || op == MEMRA_OP_repack_q8_0;
        const size_t dbytes = op == MEMRA_OP_fp8_nan_count ? 8
                              : op == MEMRA_OP_dequant_f16 ? nk * 2
                              : op == MEMRA_OP_repack_q8_0 ? (size_t)memra_q8_0r_bytes(n, k)
                                                           : q8b;
        if (from_q8) tool_fill_q8_0_w(&b->rng, wb, n, k);
        else tool_fill_e4m3_w(&b->rng, wb, nk);
        st = tool_upload(b->dev, wb, from_q8 ? q8b : nk, &v->buf[0]);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, grid, gcount * sizeof(float), &v->buf[1]);
        if (st == MEMRA_STATUS_OK) st = tool_upload(b->dev, NULL, dbytes, &v->buf[2]);
        if (st != MEMRA_STATUS_OK) goto out;
        v->bytes = (double)(from_q8 ? q8b : nk) + (double)(op == MEMRA_OP_fp8_nan_count ? 0 : dbytes);
        a->format = MEMRA_FORMAT_Q8_0;
        a->src = memra_buffer_ptr(v->buf[0]);
        a->aux = memra_buffer_ptr(v->buf[1]);
        a->dst = memra_buffer_ptr(v->buf[2]);
        a->rows = n;
        a->cols = k;
        a->n = (int64_t)nk;
        break;
    }
    case MEMRA_OP_scale:
        st = tool_upload(b->dev, NULL, mn * sizeof(float), &v->buf[0]);
        if (st != MEMRA_STATUS_OK) goto out;
        st = memra_buffer_write(v->buf[0], 0, x, (mn < mk ? mn : mk) * sizeof(float));
        a->src = memra_buffer_ptr(v->buf[0]);
        a->n = (int64_t)mn;
        a->s = 1.0f; /* repeated calls keep the values */
        v->bytes = 2.0 * (double)(mn * sizeof(float));
        break;
    default:
        g_vs_reason = "memra bench has no inputs for this op yet";
        st = MEMRA_STATUS_NOT_SUPPORTED;
        break;
    }
out:
    free(x);
    free(wb);
    free(grid);
    free(rec);
    free(wrec);
    if (st != MEMRA_STATUS_OK) vs_free(v);
    return st;
}

/* What serves `op` inside `module`, as far as the program can tell from the
 * outside (the module logs the exact variant, tile and JIT origin at info). */
static memra_runtime *g_bench_rt; /* for the effective knobs */

static const char *lane_variant(const char *module, memra_op op)
{
    if (op != MEMRA_OP_gemm_fp8_blk) return "";
    if (strcmp(module, "sm120") == 0) {
        const char *v = g_bench_rt ? memra_config_value(g_bench_rt, "MEMRA_SM120_FP8BLK") : NULL;
        return v != NULL && strcmp(v, "f8f6f4") == 0 ? "memra fp8blk_gemm, kind::f8f6f4 (sm_120a)"
                                                     : "memra fp8blk_gemm, kind::mxf8f6f4 unit scales (sm_120a)";
    }
    if (strcmp(module, "fp8blk") == 0) {
        /* the kernel the fp8blk module runs on cc 9.0 follows MEMRA_FP8BLK_WGMMA (fp8blk_ops.c) */
        const char *v = g_bench_rt ? memra_config_value(g_bench_rt, "MEMRA_FP8BLK_WGMMA") : NULL;
        if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0 || strcmp(v, "tma") == 0)
            return "memra fp8blk, wgmma 128x256 on tensor maps, warp-specialised (sm_90a)";
        if (strcmp(v, "mbwide") == 0) return "memra fp8blk, wgmma 128x128 / 128x256 by shape (sm_90a)";
        if (strcmp(v, "mb") == 0) return "memra fp8blk, wgmma 128x128 (sm_90a)";
        if (strcmp(v, "wide") == 0) return "memra fp8blk, wgmma 128x256 (sm_90a)";
        if (strcmp(v, "bar") == 0) return "memra fp8blk, wgmma 128x128, CTA barriers (sm_90a)";
        return "memra fp8blk_gemm, e4m3 mma.sync (sm_90a: f16 HMMA)";
    }
    if (strcmp(module, "sm90") == 0) return "cuBLASLt block-scaled FP8 (VEC128 x BLK128x128)";
    if (strcmp(module, "host") == 0) return "host reference";
    return "the module's own";
}

/* The rate of one call of the op: FLOP/s for a GEMM, bytes moved per second
 * for the others (their work is memory traffic), scaled by magnitude. */
static const char *vs_rate(const vs_inputs *v, double ms, char *buf, size_t len)
{
    if (v->flops > 0.0) return tool_rate(v->flops / (ms * 1e-3), "FLOP/s", buf, len);
    return tool_rate(v->bytes / (ms * 1e-3), "B/s", buf, len);
}

/* Time one module's op (nm = 1: the routed lane) or race two (nm = 2),
 * interleaved, on the same inputs per shape. */
static int bench_race(bench *b, const char *const *mods, int nm, memra_op op)
{
    const char *ma = mods[0], *mb = nm > 1 ? mods[1] : NULL;
    double logsum = 0.0, lograte = 0.0;
    int rc = 0, is_gemm = 1;
    if (nm > 1) {
        printf("race %s: %s vs %s on %s, m=%lld, %lld reps (spread: half the interquartile range)\n",
               memra_op_name(op), ma, mb, memra_device_caps_get(b->dev)->name, (long long)b->m, (long long)b->reps);
        for (int i = 0; i < nm; i++)
            if (lane_variant(mods[i], op)[0]) printf("  %s: %s\n", mods[i], lane_variant(mods[i], op));
        printf("%-14s %12s %8s %12s %8s %10s %15s %15s %8s %8s\n", "shape", ma, "spread", mb, "spread", "A ms/B ms",
               "A rate", "B rate", "hits A", "hits B");
    } else {
        printf("lane %s: served by %s%s%s on %s, m=%lld, %lld reps (spread: half the interquartile range)\n",
               memra_op_name(op), ma, lane_variant(ma, op)[0] ? ": " : "", lane_variant(ma, op),
               memra_device_caps_get(b->dev)->name, (long long)b->m, (long long)b->reps);
        printf("%-14s %12s %8s %15s %10s\n", "shape", "median", "spread", "rate", "hits");
    }
    tool_progress pg;
    tool_progress_begin(&pg, "memra bench", b->nshapes * (size_t)(b->reps + b->warmup));
    for (size_t s = 0; s < b->nshapes; s++) {
        const int64_t k = b->sheet[s].in_f, n = b->sheet[s].out_f;
        char name[32];
        snprintf(name, sizeof name, "%lld->%lld", (long long)k, (long long)n);
        vs_inputs v;
        memra_status st = vs_make(b, op, b->m, n, k, &v);
        if (st != MEMRA_STATUS_OK) {
            tool_progress_clear(&pg);
            fprintf(stderr, "memra bench: inputs for %s at %s: %s: %s\n", memra_op_name(op), name,
                    memra_status_str(st), g_vs_reason ? g_vs_reason : memra_last_error());
            return 1;
        }
        is_gemm = v.flops > 0.0;
        double *t[2] = {calloc((size_t)b->reps, sizeof(double)), calloc((size_t)b->reps, sizeof(double))};
        uint64_t h0[2] = {0, 0}, h1[2] = {0, 0};
        for (int i = 0; i < nm; i++) h0[i] = memra_ledger_hits(b->dev, op, mods[i]);
        if (!t[0] || !t[1]) rc = 1;
        for (int64_t r = -b->warmup; r < b->reps && rc == 0; r++) {
            char what[64];
            snprintf(what, sizeof what, "%s %s %lld", name, r < 0 ? "warm-up" : "rep", (long long)(r < 0 ? -r : r + 1));
            tool_progress_step(&pg, what);
            for (int i = 0; i < nm && rc == 0; i++) {
                const int which = (int)(((r < 0 ? 0 : r) + i) % nm);
                mod_call mc = {.dev = b->dev, .module = mods[which], .op = op, .args = v.args};
                double ms = 0.0;
                st = timed(b, &ms, run_module, &mc);
                if (st != MEMRA_STATUS_OK) {
                    tool_progress_clear(&pg);
                    fprintf(stderr, "memra bench: %s/%s: %s: %s\n", mods[which], memra_op_name(op),
                            memra_status_str(st), memra_last_error());
                    rc = 1;
                } else if (r >= 0) {
                    t[which][r] = ms;
                }
            }
        }
        tool_progress_clear(&pg);
        for (int i = 0; i < nm; i++) h1[i] = memra_ledger_hits(b->dev, op, mods[i]);
        if (rc == 0) {
            double med[2] = {tool_median(t[0], (size_t)b->reps), 0.0};
            if (nm > 1) med[1] = tool_median(t[1], (size_t)b->reps);
            const double ratio = nm > 1 ? med[0] / med[1] : 1.0;
            const double work = is_gemm ? v.flops : v.bytes;
            logsum += log(ratio);
            lograte += log(work / (med[0] * 1e-3));
            char ra[32], rb[32], sa[16], sb[16];
            for (int i = 0; i < nm; i++) cmp_add(name, mods[i], t[i], b->reps);
            vs_rate(&v, med[0], ra, sizeof ra);
            tool_spread(t[0], (size_t)b->reps, sa, sizeof sa);
            if (nm > 1) {
                vs_rate(&v, med[1], rb, sizeof rb);
                tool_spread(t[1], (size_t)b->reps, sb, sizeof sb);
                printf("%-14s %9.3f ms %8s %9.3f ms %8s %9.3fx %15s %15s %8llu %8llu\n", name, med[0], sa, med[1], sb,
                       ratio, ra, rb, (unsigned long long)(h1[0] - h0[0]), (unsigned long long)(h1[1] - h0[1]));
            } else {
                printf("%-14s %9.3f ms %8s %15s %10llu\n", name, med[0], sa, ra, (unsigned long long)(h1[0] - h0[0]));
            }
            if (b->json) {
                fprintf(b->json, "%s\n{\"shape\":\"%s\",\"in_f\":%lld,\"out_f\":%lld,\"flops\":%.0f,\"bytes\":%.0f,\"arms\":[",
                        s ? "," : "", name, (long long)k, (long long)n, v.flops, v.bytes);
                for (int i = 0; i < nm; i++) {
                    double q1, q3;
                    tool_quartiles(t[i], (size_t)b->reps, &q1, &q3);
                    fprintf(b->json, "%s{\"arm\":", i ? "," : "");
                    tool_json_str(b->json, mods[i]);
                    fprintf(b->json, ",\"op\":\"%s\",\"variant\":", memra_op_name(op));
                    tool_json_str(b->json, lane_variant(mods[i], op));
                    fprintf(b->json, ",\"times_ms\":");
                    json_times(b->json, t[i], b->reps);
                    fprintf(b->json, ",\"median_ms\":%.6g,\"q1_ms\":%.6g,\"q3_ms\":%.6g,", med[i], q1, q3);
                    if (is_gemm) fprintf(b->json, "\"flops_per_s\":%.6g", v.flops / (med[i] * 1e-3));
                    else fprintf(b->json, "\"flops_per_s\":null,\"bytes_per_s\":%.6g", v.bytes / (med[i] * 1e-3));
                    fprintf(b->json, ",\"served\":[{\"op\":\"%s\",\"module\":", memra_op_name(op));
                    tool_json_str(b->json, mods[i]);
                    fprintf(b->json, ",\"hits\":%llu}]}", (unsigned long long)(h1[i] - h0[i]));
                }
                fprintf(b->json, "]");
                if (nm > 1) fprintf(b->json, ",\"ratio_a_over_b_ms\":%.6g", ratio);
                fprintf(b->json, "}");
            }
            for (int i = 0; i < nm; i++)
                if (h1[i] == h0[i]) {
                    printf("  INVALID: the ledger shows no hit for %s\n", mods[i]);
                    rc = 1;
                }
        }
        free(t[0]);
        free(t[1]);
        vs_free(&v);
        if (rc) return rc;
    }
    tool_progress_end(&pg);
    const double gm = exp(logsum / (double)b->nshapes), grate = exp(lograte / (double)b->nshapes);
    char gr[32];
    tool_rate(grate, is_gemm ? "FLOP/s" : "B/s", gr, sizeof gr);
    if (nm > 1) {
        printf("geometric mean of %s ms / %s ms over %zu shapes: %.3fx (%s %s)\n", ma, mb, b->nshapes, gm, mb,
               gm >= 1.0 ? "faster" : "slower");
        if (b->json) fprintf(b->json, "],\"geomean_ratio_a_over_b_ms\":%.6g}\n", gm);
    } else {
        printf("geometric mean over %zu shapes: %s (%s)\n", b->nshapes, gr, ma);
        if (b->json) {
            if (is_gemm) fprintf(b->json, "],\"geomean_flops_per_s\":%.6g}\n", grate);
            else fprintf(b->json, "],\"geomean_flops_per_s\":null,\"geomean_bytes_per_s\":%.6g}\n", grate);
        }
    }
    b->json_done = b->json != NULL;
    return rc;
}

/* ---- memra bench --model FILE ----------------------------------------------------- */

/* VmRSS and VmHWM of this process in bytes (/proc/self/status), 0 when unreadable. */
static void rss_read(uint64_t *rss, uint64_t *hwm)
{
    *rss = *hwm = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) *rss = kb * 1024ull;
        else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) *hwm = kb * 1024ull;
    }
    fclose(f);
}

typedef struct model_class {
    size_t tensors;
    double flops;
    uint64_t bytes;    /* the tensors' file bytes */
    uint64_t obytes;   /* their device operand bytes (memra_weight_plan operand_bytes) */
    double *t;         /* per rep: the sum of the class's calls */
    double median;
    ledger_snap served;
} model_class;

/* Every 2D weight of the file, in file order, through memra_matmul at m rows:
 * one prefill step. Each repetition times every projection once (b->batch
 * calls per interval, as the arms do); per class the sum of its projections
 * in that repetition; medians over the repetitions; the total is the median
 * of the per-repetition sums. */
static int bench_model(bench *b, const char *path)
{
    uint64_t rss0, hwm0, rss_open, hwm_open, rss_prep, hwm_prep, rss_end, hwm_end;
    rss_read(&rss0, &hwm0);
    memra_file *f = NULL;
    size_t *skipped = NULL;
    memra_status st = memra_file_open(path, &f);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench: %s: %s\n", memra_status_str(st), memra_last_error());
        if (b->json) fprintf(b->json, "]}\n");
        return 1;
    }
    rss_read(&rss_open, &hwm_open);
    size_t nw = tool_weights2d(f, NULL, 0);
    size_t *idx = tool_alloc(nw ? nw : 1, sizeof *idx);
    memra_weight **w = calloc(nw ? nw : 1, sizeof *w);
    tool_tclass *cls = tool_alloc(nw ? nw : 1, sizeof *cls);
    model_class mc[TOOL_TCLASS_COUNT];
    memset(mc, 0, sizeof mc);
    double *total = calloc((size_t)b->reps, sizeof(double));
    memra_buffer *bx = NULL, *by = NULL;
    float *x = NULL;
    int rc = 0;
    uint64_t file_bytes = 0, operand_bytes = 0, mirror_bytes = 0;
    int64_t max_in = 0, max_out = 0;
    if (idx == NULL || w == NULL || cls == NULL || total == NULL) {
        rc = 1;
        goto done;
    }
    tool_weights2d(f, idx, nw);
    /* the embedding and the LM head are not per-token projections: left out, named */
    size_t nkeep = 0, nskip = 0;
    skipped = tool_alloc(nw ? nw : 1, sizeof *skipped);
    if (skipped == NULL) {
        rc = 1;
        goto done;
    }
    for (size_t i = 0; i < nw; i++) {
        memra_tensor_info t;
        memra_file_tensor_get(f, idx[i], &t);
        if (tool_not_projection(t.name)) skipped[nskip++] = idx[i];
        else if (!tool_in_expert_group(f, t.name)) idx[nkeep++] = idx[i]; /* experts: timed as their groups below */
    }
    nw = nkeep;
    if (nw == 0 && memra_file_expert_group_count(f) > 0) { /* experts only: their table and receipt rows */
        char *ex = NULL;
        size_t exl = 0;
        FILE *ms = b->json ? open_memstream(&ex, &exl) : NULL;
        int efirst = 1;
        printf("model %s: %s, %zu tensors, no 2D projection; its %zu expert groups through memra_matmul_experts:\n",
               path, memra_file_describe(f), memra_file_tensor_count(f), memra_file_expert_group_count(f));
        rc = tool_bench_moe_file(b->rt, b->dev, path, b->m, b->reps, tool_rng_u64(&b->rng), ms, &efirst);
        if (ms) fclose(ms);
        if (b->json && rc == 0) {
            fprintf(b->json, "],\"model\":{\"file\":");
            tool_json_str(b->json, path);
            fprintf(b->json, ",\"experts\":[%s]}}\n", ex ? ex : "");
        }
        free(ex);
        goto done;
    }
    if (nw == 0) {
        fprintf(stderr, "memra bench: %s: no 2D weight of a memra format (see 'memra model ls %s')\n", path, path);
        rc = 1;
        goto done;
    }
    for (int c = 0; c < TOOL_TCLASS_COUNT; c++)
        if ((mc[c].t = calloc((size_t)b->reps, sizeof(double))) == NULL) rc = 1;
    for (size_t i = 0; i < nw && rc == 0; i++) {
        memra_tensor_info t;
        memra_file_tensor_get(f, idx[i], &t);
        st = memra_file_weight_create(b->rt, f, t.name, &w[i]);
        if (st == MEMRA_STATUS_OK) st = memra_weight_prepare(w[i], b->dev);
        if (st != MEMRA_STATUS_OK) {
            fprintf(stderr, "memra bench: %s: %s: %s\n", t.name, memra_status_str(st), memra_last_error());
            rc = 1;
            break;
        }
        memra_weight_plan p = {.struct_size = sizeof p};
        if (memra_weight_plan_get(w[i], b->dev, &p) == MEMRA_STATUS_OK) operand_bytes += p.operand_bytes;
        cls[i] = tool_tclass_of(t.name);
        mc[cls[i]].obytes += p.operand_bytes;
        if (memra_weight_operands(w[i], b->dev) & MEMRA_OPERAND_F16_MIRROR)
            mirror_bytes += (uint64_t)t.shape[0] * (uint64_t)t.shape[1] * 2u;
        mc[cls[i]].tensors++;
        mc[cls[i]].flops += 2.0 * (double)b->m * (double)t.shape[0] * (double)t.shape[1];
        mc[cls[i]].bytes += t.bytes;
        file_bytes += t.bytes;
        if (t.shape[1] > max_in) max_in = t.shape[1];
        if (t.shape[0] > max_out) max_out = t.shape[0];
    }
    if (rc) goto done;
    rss_read(&rss_prep, &hwm_prep);
    /* x is made and written a 1 MiB chunk at a time (the same values as one fill: the generator runs in order),
     * so the host holds no m x in_f copy of it beside the file's pages (the bench's RSS bound) */
    const size_t xn = (size_t)(b->m * max_in), chunk = (size_t)1 << 18;
    x = tool_alloc(xn < chunk ? xn : chunk, sizeof(float));
    if (x == NULL) {
        rc = 1;
        goto done;
    }
    st = tool_upload(b->dev, NULL, xn * sizeof(float), &bx);
    for (size_t at = 0; st == MEMRA_STATUS_OK && at < xn; at += chunk) {
        const size_t nb = xn - at < chunk ? xn - at : chunk;
        tool_fill_x(&b->rng, x, nb);
        st = memra_buffer_write(bx, at * sizeof(float), x, nb * sizeof(float));
    }
    if (st == MEMRA_STATUS_OK) st = memra_buffer_create(b->dev, (size_t)(b->m * max_out) * sizeof(float), &by);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench: buffers: %s: %s\n", memra_status_str(st), memra_last_error());
        rc = 1;
        goto done;
    }
    printf("model %s: %s, %zu tensors, %zu 2D projections (%.1f MiB), m=%lld\n", path, memra_file_describe(f),
           memra_file_tensor_count(f), nw, (double)file_bytes / 1048576.0, (long long)b->m);
    for (size_t i = 0; i < nskip; i++) {
        memra_tensor_info t;
        memra_file_tensor_get(f, skipped[i], &t);
        printf("  not timed: %s (%s)\n", t.name, tool_not_projection(t.name));
    }
    tool_progress pg;
    tool_progress_begin(&pg, "memra bench", (size_t)(b->reps + b->warmup));
    for (int64_t r = -b->warmup; r < b->reps && rc == 0; r++) {
        char what[64];
        snprintf(what, sizeof what, "%s %lld of %zu projections", r < 0 ? "warm-up" : "rep", (long long)(r < 0 ? -r : r + 1),
                 nw);
        tool_progress_step(&pg, what);
        for (size_t i = 0; i < nw && rc == 0; i++) {
            mm_call call = {.dev = b->dev, .w = w[i], .x = memra_buffer_ptr(bx), .y = memra_buffer_ptr(by),
                            .m = (int32_t)b->m};
            ledger_snap s0, s1;
            if (r >= 0) snap(b, &s0);
            double ms = 0.0;
            st = timed(b, &ms, run_matmul, &call);
            if (st != MEMRA_STATUS_OK) {
                fprintf(stderr, "memra bench: memra_matmul on tensor %zu: %s: %s\n", idx[i], memra_status_str(st),
                        memra_last_error());
                rc = 1;
                break;
            }
            if (r < 0) continue;
            snap(b, &s1);
            snap_add_delta(b, &s0, &s1, &mc[cls[i]].served);
            mc[cls[i]].t[r] += ms;
            total[r] += ms;
        }
    }
    tool_progress_end(&pg);
    rss_read(&rss_end, &hwm_end);
    if (rc) goto done;
    double flops_all = 0.0;
    printf("%-8s %8s %12s %10s %8s %15s  %s\n", "class", "tensors", "MiB", "median ms", "spread", "rate", "served");
    for (int c = 0; c < TOOL_TCLASS_COUNT; c++) {
        if (mc[c].tensors == 0) continue;
        mc[c].median = tool_median(mc[c].t, (size_t)b->reps);
        flops_all += mc[c].flops;
        char rate[32], spread[16];
        cmp_add(tool_tclass_name((tool_tclass)c), "matmul", mc[c].t, b->reps);
        printf("%-8s %8zu %12.1f %10.3f %8s %15s  ", tool_tclass_name((tool_tclass)c), mc[c].tensors,
               (double)mc[c].bytes / 1048576.0, mc[c].median, tool_spread(mc[c].t, (size_t)b->reps, spread, sizeof spread),
               tool_rate(mc[c].flops / (mc[c].median * 1e-3), "FLOP/s", rate, sizeof rate));
        arm_result ar;
        memset(&ar, 0, sizeof ar);
        ar.served = mc[c].served;
        print_served(b, &ar, 0, stdout, 0);
        printf("\n");
        int any = 0;
        for (int o = 0; o < MEMRA_OP_COUNT_; o++)
            for (int i = 0; i < b->nmods; i++) any |= mc[c].served.h[o][i] != 0;
        if (!any) {
            printf("  INVALID: the ledger shows nothing served class %s\n", tool_tclass_name((tool_tclass)c));
            rc = 1;
        }
    }
    const double tmed = tool_median(total, (size_t)b->reps);
    char trate[32], tspread[16];
    cmp_add("total", "matmul", total, b->reps);
    printf("%-8s %8zu %12.1f %10.3f %8s %15s\n", "total", nw, (double)file_bytes / 1048576.0, tmed,
           tool_spread(total, (size_t)b->reps, tspread, sizeof tspread),
           tool_rate(flops_all / (tmed * 1e-3), "FLOP/s", trate, sizeof trate));
    printf("device operands %.1f MiB, %.2fx the weights' file bytes (f16 mirrors %.1f MiB); host RSS before open "
           "%.1f MiB, after open %.1f, after prepare %.1f, at the end %.1f, peak %.1f (file %.1f MiB)\n",
           (double)operand_bytes / 1048576.0, file_bytes ? (double)operand_bytes / (double)file_bytes : 0.0,
           (double)mirror_bytes / 1048576.0, (double)rss0 / 1048576.0,
           (double)rss_open / 1048576.0, (double)rss_prep / 1048576.0, (double)rss_end / 1048576.0,
           (double)hwm_end / 1048576.0, (double)file_bytes / 1048576.0);
    /* the expert groups (MoE) through memra_matmul_experts beside a per-expert loop */
    char *ex = NULL;
    size_t exl = 0;
    if (rc == 0 && memra_file_expert_group_count(f) > 0) {
        FILE *ms = b->json ? open_memstream(&ex, &exl) : NULL;
        int efirst = 1;
        printf("expert groups (memra_matmul_experts beside a loop of per-expert memra_matmul):\n");
        rc = tool_bench_moe_file(b->rt, b->dev, path, b->m, b->reps, tool_rng_u64(&b->rng), ms, &efirst);
        if (ms) fclose(ms);
    }
    if (b->json && rc == 0) {
        FILE *j = b->json;
        /* the classes as shape rows (one arm, "matmul"), so a reader of the
         * sheet receipts reads them; the total last */
        int first = 1;
        for (int c = 0; c <= TOOL_TCLASS_COUNT; c++) {
            const int tot = c == TOOL_TCLASS_COUNT;
            if (!tot && mc[c].tensors == 0) continue;
            const double fl = tot ? flops_all : mc[c].flops, med = tot ? tmed : mc[c].median;
            fprintf(j, "%s\n{\"shape\":\"%s\",\"class\":\"%s\",\"tensors\":%zu,\"bytes\":%llu,\"operand_bytes\":%llu,"
                       "\"flops\":%.0f,\"arms\":[{\"arm\":\"matmul\",\"op\":null,\"times_ms\":",
                    first ? "" : ",", tot ? "total" : tool_tclass_name((tool_tclass)c),
                    tot ? "total" : tool_tclass_name((tool_tclass)c), tot ? nw : mc[c].tensors,
                    (unsigned long long)(tot ? file_bytes : mc[c].bytes),
                    (unsigned long long)(tot ? operand_bytes : mc[c].obytes), fl);
            json_times(j, tot ? total : mc[c].t, b->reps);
            double q1, q3;
            tool_quartiles(tot ? total : mc[c].t, (size_t)b->reps, &q1, &q3);
            fprintf(j, ",\"q1_ms\":%.6g,\"q3_ms\":%.6g", q1, q3);
            fprintf(j, ",\"median_ms\":%.6g,\"flops_per_s\":%.6g,\"valid\":true,\"served\":[", med, fl / (med * 1e-3));
            if (!tot) {
                arm_result ar;
                memset(&ar, 0, sizeof ar);
                ar.served = mc[c].served;
                print_served(b, &ar, 0, j, 1);
            }
            fprintf(j, "]}]}");
            first = 0;
        }
        fprintf(j, "],\"model\":{\"file\":");
        tool_json_str(j, path);
        fprintf(j, ",\"not_timed\":[");
        for (size_t i = 0; i < nskip; i++) {
            memra_tensor_info t;
            memra_file_tensor_get(f, skipped[i], &t);
            fprintf(j, "%s{\"tensor\":", i ? "," : "");
            tool_json_str(j, t.name);
            fprintf(j, ",\"why\":");
            tool_json_str(j, tool_not_projection(t.name));
            fprintf(j, "}");
        }
        fprintf(j, "],\"experts\":[%s]", ex ? ex : "");
        fprintf(j, ",\"kind\":");
        tool_json_str(j, memra_file_describe(f));
        fprintf(j, ",\"tensors\":%zu,\"projections\":%zu,\"file_bytes\":%llu,\"operand_bytes\":%llu,"
                   "\"f16_mirror_bytes\":%llu,\"rss\":{\"before_open\":%llu,\"after_open\":%llu,\"after_prepare\":%llu,"
                   "\"end\":%llu,\"peak\":%llu,\"source\":\"/proc/self/status VmRSS, VmHWM\"}}}\n",
                memra_file_tensor_count(f), nw, (unsigned long long)file_bytes, (unsigned long long)operand_bytes,
                (unsigned long long)mirror_bytes, (unsigned long long)rss0, (unsigned long long)rss_open,
                (unsigned long long)rss_prep, (unsigned long long)rss_end, (unsigned long long)hwm_end);
    }
    free(ex);
done:
    if (rc && b->json) fprintf(b->json, "]}\n");
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    free(x);
    for (size_t i = 0; w && i < nw; i++) memra_weight_destroy(w[i]);
    for (int c = 0; c < TOOL_TCLASS_COUNT; c++) free(mc[c].t);
    free(w);
    free(idx);
    free(skipped);
    free(cls);
    free(total);
    memra_file_close(f);
    return rc;
}

/* ---- the command ------------------------------------------------------------------ */

static const char k_bench_usage[] =
    "usage: memra bench [27b|1p7b] [--sheet 27b|1p7b] [--m M] [--reps R] [--warmup W] [--batch N]\n"
    "                   [--device N|host|all] [--json FILE|-] [--seed S] [--compare OLD.json] [--quiet]\n"
    "       memra bench OP [27b|1p7b] [--vs [MODA MODB]] [options above]   (e.g. gemm_fp8_blk)\n"
    "       memra bench --vs MODA MODB --op OP [options above]\n"
    "       memra bench accprobe ...   ('memra bench accprobe --help')\n"
    "       memra bench moe ...        the MoE sheet: grouped experts vs a per-expert loop ('memra bench moe --help')\n"
    "       memra bench --model FILE [--m M] [--reps R] [--warmup W] [--batch N] [--device N|host] [--json FILE|-]\n"
    "  Arms f16 (Q8_0 + f16 mirror), mmq (Q8_0, no mirror), fp8 (E4M3 per-tensor), fp8blk\n"
    "  (E4M3 + block-128 grid) and q4_0 / q4_k / q5_k / q6_k (that format, no mirror: the\n"
    "  integer floor only; valid when no dequant_f16 ran) through memra_matmul, interleaved in\n"
    "  each repetition; medians, FLOP/s, ratios to f16 and their geometric mean; the ledger\n"
    "  says which module served.\n"
    "  On a GPU, 27b at m = 512 or 4096, the mmq (Q8_0), q4_0 and K-quant rows quote GGML's CUDA\n"
    "  MUL_MAT times on the H200 (ggml d99724f2) beside them, with the ratio and its geometric\n"
    "  mean (quoted, not measured in this run).\n"
    "  The mmq arm counts when gemm_q8_0r (the Q8_0 weight repacked for the integer kernel) or\n"
    "  gemm_q8_0 (the Q8_0 blocks as stored) served it, and says which. The 'mmq split' line\n"
    "  times the activation quantiser (quant_q8_1) and both GEMMs apart, interleaved, with their\n"
    "  ratio; a GEMM the device lacks is left out with the reason.\n"
    "  --vs races two modules' implementations of one op via memra_module_call ('--vs A B'\n"
    "  or '--vs=A,B').\n"
    "  'memra bench OP' (or --op OP) times the routed lane of OP (the first module that serves\n"
    "  it) per shape and says which module/variant served it; with --vs and no names it races\n"
    "  the first two modules that provide OP on the device (= --vs A B --op OP).\n"
    "  --device all runs every CUDA device (the host only when there is none) one after the\n"
    "  other on the same inputs; the receipt (version 3) carries each device's figures in\n"
    "  \"per_device\".\n"
    "  --batch N times N calls back to back per interval and divides (steady-state throughput;\n"
    "  default 1: each call alone, host launch time included).\n"
    "  --json FILE writes the receipt ('-': to stdout, the table then goes to stderr).\n"
    "  --compare OLD.json: after the table, each (shape, arm) against the same one in an older\n"
    "  receipt: old and new medians, the speed (old/new) and the noise (both runs' half\n"
    "  interquartile ranges added); a speed outside 1 +- noise is called faster or slower.\n"
    "  Each median has its spread (half the interquartile range, relative); rates are scaled\n"
    "  to their magnitude (GFLOP/s, TFLOP/s; GB/s for non-GEMM ops). A progress line (step i of\n"
    "  N, elapsed, ETA) goes to stderr, rewritten in place on a terminal; --quiet: none.\n"
    "  --model FILE: every 2D projection of the file (.gguf, .safetensors, index .json) in file\n"
    "  order through memra_matmul at m rows (one prefill step), each timed alone per repetition;\n"
    "  per class (q k v o gate up down other) the median of the class's summed time, FLOP/s and\n"
    "  the modules/ops the ledger shows; the total; the device operand and f16 mirror bytes; the\n"
    "  host RSS (VmRSS/VmHWM) before open, after open, after prepare and at the peak.\n"
    "  Defaults: on a GPU 27b, m=512, reps 20, warm-up 3; on the host 1p7b, m=16, reps 3.\n";

static const struct option k_bench_opts[] = {
    {"sheet", required_argument, NULL, 'S'},  {"m", required_argument, NULL, 'm'},
    {"reps", required_argument, NULL, 'r'},   {"warmup", required_argument, NULL, 'w'},
    {"batch", required_argument, NULL, 'b'},  {"device", required_argument, NULL, 'd'},
    {"json", required_argument, NULL, 'j'},   {"seed", required_argument, NULL, 's'},
    {"vs", optional_argument, NULL, 'v'},     {"op", required_argument, NULL, 'o'},
    {"model", required_argument, NULL, 'F'},  {"compare", required_argument, NULL, 'C'},
    {"help", no_argument, NULL, 'h'}, {"quiet", no_argument, NULL, TOOL_OPT_QUIET}, {0, 0, 0, 0}};
static const tool_cmd k_bench_cmd = {"memra bench", k_bench_usage, k_bench_opts};

static int is_sheet(const char *s) { return strcmp(s, "27b") == 0 || strcmp(s, "1p7b") == 0; }

/* --op or a positional OP; two different ones are an error. */
static int set_op(const char *name, memra_op *op)
{
    const memra_op o = memra_op_from_name(name);
    if (o == MEMRA_OP_COUNT_) {
        fprintf(stderr, "memra bench: '%s' is not an op; ops:", name);
        for (int i = 0; i < MEMRA_OP_COUNT_; i++) fprintf(stderr, " %s", memra_op_name((memra_op)i));
        fprintf(stderr, "\n");
        return 2;
    }
    if (*op != MEMRA_OP_COUNT_ && *op != o) {
        fprintf(stderr, "memra bench: two ops given (%s and %s)\n", memra_op_name(*op), name);
        return 2;
    }
    *op = o;
    return 0;
}

typedef struct bench_opts {
    const char *sheet, *vs_a, *vs_b, *json_path, *model;
    int64_t m, reps, warmup, batch;
    uint64_t seed;
    int have_seed, lane, vs_auto;
    memra_op op;
} bench_opts;

/* The old receipt's arm for (shape, arm): its median and quartiles (from
 * q1_ms/q3_ms, else its times). 0 when absent. */
static int old_arm(const char *shape_name, const char *arm, double *med, double *q1, double *q3)
{
    const tool_json *shapes = tool_json_get(g_old, "shapes");
    for (size_t i = 0; i < tool_json_len(shapes); i++) {
        const tool_json *sh = tool_json_at(shapes, i);
        if (strcmp(tool_json_str_or(tool_json_get(sh, "shape"), ""), shape_name) != 0) continue;
        const tool_json *arms = tool_json_get(sh, "arms");
        for (size_t k = 0; k < tool_json_len(arms); k++) {
            const tool_json *a = tool_json_at(arms, k);
            if (strcmp(tool_json_str_or(tool_json_get(a, "arm"), ""), arm) != 0) continue;
            *med = tool_json_num_or(tool_json_get(a, "median_ms"), 0.0);
            *q1 = tool_json_num_or(tool_json_get(a, "q1_ms"), -1.0);
            *q3 = tool_json_num_or(tool_json_get(a, "q3_ms"), -1.0);
            if (*q1 < 0.0 || *q3 < 0.0) {
                const tool_json *tm = tool_json_get(a, "times_ms");
                double t[MAX_REPS];
                size_t n = 0;
                for (size_t e = 0; e < tool_json_len(tm) && n < MAX_REPS; e++) t[n++] = tool_json_num_or(tool_json_at(tm, e), 0.0);
                tool_quartiles(t, n, q1, q3);
            }
            return *med > 0.0;
        }
    }
    return 0;
}

/* --compare: per (shape, arm) of this run, the old median, the new, the speed
 * (old / new) and the noise band: the sum of the two runs' relative half
 * interquartile ranges. A speed outside 1 +- noise is a change. */
static void compare_print(void)
{
    printf("\ncompared with %s (memra %s, commit %s, host %s; speed = old ms / new ms, noise = the two runs'\n"
           "half-IQR added):\n",
           g_old_path, tool_json_str_or(tool_json_get(g_old, "memra"), "?"),
           tool_json_str_or(tool_json_get(g_old, "commit"), "?"), tool_json_str_or(tool_json_get(g_old, "host"), "?"));
    printf("%-14s %-10s %10s %10s %8s %8s  %s\n", "shape", "arm", "old ms", "new ms", "speed", "noise", "verdict");
    size_t matched = 0, faster = 0, slower = 0;
    for (size_t i = 0; i < g_ncmp; i++) {
        const cmp_row *r = &g_cmp[i];
        double om, oq1, oq3;
        if (!old_arm(r->shape, r->arm, &om, &oq1, &oq3)) {
            printf("%-14s %-10s %10s %10.3f %8s %8s  not in the old receipt\n", r->shape, r->arm, "-", r->med, "-", "-");
            continue;
        }
        matched++;
        const double speed = om / r->med;
        const double noise = 0.5 * (oq3 - oq1) / om + 0.5 * (r->q3 - r->q1) / r->med;
        const char *v = speed > 1.0 + noise ? "faster" : speed < 1.0 - noise ? "slower" : "within noise";
        if (v[0] == 'f') faster++;
        if (v[0] == 's') slower++;
        printf("%-14s %-10s %10.3f %10.3f %7.3fx %7.1f%%  %s\n", r->shape, r->arm, om, r->med, speed, 100.0 * noise, v);
    }
    printf("%zu of %zu arms matched: %zu faster, %zu slower, %zu within noise\n", matched, g_ncmp, faster, slower,
           matched - faster - slower);
}

/* Read and check OLD.json for --compare: 0, or 2 after a message. */
static int compare_load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "memra bench: --compare %s: cannot read it\n", path);
        return 2;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? 2 * cap : 1 << 20;
            char *t = realloc(text, cap);
            if (t == NULL) break;
            text = t;
        }
        const size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);
    char err[160];
    g_old = text ? tool_json_parse(text, len, err, sizeof err) : NULL;
    free(text);
    if (g_old == NULL) {
        fprintf(stderr, "memra bench: --compare %s: not JSON (%s)\n", path, text ? err : "out of memory");
        return 2;
    }
    if (strcmp(tool_json_str_or(tool_json_get(g_old, "format"), ""), "memra-bench") != 0) {
        fprintf(stderr, "memra bench: --compare %s: not a memra-bench receipt (format %s)\n", path,
                tool_json_str_or(tool_json_get(g_old, "format"), "missing"));
        tool_json_free(g_old);
        g_old = NULL;
        return 2;
    }
    g_old_path = path;
    return 0;
}

/* One device's run; its receipt (when `receipt` is set) is one memra-bench
 * object of the given version. */
/* Whether bench_one's last receipt is whole: its status may still be 1 (an INVALID arm, the run done) */
static int g_receipt_whole;

static int bench_one(memra_runtime *rt, int di, const bench_opts *o, FILE *receipt, int version)
{
    bench b;
    int rc = 0;
    const char *sheet = o->sheet, *vs_a = o->vs_a, *vs_b = o->vs_b, *json = o->json_path, *model = o->model;
    const int64_t m = o->m, reps = o->reps, warmup = o->warmup, batch = o->batch;
    const memra_op op = o->op;
    const int lane = o->lane, vs_auto = o->vs_auto;
    memset(&b, 0, sizeof b);
    b.rt = rt;
    b.version = version;
    b.dev = memra_device_get(rt, di);
    b.gpu = memra_device_caps_get(b.dev)->arch != MEMRA_ARCH_HOST;
    if (sheet == NULL) sheet = model ? "model" : b.gpu ? "27b" : "1p7b";
    b.sheet_name = sheet;
    b.sheet = strcmp(sheet, "27b") == 0 ? k_27b : k_1p7b;
    b.nshapes = strcmp(sheet, "27b") == 0 ? sizeof k_27b / sizeof k_27b[0] : sizeof k_1p7b / sizeof k_1p7b[0];
    b.m = m ? m : b.gpu ? 512 : 16;
    b.reps = reps ? reps : b.gpu ? 20 : 3;
    b.warmup = warmup >= 0 ? warmup : b.gpu ? 3 : 0;
    b.batch = batch;
    tool_rng_seed(&b.rng, o->have_seed ? o->seed : tool_clock_seed());
    for (int i = 0; i < memra_module_count(rt) && b.nmods < MAX_MODS; i++) {
        memra_module_info mi;
        if (memra_module_info_get(rt, i, &mi) == MEMRA_STATUS_OK && mi.loaded) b.mods[b.nmods++] = mi.name;
    }
    if (vs_auto || (lane && vs_a == NULL)) {
        const char *names[2] = {NULL, NULL};
        const int have = memra_routing_get(b.dev, op, names, 2);
        if (have < (vs_auto ? 2 : 1)) {
            fprintf(stderr, "memra bench: %s is served by %d module(s) on this device; %s\n", memra_op_name(op), have,
                    vs_auto ? "--vs needs two (name them with --vs A B)" : "nothing to time");
            rc = 2;
            return rc;
        }
        vs_a = names[0];
        vs_b = vs_auto ? names[1] : NULL;
    }
    if (vs_a) {
        for (int i = 0; i < (vs_b ? 2 : 1); i++) {
            const char *mn = i ? vs_b : vs_a;
            if (!memra_module_provides(b.dev, mn, op)) {
                /* which: refused, not found, not admitted here, or without the op */
                const char *why = NULL, *path = "";
                int found = 0, loaded = 0;
                for (int mi = 0; mi < memra_module_count(rt); mi++) {
                    memra_module_info inf;
                    if (memra_module_info_get(rt, mi, &inf) != MEMRA_STATUS_OK || strcmp(inf.name, mn) != 0) continue;
                    found = 1;
                    loaded |= inf.loaded;
                    if (!inf.loaded) {
                        why = inf.reason;
                        path = inf.path;
                    }
                }
                if (!found)
                    fprintf(stderr, "memra bench: no module named '%s' was found (see 'memra info')\n", mn);
                else if (!loaded)
                    fprintf(stderr, "memra bench: module '%s' (%s) was refused: %s\n", mn, path, why ? why : "");
                else if (memra_module_score(b.dev, mn) <= 0)
                    fprintf(stderr, "memra bench: module '%s' is loaded but not admitted on %s (score 0 here)\n", mn,
                            memra_device_caps_get(b.dev)->name);
                else
                    fprintf(stderr, "memra bench: module '%s' does not provide %s\n", mn, memra_op_name(op));
                rc = 2;
                return rc;
            }
        }
    }
    const memra_device_caps *caps = memra_device_caps_get(b.dev);
    if (model != NULL) b.nshapes = 0;
    printf("memra bench: %s (%s, %d %s), sheet %s, m=%lld, reps %lld, warm-up %lld\n", caps->name, caps->profile,
           caps->sm_count, b.gpu ? "SMs" : "threads", sheet, (long long)b.m, (long long)b.reps, (long long)b.warmup);
    if (receipt != NULL) {
        b.json = receipt;
        json_header(&b, model ? "model" : vs_b ? "vs" : vs_a ? "lane" : "arms");
    }
    memra_status st = memra_timer_create(b.dev, &b.timer);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra bench: timer: %s: %s\n", memra_status_str(st), memra_last_error());
        rc = 1;
    } else {
        const char *race[2] = {vs_a, vs_b};
        rc = model ? bench_model(&b, model) : vs_a ? bench_race(&b, race, vs_b ? 2 : 1, op) : bench_arms(&b);
    }
    memra_timer_destroy(b.timer);
    if (rc == 0 && g_old != NULL) compare_print();
    g_ncmp = 0;
    if (b.json && rc != 0 && !b.json_done) {
        if (model == NULL) fprintf(b.json, "]}\n"); /* close what was opened; the receipt says it is partial */
        fprintf(stderr, "memra bench: the receipt %s is incomplete\n", json);
    }
    g_receipt_whole = b.json == NULL || b.json_done || (model != NULL && rc == 0);
    return rc;
}

/* --device all: every CUDA device (the host device only when there is no
 * other), one after the other on the same inputs. The receipt (version 4) is
 * the first device's object, as in version 2, with "per_device": every
 * device's object in device order, each with "device_index". */
static int bench_all(memra_runtime *rt, const bench_opts *o, FILE *receipt)
{
    int idx[64], n = 0;
    for (int d = 0; d < memra_device_count(rt) && n < 64; d++)
        if (memra_device_caps_get(memra_device_get(rt, d))->ordinal >= 0) idx[n++] = d;
    if (n == 0) idx[n++] = memra_device_count(rt) - 1;
    char *text[64] = {NULL};
    size_t len[64] = {0};
    int rc = 0, whole = 1; /* a device whose run ended with an INVALID arm (status 1, receipt whole) goes on */
    for (int i = 0; i < n && whole; i++) {
        FILE *f = receipt ? open_memstream(&text[i], &len[i]) : NULL;
        if (receipt && f == NULL) {
            fprintf(stderr, "memra bench: open_memstream: out of memory\n");
            rc = 1, whole = 0;
            break;
        }
        if (i) printf("\n");
        const int r = bench_one(rt, idx[i], o, f, 4);
        if (f) fclose(f);
        rc |= r;
        whole = r == 0 || g_receipt_whole;
    }
    if (receipt != NULL && whole) {
        /* the first object without its closing brace, then the section */
        size_t l = len[0];
        while (l > 0 && (text[0][l - 1] == '\n' || text[0][l - 1] == ' ')) l--;
        if (l > 0 && text[0][l - 1] == '}') l--;
        fwrite(text[0], 1, l, receipt);
        fprintf(receipt, ",\"per_device\":[");
        for (int i = 0; i < n; i++) {
            size_t k = len[i];
            while (k > 0 && (text[i][k - 1] == '\n' || text[i][k - 1] == ' ')) k--;
            if (k > 0 && text[i][k - 1] == '}') k--;
            fprintf(receipt, "%s", i ? "," : "");
            fwrite(text[i], 1, k, receipt);
            fprintf(receipt, ",\"device_index\":%d}", idx[i]);
        }
        fprintf(receipt, "]}\n");
    } else if (receipt != NULL) {
        fprintf(stderr, "memra bench: --device all stopped at a failing device; no receipt written\n");
    }
    for (int i = 0; i < n; i++) free(text[i]);
    return rc;
}

int memra_tool_bench(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "accprobe") == 0) return memra_tool_bench_accprobe(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "moe") == 0) return memra_tool_bench_moe(argc - 1, argv + 1);
    const char *sheet = NULL, *json = NULL, *vs_a = NULL, *vs_b = NULL, *model = NULL;
    char vs_buf[128];
    int64_t m = 0, reps = 0, warmup = -1, dev_sel = -1, batch = 1;
    memra_op op = MEMRA_OP_COUNT_;
    uint64_t seed = 0;
    int have_seed = 0, vs = 0, o, rc = 0, all_devices = 0;
    const tool_cmd *c = &k_bench_cmd;
    while ((o = tool_opt_next(c, argc, argv, &rc)) != TOOL_OPT_END) {
        switch (o) {
        case TOOL_OPT_EXIT: return rc;
        case 'S':
            if (!is_sheet(optarg)) {
                fprintf(stderr, "memra bench: --sheet wants 27b or 1p7b, not '%s'\n", optarg);
                return 2;
            }
            sheet = optarg;
            break;
        case 'm': rc = tool_opt_i64(c, "--m", optarg, 1, 1 << 20, &m); break;
        case 'r': rc = tool_opt_i64(c, "--reps", optarg, 1, MAX_REPS, &reps); break;
        case 'w': rc = tool_opt_i64(c, "--warmup", optarg, 0, MAX_REPS, &warmup); break;
        case 'b': rc = tool_opt_i64(c, "--batch", optarg, 1, 1000, &batch); break;
        case 'd':
            if (strcmp(optarg, "all") == 0) all_devices = 1;
            else rc = tool_opt_device(c, optarg, 0, &dev_sel);
            break;
        case 'j': json = optarg; break;
        case 's':
            rc = tool_opt_u64(c, "--seed", optarg, &seed);
            have_seed = 1;
            break;
        case 'o': rc = set_op(optarg, &op); break;
        case 'F': model = optarg; break;
        case 'C': rc = compare_load(optarg); break;
        case 'v':
            vs = 1;
            if (optarg != NULL) { /* --vs=A,B */
                char *comma;
                snprintf(vs_buf, sizeof vs_buf, "%s", optarg);
                if ((comma = strchr(vs_buf, ',')) == NULL || comma == vs_buf || comma[1] == '\0' ||
                    strchr(comma + 1, ',') != NULL) {
                    fprintf(stderr, "memra bench: --vs=%s: want two module names, --vs=MODA,MODB\n", optarg);
                    return 2;
                }
                *comma = '\0';
                vs_a = vs_buf;
                vs_b = comma + 1;
            }
            break;
        default: return 2;
        }
        if (rc != 0) return rc;
    }
    /* positional: a sheet, the op of 'memra bench OP', the modules of --vs A B */
    for (int i = optind; i < argc; i++) {
        const char *a = argv[i];
        if (is_sheet(a)) {
            sheet = a;
        } else if (memra_op_from_name(a) != MEMRA_OP_COUNT_) {
            if (set_op(a, &op) != 0) return 2;
        } else if (vs && vs_b == NULL) {
            if (vs_a == NULL) vs_a = a;
            else vs_b = a;
        } else {
            fprintf(stderr, "memra bench: '%s' is not a sheet (27b, 1p7b)%s\n(see 'memra bench --help')\n", a,
                    vs ? ", an op or one of the two --vs modules" : " or an op");
            return 2;
        }
    }
    if (vs_a != NULL && vs_b == NULL) {
        fprintf(stderr, "memra bench: --vs %s: wants two modules (--vs MODA MODB), or none with an op\n", vs_a);
        return 2;
    }
    if (vs && op == MEMRA_OP_COUNT_) {
        fprintf(stderr, "memra bench: --vs needs an op (--op OP, or memra bench OP --vs)\n");
        return 2;
    }
    if (model != NULL && (vs || op != MEMRA_OP_COUNT_ || sheet != NULL)) {
        fprintf(stderr, "memra bench: --model takes no sheet, op or --vs (it times the file's own projections)\n");
        return 2;
    }
    const int lane = op != MEMRA_OP_COUNT_ && vs_a == NULL, vs_auto = vs && vs_a == NULL;
    /* the module's own lines (variant, tile, JIT or embedded) belong in the report */
    if (op == MEMRA_OP_gemm_fp8_blk && getenv("MEMRA_LOG") == NULL) setenv("MEMRA_LOG", "info", 1);
    FILE *receipt = NULL;
    if (json != NULL && tool_receipt_open(c, json, &receipt) != 0) return 2;
    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
        tool_receipt_close(c, json, receipt);
        return 1;
    }
    g_bench_rt = rt;
    bench_opts bo = {.sheet = sheet, .m = m, .reps = reps, .warmup = warmup, .batch = batch, .seed = seed,
                     .have_seed = have_seed, .vs_a = vs_a, .vs_b = vs_b, .op = op, .lane = lane, .vs_auto = vs_auto,
                     .json_path = json, .model = model};
    if (have_seed == 0) {
        bo.seed = tool_clock_seed();
        bo.have_seed = 1; /* every device of --device all draws the same inputs */
    }
    if (all_devices) {
        rc = bench_all(rt, &bo, receipt);
        goto done;
    }
    if (dev_sel >= memra_device_count(rt)) {
        fprintf(stderr, "memra bench: no device %lld (there are %d)\n", (long long)dev_sel, memra_device_count(rt));
        rc = 2;
        goto done;
    }
    if (dev_sel == -2) dev_sel = memra_device_count(rt) - 1; /* the host device is listed last */
    rc = bench_one(rt, dev_sel < 0 ? 0 : (int)dev_sel, &bo, receipt, 3);
done:
    memra_close(rt);
    tool_json_free(g_old);
    g_old = NULL;
    const int wrc = tool_receipt_close(c, json, receipt);
    return rc ? rc : wrc;
}
