/* The block-128 FP8 family's constants, shared by fp8blk_gemm.cu (nvcc and
 * NVRTC, which gets this text inlined) and its C launchers (fp8blk_jit.c,
 * fp8blk_ops.c): the default tile (what the embedded cubins are built with;
 * the JIT may be given another through -DFP8BLK_BM= ...), the shared row, and
 * the shared memory of a tile. Leaf header: macros only, no includes, valid C
 * and CUDA C++. */
#ifndef MEMRA_MODULES_KERNELS_FP8BLK_H
#define MEMRA_MODULES_KERNELS_FP8BLK_H

#ifndef FP8BLK_BM
#define FP8BLK_BM 128
#endif
#ifndef FP8BLK_BN
#define FP8BLK_BN 128
#endif
#ifndef FP8BLK_WARPS_M
#define FP8BLK_WARPS_M 2
#endif
#ifndef FP8BLK_WARPS_N
#define FP8BLK_WARPS_N 4
#endif
#define FP8BLK_ROW 144
/* One pipeline stage of a BM x BN tile: the e4m3 rows of both operands in
 * FP8BLK_ROW-byte shared rows, then BM f32 activation scales; two stages. */
#define FP8BLK_STAGE_BYTES_OF(bm, bn) (((bm) + (bn)) * FP8BLK_ROW + (bm) * 4)
#define FP8BLK_SMEM_BYTES_OF(bm, bn) (2 * FP8BLK_STAGE_BYTES_OF(bm, bn))

#endif
