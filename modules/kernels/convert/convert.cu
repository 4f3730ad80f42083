/* Element-wise kernels of the GPU modules (compiled ahead of time to cubins
 * for sm_90a and sm_120a, launched from C with cuLaunchKernel).
 *
 *   memra_k_cvt_f32_f16   dst[i] = f16(src[i]), round to nearest even
 *                         (__float2half_rn): the cvt_f16 op and the in-stream
 *                         activation convert of gemm_f16.
 *   memra_k_cvt_f32_bf16  dst[i] = bf16(src[i]), round to nearest even
 *                         (__float2bfloat16_rn): gemm_bf16's in-stream
 *                         activation convert.
 *   memra_k_scale_f32     y[i] *= s (one IEEE multiply): the scale op.
 *   memra_k_copy_rows_f32 dst[r * ldd + c] = src[r * n + c] for r < m, c < n:
 *                         moves a GEMM result computed into padded scratch to
 *                         its place in y (row offset and row stride ldd).
 *
 * Preconditions (checked by the C launchers): n >= 0; grids are grid-stride, so
 * any grid size is correct. The float4 paths run only when the pointers allow
 * 16-byte (src, after peeling up to 3 leading elements in cvt) and 8-byte (f16
 * dst) accesses; otherwise the scalar loop runs.
 * Compiled with -fmad=false: no product is ever fused into an add.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* cvt: chunks of CVT_U x 256 float4 per block; every thread issues its CVT_U
 * 16-byte loads (each a coalesced 512-byte warp access) before converting, then
 * CVT_U 8-byte stores. Before the chunks, the first 0..3 elements are peeled so
 * that the float4 loads are 16-byte aligned; the vector path runs when the
 * destination is then 8-byte aligned too (otherwise: the scalar loop). The
 * launcher sizes the grid to the chunks, at most the resident blocks; any grid
 * is correct. Registers: 32 on sm_90 (8 blocks of 256 resident per SM), 48 on
 * sm_120 (5 blocks; its compiler wants more for the same code). */
#include "convert.h"
#if defined(__CUDA_ARCH__)
#define CVT_MIN_BLOCKS CVT_MIN_BLOCKS_OF(__CUDA_ARCH__ / 10)
#else
#define CVT_MIN_BLOCKS 8
#endif

__device__ __forceinline__ uint2 memra_cvt4(float4 v)
{
    __half2 lo = __halves2half2(__float2half_rn(v.x), __float2half_rn(v.y));
    __half2 hi = __halves2half2(__float2half_rn(v.z), __float2half_rn(v.w));
    uint2 o;
    o.x = *reinterpret_cast<unsigned int *>(&lo);
    o.y = *reinterpret_cast<unsigned int *>(&hi);
    return o;
}

extern "C" __global__ void __launch_bounds__(256, CVT_MIN_BLOCKS)
memra_k_cvt_f32_f16(const float *__restrict__ src, __half *__restrict__ dst, long long n)
{
    const int tid = threadIdx.x;
    const long long stride = (long long)gridDim.x * 256;
    const unsigned long long sa = (unsigned long long)src;
    long long head = (long long)(((16u - (sa & 15u)) & 15u) >> 2); /* floats before a 16-byte boundary */
    if (head > n) head = n;
    if ((sa & 3u) == 0 && (((unsigned long long)(dst + head)) & 7u) == 0) {
        if (blockIdx.x == 0 && tid < head) dst[tid] = __float2half_rn(src[tid]);
        const float4 *s4 = reinterpret_cast<const float4 *>(src + head);
        uint2 *d4 = reinterpret_cast<uint2 *>(dst + head);
        const long long n4 = (n - head) / 4;
        const long long nchunks = n4 / (CVT_U * 256);
        for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
            const long long base = c * (CVT_U * 256) + tid;
            float4 v[CVT_U];
#pragma unroll
            for (int k = 0; k < CVT_U; k++) v[k] = __ldg(s4 + base + k * 256);
#pragma unroll
            for (int k = 0; k < CVT_U; k++) d4[base + k * 256] = memra_cvt4(v[k]);
        }
        for (long long j = nchunks * (CVT_U * 256) + (long long)blockIdx.x * 256 + tid; j < n4; j += stride)
            d4[j] = memra_cvt4(__ldg(s4 + j));
        for (long long j = head + n4 * 4 + (long long)blockIdx.x * 256 + tid; j < n; j += stride)
            dst[j] = __float2half_rn(src[j]);
    } else {
        for (long long j = (long long)blockIdx.x * 256 + tid; j < n; j += stride) dst[j] = __float2half_rn(src[j]);
    }
}

/* gemm_bf16's activation: one element per thread, grid-stride (the GEMM that
 * follows dominates; the convert reads 4 bytes and writes 2 per element). */
extern "C" __global__ void __launch_bounds__(256)
memra_k_cvt_f32_bf16(const float *__restrict__ src, __nv_bfloat16 *__restrict__ dst, long long n)
{
    const long long stride = (long long)gridDim.x * 256;
    for (long long j = (long long)blockIdx.x * 256 + threadIdx.x; j < n; j += stride)
        dst[j] = __float2bfloat16_rn(__ldg(src + j));
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_scale_f32(float *__restrict__ y, long long n, float s)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (((unsigned long long)y & 15u) == 0) {
        const long long n4 = n / 4;
        float4 *y4 = reinterpret_cast<float4 *>(y);
        for (long long j = i; j < n4; j += stride) {
            float4 v = y4[j];
            v.x = __fmul_rn(v.x, s);
            v.y = __fmul_rn(v.y, s);
            v.z = __fmul_rn(v.z, s);
            v.w = __fmul_rn(v.w, s);
            y4[j] = v;
        }
        for (long long j = n4 * 4 + i; j < n; j += stride) y[j] = __fmul_rn(y[j], s);
    } else {
        for (long long j = i; j < n; j += stride) y[j] = __fmul_rn(y[j], s);
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_copy_rows_f32(const float *__restrict__ src, float *__restrict__ dst, int m, int n, long long ldd)
{
    const long long total = (long long)m * n;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const long long r = i / n, c = i - r * n;
        dst[r * ldd + c] = src[i];
    }
}
