#!/bin/sh
# The memra program's command line, as a user types it.
# usage: cli_test.sh MEMRA_BINARY CASE [TMPDIR]
#   help           every command and subcommand takes -h and --help (and `memra help CMD`):
#                  exit 0, "usage:" on stdout, nothing on stderr even with MEMRA_LOG=debug
#                  (so the runtime was never opened)
#   jit_clear_help `memra jit clear --help` (and -h, `memra help jit clear`, a bad option)
#                  leaves a planted, valid cache entry in place; plain `jit clear` removes it
#   jit_nosub      `memra jit` alone: usage on stderr, exit 2, the runtime never opened
#   opt_value      every option that takes a value works as --opt=value, and as --opt value
#   bad_option     unknown options and bad values exit 2, a message on stderr, nothing done
#   json_stdout    `--json -`: the receipt on stdout parses, the table goes to stderr
#   json_unwritable an unwritable --json target fails before any work (exit 2, a message)
#   dev_full       stdout or a receipt on /dev/full: a non-zero exit and the error named
memra="$1"
case_="$2"
tmp="${3:-${TMPDIR:-/tmp}}/memra_cli_test.$$"
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# The host device only, a cache of our own, nothing from the caller's environment.
export MEMRA_CACHE_DIR="$tmp/cache"
unset MEMRA_CHECK_INJECT_FAULT MEMRA_STATS
fast="--device host --reps 1 --m 2"

# run EXPECTED_RC ARGS...: stdout in $tmp/out, stderr in $tmp/err
run() {
    want=$1
    shift
    MEMRA_LOG=debug "$memra" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$want" ] || { cat "$tmp/out" "$tmp/err"; fail "memra $*: exit $got, want $want"; }
}

# The commands and subcommands, one per line.
commands='info
check
bench
bench accprobe
bench gemm_f16
jit
jit ls
jit warm
jit clear
tune
--version
version'

case "$case_" in
help)
    echo "$commands" | while read -r cmd; do
        for h in -h --help; do
            # shellcheck disable=SC2086
            run 0 $cmd $h
            [ -s "$tmp/err" ] && { cat "$tmp/err"; fail "memra $cmd $h wrote to stderr (the runtime was opened?)"; }
            grep -q '^usage: memra' "$tmp/out" || fail "memra $cmd $h: no usage on stdout"
            # help speaks the user's words: no project-internal references
            grep -Eiq "issue [0-9]+|\bslab\b|\brecords\b" "$tmp/out" &&
                fail "memra $cmd $h: internal words in the help: $(grep -Eio "issue [0-9]+|\bslab\b|\brecords\b" "$tmp/out" | head -3 | tr '\n' ' ')"
        done
        cp "$tmp/out" "$tmp/want"
        # shellcheck disable=SC2086
        set -- $cmd
        [ "$1" = "bench" ] && [ "$#" -eq 2 ] && [ "$2" != "accprobe" ] && continue # bench OP: help is bench's
        # shellcheck disable=SC2086
        run 0 help $cmd
        cmp -s "$tmp/out" "$tmp/want" || fail "memra help $cmd differs from memra $cmd --help"
    done || exit 1
    run 0 --help
    grep -q '^usage: memra' "$tmp/out" || fail "memra --help: no usage"
    run 0 help
    ;;
jit_clear_help)
    dir="$MEMRA_CACHE_DIR/v1"
    mkdir -p "$dir" && chmod 700 "$MEMRA_CACHE_DIR" "$dir" || fail "cannot make $dir"
    # A valid entry (jit/cache.c's format): magic, version 1, header 104, target,
    # key, payload size, SHA-256 of the payload, the payload.
    key=$(python3 -c 'print("ab" * 32)')
    python3 - "$dir/$key.cubin" "$key" <<'PY' || fail "cannot plant the entry"
