// Whole-process benchmarks of acld, each printing the project's figure next to
// a baseline measured in the same run. tools/bench/run.sh drives them.
//
//   acld_bench roundtrip [nocompare]
//                             aclrtStreamQuery on an idle stream vs the machine's
//                             floors: futex and Unix-socket ping-pongs between two
//                             processes, on one core and on two (not with "nocompare")
//   acld_bench launches N     N async add_one_u32 launches + one sync, per second
//   acld_bench copies MIB     H2D / D2H of MIB MiB (pageable and pinned) vs memcpy
//   acld_bench streams N      opens N streams, prints "ready", waits for a line
//   acld_bench hostfuncs N S [compare]
//                             N host funcs spread over S streams; with "compare"
//                             also the floors, as for roundtrip
//   acld_bench reports N      a chain of N aclrtLaunchCallback (blocking) on one
//                             stream, run by a thread subscribed with
//                             aclrtSubscribeReport that calls aclrtProcessReport
//   acld_bench calls          every kind of synchronous call, microseconds each
//   acld_bench clients N S P  N client processes, each with one stream, calling
//                             aclrtStreamQuery every P ms (0: back to back; -1:
//                             never, connected and idle; client i's first call
//                             i*P/N ms after the start, newcomers.h's
//                             PeriodicPhase) for S seconds: calls/s
//                             in total, latency percentiles, one client's threads
//                             and RSS, the clients' CPU time (getrusage: user +
//                             system) per call; prints "running" when all are
//                             connected.
//                             Meanwhile (unless idle) 40 newcomers, one after
//                             another, each timing aclInit up to the reply to its
//                             first call (aclrtSetDevice), and where the slowest
//                             one's time went (on a CPU, or waiting for one),
//                             each followed by its CPU twin (as much CPU, no
//                             acld: the scheduler's part); each newcomer and
//                             twin is this program executed anew (as a user's
//                             program starts), or forked from it with the
//                             argument `forked`; with `own-session`, each in
//                             a session of its own
//
// The runtime is whatever ACLD_ADDRESS says (a daemon, or "embedded"), over the
// carrier ACLD_TRANSPORT names (the shared-memory channel by default). Every
// two-process floor prints the CPU list each process was allowed, as
// sched_getaffinity reported it, so a reader can check where it ran.
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "tools/bench/newcomers.h"

namespace {

using acld::bench::kNewcomers;
using acld::bench::Percentile;
using acld::bench::TimeNewcomers;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Must(aclError code, const char* what) {
  if (code != ACL_SUCCESS) {
    const char* message = aclGetRecentErrMsg();
    std::fprintf(stderr, "%s failed: %d %s\n", what, code, message ? message : "");
    std::exit(1);
  }
}

void Setup() {
  Must(aclInit(nullptr), "aclInit");
  Must(aclrtSetDevice(0), "aclrtSetDevice");
}

// Median of `rounds` measurements of `per_op`, in microseconds per operation.
template <typename Body>
double MedianMicros(int rounds, int ops, Body body) {
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < ops; ++i) body();
    samples.push_back(SecondsSince(start) * 1e6 / ops);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Where the two processes of a ping-pong baseline run.
enum class Placement {
  kUnpinned,  // both keep the benchmark's own mask; the scheduler decides
  kOneCore,   // both on the first allowed CPU: every round trip is a context switch
  kTwoCores,  // one on each of the first two allowed CPUs: every round trip crosses cores
};

// "0-1", "0,2", ...: the same notation as Cpus_allowed_list in /proc/PID/status.
std::string CpuList(const cpu_set_t& set) {
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!list.empty()) list += ',';
    list += std::to_string(cpu);
    if (last > cpu) list += '-' + std::to_string(last);
    cpu = last;
  }
  return list.empty() ? "none" : list;
}

// The calling process's allowed CPUs as the kernel reports them, not as we asked for them:
// printing this is what lets a reader check the placement of a baseline.
std::string AllowedCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  return CpuList(set);
}

