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
 */
#include <stdlib.h>

#include "memra/module.h"

#ifndef TESTMOD_NAME
#define TESTMOD_NAME "testgood"
#endif

typedef struct ctx {
    const memra_host_services *host;
    long calls;
} ctx;

static int score(const memra_device_caps *caps)
{
#if defined(SCORE0)
    (void)caps;
    return 0;
#elif defined(DECLINE)
    return caps->arch == MEMRA_ARCH_HOST ? 20 : 0;
#else
    return caps->arch == MEMRA_ARCH_HOST ? 10 : 0;
#endif
}

static memra_status init(const memra_host_services *host, const memra_device_caps *caps, void **out)
{
    (void)caps;
#if defined(INITFAIL)
    return host->set_error(MEMRA_STATUS_MODULE_ERROR, "testinitfail: refusing on purpose");
#else
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
#if defined(DECLINE)
    if (n % 2 != 0) {
        call->decline_reason = "odd length";
        return MEMRA_STATUS_DECLINED;
    }
#endif
    float *p = (float *)(uintptr_t)y;
    for (int64_t i = 0; i < n; i++) p[i] *= s;
    c->calls++;
#if defined(NFOUND)
    return c->host->set_error(MEMRA_STATUS_NOT_FOUND, "testnf: a module error that happens to be NOT_FOUND");
#else
    return MEMRA_STATUS_OK;
#endif
}

static const memra_op_table k_ops = {.struct_size = sizeof(memra_op_table), .scale = op_scale};

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
#else
    .struct_size = sizeof(memra_module_desc),
#endif
    .name = TESTMOD_NAME,
    .version = "9.9.9-test",
    .score = score,
    .init = init,
    .fini = fini,
    .ops = &k_ops,
};

#if !defined(NOENTRY)
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry(void) { return &k_desc; }
#else
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry_misspelt(void);
MEMRA_MODULE_EXPORT const memra_module_desc *memra_module_entry_misspelt(void) { return &k_desc; }
#endif
