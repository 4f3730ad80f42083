/* The MMQ floor: q8_1 activation quantiser, Q8_0 x q8_1 GEMM on the int8 tensor
 * cores, and the accumulator probe built on the same tile.
 *
 * Kernels (one source, compiled for sm_90a and sm_120a; the GEMMs, the repack
 * and the quantiser use sm_80 features (cp.async, ldmatrix, s8 mma.sync) plus,
 * from sm_90, griddepcontrol for dependent launches (no-ops below)):
 *   memra_k_repack_q8_0, memra_k_gemm_q8_0r_mt4 / _mt2 / _mt4n3 / _mt2n3, memra_k_splitk_sum
 *                        the floor on Q8_0 records (the weight repacked at load):
 *                        see "repack_q8_0 and gemm_q8_0r" below. The default path.
 *   memra_k_gemm_q8_0r_wg / _wgt / _wgp / _wgs / _wgps
 *                        sm_90a only, MEMRA_MMQ_WG (opt-in): gemm_q8_0r's 128 x 128 tile on
 *                        the warpgroup MMA, fed by tensor copies; bit for bit the records
 *                        tiles; see "gemm_q8_0r on the warpgroup MMA".
 *   memra_k_gemm_kr_q4_k_* / _q5_k_* / _q6_k_*
 *                        the floor for K-quant weights (Q4_K, Q5_K, Q6_K) on their
 *                        K-packed codes and scales (the GGUF's bytes, widened to
 *                        int8 in the load stage): gemm_q8_0r's tile with the min
 *                        term or the per-16 scales in the fold; see "gemm_kr" below.
 *   memra_k_experts_route, memra_k_experts_q8_0r_mt1 / _mt2 / _mt4, memra_k_experts_kr_<format>_mt1 / _mt2 / _mt4
 *                        gemm_experts (MoE): the device-side routing (offsets,
 *                        permutation, tile table) and the grouped GEMMs on the
 *                        records tile, rows gathered per expert from the table;
 *                        see "gemm_experts on the records tile" at the end.
 *   memra_k_quant_q8_1   f32 [m x k] -> 144-byte records (f32 d[4], int8 qs[128]) and the sum plane,
 *                        record (kb, t) at kb * m + t, k padded to a multiple of
 *                        512 with zeros. One warp per 8 consecutive records and
 *                        pass (loads first, coalesced), one lane per 32-value
 *                        block after a shared-memory restage. Bit-identical to the host:
 *                        amax (fmaxf: NaN ignored), d = amax / 127 (IEEE division),
 *                        id = d ? 1 / d : 0, q = roundf(clamp(x * id, +-127)), NaN -> 0.
 *   memra_k_gemm_q8_0    the fall-back on Q8_0 blocks (no records, or no lane for
 *                        gemm_q8_0r): y[row_off + i, j] = alpha * sum_b (dw[j,b] * dx[i,b]) * I[i,j,b],
 *                        I the exact s32 dot of the 32-value block b, from
 *                        mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (one MMA = one block).
 *                        Last argument `variant` = MT: 32 MT tokens x 128 rows per CTA
 *                        (see "gemm_q8_0 v2"; the first generation, v1, is deleted:
 *                        no lane served it, git keeps it).
 *   memra_k_probe_s32 / memra_k_probe_f32 / memra_k_probe_mx
 *                        the accumulator probe: the same tile on raw bytes x [m x k],
 *                        w [n x k] (unit scales), with the s8 MMA (s32), the e4m3 MMA
 *                        (f32; kind::f8f6f4 on sm_120a), or kind::mxf8f6f4.block_scale
 *                        with unit ue8m0 scales (sm_120a only; a trap elsewhere, the
 *                        launcher declines first). Time only.
 *
 * The probe's tile (tile_step / tile_store). A CTA of 256 threads (8 warps as
 * 2 x 4) computes 128 tokens x 128 weight rows; each warp 64 x 32 (4 m16 x 4 n8
 * MMA tiles). The k loop walks 128 values per step through a two-stage
 * cp.async pipeline. Shared memory holds both operands in one "record" layout:
 * a row of 144 bytes = 4 f32 scales + 128 int8 (the q8_1 record itself), whose
 * 36-word stride makes the 8 rows of every ldmatrix phase hit distinct banks.
 * Rows and columns past the edges are zero-filled, so they add exact zeros.
 * The Q8_0 GEMMs use the same layout with their own loaders (see their sections).
 *
 * The probe's fold. Every s8 MMA starts from C = 0x4B400000 (1.5 * 2^23 as f32),
 * so the s32 result read as f32 is 1.5 * 2^23 + I exactly (|I| <= 32 * 127 * 127
 * < 2^22) and one FADD recovers I as f32 without an I2F: v = D - 1.5 * 2^23; then
 * acc += (dx * dw) * v (FMUL + FFMA). The f32 arms run the same three
 * instructions with C = 0 and a zero bias passed at run time. The GEMMs fold
 * with two FFMAs instead (see "gemm_q8_0 v2").
 *
 * Preconditions (checked by the C launchers): blockDim 256, dynamic shared
 * memory MMQ_SMEM_BYTES; gemm_q8_0: k a multiple of 32, w 2-byte aligned, the
 * records 16-byte aligned; probe: k a multiple of 32, x and w 16-byte aligned.
 */
#include <cuda_fp16.h>
#include <stdint.h>

#include "mmq.h"
#include "sk_sched.h"
#include "../common/route.cuh"
#include "../common/tile.cuh"

enum { MMQ_KIND_S8 = 0, MMQ_KIND_FP8 = 1, MMQ_KIND_MX = 2 };
enum { MMQ_FOLD_Q8 = 0, MMQ_FOLD_MIN = 1, MMQ_FOLD_Q6 = 2 }; /* mmq_step's folds */

/* ---- primitives ------------------------------------------------------------- */

/* cp.async, ldmatrix and the B fragments: common/tile.cuh (shared with fp8blk) */
__device__ __forceinline__ unsigned smem_u32(const void *p) { return memra_smem_u32(p); }
/* cp.async of 16 or 4 bytes, of which `src_bytes` are read; the rest zero-filled. */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    memra_cp16(memra_smem_u32(dst), src, src_bytes);
}
__device__ __forceinline__ void cp_async4(void *dst, const void *src, int src_bytes)
{
    memra_cp4(memra_smem_u32(dst), src, src_bytes);
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p) { memra_ldmatrix_x4(r, memra_smem_u32(p)); }

/* One m16n8k32 MMA from a fresh accumulator; d[] comes back as f32 bits. */
template <int KIND> __device__ __forceinline__ void mma_k32(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1);

template <> __device__ __forceinline__ void mma_k32<MMQ_KIND_S8>(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    int r0, r1, r2, r3;
    const int c = (int)MMQ_MAGIC_BITS;
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%10,%10,%10};\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c));
    d[0] = __int_as_float(r0);
    d[1] = __int_as_float(r1);
    d[2] = __int_as_float(r2);
    d[3] = __int_as_float(r3);
}

#if defined(__CUDA_ARCH_FEAT_SM120_ALL) || defined(__CUDA_ARCH_FEAT_SM121_ALL)
#define MMQ_SM120 1
#else
#define MMQ_SM120 0
#endif

template <> __device__ __forceinline__ void mma_k32<MMQ_KIND_FP8>(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    const float z = 0.0f;
#if MMQ_SM120
    asm("mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%10,%10,%10,%10};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                 "{%8,%9}, {%10,%10,%10,%10};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
#else
    (void)z, (void)a, (void)b0, (void)b1;
    d[0] = d[1] = d[2] = d[3] = 0.0f;
    __trap(); /* e4m3 mma.sync needs sm_89+ (the sm_80/86 cubins and the compute_80 PTX have none); the launcher declines */
#endif
}

template <> __device__ __forceinline__ void mma_k32<MMQ_KIND_MX>(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#if MMQ_SM120
    const float z = 0.0f;
    const uint32_t unit = 0x7F7F7F7Fu; /* ue8m0 127 = 2^0 in every byte */
    const uint16_t sel = 0;
    asm("mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10}, {%11}, {%12,%12}, {%11}, {%12,%12};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z), "r"(unit), "h"(sel));
#else
    (void)a, (void)b0, (void)b1;
    d[0] = d[1] = d[2] = d[3] = 0.0f;
    __trap(); /* mxf8f6f4 exists on sm_120a only; the launcher declines before this */
#endif
}

/* ---- programmatic dependent launch ------------------------------------------ *
 * quant_q8_1, gemm_q8_0r and the split-k sum are launched as programmatic
 * dependents of the kernel before them in the stream (mmq_ops.c): they may
 * become resident once that kernel has triggered, and pdl_wait
 * (griddepcontrol.wait) holds each of their threads until every prerequisite
 * grid has completed and its memory is visible, so nothing is read or written
 * before it. The quantiser and the tile trigger (launch_dependents) early.
 * Both are no-ops for a plain launch and below sm_90 (where the launcher never
 * asks for one). */
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* ---- quant_q8_1 ------------------------------------------------------------- */

__device__ __forceinline__ int q8_round(float v)
{
    if (v != v) return 0;
    v = fminf(fmaxf(v, -127.0f), 127.0f);
    return (int)roundf(v);
}

/* Records per warp and pass: 8, so that each lane owns one 32-value block.
 * The warp loads its 8 records coalesced (lane l: values 4l..4l+3 of each,
 * all 8 loads issued before any arithmetic), stages them through shared
 * memory, and lane l then reads block l whole (block b % 4 of record b / 4):
 * the amax, the two divisions and the 32 roundings are one lane's, with no
 * shuffle, and the lane writes its 32 codes as two 16-byte stores and its
 * scale. Staging rows are 36 words (32 values + 4 pad), so the 16-byte stores
 * (8 lanes: one row) and the 16-byte loads (8 lanes: 8 rows 36 words apart)
 * hit distinct banks. The launcher sizes the grid with the same number. */

/* One pass of a warp: its 8 records' values v (lane l: values 4 l .. 4 l + 3 of each record, as loaded)
 * staged through S, lane l's block l quantised, and record rec0 + l / 4 written where live (rec0 + l / 4 <
 * end): the codes, the scale and the sum plane's entry (the plane after all `total` records). Both
 * quantisers' passes, so that their bytes agree. */
__device__ __forceinline__ void quant_q8_1_pass(float *S, int lane, const float4 (&v)[QUANT_RECS], long long rec0,
                                                long long end, long long total, unsigned char *__restrict__ dst)
{
#pragma unroll
    for (int r = 0; r < QUANT_RECS; r++)
        *reinterpret_cast<float4 *>(S + (r * 4 + (lane >> 3)) * QUANT_ROW + (lane & 7) * 4) = v[r];
    __syncwarp();
    float4 b4[8];
#pragma unroll
    for (int i = 0; i < 8; i++) b4[i] = *reinterpret_cast<const float4 *>(S + lane * QUANT_ROW + 4 * i);
    __syncwarp(); /* every lane has read its block before the next pass stages */
    const float *b = reinterpret_cast<const float *>(b4);
    /* from 0, as the host: a block of NaNs alone gets d = 0 (fmaxf drops NaN) */
    float a = 0.0f;
#pragma unroll
    for (int e = 0; e < 32; e++) a = fmaxf(a, fabsf(b[e]));
    const float d = __fdiv_rn(a, 127.0f);
    const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    unsigned q[8];
    int sum = 0;
#pragma unroll
    for (int w = 0; w < 8; w++) {
        q[w] = 0;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int c = q8_round(__fmul_rn(b[4 * w + e], id));
            sum += c;
            q[w] |= ((unsigned)c & 0xFFu) << (8 * e);
        }
    }
    const long long rec = rec0 + (lane >> 2);
    if (rec < end) {
        unsigned char *r = dst + rec * 144;
        *reinterpret_cast<uint4 *>(r + 16 + (lane & 3) * 32) = make_uint4(q[0], q[1], q[2], q[3]);
        *reinterpret_cast<uint4 *>(r + 32 + (lane & 3) * 32) = make_uint4(q[4], q[5], q[6], q[7]);
        *reinterpret_cast<float *>(r + 4 * (lane & 3)) = d;
        /* the sum plane (memra_q8_1_plane): t = fl(S d), +0 for S = 0 */
        *reinterpret_cast<float *>(dst + total * 144 + rec * 16 + 4 * (lane & 3)) = sum != 0 ? __fmul_rn((float)sum, d) : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_q8_1(const float *__restrict__ x, int m, int k, unsigned char *__restrict__ dst)
{
    __shared__ __align__(16) float stage[8][QUANT_RECS * 4 * QUANT_ROW];
    pdl_trigger(); /* the GEMM after it may launch once every CTA of this grid runs */
    pdl_wait();    /* x (and dst's earlier readers) complete */
    const int lane = threadIdx.x & 31;
    float *const S = stage[threadIdx.x >> 5];
    const long long nkb = ((long long)k + 511) / 512 * 4;
    const long long total = nkb * m;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    const bool vec = (k & 3) == 0 && ((uintptr_t)x & 15) == 0; /* every row 16-byte aligned */
    for (long long rec0 = ((long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * QUANT_RECS; rec0 < total;
         rec0 += warps * QUANT_RECS) {
        long long kb = rec0 / m, t = rec0 - kb * m;
        float4 v[QUANT_RECS];
#pragma unroll
        for (int r = 0; r < QUANT_RECS; r++) {
            const long long c = kb * 128 + lane * 4;
            const float *row = x + t * (long long)k;
            const bool live = rec0 + r < total;
            if (vec) { /* the same values through one 16-byte load (c < k implies c + 4 <= k here) */
                v[r] = live && c < k ? *reinterpret_cast<const float4 *>(row + c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            } else {
                v[r].x = live && c + 0 < k ? row[c + 0] : 0.0f;
                v[r].y = live && c + 1 < k ? row[c + 1] : 0.0f;
                v[r].z = live && c + 2 < k ? row[c + 2] : 0.0f;
                v[r].w = live && c + 3 < k ? row[c + 3] : 0.0f;
            }
            if (++t == m) t = 0, kb++;
        }
        quant_q8_1_pass(S, lane, v, rec0, total, total, dst);
    }
}

/* MEMRA_MMQ_QUANT_LEAN (the default since run r2: 4-8% faster than memra_k_quant_q8_1, which =0 takes): the same
 * bytes from a 2-D grid, (ceil(m / 64), records a row):
 * block (bx, kb) quantises record column kb (values 128 kb .. + 127 of every row) of tokens 64 bx .. + 63,
 * warp w the 8 tokens from 64 bx + 8 w. A warp's records then share kb, so the default's grid-stride loop,
 * 64-bit division and per-record wrap (about a third of its pass's instructions in the SASS) are gone; the
 * records a warp writes are still consecutive (rec = kb m + t). The launcher keeps the default kernel where
 * the records a row exceed the grid's y limit (65535: k past 8 M values). */
extern "C" __global__ void __launch_bounds__(256)
memra_k_quant_q8_1l(const float *__restrict__ x, int m, int k, unsigned char *__restrict__ dst)
{
    __shared__ __align__(16) float stage[8][QUANT_RECS * 4 * QUANT_ROW];
    pdl_trigger();
    pdl_wait();
    const int lane = threadIdx.x & 31, t0 = ((int)blockIdx.x * 8 + (int)(threadIdx.x >> 5)) * QUANT_RECS;
    if (t0 >= m) return; /* whole warps past m (only __syncwarp below) */
    float *const S = stage[threadIdx.x >> 5];
    const int kb = (int)blockIdx.y, c = kb * 128 + lane * 4;
    const bool vec = (k & 3) == 0 && ((uintptr_t)x & 15) == 0;
    float4 v[QUANT_RECS];
    const int live_n = m - t0; /* tokens t0 .. t0 + live_n - 1 exist */
    const float *const x0 = x + (long long)t0 * k;
    if (vec) { /* rows 16-byte aligned, k a multiple of 4: c < k implies c + 4 <= k */
#pragma unroll
        for (int r = 0; r < QUANT_RECS; r++)
            v[r] = r < live_n && c < k ? *reinterpret_cast<const float4 *>(x0 + (long long)r * k + c)
                                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
#pragma unroll
        for (int r = 0; r < QUANT_RECS; r++) {
            float *const e = reinterpret_cast<float *>(&v[r]);
#pragma unroll
            for (int j = 0; j < 4; j++) e[j] = r < live_n && c + j < k ? x0[(long long)r * k + c + j] : 0.0f;
        }
    }
    /* records of tokens past m are not written: rec0 + l / 4 < kb m + m exactly when the token is < m */
    const long long total = (long long)gridDim.y * m;
    quant_q8_1_pass(S, lane, v, (long long)kb * m + t0, (long long)kb * m + m, total, dst);
}

/* ---- the tile ------------------------------------------------------------------ */

/* One 128-deep step of the warp's 64 x 32 sub-tile: ldmatrix fragments of A
 * (tokens) and B (weight rows) out of record rows, one MMA per 32-value block,
 * each folded at once with its two scales. */
template <int KIND>
__device__ __forceinline__ void tile_step(float acc[4][4][4], const unsigned char *As, const unsigned char *Bs, int wm,
                                          int wn, int lane, float bias)
{
    const float *Af = reinterpret_cast<const float *>(As);
    const float *Bf = reinterpret_cast<const float *>(Bs);
#pragma unroll 1 /* rolled: keeps the tile within 128 registers, two CTAs per SM on sm_90 */
    for (int g = 0; g < 4; g++) {
        uint32_t b[4][2];
        float sw[4][2];
#pragma unroll
        for (int np = 0; np < 2; np++) {
            uint32_t r[4];
            ldmatrix_x4(r, Bs + (wn * 32 + np * 16 + (lane & 7) + (lane >> 4) * 8) * MMQ_ROW + 16 + g * 32 +
                               ((lane >> 3) & 1) * 16);
            b[2 * np][0] = r[0];
            b[2 * np][1] = r[1];
            b[2 * np + 1][0] = r[2];
            b[2 * np + 1][1] = r[3];
        }
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int c = 0; c < 2; c++) sw[nt][c] = Bf[(wn * 32 + nt * 8 + (lane & 3) * 2 + c) * (MMQ_ROW / 4) + g];
#pragma unroll
        for (int mt = 0; mt < 4; mt++) {
            uint32_t a[4];
            ldmatrix_x4(a, As + memra_a_frag_off<MMQ_ROW>(wm * 64 + mt * 16, lane, 16 + g * 32));
            const int row = wm * 64 + mt * 16 + (lane >> 2);
            const float sx0 = Af[row * (MMQ_ROW / 4) + g], sx1 = Af[(row + 8) * (MMQ_ROW / 4) + g];
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                float d[4];
                mma_k32<KIND>(d, a, b[nt][0], b[nt][1]);
                acc[mt][nt][0] = fmaf(sx0 * sw[nt][0], d[0] + bias, acc[mt][nt][0]);
                acc[mt][nt][1] = fmaf(sx0 * sw[nt][1], d[1] + bias, acc[mt][nt][1]);
                acc[mt][nt][2] = fmaf(sx1 * sw[nt][0], d[2] + bias, acc[mt][nt][2]);
                acc[mt][nt][3] = fmaf(sx1 * sw[nt][1], d[3] + bias, acc[mt][nt][3]);
            }
        }
    }
}

__device__ __forceinline__ void tile_store(const float acc[4][4][4], float *y, long long ldy, int m, int n, int i0,
                                           int j0, int wm, int wn, int lane, float alpha)
{
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = i0 + wm * 64 + mt * 16 + (lane >> 2) + 8 * (e >> 1);
                const int j = j0 + wn * 32 + nt * 8 + (lane & 3) * 2 + (e & 1);
                if (i < m && j < n) y[(long long)i * ldy + j] = alpha * acc[mt][nt][e];
            }
}

/* ---- gemm_q8_0 v2 ------------------------------------------------------------------
 *
 * Same MMA and the same per-block integer dots as the deleted v1 (the probe's
 * tile with a raw-copy-and-realign weight loader); what changed:
 *  - the fold is two FFMAs per output element instead of FADD + FMUL + FFMA:
 *      v = fma(D, sw, mw)      D = 1.5 * 2^23 + I (the MMA's s32 read as f32),
 *                              mw = -1.5 * 2^23 * sw, exact (sw is an f16 value:
 *                              11 significant bits, so 1.5 sw needs 12), hence
 *                              v = fl(sw * I) with one rounding;
 *      acc = fma(sx, v, acc)   one rounding for product-and-add.
 *    Same two roundings per block as v1's fl(fl(sx sw) I) + acc, so the same band.
 *    sw and mw are tabled per (block, row) once per k step (float2), read as a
 *    float4 per n8 tile (the thread's two columns).
 *  - Q8_0 rows are copied with 8-byte cp.async (18 per row tile, from the 8-byte
 *    aligned address at or below the tile: 34 * 4 = 136 = 17 * 8, so the offset
 *    (w + 34 j nb) & 7 of row j is the same at every k step); one warp-wide
 *    funnel-shift pass per row puts the 128 quants 16-byte aligned for ldmatrix.
 *  - two barriers per k step instead of three; the activation records are
 *    double-buffered, the raw weight tile single-buffered (loaded for step kt+1
 *    right after step kt's realign, so it lands during step kt's MMAs).
 *  - MT (m16 tiles per warp) is a template argument: the CTA computes 32 MT
 *    tokens x 128 weight rows (MT = 4: 128 x 128, warp 64 x 32; MT = 2: 64 x 128;
 *    MT = 1: 32 x 128), so the launcher can fill the machine when m n is small.
 * Shared memory: 2 x (32 MT x 144) records + 128 x 144 raw + 128 x 144 quants +
 * 4 x 128 x 8 scales = 77824 bytes at MT = 4 (within MMQ_SMEM_BYTES). */

__device__ __forceinline__ void cp_async8(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}

/* threadIdx.x through volatile asm: the loaders' per-thread indices are then
 * recomputed per call instead of being hoisted out of the k loop into registers
 * (which the 128-register budget cannot afford: they spill). */
__device__ __forceinline__ int q2_tid()
{
    int t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    return t;
}

/* Activation records of step kt for tokens i0..i0+32MT-1 (verbatim, zero past m). */
template <int MT>
__device__ __forceinline__ void q2_load_records(unsigned char *As, const unsigned char *xq, int m, int i0, int kt)
{
    const int tid = q2_tid();
#pragma unroll
    for (int e = 0; e < (32 * MT * 9 + MMQ_THREADS - 1) / MMQ_THREADS; e++) {
        const int idx = tid + e * MMQ_THREADS;
        if (idx < 32 * MT * 9) {
            const int r = idx / 9, c = idx - r * 9;
            const int t = i0 + r;
            const unsigned char *src = t < m ? xq + ((long long)kt * m + t) * 144 + c * 16 : xq;
            cp_async16(As + r * MMQ_ROW + c * 16, src, t < m ? 16 : 0);
        }
    }
}

/* Raw bytes of Q8_0 blocks 4kt..4kt+3 of rows j0..j0+127: row r's 144-byte slot
 * holds 18 8-byte chunks from the 8-byte aligned address at or below its first
 * block; bytes past the row's last valid block and rows past n are zero-filled.
 * Warp w copies rows 16w..16w+15: eight instructions of two rows x chunks 0..15
 * (128 contiguous bytes per row), one of sixteen rows x chunks 16, 17. The one
 * chunk that would start below w itself (row 0, step 0, w not 8-byte aligned)
 * is not copied asynchronously; thread 0 fills it with plain 2-byte loads from w
 * on (visible after the next barrier). Likewise the one chunk that would end
 * past the weight's last byte (the caller's buffer is never read past its end):
 * its thread loads the valid bytes plainly. `dummy`: any valid 16-byte aligned
 * address, the source of zero-byte copies. */
__device__ __forceinline__ void q2_load_raw(unsigned char *R, const unsigned char *w, int n, int nb, int j0, int kt,
                                            const unsigned char *dummy)
{
    const int t = q2_tid(), lane = t & 31, warp = t >> 5;
    const int nv = min(4, nb - 4 * kt);
    const uintptr_t rs = 34u * (uintptr_t)(unsigned)nb;
    const uintptr_t tile = (uintptr_t)w + ((uintptr_t)(unsigned)j0 * (unsigned)nb + 4u * (unsigned)kt) * 34u;
    const uintptr_t wend = (uintptr_t)w + (uintptr_t)(unsigned)n * rs; /* one past the weight's last byte */
#pragma unroll
    for (int e = 0; e < 9; e++) {
        const int r = e < 8 ? warp * 16 + 2 * e + (lane >> 4) : warp * 16 + (lane >> 1);
        const int c = e < 8 ? (lane & 15) : 16 + (lane & 1);
        const uintptr_t s = tile + (uintptr_t)(unsigned)r * rs;
        const uintptr_t a = (s & ~(uintptr_t)7) + 8u * (unsigned)c;
        const int lim = (int)(s & 7u) + nv * 34 - 8 * c; /* valid bytes from a on */
        const int bytes = j0 + r < n ? min(8, max(0, lim)) : 0;
        const unsigned char *src = bytes > 0 ? reinterpret_cast<const unsigned char *>(a) : dummy;
        if (a < (uintptr_t)w) continue;
        if (bytes > 0 && a + 8u > wend) {
            /* The weight's last chunk: the caller's buffer ends inside it, and an
             * 8-byte cp.async names 8 bytes whatever its source size. Plain 2-byte
             * loads of the valid bytes, zeros after; visible after the next
             * barrier, as the head chunk below. */
#pragma unroll
            for (int h = 0; h < 4; h++)
                reinterpret_cast<unsigned short *>(R + r * Q2_ROW + 8 * c)[h] =
                    2 * h < bytes ? reinterpret_cast<const unsigned short *>(a)[h] : (unsigned short)0;
        } else {
            cp_async8(R + r * Q2_ROW + 8 * c, src, bytes);
        }
    }
    if (t == 0 && j0 == 0 && kt == 0 && ((uintptr_t)w & 7u) != 0) {
        const uintptr_t a = (uintptr_t)w & ~(uintptr_t)7;
#pragma unroll
        for (int h = 0; h < 4; h++) {
            const uintptr_t p = a + 2u * h;
            const unsigned short v = p >= (uintptr_t)w ? *reinterpret_cast<const unsigned short *>(p) : (unsigned short)0;
            *reinterpret_cast<unsigned short *>(R + 2 * h) = v;
        }
    }
}

/* Raw row tiles -> Bq (128 quants per row, 16-byte aligned, row stride 144) and
 * Sc (float2 {sw, -1.5 2^23 sw} at [block][row]). Warp w realigns rows
 * 16w..16w+15, lane l word l of each (block l/8, bytes 4(l%8)..). */
__device__ __forceinline__ void q2_realign(unsigned char *Bq, float2 *Sc, const unsigned char *R,
                                           const unsigned char *w, int nb, int j0)
{
    const int t = q2_tid(), lane = t & 31, warp = t >> 5;
#pragma unroll 4
    for (int it = 0; it < 16; it++) {
        const int r = warp * 16 + it;
        const unsigned sh = ((unsigned)(uintptr_t)w + 34u * (unsigned)(j0 + r) * (unsigned)nb) & 7u;
        const int o = (int)sh + 34 * (lane >> 3) + 2 + 4 * (lane & 7);
        const unsigned *raw = reinterpret_cast<const unsigned *>(R + r * Q2_ROW);
        reinterpret_cast<unsigned *>(Bq + r * Q2_ROW)[lane] = __funnelshift_r(raw[o >> 2], raw[(o >> 2) + 1], (o & 3) * 8);
    }
#pragma unroll
    for (int e = 0; e < 2; e++) { /* 4 blocks x 128 rows = 2 x 256 */
        const int idx = t + e * MMQ_THREADS;
        const int b = idx >> 7, r = idx & 127;
        const unsigned sh = ((unsigned)(uintptr_t)w + 34u * (unsigned)(j0 + r) * (unsigned)nb) & 7u;
        const unsigned short h = *reinterpret_cast<const unsigned short *>(R + r * Q2_ROW + sh + 34 * b);
        const float sw = __half2float(__ushort_as_half(h));
        Sc[b * MMQ_BN + r] = make_float2(sw, sw * -MMQ_MAGIC);
    }
}

/* One 128-deep step of the warp's 16MT x 32 sub-tile. */
template <int MT>
__device__ __forceinline__ void q2_step(float acc[MT][4][4], const unsigned char *As, const unsigned char *Bq,
                                        const float2 *Sc)
{
    const float *Af = reinterpret_cast<const float *>(As);
#pragma unroll 1
    for (int g = 0; g < 4; g++) {
        /* lane-derived offsets recomputed per block: nothing lives across the
         * loop but the accumulators (128 registers, two CTAs per SM, no spill) */
        const int t = q2_tid(), lane = t & 31, wm = (t >> 5) & 1, wn = t >> 6;
        uint32_t b[4][2];
#pragma unroll
        for (int np = 0; np < 2; np++) {
            uint32_t r[4];
            ldmatrix_x4(r, Bq + (wn * 32 + np * 16 + (lane & 7) + (lane >> 4) * 8) * Q2_ROW + g * 32 +
                               ((lane >> 3) & 1) * 16);
            b[2 * np][0] = r[0];
            b[2 * np][1] = r[1];
            b[2 * np + 1][0] = r[2];
            b[2 * np + 1][1] = r[3];
        }
        float4 sc[4]; /* {sw, mw} of the thread's two columns of each n8 tile */
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
            sc[nt] = *reinterpret_cast<const float4 *>(Sc + g * MMQ_BN + wn * 32 + nt * 8 + (lane & 3) * 2);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            uint32_t a[4];
            ldmatrix_x4(a, As + memra_a_frag_off<MMQ_ROW>(wm * 16 * MT + mt * 16, lane, 16 + g * 32));
            const int row = wm * 16 * MT + mt * 16 + (lane >> 2);
            const float sx0 = Af[row * (MMQ_ROW / 4) + g], sx1 = Af[(row + 8) * (MMQ_ROW / 4) + g];
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                float d[4];
                mma_k32<MMQ_KIND_S8>(d, a, b[nt][0], b[nt][1]);
                acc[mt][nt][0] = fmaf(sx0, fmaf(d[0], sc[nt].x, sc[nt].y), acc[mt][nt][0]);
                acc[mt][nt][1] = fmaf(sx0, fmaf(d[1], sc[nt].z, sc[nt].w), acc[mt][nt][1]);
                acc[mt][nt][2] = fmaf(sx1, fmaf(d[2], sc[nt].x, sc[nt].y), acc[mt][nt][2]);
                acc[mt][nt][3] = fmaf(sx1, fmaf(d[3], sc[nt].z, sc[nt].w), acc[mt][nt][3]);
            }
        }
    }
}

/* The thread's outputs of a warp's 16 MT x 8 NT sub-tile whose first row and
 * column are wi0, wj0: out[i * ld + j] = f * acc for (i, j) inside m x n. */
template <int MT, int NT = 4>
__device__ __forceinline__ void q2_store(const float (&acc)[MT][NT][4], float *out, long long ld, float f, int m, int n,
                                         int wi0, int wj0, int lane)
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = wi0 + mt * 16 + (lane >> 2) + 8 * (e >> 1);
                const int j = wj0 + nt * 8 + (lane & 3) * 2 + (e & 1);
                if (i < m && j < n) out[(long long)i * ld + j] = f * acc[mt][nt][e];
            }
}

