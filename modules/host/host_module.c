/* The host module's descriptor, per-device context and thread splitter.
 *
 * Threads are started per call (a few tens of microseconds) and only when the
 * op is large enough to gain from them; work is split over output columns
 * (weight rows) in contiguous ranges, each output element computed by one
 * thread in a fixed order, so results are the same for any thread count.
 */
#define _POSIX_C_SOURCE 200809L

#include "modules/host/host_module.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "modules/host/host_internal.h"

#define HOST_MAX_THREADS 256
/* Below about this many operations per thread a thread costs more than it saves. */
#define HOST_OPS_PER_THREAD (1 << 20)

/* ---- threads --------------------------------------------------------------- */

typedef struct host_range {
    memra__host_range_fn fn;
    void *job;
    int tid;
    int64_t begin, end;
} host_range;

static void *host_range_main(void *arg)
{
    host_range *r = (host_range *)arg;
    r->fn(r->job, r->tid, r->begin, r->end);
    return NULL;
}

int memra__host_threads(const memra__host_ctx *ctx, int64_t items, double ops_per_item)
{
    if (ctx == NULL || items <= 1) return 1;
    double want = (double)items * ops_per_item / (double)HOST_OPS_PER_THREAD;
    int64_t t = ctx->threads;
    if (want < (double)t) t = want < 1.0 ? 1 : (int64_t)want;
    if (t > items) t = items;
    return (int)(t < 1 ? 1 : t);
}

void memra__host_run(int threads, int64_t items, memra__host_range_fn fn, void *job)
{
    if (items <= 0) return;
    if (threads <= 1) {
        fn(job, 0, 0, items);
        return;
    }
    host_range ranges[HOST_MAX_THREADS];
    pthread_t tids[HOST_MAX_THREADS];
    int started[HOST_MAX_THREADS];
    if (threads > HOST_MAX_THREADS) threads = HOST_MAX_THREADS;
    for (int t = 0; t < threads; t++) {
        ranges[t] = (host_range){.fn = fn,
                                 .job = job,
                                 .tid = t,
                                 .begin = items * t / threads,
                                 .end = items * (t + 1) / threads};
        started[t] = 0;
    }
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&tids[t], NULL, host_range_main, &ranges[t]) == 0;
    host_range_main(&ranges[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tids[t], NULL);
        else host_range_main(&ranges[t]);
    }
}

void *memra__host_alloc(uint64_t count, size_t size)
{
    if (count == 0) count = 1;
    if (size == 0 || count > SIZE_MAX / size) return NULL;
    return malloc((size_t)(count * size));
}

memra__host_ctx *memra__host_call_ctx(const memra_call *call)
{
    if (call == NULL) return NULL;
    memra__host_ctx *ctx = (memra__host_ctx *)call->module_ctx;
    if (ctx == NULL || ctx->host == NULL || ctx->host->set_error == NULL) return NULL;
    return ctx;
}

/* ---- descriptor ------------------------------------------------------------ */

static int host_score(const memra_device_caps *caps)
{
    return caps != NULL && caps->arch == MEMRA_ARCH_HOST ? 1 : 0;
}

static memra_status host_init(const memra_host_services *host, const memra_device_caps *caps, void **out_ctx)
{
    if (host == NULL || host->set_error == NULL) return MEMRA_STATUS_INVALID_ARGUMENT;
    if (caps == NULL || out_ctx == NULL)
        return host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "host module init: caps and out_ctx must not be NULL");
    if (caps->arch != MEMRA_ARCH_HOST)
        return host->set_error(MEMRA_STATUS_INVALID_ARGUMENT, "host module init: device \"%s\" is not the host device",
                               caps->name ? caps->name : "?");
    memra__host_ctx *ctx = (memra__host_ctx *)calloc(1, sizeof *ctx);
    if (ctx == NULL) return host->set_error(MEMRA_STATUS_OUT_OF_MEMORY, "host module init: out of memory");
    ctx->host = host;
    ctx->threads = caps->sm_count < 1 ? 1 : caps->sm_count > HOST_MAX_THREADS ? HOST_MAX_THREADS : caps->sm_count;
    for (int c = 0; c < 256; c++) ctx->e4m3[c] = memra_e4m3_decode((uint8_t)c);
    *out_ctx = ctx;
    return MEMRA_STATUS_OK;
}

static void host_fini(void *ctx) { free(ctx); }

static const memra_op_table host_ops = {
    .struct_size = sizeof(memra_op_table),
    .cvt_f16 = memra__host_cvt_f16,
    .gemm_f16 = memra__host_gemm_f16,
    .gemm_fp8 = memra__host_gemm_fp8,
    .gemm_fp8_blk = memra__host_gemm_fp8_blk,
    .quant_q8_1 = memra__host_quant_q8_1,
    .gemm_q8_0 = memra__host_gemm_q8_0,
    .dequant_f16 = memra__host_dequant_f16,
    .fp8_blk_to_q8_0 = memra__host_fp8_blk_to_q8_0,
    .fp8_nan_count = memra__host_fp8_nan_count,
    .scale = memra__host_scale,
    .accprobe = memra__host_accprobe,
    .repack_q8_0 = memra__host_repack_q8_0,
    .gemm_q8_0r = memra__host_gemm_q8_0r,
    .gemm_bf16 = memra__host_gemm_bf16,
    .gemm_kr = memra__host_gemm_kr,
    .gemm_experts = memra__host_gemm_experts,
    .dequant_kr_f16 = memra__host_dequant_kr_f16,
    .gemm_w16 = memra__host_gemm_w16,
};

static const memra_module_desc host_desc = {
    .abi_version = MEMRA_MODULE_ABI_VERSION,
    .struct_size = sizeof(memra_module_desc),
    .name = "host",
    .version = MEMRA_VERSION_STRING,
    .score = host_score,
    .init = host_init,
    .fini = host_fini,
    .ops = &host_ops,
    .jit_sources = NULL,
    .q8_1_sums = 1, /* quant_q8_1 writes the sum plane */
};

const memra_module_desc *memra__host_module_entry(void) { return &host_desc; }
