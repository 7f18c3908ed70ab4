#!/usr/bin/env bash
# libascendcl.so exports only the AscendCL C API, and a CANN-style program
# builds against our headers with nothing but -lascendcl, then runs.
set -euo pipefail

lib_dir="$(dirname "$(readlink -f client/libascendcl.so)")"
exported=$(nm -D --defined-only client/libascendcl.so | awk '{print $3}')
leaked=$(grep -v -E '^acl' <<<"$exported" || true)
if [[ -n "$leaked" ]]; then
  echo "FAIL: symbols other than the C API are exported:"; echo "$leaked" | head -20
  exit 1
fi
for symbol in aclInit aclFinalize aclFinalizeReference aclrtSetDevice aclGetRecentErrMsg \
              aclnnInit aclnnFinalize aclsimLaunchKernel aclrtLaunchHostFunc; do
  grep -qx "$symbol" <<<"$exported" || { echo "FAIL: $symbol is not exported"; exit 1; }
done

work="${TEST_TMPDIR:-$(mktemp -d)}"
# Under --config=asan the library itself needs the sanitizer runtime first.
sanitize=""
if readelf -d client/libascendcl.so | grep -q libasan; then sanitize="-fsanitize=address,undefined"; fi
g++ -std=c++17 $sanitize -o "$work/program" client/libascendcl_abi_test_program.cc \
    -I client/include -L "$lib_dir" -lascendcl -Wl,-rpath,"$lib_dir"
ACLD_ADDRESS=embedded "$work/program"
echo "PASS"
