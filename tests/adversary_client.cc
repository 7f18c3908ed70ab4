// A client process for the adversarial suite: hostile tenants that use only
// the public AscendCL API, and the well-behaved tenant that must keep working
// beside them. Prints "FAIL: ..." and exits 1 when an expectation fails.
//
//   huge_malloc             sizes near 2^64 are refused, never wrapped
//   scribble MIB            fills MIB of device memory with a pattern, frees, exits
//   read_fresh MIB          fresh device memory reads as zeros
//   reset_race              a pending synchronization vs aclrtResetDevice
//   quota_probe RESERVED    contexts/events/streams/memory stop at their limits
//                           (RESERVED: what the backend reserves for 1 byte)
//   flood DEVICE STREAMS    busy kernels on many streams until stdin closes
//   latency [ROUNDS]        prints the worst of ROUNDS (20) 1 ms-kernel round
//                           trips on device 0
//   fill_queue [together]   keeps its queued work at the session's limit until killed;
//                           with `together`, prints "ready" once its session is set
//                           up and starts only on a line on stdin
//   burst                   a thousand launches behind a short busy kernel
//   callback_backlog COUNT  COUNT non-blocking callbacks behind a 300 ms kernel
//   trap_flood COUNT        COUNT failing kernels (log flooding)
//   workload                copies and kernels, checked, until stdin closes
//   big_transfers MIB       synchronous fills and device-to-device copies of
//                           MIB MiB, checked, until stdin closes
//   callback_fills MIB      a blocking callback, then an asynchronous fill of
//                           MIB MiB behind it, checked, until stdin closes
//   random_draws MIB        random draws of MIB MiB behind a busy kernel until
//                           stdin closes
//   allocation_cap N [FLAG [exit]]  1-byte allocations until refused (at most
//                           N + 1), the refusal naming FLAG; held until stdin
//                           closes, or not with `exit`
//   host_block_cap N FLAG [exit]    the same with 4 KiB aclrtMallocHost blocks;
//                           once refused, a 1 MiB pageable round trip still works
//   stream_cap N FLAG [exit]        the same with streams (aclrtCreateStream)
//   event_cap N FLAG [exit]         the same with events (aclrtCreateEvent)
//   notify_cap S FLAG [within]      S streams, each with 8 blocking host funcs
//                           (acld's most in flight on a stream) whose first waits
//                           for stdin to close; on --backend=acl each queued one
//                           holds one of the device's notifies; prints "queued";
//                           a stream's synchronization must then report the
//                           points past the uid's share refused, naming FLAG.
//                           With `within`, nothing waits and all must run.
//                           Prints "ran K"
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_sim.h"
#include "tests/check.h"

