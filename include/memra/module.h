/* memra module ABI, version 1.
 *
 * A module is a shared library that exports ONE symbol, MEMRA_MODULE_ENTRY_SYMBOL,
 * a function returning a constant descriptor:
 *
 *   static const memra_op_table ops = {
 *       .struct_size = sizeof(memra_op_table),
 *       .gemm_f16 = my_gemm_f16,          // ops this module lacks stay NULL
 *   };
 *   static const memra_module_desc desc = {
 *       .abi_version = MEMRA_MODULE_ABI_VERSION,
 *       .struct_size = sizeof(memra_module_desc),
 *       .name = "mymod", .version = "1.0.0",
 *       .score = my_score, .init = my_init, .fini = my_fini, .ops = &ops,
 *   };
 *   MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &desc; }
 *
 * The core reads abi_version and struct_size first: a module with a newer ABI
 * is refused, an older one is read up to its own struct_size. A module links
 * nothing of the core: everything it needs from memra (logging, driver entry
 * points, scratch memory, the JIT) comes through memra_host_services at init.
 *
 * Rules every op follows:
 *  - stream-ordered: enqueue on call->stream, never synchronise the host;
 *  - return MEMRA_STATUS_OK, or MEMRA_STATUS_DECLINED with call->decline_reason
 *    set to a static string (the dispatcher records it and tries the next lane),
 *    or an error status after host->set_error(...) with the library's code.
 *  - never abort, never exit.
 *  - the core makes the device's primary context current (caps->cu_context)
 *    around init, fini and every op; a module may rely on it.
 *  - ops run concurrently: several threads may call any op of one module on
 *    one device at once, on one stream or many, with the same module_ctx.
 *    Keep per-call state on the stack or in scratch (host->scratch_get, which
 *    gives each call memory no concurrent call on another stream shares);
 *    state in the ctx is read-only after init, or atomic / locked.
 *  - knobs (MEMRA_* settings) are read at init through host->knob, never
 *    with getenv and never per call.
 *
 * Interfaces grow at the end: new members are appended and read only when the
 * struct_size the other side reports covers them (MEMRA_HAS_MEMBER). The ABI
 * version changes only when a member changes meaning or place; appended
 * members (host services' scratch_get and knob) do not change it, so a module
 * that uses them checks MEMRA_HAS_MEMBER(host, memra_host_services, ...) for
 * an older core.
 */
#ifndef MEMRA_MODULE_H
#define MEMRA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "memra/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MEMRA_MODULE_ABI_VERSION 1u
#define MEMRA_MODULE_ENTRY_SYMBOL "memra_module_entry"

#if defined(__GNUC__)
#define MEMRA_MODULE_EXPORT __attribute__((visibility("default")))
#else
#define MEMRA_MODULE_EXPORT
#endif

/* True when a struct whose first member is `struct_size` is large enough to
 * hold `member`: the one check for optional trailing members. */
#define MEMRA_HAS_MEMBER(ptr, type, member)                                         \
    ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, member) + sizeof((ptr)->member))

/* A device address. On a GPU it is a CUdeviceptr; on the host device it is a
 * host pointer cast to an integer. */
typedef uint64_t memra_dptr;
/* A CUstream on a GPU (NULL = the legacy default stream); ignored on host. */
typedef void *memra_stream_t;

typedef enum memra_arch {
    MEMRA_ARCH_HOST = 0,
    MEMRA_ARCH_CUDA = 1,  /* any other CUDA device with cc >= 8.0 */
    MEMRA_ARCH_SM90 = 2,  /* Hopper: H100, H200 */
    MEMRA_ARCH_SM120 = 3, /* consumer Blackwell: RTX 5090 */
} memra_arch;

/* Capability bits of a profile (arch/). */
#define MEMRA_CAP_HOST (1ull << 0)            /* the CPU reference device */
#define MEMRA_CAP_INT8_MMA (1ull << 1)        /* mma.sync s8 m16n8k32 */
#define MEMRA_CAP_F16_MMA (1ull << 2)         /* mma.sync f16 */
#define MEMRA_CAP_FP8_MMA (1ull << 3)         /* mma.sync e4m3 m16n8k32 (sm_89/sm_90) */
#define MEMRA_CAP_WGMMA (1ull << 4)           /* wgmma (sm_90a) */
#define MEMRA_CAP_F8F6F4 (1ull << 5)          /* mma.sync kind::f8f6f4 (sm_120a) */
#define MEMRA_CAP_MXF8F6F4 (1ull << 6)        /* mma.sync kind::mxf8f6f4.block_scale */
#define MEMRA_CAP_LT_F16 (1ull << 7)          /* cuBLASLt f16 GEMM */
#define MEMRA_CAP_LT_FP8_SCALAR (1ull << 8)   /* cuBLASLt FP8, scalar scales */
#define MEMRA_CAP_LT_FP8_OUTER_VEC (1ull << 9) /* cuBLASLt FP8, per-row scales */
#define MEMRA_CAP_LT_FP8_BLK128 (1ull << 10)  /* cuBLASLt FP8, VEC128 / BLK128x128 */

