/* Routing on GPUs that are not there: the real memra_open, registry and module
 * inits (every module of the build folder) on a fake CUDA driver
 * (fake_cuda.c, through MEMRA_CUDA_DRIVER) with devices of cc 7.5, 8.0, 8.6,
 * 8.9, 9.0, 10.0, 12.0 and 12.1. For every op and device it asserts which
 * module is first in the routing or that none serves it; for the GEMMs the
 * portable module declines by cc, the decline reason (memra_module_call);
 * that cc 7.5 is listed as present but not served; and where the portable
 * module's images came from (SASS on 8.0 / 8.6 / 8.9, compute_80 PTX on 10.0
 * and 12.1, from its log lines); then the same under MEMRA_ARCH=cuda (the
 * H200 case: cc 9.0 on the portable module from PTX); the f16 mirror budget
 * of each device, derived from its (fake) free memory, then set by option,
 * environment and memra_device_f16_budget_set, with its source. After each open: no module asked the driver for
 * a kernel its image lacks (the fake answers from the image; on a GPU each such ask is an API error that
 * compute-sanitizer reports, as run ac5 showed under MEMRA_ARCH=cuda). cuBLASLt and NVRTC are pointed at a missing
 * path so the result does not depend on the machine's toolkit.
 *   test_fake_routing FAKE_CUDA_SO "GPU_TARGETS" (e.g. "90a;120a")
 * The expectations follow the module scores and images (docs/ARCHITECTURE.md,
 * "Which module serves which op"): sm90 (cc 9.0) and sm120 (cc 12.x with its
 * sm_12Xa images) first, mmq for the floor where it has sm_<cc>a images,
 * portable everywhere else from cc 8.0. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/memra.h"
#include "test.h"

static int g_fails;
#define EXPECT(c, ...)                        \
    do {                                      \
        if (!(c)) {                           \
            printf("FAIL: " __VA_ARGS__);     \
            printf("\n");                     \
            g_fails++;                        \
        }                                     \
    } while (0)

#define N_DEV 7
static const int k_cc[N_DEV] = {80, 86, 89, 90, 100, 120, 121};
static const unsigned long long k_mem_mb[N_DEV] = {40960, 4096, 24576, 143768, 183360, 32608, 131072};

/* The fake driver's count of cuModuleGetFunction calls for a name the module's image does not hold (-1 where the
 * fake is not loaded or lacks the counter) */
static int absent_lookups(const char *fake_so)
{
    void *h = dlopen(fake_so, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) return -1;
    int (*count)(void) = NULL;
    void *sym = dlsym(h, "memra_fake_cuda_absent_lookups");
    memcpy(&count, &sym, sizeof count);
    const int n = count != NULL ? count() : -1;
    dlclose(h);
    return n;
}

/* The documented default: (free MB - 4096) / 2, 0 below the reserve. */
static unsigned long long want_budget(int d)
{
    const unsigned long long free_mb = k_mem_mb[d] / 8 * 7;
    return free_mb > 4096 ? (free_mb - 4096) / 2 : 0;
}

static void check_budgets(memra_runtime *rt, const char *when, const char *want_source, unsigned long long want_mb)
{
    for (int d = 0; d < N_DEV && d < memra_device_count(rt) - 1; d++) {
        memra_device *dev = memra_device_get(rt, d);
        const unsigned long long want = want_mb == (unsigned long long)-1 ? want_budget(d) : want_mb;
        const char *src = memra_device_f16_budget_source(dev);
        EXPECT(memra_device_f16_budget_get(dev) == want && src && strcmp(src, want_source) == 0,
               "%s: cc %d (%llu MiB) f16 budget %llu MB (%s), want %llu MB (%s)", when, k_cc[d], k_mem_mb[d],
               (unsigned long long)memra_device_f16_budget_get(dev), src ? src : "(null)", want, want_source);
        EXPECT(memra_device_f16_used(dev) == 0, "%s: cc %d: %llu mirror bytes used before any weight", when, k_cc[d],
               (unsigned long long)memra_device_f16_used(dev));
    }
    memra_device *host = memra_device_host(rt);
    const char *hs = memra_device_f16_budget_source(host);
    EXPECT(hs && strcmp(hs, want_mb == (unsigned long long)-1 ? "profile" : want_source) == 0, "%s: host budget source %s",
           when, hs ? hs : "(null)");
    printf("%s: budgets", when);
    for (int d = 0; d < memra_device_count(rt); d++)
        printf(" [%d] %llu MB (%s)", d, (unsigned long long)memra_device_f16_budget_get(memra_device_get(rt, d)),
               memra_device_f16_budget_source(memra_device_get(rt, d)));
    printf("\n");
}

