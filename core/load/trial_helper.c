/* memra-trial: the helper program of a contained trial load (core/load/trial.c).
 *
 * Started by libmemra with posix_spawn, never by a user:
 *   fd 3  the module file, opened and checked by the parent
 *   fd 4  the report pipe (write end)
 *   fd 5  libmemra itself, opened and checked by the parent (may be absent)
 *   argv  <the parent's argv[0]> 2 <hot> <no_cuda> <n_devices> then per device
 *         four arguments:
 *         "arch,ordinal,cc,sm_count,total_mem,driver_version,caps,smem_optin,cu_device"
 *         profile  name  jit_target ("-" for none)
 * Phase 1: it loads the module from fd 3 (its constructors run), calls the
 * entry point, then score on every device, writing one line per step:
 *   stage constructor | stage entry | stage score | score <d> <s>
 *   error <text>      a clean failure the parent's own load will name
 *   signal <n>        a fatal signal arrived in the last stage
 * Phase 2, when a device scored it: memra__trial_child of the libmemra at fd
 * 5 opens a runtime like the parent's and loads the module there (init on
 * each device it scores for, the admission self-check), reporting its
 * stages and its last word (done, error, quarantined, noruntime). Then it
 * exits 0 with _exit (the module's destructors are not the trial's
 * business). A hang is the parent's to time out; the parent kills the
 * helper's whole process group, and the helper dies with its parent. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "memra/module.h"

#define MODULE_FD 3
#define REPORT_FD 4
#define LIBMEMRA_FD 5
#define MAX_DEVICES 16

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(REPORT_FD, p, (size_t)n);
        if (w <= 0) return;
        p += w;
        n -= (int)w;
    }
}

/* Async-signal-safe: report the signal number, then die by it. */
static void on_fatal(int sig)
{
    char line[32] = "signal ";
    int n = 7, v = sig;
    char digits[12];
    int k = 0;
    do {
        digits[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && k < 11);
    while (k > 0) line[n++] = digits[--k];
    line[n++] = '\n';
    ssize_t w = write(REPORT_FD, line, (size_t)n);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

static void install_handlers(void)
{
    static char altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

static int parse_caps(char **av, memra_device_caps *c)
{
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    int arch = 0;
    unsigned long long mem = 0, caps = 0, smem = 0;
    if (sscanf(av[0], "%d,%d,%d,%d,%llu,%d,%llu,%llu,%d", &arch, &c->ordinal, &c->cc, &c->sm_count, &mem,
               &c->driver_version, &caps, &smem, &c->cu_device) != 9)
        return -1;
    c->arch = (memra_arch)arch;
    c->total_mem = mem;
    c->caps = caps;
    c->smem_per_block_optin = (size_t)smem;
    c->profile = av[1];
    c->name = av[2];
    c->jit_target = strcmp(av[3], "-") == 0 ? NULL : av[3];
    c->cu_context = NULL; /* no CUDA context in the helper: score must not need one */
    return 0;
}

typedef int (*trial_child_fn)(int module_fd, int report_fd, int hot, int n_devices, int no_cuda);

int main(int argc, char **argv)
{
    if (argc < 5 || strcmp(argv[1], "2") != 0) {
        fprintf(stderr, "memra-trial is started by libmemra, not by hand\n");
        return 2;
    }
    /* Die with the parent: a trial nobody waits for must not run on. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* The name the module sees is the process's own (argv[0] is the parent's):
     * a module looking for "memra-trial" in its name does not find it. */
    const char *base = strrchr(argv[0], '/');
    prctl(PR_SET_NAME, base != NULL ? base + 1 : argv[0]);
    int hot = atoi(argv[2]), no_cuda = atoi(argv[3]);
    int n = atoi(argv[4]);
    if (n < 0 || n > MAX_DEVICES || argc != 5 + 4 * n) {
        say("error bad arguments\n");
        _exit(0);
    }
    memra_device_caps caps[MAX_DEVICES];
    for (int d = 0; d < n; d++) {
        if (parse_caps(argv + 5 + 4 * d, &caps[d]) != 0) {
            say("error bad device %d\n", d);
            _exit(0);
        }
    }
    install_handlers();

    say("stage constructor\n");
    char proc[32];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", MODULE_FD);
    void *lib = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        say("error dlopen\n");
        _exit(0);
    }
    void *sym = dlsym(lib, MEMRA_MODULE_ENTRY_SYMBOL);
    if (sym == NULL) {
        say("error no entry symbol\n");
        _exit(0);
    }
    memra_module_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    say("stage entry\n");
    const memra_module_desc *desc = entry();
    if (desc == NULL || desc->abi_version != MEMRA_MODULE_ABI_VERSION ||
        desc->struct_size < offsetof(memra_module_desc, score) + sizeof desc->score || desc->score == NULL) {
        say("error descriptor\n");
        _exit(0);
    }
    int scored = 0;
    for (int d = 0; d < n; d++) {
        say("stage score\n");
        int s = desc->score(&caps[d]);
        say("score %d %d\n", d, s);
        scored += s > 0;
    }
    if (scored == 0) {
        say("done\n");
        _exit(0);
    }
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", LIBMEMRA_FD);
    void *core = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
    void *fn = core != NULL ? dlsym(core, "memra__trial_child") : NULL;
    if (fn == NULL) {
        say("noruntime libmemra not usable in the helper: %s\n", core == NULL ? dlerror() : "no memra__trial_child");
        _exit(0);
    }
    trial_child_fn child;
    memcpy(&child, &fn, sizeof child);
    child(MODULE_FD, REPORT_FD, hot, n, no_cuda);
    _exit(0);
}
