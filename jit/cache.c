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
 * whole old entry, a whole new one, or none. Every operation opens the root
 * and the version folder by descriptor and checks them (ours, not writable by
 * others; see open_vdir), then works by openat/renameat/unlinkat on that
 * descriptor; entries are fstat'ed (regular, ours, not group/other-writable)
 * before a byte is read. The per-key flock only saves
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

#include "base/config.h"
#include "base/error.h"
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

/* A cache folder is trusted when it is a folder of the current user that
 * nobody else can write: whoever can write it can forge entries (the key and
 * the checksum are computed from public inputs). */
static int folder_untrusted(int fd, const char *path, char *why, size_t why_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_len, "stat %s: %s", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "%s is not a folder", path);
        return 1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(why, why_len, "%s belongs to uid %u, not the current user (uid %u)", path, (unsigned)st.st_uid,
                 (unsigned)geteuid());
        return 1;
    }
    if ((st.st_mode & 022) != 0) {
        snprintf(why, why_len, "%s is writable by %s (mode %03o)", path, (st.st_mode & 002) ? "others" : "its group",
                 (unsigned)(st.st_mode & 0777));
        return 1;
    }
    return 0;
}

/* Open and check the root, then the version folder (O_NOFOLLOW: a symlinked
 * version folder is refused), creating them 0700 when `create`. Returns the
 * version folder's descriptor; -1 with why (errno ENOENT when it simply does
 * not exist yet). Checked at every open, so a folder made unsafe after the
 * process started is refused from then on. */
static int open_vdir(const memra__jit_disk *d, int create, char *why, size_t why_len)
{
    if (d->root[0] == '\0') {
        snprintf(why, why_len, "no cache folder");
        errno = ENOENT;
        return -1;
    }
    if (create && make_dirs(d->root, why, why_len) != 0) return -1;
    int rfd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0) {
        int e = errno;
        snprintf(why, why_len, "open %s: %s", d->root, strerror(e));
        errno = e;
        return -1;
    }
    if (folder_untrusted(rfd, d->root, why, why_len)) {
        close(rfd);
        errno = EPERM;
        return -1;
    }
    char vname[16];
    snprintf(vname, sizeof vname, "v%u", MEMRA__JIT_FORMAT_VERSION);
    /* 0700 whatever the umask; a failed chmod shows in the owner/mode check below */
    if (create && mkdirat(rfd, vname, 0700) == 0 && fchmodat(rfd, vname, 0700, 0) != 0)
        MEMRA__DEBUG("jit", "chmod 0700 of %s failed: %s", vname, strerror(errno));
    int vfd = openat(rfd, vname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(rfd);
    if (vfd < 0) {
        if (e == ELOOP || e == ENOTDIR) snprintf(why, why_len, "%s is not a folder (a symbolic link or a file)", d->dir);
        else snprintf(why, why_len, "open %s: %s", d->dir, strerror(e));
        errno = e == ELOOP ? EPERM : e;
        return -1;
    }
    if (folder_untrusted(vfd, d->dir, why, why_len)) {
        close(vfd);
        errno = EPERM;
        return -1;
    }
    return vfd;
}

void memra__jit_disk_prepare(memra__jit_disk *d)
{
    if (!d->enabled || d->prepared) return;
    d->prepared = 1;
    char why[PATH_MAX + 128] = "";
    int vfd = open_vdir(d, 1, why, sizeof why);
    if (vfd >= 0) {
        int ok = faccessat(vfd, ".", W_OK | X_OK, 0) == 0;
        if (!ok) snprintf(why, sizeof why, "%s is not writable: %s", d->dir, strerror(errno));
        close(vfd);
        if (ok) return;
    }
    memra__log(MEMRA_LOG_WARN, "jit", "disk cache off: %s", why);
    snprintf(d->why, sizeof d->why, "%.500s", why);
    d->enabled = 0;
}

