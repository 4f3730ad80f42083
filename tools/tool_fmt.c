/* Progress, units and spreads of the `memra` commands (tool_fmt.h). */
#define _POSIX_C_SOURCE 200809L

#include "tools/tool_fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/tool_opt.h"
#include "tools/tool_util.h"

int tool_quiet;

double tool_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fmt_secs(double s, char *buf, size_t len)
{
    if (s < 60.0) snprintf(buf, len, "%.1f s", s);
    else if (s < 3600.0) snprintf(buf, len, "%dm%02ds", (int)(s / 60.0), (int)s % 60);
    else snprintf(buf, len, "%dh%02dm", (int)(s / 3600.0), ((int)s % 3600) / 60);
}

void tool_progress_begin(tool_progress *p, const char *cmd, size_t total)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->total = total;
    p->t0 = tool_now_s();
    p->tty = isatty(STDERR_FILENO);
}

void tool_progress_step(tool_progress *p, const char *what)
{
    tool_stdout_flush(); /* the rows so far reach their file before the next step runs */
    if (tool_quiet) {
        p->done++;
        return;
    }
    const double el = tool_now_s() - p->t0;
    char e[24], eta[48] = "";
    fmt_secs(el, e, sizeof e);
    if (p->done > 0 && p->total > p->done) {
        char r[24];
        fmt_secs(el / (double)p->done * (double)(p->total - p->done), r, sizeof r);
        snprintf(eta, sizeof eta, ", ETA %s", r);
    }
    p->done++;
    if (p->tty) {
        fprintf(stderr, "\r\033[K%s: [%zu/%zu] %s, %s elapsed%s", p->cmd, p->done, p->total, what, e, eta);
        p->open = 1;
    } else {
        fprintf(stderr, "%s: [%zu/%zu] %s, %s elapsed%s\n", p->cmd, p->done, p->total, what, e, eta);
    }
    fflush(stderr);
}

void tool_progress_clear(tool_progress *p)
{
    if (p->open) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        p->open = 0;
    }
}

void tool_progress_end(tool_progress *p)
{
    tool_progress_clear(p);
    if (tool_quiet || p->tty || p->done == 0) return;
    char e[24];
    fmt_secs(tool_now_s() - p->t0, e, sizeof e);
    fprintf(stderr, "%s: %zu step%s in %s\n", p->cmd, p->done, p->done == 1 ? "" : "s", e);
}

const char *tool_rate(double per_s, const char *base, char *buf, size_t len)
{
    static const char *const k_prefix[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    double v = per_s;
    while (i < 5 && v >= 1000.0) {
        v /= 1000.0;
        i++;
    }
    if (!(per_s > 0.0)) snprintf(buf, len, "- %s", base);
    else snprintf(buf, len, v >= 100.0 ? "%.1f %s%s" : "%.2f %s%s", v, k_prefix[i], base);
    return buf;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double at(const double *s, size_t n, double q)
{
    const double pos = q * (double)(n - 1);
    const size_t lo = (size_t)pos;
    const double f = pos - (double)lo;
    return lo + 1 < n ? s[lo] * (1.0 - f) + s[lo + 1] * f : s[lo];
}

void tool_quartiles(const double *v, size_t n, double *q1, double *q3)
{
    *q1 = *q3 = 0.0;
    if (n == 0) return;
    double *c = malloc(n * sizeof *c);
    if (c == NULL) {
        *q1 = *q3 = v[0];
        return;
    }
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_d);
    *q1 = at(c, n, 0.25);
    *q3 = at(c, n, 0.75);
    free(c);
}

const char *tool_spread(const double *v, size_t n, char *buf, size_t len)
{
    double q1, q3;
    tool_quartiles(v, n, &q1, &q3);
    const double med = tool_median(v, n);
    snprintf(buf, len, "+-%.1f%%", med > 0.0 ? 50.0 * (q3 - q1) / med : 0.0);
    return buf;
}
