#!/usr/bin/env bash
# The test command: installs what is missing, builds everything and runs every
# test. Extra arguments go to `bazel test` (e.g. --config=asan).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
bazel test //... "$@"
