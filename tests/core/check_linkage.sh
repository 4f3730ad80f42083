#!/bin/sh
# libmemra and the memra program must not link any CUDA library: the driver,
# cuBLASLt and NVRTC are opened with dlopen. Fails when readelf shows none of
# the expected entries too (so a broken readelf cannot pass the test).
set -u
status=0
for f in "$@"; do
  out=$(readelf -d "$f") || { echo "readelf failed on $f"; exit 1; }
  echo "$out" | grep -q 'NEEDED.*libc\.so' || { echo "$f: no NEEDED libc entry, readelf output unusable"; exit 1; }
  if echo "$out" | grep -Ei 'NEEDED.*(cuda|cublas|nvrtc|nvidia)'; then
    echo "FAIL: $f links a CUDA library"
    status=1
  else
    echo "ok: $f: $(echo "$out" | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')"
  fi
done
exit $status
