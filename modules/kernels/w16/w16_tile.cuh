/* w16_tile.cuh: the fused-dequant f16 tile of gemm_w16 (sm_90a), shared by the lane's kernels (w16.cu) and the
 * standalone prototype bench/micro/w16gemm.cu. The operand is the W16 layout (module.h memra_w16_off,
 * formats.h memra_w16_repack): per 128-row tile and 32-value group, the codes in the order of the threads that
 * read them, the group's scales, and for the K-quants the super-blocks' d / dmin.
 *
 * A CTA computes 128 weight rows x BN tokens (BN 256: two m64n256 warpgroups; 128: m64n128, twice the CTAs for
 * short m) with 384 threads. Warpgroup 0 produces: one thread issues the bulk copies of a 64-deep k step (two
 * groups' codes and scales, the super-block's d / dmin, the step's tokens) into one of 4 stages, ringed by
 * full / empty mbarriers. Warpgroups 1 and 2 each take 64 rows: per 16-deep half-group a thread turns its
 * codes and scales into the f16 A fragment in registers (the f16 mirror's value of each weight, rounded once)
 * while the previous wgmma runs, then m64nBNk16 with B (the tokens, f16, wgmma's K-major no-swizzle layout,
 * x16 below) from shared memory. y[t][r] = alpha * sum_k f16(w) f16(x), f32 accumulation.
 *
 * x16 (the activations' pass, w16_x16): [mp / BN token tiles][k / 16 slabs][BN / 8 token groups][2 k halves]
 * [8 tokens][8 f16], zeros past m (mp = m rounded up to 256). Split-k (gridDim.z > 1): slice z takes its share
 * of the k steps and writes its partial sums to part + z m n (row-major [m][n], alpha not applied); w16_sum
 * adds the slices in slice order, times alpha, into y. Preconditions (the launcher's): k a multiple of 64, the
 * three operand sections, x16 and part 16-byte aligned, dynamic shared memory W16_SMEM. */
#pragma once
#include <cstdint>
#include <cuda_fp16.h>
#include "../common/tile.cuh"
#include "w16_wgmma.cuh"

/* BN: the token tile, 256 (two m64n256 warpgroups) or 128 (m64n128: twice the CTAs, for short m); the grouped
 * tile also 160 (m64n160: an expert of 129-160 rows in one tile, at 160 / 256 of the MMAs) and 64 (m64n64, two
 * CTAs an SM: for experts of few rows each) */
constexpr int BM = 128, BK = 64, S = 4;
constexpr int ST_SCALES = BM * (BK / 32) * 2;
/* QB: the format, 8 Q8_0, 4 Q4_0, 5 Q4_K, 7 Q5_K, 6 Q6_K. A k32 group's codes of a row tile (CB bytes: Q5_K's /
 * Q6_K's low nibbles as Q4's, then their high bit (a u16 a lane) / 2 bits (a word a lane)); a step's stage: the
 * codes of two groups (STC), their scales (Q8_0 / Q4_0: f16; Q4_K / Q5_K: the sub-block's 6-bit scale and min as
 * two bytes; Q6_K: the two 16-value sub-blocks' int8 scales, [group][half][row]), for the K-quants the rows'
 * super-block d and dmin (DD: f16 pairs; Q6_K has no dmin), then the tokens at TOK */
template <int QB, int BN = 256> struct W16 {
    static constexpr int ST_TOK = BN * BK * 2, SLAB = BN * 32; /* a step's tokens; a k16 slab of them */
    /* CTAs an SM (the entry's launch bounds) and the registers setmaxnreg gives the producer and the consumer
     * warpgroups: ptxas allocates the launch bounds' whole budget (65536 / (384 CTAs) rounded down to 8: 168 at
     * one CTA, 80 at two), the producer gives all but 40 back, the consumers take what that frees */
    static constexpr int CTAS = BN == 64 ? 2 : 1, REG_P = 40, REG_C = BN == 64 ? 96 : 232;
    static constexpr int CB = BM * 32 * (QB == 8 ? 8 : QB == 6 ? 6 : QB == 7 ? 5 : 4) / 8, STC = 2 * CB,
                         DD = (QB == 5 || QB == 6 || QB == 7) ? BM * 4 : 0,
                         TOK = STC + ST_SCALES + DD, STB = TOK + ST_TOK;
    /* each split within the launch bounds' budget (ptxas allocates 65536 / (384 CTAS) rounded down to 8 a thread) */
    static constexpr int BUDGET = 384 * ((65536 / (384 * CTAS)) & ~7);
    static_assert(128 * REG_P + 256 * REG_C <= BUDGET, "setmaxnreg: the tile's split over the launch budget");
};
/* the dynamic shared memory of a BN-token entry: S stages of the largest format's (Q8_0's) and 1 KB to align */
template <int BN> constexpr int w16_smem() { return S * W16<8, BN>::STB + 1024; }
constexpr int W16_SMEM = w16_smem<256>(); /* 8192 + 512 + 32768 a stage (the largest: Q8_0 at BN 256) */

