/* Verdicts: the one way the observers (core/observe/: the admission
 * self-check, shadow A/B) change routing. An observer judges; routing records
 * the verdict and republishes; no observer writes a record or a preference
 * list itself. Implemented by core/routing/verdict.c. */
#ifndef MEMRA_CORE_VERDICT_H
#define MEMRA_CORE_VERDICT_H

#include "core/state/runtime.h"

/* The admission self-check's verdict on r: state (MEMRA__ADM_PASSED,
 * _QUARANTINED, _OFF, _EXEMPT), its cost, the cases run and the note shown
 * by memra_module_admission_get ("N cases passed in X ms", or why it was
 * quarantined). A quarantined record is then refused by the load (core/load/),
 * never published. Caller holds reg_lock. */
void memra__verdict_admission(memra__modrec *r, int state, double ms, int cases, const char *note);

/* Promote `module` for op: "op=module" is appended to the preferences
 * (shadow A/B found it agreeing and faster). Caller holds reg_lock; takes
 * effect at memra__verdict_publish. OUT_OF_MEMORY leaves the list as it was. */
memra_status memra__verdict_promote(memra_runtime *rt, memra_op op, const char *module);
/* Roll `module` back for op: "op=module" is appended to the disable list
 * (shadow A/B saw it disagree). As memra__verdict_promote otherwise. */
memra_status memra__verdict_rollback(memra_runtime *rt, memra_op op, const char *module);
/* Publish routing after verdicts (a new snapshot on every device). Caller
 * holds reg_lock. */
memra_status memra__verdict_publish(memra_runtime *rt);

#endif
