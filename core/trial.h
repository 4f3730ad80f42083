/* Contained trial loads (core/trial.c): a module's constructors, entry point
 * and score run first in the memra-trial helper process. Thread-safe. */
#ifndef MEMRA_CORE_TRIAL_H
#define MEMRA_CORE_TRIAL_H

#include <stddef.h>

#include "memra/memra.h"

/* 0 when MEMRA_MODULE_TRIAL=0 turns trials off; the one place that reads it. */
int memra__trial_enabled(void);

/* <dir of libmemra>/memra/memra-trial into buf; 0 when it cannot be placed. */
int memra__trial_helper_path(char *buf, size_t len);

/* Run the trial of the module open at module_fd (checked by the caller) on
 * every device of rt; `shown` names it in logs. OK when the trial passed, or
 * failed cleanly (not a library, no entry symbol, a bad descriptor: the
 * in-process load that follows gives the reason). MODULE_ERROR with a
 * sentence in why when the trial crashed ("crashed in score: SIGSEGV ..."),
 * timed out, exited, or the helper is missing or unsafe. *out_ms (may be
 * NULL) receives the trial's wall time when it ran to the end. */
memra_status memra__trial_run(const memra_runtime *rt, int module_fd, const char *shown, char *why, size_t why_len,
                              double *out_ms);

#endif
