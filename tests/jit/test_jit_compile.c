/* NVRTC compiles for sm_90a and sm_120a, read back from the cubin's ELF
 * header; arch-specific MMAs compile only where they exist; failures carry
 * the compiler's log. Runs with the disk cache off. Usage: test_jit_compile CASE */
#include "jit_test.h"

#define FEAT_SM90 "defined(__CUDA_ARCH_FEAT_SM90_ALL)"
#define FEAT_SM120 "defined(__CUDA_ARCH_FEAT_SM120_ALL)"
#define UNGUARDED "1"

static const char src_plain_sm90[] = JIT_TEST_MMA_SRC(FEAT_SM90, JIT_TEST_MMA_PLAIN, "", "");
static const char src_f8f6f4_sm120[] = JIT_TEST_MMA_SRC(FEAT_SM120, JIT_TEST_MMA_F8F6F4, "", "");
static const char src_mx_sm120[] =
    JIT_TEST_MMA_SRC(FEAT_SM120, JIT_TEST_MMA_MX, ", \"r\"(0x7f7f7f7fu), \"r\"(0x7f7f7f7fu)", ", %10, {0, 0}, %11, {0, 0}");
static const char src_f8f6f4_unguarded[] = JIT_TEST_MMA_SRC(UNGUARDED, JIT_TEST_MMA_F8F6F4, "", "");

/* Compile with PTX, check the cubin's header and that the instruction really
 * is in the PTX (a guard that compiled it away would pass otherwise). */
static void compile_ok(memra__jit *jit, const char *name, const char *src, const char *target, const char *insn)
{
    memra__jit_result r;
    CHECK_OK(memra__jit_compile(jit, name, src, NULL, 0, target, 1, &r));
    CHECK_INT_EQ(r.origin, MEMRA__JIT_ORIGIN_NVRTC);
    printf("%s for %s: %zu bytes in %.1f ms\n", name, target, r.size, r.ms);
    jit_test_check_cubin(r.image, r.size, target);
    CHECK(r.ptx != NULL && r.ptx_size == strlen(r.ptx) + 1);
    char want_target[32];
    snprintf(want_target, sizeof want_target, ".target %s", target);
    CHECK_STR_CONTAINS(r.ptx, want_target);
    if (insn != NULL) CHECK_STR_CONTAINS(r.ptx, insn);
    /* asked again: from memory, same image */
    memra__jit_result again;
    CHECK_OK(memra__jit_compile(jit, name, src, NULL, 0, target, 1, &again));
    CHECK_INT_EQ(again.origin, MEMRA__JIT_ORIGIN_MEMORY);
    CHECK(again.image == r.image && again.size == r.size && again.ptx == r.ptx);
}

