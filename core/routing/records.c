/* The records of the modules the registry has seen (loaded or refused): made
 * and filled by the load (core/load/load.c), referenced by snapshots
 * (registry.c), retired when the last reference goes. Also the record
 * queries every room may make: an op's member, a module's variants. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "core/device/device.h"
#include "core/routing/routing.h"

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

/* A name that lives until memra_close (memra_routing_get hands them out),
 * one copy per distinct name. Caller holds reg_lock. */
const char *memra__intern(memra_runtime *rt, const char *s)
{
    for (memra__name *n = rt->names; n != NULL; n = n->next)
        if (strcmp(n->s, s) == 0) return n->s;
    size_t l = strlen(s);
    memra__name *n = malloc(sizeof *n + l + 1);
    if (n == NULL) return NULL;
    memcpy(n->s, s, l + 1);
    n->next = rt->names;
    rt->names = n;
    return n->s;
}

static void rec_free(memra__modrec *r)
{
    for (int d = 0; d < MEMRA__MAX_DEVICES; d++) free(r->device_note[d]);
    free(r->path);
    free(r->name);
    free(r->version);
    free(r->reason);
    free(r);
}

static void rec_life_drop(memra__modrec *r)
{
    if (atomic_fetch_sub(&r->life, 1) == 1) rec_free(r);
}

/* Take record i out of rt->mods (caller holds reg_lock). */
void memra__rec_unlist(memra_runtime *rt, int i)
{
    memra__modrec *r = rt->mods[i];
    memmove(rt->mods + i, rt->mods + i + 1, (size_t)(rt->n_mods - i - 1) * sizeof *rt->mods);
    rt->n_mods--;
    rec_life_drop(r);
}

memra__modrec *memra__rec_new(memra_runtime *rt, const char *path, const char *name)
{
    if (rt->n_mods == rt->cap_mods) {
        int cap = rt->cap_mods ? rt->cap_mods * 2 : 16;
        memra__modrec **m = realloc(rt->mods, (size_t)cap * sizeof *m);
        if (m == NULL) return NULL;
        rt->mods = m;
        rt->cap_mods = cap;
    }
    memra__modrec *r = calloc(1, sizeof *r);
    if (r == NULL) return NULL;
    r->path = xstrdup(path);
    r->name = xstrdup(name);
    r->version = xstrdup("");
    r->reason = xstrdup("");
    r->iname = "";
    r->fd = -1;
    r->rt = rt;
    atomic_init(&r->refs, 0);
    atomic_init(&r->life, 1);
    if (r->path == NULL || r->name == NULL || r->version == NULL || r->reason == NULL) {
        rec_free(r);
        return NULL;
    }
    rt->mods[rt->n_mods++] = r;
    return r;
}

void memra__rec_refuse(memra__modrec *r, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(r->reason);
    r->reason = xstrdup(buf);
    r->loaded = 0;
    memra__log(MEMRA_LOG_INFO, "registry", "refused %s (%s): %s", r->name, r->path, buf);
}

/* Called when the last reference goes: per-device fini, then dlclose. */
void memra__rec_retire(memra__modrec *r)
{
    memra_runtime *rt = r->rt;
    for (int d = 0; d < rt->n_devices; d++) {
        if (r->admitted[d] && r->desc.fini != NULL) {
            memra_device *dev = rt->devices[d];
            int entered = memra__device_enter(dev) == MEMRA_STATUS_OK;
            r->desc.fini(r->ctx[d]);
            if (entered) memra__device_leave(dev);
        }
        r->admitted[d] = 0;
        r->ctx[d] = NULL;
    }
    MEMRA__DEBUG("registry", "module %s retired", r->name);
    if (r->dl != NULL) dlclose(r->dl);
    r->dl = NULL;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    /* Descriptor pointers into the closed library must not be followed again. */
    memset(&r->desc, 0, sizeof r->desc);
    memset(&r->ops, 0, sizeof r->ops);
}

/* The first reference (the registry's, at load) also holds the record alive. */
void memra__rec_ref(memra__modrec *r)
{
    if (atomic_fetch_add(&r->refs, 1) == 0) atomic_fetch_add(&r->life, 1);
}
void memra__rec_unref(memra__modrec *r)
{
    if (atomic_fetch_sub(&r->refs, 1) == 1) {
        memra__rec_retire(r);
        rec_life_drop(r);
    }
}

void *memra__op_fn(const memra_op_table *ops, memra_op op)
{
    switch (op) {
#define MEMRA__OP_CASE(name)                                                        \
    case MEMRA_OP_##name:                                                           \
        return (void *)(uintptr_t)ops->name;
        MEMRA_OP_LIST(MEMRA__OP_CASE)
#undef MEMRA__OP_CASE
    default:
        return NULL;
    }
}

const memra_variant *memra__variants(const memra__modrec *r, const memra_device *dev, memra_op op, size_t *n)
{
    *n = 0;
    if (r->desc.struct_size < offsetof(memra_module_desc, variants) + sizeof r->desc.variants ||
        r->desc.variants == NULL)
        return NULL;
    size_t c = 0;
    const memra_variant *v = r->desc.variants(&dev->caps, op, &c);
    if (v == NULL || c == 0) return NULL;
    *n = c > 64 ? 64 : c; /* the list is validated at load: at most 64 */
    return v;
}

int memra__variant_index(const memra__modrec *r, const memra_device *dev, memra_op op, const char *name)
{
    size_t n = 0;
    const memra_variant *v = memra__variants(r, dev, op, &n);
    for (size_t i = 0; name != NULL && i < n; i++)
        if (v[i].name != NULL && strcmp(v[i].name, name) == 0) return (int)i;
    return -1;
}

void memra__records_free(memra_runtime *rt)
{
    for (int i = 0; i < rt->n_mods; i++) {
        memra__modrec *r = rt->mods[i];
        if (r->loaded) {
            r->loaded = 0;
            memra__rec_unref(r);
        }
        rec_life_drop(r); /* unlisted */
    }
    free(rt->mods);
    rt->mods = NULL;
    rt->n_mods = 0;
    while (rt->names != NULL) {
        memra__name *n = rt->names->next;
        free(rt->names);
        rt->names = n;
    }
}
