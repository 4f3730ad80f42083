/* Changing the tuning table (tune_table.c) through the API: record a claim,
 * clear the table, turn tuned routing on or off. Each change republishes
 * routing, so this file sits above the registry (registry.c), which reads
 * the table at each snapshot build. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "core/routing/routing.h"

memra_status memra_tune_record(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k, const char *module,
                               const char *variant, double median_us, double baseline_us)
{
    const double g = median_us > 0.0 ? baseline_us / median_us : 0.0;
    const memra_tune_claim c = {.struct_size = sizeof c, .win = 1, .module = module, .variant = variant,
                                .median_us = median_us, .baseline_us = baseline_us, .gain = g, .gain_lo = g,
                                .gain_hi = g};
    return memra_tune_record_claim(dev, op, m, n, k, &c);
}

memra_status memra_tune_record_claim(memra_device *dev, memra_op op, int32_t m, int32_t n, int32_t k,
                                     const memra_tune_claim *claim)
{
    if (claim == NULL || claim->struct_size < sizeof *claim)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: NULL claim or struct_size too small");
    const char *module = claim->module, *variant = claim->variant;
    const double median_us = claim->median_us, baseline_us = claim->baseline_us;
    if (dev == NULL || module == NULL || !((int)op >= 0 && op < MEMRA_OP_COUNT_) || !memra__tune_op(op) || m < 1 ||
        n < 1 || k < 1 || !(median_us >= 0.0) || !(baseline_us >= 0.0) || !(claim->gain >= 0.0) ||
        !(claim->gain_lo >= 0.0) || !(claim->gain_hi >= 0.0) || !(claim->noise_floor >= 0.0) || claim->reps < 0 ||
        claim->gain > 1e12 || claim->gain_lo > 1e12 || claim->gain_hi > 1e12 || claim->noise_floor > 1e12 ||
        median_us > 1e12 || baseline_us > 1e12)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: bad argument");
    memra_runtime *rt = dev->rt;
    memra__snapshot *s = memra__snapshot_acquire(dev);
    memra__modrec *r = memra__find_admitted(s, module);
    memra__tune_ent e;
    memset(&e, 0, sizeof e);
    memra_status st = MEMRA_STATUS_OK;
    if (r == NULL) st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_tune_record: '%s' is not admitted on %s", module, dev->label);
    else if (variant != NULL && variant[0] != '\0' && memra__variant_index(r, dev, op, variant) < 0)
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_tune_record: '%s' has no variant '%s' of %s", module, variant,
                         memra_op_name(op));
    else if (strlen(r->version) == 0 || strlen(r->version) >= sizeof e.modver || strpbrk(r->version, "\t\n") != NULL)
        st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: module %s's version text cannot be recorded",
                         module);
    if (st == MEMRA_STATUS_OK) {
        memra__tune_key(dev, e.key, sizeof e.key);
        if (strpbrk(e.key, "\t\n") != NULL)
            st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_record: the device name has a tab or newline");
        e.dev = dev->index;
        e.op = op;
        e.n = n;
        e.k = k;
        e.mc = memra_tune_m_class(m);
        snprintf(e.module, sizeof e.module, "%s", module);
        snprintf(e.modver, sizeof e.modver, "%s", r->version);
        snprintf(e.variant, sizeof e.variant, "%s", variant ? variant : "");
        e.us = median_us;
        e.base_us = baseline_us;
        e.win = claim->win != 0;
        e.gain = claim->gain, e.gain_lo = claim->gain_lo, e.gain_hi = claim->gain_hi, e.floor = claim->noise_floor;
        e.reps = claim->reps;
    }
    memra__snapshot_release(s);
    if (st != MEMRA_STATUS_OK) return st;
    pthread_mutex_lock(&rt->reg_lock);
    if (!memra__tune_add(rt, &e)) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_tune_record: table full");
    else st = memra__registry_republish(rt);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

memra_status memra_tune_clear(memra_runtime *rt)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_clear: NULL runtime");
    pthread_mutex_lock(&rt->reg_lock);
    rt->n_tune = 0;
    memra_status st = memra__registry_republish(rt);
    if (st == MEMRA_STATUS_OK && rt->tune_path[0] != '\0' && unlink(rt->tune_path) != 0 && errno != ENOENT)
        st = MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "removing %s: %s", rt->tune_path, strerror(errno));
    if (st == MEMRA_STATUS_OK) snprintf(rt->tune_status, sizeof rt->tune_status, "cleared");
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

memra_status memra_tune_use(memra_runtime *rt, int on)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_tune_use: NULL runtime");
    pthread_mutex_lock(&rt->reg_lock);
    memra_status st = MEMRA_STATUS_OK;
    if (rt->tune_on != (on != 0)) {
        rt->tune_on = on != 0;
        st = memra__registry_republish(rt);
    }
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}
