/* The module registry: discovery, safety checks, admission per device, and
 * the immutable routing snapshots that dispatch reads. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "core/observe/admission.h"
#include "core/state/runtime.h"
#include "core/load/trial.h"
#include "base/trust.h"
#include "modules/host/host_module.h"

#define MIN_DESC_SIZE (offsetof(memra_module_desc, ops) + sizeof(void *))
#define MIN_OPS_SIZE (offsetof(memra_op_table, cvt_f16) + sizeof(void *))

/* ---- records ------------------------------------------------------------- */

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

/* A name that lives until memra_close (memra_routing_get hands them out),
 * one copy per distinct name. Caller holds reg_lock. */
static const char *intern(memra_runtime *rt, const char *s)
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
static void rec_unlist(memra_runtime *rt, int i)
{
    memra__modrec *r = rt->mods[i];
    memmove(rt->mods + i, rt->mods + i + 1, (size_t)(rt->n_mods - i - 1) * sizeof *rt->mods);
    rt->n_mods--;
    rec_life_drop(r);
}

static memra__modrec *rec_new(memra_runtime *rt, const char *path, const char *name)
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

static void rec_refuse(memra__modrec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_refuse(memra__modrec *r, const char *fmt, ...)
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
static void rec_retire(memra__modrec *r)
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
static void rec_ref(memra__modrec *r)
{
    if (atomic_fetch_add(&r->refs, 1) == 0) atomic_fetch_add(&r->life, 1);
}
static void rec_unref(memra__modrec *r)
{
    if (atomic_fetch_sub(&r->refs, 1) == 1) {
        rec_retire(r);
        rec_life_drop(r);
    }
}

/* ---- loading one file ------------------------------------------------------ */

static int valid_name(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > 48) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

static memra__modrec *find_loaded(memra_runtime *rt, const char *name, const memra__modrec *except)
{
    for (int i = 0; i < rt->n_mods; i++) {
        memra__modrec *r = rt->mods[i];
        if (r != except && r->loaded && strcmp(r->name, name) == 0) return r;
    }
    return NULL;
}

static void *op_fn(const memra_op_table *ops, memra_op op);

/* Read a descriptor the module handed us: version, size, then members. */
static int adopt_descriptor(memra__modrec *r, const memra_module_desc *d)
{
    if (d == NULL) {
        rec_refuse(r, "the entry point returned NULL");
        return 0;
    }
    if (d->abi_version > MEMRA_MODULE_ABI_VERSION) {
        rec_refuse(r, "module ABI v%u is newer than this core's v%u", d->abi_version, MEMRA_MODULE_ABI_VERSION);
        return 0;
    }
    if (d->abi_version < 1) {
        rec_refuse(r, "module ABI v%u is older than the oldest this core reads (v1)", d->abi_version);
        return 0;
    }
    if (d->struct_size < MIN_DESC_SIZE || (d->abi_version == MEMRA_MODULE_ABI_VERSION && d->struct_size > sizeof *d)) {
        rec_refuse(r, "descriptor size mismatch: %u bytes for ABI v%u (this core: %zu, minimum %zu)", d->struct_size,
                   d->abi_version, sizeof *d, (size_t)MIN_DESC_SIZE);
        return 0;
    }
    memset(&r->desc, 0, sizeof r->desc);
    memcpy(&r->desc, d, d->struct_size < sizeof r->desc ? d->struct_size : sizeof r->desc);
    if (!valid_name(r->desc.name)) {
        rec_refuse(r, "module name is missing or not [a-z0-9_]{1,48}");
        return 0;
    }
    free(r->name);
    r->name = xstrdup(r->desc.name);
    const char *iname = intern(r->rt, r->desc.name);
    if (r->name == NULL || iname == NULL) {
        rec_refuse(r, "out of memory");
        return 0;
    }
    r->iname = iname;
    free(r->version);
    r->version = xstrdup(r->desc.version ? r->desc.version : "");
    if (r->desc.score == NULL) {
        rec_refuse(r, "descriptor has no score function");
        return 0;
    }
    const memra_op_table *ops = r->desc.ops;
    memset(&r->ops, 0, sizeof r->ops);
    if (ops == NULL) {
        rec_refuse(r, "descriptor has no op table: a module must provide at least one op");
        return 0;
    }
    if (ops->struct_size < MIN_OPS_SIZE) {
        rec_refuse(r, "op table size %u is too small", ops->struct_size);
        return 0;
    }
    memcpy(&r->ops, ops, ops->struct_size < sizeof r->ops ? ops->struct_size : sizeof r->ops);
    r->ops.struct_size = sizeof r->ops;
    int provided = 0;
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) provided += op_fn(&r->ops, (memra_op)op) != NULL;
    if (provided == 0) {
        rec_refuse(r, "op table provides no op (every member is NULL)");
        return 0;
    }
    return 1;
}

