/* Per-device state of the MMQ-family modules: driver entry points (the shared
 * list of modules/cuda/cu.h plus cuFuncSetAttribute for the large dynamic
 * shared memory), this family's images for the device's target (the block-128
 * FP8 kernels from the JIT when it can serve them, else embedded; the rest
 * embedded), and kernel lookup. */
#define _POSIX_C_SOURCE 200809L

#include "mmq_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8

static const char *const k_family_names[3] = {"mmq", "fp8blk", "fp8blk_mx"};

static const char *status_name(memra_status st)
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

static const memra__gpu_image *image_find(const char *family, const char *target)
{
    for (size_t i = 0; i < memra__mmq_image_count; i++)
        if (strcmp(memra__mmq_images[i].family, family) == 0 && strcmp(memra__mmq_images[i].target, target) == 0)
            return &memra__mmq_images[i];
    return NULL;
}

static memra_status enter(memra__mmq *q)
{
    CUresult r = q->cu.cuCtxPushCurrent((CUcontext)q->caps->cu_context);
    return r == MEMRA__CU_SUCCESS ? MEMRA_STATUS_OK : memra__cu_fail(q->host, &q->cu, q->name, r, "cuCtxPushCurrent");
}

static void leave(memra__mmq *q)
{
    CUcontext c;
    q->cu.cuCtxPopCurrent(&c);
}

static memra_status load_family(memra__mmq *q, int f)
{
    const memra_host_services *host = q->host;
    const memra__gpu_image *img = image_find(k_family_names[f], q->target);
    if (img == NULL) {
        char have[96] = "";
        for (size_t i = 0; i < memra__mmq_image_count; i++) {
            if (strcmp(memra__mmq_images[i].family, k_family_names[f]) != 0) continue;
            size_t l = strlen(have);
            snprintf(have + l, sizeof have - l, "%s%s", l ? ", " : "", memra__mmq_images[i].target);
        }
        return host->set_error(MEMRA_STATUS_MODULE_ERROR,
                               "%s: no %s kernel image for %s (%s, cc %d): built for %s only", q->name,
                               k_family_names[f], q->target, q->caps->name ? q->caps->name : "?", q->caps->cc,
                               have[0] ? have : "no target");
    }
    char label[96];
    snprintf(label, sizeof label, "%s/%s.%s", q->name, img->family, img->target);
    if (!q->owns_modules) {
        void *m = NULL;
        memra_status st = host->jit->image_load(q->caps, label, img->bytes, img->size, &m);
        if (st != MEMRA_STATUS_OK) return st;
        q->mods[f] = (CUmodule)m;
        return MEMRA_STATUS_OK;
    }
    CUresult r = q->cu.cuModuleLoadData(&q->mods[f], img->bytes);
    if (r != MEMRA__CU_SUCCESS) {
        char what[128];
        snprintf(what, sizeof what, "cuModuleLoadData(%s, %zu bytes)", label, img->size);
        return memra__cu_fail(host, &q->cu, q->name, r, what);
    }
    return MEMRA_STATUS_OK;
}

/* The block-128 FP8 kernels of variant v into mods[f]: from the JIT when it
 * serves them, else from the embedded cubin; says which at info level. */
