/* The block-128 FP8 family through the real NVRTC (label jit; no GPU needed).
 *
 * The declared sources are taken from the built modules themselves: each
 * module file is dlopen'd and its jit_sources() called with a fake device
 * description, then every source is compiled by the JIT (jit/, linked as
 * memra_jit_testlib) for the module's target and the cubin's ELF header read
 * back (tests/jit/jit_test.h). Exit 77 without NVRTC.
 *
 *   test_fp8blk_jit <case> <fp8blk.so> <sm120.so>
 * cases:
 *   sm90a          fp8blk declares fp8blk_gemm.e4m3; it builds for sm_90a, with the wgmma kernel
 *   sm120a         sm120 declares f8f6f4 and mxf8f6f4; both build for sm_120a
 *   kind_sm90a     the kind:: variants refuse sm_90a with the source's #error
 *   tile           MEMRA_FP8BLK_TILE=64x64 (host->knob at init) reaches the options and builds
 *   elsewhere      no sources on other targets (fp8blk on sm_120a, sm120 on sm_90a)
 */
#include <dlfcn.h>

#include "jit_test.h"
#include "memra/module.h"

typedef struct mod {
    void *dl;
    const memra_module_desc *desc;
} mod;

static mod mod_open(const char *path)
{
    mod m = {dlopen(path, RTLD_NOW | RTLD_LOCAL), NULL};
    if (m.dl == NULL) TEST_FAIL_AT("dlopen %s: %s", path, dlerror());
    memra_module_entry_fn entry;
    *(void **)&entry = dlsym(m.dl, "memra_module_entry");
    CHECK(entry != NULL);
    m.desc = entry();
    CHECK(m.desc != NULL);
    CHECK_INT_EQ(m.desc->abi_version, MEMRA_MODULE_ABI_VERSION);
    CHECK(m.desc->jit_sources != NULL);
    return m;
}

static memra_device_caps fake_caps(memra_arch arch, int cc, const char *profile, const char *target)
{
    memra_device_caps c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.arch = arch;
    c.profile = profile;
    c.name = "fake";
    c.ordinal = 0;
    c.cc = cc;
    c.sm_count = 132;
    c.jit_target = target;
    c.smem_per_block_optin = 227 * 1024;
    return c;
}

static memra_device_caps sm90_caps(void) { return fake_caps(MEMRA_ARCH_SM90, 90, "sm90", "sm_90a"); }
static memra_device_caps sm120_caps(void) { return fake_caps(MEMRA_ARCH_SM120, 120, "sm120", "sm_120a"); }

static int has_option(const memra_jit_source *s, const char *opt)
{
    for (int i = 0; i < s->n_options; i++)
        if (strcmp(s->options[i], opt) == 0) return 1;
    return 0;
}

/* What every declared source must satisfy before it reaches NVRTC. */
static void check_declared(const memra_jit_source *s, int mma)
{
    char want[32];
    printf("source %s: %zu bytes, options:", s->name, strlen(s->source));
    for (int i = 0; i < s->n_options; i++) printf(" %s", s->options[i]);
    printf("\n");
    CHECK(s->name != NULL && s->source != NULL && s->n_options > 0);
    CHECK(strncmp(s->name, "fp8blk_gemm.", 12) == 0);
    CHECK(strstr(s->source, "#include \"") == NULL); /* self-contained: NVRTC has no include folder */
    CHECK(strstr(s->source, "memra_e4m3_encode") != NULL);      /* e4m3.cuh inlined */
    CHECK(strstr(s->source, "memra_k_fp8blk_gemm") != NULL);    /* the names the loader looks up */
    CHECK(strstr(s->source, "memra_k_fp8blk_quant") != NULL);
    CHECK(strstr(s->source, "memra_k_fp8blk_quant_given") != NULL);
    snprintf(want, sizeof want, "-DFP8BLK_MMA=%d", mma);
    CHECK(has_option(s, want));
    CHECK(has_option(s, "-std=c++17"));
    for (int i = 0; i < s->n_options; i++) {
        CHECK(strstr(s->options[i], "fast_math") == NULL && strstr(s->options[i], "fast-math") == NULL);
        CHECK(strncmp(s->options[i], "-arch", 5) != 0 && strncmp(s->options[i], "--gpu-architecture", 18) != 0);
    }
}

