/* Test-only modules, one source built several times with a variant macro:
 *   GOOD      "testgood": scale (score 10 on host), counts calls
 *   DECLINE   "testdecline": scale that declines odd n (score 20 on host)
 *   NEWABI    descriptor with ABI v2
 *   OLDABI    descriptor with ABI v0
 *   BADSIZE   ABI v1 with a struct_size larger than v1's
 *   NOENTRY   no entry symbol
 *   INITFAIL  init returns MODULE_ERROR
 *   SCORE0    scores 0 everywhere
 *   DUP       a second module named "testgood"
 *   NFOUND    "testnf": scale that does its work and then returns NOT_FOUND
 *   OLDTABLE  "testoldtable": an op table as a module built before repack_q8_0
 *             and gemm_q8_0r were appended reports it (struct_size ends at
 *             accprobe); scale works, and the two members past its size hold
 *             functions that fail loudly if the core ever calls them
 *   Q8RDECLINE "testq8r": gemm_q8_0r that declines every call (score 20 on host)
 *   KRNOTSUP  "testkrns": gemm_kr that answers NOT_SUPPORTED at n = 36 (as a
 *             lane does in a CUDA graph capture without reserved scratch) and
 *             declines every other shape, so the admission self-check (which
 *             a NOT_SUPPORTED would rightly fail) admits it; score 20 on host
 *   PROFILE   "testprof": gemm_f16 that declines every call, score 30 only on a
 *             host-backed device whose profile is sm90 (the fake devices of
 *             MEMRA_TEST_FAKE_DEVICES), so routings differ by forced profile
 * Hostile ones (issue 13), refused by the trial load or the descriptor checks:
 *   CRASHCTOR  a constructor that dies by SIGSEGV
 *   CRASHENTRY an entry point that dies by SIGSEGV
 *   CRASHSCORE a score that dies by SIGSEGV
 *   HANGSCORE  a score that never returns
 *   NOOPS      a descriptor without an op table
 *   ALLNULL    an op table whose every member is NULL
 *   LIBOPEN    "testlibopen": init asks host->library_open("cublasLt") and
 *              fails when it gets NULL (MEMRA_CUBLASLT_LIBRARY checks)
 *   ZEROED     "testzeroed": scale that keeps per-call state in
 *              host->scratch_get_zeroed's block "ctr" (s > 0: y[i] = the
 *              block's int32 word i, then the word is incremented; s < 0: the
 *              same name taken by plain scratch_get and filled with 0x7f bytes)
 *   EVIL       "testevil": a constructor that creates the file named by
 *              MEMRA_TEST_MARKER (proof that it ran); otherwise like GOOD
 * Hostile at init and in ops (issue 27), refused by the trial's second phase
 * (init and the self-check in memra-trial); in hostile/init:
 *   CRASHINIT  "testcrashinit": init dies by SIGSEGV
 *   CRASHOP    "testcrashop": init is fine, scale dies by SIGSEGV
 *   HANGINIT   "testhanginit": init never returns
 *   EXITINIT   "testexitinit": init calls exit(3)
 *   SNEAKY     "testsneaky": init dies by SIGSEGV unless the process is named
 *              memra-trial (argv[0] or /proc/self/comm): a module that tells
 *              the helper apart by its name and misbehaves only outside it
 *   FORKCTOR   "testforkctor": a constructor that forks a child which writes
 *              its pid to MEMRA_TEST_MARKER and sleeps 30 s holding every
 *              descriptor it inherited; otherwise like GOOD
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "memra/module.h"

#ifndef TESTMOD_NAME
#define TESTMOD_NAME "testgood"
#endif

#if defined(CRASHCTOR) || defined(CRASHENTRY) || defined(CRASHSCORE) || defined(HANGSCORE) || defined(EVIL) || \
    defined(CRASHINIT) || defined(CRASHOP) || defined(HANGINIT) || defined(EXITINIT) || defined(SNEAKY) ||     \
    defined(FORKCTOR)
#include <fcntl.h>
#include <unistd.h>
/* A store to an unmapped page: SIGSEGV, not a trap the compiler may pick. */
static void die_by_segv(void) { *(volatile int *)(uintptr_t)8 = 1; }
#endif

#if defined(CRASHCTOR)
__attribute__((constructor)) static void crash_ctor(void) { die_by_segv(); }
#endif
#if defined(EVIL)
__attribute__((constructor)) static void evil_ctor(void)
{
    const char *m = getenv("MEMRA_TEST_MARKER");
    if (m != NULL) {
        int fd = open(m, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            ssize_t w = write(fd, "evil constructor ran\n", 21);
            (void)w;
            close(fd);
        }
    }
}
#endif

