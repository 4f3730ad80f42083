#!/bin/bash
# The one script for the lent GPU machine. Usage from the repository root:
#
#   bash bench/device.sh STEP...        (default: build ctest check)
#
# The floor's steps reach the integer floor with MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 (MEMRA_W16's default is 0,
# but an environment with MEMRA_W16=auto would otherwise send their weights to gemm_w16 on cc 9.0).
#
# Steps, run in the order given:
#   unpack      instead of build: .carry/build.tar.xz (bench/carry_build.sh: the CPU machine's build, the call
#               naming .carry in its carry list) into $B, and $B/lib on LD_LIBRARY_PATH for the steps after it
#   build       configure + build (Release, GPU modules ON, tests ON, warnings not fatal:
#               the device's gcc differs from CI's, which builds with -Werror) into $B
#   info        nvidia-smi, memra --version, memra info, jit warm + ls
#   ctest       ctest -L gpu (every GPU test; exit 77 would mean no GPU; CTEST_R a name regex,
#               CTEST_TIMEOUT the step's limit, CTEST_J parallel test processes on the one GPU:
#               the whole label has never fit one call's 600 s one at a time)
#   check       memra check --device 0 (receipt), then the forced sm120 and cuda profiles
#   sanitize    compute-sanitizer memcheck (--leak-check full), racecheck, initcheck and
#               synccheck over `memra check --device 0 --op X --module Y`, each (op, module)
#               in its own process, under the native, forced sm120 and forced cuda
#               profiles; a table tool x (profile, op, module) -> errors (SAN_QUICK=1 adds
#               --quick; SAN_JOBS parallel processes, default 8; SAN_TOOLS to pick tools,
#               SAN_PROFILES the profiles; one extra cell per (tool, profile): the admission
#               self-check, `memra info`)
#   stress      the multi-thread / multi-stream GPU stress test, when built
#   racecheck   test_gpu_stress streams under compute-sanitizer --tool racecheck, the tool's
#               reports in their own log (--log-file), the test's own output (line-buffered)
#               in another, each exit status kept: the tool's (RACE_ERROR_EXIT, default 86,
#               when it found hazards) and, without hazards, the test's own; hazards filed by
#               kernel (memra's own vs vendor: cuBLASLt's nvjet/xmma); RACE_TIMEOUT (default
#               540 s), RACE_DISABLE (a MEMRA_DISABLE value, e.g. the cuBLASLt module, to run
#               memra's own kernels alone), RACE_ARCH (a MEMRA_ARCH profile), RACE_LANES
#               (the stress test's lanes: fp8blk,mmq with RACE_DISABLE=sm90 runs memra's own
#               kernels and no cuBLASLt one), RACE_CASE (default streams)
#   bench       memra bench 27b at BENCH_M (default "512 4096"), each call alone and
#               --batch 8 (BENCH_BATCH=0: alone only), with receipts; with BENCH_ROUTE=1 once more
#               with MEMRA_FLOOR_F16_M=auto (the floor's arms on the route from the profile's m)
#   deqab       the per-call dequantisation (dequant_f16 + gemm_f16) against the floor: knobab
#               MEMRA_Q8_0_RECORDS 0 / 1 on the q4_0 / q4_k / q5_k / q6_k rows, ncu of the dequant kernels
#               (see step_deqab)
#   knobab      memra bench 27b with a knob 0 / 1 alternately (KNOBAB_KNOB, default MEMRA_MMQ_R3_UNROLL;
#               KNOBAB_M, KNOBAB_ROUNDS, KNOBAB_ARM: the arms whose rows the summary keeps, an ERE, default mmq;
#               KNOBAB_ENV: more settings for both arms, e.g. MEMRA_MMQ_BM=64 to time the 64-token tiles;
#               KNOBAB_ON / KNOBAB_OFF: the values of the two arms, default 1 / 0)
#   raw         memra-bench-raw: memra's cuBLASLt lanes beside raw cuBLASLt calls
#   fp8         memra's block-128 FP8 kernels (wgmma and mma.sync) beside cuBLASLt: the steps
#               fp8check (checks, with the given-scale rows 'xs' / 'amax' counted, forced cuda and
#               sm120 profiles, an injected run, the given-scale ctests), fp8bench (bench --vs and memra-bench-raw at FP8_M, also --given static / amax),
#               fp8ncu (ncu of the quantisers and GEMMs), fp8san (the four sanitizer tools)
#   kquant      the K-quant floor on packed operands: GPU tests, check gemm_kr (3 profiles),
#               admission, memcheck (KQ_BENCH=1: memra bench 27b m=512)
#   accprobe    memra bench accprobe (wide, mid)
#   quant       MEMRA_MMQ_QUANT_LEAN: its GPU test, ncu of both quantisers, knobab 0 / 1 (see step_quant)
#   wgfold      bench/micro/wgfold.cu: the seeded tile's step split into tensor work and fold (see step_wgfold)
#   w16         bench/micro/w16.cu and w16gemm.cu: the fused-dequant f16 tile's micro and its prototype GEMM (checks of
#               Q8_0 / Q4_0 / Q4_K / Q6_K at both token tiles and with split-k, then the 27b sheet against cuBLAS's
#               f16 GEMM), then the four sanitizer tools over the prototype's checks, each in its own process (see
#               step_w16)
#   w16lane     gemm_w16 in the build (issue 26), under MEMRA_W16=auto (W16L_W16; the default 0 loads no w16 kernels):
#               memra check --op gemm_w16 on the GPU (receipt), memra bench 27b at
#               W16L_M (default "512 4096") with the w16 arms beside the floor's (receipts), test_gpu_stress's
#               lane w16 (streams, threads, graphs), test_gpu_experts' w16 cases (the grouped tile) and bench
#               moe on w16 and on the floor (W16L_XE_CASES, W16L_XE_FMT, W16L_XE_M, W16L_XE_W16, W16L_XE_SHEET),
#               W16L_XE_VARIANTS,
#               W16L_NCU=1 each w16 launch's time in one bench moe row set, then the sanitizer tools W16L_TOOLS
#               (default none) over `memra check --op gemm_w16 / gemm_experts --module w16 --quick`, each alone
#   w16waves    MEMRA_W16_SPLIT=waves (the dense w16 plan by its waves, the default): check --op gemm_w16 under it,
#               then bench 27b waves / fill alternately (see step_w16waves)
#   xeab        knob settings A/B on the grouped call: XEAB_CASES test_gpu_experts cases, then bench moe per
#               XEAB_VARIANTS entry (see step_xeab)
#   wgpin       MEMRA_MMQ_WG_SEED=pin (_wgsf, the fold pinned behind the s8 wgmma): test, knobab, tools (see step_wgpin)
#   wgia        MEMRA_MMQ_WG_SEED=iadd (_wgsi, no seed MMA: the fold adds the seed): knobab, test, tools (see step_wgia)
#   wgpp        MEMRA_MMQ_WG_SEED=pp (_wgspp, the folds in turn): knobab, tests, stall samples, tools (see step_wgpp)
#   wgtail      MEMRA_MMQ_WG_TAIL=1 (the seeded tile's short last row tile on 32 / 64 / 96 token columns): test, ncu names,
#               knobab 0 / 1 at m = 1030 and 4100, tools (see step_wgtail)
#   xerem       MEMRA_MMQ_XE_WG_REM=1 (gemm_experts' remainders in the warpgroup tile's grid): tests, check, ncu,
#               bench moe 0 / 1, tools (see step_xerem)
#   sweep       test_mmq_ops sweep (every gemm_q8_0r tile x split)
#   sweepkr     test_mmq_ops sweep_kr (every gemm_kr tile x split) for SWEEPKR_FMT at SWEEPKR (M:SHAPES)
#   pdl         test_mmq_ops pdl at m = 512 and 4096
#   ncu         ncu summary of the first gemm_q8_0r launches
#   ncusrc      ncu's per-SASS-instruction warp stall samples of one gemm_q8_0r and one gemm_kr (Q4_K)
#               launch (m = 4096, 5120->12288): the source page as CSV (see step_ncusrc); NCUSRC_SPECS
#               "name|kernel regex|args|env|skip;..." other launches (args "@memra ...": the memra tool's,
#               e.g. bench moe for the grouped tiles; skip, default 2: the matching launches skipped first, or
#               grid=GXxGY: the first matching launch on that grid, found by a listing pass)
#   python      pytest of the python package on device 0 (torch tensors), when present
#   inject      every GPU test and memra check with an injected fault: each must fail
#   ab          memra bench 27b from .before/'s build and this one, alternately (see step_ab)
#   model       bench/make_layer_files.py writes one 27b-shaped layer per GGUF type (f32 f16
#               bf16 q8_0 q4_0 q4_k q5_k q6_k) and as FP8 block-128 safetensors (numpy writers
#               when the gguf packages are absent); memra check --model and memra bench
#               --model at MODEL_M (default 512) on device 0 for each, receipts to $R
#               (MODEL_TYPES=q8_0,fp8,... a subset, so the step can be split over calls;
#               MODEL_DIV=D divides the dimensions, for a local try)
#   tune        memra tune --device 0 --sheet 27b --m $TUNE_M (default 512; TUNE_REPS caps the
#               repetitions, default the tool's adaptive 5-100 within 1 s per class), the
#               tuning file under a temporary folder (MEMRA_TUNE_FILE; the JIT cache stays
#               warm); the tune ends with its verify run (tuned against untuned through
#               memra_matmul, the measured gain beside the claimed one per class; the
#               summary shows both and the seconds the race took: the target is 60 s at
#               m = 512); then memra bench 27b at each m with MEMRA_TUNE=0 and with the
#               file, alternately (TUNE_RUNS pairs, default 2; --reps 10), compared by
#               bench/ab_compare.py (tuned / untuned geomean per arm); the GPU shadow test
#               (promotion, rollback, capture) and the GPU tune test on the tiny sheet
#   multi       two GPUs or more (says "needs 2 GPUs" and does nothing on one): memra check
#               --device all with every device on its own profile and with MEMRA_ARCH=1:cuda,
#               memra bench --device all (receipt v4), test_multigpu bench (one thread per
#               device, every lane, bit for bit, throughput alone vs both busy, receipt) and
#               test_multigpu hotadd (fp8blk hot-loaded while both serve), native and with
#               MEMRA_ARCH=1:cuda
#   xencu       ncu of every launch of bench moe's first rounds on the Mixtral-like gate rows at
#               m = XENCU_M (default 512; grouped, per-expert loop, dense) for XENCU_FORMATS (default q8_0
#               fp8blk, the latter on its own dense kernel), the first XENCU_C launches (default 60):
#               one summary line a launch (see step_xencu)
#   xeovl       MEMRA_MMQ_XE_OVERLAP=1 (the remainder launch beside the full tiles' last wave) against
#               the plain launches: bench moe mixtral rotated, the GPU tests, check, sanitizers
#   xesan       the four sanitizer tools (XESAN_TOOLS) over test_gpu_experts XESAN_CASES (default run fp8blk)
#   krtc        MEMRA_MMQ_KR_TC=1 (gemm_kr's min term on TF32 MMAs): tests, checks, admission, four tools,
#               knobab on the q4_k / q5_k rows (see step_krtc)
#   xepf        MEMRA_FP8BLK_XE_PF (the fp8blk grouped tile's L2 prefetch of the weight) 0 / 4 / 8: bench
#               moe at m = 512, tests, check, ncu (DRAM rate of the grouped launches), four tools
#               (see step_xepf)
#   xearms      fp8blk grouped tile variants side by side (XEARMS: name:VAR=VALUE:kernel-ERE ...): bench moe
#               rotations, ncu of each arm's grouped launches, tests / check / tools on XEARMS_TEST
#               (see step_xearms)
#   krsums      MEMRA_MMQ_KR_SUMS (Q4_K / Q5_K's min term from the q8_1 sum plane, the default): tests,
#               checks (three profiles), four tools, knobab 0 / 1 on the q4_k / q5_k rows (KRSUMS_PARTS,
#               default "tests tools ab"; see step_krsums)
#   krbulk      MEMRA_MMQ_KR_BULK=1 (gemm_kr's _tx tiles on the bulk copies): tests, check, ncu names,
#               four tools, knobab on the q4_k / q5_k rows (see step_krbulk)
#   kr6bulk     MEMRA_MMQ_KR6_BULK=1 (Q6_K's one-CTA tiles on the bulk copies): tests, check, ncu names,
#               four tools, knobab on the q6_k rows (see step_kr6bulk)
#   wg          MEMRA_MMQ_WG=all (gemm_q8_0r on the warpgroup MMA): tests (bit for bit the records tile),
#               check, ncu names, knobab on the mmq / q4_0 rows (see step_wg); wgtr: knobab of
#               MEMRA_MMQ_WG_TR and MEMRA_MMQ_WG_PERSIST; wgncu: ncu of _wg, _wgt, _wgp and the
#               records tile at m = 4096 (WGNCU_ARMS, also wgs); wgtools: the four tools over the
#               warpgroup kernels (WGTOOLS_ARMS); wgs: MEMRA_MMQ_WG_SEED=1 (the tile seeded by a u8 MMA):
#               smokes, tests, check, ncu names, knobab against _wgt and the records tiles, four tools
#   krwg        MEMRA_MMQ_KR_WG=1 (Q4_K / Q5_K on the seeded warpgroup tile; KRWG_VALUE=mma: its min term by
#               tf32 wgmmas; =pre: that tile on the call's widened image): smoke, tests (bit for bit the
#               per-32 records tile; =mma in the band; =pre bit for bit =mma), check, info, ncu names, four
#               tools, knobab (see step_krwg; KNOBAB_OFF=mma times =pre against =mma)
#   krpre       MEMRA_MMQ_KR_WG=pre / pre2 (the _wgm tile fed by per-call widening passes): tests (bit for bit
#               =mma), checks, ncu durations, bench 27b with KR_WG 0 / mma / pre / pre2 rotated (KRPRE_ARMS;
#               also auto: pre2 from 1024 tokens), tools (see step_krpre)
#   krsumsxe    MEMRA_MMQ_KR_SUMS on the sorted grouped K-quant tiles: tests, checks, bench moe A/B
#               (see step_krsumsxe)
#   xetall      MEMRA_MMQ_XE_TALL=1 (the 160 x 96 interleaved grouped tiles): tests, check, ncu names,
#               four tools, bench moe A/B on the Mixtral rows (see step_xetall)
#   xewg        MEMRA_MMQ_XE_WG=1 (the grouped Q8_0 128-row tiles on the seeded warpgroup tile): tests,
#               check, ncu names, bench moe A/B (Mixtral rows; Qwen3-like at 4096), the overlapped pair,
#               four tools (XEWG_PARTS, default "tests ab ovl tools"; see step_xewg)
#   one         MEMRA_MMQ_ONE=1 (the floor's dense tiles at one CTA per SM): tests, checks, knobab on
#               the floor's rows, four tools (ONE_PARTS, default "tests tools ab"; see step_one)
#   bulk        MEMRA_MMQ_BULK=1 (gemm_q8_0r's stages by the bulk copy engine): tests, checks, admission,
#               four tools, knobab on the q8_0 / q4_0 rows (see step_bulk)
#   bulkxe      MEMRA_MMQ_BULK=1 on the sorted grouped Q8_0 tiles: tests, check, four tools, bench moe A/B
#               (see step_bulkxe)
#   gap         the 43-61 us between some records-plan memra_matmul calls and their two ops (runs l2, n3): knobab
#               MEMRA_MMQ_PDL 1 (one CTA an SM on one-wave grids) / pack (no padding), then 1 / 0, with the split
#               lines; GAP_PARTS=ncu: per-kernel durations under ncu (see step_gap)
#   sk          MEMRA_MMQ_WG_SK (gemm_q8_0r's seeded tile with a stream-k remainder): check, ncu names, four
#               tools, knobab SK_ON / 0 under SK_ENV and the defaults' bench at SK_M (see step_sk)
#   skncu       ncu warp states and source counters of _wgs against _wgsk at m = 4096 (see step_skncu)
#   wgsx        MEMRA_MMQ_WG_SEED=xp (gemm_q8_0r's seeded tile with the token scales a group ahead): tests,
#               check, ncu names, knobab against 1, stall samples, the four tools, in parts (see step_wgsx)
#   wgplan      knobab MEMRA_MMQ_WG=all against 0 at m = 256 .. 1024 (WGPLAN_M): is the plan's pick between
#               the seeded tile and the records tiles the faster one? (see step_wgplan)
#   xestress    gemm_experts (Q8_0 floor, its warpgroup tile at k = 4096, block-128 FP8) from threads and
#               streams in test_gpu_stress, an injected fault, memcheck and racecheck (see step_xestress)
#   xetools     the four tools over check gemm_experts (mmq, --quick) under the defaults
#   moesan      the four sanitizer tools over gemm_experts (mmq check with a forced split,
#               test_gpu_experts fp8blk and split_q6_k), each in its own process
#   xe16        the grouped lanes first run in run t2: f16 / bf16 (MEMRA_MMQ_XE_F16) and per-tensor fp8
#               (MEMRA_FP8BLK_XE_PT): tests, check, bench moe, four tools (step_xe16)
#   h16sweep    the 16-bit grouped tile's variants (MEMRA_MMQ_XE_H16, MEMRA_MMQ_XE_BM=64): tests, memcheck,
#               bench moe f16 rotated, ncu of the f16 and fp8blk grouped tiles (see step_h16sweep)
#   fp8xe       the fp8blk grouped lane's launch choices (the two tables against MEMRA_FP8BLK_XE_ONE=1's
#               one tile-major table): bench moe with the fp8blk module preferred, the GPU tests,
#               the check and the four tools (see step_fp8xe)
#   moesweep    the grouped floor's launch choices on the Mixtral-like rows (MEMRA_MMQ_XE_BM x
#               MEMRA_MMQ_XE_SPLIT, then MEMRA_MMQ_XE_MERGE 1 / 0 alternately, see step_moesweep), the
#               merged launch's GPU tests, check and sanitizers, then the forced split's check and memcheck
#   moe         issue 30, mixture-of-experts: ctest -R 'experts|gpu_runtime_mmq|fake_routing'
#               (the grouped op, readers, tools; the GPU lane on the fake driver), memra check
#               --device 0 --op gemm_experts (mmq's first GPU lane: gemm_q8_0r on Q8_0 records,
#               the device-side routing kernel + the grouped tensor-core tiles of gemm_q8_0r and
#               gemm_kr; other lanes DECLINED),
#               under the native and the forced cuda profile, compute-sanitizer memcheck and
#               racecheck of that check, memra bench moe --device 0 at MOE_M (default
#               "512 4096") for MOE_FORMATS (default "q8_0 fp8blk"; fp8blk_own: fp8blk with gemm_fp8_blk preferred on the fp8blk module, so the loop and dense arms run memra's own kernel), both routings, with
#               MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 (the floor, where the GPU lane is), receipts to $R (the
#               grouped arm beside a loop of per-expert memra_matmul calls; a lane the GPU does
#               not serve times the loop alone and says why), then make_layer_files.py
#               --moe-only (MOE_EXPERTS, default 128) with memra check --model and memra bench
#               --model on device 0 (budget 0 too)
#
# TAG names the receipts (default: the date). Logs and receipts come back as
# $OUT/logs.tar and $OUT/receipts.tar; $OUT/summary.txt is printed last.
set -u
OUT=${OUT:-/tmp/memra-out}
mkdir -p "$OUT"
L=${L:-/tmp/memra-logs} R=${R:-/tmp/memra-receipts} B=${B:-/tmp/memra-build}
mkdir -p $L $R
S=$OUT/summary.txt
: > "$S"
TAG=${TAG:-$(date +%Y-%m-%d)}
M=$B/bin/memra T=$B/bin/test_mmq_ops
export MEMRA_CACHE_DIR=/tmp/memra-jit-cache
t0=$SECONDS
say() { echo "$*" >> "$S"; }
# Tracking of the bulk (TMA) copies and of wgmma operands by memcheck and initcheck, where this
# compute-sanitizer has the options: without them a TMA store is invisible to initcheck, and every
# read of cuBLASLt's TMA-written output (memra's row copy after the sm90 block lane) was reported
# as uninitialised in run q2 (227104 reports in memra_k_copy_rows_f32)
SAN_TMA=""
if command -v compute-sanitizer > /dev/null 2>&1; then
  san_help=$(compute-sanitizer --help 2>&1)
  for o in check-bulk-copy check-warpgroup-mma; do
    grep -q -- "--$o" <<< "$san_help" && SAN_TMA="$SAN_TMA --$o yes"
  done
fi
san_x() { case $1 in memcheck|initcheck) echo $SAN_TMA ;; esac; }

# the commit the build's receipts name: the define as the generator wrote it (Ninja's build.ninja
# escapes the quotes, Makefiles' flags.make does not; run s's build lines read only the latter)
build_commit() {
  cat $B/build.ninja $B/tools/CMakeFiles/memra_tool.dir/flags.make 2>/dev/null |
    grep -m1 -oE 'MEMRA_GIT_COMMIT=\\?"[0-9a-z]+' | grep -oE '[0-9a-z]+$'
}

step_build() {
  local t=$SECONDS
  # BUILD_TARGETS (optional): only those targets, e.g. "memra_tool memra_fp8blk test_gpu_experts".
  # DEVICE_COMMIT (the caller's `git rev-parse --short HEAD`, written into the command): the commit
  # the receipts name; the device's copy of the tree carries a .git whose HEAD need not be the
  # tree's (run r4's receipts named 8bba7a4 for a tree at 65b1c18)
  # (always passed, empty when unset: MEMRA_COMMIT is a cache variable of the kept build folder)
  local cm=(-DMEMRA_COMMIT="${DEVICE_COMMIT:-}")
  if ! { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=OFF -DBUILD_TESTING=ON \
           "${cm[@]}" &&
         cmake --build $B -j16 ${BUILD_TARGETS:+--target $BUILD_TARGETS}; } > "$L/build.log" 2>&1; then
    tail -40 "$L/build.log"; say "build: FAILED"; return 1
  fi
  say "build: $((SECONDS - t)) s, $(grep -c 'warning:' "$L/build.log") compiler warnings (this gcc; -Werror is CI's), commit $(build_commit)"
}

step_unpack() {
  [ -f .carry/build.tar.xz ] || { say "unpack: no .carry/build.tar.xz (bench/carry_build.sh, and carry .carry)"; return 1; }
  mkdir -p $B && tar -xJf .carry/build.tar.xz -C $B || { say "unpack: FAILED"; return 1; }
  export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "unpack: the CPU machine's build of $(cat $B/.carry-commit 2>/dev/null); $($M --version 2>&1 | head -1)"
}

step_info() {
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu --format=csv
    $M --version; echo; $M info; echo; $M jit warm; $M jit ls; } > "$L/info.txt" 2>&1
  say "info: $(grep -m1 -E 'H200|H100' "$L/info.txt" | head -c 120)"
}

step_ctest() {
  (cd $B && timeout ${CTEST_TIMEOUT:-550} ctest -L '^gpu$' ${CTEST_R:+-R "$CTEST_R"} ${CTEST_J:+-j $CTEST_J} --timeout 300 --output-on-failure \
     > "$L/ctest_gpu.log" 2>&1)
  say "ctest -L gpu: exit $? $(grep -E 'tests passed' "$L/ctest_gpu.log")"
  grep -E "\*\*\*|Failed|Not Run" "$L/ctest_gpu.log" | head -12 >> "$S"
}

# CHECK_PROFILES (default "native sm120 cuda"): the profiles, so that one call need not run all three (run n4:
# the native and sm120 checks took about 400 s of a 440 s call)
step_check() {
  local profiles=" ${CHECK_PROFILES:-native sm120 cuda} " p
  if [[ $profiles == *" native "* ]]; then
    timeout 400 $M check --device 0 --json $R/check_h200_$TAG.json > "$L/check.log" 2>&1
    say "memra check --device 0: exit $? $(grep -E 'passed, ' "$L/check.log")"
    grep -E " FAIL" "$L/check.log" | head -8 >> "$S"
    save_out # a call cut during the next profile still returns this one's log (ac1 lost it)
  fi
  for p in sm120 cuda; do
    [[ $profiles == *" $p "* ]] || continue
    MEMRA_LOG=info MEMRA_ARCH=$p timeout 300 $M check --device 0 > "$L/check_$p.log" 2>&1
    say "memra check --device 0 (MEMRA_ARCH=$p): exit $? $(grep -E 'passed, ' "$L/check_$p.log")"
    grep -E " FAIL" "$L/check_$p.log" | head -8 >> "$S"
    save_out
  done
  if [[ $profiles == *" cuda "* ]]; then
    # the portable module's images and where they came from (PTX compiled by the driver, or SASS)
    grep -E "portable.*loaded from" "$L/check_cuda.log" | sort -u | head -8 | cut -c1-200 >> "$S"
    MEMRA_ARCH=cuda timeout 200 $M check --device 0 --module portable > "$L/check_cuda_portable.log" 2>&1
    say "memra check --device 0 --module portable (MEMRA_ARCH=cuda): exit $? $(grep -E 'passed, ' "$L/check_cuda_portable.log")"
  fi
}

