/* Contained trial loads: before a module is dlopen'ed into this process, the
 * memra-trial helper (core/trial_helper.c) loads the same descriptor, runs
 * its constructors, its entry point and score on every device, and reports
 * line by line over a pipe. A trial that dies by a signal, exits oddly or
 * runs past TRIAL_TIMEOUT_S refuses the module with the stage named; this
 * process never ran a byte of it.
 *
 * The helper lives beside libmemra: <dir of libmemra>/memra/memra-trial, in
 * the build tree and in an install alike. It is started with posix_spawn
 * (a fork of a threaded process is not safe), through /proc/self/fd of a
 * checked descriptor, with an empty signal mask and default dispositions. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/trial.h"

#include "base/config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "core/runtime.h"
#include "base/trust.h"

#define TRIAL_TIMEOUT_S 5
#define HELPER_NAME "memra-trial"

extern char **environ;

int memra__trial_enabled(void)
{
    const char *s = memra__env("MEMRA_MODULE_TRIAL");
    return !(s != NULL && strcmp(s, "0") == 0);
}

int memra__trial_helper_path(char *buf, size_t len)
{
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&memra_open, &info) == 0 || info.dli_fname == NULL) return 0;
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real) == NULL) return 0;
    char *slash = strrchr(real, '/');
    if (slash == NULL) return 0;
    *slash = '\0';
    int n = snprintf(buf, len, "%s/memra/%s", real, HELPER_NAME);
    return n > 0 && (size_t)n < len;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *sig_name(int sig, char *buf, size_t len)
{
    static const struct {
        int sig;
        const char *name;
    } k[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGILL, "SIGILL"}, {SIGFPE, "SIGFPE"},
             {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGKILL, "SIGKILL"},
             {SIGTERM, "SIGTERM"}, {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i].sig == sig) return k[i].name;
    snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* One device's caps as the helper's four arguments. */
static void caps_args(const memra_device_caps *c, char *num, size_t len)
{
    snprintf(num, len, "%d,%d,%d,%d,%llu,%d,%llu,%llu,%d", (int)c->arch, c->ordinal, c->cc, c->sm_count,
             (unsigned long long)c->total_mem, c->driver_version, (unsigned long long)c->caps,
             (unsigned long long)c->smem_per_block_optin, c->cu_device);
}

typedef struct report {
    char stage[48];   /* the last "stage" line */
    int done, error, signal;
} report;

static void parse_lines(report *rp, char *buf, size_t *used)
{
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', (size_t)(buf + *used - start))) != NULL) {
        *nl = '\0';
        if (strncmp(start, "stage ", 6) == 0) {
            snprintf(rp->stage, sizeof rp->stage, "%s", start + 6);
            /* "score 0" -> "score" in messages; the device comes separately */
            char *sp = strchr(rp->stage, ' ');
            if (sp != NULL) *sp = '\0';
        } else if (strcmp(start, "done") == 0) {
            rp->done = 1;
        } else if (strncmp(start, "error ", 6) == 0) {
            rp->error = 1;
        } else if (strncmp(start, "signal ", 7) == 0) {
            rp->signal = atoi(start + 7);
        }
        start = nl + 1;
    }
    size_t rest = (size_t)(buf + *used - start);
    memmove(buf, start, rest);
    *used = rest;
}

