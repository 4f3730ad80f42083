/* Shadow A/B: a candidate module runs beside the incumbent on sampled live
 * calls of one GEMM op, into its own output buffer and scratch; agreement
 * and speed are counted; promotion after N agreeing, faster samples; rollback
 * at the first mismatch.
 *
 * Host device: the sampled call runs the incumbent (timed), then, on the same
 * thread, the shadow into a private buffer (timed), then compares. The
 * caller's output is only read. Saturation: one shadow run per (device, op)
 * at a time (an atomic flag); a sampled call that finds it taken skips.
 *
 * GPU: nothing waits on the host. The sampled call records ev_inc0 / ev_inc1
 * around the incumbent on the caller's stream S, then (on S) copies the
 * activation and up to 8 rows of the incumbent's output into shadow-owned
 * buffers and records ev_in. The shadow's stream waits on ev_in, runs the
 * shadow between ev_sh0 and ev_sh1 into its own output (and its own scratch:
 * the arena of its stream), copies the same rows of both outputs into pinned
 * host memory and records ev_done. A later sampled call polls ev_done
 * (cuEventQuery): done, it reads the times from the events and judges the
 * rows, then may start the next run; not done, it skips (one run in flight
 * per (device, op): the saturation rule). The activation is copied because
 * the caller may overwrite it (the next layer's quantiser writes the same
 * scratch) before the shadow reads it; the weight is the caller's own, which
 * must outlive its calls. A call on a capturing stream (cuStreamIsCapturing)
 * is never sampled (counted as skipped), so a CUDA graph capture is never
 * touched. Stream, events and buffers are made at the first sample and freed
 * (after the shadow's stream drains) at stop, promotion, rollback, the
 * shadow module's unload and memra_close; a verdict reached inside an op
 * frees them only when no run is in flight (else the next start or close).
 * Judging a live call: the inputs' absolute values are not at hand, so the
 * mass of element (i, j) is estimated as sqrt(k) * max_j |y_inc[i, j]| (for
 * random-sign sums |y| ~ mass / sqrt(k)); the element passes when
 * |y_sh - y_inc| <= band * that estimate, band the op's self-check band. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/observe/shadow.h"
#include "core/routing/routing.h"
#include "core/routing/verdict.h"

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

/* The op's band against the exact product. The live comparison has two
 * approximations on its sides (incumbent and shadow, each within the band of
 * the exact result), so judge_rows allows twice this. */
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

static void gpu_release(memra_device *dev, memra__shadow *sh, int wait);
static memra_status gpu_resolve(memra_device *dev);

/* End the shadow with `state` (caller holds reg_lock). wait: may wait for a
 * GPU run in flight before freeing its buffers (API calls; never inside an op). */
static memra_status finish(memra_device *dev, memra_op op, memra_shadow_state state, const char *reason, int wait)
{
    memra_runtime *rt = dev->rt;
    memra__shadow *sh = &dev->shadow[op];
    if (!sh->active) return MEMRA_STATUS_OK;
    memra_status st = MEMRA_STATUS_OK;
    if (state == MEMRA_SHADOW_PROMOTED) st = memra__verdict_promote(rt, op, sh->module);
    else if (state == MEMRA_SHADOW_ROLLED_BACK) st = memra__verdict_rollback(rt, op, sh->module);
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
    if (!dev->is_host) gpu_release(dev, sh, wait);
    return memra__verdict_publish(rt);
}