static void compile_check(memra__jit *jit, const memra_jit_source *s, const char *target)
{
    memra__jit_result r;
    memra_status st = memra__jit_compile(jit, s->name, s->source, s->options, s->n_options, target, 0, &r);
    if (st != MEMRA_STATUS_OK)
        TEST_FAIL_AT("compiling %s for %s: %s: %s", s->name, target, memra_status_str(st), memra_last_error());
    printf("%s for %s: %s, %.0f ms\n", s->name, target, memra__jit_origin_str(r.origin), r.ms);
    jit_test_check_cubin(r.image, r.size, target);
    /* the kernels the loader asks cuModuleGetFunction for, unmangled */
    CHECK(memmem(r.image, r.size, "memra_k_fp8blk_gemm", 19) != NULL);
    CHECK(memmem(r.image, r.size, "memra_k_fp8blk_quant", 20) != NULL);
    CHECK(memmem(r.image, r.size, "memra_k_fp8blk_quant_given", 26) != NULL); /* the one-pass quantiser */
    CHECK(memmem(r.image, r.size, "_Z19memra_k_fp8blk_gemm", 23) == NULL);
    /* the warpgroup kernel: in the sm_90a image (NVRTC defines __CUDA_ARCH_FEAT_SM90_ALL there), nowhere else */
    const int wg = memmem(r.image, r.size, "memra_k_fp8blk_wgmma", 20) != NULL;
    const int mb = memmem(r.image, r.size, "memra_k_fp8blk_wgmma_mb", 23) != NULL;
    CHECK_INT_EQ(wg, strcmp(target, "sm_90a") == 0);
    CHECK_INT_EQ(mb, strcmp(target, "sm_90a") == 0);
    CHECK_INT_EQ(memmem(r.image, r.size, "memra_k_fp8blk_wgmma_wide", 25) != NULL, strcmp(target, "sm_90a") == 0);
    CHECK_INT_EQ(memmem(r.image, r.size, "memra_k_fp8blk_wgmma_tma", 24) != NULL, strcmp(target, "sm_90a") == 0);
}

static const memra_jit_source *declared(const mod *m, const memra_device_caps *caps, size_t *n)
{
    *n = 99;
    const memra_jit_source *s = m->desc->jit_sources(caps, n);
    printf("%s declares %zu source(s) for %s\n", m->desc->name, *n, caps->jit_target);
    return s;
}

static int case_sm90a(const mod *fp8blk)
{
    memra_device_caps caps = sm90_caps();
    size_t n;
    const memra_jit_source *s = declared(fp8blk, &caps, &n);
    CHECK_INT_EQ(n, 4); /* the default tile, then the three tile variants */
    CHECK(s != NULL);
    CHECK_STR_EQ(s[0].name, "fp8blk_gemm.e4m3");
    static const char *const vnames[3] = {"fp8blk_gemm.e4m3.64x128", "fp8blk_gemm.e4m3.128x64", "fp8blk_gemm.e4m3.64x64"};
    static const char *const vbm[3] = {"-DFP8BLK_BM=64", "-DFP8BLK_BM=128", "-DFP8BLK_BM=64"};
    static const char *const vbn[3] = {"-DFP8BLK_BN=128", "-DFP8BLK_BN=64", "-DFP8BLK_BN=64"};
    for (int i = 0; i < 3; i++) {
        CHECK_STR_EQ(s[1 + i].name, vnames[i]);
        check_declared(&s[1 + i], 0);
        CHECK(has_option(&s[1 + i], vbm[i]));
        CHECK(has_option(&s[1 + i], vbn[i]));
    }
    check_declared(&s[0], 0);
    memra__jit *jit = jit_test_open();
    for (size_t i = 0; i < n; i++) compile_check(jit, &s[i], "sm_90a"); /* every variant's source builds */
    memra__jit_destroy(jit);
    return 0;
}

static int case_sm120a(const mod *sm120)
{
    memra_device_caps caps = sm120_caps();
    size_t n;
    const memra_jit_source *s = declared(sm120, &caps, &n);
    CHECK_INT_EQ(n, 2);
    CHECK(s != NULL);
    CHECK_STR_EQ(s[0].name, "fp8blk_gemm.f8f6f4");
    CHECK_STR_EQ(s[1].name, "fp8blk_gemm.mxf8f6f4");
    check_declared(&s[0], 1);
    check_declared(&s[1], 2);
    memra__jit *jit = jit_test_open();
    for (size_t i = 0; i < n; i++) compile_check(jit, &s[i], "sm_120a");
    /* Not sm_121a: NVRTC 13.0 defines __CUDA_ARCH_SPECIFIC__ 1210 there but
     * not __CUDA_ARCH_FEAT_SM121_ALL (nvcc 13.0 defines both), so the guard
     * refuses it under the JIT. */
    memra__jit_destroy(jit);
    return 0;
}

