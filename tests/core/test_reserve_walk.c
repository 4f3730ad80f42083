/* memra_stream_reserve's walk over the row counts (core/weights/reserve_walk.h)
 * from fixed and fresh random m_max: strictly decreasing to 1; every m up to
 * MEMRA__RESERVE_DENSE_M (1024) and every power of two below m_max visited
 * (gemm_q8_0r switches to its warpgroup tile at 1024: from 4096, 1058 and 1026
 * the walk must stop there, where an older walk went 1056 -> 1023, 1058 -> 1025
 * -> 993 and 1026 -> 994); above 1024 no step longer than m / 32 (the spacing
 * the plans were judged at); the walk's length within 1024 + 40 log2(m_max)
 * calls. */
#include <math.h>
#include <stdio.h>

#include "core/weights/reserve_walk.h"
#include "test.h"

static int walk(int32_t m_max)
{
    int32_t m = m_max, n = 0, pow_seen = 0;
    int ok = 1;
    int32_t want_pow = 1; /* the powers of two below m_max, largest first */
    while (want_pow <= (m_max - 1) / 2) want_pow *= 2;
    while (m >= 1) {
        n++;
        const int32_t next = memra__reserve_next_m(m);
        if (next >= m || next < 0) {
            printf("m_max %d: %d -> %d does not go down  FAIL\n", (int)m_max, (int)m, (int)next);
            return 0;
        }
        if (m <= MEMRA__RESERVE_DENSE_M && next != m - 1)
            ok = 0, printf("m_max %d: %d -> %d skips below %d  FAIL\n", (int)m_max, (int)m, (int)next, MEMRA__RESERVE_DENSE_M);
        if (m > MEMRA__RESERVE_DENSE_M && m - next > (m / 32 > 1 ? m / 32 : 1))
            ok = 0, printf("m_max %d: %d -> %d steps more than m / 32  FAIL\n", (int)m_max, (int)m, (int)next);
        /* a power of two between next and m (exclusive) was skipped */
        for (int32_t p = 1; p < m && p > 0; p *= 2)
            if (p > next)
                ok = 0, printf("m_max %d: %d -> %d skips %d  FAIL\n", (int)m_max, (int)m, (int)next, (int)p);
        if (m < m_max && m == want_pow) pow_seen++, want_pow /= 2;
        m = next;
    }
    int32_t pows = 0;
    for (int32_t p = 1; p < m_max && p > 0; p *= 2) pows++;
    if (pow_seen != pows) ok = 0, printf("m_max %d: %d of %d powers of two visited  FAIL\n", (int)m_max, (int)pow_seen, (int)pows);
    const double cap = (double)MEMRA__RESERVE_DENSE_M + 40.0 * log2((double)m_max + 1.0);
    if (n > cap) ok = 0, printf("m_max %d: %d calls, above %.0f  FAIL\n", (int)m_max, (int)n, cap);
    return ok;
}

int main(void)
{
    uint64_t st = test_seed();
    static const int32_t fixed[] = {1, 2, 255, 256, 257, 300, 1023, 1024, 1025, 1026, 1057, 2047, 4096, 8192, 65536, 1 << 20};
    int ok = 1;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) ok &= walk(fixed[i]);
    for (int i = 0; i < 200; i++) ok &= walk((int32_t)(1 + test_rand_u64(&st) % (1u << 21)));
    /* the switch point of gemm_q8_0r's warpgroup tile, from the m_max values that used to step over it */
    static const int32_t over[] = {1026, 1058, 4096};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        int hit = 0;
        for (int32_t m = over[i]; m >= 1; m = memra__reserve_next_m(m)) hit |= m == 1024;
        printf("m_max %d: the walk %s 1024\n", (int)over[i], hit ? "visits" : "MISSES");
        ok &= hit;
    }
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
