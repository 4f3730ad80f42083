/* Scratch that follows the stream.
 *
 * Each device has a pool of arenas. An arena is a small table of named blocks
 * ("module/name" -> device memory). A call (memra_matmul, memra_module_call,
 * one dispatched op) opens a scope on (device, stream); the first scratch
 * request of the scope takes an arena from the pool and holds it alone until
 * the scope ends, when (on a GPU) an event is recorded on the stream after the
 * scope's work and the arena goes back to the pool. An arena is taken:
 *   1. the stream's pinned arena (memra_stream_reserve, or the arena a capture
 *      used), when idle;
 *   2. not capturing: an idle arena last used by the same stream (stream order
 *      protects it), else an idle arena whose event has completed
 *      (cuEventQuery, never a host wait), else a new arena;
 *   3. capturing: an idle arena last used by this stream, which is then pinned
 *      to it (the graph keeps its addresses); else NOT_SUPPORTED naming
 *      memra_stream_reserve.
 * A block grows by a new allocation: cuMemAllocAsync / cuMemFreeAsync on the
 * stream where the driver has them (the old block freed in stream order),
 * else cuMemAlloc and the old block freed once the arena's next event has
 * completed. During capture nothing is allocated: a block too small fails with
 * NOT_SUPPORTED naming memra_stream_reserve. An arena a capture used may be
 * read by its graphs at any later time: its blocks, when they grow afterwards,
 * are kept until memra_close. No op synchronises the host or
 * the context here.
 * scratch_get_zeroed: a block new, grown, or last handed out plain is
 * zero-filled in stream order (cuMemsetD8Async; captured, it runs at every
 * replay and the next eager call fills again); otherwise its owner's bytes are
 * kept, so per-call state (a grid barrier's word) needs no memset per call.
 * The host device: the same pool without events (host ops complete before
 * they return), so every concurrent call has its own arena.
 * Scopes nest per thread (a scope on the same device and stream joins the
 * open one, so memra_matmul's steps share one arena). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/device/device.h"

#define SCOPE_MAX 8
#define CU_EVENT_DISABLE_TIMING 2
#define CU_ERROR_NOT_READY 600

typedef struct scope {
    memra_device *dev;
    memra_stream_t stream;
    memra__arena *arena;
    int depth;
    int capturing; /* known once an arena was taken */
} scope;

static _Thread_local scope tl_scope[SCOPE_MAX];
static _Thread_local int tl_nscope;
static _Thread_local const char *tl_module = "core";


void memra__scratch_device_init(memra_device *dev)
{
    const memra__driver *drv = memra__driver_get();
    if (dev->is_host || drv->lib == NULL) return;
    *(void **)&dev->cu_event_query = memra__driver_proc(drv, "cuEventQuery");
    int pools = 0; /* CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED (115): stream-ordered allocation */
    if (drv->version >= 11020 && drv->cuDeviceGetAttribute(&pools, 115, dev->cudev) == MEMRA__CUDA_SUCCESS &&
        pools != 0) {
        *(void **)&dev->cu_alloc_async = memra__driver_proc(drv, "cuMemAllocAsync");
        *(void **)&dev->cu_free_async = memra__driver_proc(drv, "cuMemFreeAsync");
        if (dev->cu_alloc_async == NULL || dev->cu_free_async == NULL) {
            dev->cu_alloc_async = NULL;
            dev->cu_free_async = NULL;
        }
    }
}

const char *memra__scratch_module_set(const char *module)
{
    const char *prev = tl_module;
    tl_module = module ? module : "core";
    return prev;
}

memra_status memra__scope_begin(memra_device *dev, memra_stream_t stream)
{
    if (dev->is_host) stream = NULL; /* host ops ignore streams */
    if (tl_nscope > 0) {
        scope *t = &tl_scope[tl_nscope - 1];
        if (t->dev == dev && t->stream == stream) {
            t->depth++;
            return MEMRA_STATUS_OK;
        }
    }
    if (tl_nscope == SCOPE_MAX)
        return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "scratch: calls nested more than %d deep", SCOPE_MAX);
    tl_scope[tl_nscope++] = (scope){.dev = dev, .stream = stream, .depth = 1};
    return MEMRA_STATUS_OK;
}

static void block_free_now(memra_device *dev, memra__scratch_block *b)
{
    if (b->ptr == 0) return;
    if (dev->is_host) free((void *)(uintptr_t)b->ptr);
    else if (b->async) dev->cu_free_async(b->ptr, NULL);
    else memra__driver_get()->cuMemFree(b->ptr);
    b->ptr = 0;
    b->size = 0;
}

