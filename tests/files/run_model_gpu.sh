#!/bin/sh
# memra check --model and memra bench --model on device 0 when it is a GPU
# (exit 77 otherwise). usage: run_model_gpu.sh MEMRA TEST_FILES
#   every lane of the test files passes through memra_matmul and each GPU
#   module that provides it; the Q8_0 MMQ floor with the budget at 0 and
#   MEMRA_W16=0, gemm_w16 or the floor with the budget at 0 by default; the
#   injected fault fails; the bench receipt shows GPU modules serving and the
#   host RSS within the files' bytes plus 64 MiB.
memra="$1"
tf="$2"
. "$(dirname "$0")/model_files_lib.sh"
"$memra" check --model "$tmp/model.safetensors" --device 0 --m 17 >"$tmp/probe" 2>&1
if grep -q '^\[0\] host' "$tmp/probe"; then echo "skipped: device 0 is the host device (no GPU)"; exit 77; fi
cat "$tmp/probe"
grep -q ' 0 failed' "$tmp/probe" || fail "check --model safetensors on device 0"
for f in model.gguf model.safetensors model.safetensors.index.json; do
    "$memra" check --model "$tmp/$f" --device 0 --json "$tmp/c.json" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "check --model $f"; }
    cat "$tmp/out"
    grep -q ' matmul .* PASS' "$tmp/out" || fail "$f: no matmul row"
done
MEMRA_W16=0 MEMRA_F16_BUDGET_MB=0 "$memra" check --model "$tmp/model.gguf" --device 0 >"$tmp/b0" 2>&1 || { cat "$tmp/b0"; fail "budget 0"; }
grep -E 'gemm_q8_0r? .* 512 6 512 matmul .*PASS' "$tmp/b0" || fail "budget 0, MEMRA_W16=0: Q8_0 not on the MMQ floor"
# by default (MEMRA_W16=0) the floor; under MEMRA_W16=auto (set by the caller) gemm_w16 where the device routes it
MEMRA_F16_BUDGET_MB=0 "$memra" check --model "$tmp/model.gguf" --device 0 >"$tmp/b0w" 2>&1 || { cat "$tmp/b0w"; fail "budget 0 (w16)"; }
grep -E '(gemm_w16|gemm_q8_0r?) .* 512 6 512 matmul .*PASS' "$tmp/b0w" || fail "budget 0: Q8_0 on neither gemm_w16 nor the floor"
MEMRA_CHECK_INJECT_FAULT=1 "$memra" check --model "$tmp/model.safetensors" --device 0 >"$tmp/inj" 2>/dev/null
[ $? -eq 1 ] || fail "injected fault: want exit 1"
grep -q 'FAIL (injected fault)' "$tmp/inj" || fail "injected fault: no failing row"
"$memra" bench --model "$tmp/model.gguf" --device 0 --json "$tmp/b.json" >"$tmp/bench" 2>&1 || { cat "$tmp/bench"; fail "bench --model"; }
cat "$tmp/bench"
python3 - "$tmp/b.json" <<'PY' || fail "bench receipt"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 3 and d["mode"] == "model" and d["device"]["profile"] != "host", d["device"]
served = [s for c in d["shapes"] for s in c["arms"][0]["served"]]
assert served and all(s["module"] != "host" for s in served), served
r, m = d["model"]["rss"], d["model"]
assert r["peak"] - r["before_open"] <= m["file_bytes"] + (64 << 20), r
PY
echo PASS
