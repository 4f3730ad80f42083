/* Contained trial loads: before a module is dlopen'ed into this process, the
 * memra-trial helper (core/load/trial_helper.c) runs its whole start.
 *
 * Phase 1, in the helper alone: load the same descriptor (constructors run),
 * call the entry point and score on every device's capabilities. Phase 2,
 * when a device scored it: the helper loads libmemra from a descriptor this
 * process checked and calls memra__trial_child, which opens a runtime like
 * this one (same configuration, handed over in the environment; same
 * devices), loads the module there without a trial (init on each device it
 * scores for) and runs the admission self-check's cases. Every step is
 * reported line by line over a pipe:
 *   stage <what>        the step about to run ("score", "init on host", ...)
 *   signal <n>          a fatal signal arrived in the last stage
 *   done | error <why> | quarantined <note> | noruntime <why>   the last word
 * A trial that dies by a signal, exits, runs past its time limits, or leaves a
 * process behind refuses the module with the stage named; this process never
 * ran a byte of it. The helper leads a process group of its own, and the
 * whole group is killed when the trial ends, whatever way it ends.
 *
 * Time limits: phase 1 TRIAL_TIMEOUT_S; phase 2 MEMRA_TRIAL_TIMEOUT_MS from
 * its start. memra__trial_wait runs any number of trials at once, so a folder
 * of hanging modules costs one limit, not one per module.
 *
 * The trial is a filter, not a sandbox: a module that passed runs in this
 * process with its rights, and what it does here (a crash, a hang, a module
 * that tells the helper apart from the real process) is not contained. See
 * docs/ARCHITECTURE.md, "Trust".
 *
 * The helper lives beside libmemra: <dir of libmemra>/memra/memra-trial, in
 * the build tree and in an install alike. It is started with posix_spawn
 * (a fork of a threaded process is not safe), through /proc/self/fd of a
 * checked descriptor, with an empty signal mask and default dispositions. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "core/load/trial.h"

#include "base/config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "core/device/device.h"
#include "base/trust.h"

#define TRIAL_TIMEOUT_S 5
#define HELPER_NAME "memra-trial"
#define MAX_PARALLEL 8 /* helpers running at once */

enum { FINAL_NONE, FINAL_DONE, FINAL_ERROR, FINAL_QUARANTINED, FINAL_NORUNTIME };

extern char **environ;


int memra__trial_enabled(const memra_runtime *rt)
{
    if (memra__trial_child_active()) return 0;
    const char *s = memra__config_lookup(&rt->cfg, "MEMRA_MODULE_TRIAL");
    return !(s != NULL && strcmp(s, "0") == 0);
}

static int lib_dir(char *buf, size_t len)
{
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&memra__trial_helper_path, &info) == 0 || info.dli_fname == NULL) return 0;
    char real[PATH_MAX];
    if (realpath(info.dli_fname, real) == NULL) return 0;
    int n = snprintf(buf, len, "%s", real);
    return n > 0 && (size_t)n < len;
}

