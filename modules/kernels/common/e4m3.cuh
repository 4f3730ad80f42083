/* OCP e4m3 (E4M3FN) on the device, bit-exact with the host's memra_e4m3_encode
 * and memra_e4m3_decode (core/formats.c): bias 7, no infinity, magnitude 0x7F
 * is NaN, max finite 448, denormals m * 2^-9.
 *
 * The encoder is written out rather than taken from cuda_fp8.h so that its
 * rounding is visible here: round to nearest even, saturate to +-448 (so
 * infinities and anything above 448 give 0x7E with the sign), NaN gives 0x7F
 * with the sign kept. Checked against the host encoder for all 2^32 f32 bit
 * patterns (and the decoder for all 256 codes) by compiling this header for the
 * CPU. */
#ifndef MEMRA_CUDA_E4M3_CUH
#define MEMRA_CUDA_E4M3_CUH

__device__ __forceinline__ float memra_e4m3_decode(unsigned int c)
{
    unsigned int e = (c >> 3) & 15u, mt = c & 7u;
    float v;
    if ((c & 0x7Fu) == 0x7Fu)
        v = __uint_as_float(0x7FC00000u);
    else if (e == 0)
        v = (float)mt * 0.001953125f; /* m * 2^-9, exact */
    else
        v = __uint_as_float(((e + 120u) << 23) | (mt << 20)); /* (1 + m/8) * 2^(e-7) */
    return (c & 0x80u) ? -v : v;
}

__device__ __forceinline__ unsigned int memra_e4m3_encode(float f)
{
    unsigned int u = __float_as_uint(f);
    unsigned int sign = (u >> 24) & 0x80u;
    unsigned int a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7Fu; /* NaN */
    if (a > 0x43E00000u) return sign | 0x7Eu; /* above 448, infinities: saturate */
    if (a < 0x3C800000u) {                    /* below 2^-6: e4m3 denormal m * 2^-9 */
        /* a * 512 is exact; rintf rounds half to even; 8 is the code of 2^-6. */
        return sign | (unsigned int)rintf(__uint_as_float(a) * 512.0f);
    }
    unsigned int exp = (a >> 23) - 120u; /* e4m3 biased exponent, 1..15 */
    unsigned int mant = a & 0x7FFFFFu;
    unsigned int r = mant >> 20, rem = mant & 0xFFFFFu;
    if (rem > 0x80000u || (rem == 0x80000u && (r & 1u))) r++;
    /* A carry out of the 3 mantissa bits lands in the exponent, as it should;
     * a <= 448 keeps the code at or below 0x7E. */
    return sign | ((exp << 3) + r);
}

/* x / s, bit-identical to __fdiv_rn(x, s), given y = __frcp_rn(s) for
 * 2^-96 <= s <= 2^96 and y = 0 otherwise (see the header). The correction
 * runs while x and the first quotient x y lie in [2^-96, 2^96]; outside it
 * (tiny values, and a quotient that overflows, which a static scale far below
 * |x| gives: inf - inf would make a NaN of it) the division itself. */
__device__ __forceinline__ float memra_div_y(float x, float s, float y)
{
    const float q0 = __fmul_rn(x, y);
    if (fabsf(x) >= 0x1p-96f && fabsf(q0) >= 0x1p-96f && fabsf(q0) <= 0x1p96f) return __fmaf_rn(__fmaf_rn(-q0, s, x), y, q0);
    return __fdiv_rn(x, s);
}

/* memra_div_y of four values at one scale: the same quotients, with the
 * reciprocal sequence's range test taken once for the four (a lane's float4)
 * instead of once per value; any of them outside it sends all four through
 * memra_div_y. */
