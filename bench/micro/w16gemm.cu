/* w16gemm: a prototype of the fused-dequant f16 tile for Q8_0 weights on sm_90a (issue 26; run v2's micro,
 * bench/micro/w16.cu, measured its inner step at the f16 tensor rate). Standalone: its own operands, a host
 * reference, cuBLAS's f16 GEMM on the same dequantised weights as the yardstick. Not a lane yet.
 *
 * Operands (built on the host here; a lane would build them on upload and in the activation pass):
 *   codes   [n / 128 row tiles][k / 32 groups][2 warpgroups][4 warps][32 lanes][16 bytes]: lane (g, c) = (l / 4,
 *           l % 4) of warp v of warpgroup w holds rows r0 = 64 w + 16 v + g and r1 = r0 + 8 at k = 32 G + 16 h +
 *           {2c, 2c + 1, 2c + 8, 2c + 9} for h = 0, 1: bytes [r0 h0 | r1 h0 | r0 h1 | r1 h1], each code stored
 *           as q + 128 (so that 0x64 over it is the f16 1024 + 128 + q), 1 byte a weight;
 *   scales  [n / 128][k / 32][128 rows] f16 (the Q8_0 block scales as the file has them);
 *   x16     [m / 256 token tiles][k / 16 slabs][32 token groups][2 k halves][8 tokens][8 f16]: wgmma's K-major
 *           no-swizzle layout of B (core matrices of 8 tokens x 16 bytes, 128 bytes apart along K, 256 along N).
 * The tile: 128 weight rows x 256 tokens a CTA, 384 threads. Warpgroup 0 produces (one thread: three bulk copies a
 * 64-deep k step into one of 4 stages, 41472 bytes each); warpgroups 1 and 2 each compute 64 rows x 256 tokens
 * with m64n256k16 f16 wgmmas, A from registers: per k32 group a thread loads its 16 codes (LDS.128) and two
 * scales, turns each pair into f16 q s (one PRMT, one HSUB2, one HMUL2) while the previous wgmma runs.
 * y[t][r] = sum_k f16(q s) f16(x), f32 accumulation; y row-major [m][ldy].
 *
 * Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/micro/w16gemm.cu -lcublas -o w16gemm
 * Run:   ./w16gemm        the check (a partial shape against the host), then the 27b sheet at m = 512 and 4096 */
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "../../modules/kernels/common/tile.cuh"

