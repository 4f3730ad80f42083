/* Load-time kernels on FP8 weights.
 *
 *   memra_k_fp8_blk_to_q8_0  block-128 e4m3 weight + f32 grid -> Q8_0 slab, bit-
 *                            identical to the host re-encode: v = dec(w) *
 *                            grid[r / 128][c / 128] (one f32 multiply), then
 *                            GGML's Q8_0 encode of each 32 values: amax (NaN never
 *                            wins), d = amax / 127, id = d ? 1 / d : 0,
 *                            q = roundf(v * id) clamped to +-127 (NaN -> 0),
 *                            d stored as f16 (round to nearest even). One warp per
 *                            Q8_0 block, one lane per value.
 *   memra_k_fp8_nan_count    *out += number of bytes whose magnitude is 0x7F (the
 *                            e4m3 NaN codes); one 64-bit atomic per block.
 *
 * Preconditions (checked by the C launchers): cols a multiple of 32, dst
 * 2-byte aligned (a block is written as 17 16-bit words), 256 threads per
 * block for both kernels. Any alignment of w.
 */
#include <cuda_fp16.h>

#include "../common/e4m3.cuh"

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8_blk_to_q8_0(const unsigned char *__restrict__ w, const float *__restrict__ grid, long long rows,
                        long long cols, unsigned char *__restrict__ dst)
{
    const long long per_row = cols / 32;
    const long long total = rows * per_row;
    const long long gcols = (cols + 127) / 128;
    const int lane = threadIdx.x & 31;
    const long long wstride = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long b = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); b < total; b += wstride) {
        const long long r = b / per_row;
        const long long c = (b - r * per_row) * 32 + lane;
        const float g = grid[(r / 128) * gcols + c / 128];
        const float v = __fmul_rn(memra_e4m3_decode(w[r * cols + c]), g);
        float amax = fabsf(v);
        if (amax != amax) amax = 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
        const float d = __fdiv_rn(amax, 127.0f);
        const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
        float x = __fmul_rn(v, id);
        int qi = 0;
        if (x == x) {
            x = fminf(fmaxf(x, -127.0f), 127.0f);
            qi = (int)roundf(x);
        }
        /* The 34-byte block as 17 little-endian 16-bit words, one per lane 0..16:
         * word 0 is d, word j > 0 holds q[2j - 2] and q[2j - 1]. */
        const unsigned int q8 = (unsigned int)qi & 0xFFu;
        const unsigned int lo = __shfl_sync(0xFFFFFFFFu, q8, (2 * lane - 2) & 31);
        const unsigned int hi = __shfl_sync(0xFFFFFFFFu, q8, (2 * lane - 1) & 31);
        const unsigned short word =
            lane == 0 ? __half_as_ushort(__float2half_rn(d)) : (unsigned short)(lo | (hi << 8));
        if (lane <= 16) reinterpret_cast<unsigned short *>(dst + b * 34)[lane] = word;
    }
}

__device__ __forceinline__ unsigned int memra_nan_bytes(unsigned int word)
{
    /* A byte whose low 7 bits are all ones becomes 0x80 after + 1; any other
     * byte stays below 0x80, so no carry crosses bytes. */
    return __popc(((word & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u);
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_fp8_nan_count(const unsigned char *__restrict__ w, long long nbytes, unsigned long long *__restrict__ out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    unsigned long long cnt = 0;
    if (((unsigned long long)w & 15u) == 0) {
        const long long n16 = nbytes / 16;
        const uint4 *w4 = reinterpret_cast<const uint4 *>(w);
        for (long long j = i; j < n16; j += stride) {
            const uint4 v = w4[j];
            cnt += memra_nan_bytes(v.x) + memra_nan_bytes(v.y) + memra_nan_bytes(v.z) + memra_nan_bytes(v.w);
        }
        for (long long j = n16 * 16 + i; j < nbytes; j += stride) cnt += (w[j] & 0x7Fu) == 0x7Fu;
    } else {
        for (long long j = i; j < nbytes; j += stride) cnt += (w[j] & 0x7Fu) == 0x7Fu;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) cnt += __shfl_xor_sync(0xFFFFFFFFu, cnt, o);
    __shared__ unsigned long long red[8];
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = cnt;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long s = 0;
        for (int j = 0; j < (int)(blockDim.x >> 5); j++) s += red[j];
        if (s != 0) atomicAdd(out, s);
    }
}