/* Score and init on every device; refuse when no device takes the module. */
static int admit(memra_runtime *rt, memra__modrec *r)
{
    int scored = 0, admitted = 0;
    char first_fail[600] = "";
    const memra_host_services *host = memra__host_services();
    for (int d = 0; d < rt->n_devices; d++) {
        memra_device *dev = rt->devices[d];
        memra__trial_stage("score on %s", dev->label);
        int s = r->desc.score(&dev->caps);
        /* Clamped so a preference bonus (1 << 20) always outranks any score. */
        r->score[d] = s <= 0 ? 0 : s >= (1 << 20) ? (1 << 20) - 1 : s;
        if (s <= 0) {
            free(r->device_note[d]);
            r->device_note[d] = xstrdup("score 0");
            continue;
        }
        scored++;
        void *ctx = NULL;
        memra_status st = MEMRA_STATUS_OK;
        memra__clear_error();
        if (r->desc.init != NULL) {
            memra__trial_stage("init on %s", dev->label);
            int entered = memra__device_enter(dev) == MEMRA_STATUS_OK;
            st = r->desc.init(host, &dev->caps, &ctx);
            if (entered) memra__device_leave(dev);
        }
        if (st != MEMRA_STATUS_OK) {
            char note[560];
            snprintf(note, sizeof note, "init failed on %s: %s: %s", dev->label, memra_status_str(st),
                     memra_last_error()[0] ? memra_last_error() : "(no detail)");
            free(r->device_note[d]);
            r->device_note[d] = xstrdup(note);
            if (first_fail[0] == '\0') snprintf(first_fail, sizeof first_fail, "%s", note);
            memra__log(MEMRA_LOG_INFO, "registry", "module %s: %s", r->name, note);
            continue;
        }
        r->ctx[d] = ctx;
        r->admitted[d] = 1;
        admitted++;
        MEMRA__DEBUG("registry", "module %s admitted on %s with score %d", r->name, dev->label, s);
    }
    memra__clear_error();
    if (scored == 0) {
        rec_refuse(r, "score 0 on every device: no device here that it can run on");
        return 0;
    }
    if (admitted == 0) {
        rec_refuse(r, "%s", first_fail);
        return 0;
    }
    return 1;
}

/* Whether a load is self-checked (MEMRA_ADMISSION). */
static int admission_wanted(const memra_runtime *rt, int hot)
{
    const char *m = memra__config_lookup(&rt->cfg, "MEMRA_ADMISSION");
    if (m == NULL || strcmp(m, "all") == 0) return 1;
    return strcmp(m, "hot") == 0 ? hot : 0;
}

/* The part of a load after the file is open and checked (and its trial, if
 * any, passed): dlopen, descriptor, score and init, variants, self-check.
 * Takes fd (kept open while loaded, else closed). Caller holds reg_lock. */
