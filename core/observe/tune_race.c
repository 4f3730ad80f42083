/* The race of `memra tune` (memra_tune_race): every admissible module and
 * variant of a GEMM op at one shape, each checked against the host reference
 * (core/observe/admission.c's cases) before a time counts, timed interleaved,
 * with the gain's bootstrap interval (tune_stats.c). The table the results go
 * into, its file and the routing lookup are core/routing/tune_table.c's. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/observe/admission.h"
#include "core/observe/tune_stats.h"
#include "core/routing/routing.h"

/* ---- the race ------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values, interpolated between order statistics. */
static double quantile_sorted(const double *v, int n, double q)
{
    const double pos = q * (double)(n - 1);
    const int lo = (int)pos;
    const double f = pos - (double)lo;
    return lo + 1 < n ? v[lo] * (1.0 - f) + v[lo + 1] * f : v[lo];
}

/* The judged rows of a race: at most SUB_ROWS of the m rows (the first, the
 * last and evenly spaced ones), so the host reference and the mass of a
 * 4096-row GEMM cost what 16 rows cost. The sub case borrows the full case's
 * weight and grid; its x holds the sampled rows, its output layout (ldy, the
 * untouched rows around) mirrors the full one's, filled with the same values. */
#define SUB_ROWS 16
typedef struct sub_case {
    acase c;
    int rows[SUB_ROWS];
    int n_rows;
    float *x;
} sub_case;

static int sub_build(const acase *full, int m, sub_case *s)
{
    const memra_gemm_args *g = &full->a.gemm;
    s->n_rows = m < SUB_ROWS ? m : SUB_ROWS;
    for (int i = 0; i < s->n_rows; i++) s->rows[i] = s->n_rows == 1 ? 0 : (int)((int64_t)i * (m - 1) / (s->n_rows - 1));
    s->c = *full;
    s->c.a.gemm.m = s->n_rows;
    if (m > SUB_ROWS) snprintf(s->c.shape, sizeof s->c.shape, "%.30s, 16 rows", full->shape); /* y[i, j]: i-th sampled row */
    s->x = malloc((size_t)s->n_rows * (size_t)g->k * sizeof(float));
    const int64_t ldy = g->ldy;
    s->c.out_bytes = (size_t)(s->n_rows + 2) * (size_t)ldy * sizeof(float);
    float *init = malloc(s->c.out_bytes);
    s->c.out_init = init;
    if (s->x == NULL || init == NULL) return 0;
    const float *fx = NULL;
    for (int i = 0; i < full->n_in; i++)
        if (full->in_off[i] == OFF(gemm.x)) {
            fx = full->in[i];
            s->c.in[i] = s->x;
            s->c.in_bytes[i] = (size_t)s->n_rows * (size_t)g->k * sizeof(float);
        }
    if (fx == NULL) return 0;
    for (int i = 0; i < s->n_rows; i++) memcpy(s->x + (size_t)i * g->k, fx + (size_t)s->rows[i] * g->k, (size_t)g->k * 4);
    const float *finit = full->out_init;
    for (int r = 0; r < s->n_rows + 2; r++) {
        int64_t fr = r == 0 ? 0 : r == s->n_rows + 1 ? g->m + 1 : 1 + s->rows[r - 1];
        memcpy(init + r * ldy, finit + fr * ldy, (size_t)ldy * 4);
    }
    return 1;
}

/* Map the full output's judged rows (and the rows around) into the sub layout. */
static void sub_rows(const acase *full, const sub_case *s, const float *got, float *out)
{
    const int64_t ldy = full->a.gemm.ldy, m = full->a.gemm.m;
    for (int r = 0; r < s->n_rows + 2; r++) {
        int64_t fr = r == 0 ? 0 : r == s->n_rows + 1 ? m + 1 : 1 + s->rows[r - 1];
        memcpy(out + r * ldy, got + fr * ldy, (size_t)ldy * 4);
    }
}

static void sub_free(sub_case *s)
{
    free(s->x);
    free(s->c.out_init);
    memset(s, 0, sizeof *s);
}

typedef struct arm_run {
    const memra__lane *lane;
    int variant;
    double *times; /* us per call at each repetition (reps entries) */
} arm_run;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* One sample of an arm: one untimed warm-up call (its operands in L2 or the
 * CPU caches, and any lazy set-up paid, as for every arm), then `batch`
 * calls back to back between two timer marks; *us = the interval / batch. */
