/* The JIT object: NVRTC compiles behind an in-memory cache (per object) and
 * the disk cache (cache.c).
 *
 * Locking: `mu` guards the entry list, the counters, the NVRTC table's
 * opening and the disk configuration. Compiles and disk reads run outside it,
 * so a long compile does not block memory hits on other threads. Two threads
 * (or processes) after the same key serialise on the key's flock when the
 * disk cache is on; otherwise both compile and the first to insert wins (its
 * image is the one every caller gets, so addresses stay stable). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jit/jit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "jit/nvrtc.h"
#include "jit/sha256.h"

/* NVRTC sees this name for every program, so the output is a function of the
 * key alone; messages name the kernel by the caller's name instead. */
#define PROGRAM_NAME "memra_jit.cu"
#define MAX_LOG_IN_ERROR 800

typedef struct jit_image {
    uint8_t key[MEMRA__JIT_KEY_BYTES];
    char *name;
    void *image;
    size_t size;
    char *ptx; /* NULL until a caller asks for PTX */
    size_t ptx_size;
    char *log;
} jit_image;

struct memra__jit {
    pthread_mutex_t mu;
    const memra__nvrtc *nv;   /* the process-wide table, NULL until opened */
    int nv_tried;             /* 1 once opening was attempted */
    memra_status nv_status;   /* result of that attempt */
    char nv_error[1024];      /* its message, replayed on later calls */
    memra__jit_disk disk;
    jit_image **images;       /* each image separately allocated: stable addresses */
    size_t n_images, cap_images;
    uint64_t hits_memory, hits_disk, compiles, corrupt_dropped;
};

