#!/bin/sh
# memra tune on the host device, as a user runs it: the GEMM test modules
# raced for gemm_bf16 at two m values, the winners written to the tuning file
# (magic, version, checksum), shown by memra info with their source, consulted
# at the next open; usage errors exit 2; --clear removes the file.
# usage: tune_test.sh MEMRA GEMM_MODULE_DIR WORKDIR
set -u
memra=$1 mods=$2 work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "$work/tune.XXXXXX") || fail "mktemp"
chmod 700 "$dir"
# MEMRA_ADMISSION_TIMEOUT_MS: a wall-clock limit, raised for sanitizer builds on a busy machine
export MEMRA_CACHE_DIR="$dir" MEMRA_MODULE_PATH="$mods" MEMRA_ADMISSION_TIMEOUT_MS=120000
unset MEMRA_TUNE_FILE MEMRA_PREFER MEMRA_DISABLE MEMRA_TUNE
"$memra" tune --op gemm_bf16 --m 16 200 --json "$dir/r.json" >"$dir/out" 2>"$dir/err" || { cat "$dir/out" "$dir/err"; fail "memra tune exited $?"; }
grep -q 'gemm_bf16 m=16 n=128 k=128 (m class 16): 5 arms' "$dir/out" || { cat "$dir/out"; fail "no 5-arm race at m=16"; }
# one time unit with bench (ms), a spread and a rate beside each median, progress on stderr
grep -Eq '^  [* ] testslow.reps1 +[0-9]+\.[0-9]{4} ms +\+-[0-9.]+% +[0-9.]+ [kMGT]?FLOP/s' "$dir/out" || { cat "$dir/out"; fail "arm row: ms, spread, rate"; }
! grep -q ' us ' "$dir/out" || fail "tune prints us"
grep -q '^memra tune: \[8/8\] gemm_bf16 m=200' "$dir/err" || { cat "$dir/err"; fail "progress lines on stderr"; }
grep -q 'testslow.reps1' "$dir/out" || fail "variants not raced"
grep -q 'entries written to' "$dir/out" || fail "nothing written"
f="$dir/tune/tuning.memra"
[ "$(head -1 "$f")" = "$(printf 'memra-tune\t1')" ] || fail "magic/version line"
sed -n 2p "$f" | grep -Eq '^sha256	[0-9a-f]{64}$' || fail "checksum line"
n=$(grep -c '^entry	' "$f")
[ "$n" -eq 8 ] || fail "want 8 entries (4 shapes x 2 m classes), got $n"
if command -v python3 >/dev/null 2>&1; then
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['format']=='memra-tune' and d['version']==2; a=d['results'][0]['arms'][0]; assert a['q1_ms'] <= a['median_ms'] <= a['q3_ms']; assert len(d['results'])==8 and all(len(r['arms'])==5 and all(a['ok'] for a in r['arms']) for r in d['results'])" "$dir/r.json" ||
        fail "receipt: want 8 races of 5 arms, every arm checked ok"
fi
"$memra" info >"$dir/info" 2>&1 || fail "memra info"
grep -q "tuning file: $f (read 8 entries)" "$dir/info" || { cat "$dir/info"; fail "info: tuning file line"; }
grep -q "active  from $f" "$dir/info" || fail "info: entries with their source"
# usage errors
"$memra" tune --op scale >/dev/null 2>&1; [ $? -eq 2 ] || fail "--op scale must be a usage error"
"$memra" tune --m 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--m 0 must be a usage error"
"$memra" tune --sheet 70b >/dev/null 2>&1; [ $? -eq 2 ] || fail "--sheet 70b must be a usage error"
# a corrupt file is ignored with a log line, never trusted
cp "$f" "$dir/good"
sed -i 's/testgemm/testgemx/; s/	host	/	hosx	/' "$f"
"$memra" info >"$dir/info" 2>&1
grep -q "ignored: checksum mismatch" "$dir/info" || { cat "$dir/info"; fail "corrupt file not reported"; }
cp "$dir/good" "$f"
"$memra" tune --clear >"$dir/out" 2>&1 || fail "--clear"
[ -e "$f" ] && fail "--clear left the file"
rm -rf "$dir"
echo ok
