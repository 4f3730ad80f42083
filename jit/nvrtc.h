/* NVRTC, opened with dlopen and resolved from one list of entry points
 * (expanded into the table struct and into the resolve loop). No nvrtc.h is
 * needed at build time: the two NVRTC types are declared here with the ABI
 * the library uses (an opaque program pointer and an int result). */
#ifndef MEMRA_JIT_NVRTC_H
#define MEMRA_JIT_NVRTC_H

#include <stddef.h>

#include "memra/status.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

#define MEMRA__NVRTC_SUCCESS 0
#define MEMRA__NVRTC_ERROR_COMPILATION 6

/* X(name, return, params) for every NVRTC entry point memra uses. */
#define MEMRA__NVRTC_LIST(X)                                                                          \
    X(nvrtcVersion, nvrtcResult, (int *major, int *minor))                                           \
    X(nvrtcCreateProgram, nvrtcResult,                                                               \
      (nvrtcProgram * prog, const char *src, const char *name, int n_headers, const char *const *headers, \
       const char *const *include_names))                                                            \
    X(nvrtcCompileProgram, nvrtcResult, (nvrtcProgram prog, int n_options, const char *const *options)) \
    X(nvrtcGetProgramLogSize, nvrtcResult, (nvrtcProgram prog, size_t * size))                       \
    X(nvrtcGetProgramLog, nvrtcResult, (nvrtcProgram prog, char *log))                               \
    X(nvrtcGetCUBINSize, nvrtcResult, (nvrtcProgram prog, size_t * size))                            \
    X(nvrtcGetCUBIN, nvrtcResult, (nvrtcProgram prog, char *cubin))                                  \
    X(nvrtcGetPTXSize, nvrtcResult, (nvrtcProgram prog, size_t * size))                              \
    X(nvrtcGetPTX, nvrtcResult, (nvrtcProgram prog, char *ptx))                                      \
    X(nvrtcDestroyProgram, nvrtcResult, (nvrtcProgram * prog))                                       \
    X(nvrtcGetErrorString, const char *, (nvrtcResult result))

typedef struct memra__nvrtc {
    void *lib;       /* dlopen handle, NULL when not open */
    char path[512];  /* the library name or path that opened */
    int major, minor; /* nvrtcVersion */
#define MEMRA__NVRTC_MEMBER(name, ret, params) ret(*name) params;
    MEMRA__NVRTC_LIST(MEMRA__NVRTC_MEMBER)
#undef MEMRA__NVRTC_MEMBER
} memra__nvrtc;

/* NVRTC for this process, opened at the first successful call and never
 * closed (unloading NVRTC leaks its internal state: about 72 KB per
 * dlopen/dlclose cycle under LeakSanitizer), so every jit object shares one
 * table. Candidates, in order: MEMRA_NVRTC_LIBRARY (a full path; when set it
 * is the only candidate, so a test can point it at a missing file), else
 * libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so by the loader's search, then
 * the same names under /usr/local/cuda/lib64.
 * Returns OK with *out set; NOT_SUPPORTED when no candidate opens (the
 * message names every one tried with dlerror's text); NVRTC_ERROR when the
 * library lacks an entry point or nvrtcVersion fails. A failure is not
 * remembered here (the caller may); the next call tries again. Thread-safe. */
memra_status memra__nvrtc_get(const memra__nvrtc **out);
/* The library's name for a result ("NVRTC_ERROR_COMPILATION"), never NULL. */
const char *memra__nvrtc_errstr(const memra__nvrtc *nv, nvrtcResult r);

#endif