/* gemm_experts on lane gemm_w16 (the grouped tile, XE): the routing that memra_route_experts (common/route.cuh)
 * wrote: the count of token tiles, the table (tile t = tiles[2 t] its expert, tiles[2 t + 1] its first sorted
 * row), the experts' sorted-row offsets [E + 1] and the permutation (sorted row s holds x / y row perm[s]); the
 * experts' W16 operands (a device array of E addresses) and the S and D sections' offsets in each (the same for
 * every expert: memra_w16_off of the shared format and shape). Passed by value; the launcher's C struct has the
 * same layout (five 8-byte addresses, two 8-byte offsets). */
struct w16_xe {
    const int *ntiles, *tiles, *offsets, *perm;
    const unsigned long long *w;
    long long off_s, off_d;
};

/* biased codes u (q + 128) k, k + 1 (bytes 0, 1 of w) and k + 8, k + 9 (bytes 2, 3), the row's scale twice in s2:
 * (q s) pairs into lo and hi */
__device__ __forceinline__ void deq(uint32_t w, uint32_t s2, uint32_t &lo, uint32_t &hi)
{
    const uint32_t a = __byte_perm(w, 0x64646464u, 0x4140), b = __byte_perm(w, 0x64646464u, 0x4342);
    const uint32_t off = 0x64806480u; /* (1152, 1152) */
    asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n" : "=r"(lo) : "r"(a), "r"(off), "r"(s2));
    asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n" : "=r"(hi) : "r"(b), "r"(off), "r"(s2));
}
/* Q4_0: a word of 8 codes u (0..15), pair j's two at nibbles j and j + 4 (pairs: row r0 k 2c / 2c + 1, row r1 the
 * same, row r0 k 2c + 8 / 2c + 9, row r1 the same): 0x64 over u is 1024 + u, less 1032 is q - 8 exactly, times the
 * row's scale rounded once */
__device__ __forceinline__ void deq4(uint32_t w, uint32_t s0, uint32_t s1, uint32_t (&a)[4])
{
    const uint32_t off = 0x64086408u; /* (1032, 1032) */
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint32_t u = ((w >> (4 * j)) & 0x000F000Fu) | 0x64006400u;
        asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n"
            : "=r"(a[j]) : "r"(u), "r"(off), "r"((j & 1) ? s1 : s0));
    }
}
/* Q4_K (H5 0) and Q5_K (H5 1): the same nibble order (codes u, 0..15), Q5_K's fifth bit of nibble slot s at bit s
 * of hi; each value d1 u - m1 in f32 (d1 = d sc, m1 = dmin m for the row's sub-block: the f16 mirror's decoder),
 * rounded to f16 once */
template <int H5>
__device__ __forceinline__ void deqk(uint32_t w, uint32_t hi, float d0, float m0, float d1, float m1, uint32_t (&a)[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint32_t u0 = ((w >> (4 * j)) & 0xFu) | (H5 ? ((hi >> j) & 1u) << 4 : 0u);
        const uint32_t u1 = ((w >> (4 * j + 16)) & 0xFu) | (H5 ? ((hi >> (j + 4)) & 1u) << 4 : 0u);
        const float f0 = __uint_as_float(0x4B000000u | u0) - 8388608.0f;
        const float f1 = __uint_as_float(0x4B000000u | u1) - 8388608.0f;
        const float dd = (j & 1) ? d1 : d0, mm = (j & 1) ? m1 : m0;
        const __half2 h = __floats2half2_rn(fmaf(dd, f0, -mm), fmaf(dd, f1, -mm));
        a[j] = *reinterpret_cast<const uint32_t *>(&h);
    }
}
/* Q6_K: low nibbles as Q4's (word lo), high 2 bits of nibble slot s at bits 2 s of hi >> hs (hs = 16 h); each value
 * (d sc) (u - 32) in f32 (the f16 mirror's decoder: d sc first), rounded to f16 once; e0 / e1 the rows' d sc */
