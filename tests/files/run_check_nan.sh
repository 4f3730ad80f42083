#!/bin/sh
# memra check --model on a weight holding a NaN (issue 27): the failing rows
# name the module (never "(null)") and say the reference itself is NaN (never
# "want -nan"). usage: run_check_nan.sh MEMRA TEST_FILES
memra="$1"
tf="$2"
. "$(dirname "$0")/model_files_lib.sh"
"$memra" check --model "$tmp/nan.gguf" --device host >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ $rc -eq 1 ] || fail "exit $rc, want 1 (the NaN weight fails)"
grep -q "(null)" "$tmp/out" && fail "a row names the module (null)"
grep -q "want -nan\|want nan" "$tmp/out" && fail "a NaN reference printed as a wanted value"
grep -q "the reference itself is NaN" "$tmp/out" || fail "the NaN reference is not said"
echo ok