template <int MT>
__device__ __noinline__ void gemm_q8_0_v2(unsigned char *smem, const unsigned char *__restrict__ w,
                                             const unsigned char *__restrict__ xq, float *__restrict__ y, int m,
                                             int n, int k, long long ldy, float alpha)
{
    unsigned char *const As0 = smem;
    unsigned char *const R = smem + 2 * Q2_A_BYTES(MT);
    unsigned char *const Bq = R + MMQ_BN * Q2_ROW;
    float2 *const Sc = reinterpret_cast<float2 *>(Bq + MMQ_BN * Q2_ROW);
    const int i0 = blockIdx.x * 32 * MT, j0 = blockIdx.y * MMQ_BN;
    const int nb = k / 32, nk = (nb + 3) / 4;

    float acc[MT][4][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0.0f;
    const int t = q2_tid(), lane = t & 31, wm = (t >> 5) & 1, wn = t >> 6;

    q2_load_records<MT>(As0, xq, m, i0, 0);
    q2_load_raw(R, w, n, nb, j0, 0, xq);
    cp_async_commit();
    for (int kt = 0; kt < nk; kt++) {
        unsigned char *const Acur = As0 + (kt & 1) * Q2_A_BYTES(MT);
        cp_async_wait<0>();
        __syncthreads(); /* records and raw tile of kt landed; step kt-1's MMAs done (Bq, Sc, other A slot free) */
        if (kt + 1 < nk) q2_load_records<MT>(As0 + ((kt + 1) & 1) * Q2_A_BYTES(MT), xq, m, i0, kt + 1);
        cp_async_commit();
        q2_realign(Bq, Sc, R, w, nb, j0);
        __syncthreads(); /* Bq, Sc ready; R free */
        if (kt + 1 < nk) q2_load_raw(R, w, n, nb, j0, kt + 1, xq);
        cp_async_commit();
        q2_step<MT>(acc, Acur, Bq, Sc);
    }
    q2_store<MT>(acc, y, ldy, alpha, m, n, i0 + wm * 16 * MT, j0 + wn * 32, lane);
}

/* variant: 4 / 2 / 1 = MT (CTA tile 128 / 64 / 32 tokens x 128 weight rows);
 * any other value runs MT = 4. gridDim.x = ceil(m / tokens per CTA),
 * gridDim.y = ceil(n / 128); dynamic shared memory Q2_SMEM_BYTES(MT) (the
 * function's limit is set to MMQ_SMEM_BYTES, which covers every MT). */
extern "C" __global__ void __launch_bounds__(MMQ_THREADS, 2)
memra_k_gemm_q8_0(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq, float *__restrict__ y,
                  int m, int n, int k, long long ldy, float alpha, int variant)
{
    extern __shared__ __align__(16) unsigned char smem[];
    switch (variant) {
    case 2: gemm_q8_0_v2<2>(smem, w, xq, y, m, n, k, ldy, alpha); break;
    case 1: gemm_q8_0_v2<1>(smem, w, xq, y, m, n, k, ldy, alpha); break;
    default: gemm_q8_0_v2<4>(smem, w, xq, y, m, n, k, ldy, alpha); break;
    }
}

static_assert(Q2_SMEM_BYTES(4) <= MMQ_SMEM_BYTES, "v2 tile must fit the loader's dynamic shared memory limit");

/* ---- repack_q8_0 and gemm_q8_0r (v3: the weight in Q8_0 records) --------------------
 *
 * memra_k_repack_q8_0  Q8_0 [rows x cols] -> Q8_0 records (module.h,
 *                      memra_q8_0r_bytes): record (g, j) at g rows + j = f32 d[4]
 *                      (__half2float: exact) + int8 qs[128]; blocks past cols are
 *                      d = 0, qs = 0. One warp per record, lane l owns qs word l
 *                      (block l/8, bytes 4(l%8)..), read as two 2-byte loads.
 *
 * memra_k_gemm_q8_0r   the GEMM on records. Both operands are now the same
 *                      144-byte records, 16-byte aligned, and the records of a
 *                      CTA's 128 rows (or 32 MT tokens) at one k step are one
 *                      contiguous run: a stage is two runs of 16-byte cp.async
 *                      (chunk c of the run lands at byte 16 c of the slot; chunks
 *                      of rows past the edge are zero-filled), with no realign
 *                      pass and no scale table. So:
 *  - a 3-stage pipeline with one barrier per k step: step kt waits for its own
 *    group, then the barrier (which also ends every warp's reads of step kt-1)
 *    frees slot (kt+2) % 3 for the copies of step kt+2;
 *  - the fold reads sw straight from the weight record rows (rows 36 words
 *    apart: conflict-free) and forms mw = -1.5 2^23 sw in registers; otherwise
 *    it is v2's two-FFMA fold, so the same roundings and the same band;
 *  - split-k: gridDim.z slices of the k steps (slice z: steps G z / S ..
 *    G (z+1) / S - 1). With S > 1 each slice writes its raw sums to
 *    part[z][m][n] and memra_k_splitk_sum adds the slices in order z = 0..S-1
 *    and scales by alpha: deterministic, one more rounding per slice.
 * CTA: 256 threads as 2 x 4 warps; 32 MT tokens x 32 NT rows; warp 16 MT x 8 NT
 * (MT m16 tiles x NT n8 tiles), NT = 4 (128 rows) or 3 (96 rows: more CTAs
 * where 128-row tiles leave SMs idle). Shared memory 3 x (32 MT + 32 NT) x 144
 * bytes: 110592 at MT = 4, NT = 4 (two CTAs per SM on sm_90), 82944 at 2 / 4,
 * 96768 at 4 / 3, 69120 at 2 / 3. */

extern "C" __global__ void __launch_bounds__(256)
memra_k_repack_q8_0(const unsigned char *__restrict__ src, long long rows, int cols, unsigned char *__restrict__ dst)
{
    const int lane = threadIdx.x & 31;
    const int nb = cols / 32;
    const long long total = ((long long)cols + 127) / 128 * rows;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    for (long long rec = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); rec < total; rec += warps) {
        const long long g = rec / rows, j = rec - g * rows;
        const int b = 4 * (int)g + (lane >> 3);
        unsigned q = 0;
        float d = 0.0f;
        if (b < nb) {
            const unsigned char *blk = src + ((long long)j * nb + b) * 34;
            const unsigned short *h = reinterpret_cast<const unsigned short *>(blk + 2 + 4 * (lane & 7));
            q = (unsigned)h[0] | ((unsigned)h[1] << 16);
            if ((lane & 7) == 0) d = __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short *>(blk)));
        }
        unsigned char *r = dst + rec * 144;
        *reinterpret_cast<unsigned *>(r + 16 + lane * 4) = q;
        if ((lane & 7) == 0) *reinterpret_cast<float *>(r + 4 * (lane >> 3)) = d;
    }
}

__device__ __forceinline__ void cp_async16_at(uint32_t dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

/* One contiguous run of SLOTS records (the tile's rows or tokens at one k step)
 * into S, of which the first `rows` exist (the rest zero-filled). Thread t
 * copies chunks t, t + 256, ...: in the common case (every row exists) that is
 * one base address per side plus immediate offsets; edge tiles take the
 * guarded path with zero-fill. */
template <int SLOTS>
__device__ __forceinline__ void r3_copy_run(unsigned char *S, const unsigned char *src, int rows)
{
    constexpr int CH = SLOTS * 9, FULL = CH / MMQ_THREADS, REM = CH - FULL * MMQ_THREADS;
    const int tid = threadIdx.x;
    const uint32_t d = smem_u32(S) + tid * 16;
    const unsigned char *s = src + tid * 16;
    if (rows == SLOTS) {
#pragma unroll
        for (int e = 0; e < FULL; e++) cp_async16_at(d + e * MMQ_THREADS * 16, s + e * MMQ_THREADS * 16);
        if (REM != 0 && tid < REM) cp_async16_at(d + FULL * MMQ_THREADS * 16, s + FULL * MMQ_THREADS * 16);
    } else {
        const int lim = rows * 9;
#pragma unroll
        for (int e = 0; e < FULL + (REM != 0); e++) {
            const int idx = tid + e * MMQ_THREADS;
            if (e < FULL || idx < CH) {
                const bool ok = idx < lim;
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d + e * MMQ_THREADS * 16),
                             "l"(ok ? s + e * MMQ_THREADS * 16 : src), "r"(ok ? 16 : 0));
            }
        }
    }
}

/* ---- the records tile, shared by gemm_q8_0r and gemm_kr -----------------------------
 * One CTA: 32 MT tokens x 32 NT weight rows, 2 x 4 warps (a warp 16 MT x 8 NT), the
 * k steps of 128 of its split-k slice (blockIdx.z of gridDim.z), the first `arows` /
 * `brows` rows existing. Both kernels set it up, zero their accumulators, load B
 * fragments and write their result through these helpers; they differ in the
 * weight's load stage and the fold. */
struct mmq_tile {
    int lane, wm, wn;     /* the thread in its warp, the warp in the 2 x 4 grid */
    int i0, j0;           /* the CTA's first token and weight row */
    int S, z, g0, nk;     /* split-k: slices, this slice, its first step and step count */
    int arows, brows;     /* the tokens and weight rows of the tile that exist */
};
template <int MT, int NT>
__device__ __forceinline__ mmq_tile mmq_tile_of(int m, int n, int k)
{
    mmq_tile t;
    const int warp = threadIdx.x >> 5;
    t.lane = threadIdx.x & 31;
    t.wm = warp & 1;
    t.wn = warp >> 1;
    t.i0 = blockIdx.x * 32 * MT;
    t.j0 = blockIdx.y * 32 * NT;
    const int G = (k + 127) / 128;
    t.S = (int)gridDim.z;
    t.z = (int)blockIdx.z;
    t.g0 = (int)((long long)G * t.z / t.S);
    t.nk = (int)((long long)G * (t.z + 1) / t.S) - t.g0;
    t.arows = min(32 * MT, m - t.i0);
    t.brows = min(32 * NT, n - t.j0);
    return t;
}
template <int MT, int NT> __device__ __forceinline__ void mmq_zero(float (&acc)[MT][NT][4])
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0.0f;
}
/* The thread's offsets in a stage slot, for every records tile (a macro: the bodies' own code,
 * their PTX unchanged; a helper returning a struct compiled to another instruction order): a_off /
 * b_off its ldmatrix addresses at byte 16 of the rows (past the four f32 scales; common/tile.cuh's
 * layouts), ax_off its token scale row (lane / 4 of m16 tile 0), bw_off its weight scale row
 * (BW_ROW: 2 (lane % 4) of n8 tile 0); B_BASE where the weight rows start, WROW0 the warp's first
 * token row (wm 16 MT; the interleaved grouped tiles wm 16). lane, wm, wn, MT and NT from
 * the caller's scope. */
#define MMQ_SLOT_OFFSETS(B_BASE, BW_ROW, WROW0)                                                             \
    const int a_off = ((WROW0) + (lane & 15)) * MMQ_ROW + 16 + (lane >> 4) * 16;                           \
    const int b_off = (B_BASE) + (wn * 8 * NT + (lane & 7) + (lane >> 4) * 8) * MMQ_ROW + 16 + ((lane >> 3) & 1) * 16; \
    const int ax_off = ((WROW0) + (lane >> 2)) * MMQ_ROW;                                                   \
    const int bw_off = (B_BASE) + (BW_ROW) * MMQ_ROW

/* The warp's B fragments of k32 group g (common/tile.cuh). sb: the thread's address at block 0. */
template <int NT> __device__ __forceinline__ void mmq_load_b(uint32_t (&b)[NT][2], uint32_t sb, int g)
{
    memra_load_b_frags<NT, MMQ_ROW>(b, sb, g * 32);
}

/* After the k loop: every copy landed, the dependent launch (split-k sum) released,
 * the warp's sub-tile written to y (one slice) or to its slice of part. */
template <int MT, int NT>
__device__ __forceinline__ void mmq_tile_store(const mmq_tile &t, const float (&acc)[MT][NT][4], float *y, float *part,
                                               long long ldy, float alpha, int m, int n)
{
    cp_async_wait<0>();
    pdl_trigger(); /* the split-k sum may launch once every CTA is in its epilogue */
    float *out = t.S == 1 ? y : part + (long long)t.z * m * n;
    q2_store<MT, NT>(acc, out, t.S == 1 ? ldy : n, t.S == 1 ? alpha : 1.0f, m, n, t.i0 + t.wm * 16 * MT,
                     t.j0 + t.wn * 8 * NT, t.lane);
}

/* D = A (k16) x B (k16) + magic: the s32 sum of 16 products read as f32 bits. */
__device__ __forceinline__ void mma_k16_s8(float d[4], uint32_t a0, uint32_t a1, uint32_t b0)
{
    int r0, r1, r2, r3;
    const int c = (int)MMQ_MAGIC_BITS;
    asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};\n"
        : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
        : "r"(a0), "r"(a1), "r"(b0), "r"(c));
    d[0] = __int_as_float(r0);
    d[1] = __int_as_float(r1);
    d[2] = __int_as_float(r2);
    d[3] = __int_as_float(r3);
}

/* Finite x rounded to TF32 (the nearest, ties away from zero; cvt.rna.tf32.f32's result for a
 * finite x), as the b32 an m16n8k4 .tf32 operand reads: half a TF32 unit added to the magnitude
 * bits (a carry moves into the exponent as it should), the 13 bits below TF32's cleared. Two
 * instructions where sm_90's cvt.rna.tf32 takes four (its infinity test): t = fl(S sx) here is
 * always finite. */
__device__ __forceinline__ uint32_t tf32_rna(float x) { return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u; }

/* D = A (16 x 4, TF32) x B (4 x 8, TF32) + C in f32: a0 row lane/4, a1 row lane/4 + 8, both column
 * lane%4; b0 row (k) lane%4, column lane/4; C / D as every m16n8 fragment here. */
__device__ __forceinline__ void mma_tf32_k4(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0, const float (&c)[4])
{
    asm("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

/* One 128-deep step of the warp's 16 MT x 8 NT sub-tile out of one stage slot, for every record
 * kind (issue 26 item 4: one step, one fold per kind; the k loops around it differ in how a stage
 * arrives and, for the K-quants, in its widening). sa / sb: the thread's ldmatrix addresses in the
 * slot at block 0 (MMQ_SLOT_OFFSETS);
 * ax / bw: its scale rows (token lane/4 of m16 tile 0; weight row 2 (lane%4) of n8 tile 0);
 * B fragments: mmq_load_b. FOLD:
 *  MMQ_FOLD_Q8   Q8_0 records (gemm_q8_0r, the grouped q8_0r tiles): acc = fma(sx, fma(D, s, -M s), acc)
 *  MMQ_FOLD_MIN  Q4_K / Q5_K (gemm_kr fold "min"): the same, then the min term (below)
 *  MMQ_FOLD_Q6   Q6_K (gemm_kr fold "q6"): two k16 halves with their own scales
 * sd: the K-quant side rows at the thread's first weight row (not read by fold q8). LIVE: a grouped
 * tile's m16 tiles past mt_live are skipped. UG (fold q8 only): the k32 groups unrolled (1:
 * rolled, the default; 4: the _u entry points, 64-token tiles only: the 128-token tile then spills
 * 416 bytes).
 * TC (fold "min" only; MEMRA_MMQ_KR_TC, the _t entry points: Q4_K and Q5_K by default, Q4_K alone with q4_k): the min term leaves the
 * per-32 fold. Each thread keeps t = fl(S sx) of its own 32-block of the step (lane % 4) for its
 * two token rows, and after the four blocks the step's sum over them, sum_b t_b m_b (m_b the
 * 6-bit mins, exact in TF32), comes from two m16n8k4 TF32 MMAs, t split as hi = rna(t) and
 * lo = rna(t - hi) (|t - hi - lo| <= 2^-23 |t|; the products are exact in f32), then one FFMA
 * acc -= dmin D per element and step: 1/4 FFMA per element and 32-block instead of 1. sm: the
 * side rows at the thread's B row (weight row lane / 4 of n8 tile 0), whose first word holds the
 * step's four mins as bytes and the second dmin (kr_widen TC). */
template <int MT, int NT, int FOLD, bool LIVE = false, bool TC = false, bool XS = false, int UG = 1, bool ILV = false>
__device__ __forceinline__ void mmq_step(float (&acc)[MT][NT][4], uint32_t sa, uint32_t sb, const float *ax,
                                         const float *bw, const float *sd = nullptr, int mt_live = MT,
                                         const unsigned char *sm = nullptr, const float *at = nullptr)
{
    constexpr bool Q6 = FOLD == MMQ_FOLD_Q6, MIN = FOLD == MMQ_FOLD_MIN;
    static_assert(!(TC && !MIN) && !(XS && !MIN), "the min term is fold min's (Q4_K, Q5_K)");
    static_assert(UG == 1 || FOLD == MMQ_FOLD_Q8, "the k32 groups unrolled: fold q8 only");
    constexpr int MS = ILV ? 32 : 16; /* rows from one of the warp's m16 tiles to its next (ILV: interleaved) */
    float ta[MT][2]; /* TC: t of block lane % 4, rows lane / 4 and lane / 4 + 8 of each m16 tile */
    const int kb_own = threadIdx.x & 3;
    if (TC && XS) /* XS: at = the sum-plane slot at the thread's token row lane / 4, 4 floats a row */
#pragma unroll
        for (int mt = 0; mt < MT; mt++) ta[mt][0] = at[mt * MS * 4 + kb_own], ta[mt][1] = at[mt * MS * 4 + 32 + kb_own];
#pragma unroll UG
    for (int g = 0; g < 4; g++) {
        uint32_t b[NT][2];
        mmq_load_b<NT>(b, sb, g);
        float s0[NT][2], m0[NT][2], s1[NT][2], m1[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                s0[nt][c] = bw[(nt * 8 + c) * (MMQ_ROW / 4) + g];
                m0[nt][c] = s0[nt][c] * -MMQ_MAGIC;
                if (!TC && FOLD != MMQ_FOLD_Q8) {
                    s1[nt][c] = sd[(nt * 8 + c) * 4 + g];
                    m1[nt][c] = Q6 ? s1[nt][c] * -MMQ_MAGIC : -s1[nt][c];
                }
            }
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            if (LIVE && mt >= mt_live) break; /* (a grouped tile's m16 tiles past its rows) */
            uint32_t a[4];
            memra_ldmatrix_x4(a, sa + mt * MS * MMQ_ROW + g * 32);
            const float sx0 = ax[mt * MS * (MMQ_ROW / 4) + g], sx1 = ax[(mt * MS + 8) * (MMQ_ROW / 4) + g];
            if (Q6) {
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    float lo[4], hi[4];
                    mma_k16_s8(lo, a[0], a[1], b[nt][0]);
                    mma_k16_s8(hi, a[2], a[3], b[nt][1]);
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int c = e & 1;
                        const float u = fmaf(hi[e], s1[nt][c], m1[nt][c]);
                        const float v = fmaf(lo[e] - MMQ_MAGIC, s0[nt][c], u);
                        acc[mt][nt][e] = fmaf(e < 2 ? sx0 : sx1, v, acc[mt][nt][e]);
                    }
                }
            } else if (FOLD == MMQ_FOLD_Q8) {
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    float d[4];
                    mma_k32<MMQ_KIND_S8>(d, a, b[nt][0], b[nt][1]);
                    acc[mt][nt][0] = fmaf(sx0, fmaf(d[0], s0[nt][0], m0[nt][0]), acc[mt][nt][0]);
                    acc[mt][nt][1] = fmaf(sx0, fmaf(d[1], s0[nt][1], m0[nt][1]), acc[mt][nt][1]);
                    acc[mt][nt][2] = fmaf(sx1, fmaf(d[2], s0[nt][0], m0[nt][0]), acc[mt][nt][2]);
                    acc[mt][nt][3] = fmaf(sx1, fmaf(d[3], s0[nt][1], m0[nt][1]), acc[mt][nt][3]);
                }
            } else {
                float t0 = 0.0f, t1 = 0.0f;
                if (XS) {
                    if (!TC) t0 = at[mt * MS * 4 + g], t1 = at[mt * MS * 4 + 32 + g];
                } else {
                    float sum[4];
                    mma_k32<MMQ_KIND_S8>(sum, a, 0x01010101u, 0x01010101u);
                    t0 = (sum[0] - MMQ_MAGIC) * sx0, t1 = (sum[2] - MMQ_MAGIC) * sx1;
                    if (TC && g == kb_own) ta[mt][0] = t0, ta[mt][1] = t1;
                }
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    float d[4];
                    mma_k32<MMQ_KIND_S8>(d, a, b[nt][0], b[nt][1]);
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int c = e & 1;
                        float r = fmaf(e < 2 ? sx0 : sx1, fmaf(d[e], s0[nt][c], m0[nt][c]), acc[mt][nt][e]);
                        acc[mt][nt][e] = TC ? r : fmaf(e < 2 ? t0 : t1, m1[nt][c], r);
                    }
                }
            }
        }
    }
    if (TC) {
        uint32_t hi[MT][2], lo[MT][2];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                if (LIVE && mt >= mt_live) ta[mt][r] = 0.0f; /* (never stored: rows past the tile's) */
                hi[mt][r] = tf32_rna(ta[mt][r]);
                lo[mt][r] = tf32_rna(ta[mt][r] - __uint_as_float(hi[mt][r]));
            }
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const uint32_t mw = *reinterpret_cast<const uint32_t *>(sm + nt * 8 * 16);
            const uint32_t bm = __float_as_uint((float)((mw >> (8 * kb_own)) & 0x3Fu)); /* exact in TF32 */
            const float dm0 = sd[(nt * 8) * 4 + 1], dm1 = sd[(nt * 8 + 1) * 4 + 1];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                if (LIVE && mt >= mt_live) break;
                const float z[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                float dh[4], d[4];
                mma_tf32_k4(dh, hi[mt][0], hi[mt][1], bm, z);
                mma_tf32_k4(d, lo[mt][0], lo[mt][1], bm, dh);
                acc[mt][nt][0] = fmaf(-dm0, d[0], acc[mt][nt][0]);
                acc[mt][nt][1] = fmaf(-dm1, d[1], acc[mt][nt][1]);
                acc[mt][nt][2] = fmaf(-dm0, d[2], acc[mt][nt][2]);
                acc[mt][nt][3] = fmaf(-dm1, d[3], acc[mt][nt][3]);
            }
        }
    }
}

/* The records tile's k loop, shared by gemm_q8_0r_body and experts_q8_0r_body: steps
 * g0 .. g0 + nk - 1 through R3_STAGES cp.async stages; COPY(so, g) fills the stage slot at
 * shared offset so with step g's operands (the caller's row source), STEP(so) runs the MMAs and
 * folds on the slot at so. A macro rather than a function taking a lambda: with the lambda the
 * dense kernels' SASS changed (one more instruction in the hot loop); expanded, it is the same. */
#define R3_KLOOP(MT, NT, g0, nk, COPY, STEP)                                                                \
    do {                                                                                                    \
        _Pragma("unroll") for (int s_ = 0; s_ < R3_STAGES - 1; s_++) {                                      \
            if (s_ < (nk)) COPY(s_ * R3_STAGE_BYTES(MT, NT), (g0) + s_);                                    \
            cp_async_commit();                                                                              \
        }                                                                                                   \
        int cur_ = 0, nxt_ = R3_STAGES - 1;                                                                 \
        for (int kt_ = 0; kt_ < (nk); kt_++) {                                                              \
            cp_async_wait<R3_STAGES - 2>();                                                                 \
            __syncthreads(); /* step kt landed for every thread; every warp is past step kt-1 */           \
            if (kt_ + R3_STAGES - 1 < (nk)) COPY(nxt_ * R3_STAGE_BYTES(MT, NT), (g0) + kt_ + R3_STAGES - 1); \
            cp_async_commit();                                                                              \
            STEP(cur_ * R3_STAGE_BYTES(MT, NT));                                                            \
            cur_ = cur_ == R3_STAGES - 1 ? 0 : cur_ + 1;                                                    \
            nxt_ = nxt_ == R3_STAGES - 1 ? 0 : nxt_ + 1;                                                    \
        }                                                                                                   \
    } while (0)

/* cc 9.0 and up (the default there; MEMRA_MMQ_BULK=0 turns it off): the records tile's stages brought by the bulk copy
 * engine. A step's token records and weight records are each one contiguous run of 144-byte
 * rows in global memory (the dense tile's and the sorted grouped tile's), so thread 0 arms the
 * slot's mbarrier with their byte count and issues two cp.async.bulk copies, and every thread
 * waits on the mbarrier where the cp.async tile waits for its own copies; the per-thread LDGSTS
 * and their address arithmetic leave the step. Rows past the tile's `arows` / `brows` are never
 * copied: R3B_SETUP zeroes the stages once (generic stores, then the async proxy's fence, before
 * any copy), so they read as the cp.async tile's zero fill, and the outputs are its bit for bit.
 * The mbarriers are static shared memory (BAR: R3_STAGES of them), so the tiles' dynamic sizes
 * are the cp.async tiles'. Compiled for cc 9.0 and up only (the _b / _sb entry points). */
#define R3B_SETUP(SMEM, BYTES, BAR) MMQ_BULK_SETUP(SMEM, BYTES, BAR, R3_STAGES)
/* The bulk tiles' setup (the records tiles' R3B_SETUP, the K-quant tiles' KRB_SETUP): BYTES of
 * shared memory at SMEM zeroed, NBAR mbarriers at BAR initialised for one arrival each, then the
 * async proxy's fence (the zeros before any copy) and a barrier. */
#define MMQ_BULK_SETUP(SMEM, BYTES, BAR, NBAR)                                                              \
    do {                                                                                                    \
        for (int i_ = threadIdx.x; i_ < (BYTES) / 16; i_ += MMQ_THREADS)                                    \
            reinterpret_cast<uint4 *>(SMEM)[i_] = make_uint4(0u, 0u, 0u, 0u);                               \
        if (threadIdx.x == 0) {                                                                             \
            for (int s_ = 0; s_ < (NBAR); s_++) memra_mb_init((BAR) + 8 * s_, 1);                           \
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");                            \
        }                                                                                                   \
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* the zeros before the copies */    \
        __syncthreads();                                                                                    \
    } while (0)
/* R3_KLOOP on the bulk copies: BASE the stages' shared address, BAR the mbarriers', SRC_A(g) /
 * SRC_B(g) step g's token / weight run, ABYTES / BBYTES their lengths, STEP(so) as R3_KLOOP's. A
 * slot is refilled after the barrier that follows every warp's last read of it. */
#define R3B_ISSUE(MT, NT, BASE, BAR, slot, g, SRC_A, SRC_B, ABYTES, BBYTES)                                 \
    do {                                                                                                    \
        const unsigned so_ = (BASE) + (slot) * R3_STAGE_BYTES(MT, NT), mb_ = (BAR) + 8 * (slot);             \
        memra_mb_arrive_tx(mb_, (ABYTES) + (BBYTES));                                                       \
        memra_bulk_g2s(so_, SRC_A(g), (ABYTES), mb_);                                                       \
        memra_bulk_g2s(so_ + R3_A_BYTES(MT), SRC_B(g), (BBYTES), mb_);                                      \
    } while (0)
#define R3B_KLOOP(MT, NT, g0, nk, BASE, BAR, SRC_A, SRC_B, ABYTES, BBYTES, STEP)                            \
    do {                                                                                                    \
        if (threadIdx.x == 0)                                                                               \
            for (int s_ = 0; s_ < R3_STAGES - 1 && s_ < (nk); s_++)                                         \
                R3B_ISSUE(MT, NT, BASE, BAR, s_, (g0) + s_, SRC_A, SRC_B, ABYTES, BBYTES);                   \
        int cur_ = 0, nxt_ = R3_STAGES - 1;                                                                 \
        for (int kt_ = 0; kt_ < (nk); kt_++) {                                                              \
            memra_mb_wait((BAR) + 8 * cur_, (unsigned)(kt_ / R3_STAGES) & 1u); /* step kt's runs landed */  \
            __syncthreads(); /* every warp is past step kt - 1: its slot (nxt) is free */                  \
            if (threadIdx.x == 0 && kt_ + R3_STAGES - 1 < (nk))                                             \
                R3B_ISSUE(MT, NT, BASE, BAR, nxt_, (g0) + kt_ + R3_STAGES - 1, SRC_A, SRC_B, ABYTES, BBYTES); \
            STEP(cur_ * R3_STAGE_BYTES(MT, NT));                                                            \
            cur_ = cur_ == R3_STAGES - 1 ? 0 : cur_ + 1;                                                    \
            nxt_ = nxt_ == R3_STAGES - 1 ? 0 : nxt_ + 1;                                                    \
        }                                                                                                   \
    } while (0)

template <int MT, int NT, int UG = 1, bool BULK = false>
__device__ __forceinline__ void gemm_q8_0r_body(const unsigned char *__restrict__ wr, const unsigned char *__restrict__ xq,
                                                float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                                                float *__restrict__ part)
{
    extern __shared__ __align__(16) unsigned char r3_smem[];
    if constexpr (!BULK) pdl_wait(); /* the q8_1 records (and y's earlier readers) are complete */
    constexpr int BN = 32 * NT;
    const mmq_tile t = mmq_tile_of<MT, NT>(m, n, k);
    const int lane = t.lane, wm = t.wm, wn = t.wn, i0 = t.i0, j0 = t.j0, g0 = t.g0, nk = t.nk;
    const int arows = t.arows, brows = t.brows;

    float acc[MT][NT][4];
    mmq_zero<MT, NT>(acc);

    /* per-thread offsets inside a stage slot */
    MMQ_SLOT_OFFSETS(R3_A_BYTES(MT), wn * 8 * NT + (lane & 3) * 2, wm * 16 * MT); /* the weight rows after the tokens' */
    const uint32_t base = smem_u32(r3_smem);

    /* the sources of step g are recomputed from the kernel parameters at each
     * copy: nothing 64-bit stays live across the k loop (the tile needs the
     * registers) */
#define R3_COPY_STEP(so, g)                                                                                 \
    do {                                                                                                    \
        r3_copy_run<32 * MT>(r3_smem + (so), xq + ((long long)(g) * m + i0) * MMQ_ROW, arows);              \
        r3_copy_run<BN>(r3_smem + (so) + R3_A_BYTES(MT), wr + ((long long)(g) * n + j0) * MMQ_ROW, brows);  \
    } while (0)
#define R3_STEP(so)                                                                                         \
    mmq_step<MT, NT, MMQ_FOLD_Q8, false, false, false, UG>(acc, base + (so) + a_off, base + (so) + b_off,    \
                                                           reinterpret_cast<const float *>(r3_smem + (so) + ax_off), \
                                                           reinterpret_cast<const float *>(r3_smem + (so) + bw_off))
    if constexpr (BULK) { /* the _b entry points: the two runs by the bulk copy engine */
        __shared__ __align__(8) unsigned long long r3b_bar[R3_STAGES];
        const uint32_t bar = smem_u32(r3b_bar);
        R3B_SETUP(r3_smem, R3_SMEM_BYTES(MT, NT), bar); /* only shared memory before the dependency wait */
        pdl_wait();
        const unsigned abytes = (unsigned)arows * MMQ_ROW, bbytes = (unsigned)brows * MMQ_ROW;
#define R3B_SRC_A(g) (xq + ((long long)(g) * m + i0) * MMQ_ROW)
#define R3B_SRC_B(g) (wr + ((long long)(g) * n + j0) * MMQ_ROW)
        R3B_KLOOP(MT, NT, g0, nk, base, bar, R3B_SRC_A, R3B_SRC_B, abytes, bbytes, R3_STEP);
#undef R3B_SRC_B
#undef R3B_SRC_A
    } else {
        R3_KLOOP(MT, NT, g0, nk, R3_COPY_STEP, R3_STEP);
    }
#undef R3_STEP
#undef R3_COPY_STEP
    mmq_tile_store<MT, NT>(t, acc, y, part, ldy, alpha, m, n);
}

/* w: Q8_0 records (16-byte aligned), xq: q8_1 records, y as gemm_q8_0; _mt4 / _mt2:
 * 128 / 64 tokens per CTA, 128 weight rows; _mt4n3 / _mt2n3: the same with 96
 * weight rows (one entry point each, so each gets its own register
 * allocation); gridDim.y = ceil(n / rows), gridDim.z: split-k slices, part: f32
 * [gridDim.z x m x n] when gridDim.z > 1. Dynamic shared memory
 * R3_SMEM_BYTES(MT, NT). */
#define R3_ENTRY(NAME, MT, NT, UG)                                                                                    \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, 2)                                                     \
        NAME(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq, float *__restrict__ y, int m, \
             int n, int k, long long ldy, float alpha, float *__restrict__ part)                                      \
    {                                                                                                                 \
        gemm_q8_0r_body<MT, NT, UG>(w, xq, y, m, n, k, ldy, alpha, part);                                             \
    }
R3_ENTRY(memra_k_gemm_q8_0r_mt4, 4, 4, 1)
R3_ENTRY(memra_k_gemm_q8_0r_mt2, 2, 4, 1)
R3_ENTRY(memra_k_gemm_q8_0r_mt4n3, 4, 3, 1)
R3_ENTRY(memra_k_gemm_q8_0r_mt2n3, 2, 3, 1)
/* MEMRA_MMQ_R3_UNROLL=1: the 64-token tiles with the k32 groups unrolled (the same FFMAs on each
 * accumulator in the same order: outputs bit for bit the rolled tiles'; ptxas sm_90a: 644 -> 564
 * instructions a step of 128 in the step loop's SASS, 12 / 16 bytes of spill) */
R3_ENTRY(memra_k_gemm_q8_0r_mt2u, 2, 4, 4)
R3_ENTRY(memra_k_gemm_q8_0r_mt2n3u, 2, 3, 4)
#undef R3_ENTRY

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
/* cc 9.0+ (unless MEMRA_MMQ_BULK=0): the same tiles on the bulk copies (R3B_KLOOP), bit for bit theirs */
#define R3B_ENTRY(NAME, MT, NT, MINB)                                                                                 \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, MINB)                                                  \
        NAME(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq, float *__restrict__ y, int m, \
             int n, int k, long long ldy, float alpha, float *__restrict__ part)                                      \
    {                                                                                                                 \
        gemm_q8_0r_body<MT, NT, 1, true>(w, xq, y, m, n, k, ldy, alpha, part);                                        \
    }
R3B_ENTRY(memra_k_gemm_q8_0r_mt4b, 4, 4, 2)
R3B_ENTRY(memra_k_gemm_q8_0r_mt2b, 2, 4, 2)
R3B_ENTRY(memra_k_gemm_q8_0r_mt4n3b, 4, 3, 2)
R3B_ENTRY(memra_k_gemm_q8_0r_mt2n3b, 2, 3, 2)
/* MEMRA_MMQ_ONE=1: the same at one CTA per SM, the register file's whole share (the two-CTA
 * bound caps a thread at 128 registers: ptxas spills 10 loads / 5 stores a step at 128 x 128; one
 * CTA takes 154 and none) */
R3B_ENTRY(memra_k_gemm_q8_0r_mt4bo, 4, 4, 1)
R3B_ENTRY(memra_k_gemm_q8_0r_mt2bo, 2, 4, 1)
R3B_ENTRY(memra_k_gemm_q8_0r_mt4n3bo, 4, 3, 1)
R3B_ENTRY(memra_k_gemm_q8_0r_mt2n3bo, 2, 3, 1)
#undef R3B_ENTRY
#endif

enum { KR_Q4_K = 0, KR_Q5_K = 1, KR_Q6_K = 2 };

/* Output word o (values 4o..4o+3 of a 32-block) of a unit: the nibbles, the
 * fifth bit (Q5_K: bit 8 i + o of the unit's word), the two top bits (Q6_K:
 * bits 8 i + 2 (o % 4) of word o / 4) and Q6_K's -32, all per byte. */
template <int F, int O>
__device__ __forceinline__ uint32_t kr_word(const uint4 &q, const uint2 &hi)
{
    const uint32_t wq = O % 4 == 0 ? q.x : O % 4 == 1 ? q.y : O % 4 == 2 ? q.z : q.w;
    uint32_t v = (O < 4 ? wq : wq >> 4) & 0x0F0F0F0Fu;
    if (F == KR_Q5_K) v |= (O <= 4 ? hi.x << (4 - O) : hi.x >> (O - 4)) & 0x10101010u;
    if (F == KR_Q6_K) {
        constexpr int s2 = 2 * (O % 4);
        const uint32_t h = O < 4 ? hi.x : hi.y;
        v |= (s2 <= 4 ? h << (4 - s2) : h >> (s2 - 4)) & 0x30303030u;
        v = (v + 0x60606060u) ^ 0x80808080u; /* v - 32 per byte: v + 96 stays below 256, the XOR takes 128 off */
    }
    return v;
}

/* byte b of x as a float */
__device__ __forceinline__ float kr_u8f(uint32_t x, int b) { return (float)((x >> (8 * b)) & 0xFFu); }
__device__ __forceinline__ float kr_s8f(uint32_t x, int b) { return (float)(signed char)((x >> (8 * b)) & 0xFFu); }

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* ---- gemm_q8_0r on the warpgroup MMA (sm_90a; MEMRA_MMQ_WG=1, opt-in, untimed) -----------
 *   memra_k_gemm_q8_0r_wg  the 128 x 128 records tile's work (128 tokens x 128 weight rows a CTA,
 *                       split-k over gridDim.z as mmq_tile_of) with the MMAs on wgmma: the s8
 *                       products leave the issue stream (no IMMA, no ldmatrix), so the warps
 *                       issue the fold alone while the tensor cores run the next k32 group.
 *                       384 threads: warpgroup 0 produces (thread 0; 40 registers after
 *                       setmaxnreg), warpgroups 1 and 2 consume (232 registers), 64 weight rows
 *                       each: the weight is wgmma's A (M side), the tokens its B (N = 128), so a
 *                       thread's fragment holds two weight rows (two scales per group) and 32
 *                       tokens. One stage per 128-deep k step, R3W_STAGES deep: four tensor
 *                       copies (cp.async.bulk.tensor.3d over the records as [G steps][rows][144
 *                       bytes]): the weight's and the tokens' 128 code bytes of each row into the
 *                       128-byte swizzled K-major layout (memra_wg_desc), and each row's 16-byte
 *                       head (its four f32 block scales) into [row][4] floats; rows past n or m
 *                       arrive as zeros (the copy engine's fill), as the cp.async tiles zero-fill.
 *                       Per k32 group q a consumer issues wgmma m64n128k32 into one of two s32
 *                       temporaries seeded with MMQ_MAGIC_BITS (the mma.sync tiles' C), so the
 *                       result read as f32 is 1.5 x 2^23 + I; after wait_group 0 for group q it
 *                       issues group q + 1 into the other temporary and folds group q:
 *                       acc = fma(sx, fma(D, s, -M s), acc), sx the token's scale and s the
 *                       weight row's, groups in ascending order: the mma.sync tiles' FFMAs on
 *                       the same operands in the same order, so the outputs are theirs bit for
 *                       bit. The step loop's wgmmas sit in no branch (ptxas would serialise them
 *                       all; ptxas -v shows no C7514): past the last group the issue repeats the
 *                       last step's first group into a temporary never folded.
 *                       Shared memory R3W_SMEM_BYTES_OF(TR) (1 CTA an SM); mbarriers static:
 *                       `full` (the producer's expect_tx), `empty` (256 consumer arrivals after a
 *                       step's last fold) and `ready` (TR: the transposing warp's 32). Launch:
 *                       grid (ceil(m / 128), ceil(n / 128), S), four tensor maps from the host
 *                       (mmq_ops.c r3w_maps).
 *   memra_k_gemm_q8_0r_wgt  the same with the token scales transposed (MEMRA_MMQ_WG_TR=1; r3w_body TR)
 *   memra_k_gemm_q8_0r_wgp  the same persistent (MEMRA_MMQ_WG_PERSIST; r3w_body P): a 1-D grid, sl
 *                       slices passed as a parameter (see r3w_tile_of).
 *   memra_k_gemm_q8_0r_wgs, _wgps  _wgt and _wgp with the temporaries seeded by the tensor cores
 *                       (MEMRA_MMQ_WG_SEED=1; r3w_body SD): see r3w_mma_seed and r3w_sd_inner. Shared
 *                       memory R3W_SMEM_BYTES_SD(1). */
/* the 64 accumulator operands of an m64n128 wgmma (%0..%63), read and written or written only */
#define R3W_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
                "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
                "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
                "%59, %60, %61, %62, %63}"
#define R3W_D64_OPS(C)                                                                                              \
    C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]), C(d[9]), C(d[10]), C(d[11]),   \
        C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]), C(d[19]), C(d[20]), C(d[21]), C(d[22]), \
        C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]), C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]), \
        C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]), C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), \
        C(d[45]), C(d[46]), C(d[47]), C(d[48]), C(d[49]), C(d[50]), C(d[51]), C(d[52]), C(d[53]), C(d[54]), C(d[55]), \
        C(d[56]), C(d[57]), C(d[58]), C(d[59]), C(d[60]), C(d[61]), C(d[62]), C(d[63])
