/* Shadow A/B: a candidate module runs beside the incumbent on sampled live
 * calls of one GEMM op, into its own output buffer and scratch; agreement
 * and speed are counted; promotion after N agreeing, faster samples; rollback
 * at the first mismatch.
 *
 * Host device: the sampled call runs the incumbent (timed), then, on the same
 * thread, the shadow into a private buffer (timed), then compares. The
 * caller's output is only read. Saturation: one shadow run per (device, op)
 * at a time (an atomic flag); a sampled call that finds it taken skips.
 * Judging a live call: the inputs' absolute values are not at hand, so the
 * mass of element (i, j) is estimated as sqrt(k) * max_j |y_inc[i, j]| (for
 * random-sign sums |y| ~ mass / sqrt(k)); the element passes when
 * |y_sh - y_inc| <= band * that estimate, band the op's self-check band. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "core/runtime.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int is_gemm(memra_op op)
{
    return op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 || op == MEMRA_OP_gemm_fp8 ||
           op == MEMRA_OP_gemm_fp8_blk || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
}

static double op_band(memra_op op)
{
    switch (op) {
    case MEMRA_OP_gemm_f16:
    case MEMRA_OP_gemm_bf16: return 1e-5;
    case MEMRA_OP_gemm_q8_0:
    case MEMRA_OP_gemm_q8_0r: return 2e-6;
    default: return 5e-4; /* JUDGE_BAND_FP8 (tools/judge.h) */
    }
}

static unsigned knob_u(memra_runtime *rt, const char *name, unsigned def)
{
    const char *v = memra__config_lookup(&rt->cfg, name);
    return v != NULL ? (unsigned)strtoul(v, NULL, 10) : def;
}

memra_status memra__registry_republish(memra_runtime *rt);

/* Append "op=module" to a routing list (rt->prefer or rt->disable). */
static memra_status list_append(char **list, memra_op op, const char *module)
{
    size_t l = *list ? strlen(*list) : 0;
    char *n = malloc(l + strlen(module) + 40);
    if (n == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "shadow");
    snprintf(n, l + strlen(module) + 40, "%s%s%s=%s", l ? *list : "", l ? "," : "", memra_op_name(op), module);
    free(*list);
    *list = n;
    return MEMRA_STATUS_OK;
}

/* End the shadow with `state` (caller holds reg_lock). */
static memra_status finish(memra_device *dev, memra_op op, memra_shadow_state state, const char *reason)
{
    memra_runtime *rt = dev->rt;
    memra__shadow *sh = &dev->shadow[op];
    if (!sh->active) return MEMRA_STATUS_OK;
    memra_status st = MEMRA_STATUS_OK;
    if (state == MEMRA_SHADOW_PROMOTED) st = list_append(&rt->prefer, op, sh->module);
    else if (state == MEMRA_SHADOW_ROLLED_BACK) st = list_append(&rt->disable, op, sh->module);
    if (st != MEMRA_STATUS_OK) return st;
    pthread_mutex_lock(&sh->lock);
    atomic_store(&sh->active, 0);
    sh->state = (int)state;
    snprintf(sh->reason, sizeof sh->reason, "%s", reason);
    pthread_mutex_unlock(&sh->lock);
    memra__log(state == MEMRA_SHADOW_ROLLED_BACK ? MEMRA_LOG_WARN : MEMRA_LOG_INFO, "shadow", "%s shadow %s on %s: %s: %s",
               memra_op_name(op), sh->module, dev->label,
               state == MEMRA_SHADOW_PROMOTED ? "promoted" : state == MEMRA_SHADOW_ROLLED_BACK ? "rolled back" : "stopped",
               reason);
    return memra__registry_republish(rt);
}

