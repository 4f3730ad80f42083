/* memra's own block-128 FP8 GEMM: y = x . W^T with an e4m3 weight and its
 * [ceil(n/128) x ceil(k/128)] f32 scale grid, activations quantised to e4m3 per
 * row per 128 columns.
 *
 * One source, the MMA chosen by FP8BLK_MMA at compile time:
 *   0  mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32               (sm_89 / sm_90a)
 *   1  mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e4m3.e4m3.f32  (sm_120a)
 *   2  mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col
 *      .f32.e4m3.e4m3.f32.ue8m0 with unit scales (ue8m0 127 = 2^0)       (sm_120a)
 * All three share the m16n8k32 8-bit fragment layout, so everything but the
 * one asm statement is common. A kind:: variant refuses to build for anything
 * but sm_120a / sm_121a.
 *
 * Kernels:
 *   memra_k_fp8blk_quant  one warp per (row, 128-column block): s = amax / 448
 *                         (1 when amax == 0; IEEE division), q = e4m3(x / s) (RNE,
 *                         saturating; e4m3.cuh), bit-identical to the host. s is
 *                         stored at s[blk * m + row] (block-major: a GEMM step reads
 *                         the scales of its 128 rows as one run).
 *   memra_k_fp8blk_quant_given  the same at given scales, one pass, no reduction
 *                         (memra_row128_quant_given): the producer's maxima
 *                         amax[blk * m + row] (s = amax / 448, 1 unless amax > 0)
 *                         when amax is not NULL, else s_static for every block.
 *   memra_k_fp8blk_gemm   y[row_off + i, j] = alpha * sum_b (s[i,b] * grid[j/128][b]) * B[i,j,b],
 *                         B the 128-deep block product accumulated by the tensor
 *                         cores in f32 (four chained k32 MMAs), folded into the
 *                         running f32 result once per block (never per 32).
 *   memra_k_fp8blk_wgmma*  the sm_90a warpgroup kernels (below).
 *   memra_k_fp8blk_experts_route, memra_k_fp8blk_quant_sorted(_given),
 *   memra_k_fp8blk_experts_wgmma, memra_k_fp8blk_experts_wgmma64, memra_k_fp8blk_experts_wgmma_t,
 *   memra_k_fp8blk_experts_amax, _expand, memra_k_fp8blk_quant_sorted_amax, memra_k_fp8blk_experts_wgmma_pt
 *                         gemm_experts, lane gemm_fp8_blk (MoE prefill): the
 *                         routing, the activation in expert order, the grouped
 *                         warpgroup tiles of 128 and 64 rows (see "gemm_experts"
 *                         below).
 *
 * The tile (macros, so a tuning run can compile others through the JIT; the
 * defaults are what the embedded cubins use): FP8BLK_BM tokens x FP8BLK_BN
 * weight rows per CTA (128 x 128), FP8BLK_WARPS_M x FP8BLK_WARPS_N warps (2 x 4,
 * 256 threads), a warp (BM / WARPS_M) x (BN / WARPS_N) (64 x 32). BN divides
 * 128, so a CTA's weight rows lie in one 128-row scale block; a k step is one
 * 128-column scale block, so one grid value serves the whole CTA per step. Operands go through a two-stage cp.async
 * pipeline into 144-byte shared rows (128 data + 16 pad: the 36-word stride
 * keeps ldmatrix phases conflict-free); past-the-edge rows and columns are
 * zero-filled.
 *
 * Preconditions (checked by the C launchers): k a multiple of 16 (whole 16-byte
 * chunks), x, w and q 16-byte aligned, blockDim FP8BLK_THREADS (quant: 256, any
 * grid), dynamic shared memory FP8BLK_SMEM_BYTES.
 *
 * The file is also compiled at run time by NVRTC (fp8blk_jit.c): the build
 * embeds its text with its quoted includes inlined (modules/gpu/embed_source.cmake),
 * so it may include nothing but "fp8blk.h", the "../common/" headers (e4m3.cuh,
 * route.cuh, tile.cuh: self-contained) and, outside NVRTC, <stdint.h>.
 */
#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;   /* NVRTC has no <stdint.h> without include folders */
typedef unsigned short uint16_t;
#else
#include <stdint.h>
#endif

#include "../common/e4m3.cuh"
#include "../common/route.cuh"
#include "../common/tile.cuh"

#ifndef FP8BLK_MMA
#define FP8BLK_MMA 0
#endif

#if FP8BLK_MMA >= 1 && defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM120_ALL) && \
    !defined(__CUDA_ARCH_FEAT_SM121_ALL)
#error "fp8blk_gemm.cu: the kind::f8f6f4 / kind::mxf8f6f4 variants need sm_120a or sm_121a"
#endif

#include "fp8blk.h"

#define FP8BLK_THREADS (32 * FP8BLK_WARPS_M * FP8BLK_WARPS_N)
#define FP8BLK_WTM (FP8BLK_BM / FP8BLK_WARPS_M) /* a warp's tokens */
#define FP8BLK_WTN (FP8BLK_BN / FP8BLK_WARPS_N) /* a warp's weight rows */
#define FP8BLK_MT (FP8BLK_WTM / 16)             /* m16 tiles per warp */
#define FP8BLK_NT (FP8BLK_WTN / 8)              /* n8 tiles per warp (even: ldmatrix.x4 loads two) */
static_assert(FP8BLK_WARPS_M >= 1 && FP8BLK_WARPS_N >= 1 && FP8BLK_THREADS <= 1024, "FP8BLK_WARPS_M/N");
static_assert(FP8BLK_BM >= 16 && FP8BLK_BM % (16 * FP8BLK_WARPS_M) == 0, "FP8BLK_BM: a multiple of 16 * WARPS_M");
static_assert(FP8BLK_BN >= 16 && FP8BLK_BN % (16 * FP8BLK_WARPS_N) == 0, "FP8BLK_BN: a multiple of 16 * WARPS_N");
static_assert(128 % FP8BLK_BN == 0, "FP8BLK_BN must divide 128 (one scale block of weight rows per CTA)");
#define FP8BLK_STAGE_BYTES FP8BLK_STAGE_BYTES_OF(FP8BLK_BM, FP8BLK_BN)
#define FP8BLK_SMEM_BYTES (2 * FP8BLK_STAGE_BYTES)

/* cp.async, ldmatrix and the B fragments: common/tile.cuh (shared with mmq) */
__device__ __forceinline__ unsigned fb_smem(const void *p) { return memra_smem_u32(p); }
__device__ __forceinline__ void fb_cp16(void *dst, const void *src, int src_bytes)
{
    memra_cp16(memra_smem_u32(dst), src, src_bytes);
}
__device__ __forceinline__ void fb_cp4(void *dst, const void *src, int src_bytes)
{
    memra_cp4(memra_smem_u32(dst), src, src_bytes);
}
__device__ __forceinline__ void fb_ldmatrix_x4(uint32_t r[4], const void *p) { memra_ldmatrix_x4(r, memra_smem_u32(p)); }

/* d += a . b over 32 e4m3 values, f32 accumulation. */
__device__ __forceinline__ void fb_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#if FP8BLK_MMA == 0
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#elif FP8BLK_MMA == 1
    asm("mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    const uint32_t unit = 0x7F7F7F7Fu; /* ue8m0 127 = 2^0 in every byte */
    const uint16_t sel = 0;
    asm("mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, {%10}, {%11,%11}, {%10}, {%11,%11};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(unit), "h"(sel));
#endif
}

/* ---- the activation quantiser ----------------------------------------------------- */

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_quant(const float *__restrict__ x, int m, int k, unsigned char *__restrict__ q, float *__restrict__ s)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    memra_row128_quant(x, m, m, k, q, s, m, warp * MEMRA_ROW128_U);
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_quant_given(const float *__restrict__ x, int m, int k, unsigned char *__restrict__ q,
                           float *__restrict__ s, const float *__restrict__ amax, float s_static)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    memra_row128_quant_given(x, m, m, k, q, s, m, warp * MEMRA_ROW128_U, amax, m, s_static);
}

/* ---- gemm_experts: the routing and the activation in expert order (issue 30) ---------
 *   memra_k_fp8blk_experts_route  one block of 1024 threads, E <= FP8BLK_XE_MAX: the
 *                         rows of each expert counted from ids (ids outside [0, E)
 *                         skipped) in shared memory, their exclusive scan
 *                         offsets[0 .. E], the permutation perm[offsets[e] ..] = the
 *                         rows of expert e (in no fixed order: a row's output
 *                         depends on that row and its expert alone) and the tile
 *                         table of 128-row tiles, tile t = (tiles[2t] = expert,
 *                         tiles[2t + 1] = its first sorted row), an expert of c
 *                         rows taking ceil(c / 128), experts in order; the count in
 *                         *ntiles. With tiles2 (the 64-row kernel loaded) an expert
 *                         whose last 1 .. 64 rows would half-fill a 128-row tile
 *                         gets floor(c / 128) tiles there and one of 64 rows in
 *                         tiles2 (*ntiles2). Nothing is read on the host.
 *   memra_k_fp8blk_quant_sorted / _sorted_given (/ _sorted8: 8 items a warp,
 *                         MEMRA_FP8BLK_XE_QU=8)  memra_k_fp8blk_quant /
 *                         _quant_given (a static scale only: a producer's maxima
 *                         are the batch's rows', module.h) with the rows in expert
 *                         order: sorted row s of q (and its scales at s[b * m + s])
 *                         is x row perm[s], for s < offsets[E], bit for bit the
 *                         dense quantiser's codes of that row
 *                         (memra_row128_quant_rows); rows offsets[E] .. m - 1 (as
 *                         many as the skipped ids) get zero codes and scale 1: the
 *                         tensor-map tile's copies read a whole 128-row tile, its
 *                         rows past the last expert's end included (run v2's
 *                         initcheck: 414 reads of them). Grid sized for all m rows. */
extern "C" __global__ void __launch_bounds__(1024)
memra_k_fp8blk_experts_route(const int *__restrict__ ids, int m, int E, int *__restrict__ offsets,
                             int *__restrict__ perm, int *__restrict__ tiles, int *__restrict__ ntiles,
                             int *__restrict__ tiles2, int *__restrict__ ntiles2)
{
    __shared__ int cnt[FP8BLK_XE_MAX];
    __shared__ int fill[FP8BLK_XE_MAX];
    /* tiles2 != NULL: a remainder of 1 .. 64 rows past an expert's 128-row tiles takes a 64-row tile
     * of the second table instead (a tile then wastes at most 63 rows, not 127); common/route.cuh */
    memra_route_experts(ids, m, E, FP8BLK_WG_BM, tiles2 != nullptr ? 64 : 0, 64, offsets, perm, tiles, ntiles, tiles2,
                        ntiles2, cnt, fill);
}

/* MEMRA_FP8BLK_XE_TALL=1: the routing with a table of 256-row tiles (experts_tma_tall's) */
extern "C" __global__ void __launch_bounds__(1024)
memra_k_fp8blk_experts_route_tall(const int *__restrict__ ids, int m, int E, int *__restrict__ offsets,
                                  int *__restrict__ perm, int *__restrict__ tiles, int *__restrict__ ntiles,
                                  int *__restrict__ tiles2, int *__restrict__ ntiles2)
{
    __shared__ int cnt[FP8BLK_XE_MAX];
    __shared__ int fill[FP8BLK_XE_MAX];
    (void)tiles2;
    (void)ntiles2;
    memra_route_experts(ids, m, E, 256, 0, 0, offsets, perm, tiles, ntiles, nullptr, nullptr, cnt, fill);
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_quant_sorted(const float *__restrict__ x, const int *__restrict__ perm, const int *__restrict__ offsets,
                            int E, int m, int k, unsigned char *__restrict__ q, float *__restrict__ s)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int routed = offsets[E];
    memra_row128_quant_rows(x, perm, routed, m, k, q, s, m, warp * MEMRA_ROW128_U);
}

