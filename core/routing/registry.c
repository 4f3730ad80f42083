/* The module registry: the immutable routing snapshots that dispatch reads,
 * their building and publishing, and the getters of the records (records.c).
 * Loading a file into a record is core/load/load.c's; the verdicts of the
 * observers arrive through core/routing/verdict.h. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "core/routing/routing.h"
#include "core/device/device.h"

/* ---- snapshots ------------------------------------------------------------- */

static int list_has(const char *list, const char *item, const char *op)
{
    /* Items are "name" or "op=module"; matches `item` alone, or the pair. */
    if (list == NULL) return 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char tok[160];
        if (l < sizeof tok) {
            memcpy(tok, p, l);
            tok[l] = '\0';
            char *eq = strchr(tok, '=');
            if (eq == NULL) {
                if (strcmp(tok, item) == 0) return 1;
            } else if (op != NULL) {
                *eq = '\0';
                if (strcmp(tok, op) == 0 && strcmp(eq + 1, item) == 0) return 1;
            }
        }
        p += l;
        if (*p == ',') p++;
    }
    return 0;
}

static int lane_cmp(const void *a, const void *b)
{
    const memra__lane *x = a, *y = b;
    if (x->score != y->score) return y->score - x->score;
    return strcmp(x->mod->name, y->mod->name);
}

static memra_status snapshot_build(memra_runtime *rt, memra_device *dev, memra__snapshot **out)
{
    memra__snapshot *s = calloc(1, sizeof *s);
    if (s == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "snapshot");
    atomic_init(&s->refs, 1);
    s->generation = ++rt->generation;
    s->mods = calloc((size_t)rt->n_mods + 1, sizeof *s->mods);
    if (s->mods == NULL) {
        free(s);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "snapshot");
    }
    int d = dev->index;
    for (int i = 0; i < rt->n_mods; i++) {
        memra__modrec *r = rt->mods[i];
        if (!r->loaded || !r->admitted[d]) continue;
        if (list_has(rt->disable, r->name, NULL)) continue;
        memra__rec_ref(r);
        s->mods[s->n_mods++] = r;
    }
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        const char *opname = memra_op_name((memra_op)op);
        s->lanes[op] = calloc((size_t)s->n_mods + 1, sizeof(memra__lane));
        if (s->lanes[op] == NULL) {
            memra__snapshot_release(s);
            return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "snapshot");
        }
        if (list_has(rt->disable, opname, NULL)) continue;
        int n = 0;
        const memra__shadow *sh = &dev->shadow[op];
        for (int i = 0; i < s->n_mods; i++) {
            memra__modrec *r = s->mods[i];
            if (memra__op_fn(&r->ops, (memra_op)op) == NULL) continue;
            if (list_has(rt->disable, r->name, opname)) continue;
            if (sh->active && strcmp(sh->module, r->name) == 0) {
                /* A shadow never serves the op; the snapshot keeps its lane for sampling. */
                s->shadow[op] = (memra__lane){.mod = r, .ctx = r->ctx[d], .score = r->score[d],
                                              .cell = memra__ledger_cell_get(dev, (memra_op)op, r->name),
                                              .variant = memra__variant_index(r, dev, (memra_op)op, sh->variant)};
                continue;
            }
            memra__lane *l = &s->lanes[op][n++];
            l->mod = r;
            l->ctx = r->ctx[d];
            l->score = r->score[d];
            l->variant = -1;
            if (list_has(rt->prefer, r->name, opname)) l->score += 1 << 20;
            l->cell = memra__ledger_cell_get(dev, (memra_op)op, r->name);
            if (l->cell == NULL) {
                memra__snapshot_release(s);
                return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "ledger");
            }
        }
        qsort(s->lanes[op], (size_t)n, sizeof(memra__lane), lane_cmp);
        s->n_lanes[op] = n;
    }
    memra_status tst = memra__tune_resolve(rt, dev, s);
    if (tst != MEMRA_STATUS_OK) {
        memra__snapshot_release(s);
        return tst;
    }
    *out = s;
    return MEMRA_STATUS_OK;
}

/* Build a new snapshot for every device, then publish them all: a failed build
 * (out of memory) leaves every device on its old routing. Caller holds reg_lock. */
memra_status memra__registry_republish(memra_runtime *rt)
{
    memra__snapshot *fresh[MEMRA__MAX_DEVICES] = {0};
    for (int d = 0; d < rt->n_devices; d++) {
        memra_status st = snapshot_build(rt, rt->devices[d], &fresh[d]);
        if (st != MEMRA_STATUS_OK) {
            for (int e = 0; e < d; e++) memra__snapshot_release(fresh[e]);
            return st;
        }
    }
    for (int d = 0; d < rt->n_devices; d++) {
        memra_device *dev = rt->devices[d];
        pthread_mutex_lock(&dev->snap_lock);
        memra__snapshot *old = dev->current;
        dev->current = fresh[d];
        pthread_mutex_unlock(&dev->snap_lock);
        if (old != NULL) memra__snapshot_release(old);
        MEMRA__DEBUG("registry", "published routing generation %llu on %s", (unsigned long long)fresh[d]->generation,
                     dev->label);
    }
    return MEMRA_STATUS_OK;
}

memra__snapshot *memra__snapshot_acquire(memra_device *dev)
{
    pthread_mutex_lock(&dev->snap_lock);
    memra__snapshot *s = dev->current;
    if (s != NULL) atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&dev->snap_lock);
    return s;
}

