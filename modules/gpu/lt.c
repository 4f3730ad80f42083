/* cuBLASLt by dlopen: entry points, handle, plan cache, matmul (see lt.h). */
#include "lt.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Types and values of cublasLt.h / cublas_api.h / library_types.h (CUDA 13.0,
 * cuBLAS 13.1 headers on the build machine), declared here so no CUDA header
 * is needed. Enums are C ints in the library's ABI. */
typedef int memra__lt_status; /* cublasStatus_t */
#define LT_STATUS_SUCCESS 0         /* CUBLAS_STATUS_SUCCESS */
#define LT_STATUS_NOT_SUPPORTED 15  /* CUBLAS_STATUS_NOT_SUPPORTED */
#define LT_CUDA_R_32F 0             /* cudaDataType CUDA_R_32F */
#define LT_CUDA_R_16F 2             /* cudaDataType CUDA_R_16F */
#define LT_CUDA_R_16BF 14           /* cudaDataType CUDA_R_16BF */
#define LT_CUDA_R_8F_E4M3 28        /* cudaDataType CUDA_R_8F_E4M3 */
#define LT_COMPUTE_32F 68           /* cublasComputeType_t CUBLAS_COMPUTE_32F */
#define LT_OP_N 0                   /* cublasOperation_t CUBLAS_OP_N */
#define LT_OP_T 1                   /* cublasOperation_t CUBLAS_OP_T */
#define LT_DESC_TRANSA 3            /* CUBLASLT_MATMUL_DESC_TRANSA, int32 */
#define LT_DESC_TRANSB 4            /* CUBLASLT_MATMUL_DESC_TRANSB, int32 */
#define LT_DESC_A_SCALE_POINTER 17  /* CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, const void * */
#define LT_DESC_B_SCALE_POINTER 18  /* CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, const void * */
#define LT_DESC_A_SCALE_MODE 31     /* CUBLASLT_MATMUL_DESC_A_SCALE_MODE, int32 */
#define LT_DESC_B_SCALE_MODE 32     /* CUBLASLT_MATMUL_DESC_B_SCALE_MODE, int32 */
#define LT_SCALE_VEC128_32F 4       /* CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F: one f32 per 128 along k */
#define LT_SCALE_BLK128x128_32F 5   /* CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F */
#define LT_PREF_MAX_WORKSPACE 1     /* CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64 */
#define LT_PREF_MIN_ALIGN_A 5       /* CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32 (B 6, C 7, D 8) */

typedef struct memra__lt_algo { /* cublasLtMatmulAlgo_t */
    uint64_t data[8];
} memra__lt_algo;

typedef struct memra__lt_heuristic { /* cublasLtMatmulHeuristicResult_t */
    memra__lt_algo algo;
    size_t workspace_size;
    memra__lt_status state;
    float waves_count;
    int reserved[4];
} memra__lt_heuristic;

/* X(name, return, params): every cuBLASLt entry point used. */
#define MEMRA__LT_LIST(X)                                                                                  \
    X(cublasLtGetVersion, size_t, (void))                                                                  \
    X(cublasLtGetStatusName, const char *, (memra__lt_status status))                                      \
    X(cublasLtCreate, memra__lt_status, (void **handle))                                                   \
    X(cublasLtDestroy, memra__lt_status, (void *handle))                                                   \
    X(cublasLtMatmulDescCreate, memra__lt_status, (void **desc, int compute_type, int scale_type))         \
    X(cublasLtMatmulDescDestroy, memra__lt_status, (void *desc))                                           \
    X(cublasLtMatmulDescSetAttribute, memra__lt_status, (void *desc, int attr, const void *buf, size_t n)) \
    X(cublasLtMatrixLayoutCreate, memra__lt_status,                                                        \
      (void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld))                                 \
    X(cublasLtMatrixLayoutDestroy, memra__lt_status, (void *layout))                                       \
    X(cublasLtMatmulPreferenceCreate, memra__lt_status, (void **pref))                                     \
    X(cublasLtMatmulPreferenceDestroy, memra__lt_status, (void *pref))                                     \
    X(cublasLtMatmulPreferenceSetAttribute, memra__lt_status,                                              \
      (void *pref, int attr, const void *buf, size_t n))                                                   \
    X(cublasLtMatmulAlgoGetHeuristic, memra__lt_status,                                                    \
      (void *handle, void *desc, void *a, void *b, void *c, void *d, void *pref, int requested,            \
       memra__lt_heuristic *results, int *returned))                                                       \
    X(cublasLtMatmul, memra__lt_status,                                                                    \
      (void *handle, void *desc, const void *alpha, const void *A, void *adesc, const void *B, void *bdesc, \
       const void *beta, const void *C, void *cdesc, void *D, void *ddesc, const memra__lt_algo *algo,     \
       void *workspace, size_t workspace_size, void *stream))

