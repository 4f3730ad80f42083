/* Status strings, per-thread error detail, logging. */
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/config.h"

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
    /* The source location is for memra's developers: shown at MEMRA_LOG=debug
     * (where every step is logged), not in the messages users read. */
    if (file != NULL && memra__log_level() >= MEMRA_LOG_DEBUG) {
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

/* The process-wide sink: level, callback and its user pointer, set by
 * memra_open and reset by the memra_close of the runtime that set them. */
static atomic_int g_level = MEMRA_LOG_WARN;
static pthread_mutex_t g_sink_lock = PTHREAD_MUTEX_INITIALIZER;
static memra_log_fn g_fn;
static void *g_user;
static const void *g_owner;

int memra__log_level(void) { return atomic_load_explicit(&g_level, memory_order_relaxed); }

void memra__log_configure(int level, memra_log_fn fn, void *user, const void *owner)
{
    pthread_mutex_lock(&g_sink_lock);
    g_fn = fn;
    g_user = user;
    g_owner = owner;
    atomic_store(&g_level, level);
    pthread_mutex_unlock(&g_sink_lock);
}

void memra__log_release(const void *owner)
{
    pthread_mutex_lock(&g_sink_lock);
    if (g_owner == owner) {
        g_fn = NULL;
        g_user = NULL;
        g_owner = NULL;
        atomic_store(&g_level, MEMRA_LOG_WARN);
    }
    pthread_mutex_unlock(&g_sink_lock);
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
    if (level < MEMRA_LOG_ERROR) level = MEMRA_LOG_ERROR;
    if (level > MEMRA_LOG_DEBUG) level = MEMRA_LOG_DEBUG;
    pthread_mutex_lock(&g_sink_lock);
    memra_log_fn fn = g_fn;
    void *user = g_user;
    pthread_mutex_unlock(&g_sink_lock);
    if (fn != NULL) fn(level, who ? who : "core", msg, user);
    else fprintf(stderr, "memra[%s] %s: %s\n", names[level], who ? who : "core", msg);
}