memra_status memra_shadow_start(memra_device *dev, memra_op op, const char *module, const char *variant)
{
    if (dev == NULL || module == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow_start: bad argument");
    if (!is_gemm(op))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_shadow_start: %s is not a GEMM op", memra_op_name(op));
    memra_runtime *rt = dev->rt;
    if (!dev->is_host) {
        memra_status gs = gpu_resolve(dev);
        if (gs != MEMRA_STATUS_OK) return gs;
    }
    pthread_mutex_lock(&rt->reg_lock);
    if (!dev->is_host && !dev->shadow[op].active) gpu_release(dev, &dev->shadow[op], 1); /* a stale one's */
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
        sh->corrupt = (int)knob_u(rt, "MEMRA_SHADOW_TEST_CORRUPT", 0);
        atomic_store(&sh->calls, 0);
        atomic_store(&sh->samples, 0);
        atomic_store(&sh->agreements, 0);
        atomic_store(&sh->mismatches, 0);
        atomic_store(&sh->skipped, 0);
        sh->inc_us = sh->sh_us = 0.0;
        sh->incumbent[0] = sh->reason[0] = '\0';
        sh->state = MEMRA_SHADOW_WATCHING;
        atomic_store(&sh->gen0, UINT64_MAX); /* no sample until the routing that carries its lane is out */
        atomic_store(&sh->active, 1);
        pthread_mutex_unlock(&sh->lock);
        st = memra__verdict_publish(rt);
        if (st != MEMRA_STATUS_OK) atomic_store(&sh->active, 0);
        memra__snapshot *ns = memra__snapshot_acquire(dev);
        if (ns != NULL) atomic_store(&sh->gen0, ns->generation);
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
    memra_status st = dev->shadow[op].active ? finish(dev, op, state, reason, 1)
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

/* ---- judging ----------------------------------------------------------------------- */

/* Judge rows of the shadow's result against the incumbent's: row i of `inc`
 * and `got` (stride ld floats) is output row rows[i] (rows NULL: i). 1 when
 * every element is within the band of the estimated mass; else 0 and why. */
static int judge_rows(memra_op op, int m, int n, int k, const int *rows, int n_rows, const float *inc, const float *got,
                      size_t ld, char *why, size_t len)
{
    const double band = 2.0 * op_band(op), sk = sqrt((double)k); /* two approximations: twice the band */
    for (int i = 0; i < n_rows; i++) {
        const float *yi = inc + (size_t)i * ld, *gi = got + (size_t)i * ld;
        double rmax = 0.0;
        for (int j = 0; j < n; j++) rmax = fmax(rmax, fabs((double)yi[j]));
        const double mass = sk * rmax > 0.0 ? sk * rmax : 1e-30;
        for (int j = 0; j < n; j++) {
            const double ref = yi[j], g = gi[j];
            const double e = fabs(g - ref) / mass;
            if (!(e <= band)) {
                snprintf(why, len,
                         "mismatch on a live %s m=%d n=%d k=%d: y[%d,%d] = %.9g, incumbent %.9g, error %.3g > band %.2g",
                         memra_op_name(op), m, n, k, rows ? rows[i] : i, j, g, ref, e, band);
                return 0;
            }
        }
    }
    return 1;
}

static memra_shadow_state agree(memra__shadow *sh, const memra__snapshot *s, memra_op op, double inc_us, double sh_us,
                                char *reason, size_t len);

/* ---- the live path ---------------------------------------------------------------- */

static int gpu_begin(memra_device *dev, const memra__snapshot *s, memra__shadow *sh, const memra_op_args *args);
static void gpu_end(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args,
                    memra_status st);

static int shadow_begin(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args,
                        double *t0)
{
    memra__shadow *sh = &dev->shadow[op];
    if (!atomic_load(&sh->active)) return 0;
    /* a call routed by a snapshot from before this shadow started: its shadow lane is not this shadow's
     * (it may be the previous shadow's module, whose result would be judged as this one's) */
    if (s->generation < atomic_load(&sh->gen0)) return 0;
    uint64_t c = atomic_fetch_add(&sh->calls, 1) + 1;
    const int rate = atomic_load(&sh->rate);
    if (rate > 1 && c % (uint64_t)rate != 0) return 0;
    if (!dev->is_host) return gpu_begin(dev, s, sh, args);
    int expect = 0;
    if (!atomic_compare_exchange_strong(&sh->busy, &expect, 1)) {
        atomic_fetch_add(&sh->skipped, 1);
        return 0;
    }
    *t0 = now_us();
    return 1;
}

static void shadow_end(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args,
                       memra_status st, double t0)
{
    memra__shadow *sh = &dev->shadow[op];
    if (!dev->is_host) {
        gpu_end(dev, s, op, args, st);
        return;
    }
    const double inc_us = now_us() - t0;
    const memra_gemm_args *g = &args->gemm;
    memra_shadow_state verdict = MEMRA_SHADOW_WATCHING;
    char reason[300] = "";
    float *buf = NULL;
    if (st != MEMRA_STATUS_OK || g->m <= 0 || g->n <= 0 || g->ldy < g->n) goto out; /* nothing to compare */
    /* a sample begun under the previous shadow (this call's snapshot predates the current one's start):
     * its lane is that shadow's module, and no verdict of it may end the current shadow */
    if (s->generation < atomic_load(&sh->gen0)) goto out;
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
    if (sh->corrupt) buf[0] += 1.0f + fabsf(y[0]);
    if (!judge_rows(op, g->m, g->n, g->k, NULL, g->m, y, buf, (size_t)g->ldy, reason, sizeof reason)) {
        verdict = MEMRA_SHADOW_ROLLED_BACK;
        atomic_fetch_add(&sh->mismatches, 1);
        goto out;
    }
    verdict = agree(sh, s, op, inc_us, sh_us, reason, sizeof reason);
out:
    free(buf);
    atomic_store(&sh->busy, 0);
    if (verdict != MEMRA_SHADOW_WATCHING) {
        pthread_mutex_lock(&dev->rt->reg_lock);
        if (sh->active) finish(dev, op, verdict, reason, 0);
        pthread_mutex_unlock(&dev->rt->reg_lock);
    }
}

/* Count an agreeing sample; PROMOTED when the rule is met. */
static memra_shadow_state agree(memra__shadow *sh, const memra__snapshot *s, memra_op op, double inc_us, double sh_us,
                                char *reason, size_t len)
{
    memra_shadow_state verdict = MEMRA_SHADOW_WATCHING;
    pthread_mutex_lock(&sh->lock);
    uint64_t agreed = atomic_fetch_add(&sh->agreements, 1) + 1;
    sh->inc_us += inc_us;
    sh->sh_us += sh_us;
    const double ratio = sh->sh_us > 0.0 ? sh->inc_us / sh->sh_us : 0.0;
    if (s->n_lanes[op] > 0) snprintf(sh->incumbent, sizeof sh->incumbent, "%s", s->lanes[op][0].mod->name);
    const int promote = sh->auto_promote && agreed >= (uint64_t)sh->need && ratio >= 1.0 + sh->margin_pct / 100.0;
    pthread_mutex_unlock(&sh->lock);
    if (promote) {
        snprintf(reason, len, "%llu samples agreed and the shadow was %.2fx as fast (margin %d%%)",
                 (unsigned long long)agreed, ratio, sh->margin_pct);
        verdict = MEMRA_SHADOW_PROMOTED;
    }
    return verdict;
}

/* ---- the GPU side-stream path -------------------------------------------------------- */

#define SH_CU_NOT_READY 600 /* CUDA_ERROR_NOT_READY */
#define SH_STREAM_NON_BLOCKING 1u
#define SH_MAX_ROWS 8

static memra_status gpu_resolve(memra_device *dev)
{
    const memra__driver *drv = memra__driver_get();
    if (drv->lib == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "memra_shadow_start: no CUDA driver (%s)", dev->label);
    pthread_mutex_lock(&dev->rt->reg_lock);
    if (dev->cu_stream_wait_event == NULL) {
        *(void **)&dev->cu_stream_wait_event = memra__driver_proc(drv, "cuStreamWaitEvent");
        *(void **)&dev->cu_memcpy_dtod_async = memra__driver_proc(drv, "cuMemcpyDtoDAsync");
        *(void **)&dev->cu_mem_alloc_host = memra__driver_proc(drv, "cuMemAllocHost");
        *(void **)&dev->cu_mem_free_host = memra__driver_proc(drv, "cuMemFreeHost");
        *(void **)&dev->cu_memcpy_2d_async = memra__driver_proc(drv, "cuMemcpy2DAsync"); /* optional */
    }
    const char *missing = dev->cu_event_query == NULL         ? "cuEventQuery"
                          : dev->cu_stream_wait_event == NULL ? "cuStreamWaitEvent"
                          : dev->cu_memcpy_dtod_async == NULL ? "cuMemcpyDtoDAsync"
                          : dev->cu_mem_alloc_host == NULL    ? "cuMemAllocHost"
                          : dev->cu_mem_free_host == NULL     ? "cuMemFreeHost"
                                                              : NULL;
    pthread_mutex_unlock(&dev->rt->reg_lock);
    if (missing != NULL)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "memra_shadow_start: the CUDA driver lacks %s (%s)", missing,
                           dev->label);
    return MEMRA_STATUS_OK;
}

/* Free everything of sh's GPU side (caller holds gpu_lock, context entered). */
static void gpu_free_locked(memra_device *dev, memra__shadow *sh)
{
    const memra__driver *drv = memra__driver_get();
    CUevent *evs[6] = {&sh->ev_inc0, &sh->ev_inc1, &sh->ev_in, &sh->ev_sh0, &sh->ev_sh1, &sh->ev_done};
    if (sh->stream != NULL) drv->cuStreamSynchronize(sh->stream);
    for (int i = 0; i < 6; i++)
        if (*evs[i] != NULL) drv->cuEventDestroy(*evs[i]), *evs[i] = NULL;
    if (sh->stream != NULL) drv->cuStreamDestroy(sh->stream), sh->stream = NULL;
    memra_dptr *bufs[3] = {&sh->x_copy, &sh->y_copy, &sh->y_sh};
    for (int i = 0; i < 3; i++)
        if (*bufs[i] != 0) drv->cuMemFree(*bufs[i]), *bufs[i] = 0;
    sh->x_cap = sh->y_copy_cap = sh->y_sh_cap = 0;
    if (sh->h_inc != NULL) dev->cu_mem_free_host(sh->h_inc), sh->h_inc = NULL;
    if (sh->h_sh != NULL) dev->cu_mem_free_host(sh->h_sh), sh->h_sh = NULL;
    sh->h_cap = 0;
    for (int i = 0; i < sh->n_retired_d; i++) drv->cuMemFree(sh->retired_d[i]);
    for (int i = 0; i < sh->n_retired_h; i++) dev->cu_mem_free_host(sh->retired_h[i]);
    sh->n_retired_d = sh->n_retired_h = 0;
    sh->pending = sh->p_judge = sh->broken = 0;
    sh->gpu_ready = 0;
}

/* Free sh's GPU side. wait = 0 (a verdict inside an op): nothing is freed
 * there (freeing device or pinned memory can synchronise, and the shadow's
 * stream may still wait on the caller's work); it stays for the next start,
 * stop, unload or close, which wait. */
static void gpu_release(memra_device *dev, memra__shadow *sh, int wait)
{
    if (!wait) return;
    pthread_mutex_lock(&sh->gpu_lock);
    if (sh->gpu_ready && memra__device_enter(dev) == MEMRA_STATUS_OK) {
        gpu_free_locked(dev, sh);
        memra__device_leave(dev);
    }
    pthread_mutex_unlock(&sh->gpu_lock);
}

void memra__shadow_module_gone(memra_device *dev, const char *module)
{
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        memra__shadow *sh = &dev->shadow[op];
        pthread_mutex_lock(&sh->lock);
        const int match = atomic_load(&sh->active) && strcmp(sh->module, module) == 0;
        pthread_mutex_unlock(&sh->lock);
        if (match) finish(dev, (memra_op)op, MEMRA_SHADOW_STOPPED, "its module was unloaded", 1);
    }
}