#define CK(x)                                                                                                       \
    do {                                                                                                            \
        cudaError_t e_ = (x);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                    \
            fprintf(stderr, "w16gemm: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);                   \
            exit(1);                                                                                                \
        }                                                                                                           \
    } while (0)

/* no swizzle, K-major: core matrices of 8 rows x 16 bytes, 128 bytes apart along K and 256 apart along M / N */
__device__ __forceinline__ unsigned long long desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(128 >> 4) << 16) |
           ((unsigned long long)(256 >> 4) << 32);
}
__device__ __forceinline__ void wg_rs256(float (&d)[128], const uint32_t (&a)[4], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void fence_acc256(float (&d)[128])
{
#pragma unroll
    for (int i = 0; i < 128; i++) asm volatile("" : "+f"(d[i])::"memory");
}

constexpr int BM = 128, BN = 256, BK = 64, S = 4;
constexpr int ST_CODES = BM * BK, ST_SCALES = BM * (BK / 32) * 2, ST_TOK = BN * BK * 2;
constexpr int ST_BYTES = ST_CODES + ST_SCALES + ST_TOK; /* 8192 + 512 + 32768 */
constexpr int SMEM = S * ST_BYTES + 1024;

/* biased codes u (q + 128) k, k + 1 (bytes 0, 1 of w) and k + 8, k + 9 (bytes 2, 3), the row's scale twice in s2:
 * (q s) pairs into lo and hi */
__device__ __forceinline__ void deq(uint32_t w, uint32_t s2, uint32_t &lo, uint32_t &hi)
{
    const uint32_t a = __byte_perm(w, 0x64646464u, 0x4140), b = __byte_perm(w, 0x64646464u, 0x4342);
    const uint32_t off = 0x64806480u; /* (1152, 1152) */
    asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n" : "=r"(lo) : "r"(a), "r"(off), "r"(s2));
    asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n" : "=r"(hi) : "r"(b), "r"(off), "r"(s2));
}
__device__ __forceinline__ void fence_a(uint32_t (&a)[4])
{
#pragma unroll
    for (int i = 0; i < 4; i++) asm volatile("" : "+r"(a[i])::"memory");
}

__global__ void __launch_bounds__(384, 1)
k_w16gemm(const unsigned char *__restrict__ codes, const __half *__restrict__ scales, const __half *__restrict__ x16,
          float *__restrict__ y, int m, int n, int k, long long ldy)
{
    extern __shared__ __align__(16) unsigned char smraw[];
    __shared__ __align__(8) unsigned long long bar[2 * S];
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smraw), sb = (raw + 1023u) & ~1023u;
    const unsigned full = (unsigned)__cvta_generic_to_shared(bar), empty = full + 8 * S;
    const int tid = threadIdx.x, wg = tid >> 7;
    const int tt = blockIdx.x, rt = blockIdx.y, steps = k / BK, G = k / 32;
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            memra_mb_init(full + 8 * s, 1);
            memra_mb_init(empty + 8 * s, 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            const unsigned char *cw = codes + (size_t)rt * G * 4096;
            const unsigned char *sw = reinterpret_cast<const unsigned char *>(scales) + (size_t)rt * G * 256;
            const unsigned char *xw = reinterpret_cast<const unsigned char *>(x16) + (size_t)tt * (k / 16) * 8192;
            for (int it = 0; it < steps; it++) {
                const int s = it & (S - 1);
                if (it >= S) memra_mb_wait(empty + 8 * s, ((it / S) - 1) & 1);
                const unsigned st = sb + (unsigned)s * ST_BYTES;
                memra_mb_arrive_tx(full + 8 * s, ST_BYTES);
                memra_bulk_g2s(st, cw + (size_t)it * ST_CODES, ST_CODES, full + 8 * s);
                memra_bulk_g2s(st + ST_CODES, sw + (size_t)it * ST_SCALES, ST_SCALES, full + 8 * s);
                memra_bulk_g2s(st + ST_CODES + ST_SCALES, xw + (size_t)it * ST_TOK, ST_TOK, full + 8 * s);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int cw = wg - 1, t = tid & 127, v = t >> 5, l = t & 31, g = l >> 2, c = l & 3;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; i++) acc[i] = 0.f;
    uint32_t a0[4], a1[4];
#pragma unroll
    for (int i = 0; i < 4; i++) a0[i] = a1[i] = 0u;
    const int rowin = cw * 64 + v * 16 + g; /* the thread's first row in the tile */
    for (int it = 0; it < steps; it++) {
        const int s = it & (S - 1);
        memra_mb_wait(full + 8 * s, (it / S) & 1);
        const unsigned st = sb + (unsigned)s * ST_BYTES;
#pragma unroll
        for (int q = 0; q < 2; q++) {
            uint32_t w0, w1, w2, w3;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(w0), "=r"(w1), "=r"(w2), "=r"(w3)
                         : "r"(st + (unsigned)q * 4096u + (unsigned)((cw * 4 + v) * 32 + l) * 16u));
            unsigned short h0, h1;
            const unsigned sa = st + ST_CODES + (unsigned)q * 256u + (unsigned)rowin * 2u;
            asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(h0) : "r"(sa));
            asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(h1) : "r"(sa + 16u));
            const uint32_t s0 = (uint32_t)h0 * 0x10001u, s1 = (uint32_t)h1 * 0x10001u;
            const unsigned tok = st + ST_CODES + ST_SCALES + (unsigned)(2 * q) * 8192u;
            /* k16 h = 0 into a0 (its last reader was waited for a wgmma ago) */
            deq(w0, s0, a0[0], a0[2]);
            deq(w1, s1, a0[1], a0[3]);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wg_rs256(acc, a0, desc(tok));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            fence_a(a1);
            /* the previous step's last wgmma is complete: its stage is free */
            if (q == 0 && it > 0) memra_mb_arrive(empty + 8 * ((it - 1) & (S - 1)));
            deq(w2, s0, a1[0], a1[2]);
            deq(w3, s1, a1[1], a1[3]);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wg_rs256(acc, a1, desc(tok + 8192u));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            fence_a(a0);
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc256(acc);
    const int r0 = rt * BM + rowin, r1 = r0 + 8;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        const int t0 = tt * BN + 8 * j + 2 * c;
        if (t0 < m) {
            if (r0 < n) y[(long long)t0 * ldy + r0] = acc[4 * j + 0];
            if (r1 < n) y[(long long)t0 * ldy + r1] = acc[4 * j + 2];
        }
        if (t0 + 1 < m) {
            if (r0 < n) y[(long long)(t0 + 1) * ldy + r0] = acc[4 * j + 1];
            if (r1 < n) y[(long long)(t0 + 1) * ldy + r1] = acc[4 * j + 3];
        }
    }
}

