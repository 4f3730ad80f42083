/* The host services handed to modules: logging, errors, the driver's entry
 * points, scratch by name (scratch.c), knobs, library loading and the JIT service. */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/device/device.h"
#include "base/trust.h"
#include "jit/jit.h"

/* ---- services -------------------------------------------------------------- */

static void svc_log(int level, const char *module, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    memra__logv(level, module, fmt, ap);
    va_end(ap);
}

static memra_status svc_set_error(memra_status status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return memra__set_error(status, "%s", msg);
}

static void *svc_driver_proc(const char *name) { return memra__driver_proc(memra__driver_get(), name); }

/* The old slot service: slot N of the op running on this thread is the named
 * block "slot.N" of that op's arena (the stream is the running op's). */
static memra_status svc_scratch(const memra_device_caps *caps, uint32_t slot, size_t bytes, memra_dptr *out)
{
    if (caps == NULL || out == NULL || slot >= 48)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "scratch: bad slot %u (modules use 0..47)", slot);
    char name[24];
    snprintf(name, sizeof name, "slot.%u", slot);
    memra_device *dev = memra__device_from_caps(caps);
    return memra__scratch_get(dev, memra__scope_stream(dev), name, bytes, out);
}

static memra_status scratch_get_call(memra_call *call, const char *name, size_t bytes, int zeroed, memra_dptr *out)
{
    if (call == NULL || call->caps == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "scratch_get: NULL call");
    for (const char *p = name; p != NULL && *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '.' || *p == '-'))
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "scratch_get: name '%s' has a character outside [A-Za-z0-9_.-]",
                               name);
    memra_device *dev = memra__device_from_caps(call->caps);
    return zeroed ? memra__scratch_get_zeroed(dev, call->stream, name, bytes, out)
                  : memra__scratch_get(dev, call->stream, name, bytes, out);
}

static memra_status svc_scratch_get(memra_call *call, const char *name, size_t bytes, memra_dptr *out)
{
    return scratch_get_call(call, name, bytes, 0, out);
}

static memra_status svc_scratch_get_zeroed(memra_call *call, const char *name, size_t bytes, memra_dptr *out)
{
    return scratch_get_call(call, name, bytes, 1, out);
}

static const char *svc_knob(const memra_device_caps *caps, const char *name)
{
    if (caps == NULL || name == NULL) return NULL;
    return memra__config_lookup(&memra__device_from_caps(caps)->rt->cfg, name);
}

/* CUDA libraries by soname, then the toolkit's default folder (root-owned). */
void *memra__library_open(const char *which)
{
    static const struct {
        const char *which, *env;
        const char *names[5];
    } libs[] = {
        {"cublasLt", "MEMRA_CUBLASLT_LIBRARY",
         {"libcublasLt.so.13", "libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.13",
          "/usr/local/cuda/lib64/libcublasLt.so.12", NULL}},
        {"nvrtc", "MEMRA_NVRTC_LIBRARY",
         {"libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.13",
          "/usr/local/cuda/lib64/libnvrtc.so.12", NULL}},
    };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        if (strcmp(libs[i].which, which) != 0) continue;
        const char *e = memra__env(libs[i].env);
        if (e != NULL && e[0] != '\0') {
            /* Absolute, checked and loaded by descriptor; the descriptor
             * stays open while the process runs (the library is never closed
             * by the core, and the loader knows it by that descriptor). */
            char why[PATH_MAX + 512];
            int fd = -1;
            void *h = memra__trust_dlopen_env(libs[i].env, e, &fd, why, sizeof why);
            if (h == NULL) memra__log(MEMRA_LOG_WARN, "core", "%s", why);
            return h;
        }
        const char *last = "";
        for (int j = 0; libs[i].names[j] != NULL; j++) {
            void *h = dlopen(libs[i].names[j], RTLD_NOW | RTLD_LOCAL);
            if (h != NULL) {
                MEMRA__DEBUG("core", "%s: opened %s", which, libs[i].names[j]);
                return h;
            }
            last = dlerror();
        }
        memra__log(MEMRA_LOG_INFO, "core", "%s not found (last: %s)", which, last ? last : "");
        return NULL;
    }
    return NULL;
}

static void *svc_library_open(const char *which) { return which ? memra__library_open(which) : NULL; }

