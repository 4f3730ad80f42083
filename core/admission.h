/* The admission self-check (core/admission.c): a module loaded at run time
 * runs each op it provides, on each device where it was admitted, against the
 * host module before any routing snapshot publishes it. */
#ifndef MEMRA_CORE_ADMISSION_H
#define MEMRA_CORE_ADMISSION_H

#include "core/runtime.h"

/* Check r (admitted, not yet published; caller holds reg_lock). Returns 1
 * when it passed (or could not be checked: r->adm_state says which), 0 when
 * it is quarantined; r->adm_* hold the state, the note and the cost. */
int memra__admission_check(memra_runtime *rt, memra__modrec *r);

/* Check the variant lists r declares (names [a-z0-9_.-]{1,32}, unique per
 * op, at most 64, only for ops it provides). 0 with `why` written when bad. */
int memra__variants_validate(memra_runtime *rt, const memra__modrec *r, char *why, size_t len);

#endif
