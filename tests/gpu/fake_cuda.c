/* A fake CUDA driver (libcuda's entry points through cuGetProcAddress_v2) for
 * tests that run the real memra_open, registry and module inits on GPUs that
 * are not there: loaded with MEMRA_CUDA_DRIVER=<this .so>. Its devices come
 * from the environment:
 *   MEMRA_FAKE_CUDA_CC      comma list of cc as major*10+minor ("80,86,90")
 *   MEMRA_FAKE_CUDA_MEM_MB  optional comma list of memory sizes (MiB), one per
 *                           device (default 24576); free memory is 7/8 of it
 *   MEMRA_FAKE_CUDA_ALLOC_MAX optional: cuMemAlloc of more bytes fails with out of memory (read per call)
 * Images load as opaque handles (counted, never run), kernels resolve to
 * handles, launches succeed without running anything, device memory is host
 * memory (so copies work). Test-only; not thread-safe beyond what the tests
 * need (counters are atomics). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
#define OK 0
#define ERR_INVALID_VALUE 1
#define ERR_NOT_FOUND 500

#define MAX_DEV 16
static int g_n = -1;
static int g_cc[MAX_DEV];
static size_t g_mem[MAX_DEV];
static int g_ctx_tag[MAX_DEV];
static _Thread_local void *tl_ctx_stack[64];
static _Thread_local int tl_depth;

static void parse(void)
{
    if (g_n >= 0) return;
    g_n = 0;
    const char *s = getenv("MEMRA_FAKE_CUDA_CC");
    const char *m = getenv("MEMRA_FAKE_CUDA_MEM_MB");
    while (s != NULL && *s && g_n < MAX_DEV) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        g_cc[g_n] = (int)v;
        g_mem[g_n] = (size_t)24576 << 20;
        if (m != NULL && *m) {
            char *me;
            long mb = strtol(m, &me, 10);
            if (me != m) g_mem[g_n] = (size_t)mb << 20;
            m = *me == ',' ? me + 1 : me;
        }
        g_n++;
        s = *end == ',' ? end + 1 : end;
    }
}

static CUresult f_cuInit(unsigned f) { (void)f; parse(); return g_n > 0 ? OK : 100; }
static CUresult f_cuDriverGetVersion(int *v) { *v = 13000; return OK; }
static CUresult f_cuGetErrorName(CUresult e, const char **s) { (void)e; *s = "CUDA_ERROR_FAKE"; return OK; }
static CUresult f_cuGetErrorString(CUresult e, const char **s) { (void)e; *s = "fake driver error"; return OK; }
static CUresult f_cuDeviceGetCount(int *n) { parse(); *n = g_n; return OK; }
static CUresult f_cuDeviceGet(int *d, int i) { if (i < 0 || i >= g_n) return ERR_INVALID_VALUE; *d = i; return OK; }
static CUresult f_cuDeviceGetName(char *name, int len, int d)
{
    snprintf(name, (size_t)len, "fake GPU cc %d.%d", g_cc[d] / 10, g_cc[d] % 10);
    return OK;
}
static CUresult f_cuDeviceGetAttribute(int *v, int attr, int d)
{
    switch (attr) {
    case 75: *v = g_cc[d] / 10; break;                          /* cc major */
    case 76: *v = g_cc[d] % 10; break;                          /* cc minor */
    case 16: *v = g_cc[d] == 90 ? 132 : 84; break;              /* SMs */
    case 97: *v = g_cc[d] == 90 || g_cc[d] == 80 || g_cc[d] / 10 == 10 ? 232448 : 101376; break; /* smem opt-in */
    case 13: *v = 1755000; break;
    case 36: *v = 2619000; break;
    default: *v = 0; break;
    }
    return OK;
}
static CUresult f_cuDeviceTotalMem(size_t *b, int d) { *b = g_mem[d]; return OK; }
static CUresult f_cuDevicePrimaryCtxRetain(void **c, int d) { *c = &g_ctx_tag[d]; return OK; }
static CUresult f_cuDevicePrimaryCtxRelease(int d) { (void)d; return OK; }
static CUresult f_cuCtxPushCurrent(void *c)
{
    if (tl_depth >= 63) return ERR_INVALID_VALUE;
    tl_ctx_stack[++tl_depth] = c;
    return OK;
}
static CUresult f_cuCtxPopCurrent(void **c)
{
    if (c) *c = tl_ctx_stack[tl_depth];
    if (tl_depth > 0) tl_depth--;
    return OK;
}
static CUresult f_cuCtxSetCurrent(void *c) { tl_ctx_stack[tl_depth] = c; return OK; }
static CUresult f_cuCtxGetCurrent(void **c) { *c = tl_ctx_stack[tl_depth]; return OK; }
static int cur_dev(void)
{
    for (int i = 0; i < g_n; i++)
        if (tl_ctx_stack[tl_depth] == &g_ctx_tag[i]) return i;
    return 0;
}
static CUresult f_cuMemAlloc(uint64_t *p, size_t b)
{
    /* MEMRA_FAKE_CUDA_ALLOC_MAX (bytes, read per call): a larger allocation is the driver's out of memory */
    const char *mx = getenv("MEMRA_FAKE_CUDA_ALLOC_MAX");
    if (mx != NULL && *mx && b > (size_t)strtoull(mx, NULL, 10)) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    void *q = calloc(1, b ? b : 1);
    if (q == NULL) return 2;
    *p = (uint64_t)(uintptr_t)q;
    return OK;
}
static CUresult f_cuMemFree(uint64_t p) { free((void *)(uintptr_t)p); return OK; }
static CUresult f_cuMemGetInfo(size_t *fr, size_t *t)
{
    int d = cur_dev();
    *t = g_mem[d];
    *fr = g_mem[d] / 8 * 7;
    return OK;
}
static atomic_int g_copies; /* every memcpy entry point's calls (a 2D copy counts once) */
static CUresult f_cuMemcpy(uint64_t dst, uint64_t src, size_t b)
{
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, b);
    atomic_fetch_add(&g_copies, 1);
    return OK;
}
static CUresult f_cuMemcpyHtoD(uint64_t dst, const void *src, size_t b) { return f_cuMemcpy(dst, (uint64_t)(uintptr_t)src, b); }
static CUresult f_cuMemcpyDtoH(void *dst, uint64_t src, size_t b) { return f_cuMemcpy((uint64_t)(uintptr_t)dst, src, b); }
static CUresult f_cuMemcpyHtoDAsync(uint64_t dst, const void *src, size_t b, void *s) { (void)s; return f_cuMemcpyHtoD(dst, src, b); }
static CUresult f_cuMemcpyDtoHAsync(void *dst, uint64_t src, size_t b, void *s) { (void)s; return f_cuMemcpyDtoH(dst, src, b); }
static CUresult f_cuMemcpyDtoDAsync(uint64_t dst, uint64_t src, size_t b, void *s) { (void)s; return f_cuMemcpy(dst, src, b); }
/* cuMemcpy2DAsync (CUDA_MEMCPY2D's v2 layout; host and device memory are both host memory here) */
typedef struct fake_memcpy2d {
    size_t sx, sy;
    int st;
    const void *sh;
    uint64_t sd;
    void *sa;
    size_t sp, dx, dy;
    int dt;
    void *dh;
    uint64_t dd;
    void *da;
    size_t dp, w, h;
} fake_memcpy2d;
static CUresult f_cuMemcpy2DAsync(const fake_memcpy2d *c, void *s)
{
    (void)s;
    if (c == NULL || c->sp < c->w || c->dp < c->w || c->sa != NULL || c->da != NULL) return ERR_INVALID_VALUE;
    const char *src = c->st == 1 ? (const char *)c->sh : (const char *)(uintptr_t)c->sd;
    char *dst = c->dt == 1 ? (char *)c->dh : (char *)(uintptr_t)c->dd;
    for (size_t r = 0; r < c->h; r++)
        memmove(dst + (c->dy + r) * c->dp + c->dx, src + (c->sy + r) * c->sp + c->sx, c->w);
    atomic_fetch_add(&g_copies, 1);
    return OK;
}
static CUresult f_cuMemAllocHost(void **p, size_t b)
{
    *p = calloc(1, b ? b : 1);
    return *p != NULL ? OK : 2;
}
static CUresult f_cuMemFreeHost(void *p) { free(p); return OK; }
static CUresult f_cuMemsetD8Async(uint64_t d, unsigned char v, size_t n, void *s) { (void)s; memset((void *)(uintptr_t)d, v, n); return OK; }
static CUresult f_cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *s)
{
    (void)s;
    for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
    return OK;
}
static int g_handles[4];
static CUresult f_handle_out(void **h) { *h = &g_handles[0]; return OK; }
static CUresult f_cuStreamCreate(void **s, unsigned f) { (void)f; return f_handle_out(s); }
static CUresult f_cuEventCreate(void **e, unsigned f) { (void)f; return f_handle_out(e); }
static CUresult f_cuStreamIsCapturing(void *s, int *st) { (void)s; *st = 0; return OK; }
static CUresult f_cuEventElapsedTime(float *ms, void *a, void *b) { (void)a, (void)b; *ms = 1.0f; return OK; }
static atomic_int g_modules;
/* Each loaded image, so that cuModuleGetFunction answers as the driver would: CUDA_ERROR_NOT_FOUND for a name
 * the image does not hold (counted: a module that asks for kernels its image lacks makes compute-sanitizer
 * report an API error on a real GPU) */