#define R3W_RW(x) "+r"(x)
#define R3W_WO(x) "=r"(x)
/* U: the weight's codes unsigned (the K-quant tiles' 0..15 / 0..31: .u8 x .s8), else .s8 x .s8 */
template <bool U = false>
__device__ __forceinline__ void r3w_mma(uint32_t (&d)[64], unsigned long long da, unsigned long long db)
{
    if (U)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.s8 " R3W_D64 ", %64, %65, p;\n}\n"
                     : R3W_D64_OPS(R3W_RW)
                     : "l"(da), "l"(db), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " R3W_D64 ", %64, %65, p;\n}\n"
                     : R3W_D64_OPS(R3W_RW)
                     : "l"(da), "l"(db), "r"(1));
}

/* IA (MEMRA_MMQ_WG_SEED=iadd): the s8 product alone, D not read (scale-d false): the accumulators get I, and the
 * fold adds SD's seed 2^19 with an integer add, so the bits it reads are the seeded tile's 2^19 + I */
__device__ __forceinline__ void r3w_mma_nd(uint32_t (&d)[64], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " R3W_D64 ", %64, %65, p;\n}\n"
                 : R3W_D64_OPS(R3W_WO)
                 : "l"(da), "l"(db));
}

/* t seeded with MMQ_MAGIC_BITS, each register its own definition (a copy of one shared register
 * would let the compiler pass that register itself as an accumulator, then read it for the other
 * seeds while the wgmma runs: ptxas serialises every wgmma then, C7514) */
__device__ __forceinline__ void r3w_seed(uint32_t (&t)[64])
{
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("mov.b32 %0, 0x4B400000;\n" : "=r"(t[i]));
}

/* orders t's first NR registers after the asm statements before it (a wait; NR < 64: a narrow tile's, r3w_mma_n) */
template <int NR>
__device__ __forceinline__ void r3w_fence_regs_n(uint32_t (&t)[64])
{
#pragma unroll
    for (int i = 0; i < NR; i++) asm volatile("" : "+r"(t[i])::"memory");
}
__device__ __forceinline__ void r3w_fence_regs(uint32_t (&t)[64]) { r3w_fence_regs_n<64>(t); }

/* SD: the seed by the tensor cores. A u8 x u8 wgmma with D not read (scale-d false) of a constant A
 * (every byte 0x80 = 128, in registers) and a constant B (the 4 KB block of 0x80 bytes past the
 * stages, db) writes 32 x 128 x 128 = 2^19 into every accumulator; the group's s8 wgmma then adds
 * its products I, |I| <= 32 x 127 x 127 < 2^19, so the register holds 2^19 + I in [8160, 2^20): as
 * an f32 bit pattern a subnormal, exactly (2^19 + I) x 2^-149. No register is seeded by an
 * instruction of the warp (the 64 MOVs a group of r3w_seed). */
static_assert(R3W_SD_SEED == 32u * 128u * 128u, "the seed is the u8 MMA of 0x80 bytes over k32");
/* The seed with A also read from the seed block (the same descriptor: 64 rows x 32 bytes lie inside its
 * 4 KB, every byte 0x80 whatever the layout), so no register holds the constant A: KM's (the K-quant tile
 * with the min term by MMA has none to spare) and SA's (MEMRA_MMQ_WG_SEED=smem) */
__device__ __forceinline__ void r3w_mma_seed_s(uint32_t (&d)[64], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.u8 " R3W_D64 ", %64, %64, p;\n}\n"
                 : R3W_D64_OPS(R3W_WO)
                 : "l"(db));
}
__device__ __forceinline__ void r3w_mma_seed(uint32_t (&d)[64], unsigned long long db, const uint32_t (&a)[4])
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.u8 " R3W_D64 ", {%64, %65, %66, %67}, %68, p;\n}\n"
                 : R3W_D64_OPS(R3W_WO)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

/* The narrow tiles (r3w_body NT = 32, 64, 96: gemm_experts' remainder tiles, memra_k_experts_q8_0r_wgsr, and a
 * dense call's short last row tile, memra_k_gemm_q8_0r_wgst): the same wgmmas with NT token columns, m64nNTk32,
 * whose NT / 2 accumulators are d[0 .. NT / 2) (the m64n128 fragment's j < NT / 8: the same registers hold the
 * same tokens); R3W_D<n> names n accumulator operands */
#define R3W_D16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define R3W_D16_OPS(C) C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]),               \
    C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15])
#define R3W_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "         \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define R3W_D32_OPS(C) C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]),               \
    C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]),                \
    C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]),               \
    C(d[29]), C(d[30]), C(d[31])
#define R3W_D48 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "         \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "            \
    "%40, %41, %42, %43, %44, %45, %46, %47}"
#define R3W_D48_OPS(C) C(d[0]), C(d[1]), C(d[2]), C(d[3]), C(d[4]), C(d[5]), C(d[6]), C(d[7]), C(d[8]),               \
    C(d[9]), C(d[10]), C(d[11]), C(d[12]), C(d[13]), C(d[14]), C(d[15]), C(d[16]), C(d[17]), C(d[18]),                \
    C(d[19]), C(d[20]), C(d[21]), C(d[22]), C(d[23]), C(d[24]), C(d[25]), C(d[26]), C(d[27]), C(d[28]),               \
    C(d[29]), C(d[30]), C(d[31]), C(d[32]), C(d[33]), C(d[34]), C(d[35]), C(d[36]), C(d[37]), C(d[38]),               \
    C(d[39]), C(d[40]), C(d[41]), C(d[42]), C(d[43]), C(d[44]), C(d[45]), C(d[46]), C(d[47])
template <int NT>
__device__ __forceinline__ void r3w_mma_n(uint32_t (&d)[64], unsigned long long da, unsigned long long db)
{
    static_assert(NT == 32 || NT == 64 || NT == 96, "the narrow tiles' widths");
    if constexpr (NT == 32)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 " R3W_D16 ", %16, %17, p;\n}\n"
                     : R3W_D16_OPS(R3W_RW)
                     : "l"(da), "l"(db), "r"(1));
    else if constexpr (NT == 64)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 " R3W_D32 ", %32, %33, p;\n}\n"
                     : R3W_D32_OPS(R3W_RW)
                     : "l"(da), "l"(db), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n96k32.s32.s8.s8 " R3W_D48 ", %48, %49, p;\n}\n"
                     : R3W_D48_OPS(R3W_RW)
                     : "l"(da), "l"(db), "r"(1));
}
/* the seed (r3w_mma_seed) of the narrow tiles */
template <int NT>
__device__ __forceinline__ void r3w_mma_seed_n(uint32_t (&d)[64], unsigned long long db, const uint32_t (&a)[4])
{
    static_assert(NT == 32 || NT == 64 || NT == 96, "the narrow tiles' widths");
    if constexpr (NT == 32)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.u8 " R3W_D16 ", {%16, %17, %18, %19}, %20, p;\n}\n"
                     : R3W_D16_OPS(R3W_WO)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    else if constexpr (NT == 64)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.u8 " R3W_D32 ", {%32, %33, %34, %35}, %36, p;\n}\n"
                     : R3W_D32_OPS(R3W_WO)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n96k32.s32.u8.u8 " R3W_D48 ", {%48, %49, %50, %51}, %52, p;\n}\n"
                     : R3W_D48_OPS(R3W_WO)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

/* The seed block's descriptor: no swizzle, core matrices (8 rows of 16 bytes) 128 bytes apart along K
 * and 256 apart along N, so n128 x k32 spans exactly the 4 KB */
__device__ __forceinline__ unsigned long long r3w_seed_desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(128 >> 4) << 16) |
           ((unsigned long long)(256 >> 4) << 32);
}

/* KM (MEMRA_MMQ_KR_WG=mma): v rounded to tf32 (10 fraction bits), to nearest with ties away from zero
 * (the wgmma reads only those bits of an f32); cvt.rna keeps a NaN a NaN, where the bit trick
 * (add 0x1000, mask) would turn some into zeros or infinities */
__device__ __forceinline__ float r3w_tf32_rna(float v)
{
    uint32_t u;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(v));
    return __uint_as_float(u);
}

/* KM: the byte offset of row r's first four k values in a no-swizzle K-major tf32 tile of k 8 (core
 * matrices of 8 rows x 16 bytes; the k 4..7 half 128 bytes on, the next 8 rows 256 bytes on: the
 * seed block's descriptor, r3w_seed_desc, describes it) */
__device__ __forceinline__ int r3w_km_at(int r) { return (r >> 3) * 256 + (r & 7) * 16; }

/* KM: a step's min term M = A1 B + A2 B over k 8 (tf32, both operands in shared memory, descriptors
 * da1 / da2 / db) as f32 bit patterns into d, the temporaries the step's last fold has just read (the
 * next step's first group adds them to acc before its next wgmma writes them): A1 = P_hi | P_hi and
 * B = t_hi | t_lo give P_hi t, A2 = P_lo | 0 gives P_lo t_hi, so M = sum_b P_b t_b to about 2^-21 of
 * each term. Never into the accumulators themselves: the folds write those while wgmmas are in
 * flight, and ptxas then serialises every wgmma of the kernel (C7515); nor into registers of their
 * own: 64 more than the consumers have (ptxas spilled 268 bytes). */
__device__ __forceinline__ void r3w_mma_min(uint32_t (&d)[64], unsigned long long da1, unsigned long long da2,
                                            unsigned long long db)
{
    asm volatile("{\n.reg .pred p, q;\nsetp.ne.b32 p, %67, 0;\nsetp.ne.b32 q, %67, 1;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " R3W_D64 ", %64, %66, q, 1, 1;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " R3W_D64 ", %65, %66, p, 1, 1;\n}\n"
                 : R3W_D64_OPS(R3W_WO)
                 : "l"(da1), "l"(da2), "l"(db), "r"(1));
}

/* KM: a step's min term, waited for in mt, added to acc; then the stage its operands lie in freed (`empty`) */
__device__ __forceinline__ void r3w_min_add(float (&acc)[64], uint32_t (&mt)[64], unsigned empty)
{
    r3w_fence_regs(mt);
#pragma unroll
    for (int i = 0; i < 64; i++) acc[i] += __uint_as_float(mt[i]);
    memra_mb_arrive(empty);
}