# The kernels of vendor libraries (cuBLASLt's split-k reduction and its nvjet/xmma
# GEMMs). Each cell runs once, fully instrumented, printing every report
# (--print-limit 0, no backtraces); san_classify then files each report under the
# kernel it names: a vendor kernel's, or memra's own (anything else, a report naming
# no kernel included). The own count must be 0; the vendor kernels are named. (Kernel
# filters cannot split the count: an uninstrumented kernel's writes are invisible to
# initcheck, so memra's reads of cuBLASLt's output then show as uninitialised, and
# racecheck with a filter failed inside the tool on this machine.)
VENDOR_RE='cublasLt|nvjet|xmma|cutlass|gemmSN|gemv'
san_count() { # tool log -> error count
  if [ "$1" = racecheck ]; then
    grep -oE "RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?" "$2" | tail -1 |
      sed -E 's/.*\(([0-9]+) errors?, ([0-9]+) warnings?/\1 \2/' | awk '{print $1 + $2}'
  else
    grep -oE "ERROR SUMMARY: [0-9]+" "$2" | tail -1 | grep -oE "[0-9]+$"
  fi
}
# log -> "records own vendor_kernels..." (every report of the log, filed by kernel)
san_classify() {
  awk -v vre="$VENDOR_RE" '
    function flush() { if (open) { if (kern ~ vre) { v++; vk[kern] = 1 } else o++; n++ } open = 0; kern = "" }
    /^========= (COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application|Program hit|This tool|Internal)/ { flush(); next }
    /^========= (Warning: Error buffer overflow|Error: process didn.t terminate)/ { flush(); next }
    function take(line,   k) { if (line !~ / at (void )?[A-Za-z_]/ || line ~ / at (__shared__|__global__|__local__)/) return
                                  k = line; sub(/.* at (void )?/, "", k); sub(/[+<( ].*/, "", k); kern = k }
    /^========= [A-Z]/ { flush(); open = 1; take($0); next }
    open && kern == "" && / at / { take($0) }
    END { flush(); s = ""; for (k in vk) s = s " " k; print n + 0, o + 0, s }' "$1"
}
# san_classify's three fields in words: "N reports: memra's own O; vendor kernels: ..."
san_said() {
  local n o v
  read -r n o v < <(san_classify "$1")
  echo "$n reports: memra's own $o${v:+; vendor kernels: $v}"
}
# One sanitizer process: tool profile op module -> a log and one table line.
# op "admission" (module "all") is memra info with the admission self-check on:
# every module's ops at small shapes, as memra_open runs them. Every other cell runs
# with MEMRA_ADMISSION=off, so that it runs only its own (op, module) kernels and one
# cell's fault never shows up in (or hides behind) another's.
san_one() {
  local tool=$1 prof=$2 op=$3 mod=$4 log="$L/san/$1.$2.$3.$4.log" extra=() env=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  [ "$prof" != native ] && env=("MEMRA_ARCH=$prof")
  local cmd
  if [ "$op" = admission ]; then
    # under a sanitizer the self-check is 10-100x slower: give it the time
    env+=("MEMRA_ADMISSION=all" "MEMRA_ADMISSION_TIMEOUT_MS=600000")
    cmd=("$M" info)
  else
    env+=("MEMRA_ADMISSION=off")
    cmd=("$M" check --device 0 --op "$op" --module "$mod" ${SAN_QUICK:+--quick})
  fi
  env "${env[@]}" timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool "$tool" $(san_x "$tool") "${extra[@]}" --print-limit 0 \
    --show-backtrace no "${cmd[@]}" > "$log" 2>&1
  local rc=$? n own vendor="" pass recs
  n=$(san_count "$tool" "$log"); own=$n
  if [ "$op" = admission ]; then
    pass="$(grep -c -i 'quarantin' "$log") quarantined"
  else
    pass=$(grep -oE "[0-9]+ passed, [0-9]+ failed" "$log" | tail -1)
  fi
  if [ -n "$n" ] && [ "$n" != 0 ]; then
    read -r recs own vendor < <(san_classify "$log")
    # every counted report must have been filed, else the split is unknown (a
    # launch's error buffer holds 256 records: the tool then drops the rest of
    # that launch's, says so, and counts what it kept)
    if grep -q "Error buffer overflow" "$log"; then
      vendor="$vendor (the tool kept $recs of its $n reports: a launch's buffer holds 256)"
    elif [ "$tool" != racecheck ] && [ "$recs" != "$n" ]; then
      own="?($recs/$n)"
    fi
    # initcheck reports on memra's kernels: the same cell with every new scratch block
    # zero-filled (MEMRA_TEST_SCRATCH_ZERO=1). If its rows still pass and the reports
    # go, memra's kernels read what another writer put there after the fill (the check
    # compares every element with the host), a writer the tool does not track
    if [ "$tool" = initcheck ] && [ "$own" != 0 ]; then
      env "${env[@]}" MEMRA_TEST_SCRATCH_ZERO=1 timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool initcheck $(san_x initcheck) \
        --print-limit 0 --show-backtrace no "${cmd[@]}" > "$log.zero" 2>&1
      local zrc=$? zrecs zown zv
      read -r zrecs zown zv < <(san_classify "$log.zero")
      vendor="$vendor; scratch zero-filled: exit $zrc, memra's own $zown, $(grep -oE "[0-9]+ passed, [0-9]+ failed" "$log.zero" | tail -1)"
      # u<N>: N reports, all gone once the scratch memra's kernels read was
      # initialised by a fill the tool saw, with every check row still passing: the
      # bytes they read came from a writer the tool does not track (not a read of
      # unwritten memory). Counted clean, shown as such.
      [ "$zrc" = 0 ] && [ "$zown" = 0 ] && [ "$own" != 0 ] && own="u$own"
      { grep -E "^=========     at " "$log.zero" | sed -E 's/.* at (void )?//; s/[+<(].*//' | sort | uniq -c | sort -rn
        head -100 "$log.zero"; } > "$log.zero.cut" && mv "$log.zero.cut" "$log.zero"
    fi
    # keep the log's head and a per-kernel count, not every report
    { grep -E "^=========     at |Thread .* at " "$log" | sed -E 's/.* at (void )?//; s/[+<(].*//' | sort | uniq -c | sort -rn
      echo "--- the program's own output:"; grep -v "^=========" "$log" | head -300
      echo "--- the tool's first reports:"; head -300 "$log"; echo "[... cut ...]"; tail -40 "$log"; } > "$log.cut" && mv "$log.cut" "$log"
  fi
  [ -z "$n" ] && n="?"
  [ -z "$own" ] && own="?"
  [ "$rc" = 124 ] && n="timeout" && own="timeout"
  # a cell counts only when memra check ran its rows and passed them: any other exit
  # (2: the module was not admitted or the pair is unknown; 1: a row failed) is shown
  # as such, never as 0 errors
  [ "$rc" != 0 ] && [ "$rc" != 124 ] && own="exit$rc"
  printf "%-10s %-7s %-16s %-8s %7s %9s  exit %-3s %-22s %s\n" "$tool" "$prof" "$op" "$mod" "$own" "$n" "$rc" "$pass" \
    "${vendor:+vendor kernels: $vendor}"
}
export -f san_one
# san_one runs in xargs' bash: san_x and SAN_TMA go with it (run ac5 ran without them: every
# cell printed "san_x: command not found" and lost the TMA tracking)
export M L VENDOR_RE SAN_QUICK SAN_TIMEOUT SAN_TMA
export -f san_count san_classify san_x

step_sanitize() {
  mkdir -p "$L/san"
  local t=$SECONDS jobs=${SAN_JOBS:-8}
  : > "$L/san/cases.txt"
  for prof in ${SAN_PROFILES:-native sm120 cuda}; do
    local env=""
    [ "$prof" != native ] && env="MEMRA_ARCH=$prof"
    env $env timeout 300 $M check --device 0 --quick > "$L/san/list.$prof.log" 2>&1
    awk -v p=$prof '$1 == "[0]" && $3 != "" && $4 != "" {print p, $3, $4}' "$L/san/list.$prof.log" | sort -u >> "$L/san/cases.txt"
    echo "$prof admission all" >> "$L/san/cases.txt"
  done
  for tool in ${SAN_TOOLS:-memcheck racecheck initcheck synccheck}; do
    awk -v t=$tool '{print t, $1, $2, $3}' "$L/san/cases.txt"
  done | xargs -P "$jobs" -n 4 bash -c 'san_one "$@"' _ | tee "$OUT/sanitize_partial.txt" | sort > "$L/sanitize_table.txt"
  {
    echo "tool       profile op               module       own     total  (exit, check rows, vendor kernels among the total)"
    cat "$L/sanitize_table.txt"
  } > "$L/sanitize_table.txt.new" && mv "$L/sanitize_table.txt.new" "$L/sanitize_table.txt"
  mv "$OUT/sanitize_partial.txt" "$OUT/sanitize_table.txt"
  cp "$L/sanitize_table.txt" "$OUT/sanitize_table.txt"
  local cells nonzero
  cells=$(($(wc -l < "$L/sanitize_table.txt") - 1))
  nonzero=$(awk 'NR > 1 && $5 != "0" && $5 !~ /^u[0-9]+$/' "$L/sanitize_table.txt" | wc -l)
  say "sanitize: $cells cells, $nonzero not clean (memra's own errors, a failed or refused check, or a timeout), $((SECONDS - t)) s"
  tar -C $L -cf "$OUT/logs_sanitize.tar" san sanitize_table.txt
  awk 'NR > 1 && ($5 != "0" || $6 != "0")' "$L/sanitize_table.txt" | head -40 | cut -c1-200 >> "$S"
}

step_stress() {
  if [ -x $B/bin/test_gpu_stress ]; then
    for c in streams graphs; do
      timeout 300 $B/bin/test_gpu_stress $c > "$L/gpu_stress_$c.log" 2>&1; say "test_gpu_stress $c: exit $?"
      tail -3 "$L/gpu_stress_$c.log" >> "$S"
    done
    # the stress test under the sanitizer (its kernels' bounds and races, concurrent streams)
    for tool in memcheck racecheck; do
      local ex=() lg="$L/gpu_stress_san_$tool.log"
      [ $tool = racecheck ] && ex=(--racecheck-report hazard)
      MEMRA_ADMISSION=off timeout 400 compute-sanitizer --tool $tool $(san_x $tool) "${ex[@]}" --print-limit 0 --show-backtrace no \
        $B/bin/test_gpu_stress streams > "$lg" 2>&1
      local rc=$? n recs own vendor
      n=$(san_count $tool "$lg")
      read -r recs own vendor < <(san_classify "$lg")
      say "compute-sanitizer $tool test_gpu_stress streams: exit $rc, $n reports, memra's own $own${vendor:+, vendor kernels:$vendor}"
      { grep -E "^=========     at |Thread .* at " "$lg" | sed -E 's/.* at (void )?//; s/[+<(].*//' | sort | uniq -c | sort -rn
        echo "--- the program's own output:"; grep -v "^=========" "$lg" | head -300
        echo "--- the tool's first reports:"; head -200 "$lg"; echo "[... cut ...]"; tail -30 "$lg"; } > "$lg.cut" && mv "$lg.cut" "$lg"
    done
  else
    say "stress: no test_gpu_stress binary in this build"
  fi
}

step_racecheck() {
  if [ ! -x $B/bin/test_gpu_stress ]; then say "racecheck: no test_gpu_stress binary in this build"; return 0; fi
  local c=${RACE_CASE:-streams} ex=${RACE_ERROR_EXIT:-86}
  local tl="$L/racecheck_${c}_tool.log" ol="$L/racecheck_${c}_test.log" t=$SECONDS
  local env=(MEMRA_ADMISSION=off)
  [ -n "${RACE_DISABLE:-}" ] && env+=(MEMRA_DISABLE="$RACE_DISABLE")
  # RACE_ARCH: a forced profile (the portable one still runs its f16 and FP8 GEMMs on cuBLASLt)
  [ -n "${RACE_ARCH:-}" ] && env+=(MEMRA_ARCH="$RACE_ARCH")
  # RACE_LANES: the stress test's lanes (MEMRA_TEST_STRESS_LANES), e.g. RACE_DISABLE=sm90
  # RACE_LANES=fp8blk,mmq: memra's own GEMM kernels with no cuBLASLt kernel in the process
  [ -n "${RACE_LANES:-}" ] && env+=(MEMRA_TEST_STRESS_LANES="$RACE_LANES")
  # RACE_EXCLUDE: kernels racecheck leaves alone (compute-sanitizer's --kernel-name-exclude, e.g.
  # kns=nvjet for cuBLASLt's, whose mbarrier pipelines it reports as hazards by the ten thousand)
  local ex_args=()
  [ -n "${RACE_EXCLUDE:-}" ] && ex_args=(--kernel-name-exclude "$RACE_EXCLUDE")
  # the main process only (--target-processes application-only): memra's trial helpers, spawned
  # processes, would otherwise run instrumented too, slow enough to meet their own time limit
  env "${env[@]}" timeout -k 10 ${RACE_TIMEOUT:-540} compute-sanitizer --tool racecheck $(san_x racecheck) --racecheck-report hazard \
    --target-processes application-only "${ex_args[@]}" \
    --print-limit 0 --show-backtrace no --error-exitcode "$ex" --log-file "$tl" \
    $B/bin/test_gpu_stress "$c" > "$ol" 2>&1
  local rc=$? n recs own vendor why
  n=$(san_count racecheck "$tl")
  read -r recs own vendor < <(san_classify "$tl")
  case $rc in
    0) why="the test passed, no hazard" ;;
    "$ex") why="hazards reported (the tool's --error-exitcode)" ;;
    124|137) why="killed at the time limit (${RACE_TIMEOUT:-540} s)" ;;
    77) why="the test skipped (no CUDA device)" ;;
    *) why="the test's own exit status (no hazard reported by the tool)" ;;
  esac
  say "racecheck test_gpu_stress $c${RACE_DISABLE:+ (MEMRA_DISABLE=$RACE_DISABLE)}${RACE_ARCH:+ (MEMRA_ARCH=$RACE_ARCH)}${RACE_LANES:+ (lanes $RACE_LANES)}: exit $rc: $why; $((SECONDS - t)) s;" \
      "${n:-no summary} hazards, $recs reports: memra's own $own${vendor:+, vendor kernels:$vendor}"
  say "  the test's own output ($ol), last lines:"; tail -5 "$ol" | sed 's/^/    /' >> "$S"
  { echo "--- reports per kernel:"
    grep -E "^=========     at |Thread .* at " "$tl" | sed -E 's/.* at (void )?//; s/[+<(].*//' | sort | uniq -c | sort -rn
    echo "--- the tool's first reports:"; head -200 "$tl"; echo "[... cut ...]"; tail -30 "$tl"; } > "$tl.cut" && mv "$tl.cut" "$tl"
  return 0
}

step_bench() {
  for mm in ${BENCH_M:-512 4096}; do
    timeout 200 $M bench 27b --m $mm --json $R/bench_27b_m${mm}_$TAG.json > "$L/bench_27b_m$mm.txt" 2>&1
    say "memra bench 27b m=$mm: exit $? $(grep -m1 geometric "$L/bench_27b_m$mm.txt")"
    if [ "${BENCH_ROUTE:-0}" = 1 ]; then # the route on (the profile's crossover): the floor's arms routed from its m
      MEMRA_FLOOR_F16_M=auto timeout 200 $M bench 27b --m $mm --json $R/bench_27b_m${mm}_route_$TAG.json \
        > "$L/bench_27b_m${mm}_route.txt" 2>&1
      say "memra bench 27b m=$mm MEMRA_FLOOR_F16_M=auto: exit $? $(grep geometric "$L/bench_27b_m${mm}_route.txt" | tail -1)"
    fi
    [ "${BENCH_BATCH:-1}" = 0 ] && continue
    timeout 200 $M bench 27b --m $mm --batch 8 --reps 10 --json $R/bench_27b_m${mm}_batch8_$TAG.json \
      > "$L/bench_27b_m${mm}_batch8.txt" 2>&1
    say "memra bench 27b m=$mm --batch 8: exit $?"
  done
}

# A knob's A/B on the 27b sheet: memra bench 27b at KNOBAB_M (default 512) with KNOBAB_KNOB (default
# MEMRA_MMQ_R3_UNROLL) 0 and 1, KNOBAB_ROUNDS rounds (default 2), the order alternating; the rows of
# the arm KNOBAB_ARM (default mmq) in the summary, receipts to $R
step_knobab() {
  local t=$SECONDS mm r i v f kn=${KNOBAB_KNOB:-MEMRA_MMQ_R3_UNROLL}
  for mm in ${KNOBAB_M:-512}; do for ((r = 1; r <= ${KNOBAB_ROUNDS:-2}; r++)); do for ((i = 0; i < 2; i++)); do
    v=$(((i + r - 1) % 2))
    # the knob's "on" value: KNOBAB_ON (default 1), its "off" value KNOBAB_OFF (default 0); receipts and
    # logs are named 0 / 1, and with KNOBAB_ON given also _on<value> (two knobabs in one call keep apart), then
    # KNOBAB_SFX
    f="$L/knobab_m${mm}_${v}_$r${KNOBAB_ON:+_on$KNOBAB_ON}${KNOBAB_SFX:-}.txt"
    env ${KNOBAB_ENV:-} $kn=$([ $v = 1 ] && echo "${KNOBAB_ON:-1}" || echo "${KNOBAB_OFF:-0}") timeout 200 $M bench 27b --m $mm \
      --json $R/knobab_27b_m${mm}_${kn}_${v}_${r}${KNOBAB_ON:+_on$KNOBAB_ON}${KNOBAB_SFX:-}_$TAG.json > "$f" 2>&1
    say "knobab bench 27b m=$mm ${KNOBAB_ENV:+$KNOBAB_ENV }$kn=$([ $v = 1 ] && echo "${KNOBAB_ON:-1}" || echo "${KNOBAB_OFF:-0}") (round $r): exit $?"
    awk -v a="^(${KNOBAB_ARM:-mmq})\$" '$1 ~ /->/ {s = $1} $1 ~ a || $2 ~ a {print "  " s, $0}' "$f" | grep -v split >> "$S"
  done; done; done
  say "knobab: $((SECONDS - t)) s"
}

# MEMRA_MMQ_QUANT_LEAN (the 2-D-grid quantiser, memra_k_quant_q8_1l): its GPU test (ctest mmq_quant_lean, bit for
# bit the host, beside the default's mmq_quant), ncu of one launch of each kernel at m = 512 and 4096 (test_mmq_ops
# bench, k = 5120: duration, DRAM throughput, occupancy, warp states), memcheck / racecheck / initcheck / synccheck
# over the quantiser case under the knob, then knobab 0 / 1 at QUANT_M (default "512 4096"), QUANT_ROUNDS rounds
# (default 2), the mmq and q4_k rows and each run's quantiser time alone
step_quant() {
  local t=$SECONDS v sk f
  (cd $B && timeout 150 ctest -R '^mmq_quant' --output-on-failure > "$L/quant_ctest.log" 2>&1)
  say "ctest mmq_quant, mmq_quant_lean: exit $? $(grep -E 'tests passed' "$L/quant_ctest.log")"
  for v in 0 1; do for sk in 2 40; do
    MEMRA_MMQ_QUANT_LEAN=$v MEMRA_ADMISSION=off timeout 120 ncu --clock-control none --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats -k regex:memra_k_quant_q8_1 \
      --launch-skip $sk -c 1 $T bench > "$L/quant_ncu_${v}_$sk.txt" 2>&1
    say "ncu quant_q8_1 LEAN=$v (launch $sk; 2: m = 512, 40: m = 4096): exit $? $(grep -E '^ +(memra_k_quant|Duration|DRAM Throughput|Achieved Occupancy|Grid Size)' \
      "$L/quant_ncu_${v}_$sk.txt" | tr -s ' ' | cut -c1-60 | paste -sd';')"
  done; done
  # the four tools over the quantiser case under the knob, each in its own process (QUANT_TOOLS=0 skips them)
  if [ "${QUANT_TOOLS:-1}" = 1 ]; then
    local tool lg
    for tool in memcheck racecheck initcheck synccheck; do
      lg="$L/quant_san_$tool.log"
      MEMRA_MMQ_QUANT_LEAN=1 MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $tool $(san_x $tool) --print-limit 0 \
        $T quant > "$lg" 2>&1
      say "compute-sanitizer $tool test_mmq_ops quant (MEMRA_MMQ_QUANT_LEAN=1): exit $?, $(san_count $tool "$lg") reports"
    done
  fi
  KNOBAB_KNOB=MEMRA_MMQ_QUANT_LEAN KNOBAB_M="${QUANT_M:-512 4096}" KNOBAB_ROUNDS=${QUANT_ROUNDS:-2} KNOBAB_ARM='mmq|q4_k' \
    step_knobab
  for f in "$L"/knobab_m*_[01]_[0-9].txt; do
    say "  $(basename "$f" .txt) quant_q8_1 alone (ms, the six rows): $(grep 'mmq split' "$f" | sed -E 's/.*quant_q8_1 \(mmq\) ([0-9.]+) ms.*/\1/' | paste -sd' ')"
  done
  say "quant: $((SECONDS - t)) s"
}

step_raw() {
  timeout 200 $B/bin/memra-bench-raw --sheet 27b --m 512 --json $R/raw_27b_m512_$TAG.json > "$L/raw_27b_m512.txt" 2>&1
  say "memra-bench-raw 27b m=512: exit $?"
}

# memra's block-128 FP8 kernels beside the sm90 module's cuBLASLt lane: correctness
# first (memra check of gemm_fp8_blk for the fp8blk module with the wgmma kernel and
# with the mma.sync one, the forced sm120 profile, test_mmq_ops fp8blk), then
# `memra bench gemm_fp8_blk --vs sm90 fp8blk` at FP8_M (default "512 4096") for each
# kernel, memra-bench-raw (the FP8 lanes beside raw cuBLASLt on pre-quantised input)
# at FP8_M, ncu of the activation quantisers (time, DRAM bytes) and of the two
# GEMM kernels at one shape, and the four sanitizer tools over the fp8blk check.
step_fp8() { step_fp8check && step_fp8bench && step_fp8ncu && step_fp8san; }
step_fp8check() {
  local k
  for k in ${FP8_KERNELS:-auto mbwide mb 0}; do
    MEMRA_FP8BLK_WGMMA=$k MEMRA_LOG=info timeout 200 $M check --device 0 --op gemm_fp8_blk --module fp8blk \
      > "$L/fp8_check_wgmma_$k.log" 2>&1
    say "check gemm_fp8_blk fp8blk (MEMRA_FP8BLK_WGMMA=$k): exit $? $(grep -E 'passed, ' "$L/fp8_check_wgmma_$k.log")"
    grep -E " FAIL" "$L/fp8_check_wgmma_$k.log" | head -6 >> "$S"
    grep -m1 -oE "gemm_fp8_blk variant [^;]*" "$L/fp8_check_wgmma_$k.log" >> "$S"
    MEMRA_FP8BLK_WGMMA=$k timeout 200 $T fp8blk > "$L/fp8_test_mmq_fp8blk_$k.log" 2>&1
    say "test_mmq_ops fp8blk (MEMRA_FP8BLK_WGMMA=$k): exit $?"
    grep -E "FAIL" "$L/fp8_test_mmq_fp8blk_$k.log" | head -4 >> "$S"
  done
  for o in gemm_fp8_blk gemm_fp8; do
    timeout 200 $M check --device 0 --op $o > "$L/fp8_check_$o.log" 2>&1
    say "check $o (every module): exit $? $(grep -E 'passed, ' "$L/fp8_check_$o.log")"
    grep -E " FAIL" "$L/fp8_check_$o.log" | head -6 >> "$S"
    # the one-pass quantisers at a given scale (issue 25 item 2): rows 'xs' (static x_scale) and 'amax' (x_amax)
    say "  $o given scales (xs, amax rows): $(grep -cE ' (xs|amax) .*PASS' "$L/fp8_check_$o.log") PASS," \
        "$(grep -cE ' (xs|amax) .*FAIL' "$L/fp8_check_$o.log") FAIL, $(grep -cE ' (xs|amax) .*DECLINED' "$L/fp8_check_$o.log") DECLINED"
    # forced profiles (--quick: the given-scale rows are in it): the portable lanes (cuda) and the
    # sm120 module's refusal on an H200 (sm120); FP8_PROFILES= (empty) skips them
    for p in ${FP8_PROFILES-cuda sm120}; do
      MEMRA_ARCH=$p timeout 200 $M check --device 0 --op $o --quick > "$L/fp8_check_${o}_$p.log" 2>&1
      say "check $o (MEMRA_ARCH=$p): exit $? $(grep -E 'passed, ' "$L/fp8_check_${o}_$p.log")"
      grep -E " FAIL" "$L/fp8_check_${o}_$p.log" | head -4 >> "$S"
    done
  done
  # the quantised activation bit for bit against the host (identity weight), every module, all three scale sources
  timeout 200 $T fp8given > "$L/fp8_test_mmq_fp8given.log" 2>&1
  say "test_mmq_ops fp8given (one-pass quantisers vs host, bit for bit): exit $?"
  grep -E "FAIL" "$L/fp8_test_mmq_fp8given.log" | head -6 >> "$S"
  # an injected fault (the first case of each op) must still fail the check
  MEMRA_CHECK_INJECT_FAULT=1 timeout 200 $M check --device 0 --op gemm_fp8 --quick > "$L/fp8_check_inject.log" 2>&1
  say "check gemm_fp8 injected: exit $? (must be non-zero) $(grep -E 'passed, ' "$L/fp8_check_inject.log")"
  # the host and fake-driver tests of the one-pass quantisers
  ( cd $B && timeout 200 ctest -R 'host_ops.gemm_fp8|core.matmul_host|gpu_runtime|fake_routing|files.gpu_matmul' \
      --output-on-failure --timeout 100 ) > "$L/fp8_given_ctest.log" 2>&1
  say "given-scale ctest: exit $? $(grep -E 'tests passed' "$L/fp8_given_ctest.log")"
}
# the one-pass and own-amax quantisers bit for bit against the host, and the fp8blk GEMMs in
# their band: the quick correctness half of fp8check, for a call with little time
step_fp8quick() {
  timeout 120 $B/bin/test_e4m3_hw modules/kernels/common/e4m3.cuh > "$L/e4m3_hw.log" 2>&1
  say "test_e4m3_hw (the hardware e4m3 conversion, all 2^32 patterns): exit $? $(grep -m1 'patterns' "$L/e4m3_hw.log")"
  timeout 200 $T fp8given > "$L/fp8_test_mmq_fp8given.log" 2>&1
  say "test_mmq_ops fp8given (quantisers vs host, bit for bit): exit $?"
  grep -E "FAIL" "$L/fp8_test_mmq_fp8given.log" | head -6 >> "$S"
  timeout 200 $T fp8blk > "$L/fp8_test_mmq_fp8blk.log" 2>&1
  say "test_mmq_ops fp8blk: exit $?"
  grep -E "FAIL" "$L/fp8_test_mmq_fp8blk.log" | head -4 >> "$S"
}
step_fp8bench() {
  local mm k
  for mm in ${FP8_M:-512 4096}; do
    for k in ${FP8_KERNELS:-auto mbwide mb 0}; do
      MEMRA_FP8BLK_WGMMA=$k timeout 300 $M bench gemm_fp8_blk --vs sm90 fp8blk --sheet 27b --m $mm \
        --json $R/fp8blk_vs_sm90_m${mm}_wgmma${k}_$TAG.json > "$L/fp8blk_vs_sm90_m${mm}_wgmma$k.txt" 2>&1
      say "bench gemm_fp8_blk --vs sm90 fp8blk m=$mm WGMMA=$k: exit $? $(grep -m1 -iE 'geomean|geometric' "$L/fp8blk_vs_sm90_m${mm}_wgmma$k.txt")"
    done
    [ "${FP8_RAW:-1}" = 0 ] && continue
    timeout 300 $B/bin/memra-bench-raw --sheet 27b --m $mm --no-dequant --json $R/raw_27b_m${mm}_$TAG.json \
      > "$L/raw_27b_m$mm.txt" 2>&1
    say "memra-bench-raw 27b m=$mm: exit $?"
    # the one-pass quantisers (issue 25 items 2 and 4): the FP8 lanes at a static x_scale and at producer x_amax
    for gv in ${FP8_GIVEN:-static amax}; do
      timeout 300 $B/bin/memra-bench-raw --sheet 27b --m $mm --no-dequant --given $gv \
        --json $R/raw_27b_m${mm}_given_${gv}_$TAG.json > "$L/raw_27b_m${mm}_given_$gv.txt" 2>&1
      say "memra-bench-raw 27b m=$mm --given $gv: exit $? $(grep -m2 -iE 'geomean' "$L/raw_27b_m${mm}_given_$gv.txt" | tr '\n' ' ')"
    done
  done
}
step_fp8ncu() {
  local mm
  for mm in ${FP8_NCU_M:-4096}; do
    MEMRA_ADMISSION=off timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed \
      -k regex:'memra_k_(quant|amax|fp8blk)' -c 60 \
      $B/bin/memra-bench-raw --sheet 27b --m $mm --reps 1 --warmup 0 --no-dequant > "$L/fp8_ncu_m$mm.txt" 2>&1
    say "ncu fp8 kernels m=$mm: exit $?"
  done
  # one wgmma GEMM in detail (5120->12288 at m=4096): speed of light, memory, warp stalls
  MEMRA_ADMISSION=off timeout 300 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats -k regex:'memra_k_fp8blk_wgmma' -c 1 \
    $M bench gemm_fp8_blk --vs sm90 fp8blk --sheet 27b --m 4096 --reps 1 --warmup 0 > "$L/fp8_ncu_wgmma_detail.txt" 2>&1
  say "ncu wgmma detail: exit $?"
}
step_fp8san() {
  local t mo
  for mo in ${FP8_SAN_MODULES:-fp8blk sm90}; do
    for t in memcheck racecheck initcheck synccheck; do
      # the sm90 block lane's initcheck ran into its 300 s limit twice (runs q2, r3) with the same
      # 227104 reports of memra's row copy reading cuBLASLt's TMA-stored output: FP8_SAN_SM90_INIT=1 to run it
      if [ $mo = sm90 ] && [ $t = initcheck ] && [ "${FP8_SAN_SM90_INIT:-0}" != 1 ]; then
        say "sanitize initcheck gemm_fp8_blk sm90: skipped (FP8_SAN_SM90_INIT=1 runs it; runs q2, r3: 300 s limit, 227104 reads of cuBLASLt's TMA-stored output)"
        continue
      fi
      MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $t $(san_x $t) --print-limit 0 $M check --device 0 --op gemm_fp8_blk \
        --module $mo --quick > "$L/fp8_san_${mo}_$t.log" 2>&1
      say "sanitize $t gemm_fp8_blk $mo: exit $? reports $(san_count $t "$L/fp8_san_${mo}_$t.log") ($(san_said "$L/fp8_san_${mo}_$t.log"))"
    done
  done
  # gemm_fp8's quantisers (the own pass and the one-pass 'xs' / 'amax' rows of --quick)
  for t in memcheck racecheck initcheck synccheck; do
    MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $t $(san_x $t) --print-limit 0 $M check --device 0 --op gemm_fp8 \
      --module sm90 --quick > "$L/fp8_san_sm90_fp8_$t.log" 2>&1
    say "sanitize $t gemm_fp8 sm90: exit $? reports $(san_count $t "$L/fp8_san_sm90_fp8_$t.log") ($(san_said "$L/fp8_san_sm90_fp8_$t.log"))"
  done
}

# The K-quant floor on packed operands (GGUF bytes): its GPU tests, memra check of
# gemm_kr under the native, sm120 and cuda profiles, the admission verdict, memcheck
# over test_mmq_ops gemm_kr; KQ_BENCH=1 adds memra bench 27b at m = 512.
step_kquant() {
  local p
  ( cd $B && timeout 300 ctest -L gpu -R 'mmq_|registry.admission|files.model_cmds_gpu|files.gpu_matmul|gpu_runtime' \
      --output-on-failure --timeout 200 ) > "$L/kq_ctest.log" 2>&1
  say "kquant ctest: exit $? $(grep -E 'tests passed' "$L/kq_ctest.log")"
  grep -E "\*\*\*Failed|Failed  " "$L/kq_ctest.log" | head -6 >> "$S"
  for p in native sm120 cuda; do
    if [ $p = native ]; then timeout 200 $M check --device 0 --op gemm_kr > "$L/kq_check_$p.log" 2>&1
    else MEMRA_ARCH=$p timeout 200 $M check --device 0 --op gemm_kr > "$L/kq_check_$p.log" 2>&1; fi
    say "check gemm_kr ($p): exit $? $(grep -E 'passed, ' "$L/kq_check_$p.log")"
    grep -E " FAIL" "$L/kq_check_$p.log" | head -4 >> "$S"
  done
  timeout 100 $M info > "$L/kq_info.txt" 2>&1
  say "info: $(grep -ciE 'quarantin' "$L/kq_info.txt") quarantine lines; $(grep -iE 'bytes per 256' "$L/kq_info.txt" | head -1 | cut -c1-150)"
  MEMRA_ADMISSION=off timeout 200 compute-sanitizer --tool memcheck $(san_x memcheck) --print-limit 0 $T gemm_kr > "$L/kq_san_memcheck.log" 2>&1
  say "sanitize memcheck test_mmq_ops gemm_kr: exit $? reports $(san_count memcheck "$L/kq_san_memcheck.log")"
  if [ "${KQ_BENCH:-0}" = 1 ]; then
    timeout 200 $M bench 27b --m 512 --json $R/bench_27b_m512_$TAG.json > "$L/kq_bench_27b_m512.txt" 2>&1
    say "memra bench 27b m=512: exit $?"
  fi
}

