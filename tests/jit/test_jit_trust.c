/* A cache only its owner can write (issue 13). Usage: test_jit_trust CASE
 *   forged_root_ww     a valid entry in a cache whose root anyone may write:
 *                      the cache is off with the reason, the entry never read
 *   forged_vdir_ww     the same with the version folder writable by others
 *   forged_owner       a valid entry owned by another user (root only: as a
 *                      user such a file cannot be made): refused and dropped
 *   forged_unpriv      a cache (root, v1, a valid entry) owned by root, read
 *                      by a throw-away unprivileged uid: refused ("belongs to
 *                      uid 0"); 77 when not root
 *   recheck            a folder made unsafe after the first use is refused at
 *                      the next read by the same object (checked at each open)
 *   fifo_entry         <key>.cubin a FIFO: read, list and lock return within a
 *                      second; a compile (when NVRTC is here) too
 *   clear_symlink      a symlinked version folder and a symlinked entry: clear
 *                      removes neither the targets nor anything outside
 * Valid entries are written by memra__jit_disk_write itself: the key and the
 * checksum come from public inputs, which is exactly what a forger has. */
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "jit_test.h"

#define TRUST_UID 61234
#define OTHER_UID 61235

static const char *g_dir;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void fresh_key(uint8_t key[32], int tag)
{
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)(tag * 31 + i * 7 + (int)(time(NULL) & 0xff));
}

static const uint8_t k_payload[55] = "not a cubin: an attacker's 55 bytes, checksummed fine";

/* A disk object on MEMRA_CACHE_DIR (= root), prepared. */
static memra__jit_disk open_disk(const char *root)
{
    setenv("MEMRA_CACHE_DIR", root, 1);
    memra__jit_disk d;
    memra__jit_disk_init(&d);
    memra__jit_disk_prepare(&d);
    return d;
}

/* Write a valid entry for key under root (the folders safe while writing). */
static void plant(const char *root, const uint8_t key[32])
{
    memra__jit_disk d = open_disk(root);
    CHECK_INT_EQ(d.enabled, 1);
    CHECK_OK(memra__jit_disk_write(&d, key, "sm_90a", k_payload, sizeof k_payload));
    void *p = NULL;
    size_t n = 0;
    CHECK_OK(memra__jit_disk_read(&d, key, "sm_90a", &p, &n)); /* it is valid */
    CHECK_INT_EQ(n, sizeof k_payload);
    free(p);
}