#define MAX_MODS 4096
static const void *g_images[MAX_MODS];
static atomic_int g_n_images, g_absent;
static CUresult f_cuModuleLoadData(void **m, const void *img)
{
    if (img == NULL) return ERR_INVALID_VALUE;
    atomic_fetch_add(&g_modules, 1);
    const int i = atomic_fetch_add(&g_n_images, 1);
    if (i < MAX_MODS) g_images[i] = img, *m = (void *)&g_images[i];
    else *m = &g_handles[1];
    return OK;
}
static CUresult f_cuModuleUnload(void *m) { (void)m; atomic_fetch_sub(&g_modules, 1); return OK; }
/* Whether image img names kernel n: a cubin (its bytes up to the end of its section headers) holding the name
 * between NULs, as its string table does; PTX text holding the name followed by '('; any other image: yes. */
static int image_names(const unsigned char *img, const char *n)
{
    const size_t len = strlen(n);
    if (memcmp(img, "\x7f" "ELF", 4) == 0) {
        uint64_t shoff = 0, shent = 0, shnum = 0;
        for (int b = 7; b >= 0; b--) shoff = shoff << 8 | img[0x28 + b];
        shent = (uint64_t)img[0x3a] | (uint64_t)img[0x3b] << 8, shnum = (uint64_t)img[0x3c] | (uint64_t)img[0x3d] << 8;
        const uint64_t size = shoff + shent * shnum;
        if (size > ((uint64_t)1 << 30)) return 1;
        for (uint64_t i = 0; i + len + 2 <= size; i++)
            if (img[i] == 0 && img[i + len + 1] == 0 && memcmp(img + i + 1, n, len) == 0) return 1;
        return 0;
    }
    if (img[0] == '/' || img[0] == '.' || img[0] == '\n') { /* PTX: "//" comments, then directives */
        for (const char *p = strstr((const char *)img, n); p != NULL; p = strstr(p + 1, n))
            if (p[len] == '(') return 1;
        return 0;
    }
    return 1;
}
static CUresult f_cuModuleGetFunction(void **f, void *m, const char *n)
{
    const void **slot = (const void **)m;
    if (slot >= g_images && slot < g_images + MAX_MODS && !image_names(*slot, n)) {
        atomic_fetch_add(&g_absent, 1);
        return ERR_NOT_FOUND;
    }
    *f = &g_handles[2];
    return OK;
}
static CUresult f_cuOccupancy(int *n, void *f, int b, size_t s) { (void)f, (void)b, (void)s; *n = 4; return OK; }
static CUresult f_ok(void) { return OK; } /* every entry point whose outputs nobody reads here */

