/* w16gemm: a prototype of the fused-dequant f16 tile for Q8_0 weights on sm_90a (issue 26; run v2's micro,
 * bench/micro/w16.cu, measured its inner step at the f16 tensor rate). Standalone: its own operands, a host
 * reference, cuBLAS's f16 GEMM on the same dequantised weights as the yardstick. Not a lane yet.
 *
 * Formats: Q8_0; Q4_0; Q4_K (4-bit codes, the sub-blocks' 6-bit scale and min as two bytes, the super-blocks' d
 * and dmin as f16: 148 bytes a 256-value row block, 1.03x the GGUF's 144; each value d sc u - dmin m in f32, then
 * f16: the f16 mirror's decoder); Q6_K (low nibbles as Q4's, the high 2 bits a word a lane and group, int8 scales
 * per 16 values, d: the GGUF's 210 bytes a 256-value row block; each value (d sc)(u - 32) in f32, then f16).
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
 * y[t][r] = sum_k f16(q s) f16(x), f32 accumulation; y row-major [m][ldy]. Where the grid is short of the SMs
 * (5120->1024 at m = 512: 16 CTAs) split-k: gridDim.z slices of the k steps into partial sums, then k_sum adds them
 * in slice order. Where m is short (m <= 2048 and 256-token tiles would leave the last wave under 80% full), the
 * token tile is 128 (m64n128 wgmmas: twice the CTAs); the check runs both widths, unsplit and split.
 *
 * Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/micro/w16gemm.cu -lcublas -o w16gemm
 * Run:   ./w16gemm [receipt.json]   the checks (a partial shape against the host), then the 27b sheet at m = 512 and
 *                                    4096: each call alone with L2 flushed, and 8 back to back
 *        ./w16gemm check            the checks alone (for compute-sanitizer) */
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

