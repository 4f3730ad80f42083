/* The GPU runtime's loader: embedded images for the device's target (through
 * the host's image loader, else the driver), JIT compiles through the host
 * services, kernel lookup with the dynamic shared memory limit, cuBLASLt.
 * See gpu.h. */
#define _POSIX_C_SOURCE 200809L

#include "gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *memra__gpu_status_name(memra_status st)
{
    switch (st) {
#define MMQ_STATUS_CASE(name, value, text) \
    case MEMRA_STATUS_##name: return #name;
        MEMRA_STATUS_LIST(MMQ_STATUS_CASE)
#undef MMQ_STATUS_CASE
    }
    return "?";
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const memra__gpu_image *memra__gpu_image_find(const char *image, const char *target)
{
    for (size_t i = 0; i < memra__gpu_image_count; i++)
        if (strcmp(memra__gpu_images[i].family, image) == 0 && strcmp(memra__gpu_images[i].target, target) == 0)
            return &memra__gpu_images[i];
    return NULL;
}

/* The portable module's proof of where an image came from. */
static void log_origin(const memra__gpu *gpu, const memra__gpu_image *img, int ptx, double ms)
{
    if (ptx)
        gpu->host->log(MEMRA_LOG_INFO, gpu->name,
                       "%s: %s loaded from PTX (%s), compiled by the driver for %s (cc %d.%d) in %.1f ms", gpu->caps->name ? gpu->caps->name : "?",
                       img->family, img->target, gpu->target, gpu->caps->cc / 10, gpu->caps->cc % 10, ms);
    else
        gpu->host->log(MEMRA_LOG_INFO, gpu->name, "%s: %s loaded from SASS (%s) in %.1f ms",
                       gpu->caps->name ? gpu->caps->name : "?", img->family, img->target, ms);
}

/* Which embedded image module m holds (memra__gpu_has_kernel reads it) */
static void remember(memra__gpu *gpu, CUmodule m, const memra__gpu_image *img)
{
    if (gpu->n_loaded < MEMRA__GPU_MAX_IMAGES) {
        gpu->loaded[gpu->n_loaded].m = m;
        gpu->loaded[gpu->n_loaded++].img = img;
    }
}

memra_status memra__gpu_image_load(memra__gpu *gpu, const char *image, CUmodule *out)
{
    const memra_host_services *host = gpu->host;
    const memra__gpu_image *img = memra__gpu_image_find(image, gpu->target);
    if (img == NULL && gpu->portable) img = memra__gpu_image_find(image, MEMRA__GPU_PORTABLE_PTX);
    if (img == NULL) {
        char have[128] = "";
        for (size_t i = 0; i < memra__gpu_image_count; i++) {
            if (strcmp(memra__gpu_images[i].family, image) != 0) continue;
            const char *t = memra__gpu_images[i].target;
            /* only the targets this context could load: sm_XYa, or plain sm_XY / compute_80 when portable */
            if (!gpu->portable && (strncmp(t, "compute_", 8) == 0 || t[strlen(t) - 1] != 'a')) continue;
            size_t l = strlen(have);
            snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", memra__gpu_images[i].target);
        }
        return host->set_error(MEMRA_STATUS_MODULE_ERROR,
                               "%s: no %s kernel image for %s (%s, cc %d): the module was built with code for %s only",
                               gpu->name, image, gpu->target, gpu->caps->name ? gpu->caps->name : "?", gpu->caps->cc,
                               have[0] ? have : "no target");
    }
    char label[96];
    snprintf(label, sizeof label, "%s/%s.%s", gpu->name, img->family, img->target);
    const int ptx = strncmp(img->target, "compute_", 8) == 0;
    const double t0 = now_ms();
    if (!gpu->owns_modules) {
        void *m = NULL;
        memra_status st = host->jit->image_load(gpu->caps, label, img->bytes, img->size, &m);
        if (st != MEMRA_STATUS_OK) return st;
        *out = (CUmodule)m;
        gpu->n_images++;
        if (ptx) gpu->from_ptx = 1;
        if (gpu->portable) log_origin(gpu, img, ptx, now_ms() - t0);
        remember(gpu, *out, img);
        return MEMRA_STATUS_OK;
    }
    if (gpu->n_owned >= MEMRA__GPU_MAX_IMAGES)
        return host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: more than %d kernel images", gpu->name,
                               MEMRA__GPU_MAX_IMAGES);
    CUresult r = gpu->cu.cuModuleLoadData(out, img->bytes);
    if (r != MEMRA__CU_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "cuModuleLoadData(%s, %zu bytes)", label, img->size);
        return memra__cu_fail(host, &gpu->cu, gpu->name, r, what);
    }
    gpu->owned[gpu->n_owned++] = *out;
    gpu->n_images++;
    if (ptx) gpu->from_ptx = 1;
    if (gpu->portable) log_origin(gpu, img, ptx, now_ms() - t0);
    remember(gpu, *out, img);
    return MEMRA_STATUS_OK;
}

