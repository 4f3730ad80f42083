/* Opening code to load by descriptor, every folder above it checked. See
 * trust.h for the rules. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "base/trust.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/sysmacros.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What is wrong with one object on the path; NULL when nothing. `last` is the
 * folder or file named by the path itself, where sticky does not excuse. */
static int unsafe_stat(const struct stat *st, const char *what, int last, char *why, size_t len)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(why, len, "%s is owned by uid %u, neither root nor the current user", what, (unsigned)st->st_uid);
        return 1;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0) return 0;
    if (!last && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0) return 0;
    snprintf(why, len, "%s is writable by %s (mode %04o)", what, (st->st_mode & S_IWOTH) ? "anyone" : "its group",
             (unsigned)(st->st_mode & 07777));
    return 1;
}

/* Walk real (absolute, resolved) from `/`, checking each folder, and open
 * the last component with `last_flags`. */
static int walk_open(const char *real, int last_flags, int want_dir, int allow_unsafe, char *why, size_t len)
{
    int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(why, len, "cannot open /: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    char prefix[PATH_MAX] = "/";
    size_t plen = 1;
    const char *p = real;
    while (*p == '/') p++;
    if (*p == '\0') {
        /* The path is "/" itself (a folder). */
        if (!want_dir) {
            snprintf(why, len, "/ is not a file");
            close(dfd);
            return -1;
        }
    }
    for (;;) {
        if (fstat(dfd, &st) != 0) {
            snprintf(why, len, "cannot stat %s: %s", prefix, strerror(errno));
            close(dfd);
            return -1;
        }
        /* The folder the path names, or the file's own folder: no sticky excuse. */
        int target_folder = *p == '\0' || (!want_dir && strchr(p, '/') == NULL);
        if (!allow_unsafe && unsafe_stat(&st, prefix, target_folder, why, len)) {
            close(dfd);
            return -1;
        }
        if (*p == '\0') break; /* want_dir and the walk ended on the folder */
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (cl > NAME_MAX) {
            snprintf(why, len, "a component of %s is longer than NAME_MAX", real);
            close(dfd);
            return -1;
        }
        memcpy(comp, p, cl);
        comp[cl] = '\0';
        p += cl;
        while (*p == '/') p++;
        if (plen + cl + 2 < sizeof prefix) {
            if (plen > 1) prefix[plen++] = '/';
            memcpy(prefix + plen, comp, cl + 1);
            plen += cl;
        }
        int is_last = *p == '\0';
        if (is_last && !want_dir) {
            int fd = openat(dfd, comp, last_flags);
            int e2 = errno;
            close(dfd);
            if (fd < 0) {
                if (e2 == ELOOP) snprintf(why, len, "%s became a symbolic link while it was checked", real);
                else snprintf(why, len, "cannot open %s: %s", real, strerror(e2));
                return -1;
            }
            if (fstat(fd, &st) != 0) {
                snprintf(why, len, "cannot stat %s: %s", real, strerror(errno));
                close(fd);
                return -1;
            }
            if (!S_ISREG(st.st_mode)) {
                snprintf(why, len, "%s is not a regular file (%s)", real,
                         S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder" : "a special file");
                close(fd);
                return -1;
            }
            if (!allow_unsafe && unsafe_stat(&st, real, 1, why, len)) {
                close(fd);
                return -1;
            }
            return fd;
        }
        int nfd = openat(dfd, comp, (is_last ? last_flags : O_PATH | O_DIRECTORY | O_CLOEXEC) | O_NOFOLLOW);
        int e2 = errno;
        close(dfd);
        if (nfd < 0) {
            if (e2 == ELOOP || e2 == ENOTDIR) snprintf(why, len, "%s changed while it was checked (%s)", prefix, strerror(e2));
            else snprintf(why, len, "cannot open %s: %s", prefix, strerror(e2));
            return -1;
        }
        dfd = nfd;
    }
    return dfd;
}

static int resolve(const char *path, char *real, size_t real_len, char *why, size_t why_len)
{
    snprintf(real, real_len, "%s", path ? path : "");
    if (path == NULL || path[0] != '/') {
        snprintf(why, why_len, "'%s' is not an absolute path", path ? path : "(null)");
        return -1;
    }
    size_t n = strlen(path);
    if (n >= PATH_MAX) {
        snprintf(why, why_len, "a path of %zu bytes is longer than PATH_MAX (%d): refused, never truncated", n, PATH_MAX);
        return -1;
    }
    char buf[PATH_MAX];
    if (realpath(path, buf) == NULL) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (strlen(buf) >= real_len) {
        snprintf(why, why_len, "%s resolves to a path too long to keep", path);
        return -1;
    }
    memcpy(real, buf, strlen(buf) + 1);
    return 0;
}

int memra__trust_open(const char *path, int allow_unsafe, char *real, size_t real_len, char *why, size_t why_len)
{
    if (resolve(path, real, real_len, why, why_len) != 0) return -1;
    return walk_open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, allow_unsafe, why, why_len);
}

int memra__trust_open_dir(const char *path, int allow_unsafe, char *real, size_t real_len, char *why, size_t why_len)
{
    if (resolve(path, real, real_len, why, why_len) != 0) return -1;
    if (strcmp(real, "/") == 0) {
        int fd = walk_open(real, 0, 1, allow_unsafe, why, why_len);
        if (fd < 0) return -1;
        close(fd);
        return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    return walk_open(real, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, 1, allow_unsafe, why, why_len);
}

/* The loader knows a library by its name, here "/proc/self/fd/N": a library
 * that stayed mapped after dlclose (RTLD_NODELETE, unique symbols) keeps that
 * name after its descriptor is closed, and a later dlopen of the same name
 * would return it instead of opening ours. So the library we got must be the
 * file behind fd: the mapping holding its dynamic section names the file's
 * device and inode in /proc/self/maps. 1 when it is, 0 when it is another,
 * -1 when it cannot be told. */
static int loaded_is_fd(void *lib, int fd)
{
    struct link_map *lm = NULL;
    struct stat st;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL || lm->l_ld == NULL || fstat(fd, &st) != 0) return -1;
    uintptr_t at = (uintptr_t)lm->l_ld;
    FILE *f = fopen("/proc/self/maps", "re");
    if (f == NULL) return -1;
    char line[PATH_MAX + 256];
    int verdict = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi, off, ino;
        unsigned dmaj, dmin;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &dmaj, &dmin, &ino) != 7) continue;
        if (at < lo || at >= hi) continue;
        verdict = ino == (unsigned long)st.st_ino && dmaj == major(st.st_dev) && dmin == minor(st.st_dev);
        break;
    }
    fclose(f);
    return verdict;
}

