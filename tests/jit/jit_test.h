/* Helpers shared by the JIT tests: NVRTC or skip, a fresh cache folder,
 * file helpers, the kernels, and a cubin ELF header reader.
 *
 * How a CUDA cubin names its SM (checked on NVRTC 13.0's output):
 *  - ELF64, EI_OSABI 0x41, EI_ABIVERSION 8, e_machine EM_CUDA (190).
 *  - e_flags bits 8..15 hold the SM as major*10+minor: 0x06005a04 for
 *    sm_90/sm_90a (0x5a = 90), 0x06007802 for sm_120/sm_120a (0x78 = 120),
 *    0x06007902 for sm_121a. Older cubins (EI_ABIVERSION 7, CUDA <= 12) keep
 *    the SM in bits 0..7 instead; that branch is not exercised here.
 *  - e_flags does NOT tell sm_90 from sm_90a. The "a" (arch-specific) variant
 *    shows in the .nv.compat section: 4-byte records (format, attribute,
 *    u16 value; format 4 is followed by `value` bytes), where attribute 9 is
 *    1 for sm_90a/sm_100a/sm_120a and 0 for sm_90/sm_120/sm_120f; and in the
 *    .note.nv.tkinfo note, which carries ptxas's arguments ("-arch sm_90a "). */
#ifndef MEMRA_TESTS_JIT_TEST_H
#define MEMRA_TESTS_JIT_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/jit.h"
#include "jit/sha256.h"
#include "test.h"

/* A jit object with NVRTC open, or exit 77. */
static inline memra__jit *jit_test_open(void)
{
    memra__jit *jit = NULL;
    CHECK_OK(memra__jit_create(&jit));
    int major = 0, minor = 0;
    if (memra__jit_nvrtc_version(jit, &major, &minor) != MEMRA_STATUS_OK) {
        char why[1100];
        snprintf(why, sizeof why, "%s", memra_last_error());
        memra__jit_destroy(jit);
        TEST_SKIP("NVRTC cannot be opened: %s", why);
    }
    printf("NVRTC %d.%d\n", major, minor);
    return jit;
}

static inline int jit_test_rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static char jit_test_dir_[512];

static inline void jit_test_cleanup(void)
{
    if (jit_test_dir_[0] != '\0') nftw(jit_test_dir_, jit_test_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh folder (removed at exit), also set as MEMRA_CACHE_DIR. */
static inline const char *jit_test_cache_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(jit_test_dir_, sizeof jit_test_dir_, "%s/memra-jit-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(jit_test_dir_) == NULL) TEST_FAIL_AT("mkdtemp: %s", strerror(errno));
    atexit(jit_test_cleanup);
    setenv("MEMRA_CACHE_DIR", jit_test_dir_, 1);
    unsetenv("MEMRA_JIT_CACHE");
    unsetenv("MEMRA_JIT_CACHE_MAX_MB");
    return jit_test_dir_;
}

/* Whole file into a malloc'd buffer; NULL when absent. */
static inline uint8_t *jit_test_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static inline void jit_test_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, size, f) == size);
    CHECK(fclose(f) == 0);
}

static inline int jit_test_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- kernels ------------------------------------------------------------------ */

static const char jit_test_src_scale[] =
    "extern \"C\" __global__ void memra_test_scale(float *x, float s, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] *= s;\n"
    "}\n";

/* One warp's m16n8k32 e4m3 tile. MMA is the instruction; FEAT the arch
 * feature macro that guards it (the #else branch leaves the tile zero), or an
 * always-true condition to assemble the instruction unguarded. */
#define JIT_TEST_MMA_SRC(FEAT, MMA, EXTRA_IN, EXTRA_OPS)                                                \
    "extern \"C\" __global__ void memra_test_mma(const unsigned *a, const unsigned *b, float *d)\n"   \
    "{\n"                                                                                            \
    "    unsigned t = threadIdx.x;\n"                                                                \
    "    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;\n"                                            \
    "#if " FEAT "\n"                                                                                 \
    "    asm volatile(\"" MMA " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}" EXTRA_OPS ";\"\n" \
    "        : \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3)\n"                                     \
    "        : \"r\"(a[t]), \"r\"(a[t + 32]), \"r\"(a[t + 64]), \"r\"(a[t + 96]),\n"                 \
    "          \"r\"(b[t]), \"r\"(b[t + 32])" EXTRA_IN ");\n"                                        \
    "#endif\n"                                                                                       \
    "    d[t] = c0 + c1 + c2 + c3;\n"                                                                \
    "}\n"