static int event_done(memra_device *dev, memra__arena *a)
{
    if (dev->is_host || !a->recorded) return 1;
    if (dev->cu_event_query == NULL) return 0; /* cannot tell: never shared across streams */
    return dev->cu_event_query(a->event) == MEMRA__CUDA_SUCCESS;
}

/* Free the blocks retired from a (their last reader completed). dev entered. */
static void retired_free(memra_device *dev, memra__arena *a)
{
    for (int i = 0; i < a->n_retired; i++) block_free_now(dev, &a->retired[i]);
    a->n_retired = 0;
}

static memra_status arena_new(memra_device *dev, memra__arena **out)
{
    memra__arena *a = calloc(1, sizeof *a);
    if (a == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "scratch: out of memory for an arena");
    if (!dev->is_host) {
        CUresult r = memra__driver_get()->cuEventCreate(&a->event, CU_EVENT_DISABLE_TIMING);
        if (r != MEMRA__CUDA_SUCCESS) {
            free(a);
            return MEMRA__CU_FAIL(memra__driver_get(), r, "cuEventCreate (scratch arena)");
        }
    }
    a->next = dev->arenas;
    dev->arenas = a;
    dev->n_arenas++;
    *out = a;
    return MEMRA_STATUS_OK;
}

static int stream_capturing(memra_device *dev, memra_stream_t stream)
{
    const memra__driver *drv = memra__driver_get();
    if (dev->is_host || drv->cuStreamIsCapturing == NULL) return 0;
    int status = 0;
    if (drv->cuStreamIsCapturing((CUstream)stream, &status) != MEMRA__CUDA_SUCCESS) return 0;
    return status != 0;
}

static memra_status reserve_hint(memra_device *dev, const char *what)
{
    return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED,
                       "scratch on %s: %s while the stream is captured into a CUDA graph, which allocates nothing: "
                       "call memra_stream_reserve(dev, stream, weights, n, m_max) before the capture",
                       dev->label, what);
}

/* Take an arena for the scope (dev entered). */
static memra_status arena_take(scope *s)
{
    memra_device *dev = s->dev;
    s->capturing = stream_capturing(dev, s->stream);
    memra_status st = MEMRA_STATUS_OK;
    memra__arena *pick = NULL;
    pthread_mutex_lock(&dev->scratch_lock);
    for (memra__arena *a = dev->arenas; a != NULL && pick == NULL; a = a->next)
        if (!a->in_use && a->pinned && a->stream == s->stream && !dev->is_host) pick = a;
    if (pick == NULL && s->capturing) {
        for (memra__arena *a = dev->arenas; a != NULL && pick == NULL; a = a->next)
            if (!a->in_use && !a->pinned && a->stream == s->stream && a->recorded) pick = a;
        if (pick != NULL) pick->pinned = 1;
        else st = reserve_hint(dev, "no arena reserved for this stream");
    }
    if (pick == NULL && st == MEMRA_STATUS_OK) {
        for (memra__arena *a = dev->arenas; a != NULL && pick == NULL; a = a->next)
            if (!a->in_use && !a->pinned && (dev->is_host || a->stream == s->stream)) pick = a;
        for (memra__arena *a = dev->arenas; a != NULL && pick == NULL; a = a->next)
            if (!a->in_use && !a->pinned && event_done(dev, a)) pick = a;
        if (pick == NULL) st = arena_new(dev, &pick);
    }
    if (st == MEMRA_STATUS_OK) {
        pick->in_use = 1;
        if (s->capturing) pick->captured = 1;
        if (pick->n_retired > 0 && !pick->captured && event_done(dev, pick)) retired_free(dev, pick);
        pick->stream = s->stream;
        s->arena = pick;
    }
    pthread_mutex_unlock(&dev->scratch_lock);
    return st;
}

memra_stream_t memra__scope_stream(const memra_device *dev)
{
    for (int i = tl_nscope - 1; i >= 0; i--)
        if (tl_scope[i].dev == dev) return tl_scope[i].stream;
    return NULL;
}

void memra__scope_end(void)
{
    if (tl_nscope == 0) return;
    scope *s = &tl_scope[tl_nscope - 1];
    if (--s->depth > 0) return;
    memra__arena *a = s->arena;
    memra_device *dev = s->dev;
    if (a != NULL) {
        if (!dev->is_host && !s->capturing && memra__device_enter(dev) == MEMRA_STATUS_OK) {
            CUresult r = memra__driver_get()->cuEventRecord(a->event, (CUstream)s->stream);
            a->recorded = (r == MEMRA__CUDA_SUCCESS);
            if (r != MEMRA__CUDA_SUCCESS) {
                /* Without an event the arena can only go back to this stream. */
                memra__log(MEMRA_LOG_WARN, "scratch", "cuEventRecord: %s: arena kept for its stream",
                           memra__driver_errstr(memra__driver_get(), r));
                a->pinned = 1;
            }
            memra__device_leave(dev);
        }
        pthread_mutex_lock(&dev->scratch_lock);
        a->in_use = 0;
        pthread_mutex_unlock(&dev->scratch_lock);
    }
    tl_nscope--;
}

