/* memra check's own reference: a plain f64 computation of every checked op,
 * written from the op contracts in DESIGN.md ("Operations") and the host
 * module's header comments, sharing no code with the host module or with
 * core/weights/formats.c (its own f16 and e4m3 conversions, its own quantisers and
 * block decoders). The host module on the host device is judged against it. */
#ifndef MEMRA_TOOLS_CHECK_REF_H
#define MEMRA_TOOLS_CHECK_REF_H

#include <stddef.h>
#include <stdint.h>

#include "memra/module.h"

/* IEEE binary16: round to nearest even from f32, and the exact value back. */
uint16_t ref_f16_bits(float f);
double ref_f16_value(uint16_t h);
/* bf16 round to nearest even (NaN quiet), and its exact value. */
uint16_t ref_bf16_bits(float f);
double ref_bf16_value(uint16_t h);
/* OCP e4m3: exact value of a code (NaN for magnitude 0x7F); encode rounds to
 * nearest even and saturates to +-448. */
double ref_e4m3_value(uint8_t code);
uint8_t ref_e4m3_encode(float f);

/* q8_1 records for x [m x k] (memra_q8_1_bytes(m, k) bytes). */
void ref_quant_q8_1(const float *x, int64_t m, int64_t k, uint8_t *out);
/* rows x cols of `format` -> f16 bits (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). */
void ref_dequant_f16(memra_format format, const uint8_t *src, int64_t rows, int64_t cols, uint16_t *out);
/* block-128 e4m3 + grid -> Q8_0 slab. cols % 32 == 0. */
void ref_fp8_blk_to_q8_0(const uint8_t *w, const float *grid, int64_t rows, int64_t cols, uint8_t *out);
/* Q4_0 blocks -> the same values as Q8_0 blocks (d kept, value j of a block is
 * (nibble j) - 8: low nibbles of qs are values 0..15, high nibbles 16..31). */
void ref_q4_0_to_q8_0(const uint8_t *src, int64_t rows, int64_t cols, uint8_t *out);
/* Q8_0 [rows x cols] -> Q8_0 records (memra_q8_0r_bytes(rows, cols) bytes), from
 * the layout comment at memra_q8_0r_bytes: record (g, j) at g * rows + j holds
 * the f16 scales of blocks 4g..4g+3 of row j widened to f32, then their 128
 * codes; blocks past cols are d = 0, codes 0. cols % 32 == 0. */
void ref_repack_q8_0(const uint8_t *src, int64_t rows, int64_t cols, uint8_t *out);

/* The GEMMs: ref[i*n+j] = y value, mass[i*n+j] = sum_k |terms| with every
 * scale applied (the normaliser of the check). x is f32 [m x k] except for
 * gemm_f16 with xh (f16 bits, may be NULL) and gemm_q8_0 (q8_1 records).
 * gemm_q8_0r has no reference of its own: its contract is gemm_q8_0's on the
 * Q8_0 weight the records were made from, so the caller asks for gemm_q8_0. */
typedef struct ref_gemm {
    memra_op op;
    int64_t m, n, k;
    const float *x;
    const uint16_t *xh;
    const uint8_t *xq;  /* gemm_q8_0 records */
    const void *w;
    float w_scale;
    const float *grid;
    float alpha;
    /* gemm_fp8 / gemm_fp8_blk given activation scales (memra_gemm_args):
     * x_amax (per tensor one value; block [ceil(k/128) x m]) wins over x_scale
     * (> 0); both unset: the own amax pass */
    float x_scale;
    const float *x_amax;
} ref_gemm;
void ref_gemm_run(const ref_gemm *g, double *ref, double *mass);

#endif