/* MEMRA_FP8BLK_XE_QU=8 (opt-in): the same quantiser with 8 items a warp, where the 4 of the dense one's
 * leave each warp's dependent read of perm (an L2 round trip before its rows' reads) over half the bytes:
 * the same codes and scales, bit for bit (each item's arithmetic does not depend on the count a warp) */
extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_quant_sorted8(const float *__restrict__ x, const int *__restrict__ perm, const int *__restrict__ offsets,
                             int E, int m, int k, unsigned char *__restrict__ q, float *__restrict__ s)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int routed = offsets[E];
    memra_row128_quant_rows<8>(x, perm, routed, m, k, q, s, m, warp * 8);
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_quant_sorted_given(const float *__restrict__ x, const int *__restrict__ perm,
                                  const int *__restrict__ offsets, int E, int m, int k, unsigned char *__restrict__ q,
                                  float *__restrict__ s, float s_static)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int routed = offsets[E];
    memra_row128_quant_given_rows(x, perm, routed, m, k, q, s, m, warp * MEMRA_ROW128_U, nullptr, 0, s_static);
}

/*   memra_k_fp8blk_experts_amax / _expand / memra_k_fp8blk_quant_sorted_amax  gemm_experts on
 *                         lane gemm_fp8 (per-tensor e4m3 experts, MEMRA_FP8BLK_XE_PT=1): each
 *                         expert's per-batch scale is the amax of its own rows (module.h, the
 *                         host's contract). _amax: a warp a routed row s < offsets[E], the max
 *                         |x| of x row perm[s] into am[ids[perm[s]]] by an integer atomicMax
 *                         (a non-negative float's bits order as its value; am zeroed before);
 *                         _expand: ar[s] = am[ids[perm[s]]] for every routed row; then the
 *                         quantiser at given maxima with one value a row (ld_a = 0): sorted row
 *                         s's codes e4m3(x / sc), sc = ar[s] > 0 ? ar[s] / 448 : 1 (IEEE
 *                         division), the host's per-tensor codes of that expert's batch, sc
 *                         stored for every 128-column block of the row. */
extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_experts_amax(const float *__restrict__ x, const int *__restrict__ ids, const int *__restrict__ perm,
                            const int *__restrict__ offsets, int E, int k, unsigned int *__restrict__ am)
{
    const int routed = offsets[E], lane = threadIdx.x & 31;
    for (long long s = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); s < routed;
         s += (long long)gridDim.x * (blockDim.x >> 5)) {
        const int r = perm[s];
        const float *xr = x + (long long)r * k;
        float a = 0.0f;
        for (int c = lane; c < k; c += 32) a = fmaxf(a, fabsf(xr[c]));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
        if (lane == 0) atomicMax(am + ids[r], __float_as_uint(a));
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_experts_expand(const int *__restrict__ ids, const int *__restrict__ perm,
                              const int *__restrict__ offsets, int E, const float *__restrict__ am,
                              float *__restrict__ ar)
{
    const int routed = offsets[E];
    for (long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x; s < routed;
         s += (long long)gridDim.x * blockDim.x)
        ar[s] = am[ids[perm[s]]];
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_quant_sorted_amax(const float *__restrict__ x, const int *__restrict__ perm,
                                 const int *__restrict__ offsets, int E, int m, int k, unsigned char *__restrict__ q,
                                 float *__restrict__ s, const float *__restrict__ ar)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int routed = offsets[E];
    memra_row128_quant_given_rows(x, perm, routed, routed, k, q, s, m, warp * MEMRA_ROW128_U, ar, 0, 0.0f);
}

/* ---- the GEMM ------------------------------------------------------------------------ */

/* Rows r0..r0+nr-1 of an e4m3 matrix [rows x k], columns 128 kt .. +127. */
__device__ __forceinline__ void fb_load(unsigned char *S, const unsigned char *src, int rows, int k, int r0, int kt,
                                        int nr)
{
    for (int idx = threadIdx.x; idx < nr * 8; idx += FP8BLK_THREADS) {
        const int r = idx >> 3, c = idx & 7;
        const long long col = (long long)kt * 128 + c * 16;
        const int ok = r0 + r < rows && col < k;
        fb_cp16(S + r * FP8BLK_ROW + c * 16, ok ? src + (long long)(r0 + r) * k + col : src, ok ? 16 : 0);
    }
}

extern "C" __global__ void __launch_bounds__(FP8BLK_THREADS, 1)
memra_k_fp8blk_gemm(const unsigned char *__restrict__ w, const float *__restrict__ grid,
                    const unsigned char *__restrict__ xq, const float *__restrict__ xs, float *__restrict__ y, int m,
                    int n, int k, long long ldy, float alpha)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp % FP8BLK_WARPS_M, wn = warp / FP8BLK_WARPS_M;
    const int i0 = blockIdx.x * FP8BLK_BM, j0 = blockIdx.y * FP8BLK_BN;
    const int nk = (k + 127) / 128;
    const float *grow = grid + (long long)(j0 / 128) * nk;

    float acc[FP8BLK_MT][FP8BLK_NT][4];
#pragma unroll
    for (int mt = 0; mt < FP8BLK_MT; mt++)
#pragma unroll
        for (int nt = 0; nt < FP8BLK_NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0.0f;

    auto stage_load = [&](int st, int kt) {
        unsigned char *base = smem + st * FP8BLK_STAGE_BYTES;
        fb_load(base, xq, m, k, i0, kt, FP8BLK_BM);
        fb_load(base + FP8BLK_BM * FP8BLK_ROW, w, n, k, j0, kt, FP8BLK_BN);
        float *sx = reinterpret_cast<float *>(base + (FP8BLK_BM + FP8BLK_BN) * FP8BLK_ROW);
        for (int t = threadIdx.x; t < FP8BLK_BM; t += FP8BLK_THREADS) {
            const int i = i0 + t;
            fb_cp4(sx + t, i < m ? xs + (long long)kt * m + i : xs, i < m ? 4 : 0);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };

    stage_load(0, 0);
    for (int kt = 0; kt < nk; kt++) {
        const int st = kt & 1;
        if (kt + 1 < nk)
            stage_load(st ^ 1, kt + 1);
        else
            asm volatile("cp.async.commit_group;\n" ::);
        const float g = grow[kt];
        asm volatile("cp.async.wait_group 1;\n" ::);
        __syncthreads();
        const unsigned char *As = smem + st * FP8BLK_STAGE_BYTES;
        const unsigned char *Bs = As + FP8BLK_BM * FP8BLK_ROW;
        const float *sx = reinterpret_cast<const float *>(Bs + FP8BLK_BN * FP8BLK_ROW);

        float blk[FP8BLK_MT][FP8BLK_NT][4];
#pragma unroll
        for (int mt = 0; mt < FP8BLK_MT; mt++)
#pragma unroll
            for (int nt = 0; nt < FP8BLK_NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) blk[mt][nt][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint32_t a[FP8BLK_MT][4], b[FP8BLK_NT][2];
#pragma unroll
            for (int mt = 0; mt < FP8BLK_MT; mt++)
                fb_ldmatrix_x4(a[mt], As + memra_a_frag_off<FP8BLK_ROW>(wm * FP8BLK_WTM + mt * 16, lane, kk * 32));
            /* B: common/tile.cuh's fragments (mmq's mmq_step loads its own with it) */
            memra_load_b_frags<FP8BLK_NT, FP8BLK_ROW>(
                b, memra_smem_u32(Bs + memra_b_frag_off<FP8BLK_ROW>(wn * FP8BLK_WTN, lane, 0)),
                kk * 32);
#pragma unroll
            for (int mt = 0; mt < FP8BLK_MT; mt++)
#pragma unroll
                for (int nt = 0; nt < FP8BLK_NT; nt++) fb_mma(blk[mt][nt], a[mt], b[nt][0], b[nt][1]);
        }
        /* the fold: once per 128-deep block, with s[i,b] * grid[j/128][b] */
#pragma unroll
        for (int mt = 0; mt < FP8BLK_MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float f = sx[wm * FP8BLK_WTM + mt * 16 + (lane >> 2) + 8 * h] * g;
#pragma unroll
                for (int nt = 0; nt < FP8BLK_NT; nt++)
#pragma unroll
                    for (int c = 0; c < 2; c++)
                        acc[mt][nt][2 * h + c] = fmaf(f, blk[mt][nt][2 * h + c], acc[mt][nt][2 * h + c]);
            }
        __syncthreads();
    }
#pragma unroll
    for (int mt = 0; mt < FP8BLK_MT; mt++)
#pragma unroll
        for (int nt = 0; nt < FP8BLK_NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = i0 + wm * FP8BLK_WTM + mt * 16 + (lane >> 2) + 8 * (e >> 1);
                const int j = j0 + wn * FP8BLK_WTN + nt * 8 + (lane & 3) * 2 + (e & 1);
                if (i < m && j < n) y[(long long)i * ldy + j] = alpha * acc[mt][nt][e];
            }
}

/* ---- the sm_90a warpgroup GEMM ------------------------------------------------------ */

/* On sm_90 the e4m3 mma.sync above is not a tensor-core FP8 instruction: ptxas
 * turns each m16n8k32 into F2FP unpacks to f16, two HMMA.16816 and f32 adds
 * (SASS of this file for sm_90a), so it runs at the f16 mma.sync rate at best.
 * Hopper's FP8 tensor cores are reached by wgmma alone: this kernel is the
 * fp8blk module's default on cc 9.0; the mma.sync kernel stays the sm_120
 * design (kind::f8f6f4 there is the native FP8 MMA) and a variant on sm_90.
 *
 *   memra_k_fp8blk_wgmma  the same y as memra_k_fp8blk_gemm, from the same
 *                         quantised operands. CTA tile 128 tokens x 128 weight
 *                         rows (one scale block of rows: one grid value per k
 *                         step), two warpgroups of 64 tokens; a k step is one
 *                         128-column scale block: four wgmma m64n128k32 into a
 *                         block accumulator, folded into the running f32 result
 *                         as acc += (s[i,b] * grid[j/128][b]) * B (the same fold
 *                         as above, once per block, blocks in ascending order).
 *                         Two block accumulators alternate, so block b + 1's
 *                         wgmmas run on the tensor cores while block b is
 *                         folded. Operands go through FP8BLK_WG_STAGES stages of
 *                         cp.async into the 128-byte swizzled K-major layout
 *                         (fp8blk.h), FP8BLK_WG_STAGES - 2 blocks ahead: the
 *                         stage refilled at step b was last read by block b - 2,
 *                         whose wgmmas every thread has waited for before the
 *                         barrier of step b.
 * Preconditions: as memra_k_fp8blk_gemm, blockDim 256, dynamic shared memory
 * FP8BLK_WG_SMEM_BYTES, grid (ceil(m / 128), ceil(n / 128)). */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FP8BLK_HAS_WGMMA 1

/* d (+)= A[64 x 32] . B[128 x 32]^T, e4m3 in, f32 out; scale_d 0 overwrites d. */
__device__ __forceinline__ void wg_mma(float d[64], unsigned long long da, unsigned long long db, int scale_d)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

/* Orders the registers of d after the asm statements before it (a wait). */
__device__ __forceinline__ void wg_fence_regs(float d[64])
{
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* t = A [64 x 128 at a] . B [128 x 128 at bb]^T: four k32 wgmmas (the first overwriting t),
 * committed and waited for, t's registers ordered after the wait */
__device__ __forceinline__ void wg_block(float (&t)[64], unsigned a, unsigned bb)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < 4; kk++) wg_mma(t, memra_wg_desc(a + kk * 32), memra_wg_desc(bb + kk * 32), kk);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    wg_fence_regs(t);
}

/* One stage: A [128 x 128] at st, B [128 nh x 128] at st + 16384, the 128 activation
 * scales after B; every row 128 bytes in the swizzled layout. A's rows i0 .. m - 1
 * exist (the rest zero-filled), the scales of block kb at xs + kb * ms (ms = m for a
 * dense call; the grouped kernel's m is its expert's end, ms all rows). */
template <int NH, int BM = 128>
__device__ __forceinline__ void wg_load_n(unsigned char *st, const unsigned char *xq, const unsigned char *w,
                                          const float *xs, int m, int n, int k, int i0, int j0, int kb, int ms)
{
    constexpr int T = 2 * BM, AB = BM * 128; /* BM = 64: one warpgroup, A [64 x 128], B at 8192 */
    unsigned char *A = st, *B = st + AB;
    float *sx = reinterpret_cast<float *>(st + (AB + 16384 * NH));
    const long long col0 = (long long)kb * 128;
#pragma unroll
    for (int it = 0; it < 4; it++) {
        const int idx = threadIdx.x + it * T;
        const int r = idx >> 3, c = idx & 7;
        const long long col = col0 + c * 16;
        const int oka = i0 + r < m && col < k;
        fb_cp16(A + r * 128 + ((c ^ (r & 7)) << 4), oka ? xq + (long long)(i0 + r) * k + col : xq, oka ? 16 : 0);
    }
#pragma unroll
    for (int it = 0; it < 1024 * NH / T; it++) {
        const int idx = threadIdx.x + it * T;
        const int r = idx >> 3, c = idx & 7;
        const long long col = col0 + c * 16;
        const int okb = j0 + r < n && col < k;
        fb_cp16(B + r * 128 + ((c ^ (r & 7)) << 4), okb ? w + (long long)(j0 + r) * k + col : w, okb ? 16 : 0);
    }
    if (threadIdx.x < BM) {
        const int i = i0 + threadIdx.x;
        fb_cp4(sx + threadIdx.x, i < m ? xs + (long long)kb * ms + i : xs, i < m ? 4 : 0);
    }
}
__device__ __forceinline__ void wg_load(unsigned char *st, const unsigned char *xq, const unsigned char *w,
                                        const float *xs, int m, int n, int k, int i0, int j0, int kb)
{
    wg_load_n<1>(st, xq, w, xs, m, n, k, i0, j0, kb, m);
}

/* One k step: wait for block kb's stage, refill the stage of block kb - 2 with
 * block kb + STAGES - 2, start block kb's wgmmas into cur, then fold block
 * kb - 1 (prev, factors fp), whose wgmmas were waited for before block kb's
 * were issued, while those run; fc gets block kb's factors. */
__device__ __forceinline__ void wg_step(unsigned char *stages, unsigned sbase, const unsigned char *xq,
                                        const unsigned char *w, const float *xs, const float *grow, int m, int n,
                                        int k, int i0, int j0, int nk, int kb, int r0, float cur[64], float prev[64],
                                        float acc[64], float fc[2], const float fp[2])
{
    constexpr int L = FP8BLK_WG_STAGES - 2;
    asm volatile("cp.async.wait_group %0;\n" ::"n"(L - 1));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (kb + L < nk)
        wg_load(stages + ((kb + L) % FP8BLK_WG_STAGES) * FP8BLK_WG_STAGE_BYTES, xq, w, xs, m, n, k, i0, j0, kb + L);
    asm volatile("cp.async.commit_group;\n" ::);
    const int st = kb % FP8BLK_WG_STAGES;
    const float *sx = reinterpret_cast<const float *>(stages + st * FP8BLK_WG_STAGE_BYTES + 32768);
    const float g = grow[kb];
    fc[0] = sx[r0] * g;
    fc[1] = sx[r0 + 8] * g;
    const unsigned a = sbase + st * FP8BLK_WG_STAGE_BYTES + (threadIdx.x >> 7) * 64 * 128;
    const unsigned b = sbase + st * FP8BLK_WG_STAGE_BYTES + 16384;
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); /* block kb - 1 is in prev */
    wg_fence_regs(prev);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < 4; kk++) wg_mma(cur, memra_wg_desc(a + kk * 32), memra_wg_desc(b + kk * 32), kk);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    if (kb > 0) {
#pragma unroll
        for (int i = 0; i < 64; i++) acc[i] = fmaf(fp[(i >> 1) & 1], prev[i], acc[i]);
    }
}

extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_wgmma(const unsigned char *__restrict__ w, const float *__restrict__ grid,
                     const unsigned char *__restrict__ xq, const float *__restrict__ xs, float *__restrict__ y, int m,
                     int n, int k, long long ldy, float alpha)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned raw = fb_smem(smem), sbase = (raw + 1023u) & ~1023u;
    unsigned char *stages = smem + (sbase - raw);
    const int lane = threadIdx.x & 31;
    const int r0 = (threadIdx.x >> 7) * 64 + ((threadIdx.x >> 5) & 3) * 16 + (lane >> 2); /* rows r0, r0 + 8 */
    const int i0 = blockIdx.x * FP8BLK_WG_BM, j0 = blockIdx.y * FP8BLK_WG_BN;
    const int nk = (k + 127) / 128;
    const float *grow = grid + (long long)(j0 / 128) * nk;

    float acc[64], t0[64], t1[64], f0[2] = {0.0f, 0.0f}, f1[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.0f;
#pragma unroll
    for (int s = 0; s < FP8BLK_WG_STAGES - 2; s++) {
        if (s < nk) wg_load(stages + s * FP8BLK_WG_STAGE_BYTES, xq, w, xs, m, n, k, i0, j0, s);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int kb = 0; kb < nk; kb += 2) {
        wg_step(stages, sbase, xq, w, xs, grow, m, n, k, i0, j0, nk, kb, r0, t0, t1, acc, f0, f1);
        if (kb + 1 < nk) wg_step(stages, sbase, xq, w, xs, grow, m, n, k, i0, j0, nk, kb + 1, r0, t1, t0, acc, f1, f0);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    asm volatile("cp.async.wait_group 0;\n" ::);
    if (nk & 1) {
        wg_fence_regs(t0);
#pragma unroll
        for (int i = 0; i < 64; i++) acc[i] = fmaf(f0[(i >> 1) & 1], t0[i], acc[i]);
    } else {
        wg_fence_regs(t1);
#pragma unroll
        for (int i = 0; i < 64; i++) acc[i] = fmaf(f1[(i >> 1) & 1], t1[i], acc[i]);
    }
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = i0 + r0 + 8 * (e >> 1);
            const int c = j0 + j * 8 + (lane & 3) * 2 + (e & 1);
            if (i < m && c < n) y[(long long)i * ldy + c] = alpha * acc[4 * j + e];
        }
}

/* ---- the same GEMM with the warpgroups decoupled ----------------------------------
 *   memra_k_fp8blk_wgmma_mb  what memra_k_fp8blk_wgmma computes, bit for bit (the same
 *                         four wgmmas per block, the same fold in the same order),
 *                         with one block accumulator and no CTA barrier in the loop:
 *                         each stage has a `full` mbarrier (every thread's cp.async
 *                         copies of the block arrive on it: cp.async.mbarrier.arrive,
 *                         256 arrivals) and an `empty` one (every thread arrives
 *                         once its warp's wgmmas of the block are done). A thread
 *                         refills a stage only after `empty` says both warpgroups
 *                         are done with the block it held, FP8BLK_WG_STAGES - 2 blocks
 *                         ahead, so one warpgroup may run up to two blocks ahead of the
 *                         other: while one waits for its wgmmas and folds, the other's
 *                         run. Parities: block b uses stage b % S for the (b / S)-th
 *                         time; its `full` wait takes parity (b / S) & 1, and the
 *                         refill with block b waits on `empty` for use b / S - 1. */
/* (mbarrier init / try_wait / arrive / arrive.expect_tx: common/tile.cuh's memra_mb_*) */
/* an arrival once every cp.async this thread issued so far has landed */
__device__ __forceinline__ void mb_cp_arrive(unsigned a)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(a) : "memory");
}

/* NH = 1: the 128 x 128 tile (memra_k_fp8blk_wgmma_mb); NH = 2: 128 x 256
 * (memra_k_fp8blk_wgmma_wide), each warpgroup's 64 x 256 as two 64 x 128 halves in
 * turn through the one block accumulator (two weight scale blocks: one grid value
 * per half), a quarter less operand traffic from L2 per FLOP than 128 x 128. */
/* The wgmma tiles' epilogue: the thread's two rows i and i + 8 (those below m) of NH 128-column
 * accumulator halves (the m64nNk32 fragment: column 8 j + 2 (lane % 4) + e % 2, row + 8 (e / 2)),
 * columns from j0 (those below n), scaled by alpha into y; perm (gemm_experts): y's row of each
 * tile row, else the row itself. */
template <int NH>
__device__ __forceinline__ void wg_store(const float (&acc)[NH][64], float *__restrict__ y, long long ldy, float alpha,
                                         int m, int n, int i, int j0, int lane, const int *__restrict__ perm = nullptr)
{
    long long yr[2] = {0, 0}; /* gemm_experts: y's rows of this thread's two rows */
    if (perm != nullptr) {
        yr[0] = i < m ? (long long)perm[i] : 0;
        yr[1] = i + 8 < m ? (long long)perm[i + 8] : 0;
    }
#pragma unroll
    for (int h = 0; h < NH; h++)
#pragma unroll
        for (int j = 0; j < 16; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = i + 8 * (e >> 1);
                const int c = j0 + h * 128 + j * 8 + (lane & 3) * 2 + (e & 1);
                if (r < m && c < n) y[(perm != nullptr ? yr[e >> 1] : (long long)r) * ldy + c] = alpha * acc[h][4 * j + e];
            }
}

/* The tile at rows i0 .. (rows below m exist) and weight rows j0 ..; the activation
 * scales of block kb at xs + kb * ms. perm == nullptr: output row i0 + i is y's row
 * i0 + i (the dense kernels, ms = m); else y's row perm[i0 + i] (gemm_experts: i0
 * an expert's first sorted row of the tile, m its end). The same loads, wgmmas
 * and fold either way. LIVE (gemm_experts' one-table tiles): a warpgroup whose 64 rows all lie
 * at or past m skips its wgmmas and folds (its accumulators stay 0 and are never stored) but
 * still arrives on the stages' barriers; without LIVE the code is the dense kernels'. PT
 * (gemm_experts' per-tensor lane): grid points at the expert's one weight scale, the same for
 * every block. */