static memra_status load_fp8blk(memra__mmq *q, int f, memra__fp8blk_variant v)
{
    const memra_host_services *host = q->host;
    const memra_device_caps *caps = q->caps;
    const memra_jit_services *jit = MEMRA_HAS_MEMBER(host, memra_host_services, jit) ? host->jit : NULL;
    const memra__fp8blk_tile def = MEMRA__FP8BLK_TILE_DEFAULT;
    const char *tile_why = NULL;
    const memra__fp8blk_tile tile = memra__fp8blk_tile_env(&tile_why);
    if (tile_why != NULL)
        host->log(MEMRA_LOG_WARN, q->name, "MEMRA_FP8BLK_TILE=%s refused (%s); using %dx%d (%dx%d warps)",
                  memra__fp8blk_tile_knob(), tile_why, def.bm, def.bn, def.warps_m, def.warps_n);
    const size_t smem = memra__fp8blk_tile_smem(&tile);
    const memra_jit_source *src = memra__fp8blk_jit_source(v);
    char why[224];
    why[0] = '\0';
    if (!memra__fp8blk_jit_enabled()) {
        snprintf(why, sizeof why, "MEMRA_FP8BLK_JIT=0");
    } else if (q->owns_modules || jit == NULL || !MEMRA_HAS_MEMBER(jit, memra_jit_services, module_get) ||
               jit->module_get == NULL) {
        snprintf(why, sizeof why, "the host offers no JIT service");
    } else if (caps->jit_target == NULL || caps->jit_target[0] == '\0') {
        snprintf(why, sizeof why, "the device has no JIT target");
    } else if (caps->smem_per_block_optin != 0 && caps->smem_per_block_optin < smem) {
        snprintf(why, sizeof why, "tile %dx%d needs %zu bytes of shared memory, the device offers %zu", tile.bm,
                 tile.bn, smem, caps->smem_per_block_optin);
    } else {
        void *m = NULL;
        const double t0 = now_ms();
        memra_status st = jit->module_get(caps, src->name, src->source, src->options, src->n_options, &m);
        const double ms = now_ms() - t0;
        if (st == MEMRA_STATUS_OK) {
            q->mods[f] = (CUmodule)m;
            q->fp8blk_tile = tile;
            q->fp8blk_path = "jit";
            host->log(MEMRA_LOG_INFO, q->name,
                      "gemm_fp8_blk: %s served by the JIT for %s, tile %dx%d (%dx%d warps), %.2f ms "
                      "(memory / disk / nvrtc: the jit line above)",
                      src->name, caps->jit_target, tile.bm, tile.bn, tile.warps_m, tile.warps_n, ms);
            return MEMRA_STATUS_OK;
        }
        snprintf(why, sizeof why, "the JIT could not serve %s for %s (%s after %.1f ms; NVRTC missing or the compile failed)",
                 src->name, caps->jit_target, status_name(st), ms);
    }
    memra_status st = load_family(q, f);
    if (st != MEMRA_STATUS_OK) return st;
    q->fp8blk_tile = def;
    q->fp8blk_path = "embedded";
    host->log(MEMRA_LOG_INFO, q->name, "gemm_fp8_blk: %s served by the embedded cubin (%s, tile %dx%d); JIT not used: %s",
              src->name, q->target, def.bm, def.bn, why);
    if (!memra__fp8blk_tile_is_default(&tile))
        host->log(MEMRA_LOG_WARN, q->name, "MEMRA_FP8BLK_TILE=%dx%dx%dx%d ignored: the embedded cubin has tile %dx%dx%dx%d",
                  tile.bm, tile.bn, tile.warps_m, tile.warps_n, def.bm, def.bn, def.warps_m, def.warps_n);
    return MEMRA_STATUS_OK;
}

static memra_status get_fn(memra__mmq *q, int f, const char *kernel, int smem, CUfunction *out)
{
    CUresult r = q->cu.cuModuleGetFunction(out, q->mods[f], kernel);
    if (r != MEMRA__CU_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "cuModuleGetFunction(%s)", kernel);
        return memra__cu_fail(q->host, &q->cu, q->name, r, what);
    }
    if (smem > 48 * 1024) {
        r = q->cuFuncSetAttribute(*out, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
        if (r != MEMRA__CU_SUCCESS) {
            char what[128];
            snprintf(what, sizeof what, "cuFuncSetAttribute(%s, max dynamic shared = %d)", kernel, smem);
            return memra__cu_fail(q->host, &q->cu, q->name, r, what);
        }
    }
    return MEMRA_STATUS_OK;
}

const memra__mmq_r3_tile memra__mmq_r3_tiles[MEMRA__MMQ_R3_TILES] = {
    {"memra_k_gemm_q8_0r_mt4", 128, 128, 110592},
    {"memra_k_gemm_q8_0r_mt2", 64, 128, 82944},
    {"memra_k_gemm_q8_0r_mt4n3", 128, 96, 96768},
    {"memra_k_gemm_q8_0r_mt2n3", 64, 96, 69120},
};

