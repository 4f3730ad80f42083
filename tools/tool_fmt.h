/* How every `memra` command talks: a progress line on stderr, rates with the
 * unit their magnitude calls for, and a spread beside every median.
 *
 *     tool_progress p;
 *     tool_progress_begin(&p, "memra bench", nshapes * reps);
 *     for (...) { tool_progress_step(&p, "2048->6144 rep 2"); ...; tool_progress_clear(&p); printf(row); }
 *     tool_progress_end(&p);
 *
 * On a terminal (stderr is a tty) the progress is one line rewritten in place
 * ("memra bench: [3/24] 2048->6144 rep 2, 12.3 s elapsed, ETA 40 s"); when
 * stderr is not a terminal, one such line per step, so a log shows the run
 * advancing. `--quiet` (tool_quiet) silences it; tables and errors are not
 * progress and are never silenced. Each step flushes stdout first, so a table
 * redirected to a file grows as the run goes. */
#ifndef MEMRA_TOOLS_TOOL_FMT_H
#define MEMRA_TOOLS_TOOL_FMT_H

#include <stddef.h>

extern int tool_quiet; /* set by --quiet (tool_opt_next) */

typedef struct tool_progress {
    const char *cmd;
    size_t total, done;
    double t0;     /* monotonic seconds at begin */
    int tty, open; /* stderr is a terminal; a line is shown without its newline */
} tool_progress;

void tool_progress_begin(tool_progress *p, const char *cmd, size_t total);
/* Step done+1 of total starts: print its line (what: the step's name). */
void tool_progress_step(tool_progress *p, const char *what);
/* Take the in-place line off the terminal before printing to stdout. */
void tool_progress_clear(tool_progress *p);
/* The last line: "<cmd>: N steps in T s" (not on a terminal) or nothing. */
void tool_progress_end(tool_progress *p);

/* Monotonic seconds. */
double tool_now_s(void);

/* A rate with its unit scaled by magnitude: "123.4 GFLOP/s", "1.23 TFLOP/s"
 * (base "FLOP/s"), "45.6 GB/s" (base "B/s"). buf of at least 24 bytes. */
const char *tool_rate(double per_s, const char *base, char *buf, size_t len);

/* The quartiles of n values (linear interpolation between order statistics;
 * n = 1: both the value). */
void tool_quartiles(const double *v, size_t n, double *q1, double *q3);
/* "+-1.2%": half the interquartile range relative to the median ("+-0.0%"
 * when n < 2). buf of at least 16 bytes. */
const char *tool_spread(const double *v, size_t n, char *buf, size_t len);

#endif
