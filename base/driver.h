/* The CUDA driver, opened with dlopen and resolved from one list of entry
 * points (expanded into the table struct and into the resolve loop).
 *
 * No cuda.h is needed: the few driver types are declared here with the ABI
 * the driver uses (they are ints and opaque pointers). Every entry point is
 * resolved with cuGetProcAddress at MEMRA__CUDA_PINNED_VERSION, so names that
 * cuda.h maps to _v2 symbols (cuMemAlloc -> cuMemAlloc_v2) get the _v2 ABI. */
#ifndef MEMRA_BASE_DRIVER_H
#define MEMRA_BASE_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "memra/status.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef uint64_t CUdeviceptr;
typedef int CUdevice_attribute;
typedef int CUjit_option;

/* cuMemcpy2DAsync's argument (the driver API's CUDA_MEMCPY2D, its v2 layout: sizes as
 * size_t; memory types 1 host, 2 device). The array members stay NULL here. */
typedef struct memra__cu_memcpy2d {
    size_t src_x_bytes, src_y;
    int src_type;
    const void *src_host;
    CUdeviceptr src_device;
    void *src_array;
    size_t src_pitch;
    size_t dst_x_bytes, dst_y;
    int dst_type;
    void *dst_host;
    CUdeviceptr dst_device;
    void *dst_array;
    size_t dst_pitch;
    size_t width_bytes, height;
} memra__cu_memcpy2d;
#define MEMRA__CU_MEMORYTYPE_HOST 1
#define MEMRA__CU_MEMORYTYPE_DEVICE 2

#define MEMRA__CUDA_SUCCESS 0
#define MEMRA__CUDA_ERROR_NO_DEVICE 100
#define MEMRA__CUDA_ERROR_STUB_LIBRARY 34
#define MEMRA__CUDA_ERROR_INSUFFICIENT_DRIVER 35
#define MEMRA__CUDA_PINNED_VERSION 12000

/* Attributes used (values from the driver API, stable). */
#define MEMRA__CU_ATTR_MULTIPROCESSOR_COUNT 16
#define MEMRA__CU_ATTR_CC_MAJOR 75
#define MEMRA__CU_ATTR_CC_MINOR 76
#define MEMRA__CU_ATTR_SMEM_PER_BLOCK_OPTIN 97
#define MEMRA__CU_ATTR_CLOCK_RATE 13
#define MEMRA__CU_ATTR_MEMORY_CLOCK_RATE 36

