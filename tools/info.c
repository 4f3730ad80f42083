/* memra info / --version / jit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/tool.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

static const struct option k_help_only[] = {{"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};

/* A command that takes no option but -h/--help and no argument: 0 to go on,
 * else the exit code (help printed, or a usage error). */
static int parse_none(const tool_cmd *c, int argc, char **argv)
{
    int o, rc = 0;
    while ((o = tool_opt_next(c, argc, argv, &rc)) != TOOL_OPT_END)
        if (o == TOOL_OPT_EXIT) return rc == 0 ? -1 : rc;
    if (optind < argc) return tool_opt_unexpected(c, argv[optind]);
    return 0;
}

static const tool_cmd k_version_cmd = {
    "memra --version",
    "usage: memra --version   (or: memra version)\n"
    "  The library and module ABI versions, then the CUDA driver and NVRTC versions found\n"
    "  (or why none was).\n",
    k_help_only};

int memra_tool_version(int argc, char **argv)
{
    const int p = parse_none(&k_version_cmd, argc, argv);
    if (p != 0) return p < 0 ? 0 : p;
    memra_runtime *rt;
    printf("memra %s (module ABI v%u)\n", memra_version(), MEMRA_MODULE_ABI_VERSION);
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) return 1;
    int dv = memra_driver_version(rt);
    if (dv) printf("CUDA driver %d.%d\n", dv / 1000, dv % 1000 / 10);
    else printf("CUDA driver: none (%s)\n", memra_driver_status(rt));
    memra_jit_info ji;
    if (memra_jit_info_get(rt, &ji) == MEMRA_STATUS_OK && ji.available)
        printf("NVRTC %d.%d\n", ji.nvrtc_major, ji.nvrtc_minor);
    else
        printf("NVRTC: none (%s)\n", ji.why);
    memra_close(rt);
    return 0;
}

/* The effective configuration: every knob with its value and source, then
 * the configuration's warnings. */
static void info_config_text(memra_runtime *rt)
{
    printf("\nconfiguration (value, source):\n");
    for (int i = 0; i < memra_config_count(rt); i++) {
        memra_config_entry e;
        if (memra_config_entry_get(rt, i, &e) != MEMRA_STATUS_OK) continue;
        printf("  %-27s %-24s %-11s %s%s\n", e.name, e.value[0] ? e.value : "(none)", e.source, e.known ? "" : "UNKNOWN: ",
               e.known ? e.owner : e.help);
    }
    printf("  f16 budget per device (MB, source, used):");
    for (int d = 0; d < memra_device_count(rt); d++) {
        memra_device *dev = memra_device_get(rt, d);
        printf(" [%d] %llu MB (%s, %llu bytes used)", d, (unsigned long long)memra_device_f16_budget_get(dev),
               memra_device_f16_budget_source(dev), (unsigned long long)memra_device_f16_used(dev));
    }
    printf("\n");
    for (int i = 0; i < memra_config_warning_count(rt); i++) printf("  warning: %s\n", memra_config_warning(rt, i));
}

static void info_config_json(memra_runtime *rt, FILE *f)
{
    fprintf(f, ",\"config\":[");
    for (int i = 0; i < memra_config_count(rt); i++) {
        memra_config_entry e;
        if (memra_config_entry_get(rt, i, &e) != MEMRA_STATUS_OK) continue;
        fprintf(f, "%s{\"name\":", i ? "," : "");
        tool_json_str(f, e.name);
        fprintf(f, ",\"value\":");
        tool_json_str(f, e.value);
        fprintf(f, ",\"source\":");
        tool_json_str(f, e.source);
        fprintf(f, ",\"owner\":");
        tool_json_str(f, e.owner);
        fprintf(f, ",\"known\":%s}", e.known ? "true" : "false");
    }
    fprintf(f, "],\"config_warnings\":[");
    for (int i = 0; i < memra_config_warning_count(rt); i++) {
        if (i) fputc(',', f);
        tool_json_str(f, memra_config_warning(rt, i));
    }
    fprintf(f, "]");
}

