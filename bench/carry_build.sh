#!/bin/bash
# Packs this machine's build (build/, the default preset's: the memra tool, libmemra, every GPU module and the test
# binaries named in CARRY_TESTS, default test_gpu_experts) into .carry/build.tar.xz, for a device call that names
# .carry in its carry list and runs `bash bench/device.sh unpack STEP...`: the machine then skips step build (about
# 260 s on a fresh one). Each module embeds the same GPU images; xz's 192 MiB window finds the copies (six modules
# of 38 MB pack to about 3.3 MB). The binaries are this machine's: the device's glibc must be as new (not yet tried
# on a lent machine).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/memra ] && [ -d build/lib/memra/modules ] || { echo "carry_build: no build/ with GPU modules here" >&2; exit 1; }
mkdir -p .carry "$(git rev-parse --git-path info)"
grep -qx "/.carry/" "$(git rev-parse --git-path info/exclude)" 2>/dev/null || echo /.carry/ >> "$(git rev-parse --git-path info/exclude)"
files=(bin/memra lib/libmemra.so lib/libmemra.so.0 lib/libmemra.so.0.1.0 lib/memra/modules)
for t in ${CARRY_TESTS:-test_gpu_experts}; do files+=("bin/$t"); done
git rev-parse --short HEAD > build/.carry-commit
tar -C build -cf - "${files[@]}" .carry-commit | xz -T0 -9e --lzma2=dict=192MiB > .carry/build.tar.xz
echo "carry_build: .carry/build.tar.xz, $(stat -c %s .carry/build.tar.xz) bytes, the build of $(cat build/.carry-commit)" \
  "(the tree's own commit only if build/ was rebuilt after its last change)"
