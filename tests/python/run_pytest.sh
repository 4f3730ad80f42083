#!/bin/sh
# Runs the Python package's pytest suite (python/tests) against this build's
# libmemra. usage: run_pytest.sh PYTHON LIBMEMRA SOURCE_DIR [gpu] [SANITIZED]
# Exit 77 (skipped) only when pytest or numpy is missing, or, for the gpu case,
# when torch has no CUDA device.
py=$1 lib=$2 src=$3 which=${4:-all} sanitized=${5:-OFF}
"$py" -c "import pytest, numpy" 2>/dev/null || { echo "SKIP: $py lacks pytest or numpy (the optional packages of the full suite: python3 -m pip install -r tests/requirements.txt)"; exit 77; }
export MEMRA_LIBRARY="$lib"
if [ "$sanitized" = ON ]; then
    # An ASan-built libmemra loads into Python only with the ASan runtime first;
    # Python itself is not leak-clean, so leaks are not judged here.
    asan=$(${CC:-cc} -print-file-name=libasan.so)
    ubsan=$(${CC:-cc} -print-file-name=libubsan.so)
    export LD_PRELOAD="$asan $ubsan" ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
fi
cd "$src" || exit 1
if [ "$which" = gpu ]; then
    "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null ||
        { echo "SKIP: torch with CUDA is not available"; exit 77; }
    exec "$py" -m pytest -q -rs -p no:cacheprovider python/tests/test_gpu.py
fi
exec "$py" -m pytest -q -rs -p no:cacheprovider python/tests
