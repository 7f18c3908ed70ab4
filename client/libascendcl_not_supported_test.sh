#!/usr/bin/env bash
# The functions acld does not provide (client/api_not_supported.cc) exist for
# applications exactly as CANN declares them: the headers compile as C and
# C++, libascendcl.so exports every one, and a CANN-style program built with
# nothing but -lascendcl gets ACL_ERROR_API_NOT_SUPPORT and a message naming
# the function from each (embedded mode). The list of functions checked must
# be the list api_not_supported.cc defines, so none is left out.
set -euo pipefail

lib_dir="$(dirname "$(readlink -f client/libascendcl.so)")"
work="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

# 1. The functions api_not_supported.cc defines (one definition per line
#    start: "<type> <name>(").
grep -oE '^[A-Za-z_][A-Za-z0-9_]*\*? acl[A-Za-z0-9_]*\(' client/api_not_supported.cc |
  sed -E 's/.* (acl[A-Za-z0-9_]*)\($/\1/' | sort >"$work/defined"
defined_count=$(wc -l <"$work/defined")
[[ "$defined_count" -gt 200 ]] || fail "only $defined_count definitions found in api_not_supported.cc"
duplicates=$(uniq -d "$work/defined")
[[ -z "$duplicates" ]] || fail "defined twice: $duplicates"

# 2. Each is declared in the public headers and exported by libascendcl.so.
cat client/include/acl/*.h | grep -oE 'ACL_FUNC_VISIBILITY[^(]*\(' |
  sed -E 's/.*[ *]([A-Za-z0-9_]*)\($/\1/' | sort -u >"$work/declared"
undeclared=$(comm -23 "$work/defined" "$work/declared")
[[ -z "$undeclared" ]] || fail "defined but not declared in client/include: $undeclared"
nm -D --defined-only client/libascendcl.so | awk '{print $3}' | sort -u >"$work/exported"
unexported=$(comm -23 "$work/defined" "$work/exported")
[[ -z "$unexported" ]] || fail "not exported by libascendcl.so: $unexported"

# 3. The headers compile as C (C99 and C11) and as C++.
for std in c99 c11; do
  echo '#include "acl/acl.h"' | gcc -x c -std="$std" -fsyntax-only -Wall -I client/include - ||
    fail "the headers do not compile as $std"
done
echo '#include "acl/acl.h"' | g++ -x c++ -std=c++11 -fsyntax-only -Wall -I client/include - ||
  fail "the headers do not compile as C++11"

# 4. The program, built as an application builds, run in embedded mode.
sanitize=""
if readelf -d client/libascendcl.so | grep -q libasan; then sanitize="-fsanitize=address,undefined"; fi
g++ -std=c++17 $sanitize -o "$work/program" client/libascendcl_not_supported_test_program.cc \
    -I client/include -L "$lib_dir" -lascendcl -Wl,-rpath,"$lib_dir"
status=0
ACLD_ADDRESS=embedded "$work/program" >"$work/output" || status=$?
grep '^FAIL' "$work/output" || true
[[ "$status" -eq 0 ]] || fail "the program exited with $status"

# 5. It checked exactly the functions api_not_supported.cc defines.
sed -n 's/^not-supported //p' "$work/output" | sort >"$work/checked"
if ! diff "$work/defined" "$work/checked" >"$work/difference"; then
  echo "FAIL: the functions checked (>) differ from those defined (<):"
  cat "$work/difference"
  exit 1
fi
echo "PASS: $defined_count functions return ACL_ERROR_API_NOT_SUPPORT with a message"
