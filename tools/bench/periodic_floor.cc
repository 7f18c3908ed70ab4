// The floor of `acld_bench clients N S P` on this machine, without acld: N
// client processes each make a call every P ms for S seconds (spread over the
// period as acld_bench's clients are: PeriodicPhase), where a call is
// the least two processes can do — the client publishes a request word in
// shared memory, wakes the server if it sleeps (futex), and sleeps on its own
// reply word until the server answers; the server, one thread in a session
// of its own (as acld runs), answers every slot it finds pending and sleeps
// on a futex when there is none. Both sides sleep when they wait (nobody
// polls), as a daemon serving many clients must.
//
//   periodic_floor N S P [own-session]
//
// Prints the calls/s served of those asked and the clients' CPU time
// (getrusage: user + system) per call, the figures `acld_bench clients`
// prints beside them (docs/performance.md). Meanwhile, as there, 40
// newcomers, one after another, each a new process timed from its start to
// the replies to its two calls: the first is the least a new client can
// wait on a host this busy; the second is the least for what acld_bench's
// newcomer does, two round trips (aclInit's opening of its session, then
// its first call).
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "tools/bench/newcomers.h"

namespace {

using acld::bench::kNewcomers;
using acld::bench::Percentile;
using acld::bench::TimeNewcomers;
using Clock = std::chrono::steady_clock;
constexpr int kMaxClients = 4096;

struct alignas(64) Slot {
  std::atomic<uint32_t> request{0};  // the client's call count
  std::atomic<uint32_t> reply{0};    // the last call answered
};

struct Shared {
  alignas(64) std::atomic<uint32_t> doorbell{0};  // the server's futex word
  std::atomic<uint32_t> server_sleeps{0};
  std::atomic<uint64_t> calls{0};
  // When the clients start (steady clock, ns since its epoch), set once they
  // are all forked, as acld_bench starts its clients at one signal once they
  // are all connected; `started` (their futex word) says it is set.
  std::atomic<int64_t> start_ns{0};
  std::atomic<uint32_t> started{0};
  Slot slots[kMaxClients];
};

// Sleeps while `word` holds `expected`, at most `timeout` (null: no limit).
void FutexWait(std::atomic<uint32_t>& word, uint32_t expected,
               const timespec* timeout = nullptr) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, timeout, nullptr,
          0);
}

void FutexWake(std::atomic<uint32_t>& word, int sleepers = 1) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, sleepers, nullptr, nullptr,
          0);
}

bool AnyPending(Shared& shared, int clients) {
  for (int i = 0; i < clients; ++i) {
    if (shared.slots[i].request.load() != shared.slots[i].reply.load()) return true;
  }
  return false;
}

// Serves slots [0, slots): the clients' and the newcomers' one.
[[noreturn]] void Serve(Shared& shared, int slots) {
  while (true) {
    bool answered = false;
    for (int i = 0; i < slots; ++i) {
      Slot& slot = shared.slots[i];
      const uint32_t request = slot.request.load();
      if (request == slot.reply.load()) continue;
      slot.reply.store(request);
      FutexWake(slot.reply);
      answered = true;
    }
    if (answered) continue;
    const uint32_t seen = shared.doorbell.load();
    shared.server_sleeps.store(1);
    // Re-checked after the flag is set: a request published before it was
    // seen is answered, one after it rings the doorbell.
    if (!AnyPending(shared, slots)) FutexWait(shared.doorbell, seen);
    shared.server_sleeps.store(0);
  }
}

// Makes call number `call` on `slot` and sleeps until it is answered, or
// exits the process (failed) after `give_up` (a server that died must not
// leave the benchmark hanging).
void CallOnce(Shared& shared, Slot& slot, uint32_t call, Clock::time_point give_up) {
  slot.request.store(call);
  if (shared.server_sleeps.load()) {
    shared.doorbell.fetch_add(1);
    FutexWake(shared.doorbell);
  }
  const timespec slice{0, 100'000'000};
  while (slot.reply.load() != call) {
    if (Clock::now() > give_up) std::_Exit(1);
    FutexWait(slot.reply, call - 1, &slice);
  }
}

// Client `index` of `clients`: from the start, a call every `period_ms` for
// `seconds`, the first one at its phase (acld_bench's clients' shape).
[[noreturn]] void Call(Shared& shared, int index, int clients, int seconds, int period_ms) {
  Slot& slot = shared.slots[index];
  // Bounded: a benchmark that never starts its clients has died.
  const timespec second{1, 0};
  for (int i = 0; i < 60 && shared.started.load() == 0; ++i) FutexWait(shared.started, 0, &second);
  if (shared.started.load() == 0) std::_Exit(1);
  const Clock::time_point start(
      std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(shared.start_ns.load())));
  const auto end = start + std::chrono::seconds(seconds);
  auto next = start + acld::bench::PeriodicPhase(index, clients, period_ms);
  uint32_t call = 0;
  while (Clock::now() < end) {
    std::this_thread::sleep_until(next);
    next += std::chrono::milliseconds(period_ms);
    CallOnce(shared, slot, ++call, end + std::chrono::seconds(10));
  }
  shared.calls.fetch_add(call);
  std::_Exit(0);
}