/* KM: a step's min term issued into mt (warpgroup w's rows) from the stage at shared address st, committed */
__device__ __forceinline__ void r3w_min_step(uint32_t (&mt)[64], unsigned st, int w)
{
    const unsigned km = st + 32768 + (unsigned)w * 2048;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    r3w_mma_min(mt, r3w_seed_desc(km + R3W_KM_A1), r3w_seed_desc(km + R3W_KM_A2), r3w_seed_desc(st + 32768 + R3W_KM_B));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* SD's fold of one accumulator: D = 2^19 + I read as f32 is (2^19 + I) 2^-149; with s2 = s 2^111 and
 * ms = -s 2^-19 (both exact: s is an f16's value, |s| < 2^16) one rounding gives s I 2^-38, the
 * records tiles' fma(D, s, -M s) scaled by 2^-38 (normal: |s I| >= 2^-24). fma.rn.f32 keeps the
 * subnormal operand whatever the build's ftz setting. The running sums are then the records tiles'
 * times 2^-38, so the outputs are theirs bit for bit while every records-tile partial sum is zero or
 * at least 2^-88 in magnitude (else subnormal in the scaled domain: an absolute difference under
 * 2^-111) and none overflows (the scaled sum may stay finite where the records tile's reached inf):
 * token scales far outside any activation's (amax beyond about 1e-20 .. 1e26) are the only way there. */
__device__ __forceinline__ float r3w_sd_inner(uint32_t d, float s2, float ms)
{
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;\n" : "=f"(r) : "f"(__int_as_float((int)d)), "f"(s2), "f"(ms));
    return r;
}

/* SD's permuted token order within a group's 128: token t = 8 j + c at 16 (j / 2) + 4 (c / 2) + 2 (j % 2) +
 * c % 2, so that a consumer's tokens of fragment rows j and j + 1 (j even) are one 16-byte unit */
__device__ __forceinline__ int r3w_perm(int t)
{
    const int j = t >> 3, c = t & 7;
    return 16 * (j >> 1) + 4 * (c >> 1) + 2 * (j & 1) + (c & 1);
}

/* PIN (MEMRA_MMQ_WG_SEED=pin): ptxas schedules a group's s8 wgmma about two thirds into the fold it should
 * overlap (it fills the seed's modelled latency with the fold's FFMAs: `_wgs`'s SASS has ~98 instructions
 * between the u8 and the s8 IGMMA), so the products start late and a group costs about fold + tensor work
 * (bench/micro/wgfold.cu). Reading %clock_hi right after the commit and passing the weight scales (and the token scales'
 * address) through a select on it makes every FFMA of the fold depend on an instruction that ptxas keeps
 * behind the wgmma. The select's condition is false for every clock value, so the scales are the same values
 * and the outputs are bit for bit. */
__device__ __forceinline__ void r3w_pin(float &a, float &b, const float *&x)
{
    unsigned c;
    asm volatile("mov.u32 %0, %%clock_hi;\n" : "=r"(c)::"memory");
    /* never true, whatever c: a square modulo 2^32 is 0 or 1 modulo 4, never 2; ptxas does not know it */
    const bool never = c * c == 2u;
    a = never ? 0.0f : a;
    b = never ? 0.0f : b;
    x = never ? x + 4 : x; /* the token scales' loads too: hoisted above the wgmma, all 32 registers at once, they spilled */
}

/* PP (MEMRA_MMQ_WG_SEED=pp): the two consumer warpgroups fold in turn, so that each one's wgmmas run on the
 * tensor cores while the other folds, where in `_wgs` both fold at once and then both wait. After its fold,
 * consumer pw opens the other's named barrier (3 - pw: bar 2 is consumer 0's, bar 3 consumer 1's). Consumer 1
 * opens bar 2 once before its first fold, and consumer 0 takes that last arrival after its last. ptxas may
 * still schedule some of the fold's FFMAs (register-only) past the arrival: about 25-35 of a group's 128 in the
 * SASS. That costs overlap, not correctness. */
__device__ __forceinline__ void r3w_pp_pass(int pw)
{
    asm volatile("bar.arrive %0, 256;\n" ::"r"(3 - pw) : "memory");
}

/* Group G of a step whose stage is at st / sp: its products (in tc) waited for, the next group
 * issued into tn (slice kk_n of the stage at st_n, `full` phase ph_n waited for first when kk_n
 * is 0: the next step's first group, or past the last step the last step's again, never folded),
 * group G folded into acc and tc re-seeded (SD: seeded by the u8 wgmma issued before the s8 one, dseed
 * the seed block's descriptor); the stage freed after its fourth group. r: the
 * thread's weight row in the tile, cq its first token column (2 (lane % 4)). */
template <int G, bool TR, bool SD, bool KQ = false, bool KM = false, bool SA = false, bool XP = false, bool PP = false,
          int NT = 128, bool PIN = false, bool IA = false>
__device__ __forceinline__ void r3w_step(float (&acc)[64], uint32_t (&tc)[64], uint32_t (&tn)[64], float (&sc)[2],
                                         float (&mc)[2], float4 (&xp)[4], const unsigned char *sp, const unsigned char *sp_n, unsigned st_n,
                                         unsigned full_n, unsigned ph_n, unsigned empty_s, unsigned a_off, int r,
                                         int cq, unsigned long long dseed, const uint32_t (&sa)[4],
                                         unsigned long long da_n, unsigned long long db_n, unsigned empty_p = 0u)
{
    constexpr int KK_N = (G + 1) & 3;
    static_assert(NT == 128 || ((NT == 32 || NT == 64 || NT == 96) && SD && !KQ && !KM && !SA && !XP && !PP),
                  "NT 32 / 64 / 96: the plain seeded Q8_0 fold");
    static_assert(!IA || (SD && !KQ && !KM && !SA && !XP && !PP && NT == 128 && !PIN), "IA: the plain seeded Q8_0 tile");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    r3w_fence_regs_n<NT / 2>(tc);
    if (KM && G == 0 && empty_p != 0u) r3w_min_add(acc, tn, empty_p); /* the last step's min term */
    if (KK_N == 0) memra_mb_wait(full_n, ph_n);
    if (TR && KK_N == 0) memra_mb_wait(full_n + 16 * R3W_STAGES, ph_n); /* the step's `ready`: its token scales transposed */
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    if constexpr (SD && NT != 128) {
        r3w_mma_seed_n<NT>(tn, dseed, sa);
        r3w_mma_n<NT>(tn, da_n + 2 * KK_N, db_n + 2 * KK_N);
    } else if (SD && IA) {
        r3w_mma_nd(tn, da_n + 2 * KK_N, db_n + 2 * KK_N);
    } else if (SD) { /* the stage's descriptors computed once a step: a k32 slice is 32 bytes, 2 in the start field */
        if (KM || SA) r3w_mma_seed_s(tn, dseed);
        else r3w_mma_seed(tn, dseed, sa);
        r3w_mma<KQ>(tn, da_n + 2 * KK_N, db_n + 2 * KK_N);
    } else {
        r3w_mma(tn, memra_wg_desc(st_n + a_off + KK_N * 32), memra_wg_desc(st_n + 16384 + KK_N * 32));
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); /* runs during the fold */
    /* (PP) the fold waits for this consumer's turn: named barrier 2 + pw, which the other consumer warpgroup
     * opens after its own fold (r3w_pp_pass) */
    const int pw = PP ? (int)(threadIdx.x >> 7) - 1 : 0;
    if (PP) asm volatile("bar.sync %0, 256;\n" ::"r"(2 + pw) : "memory");
    const float *hx = reinterpret_cast<const float *>(sp + 32768 + 2048);
    const float *xt = reinterpret_cast<const float *>(sp + 32768 + 4096) + G * 128; /* TR: [group][token] */
    const float *xt_pin = xt; /* (PIN) */
    /* loaded by the group before (their latency off the group's start); (PP) loaded here, after the turn's
     * barrier: every FFMA of the fold then depends on a load the barrier orders (the token scales' or these),
     * so ptxas cannot hoist the fold above the wait, as it does with register-only inputs */
    const float *hc = reinterpret_cast<const float *>(sp + 32768);
    const float s0 = PP ? hc[r * 4 + G] : sc[0], s1 = PP ? hc[(r + 8) * 4 + G] : sc[1];
    constexpr float SDS = KQ ? R3W_KQ_SCALE : R3W_SD_SCALE, SDM = KQ ? R3W_KQ_MIN : R3W_SD_MIN;
    const float m0 = SD ? s0 * SDM : s0 * -MMQ_MAGIC, m1 = SD ? s1 * SDM : s1 * -MMQ_MAGIC;
    float s0d = s0 * SDS, s1d = s1 * SDS; /* (SD) */
    if constexpr (PIN) r3w_pin(s0d, s1d, xt_pin);
    /* (KQ) the rows' min factors, -mn 2^-44 (exact), and the tokens' sums t (permuted as the scales) */
    const float n0 = mc[0] * -(1.0f / R3W_KQ_POST), n1 = mc[1] * -(1.0f / R3W_KQ_POST);
    const float *tt = reinterpret_cast<const float *>(sp + 32768 + 8192) + G * 128;
    float4 xh[4]; /* (XP) the group's token scales of j = 8 .. 15, loaded before the first FFMA */
    if (XP) {
#pragma unroll
        for (int q = 0; q < 4; q++) xh[q] = *reinterpret_cast<const float4 *>(xt + r3w_perm(16 * (q + 4) + cq));
    }
#pragma unroll
    for (int j = 0; j < NT / 8; j++) {
        float x0, x1;
        if (SD) { /* TR, permuted (r3w_perm): one 16-byte load holds tokens of j and j + 1 */
            const float4 xx = !XP ? *reinterpret_cast<const float4 *>(xt_pin + r3w_perm(8 * (j & ~1) + cq))
                              : j < 8 ? xp[j >> 1] : xh[(j - 8) >> 1];
            x0 = (j & 1) ? xx.z : xx.x, x1 = (j & 1) ? xx.w : xx.y;
        } else if (TR) {
            const float2 xx = *reinterpret_cast<const float2 *>(xt + 8 * j + cq);
            x0 = xx.x, x1 = xx.y;
        } else {
            x0 = hx[(8 * j + cq) * 4 + G], x1 = hx[(8 * j + cq + 1) * 4 + G];
        }
        if (SD) {
            constexpr uint32_t B = IA ? R3W_SD_SEED : 0u; /* (IA) the seed, added here */
            acc[4 * j + 0] = fmaf(x0, r3w_sd_inner(tc[4 * j + 0] + B, s0d, m0), acc[4 * j + 0]);
            acc[4 * j + 1] = fmaf(x1, r3w_sd_inner(tc[4 * j + 1] + B, s0d, m0), acc[4 * j + 1]);
            acc[4 * j + 2] = fmaf(x0, r3w_sd_inner(tc[4 * j + 2] + B, s1d, m1), acc[4 * j + 2]);
            acc[4 * j + 3] = fmaf(x1, r3w_sd_inner(tc[4 * j + 3] + B, s1d, m1), acc[4 * j + 3]);
            if (KQ && !KM) { /* the min term after the main one, as the _x tiles' fold "min" */
                const float4 t4 = *reinterpret_cast<const float4 *>(tt + r3w_perm(8 * (j & ~1) + cq));
                const float t0 = (j & 1) ? t4.z : t4.x, t1 = (j & 1) ? t4.w : t4.y;
                acc[4 * j + 0] = fmaf(t0, n0, acc[4 * j + 0]);
                acc[4 * j + 1] = fmaf(t1, n0, acc[4 * j + 1]);
                acc[4 * j + 2] = fmaf(t0, n1, acc[4 * j + 2]);
                acc[4 * j + 3] = fmaf(t1, n1, acc[4 * j + 3]);
            }
        } else {
            acc[4 * j + 0] = fmaf(x0, fmaf(__int_as_float((int)tc[4 * j + 0]), s0, m0), acc[4 * j + 0]);
            acc[4 * j + 1] = fmaf(x1, fmaf(__int_as_float((int)tc[4 * j + 1]), s0, m0), acc[4 * j + 1]);
            acc[4 * j + 2] = fmaf(x0, fmaf(__int_as_float((int)tc[4 * j + 2]), s1, m1), acc[4 * j + 2]);
            acc[4 * j + 3] = fmaf(x1, fmaf(__int_as_float((int)tc[4 * j + 3]), s1, m1), acc[4 * j + 3]);
        }
    }
    if (PP) r3w_pp_pass(pw);
    /* the next group's weight scales (sp_n: this step's stage, or after the fourth group the next issue's,
     * whose `full` was waited for above) */
    const float *hn = reinterpret_cast<const float *>(sp_n + 32768);
    sc[0] = hn[r * 4 + KK_N], sc[1] = hn[(r + 8) * 4 + KK_N];
    if (XP) { /* and its token scales of j = 0 .. 7 (TR's [group][token], permuted) */
        const float *xn = reinterpret_cast<const float *>(sp_n + 32768 + 4096) + KK_N * 128;
#pragma unroll
        for (int q = 0; q < 4; q++) xp[q] = *reinterpret_cast<const float4 *>(xn + r3w_perm(16 * q + cq));
    }
    if (KQ && !KM) {
        const float *hm = reinterpret_cast<const float *>(sp_n + 32768 + 6144);
        mc[0] = hm[r * 4 + KK_N], mc[1] = hm[(r + 8) * 4 + KK_N];
    }
    if (!SD) r3w_seed(tc);
    /* (KM: the stage is freed after the step's min term, by the next step's first group) */
    if (G == 3 && !KM) memra_mb_arrive(empty_s);
}

/* TR: ring step it's token scales ([token][group] after the copies) rewritten as [group][token] by the
 * producer warp (lane l tokens 4 l .. 4 l + 3) once the step's copies landed, then its 32 arrivals on
 * the stage's `ready`. P (the seeded tiles): [group][token] in r3w_perm's order */
template <int S, int SB, bool P = false>
__device__ __forceinline__ void r3w_transpose(unsigned char *stages, unsigned full, unsigned ready, int it, int lane)
{
    const int s = it & (S - 1);
    memra_mb_wait(full + 8 * s, (unsigned)(it / S) & 1u);
    const float4 *hx = reinterpret_cast<const float4 *>(stages + s * SB + 32768 + 2048) + 4 * lane;
    const float4 v0 = hx[0], v1 = hx[1], v2 = hx[2], v3 = hx[3];
    if (P) { /* lane l: tokens 4 l + u, adjacent for u = 0, 1 and for u = 2, 3 (4 apart) */
        float *xp = reinterpret_cast<float *>(stages + s * SB + 32768 + 4096) + r3w_perm(4 * lane);
        const float a[4][4] = {{v0.x, v0.y, v0.z, v0.w}, {v1.x, v1.y, v1.z, v1.w}, {v2.x, v2.y, v2.z, v2.w},
                               {v3.x, v3.y, v3.z, v3.w}}; /* a[u][g] */
#pragma unroll
        for (int g = 0; g < 4; g++) {
            *reinterpret_cast<float2 *>(xp + 128 * g) = make_float2(a[0][g], a[1][g]);
            *reinterpret_cast<float2 *>(xp + 128 * g + 4) = make_float2(a[2][g], a[3][g]);
        }
        memra_mb_arrive(ready + 8 * s);
        return;
    }
    float4 *xt = reinterpret_cast<float4 *>(stages + s * SB + 32768 + 4096) + lane;
    xt[0] = make_float4(v0.x, v1.x, v2.x, v3.x);
    xt[32] = make_float4(v0.y, v1.y, v2.y, v3.y);
    xt[64] = make_float4(v0.z, v1.z, v2.z, v3.z);
    xt[96] = make_float4(v0.w, v1.w, v2.w, v3.w);
    memra_mb_arrive(ready + 8 * s);
}

/* The consumer's outputs: token i0 + 8 j + cq + (e % 2), weight row j0 + r + 8 (e / 2) of acc[4 j + e]
 * (the m64nNk32 fragment, transposed into y), scaled by f; SL slices: slice z's into part[z] as
 * mmq_tile_store */
template <bool SD, bool KQ = false, bool XE = false, int NT = 128>
__device__ __forceinline__ void r3w_store(const float (&acc)[64], float *__restrict__ y, float *__restrict__ part,
                                          long long ldy, float alpha, int m, int n, int i0, int jr, int cq, int SL,
                                          int z, const int *__restrict__ perm = nullptr, int end = 0, int pb = 0)
{
    float *out = SL == 1 ? y : part + (long long)z * m * n;
    const long long ld = SL == 1 ? ldy : n;
    const float f = SL == 1 ? alpha : 1.0f;
    /* SD: the sums are 2^-38 of the records tiles', the power of two exact both ways */
    constexpr float post = SD ? (KQ ? R3W_KQ_POST : R3W_SD_POST) : 1.0f;
    if constexpr (XE) { /* sorted row i of the expert's (below end) is y's row perm[i], in part as in y */
#pragma unroll
        for (int j = 0; j < NT / 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int i = i0 + 8 * j + cq + h;
                if (i >= end) continue;
                const long long row = perm[i - pb];
#pragma unroll
                for (int e = h; e < 4; e += 2) {
                    const int c = jr + 8 * (e >> 1);
                    if (c < n) out[row * ld + c] = f * (acc[4 * j + e] * post);
                }
            }
    } else {
#pragma unroll
        for (int j = 0; j < NT / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = i0 + 8 * j + cq + (e & 1), c = jr + 8 * (e >> 1);
                if (i < m && c < n)
                    out[(long long)i * ld + c] =
                        f * (SD ? acc[4 * j + e] * (KQ ? R3W_KQ_POST : R3W_SD_POST) : acc[4 * j + e]);
            }
    }
}

/* (SK) a seeded tile's partial sums, unscaled by alpha, into a 128 x 128 slot: row i - i0, column c - j0 (the
 * whole tile; the fix-up reads only what lies inside y) */
__device__ __forceinline__ void r3w_store_slot(const float (&acc)[64], float *__restrict__ slot, int rr, int cq)
{
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            slot[(8 * j + cq + (e & 1)) * 128 + rr + 8 * (e >> 1)] = acc[4 * j + e] * R3W_SD_POST;
}

/* A CTA's tiles: the one of its block index (P false: grid (ceil(m / 128), ceil(n / 128), SL)), or
 * (P: the persistent _wgp tiles, a 1-D grid of at most one CTA an SM) tiles blockIdx.x, + gridDim.x,
 * ... of the ntx x nty x SL tile space (tokens fastest, then weight rows, then slices; the host takes
 * it where every slice has steps, but a tile without them stores zeros and issues nothing here too).
 * The ring position `it` (steps through the stages so far) runs on across a CTA's tiles on both
 * sides. */
struct r3w_tile {
    int i0, j0, g0, nk, z;
};
template <bool P>
__device__ __forceinline__ r3w_tile r3w_tile_of(int t, int ntx, int nty, int G, int SL)
{
    int tx, ty, z;
    if (P) {
        tx = t % ntx, ty = (t / ntx) % nty, z = t / (ntx * nty);
    } else {
        tx = (int)blockIdx.x, ty = (int)blockIdx.y, z = (int)blockIdx.z;
    }
    r3w_tile r;
    r.i0 = tx * 128, r.j0 = ty * 128, r.z = z;
    r.g0 = (int)((long long)G * z / SL);
    r.nk = (int)((long long)G * (z + 1) / SL) - r.g0;
    return r;
}

/* SK (the stream-k tile, MEMRA_MMQ_WG_SK): the schedule of sk_sched.h (whole waves of tiles first, the
 * remainder tiles' steps in P equal ranges); segment t of this CTA as a tile of r3w_body, its slot in
 * r3w_sk_slot (-1: stored whole). */
__device__ __forceinline__ r3w_tile r3w_sk_tile(int t, int ntx, int G, const mmq_sk_range &rg, int *slot)
{
    const mmq_sk_seg sg = mmq_sk_segment(&rg, G, (int)gridDim.x, (int)blockIdx.x, t);
    r3w_tile r;
    r.i0 = (sg.tile % ntx) * 128, r.j0 = (sg.tile / ntx) * 128, r.z = 0;
    r.g0 = sg.g0, r.nk = sg.nk;
    *slot = sg.slot;
    return r;
}

/* Row j's super-block S entry hd (its 16 bytes; zeros at or past n): s = d sc of step g's four 32-blocks into
 * *S, their mins mn = dmin m returned (kr_widen's decoding: d | dmin, then the 6-bit scales and mins of
 * sub-blocks 4h..4h+3) */
__device__ __forceinline__ float4 kq_row_scales(uint4 hd, int g, float4 *S)
{
    const float d = __half2float(__ushort_as_half((unsigned short)(hd.x & 0xFFFFu)));
    const float dmin = __half2float(__ushort_as_half((unsigned short)(hd.x >> 16)));
    const bool h1 = (g & 1) != 0;
    const uint32_t vs = h1 ? (hd.w & 0x0F0F0F0Fu) | ((hd.y >> 2) & 0x30303030u) : hd.y & 0x3F3F3F3Fu;
    const uint32_t vm = h1 ? ((hd.w >> 4) & 0x0F0F0F0Fu) | ((hd.z >> 2) & 0x30303030u) : hd.z & 0x3F3F3F3Fu;
    *S = make_float4(d * kr_u8f(vs, 0), d * kr_u8f(vs, 1), d * kr_u8f(vs, 2), d * kr_u8f(vs, 3));
    return make_float4(dmin * kr_u8f(vm, 0), dmin * kr_u8f(vm, 1), dmin * kr_u8f(vm, 2), dmin * kr_u8f(vm, 3));
}

/* Row j's 16-byte super-block S entry for step g of the K-packed weight (module.h memra_kr_bytes: after
 * the nibbles and Q5_K's high-bit words); j < n */
template <int F>
__device__ __forceinline__ uint4 kq_s_entry(const unsigned char *__restrict__ w, int n, int G, int j, int g)
{
    return *reinterpret_cast<const uint4 *>(w + (long long)G * n * (64 + KR_HB(F)) + ((long long)(g >> 1) * n + j) * 16);
}

/* 16 widened codes, the low (H 0) or high (H 1) nibbles of a row's 16-byte nibble unit q with its
 * Q5_K high-bit word hx (kr_word's words 4 H .. 4 H + 3): the 16-byte chunk 2 u + H of the row's code tile */
template <int F, int H>
__device__ __forceinline__ uint4 kq_chunk(const uint4 &q, uint32_t hx)
{
    const uint2 hi = make_uint2(hx, 0u);
    return make_uint4(kr_word<F, 4 * H>(q, hi), kr_word<F, 4 * H + 1>(q, hi), kr_word<F, 4 * H + 2>(q, hi),
                      kr_word<F, 4 * H + 3>(q, hi));
}

/* kq_fill's weight half: row j's K-packed bytes of step g widened into A (128 bytes, 16-byte chunk c at
 * c ^ sw), its scales s = d sc into *S; returns its mins mn = dmin m. Rows at or past n: zeros. A and S
 * are a stage's (kq_fill) or a widened image's (memra_k_kq_widen_*). */
template <int F>
__device__ __forceinline__ float4 kq_widen_row(unsigned char *A, float4 *S, const unsigned char *__restrict__ w, int n,
                                               int G, int j, int g, int sw)
{
    uint4 q[4], hw = make_uint4(0, 0, 0, 0), hd = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < 4; u++) q[u] = make_uint4(0, 0, 0, 0);
    if (j < n) {
        const long long rec = (long long)g * n + j;
        const uint4 *np = reinterpret_cast<const uint4 *>(w + rec * 64);
#pragma unroll
        for (int u = 0; u < 4; u++) q[u] = np[u];
        if (KR_HB(F) == 16) hw = *reinterpret_cast<const uint4 *>(w + (long long)G * n * 64 + rec * 16);
        hd = kq_s_entry<F>(w, n, G, j, g);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const uint32_t hx = u == 0 ? hw.x : u == 1 ? hw.y : u == 2 ? hw.z : hw.w;
        *reinterpret_cast<uint4 *>(A + (((2 * u) ^ sw) << 4)) = kq_chunk<F, 0>(q[u], hx);
        *reinterpret_cast<uint4 *>(A + (((2 * u + 1) ^ sw) << 4)) = kq_chunk<F, 1>(q[u], hx);
    }
    return kq_row_scales(hd, g, S);
}

/* kq_fill's other half, in two parts. kq_fill_mins: row r's mins mn4 into the stage's tail h (= stage +
 * 32768; KM: as the min term's tf32 tiles at h + R3W_KM_A1 / A2, else mn [128][4] at h + 6144).
 * kq_fill_tok: token i0 + r's four block scales of step g written permuted at u (= h + 4096), and its
 * sums (KM: split into the tf32 tile) at u + 4096 (R3W_KM_B). */
template <bool KM>
__device__ __forceinline__ void kq_fill_mins(unsigned char *h, float4 mn4, int r)
{
    if (KM) { /* (8 rows of 16 bytes a core matrix: r3w_km_at) */
        const float4 p = make_float4(mn4.x * -0x1p-44f, mn4.y * -0x1p-44f, mn4.z * -0x1p-44f, mn4.w * -0x1p-44f);
        const float4 ph = make_float4(r3w_tf32_rna(p.x), r3w_tf32_rna(p.y), r3w_tf32_rna(p.z), r3w_tf32_rna(p.w));
        unsigned char *a1 = h + R3W_KM_A1 + r3w_km_at(r), *a2 = h + R3W_KM_A2 + r3w_km_at(r);
        *reinterpret_cast<float4 *>(a1) = ph;
        *reinterpret_cast<float4 *>(a1 + 128) = ph;
        *reinterpret_cast<float4 *>(a2) = make_float4(p.x - ph.x, p.y - ph.y, p.z - ph.z, p.w - ph.w);
        *reinterpret_cast<float4 *>(a2 + 128) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
        *reinterpret_cast<float4 *>(h + 6144 + r * 16) = mn4;
    }
}
template <bool KM>
__device__ __forceinline__ void kq_fill_tok(unsigned char *u, const unsigned char *__restrict__ xq,
                                            const unsigned char *__restrict__ xs, int m, int i0, int g, int r)
{
    static_assert(R3W_KM_B == 8192, "the token sums' tile at u + 4096, where the plain sums are");
    const int i = i0 + r;
    float4 xs4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), ts4 = xs4;
    if (i < m) {
        const long long rec = (long long)g * m + i;
        xs4 = *reinterpret_cast<const float4 *>(xq + rec * 144);
        ts4 = *reinterpret_cast<const float4 *>(xs + rec * 16);
    }
    const int pos = r3w_perm(r);
    float *xp = reinterpret_cast<float *>(u) + pos, *tp = reinterpret_cast<float *>(u + 4096) + pos;
    xp[0] = xs4.x, xp[128] = xs4.y, xp[256] = xs4.z, xp[384] = xs4.w;
    if (KM) {
        const float4 th = make_float4(r3w_tf32_rna(ts4.x), r3w_tf32_rna(ts4.y), r3w_tf32_rna(ts4.z), r3w_tf32_rna(ts4.w));
        unsigned char *bt = u + 4096 + r3w_km_at(r);
        *reinterpret_cast<float4 *>(bt) = th;
        *reinterpret_cast<float4 *>(bt + 128) =
            make_float4(r3w_tf32_rna(ts4.x - th.x), r3w_tf32_rna(ts4.y - th.y), r3w_tf32_rna(ts4.z - th.z),
                        r3w_tf32_rna(ts4.w - th.w));
        return;
    }
    tp[0] = ts4.x, tp[128] = ts4.y, tp[256] = ts4.z, tp[384] = ts4.w;
}

/* KQ (the K-quant tiles, MEMRA_MMQ_KR_WG): producer thread r's share of ring step g of the tile at
 * (i0, j0): weight row j0 + r's K-packed bytes of the step (its 4 nibble units, Q5_K's high-bit word per
 * unit, its super-block's 16-byte S entry: module.h memra_kr_bytes) read from global memory and widened
 * into the stage's code tile, row r in the 128-byte swizzled layout (16-byte chunk c at c ^ (r % 8),
 * as the tensor copies lay out the token codes), its scales s = d sc and mins mn = dmin m of the step's
 * four 32-blocks formed as kr_widen forms them, at [r][4]; token i0 + r's four block scales (its
 * record's head) and sums (the records' sum plane) written permuted as r3w_transpose P writes them.
 * Rows past n and tokens past m get zeros. KM (MEMRA_MMQ_KR_WG=mma): in place of the mins and sums,
 * the min term's tf32 tiles (mmq.h R3W_KM_*): row r's P = -mn 2^-44 split P_hi = rna(P), P_lo = P - P_hi
 * (exact: P has at most 17 significant bits, dmin's 11 and m's 6), token r's sums t split t_hi = rna(t),
 * t_lo = rna(t - t_hi). */
template <int F, bool KM = false>
__device__ __forceinline__ void kq_fill(unsigned char *sp, const unsigned char *__restrict__ w,
                                        const unsigned char *__restrict__ xq, const unsigned char *__restrict__ xs,
                                        int n, int m, int G, int j0, int i0, int g, int r)
{
    const float4 mn4 = kq_widen_row<F>(sp + r * 128, reinterpret_cast<float4 *>(sp + 32768 + r * 16), w, n, G, j0 + r, g,
                                       r & 7);
    kq_fill_mins<KM>(sp + 32768, mn4, r);
    kq_fill_tok<KM>(sp + 32768 + 4096, xq, xs, m, i0, g, r);
}

/* KP (MEMRA_MMQ_KR_WG=pre / pre2, the _wgw / _wgw2 tiles): kq_fill's work moved into passes before the
 * tile, once a call.
 * - KP 1: memra_k_kq_widen_* writes the weight as an image of KW_BLOCK_BYTES blocks, [ceil(n / 128) row
 *   tiles][G steps]: the stage's code tile as kq_fill lays it out (16 KB), then s [128][4] and mn [128][4]
 *   (2 KB each); rows past n zeros. The producer's thread 0 brings the codes and s by two bulk copies on
 *   the stage's `full`; its 128 threads read the mins and fill the rest (kq_fill_mins, kq_fill_tok).
 * - KP 2: memra_k_kq_prep2_* (one launch) writes the weight's blocks of KW2_BLOCK_BYTES: the codes, s,
 *   then the mins' tf32 tiles A1 | A2 as the stage holds them (8 KB); and the tokens' part as
 *   KT_BLOCK_BYTES blocks [ceil(m / 128) token tiles][G steps], the stage's bytes from + 32768 + 4096 on
 *   (the permuted scales, 2 KB of zeros, the sums' tf32 tile). The producer is thread 0's four bulk
 *   copies and the token codes' tensor copy; its threads only arrive on `ready`. */
__device__ __forceinline__ const unsigned char *kq_block(const unsigned char *img, int G, int j0, int g, int bytes)
{
    return img + ((long long)(j0 >> 7) * G + g) * bytes;
}

/* The widening passes: grid (ceil(n / 128), G), KW_THREADS threads, a block per image block (128 rows of
 * step blockIdx.y; bx: its row tile). The codes go a 16-byte chunk a thread, e = 8 r + c: chunk c of row r is the low (c even)
 * or high nibbles of the row's 16-byte unit c / 2 (and Q5_K's high bits), kq_widen_row's words, stored at
 * c ^ (r % 8); a warp reads 256 contiguous bytes and writes 512. Then thread r < 128 forms row r's s and mn
 * (KP 2: its mins' tf32 tiles). Programmatic dependents like the GEMMs: they write only after the kernels
 * before them (the previous call's tile may still read the image) are complete. */
template <int F, int KP>
__device__ __forceinline__ void kq_widen_body(const unsigned char *__restrict__ w, unsigned char *__restrict__ img, int n,
                                              int G, int bx)
{
    const int j0 = bx * 128, g = (int)blockIdx.y;
    unsigned char *blk = img + ((long long)bx * G + g) * (KP == 2 ? KW2_BLOCK_BYTES : KW_BLOCK_BYTES);
    for (int e = threadIdx.x; e < 128 * 8; e += KW_THREADS) {
        const int r = e >> 3, c = e & 7, j = j0 + r;
        uint4 q = make_uint4(0, 0, 0, 0);
        uint32_t hx = 0;
        if (j < n) {
            const long long rec = (long long)g * n + j;
            q = reinterpret_cast<const uint4 *>(w + rec * 64)[c >> 1];
            if (KR_HB(F) == 16) hx = reinterpret_cast<const uint32_t *>(w + (long long)G * n * 64 + rec * 16)[c >> 1];
        }
        *reinterpret_cast<uint4 *>(blk + r * 128 + ((c ^ (r & 7)) << 4)) =
            (c & 1) ? kq_chunk<F, 1>(q, hx) : kq_chunk<F, 0>(q, hx);
    }
    const int r = threadIdx.x, j = j0 + r;
    if (r >= 128) return;
    uint4 hd = make_uint4(0, 0, 0, 0);
    if (j < n) hd = kq_s_entry<F>(w, n, G, j, g);
    const float4 mn4 = kq_row_scales(hd, g, reinterpret_cast<float4 *>(blk + 16384 + r * 16));
    if (KP == 2) kq_fill_mins<true>(blk + 18432 - R3W_KM_A1, mn4, r); /* A1 at 18432, A2 4 KB on */
    else *reinterpret_cast<float4 *>(blk + 18432 + r * 16) = mn4;
}

/* The tokens' part (KP 2): thread r < 128 writes token 128 bx + r's part of step blockIdx.y (kq_fill_tok)
 * into its block */
__device__ __forceinline__ void kq_tokens_body(const unsigned char *__restrict__ xq, const unsigned char *__restrict__ xs,
                                               unsigned char *__restrict__ img, int m, int G, int bx)
{
    const int r = threadIdx.x, g = (int)blockIdx.y;
    if (r >= 128) return;
    unsigned char *blk = img + ((long long)bx * G + g) * KT_BLOCK_BYTES;
    kq_fill_tok<true>(blk, xq, xs, m, bx * 128, g, r);
    /* the 2 KB between the scales and the sums, copied with them and never read: zeros, so that no copy reads
     * bytes nothing wrote (initcheck) */
    *reinterpret_cast<uint4 *>(blk + 2048 + r * 16) = make_uint4(0u, 0u, 0u, 0u);
}

/* XE (memra_k_experts_q8_0r_wgs): the tile of a grouped GEMM's table (gemm_experts, issue 30): tile
 * blockIdx.x = (e, s0) of tiles (CTAs at or past *ntiles exit), its weight through expert e's maps
 * (maps[2 e]: codes, maps[2 e + 1]: heads; memra_k_experts_maps_q8_0r), its tokens the sorted records'
 * rows s0 .. s0 + 127 (map_x, map_xh over them; rows past the expert's end are other experts', computed
 * and never stored: a row's result depends on that row alone), outputs of sorted row s < offsets[e + 1]
 * to y[perm[s]] (SL slices: part[z][perm[s]], memra_k_experts_splitk_sum's layout) */
struct r3w_xe {
    const memra_tmap *maps;
    const int *offsets, *perm, *tiles, *ntiles;
    int tbase; /* the table's first CTA on grid.x (memra_k_experts_q8_0r_wgsr's remainders: the full table's size) */
};

/* The grouped tile's raster (MEMRA_MMQ_XE_RASTER): its launcher gives a 1-D grid of T x nty CTAs (gridDim.y 1
 * where the weight has nty > 1 row blocks of 128; every other grouped launch has gridDim.y = nty), walked in
 * groups of R3W_XE_RASTER table tiles (common/tile.cuh memra_raster), where the plain grid (table tiles fastest)
 * streams every tile's tokens again each wave. (tx, ty): the plain grid's (blockIdx.x, blockIdx.y), replaced
 * where the grid is rastered. */
#define R3W_XE_RASTER 8
__device__ __forceinline__ void r3w_xe_raster(int nty, int &tx, int &ty)
{
    if (gridDim.y != 1 || nty <= 1) return;
    memra_raster((int)blockIdx.x, (int)(gridDim.x / (unsigned)nty), nty, R3W_XE_RASTER, tx, ty);
}

/* TR (the _wgt / _wgp entry points): the producer warp also transposes each stage's token scales into
 * [group][token] (after `full`, behind the next stage's copies; `ready`: its 32 lanes' arrivals), so
 * a consumer reads two tokens' scales with one 8-byte load: 16 loads a group where [token][group]
 * takes 32. P: persistent (see r3w_tile_of); a consumer issues the next tile's first group before
 * folding its tile's last, so that group's MMAs and the next tile's copies run during its epilogue.
 * sl: the slices (P; else gridDim.z). KM (with KF): the min term by tf32 wgmmas (r3w_mma_min), issued
 * after each step's last fold; the step's stage is then released by the next step's first group,
 * after the wait that covers them (a stage is held one step longer: three ahead, not four). */
template <bool TR, bool P, bool SD, int KF = -1, bool KM = false, bool SA = false, bool XE = false, bool XT = false,
          bool XP = false, int KP = 0, bool SK = false, bool PP = false, int NT = 128, bool PIN = false, bool IA = false,
          int XPF = 0, bool XQ = false>
__device__ __forceinline__ void r3w_body(const memra_tmap *map_w, const memra_tmap *map_wh, const memra_tmap *map_x,
                                         const memra_tmap *map_xh, float *__restrict__ y, int m, int n, int k,
                                         long long ldy, float alpha, float *__restrict__ part, int sl,
                                         const unsigned char *__restrict__ kw = nullptr,
                                         const unsigned char *__restrict__ kx = nullptr,
                                         const unsigned char *__restrict__ kt = nullptr, const r3w_xe *xe = nullptr,
                                         const unsigned char *__restrict__ kx2 = nullptr)
{
    constexpr bool KQ = KF >= 0;
    static_assert(!XE || (SD && TR && !P && !KQ), "the grouped tile: the seeded Q8_0 tile on a plain grid");
    static_assert(!XT || XE, "the early trigger is the grouped tile's");
    static_assert(XPF == 0 || (XE && XPF > R3W_STAGES), "the weight's L2 prefetch: the grouped tile's, past the ring");
    static_assert(!XQ || (XE && !XT && NT == 128 && XPF == 0), "the quick start: the grouped 128-token tile's (no early "
                                                                "trigger: its branch has none)");
    static_assert(!KQ || (SD && TR && !P), "the K-quant tiles: seeded, permuted scales, a plain grid");
    static_assert(!KM || KQ, "the min term by MMA is the K-quant tiles'");
    static_assert(!XP || (SD && TR && !KQ), "the token scales a group ahead: the seeded Q8_0 tiles");
    static_assert(KP == 0 || KM, "the widened image feeds the tile whose min term is by MMA");
    static_assert(!SK || (P && SD && TR && !KQ && !XE && !XP && !SA), "the stream-k tile: the persistent seeded Q8_0 tile");
    static_assert(!PP || (SD && TR && !P && !KQ && !XT && !XP && !SA && !SK),
                  "the folds in turn: the plain seeded Q8_0 tile, dense or grouped (without the early trigger)");
    static_assert(NT == 128 || ((NT == 32 || NT == 64 || NT == 96) && SD && TR && !P && !KQ && !XT && !XP && !SA && !SK && !PP),
                  "32 / 64 / 96 token columns: the plain seeded Q8_0 tile's (grouped remainders, a dense call's last "
                  "row tile)");
    constexpr int S = R3W_STAGES, SB = KM ? R3W_STAGE_BYTES_KM : KQ ? R3W_STAGE_BYTES_KQ : R3W_STAGE_BYTES_OF(TR);
    static_assert((S & (S - 1)) == 0 && S >= 2, "the ring's stage index is it & (S - 1)");
    /* TR: producer step it waits for stage it's `empty` (released after `ready` of it - S) before its
     * lanes arrive on `ready` of it - 1: a cycle unless it - S < it - 1 */
    static_assert(!TR || S >= 3, "the transposing producer needs three stages");
    static_assert(!SD || TR, "the seeded tiles read the permuted token scales, which the transposing producer writes");
    extern __shared__ __align__(16) unsigned char r3w_smem[];
    __shared__ __align__(8) unsigned long long r3w_bar[3 * S];
    __shared__ int r3w_xperm[XQ ? 128 : 1]; /* (XQ) the tile's 128 sorted rows' places in y */
    const unsigned raw = memra_smem_u32(r3w_smem), sbase = (raw + 1023u) & ~1023u;
    unsigned char *stages = r3w_smem + (sbase - raw);
    const unsigned full = memra_smem_u32(r3w_bar), empty = full + 8 * S, ready = full + 16 * S;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            memra_mb_init(full + 8 * s, 1);
            memra_mb_init(empty + 8 * s, 256);
            memra_mb_init(ready + 8 * s, KQ ? 128 : 32); /* KQ: the producer warpgroup's 128 threads */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    pdl_wait(); /* the q8_1 records (and y's earlier readers) are complete */
    int xs0 = 0, xend = 0, xj0 = 0; /* (XE) the tile's first sorted row, its expert's end, its first weight row */
    if constexpr (XE) { /* the tile table and the maps are complete (the launches before this one) */
        int tx = (int)blockIdx.x, ty = (int)blockIdx.y;
        r3w_xe_raster((n + 127) / 128, tx, ty);
        xj0 = ty * 128;
        const int ti = tx - xe->tbase;
        int e;
        if constexpr (XQ) {
            /* the count and the entry in one round trip: the routing fills the table's unused entries up to its
             * worst case, which bounds ti (memra_k_experts_route) */
            const int nt_ = *xe->ntiles;
            const int2 te = *reinterpret_cast<const int2 *>(xe->tiles + 2 * ti);
            if (ti >= nt_) return;
            e = te.x, xs0 = te.y;
        } else {
            if (ti >= *xe->ntiles) return; /* the whole CTA, before any wgmma or copy */
            if (XT) pdl_trigger(); /* the remainder launch may start on the SMs this grid leaves idle (XE_OVL_MAIN) */
            e = xe->tiles[2 * ti], xs0 = xe->tiles[2 * ti + 1];
        }
        xend = xe->offsets[e + 1];
        map_w = xe->maps + 2 * e, map_wh = map_w + 1;
    }
    const int G = (k + 127) / 128, SL = SK ? 1 : P ? sl : (int)gridDim.z;
    const int ntx = (m + 127) / 128, nty = (n + 127) / 128;
    mmq_sk_range rg = {0, 0, 0, 0, 0}; /* (SK) this CTA's whole tiles, remainder units and the tile of its first */
    if (SK) rg = mmq_sk_range_of(ntx * nty, G, (int)gridDim.x, (int)blockIdx.x);
    int sk_slot = -1; /* (SK) the current segment's slot, -1: a whole tile */
    const int nt = SK ? mmq_sk_segments(&rg, G) : P ? ntx * nty * SL : 1;
    const int t0_ = SK ? 0 : P ? (int)blockIdx.x : 0, dt = SK ? 1 : P ? (int)gridDim.x : 1;
    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31;
    if (KQ && wg == 0) { /* the producer warpgroup: thread 0 copies the token codes, all 128 fill the rest */
        /* 40, as the other tiles: the CTA holds 384 x 168 registers, and 128 x 40 + 256 x 232 is all of them
         * (at 48 the consumers' increase would wait for ever on 1024 that do not exist) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        const int pr = threadIdx.x;
        int it = 0;
        for (int t = t0_; t < nt; t += dt) {
            const r3w_tile tl = r3w_tile_of<P>(t, ntx, nty, G, SL);
            for (int b = 0; b < tl.nk; b++, it++) {
                const int s = it & (S - 1);
                if (it >= S) memra_mb_wait(empty + 8 * s, (unsigned)(it / S - 1) & 1u);
                const unsigned char *blk =
                    KP ? kq_block(kw, G, tl.j0, tl.g0 + b, KP == 2 ? KW2_BLOCK_BYTES : KW_BLOCK_BYTES) : nullptr;
                if (pr == 0) {
                    const unsigned fb = full + 8 * s, st = sbase + s * SB;
                    memra_mb_arrive_tx(fb, KP == 2 ? 16384 + 16384 + 2048 + 8192 + KT_BLOCK_BYTES
                                           : KP   ? 16384 + 16384 + 2048
                                                  : 16384);
                    memra_tma_load_3d(st + 16384, map_x, 16, tl.i0, tl.g0 + b, fb);
                    if (KP) { /* the widened codes and their scales */
                        memra_bulk_g2s(st, blk, 16384, fb);
                        memra_bulk_g2s(st + 32768, blk + 16384, 2048, fb);
                    }
                    if (KP == 2) { /* the mins' tf32 tiles, and the tokens' part from + 4096 (their pass's block) */
                        memra_bulk_g2s(st + 32768 + R3W_KM_A1, blk + 18432, 8192, fb);
                        memra_bulk_g2s(st + 32768 + 4096, kq_block(kx2, G, tl.i0, tl.g0 + b, KT_BLOCK_BYTES),
                                       KT_BLOCK_BYTES, fb);
                    }
                }
                if (KP == 1) {
                    kq_fill_mins<KM>(stages + s * SB + 32768, reinterpret_cast<const float4 *>(blk + 18432)[pr], pr);
                    kq_fill_tok<KM>(stages + s * SB + 32768 + 4096, kx, kt, m, tl.i0, tl.g0 + b, pr);
                } else if (KP == 0) {
                    kq_fill<KF, KM>(stages + s * SB, kw, kx, kt, n, m, G, tl.j0, tl.i0, tl.g0 + b, pr);
                }
                /* the codes are the wgmma's operand: visible to the async proxy before `ready` */
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                memra_mb_arrive(ready + 8 * s);
            }
        }
        return;
    }
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        /* the whole warp stays, converged each step (run g1: with thread 0 alone in its warp the _wg
         * producer hung, while _wgt / _wgp, whose whole warp loops, passed) */
        if (threadIdx.x >= 32) return;
        if (XE && lane == 0) memra_tmap_acquire(map_w), memra_tmap_acquire(map_wh); /* written by experts_maps */
        int it = 0;
        for (int t = t0_; t < nt; t += dt) {
            int slot_unused;
            r3w_tile tl = SK ? r3w_sk_tile(t, ntx, G, rg, &slot_unused) : r3w_tile_of<P>(t, ntx, nty, G, SL);
            if (XE) tl.i0 = xs0, tl.j0 = xj0; /* the table's sorted rows; the (rastered) grid's weight rows */
            for (int b = 0; b < tl.nk; b++, it++) {
                if (lane == 0) {
                    const int s = it & (S - 1);
                    if (it >= S) memra_mb_wait(empty + 8 * s, (unsigned)(it / S - 1) & 1u);
                    const unsigned st = sbase + s * SB, fb = full + 8 * s;
                    memra_mb_arrive_tx(fb, R3W_STAGE_BYTES);
                    memra_tma_load_3d(st, map_w, 16, tl.j0, tl.g0 + b, fb);
                    memra_tma_load_3d(st + 16384, map_x, 16, tl.i0, tl.g0 + b, fb);
                    memra_tma_load_3d(st + 32768, map_wh, 0, tl.j0, tl.g0 + b, fb);
                    memra_tma_load_3d(st + 32768 + 2048, map_xh, 0, tl.i0, tl.g0 + b, fb);
                    if constexpr (XPF > 0) { /* the weight's codes and heads XPF steps on, into L2 (the first
                                              * tile step also the ones between the ring's S and XPF) */
                        for (int p = b == 0 ? S : b + XPF; p <= b + XPF && p < tl.nk; p++) {
                            memra_tma_prefetch_3d(map_w, 16, tl.j0, tl.g0 + p);
                            memra_tma_prefetch_3d(map_wh, 0, tl.j0, tl.g0 + p);
                        }
                    }
                }
                if (TR && it >= 1) r3w_transpose<S, SB, SD>(stages, full, ready, it - 1, lane);
                if (!TR) __syncwarp();
            }
        }
        if (TR && it >= 1) r3w_transpose<S, SB, SD>(stages, full, ready, it - 1, lane);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int ct = threadIdx.x - 128, w = ct >> 7;
    const int r = w * 64 + ((ct >> 5) & 3) * 16 + (lane >> 2), cq = 2 * (lane & 3);
    const unsigned a_off = (unsigned)w * 64 * 128;
    uint32_t t0[64], t1[64];
    unsigned long long dseed = 0;
    uint32_t sa[4] = {0u, 0u, 0u, 0u}; /* (SD) the seed's A: written once, before any wgmma.fence */
    if (SD) { /* the seed block: the 256 consumer threads 16 bytes each, then visible to the async proxy */
#pragma unroll
        for (int i = 0; i < 4; i++) asm volatile("mov.b32 %0, 0x80808080;\n" : "=r"(sa[i]));
        const unsigned seed = sbase + S * SB;
        *reinterpret_cast<uint4 *>(stages + S * SB + 16 * ct) = make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
        /* (XQ) the tile's rows' places in y, read while the first stage is on its way, for the epilogue (the routing
         * fills the permutation up to m, past the rows it routed) */
        if (XQ && ct < 128) r3w_xperm[ct] = xs0 + ct < m ? xe->perm[xs0 + ct] : 0;
        asm volatile("fence.proxy.async.shared::cta;\nbar.sync 1, 256;\n" ::: "memory");
        dseed = r3w_seed_desc(seed);
    } else {
        r3w_seed(t0); /* (once: t0 is seeded again only by folds; a tile not in flight is the CTA's first with steps) */
        r3w_seed(t1);
    }
    float sc[2]; /* the weight scales of the group about to be folded (each step loads the next one's) */
    float4 xp[4]; /* (XP) its token scales of j = 0 .. 7 likewise */
    float mc[2] = {0.0f, 0.0f}; /* (KQ) its rows' mins likewise */
    int it = 0;
    if (PP && w == 1) asm volatile("bar.arrive 2, 256;\n" ::: "memory"); /* consumer 0 folds first */
    bool inflight = false; /* t0 holds the tile's first group, issued during the last tile's last fold */
    unsigned empty_p = 0u; /* (KM) the `empty` of the stage whose min term is in flight (0: none) */
    for (int t = t0_; t < nt; t += dt) {
        r3w_tile tl = SK ? r3w_sk_tile(t, ntx, G, rg, &sk_slot) : r3w_tile_of<P>(t, ntx, nty, G, SL);
        if (XE) tl.i0 = xs0, tl.j0 = xj0;
        float acc[64];
#pragma unroll
        for (int i = 0; i < 64; i++) acc[i] = 0.0f;
        if (tl.nk <= 0) { /* a slice without steps (never planned; never on the persistent tiles): its zeros */
            pdl_trigger();
            r3w_store<false, false, XE, NT>(acc, y, part, ldy, alpha, m, n, tl.i0, tl.j0 + r, cq, SL, tl.z,
                                        XE ? xe->perm : nullptr, xend);
            continue;
        }
        if (!inflight) {
            const unsigned f0 = full + 8 * (it & (S - 1)), p0 = (unsigned)(it / S) & 1u;
            memra_mb_wait(f0, p0);
            if (TR) memra_mb_wait(f0 + 16 * S, p0);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            if constexpr (NT != 128) {
                r3w_mma_seed_n<NT>(t0, dseed, sa);
                r3w_mma_n<NT>(t0, memra_wg_desc(sbase + (it & (S - 1)) * SB + a_off),
                              memra_wg_desc(sbase + (it & (S - 1)) * SB + 16384));
            } else if constexpr (IA) {
                r3w_mma_nd(t0, memra_wg_desc(sbase + (it & (S - 1)) * SB + a_off),
                           memra_wg_desc(sbase + (it & (S - 1)) * SB + 16384));
            } else {
                if (SD && (KM || SA)) r3w_mma_seed_s(t0, dseed);
                else if (SD) r3w_mma_seed(t0, dseed, sa);
                r3w_mma<KQ>(t0, memra_wg_desc(sbase + (it & (S - 1)) * SB + a_off),
                            memra_wg_desc(sbase + (it & (S - 1)) * SB + 16384));
            }
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            const float *h0 = reinterpret_cast<const float *>(stages + (it & (S - 1)) * SB + 32768);
            sc[0] = h0[r * 4], sc[1] = h0[(r + 8) * 4];
            if (XP) {
#pragma unroll
                for (int q = 0; q < 4; q++) xp[q] = *reinterpret_cast<const float4 *>(h0 + 1024 + r3w_perm(16 * q + cq));
            }
            if (KQ && !KM) mc[0] = h0[1536 + r * 4], mc[1] = h0[1536 + (r + 8) * 4]; /* the mins at + 6144 bytes */
        }
        /* after the tile's last step: the first step of the CTA's next tile with steps (P, where there is one),
         * else that last step again (never folded; no copy follows it into the stage: the CTA's last) */
        bool more = P && t + dt < nt;
        if (P && SL > G) { /* (slices without steps: never launched so; a later tile with steps, if any) */
            more = false;
            for (int t2 = t + dt; t2 < nt && !more; t2 += dt) more = r3w_tile_of<P>(t2, ntx, nty, G, SL).nk > 0;
        }
        const int in_max = it + tl.nk - (more ? 0 : 1); /* the last ring step the tile's issues may reach */
        for (int b = 0; b < tl.nk; b++) {
            const int ic = it + b, in = ic + 1 < in_max ? ic + 1 : in_max;
            const int s = ic & (S - 1), sn = in & (S - 1);
            const unsigned st = sbase + s * SB, st_n = sbase + sn * SB;
            const unsigned char *sp = stages + s * SB, *sp_n = stages + sn * SB;
            const unsigned ph_n = (unsigned)(in / S) & 1u, full_n = full + 8 * sn, empty_s = empty + 8 * s;
            /* (SD) the descriptors of this stage's and the next issue's operands */
            const unsigned long long da = memra_wg_desc(st + a_off), db = memra_wg_desc(st + 16384);
            const unsigned long long da_n = memra_wg_desc(st_n + a_off), db_n = memra_wg_desc(st_n + 16384);
            r3w_step<0, TR, SD, KQ, KM, SA, XP, PP, NT, PIN, IA>(acc, t0, t1, sc, mc, xp, sp, sp, st, 0u, 0u, empty_s, a_off, r, cq, dseed, sa, da, db,
                                        empty_p);
            r3w_step<1, TR, SD, KQ, KM, SA, XP, PP, NT, PIN, IA>(acc, t1, t0, sc, mc, xp, sp, sp, st, 0u, 0u, empty_s, a_off, r, cq, dseed, sa, da, db);
            r3w_step<2, TR, SD, KQ, KM, SA, XP, PP, NT, PIN, IA>(acc, t0, t1, sc, mc, xp, sp, sp, st, 0u, 0u, empty_s, a_off, r, cq, dseed, sa, da, db);
            r3w_step<3, TR, SD, KQ, KM, SA, XP, PP, NT, PIN, IA>(acc, t1, t0, sc, mc, xp, sp, sp_n, st_n, full_n, ph_n, empty_s, a_off, r, cq, dseed, sa,
                                        da_n, db_n);
            if (KM) { /* the step's min term into t1 (just folded), its operands in this stage, held until the
                       * next step's first wait */
                r3w_min_step(t1, st, w);
                empty_p = empty_s;
            }
        }
        it += tl.nk;
        inflight = more; /* (tiles without steps between keep it: they issue nothing) */
        if (!more) {
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); /* the repeated group's, never read */
            r3w_fence_regs_n<NT / 2>(t0);
            if (KM) r3w_min_add(acc, t1, empty_p), empty_p = 0u; /* and the last step's min term */
        }
        pdl_trigger();
        if (SK && sk_slot >= 0) /* part of a tile: its partial sum into the CTA's slot, for the fix-up */
            r3w_store_slot(acc, part + (long long)sk_slot * 16384, r, cq);
        else
            r3w_store<SD, KQ, XE, NT>(acc, y, part, ldy, alpha, m, n, tl.i0, tl.j0 + r, cq, SL, tl.z,
                                      XQ ? r3w_xperm : XE ? xe->perm : nullptr, xend, XQ ? tl.i0 : 0);
    }
    if (PP && w == 0) asm volatile("bar.sync 2, 256;\n" ::: "memory"); /* consumer 1's arrival after its last fold */
}

