#!/bin/sh
# memra model ls / check / bench on expert groups (issue 30), host device.
# usage: run_experts_tools.sh MEMRA TEST_EXPERTS
memra="$1"
te="$2"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
EXPERTS_DIR="$tmp" "$te" write >/dev/null || fail "test_experts write"
MEMRA_F16_BUDGET_MB=0 "$memra" model ls "$tmp/experts.gguf" --device host >"$tmp/ls" 2>&1 || { cat "$tmp/ls"; fail "model ls gguf"; }
cat "$tmp/ls"
grep -q '^expert groups (memra_matmul_experts):' "$tmp/ls" || fail "gguf: no expert groups section"
grep -q 'blk.0.ffn_gate_exps.weight .*experts:gate (one 3D tensor)' "$tmp/ls" || fail "gguf: group row"
grep -q "host .*mmq records .*quant_q8_1 (host) -> gemm_experts (host)" "$tmp/ls" || fail "gguf: grouped lane"
MEMRA_F16_BUDGET_MB=64 "$memra" model ls "$tmp/experts.gguf" --device host | grep -q "host .*f16 mirror .*gemm_experts (host)" || fail "gguf: mirror lane"
"$memra" model ls "$tmp/experts.safetensors" --device host --json "$tmp/ls.json" >"$tmp/ls2" 2>&1 || { cat "$tmp/ls2"; fail "model ls st"; }
python3 - "$tmp/ls.json" <<'PY' || fail "model ls json"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["expert_groups"]
assert len(g) == 1, g
g = g[0]
assert g["name"] == "model.layers.0.mlp.experts.*.up_proj.weight" and g["n_experts"] == 6 and g["class"] == "up", g
assert g["lanes"][0]["lane"] == "fp8 block-128", g["lanes"]
assert [o["op"] for o in g["lanes"][0]["ops"]] == ["gemm_experts"], g["lanes"]
PY
echo PASS
