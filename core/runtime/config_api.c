/* The effective configuration through the public API (memra_config_*), and
 * the warnings about prefer/disable entries naming modules not loaded. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/state/runtime.h"

static const char *const k_source_names[] = {"default", "environment", "option"};

/* ---- public: the effective configuration ------------------------------------ */


int memra_config_count(const memra_runtime *rt) { return rt ? MEMRA__KNOB_COUNT + rt->cfg.n_extra : 0; }

memra_status memra_config_entry_get(const memra_runtime *rt, int index, memra_config_entry *out)
{
    if (rt == NULL || out == NULL || index < 0 || index >= memra_config_count(rt))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_config_entry_get: bad argument (index %d)", index);
    const memra__config *c = &rt->cfg;
    if (index < MEMRA__KNOB_COUNT) {
        const char *name, *def, *owner, *help;
        memra__knob_info(index, &name, &def, &owner, &help);
        const char *v = __atomic_load_n(&c->value[index], __ATOMIC_ACQUIRE); /* memra_config_set may swap it */
        *out = (memra_config_entry){.name = name,
                                    .value = v ? v : def,
                                    .source = k_source_names[__atomic_load_n(&c->source[index], __ATOMIC_ACQUIRE)],
                                    .owner = owner,
                                    .help = help,
                                    .known = 1};
    } else {
        int i = index - MEMRA__KNOB_COUNT;
        *out = (memra_config_entry){.name = c->extra_name[i],
                                    .value = c->extra_value[i],
                                    .source = k_source_names[c->extra_source[i]],
                                    .owner = "?",
                                    .help = "no knob of memra or of its built-in modules",
                                    .known = 0};
    }
    return MEMRA_STATUS_OK;
}

const char *memra_config_value(const memra_runtime *rt, const char *name)
{
    return rt ? memra__config_lookup(&rt->cfg, name) : NULL;
}

memra_status memra_config_set(memra_runtime *rt, const char *name, const char *value)
{
    if (rt == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_config_set: NULL runtime");
    pthread_mutex_lock(&rt->reg_lock);
    memra_status st = memra__config_set(&rt->cfg, name, value);
    pthread_mutex_unlock(&rt->reg_lock);
    return st;
}

int memra_config_warning_count(const memra_runtime *rt) { return rt ? rt->cfg.n_warn : 0; }

const char *memra_config_warning(const memra_runtime *rt, int index)
{
    return (rt && index >= 0 && index < rt->cfg.n_warn) ? rt->cfg.warn[index] : NULL;
}

/* ---- prefer / disable naming modules that are not loaded -------------------- */

static int module_loaded(const memra_runtime *rt, const char *name)
{
    for (int i = 0; i < rt->n_mods; i++)
        if (rt->mods[i]->loaded && rt->mods[i]->name != NULL && strcmp(rt->mods[i]->name, name) == 0) return 1;
    return 0;
}

static void warn_list(memra_runtime *rt, const char *var, const char *list, int record)
{
    for (const char *p = list; p != NULL && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char tok[160];
        if (l > 0 && l < sizeof tok) {
            memcpy(tok, p, l);
            tok[l] = '\0';
            char *eq = strchr(tok, '=');
            const char *mod = eq ? eq + 1 : tok;
            if (!module_loaded(rt, mod) && (eq != NULL || memra_op_from_name(tok) == MEMRA_OP_COUNT_)) {
                if (record)
                    memra__config_warn(&rt->cfg, "%s: '%s' names module '%s', which is not loaded: the entry has no "
                                                 "effect until it is", var, tok, mod);
                else
                    memra__log(MEMRA_LOG_WARN, "config", "%s: '%s' names module '%s', which is not loaded", var, tok,
                               mod);
            }
        }
        p += l;
        if (*p == ',') p++;
    }
}

/* Called with the registry's lock held or before the runtime is shared;
 * `record`: keep the warning for memra info (only at memra_open). */
void memra__routing_warn_unknown(memra_runtime *rt, const char *prefer, const char *disable, int record)
{
    warn_list(rt, "prefer (MEMRA_PREFER)", prefer, record);
    warn_list(rt, "disable (MEMRA_DISABLE)", disable, record);
}