step_accprobe() {
  for d in wide mid; do
    timeout 100 $M bench accprobe 512 20 27b --dist $d --json $R/accprobe_27b_m512_${d}_$TAG.json > "$L/accprobe_$d.txt" 2>&1
    say "accprobe $d: exit $?"
  done
}

step_sweep() {
  # line-buffered so that a sweep cut by its timeout (SWEEP_TIMEOUT, default 420 s: every arm
  # change reloads the mmq module, which dominates the sweep's time) keeps the shapes it finished
  timeout ${SWEEP_TIMEOUT:-420} stdbuf -oL $T sweep ${SWEEP_M:-} ${SWEEP_SHAPE:-} > "$L/sweep.log" 2>&1
  say "sweep: exit $?"
  grep -E "^SWEEP " "$L/sweep.log" >> "$S"
}

# test_mmq_ops sweep_kr (every gemm_kr tile x split against the plan's pick) for each format of
# SWEEPKR_FMT (default q6_k), each M:SHAPES of SWEEPKR (default "4096:0,2,4": the 27b sheet's
# shapes by index, -1 all), one process a shape under SWEEPKR_TIMEOUT (default 150 s), line-buffered
step_sweepkr() {
  local f spec mm sh
  for f in ${SWEEPKR_FMT:-q6_k}; do for spec in ${SWEEPKR:-4096:0,2,4}; do
    mm=${spec%%:*}
    for sh in $(echo "${spec#*:}" | tr ',' ' '); do
      timeout ${SWEEPKR_TIMEOUT:-150} stdbuf -oL $T sweep_kr $f $mm $sh > "$L/sweepkr_${f}_m${mm}_$sh.log" 2>&1
      say "sweep_kr $f $mm $sh: exit $?"
      grep -E "^KSWEEP " "$L/sweepkr_${f}_m${mm}_$sh.log" >> "$S"
    done
  done; done
}

step_pdl() {
  for mm in 512 4096; do
    timeout 300 $T pdl $mm > "$L/pdl_m$mm.log" 2>&1; say "test_mmq_ops pdl $mm: exit $?"
    grep -E "^PDL " "$L/pdl_m$mm.log" >> "$S"
  done
}

NCU_ST=smsp__average_warps_issue_stalled
NCU_METS=$NCU_ST"_long_scoreboard_per_issue_active.ratio,"$NCU_ST"_short_scoreboard_per_issue_active.ratio,"$NCU_ST"_barrier_per_issue_active.ratio,"$NCU_ST"_math_pipe_throttle_per_issue_active.ratio,"$NCU_ST"_mio_throttle_per_issue_active.ratio,"$NCU_ST"_wait_per_issue_active.ratio,"$NCU_ST"_not_selected_per_issue_active.ratio,"$NCU_ST"_dispatch_stall_per_issue_active.ratio,"$NCU_ST"_lg_throttle_per_issue_active.ratio,"$NCU_ST"_no_instruction_per_issue_active.ratio,"$NCU_ST"_selected_per_issue_active.ratio,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_uniform.sum,sm__inst_executed_pipe_lsu.sum,sm__inst_executed.sum,smsp__inst_executed_op_ldsm.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"

# The grouped tiles against the dense kernel of the same lane on the Mixtral-like gate rows at
# m = XENCU_M (default 512; issue 30's 0.85x of dense): ncu of every launch of the first XENCU_C (default 20)
# matching kernels of memra bench moe (two warm-up rounds: grouped, the loop's 8 per-expert calls,
# dense), for q8_0 (the floor: experts_q8_0r_mt4 full tiles and gemm_q8_0r) and for fp8blk with
# its own dense kernel preferred (experts_wgmma and the wgmma kernels); one summary line a launch
# (kernel, grid, duration, DRAM and L2, occupancy, the leading stalls) in the summary
# ncu_launch_lines LOG WIDTH: one summary line per profiled launch of an ncu log (kernel and grid, duration,
# DRAM throughput, L2 hit rate, issue slots busy, occupancy, the per-reason stalls of NCU_METS), the fields the
# log has, cut to WIDTH characters
ncu_launch_lines() {
  awk '/^  [a-z_0-9]+ \(.*Context/ { if (n) print line; n++; line = substr($0, 3, index($0, ", Context") - 3) }
       / Duration / { line = line sprintf(" %s us", $NF) }
       /DRAM Throughput/ && !d[n]++ { line = line sprintf(" dram %s%%", $NF) }
       /L2 Hit Rate/ { line = line sprintf(" L2hit %s%%", $NF) }
       /Issue Slots Busy/ { line = line sprintf(" issue %s%%", $NF) }
       /Achieved Occupancy/ { line = line sprintf(" occ %s%%", $NF) }
       /stalled_long_scoreboard_per/ { line = line sprintf(" lsb %s", $NF) }
       /stalled_short_scoreboard_per/ { line = line sprintf(" ssb %s", $NF) }
       /stalled_barrier_per/ { line = line sprintf(" bar %s", $NF) }
       /stalled_wait_per/ { line = line sprintf(" wait %s", $NF) }
       /stalled_math_pipe_throttle_per/ { line = line sprintf(" math %s", $NF) }
       /stalled_dispatch_stall_per/ { line = line sprintf(" disp %s", $NF) }
       /stalled_mio_throttle_per/ { line = line sprintf(" mio %s", $NF) }
       END { if (n) print line }' "$1" | cut -c1-"$2" >> "$S"
}
step_xencu() {
  local t=$SECONDS fm k pre f
  for fm in ${XENCU_FORMATS:-q8_0 fp8blk}; do
    # every grouped launch (routing, maps, the tile, the remainder tile) and the dense tiles: the split of a
    # grouped call's time between its main tiles and its remainder launch (RESULTS, forty-second session)
    k='experts_|gemm_q8_0r|quant_q8_1'; pre=""
    [ $fm = fp8blk ] && k='fp8blk_' pre=MEMRA_PREFER=gemm_fp8_blk=fp8blk # every fp8blk kernel (quantisers too)
    f="$L/xencu_${fm}_m${XENCU_M:-512}.txt"
    env MEMRA_ADMISSION=off MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 $pre timeout 300 ncu --clock-control none --section SpeedOfLight \
      --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --metrics "$NCU_METS" \
      -k regex:"$k" -c ${XENCU_C:-60} $M bench moe --device 0 --sheet mixtral --routing uniform --m ${XENCU_M:-512} \
      --format $fm --reps 1 > "$f" 2>&1
    say "xencu $fm m=${XENCU_M:-512}: exit $?"
    ncu_launch_lines "$f" 230
  done
  say "xencu: $((SECONDS - t)) s"
}

step_ncu() {
  # where the integer floor's time goes (issue 26): speed of light, pipes, occupancy and the
  # per-reason warp stalls of the first gemm_q8_0r launches (m = 4096, 5120->12288) and of the
  # first gemm_kr (Q4_K) launches; sm__inst_executed_pipe_* counts the fold (FMA) against the MMA
  local mets=$NCU_METS
  # MEMRA_ADMISSION=off and --launch-skip: the admission self-check's and the warm-up's small launches are not the shape
  MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --metrics "$mets" \
    -k regex:memra_k_gemm_q8_0r --launch-skip 2 -c 2 $T sweep 4096 0 > "$L/ncu.txt" 2>&1
  say "ncu gemm_q8_0r: exit $?"
  MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis \
    --section WarpStateStats --metrics "$mets" \
    -k regex:memra_k_gemm_kr --launch-skip 2 -c 2 $T sweep_kr q4_k 4096 0 > "$L/ncu_kr.txt" 2>&1
  say "ncu gemm_kr q4_k: exit $?"
  # the grouped floor against the dense one on the Mixtral-like gate rows (issue 30's 0.73x of dense),
  # m = 512 tokens, top-2 of 8 (1024 rows), the same sections and stalls (NCU_MOE=0 skips it): the
  # grouped tile's launches of the first timed rounds, and the dense arm's gemm_q8_0r (the ninth
  # gemm_q8_0r launch: the first round runs grouped, the loop's 8 per-expert calls, then dense)
  if [ "${NCU_MOE:-1}" = 1 ]; then
    local side k skip
    for side in grouped dense; do
      k=memra_k_experts_q8_0r skip=1; [ $side = dense ] && k=memra_k_gemm_q8_0r skip=8
      MEMRA_ADMISSION=off MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 timeout 200 ncu --clock-control none --section SpeedOfLight \
        --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --metrics "$mets" \
        -k regex:$k --launch-skip $skip -c 1 $M bench moe --device 0 --sheet mixtral --routing uniform --m 512 \
        --format q8_0 --reps 1 > "$L/ncu_moe_$side.txt" 2>&1
      say "ncu bench moe q8_0 mixtral gate ($side): exit $?"
    done
  fi
}

