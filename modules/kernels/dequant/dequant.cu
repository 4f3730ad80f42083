/* GGML block formats -> row-major f16 (the FP16 mirror), bit-identical to the
 * host decoder (core/formats.c memra_decode_row, itself GGML's
 * dequantize_row_*): f16 scales widened exactly to f32, each value formed with
 * f32 operations in GGML's order, no fused multiply-add (explicit __fmul_rn /
 * __fsub_rn, and the file is compiled with -fmad=false), then rounded to f16
 * with __float2half_rn (two at a time: F2FP.F16.F32.PACK_AB, as before).
 *
 *   memra_k_dequant_q8_0  34 B / 32 values : v = q * d
 *   memra_k_dequant_q4_0  18 B / 32 values : v = (nibble - 8) * d
 *   memra_k_dequant_q4_k 144 B / 256 values: v = (d*sc) * q - (dmin*m)
 *   memra_k_dequant_q5_k 176 B / 256 values: as Q4_K with a fifth bit in qh
 *   memra_k_dequant_q6_k 210 B / 256 values: v = (d*sc) * (q - 32)
 *
 * Rows of blocks are contiguous and the output is row-major with no padding,
 * so block b decodes to dst[b * QK ...]: the kernels see a flat list of
 * `nblocks` blocks. The work unit is one 16-byte output ("octet": 8 values;
 * QK / 8 octets per block); each octet is decoded by one thread with integer
 * byte tricks that are exact:
 *   - a byte or nibble u < 2^23 becomes a float as bits 0x4B000000 | u
 *     (= 2^23 + u exactly) minus a constant (2^23 + bias): exact integers, so
 *     the subtraction is exact and equals (float)(u - bias) bit for bit
 *     (x - x gives +0, as (float)0 does);
 *   - the products and the difference are the host's, in the host's order.
 * Compiled for the host with MEMRA_DQ_HOST_TEST defined (the includer then
 * supplies uint2, uint4, make_uint2/4 and host twins of the dq_* primitives),
 * the same decode functions can be checked value by value against
 * core/formats.c.
 *
 * Fast path (src 16-byte aligned): a persistent grid walks tiles of TB blocks
 * (TB * block bytes is a multiple of 16, so every tile starts 16-byte aligned);
 * each tile is read with coalesced 16-byte loads into shared memory, the NEXT
 * tile's loads are issued into registers before this tile is decoded (so they
 * are in flight during the decode and the stores), and every thread writes 4
 * octets, one 16-byte store each, a warp storing 512 contiguous bytes.
 * The last nblocks % TB blocks (and all blocks when src is not 16-byte
 * aligned) take the simple path: one octet per thread per grid-stride step,
 * bytes read one at a time straight from global memory.
 * Preconditions (checked by the C launcher): dst is 16-byte aligned. Any grid
 * size is correct.
 */
#ifndef MEMRA_DQ_HOST_TEST
#include <cuda_fp16.h>
#define MEMRA_DQ_FN static __device__ __forceinline__
#define MEMRA_DQ_FN_MEMBER __device__ __forceinline__
#else /* the host check supplies uint2, uint4, make_uint2/4 and the dq_* primitives */
#define MEMRA_DQ_FN static inline
#define MEMRA_DQ_FN_MEMBER inline
#endif

/* ---- exact primitives (device intrinsics; host twins for the host check) -------- */

#ifndef MEMRA_DQ_HOST_TEST
MEMRA_DQ_FN float dq_mul(float a, float b) { return __fmul_rn(a, b); }
MEMRA_DQ_FN float dq_sub(float a, float b) { return __fsub_rn(a, b); }
MEMRA_DQ_FN float dq_bits(unsigned u) { return __uint_as_float(u); }
MEMRA_DQ_FN unsigned dq_perm(unsigned a, unsigned b, unsigned s) { return __byte_perm(a, b, s); }
MEMRA_DQ_FN unsigned dq_fshr(unsigned lo, unsigned hi, unsigned sh) { return __funnelshift_r(lo, hi, sh); }
MEMRA_DQ_FN float dq_f16(unsigned h) { return __half2float(__ushort_as_half((unsigned short)h)); }
#endif

