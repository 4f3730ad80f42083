/* The GPU runtime: one per-device context under every GPU module (sm90,
 * sm120, mmq, fp8blk). It holds the driver entry points (cu.h), the kernel
 * images loaded for the device (the embedded table of images.h, or the JIT
 * first where a family asks), kernel lookup, launches (programmatic dependent
 * launch with its plain fall-back), cuBLASLt (lt.h), and the state of each
 * kernel family the module serves. A module is a descriptor: its init names
 * the families it serves, its op table points at their ops.
 *
 *   static const memra__gpu_family *const k_families[] = {&memra__gpu_family_mmq};
 *   memra__gpu *gpu;
 *   memra__gpu_create(host, caps, "mmq", k_families, 1, &gpu);   // module init
 *   ... call->module_ctx = gpu; memra__mmq_gemm_q8_0(call, args);
 *   memra__gpu_destroy(gpu);                                     // module fini
 *
 * Every op built on it: validates its arguments (INVALID_ARGUMENT with a
 * message), returns DECLINED with a static reason for cases it does not take
 * (memra__gpu_decline), enqueues its work on call->stream inside the device's
 * context and never waits for the device, and allocates nothing once its
 * scratch has reached its size (so a sequence of calls can be captured into a
 * CUDA graph and replayed).
 *
 * Thread safety: the context is read-only after create except the atomic
 * pdl_refused and the benign one-way switches a family documents (fp8_act's
 * fused_blocks). Knobs: each family reads its own MEMRA_* knobs in its load
 * (once per init, memra__gpu_knob: the core's configuration, never getenv). */
#ifndef MEMRA_MODULES_GPU_GPU_H
#define MEMRA_MODULES_GPU_GPU_H

#include <stdatomic.h>
#include <stddef.h>

#include "cu.h"
#include "images.h"
#include "lt.h"
#include "memra/module.h"

/* Named scratch of the GPU modules (host->scratch_get: per call and stream). */
#define MEMRA__GPU_SLOT_WORKSPACE "lt.workspace" /* cuBLASLt workspace */
#define MEMRA__GPU_SLOT_XOP "x.op"              /* the activation converted (f16, bf16) or quantised (e4m3) */
#define MEMRA__GPU_SLOT_XSCALE "x.scale"        /* activation scales: scalars and partial maxima; or VEC128 */
#define MEMRA__GPU_SLOT_FP8BAR "fp8.bar"        /* the fused quantiser's grid-barrier word (scratch_get_zeroed, kept) */
#define MEMRA__GPU_SLOT_GRID "w.grid"           /* the weight's block grid padded to cuBLASLt's leading dimension */
#define MEMRA__GPU_SLOT_DPAD "y.pad"            /* a GEMM output computed on padded rows */
#define MEMRA__GPU_WORKSPACE_BYTES (32u << 20)

typedef struct memra__gpu memra__gpu;

/* One kernel of a family: its name, where its CUfunction goes in the
 * family's state, its dynamic shared memory (as memra__gpu_function). */
typedef struct memra__gpu_kernel {
    const char *name;
    size_t offset; /* offsetof(<family state>, <CUfunction member>) */
    unsigned smem;
} memra__gpu_kernel;
/* A kernel family as the runtime sees it (defined in modules/kernels/<family>/).
 * At create, inside the device's context, with `state` zeroed (state_size
 * bytes, owned by the context): when `image` is set, the embedded image is
 * loaded and kernels[0..n_kernels) are looked up into the state
 * (memra__gpu_load_kernels); then load (optional) does the rest: other images
 * (memra__gpu_image_load / memra__gpu_jit_load), kernels (memra__gpu_function),
 * the family's knobs. unload (optional) runs inside the context at destroy,
 * also after a failed load. knobs (optional) runs first of all at create,
 * before the device is checked (so also when create then fails): for knobs
 * that are process-wide rather than per context (host->knob). */
typedef struct memra__gpu_family {
    const char *name;
    size_t state_size;
    const char *image;
    const memra__gpu_kernel *kernels;
    size_t n_kernels;
    memra_status (*load)(memra__gpu *gpu, void *state);
    void (*unload)(memra__gpu *gpu, void *state);
    void (*knobs)(const memra_host_services *host, const memra_device_caps *caps);
} memra__gpu_family;

#define MEMRA__GPU_MAX_FAMILIES 8
#define MEMRA__GPU_MAX_IMAGES 8

