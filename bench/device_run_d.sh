#!/bin/bash
# H200 calls for issue 6's Q8_0 record layout. Steps, each on unless its
# variable is 0:
#   TESTS  test_mmq_ops gemm_q8_0r (repack + gemm_q8_0r at the plan and at forced
#          tiles / splits), quant, gemm_q8_0
#   SWEEP  test_mmq_ops sweep: every tile x split on the 27b sheet, m = 512, 4096
#   FULL   ctest -L gpu, memra check --device 0 (and the forced sm120 profile;
#          CHECK=0 leaves the two checks out)
#   BENCH  memra bench 27b at m = 512 and 4096 (each call alone, and --batch 8)
#          with JSON receipts; accprobe
#   NCU    ncu on the first three gemm_q8_0r launches of a sweep (off by default)
#   PDL    test_mmq_ops pdl at m = 512 and 4096: quant + gemm_q8_0r with programmatic
#          dependent launches against plain ones (off by default)
#   KDUR   ncu's gpu__time_duration of every quant_q8_1 / gemm_q8_0r / splitk_sum
#          launch of `memra bench 27b --m 512` (off by default)
# SWEEP_M limits the sweep to one m, BENCH_M the bench's m list (default
# "512 4096"); ACCPROBE=0 skips the accprobe; TAG (default e) names the receipts.
# Logs and receipts go to $OUT as two tars (logs.tar, receipts.tar) plus
# summary.txt; the summary and the sweep table are printed last.
set -u
OUT=${OUT:-/tmp/memra-out}
mkdir -p "$OUT"
L=/tmp/memra-logs R=/tmp/memra-receipts B=/tmp/memra-build
mkdir -p $L $R
S=$OUT/summary.txt
t0=$SECONDS
if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=ON -DBUILD_TESTING=ON &&
       cmake --build $B -j16; } > "$L/build.log" 2>&1; then
  tail -40 "$L/build.log"; echo "BUILD FAILED"; exit 1
fi
T=$B/bin/test_mmq_ops M=$B/bin/memra
export MEMRA_CACHE_DIR=/tmp/memra-jit-cache
{
  echo "== build $((SECONDS - t0)) s"
  if [ "${TESTS:-1}" = 1 ]; then
    for c in gemm_q8_0r quant gemm_q8_0; do
      t=$SECONDS; timeout 300 $T $c > "$L/test_$c.log" 2>&1; echo "test_mmq_ops $c: exit $? in $((SECONDS - t)) s"
      grep -E "FAIL" "$L/test_$c.log" | head -5
    done
  fi
  if [ "${SWEEP:-1}" = 1 ]; then
    t=$SECONDS; timeout 600 $T sweep ${SWEEP_M:-} > "$L/sweep.log" 2>&1; echo "sweep: exit $? in $((SECONDS - t)) s"
  fi
  if [ "${PDL:-0}" = 1 ]; then
    for mm in 512 4096; do
      t=$SECONDS; timeout 300 $T pdl $mm > "$L/pdl_m$mm.log" 2>&1; echo "test_mmq_ops pdl $mm: exit $? in $((SECONDS - t)) s"
    done
  fi
  if [ "${FULL:-1}" = 1 ]; then
    (cd $B && timeout 500 ctest -L '^gpu$' --timeout 300 > "$L/ctest_gpu.log" 2>&1); echo "ctest -L gpu: exit $?"
    grep -E "tests passed|Failed|\*\*\*" "$L/ctest_gpu.log" | head -12
    [ "${CHECK:-1}" = 1 ] && timeout 400 $M check --device 0 --json $R/check_h200_${TAG:-e}.json > "$L/check.log" 2>&1; echo "memra check --device 0: exit $?"
    grep -E "passed, " "$L/check.log"
    [ "${CHECK:-1}" = 1 ] && MEMRA_ARCH=sm120 timeout 300 $M check --device 0 --quick > "$L/check_sm120.log" 2>&1; echo "check (forced sm120): exit $?"
    grep -E "passed, " "$L/check_sm120.log"
  fi
  if [ "${BENCH:-1}" = 1 ]; then
    for mm in ${BENCH_M:-512 4096}; do
      timeout 200 $M bench 27b --m $mm --json $R/bench_27b_m${mm}_${TAG:-e}.json > "$L/bench_27b_m$mm.txt" 2>&1
      echo "memra bench 27b m=$mm: exit $?"
      timeout 200 $M bench 27b --m $mm --batch 8 --reps 10 --json $R/bench_27b_m${mm}_batch8_${TAG:-e}.json \
        > "$L/bench_27b_m${mm}_batch8.txt" 2>&1
      echo "memra bench 27b m=$mm --batch 8: exit $?"
    done
    [ "${ACCPROBE:-1}" = 1 ] && for d in wide mid; do
      timeout 100 $M bench accprobe 512 20 27b --dist $d --json $R/accprobe_27b_m512_${d}_${TAG:-e}.json > "$L/accprobe_$d.txt" 2>&1
      echo "accprobe $d: exit $?"
    done
  fi
} > "$S" 2>&1
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    -k regex:memra_k_gemm_q8_0r -c 3 $T sweep 4096 0 > "$L/ncu.txt" 2>&1
  echo "ncu: exit $?" >> "$S"
fi
if [ "${KDUR:-0}" = 1 ] && command -v ncu >/dev/null; then
  timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
    -k regex:'memra_k_(quant_q8_1|gemm_q8_0r|splitk_sum)' $M bench 27b --m 512 --reps 2 --warmup 1 > "$L/kdur.csv" 2>&1
  echo "ncu kdur: exit $?" >> "$S"
  python3 - "$L/kdur.csv" >> "$S" <<'PY' || true
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); gi = h.index("Grid Size") if "Grid Size" in h else None
d = collections.OrderedDict()
for r in rows[1:]:
    key = (r[ki].split("(")[0], r[gi] if gi is not None else "")
    d.setdefault(key, []).append(float(r[vi].replace(",", "")))
for (k, g), v in d.items():
    v.sort(); print("KDUR %-28s grid %-16s n=%-3d median %.2f us" % (k, g, len(v), v[len(v) // 2] / 1000.0))
PY
fi
echo "== total $((SECONDS - t0)) s" >> "$S"
tar -C $L -cf "$OUT/logs.tar" .
tar -C $R -cf "$OUT/receipts.tar" .
cat "$S"
[ -f "$L/sweep.log" ] && grep -E "^SWEEP " "$L/sweep.log"
ls $L/pdl_m*.log >/dev/null 2>&1 && grep -hE "^PDL " $L/pdl_m*.log
[ -f "$L/bench_27b_m512.txt" ] && grep -E "geometric" $L/bench_27b_m*.txt
true
