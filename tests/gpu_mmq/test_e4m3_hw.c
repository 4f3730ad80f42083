/* The quantisers' e4m3 conversion on the device, for all 2^32 f32 patterns
 * (label gpu; exit 77 without NVRTC, libcuda or a device of cc 8.9 or later).
 *
 *   test_e4m3_hw <e4m3.cuh>
 *
 * modules/kernels/common/e4m3.cuh is compiled by NVRTC (the JIT test library)
 * for the device with a checking kernel: every pattern f through
 * memra_e4m3_pack4(f, f, f, f) (the hardware cvt.rn.satfinite.e4m3x2.f32 from
 * sm_89, the encoder for a NaN) and memra_e4m3_encode_sel, against
 * memra_e4m3_encode (the branchy encoder, itself checked against the host's by
 * formats.e4m3_device). Any difference fails with the first patterns that
 * differ. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_test.h"

typedef int CUres;
typedef struct drv {
    CUres (*cuInit)(unsigned);
    CUres (*cuDeviceGetCount)(int *);
    CUres (*cuDeviceGet)(int *, int);
    CUres (*cuDeviceGetAttribute)(int *, int, int);
    CUres (*cuDevicePrimaryCtxRetain)(void **, int);
    CUres (*cuCtxSetCurrent)(void *);
    CUres (*cuModuleLoadData)(void **, const void *);
    CUres (*cuModuleGetFunction)(void **, void *, const char *);
    CUres (*cuMemAlloc_v2)(unsigned long long *, size_t);
    CUres (*cuMemsetD8_v2)(unsigned long long, unsigned char, size_t);
    CUres (*cuMemcpyDtoH_v2)(void *, unsigned long long, size_t);
    CUres (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                            void **, void **);
    CUres (*cuCtxSynchronize)(void);
} drv;

#define DRV(call)                                                                   \
    do {                                                                            \
        CUres r_ = (call);                                                          \
        if (r_ != 0) TEST_FAIL_AT("%s: CUresult %d", #call, r_);                   \
    } while (0)

static const char k_kernel[] =
    "\nextern \"C\" __global__ void e4m3_check(unsigned long long *bad, unsigned int *first)\n"
    "{\n"
    "    const unsigned long long n = 1ull << 32, step = (unsigned long long)gridDim.x * blockDim.x;\n"
    "    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += step) {\n"
    "        const unsigned int u = (unsigned int)i;\n"
    "        const float f = __uint_as_float(u);\n"
    "        const unsigned int want = memra_e4m3_encode(f);\n"
    "        const unsigned int p = memra_e4m3_pack4(f, f, f, f), s = memra_e4m3_encode_sel(f);\n"
    "        /* mixed lanes: a NaN beside finite values sends the four through the encoder */\n"
    "        const unsigned int q = memra_e4m3_pack4(f, 1.0f, -f, 0.0f);\n"
    "        const unsigned int qw = want | (0x38u << 8) | (memra_e4m3_encode(-f) << 16);\n"
    "        if (p != want * 0x01010101u || s != want || q != qw) {\n"
    "            const unsigned long long k = atomicAdd(bad, 1ull);\n"
    "            if (k < 8) first[k] = u;\n"
    "        }\n"
    "    }\n"
    "}\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s <e4m3.cuh>\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) TEST_SKIP("no libcuda.so.1: %s", dlerror());
    drv d;
#define SYM(name)                                                                   \
    if ((*(void **)&d.name = dlsym(h, #name)) == NULL) TEST_FAIL_AT("dlsym %s", #name);
    SYM(cuInit) SYM(cuDeviceGetCount) SYM(cuDeviceGet) SYM(cuDeviceGetAttribute) SYM(cuDevicePrimaryCtxRetain)
    SYM(cuCtxSetCurrent) SYM(cuModuleLoadData) SYM(cuModuleGetFunction) SYM(cuMemAlloc_v2) SYM(cuMemsetD8_v2)
    SYM(cuMemcpyDtoH_v2) SYM(cuLaunchKernel) SYM(cuCtxSynchronize)
#undef SYM
    int count = 0;
    if (d.cuInit(0) != 0 || d.cuDeviceGetCount(&count) != 0 || count == 0) TEST_SKIP("no CUDA device");
    int dev = 0, major = 0, minor = 0;
    DRV(d.cuDeviceGet(&dev, 0));
    DRV(d.cuDeviceGetAttribute(&major, 75 /* COMPUTE_CAPABILITY_MAJOR */, dev));
    DRV(d.cuDeviceGetAttribute(&minor, 76 /* COMPUTE_CAPABILITY_MINOR */, dev));
    if (major * 10 + minor < 89) TEST_SKIP("cc %d.%d: no e4m3 conversion instruction (the encoder serves)", major, minor);
    /* the source: the header's text, then the kernel */
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) TEST_FAIL_AT("cannot open %s", argv[1]);
    char *src = malloc(1 << 20);
    CHECK(src != NULL);
    const size_t hl = fread(src, 1, (1 << 20) - sizeof k_kernel - 1, f);
    fclose(f);
    memcpy(src + hl, k_kernel, sizeof k_kernel);
    char target[16];
    snprintf(target, sizeof target, "sm_%d%d%s", major, minor, major == 9 || major >= 10 ? "a" : "");
    memra__jit *jit = jit_test_open();
    const char *opts[] = {"-std=c++17"};
    memra__jit_result r;
    const memra_status st = memra__jit_compile(jit, "e4m3_check", src, opts, 1, target, 0, &r);
    if (st != MEMRA_STATUS_OK) TEST_FAIL_AT("compiling for %s: %s: %s", target, memra_status_str(st), memra_last_error());
    void *ctx = NULL, *mod = NULL, *fn = NULL;
    DRV(d.cuDevicePrimaryCtxRetain(&ctx, dev));
    DRV(d.cuCtxSetCurrent(ctx));
    DRV(d.cuModuleLoadData(&mod, r.image));
    DRV(d.cuModuleGetFunction(&fn, mod, "e4m3_check"));
    unsigned long long bad_d = 0, first_d = 0;
    DRV(d.cuMemAlloc_v2(&bad_d, 8));
    DRV(d.cuMemAlloc_v2(&first_d, 32));
    DRV(d.cuMemsetD8_v2(bad_d, 0, 8));
    DRV(d.cuMemsetD8_v2(first_d, 0, 32));
    void *args[] = {&bad_d, &first_d};
    DRV(d.cuLaunchKernel(fn, 4096, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    DRV(d.cuCtxSynchronize());
    unsigned long long bad = 0;
    unsigned int first[8];
    DRV(d.cuMemcpyDtoH_v2(&bad, bad_d, 8));
    DRV(d.cuMemcpyDtoH_v2(first, first_d, 32));
    printf("%s: 2^32 patterns, %llu where memra_e4m3_pack4 (cvt.rn.satfinite.e4m3x2.f32) or encode_sel differs from "
           "memra_e4m3_encode\n", target, bad);
    for (unsigned long long i = 0; i < bad && i < 8; i++) printf("  0x%08x  FAIL\n", first[i]);
    memra__jit_destroy(jit);
    free(src);
    CHECK(bad == 0);
    printf("PASS\n");
    return 0;
}
