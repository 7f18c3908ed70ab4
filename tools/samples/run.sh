#!/usr/bin/env bash
# Builds and runs the runtime samples of a hicann/runtime checkout against
# acld, unchanged, as each sample's own run.sh does, and prints one table row
# per sample and mode:
#
#   tools/samples/run.sh --runtime DIR [--mode daemon|embedded|both] [--devices N] [SAMPLE...]
#
# DIR is a checkout of hicann/runtime (its example/ folder is copied to a
# scratch folder: nothing is built inside the checkout or this repository).
# SAMPLE is a path under example/ (default: every folder with a run.sh).
#
# The samples build against a CANN-shaped install of libascendcl
# (tools/install.sh); their Ascend C kernels are replaced by kernel_shim.cc
# (see ascendc.cmake). "daemon" runs them against an acld started here on the
# sim (--devices, default 2; the IPC notify samples use devices 2 and 3) with a
# socket in the scratch folder; "embedded" runs the runtime inside each sample
# (ACLD_ADDRESS=embedded, as many sim devices).
#
# A row says whether the sample built, its exit code, and how many lines it
# printed starting with [ERROR]; each sample's whole output is kept under the
# scratch folder (printed at the end) to compare with the sample's README.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
shim_dir="$repo/tools/samples"

runtime=""
mode="both"
devices=2
samples=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runtime) runtime="${2:?}"; shift 2 ;;
    --mode) mode="${2:?}"; shift 2 ;;
    --devices) devices="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) samples+=("$1"); shift ;;
  esac
done
[[ -d $runtime/example ]] || { echo "--runtime must name a hicann/runtime checkout" >&2; exit 2; }
case "$mode" in daemon) modes=(daemon) ;; embedded) modes=(embedded) ;; both) modes=(daemon embedded) ;;
  *) echo "--mode is daemon, embedded or both" >&2; exit 2 ;; esac

work=$(mktemp -d /tmp/acld-samples-XXXXXX)
"$repo/tools/install.sh" --prefix "$work/cann" --socket "$work/acld.sock" >/dev/null
# Where a CANN toolkit keeps ascendc.cmake (the samples' set_sample_env.sh
# looks there): the stand-in and its kernel shim.
mkdir -p "$work/cann/tikcpp/ascendc_kernel_cmake"
cp "$shim_dir/ascendc.cmake" "$shim_dir/kernel_shim.cc" "$work/cann/tikcpp/ascendc_kernel_cmake/"
shim_dir="$work/cann/tikcpp/ascendc_kernel_cmake"
build_log=$(cd "$repo" && bazel build -c opt //daemon:acld 2>&1) || { echo "$build_log" >&2; exit 1; }
acld="$(cd "$repo" && bazel info -c opt bazel-bin 2>/dev/null)/daemon/acld"

"$acld" --socket="$work/acld.sock" --admin_socket="$work/admin.sock" --log_level=warn \
  --sim_devices="$devices" >"$work/acld.log" 2>&1 &
acld_pid=$!
trap 'kill $acld_pid 2>/dev/null || true; wait $acld_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -S $work/admin.sock ]] && break; sleep 0.1; done

if [[ ${#samples[@]} -eq 0 ]]; then
  mapfile -t samples < <(cd "$runtime/example" && find . -name run.sh -printf '%h\n' | sed 's|^\./||' | sort)
fi

echo "| sample | mode | built | exit | [ERROR] lines |"
echo "| --- | --- | --- | --- | --- |"
for m in "${modes[@]}"; do
  address="unix:$work/acld.sock"
  [[ $m == embedded ]] && address=embedded
  # A fresh copy per mode: run.sh builds and installs inside its folder.
  rm -rf "$work/example"
  cp -r "$runtime/example" "$work/example"
  for sample in "${samples[@]}"; do
    dir="$work/example/$sample"
    log="$work/logs/$m/$sample.log"
    mkdir -p "$(dirname "$log")"
    set +e
    (cd "$dir" && source "$work/cann/set_env.sh" && ACLD_ADDRESS=$address ACLD_SIM_DEVICES=$devices \
      SOC_VERSION=Ascend910B ASCENDC_CMAKE_DIR="$shim_dir" \
      timeout 300 bash ./run.sh) >"$log" 2>&1 </dev/null
    code=$?
    set -e
    built=no
    compgen -G "$dir/build/*" >/dev/null && find "$dir/build" -maxdepth 2 -type f -perm -u+x \
      ! -name '*.so' ! -name '*.a' -newer "$dir/run.sh" | grep -qv CMakeFiles && built=yes
    errors=$(grep -c '^\[ERROR\]' "$log" || true)
    echo "| $sample | $m | $built | $code | $errors |"
  done
done
echo
echo "outputs: $work/logs/<mode>/<sample>.log; acld's log: $work/acld.log"
