/* The disk cache in a fresh folder: hit after miss, corrupt entries dropped
 * and rebuilt, folder modes, MEMRA_JIT_CACHE=0, LRU eviction, an unusable
 * folder, list and clear. Usage: test_jit_cache CASE */
#include <pthread.h>
#include <time.h>

#include "jit_test.h"

static const char *g_dir;

static void entry_path(const uint8_t key[32], char *out, size_t cap)
{
    char hex[65];
    memra__hex(key, 32, hex);
    snprintf(out, cap, "%s/v%u/%s.cubin", g_dir, MEMRA__JIT_FORMAT_VERSION, hex);
}

/* A source unique to `tag`, so keys differ. Built once per tag (threads
 * call this only for tags main has built already). */
static const char *source_for(int tag)
{
    static char buf[8][512];
    if (buf[tag][0] == '\0') snprintf(buf[tag], sizeof buf[tag], "%s// variant %d\n", jit_test_src_scale, tag);
    return buf[tag];
}

/* Compile in a new jit object and return the origin; copies the image. */
static memra__jit_origin compile_fresh(int tag, const char *target, uint8_t **image, size_t *size, uint8_t key[32])
{
    memra__jit *jit = jit_test_open();
    memra__jit_result r;
    CHECK_OK(memra__jit_compile(jit, "scale", source_for(tag), NULL, 0, target, 0, &r));
    printf("  tag %d %s: origin %s, %.1f ms\n", tag, target, memra__jit_origin_str(r.origin), r.ms);
    if (image != NULL) {
        *image = malloc(r.size);
        memcpy(*image, r.image, r.size);
        *size = r.size;
    }
    if (key != NULL) memcpy(key, r.key, 32);
    memra__jit_destroy(jit);
    return r.origin;
}

static void check_entry_valid(const uint8_t key[32], const char *target, const uint8_t *image, size_t size)
{
    char path[1024];
    entry_path(key, path, sizeof path);
    size_t n = 0;
    uint8_t *file = jit_test_read_file(path, &n);
    if (file == NULL) TEST_FAIL_AT("no entry at %s", path);
    const char *why = memra__jit_entry_check(file, n, key, target);
    if (why != NULL) TEST_FAIL_AT("entry %s fails: %s", path, why);
    CHECK_INT_EQ(n, size + MEMRA__JIT_HEADER_BYTES);
    CHECK(memcmp(file + MEMRA__JIT_HEADER_BYTES, image, size) == 0);
    CHECK(memcmp(file, "MEMRAJIT", 8) == 0);
    free(file);
}

typedef enum { C_TRUNCATE, C_PAYLOAD, C_HEADER_KEY, C_VERSION, C_MAGIC, C_OTHER_KEY, C_TARGET, C_EMPTY } corruption;

static void corrupt_case(corruption how)
{
    uint8_t *image, *again, key[32];
    size_t size, size2;
    CHECK_INT_EQ(compile_fresh(0, "sm_90a", &image, &size, key), MEMRA__JIT_ORIGIN_NVRTC);
    check_entry_valid(key, "sm_90a", image, size);
    char path[1024];
    entry_path(key, path, sizeof path);
    size_t n;
    uint8_t *file = jit_test_read_file(path, &n);
    CHECK(file != NULL);
    switch (how) {
    case C_TRUNCATE: n = MEMRA__JIT_HEADER_BYTES + size / 2; break;
    case C_PAYLOAD: file[MEMRA__JIT_HEADER_BYTES + size / 3] ^= 0x10; break;
    case C_HEADER_KEY: file[32 + 5] ^= 0x01; break;
    case C_VERSION: file[8] = (uint8_t)(MEMRA__JIT_FORMAT_VERSION + 1); break;
    case C_MAGIC: file[0] = 'X'; break;
    case C_TARGET: memcpy(file + 16, "sm_90\0", 6); break;
    case C_EMPTY: n = 0; break;
    case C_OTHER_KEY: {
        /* a whole, valid entry of another key under this key's name */
        uint8_t *other, okey[32];
        size_t osize;
        CHECK_INT_EQ(compile_fresh(1, "sm_90a", &other, &osize, okey), MEMRA__JIT_ORIGIN_NVRTC);
        char opath[1024];
        entry_path(okey, opath, sizeof opath);
        free(file);
        file = jit_test_read_file(opath, &n);
        CHECK(file != NULL && memra__jit_entry_check(file, n, okey, "sm_90a") == NULL);
        free(other);
        break;
    }
    }
    jit_test_write_file(path, file, n);
    free(file);
    file = jit_test_read_file(path, &n);
    CHECK(memra__jit_entry_check(file, n, key, "sm_90a") != NULL);
    printf("  corrupted entry rejected: %s\n", memra__jit_entry_check(file, n, key, "sm_90a"));
    free(file);

    /* the next compile does not trust it: rebuilt by NVRTC, same bytes, rewritten */
    memra__jit *jit = jit_test_open();
    memra__jit_result r;
    CHECK_OK(memra__jit_compile(jit, "scale", source_for(0), NULL, 0, "sm_90a", 0, &r));
    CHECK_INT_EQ(r.origin, MEMRA__JIT_ORIGIN_NVRTC);
    CHECK_INT_EQ(r.size, size);
    CHECK(memcmp(r.image, image, size) == 0);
    memra__jit_cache_stats st;
    CHECK_OK(memra__jit_stats(jit, &st));
    CHECK_INT_EQ(st.corrupt_dropped, 1);
    memra__jit_destroy(jit);
    check_entry_valid(key, "sm_90a", image, size);
    /* and the rebuilt entry serves the next object from disk */
    CHECK_INT_EQ(compile_fresh(0, "sm_90a", &again, &size2, NULL), MEMRA__JIT_ORIGIN_DISK);
    CHECK(size2 == size && memcmp(again, image, size) == 0);
    free(again);
    free(image);
}