/* One device as a module sees it. Filled once by the core; read-only. */
typedef struct memra_device_caps {
    uint32_t struct_size;
    memra_arch arch;
    const char *profile;    /* "sm90", "sm120", "cuda", "host" */
    const char *name;       /* marketing name, or "host" */
    int ordinal;            /* CUDA ordinal, -1 for the host device */
    int cc;                 /* compute capability as major*10+minor; 0 on host */
    int sm_count;           /* multiprocessors; CPU threads used on host */
    uint64_t total_mem;     /* bytes */
    int driver_version;     /* cuDriverGetVersion, 0 on host */
    const char *jit_target; /* "sm_90a", "sm_120a", "sm_86"...; NULL on host */
    uint64_t caps;          /* MEMRA_CAP_* */
    size_t smem_per_block_optin; /* bytes of shared memory a block may opt into */
    void *cu_context;       /* the device's primary CUcontext, NULL on host */
    int cu_device;          /* CUdevice */
} memra_device_caps;

/* ---- op arguments ------------------------------------------------------- */

/* One call of an op. The dispatcher fills everything but decline_reason. */
typedef struct memra_call {
    uint32_t struct_size;
    void *module_ctx;                /* what the module's init returned */
    const memra_device_caps *caps;   /* the device */
    memra_stream_t stream;
    const char *decline_reason;      /* OUT: static text when DECLINED */
    /* ---- appended; check with MEMRA_HAS_MEMBER(call, memra_call, variant) ---- */
    /* The variant to run: an index into the list desc->variants(caps, op)
     * returned for this device and op, or -1 for the module's own choice
     * (always -1 for a module without variants). The core sets it from the
     * routing entry (a tuned entry names a variant) or from
     * memra_op_args.variant in memra_module_call. */
    int32_t variant;
    /* ---- appended; check with MEMRA_HAS_MEMBER(call, memra_call, sizing) ----
     * 1: the core wants only this call's scratch requests (memra_stream_reserve
     * sizing a stream's arena at every m, core/weights/weight.c). A module that
     * reads this member may make its scratch_get calls exactly as the real call
     * would, then return MEMRA_STATUS_OK without launching anything, after
     * setting it to 2 (outputs are left unwritten). A module that ignores it
     * runs the call as usual, which is equally correct, only slower. 0 for
     * every other call. */
    int32_t sizing;
} memra_call;

/* y[y_row_offset + i, j] = alpha * sum_k x[i,k] * W[j,k]   (y = x . W^T)
 * W is [n rows x k cols] row-major in the op's weight format; x is [m x k];
 * y rows have stride ldy floats (ldy >= n). */
typedef struct memra_gemm_args {
    uint32_t struct_size;
    int32_t m, n, k;
    memra_dptr w;            /* weight operand (f16 mirror, e4m3, Q8_0 blocks) */
    memra_dptr w_scale_grid; /* gemm_fp8_blk: f32 [ceil(n/128) x ceil(k/128)] */
    float w_scale;           /* gemm_fp8: per-tensor weight scale */
    memra_dptr x;            /* f32 [m x k]; f16 when x_is_f16; q8_1 records for gemm_q8_0 */
    int32_t x_is_f16;        /* gemm_f16 only: x already converted by cvt_f16 */
    memra_dptr y;            /* f32 output base */
    int64_t ldy;             /* row stride of y in floats */
    int64_t y_row_offset;    /* first row of y written */
    float alpha;             /* scalar post-scale (1.0f for none) */
    /* ---- appended; check with MEMRA_HAS_MEMBER(args, memra_gemm_args, w_format) ---- */
    int32_t w_format;        /* gemm_kr: the K-quant the records came from (MEMRA_FORMAT_Q4_K, _Q5_K, _Q6_K); else unused */
    /* ---- appended; check with MEMRA_HAS_MEMBER(args, memra_gemm_args, x_amax) ---- */
    /* The activation's scale for gemm_fp8 / gemm_fp8_blk without an amax pass
     * (DESIGN.md, "Activation scales"; other ops ignore both). Precedence:
     *  x_amax != 0: a producer-supplied amax on the device: gemm_fp8 one f32
     *    (max |x| over the batch), gemm_fp8_blk f32 [ceil(k/128) x m], the
     *    maximum of row i's block b at x_amax[b * m + i]; each scale is
     *    s = amax > 0 ? amax / 448.0f : 1.0f (IEEE division; zero, negative and
     *    NaN read as 1), the lane's own pass applied to that amax;
     *  else x_scale > 0: a static scale s (the checkpoint's input_scale),
     *    per tensor, and for gemm_fp8_blk the scale of every (row, 128) block;
     *  else (0): the lane's own amax pass.
     * Then q = e4m3(x / s) in one pass: values above 448 s saturate to +-448 s
     * (the caller's contract); y as with the lane's own scales. A negative or
     * non-finite x_scale is INVALID_ARGUMENT. */
    float x_scale;
    memra_dptr x_amax;
} memra_gemm_args;