# Where in the k loop the floor's issue slots and stalls go (issue 26): ncu's SourceCounters
# (PC sampling: stall reasons per SASS instruction) on the third matching launch of each
# (test_mmq_ops sweep / sweep_kr q4_k at m = 4096, 5120->12288: the auto plan's), saved as a
# report, then its source page printed as CSV (one row per SASS instruction, its samples by
# reason): ncusrc_<name>.csv, read offline against cuobjdump's SASS of the same kernel (bench/ncusrc.py).
# NCUSRC_SPECS: "name|kernel regex|test_mmq_ops arguments|settings" entries, space-separated settings
# for that run alone (default: q8_0r under the defaults, _wgs on cc 9.x since the twenty-third session;
# kr; krwg, Q4_K with MEMRA_MMQ_KR_WG=1)
step_ncusrc() {
  local t=$SECONDS spec name re args envs specs=()
  if [ -n "${NCUSRC_SPECS:-}" ]; then IFS=';' read -r -a specs <<< "$NCUSRC_SPECS"; else
    specs=("q8_0r|memra_k_gemm_q8_0r|sweep 4096 0|" "kr|memra_k_gemm_kr|sweep_kr q4_k 4096 0|"
           "krwg|memra_k_gemm_kr|sweep_kr q4_k 4096 0|MEMRA_MMQ_KR_WG=1"); fi
  for spec in "${specs[@]}"; do
    local skip=2
    IFS='|' read -r name re args envs skip <<< "$spec"
    skip=${skip:-2}
    # args "@memra ...": the memra tool instead of test_mmq_ops (e.g. bench moe, for the grouped tiles)
    local bin=$T
    [ "${args#@memra }" != "$args" ] && bin=$M args=${args#@memra }
    # skip "grid=GXxGY": the first launch of the regex on grid (GX, GY, 1), found by a listing pass (launch
    # statistics only) over the first NCUSRC_LIST_C (default 40) matching launches (bench moe's dense arm follows
    # the loop arm's per-expert launches of the same kernel, whose count depends on the routing)
    if [ "${skip#grid=}" != "$skip" ]; then
      local g=${skip#grid=}
      env $envs MEMRA_ADMISSION=off timeout 240 ncu --clock-control none --section LaunchStats -k regex:$re \
        -c ${NCUSRC_LIST_C:-40} $bin $args > "$L/ncusrc_${name}_list.txt" 2>&1
      skip=$(grep -E "^ +[A-Za-z_0-9]+ \([0-9]+, [0-9]+, [0-9]+\)x" "$L/ncusrc_${name}_list.txt" |
        awk -v g="(${g%x*}, ${g#*x}, 1)x" 'index($0, g) {print NR - 1; exit}')
      say "ncusrc $name: grid ($g) first at launch ${skip:-none} of the listed $(grep -cE "^ +[A-Za-z_0-9]+ \(" "$L/ncusrc_${name}_list.txt")"
      [ -z "$skip" ] && continue
    fi
    env $envs MEMRA_ADMISSION=off timeout 240 ncu --clock-control none --section SourceCounters --section WarpStateStats \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
      -k regex:$re --launch-skip $skip -c 1 -f -o "$L/ncusrc_$name" $bin $args > "$L/ncusrc_$name.txt" 2>&1
    say "ncusrc $name: exit $?"
    # the details page: which unit bounds the kernel (L2 / DRAM / SM throughput, issue slots, pipes)
    timeout 120 ncu --import "$L/ncusrc_$name.ncu-rep" --page details > "$L/ncusrc_${name}_details.txt" 2>&1
    grep -E "^ +[a-z_0-9]+(<|\()|Duration|L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc Active|SM Busy|Mem Busy|Max Bandwidth|L2 Hit Rate|Warp Cycles Per Issued" \
      "$L/ncusrc_${name}_details.txt" | head -24 >> "$S"
    timeout 120 ncu --import "$L/ncusrc_$name.ncu-rep" --page raw > "$L/ncusrc_${name}_raw.txt" 2>&1
    grep -E "gmma|tensor_op|lts__t_bytes|lts__throughput|pipe_fma|pipe_alu|inst_executed_pipe|cycles_active.avg " \
      "$L/ncusrc_${name}_raw.txt" | head -40 >> "$S"
    timeout 120 ncu --import "$L/ncusrc_$name.ncu-rep" --page source --print-source sass --csv \
      > "$L/ncusrc_$name.csv" 2>> "$L/ncusrc_$name.txt"
    say "ncusrc $name source page: exit $?, $(wc -l < "$L/ncusrc_$name.csv") lines"
  done
  say "ncusrc: $((SECONDS - t)) s"
}

step_python() {
  if [ -d python/tests ] && [ "${PY_OVERHEAD_ONLY:-0}" = 1 ]; then
    PYTHON_PYTEST=0
  fi
  if [ -d python/tests ]; then
    # The whole suite (host and device 0) as ctest runs it, then the race example's receipt and plot.
    if [ "${PYTHON_PYTEST:-1}" = 1 ]; then
    PYTHONUNBUFFERED=1 timeout 300 sh tests/python/run_pytest.sh python3 $B/lib/libmemra.so "$PWD" > "$L/pytest_gpu.log" 2>&1
    say "pytest (host + device 0): exit $? $(tail -1 "$L/pytest_gpu.log")"
    grep -E "^(FAILED|ERROR)" "$L/pytest_gpu.log" | head -8 >> "$S"
    MEMRA_LIBRARY=$B/lib/libmemra.so PYTHONPATH=$PWD/python timeout 200 python3 python/examples/race.py --sheet 27b --m 512 \
      --json $R/race_gemm_f16_27b_m512_$TAG.json --plot $R/race_gemm_f16_27b_m512_$TAG.png > "$L/race.txt" 2>&1
    say "race.py gemm_f16: exit $?"
    tail -12 "$L/race.txt" >> "$S"
    fi
    # issue 28 item 3: the host cost of a call through the wrapper, the bound args and the torch op
    for fm in q8_0 f16; do
      MEMRA_LIBRARY=$B/lib/libmemra.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 120 python3 bench/torch_op_overhead.py \
        --format $fm --json $R/torch_op_${fm}_m16_256x256_$TAG.json > "$L/torch_op_$fm.txt" 2>&1
      say "torch_op_overhead $fm: exit $?"; tail -10 "$L/torch_op_$fm.txt" | head -9 >> "$S"
    done
    # the same with memra_matmul_ex stubbed (after the checks): the Python and torch cost alone on
    # this machine's CPU, the C call's own cost and its noise taken out
    MEMRA_LIBRARY=$B/lib/libmemra.so PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 timeout 120 python3 bench/torch_op_overhead.py \
      --stub --format q8_0 --json $R/torch_op_stub_q8_0_m16_256x256_$TAG.json > "$L/torch_op_stub.txt" 2>&1
    say "torch_op_overhead --stub q8_0: exit $?"; tail -10 "$L/torch_op_stub.txt" | head -9 >> "$S"
  else
    say "python: no python/tests in this tree"
  fi
}

# Before/after a change: the trees in .before/ and, when present, .mid/ (carried
# ignored; e.g. `git archive COMMIT | tar -x -C .before`) are built beside this one,
# then `memra bench 27b` runs from every build in turn (the order rotating per round), AB_RUNS
# times each per m (AB_M, default "512 4096"); bench/ab_compare.py takes the medians
# per (shape, arm) for each pair (mid against before: issue 15's layout alone; after
# against mid: everything since; after against before: the whole).
step_ab() {
  # AB_TARGETS (optional): build only those targets of .before / .mid (e.g. "memra_tool memra_mmq"
  # with BUILD_TARGETS the same for this tree), to fit three builds and the benches in one call
  if [ ! -d .before ]; then say "ab: no .before tree"; return 0; fi
  local sides="before" side
  [ -d .mid ] && sides="$sides mid"
  sides="$sides after"
  for side in $sides; do
    [ $side = after ] && continue
    local BB=/tmp/memra-$side
    # GIT_EXECUTABLE=/bin/false: a tree older than the .memra-commit reader would take the enclosing
    # checkout's HEAD for its own commit (run r4's before and mid receipts named it); this way it
    # says "unknown", or the .memra-commit bench/ab_trees.sh wrote
    if ! { cmake -S .$side -B $BB -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_GPU_MODULES=ON -DMEMRA_WERROR=OFF \
             -DBUILD_TESTING=OFF -DGIT_EXECUTABLE=/bin/false && cmake --build $BB -j16 ${AB_TARGETS:+--target $AB_TARGETS}; } > "$L/build_$side.log" 2>&1; then
      tail -20 "$L/build_$side.log"; say "ab: the $side build FAILED"; return 1
    fi
  done
  for mm in ${AB_M:-512 4096}; do
    local fb=() fm=() fa=()
    for i in $(seq 1 ${AB_RUNS:-3}); do
      # the order rotates per round (round i starts at side i-1): run r4 ran before, mid, after in
      # every round and every later side came out faster on the cuBLASLt arms (0.87-0.93), while
      # one tree's own two runs differed by up to 1.16x there: the first process of a round meets
      # a colder machine; with AB_RUNS a multiple of the side count each side is first equally often
      local -a sl=($sides); local nside=${#sl[@]} o order=""
      for o in $(seq 0 $((nside - 1))); do order="$order ${sl[$(( (o + i - 1) % nside ))]}"; done
      for side in $order; do
        local bin=$M
        [ $side != after ] && bin=/tmp/memra-$side/bin/memra
        local f=$R/ab_27b_m${mm}_${side}_$i.json
        timeout 120 $bin bench 27b --m $mm --reps 10 --json $f > "$L/ab_27b_m${mm}_${side}_$i.txt" 2>&1
        case $side in before) fb+=("$f") ;; mid) fm+=("$f") ;; after) fa+=("$f") ;; esac
      done
    done
    pairs() { local -n x=$1 y=$2; local j; for j in "${!x[@]}"; do echo "${x[$j]}" "${y[$j]}"; done; }
    python3 bench/ab_compare.py $(pairs fb fa) > "$L/ab_m$mm.txt" 2>&1
    say "ab m=$mm after against before: exit $?"
    grep "^AB " "$L/ab_m$mm.txt" >> "$S"
    if [ ${#fm[@]} -gt 0 ]; then
      python3 bench/ab_compare.py $(pairs fb fm) > "$L/ab_m${mm}_mid_before.txt" 2>&1
      say "ab m=$mm mid (layout) against before: exit $?"
      grep "^AB " "$L/ab_m${mm}_mid_before.txt" >> "$S"
      python3 bench/ab_compare.py $(pairs fm fa) > "$L/ab_m${mm}_after_mid.txt" 2>&1
      say "ab m=$mm after against mid: exit $?"
      grep "^AB " "$L/ab_m${mm}_after_mid.txt" >> "$S"
    fi
    # the noise: one tree against itself (its first run against each later one)
    if [ ${#fa[@]} -ge 2 ]; then
      local self=() j
      for j in $(seq 1 $((${#fa[@]} - 1))); do self+=("${fa[0]}" "${fa[$j]}"); done
      python3 bench/ab_compare.py "${self[@]}" > "$L/ab_m${mm}_after_self.txt" 2>&1
      say "ab m=$mm after against itself (the noise): exit $?"
      grep "^AB " "$L/ab_m${mm}_after_self.txt" >> "$S"
    fi
  done
}

step_tune() {
  local t=$SECONDS d mm i side f
  d=$(mktemp -d /tmp/memra-tune.XXXXXX) && chmod 700 "$d"
  local tf=$d/tune/tuning.memra
  MEMRA_TUNE_FILE=$tf timeout 400 $M tune --device 0 --sheet 27b --m ${TUNE_M:-512} ${TUNE_REPS:+--reps $TUNE_REPS} \
    --json $R/tune_27b_$TAG.json > "$L/tune.txt" 2>&1
  say "tune: exit $?, $(grep -c '^entry' "$tf" 2>/dev/null) entries, $(grep -c '^nowin' "$tf" 2>/dev/null) no win, $((SECONDS - t)) s"
  grep -E "^gemm_|^  win |^  no win|self-race|repetitions x|^verify|^  gemm_|raced in|in all|one arm" "$L/tune.txt" >> "$S"
  [ -f "$tf" ] && cp "$tf" $R/tuning_27b_$TAG.memra
  for mm in ${TUNE_M:-512}; do
    local files=()
    for i in $(seq 1 ${TUNE_RUNS:-2}); do
      # the order alternates per pair: the first process of a pair met a colder machine in run q3
      # (tuned/untuned 0.96 on arms with no entry at all); files stay in (untuned, tuned) pairs
      local order="untuned tuned"; [ $((i % 2)) = 0 ] && order="tuned untuned"
      for side in $order; do
        f=$R/tune_ab_27b_m${mm}_${side}_$i.json
        if [ $side = untuned ]; then
          MEMRA_TUNE=0 MEMRA_TUNE_FILE=$tf timeout 120 $M bench 27b --m $mm --reps 10 --json $f > "$L/tune_ab_m${mm}_${side}_$i.txt" 2>&1
        else
          MEMRA_TUNE_FILE=$tf timeout 120 $M bench 27b --m $mm --reps 10 --json $f > "$L/tune_ab_m${mm}_${side}_$i.txt" 2>&1
        fi
      done
      files+=("$R/tune_ab_27b_m${mm}_untuned_$i.json" "$R/tune_ab_27b_m${mm}_tuned_$i.json")
    done
    # ab_compare's "before" is the untuned run, "after" the tuned one
    python3 bench/ab_compare.py "${files[@]}" > "$L/tune_ab_m$mm.txt" 2>&1
    say "tune ab m=$mm: exit $?"
    grep "^AB " "$L/tune_ab_m$mm.txt" | sed 's#time after/before#time tuned/untuned#' >> "$S"
  done
  for c in promote rollback capture auto; do
    timeout 120 $B/bin/test_gpu_shadow $c > "$L/shadow_$c.log" 2>&1
    say "test_gpu_shadow $c: exit $?"
    grep -E "^(op |after|promoted|rolled|routing|shadow runs|the automatic|  ledger|blocked stream|not promoted|at the cap|serving|host time|FAIL)" "$L/shadow_$c.log" >> "$S"
  done
  timeout 200 sh tests/gpu/tune_gpu.sh $M /tmp > "$L/tune_gpu.log" 2>&1
  say "tune_gpu.sh (tiny sheet): exit $?; $(grep -E '^races' "$L/tune_gpu.log")"
  rm -rf "$d"
  say "tune step: $((SECONDS - t)) s"
}

step_model() {
  local t=$SECONDS d=/tmp/memra-layer mm=${MODEL_M:-512} f n
  rm -rf $d
  local types=${MODEL_TYPES:-f32,f16,bf16,q8_0,q4_0,q4_k,q5_k,q6_k,fp8} gt fp8=--no-fp8
  gt=$(echo ",$types," | sed 's/,fp8,/,/; s/^,//; s/,$//')
  case ",$types," in *,fp8,*) fp8="" ;; esac
  if ! python3 bench/make_layer_files.py $d --div ${MODEL_DIV:-1} --types "$gt" $fp8 \
       > "$L/model_files.log" 2>&1; then
    say "model: make_layer_files.py FAILED"; tail -5 "$L/model_files.log" >> "$S"; return 1
  fi
  say "model: files written in $((SECONDS - t)) s ($(du -sh $d | cut -f1))"
  for f in $d/layer27b.*.gguf $d/layer27b.fp8.safetensors; do
    [ -e "$f" ] || continue
    n=$(basename $f); n=${n#layer27b.}; n=${n%.*}
    timeout 400 $M check --model $f --device 0 --m $mm --json $R/check_model_${n}_m${mm}_$TAG.json \
      > "$L/check_model_${n}.log" 2>&1
    say "memra check --model $n m=$mm: exit $? $(grep -E 'passed, ' "$L/check_model_${n}.log")"
    grep -E " FAIL" "$L/check_model_${n}.log" | head -4 >> "$S"
    timeout 300 $M bench --model $f --device 0 --m $mm --json $R/bench_model_${n}_m${mm}_$TAG.json \
      > "$L/bench_model_${n}.log" 2>&1
    say "memra bench --model $n m=$mm: exit $? $(grep -E '^total' "$L/bench_model_${n}.log")"
    grep -E "host RSS|INVALID" "$L/bench_model_${n}.log" >> "$S"
    python3 - $R/bench_model_${n}_m${mm}_$TAG.json >> "$S" 2>&1 <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["model"]
r, lim = m["rss"], m["file_bytes"] + (64 << 20)
d = r["peak"] - r["before_open"]
print("  rss bound: peak - before_open = %.1f MiB, file + 64 MiB = %.1f MiB: %s"
      % (d / 2**20, lim / 2**20, "ok" if d <= lim else "OVER"))
PY
  done
  rm -rf $d
  say "model: $((SECONDS - t)) s"
}

# The summary lines of a `memra bench moe` table: moe_rows FILE SHEET_REGEX (sheet, projection,
# shape, routing, the grouped / loop / dense medians and "of dense"); INVALID lines as they are
moe_rows() {
  grep -E "^($2) " "$1" | awk '{print "  " $1, $2, $3, $5, "grouped", $8, "loop", $10, "dense", $17, "of dense", $19}' >> "$S"
  grep -E "INVALID" "$1" >> "$S"
}

# One `memra bench moe` at budget 0: moe_bench FORMAT M TIMEOUT. FORMAT fp8blk_own is fp8blk with
# gemm_fp8_blk preferred on the fp8blk module, so that the loop and dense arms run memra's own
# block kernel (the grouped call's family) rather than the sm90 module's cuBLASLt lane
moe_bench() {
  local fm=$1 mm=$2 env=(MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0) f=$1
  [ "$fm" = fp8blk_own ] && env+=(MEMRA_PREFER=gemm_fp8_blk=fp8blk) && f=fp8blk
  env "${env[@]}" timeout $3 $M bench moe --device 0 --m $mm --format $f \
    --json $R/bench_moe_${fm}_m${mm}_$TAG.json > "$L/bench_moe_${fm}_m$mm.txt" 2>&1
}

step_moe() {
  local t=$SECONDS d=/tmp/memra-moe mm f n fm
  ( cd $B && timeout 300 ctest -R 'experts|gpu_runtime_mmq|fake_routing' --output-on-failure --timeout 200 ) \
    > "$L/moe_ctest.log" 2>&1
  say "moe ctest: exit $? $(grep -E 'tests passed' "$L/moe_ctest.log")"
  grep -E "\*\*\*Failed|Failed  " "$L/moe_ctest.log" | head -6 >> "$S"
  timeout 300 $M check --device 0 --op gemm_experts --json $R/check_experts_$TAG.json > "$L/moe_check.log" 2>&1
  say "check gemm_experts --device 0: exit $? $(grep -E 'passed, ' "$L/moe_check.log")"
  grep -E " FAIL|q8_0r E8" "$L/moe_check.log" | head -8 >> "$S"
  if [ "${MOE_QUICK:-0}" = 1 ]; then   # a short call: the tests, the check and the bench only
    for fm in ${MOE_FORMATS:-q8_0}; do for mm in ${MOE_M:-512}; do
      moe_bench $fm $mm 200
      say "memra bench moe $fm m=$mm: exit $?"
      grep -E "^(qwen3moe|mixtral)|INVALID|FAIL|not run" "$L/bench_moe_${fm}_m$mm.txt" | cut -c1-200 | head -16 >> "$S"
    done; done
    say "moe (quick): $((SECONDS - t)) s"; return 0
  fi
  MEMRA_ARCH=cuda timeout 300 $M check --device 0 --op gemm_experts > "$L/moe_check_cuda.log" 2>&1
  say "check gemm_experts --device 0 (MEMRA_ARCH=cuda): exit $? $(grep -E 'passed, ' "$L/moe_check_cuda.log")"
  for tool in memcheck racecheck; do
    MEMRA_ADMISSION=off timeout 400 compute-sanitizer --tool $tool $(san_x $tool) --print-limit 0 --show-backtrace no \
      $M check --device 0 --op gemm_experts --module mmq --quick > "$L/moe_san_$tool.log" 2>&1
    say "sanitize $tool check gemm_experts mmq: exit $? reports $(san_count $tool "$L/moe_san_$tool.log")"
  done
  timeout 200 $M check --device host --op gemm_experts > "$L/moe_check_host.log" 2>&1
  say "check gemm_experts --device host: exit $? $(grep -E 'passed, ' "$L/moe_check_host.log")"
  for fm in ${MOE_FORMATS:-q8_0 fp8blk}; do
    for mm in ${MOE_M:-512 4096}; do
      moe_bench $fm $mm 500
      say "memra bench moe $fm m=$mm: exit $?"
      grep -E "^(qwen3moe|mixtral)|INVALID|FAIL|not run" "$L/bench_moe_${fm}_m$mm.txt" | cut -c1-200 | head -16 >> "$S"
    done
  done
  rm -rf $d
  if python3 bench/make_layer_files.py $d --moe-only --experts ${MOE_EXPERTS:-128} --types q8_0,q4_k \
       > "$L/moe_files.log" 2>&1; then
    for f in $d/layermoe.*; do
      n=$(basename $f); n=${n#layermoe.}; n=${n%.*}
      MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 timeout 400 $M check --model $f --device 0 --json $R/check_model_moe_${n}_$TAG.json \
        > "$L/moe_check_model_$n.log" 2>&1
      say "memra check --model moe $n: exit $? $(grep -E 'passed, ' "$L/moe_check_model_$n.log")"
      MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 timeout 400 $M bench --model $f --device 0 --json $R/bench_model_moe_${n}_$TAG.json \
        > "$L/moe_bench_model_$n.log" 2>&1
      say "memra bench --model moe $n: exit $?"
      grep -E "^model |INVALID" "$L/moe_bench_model_$n.log" | cut -c1-200 | head -8 >> "$S"
    done
  else
    say "moe: make_layer_files.py --moe-only FAILED"; tail -3 "$L/moe_files.log" >> "$S"
  fi
  rm -rf $d
  say "moe: $((SECONDS - t)) s"
}

# The grouped floor's launch choices on the Mixtral-like rows (issue 30's 0.85x of dense): memra
# bench moe --sheet mixtral at MOE_M (default 512), uniform routing, budget 0, for each
# MEMRA_MMQ_XE_BM (MOE_SWEEP_BM, default "0 32 64 128": 0 the launcher's rule) x MEMRA_MMQ_XE_SPLIT
# (MOE_SWEEP_SPLIT, default "0 1 2 3"; either set empty skips the sweep: run s2 judged it;
# MOE_SWEEP_TAIL=0 stops after the sweep),
# MOE_SWEEP_FORMATS (default q8_0);
# one line per row: grouped ms, loop ms, dense ms, "of dense"; then the forced split's check
# (memra check --op gemm_experts with MEMRA_MMQ_XE_SPLIT=3) and its memcheck
step_moesweep() {
  local t=$SECONDS fm mm bm sp f
  for fm in ${MOE_SWEEP_FORMATS:-q8_0}; do for mm in ${MOE_M:-512}; do
    for bm in ${MOE_SWEEP_BM-0 32 64 128}; do for sp in ${MOE_SWEEP_SPLIT-0 1 2 3}; do
      f="$L/moesweep_${fm}_m${mm}_bm${bm}_s${sp}.txt"
      MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_MMQ_XE_BM=$bm MEMRA_MMQ_XE_SPLIT=$sp timeout 200 $M bench moe --device 0 \
        --sheet mixtral --routing uniform --m $mm --format $fm --json $R/moesweep_${fm}_m${mm}_bm${bm}_s${sp}_$TAG.json \
        > "$f" 2>&1
      say "moesweep $fm m=$mm XE_BM=$bm XE_SPLIT=$sp: exit $?"
      moe_rows "$f" mixtral
    done; done
  done; done
  # the full and remainder tiles in one tile-major launch (MEMRA_MMQ_XE_MERGE, opt-in until measured):
  # merged and two-launch alternately (the order rotated), MOE_MERGE_ROUNDS rounds (default 2) at each
  # of MOE_M, formats MOE_MERGE_FORMATS (default q8_0), on the Mixtral-like rows; then the GPU tests
  # (bit for bit against the dense lane), the check and memcheck / racecheck with it on
  local mg i c j
  # MOE_SWEEP_TAIL=0: the sweep alone (no merge rounds, tests, checks or sanitizers after it)
  [ "${MOE_SWEEP_TAIL:-1}" = 0 ] && { say "moesweep: $((SECONDS - t)) s"; return 0; }
  for fm in ${MOE_MERGE_FORMATS:-q8_0}; do for mm in ${MOE_M:-512}; do
    for ((i = 1; i <= ${MOE_MERGE_ROUNDS:-2}; i++)); do for j in 0 1; do
      mg=$(((i + j) % 2))
      f="$L/moesweep_${fm}_m${mm}_merge${mg}_$i.txt"
      MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_MMQ_XE_MERGE=$mg timeout 200 $M bench moe --device 0 --sheet mixtral --routing both \
        --m $mm --format $fm --json $R/moesweep_${fm}_m${mm}_merge${mg}_${i}_$TAG.json > "$f" 2>&1
      say "moesweep $fm m=$mm XE_MERGE=$mg (round $i): exit $?"
      moe_rows "$f" mixtral
    done; done
  done; done
  for c in run skew q4_k q6_k split split_q6_k; do
    MEMRA_MMQ_XE_MERGE=1 timeout 200 $B/bin/test_gpu_experts $c > "$L/moesweep_merge_test_$c.log" 2>&1
    say "test_gpu_experts $c (XE_MERGE=1): exit $?"
  done
  MEMRA_MMQ_XE_MERGE=1 timeout 200 $M check --device 0 --op gemm_experts > "$L/moesweep_check_merge.log" 2>&1
  say "check gemm_experts MEMRA_MMQ_XE_MERGE=1: exit $? $(grep -E 'passed, ' "$L/moesweep_check_merge.log")"
  for c in memcheck racecheck; do MEMRA_MMQ_XE_MERGE=1 san_experts moesweep_san_merge $c skew; done
  MEMRA_MMQ_XE_SPLIT=3 timeout 200 $M check --device 0 --op gemm_experts > "$L/moesweep_check_split3.log" 2>&1
  say "check gemm_experts MEMRA_MMQ_XE_SPLIT=3: exit $? $(grep -E 'passed, ' "$L/moesweep_check_split3.log")"
  MEMRA_ADMISSION=off MEMRA_MMQ_XE_SPLIT=3 timeout 300 compute-sanitizer --tool memcheck $(san_x memcheck) --print-limit 0 \
    --show-backtrace no $M check --device 0 --op gemm_experts --module mmq --quick > "$L/moesweep_san_split3.log" 2>&1
  say "sanitize memcheck check gemm_experts mmq (split 3): exit $? reports $(san_count memcheck "$L/moesweep_san_split3.log")"
  say "moesweep: $((SECONDS - t)) s"
}

# A MEMRA_MMQ_WG_SEED variant's correctness part (seed_tests VALUE KERNEL PREFIX): test_mmq_ops gemm_q8_0r (the
# variant's cases bit for bit the records tile), memra check gemm_q8_0r under the value, and ncu's kernel names
seed_tests() {
  local val=$1 kern=$2 pre=$3
  timeout 300 $T gemm_q8_0r > "$L/${pre}_test_gemm_q8_0r.log" 2>&1
  say "test_mmq_ops gemm_q8_0r (with $kern): exit $? $(grep -cE "$kern .* ok\$" "$L/${pre}_test_gemm_q8_0r.log") $kern cases ok"
  grep -E "FAIL" "$L/${pre}_test_gemm_q8_0r.log" | head -6 >> "$S"
  MEMRA_MMQ_WG_SEED=$val timeout 200 $M check --device 0 --op gemm_q8_0r > "$L/${pre}_check.log" 2>&1
  say "check gemm_q8_0r MEMRA_MMQ_WG_SEED=$val: exit $? $(grep -E 'passed, ' "$L/${pre}_check.log")"
  MEMRA_MMQ_WG_SEED=$val MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
    -k regex:memra_k_gemm_q8_0r -c 2 $M bench 27b --m 4096 --reps 1 --warmup 0 > "$L/${pre}_ncu.txt" 2>&1
  say "ncu names (SEED=$val): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/${pre}_ncu.txt" | sort -u | tr '\n' ' ')"
}

# MEMRA_MMQ_WG_SEED=xp (issue 26: _wgsax, the seeded tile with the token scales loaded a group ahead), in
# parts (WGSX_PARTS, default "test ab ncu tools"; run k1's test_mmq_ops gemm_q8_0r alone took ~200 s):
#   test   test_mmq_ops gemm_q8_0r (_wgsax bit for bit the records tile in every case), check gemm_q8_0r,
#          ncu naming the kernel
#   ab     knobab SEED=xp against 1 on the 27b sheet at WGSX_M (default 4096; WGSX_ROUNDS, default 2)
#   ncu    the per-instruction stall samples of _wgsax (as ncusrc)
#   tools  the four tools over check gemm_q8_0r mmq --quick
step_wgsx() {
  local t=$SECONDS parts=" ${WGSX_PARTS:-test ab ncu tools} "
  [[ $parts == *" test "* ]] && seed_tests xp _wgsax wgsx
  [[ $parts == *" ab "* ]] && KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ON=xp KNOBAB_OFF=1 KNOBAB_M="${WGSX_M:-4096}" \
    KNOBAB_ROUNDS=${WGSX_ROUNDS:-2} KNOBAB_ARM="mmq|q4_0" step_knobab
  [[ $parts == *" ncu "* ]] && NCUSRC_SPECS="wgsax|memra_k_gemm_q8_0r_wgsax|sweep 4096 0|MEMRA_MMQ_WG_SEED=xp" step_ncusrc
  [[ $parts == *" tools "* ]] && knob_tools MEMRA_MMQ_WG_SEED=xp wgsx gemm_q8_0r
  say "wgsx: $((SECONDS - t)) s"
}

# MEMRA_MMQ_WG_SEED=pp (_wgspp: _wgs with its two consumer warpgroups folding in turn), in parts (WGPP_PARTS,
# default "ab test ncu tools"; also xe, xetools: the grouped twin's tests, ncu names and bench moe 1 / pp at WGPP_XE_M,
# and its four tools): ab: knobab SEED 1 / pp at WGPP_M (default 4096), WGPP_ROUNDS rounds (default 2),
# then at m = 512 under MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=0 (both arms on the plain seeded tile); test:
# test_mmq_ops gemm_q8_0r (_wgspp bit for bit the records tile), check gemm_q8_0r under pp, ncu names; ncu:
# the stall samples of _wgspp (step_ncusrc); tools: the four sanitizer tools over the quick check under pp
step_wgpp() {
  local t=$SECONDS parts=" ${WGPP_PARTS:-ab test ncu tools} "
  if [[ $parts == *" ab "* ]]; then
    KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ON=pp KNOBAB_OFF=1 KNOBAB_M="${WGPP_M:-4096}" \
      KNOBAB_ROUNDS=${WGPP_ROUNDS:-2} KNOBAB_ARM="mmq|q4_0" step_knobab
    KNOBAB_ENV="MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=0" KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ON=pp KNOBAB_OFF=1 KNOBAB_M=512 \
      KNOBAB_ROUNDS=${WGPP_ROUNDS:-2} KNOBAB_ARM="mmq|q4_0" step_knobab
  fi
  [[ $parts == *" test "* ]] && seed_tests pp _wgspp wgpp
  [[ $parts == *" ncu "* ]] && NCUSRC_SPECS="wgspp|memra_k_gemm_q8_0r_wgspp|sweep 4096 0|MEMRA_MMQ_WG_SEED=pp" step_ncusrc
  [[ $parts == *" tools "* ]] && knob_tools MEMRA_MMQ_WG_SEED=pp wgpp gemm_q8_0r
  if [[ $parts == *" xe "* ]]; then # the grouped twin (memra_k_experts_q8_0r_wgspp): tests, ncu names, then 1 / pp
    knob_experts MEMRA_MMQ_WG_SEED=pp wgppxe mmq wg wg_graph wg_split wg4 wg_bm128 wg_skew wg_q4_0
    knob_xe_ncu MEMRA_MMQ_WG_SEED=pp wgppxe wg
    KNOBMOE_VALS="1 pp" knob_moe MEMRA_MMQ_WG_SEED wgppxe "${WGPP_XE_M:-512 4096}" q8_0 ${WGPP_XE_ROUNDS:-1}
  fi
  [[ $parts == *" xetools "* ]] && knob_xe_tools MEMRA_MMQ_WG_SEED=pp wgppxe wg wg_split
  say "wgpp: $((SECONDS - t)) s"
}

# MEMRA_MMQ_WG_TAIL=1 (memra_k_gemm_q8_0r_wgst: _wgs whose last row tile, where it holds 1 .. 96 tokens, runs on 32,
# 64 or 96 token columns), in parts (WGTAIL_PARTS, default "ab test tools"):
#   ab     knobab 0 / 1 at WGTAIL_M (default "1030 1100 4100": a last row tile of 6 / 76 / 4 tokens; no 27b row takes
#          stream-k there), WGTAIL_ROUNDS rounds (default 2), then ncu's kernel names at m = 1030 under the knob
#   test   test_mmq_ops gemm_q8_0r (variant _wgst bit for bit the records tile; m = 1 .. 17, 280, 300, 350 take its
#          path)
#   tools  the four sanitizer tools over check gemm_q8_0r --quick under MEMRA_MMQ_WG=all and the knob
step_wgtail() {
  local t=$SECONDS parts=" ${WGTAIL_PARTS:-ab test tools} "
  if [[ $parts == *" ab "* ]]; then
    KNOBAB_KNOB=MEMRA_MMQ_WG_TAIL KNOBAB_M="${WGTAIL_M:-1030 1100 4100}" KNOBAB_ROUNDS=${WGTAIL_ROUNDS:-2} KNOBAB_ARM="mmq|q4_0" \
      step_knobab
    MEMRA_MMQ_WG_TAIL=1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
      -k regex:memra_k_gemm_q8_0r -c 2 $M bench 27b --m 1030 --reps 1 --warmup 0 > "$L/wgtail_ncu.txt" 2>&1
    say "ncu names (MEMRA_MMQ_WG_TAIL=1, m = 1030): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wgtail_ncu.txt" | sort -u | tr '\n' ' ')"
  fi
  if [[ $parts == *" test "* ]]; then
    timeout 300 $T gemm_q8_0r > "$L/wgtail_test_gemm_q8_0r.log" 2>&1
    say "test_mmq_ops gemm_q8_0r (with _wgst): exit $? $(grep -cE '_wgst .* ok$' "$L/wgtail_test_gemm_q8_0r.log") _wgst cases ok"
    grep -E "FAIL" "$L/wgtail_test_gemm_q8_0r.log" | head -6 >> "$S"
  fi
  [[ $parts == *" tools "* ]] && knob_tools "MEMRA_MMQ_WG=all MEMRA_MMQ_WG_TAIL=1" wgtail gemm_q8_0r
  say "wgtail: $((SECONDS - t)) s"
}

# wgfold (issue 26): the microbenchmark bench/micro/wgfold.cu, built here with nvcc (no memory traffic: the seeded
# tile's step with parts switched off, so that a step's cycles split into tensor work and fold; WGFOLD_STEPS, default
# 8192), its table to the summary
step_wgfold() {
  local t=$SECONDS nv
  nv=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  mkdir -p $B
  if ! $nv -O3 -std=c++17 -Xptxas=-v -gencode=arch=compute_90a,code=sm_90a bench/micro/wgfold.cu -o $B/wgfold \
       > "$L/wgfold_build.log" 2>&1; then
    tail -20 "$L/wgfold_build.log" >> "$S"; say "wgfold: build FAILED"; return 1
  fi
  timeout 200 $B/wgfold ${WGFOLD_STEPS:-8192} > "$L/wgfold.txt" 2>&1
  say "wgfold: exit $?"
  cat "$L/wgfold.txt" >> "$S"
  # WGFOLD_NCU (e.g. "0 2 4 9": the variants' indices in wgfold.cu's table, each run 3 times, so launch 3 i): ncu's
  # warp states and pipes of those variants at 2048 steps (why the fold and the tensor work do not overlap)
  local v
  for v in ${WGFOLD_NCU:-}; do
    timeout 120 ncu --clock-control none --section WarpStateStats --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section SchedulerStats --metrics "$NCU_METS" --launch-skip $((3 * v)) \
      --launch-count 1 $B/wgfold 2048 > "$L/wgfold_ncu_$v.txt" 2>&1
    say "wgfold ncu variant $v: exit $? $(grep -E '^ +(smsp__average_warps_issue_stalled|sm__inst_executed_pipe|Issue Slots Busy|Warp Cycles Per Issued|Shared Memory|Mem Busy)' \
      "$L/wgfold_ncu_$v.txt" | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | tr -s ' ' |
      cut -c1-60 | paste -sd';' | cut -c1-900)"
  done
  # the pipes' busy cycles (a separate ncu: a metric this ncu lacks fails only this line) and the SASS, for reading
  # offline (this machine has no cuobjdump)
  local pm="sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active"
  pm="$pm,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active"
  pm="$pm,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fmaheavy.sum,sm__inst_executed_pipe_fmalite.sum"
  for v in ${WGFOLD_NCU:-}; do
    timeout 120 ncu --clock-control none --metrics "$pm" --launch-skip $((3 * v)) --launch-count 1 $B/wgfold 2048 \
      > "$L/wgfold_pipes_$v.txt" 2>&1
    say "wgfold pipes variant $v: exit $? $(grep -E '^ +(sm__|smsp__)' "$L/wgfold_pipes_$v.txt" | tr -s ' ' |
      sed -E 's/\.avg\.pct_of_peak_sustained_active//; s/cycles_active/cyc/' | cut -c1-70 | paste -sd';' | cut -c1-700)"
  done
  command -v cuobjdump > /dev/null && cuobjdump -sass $B/wgfold > "$L/wgfold_sass.txt" 2>&1
  say "wgfold: $((SECONDS - t)) s"
}

# w16 (issue 26): the fused-dequant f16 tile, outside the build: the micro (W16_MICRO=0 skips it) and the prototype
# GEMM built here with nvcc; the prototype's checks and its 27b sheet (W16_TIME=0: the checks alone), then
# compute-sanitizer's memcheck, racecheck, initcheck and synccheck over `w16gemm check` (W16_TOOLS), each alone
step_w16() {
  local t=$SECONDS nv tool
  nv=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  mkdir -p $B
  if [ "${W16_MICRO:-1}" != 0 ]; then
    if $nv -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/micro/w16.cu -o $B/w16 > "$L/w16_build.log" 2>&1; then
      timeout 120 $B/w16 > "$L/w16.txt" 2>&1; say "w16 micro: exit $?"; cat "$L/w16.txt" >> "$S"
    else
      tail -20 "$L/w16_build.log" >> "$S"; say "w16 micro: build FAILED"
    fi
  fi
  if ! $nv -O3 -std=c++17 -Xptxas=-v -gencode=arch=compute_90a,code=sm_90a bench/micro/w16gemm.cu -lcublas \
       -o $B/w16gemm > "$L/w16gemm_build.log" 2>&1; then
    tail -20 "$L/w16gemm_build.log" >> "$S"; say "w16gemm: build FAILED"; return 1
  fi
  if [ "${W16_TIME:-1}" != 0 ]; then
    timeout 420 $B/w16gemm "$R/w16gemm_${TAG:-w16}.json" > "$L/w16gemm.txt" 2>&1
  else
    timeout 120 $B/w16gemm check > "$L/w16gemm.txt" 2>&1
  fi
  say "w16gemm: exit $?"
  cat "$L/w16gemm.txt" >> "$S"
  for tool in ${W16_TOOLS:-memcheck racecheck initcheck synccheck}; do
    timeout 240 compute-sanitizer --tool $tool $B/w16gemm check > "$L/w16gemm_san_$tool.txt" 2>&1
    say "w16gemm check under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Error' "$L/w16gemm_san_$tool.txt" | tail -1)"
  done
  say "w16: $((SECONDS - t)) s"
}

# w16lane (issue 26): gemm_w16 through the build: its check rows on the GPU, the 27b sheet with the w16 arms
# (w8_0, w4_0, w4_k, w5_k, w6_k) interleaved with the floor's, then the sanitizer tools over its quick check
w16lane_keep() { # the logs and receipts so far, in case the call's limit cuts the step
  tar -C $L -cf "$OUT/logs.tar" . 2>/dev/null; tar -C $R -cf "$OUT/receipts.tar" . 2>/dev/null
}
# w16waves: MEMRA_W16_SPLIT=waves (the default since run aa: the dense w16 call's token tile and slices by its
# waves, w16_ops.c plan_by_waves) under MEMRA_W16=auto: memra check --op gemm_w16 under it (its 1000 x 2816 rows at m = 1100 take
# the 256-token tile in 3 slices for the K-quants, its 5120 -> 1024 rows at 512 4 slices), then bench 27b with
# waves / fill (the plan before) alternately (W16W_M, default "512 4096"; W16W_ROUNDS rounds, default 2), each run's w16 rows in the
# summary, receipts named by arm and round
step_w16waves() {
  local t=$SECONDS mm r i v f
  MEMRA_W16=auto MEMRA_W16_SPLIT=waves timeout 240 $M check --device 0 --op gemm_w16 --json $R/check_w16_waves_$TAG.json \
    > "$L/check_w16_waves.log" 2>&1
  say "memra check --op gemm_w16 (MEMRA_W16_SPLIT=waves): exit $? $(grep -E 'passed, ' "$L/check_w16_waves.log")"
  grep -E " FAIL|DECLINED" "$L/check_w16_waves.log" | head -8 >> "$S"
  for mm in ${W16W_M:-512 4096}; do for ((r = 1; r <= ${W16W_ROUNDS:-2}; r++)); do for ((i = 0; i < 2; i++)); do
    v=$([ $(((i + r) % 2)) = 1 ] && echo waves || echo fill)
    f="$L/w16waves_m${mm}_${v}_$r.txt"
    MEMRA_W16=auto MEMRA_W16_SPLIT=$v timeout 200 $M bench 27b --m $mm --json $R/w16waves_27b_m${mm}_${v}_${r}_$TAG.json \
      > "$f" 2>&1
    say "bench 27b m=$mm MEMRA_W16_SPLIT=$v (round $r): exit $?"
    awk '$1 ~ /->/ {s = $1} $1 ~ /^w[0-9]_[0-9k]$/ || $2 ~ /^w[0-9]_[0-9k]$/ {print "  " s, $0}' "$f" | grep -v split >> "$S"
  done; done; done
  say "w16waves: $((SECONDS - t)) s"
}

step_w16lane() {
  local t=$SECONDS mm tool w
  export MEMRA_W16=${W16L_W16:-auto} # the default 0 loads no w16 kernels
  timeout 240 $M check --device 0 --op gemm_w16 --json $R/check_w16_$TAG.json > "$L/check_w16.log" 2>&1
  say "memra check --device 0 --op gemm_w16: exit $? $(grep -E 'passed, ' "$L/check_w16.log")"
  grep -E " FAIL|DECLINED" "$L/check_w16.log" | head -8 >> "$S"
  w16lane_keep
  for mm in ${W16L_M:-512 4096}; do
    timeout 300 $M bench 27b --m $mm --json $R/bench_27b_m${mm}_$TAG.json > "$L/bench_27b_m$mm.txt" 2>&1
    say "memra bench 27b m=$mm: exit $?"
    grep -E "geometric" "$L/bench_27b_m$mm.txt" >> "$S"
    w16lane_keep
  done
  # the lane in test_gpu_stress (4 streams x 2 threads, then two graphs captured at once), alone: bit for bit
  # against the same calls made one at a time (the stress test sets MEMRA_W16=auto itself)
  MEMRA_TEST_STRESS_LANES=w16 timeout 240 $B/bin/test_gpu_stress > "$L/w16lane_stress.log" 2>&1
  say "test_gpu_stress lane w16: exit $? $(grep -E 'GPU hits' "$L/w16lane_stress.log" | tr -s ' ')"
  # the grouped w16 tile (gemm_experts on lane gemm_w16): its GPU test cases (host and dense lane), then bench moe
  # on the Mixtral-like rows (W16L_XE_M, default "512 4096"; W16L_XE_FMT, default "q8_0 q4_k") with every arm on
  # w16, and the same rows on the floor (MEMRA_W16=0) beside it
  local c f
  for c in ${W16L_XE_CASES:-w16 w16_graph w16_q4_0 w16_q4_k w16_q5_k w16_q6_k w16_skew w16_split w16_n128 w16_n128_skew w16_raster w16_n160 w16_n160_skew w16_n160_split w16_n160_raster w16_fit w16_fit_skew w16_fit_split w16_fit_edge w16_fit_edge2}; do
    timeout 120 $B/bin/test_gpu_experts $c > "$L/w16lane_xe_$c.log" 2>&1
    say "test_gpu_experts $c: exit $? $(grep -E 'max e|differ' "$L/w16lane_xe_$c.log" | head -2 | tr '\n' ' ')"
  done
  w16lane_keep
  # MEMRA_F16_BUDGET_MB=0: the loop's and the dense arm's weights get no f16 mirror, so all three arms run the
  # grouped call's lane (w16 under auto, the floor under 0; W16L_XE_W16, default "auto 0"); W16L_XE_SHEET
  # (default mixtral) picks the sheet
  # W16L_XE_VARIANTS (default "-"): knob settings, each its own bench moe under auto ("-": none; e.g.
  # "- MEMRA_W16_XE_RASTER=8 MEMRA_W16_TILE=64"); the floor (MEMRA_W16=0) runs once, with none
  local vv tag
  for f in ${W16L_XE_FMT:-q8_0 q4_k}; do
    for w in ${W16L_XE_W16:-auto 0}; do
      for vv in ${W16L_XE_VARIANTS:--}; do
        [ "$w" = 0 ] && [ "$vv" != - ] && continue
        tag=w16$w$([ "$vv" != - ] && echo "_$vv" | tr -c 'A-Za-z0-9_\n' '_')
        env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=$w $([ "$vv" != - ] && echo "$vv") timeout 300 $M bench moe --device 0 \
          --sheet ${W16L_XE_SHEET:-mixtral} --routing uniform --format $f \
          $(for mm in ${W16L_XE_M:-512 4096}; do printf -- '--m %s ' $mm; done) \
          --json $R/bench_moe_${W16L_XE_SHEET:-mixtral}_${f}_$tag.json > "$L/w16lane_moe_${f}_$tag.txt" 2>&1
        say "bench moe ${W16L_XE_SHEET:-mixtral} $f MEMRA_W16=$w ${vv}: exit $?"
        grep -E "^(mixtral|qwen3)" "$L/w16lane_moe_${f}_$tag.txt" | head -12 >> "$S"
        w16lane_keep
      done
    done
  done
  # W16L_NCU=1: every w16 launch of one bench moe row set (Mixtral q8_0 at W16L_NCU_M, default 4096, one rep),
  # each launch's GPU time (one ncu pass a launch): the grouped call's route / gather / tile beside the loop's and
  # the dense arm's pass and tile, to say where a grouped call's time goes (run w: 2.7-3.0 ms a call, its tile
  # 1.8-2.0 under ncu)
  if [ "${W16L_NCU:-0}" = 1 ]; then
    MEMRA_ADMISSION=off MEMRA_F16_BUDGET_MB=0 timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum \
      --kernel-name regex:memra_k_w16 --launch-count ${W16L_NCU_LAUNCHES:-120} --csv \
      $M bench moe --device 0 --sheet mixtral --routing uniform --format q8_0 --m ${W16L_NCU_M:-4096} --reps 1 \
      > "$L/w16lane_ncu_launches.csv" 2>&1
    say "ncu of the w16 launches (bench moe mixtral q8_0 m=${W16L_NCU_M:-4096}): exit $?"
    python3 - "$L/w16lane_ncu_launches.csv" >> "$S" 2>&1 <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no ncu rows")
h = rows[0]
ki, ui, vi = h.index("Kernel Name"), h.index("Metric Unit"), h.index("Metric Value")
scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
order = []
for r in rows[1:]:
    order.append((r[ki].split("(")[0], float(r[vi].replace(",", "")) * scale.get(r[ui], 1.0)))
# runs of the same kernel name in launch order, with their count and total time (ns -> ms)
runs = []
for name, ns in order:
    if runs and runs[-1][0] == name:
        runs[-1][1] += 1
        runs[-1][2] += ns
    else:
        runs.append([name, 1, ns])
for name, n, ns in runs:
    print("  %-32s x%-3d %.3f ms" % (name, n, ns / 1e6))
PY
    w16lane_keep
  fi
  # MEMRA_ADMISSION=off: the tools see the check's own launches only (the admission self-check of the other
  # modules' lanes is the sanitize step's own cell; cuBLASLt's output read by memra's copy shows as
  # uninitialised to initcheck there)
  for tool in ${W16L_TOOLS:-}; do
    MEMRA_ADMISSION=off timeout 240 compute-sanitizer --tool $tool $M check --device 0 --op gemm_w16 --module w16 --quick \
      > "$L/w16lane_san_$tool.txt" 2>&1
    say "check gemm_w16 under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/w16lane_san_$tool.txt" | tail -1)"
    MEMRA_ADMISSION=off timeout 240 compute-sanitizer --tool $tool $M check --device 0 --op gemm_experts --module w16 --quick \
      > "$L/w16lane_san_xe_$tool.txt" 2>&1
    say "check gemm_experts (w16) under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/w16lane_san_xe_$tool.txt" | tail -1)"
    w16lane_keep
  done
  unset MEMRA_W16
  say "w16lane: $((SECONDS - t)) s"
}

# MEMRA_MMQ_WG_SEED=pin (_wgsf: _wgs with each group's fold pinned behind its s8 wgmma; bench/micro/wgfold.cu found
# ptxas issuing that wgmma two thirds into the fold), in parts (WGPIN_PARTS, default "test ab tools"):
#   test   test_mmq_ops gemm_q8_0r (_wgsf bit for bit the records tile) and gemm_kr (_wgw2f bit for bit =mma), ncu's
#          kernel name at m = 4096 under pin;
#          check gemm_q8_0r under WG=all SK=1 and pin (the stream-k twin _wgskf against the host) and its ncu names
#   ab     knobab SEED 1 / pin at WGPIN_M (default "4096 2048"), then at WGPIN_M512 (default 512: the defaults, where
#          pin takes _wgskf for the rows stream-k takes), WGPIN_ROUNDS rounds (default 2), and at WGPIN_ALL_M
#          (default 512) with MEMRA_MMQ_WG=all MEMRA_MMQ_KR_WG=pre2 (every call on the warpgroup tiles)
#   tools  the four sanitizer tools over check gemm_q8_0r --quick under pin and MEMRA_MMQ_WG=all
#   xe     the grouped twin (memra_k_experts_q8_0r_wgsf): test_gpu_experts wg, wg_graph, wg_split and check
#          gemm_experts under pin, ncu names, bench moe mixtral q8_0 SEED 1 / pin at WGPIN_XE_M (default "512 4096"),
#          WGPIN_XE_ROUNDS rounds (default 1)
# A MEMRA_MMQ_WG_SEED value's dense twin ($2, e.g. _wgsf) on the GPU: test_mmq_ops gemm_q8_0r (every variant bit for bit
# the records tile; the count of $2's cases ok) and ncu's kernel names at m = 4096 under MEMRA_MMQ_WG_SEED=$1; logs $3_*
seed_q8_test() {
  timeout 300 $T gemm_q8_0r > "$L/$3_test_gemm_q8_0r.log" 2>&1
  say "test_mmq_ops gemm_q8_0r (with $2): exit $? $(grep -cE "$2 .* ok\$" "$L/$3_test_gemm_q8_0r.log") $2 cases ok"
  grep -E "FAIL" "$L/$3_test_gemm_q8_0r.log" | head -6 >> "$S"
  MEMRA_MMQ_WG_SEED=$1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
    -k regex:memra_k_gemm_q8_0r -c 2 $M bench 27b --m 4096 --reps 1 --warmup 0 > "$L/$3_ncu.txt" 2>&1
  say "ncu names ($1, m = 4096): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/$3_ncu.txt" | sort -u | tr '\n' ' ')"
  grep -E "gpu__time_duration" "$L/$3_ncu.txt" | head -2 >> "$S"
}

step_wgpin() {
  local t=$SECONDS parts=" ${WGPIN_PARTS:-test ab tools} "
  if [[ $parts == *" test "* ]]; then
    seed_q8_test pin _wgsf wgpin
    timeout 300 $T gemm_kr > "$L/wgpin_test_gemm_kr.log" 2>&1
    say "test_mmq_ops gemm_kr (with _wgw2f): exit $? $(grep -cE 'SEED=pin.* ok$' "$L/wgpin_test_gemm_kr.log") pinned cases ok"
    grep -E "FAIL" "$L/wgpin_test_gemm_kr.log" | head -6 >> "$S"
    MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1 MEMRA_MMQ_WG_SEED=pin timeout 360 $M check --device 0 --op gemm_q8_0r --module mmq \
      > "$L/wgpin_sk_check.log" 2>&1
    say "check gemm_q8_0r (WG=all SK=1 SEED=pin: _wgskf): exit $? $(grep -E 'passed, ' "$L/wgpin_sk_check.log")"
    grep -E " FAIL" "$L/wgpin_sk_check.log" | head -4 >> "$S"
    MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1 MEMRA_MMQ_WG_SEED=pin MEMRA_ADMISSION=off timeout 120 ncu --clock-control none \
      --metrics gpu__time_duration.sum -k regex:'memra_k_gemm_q8_0r_(wgsk|skfix)' $M check --device 0 --op gemm_q8_0r \
      --module mmq --quick > "$L/wgpin_sk_ncu.txt" 2>&1
    say "ncu names (SK=1 SEED=pin): $(grep -oE 'memra_k_gemm_q8_0r_(wgskf?|skfix)' "$L/wgpin_sk_ncu.txt" | sort | uniq -c | tr '\n' ' ')"
  fi
  if [[ $parts == *" ab "* ]]; then
    KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ON=pin KNOBAB_OFF=1 KNOBAB_M="${WGPIN_M:-4096 2048}" \
      KNOBAB_ROUNDS=${WGPIN_ROUNDS:-2} KNOBAB_ARM="mmq|q4_0|q4_k|q5_k" step_knobab
    KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ON=pin KNOBAB_OFF=1 KNOBAB_M="${WGPIN_M512:-512}" KNOBAB_ROUNDS=${WGPIN_ROUNDS:-2} \
      KNOBAB_ARM="mmq|q4_0|q4_k|q5_k" step_knobab
    # and with every call on the warpgroup tiles (WG=all, KR_WG=pre2) at WGPIN_ALL_M (default 512; "" skips): does
    # pin move the m below which auto leaves the seeded tiles?
    [ -n "${WGPIN_ALL_M-512}" ] && KNOBAB_ENV="MEMRA_MMQ_WG=all MEMRA_MMQ_KR_WG=pre2" KNOBAB_KNOB=MEMRA_MMQ_WG_SEED \
      KNOBAB_ON=pin KNOBAB_OFF=1 KNOBAB_M="${WGPIN_ALL_M-512}" KNOBAB_ROUNDS=${WGPIN_ROUNDS:-2} \
      KNOBAB_ARM="mmq|q4_0|q4_k|q5_k" KNOBAB_SFX=_all step_knobab
  fi
  [[ $parts == *" tools "* ]] && knob_tools "MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=pin" wgpin gemm_q8_0r
  if [[ $parts == *" xe "* ]]; then # the grouped twin (memra_k_experts_q8_0r_wgsf): tests, ncu names, bench moe 1 / pin
    knob_experts "MEMRA_MMQ_WG_SEED=pin MEMRA_MMQ_XE_WG=1" wgpinxe mmq wg wg_graph wg_split
    knob_xe_ncu "MEMRA_MMQ_WG_SEED=pin MEMRA_MMQ_XE_WG=1" wgpinxe wg
    KNOBMOE_VALS="1 pin" knob_moe MEMRA_MMQ_WG_SEED wgpinxe "${WGPIN_XE_M:-512 4096}" q8_0 ${WGPIN_XE_ROUNDS:-1}
  fi
  say "wgpin: $((SECONDS - t)) s"
}

# MEMRA_MMQ_WG_SEED=iadd (_wgsi: _wgs without the seed's u8 MMA, its shared-memory reads and tensor work; the fold adds
# the seed with an IADD a value; run u1's micro: the seed costs 115-147 cycles of a group's 506-588 beside the token
# scales' loads), in parts (WGIA_PARTS, default "ab test sk tools xe"; test and sk each take about 6 minutes):
#   ab     knobab SEED 1 / iadd at WGIA_M (default "4096 512"), WGIA_ROUNDS rounds (default 2), Q8_0 and Q4_0 rows
#   test   test_mmq_ops gemm_q8_0r (_wgsi bit for bit the records tile), ncu's kernel name at m = 4096 under iadd
#   sk     check gemm_q8_0r under WG=all SK=1 iadd (the stream-k twin _wgski against the host)
#   tools  the four sanitizer tools over check gemm_q8_0r under WG=all SEED=iadd
#   xe     the grouped twin (memra_k_experts_q8_0r_wgsi): test_gpu_experts wg, wg_graph, wg_split, check, ncu names,
#          bench moe Mixtral-like q8_0 SEED 1 / iadd at WGIA_XE_M (default "512 4096")
step_wgia() {
  local t=$SECONDS parts=" ${WGIA_PARTS:-ab test sk tools xe} "
  if [[ $parts == *" ab "* ]]; then
    KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ON=iadd KNOBAB_OFF=1 KNOBAB_M="${WGIA_M:-4096 512}" \
      KNOBAB_ROUNDS=${WGIA_ROUNDS:-2} KNOBAB_ARM="mmq|q4_0" step_knobab
  fi
  if [[ $parts == *" test "* ]]; then
    seed_q8_test iadd _wgsi wgia
  fi
  if [[ $parts == *" sk "* ]]; then
    MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1 MEMRA_MMQ_WG_SEED=iadd timeout 360 $M check --device 0 --op gemm_q8_0r --module mmq \
      > "$L/wgia_sk_check.log" 2>&1
    say "check gemm_q8_0r (WG=all SK=1 SEED=iadd: _wgski): exit $? $(grep -E 'passed, ' "$L/wgia_sk_check.log")"
    grep -E " FAIL" "$L/wgia_sk_check.log" | head -4 >> "$S"
  fi
  [[ $parts == *" tools "* ]] && knob_tools "MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=iadd" wgia gemm_q8_0r
  if [[ $parts == *" xe "* ]]; then
    knob_experts "MEMRA_MMQ_WG_SEED=iadd MEMRA_MMQ_XE_WG=1" wgiaxe mmq wg wg_graph wg_split
    knob_xe_ncu "MEMRA_MMQ_WG_SEED=iadd MEMRA_MMQ_XE_WG=1" wgiaxe wg
    KNOBMOE_VALS="1 iadd" knob_moe MEMRA_MMQ_WG_SEED wgiaxe "${WGIA_XE_M:-512 4096}" q8_0 ${WGIA_XE_ROUNDS:-1}
  fi
  say "wgia: $((SECONDS - t)) s"
}

# MEMRA_MMQ_XE_WG_REM=1 (issue 30: the experts' remainders of at most 32 rows in the seeded tile's grid, on its
# 32-column twin, memra_k_experts_q8_0r_wgsr), in parts (XEREM_PARTS, default "tests ab ncu tools"):
#   tests  test_gpu_experts wg_rem, wg_rem_graph, wg_rem_split, wg_rem3 (each bit for bit the dense lane, in the
#          band against the host, failing on a refusal), check gemm_experts under XE_WG=1 and the knob, ncu names
#   ab     bench moe Mixtral-like q8_0 with the knob 0 / 1 at XEREM_M (default "512 4096"), XEREM_ROUNDS rounds
#          (default 2), the order alternating
#   ncu    each kernel's time in one bench moe pass at m = 512 under the knob (as run r6 measured the default)
#   tools  the four sanitizer tools over wg_rem, wg_rem_split and wg_rem3, each in its own process
step_xerem() {
  local t=$SECONDS parts=" ${XEREM_PARTS:-tests ab ncu tools} "
  if [[ $parts == *" tests "* ]]; then
    knob_experts "MEMRA_MMQ_XE_WG=1 MEMRA_MMQ_XE_WG_REM=1" xerem mmq wg_rem wg_rem_graph wg_rem_split wg_rem3
    knob_xe_ncu "MEMRA_MMQ_XE_WG_REM=1" xerem wg_rem wg_rem3
  fi
  [[ $parts == *" ab "* ]] && knob_moe MEMRA_MMQ_XE_WG_REM xerem "${XEREM_M:-512 4096}" q8_0 ${XEREM_ROUNDS:-2}
  if [[ $parts == *" ncu "* ]]; then
    MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_MMQ_XE_WG_REM=1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct -k regex:'memra_k_(experts|quant)' \
      -c 14 $M bench moe --device 0 --sheet mixtral --m 512 --routing uniform --format q8_0 --reps 1 \
      > "$L/xerem_ncu.txt" 2>&1
    say "ncu xerem bench moe m=512 (MEMRA_MMQ_XE_WG_REM=1): exit $?"
    grep -E "^  memra_k_|gpu__time|dram__bytes|hit_rate" "$L/xerem_ncu.txt" | sed -E 's/Context 1, Stream [0-9]+, Device 0, CC 9.0//' |
      tr -s ' ' | paste - - - - | head -14 >> "$S"
  fi
  [[ $parts == *" tools "* ]] && knob_xe_tools MEMRA_MMQ_XE_WG_REM=1 xerem wg_rem wg_rem_split wg_rem3
  say "xerem: $((SECONDS - t)) s"
}

# The gap run l2 found (bench/RESULTS.md, twenty-seventh session): under the records plan (MEMRA_MMQ_WG=0) a
# whole memra_matmul call took 43-61 us more than its quant_q8_1 and gemm_q8_0r timed alone on three rows (m =
# 384: 6144->5120, 5120->5120; m = 768: 5120->1024), bimodally. 1. knobab MEMRA_MMQ_PDL 1 / 0 under
# MEMRA_MMQ_WG=0 at GAP_M (default "384 768"): each mmq row and its split line (the ops alone) to the summary;
# if PDL is the cause the gap closes at 0. 2. ncu's duration of every quant_q8_1 / gemm_q8_0r / split-k sum
# launch of one bench at GAP_NCU_M (default 384): are the kernels themselves longer inside memra_matmul (ncu
# runs each kernel alone, so an overlap between them cannot show here). 3. Where nsys exists, its kernel
# timeline of the same bench (gaps between launches).
# The per-call dequantisation against the floor (twenty-ninth session's estimate: on sm_90 dequant_f16 +
# gemm_f16 at 0.3-0.5x the floor's time at m = 4096). MEMRA_Q8_0_RECORDS=0 makes no records at prepare, so
# the floor arms (q4_0, q4_k, q5_k, q6_k; budget 0) run the per-call dequantisation from the raw copy and
# their notes say "dequant_f16 ran" / INVALID (they are not the floor then): knobab 0 against 1 (the floor)
# at DEQAB_M (default "512 4096"), DEQAB_ROUNDS rounds (default 1); the f16 row (the mirror) beside them;
# then the floor's arms with MEMRA_FLOOR_F16_M=1 (dequant_kr_f16 + gemm_f16 from the K records), memra check of
# dequant_kr_f16 and the four tools over it (sm90, --quick, each in its own process), and ncu's duration of each
# dequant kernel at the first m
step_deqab() {
  local t=$SECONDS
  local mm f
  KNOBAB_KNOB=MEMRA_Q8_0_RECORDS KNOBAB_ON=0 KNOBAB_OFF=1 KNOBAB_M="${DEQAB_M:-512 4096}" \
    KNOBAB_ROUNDS=${DEQAB_ROUNDS:-1} KNOBAB_ARM="f16|q4_0|q4_k|q5_k|q6_k" step_knobab
  # the same arms with MEMRA_FLOOR_F16_M=1: the K records dequantised per call (dequant_kr_f16) + gemm_f16
  for mm in ${DEQAB_M:-512 4096}; do
    f="$L/deqab_kr_m$mm.txt"
    MEMRA_FLOOR_F16_M=1 timeout 200 $M bench 27b --m $mm --json $R/deqab_kr_27b_m${mm}_$TAG.json > "$f" 2>&1
    say "deqab bench 27b m=$mm MEMRA_FLOOR_F16_M=1: exit $?"
    awk '$1 ~ /->/ {s = $1} $1 ~ /^(f16|mmq|q4_0|q4_k|q5_k|q6_k)$/ || $2 ~ /^(f16|mmq|q4_0|q4_k|q5_k|q6_k)$/ {print "  " s, $0}' "$f" |
      grep -v split >> "$S"
  done
  python3 bench/deqab_table.py "$R" "$TAG" > "$L/deqab_table.txt" 2>&1
  grep -E "^device|^  m=" "$L/deqab_table.txt" >> "$S"
  MEMRA_FLOOR_F16_M=1 timeout 200 $M check --device 0 --op dequant_kr_f16 > "$L/deqab_check.log" 2>&1
  say "check dequant_kr_f16 (every module): exit $? $(grep -E 'passed, ' "$L/deqab_check.log")"
  grep -E " FAIL" "$L/deqab_check.log" | head -4 >> "$S"
  local tool lg
  for tool in memcheck racecheck initcheck synccheck; do
    lg="$L/deqab_san_$tool.log"
    MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $tool $(san_x $tool) --print-limit 0 --show-backtrace no \
      $M check --device 0 --op dequant_kr_f16 --module sm90 --quick > "$lg" 2>&1
    say "deqab $tool check dequant_kr_f16 sm90: exit $? reports $(san_count $tool "$lg") ($(san_said "$lg"))"
  done
  MEMRA_FLOOR_F16_M=1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes.sum \
    -k regex:'dequant' $M bench 27b --m $(set -- ${DEQAB_M:-512 4096}; echo $1) --reps 1 --warmup 0 > "$L/deqab_ncu.txt" 2>&1
  say "deqab ncu (dequant kernels: the mirrors' dequant_f16 at prepare, dequant_kr_f16 per call): exit $?"
  awk '/[a-z_0-9]*dequant[a-z_0-9]*/ && /\(/ {match($0, /[a-zA-Z_0-9]*dequant[a-zA-Z_0-9]*/); k = substr($0, RSTART, RLENGTH)}
    /gpu__time_duration.sum|dram__bytes.sum/ {print "  " k, $1, $(NF-1), $NF}' "$L/deqab_ncu.txt" | head -48 >> "$S"
  say "deqab: $((SECONDS - t)) s"
}

step_gap() {
  local t=$SECONDS f mm=${GAP_NCU_M:-384}
  # GAP_ENV: more settings for every arm (MEMRA_MMQ_ONE=1: the one-CTA-an-SM tiles). Arms: MEMRA_MMQ_PDL=1
  # (the default: a one-wave records grid launched as a dependent asks for more than half an SM's shared
  # memory) against pack (the tile's own bytes: two CTAs may share an SM) and against 0 (plain launches)
  KNOBAB_KNOB=MEMRA_MMQ_PDL KNOBAB_ON=pack KNOBAB_OFF=1 KNOBAB_ENV="MEMRA_MMQ_WG=0 ${GAP_ENV:-}" KNOBAB_M="${GAP_M:-384 768}" \
    KNOBAB_ROUNDS=${GAP_ROUNDS:-1} KNOBAB_ARM="mmq" step_knobab
  KNOBAB_KNOB=MEMRA_MMQ_PDL KNOBAB_ON=0 KNOBAB_OFF=1 KNOBAB_ENV="MEMRA_MMQ_WG=0 ${GAP_ENV:-}" KNOBAB_M="${GAP_M:-384 768}" \
    KNOBAB_ROUNDS=${GAP_ROUNDS:-1} KNOBAB_ARM="mmq" step_knobab
  for f in "$L"/knobab_m*_on0.txt "$L"/knobab_m*_onpack.txt; do
    say "  split lines of $(basename "$f"):"
    awk '$1 ~ /->/ {s = $1} $1 == "mmq" && $2 == "split" {print "    " s, $3, $4, $5, $6, $7, $8, $9, $10, $11}' "$f" >> "$S"
  done
  case " ${GAP_PARTS:-} " in *" ncu "*)
    MEMRA_MMQ_WG=0 MEMRA_ADMISSION=off timeout 240 ncu --clock-control none --metrics gpu__time_duration.sum \
      -k regex:'memra_k_(quant_q8_1|gemm_q8_0r|splitk_sum)' $M bench 27b --m $mm --reps 2 --warmup 0 > "$L/gap_ncu.txt" 2>&1
    say "gap ncu bench 27b m=$mm MEMRA_MMQ_WG=0: exit $?"
    awk '/memra_k_[a-z0-9_]+/ {match($0, /memra_k_[a-z0-9_]+/); k = substr($0, RSTART, RLENGTH)} /gpu__time_duration.sum/ {print "  " k, $(NF-1), $NF}' \
      "$L/gap_ncu.txt" | awk '{n[$1]++; if (!($1 in lo) || $3 < lo[$1]) lo[$1] = $3; if ($3 > hi[$1]) hi[$1] = $3; u[$1] = $2}
        END {for (k in n) printf "  %s: %d launches, %s %s .. %s\n", k, n[k], u[k], lo[k], hi[k]}' >> "$S" ;;
  esac
  say "gap: $((SECONDS - t)) s"
}

# MEMRA_MMQ_WG_SK=1 (gemm_q8_0r's seeded tile on stream-k ranges, with its fix-up): check gemm_q8_0r under
# MEMRA_MMQ_WG=all with it (host reference, bands), memcheck / racecheck / synccheck / initcheck over the quick
# check, ncu's kernel names, then knobab SK 1 / 0 under MEMRA_MMQ_WG=all (the stream-k tile against _wgs) at
# SK_M (default "512 4096"), and the defaults' bench at the same m in the same call (SK_PARTS, default
# "check tools ab")
step_sk() {
  local t=$SECONDS tool mm
  case " ${SK_PARTS:-check tools ab} " in *" check "*)
    MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1 MEMRA_LOG=info timeout 200 $M check --device 0 --op gemm_q8_0r --module mmq \
      > "$L/sk_check.log" 2>&1
    say "sk check gemm_q8_0r (MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1): exit $? $(grep -E 'passed, ' "$L/sk_check.log")"
    grep -E " FAIL|WG_SK" "$L/sk_check.log" | head -6 >> "$S"
    MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1 MEMRA_ADMISSION=off timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum \
      -k regex:'memra_k_gemm_q8_0r_(wgsk|skfix)' $M check --device 0 --op gemm_q8_0r --module mmq --quick > "$L/sk_ncu.txt" 2>&1
    say "sk ncu names: $(grep -oE 'memra_k_gemm_q8_0r_(wgsk|skfix)' "$L/sk_ncu.txt" | sort | uniq -c | tr '\n' ' ')" ;;
  esac
  case " ${SK_PARTS:-check tools ab} " in *" tools "*)
    for tool in memcheck racecheck synccheck initcheck; do
      MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=1 MEMRA_ADMISSION=off timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
        $M check --device 0 --op gemm_q8_0r --module mmq --quick > "$L/sk_$tool.log" 2>&1
      say "sk $tool: exit $? $(grep -E 'passed, ' "$L/sk_$tool.log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/sk_$tool.log" | head -1)"
    done ;;
  esac
  case " ${SK_PARTS:-check tools ab} " in *" ab "*)
    # SK_ON (default 1) against 0, under SK_ENV (default MEMRA_MMQ_WG=all; SK_ON=auto SK_ENV= : the defaults)
    KNOBAB_KNOB=MEMRA_MMQ_WG_SK KNOBAB_ON=${SK_ON:-1} KNOBAB_ENV="${SK_ENV-MEMRA_MMQ_WG=all}" KNOBAB_M="${SK_M:-512 4096}" \
      KNOBAB_ROUNDS=${SK_ROUNDS:-1} KNOBAB_ARM="mmq|q4_0" step_knobab
    [ "${SK_DEFAULT:-1}" = 1 ] && for mm in ${SK_M:-512 4096}; do
      timeout 200 $M bench 27b --m $mm --json $R/sk_default_27b_m${mm}_$TAG.json > "$L/sk_default_m$mm.txt" 2>&1
      say "sk bench 27b m=$mm (the defaults): exit $?"
      awk '$1 ~ /->/ {s = $1} $1 ~ /^(mmq|q4_0)$/ {print "  " s, $0}' "$L/sk_default_m$mm.txt" | grep -v split >> "$S"
    done ;;
  esac
  say "sk: $((SECONDS - t)) s"
}