#define R3W_ENTRY(NAME, TR, SD)                                                                                      \
    extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)                                                     \
        NAME(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,                     \
             const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh, float *__restrict__ y, \
             int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)                               \
    {                                                                                                                 \
        r3w_body<TR, false, SD>(&map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);                   \
    }
R3W_ENTRY(memra_k_gemm_q8_0r_wg, false, false)
R3W_ENTRY(memra_k_gemm_q8_0r_wgt, true, false) /* MEMRA_MMQ_WG_TR=1 */
R3W_ENTRY(memra_k_gemm_q8_0r_wgs, true, true)  /* MEMRA_MMQ_WG_SEED=1: seeded by the tensor cores */
/* MEMRA_MMQ_WG_SEED=smem: the seed's A read from the seed block too (r3w_mma_seed_s), not 4 registers of
 * 0x80 bytes: 8 registers and 7 MOVs a group fewer, 2 KB more of shared memory read a seed */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgsa(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                        const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                        float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, -1, false, true>(&map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_SEED=xp: _wgsa (the seed's A from shared memory, which frees the 8 registers of the constant A)
 * with each group's token scales of j = 0 .. 7 loaded a group ahead, as its weight scales are, and those of
 * j = 8 .. 15 before its first FFMA. Run k3 found the fold's FFMAs stalled on those loads (short
 * scoreboard) in 22% of `_wgs`'s samples. ptxas: 16 bytes of spill, 2 stores and 2 loads a step; the same
 * registers in _wgs spill 148 bytes. */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgsax(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                         const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                         float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, -1, false, true, false, false, true>(&map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy,
                                                                     alpha, part, 1);
}
/* MEMRA_MMQ_WG_TAIL=1: _wgs whose last row tile, where it holds 1 .. 96 tokens (m mod 128), runs with the fewest
 * token columns of 32, 64 or 96 that hold them (r3w_body NT: m64nNTk32 wgmmas, NT / 128 of the fold) instead of
 * 128 partly empty ones: at m = 1030 the ninth row tile costs about a quarter of a tile, not a whole one. The
 * other CTAs are _wgs's; every output the same operands and folds in the same order, so bit for bit _wgs. */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgst(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                        const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                        float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    const int tail = (int)blockIdx.x == (int)gridDim.x - 1 ? m - 128 * (int)blockIdx.x : 128;
    if (tail <= 32)
        r3w_body<true, false, true, -1, false, false, false, false, false, 0, false, false, 32>(
            &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
    else if (tail <= 64)
        r3w_body<true, false, true, -1, false, false, false, false, false, 0, false, false, 64>(
            &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
    else if (tail <= 96)
        r3w_body<true, false, true, -1, false, false, false, false, false, 0, false, false, 96>(
            &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
    else
        r3w_body<true, false, true>(&map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_SEED=pp: _wgs with the two consumer warpgroups folding in turn (r3w_pp_pass): run k3 measured
 * ~640 cycles a k32 group, about the sum of the fold's issue (~344 at two warps a scheduler) and the group's
 * tensor work (~256), not their maximum. In turn, each warpgroup's wgmmas run while the other folds, and a
 * folding warpgroup has the schedulers to itself. The same FFMAs on the same products in the same order:
 * bit for bit _wgs. */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgspp(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                         const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                         float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, -1, false, false, false, false, false, 0, false, true>(&map_w, &map_wh, &map_x, &map_xh,
                                                                                      y, m, n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_SEED=pin: _wgs with each group's fold pinned behind its s8 wgmma (r3w_pin), bit for bit _wgs */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgsf(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                        const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                        float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, -1, false, false, false, false, false, 0, false, false, 128, true>(
        &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_SEED=iadd: _wgs without the seed wgmma (r3w_mma_nd: the product alone; the fold adds the seed's
 * 2^19 with an integer add), bit for bit _wgs: the seed's shared-memory reads and tensor work were most of a group's
 * cost beside the token scales' loads in bench/micro/wgfold.cu (run u1) */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgsi(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                        const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                        float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, -1, false, false, false, false, false, 0, false, false, 128, false, true>(
        &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_PERSIST=1 (with the token scales transposed): the persistent tiles, sl slices, a 1-D grid */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgp(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                       const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                       float *__restrict__ y, int m, int n, int k, long long ldy, float alpha, float *__restrict__ part,
                       int sl)
{
    r3w_body<true, true, false>(&map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, sl);
}
/* MEMRA_MMQ_WG_PERSIST=1 with MEMRA_MMQ_WG_SEED=1 */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgps(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                        const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                        float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                        float *__restrict__ part, int sl)
{
    r3w_body<true, true, true>(&map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, sl);
}
/* MEMRA_MMQ_WG_SK=1: the seeded tile on stream-k ranges (r3w_body SK): a 1-D grid of P <= one CTA an SM, each
 * CTA an equal share of the call's tile steps, whole tiles stored, parts of tiles into part's slots (2 P x 64 KB),
 * then memra_k_gemm_q8_0r_skfix. A split tile's sum is its segments' partial sums added in k order: a different
 * rounding from the unsplit tile's (one f32 addition a segment), the same every call at a given P. */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgsk(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                        const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                        float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                        float *__restrict__ part)
{
    r3w_body<true, true, true, -1, false, false, false, false, false, 0, true>(&map_w, &map_wh, &map_x, &map_xh, y, m,
                                                                               n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_SEED=pin: the stream-k tile with each group's fold pinned behind its s8 wgmma (r3w_pin), bit for
 * bit memra_k_gemm_q8_0r_wgsk */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgskf(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                         const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                         float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                         float *__restrict__ part)
{
    r3w_body<true, true, true, -1, false, false, false, false, false, 0, true, false, 128, true>(
        &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
}
/* MEMRA_MMQ_WG_SEED=iadd: the stream-k tile without the seed wgmma (r3w_mma_nd), bit for bit memra_k_gemm_q8_0r_wgsk */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_q8_0r_wgski(const __grid_constant__ memra_tmap map_w, const __grid_constant__ memra_tmap map_wh,
                         const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                         float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                         float *__restrict__ part)
{
    r3w_body<true, true, true, -1, false, false, false, false, false, 0, true, false, 128, false, true>(
        &map_w, &map_wh, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1);
}
/* The stream-k fix-up, a dependent of memra_k_gemm_q8_0r_wgsk launched with the same P: grid (rem, 16), block
 * (Tr, h) rows 8 h .. 8 h + 7 of remainder tile Tr (a float4 a thread). The CTAs whose ranges share the tile (the
 * owner of unit u is the c with c U / P <= u < (c + 1) U / P) are found once a thread; where one CTA had it whole
 * the block returns, else y = alpha (the segments' partial sums in k order). A segment is slot 2 c where it holds
 * CTA c's first remainder unit, else 2 c + 1; a CTA without remainder units (U < P) has none. */
extern "C" __global__ void __launch_bounds__(256)
memra_k_gemm_q8_0r_skfix(const float *__restrict__ part, float *__restrict__ y, long long ldy, float alpha, int m, int n,
                         int k, int P)
{
    pdl_wait();
    const int G = (k + 127) / 128, ntx = (m + 127) / 128, T = ntx * ((n + 127) / 128), Tr = (int)blockIdx.x;
    int ca, cb;
    long long U;
    mmq_sk_owners(T, G, P, Tr, &ca, &cb, &U);
    if (ca == cb) return;
    const int e = 4 * ((int)blockIdx.y * 256 + (int)threadIdx.x), tile = T / P * P + Tr;
    const int i = (tile % ntx) * 128 + (e >> 7), c = (tile / ntx) * 128 + (e & 127);
    if (i >= m || c >= n) return;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    bool first = true;
    for (int cc = ca; cc <= cb; cc++) {
        const int slot = mmq_sk_slot(U, P, cc, (long long)Tr * G);
        if (slot < 0) continue; /* fewer remainder units than CTAs: cc has none */
        const float4 v = __ldg(reinterpret_cast<const float4 *>(part + (long long)slot * 16384 + e));
        if (first) sum = v, first = false;
        else sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    float *o = y + (long long)i * ldy + c;
    o[0] = alpha * sum.x;
    if (c + 1 < n) o[1] = alpha * sum.y;
    if (c + 2 < n) o[2] = alpha * sum.z;
    if (c + 3 < n) o[3] = alpha * sum.w;
}
/* MEMRA_MMQ_XE_WG=1: gemm_experts' Q8_0 full tiles on the seeded tile (r3w_body XE). Grid (the table's
 * worst-case tile count, ceil(n / 128), S slices); map_x / map_xh: the sorted records' codes and heads
 * (r3w_maps' third and fourth, over the gathered records); maps: 2 E tensor maps, 128-byte aligned, from
 * memra_k_experts_maps_q8_0r (the launch before this one) */
#define R3W_XE_ENTRY(NAME, XT, PP, PIN, IA, XPF, XQ)                                                                 \
    extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)                                                    \
        NAME(const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,                    \
             const memra_tmap *__restrict__ maps, const int *__restrict__ offsets, const int *__restrict__ perm,     \
             const int *__restrict__ tiles, const int *__restrict__ ntiles, float *__restrict__ y, int m, int n,     \
             int k, long long ldy, float alpha, float *__restrict__ part)                                            \
    {                                                                                                                \
        const r3w_xe xe = {maps, offsets, perm, tiles, ntiles};                                                      \
        r3w_body<true, false, true, -1, false, false, true, XT, false, 0, false, PP, 128, PIN, IA, XPF, XQ>(          \
            nullptr, nullptr, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1, nullptr, nullptr, nullptr, &xe);     \
    }
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgs, false, false, false, false, 0, false)
/* with MEMRA_MMQ_WG_SEED=pin: the fold pinned behind the s8 wgmma, as the dense _wgsf (r3w_pin) */
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgsf, false, false, true, false, 0, false)
/* with MEMRA_MMQ_XE_OVERLAP=1 too: the trigger as soon as the CTA has its tile (XE_OVL_MAIN), so that the
 * remainder table's _mt1_o2 grid fills the SMs this grid's last wave leaves idle */
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgs_o1, true, false, false, false, 0, false)
/* with MEMRA_MMQ_XE_PF=1 (opt-in): the producer also brings the expert's weight codes and heads XPF = 8 steps
 * ahead of the stage it fills into L2 (cp.async.bulk.prefetch.tensor, one pair a step: 4 steps past the ring's),
 * where the grouped tile streams every expert's weight from DRAM (run z2, m = 512: 371 us for the 896 tiles
 * that take the dense call's 896 330 us, the weight read at half of DRAM's rate, L2 hit 67% against 93%). The
 * copies and MMAs are _wgs's: outputs bit for bit. */
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgs_pf, false, false, false, false, 8, false)
/* with MEMRA_MMQ_XE_QS=1 (opt-in): the quick start. A CTA reads the tile count and its table entry at once (one
 * round trip where _wgs makes two before its first copy), and its consumers put the tile's 128 places in y into
 * shared memory while the first stage is on its way, so the epilogue's scatter reads no global memory (run ac4,
 * m = 4096: the grouped tile took 1.11x the dense tile's cycles for 1.02x its instructions, 0.50 long-scoreboard
 * stalls an issue against 0.27). The copies and MMAs are _wgs's: outputs bit for bit. */
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgs_q, false, false, false, false, 0, true)
/* MEMRA_MMQ_XE_WG_REM=1: both tables in one grid. Grid (t1 + the remainder table's worst-case count, ceil(n / 128),
 * S): CTA x < t1 the 128-row table's tile x, as memra_k_experts_q8_0r_wgs; x >= t1 the remainder table's tile
 * x - t1 (tiles2 / ntiles2: at most 32 rows, the route's bm2), on the same tile with 32 token columns (m64n32
 * wgmmas, a quarter of the fold: r3w_body NT). A CTA's column block is grid.y, so the CTAs of one column block
 * are dispatched together, and an expert's remainder tile runs beside its full tile, reading the weight those
 * copies bring into L2 (run r5: the remainder launch after the full tiles re-read it from DRAM, a quarter of
 * the call). The same operands and folds in the same order as the records tiles: bit for bit theirs. */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_experts_q8_0r_wgsr(const __grid_constant__ memra_tmap map_x, const __grid_constant__ memra_tmap map_xh,
                           const memra_tmap *__restrict__ maps, const int *__restrict__ offsets,
                           const int *__restrict__ perm, const int *__restrict__ tiles, const int *__restrict__ ntiles,
                           float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                           float *__restrict__ part, const int *__restrict__ tiles2, const int *__restrict__ ntiles2,
                           int t1)
{
    if ((int)blockIdx.x < t1) {
        const r3w_xe xe = {maps, offsets, perm, tiles, ntiles, 0};
        r3w_body<true, false, true, -1, false, false, true>(nullptr, nullptr, &map_x, &map_xh, y, m, n, k, ldy, alpha,
                                                            part, 1, nullptr, nullptr, nullptr, &xe);
    } else {
        const r3w_xe xe = {maps, offsets, perm, tiles2, ntiles2, t1};
        r3w_body<true, false, true, -1, false, false, true, false, false, 0, false, false, 32>(
            nullptr, nullptr, &map_x, &map_xh, y, m, n, k, ldy, alpha, part, 1, nullptr, nullptr, nullptr, &xe);
    }
}
/* with MEMRA_MMQ_WG_SEED=pp: the consumers fold in turn, as the dense _wgspp (a tile past *ntiles exits as a whole
 * CTA, before its consumers' first barrier) */
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgspp, false, true, false, false, 0, false)
/* with MEMRA_MMQ_WG_SEED=iadd: no seed wgmma (r3w_mma_nd), as the dense _wgsi */
R3W_XE_ENTRY(memra_k_experts_q8_0r_wgsi, false, false, false, true, 0, false)
#undef R3W_XE_ENTRY
/* Its weight maps: maps[2 e + h] = the host's template tmpl_h (r3w_maps' first (h 0: the codes) and second
 * (1: the heads), encoded over an expert's [G steps][n rows][144 bytes] at any aligned address) with
 * expert e's records wtab[e] put in (common/tile.cuh memra_tmap_put). One warp a map, grid
 * ceil(2 E / 4) x 128 threads; a plain launch. */
extern "C" __global__ void __launch_bounds__(128)
memra_k_experts_maps_q8_0r(const __grid_constant__ memra_tmap tmpl_w, const __grid_constant__ memra_tmap tmpl_wh,
                           const unsigned long long *__restrict__ wtab, int E, memra_tmap *__restrict__ maps)
{
    const int lane = threadIdx.x & 31, i = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (i >= 2 * E) return;
    memra_tmap_put((i & 1) ? tmpl_wh : tmpl_w, wtab[i >> 1], &maps[i], lane);
}
/* MEMRA_MMQ_KR_WG=1: gemm_kr's Q4_K / Q5_K on the seeded tile (r3w_body KF; kq_fill): map_x the token
 * codes' map (r3w_maps' third), w the K-packed weight, xq the q8_1 records, xs their sum plane */
#define R3W_KQ_ENTRY(NAME, F, KM)                                                                                    \
    extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)                                                    \
        NAME(const __grid_constant__ memra_tmap map_x, const unsigned char *__restrict__ w,                          \
             const unsigned char *__restrict__ xq, const unsigned char *__restrict__ xs, float *__restrict__ y, int m, \
             int n, int k, long long ldy, float alpha, float *__restrict__ part)                                     \
    {                                                                                                                \
        r3w_body<true, false, true, F, KM>(&map_x, &map_x, &map_x, &map_x, y, m, n, k, ldy, alpha, part, 1, w, xq, xs); \
    }
R3W_KQ_ENTRY(memra_k_gemm_kr_q4_k_wgs, KR_Q4_K, false)
R3W_KQ_ENTRY(memra_k_gemm_kr_q5_k_wgs, KR_Q5_K, false)
/* MEMRA_MMQ_KR_WG=mma: the same with the min term by tf32 wgmmas (r3w_body KM) */
R3W_KQ_ENTRY(memra_k_gemm_kr_q4_k_wgm, KR_Q4_K, true)
R3W_KQ_ENTRY(memra_k_gemm_kr_q5_k_wgm, KR_Q5_K, true)
#undef R3W_KQ_ENTRY
/* MEMRA_MMQ_KR_WG=pre: _wgm fed by the call's widened image (r3w_body KP; w the image, written by
 * memra_k_kq_widen_q4_k / _q5_k just before): one kernel for both formats, bit for bit _wgm's results */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_kr_kq_wgw(const __grid_constant__ memra_tmap map_x, const unsigned char *__restrict__ w,
                       const unsigned char *__restrict__ xq, const unsigned char *__restrict__ xs, float *__restrict__ y,
                       int m, int n, int k, long long ldy, float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, KR_Q4_K, true, false, false, false, false, 1>(&map_x, &map_x, &map_x, &map_x, y, m, n, k,
                                                                              ldy, alpha, part, 1, w, xq, xs);
}
/* MEMRA_MMQ_KR_WG=pre2: the same with the mins' tf32 tiles in the weight's image and the tokens' part in a second
 * one (xt), both written by memra_k_kq_prep2_*: a producer of copies alone */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_kr_kq_wgw2(const __grid_constant__ memra_tmap map_x, const unsigned char *__restrict__ w,
                        const unsigned char *__restrict__ xt, float *__restrict__ y, int m, int n, int k, long long ldy,
                        float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, KR_Q4_K, true, false, false, false, false, 2>(
        &map_x, &map_x, &map_x, &map_x, y, m, n, k, ldy, alpha, part, 1, w, nullptr, nullptr, nullptr, xt);
}
/* with MEMRA_MMQ_WG_SEED=pin: _wgw2 with each group's fold pinned behind its s8 wgmma (r3w_pin), bit for bit _wgw2 */
extern "C" __global__ void __launch_bounds__(R3W_THREADS, 1)
memra_k_gemm_kr_kq_wgw2f(const __grid_constant__ memra_tmap map_x, const unsigned char *__restrict__ w,
                         const unsigned char *__restrict__ xt, float *__restrict__ y, int m, int n, int k, long long ldy,
                         float alpha, float *__restrict__ part)
{
    r3w_body<true, false, true, KR_Q4_K, true, false, false, false, false, 2, false, false, 128, true>(
        &map_x, &map_x, &map_x, &map_x, y, m, n, k, ldy, alpha, part, 1, w, nullptr, nullptr, nullptr, xt);
}
/* The passes are programmatic dependents like the GEMMs: they write only after the kernels before them (the
 * q8_1 records; the previous call's tile, which may still read the images) are complete. =pre: grid
 * (ceil(n / 128), G); =pre2: grid (ceil(n / 128) + ceil(m / 128), G), the weight's row tiles first, then
 * the token tiles (xq, xs: the q8_1 records and their sum plane, xt: the tokens' image) */
#define KQ_WIDEN_ENTRY(NAME, F)                                                                                      \
    extern "C" __global__ void __launch_bounds__(KW_THREADS)                                                        \
        NAME(const unsigned char *__restrict__ w, unsigned char *__restrict__ img, int n, int G)                     \
    {                                                                                                                \
        pdl_wait();                                                                                                  \
        kq_widen_body<F, 1>(w, img, n, G, (int)blockIdx.x);                                                          \
    }
KQ_WIDEN_ENTRY(memra_k_kq_widen_q4_k, KR_Q4_K)
KQ_WIDEN_ENTRY(memra_k_kq_widen_q5_k, KR_Q5_K)
#undef KQ_WIDEN_ENTRY
#define KQ_PREP2_ENTRY(NAME, F)                                                                                      \
    extern "C" __global__ void __launch_bounds__(KW_THREADS)                                                        \
        NAME(const unsigned char *__restrict__ w, unsigned char *__restrict__ img, int n, int G,                     \
             const unsigned char *__restrict__ xq, const unsigned char *__restrict__ xs,                            \
             unsigned char *__restrict__ xt, int m)                                                                  \
    {                                                                                                                \
        const int nty = (n + 127) / 128;                                                                             \
        pdl_wait();                                                                                                  \
        if ((int)blockIdx.x < nty) kq_widen_body<F, 2>(w, img, n, G, (int)blockIdx.x);                              \
        else kq_tokens_body(xq, xs, xt, m, G, (int)blockIdx.x - nty);                                                \
    }
KQ_PREP2_ENTRY(memra_k_kq_prep2_q4_k, KR_Q4_K)
KQ_PREP2_ENTRY(memra_k_kq_prep2_q5_k, KR_Q5_K)
#undef KQ_PREP2_ENTRY
#undef R3W_ENTRY
#endif


/* y[i, j] = alpha * (part[0][i][j] + part[1][i][j] + ... + part[S-1][i][j]),
 * the slices added in order. Rows blockIdx.y, blockIdx.y + gridDim.y, ...;
 * columns over blockIdx.x and the threads: 4 per thread where n % 4 == 0 (the
 * partial rows are then 16-byte aligned; y's need not be), else 1. */
extern "C" __global__ void __launch_bounds__(256)
memra_k_splitk_sum(const float *__restrict__ part, int S, int m, int n, float *__restrict__ y, long long ldy, float alpha)
{
    pdl_wait();
    const long long plane = (long long)m * n;
    const int step = gridDim.x * blockDim.x;
    if ((n & 3) == 0) {
        const long long plane4 = plane / 4;
        for (int i = blockIdx.y; i < m; i += gridDim.y)
            for (int j4 = blockIdx.x * blockDim.x + threadIdx.x; j4 < n / 4; j4 += step) {
                const float4 *p = reinterpret_cast<const float4 *>(part + (long long)i * n) + j4;
                float4 s = p[0];
                for (int z = 1; z < S; z++) {
                    const float4 t = p[z * plane4];
                    s.x += t.x, s.y += t.y, s.z += t.z, s.w += t.w;
                }
                float *o = y + (long long)i * ldy + 4 * j4;
                o[0] = alpha * s.x, o[1] = alpha * s.y, o[2] = alpha * s.z, o[3] = alpha * s.w;
            }
        return;
    }
    for (int i = blockIdx.y; i < m; i += gridDim.y)
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += step) {
            const float *p = part + (long long)i * n + j;
            float s = p[0];
            for (int z = 1; z < S; z++) s += p[z * plane];
            y[(long long)i * ldy + j] = alpha * s;
        }
}

static_assert(R3_SMEM_BYTES(4, 4) == 110592 && R3_SMEM_BYTES(2, 4) == 82944 && R3_SMEM_BYTES(4, 3) == 96768 &&
                  R3_SMEM_BYTES(2, 3) == 69120,
              "mmq_ops.c tables these sizes");

/* ---- gemm_kr: K-quant weights, K-packed ----------------------------------------------
 *
 * memra_k_gemm_kr_<format>_<tile>  the floor for Q4_K, Q5_K (fold "min") and
 *                      Q6_K (fold "q6") on the K-packed layout (module.h,
 *                      memra_kr_bytes: the GGUF codes and scales in planes N,
 *                      H, S, D at their own width, made on the host at prepare
 *                      by memra_kr_repack) x q8_1 records.
 * gemm_q8_0r's tile, split-k and epilogue; what differs:
 *  - the load stage widens the weight. At step kt each thread cp.asyncs its
 *    own packed bytes of step kt+1 (two 16-byte nibble units, their 4 or 8
 *    bytes of top bits, and for thread t < BN row t's 16-byte super-block
 *    head, or Q6_K's 8 scales of this half and the aligned word holding its
 *    d; per plane a step's records of the CTA's rows are one contiguous run:
 *    coalesced) into the packed slot P while step kt's MMAs run, waits for
 *    its own copies only (cp.async.wait_group 1: no barrier, it reads back
 *    only what it copied), and widens them in registers (per 4 codes: an AND
 *    or a shift-AND for the nibbles; Q5_K one shift-AND-OR for the fifth bit;
 *    Q6_K one for the top bits and the -32 as (v + 0x60) ^ 0x80 per byte)
 *    into the other of two weight slots, in the int8 layout the fold reads: a
 *    144-byte row (f32 s[0..3], int8 q[128]; 36 words apart: conflict-free
 *    ldmatrix phases and conflict-free 16-byte stores) and a 16-byte side row
 *    (s[4..7]). The scales are formed exactly as memra_kr_record forms them
 *    (an f16 times a 6-bit or int8 integer: exact in f32), so the fold sees
 *    the same operands as the host reference (formats.kpacked runs this
 *    widening, transcribed to C, against memra_kr_record). Nothing packed
 *    stays in registers across the MMAs. The activation records keep
 *    gemm_q8_0r's 3-stage cp.async pipeline. Rows past n get zero-filled
 *    bytes (scale 0: they add exact zeros, and are never stored).
 *  - fold "min" (value = s_b q - mn_b): per output element and 32-block
 *        acc = fma(sx, fma(D, s, -M s), acc)   (gemm_q8_0r's two FFMAs)
 *        acc = fma(t, -mn, acc)                one FFMA for the min term,
 *    t = sx * S the token's block sum with its scale, S = sum xq (exact). The
 *    _x / _tx tiles and the sorted grouped _sx / _stx ones (MEMRA_MMQ_KR_SUMS,
 *    the default) read t from the records' sum plane (quant_q8_1 writes
 *    fl(S d) there, bit for bit this t), copied per activation stage beside
 *    the records (16 bytes a row, KR_XT_BYTES), one LDS per (m16 tile, block,
 *    row). The others (Q4_K's per-32 fold, the one-CTA tiles, the gathered,
 *    overlap and merged grouped tiles) form S from one more m16n8k32 MMA per
 *    (m16 tile, block) with B = all ones (the A fragment the warp already
 *    holds; D's rows are the tile's token rows, every column the same sum):
 *    1/NT more MMAs, t = (D1 - M) * sx.
 *  - fold "q6" (value = s_h q, one scale per 16 values): the k32 fragments
 *    split into their two k16 halves (a0 a1 b0 / a2 a3 b1: the m16n8k16
 *    operand layouts), two m16n8k16 MMAs give the exact I_lo, I_hi, and
 *        u = fma(D_hi, s_hi, -M s_hi)          = fl(s_hi I_hi)
 *        v = fma(D_lo - M, s_lo, u)            = fl(s_lo I_lo + u)  (D_lo - M exact)
 *        acc = fma(sx, v, acc)
 *    four instructions per element and 32-block (gemm_q8_0r: two; "min":
 *    three). A per-16 fold with its own accumulator update (two
 *    fma(sx, fma(D, s, -M s), acc)) costs the same four; chaining the two
 *    halves before the update keeps one accumulator rounding per 32 instead
 *    of two. (-M s exact: s = d sc has at most 11 + 8 significant bits.)
 * Both keep every integer product exact; the roundings per 32-block are
 * three (fold "min": s I, + acc, then + the min term) and three (fold "q6"),
 * against gemm_q8_0r's two: the band is judge_band_fold with 2 nb terms
 * (tools/judge.h). Shared memory 2 x 32 NT x 160 (widened weights) + 3 x
 * 32 MT x 144 (activations) + 32 NT x (80 + KR_HB) (packed; KR_HB = 0, 16, 32
 * for Q4_K, Q5_K, Q6_K): 106496 / 108544 / 110592 at MT = 4, NT = 4, 78848 /
 * 80896 / 82944 at 2 / 4, 93696 / 95232 / 96768 at 4 / 3, 66048 / 67584 / 69120
 * at 2 / 3: two CTAs fit an sm_90 SM at every tile, and every tile but
 * 128 x 128 fits sm_120's 99 KB. */

#define KR_W_ROWS(NT) (32 * (NT) * MMQ_ROW)        /* a weight slot's 144-byte rows */
#define KR_W_SLOT(NT) (32 * (NT) * (MMQ_ROW + 16)) /* + its 16-byte side rows */
#define KR_A_OFF(NT) (2 * KR_W_SLOT(NT))           /* then the activation slots, then the packed slot */
#define KR_P_OFF(MT, NT) (KR_A_OFF(NT) + R3_STAGES * R3_A_BYTES(MT))
#define KR_T_OFF(F, MT, NT) (KR_P_OFF(MT, NT) + 32 * (NT) * (80 + KR_HB(F))) /* the sum-plane slots */

/* The sum-plane entries of SLOTS activation rows (16 bytes each, contiguous
 * in the plane) into S, of which the first `rows` exist (the rest zero-filled:
 * t = 0, as the zero-filled records' sums). */
template <int SLOTS>
__device__ __forceinline__ void kr_copy_t(unsigned char *S, const unsigned char *src, int rows)
{
    static_assert(SLOTS <= MMQ_THREADS, "one entry per thread");
    const int tid = threadIdx.x;
    if (tid < SLOTS) {
        const bool ok = tid < rows;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(S) + tid * 16),
                     "l"(ok ? src + tid * 16 : src), "r"(ok ? 16 : 0));
    }
}

#define KR_FOLD(F) ((F) == KR_Q6_K ? MMQ_FOLD_Q6 : MMQ_FOLD_MIN) /* a K-quant's fold in mmq_step */

/* cp.async of N (4, 8 or 16) bytes of which src_bytes are read, the rest zero-filled. */
template <int N> __device__ __forceinline__ void cp_async_n(uint32_t dst, const void *src, int src_bytes)
{
    if (N == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(N), "r"(src_bytes));
}

/* Step g's packed bytes of rows j0.. (the first `rows` exist; the rest are
 * zero-filled) into the packed slot P, each thread copying exactly what its
 * kr_widen reads, so that the thread's own cp.async wait is all the widening
 * needs (no barrier). Planes as module.h: N at w, H at G n 64, S after H, D
 * after S (G = k / 128). P: the BN x 4 nibble units (16 bytes each, unit
 * idx = 4 row + u at 16 idx: the thread copies idx = tid, tid + 256), their
 * high bits (KR_HB bytes a row), then a 16-byte head per row (thread row < BN:
 * Q4_K / Q5_K the super-block head; Q6_K its 8 scales of this half, then the
 * aligned 4-byte word of D holding its d). */
template <int F, int BN>
__device__ __forceinline__ void kr_copy_p(uint32_t P, const unsigned char *__restrict__ w, int n, int k, int g, int j0,
                                          int rows)
{
    constexpr int HB = KR_HB(F), UH = HB / 4; /* high-bit bytes per unit */
    const int tid = threadIdx.x;
    const long long G = k / 128, rec0 = (long long)g * n + j0, hs0 = (long long)(g >> 1) * n + j0;
    const unsigned char *nib = w + rec0 * 64;
    const unsigned char *hi = w + G * n * 64 + rec0 * HB;
    const unsigned char *S = w + G * n * (64 + HB);
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int idx = tid + e * MMQ_THREADS; /* unit idx % 4 of row idx / 4 */
        if (idx < 4 * BN) {
            const bool ok = (idx >> 2) < rows;
            cp_async_n<16>(P + idx * 16, ok ? nib + idx * 16 : w, ok ? 16 : 0);
            if (UH == 4) cp_async_n<4>(P + BN * 64 + idx * 4, ok ? hi + idx * 4 : w, ok ? 4 : 0);
            if (UH == 8) cp_async_n<8>(P + BN * 64 + idx * 8, ok ? hi + idx * 8 : w, ok ? 8 : 0);
        }
    }
    if (tid < BN) {
        const bool ok = tid < rows;
        const uint32_t ph = P + BN * (64 + HB) + tid * 16;
        const unsigned char *h = S + (hs0 + tid) * 16;
        if (F == KR_Q6_K) {
            cp_async_n<8>(ph, ok ? h + 8 * (g & 1) : w, ok ? 8 : 0);
            /* d of entry e = hs0 + tid: the 4-byte word at entry e & ~1 (both
             * halves inside the plane unless e is its even last entry) */
            const long long ent = hs0 + tid, total = (long long)(k / 256) * n;
            const unsigned char *D = S + total * 16;
            if (ok && (ent | 1) >= total) {
                /* the plane's even last entry: its word would end 2 bytes past the operand, so the
                 * d alone, by a plain load (the thread's own widening reads it after its own wait) */
                const unsigned d = *reinterpret_cast<const unsigned short *>(D + ent * 2);
                asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ph + 8), "r"(d) : "memory");
            } else {
                cp_async_n<4>(ph + 8, ok ? D + (ent & ~1LL) * 2 : w, ok ? 4 : 0);
            }
        } else {
            cp_async_n<16>(ph, ok ? h : w, ok ? 16 : 0);
        }
    }
}


