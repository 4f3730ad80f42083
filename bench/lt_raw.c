/* memra-bench-raw: each cuBLASLt lane of the sm90 module beside a RAW arm.
 *
 * Issue 5 ("Speed") asks that every cuBLASLt lane be timed beside the same
 * cuBLASLt matmul called directly, without memra, on operands that are already
 * converted or quantised, interleaved with the lane inside each repetition, and
 * judged by the ratio of the two in the same run. This program is that arm.
 * It links libmemra through its public API only; cuBLASLt and the CUDA driver
 * are opened here with dlopen, and the few types and values used are declared
 * below with the header that defines them (no CUDA header is included).
 *
 * Arms per shape (y = x . W^T, x [m x in_f], W [out_f x in_f], y f32):
 *   f16 pre    sm90 gemm_f16, x pre-converted to f16 (x_is_f16 = 1)
 *   f16 cvt    sm90 gemm_f16, x f32 converted in-stream
 *   f16 RAW    cublasLtMatmul f16 x f16 -> f32, on the same f16 x and W
 *   fp8        sm90 gemm_fp8 (per-batch amax/448 quantiser in-stream)
 *   fp8 RAW    cublasLtMatmul e4m3 x e4m3 -> f32, scalar A/B scale pointers,
 *              on x quantised on the host exactly as memra's kernel does
 *   fp8blk     sm90 gemm_fp8_blk (per-row-per-128 quantiser in-stream)
 *   fp8blk RAW cublasLtMatmul e4m3, A BLK128x128_32F, B VEC128_32F scales, on
 *              x and its scale vector quantised on the host in cuBLASLt's layout
 *   copy       cuMemcpyDtoDAsync moving the bytes gemm_fp8's quantiser moves:
 *              x read once (4 m k) plus the e4m3 written (m k), and x read once
 *              more by the amax pass without --given; a copy reads and writes
 *              its size, so it copies half of that (rounded down to 256 bytes)
 * and, once, dequant_f16 of a 5120 x 17408 weight (Q8_0, Q4_K, Q6_K) beside a
 * device-to-device copy moving the same number of bytes.
 *
 * The quantiser's byte bound (issue 25 item 1), per shape from the same
 * repetitions: its cost is the fp8 median less the fp8 RAW median, its bound
 * the copy median, "x of its byte bound" cost / copy, and "best ratio with a
 * separate pass" raw / (raw + copy): the fp8 lane's ratio if its quantiser ran
 * at the copy rate as a pass of its own.
 *
 * Targets, per sheet: the f16 lanes and the block lane as issue 5 set them
 * (f16 pre >= 0.97 at every shape, f16 cvt geomean >= 0.90, fp8blk geomean
 * >= 0.88), gemm_fp8 as issue 25 sets them: with its own amax pass geomean
 * >= 0.85 and every shape >= 0.75, with --given geomean >= 0.92; and its
 * quantiser within 1.25x of its byte bound at every shape.
 *
 * Fairness: the raw matmul is built as modules/gpu/lt.c builds the lane's:
 * compute 32F, scale type 32F, TRANSA = T, TRANSB = N, column-major layouts
 * A = k x n (ld k), B = k x m (ld k), C = D = n x m (ld n), the same workspace
 * size (32 MiB, MEMRA__GPU_WORKSPACE_BYTES in modules/gpu/gpu.h), the same
 * MIN_ALIGNMENT preferences derived from the pointers, one heuristic result.
 * The fp8 lane folds sx * w_scale into the B scale and leaves A's unset; the
 * raw arm passes w_scale and sx as separate A and B scale pointers (what a
 * direct caller writes; the epilogue cost is the same). The fp8blk lane pads m
 * to a multiple of 4 and the raw arm does the same.
 *
 * --given static|amax (issue 25 item 2): the two FP8 lanes take their
 * activation scale instead of running their own amax pass: `static` a
 * per-tensor memra_gemm_args.x_scale (the batch's amax / 448, so gemm_fp8
 * quantises exactly as before; the block raw arm then quantises every block
 * at that one scale too), `amax` the producer maxima x_amax (the batch's, or
 * each (row, 128) block's, [ceil(k/128) x m]): the one-pass quantisers, with
 * the raw arms unchanged. The receipt's "given" names the mode.
 *
 * Every call is timed alone between two CUDA events (memra_timer_*), all on
 * the legacy default stream; the starting arm rotates every repetition;
 * medians. Before timing, each lane's output is compared with its raw arm's
 * (relative Frobenius difference: < 1e-5 for f16, < 1e-3 for FP8), and the
 * ledger must show one sm90 hit for every lane call made, so a fast but wrong
 * or unserved arm cannot pass.
 *
 * Exit status: 0 ran (targets met or missed, see the table), 1 an error, a
 * disagreement or an arm without ledger hits, 2 bad usage, 77 no device to run
 * on (no GPU, no sm90 module on it, no cuBLASLt or driver entry points).
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/tool_util.h"

#define RAW_SKIP 77
#define RAW_MODULE "sm90"
#define RAW_WORKSPACE_BYTES ((size_t)32 << 20) /* = MEMRA__GPU_WORKSPACE_BYTES (modules/gpu/gpu.h) */
#define RAW_MAX_REPS 10000
#define RAW_MAX_M 65536

/* ---- cuBLASLt: types and values --------------------------------------------
 * Checked against /usr/local/cuda/include (CUDA 13.0, cuBLAS 13.1 headers):
 * cublasLt.h, cublas_api.h, library_types.h. Enums are C ints in the ABI. */
typedef int lt_status;                /* cublasStatus_t */
#define LT_SUCCESS 0                  /* CUBLAS_STATUS_SUCCESS (cublas_api.h) */
#define LT_NOT_SUPPORTED 15           /* CUBLAS_STATUS_NOT_SUPPORTED (cublas_api.h) */
#define LT_R_32F 0                    /* CUDA_R_32F (library_types.h) */
#define LT_R_16F 2                    /* CUDA_R_16F (library_types.h) */
#define LT_R_8F_E4M3 28               /* CUDA_R_8F_E4M3 (library_types.h) */
#define LT_COMPUTE_32F 68             /* CUBLAS_COMPUTE_32F (cublas_api.h) */
#define LT_OP_N 0                     /* CUBLAS_OP_N (cublas_api.h) */
#define LT_OP_T 1                     /* CUBLAS_OP_T (cublas_api.h) */
#define LT_DESC_TRANSA 3              /* CUBLASLT_MATMUL_DESC_TRANSA, int32 (cublasLt.h) */
#define LT_DESC_TRANSB 4              /* CUBLASLT_MATMUL_DESC_TRANSB, int32 */
#define LT_DESC_A_SCALE_POINTER 17    /* CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, const void * */
#define LT_DESC_B_SCALE_POINTER 18    /* CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, const void * */
#define LT_DESC_A_SCALE_MODE 31       /* CUBLASLT_MATMUL_DESC_A_SCALE_MODE, int32 */
#define LT_DESC_B_SCALE_MODE 32       /* CUBLASLT_MATMUL_DESC_B_SCALE_MODE, int32 */
#define LT_SCALE_VEC128_32F 4         /* CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F */
#define LT_SCALE_BLK128X128_32F 5     /* CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F */
#define LT_PREF_MAX_WORKSPACE 1       /* CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64 */
#define LT_PREF_MIN_ALIGN_A 5         /* CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32; B 6, C 7, D 8 */
#define LT_VERSION_BLOCK_SCALES 120900 /* cublasLtGetVersion() from which VEC128/BLK128x128 exist */

typedef struct lt_algo { /* cublasLtMatmulAlgo_t */
    uint64_t data[8];
} lt_algo;

typedef struct lt_heuristic { /* cublasLtMatmulHeuristicResult_t */
    lt_algo algo;
    size_t workspace_size;
    lt_status state;
    float waves_count;
    int reserved[4];
} lt_heuristic;

/* X(name, return, params): every cuBLASLt entry point used. */
#define RAW_LT_LIST(X)                                                                                     \
    X(cublasLtGetVersion, size_t, (void))                                                                  \
    X(cublasLtGetStatusName, const char *, (lt_status status))                                             \
    X(cublasLtCreate, lt_status, (void **handle))                                                          \
    X(cublasLtDestroy, lt_status, (void *handle))                                                          \
    X(cublasLtMatmulDescCreate, lt_status, (void **desc, int compute_type, int scale_type))                \
    X(cublasLtMatmulDescDestroy, lt_status, (void *desc))                                                  \
    X(cublasLtMatmulDescSetAttribute, lt_status, (void *desc, int attr, const void *buf, size_t n))        \
    X(cublasLtMatrixLayoutCreate, lt_status, (void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld)) \
    X(cublasLtMatrixLayoutDestroy, lt_status, (void *layout))                                              \
    X(cublasLtMatmulPreferenceCreate, lt_status, (void **pref))                                            \
    X(cublasLtMatmulPreferenceDestroy, lt_status, (void *pref))                                            \
    X(cublasLtMatmulPreferenceSetAttribute, lt_status, (void *pref, int attr, const void *buf, size_t n))  \
    X(cublasLtMatmulAlgoGetHeuristic, lt_status,                                                           \
      (void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref, int requested,            \
       lt_heuristic *results, int *returned))                                                              \
    X(cublasLtMatmul, lt_status,                                                                           \
      (void *handle, void *desc, const void *alpha, const void *A, void *adesc, const void *B, void *bdesc, \
       const void *beta, const void *C, void *cdesc, void *D, void *ddesc, const lt_algo *algo,            \
       void *workspace, size_t workspace_size, void *stream))