#if defined(FORKCTOR)
#include <stdio.h>
__attribute__((constructor)) static void fork_ctor(void)
{
    pid_t pid = fork();
    if (pid != 0) return;
    const char *m = getenv("MEMRA_TEST_MARKER");
    if (m != NULL) {
        int fd = open(m, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            char b[32];
            int n = snprintf(b, sizeof b, "%d\n", (int)getpid());
            ssize_t w = write(fd, b, (size_t)n);
            (void)w;
            close(fd);
        }
    }
    sleep(30);
    _exit(0);
}
#endif
#if defined(SNEAKY)
#include <errno.h>
/* In the helper? By its name, as a module that wants to pass its trial would look. */
static int in_helper(void)
{
    if (strcmp(program_invocation_short_name, "memra-trial") == 0) return 1;
    char comm[64] = "";
    int fd = open("/proc/self/comm", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, comm, sizeof comm - 1);
        comm[n > 0 ? n : 0] = '\0';
        close(fd);
    }
    return strstr(comm, "memra-trial") != NULL;
}
#endif

typedef struct ctx {
    const memra_host_services *host;
    atomic_long calls; /* ops may run on many threads at once */
} ctx;

static int score(const memra_device_caps *caps)
{
#if defined(CRASHSCORE)
    if (caps != NULL) die_by_segv();
#elif defined(HANGSCORE)
    for (;;) sleep(1);
#endif
#if defined(SCORE0)
    (void)caps;
    return 0;
#elif defined(PROFILE)
    return caps->arch == MEMRA_ARCH_HOST && caps->profile != NULL && strcmp(caps->profile, "sm90") == 0 ? 30 : 0;
#elif defined(DECLINE) || defined(Q8RDECLINE) || defined(KRNOTSUP)
    return caps->arch == MEMRA_ARCH_HOST ? 20 : 0;
#else
    return caps->arch == MEMRA_ARCH_HOST ? 10 : 0;
#endif
}

static memra_status init(const memra_host_services *host, const memra_device_caps *caps, void **out)
{
    (void)caps;
#if defined(CRASHINIT)
    die_by_segv();
#elif defined(HANGINIT)
    for (;;) sleep(1);
#elif defined(EXITINIT)
    exit(3);
#elif defined(SNEAKY)
    if (!in_helper()) die_by_segv();
#endif
#if defined(INITFAIL)
    return host->set_error(MEMRA_STATUS_MODULE_ERROR, "testinitfail: refusing on purpose");
#else
#if defined(LIBOPEN)
    if (host->library_open("cublasLt") == NULL)
        return host->set_error(MEMRA_STATUS_MODULE_ERROR, "testlibopen: library_open(cublasLt) returned NULL");
#endif
    ctx *c = calloc(1, sizeof *c);
    if (c == NULL) return MEMRA_STATUS_OUT_OF_MEMORY;
    c->host = host;
    *out = c;
    return MEMRA_STATUS_OK;
#endif
}

static void fini(void *p) { free(p); }

static memra_status op_scale(memra_call *call, memra_dptr y, int64_t n, float s)
{
    ctx *c = call->module_ctx;
#if defined(CRASHOP)
    die_by_segv();
#endif
#if defined(ZEROED)
    if (!MEMRA_HAS_MEMBER(c->host, memra_host_services, scratch_get_zeroed))
        return c->host->set_error(MEMRA_STATUS_MODULE_ERROR, "testzeroed: the core has no scratch_get_zeroed");
    memra_dptr blk = 0;
    memra_status st = s > 0 ? c->host->scratch_get_zeroed(call, "ctr", (size_t)n * 4, &blk)
                            : c->host->scratch_get(call, "ctr", (size_t)n * 4, &blk);
    if (st != MEMRA_STATUS_OK) return st;
    int32_t *w = (int32_t *)(uintptr_t)blk;
    float *out = (float *)(uintptr_t)y;
    if (s < 0) {
        memset(w, 0x7f, (size_t)n * 4);
        return MEMRA_STATUS_OK;
    }
    for (int64_t i = 0; i < n; i++) out[i] = (float)w[i]++;
    return MEMRA_STATUS_OK;
#endif
#if defined(DECLINE)
    if (n % 2 != 0) {
        call->decline_reason = "odd length";
        return MEMRA_STATUS_DECLINED;
    }
#endif
    float *p = (float *)(uintptr_t)y;
    for (int64_t i = 0; i < n; i++) p[i] *= s;
    atomic_fetch_add(&c->calls, 1);
#if defined(NFOUND)
    return c->host->set_error(MEMRA_STATUS_NOT_FOUND, "testnf: a module error that happens to be NOT_FOUND");
#else
    return MEMRA_STATUS_OK;
#endif
}