static char g_origin[N_DEV][5][16]; /* per device, per portable image: "SASS" / "PTX" */
static const char *const k_images[5] = {"convert", "dequant", "fp8_act", "fp8_weight", "mmq"};

static void log_sink(int level, const char *component, const char *message, void *user)
{
    (void)level, (void)user;
    if (strcmp(component, "portable") != 0) return;
    int cc_major = 0, cc_minor = 0;
    const char *p = strstr(message, "fake GPU cc ");
    if (p == NULL || sscanf(p + 12, "%d.%d", &cc_major, &cc_minor) != 2) return;
    int d = -1;
    for (int i = 0; i < N_DEV; i++)
        if (k_cc[i] == cc_major * 10 + cc_minor) d = i;
    if (d < 0) return;
    for (int i = 0; i < 5; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, ": %s loaded from ", k_images[i]);
        const char *q = strstr(message, pat);
        if (q != NULL) snprintf(g_origin[d][i], sizeof g_origin[d][i], "%s", strncmp(q + strlen(pat), "PTX (compute_80)", 16) == 0 ? "PTX" : strncmp(q + strlen(pat), "SASS", 4) == 0 ? "SASS" : "?");
    }
}

/* The first module expected for op on cc (NULL: none serves it). */
static const char *expect_first(memra_op op, int cc, int native121)
{
    const int floor = op == MEMRA_OP_quant_q8_1 || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_repack_q8_0 ||
                      op == MEMRA_OP_gemm_q8_0r || op == MEMRA_OP_gemm_kr || op == MEMRA_OP_gemm_experts;
    if (op == MEMRA_OP_gemm_w16) return cc == 90 ? "w16" : NULL; /* the wgmma tile: the w16 module's alone */
    if (cc == 90) return floor || op == MEMRA_OP_accprobe ? "mmq" : "sm90";
    if (cc == 120 || (cc == 121 && native121)) return "sm120";
    return op == MEMRA_OP_accprobe ? NULL : "portable";
}

/* The decline reason, copied (the core's text may live in per-thread storage
 * that the next call reuses). */
/* The same under MEMRA_ARCH=cuda (every GPU on the cuda profile): sm90,
 * sm120 and fp8blk score 0; mmq still serves the floor where it has its
 * sm_<cc>a images (9.0, 12.0); the portable module everything else. */
static const char *expect_first_forced(memra_op op, int cc, int native121)
{
    const int floor = op == MEMRA_OP_quant_q8_1 || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_repack_q8_0 ||
                      op == MEMRA_OP_gemm_q8_0r || op == MEMRA_OP_gemm_kr || op == MEMRA_OP_gemm_experts ||
                      op == MEMRA_OP_accprobe;
    const int mmq_images = cc == 90 || cc == 120 || (cc == 121 && native121);
    if (floor && mmq_images) return "mmq";
    return op == MEMRA_OP_accprobe || op == MEMRA_OP_gemm_w16 ? NULL : "portable";
}

static const char *call_gemm(memra_device *dev, memra_op op, memra_status *out_st, char *why, size_t why_len)
{
    static float scale_grid[16];
    memra_op_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.gemm.struct_size = sizeof a.gemm;
    a.gemm.m = 16, a.gemm.n = 128, a.gemm.k = 128, a.gemm.ldy = 128;
    a.gemm.alpha = 1.0f, a.gemm.w_scale = 1.0f;
    /* device pointers that are never dereferenced: each lane checked here
     * declines before any launch or copy */
    a.gemm.x = 0x100000, a.gemm.w = 0x200000, a.gemm.y = 0x300000;
    if (op == MEMRA_OP_gemm_fp8_blk) a.gemm.w_scale_grid = (memra_dptr)(uintptr_t)scale_grid;
    *out_st = memra_module_call(dev, "portable", op, &a);
    snprintf(why, why_len, "%s", a.decline_reason ? a.decline_reason : "");
    return why;
}

