// A client process exercising host callbacks through the real libascendcl.so,
// driven by the integration tests (and the demo).
//
//   callback_client seed_hostfunc      the seed 1_callback_hostfunc sample
//   callback_client ordering           kernels and host funcs, a slow one in the middle
//   callback_client block_modes        report callbacks, BLOCK vs NO_BLOCK
//   callback_client errors             every error path of SPEC section 6
//   callback_client exception MODE     a trap: exception info, STOP or CONTINUE
//   callback_client subscribed         host funcs run inside aclrtProcessHostFunc
//   callback_client many N             N host funcs with their own counters
//   callback_client relay [N]          host funcs of N (4) streams, each waiting for the next's
//   callback_client calls_in_callback  synchronous calls inside a host func and beside it
//   callback_client traffic            host funcs while large copies fill the channel both ways
//   callback_client exit_in_callback   exits while a host func still runs
//   callback_client stuck              a host func that never returns in time
//   callback_client hang               prints "in callback" from a host func, then hangs
//   callback_client show               prints callbacks as they run, in stream order
//   callback_client show_exception trap|clean   prints what its exception callback saw
//
// Exits 0 when every check of the scenario held; prints "FAIL: ..." otherwise.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "tests/check.h"

using scenario::Addr;
using scenario::Check;
using scenario::CheckCode;
using scenario::Setup;
using scenario::Teardown;

namespace {

void Launch(const char* kernel, std::vector<uint64_t> args, aclrtStream stream) {
  CheckCode(aclsimLaunchKernel(kernel, 1, args.data(), args.size() * 8, stream), ACL_SUCCESS,
            std::string("launch ") + kernel);
}

uint32_t ReadWord(void* device) {
  uint32_t value = 0;
  CheckCode(aclrtMemcpy(&value, 4, device, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "read");
  return value;
}

uint32_t ThisTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// --- seed: kernel, host func, synchronize ---

std::atomic<int> seed_calls{0};
void SeedCallback(void*) { ++seed_calls; }

int SeedHostFunc() {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "aclrtSetDevice");
  aclrtContext context = nullptr;
  CheckCode(aclrtCreateContext(&context, 0), ACL_SUCCESS, "aclrtCreateContext");
  void* number = nullptr;
  uint32_t host = 0;
  CheckCode(aclrtMalloc(&number, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemcpy(number, 4, &host, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "H2D");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  CheckCode(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS, "STOP mode");
  Launch("add_one_u32", {Addr(number)}, stream);
  CheckCode(aclrtLaunchHostFunc(stream, SeedCallback, nullptr), ACL_SUCCESS, "aclrtLaunchHostFunc");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  Check(seed_calls == 1, "the host func ran before the synchronization returned");
  CheckCode(aclrtMemcpy(&host, 4, number, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "D2H");
  Check(host == 1, "the kernel added one");
  CheckCode(aclrtFree(number), ACL_SUCCESS, "aclrtFree");
  CheckCode(aclrtDestroyStreamForce(stream), ACL_SUCCESS, "aclrtDestroyStreamForce");
  CheckCode(aclrtDestroyContext(context), ACL_SUCCESS, "aclrtDestroyContext");
  CheckCode(aclrtResetDeviceForce(0), ACL_SUCCESS, "aclrtResetDeviceForce");
  std::printf("seed_hostfunc value=%u callbacks=%d\n", host, seed_calls.load());
  return Teardown();
}

// --- ordering with a slow host func in the middle ---

struct Observation {
  void* word;
  uint32_t seen = 0;
  std::chrono::steady_clock::time_point start, end;
  int sleep_ms = 0;
};

void Observe(void* arg) {
  auto* observation = static_cast<Observation*>(arg);
  observation->start = std::chrono::steady_clock::now();
  observation->seen = ReadWord(observation->word);  // ACL calls work inside callbacks
  std::this_thread::sleep_for(std::chrono::milliseconds(observation->sleep_ms));
  observation->end = std::chrono::steady_clock::now();
}

int Ordering() {
  Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  Observation first{word}, second{word}, third{word};
  first.sleep_ms = 200;  // the slow one: the next kernel must wait for it
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtLaunchHostFunc(stream, Observe, &first), ACL_SUCCESS, "host func 1");
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtLaunchHostFunc(stream, Observe, &second), ACL_SUCCESS, "host func 2");
  Launch("spin_add_one_u32", {Addr(word), 50000}, stream);
  CheckCode(aclrtLaunchHostFunc(stream, Observe, &third), ACL_SUCCESS, "host func 3");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(first.seen == 1 && second.seen == 2 && third.seen == 3,
        "each host func saw exactly the kernels before it: " + std::to_string(first.seen) + "," +
            std::to_string(second.seen) + "," + std::to_string(third.seen));
  Check(second.start >= first.end, "the slow host func held back everything after it");
  Check(third.start >= second.end, "host funcs never overlap on one stream");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "free");
  std::printf("ordering seen=%u,%u,%u\n", first.seen, second.seen, third.seen);
  return Teardown();
}

// --- report callbacks: BLOCK holds the stream, NO_BLOCK does not ---

std::atomic<int> reports{0};
std::atomic<uint32_t> report_thread{0};
void Report(void*) {
  ++reports;
  report_thread = ThisTid();
}

int BlockModes() {
  Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  const uint64_t me = static_cast<uint64_t>(pthread_self());
  CheckCode(aclrtSubscribeReport(me, stream), ACL_SUCCESS, "subscribe");

  // NO_BLOCK: the stream finishes although nobody processed the report yet.
  CheckCode(aclrtLaunchCallback(Report, nullptr, ACL_CALLBACK_NO_BLOCK, stream), ACL_SUCCESS,
            "launch NO_BLOCK");
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, 5000), ACL_SUCCESS,
            "NO_BLOCK does not hold the stream");
  Check(reports == 0, "the report waits for aclrtProcessReport");
  CheckCode(aclrtProcessReport(5000), ACL_SUCCESS, "process the NO_BLOCK report");
  Check(reports == 1 && report_thread == ThisTid(), "it ran inside this thread's ProcessReport");

  // BLOCK: the stream waits until the subscribed thread processed it.
  CheckCode(aclrtLaunchCallback(Report, nullptr, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS,
            "launch BLOCK");
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, 200), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
            "BLOCK holds the stream");
  Check(ReadWord(word) == 1, "the kernel after a BLOCK callback waits");
  CheckCode(aclrtProcessReport(5000), ACL_SUCCESS, "process the BLOCK report");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "the stream goes on");
  Check(reports == 2 && ReadWord(word) == 2, "then the kernel ran");
  CheckCode(aclrtUnSubscribeReport(me, stream), ACL_SUCCESS, "unsubscribe");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "free");
  std::printf("block_modes ok\n");
  return Teardown();
}

