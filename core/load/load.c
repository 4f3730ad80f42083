/* Loading modules: a module file is opened and checked by its descriptor
 * (base/trust.c), tried in the memra-trial helper (core/load/trial.c),
 * dlopen'd, its descriptor adopted, scored and initialised on each device,
 * its variants checked and its ops self-checked (core/observe/admission.c),
 * then handed to routing (a record, a reference, a publish). Also the module
 * path's scan at memra_open, hot load and unload. */
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
#include "base/trust.h"
#include "core/device/device.h"
#include "core/load/load.h"
#include "core/load/trial.h"
#include "core/observe/admission.h"
#include "core/observe/shadow.h"
#include "core/routing/routing.h"
#include "core/routing/verdict.h"
#include "modules/host/host_module.h"

#define MIN_DESC_SIZE (offsetof(memra_module_desc, ops) + sizeof(void *))
#define MIN_OPS_SIZE (offsetof(memra_op_table, cvt_f16) + sizeof(void *))

static char *xstrdup(const char *s) { return strdup(s ? s : ""); }

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

/* Read a descriptor the module handed us: version, size, then members. */
static int adopt_descriptor(memra__modrec *r, const memra_module_desc *d)
{
    if (d == NULL) {
        memra__rec_refuse(r, "the entry point returned NULL");
        return 0;
    }
    if (d->abi_version > MEMRA_MODULE_ABI_VERSION) {
        memra__rec_refuse(r, "module ABI v%u is newer than this core's v%u", d->abi_version, MEMRA_MODULE_ABI_VERSION);
        return 0;
    }
    if (d->abi_version < 1) {
        memra__rec_refuse(r, "module ABI v%u is older than the oldest this core reads (v1)", d->abi_version);
        return 0;
    }
    if (d->struct_size < MIN_DESC_SIZE || (d->abi_version == MEMRA_MODULE_ABI_VERSION && d->struct_size > sizeof *d)) {
        memra__rec_refuse(r, "descriptor size mismatch: %u bytes for ABI v%u (this core: %zu, minimum %zu)", d->struct_size,
                   d->abi_version, sizeof *d, (size_t)MIN_DESC_SIZE);
        return 0;
    }
    memset(&r->desc, 0, sizeof r->desc);
    memcpy(&r->desc, d, d->struct_size < sizeof r->desc ? d->struct_size : sizeof r->desc);
    if (!valid_name(r->desc.name)) {
        memra__rec_refuse(r, "module name is missing or not [a-z0-9_]{1,48}");
        return 0;
    }
    free(r->name);
    r->name = xstrdup(r->desc.name);
    const char *iname = memra__intern(r->rt, r->desc.name);
    if (r->name == NULL || iname == NULL) {
        memra__rec_refuse(r, "out of memory");
        return 0;
    }
    r->iname = iname;
    free(r->version);
    r->version = xstrdup(r->desc.version ? r->desc.version : "");
    if (r->desc.score == NULL) {
        memra__rec_refuse(r, "descriptor has no score function");
        return 0;
    }
    const memra_op_table *ops = r->desc.ops;
    memset(&r->ops, 0, sizeof r->ops);
    if (ops == NULL) {
        memra__rec_refuse(r, "descriptor has no op table: a module must provide at least one op");
        return 0;
    }
    if (ops->struct_size < MIN_OPS_SIZE) {
        memra__rec_refuse(r, "op table size %u is too small", ops->struct_size);
        return 0;
    }
    memcpy(&r->ops, ops, ops->struct_size < sizeof r->ops ? ops->struct_size : sizeof r->ops);
    r->ops.struct_size = sizeof r->ops;
    const int old_quant = r->ops.quant_q8_1 != NULL && r->desc.q8_1_sums == 0;
    if (old_quant) {
        /* records without the sum plane would feed a gemm_kr that reads it: not routed */
        r->ops.quant_q8_1 = NULL;
        memra__log(MEMRA_LOG_WARN, "registry",
                   "module %s: its quant_q8_1 does not declare the q8_1 records' sum plane (descriptor member "
                   "q8_1_sums): that op is not used",
                   r->name);
    }
    int provided = 0;
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) provided += memra__op_fn(&r->ops, (memra_op)op) != NULL;
    if (provided == 0) {
        memra__rec_refuse(r, old_quant ? "op table provides no usable op (its quant_q8_1 does not declare the "
                                         "q8_1 records' sum plane, q8_1_sums)"
                                       : "op table provides no op (every member is NULL)");
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
        memra__rec_refuse(r, "score 0 on every device: no device here that it can run on");
        return 0;
    }
    if (admitted == 0) {
        memra__rec_refuse(r, "%s", first_fail);
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
        memra__rec_refuse(r, "not a loadable shared library: %s", why);
        close(fd);
        return;
    }
    memra_module_entry_fn entry = (memra_module_entry_fn)(uintptr_t)dlsym(dl, MEMRA_MODULE_ENTRY_SYMBOL);
    if (entry == NULL) {
        memra__rec_refuse(r, "entry symbol %s missing", MEMRA_MODULE_ENTRY_SYMBOL);
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
        memra__rec_refuse(r, "duplicate: module '%s' is already loaded from %s; this copy is ignored", r->name, dup->path);
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
        memra__rec_retire(r);
        memra__rec_refuse(r, "bad variant list: %s", why);
        return;
    }
    if (!admission_wanted(rt, hot)) {
        memra__verdict_admission(r, MEMRA__ADM_OFF, 0.0, 0, ""); /* a fresh record: nothing else to keep */
    } else if (!memra__admission_check(rt, r)) {
        /* Quarantined: never referenced by a snapshot; fini on every device, then dlclose. */
        memra__rec_retire(r);
        memra__rec_refuse(r, "quarantined by the admission self-check: %s", r->adm_note);
        return;
    }
    r->loaded = 1;
    memra__rec_ref(r); /* the registry's reference */
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
        memra__verdict_admission(r, MEMRA__ADM_QUARANTINED, 0.0, 0, note != NULL ? note + 2 : t->why);
        memra__rec_refuse(r, "%s (in its trial load; module not loaded)", t->why);
    } else {
        memra__rec_refuse(r, "%s", t->why);
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
        memra__rec_unlist(rt, i--);
    }
    memra__modrec *r = memra__rec_new(rt, real, base);
    if (r == NULL) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (fd < 0) {
        memra__rec_refuse(r, "unsafe file: %s%s", why,
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
memra__modrec *memra__load_fd(memra_runtime *rt, int fd, const char *shown, int hot)
{
    const char *base = strrchr(shown, '/');
    memra__modrec *r = memra__rec_new(rt, shown, base ? base + 1 : shown);
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
            memra__rec_refuse(r, "out of memory");
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
        r = memra__rec_new(rt, dir, dir[0] ? dir : "(empty)");
        if (r != NULL)
            memra__rec_refuse(r, "relative module folder '%s' refused: memra never loads modules from the current "
                          "directory; give an absolute path",
                       dir);
        return;
    }
    size_t dl = strlen(dir);
    if (dl >= PATH_MAX) {
        char shown[64];
        snprintf(shown, sizeof shown, "%.40s...", dir);
        if ((r = memra__rec_new(rt, shown, shown)) != NULL)
            memra__rec_refuse(r, "module folder path of %zu bytes is longer than PATH_MAX (%d): refused, never truncated", dl,
                       PATH_MAX);
        return;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (explicit_entry && (r = memra__rec_new(rt, dir, dir)) != NULL)
            memra__rec_refuse(r, "module folder does not exist or is not a folder: %s", strerror(errno ? errno : ENOTDIR));
        else
            MEMRA__DEBUG("registry", "no module folder at %s", dir);
        return;
    }
    int dfd = memra__trust_open_dir(dir, rt->allow_unsafe, real, sizeof real, why, sizeof why);
    if (dfd < 0) {
        if ((r = memra__rec_new(rt, dir, dir)) != NULL)
            memra__rec_refuse(r, "unsafe module folder: %s (set MEMRA_ALLOW_UNSAFE_MODULES=1 to load it anyway)", why);
        return;
    }
    MEMRA__DEBUG("registry", "scanning module folder %s", dir);
    DIR *dp = fdopendir(dfd);
    if (dp == NULL) {
        close(dfd);
        if ((r = memra__rec_new(rt, dir, dir)) != NULL) memra__rec_refuse(r, "cannot open module folder: %s", strerror(errno));
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
            if ((r = memra__rec_new(rt, names[i], names[i])) != NULL)
                memra__rec_refuse(r, "%s/%s is longer than PATH_MAX (%d): refused, never truncated", dir, names[i], PATH_MAX);
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
    if (dladdr((void *)(uintptr_t)&default_module_dir, &info) == 0 || info.dli_fname == NULL) return 0;
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real) == NULL) return 0;
    char *slash = strrchr(real, '/');
    if (slash == NULL) return 0;
    *slash = '\0';
    int n = snprintf(buf, len, "%s/%s", real, MEMRA_MODULE_SUBDIR);
    return n > 0 && (size_t)n < len;
}

