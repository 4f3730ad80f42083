/* wgfold: a microbenchmark of the seeded warpgroup tile's inner step (issue 26), no memory traffic.
 *
 * Each consumer warpgroup of a CTA (one CTA an SM) repeats the `_wgs` step on operands that never change:
 * wait for the group's wgmmas, issue the next group's (a u8 seed and an s8 m64nNk32 product, A and B from
 * shared memory) into the other temporary, fold the waited one into the accumulators (NF FFMAs an
 * accumulator) with the token scales read from shared memory. Variants switch parts off or change the shape
 * so that the step's cycles can be split: tensor work alone, the fold alone, both, one buffer against two,
 * two warpgroups against three. The values are garbage; only the clock is read (clock64 around the loop,
 * the slowest warpgroup of each CTA, the median over CTAs).
 *
 * Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/micro/wgfold.cu -o wgfold
 * Run:   ./wgfold [steps]        one line a variant: cycles a step and the tensor-only / fold-only figures */
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define CK(x)                                                                                                       \
    do {                                                                                                            \
        cudaError_t e_ = (x);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                    \
            fprintf(stderr, "wgfold: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);                    \
            exit(1);                                                                                                \
        }                                                                                                           \
    } while (0)

/* the accumulator operand lists of m64nNk32 (N / 2 registers a thread) */
#define D8(b) "%" #b "0, %" #b "1, %" #b "2, %" #b "3, %" #b "4, %" #b "5, %" #b "6, %" #b "7"
#define L64                                                                                                         \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "    \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "     \
    "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define L32                                                                                                         \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "    \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define O8(C, o) C(d[o + 0]), C(d[o + 1]), C(d[o + 2]), C(d[o + 3]), C(d[o + 4]), C(d[o + 5]), C(d[o + 6]), C(d[o + 7])
#define O32(C) O8(C, 0), O8(C, 8), O8(C, 16), O8(C, 24)
#define O64(C) O32(C), O8(C, 32), O8(C, 40), O8(C, 48), O8(C, 56)
#define RW(x) "+r"(x)
#define WO(x) "=r"(x)

/* no swizzle, core matrices of 8 rows x 16 bytes, 128 bytes apart along K and 256 apart along M / N */
__device__ __forceinline__ unsigned long long desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(128 >> 4) << 16) |
           ((unsigned long long)(256 >> 4) << 32);
}

/* SD: scale-d (0: the product alone, D not read) */
template <int N, int SD = 1>
__device__ __forceinline__ void mma_s8(uint32_t (&d)[64], unsigned long long da, unsigned long long db)
{
    if constexpr (N == 128)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " L64 ", %64, %65, p;\n}\n"
                     : O64(RW) : "l"(da), "l"(db), "n"(SD));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 " L32 ", %32, %33, p;\n}\n"
                     : O32(RW) : "l"(da), "l"(db), "n"(SD));
}
template <int N> __device__ __forceinline__ void mma_seed(uint32_t (&d)[64], unsigned long long db)
{
    if constexpr (N == 128)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k32.s32.u8.u8 " L64 ", %64, %64, p;\n}\n"
                     : O64(WO) : "l"(db));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.u8 " L32 ", %32, %32, p;\n}\n"
                     : O32(WO) : "l"(db));
}
/* M2 (two m64n64 wgmmas a warpgroup, rows 0-63 into d[0..31] and rows 64-127 into d[32..63]): the upper half */
#define O32H(C) O8(C, 32), O8(C, 40), O8(C, 48), O8(C, 56)
template <int SD = 1>
__device__ __forceinline__ void mma_s8_hi(uint32_t (&d)[64], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 " L32 ", %32, %33, p;\n}\n"
                 : O32H(RW) : "l"(da), "l"(db), "n"(SD));
}
__device__ __forceinline__ void mma_seed_hi(uint32_t (&d)[64], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.u8 " L32 ", %32, %32, p;\n}\n"
                 : O32H(WO) : "l"(db));
}
template <int NR> __device__ __forceinline__ void fence_regs(uint32_t (&t)[64])
{
#pragma unroll
    for (int i = 0; i < NR; i++) asm volatile("" : "+r"(t[i])::"memory");
}