__device__ __forceinline__ void deq6(uint32_t lo, uint32_t hi, float e0, float e1, uint32_t (&a)[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint32_t u0 = ((lo >> (4 * j)) & 0xFu) | (((hi >> (2 * j)) & 3u) << 4);
        const uint32_t u1 = ((lo >> (4 * j + 16)) & 0xFu) | (((hi >> (2 * j + 8)) & 3u) << 4);
        const float f0 = __uint_as_float(0x4B000000u | u0) - 8388640.0f, f1 = __uint_as_float(0x4B000000u | u1) - 8388640.0f;
        const float e = (j & 1) ? e1 : e0;
        const __half2 h = __floats2half2_rn(e * f0, e * f1);
        a[j] = *reinterpret_cast<const uint32_t *>(&h);
    }
}
/* One 16-byte chunk of the f16 tiles: 8 activations from offset off of x f32 (rounded to nearest) or of xh f16
 * (moved), both 16-byte aligned: the pass's one conversion. */
__device__ __forceinline__ uint4 w16_load8(const float *__restrict__ x, const __half *__restrict__ xh, long long off)
{
    if (xh != nullptr) return *reinterpret_cast<const uint4 *>(xh + off);
    const float4 a = *reinterpret_cast<const float4 *>(x + off);
    const float4 b = *reinterpret_cast<const float4 *>(x + off + 4);
    __half2 h0 = __floats2half2_rn(a.x, a.y), h1 = __floats2half2_rn(a.z, a.w), h2 = __floats2half2_rn(b.x, b.y),
            h3 = __floats2half2_rn(b.z, b.w);
    return make_uint4(*reinterpret_cast<uint32_t *>(&h0), *reinterpret_cast<uint32_t *>(&h1),
                      *reinterpret_cast<uint32_t *>(&h2), *reinterpret_cast<uint32_t *>(&h3));
}

/* FIT (the grouped 160-token tile's _n160f entries, MEMRA_W16_XE_FIT=1): the width of the tile's wgmmas, 64, 128
 * or 160 tokens by its valid rows (uniform over the CTA), chosen once a tile: the k loop is instantiated per width,
 * so that no wgmma sits under a condition in it (ptxas then fences the A registers at every wgmma). An m64nN
 * fragment's registers are the first N / 2 of the m64n160 one's (n8 block j in d[4 j .. 4 j + 3]); the others keep
 * their zeros, and the epilogue stores no row past the valid ones. */
template <int N> struct w16_width {
    static constexpr int value = N;
};

/* XE (the grouped tile): token tile tt is the table's; its expert's operand; its tokens the sorted rows row0 ..
 * (those before the expert's end valid) and the output of sorted row s goes to y row perm[s] (with split-k to part
 * row s, w16_sumg then scattering). The dense tile: token tile tt is tokens tt BN .., those before m valid. */
