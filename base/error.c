/* Status strings, per-thread error detail, logging. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memra/memra.h"

static _Thread_local char tl_error[1024];

const char *memra_status_str(memra_status status)
{
    switch (status) {
#define MEMRA__STATUS_CASE(name, value, text)                                       \
    case MEMRA_STATUS_##name:                                                       \
        return text;
        MEMRA_STATUS_LIST(MEMRA__STATUS_CASE)
#undef MEMRA__STATUS_CASE
    }
    return "unknown status";
}

const char *memra_last_error(void) { return tl_error; }

void memra__clear_error(void) { tl_error[0] = '\0'; }

static void set_error_v(const char *file, int line, const char *fmt, va_list ap)
{
    char msg[sizeof tl_error - 96];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (file != NULL) {
        const char *base = strrchr(file, '/');
        snprintf(tl_error, sizeof tl_error, "%s (%.48s:%d)", msg, base ? base + 1 : file, line);
    } else {
        snprintf(tl_error, sizeof tl_error, "%s", msg);
    }
    if (memra__log_level() >= MEMRA_LOG_DEBUG) memra__log(MEMRA_LOG_DEBUG, "error", "%s", tl_error);
}

memra_status memra__fail_at(const char *file, int line, memra_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(file, line, fmt, ap);
    va_end(ap);
    return status;
}

memra_status memra__set_error(memra_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(NULL, 0, fmt, ap);
    va_end(ap);
    return status;
}

int memra__log_level(void)
{
    static int level = -1; /* benign race: every thread computes the same value */
    if (level < 0) {
        const char *s = getenv("MEMRA_LOG");
        int l = MEMRA_LOG_WARN;
        if (s != NULL) {
            if (strcasecmp(s, "error") == 0) l = MEMRA_LOG_ERROR;
            else if (strcasecmp(s, "warn") == 0) l = MEMRA_LOG_WARN;
            else if (strcasecmp(s, "info") == 0) l = MEMRA_LOG_INFO;
            else if (strcasecmp(s, "debug") == 0) l = MEMRA_LOG_DEBUG;
        }
        level = l;
    }
    return level;
}

void memra__log(int level, const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    memra__logv(level, who, fmt, ap);
    va_end(ap);
}

void memra__logv(int level, const char *who, const char *fmt, va_list ap)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > memra__log_level()) return;
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "memra[%s] %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], who ? who : "core", msg);
}