// --- error paths ---

std::atomic<aclError> own_sync_code{0};
std::atomic<aclError> inner_call_code{-1};
aclrtStream callback_stream = nullptr;
void SyncOwnStream(void*) {
  own_sync_code = aclrtSynchronizeStream(callback_stream);
  void* buffer = nullptr;
  inner_call_code = aclrtMalloc(&buffer, 64, ACL_MEM_MALLOC_HUGE_FIRST);
  if (buffer != nullptr) aclrtFree(buffer);
}
void Nothing(void*) {}

int Errors() {
  Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  const uint64_t me = static_cast<uint64_t>(pthread_self());
  CheckCode(aclrtLaunchCallback(Report, nullptr, ACL_CALLBACK_BLOCK, stream),
            ACL_ERROR_RT_STREAM_NO_CB_REG, "launch without a subscriber");
  CheckCode(aclrtProcessReport(10), ACL_ERROR_RT_THREAD_SUBSCRIBE, "process unsubscribed");
  CheckCode(aclrtProcessReport(0), ACL_ERROR_INVALID_PARAM, "timeout 0");
  CheckCode(aclrtProcessReport(-2), ACL_ERROR_INVALID_PARAM, "timeout -2");
  CheckCode(aclrtSubscribeReport(me, stream), ACL_SUCCESS, "subscribe");
  CheckCode(aclrtSubscribeReport(me, stream), ACL_ERROR_REPEAT_SUBSCRIBE, "subscribe twice");
  CheckCode(aclrtProcessReport(50), ACL_ERROR_RT_REPORT_TIMEOUT, "nothing arrives");
  CheckCode(aclrtLaunchCallback(nullptr, nullptr, ACL_CALLBACK_BLOCK, stream),
            ACL_ERROR_INVALID_PARAM, "NULL callback");
  CheckCode(aclrtLaunchCallback(Report, nullptr, static_cast<aclrtCallbackBlockType>(5), stream),
            ACL_ERROR_INVALID_PARAM, "unknown block type");
  CheckCode(aclrtUnSubscribeReport(me, stream), ACL_SUCCESS, "unsubscribe");
  CheckCode(aclrtUnSubscribeReport(me, stream), ACL_ERROR_RT_STREAM_SUBSCRIBE, "unsubscribe twice");
  CheckCode(aclrtLaunchHostFunc(stream, nullptr, nullptr), ACL_ERROR_INVALID_PARAM, "NULL fn");
  CheckCode(aclrtProcessHostFunc(10), ACL_ERROR_RT_THREAD_SUBSCRIBE, "process host funcs");

  // A host func may call the API, but not wait for its own stream.
  callback_stream = stream;
  CheckCode(aclrtLaunchHostFunc(stream, SyncOwnStream, nullptr), ACL_SUCCESS, "launch");
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, 10000), ACL_SUCCESS, "no deadlock");
  Check(own_sync_code == ACL_ERROR_RT_NO_PERMISSION,
        "a host func syncing its own stream gets ACL_ERROR_RT_NO_PERMISSION, got " +
            std::to_string(own_sync_code.load()));
  Check(inner_call_code == ACL_SUCCESS, "other ACL calls work inside a host func");

  // The last error of this thread: get clears, peek does not.
  aclrtProcessReport(0);
  CheckCode(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_INVALID_PARAM, "peek");
  CheckCode(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_INVALID_PARAM, "peek again");
  CheckCode(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_INVALID_PARAM, "get");
  CheckCode(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS, "get cleared it");
  CheckCode(aclrtGetLastError(static_cast<aclrtLastErrLevel>(3)), ACL_ERROR_INVALID_PARAM,
            "unknown level");
  uint32_t task_id = 0;
  CheckCode(aclrtGetThreadLastTaskId(nullptr), ACL_ERROR_INVALID_PARAM, "NULL task id");
  CheckCode(aclrtLaunchHostFunc(stream, Nothing, nullptr), ACL_SUCCESS, "launch");
  CheckCode(aclrtGetThreadLastTaskId(&task_id), ACL_SUCCESS, "last task id");
  Check(task_id == 2, "the stream's second task: " + std::to_string(task_id));
  Check(aclrtGetTaskIdFromExceptionInfo(nullptr) == 0xFFFFFFFFu, "NULL exception info");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  std::printf("errors ok\n");
  return Teardown();
}

