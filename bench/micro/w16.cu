/* w16: a microbenchmark of a fused-dequant f16 tile on the warpgroup MMA (issue 26's question: is the integer
 * floor's per-32 fold the right design on sm_90, or does an f16 product on weights dequantised in registers run
 * faster?), no global memory traffic.
 *
 * Each consumer warpgroup of a CTA (one CTA an SM) repeats k32 steps of a 64 x N tile (weight rows x tokens) on
 * operands that never change in value:
 *   MODE 0  f16 wgmma m64nNk16, A (weights, f16) and B (tokens, f16) from shared memory: the f16 ceiling;
 *   MODE 1  the same with A from registers (wgmma's register-A form), the registers never rewritten: the ceiling
 *           of that form;
 *   MODE 2  A from registers rewritten every k16: a thread loads its fragment's sixteen int8 weight codes of the
 *           k32 step (one 16-byte shared-memory load) and its two rows' f16 scales (one 8-byte load), and turns
 *           them into f16 q s (a byte permute into 1024 + 128 + q, a subtraction, a multiplication by the scale:
 *           exact q, one rounding of q s) while the previous k16's wgmma runs (two register buffers; wait_group 1);
 *   MODE 3  MODE 2 plus the shared-memory stores a producer's copies would make (the step's tokens in f16 and
 *           weights in int8: 48 bytes a thread a step at NW 2, N 128, scaled by the tile), as plain stores;
 *   MODE 4  MODE 2 with wait_group 0 (no overlap of the conversion with the wgmma).
 * The values are garbage; only the clock is read (clock64 around the loop, the slowest warpgroup of each CTA, the
 * median CTA, the median of three launches). Compare with bench/micro/wgfold.cu's `_wgs` row: the same
 * 2 x 64 x 128 x 32 MACs a step in 562.7 cycles on the H100 (run v1: 932 MAC a clock and SM).
 *
 * Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/micro/w16.cu -o w16
 * Run:   ./w16 [steps] */
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                                       \
    do {                                                                                                            \
        cudaError_t e_ = (x);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                    \
            fprintf(stderr, "w16: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);                       \
            exit(1);                                                                                                \
        }                                                                                                           \
    } while (0)

#include "../../modules/kernels/w16/w16_wgmma.cuh"

/* four int8 codes (bytes k, k + 1, k + 8, k + 9 of one weight row) and the row's scale as an f16 pair: the f16
 * pairs (q_k s, q_k+1 s) into lo and (q_k+8 s, q_k+9 s) into hi. 0x64 over an unsigned byte u is the f16
 * 1024 + u; with u = q + 128 (the XOR) the subtraction of 1152 leaves q exactly, and the product rounds once. */
__device__ __forceinline__ void deq(uint32_t w, uint32_t s2, uint32_t &lo, uint32_t &hi)
{
    const uint32_t x = w ^ 0x80808080u;
    const uint32_t a = __byte_perm(x, 0x64646464u, 0x4140), b = __byte_perm(x, 0x64646464u, 0x4342);
    const uint32_t off = 0x64806480u; /* (1152, 1152) */
    asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n" : "=r"(lo) : "r"(a), "r"(off), "r"(s2));
    asm("{\n.reg .b32 t;\nsub.rn.f16x2 t, %1, %2;\nmul.rn.f16x2 %0, t, %3;\n}\n" : "=r"(hi) : "r"(b), "r"(off), "r"(s2));
}

constexpr int RING = 4; /* k32 steps of operands the loop cycles through */

template <int NW, int N, int MODE>
__global__ void __launch_bounds__(128 * NW, 1) k_w16(float *out, long long *cyc, int steps)
{
    extern __shared__ __align__(1024) unsigned char sm[];
    const int tid = threadIdx.x, w = tid >> 7, lane = tid & 31, warp = tid >> 5;
    /* layout: B (tokens f16) RING x 2 k16 slabs of N x 16 halves; A f16 (MODE 0) RING x 2 x NW x 2 KB; A int8 RING x
     * NW x 4 warps x 32 lanes x 16 bytes; scales RING x NW x 4 x 32 x 8 bytes; the stores' scratch */
    constexpr int B_SLAB = N * 32, B_BYTES = RING * 2 * B_SLAB;
    constexpr int AF_BYTES = RING * 2 * NW * 2048;
    constexpr int AI_STEP = NW * 4 * 32 * 16, AI_BYTES = RING * AI_STEP;
    constexpr int SC_STEP = NW * 4 * 32 * 8, SC_BYTES = RING * SC_STEP;
    constexpr int ST_PER = (N * 32 * 2 + NW * 64 * 32) / (128 * NW) / 16; /* 16-byte stores a thread a step */
    const int total = B_BYTES + AF_BYTES + AI_BYTES + SC_BYTES + 128 * NW * 16 * (ST_PER > 0 ? ST_PER : 1);
    for (int i = tid; i < total / 4; i += blockDim.x)
        reinterpret_cast<uint32_t *>(sm)[i] = 0x3C003C00u ^ ((0x00030005u * (uint32_t)(i + 1)) & 0x03FF03FFu);
    __syncthreads();
    const unsigned base = (unsigned)__cvta_generic_to_shared(sm);
    const unsigned bB = base, bAF = base + B_BYTES, bAI = bAF + AF_BYTES, bSC = bAI + AI_BYTES,
                   bST = bSC + SC_BYTES + (unsigned)tid * 16u * (ST_PER > 0 ? ST_PER : 1);
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; i++) acc[i] = 0.f;
    uint32_t a0[4], a1[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        a0[i] = 0x3C003C00u + (uint32_t)(tid + i);
        a1[i] = 0x3C003C00u + (uint32_t)(tid + 2 * i);
    }
    uint4 wq = make_uint4(0, 0, 0, 0);
    uint2 sc = make_uint2(0x3C003C00u, 0x3C003C00u);
    const long long c0 = clock64();
    for (int it = 0; it < steps; it++) {
        const int r = it & (RING - 1);
        const unsigned long long db0 = desc(bB + (unsigned)(r * 2) * B_SLAB), db1 = desc(bB + (unsigned)(r * 2 + 1) * B_SLAB);
        if constexpr (MODE == 0) {
            const unsigned af = bAF + (unsigned)((r * 2) * NW + w) * 2048u;
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wg_ss<N>(acc, desc(af), db0);
            wg_ss<N>(acc, desc(af + (unsigned)NW * 2048u), db1);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        } else if constexpr (MODE == 1) {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wg_rs<N>(acc, a0, db0);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            wg_rs<N>(acc, a1, db1);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            fence_a(a0);
        } else {
            /* this step's codes and scales (the loads of the next step's issue before the previous wgmma is waited for) */
            const unsigned ai = bAI + (unsigned)r * AI_STEP + (unsigned)(warp * 32 + lane) * 16u;
            const unsigned si = bSC + (unsigned)r * SC_STEP + (unsigned)(warp * 32 + lane) * 8u;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(wq.x), "=r"(wq.y), "=r"(wq.z), "=r"(wq.w) : "r"(ai));
            asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(sc.x), "=r"(sc.y) : "r"(si));
            /* k16 0: its fragment into a0 (free: the wgmma that read it was waited for last step) */
            deq(wq.x, sc.x, a0[0], a0[2]);
            deq(wq.y, sc.y, a0[1], a0[3]);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wg_rs<N>(acc, a0, db0);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            if constexpr (MODE == 4) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            else asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            fence_a(a1);
            deq(wq.z, sc.x, a1[0], a1[2]);
            deq(wq.w, sc.y, a1[1], a1[3]);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wg_rs<N>(acc, a1, db1);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            if constexpr (MODE == 4) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            else asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            fence_a(a0);
            if constexpr (MODE == 3) {
#pragma unroll
                for (int s = 0; s < ST_PER; s++)
                    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(bST + 16u * s), "r"(wq.x + s),
                                 "r"(wq.y), "r"(wq.z), "r"(wq.w)
                                 : "memory");
            }
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    fence_acc<N>(acc);
    const long long c1 = clock64();
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; i++) sum += acc[i];
    out[blockIdx.x * blockDim.x + tid] = sum + (float)(a0[0] & 1u) + (float)(a1[3] & 1u);
    if ((tid & 127) == 0) cyc[blockIdx.x * NW + w] = c1 - c0;
}

