/* Tiny test helpers: assertions that print both sides, stay on under NDEBUG,
 * and a skip code (77) registered as SKIP_RETURN_CODE in ctest. */
#ifndef MEMRA_TEST_H
#define MEMRA_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEST_SKIP_CODE 77

#define TEST_SKIP(...)                                                              \
    do {                                                                            \
        printf("SKIP: ");                                                           \
        printf(__VA_ARGS__);                                                        \
        printf("\n");                                                               \
        exit(TEST_SKIP_CODE);                                                       \
    } while (0)

#define TEST_FAIL_AT(...)                                                           \
    do {                                                                            \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                             \
        fprintf(stderr, __VA_ARGS__);                                               \
        fprintf(stderr, "\n");                                                      \
        exit(1);                                                                    \
    } while (0)

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) TEST_FAIL_AT("check failed: %s", #cond);                       \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                          \
    do {                                                                            \
        long long a_ = (long long)(a), b_ = (long long)(b);                         \
        if (a_ != b_) TEST_FAIL_AT("%s == %s: %lld != %lld", #a, #b, a_, b_);       \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                          \
    do {                                                                            \
        const char *a_ = (a), *b_ = (b);                                            \
        if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                        \
            TEST_FAIL_AT("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                             \
    do {                                                                            \
        const char *h_ = (hay), *n_ = (needle);                                     \
        if (h_ == NULL || strstr(h_, n_) == NULL)                                   \
            TEST_FAIL_AT("%s contains \"%s\": got \"%s\"", #hay, n_, h_ ? h_ : "(null)"); \
    } while (0)

/* Status check that prints memra_last_error(). */
#define CHECK_OK(expr)                                                              \
    do {                                                                            \
        memra_status st_ = (expr);                                                  \
        if (st_ != MEMRA_STATUS_OK)                                                 \
            TEST_FAIL_AT("%s: %s: %s", #expr, memra_status_str(st_), memra_last_error()); \
    } while (0)

#define CHECK_STATUS(expr, want)                                                    \
    do {                                                                            \
        memra_status st_ = (expr);                                                  \
        if (st_ != (want))                                                          \
            TEST_FAIL_AT("%s: got %s, want %s (%s)", #expr, memra_status_str(st_),  \
                         memra_status_str(want), memra_last_error());               \
    } while (0)

/* MEMRA_TEST_INJECT_FAULT=1: the numeric comparisons (tools/judge.h's
 * judge.inject) move their first element out of band, so a run proves the
 * test can fail. */
static inline int test_inject_fault(void)
{
    const char *s = getenv("MEMRA_TEST_INJECT_FAULT");
    return s != NULL && strcmp(s, "1") == 0;
}

/* A memra_options.log_fn writing lines as the default sink does ("memra[level] component: message" on
 * stderr) and counting, in the test_log_count that `user` points to, the warnings (level 1) whose
 * message holds `watch`: a test that asks a module for an opt-in kernel fails where the module says
 * it refused it, rather than passing on the kernel it fell back to. */
typedef struct test_log_count {
    const char *watch; /* warnings holding it are counted in n */
    int n;
    const char *seen; /* messages of any level holding it are counted in n_seen */
    int n_seen;
} test_log_count;
static inline void test_log_sink(int level, const char *component, const char *message, void *user)
{
    static const char *const names[4] = {"error", "warn", "info", "debug"};
    fprintf(stderr, "memra[%s] %s: %s\n", level >= 0 && level < 4 ? names[level] : "?", component, message);
    test_log_count *c = (test_log_count *)user;
    if (level == 1 && c != NULL && c->watch != NULL && strstr(message, c->watch) != NULL) c->n++;
    if (c != NULL && c->seen != NULL && strstr(message, c->seen) != NULL) c->n_seen++;
}

/* Fresh random numbers: xorshift64* seeded from the clock unless MEMRA_TEST_SEED
 * is set; the seed is printed so a failure can be replayed. */
static inline uint64_t test_seed(void)
{
    const char *s = getenv("MEMRA_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    if (seed == 0) seed = 0x9E3779B97F4A7C15ull;
    printf("seed: MEMRA_TEST_SEED=%" PRIu64 "\n", seed);
    return seed;
}
static inline uint64_t test_rand_u64(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1Dull;
}
/* Uniform in [-1, 1), never exactly zero. */
static inline float test_rand_f32(uint64_t *st)
{
    float f;
    do f = (float)((double)(test_rand_u64(st) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    while (f == 0.0f);
    return f;
}

#endif