/* The float value of byte i (0..3) of w, minus `bias` (w's bytes < 2^8). */
#define DQ_BYTE_F(w, i, bias) dq_sub(dq_bits(dq_perm((w), 0x4B00u, 0x5440u | (i))), 8388608.0f + (bias))

/* ---- byte sources ------------------------------------------------------------------ */

/* Shared-memory tile: `base` 16-byte aligned, `off` the block's byte offset in
 * it. b8 reads three aligned words and funnel-shifts (the tile carries 16
 * bytes of padding for the third word). */
struct dq_smem {
    const unsigned char *base;
    int off;
    MEMRA_DQ_FN_MEMBER unsigned w32(int o) const /* off + o a multiple of 4 */
    {
        return *reinterpret_cast<const unsigned *>(base + off + o);
    }
    MEMRA_DQ_FN_MEMBER unsigned u16(int o) const /* off + o even */
    {
        return *reinterpret_cast<const unsigned short *>(base + off + o);
    }
    MEMRA_DQ_FN_MEMBER unsigned u8(int o) const { return base[off + o]; }
    MEMRA_DQ_FN_MEMBER uint2 b8(int o) const /* bytes o .. o + 7; off + o even */
    {
        const int a = off + o;
        const unsigned *w = reinterpret_cast<const unsigned *>(base + (a & ~3));
        const unsigned sh = (unsigned)(a & 3) * 8u;
        const unsigned w0 = w[0], w1 = w[1], w2 = w[2];
        return make_uint2(dq_fshr(w0, w1, sh), dq_fshr(w1, w2, sh));
    }
};

/* Global memory, any alignment: one byte at a time, nothing past the block. */
struct dq_bytes {
    const unsigned char *p;
#ifndef MEMRA_DQ_HOST_TEST
    __device__ __forceinline__ unsigned u8(int o) const { return __ldg(p + o); }
#else
    unsigned u8(int o) const { return p[o]; }
#endif
    MEMRA_DQ_FN_MEMBER unsigned u16(int o) const { return u8(o) | (u8(o + 1) << 8); }
    MEMRA_DQ_FN_MEMBER unsigned w32(int o) const { return u16(o) | (u16(o + 2) << 16); }
    MEMRA_DQ_FN_MEMBER uint2 b8(int o) const { return make_uint2(w32(o), w32(o + 4)); }
};

/* ---- 8 floats -> one 16-byte octet ---------------------------------------------------- */

MEMRA_DQ_FN unsigned dq_pack2(float a, float b)
{
#ifndef MEMRA_DQ_HOST_TEST
    __half2 h = __halves2half2(__float2half_rn(a), __float2half_rn(b));
    return *reinterpret_cast<unsigned *>(&h);
#else
    return dq_host_pack2(a, b);
#endif
}

MEMRA_DQ_FN uint4 dq_pack8(const float *v)
{
    return make_uint4(dq_pack2(v[0], v[1]), dq_pack2(v[2], v[3]), dq_pack2(v[4], v[5]), dq_pack2(v[6], v[7]));
}

/* ---- the decoders: octet u of one block -> 8 f32 values -------------------------------- */

/* Q8_0: d (f16) at 0, int8 qs[32] at 2. Octet u: qs[8u .. 8u + 7]. */
template <class S> MEMRA_DQ_FN void dq_q8_0(const S &s, int u, float *v)
{
    const float d = dq_f16(s.u16(0));
    const uint2 q = s.b8(2 + 8 * u);
    const unsigned x0 = q.x ^ 0x80808080u, x1 = q.y ^ 0x80808080u; /* q + 128 */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = dq_mul(DQ_BYTE_F(x0, i, 128.0f), d);
        v[4 + i] = dq_mul(DQ_BYTE_F(x1, i, 128.0f), d);
    }
}

/* Q4_0: d at 0, qs[16] at 2; values 0..15 the low nibbles, 16..31 the high.
 * Octet u: nibbles (u >> 1) of qs[8 (u & 1) .. + 7]. */