template <int NH, int BM = 128, bool LIVE = false, bool PT = false>
__device__ __forceinline__ void wg_mb_tile(const unsigned char *__restrict__ w, const float *__restrict__ grid,
                                           const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                                           float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                                           int i0, int j0, int ms, const int *__restrict__ perm)
{
    /* BM = 64 (gemm_experts' remainder tile): one warpgroup, A [64 x 128] then B, FP8BLK_XE64_STAGES stages */
    constexpr int T = 2 * BM, AB = BM * 128;
    constexpr int S = BM == 128 ? FP8BLK_WG_STAGES_OF(NH) : FP8BLK_XE64_STAGES, L = S - 2;
    constexpr int SB = BM == 128 ? FP8BLK_WG_STAGE_BYTES_OF(NH) : FP8BLK_XE64_STAGE_BYTES;
    static_assert(BM == 128 || (BM == 64 && NH == 1), "wg_mb_tile: 128 rows, or 64 rows by 128");
    extern __shared__ __align__(16) unsigned char wg_smem[]; /* the dynamic shared memory (a template's own name) */
    const unsigned raw = fb_smem(wg_smem), sbase = (raw + 1023u) & ~1023u;
    unsigned char *stages = wg_smem + (sbase - raw);
    const unsigned full = sbase + S * SB, empty = full + 8 * S; /* + 8 s each */
    const int lane = threadIdx.x & 31;
    const int r0 = (threadIdx.x >> 7) * 64 + ((threadIdx.x >> 5) & 3) * 16 + (lane >> 2); /* rows r0, r0 + 8 */
    const int nk = (k + 127) / 128, ngr = (n + 127) / 128;
    const float *grow = grid + (long long)(j0 / 128) * nk;
    if (threadIdx.x == 0)
        for (int s = 0; s < S; s++) {
            memra_mb_init(full + 8 * s, T);
            memra_mb_init(empty + 8 * s, T);
        }
    __syncthreads();

    auto produce = [&](int b) {
        const int s = b % S;
        if (b >= S) memra_mb_wait(empty + 8 * s, (unsigned)(b / S - 1) & 1u);
        wg_load_n<NH, BM>(stages + s * SB, xq, w, xs, m, n, k, i0, j0, b, ms);
        mb_cp_arrive(full + 8 * s);
    };
    float acc[NH][64], t[64];
#pragma unroll
    for (int h = 0; h < NH; h++)
#pragma unroll
        for (int i = 0; i < 64; i++) acc[h][i] = 0.0f;
    for (int b = 0; b < L && b < nk; b++) produce(b);
    const unsigned a_off = (threadIdx.x >> 7) * 64 * 128;
    const bool live = !LIVE || i0 + (int)(threadIdx.x >> 7) * 64 < m; /* uniform in a warpgroup */
    for (int kb = 0; kb < nk; kb++) {
        if (kb + L < nk) produce(kb + L);
        const int s = kb % S;
        memra_mb_wait(full + 8 * s, (unsigned)(kb / S) & 1u);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        const float *sx = reinterpret_cast<const float *>(stages + s * SB + (AB + 16384 * NH));
        const float x0 = sx[r0], x1 = sx[r0 + 8];
        const unsigned a = sbase + s * SB + a_off;
#pragma unroll
        for (int h = 0; h < NH; h++) {
            /* a half past the last scale block of rows has no grid value: its rows are all past n */
            const float g = PT ? grid[0] : (j0 / 128 + h < ngr) ? grow[(long long)h * nk + kb] : 0.0f;
            const unsigned bb = sbase + s * SB + (AB + 16384 * h);
            if (live) {
                wg_block(t, a, bb);
            }
            if (h == NH - 1) memra_mb_arrive(empty + 8 * s); /* every thread: its own reads of the stage are done */
            if (live) {
                const float f0 = x0 * g, f1 = x1 * g;
#pragma unroll
                for (int i = 0; i < 64; i++) acc[h][i] = fmaf((i & 2) ? f1 : f0, t[i], acc[h][i]);
            }
        }
    }
    wg_store<NH>(acc, y, ldy, alpha, m, n, i0 + r0, j0, lane, perm);
}

template <int NH>
__device__ __forceinline__ void wg_mb_body(const unsigned char *__restrict__ w, const float *__restrict__ grid,
                                           const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                                           float *__restrict__ y, int m, int n, int k, long long ldy, float alpha)
{
    wg_mb_tile<NH>(w, grid, xq, xs, y, m, n, k, ldy, alpha, blockIdx.x * FP8BLK_WG_BM, blockIdx.y * (128 * NH), m,
                   nullptr);
}

extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_wgmma_mb(const unsigned char *__restrict__ w, const float *__restrict__ grid,
                        const unsigned char *__restrict__ xq, const float *__restrict__ xs, float *__restrict__ y, int m,
                        int n, int k, long long ldy, float alpha)
{
    wg_mb_body<1>(w, grid, xq, xs, y, m, n, k, ldy, alpha);
}

extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_wgmma_wide(const unsigned char *__restrict__ w, const float *__restrict__ grid,
                          const unsigned char *__restrict__ xq, const float *__restrict__ xs, float *__restrict__ y,
                          int m, int n, int k, long long ldy, float alpha)
{
    wg_mb_body<2>(w, grid, xq, xs, y, m, n, k, ldy, alpha);
}

/* wg_experts_tile<BM, NH>: the CTA's tile-table tile (blockIdx.y; past *ntiles the whole CTA
 * returns, before any barrier) through wg_mb_tile<NH, BM> on its expert's weight and grid,
 * weight rows (128 NH) blockIdx.x .. ; TMAJOR: the tile blockIdx.x, the weight rows blockIdx.y,
 * and a warpgroup without rows skips its wgmmas (wg_mb_tile's LIVE). */
template <int BM, int NH = 1, bool TMAJOR = false, bool PT = false>
__device__ __forceinline__ void wg_experts_tile(const unsigned long long *__restrict__ wtab,
                                                const unsigned long long *__restrict__ gtab,
                                                const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                                                const int *__restrict__ offsets, const int *__restrict__ perm,
                                                const int *__restrict__ tiles, const int *__restrict__ ntiles,
                                                float *__restrict__ y, int m, int n, int k, long long ldy, float alpha)
{
    const int t = TMAJOR ? (int)blockIdx.x : (int)blockIdx.y, col = TMAJOR ? (int)blockIdx.y : (int)blockIdx.x;
    if (t >= *ntiles) return;
    const int e = tiles[2 * t], s0 = tiles[2 * t + 1], end = offsets[e + 1];
    const unsigned char *w = reinterpret_cast<const unsigned char *>(wtab[e]);
    /* PT: gtab is the experts' per-tensor weight scales (E floats), expert e's at gtab's float e */
    const float *grid = PT ? reinterpret_cast<const float *>(gtab) + e : reinterpret_cast<const float *>(gtab[e]);
    wg_mb_tile<NH, BM, TMAJOR, PT>(w, grid, xq, xs, y, end, n, k, ldy, alpha, s0, col * (128 * NH), m, perm);
}

/* ---- gemm_experts on the 128 x 128 mbarrier tile ------------------------------------
 *   memra_k_fp8blk_experts_wgmma  memra_k_fp8blk_wgmma_mb's tile (wg_mb_tile<1>: the
 *                         same loads, wgmmas and fold) on the rows of a tile-table
 *                         tile: grid (ceil(n / 128), the worst-case tile count),
 *                         CTA (x, t) with t >= *ntiles exits at once; else tile t =
 *                         (e, s0): sorted rows s0 .. min(s0 + 128, offsets[e + 1])
 *                         of xq / xs (memra_k_fp8blk_quant_sorted's; scales at
 *                         xs[b * m + s]), those past the expert's end zero-filled
 *                         and never stored, times expert e's weight wtab[e] and
 *                         grid gtab[e] (the core's tables, module.h: each 16-byte
 *                         aligned), weight rows 128 x .. ; output row s goes to
 *                         y[perm[s]]. Every output is written once, by one CTA,
 *                         and is bit for bit the dense lane's for that expert's
 *                         rows (the same fold per row and 128 columns; a row's
 *                         wgmma result depends on that row alone). */
extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_experts_wgmma(const unsigned long long *__restrict__ wtab, const unsigned long long *__restrict__ gtab,
                             const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                             const int *__restrict__ offsets, const int *__restrict__ perm,
                             const int *__restrict__ tiles, const int *__restrict__ ntiles, float *__restrict__ y,
                             int m, int n, int k, long long ldy, float alpha)
{
    wg_experts_tile<128>(wtab, gtab, xq, xs, offsets, perm, tiles, ntiles, y, m, n, k, ldy, alpha);
}

/*   memra_k_fp8blk_experts_wgmma_t  the same tile on one table of 128-row tiles (an expert of c
 *                         rows: ceil(c / 128) of them, no 64-row remainder launch), tile-major:
 *                         grid (the worst-case tile count, ceil(n / 128)). CTAs are handed out
 *                         x fastest, so an expert's tiles on the same 128 weight rows run side
 *                         by side and the weight block streams from DRAM once, the second tile
 *                         finding it in L2 (the two-table path's 64-row launch re-reads from
 *                         DRAM the weights the 128-row launch read before it). A remainder
 *                         tile's warpgroup without rows skips its wgmmas. Bit for bit the
 *                         other tiles' outputs. Opt-in (MEMRA_FP8BLK_XE_ONE=1) until measured. */
extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_experts_wgmma_t(const unsigned long long *__restrict__ wtab, const unsigned long long *__restrict__ gtab,
                               const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                               const int *__restrict__ offsets, const int *__restrict__ perm,
                               const int *__restrict__ tiles, const int *__restrict__ ntiles, float *__restrict__ y,
                               int m, int n, int k, long long ldy, float alpha)
{
    wg_experts_tile<128, 1, true>(wtab, gtab, xq, xs, offsets, perm, tiles, ntiles, y, m, n, k, ldy, alpha);
}

/*   memra_k_fp8blk_experts_wgmma_pt  memra_k_fp8blk_experts_wgmma_t for per-tensor e4m3 experts
 *                         (lane gemm_fp8): gtab is the E per-tensor weight scales (floats), the
 *                         fold's weight factor expert e's scale at every block; the activation
 *                         from memra_k_fp8blk_quant_sorted_amax (one scale a row, its expert's)
 *                         or _sorted_given (a static scale). Within the lane's band of the
 *                         host's per-tensor reference, not bit for bit the dense gemm_fp8 lane
 *                         (cuBLASLt sums all of k before scaling; this tile folds per 128). */
extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_experts_wgmma_pt(const unsigned long long *__restrict__ wtab, const float *__restrict__ wsc,
                                const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                                const int *__restrict__ offsets, const int *__restrict__ perm,
                                const int *__restrict__ tiles, const int *__restrict__ ntiles, float *__restrict__ y,
                                int m, int n, int k, long long ldy, float alpha)
{
    wg_experts_tile<128, 1, true, true>(wtab, reinterpret_cast<const unsigned long long *>(wsc), xq, xs, offsets, perm,
                                        tiles, ntiles, y, m, n, k, ldy, alpha);
}

/*   memra_k_fp8blk_experts_wgmma_wide  the same tile table on memra_k_fp8blk_wgmma_wide's
 *                         128 x 256 tile (wg_mb_tile<2>: each warpgroup's 64 x 256 as two
 *                         64 x 128 halves, the same wgmmas and fold per half, so bit for
 *                         bit the 128 x 128 tile's outputs), grid (ceil(n / 256), the
 *                         worst-case tile count): a quarter fewer operand bytes per FLOP
 *                         on long expert rows. Opt-in (MEMRA_FP8BLK_XE_WIDE=1) until
 *                         measured. */
