/* On a GPU: compile a kernel for the device's arch, load it through the
 * driver (memra__jit_load and the module map), launch it, check the result;
 * a second jit object gets the image from the disk cache and loads it too.
 * Exits 77 without a driver, a device or NVRTC. */
#include <time.h>

#include "base/driver.h"
#include "jit_test.h"

static const char *target_for(int cc)
{
    switch (cc) {
    case 90: return "sm_90a";
    case 100: return "sm_100a";
    case 120: return "sm_120a";
    case 121: return "sm_121a";
    default: {
        static char t[16];
        snprintf(t, sizeof t, "sm_%d", cc);
        return t;
    }
    }
}

#define CU(call)                                                                                    \
    do {                                                                                            \
        CUresult r_ = (call);                                                                       \
        if (r_ != MEMRA__CUDA_SUCCESS) TEST_FAIL_AT("%s: %s", #call, memra__driver_errstr(&drv, r_)); \
    } while (0)

int main(void)
{
    memra__driver drv;
    char why[512] = "";
    memra_status st = memra__driver_open(&drv, why, sizeof why);
    if (st != MEMRA_STATUS_OK) TEST_SKIP("no CUDA device: %s (%s)", why, memra_status_str(st));
    int count = 0;
    if (drv.cuDeviceGetCount(&count) != MEMRA__CUDA_SUCCESS || count == 0) TEST_SKIP("no CUDA device");
    jit_test_cache_dir();
    memra__jit *jit = jit_test_open();

    CUdevice dev;
    CUcontext ctx;
    int major = 0, minor = 0;
    CU(drv.cuDeviceGet(&dev, 0));
    CU(drv.cuDeviceGetAttribute(&major, MEMRA__CU_ATTR_CC_MAJOR, dev));
    CU(drv.cuDeviceGetAttribute(&minor, MEMRA__CU_ATTR_CC_MINOR, dev));
    CU(drv.cuDevicePrimaryCtxRetain(&ctx, dev));
    const char *target = target_for(major * 10 + minor);
    printf("device 0: cc %d.%d, target %s\n", major, minor, target);

    memra__jit_result r;
    CHECK_OK(memra__jit_compile(jit, "scale", jit_test_src_scale, NULL, 0, target, 0, &r));
    CHECK_INT_EQ(r.origin, MEMRA__JIT_ORIGIN_NVRTC);
    printf("cold compile: %.1f ms\n", r.ms);

    memra__jit_modmap *map = NULL;
    CHECK_OK(memra__jit_modmap_create(&map));
    CUmodule mod, mod2;
    CHECK_OK(memra__jit_modmap_get(map, &drv, ctx, r.image, r.size, &mod));
    CHECK_OK(memra__jit_modmap_get(map, &drv, ctx, r.image, r.size, &mod2));
    CHECK(mod == mod2);

    enum { N = 1000 };
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    CU(drv.cuCtxPushCurrent(ctx));
    CUfunction fn;
    CU(drv.cuModuleGetFunction(&fn, mod, "memra_test_scale"));
    CUdeviceptr d;
    CU(drv.cuMemAlloc(&d, sizeof host));
    CU(drv.cuMemcpyHtoD(d, host, sizeof host));
    float s = 3.0f;
    int n = N;
    void *params[] = {&d, &s, &n};
    CU(drv.cuLaunchKernel(fn, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU(drv.cuCtxSynchronize());
    CU(drv.cuMemcpyDtoH(host, d, sizeof host));
    for (int i = 0; i < N; i++)
        if (host[i] != 3.0f * (float)i) TEST_FAIL_AT("x[%d] = %g, want %g", i, (double)host[i], 3.0 * i);
    CU(drv.cuMemFree(d));
    CUcontext popped;
    CU(drv.cuCtxPopCurrent(&popped));
    printf("launch ok\n");

    /* a second object: from disk, and it loads */
    memra__jit *jit2 = jit_test_open();
    memra__jit_result r2;
    CHECK_OK(memra__jit_compile(jit2, "scale", jit_test_src_scale, NULL, 0, target, 0, &r2));
    CHECK_INT_EQ(r2.origin, MEMRA__JIT_ORIGIN_DISK);
    CUmodule mod3;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_OK(memra__jit_load(&drv, ctx, r2.image, r2.size, &mod3));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("warm: disk read+verify %.3f ms, load %.3f ms\n", r2.ms,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    CU(drv.cuModuleUnload(mod3));
    /* a bad image is a clear driver error, not a crash */
    static const char junk[64] = "not a cubin";
    CUmodule bad;
    CHECK_STATUS(memra__jit_load(&drv, ctx, junk, sizeof junk, &bad), MEMRA_STATUS_DRIVER_ERROR);
    printf("junk image: %s\n", memra_last_error());

    memra__jit_modmap_destroy(map, &drv, ctx);
    memra__jit_destroy(jit2);
    memra__jit_destroy(jit);
    drv.cuDevicePrimaryCtxRelease(dev);
    memra__driver_close(&drv);
    printf("ok\n");
    return 0;
}
