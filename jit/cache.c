/* The JIT's on-disk cache.
 *
 * Layout:
 *   <root>/                     MEMRA_CACHE_DIR, else $XDG_CACHE_HOME/memra,
 *                               else $HOME/.cache/memra (created 0700)
 *   <root>/v<N>/                N = MEMRA__JIT_FORMAT_VERSION (created 0700)
 *   <root>/v<N>/<hex key>.cubin an entry
 *   <root>/v<N>/<hex key>.lock  its advisory lock (flock), empty
 *   <root>/v<N>/<hex key>.tmp.* a write in progress (or left by a crash)
 *
 * Entry format, all integers little-endian:
 *   off  size  field
 *     0     8  magic "MEMRAJIT"
 *     8     4  u32 format version (1)
 *    12     4  u32 header size (104); the payload starts here
 *    16    16  target string ("sm_90a"), NUL padded, at most 15 characters
 *    32    32  key: SHA-256 over the key fields (jit.c, memra__jit_key)
 *    64     8  u64 payload size
 *    72    32  SHA-256 of the payload
 *   104     -  payload: the cubin
 *
 * A reader checks every field (magic, version, header size, target, key,
 * payload size against the file size, payload checksum) before the bytes go
 * anywhere; an entry that fails is logged, removed and treated as absent.
 * Writers go through a temporary file, fsync and rename, so a reader sees a
 * whole old entry, a whole new one, or none. The per-key flock only saves
 * duplicate compiles; nothing depends on it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jit/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/error.h"
#include "jit/sha256.h"

#define KEY_HEX_LEN (2 * MEMRA__JIT_KEY_BYTES)
#define MAX_ENTRY_BYTES ((uint64_t)1 << 30) /* larger files are not cubins we wrote */
#define STALE_TMP_S 3600

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* snprintf into a path buffer through vsnprintf; -1 when it does not fit.
 * Roots are limited to PATH_MAX - 128 so the names memra adds always fit. */
