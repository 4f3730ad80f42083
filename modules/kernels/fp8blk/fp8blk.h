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

/* The sm_90a warpgroup kernel (memra_k_fp8blk_wgmma, fp8blk_gemm.cu): a fixed
 * 128 x 128 tile, two warpgroups of 64 tokens each (256 threads), FP8BLK_WG_STAGES
 * stages of [128 x 128] e4m3 for each operand in the 128-byte swizzled layout
 * wgmma reads (rows of 128 bytes, 16-byte chunk c of row r at c ^ (r % 8)), then
 * the 128 activation scales; every stage 1024-byte aligned, plus 1024 bytes to
 * align the first. Hopper only (227 KB of shared memory per block); the
 * mma.sync tiles above are the ones sm_120 runs. */
#define FP8BLK_WG_BM 128
#define FP8BLK_WG_BN 128
#define FP8BLK_WG_THREADS 256
#ifndef FP8BLK_WG_STAGES
#define FP8BLK_WG_STAGES 6
#endif
#define FP8BLK_WG_STAGE_BYTES 33792 /* 16384 + 16384 + 512, rounded up to 1024 */
/* + 1024 to align the first stage, + 128 for the mbarriers (full and empty per stage) */
#define FP8BLK_WG_SMEM_BYTES (FP8BLK_WG_STAGES * FP8BLK_WG_STAGE_BYTES + 1024 + 128)
/* The mbarrier kernels for nh halves of 128 weight rows (1: 128 x 128, 2: the wide
 * 128 x 256 tile): a stage holds A, nh x 16384 of B and the scales, 1024-aligned;
 * 6 stages of the narrow tile, 4 of the wide one (about 197 KB). */
#define FP8BLK_WG_STAGE_BYTES_OF(nh) ((16384 * (1 + (nh)) + 512 + 1023) / 1024 * 1024)
#define FP8BLK_WG_STAGES_OF(nh) ((nh) == 1 ? FP8BLK_WG_STAGES : 4)
/* memra_k_fp8blk_experts_tma_tall (MEMRA_FP8BLK_XE_TALL=1): 256 x rows and 128 weight rows a
 * stage, then 256 activation scales and the weight grid's scale, 1024-aligned; 4 stages (about
 * 201 KB) */
#define FP8BLK_WG_TALL_STAGE_BYTES ((3 * 16384 + 1024 + 16 + 1023) / 1024 * 1024)
#define FP8BLK_WG_TALL_STAGES 4
#define FP8BLK_WG_TALL_SMEM_BYTES (FP8BLK_WG_TALL_STAGES * FP8BLK_WG_TALL_STAGE_BYTES + 1024 + 128)
/* memra_k_fp8blk_wgmma_tma: a producer warpgroup and two consumer warpgroups */
#define FP8BLK_TMA_THREADS 384
#define FP8BLK_WG_SMEM_BYTES_OF(nh) (FP8BLK_WG_STAGES_OF(nh) * FP8BLK_WG_STAGE_BYTES_OF(nh) + 1024 + 128)

/* gemm_experts (memra_k_fp8blk_experts_route): at most this many experts (the
 * routing kernel's counts in shared memory) */
#define FP8BLK_XE_MAX 4096
/* gemm_experts' remainder tile (memra_k_fp8blk_experts_wgmma64): 64 rows x 128, one
 * warpgroup, a stage of A [64 x 128] at 0, B [128 x 128] at 8192, then 64 scales,
 * 1024-aligned; 4 stages (about 101 KB: two CTAs to an SM) */
#define FP8BLK_XE64_THREADS 128
#define FP8BLK_XE64_STAGES 4
#define FP8BLK_XE64_STAGE_BYTES ((8192 + 16384 + 256 + 1023) / 1024 * 1024)
#define FP8BLK_XE64_SMEM_BYTES (FP8BLK_XE64_STAGES * FP8BLK_XE64_STAGE_BYTES + 1024 + 128)

#endif