void memra__shadow_release_module(memra_device *dev, const char *module)
{
    if (dev->is_host || dev->cu_event_query == NULL) return;
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        memra__shadow *sh = &dev->shadow[op];
        pthread_mutex_lock(&sh->lock);
        const int match = module == NULL || strcmp(sh->module, module) == 0;
        pthread_mutex_unlock(&sh->lock);
        if (match) gpu_release(dev, sh, 1); /* it tests gpu_ready under gpu_lock */
    }
}

static int gpu_make(memra_device *dev, memra__shadow *sh)
{
    const memra__driver *drv = memra__driver_get();
    CUevent *evs[6] = {&sh->ev_inc0, &sh->ev_inc1, &sh->ev_in, &sh->ev_sh0, &sh->ev_sh1, &sh->ev_done};
    int ok = drv->cuStreamCreate(&sh->stream, SH_STREAM_NON_BLOCKING) == MEMRA__CUDA_SUCCESS;
    if (!ok) sh->stream = NULL;
    for (int i = 0; i < 6 && ok; i++) {
        ok = drv->cuEventCreate(evs[i], 0) == MEMRA__CUDA_SUCCESS;
        if (!ok) *evs[i] = NULL;
    }
    if (!ok) {
        gpu_free_locked(dev, sh); /* what was made (the new stream is idle); a later sample tries again */
        return 0;
    }
    sh->gpu_ready = 1;
    return 1;
}

