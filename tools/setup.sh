#!/usr/bin/env bash
# Installs the Debian packages acld needs to build and test, offline-friendly (Debian archive only).
# Idempotent: prints nothing and changes nothing when every package is already installed.
set -euo pipefail

packages=(
  bazel-bootstrap bazel-platforms
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libsystemd-dev prometheus-cpp-dev
  prometheus  # promtool: the metrics test checks acld's output with it
  python3 python3-yaml  # tests/device_plugin_manifest_test parses the DaemonSet manifest
  pkg-config g++
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The prometheus package is here for promtool; its server is not wanted running.
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
  $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