extern "C" __global__ void __launch_bounds__(FP8BLK_WG_THREADS, 1)
memra_k_fp8blk_experts_wgmma_wide(const unsigned long long *__restrict__ wtab,
                                  const unsigned long long *__restrict__ gtab, const unsigned char *__restrict__ xq,
                                  const float *__restrict__ xs, const int *__restrict__ offsets,
                                  const int *__restrict__ perm, const int *__restrict__ tiles,
                                  const int *__restrict__ ntiles, float *__restrict__ y, int m, int n, int k,
                                  long long ldy, float alpha)
{
    wg_experts_tile<128, 2>(wtab, gtab, xq, xs, offsets, perm, tiles, ntiles, y, m, n, k, ldy, alpha);
}

/*   memra_k_fp8blk_experts_wgmma64  the same on a 64-row tile: one warpgroup (128
 *                         threads, wg_mb_tile<1, 64>: A [64 x 128] then B in a
 *                         stage, FP8BLK_XE64_STAGES stages, two CTAs to an SM),
 *                         the wgmmas and fold of warpgroup 0 of the 128-row tile,
 *                         for the second table (tiles2 / ntiles2: an expert's
 *                         remainder of at most 64 rows past its 128-row tiles). */
extern "C" __global__ void __launch_bounds__(FP8BLK_XE64_THREADS, 2)
memra_k_fp8blk_experts_wgmma64(const unsigned long long *__restrict__ wtab, const unsigned long long *__restrict__ gtab,
                               const unsigned char *__restrict__ xq, const float *__restrict__ xs,
                               const int *__restrict__ offsets, const int *__restrict__ perm,
                               const int *__restrict__ tiles, const int *__restrict__ ntiles, float *__restrict__ y,
                               int m, int n, int k, long long ldy, float alpha)
{
    wg_experts_tile<64>(wtab, gtab, xq, xs, offsets, perm, tiles, ntiles, y, m, n, k, ldy, alpha);
}

/* ---- the warp-specialised kernel on the bulk tensor copy engine ------------------
 *   memra_k_fp8blk_wgmma_tma  what memra_k_fp8blk_wgmma_wide computes (128 x 256
 *                         tile, the same wgmmas and fold, bit for bit), with
 *                         three warpgroups: the first (40 registers after
 *                         setmaxnreg) produces, the other two (232 registers)
 *                         consume, 64 tokens each. One producer thread issues
 *                         per stage two cp.async.bulk.tensor copies (A [128 x
 *                         128], B [256 x 128] e4m3, 128-byte swizzle: the
 *                         layout the descriptors read) onto the stage's `full`
 *                         mbarrier with its byte count, and the producer warp's
 *                         32 lanes copy the 128 activation scales (cp.async,
 *                         32 arrivals); `full` expects 33 arrivals and the
 *                         bytes. Consumers arrive on `empty` (256 threads). The
 *                         consumers issue nothing but wgmmas, waits and the
 *                         fold. Tensor maps: xq as [m rows x k bytes], w as [n
 *                         x k], boxes 128 x 128 and 256 x 128, passed by value
 *                         (__grid_constant__); rows and columns past the edges
 *                         read as zeros. Needs m, n >= 1 and k % 16 == 0 (row
 *                         strides a multiple of 16 bytes). Unmeasured: opt-in,
 *                         MEMRA_FP8BLK_WGMMA=tma. */
/* (memra_tmap: common/tile.cuh) */

__device__ __forceinline__ void tma_load_2d(unsigned dst, const memra_tmap *map, int c0, int c1, unsigned mbar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(mbar)
                 : "memory");
}
/* tma_load_2d with an L2 eviction priority (`policy` from l2_policy) */
__device__ __forceinline__ void tma_load_2d_hint(unsigned dst, const memra_tmap *map, int c0, int c1, unsigned mbar,
                                                 unsigned long long policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
                 "[%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(mbar), "l"(policy)
                 : "memory");
}
/* An L2 eviction policy for every line an access with it touches: LAST true evict_last (kept while
 * lines of other priorities can go), false evict_first (the first to go) */
template <bool LAST> __device__ __forceinline__ unsigned long long l2_policy()
{
    unsigned long long p;
    if (LAST)
        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
    else
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}

/* The tensor-map tile's two roles, shared by memra_k_fp8blk_wgmma_tma and
 * memra_k_fp8blk_experts_tma. tma_produce: the producer warp's loop over the k blocks kb0 ..
 * kb0 + nk - 1 (lane 0 issues stage b's two bulk copies, x rows r0 .. r0 + 127 and weight rows
 * j0 .. j0 + 128 NH, every lane copies four of the 128 rows' scales xs[kb m + r0 + t], zero
 * past m). tma_consume: a consumer warpgroup's loop into acc over those nk blocks (ct 0 .. 255,
 * the consumer thread; grow the weight grid's row of the tile at the slice's first block, gs
 * blocks a grid row); a warpgroup that is not `live` computes nothing but frees every stage as
 * the live ones do. it0: the ring's position at the first block (the blocks the CTA's earlier
 * tiles put through the S stages: 0 but in the persistent kernel), so stage and phase carry on
 * across tiles. */
template <int NH, int S, int SB, int PF = 0, bool GS = false, bool WAIT = true, int L2 = 0>
__device__ __forceinline__ void tma_produce(const memra_tmap *map_x, const memra_tmap *map_w, const float *__restrict__ xs,
                                            int r0, int j0, int m, int nk, int kb0, unsigned sbase,
                                            unsigned char *stages, unsigned full, unsigned empty, int lane,
                                            const float *__restrict__ grow = nullptr, int gs = 0, int ngr = 0,
                                            int it0 = 0)
{
    /* L2 (the persistent grouped tiles' MEMRA_FP8BLK_XE_L2): 0 no hint; 1 the x rows evict_last and
     * the weight evict_first; 2 the x rows evict_last, the weight without a hint */
    const unsigned long long px = L2 != 0 ? l2_policy<true>() : 0ull, pw = L2 == 1 ? l2_policy<false>() : 0ull;
    for (int b = 0; b < nk; b++) {
        const int s = (it0 + b) % S, kb = kb0 + b;
        /* PF > 0 (memra_k_fp8blk_experts_tma_pf*): the weight box PF blocks ahead of this one into
         * L2 before waiting for a free stage, so the weight streams keep more requests in flight
         * than the S stages of shared memory hold */
        if (PF > 0 && lane == 0 && b + PF < nk) memra_tma_prefetch_2d(map_w, (kb + PF) * 128, j0);
        if (it0 + b >= S) memra_mb_wait(empty + 8 * s, (unsigned)((it0 + b) / S - 1) & 1u);
        const unsigned st = sbase + s * SB;
        if (lane == 0) {
            memra_mb_arrive_tx(full + 8 * s, 16384u * (1 + NH));
            if (L2 != 0)
                tma_load_2d_hint(st, map_x, kb * 128, r0, full + 8 * s, px);
            else
                tma_load_2d(st, map_x, kb * 128, r0, full + 8 * s);
            if (L2 == 1)
                tma_load_2d_hint(st + 16384, map_w, kb * 128, j0, full + 8 * s, pw);
            else
                tma_load_2d(st + 16384, map_w, kb * 128, j0, full + 8 * s);
        }
        float *sx = reinterpret_cast<float *>(stages + s * SB + 16384 * (1 + NH));
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int t = lane + 32 * e, i = r0 + t;
            fb_cp4(sx + t, i < m ? xs + (long long)kb * m + i : xs, i < m ? 4 : 0);
        }
        if (GS && lane < NH) { /* the weight grid's scale of half `lane` after the x scales (0 past n) */
            const bool ok = j0 / 128 + lane < ngr;
            fb_cp4(sx + 128 + lane, ok ? grow + (long long)lane * gs + b : grow, ok ? 4 : 0);
        }
        mb_cp_arrive(full + 8 * s);
    }
    if (WAIT) /* the persistent kernel waits once, after its last tile (the full barriers count these copies) */
        asm volatile("cp.async.wait_all;\n" ::: "memory");
}

template <int NH, int S, int SB, bool GS = false>
__device__ __forceinline__ void tma_consume(float (&acc)[NH][64], const float *__restrict__ grow, int nk, int gs, int ngr,
                                            int j0, unsigned sbase, const unsigned char *stages, unsigned full,
                                            unsigned empty, int ct, int lane, bool live, int it0 = 0)
{
    const int r0 = (ct >> 7) * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2);
    float t[64];
#pragma unroll
    for (int h = 0; h < NH; h++)
#pragma unroll
        for (int i = 0; i < 64; i++) acc[h][i] = 0.0f;
    const unsigned a_off = (ct >> 7) * 64 * 128;
    for (int kb = 0; kb < nk; kb++) {
        const int s = (it0 + kb) % S;
        memra_mb_wait(full + 8 * s, (unsigned)((it0 + kb) / S) & 1u);
        if (!live) { /* nothing to compute: free the stage */
            memra_mb_arrive(empty + 8 * s);
            continue;
        }
        const float *sx = reinterpret_cast<const float *>(stages + s * SB + 16384 * (1 + NH));
        const float x0 = sx[r0], x1 = sx[r0 + 8];
        const unsigned a = sbase + s * SB + a_off;
#pragma unroll
        for (int h = 0; h < NH; h++) {
            const float g = GS ? sx[128 + h] : (j0 / 128 + h < ngr) ? grow[(long long)h * gs + kb] : 0.0f;
            const unsigned bb = sbase + s * SB + 16384 * (1 + h);
            wg_block(t, a, bb);
            if (h == NH - 1) memra_mb_arrive(empty + 8 * s);
            const float f0 = x0 * g, f1 = x1 * g;
#pragma unroll
            for (int i = 0; i < 64; i++) acc[h][i] = fmaf((i & 2) ? f1 : f0, t[i], acc[h][i]);
        }
    }
}

/* HALF (MEMRA_FP8BLK_XE_HALF=1, the persistent 256-wide grouped tile's opt-in twin): a tile whose rows all lie in
 * its first 64 (an expert's last rows past its full tiles) on both consumer warpgroups, warpgroup h the rows
 * 0 .. 63 (warpgroup 0's A) against column half h, where tma_consume leaves warpgroup 1 idle and runs both halves
 * on warpgroup 0 in turn. Each output gets the same wgmmas and fold in the same order as there: bit for bit. */
template <int S, int SB, bool GS>
__device__ __forceinline__ void tma_consume_half(float (&acc)[64], const float *__restrict__ grow, int nk, int gs,
                                                 int ngr, int j0, unsigned sbase, const unsigned char *stages,
                                                 unsigned full, unsigned empty, int ct, int lane, int it0)
{
    const int h = ct >> 7, r0 = ((ct >> 5) & 3) * 16 + (lane >> 2);
    float t[64];
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] = 0.0f;
    for (int kb = 0; kb < nk; kb++) {
        const int s = (it0 + kb) % S;
        memra_mb_wait(full + 8 * s, (unsigned)((it0 + kb) / S) & 1u);
        const float *sx = reinterpret_cast<const float *>(stages + s * SB + 16384 * 3);
        const float x0 = sx[r0], x1 = sx[r0 + 8];
        const float g = GS ? sx[128 + h] : (j0 / 128 + h < ngr) ? grow[(long long)h * gs + kb] : 0.0f;
        wg_block(t, sbase + s * SB, sbase + s * SB + 16384 * (1 + h));
        memra_mb_arrive(empty + 8 * s);
        const float f0 = x0 * g, f1 = x1 * g;
#pragma unroll
        for (int i = 0; i < 64; i++) acc[i] = fmaf((i & 2) ? f1 : f0, t[i], acc[i]);
    }
}

