#!/bin/sh
# MEMRA_ARCH=<profile> when no CUDA device is there: the forcing matches no
# device, and memra says so (a warning on stderr and in memra info's
# configuration warnings) instead of exiting 0 in silence. Skipped (77) where
# a CUDA device is present (there the profile is forced on it).
# usage: forced_profile.sh MEMRA
memra=$1
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*"; cat "$out" "$err"; exit 1; }
"$memra" info --json >"$out" 2>/dev/null || fail "memra info --json"
if ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if all(x["profile"]=="host" for x in d["devices"]) else 1)' "$out"; then
    echo "SKIP: a CUDA device is present (MEMRA_ARCH forces its profile there)"
    exit 77
fi
for p in sm90 sm120 cuda; do
    MEMRA_ARCH=$p "$memra" info >"$out" 2>"$err" || fail "MEMRA_ARCH=$p memra info exit $?"
    grep -q "memra\[warn\] config: MEMRA_ARCH=$p (environment) matches no device: there is no CUDA device" "$err" ||
        fail "MEMRA_ARCH=$p: no warning on stderr"
    grep -q "warning: MEMRA_ARCH=$p (environment) matches no device" "$out" || fail "MEMRA_ARCH=$p: not among info's warnings"
done
MEMRA_ARCH=host "$memra" info >"$out" 2>"$err" || fail "MEMRA_ARCH=host"
grep -q "matches no device" "$err" && fail "MEMRA_ARCH=host warned"
echo PASS
