/* Loading code safely (issue 13), each attack a case:
 *   test_trust CASE [--unpriv] GOOD.so HOSTILE_DIR
 * GOOD.so is testgood.so, HOSTILE_DIR holds the hostile test modules.
 * --unpriv runs the case as a throw-away unprivileged uid (TRUST_UID, no
 * passwd entry needed): as root the test forks, drops to that uid with
 * setgroups/setgid/setuid and runs the case there; when not root it runs as
 * the current user. Where dropping is impossible it exits 77, never passes.
 *
 *   swap_race        a thread swaps the module with another file (mode 0666,
 *                    so the check refuses it; its constructor writes a marker)
 *                    by renameat2(RENAME_EXCHANGE) while the main thread loads
 *                    the module's path SWAP_ITERS times: the other file must
 *                    never run (no marker), and both outcomes must occur
 *   ww_grandparent   a folder two levels up writable by anyone: refused
 *   symlink_ww       a safe folder holding a symlink into a world-writable one
 *   other_owner      a module file of another non-root user (root), or one
 *                    that anyone may write (a user), refused
 *   fifo             x.so a FIFO: memra_open and memra_module_load return
 *                    within a second, the FIFO refused by name
 *   long_path        a folder and a file path longer than PATH_MAX
 *   records          10,000 load/unload cycles: record count and heap flat
 *   no_ops           no op table / an all-NULL table refused
 *   crash            constructor, entry and score crashers refused with the
 *                    signal and stage named, the good module loaded, the
 *                    process alive; the trial's cost per module measured
 *   hang             a score that never returns: refused after 5 s
 *   init             (issue 27) the modules of HOSTILE_DIR/../init beside a
 *                    good one and three more copies of the hanging one: init
 *                    that crashes, hangs or exit(3)s, an op that crashes in
 *                    the self-check, a module that behaves only when named
 *                    memra-trial, a forking constructor; each refused with
 *                    its stage and signal or status, the good one loaded,
 *                    the process alive, the four hangs costing one limit
 *                    (parallel trials), no forked process left; hot loads
 *                    get the same
 *   helper_missing   libmemra without its memra-trial: a module path module
 *                    refused with the reason; MEMRA_MODULE_TRIAL=0 loads it
 *   stale_name       a module that cannot be unloaded (-z nodelete) keeps its
 *                    /proc/self/fd/N name after its unload; the next module
 *                    opened under the same number must be itself, not it
 *   env_paths        relative MEMRA_CUDA_DRIVER / MEMRA_NVRTC_LIBRARY refused
 *                    with a message; an absolute one in a world-writable
 *                    folder refused */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memra/memra.h"
#include "test.h"

#define TRUST_UID 61234
#define OTHER_UID 61235
#define SWAP_ITERS 3000
#define RECORD_CYCLES 10000

static const char *g_good, *g_hostile;
static char g_tmp[256];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    chmod(path, 0700);
    remove(path);
    return 0;
}
static void cleanup(void)
{
    if (g_tmp[0]) nftw(g_tmp, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh folder of our own, 0755, removed at exit. */
static const char *tmpdir(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/memra-trust-XXXXXX");
    if (mkdtemp(g_tmp) == NULL) TEST_FAIL_AT("mkdtemp: %s", strerror(errno));
    chmod(g_tmp, 0755);
    atexit(cleanup);
    return g_tmp;
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    if (!a || !b) TEST_FAIL_AT("copy %s -> %s: %s", from, to, strerror(errno));
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) CHECK(fwrite(buf, 1, n, b) == n);
    fclose(a);
    CHECK(fclose(b) == 0);
    CHECK(chmod(to, mode) == 0);
}

static void mkdir_mode(const char *p, mode_t mode)
{
    if (mkdir(p, 0700) != 0) TEST_FAIL_AT("mkdir %s: %s", p, strerror(errno));
    CHECK(chmod(p, mode) == 0);
}

static memra_runtime *open_path(const char *module_path)
{
    memra_options o = {.struct_size = sizeof o, .module_path = module_path, .no_cuda = 1, .no_default_modules = 1};
    memra_runtime *rt = NULL;
    CHECK_OK(memra_open(&o, &rt));
    return rt;
}

/* The record whose path or name contains `needle`; its reason, and loaded. */
static int find(memra_runtime *rt, const char *needle, const char **reason)
{
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        CHECK_OK(memra_module_info_get(rt, i, &mi));
        if (strstr(mi.path, needle) || strcmp(mi.name, needle) == 0) {
            *reason = mi.reason;
            return mi.loaded ? 1 : 0;
        }
    }
    *reason = "(not seen)";
    return -1;
}

