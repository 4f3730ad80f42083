/* NVRTC by dlopen. See nvrtc.h for the search order. */
#include "jit/nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/error.h"
#include "base/trust.h"

static const char *const k_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
static const char k_cuda_lib_dir[] = "/usr/local/cuda/lib64";

/* Append "; <what>: <why>" to tried[], keeping it NUL-terminated. */
static void note_tried(char *tried, size_t cap, const char *what, const char *why)
{
    size_t len = strlen(tried);
    if (len + 1 >= cap) return;
    snprintf(tried + len, cap - len, "%s%s (%s)", len ? "; " : "", what, why ? why : "unknown");
}

static void *try_open(const char *what, char *tried, size_t cap)
{
    void *lib = dlopen(what, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) note_tried(tried, cap, what, dlerror());
    return lib;
}

static memra_status nvrtc_open(memra__nvrtc *nv)
{
    memset(nv, 0, sizeof *nv);
    char tried[768] = "";
    char path[sizeof nv->path] = "";
    void *lib = NULL;
    int lib_fd = -1; /* the descriptor of an MEMRA_NVRTC_LIBRARY load, kept while lib is open */
    const char *env = memra__env("MEMRA_NVRTC_LIBRARY");
    if (env != NULL && env[0] != '\0') {
        /* Absolute, checked, loaded by descriptor; the descriptor stays open
         * as long as the process (NVRTC is opened once and never closed). */
        char why[1024];
        lib = memra__trust_dlopen_env("MEMRA_NVRTC_LIBRARY", env, &lib_fd, why, sizeof why);
        if (lib == NULL) return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "NVRTC not found: %s", why);
        snprintf(path, sizeof path, "%s", env);
    } else {
        for (size_t i = 0; lib == NULL && i < sizeof k_names / sizeof k_names[0]; i++) {
            lib = try_open(k_names[i], tried, sizeof tried);
            if (lib != NULL) snprintf(path, sizeof path, "%s", k_names[i]);
        }
        for (size_t i = 0; lib == NULL && i < sizeof k_names / sizeof k_names[0]; i++) {
            char full[512];
            snprintf(full, sizeof full, "%s/%s", k_cuda_lib_dir, k_names[i]);
            lib = try_open(full, tried, sizeof tried);
            if (lib != NULL) snprintf(path, sizeof path, "%s", full);
        }
    }
    if (lib == NULL)
        return MEMRA__FAIL(MEMRA_STATUS_NOT_SUPPORTED, "NVRTC not found: tried %s", tried);

    /* dlsym returns void *; converting it to a function pointer is what POSIX
     * requires to work, copied through memcpy to stay within ISO C. */
#define MEMRA__NVRTC_RESOLVE(name, ret, params)                                                      \
    {                                                                                                 \
        void *sym = dlsym(lib, #name);                                                                \
        if (sym == NULL) {                                                                            \
            dlclose(lib);                                                                             \
            if (lib_fd >= 0) close(lib_fd);                                                           \
            memset(nv, 0, sizeof *nv);                                                                \
            return MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "NVRTC library %s lacks %s", path, #name);   \
        }                                                                                             \
        memcpy(&nv->name, &sym, sizeof sym);                                                          \
    }
    MEMRA__NVRTC_LIST(MEMRA__NVRTC_RESOLVE)
#undef MEMRA__NVRTC_RESOLVE

    nv->lib = lib;
    memcpy(nv->path, path, sizeof path);
    nvrtcResult r = nv->nvrtcVersion(&nv->major, &nv->minor);
    if (r != MEMRA__NVRTC_SUCCESS) {
        memra_status st = MEMRA__FAIL(MEMRA_STATUS_NVRTC_ERROR, "nvrtcVersion failed in %s: %s", nv->path,
                                      memra__nvrtc_errstr(nv, r));
        dlclose(lib);
        if (lib_fd >= 0) close(lib_fd);
        memset(nv, 0, sizeof *nv);
        return st;
    }
    MEMRA__DEBUG("jit", "NVRTC %d.%d from %s", nv->major, nv->minor, nv->path);
    return MEMRA_STATUS_OK;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static memra__nvrtc g_nv;
static int g_open;

memra_status memra__nvrtc_get(const memra__nvrtc **out)
{
    memra_status st = MEMRA_STATUS_OK;
    pthread_mutex_lock(&g_mu);
    if (!g_open) {
        st = nvrtc_open(&g_nv);
        g_open = st == MEMRA_STATUS_OK;
    }
    pthread_mutex_unlock(&g_mu);
    if (st == MEMRA_STATUS_OK) *out = &g_nv;
    return st;
}

const char *memra__nvrtc_errstr(const memra__nvrtc *nv, nvrtcResult r)
{
    const char *s = nv->lib != NULL && nv->nvrtcGetErrorString != NULL ? nv->nvrtcGetErrorString(r) : NULL;
    return s != NULL ? s : "unknown NVRTC result";
}