import hashlib, struct, sys
path, key = sys.argv[1], bytes.fromhex(sys.argv[2])
payload = b"\x7fELF planted cubin bytes " * 8
hdr = b"MEMRAJIT" + struct.pack("<II", 1, 104) + b"sm_90a".ljust(16, b"\0") + key
hdr += struct.pack("<Q", len(payload)) + hashlib.sha256(payload).digest()
assert len(hdr) == 104
open(path, "wb").write(hdr + payload)
PY
    chmod 600 "$dir/$key.cubin"
    cp "$dir/$key.cubin" "$tmp/planted"
    run 0 jit ls
    grep -q "^${key%"${key#????????????????}"} .*sm_90a" "$tmp/out" || { cat "$tmp/out"; fail "jit ls does not list the planted entry"; }
    grep -q 'bad header' "$tmp/out" && fail "the planted entry is not valid-looking"
    for args in "jit clear --help" "jit clear -h" "help jit clear" "jit clear --all" "jit clear now"; do
        case "$args" in *--all|*now) want=2 ;; *) want=0 ;; esac
        # shellcheck disable=SC2086
        run $want $args
        cmp -s "$dir/$key.cubin" "$tmp/planted" || fail "memra $args touched the cache entry"
    done
    run 0 jit clear
    [ -e "$dir/$key.cubin" ] && fail "plain 'memra jit clear' left the entry (the control failed)"
    grep -q 'removed 1 entries' "$tmp/out" || fail "jit clear: $(cat "$tmp/out")"
    ;;
jit_nosub)
    run 2 jit
    [ -s "$tmp/out" ] && fail "memra jit wrote to stdout"
    grep -q '^usage: memra jit' "$tmp/err" || fail "memra jit: no usage on stderr"
    grep -q 'memra\[' "$tmp/err" && fail "memra jit opened the runtime"
    run 2 jit nosuch
    grep -q 'memra\[' "$tmp/err" && fail "memra jit nosuch opened the runtime"
    grep -q "unknown subcommand 'nosuch'" "$tmp/err" || fail "no message naming the subcommand"
    ;;
opt_value)
    run 0 check --device=host --op=scale --module=host --quick --seed=7 --json="$tmp/c.json"
    grep -q 'seed 7 ' "$tmp/out" || fail "--seed=7 not taken"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["seed"]==7 and d["passed"]>0 and {r["op"] for r in d["rows"]}=={"scale"}, d' \
        "$tmp/c.json" || fail "check --op=scale: rows other than scale, or no receipt"
    run 0 check --device host --op scale --module host --quick --seed 8 --json "$tmp/c2.json"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["seed"]==8' "$tmp/c2.json" || fail "--seed 8"
    run 0 bench --device=host --reps=1 --m=2 --warmup=0 --batch=1 --seed=3 --sheet=1p7b --json="$tmp/b.json"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["m"]==2 and d["reps"]==1 and d["sheet"]=="1p7b"' \
        "$tmp/b.json" || fail "bench --opt=value receipt"
    # the receipt's settings: the knobs away from their defaults, each with its source
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["settings"]; assert isinstance(s, dict) and all(
        v["source"] in ("environment", "option") and isinstance(v["value"], str) for v in s.values()), s' \
        "$tmp/b.json" || fail "bench receipt settings"
    run 0 bench gemm_f16 --device=host --reps=1 --m=3 --json="$tmp/l.json"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["mode"]=="lane" and d["m"]==3' "$tmp/l.json" ||
        fail "bench OP --opt=value"
    run 0 bench --vs=host,host --op=gemm_q8_0 --device=host --reps=1 --m=2
    grep -q 'race gemm_q8_0: host vs host' "$tmp/out" || fail "--vs=host,host"
    run 0 bench --vs host host --op gemm_q8_0 $fast
    grep -q 'race gemm_q8_0: host vs host' "$tmp/out" || fail "--vs host host"
    run 0 bench accprobe --m=2 --reps=1 --dist=mid --device=host --module=host --seed=5 --sheet=1p7b --json="$tmp/a.json"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["m"]==2 and d["reps"]==1 and d["dist"]=="mid" and d["seed"]==5' \
        "$tmp/a.json" || fail "accprobe --opt=value receipt"
    run 0 bench accprobe 2 1 1p7b --dist mid --json "$tmp/a2.json"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["m"]==2 and d["reps"]==1' "$tmp/a2.json" ||
        fail "accprobe positional m reps"
    run 0 info --json="$tmp/i.json"
    grep -q '^devices:' "$tmp/out" || fail "info --json=FILE: no table on stdout"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "modules" in d' "$tmp/i.json" || fail "info --json=FILE"
    ;;