static void check_mode(const char *path, unsigned want)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    printf("  %s: %03o\n", path, (unsigned)(st.st_mode & 0777));
    CHECK_INT_EQ(st.st_mode & 0777, want);
}

static int count_files(const char *path, const struct stat *st, int flag, struct FTW *ftw);
static int g_files;
static int count_files(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_F) {
        printf("  file: %s\n", path);
        g_files++;
    }
    return 0;
}

/* Threads on one jit object: 4 threads, 2 keys each asked twice. */
typedef struct thread_arg {
    memra__jit *jit;
    int tag;
    const void *image[2];
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    for (int i = 0; i < 2; i++) {
        memra__jit_result r;
        CHECK_OK(memra__jit_compile(a->jit, "threads", source_for(a->tag), NULL, 0, "sm_90a", 0, &r));
        a->image[i] = r.image;
    }
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc != 2) TEST_FAIL_AT("usage: %s CASE", argv[0]);
    const char *c = argv[1];
    g_dir = jit_test_cache_dir();
    memra__jit_destroy(jit_test_open()); /* skip early when there is no NVRTC */

    if (strcmp(c, "hit_after_miss") == 0) {
        uint8_t *a, *b, key[32];
        size_t na, nb;
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", &a, &na, key), MEMRA__JIT_ORIGIN_NVRTC);
        check_entry_valid(key, "sm_90a", a, na);
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", &b, &nb, NULL), MEMRA__JIT_ORIGIN_DISK);
        CHECK(na == nb && memcmp(a, b, na) == 0);
        jit_test_check_cubin(b, nb, "sm_90a");
        /* another target is another key */
        CHECK_INT_EQ(compile_fresh(0, "sm_120a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_NVRTC);
        CHECK_INT_EQ(compile_fresh(0, "sm_120a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_DISK);
        /* within one object: memory after disk */
        memra__jit *jit = jit_test_open();
        memra__jit_result r1, r2;
        CHECK_OK(memra__jit_compile(jit, "scale", source_for(0), NULL, 0, "sm_90a", 0, &r1));
        CHECK_INT_EQ(r1.origin, MEMRA__JIT_ORIGIN_DISK);
        CHECK_OK(memra__jit_compile(jit, "scale", source_for(0), NULL, 0, "sm_90a", 0, &r2));
        CHECK_INT_EQ(r2.origin, MEMRA__JIT_ORIGIN_MEMORY);
        CHECK(r1.image == r2.image);
        /* PTX is not on disk: asking for it compiles, the image stays the same */
        memra__jit_result r3;
        CHECK_OK(memra__jit_compile(jit, "scale", source_for(0), NULL, 0, "sm_90a", 1, &r3));
        CHECK_INT_EQ(r3.origin, MEMRA__JIT_ORIGIN_NVRTC);
        CHECK(r3.image == r1.image && r3.ptx != NULL);
        memra__jit_cache_stats st;
        CHECK_OK(memra__jit_stats(jit, &st));
        printf("  stats: %zu entries, %llu bytes in %s; memory %zu; hits %llu/%llu, compiles %llu\n", st.disk_entries,
               (unsigned long long)st.disk_bytes, st.folder, st.memory_entries, (unsigned long long)st.hits_memory,
               (unsigned long long)st.hits_disk, (unsigned long long)st.compiles);
        CHECK_INT_EQ(st.disk_entries, 2);
        CHECK_INT_EQ(st.disk_enabled, 1);
        CHECK_INT_EQ(st.hits_disk, 1);
        CHECK_INT_EQ(st.hits_memory, 1);
        CHECK_INT_EQ(st.compiles, 1);
        CHECK_STR_EQ(memra__jit_cache_dir(jit), g_dir);
        memra__jit_destroy(jit);
        free(a);
        free(b);
    } else if (strcmp(c, "corrupt_truncate") == 0) corrupt_case(C_TRUNCATE);
    else if (strcmp(c, "corrupt_empty") == 0) corrupt_case(C_EMPTY);
    else if (strcmp(c, "corrupt_payload") == 0) corrupt_case(C_PAYLOAD);
    else if (strcmp(c, "corrupt_header_key") == 0) corrupt_case(C_HEADER_KEY);
    else if (strcmp(c, "corrupt_other_key") == 0) corrupt_case(C_OTHER_KEY);
    else if (strcmp(c, "corrupt_version") == 0) corrupt_case(C_VERSION);
    else if (strcmp(c, "corrupt_magic") == 0) corrupt_case(C_MAGIC);
    else if (strcmp(c, "corrupt_target") == 0) corrupt_case(C_TARGET);
    else if (strcmp(c, "mode_0700") == 0) {
        char nested[700];
        snprintf(nested, sizeof nested, "%s/a/b", g_dir);
        setenv("MEMRA_CACHE_DIR", nested, 1);
        uint8_t key[32];
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, key), MEMRA__JIT_ORIGIN_NVRTC);
        char p[1024];
        snprintf(p, sizeof p, "%s/a", g_dir);
        check_mode(p, 0700);
        check_mode(nested, 0700);
        snprintf(p, sizeof p, "%s/v%u", nested, MEMRA__JIT_FORMAT_VERSION);
        check_mode(p, 0700);
        const char *saved = g_dir;
        g_dir = nested;
        entry_path(key, p, sizeof p);
        g_dir = saved;
        check_mode(p, 0600);
    } else if (strcmp(c, "cache_off") == 0) {
        setenv("MEMRA_JIT_CACHE", "0", 1);
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_NVRTC);
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_NVRTC);
        memra__jit *jit = jit_test_open();
        memra__jit_cache_stats st;
        CHECK_OK(memra__jit_stats(jit, &st));
        CHECK_INT_EQ(st.disk_enabled, 0);
        memra__jit_destroy(jit);
        g_files = 0;
        nftw(g_dir, count_files, 16, FTW_PHYS);
        CHECK_INT_EQ(g_files, 0);
        struct stat sb;
        char p[1024];
        snprintf(p, sizeof p, "%s/v%u", g_dir, MEMRA__JIT_FORMAT_VERSION);
        CHECK(stat(p, &sb) != 0); /* not even the folder */
    } else if (strcmp(c, "unusable_folder") == 0) {
        /* MEMRA_CACHE_DIR is a regular file: no disk cache, a warning, the compile works */
        char p[1024];
        snprintf(p, sizeof p, "%s/not-a-folder", g_dir);
        jit_test_write_file(p, "x", 1);
        setenv("MEMRA_CACHE_DIR", p, 1);
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_NVRTC);
        memra__jit *jit = jit_test_open();
        memra__jit_result r;
        CHECK_OK(memra__jit_compile(jit, "scale", source_for(0), NULL, 0, "sm_90a", 0, &r));
        memra__jit_cache_stats st;
        CHECK_OK(memra__jit_stats(jit, &st));
        CHECK_INT_EQ(st.disk_enabled, 0);
        memra__jit_destroy(jit);
        if (geteuid() != 0) {
            /* a read-only folder (root ignores modes, so only as a user) */
            snprintf(p, sizeof p, "%s/ro", g_dir);
            CHECK(mkdir(p, 0500) == 0);
            setenv("MEMRA_CACHE_DIR", p, 1);
            CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_NVRTC);
            chmod(p, 0700);
        } else {
            printf("  (running as root: read-only folder case not exercised)\n");
        }
    } else if (strcmp(c, "lru") == 0) {
        uint8_t *img, key[4][32];
        size_t size;
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", &img, &size, key[0]), MEMRA__JIT_ORIGIN_NVRTC);
        free(img);
        /* room for three entries and a half */
        double cap_mb = 3.5 * (double)(size + MEMRA__JIT_HEADER_BYTES) / 1048576.0;
        char cap[64];
        snprintf(cap, sizeof cap, "%.9f", cap_mb);
        setenv("MEMRA_JIT_CACHE_MAX_MB", cap, 1);
        printf("  entry %zu bytes; MEMRA_JIT_CACHE_MAX_MB=%s\n", size + MEMRA__JIT_HEADER_BYTES, cap);
        sleep_ms(20);
        CHECK_INT_EQ(compile_fresh(1, "sm_90a", NULL, NULL, key[1]), MEMRA__JIT_ORIGIN_NVRTC);
        sleep_ms(20);
        CHECK_INT_EQ(compile_fresh(2, "sm_90a", NULL, NULL, key[2]), MEMRA__JIT_ORIGIN_NVRTC);
        sleep_ms(20);
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_DISK); /* touch 0 */
        sleep_ms(20);
        CHECK_INT_EQ(compile_fresh(3, "sm_90a", NULL, NULL, key[3]), MEMRA__JIT_ORIGIN_NVRTC); /* evicts 1 */
        char p[1024];
        int present[4];
        for (int i = 0; i < 4; i++) {
            entry_path(key[i], p, sizeof p);
            present[i] = jit_test_exists(p);
            printf("  entry %d: %s\n", i, present[i] ? "present" : "evicted");
        }
        CHECK(present[0] && !present[1] && present[2] && present[3]);
        CHECK_INT_EQ(compile_fresh(1, "sm_90a", NULL, NULL, NULL), MEMRA__JIT_ORIGIN_NVRTC); /* evicts 2 */
        entry_path(key[2], p, sizeof p);
        CHECK(!jit_test_exists(p));
        memra__jit *jit = jit_test_open();
        memra__jit_cache_stats st;
        CHECK_OK(memra__jit_stats(jit, &st));
        CHECK_INT_EQ(st.disk_entries, 3);
        CHECK(st.disk_bytes <= st.disk_max_bytes);
        memra__jit_destroy(jit);
    } else if (strcmp(c, "threads") == 0) {
        memra__jit *jit = jit_test_open();
        thread_arg args[4];
        pthread_t th[4];
        source_for(0);
        source_for(1);
        for (int i = 0; i < 4; i++) {
            args[i] = (thread_arg){.jit = jit, .tag = i % 2};
            CHECK(pthread_create(&th[i], NULL, thread_main, &args[i]) == 0);
        }
        for (int i = 0; i < 4; i++) CHECK(pthread_join(th[i], NULL) == 0);
        for (int i = 0; i < 4; i++) {
            CHECK(args[i].image[0] == args[i].image[1]);
            CHECK(args[i].image[0] == args[i % 2].image[0]);
        }
        CHECK(args[0].image[0] != args[1].image[0]);
        memra__jit_cache_stats st;
        CHECK_OK(memra__jit_stats(jit, &st));
        printf("  compiles %llu, disk hits %llu, memory hits %llu\n", (unsigned long long)st.compiles,
               (unsigned long long)st.hits_disk, (unsigned long long)st.hits_memory);
        CHECK_INT_EQ(st.memory_entries, 2);
        CHECK_INT_EQ(st.disk_entries, 2);
        memra__jit_destroy(jit);
    } else if (strcmp(c, "list_clear") == 0) {
        uint8_t k0[32], k1[32];
        CHECK_INT_EQ(compile_fresh(0, "sm_90a", NULL, NULL, k0), MEMRA__JIT_ORIGIN_NVRTC);
        CHECK_INT_EQ(compile_fresh(1, "sm_120a", NULL, NULL, k1), MEMRA__JIT_ORIGIN_NVRTC);
        memra__jit *jit = jit_test_open();
        memra__jit_entry *e = NULL;
        size_t n = 0;
        CHECK_OK(memra__jit_list(jit, &e, &n));
        CHECK_INT_EQ(n, 2);
        int seen90 = 0, seen120 = 0;
        for (size_t i = 0; i < n; i++) {
            printf("  %.16s %-8s %6llu bytes, age %llds, idle %llds, header %s\n", e[i].key_hex, e[i].target,
                   (unsigned long long)e[i].file_bytes, (long long)e[i].age_s, (long long)e[i].idle_s,
                   e[i].header_ok ? "ok" : "BAD");
            CHECK(e[i].header_ok);
            CHECK(e[i].age_s >= 0 && e[i].age_s < 600);
            seen90 += strcmp(e[i].target, "sm_90a") == 0;
            seen120 += strcmp(e[i].target, "sm_120a") == 0;
        }
        CHECK(seen90 == 1 && seen120 == 1);
        free(e);
        size_t removed = 0;
        CHECK_OK(memra__jit_clear(jit, &removed));
        CHECK_INT_EQ(removed, 2);
        CHECK_OK(memra__jit_list(jit, &e, &n));
        CHECK_INT_EQ(n, 0);
        CHECK(e == NULL);
        /* the same object writes again after a clear */
        memra__jit_result r;
        CHECK_OK(memra__jit_compile(jit, "scale", source_for(2), NULL, 0, "sm_90a", 0, &r));
        CHECK_INT_EQ(r.origin, MEMRA__JIT_ORIGIN_NVRTC);
        memra__jit_cache_stats st;
        CHECK_OK(memra__jit_stats(jit, &st));
        CHECK_INT_EQ(st.disk_entries, 1);
        memra__jit_destroy(jit);
    } else {
        TEST_FAIL_AT("unknown case %s", c);
    }
    printf("ok: %s\n", c);
    return 0;
}
