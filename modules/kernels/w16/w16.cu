/* The w16 family's kernels (sm_90a only): gemm_w16's tile on the W16 operand (w16_tile.cuh) per format and
 * token tile, the activations' pass into the f16 tiles, and split-k's sum. Entry points:
 *   memra_k_w16_<fmt>_n<BN>  fmt q8_0, q4_0, q4_k, q5_k, q6_k; BN 256 or 128 (grid: ceil(m / BN) x row tiles x slices)
 *   memra_k_w16_x16          x f32 [m][k] -> the BN-token f16 tiles (one 16-byte chunk a thread)
 *   memra_k_w16_x16h         x f16 [m][k] (x_is_f16) -> the same tiles, moved
 *   memra_k_w16_sum          the slices' partial sums -> y (one output a thread)
 * and gemm_experts on lane gemm_w16 (the grouped tile):
 *   memra_k_w16_route        one block: rows counted per expert, offsets, permutation, the table of BN-token tiles
 *                            (common/route.cuh)
 *   memra_k_w16_x16g         the routed rows of x (f32, or f16) into the table's f16 token tiles
 *   memra_k_w16_xe_<fmt>_n<BN> the tile over the table (grid: the table's worst case x row tiles x slices, or
 *                            with rg > 0 the product of the two on x, walked in groups of rg token tiles), each
 *                            output row scattered to y[perm[s]]; BN 256, 160 (experts of 129-160 rows: one
 *                            m64n160 tile where 128 takes two), 128 or 64 (two CTAs an SM)
 *   memra_k_w16_sumg         split-k's sum, scattered likewise */
#include "w16_tile.cuh"
#include "../common/route.cuh"

/* w16_ops.c's launch sizes (W16_SMEM_BYTES, W16_SMEM_N64, W16_SMEM_N160) */
static_assert(w16_smem<256>() == 4 * 41472 + 1024 && w16_smem<128>() <= w16_smem<256>(), "w16_ops.c W16_SMEM_BYTES");
static_assert(w16_smem<64>() == 4 * 16896 + 1024, "w16_ops.c W16_SMEM_N64");
static_assert(w16_smem<160>() == 4 * 29184 + 1024, "w16_ops.c W16_SMEM_N160");

/* the routing kernel's shared counters: at most W16_XE_MAX experts */
#define W16_XE_MAX 4096

#define W16_ENTRY(fmt, QB, BN)                                                                                      \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                          \
        memra_k_w16_##fmt##_n##BN(const unsigned char *__restrict__ codes, const unsigned short *__restrict__ scales,  \
                                  const uint32_t *__restrict__ ddp, const __half *__restrict__ x16,                  \
                                  float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,            \
                                  float *__restrict__ part)                                                          \
    {                                                                                                               \
        w16_tile<QB, BN>(codes, scales, ddp, x16, y, m, n, k, ldy, alpha, part);                                    \
    }
W16_ENTRY(q8_0, 8, 256)
W16_ENTRY(q4_0, 4, 256)
W16_ENTRY(q4_k, 5, 256)
W16_ENTRY(q5_k, 7, 256)
W16_ENTRY(q6_k, 6, 256)
W16_ENTRY(q8_0, 8, 128)
W16_ENTRY(q4_0, 4, 128)
W16_ENTRY(q4_k, 5, 128)
W16_ENTRY(q5_k, 7, 128)
W16_ENTRY(q6_k, 6, 128)

#define W16_XE_ENTRY(fmt, QB, BN)                                                                                   \
    extern "C" __global__ void __launch_bounds__(384, W16<QB, BN>::CTAS)                                          \
        memra_k_w16_xe_##fmt##_n##BN(const __half *__restrict__ x16, float *__restrict__ y, int m, int n, int k,   \
                                     long long ldy, float alpha, float *__restrict__ part, const w16_xe xe,      \
                                     int rg)                                                                      \
    {                                                                                                               \
        w16_tile<QB, BN, true>(nullptr, nullptr, nullptr, x16, y, m, n, k, ldy, alpha, part, xe, rg);               \
    }
