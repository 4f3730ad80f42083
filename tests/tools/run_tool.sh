#!/bin/sh
# memra check / bench as a user runs them. usage: run_tool.sh MEMRA_BINARY CASE [TMPDIR]
#   check_host     `memra check` on the host device exits 0 and prints "0 failed"
#   check_badop    `memra check --op nosuch` exits 2
#   check_fault    with MEMRA_CHECK_INJECT_FAULT=1 it exits 1, and every injected row FAILs;
#                  where the host module has repack_q8_0 / gemm_q8_0r, their rows (and
#                  gemm_q8_0r's cross-check against gemm_q8_0) are among the injected
#   bench_host     `memra bench --reps 1 --m 2` on the host exits 0 and its receipt parses; with the
#                  route (MEMRA_FLOOR_F16_M=1) the floor's arms are valid and say so; with INVALID arms
#                  (MEMRA_DISABLE=gemm_kr,gemm_q8_0r) it exits 1 and its receipt still parses
#   accprobe_host  `memra bench accprobe` on the first device exits 0 with a receipt
memra="$1"
case_="$2"
tmp="${3:-${TMPDIR:-/tmp}}/memra_tool_test.$$"
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
case "$case_" in
check_host)
    "$memra" check --device host --json "$tmp/check.json" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out" "$tmp/err"
    [ $rc -eq 0 ] || fail "exit $rc, want 0"
    grep -qx '[0-9][0-9]* passed, 0 failed' "$tmp/out" || fail "no '0 failed' summary line"
    grep -q 'accprobe.*not checked (time only)' "$tmp/out" || fail "accprobe not listed as time only"
    if grep -q '^ledger .*gemm_q8_0r=' "$tmp/out"; then
        grep -q ' gemm_q8_0r .* vs q8_0 .* PASS' "$tmp/out" || fail "no gemm_q8_0r cross-check row"
    fi
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-check" and d["failed"]==0' \
        "$tmp/check.json" || fail "check JSON does not parse"
    ;;
check_badop)
    "$memra" check --op nosuch
    rc=$?
    [ $rc -eq 2 ] || fail "exit $rc, want 2"
    "$memra" check --device 999
    rc=$?
    [ $rc -eq 2 ] || fail "--device 999: exit $rc, want 2"
    ;;
check_fault)
    MEMRA_CHECK_INJECT_FAULT=1 "$memra" check --device host >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 1 ] || fail "exit $rc with an injected fault, want 1"
    n=$(grep -c 'injected fault' "$tmp/out")
    [ "$n" -ge 10 ] || fail "only $n injected rows, want one per checked op (10)"
    if grep 'injected fault' "$tmp/out" | grep -v ' FAIL (injected fault)'; then fail "an injected fault passed"; fi
    grep -qx '[0-9][0-9]* passed, '"$n"' failed' "$tmp/out" || fail "failures other than the injected ones"
    # the ledger line lists the ops the host module provides
    if grep -q '^ledger .*repack_q8_0=' "$tmp/out"; then
        grep -q ' repack_q8_0 .* FAIL (injected fault)' "$tmp/out" || fail "no injected repack_q8_0 row"
    fi
    if grep -q '^ledger .*gemm_q8_0r=' "$tmp/out"; then
        grep ' gemm_q8_0r .* FAIL (injected fault)' "$tmp/out" | grep -vq ' vs q8_0 ' || fail "no injected gemm_q8_0r row"
        grep -q ' gemm_q8_0r .* vs q8_0 .* FAIL (injected fault)' "$tmp/out" ||
            fail "the injected gemm_q8_0r fault passed its cross-check against gemm_q8_0"
    fi
    ;;
