/* Prefer/deny lists ("op=module,...", "op|module,..."): their syntax, and
 * the warnings about entries naming a module that is not loaded. The lists
 * themselves are rt->prefer and rt->disable, read by each snapshot build
 * (registry.c). */
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/routing/routing.h"

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

void memra__routing_warn_unknown(memra_runtime *rt, const char *prefer, const char *disable, int record)
{
    warn_list(rt, "prefer (MEMRA_PREFER)", prefer, record);
    warn_list(rt, "disable (MEMRA_DISABLE)", disable, record);
}
