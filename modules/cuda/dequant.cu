/* GGML block formats -> row-major f16 (the FP16 mirror), bit-identical to the
 * host decoder (core/formats.c memra_decode_row, itself GGML's
 * dequantize_row_*): f16 scales widened exactly to f32, each value formed with
 * f32 operations in GGML's order, no fused multiply-add (explicit __fmul_rn /
 * __fsub_rn, and the file is compiled with -fmad=false), then rounded to f16
 * with __float2half_rn.
 *
 * Variants (one thread handles 8 consecutive quant bytes of one block):
 *   memra_k_dequant_q8_0  34 B / 32 values : v = q * d                     (4 threads / block)
 *   memra_k_dequant_q4_0  18 B / 32 values : v = (nibble - 8) * d          (2 threads / block)
 *   memra_k_dequant_q4_k 144 B / 256 values: v = (d*sc) * q - (dmin*m)     (16 threads / block)
 *   memra_k_dequant_q5_k 176 B / 256 values: as Q4_K with a fifth bit in qh (16 threads / block)
 *   memra_k_dequant_q6_k 210 B / 256 values: v = (d*sc) * (q - 32)         (8 threads / block)
 *
 * Rows of blocks are contiguous and the output is row-major with no padding,
 * so block b decodes to dst[b * QK ...]: the kernels see a flat list of
 * `nblocks` blocks. Preconditions (checked by the C launcher): dst is 16-byte
 * aligned (each thread stores 8 halves at once); src has any alignment (bytes
 * are read one at a time, blocks are not aligned).
 */
#include <cuda_fp16.h>

__device__ __forceinline__ float memra_f16_load(const unsigned char *p)
{
    return __half2float(__ushort_as_half((unsigned short)(p[0] | (p[1] << 8))));
}

/* 8 f32 values -> 8 f16 values in one 16-byte store. */
__device__ __forceinline__ void memra_store8(__half *dst, const float *v)
{
    uint4 o;
    unsigned int w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        __half2 h = __halves2half2(__float2half_rn(v[2 * i]), __float2half_rn(v[2 * i + 1]));
        w[i] = *reinterpret_cast<unsigned int *>(&h);
    }
    o.x = w[0];
    o.y = w[1];
    o.z = w[2];
    o.w = w[3];
    *reinterpret_cast<uint4 *>(dst) = o;
}

