/* The stream-k remainder's schedule (modules/kernels/mmq/sk_sched.h), the functions the kernels
 * memra_k_gemm_q8_0r_wgsk and _skfix call, walked on the host: for fixed shapes (the 27b rows at m = 512
 * and 4096 on 132 SMs, fewer units than CTAs, one CTA, one step a tile) and fresh random ones (T tiles,
 * G steps, P CTAs with P <= T G), every unit of every tile is some CTA's exactly once; whole tiles are
 * stored by one CTA and never fixed up; a partial segment's slot is 2 c or 2 c + 1 of its CTA and no
 * slot is written twice; the fix-up of a split tile finds, CTA by CTA from the owner of its first unit
 * to the owner of its last, exactly the slots holding its segments, in k order, covering its G steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/kernels/mmq/sk_sched.h"
#include "test.h"

typedef struct {
    int tile, g0, nk;
} slot_rec;

static int walk(int T, int G, int P)
{
    const long long units = (long long)T * G;
    unsigned char *cover = calloc((size_t)units, 1);
    unsigned char *whole = calloc((size_t)T, 1);
    slot_rec *slots = malloc((size_t)(2 * P) * sizeof *slots);
    if (cover == NULL || whole == NULL || slots == NULL) {
        free(cover), free(whole), free(slots);
        printf("T %d G %d P %d: out of memory  FAIL\n", T, G, P);
        return 0;
    }
    for (int i = 0; i < 2 * P; i++) slots[i].tile = -1;
    int ok = 1;
    for (int c = 0; c < P && ok; c++) {
        const mmq_sk_range rg = mmq_sk_range_of(T, G, P, c);
        const int nt = mmq_sk_segments(&rg, G);
        for (int t = 0; t < nt && ok; t++) {
            const mmq_sk_seg sg = mmq_sk_segment(&rg, G, P, c, t);
            if (sg.tile < 0 || sg.tile >= T || sg.g0 < 0 || sg.nk < 1 || sg.g0 + sg.nk > G) {
                printf("T %d G %d P %d: CTA %d segment %d is tile %d steps %d + %d  FAIL\n", T, G, P, c, t, sg.tile,
                       sg.g0, sg.nk);
                ok = 0;
                break;
            }
            for (int g = sg.g0; g < sg.g0 + sg.nk; g++)
                if (cover[(long long)sg.tile * G + g]++ != 0) {
                    printf("T %d G %d P %d: tile %d step %d done twice  FAIL\n", T, G, P, sg.tile, g);
                    ok = 0;
                }
            if (sg.slot < 0) {
                if (sg.nk != G) ok = 0, printf("T %d G %d P %d: a part of tile %d stored whole  FAIL\n", T, G, P, sg.tile);
                whole[sg.tile] = 1;
            } else if (sg.slot / 2 != c || sg.nk == G || slots[sg.slot].tile >= 0) {
                printf("T %d G %d P %d: CTA %d slot %d (tile %d, %d steps) not its own, whole, or written twice  FAIL\n",
                       T, G, P, c, sg.slot, sg.tile, sg.nk);
                ok = 0;
            } else {
                slots[sg.slot] = (slot_rec){sg.tile, sg.g0, sg.nk};
            }
        }
    }
    for (long long u = 0; u < units && ok; u++)
        if (cover[u] != 1) ok = 0, printf("T %d G %d P %d: unit %lld done %d times  FAIL\n", T, G, P, u, cover[u]);
    const int tdp = T / P * P;
    for (int t = 0; t < tdp && ok; t++)
        if (!whole[t]) ok = 0, printf("T %d G %d P %d: whole-wave tile %d split  FAIL\n", T, G, P, t);
    for (int r = 0; r < T - tdp && ok; r++) {
        int ca, cb;
        long long U;
        mmq_sk_owners(T, G, P, r, &ca, &cb, &U);
        if (ca == cb) {
            if (!whole[tdp + r]) ok = 0, printf("T %d G %d P %d: tile %d has one owner, not stored whole  FAIL\n", T, G, P, tdp + r);
            continue;
        }
        if (whole[tdp + r]) {
            ok = 0, printf("T %d G %d P %d: tile %d stored whole and fixed up  FAIL\n", T, G, P, tdp + r);
            continue;
        }
        int k = 0;
        for (int cc = ca; cc <= cb && ok; cc++) {
            const int s = mmq_sk_slot(U, P, cc, (long long)r * G);
            if (s < 0) continue; /* a CTA without remainder units */
            if (s >= 2 * P || slots[s].tile != tdp + r || slots[s].g0 != k) {
                printf("T %d G %d P %d: tile %d's fix-up reads slot %d (tile %d from step %d) at step %d  FAIL\n", T, G,
                       P, tdp + r, s, s < 2 * P ? slots[s].tile : -1, s < 2 * P ? slots[s].g0 : -1, k);
                ok = 0;
                break;
            }
            k += slots[s].nk;
        }
        if (ok && k != G) ok = 0, printf("T %d G %d P %d: tile %d's fix-up sums %d of %d steps  FAIL\n", T, G, P, tdp + r, k, G);
    }
    free(cover), free(whole), free(slots);
    return ok;
}

int main(void)
{
    /* the 27b rows at m = 512 (160, 32, 384, 544 tiles) and 4096 (3072, 256, 1280, 4352), k / 128 steps */
    static const int fixed[][3] = {{160, 48, 132}, {160, 40, 132}, {160, 136, 132}, {544, 40, 132}, {384, 40, 132},
                                   {32, 40, 132},  {3072, 40, 132}, {256, 40, 132}, {1280, 48, 132}, {4352, 40, 132},
                                   {1, 1, 1},      {3, 2, 6},       {1, 5, 5},     {133, 1, 132},  {264, 4, 132},
                                   {2, 3, 5}};
    int ok = 1, n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++, n++) ok &= walk(fixed[i][0], fixed[i][1], fixed[i][2]);
    uint64_t rng = test_seed();
    for (int i = 0; i < 3000; i++, n++) {
        const int T = 1 + (int)(test_rand_u64(&rng) % 700), G = 1 + (int)(test_rand_u64(&rng) % 140);
        static const int ps[] = {132, 170, 16, 7, 2, 1};
        int P = ps[test_rand_u64(&rng) % 6];
        if ((long long)P > (long long)T * G) P = (int)((long long)T * G);
        ok &= walk(T, G, P);
    }
    printf("%d schedules walked\n%s\n", n, ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
