/* Driver entry points for the GPU modules (see cu.h). */
#include "cu.h"

memra_status memra__cu_resolve(const memra_host_services *host, const char *module, memra__cu *cu)
{
    if (host->driver_proc == NULL)
        return host->set_error(MEMRA_STATUS_NO_DRIVER, "%s: the host services offer no driver entry points", module);
#define MEMRA__CU_RESOLVE(name, ret, params)                                                          \
    {                                                                                                 \
        void *p = host->driver_proc(#name);                                                           \
        if (p == NULL)                                                                                \
            return host->set_error(MEMRA_STATUS_NO_DRIVER, "%s: driver entry point %s not found",     \
                                   module, #name);                                                    \
        *(void **)&cu->name = p;                                                                      \
    }
    MEMRA__CU_LIST(MEMRA__CU_RESOLVE)
#undef MEMRA__CU_RESOLVE
    return MEMRA_STATUS_OK;
}

memra_status memra__cu_fail(const memra_host_services *host, const memra__cu *cu, const char *module,
                            CUresult r, const char *what)
{
    const char *name = NULL;
    if (cu->cuGetErrorName == NULL || cu->cuGetErrorName(r, &name) != MEMRA__CU_SUCCESS || name == NULL)
        name = "CUDA_ERROR_UNKNOWN";
    return host->set_error(MEMRA_STATUS_DRIVER_ERROR, "%s: %s failed: %s (%d)", module, what, name, (int)r);
}
