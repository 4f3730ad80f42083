#!/bin/bash
# Second H200 call: correctness of the new kernels first (gemm_q8_0 v2 at each
# tile, the single-pass FP8 quantiser), the JIT path (cold and warm), the
# forced sm120 profile, then timings old vs new, the raw-arm comparison and an
# ncu look at the kernels. Logs to $OUT, short summary last.
set -u
OUT=${OUT:-/tmp/memra-out}
mkdir -p "$OUT"
B=/tmp/memra-build
R=/tmp/memra-receipts
mkdir -p $R
export MEMRA_CACHE_DIR=/tmp/memra-jit-cache
S=$OUT/summary.txt
t0=$SECONDS
if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=ON &&
       cmake --build $B -j16; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
M=$B/bin/memra
{
  echo "== build $((SECONDS - t0)) s"
  cd $B
  echo "== ctest gpu (defaults)"; ctest -L '^gpu$' --timeout 300 2>&1 | grep -E "Test +#|tests passed"
  for v in 128 64 32; do echo "== MEMRA_MMQ_BM=$v"; MEMRA_MMQ_BM=$v ctest -R 'mmq_gemm_q8_0|mmq_prefer' 2>&1 | grep -E "tests passed|Failed"; done
  echo "== MEMRA_FP8_QUANT=2pass"; MEMRA_FP8_QUANT=2pass ctest -R 'sm90_gemm_fp8$|sm90_graph' 2>&1 | grep -E "tests passed|Failed"
  cd - >/dev/null
  echo "== jit"; $M jit clear
  t=$SECONDS; MEMRA_LOG=info $M jit warm 2>&1 | tail -3; echo "cold warm: $((SECONDS - t)) s"
  t=$SECONDS; MEMRA_LOG=info $M jit warm 2>&1 | tail -3; echo "second warm: $((SECONDS - t)) s"
  $M jit ls
  echo "== forced sm120 profile"; MEMRA_ARCH=sm120 $M info 2>&1 | grep -E "cuda:|sm120|gemm_fp8_blk|gemm_q8_0 " | head -6
  MEMRA_ARCH=sm120 timeout 300 $M check --device 0 --quick > $OUT/check_sm120.txt 2>&1; echo "check sm120: exit $?"
  grep -E "passed, |FAIL|declin" $OUT/check_sm120.txt | head -8
  echo "== check (defaults)"; timeout 300 $M check --device 0 --json $R/check_h200_b.json > $OUT/check.txt 2>&1; echo "exit $?"
  grep -E "passed, " $OUT/check.txt
  echo "== check fp8blk via NVRTC-less fallback"; MEMRA_FP8BLK_JIT=0 timeout 200 $M check --device 0 --module fp8blk --quick 2>&1 | grep -E "passed, |embedded"
} > $S 2>&1
{
  for mm in 512 4096; do
    MEMRA_MMQ_KERNEL=v1 timeout 120 $M bench 27b --m $mm --reps 10 --json $R/bench_27b_m${mm}_mmqv1.json
    timeout 120 $M bench 27b --m $mm --json $R/bench_27b_m${mm}.json
  done
  timeout 120 $M bench gemm_fp8_blk --vs --json $R/vs_fp8blk_m512.json
  timeout 200 $B/bin/memra-bench-raw --sheet 27b --m 512 --json $R/raw_27b_m512.json
  MEMRA_FP8_QUANT=2pass timeout 200 $B/bin/memra-bench-raw --sheet 27b --m 512 --no-dequant --json $R/raw_27b_m512_2pass.json
  timeout 200 $B/bin/memra-bench-raw --sheet 27b --m 4096 --reps 10 --no-dequant --json $R/raw_27b_m4096.json
  timeout 120 $B/bin/memra-bench-raw --sheet 1p7b --m 512 --no-dequant --json $R/raw_1p7b_m512.json
} > "$OUT/bench.txt" 2>&1
timeout 150 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
  -k regex:"memra_k_(gemm|quant|amax|cvt)|xmma|gemm" -c 24 \
  $M bench 27b --m 512 --reps 1 --warmup 0 > "$OUT/ncu.txt" 2>&1
tar -C $R -cf "$OUT/receipts.tar" .
echo "== total $((SECONDS - t0)) s" >> $S
cat $S
echo "== bench"; grep -E "geometric|INVALID|MET|MISSED|^memra bench" "$OUT/bench.txt" | head -40
