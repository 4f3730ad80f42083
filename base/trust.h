/* Opening code to load: the file that is checked is the file that is loaded.
 *
 *   char real[PATH_MAX], why[512];
 *   int fd = memra__trust_open(path, 0, 0, real, why, sizeof why);   // -1: why says
 *   void *lib = memra__trust_dlopen(&fd, real, why, sizeof why);     // dlopen of that descriptor
 *   ...  dlclose(lib); close(fd);   // keep fd open while lib is loaded
 *
 * The rules (docs/ARCHITECTURE.md, "Trust"): the path is resolved by realpath,
 * then walked from `/` one component at a time with O_NOFOLLOW, and every
 * folder on the way, and the file itself, must be owned by root or the
 * effective user and be writable by neither group nor others. A folder above
 * the last one may be writable by others only when it is root's and carries
 * the sticky bit (like /tmp): there nobody else can rename or remove our
 * entries. The file is opened O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC
 * (a FIFO never blocks) and must be a regular file. `allow_unsafe` drops the
 * owner and mode rules, never the descriptor rules.
 *
 * All functions are thread-safe and keep no state. */
#ifndef MEMRA_BASE_TRUST_H
#define MEMRA_BASE_TRUST_H

#include <stddef.h>

/* Open `path` (absolute) as above. Returns the descriptor, or -1 with a
 * sentence in why. real (PATH_MAX bytes) receives the resolved path, also on
 * failure when it got that far (else a copy of path, truncated). */
int memra__trust_open(const char *path, int allow_unsafe, char *real, size_t real_len, char *why, size_t why_len);

/* Check a folder and every folder above it by the same rules (the folder
 * itself may not be writable by others even when sticky) and return a
 * descriptor of it (O_RDONLY | O_DIRECTORY | O_CLOEXEC), or -1 with why. */
int memra__trust_open_dir(const char *path, int allow_unsafe, char *real, size_t real_len, char *why, size_t why_len);

/* dlopen(RTLD_NOW | RTLD_LOCAL) the file behind *fd, through /proc/self/fd,
 * and verify (device and inode of the mapping in /proc/self/maps) that the
 * library returned is that file: a library that stayed mapped after dlclose
 * (RTLD_NODELETE, unique symbols) keeps its /proc/self/fd/N name, and the
 * loader would hand it out again for the same name. Then *fd is moved to
 * another number and the load retried. `shown` names the file in messages.
 * NULL with why on failure. The caller keeps *fd open while the library is
 * loaded (the name is the descriptor's number). */
void *memra__trust_dlopen(int *fd, const char *shown, char *why, size_t why_len);

/* A library named by an environment variable (MEMRA_CUDA_DRIVER, ...): the
 * value must be absolute, then open + dlopen as above with the strict rules.
 * *out_fd receives the descriptor to keep open. NULL with why on failure. */
void *memra__trust_dlopen_env(const char *var, const char *value, int *out_fd, char *why, size_t why_len);

#endif