static memra_status sample_arm(memra_device *dev, memra_timer *timer, const memra__lane *l, int variant, memra_op op,
                               const memra_op_args *a, int batch, memra_status *call_st, uint64_t *hits, double *us)
{
    memra__lane lane = *l;
    lane.variant = variant;
    const uint64_t h0 = atomic_load(&lane.cell->hits);
    memra_op_args ca = *a;
    memra_status cs = memra__lane_invoke(dev, &lane, op, &ca), st = MEMRA_STATUS_OK;
    double ms = 0.0;
    if (cs == MEMRA_STATUS_OK) st = memra_timer_start(timer, NULL);
    for (int b = 0; b < batch && cs == MEMRA_STATUS_OK && st == MEMRA_STATUS_OK; b++) {
        ca = *a;
        cs = memra__lane_invoke(dev, &lane, op, &ca);
    }
    if (cs == MEMRA_STATUS_OK && st == MEMRA_STATUS_OK) st = memra_timer_stop(timer, NULL);
    if (cs == MEMRA_STATUS_OK && st == MEMRA_STATUS_OK) st = memra_timer_elapsed_ms(timer, &ms);
    *hits += atomic_load(&lane.cell->hits) - h0;
    *call_st = cs;
    *us = ms * 1e3 / (double)batch;
    return st;
}

/* The half-width of an interval relative to its point, the larger side. */
static double half_width(double p, double lo, double hi)
{
    const double u = hi / p - 1.0, d = 1.0 - lo / p;
    return u > d ? u : d;
}

#define TUNE_FLOOR_MIN 0.03
#define TUNE_SAMPLE_US 500.0 /* a sample's batch is sized to take about this long */
#define TUNE_BATCH_MAX 16