__device__ __forceinline__ float4 memra_div4_y(float4 v, float s, float y)
{
    const float4 q = make_float4(__fmul_rn(v.x, y), __fmul_rn(v.y, y), __fmul_rn(v.z, y), __fmul_rn(v.w, y));
    const float mx = fminf(fminf(fabsf(v.x), fabsf(v.y)), fminf(fabsf(v.z), fabsf(v.w)));
    const float mq = fminf(fminf(fabsf(q.x), fabsf(q.y)), fminf(fabsf(q.z), fabsf(q.w)));
    const float bq = fmaxf(fmaxf(fabsf(q.x), fabsf(q.y)), fmaxf(fabsf(q.z), fabsf(q.w)));
    if (fminf(mx, mq) >= 0x1p-96f && bq <= 0x1p96f)
        return make_float4(__fmaf_rn(__fmaf_rn(-q.x, s, v.x), y, q.x), __fmaf_rn(__fmaf_rn(-q.y, s, v.y), y, q.y),
                           __fmaf_rn(__fmaf_rn(-q.z, s, v.z), y, q.z), __fmaf_rn(__fmaf_rn(-q.w, s, v.w), y, q.w));
    return make_float4(memra_div_y(v.x, s, y), memra_div_y(v.y, s, y), memra_div_y(v.z, s, y), memra_div_y(v.w, s, y));
}

/* memra_e4m3_encode (e4m3.cuh) without branches: the same code for every f32
 * (checked on the CPU against it for all 2^32 bit patterns). Normal range: the
 * mantissa rounded to 3 bits by adding 0x7FFFF plus the kept lsb (ties to
 * even); below 2^-6 the same rint(|f| * 512); the selects then take saturation
 * and NaN as the original does. */
__device__ __forceinline__ unsigned int memra_e4m3_encode_sel(float f)
{
    const unsigned int u = __float_as_uint(f);
    const unsigned int sign = (u >> 24) & 0x80u;
    const unsigned int a = u & 0x7FFFFFFFu;
    /* normal e4m3 (2^-6 <= |f| <= 448): round the f32 mantissa to 3 bits, ties to even */
    const unsigned int nrm = ((a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20) - (120u << 3);
    /* e4m3 denormal (|f| < 2^-6): m * 2^-9 with m = rint(|f| * 512), half to even. |f| * 512 < 8,
     * so one FFMA adding 2^23 rounds it to an integer (the f32 ulp there is 1) and the low bits
     * are m: a full-rate FFMA and IADD instead of the quarter-rate F2I */
    const unsigned int den = __float_as_uint(__fmaf_rn(__uint_as_float(a), 512.0f, 8388608.0f)) - 0x4B000000u;
    unsigned int c = a < 0x3C800000u ? den : nrm;
    c = a > 0x43E00000u ? 0x7Eu : c;
    c = a > 0x7F800000u ? 0x7Fu : c;
    return sign | c;
}

/* Four f32 values (already divided by their scale) as four e4m3 codes, a in the
 * low byte: the code memra_e4m3_encode_sel gives for each. From sm_89 the
 * hardware conversion cvt.rn.satfinite.e4m3x2.f32 (two values per instruction:
 * round to nearest even, e4m3 denormals, saturation to +-448 for finite values
 * and infinities, as the encoder) does it; a NaN among the four (caught by
 * their sum, which is also NaN for inf - inf) takes the encoder for all four,
 * since the encoder keeps a NaN's sign and the conversion need not. Checked
 * against memra_e4m3_encode for all 2^32 f32 patterns on the device by
 * test_e4m3_hw. MEMRA_E4M3_SOFT forces the encoder. */
__device__ __forceinline__ unsigned int memra_e4m3_pack4(float a, float b, float c, float d)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(MEMRA_E4M3_SOFT)
    if (!isnan((a + b) + (c + d))) {
        unsigned short lo, hi;
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(b), "f"(a)); /* b high, a low */
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(d), "f"(c));
        return (unsigned int)lo | ((unsigned int)hi << 16);
    }
#endif
    return memra_e4m3_encode_sel(a) | (memra_e4m3_encode_sel(b) << 8) | (memra_e4m3_encode_sel(c) << 16) |
           (memra_e4m3_encode_sel(d) << 24);
}

__device__ __forceinline__ unsigned int memra_e4m3_pack4f(float4 v) { return memra_e4m3_pack4(v.x, v.y, v.z, v.w); }

