/* cuBLASLt for the GPU modules, opened with dlopen (host->library_open) and
 * resolved from one list of entry points. One handle per device; the matmul
 * descriptor, the layouts and the heuristic's algorithm are cached per
 * (lane, m, n, k, ldd, pointer alignments) so the heuristic runs once per shape.
 *
 * The GEMM every lane computes is memra's row-major y = x . W^T. Read
 * column-major, the same bytes are:
 *   A = W as a k x n matrix (ld k), used with op T   -> n x k
 *   B = x as a k x m matrix (ld k), used with op N   -> k x m
 *   D = y as an n x m matrix (ld ldd)                 = op(A) . B
 * which is the TN form cuBLASLt's FP8 kernels require (k contiguous in both).
 *
 * Thread safety: lookups and inserts into the plan cache take a spin lock; a
 * plan's descriptor is updated (scale pointers) and enqueued under the plan's
 * own lock, so concurrent calls of one shape with different weights are safe. */
#ifndef MEMRA_MODULES_CUDA_LT_H
#define MEMRA_MODULES_CUDA_LT_H

#include <stddef.h>
#include <stdint.h>

#include "memra/module.h"

typedef struct memra__lt memra__lt;

/* cublasLtGetVersion() from which VEC128_32F / BLK128x128_32F exist (cuBLAS 12.9). */
#define MEMRA__LT_VERSION_BLOCK_SCALES 120900

typedef enum memra__lt_lane {
    MEMRA__LT_F16 = 0,     /* A, B f16; D f32; compute 32F */
    MEMRA__LT_FP8 = 1,     /* A, B e4m3; D f32; scalar scales by device pointer */
    MEMRA__LT_FP8_BLK = 2, /* A, B e4m3; D f32; A BLK128x128_32F, B VEC128_32F scales */
    MEMRA__LT_BF16 = 3,    /* A, B bf16; D f32; compute 32F */
} memra__lt_lane;

typedef struct memra__lt_gemm {
    memra__lt_lane lane;
    int32_t m, n, k;
    memra_dptr a;       /* weight, [n x k] row-major */
    memra_dptr b;       /* activation, [m x k] row-major */
    memra_dptr d;       /* output: row i of y at d + i * ldd floats */
    int64_t ldd;
    float alpha;
    memra_dptr a_scale; /* FP8 lanes: device scale(s) of A; 0 = none (1.0) */
    memra_dptr b_scale; /* FP8 lanes: device scale(s) of B; 0 = none */
    memra_dptr workspace;
    size_t workspace_size;
    memra_stream_t stream;
} memra__lt_gemm;

/* Open cuBLASLt and create a handle in the current context (the caller has
 * pushed the device's context). When the library is absent or too old, returns
 * OK with *out_lt = NULL and a sentence in why[why_len]; errors creating the
 * handle return CUBLAS_ERROR (after host->set_error). */
memra_status memra__lt_open(const memra_host_services *host, const char *module, memra__lt **out_lt, char *why,
                            size_t why_len);
/* Destroy the handle and the cached plans (context pushed by the caller). NULL is fine. */
void memra__lt_close(memra__lt *lt);
/* cublasLtGetVersion(), e.g. 130100. */
size_t memra__lt_version(const memra__lt *lt);
/* Enqueue one GEMM on g->stream. Returns OK, DECLINED (call->decline_reason set:
 * no algorithm for this case), or CUBLAS_ERROR with the library's status code
 * and name in memra_last_error. */
memra_status memra__lt_matmul(memra__lt *lt, memra_call *call, const memra__lt_gemm *g);

#endif