void *memra__trust_dlopen(int *fd, const char *shown, char *why, size_t why_len)
{
    /* A stale library under the descriptor's name is stepped around by moving
     * the descriptor to another number (a few times at most). */
    for (int attempt = 0; attempt < 8; attempt++) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", *fd);
        dlerror();
        void *lib = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            const char *e = dlerror();
            if (access("/proc/self/fd", X_OK) != 0) {
                snprintf(why, why_len, "/proc is not mounted: memra loads %s only through its open descriptor", shown);
                return NULL;
            }
            /* The loader names the descriptor; name the file instead. */
            size_t pl = strlen(proc);
            if (e != NULL && strncmp(e, proc, pl) == 0) snprintf(why, why_len, "%s%s", shown, e + pl);
            else snprintf(why, why_len, "%s", e ? e : "dlopen failed");
            return NULL;
        }
        if (loaded_is_fd(lib, *fd) != 0) return lib;
        dlclose(lib);
        int moved = fcntl(*fd, F_DUPFD_CLOEXEC, *fd + 1);
        if (moved < 0) break;
        close(*fd);
        *fd = moved;
    }
    snprintf(why, why_len, "the loader keeps returning another library mapped under a /proc/self/fd name; %s was not loaded",
             shown);
    return NULL;
}

void *memra__trust_dlopen_env(const char *var, const char *value, int *out_fd, char *why, size_t why_len)
{
    char real[PATH_MAX], inner[PATH_MAX + 256];
    if (value == NULL || value[0] != '/') {
        snprintf(why, why_len, "%s=%s is a relative path: refused (memra never loads code from the current directory); "
                               "give an absolute path", var, value ? value : "");
        return NULL;
    }
    int fd = memra__trust_open(value, 0, real, sizeof real, inner, sizeof inner);
    if (fd < 0) {
        snprintf(why, why_len, "%s=%s refused: %s", var, value, inner);
        return NULL;
    }
    void *lib = memra__trust_dlopen(&fd, real, inner, sizeof inner);
    if (lib == NULL) {
        snprintf(why, why_len, "%s=%s: %s", var, value, inner);
        close(fd);
        return NULL;
    }
    *out_fd = fd;
    return lib;
}