# Where the stream-k tile's persistent loop loses 4-10% a step at m = 4096 (run p8): ncu's warp states, source
# counters and throughput of one launch each of _wgs (MEMRA_MMQ_WG_SK=0) and _wgsk (=1), both under
# MEMRA_MMQ_WG=all, in bench 27b at SKNCU_M (default 4096; the third matching launch, its grid on the details page), with the
# details page's headline rows and the per-loop stall split (bench/ncusrc.py --reasons) to the summary
step_skncu() {
  local t=$SECONDS v name re
  for v in 0 1; do
    name=$([ $v = 1 ] && echo wgsk || echo wgs); re=$([ $v = 1 ] && echo 'memra_k_gemm_q8_0r_wgsk' || echo 'memra_k_gemm_q8_0r_wgs$')
    MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SK=$v MEMRA_ADMISSION=off timeout 240 ncu --clock-control none --section SourceCounters \
      --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:"$re" --launch-skip 2 -c 1 \
      -f -o "$L/skncu_$name" $M bench 27b --m ${SKNCU_M:-4096} --reps 1 --warmup 0 > "$L/skncu_$name.txt" 2>&1
    say "skncu $name (MEMRA_MMQ_WG_SK=$v): exit $?"
    timeout 120 ncu --import "$L/skncu_$name.ncu-rep" --page details > "$L/skncu_${name}_details.txt" 2>&1
    grep -E "^ +[a-z_0-9]+(<|\()|Duration|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|L2 Hit Rate|Warp Cycles Per Issued|Stall" \
      "$L/skncu_${name}_details.txt" | head -24 >> "$S"
    timeout 120 ncu --import "$L/skncu_$name.ncu-rep" --page source --print-source sass --csv > "$L/skncu_$name.csv" 2>> "$L/skncu_$name.txt"
    [ -f bench/ncusrc.py ] && python3 bench/ncusrc.py "$L/skncu_$name.csv" --reasons 2>&1 | head -30 >> "$S"
  done
  say "skncu: $((SECONDS - t)) s"
}

# The plan's choice between the seeded warpgroup tile and the records tiles below 1024 tokens (the model's
# step_wg, mmq_ops.c): knobab MEMRA_MMQ_WG=all (the seeded tile on every call, at its own split) against 0
# (the records plan) at WGPLAN_M (default 256 384 512 640 768 1024), WGPLAN_ROUNDS rounds (default 1),
# then the default (auto) at each m as a third arm, which should run as fast as the faster of the two;
# the q8_0 / q4_0 rows to the summary.
step_wgplan() {
  local t=$SECONDS mm f
  KNOBAB_KNOB=MEMRA_MMQ_WG KNOBAB_ON=all KNOBAB_OFF=0 KNOBAB_M="${WGPLAN_M:-256 384 512 640 768 1024}" \
    KNOBAB_ROUNDS=${WGPLAN_ROUNDS:-1} KNOBAB_ARM="mmq|q4_0" step_knobab
  # the default (auto: the plan's pick) as a third arm: each row should match the faster of the two
  for mm in ${WGPLAN_M:-256 384 512 640 768 1024}; do
    f="$L/wgplan_auto_m$mm.txt"
    timeout 200 $M bench 27b --m $mm --json $R/wgplan_auto_27b_m${mm}_$TAG.json > "$f" 2>&1
    say "wgplan bench 27b m=$mm MEMRA_MMQ_WG=auto: exit $?"
    awk '$1 ~ /->/ {s = $1} $1 ~ /^(mmq|q4_0)$/ || $2 ~ /^(mmq|q4_0)$/ {print "  " s, $0}' "$f" | grep -v split >> "$S"
  done
  say "wgplan: $((SECONDS - t)) s"
}

