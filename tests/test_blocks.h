/* Random weight blocks for the tests that need a quantised weight's bytes
 * without a reference encoder: random codes with small positive f16 scales. */
#ifndef MEMRA_TEST_BLOCKS_H
#define MEMRA_TEST_BLOCKS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "memra/formats.h"
#include "test.h"

/* bytes of Q8_0, Q4_0, Q4_K, Q5_K or Q6_K blocks: every byte random, then each
 * block's f16 d (and dmin for Q4_K / Q5_K) set to a small positive value, so
 * that the decoded weights are finite and of a modest size. */
static inline void test_fill_quant_blocks(uint64_t *rng, memra_format f, uint8_t *out, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++) out[i] = (uint8_t)test_rand_u64(rng);
    const size_t bb = (size_t)memra_format_block_bytes(f), nb = bytes / bb;
    for (size_t b = 0; b < nb; b++) {
        uint8_t *p = out + b * bb;
        const uint16_t dd = memra_f16_from_f32(0.01f + 0.01f * fabsf(test_rand_f32(rng)));
        const uint16_t dm = memra_f16_from_f32(0.005f * fabsf(test_rand_f32(rng)));
        if (f == MEMRA_FORMAT_Q6_K) {
            p[208] = (uint8_t)dd, p[209] = (uint8_t)(dd >> 8);
        } else if (f == MEMRA_FORMAT_Q4_0 || f == MEMRA_FORMAT_Q8_0) {
            p[0] = (uint8_t)dd, p[1] = (uint8_t)(dd >> 8);
        } else {
            p[0] = (uint8_t)dd, p[1] = (uint8_t)(dd >> 8), p[2] = (uint8_t)dm, p[3] = (uint8_t)(dm >> 8);
        }
    }
}

#endif