/* The expert-grouped GEMM (gemm_experts, appended; MoE prefill). With g the
 * memra_gemm_args of the call (g.m = rows) and e this struct:
 *   for every row r < g.m with 0 <= ids[r] < n_experts:
 *     y[g.y_row_offset + r, :] = row r of the dense op `lane` run with the
 *                                weight operand of expert ids[r];
 *   rows with any other id are skipped: their output row is left unchanged.
 * The numbers are exactly those of the dense lane run once per expert on the
 * rows routed to it (gathered in row order): the activation quantisers that
 * are row-local (f16 / bf16 casts, q8_1, the block-128 FP8 per row and 128
 * columns) are unaffected by the grouping; gemm_fp8's ONE per-batch scale
 * amax/448 is taken per expert, over the rows routed to that expert. The
 * host module defines it so (a loop of its dense ops over gathered rows).
 *  g.w            device array of n_experts memra_dptr: each expert's operand
 *                 in the lane's layout (f16 mirror, bf16 / e4m3 bytes, Q8_0
 *                 blocks, Q8_0 records, K records, W16 operands)
 *  g.w_scale_grid gemm_fp8_blk: device array of n_experts memra_dptr (each
 *                 expert's f32 block-128 grid); else 0
 *  g.w_scale      unused (gemm_fp8: e.w_scales)
 *  g.x            as the lane reads it for all g.m rows: f32 [m x k] (f16
 *                 with x_is_f16), or q8_1 records of all m rows
 *  g.w_format     gemm_kr: the K-quant; gemm_w16: the experts' format
 *  g.x_amax       ignored (a producer's maxima are laid out for the batch's
 *                 rows, not an expert's gathered ones): each expert's FP8
 *                 call takes its own amax pass; g.x_scale, a static
 *                 per-tensor scale, applies to every expert
 * ids are int32 on the device; the op never reads them on the host (no host
 * round trip), so it is stream-ordered and capturable like the dense ops. */
typedef struct memra_gemm_experts_args {
    uint32_t struct_size;
    int32_t lane;            /* the dense op whose contract each expert follows (a memra_op: gemm_f16, gemm_bf16,
                                gemm_fp8, gemm_fp8_blk, gemm_q8_0, gemm_q8_0r, gemm_kr, gemm_w16) */
    int32_t n_experts;       /* >= 1 */
    memra_dptr ids;          /* int32 [m]: the expert of each row */
    memra_dptr w_scales;     /* gemm_fp8: f32 [n_experts] per-tensor weight scales; else 0 */
} memra_gemm_experts_args;

/* Weight formats (GGML's block formats, OCP e4m3, plain f16/f32). */
typedef enum memra_format {
    MEMRA_FORMAT_F32 = 0,
    MEMRA_FORMAT_F16 = 1,
    MEMRA_FORMAT_Q8_0 = 2,
    MEMRA_FORMAT_Q4_0 = 3,
    MEMRA_FORMAT_Q4_K = 4,
    MEMRA_FORMAT_Q5_K = 5,
    MEMRA_FORMAT_Q6_K = 6,
    MEMRA_FORMAT_E4M3 = 7,
    MEMRA_FORMAT_BF16 = 8, /* bfloat16: the top half of an f32, served by gemm_bf16 (never turned into f16) */
} memra_format;

/* The accumulator probe: the same MMQ tile with s32 or f32 accumulation. */
typedef enum memra_accprobe_arm {
    MEMRA_ACCPROBE_S32 = 0, /* int8 MMA, s32 accumulate */
    MEMRA_ACCPROBE_F32 = 1, /* e4m3 MMA on the same bytes, f32 accumulate */
    MEMRA_ACCPROBE_MX = 2,  /* kind::mxf8f6f4.block_scale at unit scales (sm_120a) */
} memra_accprobe_arm;

