/* The dequant family (dequant.cu): Q8_0, Q4_0, Q4_K, Q5_K, Q6_K rows -> f16,
 * bit-identical to the host decoder. Ops dequant_f16, and dequant_kr_f16 (the
 * K-packed records of gemm_kr's operand -> f16, bit for bit dequant_f16 of the
 * blocks they were repacked from). */
#include "dequant.h"
#include "kernels/kernels.h"

#define GPU_OF(call) ((memra__gpu *)(call)->module_ctx)

typedef struct memra__dequant_state {
    CUfunction dequant_q8_0, dequant_q4_0, dequant_q4_k, dequant_q5_k, dequant_q6_k;
    CUfunction dequant_kr_q4_k, dequant_kr_q5_k, dequant_kr_q6_k, dequant_kr_q8_0;
} memra__dequant_state;

/* The family's kernels, looked up by the runtime at create. */
static const memra__gpu_kernel k_kernels[] = {
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_q8_0),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_q4_0),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_q4_k),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_q5_k),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_q6_k),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_kr_q4_k),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_kr_q5_k),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_kr_q6_k),
    MEMRA__GPU_KERNEL(memra__dequant_state, dequant_kr_q8_0),
};

const memra__gpu_family memra__gpu_family_dequant = {MEMRA__GPU_FAMILY_IMAGE("dequant", memra__dequant_state, k_kernels)};

/* dequant.cu: a persistent grid over tiles of `tb` blocks when src is 16-byte
 * aligned (the kernel decides by the same test), the remaining blocks (all of
 * them otherwise) one 16-byte output octet per thread, grid-stride. */
memra_status memra__gpu_dequant_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                    int64_t cols, memra_dptr dst_f16)
{
    memra__gpu *gpu = GPU_OF(call);
    const memra__dequant_state *k = memra__gpu_state(gpu, &memra__gpu_family_dequant);
    CUfunction f;
    const char *name;
    int64_t qk, tb; /* values per block, blocks per tile (dequant.h) */
    switch (format) {
    case MEMRA_FORMAT_Q8_0: f = k->dequant_q8_0, name = "memra_k_dequant_q8_0", qk = DQ_Q8_0_QK, tb = DQ_Q8_0_TB; break;
    case MEMRA_FORMAT_Q4_0: f = k->dequant_q4_0, name = "memra_k_dequant_q4_0", qk = DQ_Q4_0_QK, tb = DQ_Q4_0_TB; break;
    case MEMRA_FORMAT_Q4_K: f = k->dequant_q4_k, name = "memra_k_dequant_q4_k", qk = DQ_Q4_K_QK, tb = DQ_Q4_K_TB; break;
    case MEMRA_FORMAT_Q5_K: f = k->dequant_q5_k, name = "memra_k_dequant_q5_k", qk = DQ_Q5_K_QK, tb = DQ_Q5_K_TB; break;
    case MEMRA_FORMAT_Q6_K: f = k->dequant_q6_k, name = "memra_k_dequant_q6_k", qk = DQ_Q6_K_QK, tb = DQ_Q6_K_TB; break;
    default: return memra__gpu_decline(call, "dequant_f16 takes Q8_0, Q4_0, Q4_K, Q5_K and Q6_K only");
    }
    if (rows <= 0 || cols <= 0 || src == 0 || dst_f16 == 0) return memra__gpu_bad_arg(gpu, "dequant_f16", "empty shape or null buffer");
    if (cols % qk != 0) return memra__gpu_bad_arg(gpu, "dequant_f16", "cols is not a multiple of the format's block");
    if (!memra__gpu_aligned(dst_f16, 16)) return memra__gpu_decline(call, "dequant_f16 needs a 16-byte aligned destination");
    long long nblocks = (long long)(rows * (cols / qk));
    const int64_t ntiles = memra__gpu_aligned(src, 16) ? nblocks / tb : 0;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    unsigned grid;
    if (ntiles > 0) {
        int per_sm = 0;
        if (gpu->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 256, 0) != MEMRA__CU_SUCCESS || per_sm < 1)
            per_sm = 4;
        grid = memra__gpu_grid_balanced(ntiles, (int64_t)(gpu->caps->sm_count > 0 ? gpu->caps->sm_count : 16) * per_sm);
    } else {
        grid = memra__gpu_blocks(gpu, nblocks * (qk / 8), 256);
    }
    st = memra__gpu_launch(gpu, f, name, grid, 256, call->stream, (void *[]){&src, &nblocks, &dst_f16});
    memra__gpu_leave(gpu);
    return st;
}


/* dequant.cu dq_kr_run: one 16-byte output octet per thread, grid-stride over (record, octet) */
memra_status memra__gpu_dequant_kr_f16(memra_call *call, memra_format format, memra_dptr src, int64_t rows,
                                       int64_t cols, memra_dptr dst_f16)
{
    memra__gpu *gpu = GPU_OF(call);
    const memra__dequant_state *k = memra__gpu_state(gpu, &memra__gpu_family_dequant);
    CUfunction f;
    const char *name;
    switch (format) {
    case MEMRA_FORMAT_Q4_K: f = k->dequant_kr_q4_k, name = "memra_k_dequant_kr_q4_k"; break;
    case MEMRA_FORMAT_Q5_K: f = k->dequant_kr_q5_k, name = "memra_k_dequant_kr_q5_k"; break;
    case MEMRA_FORMAT_Q6_K: f = k->dequant_kr_q6_k, name = "memra_k_dequant_kr_q6_k"; break;
    case MEMRA_FORMAT_Q8_0: f = k->dequant_kr_q8_0, name = "memra_k_dequant_kr_q8_0"; break;
    default: return memra__gpu_decline(call, "dequant_kr_f16 takes Q4_K, Q5_K, Q6_K K records and Q8_0 records only");
    }
    if (rows <= 0 || cols <= 0 || src == 0 || dst_f16 == 0)
        return memra__gpu_bad_arg(gpu, "dequant_kr_f16", "empty shape or null buffer");
    const int q8 = format == MEMRA_FORMAT_Q8_0;
    if (cols % (q8 ? 32 : 256) != 0 || (q8 ? memra_q8_0r_bytes(rows, cols) : memra_kr_bytes(format, rows, cols)) == 0 ||
        rows > INT64_MAX / cols / 2)
        return memra__gpu_bad_arg(gpu, "dequant_kr_f16",
                                  "cols is not a multiple of 256 (Q8_0 records: 32), or rows x cols overflows");
    if (!memra__gpu_aligned(dst_f16, 16) || !memra__gpu_aligned(src, 8))
        return memra__gpu_decline(call, "dequant_kr_f16 needs an 8-byte aligned source and a 16-byte aligned destination");
    long long r = (long long)rows, c = (long long)cols;
    memra_status st = memra__gpu_enter(gpu);
    if (st != MEMRA_STATUS_OK) return st;
    const unsigned grid = memra__gpu_blocks(gpu, (int64_t)(r * ((c + 127) / 128) * 16), 256);
    st = memra__gpu_launch(gpu, f, name, grid, 256, call->stream, (void *[]){&src, &r, &c, &dst_f16});
    memra__gpu_leave(gpu);
    return st;
}