int memra__trial_helper_path(char *buf, size_t len)
{
    char real[PATH_MAX];
    if (!lib_dir(real, sizeof real)) return 0;
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

static void set_verdict(memra__trial *t, memra_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_verdict(memra__trial *t, memra_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->why, sizeof t->why, fmt, ap);
    va_end(ap);
    t->st = st;
    t->done = 1;
}

static void parse_lines(memra__trial *t)
{
    char *start = t->line, *nl;
    while ((nl = memchr(start, '\n', (size_t)(t->line + t->used - start))) != NULL) {
        *nl = '\0';
        if (t->final != FINAL_NONE) {
            /* nothing after the last word is ours */
        } else if (strncmp(start, "stage ", 6) == 0) {
            snprintf(t->stage, sizeof t->stage, "%s", start + 6);
            if (!t->phase2 && strcmp(t->stage, "runtime") == 0) {
                t->phase2 = 1;
                t->deadline = now_ms() + t->phase2_ms;
            }
        } else if (strncmp(start, "name ", 5) == 0) {
            snprintf(t->name, sizeof t->name, "%s", start + 5);
        } else if (strcmp(start, "done") == 0) {
            t->final = FINAL_DONE;
        } else if (strncmp(start, "error ", 6) == 0) {
            t->final = FINAL_ERROR;
        } else if (strncmp(start, "noruntime ", 10) == 0) {
            t->final = FINAL_NORUNTIME;
            snprintf(t->why, sizeof t->why, "%s", start + 10);
        } else if (strncmp(start, "quarantined ", 12) == 0) {
            t->final = FINAL_QUARANTINED;
            snprintf(t->why, sizeof t->why, "%s", start + 12);
        } else if (strncmp(start, "signal ", 7) == 0) {
            t->signal = atoi(start + 7);
        }
        start = nl + 1;
    }
    size_t rest = (size_t)(t->line + t->used - start);
    memmove(t->line, start, rest);
    t->used = rest;
}

/* The child's environment: this process's, with every knob's variable
 * replaced by the runtime's effective value (options and settings included)
 * and the unknown MEMRA_* settings of options added, so the helper's runtime
 * is configured like this one. */
static char **child_env(const memra_runtime *rt)
{
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL) n++;
    size_t cap = n + MEMRA__KNOB_COUNT + MEMRA__CONFIG_MAX_EXTRA + 1;
    char **env = calloc(cap, sizeof *env);
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i], *eq = strchr(e, '=');
        if (strncmp(e, "MEMRA_", 6) == 0 && eq != NULL) {
            /* a knob: its effective value follows; another MEMRA_* variable (a
             * module's own) stays, unless an option set it */
            int skip = 0;
            for (int j = 0; j < MEMRA__KNOB_COUNT && !skip; j++) {
                const char *name = NULL, *def, *owner, *help;
                memra__knob_info(j, &name, &def, &owner, &help);
                skip = name != NULL && strlen(name) == (size_t)(eq - e) && strncmp(name, e, (size_t)(eq - e)) == 0;
            }
            for (int j = 0; j < rt->cfg.n_extra && !skip; j++)
                skip = rt->cfg.extra_source[j] == 2 && strlen(rt->cfg.extra_name[j]) == (size_t)(eq - e) &&
                       strncmp(rt->cfg.extra_name[j], e, (size_t)(eq - e)) == 0;
            if (skip) continue;
        }
        if ((env[k] = strdup(e)) != NULL) k++;
    }
    for (int i = 0; i < MEMRA__KNOB_COUNT; i++) {
        const char *v = memra__config_str(&rt->cfg, (memra__knob)i), *name = NULL, *def, *owner, *help;
        memra__knob_info(i, &name, &def, &owner, &help);
        if (v == NULL || name == NULL) continue;
        if (asprintf(&env[k], "%s=%s", name, v) >= 0) k++;
        else env[k] = NULL;
    }
    for (int i = 0; i < rt->cfg.n_extra; i++) {
        if (rt->cfg.extra_source[i] != 2) continue; /* from the environment: kept above */
        if (asprintf(&env[k], "%s=%s", rt->cfg.extra_name[i], rt->cfg.extra_value[i]) >= 0) k++;
        else env[k] = NULL;
    }
    env[k] = NULL;
    return env;
}

static void env_free(char **env)
{
    if (env == NULL) return;
    for (size_t i = 0; env[i] != NULL; i++) free(env[i]);
    free(env);
}

