/* The expert routing of gemm_experts on the device, shared by the grouped
 * kernels of the mmq family (mmq.cu) and of the block-128 FP8 family
 * (fp8blk_gemm.cu): one block, the rows of each expert counted from ids (ids
 * outside [0, E) skipped) in shared memory, their exclusive scan offsets[0 ..
 * E], the permutation perm[offsets[e] ..] = the rows of expert e (in no fixed
 * order: a row's output depends on that row and its expert alone, so the order
 * changes no bit) and the tile tables: table 1 tile t = (tiles[2t] = expert,
 * tiles[2t + 1] = its first sorted row) of `bm` rows, experts in order, the
 * count in *ntiles. Nothing is read on the host.
 *
 * The remainder: bm2 == 0 gives an expert of c rows ceil(c / bm) tiles of table
 * 1. With bm2 > 0 (tiles2 and ntiles2 not NULL), a remainder r = c mod bm of 1
 * .. rem_max rows takes ceil(r / bm2) tiles of bm2 rows in table 2 (*ntiles2)
 * and table 1 only the floor(c / bm) full tiles; a remainder above rem_max keeps
 * its tile of bm rows in table 1. mmq runs one 32-row tile on a remainder of
 * up to 32 rows (rem_max = bm2 = 32); fp8blk its 64-row one on remainders up
 * to 64.
 *
 * cnt and fill: shared arrays of at least E ints. Called by every thread of the
 * block (it synchronises the block). */
#ifndef MEMRA_CUDA_ROUTE_CUH
#define MEMRA_CUDA_ROUTE_CUH

__device__ __forceinline__ void memra_route_experts(const int *__restrict__ ids, int m, int E, int bm, int bm2,
                                                    int rem_max, int *__restrict__ offsets, int *__restrict__ perm,
                                                    int *__restrict__ tiles, int *__restrict__ ntiles,
                                                    int *__restrict__ tiles2, int *__restrict__ ntiles2, int *cnt,
                                                    int *fill)
{
    for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
    __syncthreads();
    for (int r = threadIdx.x; r < m; r += blockDim.x) {
        const int e = ids[r];
        if (e >= 0 && e < E) atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int off = 0, t = 0, t2 = 0;
        for (int e = 0; e < E; e++) {
            offsets[e] = off;
            fill[e] = off;
            const int rem = cnt[e] % bm;
            const int full = bm2 > 0 && rem > 0 && rem <= rem_max ? cnt[e] - rem : cnt[e];
            for (int r0 = 0; r0 < full; r0 += bm) {
                tiles[2 * t] = e;
                tiles[2 * t + 1] = off + r0;
                t++;
            }
            for (int r0 = full; r0 < cnt[e]; r0 += bm2) { /* (only with bm2 > 0) */
                tiles2[2 * t2] = e;
                tiles2[2 * t2 + 1] = off + r0;
                t2++;
            }
            off += cnt[e];
        }
        offsets[E] = off;
        *ntiles = t;
        if (bm2 > 0) *ntiles2 = t2;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < m; r += blockDim.x) {
        const int e = ids[r];
        if (e >= 0 && e < E) perm[atomicAdd(&fill[e], 1)] = r;
    }
}

#endif
