#!/usr/bin/env bash
# Builds with -c opt, starts acld on a temporary socket and runs every
# benchmark, printing each figure beside its baseline from the same run.
#
#   tools/bench/run.sh [--wait-for-idle]
#
# With --wait-for-idle it waits (after building, which loads the machine
# itself) until the 1-minute load average is below 0.5, polling every 30 s for
# up to 20 minutes: on a 2-core machine a concurrent compile halves what the
# benchmark sees, and the floors that need both cores suffer most.
set -euo pipefail
cd "$(dirname "$0")/../.."

tools/setup.sh
# A failed build must stop the run: benchmarking the previous binaries would print figures of
# code that is not the one in the tree.
if ! build_log=$(bazel build -c opt //daemon:acld //tools/bench:acld_bench //tools/bench:copy_paths \
    //tools/bench:periodic_floor 2>&1); then
  echo "$build_log" | grep -E "ERROR|error:" >&2 || echo "$build_log" >&2
  exit 1
fi

load1() { cut -d' ' -f1 /proc/loadavg; }
if [[ ${1:-} == --wait-for-idle ]]; then
  for _ in $(seq 40); do
    awk -v l="$(load1)" 'BEGIN { exit !(l < 0.5) }' && break
    echo "waiting for the 1-minute load average ($(load1)) to fall below 0.5"
    sleep 30
  done
  awk -v l="$(load1)" 'BEGIN { exit !(l >= 0.5) }' &&
    echo "WARNING: load still $(load1) after 20 minutes; the figures below were taken under load"
fi

echo "run: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), commit $(git describe --always --dirty)," \
  "$(nproc) CPUs allowed ($(grep Cpus_allowed_list /proc/self/status | cut -f2))"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# The load average at the end would count this benchmark's own processes, so the run instead
# reports the CPU time the rest of the machine used meanwhile: busy time from /proc/stat
# (user, nice, system, irq, softirq) minus the CPU time of this script and its children.
busy_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f", ($2 + $3 + $4 + $7 + $8) / hz }' \
    /proc/stat
}
# CPU time the hypervisor gave to others while this VM had work (a noisy neighbour).
steal_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { printf "%.2f", $9 / hz }' /proc/stat
}
# `times` runs in this shell, not in a $(...) subshell, which would report its own.
own_seconds() {
  awk '{ for (i = 1; i <= NF; ++i) { split($i, t, "m"); s += t[1] * 60 + t[2] } }
    END { printf "%.2f", s }' "$1"
}
# Not the bazel-bin symlink: it follows whichever configuration the last bazel command on this
# tree used, and other builds (fastbuild, asan) may run between ours and the benchmark.
bin=$(bazel info -c opt bazel-bin 2>/dev/null)
work=$(mktemp -d /tmp/acld-bench-XXXXXX)
# acld gets a session of its own, as systemd gives every service (a session and a cgroup): the
# scheduler then shares the CPU between acld and the clients' group, where in this script's
# session it would share it between acld's threads and each of up to 1,025 client processes,
# and starve it (docs/performance.md, "Runs of 2026-12-02, session 19"). setsid execs acld
# itself here (a script's background job leads no process group), so $! is acld's pid.
setsid "$bin/daemon/acld" --socket="$work/acld.sock" --admin_socket="$work/admin.sock" \
  --log_level=warn --sim_device_memory=$((8 << 30)) --max_streams_per_session=0 \
  --max_sessions=1200 --max_sessions_per_uid=1200 &
acld_pid=$!
# `|| true`: under set -e a failed kill (acld already reaped at the end) would skip the rm.
trap 'kill $acld_pid 2>/dev/null || true; wait $acld_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -S "$work/admin.sock" ]] && break; sleep 0.1; done
if [[ $(cat "/proc/$acld_pid/comm" 2>/dev/null) != acld ]]; then
  echo "acld did not start (or setsid forked it away from \$!)" >&2
  exit 1
