/* Architecture profiles: capabilities, JIT target and lane policy per arch.
 * Every arch decision in memra reads this table. */
#ifndef MEMRA_ARCH_PROFILES_H
#define MEMRA_ARCH_PROFILES_H

#include <stdint.h>

#include "memra/module.h"

typedef struct memra__profile {
    memra_arch arch;
    const char *name;          /* "sm90" ... */
    uint64_t caps;             /* MEMRA_CAP_* */
    /* Lane policy knobs. */
    uint64_t f16_budget_mb;    /* f16 mirror budget of the host device, and of a GPU whose free memory the driver cannot say (a GPU's default is derived at open: core/runtime/runtime.c) */
    int fp8_blk_slab;          /* build the Q8_0 slab for block-128 FP8 weights (MMQ fallback) */
    /* MEMRA_FLOOR_F16_M=auto on this profile (the route is off by default): the measured crossover, from this
     * many tokens a weight the floor holds as records runs dequant_kr_f16 + gemm_f16 in place of the floor;
     * 0 never. Two, as the floor's two record kinds cross over at different m: K records (Q4_K / Q5_K /
     * Q6_K) and Q8_0 records (Q8_0, Q4_0). */
    int64_t floor_f16_m;    /* K records */
    int64_t floor_f16_m_q8; /* Q8_0 records */
} memra__profile;

/* The profile a device of compute capability cc (major*10+minor) gets; NULL
 * when the device is too old for any GPU profile (cc < 8.0). */
const memra__profile *memra__profile_for_cc(int cc);
/* Profile by name ("sm90", "sm120", "cuda", "host"); NULL when unknown. */
const memra__profile *memra__profile_by_name(const char *name);
const memra__profile *memra__profile_host(void);
/* JIT target string for cc under profile p into buf ("sm_90a", "sm_121a", "sm_86"). */
void memra__profile_jit_target(const memra__profile *p, int cc, char *buf, int len);

#endif
