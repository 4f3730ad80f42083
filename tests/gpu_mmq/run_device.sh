#!/bin/sh
# One device run for issues 6/7: build, the mmq-family ctests (gpu, gpu-build),
# a forced-sm120 look, and the small gemm_q8_0 / accprobe timing at 27b 5120->12288.
# Logs under $OUT; a short summary last. Usage (repository root): sh tests/gpu_mmq/run_device.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
t0=$(date +%s)
if ! { cmake -S . -B build -G Ninja && cmake --build build -j16; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; exit 1
fi
t1=$(date +%s)
ctest --test-dir build -L gpu -R '^mmq_' --output-on-failure -V > "$OUT/ctest.log" 2>&1
ctest --test-dir build -L gpu-build -R mmq --output-on-failure -V >> "$OUT/ctest.log" 2>&1
MEMRA_ARCH=sm120 ./build/bin/memra info > "$OUT/sm120_forced.log" 2>&1
MEMRA_ARCH=sm120 ./build/bin/test_mmq_ops gemm_q8_0 >> "$OUT/sm120_forced.log" 2>&1
t2=$(date +%s)
./build/bin/test_mmq_ops bench > "$OUT/bench.log" 2>&1
t3=$(date +%s)
echo "== build $((t1-t0)) s, tests $((t2-t1)) s, bench $((t3-t2)) s"
cat "$OUT/gpu.txt"
grep -E "^  (quant|gemm|accprobe|memra_matmul|ledger)|routing|Passed|Failed|SKIP|Not Run|tests passed" "$OUT/ctest.log" | cut -c1-220
grep -E "sm120|mmq|fp8blk" "$OUT/sm120_forced.log" | head -20 | cut -c1-200
grep -E "BENCH|FAIL" "$OUT/bench.log"