memra_status memra_shadow_start(memra_device *dev, memra_op op, const char *module, const char *variant)
{
    if (dev == NULL || module == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow_start: bad argument");
    if (!is_gemm(op))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow_start: %s is not a GEMM op", memra_op_name(op));
    if (!dev->is_host)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                           "memra_shadow_start: shadows run on the host device only in this version (%s)", dev->label);
    memra_runtime *rt = dev->rt;
    pthread_mutex_lock(&rt->reg_lock);
    memra__snapshot *s = memra__snapshot_acquire(dev);
    memra__modrec *r = memra__find_admitted(s, module);
    memra__shadow *sh = &dev->shadow[op];
    memra_status st = MEMRA_STATUS_OK;
    if (r == NULL) st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_shadow_start: '%s' is not admitted on %s", module, dev->label);
    else if (!memra_module_provides(dev, module, op))
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_shadow_start: '%s' does not provide %s", module, memra_op_name(op));
    else if (variant != NULL && variant[0] && memra__variant_index(r, dev, op, variant) < 0)
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_shadow_start: '%s' has no variant '%s'", module, variant);
    else if (sh->active)
        st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow_start: %s already has the shadow %s on %s",
                         memra_op_name(op), sh->module, dev->label);
    if (st == MEMRA_STATUS_OK) {
        pthread_mutex_lock(&sh->lock);
        snprintf(sh->module, sizeof sh->module, "%s", module);
        snprintf(sh->variant, sizeof sh->variant, "%s", variant ? variant : "");
        atomic_store(&sh->rate, (int)knob_u(rt, "MEMRA_SHADOW_RATE", 16));
        sh->need = (int)knob_u(rt, "MEMRA_SHADOW_AGREE", 20);
        sh->margin_pct = (int)knob_u(rt, "MEMRA_SHADOW_MARGIN_PCT", 5);
        sh->auto_promote = (int)knob_u(rt, "MEMRA_SHADOW_AUTO_PROMOTE", 1);
        atomic_store(&sh->calls, 0);
        atomic_store(&sh->samples, 0);
        atomic_store(&sh->agreements, 0);
        atomic_store(&sh->mismatches, 0);
        atomic_store(&sh->skipped, 0);
        sh->inc_us = sh->sh_us = 0.0;
        sh->incumbent[0] = sh->reason[0] = '\0';
        sh->state = MEMRA_SHADOW_WATCHING;
        atomic_store(&sh->active, 1);
        pthread_mutex_unlock(&sh->lock);
        st = memra__registry_republish(rt);
        if (st != MEMRA_STATUS_OK) atomic_store(&sh->active, 0);
        memra__snapshot *ns = memra__snapshot_acquire(dev);
        pthread_mutex_lock(&sh->lock);
        if (ns != NULL && ns->n_lanes[op] > 0) snprintf(sh->incumbent, sizeof sh->incumbent, "%s", ns->lanes[op][0].mod->name);
        pthread_mutex_unlock(&sh->lock);
        memra__snapshot_release(ns);
    }
    memra__snapshot_release(s);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

static memra_status end_by_api(memra_device *dev, memra_op op, memra_shadow_state state, const char *reason)
{
    if (dev == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow: bad argument");
    pthread_mutex_lock(&dev->rt->reg_lock);
    memra_status st = dev->shadow[op].active ? finish(dev, op, state, reason)
                                             : MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "no shadow for %s on %s",
                                                           memra_op_name(op), dev->label);
    pthread_mutex_unlock(&dev->rt->reg_lock);
    return st;
}

memra_status memra_shadow_stop(memra_device *dev, memra_op op)
{
    return end_by_api(dev, op, MEMRA_SHADOW_STOPPED, "stopped by memra_shadow_stop");
}

memra_status memra_shadow_promote(memra_device *dev, memra_op op)
{
    return end_by_api(dev, op, MEMRA_SHADOW_PROMOTED, "promoted by memra_shadow_promote");
}

memra_status memra_shadow_get(memra_device *dev, memra_op op, memra_shadow_info *out)
{
    if (dev == NULL || out == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_ || out->struct_size < sizeof *out)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow_get: bad argument");
    memra__shadow *sh = &dev->shadow[op];
    memra_shadow_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    pthread_mutex_lock(&sh->lock);
    i.state = (memra_shadow_state)sh->state;
    snprintf(i.module, sizeof i.module, "%s", sh->module);
    snprintf(i.variant, sizeof i.variant, "%s", sh->variant);
    snprintf(i.incumbent, sizeof i.incumbent, "%s", sh->incumbent);
    snprintf(i.reason, sizeof i.reason, "%s", sh->reason);
    i.calls = atomic_load(&sh->calls);
    i.samples = atomic_load(&sh->samples);
    i.agreements = atomic_load(&sh->agreements);
    i.mismatches = atomic_load(&sh->mismatches);
    i.skipped = atomic_load(&sh->skipped);
    if (i.agreements > 0) {
        i.incumbent_us = sh->inc_us / (double)i.agreements;
        i.shadow_us = sh->sh_us / (double)i.agreements;
        i.speed_ratio = i.shadow_us > 0.0 ? i.incumbent_us / i.shadow_us : 0.0;
    }
    pthread_mutex_unlock(&sh->lock);
    *out = i;
    return MEMRA_STATUS_OK;
}

/* ---- the live path ---------------------------------------------------------------- */

int memra__shadow_begin(memra_device *dev, const memra__snapshot *s, memra_op op, double *t0)
{
    memra__shadow *sh = &dev->shadow[op];
    (void)s;
    if (!dev->is_host || !atomic_load(&sh->active)) return 0;
    uint64_t c = atomic_fetch_add(&sh->calls, 1) + 1;
    const int rate = atomic_load(&sh->rate);
    if (rate > 1 && c % (uint64_t)rate != 0) return 0;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&sh->busy, &expect, 1)) {
        atomic_fetch_add(&sh->skipped, 1);
        return 0;
    }
    *t0 = now_us();
    return 1;
}

