/* memra bench accprobe: the accumulator instrument, timed.
 *
 *   memra bench accprobe [m] [reps] [27b|1p7b] [--dist wide|mid] [--device N|host] [--module M] [--json FILE]
 *
 * One MMQ tile, one free variable: arm S32 accumulates int8 products in s32,
 * arm F32 reads the very same bytes as e4m3 and accumulates in f32 (and on
 * sm_120a arm MX uses kind::mxf8f6f4 at unit scales). Inputs are bytes that
 * are finite read either way: int8 magnitudes <= 126, so no byte is an e4m3
 * NaN code (magnitude 0x7F). `wide` draws every such magnitude (e4m3
 * denormals included); `mid` only codes with e4m3 exponent fields 6..9 (normal,
 * mid-range), to show whether a ratio belongs to the instruction or the data.
 * Arms run interleaved inside each repetition (rotating start), medians per
 * shape, ratio F32/S32 and its delta in percentage points, TFLOP/s of each arm,
 * the geometric mean ratio at the end. Time only: no output is a numeric claim. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/memra.h"
#include "tools/tool.h"
#include "tools/tool_fmt.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

static const int64_t k_27b[][2] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
static const int64_t k_1p7b[][2] = {{2048, 2048}, {2048, 1024}, {2048, 6144}, {6144, 2048}};
static const char *const k_arm[3] = {"s32", "f32", "mx"};

static uint8_t probe_byte(tool_rng *r, int mid)
{
    uint8_t mag;
    if (mid) mag = (uint8_t)((6 + tool_rng_u64(r) % 4) << 3 | (tool_rng_u64(r) & 7)); /* exponent 6..9 */
    else do mag = (uint8_t)(tool_rng_u64(r) % 127); while (mag == 0);                   /* 1..126 */
    return (uint8_t)((tool_rng_u64(r) & 1) ? (uint8_t)(-(int)mag) : mag); /* two's complement sign */
}

static const char k_usage[] =
    "usage: memra bench accprobe [m] [reps] [27b|1p7b] [--m M] [--reps R] [--sheet 27b|1p7b]\n"
    "                            [--dist wide|mid] [--device N|host] [--module NAME] [--json FILE|-]\n"
    "                            [--seed S]\n"
    "  One MMQ tile, one free variable: s32 against f32 accumulation of the same bytes (and\n"
    "  kind::mxf8f6f4 on sm_120a), interleaved, medians per shape, the ratio's geometric mean.\n"
    "  Time only. Defaults: device 0, the 27b sheet (1p7b on the host), m 512 and 20 reps on a\n"
    "  GPU, m 16 and 3 reps on the host. --json writes the receipt ('-': stdout, the table\n"
    "  then goes to stderr).\n";
static const struct option k_opts[] = {
    {"m", required_argument, NULL, 'm'},      {"reps", required_argument, NULL, 'r'},
    {"sheet", required_argument, NULL, 'S'},  {"dist", required_argument, NULL, 'D'},
    {"device", required_argument, NULL, 'd'}, {"module", required_argument, NULL, 'M'},
    {"json", required_argument, NULL, 'j'},   {"seed", required_argument, NULL, 's'},
    {"help", no_argument, NULL, 'h'}, {"quiet", no_argument, NULL, TOOL_OPT_QUIET}, {0, 0, 0, 0}};
static const tool_cmd k_cmd = {"memra bench accprobe", k_usage, k_opts};

static int bad_sheet(const char *s)
{
    if (strcmp(s, "27b") == 0 || strcmp(s, "1p7b") == 0) return 0;
    fprintf(stderr, "memra bench accprobe: --sheet wants 27b or 1p7b, not '%s'\n", s);
    return 2;
}

