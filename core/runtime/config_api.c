/* The effective configuration through the public API (memra_config_*), and
 * the warnings about prefer/disable entries naming modules not loaded are
 * core/routing/prefer.c's. */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/routing/routing.h"

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