template <int QB, int BN, bool XE = false, bool FIT = false>
__device__ __forceinline__ void
w16_tile(const unsigned char *__restrict__ codes, const unsigned short *__restrict__ scales,
          const uint32_t *__restrict__ ddp, const __half *__restrict__ x16, float *__restrict__ y, int m, int n, int k,
          long long ldy, float alpha, float *__restrict__ part, const w16_xe xe = w16_xe{}, int rg = 0)
{
    using F = W16<QB, BN>;
    constexpr int CB = F::CB, STC = F::STC, STB = F::STB, DD = F::DD, TOK = F::TOK, ST_TOK = F::ST_TOK, SLAB = F::SLAB;
    extern __shared__ __align__(16) unsigned char smraw[];
    __shared__ __align__(8) unsigned long long bar[2 * S];
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smraw), sb = (raw + 1023u) & ~1023u;
    const unsigned full = (unsigned)__cvta_generic_to_shared(bar), empty = full + 8 * S;
    const int tid = threadIdx.x, wg = tid >> 7;
    /* split-k: slice z of gridDim.z takes steps [it0, it1) and, where there are several, writes its partial sums to
     * part's slice z (m x n floats, alpha not applied) for w16_sum */
    /* the CTA's token tile and row tile: the grid (token tiles, row tiles), or with rg > 0 (the grouped tile's
     * raster) a 1-D grid walked in groups of rg token tiles (common/tile.cuh memra_raster) */
    int tt = blockIdx.x, rt = blockIdx.y;
    if constexpr (XE) {
        if (rg > 0) {
            const int R = (n + BM - 1) / BM;
            memra_raster((int)blockIdx.x, (int)(gridDim.x / (unsigned)R), R, rg, tt, rt);
        }
    }
    const int G = k / 32, nst = k / BK, Z = (int)gridDim.z, z = (int)blockIdx.z;
    const int it0 = (int)((long long)nst * z / Z), it1 = (int)((long long)nst * (z + 1) / Z);
    int row0 = tt * BN, rend = m; /* the tile's first token (sorted row) and the end of its valid ones */
    if constexpr (XE) {
        if (tt >= *xe.ntiles) return; /* past the table (the grid is the worst case): the whole CTA, no barrier yet */
        const int e = xe.tiles[2 * tt];
        row0 = xe.tiles[2 * tt + 1];
        rend = xe.offsets[e + 1];
        const unsigned long long base = xe.w[e];
        codes = reinterpret_cast<const unsigned char *>(base);
        scales = reinterpret_cast<const unsigned short *>(base + (unsigned long long)xe.off_s);
        if constexpr (W16<QB, BN>::DD > 0) ddp = reinterpret_cast<const uint32_t *>(base + (unsigned long long)xe.off_d);
    }
    static_assert(!FIT || (XE && BN == 160), "the fitted widths: the grouped 160-token tile's");
    const int nv = rend - row0 < BN ? rend - row0 : BN; /* (FIT) the tile's valid rows */
    if (Z > 1) y = part + (long long)z * m * n, ldy = n, alpha = 1.f;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            memra_mb_init(full + 8 * s, 1);
            memra_mb_init(empty + 8 * s, 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(F::REG_P));
        if (tid == 0) {
            const unsigned char *cw = codes + (size_t)rt * G * CB;
            const unsigned char *sw = reinterpret_cast<const unsigned char *>(scales) + (size_t)rt * G * 256;
            const unsigned char *xw = reinterpret_cast<const unsigned char *>(x16) + (size_t)tt * (k / 16) * SLAB;
            for (int it = it0; it < it1; it++) {
                const int s = (it - it0) & (S - 1);
                if (it - it0 >= S) memra_mb_wait(empty + 8 * s, (((it - it0) / S) - 1) & 1);
                const unsigned st = sb + (unsigned)s * STB;
                memra_mb_arrive_tx(full + 8 * s, STB);
                memra_bulk_g2s(st, cw + (size_t)it * STC, STC, full + 8 * s);
                memra_bulk_g2s(st + STC, sw + (size_t)it * ST_SCALES, ST_SCALES, full + 8 * s);
                if constexpr (DD > 0) /* the step's super-block: 4 steps of 64 in 256 */
                    memra_bulk_g2s(st + STC + ST_SCALES, ddp + ((size_t)rt * (k / 256) + it / 4) * BM, DD, full + 8 * s);
                memra_bulk_g2s(st + TOK, xw + (size_t)it * ST_TOK, ST_TOK, full + 8 * s);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(F::REG_C));
    const int cw = wg - 1, t = tid & 127, v = t >> 5, l = t & 31, g = l >> 2, c = l & 3;
    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.f;
    uint32_t a0[4], a1[4];
#pragma unroll
    for (int i = 0; i < 4; i++) a0[i] = a1[i] = 0u;
    const int rowin = cw * 64 + v * 16 + g; /* the thread's first row in the tile */
    auto kloop = [&](auto width) {
        constexpr int NW = decltype(width)::value;
        float(&accw)[NW / 2] = *reinterpret_cast<float(*)[NW / 2]>(&acc[0]);
        for (int it = it0; it < it1; it++) {
            const int s = (it - it0) & (S - 1);
            memra_mb_wait(full + 8 * s, ((it - it0) / S) & 1);
            const unsigned st = sb + (unsigned)s * STB;
            float kd0 = 0.f, kn0 = 0.f, kd1 = 0.f, kn1 = 0.f; /* Q4_K: rows r0 and r1's d and dmin */
            if constexpr (QB == 5 || QB == 6 || QB == 7) {
                uint32_t e0, e1;
                asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(e0) : "r"(st + STC + ST_SCALES + (unsigned)rowin * 4u));
                asm volatile("ld.shared.b32 %0, [%1];\n"
                             : "=r"(e1)
                             : "r"(st + STC + ST_SCALES + (unsigned)rowin * 4u + 32u));
                kd0 = __half2float(__ushort_as_half((unsigned short)(e0 & 0xFFFFu)));
                kn0 = __half2float(__ushort_as_half((unsigned short)(e0 >> 16)));
                kd1 = __half2float(__ushort_as_half((unsigned short)(e1 & 0xFFFFu)));
                kn1 = __half2float(__ushort_as_half((unsigned short)(e1 >> 16)));
            }
#pragma unroll
            for (int q = 0; q < 2; q++) {
                [[maybe_unused]] uint32_t w0, w1, w2 = 0u, w3 = 0u; /* (each format reads some) */
                if constexpr (QB == 7) /* w2: the fifth bits, a u16 a lane */
                    asm volatile("ld.shared.u16 %0, [%1];\n"
                                 : "=r"(w2)
                                 : "r"(st + (unsigned)(q * CB) + 2048u + (unsigned)((cw * 4 + v) * 32 + l) * 2u));
                if constexpr (QB == 6) /* w2: the high bits */
                    asm volatile("ld.shared.b32 %0, [%1];\n"
                                 : "=r"(w2)
                                 : "r"(st + (unsigned)(q * CB) + 2048u + (unsigned)((cw * 4 + v) * 32 + l) * 4u));
                if constexpr (QB == 8)
                    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                                 : "=r"(w0), "=r"(w1), "=r"(w2), "=r"(w3)
                                 : "r"(st + (unsigned)(q * CB) + (unsigned)((cw * 4 + v) * 32 + l) * 16u));
                else
                    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n"
                                 : "=r"(w0), "=r"(w1)
                                 : "r"(st + (unsigned)(q * CB) + (unsigned)((cw * 4 + v) * 32 + l) * 8u));
                unsigned short h0, h1;
                const unsigned sa = st + STC + (unsigned)q * 256u + (unsigned)rowin * 2u;
                asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(h0) : "r"(sa));
                asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(h1) : "r"(sa + 16u));
                [[maybe_unused]] const uint32_t s0 = (uint32_t)h0 * 0x10001u, s1 = (uint32_t)h1 * 0x10001u;
                /* Q4_K: byte 0 the sub-block's scale, byte 1 its min */
                [[maybe_unused]] const float d0 = kd0 * (float)(h0 & 0xFFu), m0 = kn0 * (float)(h0 >> 8),
                                             d1 = kd1 * (float)(h1 & 0xFFu), m1 = kn1 * (float)(h1 >> 8);
                /* Q6_K: the 16-value sub-blocks' int8 scales, [group][half][row] */
                [[maybe_unused]] float e00 = 0.f, e01 = 0.f, e10 = 0.f, e11 = 0.f; /* e<half><row> = d sc */
                if constexpr (QB == 6) {
                    const unsigned sq = st + STC + (unsigned)q * 256u + (unsigned)rowin;
                    short c00, c01, c10, c11;
                    asm volatile("ld.shared.s8 %0, [%1];\n" : "=h"(c00) : "r"(sq));
                    asm volatile("ld.shared.s8 %0, [%1];\n" : "=h"(c01) : "r"(sq + 8u));
                    asm volatile("ld.shared.s8 %0, [%1];\n" : "=h"(c10) : "r"(sq + 128u));
                    asm volatile("ld.shared.s8 %0, [%1];\n" : "=h"(c11) : "r"(sq + 136u));
                    e00 = kd0 * (float)c00;
                    e01 = kd1 * (float)c01;
                    e10 = kd0 * (float)c10;
                    e11 = kd1 * (float)c11;
                }
                const unsigned tok = st + TOK + (unsigned)(2 * q * SLAB);
                /* k16 half h's fragment into a (h a constant: each call folds to one format's decoder) */
                auto frag = [&](int h, uint32_t(&a)[4]) {
                    if constexpr (QB == 8) {
                        deq(h ? w2 : w0, s0, a[0], a[2]);
                        deq(h ? w3 : w1, s1, a[1], a[3]);
                    } else if constexpr (QB == 4)
                        deq4(h ? w1 : w0, s0, s1, a);
                    else if constexpr (QB == 5)
                        deqk<0>(h ? w1 : w0, 0u, d0, m0, d1, m1, a);
                    else if constexpr (QB == 7)
                        deqk<1>(h ? w1 : w0, h ? w2 >> 8 : w2, d0, m0, d1, m1, a);
                    else
                        deq6(h ? w1 : w0, h ? w2 >> 16 : w2, h ? e10 : e00, h ? e11 : e01, a);
                };
                /* k16 h = 0 into a0 (its last reader was waited for a wgmma ago) */
                frag(0, a0);
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
                wg_rs<NW>(accw, a0, desc(tok));
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                fence_a(a1);
                /* the previous step's last wgmma is complete: its stage is free */
                if (q == 0 && it > it0) memra_mb_arrive(empty + 8 * ((it - it0 - 1) & (S - 1)));
                frag(1, a1);
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
                wg_rs<NW>(accw, a1, desc(tok + (unsigned)SLAB));
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                fence_a(a0);
            }
        }
    };
    if constexpr (FIT) {
        if (nv <= 64) kloop(w16_width<64>{});
        else if (nv <= 128) kloop(w16_width<128>{});
        else kloop(w16_width<160>{});
    } else {
        kloop(w16_width<BN>{});
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc<BN>(acc);
    const int r0 = rt * BM + rowin, r1 = r0 + 8;
    /* the output row of token (sorted row) t: the grouped tile scatters, except into split-k's parts */
    auto orow = [&](int t) -> long long {
        if constexpr (XE) return Z > 1 ? (long long)t : (long long)xe.perm[t];
        else return (long long)t;
    };
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        const int t0 = row0 + 8 * j + 2 * c;
        if (t0 < rend) {
            const long long o = orow(t0) * ldy;
            if (r0 < n) y[o + r0] = alpha * acc[4 * j + 0];
            if (r1 < n) y[o + r1] = alpha * acc[4 * j + 2];
        }
        if (t0 + 1 < rend) {
            const long long o = orow(t0 + 1) * ldy;
            if (r0 < n) y[o + r0] = alpha * acc[4 * j + 1];
            if (r1 < n) y[o + r1] = alpha * acc[4 * j + 3];
        }
    }
}