/* Little-endian fields of an ELF64 image */
static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Whether cubin b[0..n) defines function `name` in its symbol table: 1, 0, or -1 where the bytes are not an
 * ELF64 image this reader follows (every offset checked against n). */
static int elf_has_function(const unsigned char *b, size_t n, const char *name)
{
    if (n < 64 || memcmp(b, "\x7f" "ELF", 4) != 0 || b[4] != 2 || b[5] != 1) return -1; /* ELF64, little-endian */
    const uint64_t shoff = le(b + 0x28, 8), shentsize = le(b + 0x3a, 2), shnum = le(b + 0x3c, 2);
    if (shentsize < 64 || shoff > n || shnum > (n - shoff) / shentsize) return -1;
    const size_t len = strlen(name);
    int symtabs = 0;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + i * shentsize;
        if (le(sh + 4, 4) != 2) continue; /* SHT_SYMTAB */
        const uint64_t off = le(sh + 0x18, 8), size = le(sh + 0x20, 8), link = le(sh + 0x28, 4);
        const uint64_t entsize = le(sh + 0x38, 8);
        if (entsize < 24 || off > n || size > n - off || link >= shnum) return -1;
        const unsigned char *str = b + shoff + link * shentsize;
        const uint64_t soff = le(str + 0x18, 8), ssize = le(str + 0x20, 8);
        if (le(str + 4, 4) != 3 || soff > n || ssize > n - soff) return -1; /* SHT_STRTAB */
        symtabs++;
        for (uint64_t k = 0; k + entsize <= size; k += entsize) {
            const unsigned char *sym = b + off + k;
            const uint64_t nm = le(sym, 4);
            /* STT_FUNC, defined, and the name's bytes and its NUL inside the string table */
            if ((sym[4] & 0xf) != 2 || le(sym + 6, 2) == 0 || nm >= ssize || len >= ssize - nm) continue;
            if (memcmp(b + soff + nm, name, len + 1) == 0) return 1;
        }
    }
    return symtabs ? 0 : -1;
}

/* Whether PTX text p[0..n) has an entry `name`: ".entry", white space (new lines too), the name, then '(' or
 * white space. Each
 * place the name occurs (memmem) is checked, so a parameter "name_param_0" or a longer name is not taken. */
