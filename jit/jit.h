/* The JIT service: NVRTC (opened with dlopen) behind an in-memory and an
 * on-disk cache of cubins. Private to libmemra; the core and the `memra`
 * program reach it through exported wrappers.
 *
 *   memra__jit *jit;
 *   if (memra__jit_create(&jit) != MEMRA_STATUS_OK) ...;      // never needs NVRTC
 *   const char *opts[] = {"-std=c++17"};
 *   memra__jit_result r;
 *   memra_status st = memra__jit_compile(jit, "gemm_fp8", src, opts, 1, "sm_120a", 0, &r);
 *   if (st != MEMRA_STATUS_OK) fprintf(stderr, "%s\n", memra_last_error()); // has the NVRTC log
 *   CUmodule mod;
 *   memra__jit_load(drv, ctx, r.image, r.size, &mod);        // r.image lives until destroy
 *   ...
 *   memra__jit_destroy(jit);
 *
 * The key of a compile is SHA-256 over the cache format version, the exact
 * target string, the NVRTC version (major.minor), the ordered options (each
 * with its length) and the source (memra__jit_key). Never compiler output,
 * never a time. Sources are self-contained: no include folders.
 *
 * Environment (read at create): MEMRA_CACHE_DIR (default
 * $XDG_CACHE_HOME/memra, else $HOME/.cache/memra); MEMRA_JIT_CACHE=0 turns
 * the disk cache off; MEMRA_JIT_CACHE_MAX_MB (default 512, fractions allowed,
 * 0 = no cap) bounds it by least-recently-used eviction;
 * MEMRA_NVRTC_LIBRARY names the NVRTC library to open (only that one).
 *
 * Disk problems never fail a compile: an unusable folder turns the disk cache
 * off with a warning, a failed write is a warning, a corrupt entry is dropped
 * and rebuilt. */
#ifndef MEMRA_JIT_JIT_H
#define MEMRA_JIT_JIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/driver.h"
#include "jit/cache.h"
#include "memra/status.h"

typedef struct memra__jit memra__jit;

typedef enum memra__jit_origin {
    MEMRA__JIT_ORIGIN_MEMORY = 0, /* this jit object compiled or read it before */
    MEMRA__JIT_ORIGIN_DISK = 1,   /* a verified disk cache entry */
    MEMRA__JIT_ORIGIN_NVRTC = 2,  /* compiled by this call */
} memra__jit_origin;

/* "memory", "disk", "nvrtc". */
const char *memra__jit_origin_str(memra__jit_origin origin);

typedef struct memra__jit_result {
    const void *image;  /* the cubin; owned by the jit object, valid until destroy */
    size_t size;
    const char *ptx;    /* NUL-terminated PTX when want_ptx, else NULL; owned likewise */
    size_t ptx_size;    /* bytes including the NUL */
    const char *log;    /* NVRTC's log of the compile that made the image ("" when none
                         * or when it came from disk); owned likewise */
    memra__jit_origin origin;
    double ms;          /* wall time of this call */
    uint8_t key[MEMRA__JIT_KEY_BYTES];
} memra__jit_result;

/* A new JIT object. Reads the environment; opens nothing (NVRTC is opened at
 * the first compile) and creates no folder (created at the first write).
 * Returns OK or OUT_OF_MEMORY / INTERNAL. *out is set only on success. */
memra_status memra__jit_create(memra__jit **out);
/* Frees every image the object returned. Accepts NULL. Not to be called while
 * another thread uses the object. */
void memra__jit_destroy(memra__jit *jit);

/* Opens NVRTC if not yet open and reports its version. OK, or NOT_SUPPORTED
 * (no library: the message names every candidate tried) / NVRTC_ERROR.
 * A failure is remembered: later calls fail the same way without retrying.
 * Thread-safe. */
memra_status memra__jit_nvrtc_version(memra__jit *jit, int *major, int *minor);