/* MMA: 0 none, 1 the product only, 2 seed + product, 3 a seed of 64 movs + product, 4 the product alone (scale-d
 * 0) with the seed's bias added in the fold by an IADD. NF: FFMAs an accumulator (0, 1, 2; 3: one that does not
 * read the product, 4: one with an immediate factor; 5: none, the token scales' loads alone).
 * DB: 1 two temporaries (issue the next group, then fold this one); 0 one (issue, wait, fold); 2 two
 * temporaries, each seeded right after its fold (the product then waits on a seed a fold old; wait_group 0
 * throughout, as ptxas serialises every wgmma after a wait_group 1 here, C7514); 3 / 4: 2 / 1 with the fold
 * pinned after the product's issue (every FFMA depends on a clock read that ptxas keeps after the wgmma, so
 * it cannot sink the wgmma into the fold).
 * LD: the token scales from shared memory (1: a float4 per two fragment rows, as _wgs; 2: f16 scales, a
 * 16-byte load per four fragment rows, half the shared-memory wavefronts, plus a conversion each), else (0)
 * from registers. */
template <int NW, int N, int MMA, int NF, int DB, int LD, int M2 = 0>
__global__ void __launch_bounds__(128 * NW, 1) k_fold(float *out, long long *cyc, int steps, float s_in, float m_in)
{
    static_assert(!M2 || (N == 64 && (DB == 1 || DB == 4)), "M2: two m64n64 halves, in _wgs's order (pinned or not)");
    extern __shared__ __align__(1024) unsigned char sm[];
    const int tid = threadIdx.x, w = tid >> 7, lane = tid & 127;
    for (int i = tid; i < 32768 / 4; i += blockDim.x)
        reinterpret_cast<uint32_t *>(sm)[i] = 0x01030507u * (uint32_t)(i + 1) | 0x01010101u;
    __syncthreads();
    const unsigned base = (unsigned)__cvta_generic_to_shared(sm);
    const unsigned long long da = desc(base + (unsigned)w * 2048), db = desc(base + 8192);
    const float *xs = reinterpret_cast<const float *>(sm + 16384);
    constexpr int NR = M2 ? 64 : N / 2;
    const unsigned long long da2 = desc(base + (unsigned)w * 2048 + 1024); /* M2: the upper 64 rows' A */
    uint32_t t0[64], t1[64];
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; i++) {
        acc[i] = 0.f;
        /* values ptxas cannot know (as constants it merged them, and the fold-only rows of runs s1-u1 computed
         * the fold's inner FFMA once for all 64 temporaries: one FFMA an accumulator, not two) */
        t0[i] = 0x00080000u + (uint32_t)steps * (uint32_t)(2 * i + 1) + (uint32_t)tid;
        t1[i] = 0x00080000u + (uint32_t)steps * (uint32_t)(2 * i + 2) + (uint32_t)tid;
    }
    float xr[8];