static int ptx_has_entry(const char *p, size_t n, const char *name)
{
    const size_t len = strlen(name);
    if (len == 0) return 0;
    for (const char *q = p, *end = p + n; (q = memmem(q, (size_t)(end - q), name, len)) != NULL; q++) {
        const char *after = q + len, *b = q;
        if (after >= end || *after == '\0' || strchr("( \t\r\n", *after) == NULL) continue;
        while (b > p && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n' || b[-1] == '\r')) b--;
        if (b == q || b - p < 6 || memcmp(b - 6, ".entry", 6) != 0) continue;
        return 1;
    }
    return 0;
}

int memra__gpu_image_has_kernel(const memra__gpu_image *img, const char *kernel)
{
    /* by the bytes: an ELF image is read as a cubin whatever its target says, PTX only where the target is one */
    if (img->size >= 4 && memcmp(img->bytes, "\x7f" "ELF", 4) == 0)
        return elf_has_function(img->bytes, img->size, kernel);
    if (strncmp(img->target, "compute_", 8) == 0) return ptx_has_entry((const char *)img->bytes, img->size, kernel);
    return -1;
}

CUfunction memra__gpu_kernel_lookup(const memra__gpu *gpu, CUmodule m, const char *kernel)
{
    for (int i = 0; i < gpu->n_loaded; i++) {
        if (gpu->loaded[i].m != m) continue;
        if (memra__gpu_image_has_kernel(gpu->loaded[i].img, kernel) == 0) return NULL;
        break; /* in the image (or an image this reader does not follow): the driver says */
    }
    CUfunction f = NULL;
    return gpu->cu.cuModuleGetFunction(&f, m, kernel) == MEMRA__CU_SUCCESS ? f : NULL;
}

int memra__gpu_has_kernel(const memra__gpu *gpu, CUmodule m, const char *kernel)
{
    return memra__gpu_kernel_lookup(gpu, m, kernel) != NULL;
}

/* Function f of `kernel`: smem > 48 KB sets its dynamic shared memory limit to it (DRIVER_ERROR naming the
 * kernel where the driver refuses) */
static memra_status set_smem(memra__gpu *gpu, CUfunction f, const char *kernel, unsigned smem)
{
    if (smem <= 48 * 1024) return MEMRA_STATUS_OK;
    const CUresult r = gpu->cu.cuFuncSetAttribute(f, MEMRA__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
    if (r == MEMRA__CU_SUCCESS) return MEMRA_STATUS_OK;
    char what[128];
    snprintf(what, sizeof what, "cuFuncSetAttribute(%s, max dynamic shared = %u)", kernel, smem);
    return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, r, what);
}

int memra__gpu_function_optional(memra__gpu *gpu, CUmodule m, const char *kernel, unsigned smem, CUfunction *out)
{
    *out = memra__gpu_kernel_lookup(gpu, m, kernel);
    if (*out != NULL && set_smem(gpu, *out, kernel, smem) != MEMRA_STATUS_OK) *out = NULL;
    return *out != NULL;
}

const char *memra__gpu_jit_unavailable(const memra__gpu *gpu)
{
    const memra_host_services *host = gpu->host;
    const memra_jit_services *jit = MEMRA_HAS_MEMBER(host, memra_host_services, jit) ? host->jit : NULL;
    if (gpu->owns_modules || jit == NULL || !MEMRA_HAS_MEMBER(jit, memra_jit_services, module_get) ||
        jit->module_get == NULL)
        return "the host offers no JIT service";
    if (gpu->caps->jit_target == NULL || gpu->caps->jit_target[0] == '\0') return "the device has no JIT target";
    return NULL;
}

memra_status memra__gpu_jit_load(memra__gpu *gpu, const memra_jit_source *src, CUmodule *out, double *out_ms,
                                 char *why, size_t why_len)
{
    const memra_device_caps *caps = gpu->caps;
    void *m = NULL;
    const double t0 = now_ms();
    memra_status st = gpu->host->jit->module_get(caps, src->name, src->source, src->options, src->n_options, &m);
    const double ms = now_ms() - t0;
    if (out_ms != NULL) *out_ms = ms;
    if (st == MEMRA_STATUS_OK) {
        *out = (CUmodule)m;
        gpu->n_images++;
        return MEMRA_STATUS_OK;
    }
    snprintf(why, why_len, "the JIT could not serve %s for %s (%s after %.1f ms; NVRTC missing or the compile failed)",
             src->name, caps->jit_target, memra__gpu_status_name(st), ms);
    return st;
}

memra_status memra__gpu_function(memra__gpu *gpu, CUmodule m, const char *kernel, unsigned smem, CUfunction *out)
{
    CUresult r = gpu->cu.cuModuleGetFunction(out, m, kernel);
    if (r != MEMRA__CU_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "cuModuleGetFunction(%s)", kernel);
        return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, r, what);
    }
    return set_smem(gpu, *out, kernel, smem);
}

memra_status memra__gpu_load_kernels(memra__gpu *gpu, const char *image, const memra__gpu_kernel *kernels, size_t n,
                                     void *state)
{
    CUmodule m = NULL;
    memra_status st = memra__gpu_image_load(gpu, image, &m);
    for (size_t i = 0; i < n && st == MEMRA_STATUS_OK; i++)
        st = memra__gpu_function(gpu, m, kernels[i].name, kernels[i].smem,
                                 (CUfunction *)(void *)((unsigned char *)state + kernels[i].offset));
    return st;
}

memra_status memra__gpu_lt_open(memra__gpu *gpu)
{
    if (gpu->lt != NULL) return MEMRA_STATUS_OK;
    return memra__lt_open(gpu->host, gpu->name, &gpu->lt, gpu->lt_why, sizeof gpu->lt_why);
}