/* ---- images loaded into a device ---------------------------------------- */

/* FNV-1a over the image: the cache of loaded images is keyed by address, size
 * and content, since a library loaded after another was closed can place its
 * image at the same address. */
static uint64_t image_hash(const void *image, size_t size)
{
    const unsigned char *p = image;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

memra_status memra__device_image_load(memra_device *dev, const char *name, const void *image, size_t size,
                                      CUmodule *out)
{
    if (dev->is_host)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "%s: the host device loads no GPU images", name);
    if (image == NULL || size < 16)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "%s: empty image", name ? name : "image");
    uint64_t hash = image_hash(image, size);
    pthread_mutex_lock(&dev->image_lock);
    for (memra__loaded_image *li = dev->images; li != NULL; li = li->next) {
        if (li->key == image && li->size == size && li->hash == hash) {
            *out = li->module;
            pthread_mutex_unlock(&dev->image_lock);
            return MEMRA_STATUS_OK;
        }
    }
    memra_status st = memra__device_enter(dev);
    if (st == MEMRA_STATUS_OK) {
        const memra__driver *drv = memra__driver_get();
        CUmodule m = NULL;
        CUresult r = drv->cuModuleLoadData(&m, image);
        memra__device_leave(dev);
        if (r != MEMRA__CUDA_SUCCESS) {
            st = MEMRA__FAIL(MEMRA_STATUS_DRIVER_ERROR, "loading image %s (%zu bytes) on %s (%s): %s", name, size,
                             dev->label, dev->jit_target, memra__driver_errstr(drv, r));
        } else {
            memra__loaded_image *li = calloc(1, sizeof *li);
            if (li == NULL) {
                st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "out of memory");
            } else {
                li->key = image;
                li->size = size;
                li->hash = hash;
                li->module = m;
                li->next = dev->images;
                dev->images = li;
                *out = m;
            }
        }
    }
    pthread_mutex_unlock(&dev->image_lock);
    return st;
}

void memra__device_images_unload(memra_device *dev)
{
    memra__loaded_image *li = dev->images;
    int entered = (li != NULL && memra__device_enter(dev) == MEMRA_STATUS_OK);
    while (li != NULL) {
        memra__loaded_image *n = li->next;
        if (entered) memra__driver_get()->cuModuleUnload(li->module);
        free(li);
        li = n;
    }
    if (entered) memra__device_leave(dev);
    dev->images = NULL;
}

static memra_status svc_jit_module_get(const memra_device_caps *caps, const char *name, const char *source,
                                       const char *const *options, int n_options, void **out_cumodule)
{
    memra_device *dev = memra__device_from_caps(caps);
    if (dev->rt->jit == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "JIT unavailable: %s", dev->rt->jit_why);
    if (dev->is_host) return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "JIT: the host device has no JIT target");
    memra__jit_result res;
    memra_status st = memra__jit_compile(dev->rt->jit, name, source, options, n_options, dev->jit_target, 0, &res);
    if (st != MEMRA_STATUS_OK) return st;
    CUmodule m;
    st = memra__device_image_load(dev, name, res.image, res.size, &m);
    if (st == MEMRA_STATUS_OK) *out_cumodule = m;
    return st;
}

static memra_status svc_image_load(const memra_device_caps *caps, const char *name, const void *image, size_t size,
                                   void **out_cumodule)
{
    CUmodule m;
    memra_status st = memra__device_image_load(memra__device_from_caps(caps), name, image, size, &m);
    if (st == MEMRA_STATUS_OK) *out_cumodule = m;
    return st;
}

static const memra_jit_services k_jit_services = {
    .struct_size = sizeof(memra_jit_services),
    .module_get = svc_jit_module_get,
    .image_load = svc_image_load,
};

static const memra_host_services k_services = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_host_services),
    .log = svc_log,
    .set_error = svc_set_error,
    .driver_proc = svc_driver_proc,
    .scratch = svc_scratch,
    .jit = &k_jit_services,
    .library_open = svc_library_open,
    .scratch_get = svc_scratch_get,
    .knob = svc_knob,
    .scratch_get_zeroed = svc_scratch_get_zeroed,
};

const memra_host_services *memra__host_services(void) { return &k_services; }