static int fmt_path(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fmt_path(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- configuration --------------------------------------------------------- */

void memra__jit_disk_init(memra__jit_disk *d)
{
    memset(d, 0, sizeof *d);
    d->max_bytes = (uint64_t)MEMRA__JIT_DEFAULT_MAX_MB << 20;

    const char *dir = memra__env("MEMRA_CACHE_DIR");
    const char *xdg = memra__env("XDG_CACHE_HOME");
    const char *home = memra__env("HOME");
    int n;
    if (dir != NULL && dir[0] != '\0') n = snprintf(d->root, sizeof d->root, "%s", dir);
    else if (xdg != NULL && xdg[0] == '/') n = snprintf(d->root, sizeof d->root, "%s/memra", xdg); /* XDG: relative ignored */
    else if (home != NULL && home[0] != '\0') n = snprintf(d->root, sizeof d->root, "%s/.cache/memra", home);
    else {
        memra__log(MEMRA_LOG_WARN, "jit", "disk cache off: no MEMRA_CACHE_DIR, XDG_CACHE_HOME or HOME");
        return;
    }
    if (n < 0 || (size_t)n >= sizeof d->root - 128) {
        memra__log(MEMRA_LOG_WARN, "jit", "disk cache off: cache folder path too long");
        d->root[0] = '\0';
        return;
    }
    fmt_path(d->dir, sizeof d->dir, "%s/v%u", d->root, MEMRA__JIT_FORMAT_VERSION);

    const char *cap = memra__env("MEMRA_JIT_CACHE_MAX_MB");
    if (cap != NULL && cap[0] != '\0') {
        char *end = NULL;
        double mb = strtod(cap, &end);
        if (end == cap || *end != '\0' || !(mb >= 0.0) || mb > 1e9)
            memra__log(MEMRA_LOG_WARN, "jit", "MEMRA_JIT_CACHE_MAX_MB=%s is not a size in MB; using %d", cap,
                       MEMRA__JIT_DEFAULT_MAX_MB);
        else d->max_bytes = (uint64_t)(mb * 1048576.0);
    }

    const char *flag = memra__env("MEMRA_JIT_CACHE");
    if (flag != NULL && strcmp(flag, "0") == 0) {
        MEMRA__DEBUG("jit", "disk cache off: MEMRA_JIT_CACHE=0");
        return;
    }
    d->enabled = 1;
}

/* mkdir one level with mode 0700 exactly (umask may only narrow it). */
static int make_dir(const char *path, char *why, size_t why_len)
{
    if (mkdir(path, 0700) == 0) {
        if (chmod(path, 0700) != 0) {
            snprintf(why, why_len, "chmod %s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (errno == EEXIST) {
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
        snprintf(why, why_len, "%s exists and is not a folder", path);
        return -1;
    }
    snprintf(why, why_len, "mkdir %s: %s", path, strerror(errno));
    return -1;
}

static int make_dirs(const char *path, char *why, size_t why_len)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/') continue;
        *p = '\0';
        struct stat st;
        if (stat(buf, &st) != 0 && make_dir(buf, why, why_len) != 0) return -1;
        *p = '/';
    }
    return make_dir(buf, why, why_len);
}

void memra__jit_disk_prepare(memra__jit_disk *d)
{
    if (!d->enabled || d->prepared) return;
    d->prepared = 1;
    char why[PATH_MAX + 128] = "";
    struct stat st;
    if (make_dirs(d->root, why, sizeof why) == 0 && make_dir(d->dir, why, sizeof why) == 0) {
        if (lstat(d->dir, &st) != 0) snprintf(why, sizeof why, "stat %s: %s", d->dir, strerror(errno));
        else if (!S_ISDIR(st.st_mode)) snprintf(why, sizeof why, "%s is not a folder", d->dir);
        else if (st.st_uid != geteuid()) snprintf(why, sizeof why, "%s belongs to another user", d->dir);
        else if ((st.st_mode & 022) != 0) snprintf(why, sizeof why, "%s is writable by others (mode %03o)", d->dir, (unsigned)(st.st_mode & 0777));
        else if (access(d->dir, W_OK | X_OK) != 0) snprintf(why, sizeof why, "%s is not writable: %s", d->dir, strerror(errno));
        else return;
    }
    memra__log(MEMRA_LOG_WARN, "jit", "disk cache off: %s", why);
    d->enabled = 0;
}

/* ---- entry format ---------------------------------------------------------- */

void memra__jit_entry_header(uint8_t hdr[MEMRA__JIT_HEADER_BYTES], const uint8_t key[MEMRA__JIT_KEY_BYTES],
                             const char *target, const void *payload, uint64_t size)
{
    memset(hdr, 0, MEMRA__JIT_HEADER_BYTES);
    memcpy(hdr, MEMRA__JIT_MAGIC, 8);
    put_u32(hdr + 8, MEMRA__JIT_FORMAT_VERSION);
    put_u32(hdr + 12, MEMRA__JIT_HEADER_BYTES);
    size_t tl = strlen(target);
    memcpy(hdr + 16, target, tl < MEMRA__JIT_TARGET_BYTES - 1 ? tl : MEMRA__JIT_TARGET_BYTES - 1);
    memcpy(hdr + 32, key, MEMRA__JIT_KEY_BYTES);
    put_u64(hdr + 64, size);
    memra__sha256(payload, (size_t)size, hdr + 72);
}

/* The header checks; target NULL skips the target comparison (listing). */
static const char *header_check(const uint8_t *hdr, uint64_t file_size, const uint8_t key[MEMRA__JIT_KEY_BYTES],
                                const char *target)
{
    if (file_size < MEMRA__JIT_HEADER_BYTES) return "truncated: shorter than the header";
    if (memcmp(hdr, MEMRA__JIT_MAGIC, 8) != 0) return "wrong magic";
    if (get_u32(hdr + 8) != MEMRA__JIT_FORMAT_VERSION) return "other format version";
    if (get_u32(hdr + 12) != MEMRA__JIT_HEADER_BYTES) return "wrong header size";
    if (hdr[16 + MEMRA__JIT_TARGET_BYTES - 1] != 0) return "target field not NUL terminated";
    if (target != NULL) {
        char want[MEMRA__JIT_TARGET_BYTES] = {0};
        size_t tl = strlen(target);
        if (tl >= MEMRA__JIT_TARGET_BYTES) return "target too long";
        memcpy(want, target, tl);
        if (memcmp(hdr + 16, want, MEMRA__JIT_TARGET_BYTES) != 0) return "other target";
    }
    if (memcmp(hdr + 32, key, MEMRA__JIT_KEY_BYTES) != 0) return "other key";
    uint64_t n = get_u64(hdr + 64);
    if (n == 0) return "empty payload";
    if (n != file_size - MEMRA__JIT_HEADER_BYTES)
        return n > file_size - MEMRA__JIT_HEADER_BYTES ? "truncated: payload shorter than recorded" : "trailing bytes after the payload";
    return NULL;
}

const char *memra__jit_entry_check(const uint8_t *file, size_t file_size, const uint8_t key[MEMRA__JIT_KEY_BYTES],
                                   const char *target)
{
    const char *why = header_check(file, file_size, key, target);
    if (why != NULL) return why;
    uint8_t sum[MEMRA__SHA256_BYTES];
    memra__sha256(file + MEMRA__JIT_HEADER_BYTES, file_size - MEMRA__JIT_HEADER_BYTES, sum);
    if (memcmp(sum, file + 72, sizeof sum) != 0) return "payload checksum mismatch";
    return NULL;
}

/* ---- entries ---------------------------------------------------------------- */

void memra__jit_disk_path(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *ext,
                          char out[PATH_MAX])
{
    char hex[KEY_HEX_LEN + 1];
    memra__hex(key, MEMRA__JIT_KEY_BYTES, hex);
    fmt_path(out, PATH_MAX, "%s/%s.%s", d->dir, hex, ext);
}

static int read_all(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Remove `path` only if it is still the file we examined: a writer may have
 * renamed a good entry into place meanwhile. */
static void drop_entry(const char *path, const struct stat *seen, const char *why)
{
    struct stat now;
    memra__log(MEMRA_LOG_WARN, "jit", "dropping cache entry %s: %s; it will be rebuilt", path, why);
    if (lstat(path, &now) == 0 && now.st_dev == seen->st_dev && now.st_ino == seen->st_ino) unlink(path);
}

memra_status memra__jit_disk_read(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *target,
                                  void **out, size_t *out_size)
{
    char path[PATH_MAX];
    memra__jit_disk_path(d, key, "cubin", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) return MEMRA_STATUS_NOT_FOUND;
        if (errno == ELOOP) {
            memra__log(MEMRA_LOG_WARN, "jit", "dropping cache entry %s: a symbolic link; it will be rebuilt", path);
            unlink(path);
            return MEMRA_STATUS_CORRUPT;
        }
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "stat %s: %s", path, strerror(e));
    }
    const char *why = NULL;
    uint8_t *buf = NULL;
    size_t size = (size_t)st.st_size;
    if (!S_ISREG(st.st_mode)) why = "not a regular file";
    else if ((uint64_t)st.st_size < MEMRA__JIT_HEADER_BYTES) why = "truncated: shorter than the header";
    else if ((uint64_t)st.st_size > MAX_ENTRY_BYTES) why = "larger than any entry memra writes";
    else if ((buf = malloc(size)) == NULL) {
        close(fd);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "reading %s: %zu bytes", path, size);
    } else if (read_all(fd, buf, size) != 0) why = "short read (file changed or truncated while reading)";
    else why = memra__jit_entry_check(buf, size, key, target);
    if (why != NULL) {
        close(fd);
        free(buf);
        drop_entry(path, &st, why);
        return MEMRA_STATUS_CORRUPT;
    }
    /* Least-recently-used bookkeeping: access time = now, modification time kept. */
    struct timespec ts[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_OMIT}};
    futimens(fd, ts);
    close(fd);
    size_t n = size - MEMRA__JIT_HEADER_BYTES;
    memmove(buf, buf + MEMRA__JIT_HEADER_BYTES, n);
    *out = buf;
    *out_size = n;
    return MEMRA_STATUS_OK;
}

