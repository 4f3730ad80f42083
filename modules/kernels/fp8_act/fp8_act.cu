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
 * Per-batch, fused (the default; MEMRA_FP8_QUANT=2pass selects the two kernels
 * above), one cooperative launch:
 *   memra_k_quant_e4m3_fused  each thread loads its share of x into registers
 *                             (MEMRA_FUSED_V float4 each, at index t + i * S for
 *                             S threads in the grid; what does not fit is re-read
 *                             after the barrier, from L2 when it still lies there),
 *                             each block publishes its amax at partial[block], one
 *                             grid barrier, then every block reduces the same
 *                             partials (the same sx everywhere), block 0 writes
 *                             scales[0..1] and every thread quantises the values it
 *                             holds. x is read from device memory once.
 *                             Launched with cuLaunchCooperativeKernel and at most
 *                             the co-resident number of blocks (queried at create).
 *   Grid barrier (memra_grid_barrier): one word, `bar`, a scratch block of its own
 *   (a word per stream's arena, so concurrent launches on several streams never
 *   share one), zero-filled by the core when the block is new (scratch_get_zeroed)
 *   and from then on kept by the kernel alone: no memset per launch. Thread 0
 *   of each block adds 1, except block 0, which adds
 *   2^31 - (G - 1); the G arrivals add exactly 2^31 in all, so bit 31 flips once
 *   every block has arrived and the low 31 bits come back to 0. Invariant
 *   between launches: low 31 bits 0. While some block has not arrived, the sum
 *   added is k or 2^31 - (G - 1) + k for k <= G - 2, both below 2^31, so no carry
 *   reaches bit 31 early; a block waits until bit 31 differs from the value its
 *   own atomicAdd returned. Each launch leaves the word as it needs it for the
 *   next, whatever G the next launch has. (This is
 *   the scheme of cooperative_groups' grid sync.) Fences: __threadfence before
 *   the arrival (the partial is visible before the count) and after the wait
 *   (acquire), the partials then read with ld.global.cg. Limits: one launch at a
 *   time per word (the arena's rule gives that); a kernel killed inside the barrier leaves the word wrong, but
 *   such a fault also kills the context.
 *   Division: q = x / sx must equal __fdiv_rn(x, sx). With y = __frcp_rn(sx) (the
 *   IEEE reciprocal, once per thread), q0 = RN(x * y), r = fma(-q0, sx, x) (exact)
 *   and q = fma(r, y, q0) is the correctly rounded quotient (Markstein's
 *   correction, the same sequence as the fast path of div.rn.f32 with a correctly
 *   rounded reciprocal) wherever nothing under- or overflows; the sequence is
 *   scale invariant there, so it was also checked on the CPU (IEEE x / s, fmaf)
 *   for all 2^23 x mantissas against 30 000 sx mantissas: no mismatch. It is used
 *   only when 2^-96 <= sx <= 2^96 (else y = 0, which fails the next test) and
 *   |x| >= 2^-96 and |q0| >= 2^-96 (zeros, NaN, tiny values and tiny quotients
 *   take __fdiv_rn itself), so every intermediate is a normal float.
 * Per row per 128 columns (gemm_fp8_blk), one launch, no global reduction:
 *   memra_k_quant_e4m3_row128 one warp per (row, 128-column block): s = amax / 448
 *                             (1 when 0), q = e4m3(x / s); s is stored at
 *                             scales[blk * ld_s + row], the layout of cuBLASLt's
 *                             VEC128_32F scale (outer dimension fastest). Rows
 *                             m .. m_pad-1 (padding for cuBLASLt) get q = 0, s = 1.
 * Given scales (memra_gemm_args.x_amax, else x_scale; DESIGN.md, "Activation
 * scales"), one pass, no reduction and no barrier:
 *   memra_k_quant_e4m3_given  per batch: sx = amax > 0 ? amax / 448 : 1 from the
 *                             producer's *amax (one f32 on the device), else the
 *                             static s_static; block 0 writes scales[0..1] as
 *                             above, every thread quantises its grid-stride share
 *                             q = e4m3(x / sx) (memra_div_y: __fdiv_rn's bits;
 *                             values above 448 sx saturate).
 *   memra_k_quant_e4m3_row128_given  per row per 128 (memra_row128_quant_given):
 *                             the producer's maxima at amax[blk * m + row], else
 *                             s_static for every block; scales as row128's.
 * Weight grid padding for cuBLASLt's BLK128x128_32F (ld a multiple of 4):
 *   memra_k_grid_pad          dst[r * ld_dst + c] = src[r * cols + c], 1.0 in the pad.
 *
 * Preconditions (checked by the C launchers): amax_partial runs with 256
 * threads and at most 1024 blocks; quant_e4m3_tensor with 256 threads;
 * quant_e4m3_fused with 256 threads, co-resident blocks (cooperative launch),
 * n a multiple of 4, x 16-byte and q 4-byte aligned, G floats at partial;
 * quant_e4m3_row128 with 256 threads (8 warps), k a multiple of 4 and x 16-byte
 * aligned (each lane reads one float4); q is 4-byte aligned for the tensor
 * kernel's 4-value stores (else it stores bytes). NaN inputs: the amax ignores
 * them (fmaxf), as the host does, and they encode to 0x7F.
 */
#include "../common/e4m3.cuh"

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

/* ---- fused per-batch quantiser ------------------------------------------------ */


__device__ __forceinline__ unsigned int memra_ld_acquire_gpu(const unsigned int *p)
{
    unsigned int v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* All blocks of the (co-resident) grid meet here; see the header for why the
 * one word stays right across launches and graph replays. */
__device__ __forceinline__ void memra_grid_barrier(unsigned int *bar)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned int add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1u) : 1u;
        __threadfence();
        const unsigned int old = atomicAdd(bar, add);
        while (((old ^ memra_ld_acquire_gpu(bar)) & 0x80000000u) == 0) __nanosleep(32);
        __threadfence();
    }
    __syncthreads();
}

__device__ __forceinline__ unsigned int memra_pack4_y(float4 v, float s, float y)
{
    return memra_e4m3_pack4f(memra_div4_y(v, s, y));
}

__device__ __forceinline__ float memra_amax4(float m, float4 v)
{
    return fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
}

#define MEMRA_FUSED_V 8 /* float4 per thread held in registers across the barrier */
#define MEMRA_FUSED_U 4 /* float4 per thread in flight per step of the re-read tail */

extern "C" __global__ void __launch_bounds__(256, 3)
memra_k_quant_e4m3_fused(const float *__restrict__ x, long long n, float w_scale, float *__restrict__ scales,
                         float *partial, unsigned char *__restrict__ q, unsigned int *bar)
{
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    unsigned int *q4 = reinterpret_cast<unsigned int *>(q);
    const long long n4 = n / 4; /* n % 4 == 0 (checked by the launcher) */
    const long long S = (long long)gridDim.x * blockDim.x;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long tail = t + MEMRA_FUSED_V * S; /* first index past the registers */

    float4 v[MEMRA_FUSED_V];
#pragma unroll
    for (int i = 0; i < MEMRA_FUSED_V; i++)
        v[i] = t + i * S < n4 ? x4[t + i * S] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < MEMRA_FUSED_V; i++) m = memra_amax4(m, v[i]);
    for (long long j = tail; j < n4; j += MEMRA_FUSED_U * S) {
        float4 w[MEMRA_FUSED_U];
#pragma unroll
        for (int u = 0; u < MEMRA_FUSED_U; u++)
            w[u] = j + u * S < n4 ? x4[j + u * S] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int u = 0; u < MEMRA_FUSED_U; u++) m = memra_amax4(m, w[u]);
    }
    m = memra_block_max(m);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;

    memra_grid_barrier(bar);

    m = 0.0f;
    for (int i = threadIdx.x; i < (int)gridDim.x; i += blockDim.x) m = fmaxf(m, __ldcg(partial + i));
    const float amax = memra_block_max(m);
    const float sx = amax > 0.0f ? __fdiv_rn(amax, 448.0f) : 1.0f;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        scales[0] = __fmul_rn(sx, w_scale);
        scales[1] = sx;
    }
    const float y = sx >= 0x1p-96f && sx <= 0x1p96f ? __frcp_rn(sx) : 0.0f;