# The grouped experts call under threads and streams (test_gpu_stress's lanes xe, xefp8blk and xewg, the
# last at k = 4096 on the warpgroup tile, beside the dense lanes): streams and graphs with every lane, the
# grouped lanes (XESTRESS_LANES, default xe,xefp8blk,xewg) alone with an injected fault (must fail), and
# the tools (XESTRESS_TOOLS, default memcheck racecheck) over the grouped lanes' streams case, each in its
# own process
step_xestress() {
  local t=$SECONDS c tool lg
  for c in streams graphs; do
    timeout 300 $B/bin/test_gpu_stress $c > "$L/xestress_$c.log" 2>&1
    say "test_gpu_stress $c (every lane, the grouped ones included): exit $?"
    grep -E "^(streams|graphs):|GPU hits|FAIL|differ|no GPU module" "$L/xestress_$c.log" | head -12 >> "$S"
  done
  local lanes=${XESTRESS_LANES:-xe,xefp8blk,xewg}
  MEMRA_TEST_STRESS_LANES=$lanes MEMRA_TEST_INJECT_FAULT=1 timeout 300 $B/bin/test_gpu_stress streams \
    > "$L/xestress_inject.log" 2>&1
  say "test_gpu_stress streams, lanes $lanes, injected fault: exit $? (must be non-zero)"
  # XESTRESS_EACH=1: each grouped lane alone under every tool (run l3 / l5: under racecheck the three lanes'
  # process ended with status 9 after its threads joined, 0 hazards shown; which lane, and was it killed?)
  local sets=$lanes ln
  [ "${XESTRESS_EACH:-0}" = 1 ] && sets=${lanes//,/ }
  for ln in $sets; do for tool in ${XESTRESS_TOOLS:-memcheck racecheck}; do
    lg="$L/xestress_san_${tool}_${ln//,/_}.log"
    MEMRA_TEST_STRESS_LANES=$ln MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $tool $(san_x $tool) \
      --target-processes application-only --print-limit 0 --show-backtrace no $B/bin/test_gpu_stress streams > "$lg" 2>&1
    local rc=$?
    say "xestress $tool test_gpu_stress streams ($ln): exit $rc reports $(san_count $tool "$lg") ($(san_said "$lg"))"
    if [ $rc != 0 ]; then
      tail -3 "$lg" | sed 's/^/    /' >> "$S"
      { dmesg 2>/dev/null | tail -5 | sed 's/^/    dmesg: /'; } >> "$S"
    fi
  done; done
  say "xestress: $((SECONDS - t)) s"
}

# A knob's admission and tools over one op's check (krtc, bulk): knob_info KV NAME runs memra info
# with KV set (admission: lines naming a quarantine); knob_tools KV NAME OP runs the four tools over
# memra check --op OP --module mmq --quick with KV set, each in its own process
knob_info() {
  env $1 timeout 100 $M info > "$L/$2_info.log" 2>&1
  say "memra info ($1): exit $? $(grep -ciE 'quarantin' "$L/$2_info.log") lines naming a quarantine"
}
# knob_kr_tests KV NAME: test_mmq_ops gemm_kr (every tile x split against the host) and memra check
# --op gemm_kr (native) with KV set; knob_kr_names KV NAME: which gemm_kr kernels the check's --quick
# calls launch under KV (ncu; the names prove a variant ran)
knob_kr_tests() {
  env $1 timeout 300 $T gemm_kr > "$L/$2_test_gemm_kr.log" 2>&1
  say "test_mmq_ops gemm_kr ($1): exit $?"
  grep -E "FAIL" "$L/$2_test_gemm_kr.log" | head -6 >> "$S"
  env $1 timeout 200 $M check --device 0 --op gemm_kr > "$L/$2_check.log" 2>&1
  say "check gemm_kr ($1): exit $? $(grep -E 'passed, ' "$L/$2_check.log")"
  grep -E " FAIL" "$L/$2_check.log" | head -4 >> "$S"
}
knob_kr_names() {
  env $1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
    -k regex:memra_k_gemm_kr -c 12 $M check --device 0 --op gemm_kr --module mmq --quick > "$L/$2_ncu.txt" 2>&1
  say "ncu names ($1): exit $? $(grep -oE 'memra_k_gemm_kr_q[456]_k_[a-z0-9]+' "$L/$2_ncu.txt" | sort -u | tr '\n' ' ')"
}

knob_tools() {
  local tool lg
  for tool in memcheck racecheck initcheck synccheck; do
    lg="$L/$2_san_$tool.log"
    env $1 MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $tool $(san_x $tool) --print-limit 0 \
      --show-backtrace no $M check --device 0 --op $3 --module mmq --quick > "$lg" 2>&1
    say "$2 $tool check $3 mmq: exit $? reports $(san_count $tool "$lg") ($(san_said "$lg"))"
  done
}

# MEMRA_MMQ_BULK=1 (issue 26: gemm_q8_0r's tiles with their record runs brought by the bulk copy
# engine, the _b entry points): test_mmq_ops gemm_q8_0r, memra check --op gemm_q8_0r under the
# native and forced sm120 profiles (the cuda profile's PTX has no _b tiles: the knob then keeps
# the cp.async ones), memra info (admission), the four tools over the check (--quick, each in its
# own process), knobab on the 27b sheet at each M:ROUNDS of BULK_M (default "512:2 4096:1")
# with the q8_0 and q4_0 rows in the summary, and ncu naming the kernel (BULK_NCU=0 skips)
step_bulk() {
  local t=$SECONDS p v
  MEMRA_MMQ_BULK=1 timeout 300 $T gemm_q8_0r > "$L/bulk_test_gemm_q8_0r.log" 2>&1
  say "test_mmq_ops gemm_q8_0r (MEMRA_MMQ_BULK=1): exit $?"
  grep -E "FAIL" "$L/bulk_test_gemm_q8_0r.log" | head -6 >> "$S"
  for p in native sm120; do
    env MEMRA_MMQ_BULK=1 $([ $p != native ] && echo MEMRA_ARCH=$p) timeout 200 $M check --device 0 --op gemm_q8_0r \
      > "$L/bulk_check_$p.log" 2>&1
    say "check gemm_q8_0r (MEMRA_MMQ_BULK=1, $p): exit $? $(grep -E 'passed, ' "$L/bulk_check_$p.log")"
    grep -E " FAIL" "$L/bulk_check_$p.log" | head -4 >> "$S"
  done
  knob_info MEMRA_MMQ_BULK=1 bulk
  knob_tools MEMRA_MMQ_BULK=1 bulk gemm_q8_0r
  local mr
  for mr in ${BULK_M:-512:2 4096:1}; do
    KNOBAB_KNOB=MEMRA_MMQ_BULK KNOBAB_ARM='mmq|q4_0' KNOBAB_M=${mr%%:*} KNOBAB_ROUNDS=${mr##*:} step_knobab
  done
  [ "${BULK_NCU:-1}" = 1 ] && for v in 0 1; do
    MEMRA_MMQ_BULK=$v MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --metrics "$NCU_METS" -k regex:memra_k_gemm_q8_0r --launch-skip 2 -c 2 $T sweep 4096 0 \
      > "$L/bulk_ncu_$v.txt" 2>&1
    say "ncu gemm_q8_0r (MEMRA_MMQ_BULK=$v): exit $? $(grep -m2 -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/bulk_ncu_$v.txt" | sort -u | tr '\n' ' ')"
  done
  say "bulk: $((SECONDS - t)) s"
}

# test_gpu_experts CASE... and memra check --op gemm_experts --module MODULE under the knob setting KV
# (VAR=VALUE, several space-separated): knob_experts KV PREFIX MODULE CASE...; logs
# $L/PREFIX_test_CASE.log and $L/PREFIX_check.log
knob_experts() {
  local kv=$1 pre=$2 mod=$3 c
  shift 3
  for c in "$@"; do
    env $kv timeout 200 $B/bin/test_gpu_experts $c > "$L/${pre}_test_$c.log" 2>&1
    say "test_gpu_experts $c ($kv): exit $?"
  done
  env $kv timeout 200 $M check --device 0 --op gemm_experts --module $mod > "$L/${pre}_check.log" 2>&1
  say "check gemm_experts $mod ($kv): exit $? $(grep -E 'passed, ' "$L/${pre}_check.log")"
}

# MEMRA_MMQ_BULK=1 on the grouped floor (the sorted Q8_0 tiles' _sb entry points): test_gpu_experts
# run, skew, graph (against the host and bit for bit the dense lane, itself on the _b tiles), check
# --op gemm_experts --module mmq, the four tools over test_gpu_experts run (each in its own
# process), then memra bench moe --sheet mixtral --format q8_0 at BULKXE_M (default 512) with the
# knob 0 / 1, BULKXE_ROUNDS rounds (default 2), the order alternating
step_bulkxe() {
  local t=$SECONDS c tool mm r i v f
  knob_experts MEMRA_MMQ_BULK=1 bulkxe mmq run skew graph
  for tool in memcheck racecheck initcheck synccheck; do
    ( export MEMRA_MMQ_BULK=1; san_experts bulkxe_san $tool run )
  done
  for mm in ${BULKXE_M:-512}; do for ((r = 1; r <= ${BULKXE_ROUNDS:-2}; r++)); do for ((i = 0; i < 2; i++)); do
    v=$(((i + r - 1) % 2))
    f="$L/bulkxe_m${mm}_${v}_$r.txt"
    MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_MMQ_BULK=$v timeout 300 $M bench moe --device 0 --sheet mixtral --m $mm --format q8_0 \
      --json $R/bulkxe_m${mm}_${v}_${r}_$TAG.json > "$f" 2>&1
    say "bulkxe bench moe q8_0 m=$mm MEMRA_MMQ_BULK=$v (round $r): exit $?"
    moe_rows "$f" 'mixtral'
  done; done; done
  say "bulkxe: $((SECONDS - t)) s"
}

# MEMRA_MMQ_KR_TC=1's first GPU run (issue 26: gemm_kr's Q4_K / Q5_K min term on TF32 MMAs): test_mmq_ops
# gemm_kr (every tile x split against the host, judge_band_kr), test_gpu_experts q4_k / q5_k / q6_k and the
# gemm_experts check (the sorted grouped tiles on the same fold), memra check --op gemm_kr under the native,
# forced sm120 and forced cuda profiles, memra info (admission: no quarantine), the four sanitizer tools
# over the check (--quick, each in its own process), then knobab on the 27b sheet (KRTC_M, default 512;
# KRTC_ROUNDS, default 2) with the q4_k and q5_k rows in the summary
step_krtc() {
  local t=$SECONDS p
  MEMRA_MMQ_KR_TC=1 timeout 300 $T gemm_kr > "$L/krtc_test_gemm_kr.log" 2>&1
  say "test_mmq_ops gemm_kr (MEMRA_MMQ_KR_TC=1): exit $?"
  grep -E "FAIL" "$L/krtc_test_gemm_kr.log" | head -6 >> "$S"
  for p in native sm120 cuda; do
    env MEMRA_MMQ_KR_TC=1 $([ $p != native ] && echo MEMRA_ARCH=$p) timeout 200 $M check --device 0 --op gemm_kr \
      > "$L/krtc_check_$p.log" 2>&1
    say "check gemm_kr (MEMRA_MMQ_KR_TC=1, $p): exit $? $(grep -E 'passed, ' "$L/krtc_check_$p.log")"
    grep -E " FAIL" "$L/krtc_check_$p.log" | head -4 >> "$S"
  done
  # the grouped K-quant tiles on the same fold (the sorted _st tiles): bit for bit the dense _t tiles, and the check
  knob_experts MEMRA_MMQ_KR_TC=1 krtc_experts mmq q4_k q5_k q6_k
  knob_info MEMRA_MMQ_KR_TC=1 krtc
  knob_tools MEMRA_MMQ_KR_TC=1 krtc gemm_kr
  KNOBAB_KNOB=MEMRA_MMQ_KR_TC KNOBAB_ARM='q4_k|q5_k' KNOBAB_M=${KRTC_M:-512} KNOBAB_ROUNDS=${KRTC_ROUNDS:-2} step_knobab
  # where each fold's time goes (KRTC_NCU=0 skips): step_ncu's sections and stalls over the first Q4_K
  # launches of test_mmq_ops sweep_kr at m = 4096, plain and TC
  local v
  [ "${KRTC_NCU:-1}" = 1 ] && for v in 0 1; do
    MEMRA_MMQ_KR_TC=$v MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy \
      --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --metrics "$NCU_METS" \
      -k regex:memra_k_gemm_kr --launch-skip 2 -c 2 $T sweep_kr q4_k 4096 0 > "$L/krtc_ncu_tc$v.txt" 2>&1
    say "ncu gemm_kr q4_k (MEMRA_MMQ_KR_TC=$v): exit $? $(grep -m2 -oE 'memra_k_gemm_kr_q4_k_[a-z0-9]+' "$L/krtc_ncu_tc$v.txt" | sort -u | tr '\n' ' ')"
  done
  say "krtc: $((SECONDS - t)) s"
}

# MEMRA_MMQ_KR_SUMS (issue 26: gemm_kr's Q4_K / Q5_K tiles read the min term's t = fl(S d) from the
# q8_1 records' sum plane, the _tx / _x entry points, on by default): test_mmq_ops quant (the plane bit
# for bit against the host) and gemm_kr (default, and with the knob 0), memra check of quant_q8_1,
# gemm_kr and gemm_experts under the native, sm120 and cuda profiles, memra info, the four tools over
# the gemm_kr and quant_q8_1 checks, then knobab 0 / 1 on the 27b sheet at KRSUMS_M (default
# "4096 512"), KRSUMS_ROUNDS rounds (default 2), the q4_k and q5_k rows in the summary
step_krsums() {
  local t=$SECONDS p op v parts=" ${KRSUMS_PARTS:-tests tools ab} "
  if [[ $parts == *" tests "* ]]; then
    for op in quant gemm_kr; do
      timeout 300 $T $op > "$L/krsums_test_$op.log" 2>&1
      say "test_mmq_ops $op: exit $? $(grep -oE 'memra_k_gemm_kr_q[45]_k_[a-z0-9]+' "$L/krsums_test_$op.log" | sort -u | head -8 | tr '\n' ' ')"
      grep -E "FAIL" "$L/krsums_test_$op.log" | head -6 >> "$S"
    done
    MEMRA_MMQ_KR_SUMS=0 timeout 300 $T gemm_kr > "$L/krsums_test_gemm_kr_0.log" 2>&1
    say "test_mmq_ops gemm_kr (MEMRA_MMQ_KR_SUMS=0): exit $?"
    for p in native sm120 cuda; do for op in quant_q8_1 gemm_kr gemm_experts; do
      env $([ $p != native ] && echo MEMRA_ARCH=$p) timeout 200 $M check --device 0 --op $op > "$L/krsums_check_${op}_$p.log" 2>&1
      say "check $op ($p): exit $? $(grep -E 'passed, ' "$L/krsums_check_${op}_$p.log")"
      grep -E " FAIL" "$L/krsums_check_${op}_$p.log" | head -4 >> "$S"
    done; done
    knob_info MEMRA_MMQ_KR_SUMS=1 krsums
    # which kernels the check's gemm_kr calls launched (the _tx / _x names prove the plane's tiles ran)
    for v in 1 0; do knob_kr_names MEMRA_MMQ_KR_SUMS=$v krsums_$v; done
  fi
  if [[ $parts == *" tools "* ]]; then
    knob_tools MEMRA_MMQ_KR_SUMS=1 krsums gemm_kr
    knob_tools MEMRA_MMQ_KR_SUMS=1 krsums_q quant_q8_1
  fi
  [[ $parts == *" ab "* ]] && KNOBAB_KNOB=MEMRA_MMQ_KR_SUMS KNOBAB_ARM='q4_k|q5_k' KNOBAB_M=${KRSUMS_M:-4096 512} \
    KNOBAB_ROUNDS=${KRSUMS_ROUNDS:-2} step_knobab
  say "krsums: $((SECONDS - t)) s"
}

# MEMRA_MMQ_KR_BULK=1's first GPU run (issue 26: gemm_kr's Q4_K / Q5_K _tx tiles with their stages brought
# by the bulk copy engine, the _txb entry points): test_mmq_ops gemm_kr (every tile x split against the
# host), memra check --op gemm_kr (native), memra info (admission), ncu naming the kernels, the four tools
# over the check (KRBULK_TOOLS, default 1), then knobab 0 / 1 on the q4_k and q5_k rows at KRBULK_M
# (default "4096 512"), KRBULK_ROUNDS rounds (default 1)
step_krbulk() {
  knob_kr_run MEMRA_MMQ_KR_BULK krbulk 'q4_k|q5_k' "${KRBULK_TOOLS:-1}" "${KRBULK_M:-4096 512}" "${KRBULK_ROUNDS:-1}"
}
# knob_kr_run KNOB NAME ARM TOOLS M ROUNDS: a gemm_kr knob's first GPU run with KNOB=1: knob_kr_tests, memra
# info, the kernels' names, the four tools over check gemm_kr (TOOLS 1), then knobab KNOB 0 / 1 on the ARM
# rows at each of M, ROUNDS rounds
knob_kr_run() { # $7: the knob's "on" value (default 1)
  local t=$SECONDS v=${7:-1}
  knob_kr_tests $1=$v $2
  knob_info $1=$v $2
  knob_kr_names $1=$v $2
  [ "$4" = 1 ] && knob_tools $1=$v $2 gemm_kr
  KNOBAB_KNOB=$1 KNOBAB_ON=$v KNOBAB_ARM=$3 KNOBAB_M=$5 KNOBAB_ROUNDS=$6 step_knobab
  say "$2: $((SECONDS - t)) s"
}

# MEMRA_MMQ_KR6_BULK=1's first GPU run (issue 26: Q6_K's one-CTA tiles with their stages by the bulk copy
# engine and d through the D window, the _ob entry points): test_mmq_ops gemm_kr (every tile x split
# against the host; shapes 17 x 333 x 768 and 4096 x 100 x 1280 end the D plane off a 16-byte unit: the
# window's plain-load tail), check --op gemm_kr (native), memra info, ncu names, the four tools over the
# check (KR6BULK_TOOLS, default 1), then knobab 0 / 1 on the q6_k rows at KR6BULK_M (default "4096 512"),
# KR6BULK_ROUNDS rounds (default 1)
step_kr6bulk() {
  knob_kr_run MEMRA_MMQ_KR6_BULK kr6bulk q6_k "${KR6BULK_TOOLS:-1}" "${KR6BULK_M:-4096 512}" "${KR6BULK_ROUNDS:-1}"
}

# MEMRA_MMQ_KR_WG=1's first GPU run (issue 26: gemm_kr's Q4_K / Q5_K on the seeded warpgroup tile, the
# producer warpgroup widening the codes, memra_k_gemm_kr_q4_k_wgs / _q5_k_wgs): a 40 s smoke first (a hang
# stops the step), test_mmq_ops gemm_kr (on cc 9.x each Q4_K / Q5_K case compares the tile bit for bit with
# the per-32 records tile at two splits, and with the host), check --op gemm_kr, memra info, ncu names, the
# four tools (KRWG_TOOLS, default 1), knobab 0 / 1 on the q4_k / q5_k rows at KRWG_M (default "4096 512"),
# KRWG_ROUNDS rounds (default 1)
step_krwg() {
  local rc
  timeout 200 $M check --device 0 --op gemm_kr --module mmq --quick > "$L/krwg_warmup.log" 2>&1
  say "warm-up check gemm_kr --quick: exit $? $(grep -E 'passed, ' "$L/krwg_warmup.log")"
  env MEMRA_MMQ_KR_WG=${KRWG_VALUE:-1} timeout 40 $M check --device 0 --op gemm_kr --module mmq --quick \
    > "$L/krwg_smoke.log" 2>&1
  rc=$?
  say "smoke check gemm_kr --quick (MEMRA_MMQ_KR_WG=${KRWG_VALUE:-1}): exit $rc $(grep -E 'passed, ' "$L/krwg_smoke.log")"
  grep -E " FAIL" "$L/krwg_smoke.log" | head -4 >> "$S"
  { [ $rc = 124 ] || [ $rc = 137 ]; } && { say "krwg: the smoke check hung: the rest is skipped"; return 1; }
  knob_kr_run MEMRA_MMQ_KR_WG krwg 'q4_k|q5_k' "${KRWG_TOOLS:-1}" "${KRWG_M:-4096 512}" "${KRWG_ROUNDS:-1}" \
    "${KRWG_VALUE:-1}"
  say "krwg: $(grep -c 'differ from the per-32 records tile  ok' "$L/krwg_test_gemm_kr.log") bit-for-bit cases ok, $(grep -E 'KR_WG=mma split=' "$L/krwg_test_gemm_kr.log" | grep -c ' ok$') KR_WG=mma cases in the band, $(grep -c 'differ from KR_WG=mma  ok' "$L/krwg_test_gemm_kr.log") KR_WG=pre cases bit for bit =mma"
}

# MEMRA_MMQ_KR_WG=pre / pre2 (issue 26: the _wgm tile fed by per-call widening passes, _wgw / _wgw2):
# test_mmq_ops gemm_kr (on cc 9.x =pre and =pre2 bit for bit =mma at two splits, each case also against the
# host), check --op gemm_kr --module mmq with each, ncu's durations of the passes and the tiles in one bench
# call at m = 4096 per variant, then bench 27b at KRPRE_M (default "4096 512") with KR_WG = each of
# KRPRE_ARMS (default "0 mma pre pre2") rotated every round (KRPRE_ROUNDS, default 2); the q4_k / q5_k rows to
# the summary. KRPRE_TOOLS=1: the four tools over
# the check with each (KRPRE_PARTS picks "tests ncu ab tools stalls"; default "tests ncu ab"; stalls: ncu's
# per-reason stalls of the prep2 pass and the tile, see below)
step_krpre() {
  local t=$SECONDS mm r i v f a
  local -a vs=(${KRPRE_ARMS:-0 mma pre pre2})
  local parts=" ${KRPRE_PARTS:-tests ncu ab} "
  if [[ $parts == *" tests "* ]]; then
    timeout 300 $T gemm_kr > "$L/krpre_test_gemm_kr.log" 2>&1
    say "test_mmq_ops gemm_kr: exit $? ($(grep -cE 'KR_WG=pre split=.*differ from KR_WG=mma  ok' "$L/krpre_test_gemm_kr.log") =pre and $(grep -cE 'KR_WG=pre2 split=.*differ from KR_WG=mma  ok' "$L/krpre_test_gemm_kr.log") =pre2 cases bit for bit =mma)"
    grep -E "FAIL" "$L/krpre_test_gemm_kr.log" | head -6 >> "$S"
    for v in ${KRPRE_CHECKS:-pre pre2}; do
      MEMRA_MMQ_KR_WG=$v timeout 200 $M check --device 0 --op gemm_kr --module mmq > "$L/krpre_check_$v.log" 2>&1
      say "check gemm_kr mmq (MEMRA_MMQ_KR_WG=$v): exit $? $(grep -E 'passed, ' "$L/krpre_check_$v.log")"
      grep -E " FAIL" "$L/krpre_check_$v.log" | head -4 >> "$S"
    done
  fi
  if [[ $parts == *" ncu "* ]]; then
    for v in ${KRPRE_NCU:-mma pre pre2}; do
      MEMRA_MMQ_KR_WG=$v MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
        -k regex:'memra_k_(kq_|gemm_kr_)' $M bench 27b --m 4096 --reps 1 --warmup 0 > "$L/krpre_ncu_$v.txt" 2>&1
      say "krpre ncu bench 27b m=4096 MEMRA_MMQ_KR_WG=$v: exit $?"
      awk '/memra_k_[a-z0-9_]+/ {match($0, /memra_k_[a-z0-9_]+/); k = substr($0, RSTART, RLENGTH)}
        /gpu__time_duration.sum/ {print "  " k, $(NF-1), $NF}' "$L/krpre_ncu_$v.txt" | head -40 >> "$S"
    done
  fi
  if [[ $parts == *" ab "* ]]; then
    for mm in ${KRPRE_M:-4096 512}; do for ((r = 1; r <= ${KRPRE_ROUNDS:-2}; r++)); do
      for ((i = 0; i < ${#vs[@]}; i++)); do
        v=${vs[$(((i + r - 1) % ${#vs[@]}))]}
        f="$L/krpre_m${mm}_${v}_$r.txt"
        MEMRA_MMQ_KR_WG=$v timeout 200 $M bench 27b --m $mm --json $R/krpre_27b_m${mm}_${v}_${r}_$TAG.json > "$f" 2>&1
        say "krpre bench 27b m=$mm MEMRA_MMQ_KR_WG=$v (round $r): exit $?"
        awk '$1 ~ /->/ {s = $1} $1 ~ /^(q4_k|q5_k)$/ || $2 ~ /^(q4_k|q5_k)$/ {print "  " s, $0}' "$f" | grep -v split >> "$S"
      done
    done; done
    python3 bench/krpre_table.py "$R" 0 "$TAG" > "$L/krpre_table.txt" 2>&1
    grep -E "^device|^  m=" "$L/krpre_table.txt" >> "$S"
  fi
  if [[ $parts == *" tools "* ]] || [ "${KRPRE_TOOLS:-0}" = 1 ]; then
    for v in pre pre2; do knob_tools MEMRA_MMQ_KR_WG=$v krpre_$v gemm_kr; done
  fi
  # stalls: where the prepared tile's time goes, under the default (auto = pre2 from 1024 tokens; at m < 1024
  # pre2 forced): the first prep2 pass and tile of bench 27b (5120->12288, Q4_K) at each KRPRE_STALL_M
  # (default "4096 512"), speed of light, DRAM, occupancy and the per-reason stalls, a line a launch
  if [[ $parts == *" stalls "* ]]; then
    for mm in ${KRPRE_STALL_M:-4096 512}; do
      f="$L/krpre_stalls_m$mm.txt"
      MEMRA_MMQ_KR_WG=pre2 MEMRA_ADMISSION=off timeout 240 ncu --clock-control none --section SpeedOfLight \
        --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis \
        --metrics "$NCU_METS" -k regex:'memra_k_(kq_prep2_q4_k|gemm_kr_kq_wgw2)' -c 2 \
        $M bench 27b --m $mm --reps 1 --warmup 0 > "$f" 2>&1
      say "krpre stalls m=$mm (pre2): exit $?"
      ncu_launch_lines "$f" 260
    done
  fi
  say "krpre: $((SECONDS - t)) s"
}

# MEMRA_MMQ_WG's first GPU run (issue 26: gemm_q8_0r's 128 x 128 tile on the warpgroup MMA, fed by tensor
# maps, memra_k_gemm_q8_0r_wg): test_mmq_ops gemm_q8_0r with MEMRA_MMQ_WG=all (every forced tile x split then
# runs it against the host, and on cc 9.x each case compares it bit for bit with the records tile), the same
# for Q4_0 (test_mmq_ops gemm_kr: its records go through gemm_q8_0r), check --op gemm_q8_0r, memra info, ncu
# names (the kernel must show), knobab MEMRA_MMQ_WG 0 / WG_VALUE (default all) on the mmq and q4_0 rows at
# WG_M (default "4096 512"), WG_ROUNDS rounds (default 1), then the four tools over the check (WG_TOOLS,
# default 0 here: step wgtools runs them for both kernels)
step_wg() {
  local t=$SECONDS v=${WG_VALUE:-all}
  # WG_PARTS (default "tests ab"): "ab" alone runs the knobab only
  case " ${WG_PARTS:-tests ab} " in *" tests "*) step_wg_tests $v || return 1 ;; esac
  [ "${MEMRA_MMQ_WG_TR:-0}" = 1 ] && say "wg: the A/B on _wgt (MEMRA_MMQ_WG_TR=1)"
  case " ${WG_PARTS:-tests ab} " in *" ab "*)
    KNOBAB_KNOB=MEMRA_MMQ_WG KNOBAB_ON=$v KNOBAB_ARM='mmq q4_0' KNOBAB_M=${WG_M:-4096 512} KNOBAB_ROUNDS=${WG_ROUNDS:-1} \
      step_knobab ;;
  esac
  [ "${WG_TOOLS:-0}" = 1 ] && step_wgtools
  say "wg: $((SECONDS - t)) s"
}
step_wg_tests() {
  local v=$1 rc arm hung=0 a=0 hung1=0
  # the first memra process after a build fills the caches (runs g1, g2: the first smoke, whichever kernel,
  # ran past 40 s); a warm-up first
  timeout 200 $M check --device 0 --op gemm_q8_0r --module mmq --quick > "$L/wg_warmup.log" 2>&1
  say "warm-up check gemm_q8_0r --quick (records tiles): exit $? $(grep -E 'passed, ' "$L/wg_warmup.log")"
  # first a short smoke of each kernel (they have never run): a hang costs 40 s, not the tests' 300, and
  # stops the step (the tests run every kernel)
  for arm in "MEMRA_MMQ_WG_TR=0" "MEMRA_MMQ_WG_TR=1" "MEMRA_MMQ_WG_PERSIST=8"; do
    a=$((a + 1))
    env MEMRA_MMQ_WG=$v $arm timeout 40 $M check --device 0 --op gemm_q8_0r --module mmq --quick \
      > "$L/wg_smoke_$a.log" 2>&1
    rc=$?
    say "smoke check gemm_q8_0r --quick (MEMRA_MMQ_WG=$v $arm): exit $rc $(grep -E 'passed, ' "$L/wg_smoke_$a.log")"
    if [ $rc = 124 ] || [ $rc = 137 ]; then hung=1; [ $a = 1 ] && hung1=1; fi
  done
  if [ $hung = 1 ]; then
    say "wg: a smoke check hung: the tests are skipped"
    # only _wg: the A/B still runs, on _wgt (the caller's knobab sees MEMRA_MMQ_WG_TR=1)
    [ $hung1 = 1 ] && grep -q "passed, 0 failed" "$L/wg_smoke_2.log" && export MEMRA_MMQ_WG_TR=1 && return 0
    return 1
  fi
  [ "${WG_TESTS:-1}" = 1 ] || return 0
  env MEMRA_MMQ_WG=$v timeout 300 $T gemm_q8_0r > "$L/wg_test_gemm_q8_0r.log" 2>&1
  say "test_mmq_ops gemm_q8_0r (MEMRA_MMQ_WG=$v): exit $? $(grep -c 'differ from the records tile  ok' "$L/wg_test_gemm_q8_0r.log") bit-for-bit cases ok"
  grep -E "FAIL" "$L/wg_test_gemm_q8_0r.log" | head -6 >> "$S"
  env MEMRA_MMQ_WG=$v timeout 300 $T gemm_kr > "$L/wg_test_gemm_kr.log" 2>&1
  say "test_mmq_ops gemm_kr (Q4_0 on gemm_q8_0r, MEMRA_MMQ_WG=$v): exit $?"
  grep -E "FAIL" "$L/wg_test_gemm_kr.log" | head -6 >> "$S"
  env MEMRA_MMQ_WG=$v timeout 200 $M check --device 0 --op gemm_q8_0r > "$L/wg_check.log" 2>&1
  say "check gemm_q8_0r (MEMRA_MMQ_WG=$v): exit $? $(grep -E 'passed, ' "$L/wg_check.log")"
  grep -E " FAIL" "$L/wg_check.log" | head -4 >> "$S"
  knob_info MEMRA_MMQ_WG=$v wg
  env MEMRA_MMQ_WG=$v MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
    -k regex:memra_k_gemm_q8_0r -c 12 $M check --device 0 --op gemm_q8_0r --module mmq --quick > "$L/wg_ncu.txt" 2>&1
  say "ncu names (MEMRA_MMQ_WG=$v): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wg_ncu.txt" | sort -u | tr '\n' ' ')"
  env MEMRA_MMQ_WG=$v MEMRA_MMQ_WG_TR=1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none \
    --metrics gpu__time_duration.sum -k regex:memra_k_gemm_q8_0r -c 12 $M check --device 0 --op gemm_q8_0r --module mmq \
    --quick > "$L/wg_ncu_tr.txt" 2>&1
  say "ncu names (MEMRA_MMQ_WG=$v MEMRA_MMQ_WG_TR=1): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wg_ncu_tr.txt" | sort -u | tr '\n' ' ')"
  env MEMRA_MMQ_WG=$v MEMRA_MMQ_WG_PERSIST=1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none \
    --metrics gpu__time_duration.sum -k regex:memra_k_gemm_q8_0r -c 12 $M check --device 0 --op gemm_q8_0r --module mmq \
    --quick > "$L/wg_ncu_per.txt" 2>&1
  say "ncu names (MEMRA_MMQ_WG=$v MEMRA_MMQ_WG_PERSIST=1): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wg_ncu_per.txt" | sort -u | tr '\n' ' ')"
}
# the transposed token scales (MEMRA_MMQ_WG_TR 0 / 1 under MEMRA_MMQ_WG=all), then the persistent tiles
# (MEMRA_MMQ_WG_PERSIST 0 / 1 under MEMRA_MMQ_WG=all MEMRA_MMQ_WG_TR=1): knobab on the mmq / q4_0 rows at WG_M,
# WG_ROUNDS rounds; WGTR_PARTS (default "tr per") picks the two
step_wgtr() {
  local part
  for part in ${WGTR_PARTS:-tr per}; do
    if [ $part = tr ]; then
      KNOBAB_ENV="MEMRA_MMQ_WG=${WG_VALUE:-all}" KNOBAB_KNOB=MEMRA_MMQ_WG_TR KNOBAB_ARM='mmq q4_0' \
        KNOBAB_M=${WG_M:-4096 512} KNOBAB_ROUNDS=${WG_ROUNDS:-1} step_knobab
    else
      KNOBAB_ENV="MEMRA_MMQ_WG=${WG_VALUE:-all} MEMRA_MMQ_WG_TR=1" KNOBAB_KNOB=MEMRA_MMQ_WG_PERSIST \
        KNOBAB_ARM='mmq q4_0' KNOBAB_M=${WG_M:-4096 512} KNOBAB_ROUNDS=${WG_ROUNDS:-1} step_knobab
    fi
  done
}
# where the warpgroup tile's time goes (issue 26): ncu's speed of light, warp states and scheduler of the third
# matching launch of test_mmq_ops sweep 4096 0 (5120->12288, the auto arm first) for _wg and _wgt, beside the
# records tile's (_mt4n3b / _mt4b: the same sweep without the knob), NCU_METS added
step_wgncu() {
  local v
  for v in ${WGNCU_ARMS:-0 wg wgt wgp}; do
    env MEMRA_MMQ_WG=$([ $v = 0 ] && echo 0 || echo all) MEMRA_MMQ_WG_TR=$([ $v = wgt ] && echo 1 || echo 0) \
      MEMRA_MMQ_WG_PERSIST=$([ $v = wgp ] && echo 1 || echo 0) MEMRA_MMQ_WG_SEED=$([ $v = wgs ] && echo 1 || echo 0) \
      MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section ComputeWorkloadAnalysis --section Occupancy --metrics "$NCU_METS" \
      -k regex:memra_k_gemm_q8_0r --launch-skip 2 -c 1 $T sweep 4096 0 > "$L/wgncu_$v.txt" 2>&1
    say "ncu gemm_q8_0r ($v): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wgncu_$v.txt" | sort -u | tr '\n' ' ')"
    grep -iE "duration|issue slots busy|no eligible|stalled_.*ratio|registers per thread" "$L/wgncu_$v.txt" \
      | head -18 >> "$S"
  done
}
# MEMRA_MMQ_WG_SEED's first GPU run (issue 26: the warpgroup tile seeded by a u8 MMA, _wgs / _wgps, 172
# instructions a k32 group where _wgt has 238): a warm-up, 40 s smokes of _wgs and _wgps, test_mmq_ops
# gemm_q8_0r (on cc 9.x every case compares records, _wg, _wgt, _wgp and the three seeded arms bit for bit,
# and a wide-scale case), check --op gemm_q8_0r under the knob, ncu names, then knobab MEMRA_MMQ_WG_SEED
# 0 / 1 under MEMRA_MMQ_WG=all MEMRA_MMQ_WG_TR=1 (_wgt against _wgs) and MEMRA_MMQ_WG 0 / all under
# MEMRA_MMQ_WG_SEED=1 (the records tiles against _wgs) on the mmq / q4_0 rows at WG_M (default "4096 512"),
# WG_ROUNDS rounds (default 1); WGS_PARTS (default "tests ab tools") picks the parts (tools: the four
# tools over _wgs and _wgps)
step_wgs() {
  local t=$SECONDS rc a=0 arm hung=0
  case " ${WGS_PARTS:-tests ab tools} " in *" tests "*)
    timeout 200 $M check --device 0 --op gemm_q8_0r --module mmq --quick > "$L/wgs_warmup.log" 2>&1
    say "warm-up check gemm_q8_0r --quick (records tiles): exit $? $(grep -E 'passed, ' "$L/wgs_warmup.log")"
    for arm in "MEMRA_MMQ_WG_PERSIST=0" "MEMRA_MMQ_WG_PERSIST=8"; do
      a=$((a + 1))
      env MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=1 $arm timeout 40 $M check --device 0 --op gemm_q8_0r --module mmq \
        --quick > "$L/wgs_smoke_$a.log" 2>&1
      rc=$?
      say "smoke check gemm_q8_0r --quick (MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=1 $arm): exit $rc $(grep -E 'passed, ' "$L/wgs_smoke_$a.log")"
      grep -E " FAIL" "$L/wgs_smoke_$a.log" | head -4 >> "$S"
      { [ $rc = 124 ] || [ $rc = 137 ]; } && hung=1
    done
    [ $hung = 1 ] && { say "wgs: a smoke check hung: the rest is skipped"; return 1; }
    env MEMRA_MMQ_WG=all timeout 400 $T gemm_q8_0r > "$L/wgs_test_gemm_q8_0r.log" 2>&1
    say "test_mmq_ops gemm_q8_0r: exit $? $(grep -c 'differ from the records tile  ok' "$L/wgs_test_gemm_q8_0r.log") bit-for-bit cases ok, $(grep -cE '(_wgs|_wgps) .*differ from the records tile  ok' "$L/wgs_test_gemm_q8_0r.log") of them seeded"
    grep -E "FAIL" "$L/wgs_test_gemm_q8_0r.log" | head -6 >> "$S"
    env MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=1 timeout 200 $M check --device 0 --op gemm_q8_0r > "$L/wgs_check.log" 2>&1
    say "check gemm_q8_0r (MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=1): exit $? $(grep -E 'passed, ' "$L/wgs_check.log")"
    grep -E " FAIL" "$L/wgs_check.log" | head -4 >> "$S"
    for arm in "MEMRA_MMQ_WG_PERSIST=0" "MEMRA_MMQ_WG_PERSIST=1"; do
      env MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=1 $arm MEMRA_ADMISSION=off timeout 200 ncu --clock-control none \
        --metrics gpu__time_duration.sum -k regex:memra_k_gemm_q8_0r -c 12 $M check --device 0 --op gemm_q8_0r \
        --module mmq --quick > "$L/wgs_ncu_$arm.txt" 2>&1
      say "ncu names (MEMRA_MMQ_WG=all MEMRA_MMQ_WG_SEED=1 $arm): exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wgs_ncu_$arm.txt" | sort -u | tr '\n' ' ')"
    done ;;
  esac
  case " ${WGS_PARTS:-tests ab tools} " in *" ab "*)
    KNOBAB_ENV="MEMRA_MMQ_WG=all MEMRA_MMQ_WG_TR=1" KNOBAB_KNOB=MEMRA_MMQ_WG_SEED KNOBAB_ARM='mmq|q4_0' \
      KNOBAB_M=${WG_M:-4096 512} KNOBAB_ROUNDS=${WG_ROUNDS:-1} step_knobab
    KNOBAB_ENV="MEMRA_MMQ_WG_SEED=1" KNOBAB_KNOB=MEMRA_MMQ_WG KNOBAB_ON=all KNOBAB_ARM='mmq|q4_0' \
      KNOBAB_M=${WG_M:-4096 512} KNOBAB_ROUNDS=${WG_ROUNDS:-1} step_knobab ;;
  esac
  case " ${WGS_PARTS:-tests ab tools} " in *" tools "*) WGTOOLS_ARMS="wgs wgps" step_wgtools ;; esac
  say "wgs: $((SECONDS - t)) s"
}
# MEMRA_MMQ_WG=auto, the default since the twenty-third session (gemm_q8_0r on the seeded warpgroup tile from
# 1024 tokens): ncu's kernel names under the defaults at m = 4096 and 512 (test_mmq_ops sweep, the first 27b
# row), then knobab MEMRA_MMQ_WG 0 / auto on the mmq / q4_0 rows at WGAUTO_M (default 1024), one round
step_wgauto() {
  local t=$SECONDS mm
  for mm in 4096 512; do
    MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
      -k regex:memra_k_gemm_q8_0r -c 2 $T sweep $mm 0 > "$L/wgauto_ncu_$mm.txt" 2>&1
    say "ncu names, the defaults, m = $mm: exit $? $(grep -oE 'memra_k_gemm_q8_0r_[a-z0-9]+' "$L/wgauto_ncu_$mm.txt" | sort -u | tr '\n' ' ')"
  done
  KNOBAB_KNOB=MEMRA_MMQ_WG KNOBAB_ON=auto KNOBAB_ARM='mmq|q4_0' KNOBAB_M=${WGAUTO_M:-1024} KNOBAB_ROUNDS=1 step_knobab
  say "wgauto: $((SECONDS - t)) s"
}
# the four tools over check --op gemm_q8_0r --quick on both warpgroup kernels (_wg, _wgt), each its own process
step_wgtools() { # WGTOOLS_ARMS (default "wg wgt wgp"; also wgs, wgps) picks the kernels
  local a
  for a in ${WGTOOLS_ARMS:-wg wgt wgp}; do
    case $a in
      wgs) knob_tools "MEMRA_MMQ_WG=${WG_VALUE:-all} MEMRA_MMQ_WG_SEED=1" wgs gemm_q8_0r ;;
      wgps) knob_tools "MEMRA_MMQ_WG=${WG_VALUE:-all} MEMRA_MMQ_WG_SEED=1 MEMRA_MMQ_WG_PERSIST=1" wgps gemm_q8_0r ;;
      wg) knob_tools "MEMRA_MMQ_WG=${WG_VALUE:-all}" wg gemm_q8_0r ;;
      wgt) knob_tools "MEMRA_MMQ_WG=${WG_VALUE:-all} MEMRA_MMQ_WG_TR=1" wgt gemm_q8_0r ;;
      wgp) knob_tools "MEMRA_MMQ_WG=${WG_VALUE:-all} MEMRA_MMQ_WG_PERSIST=1" wgp gemm_q8_0r ;;
    esac
  done
}

