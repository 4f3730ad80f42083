/* memra_stream_reserve's walk over the row counts (core/weights/weight.c): the
 * calls of a weight run at m_max, then at each m this returns, down to 1. Every
 * m up to MEMRA__RESERVE_DENSE_M (the sizes engines capture most, and where the
 * plans switch most: gemm_q8_0r's model picks between its warpgroup tile and
 * the records tiles there, and a split at an m between two steps can ask more
 * than both); above it steps of 1/32 of m (the lanes' plans change slowly
 * there) and every power of two on the way, where lanes switch plans
 * (gemm_q8_0r's warpgroup tile from 1024 tokens, MMQ_WG_AUTO_M). weight.c walks
 * once per kind of weight (format, shape, operands), so the dense part costs
 * one call per m for each distinct shape of a model. A leaf: <stdint.h> only. */
#ifndef MEMRA_CORE_WEIGHTS_RESERVE_WALK_H
#define MEMRA_CORE_WEIGHTS_RESERVE_WALK_H

#include <stdint.h>

#define MEMRA__RESERVE_DENSE_M 1024 /* a power of two */

/* the m after m in the walk (0 after 1) */
static inline int32_t memra__reserve_next_m(int32_t m)
{
    if (m <= MEMRA__RESERVE_DENSE_M) return m - 1;
    const int32_t step = m - m / 32 > MEMRA__RESERVE_DENSE_M ? m - m / 32 : MEMRA__RESERVE_DENSE_M;
    int32_t p = MEMRA__RESERVE_DENSE_M; /* the largest power of two below m */
    while (p <= (m - 1) / 2) p *= 2;
    return p > step ? p : step;
}

#endif