static char g_path_buf[4][PATH_MAX];
static const char *hostile(int slot, const char *name)
{
    snprintf(g_path_buf[slot], PATH_MAX, "%s/%s", g_hostile, name);
    return g_path_buf[slot];
}

/* ---- swap race --------------------------------------------------------------- */

static atomic_int g_stop;
static atomic_long g_swaps;
static char g_a[512], g_b[512];

static void *swapper(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        if (renameat2(AT_FDCWD, g_a, AT_FDCWD, g_b, RENAME_EXCHANGE) != 0)
            TEST_FAIL_AT("renameat2(RENAME_EXCHANGE): %s", strerror(errno));
        atomic_fetch_add(&g_swaps, 1);
        /* Bursts of 65 exchanges at full speed (the race), then a 1 ms pause.
         * 65 is odd, so the pauses alternate between the module and the other
         * file under the path: whole loads of each happen too. */
        if (atomic_load(&g_swaps) % 65 == 0) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static void case_swap_race(void)
{
    const char *dir = tmpdir();
    char marker[512];
    snprintf(marker, sizeof marker, "%s/marker", dir);
    snprintf(g_a, sizeof g_a, "%s/m.so", dir);
    snprintf(g_b, sizeof g_b, "%s/other.so", dir);
    copy_file(g_good, g_a, 0755);
    copy_file(hostile(0, "testevil.so"), g_b, 0755);
    CHECK(chmod(g_b, 0666) == 0); /* the check refuses it: writable by anyone */
    setenv("MEMRA_TEST_MARKER", marker, 1);
    memra_runtime *rt = open_path(NULL);
    /* Show first that the other file's constructor does write the marker when
     * it is loaded, so its absence below means something: load it once on
     * purpose (as an unsafe file allowed explicitly) in a throw-away process. */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        void *h = dlopen(g_b, RTLD_NOW | RTLD_LOCAL);
        _exit(h != NULL ? 0 : 3);
    }
    int ws = 0;
    CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    CHECK(access(marker, F_OK) == 0);
    CHECK(unlink(marker) == 0);

    for (int trial = 0; trial < 2; trial++) {
        /* Without the trial helper first (the in-process race, fast), then with it. */
        int iters = trial ? SWAP_ITERS / 10 : SWAP_ITERS;
        setenv("MEMRA_MODULE_TRIAL", trial ? "1" : "0", 1);
        memra_close(rt); /* the knob is read at memra_open */
        rt = open_path(NULL);
        atomic_store(&g_stop, 0);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, swapper, NULL) == 0);
        long loaded = 0, refused = 0;
        /* A fixed number of loads, extended (up to 5x) until both outcomes
         * were seen, so a scheduling streak cannot fail the test. */
        int i;
        for (i = 0; i < iters || ((loaded == 0 || refused == 0) && i < 5 * iters); i++) {
            memra_status st = memra_module_load(rt, g_a);
            if (st == MEMRA_STATUS_OK) {
                const char *w;
                if (find(rt, "testevil", &w) == 1)
                    TEST_FAIL_AT("load %d: the swapped-in file was loaded: the check and the load saw different files", i);
                loaded++;
                CHECK_OK(memra_module_unload(rt, "testgood"));
            } else if (st == MEMRA_STATUS_MODULE_ERROR || st == MEMRA_STATUS_NOT_FOUND) {
                if (refused++ == 0) printf("first refusal: %s\n", memra_last_error());
            } else {
                TEST_FAIL_AT("memra_module_load: %s: %s", memra_status_str(st), memra_last_error());
            }
            /* The other module's name never appears as loaded. */
            const char *why;
            CHECK(find(rt, "testevil", &why) != 1);
        }
        atomic_store(&g_stop, 1);
        pthread_join(th, NULL);
        printf("trial %s: %d loads: %ld loaded testgood, %ld refused, %ld swaps\n", trial ? "on" : "off", i,
               loaded, refused, atomic_load(&g_swaps));
        if (access(marker, F_OK) == 0) TEST_FAIL_AT("the swapped-in file's constructor ran: %s exists", marker);
        /* The race was live: both files sat under the path at some load. */
        CHECK(loaded > 0);
        CHECK(refused > 0);
    }
    memra_close(rt);
    unsetenv("MEMRA_MODULE_TRIAL");
}