/* ---- the CUDA driver: types and values (cuda.h, CUDA 13.0) ------------------ */
typedef int cu_result;       /* CUresult; CUDA_SUCCESS = 0 */
typedef void *cu_context;    /* CUcontext */
typedef void *cu_stream;     /* CUstream; NULL = the legacy default stream */
typedef uint64_t cu_devptr;  /* CUdeviceptr (unsigned long long on 64-bit) */
#define CU_SUCCESS 0
#define CU_PROC_VERSION 12000 /* the pinned cudaVersion passed to cuGetProcAddress */
#define CU_PROC_DEFAULT 0     /* CU_GET_PROC_ADDRESS_DEFAULT */
/* cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, CUdriverProcAddressQueryResult *) */
typedef cu_result (*cu_get_proc_fn)(const char *symbol, void **pfn, int version, uint64_t flags, int *status);

/* X(name, return, params): driver entry points by base name; cuGetProcAddress
 * at version 12000 returns the _v2 forms cuda.h maps these names to. */
#define RAW_CU_LIST(X)                                                                        \
    X(cuGetErrorName, cu_result, (cu_result error, const char **str))                         \
    X(cuCtxSetCurrent, cu_result, (cu_context ctx))                                           \
    X(cuCtxGetCurrent, cu_result, (cu_context *ctx))                                          \
    X(cuStreamSynchronize, cu_result, (cu_stream stream))                                     \
    X(cuMemcpyDtoDAsync, cu_result, (cu_devptr dst, cu_devptr src, size_t bytes, cu_stream stream))

typedef struct raw_libs {
    void *lt_lib, *cu_lib;
    void *handle; /* cublasLtHandle_t */
    size_t lt_version;
#define RAW_MEMBER(name, ret, params) ret(*name) params;
    RAW_LT_LIST(RAW_MEMBER)
    RAW_CU_LIST(RAW_MEMBER)
#undef RAW_MEMBER
} raw_libs;

/* ---- small helpers -------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_u64(rng *r) /* splitmix64 */
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float rng_unit(rng *r) { return (float)((double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0)); }

/* A signed value of magnitude in [lo, hi): never zero. */
static float rng_signed(rng *r, float lo, float hi)
{
    const float v = lo + (hi - lo) * rng_unit(r);
    return (rng_u64(r) & 1) ? -v : v;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *t, size_t n)
{
    if (n == 0) return 0.0;
    double *c = malloc(n * sizeof *c);
    if (c == NULL) return t[0];
    memcpy(c, t, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    const double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (s == NULL || *s == '\0') return -1;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static void json_times(FILE *f, const double *t, int64_t n)
{
    fputc('[', f);
    for (int64_t i = 0; t != NULL && i < n; i++) fprintf(f, "%s%.6g", i ? "," : "", t[i]);
    fputc(']', f);
}

static void *xalloc(size_t n, size_t size) { return n == 0 ? NULL : calloc(n, size); }

/* ---- opening the libraries ------------------------------------------------------- */

/* 0 on success; else a sentence in why. */
static int raw_libs_open(raw_libs *L, char *why, size_t len)
{
    memset(L, 0, sizeof *L);
    static const char *const lt_names[] = {"libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.13"};
    for (size_t i = 0; i < 2 && L->lt_lib == NULL; i++) L->lt_lib = dlopen(lt_names[i], RTLD_NOW | RTLD_LOCAL);
    if (L->lt_lib == NULL) {
        snprintf(why, len, "cannot dlopen libcublasLt.so.13 (nor /usr/local/cuda/lib64/libcublasLt.so.13)");
        return -1;
    }
#define RAW_LT_RESOLVE(name, ret, params)                                  \
    *(void **)&L->name = dlsym(L->lt_lib, #name);                          \
    if (L->name == NULL) {                                                 \
        snprintf(why, len, "cuBLASLt lacks %s", #name);                    \
        return -1;                                                         \
    }
    RAW_LT_LIST(RAW_LT_RESOLVE)
#undef RAW_LT_RESOLVE
    L->lt_version = L->cublasLtGetVersion();
    L->cu_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (L->cu_lib == NULL) {
        snprintf(why, len, "cannot dlopen libcuda.so.1");
        return -1;
    }
    cu_get_proc_fn get_proc = NULL;
    *(void **)&get_proc = dlsym(L->cu_lib, "cuGetProcAddress_v2");
    if (get_proc == NULL) {
        snprintf(why, len, "the driver lacks cuGetProcAddress_v2");
        return -1;
    }
#define RAW_CU_RESOLVE(name, ret, params)                                                           \
    {                                                                                               \
        int qs = 0;                                                                                 \
        void *p = NULL;                                                                             \
        if (get_proc(#name, &p, CU_PROC_VERSION, CU_PROC_DEFAULT, &qs) != CU_SUCCESS || p == NULL) { \
            snprintf(why, len, "the driver has no %s at version %d", #name, CU_PROC_VERSION);      \
            return -1;                                                                              \
        }                                                                                           \
        *(void **)&L->name = p;                                                                     \
    }
    RAW_CU_LIST(RAW_CU_RESOLVE)
#undef RAW_CU_RESOLVE
    return 0;
}

static void raw_libs_close(raw_libs *L)
{
    if (L->handle) L->cublasLtDestroy(L->handle);
    /* The libraries stay mapped: memra holds its own references to the same objects. */
}

static const char *lt_name(const raw_libs *L, lt_status s)
{
    const char *n = L->cublasLtGetStatusName ? L->cublasLtGetStatusName(s) : NULL;
    return n ? n : "?";
}

static const char *cu_name(const raw_libs *L, cu_result r)
{
    const char *n = NULL;
    if (L->cuGetErrorName == NULL || L->cuGetErrorName(r, &n) != CU_SUCCESS || n == NULL) return "?";
    return n;
}

/* ---- the raw matmul -------------------------------------------------------------------- */

enum { LANE_F16, LANE_FP8, LANE_BLK };

typedef struct raw_gemm {
    int lane;
    int32_t m, n, k;
    memra_dptr a, b, d, a_scale, b_scale, ws;
} raw_gemm;

typedef struct raw_plan {
    void *desc, *la, *lb, *ld;
    lt_algo algo;
    size_t ws_needed;
    float waves;
} raw_plan;

static void raw_plan_free(const raw_libs *L, raw_plan *p)
{
    if (p->ld) L->cublasLtMatrixLayoutDestroy(p->ld);
    if (p->lb) L->cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la) L->cublasLtMatrixLayoutDestroy(p->la);
    if (p->desc) L->cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

static uint32_t align_bytes(memra_dptr p) /* as lt.c: the pointer's alignment, capped at 256 */
{
    uint32_t l = 0;
    while (l < 8 && (p & ((memra_dptr)1 << l)) == 0) l++;
    return 1u << l;
}

/* Descriptor, layouts, preference and one heuristic answer, as lt.c's plan_build. */
static int raw_plan_build(const raw_libs *L, const raw_gemm *g, raw_plan *p, char *err, size_t len)
{
    memset(p, 0, sizeof *p);
    void *pref = NULL;
    lt_status s;
    const int ab = g->lane == LANE_F16 ? LT_R_16F : LT_R_8F_E4M3;
    const int32_t op_t = LT_OP_T, op_n = LT_OP_N;
    const char *what = NULL;
#define RAW_TRY(call, w)                              \
    if ((s = (call)) != LT_SUCCESS) {                 \
        what = (w);                                   \
        goto fail;                                    \
    }
    RAW_TRY(L->cublasLtMatmulDescCreate(&p->desc, LT_COMPUTE_32F, LT_R_32F), "cublasLtMatmulDescCreate");
    RAW_TRY(L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_TRANSA, &op_t, sizeof op_t), "set TRANSA");
    RAW_TRY(L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_TRANSB, &op_n, sizeof op_n), "set TRANSB");
    if (g->lane == LANE_BLK) {
        const int32_t am = LT_SCALE_BLK128X128_32F, bm = LT_SCALE_VEC128_32F;
        RAW_TRY(L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_A_SCALE_MODE, &am, sizeof am), "set A_SCALE_MODE");
        RAW_TRY(L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_B_SCALE_MODE, &bm, sizeof bm), "set B_SCALE_MODE");
    }
    if (g->a_scale) {
        const void *ptr = (const void *)(uintptr_t)g->a_scale;
        RAW_TRY(L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_A_SCALE_POINTER, &ptr, sizeof ptr),
                "set A_SCALE_POINTER");
    }
    if (g->b_scale) {
        const void *ptr = (const void *)(uintptr_t)g->b_scale;
        RAW_TRY(L->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_B_SCALE_POINTER, &ptr, sizeof ptr),
                "set B_SCALE_POINTER");
    }
    RAW_TRY(L->cublasLtMatrixLayoutCreate(&p->la, ab, (uint64_t)g->k, (uint64_t)g->n, g->k), "layout A");
    RAW_TRY(L->cublasLtMatrixLayoutCreate(&p->lb, ab, (uint64_t)g->k, (uint64_t)g->m, g->k), "layout B");
    RAW_TRY(L->cublasLtMatrixLayoutCreate(&p->ld, LT_R_32F, (uint64_t)g->n, (uint64_t)g->m, g->n), "layout D");
    RAW_TRY(L->cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const uint64_t ws = RAW_WORKSPACE_BYTES;
    RAW_TRY(L->cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE, &ws, sizeof ws), "set MAX_WORKSPACE");
    const uint32_t al[4] = {align_bytes(g->a), align_bytes(g->b), align_bytes(g->d), align_bytes(g->d)};
    for (int i = 0; i < 4; i++)
        RAW_TRY(L->cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MIN_ALIGN_A + i, &al[i], sizeof al[i]),
                "set MIN_ALIGNMENT");
    lt_heuristic res;
    int n_res = 0;
    memset(&res, 0, sizeof res);
    RAW_TRY(L->cublasLtMatmulAlgoGetHeuristic(L->handle, p->desc, p->la, p->lb, p->ld, p->ld, pref, 1, &res, &n_res),
            "cublasLtMatmulAlgoGetHeuristic");
    if (n_res < 1 || res.state != LT_SUCCESS) {
        snprintf(err, len, "cuBLASLt returned no algorithm (%d results, state %d)", n_res, (int)res.state);
        L->cublasLtMatmulPreferenceDestroy(pref);
        raw_plan_free(L, p);
        return -1;
    }
    p->algo = res.algo;
    p->ws_needed = res.workspace_size;
    p->waves = res.waves_count;
    L->cublasLtMatmulPreferenceDestroy(pref);
    return 0;