/* tma_consume with the fold off the wgmmas' critical path (NH = 1 only: 64 + 2 x 64 accumulator
 * registers): once block q's wgmmas are done (wgmma.wait_group 0) and its scales read (its stage
 * then freed), block q + 1's are issued into the other temporary and run during block q's fold
 * (memra_k_fp8blk_wgmma's order; with wait_group 1 after the next issue ptxas serialises the
 * wgmmas, C7514). No wgmma sits in a
 * branch (ptxas serialises every wgmma of a kernel that has one in a divergent path): the blocks
 * run in pairs, and past the last block the issue repeats block nk - 1 (its stage is never
 * refilled: the producer is done) into a temporary that is never folded and frees nothing. The
 * same wgmmas and the same fold in the same order as tma_consume<1> for the real blocks:
 * outputs bit for bit equal. */
template <int S, int SB>
__device__ __forceinline__ void tma_pipe_issue(float (&t)[64], int kb, unsigned sbase, unsigned a_off, unsigned full)
{
    const int s = kb % S;
    memra_mb_wait(full + 8 * s, (unsigned)(kb / S) & 1u);
    const unsigned a = sbase + s * SB + a_off, bb = sbase + s * SB + 16384;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < 4; kk++) wg_mma(t, memra_wg_desc(a + kk * 32), memra_wg_desc(bb + kk * 32), kk);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int S, int SB, bool GS>
__device__ __forceinline__ void tma_pipe_step(float (&acc)[64], float (&tc)[64], float (&tn)[64],
                                              const float *__restrict__ grow, bool gv, int nk, int q, int r0,
                                              unsigned sbase, const unsigned char *stages, unsigned a_off,
                                              unsigned full, unsigned empty)
{
    const int last = nk - 1, kb = q < last ? q : last;
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); /* block q's are done */
    wg_fence_regs(tc);
    const int s = kb % S;
    const float *sx = reinterpret_cast<const float *>(stages + s * SB + 16384 * 2);
    const float g = GS ? sx[128] : gv ? grow[kb] : 0.0f;
    const float f0 = sx[r0] * g, f1 = sx[r0 + 8] * g;
    if (q < nk) memra_mb_arrive(empty + 8 * s); /* block q's operands and scales are read */
    tma_pipe_issue<S, SB>(tn, q + 1 < last ? q + 1 : last, sbase, a_off, full); /* runs during the fold */
    if (q < nk) /* a repeated block past the last is never folded (no wgmma in this branch) */
#pragma unroll
        for (int i = 0; i < 64; i++) acc[i] = fmaf((i & 2) ? f1 : f0, tc[i], acc[i]);
}

template <int S, int SB, bool GS = false>
__device__ __forceinline__ void tma_consume_pipe(float (&acc)[1][64], const float *__restrict__ grow, int nk, int ngr,
                                                 int j0, unsigned sbase, const unsigned char *stages, unsigned full,
                                                 unsigned empty, int ct, int lane, bool live)
{
    const int r0 = (ct >> 7) * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2);
#pragma unroll
    for (int i = 0; i < 64; i++) acc[0][i] = 0.0f;
    if (!live || nk <= 0) { /* nothing to compute: free every stage as the live warpgroup does */
        for (int kb = 0; kb < nk; kb++) {
            memra_mb_wait(full + 8 * (kb % S), (unsigned)(kb / S) & 1u);
            memra_mb_arrive(empty + 8 * (kb % S));
        }
        return;
    }
    const unsigned a_off = (ct >> 7) * 64 * 128;
    const bool gv = j0 / 128 < ngr;
    float t0[64], t1[64];
    tma_pipe_issue<S, SB>(t0, 0, sbase, a_off, full);
    for (int q = 0; q < nk; q += 2) {
        tma_pipe_step<S, SB, GS>(acc[0], t0, t1, grow, gv, nk, q, r0, sbase, stages, a_off, full, empty);
        tma_pipe_step<S, SB, GS>(acc[0], t1, t0, grow, gv, nk, q + 1, r0, sbase, stages, a_off, full, empty);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); /* the repeated block's, unread */
    wg_fence_regs(t0);
}

/* The tensor-map tiles' shared memory, carved and set up once a CTA: the S stages from the first
 * 1024-byte boundary, then S full and S empty mbarriers (full: lane 0's expect_tx and the producer
 * warp's 32 cp.async arrivals; empty: the 256 consumer threads), initialised by thread 0 before a
 * CTA barrier */
struct tma_ring {
    unsigned sbase, full, empty;
    unsigned char *stages;
};

template <int S, int SB>
__device__ __forceinline__ tma_ring tma_ring_setup(unsigned char *smem)
{
    tma_ring r;
    const unsigned raw = fb_smem(smem);
    r.sbase = (raw + 1023u) & ~1023u;
    r.stages = smem + (r.sbase - raw);
    r.full = r.sbase + S * SB;
    r.empty = r.full + 8 * S;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            memra_mb_init(r.full + 8 * s, 33);
            memra_mb_init(r.empty + 8 * s, 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(FP8BLK_TMA_THREADS, 1)
memra_k_fp8blk_wgmma_tma(const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_w,
                         const float *__restrict__ grid, const float *__restrict__ xs, float *__restrict__ y, int m,
                         int n, int k, long long ldy, float alpha)
{
    constexpr int NH = 2, S = FP8BLK_WG_STAGES_OF(NH), SB = FP8BLK_WG_STAGE_BYTES_OF(NH);
    extern __shared__ __align__(16) unsigned char smem[];
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31;
    const int i0 = blockIdx.x * FP8BLK_WG_BM, j0 = blockIdx.y * (128 * NH);
    const int nk = (k + 127) / 128, ngr = (n + 127) / 128;
    const auto [sbase, full, empty, stages] = tma_ring_setup<S, SB>(smem);

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x >= 32) return;
        tma_produce<NH, S, SB>(&map_x, &map_w, xs, i0, j0, m, nk, 0, sbase, stages, full, empty, lane);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int ct = threadIdx.x - 128; /* 0..255: the consumers */
    const int r0 = (ct >> 7) * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2);
    float acc[NH][64];
    tma_consume<NH, S, SB>(acc, grid + (long long)(j0 / 128) * nk, nk, nk, ngr, j0, sbase, stages, full, empty, ct, lane,
                           true);
    wg_store<NH>(acc, y, ldy, alpha, m, n, i0 + r0, j0, lane);
}

/* ---- gemm_experts on the warp-specialised tensor-map tile (the default; MEMRA_FP8BLK_XE_TMA=0: off)
 *   memra_k_fp8blk_experts_maps  one tensor map per expert's weight, in global memory: the
 *                         host's template (expert-shaped [n x k] e4m3, box 256 x 128, 128-byte
 *                         swizzle: the dense TMA kernel's map_w) stored to maps[e], its global
 *                         address replaced in place by wtab[e] (tensormap.replace on global),
 *                         then the tensor-map proxy's release fence.
 *                         One warp an expert, grid ceil(E / 4) x 128 threads; a plain launch.
 *   memra_k_fp8blk_experts_tma   memra_k_fp8blk_wgmma_tma's tile (a producer warp on the bulk
 *                         tensor copies, two consumer warpgroups on 128 x 256 per CTA, the same
 *                         wgmmas and fold) on one table of 128-row tiles, tile-major: grid (the
 *                         worst-case tile count, ceil(n / 256)); CTA (t, col) past *ntiles exits.
 *                         Tile t = (e, s0): sorted rows s0 .. s0 + 127 of xq through map_x (rows
 *                         past m zero-filled by the copy engine; rows past the expert's end are
 *                         other experts' and never stored: a row's result depends on that row
 *                         alone), expert e's weight through maps[e] (acquired by the producer
 *                         before its first copy) and its grid gtab[e]; output row s to
 *                         y[perm[s]] for s < offsets[e + 1]. A consumer warpgroup whose 64 rows
 *                         all lie past the end skips its wgmmas (it still frees the stages). Bit
 *                         for bit the other grouped tiles' outputs (the same per-row wgmmas and
 *                         fold). The default (run v1: 0.70-0.76 of the dense call on the Mixtral
 *                         gate/up rows at m = 512, the cp.async tiles 0.53-0.54); MEMRA_FP8BLK_XE_TMA=0
 *                         keeps the cp.async tiles. memra_k_fp8blk_experts_tma_split
 *                         (MEMRA_FP8BLK_XE_SPLIT=S, opt-in; the 256-wide tile): gridDim.z = S, CTA z
 *                         takes the k blocks nk z / S .. nk (z + 1) / S - 1 and writes its raw sums to
 *                         part[z][s][c] (s the sorted row) for memra_k_fp8blk_experts_sum; the
 *                         unsplit entry points are compiled without it (their SASS unchanged).
 *                         memra_k_fp8blk_experts_tma_pf4 / _pf8 (MEMRA_FP8BLK_XE_PF=4|8, opt-in;
 *                         the 256-wide tile): the producer also prefetches into L2 the weight
 *                         box 4 / 8 k blocks ahead of the one it copies (cp.async.bulk.prefetch),
 *                         for the m = 512 down rows whose weight streams run at a third of DRAM's
 *                         rate with the 4 stages of shared memory in flight; outputs unchanged.
 *   memra_k_fp8blk_experts_sum   y[perm[s]][c] = alpha (part[0][s][c] + ... + part[S-1][s][c]), the
 *                         slices added in order, for the routed rows s < offsets[E]: rows over
 *                         blockIdx.y (stride gridDim.y), columns over the threads. */
extern "C" __global__ void __launch_bounds__(128)
memra_k_fp8blk_experts_maps(const __grid_constant__ memra_tmap tmpl, const unsigned long long *__restrict__ wtab, int E,
                            memra_tmap *__restrict__ maps)
{
    const int wp = threadIdx.x >> 5, lane = threadIdx.x & 31, e = blockIdx.x * 4 + wp;
    if (e >= E) return;
    memra_tmap_put(tmpl, wtab[e], &maps[e], lane); /* common/tile.cuh; the consumer acquires */
}

/* A grouped tensor-map tile's stores: the consumer thread's rows i0 and i0 + 8 (sorted), of the
 * expert's rows below end, columns j0 .. j0 + 128 NH below n, to y[perm[i]] times alpha, or raw to
 * the split's slice pz (by sorted row). V2 (the persistent tiles, where y and ldy keep every even
 * column 8-byte aligned): a thread's two adjacent columns as one 8-byte store, so a warp's store
 * fills whole 32-byte sectors with half the instructions (the same values) */
template <int NH, bool SPLIT, bool V2 = false>
__device__ __forceinline__ void xe_tma_store(const float (&acc)[NH][64], float *__restrict__ y, float *__restrict__ pz,
                                             const int *__restrict__ perm, int i0, int end, int j0, int n,
                                             long long ldy, float alpha, int lane)
{
    if constexpr (V2) {
        static_assert(!SPLIT, "the vector stores are y's");
        const long long y0 = i0 < end ? (long long)perm[i0] * ldy : 0;
        const long long y1 = i0 + 8 < end ? (long long)perm[i0 + 8] * ldy : 0;
#pragma unroll
        for (int h = 0; h < NH; h++)
#pragma unroll
            for (int j = 0; j < 16; j++)
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    const int c = j0 + h * 128 + j * 8 + (lane & 3) * 2;
                    if (i0 + 8 * r < end && c < n) {
                        float *const o = y + (r ? y1 : y0) + c;
                        const float v0 = alpha * acc[h][4 * j + 2 * r], v1 = alpha * acc[h][4 * j + 2 * r + 1];
                        if (c + 1 < n)
                            *reinterpret_cast<float2 *>(o) = make_float2(v0, v1);
                        else
                            o[0] = v0;
                    }
                }
    } else {
#pragma unroll
        for (int h = 0; h < NH; h++)
#pragma unroll
            for (int j = 0; j < 16; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const int i = i0 + 8 * (q >> 1);
                    const int c = j0 + h * 128 + j * 8 + (lane & 3) * 2 + (q & 1);
                    if (i < end && c < n) {
                        if (!SPLIT)
                            y[(long long)perm[i] * ldy + c] = alpha * acc[h][4 * j + q];
                        else
                            pz[(long long)i * n + c] = acc[h][4 * j + q];
                    }
                }
    }
}

