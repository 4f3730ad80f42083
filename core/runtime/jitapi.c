/* Public wrappers around the JIT service for the `memra jit` command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/routing/routing.h"
#include "jit/jit.h"

memra_status memra_jit_info_get(memra_runtime *rt, memra_jit_info *out)
{
    if (rt == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_jit_info_get: NULL");
    memset(out, 0, sizeof *out);
    out->why = rt->jit_why;
    out->folder = "";
    if (rt->jit == NULL) return MEMRA_STATUS_OK;
    memra_status st = memra__jit_nvrtc_version(rt->jit, &out->nvrtc_major, &out->nvrtc_minor);
    out->available = st == MEMRA_STATUS_OK;
    if (!out->available) {
        snprintf(rt->jit_why, sizeof rt->jit_why, "%s", memra_last_error());
        memra__clear_error();
    }
    memra__jit_cache_stats cs;
    if (memra__jit_stats(rt->jit, &cs) == MEMRA_STATUS_OK) {
        out->disk_enabled = cs.disk_enabled;
        out->folder = cs.folder ? cs.folder : "";
        out->entries = cs.disk_entries;
        out->bytes = cs.disk_bytes;
        out->max_bytes = cs.disk_max_bytes;
        out->hits_memory = cs.hits_memory;
        out->hits_disk = cs.hits_disk;
        out->compiles = cs.compiles;
        out->corrupt_dropped = cs.corrupt_dropped;
    }
    return MEMRA_STATUS_OK;
}

memra_status memra_jit_disk_status(memra_runtime *rt, char *buf, size_t len)
{
    if (rt == NULL || buf == NULL || len == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_jit_disk_status: NULL or empty buffer");
    if (rt->jit == NULL) snprintf(buf, len, "off (no JIT: %s)", rt->jit_why);
    else memra__jit_disk_why(rt->jit, buf, len);
    return MEMRA_STATUS_OK;
}

memra_status memra_jit_list(memra_runtime *rt, memra_jit_entry_info **out, size_t *count)
{
    if (rt == NULL || out == NULL || count == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_jit_list: NULL");
    if (rt->jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "JIT unavailable: %s", rt->jit_why);
    memra__jit_entry *e = NULL;
    size_t n = 0;
    memra_status st = memra__jit_list(rt->jit, &e, &n);
    if (st != MEMRA_STATUS_OK) return st;
    if (n == 0) {
        free(e);
        *out = NULL;
        *count = 0;
        return MEMRA_STATUS_OK;
    }
    memra_jit_entry_info *r = calloc(n, sizeof *r);
    if (r == NULL) {
        free(e);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_jit_list");
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(r[i].key_hex, sizeof r[i].key_hex, "%s", e[i].key_hex);
        snprintf(r[i].target, sizeof r[i].target, "%.16s", e[i].target);
        r[i].bytes = e[i].file_bytes;
        r[i].age_s = e[i].age_s;
        r[i].header_ok = e[i].header_ok;
    }
    free(e);
    *out = r;
    *count = n;
    return MEMRA_STATUS_OK;
}

memra_status memra_jit_clear(memra_runtime *rt, size_t *removed)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_jit_clear: NULL");
    if (rt->jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "JIT unavailable: %s", rt->jit_why);
    size_t n = 0;
    memra_status st = memra__jit_clear(rt->jit, &n);
    if (st == MEMRA_STATUS_OK && removed) *removed = n;
    return st;
}

memra_status memra_jit_warm(memra_runtime *rt, memra_jit_progress_fn progress, void *user)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_jit_warm: NULL");
    if (rt->jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "JIT unavailable: %s", rt->jit_why);
    memra_status worst = MEMRA_STATUS_OK;
    for (int d = 0; d < rt->n_devices; d++) {
        memra_device *dev = rt->devices[d];
        if (dev->is_host) continue;
        memra__snapshot *s = memra__snapshot_acquire(dev);
        for (int i = 0; s != NULL && i < s->n_mods; i++) {
            memra__modrec *r = s->mods[i];
            if (r->desc.jit_sources == NULL) continue;
            size_t n = 0;
            const memra_jit_source *src = r->desc.jit_sources(&dev->caps, &n);
            for (size_t k = 0; src != NULL && k < n; k++) {
                memra__jit_result res;
                memra_status st = memra__jit_compile(rt->jit, src[k].name, src[k].source, src[k].options,
                                                     src[k].n_options, dev->jit_target, 0, &res);
                if (st != MEMRA_STATUS_OK) worst = st;
                if (progress)
                    progress(r->name, src[k].name, dev->jit_target,
                             st == MEMRA_STATUS_OK ? memra__jit_origin_str(res.origin) : "failed",
                             st == MEMRA_STATUS_OK ? res.ms : 0.0, st, user);
            }
        }
        memra__snapshot_release(s);
    }
    return worst;
}