static memra_status scratch_get(memra_device *dev, memra_stream_t stream, const char *name, size_t bytes, int zeroed,
                                memra_dptr *out)
{
    if (dev->is_host) stream = NULL;
    if (name == NULL || name[0] == '\0' || out == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "scratch: no name or no out pointer");
    if (bytes > SIZE_MAX / 2)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "scratch '%s': %zu bytes is out of range", name, bytes);
    if (tl_nscope == 0 || tl_scope[tl_nscope - 1].dev != dev || tl_scope[tl_nscope - 1].stream != stream)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "scratch '%s': asked outside an op of this device and stream (only an op may ask)", name);
    scope *s = &tl_scope[tl_nscope - 1];
    char key[sizeof s->arena->blocks[0].key];
    int kn = snprintf(key, sizeof key, "%s/%s", tl_module, name);
    if (kn < 0 || (size_t)kn >= sizeof key)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "scratch '%s/%s': name longer than %zu bytes", tl_module,
                           name, sizeof key - 1);
    memra_status st = memra__device_enter(dev);
    if (st != MEMRA_STATUS_OK) return st;
    if (s->arena == NULL) st = arena_take(s);
    memra__arena *a = s->arena;
    memra__scratch_block *b = NULL;
    for (int i = 0; st == MEMRA_STATUS_OK && i < a->n_blocks && b == NULL; i++)
        if (strcmp(a->blocks[i].key, key) == 0) b = &a->blocks[i];
    if (st == MEMRA_STATUS_OK && b == NULL) {
        if (a->n_blocks == MEMRA__ARENA_BLOCKS) {
            st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "scratch '%s': more than %d names in one arena", key,
                             MEMRA__ARENA_BLOCKS);
        } else {
            b = &a->blocks[a->n_blocks++];
            memset(b, 0, sizeof *b);
            snprintf(b->key, sizeof b->key, "%s", key);
        }
    }
    if (st == MEMRA_STATUS_OK && (b->size < bytes || b->ptr == 0)) {
        size_t want = bytes < 256 ? 256 : (bytes + 255) / 256 * 256;
        if (b->size > 0 && want < b->size + b->size / 2) want = (b->size + b->size / 2 + 255) / 256 * 256;
        if (s->capturing) {
            char what[160];
            snprintf(what, sizeof what, "'%s' needs %zu bytes, %zu reserved", key, bytes, b->size);
            st = reserve_hint(dev, what);
        } else if (dev->is_host) {
            void *p = aligned_alloc(256, want);
            if (p == NULL) st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "scratch '%s': %zu bytes", key, want);
            else {
                block_free_now(dev, b);
                b->ptr = (memra_dptr)(uintptr_t)p;
                b->size = want;
            }
        } else {
            const memra__driver *drv = memra__driver_get();
            CUdeviceptr p = 0;
            int async = dev->cu_alloc_async != NULL;
            CUresult r = async ? dev->cu_alloc_async(&p, want, (CUstream)s->stream)
                               : drv->cuMemAlloc(&p, want);
            if (r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */) {
                /* out of memory only when the driver says so (a caller may have a way without this
                 * scratch: the floor's route to gemm_f16 falls back to the floor) */
                st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "%s of %zu bytes for scratch '%s' on %s: %s",
                                 async ? "cuMemAllocAsync" : "cuMemAlloc", want, key, dev->label,
                                 memra__driver_errstr(drv, r));
            } else if (r != MEMRA__CUDA_SUCCESS) {
                st = MEMRA__CU_FAIL(drv, r, async ? "cuMemAllocAsync (scratch)" : "cuMemAlloc (scratch)");
            } else {
                if (b->ptr != 0) {
                    /* Earlier readers ran on this stream or have completed (the
                     * arena's rule): a stream-ordered free is safe; without
                     * one, free after the next event of the arena completes. */
                    if (a->captured) {
                        /* a graph captured from this arena may still read it */
                        if (a->n_retired < MEMRA__ARENA_BLOCKS) a->retired[a->n_retired++] = *b;
                        else memra__log(MEMRA_LOG_WARN, "scratch", "'%s': too many retired blocks; one is leaked", key);
                    } else if (b->async) {
                        dev->cu_free_async(b->ptr, (CUstream)s->stream);
                    } else if (a->n_retired < MEMRA__ARENA_BLOCKS) {
                        a->retired[a->n_retired++] = *b;
                    } else {
                        memra__log(MEMRA_LOG_WARN, "scratch", "'%s': too many retired blocks; one is leaked", key);
                    }
                }
                b->ptr = p;
                b->size = want;
                b->async = async;
            }
        }
        if (st == MEMRA_STATUS_OK) b->zeroed = 0; /* a new allocation: undefined bytes */
        if (st == MEMRA_STATUS_OK && dev->scratch_zero_new && !zeroed && !s->capturing) {
            /* test hook: a sanitizer run's evidence that a reader of this block
             * reads what a kernel the tool cannot see wrote (bench/device.sh) */
            CUresult r = dev->is_host ? MEMRA__CUDA_SUCCESS
                                      : memra__driver_get()->cuMemsetD8Async(b->ptr, 0, b->size, (CUstream)s->stream);
            if (dev->is_host) memset((void *)(uintptr_t)b->ptr, 0, b->size);
            if (r != MEMRA__CUDA_SUCCESS) st = MEMRA__CU_FAIL(memra__driver_get(), r, "cuMemsetD8Async (MEMRA_TEST_SCRATCH_ZERO)");
        }
    }
    if (st == MEMRA_STATUS_OK && zeroed && !b->zeroed) {
        if (dev->is_host) {
            memset((void *)(uintptr_t)b->ptr, 0, b->size);
            b->zeroed = 1;
        } else {
            const memra__driver *drv = memra__driver_get();
            CUresult r = drv->cuMemsetD8Async(b->ptr, 0, b->size, (CUstream)s->stream);
            if (r != MEMRA__CUDA_SUCCESS) st = MEMRA__CU_FAIL(drv, r, "cuMemsetD8Async (zeroed scratch)");
            /* captured, the fill runs at each replay, not now: the next call
             * outside the capture fills again */
            else b->zeroed = !s->capturing;
        }
    } else if (st == MEMRA_STATUS_OK && !zeroed) {
        b->zeroed = 0; /* handed out as plain scratch: whatever it holds is the caller's */
    }
    memra__device_leave(dev);
    if (st == MEMRA_STATUS_OK) *out = b->ptr;
    return st;
}