static void load_opened(memra_runtime *rt, memra__modrec *r, int fd, const char *real, int hot)
{
    char why[PATH_MAX + 256];
    MEMRA__DEBUG("registry", "dlopen %s (descriptor %d)", real, fd);
    memra__trial_stage("constructor");
    void *dl = memra__trust_dlopen(&fd, real, why, sizeof why);
    if (dl == NULL) {
        rec_refuse(r, "not a loadable shared library: %s", why);
        close(fd);
        return;
    }
    memra_module_entry_fn entry = (memra_module_entry_fn)(uintptr_t)dlsym(dl, MEMRA_MODULE_ENTRY_SYMBOL);
    if (entry == NULL) {
        rec_refuse(r, "entry symbol %s missing", MEMRA_MODULE_ENTRY_SYMBOL);
        dlclose(dl);
        close(fd);
        return;
    }
    memra__trial_stage("entry");
    if (!adopt_descriptor(r, entry())) {
        dlclose(dl);
        close(fd);
        return;
    }
    memra__trial_name(r->name);
    memra__modrec *dup = find_loaded(rt, r->name, r);
    if (dup != NULL) {
        rec_refuse(r, "duplicate: module '%s' is already loaded from %s; this copy is ignored", r->name, dup->path);
        memset(&r->desc, 0, sizeof r->desc);
        memset(&r->ops, 0, sizeof r->ops);
        dlclose(dl);
        close(fd);
        return;
    }
    r->dl = dl;
    r->fd = fd;
    if (!admit(rt, r)) {
        r->dl = NULL;
        r->fd = -1;
        memset(&r->desc, 0, sizeof r->desc);
        memset(&r->ops, 0, sizeof r->ops);
        dlclose(dl);
        close(fd);
        return;
    }
    if (!memra__variants_validate(rt, r, why, sizeof why)) {
        rec_retire(r);
        rec_refuse(r, "bad variant list: %s", why);
        return;
    }
    if (!admission_wanted(rt, hot)) {
        r->adm_state = MEMRA__ADM_OFF;
    } else if (!memra__admission_check(rt, r)) {
        /* Quarantined: never referenced by a snapshot; fini on every device, then dlclose. */
        rec_retire(r);
        rec_refuse(r, "quarantined by the admission self-check: %s", r->adm_note);
        return;
    }
    r->loaded = 1;
    rec_ref(r); /* the registry's reference */
    memra__log(MEMRA_LOG_INFO, "registry", "loaded module %s %s from %s", r->name, r->version, real);
}

/* The trial's verdict on r: 1 when the load may go on. */
static int trial_verdict(memra__modrec *r, const memra__trial *t)
{
    if (t->st == MEMRA_STATUS_OK) {
        MEMRA__DEBUG("registry", "trial of %s passed in %.1f ms", r->path, t->ms);
        return 1;
    }
    if (valid_name(t->name)) { /* the refusal is shown under the module's own name */
        char *nm = xstrdup(t->name);
        if (nm != NULL) {
            free(r->name);
            r->name = nm;
        }
    }
    if (t->quarantined) {
        /* the helper's refusal reads "quarantined by the admission self-check: <note>" */
        const char *note = strstr(t->why, ": ");
        r->adm_state = MEMRA__ADM_QUARANTINED;
        snprintf(r->adm_note, sizeof r->adm_note, "%.*s", (int)sizeof r->adm_note - 1, note != NULL ? note + 2 : t->why);
        rec_refuse(r, "%s (in its trial load; module not loaded)", t->why);
    } else {
        rec_refuse(r, "%s", t->why);
    }
    return 0;
}

/* A file opened and checked, its record made, waiting for its trial. */
typedef struct pending {
    memra__modrec *r;
    int fd, trial;
    memra__trial t;
} pending;

typedef struct pendlist {
    pending *v;
    int n, cap;
} pendlist;

/* Open and check one file and make its record. Returns the record with *out_fd
 * (>= 0 when the load may go on), or NULL when the file is loaded already
 * (*already = 1), queued already in `pl`, or memory ran out. Caller holds reg_lock. */
static memra__modrec *load_prepare(memra_runtime *rt, const char *path, const pendlist *pl, int *already, int *out_fd)
{
    *already = 0;
    *out_fd = -1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char real[PATH_MAX], why[PATH_MAX + 256];
    int fd = memra__trust_open(path, rt->allow_unsafe, real, sizeof real, why, sizeof why);
    for (int i = 0; pl != NULL && i < pl->n; i++) {
        if (strcmp(pl->v[i].r->path, real) == 0) {
            if (fd >= 0) close(fd);
            *already = 1;
            return NULL;
        }
    }
    for (int i = 0; i < rt->n_mods; i++) {
        if (strcmp(rt->mods[i]->path, real) != 0) continue;
        if (rt->mods[i]->loaded) {
            MEMRA__DEBUG("registry", "%s is already loaded", real);
            if (fd >= 0) close(fd);
            *already = 1;
            return NULL;
        }
        /* An earlier refused or unloaded load of this path: this one replaces it. */
        rec_unlist(rt, i--);
    }
    memra__modrec *r = rec_new(rt, real, base);
    if (r == NULL) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (fd < 0) {
        rec_refuse(r, "unsafe file: %s%s", why,
                   rt->allow_unsafe ? "" : " (set MEMRA_ALLOW_UNSAFE_MODULES=1 to load it anyway)");
        return r;
    }
    *out_fd = fd;
    return r;
}