/* The thread's own packed bytes of step g (in P, landed) widened into weight
 * slot W: int8 codes into the 144-byte rows, f32 s[0..3] at the row's head and
 * s[4..7] in its 16-byte side row, formed as memra_kr_record forms them. */
template <int F, int BN, bool TC = false, bool B6 = false>
__device__ __forceinline__ void kr_widen(const unsigned char *P, unsigned char *W, int g, int n, int k, int j0)
{
    constexpr int HB = KR_HB(F);
    const int tid = threadIdx.x;
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int idx = tid + e * MMQ_THREADS;
        if (idx < 4 * BN) {
            const uint4 q = *reinterpret_cast<const uint4 *>(P + idx * 16);
            uint2 hi = make_uint2(0, 0);
            if (F == KR_Q5_K) hi.x = *reinterpret_cast<const uint32_t *>(P + BN * 64 + idx * 4);
            if (F == KR_Q6_K) hi = *reinterpret_cast<const uint2 *>(P + BN * 64 + idx * 8);
            uint4 lo4, hi4;
            lo4.x = kr_word<F, 0>(q, hi);
            lo4.y = kr_word<F, 1>(q, hi);
            lo4.z = kr_word<F, 2>(q, hi);
            lo4.w = kr_word<F, 3>(q, hi);
            hi4.x = kr_word<F, 4>(q, hi);
            hi4.y = kr_word<F, 5>(q, hi);
            hi4.z = kr_word<F, 6>(q, hi);
            hi4.w = kr_word<F, 7>(q, hi);
            uint4 *d = reinterpret_cast<uint4 *>(W + (idx >> 2) * MMQ_ROW + 16 + 32 * (idx & 3));
            d[0] = lo4;
            d[1] = hi4;
        }
    }
    if (tid < BN) {
        const unsigned char *ph = P + BN * (64 + HB) + tid * 16;
        float4 s0, s1;
        if (F == KR_Q6_K) {
            /* s[b] = d sc[8h + 2b], s[4 + b] = d sc[8h + 2b + 1] */
            float d;
            uint2 sc;
            if (B6) { /* the bulk tiles: the whole 16-byte S entry, and d from the D window after P */
                sc = *reinterpret_cast<const uint2 *>(ph + 8 * (g & 1));
                const long long ent0 = (long long)(g >> 1) * n + j0;
                d = __half2float(*reinterpret_cast<const __half *>(P + BN * (80 + HB) + 2 * ((int)(ent0 & 7) + tid)));
            } else {
                sc = *reinterpret_cast<const uint2 *>(ph);
                const uint32_t dw = *reinterpret_cast<const uint32_t *>(ph + 8);
                const long long ent = (long long)(g >> 1) * n + j0 + tid;
                d = __half2float(__ushort_as_half((unsigned short)((ent & 1) ? dw >> 16 : dw & 0xFFFFu)));
            }
            const uint32_t ev = __byte_perm(sc.x, sc.y, 0x6420), od = __byte_perm(sc.x, sc.y, 0x7531);
            s0 = make_float4(d * kr_s8f(ev, 0), d * kr_s8f(ev, 1), d * kr_s8f(ev, 2), d * kr_s8f(ev, 3));
            s1 = make_float4(d * kr_s8f(od, 0), d * kr_s8f(od, 1), d * kr_s8f(od, 2), d * kr_s8f(od, 3));
        } else {
            /* d | dmin, then the 6-bit scales and mins of sub-blocks 4h..4h+3 (base/quant.c's packing:
             * h = 0: bytes 0..3 / 4..7, low 6 bits; h = 1: the nibbles of bytes 8..11, bits 6..7 of 0..7) */
            const uint4 hd = *reinterpret_cast<const uint4 *>(ph);
            const float d = __half2float(__ushort_as_half((unsigned short)(hd.x & 0xFFFFu)));
            const float dmin = __half2float(__ushort_as_half((unsigned short)(hd.x >> 16)));
            const bool h1 = (g & 1) != 0;
            const uint32_t vs = h1 ? (hd.w & 0x0F0F0F0Fu) | ((hd.y >> 2) & 0x30303030u) : hd.y & 0x3F3F3F3Fu;
            const uint32_t vm = h1 ? ((hd.w >> 4) & 0x0F0F0F0Fu) | ((hd.z >> 2) & 0x30303030u) : hd.z & 0x3F3F3F3Fu;
            s0 = make_float4(d * kr_u8f(vs, 0), d * kr_u8f(vs, 1), d * kr_u8f(vs, 2), d * kr_u8f(vs, 3));
            if (TC) /* the tensor-core min term (mmq_step TC): the 6-bit mins as bytes, then dmin */
                s1 = make_float4(__uint_as_float(vm), dmin, 0.0f, 0.0f);
            else
                s1 = make_float4(dmin * kr_u8f(vm, 0), dmin * kr_u8f(vm, 1), dmin * kr_u8f(vm, 2), dmin * kr_u8f(vm, 3));
        }
        *reinterpret_cast<float4 *>(W + tid * MMQ_ROW) = s0;
        *reinterpret_cast<float4 *>(W + KR_W_ROWS(BN / 32) + tid * 16) = s1;
    }
}

/* gemm_kr's k loop, shared by gemm_kr_body and experts_kr_body (R3_KLOOP's reasons for a
 * macro): the packed weight of step g0 + kt + 1 copied to P during step kt's MMAs and widened
 * into the other weight slot after them; the activation in R3_STAGES stages. COPY_A(slot, g)
 * copies step g's activation into A slot `slot`, STEP(ao, wo) runs the MMAs and folds on the A
 * slot at ao and the weight slot at wo; w, n, k, j0, brows, P and kr_tc (the widening for mmq_step's
 * TC fold) from the caller's scope. */
#define KR_KLOOP(MT, NT, F, g0, nk, SMEM, COPY_A, STEP)                                                     \
    do {                                                                                                    \
        if ((nk) > 0) {                                                                                     \
            COPY_A(0, (g0));                                                                                \
            kr_copy_p<F, BN>(smem_u32(P), w, n, k, (g0), j0, brows);                                        \
        }                                                                                                   \
        cp_async_commit();                                                                                  \
        if ((nk) > 1) COPY_A(1, (g0) + 1);                                                                  \
        cp_async_commit();                                                                                  \
        if ((nk) > 0) {                                                                                     \
            cp_async_wait<1>();                                                                             \
            kr_widen<F, BN, kr_tc>(P, (SMEM), (g0), n, k, j0); /* step 0's weights into slot 0 */                  \
        }                                                                                                   \
        int cur_ = 0, nxt_ = R3_STAGES - 1;                                                                 \
        for (int kt_ = 0; kt_ < (nk); kt_++) {                                                              \
            cp_async_wait<1>();                                                                             \
            /* step kt's activations landed for every thread and its weights are                           \
             * widened; every warp is past step kt-1 (its slots are free) */                               \
            __syncthreads();                                                                                \
            const bool more_ = kt_ + 1 < (nk);                                                              \
            if (more_) kr_copy_p<F, BN>(smem_u32(P), w, n, k, (g0) + kt_ + 1, j0, brows); /* during the MMAs */ \
            cp_async_commit();                                                                              \
            if (kt_ + R3_STAGES - 1 < (nk)) COPY_A(nxt_, (g0) + kt_ + R3_STAGES - 1);                       \
            cp_async_commit();                                                                              \
            STEP(KR_A_OFF(NT) + cur_ * R3_A_BYTES(MT), (kt_ & 1) * KR_W_SLOT(NT));                          \
            if (more_) {                                                                                    \
                cp_async_wait<1>(); /* this thread's P(kt+1) copies landed (A(kt+2) may still fly) */       \
                kr_widen<F, BN, kr_tc>(P, (SMEM) + ((kt_ + 1) & 1) * KR_W_SLOT(NT), (g0) + kt_ + 1, n, k, j0); \
            }                                                                                               \
            cur_ = cur_ == R3_STAGES - 1 ? 0 : cur_ + 1;                                                    \
            nxt_ = nxt_ == R3_STAGES - 1 ? 0 : nxt_ + 1;                                                    \
        }                                                                                                   \
    } while (0)

template <int MT, int NT, int F, bool TC = false, bool XS = false>
__device__ __forceinline__ void gemm_kr_body(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq,
                                             float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                                             float *__restrict__ part)
{
    extern __shared__ __align__(16) unsigned char kr_smem[];
    pdl_wait(); /* the q8_1 records (and y's earlier readers) are complete */
    constexpr int BN = 32 * NT;
    const mmq_tile t = mmq_tile_of<MT, NT>(m, n, k);
    const int lane = t.lane, wm = t.wm, wn = t.wn, i0 = t.i0, j0 = t.j0, g0 = t.g0, nk = t.nk;
    const int arows = t.arows, brows = t.brows;

    float acc[MT][NT][4];
    mmq_zero<MT, NT>(acc);

    /* per-thread offsets: in an activation slot (a_off, ax_off), in a weight slot (the rest) */
    const int wrow = wn * 8 * NT + (lane & 3) * 2; /* the thread's first weight row of the fold */
    MMQ_SLOT_OFFSETS(0, wrow, wm * 16 * MT); /* the weight slots apart from the tokens' */
    const int sd_off = KR_W_ROWS(NT) + wrow * 16;
    const int sm_off = KR_W_ROWS(NT) + (wn * 8 * NT + (lane >> 2)) * 16; /* TC: the B row's side row */
    const int at_off = KR_T_OFF(F, MT, NT) + (wm * 16 * MT + (lane >> 2)) * 16; /* XS: the token row's t */
    const uint32_t base = smem_u32(kr_smem);
    unsigned char *const A0 = kr_smem + KR_A_OFF(NT), *const P = kr_smem + KR_P_OFF(MT, NT);
    constexpr bool kr_tc = TC;
    /* XS: the records' sum plane (memra_q8_1_plane: after the R m records, R = k padded to 512 over 128) */
    const unsigned char *const xt = xq + (long long)((k + 511) / 512 * 4) * m * MMQ_ROW;

    /* Groups, in commit order: [A(0) P(0)] [A(1)], then per step kt [P(kt+1)] [A(kt+2)] (empty where
     * there is no such step). The widening of step s waits for its own P(s) copies with
     * cp_async_wait<1> (only the A copy committed after it may still be in flight). */
#define KR_COPY_A(slot, g)                                                                                  \
    do {                                                                                                    \
        r3_copy_run<32 * MT>(A0 + (slot) * R3_A_BYTES(MT), xq + ((long long)(g) * m + i0) * MMQ_ROW, arows); \
        if (XS)                                                                                             \
            kr_copy_t<32 * MT>(kr_smem + KR_T_OFF(F, MT, NT) + (slot) * 32 * MT * 16,                      \
                               xt + ((long long)(g) * m + i0) * 16, arows);                                 \
    } while (0)
    /* the sum-plane slot of A slot (ao - KR_A_OFF) / R3_A_BYTES */
#define KR_AT(ao) (kr_smem + at_off + ((ao) - KR_A_OFF(NT)) / R3_A_BYTES(MT) * (32 * MT * 16))
#define KR_STEP(ao, wo)                                                                                     \
    mmq_step<MT, NT, KR_FOLD(F), false, TC, XS>(acc, base + (ao) + a_off, base + (wo) + b_off,             \
                                                 reinterpret_cast<const float *>(kr_smem + (ao) + ax_off),  \
                                                 reinterpret_cast<const float *>(kr_smem + (wo) + bw_off),  \
                                                 reinterpret_cast<const float *>(kr_smem + (wo) + sd_off),  \
                                                 MT, kr_smem + (wo) + sm_off,                               \
                                                 reinterpret_cast<const float *>(KR_AT(ao)))
    KR_KLOOP(MT, NT, F, g0, nk, kr_smem, KR_COPY_A, KR_STEP);
#undef KR_STEP
#undef KR_AT
#undef KR_COPY_A
    mmq_tile_store<MT, NT>(t, acc, y, part, ldy, alpha, m, n);
}

/* w: the K-packed weight (16-byte aligned), xq: q8_1 records, y / part / grid
 * as gemm_q8_0r's entries; dynamic shared memory KR_SMEM_BYTES(MT, NT). */
#define KR_ENTRY(NAME, MT, NT, F, TC, MINB, XS)                                                                        \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, MINB)                                                  \
        NAME(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq, float *__restrict__ y, int m, \
             int n, int k, long long ldy, float alpha, float *__restrict__ part)                                      \
    {                                                                                                                 \
        gemm_kr_body<MT, NT, F, TC, XS>(w, xq, y, m, n, k, ldy, alpha, part);                                         \
    }
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4, 4, 4, KR_Q4_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2, 2, 4, KR_Q4_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4n3, 4, 3, KR_Q4_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2n3, 2, 3, KR_Q4_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4, 4, 4, KR_Q5_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2, 2, 4, KR_Q5_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4n3, 4, 3, KR_Q5_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2n3, 2, 3, KR_Q5_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt4, 4, 4, KR_Q6_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt2, 2, 4, KR_Q6_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt4n3, 4, 3, KR_Q6_K, false, 2, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt2n3, 2, 3, KR_Q6_K, false, 2, false)
/* MEMRA_MMQ_KR_TC: Q4_K and Q5_K (both by default since run d3) with the min term on TF32 MMAs (mmq_step TC) */
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4t, 4, 4, KR_Q4_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2t, 2, 4, KR_Q4_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4n3t, 4, 3, KR_Q4_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2n3t, 2, 3, KR_Q4_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4t, 4, 4, KR_Q5_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2t, 2, 4, KR_Q5_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4n3t, 4, 3, KR_Q5_K, true, 2, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2n3t, 2, 3, KR_Q5_K, true, 2, false)
/* MEMRA_MMQ_ONE (Q6_K by default, =1 every format; run c1: only Q6_K gains): Q4_K's TC fold and
 * the per-32 folds of Q5_K (its default before run d3: with MEMRA_MMQ_KR_TC=q4_k or 0) and Q6_K at
 * one CTA per SM, on the MMA sums:
 * the two-CTA bound's 128 registers serialise the n8 loop's MMAs on one register quad with a NOP
 * before each fold (Q4_K TC: 733 instructions a step, 28 bytes spilled); one CTA: 184 registers,
 * 658 instructions, no NOP, no spill (bench/RESULTS.md, sixteenth session) */
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4to, 4, 4, KR_Q4_K, true, 1, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2to, 2, 4, KR_Q4_K, true, 1, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4n3to, 4, 3, KR_Q4_K, true, 1, false)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2n3to, 2, 3, KR_Q4_K, true, 1, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4o, 4, 4, KR_Q5_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2o, 2, 4, KR_Q5_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4n3o, 4, 3, KR_Q5_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2n3o, 2, 3, KR_Q5_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt4o, 4, 4, KR_Q6_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt2o, 2, 4, KR_Q6_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt4n3o, 4, 3, KR_Q6_K, false, 1, false)
KR_ENTRY(memra_k_gemm_kr_q6_k_mt2n3o, 2, 3, KR_Q6_K, false, 1, false)
/* MEMRA_MMQ_KR_SUMS (the default): each format's default two-CTA tiles (Q4_K TC, Q5_K per-32) with
 * the min term's t read from the records' sum plane, not summed by an all-ones MMA (mmq_step XS) */
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4tx, 4, 4, KR_Q4_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2tx, 2, 4, KR_Q4_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt4n3tx, 4, 3, KR_Q4_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q4_k_mt2n3tx, 2, 3, KR_Q4_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4x, 4, 4, KR_Q5_K, false, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2x, 2, 4, KR_Q5_K, false, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4n3x, 4, 3, KR_Q5_K, false, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2n3x, 2, 3, KR_Q5_K, false, 2, true)
/* and Q5_K on the TF32 fold (its default since run d3, MEMRA_MMQ_KR_TC) on the sum plane */
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4tx, 4, 4, KR_Q5_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2tx, 2, 4, KR_Q5_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt4n3tx, 4, 3, KR_Q5_K, true, 2, true)
KR_ENTRY(memra_k_gemm_kr_q5_k_mt2n3tx, 2, 3, KR_Q5_K, true, 2, true)
#undef KR_ENTRY

/* Q6_K's bulk tiles: the D plane's f16 d of the tile's rows (entries e0 .. e0 + rows - 1, e0 =
 * (g / 2) n + j0) go to the window at DW (shared) from entry e0 & ~7, the 16-byte boundary at or
 * below: entry e0 + r lands at DW + 2 ((e0 & 7) + r). The bulk copy takes whole 16-byte units and
 * may not pass the plane's end, so the units up to the last whole one of the plane are copied
 * (returned: their bytes, for the mbarrier's count) and the tile's entries past it (only in the
 * plane's last unit, when the entry count is not a multiple of 8) are stored by this thread from
 * plain loads, before its arrival on the mbarrier publishes them. Thread 0 only. */
template <int NT>
__device__ __forceinline__ unsigned krb_d_window(uint32_t DW, const unsigned char *__restrict__ w, int n, int k, int g,
                                                 int j0, int rows)
{
    const long long G = k / 128, total = (long long)(k / 256) * n;
    const unsigned char *const D = w + G * n * 96 + total * 16; /* Q6_K: 64 + 32 bytes a record, then S */
    const long long e0 = (long long)(g >> 1) * n + j0, a0 = e0 & ~7LL, e1 = e0 + rows;
    const long long lim = total & ~7LL; /* entries below it lie in whole 16-byte units of the plane */
    const long long b1 = min((e1 + 7) & ~7LL, lim);
    if (max(a0, lim) < e1) {
#pragma unroll 1
        for (long long e = max(a0, lim); e < e1; e++) { /* the plane's last partial unit */
            const unsigned short v = *reinterpret_cast<const unsigned short *>(D + e * 2);
            asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(DW + (uint32_t)(e - a0) * 2), "h"(v) : "memory");
        }
        /* these generic-proxy stores before any later bulk copy (async proxy) into the window */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    return b1 > a0 ? (unsigned)(b1 - a0) * 2 : 0u;
}

/* gemm_krb_body's setup and k loop, shared with experts_kr_body's bulk tiles (R3B_KLOOP's reasons
 * for a macro). KRB_SETUP zeroes the tile's BYTES of shared memory (rows past a run's are never
 * copied: they stay the zeros, as the cp.async tiles' zero fill) and initialises the R3_STAGES + 1
 * mbarriers at BAR (the A slots', then P's). KRB_KLOOP: thread 0 issues step g's activation runs
 * SRC_A(g) (ABYTES) and SRC_T(g) (TBYTES, the sum-plane entries) on the slot's mbarrier and the
 * packed weight's runs (nibbles, high bits, heads of the tile's brows rows) on P's; every thread
 * waits on them and widens; STEP(ao, wo, ts) runs the MMAs and folds on the A slot at ao, the
 * weight slot at wo and the sum-plane slot at ts. w, n, k, j0, brows, P from the caller's scope. */
#define KRB_SETUP(SMEM, BYTES, BAR) MMQ_BULK_SETUP(SMEM, BYTES, BAR, R3_STAGES + 1)
#define KRB_KLOOP(MT, NT, F, g0, nk, SMEM, BASE, BAR, SRC_A, SRC_T, ABYTES, TBYTES, STEP)                    \
    do {                                                                                                    \
        constexpr int HB_ = KR_HB(F);                                                                       \
        const uint32_t pbar_ = (BAR) + 8 * R3_STAGES;                                                       \
        const long long G_ = k / 128;                                                                       \
        const unsigned pbytes_ = (unsigned)brows * 64, hbytes_ = (unsigned)brows * HB_;                     \
        const unsigned sbytes_ = (unsigned)brows * 16;                                                      \
        /* (a forced split may leave a slice no step: it then issues nothing, so that no copy is in        \
         * flight when the CTA exits) */                                                                    \
        if (threadIdx.x == 0 && (nk) > 0) {                                                                 \
            KRB_ISSUE_A(MT, NT, F, BASE, BAR, 0, (g0), SRC_A, SRC_T, ABYTES, TBYTES);                       \
            KRB_ISSUE_P(MT, NT, HB_, BASE, pbar_, (g0));                                                    \
            if ((nk) > 1) KRB_ISSUE_A(MT, NT, F, BASE, BAR, 1, (g0) + 1, SRC_A, SRC_T, ABYTES, TBYTES);     \
        }                                                                                                   \
        if ((nk) > 0) {                                                                                     \
            memra_mb_wait(pbar_, 0u);                                                                       \
            kr_widen<F, BN, F != KR_Q6_K, F == KR_Q6_K>(P, (SMEM), (g0), n, k, j0); /* step 0 into slot 0 */ \
        }                                                                                                   \
        int cur_ = 0, nxt_ = R3_STAGES - 1;                                                                 \
        for (int kt_ = 0; kt_ < (nk); kt_++) {                                                              \
            memra_mb_wait((BAR) + 8 * cur_, (unsigned)(kt_ / R3_STAGES) & 1u); /* step kt's runs landed */  \
            /* step kt's weights widened by every thread, P read by all, every warp past step kt - 1 */    \
            __syncthreads();                                                                                \
            const bool more_ = kt_ + 1 < (nk);                                                              \
            if (threadIdx.x == 0) {                                                                         \
                if (more_) KRB_ISSUE_P(MT, NT, HB_, BASE, pbar_, (g0) + kt_ + 1);                           \
                if (kt_ + R3_STAGES - 1 < (nk))                                                             \
                    KRB_ISSUE_A(MT, NT, F, BASE, BAR, nxt_, (g0) + kt_ + R3_STAGES - 1, SRC_A, SRC_T, ABYTES, TBYTES); \
            }                                                                                               \
            STEP(KR_A_OFF(NT) + cur_ * R3_A_BYTES(MT), (kt_ & 1) * KR_W_SLOT(NT), cur_ * 32 * MT * 16);     \
            if (more_) {                                                                                    \
                memra_mb_wait(pbar_, (unsigned)(kt_ + 1) & 1u); /* P(kt + 1) landed */                      \
                kr_widen<F, BN, F != KR_Q6_K, F == KR_Q6_K>(P, (SMEM) + ((kt_ + 1) & 1) * KR_W_SLOT(NT),          \
                                                          (g0) + kt_ + 1, n, k, j0);                        \
            }                                                                                               \
            cur_ = cur_ == R3_STAGES - 1 ? 0 : cur_ + 1;                                                    \
            nxt_ = nxt_ == R3_STAGES - 1 ? 0 : nxt_ + 1;                                                    \
        }                                                                                                   \
    } while (0)
#define KRB_ISSUE_A(MT, NT, F, BASE, BAR, slot, g, SRC_A, SRC_T, ABYTES, TBYTES)                            \
    do {                                                                                                    \
        const unsigned mb_ = (BAR) + 8 * (slot);                                                            \
        memra_mb_arrive_tx(mb_, (ABYTES) + (TBYTES));                                                       \
        memra_bulk_g2s((BASE) + KR_A_OFF(NT) + (slot) * R3_A_BYTES(MT), SRC_A(g), (ABYTES), mb_);           \
        if ((TBYTES) != 0) /* the sum-plane entries (Q6_K reads none) */                                    \
            memra_bulk_g2s((BASE) + KR_T_OFF(F, MT, NT) + (slot) * 32 * MT * 16, SRC_T(g), (TBYTES), mb_);  \
    } while (0)
#define KRB_ISSUE_P(MT, NT, HB, BASE, PBAR, g)                                                              \
    do {                                                                                                    \
        const long long rec_ = (long long)(g) * n + j0;                                                     \
        unsigned dbytes_ = 0;                                                                               \
        if (HB == 32) dbytes_ = krb_d_window<NT>((BASE) + KR_P_OFF(MT, NT) + BN * (80 + HB), w, n, k, (g), j0, brows); \
        memra_mb_arrive_tx((PBAR), pbytes_ + hbytes_ + sbytes_ + dbytes_);                                  \
        memra_bulk_g2s((BASE) + KR_P_OFF(MT, NT), w + rec_ * 64, pbytes_, (PBAR));                          \
        if (HB != 0) memra_bulk_g2s((BASE) + KR_P_OFF(MT, NT) + BN * 64, w + G_ * n * 64 + rec_ * HB, hbytes_, (PBAR)); \
        memra_bulk_g2s((BASE) + KR_P_OFF(MT, NT) + BN * (64 + HB),                                          \
                       w + G_ * n * (64 + HB) + ((long long)((g) >> 1) * n + j0) * 16, sbytes_, (PBAR));    \
        if (dbytes_ != 0)                                                                                   \
            memra_bulk_g2s((BASE) + KR_P_OFF(MT, NT) + BN * (80 + HB),                                      \
                           w + G_ * n * (64 + HB) + (long long)(k / 256) * n * 16 +                         \
                               ((((long long)((g) >> 1) * n + j0) & ~7LL) * 2),                             \
                           dbytes_, (PBAR));                                                                \
    } while (0)

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
/* MEMRA_MMQ_KR_BULK (the default since runs e1 / e2; cc 9.x: the launcher keeps them off sm_120,
 * whose 99 KB Q5_K's 128 x 96 tile fills without the mbarriers): the sum-plane tiles of Q4_K and Q5_K on the TF32 fold (the _tx
 * tiles) with every stage brought by the bulk copy engine, as gemm_q8_0r's _b tiles: per step one
 * thread issues the activation's two runs (the 32 MT records, their sum-plane entries) on the
 * slot's mbarrier and the packed weight's runs (nibbles, Q5_K's high bits, the super-block
 * heads: each a contiguous run of the tile's rows in its plane, laid out in P exactly as
 * kr_copy_p lays them) on P's own mbarrier, in place of every thread's cp.async chunks and their
 * address arithmetic (about 14 LDGSTS and 80 integer instructions a thread and step in the _tx
 * tile's SASS). The widening, MMAs and fold are the _tx tile's: outputs bit for bit its. Rows
 * past the tile's stay the zeros written once at the start (the copies never touch them). */
