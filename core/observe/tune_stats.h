/* The tuner's statistics (core/observe/tune_stats.c): a seeded, deterministic
 * percentile bootstrap of the geometric mean of paired ratios. Plain C, no
 * runtime state: the race, the verify run and the tests share it. */
#ifndef MEMRA_CORE_TUNE_STATS_H
#define MEMRA_CORE_TUNE_STATS_H

#include <stdint.h>

#include "memra/memra.h" /* memra_tune_gain, the public face of memra__boot_gain */

/* The gain of arm b over arm a from n paired repetitions: ratio_r =
 * a[r] / b[r] (times: > 1 means b is faster). *point is the geometric mean
 * of the ratios, trimmed: the `trim` fraction (0 <= trim < 0.5) of the
 * smallest and of the largest log-ratios left out (0: the plain geometric
 * mean); [*lo, *hi] its 95% percentile-bootstrap interval: `iters` resamples
 * of the n repetitions with replacement (xorshift64* seeded by `seed`, so the
 * same input gives the same interval), the 2.5th and 97.5th percentiles of
 * the resampled (trimmed) geometric means. Returns 0 (outputs untouched) when
 * n < 2, iters < 100, trim is out of range, or a time is not positive and
 * finite. */
int memra__boot_gain_trim(const double *a, const double *b, int n, double trim, int iters, uint64_t seed,
                          double *point, double *lo, double *hi);
/* The tuner's estimator: 20% trimmed (a repetition slowed by something else
 * on the machine, one side of its pair only, does not move the gain). */
#define MEMRA__BOOT_TRIM 0.2
static inline int memra__boot_gain(const double *a, const double *b, int n, int iters, uint64_t seed, double *point,
                                   double *lo, double *hi)
{
    return memra__boot_gain_trim(a, b, n, MEMRA__BOOT_TRIM, iters, seed, point, lo, hi);
}

#define MEMRA__BOOT_ITERS 2000
#define MEMRA__BOOT_SEED 0x6d656d7261747565ull /* "memratue" */

#endif
