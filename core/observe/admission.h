/* The admission self-check (core/observe/admission.c): a module loaded at run time
 * runs each op it provides, on each device where it was admitted, against the
 * host module before any routing snapshot publishes it. */
#ifndef MEMRA_CORE_ADMISSION_H
#define MEMRA_CORE_ADMISSION_H

#include "core/state/runtime.h"

/* One case of an op: up to four inputs placed at member offsets of
 * memra_op_args, one output (with its initial bytes) placed likewise. Shared
 * by the self-check and memra_tune_race (core/observe/tune_race.c). */
#define MEMRA__ACASE_MAX_IN 4
typedef struct acase {
    memra_op op;
    memra_op_args a;
    int n_in;
    void *in[MEMRA__ACASE_MAX_IN];
    size_t in_bytes[MEMRA__ACASE_MAX_IN];
    size_t in_off[MEMRA__ACASE_MAX_IN];
    void *out_init;
    size_t out_bytes;
    size_t out_off;
    char shape[48];
    int gemm;    /* judged by band (else bytes must be identical) */
    double band; /* the op's band, e = |got - ref| / mass */
    const double *mass; /* optional: the GEMM's mass, m x n, made once by memra__acase_mass (not owned) */
} acase;
#define OFF(member) offsetof(memra_op_args, member)

/* A GEMM case of op at m x n x k with random inputs from `seed` (never all
 * zeros); 0 when out of memory or op is not a GEMM. */
int memra__acase_gemm(uint64_t seed, memra_op op, int m, int n, int k, acase *c);
void memra__acase_free(acase *c);
/* For gemm_q8_0 / gemm_q8_0r: the operands the op reads (q8_1 records of x,
 * records of w), made by the host module; op_case borrows c's other inputs.
 * Free with memra__acase_operands_free. */
int memra__acase_operands(memra_device *host, const memra__modrec *href, acase *c, acase *op_case);
void memra__acase_operands_free(const acase *c, acase *op_case);
/* 1 when got matches ref within the case's band; otherwise why is written. */
int memra__acase_judge(const acase *c, const void *got, const void *ref, char *why, size_t len);
/* A GEMM case's mass (m x n doubles, the caller frees), for judging many
 * results of one case without remaking it each time (set c->mass); NULL on
 * failure. */
double *memra__acase_mass(const acase *c);
/* Run c once on (dev, r, variant) with fresh buffers; the output is read back
 * into out (c->out_bytes). DECLINED sets *why. */
memra_status memra__acase_run(memra_device *dev, const memra__modrec *r, const acase *c, void *out, const char **why,
                              int variant);
/* The host module's record (the reference), NULL when it is not loaded. */
memra__modrec *memra__host_rec(memra_runtime *rt);

/* Check r (admitted, not yet published; caller holds reg_lock). Returns 1
 * when it passed (or could not be checked: r->adm_state says which), 0 when
 * it is quarantined; the verdict (state, note, cost) reaches r through
 * memra__verdict_admission (core/routing/verdict.h). */
int memra__admission_check(memra_runtime *rt, memra__modrec *r);

/* Check the variant lists r declares (names [a-z0-9_.-]{1,32}, unique per
 * op, at most 64, only for ops it provides). 0 with `why` written when bad. */
int memra__variants_validate(memra_runtime *rt, const memra__modrec *r, char *why, size_t len);

#endif
