#!/bin/bash
# H200 calls for issue 6's Q8_0 record layout. Steps, each on unless its
# variable is 0:
#   TESTS  test_mmq_ops gemm_q8_0r (repack + gemm_q8_0r at the plan and at forced
#          tiles / splits), quant, gemm_q8_0
#   SWEEP  test_mmq_ops sweep: every tile x split on the 27b sheet, m = 512, 4096
#   FULL   ctest -L gpu, memra check --device 0 (and the forced sm120 profile)
#   BENCH  memra bench 27b at m = 512 and 4096 (each call alone, and --batch 8)
#          with JSON receipts; accprobe
#   NCU    ncu on the first three gemm_q8_0r launches of a sweep (off by default)
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
    t=$SECONDS; timeout 600 $T sweep > "$L/sweep.log" 2>&1; echo "sweep: exit $? in $((SECONDS - t)) s"
  fi
  if [ "${FULL:-1}" = 1 ]; then
    (cd $B && timeout 500 ctest -L '^gpu$' --timeout 300 > "$L/ctest_gpu.log" 2>&1); echo "ctest -L gpu: exit $?"
    grep -E "tests passed|Failed|\*\*\*" "$L/ctest_gpu.log" | head -12
    timeout 400 $M check --device 0 --json $R/check_h200_e.json > "$L/check.log" 2>&1; echo "memra check --device 0: exit $?"
    grep -E "passed, " "$L/check.log"
    MEMRA_ARCH=sm120 timeout 300 $M check --device 0 --quick > "$L/check_sm120.log" 2>&1; echo "check (forced sm120): exit $?"
    grep -E "passed, " "$L/check_sm120.log"
  fi
  if [ "${BENCH:-1}" = 1 ]; then
    for mm in 512 4096; do
      timeout 200 $M bench 27b --m $mm --json $R/bench_27b_m${mm}_e.json > "$L/bench_27b_m$mm.txt" 2>&1
      echo "memra bench 27b m=$mm: exit $?"
      timeout 200 $M bench 27b --m $mm --batch 8 --reps 10 --json $R/bench_27b_m${mm}_batch8_e.json \
        > "$L/bench_27b_m${mm}_batch8.txt" 2>&1
      echo "memra bench 27b m=$mm --batch 8: exit $?"
    done
    for d in wide mid; do
      timeout 100 $M bench accprobe 512 20 27b --dist $d --json $R/accprobe_27b_m512_${d}_e.json > "$L/accprobe_$d.txt" 2>&1
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
echo "== total $((SECONDS - t0)) s" >> "$S"
tar -C $L -cf "$OUT/logs.tar" .
tar -C $R -cf "$OUT/receipts.tar" .
cat "$S"
[ -f "$L/sweep.log" ] && grep -E "^SWEEP " "$L/sweep.log"
[ -f "$L/bench_27b_m512.txt" ] && grep -E "geometric" $L/bench_27b_m*.txt
true