#pragma unroll
    for (int i = 0; i < 8; i++) xr[i] = 1.0f + 0.125f * (float)((lane + i) & 7);
    auto issue = [&](uint32_t(&t)[64]) {
        if constexpr (MMA > 0) {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            if constexpr (M2 && MMA == 4) { /* no seed: both halves' products alone, in one group */
                mma_s8<64, 0>(t, da, db);
                mma_s8_hi<0>(t, da2, db);
            } else if constexpr (M2) {
                /* each half its own group (seed, product, seed, product in one group: ptxas serialises, C7514) */
                if constexpr (MMA == 2) mma_seed<64>(t, db);
                mma_s8<64>(t, da, db);
                asm volatile("wgmma.commit_group.sync.aligned;\n"
                             "wgmma.fence.sync.aligned;\n" ::: "memory");
                if constexpr (MMA == 2) mma_seed_hi(t, db);
                mma_s8_hi(t, da2, db);
            } else if constexpr (MMA == 3) { /* the seed by 64 movs of the warp, each its own definition */
                static_assert(N == 128, "MMA 3: n128");
#pragma unroll
                for (int i = 0; i < 64; i++) asm volatile("mov.b32 %0, 0x00080000;\n" : "=r"(t[i]));
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
                mma_s8<N>(t, da, db);
            } else if constexpr (MMA == 4) { /* no seed: the product alone, the bias added by the fold (an IADD) */
                static_assert(N == 128, "MMA 4: n128");
                mma_s8<N, 0>(t, da, db);
            } else {
                if constexpr (MMA == 2) mma_seed<N>(t, db);
                mma_s8<N>(t, da, db);
            }
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        }
    };
    auto wait = [&](uint32_t(&t)[64]) {
        if constexpr (MMA > 0) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_regs<NR>(t);
    };
    auto fold = [&](uint32_t(&t)[64], int g) {
        const float *xt = xs + (g & 3) * 128;
        float s = s_in, m = m_in;
        if constexpr (DB == 3 || DB == 4) { /* pin: every FFMA of the fold depends on a clock read issued after the product */
            uint32_t clk;
            asm volatile("mov.u32 %0, %%clock;\n" : "=r"(clk)::"memory");
            s = clk == 0xFFFFFFFFu ? 0.0f : s;
        }
        uint4 hq = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int j = 0; j < N / 8; j++) {
            float x0 = xr[j & 7], x1 = xr[(j + 1) & 7];
            if constexpr (M2) { /* one load of the token scales serves both halves' fragment row j */
                if (LD == 1) {
                    const float4 xx = *reinterpret_cast<const float4 *>(xt + 16 * (j >> 1) + 4 * (lane & 3));
                    x0 = (j & 1) ? xx.z : xx.x, x1 = (j & 1) ? xx.w : xx.y;
                }
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int c = 0; c < 4; c++) {
                        const int i = 32 * h + 4 * j + c;
                        const float v = __int_as_float((int)(MMA == 4 ? t[i] + 0x00080000u : t[i])), x = (c & 1) ? x1 : x0;
                        if (NF == 2) acc[i] = fmaf(x, fmaf(v, s, m), acc[i]);
                        else if (NF == 1) acc[i] = fmaf(v, x, acc[i]); /* (NF 0: no fold; run u1's row did fold1) */
                    }
                continue;
            }
            if (LD == 1) {
                const float4 xx = *reinterpret_cast<const float4 *>(xt + 16 * (j >> 1) + 4 * (lane & 3));
                x0 = (j & 1) ? xx.z : xx.x, x1 = (j & 1) ? xx.w : xx.y;
            } else if (LD == 2) { /* f16 token scales: one 16-byte load holds fragment rows j .. j + 3 */
                if ((j & 3) == 0)
                    hq = *reinterpret_cast<const uint4 *>(reinterpret_cast<const __half *>(xt) + 32 * (j >> 2) +
                                                          8 * (lane & 3));
                const uint32_t w = (j & 3) == 0 ? hq.x : (j & 3) == 1 ? hq.y : (j & 3) == 2 ? hq.z : hq.w;
                const __half2 h = *reinterpret_cast<const __half2 *>(&w);
                x0 = __low2float(h), x1 = __high2float(h);
            }
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const float v = __int_as_float((int)(MMA == 4 ? t[4 * j + c] + 0x00080000u : t[4 * j + c]));
                const float x = (c & 1) ? x1 : x0;
                if (NF == 2) acc[4 * j + c] = fmaf(x, fmaf(v, s, m), acc[4 * j + c]);
                else if (NF == 1) acc[4 * j + c] = fmaf(v, x, acc[4 * j + c]);
                else if (NF == 3) acc[4 * j + c] = fmaf(acc[4 * j + c], x, 0.5f); /* not reading the product */
                else if (NF == 4) acc[4 * j + c] = fmaf(v, 1.0009765625f, acc[4 * j + c]); /* 2 register reads */
                else if (NF == 5 && c == 0) acc[4 * j] += x0 + x1; /* the token scales' loads alone */
            }
        }
    };
    auto seed = [&](uint32_t(&t)[64]) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        mma_seed<N>(t, db);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    };
    auto prod = [&](uint32_t(&t)[64]) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
        mma_s8<N>(t, da, db);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    };
    auto wait0 = [&](uint32_t(&t)[64], uint32_t(&u)[64]) { /* both temporaries: the product's and the seeded one */
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_regs<NR>(t);
        fence_regs<NR>(u);
    };
    __syncthreads();
    const long long c0 = clock64();
    if constexpr (DB == 2 || DB == 3) { /* the seed a fold ahead: each product waits on a seed issued one fold before it */
        static_assert(MMA == 2, "the early seed is of the seeded step");
        seed(t0);
        prod(t0);
        seed(t1);
        for (int g = 0; g < steps; g += 2) {
            wait0(t0, t1);
            prod(t1);
            fold(t0, g);
            seed(t0);
            wait0(t1, t0);
            prod(t0);
            fold(t1, g + 1);
            seed(t1);
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_regs<NR>(t0);
        fence_regs<NR>(t1);
    } else if constexpr (DB == 1 || DB == 4) {
        issue(t0);
        for (int g = 0; g < steps; g += 2) {
            wait(t0);
            issue(t1);
            fold(t0, g);
            wait(t1);
            issue(t0);
            fold(t1, g + 1);
        }
        wait(t0);
    } else {
        for (int g = 0; g < steps; g++) {
            issue(t0);
            wait(t0);
            fold(t0, g);
        }
    }
    const long long c1 = clock64();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < 64; i++) sum += acc[i] + (float)(t0[i] & 1u) + (float)(t1[i] & 1u);
    out[blockIdx.x * blockDim.x + tid] = sum;
    if (lane == 0) cyc[blockIdx.x * NW + w] = c1 - c0;
}