memra_status memra__trial_run(const memra_runtime *rt, int module_fd, const char *shown, char *why, size_t why_len,
                              double *out_ms)
{
    double t0 = now_ms();
    char helper[PATH_MAX], real[PATH_MAX], inner[PATH_MAX + 128];
    if (!memra__trial_helper_path(helper, sizeof helper)) {
        snprintf(why, why_len, "trial load impossible: libmemra cannot find its own folder to locate %s", HELPER_NAME);
        return MEMRA_STATUS_MODULE_ERROR;
    }
    int hfd = memra__trust_open(helper, 0, real, sizeof real, inner, sizeof inner);
    if (hfd < 0) {
        snprintf(why, why_len,
                 "trial helper unusable, module not loaded: %s (it is installed beside libmemra; "
                 "MEMRA_MODULE_TRIAL=0 loads modules without a trial)",
                 inner);
        return MEMRA_STATUS_MODULE_ERROR;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(why, why_len, "trial load: pipe: %s", strerror(errno));
        close(hfd);
        return MEMRA_STATUS_MODULE_ERROR;
    }
    /* Every descriptor the child uses above 10, so the dup2 onto 3 and 4
     * neither meets itself nor replaces the helper's own descriptor, which
     * the exec names. */
    int mfd = fcntl(module_fd, F_DUPFD_CLOEXEC, 10);
    int wfd = fcntl(pfd[1], F_DUPFD_CLOEXEC, 10);
    int xfd = fcntl(hfd, F_DUPFD_CLOEXEC, 10);
    close(pfd[1]);
    close(hfd);
    hfd = xfd;
    char exe[64];
    snprintf(exe, sizeof exe, "/proc/self/fd/%d", hfd);

    int n = rt->n_devices;
    char nums[MEMRA__MAX_DEVICES][160], count[16];
    char *argv[3 + 4 * MEMRA__MAX_DEVICES + 1];
    int a = 0;
    argv[a++] = (char *)HELPER_NAME;
    argv[a++] = (char *)"1";
    snprintf(count, sizeof count, "%d", n);
    argv[a++] = count;
    for (int d = 0; d < n; d++) {
        const memra_device_caps *c = &rt->devices[d]->caps;
        caps_args(c, nums[d], sizeof nums[d]);
        argv[a++] = nums[d];
        argv[a++] = (char *)(c->profile ? c->profile : "");
        argv[a++] = (char *)(c->name ? c->name : "");
        argv[a++] = (char *)(c->jit_target ? c->jit_target : "-");
    }
    argv[a] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, mfd, 3);
    posix_spawn_file_actions_adddup2(&fa, wfd, 4);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int se = mfd < 0 || wfd < 0 || hfd < 0 ? EMFILE : posix_spawn(&pid, exe, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (mfd >= 0) close(mfd);
    if (wfd >= 0) close(wfd);
    if (hfd >= 0) close(hfd);
    if (se != 0) {
        close(pfd[0]);
        snprintf(why, why_len, "trial helper %s could not be started: %s; module not loaded", real, strerror(se));
        return MEMRA_STATUS_MODULE_ERROR;
    }

    report rp = {.stage = "start"};
    char buf[1024];
    size_t used = 0;
    double deadline = t0 + TRIAL_TIMEOUT_S * 1000.0;
    int eof = 0, timed_out = 0, status = 0, reaped = 0;
    while (!eof) {
        int left = (int)(deadline - now_ms());
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&p, 1, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        if (used == sizeof buf) used = 0; /* a line this long is not ours */
        ssize_t r = read(pfd[0], buf + used, sizeof buf - used);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            eof = 1;
            break;
        }
        used += (size_t)r;
        parse_lines(&rp, buf, &used);
    }
    close(pfd[0]);
    /* The pipe closed (or time ran out): the child exits, or is killed. */
    while (!timed_out) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            reaped = 1;
            break;
        }
        if (w < 0 && errno != EINTR) break; /* ECHILD: SIGCHLD ignored by the application */
        if (now_ms() >= deadline) {
            timed_out = 1;
            break;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (timed_out) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        snprintf(why, why_len, "trial timed out after %d s (in %s); module not loaded", TRIAL_TIMEOUT_S, rp.stage);
        return MEMRA_STATUS_MODULE_ERROR;
    }
    if (out_ms != NULL) *out_ms = now_ms() - t0;
    char sb[24];
    int sig = rp.signal ? rp.signal : (reaped && WIFSIGNALED(status)) ? WTERMSIG(status) : 0;
    if (sig != 0) {
        snprintf(why, why_len, "crashed in %s: %s (trial load; module not loaded)", rp.stage, sig_name(sig, sb, sizeof sb));
        return MEMRA_STATUS_MODULE_ERROR;
    }
    if (rp.done || rp.error) {
        MEMRA__DEBUG("registry", "trial of %s: %s in %.1f ms", shown, rp.done ? "passed" : "clean failure",
                     now_ms() - t0);
        return MEMRA_STATUS_OK; /* a clean failure is named by the load that follows */
    }
    if (reaped && WIFEXITED(status))
        snprintf(why, why_len, "exited with status %d in %s (trial load; module not loaded)", WEXITSTATUS(status),
                 rp.stage);
    else snprintf(why, why_len, "trial load ended without a report (in %s); module not loaded", rp.stage);
    return MEMRA_STATUS_MODULE_ERROR;
}