/* X(name, return, params) for every driver entry point memra uses. */
#define MEMRA__DRIVER_LIST(X)                                                                         \
    X(cuInit, CUresult, (unsigned int flags))                                                        \
    X(cuDriverGetVersion, CUresult, (int *version))                                                  \
    X(cuGetErrorName, CUresult, (CUresult error, const char **str))                                  \
    X(cuGetErrorString, CUresult, (CUresult error, const char **str))                                \
    X(cuDeviceGetCount, CUresult, (int *count))                                                      \
    X(cuDeviceGet, CUresult, (CUdevice * device, int ordinal))                                       \
    X(cuDeviceGetName, CUresult, (char *name, int len, CUdevice dev))                                \
    X(cuDeviceGetAttribute, CUresult, (int *pi, CUdevice_attribute attrib, CUdevice dev))            \
    X(cuDeviceTotalMem, CUresult, (size_t * bytes, CUdevice dev))                                    \
    X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * pctx, CUdevice dev))                          \
    X(cuDevicePrimaryCtxRelease, CUresult, (CUdevice dev))                                           \
    X(cuCtxPushCurrent, CUresult, (CUcontext ctx))                                                   \
    X(cuCtxPopCurrent, CUresult, (CUcontext * pctx))                                                 \
    X(cuCtxSetCurrent, CUresult, (CUcontext ctx))                                                    \
    X(cuCtxGetCurrent, CUresult, (CUcontext * pctx))                                                 \
    X(cuCtxSynchronize, CUresult, (void))                                                            \
    X(cuMemAlloc, CUresult, (CUdeviceptr * dptr, size_t bytes))                                      \
    X(cuMemFree, CUresult, (CUdeviceptr dptr))                                                       \
    X(cuMemGetInfo, CUresult, (size_t * free_bytes, size_t * total_bytes))                           \
    X(cuMemcpyHtoD, CUresult, (CUdeviceptr dst, const void *src, size_t bytes))                      \
    X(cuMemcpyDtoH, CUresult, (void *dst, CUdeviceptr src, size_t bytes))                            \
    X(cuMemcpyDtoD, CUresult, (CUdeviceptr dst, CUdeviceptr src, size_t bytes))                      \
    X(cuMemcpyHtoDAsync, CUresult, (CUdeviceptr dst, const void *src, size_t bytes, CUstream s))     \
    X(cuMemcpyDtoHAsync, CUresult, (void *dst, CUdeviceptr src, size_t bytes, CUstream s))           \
    X(cuMemsetD8Async, CUresult, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s))           \
    X(cuMemsetD32Async, CUresult, (CUdeviceptr dst, unsigned int v, size_t n, CUstream s))           \
    X(cuStreamCreate, CUresult, (CUstream * s, unsigned int flags))                                  \
    X(cuStreamDestroy, CUresult, (CUstream s))                                                       \
    X(cuStreamSynchronize, CUresult, (CUstream s))                                                   \
    X(cuStreamIsCapturing, CUresult, (CUstream s, int *status))                                      \
    X(cuStreamBeginCapture, CUresult, (CUstream s, int mode))                                        \
    X(cuStreamEndCapture, CUresult, (CUstream s, CUgraph * g))                                       \
    X(cuGraphInstantiate, CUresult, (CUgraphExec * e, CUgraph g, unsigned long long flags))          \
    X(cuGraphLaunch, CUresult, (CUgraphExec e, CUstream s))                                          \
    X(cuGraphExecDestroy, CUresult, (CUgraphExec e))                                                 \
    X(cuGraphDestroy, CUresult, (CUgraph g))                                                         \
    X(cuEventCreate, CUresult, (CUevent * e, unsigned int flags))                                    \
    X(cuEventRecord, CUresult, (CUevent e, CUstream s))                                              \
    X(cuEventSynchronize, CUresult, (CUevent e))                                                     \
    X(cuEventElapsedTime, CUresult, (float *ms, CUevent start, CUevent end))                         \
    X(cuEventDestroy, CUresult, (CUevent e))                                                         \
    X(cuModuleLoadData, CUresult, (CUmodule * m, const void *image))                                 \
    X(cuModuleUnload, CUresult, (CUmodule m))                                                        \
    X(cuModuleGetFunction, CUresult, (CUfunction * f, CUmodule m, const char *name))                 \
    X(cuFuncSetAttribute, CUresult, (CUfunction f, int attrib, int value))                           \
    X(cuLaunchKernel, CUresult,                                                                      \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
       unsigned smem, CUstream s, void **params, void **extra))

typedef struct memra__driver {
    void *lib;         /* dlopen handle, NULL when absent */
    int version;       /* cuDriverGetVersion */
    const char *path;  /* library opened */
    int lib_fd;        /* descriptor it was loaded from (MEMRA_CUDA_DRIVER), -1 otherwise; valid while lib is */
#define MEMRA__DRIVER_MEMBER(name, ret, params) ret(*name) params;
    MEMRA__DRIVER_LIST(MEMRA__DRIVER_MEMBER)
#undef MEMRA__DRIVER_MEMBER
} memra__driver;

/* Open and initialise the driver (MEMRA_CUDA_DRIVER overrides the library
 * path, for tests). On failure returns NO_DRIVER / NO_DEVICE / DRIVER_ERROR
 * and writes a sentence into why[why_len]; the table is then unusable. */
memra_status memra__driver_open(memra__driver *drv, char *why, size_t why_len);
void memra__driver_close(memra__driver *drv);
/* Any entry point by base name at the pinned version (for modules). */
void *memra__driver_proc(const memra__driver *drv, const char *name);
/* "CUDA_ERROR_X (text)" for a result. Static storage per thread. */
const char *memra__driver_errstr(const memra__driver *drv, CUresult r);
/* Record a driver failure (call name + code) and return DRIVER_ERROR. */
#define MEMRA__CU_FAIL(drv, r, what)                                                 \
    MEMRA__FAIL(MEMRA_STATUS_DRIVER_ERROR, "%s failed: %s", (what), memra__driver_errstr((drv), (r)))

#endif
