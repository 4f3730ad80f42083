/* gpu-build: an expert weight's lane on a GPU under the default f16 budget, on the fake CUDA
 * driver (fake_cuda.c: memory and copies work, kernels run nothing) with one device of cc 9.0.
 * On a GPU quantised experts ride the grouped integer floor (the mmq family's grouped f16 tile
 * is slower there, run t2) unless MEMRA_XE_MIRROR=1; where no module serves the grouped f16
 * lane a mirror would leave them no lane at all (before, every memra_matmul_experts failed under
 * the default budget). Asserts, for Q8_0 and Q4_K experts with the budget left at its default
 * (half the fake card's free memory, far above the experts' mirrors):
 *   - after prepare the device's mirror bytes used are still 0 and the operands are the
 *     floor's (Q8_0 records / K records), with the reason in the plan;
 *   - the plan's GEMM step is gemm_experts on an integer-floor lane, not f16;
 *   - memra_matmul_experts returns OK and the ledger shows one gemm_experts hit by mmq and no
 *     decline counted by the prepare's question (memra__dispatch_taken counts nothing);
 *   - on the host device the same experts keep the f16 lane where its budget allows;
 *   - with MEMRA_XE_MIRROR=1 (Q8_0) the experts reserve their E mirrors and the call is mmq's
 *     grouped f16 tile (one hit);
 *   - with MEMRA_W16=auto (Q8_0, Q4_K) the experts hold the W16 operand (no records, no mirror), the plan's
 *     lane is "w16" and the call is the w16 module's grouped tile (one gemm_experts hit by w16);
 *   - under MEMRA_W16=auto, 16 Q8_0 experts take the W16 operand and 17 the floor's records, unless the
 *     device's switch is at 1;
 *   - under MEMRA_W16=auto, with the fake driver refusing allocations above the raw copy
 *     (MEMRA_FAKE_CUDA_ALLOC_MAX) so that no expert gets its W16 operand (Q4_K: 148 bytes per 256 values against
 *     the GGUF's 144; the K records are the GGUF's bytes), the group falls back to the floor: prepare OK, every
 *     expert on K records and none on W16, the plan "mmq K records", the call mmq's (one hit);
 *   - f16 experts are served by mmq's 16-bit grouped lane (one hit); with MEMRA_MMQ_XE_F16=0
 *     they get the plan "none", its reason naming the lane no module takes, and a failed call
 *     whose message names it.
 *   test_fake_experts FAKE_CUDA_SO */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "test.h"
#include "fake_env.h"
#include "test_blocks.h"

#define E 4
#define N 256
#define ROWS 40

typedef struct {
    uint64_t declines;
} decl_sum;

static void count_declines(const memra_ledger_row *r, void *user)
{
    if (r->reason != NULL && strcmp(r->op, "gemm_experts") == 0) ((decl_sum *)user)->declines += r->declines;
}

/* One memra_matmul_experts of ROWS rows on w (in_f K) into fresh buffers, the ledger reset just before it; with rng,
 * random ids are written first (else the buffer's). Returns its status; msg gets "ok" or the error message. */
static memra_status xe_call(memra_runtime *rt, memra_device *dev, memra_weight *w, int K, uint64_t *rng, char *msg,
                            size_t cap)
{
    memra_buffer *bx, *bi, *by;
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * K * sizeof(float), &bx));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * sizeof(int32_t), &bi));
    CHECK_OK(memra_buffer_create(dev, (size_t)ROWS * N * sizeof(float), &by));
    if (rng != NULL) {
        int32_t ids[ROWS];
        for (int r = 0; r < ROWS; r++) ids[r] = (int32_t)(test_rand_u64(rng) % E);
        CHECK_OK(memra_buffer_write(bi, 0, ids, sizeof ids));
    }
    memra_ledger_reset(rt);
    const memra_status st =
        memra_matmul_experts(dev, w, memra_buffer_ptr(bx), ROWS, memra_buffer_ptr(bi), memra_buffer_ptr(by), NULL);
    snprintf(msg, cap, "%s", st == MEMRA_STATUS_OK ? "ok" : memra_last_error());
    memra_buffer_destroy(bx);
    memra_buffer_destroy(bi);
    memra_buffer_destroy(by);
    return st;
}

