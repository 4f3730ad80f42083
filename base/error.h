/* Internal error and log helpers shared by every part of libmemra. */
#ifndef MEMRA_BASE_ERROR_H
#define MEMRA_BASE_ERROR_H

#include <stdarg.h>

#include "memra/module.h"
#include "memra/status.h"

/* Record "file:line: message" as the thread's last error and return status.
 * Use through MEMRA__FAIL so the place is recorded. */
memra_status memra__fail_at(const char *file, int line, memra_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define MEMRA__FAIL(status, ...) memra__fail_at(__FILE__, __LINE__, (status), __VA_ARGS__)

/* Same, callable through the module host services (no file/line). */
memra_status memra__set_error(memra_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void memra__clear_error(void);

/* The level set by memra_open (MEMRA_LOG: error|warn|info|debug), warn before. */
int memra__log_level(void);
void memra__log(int level, const char *who, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void memra__logv(int level, const char *who, const char *fmt, va_list ap);
#define MEMRA__DEBUG(who, ...)                                                      \
    do {                                                                            \
        if (memra__log_level() >= MEMRA_LOG_DEBUG) memra__log(MEMRA_LOG_DEBUG, who, __VA_ARGS__); \
    } while (0)

#endif
