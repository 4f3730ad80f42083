/* Device buffers: cuMemAlloc on a GPU, aligned host memory on the host device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/device/device.h"

struct memra_buffer {
    memra_device *dev;
    memra_dptr ptr;
    size_t size;
};

memra_status memra_buffer_create(memra_device *dev, size_t bytes, memra_buffer **out_buf)
{
    if (dev == NULL || out_buf == NULL || bytes == 0)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_buffer_create: %s",
                           bytes == 0 ? "zero bytes" : "NULL argument");
    if (bytes > SIZE_MAX - 255)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_buffer_create: %zu bytes is out of range", bytes);
    memra_buffer *b = calloc(1, sizeof *b);
    if (b == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_buffer_create");
    b->dev = dev;
    b->size = bytes;
    if (dev->is_host) {
        void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
        if (p == NULL) {
            free(b);
            return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra_buffer_create: %zu bytes on host", bytes);
        }
        b->ptr = (memra_dptr)(uintptr_t)p;
    } else {
        memra_status st = memra__device_enter(dev);
        if (st != MEMRA_STATUS_OK) {
            free(b);
            return st;
        }
        const memra__driver *drv = memra__driver_get();
        CUdeviceptr p = 0;
        CUresult r = drv->cuMemAlloc(&p, bytes);
        memra__device_leave(dev);
        if (r != MEMRA__CUDA_SUCCESS) {
            free(b);
            /* out of memory only when the driver says so: a context already
             * broken by an earlier fault (ILLEGAL_ADDRESS) is a driver error */
            return MEMRA__FAIL(r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */ ? MEMRA_STATUS_OUT_OF_MEMORY
                                                                     : MEMRA_STATUS_DRIVER_ERROR,
                               "cuMemAlloc(%zu) on %s: %s", bytes, dev->label, memra__driver_errstr(drv, r));
        }
        b->ptr = p;
    }
    *out_buf = b;
    return MEMRA_STATUS_OK;
}

void memra_buffer_destroy(memra_buffer *b)
{
    if (b == NULL) return;
    if (b->dev->is_host) {
        free((void *)(uintptr_t)b->ptr);
    } else if (memra__device_enter(b->dev) == MEMRA_STATUS_OK) {
        memra__driver_get()->cuMemFree(b->ptr);
        memra__device_leave(b->dev);
    }
    free(b);
}

memra_dptr memra_buffer_ptr(const memra_buffer *b) { return b ? b->ptr : 0; }
size_t memra_buffer_size(const memra_buffer *b) { return b ? b->size : 0; }

static memra_status copy(memra_buffer *b, size_t off, void *host, size_t bytes, int to_device)
{
    if (b == NULL || (host == NULL && bytes > 0))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_buffer copy: NULL argument");
    if (off > b->size || bytes > b->size - off)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_buffer copy: [%zu, +%zu) outside a %zu-byte buffer",
                           off, bytes, b->size);
    if (bytes == 0) return MEMRA_STATUS_OK;
    if (b->dev->is_host) {
        char *p = (char *)(uintptr_t)b->ptr + off;
        if (to_device) memcpy(p, host, bytes);
        else memcpy(host, p, bytes);
        return MEMRA_STATUS_OK;
    }
    memra_status st = memra__device_enter(b->dev);
    if (st != MEMRA_STATUS_OK) return st;
    const memra__driver *drv = memra__driver_get();
    /* Synchronous copies: wait for queued work on every stream first. */
    CUresult r = drv->cuCtxSynchronize();
    if (r == MEMRA__CUDA_SUCCESS)
        r = to_device ? drv->cuMemcpyHtoD(b->ptr + off, host, bytes) : drv->cuMemcpyDtoH(host, b->ptr + off, bytes);
    memra__device_leave(b->dev);
    if (r != MEMRA__CUDA_SUCCESS) return MEMRA__CU_FAIL(drv, r, to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH");
    return MEMRA_STATUS_OK;
}

memra_status memra_buffer_write(memra_buffer *b, size_t offset, const void *src, size_t bytes)
{
    return copy(b, offset, (void *)(uintptr_t)src, bytes, 1);
}

memra_status memra_buffer_read(const memra_buffer *b, size_t offset, void *dst, size_t bytes)
{
    return copy((memra_buffer *)(uintptr_t)b, offset, dst, bytes, 0);
}

/* Internal raw allocations used by weights. */

memra_status memra__dev_alloc(memra_device *dev, size_t bytes, memra_dptr *out)
{
    memra_buffer *b;
    memra_status st = memra_buffer_create(dev, bytes, &b);
    if (st != MEMRA_STATUS_OK) return st;
    *out = b->ptr;
    free(b);
    return MEMRA_STATUS_OK;
}

void memra__dev_free(memra_device *dev, memra_dptr p)
{
    if (p == 0) return;
    memra_buffer b = {.dev = dev, .ptr = p, .size = 0};
    memra_buffer *h = malloc(sizeof *h);
    if (h == NULL) return;
    *h = b;
    memra_buffer_destroy(h);
}

memra_status memra__dev_upload(memra_device *dev, memra_dptr dst, const void *src, size_t bytes)
{
    memra_buffer b = {.dev = dev, .ptr = dst, .size = bytes};
    return copy(&b, 0, (void *)(uintptr_t)src, bytes, 1);
}

memra_status memra__dev_download(memra_device *dev, void *dst, memra_dptr src, size_t bytes)
{
    memra_buffer b = {.dev = dev, .ptr = src, .size = bytes};
    return copy(&b, 0, dst, bytes, 0);
}
