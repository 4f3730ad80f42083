/* The load room (core/load/): module files into routing's records. load.c
 * opens, checks, tries, dlopens, admits and self-checks a module; trial.c
 * runs a module's start in the memra-trial helper first. */
#ifndef MEMRA_CORE_LOAD_H
#define MEMRA_CORE_LOAD_H

#include "core/state/runtime.h"

/* At memra_open: the built-in host module, then the module path's and the
 * install's folders (their trials in parallel), then the first publish. */
memra_status memra__load_open(memra_runtime *rt);
/* The helper's load (core/runtime/trial_child.c): the file is the parent's
 * checked descriptor, no trial. Returns the record (loaded, or refused with
 * a reason), NULL when out of memory. Caller holds reg_lock. */
memra__modrec *memra__load_fd(memra_runtime *rt, int fd, const char *shown, int hot);

#endif