/* GGML's get_scale_min_k4: sub-block j's 6-bit scale and min from 12 bytes. */
__device__ __forceinline__ void memra_k4_scale_min(int j, const unsigned char *q, unsigned int &sc, unsigned int &m)
{
    if (j < 4) {
        sc = q[j] & 63u;
        m = q[j + 4] & 63u;
    } else {
        sc = (q[j + 4] & 0xFu) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

#define MEMRA_GRID_STRIDE(it, total)                                                      \
    for (long long it = (long long)blockIdx.x * blockDim.x + threadIdx.x; it < (total);  \
         it += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void __launch_bounds__(256)
memra_k_dequant_q8_0(const unsigned char *__restrict__ src, long long nblocks, __half *__restrict__ dst)
{
    MEMRA_GRID_STRIDE(it, nblocks * 4)
    {
        const long long b = it >> 2;
        const int t = (int)(it & 3);
        const unsigned char *blk = src + b * 34;
        const float d = memra_f16_load(blk);
        float v[8];
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = __fmul_rn((float)(signed char)blk[2 + 8 * t + i], d);
        memra_store8(dst + b * 32 + 8 * t, v);
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_dequant_q4_0(const unsigned char *__restrict__ src, long long nblocks, __half *__restrict__ dst)
{
    MEMRA_GRID_STRIDE(it, nblocks * 2)
    {
        const long long b = it >> 1;
        const int t = (int)(it & 1);
        const unsigned char *blk = src + b * 18;
        const float d = memra_f16_load(blk);
        const unsigned char *qs = blk + 2 + 8 * t;
        float lo[8], hi[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            lo[i] = __fmul_rn((float)((int)(qs[i] & 0x0F) - 8), d);
            hi[i] = __fmul_rn((float)((int)(qs[i] >> 4) - 8), d);
        }
        memra_store8(dst + b * 32 + 8 * t, lo);
        memra_store8(dst + b * 32 + 16 + 8 * t, hi);
    }
}

/* Q4_K (qh == 0) and Q5_K share the layout of d, dmin and the scales; thread
 * t of a block takes chunk c = t / 4 (64 values: 32 low nibbles with sub-block
 * 2c, then 32 high nibbles with sub-block 2c + 1) and its bytes 8 * (t % 4). */
__device__ __forceinline__ void memra_dequant_k45(const unsigned char *blk, int qh_off, int qs_off, int t,
                                                  __half *out)
{
    const int c = t >> 2, p = t & 3;
    const float d = memra_f16_load(blk);
    const float dmin = memra_f16_load(blk + 2);
    unsigned int sc, m;
    memra_k4_scale_min(2 * c, blk + 4, sc, m);
    const float d1 = __fmul_rn(d, (float)sc), m1 = __fmul_rn(dmin, (float)m);
    memra_k4_scale_min(2 * c + 1, blk + 4, sc, m);
    const float d2 = __fmul_rn(d, (float)sc), m2 = __fmul_rn(dmin, (float)m);
    const unsigned char *ql = blk + qs_off + 32 * c + 8 * p;
    const unsigned int u1 = 1u << (2 * c), u2 = 2u << (2 * c);
    float lo[8], hi[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        unsigned int q0 = ql[i] & 0x0Fu, q1 = ql[i] >> 4;
        if (qh_off) {
            const unsigned int h = blk[qh_off + 8 * p + i];
            q0 += (h & u1) ? 16u : 0u;
            q1 += (h & u2) ? 16u : 0u;
        }
        lo[i] = __fsub_rn(__fmul_rn(d1, (float)q0), m1);
        hi[i] = __fsub_rn(__fmul_rn(d2, (float)q1), m2);
    }
    memra_store8(out + 64 * c + 8 * p, lo);
    memra_store8(out + 64 * c + 32 + 8 * p, hi);
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_dequant_q4_k(const unsigned char *__restrict__ src, long long nblocks, __half *__restrict__ dst)
{
    MEMRA_GRID_STRIDE(it, nblocks * 16)
    {
        const long long b = it >> 4;
        memra_dequant_k45(src + b * 144, 0, 16, (int)(it & 15), dst + b * 256);
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_dequant_q5_k(const unsigned char *__restrict__ src, long long nblocks, __half *__restrict__ dst)
{
    MEMRA_GRID_STRIDE(it, nblocks * 16)
    {
        const long long b = it >> 4;
        memra_dequant_k45(src + b * 176, 16, 48, (int)(it & 15), dst + b * 256);
    }
}

/* Q6_K: ql[128], qh[64], int8 scales[16], f16 d. Thread t of a block takes
 * half h = t / 4 (128 values) and l = 8 * (t % 4) .. +7; each l gives four
 * values, at l, l + 32, l + 64 and l + 96 of the half. */
extern "C" __global__ void __launch_bounds__(256)
memra_k_dequant_q6_k(const unsigned char *__restrict__ src, long long nblocks, __half *__restrict__ dst)
{
    MEMRA_GRID_STRIDE(it, nblocks * 8)
    {
        const long long b = it >> 3;
        const int t = (int)(it & 7), h = t >> 2, p = t & 3;
        const unsigned char *blk = src + b * 210;
        const unsigned char *ql = blk + 64 * h;
        const unsigned char *qh = blk + 128 + 32 * h;
        const signed char *sc = reinterpret_cast<const signed char *>(blk + 192) + 8 * h;
        const float d = memra_f16_load(blk + 208);
        const int is = p >> 1; /* l / 16 */
        __half *out = dst + b * 256 + 128 * h + 8 * p;
        /* quad j of the half: low (j < 2) or high nibble of ql[l + 32 * (j & 1)],
         * qh bits 2j..2j+1, scale sc[is + 2j]. */
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float s = __fmul_rn(d, (float)sc[is + 2 * j]);
            float v[8];
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int l = 8 * p + i;
                const unsigned int lo = ql[l + 32 * (j & 1)];
                const unsigned int low4 = j < 2 ? (lo & 0xFu) : (lo >> 4);
                const int q = (int)(low4 | ((((unsigned int)qh[l] >> (2 * j)) & 3u) << 4)) - 32;
                v[i] = __fmul_rn(s, (float)q);
            }
            memra_store8(out + 32 * j, v);
        }
    }
}
