/* Interval timers for benchmarks: CUDA events on a GPU, CLOCK_MONOTONIC on host. */
#include <stdlib.h>
#include <time.h>

#include "base/error.h"
#include "core/device/device.h"

struct memra_timer {
    memra_device *dev;
    CUevent start, stop;
    struct timespec t0, t1;
};

memra_status memra_timer_create(memra_device *dev, memra_timer **out)
{
    if (dev == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_timer_create: NULL");
    memra_timer *t = calloc(1, sizeof *t);
    if (t == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_timer_create");
    t->dev = dev;
    if (!dev->is_host) {
        const memra__driver *drv = memra__driver_get();
        memra_status st = memra__device_enter(dev);
        if (st != MEMRA_STATUS_OK) {
            free(t);
            return st;
        }
        CUresult r = drv->cuEventCreate(&t->start, 0);
        if (r == MEMRA__CUDA_SUCCESS) r = drv->cuEventCreate(&t->stop, 0);
        memra__device_leave(dev);
        if (r != MEMRA__CUDA_SUCCESS) {
            memra_timer_destroy(t);
            return MEMRA__CU_FAIL(drv, r, "cuEventCreate");
        }
    }
    *out = t;
    return MEMRA_STATUS_OK;
}

void memra_timer_destroy(memra_timer *t)
{
    if (t == NULL) return;
    if (!t->dev->is_host && memra__device_enter(t->dev) == MEMRA_STATUS_OK) {
        if (t->start) memra__driver_get()->cuEventDestroy(t->start);
        if (t->stop) memra__driver_get()->cuEventDestroy(t->stop);
        memra__device_leave(t->dev);
    }
    free(t);
}

static memra_status mark(memra_timer *t, memra_stream_t stream, int which)
{
    if (t == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "timer: NULL");
    if (t->dev->is_host) {
        clock_gettime(CLOCK_MONOTONIC, which ? &t->t1 : &t->t0);
        return MEMRA_STATUS_OK;
    }
    memra_status st = memra__device_enter(t->dev);
    if (st != MEMRA_STATUS_OK) return st;
    const memra__driver *drv = memra__driver_get();
    CUresult r = drv->cuEventRecord(which ? t->stop : t->start, (CUstream)stream);
    memra__device_leave(t->dev);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, "cuEventRecord");
    return MEMRA_STATUS_OK;
}

memra_status memra_timer_start(memra_timer *t, memra_stream_t stream) { return mark(t, stream, 0); }
memra_status memra_timer_stop(memra_timer *t, memra_stream_t stream) { return mark(t, stream, 1); }

memra_status memra_timer_elapsed_ms(memra_timer *t, double *out_ms)
{
    if (t == NULL || out_ms == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "timer: NULL");
    if (t->dev->is_host) {
        *out_ms = (double)(t->t1.tv_sec - t->t0.tv_sec) * 1e3 + (double)(t->t1.tv_nsec - t->t0.tv_nsec) * 1e-6;
        return MEMRA_STATUS_OK;
    }
    memra_status st = memra__device_enter(t->dev);
    if (st != MEMRA_STATUS_OK) return st;
    const memra__driver *drv = memra__driver_get();
    float ms = 0.0f;
    CUresult r = drv->cuEventSynchronize(t->stop);
    if (r == MEMRA__CUDA_SUCCESS) r = drv->cuEventElapsedTime(&ms, t->start, t->stop);
    memra__device_leave(t->dev);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, "cuEventElapsedTime");
    *out_ms = ms;
    return MEMRA_STATUS_OK;
}

memra_status memra_device_clocks_get(const memra_device *dev, memra_device_clocks *out)
{
    if (dev == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "clocks: NULL");
    out->sm_khz = dev->clock_khz;
    out->mem_khz = dev->mem_clock_khz;
    return MEMRA_STATUS_OK;
}
