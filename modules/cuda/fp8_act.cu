/* Activation quantisers for the FP8 GEMM lanes, bit-identical to the host
 * module's quantisers: the same amax (a max is exact in any order), the same
 * IEEE division for the scale and for x / s (__fdiv_rn), the same e4m3
 * encoder (e4m3.cuh: round to nearest even, saturate to +-448).
 *
 * Per-batch (gemm_fp8), two launches and no value back to the host:
 *   memra_k_amax_partial      partial[block] = max |x| over a grid-stride share of
 *                             the n = m * k values.
 *   memra_k_quant_e4m3_tensor every block reduces the same partials (so all agree
 *                             on one sx = amax / 448, 1 when amax == 0), block 0
 *                             writes scales[0] = sx * w_scale (the folded scale
 *                             cuBLASLt reads by pointer: keep `scales` 16-byte
 *                             aligned) and scales[1] = sx, and q[i] = e4m3(x[i] / sx).
 * Per row per 128 columns (gemm_fp8_blk), one launch, no global reduction:
 *   memra_k_quant_e4m3_row128 one warp per (row, 128-column block): s = amax / 448
 *                             (1 when 0), q = e4m3(x / s); s is stored at
 *                             scales[blk * ld_s + row], the layout of cuBLASLt's
 *                             VEC128_32F scale (outer dimension fastest). Rows
 *                             m .. m_pad-1 (padding for cuBLASLt) get q = 0, s = 1.
 * Weight grid padding for cuBLASLt's BLK128x128_32F (ld a multiple of 4):
 *   memra_k_grid_pad          dst[r * ld_dst + c] = src[r * cols + c], 1.0 in the pad.
 *
 * Preconditions (checked by the C launchers): amax_partial runs with 256
 * threads and at most 1024 blocks; quant_e4m3_tensor with 256 threads;
 * quant_e4m3_row128 with 256 threads (8 warps), k a multiple of 4 and x 16-byte
 * aligned (each lane reads one float4); q is 4-byte aligned for the tensor
 * kernel's 4-value stores (else it stores bytes). NaN inputs: the amax ignores
 * them (fmaxf), as the host does, and they encode to 0x7F.
 */
#include "e4m3.cuh"

__device__ __forceinline__ float memra_warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
    return v;
}

/* Max over the block (blockDim.x a multiple of 32, at most 1024); every thread
 * gets the result. */
__device__ __forceinline__ float memra_block_max(float v)
{
    __shared__ float red[32];
    v = memra_warp_max(v);
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    __syncthreads(); /* red may still be read by a previous call */
    if (l == 0) red[w] = v;
    __syncthreads();
    v = (l < (int)(blockDim.x >> 5)) ? red[l] : 0.0f;
    return memra_warp_max(v);
}

__device__ __forceinline__ unsigned int memra_pack4(float a, float b, float c, float d, float s)
{
    return memra_e4m3_encode(__fdiv_rn(a, s)) | (memra_e4m3_encode(__fdiv_rn(b, s)) << 8) |
           (memra_e4m3_encode(__fdiv_rn(c, s)) << 16) | (memra_e4m3_encode(__fdiv_rn(d, s)) << 24);
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_amax_partial(const float *__restrict__ x, long long n, float *__restrict__ partial)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    float m = 0.0f;
    if (((unsigned long long)x & 15u) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        for (long long j = i; j < n4; j += stride) {
            const float4 v = x4[j];
            m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
        }
        for (long long j = n4 * 4 + i; j < n; j += stride) m = fmaxf(m, fabsf(x[j]));
    } else {
        for (long long j = i; j < n; j += stride) m = fmaxf(m, fabsf(x[j]));
    }
    m = memra_block_max(m);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_e4m3_tensor(const float *__restrict__ x, long long n, const float *__restrict__ partial,
                          int n_partial, float w_scale, float *__restrict__ scales, unsigned char *__restrict__ q)
{
    float m = 0.0f;
    for (int i = threadIdx.x; i < n_partial; i += blockDim.x) m = fmaxf(m, partial[i]);
    const float amax = memra_block_max(m);
    const float sx = amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        scales[0] = __fmul_rn(sx, w_scale);
        scales[1] = sx;
    }
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (((unsigned long long)x & 15u) == 0 && ((unsigned long long)q & 3u) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        unsigned int *q4 = reinterpret_cast<unsigned int *>(q);
        for (long long j = i; j < n4; j += stride) {
            const float4 v = x4[j];
            q4[j] = memra_pack4(v.x, v.y, v.z, v.w, sx);
        }
        for (long long j = n4 * 4 + i; j < n; j += stride) q[j] = (unsigned char)memra_e4m3_encode(__fdiv_rn(x[j], sx));
    } else {
        for (long long j = i; j < n; j += stride) q[j] = (unsigned char)memra_e4m3_encode(__fdiv_rn(x[j], sx));
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_e4m3_row128(const float *__restrict__ x, int m, int m_pad, int k, unsigned char *__restrict__ q,
                          float *__restrict__ scales, int ld_s)
{
    const int kb = (k + 127) / 128;
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (warp >= (long long)m_pad * kb) return; /* whole warps leave together */
    const int row = (int)(warp / kb), blk = (int)(warp - (long long)row * kb);
    const int col = blk * 128 + lane * 4;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < m && col < k) v = *reinterpret_cast<const float4 *>(x + (long long)row * k + col);
    float a = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
    a = memra_warp_max(a);
    const float s = a > 0.0f ? __fdiv_rn(a, 448.0f) : 1.0f;
    if (col < k) *reinterpret_cast<unsigned int *>(q + (long long)row * k + col) = memra_pack4(v.x, v.y, v.z, v.w, s);
    if (lane == 0) scales[(long long)blk * ld_s + row] = s;
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_grid_pad(const float *__restrict__ src, int rows, int cols, float *__restrict__ dst, int ld_dst)
{
    const long long total = (long long)rows * ld_dst;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long r = i / ld_dst;
        const int c = (int)(i - r * ld_dst);
        dst[i] = c < cols ? src[r * cols + c] : 1.0f;
    }
}
