/* The configuration layer: one table of knobs (config.h), parsed once at
 * memra_open. A value comes from memra_options.settings ("option"), else from
 * the environment ("environment", unless options.ignore_environment), else the
 * knob's default. A bad value fails memra_open with INVALID_ARGUMENT naming
 * the variable and the value. A MEMRA_* variable no row knows is kept (an
 * out-of-tree module may read it through host->knob) and warned about.
 * This file is the only place in the library that reads the environment. */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

extern char **environ;

typedef enum { K_BOOL, K_UINT, K_ENUM, K_STR, K_TILE, K_MB, K_ARCH } knob_kind;

typedef struct knob_def {
    const char *name, *owner;
    knob_kind kind;
    const char *allowed, *def, *help;
} knob_def;

static const knob_def k_knobs[MEMRA__KNOB_COUNT] = {
#define MEMRA__KNOB_DEF(id, name, owner, kind, allowed, def, help) {name, owner, K_##kind, allowed, def, help},
    MEMRA__KNOB_LIST(MEMRA__KNOB_DEF)
#undef MEMRA__KNOB_DEF
};

void memra__knob_info(int k, const char **name, const char **def, const char **owner, const char **help)
{
    const knob_def *d = &k_knobs[k];
    *name = d->name;
    *def = d->def;
    *owner = d->owner;
    *help = d->help;
}

static int knob_find(const char *name, size_t len)
{
    for (int i = 0; i < MEMRA__KNOB_COUNT; i++)
        if (strlen(k_knobs[i].name) == len && strncmp(k_knobs[i].name, name, len) == 0) return i;
    return -1;
}

/* Decimal digits only: no sign, no space, no 0x, no exponent. */
static int all_digits(const char *s)
{
    if (s == NULL || *s == '\0') return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!all_digits(s)) return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0') return -1;
    *out = v;
    return 0;
}

static int enum_has(const char *allowed, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = allowed; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        if (bar == NULL) break;
        p = bar + 1;
    }
    return 0;
}

/* One entry "N:profile" of a per-device MEMRA_ARCH list, [p, end): 0 and the
 * ordinal and the profile's span when well formed, else -1 with why. */
static int arch_entry(const char *allowed, const char *p, const char *end, int *ord, const char **name, size_t *nlen,
                      const char **why)
{
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (colon == NULL || colon == p) {
        *why = "expected ORDINAL:profile";
        return -1;
    }
    long v = 0;
    for (const char *q = p; q < colon; q++) {
        if (!isdigit((unsigned char)*q) || v > 1000) {
            *why = "the ordinal is not a decimal number";
            return -1;
        }
        v = v * 10 + (*q - '0');
    }
    if (v > 15) {
        *why = "the ordinal is above 15";
        return -1;
    }
    char nm[16];
    size_t n = (size_t)(end - colon - 1);
    if (n == 0 || n >= sizeof nm) {
        *why = "the profile is empty or too long";
        return -1;
    }
    memcpy(nm, colon + 1, n);
    nm[n] = '\0';
    if (!enum_has(allowed, nm) || strcmp(nm, "host") == 0) {
        *why = "the profile is not one of sm90|sm120|cuda (host is only the plain form: CUDA off)";
        return -1;
    }
    *ord = (int)v;
    *name = colon + 1;
    *nlen = n;
    return 0;
}

/* Walks a per-device list; calls back per entry. -1 with why on a bad one. */
static int arch_walk(const char *allowed, const char *v, int *ords, int max, int *n_out, const char **why)
{
    int n = 0, seen[16] = {0};
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        int ord = 0;
        const char *name = NULL;
        size_t nlen = 0;
        if (arch_entry(allowed, p, end, &ord, &name, &nlen, why) != 0) return -1;
        if (seen[ord]) {
            *why = "an ordinal is named twice";
            return -1;
        }
        seen[ord] = 1;
        if (ords != NULL && n < max) ords[n] = ord;
        n++;
        if (comma == NULL) break;
        p = comma + 1;
    }
    *n_out = n;
    return 0;
}

