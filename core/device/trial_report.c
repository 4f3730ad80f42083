/* The report channel of a trial (core/load/trial.c), inside the memra-trial
 * helper: stage lines and the module's name go up the report pipe, so a
 * crash is named by the stage it happened in. A no-op in every other
 * process. It sits in core/device/ because every room that runs a module's
 * code (load, observe) reports its stages through it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "core/device/device.h"

static int g_child_fd = -1; /* the report pipe, inside the helper only */

int memra__trial_child_active(void) { return g_child_fd >= 0; }

void memra__trial_report_open(int report_fd) { g_child_fd = report_fd; }

void memra__trial_say(const char *fmt, ...)
{
    if (g_child_fd < 0) return;
    char buf[1000];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof buf - 2) n = (int)sizeof buf - 2;
    for (int i = 0; i < n; i++)
        if (buf[i] == '\n') buf[i] = ' ';
    buf[n++] = '\n';
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(g_child_fd, p, (size_t)n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        p += w;
        n -= (int)w;
    }
}

void memra__trial_stage(const char *fmt, ...)
{
    if (g_child_fd < 0) return;
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memra__trial_say("stage %s", buf);
}

void memra__trial_name(const char *name)
{
    if (g_child_fd >= 0) memra__trial_say("name %.48s", name);
}

