/* The MMQ family's constants, shared by mmq.cu (nvcc) and its C launchers
 * (mmq_ops.c): tiles, shared-memory sizes, record layout. Leaf header: macros
 * only, no includes, valid C and CUDA C++. See mmq.cu for what each means. */
#ifndef MEMRA_MODULES_KERNELS_MMQ_H
#define MEMRA_MODULES_KERNELS_MMQ_H

/* The 128 x 128 tile of the accumulator probe. MMQ_SMEM_BYTES is the probe's
 * dynamic shared memory and the blocks GEMM's limit; its value (91136 bytes) is
 * that of the deleted v1 GEMM tile (MMQ_RAW: its raw weight rows), kept so that
 * the module's admission check and the limits do not change. */
#define MMQ_BM 128      /* tokens per CTA */
#define MMQ_BN 128      /* weight rows per CTA */
#define MMQ_ROW 144     /* bytes of a record row in shared memory */
#define MMQ_RAW 140     /* bytes of a raw Q8_0 row tile (4 blocks + up to 2 + 2 bytes) */
#define MMQ_THREADS 256
#define MMQ_XE_MAX 4096 /* gemm_experts: experts the routing kernel counts in shared memory */
#define MMQ_STAGE_BYTES (MMQ_BM * MMQ_ROW + MMQ_BN * MMQ_RAW)
#define MMQ_SMEM_BYTES (2 * MMQ_STAGE_BYTES + MMQ_BN * MMQ_ROW)
#define MMQ_PROBE_STAGE_BYTES ((MMQ_BM + MMQ_BN) * MMQ_ROW) /* 2 stages fit in MMQ_SMEM_BYTES */
#define MMQ_MAGIC_BITS 0x4B400000u
#define MMQ_MAGIC 12582912.0f

/* quant_q8_1: records per warp and pass (one 32-value block per lane), and
 * the staging row in words (32 values + 4 pad: no bank conflicts). */
#define QUANT_RECS 8
#define QUANT_ROW 36

/* gemm_q8_0 (v2): 32 MT tokens x 128 weight rows per CTA. */
#define Q2_ROW 144 /* raw and realigned weight rows, activation record rows */
#define Q2_A_BYTES(MT) (32 * (MT) * MMQ_ROW)
#define Q2_SMEM_BYTES(MT) (2 * Q2_A_BYTES(MT) + 2 * MMQ_BN * Q2_ROW + 4 * MMQ_BN * 8)

/* gemm_q8_0r: 32 MT tokens x 32 NT weight rows per CTA, R3_STAGES deep. */
#define R3_STAGES 3
#define R3_A_BYTES(MT) (32 * (MT) * MMQ_ROW)
#define R3_STAGE_BYTES(MT, NT) (R3_A_BYTES(MT) + 32 * (NT) * MMQ_ROW)
#define R3_SMEM_BYTES(MT, NT) (R3_STAGES * R3_STAGE_BYTES(MT, NT))

/* gemm_q8_0r's warpgroup tile (sm_90a, MEMRA_MMQ_WG; mmq.cu memra_k_gemm_q8_0r_wg): 128 tokens x
 * 128 weight rows a CTA, a producer and two consumer warpgroups; a stage holds both operands'
 * code bytes (128 rows of 128, swizzled) and their 16-byte record heads, 1024-byte aligned. */
#define R3W_THREADS 384
#define R3W_STAGES 4
#define R3W_STAGE_BYTES (2 * 16384 + 2 * 2048) /* what the four copies of a stage bring */
/* TR (the _wgt tile): then the token scales transposed, [4 groups][128 tokens] */
#define R3W_STAGE_BYTES_OF(TR) (R3W_STAGE_BYTES + ((TR) ? 2048 : 0))
#define R3W_SMEM_BYTES_OF(TR) (R3W_STAGES * R3W_STAGE_BYTES_OF(TR) + 1024)
#define R3W_SMEM_BYTES R3W_SMEM_BYTES_OF(0)
/* SD (the _wgs / _wgps tiles, MEMRA_MMQ_WG_SEED=1): past the stages a 4 KB block of 0x80 bytes, the
 * B operand of the MMA that seeds each k32 group's accumulator (see mmq.cu r3w_mma_seed) */
#define R3W_SEED_BYTES 4096
#define R3W_SMEM_BYTES_SD(TR) (R3W_SMEM_BYTES_OF(TR) + R3W_SEED_BYTES)
/* MEMRA_MMQ_WG_SEED unset: 1 (0 here: _wgs, _wgsk, gemm_experts' _wgs, =pre2's _wgw2) or pin (1: their twins with
 * the fold pinned behind the s8 wgmma, _wgsf, _wgskf, _wgsf, _wgw2f); mmq_ops.c and the fake driver's tests read it */
#define MMQ_WG_SEED_PIN_DEFAULT 0
/* SD's numbers: the seed 32 x 128 x 128 (the u8 MMA of 0x80 bytes), the fold's factors s 2^111 and
 * -s 2^-19 (= -s R3W_SD_SEED 2^-149 2^111) and the store's 2^38 (= 2^(149 - 111)). tests/formats
 * (wg_seed) runs the fold on the CPU against the records tiles' with these. */