const char *memra__jit_origin_str(memra__jit_origin origin)
{
    switch (origin) {
    case MEMRA__JIT_ORIGIN_MEMORY: return "memory";
    case MEMRA__JIT_ORIGIN_DISK: return "disk";
    case MEMRA__JIT_ORIGIN_NVRTC: return "nvrtc";
    }
    return "unknown";
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

memra_status memra__jit_create(memra__jit **out)
{
    if (out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_create: out is NULL");
    memra__jit *jit = calloc(1, sizeof *jit);
    if (jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra__jit_create");
    if (pthread_mutex_init(&jit->mu, NULL) != 0) {
        free(jit);
        return MEMRA__FAIL(MEMRA_STATUS_INTERNAL, "memra__jit_create: pthread_mutex_init failed");
    }
    memra__jit_disk_init(&jit->disk);
    *out = jit;
    return MEMRA_STATUS_OK;
}

static void image_free(jit_image *im)
{
    if (im == NULL) return;
    free(im->name);
    free(im->image);
    free(im->ptx);
    free(im->log);
    free(im);
}

void memra__jit_destroy(memra__jit *jit)
{
    if (jit == NULL) return;
    for (size_t i = 0; i < jit->n_images; i++) image_free(jit->images[i]);
    free(jit->images);
    pthread_mutex_destroy(&jit->mu);
    free(jit);
}

/* Called with mu held. */
static memra_status ensure_nvrtc_locked(memra__jit *jit)
{
    if (!jit->nv_tried) {
        jit->nv_tried = 1;
        jit->nv_status = memra__nvrtc_get(&jit->nv);
        if (jit->nv_status != MEMRA_STATUS_OK) {
            snprintf(jit->nv_error, sizeof jit->nv_error, "%s", memra_last_error());
            memra__log(MEMRA_LOG_WARN, "jit", "%s", jit->nv_error);
        }
    }
    if (jit->nv_status != MEMRA_STATUS_OK) return memra__set_error(jit->nv_status, "%s", jit->nv_error);
    return MEMRA_STATUS_OK;
}

memra_status memra__jit_nvrtc_version(memra__jit *jit, int *major, int *minor)
{
    if (jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_nvrtc_version: jit is NULL");
    pthread_mutex_lock(&jit->mu);
    memra_status st = ensure_nvrtc_locked(jit);
    if (st == MEMRA_STATUS_OK) {
        if (major != NULL) *major = jit->nv->major;
        if (minor != NULL) *minor = jit->nv->minor;
    }
    pthread_mutex_unlock(&jit->mu);
    return st;
}

/* ---- the key --------------------------------------------------------------- */

static void hash_u32(memra__sha256_ctx *h, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    memra__sha256_update(h, b, sizeof b);
}

/* Length (u64 little-endian) then bytes: no two field lists hash the same. */
static void hash_str(memra__sha256_ctx *h, const char *s)
{
    uint64_t n = strlen(s);
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(n >> (8 * i));
    memra__sha256_update(h, b, sizeof b);
    memra__sha256_update(h, s, (size_t)n);
}

void memra__jit_key(const char *target, int nvrtc_major, int nvrtc_minor, const char *const *options, int n_options,
                    const char *source, uint8_t out[MEMRA__JIT_KEY_BYTES])
{
    memra__sha256_ctx h;
    memra__sha256_init(&h);
    hash_str(&h, "memra-jit-key");
    hash_u32(&h, MEMRA__JIT_FORMAT_VERSION);
    hash_str(&h, target);
    hash_u32(&h, (uint32_t)nvrtc_major);
    hash_u32(&h, (uint32_t)nvrtc_minor);
    hash_u32(&h, (uint32_t)(n_options > 0 ? n_options : 0));
    for (int i = 0; i < n_options; i++) hash_str(&h, options[i]);
    hash_str(&h, source);
    memra__sha256_final(&h, out);
}

/* ---- the in-memory cache ---------------------------------------------------- */

/* Called with mu held. */
static jit_image *find_locked(memra__jit *jit, const uint8_t key[MEMRA__JIT_KEY_BYTES])
{
    for (size_t i = 0; i < jit->n_images; i++)
        if (memcmp(jit->images[i]->key, key, MEMRA__JIT_KEY_BYTES) == 0) return jit->images[i];
    return NULL;
}

/* Insert `im` (ownership passes in) unless the key is there already, in which
 * case the existing image wins (its address may be in use) and takes the PTX
 * if it lacked it. Returns the image that is now in the cache, or NULL when
 * out of memory (im freed). Called with mu held. */
static jit_image *insert_locked(memra__jit *jit, jit_image *im)
{
    jit_image *old = find_locked(jit, im->key);
    if (old != NULL) {
        if (old->ptx == NULL && im->ptx != NULL) {
            old->ptx = im->ptx;
            old->ptx_size = im->ptx_size;
            im->ptx = NULL;
        }
        image_free(im);
        return old;
    }
    if (jit->n_images == jit->cap_images) {
        size_t ncap = jit->cap_images ? 2 * jit->cap_images : 16;
        jit_image **grown = realloc(jit->images, ncap * sizeof *grown);
        if (grown == NULL) {
            image_free(im);
            return NULL;
        }
        jit->images = grown;
        jit->cap_images = ncap;
    }
    jit->images[jit->n_images++] = im;
    return im;
}

static void fill_result(memra__jit_result *out, const jit_image *im, memra__jit_origin origin, double t0)
{
    out->image = im->image;
    out->size = im->size;
    out->ptx = im->ptx;
    out->ptx_size = im->ptx_size;
    out->log = im->log != NULL ? im->log : "";
    out->origin = origin;
    out->ms = now_ms() - t0;
    memcpy(out->key, im->key, MEMRA__JIT_KEY_BYTES);
}

/* ---- NVRTC ------------------------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

/* Compile into a new jit_image (key and name left for the caller). */
static memra_status nvrtc_compile(const memra__nvrtc *nv, const char *name, const char *source,
                                  const char *const *options, int n_options, const char *target, int want_ptx,
                                  jit_image **out)
{
    memra_status st = MEMRA_STATUS_OK;
    const char **argv = malloc(((size_t)n_options + 1) * sizeof *argv);
    char arch[32];
    jit_image *im = calloc(1, sizeof *im);
    nvrtcProgram prog = NULL;
    if (argv == NULL || im == NULL) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "compiling %s", name);
        goto done;
    }
    snprintf(arch, sizeof arch, "-arch=%s", target);
    argv[0] = arch;
    for (int i = 0; i < n_options; i++) argv[i + 1] = options[i];

    nvrtcResult r = nv->nvrtcCreateProgram(&prog, source, PROGRAM_NAME, 0, NULL, NULL);
    if (r != MEMRA__NVRTC_SUCCESS) {
        prog = NULL;
        st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "nvrtcCreateProgram(%s): %s", name, memra__nvrtc_errstr(nv, r));
        goto done;
    }
    nvrtcResult rc = nv->nvrtcCompileProgram(prog, n_options + 1, argv);
    size_t log_size = 0;
    if (nv->nvrtcGetProgramLogSize(prog, &log_size) != MEMRA__NVRTC_SUCCESS) log_size = 0;
    im->log = malloc(log_size + 1);
    if (im->log == NULL) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "compiling %s: log of %zu bytes", name, log_size);
        goto done;
    }
    im->log[0] = '\0';
    if (log_size > 0 && nv->nvrtcGetProgramLog(prog, im->log) != MEMRA__NVRTC_SUCCESS) im->log[0] = '\0';
    im->log[log_size] = '\0';
    if (rc != MEMRA__NVRTC_SUCCESS) {
        size_t n = strlen(im->log);
        while (n > 0 && (im->log[n - 1] == '\n' || im->log[n - 1] == ' ')) im->log[--n] = '\0';
        memra__log(MEMRA_LOG_WARN, "jit", "NVRTC failed to compile %s for %s: %s\n%s", name, target,
                   memra__nvrtc_errstr(nv, rc), im->log);
        st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "NVRTC failed to compile %s for %s: %s; log:\n%.*s%s", name, target,
                         memra__nvrtc_errstr(nv, rc), MAX_LOG_IN_ERROR, im->log,
                         n > MAX_LOG_IN_ERROR ? "\n[log truncated]" : "");
        goto done;
    }
    if ((r = nv->nvrtcGetCUBINSize(prog, &im->size)) != MEMRA__NVRTC_SUCCESS || im->size == 0) {
        st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "nvrtcGetCUBINSize(%s, %s): %s (is %s a real architecture?)", name,
                         target, memra__nvrtc_errstr(nv, r), target);
        goto done;
    }
    if ((im->image = malloc(im->size)) == NULL) {
        st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "cubin of %zu bytes", im->size);
        goto done;
    }
    if ((r = nv->nvrtcGetCUBIN(prog, im->image)) != MEMRA__NVRTC_SUCCESS) {
        st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "nvrtcGetCUBIN(%s): %s", name, memra__nvrtc_errstr(nv, r));
        goto done;
    }
    if (want_ptx) {
        if ((r = nv->nvrtcGetPTXSize(prog, &im->ptx_size)) != MEMRA__NVRTC_SUCCESS || im->ptx_size == 0) {
            st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "nvrtcGetPTXSize(%s): %s", name, memra__nvrtc_errstr(nv, r));
            goto done;
        }
        if ((im->ptx = malloc(im->ptx_size)) == NULL) {
            st = MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "PTX of %zu bytes", im->ptx_size);
            goto done;
        }
        if ((r = nv->nvrtcGetPTX(prog, im->ptx)) != MEMRA__NVRTC_SUCCESS) {
            st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "nvrtcGetPTX(%s): %s", name, memra__nvrtc_errstr(nv, r));
            goto done;
        }
        im->ptx[im->ptx_size - 1] = '\0';
    }
