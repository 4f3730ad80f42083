/* The block formats' shared rules, used by the core's encoders and decoders
 * (core/weights/formats.c) and by the host reference module (modules/host), so both
 * round and unpack alike. Not exported (memra__ names). Pure functions:
 * thread-safe, no status. */
#ifndef MEMRA_BASE_QUANT_H
#define MEMRA_BASE_QUANT_H

#include <stdint.h>

/* roundf(v) (ties away from zero) as int8 after clamping v to [-lim, lim];
 * NaN gives 0. lim <= 127. The one int8 rounding rule of Q8_0 and q8_1. */
int8_t memra__round_i8(float v, float lim);

/* The 6-bit scale and min of sub-block `sub` (0..7) from the 12 packed bytes
 * of a Q4_K / Q5_K super-block (GGML's get_scale_min_k4). */
void memra__k4_scale_min(const uint8_t *scales, int sub, uint8_t *out_sc, uint8_t *out_m);

#endif
