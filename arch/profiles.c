/* The profile table. Capabilities follow the brief: sm90 has wgmma and all of
 * cuBLASLt's FP8 scale modes; sm120 has the f8f6f4 MMA family but cuBLASLt FP8
 * with scalar scales only; other cc >= 8.0 devices get the portable profile. */
#include "arch/profiles.h"
#include "base/error.h"
#include "memra/memra.h"

#include <stdio.h>
#include <string.h>

static const memra__profile k_profiles[] = {
    {.arch = MEMRA_ARCH_SM90,
     .name = "sm90",
     .caps = MEMRA_CAP_INT8_MMA | MEMRA_CAP_F16_MMA | MEMRA_CAP_FP8_MMA | MEMRA_CAP_WGMMA | MEMRA_CAP_LT_F16 |
             MEMRA_CAP_LT_FP8_SCALAR | MEMRA_CAP_LT_FP8_OUTER_VEC | MEMRA_CAP_LT_FP8_BLK128,
     .f16_budget_mb = 65536,
     .fp8_blk_slab = 0,
     /* MEMRA_FLOOR_F16_M=auto (off by default): the route's time over the floor's, thirtieth session (H100,
      * bench/RESULTS.md "Thirtieth session"), geomean over the 27b sheet (worst shape): K records 1.16 (1.45)
      * at m = 128, 0.82 (0.98) at 256, 0.62 (0.70) at 512, 0.51 at 4096; Q8_0 records 1.10 (1.34) at 256,
      * 0.88 (1.06) at 512, 0.61 at 4096 */
     .floor_f16_m = 256,
     .floor_f16_m_q8 = 512},
    {.arch = MEMRA_ARCH_SM120,
     .name = "sm120",
     .caps = MEMRA_CAP_INT8_MMA | MEMRA_CAP_F16_MMA | MEMRA_CAP_FP8_MMA | MEMRA_CAP_F8F6F4 | MEMRA_CAP_MXF8F6F4 |
             MEMRA_CAP_LT_F16 | MEMRA_CAP_LT_FP8_SCALAR,
     .f16_budget_mb = 4096, /* only when cuMemGetInfo fails: the budget is derived from free memory at open */
     .fp8_blk_slab = 1}, /* floor_f16_m 0: unmeasured (a 5090's f16 tensor rate with f32 accumulation is a quarter
                          * of its int8 rate, where an H100's is half) */
    {.arch = MEMRA_ARCH_CUDA,
     .name = "cuda",
     .caps = MEMRA_CAP_INT8_MMA | MEMRA_CAP_F16_MMA | MEMRA_CAP_LT_F16,
     .f16_budget_mb = 4096,
     .fp8_blk_slab = 1},
    {.arch = MEMRA_ARCH_HOST, .name = "host", .caps = MEMRA_CAP_HOST, .f16_budget_mb = 65536, .fp8_blk_slab = 1},
};

const memra__profile *memra__profile_by_name(const char *name)
{
    if (name == NULL) return NULL;
    for (size_t i = 0; i < sizeof k_profiles / sizeof k_profiles[0]; i++)
        if (strcmp(k_profiles[i].name, name) == 0) return &k_profiles[i];
    return NULL;
}

const memra__profile *memra__profile_host(void) { return memra__profile_by_name("host"); }

const memra__profile *memra__profile_for_cc(int cc)
{
    if (cc == 90) return memra__profile_by_name("sm90");
    if (cc >= 120 && cc < 130) return memra__profile_by_name("sm120");
    if (cc >= 80) return memra__profile_by_name("cuda");
    return NULL;
}

void memra__profile_jit_target(const memra__profile *p, int cc, char *buf, int len)
{
    if (p == NULL || p->arch == MEMRA_ARCH_HOST) {
        snprintf(buf, (size_t)len, "%s", "");
        return;
    }
    /* The 'a' targets carry the arch-specific instructions (wgmma, f8f6f4);
     * a forced profile still compiles for the card it runs on. */
    if (p->arch == MEMRA_ARCH_SM90 && cc == 90) snprintf(buf, (size_t)len, "sm_90a");
    else if (p->arch == MEMRA_ARCH_SM120 && cc >= 120 && cc < 130) snprintf(buf, (size_t)len, "sm_%da", cc);
    else snprintf(buf, (size_t)len, "sm_%d", cc);
}

void memra_caps_describe(uint64_t caps, char *buf, size_t len)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } names[] = {
        {MEMRA_CAP_HOST, "host"},
        {MEMRA_CAP_INT8_MMA, "int8-mma"},
        {MEMRA_CAP_F16_MMA, "f16-mma"},
        {MEMRA_CAP_FP8_MMA, "e4m3-mma"},
        {MEMRA_CAP_WGMMA, "wgmma"},
        {MEMRA_CAP_F8F6F4, "f8f6f4"},
        {MEMRA_CAP_MXF8F6F4, "mxf8f6f4"},
        {MEMRA_CAP_LT_F16, "lt-f16"},
        {MEMRA_CAP_LT_FP8_SCALAR, "lt-fp8-scalar"},
        {MEMRA_CAP_LT_FP8_OUTER_VEC, "lt-fp8-outer-vec"},
        {MEMRA_CAP_LT_FP8_BLK128, "lt-fp8-blk128"},
    };
    size_t off = 0;
    if (len == 0) return;
    if (buf == NULL) {
        MEMRA__FAIL(MEMRA_STATUS_INVALID_ARGUMENT, "memra_caps_describe: buf is NULL with len %zu", len);
        return;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(caps & names[i].bit)) continue;
        int n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i].name);
        if (n < 0 || (size_t)n >= len - off) break;
        off += (size_t)n;
    }
}
