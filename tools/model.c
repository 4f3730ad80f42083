/* memra model ls FILE [--json] [--device N|host|all]: every tensor of a GGUF,
 * safetensors or sharded safetensors file with its type, shape, bytes and
 * offset; for each 2D weight the lane memra_matmul would take on each device
 * under the current routing, policy and f16 budget (memra_weight_plan_get:
 * nothing is prepared or uploaded), with the reason; the metadata. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memra/file.h"
#include "memra/formats.h"
#include "memra/memra.h"
#include "tools/model_util.h"
#include "tools/tool.h"
#include "tools/tool_opt.h"
#include "tools/tool_util.h"

static const char k_model_usage[] =
    "usage: memra model ls FILE [--json[=OUT]] [--device N|host|all] [--quiet]\n"
    "  FILE: a .gguf file, a .safetensors file, or a model.safetensors.index.json (sharded set)\n"
    "  Lists every tensor (type, shape, bytes, file offset), the metadata, and for each 2D weight\n"
    "  the lane memra_matmul would take on each device under the current routing and f16 budget\n"
    "  (MEMRA_F16_BUDGET_MB, MEMRA_PREFER, MEMRA_DISABLE apply), with the reason; nothing is\n"
    "  uploaded. The file is checked in full first: a malformed file exits 1 with the byte offset.\n"
    "  Expert groups (MoE: a 3D tensor [E x out x in], or per-expert 2D tensors\n"
    "  <prefix>.experts.<J>.<suffix>) are listed after the tensors with the lane of the grouped\n"
    "  call (memra_matmul_experts) on each device.\n"
    "  --json            one JSON object (format memra-model-ls) on stdout instead of the table\n"
    "  --json OUT        the table on stdout and the JSON to OUT ('-': JSON on stdout, table on\n"
    "                    stderr); also --json=OUT\n"
    "  --device D        a device index, 'host', or 'all' (default: all)\n"
    "  -h, --help        this text\n";

static void shape_str(const memra_tensor_info *t, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->n_dims && o < len; d++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", d ? " x " : "", (long long)t->shape[d]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

static void plan_chain(const memra_weight_plan *p, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int s = 0; s < p->n_steps && o < len; s++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s (%s)", s ? " -> " : "", memra_op_name(p->ops[s]),
                              p->modules[s] ? p->modules[s] : "no module");
}

static void json_meta(FILE *jf, const memra_meta_info *m)
{
    static const char *const types[] = {"string", "int", "uint", "float", "bool", "array", "other"};
    fprintf(jf, "{\"key\":");
    tool_json_str(jf, m->key);
    fprintf(jf, ",\"type\":\"%s\",\"value\":", types[m->type]);
    switch (m->type) {
    case MEMRA_META_INT: fprintf(jf, "%lld", (long long)m->i); break;
    case MEMRA_META_UINT: fprintf(jf, "%llu", (unsigned long long)m->u); break;
    case MEMRA_META_BOOL: fprintf(jf, "%s", m->i ? "true" : "false"); break;
    case MEMRA_META_FLOAT: fprintf(jf, "%.17g", m->f); break;
    default: tool_json_str(jf, m->text); break;
    }
    if (m->type == MEMRA_META_ARRAY) fprintf(jf, ",\"count\":%llu", (unsigned long long)m->count);
    fprintf(jf, "}");
}

/* Why a tensor of a memra format gets no lane (NULL: it is a 2D weight). */
static const char *no_lane_note(const memra_tensor_info *t, char *buf, size_t len)
{
    if (!t->has_format || tool_is_weight2d(t)) return NULL;
    if (t->n_dims == 3) {
        snprintf(buf, len,
                 "3D: %lld experts of %lld x %lld (a MoE expert tensor): an expert group, its lane under \"expert "
                 "groups\" below (memra_matmul_experts)",
                 (long long)t->shape[0], (long long)t->shape[1], (long long)t->shape[2]);
        return buf;
    }
    if (t->n_dims == 1) return "1D (a norm or a bias): not a matmul weight";
    if (t->n_dims == 2) return "a scale tensor of the FP8 weight beside it";
    snprintf(buf, len, "%dD: not a matmul weight", t->n_dims);
    return buf;
}

