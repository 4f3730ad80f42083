/* gpu: a Q4_0 weight without an f16 mirror on the GPU's MMQ floor (prepare
 * converts it exactly to Q8_0 records; matmul is quant_q8_1 + gemm_q8_0r),
 * against the same weight on the host device (whose floor is the host
 * reference of gemm_q8_0 on the converted blocks), at m in {1, 17, 512},
 * n = 200 and k = 320 (neither on the 128 tile), with a random f32 activation
 * and random Q4_0 bytes (d in [0.005, 0.015), random nibbles: never zero).
 * Band: gemm_q8_0r's 2e-6 of the row-column mass sum |x| |w| per element
 * (tools/check.c: integer products and s32 sums per 32 are exact; only the
 * f32 folds differ, a few units in the last place per block term). Also
 * asserts the ledger: gemm_q8_0r served on the GPU (by the module named in
 * argv[1] when given, e.g. "portable" under MEMRA_ARCH=cuda with
 * MEMRA_PREFER), no dequant_f16 there. Exits 77 without a GPU.
 *   test_q4_0_floor [MODULE] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"

#define N_OUT 200
#define K_IN 320
#define BAND 2e-6

static uint64_t g_rng;

/* Hits of op on dev by every module routed there. */
static uint64_t hits_any(memra_device *dev, memra_op op)
{
    const char *names[16];
    int n = memra_routing_get(dev, op, names, 16);
    uint64_t h = 0;
    for (int i = 0; i < n && i < 16; i++) h += memra_ledger_hits(dev, op, names[i]);
    return h;
}

static float *run(memra_device *dev, memra_weight *w, const float *x, int m, int on_gpu)
{
    float *y = malloc((size_t)m * N_OUT * sizeof(float));
    CHECK(y != NULL);
    if (!on_gpu) {
        CHECK_OK(memra_matmul(dev, w, (memra_dptr)(uintptr_t)x, m, (memra_dptr)(uintptr_t)y, NULL));
        return y;
    }
    memra_buffer *bx, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)m * K_IN * 4, &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)m * N_OUT * 4, &by));
    CHECK_OK(memra_buffer_write(bx, 0, x, (size_t)m * K_IN * 4));
    CHECK_OK(memra_matmul(dev, w, memra_buffer_ptr(bx), m, memra_buffer_ptr(by), NULL));
    CHECK_OK(memra_buffer_read(by, 0, y, (size_t)m * N_OUT * 4));
    memra_buffer_destroy(bx);
    memra_buffer_destroy(by);
    return y;
}

int main(int argc, char **argv)
{
    const char *want_module = argc > 1 ? argv[1] : NULL;
    g_rng = test_seed();
    memra_runtime *rt;
    CHECK_OK(memra_open(NULL, &rt));
    memra_device *gpu = NULL, *host = memra_device_host(rt);
    for (int i = 0; i < memra_device_count(rt) && gpu == NULL; i++)
        if (memra_device_caps_get(memra_device_get(rt, i))->arch != MEMRA_ARCH_HOST) gpu = memra_device_get(rt, i);
    if (gpu == NULL) {
        printf("driver: %s\n", memra_driver_status(rt));
        memra_close(rt);
        TEST_SKIP("no CUDA device");
    }
    CHECK_OK(memra_device_w16_set(gpu, 0)); /* the floor's test: no W16 operand, whatever MEMRA_W16 says */
    const size_t nb = (size_t)N_OUT * (K_IN / 32);
    uint8_t *w4 = malloc(nb * MEMRA_Q4_0_BYTES);
    CHECK(w4 != NULL);
    for (size_t b = 0; b < nb; b++) {
        uint8_t *q = w4 + b * MEMRA_Q4_0_BYTES;
        uint16_t d = memra_f16_from_f32(0.005f + 0.005f * (1.0f + test_rand_f32(&g_rng)));
        q[0] = (uint8_t)d, q[1] = (uint8_t)(d >> 8);
        for (int j = 2; j < MEMRA_Q4_0_BYTES; j++) q[j] = (uint8_t)test_rand_u64(&g_rng);
    }
    float *wdec = malloc((size_t)N_OUT * K_IN * sizeof(float));
    for (int j = 0; j < N_OUT; j++)
        memra_decode_row(MEMRA_FORMAT_Q4_0, w4 + (size_t)j * (K_IN / 32) * MEMRA_Q4_0_BYTES, K_IN, wdec + (size_t)j * K_IN);
    CHECK_OK(memra_device_f16_budget_set(gpu, 0));
    CHECK_OK(memra_device_f16_budget_set(host, 0));
    memra_weight_desc desc = {.struct_size = sizeof desc, .format = MEMRA_FORMAT_Q4_0, .out_f = N_OUT, .in_f = K_IN,
                              .data = w4, .size = nb * MEMRA_Q4_0_BYTES, .name = "q4_0 floor"};
    memra_weight *w;
    CHECK_OK(memra_weight_create(rt, &desc, &w));
    CHECK_OK(memra_weight_prepare(w, gpu));
    unsigned ops = memra_weight_operands(w, gpu);
    printf("operands on %s: 0x%x (records: %s)\n", memra_device_caps_get(gpu)->name, ops,
           ops & MEMRA_OPERAND_Q8_0_RECORDS ? "yes" : "NO");
    CHECK(ops & MEMRA_OPERAND_Q8_0_RECORDS);
    static const int ms[] = {1, 17, 512};
    int fails = 0;
    for (size_t t = 0; t < sizeof ms / sizeof ms[0]; t++) {
        const int m = ms[t];
        float *x = malloc((size_t)m * K_IN * sizeof(float));
        for (size_t i = 0; i < (size_t)m * K_IN; i++) x[i] = test_rand_f32(&g_rng);
        const char *mod = want_module ? want_module : NULL;
        uint64_t r0 = 0, d0 = hits_any(gpu, MEMRA_OP_dequant_f16);
        if (mod) r0 = memra_ledger_hits(gpu, MEMRA_OP_gemm_q8_0r, mod);
        uint64_t any0 = hits_any(gpu, MEMRA_OP_gemm_q8_0r);
        float *yg = run(gpu, w, x, m, 1), *yh = run(host, w, x, m, 0);
        double worst = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < N_OUT; j++) {
                double mass = 0;
                for (int kk = 0; kk < K_IN; kk++) mass += fabs((double)x[(size_t)i * K_IN + kk]) * fabs((double)wdec[(size_t)j * K_IN + kk]);
                double e = fabs((double)yg[(size_t)i * N_OUT + j] - (double)yh[(size_t)i * N_OUT + j]) / (mass > 0 ? mass : 1);
                if (!(e <= worst)) worst = e; /* NaN counts as worst */
            }
        const int served = hits_any(gpu, MEMRA_OP_gemm_q8_0r) == any0 + 1 &&
                           (!mod || memra_ledger_hits(gpu, MEMRA_OP_gemm_q8_0r, mod) == r0 + 1) &&
                           hits_any(gpu, MEMRA_OP_dequant_f16) == d0;
        const int ok = worst <= BAND && served;
        printf("q4_0 floor m=%-4d n=%d k=%d  max |gpu-host|/mass %.3g (band %.0e)  gemm_q8_0r on GPU%s%s: %s  %s\n", m,
               N_OUT, K_IN, worst, BAND, mod ? " by " : "", mod ? mod : "", served ? "yes" : "NO", ok ? "PASS" : "FAIL");
        fails += !ok;
        free(x), free(yg), free(yh);
    }
    memra_weight_destroy(w);
    memra_close(rt);
    free(w4), free(wdec);
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
