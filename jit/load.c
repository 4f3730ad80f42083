/* Loading images into a device's context, and the per-device image -> module
 * map. Kept apart from jit.c so code that only compiles needs no driver. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdlib.h>

#include "base/error.h"
#include "jit/jit.h"

memra_status memra__jit_load(const memra__driver *drv, CUcontext ctx, const void *image, size_t size, CUmodule *out)
{
    if (drv == NULL || drv->lib == NULL || drv->cuModuleLoadData == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_NO_DRIVER, "memra__jit_load: no CUDA driver");
    if (ctx == NULL || image == NULL || size < 4 || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_load: NULL context, image or out, or image of %zu bytes",
                           size);
    CUresult r = drv->cuCtxPushCurrent(ctx);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, "cuCtxPushCurrent");
    CUmodule mod = NULL;
    r = drv->cuModuleLoadData(&mod, image);
    CUcontext popped = NULL;
    CUresult rp = drv->cuCtxPopCurrent(&popped);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, "cuModuleLoadData");
    if (rp != MEMRA__CUDA_SUCCESS) {
        CUresult ru = drv->cuModuleUnload(mod);
        (void)ru;
        return MEMRA__CU_FAIL(drv, rp, "cuCtxPopCurrent");
    }
    *out = mod;
    return MEMRA_STATUS_OK;
}

typedef struct modmap_item {
    const void *image;
    size_t size;
    CUmodule mod;
} modmap_item;

struct memra__jit_modmap {
    pthread_mutex_t mu;
    modmap_item *items;
    size_t n, cap;
};

memra_status memra__jit_modmap_create(memra__jit_modmap **out)
{
    if (out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_modmap_create: out is NULL");
    memra__jit_modmap *map = calloc(1, sizeof *map);
    if (map == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra__jit_modmap_create");
    if (pthread_mutex_init(&map->mu, NULL) != 0) {
        free(map);
        return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "memra__jit_modmap_create: pthread_mutex_init failed");
    }
    *out = map;
    return MEMRA_STATUS_OK;
}

memra_status memra__jit_modmap_get(memra__jit_modmap *map, const memra__driver *drv, CUcontext ctx, const void *image,
                                   size_t size, CUmodule *out)
{
    if (map == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_modmap_get: NULL argument");
    /* The lock is held across the load so one image is never loaded twice. */
    pthread_mutex_lock(&map->mu);
    for (size_t i = 0; i < map->n; i++) {
        if (map->items[i].image == image && map->items[i].size == size) {
            *out = map->items[i].mod;
            pthread_mutex_unlock(&map->mu);
            return MEMRA_STATUS_OK;
        }
    }
    memra_status st = MEMRA_STATUS_OK;
    if (map->n == map->cap) {
        size_t ncap = map->cap ? 2 * map->cap : 16;
        modmap_item *grown = realloc(map->items, ncap * sizeof *grown);
        if (grown == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra__jit_modmap_get");
        else {
            map->items = grown;
            map->cap = ncap;
        }
    }
    CUmodule mod = NULL;
    if (st == MEMRA_STATUS_OK) st = memra__jit_load(drv, ctx, image, size, &mod);
    if (st == MEMRA_STATUS_OK) {
        map->items[map->n++] = (modmap_item){.image = image, .size = size, .mod = mod};
        *out = mod;
    }
    pthread_mutex_unlock(&map->mu);
    return st;
}

void memra__jit_modmap_destroy(memra__jit_modmap *map, const memra__driver *drv, CUcontext ctx)
{
    if (map == NULL) return;
    if (map->n > 0 && drv != NULL && drv->lib != NULL && ctx != NULL &&
        drv->cuCtxPushCurrent(ctx) == MEMRA__CUDA_SUCCESS) {
        for (size_t i = 0; i < map->n; i++) {
            CUresult r = drv->cuModuleUnload(map->items[i].mod);
            if (r != MEMRA__CUDA_SUCCESS)
                memra__log(MEMRA_LOG_WARN, "jit", "cuModuleUnload: %s", memra__driver_errstr(drv, r));
        }
        CUcontext popped = NULL;
        drv->cuCtxPopCurrent(&popped);
    }
    free(map->items);
    pthread_mutex_destroy(&map->mu);
    free(map);
}