/* Load one file. `trial`: run the contained trial first (module path and
 * hot-add; the install's own folder is trusted). Returns the record made
 * (loaded, or refused with a reason), or NULL when the file is loaded
 * already (*already = 1) or memory ran out. Caller holds reg_lock. */
static memra__modrec *load_file(memra_runtime *rt, const char *path, int trial, int hot, int *already)
{
    int fd;
    memra__modrec *r = load_prepare(rt, path, NULL, already, &fd);
    if (r == NULL || fd < 0) return r;
    if (trial && memra__trial_enabled(rt)) {
        memra__trial t;
        memra__trial_start(rt, fd, hot, &t);
        memra__trial_wait(&t, 1);
        if (!trial_verdict(r, &t)) {
            close(fd);
            return r;
        }
    }
    load_opened(rt, r, fd, r->path, hot);
    return r;
}

/* The helper's load (core/load/trial.c): the file is the parent's checked
 * descriptor, no trial. Caller holds reg_lock. */
memra__modrec *memra__registry_load_fd(memra_runtime *rt, int fd, const char *shown, int hot);
memra__modrec *memra__registry_load_fd(memra_runtime *rt, int fd, const char *shown, int hot)
{
    const char *base = strrchr(shown, '/');
    memra__modrec *r = rec_new(rt, shown, base ? base + 1 : shown);
    if (r == NULL) {
        close(fd);
        return NULL;
    }
    load_opened(rt, r, fd, r->path, hot);
    return r;
}

/* Queue a file of a scanned folder; its trial runs with the others'. */
static void pend_file(memra_runtime *rt, const char *path, int trial, pendlist *pl)
{
    int fd, already;
    memra__modrec *r = load_prepare(rt, path, pl, &already, &fd);
    if (r == NULL || fd < 0) return;
    if (pl->n == pl->cap) {
        int cap = pl->cap ? pl->cap * 2 : 16;
        pending *v = realloc(pl->v, (size_t)cap * sizeof *v);
        if (v == NULL) {
            rec_refuse(r, "out of memory");
            close(fd);
            return;
        }
        pl->v = v;
        pl->cap = cap;
    }
    pending *p = &pl->v[pl->n++];
    memset(p, 0, sizeof *p);
    p->r = r;
    p->fd = fd;
    p->trial = trial && memra__trial_enabled(rt);
}

/* Run the queued trials, several helpers at once, then load in queue order
 * (the search order is the priority among modules of one name). */
