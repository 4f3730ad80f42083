/* Model-file helpers of the tools (see model_util.h). */
#include "tools/model_util.h"

#include <stdio.h>
#include <string.h>

static const char *const k_tclass_names[TOOL_TCLASS_COUNT] = {"q", "k", "v", "o", "gate", "up", "down", "other"};

const char *tool_tclass_name(tool_tclass c) { return c < TOOL_TCLASS_COUNT ? k_tclass_names[c] : "other"; }

/* True when `part` appears in name as a whole dot-separated component, or
 * the component starts with it followed by '.' or the end. */
static int has_part(const char *name, const char *part)
{
    const size_t n = strlen(part);
    for (const char *p = name; (p = strstr(p, part)) != NULL; p++) {
        const int start = p == name || p[-1] == '.';
        const int end = p[n] == '.' || p[n] == 0;
        if (start && end) return 1;
    }
    return 0;
}

tool_tclass tool_tclass_of(const char *name)
{
    static const struct {
        const char *part;
        tool_tclass c;
    } k_parts[] = {
        {"attn_q", TOOL_TCLASS_Q},       {"q_proj", TOOL_TCLASS_Q},      {"wq", TOOL_TCLASS_Q},
        {"attn_k", TOOL_TCLASS_K},       {"k_proj", TOOL_TCLASS_K},      {"wk", TOOL_TCLASS_K},
        {"attn_v", TOOL_TCLASS_V},       {"v_proj", TOOL_TCLASS_V},      {"wv", TOOL_TCLASS_V},
        {"attn_output", TOOL_TCLASS_O},  {"o_proj", TOOL_TCLASS_O},      {"wo", TOOL_TCLASS_O},
        {"ffn_gate", TOOL_TCLASS_GATE},  {"gate_proj", TOOL_TCLASS_GATE}, {"w1", TOOL_TCLASS_GATE},
        {"ffn_up", TOOL_TCLASS_UP},      {"up_proj", TOOL_TCLASS_UP},    {"w3", TOOL_TCLASS_UP},
        {"ffn_down", TOOL_TCLASS_DOWN},  {"down_proj", TOOL_TCLASS_DOWN}, {"w2", TOOL_TCLASS_DOWN},
        /* GGUF's MoE expert tensors (blk.N.ffn_{gate,up,down}_exps) */
        {"ffn_gate_exps", TOOL_TCLASS_GATE}, {"ffn_up_exps", TOOL_TCLASS_UP}, {"ffn_down_exps", TOOL_TCLASS_DOWN},
    };
    for (size_t i = 0; i < sizeof k_parts / sizeof k_parts[0]; i++)
        if (has_part(name, k_parts[i].part)) return k_parts[i].c;
    return TOOL_TCLASS_OTHER;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

const char *tool_not_projection(const char *name)
{
    if (strstr(name, "token_embd") || strstr(name, "embed_tokens") || strstr(name, "tok_embeddings") ||
        strcmp(name, "wte.weight") == 0 || ends_with(name, ".wte.weight"))
        return "the token embedding: a row lookup, not a matmul";
    if (strcmp(name, "output.weight") == 0 || strcmp(name, "lm_head.weight") == 0 || ends_with(name, ".lm_head.weight"))
        return "the LM head: it runs on a prefill's last token, not on every one";
    return NULL;
}

int tool_is_weight2d(const memra_tensor_info *t)
{
    return t->has_format && t->n_dims == 2 && !ends_with(t->name, "weight_scale") &&
           !ends_with(t->name, "weight_scale_inv");
}

tool_scale_kind tool_scale_kind_of(const memra_file *f, const memra_tensor_info *t)
{
    if (!t->has_format || t->format != MEMRA_FORMAT_E4M3) return TOOL_SCALE_NONE;
    char nm[600];
    const size_t n = strlen(t->name);
    const int base = (int)(n >= 7 && strcmp(t->name + n - 7, ".weight") == 0 ? n - 7 : n);
    size_t idx;
    snprintf(nm, sizeof nm, "%.*s.weight_scale_inv", base, t->name);
    if (memra_file_tensor_find(f, nm, &idx) == MEMRA_STATUS_OK) return TOOL_SCALE_BLOCK128;
    snprintf(nm, sizeof nm, "%.*s.weight_scale", base, t->name);
    if (memra_file_tensor_find(f, nm, &idx) == MEMRA_STATUS_OK) return TOOL_SCALE_TENSOR;
    return TOOL_SCALE_NONE;
}

size_t tool_weights2d(const memra_file *f, size_t *idx, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < memra_file_tensor_count(f); i++) {
        memra_tensor_info t;
        if (memra_file_tensor_get(f, i, &t) != MEMRA_STATUS_OK || !tool_is_weight2d(&t)) continue;
        if (n < cap) idx[n] = i;
        n++;
    }
    return n;
}

size_t tool_weight_shapes(const memra_file *f, tool_wshape *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < memra_file_tensor_count(f); i++) {
        memra_tensor_info t;
        if (memra_file_tensor_get(f, i, &t) != MEMRA_STATUS_OK || !tool_is_weight2d(&t)) continue;
        const tool_wshape w = {.format = t.format, .scale = tool_scale_kind_of(f, &t), .out_f = t.shape[0],
                               .in_f = t.shape[1], .first = i, .count = 1};
        size_t s = 0;
        for (; s < n && s < cap; s++)
            if (out[s].format == w.format && out[s].scale == w.scale && out[s].out_f == w.out_f && out[s].in_f == w.in_f)
                break;
        if (s < n && s < cap) {
            out[s].count++;
            continue;
        }
        if (n < cap) out[n] = w;
        n++;
    }
    return n;
}

int tool_in_expert_group(const memra_file *f, const char *name)
{
    for (size_t g = 0; g < memra_file_expert_group_count(f); g++) {
        memra_expert_group_info gi;
        if (memra_file_expert_group_get(f, g, &gi) != MEMRA_STATUS_OK) continue;
        if (gi.from_3d) {
            if (strcmp(gi.name, name) == 0) return 1;
            continue;
        }
        const char *star = strchr(gi.name, '*');
        const size_t pl = (size_t)(star - gi.name), nl = strlen(name), sl = strlen(star + 1);
        if (nl <= pl + sl || strncmp(name, gi.name, pl) != 0 || strcmp(name + nl - sl, star + 1) != 0) continue;
        int digits = 1;
        for (size_t i = pl; i < nl - sl; i++) digits &= name[i] >= '0' && name[i] <= '9';
        if (digits) return 1;
    }
    return 0;
}
