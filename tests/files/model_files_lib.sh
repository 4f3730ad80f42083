# Sourced by the model-file command tests (run_model_ls.sh, run_model_cmds.sh)
# with $tf set to test_files: a temporary folder $tmp removed at exit, fail(),
# and the files test_files writes (model.gguf, model.safetensors, an index,
# bad.gguf) in $tmp.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memra-model-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$tf" write "$tmp" >/dev/null || fail "test_files write"
