#!/bin/bash
# Fourth H200 call (issue 6, the Q8_0 record layout): correctness of
# repack_q8_0 and gemm_q8_0r at the launcher's plan and at forced tiles and
# split counts (and gemm_q8_0 on blocks still), then the tile x split sweep on
# the 27b sheet, then ncu on one gemm_q8_0r launch. Logs to $OUT, summary last.
set -u
OUT=${OUT:-/tmp/memra-out}
mkdir -p "$OUT"
B=/tmp/memra-build
S=$OUT/summary.txt
t0=$SECONDS
if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=ON -DBUILD_TESTING=ON &&
       cmake --build $B -j16; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
T=$B/bin/test_mmq_ops
{
  echo "== build $((SECONDS - t0)) s"
  t=$SECONDS; timeout 300 $T gemm_q8_0r > "$OUT/q8_0r.log" 2>&1; echo "gemm_q8_0r (repack + all plans): exit $? in $((SECONDS - t)) s"
  grep -cE " ok$" "$OUT/q8_0r.log"; grep -E "FAIL|declined" "$OUT/q8_0r.log" | head -12
  t=$SECONDS; timeout 600 $T sweep ${SWEEP_M:-0} > "$OUT/sweep.log" 2>&1; echo "sweep: exit $? in $((SECONDS - t)) s"
} > "$S" 2>&1
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    -k regex:memra_k_gemm_q8_0r -c 3 $T sweep 4096 0 > "$OUT/ncu.txt" 2>&1
  echo "ncu: exit $?" >> "$S"
fi
echo "== total $((SECONDS - t0)) s" >> "$S"
cat "$S"
grep -E "^SWEEP " "$OUT/sweep.log"