// Gives the calling process the CPUs `placement` assigns to its side of a pair. Each process
// calls this itself after fork(): a mask set before fork() is inherited by the child, which is
// how an earlier version of this benchmark ran its "two cores" baseline with both on CPU 0.
void Place(Placement placement, bool parent, const cpu_set_t& allowed) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  cpu_set_t mask = allowed;
  if (placement != Placement::kUnpinned) {
    CPU_ZERO(&mask);
    CPU_SET(placement == Placement::kTwoCores && !parent ? cpus[1] : cpus[0], &mask);
  }
  if (sched_setaffinity(0, sizeof(mask), &mask) != 0) {
    std::perror("sched_setaffinity");
    std::exit(1);
  }
}

// One direction of the futex ping-pong, in one 32-bit word of a MAP_SHARED page. The receiver
// sleeps in the kernel only when nothing has arrived, and only then does the sender pay a
// FUTEX_WAKE: the same rule a shared-memory control path would follow.
constexpr uint32_t kEmpty = 0;
constexpr uint32_t kFull = 1;
constexpr uint32_t kSleeping = 2;

using FutexWord = std::atomic<uint32_t>;
static_assert(sizeof(FutexWord) == sizeof(uint32_t) && FutexWord::is_always_lock_free,
              "futex(2) operates on the atomic's storage directly");

// Not FUTEX_PRIVATE_FLAG: the word is shared between two processes.
void Futex(FutexWord* word, int op, uint32_t value) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void Post(FutexWord* word) {
  if (word->exchange(kFull, std::memory_order_acq_rel) == kSleeping) Futex(word, FUTEX_WAKE, 1);
}

// With `spin` the receiver never sleeps; that variant is only meaningful on two cores.
void Await(FutexWord* word, bool spin) {
  uint32_t state = kFull;
  while (!word->compare_exchange_strong(state, kEmpty, std::memory_order_acquire)) {
    if (spin) {
      // Reading until the word changes keeps its cache line shared instead of bouncing it
      // with failed compare-exchanges.
      while (word->load(std::memory_order_relaxed) != kFull) CpuRelax();
    } else if (state == kSleeping || word->compare_exchange_strong(state, kSleeping)) {
      // Returns at once if the sender posted after the compare-exchange: nothing is lost.
      Futex(word, FUTEX_WAIT, kSleeping);
    }
    state = kFull;
  }
}

// The page both processes of a pair map: the futex words on separate cache lines, and where
// the child leaves its allowed CPU list for the parent to print.
struct SharedPage {
  alignas(64) FutexWord ping{kEmpty};  // parent -> child
  alignas(64) FutexWord pong{kEmpty};  // child -> parent
  alignas(64) std::atomic<bool> stop{false};
  char child_cpus[256] = {};
};

struct PairResult {
  double micros = 0;  // median round trip
  std::string parent_cpus;
  std::string child_cpus;
};

// Forks a child that runs `child_loop(page)` until told to stop, places both processes, and
// measures the parent's `round_trip(page)`; `stop(page)` ends the child.
template <typename ChildLoop, typename RoundTrip, typename Stop>
PairResult RunPair(Placement placement, int rounds, int ops, ChildLoop child_loop,
                   RoundTrip round_trip, Stop stop) {
  void* memory =
      mmap(nullptr, sizeof(SharedPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  auto* page = new (memory) SharedPage();
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof(allowed), &allowed);
  std::fflush(stdout);  // the child must not inherit, and later flush, our buffered output
  const pid_t child = fork();
  if (child == 0) {
    Place(placement, /*parent=*/false, allowed);
    std::snprintf(page->child_cpus, sizeof(page->child_cpus), "%s", AllowedCpus().c_str());
    child_loop(page);
    _exit(0);
  }
  Place(placement, /*parent=*/true, allowed);
  PairResult result;
  result.parent_cpus = AllowedCpus();
  // The first round trip waits for the child to exist and to have placed itself.
  round_trip(page);
  result.micros = MedianMicros(rounds, ops, [&] { round_trip(page); });
  stop(page);
  waitpid(child, nullptr, 0);
  result.child_cpus = page->child_cpus;
  sched_setaffinity(0, sizeof(allowed), &allowed);
  munmap(memory, sizeof(SharedPage));
  return result;
}

PairResult FutexPingPong(Placement placement, bool spin, int rounds, int ops) {
  return RunPair(
      placement, rounds, ops,
      [spin](SharedPage* page) {
        for (;;) {
          Await(&page->ping, spin);
          if (page->stop.load(std::memory_order_relaxed)) return;
          Post(&page->pong);
        }
      },
      [spin](SharedPage* page) {
        Post(&page->ping);
        Await(&page->pong, spin);
      },
      [](SharedPage* page) {
        page->stop.store(true, std::memory_order_relaxed);  // published by Post's release
        Post(&page->ping);
      });
}

// A 64-byte ping-pong between two processes over a Unix socket: what any socket transport
// pays per round trip before doing any work.
PairResult SocketPingPong(Placement placement, int rounds, int ops) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::exit(1);
  char message[64] = {};
  PairResult result = RunPair(
      placement, rounds, ops,
      [&](SharedPage*) {
        close(fds[0]);
        while (read(fds[1], message, sizeof(message)) == sizeof(message)) {
          if (write(fds[1], message, sizeof(message)) != sizeof(message)) break;
        }
      },
      [&](SharedPage*) {
        if (write(fds[0], message, sizeof(message)) != sizeof(message) ||
            read(fds[0], message, sizeof(message)) != sizeof(message)) {
          std::exit(1);
        }
      },
      [&](SharedPage*) { close(fds[0]); });  // the child reads end-of-file
  close(fds[1]);
  return result;
}