int memra__jit_disk_status(const memra__jit_disk *d, char *why, size_t why_len)
{
    if (d->why[0] != '\0') {
        snprintf(why, why_len, "%s", d->why);
        return 0;
    }
    if (!d->enabled) {
        snprintf(why, why_len, "%s", d->root[0] ? "off (MEMRA_JIT_CACHE=0)" : "off (no cache folder)");
        return 0;
    }
    int vfd = open_vdir(d, 0, why, why_len);
    if (vfd >= 0) {
        close(vfd);
        snprintf(why, why_len, "ok");
        return 1;
    }
    if (errno == ENOENT) {
        snprintf(why, why_len, "ok (created at the first write)");
        return 1;
    }
    return 0;
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

/* Remove entry `name` of the folder vfd only if it is still the file we
 * examined: a writer may have renamed a good entry into place meanwhile.
 * unlinkat never follows a symbolic link (it removes the link itself). */
static void drop_entry(int vfd, const char *name, const char *path, const struct stat *seen, const char *why)
{
    struct stat now;
    memra__log(MEMRA_LOG_WARN, "jit", "dropping cache entry %s: %s; it will be rebuilt", path, why);
    if (fstatat(vfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == seen->st_dev && now.st_ino == seen->st_ino)
        unlinkat(vfd, name, 0);
}

/* Base name of the entry (or lock, tmp) for a key. */
static void entry_name(const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *ext, char out[KEY_HEX_LEN + 16])
{
    memra__hex(key, MEMRA__JIT_KEY_BYTES, out);
    snprintf(out + KEY_HEX_LEN, 16, ".%s", ext);
}

/* An open entry is trusted when it is a regular file of the current user
 * that nobody else can write; NULL when it is, else the reason. */
static const char *entry_untrusted(const struct stat *st)
{
    if (!S_ISREG(st->st_mode)) return S_ISFIFO(st->st_mode) ? "not a regular file (a FIFO)" : "not a regular file";
    if (st->st_uid != geteuid()) return "owned by another user";
    if ((st->st_mode & 022) != 0) return "writable by its group or others";
    return NULL;
}

memra_status memra__jit_disk_read(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES], const char *target,
                                  void **out, size_t *out_size)
{
    char path[PATH_MAX], name[KEY_HEX_LEN + 16], dwhy[PATH_MAX + 128];
    memra__jit_disk_path(d, key, "cubin", path);
    entry_name(key, "cubin", name);
    int vfd = open_vdir(d, 0, dwhy, sizeof dwhy);
    if (vfd < 0) {
        if (errno == ENOENT) return MEMRA_STATUS_NOT_FOUND;
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "disk cache not trusted: %s", dwhy);
    }
    /* O_NONBLOCK: a FIFO under an entry's name must not block the open. */
    int fd = openat(vfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            close(vfd);
            return MEMRA_STATUS_NOT_FOUND;
        }
        if (e == ELOOP) {
            memra__log(MEMRA_LOG_WARN, "jit", "dropping cache entry %s: a symbolic link; it will be rebuilt", path);
            unlinkat(vfd, name, 0);
            close(vfd);
            return MEMRA_STATUS_CORRUPT;
        }
        close(vfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "open %s: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        close(vfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "stat %s: %s", path, strerror(e));
    }
    const char *why = NULL;
    uint8_t *buf = NULL;
    size_t size = (size_t)st.st_size;
    if ((why = entry_untrusted(&st)) != NULL) {
    } else if ((uint64_t)st.st_size < MEMRA__JIT_HEADER_BYTES) why = "truncated: shorter than the header";
    else if ((uint64_t)st.st_size > MAX_ENTRY_BYTES) why = "larger than any entry memra writes";
    else if ((buf = malloc(size)) == NULL) {
        close(fd);
        close(vfd);
        return MEMRA__FAIL(MEMRA_STATUS_OUT_OF_MEMORY, "reading %s: %zu bytes", path, size);
    } else if (read_all(fd, buf, size) != 0) why = "short read (file changed or truncated while reading)";
    else why = memra__jit_entry_check(buf, size, key, target);
    if (why != NULL) {
        close(fd);
        free(buf);
        drop_entry(vfd, name, path, &st, why);
        close(vfd);
        return MEMRA_STATUS_CORRUPT;
    }
    close(vfd);
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
    char path[PATH_MAX], name[KEY_HEX_LEN + 16], tmp[KEY_HEX_LEN + 32], dwhy[PATH_MAX + 128];
    memra__jit_disk_path(d, key, "cubin", path);
    entry_name(key, "cubin", name);
    uint8_t hdr[MEMRA__JIT_HEADER_BYTES];
    memra__jit_entry_header(hdr, key, target, payload, size);

    int vfd = open_vdir(d, 1, dwhy, sizeof dwhy);
    if (vfd < 0) return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "disk cache not trusted: %s", dwhy);
    /* A fresh temporary name, created exclusively (never through a link). */
    int fd = -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t salt = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        salt = salt * 6364136223846793005ull + 1442695040888963407ull;
        char hex[KEY_HEX_LEN + 1];
        memra__hex(key, MEMRA__JIT_KEY_BYTES, hex);
        snprintf(tmp, sizeof tmp, "%s.tmp.%06llx", hex, (unsigned long long)(salt >> 40));
        fd = openat(vfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        close(vfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "creating a temporary file in %s: %s", d->dir, strerror(e));
    }
    const char *step = "write";
    int ok = write_all(fd, hdr, sizeof hdr) == 0 && write_all(fd, payload, size) == 0;
    if (ok && !(ok = fsync(fd) == 0)) step = "fsync";
    int e = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        e = errno;
        step = "close";
    }
    if (ok && !(ok = renameat(vfd, tmp, vfd, name) == 0)) {
        e = errno;
        step = "rename";
    }
    if (!ok) {
        unlinkat(vfd, tmp, 0);
        close(vfd);
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "writing cache entry %s: %s: %s", path, step, strerror(e));
    }
    /* Make the rename itself durable; best effort. */
    fsync(vfd);
    close(vfd);
    return MEMRA_STATUS_OK;
}

