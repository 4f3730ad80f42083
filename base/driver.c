/* The CUDA driver by dlopen: one entry-point list, resolved through
 * cuGetProcAddress at a pinned version. */
#include "base/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/trust.h"

/* cuGetProcAddress as exported since CUDA 12.0 (cuGetProcAddress_v2) and before. */
typedef CUresult (*get_proc_v2_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags, int *status);
typedef CUresult (*get_proc_v1_fn)(const char *symbol, void **pfn, int cuda_version, uint64_t flags);

static _Thread_local char tl_errstr[160];

/* Default search: the soname the driver package installs; never a bare name
 * that could resolve relative to the current directory. */
static const char *const k_driver_names[] = {"libcuda.so.1", NULL};

static void *resolve(const memra__driver *drv, get_proc_v2_fn v2, get_proc_v1_fn v1, const char *name,
                     CUresult *out_r)
{
    void *fn = NULL;
    CUresult r;
    if (v2 != NULL) {
        int st = 0;
        r = v2(name, &fn, MEMRA__CUDA_PINNED_VERSION, 0, &st);
    } else if (v1 != NULL) {
        r = v1(name, &fn, MEMRA__CUDA_PINNED_VERSION, 0);
    } else {
        return NULL;
    }
    (void)drv;
    if (out_r != NULL) *out_r = r;
    return r == MEMRA__CUDA_SUCCESS ? fn : NULL;
}

