/* libFuzzer harness: the JIT cache entry reader (jit/cache.c).
 *
 * Input: one mode byte, then the bytes of a cache entry file.
 *   bit 0  expect the key the file carries (else a fixed key): reaches the
 *          checks after the key comparison
 *   bit 1  expect the file's own target (else "sm_90a")
 *   bit 2  fix the payload size and checksum fields up first, so the entry
 *          can pass every check and the success paths run too
 *   bit 3  also read it through the file path (memra__jit_disk_read) from a
 *          private cache folder
 * Invariants, each an abort:
 *   - memra__jit_entry_check accepts exactly the entries this file's own
 *     reading of the format (jit/cache.c's header comment) accepts;
 *   - memra__jit_disk_read returns OK exactly when the bytes check, and then
 *     hands back the payload, byte for byte; otherwise the entry is gone. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/cache.h"
#include "jit/sha256.h"
#include "tests/fuzz/fuzz_input.h"

static memra__jit_disk g_disk;
static char g_root[64];

/* every entry is unlinked after its read: only the two folders remain */
static void remove_root(void)
{
    rmdir(g_disk.dir);
    rmdir(g_root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (getenv("MEMRA_LOG") == NULL) setenv("MEMRA_LOG", "error", 1); /* each dropped entry logs a warning */
    snprintf(g_root, sizeof g_root, "%s", "/tmp/memra_fuzz_jit.XXXXXX");
    const char *root = mkdtemp(g_root);
    if (root == NULL) abort();
    atexit(remove_root);
    setenv("MEMRA_CACHE_DIR", root, 1);
    unsetenv("MEMRA_JIT_CACHE");
    memra__jit_disk_init(&g_disk);
    memra__jit_disk_prepare(&g_disk);
    if (!g_disk.enabled) {
        fprintf(stderr, "fuzz_jit_cache: the cache folder %s is unusable\n", root);
        abort();
    }
    return 0;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* The format, read independently of cache.c. */
static int entry_ok(const uint8_t *f, size_t n, const uint8_t *key, const char *target)
{
    if (n < 104 || memcmp(f, "MEMRAJIT", 8) != 0 || le32(f + 8) != 1 || le32(f + 12) != 104) return 0;
    if (f[31] != 0) return 0;
    if (target != NULL) {
        char want[16] = {0};
        if (strlen(target) > 15) return 0;
        memcpy(want, target, strlen(target));
        if (memcmp(f + 16, want, 16) != 0) return 0;
    }
    if (memcmp(f + 32, key, 32) != 0) return 0;
    const uint64_t len = le64(f + 64);
    if (len == 0 || len != n - 104) return 0;
    uint8_t sum[MEMRA__SHA256_BYTES];
    memra__sha256(f + 104, n - 104, sum);
    return memcmp(sum, f + 72, 32) == 0;
}

static void via_file(const uint8_t *f, size_t n, const uint8_t *key, const char *target, int ok)
{
    char path[PATH_MAX];
    memra__jit_disk_path(&g_disk, key, "cubin", path);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL) abort();
    if (n && fwrite(f, 1, n, fp) != n) abort();
    if (fclose(fp) != 0) abort();
    void *payload = NULL;
    size_t got = 0;
    const memra_status st = memra__jit_disk_read(&g_disk, key, target, &payload, &got);
    if ((st == MEMRA_STATUS_OK) != ok) {
        fprintf(stderr, "fuzz_jit_cache: disk_read says %s, the bytes check says %s\n", memra_status_str(st),
                ok ? "valid" : "invalid");
        abort();
    }
    if (st == MEMRA_STATUS_OK) {
        if (got != n - 104 || memcmp(payload, f + 104, got) != 0) {
            fprintf(stderr, "fuzz_jit_cache: disk_read handed back other bytes than the payload\n");
            abort();
        }
        free(payload);
    } else {
        struct stat sb;
        if (st == MEMRA_STATUS_CORRUPT && lstat(path, &sb) == 0) {
            fprintf(stderr, "fuzz_jit_cache: a corrupt entry was left in place\n");
            abort();
        }
    }
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const size_t n = size - 1;
    uint8_t *f = malloc(n ? n : 1); /* exactly the file's bytes: a read past them is caught */
    if (f == NULL) return 0;
    memcpy(f, data + 1, n);
    if ((mode & 4) && n >= 104) {
        const uint64_t len = n - 104;
        for (int i = 0; i < 8; i++) f[64 + i] = (uint8_t)(len >> (8 * i));
        memra__sha256(f + 104, n - 104, f + 72);
    }
    uint8_t key[MEMRA__JIT_KEY_BYTES];
    memset(key, 0x5A, sizeof key);
    if ((mode & 1) && n >= 64) memcpy(key, f + 32, sizeof key);
    char target[MEMRA__JIT_TARGET_BYTES] = "sm_90a";
    if ((mode & 2) && n >= 32) {
        memcpy(target, f + 16, MEMRA__JIT_TARGET_BYTES - 1);
        target[MEMRA__JIT_TARGET_BYTES - 1] = '\0';
    }
    const char *want = (mode & 0x30) == 0x30 ? NULL : target; /* NULL: any target, as listing reads */
    const char *why = memra__jit_entry_check(f, n, key, want);
    const int ok = entry_ok(f, n, key, want);
    if ((why == NULL) != ok) {
        fprintf(stderr, "fuzz_jit_cache: entry_check says %s, the format says %s\n", why ? why : "valid",
                ok ? "valid" : "invalid");
        abort();
    }
    if ((mode & 8) && want != NULL) via_file(f, n, key, want, ok);
    free(f);
    return 0;
}