static void expect_refused(const char *root, const uint8_t key[32], const char *reason)
{
    memra__jit_disk d = open_disk(root);
    char why[1024];
    int ok = memra__jit_disk_status(&d, why, sizeof why);
    printf("status: %d: %s\n", ok, why);
    CHECK_INT_EQ(ok, 0);
    CHECK_STR_CONTAINS(why, reason);
    CHECK_INT_EQ(d.enabled, 0);
    /* Even called directly, the read refuses: the folders are checked at the open. */
    void *p = NULL;
    size_t n = 0;
    memra_status st = memra__jit_disk_read(&d, key, "sm_90a", &p, &n);
    printf("read: %s: %s\n", memra_status_str(st), memra_last_error());
    CHECK(st != MEMRA_STATUS_OK);
    memra__jit_entry *e = NULL;
    size_t cnt = 0;
    CHECK(memra__jit_disk_list(&d, &e, &cnt) != MEMRA_STATUS_OK || cnt == 0);
    free(e);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: blocked on a FIFO\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_jit_trust CASE");
    const char *c = argv[1];
    g_dir = jit_test_cache_dir();
    chmod(g_dir, 0755);
    char root[700], vdir[800], p[1000];
    snprintf(root, sizeof root, "%s/cache", g_dir);
    snprintf(vdir, sizeof vdir, "%s/v%u", root, MEMRA__JIT_FORMAT_VERSION);
    uint8_t key[32];
    fresh_key(key, 1);
    char hex[65];
    memra__hex(key, 32, hex);
    snprintf(p, sizeof p, "%s/%s.cubin", vdir, hex);

    if (strcmp(c, "forged_root_ww") == 0) {
        plant(root, key);
        CHECK(chmod(root, 0777) == 0);
        expect_refused(root, key, "writable by others");
        CHECK(jit_test_exists(p)); /* nothing is removed from an untrusted folder */
    } else if (strcmp(c, "forged_vdir_ww") == 0) {
        plant(root, key);
        CHECK(chmod(vdir, 0777) == 0);
        expect_refused(root, key, "writable by others");
        CHECK(chmod(vdir, 0700) == 0);
        CHECK(chmod(root, 0770) == 0);
        expect_refused(root, key, "writable by its group");
    } else if (strcmp(c, "forged_owner") == 0) {
        if (geteuid() != 0) TEST_SKIP("a file of another user can only be made as root");
        plant(root, key);
        CHECK(chown(p, OTHER_UID, OTHER_UID) == 0);
        memra__jit_disk d = open_disk(root);
        CHECK_INT_EQ(d.enabled, 1);
        memra__jit_entry *e = NULL;
        size_t cnt = 0;
        CHECK_OK(memra__jit_disk_list(&d, &e, &cnt));
        CHECK_INT_EQ(cnt, 1);
        CHECK_INT_EQ(e[0].header_ok, 0); /* listed, its header not read */
        free(e);
        void *pl = NULL;
        size_t n = 0;
        CHECK_STATUS(memra__jit_disk_read(&d, key, "sm_90a", &pl, &n), MEMRA_STATUS_CORRUPT);
        CHECK(!jit_test_exists(p)); /* dropped, to be rebuilt */
        /* Group-writable entry of our own: refused too. */
        plant(root, key);
        CHECK(chmod(p, 0664) == 0);
        CHECK_STATUS(memra__jit_disk_read(&d, key, "sm_90a", &pl, &n), MEMRA_STATUS_CORRUPT);
    } else if (strcmp(c, "forged_unpriv") == 0) {
        if (geteuid() != 0) TEST_SKIP("needs root to make a cache of another owner for the unprivileged half");
        plant(root, key);
        CHECK(chmod(root, 0755) == 0 && chmod(vdir, 0755) == 0 && chmod(p, 0644) == 0);
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            if (setgroups(0, NULL) != 0 || setgid(TRUST_UID) != 0 || setuid(TRUST_UID) != 0) _exit(TEST_SKIP_CODE);
            printf("running as uid %u\n", (unsigned)geteuid());
            expect_refused(root, key, "belongs to uid 0");
            fflush(stdout);
            _exit(0);
        }
        int ws = 0;
        CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws));
        if (WEXITSTATUS(ws) == TEST_SKIP_CODE) TEST_SKIP("cannot drop to uid %d", TRUST_UID);
        CHECK_INT_EQ(WEXITSTATUS(ws), 0);
    } else if (strcmp(c, "recheck") == 0) {
        plant(root, key);
        memra__jit_disk d = open_disk(root);
        CHECK_INT_EQ(d.enabled, 1);
        void *pl = NULL;
        size_t n = 0;
        CHECK_OK(memra__jit_disk_read(&d, key, "sm_90a", &pl, &n));
        free(pl);
        CHECK(chmod(vdir, 0777) == 0); /* after the object checked it once */
        CHECK(memra__jit_disk_read(&d, key, "sm_90a", &pl, &n) != MEMRA_STATUS_OK);
        CHECK_STR_CONTAINS(memra_last_error(), "writable by others");
        CHECK(memra__jit_disk_write(&d, key, "sm_90a", k_payload, sizeof k_payload) != MEMRA_STATUS_OK);
        char why[1024];
        CHECK_INT_EQ(memra__jit_disk_status(&d, why, sizeof why), 0);
        CHECK_STR_CONTAINS(why, "writable by others");
    } else if (strcmp(c, "fifo_entry") == 0) {
        memra__jit_disk d = open_disk(root);
        CHECK_INT_EQ(d.enabled, 1);
        CHECK(mkfifo(p, 0600) == 0);
        signal(SIGALRM, on_alarm);
        alarm(5);
        double t0 = now_ms();
        void *pl = NULL;
        size_t n = 0;
        CHECK_STATUS(memra__jit_disk_read(&d, key, "sm_90a", &pl, &n), MEMRA_STATUS_CORRUPT);
        double t_read = now_ms() - t0;
        CHECK(!jit_test_exists(p)); /* dropped */
        CHECK(mkfifo(p, 0600) == 0);
        t0 = now_ms();
        memra__jit_entry *e = NULL;
        size_t cnt = 0;
        CHECK_OK(memra__jit_disk_list(&d, &e, &cnt));
        double t_list = now_ms() - t0;
        CHECK_INT_EQ(cnt, 1);
        CHECK_INT_EQ(e[0].header_ok, 0);
        free(e);
        char lock[1000];
        snprintf(lock, sizeof lock, "%s/%s.lock", vdir, hex);
        CHECK(mkfifo(lock, 0600) == 0);
        t0 = now_ms();
        int fd = memra__jit_disk_lock(&d, key);
        double t_lock = now_ms() - t0;
        CHECK_INT_EQ(fd, -1); /* no lock on a FIFO; the caller goes on without */
        alarm(0);
        printf("read %.2f ms, list %.2f ms, lock %.2f ms\n", t_read, t_list, t_lock);
        CHECK(t_read < 1000.0 && t_list < 1000.0 && t_lock < 1000.0);
        /* A compile whose entry is a FIFO: the same path through memra__jit_compile. */
        memra__jit *jit = NULL;
        CHECK_OK(memra__jit_create(&jit));
        int major = 0, minor = 0;
        if (memra__jit_nvrtc_version(jit, &major, &minor) == MEMRA_STATUS_OK) {
            unlink(lock);
            memra__jit_result r;
            t0 = now_ms();
            CHECK_OK(memra__jit_compile(jit, "scale", jit_test_src_scale, NULL, 0, "sm_90a", 0, &r));
            double first = now_ms() - t0;
            char fp[1000];
            memra__hex(r.key, 32, hex);
            snprintf(fp, sizeof fp, "%s/%s.cubin", vdir, hex);
            CHECK(unlink(fp) == 0);
            CHECK(mkfifo(fp, 0600) == 0);
            memra__jit_destroy(jit);
            CHECK_OK(memra__jit_create(&jit));
            alarm(60);
            t0 = now_ms();
            CHECK_OK(memra__jit_compile(jit, "scale", jit_test_src_scale, NULL, 0, "sm_90a", 0, &r));
            double second = now_ms() - t0;
            alarm(0);
            printf("compile %.1f ms, again over a FIFO entry %.1f ms (%s)\n", first, second,
                   memra__jit_origin_str(r.origin));
            CHECK_INT_EQ(r.origin, MEMRA__JIT_ORIGIN_NVRTC);
            CHECK(second < first + 1000.0); /* the FIFO cost nothing like a second */
        } else {
            printf("  (no NVRTC: the compile half not exercised)\n");
        }
        memra__jit_destroy(jit);
    } else if (strcmp(c, "clear_symlink") == 0) {
        char outside[800], victim[1000], target[1000], link[1000];
        snprintf(outside, sizeof outside, "%s/outside", g_dir);
        CHECK(mkdir(outside, 0700) == 0);
        snprintf(victim, sizeof victim, "%s/%s.cubin", outside, hex);
        jit_test_write_file(victim, "keep me", 7);
        CHECK(mkdir(root, 0700) == 0);
        /* v1 is a symbolic link to a folder outside the cache */
        CHECK(symlink(outside, vdir) == 0);
        memra__jit_disk d = open_disk(root);
        size_t removed = 99;
        CHECK_OK(memra__jit_disk_clear(&d, &removed));
        CHECK_INT_EQ(removed, 0);
        CHECK(jit_test_exists(victim));
        /* a real v1 holding an entry name that links outside: the link goes, not its target */
        CHECK(unlink(vdir) == 0);
        d = open_disk(root);
        CHECK_INT_EQ(d.enabled, 1);
        snprintf(target, sizeof target, "%s/target.cubin", outside);
        jit_test_write_file(target, "keep me too", 11);
        fresh_key(key, 2);
        memra__hex(key, 32, hex);
        snprintf(link, sizeof link, "%s/%s.cubin", vdir, hex);
        CHECK(symlink(target, link) == 0);
        CHECK_OK(memra__jit_disk_clear(&d, &removed));
        CHECK(!jit_test_exists(link));
        CHECK(jit_test_exists(target));
        CHECK(jit_test_exists(victim));
        /* eviction never follows it either */
        CHECK(mkdir(vdir, 0700) == 0 || errno == EEXIST);
        CHECK(symlink(target, link) == 0);
        d.max_bytes = 1;
        memra__jit_disk_evict(&d, NULL);
        CHECK(jit_test_exists(target));
    } else {
        TEST_FAIL_AT("unknown case %s", c);
    }
    printf("ok\n");
    return 0;
}