/* ---- folder cases ------------------------------------------------------------------ */

static void case_ww_grandparent(void)
{
    const char *dir = tmpdir();
    char a[300], b[400], c[500], f[600];
    snprintf(a, sizeof a, "%s/open", dir);
    mkdir_mode(a, 0777); /* no sticky bit: anyone may rename what is inside */
    snprintf(b, sizeof b, "%s/safe", a);
    mkdir_mode(b, 0755);
    snprintf(c, sizeof c, "%s/mods", b);
    mkdir_mode(c, 0755);
    snprintf(f, sizeof f, "%s/testgood.so", c);
    copy_file(g_good, f, 0755);
    memra_runtime *rt = open_path(c);
    const char *why;
    CHECK(find(rt, c, &why) == 0);
    CHECK_STR_CONTAINS(why, "unsafe module folder");
    CHECK_STR_CONTAINS(why, a);
    CHECK_STR_CONTAINS(why, "writable by anyone");
    CHECK_STATUS(memra_module_load(rt, f), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "writable by anyone");
    memra_close(rt);
    /* The sticky bit on a root-owned folder (like /tmp) is what makes it safe;
     * on a folder of our own it is not enough (we are not root unless root). */
    CHECK(chmod(a, 01777) == 0);
    rt = open_path(c);
    if (geteuid() == 0) {
        CHECK(find(rt, "testgood", &why) == 1);
    } else {
        CHECK(find(rt, c, &why) == 0);
        CHECK_STR_CONTAINS(why, "writable by anyone");
    }
    memra_close(rt);
    /* ...unless asked explicitly. */
    CHECK(chmod(a, 0777) == 0);
    memra_options o = {.struct_size = sizeof o, .module_path = c, .no_cuda = 1, .no_default_modules = 1,
                       .allow_unsafe_modules = 1};
    CHECK_OK(memra_open(&o, &rt));
    CHECK(find(rt, "testgood", &why) == 1);
    memra_close(rt);
}

static void case_symlink_ww(void)
{
    const char *dir = tmpdir();
    char safe[512], ww[512], target[600], link[600];
    snprintf(safe, sizeof safe, "%s/safe", dir);
    snprintf(ww, sizeof ww, "%s/ww", dir);
    mkdir_mode(safe, 0755);
    mkdir_mode(ww, 0777);
    snprintf(target, sizeof target, "%s/testgood.so", ww);
    snprintf(link, sizeof link, "%s/link.so", safe);
    copy_file(g_good, target, 0755);
    CHECK(symlink(target, link) == 0);
    memra_runtime *rt = open_path(safe);
    const char *why;
    CHECK(find(rt, "testgood", &why) == 0); /* the record names the resolved file */
    CHECK_STR_CONTAINS(why, "unsafe file");
    CHECK_STR_CONTAINS(why, ww);
    CHECK_STR_CONTAINS(why, "writable by anyone");
    CHECK_STATUS(memra_module_load(rt, link), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "writable by anyone");
    memra_close(rt);
}

/* Owner rules. As root: a file owned by another non-root user is refused.
 * As a user: a file owned by root (the build tree's) is accepted, a copy of
 * our own that anyone may write is refused. */