#undef RAW_TRY
fail:
    snprintf(err, len, "%s failed: %s (cublasStatus %d)", what, lt_name(L, s), (int)s);
    if (pref) L->cublasLtMatmulPreferenceDestroy(pref);
    raw_plan_free(L, p);
    return -1;
}

static int raw_matmul(const raw_libs *L, const raw_plan *p, const raw_gemm *g, char *err, size_t len)
{
    const float alpha = 1.0f, beta = 0.0f;
    void *d = (void *)(uintptr_t)g->d;
    lt_status s = L->cublasLtMatmul(L->handle, p->desc, &alpha, (const void *)(uintptr_t)g->a, p->la,
                                    (const void *)(uintptr_t)g->b, p->lb, &beta, d, p->ld, d, p->ld, &p->algo,
                                    (void *)(uintptr_t)g->ws, RAW_WORKSPACE_BYTES, NULL);
    if (s != LT_SUCCESS) {
        snprintf(err, len, "cublasLtMatmul: %s (cublasStatus %d)", lt_name(L, s), (int)s);
        return -1;
    }
    return 0;
}

/* ---- the benchmark state ------------------------------------------------------------- */

typedef struct shape {
    int64_t in_f, out_f;
} shape;

static const shape k_27b[] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
static const shape k_1p7b[] = {{2048, 2048}, {2048, 1024}, {2048, 6144}, {6144, 2048}};

/* A_COPY is timed with the others but is no GEMM: it stays out of the arm
 * table and the receipt's "arms" (its times are the shape's "quant_bound"). */
enum { A_F16_PRE, A_F16_CVT, A_F16_RAW, A_FP8, A_FP8_RAW, A_BLK, A_BLK_RAW, A_COPY, A_COUNT };
static const char *const k_arm_name[A_COUNT] = {"f16 pre", "f16 cvt", "f16 RAW", "fp8",
                                                "fp8 RAW", "fp8blk",  "fp8blk RAW", "copy"};
static const char *const k_arm_key[A_COUNT] = {"f16_pre", "f16_cvt", "f16_raw", "fp8",
                                               "fp8_raw", "fp8blk",  "fp8blk_raw", "copy"};
static const int k_arm_is_raw[A_COUNT] = {0, 0, 1, 0, 1, 0, 1, 0};

/* The four comparisons: lane arm, raw arm, op, agreement band, target kind. */
enum { R_F16_PRE, R_F16_CVT, R_FP8, R_BLK, R_COUNT };
static const int k_ratio_lane[R_COUNT] = {A_F16_PRE, A_F16_CVT, A_FP8, A_BLK};
static const int k_ratio_raw[R_COUNT] = {A_F16_RAW, A_F16_RAW, A_FP8_RAW, A_BLK_RAW};
static const char *const k_ratio_key[R_COUNT] = {"f16_pre", "f16_cvt", "fp8", "fp8blk"};
static const double k_band[R_COUNT] = {1e-5, 1e-5, 1e-3, 1e-3};
/* Targets: f16 pre at EVERY shape (min), the others as geometric means;
 * issue 5's, except gemm_fp8's, which are issue 25's (sheet_fp8_target). */
static const double k_target[R_COUNT] = {0.97, 0.90, 0.85, 0.88};
static const int k_target_every[R_COUNT] = {1, 0, 0, 0};
static const int k_target_issue[R_COUNT] = {5, 5, 25, 5};
#define FP8_TARGET_GIVEN 0.92  /* issue 25: geomean with --given static|amax */
#define FP8_TARGET_EVERY 0.75  /* issue 25: every shape, with the lane's own amax pass */
#define QUANT_TARGET_X 1.25    /* issue 25 item 1: the quantiser within 1.25x of its byte bound */
#define DEQUANT_TARGET_PCT 80.0

/* The quantiser's bytes for --given mode g: x read (twice with its own amax
 * pass) at 4 bytes a value, e4m3 written at 1. */
static size_t quant_bytes_read(int64_t m, int64_t k, int g) { return (size_t)(m * k) * 4 * (g ? 1 : 2); }
static size_t quant_bytes_written(int64_t m, int64_t k) { return (size_t)(m * k); }

enum { OPS_F16, OPS_FP8, OPS_BLK, OPS_COUNT };
static const memra_op k_ops[OPS_COUNT] = {MEMRA_OP_gemm_f16, MEMRA_OP_gemm_fp8, MEMRA_OP_gemm_fp8_blk};

typedef struct shape_res {
    int64_t in_f, out_f;
    double flops;
    double *t[A_COUNT];
    double med[A_COUNT];
    double ratio[R_COUNT];   /* speed of the lane relative to raw: raw_ms / lane_ms */
    double agree[R_COUNT];   /* relative Frobenius difference lane vs raw */
    uint64_t calls[OPS_COUNT], hits[OPS_COUNT];
    /* gemm_fp8's quantiser against the copy arm (issue 25 item 1) */
    size_t qb_read, qb_written, qb_copy_b;
    double qb_cost, qb_x, qb_best; /* fp8 - fp8 RAW (ms), cost / copy, raw / (raw + copy) */
    int done;
} shape_res;

typedef struct sheet_res {
    const char *name;
    const shape *shapes;
    size_t n;
    shape_res *res;
    double geo[R_COUNT], min[R_COUNT];
    int met[R_COUNT];
    double target_fp8;         /* issue 25: 0.85 with the own amax pass, 0.92 given */
    int met_fp8_every;         /* every shape >= FP8_TARGET_EVERY (own amax pass only) */
    double qb_max;             /* the largest x of its byte bound over the shapes */
    double qb_best_geo;        /* geomean of raw / (raw + copy) */
    int met_qb;
} sheet_res;

enum { DQ_COUNT = 3 };
static const memra_format k_dq_fmt[DQ_COUNT] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q6_K};

typedef struct dq_res {
    memra_format fmt;
    int64_t rows, cols;
    size_t src_b, dst_b, copy_b;
    double *t_deq, *t_copy;
    double med_deq, med_copy, gbs_deq, gbs_copy, pct;
    uint64_t calls, hits;
    int done;
} dq_res;

typedef struct bench {
    memra_runtime *rt;
    memra_device *dev;
    const memra_device_caps *caps;
    raw_libs L;
    memra_timer *timer;
    rng r;
    uint64_t seed;
    int64_t m, reps, warmup;
    int given; /* 0: the lanes' own amax pass; 1: static x_scale; 2: producer x_amax */
    int failed;
    char err[512];
} bench;

/* ---- device buffers and timed calls ---------------------------------------------------- */

static int upload(bench *b, const void *src, size_t bytes, memra_buffer **out)
{
    memra_status st = memra_buffer_create(b->dev, bytes, out);
    if (st == MEMRA_STATUS_OK && src != NULL) st = memra_buffer_write(*out, 0, src, bytes);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra-bench-raw: device buffer of %zu bytes: %s: %s\n", bytes, memra_status_str(st),
                memra_last_error());
        return -1;
    }
    return 0;
}

static int module_call(bench *b, memra_op op, memra_op_args *a)
{
    a->decline_reason = NULL;
    memra_status st = memra_module_call(b->dev, RAW_MODULE, op, a);
    if (st == MEMRA_STATUS_DECLINED) {
        snprintf(b->err, sizeof b->err, "%s/%s declined: %s", RAW_MODULE, memra_op_name(op),
                 a->decline_reason ? a->decline_reason : "(no reason)");
        return -1;
    }
    if (st != MEMRA_STATUS_OK) {
        snprintf(b->err, sizeof b->err, "%s/%s: %s: %s", RAW_MODULE, memra_op_name(op), memra_status_str(st),
                 memra_last_error());
        return -1;
    }
    return 0;
}

static int timer_mark(bench *b, int stop)
{
    memra_status st = stop ? memra_timer_stop(b->timer, NULL) : memra_timer_start(b->timer, NULL);
    if (st != MEMRA_STATUS_OK) {
        snprintf(b->err, sizeof b->err, "timer: %s: %s", memra_status_str(st), memra_last_error());
        return -1;
    }
    return 0;
}

static int timer_read(bench *b, double *ms)
{
    memra_status st = memra_timer_elapsed_ms(b->timer, ms);
    if (st != MEMRA_STATUS_OK) {
        snprintf(b->err, sizeof b->err, "timer: %s: %s", memra_status_str(st), memra_last_error());
        return -1;
    }
    return 0;
}

static int sync_stream(bench *b)
{
    cu_result r = b->L.cuStreamSynchronize(NULL);
    if (r != CU_SUCCESS) {
        snprintf(b->err, sizeof b->err, "cuStreamSynchronize: %s (%d)", cu_name(&b->L, r), r);
        return -1;
    }
    return 0;
}

/* Relative Frobenius difference of the first `count` floats of two device buffers. */
static int rel_fro(bench *b, const memra_buffer *got, const memra_buffer *ref, size_t count, double *out)
{
    float *g = xalloc(count, sizeof(float)), *r = xalloc(count, sizeof(float));
    int rc = -1;
    if (g == NULL || r == NULL) {
        snprintf(b->err, sizeof b->err, "out of host memory reading back %zu floats", count);
        goto done;
    }
    if (sync_stream(b) != 0) goto done;
    memra_status st = memra_buffer_read(got, 0, g, count * sizeof(float));
    if (st == MEMRA_STATUS_OK) st = memra_buffer_read(ref, 0, r, count * sizeof(float));
    if (st != MEMRA_STATUS_OK) {
        snprintf(b->err, sizeof b->err, "read back: %s: %s", memra_status_str(st), memra_last_error());
        goto done;
    }
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < count; i++) {
        const double d = (double)g[i] - (double)r[i];
        num += d * d;
        den += (double)r[i] * (double)r[i];
    }
    *out = den > 0.0 ? sqrt(num / den) : (num > 0.0 ? INFINITY : 0.0);
    if (!isfinite(*out) && isfinite(num)) *out = INFINITY;
    if (isnan(num) || isnan(den)) *out = NAN;
    rc = 0;