// How many calls a newcomer makes, each timed from its start.
constexpr int kNewcomerCalls = 2;

// One newcomer: its calls on `slot` (newcomers take turns on it), each
// timed from the process's start; writes the microseconds to `report_fd`.
[[noreturn]] void Newcomer(Shared& shared, Slot& slot, Clock::time_point started,
                           int report_fd) {
  std::vector<float> micros(kNewcomerCalls);
  for (float& reply : micros) {
    CallOnce(shared, slot, slot.reply.load() + 1, Clock::now() + std::chrono::seconds(10));
    reply = std::chrono::duration<float, std::micro>(Clock::now() - started).count();
  }
  std::_Exit(acld::bench::WriteNewcomerReport(report_fd, micros) ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: periodic_floor CLIENTS SECONDS PERIOD_MS [own-session]\n");
    return 2;
  }
  const int clients = std::atoi(argv[1]);
  const int seconds = std::atoi(argv[2]);
  const int period_ms = std::atoi(argv[3]);
  const acld::bench::NewcomerPlace place = acld::bench::NewcomerPlaceOf(argc, argv, 4);
  // One slot more than the clients: the newcomers'.
  if (clients < 1 || clients >= kMaxClients || seconds < 1 || period_ms < 1) {
    std::fprintf(stderr, "periodic_floor: 1..%d clients, seconds and period >= 1\n",
                 kMaxClients - 1);
    return 2;
  }
  void* memory = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return 1;
  Shared& shared = *new (memory) Shared;
  const pid_t benchmark = getpid();
  const pid_t server = fork();
  if (server < 0) return 1;
  if (server == 0) {
    acld::bench::DieWithBenchmark(benchmark);
    // A session of its own, as run.sh gives acld: the server is not one
    // thread among the clients' processes but a scheduling group of its own.
    setsid();
    Serve(shared, clients + 1);
  }
  std::vector<pid_t> callers;
  for (int i = 0; i < clients; ++i) {
    const pid_t child = fork();
    if (child < 0) break;
    if (child == 0) {
      acld::bench::DieWithBenchmark(benchmark);
      Call(shared, i, clients, seconds, period_ms);
    }
    callers.push_back(child);
  }
  shared.start_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            Clock::now().time_since_epoch())
                            .count());
  shared.started.store(1);
  FutexWake(shared.started, INT_MAX);
  // Within the clients' run, away from its start and end (as acld_bench).
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds * 0.1));
  // Forked, not executed as acld_bench's are: a newcomer calls through the
  // benchmark's shared mapping, and this program is small, so the pages a
  // forked copy of it writes first are few.
  const std::vector<acld::bench::Newcomer> newcomers = TimeNewcomers(
      std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(seconds * 0.8 / kNewcomers)),
      place, acld::bench::NewcomerStart::kForked, [&](int report_fd) {
        const auto started = Clock::now();
        Newcomer(shared, shared.slots[clients], started, report_fd);
      },
      kNewcomerCalls);
  bool failed = static_cast<int>(callers.size()) < clients || newcomers.empty();
  const std::vector<float> first = acld::bench::SortedReplies(newcomers, 0);
  const std::vector<float> second = acld::bench::SortedReplies(newcomers, 1);
  for (pid_t caller : callers) {
    int status = 0;
    if (waitpid(caller, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed = true;
    }
  }
  rusage usage{};
  // The clients, and the newcomers (40 x 2 calls: noise beside them); not
  // the server, which is still running.
  getrusage(RUSAGE_CHILDREN, &usage);
  kill(server, SIGKILL);
  waitpid(server, nullptr, 0);
  auto to_seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  const double cpu = to_seconds(usage.ru_utime) + to_seconds(usage.ru_stime);
  const uint64_t calls = shared.calls.load();
  std::printf(
      "periodic floor: %d clients, a futex call every %d ms for %d s: %.0f of %.0f calls/s "
      "served; clients' CPU per call %.1f us; %zu newcomers (%s, %s), start to first reply: p50 %.1f "
      "ms, p99 %.1f ms; to a second reply (two round trips, as an acld newcomer's aclInit and "
      "first call): p50 %.1f ms, p99 %.1f ms (%s)%s\n",
      clients, period_ms, seconds, calls / static_cast<double>(seconds),
      clients * 1000.0 / period_ms, calls > 0 ? cpu * 1e6 / calls : 0.0, newcomers.size(),
      acld::bench::NewcomerStartName(acld::bench::NewcomerStart::kForked),
      acld::bench::NewcomerPlaceName(place), Percentile(first, 0.5) / 1000.0,
      Percentile(first, 0.99) / 1000.0, Percentile(second, 0.5) / 1000.0,
      Percentile(second, 0.99) / 1000.0,
      acld::bench::SlowestNewcomer(newcomers, kNewcomerCalls - 1).c_str(),
      failed ? " (SOME CLIENTS OR NEWCOMERS FAILED)" : "");
  return failed ? 1 : 0;
}