static void case_other_owner(void)
{
    const char *dir = tmpdir();
    char f[512];
    snprintf(f, sizeof f, "%s/testgood.so", dir);
    copy_file(g_good, f, 0755);
    const char *why;
    memra_runtime *rt;
    if (geteuid() == 0) {
        CHECK(chown(f, OTHER_UID, OTHER_UID) == 0);
        rt = open_path(dir);
        CHECK(find(rt, "testgood", &why) == 0);
        CHECK_STR_CONTAINS(why, "neither root nor the current user");
    } else {
        struct stat st;
        CHECK(stat(g_good, &st) == 0);
        rt = open_path(NULL);
        if (st.st_uid == 0) CHECK_OK(memra_module_load(rt, g_good));
        memra_close(rt);
        CHECK(chmod(f, 0666) == 0);
        rt = open_path(dir);
        CHECK(find(rt, "testgood", &why) == 0);
        CHECK_STR_CONTAINS(why, "writable by anyone");
    }
    CHECK_STR_CONTAINS(why, "unsafe file");
    memra_close(rt);
}

/* ---- FIFOs, long paths ----------------------------------------------------------- */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: blocked on a FIFO for 5 s\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

static void case_fifo(void)
{
    const char *dir = tmpdir();
    char fifo[512], f[512];
    snprintf(fifo, sizeof fifo, "%s/x.so", dir);
    snprintf(f, sizeof f, "%s/testgood.so", dir);
    CHECK(mkfifo(fifo, 0644) == 0);
    copy_file(g_good, f, 0755);
    signal(SIGALRM, on_alarm);
    alarm(5);
    double t0 = now_ms();
    memra_runtime *rt = open_path(dir);
    double t_open = now_ms() - t0;
    const char *why;
    CHECK(find(rt, "x.so", &why) == 0);
    CHECK_STR_CONTAINS(why, "a FIFO");
    CHECK(find(rt, "testgood", &why) == 1);
    t0 = now_ms();
    CHECK_STATUS(memra_module_load(rt, fifo), MEMRA_STATUS_MODULE_ERROR);
    double t_load = now_ms() - t0;
    CHECK_STR_CONTAINS(memra_last_error(), "a FIFO");
    alarm(0);
    printf("memra_open %.1f ms, memra_module_load %.1f ms\n", t_open, t_load);
    CHECK(t_open < 1000.0);
    CHECK(t_load < 1000.0);
    memra_close(rt);
}

static void case_long_path(void)
{
    static char longp[PATH_MAX + 600];
    size_t n = 0;
    while (n < PATH_MAX + 100) n += (size_t)snprintf(longp + n, sizeof longp - n, "/%s", "aaaaaaaaaaaaaaa");
    memra_runtime *rt = open_path(longp);
    const char *why = NULL;
    int seen = 0;
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        CHECK_OK(memra_module_info_get(rt, i, &mi));
        if (strstr(mi.reason, "longer than PATH_MAX")) seen = 1, why = mi.reason;
    }
    CHECK(seen);
    printf("folder: %s\n", why);
    char file[sizeof longp + 16];
    snprintf(file, sizeof file, "%s/testgood.so", longp);
    CHECK_STATUS(memra_module_load(rt, file), MEMRA_STATUS_INVALID_ARGUMENT);
    CHECK_STR_CONTAINS(memra_last_error(), "longer than PATH_MAX");
    memra_close(rt);
}

/* ---- records ------------------------------------------------------------------- */

static void case_records(void)
{
    setenv("MEMRA_MODULE_TRIAL", "0", 1); /* the cycles test the registry, not the helper */
    memra_runtime *rt = open_path(NULL);
    int count0 = -1;
    size_t heap100 = 0;
    for (int i = 0; i < RECORD_CYCLES; i++) {
        CHECK_OK(memra_module_load(rt, g_good));
        CHECK_OK(memra_module_unload(rt, "testgood"));
        if (i == 0) count0 = memra_module_count(rt);
        else CHECK_INT_EQ(memra_module_count(rt), count0);
        if (i == 99) heap100 = mallinfo2().uordblks;
    }
    size_t heap_end = mallinfo2().uordblks;
    /* Refused hot loads keep one record per path too. */
    for (int i = 0; i < 1000; i++) CHECK_STATUS(memra_module_load(rt, hostile(0, "testnoops.so")), MEMRA_STATUS_MODULE_ERROR);
    CHECK_INT_EQ(memra_module_count(rt), count0 + 1);
    printf("%d cycles: %d records throughout; heap in use %zu bytes after 100, %zu after %d\n", RECORD_CYCLES, count0,
           heap100, heap_end, RECORD_CYCLES);
    /* Flat: less than 64 KiB of growth over 9,900 cycles (16 bytes a cycle would be 158 KiB). */
    CHECK(heap_end < heap100 + 65536);
    memra_close(rt);
    unsetenv("MEMRA_MODULE_TRIAL");
}

