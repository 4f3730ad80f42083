/* memra tune: race every admissible module and variant per (device, op, shape
 * class) by the bench protocol (memra_tune_race: each arm checked against the
 * host first, interleaved rounds, medians, ledger hits per arm) and write the
 * winners to the tuning file that routing reads at memra_open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"
#include "tools/tool_fmt.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

typedef struct shape {
    int32_t out_f, in_f; /* n, k */
} shape;

/* The seed sheets (as memra bench); on the host device every dimension is
 * divided by 16 (all stay multiples of 32), so a run takes seconds. */
static const shape k_27b[] = {{5120, 12288}, {5120, 1024}, {6144, 5120}, {5120, 17408}, {17408, 5120}, {5120, 5120}};
static const shape k_1p7b[] = {{2048, 2048}, {2048, 1024}, {2048, 6144}, {6144, 2048}};

static const char k_help[] =
    "usage: memra tune [--device N|host] [--sheet 27b|1p7b] [--m M [M...]] [--op OP] [--reps R]\n"
    "                  [--json FILE|-] [--dry-run] [--quiet]\n"
    "       memra tune --clear\n"
    "  Races, for each GEMM op and each shape of the sheet at each m, every module admitted on\n"
    "  the device and every variant it lists: each arm's first result is checked against the\n"
    "  host module within the op's band before any time counts; then R rounds of one call per\n"
    "  arm, rotating which goes first, each timed alone; medians. The winner of each shape\n"
    "  class (op, n, k, m rounded up to a power of two) goes into the tuning file\n"
    "  (MEMRA_TUNE_FILE, else <cache root>/tune/tuning.memra), which memra_open reads and\n"
    "  routing consults before the scores (see 'memra info'). An op with one arm is skipped.\n"
    "  --dry-run races and prints but writes nothing. --clear removes every entry and the file.\n"
    "  Times are median ms with their spread (half the interquartile range); a progress line\n"
    "  goes to stderr (--quiet: none). --json FILE writes the receipt (format memra-tune).\n"
    "  Defaults: on a GPU 27b, m=512, reps 20; on the host 1p7b with every dimension / 16,\n"
    "  m=16, reps 3.\n";

