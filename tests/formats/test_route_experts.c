/* The expert routing of gemm_experts (modules/kernels/common/route.cuh)
 * compiled for the CPU as one thread of one block, against its contract:
 * offsets are the exclusive scan of the per-expert counts, perm holds every
 * routed row once and each expert's rows in its own range, and the tile tables
 * cover each expert's sorted rows exactly once, every tile inside its expert,
 * table 1's tiles bm rows apart and full where a remainder table takes the
 * rest, table 2's tiles bm2 rows apart and only on remainders up to rem_max.
 * The policies the modules use (mmq: bm 64 / 128 with a remainder of up to
 * 32 rows in one 32-row tile, and run q1's every-remainder-in-32-row-tiles;
 * fp8blk: 128 with remainders up to 64 in one 64-row tile) and
 * the single table (bm2 = 0), on uniform, skewed and empty routings with ids
 * outside [0, E) among them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define __device__
#define __forceinline__ static inline
#define __restrict__
static struct {
    int x;
} threadIdx, blockDim = {1};
static void __syncthreads(void) {}
static int atomicAdd(int *p, int v)
{
    const int o = *p;
    *p = o + v;
    return o;
}

#include "modules/kernels/common/route.cuh"

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 11);
}

/* One routing through the body and every property of its output; 1 if all hold. */
static int check_one(const int *ids, int m, int E, int bm, int bm2, int rem_max, const char *what)
{
    int *offsets = calloc((size_t)E + 1, sizeof(int)), *perm = malloc((size_t)m * sizeof(int) + 4);
    const int tmax = m / (bm2 ? bm2 : bm) + 2 * E + 2;
    int *tiles = malloc((size_t)tmax * 2 * sizeof(int)), *tiles2 = malloc((size_t)tmax * 2 * sizeof(int));
    int *cnt = malloc((size_t)E * sizeof(int)), *fill = malloc((size_t)E * sizeof(int));
    int *want = calloc((size_t)E, sizeof(int)), *seen = calloc((size_t)m + 1, sizeof(int));
    int *cover = calloc((size_t)m + 1, sizeof(int));
    CHECK(offsets && perm && tiles && tiles2 && cnt && fill && want && seen && cover);
    int nt = -1, nt2 = -1, routed = 0, ok = 1;
    memra_route_experts(ids, m, E, bm, bm2, rem_max, offsets, perm, tiles, &nt, bm2 ? tiles2 : NULL, bm2 ? &nt2 : NULL,
                        cnt, fill);
    for (int r = 0; r < m; r++)
        if (ids[r] >= 0 && ids[r] < E) want[ids[r]]++, routed++;
#define EXPECT(c)                                                                                   \
    do {                                                                                            \
        if (!(c)) {                                                                                 \
            if (ok) printf("  %s (m %d E %d bm %d bm2 %d): %s  FAIL\n", what, m, E, bm, bm2, #c); \
            ok = 0;                                                                                 \
        }                                                                                           \
    } while (0)
    int off = 0;
    for (int e = 0; e < E; e++) {
        EXPECT(offsets[e] == off);
        off += want[e];
    }
    EXPECT(offsets[E] == routed);
    for (int s = 0; s < routed && ok; s++) {
        const int r = perm[s];
        EXPECT(r >= 0 && r < m && !seen[r]);
        if (!ok) break;
        seen[r] = 1;
        EXPECT(offsets[ids[r]] <= s && s < offsets[ids[r] + 1]);
    }
    /* table 1: in expert order, inside the expert, bm apart from its first row */
    for (int t = 0; t < nt && ok; t++) {
        const int e = tiles[2 * t], s0 = tiles[2 * t + 1];
        EXPECT(e >= 0 && e < E && s0 >= offsets[e] && s0 < offsets[e + 1] && (s0 - offsets[e]) % bm == 0);
        if (!ok) break;
        const int end = s0 + bm < offsets[e + 1] ? s0 + bm : offsets[e + 1];
        /* with a remainder table, a short tile of table 1 only for a remainder above rem_max */
        if (bm2 && end - s0 < bm) EXPECT(end - s0 > rem_max);
        for (int s = s0; s < end; s++) cover[s]++;
    }
    for (int t = 0; bm2 && t < nt2 && ok; t++) {
        const int e = tiles2[2 * t], s0 = tiles2[2 * t + 1];
        EXPECT(e >= 0 && e < E && s0 >= offsets[e] && s0 < offsets[e + 1]);
        if (!ok) break;
        const int c = offsets[e + 1] - offsets[e], full = c / bm * bm;
        EXPECT(s0 - offsets[e] >= full && (s0 - offsets[e] - full) % bm2 == 0 && c - full <= rem_max);
        const int end = s0 + bm2 < offsets[e + 1] ? s0 + bm2 : offsets[e + 1];
        for (int s = s0; s < end; s++) cover[s]++;
    }
    for (int s = 0; s < routed && ok; s++) EXPECT(cover[s] == 1);
    /* the launchers' grids: table 1 within ceil(m / bm) + E tiles, table 2 within
     * E ceil(rem_max / bm2) (mmq_ops.c sizes its grids so) */
    EXPECT(nt <= (m + bm - 1) / bm + E);
    if (bm2) EXPECT(nt2 <= E * ((rem_max + bm2 - 1) / bm2));
    if (!bm2) {
        int tiles_want = 0;
        for (int e = 0; e < E; e++) tiles_want += (want[e] + bm - 1) / bm;
        EXPECT(nt == tiles_want);
    }
#undef EXPECT
    free(offsets), free(perm), free(tiles), free(tiles2), free(cnt), free(fill), free(want), free(seen), free(cover);
    return ok;
}

int main(void)
{
    /* mmq now: {64 | 128, 32, 32} (a remainder above 32 keeps its full tile); {.., 32, bm - 1}: every
     * remainder in 32-row tiles (run q1's policy); fp8blk: {128, 64, 64} */
    static const int pol[][3] = {{32, 0, 0},     {128, 0, 0},     {64, 32, 32}, {128, 32, 32},
                                 {64, 32, 63},   {128, 32, 127},  {128, 64, 64}};
    static const int shapes[][2] = {{512 * 8, 128}, {512 * 2, 8}, {4096 * 2, 8}, {100, 8}, {1, 3}, {0, 4}, {777, 1}};
    int ok = 1, runs = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int routing = 0; routing < 3; routing++) {
            const int m = shapes[s][0], E = shapes[s][1];
            int *ids = malloc((size_t)m * sizeof(int) + 4);
            CHECK(ids != NULL);
            for (int r = 0; r < m; r++) {
                const uint32_t u = rnd();
                ids[r] = routing == 0 ? (int)(u % (uint32_t)E)                      /* uniform */
                         : routing == 1 ? (u & 1 ? 0 : (int)(u % (uint32_t)E))     /* half to expert 0 */
                                        : (u % 17 == 0 ? -1 - (int)(u % 3) : u % 13 == 0 ? E : (int)(u % (uint32_t)E));
            }
            for (size_t p = 0; p < sizeof pol / sizeof pol[0]; p++, runs++)
                ok &= check_one(ids, m, E, pol[p][0], pol[p][1], pol[p][2],
                                routing == 0 ? "uniform" : routing == 1 ? "skewed" : "ids outside [0, E)");
            free(ids);
        }
    printf("route_experts: %d routings x policies checked: %s\n", runs, ok ? "ok" : "FAIL");
    CHECK(ok);
    printf("PASS\n");
    return 0;
}
