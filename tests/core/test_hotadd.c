/* Hot-add into a running process: worker threads keep calling the module's
 * op while the main thread unloads and reloads it; calls in flight finish on
 * their snapshot, nothing crashes, and each call either ran or was NOT_FOUND.
 * argv[1] = path of testgood.so. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "memra/memra.h"
#include "test.h"

static memra_runtime *g_rt;
static atomic_int g_stop;
static atomic_long g_ran, g_absent;

static void *worker(void *arg)
{
    (void)arg;
    memra_device *host = memra_device_host(g_rt);
    float v[64];
    while (!atomic_load(&g_stop)) {
        for (int i = 0; i < 64; i++) v[i] = 1.0f;
        memra_op_args a = {.struct_size = sizeof a, .src = (memra_dptr)(uintptr_t)v, .n = 64, .s = 3.0f};
        memra_status st = memra_module_call(host, "testgood", MEMRA_OP_scale, &a);
        if (st == MEMRA_STATUS_OK) {
            for (int i = 0; i < 64; i++)
                if (v[i] != 3.0f) TEST_FAIL_AT("v[%d] = %g after scale by 3", i, (double)v[i]);
            atomic_fetch_add(&g_ran, 1);
        } else if (st == MEMRA_STATUS_NOT_FOUND) {
            atomic_fetch_add(&g_absent, 1);
        } else {
            TEST_FAIL_AT("unexpected status %s: %s", memra_status_str(st), memra_last_error());
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) TEST_FAIL_AT("usage: test_hotadd <testgood.so>");
    memra_options o = {.struct_size = sizeof o, .no_cuda = 1, .no_default_modules = 1};
    CHECK_OK(memra_open(&o, &g_rt));
    CHECK_OK(memra_module_load(g_rt, argv[1]));
    CHECK_STATUS(memra_module_load(g_rt, argv[1]), MEMRA_STATUS_MODULE_ERROR); /* loaded already */
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, worker, NULL);
    /* Let the workers reach the module before the first unload (on a loaded
     * machine they may not have been scheduled yet); bounded to ~10 s. */
    for (int spin = 0; atomic_load(&g_ran) == 0 && spin < 10000; spin++) usleep(1000);
    for (int round = 0; round < 100; round++) {
        CHECK_OK(memra_module_unload(g_rt, "testgood"));
        CHECK_OK(memra_routing_configure(g_rt, round % 2 ? "scale=host" : "", NULL));
        CHECK_OK(memra_module_load(g_rt, argv[1]));
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    if (atomic_load(&g_ran) == 0) TEST_FAIL_AT("no call ran through the module");
    printf("calls that ran: %ld, calls after unload: %ld\n", atomic_load(&g_ran), atomic_load(&g_absent));
    memra_close(g_rt);
    return 0;
}