static const struct option k_opts[] = {
    {"device", required_argument, NULL, 'd'}, {"sheet", required_argument, NULL, 'S'},
    {"m", required_argument, NULL, 'm'},      {"op", required_argument, NULL, 'o'},
    {"reps", required_argument, NULL, 'r'},   {"json", required_argument, NULL, 'j'},
    {"clear", no_argument, NULL, 'c'},        {"dry-run", no_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'}, {"quiet", no_argument, NULL, TOOL_OPT_QUIET}, {0, 0, 0, 0}};
static const tool_cmd k_cmd = {"memra tune", k_help, k_opts};

static int is_gemm(memra_op op)
{
    return op == MEMRA_OP_gemm_f16 || op == MEMRA_OP_gemm_bf16 || op == MEMRA_OP_gemm_fp8 ||
           op == MEMRA_OP_gemm_fp8_blk || op == MEMRA_OP_gemm_q8_0 || op == MEMRA_OP_gemm_q8_0r;
}

int memra_tool_tune(int argc, char **argv)
{
    int64_t dev_sel = -3, reps = 0, ms[16];
    int n_m = 0, clear = 0, dry = 0, o, rc = 0;
    const char *sheet = NULL, *json = NULL;
    memra_op only = MEMRA_OP_COUNT_;
    while ((o = tool_opt_next(&k_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        if (o == TOOL_OPT_EXIT) return rc;
        switch (o) {
        case 'd': rc = tool_opt_device(&k_cmd, optarg, 0, &dev_sel); break;
        case 'S':
            if (strcmp(optarg, "27b") != 0 && strcmp(optarg, "1p7b") != 0) {
                fprintf(stderr, "memra tune: --sheet wants 27b or 1p7b, not '%s'\n", optarg);
                return 2;
            }
            sheet = optarg;
            break;
        case 'm':
            if (n_m == 16) {
                fprintf(stderr, "memra tune: at most 16 values of --m\n");
                return 2;
            }
            rc = tool_opt_i64(&k_cmd, "--m", optarg, 1, 1 << 20, &ms[n_m]);
            if (rc == 0) n_m++;
            break;
        case 'o':
            only = memra_op_from_name(optarg);
            if (only == MEMRA_OP_COUNT_ || !is_gemm(only)) {
                fprintf(stderr, "memra tune: --op wants a GEMM op (gemm_f16, gemm_bf16, gemm_fp8, gemm_fp8_blk, "
                                "gemm_q8_0, gemm_q8_0r), not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'r': rc = tool_opt_i64(&k_cmd, "--reps", optarg, 1, 10000, &reps); break;
        case 'j': json = optarg; break;
        case 'c': clear = 1; break;
        case 'n': dry = 1; break;
        default: return 2;
        }
        if (rc != 0) return rc;
    }
    /* `--m 512 4096`: integers after the options are more m values. */
    for (int i = optind; i < argc; i++) {
        if (n_m == 16) return tool_opt_unexpected(&k_cmd, argv[i]);
        char *end = NULL;
        long v = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0' || v < 1 || v > (1 << 20)) return tool_opt_unexpected(&k_cmd, argv[i]);
        ms[n_m++] = v;
    }
    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) return 1;
    if (clear) {
        memra_status st = memra_tune_clear(rt);
        if (st != MEMRA_STATUS_OK) fprintf(stderr, "memra tune: --clear: %s\n", memra_last_error());
        else printf("memra tune: cleared %s\n", memra_tune_file(rt));
        memra_close(rt);
        return st == MEMRA_STATUS_OK ? 0 : 1;
    }
    memra_device *dev = NULL;
    if (dev_sel == -2) dev = memra_device_host(rt);
    else if (dev_sel >= 0) {
        dev = memra_device_get(rt, (int)dev_sel);
        if (dev == NULL || dev == memra_device_host(rt)) {
            fprintf(stderr, "memra tune: no CUDA device %lld (see 'memra info')\n", (long long)dev_sel);
            memra_close(rt);
            return 2;
        }
    } else {
        dev = memra_device_count(rt) > 1 ? memra_device_get(rt, 0) : memra_device_host(rt);
    }
    const memra_device_caps *caps = memra_device_caps_get(dev);
    const int gpu = caps->arch != MEMRA_ARCH_HOST;
    if (sheet == NULL) sheet = gpu ? "27b" : "1p7b";
    const shape *sh = strcmp(sheet, "27b") == 0 ? k_27b : k_1p7b;
    const int nsh = strcmp(sheet, "27b") == 0 ? 6 : 4, div = gpu ? 1 : 16;
    if (n_m == 0) ms[n_m++] = gpu ? 512 : 16;
    if (reps == 0) reps = gpu ? 20 : 3;
    FILE *jf = NULL;
    if (json != NULL && tool_receipt_open(&k_cmd, json, &jf) != 0) {
        memra_close(rt);
        return 2;
    }
    printf("memra tune: %s (%s), sheet %s%s, reps %lld\n", caps->name, caps->profile, sheet,
           div > 1 ? " (every dimension / 16 on the host)" : "", (long long)reps);
    if (jf) {
        /* version 2 adds format/version, median_ms and q1_ms/q3_ms per arm (median_us kept) */
        fprintf(jf, "{\"format\":\"memra-tune\",\"version\":2,\"memra_tune\":1,\"memra\":");
        tool_json_str(jf, memra_version());
        fprintf(jf, ",\"device\":");
        tool_json_str(jf, caps->name);
        fprintf(jf, ",\"profile\":");
        tool_json_str(jf, caps->profile);
        fprintf(jf, ",\"sheet\":\"%s\",\"divisor\":%d,\"reps\":%lld,\"results\":[", sheet, div, (long long)reps);
    }
    int failures = 0, recorded = 0, first = 1;
    memra_tune_result *res = malloc(sizeof *res);
    if (res == NULL) {
        memra_close(rt);
        return 1;
    }
    size_t nops = 0;
    for (int op = 0; op < MEMRA_OP_COUNT_; op++)
        if (is_gemm((memra_op)op) && (only == MEMRA_OP_COUNT_ || op == (int)only) &&
            memra_routing_get(dev, (memra_op)op, NULL, 0) > 0)
            nops++;
    tool_progress pg;
    tool_progress_begin(&pg, "memra tune", nops * (size_t)nsh * (size_t)n_m);
    for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
        if (!is_gemm((memra_op)op) || (only != MEMRA_OP_COUNT_ && op != (int)only)) continue;
        if (memra_routing_get(dev, (memra_op)op, NULL, 0) == 0) continue;
        {
            /* An op with one arm (one module, no variants) has nothing to race: skipped before
             * any input is made (on a GPU the 27b sheet's host reference is the costly part). */
            const char *lanes[16];
            const int nl = memra_routing_get(dev, (memra_op)op, lanes, 16);
            int arms = 0;
            for (int l = 0; l < nl && l < 16; l++) {
                const int nv = memra_module_variants(dev, lanes[l], (memra_op)op, NULL, NULL, 0);
                arms += 1 + (nv > 0 ? nv : 0);
            }
            if (arms < 2) {
                for (int i = 0; i < nsh * n_m; i++) pg.done++; /* its steps are not run */
                printf("\n%s: one arm (%s, no variants): nothing to race\n", memra_op_name((memra_op)op),
                       nl > 0 ? lanes[0] : "?");
                continue;
            }
        }
        for (int si = 0; si < nsh; si++)
            for (int mi = 0; mi < n_m; mi++) {
                const int32_t n = sh[si].out_f / div, k = sh[si].in_f / div, m = (int32_t)ms[mi];
                memset(res, 0, sizeof *res);
                res->struct_size = sizeof *res;
                char what[96];
                snprintf(what, sizeof what, "%s m=%d n=%d k=%d", memra_op_name((memra_op)op), m, n, k);
                tool_progress_step(&pg, what);
                memra_status st = memra_tune_race(dev, (memra_op)op, m, n, k, (int)reps, res);
                tool_progress_clear(&pg);
                if (st != MEMRA_STATUS_OK) {
                    fprintf(stderr, "memra tune: %s m=%d n=%d k=%d: %s: %s\n", memra_op_name((memra_op)op), m, n, k,
                            memra_status_str(st), memra_last_error());
                    failures++;
                    continue;
                }
                printf("\n%s m=%d n=%d k=%d (m class %d): %d arm%s (median ms, spread: half the interquartile range)\n",
                       memra_op_name((memra_op)op), m, n, k, memra_tune_m_class(m), res->n_arms,
                       res->n_arms == 1 ? "" : "s");
                for (int a = 0; a < res->n_arms; a++) {
                    const memra_tune_arm *ar = &res->arms[a];
                    char name[96];
                    snprintf(name, sizeof name, "%s%s%s", ar->module, ar->variant[0] ? "." : "", ar->variant);
                    char spread[16] = "", rate[32] = "";
                    if (ar->median_us > 0.0) {
                        snprintf(spread, sizeof spread, "+-%.1f%%", 50.0 * (res->q3_us[a] - res->q1_us[a]) / ar->median_us);
                        tool_rate(2.0 * (double)m * (double)n * (double)k / (ar->median_us * 1e-6), "FLOP/s", rate,
                                  sizeof rate);
                    }
                    printf("  %c %-24s %10.4f ms %8s %15s  hits %-6llu %s\n", a == res->winner ? '*' : ' ', name,
                           ar->median_us * 1e-3, spread, rate, (unsigned long long)ar->hits, ar->verdict);
                }
                if (jf) {
                    fprintf(jf, "%s{\"op\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"m_class\":%d,\"winner\":%d,\"baseline\":%d,"
                                "\"arms\":[",
                            first ? "" : ",", memra_op_name((memra_op)op), m, n, k, memra_tune_m_class(m),
                            res->winner, res->baseline);
                    first = 0;
                    for (int a = 0; a < res->n_arms; a++) {
                        const memra_tune_arm *ar = &res->arms[a];
                        fprintf(jf, "%s{\"module\":\"%s\",\"variant\":\"%s\",\"median_us\":%.3f,\"median_ms\":%.6g,"
                                    "\"q1_ms\":%.6g,\"q3_ms\":%.6g,\"hits\":%llu,\"ok\":%s,\"verdict\":",
                                a ? "," : "", ar->module, ar->variant, ar->median_us, ar->median_us * 1e-3,
                                res->q1_us[a] * 1e-3, res->q3_us[a] * 1e-3, (unsigned long long)ar->hits,
                                ar->ok ? "true" : "false");
                        tool_json_str(jf, ar->verdict);
                        fprintf(jf, "}");
                    }
                    fprintf(jf, "]}");
                }
                if (res->n_arms < 2) {
                    printf("  one arm: nothing to race, nothing recorded\n");
                    continue;
                }
                if (res->winner < 0) {
                    printf("  no arm passed: nothing recorded\n");
                    failures++;
                    continue;
                }
                const memra_tune_arm *w = &res->arms[res->winner];
                double base = res->baseline >= 0 ? res->arms[res->baseline].median_us : 0.0;
                if (base > 0.0) printf("  winner %s%s%s: %.2fx the score routing's pick\n", w->module,
                                       w->variant[0] ? "." : "", w->variant, base / w->median_us);
                if (!dry) {
                    st = memra_tune_record(dev, (memra_op)op, m, n, k, w->module, w->variant, w->median_us, base);
                    if (st != MEMRA_STATUS_OK) {
                        fprintf(stderr, "memra tune: recording: %s\n", memra_last_error());
                        failures++;
                    } else recorded++;
                }
            }
    }
    tool_progress_end(&pg);
    free(res);
    if (jf) fprintf(jf, "]}\n");
    if (!dry && recorded > 0) {
        if (memra_tune_save(rt) != MEMRA_STATUS_OK) {
            fprintf(stderr, "memra tune: %s\n", memra_last_error());
            failures++;
        } else {
            printf("\nmemra tune: %d entr%s written to %s\n", recorded, recorded == 1 ? "y" : "ies", memra_tune_file(rt));
        }
    } else if (!dry) {
        printf("\nmemra tune: nothing recorded\n");
    }
    if (tool_receipt_close(&k_cmd, json, jf) != 0) failures++;
    memra_close(rt);
    return failures ? 1 : 0;
}
