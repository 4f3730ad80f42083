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

#endif