bench_host)
    "$memra" bench --device host --reps 1 --m 2 --json "$tmp/bench.json"
    rc=$?
    [ $rc -eq 0 ] || fail "exit $rc, want 0"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-bench" and d["version"]==3 and len(d["shapes"])==4 and d["commit"] and d["host"] and d["clocks"]["timer"]=="monotonic"' \
        "$tmp/bench.json" || fail "the receipt does not parse"
    # the mmq arm names the GEMM that served it; the split times gemm_q8_0r on
    # records wherever the device has it, beside gemm_q8_0 on the blocks
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["invalid_arms"] == [], d["invalid_arms"]
for s in d["shapes"]:
    a = [x for x in s["arms"] if x["arm"] == "mmq"][0]
    assert a["valid"] and a["op"] in ("gemm_q8_0r", "gemm_q8_0"), a
    assert any(h["op"] == a["op"] and h["hits"] > 0 for h in a["served"]), a
    sp = s["mmq_split"]
    assert sp["skipped"] is None, sp
    for col, op in (("gemm", "gemm_q8_0"), ("records_gemm", "gemm_q8_0r")):
        if sp[col.replace("_gemm", "") + "_module"] is not None:
            assert len(sp[col + "_ms"]) == d["reps"] and sp[col + "_hits"] > 0, (col, sp)
        else:
            assert sp[col.replace("_gemm", "") + "_skipped"], (col, sp)
    if sp["records_module"] is not None and sp["gemm_module"] is not None:
        assert sp["records_over_blocks"] > 0, sp
' "$tmp/bench.json" || fail "the mmq arm or the mmq split is not in the receipt as documented"
    # the route (MEMRA_FLOOR_F16_M=1: the floor's arms take dequant_kr_f16 + gemm_f16 from 1 token): exit 0,
    # every arm valid, the floor arms' op dequant_kr_f16 and their notes naming the route
    MEMRA_FLOOR_F16_M=1 "$memra" bench --device host --reps 1 --m 2 --json "$tmp/bench_route.json" >"$tmp/out_route" 2>&1
    rc=$?
    [ $rc -eq 0 ] || fail "the route's arms: exit $rc, want 0"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert not d.get("invalid_arms"), d.get("invalid_arms")
for s in d["shapes"]:
    for a in s["arms"]:
        if a["arm"] in ("mmq", "q4_0", "q4_k", "q5_k", "q6_k"):
            assert a["valid"] and a["op"] == "dequant_kr_f16" and "the route from 1 tokens" in a["note"], a
' "$tmp/bench_route.json" || fail "the route's arms are not in the receipt as documented"
    # INVALID arms (no gemm_kr or gemm_q8_0r lane: the K-quant and Q4_0 arms fall to the per-call dequantisation):
    # exit 1, and the receipt whole, its invalid arms listed with notes saying why
    MEMRA_DISABLE=gemm_kr,gemm_q8_0r "$memra" bench --device host --reps 1 --m 2 --json "$tmp/bench_inv.json" \
        >"$tmp/out_inv" 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "INVALID arms: exit $rc, want 1"
    grep -q "incomplete" "$tmp/out_inv" && fail "a whole receipt with INVALID arms called incomplete"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert sorted(d["invalid_arms"]) == ["q4_0", "q4_k", "q5_k", "q6_k"], d["invalid_arms"]
for s in d["shapes"]:
    for a in s["arms"]:
        if a["arm"] in d["invalid_arms"]:
            assert not a["valid"] and "INVALID" in a["note"] and "dequant" in a["note"], a["note"]
' "$tmp/bench_inv.json" || fail "the receipt with INVALID arms does not parse as documented"
    "$memra" bench --device host --reps 1 --m 2 --vs host host --op gemm_q8_0 || fail "--vs host host"
    "$memra" bench --vs host --op gemm_f16
    [ $? -eq 2 ] || fail "incomplete --vs is not a usage error"
    ;;
accprobe_host)
    "$memra" bench accprobe 2 1 --device 0 --dist mid --json "$tmp/ap.json" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "exit $rc, want 0"
    grep -q 'geometric mean f32acc/s32acc' "$tmp/out" || fail "no geometric mean line"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-bench-accprobe" and d["complete"] and d["ledger_hits"]>0' \
        "$tmp/ap.json" || fail "the accprobe receipt does not parse"
    "$memra" bench accprobe --dist nosuch
    [ $? -eq 2 ] || fail "--dist nosuch is not a usage error"
    ;;
*)
    fail "unknown case $case_"
    ;;
esac
echo ok
