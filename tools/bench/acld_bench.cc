// Whole-process benchmarks of acld, each printing the project's figure next to
// a baseline measured in the same run. tools/bench/run.sh drives them.
//
//   acld_bench roundtrip      aclrtStreamQuery on an idle stream vs a raw
//                             Unix-socket ping-pong between two processes
//   acld_bench launches N     N async add_one_u32 launches + one sync, per second
//   acld_bench copies MIB     H2D / D2H of MIB MiB (pageable and pinned) vs memcpy
//   acld_bench streams N      opens N streams, prints "ready", waits for a line
//   acld_bench hostfuncs N S  N host funcs spread over S streams; with S = 1 a
//                             chain, compared with a raw socket ping-pong
//
// The runtime is whatever ACLD_ADDRESS says (a daemon, or "embedded").
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "acl/acl.h"

namespace {

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

// Pins the calling thread to `cpu` when the machine has more than one;
// returns the mask to restore.
cpu_set_t PinTo(int cpu) {
  cpu_set_t previous;
  sched_getaffinity(0, sizeof(previous), &previous);
  if (CPU_COUNT(&previous) > 1) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  return previous;
}

// The raw baseline: a 64-byte ping-pong between two processes over a Unix
// socket. Where the scheduler puts the two decides the figure: pinned to two
// different cores a round trip takes a few microseconds on this VM, while
// unpinned runs often land both on one core and pay wake-up latency (tens of
// microseconds). Both are reported; see docs/performance.md.
double RawSocketPingPongMicros(int rounds, int ops, bool pinned) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::exit(1);
  cpu_set_t previous;
  sched_getaffinity(0, sizeof(previous), &previous);
  if (pinned) PinTo(0);
  const pid_t child = fork();
  char message[64] = {};
  if (child == 0) {
    if (pinned) PinTo(1);
    close(fds[0]);
    while (read(fds[1], message, sizeof(message)) == sizeof(message)) {
      if (write(fds[1], message, sizeof(message)) != sizeof(message)) break;
    }
    _exit(0);
  }
  close(fds[1]);
  const double micros = MedianMicros(rounds, ops, [&] {
    if (write(fds[0], message, sizeof(message)) != sizeof(message) ||
        read(fds[0], message, sizeof(message)) != sizeof(message)) {
      std::exit(1);
    }
  });
  close(fds[0]);
  waitpid(child, nullptr, 0);
  sched_setaffinity(0, sizeof(previous), &previous);
  return micros;
}

int RoundTrip() {
  Setup();
  aclrtStream stream = nullptr;
  Must(aclrtCreateStream(&stream), "aclrtCreateStream");
  aclrtStreamStatus status;
  const double acl =
      MedianMicros(7, 2000, [&] { Must(aclrtStreamQuery(stream, &status), "query"); });
  const double unpinned = RawSocketPingPongMicros(7, 2000, false);
  const double pinned = RawSocketPingPongMicros(7, 2000, true);
  std::printf(
      "roundtrip: aclrtStreamQuery %.1f us; raw unix socket ping-pong %.1f us unpinned "
      "(ratio %.2fx), %.1f us pinned to two cores (ratio %.2fx)\n",
      acl, unpinned, acl / unpinned, pinned, acl / pinned);
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
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      Must(aclsimLaunchKernel("add_one_u32", 1, args, sizeof(args), stream), "launch");
    }
    Must(aclrtSynchronizeStream(stream), "sync");
    best = std::max(best, count / SecondsSince(start));
  }
  uint32_t value = 0;
  Must(aclrtMemcpy(&value, 4, word, 4, ACL_MEMCPY_DEVICE_TO_HOST), "read back");
  if (value != 5u * count) {
    std::fprintf(stderr, "launches: expected %u increments, saw %u\n", 5u * count, value);
    return 1;
  }
  const char* address = std::getenv("ACLD_ADDRESS");
  std::printf("launches: %.0f add_one_u32 launches/s (%s, best of 5 x %d)\n", best,
              address ? address : "default", count);
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
  auto gbps = [&](auto body) {
    body();  // warm: page faults and staging set-up are not the steady state
    const double micros = MedianMicros(5, 1, body);
    return bytes / (micros * 1e-6) / 1e9;
  };
  const double memcpy_gbps = gbps([&] { std::memcpy(other.data(), pageable.data(), bytes); });
  const double h2d_pageable = gbps([&] {
    Must(aclrtMemcpy(device, bytes, pageable.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "H2D");
  });
  const double d2h_pageable = gbps([&] {
    Must(aclrtMemcpy(other.data(), bytes, device, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "D2H");
  });
  const double h2d_pinned = gbps([&] {
    Must(aclrtMemcpy(device, bytes, pinned, bytes, ACL_MEMCPY_HOST_TO_DEVICE), "H2D pinned");
  });
  const double d2h_pinned = gbps([&] {
    Must(aclrtMemcpy(pinned, bytes, device, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "D2H pinned");
  });
  std::printf(
      "copies %zu MiB: memcpy %.2f GB/s; H2D pageable %.2f (%.0f%%), D2H pageable %.2f "
      "(%.0f%%), H2D pinned %.2f (%.0f%%), D2H pinned %.2f (%.0f%%)\n",
      mib, memcpy_gbps, h2d_pageable, 100 * h2d_pageable / memcpy_gbps, d2h_pageable,
      100 * d2h_pageable / memcpy_gbps, h2d_pinned, 100 * h2d_pinned / memcpy_gbps, d2h_pinned,
      100 * d2h_pinned / memcpy_gbps);
  Must(aclrtFreeHost(pinned), "aclrtFreeHost");
  Must(aclrtFree(device), "aclrtFree");
  Must(aclFinalize(), "aclFinalize");
  return 0;
}

void CountCallback(void* counter) { ++*static_cast<std::atomic<int>*>(counter); }

int HostFuncs(int count, int stream_count) {
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
  std::printf("hostfuncs: %d over %d stream(s): %.1f us per callback, %.0f callbacks/s", count,
              stream_count, per_callback, count / seconds);
  if (stream_count == 1) {
    const double unpinned = RawSocketPingPongMicros(5, 2000, false);
    const double pinned = RawSocketPingPongMicros(5, 2000, true);
    std::printf(
        "; raw unix socket ping-pong %.1f us unpinned (ratio %.2fx), %.1f us pinned to "
        "two cores (ratio %.2fx)",
        unpinned, per_callback / unpinned, pinned, per_callback / pinned);
  }
  std::printf("\n");
  for (auto& stream : streams) Must(aclrtDestroyStream(stream), "destroy");
  Must(aclFinalize(), "aclFinalize");
  return 0;
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
  const std::string mode = argc > 1 ? argv[1] : "";
  const long number = argc > 2 ? std::atol(argv[2]) : 0;
  if (mode == "roundtrip") return RoundTrip();
  if (mode == "launches") return Launches(number > 0 ? static_cast<int>(number) : 200000);
  if (mode == "copies") return Copies(number > 0 ? static_cast<size_t>(number) : 64);
  if (mode == "streams") return Streams(number > 0 ? static_cast<int>(number) : 1);
  if (mode == "hostfuncs") {
    return HostFuncs(number > 0 ? static_cast<int>(number) : 10000,
                     argc > 3 ? std::max(1, std::atoi(argv[3])) : 1);
  }
  std::fprintf(stderr, "usage: acld_bench roundtrip | launches N | copies MIB | streams N\n");
  return 2;
}