// --- exception info, STOP vs CONTINUE with callbacks queued after the failure ---

std::mutex exception_mu;
std::vector<std::vector<uint32_t>> exceptions;
void OnException(aclrtExceptionInfo* info) {
  std::lock_guard<std::mutex> lock(exception_mu);
  // A built-in kernel (aclsimLaunchKernel) has arguments but no function handle.
  void* args = nullptr;
  uint32_t args_length = 7;
  aclrtFuncHandle function = nullptr;
  exceptions.push_back(
      {aclrtGetTaskIdFromExceptionInfo(info), aclrtGetStreamIdFromExceptionInfo(info),
       aclrtGetThreadIdFromExceptionInfo(info), aclrtGetDeviceIdFromExceptionInfo(info),
       aclrtGetErrorCodeFromExceptionInfo(info),
       static_cast<uint32_t>(aclrtGetArgsFromExceptionInfo(info, &args, &args_length)), args_length,
       static_cast<uint32_t>(aclrtGetFuncHandleFromExceptionInfo(info, &function)),
       static_cast<uint32_t>(aclrtGetArgsFromExceptionInfo(nullptr, &args, &args_length))});
}
std::atomic<int> after_failure{0};
void AfterFailure(void*) { ++after_failure; }

int Exception(const std::string& mode) {
  Setup();
  CheckCode(aclrtSetExceptionInfoCallback(OnException), ACL_SUCCESS, "set exception callback");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  CheckCode(aclrtSetStreamFailureMode(
                stream, mode == "stop" ? ACL_STOP_ON_FAILURE : ACL_CONTINUE_ON_FAILURE),
            ACL_SUCCESS, "failure mode");
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  Launch("spin_add_one_u32", {Addr(word), 20000}, stream);  // the rest queues behind it
  Launch("trap", {}, stream);
  uint32_t trap_task = 0;
  CheckCode(aclrtGetThreadLastTaskId(&trap_task), ACL_SUCCESS, "trap's task id");
  CheckCode(aclrtLaunchHostFunc(stream, AfterFailure, nullptr), ACL_SUCCESS, "host func after");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION, "sync reports trap");
  int32_t stream_id = 0;
  CheckCode(aclrtStreamGetId(stream, &stream_id), ACL_SUCCESS, "stream id");
  {
    std::lock_guard<std::mutex> lock(exception_mu);
    Check(exceptions.size() == 1, "the exception callback ran once before the sync returned");
    if (!exceptions.empty()) {
      const std::vector<uint32_t>& info = exceptions[0];
      Check(info[0] == trap_task && trap_task == 2, "task id " + std::to_string(info[0]));
      Check(info[1] == static_cast<uint32_t>(stream_id), "stream id");
      Check(info[2] == ThisTid(), "thread id is the launching thread");
      Check(info[3] == 0, "device id");
      Check(info[4] == ACL_ERROR_RT_AICORE_EXCEPTION, "error code");
      Check(info[5] == ACL_SUCCESS && info[6] == 0, "trap's arguments: none");
      Check(info[7] == ACL_ERROR_INVALID_PARAM, "a built-in kernel has no function handle");
      Check(info[8] == ACL_ERROR_INVALID_PARAM, "NULL exception info");
    }
  }
  if (mode == "stop") {
    Check(after_failure == 0, "STOP_ON_FAILURE: the host func after the failure never ran");
  } else {
    Check(after_failure == 1, "CONTINUE_ON_FAILURE: the host func after the failure ran");
  }
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "free");
  std::printf("exception %s after_failure=%d\n", mode.c_str(), after_failure.load());
  return Teardown();
}

