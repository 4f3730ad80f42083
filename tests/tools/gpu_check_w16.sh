#!/bin/sh
# gemm_w16 (the w16 module's fused-dequant f16 tile, cc 9.0) on the GPU through memra check, under its
# default plan (MEMRA_W16_SPLIT=auto = waves: w16_ops.c plan_by_waves) and under MEMRA_W16_SPLIT=fill (split
# until every SM has a CTA, the plan before run aa). The waves plans the check's GPU rows reach: the 1000 x 2816 rows at m = 1100 take the 256-token tile in 3 slices for the K-quants, the
# 1024 x 5120 rows at m = 512 4 slices, each judged against the host's reference in gemm_f16's band. Each
# run must pass every row and count w16's own launches in the ledger. Skipped (77) without a cc 9.0 device.
# usage: gpu_check_w16.sh MEMRA
memra=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }
"$memra" info --json >"$out" 2>/dev/null || fail "memra info --json"
if ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(x["profile"]=="sm90" for x in d["devices"]) else 1)' "$out"; then
    echo "SKIP: no cc 9.0 device (gemm_w16's tile is sm_90a's)"
    exit 77
fi
dev=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(next(x["index"] for x in d["devices"] if x["profile"]=="sm90"))' "$out")
for v in auto fill; do
    MEMRA_W16=auto MEMRA_W16_SPLIT=$v "$memra" check --device "$dev" --op gemm_w16 --module w16 >"$out" 2>&1 ||
        fail "MEMRA_W16_SPLIT=$v: memra check exit $?"
    grep -Eq '^[1-9][0-9]* passed, 0 failed$' "$out" || fail "MEMRA_W16_SPLIT=$v: not every row passed"
    grep -q 'FAIL\|DECLINED' "$out" && fail "MEMRA_W16_SPLIT=$v: a row failed or was declined"
    grep -Eq "^ledger \[$dev\] .* w16: gemm_w16=[1-9]" "$out" || fail "MEMRA_W16_SPLIT=$v: no gemm_w16 launch of w16 in the ledger"
    echo "MEMRA_W16_SPLIT=$v: $(tail -1 "$out")"
done
echo PASS