done:
    if (prog != NULL) nv->nvrtcDestroyProgram(&prog);
    free(argv);
    if (st == MEMRA_STATUS_OK) *out = im;
    else image_free(im);
    return st;
}

/* ---- compile ------------------------------------------------------------------ */

static memra_status check_args(const char *name, const char *source, const char *const *options, int n_options,
                               const char *target, const memra__jit_result *out)
{
    if (source == NULL || out == NULL || n_options < 0 || (n_options > 0 && options == NULL))
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_compile(%s): NULL source/out/options or n_options < 0",
                           name);
    size_t tl = target != NULL ? strlen(target) : 0;
    if (tl == 0 || tl >= MEMRA__JIT_TARGET_BYTES || strspn(target, "abcdefghijklmnopqrstuvwxyz0123456789_") != tl)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                           "memra__jit_compile(%s): target \"%s\" is not an architecture name like sm_90a", name,
                           target ? target : "(null)");
    for (int i = 0; i < n_options; i++) {
        const char *o = options[i];
        if (o == NULL)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_compile(%s): option %d is NULL", name, i);
        if (strncmp(o, "-arch", 5) == 0 || strncmp(o, "--gpu-architecture", 18) == 0 || strncmp(o, "--gpu-name", 10) == 0)
            return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT,
                               "memra__jit_compile(%s): option \"%s\" sets the architecture; pass it as the target", name, o);
    }
    return MEMRA_STATUS_OK;
}

