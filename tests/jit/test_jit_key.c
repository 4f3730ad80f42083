/* The cache key: stable for equal inputs, different when any field changes. */
#include <stdio.h>
#include <string.h>

#include "jit/jit.h"
#include "jit/sha256.h"
#include "test.h"

static const char *src = "extern \"C\" __global__ void k(float *x) { x[0] = 1.f; }\n";

static void key_of(const char *target, int major, int minor, const char *const *opts, int n, const char *source,
                   uint8_t out[32])
{
    memra__jit_key(target, major, minor, opts, n, source, out);
}

static int n_checks;
static void differ(const uint8_t a[32], const uint8_t b[32], const char *what)
{
    char ha[65], hb[65];
    memra__hex(a, 32, ha);
    memra__hex(b, 32, hb);
    printf("%-34s %.16s vs %.16s\n", what, ha, hb);
    if (memcmp(a, b, 32) == 0) TEST_FAIL_AT("key did not change: %s", what);
    n_checks++;
}

int main(void)
{
    const char *opts[] = {"-std=c++17", "-DTILE=128"};
    uint8_t base[32], k[32];
    key_of("sm_90a", 13, 0, opts, 2, src, base);

    /* stable: same inputs, separately built copies of the strings */
    char src_copy[256], o0[32], o1[32];
    snprintf(src_copy, sizeof src_copy, "%s", src);
    snprintf(o0, sizeof o0, "%s", opts[0]);
    snprintf(o1, sizeof o1, "%s", opts[1]);
    const char *opts_copy[] = {o0, o1};
    key_of("sm_90a", 13, 0, opts_copy, 2, src_copy, k);
    CHECK(memcmp(base, k, 32) == 0);

    const char *one_opt_changed[] = {"-std=c++17", "-DTILE=64"};
    key_of("sm_90a", 13, 0, one_opt_changed, 2, src, k);
    differ(base, k, "one option changed");
    const char *swapped[] = {"-DTILE=128", "-std=c++17"};
    key_of("sm_90a", 13, 0, swapped, 2, src, k);
    differ(base, k, "option order swapped");
    key_of("sm_90a", 13, 0, opts, 1, src, k);
    differ(base, k, "one option fewer");
    const char *joined[] = {"-std=c++17-DTILE=128"};
    key_of("sm_90a", 13, 0, joined, 1, src, k);
    differ(base, k, "options joined (length framing)");
    const char *split[] = {"-std=c++17", "-DTILE=12", "8"};
    key_of("sm_90a", 13, 0, split, 3, src, k);
    differ(base, k, "option split in two");
    key_of("sm_120a", 13, 0, opts, 2, src, k);
    differ(base, k, "target sm_120a");
    key_of("sm_90", 13, 0, opts, 2, src, k);
    differ(base, k, "target sm_90 (no a)");
    key_of("sm_90a", 13, 1, opts, 2, src, k);
    differ(base, k, "NVRTC minor version");
    key_of("sm_90a", 12, 0, opts, 2, src, k);
    differ(base, k, "NVRTC major version");
    for (size_t i = 0; i < strlen(src); i += 9) {
        snprintf(src_copy, sizeof src_copy, "%s", src);
        src_copy[i] ^= 0x01;
        key_of("sm_90a", 13, 0, opts, 2, src_copy, k);
        char what[64];
        snprintf(what, sizeof what, "source byte %zu flipped", i);
        differ(base, k, what);
    }
    snprintf(src_copy, sizeof src_copy, "%s ", src);
    key_of("sm_90a", 13, 0, opts, 2, src_copy, k);
    differ(base, k, "source one byte longer");
    printf("ok: %d changes detected\n", n_checks);
    return 0;
}