/* Grow a device buffer to `need` bytes (a power of two at least 1 MiB). This
 * runs inside a sampled op: the old buffer is not freed here (cuMemFree can
 * synchronise) but retired, freed at the next start / stop / unload / close;
 * with the retired list full the sample is skipped (0). cuMemAlloc itself
 * does not wait for the device. */
static int grow(memra__shadow *sh, memra_dptr *p, size_t *cap, size_t need)
{
    if (*cap >= need) return 1;
    const memra__driver *drv = memra__driver_get();
    size_t sz = 1u << 20;
    while (sz < need) sz <<= 1;
    if (*p != 0) {
        if (sh->n_retired_d == (int)(sizeof sh->retired_d / sizeof sh->retired_d[0])) return 0;
        sh->retired_d[sh->n_retired_d++] = *p;
    }
    *p = 0;
    *cap = 0;
    if (drv->cuMemAlloc(p, sz) != MEMRA__CUDA_SUCCESS) {
        *p = 0;
        return 0;
    }
    *cap = sz;
    return 1;
}

/* Copy `rows` rows of `width` bytes, `src_pitch` apart from device address src, to dst_pitch
 * apart at device address dst (to_host 0) or host pointer dst_host (to_host 1), on stream s:
 * one cuMemcpy2DAsync where the driver has it and the pitch is one it takes, else row by row
 * (a sampled call used to enqueue 25 copies: the activation, 8 rows and 16 read-backs, 156 us
 * of host time on the H200 in run r3). */