done:
    free(g);
    free(r);
    return rc;
}

/* ---- host-side operand preparation (the raw arms' pre-converted operands) ---------------- */

static void quant_tensor(const float *x, size_t n, uint8_t *q, float *out_sx)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    const float sx = amax > 0.0f ? amax / MEMRA_E4M3_MAX : 1.0f; /* as memra_k_quant_e4m3_tensor */
    for (size_t i = 0; i < n; i++) q[i] = memra_e4m3_encode(x[i] / sx);
    *out_sx = sx;
}

/* Per row per 128 columns, scale of (row i, block j) at s[j * m_pad + i]
 * (cuBLASLt's VEC128_32F, outer dimension fastest); pad rows q = 0, s = 1.
 * s_static > 0: that scale for every block; bmax: each block's amax at
 * bmax[j * m + i] (the producer maxima of --given amax). */
static void quant_row128(const float *x, int64_t m, int64_t m_pad, int64_t k, uint8_t *q, float *s, float s_static,
                         float *bmax)
{
    const int64_t kb = (k + 127) / 128;
    for (int64_t i = 0; i < m_pad; i++)
        for (int64_t j = 0; j < kb; j++) {
            const int64_t c0 = j * 128, c1 = c0 + 128 < k ? c0 + 128 : k;
            if (i >= m) {
                memset(q + i * k + c0, 0, (size_t)(c1 - c0));
                s[j * m_pad + i] = 1.0f;
                continue;
            }
            float amax = 0.0f;
            for (int64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(x[i * k + c]));
            bmax[j * m + i] = amax;
            const float sc = s_static > 0.0f ? s_static : amax > 0.0f ? amax / MEMRA_E4M3_MAX : 1.0f;
            for (int64_t c = c0; c < c1; c++) q[i * k + c] = memra_e4m3_encode(x[i * k + c] / sc);
            s[j * m_pad + i] = sc;
        }
}

/* e4m3 codes with exponent field 5..9 (0.25 .. 7.5): never NaN, never zero. */
static void fill_e4m3(rng *r, uint8_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t u = rng_u64(r);
        const unsigned e = 5u + (unsigned)((u >> 8) % 5u), mant = (unsigned)(u >> 16) & 7u, sign = (unsigned)(u >> 24) & 1u;
        w[i] = (uint8_t)(sign << 7 | e << 3 | mant);
    }
}

/* ---- one shape ----------------------------------------------------------------------------- */

typedef struct shape_ops {
    memra_buffer *x32, *x16, *w16, *w8, *grid, *grid_pad, *xq, *xq_blk, *xs_blk, *scal, *y_lane, *y_raw, *ws;
    memra_buffer *amax; /* --given amax: [0] the batch's amax, from byte 256 the blocks' [kb x m] */
    memra_buffer *copy_src, *copy_dst; /* the copy arm, copy_b bytes each */
    size_t copy_b;
    memra_op_args lane[A_COUNT];
    raw_gemm raw[A_COUNT];
    raw_plan plan[A_COUNT];
} shape_ops;

static void shape_ops_free(bench *b, shape_ops *o)
{
    memra_buffer **bufs[] = {&o->x32, &o->x16, &o->w16, &o->w8, &o->grid, &o->grid_pad, &o->xq,
                             &o->xq_blk, &o->xs_blk, &o->scal, &o->y_lane, &o->y_raw, &o->ws, &o->amax,
                             &o->copy_src, &o->copy_dst};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        memra_buffer_destroy(*bufs[i]);
        *bufs[i] = NULL;
    }
    for (int a = 0; a < A_COUNT; a++) raw_plan_free(&b->L, &o->plan[a]);
}

static int shape_prepare(bench *b, int64_t k, int64_t n, shape_ops *o)
{
    const int64_t m = b->m, m_pad = (m + 3) & ~(int64_t)3;
    const int64_t kb = (k + 127) / 128, ld_grid = (kb + 3) & ~(int64_t)3, grid_rows = (n + 127) / 128;
    const size_t mk = (size_t)(m * k), nk = (size_t)(n * k);
    o->copy_b = (quant_bytes_read(m, k, b->given) + quant_bytes_written(m, k)) / 2 / 256 * 256;
    float *x = xalloc(mk, sizeof(float)), *grid = xalloc((size_t)(grid_rows * kb), sizeof(float));
    float *grid_pad = xalloc((size_t)(grid_rows * ld_grid), sizeof(float));
    float *xs_blk = xalloc((size_t)(kb * m_pad), sizeof(float));
    float *amax = xalloc((size_t)(64 + kb * m), sizeof(float)); /* [0] per tensor, [64..] the blocks' */
    uint16_t *x16 = xalloc(mk, sizeof(uint16_t)), *w16 = xalloc(nk, sizeof(uint16_t));
    uint8_t *w8 = xalloc(nk, 1), *xq = xalloc(mk, 1), *xq_blk = xalloc((size_t)(m_pad * k), 1);
    int rc = -1;
    if (!x || !grid || !grid_pad || !xs_blk || !x16 || !w16 || !w8 || !xq || !xq_blk || !amax) {
        snprintf(b->err, sizeof b->err, "out of host memory for %lld->%lld at m=%lld", (long long)k, (long long)n,
                 (long long)m);
        goto done;
    }
    for (size_t i = 0; i < mk; i++) x[i] = rng_signed(&b->r, 0.25f, 4.0f);
    for (size_t i = 0; i < mk; i++) x16[i] = memra_f16_from_f32(x[i]);
    for (size_t i = 0; i < nk; i++) w16[i] = memra_f16_from_f32(rng_signed(&b->r, 0.01f, 0.5f));
    fill_e4m3(&b->r, w8, nk);
    for (int64_t i = 0; i < grid_rows * kb; i++) grid[i] = 1.0f / 256.0f + rng_unit(&b->r) * (0.25f - 1.0f / 256.0f);
    for (int64_t r = 0; r < grid_rows; r++)
        for (int64_t c = 0; c < ld_grid; c++) grid_pad[r * ld_grid + c] = c < kb ? grid[r * kb + c] : 1.0f;
    /* scal: [0] w_scale, [64] sx, 256 bytes apart so each is 256-byte aligned as memra's slot */
    float scal[128];
    memset(scal, 0, sizeof scal);
    scal[0] = 0.01f;
    quant_tensor(x, mk, xq, &scal[64]);
    quant_row128(x, m, m_pad, k, xq_blk, xs_blk, b->given == 1 ? scal[64] : 0.0f, amax + 64);
    amax[0] = 0.0f; /* the batch's amax (gemm_fp8's x_amax: its scale is then exactly scal[64]) */
    for (size_t i = 0; i < mk; i++) amax[0] = fmaxf(amax[0], fabsf(x[i]));
    if (upload(b, x, mk * 4, &o->x32) || upload(b, x16, mk * 2, &o->x16) || upload(b, w16, nk * 2, &o->w16) ||
        upload(b, w8, nk, &o->w8) || upload(b, grid, (size_t)(grid_rows * kb) * 4, &o->grid) ||
        upload(b, grid_pad, (size_t)(grid_rows * ld_grid) * 4, &o->grid_pad) || upload(b, xq, mk, &o->xq) ||
        upload(b, xq_blk, (size_t)(m_pad * k), &o->xq_blk) || upload(b, xs_blk, (size_t)(kb * m_pad) * 4, &o->xs_blk) ||
        upload(b, scal, sizeof scal, &o->scal) || upload(b, NULL, (size_t)(m_pad * n) * 4, &o->y_lane) ||
        upload(b, NULL, (size_t)(m_pad * n) * 4, &o->y_raw) || upload(b, NULL, RAW_WORKSPACE_BYTES, &o->ws) ||
        upload(b, amax, (size_t)(64 + kb * m) * 4, &o->amax) || upload(b, NULL, o->copy_b, &o->copy_src) ||
        upload(b, NULL, o->copy_b, &o->copy_dst)) {
        snprintf(b->err, sizeof b->err, "device buffers for %lld->%lld", (long long)k, (long long)n);
        goto done;
    }
    /* the lanes, through the sm90 module by name */
    memra_gemm_args g = {.struct_size = sizeof(memra_gemm_args), .m = (int32_t)m, .n = (int32_t)n, .k = (int32_t)k,
                         .y = memra_buffer_ptr(o->y_lane), .ldy = n, .alpha = 1.0f};
    for (int a = 0; a < A_COUNT; a++) {
        memset(&o->lane[a], 0, sizeof o->lane[a]);
        o->lane[a].struct_size = sizeof o->lane[a];
        o->lane[a].gemm = g;
    }
    o->lane[A_F16_PRE].gemm.w = memra_buffer_ptr(o->w16);
    o->lane[A_F16_PRE].gemm.x = memra_buffer_ptr(o->x16);
    o->lane[A_F16_PRE].gemm.x_is_f16 = 1;
    o->lane[A_F16_CVT].gemm.w = memra_buffer_ptr(o->w16);
    o->lane[A_F16_CVT].gemm.x = memra_buffer_ptr(o->x32);
    o->lane[A_FP8].gemm.w = memra_buffer_ptr(o->w8);
    o->lane[A_FP8].gemm.w_scale = scal[0];
    o->lane[A_FP8].gemm.x = memra_buffer_ptr(o->x32);
    o->lane[A_BLK].gemm.w = memra_buffer_ptr(o->w8);
    o->lane[A_BLK].gemm.w_scale_grid = memra_buffer_ptr(o->grid);
    o->lane[A_BLK].gemm.x = memra_buffer_ptr(o->x32);
    if (b->given == 1) { /* one static scale: the batch's amax / 448 (the raw arms quantise with it too) */
        o->lane[A_FP8].gemm.x_scale = scal[64];
        o->lane[A_BLK].gemm.x_scale = scal[64];
    } else if (b->given == 2) { /* the producer's maxima */
        o->lane[A_FP8].gemm.x_amax = memra_buffer_ptr(o->amax);
        o->lane[A_BLK].gemm.x_amax = memra_buffer_ptr(o->amax) + 256;
    }
    /* the raw arms */
    const memra_dptr scal_p = memra_buffer_ptr(o->scal);
    o->raw[A_F16_RAW] = (raw_gemm){.lane = LANE_F16, .m = (int32_t)m, .n = (int32_t)n, .k = (int32_t)k,
                                   .a = memra_buffer_ptr(o->w16), .b = memra_buffer_ptr(o->x16),
                                   .d = memra_buffer_ptr(o->y_raw), .ws = memra_buffer_ptr(o->ws)};
    o->raw[A_FP8_RAW] = o->raw[A_F16_RAW];
    o->raw[A_FP8_RAW].lane = LANE_FP8;
    o->raw[A_FP8_RAW].a = memra_buffer_ptr(o->w8);
    o->raw[A_FP8_RAW].b = memra_buffer_ptr(o->xq);
    o->raw[A_FP8_RAW].a_scale = scal_p;
    o->raw[A_FP8_RAW].b_scale = scal_p + 256;
    o->raw[A_BLK_RAW] = o->raw[A_FP8_RAW];
    o->raw[A_BLK_RAW].lane = LANE_BLK;
    o->raw[A_BLK_RAW].m = (int32_t)m_pad;
    o->raw[A_BLK_RAW].b = memra_buffer_ptr(o->xq_blk);
    o->raw[A_BLK_RAW].a_scale = memra_buffer_ptr(o->grid_pad);
    o->raw[A_BLK_RAW].b_scale = memra_buffer_ptr(o->xs_blk);
    for (int a = 0; a < A_COUNT; a++) {
        if (!k_arm_is_raw[a]) continue;
        char why[256];
        if (raw_plan_build(&b->L, &o->raw[a], &o->plan[a], why, sizeof why) != 0) {
            snprintf(b->err, sizeof b->err, "%s plan at %lld->%lld: %s", k_arm_name[a], (long long)k, (long long)n, why);
            goto done;
        }
    }
    rc = 0;
done:
    free(x);
    free(grid);
    free(grid_pad);
    free(xs_blk);
    free(x16);
    free(w16);
    free(w8);
    free(xq);
    free(xq_blk);
    free(amax);
    return rc;
}