static void info_text(memra_runtime *rt)
{
    printf("memra %s, module ABI v%u\n", memra_version(), MEMRA_MODULE_ABI_VERSION);
    int dv = memra_driver_version(rt);
    if (dv) printf("CUDA driver: %d.%d\n", dv / 1000, dv % 1000 / 10);
    else printf("CUDA driver: not used: %s\n", memra_driver_status(rt));
    printf("\ndevices:\n");
    for (int d = 0; d < memra_device_count(rt); d++) {
        memra_device *dv_ = memra_device_get(rt, d);
        const memra_device_caps *c = memra_device_caps_get(dv_);
        char caps[512];
        memra_caps_describe(c->caps, caps, sizeof caps);
        if (c->ordinal >= 0)
            printf("  [%d] cuda:%d %s: cc %d.%d, %d SMs, %.1f GiB, profile %s (%s), JIT target %s\n", d, c->ordinal,
                   c->name, c->cc / 10, c->cc % 10, c->sm_count, (double)c->total_mem / (1 << 30), c->profile,
                   memra_device_profile_forced(dv_) ? "forced by MEMRA_ARCH" : "by compute capability",
                   c->jit_target && c->jit_target[0] ? c->jit_target : "none");
        else
            printf("  [%d] host: CPU reference, %d threads, %.1f GiB\n", d, c->sm_count, (double)c->total_mem / (1 << 30));
        printf("      capabilities: %s\n", caps);
    }
    for (int u = 0; u < memra_device_unserved_count(rt); u++) printf("  [-] %s\n", memra_device_unserved(rt, u));
    printf("\nmodules:\n");
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        memra_module_info_get(rt, i, &mi);
        if (mi.loaded) {
            printf("  loaded   %-12s %-10s %s\n", mi.name, mi.version, mi.path);
            for (int d = 0; d < memra_device_count(rt); d++) {
                memra_device *dev = memra_device_get(rt, d);
                const char *note = memra_module_device_note(rt, i, dev);
                int score = memra_module_score(dev, mi.name);
                if (score > 0) printf("           on [%d]: score %d\n", d, score);
                else if (note != NULL && strcmp(note, "score 0") != 0) printf("           on [%d]: %s\n", d, note);
            }
            memra_admission_info ai = {.struct_size = sizeof ai};
            if (memra_module_admission_get(rt, i, &ai) == MEMRA_STATUS_OK && ai.detail[0])
                printf("           admission: %s\n", ai.detail);
        } else {
            printf("  refused  %-12s %s\n           why: %s\n", mi.name, mi.path, mi.reason);
        }
    }
    printf("\ntuning file: %s (%s)\n", memra_tune_file(rt)[0] ? memra_tune_file(rt) : "(none)",
           memra_tune_file_status(rt));
    for (int i = 0; i < memra_tune_count(rt); i++) {
        memra_tune_entry te = {.struct_size = sizeof te};
        if (memra_tune_entry_get(rt, i, &te) != MEMRA_STATUS_OK) continue;
        char dl[16];
        if (te.device >= 0) snprintf(dl, sizeof dl, "[%d]", te.device);
        else snprintf(dl, sizeof dl, "-");
        printf("  %-4s %-13s n=%-6d k=%-6d m<=%-6d -> %s%s%s  %.2f us (scores' pick %.2f us; %.3fx [%.3f, %.3f], "
               "floor %.1f%%)  %s  from %s\n",
               dl, memra_op_name(te.op), te.n, te.k, te.m_class, te.module, te.variant[0] ? "." : "", te.variant,
               te.median_us, te.baseline_us, te.gain, te.gain_lo, te.gain_hi, 100.0 * te.noise_floor, te.state,
               te.source);
        if (te.device < 0) printf("       key: %s\n", te.device_key);
    }
    for (int d = 0; d < memra_device_count(rt); d++)
        for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
            memra_shadow_info si = {.struct_size = sizeof si};
            if (memra_shadow_get(memra_device_get(rt, d), (memra_op)op, &si) != MEMRA_STATUS_OK ||
                si.state == MEMRA_SHADOW_NONE)
                continue;
            static const char *const sn[] = {"none", "watching", "promoted", "rolled back", "stopped"};
            printf("shadow [%d] %s: %s%s%s vs %s: %s, %llu samples, %llu agree, %llu mismatch, %llu skipped, "
                   "speed %.2fx%s%s\n", d, memra_op_name((memra_op)op), si.module, si.variant[0] ? "." : "", si.variant,
                   si.incumbent, (unsigned)si.state < 5 ? sn[si.state] : "?", (unsigned long long)si.samples,
                   (unsigned long long)si.agreements, (unsigned long long)si.mismatches,
                   (unsigned long long)si.skipped, si.speed_ratio, si.reason[0] ? ": " : "", si.reason);
        }
    printf("\nrouting (op: modules in dispatch order):\n");
    for (int d = 0; d < memra_device_count(rt); d++) {
        memra_device *dev = memra_device_get(rt, d);
        const memra_device_caps *c = memra_device_caps_get(dev);
        printf("  [%d] %s\n", d, c->arch == MEMRA_ARCH_HOST ? "host" : c->name);
        for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
            const char *names[16];
            int n = memra_routing_get(dev, (memra_op)op, names, 16);
            printf("      %-16s", memra_op_name((memra_op)op));
            if (n == 0) printf(" (none)");
            for (int i = 0; i < n && i < 16; i++) printf("%s%s", i ? " > " : " ", names[i]);
            printf("\n");
        }
    }
    /* the device bytes of the integer floor's weight operands, per format (a
     * weight's own figure: memra model ls; a model's: memra bench --model) */
    printf("\ninteger floor operands (device bytes per 256 values, vs the format's own):\n");
    static const memra_format ff[] = {MEMRA_FORMAT_Q8_0, MEMRA_FORMAT_Q4_0, MEMRA_FORMAT_Q4_K, MEMRA_FORMAT_Q5_K,
                                      MEMRA_FORMAT_Q6_K};
    for (size_t i = 0; i < sizeof ff / sizeof ff[0]; i++) {
        const uint64_t own = memra_format_row_bytes(ff[i], 256);
        const int kq = ff[i] != MEMRA_FORMAT_Q8_0 && ff[i] != MEMRA_FORMAT_Q4_0;
        const uint64_t dev = kq ? memra_kr_bytes(ff[i], 1, 256) : memra_q8_0r_bytes(1, 256);
        printf("  %-5s %-22s %4llu B (%4llu B: %.2fx)\n", memra_format_name(ff[i]),
               kq ? "K-packed (gemm_kr)" : "Q8_0 records (q8_0r)", (unsigned long long)dev, (unsigned long long)own,
               (double)dev / (double)own);
    }
    memra_jit_info ji;
    memra_jit_info_get(rt, &ji);
    printf("\nJIT: ");
    if (ji.available) printf("NVRTC %d.%d\n", ji.nvrtc_major, ji.nvrtc_minor);
    else printf("unavailable: %s\n", ji.why[0] ? ji.why : "NVRTC not found");
    if (ji.disk_enabled)
        printf("  cache: %s, %llu entries, %.1f MiB (cap %.0f MiB)\n", ji.folder, (unsigned long long)ji.entries,
               (double)ji.bytes / (1 << 20), (double)ji.max_bytes / (1 << 20));
    else {
        char why[1024] = "";
        memra_jit_disk_status(rt, why, sizeof why);
        printf("  cache: disk cache off%s%s: %s\n", ji.folder[0] ? " at " : "", ji.folder, why);
    }
    info_config_text(rt);
}