bad_option)
    while read -r args; do
        # shellcheck disable=SC2086
        run 2 $args
        [ -s "$tmp/err" ] || fail "memra $args: exit 2 without a message"
        grep -q 'memra\[' "$tmp/err" && fail "memra $args opened the runtime before rejecting its arguments"
        [ -s "$tmp/out" ] && fail "memra $args wrote to stdout"
    done <<EOF2
--nosuch
nosuch
info --nosuch
info --json=a extra
check --nosuch
check -x
check --quick=1
check --device=abc
check --device
check --seed=-1
check --seed=12x
check --op=nosuch
check extra
bench --nosuch
bench --m=abc
bench --m=0
bench --reps=99999999
bench --batch=0
bench --sheet=7b
bench 7b
bench --vs=onlyone --op gemm_f16
bench --vs --op gemm_f16 a
bench --op gemm_f16 --op gemm_fp8
bench gemm_f16 --nosuch
bench accprobe --nosuch
bench accprobe --dist=x
bench accprobe --m=99999999
bench accprobe --sheet=7b
bench accprobe 1 2 3
jit --nosuch
jit ls --nosuch
jit warm --nosuch
jit clear --nosuch
jit ls extra
--version --nosuch
EOF2
    # Errors found after the runtime is open still exit 2 and name what is wrong.
    run 2 check --module=nosuch
    grep -q "nosuch" "$tmp/err" || fail "check --module=nosuch: the message does not name it"
    grep -q "no module of that name was found" "$tmp/err" || fail "check --module=nosuch: not 'no module of that name'"
    # a module that is present but refused says so, with the reason
    refused=$("$memra" info --json 2>/dev/null | python3 -c 'import json,sys; print(next((m["name"] for m in json.load(sys.stdin)["modules"] if not m["loaded"] and "/" not in m["name"]), ""))')
    if [ -n "$refused" ]; then
        run 2 check --module "$refused"
        grep -q "module $refused: the module was found (.*) but refused: " "$tmp/err" || { cat "$tmp/err"; fail "check --module $refused: not named refused"; }
    fi
    run 0 check --device host --op scale --quick
    grep -q '^memra check: \[1/1\] \[.*\] host host scale' "$tmp/err" || { cat "$tmp/err"; fail "check: progress line on stderr"; }
    run 0 check --device host --op scale --quick --quiet
    grep -q '\[1/1\]' "$tmp/err" && fail "check --quiet: progress printed"
    run 2 check --device=999
    grep -q "no device 999" "$tmp/err" || fail "check --device=999"
    run 2 bench --device=999
    run 2 bench accprobe --device=999
    ;;
