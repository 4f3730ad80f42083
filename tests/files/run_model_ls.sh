#!/bin/sh
# memra model ls as a user runs it. usage: run_model_ls.sh MEMRA TEST_FILES
#   every tensor listed with its lane on the host; --json parses; the budget
#   moves a Q8_0 weight to the MMQ floor; FP8 and BF16 weights of a
#   safetensors file and a sharded index; a bad file exits 1 naming the byte;
#   a bad option exits 2; --help exits 0.
memra="$1"
tf="$2"
. "$(dirname "$0")/model_files_lib.sh"
"$memra" model ls "$tmp/model.gguf" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "model ls exit $?"; }
cat "$tmp/out"
grep -q '^blk.0.bf16.weight  *BF16  *\[5 x 512\]' "$tmp/out" || fail "no bf16 row"
grep -q 'bf16  *gemm_bf16 (host)' "$tmp/out" || fail "bf16 weight not on gemm_bf16"
grep -q 'f16 mirror  *gemm_f16 (host)' "$tmp/out" || fail "no f16 mirror lane"
grep -q '^output_norm.weight  *F32  *\[64\]' "$tmp/out" || fail "1D tensor not listed"
MEMRA_F16_BUDGET_MB=0 "$memra" model ls "$tmp/model.gguf" >"$tmp/out0" 2>&1 || fail "budget 0: exit $?"
grep -A1 '^blk.0.q8_0.weight' "$tmp/out0" | grep -q 'mmq records  *quant_q8_1 (host) -> gemm_q8_0r (host)' ||
    fail "budget 0: Q8_0 not on the MMQ floor"
grep -A1 '^blk.0.q4_k.weight' "$tmp/out0" | grep -q 'mmq K records  *quant_q8_1 (host) -> gemm_kr (host)' ||
    fail "budget 0: Q4_K not on the K-quant floor"
for q in q4_k q5_k q6_k; do # K-packed: the device bytes are the file's (<= 1.1x is the contract)
    grep -A2 "^blk.0.$q.weight" "$tmp/out0" | grep -q 'device bytes [0-9]* (1.00x the file' ||
        fail "budget 0: $q operand bytes not the file's"
done
grep -A1 "^device bytes of the 2D weights' operands" "$tmp/out0" | grep -q '\[0\] host  *[0-9]* bytes' ||
    fail "budget 0: no per-device total of the operand bytes"
"$memra" model ls "$tmp/model.gguf" --json >"$tmp/json" || fail "--json exit $?"
python3 - "$tmp/json" <<'PY' || fail "JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "memra-model-ls" and d["kind"] == "GGUF v3", d["kind"]
t = {x["name"]: x for x in d["tensors"]}
assert len(t) == 9
assert t["blk.0.q6_k.weight"]["shape"] == [10, 512]
assert t["blk.0.bf16.weight"]["lanes"][0]["ops"][0] == {"op": "gemm_bf16", "module": "host"}
assert "lanes" not in t["output_norm.weight"]
assert d["devices"][0]["operand_bytes"] >= d["devices"][0]["file_bytes"] > 0, d["devices"]
m = {x["key"]: x for x in d["metadata"]}
assert m["t.u32"]["value"] == 4000000000 and m["general.name"]["value"] == "memra test model"
PY
"$memra" model ls "$tmp/model.safetensors" >"$tmp/st" 2>&1 || { cat "$tmp/st"; fail "safetensors exit"; }
cat "$tmp/st"
grep '^model.layers.0.self_attn.q_proj.weight ' "$tmp/st" | grep -q ' q$' || fail "q_proj not class q"
grep -A1 '^model.layers.0.self_attn.q_proj.weight ' "$tmp/st" | grep -q 'fp8 block-128  *gemm_fp8_blk (host)' ||
    fail "block-128 FP8 lane on host"
grep -A2 '^model.layers.0.mlp.down_proj.weight ' "$tmp/st" | grep -q 'fp8  *gemm_fp8 (host)' || fail "per-tensor FP8 lane"
grep -A1 '^model.layers.0.mlp.down_proj.weight ' "$tmp/st" |
    grep -q 'static activation scale (input_scale) 0.0078125: the FP8 lanes quantise in one pass' ||
    fail "model ls does not show the input_scale"
"$memra" model ls "$tmp/model.safetensors" --json >"$tmp/stj" || fail "safetensors --json exit $?"
python3 - "$tmp/stj" <<'PY' || fail "JSON input_scale"
import json, sys
t = {x["name"]: x for x in json.load(open(sys.argv[1]))["tensors"]}
assert t["model.layers.0.mlp.down_proj.weight"]["input_scale"] == 0.0078125, t["model.layers.0.mlp.down_proj.weight"]
assert "input_scale" not in t["model.layers.0.self_attn.q_proj.weight"]
PY
"$memra" model ls "$tmp/model.safetensors.index.json" >"$tmp/ix" 2>&1 || { cat "$tmp/ix"; fail "index exit"; }
grep -q 'safetensors index (1 shard)' "$tmp/ix" || fail "index description"
grep -q '^model.layers.0.mlp.up_proj.weight  *BF16' "$tmp/ix" || fail "index tensor"
"$memra" model ls "$tmp/bad.gguf" >"$tmp/bad" 2>&1
rc=$?
cat "$tmp/bad"
[ $rc -eq 1 ] || fail "bad file: exit $rc, want 1"
grep -q 'bad.gguf: byte 4: unknown GGUF version 9' "$tmp/bad" || fail "bad file message"
# names with escape bytes and invalid UTF-8 (issue 27): escaped on the
# terminal, valid JSON
"$memra" model ls "$tmp/names.gguf" >"$tmp/names" 2>&1 || { cat "$tmp/names"; fail "names: exit $?"; }
cat "$tmp/names"
if LC_ALL=C grep -q "$(printf '\033')" "$tmp/names"; then fail "an escape byte reached the terminal raw"; fi
grep -qF 'blk.0.\x1b]0;owned\x07\x1b[2J.weight' "$tmp/names" || fail "the escaped name is not shown"
"$memra" model ls "$tmp/names.gguf" --json >"$tmp/names.json" || fail "names --json exit $?"
python3 - "$tmp/names.json" <<'PY' || fail "names JSON"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
n = sorted(x["name"] for x in d["tensors"])
assert n == ["blk.0.\x1b]0;owned\x07\x1b[2J.weight", "norm.\ufffd\ufffd\ufffd\ufffd"], n
PY
"$memra" model ls "$tmp/model.gguf" --nosuch >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad option: exit $rc, want 2"
"$memra" model frobnicate "$tmp/model.gguf" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "bad sub-command: exit $rc, want 2"
"$memra" model --help | grep -q '^usage: memra model ls' || fail "--help"
echo PASS