static void count_oom_declines(const memra_ledger_row *row, void *user)
{
    uint64_t *n = user;
    if (row->reason == NULL) return;
    if (strstr(row->reason, "no memory for the per-call f16 copy")) n[0] += row->declines;
    if (strstr(row->reason, "no lane took dequant_kr_f16")) n[1] += row->declines;
}

/* The route without memory for its f16 copy (the fake driver's cuMemAlloc over the copy's size fails with out
 * of memory; the activation's q8_1 scratch fits): the call is OK on the floor (gemm_kr), the ledger has one
 * decline saying why and not the no-lane one, no error stays behind, and no raw copy is made */
static void route_out_of_memory(memra_runtime *rt, memra_device *dev)
{
    enum { m = 8, k = 256, n = 64 };
    static uint8_t q4k[n * 144];
    for (size_t i = 0; i < sizeof q4k; i++) q4k[i] = (uint8_t)(i * 97u + 5u);
    const memra_weight_desc dk = {.struct_size = sizeof dk, .format = MEMRA_FORMAT_Q4_K, .out_f = n, .in_f = k,
                                  .data = q4k, .size = sizeof q4k, .name = "route.oom.q4_k"};
    memra_weight *wk = NULL;
    memra_device_f16_budget_set(dev, 0);
    memra_buffer *bx = NULL, *by = NULL;
    const int made = memra_weight_create(rt, &dk, &wk) == MEMRA_STATUS_OK &&
                     memra_weight_prepare(wk, dev) == MEMRA_STATUS_OK &&
                     memra_buffer_create(dev, (size_t)(m * k) * 4, &bx) == MEMRA_STATUS_OK &&
                     memra_buffer_create(dev, (size_t)(m * n) * 4, &by) == MEMRA_STATUS_OK;
    EXPECT(made, "route out of memory: prepare / buffers: %s", memra_last_error());
    EXPECT(memra_device_floor_f16_m_set(dev, 4) == MEMRA_STATUS_OK && memra_weight_floor_f16_m(wk, dev) == 4,
           "route out of memory: set(4)");
    const size_t f16_bytes = (size_t)(n * k) * 2, q8_1 = (size_t)memra_q8_1_bytes(m, k);
    EXPECT(q8_1 < f16_bytes, "route out of memory: q8_1 scratch %zu bytes, f16 copy %zu", q8_1, f16_bytes);
    char lim[32];
    snprintf(lim, sizeof lim, "%zu", f16_bytes - 1);
    uint64_t before[2] = {0, 0}, after[2] = {0, 0};
    memra_ledger_visit(rt, count_oom_declines, before);
    const uint64_t kr0 = memra_ledger_hits(dev, MEMRA_OP_gemm_kr, "mmq");
    setenv("MEMRA_FAKE_CUDA_ALLOC_MAX", lim, 1);
    const memra_status st = made ? memra_matmul(dev, wk, memra_buffer_ptr(bx), m, memra_buffer_ptr(by), NULL)
                                 : MEMRA_STATUS_INVALID_ARGUMENT;
    const char *err = memra_last_error();
    unsetenv("MEMRA_FAKE_CUDA_ALLOC_MAX");
    memra_ledger_visit(rt, count_oom_declines, after);
    EXPECT(st == MEMRA_STATUS_OK && (err == NULL || err[0] == '\0'), "route out of memory: %s (%s)",
           memra_status_str(st), err ? err : "");
    EXPECT(memra_ledger_hits(dev, MEMRA_OP_gemm_kr, "mmq") == kr0 + 1, "route out of memory: gemm_kr hits %llu, want %llu",
           (unsigned long long)memra_ledger_hits(dev, MEMRA_OP_gemm_kr, "mmq"), (unsigned long long)(kr0 + 1));
    EXPECT(after[0] == before[0] + 1 && after[1] == before[1], "route out of memory: declines %llu (no memory), %llu (no lane)",
           (unsigned long long)(after[0] - before[0]), (unsigned long long)(after[1] - before[1]));
    EXPECT(!(memra_weight_operands(wk, dev) & MEMRA_OPERAND_RAW), "route out of memory: a raw copy was made");
    printf("     route without memory for the f16 copy: %s on the floor, %llu decline\n", memra_status_str(st),
           (unsigned long long)(after[0] - before[0]));
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    memra_weight_destroy(wk);
}

