/* The JIT's on-disk cache: one folder per cache format version, one file per
 * key, every file self-describing and checked before use. Layout and entry
 * format: jit/README.md and the comment at the top of cache.c.
 *
 * These functions are called by jit.c; they hold no lock of their own. The
 * configuration (memra__jit_disk) is written by init/prepare and only read
 * afterwards, so several threads may read and write entries at once: writes
 * are atomic renames and readers verify what they read. */
#ifndef MEMRA_JIT_CACHE_H
#define MEMRA_JIT_CACHE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "memra/status.h"

#define MEMRA__JIT_FORMAT_VERSION 1u
#define MEMRA__JIT_KEY_BYTES 32
#define MEMRA__JIT_TARGET_BYTES 16 /* target string field, NUL padded: at most 15 chars */
#define MEMRA__JIT_MAGIC "MEMRAJIT"
#define MEMRA__JIT_HEADER_BYTES 104u
#define MEMRA__JIT_DEFAULT_MAX_MB 512

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct memra__jit_disk {
    int enabled;          /* 0: MEMRA_JIT_CACHE=0, no home, or the folder is unusable */
    int prepared;         /* prepare ran (the folder exists and was checked) */
    uint64_t max_bytes;   /* LRU cap on the sum of entry file sizes; 0 = no cap */
    char root[PATH_MAX];  /* MEMRA_CACHE_DIR, $XDG_CACHE_HOME/memra or $HOME/.cache/memra */
    char dir[PATH_MAX];   /* root/v<FORMAT_VERSION> */
    char why[512];        /* why prepare turned the disk cache off, "" otherwise */
} memra__jit_disk;

/* One entry as `memra jit ls` shows it. */
typedef struct memra__jit_entry {
    char key_hex[2 * MEMRA__JIT_KEY_BYTES + 1];
    char target[MEMRA__JIT_TARGET_BYTES];
    uint64_t file_bytes; /* header + payload */
    int64_t age_s;       /* seconds since it was written */
    int64_t idle_s;      /* seconds since it was last used (access time) */
    int header_ok;       /* the header checks pass (the payload is not hashed here) */
} memra__jit_entry;

/* Read the environment (MEMRA_JIT_CACHE, MEMRA_CACHE_DIR, XDG_CACHE_HOME,
 * HOME, MEMRA_JIT_CACHE_MAX_MB). Never fails: a problem disables the disk
 * cache with a warning. Creates nothing. */
void memra__jit_disk_init(memra__jit_disk *d);
/* Create root and dir as needed (0700) and check both are folders we own that
 * others cannot write, and that we can write dir; otherwise warn, record the
 * reason and disable. Idempotent. Every read, write, listing, eviction and
 * clear checks both folders again when it opens them (by descriptor, the
 * version folder with O_NOFOLLOW): a folder made unsafe later is refused. */
void memra__jit_disk_prepare(memra__jit_disk *d);
/* 1 when the disk cache is usable now (a fresh check of both folders), else
 * 0; why receives "ok..." or the reason ("<root> is writable by others ..."). */
int memra__jit_disk_status(const memra__jit_disk *d, char *why, size_t why_len);

/* Fill the 104-byte header for a payload. */
void memra__jit_entry_header(uint8_t hdr[MEMRA__JIT_HEADER_BYTES], const uint8_t key[MEMRA__JIT_KEY_BYTES],
                             const char *target, const void *payload, uint64_t size);
/* Check a whole entry file's bytes against the expected key and target.
 * Returns NULL when every check passes, else a static reason. */
const char *memra__jit_entry_check(const uint8_t *file, size_t file_size, const uint8_t key[MEMRA__JIT_KEY_BYTES],
                                   const char *target);

/* Path of the entry (or, with ext "lock", its lock file) for a key. */
void memra__jit_disk_path(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *ext,
                          char out[PATH_MAX]);

/* Read and verify an entry. OK: *out is a malloc'd payload (caller frees) and
 * the entry's access time is set to now. NOT_FOUND: no entry. CORRUPT: the
 * entry failed a check; it was removed and the reason logged at warn level.
 * IO_ERROR: it could not be read (left in place). */
memra_status memra__jit_disk_read(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *target,
                                  void **out, size_t *out_size);
/* Write an entry: temporary file in the folder, write, fsync, rename. On
 * failure returns IO_ERROR with memra_last_error set; nothing half-written is
 * left under the entry's name. */
memra_status memra__jit_disk_write(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *target,
                                   const void *payload, size_t size);
/* Advisory per-key lock (flock on <hex>.lock); blocks. Returns an fd, or -1
 * when the lock cannot be taken (the caller goes on without it). */
int memra__jit_disk_lock(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES]);
void memra__jit_disk_unlock(int fd);
/* Remove the least recently used entries until the total is within the cap,
 * never the entry `keep` (may be NULL). Also removes temporary files older
 * than an hour (left by a process that died mid-write). */
void memra__jit_disk_evict(const memra__jit_disk *d, const uint8_t *keep);

/* Entries, malloc'd array (caller frees); *count 0 and *out NULL when none. */
memra_status memra__jit_disk_list(const memra__jit_disk *d, memra__jit_entry **out, size_t *count);
/* Remove every entry, lock and temporary file of every version folder. */
memra_status memra__jit_disk_clear(const memra__jit_disk *d, size_t *out_removed);
/* Entry count and the sum of their file sizes. */
void memra__jit_disk_usage(const memra__jit_disk *d, size_t *entries, uint64_t *bytes);

#endif