int memra__jit_disk_lock(const memra__jit_disk *d, const uint8_t key[MEMRA__JIT_KEY_BYTES])
{
    char path[PATH_MAX], name[KEY_HEX_LEN + 16], dwhy[PATH_MAX + 128];
    memra__jit_disk_path(d, key, "lock", path);
    entry_name(key, "lock", name);
    int vfd = open_vdir(d, 0, dwhy, sizeof dwhy);
    if (vfd < 0) {
        MEMRA__DEBUG("jit", "no lock %s: %s", path, dwhy);
        return -1;
    }
    int fd = openat(vfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    int e = errno;
    close(vfd);
    if (fd < 0) {
        MEMRA__DEBUG("jit", "no lock %s: %s", path, strerror(e));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || entry_untrusted(&st) != NULL) {
        MEMRA__DEBUG("jit", "no lock %s: not a regular file of ours", path);
        close(fd);
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

/* A listing of the trusted version folder (closedir closes it), NULL with
 * why when it is absent or untrusted. */
static DIR *open_vdir_listing(const memra__jit_disk *d, char *why, size_t why_len)
{
    int vfd = open_vdir(d, 0, why, why_len);
    if (vfd < 0) return NULL;
    DIR *dp = fdopendir(vfd);
    if (dp == NULL) {
        int e = errno;
        snprintf(why, why_len, "opendir %s: %s", d->dir, strerror(e));
        close(vfd);
        errno = e;
    }
    return dp;
}

void memra__jit_disk_evict(const memra__jit_disk *d, const uint8_t *keep)
{
    char dwhy[PATH_MAX + 128];
    DIR *dp = open_vdir_listing(d, dwhy, sizeof dwhy);
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
    char dwhy[PATH_MAX + 128];
    DIR *dp = open_vdir_listing(d, dwhy, sizeof dwhy);
    if (dp == NULL) {
        if (errno == ENOENT) return MEMRA_STATUS_OK;
        return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "disk cache not trusted: %s", dwhy);
    }
    memra__jit_entry *v = NULL;
    size_t n = 0, cap = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (!is_entry_name(de->d_name, "cubin")) continue;
        int fd = openat(dirfd(dp), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) continue;
        struct stat st;
        uint8_t hdr[MEMRA__JIT_HEADER_BYTES];
        int have_st = fstat(fd, &st) == 0;
        /* Only a trusted entry's header is read; others are listed as "?". */
        int have_hdr = have_st && entry_untrusted(&st) == NULL && (uint64_t)st.st_size >= sizeof hdr &&
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

/* Remove entries, locks and temporary files of the version folder `name`
 * of root (never through a symbolic link: the folder is opened O_NOFOLLOW,
 * and unlinkat removes a link, not its target), then the folder if empty. */
static size_t clear_folder(int rfd, const char *name, const char *root)
{
    int vfd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vfd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            memra__log(MEMRA_LOG_WARN, "jit", "clear: %s/%s is not a folder (a symbolic link or a file); left alone",
                       root, name);
        return 0;
    }
    char shown[PATH_MAX + 300], why[PATH_MAX + 600];
    snprintf(shown, sizeof shown, "%s/%s", root, name);
    if (folder_untrusted(vfd, shown, why, sizeof why)) {
        memra__log(MEMRA_LOG_WARN, "jit", "clear: %s; left alone", why);
        close(vfd);
        return 0;
    }
    DIR *dp = fdopendir(vfd);
    if (dp == NULL) {
        close(vfd);
        return 0;
    }
    size_t removed = 0;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        int entry = is_entry_name(de->d_name, "cubin");
        if (!entry && !is_entry_name(de->d_name, "lock") && !is_tmp_name(de->d_name)) continue;
        if (unlinkat(dirfd(dp), de->d_name, 0) == 0 && entry) removed++;
    }
    closedir(dp);
    unlinkat(rfd, name, AT_REMOVEDIR); /* fails harmlessly when something else lives there */
    return removed;
}

memra_status memra__jit_disk_clear(const memra__jit_disk *d, size_t *out_removed)
{
    size_t removed = 0;
    if (d->root[0] != '\0') {
        int rfd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rfd < 0 && errno != ENOENT)
            return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "open %s: %s", d->root, strerror(errno));
        char why[PATH_MAX + 128];
        if (rfd >= 0 && folder_untrusted(rfd, d->root, why, sizeof why)) {
            close(rfd);
            return MEMRA__FAIL(MEMRA_STATUS_IO_ERROR, "disk cache not trusted, nothing removed: %s", why);
        }
        int lfd = rfd >= 0 ? dup(rfd) : -1;
        DIR *dp = lfd >= 0 ? fdopendir(lfd) : NULL;
        if (dp == NULL && lfd >= 0) close(lfd);
        struct dirent *de;
        while (dp != NULL && (de = readdir(dp)) != NULL) {
            const char *s = de->d_name;
            if (s[0] != 'v' || s[1] == '\0' || strspn(s + 1, "0123456789") != strlen(s + 1)) continue;
            removed += clear_folder(rfd, s, d->root);
        }
        if (dp != NULL) closedir(dp);
        if (rfd >= 0) close(rfd);
    }
    if (out_removed != NULL) *out_removed = removed;
    return MEMRA_STATUS_OK;
}

void memra__jit_disk_usage(const memra__jit_disk *d, size_t *entries, uint64_t *bytes)
{
    *entries = 0;
    *bytes = 0;
    char dwhy[PATH_MAX + 128];
    DIR *dp = open_vdir_listing(d, dwhy, sizeof dwhy);
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