namespace {

using scenario::Addr;
using scenario::Check;
using scenario::CheckCode;

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void Launch(const char* kernel, std::vector<uint64_t> args, uint32_t blocks, aclrtStream stream) {
  CheckCode(aclsimLaunchKernel(kernel, blocks, args.data(), args.size() * 8, stream), ACL_SUCCESS,
            std::string("aclsimLaunchKernel ") + kernel);
}

// A session (scenario::Setup) with a stream of its own and a word of
// device memory its kernels count in.
struct Counter {
  void* word;
  aclrtStream stream;
};
Counter SetUpCounter() {
  scenario::Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  return {word, stream};
}

int HugeMalloc() {
  scenario::Setup();
  const uint64_t sizes[] = {~uint64_t{0}, ~uint64_t{0} - 1, ~uint64_t{0} - 511,
                            ~uint64_t{0} - 512, uint64_t{1} << 63, uint64_t{1} << 48};
  for (uint64_t size : sizes) {
    void* pointer = nullptr;
    CheckCode(aclrtMalloc(&pointer, size, ACL_MEM_MALLOC_HUGE_FIRST),
              ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc(" + std::to_string(size) + ")");
  }
  // The next allocation is an ordinary one, and reads past its end are refused.
  void* pointer = nullptr;
  CheckCode(aclrtMalloc(&pointer, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc(64)");
  std::vector<uint8_t> out(1 << 20);
  CheckCode(aclrtMemcpy(out.data(), out.size(), pointer, out.size(), ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM, "aclrtMemcpy past the end");
  std::printf("huge_malloc done\n");
  return scenario::Teardown();
}

int Scribble(size_t mib) {
  scenario::Setup();
  void* pointer = nullptr;
  CheckCode(aclrtMalloc(&pointer, mib << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(pointer, mib << 20, 0xa5, mib << 20), ACL_SUCCESS, "aclrtMemset");
  CheckCode(aclrtFree(pointer), ACL_SUCCESS, "aclrtFree");
  std::printf("scribbled\n");
  std::fflush(stdout);
  _exit(scenario::ExitCode());  // no finalize: the daemon reaps what is left
}

int ReadFresh(size_t mib) {
  scenario::Setup();
  std::vector<uint8_t> out(mib << 20, 0xff);
  for (int round = 0; round < 4; ++round) {
    void* pointer = nullptr;
    CheckCode(aclrtMalloc(&pointer, out.size(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
              "aclrtMalloc");
    CheckCode(aclrtMemcpy(out.data(), out.size(), pointer, out.size(), ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS, "aclrtMemcpy D2H");
    size_t nonzero = 0;
    for (uint8_t byte : out) nonzero += byte != 0;
    Check(nonzero == 0, "fresh device memory held " + std::to_string(nonzero) +
                            " non-zero bytes of someone else's");
    CheckCode(aclrtFree(pointer), ACL_SUCCESS, "aclrtFree");
  }
  std::printf("read_fresh done\n");
  return scenario::Teardown();
}

int ResetRace() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* pointer = nullptr;
  CheckCode(aclrtMalloc(&pointer, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  Launch("spin_add_one_u32", {Addr(pointer), 300000}, 1, stream);
  std::atomic<aclError> sync_code{-1};
  std::thread syncer([&] { sync_code = aclrtSynchronizeStream(stream); });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const Clock::time_point start = Clock::now();
  CheckCode(aclrtResetDevice(0), ACL_SUCCESS, "aclrtResetDevice");
  const double waited = MillisSince(start);
  syncer.join();
  // CANN: a reset waits for the work already launched; the pending
  // synchronization then reports the truth (the kernel ran).
  Check(waited >= 200, "aclrtResetDevice returned after " + std::to_string(waited) +
                           " ms, before the launched kernel finished");
  Check(sync_code == ACL_SUCCESS,
        "the pending aclrtSynchronizeStream returned " + std::to_string(sync_code.load()));
  std::printf("reset_race done\n");
  return scenario::Teardown();
}

int QuotaProbe(uint64_t reserved_per_byte) {
  scenario::Setup();
  // Run with --max_streams_per_session=4 --max_contexts_per_session=2
  // --max_events_per_session=3 --default_memory_quota=20000.
  int contexts = 0;
  aclError code = ACL_SUCCESS;
  while (contexts < 100) {
    aclrtContext context = nullptr;
    code = aclrtCreateContext(&context, 0);
    if (code != ACL_SUCCESS) break;
    ++contexts;
  }
  Check(contexts <= 2, "created " + std::to_string(contexts) + " contexts under a cap of 2");
  Check(code == ACL_ERROR_RT_OVER_LIMIT || code == ACL_ERROR_RT_NO_STREAM_RESOURCE,
        "the context past the cap failed with " + std::to_string(code));
  int streams = 0;
  while (streams < 100) {
    aclrtStream stream = nullptr;
    if (aclrtCreateStream(&stream) != ACL_SUCCESS) break;
    ++streams;
  }
  // Default streams (device 0's and each context's) count too.
  Check(streams + contexts + 1 <= 4, "held " + std::to_string(streams + contexts + 1) +
                                         " streams under a quota of 4");
  int events = 0;
  while (events < 100) {
    aclrtEvent event = nullptr;
    code = aclrtCreateEvent(&event);
    if (code != ACL_SUCCESS) break;
    ++events;
  }
  Check(events == 3, "created " + std::to_string(events) + " events under a cap of 3");
  CheckCode(code, ACL_ERROR_RT_NO_EVENT_RESOURCE, "aclrtCreateEvent past the cap");
  int allocations = 0;
  while (allocations < 1000) {
    void* pointer = nullptr;
    if (aclrtMalloc(&pointer, 1, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) break;
    ++allocations;
  }
  // Each 1-byte allocation reserves `reserved_per_byte` bytes of the device.
  Check(reserved_per_byte > 0 &&
            static_cast<uint64_t>(allocations) <= 20000 / reserved_per_byte,
        "made " + std::to_string(allocations) + " allocations of " +
            std::to_string(reserved_per_byte) + " reserved bytes under a 20000-byte quota");
  Check(allocations > 0, "no allocation fitted under a 20000-byte quota");
  std::printf("quota_probe done\n");
  return scenario::Teardown();
}

int Flood(int32_t device, int streams) {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  CheckCode(aclrtSetDevice(device), ACL_SUCCESS, "aclrtSetDevice");
  void* pointer = nullptr;
  CheckCode(aclrtMalloc(&pointer, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  std::vector<aclrtStream> handles(streams);
  for (auto& stream : handles) {
    CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  }
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    // Keep every stream busy: instant kernels and short busy ones, refilled.
    while (!stop) {
      for (auto& stream : handles) {
        for (int i = 0; i < 8; ++i) Launch("add_one_u32", {Addr(pointer)}, 1, stream);
        Launch("spin_add_one_u32", {Addr(pointer), 2000}, 1, stream);
      }
      aclrtSynchronizeStream(handles.back());
    }
  });
  std::printf("flooding\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  stop = true;
  feeder.join();
  std::printf("flood done\n");
  return scenario::Teardown();
}

// Keeps its queued work at --max_queued_bytes_per_session: a kernel that
// spins for a minute, then launches behind it until acld stops taking them.
int FillQueue(bool together) {
  const auto [pointer, stream] = SetUpCounter();
  if (together) {
    // Another filler of the same user must not reach the shared limit while
    // this one still sets up (its set-up would wait out the patience).
    std::printf("ready\n");
    std::fflush(stdout);
    std::string go;
    std::getline(std::cin, go);
  }
  Launch("spin_add_one_u32", {Addr(pointer), 60000000}, 1, stream);
  std::printf("filling\n");
  std::fflush(stdout);
  // Blocks once acld reads no more of this session's requests; the test
  // kills it. A launch refused past the hard ceiling changes nothing.
  const uint64_t args[] = {Addr(pointer)};
  for (int i = 0; i < 10000000; ++i) {
    aclsimLaunchKernel("add_one_u32", 1, args, sizeof(args), stream);
  }
  std::printf("launched\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  return 0;
}

// A thousand launches at once, then their synchronization.
int Burst() {
  const auto [pointer, stream] = SetUpCounter();
  Launch("spin_add_one_u32", {Addr(pointer), 10000}, 1, stream);  // the others queue behind it
  for (int i = 0; i < 1000; ++i) Launch("add_one_u32", {Addr(pointer)}, 1, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  return scenario::Teardown();
}

void IgnoreReport(void*) {}

// `count` callbacks that do not block, queued behind a kernel that spins for
// 300 ms: when it ends, acld passes them one after another (each is resumed
// as soon as it is reached). Then the stream's synchronization.
int CallbackBacklog(int count) {
  const auto [pointer, stream] = SetUpCounter();
  const uint64_t me = static_cast<uint64_t>(pthread_self());
  CheckCode(aclrtSubscribeReport(me, stream), ACL_SUCCESS, "aclrtSubscribeReport");
  Launch("spin_add_one_u32", {Addr(pointer), 300000}, 1, stream);
  for (int i = 0; i < count; ++i) {
    CheckCode(aclrtLaunchCallback(IgnoreReport, nullptr, ACL_CALLBACK_NO_BLOCK, stream),
              ACL_SUCCESS, "aclrtLaunchCallback");
  }
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  CheckCode(aclrtUnSubscribeReport(me, stream), ACL_SUCCESS, "aclrtUnSubscribeReport");
  std::printf("callback_backlog done\n");
  return scenario::Teardown();
}

int Latency(int rounds) {
  const auto [pointer, stream] = SetUpCounter();
  double worst = 0;
  for (int i = 0; i < rounds; ++i) {
    const Clock::time_point start = Clock::now();
    Launch("spin_add_one_u32", {Addr(pointer), 1000}, 1, stream);
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
    worst = std::max(worst, MillisSince(start));
  }
  std::printf("worst_ms=%.1f\n", worst);
  return scenario::Teardown();
}

int TrapFlood(int count) {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  for (int i = 0; i < count; ++i) Launch("trap", {}, 1, stream);
  const aclError code = aclrtSynchronizeStream(stream);
  Check(code == ACL_ERROR_RT_AICORE_EXCEPTION, "sync after traps: " + std::to_string(code));
  std::printf("trap_flood done\n");
  return scenario::Teardown();
}

// Sets `stop` when stdin closes (or says anything): how the tests end the
// modes that run until then.
std::thread StopWhenStdinCloses(std::atomic<bool>& stop) {
  return std::thread([&stop] {
    std::string line;
    std::getline(std::cin, line);
    stop = true;
  });
}

// Reads the byte at `offset` of device buffer `buffer`.
uint8_t ByteAt(void* buffer, uint64_t offset) {
  uint8_t byte = 0;
  CheckCode(aclrtMemcpy(&byte, 1, static_cast<uint8_t*>(buffer) + offset, 1,
                        ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "aclrtMemcpy (device to host)");
  return byte;
}

// Fills one half of its memory and copies it to the other, each call a
// synchronous one of MIB / 2 MiB, and checks the first, a middle and the last
// byte of each, until stdin closes.
int BigTransfers(uint64_t mib) {
  scenario::Setup();
  const uint64_t half = (mib << 20) / 2;
  void* buffers[2] = {nullptr, nullptr};
  for (void*& buffer : buffers) {
    CheckCode(aclrtMalloc(&buffer, half, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  }
  std::atomic<bool> stop{false};
  std::thread watcher = StopWhenStdinCloses(stop);
  std::printf("filling\n");
  std::fflush(stdout);
  int rounds = 0;
  while (!stop && scenario::Failures() == 0) {
    const int value = 1 + rounds % 250;
    CheckCode(aclrtMemset(buffers[0], half, value, half), ACL_SUCCESS, "aclrtMemset");
    CheckCode(aclrtMemcpy(buffers[1], half, buffers[0], half, ACL_MEMCPY_DEVICE_TO_DEVICE),
              ACL_SUCCESS, "aclrtMemcpy (device to device)");
    for (void* buffer : buffers) {
      for (uint64_t offset : {uint64_t{0}, half / 2 + 12345, half - 1}) {
        Check(ByteAt(buffer, offset) == value, "byte " + std::to_string(offset) + " is not " +
                                                   std::to_string(value));
      }
    }
    ++rounds;
  }
  watcher.join();
  std::printf("big_transfers rounds=%d\n", rounds);
  return scenario::Teardown();
}

// Behind a 1 ms busy kernel (so that it starts on the device's thread),
// draws MIB MiB of uniform floats, again and again until stdin closes, and
// checks the last number of each draw is in [0, 1).
int RandomDraws(uint64_t mib) {
  const auto [word, stream] = SetUpCounter();
  const uint64_t count = (mib << 20) / 4;
  void* numbers = nullptr;
  CheckCode(aclrtMalloc(&numbers, count * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
            "aclrtMalloc");
  auto value = [](const void* bytes, uint8_t size) {
    aclrtRandomParaInfo info{};
    std::memcpy(info.valueOrAddr, bytes, size);
    info.size = size;
    return info;
  };
  const float low = 0.0f, high = 1.0f;
  const uint64_t seed = 5;
  aclrtRandomNumTaskInfo task{};
  task.dataType = ACL_FLOAT;
  task.randomNumFuncParaInfo.funcType = ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS;
  task.randomNumFuncParaInfo.paramInfo.uniformDisInfo.min = value(&low, 4);
  task.randomNumFuncParaInfo.paramInfo.uniformDisInfo.max = value(&high, 4);
  task.randomSeed = value(&seed, 8);
  task.randomNum = value(&count, 8);
  task.randomResultAddr = numbers;
  task.randomCounterAddr = word;  // zeros
  std::atomic<bool> stop{false};
  std::thread watcher = StopWhenStdinCloses(stop);
  std::printf("drawing\n");
  std::fflush(stdout);
  int rounds = 0;
  while (!stop && scenario::Failures() == 0) {
    Launch("spin_add_one_u32", {Addr(word) + 32, 1000}, 1, stream);
    CheckCode(aclrtRandomNumAsync(&task, stream, nullptr), ACL_SUCCESS, "aclrtRandomNumAsync");
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
    float last = -1;
    CheckCode(aclrtMemcpy(&last, 4, static_cast<float*>(numbers) + count - 1, 4,
                          ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS, "aclrtMemcpy (device to host)");
    Check(last >= 0.0f && last < 1.0f, "the draw's last number " + std::to_string(last));
    ++rounds;
  }
  watcher.join();
  std::printf("random_draws rounds=%d\n", rounds);
  return scenario::Teardown();
}

// A 1 MiB round trip through pageable memory: larger than a message carries
// inline, so it needs the session's staging segment.
void PageableRoundTrip() {
  constexpr size_t kBytes = 1 << 20;
  std::vector<uint8_t> out(kBytes), back(kBytes);
  for (size_t i = 0; i < kBytes; ++i) out[i] = static_cast<uint8_t>(i * 7 + 3);
  void* device = nullptr;
  CheckCode(aclrtMalloc(&device, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemcpy(device, kBytes, out.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS, "a pageable copy beside full segment caps (host to device)");
  CheckCode(aclrtMemcpy(back.data(), kBytes, device, kBytes, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "a pageable copy beside full segment caps (device to host)");
  Check(out == back, "the pageable round trip's bytes differ");
  CheckCode(aclrtFree(device), ACL_SUCCESS, "aclrtFree");
}

// Allocates with `allocate` until acld refuses one (at most LIMIT + 1),
// checks that the refusal is `refusal` and names `flag`, runs `then_also`,
// prints "held N", holds what it got until stdin closes (unless `hold` is false), then checks that a free makes
// room for one more.
int HoldUntilRefused(uint64_t limit, const std::string& flag, bool hold, aclError refusal,
                     const std::function<aclError(void**)>& allocate,
                     const std::function<aclError(void*)>& release,
                     const std::function<void()>& then_also = nullptr) {
  scenario::Setup();
  std::vector<void*> held;
  aclError code = ACL_SUCCESS;
  while (held.size() <= limit) {
    void* pointer = nullptr;
    code = allocate(&pointer);
    if (code != ACL_SUCCESS) break;
    held.push_back(pointer);
  }
  CheckCode(code, refusal, "the allocation past the cap");
  const char* recent = aclGetRecentErrMsg();  // read once: reading clears it
  const std::string message = recent == nullptr ? "" : recent;
  Check(message.find(flag) != std::string::npos,
        "the refusal's message does not name " + flag + ": " + message);
  if (then_also != nullptr) then_also();
  std::printf("held %zu\n", held.size());
  std::fflush(stdout);
  if (hold) {
    std::atomic<bool> stop{false};
    StopWhenStdinCloses(stop).join();
  }
  if (!held.empty()) {
    CheckCode(release(held.back()), ACL_SUCCESS, "free");
    CheckCode(allocate(&held.back()), ACL_SUCCESS, "an allocation after a free");
  }
  return scenario::Teardown();
}

// A thread in the caller's context that runs its subscribed host funcs
// (aclrtProcessReport) until `stop`.
std::thread StartReporter(std::atomic<bool>& stop) {
  aclrtContext context = nullptr;
  CheckCode(aclrtGetCurrentContext(&context), ACL_SUCCESS, "aclrtGetCurrentContext");
  return std::thread([&stop, context] {
    aclrtSetCurrentContext(context);
    while (!stop) aclrtProcessReport(100);
  });
}

// Behind a callback that blocks its stream, a fill of MIB MiB: the thread that
// passes the answered callback on must not run the whole fill.
int CallbackFills(uint64_t mib) {
  const auto [word, stream] = SetUpCounter();
  const uint64_t bytes = mib << 20;
  void* buffer = nullptr;
  CheckCode(aclrtMalloc(&buffer, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  std::atomic<bool> stop{false};
  std::thread reporter = StartReporter(stop);
  CheckCode(aclrtSubscribeReport(static_cast<uint64_t>(reporter.native_handle()), stream),
            ACL_SUCCESS, "aclrtSubscribeReport");
  std::thread watcher = StopWhenStdinCloses(stop);
  std::printf("filling\n");
  std::fflush(stdout);
  int rounds = 0;
  while (!stop && scenario::Failures() == 0) {
    const int value = 1 + rounds % 250;
    CheckCode(aclrtLaunchCallback(IgnoreReport, nullptr, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS,
              "aclrtLaunchCallback");
    CheckCode(aclrtMemsetAsync(buffer, bytes, value, bytes, stream), ACL_SUCCESS,
              "aclrtMemsetAsync");
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
    Check(ByteAt(buffer, bytes - 1) == value, "the fill's last byte");
    ++rounds;
  }
  watcher.join();
  reporter.join();
  std::printf("callback_fills rounds=%d\n", rounds);
  return scenario::Teardown();
}

std::atomic<bool> g_first_released{false};
std::atomic<int> g_host_funcs_ran{0};

void WaitForRelease(void*) {
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (!g_first_released && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ++g_host_funcs_ran;
}

void CountRun(void*) { ++g_host_funcs_ran; }

int NotifyCap(uint64_t streams, const std::string& flag, bool within) {
  constexpr int kPointsPerStream = 8;
  scenario::Setup();
  std::atomic<bool> stop{false};
  std::thread reporter = StartReporter(stop);
  g_first_released = within;
  std::vector<aclrtStream> queues(streams);
  for (aclrtStream& stream : queues) {
    CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
    CheckCode(aclrtSubscribeReport(static_cast<uint64_t>(reporter.native_handle()), stream),
              ACL_SUCCESS, "aclrtSubscribeReport");
    CheckCode(aclrtLaunchCallback(WaitForRelease, nullptr, ACL_CALLBACK_BLOCK, stream),
              ACL_SUCCESS, "aclrtLaunchCallback (the first)");
    for (int i = 1; i < kPointsPerStream; ++i) {
      CheckCode(aclrtLaunchCallback(CountRun, nullptr, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS,
                "aclrtLaunchCallback");
    }
  }
  std::printf("queued\n");
  std::fflush(stdout);
  if (!within) {
    std::atomic<bool> closed{false};
    StopWhenStdinCloses(closed).join();
    g_first_released = true;
  }
  int refused = 0;
  for (aclrtStream stream : queues) {
    const aclError synchronized = aclrtSynchronizeStream(stream);
    const char* recent = aclGetRecentErrMsg();  // read once: reading clears it
    const std::string message = recent == nullptr ? "" : recent;
    if (synchronized == ACL_SUCCESS) continue;
    ++refused;
    CheckCode(synchronized, ACL_ERROR_RT_NO_NOTIFY_RESOURCE,
              "the synchronization after points past the share");
    Check(message.find(flag) != std::string::npos,
          "the refusal's message does not name " + flag + ": " + message);
  }
  if (within) {
    Check(refused == 0, "a point was refused");
    Check(g_host_funcs_ran == static_cast<int>(streams) * kPointsPerStream,
          "not every host func ran");
  } else {
    Check(refused > 0, "no point was refused");
  }
  stop = true;
  reporter.join();
  std::printf("ran %d\n", g_host_funcs_ran.load());
  return scenario::Teardown();
}

int Workload() {
  scenario::Setup();
  constexpr size_t kWords = 4096;
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  std::vector<uint32_t> in(kWords), out(kWords);
  std::atomic<bool> stop{false};
  std::thread watcher = StopWhenStdinCloses(stop);
  int rounds = 0;
  while (!stop && scenario::Failures() == 0) {
    void* pointer = nullptr;
    CheckCode(aclrtMalloc(&pointer, kWords * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
              "aclrtMalloc");
    for (size_t i = 0; i < kWords; ++i) in[i] = static_cast<uint32_t>(rounds * 7 + i);
    CheckCode(aclrtMemcpyAsync(pointer, kWords * 4, in.data(), kWords * 4,
                               ACL_MEMCPY_HOST_TO_DEVICE, stream),
              ACL_SUCCESS, "aclrtMemcpyAsync H2D");
    Launch("add_one_u32", {Addr(pointer)}, kWords, stream);
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
    CheckCode(aclrtMemcpy(out.data(), kWords * 4, pointer, kWords * 4, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_SUCCESS, "aclrtMemcpy D2H");
    for (size_t i = 0; i < kWords; ++i) {
      if (out[i] != in[i] + 1) {
        Check(false, "round " + std::to_string(rounds) + ": word " + std::to_string(i) + " is " +
                         std::to_string(out[i]));
        break;
      }
    }
    CheckCode(aclrtFree(pointer), ACL_SUCCESS, "aclrtFree");
    if (++rounds == 1) {
      std::printf("working\n");
      std::fflush(stdout);
    }
  }
  watcher.join();
  std::printf("workload rounds=%d\n", rounds);
  return scenario::Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto number = [&](int index) { return argc > index ? std::strtoull(argv[index], nullptr, 0) : 0; };
  if (mode == "huge_malloc") return HugeMalloc();
  if (mode == "scribble") return Scribble(number(2));
  if (mode == "read_fresh") return ReadFresh(number(2));
  if (mode == "reset_race") return ResetRace();
  if (mode == "quota_probe" && argc > 2) return QuotaProbe(number(2));
  if (mode == "flood") return Flood(static_cast<int32_t>(number(2)), static_cast<int>(number(3)));
  if (mode == "latency") return Latency(argc > 2 ? static_cast<int>(number(2)) : 20);
  if (mode == "fill_queue") return FillQueue(argc > 2 && std::string(argv[2]) == "together");
  if (mode == "burst") return Burst();
  if (mode == "callback_backlog") return CallbackBacklog(static_cast<int>(number(2)));
  if (mode == "trap_flood") return TrapFlood(static_cast<int>(number(2)));
  if (mode == "workload") return Workload();
  if (mode == "big_transfers" && argc > 2) return BigTransfers(number(2));
  if (mode == "callback_fills" && argc > 2) return CallbackFills(number(2));
  if ((mode == "allocation_cap" || mode == "host_block_cap") && argc > 2) {
    const bool device = mode == "allocation_cap";
    return HoldUntilRefused(
        number(2), argc > 3 ? argv[3] : "--max_allocations_per_session",
        !(argc > 4 && std::string(argv[4]) == "exit"), ACL_ERROR_RT_MEMORY_ALLOCATION,
        [device](void** pointer) {
          return device ? aclrtMalloc(pointer, 1, ACL_MEM_MALLOC_HUGE_FIRST)
                        : aclrtMallocHost(pointer, 4096);
        },
        [device](void* pointer) { return device ? aclrtFree(pointer) : aclrtFreeHost(pointer); },
        device ? std::function<void()>() : PageableRoundTrip);
  }
  if ((mode == "stream_cap" || mode == "event_cap") && argc > 3) {
    const bool streams = mode == "stream_cap";
    return HoldUntilRefused(
        number(2), argv[3], !(argc > 4 && std::string(argv[4]) == "exit"),
        streams ? ACL_ERROR_RT_NO_STREAM_RESOURCE : ACL_ERROR_RT_NO_EVENT_RESOURCE,
        [streams](void** handle) {
          return streams ? aclrtCreateStream(reinterpret_cast<aclrtStream*>(handle))
                         : aclrtCreateEvent(reinterpret_cast<aclrtEvent*>(handle));
        },
        [streams](void* handle) {
          return streams ? aclrtDestroyStream(handle) : aclrtDestroyEvent(handle);
        });
  }
  if (mode == "notify_cap" && argc > 3) {
    return NotifyCap(number(2), argv[3], argc > 4 && std::string(argv[4]) == "within");
  }
  if (mode == "random_draws" && argc > 2) return RandomDraws(number(2));
  std::fprintf(stderr, "usage: adversary_client MODE [ARGS]\n");
  return 2;
}