struct Floor {
  std::string name;
  Placement placement;
  PairResult result;
};

// The machine's floors for a round trip between two processes, all measured now so that every
// ratio compares figures from the same run. Exits if a placement did not take: a baseline that
// is not what its name says is worse than none.
std::vector<Floor> MeasureFloors(int rounds, int ops) {
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof(allowed), &allowed);
  const bool two_cores = CPU_COUNT(&allowed) >= 2;
  std::vector<Floor> floors;
  floors.push_back({"futex ping-pong, one core", Placement::kOneCore,
                    FutexPingPong(Placement::kOneCore, false, rounds, ops)});
  if (two_cores) {
    floors.push_back({"futex ping-pong, two cores", Placement::kTwoCores,
                      FutexPingPong(Placement::kTwoCores, false, rounds, ops)});
    floors.push_back({"futex ping-pong, two cores, spinning", Placement::kTwoCores,
                      FutexPingPong(Placement::kTwoCores, true, rounds, ops)});
  }
  floors.push_back({"unix socket ping-pong, one core", Placement::kOneCore,
                    SocketPingPong(Placement::kOneCore, rounds, ops)});
  if (two_cores) {
    floors.push_back({"unix socket ping-pong, two cores", Placement::kTwoCores,
                      SocketPingPong(Placement::kTwoCores, rounds, ops)});
  }
  floors.push_back({"unix socket ping-pong, unpinned", Placement::kUnpinned,
                    SocketPingPong(Placement::kUnpinned, rounds, ops)});
  for (const Floor& floor : floors) {
    const bool same = floor.result.parent_cpus == floor.result.child_cpus;
    if ((floor.placement == Placement::kOneCore && !same) ||
        (floor.placement == Placement::kTwoCores && same)) {
      std::fprintf(stderr, "%s: placement did not take (parent CPUs %s, child CPUs %s)\n",
                   floor.name.c_str(), floor.result.parent_cpus.c_str(),
                   floor.result.child_cpus.c_str());
      std::exit(1);
    }
  }
  if (!two_cores) std::printf("  (one CPU allowed: no two-core floors)\n");
  return floors;
}

// Prints `micros` beside each floor, with the CPUs each process of the floor was allowed.
void PrintAgainstFloors(const std::vector<Floor>& floors, double micros) {
  for (const Floor& floor : floors) {
    std::printf("  vs %-38s %7.2f us  ratio %7.2fx  [parent CPUs %s, child CPUs %s]\n",
                floor.name.c_str(), floor.result.micros, micros / floor.result.micros,
                floor.result.parent_cpus.c_str(), floor.result.child_cpus.c_str());
  }
}