# Q5_K's two folds on the sum plane (MEMRA_MMQ_KR_TC=1: the _tx tiles; 0: the per-32 _x tiles): test_mmq_ops
# gemm_kr and check --op gemm_kr with the knob 1, then knobab MEMRA_MMQ_KR_TC 0 / 1 on the q5_k rows at
# KRTC5_M (default "4096 512"), one round
step_krtc5() {
  local t=$SECONDS
  knob_kr_tests MEMRA_MMQ_KR_TC=1 krtc5
  KNOBAB_KNOB=MEMRA_MMQ_KR_TC KNOBAB_ARM='q5_k' KNOBAB_M=${KRTC5_M:-4096 512} KNOBAB_ROUNDS=${KRTC5_ROUNDS:-1} step_knobab
  say "krtc5: $((SECONDS - t)) s"
}

# MEMRA_MMQ_KR_SUMS on the grouped floor (issue 30: the sorted Q4_K / Q5_K tiles _stx / _sx read the sum
# plane the gather brings along): test_gpu_experts q4_k q5_k q6_k (against the host and bit for bit the
# dense lane) and check --op gemm_experts under the native profile, then under the sm120 and cuda
# profiles check of each op in KRSXE_OPS (default gemm_experts), then bench moe
# --sheet mixtral (KRSXE_SHEET) uniform at KRSXE_M (default "4096 512") for q4_k and q5_k, the knob 0 / 1
# alternating (KRSXE_ROUNDS, default 1), MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 (the floor), grouped rows in the summary;
# KRSXE_TOOLS=1 adds the four tools over check gemm_experts --module mmq --quick; KRSXE_KNOB (default
# MEMRA_MMQ_KR_SUMS) the knob set 1 for the tests and alternated 0 / 1 in the bench (MEMRA_MMQ_KR_BULK: the
# sorted _stxb tiles against _stx)
step_krsumsxe() {
  local t=$SECONDS p fm mm r i v f kn=${KRSXE_KNOB:-MEMRA_MMQ_KR_SUMS}
  knob_experts $kn=1 krsxe mmq q4_k q5_k q6_k
  # which grouped K-quant kernels the check's --quick calls launch under the knob (ncu; the names prove it)
  env $kn=1 MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
    -k regex:memra_k_experts_kr -c 24 $M check --device 0 --op gemm_experts --module mmq --quick > "$L/krsxe_ncu.txt" 2>&1
  say "ncu names ($kn=1): exit $? $(grep -oE 'memra_k_experts_kr_q[456]_k_[a-z0-9_]+' "$L/krsxe_ncu.txt" | sort -u | tr '\n' ' ')"
  local op
  for p in sm120 cuda; do for op in ${KRSXE_OPS:-gemm_experts}; do
    MEMRA_ARCH=$p timeout 200 $M check --device 0 --op $op > "$L/krsxe_check_${op}_$p.log" 2>&1
    say "check $op ($p): exit $? $(grep -E 'passed, ' "$L/krsxe_check_${op}_$p.log")"
    grep -E " FAIL" "$L/krsxe_check_${op}_$p.log" | head -4 >> "$S"
  done; done
  for mm in ${KRSXE_M:-4096 512}; do for fm in q4_k q5_k; do
    for ((r = 1; r <= ${KRSXE_ROUNDS:-1}; r++)); do for ((i = 0; i < 2; i++)); do
      v=$(((i + r - 1) % 2))
      f="$L/krsxe_moe_${fm}_m${mm}_${v}_$r.txt"
      env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 $kn=$v timeout 200 $M bench moe --device 0 --sheet ${KRSXE_SHEET:-mixtral} \
        --routing uniform --m $mm --format $fm --json $R/krsxe_moe_${fm}_m${mm}_${v}_${r}_$TAG.json > "$f" 2>&1
      say "bench moe $fm m=$mm $kn=$v (round $r): exit $?"
      grep -E "gate|up|down" "$f" | head -6 >> "$S"
    done; done
  done; done
  [ "${KRSXE_TOOLS:-0}" = 1 ] && knob_tools $kn=1 krsxe gemm_experts
  say "krsumsxe: $((SECONDS - t)) s"
}

# MEMRA_MMQ_XE_TALL=1's first GPU run (issue 30: the 160 x 96 grouped tiles with interleaved warp rows,
# memra_k_experts_q8_0r_mt5n3_sbi / memra_k_experts_kr_q4_k_mt5n3_stxbi): test_gpu_experts tall,
# tall_q4_k (2 experts, 150 rows each / 169 and 129), tall3, tall3_q4_k (3 experts, 100 each / 160, 111, 27:
# the tall tiles, against the host and bit for bit the dense lane, failing where the tiles were refused), run and q4_k (16 experts: the usual tiles under the knob), check gemm_experts, ncu naming
# the grouped kernels of the tall cases, bench moe --sheet mixtral uniform for q8_0 and q4_k at XETALL_M
# (default "512 4096") with the knob 0 / 1 alternating, XETALL_ROUNDS rounds (default 2),
# MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 (the floor), then the four tools over the tall cases (XETALL_TOOLS, default 1)
# A BOOL knob of the grouped floor timed: memra bench moe --sheet SHEET (default mixtral; uniform routing,
# budget 0) with KNOB 0 / 1 alternately (the order turning each round): knob_moe KNOB PREFIX "M ..."
# "FORMAT ..." ROUNDS [SHEET]; logs $L/PREFIX_moe_*, receipts $R/PREFIX_moe_*, the sheet's rows in the summary
knob_moe() {
  local kn=$1 pre=$2 sh=${6:-mixtral} mm fm r i v f vals=(${KNOBMOE_VALS:-0 1})
  for mm in $3; do for fm in $4; do
    for ((r = 1; r <= $5; r++)); do for ((i = 0; i < 2; i++)); do
      v=$(((i + r - 1) % 2))
      f="$L/${pre}_moe_${sh}_${fm}_m${mm}_${v}_$r.txt"
      env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 $kn=${vals[$v]} timeout 200 $M bench moe --device 0 --sheet $sh \
        --routing uniform --m $mm --format $fm --json $R/${pre}_moe_${sh}_${fm}_m${mm}_${v}_${r}_$TAG.json > "$f" 2>&1
      say "bench moe $sh $fm m=$mm $kn=${vals[$v]} (round $r): exit $?"
      moe_rows "$f" $sh
    done; done
  done; done
}
# A grouped knob's proof and tools: knob_xe_ncu KV PREFIX CASE... names with ncu the memra_k_experts
# kernels test_gpu_experts CASE launches under KV; knob_xe_tools KV PREFIX CASE... runs the four tools
# over each case under KV, each in its own process
knob_xe_ncu() {
  local kv=$1 pre=$2 c
  shift 2
  for c in "$@"; do
    env $kv MEMRA_ADMISSION=off timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
      -k regex:memra_k_experts -c 24 $B/bin/test_gpu_experts $c > "$L/${pre}_ncu_$c.txt" 2>&1
    say "ncu names ($c): exit $? $(grep -oE 'memra_k_experts_[a-z0-9_]+' "$L/${pre}_ncu_$c.txt" | sort -u | tr '\n' ' ')"
  done
}
knob_xe_tools() {
  local kv=$1 pre=$2 tool c
  shift 2
  for tool in memcheck racecheck initcheck synccheck; do for c in "$@"; do
    ( export $kv; san_experts ${pre}_san $tool $c )
  done; done
}
step_xetall() {
  local t=$SECONDS
  knob_experts MEMRA_MMQ_XE_TALL=1 xetall mmq tall tall_q4_k tall3 tall3_q4_k run q4_k
  knob_xe_ncu MEMRA_MMQ_XE_TALL=1 xetall tall tall_q4_k tall3
  knob_moe MEMRA_MMQ_XE_TALL xetall "${XETALL_M:-512 4096}" "q8_0 q4_k" ${XETALL_ROUNDS:-2}
  # last: what a cut-off call loses
  [ "${XETALL_TOOLS:-1}" = 1 ] && knob_xe_tools MEMRA_MMQ_XE_TALL=1 xetall tall tall_q4_k
  say "xetall: $((SECONDS - t)) s"
}

# MEMRA_MMQ_XE_WG=1 (issue 30: the grouped Q8_0 128-row table on the seeded warpgroup tile,
# memra_k_experts_q8_0r_wgs), in parts (XEWG_PARTS, default "tests ab ovl tools", so that a call can take
# some): tests: the wg cases of test_gpu_experts (bit for bit the dense lane; each fails where the knob was
# refused or fell back), check gemm_experts mmq with it and ncu names; ab: bench moe --sheet mixtral
# (uniform) with the knob 0 / 1 alternately at XEWG_M (default "512 4096"), XEWG_FORMATS (default q8_0),
# XEWG_ROUNDS rounds (default 2), and one round of --sheet qwen3moe at XEWG_QWEN_M (default 4096, empty
# skips); ovl: with MEMRA_MMQ_XE_OVERLAP=1 beside it (_wgs_o1 and _mt1_o2) tests, names and the overlap
# knob 0 / 1 the same way; tools: the four tools over test_gpu_experts wg and wg_split, each in its own
# process
step_xewg() {
  local t=$SECONDS parts=" ${XEWG_PARTS:-tests ab ovl tools} "
  if [[ $parts == *" tests "* ]]; then
    knob_experts MEMRA_MMQ_XE_WG=1 xewg mmq wg wg_graph wg_split wg4 wg_bm128 wg_skew wg_q4_0
    knob_xe_ncu MEMRA_MMQ_XE_WG=1 xewg wg wg_bm128
  fi
  if [[ $parts == *" ab "* ]]; then
    knob_moe MEMRA_MMQ_XE_WG xewg "${XEWG_M:-512 4096}" "${XEWG_FORMATS:-q8_0}" ${XEWG_ROUNDS:-2}
    # the Qwen3-like rows at m = 4096 (256 rows an expert: the 128-row table; at 512 the 32-row one, untouched)
    [ -n "${XEWG_QWEN_M-4096}" ] && knob_moe MEMRA_MMQ_XE_WG xewg "${XEWG_QWEN_M-4096}" "${XEWG_FORMATS:-q8_0}" 1 qwen3moe
  fi
  if [[ $parts == *" ovl "* ]]; then
    knob_experts "MEMRA_MMQ_XE_WG=1 MEMRA_MMQ_XE_OVERLAP=1" xewgo mmq wg wg_graph wg_q4_0
    knob_xe_ncu "MEMRA_MMQ_XE_WG=1 MEMRA_MMQ_XE_OVERLAP=1" xewgo wg
    MEMRA_MMQ_XE_WG=1 knob_moe MEMRA_MMQ_XE_OVERLAP xewgo "${XEWG_M:-512 4096}" "${XEWG_FORMATS:-q8_0}" ${XEWG_ROUNDS:-2}
  fi
  [[ $parts == *" tools "* ]] && knob_xe_tools MEMRA_MMQ_XE_WG=1 xewg wg wg_split
  say "xewg: $((SECONDS - t)) s"
}

# MEMRA_MMQ_ONE=1 (issue 26: the floor's dense tiles at one CTA per SM, the _bo / _to / _o entry
# points): test_mmq_ops gemm_q8_0r and gemm_kr, memra check of both under the native and forced
# sm120 profiles, memra info, the four tools over each op's check, then knobab on the floor's rows
# at ONE_M (default "4096 512"), ONE_ROUNDS rounds (default 2), and (ONE_SWEEP=1) sweep_kr q4_k
# and sweep at m = 4096, 5120->12288, under the knob
step_one() {
  local t=$SECONDS p op parts=" ${ONE_PARTS:-tests tools ab} "
  [[ $parts == *" tests "* ]] && for op in gemm_q8_0r gemm_kr; do
    MEMRA_MMQ_ONE=1 timeout 300 $T $op > "$L/one_test_$op.log" 2>&1
    say "test_mmq_ops $op (MEMRA_MMQ_ONE=1): exit $? $(grep -m3 -oE 'memra_k_gemm_(q8_0r|kr)_[a-z0-9_]+o\b' "$L/one_test_$op.log" | sort -u | tr '\n' ' ')"
    grep -E "FAIL" "$L/one_test_$op.log" | head -6 >> "$S"
    for p in native sm120; do
      env MEMRA_MMQ_ONE=1 $([ $p != native ] && echo MEMRA_ARCH=$p) timeout 200 $M check --device 0 --op $op \
        > "$L/one_check_${op}_$p.log" 2>&1
      say "check $op (MEMRA_MMQ_ONE=1, $p): exit $? $(grep -E 'passed, ' "$L/one_check_${op}_$p.log")"
      grep -E " FAIL" "$L/one_check_${op}_$p.log" | head -4 >> "$S"
    done
  done
  [[ $parts == *" tests "* ]] && knob_info MEMRA_MMQ_ONE=1 one
  [[ $parts == *" ab "* ]] && KNOBAB_KNOB=MEMRA_MMQ_ONE KNOBAB_ARM='mmq|q8_0|q4_0|q4_k|q5_k|q6_k' KNOBAB_M=${ONE_M:-4096 512} \
    KNOBAB_ROUNDS=${ONE_ROUNDS:-2} step_knobab
  if [[ $parts == *" tools "* ]]; then
    knob_tools MEMRA_MMQ_ONE=1 one gemm_q8_0r
    knob_tools MEMRA_MMQ_ONE=1 one_kr gemm_kr
  fi
  if [ "${ONE_SWEEP:-0}" = 1 ]; then
    MEMRA_MMQ_ONE=1 timeout 200 stdbuf -oL $T sweep_kr q4_k 4096 0 > "$L/one_sweep_kr.log" 2>&1
    say "sweep_kr q4_k 4096 0 (MEMRA_MMQ_ONE=1): exit $?"; grep -E "^KSWEEP " "$L/one_sweep_kr.log" >> "$S"
    MEMRA_MMQ_ONE=1 timeout 200 stdbuf -oL $T sweep 4096 0 > "$L/one_sweep.log" 2>&1
    say "sweep 4096 0 (MEMRA_MMQ_ONE=1): exit $?"; grep -E "^SWEEP " "$L/one_sweep.log" >> "$S"
  fi
  say "one: $((SECONDS - t)) s"
}

# One case of test_gpu_experts under one compute-sanitizer tool, its own process and log
# ($L/<name>_<tool>_<case>.log), the line "<name> <tool> test_gpu_experts <case>: exit, reports";
# settings for the case come from the caller's environment (VAR=1 san_experts ...)
san_experts() {
  local name=$1 tool=$2 c=$3 lg="$L/$1_$2_$3.log"
  MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $tool $(san_x $tool) --print-limit 0 --show-backtrace no \
    $B/bin/test_gpu_experts $c > "$lg" 2>&1
  say "$name $tool test_gpu_experts $c: exit $? reports $(san_count $tool "$lg") ($(san_said "$lg"))"
}

# The grouped floor's remainder launch beside the full tiles' last wave (MEMRA_MMQ_XE_OVERLAP=1;
# XEOVL_KNOB names another BOOL knob to judge the same way, e.g. MEMRA_MMQ_XE_SORT: the records
# gathered into expert order first, or MEMRA_FP8BLK_XE_TMA with XEOVL_FORMATS=fp8blk_own (the
# dense and loop arms on fp8blk's own kernel), XEOVL_MODULE=fp8blk, XEOVL_TESTS="fp8blk
# fp8blk_skew fp8blk_graph" and XEOVL_SAN_CASE=fp8blk; XEOVL_ON / XEOVL_OFF the knob's two values, default
# 1 / 0, e.g. XEOVL_KNOB=MEMRA_FP8BLK_XE_SPLIT XEOVL_ON=2; XEOVL_PROOF_K an ERE of the kernel the knob
# should launch, shown by ncu) against the two plain launches: memra bench moe --sheet mixtral at each of XEOVL_M (default
# 512) for XEOVL_FORMATS (default q8_0), XEOVL_ROUNDS rounds (default 2), the order alternating;
# then with the knob: test_gpu_experts XEOVL_TESTS (against the host, bit for bit the dense lane),
# memra check --op gemm_experts --module mmq, and XEOVL_TOOLS (default memcheck racecheck
# synccheck) over test_gpu_experts run, each in its own process
step_xeovl() {
  local t=$SECONDS mm fm r i arm f c tool arms=(base ovl) kn=${XEOVL_KNOB:-MEMRA_MMQ_XE_OVERLAP}
  for mm in ${XEOVL_M:-512}; do for fm in ${XEOVL_FORMATS:-q8_0}; do
    for ((r = 1; r <= ${XEOVL_ROUNDS:-2}; r++)); do for ((i = 0; i < 2; i++)); do
      arm=${arms[$(((i + r - 1) % 2))]}
      f="$L/xeovl_${fm}_m${mm}_${arm}_$r.txt"
      env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 $([ $fm = fp8blk_own ] && echo MEMRA_PREFER=gemm_fp8_blk=fp8blk) \
        $kn=$([ $arm = ovl ] && echo ${XEOVL_ON:-1} || echo ${XEOVL_OFF:-0}) timeout 300 $M bench moe \
        --device 0 --sheet mixtral --m $mm --format ${fm%_own} --json $R/xeovl_${fm}_m${mm}_${arm}_${r}_$TAG.json > "$f" 2>&1
      say "xeovl bench moe $fm m=$mm $arm (round $r): exit $?"
      moe_rows "$f" 'mixtral'
    done; done
  done; done
  for c in ${XEOVL_TESTS:-run skew graph q4_k q6_k bm64}; do
    # MEMRA_MMQ_KR_TC=0: the opt-in gathered / merged / overlapping grouped tiles keep the per-32
    # min-term fold, which the dense Q4_K lane (compared with bit for bit) takes only then
    env MEMRA_MMQ_KR_TC=0 $kn=${XEOVL_ON:-1} timeout 200 $B/bin/test_gpu_experts $c > "$L/xeovl_test_$c.log" 2>&1
    say "test_gpu_experts $c ($kn=${XEOVL_ON:-1}): exit $?"
  done
  # XEOVL_PROOF_K (a kernel-name ERE, e.g. experts_tma_split): ncu lists the first test case's launches with
  # the knob on and the summary counts those the ERE matches (the ledger names modules, not kernels)
  if [ -n "${XEOVL_PROOF_K:-}" ]; then
    set -- ${XEOVL_TESTS:-run}
    env $kn=${XEOVL_ON:-1} MEMRA_ADMISSION=off timeout 200 ncu --metrics gpu__time_duration.sum -c 40 \
      $B/bin/test_gpu_experts $1 > "$L/xeovl_proof.log" 2>&1
    say "ncu test_gpu_experts $1 ($kn=${XEOVL_ON:-1}): exit $?, $(grep -cE "$XEOVL_PROOF_K" "$L/xeovl_proof.log") lines naming $XEOVL_PROOF_K"
  fi
  env $kn=${XEOVL_ON:-1} timeout 200 $M check --device 0 --op gemm_experts --module ${XEOVL_MODULE:-mmq} > "$L/xeovl_check.log" 2>&1
  say "check gemm_experts ${XEOVL_MODULE:-mmq} ($kn=${XEOVL_ON:-1}): exit $? $(grep -E 'passed, ' "$L/xeovl_check.log")"
  for tool in ${XEOVL_TOOLS:-memcheck racecheck synccheck}; do
    ( export $kn=${XEOVL_ON:-1}; san_experts xeovl_san $tool ${XEOVL_SAN_CASE:-run} )
  done
  say "xeovl: $((SECONDS - t)) s"
}