memra_status memra__jit_disk_write(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *target,
                                   const void *payload, size_t size)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    memra__jit_disk_path(d, key, "cubin", path);
    memra__jit_disk_path(d, key, "tmp.XXXXXX", tmp);
    uint8_t hdr[MEMRA__JIT_HEADER_BYTES];
    memra__jit_entry_header(hdr, key, target, payload, size);

    int fd = mkstemp(tmp);
    if (fd < 0) return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "creating a temporary file in %s: %s", d->dir, strerror(errno));
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    const char *step = "write";
    int ok = write_all(fd, hdr, sizeof hdr) == 0 && write_all(fd, payload, size) == 0;
    if (ok && !(ok = fsync(fd) == 0)) step = "fsync";
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
        step = "close";
    }
    if (ok && !(ok = rename(tmp, path) == 0)) {
        e = errno;
        step = "rename";
    }
    if (!ok) {
        unlink(tmp);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "writing cache entry %s: %s: %s", path, step, strerror(e));
    }
    /* Make the rename itself durable; best effort. */
    int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return MEMRA_STATUS_OK;
}

int memra__jit_disk_lock(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES])
{
    char path[PATH_MAX];
    memra__jit_disk_path(d, key, "lock", path);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        MEMRA__DEBUG("jit", "no lock %s: %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        MEMRA__DEBUG("jit", "flock %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void memra__jit_disk_unlock(int fd)
{
    if (fd >= 0) close(fd); /* closing the last descriptor releases the flock */
}

/* ---- scanning: eviction, listing, clearing ------------------------------- */

static int is_entry_name(const char *name, const char *ext)
{
    size_t el = strlen(ext);
    if (strlen(name) != KEY_HEX_LEN + 1 + el || name[KEY_HEX_LEN] != '.') return 0;
    for (int i = 0; i < KEY_HEX_LEN; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return strcmp(name + KEY_HEX_LEN + 1, ext) == 0;
}

static int is_tmp_name(const char *name)
{
    return strlen(name) > KEY_HEX_LEN + 5 && strncmp(name + KEY_HEX_LEN, ".tmp.", 5) == 0;
}

typedef struct lru_item {
    char name[KEY_HEX_LEN + 8];
    struct timespec atime;
    uint64_t size;
} lru_item;

static int lru_cmp(const void *pa, const void *pb)
{
    const lru_item *a = pa, *b = pb;
    if (a->atime.tv_sec != b->atime.tv_sec) return a->atime.tv_sec < b->atime.tv_sec ? -1 : 1;
    if (a->atime.tv_nsec != b->atime.tv_nsec) return a->atime.tv_nsec < b->atime.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

void memra__jit_disk_evict(const memra__jit_disk *d, const uint8_t *keep)
{
    DIR *dp = opendir(d->dir);
    if (dp == NULL) return;
    char keep_name[KEY_HEX_LEN + 8] = "";
    if (keep != NULL) {
        memra__hex(keep, MEMRA__JIT_KEY_BYTES, keep_name);
        strcat(keep_name, ".cubin");
    }
    lru_item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        struct stat st;
        if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (is_tmp_name(de->d_name)) {
            if (now - st.st_mtime > STALE_TMP_S) unlinkat(dirfd(dp), de->d_name, 0);
            continue;
        }
        if (!is_entry_name(de->d_name, "cubin")) continue;
        total += (uint64_t)st.st_size;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            lru_item *grown = realloc(items, ncap * sizeof *items);
            if (grown == NULL) break; /* evict what we have seen */
            items = grown;
            cap = ncap;
        }
        memcpy(items[n].name, de->d_name, strlen(de->d_name) + 1); /* is_entry_name: 70 chars */
        items[n].atime = st.st_atim;
        items[n].size = (uint64_t)st.st_size;
        n++;
    }
    if (d->max_bytes > 0 && total > d->max_bytes) {
        qsort(items, n, sizeof *items, lru_cmp);
        size_t removed = 0;
        uint64_t freed = 0;
        for (size_t i = 0; i < n && total > d->max_bytes; i++) {
            if (strcmp(items[i].name, keep_name) == 0) continue;
            if (unlinkat(dirfd(dp), items[i].name, 0) != 0) continue;
            char lock[KEY_HEX_LEN + 8];
            snprintf(lock, sizeof lock, "%.*s.lock", KEY_HEX_LEN, items[i].name);
            unlinkat(dirfd(dp), lock, 0);
            total -= items[i].size;
            freed += items[i].size;
            removed++;
        }
        memra__log(MEMRA_LOG_INFO, "jit", "evicted %zu least recently used entries (%llu bytes) to stay under %llu bytes",
                   removed, (unsigned long long)freed, (unsigned long long)d->max_bytes);
    }
    free(items);
    closedir(dp);
}

memra_status memra__jit_disk_list(const memra__jit_disk *d, memra__jit_entry **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    if (d->dir[0] == '\0') return MEMRA_STATUS_OK;
    DIR *dp = opendir(d->dir);
    if (dp == NULL) {
        if (errno == ENOENT) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "opendir %s: %s", d->dir, strerror(errno));
    }
    memra__jit_entry *v = NULL;
    size_t n = 0, cap = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (!is_entry_name(de->d_name, "cubin")) continue;
        int fd = openat(dirfd(dp), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        struct stat st;
        uint8_t hdr[MEMRA__JIT_HEADER_BYTES];
        int have_st = fstat(fd, &st) == 0;
        int have_hdr = have_st && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= sizeof hdr &&
                       read_all(fd, hdr, sizeof hdr) == 0;
        close(fd);
        if (!have_st) continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 32;
            memra__jit_entry *grown = realloc(v, ncap * sizeof *v);
            if (grown == NULL) {
                free(v);
                closedir(dp);
                return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "listing %s", d->dir);
            }
            v = grown;
            cap = ncap;
        }
        memra__jit_entry *e = &v[n++];
        memset(e, 0, sizeof *e);
        memcpy(e->key_hex, de->d_name, KEY_HEX_LEN);
        e->file_bytes = (uint64_t)st.st_size;
        e->age_s = (int64_t)(now - st.st_mtime);
        e->idle_s = (int64_t)(now - st.st_atime);
        if (have_hdr) {
            uint8_t key[MEMRA__JIT_KEY_BYTES];
            for (int i = 0; i < MEMRA__JIT_KEY_BYTES; i++) {
                unsigned b = 0;
                sscanf(de->d_name + 2 * i, "%2x", &b);
                key[i] = (uint8_t)b;
            }
            e->header_ok = header_check(hdr, (uint64_t)st.st_size, key, NULL) == NULL;
            if (e->header_ok) memcpy(e->target, hdr + 16, MEMRA__JIT_TARGET_BYTES);
        }
        if (!e->header_ok) snprintf(e->target, sizeof e->target, "?");
    }
    closedir(dp);
    *out = v;
    *count = n;
    return MEMRA_STATUS_OK;
}

