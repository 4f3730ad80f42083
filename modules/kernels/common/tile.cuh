/* Tile primitives of the tensor-core GEMM families (mmq, fp8blk): shared-memory
 * addresses, cp.async with zero fill, ldmatrix, and the B fragments of the
 * m16n8k32 8-bit MMAs (mma.sync s8, e4m3, kind::f8f6f4 share one fragment
 * layout). Both families' tiles keep operands in 144-byte shared rows (128 data
 * bytes + 16: a 36-word stride keeps the ldmatrix phases conflict-free).
 *
 * A leaf: no includes, valid CUDA C++ under nvcc and NVRTC (fp8blk_gemm.cu is
 * compiled by both; modules/gpu/embed_source.cmake inlines this file for the
 * JIT). */
#ifndef MEMRA_KERNELS_COMMON_TILE_CUH
#define MEMRA_KERNELS_COMMON_TILE_CUH

__device__ __forceinline__ unsigned memra_smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* cp.async of 16 (through L2 only) or 4 bytes to shared address dst, of which
 * src_bytes are read and the rest zero-filled (0: nothing is read). */
__device__ __forceinline__ void memra_cp16(unsigned dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void memra_cp4(unsigned dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void memra_ldmatrix_x4(unsigned r[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void memra_ldmatrix_x2(unsigned r[2], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

/* The thread's ldmatrix offsets (bytes, rows ROW bytes apart) for the m16n8k32 8-bit MMAs'
 * operands, at the warp's first row row0 and byte koff of the row: A, m16 x k32 (ldmatrix x4:
 * rows lane % 16, k halves lane / 16), and B, n8 tiles in pairs (memra_load_b_frags' sb: rows
 * lane % 8 + 8 (lane / 16), k halves (lane / 8) % 2). */
template <int ROW> __device__ __forceinline__ int memra_a_frag_off(int row0, int lane, int koff)
{
    return (row0 + (lane & 15)) * ROW + koff + (lane >> 4) * 16;
}
template <int ROW> __device__ __forceinline__ int memra_b_frag_off(int row0, int lane, int koff)
{
    return (row0 + (lane & 7) + (lane >> 4) * 8) * ROW + koff + ((lane >> 3) & 1) * 16;
}

/* A warp's B fragments for NT n8 tiles of one k32 group, from rows of ROW bytes:
 * n8 tiles in pairs (ldmatrix x4); an odd NT takes its last n8 tile with
 * ldmatrix x2 (lanes 0-15's addresses, which the x4 formula gives rows 0-7 at
 * both k halves). sb: the thread's address at the warp's first row,
 * (lane % 8 + (lane / 16) 8) ROW + ((lane / 8) % 2) 16; koff: the group's byte
 * offset in the row. */
template <int NT, int ROW>
__device__ __forceinline__ void memra_load_b_frags(unsigned (&b)[NT][2], unsigned sb, int koff)
{
#pragma unroll
    for (int np = 0; np < NT / 2; np++) {
        unsigned r[4];
        memra_ldmatrix_x4(r, sb + np * 16 * ROW + koff);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
    }
    if (NT % 2 != 0) memra_ldmatrix_x2(b[NT - 1], sb + (NT - 1) * 8 * ROW + koff);
}

/* mbarriers in shared memory and the bulk copy engine (sm_90 and up: the callers compile
 * them only there). memra_mb_wait spins on try_wait of the phase with `parity`;
 * memra_bulk_g2s copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from
 * global src to shared dst and counts them on the mbarrier at mbar, whose phase the caller
 * armed with memra_mb_arrive_tx. */
__device__ __forceinline__ void memra_mb_init(unsigned a, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void memra_mb_arrive_tx(unsigned a, unsigned bytes)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(a), "r"(bytes)
                 : "memory");
}
/* one arrival, no bytes expected (a consumer freeing a stage, a producer's lanes marking `ready`) */
__device__ __forceinline__ void memra_mb_arrive(unsigned a)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(a) : "memory");
}
__device__ __forceinline__ void memra_mb_wait(unsigned a, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void memra_bulk_g2s(unsigned dst, const void *src, unsigned bytes, unsigned mbar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(mbar)
                 : "memory");
}

/* Tensor maps and warpgroup MMAs (sm_90a: the callers compile these only where
 * __CUDA_ARCH_FEAT_SM90_ALL is set). memra_tmap: a CUtensorMap passed by value
 * (__grid_constant__), 64-byte aligned. memra_wg_desc: a wgmma shared-memory
 * descriptor for a K-major operand in the 128-byte swizzled layout (rows of 128
 * bytes, 8-row groups 1024 bytes apart: the stride offset; leading offset unused,
 * 1; base offset 0: every tile starts 1024-byte aligned, and a k32 step of an
 * 8-bit operand adds 32 bytes to the start, which the swizzle, applied to the
 * address bits, takes as its chunk 2 kk). memra_tma_load_3d: the box at
 * coordinates (c0, c1, c2) of *map into shared dst, its bytes counted on the
 * mbarrier at mbar. */
struct __align__(64) memra_tmap {
    unsigned long long q[16];
};
__device__ __forceinline__ unsigned long long memra_wg_desc(unsigned addr)
{
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | ((unsigned long long)(1024 >> 4) << 32) |
           (1ull << 62);
}
__device__ __forceinline__ void memra_tma_load_3d(unsigned dst, const memra_tmap *map, int c0, int c1, int c2,
                                                  unsigned mbar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
                 "[%5];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(mbar)
                 : "memory");
}

/* memra_tma_prefetch_2d / _3d: the box at (c0, c1[, c2]) of *map brought into L2 (no shared memory, no barrier;
 * a hint the copy engine may drop) */
__device__ __forceinline__ void memra_tma_prefetch_2d(const memra_tmap *map, int c0, int c1)
{
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void memra_tma_prefetch_3d(const memra_tmap *map, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

/* Tensor maps built on the device, one per grouped operand (mmq's and fp8blk's grouped tiles):
 * memra_tmap_put, by one whole warp, stores the host's template tmpl to *dst with plain stores (every
 * byte then written by the generic proxy, which compute-sanitizer's initcheck tracks: a copy by
 * tensormap.cp_fenceproxy left the map uninitialised to the tool, run v2), replaces its global
 * address in place by addr (tensormap.replace on global memory) and makes the warp's writes visible
 * to the tensor-map proxy (release); memra_tmap_acquire, by the thread that copies through *map,
 * before its first copy, after the launch that wrote it has completed (griddepcontrol.wait or a
 * plain launch order). */
__device__ __forceinline__ void memra_tmap_put(const memra_tmap &tmpl, unsigned long long addr, memra_tmap *dst, int lane)
{
    if (lane < 16) dst->q[lane] = tmpl.q[lane];
    __syncwarp();
    if (lane == 0)
        asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;\n" ::"l"(
                         (unsigned long long)__cvta_generic_to_global(dst)),
                     "l"(addr)
                     : "memory");
    __syncwarp();
    asm volatile("fence.proxy.tensormap::generic.release.gpu;\n" ::: "memory");
}
__device__ __forceinline__ void memra_tmap_acquire(const memra_tmap *map)
{
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(reinterpret_cast<unsigned long long>(map))
                 : "memory");
}

/* The grouped tiles' raster (w16_tile.cuh, mmq.cu r3w_xe_raster, fp8blk_gemm.cu xe_walk): position L of a walk
 * over T token (table) tiles x R weight tiles -> (tile tt, weight tile rt), in groups of rg token tiles, each
 * group's weight tiles outermost and its token tiles innermost, so that the CTAs working at once hold a few
 * experts' tokens (L2-sized) and read each weight tile for the group together. A bijection onto [0, T) x [0, R)
 * for any rg >= 1, the last group of T mod rg tiles included; rg >= T is the plain order (tt = L mod T). */
template <typename I>
__device__ __forceinline__ void memra_raster(I L, int T, int R, int rg, int &tt, int &rt)
{
    const I per = (I)rg * R;
    const int g = (int)(L / per), rem = (int)(L - g * per), left = T - g * rg, gg = rg < left ? rg : left;
    rt = rem / gg;
    tt = g * rg + (rem - rt * gg);
}

#endif
