/* The core on a real GPU: profile mapping, forced profiles, buffers, timers.
 * Exits 77 (skipped) where no CUDA device is present. */
#include <stdlib.h>

#include "memra/memra.h"
#include "test.h"

static memra_device *first_gpu(memra_runtime *rt)
{
    for (int i = 0; i < memra_device_count(rt); i++) {
        memra_device *d = memra_device_get(rt, i);
        if (memra_device_caps_get(d)->arch != MEMRA_ARCH_HOST) return d;
    }
    return NULL;
}

int main(void)
{
    uint64_t rng = test_seed();
    memra_options o = {.struct_size = sizeof o, .no_default_modules = 1};
    memra_runtime *rt;
    CHECK_OK(memra_open(&o, &rt));
    memra_device *gpu = first_gpu(rt);
    if (gpu == NULL) {
        printf("driver: %s\n", memra_driver_status(rt));
        memra_close(rt);
        TEST_SKIP("no CUDA device");
    }
    const memra_device_caps *c = memra_device_caps_get(gpu);
    printf("%s cc %d sms %d profile %s target %s driver %d\n", c->name, c->cc, c->sm_count, c->profile, c->jit_target,
           c->driver_version);
    CHECK(c->sm_count > 0 && c->total_mem > 0 && c->driver_version >= 12000);
    CHECK(c->cu_context != NULL);
    if (c->cc == 90) {
        CHECK_STR_EQ(c->profile, "sm90");
        CHECK_STR_EQ(c->jit_target, "sm_90a");
        CHECK(c->caps & MEMRA_CAP_WGMMA);
        CHECK(c->caps & MEMRA_CAP_LT_FP8_BLK128);
    } else if (c->cc >= 120 && c->cc < 130) {
        CHECK_STR_EQ(c->profile, "sm120");
        CHECK(!(c->caps & MEMRA_CAP_WGMMA));
    }
    CHECK_STR_EQ(memra_driver_status(rt), "ok");

    /* Buffers round-trip fresh random bytes. */
    size_t n = (size_t)(1 << 20) + 13;
    unsigned char *in = malloc(n), *out = malloc(n);
    for (size_t i = 0; i < n; i++) in[i] = (unsigned char)test_rand_u64(&rng);
    memra_buffer *b;
    CHECK_OK(memra_buffer_create(gpu, n, &b));
    CHECK(memra_buffer_ptr(b) != 0);
    CHECK_OK(memra_buffer_write(b, 0, in, n));
    memset(out, 0, n);
    CHECK_OK(memra_buffer_read(b, 0, out, n));
    CHECK(memcmp(in, out, n) == 0);
    CHECK_STATUS(memra_buffer_read(b, n - 4, out, 8), MEMRA_STATUS_INVALID_ARGUMENT);
    memra_buffer_destroy(b);
    free(in);
    free(out);

    /* A timer measures a non-negative interval. */
    memra_timer *t;
    CHECK_OK(memra_timer_create(gpu, &t));
    CHECK_OK(memra_timer_start(t, NULL));
    CHECK_OK(memra_timer_stop(t, NULL));
    double ms = -1;
    CHECK_OK(memra_timer_elapsed_ms(t, &ms));
    CHECK(ms >= 0.0 && ms < 1000.0);
    memra_timer_destroy(t);
    CHECK_OK(memra_device_synchronize(gpu));
    memra_close(rt);

    /* A forced profile: the portable one, compiled for the card's own cc. */
    setenv("MEMRA_ARCH", "cuda", 1);
    CHECK_OK(memra_open(&o, &rt));
    gpu = first_gpu(rt);
    CHECK(gpu != NULL);
    c = memra_device_caps_get(gpu);
    CHECK_STR_EQ(c->profile, "cuda");
    char want[16];
    snprintf(want, sizeof want, "sm_%d", c->cc);
    CHECK_STR_EQ(c->jit_target, want);
    CHECK(!(c->caps & MEMRA_CAP_WGMMA));
    memra_close(rt);
    unsetenv("MEMRA_ARCH");
    printf("ok\n");
    return 0;
}