static int copy_rows(memra_device *dev, int to_host, memra_dptr dst, size_t dst_pitch, void *dst_host, memra_dptr src,
                     size_t src_pitch, size_t width, int rows, CUstream s)
{
    const memra__driver *drv = memra__driver_get();
    if (rows == 1) src_pitch = width; /* one row: any pitch the driver takes */
    if (dev->cu_memcpy_2d_async != NULL && src_pitch <= (size_t)INT32_MAX) {
        const memra__cu_memcpy2d c = {.src_type = MEMRA__CU_MEMORYTYPE_DEVICE,
                                      .src_device = src,
                                      .src_pitch = src_pitch,
                                      .dst_type = to_host ? MEMRA__CU_MEMORYTYPE_HOST : MEMRA__CU_MEMORYTYPE_DEVICE,
                                      .dst_host = to_host ? dst_host : NULL,
                                      .dst_device = to_host ? 0 : dst,
                                      .dst_pitch = dst_pitch,
                                      .width_bytes = width,
                                      .height = (size_t)rows};
        if (dev->cu_memcpy_2d_async(&c, s) == MEMRA__CUDA_SUCCESS) return 1;
    }
    for (int i = 0; i < rows; i++) {
        const memra_dptr from = src + (memra_dptr)((size_t)i * src_pitch);
        const CUresult r = to_host ? drv->cuMemcpyDtoHAsync((char *)dst_host + (size_t)i * dst_pitch, from, width, s)
                                   : dev->cu_memcpy_dtod_async(dst + (memra_dptr)((size_t)i * dst_pitch), from, width, s);
        if (r != MEMRA__CUDA_SUCCESS) return 0;
    }
    return 1;
}

static uint64_t x_bytes(memra_op op, const memra_gemm_args *g)
{
    const uint64_t mk = (uint64_t)g->m * (uint64_t)g->k;
    if (op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r) return memra_q8_1_bytes(g->m, g->k);
    if (op == MEMRA_OP_gemm_f16 && g->x_is_f16) return mk * 2u;
    return mk * 4u;
}

/* Bytes of the producer's amax an FP8 call reads (memra_gemm_args.x_amax), 0 when none:
 * copied beside the activation, so the shadow never reads the caller's buffer later. */
static uint64_t amax_bytes(memra_op op, const memra_gemm_args *g)
{
    if (g->x_amax == 0 || (op != MEMRA_OP_gemm_fp8 && op != MEMRA_OP_gemm_fp8_blk)) return 0;
    return op == MEMRA_OP_gemm_fp8 ? 4u : ((uint64_t)g->k + 127u) / 128u * (uint64_t)g->m * 4u;
}

