#!/usr/bin/env bash
# Lays out a CANN-shaped toolkit directory for libascendcl, so that an
# existing CANN project (CMake or otherwise) builds against acld by pointing
# at it, as it would at a CANN install:
#
#   tools/install.sh --prefix DIR [--socket PATH]
#
#   DIR/include/acl/*.h          the AscendCL headers (client/include)
#   DIR/lib64/libascendcl.so     the client library
#   DIR/lib64/libacl_rt.so,      the same library under the names several CANN
#   DIR/lib64/libacl_rt_impl.so
#                                projects link (a symbolic link)
#   DIR/bin/aclctl               the operator's tool
#   DIR/set_env.sh               the environment script; DIR/bin/setenv.bash is the
#                                same script under the name CANN's samples source
#
# The environment script sets what CANN's does for a build and a run
# (ASCEND_HOME_PATH, ASCEND_INSTALL_PATH, ASCEND_TOOLKIT_HOME, the include,
# library and binary paths) plus ACLD_ADDRESS, the acld socket the programs
# talk to (--socket, default /run/acld/acld.sock; an ACLD_ADDRESS already set
# is kept). acld itself is not installed here: it runs as the host's service.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=""
socket="/run/acld/acld.sock"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --socket) socket="${2:?--socket needs a path}"; shift 2 ;;
    --socket=*) socket="${1#--socket=}"; shift ;;
    *) echo "usage: tools/install.sh --prefix DIR [--socket PATH]" >&2; exit 2 ;;
  esac
done
[[ -n $prefix ]] || { echo "usage: tools/install.sh --prefix DIR [--socket PATH]" >&2; exit 2; }
case "$socket" in /*) ;; *) echo "--socket must be an absolute path" >&2; exit 2 ;; esac

tools/setup.sh >/dev/null
# -c opt: the library applications ship with. A failed build stops here.
if ! build_log=$(bazel build -c opt //client:libascendcl.so //tools/aclctl 2>&1); then
  echo "$build_log" >&2
  exit 1
fi
bin=$(bazel info -c opt bazel-bin 2>/dev/null)

mkdir -p "$prefix/include/acl" "$prefix/lib64" "$prefix/bin"
prefix=$(cd "$prefix" && pwd)
install -m 0644 client/include/acl/*.h "$prefix/include/acl/"
install -m 0755 "$bin/client/libascendcl.so" "$prefix/lib64/libascendcl.so"
ln -sfn libascendcl.so "$prefix/lib64/libacl_rt.so"
ln -sfn libascendcl.so "$prefix/lib64/libacl_rt_impl.so"
install -m 0755 "$bin/tools/aclctl/aclctl" "$prefix/bin/aclctl"

cat >"$prefix/set_env.sh" <<SCRIPT
# acld's CANN-shaped toolkit (made by acld's tools/install.sh). Source it:
#   source $prefix/set_env.sh
export ASCEND_HOME_PATH="$prefix"
export ASCEND_INSTALL_PATH="$prefix"
export ASCEND_TOOLKIT_HOME="$prefix"
export ASCEND_CANN_PACKAGE_PATH="$prefix"
export PATH="$prefix/bin\${PATH:+:\$PATH}"
export LD_LIBRARY_PATH="$prefix/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$prefix/lib64\${LIBRARY_PATH:+:\$LIBRARY_PATH}"
export CPATH="$prefix/include\${CPATH:+:\$CPATH}"
export CMAKE_PREFIX_PATH="$prefix\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
# The acld the programs talk to (kept if already set).
export ACLD_ADDRESS="\${ACLD_ADDRESS:-unix:$socket}"
SCRIPT
install -m 0644 "$prefix/set_env.sh" "$prefix/bin/setenv.bash"
echo "installed into $prefix; use it with: source $prefix/set_env.sh"