template <int NH, bool SPLIT, int PF = 0, bool GS = false, bool PIPE = false>
__device__ __forceinline__ void experts_tma_body(const memra_tmap &map_x, const memra_tmap *__restrict__ maps,
                                                 const unsigned long long *__restrict__ gtab,
                                                 const float *__restrict__ xs, const int *__restrict__ offsets,
                                                 const int *__restrict__ perm, const int *__restrict__ tiles,
                                                 const int *__restrict__ ntiles, float *__restrict__ y, int m, int n,
                                                 int k, long long ldy, float alpha, float *__restrict__ part)
{
    constexpr int S = FP8BLK_WG_STAGES_OF(NH), SB = FP8BLK_WG_STAGE_BYTES_OF(NH);
    static_assert(!GS || 16384 * (1 + NH) + 512 + 4 * NH <= SB, "the grid's scales fit the stage's tail");
    const int ti = (int)blockIdx.x;
    if (ti >= *ntiles) return; /* the whole CTA, before any barrier */
    const int e = tiles[2 * ti], s0 = tiles[2 * ti + 1], end = offsets[e + 1];
    const memra_tmap *map_w = maps + e;
    extern __shared__ __align__(16) unsigned char xt_smem[];
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31;
    const int j0 = blockIdx.y * (128 * NH);
    const int nkt = (k + 127) / 128, ngr = (n + 127) / 128;
    const int slices = SPLIT ? (int)gridDim.z : 1, z = SPLIT ? (int)blockIdx.z : 0; /* split-k: this CTA's k blocks */
    const int kb0 = (int)((long long)nkt * z / slices), nk = (int)((long long)nkt * (z + 1) / slices) - kb0;
    const auto [sbase, full, empty, stages] = tma_ring_setup<S, SB>(xt_smem);

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x >= 32) return;
        if (lane == 0) memra_tmap_acquire(map_w); /* written by experts_maps (common/tile.cuh) */
        tma_produce<NH, S, SB, PF, GS>(&map_x, map_w, xs, s0, j0, m, nk, kb0, sbase, stages, full, empty, lane,
                                       reinterpret_cast<const float *>(gtab[e]) + (long long)(j0 / 128) * nkt + kb0,
                                       nkt, ngr);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int ct = threadIdx.x - 128; /* 0..255: the consumers */
    const int r0 = (ct >> 7) * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2);
    const bool live = s0 + (ct >> 7) * 64 < end; /* the warpgroup's 64 rows hold one of the expert's */
    float acc[NH][64];
    const float *const grow = reinterpret_cast<const float *>(gtab[e]) + (long long)(j0 / 128) * nkt + kb0;
    if constexpr (PIPE) {
        static_assert(NH == 1, "the pipelined consumer holds two 64-register temporaries: 128 columns only");
        tma_consume_pipe<S, SB, GS>(acc, grow, nk, ngr, j0, sbase, stages, full, empty, ct, lane, live);
    } else {
        tma_consume<NH, S, SB, GS>(acc, grow, nk, nkt, ngr, j0, sbase, stages, full, empty, ct, lane, live);
    }
    if (!live) return;
    xe_tma_store<NH, SPLIT>(acc, y, part + (long long)z * m * n, perm, s0 + r0, end, j0, n, ldy, alpha, lane);
}

/* The ring position after a tile of nk blocks from position it, kept below 3 S: stage ((it + b)
 * mod S) and phase ((it + b) / S odd) depend on the position mod 2 S alone, and a position past the
 * first lap stays past it (it >= S), so a CTA's long walk never overflows it */
__device__ __forceinline__ int xe_ring_next(int it, int nk, int S)
{
    const long long p = (long long)it + nk;
    return p < 3LL * S ? (int)p : S + (int)((p - S) % (2LL * S));
}

/* MEMRA_FP8BLK_XE_TALL=1 (opt-in): the persistent tile 256 rows tall and 128 wide
 * (experts_tma_tall) on a table of 256-row tiles (memra_k_fp8blk_experts_route_tall). An expert
 * of 129-256 rows (the Mixtral-like rows at m = 512: ~128 a expert) is one tile a column, so its
 * weight strip is read once, where the 128-row tiles give it a second tile that reads the strip
 * again (from DRAM once the two CTAs drift apart). A stage: the 256 x rows [256 x 128] (one
 * 256-row box: blocks of 128 rows at 0 and 16384), the weight [128 x 128] at 32768, the 256 x
 * scales at 49152, the weight grid's scale after them. Consumer warpgroup w takes rows w 64 ..
 * w 64 + 63 of each 128-row block rb (acc[rb]: the 64 x 128 accumulators of block rb, the
 * registers of the 128 x 256 tile's two column halves), the same wgmmas and fold per row as the
 * other grouped tiles (outputs bit for bit). NRB: the warpgroup's blocks holding rows of the
 * expert (0, 1 or 2: rows fill the blocks in order), a template so that no wgmma sits under a
 * per-block condition. */
template <int S, int SB>
__device__ __forceinline__ void tma_produce_tall(const memra_tmap *map_x, const memra_tmap *map_w,
                                                 const float *__restrict__ xs, int r0, int j0, int m, int nk,
                                                 unsigned sbase, unsigned char *stages, unsigned full, unsigned empty,
                                                 int lane, const float *__restrict__ grow, int ngr, int it0)
{
    for (int b = 0; b < nk; b++) {
        const int s = (it0 + b) % S;
        if (it0 + b >= S) memra_mb_wait(empty + 8 * s, (unsigned)((it0 + b) / S - 1) & 1u);
        const unsigned st = sbase + s * SB;
        if (lane == 0) {
            memra_mb_arrive_tx(full + 8 * s, 3u * 16384u);
            tma_load_2d(st, map_x, b * 128, r0, full + 8 * s);
            tma_load_2d(st + 32768, map_w, b * 128, j0, full + 8 * s);
        }
        float *sx = reinterpret_cast<float *>(stages + s * SB + 49152);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const int t = lane + 32 * e, i = r0 + t;
            fb_cp4(sx + t, i < m ? xs + (long long)b * m + i : xs, i < m ? 4 : 0);
        }
        if (lane == 0) { /* the weight grid's scale of the column block (0 past n) */
            const bool ok = j0 / 128 < ngr;
            fb_cp4(sx + 256, ok ? grow + b : grow, ok ? 4 : 0);
        }
        mb_cp_arrive(full + 8 * s);
    }
}

template <int NRB, int S, int SB>
__device__ __forceinline__ void tma_consume_tall(float (&acc)[2][1][64], int nk, unsigned sbase,
                                                 const unsigned char *stages, unsigned full, unsigned empty, int ct,
                                                 int lane, int it0)
{
    const int r0 = (ct >> 7) * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2);
    float t[64];
#pragma unroll
    for (int rb = 0; rb < 2; rb++)
#pragma unroll
        for (int i = 0; i < 64; i++) acc[rb][0][i] = 0.0f;
    const unsigned a_off = (ct >> 7) * 64 * 128;
    for (int kb = 0; kb < nk; kb++) {
        const int s = (it0 + kb) % S;
        memra_mb_wait(full + 8 * s, (unsigned)((it0 + kb) / S) & 1u);
        if (NRB == 0) { /* nothing to compute: free the stage */
            memra_mb_arrive(empty + 8 * s);
            continue;
        }
        const float *sx = reinterpret_cast<const float *>(stages + s * SB + 49152);
        const float g = sx[256];
        const unsigned bb = sbase + s * SB + 32768;
#pragma unroll
        for (int rb = 0; rb < NRB; rb++) {
            const float x0 = sx[rb * 128 + r0], x1 = sx[rb * 128 + r0 + 8];
            const unsigned a = sbase + s * SB + rb * 16384 + a_off;
            wg_block(t, a, bb);
            if (rb == NRB - 1) memra_mb_arrive(empty + 8 * s);
            const float f0 = x0 * g, f1 = x1 * g;
#pragma unroll
            for (int i = 0; i < 64; i++) acc[rb][0][i] = fmaf((i & 2) ? f1 : f0, t[i], acc[rb][0][i]);
        }
    }
}

/* The persistent form of experts_tma_body (unsplit, no prefetch; MEMRA_FP8BLK_XE_PERSIST=1):
 * gridDim.x CTAs (one an SM at most) walk the nt x cols tiles, tile t = col nt + ti for t =
 * blockIdx.x, blockIdx.x + gridDim.x, ... (the expert's row tiles of one column side by side, as
 * the one-tile-a-CTA grid orders them). Producer and consumers walk the same tiles in the same
 * order, and `it`, the ring's position, carries stage and phase from tile to tile, so the producer
 * warp runs on into the next tile's stages while the consumers fold and store the last one: a
 * tile's first loads and its stores no longer leave the SM's tensor cores idle, and the barriers
 * are set up once per CTA, not once per tile. The same wgmmas and fold as experts_tma_body
 * (outputs bit for bit). */
/* Walk position t of the persistent tiles -> (table tile ti, column tile c): t = c nt + ti (the plain order: every
 * table tile of a column side by side), or with rg > 0 (MEMRA_FP8BLK_XE_RASTER) in groups of rg table tiles
 * (common/tile.cuh memra_raster). */
__device__ __forceinline__ void xe_walk(long long t, int nt, int cols, int rg, int &ti, int &c)
{
    if (rg <= 0) {
        ti = (int)(t % nt), c = (int)(t / nt);
        return;
    }
    memra_raster(t, nt, cols, rg, ti, c); /* common/tile.cuh */
}

