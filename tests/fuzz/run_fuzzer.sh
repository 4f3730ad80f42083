#!/bin/sh
# ctest's driver for one libFuzzer binary (cmake/MemraFuzz.cmake).
#   run_fuzzer.sh run BIN WORKDIR SECONDS CORPUS    fuzz for SECONDS (or $MEMRA_FUZZ_SECONDS) from the seed corpus
#   run_fuzzer.sh regress BIN WORKDIR REGRESS CORPUS  every regression input and seed once
#   run_fuzzer.sh skip WHY                           report skipped (77)
# New inputs go to WORKDIR/corpus (the committed corpus is only read); a crash
# leaves WORKDIR/crash-* : commit it under tests/fuzz/regress/<name>/ with the fix.
mode="$1"
if [ "$mode" = skip ]; then
    echo "skipped: $2"
    exit 77
fi
bin="$2"
work="$3"
if [ ! -x "$bin" ]; then
    echo "skipped: $bin was not built"
    exit 77
fi
mkdir -p "$work/corpus" || exit 1
# leaks are findings too; a report ends the run with its stack
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}:halt_on_error=1"
case "$mode" in
run)
    # MEMRA_FUZZ_SECONDS in the environment wins over the configured time (.ci/run: 30)
    seconds="${MEMRA_FUZZ_SECONDS:-$4}"
    echo "fuzzing for $seconds s"
    corpus="$5"
    exec "$bin" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus" "$corpus"
    ;;
regress)
    regress="$4"
    corpus="$5"
    files=$(find "$regress" "$corpus" -type f ! -name 'README*' 2>/dev/null | sort)
    [ -n "$files" ] || { echo "FAIL: no inputs under $regress or $corpus"; exit 1; }
    n=$(echo "$files" | wc -l)
    echo "running $n inputs once each"
    # shellcheck disable=SC2086
    exec "$bin" -timeout=20 -rss_limit_mb=2048 $files
    ;;
*)
    echo "usage: run_fuzzer.sh run|regress|skip ..."
    exit 2
    ;;
esac