/* The expert groups (MoE) with the grouped call's lane on each device. */
static void ls_groups(const memra_file *f, memra_runtime *rt, int text, FILE *jf, int dev_sel)
{
    const size_t ng = memra_file_expert_group_count(f);
    if (text && ng) printf("\nexpert groups (memra_matmul_experts):\n");
    for (size_t i = 0; i < ng; i++) {
        memra_expert_group_info gi;
        if (memra_file_expert_group_get(f, i, &gi) != MEMRA_STATUS_OK) continue;
        const char *cls = tool_tclass_name(tool_tclass_of(gi.name));
        char nb[1024], sh[96];
        snprintf(sh, sizeof sh, "[%d x %lld x %lld]", (int)gi.n_experts, (long long)gi.out_f, (long long)gi.in_f);
        if (text)
            printf("%-48s %-8s %-18s %12llu  experts:%s (%s)\n", tool_term_str(gi.name, nb, sizeof nb), gi.type, sh,
                   (unsigned long long)gi.bytes, cls, gi.from_3d ? "one 3D tensor" : "per-expert tensors");
        if (jf) {
            fprintf(jf, "%s{\"name\":", i ? "," : "");
            tool_json_str(jf, gi.name);
            fprintf(jf, ",\"type\":\"%s\",\"format\":\"%s\",\"n_experts\":%d,\"out_f\":%lld,\"in_f\":%lld,"
                        "\"bytes\":%llu,\"from_3d\":%s,\"class\":\"%s\"",
                    gi.type, memra_format_name(gi.format), (int)gi.n_experts, (long long)gi.out_f, (long long)gi.in_f,
                    (unsigned long long)gi.bytes, gi.from_3d ? "true" : "false", cls);
        }
        memra_weight *w = NULL;
        if (memra_file_experts_create(rt, f, gi.name, &w) != MEMRA_STATUS_OK) {
            char eb[1024];
            if (text) printf("    not an expert weight: %s\n", tool_term_str(memra_last_error(), eb, sizeof eb));
            if (jf) {
                fprintf(jf, ",\"weight_error\":");
                tool_json_str(jf, memra_last_error());
                fprintf(jf, "}");
            }
            continue;
        }
        if (jf) fprintf(jf, ",\"lanes\":[");
        for (int d = 0, first = 1; d < memra_device_count(rt); d++) {
            memra_device *dev = memra_device_get(rt, d);
            const memra_device_caps *c = memra_device_caps_get(dev);
            if (dev_sel == -2 ? c->arch != MEMRA_ARCH_HOST : dev_sel >= 0 && d != dev_sel) continue;
            memra_weight_plan p = {.struct_size = sizeof p};
            if (memra_weight_plan_get(w, dev, &p) != MEMRA_STATUS_OK) continue;
            char chain[256], label[64];
            plan_chain(&p, chain, sizeof chain);
            if (c->arch == MEMRA_ARCH_HOST) snprintf(label, sizeof label, "[%d] host", d);
            else snprintf(label, sizeof label, "[%d] cuda:%d %s", d, c->ordinal, c->profile);
            if (text)
                printf("    %-16s %-22s %s\n    %-16s %-22s device bytes %llu (%.2fx the file's)\n    %-16s %-22s %s\n",
                       label, p.lane, chain, "", "", (unsigned long long)p.operand_bytes,
                       gi.bytes ? (double)p.operand_bytes / (double)gi.bytes : 0.0, "", "", p.why);
            if (jf) {
                fprintf(jf, "%s{\"device\":", first ? "" : ",");
                tool_json_str(jf, label);
                fprintf(jf, ",\"lane\":");
                tool_json_str(jf, p.lane);
                fprintf(jf, ",\"ops\":[");
                for (int s = 0; s < p.n_steps; s++) {
                    fprintf(jf, "%s{\"op\":\"%s\",\"module\":", s ? "," : "", memra_op_name(p.ops[s]));
                    if (p.modules[s]) tool_json_str(jf, p.modules[s]);
                    else fprintf(jf, "null");
                    fprintf(jf, "}");
                }
                fprintf(jf, "],\"operand_bytes\":%llu,\"why\":", (unsigned long long)p.operand_bytes);
                tool_json_str(jf, p.why);
                fprintf(jf, "}");
            }
            first = 0;
        }
        if (jf) fprintf(jf, "]}");
        memra_weight_destroy(w);
    }
}

