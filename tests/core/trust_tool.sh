#!/bin/sh
# The memra program against hostile files (issue 13), as a user runs it.
# usage: trust_tool.sh MEMRA_BINARY CASE HOSTILE_DIR
#   info_hostile  `memra info` with the crashing and hanging modules on
#                 MEMRA_MODULE_PATH: exits 0 and names each one's reason
#   info_hostile_init  `memra info` with the init/op crashers, the init
#                 hang, the init exit(3), the helper-detecting and the forking
#                 module on MEMRA_MODULE_PATH (HOSTILE_DIR/../init): exits 0
#                 with one reason per module, within one trial limit
#   info_fifo     a FIFO x.so in the module folder: `memra info` returns
#                 within a second and names it
#   jit_ls_fifo   a FIFO <key>.cubin in the cache: `memra jit ls` returns
#                 within a second
#   info_cache_ww a cache root anyone may write: `memra info` says why the
#                 disk cache is off
#   cublaslt_env  MEMRA_CUBLASLT_LIBRARY relative, then in a world-writable
#                 folder: a module's host->library_open("cublasLt") gets NULL
#                 and the reason is logged (HOSTILE_DIR/../libopen)
memra="$1"
case_="$2"
hostile="$3"
tmp=$(mktemp -d /tmp/memra-trust-tool.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
now_ms() { date +%s%3N; }
case "$case_" in
info_hostile)
    MEMRA_MODULE_PATH="$hostile" timeout 30 "$memra" info >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "memra info exit $rc, want 0"
    for want in "crashed in constructor: SIGSEGV" "crashed in entry: SIGSEGV" "crashed in score: SIGSEGV" \
                "trial timed out after 5 s (in score)" "no op table" "provides no op"; do
        grep -qF "$want" "$tmp/out" || fail "no '$want' in memra info"
    done
    ;;
info_hostile_init)
    t0=$(now_ms)
    MEMRA_TRIAL_TIMEOUT_MS=2000 MEMRA_MODULE_PATH="$hostile/../init" timeout 30 "$memra" info >"$tmp/out" 2>&1
    rc=$?
    t=$(( $(now_ms) - t0 ))
    cat "$tmp/out"
    echo "memra info: ${t} ms"
    [ $rc -eq 0 ] || fail "memra info exit $rc, want 0"
    for want in "crashed in init on host: SIGSEGV" "crashed in self-check scale case 1 on host: SIGSEGV" \
                "trial timed out after 2 s (in init on host)" "exited with status 3 in init on host" \
                "left a process running"; do
        grep -qF "$want" "$tmp/out" || fail "no '$want' in memra info"
    done
    for m in testcrashinit testcrashop testhanginit testexitinit testsneaky testforkctor; do
        grep -q "refused  $m" "$tmp/out" || fail "$m is not refused by name"
    done
    [ "$(grep -c 'crashed in init on host: SIGSEGV' "$tmp/out")" -eq 2 ] || fail "testsneaky not caught in init"
    [ $t -lt 6000 ] || fail "memra info took $t ms"
    ;;
info_fifo)
    mkdir -m 0755 "$tmp/mods" && mkfifo "$tmp/mods/x.so" || exit 1
    t0=$(now_ms)
    MEMRA_MODULE_PATH="$tmp/mods" timeout 5 "$memra" info >"$tmp/out" 2>&1
    rc=$?
    t=$(( $(now_ms) - t0 ))
    cat "$tmp/out"
    echo "memra info: ${t} ms"
    [ $rc -eq 0 ] || fail "memra info exit $rc, want 0"
    [ $t -lt 1000 ] || fail "memra info took $t ms"
    grep -qF "a FIFO" "$tmp/out" || fail "the FIFO is not named"
    ;;
jit_ls_fifo)
    mkdir -m 0700 -p "$tmp/cache/v1" || exit 1
    mkfifo "$tmp/cache/v1/$(printf '%064d' 0 | tr 0 a).cubin" || exit 1
    t0=$(now_ms)
    MEMRA_CACHE_DIR="$tmp/cache" timeout 5 "$memra" jit ls >"$tmp/out" 2>&1
    rc=$?
    t=$(( $(now_ms) - t0 ))
    cat "$tmp/out"
    echo "memra jit ls: ${t} ms"
    [ $rc -ne 124 ] || fail "memra jit ls blocked on the FIFO"
    [ $t -lt 1000 ] || fail "memra jit ls took $t ms"
    ;;
info_cache_ww)
    mkdir -m 0777 "$tmp/cache" && chmod 0777 "$tmp/cache" || exit 1
    MEMRA_CACHE_DIR="$tmp/cache" "$memra" info >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "memra info exit $rc, want 0"
    grep -q "disk cache off.*writable by others" "$tmp/out" || fail "memra info does not say why the cache is off"
    ;;
cublaslt_env)
    mods="$hostile/../libopen"
    MEMRA_CUBLASLT_LIBRARY=libcublasLt.so.13 MEMRA_MODULE_PATH="$mods" "$memra" info >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    [ $rc -eq 0 ] || fail "memra info exit $rc, want 0"
    grep -q "MEMRA_CUBLASLT_LIBRARY=libcublasLt.so.13 is a relative path: refused" "$tmp/out" || fail "no refusal of the relative path"
    grep -q "library_open(cublasLt) returned NULL" "$tmp/out" || fail "the module got a library"
    mkdir -m 0777 "$tmp/ww" && chmod 0777 "$tmp/ww" && cp "$mods/testlibopen.so" "$tmp/ww/libcublasLt.so.13" || exit 1
    MEMRA_CUBLASLT_LIBRARY="$tmp/ww/libcublasLt.so.13" MEMRA_MODULE_PATH="$mods" "$memra" info >"$tmp/out" 2>&1
    cat "$tmp/out"
    grep -q "MEMRA_CUBLASLT_LIBRARY=.*refused: $tmp/ww is writable by anyone" "$tmp/out" || fail "no refusal of the unsafe path"
    ;;
*) fail "unknown case $case_" ;;
esac
echo ok