/* The activations' pass: x f32 [m][k] into the x16 tiles (zeros past m), one 16-byte chunk of the destination a
 * thread (ci, of mp k / 8), in the destination's order: its writes contiguous, each read one 32-byte sector. With
 * xh, the activation is f16 already [m][k] and each chunk is 16 of its bytes, moved. */
__device__ __forceinline__ void w16_x16(long long ci, const float *__restrict__ x, __half *__restrict__ x16, int m,
                                        int k, int mp, int BN, const __half *__restrict__ xh = nullptr)
{
    if (ci >= (long long)mp * k / 8) return;
    const int tn8 = (int)(ci & 7), kh = (int)((ci >> 3) & 1), ng = (int)((ci >> 4) % (BN / 8));
    const long long rest = ci / (2 * BN); /* tile * (k / 16) + slab: a slab is BN x 2 chunks */
    const int slab = (int)(rest % (k / 16)), tt = (int)(rest / (k / 16));
    const int t = tt * BN + ng * 8 + tn8, kk = slab * 16 + kh * 8;
    /* an activation already f16 (gemm_f16's x_is_f16) is moved, not rounded */
    const uint4 o = t < m ? w16_load8(x, xh, (long long)t * k + kk) : make_uint4(0u, 0u, 0u, 0u);
    reinterpret_cast<uint4 *>(x16)[ci] = o;
}