template <int MT, int NT, int F>
__device__ __forceinline__ void gemm_krb_body(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq,
                                              float *__restrict__ y, int m, int n, int k, long long ldy, float alpha,
                                              float *__restrict__ part)
{
    constexpr bool Q6 = F == KR_Q6_K; /* fold "q6", no sum plane, the D window after P (KR6B_SMEM_BYTES) */
    extern __shared__ __align__(16) unsigned char kr_smem[];
    __shared__ __align__(8) unsigned long long krb_bar[R3_STAGES + 1]; /* the A slots', then P's */
    constexpr int BN = 32 * NT;
    const mmq_tile t = mmq_tile_of<MT, NT>(m, n, k);
    const int lane = t.lane, wm = t.wm, wn = t.wn, i0 = t.i0, j0 = t.j0, g0 = t.g0, nk = t.nk;
    const int arows = t.arows, brows = t.brows;
    const uint32_t bar = smem_u32(krb_bar);
    KRB_SETUP(kr_smem, Q6 ? KR6B_SMEM_BYTES(MT, NT) : KR_SMEM_BYTES(F, MT, NT), bar);
    pdl_wait(); /* only shared memory before it: the q8_1 records (and y's earlier readers) are complete */

    float acc[MT][NT][4];
    mmq_zero<MT, NT>(acc);
    const int wrow = wn * 8 * NT + (lane & 3) * 2;
    MMQ_SLOT_OFFSETS(0, wrow, wm * 16 * MT); /* the weight slots apart from the tokens' */
    const int sd_off = KR_W_ROWS(NT) + wrow * 16;
    const int sm_off = KR_W_ROWS(NT) + (wn * 8 * NT + (lane >> 2)) * 16;
    const int at_off = KR_T_OFF(F, MT, NT) + (wm * 16 * MT + (lane >> 2)) * 16;
    const uint32_t base = smem_u32(kr_smem);
    unsigned char *const P = kr_smem + KR_P_OFF(MT, NT);
    const unsigned char *const xt = xq + (long long)((k + 511) / 512 * 4) * m * MMQ_ROW;
    const unsigned abytes = (unsigned)arows * MMQ_ROW, tbytes = Q6 ? 0u : (unsigned)arows * 16;
#define KRB_SRC_A(g) (xq + ((long long)(g) * m + i0) * MMQ_ROW)
#define KRB_SRC_T(g) (xt + ((long long)(g) * m + i0) * 16)
#define KRB_STEP(ao, wo, ts)                                                                                \
    mmq_step<MT, NT, KR_FOLD(F), false, !Q6, !Q6>(acc, base + (ao) + a_off, base + (wo) + b_off,                     \
                                              reinterpret_cast<const float *>(kr_smem + (ao) + ax_off),     \
                                              reinterpret_cast<const float *>(kr_smem + (wo) + bw_off),     \
                                              reinterpret_cast<const float *>(kr_smem + (wo) + sd_off), MT, \
                                              kr_smem + (wo) + sm_off,                                      \
                                              reinterpret_cast<const float *>(kr_smem + at_off + (ts)))
    KRB_KLOOP(MT, NT, F, g0, nk, kr_smem, base, bar, KRB_SRC_A, KRB_SRC_T, abytes, tbytes, KRB_STEP);
#undef KRB_STEP
#undef KRB_SRC_T
#undef KRB_SRC_A
    mmq_tile_store<MT, NT>(t, acc, y, part, ldy, alpha, m, n);
}
#define KRB_ENTRY(NAME, MT, NT, F, MINB)                                                                              \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, MINB)                                                  \
        NAME(const unsigned char *__restrict__ w, const unsigned char *__restrict__ xq, float *__restrict__ y, int m, \
             int n, int k, long long ldy, float alpha, float *__restrict__ part)                                      \
    {                                                                                                                 \
        gemm_krb_body<MT, NT, F>(w, xq, y, m, n, k, ldy, alpha, part);                                                \
    }
KRB_ENTRY(memra_k_gemm_kr_q4_k_mt4txb, 4, 4, KR_Q4_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q4_k_mt2txb, 2, 4, KR_Q4_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q4_k_mt4n3txb, 4, 3, KR_Q4_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q4_k_mt2n3txb, 2, 3, KR_Q4_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q5_k_mt4txb, 4, 4, KR_Q5_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q5_k_mt2txb, 2, 4, KR_Q5_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q5_k_mt4n3txb, 4, 3, KR_Q5_K, 2)
KRB_ENTRY(memra_k_gemm_kr_q5_k_mt2n3txb, 2, 3, KR_Q5_K, 2)
/* MEMRA_MMQ_KR6_BULK (default since run f1; cc 9.x): Q6_K's one-CTA tiles (the _o ones, its default before)
 * on the bulk copies: nibbles, top bits and the whole 16-byte S entries as runs, d through the D
 * window (krb_d_window); the widening reads the half's 8 scales at 8 (g % 2) of the entry. Bit for
 * bit the _o tiles' outputs. */
KRB_ENTRY(memra_k_gemm_kr_q6_k_mt4ob, 4, 4, KR_Q6_K, 1)
KRB_ENTRY(memra_k_gemm_kr_q6_k_mt2ob, 2, 4, KR_Q6_K, 1)
KRB_ENTRY(memra_k_gemm_kr_q6_k_mt4n3ob, 4, 3, KR_Q6_K, 1)
KRB_ENTRY(memra_k_gemm_kr_q6_k_mt2n3ob, 2, 3, KR_Q6_K, 1)
#undef KRB_ENTRY
#endif

static_assert(KR_SMEM_BYTES(KR_Q4_K, 4, 4) == 112640 && KR_SMEM_BYTES(KR_Q5_K, 4, 4) == 114688 &&
                  KR_SMEM_BYTES(KR_Q6_K, 4, 4) == 110592 && KR_SMEM_BYTES(KR_Q6_K, 2, 3) == 69120 &&
                  KR_P_OFF(4, 4) + 32 * 4 * (80 + KR_HB(KR_Q6_K)) == KR_SMEM_BYTES(KR_Q6_K, 4, 4) &&
                  KR_T_OFF(KR_Q4_K, 2, 3) + KR_XT_BYTES(KR_Q4_K, 2) == KR_SMEM_BYTES(KR_Q4_K, 2, 3) &&
                  KR_T_OFF(KR_Q5_K, 4, 4) + KR_XT_BYTES(KR_Q5_K, 4) == KR_SMEM_BYTES(KR_Q5_K, 4, 4),
              "mmq.h's KR_SMEM_BYTES is this layout");
/* Issue 26 item 5: every gemm_kr tile but 128 x 128 fits sm_120's 99 KB per
 * block (mmq_ops.c loads a tile only where it fits, and asserts its sm_120
 * list); two CTAs of every tile fit an sm_90 SM (227 KB + 1 KB each). */
static_assert(KR_SMEM_BYTES(KR_Q6_K, 2, 4) <= MMQ_SM120_SMEM && KR_SMEM_BYTES(KR_Q6_K, 4, 3) <= MMQ_SM120_SMEM &&
                  KR_SMEM_BYTES(KR_Q6_K, 2, 3) <= MMQ_SM120_SMEM && KR_SMEM_BYTES(KR_Q5_K, 4, 3) <= MMQ_SM120_SMEM &&
                  KR_SMEM_BYTES(KR_Q5_K, 2, 4) <= MMQ_SM120_SMEM && 2 * (KR_SMEM_BYTES(KR_Q6_K, 4, 4) + 1024) <= 233472 &&
                  2 * (KR_SMEM_BYTES(KR_Q5_K, 4, 4) + 1024) <= 233472,
              "the gemm_kr tiles' shared memory");

/* ---- the accumulator probe --------------------------------------------------------- */

/* Rows r0..r0+127 of a raw byte matrix [rows x k], 128 columns from column
 * 128 kt, into record rows with unit scales (zero past the edges). */
__device__ __forceinline__ void load_bytes(unsigned char *S, const unsigned char *src, int rows, int k, int r0, int kt)
{
    for (int idx = threadIdx.x; idx < MMQ_BM * 9; idx += MMQ_THREADS) {
        const int r = idx / 9, c = idx - r * 9;
        unsigned char *d = S + r * MMQ_ROW + c * 16;
        if (c == 0) {
            float4 one = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
            *reinterpret_cast<float4 *>(d) = one;
            continue;
        }
        const long long col = (long long)kt * 128 + (c - 1) * 16;
        const int ok = r0 + r < rows && col < k;
        cp_async16(d, ok ? src + (long long)(r0 + r) * k + col : src, ok ? 16 : 0);
    }
}

template <int KIND>
__device__ __forceinline__ void probe_body(const unsigned char *w, const unsigned char *x, float *y, int m, int n, int k,
                                           long long ldy, float bias)
{
    extern __shared__ __align__(16) unsigned char probe_smem[];
    unsigned char *As[2] = {probe_smem, probe_smem + MMQ_PROBE_STAGE_BYTES};
    unsigned char *Bs[2] = {probe_smem + MMQ_BM * MMQ_ROW, probe_smem + MMQ_PROBE_STAGE_BYTES + MMQ_BM * MMQ_ROW};
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp & 1, wn = warp >> 1;
    const int i0 = blockIdx.x * MMQ_BM, j0 = blockIdx.y * MMQ_BN;
    const int nk = (k + 127) / 128;
    float acc[4][4][4];
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0.0f;
    load_bytes(As[0], x, m, k, i0, 0);
    load_bytes(Bs[0], w, n, k, j0, 0);
    cp_async_commit();
    for (int kt = 0; kt < nk; kt++) {
        const int s = kt & 1;
        if (kt + 1 < nk) {
            load_bytes(As[s ^ 1], x, m, k, i0, kt + 1);
            load_bytes(Bs[s ^ 1], w, n, k, j0, kt + 1);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        tile_step<KIND>(acc, As[s], Bs[s], wm, wn, lane, bias);
        __syncthreads();
    }
    tile_store(acc, y, ldy, m, n, i0, j0, wm, wn, lane, 1.0f);
}

extern "C" __global__ void __launch_bounds__(MMQ_THREADS, 2)
memra_k_probe_s32(const unsigned char *__restrict__ w, const unsigned char *__restrict__ x, float *__restrict__ y,
                  int m, int n, int k, long long ldy, float bias)
{
    probe_body<MMQ_KIND_S8>(w, x, y, m, n, k, ldy, bias);
}

extern "C" __global__ void __launch_bounds__(MMQ_THREADS, 2)
memra_k_probe_f32(const unsigned char *__restrict__ w, const unsigned char *__restrict__ x, float *__restrict__ y,
                  int m, int n, int k, long long ldy, float bias)
{
    probe_body<MMQ_KIND_FP8>(w, x, y, m, n, k, ldy, bias);
}

extern "C" __global__ void __launch_bounds__(MMQ_THREADS, 2)
memra_k_probe_mx(const unsigned char *__restrict__ w, const unsigned char *__restrict__ x, float *__restrict__ y,
                 int m, int n, int k, long long ldy, float bias)
{
    probe_body<MMQ_KIND_MX>(w, x, y, m, n, k, ldy, bias);
}

/* ---- gemm_experts on the records tile (issue 30) ----------------------------------------
 *
 * memra_k_experts_route  one block of 1024 threads, E <= MMQ_XE_MAX experts:
 *   the rows of each expert counted from ids (ids outside [0, E) skipped) in
 *   shared memory, their exclusive scan (offsets[0 .. E]), the permutation
 *   perm[offsets[e] ..] = the rows of expert e (in no fixed order: a row's
 *   output depends on that row and its expert alone, so the order changes no
 *   bit), and the tile table, tile t = (tiles[2t] = expert, tiles[2t + 1] =
 *   its first sorted row) for tiles of `bm` rows (the grouped kernel's token
 *   height), experts in order, an expert of c rows taking ceil(c / bm) tiles;
 *   their count in *ntiles. With bm2 > 0 the table takes only the floor(c / bm)
 *   full tiles and a second one (tiles2, *ntiles2) the remainder c mod bm in
 *   tiles of bm2 rows, run by the small grouped kernel: an expert of 129 rows
 *   then costs 128 + 32 rows of work, not 256 (Mixtral-like routing, ~128 rows
 *   an expert, wasted a third of a 128-row kernel's work on half-empty tiles:
 *   run p, 0.62-0.67x the dense rate). Everything stays on the device: no count is read
 *   on the host. It triggers its dependent (the grouped kernel) at once, whose
 *   CTAs then wait in griddepcontrol.wait for the table.
 *
 * memra_k_experts_q8_0r_mt1 / _mt2 / _mt4, memra_k_experts_kr_<format>_mt1 / _mt2 / _mt4
 *   the grouped GEMMs: gemm_q8_0r's and gemm_kr's tile (32 MT tokens x 128
 *   weight rows, 2 x 4 warps, R3_STAGES cp.async stages, mmq_step:
 *   the same MMAs and the same fold in the same k order, so each output is
 *   bit for bit the dense lane's unsplit result on the expert's rows) where
 *   the CTA's rows come from the tile table instead of blockIdx.x: grid
 *   (ceil(n / 128), the worst-case tile count ceil(m / bm) + E), CTA
 *   (x, t) with t >= *ntiles exits at once; else tile t = (e, s0): its rows
 *   are the gathered rows perm[s0 .. s0 + 32 MT) of expert e (those at or past
 *   offsets[e + 1] zero-filled: scale 0, exact zeros, never stored), put in
 *   shared memory once; each k step copies their q8_1 records (g, perm[s])
 *   by index (record g m + row of the all-rows quantisation, nine 16-byte
 *   cp.async each) and the weight's records (g, j0 ..) of expert e from
 *   wtab[e] exactly as the dense kernels do; the outputs are scattered to
 *   y[perm[s]]. A warp whose m16 tiles lie past the tile's rows skips their
 *   MMAs and folds (mmq_step with LIVE: the bound mt_live; the dense
 *   kernels compile without it, their SASS unchanged), so a short remainder
 *   tile costs its copies rather than a full tile's MMAs.
 *   No split-k (each output written once, by one CTA). MT is the
 *   launcher's choice from the mean rows per expert (mmq_ops.c). Shared
 *   memory: the dense tiles' (R3_SMEM_BYTES(MT, 4), KR_SMEM_BYTES(F, MT, 4))
 *   + 4 * 32 MT bytes of row indices. */
extern "C" __global__ void __launch_bounds__(1024)
memra_k_experts_route(const int *__restrict__ ids, int m, int E, int bm, int *__restrict__ offsets,
                      int *__restrict__ perm, int *__restrict__ tiles, int *__restrict__ ntiles, int bm2,
                      int *__restrict__ tiles2, int *__restrict__ ntiles2)
{
    __shared__ int cnt[MMQ_XE_MAX];
    __shared__ int fill[MMQ_XE_MAX];
    pdl_trigger();
    /* a remainder of up to bm2 rows to one bm2-row tile, a larger one keeps a full tile
     * (common/route.cuh): run q1 put every remainder in 32-row tiles, and an expert of
     * 120 rows then ran four of them in a launch after the full tiles' */
    memra_route_experts(ids, m, E, bm, bm2, bm2, offsets, perm, tiles, ntiles, tiles2, ntiles2, cnt, fill);
    /* zeros in the table's entries past *ntiles up to its worst case ceil(m / bm) + E (the launcher's tiles_max) and
     * in the permutation past the routed rows (ids outside [0, E)) up to m: the quick-start tile (_wgs_q) reads
     * both before its bounds, and no byte it reads is unwritten (the values there are never used). *ntiles and
     * offsets[E] were written before the routing's last barrier. */
    const long long cap = ((long long)m + bm - 1) / bm + E;
    const int t = *ntiles, routed = offsets[E];
    for (long long i = t + (long long)threadIdx.x; i < cap; i += blockDim.x) tiles[2 * i] = 0, tiles[2 * i + 1] = 0;
    for (int r = routed + (int)threadIdx.x; r < m; r += (int)blockDim.x) perm[r] = 0;
}

/* MEMRA_MMQ_XE_SORT=1: the q8_1 records of the routed rows in expert order, xs[g][s] = xq[g][perm[s]]
 * for s < offsets[E] (144-byte records, step-major as the quantiser wrote them: record (g, row) at
 * (g m + row) 144), so that every grouped tile copies its rows as one contiguous run, the dense
 * tile's copy (run u2: the gathered copy's per-chunk index arithmetic held the 128-row grouped
 * tile at 457 us against the dense tile's 399 on the same CTAs). One thread a 16-byte chunk:
 * grid (ceil(9 m / 256), G steps), 256 threads; a plain launch after the routing. */
extern "C" __global__ void __launch_bounds__(256)
memra_k_experts_gather_q8_1(const unsigned char *__restrict__ xq, const int *__restrict__ perm,
                            const int *__restrict__ offsets, int E, int m, unsigned char *__restrict__ xs, int ch,
                            long long plane)
{
    /* ch 9: the records' nine chunks a row; 10: and the row's sum-plane entry (the _sx / _stx
     * tiles read it), at byte `plane` of both xq and xs (memra_q8_1_plane: xs is as large as xq) */
    const long long idx = (long long)blockIdx.x * 256 + threadIdx.x;
    const int s = (int)(idx / ch), c = (int)(idx - (long long)s * ch);
    if (s >= offsets[E]) return; /* past the routed rows (also past m: offsets[E] <= m) */
    const long long gm = (long long)blockIdx.y * m;
    if (c == 9) {
        *reinterpret_cast<uint4 *>(xs + plane + (gm + s) * 16) =
            *reinterpret_cast<const uint4 *>(xq + plane + (gm + perm[s]) * 16);
        return;
    }
    const uint4 v = *reinterpret_cast<const uint4 *>(xq + (gm + perm[s]) * MMQ_ROW + c * 16);
    *reinterpret_cast<uint4 *>(xs + (gm + s) * MMQ_ROW + c * 16) = v;
}

/* A grouped CTA's tile: expert e, its first sorted row s0, the rows that exist
 * (rows <= BM), its first weight row j0 and the weight rows that exist. */
struct xe_tile {
    int e, s0, rows, j0, brows;
};

/* The CTA's tile from the table (call after pdl_wait): false (for the whole
 * CTA) past *ntiles; else rs[i] = perm[s0 + i] for the rows that exist,
 * visible to every thread (NORS: no rs, the caller reads perm itself). */
template <int BM, int BN, bool NORS = false>
__device__ __forceinline__ bool xe_tile_of(xe_tile &t, int *rs, const int *__restrict__ offsets,
                                           const int *__restrict__ perm, const int *__restrict__ tiles,
                                           const int *__restrict__ ntiles, int n, int ti, int nb)
{
    if (ti >= *ntiles) return false;
    t.e = tiles[2 * ti];
    t.s0 = tiles[2 * ti + 1];
    t.rows = min(BM, offsets[t.e + 1] - t.s0);
    t.j0 = nb * BN;
    t.brows = min(BN, n - t.j0);
    if (NORS) return true; /* (every thread read the same table entries: no barrier needed) */
    if ((int)threadIdx.x < BM) rs[threadIdx.x] = (int)threadIdx.x < t.rows ? perm[t.s0 + threadIdx.x] : 0;
    __syncthreads();
    return true;
}

/* The q8_1 records of step g (gm = g m) of the tile's rows rs[0 .. rows) into
 * slot S (shared address), record i at 144 i; rows past `rows` zero-filled. */
template <int SLOTS>
__device__ __forceinline__ void xe_copy_rows(uint32_t S, const unsigned char *__restrict__ xq, long long gm,
                                             const int *rs, int rows)
{
    constexpr int CH = SLOTS * 9;
#pragma unroll
    for (int e = 0; e < (CH + MMQ_THREADS - 1) / MMQ_THREADS; e++) {
        const int idx = (int)threadIdx.x + e * MMQ_THREADS;
        if (CH % MMQ_THREADS == 0 || idx < CH) {
            const int r = idx / 9, c = idx - r * 9;
            const bool ok = r < rows;
            memra_cp16(S + idx * 16, ok ? xq + (gm + rs[r]) * MMQ_ROW + c * 16 : xq, ok ? 16 : 0);
        }
    }
}

/* After the k loop: the warp's 16 MT x 8 NT outputs scattered to y[rs[i]]. ILV (the interleaved
 * tiles): the warp's m16 tile mt is the tile's 2 mt + wm, and a row's y row perm[s0 + i] is read
 * here (no rs). */
template <int MT, int NT, bool ILV = false>
__device__ __forceinline__ void xe_store(const float (&acc)[MT][NT][4], float *__restrict__ y, long long ldy,
                                         float alpha, int n, const xe_tile &t, const int *rs, int wm, int wn, int lane,
                                         float *__restrict__ part, int m, const int *__restrict__ perm = nullptr)
{
    cp_async_wait<0>();
    pdl_trigger();
    /* split-k: slice z's raw sums to part[z][row][j] (memra_k_experts_splitk_sum adds them) */
    const bool split = gridDim.z > 1;
    float *const pz = split ? part + (long long)blockIdx.z * m * n : nullptr;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int i = (ILV ? mt * 32 + wm * 16 : wm * 16 * MT + mt * 16) + (lane >> 2) + 8 * h;
            if (i >= t.rows) continue;
            float *yr;
            if constexpr (ILV) {
                const long long r = perm[t.s0 + i];
                yr = split ? pz + r * n : y + r * ldy;
            } else {
                yr = split ? pz + (long long)rs[i] * n : y + (long long)rs[i] * ldy;
            }
            const float a = split ? 1.0f : alpha;
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    const int j = t.j0 + wn * 8 * NT + nt * 8 + (lane & 3) * 2 + c;
                    if (j < n) yr[j] = split ? acc[mt][nt][2 * h + c] : a * acc[mt][nt][2 * h + c];
                }
        }
}

/* The k steps of a grouped CTA: slice blockIdx.z of gridDim.z (steps G z / S .. G (z + 1) / S - 1,
 * the dense kernels' split), *g0 its first. */
__device__ __forceinline__ int xe_slice(int k, int *g0)
{
    const int G = (k + 127) / 128, S = (int)gridDim.z, z = (int)blockIdx.z;
    *g0 = (int)((long long)G * z / S);
    return (int)((long long)G * (z + 1) / S) - *g0;
}

/* The remainder launch beside the full tiles' last wave (MEMRA_MMQ_XE_OVERLAP=1): the full
 * tiles' grid (XE_OVL_MAIN) lets its programmatic dependent launch as soon as each of its CTAs
 * has its tile (after its griddepcontrol.wait: the routing and, before it, the q8_1 records are
 * complete), not in its epilogue; the remainder grid (XE_OVL_REM), launched then, reads the
 * tables and records without waiting (they were complete before any full-tile CTA passed its
 * wait) and waits for the full tiles' grid at its end, every CTA, so that it completes after it:
 * the launch after the remainders (the next op, the split-k sum) waits for the remainders only.
 * The two grids write different rows of y. XE_OVL_NONE: both wait at their start (the default). */
#define XE_OVL_NONE 0
#define XE_OVL_MAIN 1
#define XE_OVL_REM 2

/* A grouped CTA's start, shared by experts_q8_0r_body and experts_kr_body: its tile (false for
 * the whole CTA past *ntiles), its expert's operand, the warp's place, its k slice and the
 * warp's m16 tiles that hold rows of the tile (the others skip their MMAs and folds: their
 * accumulators stay 0 and are never stored, so a short tile costs its copies). */
struct xe_cta {
    xe_tile t;
    const unsigned char *w;
    int lane, wm, wn, g0, nk, mt_live;
};
template <int MT, int NT, int OVL, bool ILV = false>
__device__ __forceinline__ bool xe_begin(xe_cta &c, int *rs, const unsigned long long *__restrict__ wtab, int n, int k,
                                         const int *__restrict__ offsets, const int *__restrict__ perm,
                                         const int *__restrict__ tiles, const int *__restrict__ ntiles, int ti, int nb)
{
    if (OVL != XE_OVL_REM) pdl_wait(); /* the tile table (and the q8_1 records before it) complete */
    if (!xe_tile_of<32 * MT, 32 * NT, ILV>(c.t, rs, offsets, perm, tiles, ntiles, n, ti, nb)) {
        if (OVL == XE_OVL_REM) pdl_wait(); /* even a CTA with no tile: the grid ends after the full tiles' */
        return false;
    }
    if (OVL == XE_OVL_MAIN) pdl_trigger(); /* the remainder launch may start on the SMs this grid leaves idle */
    c.w = reinterpret_cast<const unsigned char *>(static_cast<uintptr_t>(wtab[c.t.e]));
    c.lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    c.wm = warp & 1, c.wn = warp >> 1;
    c.nk = xe_slice(k, &c.g0);
    /* ILV: the warp's m16 tiles are the tile's wm, wm + 2, ...: those below rows */
    c.mt_live = ILV ? min(MT, max(0, (c.t.rows - c.wm * 16 + 31) / 32)) : min(MT, max(0, (c.t.rows - c.wm * 16 * MT + 15) / 16));
    return true;
}

/* gemm_q8_0r_body with the rows of a tile-table tile (see above). */
template <int MT, int NT, int OVL = XE_OVL_NONE, bool SORTED = false, bool BULK = false, bool ILV = false>
__device__ __forceinline__ void experts_q8_0r_body(const unsigned long long *__restrict__ wtab,
                                                   const unsigned char *__restrict__ xq, int m, int n, int k,
                                                   const int *__restrict__ offsets, const int *__restrict__ perm,
                                                   const int *__restrict__ tiles, const int *__restrict__ ntiles,
                                                   float *__restrict__ y, long long ldy, float alpha,
                                                   float *__restrict__ part, int ti, int nb)
{
    extern __shared__ __align__(16) unsigned char xe_smem[];
    __shared__ int rs[ILV ? 1 : 32 * MT]; /* ILV: the epilogue reads perm itself */
    constexpr int BN = 32 * NT;
    static_assert(!ILV || SORTED, "the interleaved tiles copy their rows as one run");
    xe_cta c;
    if (!xe_begin<MT, NT, OVL, ILV>(c, rs, wtab, n, k, offsets, perm, tiles, ntiles, ti, nb)) return;
    const xe_tile &t = c.t;
    const unsigned char *const wr = c.w;
    const int lane = c.lane, wm = c.wm, wn = c.wn, g0 = c.g0, nk = c.nk, mt_live = c.mt_live;

    float acc[MT][NT][4];
    mmq_zero<MT, NT>(acc);
    MMQ_SLOT_OFFSETS(R3_A_BYTES(MT), wn * 8 * NT + (lane & 3) * 2, ILV ? wm * 16 : wm * 16 * MT);
    const uint32_t base = smem_u32(xe_smem);
#define XE_COPY_STEP(so, g)                                                                                 \
    do {                                                                                                    \
        if (SORTED) /* xq: the records in expert order (memra_k_experts_gather_q8_1), the tile's rows a run */ \
            r3_copy_run<32 * MT>(xe_smem + (so), xq + ((long long)(g) * m + t.s0) * MMQ_ROW, t.rows);       \
        else                                                                                                \
            xe_copy_rows<32 * MT>(base + (so), xq, (long long)(g) * m, rs, t.rows);                         \
        r3_copy_run<BN>(xe_smem + (so) + R3_A_BYTES(MT), wr + ((long long)(g) * n + t.j0) * MMQ_ROW, t.brows); \
    } while (0)
#define XE_STEP(so)                                                                                         \
    if (mt_live == MT)                                                                                      \
        mmq_step<MT, NT, MMQ_FOLD_Q8, false, false, false, 1, ILV>(acc, base + (so) + a_off, base + (so) + b_off, \
                                      reinterpret_cast<const float *>(xe_smem + (so) + ax_off),             \
                                      reinterpret_cast<const float *>(xe_smem + (so) + bw_off));            \
    else if (mt_live > 0)                                                                                   \
        mmq_step<MT, NT, MMQ_FOLD_Q8, true, false, false, 1, ILV>(acc, base + (so) + a_off, base + (so) + b_off, \
                                            reinterpret_cast<const float *>(xe_smem + (so) + ax_off),       \
                                            reinterpret_cast<const float *>(xe_smem + (so) + bw_off), nullptr, mt_live)
    if constexpr (BULK) { /* the sorted tile's two runs by the bulk copy engine (R3B_KLOOP) */
        static_assert(SORTED && OVL == XE_OVL_NONE, "the bulk copies need the tile's rows as one run");
        __shared__ __align__(8) unsigned long long xeb_bar[R3_STAGES];
        const uint32_t bar = smem_u32(xeb_bar);
        R3B_SETUP(xe_smem, R3_SMEM_BYTES(MT, NT), bar);
        const unsigned abytes = (unsigned)t.rows * MMQ_ROW, bbytes = (unsigned)t.brows * MMQ_ROW;
#define XEB_SRC_A(g) (xq + ((long long)(g) * m + t.s0) * MMQ_ROW)
#define XEB_SRC_B(g) (wr + ((long long)(g) * n + t.j0) * MMQ_ROW)
        R3B_KLOOP(MT, NT, g0, nk, base, bar, XEB_SRC_A, XEB_SRC_B, abytes, bbytes, XE_STEP);
#undef XEB_SRC_B
#undef XEB_SRC_A
    } else {
        R3_KLOOP(MT, NT, g0, nk, XE_COPY_STEP, XE_STEP);
    }
#undef XE_STEP
#undef XE_COPY_STEP
    xe_store<MT, NT, ILV>(acc, y, ldy, alpha, n, t, rs, wm, wn, lane, part, m, perm);
    if (OVL == XE_OVL_REM) pdl_wait();
}

/* gemm_kr_body with the rows of a tile-table tile (see above). */
template <int MT, int NT, int F, int OVL = XE_OVL_NONE, bool SORTED = false, bool TC = false, bool XS = false,
          bool BULK = false, bool LOOP2 = false, bool ILV = false>
