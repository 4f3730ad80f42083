#!/bin/bash
# One call on the lent H200: build, every GPU test, `memra check`, the bench
# receipts. Logs and receipts go to $OUT (few files: receipts are tarred);
# a short summary is printed last. Usage from the repository root:
#   bash bench/device_run.sh
set -u
OUT=${OUT:-/tmp/memra-out}
mkdir -p "$OUT"
B=/tmp/memra-build
R=/tmp/memra-receipts
mkdir -p $R
export MEMRA_CACHE_DIR=/tmp/memra-jit-cache
t0=$SECONDS
if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=ON &&
       cmake --build $B -j16; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
echo "build: $((SECONDS - t0)) s" > "$OUT/times.txt"
M=$B/bin/memra
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv
  $M --version; echo; $M info; echo; $M jit warm; $M jit ls
} > "$OUT/info.txt" 2>&1
t=$SECONDS; (cd $B && ctest -L '^gpu$|gpu-build' --output-on-failure --timeout 300) > "$OUT/ctest_gpu.log" 2>&1
echo "ctest gpu: $((SECONDS - t)) s" >> "$OUT/times.txt"
t=$SECONDS; MEMRA_STATS=1 timeout 400 $M check --device 0 --json $R/check_h200.json > "$OUT/check.txt" 2>&1
echo "check: exit $? in $((SECONDS - t)) s" >> "$OUT/times.txt"
{
  for args in "27b --m 512" "27b --m 4096 --reps 10" "1p7b --m 512"; do
    t=$SECONDS; set -- $args
    timeout 240 $M bench $args --json $R/bench_$1_m$3.json; echo "bench $args: exit $? in $((SECONDS - t)) s"
  done
  timeout 120 $M bench accprobe 512 20 27b --json $R/accprobe_27b_m512_wide.json
  timeout 120 $M bench accprobe 512 20 27b --dist mid --json $R/accprobe_27b_m512_mid.json
  timeout 120 $M bench 27b --m 512 --reps 10 --vs sm90 fp8blk --op gemm_fp8_blk --json $R/vs_fp8blk_m512.json
  if [ -x $B/bin/memra-bench-raw ]; then
    timeout 240 $B/bin/memra-bench-raw --sheet 27b --m 512 --json $R/raw_27b_m512.json
    timeout 240 $B/bin/memra-bench-raw --sheet 27b --m 4096 --reps 10 --no-dequant --json $R/raw_27b_m4096.json
    timeout 120 $B/bin/memra-bench-raw --sheet 1p7b --m 512 --json $R/raw_1p7b_m512.json
  fi
} > "$OUT/bench.txt" 2>&1
tar -C $R -cf "$OUT/receipts.tar" .
echo "total: $((SECONDS - t0)) s" >> "$OUT/times.txt"
echo "== times"; cat "$OUT/times.txt"
echo "== devices/modules"; grep -E "cuda:|loaded|refused" "$OUT/info.txt" | head -12
echo "== ctest"; grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest_gpu.log"
echo "== check"; grep -E "FAIL|passed, " "$OUT/check.txt" | tail -8
echo "== bench"; grep -E "geometric|INVALID|exit|target|MET|MISSED" "$OUT/bench.txt" | head -40
