#!/bin/bash
# Third H200 call: the rewritten dequant / convert kernels. Correctness first
# (bit-identical dequant and convert, gemm_f16 with the in-stream convert, graph
# replay), then memra-bench-raw's dequant and f16 arms. Logs to $OUT.
set -u
OUT=${OUT:-/tmp/memra-out}
mkdir -p "$OUT"
B=/tmp/memra-build
t0=$SECONDS
if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=ON -DBUILD_TESTING=ON &&
       cmake --build $B -j16; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
{
  echo "== build $((SECONDS - t0)) s"
  for c in dequant cvt gemm_f16 graph; do
    t=$SECONDS; $B/bin/test_sm90_ops $c > "$OUT/sm90_$c.log" 2>&1; echo "sm90 $c: exit $? in $((SECONDS - t)) s"
  done
  grep -hE "FAIL|differ|mismatch" "$OUT"/sm90_*.log | head -10
  timeout 200 $B/bin/memra-bench-raw --sheet 27b --m 512 --json "$OUT/raw_27b_m512_c.json" > "$OUT/raw_27b.txt" 2>&1
  echo "raw 27b: exit $?"
  timeout 100 $B/bin/memra-bench-raw --sheet 1p7b --m 512 --no-dequant --json "$OUT/raw_1p7b_m512_c.json" > "$OUT/raw_1p7b.txt" 2>&1
  echo "raw 1p7b: exit $?"
  echo "== total $((SECONDS - t0)) s"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
grep -E "geometric|MET|MISSED|dequant_f16 " "$OUT/raw_27b.txt" "$OUT/raw_1p7b.txt"