static void pend_flush(memra_runtime *rt, pendlist *pl)
{
    int batch[8], nb = 0;
    for (int i = 0; i <= pl->n; i++) {
        if (i < pl->n && pl->v[i].trial) {
            memra__trial_start(rt, pl->v[i].fd, 0, &pl->v[i].t);
            batch[nb++] = i;
        }
        if (nb == (int)(sizeof batch / sizeof batch[0]) || (i == pl->n && nb > 0)) {
            /* the batch's trials share one wait: each keeps its own limits */
            memra__trial tmp[8];
            for (int k = 0; k < nb; k++) tmp[k] = pl->v[batch[k]].t;
            memra__trial_wait(tmp, nb);
            for (int k = 0; k < nb; k++) pl->v[batch[k]].t = tmp[k];
            nb = 0;
        }
    }
    for (int i = 0; i < pl->n; i++) {
        pending *p = &pl->v[i];
        if (p->trial && !trial_verdict(p->r, &p->t)) {
            close(p->fd);
            continue;
        }
        load_opened(rt, p->r, p->fd, p->r->path, 0);
    }
    free(pl->v);
    pl->v = NULL;
    pl->n = pl->cap = 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void scan_dir(memra_runtime *rt, const char *dir, int explicit_entry, int trial, pendlist *pl)
{
    char why[PATH_MAX + 256], real[PATH_MAX];
    memra__modrec *r;
    if (dir[0] != '/') {
        r = rec_new(rt, dir, dir[0] ? dir : "(empty)");
        if (r != NULL)
            rec_refuse(r, "relative module folder '%s' refused: memra never loads modules from the current "
                          "directory; give an absolute path",
                       dir);
        return;
    }
    size_t dl = strlen(dir);
    if (dl >= PATH_MAX) {
        char shown[64];
        snprintf(shown, sizeof shown, "%.40s...", dir);
        if ((r = rec_new(rt, shown, shown)) != NULL)
            rec_refuse(r, "module folder path of %zu bytes is longer than PATH_MAX (%d): refused, never truncated", dl,
                       PATH_MAX);
        return;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (explicit_entry && (r = rec_new(rt, dir, dir)) != NULL)
            rec_refuse(r, "module folder does not exist or is not a folder: %s", strerror(errno ? errno : ENOTDIR));
        else
            MEMRA__DEBUG("registry", "no module folder at %s", dir);
        return;
    }
    int dfd = memra__trust_open_dir(dir, rt->allow_unsafe, real, sizeof real, why, sizeof why);
    if (dfd < 0) {
        if ((r = rec_new(rt, dir, dir)) != NULL)
            rec_refuse(r, "unsafe module folder: %s (set MEMRA_ALLOW_UNSAFE_MODULES=1 to load it anyway)", why);
        return;
    }
    MEMRA__DEBUG("registry", "scanning module folder %s", dir);
    DIR *dp = fdopendir(dfd);
    if (dp == NULL) {
        close(dfd);
        if ((r = rec_new(rt, dir, dir)) != NULL) rec_refuse(r, "cannot open module folder: %s", strerror(errno));
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 4 || strcmp(de->d_name + l - 3, ".so") != 0 || de->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (nn == NULL) break;
            names = nn;
        }
        if ((names[n] = strdup(de->d_name)) != NULL) n++;
    }
    closedir(dp);
    if (n > 1) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        int plen = snprintf(path, sizeof path, "%s/%s", real, names[i]);
        if (plen < 0 || (size_t)plen >= sizeof path) {
            if ((r = rec_new(rt, names[i], names[i])) != NULL)
                rec_refuse(r, "%s/%s is longer than PATH_MAX (%d): refused, never truncated", dir, names[i], PATH_MAX);
        } else {
            pend_file(rt, path, trial, pl);
        }
        free(names[i]);
    }
    free(names);
}

/* The install's module folder, found relative to libmemra itself. */
static int default_module_dir(char *buf, size_t len)
{
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&memra_open, &info) == 0 || info.dli_fname == NULL) return 0;
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real) == NULL) return 0;
    char *slash = strrchr(real, '/');
    if (slash == NULL) return 0;
    *slash = '\0';
    int n = snprintf(buf, len, "%s/%s", real, MEMRA_MODULE_SUBDIR);
    return n > 0 && (size_t)n < len;
}

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

static void *op_fn(const memra_op_table *ops, memra_op op)
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
        rec_ref(r);
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
            if (op_fn(&r->ops, (memra_op)op) == NULL) continue;
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
static memra_status publish_all(memra_runtime *rt)
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

memra_status memra__registry_republish(memra_runtime *rt);
memra_status memra__registry_republish(memra_runtime *rt) { return publish_all(rt); }

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
    for (int i = 0; i < s->n_mods; i++) rec_unref(s->mods[i]);
    free(s->mods);
    free(s);
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

memra__modrec *memra__find_admitted(memra__snapshot *snap, const char *name)
{
    for (int i = 0; snap != NULL && i < snap->n_mods; i++)
        if (strcmp(snap->mods[i]->name, name) == 0) return snap->mods[i];
    return NULL;
}

/* ---- open / close ---------------------------------------------------------------- */

