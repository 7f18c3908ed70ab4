#!/usr/bin/env bash
# Builds with -c opt, starts acld on a temporary socket and runs every
# benchmark, printing each figure beside its baseline from the same run.
set -euo pipefail
cd "$(dirname "$0")/../.."

tools/setup.sh
bazel build -c opt //daemon:acld //tools/bench:acld_bench 2>&1 | grep -E "ERROR|error:" || true
bin=bazel-bin
work=$(mktemp -d /tmp/acld-bench-XXXXXX)
"$bin/daemon/acld" --socket="$work/acld.sock" --admin_socket="$work/admin.sock" \
  --log_level=warn --sim_device_memory=$((8 << 30)) --max_streams_per_session=0 &
acld_pid=$!
trap 'kill $acld_pid 2>/dev/null; wait $acld_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -S "$work/admin.sock" ]] && break; sleep 0.1; done
daemon="unix:$work/acld.sock"
bench="$bin/tools/bench/acld_bench"

echo "== 1. sync control round trip (daemon) vs raw Unix-socket ping-pong"
ACLD_ADDRESS=$daemon "$bench" roundtrip

echo "== 2. async add_one_u32 launches per second, daemon vs embedded"
remote=$(ACLD_ADDRESS=$daemon "$bench" launches 200000)
embedded=$(ACLD_ADDRESS=embedded "$bench" launches 200000)
echo "$remote"; echo "$embedded"
awk -v r="$remote" -v e="$embedded" 'BEGIN { split(r, a, " "); split(e, b, " ");
  printf "launches: daemon / embedded = %.0f%%\n", 100 * a[2] / b[2] }'

echo "== 3. 64 MiB copies through the daemon vs memcpy"
ACLD_ADDRESS=$daemon "$bench" copies 64
echo "-- the same in embedded mode, for reference"
ACLD_ADDRESS=embedded "$bench" copies 64

echo "== 4. daemon threads and RSS with 1, 64 and 4096 streams open"
threads_rss() { awk '/^Threads:/ {t=$2} /^VmRSS:/ {r=$2} END {printf "threads %d, RSS %.1f MiB", t, r/1024}' "/proc/$acld_pid/status"; }
echo "idle daemon: $(threads_rss)"
for n in 1 64 4096; do
  coproc holder { ACLD_ADDRESS=$daemon "$bench" streams "$n"; }
  read -r line <&"${holder[0]}"
  echo "$n streams: $(threads_rss)  ($line)"
  echo done >&"${holder[1]}"
  wait "$holder_PID"
done

echo "== 5. host-func round trip: a chain of 10,000 on one stream vs raw ping-pong"
ACLD_ADDRESS=$daemon "$bench" hostfuncs 10000 1
echo "-- the same chain in embedded mode"
ACLD_ADDRESS=embedded "$bench" hostfuncs 10000 1
echo "== 6. host funcs per second: 8 streams of one process, and 8 processes"
ACLD_ADDRESS=$daemon "$bench" hostfuncs 40000 8
for i in $(seq 8); do ACLD_ADDRESS=$daemon "$bench" hostfuncs 5000 1 > "$work/proc$i" & done
wait $(jobs -p | grep -v "^$acld_pid$") 2>/dev/null || true
awk '{ for (i = 1; i <= NF; ++i) if ($i == "callbacks/s;") s += $(i-1) } END {
  printf "8 processes x 5000 host funcs: %.0f callbacks/s in total\n", s }' "$work"/proc*
