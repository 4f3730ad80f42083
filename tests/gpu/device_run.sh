#!/bin/bash
# Build the tree and run the GPU tests on a machine with a cc 9.0 GPU (the lent
# H200), logs under $OUT, a short summary last. Usage, from the repository root:
#   bash tests/gpu/device_run.sh [bench-m ...]
set -u
OUT=${OUT:-/tmp/memra-gpu-out}
mkdir -p "$OUT"
L=/tmp/memra-gpu-logs   # one log per case here; $OUT gets them joined (few files come back)
mkdir -p $L
B=/tmp/memra-gpu-build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON && cmake --build $B -j16; } > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
export MEMRA_LOG=${MEMRA_LOG:-info}
$B/bin/memra info > "$OUT/info.log" 2>&1
(cd $B && ctest -L '^gpu-build$' --output-on-failure) > "$OUT/ctest.log" 2>&1
# the ctest cases of label gpu, run directly to keep their full output
for c in cvt scale dequant nan_count fp8_to_q8_0 declines graph gemm_fp8_blk gemm_fp8 gemm_f16; do
  t0=$SECONDS
  timeout 240 $B/bin/test_sm90_ops $c > "$L/sm90_$c.log" 2>&1
  echo "$c: exit $? in $((SECONDS - t0)) s" >> "$OUT/cases.txt"
done
for m in "${@:-512}"; do timeout 120 $B/bin/test_sm90_ops bench "$m" > "$L/bench_m$m.log" 2>&1; done
for f in $L/sm90_*.log; do echo "===== $f"; cat "$f"; done > "$OUT/cases.log"
cat $L/bench_m*.log > "$OUT/bench.log"
echo "== gpu"; cat "$OUT/gpu.txt"
echo "== info"; grep -E "sm90|cuda:|driver" "$OUT/info.log" | head -8
echo "== failures (first 14)"; grep -h -E -A3 "FAIL|SKIP|error" "$L"/sm90_*.log | head -40
echo "== declines"; grep -h "declined" "$L"/sm90_declines.log
echo "== gemm bands (worst rel_fro per lane)"
for l in "gemm_f16 " "gemm_f16 (x pre" "gemm_fp8 " "gemm_fp8_blk"; do
  grep -h "^$l" "$L"/sm90_gemm_*.log "$L"/sm90_graph.log | awk -v l="$l" '{for(i=1;i<=NF;i++) if($i=="rel_fro") r=$(i+1); if(r>w) w=r; n++} END {printf "%-18s %3d cases, worst rel_fro %s\n", l, n, w}'
done
echo "== bench"; cat "$L"/bench_m*.log | grep -v "^seed"
echo "== cases"; cat "$OUT/cases.txt"
echo "== ctest gpu-build"; grep -E "tests passed|gpu_images" "$OUT/ctest.log"