typedef struct lt_key {
    int32_t lane, m, n, k;
    int64_t ldd;
    uint32_t align; /* log2 of the A, B, D pointer alignments (capped at 256), 4 bits each */
} lt_key;

typedef struct lt_plan {
    struct lt_plan *next;
    lt_key key;
    const char *decline; /* non-NULL: this case is declined, nothing else is valid */
    void *desc, *la, *lb, *ld;
    memra__lt_algo algo;
    atomic_flag busy;
    memra_dptr a_scale, b_scale; /* pointers the descriptor holds now */
} lt_plan;

#define LT_BUCKETS 256

struct memra__lt {
    const memra_host_services *host;
    const char *module;
    void *lib;
    size_t version;
    void *handle;
#define MEMRA__LT_MEMBER(name, ret, params) ret(*name) params;
    MEMRA__LT_LIST(MEMRA__LT_MEMBER)
#undef MEMRA__LT_MEMBER
    atomic_flag lock;
    lt_plan *buckets[LT_BUCKETS];
};

static void spin_lock(atomic_flag *f)
{
    while (atomic_flag_test_and_set_explicit(f, memory_order_acquire)) {
    }
}

static void spin_unlock(atomic_flag *f) { atomic_flag_clear_explicit(f, memory_order_release); }

static memra_status lt_fail(const memra__lt *lt, memra__lt_status s, const char *what)
{
    const char *name = lt->cublasLtGetStatusName ? lt->cublasLtGetStatusName(s) : NULL;
    return lt->host->set_error(MEMRA_STATUS_CUBLAS_ERROR, "%s: %s failed: %s (cublasStatus %d)", lt->module, what,
                               name ? name : "?", (int)s);
}