/* The route from the floor's records to dequant_kr_f16 + gemm_f16: off by default (MEMRA_FLOOR_F16_M unset);
 * memra_device_floor_f16_m_set(MEMRA_FLOOR_F16_M_AUTO) gives the profile's measured crossover, from 256 tokens
 * on K records (Q4_K) and from 512 on Q8_0 records (Q8_0) on the sm90 profile (cc 9.0), never on the others,
 * and the plan's why names it; never on the f16 mirror; a number sets both kinds and -1 restores the default */
static void floor_route_defaults(memra_runtime *rt, memra_device *dev, int cc)
{
    static uint8_t q4k[8 * 144], q8[512 * 34];
    for (size_t i = 0; i < sizeof q4k; i++) q4k[i] = (uint8_t)(i * 131u + 7u);
    for (size_t i = 0; i < sizeof q8; i++) q8[i] = (uint8_t)(i * 61u + 3u);
    const memra_weight_desc dk = {.struct_size = sizeof dk, .format = MEMRA_FORMAT_Q4_K, .out_f = 8, .in_f = 256,
                                  .data = q4k, .size = sizeof q4k, .name = "route.q4_k"};
    const memra_weight_desc d8 = {.struct_size = sizeof d8, .format = MEMRA_FORMAT_Q8_0, .out_f = 64, .in_f = 256,
                                  .data = q8, .size = sizeof q8, .name = "route.q8_0"};
    memra_weight *wk = NULL, *w8 = NULL;
    if (memra_weight_create(rt, &dk, &wk) != MEMRA_STATUS_OK || memra_weight_create(rt, &d8, &w8) != MEMRA_STATUS_OK) {
        EXPECT(0, "cc %d: weights for the route: %s", cc, memra_last_error());
        memra_weight_destroy(wk);
        return;
    }
    const uint64_t budget = memra_device_f16_budget_get(dev);
    memra_device_f16_budget_set(dev, 0);
    const int sm90 = cc == 90;
    /* by default (MEMRA_W16=0: no w16 kernels, DESIGN.md's floor) a weight without a mirror rides the floor on
     * every profile, also where the w16 module routes gemm_w16 (cc 9.0), and memra_device_w16_set(1) does not
     * change that */
    memra_weight_plan pw = {.struct_size = sizeof pw};
    memra_device_w16_set(dev, 1);
    EXPECT(memra_weight_plan_get(wk, dev, &pw) == MEMRA_STATUS_OK && strcmp(pw.lane, "mmq K records") == 0,
           "cc %d: a Q4_K weight without a mirror under MEMRA_W16=0: lane %s", cc, pw.lane ? pw.lane : "(null)");
    memra_device_w16_set(dev, 0);
    /* the floor's route from here: its weights prepared without the W16 operand */
    memra_device_w16_set(dev, 0);
    EXPECT(memra_weight_floor_f16_m(wk, dev) == 0 && memra_weight_floor_f16_m(w8, dev) == 0,
           "cc %d: the route on by default: from %lld / %lld", cc, (long long)memra_weight_floor_f16_m(wk, dev),
           (long long)memra_weight_floor_f16_m(w8, dev));
    EXPECT(memra_device_floor_f16_m_set(dev, MEMRA_FLOOR_F16_M_AUTO) == MEMRA_STATUS_OK, "cc %d: set(auto)", cc);
    const int64_t k0 = memra_weight_floor_f16_m(wk, dev), q0 = memra_weight_floor_f16_m(w8, dev);
    EXPECT(k0 == (sm90 ? 256 : 0) && q0 == (sm90 ? 512 : 0), "cc %d: route from %lld (K records) / %lld (Q8_0), want %d / %d",
           cc, (long long)k0, (long long)q0, sm90 ? 256 : 0, sm90 ? 512 : 0);
    memra_weight_plan p = {.struct_size = sizeof p};
    const int why = memra_weight_plan_get(wk, dev, &p) == MEMRA_STATUS_OK &&
                    (strstr(p.why, "from 256 tokens dequant_kr_f16 + gemm_f16") != NULL) == sm90;
    EXPECT(why, "cc %d: the K records plan's why: %s", cc, p.why);
    EXPECT(memra_device_floor_f16_m_set(dev, 1000) == MEMRA_STATUS_OK && memra_weight_floor_f16_m(wk, dev) == 1000 &&
               memra_weight_floor_f16_m(w8, dev) == 1000,
           "cc %d: memra_device_floor_f16_m_set(1000): %lld / %lld", cc, (long long)memra_weight_floor_f16_m(wk, dev),
           (long long)memra_weight_floor_f16_m(w8, dev));
    EXPECT(memra_device_floor_f16_m_set(dev, -1) == MEMRA_STATUS_OK && memra_weight_floor_f16_m(wk, dev) == 0,
           "cc %d: set(-1) gives %lld, want 0 (the default)", cc, (long long)memra_weight_floor_f16_m(wk, dev));
    memra_device_floor_f16_m_set(dev, MEMRA_FLOOR_F16_M_AUTO);
    memra_device_f16_budget_set(dev, 1024);
    EXPECT(memra_weight_floor_f16_m(wk, dev) == 0, "cc %d: a weight with a mirror: route from %lld", cc,
           (long long)memra_weight_floor_f16_m(wk, dev));
    memra_device_f16_budget_set(dev, budget);
    if (sm90) route_out_of_memory(rt, dev);
    memra_device_floor_f16_m_set(dev, -1);
    memra_device_w16_set(dev, -1);
    printf("     route to dequant_kr_f16 + gemm_f16 (auto) from %lld (K records) / %lld (Q8_0 records) tokens\n", (long long)k0,
           (long long)q0);
    memra_weight_destroy(wk);
    memra_weight_destroy(w8);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FAKE_CUDA_SO GPU_TARGETS\n", argv[0]);
        return 2;
    }
    const int native121 = strstr(argv[2], "121a") != NULL;
    setenv("MEMRA_CUDA_DRIVER", argv[1], 1);
    setenv("MEMRA_FAKE_CUDA_CC", "75,80,86,89,90,100,120,121", 1);
    /* MiB per device (the fake reports 7/8 of it free); cc 8.6 with 4 GiB has
     * less than the 4 GiB reserve free */
    setenv("MEMRA_FAKE_CUDA_MEM_MB", "8192,40960,4096,24576,143768,183360,32608,131072", 1);
    unsetenv("MEMRA_F16_BUDGET_MB");
    setenv("MEMRA_CUBLASLT_LIBRARY", "/nonexistent/libcublasLt.so", 1);
    setenv("MEMRA_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
    setenv("MEMRA_JIT_CACHE", "0", 1);
    /* The fake driver runs no kernel, so no module could pass the admission
     * self-check (it compares results with the host): this test is routing alone. */
    setenv("MEMRA_ADMISSION", "off", 1);
    unsetenv("MEMRA_ARCH");
    unsetenv("MEMRA_PREFER");
    unsetenv("MEMRA_DISABLE");
    unsetenv("MEMRA_MODULE_PATH");
    static const char *const settings[] = {"MEMRA_LOG=info", NULL};
    memra_options o = {.struct_size = sizeof o, .log_fn = log_sink, .settings = settings};
    memra_runtime *rt = NULL;
    memra_status st = memra_open(&o, &rt);
    if (st != MEMRA_STATUS_OK) {
        printf("FAIL: memra_open: %s\n", memra_last_error());
        return 1;
    }
    EXPECT(memra_device_count(rt) == N_DEV + 1, "%d devices, want %d GPUs + host (driver: %s)", memra_device_count(rt),
           N_DEV, memra_driver_status(rt));
    if (memra_device_count(rt) != N_DEV + 1) return 1;
    EXPECT(memra_device_unserved_count(rt) == 1, "%d unserved devices, want 1 (cc 7.5)", memra_device_unserved_count(rt));
    const char *u = memra_device_unserved(rt, 0);
    EXPECT(u != NULL && strstr(u, "cc 7.5") && strstr(u, "not served") && strstr(u, "older than cc 8.0"),
           "unserved line '%s'", u ? u : "(null)");
    EXPECT(memra_device_unserved(rt, 1) == NULL, "a second unserved line");
    printf("unserved: %s\n", u ? u : "(none)");
    check_budgets(rt, "default", "derived", (unsigned long long)-1);
    memra_device *d0 = memra_device_get(rt, 0);
    EXPECT(memra_device_f16_budget_set(d0, 77) == MEMRA_STATUS_OK && memra_device_f16_budget_get(d0) == 77 &&
               strcmp(memra_device_f16_budget_source(d0), "api") == 0,
           "memra_device_f16_budget_set(77): %llu MB (%s)", (unsigned long long)memra_device_f16_budget_get(d0),
           memra_device_f16_budget_source(d0));

    for (int d = 0; d < N_DEV; d++) {
        memra_device *dev = memra_device_get(rt, d);
        const memra_device_caps *c = memra_device_caps_get(dev);
        EXPECT(c->cc == k_cc[d], "device %d: cc %d, want %d", d, c->cc, k_cc[d]);
        printf("[%d] cc %d.%d profile %-6s:", d, c->cc / 10, c->cc % 10, c->profile);
        for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
            const char *names[16];
            int n = memra_routing_get(dev, (memra_op)op, names, 16);
            const char *want = expect_first((memra_op)op, k_cc[d], native121);
            const char *got = n > 0 ? names[0] : NULL;
            printf(" %s=%s", memra_op_name((memra_op)op), got ? got : "-");
            EXPECT((want == NULL && got == NULL) || (want && got && strcmp(want, got) == 0),
                   "cc %d %s: first module %s, want %s", k_cc[d], memra_op_name((memra_op)op), got ? got : "none",
                   want ? want : "none");
        }
        printf("\n");
        floor_route_defaults(rt, dev, k_cc[d]);
        /* the portable module is admitted exactly where nothing native is */
        const int want_portable = !(k_cc[d] == 90 || k_cc[d] == 120 || (k_cc[d] == 121 && native121));
        EXPECT((memra_module_score(dev, "portable") > 0) == want_portable, "cc %d: portable score %d", k_cc[d],
               memra_module_score(dev, "portable"));
        if (!want_portable) continue;
        EXPECT(memra_module_score(dev, "portable") < 50, "cc %d: portable scores %d, not below mmq / sm90 / sm120",
               k_cc[d], memra_module_score(dev, "portable"));
        memra_status s8 = MEMRA_STATUS_OK, sb = MEMRA_STATUS_OK;
        char w8[256], wb[256];
        const char *r8 = call_gemm(dev, MEMRA_OP_gemm_fp8, &s8, w8, sizeof w8);
        const char *rb = call_gemm(dev, MEMRA_OP_gemm_fp8_blk, &sb, wb, sizeof wb);
        const char *want8 = k_cc[d] < 89 ? "FP8 GEMM needs cc 8.9+" : "cuBLASLt is not available";
        const char *wantb = k_cc[d] == 90 || k_cc[d] / 10 == 10 ? "cuBLASLt is not available"
                                                                 : "cuBLASLt has it on cc 9.0 and 10.x only";
        EXPECT(s8 == MEMRA_STATUS_DECLINED && r8 && strstr(r8, want8), "cc %d gemm_fp8: status %d '%s', want '%s'",
               k_cc[d], (int)s8, r8 ? r8 : "", want8);
        EXPECT(sb == MEMRA_STATUS_DECLINED && rb && strstr(rb, wantb), "cc %d gemm_fp8_blk: status %d '%s', want '%s'",
               k_cc[d], (int)sb, rb ? rb : "", wantb);
        printf("     portable gemm_fp8: %s; gemm_fp8_blk: %s\n", r8 ? r8 : "-", rb ? rb : "-");
        /* images: SASS where the build has sm_<cc>, else the compute_80 PTX */
        const int sass = k_cc[d] == 80 || k_cc[d] == 86 || k_cc[d] == 89;
        for (int i = 0; i < 5; i++) {
            EXPECT(strcmp(g_origin[d][i], sass ? "SASS" : "PTX") == 0, "cc %d %s: loaded from '%s', want %s", k_cc[d],
                   k_images[i], g_origin[d][i], sass ? "SASS" : "PTX");
        }
        printf("     portable images: %s\n", sass ? "SASS" : "PTX (compute_80)");
    }
    int absent = absent_lookups(argv[1]);
    EXPECT(absent == 0, "%d kernel lookups for names the module's image lacks (want 0)", absent);
    memra_close(rt);

    /* MEMRA_ARCH=cuda: an H200 (and every other GPU) on the portable module,
     * its images from the compute_80 PTX where the build has no sm_<cc> */
    memset(g_origin, 0, sizeof g_origin);
    static const char *const forced[] = {"MEMRA_LOG=info", "MEMRA_ARCH=cuda", "MEMRA_F16_BUDGET_MB=1234", NULL};
    o.settings = forced;
    st = memra_open(&o, &rt);
    if (st != MEMRA_STATUS_OK) {
        printf("FAIL: memra_open (MEMRA_ARCH=cuda): %s\n", memra_last_error());
        return 1;
    }
    EXPECT(memra_device_count(rt) == N_DEV + 1, "MEMRA_ARCH=cuda: %d devices", memra_device_count(rt));
    check_budgets(rt, "MEMRA_F16_BUDGET_MB=1234 (option)", "option", 1234);
    for (int d = 0; d < N_DEV && d < memra_device_count(rt) - 1; d++) {
        memra_device *dev = memra_device_get(rt, d);
        const memra_device_caps *c = memra_device_caps_get(dev);
        EXPECT(strcmp(c->profile, "cuda") == 0, "MEMRA_ARCH=cuda: cc %d has profile %s", c->cc, c->profile);
        printf("[%d] cc %d.%d forced %-6s:", d, c->cc / 10, c->cc % 10, c->profile);
        for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
            const char *names[16];
            int n = memra_routing_get(dev, (memra_op)op, names, 16);
            const char *want = expect_first_forced((memra_op)op, k_cc[d], native121);
            const char *got = n > 0 ? names[0] : NULL;
            printf(" %s=%s", memra_op_name((memra_op)op), got ? got : "-");
            EXPECT((want == NULL && got == NULL) || (want && got && strcmp(want, got) == 0),
                   "MEMRA_ARCH=cuda cc %d %s: first module %s, want %s", k_cc[d], memra_op_name((memra_op)op),
                   got ? got : "none", want ? want : "none");
            /* the portable module is in every list of an op it has, mmq's included (it has no accprobe and no
             * gemm_w16) */
            if (op != MEMRA_OP_accprobe && op != MEMRA_OP_gemm_w16) {
                int has = 0;
                for (int i = 0; i < n && i < 16; i++) has |= strcmp(names[i], "portable") == 0;
                EXPECT(has, "MEMRA_ARCH=cuda cc %d %s: portable not in the routing", k_cc[d],
                       memra_op_name((memra_op)op));
            }
        }
        printf("\n");
        const int sass = k_cc[d] == 80 || k_cc[d] == 86 || k_cc[d] == 89;
        for (int i = 0; i < 5; i++)
            EXPECT(strcmp(g_origin[d][i], sass ? "SASS" : "PTX") == 0, "MEMRA_ARCH=cuda cc %d %s: loaded from '%s'",
                   k_cc[d], k_images[i], g_origin[d][i]);
    }
    const int absent_forced = absent_lookups(argv[1]) - absent;
    EXPECT(absent_forced == 0, "MEMRA_ARCH=cuda: %d kernel lookups for names the module's image lacks (want 0)",
           absent_forced);
    printf("kernel lookups for names an image lacks: %d, forced cuda %d\n", absent, absent_forced);
    memra_close(rt);

    /* the same knob from the environment */
    setenv("MEMRA_F16_BUDGET_MB", "555", 1);
    static const char *const quiet[] = {"MEMRA_LOG=warn", NULL};
    o.settings = quiet;
    if (memra_open(&o, &rt) != MEMRA_STATUS_OK) {
        printf("FAIL: memra_open (MEMRA_F16_BUDGET_MB=555): %s\n", memra_last_error());
        return 1;
    }
    check_budgets(rt, "MEMRA_F16_BUDGET_MB=555 (env)", "env", 555);
    memra_close(rt);
    unsetenv("MEMRA_F16_BUDGET_MB");
    printf("%s\n", g_fails ? "FAIL" : "PASS");
    return g_fails ? 1 : 0;
}
