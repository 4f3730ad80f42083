/* memra block formats: GGML's Q8_0, Q4_0, Q4_K, Q5_K, Q6_K byte for byte,
 * OCP e4m3, IEEE f16, the block-128 FP8 scale grid and the q8_1 MMQ record.
 *
 *   uint8_t blk[MEMRA_Q8_0_BYTES];
 *   memra_q8_0_encode(vals32, blk);            // 32 floats -> 34 bytes
 *   float back[32];
 *   memra_decode_row(MEMRA_FORMAT_Q8_0, blk, 32, back);
 *
 * All functions are pure and thread-safe. Decoders produce exactly the values
 * GGML's reference decoders produce (f16 scales widened exactly to f32, the
 * products formed in f32).
 */
#ifndef MEMRA_FORMATS_H
#define MEMRA_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "memra/module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MEMRA_QK8_0 32
#define MEMRA_Q8_0_BYTES 34 /* f16 d, int8 qs[32] */
#define MEMRA_QK4_0 32
#define MEMRA_Q4_0_BYTES 18 /* f16 d, uint8 qs[16]: low nibbles = 0..15, high = 16..31 */
#define MEMRA_QK_K 256
#define MEMRA_Q4_K_BYTES 144 /* f16 d, f16 dmin, scales[12], qs[128] */
#define MEMRA_Q5_K_BYTES 176 /* f16 d, f16 dmin, scales[12], qh[32], qs[128] */
#define MEMRA_Q6_K_BYTES 210 /* ql[128], qh[64], int8 scales[16], f16 d */
#define MEMRA_Q8_1_RECORD_BYTES 144 /* f32 d[4], int8 qs[128] */
#define MEMRA_Q8_1_SUM_BYTES 16     /* the sum plane's entry per record: f32 t[4] */
#define MEMRA_E4M3_MAX 448.0f
#define MEMRA_FP8_BLOCK 128

/* Values per block and bytes per block of a format (F32: 1/4, F16 and BF16:
 * 1/2, E4M3: 1/1). Returns 0 for an unknown format. */
int memra_format_block_values(memra_format format);
int memra_format_block_bytes(memra_format format);
const char *memra_format_name(memra_format format);
/* Bytes of a row of `cols` values; 0 when cols is not a multiple of the block. */
uint64_t memra_format_row_bytes(memra_format format, int64_t cols);

/* IEEE binary16 <-> binary32, round to nearest even, subnormals, inf, NaN. */
uint16_t memra_f16_from_f32(float f);
float memra_f32_from_f16(uint16_t h);

/* bfloat16 <-> binary32: the encode rounds to nearest even (a value past the
 * largest bf16 rounds to infinity; NaN stays NaN, quiet, sign kept); the
 * decode is exact (the 16 bits become the top half of the f32). */
uint16_t memra_bf16_from_f32(float f);
float memra_f32_from_bf16(uint16_t h);

/* OCP e4m3 (E4M3FN): bias 7, no infinity, magnitude 0x7F is NaN, max 448,
 * denormals m * 2^-9. Encode rounds to nearest even and saturates to +-448;
 * NaN encodes to 0x7F (sign kept). */
float memra_e4m3_decode(uint8_t code);
uint8_t memra_e4m3_encode(float f);
static inline int memra_e4m3_is_nan(uint8_t code) { return (code & 0x7F) == 0x7F; }

/* Q8_0 encode of 32 values: d = amax/127 (stored as f16), q = round(x / d)
 * with the reciprocal of the f32 d, ties away from zero (roundf), clamped.
 * A NULL x or block: nothing is written. */
void memra_q8_0_encode(const float *x, uint8_t *block);

/* Decode `n` values (a multiple of the format's block) of one row. Nothing is
 * written when n is not such a multiple, the format unknown, or src/dst NULL. */
void memra_decode_row(memra_format format, const void *src, int64_t n, float *dst);

/* Repack rows x cols of Q4_K, Q5_K or Q6_K (cols a multiple of 256, row j at
 * src + j * memra_format_row_bytes(format, cols)) into the K-packed layout
 * (module.h: memra_kr_bytes(format, rows, cols) bytes at dst, exactly the
 * GGUF bytes, the operand of gemm_kr): the same codes and scales, moved, never
 * widened. Returns 0, or -1 (nothing written) for another format, a negative
 * size, cols not a multiple of 256, or NULL src / dst with a non-empty shape.
 * Thread-safe; no allocation. */
int memra_kr_repack(memra_format format, const void *src, int64_t rows, int64_t cols, void *dst);