static void info_json(memra_runtime *rt, FILE *f)
{
    /* version 1: the first with format/version; the keys before it are unchanged */
    fprintf(f, "{\"format\":\"memra-info\",\"version\":1,\"memra\":");
    tool_json_str(f, memra_version());
    fprintf(f, ",\"module_abi\":%u,\"driver\":{\"version\":%d,\"status\":", MEMRA_MODULE_ABI_VERSION,
            memra_driver_version(rt));
    tool_json_str(f, memra_driver_status(rt));
    fprintf(f, "},\"devices\":[");
    for (int d = 0; d < memra_device_count(rt); d++) {
        memra_device *dev = memra_device_get(rt, d);
        const memra_device_caps *c = memra_device_caps_get(dev);
        char caps[512];
        memra_caps_describe(c->caps, caps, sizeof caps);
        fprintf(f, "%s{\"index\":%d,\"name\":", d ? "," : "", d);
        tool_json_str(f, c->name);
        fprintf(f, ",\"profile\":");
        tool_json_str(f, c->profile);
        fprintf(f, ",\"profile_forced\":%s", memra_device_profile_forced(dev) ? "true" : "false");
        fprintf(f, ",\"ordinal\":%d,\"cc\":%d,\"sm_count\":%d,\"total_mem\":%llu,\"jit_target\":", c->ordinal, c->cc,
                c->sm_count, (unsigned long long)c->total_mem);
        tool_json_str(f, c->jit_target ? c->jit_target : "");
        fprintf(f, ",\"capabilities\":");
        tool_json_str(f, caps);
        fprintf(f, ",\"f16_budget_mb\":%llu,\"f16_budget_source\":", (unsigned long long)memra_device_f16_budget_get(dev));
        tool_json_str(f, memra_device_f16_budget_source(dev));
        fprintf(f, ",\"f16_used\":%llu", (unsigned long long)memra_device_f16_used(dev));
        fprintf(f, ",\"routing\":{");
        for (int op = 0; op < MEMRA_OP_COUNT_; op++) {
            const char *names[16];
            int n = memra_routing_get(dev, (memra_op)op, names, 16);
            fprintf(f, "%s", op ? "," : "");
            tool_json_str(f, memra_op_name((memra_op)op));
            fprintf(f, ":[");
            for (int i = 0; i < n && i < 16; i++) {
                fprintf(f, "%s", i ? "," : "");
                tool_json_str(f, names[i]);
            }
            fprintf(f, "]");
        }
        fprintf(f, "}}");
    }
    fprintf(f, "],\"unserved_devices\":[");
    for (int u = 0; u < memra_device_unserved_count(rt); u++) {
        fprintf(f, "%s", u ? "," : "");
        tool_json_str(f, memra_device_unserved(rt, u));
    }
    fprintf(f, "],\"modules\":[");
    for (int i = 0; i < memra_module_count(rt); i++) {
        memra_module_info mi;
        memra_module_info_get(rt, i, &mi);
        fprintf(f, "%s{\"name\":", i ? "," : "");
        tool_json_str(f, mi.name);
        fprintf(f, ",\"version\":");
        tool_json_str(f, mi.version);
        fprintf(f, ",\"path\":");
        tool_json_str(f, mi.path);
        fprintf(f, ",\"loaded\":%s,\"reason\":", mi.loaded ? "true" : "false");
        tool_json_str(f, mi.reason);
        memra_admission_info ai = {.struct_size = sizeof ai};
        if (memra_module_admission_get(rt, i, &ai) == MEMRA_STATUS_OK) {
            static const char *const states[] = {"not_run", "passed", "quarantined", "exempt", "off"};
            fprintf(f, ",\"admission\":{\"state\":\"%s\",\"cases\":%d,\"ms\":%.3f,\"detail\":",
                    (unsigned)ai.state < 5 ? states[ai.state] : "unknown", ai.cases, ai.ms);
            tool_json_str(f, ai.detail);
            fprintf(f, "}");
        }
        fprintf(f, "}");
    }
    memra_jit_info ji;
    memra_jit_info_get(rt, &ji);
    fprintf(f, "],\"tuning\":{\"file\":");
    tool_json_str(f, memra_tune_file(rt));
    fprintf(f, ",\"status\":");
    tool_json_str(f, memra_tune_file_status(rt));
    fprintf(f, ",\"entries\":[");
    for (int i = 0; i < memra_tune_count(rt); i++) {
        memra_tune_entry te = {.struct_size = sizeof te};
        if (memra_tune_entry_get(rt, i, &te) != MEMRA_STATUS_OK) continue;
        fprintf(f, "%s{\"device\":%d,\"key\":", i ? "," : "", te.device);
        tool_json_str(f, te.device_key);
        fprintf(f, ",\"op\":\"%s\",\"n\":%d,\"k\":%d,\"m_class\":%d,\"module\":", memra_op_name(te.op), te.n, te.k,
                te.m_class);
        tool_json_str(f, te.module);
        fprintf(f, ",\"module_version\":");
        tool_json_str(f, te.module_version);
        fprintf(f, ",\"variant\":");
        tool_json_str(f, te.variant);
        fprintf(f, ",\"median_us\":%.3f,\"baseline_us\":%.3f,\"win\":%s,\"gain\":%.4f,\"gain_lo\":%.4f,"
                   "\"gain_hi\":%.4f,\"noise_floor\":%.4f,\"reps\":%d,\"state\":",
                te.median_us, te.baseline_us, te.win ? "true" : "false", te.gain, te.gain_lo, te.gain_hi,
                te.noise_floor, te.reps);
        tool_json_str(f, te.state);
        fprintf(f, ",\"source\":");
        tool_json_str(f, te.source);
        fprintf(f, "}");
    }
    fprintf(f, "]}");
    fprintf(f, ",\"jit\":{\"available\":%s,\"why\":", ji.available ? "true" : "false");
    tool_json_str(f, ji.why);
    fprintf(f, ",\"nvrtc\":\"%d.%d\",\"disk_enabled\":%s,\"folder\":", ji.nvrtc_major, ji.nvrtc_minor,
            ji.disk_enabled ? "true" : "false");
    tool_json_str(f, ji.folder);
    fprintf(f, ",\"entries\":%llu,\"bytes\":%llu}", (unsigned long long)ji.entries, (unsigned long long)ji.bytes);
    info_config_json(rt, f);
    fprintf(f, "}\n");
}