memra_status memra__lt_open(const memra_host_services *host, const char *module, memra__lt **out_lt, char *why,
                            size_t why_len)
{
    *out_lt = NULL;
    void *lib = NULL;
    if (MEMRA_HAS_MEMBER(host, memra_host_services, library_open) && host->library_open != NULL)
        lib = host->library_open("cublasLt");
    if (lib == NULL) {
        snprintf(why, why_len, "cuBLASLt not found");
        return MEMRA_STATUS_OK;
    }
    memra__lt *lt = calloc(1, sizeof *lt);
    if (lt == NULL) return host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", module);
    lt->host = host;
    lt->module = module;
    lt->lib = lib;
    atomic_flag_clear(&lt->lock);
#define MEMRA__LT_RESOLVE(name, ret, params)                                                       \
    *(void **)&lt->name = dlsym(lib, #name);                                                       \
    if (lt->name == NULL) {                                                                        \
        snprintf(why, why_len, "cuBLASLt lacks %s", #name);                                        \
        free(lt);                                                                                  \
        return MEMRA_STATUS_OK;                                                                    \
    }
    MEMRA__LT_LIST(MEMRA__LT_RESOLVE)
#undef MEMRA__LT_RESOLVE
    lt->version = lt->cublasLtGetVersion();
    if (lt->version < 110000) {
        snprintf(why, why_len, "cuBLASLt %zu is too old", lt->version);
        free(lt);
        return MEMRA_STATUS_OK;
    }
    memra__lt_status s = lt->cublasLtCreate(&lt->handle);
    if (s != LT_STATUS_SUCCESS) {
        memra_status st = lt_fail(lt, s, "cublasLtCreate");
        free(lt);
        return st;
    }
    snprintf(why, why_len, "cuBLASLt %zu", lt->version);
    *out_lt = lt;
    return MEMRA_STATUS_OK;
}

static void plan_free(memra__lt *lt, lt_plan *p)
{
    if (p->ld) lt->cublasLtMatrixLayoutDestroy(p->ld);
    if (p->lb) lt->cublasLtMatrixLayoutDestroy(p->lb);
    if (p->la) lt->cublasLtMatrixLayoutDestroy(p->la);
    if (p->desc) lt->cublasLtMatmulDescDestroy(p->desc);
    free(p);
}

void memra__lt_close(memra__lt *lt)
{
    if (lt == NULL) return;
    for (int i = 0; i < LT_BUCKETS; i++) {
        lt_plan *p = lt->buckets[i];
        while (p != NULL) {
            lt_plan *n = p->next;
            plan_free(lt, p);
            p = n;
        }
    }
    if (lt->handle) lt->cublasLtDestroy(lt->handle);
    /* The library handle belongs to the core's library_open; not closed here. */
    free(lt);
}

size_t memra__lt_version(const memra__lt *lt) { return lt ? lt->version : 0; }

static uint32_t align_log2(memra_dptr p)
{
    uint32_t l = 0;
    while (l < 8 && (p & ((memra_dptr)1 << l)) == 0) l++;
    return l; /* 0..8: 1 .. 256 bytes */
}

static unsigned key_hash(const lt_key *k)
{
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[6] = {(uint64_t)k->lane, (uint64_t)k->m, (uint64_t)k->n, (uint64_t)k->k, (uint64_t)k->ldd,
                           k->align};
    for (int i = 0; i < 6; i++) h = (h ^ v[i]) * 1099511628211ull;
    return (unsigned)(h ^ (h >> 32)) % LT_BUCKETS;
}

static int key_eq(const lt_key *a, const lt_key *b)
{
    return a->lane == b->lane && a->m == b->m && a->n == b->n && a->k == b->k && a->ldd == b->ldd &&
           a->align == b->align;
}

static lt_plan *plan_find(memra__lt *lt, const lt_key *k, unsigned h)
{
    for (lt_plan *p = lt->buckets[h]; p != NULL; p = p->next)
        if (key_eq(&p->key, k)) return p;
    return NULL;
}

/* Build a plan: descriptor, layouts, preference, one heuristic query. A case
 * cuBLASLt does not take becomes a plan with `decline` set (cached too). */
static memra_status plan_build(memra__lt *lt, const lt_key *key, const memra__lt_gemm *g, lt_plan **out)
{
    lt_plan *p = calloc(1, sizeof *p);
    if (p == NULL) return lt->host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", lt->module);
    p->key = *key;
    atomic_flag_clear(&p->busy);
    memra_status st = MEMRA_STATUS_OK;
    void *pref = NULL;
    const int ab_type = g->lane == MEMRA__LT_F16 ? LT_CUDA_R_16F : g->lane == MEMRA__LT_BF16 ? LT_CUDA_R_16BF
                                                                                            : LT_CUDA_R_8F_E4M3;
    const int32_t op_t = LT_OP_T, op_n = LT_OP_N;
    memra__lt_status s;
#define LT_TRY(call, what)                                                                          \
    if ((s = (call)) != LT_STATUS_SUCCESS) {                                                        \
        st = lt_fail(lt, s, what);                                                                  \
        goto done;                                                                                  \
    }
    LT_TRY(lt->cublasLtMatmulDescCreate(&p->desc, LT_COMPUTE_32F, LT_CUDA_R_32F), "cublasLtMatmulDescCreate");
    LT_TRY(lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_TRANSA, &op_t, sizeof op_t), "set TRANSA");
    LT_TRY(lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_TRANSB, &op_n, sizeof op_n), "set TRANSB");
    if (g->lane == MEMRA__LT_FP8_BLK) {
        const int32_t a_mode = LT_SCALE_BLK128x128_32F, b_mode = LT_SCALE_VEC128_32F;
        LT_TRY(lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_A_SCALE_MODE, &a_mode, sizeof a_mode),
               "set A_SCALE_MODE");
        LT_TRY(lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_B_SCALE_MODE, &b_mode, sizeof b_mode),
               "set B_SCALE_MODE");
    }
    if (g->a_scale != 0) {
        const void *ptr = (const void *)(uintptr_t)g->a_scale;
        LT_TRY(lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_A_SCALE_POINTER, &ptr, sizeof ptr),
               "set A_SCALE_POINTER");
        p->a_scale = g->a_scale;
    }
    if (g->b_scale != 0) {
        const void *ptr = (const void *)(uintptr_t)g->b_scale;
        LT_TRY(lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_B_SCALE_POINTER, &ptr, sizeof ptr),
               "set B_SCALE_POINTER");
        p->b_scale = g->b_scale;
    }
    LT_TRY(lt->cublasLtMatrixLayoutCreate(&p->la, ab_type, (uint64_t)g->k, (uint64_t)g->n, g->k),
           "cublasLtMatrixLayoutCreate(A)");
    LT_TRY(lt->cublasLtMatrixLayoutCreate(&p->lb, ab_type, (uint64_t)g->k, (uint64_t)g->m, g->k),
           "cublasLtMatrixLayoutCreate(B)");
    LT_TRY(lt->cublasLtMatrixLayoutCreate(&p->ld, LT_CUDA_R_32F, (uint64_t)g->n, (uint64_t)g->m, g->ldd),
           "cublasLtMatrixLayoutCreate(D)");
    LT_TRY(lt->cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const uint64_t ws = g->workspace_size;
    LT_TRY(lt->cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE, &ws, sizeof ws),
           "set MAX_WORKSPACE_BYTES");
    const uint32_t al[4] = {1u << (key->align & 15), 1u << ((key->align >> 4) & 15), 1u << ((key->align >> 8) & 15),
                            1u << ((key->align >> 8) & 15)}; /* A, B, C (= D), D */
    for (int i = 0; i < 4; i++)
        LT_TRY(lt->cublasLtMatmulPreferenceSetAttribute(pref, LT_PREF_MIN_ALIGN_A + i, &al[i], sizeof al[i]),
               "set MIN_ALIGNMENT");
    memra__lt_heuristic res;
    int n_res = 0;
    memset(&res, 0, sizeof res);
    s = lt->cublasLtMatmulAlgoGetHeuristic(lt->handle, p->desc, p->la, p->lb, p->ld, p->ld, pref, 1, &res, &n_res);
    if (s == LT_STATUS_NOT_SUPPORTED || (s == LT_STATUS_SUCCESS && (n_res < 1 || res.state != LT_STATUS_SUCCESS))) {
        static const char *const reasons[] = {
            "cuBLASLt has no f16 algorithm for this shape/alignment",
            "cuBLASLt has no FP8 algorithm for this shape/alignment",
            "cuBLASLt has no block-scaled FP8 algorithm for this shape/alignment",
            "cuBLASLt has no bf16 algorithm for this shape/alignment",
        };
        p->decline = reasons[g->lane];
        lt->host->log(MEMRA_LOG_INFO, lt->module,
                      "cuBLASLt heuristic: lane %d m=%d n=%d k=%d ldd=%lld align=%03x: %s (cublasStatus %d, %d results)",
                      (int)g->lane, g->m, g->n, g->k, (long long)g->ldd, key->align,
                      lt->cublasLtGetStatusName(s), (int)s, n_res);
    } else if (s != LT_STATUS_SUCCESS) {
        st = lt_fail(lt, s, "cublasLtMatmulAlgoGetHeuristic");
        goto done;
    } else {
        p->algo = res.algo;
        lt->host->log(MEMRA_LOG_DEBUG, lt->module,
                      "cuBLASLt plan: lane %d m=%d n=%d k=%d ldd=%lld: workspace %zu, waves %.2f", (int)g->lane, g->m,
                      g->n, g->k, (long long)g->ldd, res.workspace_size, (double)res.waves_count);
    }
