#!/bin/bash
# The source trees device.sh's `ab` step builds beside the working tree: .before (and .mid)
# from commits, without the bench logs and receipts (they are not built).
#
#   bash bench/ab_trees.sh BEFORE [MID]
#
# Both folders are ignored by git (.gitignore), so a device call carries them explicitly:
# carry [".before", ".mid"]. Example, the core/ rooms refactor alone (issue 29 item 3):
#   bash bench/ab_trees.sh 1a42a0a 26b019a    (mid against before: the merge of the rooms)
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bash bench/ab_trees.sh BEFORE [MID]" >&2; exit 2; }
cd "$(git rev-parse --show-toplevel)"
tree() { # tree COMMIT DIR
  rm -rf "$2" && mkdir "$2"
  git archive "$1" -- . ':(exclude)bench/logs' ':(exclude)bench/receipts' | tar -x -C "$2"
  git rev-parse --short "$1" > "$2/.memra-commit"   # the build's commit (tools/CMakeLists.txt reads it)
  echo "$2: $(git rev-parse --short "$1"), $(du -sh "$2" | cut -f1)"
}
tree "$1" .before
if [ $# -eq 2 ]; then tree "$2" .mid; else rm -rf .mid; fi