memra_status memra__driver_open(memra__driver *drv, char *why, size_t why_len)
{
    memset(drv, 0, sizeof *drv);
    drv->lib_fd = -1;
    const char *override = memra__env("MEMRA_CUDA_DRIVER");
    const char *tried = NULL;
    char dlerr[512] = "";
    if (override != NULL && override[0] != '\0') {
        /* A path from the environment: absolute, checked, loaded by its
         * descriptor (kept open for the life of the process). */
        int fd = -1;
        drv->lib = memra__trust_dlopen_env("MEMRA_CUDA_DRIVER", override, &fd, dlerr, sizeof dlerr);
        if (drv->lib == NULL) {
            snprintf(why, why_len, "no CUDA driver found: %s", dlerr);
            return MEMRA_STATUS_NO_DRIVER;
        }
        drv->path = override;
        drv->lib_fd = fd;
    } else {
        for (int i = 0; k_driver_names[i] != NULL && drv->lib == NULL; i++) {
            tried = k_driver_names[i];
            drv->lib = dlopen(k_driver_names[i], RTLD_NOW | RTLD_LOCAL);
            if (drv->lib == NULL) snprintf(dlerr, sizeof dlerr, "%s", dlerror());
            else drv->path = k_driver_names[i];
        }
    }
    if (drv->lib == NULL) {
        snprintf(why, why_len, "no CUDA driver found: dlopen(%s) failed: %s", tried, dlerr);
        return MEMRA_STATUS_NO_DRIVER;
    }
    get_proc_v2_fn v2 = (get_proc_v2_fn)(uintptr_t)dlsym(drv->lib, "cuGetProcAddress_v2");
    get_proc_v1_fn v1 = v2 ? NULL : (get_proc_v1_fn)(uintptr_t)dlsym(drv->lib, "cuGetProcAddress");
    if (v2 == NULL && v1 == NULL) {
        snprintf(why, why_len, "%s has no cuGetProcAddress: driver too old (CUDA 11.3+ needed)", drv->path);
        memra__driver_close(drv);
        return MEMRA_STATUS_NO_DRIVER;
    }
    const char *missing = NULL;
    CUresult miss_r = MEMRA__CUDA_SUCCESS, r_one = MEMRA__CUDA_SUCCESS;
#define MEMRA__DRIVER_RESOLVE(name, ret, params)                                    \
    drv->name = (ret(*) params)(uintptr_t)resolve(drv, v2, v1, #name, &r_one);       \
    if (drv->name == NULL && missing == NULL) {                                     \
        missing = #name;                                                            \
        miss_r = r_one;                                                             \
    }
    MEMRA__DRIVER_LIST(MEMRA__DRIVER_RESOLVE)
#undef MEMRA__DRIVER_RESOLVE
    if (missing != NULL && miss_r == MEMRA__CUDA_ERROR_STUB_LIBRARY) {
        snprintf(why, why_len,
                 "%s is the CUDA toolkit's stub library, not a driver (CUDA_ERROR_STUB_LIBRARY); install the NVIDIA "
                 "driver",
                 drv->path);
        memra__driver_close(drv);
        return MEMRA_STATUS_NO_DRIVER;
    }
    if (missing != NULL) {
        snprintf(why, why_len, "%s lacks %s at CUDA %d.%d: driver too old", drv->path, missing,
                 MEMRA__CUDA_PINNED_VERSION / 1000, MEMRA__CUDA_PINNED_VERSION % 1000 / 10);
        memra__driver_close(drv);
        return MEMRA_STATUS_NO_DRIVER;
    }
    CUresult r = drv->cuInit(0);
    if (r != MEMRA__CUDA_SUCCESS) {
        memra_status st = MEMRA_STATUS_DRIVER_ERROR;
        if (r == MEMRA__CUDA_ERROR_STUB_LIBRARY) {
            snprintf(why, why_len,
                     "%s is the CUDA toolkit's stub library, not a driver (cuInit: CUDA_ERROR_STUB_LIBRARY)",
                     drv->path);
            st = MEMRA_STATUS_NO_DRIVER;
        } else if (r == MEMRA__CUDA_ERROR_NO_DEVICE) {
            snprintf(why, why_len, "the CUDA driver found no device (cuInit: CUDA_ERROR_NO_DEVICE)");
            st = MEMRA_STATUS_NO_DEVICE;
        } else {
            snprintf(why, why_len, "cuInit failed: %s", memra__driver_errstr(drv, r));
        }
        memra__driver_close(drv);
        return st;
    }
    drv->cuDriverGetVersion(&drv->version);
    int count = 0;
    r = drv->cuDeviceGetCount(&count);
    if (r != MEMRA__CUDA_SUCCESS || count == 0) {
        snprintf(why, why_len, "the CUDA driver found no device%s",
                 r != MEMRA__CUDA_SUCCESS ? " (cuDeviceGetCount failed)" : " (check CUDA_VISIBLE_DEVICES)");
        memra__driver_close(drv);
        return MEMRA_STATUS_NO_DEVICE;
    }
    snprintf(why, why_len, "ok");
    return MEMRA_STATUS_OK;
}

void memra__driver_close(memra__driver *drv)
{
    if (drv->lib != NULL) {
        dlclose(drv->lib);
        if (drv->lib_fd >= 0) close(drv->lib_fd);
    }
    memset(drv, 0, sizeof *drv);
    drv->lib_fd = -1;
}

void *memra__driver_proc(const memra__driver *drv, const char *name)
{
    if (drv == NULL || drv->lib == NULL || name == NULL) return NULL;
    get_proc_v2_fn v2 = (get_proc_v2_fn)(uintptr_t)dlsym(drv->lib, "cuGetProcAddress_v2");
    get_proc_v1_fn v1 = v2 ? NULL : (get_proc_v1_fn)(uintptr_t)dlsym(drv->lib, "cuGetProcAddress");
    return resolve(drv, v2, v1, name, NULL);
}

const char *memra__driver_errstr(const memra__driver *drv, CUresult r)
{
    const char *name = NULL, *text = NULL;
    if (drv != NULL && drv->cuGetErrorName != NULL) drv->cuGetErrorName(r, &name);
    if (drv != NULL && drv->cuGetErrorString != NULL) drv->cuGetErrorString(r, &text);
    snprintf(tl_errstr, sizeof tl_errstr, "%s (%d: %s)", name ? name : "CUDA error", r, text ? text : "no text");
    return tl_errstr;
}