#define CK(x)                                                                                                       \
    do {                                                                                                            \
        cudaError_t e_ = (x);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                    \
            fprintf(stderr, "w16gemm: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);                   \
            exit(1);                                                                                                \
        }                                                                                                           \
    } while (0)


/* the lane's tile, pass and sum (modules/kernels/w16/w16_tile.cuh), as template kernels here */
#include "../../modules/kernels/w16/w16_tile.cuh"
constexpr int SMEM = W16_SMEM;
template <int QB, int BN>
__global__ void __launch_bounds__(384, 1)
k_w16gemm(const unsigned char *__restrict__ codes, const unsigned short *__restrict__ scales,
          const uint32_t *__restrict__ ddp, const __half *__restrict__ x16, float *__restrict__ y, int m, int n, int k,
          long long ldy, float *__restrict__ part)
{
    w16_tile<QB, BN>(codes, scales, ddp, x16, y, m, n, k, ldy, 1.f, part);
}
__global__ void __launch_bounds__(256) k_x16(const float *__restrict__ x, __half *__restrict__ x16, int m, int k, int mp,
                                             int BN)
{
    w16_x16((long long)blockIdx.x * blockDim.x + threadIdx.x, x, x16, m, k, mp, BN);
}
__global__ void __launch_bounds__(256) k_sum(const float *__restrict__ part, float *__restrict__ y, int m, int n, int Z)
{
    w16_sum((long long)blockIdx.x * blockDim.x + threadIdx.x, part, y, m, n, n, Z, 1.f);
}

/* ---- host ---- */
static uint32_t rng_state = 0x9E3779B9u;
static uint32_t rnd() { rng_state ^= rng_state << 13; rng_state ^= rng_state >> 17; rng_state ^= rng_state << 5; return rng_state; }
static float frand(float a, float b) { return a + (b - a) * (float)(rnd() >> 8) / 16777216.0f; }

struct Problem {
    int m, n, k, qb, np, mp, bn = 256; /* qb: 8 (Q8_0), 4 (Q4_0), 5 (Q4_K), 6 (Q6_K); n, m padded to the tiles */
    std::vector<signed char> q; /* [n][k]: the code (Q8_0 q, Q4_0 q - 8, Q4_K u, Q6_K u) */
    std::vector<signed char> s6; /* Q6_K [n][k / 16]: the sub-blocks' scales */
    std::vector<__half> d;       /* [n][k / 32]: Q8_0 / Q4_0 block scales */
    std::vector<unsigned char> sc, mn; /* Q4_K [n][k / 32]: sub-block scales and mins (6 bits) */
    std::vector<__half> kd, kdm;       /* Q4_K [n][k / 256]: d and dmin */
    std::vector<float> x;        /* [m][k] */
    std::vector<unsigned char> codes;
    std::vector<unsigned short> scales; /* [np / 128][k / 32][128]: f16 bits, or Q4_K's sc | m << 8 */
    std::vector<uint32_t> dd;           /* Q4_K [np / 128][k / 256][128]: d | dmin << 16 (f16 bits) */
    std::vector<__half> wf16, xf16;
};

/* the activations at p.m (x and its f16 copy for cuBLAS and the reference) */
static void build_x(Problem &p)
{
    p.mp = (p.m + 255) / 256 * 256; /* either tile width divides it */
    p.x.resize((size_t)p.m * p.k);
    for (auto &v : p.x) { float f = frand(-2.f, 2.f); v = f == 0.f ? 0.5f : f; }
    p.xf16.resize((size_t)p.m * p.k);
    for (size_t i = 0; i < p.xf16.size(); i++) p.xf16[i] = __float2half(p.x[i]);
}

/* the weights, then the activations */
static void build(Problem &p)
{
    const int n = p.n, k = p.k, G = k / 32;
    p.np = (n + BM - 1) / BM * BM;
    p.q.resize((size_t)n * k);
    p.d.resize((size_t)n * G);
    for (auto &v : p.q) {
        if (p.qb == 8) { int r = (int)(rnd() % 255) - 127; v = (signed char)(r == 0 ? 1 : r); }
        else if (p.qb == 4) v = (signed char)((int)(rnd() % 16) - 8);
        else if (p.qb == 5) v = (signed char)(rnd() % 16);
        else v = (signed char)(rnd() % 64);
    }
    for (auto &v : p.d) v = __float2half(frand(0.0005f, 0.004f));
    const int SB = k / 256;
    if (p.qb == 6) {
        p.s6.resize((size_t)n * k / 16);
        for (auto &v : p.s6) { const int r = (int)(rnd() % 112) - 32; v = (signed char)(r == 0 ? 7 : r); }
        p.kd.resize((size_t)n * SB);
        for (auto &v : p.kd) v = __float2half(frand(0.0002f, 0.002f));
    }
    if (p.qb == 5) {
        p.sc.resize((size_t)n * G);
        p.mn.resize((size_t)n * G);
        p.kd.resize((size_t)n * SB);
        p.kdm.resize((size_t)n * SB);
        for (auto &v : p.sc) v = (unsigned char)(1 + rnd() % 63);
        for (auto &v : p.mn) v = (unsigned char)(rnd() % 64);
        for (auto &v : p.kd) v = __float2half(frand(0.0002f, 0.002f));
        for (auto &v : p.kdm) v = __float2half(frand(0.0001f, 0.001f));
    }
    const int lb = p.qb == 8 ? 16 : 8; /* bytes a lane and group (Q6_K: its low nibbles; then 4 of high bits) */
    const int cbg = BM * 32 * (p.qb == 8 ? 8 : p.qb == 6 ? 6 : 4) / 8; /* a group's bytes in a row tile */
    /* padding rows: q = 0 (Q6_K: u = 32, low nibbles 0, high bits 2) */
    p.codes.assign((size_t)p.np / BM * G * cbg, p.qb == 8 ? 128 : p.qb == 6 ? 0 : 0x88);
    if (p.qb == 6)
        for (size_t b = 0; b < (size_t)p.np / BM * G; b++) memset(&p.codes[b * cbg + 2048], 0xAA, 1024);
    p.scales.assign((size_t)p.np * G, 0);
    if (p.qb == 5 || p.qb == 6) p.dd.assign((size_t)p.np / BM * SB * BM, 0u);
    for (int rt = 0; rt < p.np / BM; rt++)
        for (int gg = 0; gg < G; gg++)
            for (int w = 0; w < 2; w++)
                for (int v = 0; v < 4; v++)
                    for (int l = 0; l < 32; l++) {
                        const int g = l >> 2, c = l & 3, r0 = rt * BM + 64 * w + 16 * v + g;
                        const size_t lane = ((size_t)w * 4 + v) * 32 + (size_t)l;
                        unsigned char *o = &p.codes[((size_t)rt * G + gg) * cbg + lane * lb];
                        unsigned char *oh = &p.codes[((size_t)rt * G + gg) * cbg + 2048 + lane * 4]; /* Q6_K */
                        for (int h = 0; h < 2; h++)
                            for (int rr = 0; rr < 2; rr++)
                                for (int hi = 0; hi < 2; hi++)
                                    for (int e = 0; e < 2; e++) {
                                        const int r = r0 + 8 * rr, kk = 32 * gg + 16 * h + 2 * c + 8 * hi + e;
                                        const int val = r < n ? p.q[(size_t)r * k + kk] : 0;
                                        if (p.qb == 8) {
                                            o[8 * h + 4 * rr + 2 * hi + e] = (unsigned char)(val + 128);
                                        } else { /* word h, pair j = 2 hi + rr at nibbles j and j + 4 */
                                            const int nib = (2 * hi + rr) + 4 * e, u = p.qb == 4 ? val + 8 : r < n ? val : 32;
                                            unsigned char &b = o[4 * h + nib / 2];
                                            b = (unsigned char)((b & ~(0xF << (4 * (nib & 1)))) | ((u & 0xF) << (4 * (nib & 1))));
                                            if (p.qb == 6) { /* the high 2 bits at bit 2 (8 h + nib) of the lane's word */
                                                const int bit = 2 * (8 * h + nib);
                                                unsigned char &hb = oh[bit / 8];
                                                hb = (unsigned char)((hb & ~(3 << (bit % 8))) | ((u >> 4) << (bit % 8)));
                                            }
                                        }
                                    }
                    }
    for (int r = 0; r < n; r++)
        for (int gg = 0; gg < G; gg++) {
            unsigned short bits;
            if (p.qb == 6) { /* [group][half][row] int8 within the group's 256 bytes */
                unsigned char *sb6 = reinterpret_cast<unsigned char *>(&p.scales[((size_t)(r / BM) * G + gg) * BM]);
                sb6[r % BM] = (unsigned char)p.s6[(size_t)r * (k / 16) + 2 * gg];
                sb6[BM + r % BM] = (unsigned char)p.s6[(size_t)r * (k / 16) + 2 * gg + 1];
                continue;
            }
            if (p.qb == 5) bits = (unsigned short)(p.sc[(size_t)r * G + gg] | p.mn[(size_t)r * G + gg] << 8);
            else memcpy(&bits, &p.d[(size_t)r * G + gg], 2);
            p.scales[((size_t)(r / BM) * G + gg) * BM + r % BM] = bits;
        }
    if (p.qb == 5 || p.qb == 6)
        for (int r = 0; r < n; r++)
            for (int b = 0; b < SB; b++) {
                unsigned short d0, d1 = 0;
                memcpy(&d0, &p.kd[(size_t)r * SB + b], 2);
                if (p.qb == 5) memcpy(&d1, &p.kdm[(size_t)r * SB + b], 2);
                p.dd[((size_t)(r / BM) * SB + b) * BM + r % BM] = (uint32_t)d0 | (uint32_t)d1 << 16;
            }
    /* the f16 mirror's operands, for cuBLAS and the reference */
    p.wf16.resize((size_t)n * k);
    for (int r = 0; r < n; r++)
        for (int kk = 0; kk < k; kk++) {
            float w;
            if (p.qb == 6) { /* the f16 mirror's Q6_K decoder: (d sc) (u - 32) in f32, then f16 */
                const float e = __half2float(p.kd[(size_t)r * SB + kk / 256]) * (float)p.s6[(size_t)r * (k / 16) + kk / 16];
                w = e * (float)(p.q[(size_t)r * k + kk] - 32);
            } else if (p.qb == 5) { /* the f16 mirror's Q4_K decoder: d1 u - m1 in f32 (one FMA), then f16 */
                const float d1 = __half2float(p.kd[(size_t)r * SB + kk / 256]) * (float)p.sc[(size_t)r * G + kk / 32];
                const float m1 = __half2float(p.kdm[(size_t)r * SB + kk / 256]) * (float)p.mn[(size_t)r * G + kk / 32];
                w = fmaf(d1, (float)p.q[(size_t)r * k + kk], -m1);
            } else
                w = (float)p.q[(size_t)r * k + kk] * __half2float(p.d[(size_t)r * G + kk / 32]);
            p.wf16[(size_t)r * k + kk] = __float2half(w);
        }
    build_x(p);
}

struct Dev {
    unsigned char *codes; unsigned short *scales; uint32_t *dd; __half *x16, *wf16, *xf16; float *x, *y, *yc, *part;
};
static void upload(const Problem &p, Dev &d, int zmax)
{
    CK(cudaMalloc(&d.codes, p.codes.size()));
    CK(cudaMalloc(&d.scales, p.scales.size() * 2));
    CK(cudaMalloc(&d.dd, p.dd.size() * 4 + 16));
    if (!p.dd.empty()) CK(cudaMemcpy(d.dd, p.dd.data(), p.dd.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&d.x16, (size_t)p.mp * p.k * 2));
    CK(cudaMalloc(&d.x, p.x.size() * 4));
    CK(cudaMalloc(&d.wf16, p.wf16.size() * 2));
    CK(cudaMalloc(&d.xf16, p.xf16.size() * 2));
    CK(cudaMalloc(&d.y, (size_t)p.m * p.n * 4));
    CK(cudaMalloc(&d.yc, (size_t)p.m * p.n * 4));
    CK(cudaMalloc(&d.part, (size_t)p.m * p.n * 4 * (zmax > 1 ? zmax : 1))); /* split-k's slices */
    CK(cudaMemcpy(d.codes, p.codes.data(), p.codes.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.scales, p.scales.data(), p.scales.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.x, p.x.data(), p.x.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.wf16, p.wf16.data(), p.wf16.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.xf16, p.xf16.data(), p.xf16.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(d.y, 0xFF, (size_t)p.m * p.n * 4)); /* NaN: an output never written shows */
}
static void release(Dev &d)
{
    cudaFree(d.codes); cudaFree(d.scales); cudaFree(d.dd); cudaFree(d.x16); cudaFree(d.x); cudaFree(d.wf16); cudaFree(d.xf16);
    cudaFree(d.y); cudaFree(d.yc); cudaFree(d.part);
}
static void pass(const Problem &p, const Dev &d, cudaStream_t s)
{
    const long long chunks = (long long)p.mp * p.k / 8;
    k_x16<<<(unsigned)((chunks + 255) / 256), 256, 0, s>>>(d.x, d.x16, p.m, p.k, p.mp, p.bn);
}
/* split-k where the grid is short of the SMs: slices until every SM has a CTA, each slice at least 8 steps, at most
 * 16 slices */
static int slices_for(const Problem &p, int sms)
{
    const int ctas = ((p.m + p.bn - 1) / p.bn) * (p.np / BM), nst = p.k / BK;
    int z = 1;
    while (ctas * z < sms && z < 16 && nst / (z + 1) >= 8) z++;
    return z;
}
static void launch(const Problem &p, const Dev &d, cudaStream_t s, int Z = 1)
{
    dim3 grid((p.m + p.bn - 1) / p.bn, p.np / BM, Z);
#define W16_GO(Q, B) k_w16gemm<Q, B><<<grid, 384, SMEM, s>>>(d.codes, d.scales, d.dd, d.x16, d.y, p.m, p.n, p.k, p.n, d.part)
    if (p.bn == 256) {
        if (p.qb == 8) W16_GO(8, 256);
        else if (p.qb == 4) W16_GO(4, 256);
        else if (p.qb == 6) W16_GO(6, 256);
        else W16_GO(5, 256);
    } else {
        if (p.qb == 8) W16_GO(8, 128);
        else if (p.qb == 4) W16_GO(4, 128);
        else if (p.qb == 6) W16_GO(6, 128);
        else W16_GO(5, 128);
    }
#undef W16_GO
    if (Z > 1) {
        const long long total = (long long)p.m * p.n;
        k_sum<<<(unsigned)((total + 255) / 256), 256, 0, s>>>(d.part, d.y, p.m, p.n, Z);
    }
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
static const char *fmt_name(int qb) { return qb == 8 ? "Q8_0" : qb == 4 ? "Q4_0" : qb == 5 ? "Q4_K" : "Q6_K"; }
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
    printf("check %s m %d n %d k %d: %ld of %ld outputs outside the band, worst |y - ref| / sum|terms| %.3g\n", fmt_name(p.qb),
           p.m, p.n, p.k, bad, (long)p.m * p.n, worst);
    return bad == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const bool check_only = argc > 1 && strcmp(argv[1], "check") == 0; /* for compute-sanitizer */
    /* else argv[1], if given: the receipt's path (JSON: every call's time, per format, m and shape) */
    FILE *jf = !check_only && argc > 1 ? fopen(argv[1], "w") : nullptr;
    if (!check_only && argc > 1 && jf == nullptr) { fprintf(stderr, "w16gemm: cannot write %s\n", argv[1]); return 1; }
#define W16_ATTR(Q, B) CK(cudaFuncSetAttribute(k_w16gemm<Q, B>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM))
    W16_ATTR(8, 256); W16_ATTR(4, 256); W16_ATTR(5, 256); W16_ATTR(6, 256);
    W16_ATTR(8, 128); W16_ATTR(4, 128); W16_ATTR(5, 128); W16_ATTR(6, 128);
#undef W16_ATTR
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
    int fails = 0;
    for (int qb : {8, 4, 5, 6}) {
        Problem p; p.m = 300; p.n = 200; p.k = 1024; p.qb = qb;
        build(p);
        Dev d; upload(p, d, 3);
        for (int bn : {256, 128}) {
            p.bn = bn;
            pass(p, d, 0);
            for (int Z : {1, 3}) { /* unsplit, and 16 steps over 3 slices (5, 5, 6) */
                CK(cudaMemset(d.y, 0xFF, (size_t)p.m * p.n * 4));
                launch(p, d, 0, Z);
                CK(cudaGetLastError());
                CK(cudaDeviceSynchronize());
                printf("tile %d, split %d: ", bn, Z);
                fails += check(p, d);
            }
        }
        release(d);
    }
    if (fails) { printf("FAILED: not timing\n"); return 1; }
    if (check_only) return 0;
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "w16gemm: cublasCreate failed\n"); return 1; }
    const int shapes[6][2] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    /* L2 flushed before each call alone: a 256 MB write between calls, outside the timed interval */
    unsigned char *flush;
    const size_t flush_bytes = (size_t)256 << 20;
    CK(cudaMalloc(&flush, flush_bytes));
    printf("arms, interleaved, 20 calls each, medians: w16 (the tile on ready x16), lane (the activations' pass, then the\n"
           "tile), cuBLAS (f16 GEMM on the dequantised weights and f16 x, both ready); each call alone with L2 flushed,\n"
           "and (b2b) 8 calls back to back, the time over 8\n");
    printf("%-5s %-6s %-14s %9s %9s %10s %9s %9s %9s %9s %9s\n", "fmt", "m", "shape", "w16 us", "lane us", "cublas us",
           "w16 TF/s", "w16/cub", "lane/cub", "b2b w/c", "b2b l/c");
    if (jf) fprintf(jf, "{\"device\":\"%s\",\"sms\":%d,\"rows\":[", prop.name, prop.multiProcessorCount);
    bool first_row = true;
    for (int qb : {8, 4, 5, 6})
        for (auto &sh : shapes) {
            Problem p; p.m = 512; p.k = sh[0]; p.n = sh[1]; p.qb = qb;
            build(p); /* the weights once a shape; the activations at each m */
            for (int mi = 0; mi < 2; mi++) {
                const int m = mi ? 4096 : 512;
                p.m = m;
                if (mi) build_x(p);
                /* the token tile: 128 where 256 would leave the last wave under 80% full (m = 512: 2 x n / 128
                 * CTAs), else 256 */
                {
                    const int sms = prop.multiProcessorCount;
                    const long long c256 = (long long)((m + 255) / 256) * (p.np / BM);
                    const long long waves = (c256 + sms - 1) / sms;
                    p.bn = (double)c256 / (double)(waves * sms) < 0.8 && m <= 2048 ? 128 : 256;
                }
                const int Z = slices_for(p, prop.multiProcessorCount);
                Dev d; upload(p, d, Z);
                std::vector<float> t[2][3]; /* [alone, back to back][w16, lane, cuBLAS] */
                for (int rep = -2; rep < 20; rep++)
                    for (int mode = 0; mode < 2; mode++)
                        for (int arm = 0; arm < 3; arm++) {
                            const int a = (arm + rep + 3) % 3, calls = mode ? 8 : 1;
                            if (mode == 0) CK(cudaMemsetAsync(flush, rep & 0xFF, flush_bytes));
                            CK(cudaEventRecord(e0));
                            for (int c = 0; c < calls; c++) {
                                if (a == 0) launch(p, d, 0, Z);
                                else if (a == 1) { pass(p, d, 0); launch(p, d, 0, Z); }
                                else cublas_ref(h, p, d);
                            }
                            CK(cudaEventRecord(e1));
                            CK(cudaEventSynchronize(e1));
                            float ms;
                            CK(cudaEventElapsedTime(&ms, e0, e1));
                            if (rep >= 0) t[mode][a].push_back(ms / calls);
                        }
                CK(cudaGetLastError());
                std::vector<float> raw[2][3];
                for (int mode = 0; mode < 2; mode++)
                    for (int a = 0; a < 3; a++) {
                        raw[mode][a] = t[mode][a];
                        std::sort(t[mode][a].begin(), t[mode][a].end());
                    }
                const std::vector<float> &tw = t[0][0], &tl = t[0][1], &tc = t[0][2];
                /* the two arms agree: max |y - yc| / max |yc| */
                std::vector<float> y((size_t)m * p.n), yc((size_t)m * p.n);
                CK(cudaMemcpy(y.data(), d.y, y.size() * 4, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(yc.data(), d.yc, yc.size() * 4, cudaMemcpyDeviceToHost));
                double md = 0, mx = 0;
                for (size_t i = 0; i < y.size(); i++) { md = std::max(md, (double)fabsf(y[i] - yc[i])); mx = std::max(mx, (double)fabsf(yc[i])); }
                const double fl = 2.0 * m * p.n * p.k, w = tw[tw.size() / 2] * 1e3, ln = tl[tl.size() / 2] * 1e3,
                             cb = tc[tc.size() / 2] * 1e3;
                char nm[32];
                snprintf(nm, sizeof nm, "%d->%d", p.k, p.n);
                const double bw = t[1][0][10] * 1e3, bl = t[1][1][10] * 1e3, bc = t[1][2][10] * 1e3;
                printf("%-5s %-6d %-14s %9.1f %9.1f %10.1f %9.1f %9.3f %9.3f %9.3f %9.3f   agree %.2g  tile %d split %d\n",
                       fmt_name(qb), m, nm, w, ln, cb, fl / w * 1e-6, cb / w, cb / ln, bc / bw, bc / bl,
                       md / (mx > 0 ? mx : 1), p.bn, Z);
                if (jf) {
                    fprintf(jf, "%s{\"format\":\"%s\",\"m\":%d,\"in_f\":%d,\"out_f\":%d,\"tile\":%d,\"split\":%d,"
                                "\"agree\":%.6g", first_row ? "" : ",", fmt_name(qb), m, p.k, p.n, p.bn, Z,
                            md / (mx > 0 ? mx : 1));
                    static const char *const an[3] = {"w16", "lane", "cublas"};
                    for (int mode = 0; mode < 2; mode++)
                        for (int a = 0; a < 3; a++) {
                            fprintf(jf, ",\"%s_%s_median_us\":%.3f,\"%s_%s_us\":[", an[a], mode ? "b2b" : "alone",
                                    t[mode][a][10] * 1e3, an[a], mode ? "b2b" : "alone");
                            for (size_t i = 0; i < raw[mode][a].size(); i++)
                                fprintf(jf, "%s%.3f", i ? "," : "", raw[mode][a][i] * 1e3);
                            fprintf(jf, "]");
                        }
                    fprintf(jf, "}");
                    first_row = false;
                }
                release(d);
            }
        }
    if (jf) {
        fprintf(jf, "]}\n");
        fclose(jf);
    }
    cudaFree(flush);
    cublasDestroy(h);
    return 0;
}