/* Judge the finished run (ev_done complete; caller holds gpu_lock). */
static memra_shadow_state gpu_harvest(memra_device *dev, const memra__snapshot *s, memra_op op, memra__shadow *sh,
                                      char *reason, size_t len)
{
    const memra__driver *drv = memra__driver_get();
    (void)dev;
    sh->pending = 0;
    if (!sh->p_judge) return MEMRA_SHADOW_WATCHING; /* an incomplete run, only waited for (its sample was counted skipped) */
    float inc_ms = 0.0f, sh_ms = 0.0f;
    if (drv->cuEventElapsedTime(&inc_ms, sh->ev_inc0, sh->ev_inc1) != MEMRA__CUDA_SUCCESS ||
        drv->cuEventElapsedTime(&sh_ms, sh->ev_sh0, sh->ev_sh1) != MEMRA__CUDA_SUCCESS) {
        atomic_fetch_add(&sh->skipped, 1); /* no times: no verdict */
        return MEMRA_SHADOW_WATCHING;
    }
    if (sh->corrupt) sh->h_sh[0] += 1.0f + fabsf(sh->h_inc[0]);
    if (!judge_rows(op, sh->p_m, sh->p_n, sh->p_k, sh->p_row, sh->p_rows, sh->h_inc, sh->h_sh, (size_t)sh->p_n,
                    reason, len)) {
        atomic_fetch_add(&sh->mismatches, 1);
        return MEMRA_SHADOW_ROLLED_BACK;
    }
    return agree(sh, s, op, (double)inc_ms * 1e3, (double)sh_ms * 1e3, reason, len);
}

static void gpu_verdict(memra_device *dev, memra_op op, memra_shadow_state verdict, const char *reason)
{
    if (verdict == MEMRA_SHADOW_WATCHING) return;
    pthread_mutex_lock(&dev->rt->reg_lock);
    if (dev->shadow[op].active) finish(dev, op, verdict, reason, 0);
    pthread_mutex_unlock(&dev->rt->reg_lock);
}

/* A sampled call on a GPU: 1 (gpu_lock held, ev_inc0 recorded on the
 * caller's stream) when this call runs the shadow; 0 (skipped) otherwise. */
static int gpu_begin(memra_device *dev, const memra__snapshot *s, memra__shadow *sh, const memra_op_args *args)
{
    const memra__driver *drv = memra__driver_get();
    const memra_op op = (memra_op)(sh - dev->shadow);
    if (pthread_mutex_trylock(&sh->gpu_lock) != 0) {
        atomic_fetch_add(&sh->skipped, 1);
        return 0;
    }
    if (memra__device_enter(dev) != MEMRA_STATUS_OK) {
        pthread_mutex_unlock(&sh->gpu_lock);
        memra__clear_error();
        atomic_fetch_add(&sh->skipped, 1);
        return 0;
    }
    CUstream S = (CUstream)args->stream;
    int capturing = 0;
    memra_shadow_state verdict = MEMRA_SHADOW_WATCHING;
    char reason[300] = "";
    int run = drv->cuStreamIsCapturing(S, &capturing) == MEMRA__CUDA_SUCCESS && capturing == 0;
    /* a shadow stopped meanwhile (stop, promote, unload: active is cleared
     * before they take gpu_lock) starts nothing more */
    if (run && (!atomic_load(&sh->active) || sh->broken)) run = 0;
    if (run && !sh->gpu_ready) run = gpu_make(dev, sh);
    if (run && sh->pending) {
        const CUresult q = dev->cu_event_query(sh->ev_done);
        if (q == MEMRA__CUDA_SUCCESS) verdict = gpu_harvest(dev, s, op, sh, reason, sizeof reason);
        else run = 0; /* in flight */
        /* the query failed: the stream's state is unknown, sampling stops (its buffers stay) */
        if (q != MEMRA__CUDA_SUCCESS && q != SH_CU_NOT_READY) sh->broken = 1;
    }
    if (run && verdict == MEMRA_SHADOW_WATCHING) run = drv->cuEventRecord(sh->ev_inc0, S) == MEMRA__CUDA_SUCCESS;
    memra__device_leave(dev);
    if (run && verdict == MEMRA_SHADOW_WATCHING) return 1;
    pthread_mutex_unlock(&sh->gpu_lock);
    if (verdict == MEMRA_SHADOW_WATCHING) atomic_fetch_add(&sh->skipped, 1);
    gpu_verdict(dev, op, verdict, reason);
    return 0;
}