/* 0 when `v` is a valid value of knob k; else a message naming both. */
static memra_status knob_check(int k, const char *v, const char *where)
{
    const knob_def *d = &k_knobs[k];
    uint64_t u = 0;
    switch (d->kind) {
    case K_BOOL:
        if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s=%s (%s): expected 0 or 1", d->name, v, where);
    case K_UINT: {
        uint64_t lo = 0, hi = 0;
        sscanf(d->allowed, "%llu..%llu", (unsigned long long *)&lo, (unsigned long long *)&hi);
        if (parse_u64(v, &u) == 0 && u >= lo && u <= hi) return MEMRA_STATUS_OK;
        /* the words after the range ("1..16|auto|waves|fill") are values too */
        if (strchr(d->allowed, '|') != NULL && enum_has(strchr(d->allowed, '|') + 1, v)) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s=%s (%s): expected an integer in %s", d->name, v, where,
                           d->allowed);
    }
    case K_ENUM:
        if (enum_has(d->allowed, v)) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s=%s (%s): expected one of %s", d->name, v, where,
                           d->allowed);
    case K_MB: {
        /* decimal digits, optionally a '.' and more digits: "512", "0.5" */
        const char *p = v;
        int whole = 0, frac = 0;
        while (*p >= '0' && *p <= '9') p++, whole++;
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') p++, frac++;
        }
        const double mb = whole > 0 && *p == '\0' && whole <= 10 ? strtod(v, NULL) : -1.0;
        if (mb >= 0.0 && mb <= 1e9 && (v[whole] == '\0' || frac > 0)) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "%s=%s (%s): expected a size in MB, decimal digits with an optional fraction (0 .. 1000000000)",
                           d->name, v, where);
    }
    case K_TILE: {
        /* two or four decimal numbers, each 1..1024, joined by 'x' */
        int n = 0, ok = 1;
        const char *p = v;
        for (;;) {
            unsigned long x = 0;
            int digits = 0;
            while (*p >= '0' && *p <= '9' && digits < 6) x = x * 10 + (unsigned long)(*p++ - '0'), digits++;
            if (digits == 0 || (*p >= '0' && *p <= '9') || x < 1 || x > 1024) ok = 0;
            n++;
            if (*p != 'x' || !ok) break;
            p++;
        }
        if (ok && *p == '\0' && (n == 2 || n == 4)) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "%s=%s (%s): expected BMxBN or BMxBNxWARPS_MxWARPS_N, decimal numbers 1..1024", d->name, v,
                           where);
    }
    case K_ARCH: {
        if (enum_has(d->allowed, v)) return MEMRA_STATUS_OK;
        const char *why = "";
        int n = 0;
        if (strchr(v, ':') != NULL && arch_walk(d->allowed, v, NULL, 0, &n, &why) == 0) return MEMRA_STATUS_OK;
        if (strchr(v, ':') == NULL) why = "expected one of sm90|sm120|cuda|host, or ORDINAL:profile,...";
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s=%s (%s): %s", d->name, v, where, why);
    }
    case K_STR: {
        /* A path is refused, never truncated, past PATH_MAX; the cache root and
         * the tuning file must be absolute (a relative one would serve cubins
         * and routing from whatever the current folder is). The library
         * knobs take a soname too; a relative path there is refused where it
         * is used, with the reason. */
        const size_t len = strlen(v);
        const int path_knob = k == MEMRA__KNOB_CACHE_DIR || k == MEMRA__KNOB_TUNE_FILE;
        const int lib_knob = k == MEMRA__KNOB_CUDA_DRIVER || k == MEMRA__KNOB_CUBLASLT_LIBRARY ||
                             k == MEMRA__KNOB_NVRTC_LIBRARY;
        if ((path_knob || lib_knob) && len >= PATH_MAX)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "%s=%.60s... (%s): a path of %zu bytes is longer than PATH_MAX (%d): refused, never "
                               "truncated",
                               d->name, v, where, len, PATH_MAX);
        if (path_knob && v[0] != '/')
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s=%s (%s): a relative path is refused: give an absolute one",
                               d->name, v, where);
        return MEMRA_STATUS_OK;
    }
    }
    return MEMRA_STATUS_OK;
}

void memra__config_warn(memra__config *cfg, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memra__log(MEMRA_LOG_WARN, "config", "%s", msg);
    if (cfg->n_warn < MEMRA__CONFIG_MAX_WARN) {
        char *c = strdup(msg);
        if (c != NULL) cfg->warn[cfg->n_warn++] = c;
    }
}

