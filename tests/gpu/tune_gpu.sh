#!/bin/sh
# gpu: memra tune --device 0 on a tiny sheet (1p7b, m = 64, at most 8
# repetitions): every GEMM op with a lane on the GPU raced over its modules
# and their variants; each arm's first call checked against the host
# reference before a time counts (receipt: a verdict per arm, and an ok arm's
# ledger hits = the check + the batch-sizing sample (2 calls) + per
# repetition a warm-up and the batch, twice for the baseline and its twin);
# at least one race has a variant arm (an H200: gemm_q8_0r on mmq's 6
# variants, gemm_fp8_blk on sm90, fp8blk and its tiles); every class either a
# win (interval above 1, gain at least the noise floor) or "no win"; the
# tuning file written in a temporary folder (MEMRA_TUNE_FILE: the JIT cache
# stays where it is, warm), listed by memra info; every active entry
# verified through memra_matmul. Exits 77 without a CUDA device.
# usage: tune_gpu.sh MEMRA WORKDIR
set -u
memra=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "$work/tune_gpu.XXXXXX") || fail "mktemp"
chmod 700 "$dir"
f="$dir/tune/tuning.memra"
export MEMRA_TUNE_FILE="$f"
unset MEMRA_PREFER MEMRA_DISABLE MEMRA_TUNE MEMRA_MODULE_PATH
"$memra" tune --device 0 --sheet 1p7b --m 64 --reps 8 --budget-ms 500 --json "$dir/r.json" >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "no CUDA device" "$dir/err"; then rm -rf "$dir"; echo "SKIP: no CUDA device"; exit 77; fi
cat "$dir/out"
[ $rc -eq 0 ] || { cat "$dir/err"; fail "memra tune exited $rc"; }
command -v python3 >/dev/null 2>&1 || fail "python3 is needed to read the receipt"
python3 - "$dir/r.json" <<'PY' || fail "receipt checks"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == 3, d["version"]
res = d["results"]
assert res, "no race"
variant_race = two_modules = wins = nowins = 0
for r in res:
    arms = r["arms"]
    for i, a in enumerate(arms):
        assert a["verdict"], ("no verdict", r["op"], a)
        if a["ok"]:
            want = 3 + r["reps_done"] * (1 + r["batch"]) * (2 if i == r["baseline"] else 1)
            assert a["hits"] == want, ("an ok arm's calls", want, r["op"], a)
            assert a["median_us"] > 0, ("no time", r["op"], a)
            assert len(a["times_us"]) == r["reps_done"], a
        else:
            assert a["verdict"].startswith(("declined", "error", "wrong", "failed")), a
    if len(arms) > 1:
        assert r["winner"] >= 0, ("no winner", r)
        assert arms[r["winner"]]["ok"], ("the winner was not checked ok", r)
        c = r["claim"]
        if c is not None and c["win"]:
            assert c["lo"] > 1 and c["gain"] >= 1 + r["noise_floor"] and r["noise_floor"] >= 0.03, ("a win that is not real", r["op"], c)
            wins += 1
        elif c is not None:
            nowins += 1
    if any(a["variant"] for a in arms): variant_race += 1
    if len({a["module"] for a in arms if a["ok"]}) > 1: two_modules += 1
v = d.get("verify", [])
assert len(v) == wins, ("every win verified", len(v), wins)
print("races %d, with variants %d, with two modules %d; %d wins, %d no win; verify %d agree, %d disagree, %d not verified"
      % (len(res), variant_race, two_modules, wins, nowins, d["agreed"], d["disagreed"], d["unverified"]))
assert variant_race > 0, "no race had a variant arm"
PY
grep -q 'recorded to .*(a real win), [0-9]* no win' "$dir/out" || fail "nothing written"
[ -f "$f" ] || fail "no tuning file at $f"
"$memra" info >"$dir/info" 2>&1 || fail "memra info"
grep -q "tuning file: $f" "$dir/info" || { cat "$dir/info"; fail "info: tuning file line"; }
grep -q "active  from $f\|no win: the scores route" "$dir/info" || { cat "$dir/info"; fail "info: tuned entries"; }
rm -rf "$dir"
echo ok