int RoundTrip(bool compare) {
  Setup();
  aclrtStream stream = nullptr;
  Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  aclrtStreamStatus status;
  const double acl =
      MedianMicros(7, 2000, [&] { Must(aclrtStreamQuery(stream, &status), "query"); });
  std::printf(
      "roundtrip: aclrtStreamQuery on an idle stream %.1f us (median of 7 x 2000; "
      "client CPUs %s, unpinned)\n",
      acl, AllowedCpus().c_str());
  if (compare) PrintAgainstFloors(MeasureFloors(7, 2000), acl);
  Must(aclrtDestroyStream(stream), "destroy");
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

int Launches(int count) {
  Setup();
  aclrtStream stream = nullptr;
  Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  void* word = nullptr;
  Must(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  Must(aclrtMemset(word, 4, 0, 4), "aclrtMemset");
  uint64_t args[1] = {static_cast<uint64_t>(reinterpret_cast<uintptr_t>(word))};
  std::vector<double> rates;
  for (int round = 0; round < 5; ++round) {
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      Must(aclsimLaunchKernel("add_one_u32", 1, args, sizeof(args), stream), "launch");
    }
    Must(aclrtSynchronizeStream(stream), "sync");
    rates.push_back(count / SecondsSince(start));
  }
  std::sort(rates.begin(), rates.end());
  uint32_t value = 0;
  Must(aclrtMemcpy(&value, 4, word, 4, ACL_MEMCPY_DEVICE_TO_HOST), "read back");
  if (value != 5u * count) {
    std::fprintf(stderr, "launches: expected %u increments, saw %u\n", 5u * count, value);
    return 1;
  }
  const char* address = std::getenv("ACLD_ADDRESS");
  // The median is the figure compared; the spread shows how much the run moved.
  std::printf("launches: %.0f add_one_u32 launches/s (%s, median of 5 x %d; min %.0f, max %.0f)\n",
              rates[2], address ? address : "default", count, rates.front(), rates.back());
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

int Copies(size_t mib) {
  Setup();
  const size_t bytes = mib << 20;
  std::vector<uint8_t> pageable(bytes, 1), other(bytes, 2);
  void* device = nullptr;
  void* pinned = nullptr;
  Must(aclrtMalloc(&device, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  Must(aclrtMallocHost(&pinned, bytes), "aclrtMallocHost");
  std::memset(pinned, 3, bytes);
  struct Path {
    const char* name;
    std::function<void()> copy;
    std::vector<double> gbps, of_memcpy;  // per round
  };
  // The floor first: one thread copying between two buffers whose pages are
  // already faulted in.
  std::vector<Path> paths = {
      {"memcpy", [&] { std::memcpy(other.data(), pageable.data(), bytes); }},
      {"H2D pageable",
       [&] {
         Must(aclrtMemcpy(device, bytes, pageable.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE),
              "H2D");
       }},
      {"D2H pageable",
       [&] {
         Must(aclrtMemcpy(other.data(), bytes, device, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "D2H");
       }},
      {"H2D pinned",
       [&] {
         Must(aclrtMemcpy(device, bytes, pinned, bytes, ACL_MEMCPY_HOST_TO_DEVICE), "H2D pinned");
       }},
      {"D2H pinned",
       [&] {
         Must(aclrtMemcpy(pinned, bytes, device, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "D2H pinned");
       }},
  };
  // Each sample moves at least 64 MiB, so that a small copy's figure is not
  // one clock read's worth of noise.
  const int copies_per_sample = static_cast<int>(std::max<size_t>(1, (size_t{64} << 20) / bytes));
  // Warm: page faults and staging set-up are not the steady state.
  for (Path& path : paths) path.copy();
  // Rounds take every path in turn, memcpy first, and each ratio is to the
  // memcpy of its own round: a drift of the machine's memory bandwidth during
  // the run moves both sides of it.
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    for (Path& path : paths) {
      const double micros = MedianMicros(1, copies_per_sample, path.copy);
      path.gbps.push_back(bytes / (micros * 1e-6) / 1e9);
      path.of_memcpy.push_back(path.gbps.back() / paths[0].gbps.back());
    }
  }
  auto median = [](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  std::printf("floor: memcpy of %zu MiB %.2f GB/s (one thread, median of %d rounds)\n", mib,
              median(paths[0].gbps), kRounds);
  std::string line = "copies " + std::to_string(mib) + " MiB: memcpy ";
  char figure[96];
  std::snprintf(figure, sizeof(figure), "%.2f GB/s", median(paths[0].gbps));
  line += figure;
  for (size_t i = 1; i < paths.size(); ++i) {
    std::snprintf(figure, sizeof(figure), "; %s %.2f (%.0f%%)", paths[i].name,
                  median(paths[i].gbps), 100 * median(paths[i].of_memcpy));
    line += figure;
  }
  std::printf("%s (medians of %d rounds, each ratio to its round's memcpy)\n", line.c_str(),
              kRounds);
  Must(aclrtFreeHost(pinned), "aclrtFreeHost");
  Must(aclrtFree(device), "aclrtFree");
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

void CountCallback(void* counter) { ++*static_cast<std::atomic<int>*>(counter); }

// With `compare`, also measures the floors and prints the chain's per-callback time beside them;
// off when several instances run at once, where one's floors would slow the others.
int HostFuncs(int count, int stream_count, bool compare) {
  Setup();
  std::vector<aclrtStream> streams(stream_count);
  for (auto& stream : streams) Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  std::atomic<int> calls{0};
  auto run = [&] {
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      Must(aclrtLaunchHostFunc(streams[i % stream_count], CountCallback, &calls), "launch");
    }
    for (auto& stream : streams) Must(aclrtSynchronizeStream(stream), "sync");
    return SecondsSince(start);
  };
  run();  // warm: callback threads and connections
  calls = 0;
  const double seconds = run();
  if (calls != count) {
    std::fprintf(stderr, "hostfuncs: %d of %d callbacks ran\n", calls.load(), count);
    return 1;
  }
  const double per_callback = seconds * 1e6 / count;
  std::printf("hostfuncs: %d over %d stream(s): %.1f us per callback, %.0f callbacks/s\n", count,
              stream_count, per_callback, count / seconds);
  if (compare) PrintAgainstFloors(MeasureFloors(5, 2000), per_callback);
  for (auto& stream : streams) Must(aclrtDestroyStream(stream), "destroy");
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

int Reports(int count) {
  Setup();
  aclrtContext context = nullptr;
  Must(aclrtGetCurrentContext(&context), "aclrtGetCurrentContext");
  aclrtStream stream = nullptr;
  Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  std::atomic<bool> stop{false};
  // Processing starts once the thread is subscribed: before that,
  // aclrtProcessReport fails (the thread has no stream to serve), as in CANN.
  std::atomic<bool> subscribed{false};
  std::thread processor([&] {
    Must(aclrtSetCurrentContext(context), "aclrtSetCurrentContext");
    while (!subscribed) std::this_thread::yield();
    while (!stop) {
      const aclError code = aclrtProcessReport(100);
      if (code != ACL_SUCCESS && code != ACL_ERROR_RT_REPORT_TIMEOUT) Must(code, "process");
    }
  });
  // The thread id CANN's samples pass: the processing thread's pthread_t.
  const auto processor_id = static_cast<uint64_t>(processor.native_handle());
  Must(aclrtSubscribeReport(processor_id, stream), "aclrtSubscribeReport");
  subscribed = true;
  std::atomic<int> calls{0};
  auto run = [&] {
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      Must(aclrtLaunchCallback(CountCallback, &calls, ACL_CALLBACK_BLOCK, stream), "launch");
    }
    Must(aclrtSynchronizeStream(stream), "sync");
    return SecondsSince(start);
  };
  run();  // warm
  calls = 0;
  // Three threads on two CPUs here (this one, the channel's reader, the
  // processing thread): one run moved between 4 and 17 us per callback from
  // run to run, so the figure is the median of several, beside their spread.
  constexpr int kRounds = 5;
  std::vector<double> micros;
  for (int round = 0; round < kRounds; ++round) micros.push_back(run() * 1e6 / count);
  Must(aclrtUnSubscribeReport(processor_id, stream), "aclrtUnSubscribeReport");
  stop = true;
  processor.join();
  if (calls != kRounds * count) {
    std::fprintf(stderr, "reports: %d of %d callbacks ran\n", calls.load(), kRounds * count);
    return 1;
  }
  std::sort(micros.begin(), micros.end());
  std::printf("reports: %d aclrtLaunchCallback on one stream: %.1f us per callback (median of %d "
              "x %d; min %.1f, max %.1f)\n",
              count, micros[kRounds / 2], kRounds, count, micros.front(), micros.back());
  Must(aclrtDestroyStream(stream), "destroy");
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

int Calls() {
  Setup();
  aclrtStream stream = nullptr;
  Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  void* word = nullptr;
  Must(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  uint32_t host = 0;
  aclrtStreamStatus status;
  aclrtEvent event = nullptr;
  Must(aclrtCreateEvent(&event), "aclrtCreateEvent");
  struct Kind {
    const char* name;
    std::function<void()> body;
  };
  const std::vector<Kind> kinds = {
      {"aclrtStreamQuery (idle stream)", [&] { Must(aclrtStreamQuery(stream, &status), "query"); }},
      {"aclrtSynchronizeStream (idle stream)",
       [&] { Must(aclrtSynchronizeStream(stream), "sync"); }},
      {"aclrtMemcpy 4 bytes host to device",
       [&] { Must(aclrtMemcpy(word, 4, &host, 4, ACL_MEMCPY_HOST_TO_DEVICE), "h2d"); }},
      {"aclrtMemcpy 4 bytes device to host",
       [&] { Must(aclrtMemcpy(&host, 4, word, 4, ACL_MEMCPY_DEVICE_TO_HOST), "d2h"); }},
      {"aclrtMalloc + aclrtFree (4 KiB)",
       [&] {
         void* block = nullptr;
         Must(aclrtMalloc(&block, 4096, ACL_MEM_MALLOC_HUGE_FIRST), "malloc");
         Must(aclrtFree(block), "free");
       }},
      {"aclrtCreateStream + aclrtDestroyStream",
       [&] {
         aclrtStream extra = nullptr;
         Must(aclrtCreateStream(&extra), "create");
         Must(aclrtDestroyStream(extra), "destroy");
       }},
      {"aclrtRecordEvent + aclrtSynchronizeEvent",
       [&] {
         Must(aclrtRecordEvent(event, stream), "record");
         Must(aclrtSynchronizeEvent(event), "sync event");
       }},
  };
  for (const Kind& kind : kinds) {
    std::printf("calls: %-42s %7.1f us (median of 7 x 1000)\n", kind.name,
                MedianMicros(7, 1000, kind.body));
  }
  Must(aclrtDestroyEvent(event), "destroy event");
  Must(aclrtFree(word), "free");
  Must(aclrtDestroyStream(stream), "destroy");
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

// What a client of `clients` reports to the parent.
struct ClientReport {
  uint32_t threads = 0;
  uint64_t rss_kib = 0;
  uint64_t calls = 0;
  double cpu_seconds = 0;  // this process's CPU time (user + system) over its calls
  uint32_t samples = 0;  // latencies that follow, in microseconds (float)
};

// A number from this process's /proc/self/status (e.g. "VmRSS", "Threads").
uint64_t OwnStatus(const char* field) {
  FILE* status = std::fopen("/proc/self/status", "r");
  char line[256];
  uint64_t value = 0;
  const size_t length = std::strlen(field);
  while (status != nullptr && std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::strncmp(line, field, length) == 0 && line[length] == ':') {
      value = std::strtoull(line + length + 1, nullptr, 10);
      break;
    }
  }
  if (status != nullptr) std::fclose(status);
  return value;
}

// This process's CPU time so far (all its threads, user and system).
double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void WriteAll(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, bytes, size);
    if (n <= 0) std::exit(1);
    bytes += n;
    size -= static_cast<size_t>(n);
  }
}

bool ReadAll(int fd, void* data, size_t size) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, bytes, size);
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// One client of `clients`: connects, says it is ready, waits for the start,
// calls for `seconds` (every `period_ms`, the first `phase` after the start),
// reports.
[[noreturn]] void RunClient(int ready_fd, int start_fd, int report_fd, int seconds,
                            int period_ms, Clock::duration phase) {
  Setup();
  aclrtStream stream = nullptr;
  Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  aclrtStreamStatus status;
  Must(aclrtStreamQuery(stream, &status), "query");
  const char ready = 'r';
  WriteAll(ready_fd, &ready, 1);
  char start;
  if (!ReadAll(start_fd, &start, 1)) std::exit(1);
  constexpr size_t kMaxSamples = 200000;
  std::vector<float> latencies;
  ClientReport report;
  const double cpu_before = OwnCpuSeconds();
  const auto begin = Clock::now();
  const auto end = begin + std::chrono::seconds(seconds);
  auto next = begin + phase;
  while (Clock::now() < end) {
    if (period_ms < 0) {
      usleep(100000);
      continue;
    }
    if (period_ms > 0) {
      const auto now = Clock::now();
      if (next > now) usleep(static_cast<useconds_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(next - now).count()));
      next += std::chrono::milliseconds(period_ms);
    }
    const auto call = Clock::now();
    Must(aclrtStreamQuery(stream, &status), "query");
    ++report.calls;
    if (latencies.size() < kMaxSamples) {
      latencies.push_back(static_cast<float>(SecondsSince(call) * 1e6));
    }
  }
  report.cpu_seconds = OwnCpuSeconds() - cpu_before;
  report.threads = static_cast<uint32_t>(OwnStatus("Threads"));
  report.rss_kib = OwnStatus("VmRSS");
  report.samples = static_cast<uint32_t>(latencies.size());
  WriteAll(report_fd, &report, sizeof(report));
  WriteAll(report_fd, latencies.data(), latencies.size() * sizeof(float));
  Must(aclrtDestroyStream(stream), "destroy");
  Must(aclFinalize(), "aclFinalize");
  std::exit(0);
}

// A newcomer: times aclInit up to the reply to its first call, writes the
// microseconds to `report_fd`.
[[noreturn]] void RunNewcomer(int report_fd) {
  const auto start = Clock::now();
  Setup();
  const float micros = static_cast<float>(SecondsSince(start) * 1e6);
  if (!acld::bench::WriteNewcomerReport(report_fd, {micros})) std::exit(1);
  Must(aclFinalize(), "aclFinalize");
  std::exit(0);
}

// What the newcomers of a run took, for its result line.
std::string NewcomerSummary(const std::vector<acld::bench::Newcomer>& newcomers,
                            acld::bench::NewcomerPlace place, acld::bench::NewcomerStart start) {
  const std::vector<float> sorted = acld::bench::SortedReplies(newcomers, 0);
  char line[224];
  std::snprintf(line, sizeof(line),
                "%zu newcomers (%s, %s), aclInit to first reply: p50 %.1f ms, p99 %.1f ms (",
                newcomers.size(), acld::bench::NewcomerStartName(start),
                acld::bench::NewcomerPlaceName(place), Percentile(sorted, 0.5) / 1000.0,
                Percentile(sorted, 0.99) / 1000.0);
  return line + acld::bench::SlowestNewcomer(newcomers, 0) + ")" +
         acld::bench::CpuTwins(newcomers);
}

int Clients(int count, int seconds, int period_ms, acld::bench::NewcomerPlace place,
            acld::bench::NewcomerStart newcomer_start) {
  int ready[2], start[2];
  if (pipe(ready) != 0 || pipe(start) != 0) return 1;
  std::vector<int> reports;
  std::vector<pid_t> children;
  // From the first fork: the clients connect while the others are forked.
  const auto connecting = Clock::now();
  const pid_t benchmark = getpid();
  for (int i = 0; i < count; ++i) {
    int report[2];
    if (pipe(report) != 0) return 1;
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      // A client never calls acld after the benchmark ended.
      acld::bench::DieWithBenchmark(benchmark);
      for (int fd : reports) close(fd);
      close(report[0]);
      RunClient(ready[1], start[0], report[1], seconds, period_ms,
                acld::bench::PeriodicPhase(i, count, period_ms));
    }
    close(report[1]);
    reports.push_back(report[0]);
    children.push_back(child);
  }
  // Every child holds the pipe's write end, so a child that dies before it is
  // ready shows as a child that exited, not as the end of the pipe.
  for (int ready_count = 0; ready_count < count;) {
    pollfd readable{ready[0], POLLIN, 0};
    if (poll(&readable, 1, 1000) > 0) {
      char byte;
      if (!ReadAll(ready[0], &byte, 1)) return 1;
      ++ready_count;
      continue;
    }
    int status = 0;
    if (waitpid(-1, &status, WNOHANG) > 0) {
      std::fprintf(stderr, "clients: a client failed before it was ready; stopping them all\n");
      for (pid_t child : children) kill(child, SIGKILL);
      while (waitpid(-1, &status, 0) > 0) {
      }
      return 1;
    }
  }
  const double connect_seconds = SecondsSince(connecting);
  std::printf("running %d clients\n", count);
  std::fflush(stdout);
  const std::string go(static_cast<size_t>(count), 'g');
  WriteAll(start[1], go.data(), go.size());
  // Within the clients' run, away from its start and end. Not beside idle
  // clients: what acld spends on them is their figure (issue #10's idle
  // cost), and 40 sessions opened and closed meanwhile would be most of it.
  const bool idle = period_ms < 0;
  std::vector<acld::bench::Newcomer> newcomers;
  if (!idle) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds * 0.1));
    newcomers = TimeNewcomers(std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(seconds * 0.8 / kNewcomers)),
                              place, newcomer_start, RunNewcomer, 1, /*cpu_twins=*/true);
  }
  const bool newcomer_failed = !idle && newcomers.empty();
  std::vector<float> latencies;
  uint64_t calls = 0;
  double client_cpu_seconds = 0;
  ClientReport first;
  for (size_t i = 0; i < reports.size(); ++i) {
    ClientReport report;
    if (!ReadAll(reports[i], &report, sizeof(report))) {
      std::fprintf(stderr, "clients: client %zu reported nothing\n", i);
      return 1;
    }
    std::vector<float> samples(report.samples);
    if (!ReadAll(reports[i], samples.data(), samples.size() * sizeof(float))) return 1;
    latencies.insert(latencies.end(), samples.begin(), samples.end());
    calls += report.calls;
    client_cpu_seconds += report.cpu_seconds;
    if (i == 0) first = report;
    close(reports[i]);
  }
  int failed = 0;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::sort(latencies.begin(), latencies.end());
  std::printf(
      "clients: %d, each one stream, aclrtStreamQuery %s for %d s: %.0f calls/s in total; "
      "latency p50 %.1f us, p99 %.1f us, max %.1f us; all connected in %.2f s; one client: "
      "%u threads, RSS %.1f MiB; clients' CPU per call %.1f us; %s"
      "%s\n",
      count,
      period_ms < 0    ? "never (idle)"
      : period_ms == 0 ? "back to back"
                       : ("every " + std::to_string(period_ms) + " ms").c_str(),
      seconds, calls / static_cast<double>(seconds), Percentile(latencies, 0.5),
      Percentile(latencies, 0.99),
      latencies.empty() ? 0.0 : latencies.back(), connect_seconds, first.threads,
      first.rss_kib / 1024.0, calls > 0 ? client_cpu_seconds * 1e6 / calls : 0.0,
      idle ? "no newcomers (idle run)" : NewcomerSummary(newcomers, place, newcomer_start).c_str(),
      failed > 0 ? " (SOME CLIENTS FAILED)" : newcomer_failed ? " (A NEWCOMER FAILED)" : "");
  return failed > 0 || newcomer_failed ? 1 : 0;
}