# MEMRA_FP8BLK_XE_PF (issue 30, the m = 512 down rows' weight streams): memra bench moe --sheet
# mixtral, fp8blk_own, at XEPF_M (default 512) with the knob at each of XEPF_VALUES (default
# "0 4 8"), XEPF_ROUNDS rounds (default 2), the order rotating; then with each nonzero value:
# test_gpu_experts fp8blk fp8blk_skew fp8blk_graph (bit for bit the dense lane) and check
# --op gemm_experts --module fp8blk; ncu of the grouped launches (the first XEPF_NCU_C, default 9,
# of memra_k_fp8blk_experts_tma*: name, grid, time, DRAM rate, L2 hit rate) at each value; the
# four tools over test_gpu_experts fp8blk at the first nonzero value, memcheck at the others
step_xepf() {
  local t=$SECONDS mm r i v f c tool first="" vals=(${XEPF_VALUES:-0 4 8})
  local nv=${#vals[@]}
  for mm in ${XEPF_M:-512}; do for ((r = 1; r <= ${XEPF_ROUNDS:-2}; r++)); do for ((i = 0; i < nv; i++)); do
    v=${vals[$(((i + r - 1) % nv))]}
    f="$L/xepf_m${mm}_pf${v}_$r.txt"
    env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_PREFER=gemm_fp8_blk=fp8blk MEMRA_FP8BLK_XE_PF=$v timeout 300 $M bench moe \
      --device 0 --sheet mixtral --m $mm --format fp8blk --json $R/xepf_m${mm}_pf${v}_${r}_$TAG.json > "$f" 2>&1
    say "xepf bench moe fp8blk_own m=$mm MEMRA_FP8BLK_XE_PF=$v (round $r): exit $?"
    moe_rows "$f" 'mixtral'
  done; done; done
  for v in "${vals[@]}"; do
    f="$L/xepf_ncu_pf$v.txt"
    env MEMRA_ADMISSION=off MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_PREFER=gemm_fp8_blk=fp8blk MEMRA_FP8BLK_XE_PF=$v timeout 200 \
      ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      -k regex:fp8blk_experts_tma -c ${XEPF_NCU_C:-9} $M bench moe --device 0 --sheet mixtral --routing uniform \
      --m ${XEPF_NCU_M:-512} --format fp8blk --reps 1 > "$f" 2>&1
    say "xepf ncu MEMRA_FP8BLK_XE_PF=$v: exit $?"
    awk '/^  [a-z_0-9]+ \(.*Context/ { if (n) print line; n++; line = substr($0, 3, index($0, ", Context") - 3) }
         / Duration / { line = line sprintf(" %s %s", $NF, $(NF-1)) }
         /DRAM Throughput/ && !d[n]++ { line = line sprintf(" dram %s%%", $NF) }
         /L2 Hit Rate/ { line = line sprintf(" L2hit %s%%", $NF) }
         END { if (n) print line }' "$f" | cut -c1-200 >> "$S"
    [ "$v" = 0 ] && continue
    knob_experts MEMRA_FP8BLK_XE_PF=$v xepf_pf$v fp8blk fp8blk fp8blk_skew fp8blk_graph
    for tool in $([ -z "$first" ] && echo memcheck racecheck initcheck synccheck || echo memcheck); do
      ( export MEMRA_FP8BLK_XE_PF=$v; san_experts xepf_san_pf$v $tool fp8blk )
    done
    first=$v
  done
  say "xepf: $((SECONDS - t)) s"
}

# fp8blk's grouped tile variants against each other in one call (issue 30): XEARMS, a list of
# name:VAR=VALUE:ERE (the arm's knob and the kernel name its launches must match; default, since
# run z made the persistent tiles the default: auto MEMRA_FP8BLK_XE_N128=auto on
# experts_tma_(gsp|n128gp)$ against l2a MEMRA_FP8BLK_XE_L2=1 on experts_tma_(gsph1|n128gph1)$ and
# l2b MEMRA_FP8BLK_XE_L2=2 on experts_tma_(gsph2|n128gph2)$ (the L2 eviction priorities), tall
# MEMRA_FP8BLK_XE_TALL=1 on experts_tma_tall$ (256-row tiles) and p256 MEMRA_FP8BLK_XE_N128=0 on
# experts_tma_gsp$ (the width rule under persistence); run z1's were
# auto MEMRA_FP8BLK_XE_N128=auto on experts_tma_(gs|n128)$, gs256 MEMRA_FP8BLK_XE_N128=0 on
# experts_tma_gs$ and persist MEMRA_FP8BLK_XE_PERSIST=1 on experts_tma_(gsp|n128gp)$ under run y's
# defaults; run y1's arms were
# base:MEMRA_FP8BLK_XE_PF=0:experts_tma$ gs:MEMRA_FP8BLK_XE_GS=1:experts_tma_gs
# pipe:MEMRA_FP8BLK_XE_PIPE=1:experts_tma_n128p n128:MEMRA_FP8BLK_XE_N128=1:experts_tma_n128$ under the
# old defaults).
# memra bench moe --sheet XEARMS_SHEET (default mixtral; qwen3moe or all), fp8blk_own, at each M:ROUNDS of
# XEARMS_M (default "512:2 4096:1"; space-separated; empty: no bench),
# the arms' order rotating each round; ncu of each arm's grouped launches at m = 512 (uniform, the
# first 9 launches matching the arm's ERE: name, grid, time, DRAM, L2 hit; the count proves the
# kernel ran; XEARMS_NCU=0 skips it); then for each arm of XEARMS_TEST (default "tall l2a l2b"; empty: none;
# XEARMS_EXTRA's arms, tile (MEMRA_FP8BLK_XE_PERSIST=0) and p128 (MEMRA_FP8BLK_XE_N128=1), are tested but
# not timed unless named in XEARMS; VAR=VALUE,VAR=VALUE sets several knobs;
# `check`'s 4098-row case walks several tiles a persistent CTA): test_gpu_experts fp8blk,
# fp8blk_skew, fp8blk_graph (bit for bit the dense lane), check --op gemm_experts --module fp8blk,
# and XEARMS_TOOLS (default the four) over test_gpu_experts fp8blk, each in its own process
step_xearms() {
  local t=$SECONDS spec mr mm rr r i a f c tool name kv ere
  local arms=(${XEARMS:-auto:MEMRA_FP8BLK_XE_N128=auto:experts_tma_\(gsp\|n128gp\)\$ l2a:MEMRA_FP8BLK_XE_L2=1:experts_tma_\(gsph1\|n128gph1\)\$ l2b:MEMRA_FP8BLK_XE_L2=2:experts_tma_\(gsph2\|n128gph2\)\$ tall:MEMRA_FP8BLK_XE_TALL=1:experts_tma_tall\$ p256:MEMRA_FP8BLK_XE_N128=0:experts_tma_gsp\$})
  local na=${#arms[@]}
  for mr in ${XEARMS_M-512:2 4096:1}; do
    mm=${mr%%:*} rr=${mr##*:}
    for ((r = 1; r <= rr; r++)); do for ((i = 0; i < na; i++)); do
      spec=${arms[$(((i + r - 1) % na))]} name=${spec%%:*} kv=${spec#*:}; kv=${kv%%:*}; kv=${kv//,/ }
      f="$L/xearms_m${mm}_${name}_$r.txt"
      env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_PREFER=gemm_fp8_blk=fp8blk $kv timeout 300 $M bench moe --device 0 \
        --sheet ${XEARMS_SHEET:-mixtral} --m $mm --format fp8blk --json $R/xearms_m${mm}_${name}_${r}_$TAG.json > "$f" 2>&1
      say "xearms bench moe fp8blk_own ${XEARMS_SHEET:-mixtral} m=$mm $name ($kv, round $r): exit $?"
      moe_rows "$f" 'mixtral|qwen3moe'
    done; done
  done
  for spec in "${arms[@]}"; do
    [ "${XEARMS_NCU:-1}" = 1 ] || break
    name=${spec%%:*} kv=${spec#*:}; ere=${kv#*:}; kv=${kv%%:*}; kv=${kv//,/ }
    f="$L/xearms_ncu_$name.txt"
    env MEMRA_ADMISSION=off MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_PREFER=gemm_fp8_blk=fp8blk $kv timeout 200 \
      ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
      -k regex:"$ere" -c 9 $M bench moe --device 0 --sheet mixtral --routing uniform --m 512 --format fp8blk \
      --reps 1 > "$f" 2>&1
    say "xearms ncu $name ($kv): exit $?, $(grep -cE '^  memra_k_fp8blk_experts_tma' "$f") grouped launches profiled"
    awk '/^  [a-z_0-9]+ \(.*Context/ { if (n) print line; n++; line = substr($0, 3, index($0, ", Context") - 3) }
         / Duration / { line = line sprintf(" %s %s", $NF, $(NF-1)) }
         /DRAM Throughput/ && !d[n]++ { line = line sprintf(" dram %s%%", $NF) }
         /L2 Hit Rate/ { line = line sprintf(" L2hit %s%%", $NF) }
         END { if (n) print line }' "$f" | cut -c1-200 >> "$S"
  done
  local extra=(${XEARMS_EXTRA:-tile:MEMRA_FP8BLK_XE_PERSIST=0:experts_tma_\(gs\|n128\)\$ p128:MEMRA_FP8BLK_XE_N128=1:experts_tma_n128gp\$})
  for name in ${XEARMS_TEST-tall l2a l2b}; do
    kv=""
    for spec in "${arms[@]}" "${extra[@]}"; do [ "${spec%%:*}" = "$name" ] && { kv=${spec#*:}; kv=${kv%%:*}; }; done
    kv=${kv//,/ }
    [ -z "$kv" ] && { say "xearms: no arm named $name"; continue; }
    knob_experts "$kv" xearms_$name fp8blk fp8blk fp8blk_skew fp8blk_graph
    for tool in ${XEARMS_TOOLS:-memcheck racecheck initcheck synccheck}; do
      ( export $kv; san_experts xearms_san_$name $tool fp8blk )
    done
  done
  say "xearms: $((SECONDS - t)) s"
}

# The opt-in grouped lanes never run on a GPU before (issue 30): the 16-bit lanes (MEMRA_MMQ_XE_F16=1,
# f16 and bf16 experts) and the per-tensor FP8 lane (MEMRA_FP8BLK_XE_PT=1): test_gpu_experts f16,
# bf16, fp8pt, fp8pt_skew (against the host; each sets its own knob), memra check --op gemm_experts
# with both knobs, memra bench moe --format f16 / bf16 / fp8 at XE16_M (default 512) with both knobs
# (the grouped call against its loop and the dense lane; XE16_BENCH=0 skips it), and the four tools
# (XE16_TOOLS) over test_gpu_experts f16 and fp8pt, each in its own process
step_xe16() {
  local t=$SECONDS c fm mm tool lg f
  for c in f16 bf16 fp8pt fp8pt_skew; do
    timeout 200 $B/bin/test_gpu_experts $c > "$L/xe16_test_$c.log" 2>&1
    say "test_gpu_experts $c: exit $?"
  done
  MEMRA_MMQ_XE_F16=1 MEMRA_FP8BLK_XE_PT=1 timeout 300 $M check --device 0 --op gemm_experts > "$L/xe16_check.log" 2>&1
  say "check gemm_experts (XE_F16=1 XE_PT=1): exit $? $(grep -E 'passed, ' "$L/xe16_check.log")"
  [ "${XE16_BENCH:-1}" = 1 ] && for mm in ${XE16_M:-512}; do for fm in f16 bf16 fp8; do
    f="$L/xe16_bench_moe_${fm}_m$mm.txt"
    MEMRA_MMQ_XE_F16=1 MEMRA_FP8BLK_XE_PT=1 timeout 300 $M bench moe --device 0 --m $mm --format $fm \
      --json $R/xe16_bench_moe_${fm}_m${mm}_$TAG.json > "$f" 2>&1
    say "xe16 bench moe $fm m=$mm: exit $?"
    moe_rows "$f" 'qwen3moe|mixtral'
  done; done
  for tool in ${XE16_TOOLS:-memcheck racecheck initcheck synccheck}; do for c in f16 fp8pt; do
    san_experts xe16_san $tool $c
  done; done
  say "xe16: $((SECONDS - t)) s"
}

# The 16-bit grouped tile's variants (MEMRA_MMQ_XE_H16: k64 the default, k32 run t2's tile, n8 256
# columns, n8k64 both; H16_VARS) and MEMRA_MMQ_XE_BM=64 on the default tile (arm "bm64"): first each
# variant's test_gpu_experts H16_TESTS (default f16 bf16; against the host) and memcheck of f16, then memra bench moe
# --format f16 at H16_M (default 512) on both sheets, H16_ROUNDS rounds (default 2), the order
# rotated each round; then (H16_NCU=1, the default) ncu of the default 128-row f16 tile and of the
# fp8blk grouped tile on the Mixtral-like gate rows at m = 512 (speed of light, occupancy, memory,
# warp stalls), the first timed launch of each
h16_env() { case $1 in bm64) echo MEMRA_MMQ_XE_BM=64 ;; *) echo MEMRA_MMQ_XE_H16=$1 ;; esac; }
step_h16sweep() {
  local t=$SECONDS v c mm r i arm arms f
  read -ra arms <<< "${H16_VARS:-k64 k32 n8 n8k64 bm64}"
  for v in "${arms[@]}"; do
    for c in ${H16_TESTS:-f16 bf16}; do
      env $(h16_env $v) timeout 200 $B/bin/test_gpu_experts $c > "$L/h16_test_${v}_$c.log" 2>&1
      say "test_gpu_experts $c ($(h16_env $v)): exit $?"
    done
    ( export $(h16_env $v); san_experts h16_san_$v memcheck f16 )
  done
  for mm in ${H16_M:-512}; do for ((r = 1; r <= ${H16_ROUNDS:-2}; r++)); do
    for ((i = 0; i < ${#arms[@]}; i++)); do
      arm=${arms[$(((i + r - 1) % ${#arms[@]}))]}
      f="$L/h16_bench_m${mm}_${arm}_$r.txt"
      env $(h16_env $arm) timeout 300 $M bench moe --device 0 --m $mm --format f16 \
        --json $R/h16_bench_m${mm}_${arm}_${r}_$TAG.json > "$f" 2>&1
      say "h16 bench moe f16 m=$mm $(h16_env $arm) (round $r): exit $?"
      moe_rows "$f" 'qwen3moe|mixtral'
    done
  done; done
  if [ "${H16_NCU:-1}" = 1 ]; then
    local fm k
    for fm in f16 fp8blk; do
      k=memra_k_experts_h16_f16_mt4; [ $fm = fp8blk ] && k=memra_k_fp8blk_experts_wgmma
      MEMRA_ADMISSION=off MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 timeout 200 ncu --clock-control none --section SpeedOfLight \
        --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
        -k regex:$k --launch-skip 1 -c 1 $M bench moe --device 0 --sheet mixtral --routing uniform --m 512 \
        --format $fm --reps 1 > "$L/h16_ncu_$fm.txt" 2>&1
      say "ncu bench moe $fm mixtral gate (grouped, $k): exit $?"
      grep -E "^  [a-z_0-9]+\(|Duration|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Block Limit" \
        "$L/h16_ncu_$fm.txt" | head -14 >> "$S"
    done
  fi
  say "h16sweep: $((SECONDS - t)) s"
}

# The fp8blk grouped lane's launch choices, with the fp8blk module preferred (the loop and dense
# arms on memra's own kernel, so "of dense" compares one kernel family), memra bench moe fp8blk on
# both sheets and routings at FP8XE_M (default 512), FP8XE_ROUNDS rounds (default 2) of the arms
# FP8XE_ARMS (default "base one": the two tables, then MEMRA_FP8BLK_XE_ONE=1, the one-table
# tile-major kernel where the experts average 128 rows; "wide": MEMRA_FP8BLK_XE_WIDE=1, judged in
# run s3: no faster), the order rotated each round; then test_gpu_experts fp8blk_one and
# fp8blk_one_skew (MEMRA_FP8BLK_XE_ONE=all; bit for bit against the dense lane), memra check --op
# gemm_experts --module fp8blk with it, and the four sanitizer tools over test_gpu_experts
# fp8blk_one, each in its own process (the per-tensor lane: step_xe16)
fp8xe_env() { case $1 in one) echo MEMRA_FP8BLK_XE_ONE=1 ;; wide) echo MEMRA_FP8BLK_XE_WIDE=1 ;; *) echo MEMRA_FP8BLK_XE_ONE=0 ;; esac; }
step_fp8xe() {
  local t=$SECONDS mm f c tool lg r arm arms
  read -ra arms <<< "${FP8XE_ARMS:-base one}"
  for mm in ${FP8XE_M:-512}; do for ((r = 1; r <= ${FP8XE_ROUNDS:-2}; r++)); do
    for ((i = 0; i < ${#arms[@]}; i++)); do
      arm=${arms[$(((i + r - 1) % ${#arms[@]}))]}
      f="$L/fp8xe_m${mm}_${arm}_$r.txt"
      env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 MEMRA_PREFER=gemm_fp8_blk=fp8blk $(fp8xe_env $arm) timeout 300 $M bench moe --device 0 \
        --m $mm --format fp8blk --json $R/fp8xe_m${mm}_${arm}_${r}_$TAG.json > "$f" 2>&1
      say "fp8xe bench moe fp8blk (own dense) m=$mm $arm (round $r): exit $?"
      moe_rows "$f" 'mixtral'
    done
  done; done
  # (the cases set their own knob, MEMRA_FP8BLK_XE_ONE=all; the per-tensor lane's are step_xe16's)
  for c in fp8blk_one fp8blk_one_skew; do
    timeout 200 $B/bin/test_gpu_experts $c > "$L/fp8xe_test_$c.log" 2>&1
    say "test_gpu_experts $c: exit $?"
  done
  MEMRA_FP8BLK_XE_ONE=all timeout 200 $M check --device 0 --op gemm_experts --module fp8blk > "$L/fp8xe_check.log" 2>&1
  say "check gemm_experts fp8blk (XE_ONE=all): exit $? $(grep -E 'passed, ' "$L/fp8xe_check.log")"
  for tool in ${FP8XE_TOOLS:-memcheck racecheck initcheck synccheck}; do san_experts fp8xe_san $tool fp8blk_one; done
  say "fp8xe: $((SECONDS - t)) s"
}

# Issue 30's "four tools clean on the new kernels": memcheck, racecheck, initcheck and synccheck
# over memra check --op gemm_experts --module mmq --quick (the grouped floor, its routing kernel
# and, with MOESAN_SPLIT, default 3, the grouped split-k), test_gpu_experts fp8blk (the fp8blk
# grouped lane and its remainder tiles) and test_gpu_experts split_q6_k; each in its own process
# The sanitizer tools (XESAN_TOOLS, default all four) over test_gpu_experts cases (XESAN_CASES,
# default "run fp8blk": the grouped floor and the block-128 lane at their defaults), each in its
# own process
step_xesan() {
  local t=$SECONDS tool c
  for tool in ${XESAN_TOOLS:-memcheck racecheck initcheck synccheck}; do for c in ${XESAN_CASES:-run fp8blk}; do
    san_experts xesan $tool $c
  done; done
  say "xesan: $((SECONDS - t)) s"
}

# the four tools over memra check --op gemm_experts --module mmq --quick under the defaults (each
# tool in its own process): the sorted grouped tiles the plan picks unforced (_stx / _sx / _st ...)
step_xetools() {
  local t=$SECONDS
  knob_tools MEMRA_MMQ_KR_SUMS=1 xetools gemm_experts
  say "xetools: $((SECONDS - t)) s"
}

step_moesan() {
  local t=$SECONDS tool tgt lg
  for tool in ${MOESAN_TOOLS:-memcheck racecheck initcheck synccheck}; do
    for tgt in check fp8blk split_q6_k; do
      lg="$L/moesan_${tool}_$tgt.log"
      if [ $tgt = check ]; then
        MEMRA_ADMISSION=off MEMRA_MMQ_XE_SPLIT=${MOESAN_SPLIT:-3} timeout 300 compute-sanitizer --tool $tool $(san_x $tool) \
          --print-limit 0 --show-backtrace no $M check --device 0 --op gemm_experts --module mmq --quick > "$lg" 2>&1
        say "moesan $tool $tgt: exit $? reports $(san_count $tool "$lg") ($(san_said "$lg"))"
      else
        san_experts moesan $tool $tgt
      fi
    done
  done
  say "moesan: $((SECONDS - t)) s"
}

# Every GPU test's comparison can fail: with MEMRA_TEST_INJECT_FAULT=1 (tools/judge.h
# moves the first judged element by 1e-3 of its mass, or flips a byte) each must exit 1,
# and memra check with MEMRA_CHECK_INJECT_FAULT=1 must fail its injected rows.
step_inject() {
  local bad=0 c rc line=""
  for c in cvt scale dequant nan_count fp8_to_q8_0 gemm_f16 gemm_fp8 gemm_fp8_blk graph mmq_capture; do
    MEMRA_TEST_INJECT_FAULT=1 timeout 120 $B/bin/test_sm90_ops $c > "$L/inject_sm90_$c.log" 2>&1; rc=$?
    line="$line sm90.$c=$rc"; [ $rc = 1 ] || bad=$((bad + 1))
  done
  for c in quant gemm_q8_0 gemm_q8_0r accprobe fp8blk prefer; do
    MEMRA_TEST_INJECT_FAULT=1 timeout 120 $T $c > "$L/inject_mmq_$c.log" 2>&1; rc=$?
    line="$line mmq.$c=$rc"; [ $rc = 1 ] || bad=$((bad + 1))
  done
  for c in streams graphs; do
    MEMRA_TEST_INJECT_FAULT=1 timeout 120 $B/bin/test_gpu_stress $c > "$L/inject_stress_$c.log" 2>&1; rc=$?
    line="$line stress.$c=$rc"; [ $rc = 1 ] || bad=$((bad + 1))
  done
  MEMRA_CHECK_INJECT_FAULT=1 timeout 300 $M check --device 0 > "$L/inject_check.log" 2>&1; rc=$?
  line="$line check=$rc"; [ $rc = 1 ] || bad=$((bad + 1))
  say "inject (each must exit 1): $bad did not;$line"
  # a case that did not exit 1 (a crash, a pass): its last lines, to find where
  local f
  for f in "$L"/inject_*.log; do
    case "$line" in *"$(basename $f .log | sed 's/^inject_//; s/_/./')=1"*) continue ;; esac
    echo "--- $(basename $f):" >> "$S"; tail -4 "$f" | cut -c1-200 >> "$S"
  done
  grep -E "passed, " "$L/inject_check.log" >> "$S"
}

step_multi() {
  local n
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "${n:-0}" -lt 2 ]; then say "multi: needs 2 GPUs ($n here): nothing run"; return 0; fi
  timeout 500 $M check --device all --json $R/check_all_$TAG.json > "$L/check_all.log" 2>&1
  say "memra check --device all ($n GPUs, own profiles): exit $? $(grep -E 'passed, ' "$L/check_all.log")"
  grep -E " FAIL" "$L/check_all.log" | head -8 >> "$S"
  MEMRA_ARCH=1:cuda timeout 500 $M check --device all --json $R/check_all_1cuda_$TAG.json > "$L/check_all_1cuda.log" 2>&1
  say "memra check --device all (MEMRA_ARCH=1:cuda): exit $? $(grep -E 'passed, ' "$L/check_all_1cuda.log")"
  grep -E " FAIL" "$L/check_all_1cuda.log" | head -8 >> "$S"
  timeout 400 $M bench 27b --m 512 --device all --json $R/bench_27b_m512_all_$TAG.json > "$L/bench_all.txt" 2>&1
  say "memra bench 27b m=512 --device all: exit $? $(grep geometric "$L/bench_all.txt" | tr '\n' ' ')"
  if [ -x $B/bin/test_multigpu ]; then
    timeout 500 $B/bin/test_multigpu bench $R/multigpu_bench_$TAG.json > "$L/multigpu_bench.log" 2>&1
    say "test_multigpu bench: exit $?"; grep -E "^device [0-9]+ \(|mismatches" "$L/multigpu_bench.log" >> "$S"
    MEMRA_ARCH=1:cuda timeout 500 $B/bin/test_multigpu bench $R/multigpu_bench_1cuda_$TAG.json \
      > "$L/multigpu_bench_1cuda.log" 2>&1
    say "test_multigpu bench (MEMRA_ARCH=1:cuda): exit $?"; grep -E "^device [0-9]+ \(|mismatches" "$L/multigpu_bench_1cuda.log" >> "$S"
    for a in "" 1:cuda; do
      MEMRA_ARCH=$a timeout 300 $B/bin/test_multigpu hotadd $B/lib/memra/modules/fp8blk.so > "$L/multigpu_hotadd${a:+_1cuda}.log" 2>&1
      say "test_multigpu hotadd (MEMRA_ARCH=${a:-native}): exit $?"; grep -E "fp8blk score|hotadd:" "$L/multigpu_hotadd${a:+_1cuda}.log" >> "$S"
    done
  else
    say "multi: no test_multigpu binary in this build"
  fi
}

# xeab: knob settings A/B on the grouped call. XEAB_CASES (default none): test_gpu_experts cases, each alone;
# XEAB_TOOLS: sanitizer tools over those cases;
# then for each XEAB_VARIANTS entry (default "-": none; comma-separated KNOB=VALUE settings, e.g.
# "- MEMRA_MMQ_XE_RASTER=1 MEMRA_W16=1,MEMRA_W16_XE_RASTER=0") one bench moe of XEAB_SHEET (default mixtral),
# XEAB_FMT (default q8_0) at XEAB_M (default "512 4096") with XEAB_ROUTING (default uniform; skewed, both), every arm
# on the call's lane (MEMRA_F16_BUDGET_MB=0, MEMRA_W16=0 unless the entry sets it), XEAB_SEED (default fresh)
# the routing's seed (one seed: every entry routes the same rows), receipts
# bench_moe_<sheet>_<fmt>_<entry>_<routing>_$TAG.json
step_xeab() {
  local c v tag tool sh=${XEAB_SHEET:-mixtral} fm=${XEAB_FMT:-q8_0} f
  for c in ${XEAB_CASES:-}; do
    timeout 120 $B/bin/test_gpu_experts $c > "$L/xeab_xe_$c.log" 2>&1
    say "test_gpu_experts $c: exit $? $(grep -E 'max e|differ' "$L/xeab_xe_$c.log" | head -2 | tr '\n' ' ')"
  done
  # XEAB_TOOLS (default none): compute-sanitizer tools over each XEAB_CASES case, each (tool, case) its own
  # process (MEMRA_ADMISSION=off: the tools see the case's own launches)
  for tool in ${XEAB_TOOLS:-}; do
    for c in ${XEAB_CASES:-}; do
      MEMRA_ADMISSION=off timeout 300 compute-sanitizer --tool $tool $(san_x $tool) $B/bin/test_gpu_experts $c \
        > "$L/xeab_san_${tool}_$c.txt" 2>&1
      say "test_gpu_experts $c under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/xeab_san_${tool}_$c.txt" | tail -1)"
    done
  done
  local i=0
  for v in ${XEAB_VARIANTS:--}; do
    # the routing and the arm's place in the names: a uniform and a skewed pass of one call, and an arm named
    # twice (A B A), keep every log and receipt
    i=$((i + 1))
    tag=a${i}_$(echo "$v" | tr -c 'A-Za-z0-9_\n' '_')_${XEAB_ROUTING:-uniform} f="$L/xeab_moe_${sh}_${fm}_$tag.txt"
    env MEMRA_F16_BUDGET_MB=0 MEMRA_W16=0 $([ "$v" != - ] && echo "$v" | tr ',' ' ') timeout 300 $M bench moe --device 0 \
      --sheet $sh --routing ${XEAB_ROUTING:-uniform} --format $fm ${XEAB_SEED:+--seed $XEAB_SEED} \
      $(for mm in ${XEAB_M:-512 4096}; do printf -- '--m %s ' $mm; done) \
      --json $R/bench_moe_${sh}_${fm}_${tag}_$TAG.json > "$f" 2>&1
    say "bench moe $sh $fm $v: exit $?"
    grep -E "^(mixtral|qwen3)" "$f" | head -24 >> "$S"
  done
}

# The logs and receipts so far into $OUT (after every step, and inside the long ones)
save_out() {
  trim_logs
  tar -C $L -cf "$OUT/logs.tar" . 2>/dev/null
  tar -C $R -cf "$OUT/receipts.tar" . 2>/dev/null
}

# A log over 4 MB (an initcheck over cuBLASLt's kernels writes hundreds of MB) keeps its
# first and last 1 MB, so that logs.tar stays under what a call can bring back.
trim_logs() {
  local f
  for f in "$L"/*; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 4194304 ] || continue
    { head -c 1048576 "$f"; printf '\n[... %s bytes cut by device.sh ...]\n' "$(stat -c %s "$f")"; tail -c 1048576 "$f"; } > "$f.cut"
    mv "$f.cut" "$f"
  done
}

[ $# -eq 0 ] && set -- build ctest check
for s in "$@"; do
  if ! declare -F "step_$s" > /dev/null; then echo "device.sh: unknown step '$s'"; exit 2; fi
  # DEADLINE (seconds from the start): steps that would begin past it are skipped, so that a
  # call ends inside the device's per-command limit with its logs and receipts
  if [ -n "${DEADLINE:-}" ] && [ $((SECONDS - t0)) -ge "$DEADLINE" ]; then say "$s: skipped (DEADLINE ${DEADLINE} s)"; continue; fi
  if ! "step_$s"; then [ "$s" = build ] || [ "$s" = unpack ] && break; fi
  save_out # after every step: a cut-off run still returns its logs
done
say "total: $((SECONDS - t0)) s"
save_out
cat "$S"