#ifndef MEMRA_E4M3_ENCODERS_ONLY /* (the host test of the encoders includes the part above alone) */

/* The per-row-per-128 activation quantiser of both block-128 lanes, one warp
 * per MEMRA_ROW128_U consecutive (row, 128-column block) items (items in row
 * order: item r * kb + b), every load issued before any is used, so that a warp
 * keeps U x 512 bytes in flight: s = amax / 448 (1 when amax == 0; IEEE
 * division), q = e4m3(x / s) (the reciprocal sequence memra_div_y, bit-identical
 * to __fdiv_rn; the branch-free encoder), s stored at s[b * ld_s + r]. Rows m ..
 * m_pad - 1 read as zeros (q = 0, s = 1). Needs k % 4 == 0 and x 16-byte
 * aligned (a lane reads one float4 per item), q 4-byte aligned. */
#ifndef MEMRA_ROW128_U
#define MEMRA_ROW128_U 4 /* = kernels.h, which the launchers read */
#endif
/* The rows and first columns of a warp's U items item0, item0 + 1, ... (item r * kb +
 * b; U = MEMRA_ROW128_U unless a caller names another): one division per warp, then a
 * step per item (kb may be smaller than the item count, hence the loop), in 32 bits
 * while the item index fits. */
template <int U = MEMRA_ROW128_U>
__device__ __forceinline__ void memra_row128_items(long long item0, int kb, int lane, int *row, int *col)
{
    int r, b;
    if (item0 < 0x7FFFFFFFLL) {
        r = (int)((unsigned)item0 / (unsigned)kb);
        b = (int)((unsigned)item0 - (unsigned)r * (unsigned)kb);
    } else {
        r = (int)(item0 / kb);
        b = (int)(item0 - (long long)r * kb);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        row[u] = r;
        col[u] = b * 128 + lane * 4;
        for (b++; b >= kb; b -= kb) r++;
    }
}

/* memra_row128_quant with the source rows gathered: row r of q and s (r < m)
 * quantises x row src[r] (src == nullptr: row r itself, which is what
 * memra_row128_quant passes, so its code is unchanged). The same arithmetic
 * on the same values: bit for bit what memra_row128_quant writes for that x
 * row, at row r. gemm_experts (fp8blk) writes its activation in expert order
 * this way. U: the warp's items (MEMRA_ROW128_U unless the caller names another;
 * each item's arithmetic is the same whatever U). */
template <int U = MEMRA_ROW128_U>
__device__ __forceinline__ void memra_row128_quant_rows(const float *__restrict__ x, const int *__restrict__ src,
                                                        int m, int m_pad, int k, unsigned char *__restrict__ q,
                                                        float *__restrict__ s, long long ld_s, long long item0)
{
    const int kb = (k + 127) / 128, lane = threadIdx.x & 31;
    const long long items = (long long)m_pad * kb;
    float4 v[U];
    int row[U], col[U];
    memra_row128_items<U>(item0, kb, lane, row, col);
#pragma unroll
    for (int u = 0; u < U; u++) {
        const long long it = item0 + u;
        v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (it < items && row[u] < m && col[u] < k) {
            const long long xr = src != nullptr ? (long long)__ldg(src + row[u]) : (long long)row[u];
            v[u] = __ldcs(reinterpret_cast<const float4 *>(x + xr * k + col[u]));
        }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const long long it = item0 + u;
        float a = fmaxf(fmaxf(fabsf(v[u].x), fabsf(v[u].y)), fmaxf(fabsf(v[u].z), fabsf(v[u].w)));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xFFFFFFFFu, a, o));
        if (it >= items) continue; /* the whole warp agrees: `it` is per warp */
        const float sc = a > 0.0f ? memra_div_y(a, 448.0f, 0x1.24924ap-9f /* __frcp_rn(448) */) : 1.0f;
        const float y = sc >= 0x1p-96f && sc <= 0x1p96f ? __frcp_rn(sc) : 0.0f;
        if (col[u] < k)
            *reinterpret_cast<unsigned int *>(q + (long long)row[u] * k + col[u]) =
                memra_e4m3_pack4f(memra_div4_y(v[u], sc, y));
        if (lane == 0) s[(long long)(col[u] / 128) * ld_s + row[u]] = sc;
    }
}