static memra_status load_all(memra__mmq *q, unsigned families, int mx)
{
    memra_status st = MEMRA_STATUS_OK;
    if (families & MEMRA__MMQ_FAM_MMQ) {
        st = load_family(q, 0);
        if (st != MEMRA_STATUS_OK) return st;
        static const char *const probes[3] = {"memra_k_probe_s32", "memra_k_probe_f32", "memra_k_probe_mx"};
        st = get_fn(q, 0, "memra_k_quant_q8_1", 0, &q->quant_q8_1);
        if (st == MEMRA_STATUS_OK) st = get_fn(q, 0, "memra_k_gemm_q8_0", MEMRA__MMQ_SMEM_BYTES, &q->gemm_q8_0);
        for (int a = 0; a < 3 && st == MEMRA_STATUS_OK; a++)
            st = get_fn(q, 0, probes[a], MEMRA__MMQ_SMEM_BYTES, &q->probe[a]);
        if (st == MEMRA_STATUS_OK) st = get_fn(q, 0, "memra_k_repack_q8_0", 0, &q->repack_q8_0);
        if (st == MEMRA_STATUS_OK) st = get_fn(q, 0, "memra_k_splitk_sum", 0, &q->splitk_sum);
        /* each gemm_q8_0r tile only where its shared memory fits (sm_120's 99 KB
         * takes all but the 128 x 128 one) */
        for (int t = 0; t < MEMRA__MMQ_R3_TILES && st == MEMRA_STATUS_OK; t++)
            if (q->caps->smem_per_block_optin == 0 || q->caps->smem_per_block_optin >= memra__mmq_r3_tiles[t].smem)
                st = get_fn(q, 0, memra__mmq_r3_tiles[t].kernel, (int)memra__mmq_r3_tiles[t].smem, &q->gemm_q8_0r[t]);
        if (st != MEMRA_STATUS_OK) return st;
    }
    if (families & (MEMRA__MMQ_FAM_FP8BLK | MEMRA__MMQ_FAM_FP8BLK_MX)) {
        const int use_mx = (families & MEMRA__MMQ_FAM_FP8BLK_MX) && (mx || !(families & MEMRA__MMQ_FAM_FP8BLK));
        const int f = use_mx ? 2 : 1;
        q->fp8blk_variant = use_mx ? MEMRA__FP8BLK_MX : q->caps->cc >= 100 ? MEMRA__FP8BLK_F8F6F4 : MEMRA__FP8BLK_E4M3;
        st = load_fp8blk(q, f, q->fp8blk_variant);
        if (st != MEMRA_STATUS_OK) return st;
        q->fp8blk_threads = memra__fp8blk_tile_threads(&q->fp8blk_tile);
        q->fp8blk_smem = (unsigned)memra__fp8blk_tile_smem(&q->fp8blk_tile);
        st = get_fn(q, f, "memra_k_fp8blk_quant", 0, &q->fp8blk_quant);
        if (st == MEMRA_STATUS_OK) st = get_fn(q, f, "memra_k_fp8blk_gemm", (int)q->fp8blk_smem, &q->fp8blk_gemm);
    } else {
        q->fp8blk_decline = "gemm_fp8_blk: no block-128 FP8 kernel loaded for this device";
    }
    return st;
}

void memra__mmq_destroy(memra__mmq *q)
{
    if (q == NULL) return;
    if (q->owns_modules && q->cu.cuCtxPushCurrent != NULL && enter(q) == MEMRA_STATUS_OK) {
        for (int f = 0; f < 3; f++)
            if (q->mods[f] != NULL) q->cu.cuModuleUnload(q->mods[f]);
        leave(q);
    }
    free(q);
}