int memra_tool_bench_accprobe(int argc, char **argv)
{
    int64_t m = 0, reps = 0, dev_sel = -1;
    const char *sheet = "27b", *json = NULL, *module = NULL;
    int mid = 0, o, rc = 0;
    uint64_t seed = tool_clock_seed();
    while ((o = tool_opt_next(&k_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        switch (o) {
        case TOOL_OPT_EXIT: return rc;
        case 'm': rc = tool_opt_i64(&k_cmd, "--m", optarg, 1, 1 << 20, &m); break;
        case 'r': rc = tool_opt_i64(&k_cmd, "--reps", optarg, 1, 100000, &reps); break;
        case 'S':
            rc = bad_sheet(optarg);
            sheet = optarg;
            break;
        case 'D':
            if (strcmp(optarg, "mid") == 0) mid = 1;
            else if (strcmp(optarg, "wide") == 0) mid = 0;
            else {
                fprintf(stderr, "memra bench accprobe: --dist wants wide or mid, not '%s'\n", optarg);
                rc = 2;
            }
            break;
        case 'd': rc = tool_opt_device(&k_cmd, optarg, 0, &dev_sel); break;
        case 'M': module = optarg; break;
        case 'j': json = optarg; break;
        case 's': rc = tool_opt_u64(&k_cmd, "--seed", optarg, &seed); break;
        default: return 2;
        }
        if (rc != 0) return rc;
    }
    /* positional: [m] [reps] in that order, and a sheet anywhere */
    for (int i = optind, npos = 0; i < argc; i++) {
        if (strcmp(argv[i], "27b") == 0 || strcmp(argv[i], "1p7b") == 0) sheet = argv[i];
        else if (npos == 0 && ++npos) rc = tool_opt_i64(&k_cmd, "m", argv[i], 1, 1 << 20, &m);
        else if (npos == 1 && ++npos) rc = tool_opt_i64(&k_cmd, "reps", argv[i], 1, 100000, &reps);
        else rc = tool_opt_unexpected(&k_cmd, argv[i]);
        if (rc != 0) return rc;
    }
    FILE *jf = NULL;
    if (json != NULL && tool_receipt_open(&k_cmd, json, &jf) != 0) return 2;
    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
        tool_receipt_close(&k_cmd, json, jf);
        return 1;
    }
    if (dev_sel == -2) dev_sel = memra_device_count(rt) - 1; /* the host device is listed last */
    memra_device *dev = memra_device_get(rt, dev_sel < 0 ? 0 : (int)dev_sel);
    if (dev == NULL) {
        fprintf(stderr, "memra bench accprobe: no device %lld (there are %d)\n", (long long)dev_sel,
                memra_device_count(rt));
        rc = 2;
        goto done;
    }
    const memra_device_caps *caps = memra_device_caps_get(dev);
    int gpu = caps->arch != MEMRA_ARCH_HOST;
    if (module == NULL) {
        const char *names[1];
        if (memra_routing_get(dev, MEMRA_OP_accprobe, names, 1) < 1) {
            fprintf(stderr, "memra bench accprobe: no module provides accprobe on %s\n", caps->name);
            rc = 1;
            goto done;
        }
        module = names[0];
    }
    if (!memra_module_provides(dev, module, MEMRA_OP_accprobe)) {
        fprintf(stderr, "memra bench accprobe: module '%s' does not provide accprobe on %s\n", module, caps->name);
        rc = 2;
        goto done;
    }
    if (m == 0) m = gpu ? 512 : 16;
    if (reps == 0) reps = gpu ? 20 : 3;
    const int64_t(*sh)[2] = strcmp(sheet, "27b") == 0 ? k_27b : k_1p7b;
    size_t nsh = strcmp(sheet, "27b") == 0 ? 6 : 4;
    if (!gpu && strcmp(sheet, "27b") == 0) {
        sh = k_1p7b; /* the host finishes the small sheet in seconds */
        nsh = 4;
        sheet = "1p7b";
    }
    tool_rng rng;
    tool_rng_seed(&rng, seed);
    printf("memra bench accprobe: %s (%s), module %s, sheet %s, m=%lld, reps %lld, dist %s, seed %llu\n", caps->name,
           caps->profile, module, sheet, (long long)m, (long long)reps, mid ? "mid" : "wide",
           (unsigned long long)seed);
    printf("%-14s %10s %8s %10s %8s %8s %9s %15s %15s\n", "shape", "f32acc ms", "spread", "s32acc ms", "spread",
           "ratio", "delta pp", "f32 rate", "s32 rate");
    if (jf)
        fprintf(jf, "{\"format\":\"memra-bench-accprobe\",\"version\":1,\"memra\":\"%s\",\"device\":\"%s\",\"cc\":%d,"
                    "\"driver_version\":%d,\"module\":\"%s\",\"sheet\":\"%s\",\"m\":%lld,\"reps\":%lld,\"dist\":\"%s\","
                    "\"seed\":%llu,\"shapes\":[",
                memra_version(), caps->name, caps->cc, memra_driver_version(rt), module, sheet, (long long)m,
                (long long)reps, mid ? "mid" : "wide", (unsigned long long)seed);
    memra_timer *timer = NULL;
    memra_status st = memra_timer_create(dev, &timer);
    rc = st == MEMRA_STATUS_OK ? 0 : 1;
    int have_mx = caps->arch == MEMRA_ARCH_SM120;
    int narms = have_mx ? 3 : 2;
    double logsum = 0.0;
    uint64_t hits0 = memra_ledger_hits(dev, MEMRA_OP_accprobe, module);
    for (size_t s = 0; s < nsh && rc == 0; s++) {
        int64_t k = sh[s][0], n = sh[s][1];
        uint8_t *w = tool_alloc((size_t)(n * k), 1), *x = tool_alloc((size_t)(m * k), 1);
        double *t[3] = {tool_alloc((size_t)reps, sizeof(double)), tool_alloc((size_t)reps, sizeof(double)),
                        tool_alloc((size_t)reps, sizeof(double))};
        memra_buffer *bw = NULL, *bx = NULL, *by = NULL;
        if (!w || !x || !t[0] || !t[1] || !t[2]) rc = 1;
        for (int64_t i = 0; rc == 0 && i < n * k; i++) w[i] = probe_byte(&rng, mid);
        for (int64_t i = 0; rc == 0 && i < m * k; i++) x[i] = probe_byte(&rng, mid);
        if (rc == 0) st = tool_upload(dev, w, (size_t)(n * k), &bw);
        if (rc == 0 && st == MEMRA_STATUS_OK) st = tool_upload(dev, x, (size_t)(m * k), &bx);
        if (rc == 0 && st == MEMRA_STATUS_OK) st = tool_upload(dev, NULL, (size_t)(m * n) * sizeof(float), &by);
        if (st != MEMRA_STATUS_OK) rc = 1;
        for (int64_t r = -2; rc == 0 && r < reps; r++) { /* two warm-up rounds */
            for (int i = 0; i < narms && rc == 0; i++) {
                int arm = (int)(((r < 0 ? 0 : r) + i) % narms);
                memra_op_args a = {.struct_size = sizeof a, .arm = (memra_accprobe_arm)arm};
                a.gemm = (memra_gemm_args){.struct_size = sizeof a.gemm, .m = (int32_t)m, .n = (int32_t)n,
                                           .k = (int32_t)k, .w = memra_buffer_ptr(bw), .x = memra_buffer_ptr(bx),
                                           .y = memra_buffer_ptr(by), .ldy = n, .alpha = 1.0f};
                double ms = 0;
                st = memra_timer_start(timer, NULL);
                if (st == MEMRA_STATUS_OK) st = memra_module_call(dev, module, MEMRA_OP_accprobe, &a);
                if (st == MEMRA_STATUS_OK) st = memra_timer_stop(timer, NULL);
                if (st == MEMRA_STATUS_OK) st = memra_timer_elapsed_ms(timer, &ms);
                if (st != MEMRA_STATUS_OK) {
                    fprintf(stderr, "memra bench accprobe: arm %s at %lld->%lld: %s: %s%s%s\n", k_arm[arm],
                            (long long)k, (long long)n, memra_status_str(st), memra_last_error(),
                            a.decline_reason ? " " : "", a.decline_reason ? a.decline_reason : "");
                    rc = 1;
                } else if (r >= 0) {
                    t[arm][r] = ms;
                }
            }
        }
        if (rc == 0) {
            double flops = 2.0 * (double)m * (double)n * (double)k;
            double ms_s = tool_median(t[0], (size_t)reps), ms_f = tool_median(t[1], (size_t)reps);
            double ratio = ms_f / ms_s;
            logsum += log(ratio);
            char name[32];
            snprintf(name, sizeof name, "%lld->%lld", (long long)k, (long long)n);
            char sf[16], ss[16], rf[32], rs[32];
            printf("%-14s %10.4f %8s %10.4f %8s %8.3f %+9.1f %15s %15s", name, ms_f,
                   tool_spread(t[1], (size_t)reps, sf, sizeof sf), ms_s, tool_spread(t[0], (size_t)reps, ss, sizeof ss),
                   ratio, (ratio - 1.0) * 100.0, tool_rate(flops / (ms_f * 1e-3), "FLOP/s", rf, sizeof rf),
                   tool_rate(flops / (ms_s * 1e-3), "FLOP/s", rs, sizeof rs));
            double ms_x = have_mx ? tool_median(t[2], (size_t)reps) : 0;
            if (have_mx) printf("  mx %.4f ms (%.3fx s32)", ms_x, ms_x / ms_s);
            printf("\n");
            if (jf) {
                fprintf(jf, "%s{\"in_f\":%lld,\"out_f\":%lld,\"flops\":%.0f,\"f32_ms\":%.6g,\"s32_ms\":%.6g,"
                            "\"ratio\":%.6g",
                        s ? "," : "", (long long)k, (long long)n, flops, ms_f, ms_s, ratio);
                if (have_mx) fprintf(jf, ",\"mx_ms\":%.6g", ms_x);
                for (int arm = 0; arm < narms; arm++) {
                    fprintf(jf, ",\"%s_times_ms\":[", k_arm[arm]);
                    for (int64_t r = 0; r < reps; r++) fprintf(jf, "%s%.6g", r ? "," : "", t[arm][r]);
                    fprintf(jf, "]");
                }
                fprintf(jf, "}");
            }
        }
        memra_buffer_destroy(bw);
        memra_buffer_destroy(bx);
        memra_buffer_destroy(by);
        free(w);
        free(x);
        for (int i = 0; i < 3; i++) free(t[i]);
    }
    uint64_t hits = memra_ledger_hits(dev, MEMRA_OP_accprobe, module) - hits0;
    if (rc == 0) {
        double g = exp(logsum / (double)nsh);
        printf("geometric mean f32acc/s32acc: %.3f (%+.1f pp); ledger: %s/accprobe served %llu calls\n", g,
               (g - 1.0) * 100.0, module, (unsigned long long)hits);
        if (hits == 0) {
            printf("INVALID: the ledger shows no accprobe hit\n");
            rc = 1;
        }
    }
    if (jf) {
        fprintf(jf, "],\"geomean_ratio\":%.6g,\"ledger_hits\":%llu,\"complete\":%s}\n",
                rc == 0 ? exp(logsum / (double)nsh) : 0.0, (unsigned long long)hits, rc == 0 ? "true" : "false");
    }
    memra_timer_destroy(timer);
done:
    memra_close(rt);
    const int wrc = tool_receipt_close(&k_cmd, json, jf);
    return rc ? rc : wrc;
}
