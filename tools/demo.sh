#!/usr/bin/env bash
# The main job, end to end: builds acld, the client library and aclctl, starts
# acld on a temporary socket with the sim devices, runs a small multi-process
# workload against it, shows what the daemon saw, and stops the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/setup.sh
echo "== building acld, libascendcl.so, aclctl and the demo client"
bazel build //daemon:acld //client:libascendcl.so //tools/aclctl //tests:scenario_client \
  //tests:device_client //tests:callback_client 2>&1 |
  grep -E "ERROR|error:" || true
bin=bazel-bin
work=$(mktemp -d /tmp/acld-demo-XXXXXX)
acld_pid=""
holders=()
cleanup() {
  for pid in "${holders[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  [[ -n "$acld_pid" ]] && kill "$acld_pid" 2>/dev/null && wait "$acld_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

export ACLD_ADDRESS="unix:$work/acld.sock"
export ACLD_ADMIN_ADDRESS="unix:$work/admin.sock"
aclctl="$bin/tools/aclctl/aclctl"
client="$bin/tests/scenario_client"
device_client="$bin/tests/device_client"
callback_client="$bin/tests/callback_client"

echo "== starting acld with 2 sim devices on $ACLD_ADDRESS"
"$bin/daemon/acld" --socket="$work/acld.sock" --admin_socket="$work/admin.sock" \
  --sim_devices=2 --log_file="$work/acld.log" &
acld_pid=$!
for _ in $(seq 100); do [[ -S "$work/admin.sock" ]] && break; sleep 0.1; done
"$aclctl" status

echo
echo "== four client processes each register plugin callbacks and call aclInit 1..4 times"
for refs in 1 2 3 4; do
  mkfifo "$work/in$refs"
  "$client" hold "$refs" <"$work/in$refs" >"$work/out$refs" &
  holders+=($!)
  exec {fd}>"$work/in$refs"
  eval "hold_fd_$refs=$fd"
done
for refs in 1 2 3 4; do
  for _ in $(seq 100); do grep -q ready "$work/out$refs" 2>/dev/null && break; sleep 0.1; done
done
echo "-- while they run, the host-wide refcount is the sum of their counts (1+2+3+4 = 10):"
"$aclctl" status

echo
echo "== kill -9 the process holding 3 references: the daemon reaps its share"
kill -9 "${holders[2]}"
wait "${holders[2]}" 2>/dev/null || true
sleep 0.2
"$aclctl" sessions
echo "host_refcount now: $("$aclctl" --json status | sed -E 's/.*"host_refcount":([0-9]+).*/\1/')"

echo
echo "== the others let go of their references (aclFinalizeReference, finalize callbacks on the last)"
for refs in 1 2 4; do
  fd_var="hold_fd_$refs"
  echo release >&"${!fd_var}"
done
for i in 0 1 3; do wait "${holders[$i]}" || true; done
for refs in 1 2 4; do echo "-- client holding $refs:"; cat "$work/out$refs"; done

echo
echo "== the seed plugin-lifecycle sample (register, cancel, init, device 0, finalize by reference)"
"$client" seed_lifecycle

echo
echo "== one process, 16 threads racing aclInit and aclFinalizeReference"
"$client" concurrent 16

echo
echo "== devices, streams and memory: two clients hold device memory and a busy stream each"
for mib in 64 16; do
  mkfifo "$work/mem$mib"
  "$device_client" hold_memory "$mib" <"$work/mem$mib" >"$work/memout$mib" &
  holders+=($!)
  exec {fd}>"$work/mem$mib"
  eval "mem_fd_$mib=$fd"
done
for mib in 64 16; do
  for _ in $(seq 100); do grep -q ready "$work/memout$mib" 2>/dev/null && break; sleep 0.1; done
done
echo "-- while they run:"
"$aclctl" streams
echo
"$aclctl" memory
echo
echo "-- meanwhile other clients copy 64 MiB of random data through the daemon and back,"
echo "   run kernels, copies and events across three streams, and 8 streams x 5000 launches"
"$device_client" roundtrip 64
"$device_client" ordering
"$device_client" workload 8 5000
echo
echo "-- a client's failing kernel: STOP_ON_FAILURE discards what follows, CONTINUE runs it"
"$device_client" failure_modes
echo
echo "-- kill -9 the client holding 64 MiB: its memory and streams are released"
kill -9 "${holders[${#holders[@]}-2]}"
wait "${holders[${#holders[@]}-2]}" 2>/dev/null || true
sleep 0.3
"$aclctl" memory
echo release >&"$mem_fd_16"
wait "${holders[${#holders[@]}-1]}" 2>/dev/null || true

echo
echo "== host callbacks run in the client that launched them, in stream order"
"$callback_client" show
echo
echo "-- two clients at once; only the one whose kernel traps hears of it"
"$callback_client" show_exception trap &
trap_pid=$!
"$callback_client" show_exception clean
wait "$trap_pid" || true

echo
echo "== an operator at work: quotas and eviction"
"$aclctl" quota --default --memory=$((1 << 20))
echo "-- a new client under that 1 MiB quota and the 4096-stream default: both refuse it, naming the quota"
"$device_client" quota_probe $((1 << 20)) 4096 || true
"$aclctl" quota --default --memory=0
mkfifo "$work/evictee"
"$client" hold 2 <"$work/evictee" >"$work/evictee.out" &
evictee=$!
exec {evict_fd}>"$work/evictee"
for _ in $(seq 100); do grep -q ready "$work/evictee.out" 2>/dev/null && break; sleep 0.1; done
session=$("$aclctl" --json sessions | grep -o '"id":[0-9]*,"pid":'"$evictee" | sed -E 's/"id":([0-9]+).*/\1/')
echo "-- session $session (pid $evictee, identity from the kernel) before eviction:"
"$aclctl" sessions
"$aclctl" evict "$session"
echo release >&"$evict_fd"
wait "$evictee" || true
echo "-- what the evicted client saw when it next called the API:"
cat "$work/evictee.out"

echo
echo "== final state"
"$aclctl" status
echo
echo "== the daemon's log"
cat "$work/acld.log"
kill "$acld_pid"; wait "$acld_pid"; acld_pid=""
echo "== acld stopped cleanly"