// --- subscribed host funcs run inside aclrtProcessHostFunc ---

std::atomic<uint32_t> host_func_thread{0};
void RecordThread(void*) { host_func_thread = ThisTid(); }

int Subscribed() {
  Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  std::atomic<bool> ready{false};
  std::atomic<uint32_t> worker_tid{0};
  aclrtContext context = nullptr;
  CheckCode(aclrtGetCurrentContext(&context), ACL_SUCCESS, "context");
  std::thread worker([&] {
    worker_tid = ThisTid();
    aclrtSetCurrentContext(context);
    CheckCode(aclrtSubscribeHostFunc(static_cast<uint64_t>(pthread_self()), stream), ACL_SUCCESS,
              "subscribe host funcs");
    ready = true;
    CheckCode(aclrtProcessHostFunc(10000), ACL_SUCCESS, "process host func");
    CheckCode(aclrtUnSubscribeHostFunc(static_cast<uint64_t>(pthread_self()), stream), ACL_SUCCESS,
              "unsubscribe");
  });
  while (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CheckCode(aclrtLaunchHostFunc(stream, RecordThread, nullptr), ACL_SUCCESS, "launch");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  worker.join();
  Check(host_func_thread == worker_tid, "the host func ran on the subscribed thread");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  std::printf("subscribed ok\n");
  return Teardown();
}

// --- many host funcs, each with its own argument ---

std::atomic<int> counter_sum{0};
void AddArgument(void* arg) { counter_sum += static_cast<int>(reinterpret_cast<intptr_t>(arg)); }

int Many(int count) {
  Setup();
  std::vector<aclrtStream> streams(4);
  for (auto& stream : streams) CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  int expected = 0;
  for (int i = 1; i <= count; ++i) {
    expected += i;
    CheckCode(aclrtLaunchHostFunc(streams[i % streams.size()], AddArgument,
                                  reinterpret_cast<void*>(static_cast<intptr_t>(i))),
              ACL_SUCCESS, "launch");
  }
  for (auto& stream : streams) CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(counter_sum == expected,
        "exactly this process's host funcs ran, once each: " + std::to_string(counter_sum.load()) +
            " vs " + std::to_string(expected));
  for (auto& stream : streams) CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  std::printf("many %d ok\n", count);
  return Teardown();
}

// --- host funcs of several streams running at once ---

// Each stream's host func waits until the next stream's ran: they all run at
// once, or they time out.
constexpr int kMaxRelayStreams = 8;
int relay_streams = 4;
std::atomic<bool> relay_done[kMaxRelayStreams];
std::atomic<int> relay_timeouts{0};
void Relay(void* arg) {
  const auto index = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  if (index + 1 < relay_streams) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!relay_done[index + 1] && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!relay_done[index + 1]) ++relay_timeouts;
  }
  relay_done[index] = true;
}

