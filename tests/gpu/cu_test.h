/* The GPU tests' own libcuda access: they check memra from outside, so they
 * open the driver themselves, each with a table of the few entry points it
 * needs. CU_CHECK fails the test on a CUresult other than 0; cu_test_open
 * returns the driver's handle (or fails the test); CU_TEST_SYM resolves one
 * member of a table from it, by the member's name. */
#ifndef MEMRA_TEST_CU_TEST_H
#define MEMRA_TEST_CU_TEST_H

#include <dlfcn.h>

#include "test.h"

#define CU_CHECK(call)                                                               \
    do {                                                                             \
        CUresult r_ = (call);                                                        \
        if (r_ != 0) TEST_FAIL_AT("%s: CUresult %d", #call, r_);                    \
    } while (0)

static inline void *cu_test_open(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) TEST_FAIL_AT("dlopen libcuda.so.1: %s", dlerror());
    return h;
}

#define CU_TEST_SYM(h, table, name)                                                  \
    if ((*(void **)&(table).name = dlsym((h), #name)) == NULL) TEST_FAIL_AT("dlsym %s", #name);

#endif