int main(int argc, char **argv)
{
    if (argc != 2) TEST_FAIL_AT("usage: %s CASE", argv[0]);
    const char *c = argv[1];
    setenv("MEMRA_JIT_CACHE", "0", 1); /* these cases never touch the user's cache */

    if (strcmp(c, "missing_nvrtc") == 0) {
        setenv("MEMRA_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.13", 1);
        memra__jit *jit = NULL;
        CHECK_OK(memra__jit_create(&jit)); /* creating never needs NVRTC */
        memra__jit_result r;
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, NULL, 0, "sm_90a", 0, &r),
                     MEMRA_STATUS_NOT_SUPPORTED);
        printf("message: %s\n", memra_last_error());
        CHECK_STR_CONTAINS(memra_last_error(), "/nonexistent/libnvrtc.so.13");
        CHECK_STR_CONTAINS(memra_last_error(), "NVRTC not found");
        /* remembered: the second call fails the same way */
        CHECK_STATUS(memra__jit_nvrtc_version(jit, NULL, NULL), MEMRA_STATUS_NOT_SUPPORTED);
        CHECK_STR_CONTAINS(memra_last_error(), "/nonexistent/libnvrtc.so.13");
        memra__jit_destroy(jit);
        return 0;
    }

    memra__jit *jit = jit_test_open();
    if (strcmp(c, "sm90a") == 0) {
        compile_ok(jit, "scale", jit_test_src_scale, "sm_90a", NULL);
        compile_ok(jit, "mma_e4m3", src_plain_sm90, "sm_90a", JIT_TEST_MMA_PLAIN);
    } else if (strcmp(c, "sm120a") == 0) {
        compile_ok(jit, "scale", jit_test_src_scale, "sm_120a", NULL);
        compile_ok(jit, "mma_f8f6f4", src_f8f6f4_sm120, "sm_120a", JIT_TEST_MMA_F8F6F4);
        compile_ok(jit, "mma_mxf8f6f4", src_mx_sm120, "sm_120a", "kind::mxf8f6f4.block_scale");
    } else if (strcmp(c, "f8f6f4_fails_sm90a") == 0) {
        memra__jit_result r;
        compile_ok(jit, "mma_f8f6f4_unguarded", src_f8f6f4_unguarded, "sm_120a", JIT_TEST_MMA_F8F6F4);
        CHECK_STATUS(memra__jit_compile(jit, "mma_f8f6f4_unguarded", src_f8f6f4_unguarded, NULL, 0, "sm_90a", 0, &r),
                     MEMRA_STATUS_NVRTC_ERROR);
        printf("message: %s\n", memra_last_error());
        CHECK_STR_CONTAINS(memra_last_error(), "mma_f8f6f4_unguarded");
        CHECK_STR_CONTAINS(memra_last_error(), "NVRTC_ERROR_COMPILATION");
        CHECK_STR_CONTAINS(memra_last_error(), "kind::f8f6f4");
        CHECK_STR_CONTAINS(memra_last_error(), "not supported on .target 'sm_90a'");
        /* the guarded form compiles for sm_90a (the guard removes the MMA) */
        CHECK_OK(memra__jit_compile(jit, "mma_f8f6f4", src_f8f6f4_sm120, NULL, 0, "sm_90a", 0, &r));
        jit_test_check_cubin(r.image, r.size, "sm_90a");
    } else if (strcmp(c, "syntax_error") == 0) {
        memra__jit_result r;
        static const char bad[] = "extern \"C\" __global__ void k(float *x)\n{\n    x[0] = undeclared_thing;\n}\n";
        CHECK_STATUS(memra__jit_compile(jit, "broken_kernel", bad, NULL, 0, "sm_90a", 0, &r), MEMRA_STATUS_NVRTC_ERROR);
        printf("message: %s\n", memra_last_error());
        CHECK_STR_CONTAINS(memra_last_error(), "broken_kernel");
        CHECK_STR_CONTAINS(memra_last_error(), "undeclared_thing");
        CHECK_STR_CONTAINS(memra_last_error(), "(3)"); /* the line number */
        /* a bad option is an NVRTC error too */
        const char *opts[] = {"--no-such-option"};
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, opts, 1, "sm_90a", 0, &r), MEMRA_STATUS_NVRTC_ERROR);
        printf("message: %s\n", memra_last_error());
    } else if (strcmp(c, "options") == 0) {
        memra__jit_result a, b;
        const char *o1[] = {"-DSCALE_UNUSED=1", "--use_fast_math"};
        CHECK_OK(memra__jit_compile(jit, "k", jit_test_src_scale, o1, 2, "sm_90a", 0, &a));
        CHECK_OK(memra__jit_compile(jit, "k", jit_test_src_scale, NULL, 0, "sm_90a", 0, &b));
        CHECK(memcmp(a.key, b.key, 32) != 0);
        CHECK(a.image != b.image);
    } else if (strcmp(c, "bad_args") == 0) {
        memra__jit_result r;
        const char *arch[] = {"-arch=sm_80"};
        const char *nul[] = {NULL};
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, arch, 1, "sm_90a", 0, &r), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, nul, 1, "sm_90a", 0, &r), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(memra__jit_compile(jit, "k", NULL, NULL, 0, "sm_90a", 0, &r), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, NULL, 0, "sm_90a -G", 0, &r), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, NULL, 0, "sm_90a_very_long_name", 0, &r),
                     MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(memra__jit_compile(jit, "k", jit_test_src_scale, NULL, 0, "", 0, &r), MEMRA_STATUS_INVALID_ARGUMENT);
        CHECK_STATUS(memra__jit_compile(NULL, "k", jit_test_src_scale, NULL, 0, "sm_90a", 0, &r), MEMRA_STATUS_INVALID_ARGUMENT);
        /* a virtual architecture gives no cubin: a clear error, not a crash */
        memra_status st = memra__jit_compile(jit, "k", jit_test_src_scale, NULL, 0, "compute_90", 0, &r);
        printf("compute_90: %s: %s\n", memra_status_str(st), memra_last_error());
        CHECK(st == MEMRA_STATUS_NVRTC_ERROR);
    } else {
        TEST_FAIL_AT("unknown case %s", c);
    }
    memra__jit_destroy(jit);
    printf("ok: %s\n", c);
    return 0;
}