// `count` streams (at most 4 without calls: the library runs as many host
// funcs at once as it has event threads, and nothing else reads while they
// run). With more, the main thread synchronizes the last stream at once: it
// reads the host funcs none of the busy event threads can, and they must
// still run.
int RelayAcrossStreams(int count) {
  Setup();
  relay_streams = std::min(count, kMaxRelayStreams);
  std::vector<aclrtStream> streams(relay_streams);
  for (auto& stream : streams) CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  for (int round = 0; round < 3; ++round) {
    for (auto& done : relay_done) done = false;
    for (int i = 0; i < relay_streams; ++i) {
      CheckCode(aclrtLaunchHostFunc(streams[i], Relay, reinterpret_cast<void*>(intptr_t{i})),
                ACL_SUCCESS, "launch");
    }
    if (relay_streams > 4) {
      CheckCode(aclrtSynchronizeStream(streams.back()), ACL_SUCCESS, "sync the last stream");
    }
    // Otherwise no call meanwhile: a thread waiting for its reply would read
    // the channel itself, and the library's threads must manage on their own.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!relay_done[0] && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (auto& stream : streams) CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  }
  Check(relay_timeouts == 0, "every stream's host func ran while the earlier ones waited: " +
                                 std::to_string(relay_timeouts.load()) + " timed out");
  for (auto& stream : streams) CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  std::printf("relay ok\n");
  return Teardown();
}

// --- synchronous calls while a host func runs ---

// The thread that read the host func runs it: the replies to the calls made
// meanwhile (by the host func itself, and by the main thread) are read by
// another thread.
constexpr int kCallsEachSide = 200;
aclrtStream calls_other_stream = nullptr;
std::atomic<bool> main_calls_done{false};
std::atomic<int> calls_in_callback_failed{0};
void CallsInCallback(void*) {
  for (int i = 0; i < kCallsEachSide; ++i) {
    aclrtStreamStatus status;
    if (aclrtStreamQuery(calls_other_stream, &status) != ACL_SUCCESS) ++calls_in_callback_failed;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!main_calls_done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!main_calls_done) ++calls_in_callback_failed;
}

int CallsInCallbackAndBeside() {
  Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  CheckCode(aclrtCreateStream(&calls_other_stream), ACL_SUCCESS, "create the other");
  for (int round = 0; round < 3; ++round) {
    main_calls_done = false;
    CheckCode(aclrtLaunchHostFunc(stream, CallsInCallback, nullptr), ACL_SUCCESS, "launch");
    for (int i = 0; i < kCallsEachSide; ++i) {
      void* device = nullptr;
      CheckCode(aclrtMalloc(&device, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
      CheckCode(aclrtFree(device), ACL_SUCCESS, "free");
    }
    main_calls_done = true;
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  }
  Check(calls_in_callback_failed == 0, "every call inside the host funcs returned 0");
  CheckCode(aclrtDestroyStream(calls_other_stream), ACL_SUCCESS, "destroy the other");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  std::printf("calls_in_callback ok\n");
  return Teardown();
}

// --- host funcs while large copies fill the channel both ways ---

// The thread that ran a host func writes its acknowledgement, which can wait
// for room in the channel while megabytes of asynchronous copies go out, and
// acld sends nothing more (it stops reading) until a large reply of its own
// went out: someone must read meanwhile, or the process hangs.
std::atomic<int> traffic_callbacks{0};
void CountTraffic(void*) { ++traffic_callbacks; }

int CallbacksUnderTraffic() {
  Setup();
  constexpr size_t kBytes = 1 << 20;
  constexpr int kRounds = 40;
  aclrtStream callbacks_stream = nullptr, copies_stream = nullptr;
  CheckCode(aclrtCreateStream(&callbacks_stream), ACL_SUCCESS, "create");
  CheckCode(aclrtCreateStream(&copies_stream), ACL_SUCCESS, "create");
  void* device = nullptr;
  CheckCode(aclrtMalloc(&device, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  std::vector<uint8_t> source(kBytes, 7), back(kBytes, 0);
  std::atomic<bool> failed{false};
  std::thread host_funcs([&] {
    for (int i = 0; i < kRounds * 50; ++i) {
      if (aclrtLaunchHostFunc(callbacks_stream, CountTraffic, nullptr) != ACL_SUCCESS) failed = true;
    }
  });
  std::thread uploads([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (aclrtMemcpyAsync(device, kBytes, source.data(), kBytes, ACL_MEMCPY_HOST_TO_DEVICE,
                           copies_stream) != ACL_SUCCESS) {
        failed = true;
      }
    }
  });
  // Into pageable memory, an asynchronous copy's bytes come back in acld's
  // reply: a megabyte that fills the ring from acld's side several times.
  aclrtStream downloads_stream = nullptr;
  CheckCode(aclrtCreateStream(&downloads_stream), ACL_SUCCESS, "create");
  for (int i = 0; i < kRounds; ++i) {
    if (aclrtMemcpyAsync(back.data(), kBytes, device, kBytes, ACL_MEMCPY_DEVICE_TO_HOST,
                         downloads_stream) != ACL_SUCCESS) {
      failed = true;
    }
  }
  CheckCode(aclrtSynchronizeStream(downloads_stream), ACL_SUCCESS, "sync the downloads");
  CheckCode(aclrtDestroyStream(downloads_stream), ACL_SUCCESS, "destroy");
  host_funcs.join();
  uploads.join();
  CheckCode(aclrtSynchronizeStream(copies_stream), ACL_SUCCESS, "sync the copies");
  CheckCode(aclrtSynchronizeStream(callbacks_stream), ACL_SUCCESS, "sync the host funcs");
  Check(!failed, "every launch and copy returned 0");
  Check(traffic_callbacks == kRounds * 50, "every host func ran: " +
                                               std::to_string(traffic_callbacks.load()));
  CheckCode(aclrtMemcpy(back.data(), kBytes, device, kBytes, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "read back");
  Check(back == source, "the device holds what was uploaded");
  CheckCode(aclrtFree(device), ACL_SUCCESS, "free");
  CheckCode(aclrtDestroyStream(copies_stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtDestroyStream(callbacks_stream), ACL_SUCCESS, "destroy");
  std::printf("traffic ok\n");
  return Teardown();
}

// --- a process that exits while a host func still runs ---

std::atomic<bool> long_callback_started{false};
void LongCallback(void*) {
  long_callback_started = true;
  std::this_thread::sleep_for(std::chrono::seconds(30));
}

int ExitInCallback() {
  Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  CheckCode(aclrtLaunchHostFunc(stream, LongCallback, nullptr), ACL_SUCCESS, "launch");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!long_callback_started && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Check(long_callback_started, "the host func started");
  std::printf("exiting\n");
  std::fflush(stdout);
  std::exit(0);  // the library's exit handler ends the session; it must not wait for the callback
}

// --- a host func that takes longer than the daemon's --callback_timeout ---

std::atomic<int> exceptions_seen{0};
void CountException(aclrtExceptionInfo* info) {
  if (aclrtGetErrorCodeFromExceptionInfo(info) == ACL_ERROR_RT_REPORT_TIMEOUT) ++exceptions_seen;
}
void Slow(void*) { std::this_thread::sleep_for(std::chrono::seconds(3)); }

int Stuck() {
  Setup();
  CheckCode(aclrtSetExceptionInfoCallback(CountException), ACL_SUCCESS, "exception callback");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  const auto start = std::chrono::steady_clock::now();
  CheckCode(aclrtLaunchHostFunc(stream, Slow, nullptr), ACL_SUCCESS, "launch");
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_REPORT_TIMEOUT, "the callback timed out");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Check(waited < 2.5, "the stream failed at the timeout, not when the callback returned");
  Check(exceptions_seen == 1, "the exception callback saw ACL_ERROR_RT_REPORT_TIMEOUT");
  Check(ReadWord(word) == 1, "CONTINUE_ON_FAILURE: later tasks ran");
  std::printf("stuck timed out after %.2f s\n", waited);
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the late answer is ignored
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  return Teardown();
}

void Hang(void*) {
  std::printf("in callback\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::hours(1));
}

int HangInCallback() {
  Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  void* memory = nullptr;
  CheckCode(aclrtMalloc(&memory, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtLaunchHostFunc(stream, Hang, nullptr), ACL_SUCCESS, "launch");
  aclrtSynchronizeStream(stream);  // killed while waiting
  return 1;
}

// --- for the demo: narrate what runs where ---

struct Step {
  const char* what;
  void* word;
};

void PrintHostFunc(void* arg) {
  auto* step = static_cast<Step*>(arg);
  std::printf("  [pid %d, thread %u] host func '%s': the device word is %u\n",
              static_cast<int>(getpid()), ThisTid(), step->what, ReadWord(step->word));
  std::fflush(stdout);
}

void PrintReport(void* arg) {
  auto* step = static_cast<Step*>(arg);
  std::printf("  [pid %d, thread %u] report callback '%s' inside aclrtProcessReport: word %u\n",
              static_cast<int>(getpid()), ThisTid(), step->what, ReadWord(step->word));
  std::fflush(stdout);
}

int Show() {
  Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  CheckCode(aclrtSubscribeReport(static_cast<uint64_t>(pthread_self()), stream), ACL_SUCCESS,
            "subscribe");
  Step after_one{"after 1 kernel", word}, after_two{"after 2 kernels", word},
      report{"after 3 kernels", word};
  std::printf(
      "  [pid %d, thread %u] queues: kernel, host func, kernel (50 ms), host func, "
      "kernel, report callback (BLOCK)\n",
      static_cast<int>(getpid()), ThisTid());
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtLaunchHostFunc(stream, PrintHostFunc, &after_one), ACL_SUCCESS, "host func");
  Launch("spin_add_one_u32", {Addr(word), 50000}, stream);
  CheckCode(aclrtLaunchHostFunc(stream, PrintHostFunc, &after_two), ACL_SUCCESS, "host func");
  Launch("add_one_u32", {Addr(word)}, stream);
  CheckCode(aclrtLaunchCallback(PrintReport, &report, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS,
            "report callback");
  CheckCode(aclrtProcessReport(10000), ACL_SUCCESS, "process report");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  std::printf("  [pid %d] stream synchronized: word %u\n", static_cast<int>(getpid()),
              ReadWord(word));
  CheckCode(aclrtUnSubscribeReport(static_cast<uint64_t>(pthread_self()), stream), ACL_SUCCESS,
            "unsubscribe");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  return Teardown();
}

void PrintException(aclrtExceptionInfo* info) {
  std::printf(
      "  [pid %d] exception callback: task %u of stream %u on device %u failed with %u "
      "(launched by thread %u)\n",
      static_cast<int>(getpid()), aclrtGetTaskIdFromExceptionInfo(info),
      aclrtGetStreamIdFromExceptionInfo(info), aclrtGetDeviceIdFromExceptionInfo(info),
      aclrtGetErrorCodeFromExceptionInfo(info), aclrtGetThreadIdFromExceptionInfo(info));
  std::fflush(stdout);
}

int ShowException(const std::string& kind) {
  Setup();
  CheckCode(aclrtSetExceptionInfoCallback(PrintException), ACL_SUCCESS, "exception callback");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  Launch("spin_add_one_u32", {Addr(word), 100000}, stream);
  if (kind == "trap") Launch("trap", {}, stream);
  const aclError result = aclrtSynchronizeStream(stream);
  std::printf("  [pid %d] %s client: aclrtSynchronizeStream returned %d\n",
              static_cast<int>(getpid()), kind.c_str(), result);
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  return Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::string argument = argc > 2 ? argv[2] : "";
  if (mode == "seed_hostfunc") return SeedHostFunc();
  if (mode == "ordering") return Ordering();
  if (mode == "block_modes") return BlockModes();
  if (mode == "errors") return Errors();
  if (mode == "exception") return Exception(argument);
  if (mode == "subscribed") return Subscribed();
  if (mode == "many") return Many(argument.empty() ? 1000 : std::atoi(argument.c_str()));
  if (mode == "relay") return RelayAcrossStreams(argument.empty() ? 4 : std::atoi(argument.c_str()));
  if (mode == "calls_in_callback") return CallsInCallbackAndBeside();
  if (mode == "traffic") return CallbacksUnderTraffic();
  if (mode == "exit_in_callback") return ExitInCallback();
  if (mode == "stuck") return Stuck();
  if (mode == "hang") return HangInCallback();
  if (mode == "show") return Show();
  if (mode == "show_exception") return ShowException(argument);
  std::fprintf(stderr, "usage: see the comment at the top of callback_client.cc\n");
  return 2;
}