static const char k_info_help[] =
    "usage: memra info [--json[=FILE]]\n"
    "  Devices, profiles, capabilities, modules loaded and refused (with reasons), each\n"
    "  device's op routing, the JIT cache, the effective configuration (each knob with its\n"
    "  source: default, environment or option) and its warnings.\n"
    "  --json         the same as JSON on stdout, instead of the text\n"
    "  --json FILE    the text on stdout and the JSON to FILE ('-': JSON on stdout, text on stderr)\n";
static const struct option k_info_opts[] = {
    {"json", optional_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
static const tool_cmd k_info_cmd = {"memra info", k_info_help, k_info_opts};

int memra_tool_info(int argc, char **argv)
{
    int json = 0, o, rc = 0;
    const char *path = NULL;
    while ((o = tool_opt_next(&k_info_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        if (o == TOOL_OPT_EXIT) return rc;
        json = 1;
        path = optarg;
    }
    /* `--json FILE`: the one positional argument info takes */
    if (json && path == NULL && optind + 1 == argc) path = argv[optind++];
    if (optind < argc) return tool_opt_unexpected(&k_info_cmd, argv[optind]);
    FILE *receipt = NULL;
    if (path != NULL && tool_receipt_open(&k_info_cmd, path, &receipt) != 0) return 2;
    memra_runtime *rt;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
        tool_receipt_close(&k_info_cmd, path, receipt);
        return 1;
    }
    if (receipt != NULL) {
        info_text(rt);
        info_json(rt, receipt);
    } else if (json) {
        info_json(rt, stdout);
    } else {
        info_text(rt);
    }
    memra_close(rt);
    return tool_receipt_close(&k_info_cmd, path, receipt);
}

typedef struct warm_state {
    int tty;
    int n;
} warm_state;

static void warm_progress(const char *module, const char *kernel, const char *target, const char *origin, double ms,
                          memra_status st, void *user)
{
    warm_state *w = user;
    w->n++;
    if (st != MEMRA_STATUS_OK)
        printf("%s[%d] %s/%s for %s: FAILED: %s\n", w->tty ? "\r" : "", w->n, module, kernel, target, memra_last_error());
    else
        printf("%s[%d] %s/%s for %s: %s, %.1f ms%s", w->tty ? "\r\033[K" : "", w->n, module, kernel, target, origin, ms,
               w->tty ? "" : "\n");
    tool_stdout_flush();
}

static const char k_jit_help[] =
    "usage: memra jit ls | warm | clear   ('memra jit SUB --help' for each)\n"
    "  ls     cache entries: key, target, size, age\n"
    "  warm   compile every kernel the loaded modules declare for each GPU's target\n"
    "  clear  remove every cache entry\n";
static const tool_cmd k_jit_cmd = {"memra jit", k_jit_help, k_help_only};
static const struct option k_jit_ls_opts[] = {
    {"json", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
static const tool_cmd k_jit_ls_cmd = {
    "memra jit ls",
    "usage: memra jit ls [--json FILE|-]\n"
    "  The JIT cache's folder and its entries: key, target, size, age; '(bad header)'\n"
    "  marks an entry that fails its header checks (it is rebuilt when used).\n"
    "  --json FILE writes them as JSON (format memra-jit-ls; '-': to stdout, the table to stderr).\n",
    k_jit_ls_opts};
static const char *g_jit_json; /* jit ls --json: the path, and its stream opened before any work */
static FILE *g_jit_jf;
static const tool_cmd k_jit_warm_cmd = {
    "memra jit warm",
    "usage: memra jit warm\n"
    "  Compiles (or finds in the cache) every kernel source the loaded modules declare,\n"
    "  for each GPU's JIT target. Exit 1 when one fails.\n",
    k_help_only};
static const tool_cmd k_jit_clear_cmd = {
    "memra jit clear",
    "usage: memra jit clear\n"
    "  Removes every entry, lock and temporary file of the JIT cache.\n",
    k_help_only};

static int jit_ls(memra_runtime *rt)
{
    memra_jit_info ji;
    memra_jit_info_get(rt, &ji);
    printf("cache: %s (%s)\n", ji.folder[0] ? ji.folder : "(none)", ji.disk_enabled ? "on" : "off");
    memra_jit_entry_info *e = NULL;
    size_t n = 0;
    if (memra_jit_list(rt, &e, &n) != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra jit ls: %s\n", memra_last_error());
        return 1;
    }
    printf("%-16s %-10s %10s %10s\n", "key", "target", "bytes", "age");
    for (size_t i = 0; i < n; i++)
        printf("%.16s %-10s %10llu %9llds%s\n", e[i].key_hex, e[i].target, (unsigned long long)e[i].bytes,
               (long long)e[i].age_s, e[i].header_ok ? "" : "  (bad header)");
    printf("%zu entries\n", n);
    int rc = 0;
    if (g_jit_jf != NULL) {
        FILE *jf = g_jit_jf;
        g_jit_jf = NULL;
        fprintf(jf, "{\"format\":\"memra-jit-ls\",\"version\":1,\"memra\":");
        tool_json_str(jf, memra_version());
        fprintf(jf, ",\"folder\":");
        tool_json_str(jf, ji.folder);
        fprintf(jf, ",\"disk_enabled\":%s,\"entries\":[", ji.disk_enabled ? "true" : "false");
        for (size_t i = 0; i < n; i++) {
            fprintf(jf, "%s{\"key\":", i ? "," : "");
            tool_json_str(jf, e[i].key_hex);
            fprintf(jf, ",\"target\":");
            tool_json_str(jf, e[i].target);
            fprintf(jf, ",\"bytes\":%llu,\"age_s\":%lld,\"header_ok\":%s}", (unsigned long long)e[i].bytes,
                    (long long)e[i].age_s, e[i].header_ok ? "true" : "false");
        }
        fprintf(jf, "]}\n");
        rc = tool_receipt_close(&k_jit_ls_cmd, g_jit_json, jf);
    }
    free(e);
    return rc;
}

static int jit_clear(memra_runtime *rt)
{
    size_t removed = 0;
    if (memra_jit_clear(rt, &removed) != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra jit clear: %s\n", memra_last_error());
        return 1;
    }
    printf("removed %zu entries\n", removed);
    return 0;
}

static int jit_warm(memra_runtime *rt)
{
    warm_state w = {.tty = isatty(1), .n = 0};
    memra_status st = memra_jit_warm(rt, warm_progress, &w);
    if (w.tty && w.n) printf("\n");
    if (st != MEMRA_STATUS_OK) {
        fprintf(stderr, "memra jit warm: %s: %s\n", memra_status_str(st), memra_last_error());
        return 1;
    }
    printf("%d kernel sources ready\n", w.n);
    return 0;
}

int memra_tool_jit(int argc, char **argv)
{
    static const struct {
        const char *name;
        const tool_cmd *cmd;
        int (*run)(memra_runtime *rt);
    } subs[] = {{"ls", &k_jit_ls_cmd, jit_ls}, {"warm", &k_jit_warm_cmd, jit_warm}, {"clear", &k_jit_clear_cmd, jit_clear}};
    if (argc < 2) {
        fputs(k_jit_help, stderr);
        return 2;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(argv[1], subs[i].name) != 0) continue;
        /* the subcommand's options first: --help does nothing else */
        if (subs[i].cmd == &k_jit_ls_cmd) {
            int o, orc = 0;
            while ((o = tool_opt_next(&k_jit_ls_cmd, argc - 1, argv + 1, &orc)) != TOOL_OPT_END) {
                if (o == TOOL_OPT_EXIT) return orc;
                g_jit_json = optarg;
            }
            if (optind < argc - 1) return tool_opt_unexpected(&k_jit_ls_cmd, argv[1 + optind]);
            if (g_jit_json != NULL && tool_receipt_open(&k_jit_ls_cmd, g_jit_json, &g_jit_jf) != 0) return 2;
        } else {
            const int p = parse_none(subs[i].cmd, argc - 1, argv + 1);
            if (p != 0) return p < 0 ? 0 : p;
        }
        memra_runtime *rt;
        if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
            tool_receipt_close(&k_jit_ls_cmd, g_jit_json, g_jit_jf);
            return 1;
        }
        const int rc = subs[i].run(rt);
        if (g_jit_jf != NULL) tool_receipt_close(&k_jit_ls_cmd, g_jit_json, g_jit_jf); /* the listing failed */
        memra_close(rt);
        return rc;
    }
    if (argv[1][0] == '-') { /* memra jit --help, -h, or an unknown option */
        const int p = parse_none(&k_jit_cmd, argc, argv);
        if (p != 0) return p < 0 ? 0 : p;
    }
    fprintf(stderr, "memra jit: unknown subcommand '%s'\n%s", argv[1], k_jit_help);
    return 2;
}
