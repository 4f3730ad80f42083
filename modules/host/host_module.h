/* The host reference module: every op of the v1 table on the CPU.
 *
 * It is built into libmemra and registered through the same descriptor as a
 * loadable module (the core calls memra__host_module_entry() where it would
 * dlsym MEMRA_MODULE_ENTRY_SYMBOL). Name "host", score 1 on MEMRA_ARCH_HOST,
 * 0 elsewhere. caps->sm_count is the number of CPU threads an op may use.
 * Every memra_dptr is a host pointer cast to uint64_t.
 *
 * The numeric contract of each op is written at the top of host_ops.c and
 * host_gemm.c; GPU lanes are judged against exactly these results.
 */
#ifndef MEMRA_HOST_MODULE_H
#define MEMRA_HOST_MODULE_H

#include "memra/module.h"

const memra_module_desc *memra__host_module_entry(void);

#endif