/* The grouped activations' pass: the token tiles of the routing's table, tile tt's token j the sorted row
 * s = row0 + j, x row perm[s] (zeros past the expert's end; tiles past the table's count are not written: no tile
 * reads them), in w16_x16's layout and chunk order over T BN-token tiles. x f32 (or f16 xh); al: x's rows 16-byte
 * aligned (vector loads), else element loads. */
__device__ __forceinline__ void w16_x16g(long long ci, const float *__restrict__ x, const __half *__restrict__ xh,
                                         __half *__restrict__ x16, int k, int T, int BN, int al, const w16_xe &xe)
{
    if (ci >= (long long)T * BN * k / 8) return;
    const int tn8 = (int)(ci & 7), kh = (int)((ci >> 3) & 1), ng = (int)((ci >> 4) % (BN / 8));
    const long long rest = ci / (2 * BN);
    const int slab = (int)(rest % (k / 16)), tt = (int)(rest / (k / 16));
    if (tt >= *xe.ntiles) return;
    const int e = xe.tiles[2 * tt], s = xe.tiles[2 * tt + 1] + ng * 8 + tn8, kk = slab * 16 + kh * 8;
    uint4 o = make_uint4(0u, 0u, 0u, 0u);
    if (s < xe.offsets[e + 1]) {
        const long long r = xe.perm[s];
        if (xh != nullptr) {
            const __half *src = xh + r * k + kk;
            if (al) {
                o = *reinterpret_cast<const uint4 *>(src);
            } else {
                const unsigned short *u = reinterpret_cast<const unsigned short *>(src);
                o = make_uint4((uint32_t)u[0] | (uint32_t)u[1] << 16, (uint32_t)u[2] | (uint32_t)u[3] << 16,
                               (uint32_t)u[4] | (uint32_t)u[5] << 16, (uint32_t)u[6] | (uint32_t)u[7] << 16);
            }
        } else {
            const float *src = x + r * k + kk;
            float v[8];
            if (al) {
                const float4 a = *reinterpret_cast<const float4 *>(src), b = *reinterpret_cast<const float4 *>(src + 4);
                v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
            } else {
#pragma unroll
                for (int i = 0; i < 8; i++) v[i] = src[i];
            }
            __half2 h0 = __floats2half2_rn(v[0], v[1]), h1 = __floats2half2_rn(v[2], v[3]),
                    h2 = __floats2half2_rn(v[4], v[5]), h3 = __floats2half2_rn(v[6], v[7]);
            o = make_uint4(*reinterpret_cast<uint32_t *>(&h0), *reinterpret_cast<uint32_t *>(&h1),
                           *reinterpret_cast<uint32_t *>(&h2), *reinterpret_cast<uint32_t *>(&h3));
        }
    }
    reinterpret_cast<uint4 *>(x16)[ci] = o;
}