/* Every op of the v1 table, in table order. X(name, signature-args). */
#define MEMRA_OP_LIST(X)                                                            \
    X(cvt_f16)                                                                      \
    X(gemm_f16)                                                                     \
    X(gemm_fp8)                                                                     \
    X(gemm_fp8_blk)                                                                 \
    X(quant_q8_1)                                                                   \
    X(gemm_q8_0)                                                                    \
    X(dequant_f16)                                                                  \
    X(fp8_blk_to_q8_0)                                                              \
    X(fp8_nan_count)                                                                \
    X(scale)                                                                        \
    X(accprobe)                                                                     \
    X(repack_q8_0)                                                                  \
    X(gemm_q8_0r)                                                                   \
    X(gemm_bf16)                                                                    \
    X(gemm_kr)                                                                      \
    X(gemm_experts)                                                                 \
    X(dequant_kr_f16)                                                               \
    X(gemm_w16)

typedef enum memra_op {
#define MEMRA__OP_ENUM(name) MEMRA_OP_##name,
    MEMRA_OP_LIST(MEMRA__OP_ENUM)
#undef MEMRA__OP_ENUM
    MEMRA_OP_COUNT_
} memra_op;

/* The op table. Each member may be NULL (the module does not provide it). */
typedef struct memra_op_table {
    uint32_t struct_size;
    /* f32 -> f16, round to nearest even. n elements. */
    memra_status (*cvt_f16)(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n);
    /* f16 weight mirror x activation (f32, or f16 when args->x_is_f16). */
    memra_status (*gemm_f16)(memra_call *call, const memra_gemm_args *args);
    /* e4m3 weight with per-tensor scale; activation quantised in-stream to e4m3
     * with one per-batch scale amax/448 computed on the device. */
    memra_status (*gemm_fp8)(memra_call *call, const memra_gemm_args *args);
    /* e4m3 weight with a block-128 f32 grid; activation e4m3 per row per 128 cols. */
    memra_status (*gemm_fp8_blk)(memra_call *call, const memra_gemm_args *args);
    /* f32 [m x k] -> q8_1 records (memra_q8_1_bytes(m, k) bytes at dst). */
    memra_status (*quant_q8_1)(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst);
    /* Q8_0 weight x q8_1 records -> f32. args->x points at the records. */
    memra_status (*gemm_q8_0)(memra_call *call, const memra_gemm_args *args);
    /* rows x cols of a block format -> row-major f16, bit-identical to the host decoder. */
    memra_status (*dequant_f16)(memra_call *call, memra_format format, memra_dptr src,
                                int64_t rows, int64_t cols, memra_dptr dst_f16);
    /* block-128 e4m3 weight + grid -> Q8_0 slab (rows x cols/32 blocks). */
    memra_status (*fp8_blk_to_q8_0)(memra_call *call, memra_dptr w, memra_dptr grid,
                                    int64_t rows, int64_t cols, memra_dptr dst_q8_0);
    /* count of e4m3 codes with magnitude 0x7F in nbytes, added to *(uint64_t *)out. */
    memra_status (*fp8_nan_count)(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64);
    /* y[i] *= s for n floats. */
    memra_status (*scale)(memra_call *call, memra_dptr y, int64_t n, float s);
    /* The accumulator instrument: time only. w holds int8/e4m3 bytes [n x k],
     * x [m x k] bytes, y f32 [m x n]. */
    memra_status (*accprobe)(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *args);
    /* ---- appended after the first v1 table; read only when struct_size covers them ---- */
    /* Q8_0 weight [rows x cols] (cols a multiple of 32) -> Q8_0 records
     * (memra_q8_0r_bytes(rows, cols) bytes at dst), bit-identical to the host. */
    memra_status (*repack_q8_0)(memra_call *call, memra_dptr src_q8_0, int64_t rows, int64_t cols,
                                memra_dptr dst);
    /* Q8_0 records (args->w, from repack_q8_0) x q8_1 records (args->x) -> f32:
     * gemm_q8_0's numeric contract on the repacked weight. */
    memra_status (*gemm_q8_0r)(memra_call *call, const memra_gemm_args *args);
    /* bf16 weight (args->w, [n x k] row-major) x activation f32 converted to
     * bf16 in-stream (round to nearest even) -> f32, f32 accumulate. */
    memra_status (*gemm_bf16)(memra_call *call, const memra_gemm_args *args);
    /* K-packed weight (args->w, memra_kr_repack: Q4_K / Q5_K / Q6_K at
     * their GGUF width, args->w_format says which) x q8_1 records
     * (args->x) -> f32: the MMQ floor for K-quant weights. Integer products
     * exact (s32 per 32 values, or per 16 for Q6_K), f32 fold; the host
     * module's gemm_kr defines it. */
    memra_status (*gemm_kr)(memra_call *call, const memra_gemm_args *args);
    /* The expert-grouped GEMM (memra_gemm_experts_args above): each row of
     * args->x times the operand of its own expert, under the contract of the
     * dense op experts->lane. A module may serve some lanes and decline the
     * others. */
    memra_status (*gemm_experts)(memra_call *call, const memra_gemm_args *args, const memra_gemm_experts_args *experts);
    /* The floor's records -> row-major f16 [rows x cols]: format Q4_K / Q5_K / Q6_K, the K-packed weight
     * (memra_kr_repack); format Q8_0, the Q8_0 records (memra_q8_0r_bytes, gemm_q8_0r's operand). Bit-identical
     * to dequant_f16 of the GGUF blocks the records were made from (memra_kr_record's value, or q d, then f16
     * round to nearest even): the per-call dequantisation of a weight on the floor, which keeps no raw copy. */
    memra_status (*dequant_kr_f16)(memra_call *call, memra_format format, memra_dptr src_kr, int64_t rows,
                                   int64_t cols, memra_dptr dst_f16);
    /* The W16 operand (args->w, memra_w16_repack of a Q8_0 / Q4_0 / Q4_K / Q5_K / Q6_K weight, args->w_format says
     * which) x activation (args->x: f32, or f16 with x_is_f16, as gemm_f16 takes it) -> f32: gemm_f16's numeric contract on the f16
     * mirror of the same blocks (each weight value dequant_f16's bits, each activation f16 round to nearest
     * even, f32 accumulate in an order the lane chooses, then alpha): the mirror's numbers from the GGUF's
     * bytes, no mirror held. The host module's gemm_w16 defines it (memra_w16_decode_f16, then its gemm_f16). */
    memra_status (*gemm_w16)(memra_call *call, const memra_gemm_args *args);
} memra_op_table;

