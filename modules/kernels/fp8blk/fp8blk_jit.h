/* The block-128 FP8 GEMM family (fp8blk_gemm.cu) as JIT sources,
 * and its tile.
 *
 *   size_t n;
 *   const memra_jit_source *s = memra__fp8blk_jit_sources(caps, &n);  // a module's jit_sources()
 *   const memra_jit_source *e = memra__fp8blk_jit_source(MEMRA__FP8BLK_E4M3);
 *   host->jit->module_get(caps, e->name, e->source, e->options, e->n_options, &cumodule);
 *
 * The source is the text of fp8blk_gemm.cu with fp8blk.h and e4m3.cuh inlined, embedded at
 * build time (modules/gpu/embed_source.cmake), so NVRTC needs no include
 * folder. One source per MMA variant, told apart by options:
 *   fp8blk_gemm.e4m3      -DFP8BLK_MMA=0  sm_90a  mma.sync e4m3
 *   fp8blk_gemm.f8f6f4    -DFP8BLK_MMA=1  sm_120a kind::f8f6f4
 *   fp8blk_gemm.mxf8f6f4  -DFP8BLK_MMA=2  sm_120a kind::mxf8f6f4.block_scale, unit scales
 * each with -std=c++17 and the tile macros (-DFP8BLK_BM= -DFP8BLK_BN=
 * -DFP8BLK_WARPS_M= -DFP8BLK_WARPS_N=). No --use_fast_math: the quantiser's
 * divisions must stay IEEE (they are spelled __fdiv_rn anyway).
 *
 * Environment (read once per process):
 *   MEMRA_FP8BLK_TILE=BMxBN[xWARPS_MxWARPS_N]  the tile the JIT compiles
 *       (default 128x128x2x4, the embedded cubins' tile). BN must divide 128,
 *       BM be a multiple of 16 * WARPS_M, BN of 16 * WARPS_N, at most 1024
 *       threads. A malformed value is ignored with a warning at init.
 *   MEMRA_FP8BLK_JIT=0  skip the JIT: load the embedded cubins only.
 * Thread-safe. */
#ifndef MEMRA_MODULES_KERNELS_FP8BLK_JIT_H
#define MEMRA_MODULES_KERNELS_FP8BLK_JIT_H

#include <stddef.h>

#include "fp8blk.h"
#include "memra/module.h"

typedef enum memra__fp8blk_variant {
    MEMRA__FP8BLK_E4M3 = 0,   /* sm_90a mma.sync e4m3 */
    MEMRA__FP8BLK_F8F6F4 = 1, /* sm_120a kind::f8f6f4 */
    MEMRA__FP8BLK_MX = 2,     /* sm_120a kind::mxf8f6f4.block_scale, unit scales */
} memra__fp8blk_variant;

typedef struct memra__fp8blk_tile {
    int bm, bn, warps_m, warps_n;
} memra__fp8blk_tile;

/* The tile of fp8blk_gemm.cu's defaults (and of the embedded cubins): fp8blk.h. */
#define MEMRA__FP8BLK_TILE_DEFAULT {FP8BLK_BM, FP8BLK_BN, FP8BLK_WARPS_M, FP8BLK_WARPS_N}

/* Parse "BMxBN" or "BMxBNxWARPS_MxWARPS_N" (warps default 2x4, halved while
 * they do not fit). 0 and *out set when valid; -1 and a static reason otherwise. */
int memra__fp8blk_tile_parse(const char *s, memra__fp8blk_tile *out, const char **why);
/* The tile MEMRA_FP8BLK_TILE asks for, or the default; *why (may be NULL) is
 * set to the reason when the variable was set but refused. */
memra__fp8blk_tile memra__fp8blk_tile_env(const char **why);
int memra__fp8blk_tile_is_default(const memra__fp8blk_tile *t);
unsigned memra__fp8blk_tile_threads(const memra__fp8blk_tile *t);
/* Dynamic shared memory of the GEMM kernel for the tile (FP8BLK_SMEM_BYTES). */
size_t memra__fp8blk_tile_smem(const memra__fp8blk_tile *t);

/* The source of one variant with the MEMRA_FP8BLK_TILE tile; static storage. */
const memra_jit_source *memra__fp8blk_jit_source(memra__fp8blk_variant v);
/* The variants `caps` can run: e4m3 on sm_90a; f8f6f4 and mxf8f6f4 on
 * sm_120a / sm_121a; none elsewhere (NULL, *out_count 0). */
const memra_jit_source *memra__fp8blk_jit_sources(const memra_device_caps *caps, size_t *out_count);
/* 0 when MEMRA_FP8BLK_JIT=0. */
int memra__fp8blk_jit_enabled(void);
/* The knobs MEMRA_FP8BLK_TILE and MEMRA_FP8BLK_JIT (host->knob at init; NULL
 * when unset). Process-wide: the first call before the sources are built wins. */
void memra__fp8blk_jit_configure(const char *tile, const char *jit);
/* The MEMRA_FP8BLK_TILE text given ("" when none), for logs. */
const char *memra__fp8blk_tile_knob(void);

const char *memra__fp8blk_variant_name(memra__fp8blk_variant v);

/* The fp8blk module's tile variants of gemm_fp8_blk (e4m3, sm_90a):
 * memra_variant i stands for MEMRA_FP8BLK_TILE=<tile i>; each is compiled by
 * the JIT (there is no embedded cubin of another tile). */
#define MEMRA__FP8BLK_TILE_VARIANTS 3
extern const memra_variant memra__fp8blk_tile_variants[MEMRA__FP8BLK_TILE_VARIANTS];
const memra__fp8blk_tile *memra__fp8blk_tile_variant(int i);        /* NULL out of range */
const memra_jit_source *memra__fp8blk_tile_variant_source(int i);   /* static; NULL out of range */
/* The e4m3 source with the MEMRA_FP8BLK_TILE tile, then each variant's (for `memra jit warm`). */
const memra_jit_source *memra__fp8blk_jit_sources_e4m3_tiles(size_t *out_count);

#endif