static int ops_of_arm(int a) { return a == A_F16_PRE || a == A_F16_CVT ? OPS_F16 : a == A_FP8 ? OPS_FP8 : OPS_BLK; }

static int arm_run(bench *b, shape_ops *o, int a, shape_res *sr)
{
    if (a == A_COPY) {
        cu_result cr = b->L.cuMemcpyDtoDAsync(memra_buffer_ptr(o->copy_dst), memra_buffer_ptr(o->copy_src), o->copy_b,
                                              NULL);
        if (cr != CU_SUCCESS) {
            snprintf(b->err, sizeof b->err, "cuMemcpyDtoDAsync: %s (%d)", cu_name(&b->L, cr), cr);
            return -1;
        }
        return 0;
    }
    if (k_arm_is_raw[a]) return raw_matmul(&b->L, &o->plan[a], &o->raw[a], b->err, sizeof b->err);
    memra_op_args args = o->lane[a];
    sr->calls[ops_of_arm(a)]++;
    return module_call(b, k_ops[ops_of_arm(a)], &args);
}

static int bench_shape(bench *b, int64_t k, int64_t n, shape_res *sr)
{
    shape_ops o;
    memset(&o, 0, sizeof o);
    memset(sr, 0, sizeof *sr);
    sr->in_f = k;
    sr->out_f = n;
    sr->flops = 2.0 * (double)b->m * (double)n * (double)k;
    uint64_t h0[OPS_COUNT];
    for (int i = 0; i < OPS_COUNT; i++) h0[i] = memra_ledger_hits(b->dev, k_ops[i], RAW_MODULE);
    int rc = -1;
    if (shape_prepare(b, k, n, &o) != 0) goto done;
    for (int a = 0; a < A_COUNT; a++)
        if ((sr->t[a] = xalloc((size_t)b->reps, sizeof(double))) == NULL) {
            snprintf(b->err, sizeof b->err, "out of host memory");
            goto done;
        }
    /* agreement first: each lane against its raw arm on the same quantisation */
    const size_t mn = (size_t)(b->m * n);
    for (int r = 0; r < R_COUNT; r++) {
        if (arm_run(b, &o, k_ratio_lane[r], sr) != 0 || arm_run(b, &o, k_ratio_raw[r], sr) != 0) goto done;
        if (rel_fro(b, o.y_lane, o.y_raw, mn, &sr->agree[r]) != 0) goto done;
    }
    /* interleaved repetitions, the starting arm rotating */
    for (int64_t rep = -b->warmup; rep < b->reps; rep++)
        for (int i = 0; i < A_COUNT; i++) {
            const int a = (int)((rep + b->warmup + i) % A_COUNT);
            double ms = 0.0;
            if (timer_mark(b, 0) != 0 || arm_run(b, &o, a, sr) != 0 || timer_mark(b, 1) != 0 || timer_read(b, &ms) != 0)
                goto done;
            if (rep >= 0) sr->t[a][rep] = ms;
        }
    for (int a = 0; a < A_COUNT; a++) sr->med[a] = median(sr->t[a], (size_t)b->reps);
    for (int r = 0; r < R_COUNT; r++) sr->ratio[r] = sr->med[k_ratio_raw[r]] / sr->med[k_ratio_lane[r]];
    sr->qb_read = quant_bytes_read(b->m, k, b->given);
    sr->qb_written = quant_bytes_written(b->m, k);
    sr->qb_copy_b = o.copy_b;
    sr->qb_cost = sr->med[A_FP8] - sr->med[A_FP8_RAW];
    sr->qb_x = sr->qb_cost / sr->med[A_COPY];
    sr->qb_best = sr->med[A_FP8_RAW] / (sr->med[A_FP8_RAW] + sr->med[A_COPY]);
    for (int i = 0; i < OPS_COUNT; i++) sr->hits[i] = memra_ledger_hits(b->dev, k_ops[i], RAW_MODULE) - h0[i];
    sr->done = 1;
    rc = 0;
done:
    if (rc != 0) {
        for (int i = 0; i < OPS_COUNT; i++) sr->hits[i] = memra_ledger_hits(b->dev, k_ops[i], RAW_MODULE) - h0[i];
        sync_stream(b);
    }
    shape_ops_free(b, &o);
    return rc;
}

/* 0: the shape's evidence holds (agreement within bands, a hit per lane call). */
static int shape_check(const shape_res *sr, FILE *f)
{
    int ok = 1;
    fprintf(f, "    agree (rel. Frobenius, lane vs raw):");
    for (int r = 0; r < R_COUNT; r++) {
        const int pass = sr->agree[r] < k_band[r];
        fprintf(f, " %s %.2e%s", k_ratio_key[r], sr->agree[r], pass ? "" : " FAIL");
        ok &= pass;
    }
    fprintf(f, "\n    ledger (sm90 hits / lane calls):");
    for (int i = 0; i < OPS_COUNT; i++) {
        const int pass = sr->calls[i] > 0 && sr->hits[i] == sr->calls[i];
        fprintf(f, " %s %llu/%llu%s", memra_op_name(k_ops[i]), (unsigned long long)sr->hits[i],
                (unsigned long long)sr->calls[i], pass ? "" : " NOT SERVED");
        ok &= pass;
    }
    fprintf(f, "\n");
    return ok ? 0 : -1;
}

/* A target is a floor (value >= target) or, with at_most, a ceiling. */
static double missed_by_pct(double value, double target, int at_most)
{
    return 100.0 * (at_most ? value - target : target - value) / target;
}

static void print_verdict(const char *what, double value, double target, int met, int at_most, const char *unit)
{
    const char *cmp = at_most ? "<= " : ">= ";
    if (met) printf("  %-48s %8.3f%s  target %s%.2f%s  MET\n", what, value, unit, cmp, target, unit);
    else
        printf("  %-48s %8.3f%s  target %s%.2f%s  MISSED BY %.1f%%\n", what, value, unit, cmp, target, unit,
               missed_by_pct(value, target, at_most));
}

static double sheet_fp8_target(const bench *b) { return b->given ? FP8_TARGET_GIVEN : k_target[R_FP8]; }

