/* The block formats' shared rounding and unpacking rules (see quant.h). */
#include "base/quant.h"

#include <math.h>

int8_t memra__round_i8(float v, float lim)
{
    if (v != v) return 0; /* NaN */
    if (v > lim) v = lim;
    if (v < -lim) v = -lim;
    return (int8_t)roundf(v);
}

void memra__k4_scale_min(const uint8_t *scales, int sub, uint8_t *out_sc, uint8_t *out_m)
{
    /* 8 sub-blocks, each a 6-bit scale and a 6-bit min in 12 bytes:
     * bytes 0..3  : sc[0..3] in bits 0..5, bits 4..5 of sc[4..7] in bits 6..7
     * bytes 4..7  : m[0..3]  in bits 0..5, bits 4..5 of m[4..7]  in bits 6..7
     * bytes 8..11 : bits 0..3 of sc[4..7] in the low nibble, of m[4..7] in the high. */
    if (sub < 4) {
        *out_sc = scales[sub] & 63;
        *out_m = scales[sub + 4] & 63;
    } else {
        *out_sc = (uint8_t)((scales[sub + 4] & 0x0F) | ((scales[sub - 4] >> 6) << 4));
        *out_m = (uint8_t)((scales[sub + 4] >> 4) | ((scales[sub] >> 6) << 4));
    }
}
