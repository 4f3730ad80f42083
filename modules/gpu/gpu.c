/* The GPU runtime's per-device context: create / destroy with the module's
 * families, context enter / leave, launches (see gpu.h). Images and kernels:
 * loader.c. */
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static memra_status launch_failed(memra__gpu *gpu, CUresult r, const char *name)
{
    char what[96];
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", name);
    return memra__cu_fail(gpu->host, &gpu->cu, gpu->name, r, what);
}

memra_status memra__gpu_launch(memra__gpu *gpu, CUfunction f, const char *name, unsigned grid, unsigned block,
                               memra_stream_t stream, void **args)
{
    CUresult r = gpu->cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, (CUstream)stream, args, NULL);
    return r == MEMRA__CU_SUCCESS ? MEMRA_STATUS_OK : launch_failed(gpu, r, name);
}

memra_status memra__gpu_launch_ex(memra__gpu *gpu, CUfunction f, const char *name, unsigned gx, unsigned gy,
                                  unsigned gz, unsigned threads, unsigned smem, memra_stream_t stream, void **args,
                                  int pdl)
{
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    CUresult r;
    if (pdl && gpu->cuLaunchKernelEx != NULL && !atomic_load_explicit(&gpu->pdl_refused, memory_order_relaxed)) {
        memra__cu_launch_attr at = {.id = MEMRA__CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, .v.value = 1};
        const memra__cu_launch_config cfg = {.grid = {gx, gy, gz}, .block = {threads, 1, 1}, .smem = smem,
                                             .stream = (CUstream)stream, .attrs = &at, .num_attrs = 1};
        r = gpu->cuLaunchKernelEx(&cfg, f, args, NULL);
        if (r != MEMRA__CU_SUCCESS && gpu->cu.cuLaunchKernel(f, gx, gy, gz, threads, 1, 1, smem, (CUstream)stream,
                                                              args, NULL) == MEMRA__CU_SUCCESS) {
            /* the plain launch works where the dependent one did not: the driver
             * refuses the attribute here, so this context launches plainly from now on */
            const char *en = NULL;
            gpu->cu.cuGetErrorName(r, &en);
            gpu->host->log(MEMRA_LOG_WARN, gpu->name, "%s: dependent launch refused (%s); plain launches from now on",
                           name, en ? en : "?");
            atomic_store_explicit(&gpu->pdl_refused, 1, memory_order_relaxed);
            r = MEMRA__CU_SUCCESS;
        }
    } else {
        r = gpu->cu.cuLaunchKernel(f, gx, gy, gz, threads, 1, 1, smem, (CUstream)stream, args, NULL);
    }
    memra__gpu_leave(gpu);
    return r == MEMRA__CU_SUCCESS ? MEMRA_STATUS_OK : launch_failed(gpu, r, name);
}

unsigned memra__gpu_blocks(const memra__gpu *gpu, int64_t items, int64_t per_block)
{
    int64_t b = (items + per_block - 1) / per_block;
    if (b > (int64_t)gpu->grid_cap) b = gpu->grid_cap;
    return b < 1 ? 1u : (unsigned)b;
}

const char *memra__gpu_knob(const memra__gpu *gpu, const char *name)
{
    const memra_host_services *h = gpu->host;
    return MEMRA_HAS_MEMBER(h, memra_host_services, knob) && h->knob != NULL ? h->knob(gpu->caps, name) : NULL;
}

memra_status memra__gpu_decline(memra_call *call, const char *reason)
{
    call->decline_reason = reason;
    return MEMRA_STATUS_DECLINED;
}

int memra__gpu_aligned(memra_dptr p, unsigned a) { return (p & (memra_dptr)(a - 1)) == 0; }

memra_status memra__gpu_bad_arg(memra__gpu *gpu, const char *op, const char *what)
{
    return gpu->host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: %s", gpu->name, op, what);
}

unsigned memra__gpu_grid_balanced(int64_t units, int64_t resident)
{
    if (resident < 1) resident = 1;
    if (units <= 1) return 1;
    if (units <= resident) return (unsigned)units;
    const int64_t rounds = (units + resident - 1) / resident;
    return (unsigned)((units + rounds - 1) / rounds);
}



/* The host module's GEMM argument checks, word for word in effect. */
memra_status memra__gpu_check_gemm(memra__gpu *q, const char *op, const memra_gemm_args *a)
{
    const memra_host_services *h = q->host;
    if (a == NULL) return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: args is NULL", q->name, op);
    if (!MEMRA_HAS_MEMBER(a, memra_gemm_args, alpha))
        return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: args struct_size %u is smaller than the v1 struct",
                            q->name, op, (unsigned)a->struct_size);
    if (a->m < 0 || a->n < 0 || a->k < 0)
        return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: m = %d, n = %d, k = %d must be >= 0", q->name, op,
                            (int)a->m, (int)a->n, (int)a->k);
    if (a->ldy < a->n)
        return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: ldy = %lld is less than n = %d", q->name, op,
                            (long long)a->ldy, (int)a->n);
    if (a->y_row_offset < 0)
        return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: y_row_offset = %lld must be >= 0", q->name, op,
                            (long long)a->y_row_offset);
    if (a->m == 0 || a->n == 0) return MEMRA_STATUS_OK;
    if (a->y_row_offset > INT64_MAX - a->m || a->y_row_offset + a->m > INT64_MAX / 4 / a->ldy)
        return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: y_row_offset + m rows of ldy floats overflows",
                            q->name, op);
    if (a->y == 0) return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: y is NULL", q->name, op);
    if (a->k > 0 && (a->x == 0 || a->w == 0))
        return h->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s.%s: x or w is NULL", q->name, op);
    return MEMRA_STATUS_OK;
}

