#!/bin/sh
# Install memra into a fresh prefix, build an out-of-tree module against it
# with find_package(memra CONFIG), and load that module with the installed
# program. Also checks pkg-config's view when pkg-config is present.
# $1 = build tree, $2 = source of the external module, $3 = scratch folder.
set -eu
build=$1 src=$2 tmp=$3
rm -rf "$tmp" && mkdir -p "$tmp"
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -x "$tmp/prefix/bin/memra" || { echo "memra not installed"; exit 1; }
ls "$tmp/prefix"/lib*/memra/memra-trial >/dev/null || { echo "trial helper not installed"; exit 1; }
test -f "$tmp/prefix/include/memra/module.h" || { echo "headers not installed"; exit 1; }
ls "$tmp/prefix"/lib*/cmake/memra/memraConfig.cmake >/dev/null || { echo "no package config"; exit 1; }
cmake -S "$src" -B "$tmp/ext" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/ext.log" 2>&1 || { cat "$tmp/ext.log"; exit 1; }
cmake --build "$tmp/ext" >>"$tmp/ext.log" 2>&1 || { cat "$tmp/ext.log"; exit 1; }
grep "memra module folder: $tmp/prefix" "$tmp/ext.log" >/dev/null || { echo "MEMRA_MODULE_DIR wrong"; cat "$tmp/ext.log"; exit 1; }
chmod 755 "$tmp/ext"
out=$(MEMRA_MODULE_PATH="$tmp/ext" "$tmp/prefix/bin/memra" info)
echo "$out" | grep -E "loaded +extmod +1.0.0" >/dev/null || { echo "extmod not loaded:"; echo "$out"; exit 1; }
echo "$out" | grep -E "scale +extmod > host" >/dev/null || { echo "extmod does not route scale:"; echo "$out"; exit 1; }
# docs/MODULES.md's walkthrough: its admission in memra info, checked, then raced against the host module
echo "$out" | grep -E "admission" >/dev/null || { echo "no admission line in memra info:"; echo "$out"; exit 1; }
MEMRA_MODULE_PATH="$tmp/ext" "$tmp/prefix/bin/memra" check --module extmod --quick >"$tmp/check.log" 2>&1 ||
    { cat "$tmp/check.log"; exit 1; }
grep -E "scale +extmod .*PASS" "$tmp/check.log" >/dev/null || { cat "$tmp/check.log"; exit 1; }
MEMRA_MODULE_PATH="$tmp/ext" "$tmp/prefix/bin/memra" bench scale --vs extmod host --reps 3 --m 2 --quiet \
    >"$tmp/race.log" 2>&1 || { cat "$tmp/race.log"; exit 1; }
grep -q "^race scale: extmod vs host" "$tmp/race.log" || { cat "$tmp/race.log"; exit 1; }
grep -q "^geometric mean of extmod ms / host ms" "$tmp/race.log" || { cat "$tmp/race.log"; exit 1; }
cat "$tmp/race.log"
if command -v pkg-config >/dev/null 2>&1; then
  pc=$(PKG_CONFIG_PATH=$(ls -d "$tmp/prefix"/lib*/pkgconfig) pkg-config --cflags --libs memra)
  echo "$pc" | grep -- "-lmemra" >/dev/null || { echo "pkg-config: $pc"; exit 1; }
  inc=$(PKG_CONFIG_PATH=$(ls -d "$tmp/prefix"/lib*/pkgconfig) pkg-config --variable=includedir memra)
  [ "$(cd "$inc" && pwd -P)" = "$(cd "$tmp/prefix/include" && pwd -P)" ] || { echo "pkg-config includedir wrong: $inc"; exit 1; }
  echo "pkg-config: $pc"
fi
echo "ok: installed, built extmod out of tree, loaded it"