int Streams(int count) {
  Setup();
  std::vector<aclrtStream> streams(count);
  for (auto& stream : streams) Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  std::printf("ready %d streams\n", count);
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  acld::bench::RunIfExecutedNewcomer(argc, argv, RunNewcomer);
  const std::string mode = argc > 1 ? argv[1] : "";
  const long number = argc > 2 ? std::atol(argv[2]) : 0;
  if (mode == "roundtrip") return RoundTrip(!(argc > 2 && std::string(argv[2]) == "nocompare"));
  if (mode == "launches") return Launches(number > 0 ? static_cast<int>(number) : 200000);
  if (mode == "copies") return Copies(number > 0 ? static_cast<size_t>(number) : 64);
  if (mode == "streams") return Streams(number > 0 ? static_cast<int>(number) : 1);
  if (mode == "calls") return Calls();
  if (mode == "reports") return Reports(number > 0 ? static_cast<int>(number) : 10000);
  if (mode == "clients" && argc > 4) {
    return Clients(std::max(1, static_cast<int>(number)), std::max(1, std::atoi(argv[3])),
                   std::atoi(argv[4]), acld::bench::NewcomerPlaceOf(argc, argv, 5),
                   acld::bench::NewcomerStartOf(argc, argv, 5));
  }
  if (mode == "hostfuncs") {
    return HostFuncs(number > 0 ? static_cast<int>(number) : 10000,
                     argc > 3 ? std::max(1, std::atoi(argv[3])) : 1,
                     argc > 4 && std::string(argv[4]) == "compare");
  }
  std::fprintf(stderr,
               "usage: acld_bench roundtrip | launches N | copies MIB | streams N |"
               " hostfuncs N S [compare] | reports N | calls |"
               " clients N SECONDS PERIOD_MS [own-session] [forked]\n");
  return 2;
}