template <class S> MEMRA_DQ_FN void dq_q4_0(const S &s, int u, float *v)
{
    const float d = dq_f16(s.u16(0));
    const uint2 q = s.b8(2 + 8 * (u & 1));
    const unsigned sh = (unsigned)(u >> 1) * 4u;
    const unsigned x0 = (q.x >> sh) & 0x0F0F0F0Fu, x1 = (q.y >> sh) & 0x0F0F0F0Fu;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = dq_mul(DQ_BYTE_F(x0, i, 8.0f), d);
        v[4 + i] = dq_mul(DQ_BYTE_F(x1, i, 8.0f), d);
    }
}

/* Q4_K / Q5_K: d, dmin (f16) at 0 and 2, 12 scale bytes at 4, (Q5_K: qh[32] at
 * 16), qs[128] at QS. Octet u: sub-block sub = u >> 2 (GGML's 2 * chunk + half),
 * chunk c = u >> 3, l0 = 8 (u & 3); nibble (sub & 1) of qs[32 c + l0 .. + 7],
 * fifth bit `sub` of qh[l0 .. + 7]. */
template <class S, bool Q5> MEMRA_DQ_FN void dq_k45(const S &s, int u, float *v)
{
    const int QS = Q5 ? 48 : 16;
    const unsigned dd = s.w32(0);
    const float d = dq_f16(dd & 0xFFFFu), dmin = dq_f16(dd >> 16);
    const unsigned s0 = s.w32(4), s1 = s.w32(8), s2 = s.w32(12);
    const int sub = u >> 2, c = u >> 3, l0 = 8 * (u & 3);
    const unsigned k8 = (unsigned)(sub & 3) * 8u;
    unsigned sc, m;
    if (sub < 4) { /* GGML get_scale_min_k4 */
        sc = (s0 >> k8) & 63u;
        m = (s1 >> k8) & 63u;
    } else {
        const unsigned b0 = (s0 >> k8) & 0xFFu, b1 = (s1 >> k8) & 0xFFu, b2 = (s2 >> k8) & 0xFFu;
        sc = (b2 & 0x0Fu) | ((b0 >> 6) << 4);
        m = (b2 >> 4) | ((b1 >> 6) << 4);
    }
    const float ds = dq_mul(d, (float)sc), ms = dq_mul(dmin, (float)m);
    const uint2 q = s.b8(QS + 32 * c + l0);
    const unsigned sh = (unsigned)(sub & 1) * 4u;
    unsigned x0 = (q.x >> sh) & 0x0F0F0F0Fu, x1 = (q.y >> sh) & 0x0F0F0F0Fu;
    if (Q5) {
        const uint2 h = s.b8(16 + l0);
        x0 |= ((h.x >> sub) & 0x01010101u) << 4;
        x1 |= ((h.y >> sub) & 0x01010101u) << 4;
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = dq_sub(dq_mul(ds, DQ_BYTE_F(x0, i, 0.0f)), ms);
        v[4 + i] = dq_sub(dq_mul(ds, DQ_BYTE_F(x1, i, 0.0f)), ms);
    }
}

/* Q6_K: ql[128] at 0, qh[64] at 128, int8 scales[16] at 192, d (f16) at 208.
 * Value v = 128 h + 32 quad + l: low nibble (quad < 2) or high nibble of
 * ql[64 h + 32 (quad & 1) + l], bits 2 quad .. 2 quad + 1 of qh[32 h + l],
 * scale sc[8 h + 2 quad + l / 16]. Octet u: h = u >> 4, quad = (u >> 2) & 3,
 * l = 8 (u & 3) .. + 7 (one scale). */