#undef LT_TRY
done:
    if (pref) lt->cublasLtMatmulPreferenceDestroy(pref);
    if (st != MEMRA_STATUS_OK) {
        plan_free(lt, p);
        return st;
    }
    *out = p;
    return MEMRA_STATUS_OK;
}

memra_status memra__lt_matmul(memra__lt *lt, memra_call *call, const memra__lt_gemm *g)
{
    lt_key key;
    memset(&key, 0, sizeof key);
    key.lane = (int32_t)g->lane;
    key.m = g->m;
    key.n = g->n;
    key.k = g->k;
    key.ldd = g->ldd;
    key.align = align_log2(g->a) | (align_log2(g->b) << 4) | (align_log2(g->d) << 8);
    const unsigned h = key_hash(&key);

    spin_lock(&lt->lock);
    lt_plan *p = plan_find(lt, &key, h);
    spin_unlock(&lt->lock);
    if (p == NULL) {
        lt_plan *fresh = NULL;
        memra_status st = plan_build(lt, &key, g, &fresh);
        if (st != MEMRA_STATUS_OK) return st;
        spin_lock(&lt->lock);
        p = plan_find(lt, &key, h);
        if (p == NULL) {
            fresh->next = lt->buckets[h];
            lt->buckets[h] = fresh;
            p = fresh;
            fresh = NULL;
        }
        spin_unlock(&lt->lock);
        if (fresh != NULL) plan_free(lt, fresh); /* another thread built the same plan first */
    }
    if (p->decline != NULL) {
        call->decline_reason = p->decline;
        return MEMRA_STATUS_DECLINED;
    }

    memra_status st = MEMRA_STATUS_OK;
    memra__lt_status s = LT_STATUS_SUCCESS;
    const float alpha = g->alpha, beta = 0.0f;
    spin_lock(&p->busy);
    if (g->a_scale != p->a_scale) {
        const void *ptr = (const void *)(uintptr_t)g->a_scale;
        s = lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_A_SCALE_POINTER, &ptr, sizeof ptr);
        if (s == LT_STATUS_SUCCESS) p->a_scale = g->a_scale;
    }
    if (s == LT_STATUS_SUCCESS && g->b_scale != p->b_scale) {
        const void *ptr = (const void *)(uintptr_t)g->b_scale;
        s = lt->cublasLtMatmulDescSetAttribute(p->desc, LT_DESC_B_SCALE_POINTER, &ptr, sizeof ptr);
        if (s == LT_STATUS_SUCCESS) p->b_scale = g->b_scale;
    }
    if (s != LT_STATUS_SUCCESS) {
        st = lt_fail(lt, s, "set SCALE_POINTER");
    } else {
        void *d = (void *)(uintptr_t)g->d;
        s = lt->cublasLtMatmul(lt->handle, p->desc, &alpha, (const void *)(uintptr_t)g->a, p->la,
                               (const void *)(uintptr_t)g->b, p->lb, &beta, d, p->ld, d, p->ld, &p->algo,
                               (void *)(uintptr_t)g->workspace, g->workspace_size, g->stream);
        if (s != LT_STATUS_SUCCESS) st = lt_fail(lt, s, "cublasLtMatmul");
    }
    spin_unlock(&p->busy);
    return st;
}

