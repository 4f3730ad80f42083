/* The tuner's bootstrap (core/observe/tune_stats.c) on synthetic samples with a known
 * answer: constant ratios give a zero-width interval at the ratio; for 400
 * lognormal ratios the interval's ends sit where the normal theory puts them
 * (mean of the logs +- 1.96 standard errors, within 15% of the half-width);
 * over 400 samples of 30 repetitions the interval covers the true gain in
 * 90-99% of them (a 68% or shifted interval fails); the same input gives the
 * same interval; too few repetitions or a bad time is refused; the 20%
 * trimmed estimate ignores three pairs slowed on one side. */
#include <math.h>

#include "core/observe/tune_stats.h"
#include "test.h"

static uint64_t g_s = 0x853c49e6748fea9bull;
static double unit(void)
{
    g_s ^= g_s >> 12, g_s ^= g_s << 25, g_s ^= g_s >> 27;
    return ((double)((g_s * 0x2545F4914F6CDD1Dull) >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(void) { return sqrt(-2.0 * log(unit())) * cos(6.283185307179586 * unit()); }

/* n pairs whose ratio a/b is exp(N(log gain, sigma)); b itself varies (a slow repetition slows both). */
static void sample(double *a, double *b, int n, double gain, double sigma)
{
    for (int r = 0; r < n; r++) {
        b[r] = 100.0 * exp(0.3 * normal());
        a[r] = b[r] * gain * exp(sigma * normal());
    }
}

int main(void)
{
    double a[400], b[400], p, lo, hi;
    /* constant: the interval is the point */
    for (int r = 0; r < 10; r++) a[r] = 2.0 * (b[r] = 10.0 + r);
    CHECK(memra__boot_gain_trim(a, b, 10, 0.0, 2000, 1, &p, &lo, &hi));
    CHECK(fabs(p - 2.0) < 1e-12 && fabs(lo - 2.0) < 1e-12 && fabs(hi - 2.0) < 1e-12);
    /* refused */
    CHECK(!memra__boot_gain_trim(a, b, 1, 0.0, 2000, 1, &p, &lo, &hi));
    CHECK(!memra__boot_gain_trim(a, b, 10, 0.0, 10, 1, &p, &lo, &hi));
    b[3] = 0.0;
    CHECK(!memra__boot_gain_trim(a, b, 10, 0.0, 2000, 1, &p, &lo, &hi));
    b[3] = NAN;
    CHECK(!memra__boot_gain_trim(a, b, 10, 0.0, 2000, 1, &p, &lo, &hi));

    /* the known answer: normal theory for the mean of 400 logs */
    sample(a, b, 400, 1.10, 0.05);
    double m = 0.0, v = 0.0;
    for (int r = 0; r < 400; r++) m += log(a[r] / b[r]);
    m /= 400.0;
    for (int r = 0; r < 400; r++) v += (log(a[r] / b[r]) - m) * (log(a[r] / b[r]) - m);
    const double se = sqrt(v / 399.0 / 400.0), half = 1.96 * se;
    CHECK(memra__boot_gain_trim(a, b, 400, 0.0, 4000, 7, &p, &lo, &hi));
    printf("400 ratios: point %.5f [%.5f, %.5f]; theory %.5f [%.5f, %.5f]\n", p, lo, hi, exp(m), exp(m - half),
           exp(m + half));
    CHECK(fabs(log(p) - m) < 1e-12);
    CHECK(fabs(log(lo) - (m - half)) < 0.15 * half);
    CHECK(fabs(log(hi) - (m + half)) < 0.15 * half);
    /* deterministic */
    double p2, lo2, hi2;
    CHECK(memra__boot_gain_trim(a, b, 400, 0.0, 4000, 7, &p2, &lo2, &hi2));
    CHECK(p2 == p && lo2 == lo && hi2 == hi);

    /* coverage of the true gain */
    int cover = 0, below = 0;
    const int trials = 400;
    for (int t = 0; t < trials; t++) {
        sample(a, b, 30, 1.05, 0.10);
        CHECK(memra__boot_gain_trim(a, b, 30, 0.0, 2000, (uint64_t)t + 1, &p, &lo, &hi));
        if (lo <= 1.05 && 1.05 <= hi) cover++;
        else if (hi < 1.05) below++;
    }
    printf("coverage over %d samples of 30: %.3f (%d intervals below the true gain)\n", trials,
           (double)cover / trials, below);
    CHECK(cover >= (int)(0.90 * trials) && cover <= (int)(0.99 * trials));
    /* misses on both sides, roughly alike (a shifted interval misses on one) */
    CHECK(below >= 2 && trials - cover - below >= 2);
    /* trimmed (the tuner's 20%): three pairs slowed 3x on one side move the plain geomean, not the trimmed one */
    sample(a, b, 30, 1.05, 0.02);
    a[2] *= 3.0, a[11] *= 3.0, b[20] *= 3.0;
    double pt, lt, ht, pp, lp, hp;
    CHECK(memra__boot_gain(a, b, 30, 2000, 3, &pt, &lt, &ht)); /* the inline: MEMRA__BOOT_TRIM */
    CHECK(memra__boot_gain_trim(a, b, 30, 0.0, 2000, 3, &pp, &lp, &hp));
    printf("outliers: trimmed %.4f [%.4f, %.4f], plain %.4f [%.4f, %.4f]\n", pt, lt, ht, pp, lp, hp);
    CHECK(lt <= 1.05 && 1.05 <= ht && ht / lt < 1.05);
    CHECK(hp / lp > 2.0 * (ht / lt - 1.0) + 1.0); /* the plain interval is much wider */
    CHECK(!memra__boot_gain_trim(a, b, 30, 0.5, 2000, 3, &pt, &lt, &ht));
    /* the public face: the tuner's estimator with 2000 resamples and the fixed seed */
    double pg, lg, hg, pb, lb, hb;
    CHECK(memra_tune_gain(a, b, 30, 0, &pg, &lg, &hg));
    CHECK(memra__boot_gain(a, b, 30, MEMRA__BOOT_ITERS, MEMRA__BOOT_SEED, &pb, &lb, &hb));
    CHECK(pg == pb && lg == lb && hg == hb);
    CHECK(!memra_tune_gain(a, b, 1, 0, &pg, &lg, &hg));
    printf("ok\n");
    return 0;
}
