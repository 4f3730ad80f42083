/* Private to modules/host: the per-device context, the thread splitter and
 * the op entry points the descriptor's table points at. */
#ifndef MEMRA_HOST_INTERNAL_H
#define MEMRA_HOST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "memra/module.h"

typedef struct memra__host_ctx {
    const memra_host_services *host;
    int threads;        /* >= 1 */
    float e4m3[256];    /* memra_e4m3_decode of every code */
} memra__host_ctx;

/* Work on items [begin, end) as thread `tid` (0 <= tid < the count given to
 * memra__host_run). Each item is done by exactly one thread, so results do
 * not depend on the number of threads. */
typedef void (*memra__host_range_fn)(void *job, int tid, int64_t begin, int64_t end);

/* Threads worth using for `items` items of about `ops_per_item` operations. */
int memra__host_threads(const memra__host_ctx *ctx, int64_t items, double ops_per_item);
/* Split [0, items) into `threads` contiguous ranges and run them; returns when
 * all are done. A thread that cannot be started has its range run inline. */
void memra__host_run(int threads, int64_t items, memra__host_range_fn fn, void *job);

/* calloc-free array allocation that fails (NULL) on size overflow. */
void *memra__host_alloc(uint64_t count, size_t size);

/* The context of a call, or NULL when the call is unusable. */
memra__host_ctx *memra__host_call_ctx(const memra_call *call);

#define MEMRA__HOST_PTR(type, dptr) ((type *)(uintptr_t)(dptr))

/* ops (host_ops.c) */
memra_status memra__host_cvt_f16(memra_call *call, memra_dptr src_f32, memra_dptr dst_f16, int64_t n);
memra_status memra__host_quant_q8_1(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst);
memra_status memra__host_dequant_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                     int64_t cols, memra_dptr dst_f16);
memra_status memra__host_gemm_w16(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_dequant_kr_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                        int64_t cols, memra_dptr dst_f16);
memra_status memra__host_fp8_blk_to_q8_0(memra_call *call, memra_dptr w, memra_dptr grid, int64_t rows,
                                         int64_t cols, memra_dptr dst_q8_0);
memra_status memra__host_fp8_nan_count(memra_call *call, memra_dptr w, int64_t nbytes, memra_dptr out_u64);
memra_status memra__host_scale(memra_call *call, memra_dptr y, int64_t n, float s);
memra_status memra__host_repack_q8_0(memra_call *call, memra_dptr src_q8_0, int64_t rows, int64_t cols,
                                     memra_dptr dst);

/* ops (host_gemm.c) */
memra_status memra__host_gemm_f16(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_gemm_fp8(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_gemm_fp8_blk(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_gemm_q8_0(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_gemm_q8_0r(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_gemm_bf16(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_gemm_kr(memra_call *call, const memra_gemm_args *args);
memra_status memra__host_accprobe(memra_call *call, memra_accprobe_arm arm, const memra_gemm_args *args);

/* ops (host_experts.c) */
memra_status memra__host_gemm_experts(memra_call *call, const memra_gemm_args *args,
                                      const memra_gemm_experts_args *experts);

#endif