memra_status memra__mmq_create(const memra_host_services *host, const memra_device_caps *caps, const char *name,
                               unsigned families, int mx, memra__mmq **out)
{
    if (host == NULL || caps == NULL || out == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    /* The fp8blk sources' knobs, process-wide, taken at the first init. */
    if (host != NULL && caps != NULL && MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL)
        memra__fp8blk_jit_configure(host->knob(caps, "MEMRA_FP8BLK_TILE"), host->knob(caps, "MEMRA_FP8BLK_JIT"));
    if (caps->cu_context == NULL || caps->cc <= 0)
        return host->set_error(MEMRA_STATUS_NO_DEVICE, "%s: device %s has no CUDA context", name,
                               caps->name ? caps->name : "?");
    const size_t need = (families & MEMRA__MMQ_FAM_MMQ) ? MEMRA__MMQ_SMEM_BYTES : MEMRA__FP8BLK_SMEM_BYTES;
    if (caps->smem_per_block_optin != 0 && caps->smem_per_block_optin < need)
        return host->set_error(MEMRA_STATUS_MODULE_ERROR, "%s: the tile needs %zu bytes of shared memory, %s offers %zu",
                               name, need, caps->name ? caps->name : "the device", caps->smem_per_block_optin);
    memra__mmq *q = calloc(1, sizeof *q);
    if (q == NULL) return host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "%s: out of memory", name);
    q->host = host;
    q->caps = caps;
    q->name = name;
    q->families = families;
    {
        /* Knobs, read once here (never per call). */
        const int has = MEMRA_HAS_MEMBER(host, memra_host_services, knob) && host->knob != NULL;
        const char *pdl = has ? host->knob(caps, "MEMRA_MMQ_PDL") : NULL;
        const char *kern = has ? host->knob(caps, "MEMRA_MMQ_KERNEL") : NULL;
        const char *bm = has ? host->knob(caps, "MEMRA_MMQ_BM") : NULL;
        const char *bn = has ? host->knob(caps, "MEMRA_MMQ_BN") : NULL;
        const char *split = has ? host->knob(caps, "MEMRA_MMQ_SPLIT") : NULL;
        q->knob_pdl_off = pdl != NULL && strcmp(pdl, "0") == 0;
        q->knob_v1 = kern != NULL && strcmp(kern, "v1") == 0;
        q->knob_bm = bm ? atoi(bm) : 0;
        q->knob_bn = bn ? atoi(bn) : 0;
        q->knob_split = split ? atoi(split) : 0;
    }
    snprintf(q->target, sizeof q->target, "sm_%da", caps->cc);
    q->grid_cap = (unsigned)(caps->sm_count > 0 ? caps->sm_count : 16) * 16u;
    const memra_jit_services *jit = MEMRA_HAS_MEMBER(host, memra_host_services, jit) ? host->jit : NULL;
    q->owns_modules = !(jit != NULL && MEMRA_HAS_MEMBER(jit, memra_jit_services, image_load) && jit->image_load);
    memra_status st = memra__cu_resolve(host, name, &q->cu);
    if (st == MEMRA_STATUS_OK) {
        *(void **)&q->cuFuncSetAttribute = host->driver_proc("cuFuncSetAttribute");
        /* programmatic dependent launch needs griddepcontrol (sm_90+), and a
         * driver that also captures it into CUDA graphs (12.3+) */
        if (caps->cc >= 90 && caps->driver_version >= 12030)
            *(void **)&q->cuLaunchKernelEx = host->driver_proc("cuLaunchKernelEx");
        if (q->cuFuncSetAttribute == NULL)
            st = host->set_error(MEMRA_STATUS_NO_DRIVER, "%s: driver entry point cuFuncSetAttribute not found", name);
    }
    if (st != MEMRA_STATUS_OK) {
        free(q);
        return st;
    }
    st = enter(q);
    if (st != MEMRA_STATUS_OK) {
        free(q);
        return st;
    }
    st = load_all(q, families, mx);
    leave(q);
    if (st != MEMRA_STATUS_OK) {
        memra__mmq_destroy(q);
        return st;
    }
    host->log(MEMRA_LOG_INFO, name, "%s: MMQ-family kernels for %s loaded%s%s%s%s", caps->name ? caps->name : "device",
              q->target, q->fp8blk_gemm ? "; gemm_fp8_blk variant " : "",
              q->fp8blk_gemm ? memra__fp8blk_variant_name(q->fp8blk_variant) : "", q->fp8blk_gemm ? " from " : "",
              q->fp8blk_gemm ? q->fp8blk_path : "");
    *out = q;
    return MEMRA_STATUS_OK;
}
