/* The environment of a test on the fake CUDA driver (fake_cuda.c): memra opens the fake as its
 * driver with devices of the given cc list, cuBLASLt and NVRTC pointed at a missing path (so the
 * result does not depend on the machine's toolkit), no JIT cache, no admission self-check (the
 * fake runs no kernel, so a self-check could only fail) and no tuning file. */
#ifndef MEMRA_TESTS_GPU_FAKE_ENV_H
#define MEMRA_TESTS_GPU_FAKE_ENV_H

#include <stdlib.h>

static inline void fake_env_set(const char *fake_so, const char *ccs)
{
    setenv("MEMRA_CUDA_DRIVER", fake_so, 1);
    setenv("MEMRA_FAKE_CUDA_CC", ccs, 1);
    setenv("MEMRA_CUBLASLT_LIBRARY", "/nonexistent/libcublasLt.so", 1);
    setenv("MEMRA_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
    setenv("MEMRA_JIT_CACHE", "0", 1);
    setenv("MEMRA_ADMISSION", "off", 1);
    setenv("MEMRA_TUNE", "0", 1);
}

#endif