static int bench_sheet(bench *b, sheet_res *s)
{
    printf("\nsheet %s, m=%lld%s: median ms, TFLOP/s, speed of lane relative to raw (raw ms / lane ms)\n", s->name,
           (long long)b->m,
           b->given == 1 ? ", FP8 lanes at a static x_scale" : b->given == 2 ? ", FP8 lanes at producer x_amax" : "");
    printf("  %-14s %-11s %10s %9s %9s\n", "in->out", "arm", "median ms", "TFLOP/s", "lane/raw");
    int rc = 0;
    for (size_t i = 0; i < s->n; i++) {
        shape_res *sr = &s->res[i];
        char name[40];
        snprintf(name, sizeof name, "%lld->%lld", (long long)s->shapes[i].in_f, (long long)s->shapes[i].out_f);
        if (bench_shape(b, s->shapes[i].in_f, s->shapes[i].out_f, sr) != 0) {
            fprintf(stderr, "memra-bench-raw: %s: %s\n", name, b->err);
            return -1;
        }
        for (int a = 0; a < A_COPY; a++) {
            printf("  %-14s %-11s %10.4f %9.1f", a ? "" : name, k_arm_name[a], sr->med[a],
                   sr->flops / (sr->med[a] * 1e-3) / 1e12);
            for (int r = 0; r < R_COUNT; r++)
                if (k_ratio_lane[r] == a) printf(" %8.3fx", sr->ratio[r]);
            printf("\n");
        }
        printf("    fp8 quantiser: cost %.4f ms (fp8 - fp8 RAW), byte bound %.4f ms (copy arm: %.1f MB read + %.1f MB "
               "written as a copy of %.1f MB, %.0f GB/s)\n      %.2fx of its byte bound; best ratio with a separate "
               "pass %.3fx (raw / (raw + copy))\n",
               sr->qb_cost, sr->med[A_COPY], (double)sr->qb_read / 1e6, (double)sr->qb_written / 1e6,
               (double)sr->qb_copy_b / 1e6, (double)(2 * sr->qb_copy_b) / (sr->med[A_COPY] * 1e-3) / 1e9, sr->qb_x,
               sr->qb_best);
        if (shape_check(sr, stdout) != 0) {
            printf("    INVALID: a lane disagrees with its raw arm or was not served by %s\n", RAW_MODULE);
            rc = -1;
        }
        fflush(stdout);
    }
    printf("  geometric means over %zu shapes (lane/raw):", s->n);
    for (int r = 0; r < R_COUNT; r++) {
        double lsum = 0.0, mn = INFINITY;
        for (size_t i = 0; i < s->n; i++) {
            lsum += log(s->res[i].ratio[r]);
            mn = fmin(mn, s->res[i].ratio[r]);
        }
        s->geo[r] = exp(lsum / (double)s->n);
        s->min[r] = mn;
        printf(" %s %.3fx", k_ratio_key[r], s->geo[r]);
    }
    double best_sum = 0.0;
    s->qb_max = -INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        s->qb_max = fmax(s->qb_max, s->res[i].qb_x);
        best_sum += log(s->res[i].qb_best);
    }
    s->qb_best_geo = exp(best_sum / (double)s->n);
    printf("\n  fp8 best ratio with a separate pass at the copy rate (geomean): %.3fx\n", s->qb_best_geo);
    for (int r = 0; r < R_COUNT; r++) {
        const double t = r == R_FP8 ? sheet_fp8_target(b) : k_target[r];
        s->met[r] = (k_target_every[r] ? s->min[r] : s->geo[r]) >= t;
    }
    s->target_fp8 = sheet_fp8_target(b);
    s->met_fp8_every = s->min[R_FP8] >= FP8_TARGET_EVERY;
    s->met_qb = s->qb_max <= QUANT_TARGET_X;
    printf("  the lanes against raw cuBLASLt (lane/raw), sheet %s m=%lld; issue 5's targets:\n", s->name,
           (long long)b->m);
    print_verdict("gemm_f16 pre-converted, every shape (min)", s->min[R_F16_PRE], k_target[R_F16_PRE],
                  s->met[R_F16_PRE], 0, "x");
    print_verdict("gemm_f16 convert in-stream (geomean)", s->geo[R_F16_CVT], k_target[R_F16_CVT], s->met[R_F16_CVT], 0,
                  "x");
    print_verdict("gemm_fp8_blk with quantiser (geomean)", s->geo[R_BLK], k_target[R_BLK], s->met[R_BLK], 0, "x");
    printf("  gemm_fp8, issue 25's targets (%s):\n", b->given ? "a given scale, one pass" : "its own amax pass");
    if (b->given) {
        print_verdict("gemm_fp8 at a given scale (geomean)", s->geo[R_FP8], s->target_fp8, s->met[R_FP8], 0, "x");
    } else {
        print_verdict("gemm_fp8 with its amax pass (geomean)", s->geo[R_FP8], s->target_fp8, s->met[R_FP8], 0, "x");
        print_verdict("gemm_fp8 with its amax pass, every shape (min)", s->min[R_FP8], FP8_TARGET_EVERY,
                      s->met_fp8_every, 0, "x");
    }
    print_verdict("quantiser x of its byte bound, every shape (max)", s->qb_max, QUANT_TARGET_X, s->met_qb, 1, "x");
    return rc;
}

/* ---- dequant_f16 against a device copy --------------------------------------------------- */

static void fill_blocks(rng *r, memra_format fmt, uint8_t *dst, int64_t rows, int64_t cols)
{
    const int bv = memra_format_block_values(fmt), bb = memra_format_block_bytes(fmt);
    const int64_t nb = rows * (cols / bv);
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * (size_t)bb;
        if (fmt == MEMRA_FORMAT_Q8_0) {
            float v[MEMRA_QK8_0];
            for (int l = 0; l < MEMRA_QK8_0; l++) v[l] = rng_signed(r, 0.01f, 0.5f);
            memra_q8_0_encode(v, blk);
            continue;
        }
        for (int j = 0; j < bb; j++) blk[j] = (uint8_t)rng_u64(r);
        /* finite, non-zero f16 super-block scales: Q4_K d, dmin at bytes 0..3; Q6_K d at 208 */
        const uint16_t d = memra_f16_from_f32(1e-3f + 1e-2f * rng_unit(r));
        const uint16_t dmin = memra_f16_from_f32(1e-3f + 1e-2f * rng_unit(r));
        const int at = fmt == MEMRA_FORMAT_Q6_K ? 208 : 0;
        memcpy(blk + at, &d, 2);
        if (fmt == MEMRA_FORMAT_Q4_K) memcpy(blk + 2, &dmin, 2);
    }
}

static int bench_dequant(bench *b, dq_res *res)
{
    const int64_t rows = 17408, cols = 5120; /* the 5120 -> 17408 weight: out_f rows of in_f values */
    int rc = 0;
    printf("\ndequant_f16 of a %lld x %lld weight vs a device copy moving the same bytes (read + written)\n",
           (long long)rows, (long long)cols);
    printf("  %-6s %10s %10s %10s %10s %8s\n", "format", "deq ms", "deq GB/s", "copy ms", "copy GB/s", "% copy");
    for (int fi = 0; fi < DQ_COUNT; fi++) {
        dq_res *d = &res[fi];
        memset(d, 0, sizeof *d);
        d->fmt = k_dq_fmt[fi];
        d->rows = rows;
        d->cols = cols;
        d->src_b = (size_t)(rows * (int64_t)memra_format_row_bytes(d->fmt, cols));
        d->dst_b = (size_t)(rows * cols * 2);
        d->copy_b = (d->src_b + d->dst_b) / 2 / 256 * 256; /* a copy reads and writes copy_b each */
        uint8_t *host = xalloc(d->src_b, 1);
        memra_buffer *src = NULL, *dst = NULL, *ca = NULL, *cb = NULL;
        d->t_deq = xalloc((size_t)b->reps, sizeof(double));
        d->t_copy = xalloc((size_t)b->reps, sizeof(double));
        const uint64_t h0 = memra_ledger_hits(b->dev, MEMRA_OP_dequant_f16, RAW_MODULE);
        int frc = -1;
        if (host == NULL || d->t_deq == NULL || d->t_copy == NULL) {
            snprintf(b->err, sizeof b->err, "out of host memory");
            goto next;
        }
        fill_blocks(&b->r, d->fmt, host, rows, cols);
        if (upload(b, host, d->src_b, &src) || upload(b, NULL, d->dst_b, &dst) || upload(b, NULL, d->copy_b, &ca) ||
            upload(b, NULL, d->copy_b, &cb)) {
            snprintf(b->err, sizeof b->err, "device buffers");
            goto next;
        }
        memra_op_args args;
        memset(&args, 0, sizeof args);
        args.struct_size = sizeof args;
        args.format = d->fmt;
        args.src = memra_buffer_ptr(src);
        args.dst = memra_buffer_ptr(dst);
        args.rows = rows;
        args.cols = cols;
        for (int64_t rep = -b->warmup; rep < b->reps; rep++)
            for (int i = 0; i < 2; i++) {
                const int arm = (int)((rep + b->warmup + i) % 2);
                double ms = 0.0;
                if (timer_mark(b, 0) != 0) goto next;
                if (arm == 0) {
                    memra_op_args a = args;
                    d->calls++;
                    if (module_call(b, MEMRA_OP_dequant_f16, &a) != 0) goto next;
                } else {
                    cu_result cr = b->L.cuMemcpyDtoDAsync(memra_buffer_ptr(cb), memra_buffer_ptr(ca), d->copy_b, NULL);
                    if (cr != CU_SUCCESS) {
                        snprintf(b->err, sizeof b->err, "cuMemcpyDtoDAsync: %s (%d)", cu_name(&b->L, cr), cr);
                        goto next;
                    }
                }
                if (timer_mark(b, 1) != 0 || timer_read(b, &ms) != 0) goto next;
                if (rep >= 0) (arm == 0 ? d->t_deq : d->t_copy)[rep] = ms;
            }
        d->med_deq = median(d->t_deq, (size_t)b->reps);
        d->med_copy = median(d->t_copy, (size_t)b->reps);
        d->gbs_deq = (double)(d->src_b + d->dst_b) / (d->med_deq * 1e-3) / 1e9;
        d->gbs_copy = (double)(2 * d->copy_b) / (d->med_copy * 1e-3) / 1e9;
        d->pct = 100.0 * d->gbs_deq / d->gbs_copy;
        d->done = 1;
        frc = 0;
    next:
        d->hits = memra_ledger_hits(b->dev, MEMRA_OP_dequant_f16, RAW_MODULE) - h0;
        if (frc != 0) sync_stream(b);
        memra_buffer_destroy(src);
        memra_buffer_destroy(dst);
        memra_buffer_destroy(ca);
        memra_buffer_destroy(cb);
        free(host);
        if (frc != 0) {
            fprintf(stderr, "memra-bench-raw: dequant_f16 %s: %s\n", memra_format_name(d->fmt), b->err);
            return -1;
        }
        printf("  %-6s %10.4f %10.1f %10.4f %10.1f %7.1f%%   ledger sm90/dequant_f16 %llu/%llu%s\n",
               memra_format_name(d->fmt), d->med_deq, d->gbs_deq, d->med_copy, d->gbs_copy, d->pct,
               (unsigned long long)d->hits, (unsigned long long)d->calls, d->hits == d->calls ? "" : " NOT SERVED");
        if (d->hits != d->calls) rc = -1;
    }
    printf("  issue 5's target: dequant_f16 at least %.0f%% of the copy rate, every format:\n", DEQUANT_TARGET_PCT);
    for (int fi = 0; fi < DQ_COUNT; fi++) {
        char what[64];
        snprintf(what, sizeof what, "dequant_f16 %s (%% of copy)", memra_format_name(res[fi].fmt));
        print_verdict(what, res[fi].pct, DEQUANT_TARGET_PCT, res[fi].pct >= DEQUANT_TARGET_PCT, 0, "%");
    }
    return rc;
}