/* Record (g, j) of a K-packed weight (the 128 values from column 128 g of row
 * j) as the kernel's load stage widens it: f32 s[8] and int8 q[128].
 *  Q4_K / Q5_K: value c = s[c / 32] * q[c] - s[4 + c / 32]; s[b] = d * sc_b,
 *      s[4 + b] = dmin * m_b (an f16 times a 6-bit integer: exact in f32),
 *      q in [0, 15] / [0, 31].
 *  Q6_K: value c = s[(c / 32) + 4 * ((c / 16) & 1)] * q[c] (s[b] scales the
 *      first 16 values of 32-block b, s[4 + b] the second 16); s = d * sc
 *      (exact), q = q6 - 32 in [-32, 31].
 * Exact: every value, formed in real arithmetic, is the format's decoded value
 * before the decoder's one f32 rounding. Returns 0, or -1 (nothing written)
 * for another format, a bad shape or index, or a NULL pointer. Thread-safe. */
int memra_kr_record(memra_format format, const void *kr, int64_t rows, int64_t cols, int64_t g, int64_t j, float s[8],
                    int8_t q[128]);

/* Every record of a K-packed weight widened (memra_kr_record) into
 * memra_kr_wide_bytes(rows, cols) bytes at dst: record (g, j) at
 * (g rows + j) MEMRA_KR_WIDE_BYTES, f32 s[8] then int8 q[128] (what the
 * kernel's load stage writes to shared memory; the operand of gemm_kr before
 * the K-packed layout). For references and tests: 10 bits a value, never a
 * device operand. Returns 0 or -1 as memra_kr_record. */
#define MEMRA_KR_WIDE_BYTES 160
static inline uint64_t memra_kr_wide_bytes(int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0) return 0;
    uint64_t recs = ((uint64_t)cols + 127u) / 128u;
    if (rows != 0 && recs > UINT64_MAX / 160u / (uint64_t)rows) return 0;
    return recs * (uint64_t)rows * 160u;
}
int memra_kr_widen(memra_format format, const void *kr, int64_t rows, int64_t cols, void *dst);

/* Repack rows x cols of Q8_0, Q4_0, Q4_K, Q5_K or Q6_K (row j at src + j * memra_format_row_bytes(format, cols))
 * into the W16 layout (module.h: memra_w16_bytes(format, rows, cols) bytes at dst, every byte written), the
 * operand of gemm_w16. Within a 128-row tile, row R (0..127) and column K of a 32-value group (0..31) belong
 * to thread l = 4 (R % 8) + (K % 8) / 2 of warp P = R / 16, as the f16 wgmma m64nNk16 A fragment has them
 * (rows P 16 + l / 4 and + 8; columns 2 (l % 4) + {0, 1, 8, 9} of each 16); with rr = (R % 16) / 8, h = K / 16,
 * hi = (K % 16) / 8, e = K % 2 and L = 32 P + l, the code (Q8_0: q + 128; Q4_0: the nibble q + 8; Q4_K: the
 * nibble; Q5_K: the 5-bit code; Q6_K: the 6-bit code q + 32) goes to
 *   Q8_0         byte 16 L + 8 h + 4 rr + 2 hi + e of the group's CB bytes;
 *   Q4_0 / Q4_K  nibble j = 2 hi + rr + 4 e of little-endian word 2 L + h (bits 4 j .. 4 j + 3);
 *   Q5_K         its low 4 bits as Q4's, its fifth bit at bit 8 h + j of little-endian u16 1024 + L;
 *   Q6_K         its low 4 bits as Q4's, its top 2 bits at bits 2 (8 h + j) of word 512 + L.
 * Returns 0, or -1 (nothing written) for another format, a negative size, cols not a multiple of the
 * format's block (32; 256 for the K-quants), or NULL src / dst with a non-empty shape. Thread-safe; no
 * allocation. */
int memra_w16_repack(memra_format format, const void *src, int64_t rows, int64_t cols, void *dst);

/* The W16 operand's f16 mirror: rows x cols row-major f16 at dst, each value dequant_f16's bits of the
 * blocks it was repacked from (the format's decoder in f32 from the same codes and scales, then f16 round
 * to nearest even). Returns 0 or -1 as memra_w16_repack. */
int memra_w16_decode_f16(memra_format format, const void *w16, int64_t rows, int64_t cols, uint16_t *dst);

/* Fill a block-128 FP8 scale grid shape. */
static inline int64_t memra_fp8_grid_rows(int64_t rows) { return (rows + 127) / 128; }
static inline int64_t memra_fp8_grid_cols(int64_t cols) { return (cols + 127) / 128; }

#ifdef __cplusplus
}
#endif
#endif