memra_status memra__jit_compile(memra__jit *jit, const char *name, const char *source, const char *const *options,
                                int n_options, const char *target, int want_ptx, memra__jit_result *out)
{
    double t0 = now_ms();
    if (name == NULL) name = "(unnamed)";
    if (jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_compile(%s): jit is NULL", name);
    memra_status st = check_args(name, source, options, n_options, target, out);
    if (st != MEMRA_STATUS_OK) return st;

    uint8_t key[MEMRA__JIT_KEY_BYTES];
    pthread_mutex_lock(&jit->mu);
    st = ensure_nvrtc_locked(jit);
    if (st != MEMRA_STATUS_OK) {
        pthread_mutex_unlock(&jit->mu);
        return st;
    }
    memra__jit_key(target, jit->nv->major, jit->nv->minor, options, n_options, source, key);
    jit_image *im = find_locked(jit, key);
    if (im != NULL && (!want_ptx || im->ptx != NULL)) {
        jit->hits_memory++;
        fill_result(out, im, MEMRA__JIT_ORIGIN_MEMORY, t0);
        pthread_mutex_unlock(&jit->mu);
        MEMRA__DEBUG("jit", "%s %s: memory, %.3f ms", name, target, out->ms);
        return MEMRA_STATUS_OK;
    }
    memra__jit_disk_prepare(&jit->disk);
    int disk_on = jit->disk.enabled;
    pthread_mutex_unlock(&jit->mu);

    memra__jit_origin origin = MEMRA__JIT_ORIGIN_NVRTC;
    jit_image *fresh = NULL;
    int lock_fd = disk_on ? memra__jit_disk_lock(&jit->disk, key) : -1;
    if (disk_on && !want_ptx) {
        /* Another thread of this process may have finished while we waited. */
        pthread_mutex_lock(&jit->mu);
        im = find_locked(jit, key);
        if (im != NULL) {
            jit->hits_memory++;
            fill_result(out, im, MEMRA__JIT_ORIGIN_MEMORY, t0);
        }
        pthread_mutex_unlock(&jit->mu);
        if (im != NULL) {
            memra__jit_disk_unlock(lock_fd);
            MEMRA__DEBUG("jit", "%s %s: memory, %.3f ms", name, target, out->ms);
            return MEMRA_STATUS_OK;
        }
        void *payload = NULL;
        size_t size = 0;
        memra_status rs = memra__jit_disk_read(&jit->disk, key, target, &payload, &size);
        if (rs == MEMRA_STATUS_OK) {
            fresh = calloc(1, sizeof *fresh);
            if (fresh == NULL) {
                free(payload);
                memra__jit_disk_unlock(lock_fd);
                return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra__jit_compile(%s)", name);
            }
            fresh->image = payload;
            fresh->size = size;
            origin = MEMRA__JIT_ORIGIN_DISK;
        } else if (rs == MEMRA_STATUS_CORRUPT) {
            pthread_mutex_lock(&jit->mu);
            jit->corrupt_dropped++;
            pthread_mutex_unlock(&jit->mu);
        } else if (rs != MEMRA_STATUS_NOT_FOUND) {
            memra__log(MEMRA_LOG_WARN, "jit", "disk cache read failed, compiling instead: %s", memra_last_error());
        }
    }
    if (fresh == NULL) {
        /* jit->nv was set under mu before the key was computed and never changes */
        st = nvrtc_compile(jit->nv, name, source, options, n_options, target, want_ptx, &fresh);
        if (st != MEMRA_STATUS_OK) {
            memra__jit_disk_unlock(lock_fd);
            return st;
        }
        if (disk_on) {
            if (memra__jit_disk_write(&jit->disk, key, target, fresh->image, fresh->size) != MEMRA_STATUS_OK)
                memra__log(MEMRA_LOG_WARN, "jit", "disk cache write failed (the image is used anyway): %s",
                           memra_last_error());
            else memra__jit_disk_evict(&jit->disk, key);
        }
    }
    memcpy(fresh->key, key, sizeof key);
    fresh->name = dup_str(name);
    if (fresh->log == NULL) fresh->log = dup_str("");
    if (fresh->name == NULL || fresh->log == NULL) {
        image_free(fresh);
        memra__jit_disk_unlock(lock_fd);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra__jit_compile(%s)", name);
    }
    pthread_mutex_lock(&jit->mu);
    im = insert_locked(jit, fresh);
    if (im != NULL) {
        if (origin == MEMRA__JIT_ORIGIN_DISK) jit->hits_disk++;
        else jit->compiles++;
        fill_result(out, im, origin, t0);
    }
    pthread_mutex_unlock(&jit->mu);
    /* Released after the insert, so a thread of this process that waited on
     * the lock finds the image in memory rather than reading the disk. */
    memra__jit_disk_unlock(lock_fd);
    if (im == NULL) return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "memra__jit_compile(%s)", name);
    char hex[2 * MEMRA__JIT_KEY_BYTES + 1];
    memra__hex(key, sizeof key, hex);
    memra__log(MEMRA_LOG_INFO, "jit", "%s %s: %s, %.1f ms, %zu bytes, key %.16s", name, target,
               memra__jit_origin_str(origin), out->ms, out->size, hex);
    return MEMRA_STATUS_OK;
}