struct memra__gpu {
    const memra_host_services *host;
    const memra_device_caps *caps;
    const char *name; /* the module's name, for logs and errors */
    char target[16];  /* "sm_90a": the embedded images loaded */
    int portable;     /* memra__gpu_create_portable: images sm_<cc> (SASS), else compute_80 (PTX), no dependent launches */
    int from_ptx;     /* some image of this context came from PTX (the driver compiled it at load) */
    memra__cu cu;
    memra__cu_launch_ex_fn cuLaunchKernelEx; /* NULL: no programmatic dependent launch (plain launches) */
    memra__cu_tensor_map_encode_tiled_fn cuTensorMapEncodeTiled; /* NULL: no tensor maps (cc < 9.0, old driver) */
    atomic_int pdl_refused; /* set when the driver refused a dependent launch that a plain one then served */
    int owns_modules;       /* no image loader in the host services: images loaded with cuModuleLoadData here */
    CUmodule owned[MEMRA__GPU_MAX_IMAGES]; /* those images, unloaded at destroy */
    int n_owned;
    struct {
        CUmodule m;
        const memra__gpu_image *img;
    } loaded[MEMRA__GPU_MAX_IMAGES]; /* each embedded image loaded and its module, for memra__gpu_has_kernel */
    int n_loaded;
    int n_images; /* images loaded, for the log line */
    unsigned grid_cap; /* blocks for grid-stride kernels */
    memra__lt *lt;     /* NULL when cuBLASLt is not open: the GEMM lanes on it decline */
    char lt_why[128];
    const memra__gpu_family *families[MEMRA__GPU_MAX_FAMILIES];
    void *state[MEMRA__GPU_MAX_FAMILIES];
    int n_families;
};

/* Per-device state for module `name` serving `families` (in load order):
 * resolve the driver, then each family's load. MODULE_ERROR (after
 * host->set_error) when an image is missing for the device; NO_DEVICE,
 * NO_DRIVER, DRIVER_ERROR, OUT_OF_MEMORY otherwise. *out_gpu set on success. */
memra_status memra__gpu_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               const memra__gpu_family *const *families, size_t n_families, memra__gpu **out_gpu);
/* The same for a portable module: each image is the embedded cubin for the
 * device's plain sm_<cc> where the build has one, else the compute_80 PTX
 * (MEMRA__GPU_PORTABLE_PTX), which the driver compiles for the device at load;
 * each load logs its origin at INFO ("loaded from PTX (compute_80)" or "from
 * SASS (sm_86)"). No programmatic dependent launches: images for sm_80 have
 * no griddepcontrol, so a dependent launch could start before its inputs are
 * written. */
#define MEMRA__GPU_PORTABLE_PTX "compute_80"
memra_status memra__gpu_create_portable(const memra_host_services *host, const memra_device_caps *caps,
                                        const char *name, const memra__gpu_family *const *families,
                                        size_t n_families, memra__gpu **out_gpu);
void memra__gpu_destroy(memra__gpu *gpu); /* NULL is fine */

/* The state of `family` in this context, NULL when the module does not serve it. */
void *memra__gpu_state(const memra__gpu *gpu, const memra__gpu_family *family);

/* Push / pop the device's context around work (nesting is fine; a context
 * already current is not pushed again). */
memra_status memra__gpu_enter(memra__gpu *gpu);
void memra__gpu_leave(memra__gpu *gpu);

/* Launch a 1-D grid of `block` threads on `stream` (the caller has entered). */
memra_status memra__gpu_launch(memra__gpu *gpu, CUfunction f, const char *name, unsigned grid, unsigned block,
                               memra_stream_t stream, void **args);
/* Enter, launch a (gx, gy, gz) grid of `threads`-thread blocks with `smem`
 * bytes of dynamic shared memory, leave. pdl: as a programmatic dependent of
 * the stream's previous kernel (the kernel must wait in griddepcontrol.wait
 * before touching memory) where the driver has cuLaunchKernelEx; a dependent
 * launch the driver refuses is retried plainly, logged once, and the context
 * launches plainly from then on. */
memra_status memra__gpu_launch_ex(memra__gpu *gpu, CUfunction f, const char *name, unsigned gx, unsigned gy,
                                  unsigned gz, unsigned threads, unsigned smem, memra_stream_t stream, void **args,
                                  int pdl);
/* Blocks for `items` work items at `per_block` each, at most grid_cap (>= 1). */
unsigned memra__gpu_blocks(const memra__gpu *gpu, int64_t items, int64_t per_block);

/* The value of knob `name` for this device (host->knob: the configuration the
 * core parsed at memra_open), NULL when unset or when the core has no knob
 * service. For a family's load (init time), never per call. */
const char *memra__gpu_knob(const memra__gpu *gpu, const char *name);

/* The op's decline: sets call->decline_reason (static text) and returns DECLINED. */
memra_status memra__gpu_decline(memra_call *call, const char *reason);
/* 1 when the device pointer is a multiple of `a` (a power of two). */
int memra__gpu_aligned(memra_dptr p, unsigned a);
/* The host module's GEMM argument checks (so a lane refuses the calls the
 * reference refuses): INVALID_ARGUMENT with "<module>.<op>: ..." recorded, OK
 * otherwise (also for m = 0 or n = 0, which the caller then skips). */
