/* memra_stream_reserve's walk over the row counts (core/weights/weight.c): the
 * calls of a weight run at m_max, then at each m this returns, down to 1. Every
 * m up to 256; above 256 steps of 1/32 of m (the lanes' plans change slowly
 * there) and every power of two on the way, where lanes switch plans
 * (gemm_q8_0r's warpgroup tile from 1024 tokens, mmq.h MMQ_WG_AUTO_M: the
 * walk from 4096 without them went 1056 -> 1023, so a capture at 1024 ran on
 * scratch that no reserved call had asked for at that plan). A leaf: <stdint.h> only. */
#ifndef MEMRA_CORE_WEIGHTS_RESERVE_WALK_H
#define MEMRA_CORE_WEIGHTS_RESERVE_WALK_H

#include <stdint.h>

/* the m after m in the walk (0 after 1) */
static inline int32_t memra__reserve_next_m(int32_t m)
{
    if (m <= 256) return m - 1;
    const int32_t step = m - m / 32 > 256 ? m - m / 32 : 256;
    int32_t p = 256; /* the largest power of two below m */
    while (p <= (m - 1) / 2) p *= 2;
    return p > step ? p : step;
}

#endif
