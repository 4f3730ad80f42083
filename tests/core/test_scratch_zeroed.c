/* host->scratch_get_zeroed (core/device/scratch.c): a block that is new, grown, or was
 * last handed out by plain scratch_get starts zero-filled; otherwise it keeps
 * what the module's last call on it left. The test module testzeroed reads its
 * block "ctr" into y and increments every word (see tests/modules/testmod.c),
 * so y shows, call after call, whether the block was zeroed or kept. */
#include <stdio.h>
#include <stdlib.h>

#include "memra/memra.h"
#include "test.h"

static memra_device *g_host;

/* One call of testzeroed's scale; every y[i] must equal `want`. */
static void call_expect(int64_t n, float mode, float want, const char *what)
{
    static float y[8192];
    for (int64_t i = 0; i < n; i++) y[i] = -12345.0f; /* overwritten by the module (mode > 0) */
    memra_op_args a = {.struct_size = sizeof a, .src = (memra_dptr)(uintptr_t)y, .n = n, .s = mode};
    CHECK_OK(memra_module_call(g_host, "testzeroed", MEMRA_OP_scale, &a));
    if (mode < 0) return;
    for (int64_t i = 0; i < n; i++)
        if (y[i] != want) TEST_FAIL_AT("%s: word %lld is %g, want %g", what, (long long)i, (double)y[i], (double)want);
    printf("%-52s n=%-5lld every word %g  PASS\n", what, (long long)n, (double)want);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s testzeroed.so\n", argv[0]);
        return 2;
    }
    /* testzeroed's scale is not a scale: the admission self-check would (rightly) quarantine it */
    setenv("MEMRA_ADMISSION", "off", 1);
    memra_options o = {.struct_size = sizeof o, .no_default_modules = 1};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    CHECK_OK(memra_module_load(rt, argv[1]));
    g_host = memra_device_host(rt);
    CHECK(g_host != NULL);
    call_expect(16, 1, 0, "new block: zero-filled");
    call_expect(16, 1, 1, "same block, next call: kept");
    call_expect(16, 1, 2, "and the next");
    call_expect(16, -1, 0, "plain scratch_get of the name (fills 0x7f)");
    call_expect(16, 1, 0, "zeroed again after a plain hand-out");
    call_expect(16, 1, 1, "kept again");
    call_expect(4096, 1, 0, "grown (a new allocation): zero-filled");
    call_expect(4096, 1, 1, "grown block kept");
    call_expect(16, 1, 2, "a smaller request: the same block, kept");
    memra_close(rt);
    printf("scratch_zeroed: PASS\n");
    return 0;
}