static void case_no_ops(void)
{
    memra_runtime *rt = open_path(NULL);
    CHECK_STATUS(memra_module_load(rt, hostile(0, "testnoops.so")), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "no op table");
    CHECK_STATUS(memra_module_load(rt, hostile(0, "testallnull.so")), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "provides no op");
    memra_close(rt);
}

/* ---- crashes, hangs, the helper -------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The knob is read at memra_open: each measurement opens a runtime of its own. */
static double median_load_ms(int trial)
{
    const char *set[] = {trial ? "MEMRA_MODULE_TRIAL=1" : "MEMRA_MODULE_TRIAL=0", NULL};
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1, .settings = set};
    memra_runtime *rt = NULL;
    CHECK_OK(memra_open(&o, &rt));
    double t[21];
    for (int i = 0; i < 21; i++) {
        double t0 = now_ms();
        CHECK_OK(memra_module_load(rt, g_good));
        t[i] = now_ms() - t0;
        CHECK_OK(memra_module_unload(rt, "testgood"));
    }
    qsort(t, 21, sizeof t[0], cmp_d);
    memra_close(rt);
    return t[10];
}

static void case_crash(void)
{
    /* The lowest descriptors free, so memra's own (the module's, the helper's)
     * land on 3 and 4, the numbers the helper is handed its files under. */
    for (int fd = 3; fd < 10; fd++) close(fd);
    /* Whatever numbers memra's own descriptors get (shifted here by 0..5
     * descriptors held open, in a runtime holding none of its own), the
     * helper runs and the good module loads. */
    memra_runtime *rt0 = open_path(NULL);
    for (int k = 0; k < 6; k++) {
        int extra[6];
        for (int j = 0; j < k; j++) CHECK((extra[j] = dup(0)) >= 0);
        CHECK_OK(memra_module_load(rt0, g_good));
        CHECK_OK(memra_module_unload(rt0, "testgood"));
        for (int j = 0; j < k; j++) close(extra[j]);
    }
    memra_close(rt0);
    /* The crashers in a folder of their own, beside a good module. */
    const char *dir = tmpdir();
    const char *names[] = {"testcrashctor.so", "testcrashentry.so", "testcrashscore.so"};
    const char *stages[] = {"crashed in constructor: SIGSEGV", "crashed in entry: SIGSEGV", "crashed in score: SIGSEGV"};
    char p[600];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        copy_file(hostile(0, names[i]), p, 0755);
    }
    snprintf(p, sizeof p, "%s/testgood.so", dir);
    copy_file(g_good, p, 0755);
    memra_runtime *rt = open_path(dir);
    const char *why;
    for (int i = 0; i < 3; i++) {
        CHECK(find(rt, names[i], &why) == 0);
        printf("%s: %s\n", names[i], why);
        CHECK_STR_CONTAINS(why, stages[i]);
    }
    CHECK(find(rt, "testgood", &why) == 1);
    CHECK_OK(memra_module_unload(rt, "testgood"));
    /* Hot-add gets the same containment. */
    CHECK_STATUS(memra_module_load(rt, hostile(0, "testcrashscore.so")), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "crashed in score: SIGSEGV");
    /* The cost of a trial: median of 21 hot loads with and without. */
    double with = median_load_ms(1), without = median_load_ms(0);
    printf("hot load of testgood: %.2f ms with the trial, %.2f ms without: %.2f ms per module\n", with, without,
           with - without);
    CHECK(with > without); /* the trial ran: a process was started */
    CHECK(with - without < 50.0);
    memra_close(rt);
}

static void case_hang(void)
{
    const char *dir = tmpdir();
    char p[600];
    snprintf(p, sizeof p, "%s/testhangscore.so", dir);
    copy_file(hostile(0, "testhangscore.so"), p, 0755);
    double t0 = now_ms();
    memra_runtime *rt = open_path(dir);
    double ms = now_ms() - t0;
    const char *why;
    CHECK(find(rt, "testhangscore", &why) == 0);
    printf("%.0f ms: %s\n", ms, why);
    CHECK_STR_CONTAINS(why, "trial timed out after 5 s");
    CHECK_STR_CONTAINS(why, "score");
    CHECK(ms >= 4900.0 && ms < 8000.0);
    memra_close(rt);
}