static size_t clear_folder(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp == NULL) return 0;
    size_t removed = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        int entry = is_entry_name(de->d_name, "cubin");
        if (!entry && !is_entry_name(de->d_name, "lock") && !is_tmp_name(de->d_name)) continue;
        if (unlinkat(dirfd(dp), de->d_name, 0) == 0 && entry) removed++;
    }
    closedir(dp);
    rmdir(dir); /* fails harmlessly when something else lives there */
    return removed;
}

memra_status memra__jit_disk_clear(const memra__jit_disk *d, size_t *out_removed)
{
    size_t removed = 0;
    if (d->root[0] != '\0') {
        DIR *dp = opendir(d->root);
        if (dp == NULL && errno != ENOENT)
            return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "opendir %s: %s", d->root, strerror(errno));
        struct dirent *de;
        while (dp != NULL && (de = readdir(dp)) != NULL) {
            const char *s = de->d_name;
            if (s[0] != 'v' || s[1] == '\0' || strspn(s + 1, "0123456789") != strlen(s + 1)) continue;
            char sub[PATH_MAX];
            if (fmt_path(sub, sizeof sub, "%s/%s", d->root, s) == 0) removed += clear_folder(sub);
        }
        if (dp != NULL) closedir(dp);
    }
    if (out_removed != NULL) *out_removed = removed;
    return MEMRA_STATUS_OK;
}

void memra__jit_disk_usage(const memra__jit_disk *d, size_t *entries, uint64_t *bytes)
{
    *entries = 0;
    *bytes = 0;
    DIR *dp = d->dir[0] != '\0' ? opendir(d->dir) : NULL;
    if (dp == NULL) return;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        struct stat st;
        if (!is_entry_name(de->d_name, "cubin")) continue;
        if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        (*entries)++;
        *bytes += (uint64_t)st.st_size;
    }
    closedir(dp);
}