/* The grouped split-k's sum of element i (of m n, part row-major [sorted row][n]): sorted rows before the
 * routing's end (offsets[E]) into y row perm[s]; the rest (ids outside [0, E)) have no output */
__device__ __forceinline__ void w16_sumg(long long i, const float *__restrict__ part, float *__restrict__ y, int m,
                                         int n, long long ldy, int Z, float alpha, int E, const w16_xe &xe)
{
    const long long total = (long long)m * n;
    if (i >= total) return;
    const int s = (int)(i / n);
    if (s >= xe.offsets[E]) return;
    float a = part[i];
    for (int z = 1; z < Z; z++) a += part[(long long)z * total + i];
    y[(long long)xe.perm[s] * ldy + i % n] = alpha * a;
}

/* split-k's sum of element i (of m n, row-major [m][n]): y[t][r] = alpha (the Z slices' partial sums added in
 * slice order) */
__device__ __forceinline__ void w16_sum(long long i, const float *__restrict__ part, float *__restrict__ y, int m, int n,
                                        long long ldy, int Z, float alpha)
{
    const long long total = (long long)m * n;
    if (i >= total) return;
    float a = part[i];
    for (int z = 1; z < Z; z++) a += part[(long long)z * total + i];
    y[(i / n) * ldy + i % n] = alpha * a;
}