template <class S> MEMRA_DQ_FN void dq_q6_k(const S &s, int u, float *v)
{
    const int h = u >> 4, quad = (u >> 2) & 3, l0 = 8 * (u & 3);
    const float d = dq_f16(s.u16(208));
    const int sc = (int)(signed char)(unsigned char)s.u8(192 + 8 * h + 2 * quad + (l0 >> 4));
    const float ds = dq_mul(d, (float)sc);
    const uint2 ql = s.b8(64 * h + 32 * (quad & 1) + l0);
    const uint2 qh = s.b8(128 + 32 * h + l0);
    const unsigned shl = (unsigned)(quad >> 1) * 4u, shh = (unsigned)quad * 2u;
    const unsigned x0 = ((ql.x >> shl) & 0x0F0F0F0Fu) | (((qh.x >> shh) & 0x03030303u) << 4);
    const unsigned x1 = ((ql.y >> shl) & 0x0F0F0F0Fu) | (((qh.y >> shh) & 0x03030303u) << 4);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = dq_mul(ds, DQ_BYTE_F(x0, i, 32.0f));
        v[4 + i] = dq_mul(ds, DQ_BYTE_F(x1, i, 32.0f));
    }
}

/* ---- formats ------------------------------------------------------------------------ */

#include "dequant.h"

/* BB bytes and QK values per block; TB blocks per tile (TB * BB % 16 == 0 and
 * TB * QK / 8 == 4 * 256: four octets per thread). */
struct dq_fmt_q8_0 {
    enum { BB = DQ_Q8_0_BB, QK = DQ_Q8_0_QK, TB = DQ_Q8_0_TB };
    template <class S> static MEMRA_DQ_FN_MEMBER void decode(const S &s, int u, float *v) { dq_q8_0(s, u, v); }
};
struct dq_fmt_q4_0 {
    enum { BB = DQ_Q4_0_BB, QK = DQ_Q4_0_QK, TB = DQ_Q4_0_TB };
    template <class S> static MEMRA_DQ_FN_MEMBER void decode(const S &s, int u, float *v) { dq_q4_0(s, u, v); }
};
struct dq_fmt_q4_k {
    enum { BB = DQ_Q4_K_BB, QK = DQ_Q4_K_QK, TB = DQ_Q4_K_TB };
    template <class S> static MEMRA_DQ_FN_MEMBER void decode(const S &s, int u, float *v) { dq_k45<S, false>(s, u, v); }
};
struct dq_fmt_q5_k {
    enum { BB = DQ_Q5_K_BB, QK = DQ_Q5_K_QK, TB = DQ_Q5_K_TB };
    template <class S> static MEMRA_DQ_FN_MEMBER void decode(const S &s, int u, float *v) { dq_k45<S, true>(s, u, v); }
};
struct dq_fmt_q6_k {
    enum { BB = DQ_Q6_K_BB, QK = DQ_Q6_K_QK, TB = DQ_Q6_K_TB };
    template <class S> static MEMRA_DQ_FN_MEMBER void decode(const S &s, int u, float *v) { dq_q6_k(s, u, v); }
};

#if !defined(MEMRA_DQ_HOST_TEST) || defined(MEMRA_DQ_HOST_KERNELS) /* the latter: a host emulation of the grid */

#define DQ_THREADS 256

