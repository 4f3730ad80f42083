#!/bin/sh
# memra tune on the host device, as a user runs it: the GEMM test modules
# raced for gemm_bf16 at two m values (the host module kept out, so the race
# is testslow's default against its variants and testgemm: 8x the work against
# 1x, a known win); wins written to the tuning file (magic, version 2,
# checksum) with their intervals, each claim reproduced by the verify run
# through memra_matmul; shown by memra info with their source, consulted at
# the next open. A race of identical arms (testtwin and its variant "same")
# records "no win" and no entry; a version 1 file is treated as absent and
# rebuilt; --verify alone; usage errors exit 2; --clear removes the file.
# usage: tune_test.sh MEMRA GEMM_MODULE_DIR WORKDIR TWIN_MODULE_DIR
set -u
memra=$1 mods=$2 work=$3 twin=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "$work/tune.XXXXXX") || fail "mktemp"
chmod 700 "$dir"
# MEMRA_ADMISSION_TIMEOUT_MS: a wall-clock limit, raised for sanitizer builds on a busy machine
export MEMRA_CACHE_DIR="$dir" MEMRA_MODULE_PATH="$mods" MEMRA_ADMISSION_TIMEOUT_MS=120000
unset MEMRA_TUNE_FILE MEMRA_PREFER MEMRA_DISABLE MEMRA_TUNE
f="$dir/tune/tuning.memra"
# an old (version 1) file is there: treated as absent, rebuilt
mkdir -p "$dir/tune" && chmod 700 "$dir/tune"
printf 'memra-tune\t1\nsha256\t%s\n' "$(printf '' | sha256sum | cut -d' ' -f1)" > "$f" && chmod 600 "$f"
"$memra" info >"$dir/info" 2>&1 || fail "memra info (old file)"
grep -q "absent: format version 1 is not 2" "$dir/info" || { cat "$dir/info"; fail "a version 1 file is not treated as absent"; }
MEMRA_DISABLE=gemm_bf16=host "$memra" tune --op gemm_bf16 --m 16 200 --reps 12 --budget-ms 1500 --json "$dir/r.json" >"$dir/out" 2>"$dir/err" || { cat "$dir/out" "$dir/err"; fail "memra tune exited $?"; }
grep -q 'gemm_bf16 m=16 n=128 k=128 (m class 16): 4 arms' "$dir/out" || { cat "$dir/out"; fail "no 4-arm race at m=16"; }
# one time unit with bench (ms), a spread and a rate beside each median, progress on stderr
grep -Eq '^  [* ] testslow.reps1 +[0-9]+\.[0-9]{4} ms +\+-[0-9.]+% +[0-9.]+ [kMGT]?FLOP/s +[0-9.]+x \[[0-9.]+, [0-9.]+\]' "$dir/out" || { cat "$dir/out"; fail "arm row: ms, spread, rate, gain [interval]"; }
! grep -q ' us ' "$dir/out" || fail "tune prints us"
grep -q '^memra tune: \[8/8\] gemm_bf16 m=200' "$dir/err" || { cat "$dir/err"; fail "progress lines on stderr"; }
grep -q 'self-race (baseline against its twin): .*noise floor' "$dir/out" || fail "no noise floor stated"
grep -Eq 'repetitions x batch [0-9]+ \(stopped: (narrow|budget|reps|settled)' "$dir/out" || fail "no stop reason"
[ "$(grep -c '^  win ' "$dir/out")" -eq 8 ] || { cat "$dir/out"; fail "want 8 wins (8x the work against 1x)"; }
grep -q '8 entries (a real win), 0 no win' "$dir/out" || fail "nothing written"
# Every claim reproduced: all 8 verified, each measured interval well above 1 (8x the work
# against 1x); the 95% intervals overlap in at least 6 of 8 (this host shares its cores with
# other work, so an interval of 9-12 repetitions misses now and then).
grep -Eq '^verify: [678] agree, [012] disagree, 0 not verified' "$dir/out" || { cat "$dir/out"; fail "the claims did not reproduce in the verify run"; }
[ "$(head -1 "$f")" = "$(printf 'memra-tune\t2')" ] || fail "magic/version line"
sed -n 2p "$f" | grep -Eq '^sha256	[0-9a-f]{64}$' || fail "checksum line"
n=$(grep -c '^entry	' "$f")
[ "$n" -eq 8 ] || fail "want 8 entries (4 shapes x 2 m classes), got $n"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$dir/r.json" <<'PY' || fail "receipt checks"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "memra-tune" and d["version"] == 3
res = d["results"]
assert len(res) == 8 and all(len(r["arms"]) == 4 and all(a["ok"] for a in r["arms"]) for r in res), "8 races of 4 ok arms"
for r in res:
    assert r["reps_done"] >= 5 and r["batch"] >= 1 and r["noise_floor"] >= 0.03, r
    assert len(r["twin_us"]) == r["reps_done"]
    for a in r["arms"]:
        assert a["q1_ms"] <= a["median_ms"] <= a["q3_ms"]
        assert len(a["times_us"]) == r["reps_done"] and min(a["times_us"]) > 0
    c = r["claim"]
    assert c["win"] and c["lo"] > 1 and c["gain"] >= 1 + r["noise_floor"], c
