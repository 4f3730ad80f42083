/* Dispatch: one lane invocation, the fall-through over a snapshot's lanes,
 * and direct module calls. Op names are ops.c's, the ledger ledger.c's. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/routing/routing.h"

/* ---- invoking one lane -------------------------------------------------------- */

/* One case per op of MEMRA_OP_LIST: an op appended to the list must get its
 * case here (the assert counts them). */
_Static_assert(MEMRA_OP_COUNT_ == 18, "call_op needs a case for every op of MEMRA_OP_LIST");

static memra_status call_op(const memra_op_table *ops, memra_call *call, memra_op op, memra_op_args *a)
{
    switch (op) {
    case MEMRA_OP_cvt_f16: return ops->cvt_f16(call, a->src, a->dst, a->n);
    case MEMRA_OP_gemm_f16: return ops->gemm_f16(call, &a->gemm);
    case MEMRA_OP_gemm_fp8: return ops->gemm_fp8(call, &a->gemm);
    case MEMRA_OP_gemm_fp8_blk: return ops->gemm_fp8_blk(call, &a->gemm);
    case MEMRA_OP_quant_q8_1:
        if (a->rows < 0 || a->rows > INT32_MAX || a->cols < 0 || a->cols > INT32_MAX)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "quant_q8_1: rows %lld / cols %lld out of range",
                               (long long)a->rows, (long long)a->cols);
        return ops->quant_q8_1(call, a->src, (int32_t)a->rows, (int32_t)a->cols, a->dst);
    case MEMRA_OP_gemm_q8_0: return ops->gemm_q8_0(call, &a->gemm);
    case MEMRA_OP_dequant_f16: return ops->dequant_f16(call, a->format, a->src, a->rows, a->cols, a->dst);
    case MEMRA_OP_fp8_blk_to_q8_0: return ops->fp8_blk_to_q8_0(call, a->src, a->aux, a->rows, a->cols, a->dst);
    case MEMRA_OP_fp8_nan_count: return ops->fp8_nan_count(call, a->src, a->n, a->dst);
    case MEMRA_OP_scale: return ops->scale(call, a->src, a->n, a->s);
    case MEMRA_OP_accprobe: return ops->accprobe(call, a->arm, &a->gemm);
    case MEMRA_OP_repack_q8_0:
        if (a->rows < 0 || a->rows > INT32_MAX || a->cols < 0 || a->cols > INT32_MAX)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "repack_q8_0: rows %lld / cols %lld out of range",
                               (long long)a->rows, (long long)a->cols);
        return ops->repack_q8_0(call, a->src, a->rows, a->cols, a->dst);
    case MEMRA_OP_gemm_q8_0r: return ops->gemm_q8_0r(call, &a->gemm);
    case MEMRA_OP_gemm_bf16: return ops->gemm_bf16(call, &a->gemm);
    case MEMRA_OP_gemm_kr: return ops->gemm_kr(call, &a->gemm);
    case MEMRA_OP_gemm_experts:
        if (!MEMRA_HAS_MEMBER(a, memra_op_args, experts))
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "gemm_experts: args.struct_size %u has no experts member",
                               a->struct_size);
        a->experts.struct_size = sizeof a->experts;
        return ops->gemm_experts(call, &a->gemm, &a->experts);
    case MEMRA_OP_dequant_kr_f16: return ops->dequant_kr_f16(call, a->format, a->src, a->rows, a->cols, a->dst);
    case MEMRA_OP_gemm_w16: return ops->gemm_w16(call, &a->gemm);
    default: return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "op %d out of range", (int)op);
    }
}

/* A declined call's reason, copied out of the module: the module's own static
 * string goes away with the module once the caller's snapshot is released. */
static _Thread_local char tl_reason[96];

/* Sizing (memra_call.sizing, memra__sizing_begin): on this thread, op calls ask
 * their modules for scratch requests only; the calls a module ran anyway, and
 * those it sized, are counted. No ledger accounting, no shadow sample. */
static _Thread_local int tl_sizing, tl_sized, tl_ran;

void memra__sizing_begin(void) { tl_sizing = 1, tl_sized = 0, tl_ran = 0; }

int memra__sizing_end(void)
{
    tl_sizing = 0;
    return tl_sized > 0 && tl_ran == 0;
}

/* One call of a lane's op, no accounting: the scope (scratch), the device's
 * context, the module's scratch name, and a declined call's reason copied out.
 * *ran is 0 when the scope could not be begun (the op was not called). */
