/* What `memra model`, `memra check --model` and `memra bench --model` need
 * from a model file: its 2D weights in file order, their distinct
 * (format, scale kind, shape), and each projection's class by name. */
#ifndef MEMRA_TOOLS_MODEL_UTIL_H
#define MEMRA_TOOLS_MODEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "memra/file.h"

/* A projection's class, from its name: GGUF (blk.N.attn_q / attn_k / attn_v /
 * attn_output / ffn_gate / ffn_up / ffn_down), Hugging Face (q_proj, k_proj,
 * v_proj, o_proj, gate_proj, up_proj, down_proj) and Meta (wq, wk, wv, wo,
 * w1 = gate, w3 = up, w2 = down) names; anything else is OTHER. */
typedef enum tool_tclass {
    TOOL_TCLASS_Q,
    TOOL_TCLASS_K,
    TOOL_TCLASS_V,
    TOOL_TCLASS_O,
    TOOL_TCLASS_GATE,
    TOOL_TCLASS_UP,
    TOOL_TCLASS_DOWN,
    TOOL_TCLASS_OTHER,
    TOOL_TCLASS_COUNT
} tool_tclass;

tool_tclass tool_tclass_of(const char *name);
const char *tool_tclass_name(tool_tclass c); /* "q", "k", ..., "other" */

/* Why a 2D weight is not one of a prefill step's projections (NULL: it is):
 * the token embedding (token_embd, embed_tokens, tok_embeddings, wte) is a
 * row lookup, not a matmul; the LM head (output.weight, lm_head) runs on the
 * last token of a prefill, not on every one. */
const char *tool_not_projection(const char *name);

/* 1 when tensor `name` is one of the file's expert groups (memra/file.h):
 * an expert, not a per-token projection. */
int tool_in_expert_group(const memra_file *f, const char *name);

/* How an E4M3 weight is scaled (from the scale tensor beside it). */
typedef enum tool_scale_kind { TOOL_SCALE_NONE, TOOL_SCALE_TENSOR, TOOL_SCALE_BLOCK128 } tool_scale_kind;
tool_scale_kind tool_scale_kind_of(const memra_file *f, const memra_tensor_info *t);

/* 1 when t is a 2D tensor of a memra format that is not itself a scale
 * (names ending in weight_scale / weight_scale_inv). */
int tool_is_weight2d(const memra_tensor_info *t);

/* Indices of the file's 2D weights in file order: writes up to cap, returns
 * how many there are. */
size_t tool_weights2d(const memra_file *f, size_t *idx, size_t cap);

/* One distinct (format, scale kind, out_f, in_f) among the 2D weights, with
 * the first tensor of that kind and how many share it. */
typedef struct tool_wshape {
    memra_format format;
    tool_scale_kind scale;
    int64_t out_f, in_f;
    size_t first;  /* tensor index */
    size_t count;
} tool_wshape;

/* Distinct shapes in order of first appearance: writes up to cap, returns how many. */
size_t tool_weight_shapes(const memra_file *f, tool_wshape *out, size_t cap);

#endif
