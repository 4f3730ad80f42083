/* The CUDA driver as the GPU modules see it: a few types declared with the
 * driver's ABI (ints and opaque pointers, as in cuda.h, which is not included)
 * and one list of the entry points the modules use, expanded into a struct of
 * function pointers and into the resolve loop. Every entry point comes from
 * host->driver_proc(base name), which the core resolves with cuGetProcAddress
 * at its pinned version (so cuCtxPushCurrent gets the _v2 ABI cuda.h maps it
 * to). A module links no CUDA library. */
#ifndef MEMRA_MODULES_GPU_CU_H
#define MEMRA_MODULES_GPU_CU_H

#include <stddef.h>
#include <stdint.h>

#include "memra/module.h"

typedef int CUresult;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

#define MEMRA__CU_SUCCESS 0 /* CUDA_SUCCESS */
#define MEMRA__CU_STREAM_CAPTURE_STATUS_NONE 0 /* CU_STREAM_CAPTURE_STATUS_NONE */
#define MEMRA__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

/* X(name, return, params) */
#define MEMRA__CU_LIST(X)                                                                            \
    X(cuGetErrorName, CUresult, (CUresult error, const char **str))                                  \
    X(cuCtxPushCurrent, CUresult, (CUcontext ctx))                                                   \
    X(cuCtxGetCurrent, CUresult, (CUcontext * pctx))                                                 \
    X(cuCtxPopCurrent, CUresult, (CUcontext * pctx))                                                 \
    X(cuModuleLoadData, CUresult, (CUmodule * m, const void *image))                                 \
    X(cuModuleUnload, CUresult, (CUmodule m))                                                        \
    X(cuModuleGetFunction, CUresult, (CUfunction * f, CUmodule m, const char *name))                 \
    X(cuLaunchKernel, CUresult,                                                                      \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
       unsigned smem, CUstream s, void **params, void **extra))                                      \
    X(cuLaunchCooperativeKernel, CUresult,                                                           \
      (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,   \
       unsigned smem, CUstream s, void **params))                                                    \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, CUresult,                                         \
      (int *num_blocks, CUfunction f, int block_size, size_t dynamic_smem))                          \
    X(cuMemsetD32Async, CUresult, (memra_dptr dst, unsigned int v, size_t n, CUstream s))            \
    X(cuStreamIsCapturing, CUresult, (CUstream s, int *capture_status))                              \
    X(cuFuncSetAttribute, CUresult, (CUfunction f, int attrib, int value))

/* cuLaunchKernelEx (CUDA 12.0+, resolved apart: optional) and its
 * configuration, laid out as CUlaunchConfig / CUlaunchAttribute in cuda.h
 * (the attribute's value is a 64-byte union there). */
#define MEMRA__CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct memra__cu_launch_attr {
    int id;
    char pad_[4];
    union {
        char pad[64];
        void *align_;
        int value; /* programmaticStreamSerializationAllowed, cooperative, ... */
    } v;
} memra__cu_launch_attr;
typedef struct memra__cu_launch_config {
    unsigned grid[3], block[3], smem;
    CUstream stream;
    memra__cu_launch_attr *attrs;
    unsigned num_attrs;
} memra__cu_launch_config;
_Static_assert(sizeof(memra__cu_launch_attr) == 72, "CUlaunchAttribute is 72 bytes");
_Static_assert(sizeof(memra__cu_launch_config) == 56 || sizeof(void *) != 8, "CUlaunchConfig is 56 bytes on LP64");
typedef CUresult (*memra__cu_launch_ex_fn)(const memra__cu_launch_config *config, CUfunction f, void **params,
                                          void **extra);

/* cuTensorMapEncodeTiled (CUDA 12.0+, sm_90+, resolved apart: optional) and
 * the values of cuda.h's enums it is called with here. CUtensorMap is 128
 * bytes, 64-byte aligned (cuda.h asks 128). */
typedef struct memra__cu_tensor_map {
    _Alignas(128) uint64_t opaque[16];
} memra__cu_tensor_map;
#define MEMRA__CU_TENSOR_MAP_DATA_TYPE_UINT8 0
#define MEMRA__CU_TENSOR_MAP_INTERLEAVE_NONE 0
#define MEMRA__CU_TENSOR_MAP_SWIZZLE_NONE 0
#define MEMRA__CU_TENSOR_MAP_SWIZZLE_128B 3
#define MEMRA__CU_TENSOR_MAP_L2_PROMOTION_L2_256B 3
#define MEMRA__CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE 0 /* out-of-bounds elements read as zeros */
typedef CUresult (*memra__cu_tensor_map_encode_tiled_fn)(memra__cu_tensor_map *map, int data_type, uint32_t rank,
                                                        void *global, const uint64_t *dims, const uint64_t *strides,
                                                        const uint32_t *box, const uint32_t *element_strides,
                                                        int interleave, int swizzle, int l2_promotion, int oob_fill);

typedef struct memra__cu {
#define MEMRA__CU_MEMBER(name, ret, params) ret(*name) params;
    MEMRA__CU_LIST(MEMRA__CU_MEMBER)
#undef MEMRA__CU_MEMBER
} memra__cu;

/* Resolve every entry point through host->driver_proc. On failure returns
 * NO_DRIVER after host->set_error naming the missing entry point. */
memra_status memra__cu_resolve(const memra_host_services *host, const char *module, memra__cu *cu);

/* Record a driver failure ("<module>: <what> failed: CUDA_ERROR_X (code)")
 * through host->set_error and return DRIVER_ERROR. */
memra_status memra__cu_fail(const memra_host_services *host, const memra__cu *cu, const char *module,
                            CUresult r, const char *what);

#endif