__device__ __forceinline__ void memra_row128_quant(const float *__restrict__ x, int m, int m_pad, int k,
                                                   unsigned char *__restrict__ q, float *__restrict__ s, long long ld_s,
                                                   long long item0)
{
    memra_row128_quant_rows(x, nullptr, m, m_pad, k, q, s, ld_s, item0);
}

/* memra_row128_quant_given with the source rows gathered (src as in
 * memra_row128_quant_rows; amax, when given, is read at the output row r). */
__device__ __forceinline__ void memra_row128_quant_given_rows(const float *__restrict__ x,
                                                              const int *__restrict__ src, int m, int m_pad, int k,
                                                              unsigned char *__restrict__ q, float *__restrict__ s,
                                                              long long ld_s, long long item0,
                                                              const float *__restrict__ amax, long long ld_a,
                                                              float s_static)
{
    const int kb = (k + 127) / 128, lane = threadIdx.x & 31;
    const long long items = (long long)m_pad * kb;
    float4 v[MEMRA_ROW128_U];
    int row[MEMRA_ROW128_U], col[MEMRA_ROW128_U];
    float sc[MEMRA_ROW128_U];
    memra_row128_items(item0, kb, lane, row, col);
#pragma unroll
    for (int u = 0; u < MEMRA_ROW128_U; u++) {
        const long long it = item0 + u;
        const int blk = col[u] / 128;
        v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        sc[u] = 1.0f;
        if (it < items && row[u] < m) {
            if (col[u] < k) {
                const long long xr = src != nullptr ? (long long)__ldg(src + row[u]) : (long long)row[u];
                v[u] = __ldcs(reinterpret_cast<const float4 *>(x + xr * k + col[u]));
            }
            if (amax != nullptr) {
                const float a = __ldg(amax + (long long)blk * ld_a + row[u]);
                sc[u] = a > 0.0f ? memra_div_y(a, 448.0f, 0x1.24924ap-9f /* __frcp_rn(448) */) : 1.0f;
            } else {
                sc[u] = s_static;
            }
        }
    }
#pragma unroll
    for (int u = 0; u < MEMRA_ROW128_U; u++) {
        const long long it = item0 + u;
        if (it >= items) continue;
        const float c = sc[u];
        const float y = c >= 0x1p-96f && c <= 0x1p96f ? __frcp_rn(c) : 0.0f;
        if (col[u] < k)
            *reinterpret_cast<unsigned int *>(q + (long long)row[u] * k + col[u]) =
                memra_e4m3_pack4f(memra_div4_y(v[u], c, y));
        if (lane == 0) s[(long long)(col[u] / 128) * ld_s + row[u]] = c;
    }
}

/* memra_row128_quant at given scales, one pass with no reduction (DESIGN.md,
 * "Activation scales"): amax != NULL: the producer's maxima, row r's block b at
 * amax[b * ld_a + r], s = amax > 0 ? amax / 448 : 1 (IEEE division); else the
 * static scale s_static for every block. q = e4m3(x / s) as above (values
 * above 448 s saturate), s stored at s[b * ld_s + r]; rows m .. m_pad - 1 get
 * q = 0, s = 1. Same preconditions as memra_row128_quant. */
__device__ __forceinline__ void memra_row128_quant_given(const float *__restrict__ x, int m, int m_pad, int k,
                                                         unsigned char *__restrict__ q, float *__restrict__ s,
                                                         long long ld_s, long long item0,
                                                         const float *__restrict__ amax, long long ld_a,
                                                         float s_static)
{
    memra_row128_quant_given_rows(x, nullptr, m, m_pad, k, q, s, ld_s, item0, amax, ld_a, s_static);
}

#endif /* MEMRA_E4M3_ENCODERS_ONLY */

#endif