/* ---- host ---- */
static uint32_t rng_state = 0x9E3779B9u;
static uint32_t rnd() { rng_state ^= rng_state << 13; rng_state ^= rng_state >> 17; rng_state ^= rng_state << 5; return rng_state; }
static float frand(float a, float b) { return a + (b - a) * (float)(rnd() >> 8) / 16777216.0f; }

struct Problem {
    int m, n, k, np, mp; /* n, m padded to the tiles */
    std::vector<signed char> q; /* [n][k] */
    std::vector<__half> d;       /* [n][k / 32] */
    std::vector<float> x;        /* [m][k] */
    std::vector<unsigned char> codes;
    std::vector<__half> scales, x16, wf16, xf16;
};

static void build(Problem &p)
{
    const int m = p.m, n = p.n, k = p.k, G = k / 32;
    p.np = (n + BM - 1) / BM * BM;
    p.mp = (m + BN - 1) / BN * BN;
    p.q.resize((size_t)n * k);
    p.d.resize((size_t)n * G);
    p.x.resize((size_t)m * k);
    for (auto &v : p.q) { int r = (int)(rnd() % 255) - 127; v = (signed char)(r == 0 ? 1 : r); }
    for (auto &v : p.d) v = __float2half(frand(0.0005f, 0.004f));
    for (auto &v : p.x) { float f = frand(-2.f, 2.f); v = f == 0.f ? 0.5f : f; }
    p.codes.assign((size_t)p.np * k, 128); /* padding rows: q = 0 */
    p.scales.assign((size_t)p.np * G, __float2half(0.f));
    for (int rt = 0; rt < p.np / BM; rt++)
        for (int gg = 0; gg < G; gg++)
            for (int w = 0; w < 2; w++)
                for (int v = 0; v < 4; v++)
                    for (int l = 0; l < 32; l++) {
                        const int g = l >> 2, c = l & 3, r0 = rt * BM + 64 * w + 16 * v + g;
                        unsigned char *o = &p.codes[((((size_t)rt * G + gg) * 2 + w) * 4 + v) * 32 * 16 + (size_t)l * 16];
                        for (int h = 0; h < 2; h++)
                            for (int rr = 0; rr < 2; rr++) {
                                const int r = r0 + 8 * rr;
                                const int ks[4] = {2 * c, 2 * c + 1, 2 * c + 8, 2 * c + 9};
                                for (int e = 0; e < 4; e++) {
                                    const int kk = 32 * gg + 16 * h + ks[e];
                                    o[8 * h + 4 * rr + e] = r < n ? (unsigned char)(p.q[(size_t)r * k + kk] + 128) : 128;
                                }
                            }
                    }
    for (int r = 0; r < n; r++)
        for (int gg = 0; gg < G; gg++) p.scales[((size_t)(r / BM) * G + gg) * BM + r % BM] = p.d[(size_t)r * G + gg];
    p.x16.assign((size_t)p.mp * k, __float2half(0.f));
    for (int t = 0; t < m; t++)
        for (int kk = 0; kk < k; kk++) {
            const int tt = t / BN, tn = t % BN, slab = kk / 16, ng = tn / 8, kh = (kk % 16) / 8;
            const size_t at = (((size_t)tt * (k / 16) + slab) * 32 + ng) * 128 + (size_t)kh * 64 + (tn % 8) * 8 + kk % 8;
            p.x16[at] = __float2half(p.x[(size_t)t * k + kk]);
        }
    /* the f16 mirror's operands, for cuBLAS and the reference */
    p.wf16.resize((size_t)n * k);
    p.xf16.resize((size_t)m * k);
    for (int r = 0; r < n; r++)
        for (int kk = 0; kk < k; kk++)
            p.wf16[(size_t)r * k + kk] = __float2half((float)p.q[(size_t)r * k + kk] * __half2float(p.d[(size_t)r * G + kk / 32]));
    for (size_t i = 0; i < p.xf16.size(); i++) p.xf16[i] = __float2half(p.x[i]);
}

