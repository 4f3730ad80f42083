/* Shared C side of the MMQ-family modules (mmq, fp8blk, sm120): the per-device
 * context that loads this family's own embedded kernel images (mmq.cu,
 * fp8blk_gemm.cu; see modules/mmq.cmake) and the ops built on them.
 *
 *   memra__mmq *q;
 *   memra__mmq_create(host, caps, "mmq", MEMRA__MMQ_FAM_MMQ, &q);   // at module init
 *   ... call->module_ctx = q; memra__mmq_gemm_q8_0(call, args);
 *   memra__mmq_destroy(q);                                           // at fini
 *
 * The images are tabled as memra__mmq_images (the generated table of
 * modules/cuda/embed_cubins.cmake, renamed at compile time so it can live next
 * to the shared GPU code's own memra__gpu_images in one module). Every op
 * follows the module ABI's rules: stream-ordered, no host synchronisation, a
 * status on every path, DECLINED with a static reason for cases it does not
 * take. Thread-safe: the context is read-only after create but for the atomic
 * pdl_refused. */
#ifndef MEMRA_MODULES_MMQ_GPU_H
#define MEMRA_MODULES_MMQ_GPU_H

#include <stdatomic.h>

#include "../cuda/cu.h"
#include "../cuda/images.h"
#include "fp8blk_jit.h"
#include "memra/module.h"

extern const memra__gpu_image memra__mmq_images[];
extern const size_t memra__mmq_image_count;

/* Image families (one cubin per family and target). */
#define MEMRA__MMQ_FAM_MMQ 1u       /* mmq.cu: quant_q8_1, gemm_q8_0, accprobe */
#define MEMRA__MMQ_FAM_FP8BLK 2u    /* fp8blk_gemm.cu: e4m3 mma (sm_90a), kind::f8f6f4 (sm_120a) */
#define MEMRA__MMQ_FAM_FP8BLK_MX 4u /* fp8blk_gemm.cu: kind::mxf8f6f4 unit scales (sm_120a) */

/* Dynamic shared memory of the big kernels: MMQ_SMEM_BYTES in mmq.cu and
 * FP8BLK_SMEM_BYTES in fp8blk_gemm.cu at its default tile (kept equal by hand;
 * other tiles: memra__fp8blk_tile_smem). */
#define MEMRA__MMQ_SMEM_BYTES (2 * (128 * 144 + 128 * 140) + 128 * 144)
#define MEMRA__FP8BLK_SMEM_BYTES (2 * (256 * 144 + 128 * 4))

/* Scratch slots (the core uses 60, 61; modules/cuda 32..36). */
/* Named scratch (host->scratch_get: per call and stream). */
#define MEMRA__MMQ_SLOT_XQ "fp8blk.xq"     /* gemm_fp8_blk: e4m3 activation */
#define MEMRA__MMQ_SLOT_XS "fp8blk.xs"     /* gemm_fp8_blk: activation scales */
#define MEMRA__MMQ_SLOT_PART "q8_0r.splitk" /* gemm_q8_0r: split-k partial sums */
/* The gemm_q8_0r tiles: mmq.cu's entry points, tokens x weight rows per CTA,
 * dynamic shared memory (R3_SMEM_BYTES(MT, NT) there, checked by a
 * static_assert). Index order is the loader's and the plan's. */
#define MEMRA__MMQ_R3_TILES 4
typedef struct memra__mmq_r3_tile {
    const char *kernel;
    int bm, bn;
    unsigned smem;
} memra__mmq_r3_tile;
extern const memra__mmq_r3_tile memra__mmq_r3_tiles[MEMRA__MMQ_R3_TILES];

typedef struct memra__mmq {
    const memra_host_services *host;
    const memra_device_caps *caps;
    const char *name;
    char target[16]; /* "sm_90a" */
    memra__cu cu;
    CUresult (*cuFuncSetAttribute)(CUfunction f, int attrib, int value);
    memra__cu_launch_ex_fn cuLaunchKernelEx; /* NULL: no programmatic dependent launch (plain launches) */
    atomic_int pdl_refused; /* set when the driver refused a dependent launch that a plain one then served */
    CUmodule mods[3];
    int owns_modules;
    unsigned families;
    CUfunction quant_q8_1, gemm_q8_0, probe[3];
    CUfunction repack_q8_0, splitk_sum;
    CUfunction gemm_q8_0r[MEMRA__MMQ_R3_TILES]; /* memra__mmq_r3_tiles[i]'s kernel, NULL where its shared memory does not fit */
    CUfunction fp8blk_quant, fp8blk_gemm;
    memra__fp8blk_variant fp8blk_variant;
    memra__fp8blk_tile fp8blk_tile; /* the tile the loaded gemm kernel was compiled with */
    unsigned fp8blk_threads;
    unsigned fp8blk_smem;
    const char *fp8blk_path; /* "jit" or "embedded" */
    const char *fp8blk_decline; /* non-NULL: gemm_fp8_blk declines with this */
    unsigned grid_cap;
    /* knobs read at create (host->knob): MEMRA_MMQ_PDL=0, MEMRA_MMQ_KERNEL=v1, MEMRA_MMQ_BM/BN/SPLIT (0: chosen) */
    int knob_pdl_off, knob_v1, knob_bm, knob_bn, knob_split;
} memra__mmq;

/* Load `families` for the device's target (sm_<cc>a) and look up their kernels.
 * The block-128 FP8 kernels come from the JIT (host->jit->module_get with the
 * variant's source from fp8blk_jit.h, compiled for caps->jit_target) unless
 * MEMRA_FP8BLK_JIT=0 or there is no JIT service; when the JIT cannot serve
 * them (no NVRTC, a failed compile) they come from the embedded cubin, with
 * the reason logged. MODULE_ERROR (after host->set_error) when an image is
 * missing for this device; NO_DRIVER / DRIVER_ERROR from the driver. With both
 * FP8BLK and FP8BLK_MX, `mx` picks the variant gemm_fp8_blk launches (only
 * that one is loaded). */
memra_status memra__mmq_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               unsigned families, int mx, memra__mmq **out);
void memra__mmq_destroy(memra__mmq *q); /* NULL is fine */

/* ---- ops (memra_op_table signatures; call->module_ctx is a memra__mmq) ---- */
memra_status memra__mmq_quant_q8_1(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst);
memra_status memra__mmq_gemm_q8_0(memra_call *call, const memra_gemm_args *args);
memra_status memra__mmq_repack_q8_0(memra_call *call, memra_dptr src, int64_t rows, int64_t cols, memra_dptr dst);
memra_status memra__mmq_gemm_q8_0r(memra_call *call, const memra_gemm_args *args);
memra_status memra__mmq_accprobe(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *args);
memra_status memra__mmq_gemm_fp8_blk(memra_call *call, const memra_gemm_args *args);

#endif
