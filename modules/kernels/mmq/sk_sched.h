/* The stream-k remainder's schedule (MEMRA_MMQ_WG_SK: mmq.cu memra_k_gemm_q8_0r_wgsk and its fix-up
 * memra_k_gemm_q8_0r_skfix), in plain C for the kernels and for the host test that walks it over many
 * shapes (tests/core/test_sk_sched.c). A leaf: no includes.
 *
 * T tiles (tokens fastest), G steps a tile, P CTAs. The first dpw = T / P tiles of each CTA are whole: CTA
 * c's tile t < dpw is c + t P, as a plain grid's waves would run them. The rem = T - dpw P tiles left have
 * U = rem G units, cut into P ranges: CTA c's [c U / P, (c + 1) U / P) (empty where U < P and the bounds
 * meet). CTA c's segment dpw + s is its part of remainder tile ta + s, ta the remainder tile of its first
 * unit. A remainder segment with all G steps is stored whole; any other is a partial sum in slot 2 c (the
 * CTA's first remainder segment) or 2 c + 1 (its last: a CTA has at most two partial segments, since
 * rem < P gives it at most G units). Remainder tile r's segments belong to the CTAs ca .. cb owning its
 * first and last units (the owner of u is the c with c U / P <= u < (c + 1) U / P, ((u + 1) P - 1) / U),
 * skipping those without units, and add in that order: k order. */
#ifndef MEMRA_MMQ_SK_SCHED_H
#define MEMRA_MMQ_SK_SCHED_H

#if defined(__CUDACC__)
#define MMQ_SK_FN static __host__ __device__ __forceinline__
#else
#define MMQ_SK_FN static inline
#endif

typedef struct mmq_sk_range {
    long long u0, u1; /* the CTA's remainder units */
    int ta, dpw, tdp; /* the remainder tile of u0; whole tiles a CTA; whole tiles in all (dpw P) */
} mmq_sk_range;

typedef struct mmq_sk_seg {
    int tile, g0, nk; /* the tile (0 .. T - 1), its first step, its steps */
    int slot;         /* -1: the whole tile; else 2 c or 2 c + 1 */
} mmq_sk_seg;

/* CTA c's range of P */
MMQ_SK_FN mmq_sk_range mmq_sk_range_of(int T, int G, int P, int c)
{
    mmq_sk_range rg;
    rg.dpw = T / P, rg.tdp = rg.dpw * P;
    const long long U = (long long)(T - rg.tdp) * G;
    rg.u0 = (long long)c * U / P, rg.u1 = (long long)(c + 1) * U / P;
    rg.ta = (int)(rg.u0 / G);
    return rg;
}

/* its number of segments */
MMQ_SK_FN int mmq_sk_segments(const mmq_sk_range *rg, int G)
{
    return rg->dpw + (rg->u1 > rg->u0 ? (int)((rg->u1 - 1) / G) - rg->ta + 1 : 0);
}

/* its segment t (0 .. mmq_sk_segments - 1) */
MMQ_SK_FN mmq_sk_seg mmq_sk_segment(const mmq_sk_range *rg, int G, int P, int c, int t)
{
    mmq_sk_seg sg;
    if (t < rg->dpw) {
        sg.tile = c + t * P, sg.g0 = 0, sg.nk = G, sg.slot = -1;
        return sg;
    }
    const int r = rg->ta + t - rg->dpw;
    const long long b = (long long)r * G, s = rg->u0 > b ? rg->u0 : b, e = rg->u1 < b + G ? rg->u1 : b + G;
    sg.tile = rg->tdp + r, sg.g0 = (int)(s - b), sg.nk = (int)(e - s);
    sg.slot = sg.nk == G ? -1 : 2 * c + (t == rg->dpw ? 0 : 1);
    return sg;
}

/* Remainder tile r (0 .. rem - 1) of T tiles on P CTAs: the owners of its first and last units, *ca and *cb
 * (equal: one CTA had it whole), and U */
MMQ_SK_FN void mmq_sk_owners(int T, int G, int P, int r, int *ca, int *cb, long long *U)
{
    const long long u = (long long)(T - T / P * P) * G, ua = (long long)r * G, ub = ua + G - 1;
    *U = u;
    *ca = (int)(((ua + 1) * P - 1) / u), *cb = (int)(((ub + 1) * P - 1) / u);
}

/* CTA cc's slot for remainder tile r (first unit ua = r G), -1 where cc has no units */
MMQ_SK_FN int mmq_sk_slot(long long U, int P, int cc, long long ua)
{
    const long long b = (long long)cc * U / P;
    if ((long long)(cc + 1) * U / P == b) return -1;
    return 2 * cc + (b >= ua ? 0 : 1);
}

#endif