struct Dev {
    unsigned char *codes; __half *scales, *x16, *wf16, *xf16; float *y, *yc;
};
static void upload(const Problem &p, Dev &d)
{
    CK(cudaMalloc(&d.codes, p.codes.size()));
    CK(cudaMalloc(&d.scales, p.scales.size() * 2));
    CK(cudaMalloc(&d.x16, p.x16.size() * 2));
    CK(cudaMalloc(&d.wf16, p.wf16.size() * 2));
    CK(cudaMalloc(&d.xf16, p.xf16.size() * 2));
    CK(cudaMalloc(&d.y, (size_t)p.m * p.n * 4));
    CK(cudaMalloc(&d.yc, (size_t)p.m * p.n * 4));
    CK(cudaMemcpy(d.codes, p.codes.data(), p.codes.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.scales, p.scales.data(), p.scales.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.x16, p.x16.data(), p.x16.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.wf16, p.wf16.data(), p.wf16.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.xf16, p.xf16.data(), p.xf16.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(d.y, 0xFF, (size_t)p.m * p.n * 4)); /* NaN: an output never written shows */
}
static void release(Dev &d)
{
    cudaFree(d.codes); cudaFree(d.scales); cudaFree(d.x16); cudaFree(d.wf16); cudaFree(d.xf16); cudaFree(d.y); cudaFree(d.yc);
}
static void launch(const Problem &p, const Dev &d, cudaStream_t s)
{
    dim3 grid(p.mp / BN, p.np / BM);
    k_w16gemm<<<grid, 384, SMEM, s>>>(d.codes, d.scales, d.x16, d.y, p.m, p.n, p.k, p.n);
}
static void cublas_ref(cublasHandle_t h, const Problem &p, const Dev &d)
{
    const float one = 1.f, zero = 0.f;
    /* column-major: Y^T (n x m) = W (k x n)^T X^T (k x m) */
    cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &one, d.wf16, CUDA_R_16F, p.k, d.xf16,
                                     CUDA_R_16F, p.k, &zero, d.yc, CUDA_R_32F, p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "w16gemm: cublasGemmEx: %d\n", (int)st); exit(1); }
}

/* every output against the host's sum over k of f16(q s) f16(x) in double: |y - ref| <= 2^-16 sum |terms| (f32
 * accumulation over k / 16 wgmma steps and the tensor cores' own adds: about k / 16 roundings of 2^-24 each of a
 * partial sum no larger than sum |terms|; 2^-16 covers k / 16 <= 256 with margin, and k here is 1024) */