memra_dptr memra__gpu_y_base(const memra_gemm_args *a) { return a->y + (memra_dptr)(a->y_row_offset * a->ldy * 4); }

void *memra__gpu_state(const memra__gpu *gpu, const memra__gpu_family *family)
{
    for (int i = 0; i < gpu->n_families; i++)
        if (gpu->families[i] == family) return gpu->state[i];
    return NULL;
}

void memra__gpu_destroy(memra__gpu *gpu)
{
    if (gpu == NULL) return;
    int entered = gpu->cu.cuCtxPushCurrent != NULL && memra__gpu_enter(gpu) == MEMRA_STATUS_OK;
    if (entered) {
        for (int i = gpu->n_families - 1; i >= 0; i--)
            if (gpu->families[i]->unload != NULL && gpu->state[i] != NULL) gpu->families[i]->unload(gpu, gpu->state[i]);
        memra__lt_close(gpu->lt);
        for (int i = 0; i < gpu->n_owned; i++)
            if (gpu->owned[i] != NULL) gpu->cu.cuModuleUnload(gpu->owned[i]);
        memra__gpu_leave(gpu);
    }
    for (int i = 0; i < gpu->n_families; i++) free(gpu->state[i]);
    free(gpu);
}

static memra_status load_families(memra__gpu *gpu, const memra__gpu_family *const *families, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        void *state = calloc(1, families[i]->state_size ? families[i]->state_size : 1);
        if (state == NULL) return gpu->host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", gpu->name);
        gpu->families[gpu->n_families] = families[i];
        gpu->state[gpu->n_families++] = state;
        const memra__gpu_family *f = families[i];
        memra_status st = MEMRA_STATUS_OK;
        if (f->image != NULL) st = memra__gpu_load_kernels(gpu, f->image, f->kernels, f->n_kernels, state);
        if (st == MEMRA_STATUS_OK && f->load != NULL) st = f->load(gpu, state);
        if (st != MEMRA_STATUS_OK) return st;
    }
    return MEMRA_STATUS_OK;
}

static memra_status gpu_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               const memra__gpu_family *const *families, size_t n_families, int portable,
                               memra__gpu **out_gpu)
{
    if (host == NULL || caps == NULL || out_gpu == NULL || (families == NULL && n_families > 0))
        return MEMRA_STATUS_INVALID_ARGUMENT;
    if (n_families > MEMRA__GPU_MAX_FAMILIES)
        return host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "%s: %zu kernel families (at most %d)", name, n_families,
                               MEMRA__GPU_MAX_FAMILIES);
    for (size_t i = 0; i < n_families; i++)
        if (families[i]->knobs != NULL) families[i]->knobs(host, caps);
    if (caps->cu_context == NULL || caps->cc <= 0)
        return host->set_error(MEMRA_STATUS_NO_DEVICE, "%s: device %s has no CUDA context", name,
                               caps->name ? caps->name : "?");
    memra__gpu *gpu = calloc(1, sizeof *gpu);
    if (gpu == NULL) return host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    gpu->host = host;
    gpu->caps = caps;
    gpu->name = name;
    gpu->portable = portable;
    snprintf(gpu->target, sizeof gpu->target, portable ? "sm_%d" : "sm_%da", caps->cc);
    gpu->grid_cap = (unsigned)(caps->sm_count > 0 ? caps->sm_count : 16) * 16u;
    const memra_jit_services *jit = MEMRA_HAS_MEMBER(host, memra_host_services, jit) ? host->jit : NULL;
    gpu->owns_modules = !(jit != NULL && MEMRA_HAS_MEMBER(jit, memra_jit_services, image_load) && jit->image_load);
    memra_status st = memra__cu_resolve(host, name, &gpu->cu);
    if (st != MEMRA_STATUS_OK) {
        free(gpu);
        return st;
    }
    /* programmatic dependent launch needs griddepcontrol (sm_90+), and a
     * driver that also captures it into CUDA graphs (12.3+) */
    if (!portable && caps->cc >= 90 && caps->driver_version >= 12030)
        *(void **)&gpu->cuLaunchKernelEx = host->driver_proc("cuLaunchKernelEx");
    /* tensor maps (the bulk tensor copy engine, sm_90+): an optional fp8blk kernel's operands */
    if (!portable && caps->cc >= 90)
        *(void **)&gpu->cuTensorMapEncodeTiled = host->driver_proc("cuTensorMapEncodeTiled");
    st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) {
        free(gpu);
        return st;
    }
    st = load_families(gpu, families, n_families);
    memra__gpu_leave(gpu);
    if (st != MEMRA_STATUS_OK) {
        memra__gpu_destroy(gpu);
        return st;
    }
    *out_gpu = gpu;
    return MEMRA_STATUS_OK;
}

memra_status memra__gpu_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               const memra__gpu_family *const *families, size_t n_families, memra__gpu **out_gpu)
{
    return gpu_create(host, caps, name, families, n_families, 0, out_gpu);
}

memra_status memra__gpu_create_portable(const memra_host_services *host, const memra_device_caps *caps,
                                        const char *name, const memra__gpu_family *const *families,
                                        size_t n_families, memra__gpu **out_gpu)
{
    return gpu_create(host, caps, name, families, n_families, 1, out_gpu);
}