memra_status memra__scratch_get(memra_device *dev, memra_stream_t stream, const char *name, size_t bytes,
                                memra_dptr *out)
{
    return scratch_get(dev, stream, name, bytes, 0, out);
}

memra_status memra__scratch_get_zeroed(memra_device *dev, memra_stream_t stream, const char *name, size_t bytes,
                                       memra_dptr *out)
{
    return scratch_get(dev, stream, name, bytes, 1, out);
}

memra_status memra__stream_pin(memra_device *dev, memra_stream_t stream)
{
    if (dev->is_host) return MEMRA_STATUS_OK;
    memra_status st = MEMRA_STATUS_OK;
    pthread_mutex_lock(&dev->scratch_lock);
    memra__arena *pick = NULL;
    for (memra__arena *a = dev->arenas; a != NULL && pick == NULL; a = a->next)
        if (a->pinned && a->stream == stream) pick = a;
    for (memra__arena *a = dev->arenas; a != NULL && pick == NULL; a = a->next)
        if (!a->in_use && !a->pinned && a->stream == stream && a->recorded) pick = a;
    if (pick == NULL) st = arena_new(dev, &pick);
    if (st == MEMRA_STATUS_OK) {
        pick->pinned = 1;
        pick->stream = stream;
    }
    pthread_mutex_unlock(&dev->scratch_lock);
    return st;
}

void memra__device_scratch_free(memra_device *dev)
{
    memra__arena *a = dev->arenas;
    int entered = a != NULL && !dev->is_host && memra__device_enter(dev) == MEMRA_STATUS_OK;
    if (entered) memra__driver_get()->cuCtxSynchronize(); /* memra_close: not an op */
    while (a != NULL) {
        memra__arena *n = a->next;
        if (dev->is_host || entered) {
            for (int i = 0; i < a->n_blocks; i++) block_free_now(dev, &a->blocks[i]);
            retired_free(dev, a);
            if (!dev->is_host) memra__driver_get()->cuEventDestroy(a->event);
        }
        free(a);
        a = n;
    }
    if (entered) {
        memra__driver_get()->cuCtxSynchronize();
        memra__device_leave(dev);
    }
    dev->arenas = NULL;
    dev->n_arenas = 0;
}