template <class F> __device__ __forceinline__ void dq_run(const unsigned char *__restrict__ src, long long nblocks,
                                                          __half *__restrict__ dst)
{
    constexpr int UPB = F::QK / 8;                       /* octets per block */
    constexpr int TILE = F::TB * F::BB;                  /* tile bytes */
    constexpr int N16 = TILE / 16;                       /* 16-byte loads per tile */
    constexpr int LD = (N16 + DQ_THREADS - 1) / DQ_THREADS; /* per thread */
    constexpr int ST = F::TB * UPB / DQ_THREADS;         /* octets per thread */
    static_assert(TILE % 16 == 0, "tiles must keep 16-byte alignment");
    static_assert(ST * DQ_THREADS == F::TB * UPB, "whole octets per thread");
    __shared__ __align__(16) unsigned char tile[TILE + 16];

    const int tid = threadIdx.x;
    const long long ntiles = ((unsigned long long)src & 15u) == 0 ? nblocks / F::TB : 0;
    long long t = blockIdx.x;
    uint4 r[LD];
    if (t < ntiles) {
        const uint4 *g = reinterpret_cast<const uint4 *>(src + t * TILE);
#pragma unroll
        for (int k = 0; k < LD; k++)
            if (k * DQ_THREADS + tid < N16) r[k] = __ldg(g + k * DQ_THREADS + tid);
    }
    for (; t < ntiles; t += gridDim.x) {
        __syncthreads(); /* the previous tile's decode is done with `tile` */
#pragma unroll
        for (int k = 0; k < LD; k++)
            if (k * DQ_THREADS + tid < N16) reinterpret_cast<uint4 *>(tile)[k * DQ_THREADS + tid] = r[k];
        __syncthreads();
        const long long next = t + gridDim.x;
        if (next < ntiles) { /* in flight while this tile is decoded and stored */
            const uint4 *g = reinterpret_cast<const uint4 *>(src + next * TILE);
#pragma unroll
            for (int k = 0; k < LD; k++)
                if (k * DQ_THREADS + tid < N16) r[k] = __ldg(g + k * DQ_THREADS + tid);
        }
        uint4 *out = reinterpret_cast<uint4 *>(dst + t * (F::TB * F::QK));
#pragma unroll 1
        for (int k = 0; k < ST; k++) {
            const int j = k * DQ_THREADS + tid; /* octet j of the tile: a warp stores 512 contiguous bytes */
            const int b = j / UPB, u = j % UPB;
            dq_smem s;
            s.base = tile;
            s.off = b * F::BB;
            float v[8];
            F::decode(s, u, v);
            out[j] = dq_pack8(v);
        }
    }
    /* the blocks after the last whole tile (all of them when src is unaligned) */
    const long long first = ntiles * F::TB;
    const long long items = (nblocks - first) * UPB;
    uint4 *out = reinterpret_cast<uint4 *>(dst + first * F::QK);
    for (long long it = (long long)blockIdx.x * DQ_THREADS + tid; it < items; it += (long long)gridDim.x * DQ_THREADS) {
        const long long b = it / UPB;
        dq_bytes s;
        s.p = src + (first + b) * F::BB;
        float v[8];
        F::decode(s, (int)(it - b * UPB), v);
        out[it] = dq_pack8(v);
    }
}

/* All of an SM's threads resident: 8 blocks of 256 on sm_90 (<= 32 registers,
 * no spills: one octet is decoded at a time, 64 warps per SM hide its latency),
 * 6 where an SM holds 1536 threads (sm_86, sm_89, sm_120). */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ >= 1200)
#define DQ_MIN_BLOCKS 6
#else
#define DQ_MIN_BLOCKS 8
#endif
#define DQ_KERNEL(name, fmt)                                                                              \
    extern "C" __global__ void __launch_bounds__(DQ_THREADS, DQ_MIN_BLOCKS)                               \
    name(const unsigned char *__restrict__ src, long long nblocks, __half *__restrict__ dst)              \
    {                                                                                                     \
        dq_run<fmt>(src, nblocks, dst);                                                                   \
    }

DQ_KERNEL(memra_k_dequant_q8_0, dq_fmt_q8_0)
DQ_KERNEL(memra_k_dequant_q4_0, dq_fmt_q4_0)
DQ_KERNEL(memra_k_dequant_q4_k, dq_fmt_q4_k)
DQ_KERNEL(memra_k_dequant_q5_k, dq_fmt_q5_k)
DQ_KERNEL(memra_k_dequant_q6_k, dq_fmt_q6_k)