/* Close the work queued on the shadow's stream with ev_done: pending from now
 * on; judged at a later sample only when `whole` (returns whether it will be).
 * If even that record fails, the stream's work cannot be tracked: sampling
 * stops for this shadow (sh->gpu_ready stays, every later sample is skipped)
 * until stop / start / unload / close wait for the stream. */
static int close_run(memra__shadow *sh, CUstream SS, int whole)
{
    if (memra__driver_get()->cuEventRecord(sh->ev_done, SS) != MEMRA__CUDA_SUCCESS) {
        sh->broken = 1;
        return 0;
    }
    sh->pending = 1;
    sh->p_judge = whole;
    return whole;
}

/* After the incumbent of a sampled call: the copies on the caller's stream,
 * the shadow on its own, the read-back; nothing waits (gpu_lock released). */
static void gpu_end(memra_device *dev, const memra__snapshot *s, memra_op op, const memra_op_args *args,
                    memra_status st)
{
    const memra__driver *drv = memra__driver_get();
    memra__shadow *sh = &dev->shadow[op];
    const memra_gemm_args *g = &args->gemm;
    CUstream S = (CUstream)args->stream, SS = sh->stream;
    memra_shadow_state verdict = MEMRA_SHADOW_WATCHING;
    char reason[300] = "";
    if (memra__device_enter(dev) != MEMRA_STATUS_OK) {
        memra__clear_error();
        pthread_mutex_unlock(&sh->gpu_lock);
        return;
    }
    int ok = drv->cuEventRecord(sh->ev_inc1, S) == MEMRA__CUDA_SUCCESS;
    const uint64_t xb = x_bytes(op, g), ab = amax_bytes(op, g), xa = (xb + 255u) / 256u * 256u;
    ok = ok && st == MEMRA_STATUS_OK && g->m > 0 && g->n > 0 && g->k > 0 && g->ldy >= g->n && xb > 0;
    /* the rows judged: every row of a call of up to SH_MAX_ROWS, else SH_MAX_ROWS rows at one
     * stride from row 0 (so each side's rows move in one strided copy) */
    int rows[SH_MAX_ROWS], nr = 0, stride = 1;
    if (ok) {
        nr = g->m <= SH_MAX_ROWS ? g->m : SH_MAX_ROWS;
        stride = nr == g->m ? 1 : (g->m - 1) / (SH_MAX_ROWS - 1);
        for (int i = 0; i < nr; i++) rows[i] = i * stride;
    }
    const size_t n = ok ? (size_t)g->n : 0, rb = n * sizeof(float);
    ok = ok && grow(sh, &sh->x_copy, &sh->x_cap, (size_t)(xa + ab)) &&
         grow(sh, &sh->y_copy, &sh->y_copy_cap, (size_t)nr * rb) && grow(sh, &sh->y_sh, &sh->y_sh_cap, (size_t)g->m * rb);
    if (ok && sh->h_cap < (size_t)nr * n) {
        /* the old pinned rows retired like the device buffers (cuMemFreeHost can synchronise) */
        ok = sh->n_retired_h + 2 <= (int)(sizeof sh->retired_h / sizeof sh->retired_h[0]);
        if (ok && sh->h_inc != NULL) sh->retired_h[sh->n_retired_h++] = sh->h_inc, sh->h_inc = NULL;
        if (ok && sh->h_sh != NULL) sh->retired_h[sh->n_retired_h++] = sh->h_sh, sh->h_sh = NULL;
        if (ok) sh->h_cap = 0;
        void *a = NULL, *b = NULL;
        ok = ok && dev->cu_mem_alloc_host(&a, (size_t)nr * rb) == MEMRA__CUDA_SUCCESS;
        if (ok) sh->h_inc = a;
        ok = ok && dev->cu_mem_alloc_host(&b, (size_t)nr * rb) == MEMRA__CUDA_SUCCESS;
        if (ok) sh->h_sh = b, sh->h_cap = (size_t)nr * n;
    }
    /* On the caller's stream, after the incumbent: the activation and the rows of its output. */
    ok = ok && dev->cu_memcpy_dtod_async(sh->x_copy, g->x, (size_t)xb, S) == MEMRA__CUDA_SUCCESS;
    ok = ok && (ab == 0 || dev->cu_memcpy_dtod_async(sh->x_copy + xa, g->x_amax, (size_t)ab, S) == MEMRA__CUDA_SUCCESS);
    const memra_dptr y0 = g->y + (memra_dptr)((uint64_t)g->y_row_offset * (uint64_t)g->ldy * sizeof(float));
    if (ok && nr > 0)
        ok = copy_rows(dev, 0, sh->y_copy, rb, NULL, y0, (size_t)stride * (size_t)g->ldy * sizeof(float), rb, nr, S);
    ok = ok && drv->cuEventRecord(sh->ev_in, S) == MEMRA__CUDA_SUCCESS;
    /* On the shadow's stream, ordered after those copies. From the wait on,
     * work is queued there: whatever happens next, ev_done closes it and the
     * run is pending, so no buffer it uses is reused or retired before a later
     * sample has seen ev_done complete (queued, then judged only if whole). */
    const int queued = ok && dev->cu_stream_wait_event(SS, sh->ev_in, 0) == MEMRA__CUDA_SUCCESS;
    ok = queued && drv->cuEventRecord(sh->ev_sh0, SS) == MEMRA__CUDA_SUCCESS;
    if (!ok) {
        /* nothing was judged: the caller's call stands, this sample is skipped */
        if (st == MEMRA_STATUS_OK) atomic_fetch_add(&sh->skipped, 1);
        if (queued) close_run(sh, SS, 0);
        memra__device_leave(dev);
        pthread_mutex_unlock(&sh->gpu_lock);
        return;
    }
    memra_op_args a = *args;
    a.stream = (memra_stream_t)SS;
    a.gemm.x = sh->x_copy;
    a.gemm.x_amax = ab ? sh->x_copy + xa : 0;
    a.gemm.y = sh->y_sh;
    a.gemm.ldy = g->n;
    a.gemm.y_row_offset = 0;
    const memra__lane *lane = &s->shadow[op];
    memra_status ss = memra__lane_run(dev, lane, op, &a);
    if (lane->cell != NULL) {
        atomic_fetch_add(&lane->cell->entries, 1);
        if (ss == MEMRA_STATUS_OK) atomic_fetch_add(&lane->cell->hits, 1);
        else if (ss != MEMRA_STATUS_DECLINED) atomic_fetch_add(&lane->cell->errors, 1);
    }
    atomic_fetch_add(&sh->samples, 1);
    if (ss == MEMRA_STATUS_OK) {
        ok = drv->cuEventRecord(sh->ev_sh1, SS) == MEMRA__CUDA_SUCCESS;
        ok = ok && copy_rows(dev, 1, 0, rb, sh->h_sh, sh->y_sh, (size_t)stride * rb, rb, nr, SS);
        ok = ok && drv->cuMemcpyDtoHAsync(sh->h_inc, sh->y_copy, (size_t)nr * rb, SS) == MEMRA__CUDA_SUCCESS;
        sh->p_m = g->m, sh->p_n = g->n, sh->p_k = g->k, sh->p_rows = nr;
        memcpy(sh->p_row, rows, sizeof rows);
        if (!close_run(sh, SS, ok)) atomic_fetch_add(&sh->skipped, 1);
    } else {
        close_run(sh, SS, 0); /* whatever the lane queued before it failed or declined */
    }
    if (ss != MEMRA_STATUS_OK && ss != MEMRA_STATUS_DECLINED) { /* a lane may decline a shape: not a verdict */
        snprintf(reason, sizeof reason, "the shadow's %s m=%d n=%d k=%d returned %s: %.200s", memra_op_name(op), g->m,
                 g->n, g->k, memra_status_str(ss), memra_last_error());
        verdict = MEMRA_SHADOW_ROLLED_BACK;
    }
    memra__clear_error();
    memra__device_leave(dev);
    pthread_mutex_unlock(&sh->gpu_lock);
    gpu_verdict(dev, op, verdict, reason);
}

const memra__dispatch_observer memra__shadow_observer = {.begin = shadow_begin, .end = shadow_end};