struct Variant {
    const char *name;
    void (*kern)(float *, long long *, int);
    int nw, n;
};
#define V(name, NW, N, MODE) {name, k_w16<NW, N, MODE>, NW, N}

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : 8192;
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    printf("device %s, %d SMs, %d k32 steps a warpgroup\n", prop.name, sms, steps);
    static const Variant vs[] = {
        V("2wg n128 f16 SS (ceiling)       ", 2, 128, 0),
        V("2wg n128 f16 RS, A fixed        ", 2, 128, 1),
        V("2wg n128 f16 RS, int8 deq       ", 2, 128, 2),
        V("2wg n128 f16 RS, int8 deq + st  ", 2, 128, 3),
        V("2wg n128 f16 RS, int8 deq, wait0", 2, 128, 4),
        V("3wg n128 f16 SS (ceiling)       ", 3, 128, 0),
        V("3wg n128 f16 RS, A fixed        ", 3, 128, 1),
        V("3wg n128 f16 RS, int8 deq       ", 3, 128, 2),
        V("3wg n128 f16 RS, int8 deq + st  ", 3, 128, 3),
        V("2wg n256 f16 SS (ceiling)       ", 2, 256, 0),
        V("2wg n256 f16 RS, A fixed        ", 2, 256, 1),
        V("2wg n256 f16 RS, int8 deq       ", 2, 256, 2),
        V("2wg n256 f16 RS, int8 deq + st  ", 2, 256, 3),
        V("2wg n256 f16 RS, int8 deq, wait0", 2, 256, 4),
    };
    float *out;
    long long *cyc;
    CK(cudaMalloc(&out, (size_t)sms * 512 * sizeof(float)));
    CK(cudaMalloc(&cyc, (size_t)sms * 4 * sizeof(long long)));
    const int smem = 200 * 1024; /* one CTA an SM */
    printf("%-34s %10s %12s %10s\n", "variant", "cyc/k32", "MAC/clk/SM", "of _wgs");
    for (const Variant &v : vs) {
        CK(cudaFuncSetAttribute(v.kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        std::vector<double> per(3);
        for (int rep = 0; rep < 3; rep++) {
            v.kern<<<sms, 128 * v.nw, smem>>>(out, cyc, steps);
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
        const double c = per[1], macs = (double)v.nw * 64 * v.n * 32 / c;
        printf("%-34s %10.1f %12.0f %9.2fx\n", v.name, c, macs, macs / 932.0);
    }
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    return 0;
}