/* ---- op dequant_kr_f16: the floor's records -> f16. The K-packed records (gemm_kr's operand,
 * memra_kr_repack) first, the Q8_0 records after them ------------------------------------------------------
 * The planes (module.h memra_kr_bytes, core/weights/formats.c kp_planes_of; G = cols / 128 steps, record
 * rec = g rows + j): N at 0, 64 bytes a record, 32-block u's 16 bytes at 16 u (byte i: value i in the low
 * nibble, value 16 + i in the high); H after N, HB bytes a record (Q5_K 16: bit o of byte i of word u is
 * the fifth bit of value 4 o + i; Q6_K 32: bits 2 (o % 4) .. + 1 of byte i of word 2 u + o / 4 are value
 * 4 o + i's top two); S after H, 16 bytes per super-block and row (entry (g / 2) rows + j): Q4_K / Q5_K
 * the block's head (d, dmin, scales[12]), Q6_K its int8 scales[16]; D (Q6_K) after S, its f16 d.
 * Item it: octet t = it % 16 of record it / 16 (values 8 t .. 8 t + 7: 32-block u = t / 4, l0 = 8 (t % 4)),
 * one 16-byte store to row j at column 128 g + 8 t. Each value is formed as dq_k45 / dq_q6_k form the GGUF
 * block's (the same scale products and operations, in the same order), so the output is dequant_f16's of
 * the blocks the records were repacked from, bit for bit. KF: 4, 5 or 6. Preconditions (the C launcher):
 * src 8-byte and dst 16-byte aligned, cols a multiple of 256. */
template <int KF>
__device__ __forceinline__ void dq_kr_run(const unsigned char *__restrict__ src, long long rows, long long cols,
                                          __half *__restrict__ dst)
{
    constexpr int HB = KF == 5 ? 16 : KF == 6 ? 32 : 0;
    const long long G = cols / 128, items = G * rows * 16;
    const unsigned char *H = src + G * rows * 64, *S = H + G * rows * HB, *D = S + (cols / 256) * rows * 16;
    for (long long it = (long long)blockIdx.x * DQ_THREADS + threadIdx.x; it < items;
         it += (long long)gridDim.x * DQ_THREADS) {
        const long long rec = it >> 4, g = rec / rows, j = rec - g * rows, hs = (g >> 1) * rows + j;
        const int t = (int)(it & 15), u = t >> 2, p = t & 3, h = (int)(g & 1);
        const uint2 q = *reinterpret_cast<const uint2 *>(src + rec * 64 + 16 * u + 8 * (p & 1));
        const unsigned sh = (unsigned)(p >> 1) * 4u;
        unsigned x0 = (q.x >> sh) & 0x0F0F0F0Fu, x1 = (q.y >> sh) & 0x0F0F0F0Fu;
        float v[8];
        if (KF == 6) {
            const unsigned w = *reinterpret_cast<const unsigned *>(H + rec * 32 + 4 * (2 * u + (p >> 1)));
            const unsigned oa = 2u * (unsigned)(p & 1); /* o % 4 of values l0 .. l0 + 3; l0 + 4 .. + 7: oa + 1 */
            x0 |= ((w >> (2u * oa)) & 0x03030303u) << 4;
            x1 |= ((w >> (2u * oa + 2u)) & 0x03030303u) << 4;
            const float d = dq_f16(*reinterpret_cast<const unsigned short *>(D + hs * 2));
            const int sc = (int)*reinterpret_cast<const signed char *>(S + hs * 16 + 8 * h + 2 * u + (p >> 1));
            const float ds = dq_mul(d, (float)sc);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                v[i] = dq_mul(ds, DQ_BYTE_F(x0, i, 32.0f));
                v[4 + i] = dq_mul(ds, DQ_BYTE_F(x1, i, 32.0f));
            }
        } else {
            if (KF == 5) {
                const unsigned w = *reinterpret_cast<const unsigned *>(H + rec * 16 + 4 * u);
                x0 |= ((w >> (2 * p)) & 0x01010101u) << 4;
                x1 |= ((w >> (2 * p + 1)) & 0x01010101u) << 4;
            }
            /* the 16-byte head as two 8-byte loads: the launcher asks only 8-byte alignment of src */
            const uint2 h0 = *reinterpret_cast<const uint2 *>(S + hs * 16),
                        h1 = *reinterpret_cast<const uint2 *>(S + hs * 16 + 8);
            const uint4 hd = make_uint4(h0.x, h0.y, h1.x, h1.y);
            const float d = dq_f16(hd.x & 0xFFFFu), dmin = dq_f16(hd.x >> 16);
            const int sub = 4 * h + u; /* GGML's sub-block of the super-block */
            const unsigned k8 = (unsigned)(sub & 3) * 8u;
            unsigned sc, m;
            if (sub < 4) { /* GGML get_scale_min_k4, as dq_k45 */
                sc = (hd.y >> k8) & 63u;
                m = (hd.z >> k8) & 63u;
            } else {
                const unsigned b0 = (hd.y >> k8) & 0xFFu, b1 = (hd.z >> k8) & 0xFFu, b2 = (hd.w >> k8) & 0xFFu;
                sc = (b2 & 0x0Fu) | ((b0 >> 6) << 4);
                m = (b2 >> 4) | ((b1 >> 6) << 4);
            }
            const float ds = dq_mul(d, (float)sc), ms = dq_mul(dmin, (float)m);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                v[i] = dq_sub(dq_mul(ds, DQ_BYTE_F(x0, i, 0.0f)), ms);
                v[4 + i] = dq_sub(dq_mul(ds, DQ_BYTE_F(x1, i, 0.0f)), ms);
            }
        }
        *reinterpret_cast<uint4 *>(dst + j * cols + g * 128 + 8 * t) = dq_pack8(v);
    }
}