static memra_status set_value(memra__config *cfg, const char *name, size_t nlen, const char *v, int source,
                              const char *where)
{
    int k = knob_find(name, nlen);
    if (k >= 0) {
        if (cfg->source[k] == 2 && source == 1) return MEMRA_STATUS_OK; /* the option wins */
        if (v[0] == '\0' && k_knobs[k].kind != K_STR) {
            /* An empty variable is no setting, and said so; an empty option is an error. */
            if (source == 1) {
                memra__config_warn(cfg, "%s is set but empty in the environment: no setting, its default (%s) applies",
                                   k_knobs[k].name, k_knobs[k].def[0] ? k_knobs[k].def : "none");
                return MEMRA_STATUS_OK;
            }
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s= (%s): empty value", k_knobs[k].name, where);
        }
        if (v[0] == '\0') {
            memra__config_warn(cfg, "%s is set but empty (%s): no setting, its default (%s) applies", k_knobs[k].name,
                               where, k_knobs[k].def[0] ? k_knobs[k].def : "none");
            return MEMRA_STATUS_OK;
        }
        memra_status st = knob_check(k, v, where);
        if (st != MEMRA_STATUS_OK) return st;
        char *c = strdup(v);
        if (c == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "config: out of memory");
        free(cfg->value[k]);
        cfg->value[k] = c;
        cfg->source[k] = source;
        return MEMRA_STATUS_OK;
    }
    for (int i = 0; i < cfg->n_extra; i++) {
        if (strlen(cfg->extra_name[i]) == nlen && strncmp(cfg->extra_name[i], name, nlen) == 0) {
            if (cfg->extra_source[i] == 2 && source == 1) return MEMRA_STATUS_OK;
            char *c = strdup(v);
            if (c == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "config: out of memory");
            free(cfg->extra_value[i]);
            cfg->extra_value[i] = c;
            cfg->extra_source[i] = source;
            return MEMRA_STATUS_OK;
        }
    }
    if (cfg->n_extra == MEMRA__CONFIG_MAX_EXTRA) {
        /* an unknown variable is a warning, never a failure: past the cap it is not kept */
        memra__config_warn(cfg, "%.*s (%s) is no knob of memra, and more than %d such MEMRA_* variables are set: "
                           "not kept (a module reading it through host->knob gets nothing)",
                           (int)nlen, name, where, MEMRA__CONFIG_MAX_EXTRA);
        return MEMRA_STATUS_OK;
    }
    int i = cfg->n_extra;
    cfg->extra_name[i] = strndup(name, nlen);
    cfg->extra_value[i] = strdup(v);
    if (cfg->extra_name[i] == NULL || cfg->extra_value[i] == NULL) {
        free(cfg->extra_name[i]);
        free(cfg->extra_value[i]);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "config: out of memory");
    }
    cfg->extra_source[i] = source;
    cfg->n_extra++;
    return MEMRA_STATUS_OK;
}

const char *memra__config_arch_for(const char *value, int ordinal, char *buf, int len)
{
    if (value == NULL || len <= 0) return NULL;
    const char *allowed = k_knobs[MEMRA__KNOB_ARCH].allowed;
    if (strchr(value, ':') == NULL) {
        snprintf(buf, (size_t)len, "%s", value);
        return buf;
    }
    for (const char *p = value;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p), *name = NULL, *why = NULL;
        int ord = -1;
        size_t nlen = 0;
        if (arch_entry(allowed, p, end, &ord, &name, &nlen, &why) == 0 && ord == ordinal) {
            snprintf(buf, (size_t)len, "%.*s", (int)nlen, name);
            return buf;
        }
        if (comma == NULL) return NULL;
        p = comma + 1;
    }
}

int memra__config_arch_ordinals(const char *value, int *ordinals, int max)
{
    int n = 0;
    const char *why = NULL;
    if (value == NULL || strchr(value, ':') == NULL) return 0;
    if (arch_walk(k_knobs[MEMRA__KNOB_ARCH].allowed, value, ordinals, max, &n, &why) != 0) return 0;
    return n < max ? n : max;
}

const char *memra__config_str(const memra__config *cfg, memra__knob k)
{
    return (cfg != NULL && (int)k >= 0 && k < MEMRA__KNOB_COUNT) ? cfg->value[k] : NULL;
}

