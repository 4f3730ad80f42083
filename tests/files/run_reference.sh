#!/bin/sh
# files.reference: files written by the reference Python packages (gguf,
# safetensors, numpy, ml_dtypes), their values decoded by the same packages,
# read back through memra and compared bit for bit. Skips (77) only when the
# packages are missing; .ci/run installs them.
bin=$1
script=$2
if ! python3 -c "import gguf, safetensors, numpy, ml_dtypes" 2>/dev/null; then
  echo "SKIP: the gguf, safetensors, numpy and ml_dtypes Python packages are missing (the optional packages of the full suite: python3 -m pip install -r tests/requirements.txt)"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/memra-ref-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
python3 "$script" "$dir" || exit 1
"$bin" reference "$dir"