void memra__shadow_end(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args,
                       memra_status st, double t0)
{
    memra__shadow *sh = &dev->shadow[op];
    const double inc_us = now_us() - t0;
    const memra_gemm_args *g = &args->gemm;
    memra_shadow_state verdict = MEMRA_SHADOW_WATCHING;
    char reason[300] = "";
    float *buf = NULL;
    if (st != MEMRA_STATUS_OK || g->m <= 0 || g->n <= 0 || g->ldy < g->n) goto out; /* nothing to compare */
    const size_t elems = (size_t)g->m * (size_t)g->ldy;
    buf = malloc(elems * sizeof *buf);
    if (buf == NULL) goto out;
    memset(buf, 0, elems * sizeof *buf);
    memra_op_args a = *args;
    a.gemm.y = (memra_dptr)(uintptr_t)buf;
    a.gemm.y_row_offset = 0;
    const memra__lane *lane = &s->shadow[op];
    const double t1 = now_us();
    memra_status ss = memra__lane_run(dev, lane, op, &a);
    const double sh_us = now_us() - t1;
    if (lane->cell != NULL) {
        atomic_fetch_add(&lane->cell->entries, 1);
        if (ss == MEMRA_STATUS_OK) atomic_fetch_add(&lane->cell->hits, 1);
        else if (ss != MEMRA_STATUS_DECLINED) atomic_fetch_add(&lane->cell->errors, 1);
    }
    atomic_fetch_add(&sh->samples, 1);
    if (ss == MEMRA_STATUS_DECLINED) goto out; /* a lane may decline a shape: not a verdict */
    if (ss != MEMRA_STATUS_OK) {
        snprintf(reason, sizeof reason, "the shadow's %s m=%d n=%d k=%d returned %s: %.200s", memra_op_name(op), g->m,
                 g->n, g->k, memra_status_str(ss), memra_last_error());
        verdict = MEMRA_SHADOW_ROLLED_BACK;
        memra__clear_error();
        goto out;
    }
    const float *y = (const float *)(uintptr_t)g->y + g->y_row_offset * g->ldy;
    const double band = op_band(op), sk = sqrt((double)g->k);
    for (int32_t i = 0; i < g->m && verdict == MEMRA_SHADOW_WATCHING; i++) {
        double rmax = 0.0;
        for (int32_t j = 0; j < g->n; j++) rmax = fmax(rmax, fabs((double)y[(size_t)i * g->ldy + j]));
        const double mass = sk * rmax > 0.0 ? sk * rmax : 1e-30;
        for (int32_t j = 0; j < g->n; j++) {
            const double ref = y[(size_t)i * g->ldy + j], got = buf[(size_t)i * g->ldy + j];
            const double e = fabs(got - ref) / mass;
            if (!(e <= band)) {
                snprintf(reason, sizeof reason,
                         "mismatch on a live %s m=%d n=%d k=%d: y[%d,%d] = %.9g, incumbent %.9g, error %.3g > band %.2g",
                         memra_op_name(op), g->m, g->n, g->k, i, j, got, ref, e, band);
                verdict = MEMRA_SHADOW_ROLLED_BACK;
                break;
            }
        }
    }
    if (verdict == MEMRA_SHADOW_ROLLED_BACK) {
        atomic_fetch_add(&sh->mismatches, 1);
        goto out;
    }
    pthread_mutex_lock(&sh->lock);
    uint64_t agree = atomic_fetch_add(&sh->agreements, 1) + 1;
    sh->inc_us += inc_us;
    sh->sh_us += sh_us;
    const double ratio = sh->sh_us > 0.0 ? sh->inc_us / sh->sh_us : 0.0;
    if (s->n_lanes[op] > 0) snprintf(sh->incumbent, sizeof sh->incumbent, "%s", s->lanes[op][0].mod->name);
    const int promote = sh->auto_promote && agree >= (uint64_t)sh->need && ratio >= 1.0 + sh->margin_pct / 100.0;
    pthread_mutex_unlock(&sh->lock);
    if (promote) {
        snprintf(reason, sizeof reason, "%llu samples agreed and the shadow was %.2fx as fast (margin %d%%)",
                 (unsigned long long)agree, ratio, sh->margin_pct);
        verdict = MEMRA_SHADOW_PROMOTED;
    }
out:
    free(buf);
    atomic_store(&sh->busy, 0);
    if (verdict != MEMRA_SHADOW_WATCHING) {
        pthread_mutex_lock(&dev->rt->reg_lock);
        if (sh->active) finish(dev, op, verdict, reason);
        pthread_mutex_unlock(&dev->rt->reg_lock);
    }
}