memra_status memra_tune_race(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k, int reps,
                             memra_tune_result *out)
{
    if (dev == NULL || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_race: %s is NULL", dev ? "out" : "dev");
    const size_t min_size = offsetof(memra_tune_result, q1_us); /* before the quartiles were appended */
    if (out->struct_size < min_size)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_race: struct_size %u (want at least %zu)",
                           out->struct_size, min_size);
    if ((int)op < 0 || op >= MEMRA_OP_COUNT_ || !memra__tune_op(op))
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "memra_tune_race: %s is not a GEMM op", memra_op_name(op));
    if (m < 1 || n < 1 || k < 32 || k % 32 != 0 || m > (1 << 20) || n > (1 << 20) || k > (1 << 20) || reps < 1 ||
        reps > 10000)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_tune_race: m %d, n %d, k %d (a multiple of 32), reps %d out of range", m, n, k, reps);
    memra_runtime *rt = dev->rt;
    memra_tune_result res;
    memset(&res, 0, sizeof res);
    res.struct_size = sizeof res;
    res.winner = res.baseline = res.chosen = -1;
    /* The appended IN knobs, read only where the caller's struct covers them. */
    const int knobs = out->struct_size >= offsetof(memra_tune_result, reps_done);
    const double budget_ms = knobs && out->budget_ms > 0.0 ? out->budget_ms : 0.0;
    const double target = (knobs && out->target_pct > 0.0 ? out->target_pct : 1.0) * 1e-2;
    int min_reps = knobs && out->min_reps > 0 ? out->min_reps : 5;
    min_reps = min_reps < 3 ? 3 : min_reps;
    double *const rep_us = knobs ? out->rep_us : NULL;
    const int rep_cap = knobs && out->rep_us != NULL ? out->rep_cap : 0;
    if (knobs) {
        res.budget_ms = out->budget_ms, res.target_pct = out->target_pct, res.min_reps = out->min_reps;
        res.rep_us = out->rep_us, res.rep_cap = out->rep_cap;
    }
    const double t_setup = now_ms();
    double *twin = calloc((size_t)reps, sizeof *twin);
    if (twin == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
    memra__snapshot *s = memra__snapshot_acquire(dev);
    if (s == NULL) {
        free(twin);
        return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "no routing on %s", dev->label);
    }
    memra_device *host = rt->devices[rt->n_devices - 1];
    memra__modrec *href = memra__host_rec(rt);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    acase c, run;
    memra_status st = MEMRA_STATUS_OK;
    void *ref = NULL, *got = NULL;
    memra_dptr bufs[MEMRA__ACASE_MAX_IN] = {0}, ob = 0;
    arm_run arms[MEMRA_TUNE_MAX_ARMS];
    int na = 0;
    memra_timer *timer = NULL;
    sub_case sub;
    void *sub_got = NULL;
    double *sub_mass = NULL;
    memset(&sub, 0, sizeof sub);
    memset(&c, 0, sizeof c);
    if (href == NULL || !memra__acase_gemm(((uint64_t)ts.tv_nsec << 16) ^ (uint64_t)ts.tv_sec, op, m, n, k, &c)) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race: inputs");
        goto done;
    }
    run = c;
    const int q8 = op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
    if (q8 && !memra__acase_operands(host, href, &c, &run)) {
        st = MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "memra_tune_race: the host could not make the q8 operands");
        goto done_case;
    }
    got = malloc(c.out_bytes);
    const char *dwhy = NULL;
    if (got == NULL || !sub_build(&c, m, &sub)) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race: outputs");
        goto done_ops;
    }
    /* The host reference (and the judge's mass) on the sampled rows only. */
    acase subrun = sub.c;
    const int subq8 = q8 && memra__acase_operands(host, href, &sub.c, &subrun);
    ref = malloc(sub.c.out_bytes);
    sub_got = malloc(sub.c.out_bytes);
    if ((q8 && !subq8) || ref == NULL || sub_got == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
    else st = memra__acase_run(host, href, &subrun, ref, &dwhy, -1);
    if (subq8) memra__acase_operands_free(&sub.c, &subrun);
    if (st != MEMRA_STATUS_OK) goto done_ops;
    /* The judge's mass, made once for every arm (16 rows x n x k: on the 27b sheet half a
     * second each time it is remade). */
    sub_mass = memra__acase_mass(&sub.c);
    if (sub_mass == NULL) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race: mass");
        goto done_ops;
    }
    sub.c.mass = sub_mass;
    /* Inputs and output on the device, once. */
    memra_op_args a = run.a;
    a.struct_size = sizeof a;
    for (int i = 0; i < run.n_in && st == MEMRA_STATUS_OK; i++) {
        st = memra__dev_alloc(dev, run.in_bytes[i], &bufs[i]);
        if (st == MEMRA_STATUS_OK) st = memra__dev_upload(dev, bufs[i], run.in[i], run.in_bytes[i]);
        memcpy((char *)&a + run.in_off[i], &bufs[i], sizeof(memra_dptr));
    }
    if (st == MEMRA_STATUS_OK) st = memra__dev_alloc(dev, run.out_bytes, &ob);
    memcpy((char *)&a + run.out_off, &ob, sizeof ob);
    if (st == MEMRA_STATUS_OK) st = memra_timer_create(dev, &timer);
    if (st != MEMRA_STATUS_OK) goto done_ops;
    /* The arms: every lane (score order), its default then each variant. */
    for (int l = 0; l < s->n_lanes[op] && na < MEMRA_TUNE_MAX_ARMS; l++) {
        size_t nv = 0;
        memra__variants(s->lanes[op][l].mod, dev, op, &nv);
        for (int v = -1; v < (int)nv && na < MEMRA_TUNE_MAX_ARMS; v++) {
            memra_tune_arm *ar = &res.arms[na];
            const memra__lane *lane = &s->lanes[op][l];
            snprintf(ar->module, sizeof ar->module, "%s", lane->mod->name);
            if (v >= 0) {
                size_t nv2 = 0;
                const memra_variant *vl = memra__variants(lane->mod, dev, op, &nv2);
                snprintf(ar->variant, sizeof ar->variant, "%s", vl[v].name);
            }
            arms[na] = (arm_run){.lane = lane, .variant = v, .times = calloc((size_t)reps, sizeof(double))};
            if (arms[na].times == NULL) {
                st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
                goto done_arms;
            }
            na++;
        }
    }
    res.n_arms = na;
    /* Check each arm first: its result must match the host before a time counts. */
    for (int i = 0; i < na; i++) {
        memra_tune_arm *ar = &res.arms[i];
        memra__lane lane = *arms[i].lane;
        lane.variant = arms[i].variant;
        uint64_t h0 = atomic_load(&lane.cell->hits);
        memra_status cs = memra__dev_upload(dev, ob, run.out_init, run.out_bytes);
        memra_op_args ca = a;
        if (cs == MEMRA_STATUS_OK) cs = memra__lane_invoke(dev, &lane, op, &ca);
        if (cs == MEMRA_STATUS_OK) cs = memra__dev_download(dev, got, ob, run.out_bytes);
        ar->hits = atomic_load(&lane.cell->hits) - h0;
        char why[200];
        if (cs == MEMRA_STATUS_DECLINED) snprintf(ar->verdict, sizeof ar->verdict, "declined: %.180s", ca.decline_reason);
        else if (cs != MEMRA_STATUS_OK)
            snprintf(ar->verdict, sizeof ar->verdict, "error: %s: %.150s", memra_status_str(cs), memra_last_error());
        else if (sub_rows(&c, &sub, got, sub_got), !memra__acase_judge(&sub.c, sub_got, ref, why, sizeof why))
            snprintf(ar->verdict, sizeof ar->verdict, "wrong: %.180s", why);
        else {
            ar->ok = 1;
            snprintf(ar->verdict, sizeof ar->verdict, "ok");
        }
    }
    memra__clear_error();
    res.setup_ms = now_ms() - t_setup;
    /* The baseline: what the scores route to, the first lane whose default passed
     * (a lane that declines falls through to the next in dispatch as here). */
    for (int i = 0; i < na && res.baseline < 0; i++)
        if (res.arms[i].ok && arms[i].variant < 0) res.baseline = i;
    /* The batch: one call of each ok arm timed alone (after its check), the
     * fastest sized to about TUNE_SAMPLE_US per sample; the same for all arms. */
    double t_min = 0.0;
    for (int i = 0; i < na && st == MEMRA_STATUS_OK; i++) {
        if (!res.arms[i].ok) continue;
        memra_status cs;
        double us = 0.0;
        st = sample_arm(dev, timer, arms[i].lane, arms[i].variant, op, &a, 1, &cs, &res.arms[i].hits, &us);
        if (cs != MEMRA_STATUS_OK) {
            res.arms[i].ok = 0;
            snprintf(res.arms[i].verdict, sizeof res.arms[i].verdict, "failed while timed: %s", memra_status_str(cs));
            if (res.baseline == i) res.baseline = -1;
        } else if (us > 0.0 && (t_min == 0.0 || us < t_min)) t_min = us;
    }
    int batch = t_min > 0.0 ? (int)ceil(TUNE_SAMPLE_US / t_min) : 1;
    batch = batch < 1 ? 1 : batch > TUNE_BATCH_MAX ? TUNE_BATCH_MAX : batch;
    res.batch = batch;
    /* The slots of a repetition: every ok arm, and the baseline's twin (slot na). */
    int slots[MEMRA_TUNE_MAX_ARMS + 1], ns = 0;
    for (int i = 0; i < na; i++)
        if (res.arms[i].ok) slots[ns++] = i;
    if (res.baseline >= 0) slots[ns++] = na;
    const double t_race = now_ms();
    snprintf(res.stop, sizeof res.stop, "reps");
    int r = 0;
    for (; r < reps && st == MEMRA_STATUS_OK && ns > 1; r++) {
        for (int j = 0; j < ns && st == MEMRA_STATUS_OK; j++) {
            const int slot = slots[(j + r) % ns], i = slot == na ? res.baseline : slot;
            if (!res.arms[i].ok) continue;
            memra_status cs;
            double us = 0.0;
            st = sample_arm(dev, timer, arms[i].lane, arms[i].variant, op, &a, batch, &cs, &res.arms[i].hits, &us);
            if (st != MEMRA_STATUS_OK) break;
            if (cs != MEMRA_STATUS_OK) {
                res.arms[i].ok = 0;
                snprintf(res.arms[i].verdict, sizeof res.arms[i].verdict, "failed while timed: %s",
                         memra_status_str(cs));
                continue;
            }
            (slot == na ? twin : arms[i].times)[r] = us;
        }
        /* Stop early: after min_reps, when the intervals that decide are narrow, or the budget is spent. */
        const int done = r + 1;
        if (done < min_reps || st != MEMRA_STATUS_OK) continue;
        if (budget_ms > 0.0 && now_ms() - t_race >= budget_ms) {
            snprintf(res.stop, sizeof res.stop, "budget");
            r++;
            break;
        }
        if (res.baseline < 0 || !res.arms[res.baseline].ok || (done - min_reps) % 2 != 0) continue;
        const double *bt = arms[res.baseline].times;
        double p, lo, hi, best = 0.0, best_hw = 1.0;
        /* a coarser bootstrap (500 resamples) to decide when to stop; the verdict uses the full one */
        if (!memra__boot_gain(bt, twin, done, 500, MEMRA__BOOT_SEED, &p, &lo, &hi)) continue;
        const double self_hw = half_width(p, lo, hi);
        int any_up = 0;
        for (int i = 0; i < na; i++) {
            if (!res.arms[i].ok || i == res.baseline) continue;
            double gp, gl, gh;
            if (!memra__boot_gain(bt, arms[i].times, done, 500, MEMRA__BOOT_SEED, &gp, &gl, &gh)) continue;
            if (gh > 1.0) any_up = 1;
            if (gp > best) best = gp, best_hw = half_width(gp, gl, gh);
        }
        if (self_hw <= target && (!any_up || best_hw <= target)) {
            snprintf(res.stop, sizeof res.stop, any_up ? "narrow" : "settled: no arm above the baseline");
            r++;
            break;
        }
    }
    res.reps_done = r;
    res.race_ms = now_ms() - t_race;
    for (int i = 0; i < na; i++) {
        memra_tune_arm *ar = &res.arms[i];
        if (!ar->ok || r == 0) continue;
        double *sorted = malloc((size_t)r * sizeof *sorted);
        if (sorted == NULL) {
            st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_race");
            break;
        }
        memcpy(sorted, arms[i].times, (size_t)r * sizeof *sorted);
        qsort(sorted, (size_t)r, sizeof(double), cmp_double);
        ar->median_us = r % 2 ? sorted[r / 2] : 0.5 * (sorted[r / 2 - 1] + sorted[r / 2]);
        res.q1_us[i] = quantile_sorted(sorted, r, 0.25);
        res.q3_us[i] = quantile_sorted(sorted, r, 0.75);
        free(sorted);
        if (res.winner < 0 || ar->median_us < res.arms[res.winner].median_us) res.winner = i;
    }
    /* The verdict: gains over the baseline with their intervals, the floor from its twin. */
    res.noise_floor = TUNE_FLOOR_MIN;
    if (res.baseline >= 0 && res.arms[res.baseline].ok && r >= 2) {
        const double *bt = arms[res.baseline].times;
        if (memra__boot_gain(bt, twin, r, MEMRA__BOOT_ITERS, MEMRA__BOOT_SEED, &res.self_gain, &res.self_lo,
                             &res.self_hi)) {
            const double miss = fmax(res.self_hi - 1.0, 1.0 - res.self_lo);
            if (miss > res.noise_floor) res.noise_floor = miss;
        }
        for (int i = 0; i < na; i++) {
            if (!res.arms[i].ok) continue;
            if (!memra__boot_gain(bt, arms[i].times, r, MEMRA__BOOT_ITERS, MEMRA__BOOT_SEED, &res.gain[i],
                                  &res.gain_lo[i], &res.gain_hi[i]))
                continue;
            if (i != res.baseline && res.gain_lo[i] > 1.0 && res.gain[i] >= 1.0 + res.noise_floor &&
                (res.chosen < 0 || res.gain[i] > res.gain[res.chosen]))
                res.chosen = i;
        }
    }
    if (rep_us != NULL)
        for (int q = 0; q < r && q < rep_cap; q++)
            for (int i = 0; i <= MEMRA_TUNE_MAX_ARMS; i++) {
                double v = 0.0;
                if (i < na && res.arms[i].ok) v = arms[i].times[q];
                else if (i == MEMRA_TUNE_MAX_ARMS && res.baseline >= 0) v = twin[q];
                rep_us[(size_t)q * (MEMRA_TUNE_MAX_ARMS + 1) + (size_t)i] = v;
            }
done_arms:
    for (int i = 0; i < na; i++) free(arms[i].times);
done_ops:
    memra_timer_destroy(timer);
    for (int i = 0; i < run.n_in; i++) memra__dev_free(dev, bufs[i]);
    memra__dev_free(dev, ob);
    if (q8) memra__acase_operands_free(&c, &run);
done_case:
    free(sub_mass);
    free(ref);
    free(got);
    free(sub_got);
    sub_free(&sub);
    memra__acase_free(&c);
done:
    memra__snapshot_release(s);
    free(twin);
    if (st == MEMRA_STATUS_OK) {
        const uint32_t size = out->struct_size < sizeof res ? out->struct_size : (uint32_t)sizeof res;
        res.struct_size = out->struct_size;
        memcpy(out, &res, size);
    }
    return st;
}

