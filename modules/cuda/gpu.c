/* Per-device state of a GPU module: driver entry points, the embedded kernel
 * images loaded for the device, kernel lookup, cuBLASLt, launches. */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_family_names[] = {
#define MEMRA__GPU_FAMILY_NAME(f) #f,
    MEMRA__GPU_FAMILY_LIST(MEMRA__GPU_FAMILY_NAME)
#undef MEMRA__GPU_FAMILY_NAME
};

/* The core makes the device's context current around every op, so entering
 * usually finds it current and skips the push/pop pair (each takes driver
 * locks: measurable on 20-microsecond GEMMs). A per-thread bit stack
 * remembers which levels pushed. */
static _Thread_local uint32_t tl_pushed;
static _Thread_local int tl_depth;

memra_status memra__gpu_enter(memra__gpu *gpu)
{
    CUcontext want = (CUcontext)gpu->caps->cu_context, cur = NULL;
    int push = tl_depth >= 32 || gpu->cu.cuCtxGetCurrent(&cur) != MEMRA__CU_SUCCESS || cur != want;
    if (push) {
        CUresult r = gpu->cu.cuCtxPushCurrent(want);
        if (r != MEMRA__CU_SUCCESS) return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, r, "cuCtxPushCurrent");
    }
    if (tl_depth < 32) {
        if (push) tl_pushed |= 1u << tl_depth;
        else tl_pushed &= ~(1u << tl_depth);
    }
    tl_depth++;
    return MEMRA_STATUS_OK;
}

void memra__gpu_leave(memra__gpu *gpu)
{
    tl_depth--;
    if (tl_depth >= 32 || (tl_pushed >> tl_depth) & 1u) {
        CUcontext c;
        gpu->cu.cuCtxPopCurrent(&c);
    }
}

memra_status memra__gpu_launch(memra__gpu *gpu, CUfunction f, const char *name, unsigned grid, unsigned block,
                               memra_stream_t stream, void **args)
{
    CUresult r = gpu->cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)stream, args, NULL);
    if (r != MEMRA__CU_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "cuLaunchKernel(%s)", name);
        return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, r, what);
    }
    return MEMRA_STATUS_OK;
}

unsigned memra__gpu_blocks(const memra__gpu *gpu, int64_t items, int64_t per_block)
{
    int64_t b = (items + per_block - 1) / per_block;
    if (b > (int64_t)gpu->grid_cap) b = gpu->grid_cap;
    return b < 1 ? 1u : (unsigned)b;
}

/* The embedded image of `family` for `target`, or NULL. */
static const memra__gpu_image *image_find(const char *family, const char *target)
{
    for (size_t i = 0; i < memra__gpu_image_count; i++)
        if (strcmp(memra__gpu_images[i].family, family) == 0 && strcmp(memra__gpu_images[i].target, target) == 0)
            return &memra__gpu_images[i];
    return NULL;
}