void memra__trial_start(memra_runtime *rt, int module_fd, int hot, memra__trial *t)
{
    memset(t, 0, sizeof *t);
    t->pid = -1;
    t->rfd = -1;
    t->t0 = now_ms();
    t->deadline = t->t0 + TRIAL_TIMEOUT_S * 1000.0;
    snprintf(t->stage, sizeof t->stage, "start");
    const char *lim = memra__config_lookup(&rt->cfg, "MEMRA_TRIAL_TIMEOUT_MS");
    t->phase2_ms = lim != NULL ? strtod(lim, NULL) : 30000.0;
    char helper[PATH_MAX], real[PATH_MAX], inner[PATH_MAX + 128], libpath[PATH_MAX];
    if (!memra__trial_helper_path(helper, sizeof helper) || !lib_dir(libpath, sizeof libpath)) {
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR,
                    "trial load impossible: libmemra cannot find its own folder to locate %s", HELPER_NAME);
        return;
    }
    int hfd = memra__trust_open(helper, 0, real, sizeof real, inner, sizeof inner);
    if (hfd < 0) {
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR,
                    "trial helper unusable, module not loaded: %s (it is installed beside libmemra; "
                    "MEMRA_MODULE_TRIAL=0 loads modules without a trial)",
                    inner);
        return;
    }
    /* libmemra itself, by the same rules, for the helper's second phase; a
     * library that fails them only costs that phase (the helper says so). */
    char lreal[PATH_MAX], lwhy[PATH_MAX + 128];
    int lfd = memra__trust_open(libpath, 0, lreal, sizeof lreal, lwhy, sizeof lwhy);
    if (lfd < 0) MEMRA__DEBUG("registry", "trial: libmemra fails the file rules (%s): no init in the trial", lwhy);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "trial load: pipe: %s", strerror(errno));
        close(hfd);
        if (lfd >= 0) close(lfd);
        return;
    }
    /* Every descriptor the child uses above 10, so the dup2 onto 3, 4 and 5
     * neither meets itself nor replaces the helper's own descriptor, which
     * the exec names. */
    int mfd = fcntl(module_fd, F_DUPFD_CLOEXEC, 10);
    int wfd = fcntl(pfd[1], F_DUPFD_CLOEXEC, 10);
    int xfd = fcntl(hfd, F_DUPFD_CLOEXEC, 10);
    int yfd = lfd >= 0 ? fcntl(lfd, F_DUPFD_CLOEXEC, 10) : -1;
    close(pfd[1]);
    close(hfd);
    if (lfd >= 0) close(lfd);
    hfd = xfd;
    char exe[64];
    snprintf(exe, sizeof exe, "/proc/self/fd/%d", hfd);

    int n = rt->n_devices;
    char nums[MEMRA__MAX_DEVICES][160], count[16], hot_s[8], cuda_s[8];
    char *argv[6 + 4 * MEMRA__MAX_DEVICES + 1];
    int a = 0;
    /* argv[0] is this program's own name, as the module would see it here. */
    argv[a++] = program_invocation_name != NULL && program_invocation_name[0] ? program_invocation_name
                                                                               : (char *)HELPER_NAME;
    argv[a++] = (char *)"2";
    snprintf(hot_s, sizeof hot_s, "%d", hot ? 1 : 0);
    argv[a++] = hot_s;
    snprintf(cuda_s, sizeof cuda_s, "%d", rt->opts.no_cuda ? 1 : 0);
    argv[a++] = cuda_s;
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
    char **env = child_env(rt);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, mfd, 3);
    posix_spawn_file_actions_adddup2(&fa, wfd, 4);
    if (yfd >= 0) posix_spawn_file_actions_adddup2(&fa, yfd, 5);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0); /* a group of its own: killed whole */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid = -1;
    int se = mfd < 0 || wfd < 0 || hfd < 0 || env == NULL ? EMFILE
                                                           : posix_spawn(&pid, exe, &fa, &at, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    env_free(env);
    if (mfd >= 0) close(mfd);
    if (wfd >= 0) close(wfd);
    if (hfd >= 0) close(hfd);
    if (yfd >= 0) close(yfd);
    if (se != 0) {
        close(pfd[0]);
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "trial helper %s could not be started: %s; module not loaded", real,
                    strerror(se));
        return;
    }
    t->pid = pid;
    t->rfd = pfd[0];
}

/* The helper has exited (a zombie, not reaped: its pid, which is also its
 * group's id, cannot be reused yet). 1 when it has; 0 when it is running. */
static int leader_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (r != 0) return errno == ECHILD; /* SIGCHLD ignored by the application: reaped already */
    return si.si_pid == pid;
}

/* Kill the whole group, then reap the leader; *status its wait status. */
static int finish(memra__trial *t, int *status)
{
    kill(-t->pid, SIGKILL);
    int reaped = 0;
    for (;;) {
        pid_t w = waitpid(t->pid, status, 0);
        if (w == t->pid) {
            reaped = 1;
            break;
        }
        if (w < 0 && errno == EINTR) continue;
        break;
    }
    if (t->rfd >= 0) close(t->rfd);
    t->rfd = -1;
    return reaped;
}