/* ---- open / close ---------------------------------------------------------------- */

memra_status memra__load_open(memra_runtime *rt)
{
    pthread_mutex_lock(&rt->reg_lock);
    /* The host module first: built in, through the same descriptor path. */
    memra__modrec *r = memra__rec_new(rt, "(built-in)", "host");
    if (r == NULL) {
        pthread_mutex_unlock(&rt->reg_lock);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "registry");
    }
    if (adopt_descriptor(r, memra__host_module_entry()) && admit(rt, r)) {
        r->loaded = 1;
        memra__verdict_admission(r, MEMRA__ADM_EXEMPT, 0.0, 0, "the reference: exempt");
        memra__rec_ref(r);
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
    memra_status st = memra__registry_republish(rt);
    pthread_mutex_unlock(&rt->reg_lock);
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
    else st = memra__registry_republish(rt);
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
        st = memra__registry_republish(rt);
        if (st != MEMRA_STATUS_OK) {
            r->loaded = 1; /* every device still routes to it */
        } else {
            free(r->reason);
            r->reason = xstrdup("unloaded");
            /* a shadow run of it still queued on a GPU must end before its fini unloads the kernels */
            for (int d = 0; d < rt->n_devices; d++)
                if (!rt->devices[d]->is_host) memra__shadow_release_module(rt->devices[d], r->name);
            memra__rec_unref(r); /* closes the library once the last snapshot goes */
        }
    }
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