/* mirror: 0 the floor, 1 the f16 mirrors (MEMRA_XE_MIRROR=1), 2 the W16 operand (MEMRA_W16=auto) */
static int one_format(memra_runtime *rt, memra_device *dev, memra_format f, int K, int mirror)
{
    uint64_t rng = test_seed();
    const size_t each = (size_t)N * memra_format_row_bytes(f, K);
    uint8_t *wb = malloc(each * E);
    CHECK(wb != NULL);
    if (f == MEMRA_FORMAT_Q8_0) {
        for (size_t b = 0; b < each * E / MEMRA_Q8_0_BYTES; b++) {
            float v[32];
            for (int i = 0; i < 32; i++) v[i] = test_rand_f32(&rng) * 0.5f;
            memra_q8_0_encode(v, wb + b * MEMRA_Q8_0_BYTES);
        }
    } else {
        test_fill_quant_blocks(&rng, f, wb, each * E);
    }
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = f, .n_experts = E, .out_f = N, .in_f = K,
                             .data = wb, .size = each * E, .name = "fake experts"};
    memra_weight *w;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    free(wb);
    const unsigned long long budget = (unsigned long long)memra_device_f16_budget_get(dev);
    memra_ledger_reset(rt); /* the declines below are this prepare's (an earlier call's, e.g. mmq declining lane
                             * gemm_w16 before w16 took it, are not) */
    CHECK_OK(memra_weight_prepare(w, dev));
    const unsigned long long used = (unsigned long long)memra_device_f16_used(dev);
    const unsigned ops = memra_weight_operands(w, dev);
    const unsigned want_op = f == MEMRA_FORMAT_Q8_0 ? MEMRA_OPERAND_Q8_0_RECORDS : MEMRA_OPERAND_K_RECORDS;
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(w, dev, &p));
    printf("%s experts on %s (budget %llu MB, the mirrors would take %llu MB): mirror bytes used %llu, "
           "operands 0x%x, plan %s: %s\n",
           memra_format_name(f), memra_device_caps_get(dev)->name, budget,
           (unsigned long long)E * N * (unsigned long long)K * 2ull >> 20, used, ops, p.lane, p.why);
    int ok = 1;
    if (mirror == 2) {
        ok &= used == 0 && ops == MEMRA_OPERAND_W16 && strcmp(p.lane, "w16") == 0 && p.n_steps == 1 &&
              p.ops[0] == MEMRA_OP_gemm_experts && p.modules[0] != NULL && strcmp(p.modules[0], "w16") == 0;
    } else if (mirror) {
        ok &= used == (uint64_t)E * N * (uint64_t)K * 2u;
        ok &= (ops & MEMRA_OPERAND_F16_MIRROR) != 0 && strstr(p.lane, "f16") != NULL;
    } else {
        ok &= used == 0;
        ok &= (ops & want_op) != 0 && (ops & MEMRA_OPERAND_F16_MIRROR) == 0;
        ok &= strstr(p.lane, "f16") == NULL && strstr(p.why, "ride the grouped integer floor") != NULL;
    }

    decl_sum before = {0};
    memra_ledger_visit(rt, count_declines, &before);
    char msg[1024];
    const memra_status st = xe_call(rt, dev, w, K, &rng, msg, sizeof msg);
    const char *by_mod = mirror == 2 ? "w16" : "mmq";
    const unsigned long long hits = (unsigned long long)memra_ledger_hits(dev, MEMRA_OP_gemm_experts, by_mod);
    printf("  memra_matmul_experts: status %d (%s), gemm_experts hits by %s %llu, declines counted by the prepare %llu\n",
           (int)st, msg, by_mod, hits, (unsigned long long)before.declines);
    ok &= st == MEMRA_STATUS_OK && hits == 1 && before.declines == 0;
    if (mirror) {
        memra_weight_destroy(w);
        printf("  %s\n", ok ? "ok" : "FAIL");
        return ok;
    }

    /* the host serves the grouped f16 lane: its mirror policy is unchanged */
    memra_device *host = memra_device_host(rt);
    CHECK_OK(memra_device_f16_budget_set(host, 1024));
    CHECK_OK(memra_weight_prepare(w, host));
    memra_weight_plan hp = {.struct_size = sizeof hp};
    CHECK_OK(memra_weight_plan_get(w, host, &hp));
    printf("  on the host (budget 1024 MB): mirror bytes used %llu, plan %s\n",
           (unsigned long long)memra_device_f16_used(host), hp.lane);
    ok &= memra_device_f16_used(host) == (uint64_t)E * N * (uint64_t)K * 2u && strstr(hp.lane, "f16") != NULL;
    memra_weight_destroy(w);
    printf("  %s\n", ok ? "ok" : "FAIL");
    return ok;
}

