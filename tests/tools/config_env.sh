#!/bin/sh
# The configuration layer as a user meets it: bad values stop `memra info`
# with the variable and the value named; a prefer entry naming a module that is
# not loaded is a warning (stderr and the table); the table shows each value's
# source. usage: config_env.sh <memra>
memra=$1
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }

expect_bad() { # VAR VALUE WORD...
    var=$1 val=$2
    shift 2
    if env "$var=$val" "$memra" info >"$out" 2>"$err"; then fail "$var=$val accepted"; fi
    grep -q "$var=$val" "$err" || fail "$var=$val: the message does not name the variable and the value"
    for w in "$@"; do grep -q -- "$w" "$err" || fail "$var=$val: no '$w' in the message"; done
    echo "ok: $var=$val refused: $(head -1 "$err")"
}
expect_bad MEMRA_F16_BUDGET_MB abc "expected an integer"
expect_bad MEMRA_F16_BUDGET_MB -5 "expected an integer"
expect_bad MEMRA_LOG verbose "error|warn|info|debug"
expect_bad MEMRA_ARCH sm77 "sm90|sm120|cuda|host"
expect_bad MEMRA_MMQ_BM 12x "expected an integer"
expect_bad MEMRA_FP8BLK_TILE 128 "BMxBN"
expect_bad MEMRA_STATS yes "0 or 1"
expect_bad MEMRA_PREFER nosuchop=host "not an op"

# A module that is not loaded: a warning, and the run goes on.
MEMRA_ARCH=host MEMRA_PREFER=gemm_f16=nosuchmod "$memra" info >"$out" 2>"$err" || fail "prefer of an unknown module failed the run"
grep -q "nosuchmod.*not loaded" "$err" || fail "no warning on stderr for a module that is not loaded"
grep -q "warning:.*nosuchmod.*not loaded" "$out" || fail "no warning in memra info's table"
grep -Eq "^  MEMRA_PREFER +gemm_f16=nosuchmod +environment" "$out" || fail "MEMRA_PREFER's source is not 'environment'"
grep -Eq "^  MEMRA_STATS +0 +default" "$out" || fail "MEMRA_STATS is not shown at its default"
echo "ok: prefer of a module not loaded warns (stderr and table); sources shown"

# An unknown MEMRA_* variable: a warning, shown in the table.
MEMRA_ARCH=host MEMRA_NO_SUCH_KNOB=1 "$memra" info >"$out" 2>"$err" || fail "an unknown variable failed the run"
grep -q "MEMRA_NO_SUCH_KNOB=1.*no knob" "$err" || fail "no warning for an unknown variable"
grep -Eq "^  MEMRA_NO_SUCH_KNOB +1 +environment +UNKNOWN" "$out" || fail "the unknown variable is not in the table"
echo "ok: unknown variable warned and listed"

# --json carries the table.
MEMRA_ARCH=host MEMRA_HOST_THREADS=3 "$memra" info --json >"$out" 2>"$err" || fail "info --json"
grep -q '"name":"MEMRA_HOST_THREADS","value":"3","source":"environment"' "$out" || fail "--json lacks the knob and its source"
grep -q '"config_warnings":\[' "$out" || fail "--json lacks config_warnings"
echo "ok: --json"