static void case_init(void)
{
    setenv("MEMRA_TRIAL_TIMEOUT_MS", "2000", 1);
    const char *dir = tmpdir();
    char src[600], p[600], marker[600];
    snprintf(marker, sizeof marker, "%s/fork.pid", dir);
    setenv("MEMRA_TEST_MARKER", marker, 1);
    const char *names[] = {"testcrashinit", "testcrashop", "testhanginit", "testexitinit", "testsneaky", "testforkctor"};
    const char *want[] = {"crashed in init on host: SIGSEGV", "crashed in self-check scale case 1 on host: SIGSEGV",
                          "trial timed out after 2 s (in init on host)", "exited with status 3 in init on host",
                          "crashed in init on host: SIGSEGV", "left a process running"};
    for (int i = 0; i < 6; i++) {
        snprintf(src, sizeof src, "%s/../init/%s.so", g_hostile, names[i]);
        snprintf(p, sizeof p, "%s/%s.so", dir, names[i]);
        copy_file(src, p, 0755);
    }
    for (int k = 2; k <= 4; k++) { /* more hangs: parallel trials cost one limit for all */
        snprintf(src, sizeof src, "%s/../init/testhanginit.so", g_hostile);
        snprintf(p, sizeof p, "%s/testhanginit%d.so", dir, k);
        copy_file(src, p, 0755);
    }
    snprintf(p, sizeof p, "%s/testgood.so", dir);
    copy_file(g_good, p, 0755);
    double t0 = now_ms();
    memra_runtime *rt = open_path(dir);
    double ms = now_ms() - t0;
    printf("memra_open with 9 hostile modules: %.0f ms\n", ms);
    const char *why;
    for (int i = 0; i < 6; i++) {
        snprintf(p, sizeof p, "%s.so", names[i]);
        CHECK(find(rt, p, &why) == 0);
        printf("%s: %s\n", names[i], why);
        CHECK_STR_CONTAINS(why, want[i]);
    }
    for (int k = 2; k <= 4; k++) {
        snprintf(p, sizeof p, "testhanginit%d.so", k);
        CHECK(find(rt, p, &why) == 0);
        CHECK_STR_CONTAINS(why, "trial timed out after 2 s (in init on host)");
    }
    CHECK(find(rt, "testgood", &why) == 1);
    /* four hangs of 2 s each, one after another, would take 8 s */
    CHECK(ms >= 1900.0 && ms < 6000.0);
    /* hot loads: the same containment */
    snprintf(p, sizeof p, "%s/testcrashop.so", dir);
    CHECK_STATUS(memra_module_load(rt, p), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "crashed in self-check scale case 1 on host: SIGSEGV");
    snprintf(p, sizeof p, "%s/testexitinit.so", dir);
    CHECK_STATUS(memra_module_load(rt, p), MEMRA_STATUS_MODULE_ERROR);
    CHECK_STR_CONTAINS(memra_last_error(), "exited with status 3 in init on host");
    memra_close(rt);
    /* the forked child was killed with the helper's group (if it got as far
     * as writing its pid, that pid must be gone) */
    FILE *f = fopen(marker, "r");
    if (f != NULL) {
        int pid = 0;
        CHECK(fscanf(f, "%d", &pid) == 1 && pid > 0);
        fclose(f);
        int gone = 0;
        for (int i = 0; i < 100 && !gone; i++) {
            gone = kill(pid, 0) != 0 && errno == ESRCH;
            if (!gone) usleep(10000);
        }
        printf("forked child %d %s\n", pid, gone ? "gone" : "still running");
        CHECK(gone);
    }
    unsetenv("MEMRA_TEST_MARKER");
    unsetenv("MEMRA_TRIAL_TIMEOUT_MS");
}

