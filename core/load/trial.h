/* Contained trial loads (core/load/trial.c): a module's whole start (constructors,
 * entry point, score, init on each device it scores for, and the admission
 * self-check's cases) runs first in the memra-trial helper process.
 * Thread-safe. */
#ifndef MEMRA_CORE_TRIAL_H
#define MEMRA_CORE_TRIAL_H

#include <stddef.h>
#include <sys/types.h>

#include "memra/memra.h"

/* 0 when rt's MEMRA_MODULE_TRIAL=0 turns trials off, and inside a trial (the
 * helper's own runtime runs none); the one place that reads it. */
int memra__trial_enabled(const memra_runtime *rt);

/* <dir of libmemra>/memra/memra-trial into buf; 0 when it cannot be placed. */
int memra__trial_helper_path(char *buf, size_t len);

/* One trial in flight. Filled by memra__trial_start, finished by
 * memra__trial_wait; the fields below `st` are the verdict. */
typedef struct memra__trial {
    pid_t pid;            /* the helper, leader of its own process group; -1 when none */
    int rfd;              /* report pipe, read end; -1 once closed */
    int phase2;           /* the helper's runtime has started (init, self-check) */
    int final;            /* 0 none yet, else the helper's last word (see trial.c) */
    int signal;           /* a fatal signal the helper reported */
    int done;             /* 1: verdict set */
    double t0, deadline, phase2_ms;
    char stage[160];      /* the stage running, as reported */
    char name[64];        /* the module's descriptor name, once the helper read it */
    char line[1024];      /* a partial report line */
    size_t used;
    /* verdict */
    memra_status st;      /* OK: passed, or a clean failure the in-process load names */
    int quarantined;      /* the self-check failed in the helper; `why` holds its note */
    double ms;            /* wall time of the trial */
    char why[1200];
} memra__trial;

/* Start the trial of the module open at module_fd (checked by the caller) on
 * every device of rt; `hot` says whether it is a hot load (MEMRA_ADMISSION=hot
 * self-checks only those). Caller holds rt's reg_lock. When the helper cannot
 * be started the verdict is set at once (t->done). */
void memra__trial_start(memra_runtime *rt, int module_fd, int hot, memra__trial *t);

/* Wait for n trials at once (they run in parallel, each under its own time
 * limits), kill each helper's process group, and set every verdict: OK when
 * the trial passed or failed cleanly (not a library, no entry symbol, a bad
 * descriptor, init returning an error: the in-process load gives the reason);
 * MODULE_ERROR with a sentence in why when it crashed ("crashed in init on
 * host: SIGSEGV ..."), timed out, exited, left a process behind, failed the
 * self-check (quarantined), or the helper is missing or unsafe. */
void memra__trial_wait(memra__trial *t, int n);

/* Inside the helper: the stage lines and the module's name go through the
 * report channel (core/device/trial_report.c, declared in core/device/device.h);
 * the second phase is memra__trial_child (core/runtime/trial_child.c): it opens
 * a runtime like the parent's (its configuration came in the environment),
 * loads the module from module_fd without a trial, and reports the outcome
 * ("done", "error ...", "quarantined ...", or "noruntime ..." when no runtime
 * like the parent's could be made). */

#endif