#define R3W_SD_SEED 524288u
#define R3W_SD_SCALE 0x1p111f
#define R3W_SD_MIN (-0x1p-19f)
#define R3W_SD_POST 0x1p38f
/* The K-quant tiles on it (MEMRA_MMQ_KR_WG, memra_k_gemm_kr_q4_k_wgs / _q5_k_wgs): a stage holds the
 * widened codes (16 KB, written by the producer warpgroup), the token codes (16 KB), the rows' scales
 * s [128][4], 2 KB unused, the token scales permuted, the rows' mins mn [128][4] and the token sums
 * permuted (2 KB each); s = d sc < 2^22, so the fold's factors are s 2^105 and -s 2^-25 and the store's
 * 2^44 (the min term's -mn 2^-44) */
#define R3W_STAGE_BYTES_KQ (32768 + 10240)
#define R3W_SMEM_BYTES_KQ (R3W_STAGES * R3W_STAGE_BYTES_KQ + 1024 + R3W_SEED_BYTES)
#define R3W_KQ_SCALE 0x1p105f
#define R3W_KQ_MIN (-0x1p-25f)
#define R3W_KQ_POST 0x1p44f
/* MEMRA_MMQ_KR_WG=mma (memra_k_gemm_kr_q4_k_wgm / _q5_k_wgm): the min term by two tf32 wgmmas a step
 * into the accumulators, not 64 FFMA a group. In place of the mins and sums the stage holds three
 * no-swizzle K-major tf32 tiles (core matrices of 8 rows x 16 bytes, 128 bytes apart along k and 256
 * along the rows, as the seed block): the token sums [128][8] = t_hi[4] | t_lo[4] at + 8192, and the
 * rows' P = -mn 2^-44 as [128][8] = P_hi[4] | P_hi[4] at + 12288 and P_lo[4] | 0[4] at + 16384
 * (offsets past the 32 KB of codes) */
#define R3W_KM_B 8192
#define R3W_KM_A1 12288
#define R3W_KM_A2 16384
#define R3W_STAGE_BYTES_KM (32768 + 20480)
#define R3W_SMEM_BYTES_KM (R3W_STAGES * R3W_STAGE_BYTES_KM + 1024 + R3W_SEED_BYTES)
/* MEMRA_MMQ_KR_WG=pre (memra_k_gemm_kr_kq_wgw): the call's widened image, a block per 128 weight rows and
 * ring step: the stage's code tile (16 KB), s [128][4], mn [128][4] (written by memra_k_kq_widen_*) */
#define KW_BLOCK_BYTES (16384 + 2048 + 2048)
#define KW_THREADS 256 /* the passes' blocks (a token tile of =pre2 uses 128 of them) */
/* =pre2 (memra_k_gemm_kr_kq_wgw2): the weight's blocks with the mins' tf32 tiles A1 | A2 in place of mn,
 * and the tokens' part of a stage (from + 32768 + 4096: the permuted scales, 2 KB of zeros, the sums' tf32
 * tile) a block per 128 tokens and step (both written by memra_k_kq_prep2_*) */
#define KW2_BLOCK_BYTES (16384 + 2048 + 8192)
#define KT_BLOCK_BYTES 8192

/* gemm_kr: gemm_q8_0r's tile on the K-packed weight: two weight slots
 * widened to 160 bytes per 128 values (144 in the row table, 16 in a side
 * table), R3_STAGES activation slots, and one slot of packed bytes (per row
 * and step: 64 of nibbles, KR_HB(F) of high bits, a 16-byte head). F: 0 Q4_K,
 * 1 Q5_K, 2 Q6_K. */
#define KR_HB(F) ((F) == 1 ? 16 : (F) == 2 ? 32 : 0)
/* Q4_K / Q5_K: then R3_STAGES slots of the activation rows' 16-byte sum-plane
 * entries (memra_q8_1_plane; read by the _x tiles, MEMRA_MMQ_KR_SUMS) */
#define KR_XT_BYTES(F, MT) ((F) == 2 ? 0 : R3_STAGES * 32 * (MT) * 16)
#define KR_SMEM_BYTES(F, MT, NT) \
    (2 * 32 * (NT) * 160 + R3_STAGES * 32 * (MT) * MMQ_ROW + 32 * (NT) * (80 + KR_HB(F)) + KR_XT_BYTES(F, MT))
/* Q6_K's bulk-copy tiles (MEMRA_MMQ_KR6_BULK, the _ob entry points): then a window of the D plane,
 * the tile's f16 d entries from the 16-byte boundary at or below its first (2 bytes a row + 16) */
#define KR6B_D_BYTES(NT) (32 * (NT) * 2 + 16)
#define KR6B_SMEM_BYTES(MT, NT) (KR_SMEM_BYTES(2, MT, NT) + KR6B_D_BYTES(NT))

/* gemm_experts: the grouped tiles are gemm_q8_0r's and gemm_kr's at NT = 4
 * (128 weight rows) and MT = 1, 2, 4 (32, 64, 128 gathered rows):
 * R3_SMEM_BYTES(MT, 4) and KR_SMEM_BYTES(F, MT, 4) of dynamic shared memory. */
#define MMQ_XE_TILES 3

/* The dynamic shared memory per block of an sm_120 (RTX 5090) GPU, 99 KB:
 * every tile the sm120 module may pick fits it (static_asserts in mmq.cu and
 * mmq_ops.c). */
#define MMQ_SM120_SMEM 101376

#endif
