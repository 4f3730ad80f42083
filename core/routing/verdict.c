/* Verdicts (core/routing/verdict.h): what the observers found, recorded by
 * routing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/routing/routing.h"
#include "core/routing/verdict.h"

void memra__verdict_admission(memra__modrec *r, int state, double ms, int cases, const char *note)
{
    r->adm_state = state;
    r->adm_ms = ms;
    r->adm_cases = cases;
    snprintf(r->adm_note, sizeof r->adm_note, "%s", note);
}

/* Append "op=module" to a routing list (rt->prefer or rt->disable). */
static memra_status list_append(char **list, memra_op op, const char *module)
{
    size_t l = *list ? strlen(*list) : 0;
    char *n = malloc(l + strlen(module) + 40);
    if (n == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "shadow");
    snprintf(n, l + strlen(module) + 40, "%s%s%s=%s", l ? *list : "", l ? "," : "", memra_op_name(op), module);
    free(*list);
    *list = n;
    return MEMRA_STATUS_OK;
}

memra_status memra__verdict_promote(memra_runtime *rt, memra_op op, const char *module)
{
    return list_append(&rt->prefer, op, module);
}

memra_status memra__verdict_rollback(memra_runtime *rt, memra_op op, const char *module)
{
    return list_append(&rt->disable, op, module);
}

memra_status memra__verdict_publish(memra_runtime *rt) { return memra__registry_republish(rt); }