fi
daemon="unix:$work/acld.sock"
bench="$bin/tools/bench/acld_bench"

busy_start=$(busy_seconds)
steal_start=$(steal_seconds)
times >"$work/times-start"
start_time=$(date +%s)

echo "== 1. sync control round trip (daemon) vs the floors: futex and Unix-socket ping-pongs"
ACLD_ADDRESS=$daemon "$bench" roundtrip
echo "-- the same over the gRPC fallback (ACLD_TRANSPORT=grpc), for comparison"
ACLD_ADDRESS=$daemon ACLD_TRANSPORT=grpc "$bench" roundtrip nocompare

echo "== 2. async add_one_u32 launches per second, daemon vs embedded"
remote=$(ACLD_ADDRESS=$daemon "$bench" launches 200000)
embedded=$(ACLD_ADDRESS=embedded "$bench" launches 200000)
echo "$remote"; echo "$embedded"
awk -v r="$remote" -v e="$embedded" 'BEGIN { split(r, a, " "); split(e, b, " ");
  printf "launches: daemon / embedded = %.2fx (medians)\n", a[2] / b[2] }'

echo "-- aggregate launches from 1, 2, 4, 8 and 16 client processes at once"
for n in 1 2 4 8 16; do
  for i in $(seq "$n"); do ACLD_ADDRESS=$daemon "$bench" launches $((200000 / n)) > "$work/launch$i" & done
  wait $(jobs -p | grep -v "^$acld_pid$") 2>/dev/null || true
  awk -v n="$n" '{ s += $2 } END { printf "%d clients: %.0f launches/s in total (sum of their medians)\n", n, s }' \
    $(seq -f "$work/launch%g" "$n")
done

echo "== 3. 256 MiB copies through the daemon vs memcpy"
ACLD_ADDRESS=$daemon "$bench" copies 256
echo "-- the same in embedded mode, for reference"
ACLD_ADDRESS=embedded "$bench" copies 256

echo "-- 1 MiB copies (a copy's round trip against its bytes)"
ACLD_ADDRESS=$daemon "$bench" copies 1
ACLD_ADDRESS=embedded "$bench" copies 1
echo "-- what this machine allows a bulk copy between processes, without acld (the staged ideal)"
"$bin/tools/bench/copy_paths" 256

echo "== 4. daemon threads and RSS with 1, 64 and 4096 streams open"
threads_rss() {
  awk '/^Threads:/ {t=$2} /^VmRSS:/ {r=$2} END {printf "threads %d, RSS %.1f MiB", t, r/1024}' \
    "/proc/$acld_pid/status"
}
echo "idle daemon: $(threads_rss)"
for n in 1 64 4096; do
  coproc holder { ACLD_ADDRESS=$daemon "$bench" streams "$n"; }
  read -r line <&"${holder[0]}"
  echo "$n streams: $(threads_rss)  ($line)"
  echo done >&"${holder[1]}"
  wait "$holder_PID"
done

echo "== 5. host-func round trip: a chain of 10,000 on one stream vs the floors"
ACLD_ADDRESS=$daemon "$bench" hostfuncs 10000 1 compare
echo "-- the same chain over the gRPC fallback (ACLD_TRANSPORT=grpc)"
ACLD_ADDRESS=$daemon ACLD_TRANSPORT=grpc "$bench" hostfuncs 10000 1
echo "-- the same chain in embedded mode"
ACLD_ADDRESS=embedded "$bench" hostfuncs 10000 1
echo "-- aclrtLaunchCallback run by aclrtProcessReport: daemon, then embedded"
ACLD_ADDRESS=$daemon "$bench" reports 10000
ACLD_ADDRESS=embedded "$bench" reports 10000
echo "== 6. host funcs per second: 8 streams of one process, and 8 processes"
ACLD_ADDRESS=$daemon "$bench" hostfuncs 40000 8
for i in $(seq 8); do ACLD_ADDRESS=$daemon "$bench" hostfuncs 5000 1 > "$work/proc$i" & done
wait $(jobs -p | grep -v "^$acld_pid$") 2>/dev/null || true
awk '{ for (i = 1; i <= NF; ++i) if ($i == "callbacks/s") s += $(i-1) } END {
  printf "8 processes x 5000 host funcs: %.0f callbacks/s in total\n", s }' "$work"/proc*