#if defined(OLDTABLE)
/* Members past the table's struct_size: an old module's table simply ends
 * there, and whatever follows it in memory must never be read as an op. */
static memra_status op_past_size_repack(memra_call *call, memra_dptr src, int64_t rows, int64_t cols, memra_dptr dst)
{
    (void)src, (void)rows, (void)cols, (void)dst;
    ctx *c = call->module_ctx;
    return c->host->set_error(MEMRA_STATUS_INTERNAL, "testoldtable: repack_q8_0 lies past the table's struct_size");
}
static memra_status op_past_size_gemm(memra_call *call, const memra_gemm_args *args)
{
    (void)args;
    ctx *c = call->module_ctx;
    return c->host->set_error(MEMRA_STATUS_INTERNAL, "testoldtable: gemm_q8_0r lies past the table's struct_size");
}
static const memra_op_table k_ops = {.struct_size = offsetof(memra_op_table, repack_q8_0),
                                     .scale = op_scale,
                                     .repack_q8_0 = op_past_size_repack,
                                     .gemm_q8_0r = op_past_size_gemm};
#elif defined(Q8RDECLINE)
static memra_status op_decline_q8r(memra_call *call, const memra_gemm_args *args)
{
    (void)args;
    call->decline_reason = "testq8r declines every gemm_q8_0r";
    return MEMRA_STATUS_DECLINED;
}
static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .gemm_q8_0r = op_decline_q8r};
#elif defined(KRNOTSUP)
static memra_status op_notsup_kr(memra_call *call, const memra_gemm_args *args)
{
    if (args->n != 36) {
        call->decline_reason = "testkrns answers only n = 36";
        return MEMRA_STATUS_DECLINED;
    }
    ctx *c = call->module_ctx;
    return c->host->set_error(MEMRA_STATUS_NOT_SUPPORTED, "testkrns: gemm_kr not supported here (reserve scratch)");
}
static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .gemm_kr = op_notsup_kr};
#elif defined(PROFILE)
static memra_status op_decline_f16(memra_call *call, const memra_gemm_args *args)
{
    (void)args;
    call->decline_reason = "testprof declines every gemm_f16";
    return MEMRA_STATUS_DECLINED;
}
static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .gemm_f16 = op_decline_f16};
#elif defined(QNOSUMS)
/* A quant_q8_1 from before the records' sum plane (the descriptor ends before q8_1_sums): the
 * core must drop it at load, so this never runs. */
static memra_status op_quant_old(memra_call *call, memra_dptr x, int32_t m, int32_t k, memra_dptr dst)
{
    (void)x, (void)m, (void)k, (void)dst;
    ctx *c = call->module_ctx;
    return c->host->set_error(MEMRA_STATUS_INTERNAL, "testqnosums: a quant_q8_1 without the sum plane ran");
}
static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .scale = op_scale,
                                     .quant_q8_1 = op_quant_old};
#elif defined(ALLNULL)
static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table)};
#else
static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .scale = op_scale};
#endif

static const memra_module_desc k_desc = {
#if defined(NEWABI)
    .abi_version = MEMRA_MODULE_ABI_VERSION + 1,
#elif defined(OLDABI)
    .abi_version = 0,
#else
    .abi_version = MEMRA_MODULE_ABI_VERSION,
#endif
#if defined(BADSIZE)
    .struct_size = sizeof(memra_module_desc) + 64,
#elif defined(QNOSUMS)
    .struct_size = offsetof(memra_module_desc, q8_1_sums), /* as built before the member */
#else
    .struct_size = sizeof(memra_module_desc),
#endif
    .name = TESTMOD_NAME,
    .version = "9.9.9-test",
    .score = score,
    .init = init,
    .fini = fini,
#if defined(NOOPS)
    .ops = NULL,
#else
    .ops = &k_ops,
#endif
};

#if !defined(NOENTRY)
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void)
{
#if defined(CRASHENTRY)
    die_by_segv();
#endif
    return &k_desc;
}
#else
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry_misspelt(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry_misspelt(void) { return &k_desc; }
#endif