/* ---- cache administration ------------------------------------------------------- */

const char *memra__jit_cache_dir(const memra__jit *jit)
{
    return jit != NULL && jit->disk.root[0] != '\0' ? jit->disk.root : NULL;
}

memra_status memra__jit_stats(memra__jit *jit, memra__jit_cache_stats *out)
{
    if (jit == NULL || out == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_stats: NULL argument");
    memra__jit_cache_stats s;
    memset(&s, 0, sizeof s);
    pthread_mutex_lock(&jit->mu);
    char why[8];
    s.disk_enabled = jit->disk.enabled && memra__jit_disk_status(&jit->disk, why, sizeof why);
    s.folder = jit->disk.dir;
    s.disk_max_bytes = jit->disk.max_bytes;
    s.memory_entries = jit->n_images;
    for (size_t i = 0; i < jit->n_images; i++) s.memory_bytes += jit->images[i]->size;
    s.hits_memory = jit->hits_memory;
    s.hits_disk = jit->hits_disk;
    s.compiles = jit->compiles;
    s.corrupt_dropped = jit->corrupt_dropped;
    pthread_mutex_unlock(&jit->mu);
    memra__jit_disk_usage(&jit->disk, &s.disk_entries, &s.disk_bytes);
    *out = s;
    return MEMRA_STATUS_OK;
}

void memra__jit_disk_why(memra__jit *jit, char *buf, size_t len)
{
    pthread_mutex_lock(&jit->mu);
    memra__jit_disk_status(&jit->disk, buf, len);
    pthread_mutex_unlock(&jit->mu);
}

memra_status memra__jit_list(memra__jit *jit, memra__jit_entry **out, size_t *count)
{
    if (jit == NULL || out == NULL || count == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_list: NULL argument");
    return memra__jit_disk_list(&jit->disk, out, count);
}

memra_status memra__jit_clear(memra__jit *jit, size_t *out_removed)
{
    if (jit == NULL) return MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra__jit_clear: jit is NULL");
    pthread_mutex_lock(&jit->mu);
    memra_status st = memra__jit_disk_clear(&jit->disk, out_removed);
    jit->disk.prepared = 0; /* the version folder is gone: create it again at the next write */
    pthread_mutex_unlock(&jit->mu);
    return st;
}