echo "== 7. every kind of synchronous call (daemon)"
ACLD_ADDRESS=$daemon "$bench" calls
echo "-- the same in embedded mode"
ACLD_ADDRESS=embedded "$bench" calls

# The daemon's CPU time so far, in seconds (utime + stime of /proc/PID/stat).
acld_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' \
    "/proc/$acld_pid/stat"
}
# Runs `acld_bench clients N S P` and reports the daemon's threads while they
# run and the CPU it used over their S seconds. (Each of its newcomers is
# followed by a CPU twin, which burns as much CPU and waits for nobody.)
clients_run() {
  local cpu_start threads line
  coproc clients { ACLD_ADDRESS=$daemon "$bench" clients "$@"; }
  read -r line <&"${clients[0]}" || true  # "running N clients": all connected
  cpu_start=$(acld_cpu)
  sleep 1
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$acld_pid/status")
  read -r line <&"${clients[0]}" || line="clients $*: no result (see stderr)"
  wait "$clients_PID" || true
  echo "$line"
  awk -v a="$cpu_start" -v b="$(acld_cpu)" -v s="$2" -v t="$threads" 'BEGIN {
    printf "  daemon: %d threads while they ran; %.2f CPU s in %d s (%.1f%% of a core)\n",
      t, b - a, s, 100 * (b - a) / s }'
}
echo "== 8. many clients: each one process with one stream (threads, latency, idle cost)"
for n in 1 16 64 256 1024; do clients_run "$n" 5 10; done
# Newcomers and their twins are the benchmark's program executed anew (a
# program's start is about 20 ms of CPU here); on a machine this full a
# newcomer and its twin can take seconds to start and run, so these runs are
# long enough for up to 40 of them. The loaded runs above fit fewer. Every
# result line says how many ran.
echo "-- the same 1,024 with newcomers each in a session of its own (as a program a user starts is), for 100 s"
clients_run 1024 100 10 own-session
echo "-- the same, each newcomer and twin forked from the benchmark (as before session 48)"
clients_run 1024 100 10 own-session forked
echo "-- the floor of that pattern without acld: a futex call every 10 ms from 256 and 1,024 processes"
for n in 256 1024; do "$bin/tools/bench/periodic_floor" "$n" 5 10 || echo "periodic floor, $n clients: failed"; done
"$bin/tools/bench/periodic_floor" 1024 5 10 own-session || echo "periodic floor, 1024 clients: failed"
for n in 1 16 64; do clients_run "$n" 5 0; done
echo "-- 64 clients connected and idle for 10 s"
clients_run 64 10 -1

kill "$acld_pid"
wait "$acld_pid" 2>/dev/null || true  # reaped, so that its CPU time counts as the run's own
busy_end=$(busy_seconds)
steal_end=$(steal_seconds)
times >"$work/times-end"
# /proc/stat counts ticks and the run's own time is exact, so a quiet run can come out a second
# or two below zero.
awk -v wall="$(($(date +%s) - start_time))" -v cpus="$(nproc)" -v b0="$busy_start" \
  -v b1="$busy_end" -v o0="$(own_seconds "$work/times-start")" \
  -v o1="$(own_seconds "$work/times-end")" -v s0="$steal_start" -v s1="$steal_end" 'BEGIN {
  printf "other processes used %.1f CPU s during the %d s run (of %d CPU s available; " \
    "/proc/stat counts ticks: about +-1 %% of that); the hypervisor took %.1f CPU s (steal)\n",
    (b1 - b0) - (o1 - o0), wall, cpus * wall, s1 - s0 }'