static void case_helper_missing(int argc, char **argv)
{
    if (argc > 0 && strcmp(argv[0], "--child") == 0) {
        Dl_info info;
        CHECK(dladdr((void *)(uintptr_t)&memra_open, &info) != 0);
        if (strncmp(info.dli_fname, "/tmp/memra-trust-", 17) != 0)
            TEST_SKIP("the copied libmemra was not picked (loaded %s): RPATH wins over LD_LIBRARY_PATH here",
                      info.dli_fname);
        char dir[512];
        snprintf(dir, sizeof dir, "%s", argv[1]);
        memra_runtime *rt = open_path(dir);
        const char *why;
        CHECK(find(rt, "testgood", &why) == 0);
        printf("without the helper: %s\n", why);
        CHECK_STR_CONTAINS(why, "trial helper unusable");
        CHECK_STR_CONTAINS(why, "memra-trial");
        memra_close(rt);
        setenv("MEMRA_MODULE_TRIAL", "0", 1);
        rt = open_path(dir);
        CHECK(find(rt, "testgood", &why) == 1);
        memra_close(rt);
        exit(0);
    }
    Dl_info info;
    CHECK(dladdr((void *)(uintptr_t)&memra_open, &info) != 0);
    char real[PATH_MAX];
    CHECK(realpath(info.dli_fname, real) != NULL);
    const char *dir = tmpdir();
    char lib[512], mods[512], so[700], soname[700];
    snprintf(lib, sizeof lib, "%s/lib", dir);
    snprintf(mods, sizeof mods, "%s/mods", dir);
    mkdir_mode(lib, 0755);
    mkdir_mode(mods, 0755);
    const char *base = strrchr(real, '/') + 1;
    snprintf(so, sizeof so, "%s/%s", lib, base);
    copy_file(real, so, 0755);
    snprintf(soname, sizeof soname, "%s/libmemra.so.%d", lib, MEMRA_VERSION_MAJOR);
    if (strcmp(so, soname) != 0) CHECK(symlink(so, soname) == 0);
    snprintf(so, sizeof so, "%s/testgood.so", mods);
    copy_file(g_good, so, 0755);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("LD_LIBRARY_PATH", lib, 1);
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) _exit(2);
        self[n] = '\0';
        execl(self, self, "helper_missing", "--child", mods, g_good, g_hostile, (char *)NULL);
        _exit(2);
    }
    int ws = 0;
    CHECK(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws));
    if (WEXITSTATUS(ws) == TEST_SKIP_CODE) exit(TEST_SKIP_CODE);
    CHECK_INT_EQ(WEXITSTATUS(ws), 0);
}

static void case_stale_name(void)
{
    setenv("MEMRA_MODULE_TRIAL", "0", 1); /* the same descriptor numbers each time */
    const char *dir = tmpdir();
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/a.so", dir);
    snprintf(b, sizeof b, "%s/b.so", dir);
    copy_file(hostile(0, "testnodelete.so"), a, 0755);
    copy_file(g_good, b, 0755);
    memra_runtime *rt = open_path(NULL);
    CHECK_OK(memra_module_load(rt, a));
    CHECK_OK(memra_module_unload(rt, "testnodelete")); /* closed, still mapped */
    CHECK_OK(memra_module_load(rt, b));
    const char *why;
    CHECK(find(rt, "testgood", &why) == 1);
    CHECK(find(rt, b, &why) == 1);
    float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    memra_op_args oa = {.struct_size = sizeof oa, .src = (memra_dptr)(uintptr_t)v, .n = 8, .s = 2.0f};
    CHECK_OK(memra_module_call(memra_device_host(rt), "testgood", MEMRA_OP_scale, &oa));
    CHECK(v[7] == 16.0f);
    memra_close(rt);
    unsetenv("MEMRA_MODULE_TRIAL");
}