__device__ __forceinline__ void experts_kr_body(const unsigned long long *__restrict__ wtab,
                                                const unsigned char *__restrict__ xq, int m, int n, int k,
                                                const int *__restrict__ offsets, const int *__restrict__ perm,
                                                const int *__restrict__ tiles, const int *__restrict__ ntiles,
                                                float *__restrict__ y, long long ldy, float alpha,
                                                float *__restrict__ part, int ti, int nb)
{
    extern __shared__ __align__(16) unsigned char xe_smem[];
    __shared__ int rs[ILV ? 1 : 32 * MT]; /* ILV: the epilogue reads perm itself */
    constexpr int BN = 32 * NT;
    static_assert(!ILV || SORTED, "the interleaved tiles copy their rows as one run");
    xe_cta c;
    if (!xe_begin<MT, NT, OVL, ILV>(c, rs, wtab, n, k, offsets, perm, tiles, ntiles, ti, nb)) return;
    const xe_tile &t = c.t;
    const unsigned char *const w = c.w;
    const int lane = c.lane, wm = c.wm, wn = c.wn, mt_live = c.mt_live, j0 = t.j0, brows = t.brows;
    const int g0 = c.g0, nk = c.nk; /* the steps g0 .. g0 + nk - 1 (local kt, absolute g0 + kt) */

    float acc[MT][NT][4];
    mmq_zero<MT, NT>(acc);
    const int wrow = wn * 8 * NT + (lane & 3) * 2;
    MMQ_SLOT_OFFSETS(0, wrow, ILV ? wm * 16 : wm * 16 * MT); /* the weight slots apart from the tokens' */
    const int sd_off = KR_W_ROWS(NT) + wrow * 16;
    const int sm_off = KR_W_ROWS(NT) + (wn * 8 * NT + (lane >> 2)) * 16; /* TC: the B row's side row */
    const int at_off = KR_T_OFF(F, MT, NT) + ((ILV ? wm * 16 : wm * 16 * MT) + (lane >> 2)) * 16; /* XS: the token row's t */
    const uint32_t base = smem_u32(xe_smem);
    unsigned char *const P = xe_smem + KR_P_OFF(MT, NT);
    constexpr bool kr_tc = TC; /* gemm_kr_body's TC fold (the _st tiles) or the per-32 min term */
    static_assert(!XS || SORTED, "the sum plane's entries are copied as the sorted tile's run");
    /* XS: the sum plane of the sorted records (the gather's, at gemm_kr_body's offset) */
    const unsigned char *const xt = xq + (long long)((k + 511) / 512 * 4) * m * MMQ_ROW;

    /* gemm_kr_body's groups and waits, in the same order */
#define XE_COPY_A(slot, g)                                                                                  \
    do {                                                                                                    \
        if (SORTED) /* as experts_q8_0r_body's */                                                           \
            r3_copy_run<32 * MT>(xe_smem + KR_A_OFF(NT) + (slot) * R3_A_BYTES(MT),                          \
                                 xq + ((long long)(g) * m + t.s0) * MMQ_ROW, t.rows);                       \
        else                                                                                                \
            xe_copy_rows<32 * MT>(base + KR_A_OFF(NT) + (slot) * R3_A_BYTES(MT), xq, (long long)(g) * m, rs, \
                                  t.rows);                                                                  \
        if (XS)                                                                                             \
            kr_copy_t<32 * MT>(xe_smem + KR_T_OFF(F, MT, NT) + (slot) * 32 * MT * 16,                      \
                               xt + ((long long)(g) * m + t.s0) * 16, t.rows);                              \
    } while (0)
#define XE_AT(ao)                                                                                           \
    reinterpret_cast<const float *>(xe_smem + at_off + ((ao) - KR_A_OFF(NT)) / R3_A_BYTES(MT) * (32 * MT * 16))
#define XE_STEP(ao, wo)                                                                                     \
    if (mt_live == MT)                                                                                      \
        mmq_step<MT, NT, KR_FOLD(F), false, TC, XS, 1, ILV>(acc, base + (ao) + a_off, base + (wo) + b_off, \
                                                     reinterpret_cast<const float *>(xe_smem + (ao) + ax_off), \
                                                     reinterpret_cast<const float *>(xe_smem + (wo) + bw_off), \
                                                     reinterpret_cast<const float *>(xe_smem + (wo) + sd_off), \
                                                     MT, xe_smem + (wo) + sm_off, XE_AT(ao));               \
    else if (mt_live > 0)                                                                                   \
        mmq_step<MT, NT, KR_FOLD(F), true, TC, XS, 1, ILV>(acc, base + (ao) + a_off, base + (wo) + b_off,  \
                                                    reinterpret_cast<const float *>(xe_smem + (ao) + ax_off), \
                                                    reinterpret_cast<const float *>(xe_smem + (wo) + bw_off), \
                                                    reinterpret_cast<const float *>(xe_smem + (wo) + sd_off), \
                                                    mt_live, xe_smem + (wo) + sm_off, XE_AT(ao))
    if constexpr (BULK) { /* the sorted tile's runs by the bulk copy engine (KRB_KLOOP, gemm_krb_body's) */
        static_assert(SORTED && TC && XS && OVL == XE_OVL_NONE && F != KR_Q6_K,
                      "the bulk copies need the tile's rows as one run and the TF32 fold's widening");
        __shared__ __align__(8) unsigned long long xeb_bar[R3_STAGES + 1];
        const uint32_t bar = smem_u32(xeb_bar);
        KRB_SETUP(xe_smem, KR_SMEM_BYTES(F, MT, NT), bar);
        const unsigned abytes = (unsigned)t.rows * MMQ_ROW, tbytes = (unsigned)t.rows * 16;
#define XEB_SRC_A(g) (xq + ((long long)(g) * m + t.s0) * MMQ_ROW)
#define XEB_SRC_T(g) (xt + ((long long)(g) * m + t.s0) * 16)
#define XEB_STEP(ao, wo, ts) XE_STEP(ao, wo)
        if constexpr (LOOP2) {
            /* MEMRA_MMQ_XE_LOOP2=1: a full tile (every warp's m16 tiles live: t.rows, the same for the
             * whole CTA) runs a k loop with the one full mmq_step in it, as the dense tile's; a short
             * tile the loop above. The branch is uniform over the CTA, so every warp meets the same
             * barriers in the same loop. */
#define XEB_FULL(ao, wo, ts)                                                                                \
    mmq_step<MT, NT, KR_FOLD(F), false, TC, XS, 1, ILV>(acc, base + (ao) + a_off, base + (wo) + b_off,     \
                                                 reinterpret_cast<const float *>(xe_smem + (ao) + ax_off),  \
                                                 reinterpret_cast<const float *>(xe_smem + (wo) + bw_off),  \
                                                 reinterpret_cast<const float *>(xe_smem + (wo) + sd_off),  \
                                                 MT, xe_smem + (wo) + sm_off,                               \
                                                 reinterpret_cast<const float *>(xe_smem + at_off + (ts)))
            if (t.rows == 32 * MT)
                KRB_KLOOP(MT, NT, F, g0, nk, xe_smem, base, bar, XEB_SRC_A, XEB_SRC_T, abytes, tbytes, XEB_FULL);
            else
                KRB_KLOOP(MT, NT, F, g0, nk, xe_smem, base, bar, XEB_SRC_A, XEB_SRC_T, abytes, tbytes, XEB_STEP);
#undef XEB_FULL
        } else {
            KRB_KLOOP(MT, NT, F, g0, nk, xe_smem, base, bar, XEB_SRC_A, XEB_SRC_T, abytes, tbytes, XEB_STEP);
        }
#undef XEB_STEP
#undef XEB_SRC_T
#undef XEB_SRC_A
    } else {
        KR_KLOOP(MT, NT, F, g0, nk, xe_smem, XE_COPY_A, XE_STEP);
    }
#undef XE_STEP
#undef XE_AT
#undef XE_COPY_A
    xe_store<MT, NT, ILV>(acc, y, ldy, alpha, n, t, rs, wm, wn, lane, part, m, perm);
    if (OVL == XE_OVL_REM) pdl_wait();
}

/* wtab: device array of E pointers to each expert's operand (Q8_0 records /
 * K-packed, each 16-byte aligned), xq: q8_1 records of all m rows, offsets /
 * perm / tiles / ntiles: memra_k_experts_route's output for bm = 32 MT, y:
 * the output base (row offset applied); dynamic shared memory
 * R3_SMEM_BYTES(MT, 4) / KR_SMEM_BYTES(F, MT, 4). */
#define XE_ENTRY(NAME, BODY, MINB)                                                                                   \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, MINB)                                                 \
        NAME(const unsigned long long *__restrict__ wtab, const unsigned char *__restrict__ xq, int m, int n, int k, \
             const int *__restrict__ offsets, const int *__restrict__ perm, const int *__restrict__ tiles,          \
             const int *__restrict__ ntiles, float *__restrict__ y, long long ldy, float alpha,                    \
             float *__restrict__ part)                                                                               \
    {                                                                                                                \
        BODY(wtab, xq, m, n, k, offsets, perm, tiles, ntiles, y, ldy, alpha, part, (int)blockIdx.y,                  \
             (int)blockIdx.x);                                                                                       \
    }
XE_ENTRY(memra_k_experts_q8_0r_mt1, (experts_q8_0r_body<1, 4>), 3)
XE_ENTRY(memra_k_experts_q8_0r_mt2, (experts_q8_0r_body<2, 4>), 2)
XE_ENTRY(memra_k_experts_q8_0r_mt4, (experts_q8_0r_body<4, 4>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt1, (experts_kr_body<1, 4, KR_Q4_K>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2, (experts_kr_body<2, 4, KR_Q4_K>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4, (experts_kr_body<4, 4, KR_Q4_K>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1, (experts_kr_body<1, 4, KR_Q5_K>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2, (experts_kr_body<2, 4, KR_Q5_K>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4, (experts_kr_body<4, 4, KR_Q5_K>), 2)
XE_ENTRY(memra_k_experts_kr_q6_k_mt1, (experts_kr_body<1, 4, KR_Q6_K>), 3)
XE_ENTRY(memra_k_experts_kr_q6_k_mt2, (experts_kr_body<2, 4, KR_Q6_K>), 2)
XE_ENTRY(memra_k_experts_kr_q6_k_mt4, (experts_kr_body<4, 4, KR_Q6_K>), 2)
/* MEMRA_MMQ_XE_OVERLAP=1's pairs (see XE_OVL_MAIN): the 64- and 128-row full tiles, the 32-row remainders */
XE_ENTRY(memra_k_experts_q8_0r_mt2_o1, (experts_q8_0r_body<2, 4, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_q8_0r_mt4_o1, (experts_q8_0r_body<4, 4, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_q8_0r_mt1_o2, (experts_q8_0r_body<1, 4, XE_OVL_REM>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2_o1, (experts_kr_body<2, 4, KR_Q4_K, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4_o1, (experts_kr_body<4, 4, KR_Q4_K, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt1_o2, (experts_kr_body<1, 4, KR_Q4_K, XE_OVL_REM>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_o1, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_o1, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_o2, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_REM>), 3)
XE_ENTRY(memra_k_experts_kr_q6_k_mt2_o1, (experts_kr_body<2, 4, KR_Q6_K, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_kr_q6_k_mt4_o1, (experts_kr_body<4, 4, KR_Q6_K, XE_OVL_MAIN>), 2)
XE_ENTRY(memra_k_experts_kr_q6_k_mt1_o2, (experts_kr_body<1, 4, KR_Q6_K, XE_OVL_REM>), 3)
/* MEMRA_MMQ_XE_SORT=1's tiles: the same on the records in expert order */
XE_ENTRY(memra_k_experts_q8_0r_mt1_s, (experts_q8_0r_body<1, 4, XE_OVL_NONE, true>), 3)
XE_ENTRY(memra_k_experts_q8_0r_mt2_s, (experts_q8_0r_body<2, 4, XE_OVL_NONE, true>), 2)
XE_ENTRY(memra_k_experts_q8_0r_mt4_s, (experts_q8_0r_body<4, 4, XE_OVL_NONE, true>), 2)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
/* cc 9.0+ (unless MEMRA_MMQ_BULK=0): the sorted Q8_0 tiles on the bulk copies (R3B_KLOOP), bit for bit the _s tiles */
XE_ENTRY(memra_k_experts_q8_0r_mt1_sb, (experts_q8_0r_body<1, 4, XE_OVL_NONE, true, true>), 3)
XE_ENTRY(memra_k_experts_q8_0r_mt2_sb, (experts_q8_0r_body<2, 4, XE_OVL_NONE, true, true>), 2)
XE_ENTRY(memra_k_experts_q8_0r_mt4_sb, (experts_q8_0r_body<4, 4, XE_OVL_NONE, true, true>), 2)
/* MEMRA_MMQ_XE_TALL=1 (opt-in, untimed; issue 30): one 160-row tile an expert of up to 160 rows, 96
 * weight rows (MT 5, NT 3), its warps' m16 tiles interleaved (warp row wm takes the tile's m16 tiles
 * wm, wm + 2, ...), so that an expert of 128 rows costs 4 m16 tiles a warp as in the 128-row tile,
 * one of 160 rows 5, and the 1-32 rows past 128 need no 32-row tile of their own that streams the
 * expert's weight again (Mixtral-like rows at m = 512: about half the experts). ptxas sm_90a: 128
 * registers, 16 / 40 bytes of spill stores / loads (the 128 x 128 _sb tile 44 / 84). */
XE_ENTRY(memra_k_experts_q8_0r_mt5n3_sbi, (experts_q8_0r_body<5, 3, XE_OVL_NONE, true, true, true>), 2)
#endif
XE_ENTRY(memra_k_experts_kr_q4_k_mt1_s, (experts_kr_body<1, 4, KR_Q4_K, XE_OVL_NONE, true>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2_s, (experts_kr_body<2, 4, KR_Q4_K, XE_OVL_NONE, true>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4_s, (experts_kr_body<4, 4, KR_Q4_K, XE_OVL_NONE, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_s, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_NONE, true>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_s, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_NONE, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_s, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_NONE, true>), 2)
XE_ENTRY(memra_k_experts_kr_q6_k_mt1_s, (experts_kr_body<1, 4, KR_Q6_K, XE_OVL_NONE, true>), 3)
XE_ENTRY(memra_k_experts_kr_q6_k_mt2_s, (experts_kr_body<2, 4, KR_Q6_K, XE_OVL_NONE, true>), 2)
XE_ENTRY(memra_k_experts_kr_q6_k_mt4_s, (experts_kr_body<4, 4, KR_Q6_K, XE_OVL_NONE, true>), 2)
/* MEMRA_MMQ_KR_TC: the sorted Q4_K / Q5_K tiles with the min term on TF32 MMAs (mmq_step TC), bit for bit
 * the dense _t tiles' outputs on the same rows */
XE_ENTRY(memra_k_experts_kr_q4_k_mt1_st, (experts_kr_body<1, 4, KR_Q4_K, XE_OVL_NONE, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2_st, (experts_kr_body<2, 4, KR_Q4_K, XE_OVL_NONE, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4_st, (experts_kr_body<4, 4, KR_Q4_K, XE_OVL_NONE, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_st, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_NONE, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_st, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_NONE, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_st, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_NONE, true, true>), 2)
/* MEMRA_MMQ_KR_SUMS (the default): the sorted tiles of each format's default fold (Q4_K TC, Q5_K per-32)
 * reading t from the sum plane the gather brought along, as the dense _tx / _x tiles do */
XE_ENTRY(memra_k_experts_kr_q4_k_mt1_stx, (experts_kr_body<1, 4, KR_Q4_K, XE_OVL_NONE, true, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2_stx, (experts_kr_body<2, 4, KR_Q4_K, XE_OVL_NONE, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4_stx, (experts_kr_body<4, 4, KR_Q4_K, XE_OVL_NONE, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_sx, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_NONE, true, false, true>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_sx, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_NONE, true, false, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_sx, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_NONE, true, false, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_stx, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_NONE, true, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_stx, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_NONE, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_stx, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_NONE, true, true, true>), 2)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
/* MEMRA_MMQ_KR_BULK (default; cc 9.x as the dense _txb tiles): the _stx tiles with their runs by the bulk
 * copy engine (the records', the sum plane's, the expert's packed planes), bit for bit the _stx tiles */
XE_ENTRY(memra_k_experts_kr_q4_k_mt1_stxb, (experts_kr_body<1, 4, KR_Q4_K, XE_OVL_NONE, true, true, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2_stxb, (experts_kr_body<2, 4, KR_Q4_K, XE_OVL_NONE, true, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4_stxb, (experts_kr_body<4, 4, KR_Q4_K, XE_OVL_NONE, true, true, true, true>), 2)
/* MEMRA_MMQ_XE_TALL=1 (opt-in, untimed): Q4_K's 160 x 96 interleaved tile (as the Q8_0 _sbi above); its
 * KR_SMEM_BYTES(Q4_K, 5, 3) = 115200 bytes and the mbarriers leave two CTAs an SM (no rs: the
 * epilogue reads perm). ptxas sm_90a: 128 registers, 40 / 72 bytes of spill (the 128 x 128 _stxb 32 / 64). */
XE_ENTRY(memra_k_experts_kr_q4_k_mt5n3_stxbi, (experts_kr_body<5, 3, KR_Q4_K, XE_OVL_NONE, true, true, true, true, false, true>), 2)
/* two of each tall tile an sm_90 SM (233472 bytes, 1 KB reserved a CTA; the static mbarriers and rs[1]
 * taken as 128 bytes): Q4_K's margin is under 1 KB */
static_assert(2 * (KR_SMEM_BYTES(KR_Q4_K, 5, 3) + 128 + 1024) <= 233472 && 2 * (R3_SMEM_BYTES(5, 3) + 128 + 1024) <= 233472,
              "the tall grouped tiles run two CTAs an SM");
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_stxb, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_NONE, true, true, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_stxb, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_NONE, true, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_stxb, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_NONE, true, true, true, true>), 2)
/* MEMRA_MMQ_XE_LOOP2=1 (opt-in until timed): the same with a full tile's k loop apart from a short tile's
 * (one mmq_step in it) */
XE_ENTRY(memra_k_experts_kr_q4_k_mt1_stxb2, (experts_kr_body<1, 4, KR_Q4_K, XE_OVL_NONE, true, true, true, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q4_k_mt2_stxb2, (experts_kr_body<2, 4, KR_Q4_K, XE_OVL_NONE, true, true, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q4_k_mt4_stxb2, (experts_kr_body<4, 4, KR_Q4_K, XE_OVL_NONE, true, true, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt1_stxb2, (experts_kr_body<1, 4, KR_Q5_K, XE_OVL_NONE, true, true, true, true, true>), 3)
XE_ENTRY(memra_k_experts_kr_q5_k_mt2_stxb2, (experts_kr_body<2, 4, KR_Q5_K, XE_OVL_NONE, true, true, true, true, true>), 2)
XE_ENTRY(memra_k_experts_kr_q5_k_mt4_stxb2, (experts_kr_body<4, 4, KR_Q5_K, XE_OVL_NONE, true, true, true, true, true>), 2)
#endif
#undef XE_ENTRY

/* The two tables in one launch (MEMRA_MMQ_XE_MERGE=1), the tiles on grid.x and the weight's
 * 128-row blocks on grid.y (the other way round from the one-table kernels): grid.x = y1 +
 * the second table's worst case; CTAs x < y1 run table 1's tile t = x on the BODY tile, the
 * rest table 2's tile x - y1 on the BODY2 (remainder) tile. CTAs are handed out x fastest, so
 * a column's remainder tiles start a few CTAs after its full tiles, beside the full tile of
 * their own expert on the same 128 weight rows: that weight block is streamed from DRAM once,
 * the second reader finding it in L2. (Run s4, ncu: the separate remainder launch of mixtral
 * gate at m = 512 read about 200 MB at 3.35 TB/s, 60 us of the lane's ~540, every byte one
 * the full tiles had read before.) The remainder tiles also fill the SMs the full tiles' last
 * wave leaves idle. The same bodies, loads, folds and stores: every output is the two-launch
 * path's bit for bit. Dynamic shared memory: table 1's tile's (the larger). */
#define XE_ENTRY2(NAME, BODY, BODY2)                                                                                 \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, 2)                                                     \
        NAME(const unsigned long long *__restrict__ wtab, const unsigned char *__restrict__ xq, int m, int n, int k, \
             const int *__restrict__ offsets, const int *__restrict__ perm, const int *__restrict__ tiles,          \
             const int *__restrict__ ntiles, float *__restrict__ y, long long ldy, float alpha,                    \
             float *__restrict__ part, const int *__restrict__ tiles2, const int *__restrict__ ntiles2, int y1)     \
    {                                                                                                                \
        const int ty = (int)blockIdx.x, nb = (int)blockIdx.y;                                                        \
        if (ty < y1)                                                                                                 \
            BODY(wtab, xq, m, n, k, offsets, perm, tiles, ntiles, y, ldy, alpha, part, ty, nb);                      \
        else                                                                                                         \
            BODY2(wtab, xq, m, n, k, offsets, perm, tiles2, ntiles2, y, ldy, alpha, part, ty - y1, nb);              \
    }
XE_ENTRY2(memra_k_experts_q8_0r_mt4r1, (experts_q8_0r_body<4, 4>), (experts_q8_0r_body<1, 4>))
XE_ENTRY2(memra_k_experts_q8_0r_mt2r1, (experts_q8_0r_body<2, 4>), (experts_q8_0r_body<1, 4>))
XE_ENTRY2(memra_k_experts_kr_q4_k_mt4r1, (experts_kr_body<4, 4, KR_Q4_K>), (experts_kr_body<1, 4, KR_Q4_K>))
XE_ENTRY2(memra_k_experts_kr_q4_k_mt2r1, (experts_kr_body<2, 4, KR_Q4_K>), (experts_kr_body<1, 4, KR_Q4_K>))
XE_ENTRY2(memra_k_experts_kr_q5_k_mt4r1, (experts_kr_body<4, 4, KR_Q5_K>), (experts_kr_body<1, 4, KR_Q5_K>))
XE_ENTRY2(memra_k_experts_kr_q5_k_mt2r1, (experts_kr_body<2, 4, KR_Q5_K>), (experts_kr_body<1, 4, KR_Q5_K>))
XE_ENTRY2(memra_k_experts_kr_q6_k_mt4r1, (experts_kr_body<4, 4, KR_Q6_K>), (experts_kr_body<1, 4, KR_Q6_K>))
XE_ENTRY2(memra_k_experts_kr_q6_k_mt2r1, (experts_kr_body<2, 4, KR_Q6_K>), (experts_kr_body<1, 4, KR_Q6_K>))
#undef XE_ENTRY2

/* The grouped split-k sum: y[perm[p], j] = alpha * (part[0][perm[p]][j] + .. + part[S-1][perm[p]][j])
 * for the routed rows p < offsets[E] (the order of memra_k_splitk_sum, so the sum is the dense
 * lane's split-k sum with the same S bit for bit; rows whose id is outside [0, E) are not
 * touched, as unsplit). Grid (ceil(n / 256), rows), 256 threads. */
extern "C" __global__ void __launch_bounds__(256)
memra_k_experts_splitk_sum(const float *__restrict__ part, int S, int m, int n, const int *__restrict__ perm,
                           const int *__restrict__ offsets, int E, float *__restrict__ y, long long ldy, float alpha)
{
    pdl_wait();
    const int routed = offsets[E];
    const long long plane = (long long)m * n;
    for (int p = blockIdx.y; p < routed; p += gridDim.y) {
        const long long row = perm[p];
        for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
            const float *q = part + row * n + j;
            float s = q[0];
            for (int z = 1; z < S; z++) s += q[z * plane];
            y[row * ldy + j] = alpha * s;
        }
    }
}

/* The _mt1 tiles run three CTAs to an sm_90 SM (3 x (69120 + 128 + 1 KB)
 * within 228 KB); _mt2 fits sm_120's 99 KB for both lanes. */
static_assert(R3_SMEM_BYTES(1, 4) == 69120 && KR_SMEM_BYTES(KR_Q6_K, 1, 4) == 69120 &&
                  3 * (69120 + 128 + 1024) <= 233472 && KR_SMEM_BYTES(KR_Q6_K, 2, 4) + 256 <= MMQ_SM120_SMEM,
              "the grouped tiles' shared memory");

/* ---- gemm_experts on the f16 / bf16 lanes (on unless MEMRA_MMQ_XE_F16=0; issue 30) -------
 * memra_k_experts_cvt16_f16 / _bf16 / _copy16
 *   the activation in expert order as 16-bit values: sorted row s < offsets[E] of a16 is x row
 *   perm[s] rounded to f16 (cvt.rn, the host's memra_f16_from_f32) or bf16 (cvt.rn.bf16), or
 *   copied where x is already f16; 4 values a thread and step (k % 8 == 0), rows past
 *   offsets[E] never written or read.
 * memra_k_experts_h16_<f16|bf16>_mt1 / _mt2 / _mt4 with _k64 (the default), without (k32), _n8, _n8k64
 *   the grouped tile of 32 MT sorted rows x 32 NT weight rows (NT 4; 8 in _n8), 2 x 4 warps (a
 *   warp 16 MT rows x 8 NT columns), k in steps of BK = 32 (64 in _k64) through 4 (3) cp.async
 *   stages (A and B rows of 2 BK bytes at a pitch of 2 BK + 16), BK / 16 m16n8k16 MMAs a step
 *   with f32 accumulation (the byte layout of the int8 tiles' fragments, so the same ldmatrix
 *   addressing), no fold: y[perm[s], j] = alpha * sum. Grid (the worst-case tile count,
 *   ceil(n / BN)), tile-major like the merged floor; tile t = (e, s0) from memra_k_experts_route's one table (bm = 32 MT); rows past
 *   the expert's end and weight rows past n zero-filled, never stored. Within the lane's
 *   band of the host's reference, not bit for bit cuBLASLt's dense lane (another sum order). */
/* the tile's shape: MT m16 tiles a warp (BM = 32 MT rows), NT n8 tiles a warp (BN = 32 NT
 * weight rows), BK values of k a stage (32 or 64: rows of 2 BK bytes at a pitch of 2 BK + 16, no
 * bank conflicts for ldmatrix), ST stages */
#define H16_PITCH(BK) (2 * (BK) + 16)
#define H16_SMEM(MT, NT, BK, ST) ((ST) * (32 * (MT) + 32 * (NT)) * H16_PITCH(BK))

template <int MODE> /* 0: f32 to f16, 1: f32 to bf16, 2: f16 copied */
__device__ __forceinline__ void experts_cvt16(const void *__restrict__ x, const int *__restrict__ perm,
                                              const int *__restrict__ offsets, int E, int k,
                                              unsigned short *__restrict__ a16)
{
    const long long routed = offsets[E], q = k / 4, total = routed * q;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long s = i / q, c = (i - s * q) * 4, src = (long long)perm[s] * k + c;
        unsigned short h[4];
        if (MODE == 2) {
            const uint2 v = *reinterpret_cast<const uint2 *>(static_cast<const unsigned short *>(x) + src);
            h[0] = (unsigned short)v.x, h[1] = (unsigned short)(v.x >> 16);
            h[2] = (unsigned short)v.y, h[3] = (unsigned short)(v.y >> 16);
        } else {
            const float4 v = *reinterpret_cast<const float4 *>(static_cast<const float *>(x) + src);
            const float f[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int u = 0; u < 4; u++) {
                if (MODE == 0)
                    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h[u]) : "f"(f[u]));
                else
                    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h[u]) : "f"(f[u]));
            }
        }
        *reinterpret_cast<uint2 *>(a16 + s * k + c) =
            make_uint2((unsigned)h[0] | ((unsigned)h[1] << 16), (unsigned)h[2] | ((unsigned)h[3] << 16));
    }
}
#define CVT16_ENTRY(NAME, MODE)                                                                                      \
    extern "C" __global__ void __launch_bounds__(256)                                                                \
        NAME(const void *__restrict__ x, const int *__restrict__ perm, const int *__restrict__ offsets, int E, int k, \
             unsigned short *__restrict__ a16)                                                                       \
    {                                                                                                                \
        experts_cvt16<MODE>(x, perm, offsets, E, k, a16);                                                            \
    }
CVT16_ENTRY(memra_k_experts_cvt16_f16, 0)
CVT16_ENTRY(memra_k_experts_cvt16_bf16, 1)
CVT16_ENTRY(memra_k_experts_copy16, 2)
#undef CVT16_ENTRY

template <bool BF>
__device__ __forceinline__ void mma_h16(float (&d)[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    if (BF)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int MT, int NT, int BK, int ST, bool BF>
__device__ __forceinline__ void experts_h16_body(const unsigned long long *__restrict__ wtab,
                                                 const unsigned short *__restrict__ a16, int n, int k,
                                                 const int *__restrict__ offsets, const int *__restrict__ perm,
                                                 const int *__restrict__ tiles, const int *__restrict__ ntiles,
                                                 float *__restrict__ y, long long ldy, float alpha)
{
    extern __shared__ __align__(16) unsigned char h16_smem[];
    __shared__ int rs[32 * MT];
    constexpr int BM = 32 * MT, BN = 32 * NT, ROWS = BM + BN, PITCH = H16_PITCH(BK), CH = BK / 8,
                  STAGE = ROWS * PITCH;
    static_assert(BK == 32 || BK == 64, "a stage of 32 or 64 values");
    /* the grouped floor's tile lookup (tile blockIdx.x, column block blockIdx.y) and, below, its scatter */
    xe_tile t;
    if (!xe_tile_of<BM, BN>(t, rs, offsets, perm, tiles, ntiles, n, (int)blockIdx.x, (int)blockIdx.y)) return;
    const int s0 = t.s0, rows = t.rows, j0 = t.j0, brows = t.brows;
    const unsigned short *w = reinterpret_cast<const unsigned short *>(static_cast<uintptr_t>(wtab[t.e]));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp & 1, wn = warp >> 1;
    const int nk = (k + BK - 1) / BK;
    const uint32_t base = smem_u32(h16_smem);
    /* a stage: rows 0 .. BM - 1 the tile's activation rows, then BN weight rows; CH chunks of 16 bytes a row */
    auto copy = [&](int slot, int kt) {
#pragma unroll
        for (int e = 0; e < (ROWS * CH + MMQ_THREADS - 1) / MMQ_THREADS; e++) {
            const int idx = (int)threadIdx.x + e * MMQ_THREADS;
            if ((ROWS * CH) % MMQ_THREADS != 0 && idx >= ROWS * CH) break;
            const int r = idx / CH, c = idx % CH;
            const long long col = (long long)kt * BK + c * 8;
            const bool isw = r >= BM, ok = col < k && (isw ? r - BM < brows : r < rows);
            const unsigned short *src = isw ? w + (long long)(j0 + r - BM) * k + col : a16 + (long long)(s0 + r) * k + col;
            memra_cp16(base + slot * STAGE + r * PITCH + c * 16, ok ? src : a16, ok ? 16 : 0);
        }
    };
    float acc[MT][NT][4];
    mmq_zero<MT, NT>(acc);
    const int mt_live = min(MT, max(0, (rows - wm * 16 * MT + 15) / 16)); /* the warp's m16 tiles that hold rows */
#pragma unroll
    for (int s = 0; s < ST - 1; s++) {
        if (s < nk) copy(s, s);
        cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        cp_async_wait<ST - 2>();
        __syncthreads(); /* step kt landed for every thread; every warp is past step kt - 1 */
        if (kt + ST - 1 < nk) copy((kt + ST - 1) % ST, kt + ST - 1);
        cp_async_commit();
        const uint32_t sa = base + (kt % ST) * STAGE, sb = sa + BM * PITCH;
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t b[NT][2];
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint32_t r[4];
                memra_ldmatrix_x4(r, sb + (wn * 8 * NT + np * 16 + (lane & 7) + (lane >> 4) * 8) * PITCH + kk * 32 +
                                         ((lane >> 3) & 1) * 16);
                b[2 * np][0] = r[0], b[2 * np][1] = r[1], b[2 * np + 1][0] = r[2], b[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                if (mt >= mt_live) break;
                uint32_t a[4];
                memra_ldmatrix_x4(a, sa + memra_a_frag_off<PITCH>(wm * 16 * MT + mt * 16, lane, kk * 32));
#pragma unroll
                for (int nt = 0; nt < NT; nt++) mma_h16<BF>(acc[mt][nt], a, b[nt][0], b[nt][1]);
            }
        }
    }
    xe_store<MT, NT>(acc, y, ldy, alpha, n, t, rs, wm, wn, lane, nullptr, 0); /* unsplit: y[perm[s]] = alpha acc */
}

/* wtab: E pointers to each expert's f16 (or bf16) [n x k] (16-byte aligned), a16: the sorted
 * activation (memra_k_experts_cvt16_*), offsets / perm / tiles / ntiles: memra_k_experts_route's
 * one table for bm = 32 MT; dynamic shared memory H16_SMEM(MT, NT, BK, ST). The _k64 tiles (NT 4,
 * 64 values a stage, 3 stages) are the default since run t3; the _mt<MT> (32 values a stage, 4
 * stages), _n8 (256 columns) and _n8k64 tiles are MEMRA_MMQ_XE_H16's other variants. */
#define H16_ENTRY(NAME, MT, NT, BK, ST, MINB, BF)                                                                    \
    extern "C" __global__ void __launch_bounds__(MMQ_THREADS, MINB)                                                  \
        NAME(const unsigned long long *__restrict__ wtab, const unsigned short *__restrict__ a16, int n, int k,     \
             const int *__restrict__ offsets, const int *__restrict__ perm, const int *__restrict__ tiles,          \
             const int *__restrict__ ntiles, float *__restrict__ y, long long ldy, float alpha)                    \
    {                                                                                                                \
        experts_h16_body<MT, NT, BK, ST, BF>(wtab, a16, n, k, offsets, perm, tiles, ntiles, y, ldy, alpha);         \
    }
#define H16_ENTRIES(L, BF)                                                                                           \
    H16_ENTRY(memra_k_experts_h16_##L##_mt1, 1, 4, 32, 4, 2, BF)                                                     \
    H16_ENTRY(memra_k_experts_h16_##L##_mt2, 2, 4, 32, 4, 2, BF)                                                     \
    H16_ENTRY(memra_k_experts_h16_##L##_mt4, 4, 4, 32, 4, 2, BF)                                                     \
    H16_ENTRY(memra_k_experts_h16_##L##_mt2_n8, 2, 8, 32, 4, 1, BF)                                                  \
    H16_ENTRY(memra_k_experts_h16_##L##_mt4_n8, 4, 8, 32, 4, 1, BF)                                                  \
    H16_ENTRY(memra_k_experts_h16_##L##_mt1_k64, 1, 4, 64, 3, 2, BF)                                                 \
    H16_ENTRY(memra_k_experts_h16_##L##_mt2_k64, 2, 4, 64, 3, 2, BF)                                                 \
    H16_ENTRY(memra_k_experts_h16_##L##_mt4_k64, 4, 4, 64, 3, 2, BF)                                                 \
    H16_ENTRY(memra_k_experts_h16_##L##_mt4_n8k64, 4, 8, 64, 3, 1, BF)
H16_ENTRIES(f16, false)
H16_ENTRIES(bf16, true)
#undef H16_ENTRIES
#undef H16_ENTRY
static_assert(H16_SMEM(1, 4, 32, 4) == 4 * (32 + 128) * 80 && H16_SMEM(4, 4, 64, 3) == 110592 &&
                  H16_SMEM(4, 8, 64, 3) == 165888 && H16_SMEM(4, 8, 32, 4) == 122880,
              "the 16-bit tiles' shared memory (mmq_ops.c's h16_tiles)");
