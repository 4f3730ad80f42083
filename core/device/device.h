/* The device room (core/device/): what every other room of core/ stands on:
 * the host services handed to modules, device contexts, buffers, scratch
 * that follows the stream, loaded images, and the trial's report channel.
 * It calls no other room of core/. */
#ifndef MEMRA_CORE_DEVICE_H
#define MEMRA_CORE_DEVICE_H

#include "core/state/runtime.h"

/* services.c: the host services; context.c: the driver table and device contexts */
const memra_host_services *memra__host_services(void);
memra_device *memra__device_from_caps(const memra_device_caps *caps);
void *memra__library_open(const char *which);
memra_status memra__device_image_load(memra_device *dev, const char *name, const void *image, size_t size,
                                      CUmodule *out);
void memra__device_images_unload(memra_device *dev);
void memra__device_scratch_free(memra_device *dev);
/* Push/pop the device's context around driver calls (no-op on host). */
memra_status memra__device_enter(memra_device *dev);
void memra__device_leave(memra_device *dev);
/* The process-wide driver table, opened once; ->lib is NULL when absent and
 * memra__driver_why() says why. */
const memra__driver *memra__driver_get(void);
const char *memra__driver_why(void);

/* buffer.c: raw allocations used by weights */
memra_status memra__dev_alloc(memra_device *dev, size_t bytes, memra_dptr *out);
void memra__dev_free(memra_device *dev, memra_dptr p);
memra_status memra__dev_upload(memra_device *dev, memra_dptr dst, const void *src, size_t bytes);
memra_status memra__dev_download(memra_device *dev, void *dst, memra_dptr src, size_t bytes);

/* scratch.c. A scope brackets one call on (dev, stream) on this thread;
 * scratch asked inside it comes from one arena held until the scope ends. */
void memra__scratch_device_init(memra_device *dev);
memra_status memra__scope_begin(memra_device *dev, memra_stream_t stream);
/* The stream of this thread's innermost scope on dev (NULL when none). */
memra_stream_t memra__scope_stream(const memra_device *dev);
void memra__scope_end(void);
/* The module whose op runs now on this thread (names scratch "module/name"); returns the previous one. */
const char *memra__scratch_module_set(const char *module);
memra_status memra__scratch_get(memra_device *dev, memra_stream_t stream, const char *name, size_t bytes,
                                memra_dptr *out);
/* The same, zero-filled when new, grown or last handed out unzeroed (host
 * services' scratch_get_zeroed). */
memra_status memra__scratch_get_zeroed(memra_device *dev, memra_stream_t stream, const char *name, size_t bytes,
                                       memra_dptr *out);
/* Give `stream` an arena of its own (memra_stream_reserve). */
memra_status memra__stream_pin(memra_device *dev, memra_stream_t stream);

/* trial_report.c: the report channel of a trial (core/load/trial.c), inside
 * the memra-trial helper only; a no-op elsewhere. */
/* Stage lines of the helper's runtime ("init on host", "self-check scale case
 * 1 on host"): written to the report pipe inside a trial, a no-op elsewhere. */
void memra__trial_stage(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* The module's name, once its descriptor is read (inside a trial). */
void memra__trial_name(const char *name);
/* A line on the report pipe (newlines folded), inside a trial. */
void memra__trial_say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Make report_fd this process's report pipe (the helper's second phase). */
void memra__trial_report_open(int report_fd);
/* 1 inside the helper once memra__trial_child runs. */
int memra__trial_child_active(void);

#endif
