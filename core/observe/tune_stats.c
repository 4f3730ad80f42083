/* The percentile bootstrap of a paired gain (core/observe/tune_stats.h).
 *
 * Why the geometric mean of paired ratios: each repetition times every arm
 * once, close together, so a slow repetition (clocks, a neighbour on the
 * machine) slows both sides of its pair; the ratio cancels it, and the log
 * makes 2x faster and 2x slower symmetric; trimming drops the pairs where
 * something else on the machine slowed one side only. Why the bootstrap: the ratios of a
 * GPU race are not normal (a few slow outliers), and a percentile interval of
 * resampled repetitions needs no assumption about their shape. */
#include "core/observe/tune_stats.h"

#include <math.h>
#include <stdlib.h>

static uint64_t next_u64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static int cmp_double(const void *p, const void *q)
{
    const double x = *(const double *)p, y = *(const double *)q;
    return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values, interpolated between order statistics. */
static double quantile(const double *v, int n, double q)
{
    const double pos = q * (double)(n - 1);
    const int i = (int)pos;
    const double f = pos - (double)i;
    return i + 1 < n ? v[i] * (1.0 - f) + v[i + 1] * f : v[i];
}

/* The trimmed mean of n values (sorted in place). */
static double trimmed_mean(double *v, int n, double trim)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    const int cut = (int)(trim * (double)n);
    double t = 0.0;
    for (int i = cut; i < n - cut; i++) t += v[i];
    return t / (double)(n - 2 * cut);
}

int memra__boot_gain_trim(const double *a, const double *b, int n, double trim, int iters, uint64_t seed,
                          double *point, double *lo, double *hi)
{
    if (n < 2 || iters < 100 || a == NULL || b == NULL || !(trim >= 0.0 && trim < 0.5)) return 0;
    double *lr = malloc((size_t)n * sizeof *lr), *rs = malloc((size_t)n * sizeof *rs),
           *means = malloc((size_t)iters * sizeof *means);
    int ok = lr != NULL && rs != NULL && means != NULL;
    for (int r = 0; ok && r < n; r++) {
        if (!(a[r] > 0.0 && b[r] > 0.0 && isfinite(a[r]) && isfinite(b[r]))) ok = 0;
        else lr[r] = log(a[r] / b[r]);
    }
    if (ok) {
        uint64_t s = seed ? seed : 1;
        for (int i = 0; i < iters; i++) {
            for (int r = 0; r < n; r++) rs[r] = lr[next_u64(&s) % (uint64_t)n];
            means[i] = trimmed_mean(rs, n, trim);
        }
        qsort(means, (size_t)iters, sizeof *means, cmp_double);
        *point = exp(trimmed_mean(lr, n, trim));
        *lo = exp(quantile(means, iters, 0.025));
        *hi = exp(quantile(means, iters, 0.975));
    }
    free(lr);
    free(rs);
    free(means);
    return ok;
}

int memra_tune_gain(const double *a, const double *b, int n, int resamples, double *gain, double *lo, double *hi)
{
    if (gain == NULL || lo == NULL || hi == NULL) return 0;
    return memra__boot_gain(a, b, n, resamples > 0 ? (resamples < 100 ? 100 : resamples) : MEMRA__BOOT_ITERS,
                            MEMRA__BOOT_SEED, gain, lo, hi);
}
