/* memra status codes: one X-macro list drives the enum and memra_status_str.
 *
 *   memra_status st = memra_open(NULL, &rt);
 *   if (st != MEMRA_STATUS_OK)
 *       fprintf(stderr, "%s: %s\n", memra_status_str(st), memra_last_error());
 *
 * Values are stable: new codes are appended, never renumbered.
 */
#ifndef MEMRA_STATUS_H
#define MEMRA_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#define MEMRA_STATUS_LIST(X)                                                        \
    X(OK, 0, "ok")                                                                  \
    X(DECLINED, 1, "declined: the lane does not take this case")                    \
    X(INVALID_ARGUMENT, 2, "invalid argument")                                      \
    X(OUT_OF_MEMORY, 3, "out of memory")                                            \
    X(NO_DRIVER, 4, "CUDA driver not available")                                    \
    X(NO_DEVICE, 5, "no such device")                                               \
    X(DRIVER_ERROR, 6, "CUDA driver error")                                         \
    X(CUBLAS_ERROR, 7, "cuBLASLt error")                                            \
    X(NVRTC_ERROR, 8, "NVRTC error")                                                \
    X(MODULE_ERROR, 9, "module error")                                              \
    X(NOT_SUPPORTED, 10, "not supported")                                           \
    X(IO_ERROR, 11, "I/O error")                                                    \
    X(CORRUPT, 12, "corrupt data")                                                  \
    X(NOT_FOUND, 13, "not found")                                                   \
    X(INTERNAL, 14, "internal error")

typedef enum memra_status {
#define MEMRA__STATUS_ENUM(name, value, text) MEMRA_STATUS_##name = value,
    MEMRA_STATUS_LIST(MEMRA__STATUS_ENUM)
#undef MEMRA__STATUS_ENUM
} memra_status;

/* Short constant text for a status; never NULL ("unknown status" for others). */
const char *memra_status_str(memra_status status);

/* The detail message of the calling thread's last failing memra call: which
 * call, which library code, which file. Valid until the thread's next memra
 * call; never NULL (empty when nothing failed). Thread-safe. */
const char *memra_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
