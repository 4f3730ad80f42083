/* Test GEMM modules for the admission self-check, tuning, shadow A/B and
 * hot-add under load: gemm_bf16 on the host device, one source built with a
 * variant macro:
 *   GEMM_GOOD  "testgemm": correct (the host's contract: x rounded to bf16 RNE,
 *              products and sums in double), score 30
 *   GEMM_SLOW  "testslow": correct, but repeats the whole product `reps` times
 *              (default 8); two variants, "reps4" (MEMRA_TESTSLOW_REPS=4) and
 *              "reps1" (MEMRA_TESTSLOW_REPS=1), score 40
 *   GEMM_WRONG "testwrong": correct for m < 8; for m >= 8 it drops the last 32
 *              columns of k (a wrong-on-some-shapes kernel), score 50
 *   GEMM_FAIL  "testfail": every gemm_bf16 returns MODULE_ERROR, score 50
 *   GEMM_TWIN  "testtwin": testgemm's code, with a variant "same" that runs the
 *              very same code (a race of identical arms), score 60
 * Every build counts its calls in flight. Its destructor (run by dlclose)
 * reports that count to the test program through the hook
 * memra_testhook_closed(name, in_flight) when the program exports one
 * (-rdynamic): a count above 0 means the library was closed under a call.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memra/module.h"

#ifndef TESTMOD_NAME
#define TESTMOD_NAME "testgemm"
#endif

static atomic_long g_in_flight;

__attribute__((destructor)) static void report_close(void)
{
    void (*hook)(const char *, long) = (void (*)(const char *, long))(uintptr_t)dlsym(RTLD_DEFAULT, "memra_testhook_closed");
    if (hook != NULL) hook(TESTMOD_NAME, atomic_load(&g_in_flight));
}

typedef struct ctx {
    const memra_host_services *host;
    int reps;
} ctx;

static int score(const memra_device_caps *caps)
{
    if (caps->arch != MEMRA_ARCH_HOST) return 0;
#if defined(GEMM_GOOD)
    return 30;
#elif defined(GEMM_TWIN)
    return 60;
#elif defined(GEMM_SLOW)
    return 40;
#else
    return 50;
#endif
}

static memra_status init(const memra_host_services *host, const memra_device_caps *caps, void **out)
{
    ctx *c = calloc(1, sizeof *c);
    if (c == NULL) return MEMRA_STATUS_OUT_OF_MEMORY;
    c->host = host;
    c->reps = 8;
#if defined(GEMM_SLOW)
    const char *r = MEMRA_HAS_MEMBER(host, memra_host_services, knob) ? host->knob(caps, "MEMRA_TESTSLOW_REPS") : NULL;
    if (r != NULL) c->reps = atoi(r) > 0 ? atoi(r) : 1;
#else
    (void)caps;
#endif
    *out = c;
    return MEMRA_STATUS_OK;
}

static void fini(void *p) { free(p); }

static float bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

static float bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#if defined(GEMM_TWIN)
static const memra_variant k_variants[] = {{.name = "same", .knobs = "MEMRA_TESTTWIN_SAME=1"}};
static const memra_variant *variants(const memra_device_caps *caps, memra_op op, size_t *n)
{
    (void)caps;
    *n = op == MEMRA_OP_gemm_bf16 ? 1 : 0;
    return op == MEMRA_OP_gemm_bf16 ? k_variants : NULL;
}
#endif

#if defined(GEMM_SLOW)
static const memra_variant k_variants[] = {
    {.name = "reps4", .knobs = "MEMRA_TESTSLOW_REPS=4"},
    {.name = "reps1", .knobs = "MEMRA_TESTSLOW_REPS=1"},
};
static const memra_variant *variants(const memra_device_caps *caps, memra_op op, size_t *n)
{
    (void)caps;
    *n = op == MEMRA_OP_gemm_bf16 ? 2 : 0;
    return op == MEMRA_OP_gemm_bf16 ? k_variants : NULL;
}
#endif

static memra_status gemm_bf16(memra_call *call, const memra_gemm_args *a)
{
    ctx *c = call->module_ctx;
    atomic_fetch_add(&g_in_flight, 1);
#if defined(GEMM_FAIL)
    atomic_fetch_sub(&g_in_flight, 1);
    return c->host->set_error(MEMRA_STATUS_MODULE_ERROR, "testfail: gemm_bf16 fails on purpose");
#else
    int reps = 1;
#if defined(GEMM_SLOW)
    reps = c->reps;
    if (MEMRA_HAS_MEMBER(call, memra_call, variant) && call->variant >= 0) reps = call->variant == 0 ? 4 : 1;
#endif
    (void)c;
    const uint16_t *w = (const uint16_t *)(uintptr_t)a->w;
    const float *x = (const float *)(uintptr_t)a->x;
    float *y = (float *)(uintptr_t)a->y;
    int kk = a->k;
#if defined(GEMM_WRONG)
    if (a->m >= 8 && kk > 32) kk -= 32;
#endif
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < a->m; i++)
            for (int j = 0; j < a->n; j++) {
                double s = 0.0;
                for (int q = 0; q < kk; q++)
                    s += (double)bf16_round(x[(size_t)i * a->k + q]) * (double)bf16_value(w[(size_t)j * a->k + q]);
                y[(a->y_row_offset + i) * a->ldy + j] = (float)((double)a->alpha * s);
            }
    atomic_fetch_sub(&g_in_flight, 1);
    return MEMRA_STATUS_OK;
#endif
}

static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .gemm_bf16 = gemm_bf16};

static const memra_module_desc k_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = TESTMOD_NAME,
    .version = "1.0.0-test",
    .score = score,
    .init = init,
    .fini = fini,
    .ops = &k_ops,
#if defined(GEMM_SLOW) || defined(GEMM_TWIN)
    .variants = variants,
#endif
};

MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_desc; }