static memra_status load_images(memra__gpu *gpu)
{
    const memra_host_services *host = gpu->host;
    const memra_jit_services *jit =
        MEMRA_HAS_MEMBER(host, memra_host_services, jit) ? host->jit : NULL;
    const int use_jit = jit != NULL && MEMRA_HAS_MEMBER(jit, memra_jit_services, image_load) && jit->image_load;
    gpu->owns_modules = !use_jit;
    for (int f = 0; f < MEMRA__GPU_FAMILY_COUNT; f++) {
        const memra__gpu_image *img = image_find(k_family_names[f], gpu->target);
        if (img == NULL) {
            char have[128] = "";
            for (size_t i = 0; i < memra__gpu_image_count; i++) {
                if (strcmp(memra__gpu_images[i].family, k_family_names[f]) != 0) continue;
                size_t l = strlen(have);
                snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", memra__gpu_images[i].target);
            }
            return host->set_error(MEMRA_STATUS_MODULE_ERROR,
                                   "%s: no kernel image for %s (%s, cc %d): the module was built with code for %s only",
                                   gpu->name, gpu->target, gpu->caps->name ? gpu->caps->name : "?", gpu->caps->cc,
                                   have[0] ? have : "no target");
        }
        char label[96];
        snprintf(label, sizeof label, "%s/%s.%s", gpu->name, img->family, img->target);
        if (use_jit) {
            void *m = NULL;
            memra_status st = jit->image_load(gpu->caps, label, img->bytes, img->size, &m);
            if (st != MEMRA_STATUS_OK) return st;
            gpu->modules[f] = (CUmodule)m;
        } else {
            CUresult r = gpu->cu.cuModuleLoadData(&gpu->modules[f], img->bytes);
            if (r != MEMRA__CU_SUCCESS) {
                char what[128];
                snprintf(what, sizeof what, "cuModuleLoadData(%s, %zu bytes)", label, img->size);
                return memra__cu_fail(host, &gpu->cu, gpu->name, r, what);
            }
        }
    }
#define MEMRA__GPU_KERNEL_GET(family, kernel)                                                              \
    {                                                                                                      \
        CUresult r = gpu->cu.cuModuleGetFunction(&gpu->k.kernel, gpu->modules[MEMRA__GPU_FAMILY_##family], \
                                                 #kernel);                                                 \
        if (r != MEMRA__CU_SUCCESS) return memra__cu_fail(host, &gpu->cu, gpu->name, r, "cuModuleGetFunction(" #kernel ")"); \
    }
    MEMRA__GPU_KERNEL_LIST(MEMRA__GPU_KERNEL_GET)
#undef MEMRA__GPU_KERNEL_GET
    /* The fused FP8 quantiser needs all its blocks co-resident: at most
     * (blocks per SM at 256 threads) x SMs; a cooperative launch that is still
     * refused falls back to the two passes (ops.c). */
    {
        int per_sm = 0;
        const char *q = MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL
                            ? host->knob(gpu->caps, "MEMRA_FP8_QUANT")
                            : NULL; /* read once, here */
        gpu->fp8_quant = q && strcmp(q, "2pass") == 0       ? MEMRA__FP8Q_TWO_PASS
                         : q && strcmp(q, "nocapture") == 0 ? MEMRA__FP8Q_FUSED_NOCAPTURE
                                                            : MEMRA__FP8Q_FUSED;
        if (gpu->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gpu->k.memra_k_quant_e4m3_fused, 256, 0) ==
                MEMRA__CU_SUCCESS &&
            per_sm > 0 && gpu->caps->sm_count > 0)
            gpu->fused_blocks = (unsigned)per_sm * (unsigned)gpu->caps->sm_count;
        if (gpu->fused_blocks > 4096) gpu->fused_blocks = 4096; /* partials: see gemm_fp8 */
        if (gpu->fp8_quant == MEMRA__FP8Q_TWO_PASS) gpu->fused_blocks = 0;
    }
    return MEMRA_STATUS_OK;
}

void memra__gpu_destroy(memra__gpu *gpu)
{
    if (gpu == NULL) return;
    int entered = gpu->cu.cuCtxPushCurrent != NULL && memra__gpu_enter(gpu) == MEMRA_STATUS_OK;
    if (entered) {
        memra__lt_close(gpu->lt);
        if (gpu->owns_modules)
            for (int f = 0; f < MEMRA__GPU_FAMILY_COUNT; f++)
                if (gpu->modules[f] != NULL) gpu->cu.cuModuleUnload(gpu->modules[f]);
        memra__gpu_leave(gpu);
    }
    free(gpu);
}

memra_status memra__gpu_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               memra__gpu **out_gpu)
{
    if (host == NULL || caps == NULL || out_gpu == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (caps->cu_context == NULL || caps->cc <= 0)
        return host->set_error(MEMRA_STATUS_NO_DEVICE, "%s: device %s has no CUDA context", name,
                               caps->name ? caps->name : "?");
    memra__gpu *gpu = calloc(1, sizeof *gpu);
    if (gpu == NULL) return host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    gpu->host = host;
    gpu->caps = caps;
    gpu->name = name;
    snprintf(gpu->target, sizeof gpu->target, "sm_%da", caps->cc);
    gpu->grid_cap = (unsigned)(caps->sm_count > 0 ? caps->sm_count : 16) * 16u;
    memra_status st = memra__cu_resolve(host, name, &gpu->cu);
    if (st != MEMRA_STATUS_OK) {
        free(gpu);
        return st;
    }
    st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) {
        free(gpu);
        return st;
    }
    st = load_images(gpu);
    if (st == MEMRA_STATUS_OK) st = memra__lt_open(host, name, &gpu->lt, gpu->lt_why, sizeof gpu->lt_why);
    memra__gpu_leave(gpu);
    if (st != MEMRA_STATUS_OK) {
        memra__gpu_destroy(gpu);
        return st;
    }
    host->log(MEMRA_LOG_INFO, name, "%s: %d kernel images for %s loaded (%s); %s; fp8 per-batch quantiser: %s (%u blocks)",
              caps->name ? caps->name : "device", (int)MEMRA__GPU_FAMILY_COUNT, gpu->target,
              gpu->owns_modules ? "driver" : "image loader", gpu->lt_why,
              gpu->fused_blocks == 0 ? "2pass"
              : gpu->fp8_quant == MEMRA__FP8Q_FUSED_NOCAPTURE ? "fused, 2pass while capturing"
                                                              : "fused",
              gpu->fused_blocks);
    *out_gpu = gpu;
    return MEMRA_STATUS_OK;
}
