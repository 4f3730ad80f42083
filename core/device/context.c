/* Device contexts: the process-wide driver table, the device a module's caps
 * belong to, the context pushed around driver calls, and
 * memra_device_synchronize. Below the host services (services.c) and scratch
 * (scratch.c), which both enter devices. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "core/device/device.h"

/* ---- the driver, once per process --------------------------------------- */

static memra__driver g_drv;
static char g_drv_why[512];
static pthread_once_t g_drv_once = PTHREAD_ONCE_INIT;

static void driver_once(void)
{
    if (memra__driver_open(&g_drv, g_drv_why, sizeof g_drv_why) != MEMRA_STATUS_OK) g_drv.lib = NULL;
    MEMRA__DEBUG("core", "driver: %s", g_drv_why);
}

const memra__driver *memra__driver_get(void)
{
    pthread_once(&g_drv_once, driver_once);
    return &g_drv;
}

const char *memra__driver_why(void)
{
    pthread_once(&g_drv_once, driver_once);
    return g_drv_why;
}

memra_device *memra__device_from_caps(const memra_device_caps *caps)
{
    /* caps is the first member of memra_device; modules only ever see &dev->caps. */
    return (memra_device *)(uintptr_t)caps;
}

/* Entering a device pushes its context only when it is not already current:
 * a push/pop pair costs the driver's locks on every op, and most calls arrive
 * with the context current (the caller's, or ours one level up). A small
 * per-thread stack remembers which levels pushed. */
static _Thread_local uint32_t tl_pushed; /* bit d: level d pushed */
static _Thread_local int tl_depth;

memra_status memra__device_enter(memra_device *dev)
{
    if (dev->is_host) return MEMRA_STATUS_OK;
    const memra__driver *drv = memra__driver_get();
    CUcontext cur = NULL;
    int push = drv->cuCtxGetCurrent(&cur) != MEMRA__CUDA_SUCCESS || cur != dev->ctx;
    if (push) {
        CUresult r = drv->cuCtxPushCurrent(dev->ctx);
        if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, "cuCtxPushCurrent");
    }
    if (tl_depth < 32) {
        if (push) tl_pushed |= 1u << tl_depth;
        else tl_pushed &= ~(1u << tl_depth);
    } else if (!push) {
        /* Too deep to remember a skip: push anyway so leave() stays balanced. */
        CUresult r = drv->cuCtxPushCurrent(dev->ctx);
        if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, "cuCtxPushCurrent");
    }
    tl_depth++;
    return MEMRA_STATUS_OK;
}

void memra__device_leave(memra_device *dev)
{
    if (dev->is_host) return;
    tl_depth--;
    if (tl_depth >= 32 || (tl_pushed >> tl_depth) & 1u) {
        CUcontext c;
        memra__driver_get()->cuCtxPopCurrent(&c);
    }
}

memra_status memra_device_synchronize(memra_device *dev)
{
    if (dev == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_device_synchronize: NULL device");
    if (dev->is_host) return MEMRA_STATUS_OK;
    memra_status st = memra__device_enter(dev);
    if (st != MEMRA_STATUS_OK) return st;
    CUresult r = memra__driver_get()->cuCtxSynchronize();
    memra__device_leave(dev);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(memra__driver_get(), r, "cuCtxSynchronize");
    return MEMRA_STATUS_OK;
}