static memra_status lane_call(memra_device *dev, const memra__lane *lane, memra_op op, memra_op_args *args, int *ran,
                              int sizing)
{
    memra_call call = {.struct_size = sizeof call,
                       .module_ctx = lane->ctx,
                       .caps = &dev->caps,
                       .stream = args->stream,
                       .decline_reason = NULL,
                       .variant = lane->variant,
                       .sizing = sizing};
    args->gemm.struct_size = sizeof args->gemm;
    *ran = 0;
    memra_status st = memra__scope_begin(dev, args->stream);
    if (st != MEMRA_STATUS_OK) return st;
    *ran = 1;
    st = memra__device_enter(dev);
    if (st == MEMRA_STATUS_OK) {
        const char *prev = memra__scratch_module_set(lane->mod->name);
        st = call_op(&lane->mod->ops, &call, op, args);
        memra__scratch_module_set(prev);
        memra__device_leave(dev);
    }
    memra__scope_end();
    if (sizing && st == MEMRA_STATUS_OK) {
        if (call.sizing == 2) tl_sized++;
        else tl_ran++;
    }
    if (st == MEMRA_STATUS_DECLINED) {
        snprintf(tl_reason, sizeof tl_reason, "%s", call.decline_reason ? call.decline_reason : "(no reason given)");
        args->decline_reason = tl_reason;
    }
    return st;
}

memra_status memra__lane_run(memra_device *dev, const memra__lane *lane, memra_op op, memra_op_args *args)
{
    int ran;
    return lane_call(dev, lane, op, args, &ran, 0); /* admission checks and shadow runs: never sized */
}

memra_status memra__lane_invoke(memra_device *dev, const memra__lane *lane, memra_op op, memra_op_args *args)
{
    int ran;
    if (tl_sizing) return lane_call(dev, lane, op, args, &ran, 1); /* nothing ran: nothing for the ledger */
    atomic_fetch_add(&lane->cell->entries, 1);
    memra_status st = lane_call(dev, lane, op, args, &ran, 0);
    if (!ran) return st;
    if (st == MEMRA_STATUS_OK) {
        atomic_fetch_add(&lane->cell->hits, 1);
    } else if (st == MEMRA_STATUS_DECLINED) {
        memra__ledger_decline(dev, lane->cell, args->decline_reason);
        MEMRA__DEBUG("dispatch", "%s on %s declined %s: %s", lane->mod->name, dev->label, memra_op_name(op),
                     args->decline_reason);
    } else {
        atomic_fetch_add(&lane->cell->errors, 1);
    }
    return st;
}

/* Dispatch `op` through the routing: the lanes in order, falling through on
 * DECLINED. NOT_SUPPORTED when no module provides the op on this device,
 * DECLINED when every lane declined. */
memra_status memra__dispatch(memra_device *dev, memra_op op, memra_op_args *args)
{
    memra__snapshot *s = memra__snapshot_acquire(dev);
    if (s == NULL) return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "no routing on %s", dev->label);
    memra_status st = memra__dispatch_on(dev, s, op, args);
    memra__snapshot_release(s);
    return st;
}

static memra_status dispatch_lanes(memra_device *dev, memra__snapshot *s, memra_op op, memra_op_args *args);

const char *memra__dispatch_taken(memra_device *dev, memra_op op, memra_op_args *args)
{
    memra__snapshot *s = memra__snapshot_acquire(dev);
    if (s == NULL) return NULL;
    const char *taker = NULL;
    for (int i = 0; i < s->n_lanes[op] && taker == NULL; i++)
        if (memra__lane_run(dev, &s->lanes[op][i], op, args) == MEMRA_STATUS_OK) taker = s->lanes[op][i].mod->name;
    memra__snapshot_release(s);
    return taker;
}

memra_status memra__dispatch_on(memra_device *dev, memra__snapshot *s, memra_op op, memra_op_args *args)
{
    double t0 = 0.0;
    /* The observer (shadow A/B, core/observe/) is set at memra_open: routing calls up only through it. */
    const memra__dispatch_observer *obs = dev->rt->observer;
    if (tl_sizing || s->shadow[op].mod == NULL || obs == NULL || !obs->begin(dev, s, op, args, &t0))
        return dispatch_lanes(dev, s, op, args);
    memra_status st = dispatch_lanes(dev, s, op, args);
    obs->end(dev, s, op, args, st, t0);
    return st;
}

#define DECLINES_MAX 384 /* bytes of a dispatch's list of decline reasons */

/* Append "module: reason" to the declines' list buf[DECLINES_MAX] (at rl; "; " between), as much as fits. */
static size_t reason_add(char *buf, size_t rl, const char *module, const char *reason)
{
    const size_t cap = DECLINES_MAX;
    if (rl >= cap - 1) return rl;
    const int n = snprintf(buf + rl, cap - rl, "%s%s: %s", rl ? "; " : "", module, reason ? reason : "(no reason given)");
    return n < 0 ? rl : rl + (size_t)n < cap ? rl + (size_t)n : cap - 1;
}