static int case_kind_sm90a(const mod *sm120)
{
    memra_device_caps caps = sm120_caps();
    size_t n;
    const memra_jit_source *s = declared(sm120, &caps, &n);
    CHECK_INT_EQ(n, 2);
    memra__jit *jit = jit_test_open();
    for (size_t i = 0; i < n; i++) {
        memra__jit_result r;
        memra_status st = memra__jit_compile(jit, s[i].name, s[i].source, s[i].options, s[i].n_options, "sm_90a", 0, &r);
        CHECK_INT_EQ(st, MEMRA_STATUS_NVRTC_ERROR);
        printf("%s for sm_90a refused as it should be\n", s[i].name);
        CHECK_STR_CONTAINS(memra_last_error(), "need sm_120a or sm_121a");
    }
    memra__jit_destroy(jit);
    return 0;
}

/* The knobs a module reads at init come through host->knob. */
static const char *fake_knob(const memra_device_caps *caps, const char *name)
{
    (void)caps;
    return strcmp(name, "MEMRA_FP8BLK_TILE") == 0 ? "64x64" : NULL;
}

static memra_status fake_set_error(memra_status st, const char *fmt, ...)
{
    (void)fmt;
    return st;
}

static int case_tile(const mod *fp8blk)
{
    /* read once per process by the module, at its first init (which fails
     * here for want of a CUDA context, after taking the knob) */
    memra_device_caps caps = sm90_caps();
    memra_host_services host;
    memset(&host, 0, sizeof host);
    host.abi_version = MEMRA_MODULE_ABI_VERSION;
    host.struct_size = sizeof host;
    host.set_error = fake_set_error;
    host.knob = fake_knob;
    void *ctx = NULL;
    CHECK(fp8blk->desc->init(&host, &caps, &ctx) != MEMRA_STATUS_OK);
    size_t n;
    const memra_jit_source *s = declared(fp8blk, &caps, &n);
    CHECK_INT_EQ(n, 4); /* the knob's tile, then the variants (which the knob does not change) */
    CHECK(has_option(&s[1], "-DFP8BLK_BN=128"));
    check_declared(&s[0], 0);
    CHECK(has_option(&s[0], "-DFP8BLK_BM=64"));
    CHECK(has_option(&s[0], "-DFP8BLK_BN=64"));
    CHECK(has_option(&s[0], "-DFP8BLK_WARPS_M=2"));
    CHECK(has_option(&s[0], "-DFP8BLK_WARPS_N=4"));
    memra__jit *jit = jit_test_open();
    compile_check(jit, &s[0], "sm_90a");
    memra__jit_destroy(jit);
    return 0;
}

static int case_elsewhere(const mod *fp8blk, const mod *sm120)
{
    memra_device_caps c90 = sm90_caps(), c120 = sm120_caps();
    memra_device_caps c86 = fake_caps(MEMRA_ARCH_CUDA, 86, "cuda", "sm_86");
    memra_device_caps forced = fake_caps(MEMRA_ARCH_SM120, 90, "sm120", "sm_90"); /* MEMRA_ARCH=sm120 on an H200 */
    size_t n;
    CHECK(declared(fp8blk, &c120, &n) == NULL);
    CHECK_INT_EQ(n, 0);
    CHECK(declared(fp8blk, &c86, &n) == NULL);
    CHECK_INT_EQ(n, 0);
    CHECK(declared(sm120, &c90, &n) == NULL);
    CHECK_INT_EQ(n, 0);
    CHECK(declared(sm120, &forced, &n) == NULL);
    CHECK_INT_EQ(n, 0);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) TEST_FAIL_AT("usage: test_fp8blk_jit <case> <fp8blk module> <sm120 module>");
    const char *c = argv[1];
    jit_test_cache_dir();
    mod fp8blk = mod_open(argv[2]), sm120 = mod_open(argv[3]);
    int rc;
    if (strcmp(c, "sm90a") == 0) rc = case_sm90a(&fp8blk);
    else if (strcmp(c, "sm120a") == 0) rc = case_sm120a(&sm120);
    else if (strcmp(c, "kind_sm90a") == 0) rc = case_kind_sm90a(&sm120);
    else if (strcmp(c, "tile") == 0) rc = case_tile(&fp8blk);
    else if (strcmp(c, "elsewhere") == 0) rc = case_elsewhere(&fp8blk, &sm120);
    else TEST_FAIL_AT("unknown case %s", c);
    dlclose(fp8blk.dl);
    dlclose(sm120.dl);
    if (rc == 0) printf("PASS %s\n", c);
    return rc;
}