const char *memra__config_lookup(const memra__config *cfg, const char *name)
{
    if (cfg == NULL || name == NULL) return NULL;
    int k = knob_find(name, strlen(name));
    if (k >= 0) return __atomic_load_n(&cfg->value[k], __ATOMIC_ACQUIRE);
    for (int i = 0; i < cfg->n_extra; i++)
        if (strcmp(cfg->extra_name[i], name) == 0) return cfg->extra_value[i];
    return NULL;
}

static int level_of(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; s != NULL && i < 4; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return MEMRA_LOG_WARN;
}

memra_status memra__config_parse(memra__config *cfg, const memra_options *opts)
{
    memset(cfg, 0, sizeof *cfg);
    memra_status st = MEMRA_STATUS_OK;
    const char *const *settings = MEMRA_HAS_MEMBER(opts, memra_options, settings) ? opts->settings : NULL;
    for (int i = 0; settings != NULL && settings[i] != NULL && st == MEMRA_STATUS_OK; i++) {
        const char *s = settings[i], *eq = strchr(s, '=');
        if (eq == NULL || strncmp(s, "MEMRA_", 6) != 0 || eq == s + 6)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "options.settings[%d] = '%s': expected MEMRA_NAME=value", i, s);
        st = set_value(cfg, s, (size_t)(eq - s), eq + 1, 2, "options.settings");
    }
    /* The typed members of memra_options are options too. */
    static const struct {
        memra__knob k;
        size_t off;
    } typed[] = {
        {MEMRA__KNOB_MODULE_PATH, offsetof(memra_options, module_path)},
        {MEMRA__KNOB_ARCH, offsetof(memra_options, force_arch)},
        {MEMRA__KNOB_PREFER, offsetof(memra_options, prefer)},
        {MEMRA__KNOB_DISABLE, offsetof(memra_options, disable)},
    };
    for (size_t i = 0; opts != NULL && i < sizeof typed / sizeof typed[0] && st == MEMRA_STATUS_OK; i++) {
        if (opts->struct_size < typed[i].off + sizeof(const char *)) continue;
        const char *v = *(const char *const *)((const char *)opts + typed[i].off);
        if (v != NULL) st = set_value(cfg, k_knobs[typed[i].k].name, strlen(k_knobs[typed[i].k].name), v, 2,
                                      "memra_options");
    }
    if (st == MEMRA_STATUS_OK && opts != NULL && opts->allow_unsafe_modules)
        st = set_value(cfg, "MEMRA_ALLOW_UNSAFE_MODULES", 26, "1", 2, "memra_options");
    const int no_env = MEMRA_HAS_MEMBER(opts, memra_options, ignore_environment) && opts->ignore_environment;
    for (char **e = environ; !no_env && e != NULL && *e != NULL && st == MEMRA_STATUS_OK; e++) {
        const char *s = *e, *eq = strchr(s, '=');
        if (eq == NULL || strncmp(s, "MEMRA_", 6) != 0) continue;
        st = set_value(cfg, s, (size_t)(eq - s), eq + 1, 1, "environment");
    }
    if (st != MEMRA_STATUS_OK) {
        memra__config_free(cfg);
        return st;
    }
    uint64_t u = 0;
    cfg->log_level = level_of(cfg->value[MEMRA__KNOB_LOG]);
    cfg->f16_budget_mb = parse_u64(cfg->value[MEMRA__KNOB_F16_BUDGET_MB], &u) == 0 ? (int64_t)u : -1;
    cfg->q8_0_records = !(cfg->value[MEMRA__KNOB_Q8_0_RECORDS] && strcmp(cfg->value[MEMRA__KNOB_Q8_0_RECORDS], "0") == 0);
    cfg->w16 = !cfg->value[MEMRA__KNOB_W16]                      ? 0
               : strcmp(cfg->value[MEMRA__KNOB_W16], "auto") == 0 ? 2
               : strcmp(cfg->value[MEMRA__KNOB_W16], "1") == 0    ? 1
                                                                  : 0;
    cfg->xe_mirror = cfg->value[MEMRA__KNOB_XE_MIRROR] && strcmp(cfg->value[MEMRA__KNOB_XE_MIRROR], "1") == 0;
    cfg->floor_f16_m = parse_u64(cfg->value[MEMRA__KNOB_FLOOR_F16_M], &u) == 0 ? (int64_t)u
                       : cfg->value[MEMRA__KNOB_FLOOR_F16_M] && strcmp(cfg->value[MEMRA__KNOB_FLOOR_F16_M], "auto") == 0
                           ? -2
                           : 0;
    cfg->host_threads = parse_u64(cfg->value[MEMRA__KNOB_HOST_THREADS], &u) == 0 ? (int)u : 0;
    cfg->stats = cfg->value[MEMRA__KNOB_STATS] && strcmp(cfg->value[MEMRA__KNOB_STATS], "1") == 0;
    cfg->allow_unsafe =
        cfg->value[MEMRA__KNOB_ALLOW_UNSAFE_MODULES] && strcmp(cfg->value[MEMRA__KNOB_ALLOW_UNSAFE_MODULES], "1") == 0;
    return MEMRA_STATUS_OK;
}