v = d["verify"]
assert len(v) == 8 and d["agreed"] + d["disagreed"] == 8 and d["agreed"] >= 6, (d["agreed"], d["disagreed"])
for e in v:
    c, m = e["claimed"], e["verified"]
    assert e["agree"] == (m["lo"] <= c["hi"] and c["lo"] <= m["hi"]), e
    assert m["lo"] > 1.5, ("the tuned routing is not measurably faster through memra_matmul", e)
    assert len(e["untuned_us"]) == len(e["tuned_us"]) == m["reps"]
PY
fi
# --verify alone, on the file's entries (at m = the class)
MEMRA_DISABLE=gemm_bf16=host "$memra" tune --verify --reps 6 >"$dir/vout" 2>&1 || { cat "$dir/vout"; fail "--verify exited $?"; }
grep -q '^verify: [0-9] agree' "$dir/vout" || { cat "$dir/vout"; fail "--verify printed no summary"; }
grep -q '(class 256) -> .* claimed .* measured ' "$dir/vout" || { cat "$dir/vout"; fail "--verify: claimed beside measured"; }
"$memra" info >"$dir/info" 2>&1 || fail "memra info"
grep -q "tuning file: $f (read 8 entries)" "$dir/info" || { cat "$dir/info"; fail "info: tuning file line"; }
grep -q "active  from $f" "$dir/info" || fail "info: entries with their source"
# usage errors
"$memra" tune --op scale >/dev/null 2>&1; [ $? -eq 2 ] || fail "--op scale must be a usage error"
"$memra" tune --m 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--m 0 must be a usage error"
"$memra" tune --sheet 70b >/dev/null 2>&1; [ $? -eq 2 ] || fail "--sheet 70b must be a usage error"
# a corrupt file is ignored with a log line, never trusted
cp "$f" "$dir/good"
# (a forged body line: the checksum covers every byte of the body, whichever module won the race)
printf 'entry\tforged\n' >> "$f"
"$memra" info >"$dir/info" 2>&1
grep -q "ignored: checksum mismatch" "$dir/info" || { cat "$dir/info"; fail "corrupt file not reported"; }
cp "$dir/good" "$f"
"$memra" tune --clear >"$dir/out" 2>&1 || fail "--clear"
[ -e "$f" ] && fail "--clear left the file"
# identical arms (testtwin against its variant "same", the host kept out): "no win", no entry
MEMRA_MODULE_PATH="$twin" MEMRA_DISABLE=gemm_bf16=host "$memra" tune --op gemm_bf16 --m 16 --reps 12 --budget-ms 1500 >"$dir/out" 2>"$dir/err" || { cat "$dir/out" "$dir/err"; fail "twin tune exited $?"; }
grep -q 'gemm_bf16 m=16 n=128 k=128 (m class 16): 2 arms' "$dir/out" || { cat "$dir/out"; fail "no 2-arm twin race"; }
[ "$(grep -c '^  no win: ' "$dir/out")" -eq 4 ] || { cat "$dir/out"; fail "identical arms: want 4 'no win'"; }
grep -q '0 entries (a real win), 4 no win' "$dir/out" || { cat "$dir/out"; fail "identical arms recorded a win"; }
[ "$(grep -c '^entry	' "$f")" -eq 0 ] || fail "identical arms wrote an entry"
[ "$(grep -c '^nowin	' "$f")" -eq 4 ] || fail "want 4 nowin records"
grep -q 'no active entry on this device: nothing to verify' "$dir/out" || fail "no-win classes verified"
MEMRA_MODULE_PATH="$twin" "$memra" info >"$dir/info" 2>&1
grep -q "no win: the scores route" "$dir/info" || { cat "$dir/info"; fail "info: no-win state"; }
rm -rf "$dir"
echo ok
