/* Shared code of the GPU modules (sm90, later sm120): the per-device context
 * (driver entry points, the kernel images loaded for the device, the kernel
 * functions, cuBLASLt) and the ops built on it. A module's descriptor points
 * its op table at the memra__gpu_* functions it serves and calls
 * memra__gpu_create / memra__gpu_destroy from its init / fini.
 *
 * Every op: validates its arguments (INVALID_ARGUMENT with a message), returns
 * DECLINED with a static reason for cases it does not take, enqueues its work
 * on call->stream inside the device's context and never waits for the device,
 * and allocates nothing once its named scratch blocks have reached their size
 * (so a sequence of calls can be captured into a CUDA graph and replayed). */
#ifndef MEMRA_MODULES_CUDA_GPU_H
#define MEMRA_MODULES_CUDA_GPU_H

#include "cu.h"
#include "images.h"
#include "lt.h"
#include "memra/module.h"

/* Named scratch of the GPU modules (host->scratch_get: per call and stream). */
#define MEMRA__GPU_SLOT_WORKSPACE "lt.workspace" /* cuBLASLt workspace */
#define MEMRA__GPU_SLOT_XOP "x.op"              /* the activation converted (f16) or quantised (e4m3) */
#define MEMRA__GPU_SLOT_XSCALE "x.scale"        /* activation scales: scalars, fused barrier word, partial maxima; or VEC128 */
#define MEMRA__GPU_SLOT_GRID "w.grid"           /* the weight's block grid padded to cuBLASLt's leading dimension */
#define MEMRA__GPU_SLOT_DPAD "y.pad"            /* a GEMM output computed on padded rows */
#define MEMRA__GPU_WORKSPACE_BYTES (32u << 20)

/* X(family, kernel) for every kernel the modules launch. */
#define MEMRA__GPU_KERNEL_LIST(X)                                                                  \
    X(convert, memra_k_cvt_f32_f16)                                                                \
    X(convert, memra_k_cvt_f32_bf16)                                                               \
    X(convert, memra_k_scale_f32)                                                                  \
    X(convert, memra_k_copy_rows_f32)                                                              \
    X(dequant, memra_k_dequant_q8_0)                                                               \
    X(dequant, memra_k_dequant_q4_0)                                                               \
    X(dequant, memra_k_dequant_q4_k)                                                               \
    X(dequant, memra_k_dequant_q5_k)                                                               \
    X(dequant, memra_k_dequant_q6_k)                                                               \
    X(fp8_act, memra_k_amax_partial)                                                               \
    X(fp8_act, memra_k_quant_e4m3_tensor)                                                          \
    X(fp8_act, memra_k_quant_e4m3_fused)                                                           \
    X(fp8_act, memra_k_quant_e4m3_row128)                                                          \
    X(fp8_act, memra_k_grid_pad)                                                                   \
    X(fp8_weight, memra_k_fp8_blk_to_q8_0)                                                         \
    X(fp8_weight, memra_k_fp8_nan_count)

enum memra__gpu_family {
#define MEMRA__GPU_FAMILY_ENUM(f) MEMRA__GPU_FAMILY_##f,
    MEMRA__GPU_FAMILY_LIST(MEMRA__GPU_FAMILY_ENUM)
#undef MEMRA__GPU_FAMILY_ENUM
    MEMRA__GPU_FAMILY_COUNT
};

typedef struct memra__gpu {
    const memra_host_services *host;
    const memra_device_caps *caps;
    const char *name; /* the module's name, for logs and errors */
    char target[16];  /* "sm_90a": the images loaded */
    memra__cu cu;
    CUmodule modules[MEMRA__GPU_FAMILY_COUNT];
    int owns_modules; /* loaded with cuModuleLoadData here (no JIT service), unloaded at destroy */
    struct {
#define MEMRA__GPU_KERNEL_MEMBER(family, kernel) CUfunction kernel;
        MEMRA__GPU_KERNEL_LIST(MEMRA__GPU_KERNEL_MEMBER)
#undef MEMRA__GPU_KERNEL_MEMBER
    } k;
    memra__lt *lt;     /* NULL when cuBLASLt is unavailable: the GEMM ops decline */
    char lt_why[128];
    unsigned grid_cap; /* blocks for grid-stride kernels */
    /* gemm_fp8's per-batch quantiser (MEMRA_FP8_QUANT, read at create):
     * FUSED one cooperative launch of memra_k_quant_e4m3_fused (default),
     * FUSED_NOCAPTURE the same except while the stream is capturing a graph,
     * TWO_PASS memra_k_amax_partial + memra_k_quant_e4m3_tensor. */
    enum { MEMRA__FP8Q_FUSED, MEMRA__FP8Q_FUSED_NOCAPTURE, MEMRA__FP8Q_TWO_PASS } fp8_quant;
    unsigned fused_blocks; /* co-resident blocks of 256 for the fused quantiser; 0: two passes only */
} memra__gpu;

/* Per-device state for module `name`: resolve the driver, load the images for
 * the device's target (sm_<cc>a), look up every kernel, open cuBLASLt. Fails
 * with MODULE_ERROR when no embedded image matches the device. */
memra_status memra__gpu_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               memra__gpu **out_gpu);
void memra__gpu_destroy(memra__gpu *gpu);

/* Push / pop the device's context around work (nesting is fine). */
memra_status memra__gpu_enter(memra__gpu *gpu);
void memra__gpu_leave(memra__gpu *gpu);
/* Launch a 1-D grid of `block` threads on `stream`; args as cuLaunchKernel's. */
memra_status memra__gpu_launch(memra__gpu *gpu, CUfunction f, const char *name, unsigned grid, unsigned block,
                               memra_stream_t stream, void **args);
/* Blocks for `items` work items at `per_block` each, at most grid_cap (>= 1). */
unsigned memra__gpu_blocks(const memra__gpu *gpu, int64_t items, int64_t per_block);

/* ---- ops (memra_op_table signatures; call->module_ctx is a memra__gpu) ---- */
memra_status memra__gpu_cvt_f16(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n);
memra_status memra__gpu_gemm_f16(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_bf16(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_fp8(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_gemm_fp8_blk(memra_call *call, const memra_gemm_args *args);
memra_status memra__gpu_dequant_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                    int64_t cols, memra_dptr dst_f16);
memra_status memra__gpu_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows, int64_t cols,
                                        memra_dptr dst_q8_0);
memra_status memra__gpu_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64);
memra_status memra__gpu_scale(memra_call *call, memra_dptr y, int64_t n, float s);

#endif