/* The prepared plan's lane of Q8_0 experts (n of them, 64 x 256) on dev */
static int xe_lane_of(memra_runtime *rt, memra_device *dev, int32_t n, char *lane, size_t cap)
{
    uint64_t rng = test_seed();
    const size_t each = (size_t)64 * memra_format_row_bytes(MEMRA_FORMAT_Q8_0, 256);
    uint8_t *wb = malloc(each * (size_t)n);
    CHECK(wb != NULL);
    test_fill_quant_blocks(&rng, MEMRA_FORMAT_Q8_0, wb, each * (size_t)n);
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_Q8_0, .n_experts = n, .out_f = 64,
                             .in_f = 256, .data = wb, .size = each * (size_t)n, .name = "fake experts count"};
    memra_weight *w;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    free(wb);
    CHECK_OK(memra_weight_prepare(w, dev));
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(w, dev, &p));
    snprintf(lane, cap, "%s", p.lane);
    const unsigned ops = memra_weight_operands(w, dev);
    memra_weight_destroy(w);
    return (int)ops;
}

/* MEMRA_W16=auto: expert weights take the W16 operand whatever their count (16, 17, 128 experts); the device's
 * switch at 0 keeps them on the grouped floor */
static int w16_expert_count(memra_runtime *rt, memra_device *dev)
{
    char l16[64], l17[64], l128[64], l17off[64];
    const int o16 = xe_lane_of(rt, dev, 16, l16, sizeof l16), o17 = xe_lane_of(rt, dev, 17, l17, sizeof l17),
              o128 = xe_lane_of(rt, dev, 128, l128, sizeof l128);
    CHECK_OK(memra_device_w16_set(dev, 0));
    const int o17off = xe_lane_of(rt, dev, 17, l17off, sizeof l17off);
    CHECK_OK(memra_device_w16_set(dev, -1));
    const int ok = strcmp(l16, "w16") == 0 && o16 == (int)MEMRA_OPERAND_W16 && strcmp(l17, "w16") == 0 &&
                   o17 == (int)MEMRA_OPERAND_W16 && strcmp(l128, "w16") == 0 && o128 == (int)MEMRA_OPERAND_W16 &&
                   strcmp(l17off, "mmq records") == 0 && (o17off & (int)MEMRA_OPERAND_Q8_0_RECORDS) != 0;
    printf("q8_0 experts under MEMRA_W16=auto: 16 experts plan %s (operands 0x%x), 17 plan %s (0x%x), 128 plan %s "
           "(0x%x), 17 with the switch at 0 plan %s (0x%x)  %s\n",
           l16, (unsigned)o16, l17, (unsigned)o17, l128, (unsigned)o128, l17off, (unsigned)o17off, ok ? "ok" : "FAIL");
    return ok;
}

/* MEMRA_W16=auto, every W16 upload refused: the group's all-or-none fall-back to the floor's K records */
static int w16_fallback(memra_runtime *rt, memra_device *dev)
{
    uint64_t rng = test_seed();
    const memra_format f = MEMRA_FORMAT_Q4_K;
    const int K = 512;
    const size_t each = (size_t)N * memra_format_row_bytes(f, K), w16 = (size_t)memra_w16_bytes(f, N, K);
    uint8_t *wb = malloc(each * E);
    CHECK(wb != NULL && w16 > each);
    test_fill_quant_blocks(&rng, f, wb, each * E);
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = f, .n_experts = E, .out_f = N, .in_f = K,
                             .data = wb, .size = each * E, .name = "fake experts w16 refused"};
    memra_weight *w;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    free(wb);
    char lim[32];
    snprintf(lim, sizeof lim, "%zu", each + (w16 - each) / 2); /* the raw copy fits, the W16 operand does not */
    setenv("MEMRA_FAKE_CUDA_ALLOC_MAX", lim, 1);
    const memra_status sp = memra_weight_prepare(w, dev);
    unsetenv("MEMRA_FAKE_CUDA_ALLOC_MAX");
    const unsigned ops = memra_weight_operands(w, dev);
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(w, dev, &p));
    char msg[1024];
    const memra_status sc = xe_call(rt, dev, w, K, &rng, msg, sizeof msg);
    const unsigned long long hits = (unsigned long long)memra_ledger_hits(dev, MEMRA_OP_gemm_experts, "mmq");
    printf("q4_k experts, W16 uploads refused (allocations over %s bytes): prepare %d, operands 0x%x, plan %s; call %d "
           "(%s), mmq hits %llu\n", lim, (int)sp, ops, p.lane, (int)sc, msg, hits);
    const int ok = sp == MEMRA_STATUS_OK && ops == MEMRA_OPERAND_K_RECORDS && strcmp(p.lane, "mmq K records") == 0 &&
                   sc == MEMRA_STATUS_OK && hits == 1;
    memra_weight_destroy(w);
    printf("  %s\n", ok ? "ok" : "FAIL");
    return ok;
}

/* f16 experts on the GPU: mmq's 16-bit grouped lane serves them (served 1: the plan names mmq,
 * the call returns OK with one mmq hit); with MEMRA_MMQ_XE_F16=0 (served 0) no module takes the
 * grouped f16 lane, so the plan says "none" with that reason (not merely the routing's first
 * module), and the call fails with a status and a message naming the lane, launching nothing. */