#define DQ_KR_KERNEL(name, kf)                                                                            \
    extern "C" __global__ void __launch_bounds__(DQ_THREADS, DQ_MIN_BLOCKS)                               \
    name(const unsigned char *__restrict__ src, long long rows, long long cols, __half *__restrict__ dst) \
    {                                                                                                     \
        dq_kr_run<kf>(src, rows, cols, dst);                                                              \
    }

DQ_KR_KERNEL(memra_k_dequant_kr_q4_k, 4)
DQ_KR_KERNEL(memra_k_dequant_kr_q5_k, 5)
DQ_KR_KERNEL(memra_k_dequant_kr_q6_k, 6)

/* The Q8_0 records (gemm_q8_0r's operand, memra_q8_0r_bytes): record g rows + j of 144 bytes holds the f32
 * scales d[4] of its four 32-blocks (the f16 scales widened exactly; 0 past cols) and their int8 codes at 16.
 * Item it: octet t = it % 16 of record it / 16, values 128 g + 8 t .. + 7 of row j (skipped past cols: a
 * multiple of 32, so an octet is wholly in or out); v = q d in f32, dq_q8_0's product, then f16 RNE: the
 * output is dequant_f16's of the Q8_0 blocks the records came from (or of the Q4_0 blocks whose exact Q8_0
 * conversion they are: the same q and d). Preconditions: src 8-byte and dst 16-byte aligned, cols % 32 == 0. */
extern "C" __global__ void __launch_bounds__(DQ_THREADS, DQ_MIN_BLOCKS)
memra_k_dequant_kr_q8_0(const unsigned char *__restrict__ src, long long rows, long long cols, __half *__restrict__ dst)
{
    const long long G = (cols + 127) / 128, items = G * rows * 16;
    for (long long it = (long long)blockIdx.x * DQ_THREADS + threadIdx.x; it < items;
         it += (long long)gridDim.x * DQ_THREADS) {
        const long long rec = it >> 4, g = rec / rows, j = rec - g * rows;
        const int t = (int)(it & 15);
        if (g * 128 + 8 * t >= cols) continue;
        const unsigned char *r = src + rec * 144;
        const float d = *reinterpret_cast<const float *>(r + 4 * (t >> 2));
        const uint2 q = *reinterpret_cast<const uint2 *>(r + 16 + 8 * t);
        const unsigned x0 = q.x ^ 0x80808080u, x1 = q.y ^ 0x80808080u; /* q + 128 */
        float v[8];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = dq_mul(DQ_BYTE_F(x0, i, 128.0f), d);
            v[4 + i] = dq_mul(DQ_BYTE_F(x1, i, 128.0f), d);
        }
        *reinterpret_cast<uint4 *>(dst + j * cols + g * 128 + 8 * t) = dq_pack8(v);
    }
}

#endif