json_stdout)
    run 0 check --device host --op scale --quick --json -
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-check" and d["passed"]>0' "$tmp/out" ||
        fail "check --json -: stdout is not the receipt"
    grep -q 'passed, 0 failed' "$tmp/err" || fail "check --json -: the table is not on stderr"
    run 0 bench $fast --json -
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-bench" and len(d["shapes"])==4' "$tmp/out" ||
        fail "bench --json -: stdout is not the receipt"
    grep -q '^geometric mean' "$tmp/err" || fail "bench --json -: the table is not on stderr"
    run 0 bench accprobe 2 1 --json=-
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-bench-accprobe" and d["complete"]' "$tmp/out" ||
        fail "accprobe --json -: stdout is not the receipt"
    grep -q 'geometric mean f32acc/s32acc' "$tmp/err" || fail "accprobe --json -: the table is not on stderr"
    run 0 info --json -
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "devices" in d' "$tmp/out" || fail "info --json -"
    grep -q '^devices:' "$tmp/err" || fail "info --json -: the table is not on stderr"
    run 0 info --json
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-info" and d["version"]>=1' "$tmp/out" ||
        fail "info --json: stdout is not a receipt with format and version"
    run 0 jit ls --json -
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="memra-jit-ls" and d["version"]==1 and "entries" in d' "$tmp/out" ||
        fail "jit ls --json -: stdout is not the receipt"
    grep -q 'entries$' "$tmp/err" || fail "jit ls --json -: the table is not on stderr"
    run 0 jit ls --json="$tmp/jit.json"
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["format"]=="memra-jit-ls"' "$tmp/jit.json" || fail "jit ls --json=FILE"
    ;;
json_unwritable)
    mkdir -p "$tmp/dir"
    for target in "$tmp/no/such/folder/r.json" "$tmp/dir"; do
        for args in "check --device host --quick" "bench $fast" "bench accprobe 2 1" "bench gemm_f16 $fast" "info"; do
            # shellcheck disable=SC2086
            run 2 $args --json "$target"
            grep -q "cannot write the receipt --json $target" "$tmp/err" || { cat "$tmp/err"; fail "memra $args: no message naming $target"; }
            grep -q 'memra\[' "$tmp/err" && fail "memra $args --json $target: work started before the target was checked"
        done
    done
    ;;