static void case_env_paths(void)
{
    /* The driver is read once per process: each variable in a child of its own. */
    const char *dir = tmpdir();
    char ww[512], f[600];
    snprintf(ww, sizeof ww, "%s/ww", dir);
    mkdir_mode(ww, 0777);
    snprintf(f, sizeof f, "%s/libcuda.so.1", ww);
    copy_file(g_good, f, 0755);
    const char *values[] = {"libcuda.so.1", f};
    const char *want[] = {"relative path", "writable by anyone"};
    for (int i = 0; i < 2; i++) {
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            setenv("MEMRA_CUDA_DRIVER", values[i], 1);
            memra_options o = {.struct_size = sizeof o, .no_default_modules = 1};
            memra_runtime *rt = NULL;
            CHECK_OK(memra_open(&o, &rt));
            printf("MEMRA_CUDA_DRIVER=%s: %s\n", values[i], memra_driver_status(rt));
            CHECK_STR_CONTAINS(memra_driver_status(rt), want[i]);
            memra_close(rt);
            setenv("MEMRA_NVRTC_LIBRARY", i == 0 ? "libnvrtc.so.13" : f, 1);
            CHECK_OK(memra_open(&o, &rt));
            memra_jit_info ji;
            CHECK_OK(memra_jit_info_get(rt, &ji));
            printf("MEMRA_NVRTC_LIBRARY: available %d: %s\n", ji.available, ji.why);
            CHECK_INT_EQ(ji.available, 0);
            CHECK_STR_CONTAINS(ji.why, want[i]);
            memra_close(rt);
            fflush(stdout);
            _exit(0); /* not exit: the parent's folder is removed by its own atexit */
        }
        int ws = 0;
        CHECK(waitpid(pid, &ws, 0) == pid);
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
}

/* ---- main ------------------------------------------------------------------------ */

static void run_case(const char *c, int argc, char **argv)
{
    if (strcmp(c, "swap_race") == 0) case_swap_race();
    else if (strcmp(c, "ww_grandparent") == 0) case_ww_grandparent();
    else if (strcmp(c, "symlink_ww") == 0) case_symlink_ww();
    else if (strcmp(c, "other_owner") == 0) case_other_owner();
    else if (strcmp(c, "fifo") == 0) case_fifo();
    else if (strcmp(c, "long_path") == 0) case_long_path();
    else if (strcmp(c, "records") == 0) case_records();
    else if (strcmp(c, "no_ops") == 0) case_no_ops();
    else if (strcmp(c, "crash") == 0) case_crash();
    else if (strcmp(c, "hang") == 0) case_hang();
    else if (strcmp(c, "init") == 0) case_init();
    else if (strcmp(c, "helper_missing") == 0) case_helper_missing(argc, argv);
    else if (strcmp(c, "env_paths") == 0) case_env_paths();
    else if (strcmp(c, "stale_name") == 0) case_stale_name();
    else TEST_FAIL_AT("unknown case %s", c);
}

int main(int argc, char **argv)
{
    if (argc < 4) TEST_FAIL_AT("usage: test_trust CASE [--unpriv] GOOD.so HOSTILE_DIR");
    const char *c = argv[1];
    if (strcmp(c, "helper_missing") == 0 && strcmp(argv[2], "--child") == 0) {
        g_good = argv[4];
        g_hostile = argv[5];
        run_case(c, argc - 2, argv + 2);
        return 0;
    }
    int unpriv = strcmp(argv[2], "--unpriv") == 0;
    g_good = argv[2 + unpriv];
    g_hostile = argv[3 + unpriv];
    if (unpriv && geteuid() == 0) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) TEST_FAIL_AT("fork: %s", strerror(errno));
        if (pid == 0) {
            if (setgroups(0, NULL) != 0 || setgid(TRUST_UID) != 0 || setuid(TRUST_UID) != 0)
                TEST_SKIP("cannot drop to uid %d: %s", TRUST_UID, strerror(errno));
            if (access(g_good, R_OK) != 0) TEST_SKIP("uid %d cannot read %s", TRUST_UID, g_good);
            printf("running as uid %u\n", (unsigned)geteuid());
            run_case(c, 0, NULL);
            printf("ok (uid %u)\n", (unsigned)geteuid());
            exit(0);
        }
        int ws = 0;
        if (waitpid(pid, &ws, 0) != pid) TEST_FAIL_AT("waitpid: %s", strerror(errno));
        if (WIFSIGNALED(ws)) TEST_FAIL_AT("the unprivileged half died by signal %d", WTERMSIG(ws));
        return WEXITSTATUS(ws);
    }
    run_case(c, 0, NULL);
    printf("ok (uid %u)\n", (unsigned)geteuid());
    return 0;
}