void memra__snapshot_release(memra__snapshot *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1) return;
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        free(s->lanes[op]);
        free(s->tuned[op]);
    }
    for (int i = 0; i < s->n_mods; i++) memra__rec_unref(s->mods[i]);
    free(s->mods);
    free(s);
}

memra__modrec *memra__find_admitted(memra__snapshot *snap, const char *name)
{
    for (int i = 0; snap != NULL && i < snap->n_mods; i++)
        if (strcmp(snap->mods[i]->name, name) == 0) return snap->mods[i];
    return NULL;
}

void memra__registry_close(memra_runtime *rt)
{
    for (int d = 0; d < rt->n_devices; d++) {
        memra_device *dev = rt->devices[d];
        pthread_mutex_lock(&dev->snap_lock);
        memra__snapshot *s = dev->current;
        dev->current = NULL;
        pthread_mutex_unlock(&dev->snap_lock);
        memra__snapshot_release(s);
    }
    memra__records_free(rt);
}

/* ---- public --------------------------------------------------------------------- */

/* The getters take reg_lock: a concurrent load may grow rt->mods. */
static pthread_mutex_t *reg_lock_of(const memra_runtime *rt) { return (pthread_mutex_t *)(uintptr_t)&rt->reg_lock; }

int memra_module_count(const memra_runtime *rt)
{
    if (rt == NULL) return 0;
    pthread_mutex_lock(reg_lock_of(rt));
    int n = rt->n_mods;
    pthread_mutex_unlock(reg_lock_of(rt));
    return n;
}

memra_status memra_module_info_get(const memra_runtime *rt, int index, memra_module_info *out)
{
    if (rt == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_info_get: NULL");
    pthread_mutex_lock(reg_lock_of(rt));
    memra_status st = MEMRA_STATUS_OK;
    if (index < 0 || index >= rt->n_mods) {
        st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_info_get: index %d out of range", index);
    } else {
        const memra__modrec *r = rt->mods[index];
        out->name = r->name;
        out->version = r->version;
        out->path = r->path;
        out->loaded = r->loaded;
        out->reason = r->reason;
    }
    pthread_mutex_unlock(reg_lock_of(rt));
    return st;
}

memra_status memra_module_admission_get(const memra_runtime *rt, int index, memra_admission_info *out)
{
    if (rt == NULL || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_admission_get: %s is NULL",
                           rt == NULL ? "rt" : "out");
    if (out->struct_size < offsetof(memra_admission_info, cases) + sizeof out->cases)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_admission_get: struct_size %u is too small (%zu)",
                           out->struct_size, offsetof(memra_admission_info, cases) + sizeof out->cases);
    pthread_mutex_lock(reg_lock_of(rt));
    memra_status st = MEMRA_STATUS_OK;
    if (index < 0 || index >= rt->n_mods) {
        st = MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_admission_get: index %d out of range", index);
    } else {
        const memra__modrec *r = rt->mods[index];
        out->state = (memra_admission_state)r->adm_state;
        out->detail = r->adm_note;
        out->ms = r->adm_ms;
        out->cases = r->adm_cases;
    }
    pthread_mutex_unlock(reg_lock_of(rt));
    return st;
}

memra_status memra_routing_configure(memra_runtime *rt, const char *prefer, const char *disable)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_routing_configure: NULL runtime");
    memra_status st = memra__routing_validate(prefer, disable);
    if (st != MEMRA_STATUS_OK) return st;
    pthread_mutex_lock(&rt->reg_lock);
    if (prefer != NULL) {
        free(rt->prefer);
        rt->prefer = prefer[0] ? strdup(prefer) : NULL;
    }
    if (disable != NULL) {
        free(rt->disable);
        rt->disable = disable[0] ? strdup(disable) : NULL;
    }
    st = memra__registry_republish(rt);
    memra__routing_warn_unknown(rt, prefer, disable, 0);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

int memra_routing_get(memra_device *dev, memra_op op, const char **names, int cap)
{
    if (dev == NULL || (int)op < 0 || op >= MEMRA_OP_COUNT_) return 0;
    if (cap < 0 || (names == NULL && cap > 0)) {
        MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_routing_get: names is NULL with cap %d (NULL only with cap 0)",
                    cap);
        return -1;
    }
    memra__snapshot *s = memra__snapshot_acquire(dev);
    if (s == NULL) return 0;
    int n = s->n_lanes[op];
    /* Interned names live until memra_close; records may go at unload. */
    for (int i = 0; i < n && i < cap; i++) names[i] = s->lanes[op][i].mod->iname;
    memra__snapshot_release(s);
    return n;
}

int memra_module_score(memra_device *dev, const char *name)
{
    if (dev == NULL || name == NULL) return 0;
    memra__snapshot *s = memra__snapshot_acquire(dev);
    memra__modrec *r = memra__find_admitted(s, name);
    int score = r ? r->score[dev->index] : 0;
    memra__snapshot_release(s);
    return score;
}

const char *memra_module_device_note(const memra_runtime *rt, int index, const memra_device *dev)
{
    if (rt == NULL || dev == NULL) return NULL;
    pthread_mutex_lock(reg_lock_of(rt));
    const char *note = NULL;
    if (index >= 0 && index < rt->n_mods) {
        const memra__modrec *r = rt->mods[index];
        if (!(r->loaded && r->admitted[dev->index])) note = r->device_note[dev->index];
    }
    pthread_mutex_unlock(reg_lock_of(rt));
    return note;
}
