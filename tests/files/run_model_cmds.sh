#!/bin/sh
# memra check --model and memra bench --model as a user runs them on the host
# device. usage: run_model_cmds.sh MEMRA TEST_FILES MAKE_LAYER_FILES_PY [PART]
#   PART "files" (the default; python3's standard library only): files written
#   by test_files (every GGUF type, FP8 per-tensor and block-128 safetensors,
#   an index): rows pass, receipts parse with their model section, an injected
#   fault fails, a bad file exits 1 naming the byte, bad options exit 2,
#   --help 0.
#   PART "layer_numpy": a small 27b-shaped layer from bench/make_layer_files.py
#   by its numpy-only writer; "layer_packages": the same by the gguf /
#   safetensors / ml_dtypes writers. Each skips (77, naming the packages and
#   the install line) when its packages are missing.
memra="$1"
tf="$2"
layer="$3"
part="${4:-files}"
need=""
case "$part" in
files) ;;
layer_numpy) need=numpy ;;
layer_packages) need="gguf, safetensors, ml_dtypes, numpy" ;;
*) echo "run_model_cmds.sh: unknown part '$part'"; exit 2 ;;
esac
if [ -n "$need" ] && ! python3 -c "import $need" 2>/dev/null; then
    echo "SKIP: needs the Python packages $need (the optional packages of the full suite:" \
        "python3 -m pip install -r tests/requirements.txt)"
    exit 77