static int f16_experts(memra_runtime *rt, memra_device *dev, int served)
{
    uint16_t *wb = malloc((size_t)E * N * 64 * 2);
    CHECK(wb != NULL);
    uint64_t rng = test_seed();
    for (size_t i = 0; i < (size_t)E * N * 64; i++) wb[i] = memra_f16_from_f32(test_rand_f32(&rng));
    memra_experts_desc ed = {.struct_size = sizeof ed, .format = MEMRA_FORMAT_F16, .n_experts = E, .out_f = N,
                             .in_f = 64, .data = wb, .size = (size_t)E * N * 64 * 2, .name = "fake f16 experts"};
    memra_weight *w;
    CHECK_OK(memra_weight_create_experts(rt, &ed, &w));
    free(wb);
    memra_weight_plan p = {.struct_size = sizeof p};
    CHECK_OK(memra_weight_plan_get(w, dev, &p));
    CHECK_OK(memra_weight_prepare(w, dev));
    char msg[1024];
    const memra_status st = xe_call(rt, dev, w, 64, NULL, msg, sizeof msg);
    const unsigned long long hits = (unsigned long long)memra_ledger_hits(dev, MEMRA_OP_gemm_experts, "mmq");
    printf("f16 experts on %s (MEMRA_MMQ_XE_F16 %s): plan %s: %s\n  memra_matmul_experts: status %d: %s, mmq hits %llu\n",
           memra_device_caps_get(dev)->name, served ? "default" : "0", p.lane, p.why, (int)st, msg, hits);
    const int ok = served ? strcmp(p.lane, "none") != 0 && st == MEMRA_STATUS_OK && hits == 1
                          : strcmp(p.lane, "none") == 0 &&
                                strstr(p.why, "no module takes gemm_experts on gemm_f16") != NULL &&
                                st != MEMRA_STATUS_OK && strstr(msg, "gemm_experts") != NULL &&
                                strstr(msg, "MEMRA_MMQ_XE_F16") != NULL;
    memra_weight_destroy(w);
    printf("  %s\n", ok ? "ok" : "FAIL");
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_fake_experts FAKE_CUDA_SO\n");
        return 2;
    }
    fake_env_set(argv[1], "90");
    /* the defaults, then MEMRA_XE_MIRROR=1, then MEMRA_MMQ_XE_F16=0, then MEMRA_W16=auto, each its own runtime */
    static const char *const sets[4][2] = {
        {NULL, NULL}, {"MEMRA_XE_MIRROR=1", NULL}, {"MEMRA_MMQ_XE_F16=0", NULL}, {"MEMRA_W16=auto", NULL}};
    int ok = 1;
    for (int r = 0; r < 4; r++) {
        memra_options o = {.struct_size = sizeof o, .settings = sets[r]};
        memra_runtime *rt;
        CHECK_OK(memra_open(&o, &rt));
        memra_device *dev = NULL;
        for (int i = 0; i < memra_device_count(rt) && dev == NULL; i++)
            if (memra_device_caps_get(memra_device_get(rt, i))->cc == 90) dev = memra_device_get(rt, i);
        if (dev == NULL) {
            printf("driver: %s\n", memra_driver_status(rt));
            memra_close(rt);
            TEST_SKIP("no fake cc 9.0 device");
        }
        const char *names[4];
        if (memra_routing_get(dev, MEMRA_OP_gemm_experts, names, 4) < 1 || strcmp(names[0], "mmq") != 0) {
            memra_close(rt);
            TEST_SKIP("gemm_experts on the fake cc 9.0 device is not mmq's (no sm_90a images?)");
        }
        /* the floor's runs: no W16 operand whatever MEMRA_W16 says (run 3 is MEMRA_W16=auto's) */
        if (r < 3) CHECK_OK(memra_device_w16_set(dev, 0));
        if (r == 0) {
            ok &= one_format(rt, dev, MEMRA_FORMAT_Q8_0, 512, 0);
            ok &= one_format(rt, dev, MEMRA_FORMAT_Q4_K, 512, 0);
            ok &= f16_experts(rt, dev, 1);
        } else if (r == 1) {
            ok &= one_format(rt, dev, MEMRA_FORMAT_Q8_0, 512, 1);
        } else if (r == 3) {
            ok &= one_format(rt, dev, MEMRA_FORMAT_Q8_0, 512, 2);
            ok &= one_format(rt, dev, MEMRA_FORMAT_Q4_K, 512, 2);
            ok &= w16_expert_count(rt, dev);
            ok &= w16_fallback(rt, dev);
        } else {
            ok &= f16_experts(rt, dev, 0);
        }
        memra_close(rt);
    }
    return ok ? 0 : 1;
}