/* Compile `source` for `target` ("sm_90a", "sm_120a", any sm_XY[a|f]; passed
 * to NVRTC as -arch=<target>) with `options` (n_options strings, in order;
 * options may not set the architecture), or fetch the image from memory or
 * disk. want_ptx also returns the PTX (always from NVRTC or memory: the disk
 * keeps only cubins). `name` names the kernel in logs and messages (may be
 * NULL). Logs the name, target, origin and milliseconds (info level; memory
 * hits at debug level). Thread-safe.
 * Returns OK and fills *out; INVALID_ARGUMENT; NOT_SUPPORTED / NVRTC_ERROR
 * when NVRTC is missing; NVRTC_ERROR when the compile fails, with NVRTC's
 * result and log in memra_last_error() (the log is also logged at warn level);
 * OUT_OF_MEMORY. */
memra_status memra__jit_compile(memra__jit *jit, const char *name, const char *source, const char *const *options,
                                int n_options, const char *target, int want_ptx, memra__jit_result *out);

/* The cache key (see the top of this file). Pure; thread-safe. */
void memra__jit_key(const char *target, int nvrtc_major, int nvrtc_minor, const char *const *options, int n_options,
                    const char *source, uint8_t out[MEMRA__JIT_KEY_BYTES]);

/* The cache root (MEMRA_CACHE_DIR or its default), NULL when there is none.
 * Owned by the jit object. Entries live in <root>/v<FORMAT_VERSION>/. */
const char *memra__jit_cache_dir(const memra__jit *jit);

typedef struct memra__jit_cache_stats {
    int disk_enabled;          /* 0: MEMRA_JIT_CACHE=0 or the folder is unusable */
    const char *folder;        /* <root>/v<N>, "" when none; owned by the jit object */
    size_t disk_entries;
    uint64_t disk_bytes;       /* file sizes, headers included */
    uint64_t disk_max_bytes;   /* 0 = no cap */
    size_t memory_entries;
    uint64_t memory_bytes;
    uint64_t hits_memory, hits_disk, compiles; /* this object's calls by origin */
    uint64_t corrupt_dropped;  /* disk entries that failed a check */
} memra__jit_cache_stats;

/* "ok ..." or why the disk cache is off or unusable now (a fresh check of
 * both folders; creates nothing). Thread-safe. */
void memra__jit_disk_why(memra__jit *jit, char *buf, size_t len);
/* Counters and the disk folder's entry count and size. Thread-safe. */
memra_status memra__jit_stats(memra__jit *jit, memra__jit_cache_stats *out);
/* Disk entries (memra__jit_entry, jit/cache.h) in a malloc'd array the caller
 * frees with free(); *out NULL and *count 0 when there are none. Thread-safe. */
memra_status memra__jit_list(memra__jit *jit, memra__jit_entry **out, size_t *count);
/* Remove every disk entry (all format versions). Images already returned stay
 * valid: the in-memory cache is not touched. Thread-safe. */
memra_status memra__jit_clear(memra__jit *jit, size_t *out_removed);

/* ---- loading (jit/load.c) -------------------------------------------------- */

/* Load an image (cubin, fatbin or PTX) into `ctx`: pushes ctx,
 * cuModuleLoadData, pops. DRIVER_ERROR with the driver's error text,
 * INVALID_ARGUMENT. *out set only on success. Thread-safe. */
memra_status memra__jit_load(const memra__driver *drv, CUcontext ctx, const void *image, size_t size, CUmodule *out);

/* A per-device map image -> CUmodule so each image is loaded once per device
 * (JIT images and images a module embedded ahead of time alike). Keyed by the
 * image's address and size: the image must stay at that address while the
 * map lives (true for JIT results and for images in a loaded module). */
typedef struct memra__jit_modmap memra__jit_modmap;
memra_status memra__jit_modmap_create(memra__jit_modmap **out);
/* The module for `image` in ctx, loading it the first time. Thread-safe. */
memra_status memra__jit_modmap_get(memra__jit_modmap *map, const memra__driver *drv, CUcontext ctx, const void *image,
                                   size_t size, CUmodule *out);
/* Unload every module (with ctx current) and free the map. Accepts NULL. */
void memra__jit_modmap_destroy(memra__jit_modmap *map, const memra__driver *drv, CUcontext ctx);

#endif