#pragma unroll
    for (int i = 0; i < MEMRA_FUSED_V; i++)
        if (t + i * S < n4) q4[t + i * S] = memra_pack4_y(v[i], sx, y);
    for (long long j = tail; j < n4; j += MEMRA_FUSED_U * S) {
        float4 w[MEMRA_FUSED_U];
#pragma unroll
        for (int u = 0; u < MEMRA_FUSED_U; u++)
            w[u] = j + u * S < n4 ? x4[j + u * S] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int u = 0; u < MEMRA_FUSED_U; u++)
            if (j + u * S < n4) q4[j + u * S] = memra_pack4_y(w[u], sx, y);
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_e4m3_row128(const float *__restrict__ x, int m, int m_pad, int k, unsigned char *__restrict__ q,
                          float *__restrict__ scales, int ld_s)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    memra_row128_quant(x, m, m_pad, k, q, scales, ld_s, warp * MEMRA_ROW128_U);
}

/* ---- one-pass quantisers at a given scale --------------------------------------- */

extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_e4m3_given(const float *__restrict__ x, long long n, const float *__restrict__ amax, float s_static,
                         float w_scale, float *__restrict__ scales, unsigned char *__restrict__ q)
{
    float sx = s_static;
    if (amax != nullptr) {
        const float a = __ldg(amax);
        sx = a > 0.0f ? __fdiv_rn(a, 448.0f) : 1.0f;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        scales[0] = __fmul_rn(sx, w_scale);
        scales[1] = sx;
    }
    const float y = sx >= 0x1p-96f && sx <= 0x1p96f ? __frcp_rn(sx) : 0.0f;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    if (((unsigned long long)x & 15u) == 0 && ((unsigned long long)q & 3u) == 0) {
        const long long n4 = n / 4;
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        unsigned int *q4 = reinterpret_cast<unsigned int *>(q);
        for (long long j = i; j < n4; j += stride) q4[j] = memra_pack4_y(__ldcs(x4 + j), sx, y);
        for (long long j = n4 * 4 + i; j < n; j += stride)
            q[j] = (unsigned char)memra_e4m3_encode_sel(memra_div_y(x[j], sx, y));
    } else {
        for (long long j = i; j < n; j += stride) q[j] = (unsigned char)memra_e4m3_encode_sel(memra_div_y(x[j], sx, y));
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_e4m3_row128_given(const float *__restrict__ x, int m, int m_pad, int k, unsigned char *__restrict__ q,
                                float *__restrict__ scales, int ld_s, const float *__restrict__ amax, float s_static)
{
    const long long warp = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    memra_row128_quant_given(x, m, m_pad, k, q, scales, ld_s, warp * MEMRA_ROW128_U, amax, m, s_static);
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