W16_XE_ENTRY(q8_0, 8, 256)
W16_XE_ENTRY(q4_0, 4, 256)
W16_XE_ENTRY(q4_k, 5, 256)
W16_XE_ENTRY(q5_k, 7, 256)
W16_XE_ENTRY(q6_k, 6, 256)
W16_XE_ENTRY(q8_0, 8, 128)
W16_XE_ENTRY(q4_0, 4, 128)
W16_XE_ENTRY(q4_k, 5, 128)
W16_XE_ENTRY(q5_k, 7, 128)
W16_XE_ENTRY(q6_k, 6, 128)
W16_XE_ENTRY(q8_0, 8, 160)
W16_XE_ENTRY(q4_0, 4, 160)
W16_XE_ENTRY(q4_k, 5, 160)
W16_XE_ENTRY(q5_k, 7, 160)
W16_XE_ENTRY(q6_k, 6, 160)
/* MEMRA_W16_XE_FIT=1: the 160-token tile whose wgmmas take 64, 128 or 160 tokens by the tile's valid rows */
#define W16_XE_FIT_ENTRY(fmt, QB)                                                                                   \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                          \
        memra_k_w16_xe_##fmt##_n160f(const __half *__restrict__ x16, float *__restrict__ y, int m, int n, int k,   \
                                     long long ldy, float alpha, float *__restrict__ part, const w16_xe xe,      \
                                     int rg)                                                                      \
    {                                                                                                               \
        w16_tile<QB, 160, true, true>(nullptr, nullptr, nullptr, x16, y, m, n, k, ldy, alpha, part, xe, rg);       \
    }
W16_XE_FIT_ENTRY(q8_0, 8)
W16_XE_FIT_ENTRY(q4_0, 4)
W16_XE_FIT_ENTRY(q4_k, 5)
W16_XE_FIT_ENTRY(q5_k, 7)
W16_XE_FIT_ENTRY(q6_k, 6)
W16_XE_ENTRY(q8_0, 8, 64)
W16_XE_ENTRY(q4_0, 4, 64)
W16_XE_ENTRY(q4_k, 5, 64)
W16_XE_ENTRY(q5_k, 7, 64)
W16_XE_ENTRY(q6_k, 6, 64)

/* ids [m] -> the routing (w16_xe's arrays) with BN-token tiles; E <= W16_XE_MAX */
extern "C" __global__ void __launch_bounds__(1024)
    memra_k_w16_route(const int *__restrict__ ids, int m, int E, int bn, int *__restrict__ offsets,
                      int *__restrict__ perm, int *__restrict__ tiles, int *__restrict__ ntiles)
{
    __shared__ int cnt[W16_XE_MAX];
    __shared__ int fill[W16_XE_MAX];
    memra_route_experts(ids, m, E, bn, 0, 0, offsets, perm, tiles, ntiles, nullptr, nullptr, cnt, fill);
}

extern "C" __global__ void __launch_bounds__(256)
    memra_k_w16_x16g(const float *__restrict__ x, const __half *__restrict__ xh, __half *__restrict__ x16, int k, int T,
                     int bn, int al, const w16_xe xe)
{
    w16_x16g((long long)blockIdx.x * blockDim.x + threadIdx.x, x, xh, x16, k, T, bn, al, xe);
}

extern "C" __global__ void __launch_bounds__(256)
    memra_k_w16_sumg(const float *__restrict__ part, float *__restrict__ y, int m, int n, long long ldy, int z,
                     float alpha, int E, const w16_xe xe)
{
    w16_sumg((long long)blockIdx.x * blockDim.x + threadIdx.x, part, y, m, n, ldy, z, alpha, E, xe);
}

extern "C" __global__ void __launch_bounds__(256)
    memra_k_w16_x16(const float *__restrict__ x, __half *__restrict__ x16, int m, int k, int mp, int bn)
{
    w16_x16((long long)blockIdx.x * blockDim.x + threadIdx.x, x, x16, m, k, mp, bn);
}

extern "C" __global__ void __launch_bounds__(256)
    memra_k_w16_x16h(const __half *__restrict__ xh, __half *__restrict__ x16, int m, int k, int mp, int bn)
{
    w16_x16((long long)blockIdx.x * blockDim.x + threadIdx.x, nullptr, x16, m, k, mp, bn, xh);
}

extern "C" __global__ void __launch_bounds__(256)
    memra_k_w16_sum(const float *__restrict__ part, float *__restrict__ y, int m, int n, long long ldy, int z, float alpha)
{
    w16_sum((long long)blockIdx.x * blockDim.x + threadIdx.x, part, y, m, n, ldy, z, alpha);
}