fi
. "$(dirname "$0")/model_files_lib.sh"
if [ "$part" = layer_numpy ]; then
    # the numpy-only writers of make_layer_files.py (what the lent GPU machine runs)
    python3 "$layer" "$tmp/np" --div 20 --types q4_0,bf16 --writer numpy >/dev/null || fail "make_layer_files.py --writer numpy"
    for f in layer27b.q4_0.gguf layer27b.bf16.gguf layer27b.fp8.safetensors; do
        "$memra" check --model "$tmp/np/$f" >"$tmp/lc" 2>&1 || { cat "$tmp/lc"; fail "check --model $f (numpy writer)"; }
    done
    grep -q 'gemm_fp8_blk .*matmul .*PASS' "$tmp/lc" || fail "numpy writer: FP8 block-128 matmul row"
    # the route from the floor's records to dequant_kr_f16 + gemm_f16 (from 4 tokens here; sm90's auto is
    # 256 / 512): each routed shape's matmul row judged as gemm_f16, and the floor's own rows (route off) beside
    python3 "$layer" "$tmp/np" --div 20 --types q4_k,q8_0 --writer numpy --no-fp8 >/dev/null || fail "make_layer_files.py q4_k,q8_0"
    for t in q4_k:gemm_kr q8_0:gemm_q8_0r; do
        f=layer27b.${t%%:*}.gguf
        MEMRA_F16_BUDGET_MB=0 MEMRA_FLOOR_F16_M=4 "$memra" check --model "$tmp/np/$f" --m 8 >"$tmp/lr" 2>&1 ||
            { cat "$tmp/lr"; fail "check --model $f with the route"; }
        [ "$(grep -c 'at this m dequant_kr_f16 + gemm_f16' "$tmp/lr")" -ge 4 ] || { cat "$tmp/lr"; fail "$f: routed shapes"; }
        [ "$(grep -c 'gemm_f16 .* matmul .*PASS' "$tmp/lr")" -ge 4 ] || { cat "$tmp/lr"; fail "$f: routed matmul rows"; }
        [ "$(grep -c "${t#*:} .* matmul .*PASS" "$tmp/lr")" -ge 4 ] || { cat "$tmp/lr"; fail "$f: the floor's rows"; }
    done
    echo PASS
    exit 0
fi
if [ "$part" = layer_packages ]; then
    # a 27b-shaped layer (dimensions / 20) from bench/make_layer_files.py's package writers
    python3 "$layer" "$tmp/layer" --div 20 --types q8_0,q6_k >/dev/null || fail "make_layer_files.py"
    for f in layer27b.q8_0.gguf layer27b.q6_k.gguf layer27b.fp8.safetensors; do
        "$memra" check --model "$tmp/layer/$f" >"$tmp/lc" 2>&1 || { cat "$tmp/lc"; fail "check --model $f"; }
        grep -q ' 0 failed' "$tmp/lc" || fail "check --model $f: failures"
        "$memra" bench --model "$tmp/layer/$f" --m 2 --reps 1 >"$tmp/lb" 2>&1 || { cat "$tmp/lb"; fail "bench --model $f"; }
        for c in q k v o gate up down; do grep -q "^$c  *1 " "$tmp/lb" || fail "bench --model $f: class $c"; done
    done
    echo PASS
    exit 0
fi

# check --model: every distinct shape passes, matmul row and module row each
"$memra" check --model "$tmp/model.gguf" --json "$tmp/check.json" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "check --model gguf"; }
cat "$tmp/out"
[ "$(grep -c ' matmul .* PASS' "$tmp/out")" -eq 8 ] || fail "want 8 matmul rows passing"
grep -q '^16 passed, 0 failed' "$tmp/out" || fail "gguf: want 16 passed"
python3 - "$tmp/check.json" <<'PY' || fail "check receipt"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "memra-check" and d["version"] == 2 and d["failed"] == 0 and d["passed"] == 16, d
m = d["model"]
assert m["kind"] == "GGUF v3" and m["weights2d"] == 8 and len(m["shapes"]) == 8, m
s = {x["tensor"]: x for x in m["shapes"]}
assert s["blk.0.bf16.weight"]["op"] == "gemm_bf16" and s["blk.0.q4_k.weight"]["lane"] == "f16 mirror", s
assert all(r["result"] == "PASS" and r["hits"] > 0 for r in d["rows"])
PY
MEMRA_F16_BUDGET_MB=0 "$memra" check --model "$tmp/model.gguf" --m 3 >"$tmp/out0" 2>&1 || { cat "$tmp/out0"; fail "budget 0"; }
grep -q 'gemm_q8_0r  *host  *3 6 512 matmul .*PASS' "$tmp/out0" || fail "budget 0: Q8_0 matmul not on gemm_q8_0r"
grep -q 'gemm_q8_0r  *host  *3 6 512 vs q8_0 .*PASS' "$tmp/out0" || fail "budget 0: no records cross row"
for f in 'q4_k 3 8' 'q5_k 3 9' 'q6_k 3 10'; do
    grep -q "gemm_kr  *host  *$f 512 matmul .*PASS" "$tmp/out0" || fail "budget 0: $f matmul not on gemm_kr"
done
# MEMRA_W16=1 (the W16 operand on the host too): the quantised weights' matmul rows on gemm_w16, judged as the
# f16 mirror of the file's bytes, and the module rows gemm_f16's on that mirror
MEMRA_W16=1 MEMRA_F16_BUDGET_MB=0 "$memra" check --model "$tmp/model.gguf" --m 3 >"$tmp/outw" 2>&1 ||
    { cat "$tmp/outw"; fail "budget 0, MEMRA_W16=1"; }
for f in 'q8_0 3 6' 'q4_0 3 7' 'q4_k 3 8' 'q5_k 3 9' 'q6_k 3 10'; do
    set -- $f
    grep -q "lane 'w16'" "$tmp/outw" && grep -q "gemm_w16  *host  *$2 $3 512 matmul .*PASS" "$tmp/outw" ||
        { cat "$tmp/outw"; fail "MEMRA_W16=1: $1 matmul not on gemm_w16"; }
done
"$memra" check --model "$tmp/model.safetensors" >"$tmp/st" 2>&1 || { cat "$tmp/st"; fail "check --model safetensors"; }
grep -q 'gemm_fp8_blk  *host  *4 256 256 matmul .*PASS' "$tmp/st" || fail "block-128 FP8 matmul row"
grep -q 'gemm_fp8  *host  *4 256 256 .*PASS' "$tmp/st" || fail "per-tensor FP8 row"
"$memra" check --model "$tmp/model.safetensors.index.json" --device host >/dev/null 2>&1 || fail "check --model index"
# the injected fault fails every module row, on every lane
MEMRA_CHECK_INJECT_FAULT=1 "$memra" check --model "$tmp/model.safetensors" >"$tmp/inj" 2>/dev/null
rc=$?
cat "$tmp/inj"
[ $rc -eq 1 ] || fail "injected fault: exit $rc, want 1"
[ "$(grep -c 'FAIL (injected fault)' "$tmp/inj")" -eq 3 ] || fail "injected fault: want 3 failing module rows"
MEMRA_CHECK_INJECT_FAULT=1 MEMRA_F16_BUDGET_MB=0 "$memra" check --model "$tmp/model.gguf" >"$tmp/inj2" 2>/dev/null
[ $? -eq 1 ] || fail "injected fault (gguf, budget 0): want exit 1"
grep -q 'gemm_q8_0r .* vs q8_0 .*FAIL (injected fault)' "$tmp/inj2" || fail "injected fault: records cross row"
# 8 weights; Q8_0 and Q4_0 (its exact Q8_0 records) add a "vs q8_0" cross row each
[ "$(grep -c 'FAIL (injected fault)' "$tmp/inj2")" -eq 10 ] || fail "injected fault (gguf): want 10 failing rows"

# bench --model: per class rows, the ledger, the receipt's model section
"$memra" bench --model "$tmp/model.safetensors" --m 4 --reps 3 --json "$tmp/bench.json" >"$tmp/b" 2>&1 ||
    { cat "$tmp/b"; fail "bench --model"; }
cat "$tmp/b"
grep -q '^q  *1 .*host/gemm_fp8_blk x3' "$tmp/b" || fail "bench: class q on gemm_fp8_blk"
grep -q '^down  *1 .*host/gemm_fp8 x3' "$tmp/b" || fail "bench: class down on gemm_fp8"
grep -q '^total  *3 ' "$tmp/b" || fail "bench: total row"
grep -q 'host RSS before open' "$tmp/b" || fail "bench: RSS line"
python3 - "$tmp/bench.json" <<'PY' || fail "bench receipt"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "memra-bench" and d["version"] == 3 and d["mode"] == "model", d
m = d["model"]
assert m["kind"] == "safetensors" and m["projections"] == 3 and m["tensors"] == 6, m
r = m["rss"]
assert 0 < r["before_open"] <= r["peak"] and r["after_open"] > 0 and r["after_prepare"] > 0, r
assert m["operand_bytes"] >= m["file_bytes"] - 64 * 256, m
c = {s["shape"]: s for s in d["shapes"]}
assert set(c) == {"q", "up", "down", "total"}, c.keys()
assert c["q"]["arms"][0]["served"] == [{"op": "gemm_fp8_blk", "module": "host", "hits": 3}], c["q"]
assert len(c["total"]["arms"][0]["times_ms"]) == 3 and c["total"]["arms"][0]["median_ms"] > 0
PY
"$memra" bench --model "$tmp/model.gguf" --m 2 --reps 1 >"$tmp/b2" 2>&1 || { cat "$tmp/b2"; fail "bench --model gguf"; }
grep -q '^other  *8 .*host/gemm_bf16 x1' "$tmp/b2" || fail "bench gguf: other class"

# the embedding and the LM head are named and not timed; the 3D expert tensor is noted
"$memra" bench --model "$tmp/lm.gguf" --m 2 --reps 3 --json "$tmp/lm.json" >"$tmp/lm" 2>"$tmp/lm.err" ||
    { cat "$tmp/lm" "$tmp/lm.err"; fail "bench --model lm.gguf"; }
cat "$tmp/lm"
grep -q '1 2D projections' "$tmp/lm" || fail "lm.gguf: want 1 projection timed"
grep -q 'not timed: token_embd.weight (the token embedding' "$tmp/lm" || fail "lm.gguf: token_embd not named"
grep -q 'not timed: output.weight (the LM head' "$tmp/lm" || fail "lm.gguf: output not named"
grep -q '^total  *1 ' "$tmp/lm" || fail "lm.gguf: total over 1 projection"
grep -q "receipt written to $tmp/lm.json" "$tmp/lm.err" || fail "bench --json: where it wrote"
grep -q '\[3/3\] rep 3 of 1 projections' "$tmp/lm.err" || { cat "$tmp/lm.err"; fail "bench --model: progress lines on stderr"; }
"$memra" bench --model "$tmp/lm.gguf" --m 2 --reps 3 --quiet >/dev/null 2>"$tmp/lmq" || fail "bench --quiet"
! grep -q '\[1/3\]' "$tmp/lmq" || fail "--quiet: progress printed"
python3 - "$tmp/lm.json" <<'PY' || fail "lm receipt"
import json, sys
d = json.load(open(sys.argv[1]))
nt = {x["tensor"] for x in d["model"]["not_timed"]}
assert nt == {"token_embd.weight", "output.weight"}, nt
assert d["model"]["projections"] == 1, d["model"]
tot = [s for s in d["shapes"] if s["shape"] == "total"][0]["arms"][0]
assert tot["q1_ms"] <= tot["median_ms"] <= tot["q3_ms"], tot
PY
"$memra" model ls "$tmp/lm.gguf" >"$tmp/ls" 2>&1 || { cat "$tmp/ls"; fail "model ls lm.gguf"; }
grep -q 'blk.0.ffn_gate_exps.weight .*\[4 x 64 x 96\] .* experts' "$tmp/ls" || { cat "$tmp/ls"; fail "model ls: 3D class"; }
grep -q '3D: 4 experts of 64 x 96 (a MoE expert tensor)' "$tmp/ls" || fail "model ls: 3D note"
# --json FILE, --json=FILE and --json - (JSON on stdout, table on stderr) all write the receipt
"$memra" model ls "$tmp/lm.gguf" --json "$tmp/ls1.json" >"$tmp/ls1" || fail "model ls --json FILE"
"$memra" model ls "$tmp/lm.gguf" --json="$tmp/ls2.json" >/dev/null || fail "model ls --json=FILE"
"$memra" model ls "$tmp/lm.gguf" --json - >"$tmp/ls3.json" 2>/dev/null || fail "model ls --json -"
grep -q 'token_embd.weight' "$tmp/ls1" || fail "model ls --json FILE: no table on stdout"
for j in ls1 ls2 ls3; do
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-model-ls" and d["version"]==2; t={x["name"]: x for x in d["tensors"]}; assert t["blk.0.ffn_gate_exps.weight"]["class"]=="experts" and "MoE" in t["blk.0.ffn_gate_exps.weight"]["note"]' "$tmp/$j.json" ||
        fail "model ls receipt $j"
done
# a file that is neither GGUF nor safetensors is named so
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$tmp/passwd"
"$memra" model ls "$tmp/passwd" >"$tmp/pw" 2>&1
[ $? -eq 1 ] || fail "model ls passwd: want exit 1"
grep -q 'neither a GGUF file .* nor a safetensors file' "$tmp/pw" || { cat "$tmp/pw"; fail "model ls passwd: message"; }

# bad file: exit 1 with the byte; bad options: 2; --help: 0
for cmd in check bench; do
    "$memra" $cmd --model "$tmp/bad.gguf" >"$tmp/bad" 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "$cmd bad file: exit $rc, want 1"
    grep -q 'bad.gguf: byte 4: unknown GGUF version 9' "$tmp/bad" || { cat "$tmp/bad"; fail "$cmd bad file message"; }
    "$memra" $cmd --model "$tmp/nosuch.gguf" >/dev/null 2>&1
    [ $? -eq 1 ] || fail "$cmd missing file: want exit 1"
    "$memra" $cmd --model >/dev/null 2>&1
    [ $? -eq 2 ] || fail "$cmd --model without a value: want 2"
    "$memra" $cmd --model "$tmp/model.gguf" --m 0 >/dev/null 2>&1
    [ $? -eq 2 ] || fail "$cmd --m 0: want 2"
    "$memra" $cmd --help | grep -q -- '--model FILE' || fail "$cmd --help"
done
"$memra" check --m 4 >/dev/null 2>&1
[ $? -eq 2 ] || fail "check --m without --model: want 2"
"$memra" check --model "$tmp/model.gguf" --op gemm_f16 >/dev/null 2>&1
[ $? -eq 2 ] || fail "check --model --op: want 2"
"$memra" bench --model "$tmp/model.gguf" --vs host host --op gemm_f16 >/dev/null 2>&1
[ $? -eq 2 ] || fail "bench --model --vs: want 2"
"$memra" bench --model "$tmp/model.gguf" 27b >/dev/null 2>&1
[ $? -eq 2 ] || fail "bench --model with a sheet: want 2"

echo PASS