template <int NH, bool GS, int L2 = 0, bool TALL = false, bool HALF = false>
__device__ __forceinline__ void experts_tma_persist(const memra_tmap &map_x, const memra_tmap *__restrict__ maps,
                                                    const unsigned long long *__restrict__ gtab,
                                                    const float *__restrict__ xs, const int *__restrict__ offsets,
                                                    const int *__restrict__ perm, const int *__restrict__ tiles,
                                                    const int *__restrict__ ntiles, float *__restrict__ y, int m,
                                                    int n, int k, long long ldy, float alpha, int rg)
{
    static_assert(!TALL || (NH == 1 && GS && L2 == 0), "the tall tile: 128 wide, the grid's scale through its stages");
    static_assert(!HALF || (NH == 2 && !TALL), "the half tiles: the 256-wide tile's two column halves");
    constexpr int S = TALL ? FP8BLK_WG_TALL_STAGES : FP8BLK_WG_STAGES_OF(NH);
    constexpr int SB = TALL ? FP8BLK_WG_TALL_STAGE_BYTES : FP8BLK_WG_STAGE_BYTES_OF(NH);
    static_assert(TALL ? 49152 + 1024 + 4 <= SB : !GS || 16384 * (1 + NH) + 512 + 4 * NH <= SB,
                  "the stage holds its operands and scales");
    constexpr int RB = TALL ? 2 : 1, NHA = TALL ? 1 : NH; /* row blocks of 128, column halves a block */
    const int nt = *ntiles;
    const int cols = (n + 128 * NH - 1) / (128 * NH);
    const long long total = (long long)nt * cols;
    if ((long long)blockIdx.x >= total) return; /* the whole CTA, before any barrier */
    extern __shared__ __align__(16) unsigned char xt_smem[];
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31;
    const int nkt = (k + 127) / 128, ngr = (n + 127) / 128;
    const auto [sbase, full, empty, stages] = tma_ring_setup<S, SB>(xt_smem);

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x >= 32) return;
        int it = 0;
        for (long long t = blockIdx.x; t < total; t += gridDim.x, it = xe_ring_next(it, nkt, S)) {
            int ti, c;
            xe_walk(t, nt, cols, rg, ti, c);
            const int j0 = c * (128 * NH), e = tiles[2 * ti], s0 = tiles[2 * ti + 1];
            const memra_tmap *map_w = maps + e;
            if (lane == 0) memra_tmap_acquire(map_w); /* written by experts_maps (common/tile.cuh) */
            const float *const grow = reinterpret_cast<const float *>(gtab[e]) + (long long)(j0 / 128) * nkt;
            if constexpr (TALL)
                tma_produce_tall<S, SB>(&map_x, map_w, xs, s0, j0, m, nkt, sbase, stages, full, empty, lane, grow, ngr,
                                        it);
            else
                tma_produce<NH, S, SB, 0, GS, false, L2>(&map_x, map_w, xs, s0, j0, m, nkt, 0, sbase, stages, full,
                                                         empty, lane, grow, nkt, ngr, it);
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int ct = threadIdx.x - 128; /* 0..255: the consumers */
    const int r0 = (ct >> 7) * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2);
    float acc[RB][NHA][64];
    /* every even column of y 8-byte aligned: the stores two columns at a time */
    const bool v2 = (ldy & 1) == 0 && (reinterpret_cast<unsigned long long>(y) & 7) == 0;
    int it = 0;
    long long t = blockIdx.x;
    int ti, col;
    xe_walk(t, nt, cols, rg, ti, col);
    int e = tiles[2 * ti], s0 = tiles[2 * ti + 1], end = offsets[e + 1];
    while (true) {
        const int j0 = col * (128 * NH);
        /* the warpgroup's 128-row blocks holding rows of the expert (rows fill them in order) */
        const int nrb = TALL && s0 + 128 + (ct >> 7) * 64 < end ? 2 : s0 + (ct >> 7) * 64 < end ? 1 : 0;
        /* (HALF) rows only in the first 64: both warpgroups, a column half each (tma_consume_half) */
        const bool hf = HALF && end - s0 <= 64;
        if constexpr (TALL) {
            if (nrb == 2)
                tma_consume_tall<2, S, SB>(acc, nkt, sbase, stages, full, empty, ct, lane, it);
            else if (nrb == 1)
                tma_consume_tall<1, S, SB>(acc, nkt, sbase, stages, full, empty, ct, lane, it);
            else
                tma_consume_tall<0, S, SB>(acc, nkt, sbase, stages, full, empty, ct, lane, it);
        } else {
            const float *const grow = reinterpret_cast<const float *>(gtab[e]) + (long long)(j0 / 128) * nkt;
            if (hf)
                tma_consume_half<S, SB, GS>(acc[0][0], grow, nkt, nkt, ngr, j0, sbase, stages, full, empty, ct, lane,
                                            it);
            else
                tma_consume<NH, S, SB, GS>(acc[0], grow, nkt, nkt, ngr, j0, sbase, stages, full, empty, ct, lane,
                                           nrb > 0, it);
        }
        /* the next tile's expert and rows read before this tile's stores, off the path between tiles */
        const int s_now = s0, end_now = end;
        t += gridDim.x;
        it = xe_ring_next(it, nkt, S);
        if (t < total) {
            xe_walk(t, nt, cols, rg, ti, col);
            e = tiles[2 * ti];
            s0 = tiles[2 * ti + 1];
            end = offsets[e + 1];
        }
        if (hf) { /* warpgroup h's column half of rows 0 .. 63 */
            const int h = ct >> 7, rh = ((ct >> 5) & 3) * 16 + (lane >> 2);
            const float(&ah)[1][64] = reinterpret_cast<const float(&)[1][64]>(acc[0][0]);
            if (v2)
                xe_tma_store<1, false, true>(ah, y, nullptr, perm, s_now + rh, end_now, j0 + 128 * h, n, ldy, alpha,
                                             lane);
            else
                xe_tma_store<1, false>(ah, y, nullptr, perm, s_now + rh, end_now, j0 + 128 * h, n, ldy, alpha, lane);
            if (t >= total) break;
            continue;
        }
#pragma unroll
        for (int rb = 0; rb < RB; rb++) {
            if (rb < nrb && v2)
                xe_tma_store<NHA, false, true>(acc[rb], y, nullptr, perm, s_now + rb * 128 + r0, end_now, j0, n, ldy,
                                               alpha, lane);
            else if (rb < nrb)
                xe_tma_store<NHA, false>(acc[rb], y, nullptr, perm, s_now + rb * 128 + r0, end_now, j0, n, ldy, alpha,
                                         lane);
        }
        if (t >= total) break;
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8blk_experts_sum(const float *__restrict__ part, int S, int m, int n, const int *__restrict__ offsets, int E,
                           const int *__restrict__ perm, float *__restrict__ y, long long ldy, float alpha)
{
    const int rows = offsets[E];
    const long long plane = (long long)m * n;
    for (int s = blockIdx.y; s < rows; s += gridDim.y) {
        const float *p = part + (long long)s * n;
        float *o = y + (long long)perm[s] * ldy;
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n; c += gridDim.x * blockDim.x) {
            float v = p[c];
            for (int z = 1; z < S; z++) v += p[z * plane + c];
            o[c] = alpha * v;
        }
    }
}

/* the weight's column tiles 256 wide (NH = 2, the dense kernel's) or 128 (NH = 1: twice the CTAs
 * of half the work, chosen per call where the 256-wide grid is under four CTAs an SM, e.g. the
 * Mixtral-like down rows at m = 512, run y1: 7% faster there; MEMRA_FP8BLK_XE_N128=1 always) */
#define XE_TMA_ENTRY(NAME, NH, SPLIT, PF, GS, PIPE)                                                                            \
    extern "C" __global__ void __launch_bounds__(FP8BLK_TMA_THREADS, 1)                                            \
        NAME(const __grid_constant__ memra_tmap map_x, const memra_tmap *__restrict__ maps,                         \
             const unsigned long long *__restrict__ gtab, const float *__restrict__ xs,                             \
             const int *__restrict__ offsets, const int *__restrict__ perm, const int *__restrict__ tiles,          \
             const int *__restrict__ ntiles, float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, \
             float *__restrict__ part)                                                                              \
    {                                                                                                              \
        experts_tma_body<NH, SPLIT, PF, GS, PIPE>(map_x, maps, gtab, xs, offsets, perm, tiles, ntiles, y, m, n, k, ldy, alpha, part); \
    }
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma, 2, false, 0, false, false)
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma_n128, 1, false, 0, false, false)
/* MEMRA_FP8BLK_XE_SPLIT=S (opt-in): the 256-wide tile on gridDim.z = S k slices, into part */
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma_split, 2, true, 0, false, false)
/* MEMRA_FP8BLK_XE_PF=4|8 (opt-in; run x3: loses): the 256-wide tile with the weight's L2 prefetch PF blocks ahead */
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma_pf4, 2, false, 4, false, false)
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma_pf8, 2, false, 8, false, false)
/* the default 256-wide tile (MEMRA_FP8BLK_XE_GS=0: the one above): the weight grid's scales copied
 * into each stage by the producer (after the x scales), so the consumers' fold reads no global
 * memory (run y1: 3% shorter launches) */
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma_gs, 2, false, 0, true, false)
/* MEMRA_FP8BLK_XE_PIPE=1 (opt-in; run y1: loses, 0.63-0.68 of dense at m = 512, 0.67-0.73 at 4096): the 128-wide tile (6 stages) with the pipelined consumer
 * (tma_consume_pipe: block kb + 1's wgmmas run during block kb's fold), the grid's scales through
 * the stages */
XE_TMA_ENTRY(memra_k_fp8blk_experts_tma_n128p, 1, false, 0, true, true)
#undef XE_TMA_ENTRY
/* the persistent tiles (the default; MEMRA_FP8BLK_XE_PERSIST=0 off), 256 wide (_gsp) and 128 wide
 * (_n128gp), both with the grid's scales through the stages; the same arguments (part unused) and rg, the
 * raster's group of table tiles (0: the plain walk; xe_walk).
 * MEMRA_FP8BLK_XE_L2=1|2 (opt-in): the same tiles with L2 eviction priorities on their copies
 * (_gsph1 / _n128gph1: the x rows evict_last, the weight evict_first; _h2: the x rows evict_last) */
#define XE_TMA_PENTRY(NAME, NH, L2, HALF)                                                                         \
    extern "C" __global__ void __launch_bounds__(FP8BLK_TMA_THREADS, 1)                                            \
        NAME(const __grid_constant__ memra_tmap map_x, const memra_tmap *__restrict__ maps,                         \
             const unsigned long long *__restrict__ gtab, const float *__restrict__ xs,                             \
             const int *__restrict__ offsets, const int *__restrict__ perm, const int *__restrict__ tiles,          \
             const int *__restrict__ ntiles, float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, \
             float *__restrict__ part, int rg)                                                                      \
    {                                                                                                              \
        (void)part;                                                                                                \
        experts_tma_persist<NH, true, L2, false, HALF>(map_x, maps, gtab, xs, offsets, perm, tiles, ntiles, y, m, n, \
                                                       k, ldy, alpha, rg);                                         \
    }
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_gsp, 2, 0, false)
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_n128gp, 1, 0, false)
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_gsph1, 2, 1, false)
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_n128gph1, 1, 1, false)
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_gsph2, 2, 2, false)
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_n128gph2, 1, 2, false)
/* MEMRA_FP8BLK_XE_HALF=1 (opt-in): _gsp whose tiles of at most 64 rows run on both consumer warpgroups, a column half
 * each (tma_consume_half); outputs bit for bit _gsp's */
XE_TMA_PENTRY(memra_k_fp8blk_experts_tma_gsp_half, 2, 0, true)
#undef XE_TMA_PENTRY
/* MEMRA_FP8BLK_XE_TALL=1 (opt-in): the 256 x 128 persistent tile on the 256-row table (map_x's
 * box 256 rows, the weights' 128); the same arguments (part unused) */
extern "C" __global__ void __launch_bounds__(FP8BLK_TMA_THREADS, 1)
memra_k_fp8blk_experts_tma_tall(const __grid_constant__ memra_tmap map_x, const memra_tmap *__restrict__ maps,
                                const unsigned long long *__restrict__ gtab, const float *__restrict__ xs,
                                const int *__restrict__ offsets, const int *__restrict__ perm,
                                const int *__restrict__ tiles, const int *__restrict__ ntiles, float *__restrict__ y,
                                int m, int n, int k, long long ldy, float alpha, float *__restrict__ part, int rg)
{
    (void)part, (void)rg; /* the tall tile keeps the plain walk (its launcher passes 0) */
    experts_tma_persist<1, true, 0, true>(map_x, maps, gtab, xs, offsets, perm, tiles, ntiles, y, m, n, k, ldy, alpha,
                                          0);
}
#endif
