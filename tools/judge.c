/* The one numeric judge (see judge.h for the metric and the bands). */
#include "tools/judge.h"

#include <math.h>
#include <string.h>

void judge_init(judge *j, const char *what, double band, FILE *log)
{
    memset(j, 0, sizeof *j);
    j->what = what ? what : "";
    j->band = band;
    j->log = log;
    j->worst_i = j->worst_j = -1;
}

double judge_elem(judge *j, int64_t i, int64_t c, double got, double ref, double mass)
{
    if (j->inject && j->checked == 0) got += 1e-3 * (mass > 0.0 ? mass : 1.0);
    double e = fabs(got - ref) / (mass > 0.0 ? mass : 1e-300);
    if (isnan(e)) e = INFINITY;
    j->checked++;
    if (isfinite(got)) {
        j->sum_d2 += (got - ref) * (got - ref);
        j->sum_r2 += ref * ref;
    }
    if (e > j->max_err || j->worst_i < 0) {
        j->max_err = e;
        j->worst_i = i;
        j->worst_j = c;
    }
    if (!(e <= j->band)) {
        if (j->log && j->bad < JUDGE_PRINT_MAX && (isnan(ref) || isnan(mass)))
            fprintf(j->log, "  %s: y[%lld,%lld] = %.9g: the reference itself is NaN (NaN in the operands), no "
                    "comparison\n", j->what, (long long)i, (long long)c, got);
        else if (j->log && j->bad < JUDGE_PRINT_MAX)
            fprintf(j->log, "  %s: y[%lld,%lld] = %.9g, want %.9g, mass %.6g, err %.3g > band %.3g\n", j->what,
                    (long long)i, (long long)c, got, ref, mass, e, j->band);
        j->bad++;
    }
    return e;
}

uint64_t judge_sentinel_f32(judge *j, const float *y, int64_t rows, int64_t ldy, int64_t off, int64_t m, int64_t n,
                            float sentinel)
{
    uint64_t stray = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < ldy; c++) {
            if (r >= off && r < off + m && c < n) continue;
            const float v = y[r * ldy + c];
            if (memcmp(&v, &sentinel, sizeof v) == 0) continue;
            if (j->log && stray < JUDGE_PRINT_MAX)
                fprintf(j->log, "  %s: y[%lld,%lld] = %.9g outside the output (sentinel %.9g)\n", j->what,
                        (long long)r, (long long)c, (double)v, (double)sentinel);
            stray++;
        }
    j->stray += stray;
    return stray;
}

uint64_t judge_bytes(judge *j, const void *got, const void *want, size_t bytes, size_t elem)
{
    const uint8_t *g = got, *w = want;
    uint64_t bad = 0;
    if (elem == 0) elem = 1;
    for (size_t e = 0; e < bytes / elem; e++) {
        const uint8_t *ge = g + e * elem, *we = w + e * elem;
        int differs = memcmp(ge, we, elem) != 0;
        size_t b = 0;
        uint8_t gb = 0;
        if (j->inject && j->checked == 0) { /* the first byte, low bit flipped */
            differs = 1;
            gb = (uint8_t)(ge[0] ^ 1u);
        } else if (differs) {
            while (ge[b] == we[b]) b++;
            gb = ge[b];
        }
        j->checked++;
        if (!differs) continue;
        if (j->log && bad < JUDGE_PRINT_MAX)
            fprintf(j->log, "  %s: element %zu, byte %zu: got %02x, want %02x\n", j->what, e, b, gb, we[b]);
        bad++;
    }
    j->bad += bad;
    return bad;
}

uint64_t judge_tail(judge *j, const void *tail, size_t bytes, uint8_t fill)
{
    const uint8_t *t = tail;
    uint64_t stray = 0;
    for (size_t b = 0; b < bytes; b++) stray += t[b] != fill;
    if (stray && j->log) fprintf(j->log, "  %s: %llu guard bytes written past the output\n", j->what,
                                 (unsigned long long)stray);
    j->stray += stray;
    return stray;
}

int judge_ok(const judge *j) { return j->bad == 0 && j->stray == 0; }

double judge_rel_fro(const judge *j) { return j->sum_r2 > 0.0 ? sqrt(j->sum_d2 / j->sum_r2) : INFINITY; }

double judge_band_fold(int64_t nb, int extra)
{
    const double u = ldexp(1.0, -24), n = (double)nb + 2.0 + extra;
    return n * u / (1.0 - n * u) + u;
}

double judge_band_kr(int64_t k, int tc) { return judge_band_fold(2 * (k / 32), tc ? 36 : 16); }

void judge_abs_f32(float *x, size_t n)
{
    for (size_t e = 0; e < n; e++) x[e] = fabsf(x[e]);
}

void judge_abs_16(uint16_t *h, size_t n)
{
    for (size_t e = 0; e < n; e++) h[e] &= 0x7FFFu;
}

void judge_abs_e4m3(uint8_t *b, size_t n)
{
    for (size_t e = 0; e < n; e++) b[e] &= 0x7Fu;
}

static uint8_t abs_code(uint8_t c)
{
    const int8_t q = (int8_t)c;
    return (uint8_t)(int8_t)(q < 0 ? -q : q);
}

void judge_abs_q8_0(uint8_t *blocks, size_t nblocks)
{
    for (size_t b = 0; b < nblocks; b++) {
        uint8_t *blk = blocks + b * 34;
        blk[1] &= 0x7Fu; /* the f16 scale's sign */
        for (int l = 0; l < 32; l++) blk[2 + l] = abs_code(blk[2 + l]);
    }
}

void judge_abs_q8_1(uint8_t *recs, size_t nrecs)
{
    for (size_t r = 0; r < nrecs; r++) {
        uint8_t *rec = recs + r * 144;
        for (int s = 0; s < 4; s++) { /* the four f32 scales' signs */
            float d;
            memcpy(&d, rec + 4 * s, 4);
            d = fabsf(d);
            memcpy(rec + 4 * s, &d, 4);
        }
        for (int l = 0; l < 128; l++) rec[16 + l] = abs_code(rec[16 + l]);
    }
}
