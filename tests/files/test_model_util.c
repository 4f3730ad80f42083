/* tools/model_util.c: tensor classes by name, 2D weights, distinct shapes and
 * FP8 scale kinds of a file (what check --model and bench --model iterate). */
#include <stdio.h>
#include <string.h>

#include "files/writer.h"
#include "memra/file.h"
#include "test.h"
#include "tools/model_util.h"

int main(void)
{
    static const struct {
        const char *name;
        tool_tclass c;
    } names[] = {
        {"blk.0.attn_q.weight", TOOL_TCLASS_Q},
        {"blk.11.attn_k.weight", TOOL_TCLASS_K},
        {"blk.3.attn_v.weight", TOOL_TCLASS_V},
        {"blk.3.attn_output.weight", TOOL_TCLASS_O},
        {"blk.3.ffn_gate.weight", TOOL_TCLASS_GATE},
        {"blk.3.ffn_up.weight", TOOL_TCLASS_UP},
        {"blk.3.ffn_down.weight", TOOL_TCLASS_DOWN},
        {"model.layers.0.self_attn.q_proj.weight", TOOL_TCLASS_Q},
        {"model.layers.0.self_attn.o_proj.weight", TOOL_TCLASS_O},
        {"model.layers.9.mlp.gate_proj.weight", TOOL_TCLASS_GATE},
        {"model.layers.9.mlp.down_proj.weight_scale_inv", TOOL_TCLASS_DOWN},
        {"layers.0.attention.wk.weight", TOOL_TCLASS_K},
        {"layers.0.feed_forward.w3.weight", TOOL_TCLASS_UP},
        {"layers.0.feed_forward.w2.weight", TOOL_TCLASS_DOWN},
        {"token_embd.weight", TOOL_TCLASS_OTHER},
        {"output.weight", TOOL_TCLASS_OTHER},
        {"blk.0.attn_qkv.weight", TOOL_TCLASS_OTHER}, /* fused: not one class */
        {"model.wqx.weight", TOOL_TCLASS_OTHER},      /* a component, not a prefix */
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (tool_tclass_of(names[i].name) != names[i].c)
            TEST_FAIL_AT("%s: class %s, want %s", names[i].name, tool_tclass_name(tool_tclass_of(names[i].name)),
                         tool_tclass_name(names[i].c));
    }
    CHECK_STR_EQ(tool_tclass_name(TOOL_TCLASS_GATE), "gate");

    static uint8_t w[256 * 128];
    for (size_t e = 0; e < sizeof w; e++) w[e] = (uint8_t)(0x30 + e % 7);
    static float grid[2], sc = 0.5f;
    const tw_st_tensor t[] = {
        {"l.0.q_proj.weight", "F8_E4M3", 2, {128, 128}, w, 128 * 128},
        {"l.0.q_proj.weight_scale_inv", "F32", 2, {1, 1}, grid, 4},
        {"l.1.q_proj.weight", "F8_E4M3", 2, {128, 128}, w, 128 * 128},
        {"l.1.q_proj.weight_scale_inv", "F32", 2, {1, 1}, grid, 4},
        {"l.0.k_proj.weight", "F8_E4M3", 2, {128, 128}, w, 128 * 128},
        {"l.0.k_proj.weight_scale", "F32", 0, {0}, &sc, 4},
        {"l.0.up_proj.weight", "BF16", 2, {64, 128}, w, 64 * 128 * 2},
        {"l.0.norm", "BF16", 1, {64}, w, 128},
    };
    tw_buf b;
    tw_st_build(t, sizeof t / sizeof t[0], NULL, &b);
    memra_file *f;
    CHECK_OK(memra_file_open_memory("mu.safetensors", b.p, b.n, &f));
    size_t idx[8];
    CHECK_INT_EQ(tool_weights2d(f, idx, 8), 4);
    memra_tensor_info ti;
    CHECK_OK(memra_file_tensor_get(f, idx[3], &ti));
    CHECK_STR_EQ(ti.name, "l.0.up_proj.weight");
    tool_wshape s[8];
    const size_t ns = tool_weight_shapes(f, s, 8);
    CHECK_INT_EQ(ns, 3); /* block-128 [128 x 128] x2, per-tensor [128 x 128], bf16 [64 x 128] */
    CHECK(s[0].format == MEMRA_FORMAT_E4M3 && s[0].scale == TOOL_SCALE_BLOCK128 && s[0].count == 2);
    CHECK(s[1].format == MEMRA_FORMAT_E4M3 && s[1].scale == TOOL_SCALE_TENSOR && s[1].count == 1);
    CHECK(s[2].format == MEMRA_FORMAT_BF16 && s[2].out_f == 64 && s[2].in_f == 128 && s[2].count == 1);
    memra_file_close(f);
    tw_free(&b);
    printf("PASS model_util\n");
    return 0;
}