typedef struct entry { const char *name; void (*fn)(void); } entry;
#define E(n) {#n, (void (*)(void))f_##n}
static const entry k_entries[] = {
    E(cuInit), E(cuDriverGetVersion), E(cuGetErrorName), E(cuGetErrorString), E(cuDeviceGetCount), E(cuDeviceGet),
    E(cuDeviceGetName), E(cuDeviceGetAttribute), E(cuDeviceTotalMem), E(cuDevicePrimaryCtxRetain),
    E(cuDevicePrimaryCtxRelease), E(cuCtxPushCurrent), E(cuCtxPopCurrent), E(cuCtxSetCurrent), E(cuCtxGetCurrent),
    E(cuMemAlloc), E(cuMemFree), E(cuMemGetInfo), E(cuMemcpyHtoD), E(cuMemcpyDtoH), E(cuMemcpyHtoDAsync),
    E(cuMemcpyDtoHAsync), E(cuMemcpyDtoDAsync), E(cuMemcpy2DAsync), E(cuMemAllocHost), E(cuMemFreeHost), E(cuMemsetD8Async), E(cuMemsetD32Async), E(cuStreamCreate), E(cuEventCreate),
    E(cuStreamIsCapturing), E(cuEventElapsedTime), E(cuModuleLoadData), E(cuModuleUnload), E(cuModuleGetFunction),
    {"cuMemcpyDtoD", (void (*)(void))f_cuMemcpy}, {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void (*)(void))f_cuOccupancy},
};

int memra_fake_cuda_modules_loaded(void);
int memra_fake_cuda_modules_loaded(void) { return atomic_load(&g_modules); }
int memra_fake_cuda_absent_lookups(void);
int memra_fake_cuda_absent_lookups(void) { return atomic_load(&g_absent); }
int memra_fake_cuda_copies(void);
int memra_fake_cuda_copies(void) { return atomic_load(&g_copies); }

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    (void)version, (void)flags;
    if (status) *status = 0;
    for (size_t i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++)
        if (strcmp(k_entries[i].name, symbol) == 0) {
            *(void (**)(void))pfn = k_entries[i].fn;
            return OK;
        }
    if (strcmp(symbol, "cuLaunchKernelEx") == 0) {  /* no dependent launches in the fake */
        *pfn = NULL;
        return ERR_NOT_FOUND;
    }
    *(void (**)(void))pfn = (void (*)(void))f_ok;
    return OK;
}