static void judge(memra__trial *t, int reaped, int status, int timed_out, int left_behind)
{
    char sb[24];
    t->ms = now_ms() - t->t0;
    if (timed_out) {
        if (t->phase2)
            set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "trial timed out after %.0f s (in %s); module not loaded",
                        t->phase2_ms / 1000.0, t->stage);
        else
            set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "trial timed out after %d s (in %s); module not loaded",
                        TRIAL_TIMEOUT_S, t->stage);
        return;
    }
    int sig = t->signal ? t->signal : (reaped && WIFSIGNALED(status) && t->final == FINAL_NONE) ? WTERMSIG(status) : 0;
    if (sig != 0) {
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "crashed in %s: %s (trial load; module not loaded)", t->stage,
                    sig_name(sig, sb, sizeof sb));
        return;
    }
    if (left_behind) {
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR,
                    "its trial left a process running after it ended (a constructor, init or op forked; the "
                    "helper's process group was killed); module not loaded");
        return;
    }
    switch (t->final) {
    case FINAL_QUARANTINED: {
        char note[sizeof t->why];
        snprintf(note, sizeof note, "%s", t->why);
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "%s", note);
        t->quarantined = 1;
        return;
    }
    case FINAL_NORUNTIME:
        MEMRA__DEBUG("registry", "trial: no runtime in the helper (%s): constructors, entry and score only", t->why);
        /* fall through */
    case FINAL_DONE:
    case FINAL_ERROR:
        set_verdict(t, MEMRA_STATUS_OK, "%s", ""); /* a clean failure is named by the load that follows */
        return;
    default: break;
    }
    if (reaped && WIFEXITED(status))
        set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "exited with status %d in %s (trial load; module not loaded)",
                    WEXITSTATUS(status), t->stage);
    else set_verdict(t, MEMRA_STATUS_MODULE_ERROR, "trial load ended without a report (in %s); module not loaded", t->stage);
}

/* Read what is there; 1 at end of file. */
static int drain(memra__trial *t)
{
    for (;;) {
        if (t->used == sizeof t->line) t->used = 0; /* a line this long is not ours */
        ssize_t r = read(t->rfd, t->line + t->used, sizeof t->line - t->used);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return 0; /* EAGAIN */
        if (r == 0) return 1;
        t->used += (size_t)r;
        parse_lines(t);
    }
}

void memra__trial_wait(memra__trial *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (!ts[i].done && ts[i].rfd >= 0) fcntl(ts[i].rfd, F_SETFL, fcntl(ts[i].rfd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        struct pollfd p[MAX_PARALLEL * 8];
        int idx[MAX_PARALLEL * 8], np = 0, open_ = 0;
        double soonest = -1.0;
        for (int i = 0; i < n; i++) {
            memra__trial *t = &ts[i];
            if (t->done) continue;
            open_++;
            /* the last word said and the helper gone: its pipe must be closed now */
            if (t->final != FINAL_NONE && leader_exited(t->pid)) {
                struct pollfd q = {.fd = t->rfd, .events = POLLIN};
                int eof = 0;
                while (poll(&q, 1, 0) > 0) {
                    if (drain(t)) {
                        eof = 1;
                        break;
                    }
                }
                int status = 0;
                int reaped = finish(t, &status);
                judge(t, reaped, status, 0, !eof);
                continue;
            }
            if (now_ms() >= t->deadline) {
                int status = 0;
                int reaped = finish(t, &status);
                judge(t, reaped, status, 1, 0);
                continue;
            }
            if (t->rfd >= 0 && np < (int)(sizeof p / sizeof p[0])) {
                p[np] = (struct pollfd){.fd = t->rfd, .events = POLLIN};
                idx[np++] = i;
            }
            if (soonest < 0 || t->deadline < soonest) soonest = t->deadline;
        }
        int left = 0;
        for (int i = 0; i < n; i++) left += !ts[i].done;
        if (left == 0) return;
        (void)open_;
        int wait_ms = soonest < 0 ? 1 : (int)(soonest - now_ms()) + 1;
        if (wait_ms < 1) wait_ms = 1;
        /* after the last word the helper's exit is what we wait for: poll briefly */
        for (int i = 0; i < n; i++)
            if (!ts[i].done && ts[i].final != FINAL_NONE && wait_ms > 2) wait_ms = 2;
        int pr = poll(p, (nfds_t)np, np > 0 ? wait_ms : 1);
        if (pr < 0 && errno != EINTR) pr = 0;
        if (np == 0 && pr == 0) {
            struct timespec ts1 = {0, 1000000};
            nanosleep(&ts1, NULL);
        }
        for (int k = 0; k < np && pr > 0; k++) {
            if (p[k].revents == 0) continue;
            memra__trial *t = &ts[idx[k]];
            if (drain(t)) {
                /* end of file: every writer is gone; the helper exits or has */
                int status = 0;
                while (!leader_exited(t->pid) && now_ms() < t->deadline) {
                    struct timespec ts1 = {0, 500000};
                    nanosleep(&ts1, NULL);
                }
                if (!leader_exited(t->pid)) {
                    int reaped = finish(t, &status);
                    judge(t, reaped, status, 1, 0);
                } else {
                    int reaped = finish(t, &status);
                    judge(t, reaped, status, 0, 0);
                }
            }
        }
    }
}