/* ---- the receipt ------------------------------------------------------------------------------ */

/* "bound": "at_least" (value >= threshold) or "at_most"; "issue": whose target. */
static void json_verdict(FILE *f, const char *target, const char *measure, double value, double threshold, int met,
                         int at_most, int issue)
{
    fprintf(f, "{\"target\":\"%s\",\"measure\":\"%s\",\"value\":%.6g,\"threshold\":%.6g,\"bound\":\"%s\",\"issue\":%d,"
               "\"met\":%s,\"missed_by_pct\":%.4g}",
            target, measure, value, threshold, at_most ? "at_most" : "at_least", issue, met ? "true" : "false",
            met ? 0.0 : missed_by_pct(value, threshold, at_most));
}

static int write_receipt(bench *b, const char *path, const sheet_res *sheets, int nsheets, const dq_res *dq, int dq_ran,
                         int rc)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "memra-bench-raw: cannot write %s\n", path);
        return -1;
    }
    memra_device_clocks clk = {0, 0};
    memra_device_clocks_get(b->dev, &clk);
    char ts[32];
    tool_utc_timestamp(ts, sizeof ts);
    /* version 3: the build's commit and this machine's name, as memra bench's receipts carry */
    char host[256];
    tool_host_name(host, sizeof host);
    fprintf(f, "{\"format\":\"memra-bench-raw\",\"version\":3,\"timestamp\":\"%s\",\"complete\":%s,\"commit\":", ts,
            rc == 0 ? "true" : "false");
    tool_json_str(f, MEMRA_GIT_COMMIT);
    fprintf(f, ",\"host\":");
    tool_json_str(f, host);
    fprintf(f, ",\"memra\":");
    tool_json_str(f, memra_version());
    fprintf(f, ",\n\"device\":{\"name\":");
    tool_json_str(f, b->caps->name);
    fprintf(f, ",\"profile\":");
    tool_json_str(f, b->caps->profile);
    fprintf(f, ",\"cc\":%d,\"sm_count\":%d,\"sm_clock_khz\":%d,\"mem_clock_khz\":%d,\"total_mem\":%llu}", b->caps->cc,
            b->caps->sm_count, clk.sm_khz, clk.mem_khz, (unsigned long long)b->caps->total_mem);
    fprintf(f, ",\"driver_version\":%d,\"cublaslt_version\":%zu,\"modules\":[", memra_driver_version(b->rt),
            b->L.lt_version);
    for (int i = 0, first = 1; i < memra_module_count(b->rt); i++) {
        memra_module_info mi;
        if (memra_module_info_get(b->rt, i, &mi) != MEMRA_STATUS_OK) continue;
        fprintf(f, "%s{\"name\":", first ? "" : ",");
        tool_json_str(f, mi.name);
        fprintf(f, ",\"version\":");
        tool_json_str(f, mi.version);
        fprintf(f, ",\"loaded\":%s}", mi.loaded ? "true" : "false");
        first = 0;
    }
    fprintf(f, "],\n\"m\":%lld,\"reps\":%lld,\"warmup\":%lld,\"seed\":%llu,\"given\":\"%s\",\"ratio\":\"raw_ms/lane_ms\",\"sheets\":[",
            (long long)b->m, (long long)b->reps, (long long)b->warmup, (unsigned long long)b->seed,
            b->given == 1 ? "static" : b->given == 2 ? "amax" : "none");
    for (int si = 0; si < nsheets; si++) {
        const sheet_res *s = &sheets[si];
        fprintf(f, "%s\n{\"sheet\":\"%s\",\"shapes\":[", si ? "," : "", s->name);
        int complete = 1;
        for (size_t i = 0; i < s->n; i++) {
            const shape_res *sr = &s->res[i];
            if (!sr->done) {
                complete = 0;
                break;
            }
            fprintf(f, "%s\n {\"shape\":\"%lld->%lld\",\"in_f\":%lld,\"out_f\":%lld,\"flops\":%.0f,\"arms\":[",
                    i ? "," : "", (long long)sr->in_f, (long long)sr->out_f, (long long)sr->in_f, (long long)sr->out_f,
                    sr->flops);
            for (int a = 0; a < A_COPY; a++) {
                fprintf(f, "%s\n  {\"arm\":\"%s\",\"raw\":%s,\"op\":\"%s\",\"times_ms\":", a ? "," : "", k_arm_key[a],
                        k_arm_is_raw[a] ? "true" : "false",
                        k_arm_is_raw[a] ? "cublasLtMatmul" : memra_op_name(k_ops[ops_of_arm(a)]));
                json_times(f, sr->t[a], b->reps);
                fprintf(f, ",\"median_ms\":%.6g,\"tflops\":%.6g}", sr->med[a], sr->flops / (sr->med[a] * 1e-3) / 1e12);
            }
            fprintf(f, "],\n  \"ratios\":{");
            for (int r = 0; r < R_COUNT; r++) fprintf(f, "%s\"%s\":%.6g", r ? "," : "", k_ratio_key[r], sr->ratio[r]);
            fprintf(f, "},\"agreement_rel_fro\":{");
            for (int r = 0; r < R_COUNT; r++)
                fprintf(f, "%s\"%s\":{\"value\":%.4g,\"band\":%g}", r ? "," : "", k_ratio_key[r], sr->agree[r], k_band[r]);
            fprintf(f, "},\"ledger\":[");
            for (int i2 = 0; i2 < OPS_COUNT; i2++)
                fprintf(f, "%s{\"op\":\"%s\",\"module\":\"%s\",\"hits\":%llu,\"calls\":%llu}", i2 ? "," : "",
                        memra_op_name(k_ops[i2]), RAW_MODULE, (unsigned long long)sr->hits[i2],
                        (unsigned long long)sr->calls[i2]);
            fprintf(f, "],\n  \"quant_bound\":{\"op\":\"gemm_fp8\",\"bytes_read\":%zu,\"bytes_written\":%zu,\"bytes\":%zu,"
                       "\"copy_bytes\":%zu,\"copy_times_ms\":",
                    sr->qb_read, sr->qb_written, sr->qb_read + sr->qb_written, sr->qb_copy_b);
            json_times(f, sr->t[A_COPY], b->reps);
            fprintf(f, ",\"copy_ms\":%.6g,\"cost_ms\":%.6g,\"x_bound\":%.6g,\"best_ratio\":%.6g}}", sr->med[A_COPY],
                    sr->qb_cost, sr->qb_x, sr->qb_best);
        }
        fprintf(f, "]");
        if (complete) {
            fprintf(f, ",\n \"geomean\":{");
            for (int r = 0; r < R_COUNT; r++) fprintf(f, "%s\"%s\":%.6g", r ? "," : "", k_ratio_key[r], s->geo[r]);
            fprintf(f, "},\"min\":{");
            for (int r = 0; r < R_COUNT; r++) fprintf(f, "%s\"%s\":%.6g", r ? "," : "", k_ratio_key[r], s->min[r]);
            fprintf(f, "},\"quant_bound\":{\"max_x_bound\":%.6g,\"geomean_best_ratio\":%.6g},\n \"verdicts\":[",
                    s->qb_max, s->qb_best_geo);
            for (int r = 0; r < R_COUNT; r++) {
                if (r) fprintf(f, ",");
                json_verdict(f, k_ratio_key[r], k_target_every[r] ? "min" : "geomean",
                             k_target_every[r] ? s->min[r] : s->geo[r], r == R_FP8 ? s->target_fp8 : k_target[r],
                             s->met[r], 0, k_target_issue[r]);
            }
            if (!b->given) {
                fprintf(f, ",");
                json_verdict(f, "fp8", "min", s->min[R_FP8], FP8_TARGET_EVERY, s->met_fp8_every, 0, 25);
            }
            fprintf(f, ",");
            json_verdict(f, "fp8_quant", "max_x_bound", s->qb_max, QUANT_TARGET_X, s->met_qb, 1, 25);
            fprintf(f, "]");
        }
        fprintf(f, "}");
    }
    fprintf(f, "]");
    if (dq_ran) {
        fprintf(f, ",\n\"dequant\":[");
        for (int i = 0, first = 1; i < DQ_COUNT; i++) {
            const dq_res *d = &dq[i];
            if (!d->done) continue;
            fprintf(f, "%s\n {\"format\":\"%s\",\"rows\":%lld,\"cols\":%lld,\"src_bytes\":%zu,\"dst_bytes\":%zu,"
                       "\"copy_bytes\":%zu,\"dequant_ms\":", first ? "" : ",", memra_format_name(d->fmt),
                    (long long)d->rows, (long long)d->cols, d->src_b, d->dst_b, d->copy_b);
            json_times(f, d->t_deq, b->reps);
            fprintf(f, ",\"copy_ms\":");
            json_times(f, d->t_copy, b->reps);
            fprintf(f, ",\"median_dequant_ms\":%.6g,\"median_copy_ms\":%.6g,\"dequant_gbs\":%.6g,\"copy_gbs\":%.6g,"
                       "\"pct_of_copy\":%.6g,\"ledger\":{\"op\":\"dequant_f16\",\"module\":\"%s\",\"hits\":%llu,"
                       "\"calls\":%llu},\"verdict\":",
                    d->med_deq, d->med_copy, d->gbs_deq, d->gbs_copy, d->pct, RAW_MODULE, (unsigned long long)d->hits,
                    (unsigned long long)d->calls);
            json_verdict(f, "dequant_f16", "pct_of_copy", d->pct, DEQUANT_TARGET_PCT, d->pct >= DEQUANT_TARGET_PCT, 0, 5);
            fprintf(f, "}");
            first = 0;
        }
        fprintf(f, "]");
    }
    fprintf(f, "}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "memra-bench-raw: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* ---- the program ------------------------------------------------------------------------------- */

static const char k_usage[] =
    "usage: memra-bench-raw [--sheet 27b|1p7b|all] [--m M] [--reps R] [--warmup W] [--json FILE]\n"
    "                       [--seed S] [--device N] [--no-dequant] [--given static|amax]\n"
    "  Times the sm90 module's cuBLASLt lanes (gemm_f16 pre-converted and convert in-stream,\n"
    "  gemm_fp8, gemm_fp8_blk) beside the same cuBLASLt matmul called directly on operands\n"
    "  already converted or quantised, and a device copy of gemm_fp8's quantiser bytes,\n"
    "  interleaved in each repetition; then dequant_f16 (Q8_0, Q4_K, Q6_K, 5120 x 17408)\n"
    "  beside a device copy of the same bytes. Prints medians, TFLOP/s, lane/raw speed ratios,\n"
    "  the quantiser's cost against its byte bound, and the targets (issue 5's for the f16 and\n"
    "  block lanes and dequant_f16, issue 25's for gemm_fp8 and its quantiser; MET / MISSED BY).\n"
    "  --given: the FP8 lanes quantise in one pass at a static x_scale or producer x_amax\n"
    "  (issue 25 item 2) instead of their own amax pass.\n"
    "  Defaults: --sheet all, --m 512, --reps 20, --warmup 3, device 0. Exit 77 without a GPU.\n";

int main(int argc, char **argv)
{
    const char *sheet = "all", *json = NULL;
    int64_t m = 512, reps = 20, warmup = 3, dev_sel = 0, seed = -1;
    int no_dequant = 0, given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const int more = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(k_usage, stdout);
            return 0;
        } else if (strcmp(a, "--sheet") == 0 && more) {
            sheet = argv[++i];
            if (strcmp(sheet, "27b") != 0 && strcmp(sheet, "1p7b") != 0 && strcmp(sheet, "all") != 0) goto bad_value;
        } else if (strcmp(a, "--m") == 0 && more) {
            if (parse_i64(argv[++i], 1, RAW_MAX_M, &m) != 0) goto bad_value;
        } else if (strcmp(a, "--reps") == 0 && more) {
            if (parse_i64(argv[++i], 1, RAW_MAX_REPS, &reps) != 0) goto bad_value;
        } else if (strcmp(a, "--warmup") == 0 && more) {
            if (parse_i64(argv[++i], 0, RAW_MAX_REPS, &warmup) != 0) goto bad_value;
        } else if (strcmp(a, "--device") == 0 && more) {
            if (parse_i64(argv[++i], 0, 1 << 20, &dev_sel) != 0) goto bad_value;
        } else if (strcmp(a, "--seed") == 0 && more) {
            if (parse_i64(argv[++i], 0, INT64_MAX, &seed) != 0) goto bad_value;
        } else if (strcmp(a, "--json") == 0 && more) {
            json = argv[++i];
        } else if (strcmp(a, "--no-dequant") == 0) {
            no_dequant = 1;
        } else if (strcmp(a, "--given") == 0 && more) {
            const char *g = argv[++i];
            given = strcmp(g, "static") == 0 ? 1 : strcmp(g, "amax") == 0 ? 2 : strcmp(g, "none") == 0 ? 0 : -1;
            if (given < 0) goto bad_value;
        } else {
            fprintf(stderr, "memra-bench-raw: unknown or incomplete option '%s'\n%s", a, k_usage);
            return 2;
        }
        continue;
    bad_value:
        fprintf(stderr, "memra-bench-raw: bad value '%s' for %s\n%s", argv[i], a, k_usage);
        return 2;
    }

    bench b;
    memset(&b, 0, sizeof b);
    b.m = m;
    b.reps = reps;
    b.warmup = warmup;
    b.given = given;
    b.seed = seed >= 0 ? (uint64_t)seed : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    b.r.s = b.seed;
    memra_status st = memra_open(NULL, &b.rt);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra-bench-raw: memra_open: %s: %s\n", memra_status_str(st), memra_last_error());
        return 1;
    }
    int rc = 0;
    if (dev_sel >= memra_device_count(b.rt)) {
        fprintf(stderr, "memra-bench-raw: no device %lld (there are %d)\n", (long long)dev_sel,
                memra_device_count(b.rt));
        memra_close(b.rt);
        return 2;
    }
    b.dev = memra_device_get(b.rt, (int)dev_sel);
    b.caps = memra_device_caps_get(b.dev);
    if (b.caps->arch == MEMRA_ARCH_HOST || b.caps->cu_context == NULL) {
        printf("memra-bench-raw: SKIPPED: no GPU device to run on (driver: %s)\n", memra_driver_status(b.rt));
        memra_close(b.rt);
        return RAW_SKIP;
    }
    const int lanes = memra_module_provides(b.dev, RAW_MODULE, MEMRA_OP_gemm_f16) &&
                      memra_module_provides(b.dev, RAW_MODULE, MEMRA_OP_gemm_fp8) &&
                      memra_module_provides(b.dev, RAW_MODULE, MEMRA_OP_gemm_fp8_blk);
    if (!lanes) {
        printf("memra-bench-raw: SKIPPED: the %s module is not admitted on %s (cc %d, profile %s) or lacks a lane\n",
               RAW_MODULE, b.caps->name, b.caps->cc, b.caps->profile);
        memra_close(b.rt);
        return RAW_SKIP;
    }
    if (raw_libs_open(&b.L, b.err, sizeof b.err) != 0) {
        printf("memra-bench-raw: SKIPPED: %s\n", b.err);
        memra_close(b.rt);
        return RAW_SKIP;
    }
    if (b.L.lt_version < LT_VERSION_BLOCK_SCALES) {
        printf("memra-bench-raw: SKIPPED: cuBLASLt %zu has no block-scaled FP8 (needs %d)\n", b.L.lt_version,
               LT_VERSION_BLOCK_SCALES);
        memra_close(b.rt);
        return RAW_SKIP;
    }
    /* the raw calls run in the device's primary context, the one memra's ops push */
    cu_result cr = b.L.cuCtxSetCurrent(b.caps->cu_context);
    lt_status ls = cr == CU_SUCCESS ? b.L.cublasLtCreate(&b.L.handle) : LT_SUCCESS;
    if (cr != CU_SUCCESS || ls != LT_SUCCESS) {
        fprintf(stderr, "memra-bench-raw: %s\n", cr != CU_SUCCESS ? cu_name(&b.L, cr) : lt_name(&b.L, ls));
        memra_close(b.rt);
        return 1;
    }
    st = memra_timer_create(b.dev, &b.timer);
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra-bench-raw: timer: %s: %s\n", memra_status_str(st), memra_last_error());
        raw_libs_close(&b.L);
        memra_close(b.rt);
        return 1;
    }
    memra_device_clocks clk = {0, 0};
    memra_device_clocks_get(b.dev, &clk);
    printf("memra-bench-raw: %s (cc %d, %d SMs, profile %s), SM %d MHz, mem %d MHz, driver %d, cuBLASLt %zu, memra %s\n",
           b.caps->name, b.caps->cc, b.caps->sm_count, b.caps->profile, clk.sm_khz / 1000, clk.mem_khz / 1000,
           memra_driver_version(b.rt), b.L.lt_version, memra_version());
    printf("  m=%lld, reps %lld after %lld warm-up, seed %llu; modules:", (long long)b.m, (long long)b.reps,
           (long long)b.warmup, (unsigned long long)b.seed);
    for (int i = 0; i < memra_module_count(b.rt); i++) {
        memra_module_info mi;
        if (memra_module_info_get(b.rt, i, &mi) == MEMRA_STATUS_OK && mi.loaded) printf(" %s %s", mi.name, mi.version);
    }
    printf("\n");

    sheet_res sheets[2];
    int nsheets = 0;
    memset(sheets, 0, sizeof sheets);
    if (strcmp(sheet, "1p7b") != 0)
        sheets[nsheets++] = (sheet_res){.name = "27b", .shapes = k_27b, .n = sizeof k_27b / sizeof k_27b[0]};
    if (strcmp(sheet, "27b") != 0)
        sheets[nsheets++] = (sheet_res){.name = "1p7b", .shapes = k_1p7b, .n = sizeof k_1p7b / sizeof k_1p7b[0]};
    for (int si = 0; si < nsheets; si++) {
        sheets[si].res = xalloc(sheets[si].n, sizeof(shape_res));
        if (sheets[si].res == NULL) rc = 1;
    }
    for (int si = 0; si < nsheets && rc == 0; si++)
        if (bench_sheet(&b, &sheets[si]) != 0) rc = 1;
    dq_res dq[DQ_COUNT];
    memset(dq, 0, sizeof dq);
    if (rc == 0 && !no_dequant && bench_dequant(&b, dq) != 0) rc = 1;
    if (rc == 0) printf("\nevidence: every lane call above was served by %s (ledger), and agreed with its raw arm\n",
                        RAW_MODULE);
    if (json && write_receipt(&b, json, sheets, nsheets, dq, !no_dequant, rc) != 0) rc = 1;
    if (json && rc != 0) fprintf(stderr, "memra-bench-raw: the receipt %s is incomplete\n", json);

    for (int si = 0; si < nsheets; si++) {
        for (size_t i = 0; sheets[si].res && i < sheets[si].n; i++)
            for (int a = 0; a < A_COUNT; a++) free(sheets[si].res[i].t[a]);
        free(sheets[si].res);
    }
    for (int i = 0; i < DQ_COUNT; i++) {
        free(dq[i].t_deq);
        free(dq[i].t_copy);
    }
    memra_timer_destroy(b.timer);
    raw_libs_close(&b.L);
    memra_close(b.rt);
    return rc;
}