#define JIT_TEST_MMA_PLAIN "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
#define JIT_TEST_MMA_F8F6F4 "mma.sync.aligned.kind::f8f6f4.m16n8k32.row.col.f32.e4m3.e4m3.f32"
#define JIT_TEST_MMA_MX \
    "mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col.f32.e4m3.e4m3.f32.ue8m0"

/* ---- cubin ELF header --------------------------------------------------------- */

static inline uint32_t jit_le(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t jit_le64(const uint8_t *p)
{
    return (uint64_t)jit_le(p, 4) | (uint64_t)jit_le(p + 4, 4) << 32;
}

typedef struct jit_test_cubin {
    unsigned machine, abi_version, sm;
    uint32_t flags;
    int compat_arch_specific; /* .nv.compat attribute 9; -1 when absent */
} jit_test_cubin;

/* Decode what the comment at the top describes; fails the test on a
 * malformed ELF. */
static inline jit_test_cubin jit_test_read_cubin(const void *image, size_t size)
{
    const uint8_t *b = image;
    jit_test_cubin c = {0, 0, 0, 0, -1};
    CHECK(size >= 64);
    CHECK(memcmp(b, "\x7f" "ELF", 4) == 0);
    CHECK_INT_EQ(b[4], 2); /* ELFCLASS64 */
    CHECK_INT_EQ(b[5], 1); /* little-endian */
    c.abi_version = b[8];
    c.machine = jit_le(b + 18, 2);
    c.flags = jit_le(b + 48, 4);
    c.sm = c.abi_version >= 8 ? (c.flags >> 8) & 0xffu : c.flags & 0xffu;
    uint64_t shoff = jit_le64(b + 40);
    unsigned shentsize = jit_le(b + 58, 2), shnum = jit_le(b + 60, 2), shstrndx = jit_le(b + 62, 2);
    CHECK(shentsize == 64 && shstrndx < shnum && shoff + (uint64_t)shnum * 64 <= size);
    const uint8_t *strsh = b + shoff + (uint64_t)shstrndx * 64;
    uint64_t stroff = jit_le64(strsh + 24);
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *sh = b + shoff + (uint64_t)i * 64;
        const char *name = (const char *)b + stroff + jit_le(sh, 4);
        uint64_t off = jit_le64(sh + 24), sz = jit_le64(sh + 32);
        if (strcmp(name, ".nv.compat") != 0 || off + sz > size) continue;
        for (uint64_t p = off; p + 4 <= off + sz;) {
            unsigned fmt = b[p], attr = b[p + 1], val = jit_le(b + p + 2, 2);
            if (fmt == 0) break;
            if (attr == 9 && fmt == 2) c.compat_arch_specific = (int)(val & 0xff);
            p += 4 + (fmt == 4 ? val : 0);
        }
    }
    return c;
}

/* The cubin is for `target` ("sm_90a", "sm_120a"): EM_CUDA, the SM in e_flags,
 * the arch-specific bit in .nv.compat and ptxas's "-arch <target> " in the
 * tool note. */
static inline void jit_test_check_cubin(const void *image, size_t size, const char *target)
{
    jit_test_cubin c = jit_test_read_cubin(image, size);
    unsigned want_sm = (unsigned)atoi(target + 3);
    int want_a = target[strlen(target) - 1] == 'a';
    printf("cubin for %s: %zu bytes, e_machine %u, EI_ABIVERSION %u, e_flags 0x%08x -> sm %u, compat arch-specific %d\n",
           target, size, c.machine, c.abi_version, (unsigned)c.flags, c.sm, c.compat_arch_specific);
    CHECK_INT_EQ(c.machine, 190);
    CHECK_INT_EQ(c.sm, want_sm);
    CHECK_INT_EQ(c.compat_arch_specific, want_a);
    char needle[40];
    snprintf(needle, sizeof needle, "-arch %s ", target);
    CHECK(memmem(image, size, needle, strlen(needle)) != NULL);
}

#endif