memra_status memra__gpu_check_gemm(memra__gpu *gpu, const char *op, const memra_gemm_args *a);
/* Where row 0 of the output is: y + y_row_offset rows of ldy floats. */
memra_dptr memra__gpu_y_base(const memra_gemm_args *a);
/* INVALID_ARGUMENT with "<module>.<op>: <what>" recorded. */
memra_status memra__gpu_bad_arg(memra__gpu *gpu, const char *op, const char *what);
/* Blocks for `units` equal pieces of work handed round-robin to the blocks of a
 * grid-stride kernel when `resident` blocks fit on the device at once: as many
 * rounds as it takes, the units spread evenly over them (so the last round is
 * not a thin tail: 10880 units on 1056 slots -> 990 blocks of 11 rounds, not
 * 1056 blocks of which 320 run an 11th). */
unsigned memra__gpu_grid_balanced(int64_t units, int64_t resident);

/* memra__gpu_launch of kernel memra_k_<kernel>, found as member <kernel> of
 * the family state `st`, with the arguments' addresses. */
#define MEMRA__GPU_LAUNCH(gpu, st, kernel, grid, block, stream, ...)                                       \
    memra__gpu_launch((gpu), (st)->kernel, "memra_k_" #kernel, (grid), (block), (stream), (void *[]){__VA_ARGS__})

/* ---- images and kernels (loader.c) ---- */

/* The embedded image `image` for `target` ("sm_90a"), or NULL. */
const memra__gpu_image *memra__gpu_image_find(const char *image, const char *target);
/* Load embedded image `image` for the device's target into the context
 * (through host->jit->image_load, else cuModuleLoadData). MODULE_ERROR naming
 * the targets the module has when there is none for this device. */
memra_status memra__gpu_image_load(memra__gpu *gpu, const char *image, CUmodule *out);
/* Why the JIT cannot serve this context (a static sentence), or NULL when it can. */
const char *memra__gpu_jit_unavailable(const memra__gpu *gpu);
/* Compile `src` for caps->jit_target through host->jit->module_get (memory,
 * disk, NVRTC) and load it. On failure why[] says what happened and the
 * status is returned (nothing recorded for the caller to clear). *out_ms: time taken. */
memra_status memra__gpu_jit_load(memra__gpu *gpu, const memra_jit_source *src, CUmodule *out, double *out_ms,
                                 char *why, size_t why_len);
/* Whether module m has entry point `kernel`, for the kernels a family takes only where its image has them.
 * For an embedded image (memra__gpu_image_load) the image itself is read first (a cubin's symbol table, a PTX
 * image's .entry lines), so that a kernel the image lacks costs no failing driver call (compute-sanitizer
 * reports each one as an error); one it has is then asked of the driver. Other modules (JIT) are asked of the
 * driver alone. */
int memra__gpu_has_kernel(const memra__gpu *gpu, CUmodule m, const char *kernel);
/* The same question with the driver's answer kept: kernel's function in module m, or NULL where m lacks it (one
 * driver lookup at most) */
CUfunction memra__gpu_kernel_lookup(const memra__gpu *gpu, CUmodule m, const char *kernel);
/* The image reader under it: 1 where embedded image img defines entry point `kernel` (a cubin's symbol table,
 * a PTX image's .entry lines), 0 where it does not, -1 where the bytes are not a cubin this reader follows. */
int memra__gpu_image_has_kernel(const memra__gpu_image *img, const char *kernel);
/* An opt-in kernel of module m: its function (smem as memra__gpu_function) where the module has it; 1 when
 * loaded, 0 (*out NULL) where it is absent or its lookup failed (a miss is not an error). */
int memra__gpu_function_optional(memra__gpu *gpu, CUmodule m, const char *kernel, unsigned smem, CUfunction *out);
/* Look `kernel` up in module m; smem > 48 KB sets the function's dynamic
 * shared memory limit to it. DRIVER_ERROR naming the kernel otherwise. */
memra_status memra__gpu_function(memra__gpu *gpu, CUmodule m, const char *kernel, unsigned smem, CUfunction *out);
/* A kernel table entry for CUfunction member `member` of `state_type`, the
 * kernel memra_k_<member>, no dynamic shared memory beyond 48 KB. */
#define MEMRA__GPU_KERNEL(state_type, member) {"memra_k_" #member, offsetof(state_type, member), 0}
/* The designated initialisers of a family whose image is named like it and
 * whose kernels are `table` (an array). */
#define MEMRA__GPU_FAMILY_IMAGE(family_name, state_type, table)                                            \
    .name = family_name, .state_size = sizeof(state_type), .image = family_name, .kernels = table,         \
    .n_kernels = sizeof table / sizeof table[0]
/* Load embedded image `image` and look up each of kernels[0..n) into
 * state + offset. The first failure is returned (see the two functions above). */
memra_status memra__gpu_load_kernels(memra__gpu *gpu, const char *image, const memra__gpu_kernel *kernels, size_t n,
                                     void *state);
/* Open cuBLASLt for this context (inside the context): gpu->lt, or NULL with
 * the reason in gpu->lt_why. CUBLAS_ERROR when a present library fails. */
memra_status memra__gpu_lt_open(memra__gpu *gpu);

/* The name of a status ("DRIVER_ERROR"), for logs. */
const char *memra__gpu_status_name(memra_status st);

#endif