memra_status memra__registry_open(memra_runtime *rt)
{
    pthread_mutex_lock(&rt->reg_lock);
    /* The host module first: built in, through the same descriptor path. */
    memra__modrec *r = rec_new(rt, "(built-in)", "host");
    if (r == NULL) {
        pthread_mutex_unlock(&rt->reg_lock);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "registry");
    }
    if (adopt_descriptor(r, memra__host_module_entry()) && admit(rt, r)) {
        r->loaded = 1;
        r->adm_state = MEMRA__ADM_EXEMPT;
        snprintf(r->adm_note, sizeof r->adm_note, "the reference: exempt");
        rec_ref(r);
    }
    pendlist pl = {0};
    if (rt->module_path != NULL && !memra__trial_child_active()) {
        char *copy = strdup(rt->module_path);
        /* strtok_r would skip empty entries; an empty entry means the current
         * directory to some loaders, so it is refused explicitly. */
        char *p = copy;
        while (p != NULL) {
            char *e = strchr(p, ':');
            if (e) *e = '\0';
            scan_dir(rt, p, 1, 1, &pl);
            p = e ? e + 1 : NULL;
        }
        free(copy);
    }
    char dir[PATH_MAX];
    if (!rt->opts.no_default_modules && default_module_dir(dir, sizeof dir)) scan_dir(rt, dir, 0, 0, &pl);
    pend_flush(rt, &pl);
    memra_status st = publish_all(rt);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
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
    for (int i = 0; i < rt->n_mods; i++) {
        memra__modrec *r = rt->mods[i];
        if (r->loaded) {
            r->loaded = 0;
            rec_unref(r);
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

memra_status memra_module_load(memra_runtime *rt, const char *path)
{
    if (rt == NULL || path == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_load: NULL argument");
    if (path[0] != '/')
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_module_load: '%s' is relative; memra loads modules by absolute path only", path);
    if (strlen(path) >= PATH_MAX)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra_module_load: a path of %zu bytes is longer than PATH_MAX (%d): refused, never truncated",
                           strlen(path), PATH_MAX);
    char real[PATH_MAX];
    if (realpath(path, real) == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_module_load: %s: %s", path, strerror(errno));
    pthread_mutex_lock(&rt->reg_lock);
    int already = 0;
    memra__modrec *r = load_file(rt, real, 1, 1, &already);
    memra_status st = MEMRA_STATUS_OK;
    if (already) st = MEMRA__FAIL(MEMRA_STATUS_MODULE_ERROR, "memra_module_load: %s is already loaded", real);
    else if (r == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_module_load: out of memory recording %s", real);
    else if (!r->loaded) st = MEMRA__FAIL(MEMRA_STATUS_MODULE_ERROR, "module %s refused: %s", r->name, r->reason);
    else st = publish_all(rt);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

memra_status memra_module_unload(memra_runtime *rt, const char *name)
{
    if (rt == NULL || name == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_module_unload: NULL argument");
    if (strcmp(name, "host") == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "the host module is built in and cannot be unloaded");
    pthread_mutex_lock(&rt->reg_lock);
    memra__modrec *r = find_loaded(rt, name, NULL);
    memra_status st;
    if (r == NULL) {
        st = MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_module_unload: no loaded module '%s'", name);
    } else {
        /* its shadows first: no sample may start a run of it once it is unloaded */
        for (int d = 0; d < rt->n_devices; d++) memra__shadow_module_gone(rt->devices[d], r->name);
        r->loaded = 0;
        st = publish_all(rt);
        if (st != MEMRA_STATUS_OK) {
            r->loaded = 1; /* every device still routes to it */
        } else {
            free(r->reason);
            r->reason = xstrdup("unloaded");
            /* a shadow run of it still queued on a GPU must end before its fini unloads the kernels */
            for (int d = 0; d < rt->n_devices; d++)
                if (!rt->devices[d]->is_host) memra__shadow_release_module(rt->devices[d], r->name);
            rec_unref(r); /* closes the library once the last snapshot goes */
        }
    }
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

static memra_status check_list(const char *list, int pairs_required)
{
    if (list == NULL) return MEMRA_STATUS_OK;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char tok[160];
        if (l == 0 || l >= sizeof tok) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "bad list item in '%s'", list);
        memcpy(tok, p, l);
        tok[l] = '\0';
        char *eq = strchr(tok, '=');
        if (pairs_required && eq == NULL)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "'%s': preferences are op=module", tok);
        if (eq != NULL) {
            *eq = '\0';
            if (memra_op_from_name(tok) == MEMRA_OP_COUNT_)
                return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "'%s' is not an op", tok);
        }
        p += l;
        if (*p == ',') p++;
    }
    return MEMRA_STATUS_OK;
}

memra_status memra__routing_validate(const char *prefer, const char *disable)
{
    memra_status st = check_list(prefer, 1);
    return st != MEMRA_STATUS_OK ? st : check_list(disable, 0);
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
    st = publish_all(rt);
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