static int check(const Problem &p, const Dev &d)
{
    std::vector<float> y((size_t)p.m * p.n);
    CK(cudaMemcpy(y.data(), d.y, y.size() * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    long bad = 0;
    for (int t = 0; t < p.m; t++)
        for (int r = 0; r < p.n; r++) {
            double s = 0, sa = 0;
            for (int kk = 0; kk < p.k; kk++) {
                const double a = __half2float(p.wf16[(size_t)r * p.k + kk]), b = __half2float(p.xf16[(size_t)t * p.k + kk]);
                s += a * b;
                sa += fabs(a * b);
            }
            const double e = fabs((double)y[(size_t)t * p.n + r] - s) / (sa > 0 ? sa : 1);
            if (!(e <= 1.52587890625e-05)) bad++;
            if (!(e <= worst)) worst = e;
        }
    printf("check m %d n %d k %d: %ld of %ld outputs outside the band, worst |y - ref| / sum|terms| %.3g\n", p.m, p.n, p.k,
           bad, (long)p.m * p.n, worst);
    return bad == 0 ? 0 : 1;
}

int main()
{
    CK(cudaFuncSetAttribute(k_w16gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "w16gemm: cublasCreate failed\n"); return 1; }
    int fails = 0;
    {
        Problem p; p.m = 300; p.n = 200; p.k = 1024;
        build(p);
        Dev d; upload(p, d);
        launch(p, d, 0);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        fails += check(p, d);
        release(d);
    }
    if (fails) { printf("FAILED: not timing\n"); return 1; }
    const int shapes[6][2] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%-6s %-14s %12s %12s %10s %10s %8s\n", "m", "shape", "w16 us", "cublas us", "w16 TF/s", "cub TF/s", "w16/cub");
    for (int mi = 0; mi < 2; mi++) {
        const int m = mi ? 4096 : 512;
        for (auto &sh : shapes) {
            Problem p; p.m = m; p.k = sh[0]; p.n = sh[1];
            build(p);
            Dev d; upload(p, d);
            std::vector<float> tw, tc;
            for (int rep = -2; rep < 20; rep++)
                for (int arm = 0; arm < 2; arm++) {
                    const int a = (rep & 1) ? 1 - arm : arm;
                    CK(cudaEventRecord(e0));
                    if (a == 0) launch(p, d, 0);
                    else cublas_ref(h, p, d);
                    CK(cudaEventRecord(e1));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    if (rep >= 0) (a == 0 ? tw : tc).push_back(ms);
                }
            CK(cudaGetLastError());
            std::sort(tw.begin(), tw.end());
            std::sort(tc.begin(), tc.end());
            /* the two arms agree: max |y - yc| / max |yc| */
            std::vector<float> y((size_t)m * p.n), yc((size_t)m * p.n);
            CK(cudaMemcpy(y.data(), d.y, y.size() * 4, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(yc.data(), d.yc, yc.size() * 4, cudaMemcpyDeviceToHost));
            double md = 0, mx = 0;
            for (size_t i = 0; i < y.size(); i++) { md = std::max(md, (double)fabsf(y[i] - yc[i])); mx = std::max(mx, (double)fabsf(yc[i])); }
            const double fl = 2.0 * m * p.n * p.k, w = tw[tw.size() / 2] * 1e3, cb = tc[tc.size() / 2] * 1e3;
            char nm[32];
            snprintf(nm, sizeof nm, "%d->%d", p.k, p.n);
            printf("%-6d %-14s %12.1f %12.1f %10.1f %10.1f %8.3f   agree %.2g\n", m, nm, w, cb, fl / w * 1e-6, fl / cb * 1e-6,
                   cb / w, md / (mx > 0 ? mx : 1));
            release(d);
        }
    }
    cublasDestroy(h);
    return 0;
}