compare)
    # bench --compare OLD.json: per (shape, arm) old and new medians, speed, noise, a verdict
    run 0 bench --device host --reps 3 --m 2 --json "$tmp/old.json"
    grep -Eq '^2048->2048 +f16 +[0-9.]+ +\+-[0-9.]+% +[0-9.]+ [kMGT]?FLOP/s' "$tmp/out" || { cat "$tmp/out"; fail "bench row: median, spread, rate"; }
    grep -q "^memra bench: receipt written to $tmp/old.json" "$tmp/err" || fail "bench --json: where it wrote"
    run 0 check --device host --op scale --quick --json "$tmp/c.json"
    grep -q "^memra check: receipt written to $tmp/c.json" "$tmp/err" || fail "check --json: where it wrote"
    run 0 bench --device host --reps 3 --m 2 --compare "$tmp/old.json" --quiet
    grep -q '^compared with .*old.json' "$tmp/out" || { cat "$tmp/out"; fail "--compare: no comparison"; }
    grep -Eq '^2048->2048 +f16 +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+% +(faster|slower|within noise)$' "$tmp/out" ||
        { cat "$tmp/out"; fail "--compare: row"; }
    grep -q '^32 of 32 arms matched' "$tmp/out" || fail "--compare: not every arm matched"
    run 0 bench gemm_bf16 --device host --reps 2 --m 2 --json "$tmp/lane.json"
    run 0 bench gemm_bf16 --device host --reps 2 --m 2 --compare "$tmp/lane.json"
    grep -q '^4 of 4 arms matched' "$tmp/out" || { cat "$tmp/out"; fail "--compare of a lane"; }
    echo '{"format":"memra-check","version":2}' >"$tmp/chk.json"
    run 2 bench $fast --compare "$tmp/chk.json"
    grep -q 'not a memra-bench receipt (format memra-check)' "$tmp/err" || fail "--compare of a check receipt"
    echo 'nope' >"$tmp/bad.json"
    run 2 bench $fast --compare "$tmp/bad.json"
    grep -q 'not JSON (byte 0' "$tmp/err" || fail "--compare of a non-JSON file"
    run 2 bench $fast --compare "$tmp/nosuch.json"
    # every GEMM op can be benched on the host, two modules raced on gemm_bf16 and gemm_kr
    for op in gemm_f16 gemm_bf16 gemm_fp8 gemm_fp8_blk gemm_q8_0 gemm_q8_0r gemm_kr; do
        run 0 bench "$op" --device host --reps 1 --m 2 --quiet
        grep -q "^geometric mean over 4 shapes: [0-9.]* [kMGT]\?FLOP/s (host)" "$tmp/out" || { cat "$tmp/out" "$tmp/err"; fail "bench $op"; }
    done
    run 2 bench scale --vs nosuch host --device host
    grep -q "no module named 'nosuch' was found" "$tmp/err" || { cat "$tmp/err"; fail "bench --vs nosuch: message"; }
    refused=$("$memra" info --json 2>/dev/null | python3 -c 'import json,sys; print(next((m["name"] for m in json.load(sys.stdin)["modules"] if not m["loaded"] and "/" not in m["name"]), ""))')
    if [ -n "$refused" ]; then
        run 2 bench scale --vs "$refused" host --device host
        grep -q "module '$refused' (.*) was refused: " "$tmp/err" || { cat "$tmp/err"; fail "bench --vs $refused: not named refused"; }
    fi
    run 0 bench --op gemm_kr --vs host host --device host --reps 1 --m 2
    grep -q '^geometric mean of host ms / host ms' "$tmp/out" || fail "bench --op gemm_kr --vs host host"
    run 0 bench scale --device host --reps 2 --m 2
    # a byte rate, scaled by magnitude (GB/s here; MB/s on a slow build such as ThreadSanitizer's), never FLOP/s
    grep -qE '[0-9.]+ [KMGT]?B/s' "$tmp/out" || { cat "$tmp/out"; fail "bench scale: no byte rate"; }
    ! grep -q 'FLOP/s' "$tmp/out" || { cat "$tmp/out"; fail "bench scale: a FLOP rate for a non-GEMM lane"; }
    # on a terminal the progress is one line rewritten in place (util-linux script gives a tty)
    if script -qc true /dev/null >/dev/null 2>&1; then
        script -qc "'$memra' bench gemm_bf16 --device host --reps 2 --m 2 >/dev/null" /dev/null >"$tmp/tty" 2>&1
        grep -q 'memra bench: \[8/8\] 6144->2048 rep 2' "$tmp/tty" || { cat -v "$tmp/tty"; fail "tty: no progress"; }
        [ "$(grep -c 'memra bench: \[' "$tmp/tty")" -eq 1 ] || { cat -v "$tmp/tty"; fail "tty: progress not rewritten in place"; }
        printf '\033[K' >"$tmp/el"
        grep -qF "$(cat "$tmp/el")" "$tmp/tty" || fail "tty: the line is not cleared"
    fi
    ;;
dev_full)
    [ -c /dev/full ] || { echo "no /dev/full here: skipped"; exit 77; }
    for args in "info" "info --json" "jit ls" "--version" "check --device host --op scale --quick" "bench accprobe 2 1" "bench $fast"; do
        # shellcheck disable=SC2086
        "$memra" $args >/dev/full 2>"$tmp/err"
        rc=$?
        [ $rc -ne 0 ] || fail "memra $args >/dev/full: exit 0"
        # the reason is the system's (ENOSPC on Linux; a sandbox's /dev/full may answer EIO)
        grep -q '^memra: writing stdout: [A-Z]' "$tmp/err" || { cat "$tmp/err"; fail "memra $args >/dev/full: no message"; }
    done
    for args in "check --device host --op scale --quick" "bench accprobe 2 1" "bench $fast" "info"; do
        # shellcheck disable=SC2086
        "$memra" $args --json /dev/full >/dev/null 2>"$tmp/err"
        rc=$?
        [ $rc -ne 0 ] || fail "memra $args --json /dev/full: exit 0 (the receipt was lost)"
        grep -q 'writing the receipt /dev/full: [A-Z]' "$tmp/err" || { cat "$tmp/err"; fail "memra $args --json /dev/full: no message"; }
    done
    ;;
*)
    fail "unknown case $case_"
    ;;
esac
echo ok