struct Variant {
    const char *name;
    void (*kern)(float *, long long *, int, float, float);
    int nw, n, mma, nf, db;
};
#define V(name, NW, N, MMA, NF, DB, LD) {name, k_fold<NW, N, MMA, NF, DB, LD>, NW, N, MMA, NF, DB}
/* M2: a warpgroup's 128 weight rows x 64 tokens as two m64n64 wgmmas (the MACs of one m64n128), counted as n128 */
#define V2(name, NW, MMA, NF, DB, LD) {name, k_fold<NW, 64, MMA, NF, DB, LD, 1>, NW, 128, MMA, NF, DB}

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : 8192;
    int dev = 0, sms = 0, clk = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("device %s, %d SMs, %d steps a warpgroup\n", prop.name, sms, steps);
    static const Variant vs[] = {
        V("2wg n128 mma(seed+s8) only     ", 2, 128, 2, 0, 1, 0),
        V("2wg n128 mma(s8) only          ", 2, 128, 1, 0, 1, 0),
        V("2wg n128 fold2+ld only         ", 2, 128, 0, 2, 1, 1),
        V("2wg n128 fold1+ld only         ", 2, 128, 0, 1, 1, 1),
        V("2wg n128 seed+s8 fold2+ld (wgs)", 2, 128, 2, 2, 1, 1),
        V("2wg n128 seed+s8 fold2+ld early", 2, 128, 2, 2, 2, 1),
        V("2wg n128 seed+s8 fold2 early   ", 2, 128, 2, 2, 2, 0),
        V("2wg n128 seed+s8 fold2+ld pin  ", 2, 128, 2, 2, 3, 1),
        V("1wg n128 seed+s8 fold2+ld pin  ", 1, 128, 2, 2, 3, 1),
        V("2wg n128 seed+s8 fold2+ld wgs+pin", 2, 128, 2, 2, 4, 1),
        V("2wg n128 seed+s8 fold2 wgs+pin  ", 2, 128, 2, 2, 4, 0),
        V("2wg n128 seed+s8 fold2 pin      ", 2, 128, 2, 2, 3, 0),
        V("2wg n128 fold2+ld16 only        ", 2, 128, 0, 2, 1, 2),
        V("2wg n128 seed+s8 fold2+ld16 pin ", 2, 128, 2, 2, 3, 2),
        V("2wg n128 seed+s8 fold2+ld16 wgs+pin", 2, 128, 2, 2, 4, 2),
        V("2wg n128 seed+s8 fold1+ld pin  ", 2, 128, 2, 1, 3, 1),
        V("2wg n64  seed+s8 fold2+ld pin  ", 2, 64, 2, 2, 3, 1),
        V("3wg n64  seed+s8 fold2+ld pin  ", 3, 64, 2, 2, 3, 1),
        V("4wg n64  seed+s8 fold2+ld pin  ", 4, 64, 2, 2, 3, 1),
        V("1wg n128 seed+s8 fold2+ld early", 1, 128, 2, 2, 2, 1),
        V("2wg n64  seed+s8 fold2+ld early", 2, 64, 2, 2, 2, 1),
        V("3wg n64  seed+s8 fold2+ld early", 3, 64, 2, 2, 2, 1),
        V("2wg n128 seed+s8 fold2 no ld   ", 2, 128, 2, 2, 1, 0),
        V("2wg n128 s8 fold2+ld           ", 2, 128, 1, 2, 1, 1),
        V("2wg n128 seed+s8 fold1+ld      ", 2, 128, 2, 1, 1, 1),
        V("2wg n128 s8 fold1+ld           ", 2, 128, 1, 1, 1, 1),
        V("2wg n128 seed+s8 fold2+ld 1buf ", 2, 128, 2, 2, 0, 1),
        V("1wg n128 seed+s8 fold2+ld      ", 1, 128, 2, 2, 1, 1),
        V("1wg n128 mma(seed+s8) only     ", 1, 128, 2, 0, 1, 0),
        V("1wg n128 fold2+ld only         ", 1, 128, 0, 2, 1, 1),
        V("3wg n128 seed+s8 fold2+ld 1buf ", 3, 128, 2, 2, 0, 1),
        V("3wg n128 mma(seed+s8) only 1buf", 3, 128, 2, 0, 0, 0),
        V("3wg n128 fold2+ld only 1buf    ", 3, 128, 0, 2, 0, 1),
        V("3wg n64  seed+s8 fold2+ld      ", 3, 64, 2, 2, 1, 1),
        V("4wg n64  seed+s8 fold2+ld      ", 4, 64, 2, 2, 1, 1),
        V("4wg n64  mma(seed+s8) only     ", 4, 64, 2, 0, 1, 0),
        V("4wg n64  fold2+ld only         ", 4, 64, 0, 2, 1, 1),
        /* run t1 left the overlap unexplained: does any FFMA work slow the wgmmas, or only work on their registers,
         * or the register reads? (NF 3: one FFMA an accumulator that does not read the product; NF 4: one that
         * reads it with an immediate factor, two register operands) */
        V("2wg n128 fold1 imm only         ", 2, 128, 0, 4, 1, 0),
        V("2wg n128 seed+s8 fold1 imm      ", 2, 128, 2, 4, 1, 0),
        V("2wg n128 seed+s8 fold1 imm pin  ", 2, 128, 2, 4, 4, 0),
        V("2wg n128 fold1 no-t only        ", 2, 128, 0, 3, 1, 0),
        V("2wg n128 seed+s8 fold1 no-t     ", 2, 128, 2, 3, 1, 0),
        V("2wg n128 fold1 only (no ld)     ", 2, 128, 0, 1, 1, 0),
        V("2wg n128 seed+s8 fold1 (no ld)  ", 2, 128, 2, 1, 1, 0),
        V("2wg n128 seed+s8 fold1 pin (no ld)", 2, 128, 2, 1, 4, 0),
        /* the loads without the fold (NF 5: two FADDs a fragment row pair, no FFMA on the accumulators): do the
         * token scales' shared-memory loads and the wgmmas' operand reads slow each other? */
        V("2wg n128 ld only (no fold)      ", 2, 128, 0, 5, 1, 1),
        V("2wg n128 seed+s8 ld (no fold)   ", 2, 128, 2, 5, 1, 1),
        V("2wg n128 s8 ld (no fold)        ", 2, 128, 1, 5, 1, 1),
        /* if the token scales' loads bound the fold (fold1+ld = fold2+ld = 263: eight warps x 8 LDS.128 x 4
         * quarter-warp wavefronts = 256), a warpgroup of 128 rows x 64 tokens needs half of them (16 scales a
         * thread, shared by two m64n64 halves) for the same MACs */
        V2("2wg m128n64 fold2+ld only       ", 2, 0, 2, 1, 1),
        V2("2wg m128n64 seed+s8 fold2+ld     ", 2, 2, 2, 1, 1),
        V2("2wg m128n64 seed+s8 fold2+ld pin ", 2, 2, 2, 4, 1),
        V2("2wg m128n64 seed+s8 fold2 (no ld)", 2, 2, 2, 1, 0),
        V2("2wg m128n64 mma(seed+s8) only   ", 2, 2, 0, 1, 0),
        /* the fold alone with both FFMAs an accumulator: pinned (the scales through a clock read each fold, so
         * ptxas cannot hoist the inner FFMA of a temporary that never changes out of the loop) */
        V("2wg n128 fold2+ld only, pinned  ", 2, 128, 0, 2, 4, 1),
        V("2wg n128 fold2 only, pinned     ", 2, 128, 0, 2, 4, 0),
        V2("2wg m128n64 fold2+ld only, pinned", 2, 0, 2, 4, 1),
        V("2wg n128 ld only (no fold), pinned", 2, 128, 0, 5, 4, 1),
        /* the seed without the tensor cores' shared-memory reads: 64 movs before the product (MMA 3), or no seed
         * and an IADD a value in the fold (MMA 4); both one ALU instruction an accumulator */
        V("2wg n128 mov-seed+s8 fold2+ld   ", 2, 128, 3, 2, 1, 1),
        V("2wg n128 mov-seed+s8 fold2      ", 2, 128, 3, 2, 1, 0),
        V("2wg n128 s8+iadd fold2+ld       ", 2, 128, 4, 2, 1, 1),
        V("2wg n128 s8+iadd fold2          ", 2, 128, 4, 2, 1, 0),
        V("2wg n128 s8+iadd fold2+ld pin   ", 2, 128, 4, 2, 4, 1),
        V("2wg n128 mov-seed+s8 only       ", 2, 128, 3, 0, 1, 0),
        /* both: half the token scales' loads (m128n64) and no seed MMA (the IADD), the products in one group */
        V2("2wg m128n64 s8+iadd fold2+ld     ", 2, 4, 2, 1, 1),
        V2("2wg m128n64 s8+iadd fold2+ld pin ", 2, 4, 2, 4, 1),
        V2("2wg m128n64 s8 only (no seed)   ", 2, 1, 0, 1, 0),
    };
    float *out;
    long long *cyc;
    CK(cudaMalloc(&out, (size_t)sms * 512 * sizeof(float)));
    CK(cudaMalloc(&cyc, (size_t)sms * 4 * sizeof(long long)));
    const int smem = 100 * 1024; /* one CTA an SM */
    printf("%-34s %10s %12s %14s\n", "variant", "cyc/step", "MAC/clk/SM", "FFMA/clk/SM");
    for (const Variant &v : vs) {
        CK(cudaFuncSetAttribute(v.kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        std::vector<double> per(3);
        for (int rep = 0; rep < 3; rep++) {
            v.kern<<<sms, 128 * v.nw, smem>>>(out, cyc, steps, 1.0f, -1.0f);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            std::vector<long long> h((size_t)sms * v.nw);
            CK(cudaMemcpy(h.data(), cyc, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
            std::vector<long long> ctas(sms);
            for (int b = 0; b < sms; b++)
                ctas[b] = *std::max_element(h.begin() + (size_t)b * v.nw, h.begin() + (size_t)(b + 1) * v.nw);
            std::sort(ctas.begin(), ctas.end());
            per[rep] = (double)ctas[sms / 2] / steps;
        }
        std::sort(per.begin(), per.end());
        const double c = per[1];
        const double macs = v.mma ? (double)v.nw * 64 * v.n * 32 / c : 0.0;
        const double ffma = (double)v.nw * 128 * (v.n / 2) * (v.nf == 2 ? 2 : v.nf == 5 ? 0 : v.nf ? 1 : 0) / c;
        printf("%-34s %10.1f %12.0f %14.1f\n", v.name, c, macs, ffma);
    }
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    return 0;
}