/* text: the table on stdout; jf: the JSON receipt (NULL: none). */
static int model_ls(const char *path, int text, FILE *jf, int dev_sel)
{
    memra_file *f = NULL;
    memra_status st = memra_file_open(path, &f);
    if (st != MEMRA_STATUS_OK) {
        char eb[1024];
        fprintf(stderr, "memra model: %s: %s\n", memra_status_str(st), tool_term_str(memra_last_error(), eb, sizeof eb));
        return 1;
    }
    memra_runtime *rt = NULL;
    if (memra_tool_open(&rt) != MEMRA_STATUS_OK) {
        memra_file_close(f);
        return 1;
    }
    const int ndev = memra_device_count(rt);
    const size_t nt = memra_file_tensor_count(f), nm = memra_file_meta_count(f);
    /* per device: the operand bytes prepare would hold for the file's 2D weights, and their file bytes */
    uint64_t dev_ob[64] = {0}, dev_fb[64] = {0};
    uint64_t total = 0;
    for (size_t i = 0; i < nt; i++) {
        memra_tensor_info t;
        memra_file_tensor_get(f, i, &t);
        total += t.bytes;
    }
    if (jf) {
        fprintf(jf, "{\"format\":\"memra-model-ls\",\"version\":2,\"file\":");
        tool_json_str(jf, path);
        fprintf(jf, ",\"kind\":");
        tool_json_str(jf, memra_file_describe(f));
        fprintf(jf, ",\"tensor_bytes\":%llu,\"metadata\":[", (unsigned long long)total);
        for (size_t i = 0; i < nm; i++) {
            memra_meta_info m;
            memra_file_meta_get(f, i, &m);
            fprintf(jf, "%s", i ? "," : "");
            json_meta(jf, &m);
        }
        fprintf(jf, "],\"tensors\":[");
    }
    if (text) {
        printf("%s: %s, %zu tensors (%.1f MiB), %zu metadata keys\n", path, memra_file_describe(f), nt,
               (double)total / 1048576.0, nm);
        for (size_t i = 0; i < nm; i++) {
            memra_meta_info m;
            memra_file_meta_get(f, i, &m);
            char kb[512], vb[512], cut[101];
            snprintf(cut, sizeof cut, "%s", m.text);
            printf("  %-40s %s%s\n", tool_term_str(m.key, kb, sizeof kb), tool_term_str(cut, vb, sizeof vb),
                   strlen(m.text) > 100 ? "..." : "");
        }
        printf("\n%-48s %-8s %-18s %12s %12s  class\n", "tensor", "type", "shape", "bytes", "offset");
    }
    for (size_t i = 0; i < nt; i++) {
        memra_tensor_info t;
        memra_file_tensor_get(f, i, &t);
        char sh[96], notebuf[256];
        shape_str(&t, sh, sizeof sh);
        const int w2d = tool_is_weight2d(&t);
        const char *cls = w2d ? tool_tclass_name(tool_tclass_of(t.name)) : t.n_dims == 3 && t.has_format ? "experts" : "-";
        const char *note = no_lane_note(&t, notebuf, sizeof notebuf);
        if (jf) {
            fprintf(jf, "%s{\"name\":", i ? "," : "");
            tool_json_str(jf, t.name);
            fprintf(jf, ",\"type\":\"%s\",\"format\":\"%s\",\"shape\":[", t.type,
                    t.has_format ? memra_format_name(t.format) : "");
            for (int d = 0; d < t.n_dims; d++) fprintf(jf, "%s%lld", d ? "," : "", (long long)t.shape[d]);
            fprintf(jf, "],\"bytes\":%llu,\"offset\":%llu,\"class\":\"%s\"", (unsigned long long)t.bytes,
                    (unsigned long long)t.offset, cls);
            if (note) {
                fprintf(jf, ",\"note\":");
                tool_json_str(jf, note);
            }
            if (memra_file_kind_get(f) == MEMRA_FILE_SAFETENSORS_INDEX) {
                fprintf(jf, ",\"path\":");
                tool_json_str(jf, t.path);
            }
        }
        if (text) {
            char nb[1024];
            printf("%-48s %-8s %-18s %12llu %12llu  %s\n", tool_term_str(t.name, nb, sizeof nb), t.type, sh,
                   (unsigned long long)t.bytes, (unsigned long long)t.offset, cls);
            if (note && t.n_dims == 3) printf("    %s\n", note);
        }
        if (w2d) {
            memra_weight *w = NULL;
            st = memra_file_weight_create(rt, f, t.name, &w);
            if (st != MEMRA_STATUS_OK) {
                if (jf) {
                    fprintf(jf, ",\"weight_error\":");
                    tool_json_str(jf, memra_last_error());
                }
                if (text) {
                    char eb[1024];
                    printf("    not a memra weight: %s\n", tool_term_str(memra_last_error(), eb, sizeof eb));
                }
            } else {
                const float in_scale = memra_weight_input_scale(w);
                if (in_scale > 0.0f) {
                    if (jf) fprintf(jf, ",\"input_scale\":%.9g", (double)in_scale);
                    if (text)
                        printf("    static activation scale (input_scale) %.9g: the FP8 lanes quantise in one pass, "
                               "|x| above %.6g saturates\n",
                               (double)in_scale, (double)in_scale * 448.0);
                }
                if (jf) fprintf(jf, ",\"lanes\":[");
                int first = 1;
                for (int d = 0; d < ndev; d++) {
                    memra_device *dev = memra_device_get(rt, d);
                    const memra_device_caps *c = memra_device_caps_get(dev);
                    if (dev_sel == -2 ? c->arch != MEMRA_ARCH_HOST : dev_sel >= 0 && d != dev_sel) continue;
                    memra_weight_plan p = {.struct_size = sizeof p};
                    if (memra_weight_plan_get(w, dev, &p) != MEMRA_STATUS_OK) continue;
                    char chain[256];
                    plan_chain(&p, chain, sizeof chain);
                    char label[64];
                    if (c->arch == MEMRA_ARCH_HOST) snprintf(label, sizeof label, "[%d] host", d);
                    else snprintf(label, sizeof label, "[%d] cuda:%d %s", d, c->ordinal, c->profile);
                    if (jf) {
                        fprintf(jf, "%s{\"device\":", first ? "" : ",");
                        tool_json_str(jf, label);
                        fprintf(jf, ",\"lane\":");
                        tool_json_str(jf, p.lane);
                        fprintf(jf, ",\"ops\":[");
                        for (int s = 0; s < p.n_steps; s++) {
                            fprintf(jf, "%s{\"op\":\"%s\",\"module\":", s ? "," : "", memra_op_name(p.ops[s]));
                            if (p.modules[s]) tool_json_str(jf, p.modules[s]);
                            else fprintf(jf, "null");
                            fprintf(jf, "}");
                        }
                        fprintf(jf, "],\"operand_bytes\":%llu,\"floor_f16_m\":%lld,\"why\":",
                                (unsigned long long)p.operand_bytes, (long long)memra_weight_floor_f16_m(w, dev));
                        tool_json_str(jf, p.why);
                        fprintf(jf, "}");
                    }
                    if (text)
                        printf("    %-16s %-22s %s\n    %-16s %-22s device bytes %llu (%.2fx the file's)\n"
                               "    %-16s %-22s %s\n",
                               label, p.lane, chain, "", "", (unsigned long long)p.operand_bytes,
                               t.bytes ? (double)p.operand_bytes / (double)t.bytes : 0.0, "", "", p.why);
                    if (d < 64) dev_ob[d] += p.operand_bytes, dev_fb[d] += t.bytes;
                    first = 0;
                }
                if (jf) fprintf(jf, "]");
                memra_weight_destroy(w);
            }
        }
        if (jf) fprintf(jf, "}");
    }
    if (jf) fprintf(jf, "],\"expert_groups\":[");
    ls_groups(f, rt, text, jf, dev_sel);
    if (jf) fprintf(jf, "],\"devices\":[");
    if (text) printf("\ndevice bytes of the 2D weights' operands, per device:\n");
    for (int d = 0, first = 1; d < ndev && d < 64; d++) {
        if (dev_fb[d] == 0) continue;
        const memra_device_caps *c = memra_device_caps_get(memra_device_get(rt, d));
        char label[64];
        if (c->arch == MEMRA_ARCH_HOST) snprintf(label, sizeof label, "[%d] host", d);
        else snprintf(label, sizeof label, "[%d] cuda:%d %s", d, c->ordinal, c->profile);
        if (jf) {
            fprintf(jf, "%s{\"device\":", first ? "" : ",");
            tool_json_str(jf, label);
            fprintf(jf, ",\"operand_bytes\":%llu,\"file_bytes\":%llu}", (unsigned long long)dev_ob[d],
                    (unsigned long long)dev_fb[d]);
        }
        if (text)
            printf("  %-20s %llu bytes = %.1f MiB (%.2fx the file's %llu)\n", label, (unsigned long long)dev_ob[d],
                   (double)dev_ob[d] / 1048576.0, (double)dev_ob[d] / (double)dev_fb[d], (unsigned long long)dev_fb[d]);
        first = 0;
    }
    if (jf) fprintf(jf, "]}\n");
    memra_close(rt);
    memra_file_close(f);
    return 0;
}