static memra_status dispatch_lanes(memra_device *dev, memra__snapshot *s, memra_op op, memra_op_args *args)
{
    memra_status st = MEMRA_STATUS_NOT_SUPPORTED;
    /* every declining lane's reason, in order ("mmq: ...; fp8blk: ..."): a module serving some lanes
     * of an op only says which of its knobs or shapes would take the call */
    char reasons[DECLINES_MAX] = "";
    size_t rl = 0;
    const int s_lanes = s->n_lanes[op];
    /* Measured routing first (core/routing/tune_table.c): the class's tuned lane and variant. */
    const memra__tuned *t = s->n_tuned[op] > 0 ? memra__tune_find(s, op, &args->gemm) : NULL;
    if (t != NULL && t->lane >= 0 && t->lane < s_lanes) { /* lane -1: "no win", the scores */
        memra__lane tl = s->lanes[op][t->lane];
        tl.variant = t->variant;
        st = memra__lane_invoke(dev, &tl, op, args);
        if (st != MEMRA_STATUS_DECLINED) return st;
        rl = reason_add(reasons, rl, tl.mod->name, args->decline_reason);
    }
    for (int i = 0; i < s_lanes; i++) {
        st = memra__lane_invoke(dev, &s->lanes[op][i], op, args);
        if (st != MEMRA_STATUS_DECLINED) break;
        rl = reason_add(reasons, rl, s->lanes[op][i].mod->name, args->decline_reason);
    }
    if (st == MEMRA_STATUS_NOT_SUPPORTED && s_lanes == 0)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "%s on %s: no module provides it", memra_op_name(op),
                           dev->label);
    if (st == MEMRA_STATUS_DECLINED) {
        args->decline_reason = NULL;
        return MEMRA__FAIL(MEMRA_STATUS_DECLINED, "%s on %s: no lane took it (%s)", memra_op_name(op), dev->label,
                           reasons);
    }
    return st;
}

memra_status memra_module_call(memra_device *dev, const char *module, memra_op op, memra_op_args *args)
{
    memra__clear_error();
    if (dev == NULL || module == NULL || args == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_call: bad argument");
    if (args->struct_size < offsetof(memra_op_args, decline_reason) + sizeof args->decline_reason)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_call: args.struct_size %u is too small (%zu)",
                           args->struct_size, offsetof(memra_op_args, decline_reason) + sizeof args->decline_reason);
    memra__snapshot *s = memra__snapshot_acquire(dev);
    const memra__lane *lane = NULL;
    memra__lane fallback;
    for (int i = 0; s != NULL && i < s->n_lanes[op] && lane == NULL; i++)
        if (strcmp(s->lanes[op][i].mod->name, module) == 0) lane = &s->lanes[op][i];
    if (lane == NULL && s != NULL) {
        /* Admitted but routed away from this op (disabled for it): still callable by name. */
        memra__modrec *r = memra__find_admitted(s, module);
        if (r != NULL && memra__op_fn(&r->ops, op) != NULL) {
            fallback = (memra__lane){.mod = r, .ctx = r->ctx[dev->index], .score = r->score[dev->index],
                                     .cell = memra__ledger_cell_get(dev, op, module), .variant = -1};
            if (fallback.cell != NULL) lane = &fallback;
        }
    }
    memra_status st;
    memra__lane chosen;
    const char *vname = MEMRA_HAS_MEMBER(args, memra_op_args, variant) ? args->variant : NULL;
    if (lane != NULL && vname != NULL) {
        chosen = *lane;
        chosen.variant = memra__variant_index(lane->mod, dev, op, vname);
        lane = &chosen;
    }
    if (lane == NULL)
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "module '%s' is not admitted on %s or lacks %s", module, dev->label,
                         memra_op_name(op));
    else if (vname != NULL && lane->variant < 0)
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "module '%s' has no variant '%s' of %s on %s", module, vname,
                         memra_op_name(op), dev->label);
    else
        st = memra__lane_invoke(dev, lane, op, args);
    memra__snapshot_release(s);
    return st;
}

int memra_module_provides(memra_device *dev, const char *name, memra_op op)
{
    if (dev == NULL || name == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_) return 0;
    memra__snapshot *s = memra__snapshot_acquire(dev);
    memra__modrec *r = memra__find_admitted(s, name);
    int yes = 0;
    if (r != NULL) {
        switch (op) {
#define MEMRA__OP_HAS(opname)                                                       \
    case MEMRA_OP_##opname:                                                         \
        yes = r->ops.opname != NULL;                                                \
        break;
            MEMRA_OP_LIST(MEMRA__OP_HAS)
#undef MEMRA__OP_HAS
        default: break;
        }
    }
    memra__snapshot_release(s);
    return yes;
}

int memra_module_variants(memra_device *dev, const char *name, memra_op op, const char **names, const char **knobs,
                          int cap)
{
    if (dev == NULL || name == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_ || cap < 0) {
        MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_variants: bad argument");
        return -1;
    }
    memra__snapshot *s = memra__snapshot_acquire(dev);
    memra__modrec *r = memra__find_admitted(s, name);
    int n = -1;
    if (r == NULL) {
        MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_module_variants: module '%s' is not admitted on %s", name,
                    dev->label);
    } else {
        size_t nv = 0;
        const memra_variant *v = memra__variants(r, dev, op, &nv);
        n = (int)nv;
        for (int i = 0; i < n && i < cap; i++) {
            if (names) names[i] = v[i].name;
            if (knobs) knobs[i] = v[i].knobs ? v[i].knobs : "";
        }
    }
    memra__snapshot_release(s);
    return n;
}