/* ---- host services -------------------------------------------------------- */

#define MEMRA_LOG_ERROR 0
#define MEMRA_LOG_WARN 1
#define MEMRA_LOG_INFO 2
#define MEMRA_LOG_DEBUG 3

/* The JIT service (jit/). A kernel source is self-contained CUDA C++. */
typedef struct memra_jit_services {
    uint32_t struct_size;
    /* Compile (or fetch from the caches) `source` for the device's JIT target
     * with `options`, load it into the device's context and return the
     * CUmodule. The image lives as long as the device. `name` names the
     * source in logs and in `memra jit ls`. */
    memra_status (*module_get)(const memra_device_caps *caps, const char *name, const char *source,
                               const char *const *options, int n_options, void **out_cumodule);
    /* Load an image compiled ahead of time (cubin/fatbin) through the same
     * loader; the image lives as long as the device. */
    memra_status (*image_load)(const memra_device_caps *caps, const char *name, const void *image,
                               size_t size, void **out_cumodule);
} memra_jit_services;

typedef struct memra_host_services {
    uint32_t abi_version; /* MEMRA_MODULE_ABI_VERSION of the core */
    uint32_t struct_size;
    void (*log)(int level, const char *module, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /* Record an error detail for memra_last_error and return `status`. */
    memra_status (*set_error)(memra_status status, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* A CUDA driver entry point by its base name (e.g. "cuLaunchKernel"),
     * resolved by cuGetProcAddress at the core's pinned version; NULL when
     * there is no driver or no such entry point. */
    void *(*driver_proc)(const char *name);
    /* Deprecated (kept for modules built before scratch_get): scratch slot
     * `slot` (0..47) of the op running on this thread, served as the named
     * block "slot.<slot>" of that op's arena (see scratch_get); fails outside
     * an op. New modules use scratch_get. */
    memra_status (*scratch)(const memra_device_caps *caps, uint32_t slot, size_t bytes, memra_dptr *out);
    /* The JIT service; NULL where NVRTC is not available. */
    const memra_jit_services *jit;
    /* dlopen a named CUDA library the way the core finds the driver
     * ("cublasLt", "nvrtc"); NULL with a logged reason when absent. */
    void *(*library_open)(const char *which);
    /* ---- appended; check with MEMRA_HAS_MEMBER(host, memra_host_services, member) ---- */
    /* Scratch for the op `call` runs: the block named `name` ([A-Za-z0-9_.-],
     * kept apart per module: two modules' "ws" are two blocks) of at least
     * `bytes`, 256-byte aligned, valid until the op returns, and to the work it
     * enqueued on call->stream. Work on another stream never gets the same
     * memory before this work has completed on the device. Contents are not
     * kept between calls. Allocates only when the block grows; during CUDA
     * graph capture it never allocates and fails with NOT_SUPPORTED naming
     * memra_stream_reserve instead. Thread-safe. */
    memra_status (*scratch_get)(memra_call *call, const char *name, size_t bytes, memra_dptr *out);
    /* The effective value of knob `name` ("MEMRA_MMQ_BM") on the device: from
     * memra_options.settings or the environment as read at memra_open; NULL
     * when unset. The string lives as long as the runtime. Read at init, not
     * per call. The knobs of the built-in modules are validated at memra_open;
     * a module's own MEMRA_* variable is reported as unknown at open (a
     * warning) and the module validates its value at init. */
    const char *(*knob)(const memra_device_caps *caps, const char *name);
    /* As scratch_get, for state a module keeps in scratch across its calls
     * (a grid barrier's arrival word): a block that is new, grown, or was last
     * handed out by scratch_get is zero-filled, in stream order before any
     * work the op enqueues after this call; otherwise its bytes are as the
     * module's last call on this block left them (a block is never shared
     * between streams before that call's work completed, and no other module
     * or name touches it). The module must leave the block as its next call
     * needs it. During CUDA graph capture the zero-fill, when due, is captured
     * (it then runs at every replay). Use a name of its own for such a block. */
    memra_status (*scratch_get_zeroed)(memra_call *call, const char *name, size_t bytes, memra_dptr *out);
} memra_host_services;

/* A kernel source a module declares so `memra jit warm` can compile it. */
typedef struct memra_jit_source {
    const char *name;
    const char *source;
    const char *const *options;
    int n_options;
} memra_jit_source;

/* A variant: one named configuration of an op of a module (a tile shape, an
 * MMA kind, a launch mode), so `memra tune` can race it against the others.
 * A variant IS a named set of knob values: running variant V must give the
 * results and speed the module gives when initialised with exactly the knobs
 * of V set (`knobs`, e.g. "MEMRA_MMQ_BM=64,MEMRA_MMQ_BN=96,MEMRA_MMQ_PDL=0"),
 * and nothing else changed. The module prepares every variant it lists at
 * init (kernels loaded) and picks one per call from memra_call.variant. The
 * list is constant for a (device, op): same order and names on every call. */
typedef struct memra_variant {
    const char *name;  /* [a-z0-9_.-]{1,32}, unique within the module and op: "bm64_bn96", "mxf8f6f4" */
    const char *knobs; /* the knob values it stands for, "NAME=value,..."; "" for the module's default */
} memra_variant;

/* ---- the descriptor ------------------------------------------------------- */

typedef struct memra_module_desc {
    uint32_t abi_version; /* MEMRA_MODULE_ABI_VERSION the module was built for */
    uint32_t struct_size; /* sizeof(memra_module_desc) as the module saw it */
    const char *name;     /* unique, [a-z0-9_] */
    const char *version;  /* free text, e.g. "1.2.0" */
    /* 0 = cannot run on this device; higher = preferred. Pure; no side effects. */
    int (*score)(const memra_device_caps *caps);
    /* Per-device state. Loads the module's kernel images on the device, so a
     * module without code for this GPU fails here. May be NULL. */
    memra_status (*init)(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx);
    void (*fini)(void *ctx);
    const memra_op_table *ops;
    /* Kernel sources this module compiles at run time for `caps` (may be NULL). */
    const memra_jit_source *(*jit_sources)(const memra_device_caps *caps, size_t *out_count);
    /* ---- appended; read only when struct_size covers it ---- */
    /* The variants of `op` on `caps` (may be NULL, or return NULL / *out_count
     * 0: no variants). Pure; called at load and by memra tune, never per call.
     * The array lives as long as the module is loaded. */
    const memra_variant *(*variants)(const memra_device_caps *caps, memra_op op, size_t *out_count);
    /* Nonzero: this module's quant_q8_1 writes the records' sum plane
     * (memra_q8_1_bytes, memra_q8_1_plane), which gemm_kr may read. A module
     * built before the plane existed reads 0 here; the core then drops its
     * quant_q8_1 at load (logged), so records without a plane never reach a
     * GEMM that reads one. */
    uint32_t q8_1_sums;
} memra_module_desc;

typedef const memra_module_desc *(*memra_module_entry_fn)(void);

/* The ABI's first members never move. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(offsetof(memra_module_desc, abi_version) == 0, "abi_version first");
_Static_assert(offsetof(memra_module_desc, struct_size) == 4, "struct_size second");
_Static_assert(offsetof(memra_host_services, abi_version) == 0, "abi_version first");
#endif

/* Bytes of q8_1 records for an [m x k] activation: k is padded to a multiple
 * of 512 (4 records of 128); record (kb, t) lives at index kb * m + t. After
 * the R * m records (R = records per row) comes the sum plane, at byte
 * memra_q8_1_plane(m, k): entry (kb, t) at index kb * m + t, 16 bytes, f32
 * t[4] with t[b] = fl(S_b d_b) (S_b the exact sum of block b's 32 codes, d_b
 * its scale; +0 where S_b = 0). quant_q8_1 writes both; gemm_kr's Q4_K / Q5_K
 * tiles read t for the min term instead of summing the codes themselves. */
static inline uint64_t memra_q8_1_bytes(int64_t m, int64_t k)
{
    /* 0 for a negative size or one whose byte count does not fit 64 bits. */
    if (m < 0 || k < 0) return 0;
    uint64_t recs = ((uint64_t)k + 511u) / 512u * 4u;
    if (m != 0 && recs > UINT64_MAX / 160u / (uint64_t)m) return 0;
    return recs * (uint64_t)m * 160u;
}

/* The byte offset of the sum plane in memra_q8_1_bytes(m, k) bytes of q8_1
 * records (0 where memra_q8_1_bytes is 0). */
static inline uint64_t memra_q8_1_plane(int64_t m, int64_t k)
{
    const uint64_t bytes = memra_q8_1_bytes(m, k);
    return bytes / 160u * 144u;
}

/* Bytes of the Q8_0 record layout of a [rows x cols] Q8_0 weight (cols a
 * multiple of 32), the operand of gemm_q8_0r. It is the q8_1 record applied to
 * the weight: cols are padded to a multiple of 128 with zero blocks; record
 * (g, j), the 128 columns from 128 g of row j, lives at index g * rows + j and
 * holds 144 bytes: f32 d[4] (each Q8_0 block's f16 scale widened exactly to
 * f32; 0 for padding blocks) then int8 qs[128] (0 in padding blocks). Every
 * record is 16-byte aligned when the base is, which Q8_0's 34-byte blocks
 * never are. */
static inline uint64_t memra_q8_0r_bytes(int64_t rows, int64_t cols)
{
    /* 0 for a negative size or one whose byte count does not fit 64 bits. */
    if (rows < 0 || cols < 0) return 0;
    uint64_t recs = ((uint64_t)cols + 127u) / 128u;
    if (rows != 0 && recs > UINT64_MAX / 144u / (uint64_t)rows) return 0;
    return recs * (uint64_t)rows * 144u;
}

/* The K-packed layout of a [rows x cols] Q4_K / Q5_K / Q6_K weight (cols a
 * multiple of 256), the operand of gemm_kr: the GGUF bytes re-laid out in
 * planes for coalesced tile loads, no wider than the GGUF (Q4_K 144, Q5_K 176,
 * Q6_K 210 bytes per 256 values: exactly the GGUF bytes). The codes stay 4-,
 * 5- and 6-bit packed and the scales as the format has them; the kernel
 * widens them in its load stage. G = cols / 128 (k steps), SB = cols / 256
 * (super-blocks), R = rows; q[c] is the unsigned code of value 128 g + c of
 * row j (Q4_K 0..15, Q5_K 0..31, Q6_K the 6-bit code 0..63 = value + 32).
 * The planes, in this order from the base:
 *  N  G R 64 bytes: record (g, j) at (g R + j) 64; its unit u = 0..3 (the
 *     32-block u of the 128 values) at + 16 u, byte i = (q[32 u + i] & 15) |
 *     (q[32 u + 16 + i] & 15) << 4: word w of a unit holds values 4w..4w+3
 *     in its low nibbles and 16+4w.. in its high ones.
 *  H  (Q5_K: G R 16 bytes, Q6_K: G R 32; none for Q4_K) record (g, j) at
 *     (g R + j) 16 (32). Q5_K: word u (little-endian u32), bit 8 i + o = bit 4
 *     of q[32 u + 4 o + i] (o = 0..7, i = 0..3). Q6_K: word 2 u + o / 4, bits
 *     8 i + 2 (o % 4) .. + 1 = bits 4..5 of q[32 u + 4 o + i].
 *  S  SB R 16 bytes: record (sb, j) at (sb R + j) 16. Q4_K / Q5_K: the GGUF
 *     block's first 16 bytes (f16 d, f16 dmin, scales[12]); Q6_K: its int8
 *     scales[16].
 *  D  (Q6_K only) SB R 2 bytes: the f16 d of (sb, j).
 * Every plane starts 16-byte aligned when the base is. memra_kr_record
 * (formats.h) gives any 128-value record as scales and int8 codes. */
static inline uint64_t memra_kr_bytes(memra_format format, int64_t rows, int64_t cols)
{
    /* 0 for another format, a negative size, cols not a multiple of 256, or a
     * byte count that does not fit 64 bits. */
    uint64_t per;
    switch (format) {
    case MEMRA_FORMAT_Q4_K: per = 144u; break;
    case MEMRA_FORMAT_Q5_K: per = 176u; break;
    case MEMRA_FORMAT_Q6_K: per = 210u; break;
    default: return 0;
    }
    if (rows < 0 || cols < 0 || cols % 256 != 0) return 0;
    const uint64_t sb = (uint64_t)cols / 256u;
    if (rows != 0 && sb > UINT64_MAX / per / (uint64_t)rows) return 0;
    return sb * (uint64_t)rows * per;
}

/* The W16 layout of a [rows x cols] Q8_0, Q4_0, Q4_K, Q5_K or Q6_K weight, the operand of gemm_w16: the codes and
 * scales of the GGUF blocks moved (never widened) into the order in which the sm_90a tile's threads turn them
 * into f16 wgmma fragments in registers (modules/kernels/w16). Rows are padded to T = ceil(rows / 128) tiles of
 * 128 (padding rows: codes and scales 0); G = cols / 32 groups of 32 values (cols a multiple of 32, of 256 for
 * the K-quants), SB = cols / 256. Sections, each 256-byte aligned from the base:
 *  C  T G CB bytes: group (t, g) at (t G + g) CB, CB = 4096 (Q8_0), 2048 (Q4_0, Q4_K), 2560 (Q5_K), 3072 (Q6_K): the codes
 *     of the tile's 128 rows in the order of the threads that read them (formats.h, memra_w16_repack).
 *  S  T G 256 bytes: group (t, g)'s scales of the tile's 128 rows: Q8_0 / Q4_0 the f16 d of each row; Q4_K /
 *     Q5_K the sub-block's 6-bit scale | 6-bit min << 8 (u16); Q6_K the two 16-value sub-blocks' int8 scales,
 *     [half][row].
 *  D  (Q4_K, Q5_K, Q6_K) T SB 128 u32: (t, sb)'s rows' f16 d | f16 dmin << 16 (Q6_K: dmin 0).
 * Bytes per 256 values: Q8_0 272 (the GGUF's), Q4_0 144 (the GGUF's), Q4_K 148 (GGUF 144), Q5_K 180 (GGUF 176),
 * Q6_K 212 (GGUF 210),
 * plus the row padding. memra_w16_off gives a section's offset. */
static inline uint64_t memra_w16_cb(memra_format format)
{
    switch (format) {
    case MEMRA_FORMAT_Q8_0: return 4096u;
    case MEMRA_FORMAT_Q4_0:
    case MEMRA_FORMAT_Q4_K: return 2048u;
    case MEMRA_FORMAT_Q5_K: return 2560u;
    case MEMRA_FORMAT_Q6_K: return 3072u;
    default: return 0;
    }
}
/* The byte offset of section 'C', 'S' or 'D', or the total size ('\0'); 0 for another format, a shape the
 * layout does not take, or a size that does not fit 64 bits. */
static inline uint64_t memra_w16_off(memra_format format, int64_t rows, int64_t cols, char section)
{
    const uint64_t cb = memra_w16_cb(format);
    const int kq = format == MEMRA_FORMAT_Q4_K || format == MEMRA_FORMAT_Q5_K || format == MEMRA_FORMAT_Q6_K;
    if (cb == 0 || rows < 0 || cols < 0 || cols % (kq ? 256 : 32) != 0) return 0;
    const uint64_t t = ((uint64_t)rows + 127u) / 128u, g = (uint64_t)cols / 32u, sb = (uint64_t)cols / 256u;
    if (t != 0 && g > (UINT64_MAX / 8u) / (cb + 256u) / t) return 0;
    const uint64_t c = t * g * cb, s = c + t * g * 256u, d = s + (kq ? t * sb * 512u : 0u);
    return section == 'C' ? 0u : section == 'S' ? c : section == 'D' ? s : d;
}
static inline uint64_t memra_w16_bytes(memra_format format, int64_t rows, int64_t cols)
{
    return memra_w16_off(format, rows, cols, '\0');
}

#ifdef __cplusplus
}
#endif
#endif
