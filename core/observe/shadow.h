/* Shadow A/B (core/observe/shadow.c): a module runs as a shadow of the
 * incumbent on sampled live calls; its verdicts go to routing through
 * core/routing/verdict.h. */
#ifndef MEMRA_CORE_SHADOW_H
#define MEMRA_CORE_SHADOW_H

#include "core/routing/routing.h"

/* The observer memra_open hands routing (rt->observer): begin / end around a
 * sampled dispatch. */
extern const memra__dispatch_observer memra__shadow_observer;
/* Free the GPU side of every shadow on dev whose module is `module` (NULL:
 * all), after its stream drains: memra_module_unload and device close. */
void memra__shadow_release_module(memra_device *dev, const char *module);
/* Stop every active shadow of `module` on dev (memra_module_unload, before it
 * publishes; caller holds reg_lock): sampling ends and a run in flight is
 * waited for, so none of the module's kernels is queued once it is gone. */
void memra__shadow_module_gone(memra_device *dev, const char *module);

#endif