memra_status memra__config_set(memra__config *cfg, const char *name, const char *value)
{
    const int k = name ? knob_find(name, strlen(name)) : -1;
    if (k < 0) return MEMRA__FAIL(MEMRA_STATUS_NOT_FOUND, "memra_config_set: '%s' is no knob", name ? name : "(null)");
    const char *owner = k_knobs[k].owner;
    if (strcmp(owner, "core") == 0 || strcmp(owner, "jit") == 0 || strcmp(owner, "memra check") == 0 ||
        strcmp(owner, "tests") == 0)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                           "memra_config_set: %s is read once at memra_open (set it in memra_options.settings%s)", name,
                           k == MEMRA__KNOB_F16_BUDGET_MB ? ", or per device with memra_device_f16_budget_set" : "");
    if (value != NULL) {
        memra_status st = knob_check(k, value, "memra_config_set");
        if (st != MEMRA_STATUS_OK) return st;
    }
    if (cfg->n_old == cfg->cap_old) {
        const int cap = cfg->cap_old ? 2 * cfg->cap_old : 16;
        char **o = realloc(cfg->old, (size_t)cap * sizeof *o);
        if (o == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_config_set: out of memory");
        cfg->old = o;
        cfg->cap_old = cap;
    }
    char *c = value ? strdup(value) : NULL;
    if (value != NULL && c == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_config_set: out of memory");
    if (cfg->value[k] != NULL) cfg->old[cfg->n_old++] = cfg->value[k];
    __atomic_store_n(&cfg->value[k], c, __ATOMIC_RELEASE);
    __atomic_store_n(&cfg->source[k], c ? 2 : 0, __ATOMIC_RELEASE);
    return MEMRA_STATUS_OK;
}

void memra__config_free(memra__config *cfg)
{
    if (cfg == NULL) return;
    for (int i = 0; i < cfg->n_old; i++) free(cfg->old[i]);
    free(cfg->old);
    for (int i = 0; i < MEMRA__KNOB_COUNT; i++) free(cfg->value[i]);
    for (int i = 0; i < cfg->n_extra; i++) {
        free(cfg->extra_name[i]);
        free(cfg->extra_value[i]);
    }
    for (int i = 0; i < cfg->n_warn; i++) free(cfg->warn[i]);
    memset(cfg, 0, sizeof *cfg);
}

/* ---- the process-wide view -------------------------------------------------- */

static pthread_mutex_t g_env_lock = PTHREAD_MUTEX_INITIALIZER;
static const memra__config *g_env_cfg;
static _Thread_local char tl_env[1024];

void memra__config_publish(const memra__config *cfg)
{
    pthread_mutex_lock(&g_env_lock);
    g_env_cfg = cfg;
    pthread_mutex_unlock(&g_env_lock);
}

void memra__config_unpublish(const memra__config *cfg)
{
    pthread_mutex_lock(&g_env_lock);
    if (g_env_cfg == cfg) g_env_cfg = NULL;
    pthread_mutex_unlock(&g_env_lock);
}

const char *memra__env(const char *name)
{
    if (name == NULL) return NULL;
    if (strncmp(name, "MEMRA_", 6) != 0) return getenv(name);
    const char *r = NULL;
    pthread_mutex_lock(&g_env_lock);
    if (g_env_cfg != NULL) {
        const char *v = memra__config_lookup(g_env_cfg, name);
        if (v != NULL) {
            snprintf(tl_env, sizeof tl_env, "%s", v);
            r = tl_env;
        }
    } else {
        /* No runtime open (a unit test of one component): the environment. */
        r = getenv(name);
    }
    pthread_mutex_unlock(&g_env_lock);
    return r;
}