static const struct option k_model_opts[] = {{"json", optional_argument, NULL, 'j'},
                                             {"device", required_argument, NULL, 'd'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"quiet", no_argument, NULL, TOOL_OPT_QUIET},
                                             {NULL, 0, NULL, 0}};
static const tool_cmd k_model_cmd = {"memra model", k_model_usage, k_model_opts};

int memra_tool_model(int argc, char **argv)
{
    int json = 0, dev_sel = -1, o, rc = 0; /* dev_sel: -1 all, -2 host, else index */
    const char *path = NULL;
    /* GNU getopt_long permutes: options may follow the operands ("ls FILE --json") */
    while ((o = tool_opt_next(&k_model_cmd, argc, argv, &rc)) != TOOL_OPT_END) {
        if (o == TOOL_OPT_EXIT) return rc;
        if (o == 'j') {
            json = 1;
            path = optarg;
        } else if (o == 'd') {
            if (strcmp(optarg, "all") == 0) dev_sel = -1;
            else if (strcmp(optarg, "host") == 0) dev_sel = -2;
            else {
                int64_t v;
                if (tool_parse_i64(optarg, 0, 15, &v) != 0) {
                    fprintf(stderr, "memra model: --device takes an index, 'host' or 'all', not '%s'\n\n%s", optarg,
                            k_model_usage);
                    return 2;
                }
                dev_sel = (int)v;
            }
        } else {
            return 2;
        }
    }
    /* `--json FILE`: the operand after ls FILE */
    const int nops = argc - optind;
    if (json && path == NULL && nops == 3) path = argv[argc - 1];
    if (nops != (json && path != NULL && nops == 3 ? 3 : 2) || strcmp(argv[optind], "ls") != 0) {
        fprintf(stderr, "memra model: expected 'ls FILE'\n\n%s", k_model_usage);
        return 2;
    }
    FILE *jf = NULL;
    if (path != NULL && tool_receipt_open(&k_model_cmd, path, &jf) != 0) return 2;
    rc = model_ls(argv[optind + 1], !json || path != NULL, json && path == NULL ? stdout : jf, dev_sel);
    const int wrc = tool_receipt_close(&k_model_cmd, path, jf);
    return rc ? rc : wrc;
}
