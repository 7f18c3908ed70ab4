// A client process exercising devices, streams, events and memory through the
// real libascendcl.so, driven by the integration tests (and the demo).
//
//   device_client roundtrip MIB        random data through every copy direction
//   device_client ordering             kernels, copies and events across streams
//   device_client failure_modes        STOP vs CONTINUE, error reported once
//   device_client timeouts             stream and event synchronization timeouts
//   device_client destroy              destroy waits, destroy-force discards
//   device_client errors               argument checks and error codes
//   device_client notify               notifies: a wait before its record, one wait per
//                                      record, timeouts, abort, handle checks
//   device_client allocator            the custom allocator registry
//   device_client peers                peer access: queries, enabling per direction, copies
//                                      between two devices' memory, aclrtMemset of host memory
//   device_client physical [unsupported]  physical memory and reserved addresses in one
//                                      process: mappings, aliases, access, kernels and
//                                      copies through them, refusals; a shareable handle
//                                      this process cannot import itself (unsupported:
//                                      the backend refuses them all with 207000)
//   device_client values               aclrtValueWait/aclrtValueWrite: a wait holds its stream
//                                      until another stream, a synchronous copy or a kernel
//                                      writes the value; every condition; refusals
//   device_client reduce               aclrtReduceAsync: SUM/MAX/MIN over ints and floats in
//                                      stream order, refusals, a failing type
//   device_client victim               allocates, fills, prints its handles, waits
//   device_client attacker ADDR STREAM tries to touch another process's memory
//   device_client attacker ADDRESS STREAM [opaque_kernels]   tries the victim's memory and
//                                      stream (opaque_kernels: no kernel aimed at them)
//   device_client hold_memory MIB      allocates, prints "ready", waits
//   device_client free_under_kernels   frees 1 MiB that its queued kernels use, prints
//                                      "freed", waits; then aborts the stream, prints
//                                      "aborted", waits
//   device_client hold_streams N       creates N streams, prints "ready", waits
//   device_client set_device N         prints "set_device <code of aclrtSetDevice(N)> <message>"
//   device_client stall_copies         two threads wait for 32 MiB copies into pageable
//                                      memory (answered by the daemon when two busy
//                                      streams reach them); prints "stalling"
//   device_client workload STREAMS N   N kernels on each of STREAMS streams, checked
//   device_client stress SEED          the stress run's client: random extra references,
//                                      16 streams, kernels, copies and host funcs, checked
//   device_client quota_probe BYTES STREAMS   hits a memory quota of what BYTES reserve and a stream
//                                      quota of STREAMS (default stream included)
//
// Exits 0 when every check of the scenario held; prints "FAIL: ..." otherwise.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
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

void Launch(const char* kernel, std::vector<uint64_t> args, uint32_t blocks, aclrtStream stream) {
  CheckCode(aclsimLaunchKernel(kernel, blocks, args.data(), args.size() * 8, stream), ACL_SUCCESS,
            std::string("launch ") + kernel);
}

std::vector<uint32_t> ReadU32(void* device, size_t count) {
  std::vector<uint32_t> values(count);
  CheckCode(aclrtMemcpy(values.data(), count * 4, device, count * 4, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "aclrtMemcpy D2H");
  return values;
}

int RoundTrip(size_t bytes) {
  Setup();
  std::vector<uint8_t> source(bytes), back(bytes);
  std::mt19937_64 random(42);
  for (size_t i = 0; i < bytes; i += 8) {
    const uint64_t value = random();
    std::memcpy(&source[i], &value, std::min<size_t>(8, bytes - i));
  }
  void *a = nullptr, *b = nullptr, *pinned = nullptr;
  CheckCode(aclrtMalloc(&a, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc a");
  CheckCode(aclrtMalloc(&b, bytes, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS, "aclrtMalloc b");
  CheckCode(aclrtMallocHost(&pinned, bytes), ACL_SUCCESS, "aclrtMallocHost");

  // Pageable host -> device -> device -> pageable host.
  CheckCode(aclrtMemcpy(a, bytes, source.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
            "H2D pageable");
  CheckCode(aclrtMemcpy(b, bytes, a, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS, "D2D");
  CheckCode(aclrtMemcpy(back.data(), bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS,
            "D2H pageable");
  Check(back == source, "pageable round trip returns the same bytes");

  // Pinned host memory, and ACL_MEMCPY_DEFAULT inferring the direction.
  std::memcpy(pinned, source.data(), bytes);
  CheckCode(aclrtMemset(a, bytes, 0, bytes), ACL_SUCCESS, "aclrtMemset");
  CheckCode(aclrtMemcpy(a, bytes, pinned, bytes, ACL_MEMCPY_DEFAULT), ACL_SUCCESS, "H2D pinned");
  std::memset(pinned, 0, bytes);
  CheckCode(aclrtMemcpy(pinned, bytes, a, bytes, ACL_MEMCPY_DEFAULT), ACL_SUCCESS, "D2H pinned");
  Check(std::memcmp(pinned, source.data(), bytes) == 0, "pinned round trip returns the same bytes");

  // Asynchronous copies on a stream, pageable and pinned.
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  std::fill(back.begin(), back.end(), 0);
  CheckCode(aclrtMemsetAsync(b, bytes, 0x5a, bytes, stream), ACL_SUCCESS, "aclrtMemsetAsync");
  CheckCode(aclrtMemcpyAsync(b, bytes, source.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream),
            ACL_SUCCESS, "H2D async pageable");
  CheckCode(aclrtMemcpyAsync(a, bytes, b, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS,
            "D2D async");
  std::memset(pinned, 0, bytes);
  CheckCode(aclrtMemcpyAsync(pinned, bytes, a, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream),
            ACL_SUCCESS, "D2H async pinned");
  CheckCode(aclrtMemcpyAsync(back.data(), bytes, a, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream),
            ACL_SUCCESS, "D2H async pageable");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  Check(std::memcmp(pinned, source.data(), bytes) == 0, "async pinned round trip");
  Check(back == source, "async pageable round trip");

  // Pointer arithmetic inside an allocation; a small inline copy.
  const uint32_t word = 0xdeadbeef;
  void* middle = reinterpret_cast<void*>(Addr(a) + 1000);
  CheckCode(aclrtMemcpy(middle, 4, &word, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS, "H2D +1000");
  uint32_t read = 0;
  CheckCode(aclrtMemcpy(&read, 4, middle, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "D2H +1000");
  Check(read == word, "pointer arithmetic inside an allocation");

  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtFreeHost(pinned), ACL_SUCCESS, "aclrtFreeHost");
  CheckCode(aclrtFree(a), ACL_SUCCESS, "aclrtFree a");
  CheckCode(aclrtFree(b), ACL_SUCCESS, "aclrtFree b");
  std::printf("roundtrip %zu bytes ok\n", bytes);
  return Teardown();
}

int Ordering() {
  Setup();
  constexpr size_t kWords = 64;
  void* buffer = nullptr;
  CheckCode(aclrtMalloc(&buffer, kWords * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
            "aclrtMalloc");
  aclrtStream first = nullptr, second = nullptr, third = nullptr;
  CheckCode(aclrtCreateStream(&first), ACL_SUCCESS, "create first");
  CheckCode(aclrtCreateStreamWithConfig(&second, 3, ACL_STREAM_FAST_LAUNCH), ACL_SUCCESS,
            "create second");
  CheckCode(aclrtCreateStreamWithConfig(&third, 7, 0), ACL_SUCCESS, "create third");
  aclrtEvent filled = nullptr, incremented = nullptr, start = nullptr, end = nullptr;
  CheckCode(aclrtCreateEvent(&filled), ACL_SUCCESS, "create event");
  CheckCode(aclrtCreateEventWithFlag(&incremented, ACL_EVENT_SYNC), ACL_SUCCESS, "create event");
  CheckCode(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE), ACL_SUCCESS, "create event");
  CheckCode(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE), ACL_SUCCESS, "create event");

  // first: busy 100 ms, then fill 7; second waits for it and adds one 3 times;
  // third waits for second and overwrites word 0. Without the waits the
  // order would be the reverse.
  CheckCode(aclrtRecordEvent(start, first), ACL_SUCCESS, "record start");
  Launch("spin_add_one_u32", {Addr(buffer), 100000}, 1, first);
  Launch("fill_u32", {Addr(buffer), 7, kWords}, 1, first);
  CheckCode(aclrtRecordEvent(filled, first), ACL_SUCCESS, "record filled");
  CheckCode(aclrtRecordEvent(end, first), ACL_SUCCESS, "record end");
  CheckCode(aclrtStreamWaitEvent(second, filled), ACL_SUCCESS, "second waits");
  for (int i = 0; i < 3; ++i) Launch("add_one_u32", {Addr(buffer)}, kWords, second);
  CheckCode(aclrtRecordEvent(incremented, second), ACL_SUCCESS, "record incremented");
  CheckCode(aclrtStreamWaitEvent(third, incremented), ACL_SUCCESS, "third waits");
  Launch("write_i32", {Addr(buffer), static_cast<uint64_t>(-1)}, 1, third);
  const uint32_t host_word = 1000;
  CheckCode(aclrtMemcpyAsync(reinterpret_cast<void*>(Addr(buffer) + 4), 4, &host_word, 4,
                             ACL_MEMCPY_HOST_TO_DEVICE, third),
            ACL_SUCCESS, "copy on third");

  aclrtEventRecordedStatus recorded = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  CheckCode(aclrtQueryEventStatus(filled, &recorded), ACL_SUCCESS, "query filled early");
  Check(recorded == ACL_EVENT_RECORDED_STATUS_NOT_READY, "filled is not ready during the spin");
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
  CheckCode(aclrtStreamQuery(third, &status), ACL_SUCCESS, "query third");
  Check(status == ACL_STREAM_STATUS_NOT_READY, "third still waits");

  CheckCode(aclrtSynchronizeStream(third), ACL_SUCCESS, "sync third");
  CheckCode(aclrtSynchronizeStream(first), ACL_SUCCESS, "sync first");
  std::vector<uint32_t> values = ReadU32(buffer, kWords);
  Check(values[0] == 0xffffffffu, "third wrote word 0 last");
  Check(values[1] == 1000, "third copied word 1 last");
  bool rest = true;
  for (size_t i = 2; i < kWords; ++i) rest = rest && values[i] == 10;
  Check(rest, "fill then three increments on the other words");
  CheckCode(aclrtSynchronizeEvent(filled), ACL_SUCCESS, "sync filled");
  CheckCode(aclrtQueryEventStatus(filled, &recorded), ACL_SUCCESS, "query filled");
  Check(recorded == ACL_EVENT_RECORDED_STATUS_COMPLETE, "filled is complete");
  aclrtEventStatus event_status = ACL_EVENT_STATUS_NOT_READY;
  CheckCode(aclrtQueryEvent(incremented, &event_status), ACL_SUCCESS, "query incremented");
  Check(event_status == ACL_EVENT_STATUS_COMPLETE, "incremented is complete");
  float ms = 0;
  CheckCode(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS, "elapsed");
  Check(ms >= 90 && ms < 5000, "elapsed time covers the 100 ms spin: " + std::to_string(ms));
  CheckCode(aclrtSynchronizeDevice(), ACL_SUCCESS, "aclrtSynchronizeDevice");
  int32_t id = -1;
  CheckCode(aclrtStreamGetId(second, &id), ACL_SUCCESS, "aclrtStreamGetId");
  Check(id > 0, "stream ids are positive");
  for (aclrtEvent event : {filled, incremented, start, end}) {
    CheckCode(aclrtDestroyEvent(event), ACL_SUCCESS, "destroy event");
  }
  for (aclrtStream stream : {first, second, third}) {
    CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy stream");
  }
  CheckCode(aclrtFree(buffer), ACL_SUCCESS, "aclrtFree");
  std::printf("ordering ok elapsed_ms=%.1f\n", ms);
  return Teardown();
}

// Runs: add_one, trap, add_one on a stream in `mode`; returns word 0.
uint32_t RunWithFailure(uint64_t mode, void* word) {
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  CheckCode(aclrtSetStreamFailureMode(stream, mode), ACL_SUCCESS, "set failure mode");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  Launch("spin_add_one_u32", {Addr(word), 20000}, 1, stream);  // all queued before the trap runs
  Launch("trap", {}, 1, stream);
  Launch("add_one_u32", {Addr(word)}, 1, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION, "sync reports the trap");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "the error is reported once");
  const uint32_t value = ReadU32(word, 1)[0];
  // The stream works again after the report.
  Launch("add_one_u32", {Addr(word)}, 1, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync after the report");
  Check(ReadU32(word, 1)[0] == value + 1, "the stream runs again after the report");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy stream");
  return value;
}

int FailureModes() {
  Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  const uint32_t with_continue = RunWithFailure(ACL_CONTINUE_ON_FAILURE, word);
  const uint32_t with_stop = RunWithFailure(ACL_STOP_ON_FAILURE, word);
  Check(with_continue == 2, "CONTINUE runs the task after the failure");
  Check(with_stop == 1, "STOP discards the task after the failure");

  // A kernel whose device pointer is bad fails its task like a trap does.
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  Launch("add_one_u32", {Addr(word) + 4096}, 1, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM, "bad pointer fails the task");
  CheckCode(aclrtSetStreamFailureMode(stream, 7), ACL_ERROR_INVALID_PARAM, "unknown mode");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "aclrtFree");
  std::printf("failure_modes continue=%u stop=%u\n", with_continue, with_stop);
  return Teardown();
}

int Timeouts() {
  Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  aclrtStream stream = nullptr;
  aclrtEvent event = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  CheckCode(aclrtCreateEvent(&event), ACL_SUCCESS, "create event");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  Launch("spin_add_one_u32", {Addr(word), 1000000}, 1, stream);
  CheckCode(aclrtRecordEvent(event, stream), ACL_SUCCESS, "record");
  const auto start = std::chrono::steady_clock::now();
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, 50), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
            "stream sync times out");
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, 0), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
            "stream sync polls");
  CheckCode(aclrtSynchronizeEventWithTimeout(event, 50), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
            "event sync times out");
  CheckCode(aclrtSynchronizeDeviceWithTimeout(20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
            "device sync times out");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Check(waited < 0.9, "timeouts return before the kernel ends");
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, -2), ACL_ERROR_INVALID_PARAM, "timeout -2");
  CheckCode(aclrtSynchronizeEventWithTimeout(event, 10000), ACL_SUCCESS, "event completes");
  CheckCode(aclrtSynchronizeStreamWithTimeout(stream, -1), ACL_SUCCESS, "stream completes");
  Check(ReadU32(word, 1)[0] == 1, "the kernel ran");
  CheckCode(aclrtDestroyEvent(event), ACL_SUCCESS, "destroy event");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy stream");
  std::printf("timeouts ok\n");
  return Teardown();
}

int Destroy() {
  Setup();
  void* words = nullptr;
  CheckCode(aclrtMalloc(&words, 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(words, 8, 0, 8), ACL_SUCCESS, "memset");
  aclrtStream waits = nullptr, forced = nullptr;
  CheckCode(aclrtCreateStream(&waits), ACL_SUCCESS, "create");
  CheckCode(aclrtCreateStream(&forced), ACL_SUCCESS, "create");
  Launch("spin_add_one_u32", {Addr(words), 100000}, 1, waits);
  Launch("add_one_u32", {Addr(words)}, 1, waits);
  Launch("spin_add_one_u32", {Addr(words) + 4, 1000000}, 1, forced);
  Launch("add_one_u32", {Addr(words) + 4}, 1, forced);
  const auto forced_at = std::chrono::steady_clock::now();
  CheckCode(aclrtDestroyStreamForce(forced), ACL_SUCCESS, "destroy force");
  Check(std::chrono::steady_clock::now() - forced_at < std::chrono::milliseconds(500),
        "destroy force returns without waiting for the launched work");
  CheckCode(aclrtDestroyStream(waits), ACL_SUCCESS, "destroy waits for queued work");
  Check(ReadU32(words, 1)[0] == 2, "destroy ran the queued work");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past the forced spin's end
  // As on a device: launched work runs to completion after a forced destroy.
  Check(ReadU32(words, 2)[1] == 2, "the force-destroyed stream's launched work still ran");
  CheckCode(aclrtSynchronizeStream(waits), ACL_ERROR_INVALID_PARAM, "destroyed handle is invalid");
  CheckCode(aclrtDestroyStream(forced), ACL_ERROR_INVALID_PARAM, "double destroy is an error");
  CheckCode(aclrtFree(words), ACL_SUCCESS, "aclrtFree");
  std::printf("destroy ok\n");
  return Teardown();
}

// A word of device memory (0) and a new stream busy with a 30 s kernel on it,
// then a kernel that adds one to it: for stopping and aborting.
aclrtStream SpinningStream(void** word) {
  CheckCode(aclrtMalloc(word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(*word, 4, 0, 4), ACL_SUCCESS, "memset");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  Launch("spin_add_one_u32", {Addr(*word), 30000000}, 1, stream);
  Launch("add_one_u32", {Addr(*word)}, 1, stream);
  return stream;
}

// Core limits confine a kernel: the sim runs a kernel's blocks in waves of as
// many AI Cores (one cube and two vector cores each) as the limits leave, so
// under a limit that leaves one, a kernel of N blocks busy 40 ms per wave
// takes N waves. The limits travel with each launch, so only this process's
// kernels are confined.
int CoreLimits() {
  Setup();
  constexpr uint64_t kWaveMicros = 40000;
  void* words = nullptr;
  CheckCode(aclrtMalloc(&words, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(words, 16, 0, 16), ACL_SUCCESS, "memset");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  aclrtEvent start = nullptr, end = nullptr;
  CheckCode(aclrtCreateEvent(&start), ACL_SUCCESS, "create start");
  CheckCode(aclrtCreateEvent(&end), ACL_SUCCESS, "create end");
  // How long a busy kernel of `blocks` blocks keeps the stream, in ms.
  auto timed = [&](uint32_t blocks) {
    CheckCode(aclrtRecordEvent(start, stream), ACL_SUCCESS, "record start");
    Launch("spin_add_one_u32", {Addr(words), kWaveMicros}, blocks, stream);
    CheckCode(aclrtRecordEvent(end, stream), ACL_SUCCESS, "record end");
    CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
    float ms = 0;
    CheckCode(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS, "elapsed");
    return ms;
  };
  // Two vector cores on the stream leave one AI Core: four waves.
  CheckCode(aclrtSetStreamResLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE, 2), ACL_SUCCESS,
            "aclrtSetStreamResLimit");
  float ms = timed(4);
  Check(ms >= 0.9 * 4 * kWaveMicros / 1000,
        "4 blocks on one AI Core took 4 waves: " + std::to_string(ms) + " ms");
  Check(ReadU32(words, 4) == std::vector<uint32_t>{1, 1, 1, 1}, "every block ran");
  // Without the stream's limit, the process's limit on the device holds.
  CheckCode(aclrtResetStreamResLimit(stream), ACL_SUCCESS, "aclrtResetStreamResLimit");
  CheckCode(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 1), ACL_SUCCESS,
            "aclrtSetDeviceResLimit");
  ms = timed(3);
  Check(ms >= 0.9 * 3 * kWaveMicros / 1000,
        "3 blocks on one cube core took 3 waves: " + std::to_string(ms) + " ms");
  Check(ReadU32(words, 4) == std::vector<uint32_t>{2, 2, 2, 1}, "every block ran again");
  CheckCode(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 0), ACL_ERROR_INVALID_PARAM,
            "a limit of no core");
  CheckCode(aclrtSetStreamResLimit(stream, ACL_RT_DEV_RES_VECTOR_CORE, 1u << 20),
            ACL_ERROR_INVALID_PARAM, "a limit past the device's cores");
  CheckCode(aclrtResetDeviceResLimit(0), ACL_SUCCESS, "aclrtResetDeviceResLimit");
  CheckCode(aclrtDestroyEvent(start), ACL_SUCCESS, "destroy start");
  CheckCode(aclrtDestroyEvent(end), ACL_SUCCESS, "destroy end");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(words), ACL_SUCCESS, "aclrtFree");
  std::printf("core limits ok\n");
  return Teardown();
}

// aclrtStreamStop: the kernel running now ends without its effect and fails
// (a synchronization reports ACL_ERROR_RT_INTERNAL_ERROR, as CANN's does after
// a stop); the work queued behind it is kept and runs.
int Stop() {
  Setup();
  CheckCode(aclrtStreamStop(nullptr), ACL_ERROR_INVALID_PARAM, "stop NULL");
  void* word = nullptr;
  aclrtStream stream = SpinningStream(&word);
  aclrtStreamStatus status = ACL_STREAM_STATUS_RESERVED;
  CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "query");
  Check(status == ACL_STREAM_STATUS_NOT_READY, "the spinning kernel is still running");
  const auto stopped_at = std::chrono::steady_clock::now();
  CheckCode(aclrtStreamStop(stream), ACL_SUCCESS, "aclrtStreamStop");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_INTERNAL_ERROR,
            "the stopped kernel's failure, reported by the synchronization");
  Check(std::chrono::steady_clock::now() - stopped_at < std::chrono::seconds(20),
        "the stopped kernel did not run its 30 s");
  Check(ReadU32(word, 1)[0] == 1, "the stopped kernel had no effect; the one after it ran");
  // Nothing running: a stop changes nothing, and the stream goes on.
  CheckCode(aclrtStreamStop(stream), ACL_SUCCESS, "stop an idle stream");
  Launch("add_one_u32", {Addr(word)}, 1, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync after the stop");
  Check(ReadU32(word, 1)[0] == 2, "work launched after the stop ran");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtStreamStop(stream), ACL_ERROR_INVALID_PARAM, "stop a destroyed stream");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "aclrtFree");
  std::printf("stop ok\n");
  return Teardown();
}

int Abort() {
  Setup();
  void* word = nullptr;
  aclrtStream stream = SpinningStream(&word);
  std::atomic<aclError> synced{-1};
  std::thread waiter([&] { synced = aclrtSynchronizeStream(stream); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CheckCode(aclrtStreamAbort(nullptr), ACL_ERROR_INVALID_PARAM, "abort NULL");
  CheckCode(aclrtStreamAbort(stream), ACL_SUCCESS, "aclrtStreamAbort");
  waiter.join();
  // The waiter of discarded work hears so, never success.
  Check(synced == ACL_ERROR_RT_STREAM_ABORT,
        "the pending sync returned " + std::to_string(synced.load()) + " after the abort");
  Check(ReadU32(word, 1)[0] == 0, "the aborted kernels had no effect");
  // The stream stays usable.
  Launch("add_one_u32", {Addr(word)}, 1, stream);
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync after abort");
  Check(ReadU32(word, 1)[0] == 1, "work launched after the abort ran");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "aclrtFree");
  std::printf("abort ok\n");
  return Teardown();
}

template <typename T>
void Put(void* device, const std::vector<T>& values) {
  CheckCode(aclrtMemcpy(device, values.size() * sizeof(T), values.data(), values.size() * sizeof(T),
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS, "aclrtMemcpy to the device");
}

template <typename T>
std::vector<T> Get(const void* device, size_t count) {
  std::vector<T> values(count);
  CheckCode(aclrtMemcpy(values.data(), count * sizeof(T), device, count * sizeof(T),
                        ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS, "aclrtMemcpy from the device");
  return values;
}

// An asynchronous call refused `want`: at once, or (the daemon applies a
// batch of them later) by the next synchronization of `stream`.
void CheckRefused(aclError returned, aclrtStream stream, aclError want, const std::string& what) {
  if (returned != ACL_SUCCESS) return CheckCode(returned, want, what);
  CheckCode(aclrtSynchronizeStream(stream), want, what + ", reported by the synchronization");
}

int Reduce() {
  scenario::Setup();
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  void* dst = nullptr;
  void* src = nullptr;
  CheckCode(aclrtMalloc(&dst, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc dst");
  CheckCode(aclrtMalloc(&src, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc src");

  // Floats: the sample's sum, then MAX and MIN queued behind it, in order.
  Put<float>(dst, {1, 2, 3, 4});
  Put<float>(src, {1, 2, 3, 4});
  CheckCode(aclrtReduceAsync(dst, src, 16, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, stream,
                             nullptr),
            ACL_SUCCESS, "SUM of floats");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<float>(dst, 4) == std::vector<float>({2, 4, 6, 8}), "2 4 6 8");
  Put<float>(src, {3, 3, -1, 100});
  CheckCode(aclrtReduceAsync(dst, src, 16, ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX, ACL_FLOAT, stream,
                             nullptr),
            ACL_SUCCESS, "MAX of floats");
  CheckCode(aclrtReduceAsync(dst, src, 8, ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN, ACL_FLOAT, stream,
                             nullptr),
            ACL_SUCCESS, "MIN of the first two");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<float>(dst, 4) == std::vector<float>({3, 3, 6, 100}), "MAX then MIN, in order");

  // Halves: 1.5 + 2.25 = 3.75 (0x3E00 + 0x4080 = 0x4380); int16 sums wrap around.
  Put<uint16_t>(dst, {0x3E00, 0x7BFF});
  Put<uint16_t>(src, {0x4080, 0x7BFF});
  CheckCode(aclrtReduceAsync(dst, src, 4, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT16, stream,
                             nullptr),
            ACL_SUCCESS, "SUM of halves");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<uint16_t>(dst, 2) == std::vector<uint16_t>({0x4380, 0x7C00}),
        "3.75, and 65504 + 65504 overflows to infinity");
  Put<int16_t>(dst, {32767, -5});
  Put<int16_t>(src, {1, 3});
  CheckCode(aclrtReduceAsync(dst, src, 4, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT16, stream,
                             nullptr),
            ACL_SUCCESS, "SUM of int16");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  Check(Get<int16_t>(dst, 2) == std::vector<int16_t>({-32768, -2}), "int16 sums wrap around");

  // Refused at once.
  CheckCode(aclrtReduceAsync(nullptr, src, 4, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, stream,
                             nullptr),
            ACL_ERROR_INVALID_PARAM, "NULL dst");
  CheckCode(aclrtReduceAsync(dst, src, 4, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_FLOAT, stream, dst),
            ACL_ERROR_INVALID_PARAM, "a reserve that is not NULL");
  CheckCode(aclrtReduceAsync(dst, src, 4, static_cast<aclrtReduceKind>(3), ACL_FLOAT, stream,
                             nullptr),
            ACL_ERROR_INVALID_PARAM, "no such kind");
  CheckRefused(aclrtReduceAsync(dst, src, 65, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT8, stream,
                                nullptr),
               stream, ACL_ERROR_INVALID_PARAM, "past the end of dst");
  int on_stack = 0;
  CheckRefused(aclrtReduceAsync(&on_stack, src, 4, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT32,
                                stream, nullptr),
               stream, ACL_ERROR_INVALID_PARAM, "host memory as dst");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "refusals left the stream alone");

  // A type the device does not reduce fails its task, reported at the synchronization.
  CheckCode(aclrtReduceAsync(dst, src, 8, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT64, stream,
                             nullptr),
            ACL_SUCCESS, "an int64 reduction is queued");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "and fails: the sim does not reduce int64");
  CheckCode(aclrtReduceAsync(dst, src, 6, ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, ACL_INT32, stream,
                             nullptr),
            ACL_SUCCESS, "6 bytes of int32 are queued");
  CheckCode(aclrtSynchronizeStream(stream), ACL_ERROR_INVALID_PARAM,
            "and fail: not a whole number of elements");

  CheckCode(aclrtFree(dst), ACL_SUCCESS, "aclrtFree");
  CheckCode(aclrtFree(src), ACL_SUCCESS, "aclrtFree");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

aclrtPhysicalMemProp DeviceMemory(uint32_t device) {
  aclrtPhysicalMemProp prop = {};
  prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.memAttr = ACL_HBM_MEM_HUGE;
  return prop;
}

int Physical(bool unsupported) {
  scenario::Setup();
  aclrtPhysicalMemProp prop = DeviceMemory(0);
  size_t granularity = 0;
  if (unsupported) {
    CheckCode(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
                                               &granularity),
              ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "no virtual address management here");
    void* address = nullptr;
    CheckCode(aclrtReserveMemAddress(&address, 2 << 20, 0, nullptr, 0),
              ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "aclrtReserveMemAddress");
    aclrtDrvMemHandle handle = nullptr;
    CheckCode(aclrtMallocPhysical(&handle, 2 << 20, &prop, 0), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
              "aclrtMallocPhysical");
    return scenario::Teardown();
  }
  CheckCode(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                                             &granularity),
            ACL_SUCCESS, "aclrtMemGetAllocationGranularity");
  Check(granularity == (2u << 20), "the sim's granularity is 2 MiB");
  CheckCode(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF,
                                             &granularity),
            ACL_ERROR_INVALID_PARAM, "an undefined option");
  aclrtPhysicalMemProp bad = prop;
  bad.location.id = 9;
  CheckCode(aclrtMemGetAllocationGranularity(&bad, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
                                             &granularity),
            ACL_ERROR_RT_INVALID_DEVICEID, "no device 9");
  bad = prop;
  bad.memAttr = ACL_HBM_MEM_HUGE1G;
  aclrtDrvMemHandle handle = nullptr;
  CheckCode(aclrtMallocPhysical(&handle, granularity, &bad, 0), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "1 GiB pages");
  CheckCode(aclrtMallocPhysical(&handle, granularity, &prop, 1), ACL_ERROR_INVALID_PARAM,
            "flags must be 0");
  CheckCode(aclrtMallocPhysical(&handle, 0, &prop, 0), ACL_ERROR_INVALID_PARAM, "size 0");
  CheckCode(aclrtMallocPhysical(&handle, granularity, &prop, 0), ACL_SUCCESS,
            "aclrtMallocPhysical");

  void* first = nullptr;
  void* second = nullptr;
  CheckCode(aclrtReserveMemAddress(&first, 2 * granularity, 4096, nullptr, 0),
            ACL_ERROR_INVALID_PARAM, "alignment is reserved");
  CheckCode(aclrtReserveMemAddress(&first, 2 * granularity, 0, nullptr, 0), ACL_SUCCESS,
            "aclrtReserveMemAddress");
  CheckCode(aclrtReserveMemAddress(&second, granularity, 0, nullptr, 0), ACL_SUCCESS,
            "a second reservation");
  // The handle at the second granule of the first reservation, and without
  // access at the second reservation.
  void* upper = static_cast<char*>(first) + granularity;
  CheckCode(aclrtMapMem(upper, granularity, 0, handle, 0), ACL_SUCCESS, "aclrtMapMem");
  CheckCode(aclrtMemMapNoAccess(second, granularity, 0, handle, 0), ACL_SUCCESS,
            "aclrtMemMapNoAccess");
  CheckCode(aclrtMapMem(upper, granularity, 0, handle, 0), ACL_ERROR_INVALID_PARAM,
            "mapped there already");
  CheckCode(aclrtReleaseMemAddress(first), ACL_ERROR_INVALID_PARAM, "still mapped");

  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "aclrtCreateStream");
  const uint32_t seven = 7;
  CheckCode(aclrtMemcpy(upper, 4, &seven, 4, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
            "a copy to a mapped address");
  uint64_t args[1] = {reinterpret_cast<uintptr_t>(upper)};
  CheckCode(aclsimLaunchKernel("add_one_u32", 1, args, sizeof(args), stream), ACL_SUCCESS,
            "a kernel on a mapped address");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  uint32_t word = 0;
  CheckCode(aclrtMemcpy(&word, 4, second, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM,
            "no access yet");
  aclrtMemAccessDesc access = {};
  access.flags = ACL_RT_MEM_ACCESS_FLAGS_READ;
  access.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  CheckCode(aclrtMemSetAccess(second, granularity, &access, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
            "no read-only mappings");
  access.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
  CheckCode(aclrtMemSetAccess(second, granularity / 2, &access, 1), ACL_ERROR_INVALID_PARAM,
            "not the size of the mapping");
  CheckCode(aclrtMemSetAccess(second, granularity, &access, 1), ACL_SUCCESS, "aclrtMemSetAccess");
  CheckCode(aclrtMemcpy(&word, 4, second, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS,
            "read through the alias");
  Check(word == 8, "the alias sees the kernel's write (7 + 1), got " + std::to_string(word));
  CheckCode(aclrtMemcpy(&word, 4, static_cast<char*>(second) + granularity - 2, 4,
                        ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM, "past the end of the mapping");

  uint64_t shareable = 0;
  CheckCode(aclrtMemExportToShareableHandle(handle, ACL_MEM_HANDLE_TYPE_NONE, 2, &shareable),
            ACL_ERROR_INVALID_PARAM, "flags 2");
  CheckCode(aclrtMemExportToShareableHandleV2(handle, 0, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC,
                                              &shareable),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "fabric handles");
  CheckCode(aclrtMemExportToShareableHandleV2(handle, 0, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT,
                                              &shareable),
            ACL_SUCCESS, "aclrtMemExportToShareableHandleV2");
  CheckCode(aclrtMemExportToShareableHandle(handle, ACL_MEM_HANDLE_TYPE_NONE, 0, &shareable),
            ACL_ERROR_INVALID_PARAM, "exported once already");
  aclrtDrvMemHandle imported = nullptr;
  CheckCode(aclrtMemImportFromShareableHandleV2(&shareable, ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 0,
                                                &imported),
            ACL_ERROR_INVALID_PARAM, "a process cannot import its own export");
  CheckCode(aclrtMemImportFromShareableHandle(shareable ^ 1, 0, &imported),
            ACL_ERROR_INVALID_PARAM, "no such shareable handle");
  const char* message = aclGetRecentErrMsg();
  Check(message != nullptr && std::string(message).find("shareable") != std::string::npos,
        "the refusal says why");

  uint64_t flags = 0;
  aclrtMemLocation location = {};
  location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  CheckCode(aclrtMemGetAccess(second, &location, &flags), ACL_SUCCESS, "aclrtMemGetAccess");
  Check(flags == ACL_RT_MEM_ACCESS_FLAGS_READWRITE, "the alias is read-write now");
  location.type = ACL_MEM_LOCATION_TYPE_HOST;
  CheckCode(aclrtMemGetAccess(second, &location, &flags), ACL_SUCCESS, "aclrtMemGetAccess (host)");
  Check(flags == ACL_RT_MEM_ACCESS_FLAGS_NONE, "the host has no access");
  aclrtPhysicalMemProp made = {};
  CheckCode(aclrtMemGetAllocationPropertiesFromHandle(handle, &made), ACL_SUCCESS,
            "aclrtMemGetAllocationPropertiesFromHandle");
  Check(made.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && made.location.id == 0 &&
            made.memAttr == ACL_HBM_MEM_HUGE,
        "the properties it was made with");
  aclrtDrvMemHandle retained = nullptr;
  CheckCode(aclrtMemRetainAllocationHandle(upper, &retained), ACL_SUCCESS,
            "aclrtMemRetainAllocationHandle");
  Check(retained == handle, "the handle mapped there");
  CheckCode(aclrtFreePhysical(retained), ACL_SUCCESS, "aclrtFreePhysical of the retained one");

  // Freed while mapped: the memory stays until the last mapping goes.
  CheckCode(aclrtFreePhysical(handle), ACL_SUCCESS, "aclrtFreePhysical while mapped");
  CheckCode(aclrtMemcpy(&word, 4, upper, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS,
            "still mapped after the free");
  Check(word == 8, "the memory outlives its handle while mapped");
  CheckCode(aclrtFreePhysical(handle), ACL_ERROR_INVALID_PARAM, "freed twice");
  CheckCode(aclrtUnmapMem(upper), ACL_SUCCESS, "aclrtUnmapMem");
  CheckCode(aclrtUnmapMem(upper), ACL_ERROR_INVALID_PARAM, "unmapped twice");
  CheckCode(aclrtUnmapMem(second), ACL_SUCCESS, "aclrtUnmapMem of the alias");
  CheckCode(aclrtMemcpy(&word, 4, second, 4, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM,
            "unmapped");
  CheckCode(aclrtReleaseMemAddress(first), ACL_SUCCESS, "aclrtReleaseMemAddress");
  CheckCode(aclrtReleaseMemAddress(second), ACL_SUCCESS, "aclrtReleaseMemAddress");
  CheckCode(aclrtReleaseMemAddress(second), ACL_ERROR_INVALID_PARAM, "released twice");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  return scenario::Teardown();
}

int Peers() {
  scenario::Setup();
  int32_t can = -1;
  CheckCode(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS, "aclrtDeviceCanAccessPeer(0, 1)");
  Check(can == 1, "sim device 0 reaches device 1");
  CheckCode(aclrtDeviceCanAccessPeer(&can, 0, 0), ACL_ERROR_INVALID_PARAM, "a device and itself");
  CheckCode(aclrtDeviceCanAccessPeer(&can, 0, 9), ACL_ERROR_RT_INVALID_DEVICEID, "no device 9");
  CheckCode(aclrtDeviceCanAccessPeer(nullptr, 0, 1), ACL_ERROR_INVALID_PARAM, "NULL");

  void* on0 = nullptr;
  CheckCode(aclrtMalloc(&on0, 64, ACL_MEM_MALLOC_HUGE_FIRST_P2P), ACL_SUCCESS, "P2P memory on 0");
  CheckCode(aclrtMemset(on0, 64, 0x5a, 64), ACL_SUCCESS, "aclrtMemset on 0");
  CheckCode(aclrtSetDevice(1), ACL_SUCCESS, "aclrtSetDevice(1)");
  void* on1 = nullptr;
  CheckCode(aclrtMalloc(&on1, 64, ACL_MEM_MALLOC_HUGE_FIRST_P2P), ACL_SUCCESS, "P2P memory on 1");
  CheckCode(aclrtMemset(on1, 64, 0, 64), ACL_SUCCESS, "aclrtMemset on 1");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "a stream on device 1");

  // Without peer access from device 1 to device 0, copies on device 1 are refused.
  CheckCode(aclrtMemcpy(on1, 64, on0, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "a copy from device 0 on device 1 without peer access");
  CheckCode(aclrtMemcpyAsync(on1, 64, on0, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
            ACL_ERROR_INVALID_PARAM, "the same, asynchronous");
  CheckCode(aclrtDeviceDisablePeerAccess(0), ACL_ERROR_INVALID_PARAM, "disabling what is off");
  CheckCode(aclrtDeviceEnablePeerAccess(0, 1), ACL_ERROR_INVALID_PARAM, "flags must be 0");
  CheckCode(aclrtDeviceEnablePeerAccess(1, 0), ACL_ERROR_INVALID_PARAM, "the current device");
  CheckCode(aclrtDeviceEnablePeerAccess(0, 0), ACL_SUCCESS, "enabling 1 -> 0");

  CheckCode(aclrtMemcpy(on1, 32, on0, 32, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS,
            "a copy from device 0 on device 1");
  CheckCode(aclrtMemcpyAsync(static_cast<char*>(on1) + 32, 32, static_cast<char*>(on0) + 32, 32,
                             ACL_MEMCPY_DEFAULT, stream),
            ACL_SUCCESS, "the rest, asynchronous, kind inferred");
  CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "aclrtSynchronizeStream");
  void* host = nullptr;
  CheckCode(aclrtMallocHost(&host, 64), ACL_SUCCESS, "aclrtMallocHost");
  CheckCode(aclrtMemset(host, 64, 0, 64), ACL_SUCCESS, "aclrtMemset of aclrtMallocHost memory");
  CheckCode(aclrtMemcpy(host, 64, on1, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS, "read back");
  const auto* bytes = static_cast<const unsigned char*>(host);
  Check(std::all_of(bytes, bytes + 64, [](unsigned char b) { return b == 0x5a; }),
        "device 0's bytes reached device 1");
  char stack[8];
  CheckCode(aclrtMemset(stack, 8, 0, 8), ACL_ERROR_INVALID_PARAM,
            "aclrtMemset of host memory not from aclrtMallocHost");

  // The direction enabled is the only one: on device 0, the copy needs 0 -> 1.
  CheckCode(aclrtSetDevice(0), ACL_SUCCESS, "back to device 0");
  CheckCode(aclrtMemcpy(on0, 64, on1, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "a copy on device 0 without 0 -> 1");
  CheckCode(aclrtSetDevice(1), ACL_SUCCESS, "device 1 again");
  CheckCode(aclrtDeviceDisablePeerAccess(0), ACL_SUCCESS, "disabling 1 -> 0");
  CheckCode(aclrtMemcpy(on1, 64, on0, 64, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "refused again once disabled");

  CheckCode(aclrtFreeHost(host), ACL_SUCCESS, "aclrtFreeHost");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtFree(on1), ACL_SUCCESS, "aclrtFree on 1");
  CheckCode(aclrtFree(on0), ACL_SUCCESS, "aclrtFree on 0");
  return scenario::Teardown();
}

aclrtStreamStatus StatusOf(aclrtStream stream) {
  aclrtStreamStatus status = ACL_STREAM_STATUS_RESERVED;
  CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "aclrtStreamQuery");
  return status;
}

int Values() {
  scenario::Setup();
  aclrtStream waiter = nullptr, writer = nullptr;
  CheckCode(aclrtCreateStream(&waiter), ACL_SUCCESS, "aclrtCreateStream");
  CheckCode(aclrtCreateStream(&writer), ACL_SUCCESS, "aclrtCreateStream");
  void* words = nullptr;
  CheckCode(aclrtMalloc(&words, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(words, 64, 0, 64), ACL_SUCCESS, "aclrtMemset");
  auto* flag = static_cast<uint64_t*>(words);
  uint64_t* done = flag + 1;

  // Another stream's write releases the wait; what follows the wait runs after it.
  CheckCode(aclrtValueWait(flag, 100, ACL_STREAM_WAIT_VALUE_EQ, waiter), ACL_SUCCESS, "wait == 100");
  CheckCode(aclrtValueWrite(done, 1, 0, waiter), ACL_SUCCESS, "a write behind the wait");
  usleep(100000);
  Check(StatusOf(waiter) == ACL_STREAM_STATUS_NOT_READY, "the wait holds its stream");
  CheckCode(aclrtValueWrite(flag, 99, 0, writer), ACL_SUCCESS, "writing 99");
  CheckCode(aclrtSynchronizeStream(writer), ACL_SUCCESS, "sync the writer");
  usleep(50000);
  Check(StatusOf(waiter) == ACL_STREAM_STATUS_NOT_READY, "99 is not 100: still held");
  CheckCode(aclrtValueWrite(flag, 100, 0, writer), ACL_SUCCESS, "writing 100");
  CheckCode(aclrtSynchronizeStream(waiter), ACL_SUCCESS, "the wait passed");
  Check(Get<uint64_t>(done, 1)[0] == 1, "the write behind the wait ran");

  // A synchronous copy releases a wait too.
  CheckCode(aclrtValueWait(flag, 42, ACL_STREAM_WAIT_VALUE_EQ, waiter), ACL_SUCCESS, "wait == 42");
  Put<uint64_t>(flag, {42});
  CheckCode(aclrtSynchronizeStream(waiter), ACL_SUCCESS, "released by aclrtMemcpy");
  // And a kernel's write (write_i32 sets the low half of the word).
  CheckCode(aclrtValueWait(flag, 7, ACL_STREAM_WAIT_VALUE_EQ, waiter), ACL_SUCCESS, "wait == 7");
  const uint64_t args[] = {reinterpret_cast<uintptr_t>(flag), 7};
  CheckCode(aclsimLaunchKernel("write_i32", 1, args, sizeof(args), writer), ACL_SUCCESS,
            "write_i32");
  CheckCode(aclrtSynchronizeStream(waiter), ACL_SUCCESS, "released by a kernel");

  // The other conditions, against 7 (0b111).
  CheckCode(aclrtValueWait(flag, 5, ACL_STREAM_WAIT_VALUE_GEQ, waiter), ACL_SUCCESS, "7 >= 5");
  CheckCode(aclrtValueWait(flag, 0b1000, ACL_STREAM_WAIT_VALUE_NOR, waiter), ACL_SUCCESS,
            "~(7 | 8) != 0");
  CheckCode(aclrtValueWait(flag, 0b110, ACL_STREAM_WAIT_VALUE_AND, waiter), ACL_SUCCESS,
            "7 & 6 != 0");
  CheckCode(aclrtSynchronizeStream(waiter), ACL_SUCCESS, "all met at once");
  CheckCode(aclrtValueWait(flag, 9, ACL_STREAM_WAIT_VALUE_GEQ, waiter), ACL_SUCCESS, "7 >= 9?");
  usleep(50000);
  Check(StatusOf(waiter) == ACL_STREAM_STATUS_NOT_READY, "GEQ 9 holds at 7");
  CheckCode(aclrtValueWrite(flag, (uint64_t{1} << 63) + 9, 0, writer), ACL_SUCCESS, "2^63 + 9");
  usleep(50000);
  Check(StatusOf(waiter) == ACL_STREAM_STATUS_NOT_READY,
        "GEQ compares the signed difference: (2^63 + 9) - 9 is negative as an int64");
  CheckCode(aclrtValueWrite(flag, 9, 0, writer), ACL_SUCCESS, "writing 9");
  CheckCode(aclrtSynchronizeStream(waiter), ACL_SUCCESS, "9 >= 9");

  // Refusals.
  CheckRefused(aclrtValueWait(flag, 1, 4, waiter), waiter, ACL_ERROR_INVALID_PARAM, "flag 4");
  CheckRefused(aclrtValueWait(static_cast<char*>(words) + 4, 1, ACL_STREAM_WAIT_VALUE_EQ, waiter),
               waiter, ACL_ERROR_INVALID_PARAM, "an unaligned wait");
  CheckRefused(aclrtValueWait(static_cast<char*>(words) + 64, 1, ACL_STREAM_WAIT_VALUE_EQ, waiter),
               waiter, ACL_ERROR_INVALID_PARAM, "a word past the allocation");
  CheckCode(aclrtValueWrite(flag, 1, 1, writer), ACL_ERROR_INVALID_PARAM, "write flag 1");
  CheckCode(aclrtValueWrite(static_cast<char*>(words) + 4, 1, 0, writer), ACL_ERROR_INVALID_PARAM,
            "an unaligned write");
  uint64_t host_word = 0;
  CheckCode(aclrtValueWrite(&host_word, 1, 0, writer), ACL_ERROR_INVALID_PARAM, "host memory");
  CheckCode(aclrtValueWait(nullptr, 1, ACL_STREAM_WAIT_VALUE_EQ, waiter), ACL_ERROR_INVALID_PARAM,
            "NULL");

  // A wait nobody satisfies holds its stream until the stream is aborted.
  CheckCode(aclrtValueWait(flag, 12345, ACL_STREAM_WAIT_VALUE_EQ, waiter), ACL_SUCCESS,
            "a wait nobody satisfies");
  CheckCode(aclrtValueWrite(done, 2, 0, waiter), ACL_SUCCESS, "a write behind it");
  usleep(50000);
  Check(StatusOf(waiter) == ACL_STREAM_STATUS_NOT_READY, "held");
  CheckCode(aclrtStreamAbort(waiter), ACL_SUCCESS, "aclrtStreamAbort");
  CheckCode(aclrtSynchronizeStream(waiter), ACL_SUCCESS, "nothing left on it");
  Check(Get<uint64_t>(done, 1)[0] == 1, "the write behind the aborted wait never ran");
  CheckCode(aclrtDestroyStreamForce(waiter), ACL_SUCCESS, "aclrtDestroyStreamForce");
  CheckCode(aclrtDestroyStream(writer), ACL_SUCCESS, "aclrtDestroyStream");
  CheckCode(aclrtFree(words), ACL_SUCCESS, "aclrtFree");
  return scenario::Teardown();
}

int Notifies() {
  Setup();
  void* word = nullptr;
  CheckCode(aclrtMalloc(&word, 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  CheckCode(aclrtMemset(word, 4, 0, 4), ACL_SUCCESS, "memset");
  aclrtStream producer = nullptr, consumer = nullptr;
  CheckCode(aclrtCreateStream(&producer), ACL_SUCCESS, "create producer");
  CheckCode(aclrtCreateStream(&consumer), ACL_SUCCESS, "create consumer");
  aclrtNotify notify = nullptr;
  CheckCode(aclrtCreateNotify(nullptr, ACL_NOTIFY_DEFAULT), ACL_ERROR_INVALID_PARAM, "NULL out");
  CheckCode(aclrtCreateNotify(&notify, 7), ACL_ERROR_INVALID_PARAM, "unknown flag");
  CheckCode(aclrtCreateNotify(&notify, ACL_NOTIFY_DEFAULT), ACL_SUCCESS, "aclrtCreateNotify");
  uint32_t id = 0;
  CheckCode(aclrtGetNotifyId(notify, &id), ACL_SUCCESS, "aclrtGetNotifyId");
  Check(id != 0, "a notify has an id");

  // The wait is issued before the record (unlike an event wait, it holds).
  CheckCode(aclrtWaitAndResetNotify(notify, consumer, 0), ACL_SUCCESS, "wait");
  Launch("write_i32", {Addr(word), 2}, 1, consumer);
  Launch("spin_add_one_u32", {Addr(word), 100000}, 1, producer);  // 100 ms
  Launch("write_i32", {Addr(word), 1}, 1, producer);
  CheckCode(aclrtRecordNotify(notify, producer), ACL_SUCCESS, "record");
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
  CheckCode(aclrtStreamQuery(consumer, &status), ACL_SUCCESS, "query consumer");
  Check(status == ACL_STREAM_STATUS_NOT_READY, "the consumer waits for the record");
  CheckCode(aclrtSynchronizeStream(consumer), ACL_SUCCESS, "sync consumer");
  Check(ReadU32(word, 1)[0] == 2, "the consumer wrote after the producer");

  // One record releases one wait: the second wait times out (1 s).
  CheckCode(aclrtRecordNotify(notify, producer), ACL_SUCCESS, "record again");
  CheckCode(aclrtSynchronizeStream(producer), ACL_SUCCESS, "sync producer");
  CheckCode(aclrtWaitAndResetNotify(notify, consumer, 1), ACL_SUCCESS, "wait (recorded)");
  CheckCode(aclrtWaitAndResetNotify(notify, consumer, 1), ACL_SUCCESS, "wait (not recorded)");
  CheckCode(aclrtSynchronizeStream(consumer), ACL_ERROR_RT_WAIT_TIMEOUT, "the second wait");

  // An aborted wait takes no record: the record stays for the next wait.
  CheckCode(aclrtWaitAndResetNotify(notify, consumer, 0), ACL_SUCCESS, "wait to abort");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CheckCode(aclrtStreamAbort(consumer), ACL_SUCCESS, "abort the waiting stream");
  CheckCode(aclrtRecordNotify(notify, producer), ACL_SUCCESS, "record after the abort");
  CheckCode(aclrtSynchronizeStream(producer), ACL_SUCCESS, "sync producer");
  CheckCode(aclrtWaitAndResetNotify(notify, consumer, 5), ACL_SUCCESS, "wait after the abort");
  CheckCode(aclrtSynchronizeStream(consumer), ACL_SUCCESS, "the record was still there");

  // A destroyed notify is refused, as is a NULL one.
  CheckCode(aclrtDestroyNotify(notify), ACL_SUCCESS, "aclrtDestroyNotify");
  CheckCode(aclrtRecordNotify(notify, producer), ACL_ERROR_INVALID_PARAM, "record destroyed");
  CheckCode(aclrtWaitAndResetNotify(nullptr, consumer, 0), ACL_ERROR_INVALID_PARAM, "wait NULL");
  CheckCode(aclrtDestroyNotify(notify), ACL_ERROR_INVALID_PARAM, "destroy twice");
  CheckCode(aclrtGetNotifyId(notify, &id), ACL_ERROR_INVALID_PARAM, "id of destroyed");
  CheckCode(aclrtDestroyStream(producer), ACL_SUCCESS, "destroy producer");
  CheckCode(aclrtDestroyStream(consumer), ACL_SUCCESS, "destroy consumer");
  CheckCode(aclrtFree(word), ACL_SUCCESS, "aclrtFree");
  std::printf("notify ok\n");
  return Teardown();
}

int Errors() {
  // Before any device is set, stream calls have no context.
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_ERROR_RT_CONTEXT_NULL, "create stream without device");
  CheckCode(aclrtSetDevice(5), ACL_ERROR_RT_INVALID_DEVICEID, "set device 5");
  CheckCode(aclrtSetDevice(1), ACL_SUCCESS, "set device 1");
  int32_t device = -1;
  CheckCode(aclrtGetDevice(&device), ACL_SUCCESS, "get device");
  Check(device == 1, "current device is 1");
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  void* buffer = nullptr;
  CheckCode(aclrtMalloc(&buffer, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM,
            "malloc 0");
  CheckCode(aclrtMalloc(nullptr, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM,
            "malloc NULL");
  CheckCode(aclrtMalloc(&buffer, 16, static_cast<aclrtMemMallocPolicy>(99)),
            ACL_ERROR_INVALID_PARAM, "malloc bad policy");
  CheckCode(aclrtMalloc(&buffer, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc 64");
  size_t free_bytes = 0, total = 0;
  CheckCode(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), ACL_SUCCESS, "get mem info");
  Check(total > 0 && free_bytes <= total, "mem info is consistent");
  void* huge = nullptr;
  CheckCode(aclrtMalloc(&huge, total + 1, ACL_MEM_MALLOC_HUGE_FIRST),
            ACL_ERROR_RT_MEMORY_ALLOCATION, "malloc beyond the device");
  uint8_t host[128] = {};
  CheckCode(aclrtMemcpy(buffer, 64, host, 65, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "count > destMax");
  CheckCode(aclrtMemcpy(buffer, 128, host, 128, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "past the end");
  CheckCode(aclrtMemcpy(host, 64, buffer, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "kind does not match the pointers");
  CheckCode(aclrtMemcpy(nullptr, 64, buffer, 64, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM, "NULL dst");
  CheckCode(aclrtMemset(buffer, 64, 1, 65), ACL_ERROR_INVALID_PARAM, "memset count > max");
  CheckCode(aclrtMemset(host, 64, 1, 64), ACL_ERROR_INVALID_PARAM, "memset host pointer");
  uint64_t args[2] = {reinterpret_cast<uintptr_t>(buffer), 0};
  CheckCode(aclsimLaunchKernel("no_such_kernel", 1, args, 8, stream), ACL_ERROR_INVALID_PARAM,
            "unknown kernel");
  CheckCode(aclsimLaunchKernel("add_one_u32", 0, args, 8, stream), ACL_ERROR_INVALID_PARAM,
            "blockDim 0");
  CheckCode(aclsimLaunchKernel("add_one_u32", 1, args, 16, stream), ACL_ERROR_INVALID_PARAM,
            "wrong argsSize");
  CheckCode(aclsimLaunchKernel("add_one_u32", 1, args, 8, reinterpret_cast<aclrtStream>(12345)),
            ACL_ERROR_INVALID_PARAM, "unknown stream handle");
  CheckCode(aclsimLaunchKernel("add_one_u32", 1, args, 8, nullptr), ACL_SUCCESS,
            "NULL stream is the default stream");
  CheckCode(aclrtSynchronizeStream(nullptr), ACL_SUCCESS, "sync default stream");
  aclrtStream default_stream = nullptr;
  CheckCode(aclrtCtxGetCurrentDefaultStream(&default_stream), ACL_SUCCESS, "default stream");
  CheckCode(aclrtDestroyStream(default_stream), ACL_ERROR_INVALID_PARAM,
            "the default stream cannot be destroyed");
  CheckCode(aclrtFree(buffer), ACL_SUCCESS, "free");
  CheckCode(aclrtFree(buffer), ACL_ERROR_INVALID_PARAM, "double free");
  CheckCode(aclrtFree(reinterpret_cast<void*>(0x4000000000001000ull)), ACL_ERROR_INVALID_PARAM,
            "free of an unknown pointer");
  CheckCode(aclrtFreeHost(host), ACL_ERROR_INVALID_PARAM, "free host of a stack pointer");
  CheckCode(aclrtStreamWaitEvent(stream, nullptr), ACL_ERROR_INVALID_PARAM, "NULL event");
  aclrtEvent start = nullptr, end = nullptr;
  CheckCode(aclrtCreateEvent(&start), ACL_SUCCESS, "create event");
  CheckCode(aclrtCreateEvent(&end), ACL_SUCCESS, "create event");
  float ms = 0;
  CheckCode(aclrtEventElapsedTime(&ms, start, end), ACL_ERROR_RT_EVENT_NOT_COMPLETE,
            "elapsed of unrecorded events");
  CheckCode(aclrtDestroyEvent(start), ACL_SUCCESS, "destroy event");
  CheckCode(aclrtDestroyEvent(start), ACL_ERROR_INVALID_PARAM, "double destroy event");
  CheckCode(aclrtDestroyEvent(end), ACL_SUCCESS, "destroy event");

  // Contexts.
  aclrtContext created = nullptr, current = nullptr;
  CheckCode(aclrtCreateContext(&created, 0), ACL_SUCCESS, "create context");
  CheckCode(aclrtGetCurrentContext(&current), ACL_SUCCESS, "get current context");
  Check(current == created, "a created context becomes current");
  CheckCode(aclrtGetDevice(&device), ACL_SUCCESS, "get device");
  Check(device == 0, "the created context's device is current");
  CheckCode(aclrtDestroyContext(created), ACL_SUCCESS, "destroy context");
  CheckCode(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL, "no current context");
  CheckCode(aclrtSetCurrentContext(created), ACL_ERROR_INVALID_PARAM, "destroyed context");

  char soc[64] = {};
  const char* name = aclrtGetSocName();
  Check(name != nullptr && std::strlen(name) > 0, "a SoC name");
  if (name) std::snprintf(soc, sizeof(soc), "%s", name);
  aclrtRunMode mode = ACL_DEVICE;
  CheckCode(aclrtGetRunMode(&mode), ACL_SUCCESS, "run mode");
  Check(mode == ACL_HOST, "run mode is ACL_HOST");
  aclrtDeviceStatus device_status = ACL_RT_DEVICE_STATUS_ABNORMAL;
  CheckCode(aclrtQueryDeviceStatus(0, &device_status), ACL_SUCCESS, "device status");
  Check(device_status == ACL_RT_DEVICE_STATUS_NORMAL, "device is normal");
  CheckCode(aclrtQueryDeviceStatus(9, &device_status), ACL_ERROR_RT_INVALID_DEVICEID,
            "device status of a missing device");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy stream");
  std::printf("errors ok soc=%s\n", soc);
  return Teardown();
}

void* AllocatorAlloc(aclrtAllocator, size_t) { return nullptr; }
void AllocatorFree(aclrtAllocator, aclrtAllocatorBlock) {}
void* AllocatorAdvise(aclrtAllocator, size_t, aclrtAllocatorAddr) { return nullptr; }
void* AllocatorAddr(aclrtAllocatorBlock block) { return block; }

int Allocator() {
  Setup();
  int object = 0;
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  aclrtAllocatorDesc desc = aclrtAllocatorCreateDesc();
  Check(desc != nullptr, "a descriptor");
  CheckCode(aclrtAllocatorSetObjToDesc(nullptr, &object), ACL_ERROR_INVALID_PARAM, "NULL desc");
  CheckCode(aclrtAllocatorSetObjToDesc(desc, nullptr), ACL_ERROR_INVALID_PARAM, "NULL obj");
  CheckCode(aclrtAllocatorSetObjToDesc(desc, &object), ACL_SUCCESS, "set obj");
  CheckCode(aclrtAllocatorSetAllocFuncToDesc(desc, AllocatorAlloc), ACL_SUCCESS, "set alloc");
  CheckCode(aclrtAllocatorSetFreeFuncToDesc(desc, AllocatorFree), ACL_SUCCESS, "set free");
  CheckCode(aclrtAllocatorRegister(stream, desc), ACL_ERROR_INVALID_PARAM,
            "register without getAddrFromBlock");
  CheckCode(aclrtAllocatorSetGetAddrFromBlockFuncToDesc(desc, AllocatorAddr), ACL_SUCCESS,
            "set getAddr");
  CheckCode(aclrtAllocatorRegister(nullptr, desc), ACL_ERROR_INVALID_PARAM, "NULL stream");
  CheckCode(aclrtAllocatorRegister(stream, nullptr), ACL_ERROR_INVALID_PARAM, "NULL desc");
  CheckCode(aclrtAllocatorRegister(stream, desc), ACL_SUCCESS, "register");
  // The desc is copied at registration: later changes do not show.
  CheckCode(aclrtAllocatorSetAllocAdviseFuncToDesc(desc, AllocatorAdvise), ACL_SUCCESS,
            "set advise");
  aclrtAllocatorDesc got_desc = nullptr;
  aclrtAllocator got_object = nullptr;
  aclrtAllocatorAllocFunc got_alloc = nullptr;
  aclrtAllocatorAllocAdviseFunc got_advise = AllocatorAdvise;
  CheckCode(aclrtAllocatorGetByStream(stream, &got_desc, &got_object, &got_alloc, nullptr,
                                      &got_advise, nullptr),
            ACL_SUCCESS, "get by stream");
  Check(got_desc == desc && got_object == &object && got_alloc == AllocatorAlloc,
        "the registration's contents");
  Check(got_advise == nullptr, "the copy predates the advise function");
  CheckCode(aclrtAllocatorGetByStream(stream, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            ACL_ERROR_INVALID_PARAM, "desc out-pointer required");
  CheckCode(aclrtAllocatorUnregister(stream), ACL_SUCCESS, "unregister");
  CheckCode(aclrtAllocatorUnregister(stream), ACL_SUCCESS, "unregister again");
  CheckCode(
      aclrtAllocatorGetByStream(stream, &got_desc, nullptr, nullptr, nullptr, nullptr, nullptr),
      ACL_ERROR_INVALID_PARAM, "not registered");
  const char* message = aclGetRecentErrMsg();
  Check(message != nullptr &&
            std::strstr(message, "The stream is not registered with any allocator") != nullptr,
        "the documented message");
  // Destroying a stream drops its registration.
  CheckCode(aclrtAllocatorRegister(stream, desc), ACL_SUCCESS, "register again");
  CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy stream");
  CheckCode(
      aclrtAllocatorGetByStream(stream, &got_desc, nullptr, nullptr, nullptr, nullptr, nullptr),
      ACL_ERROR_INVALID_PARAM, "dropped with its stream");
  CheckCode(aclrtAllocatorDestroyDesc(desc), ACL_SUCCESS, "destroy desc");
  CheckCode(aclrtAllocatorDestroyDesc(desc), ACL_ERROR_INVALID_PARAM, "destroy desc twice");
  std::printf("allocator ok\n");
  return Teardown();
}


int Victim() {
  Setup();
  void* buffer = nullptr;
  CheckCode(aclrtMalloc(&buffer, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  std::vector<uint32_t> pattern(1024);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint32_t>(i * 2654435761u);
  CheckCode(aclrtMemcpy(buffer, 4096, pattern.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS,
            "fill");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  std::printf("ready %" PRIu64 " %" PRIu64 "\n", Addr(buffer),
              static_cast<uint64_t>(reinterpret_cast<uintptr_t>(stream)));
  std::fflush(stdout);
  scenario::NextLine();
  Check(ReadU32(buffer, 1024) == pattern, "the victim's data is intact");
  CheckCode(aclrtFree(buffer), ACL_SUCCESS, "the victim can still free its memory");
  std::printf("victim intact\n");
  return Teardown();
}

// `opaque_kernels`: the backend cannot see what a kernel's arguments point at
// (acl: docs/security.md), so a kernel aimed at their memory is not tried.
int Attacker(uint64_t address, uint64_t stream_handle, bool opaque_kernels) {
  Setup();
  void* theirs = reinterpret_cast<void*>(address);
  aclrtStream their_stream = reinterpret_cast<aclrtStream>(stream_handle);
  uint32_t buffer[16] = {};
  CheckCode(aclrtMemcpy(buffer, 64, theirs, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM,
            "read another process's memory");
  CheckCode(aclrtMemcpy(theirs, 64, buffer, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM,
            "write another process's memory");
  CheckCode(aclrtMemset(theirs, 64, 0, 64), ACL_ERROR_INVALID_PARAM,
            "memset another process's memory");
  CheckCode(aclrtFree(theirs), ACL_ERROR_INVALID_PARAM, "free another process's memory");
  CheckCode(aclrtSynchronizeStream(their_stream), ACL_ERROR_INVALID_PARAM,
            "use another process's stream");
  uint64_t args[1] = {address};
  CheckCode(aclsimLaunchKernel("add_one_u32", 1, args, 8, their_stream), ACL_ERROR_INVALID_PARAM,
            "launch on another process's stream");
  // A kernel on its own stream pointing at their memory fails its task instead.
  aclrtStream mine = nullptr;
  CheckCode(aclrtCreateStream(&mine), ACL_SUCCESS, "create own stream");
  if (!opaque_kernels) {
    CheckCode(
        aclsimLaunchKernel("write_i32", 1, std::vector<uint64_t>{address, 7}.data(), 16, mine),
        ACL_SUCCESS, "launch aimed at their memory");
    CheckCode(aclrtSynchronizeStream(mine), ACL_ERROR_INVALID_PARAM, "the task is refused");
  }
  CheckCode(aclrtMemcpyAsync(theirs, 64, buffer, 64, ACL_MEMCPY_HOST_TO_DEVICE, mine), ACL_SUCCESS,
            "async copy aimed at their memory");
  CheckCode(aclrtSynchronizeStream(mine), ACL_ERROR_INVALID_PARAM, "the async copy is refused");
  CheckCode(aclrtDestroyStream(mine), ACL_SUCCESS, "destroy own stream");
  std::printf("attacker refused\n");
  return Teardown();
}

int HoldMemory(size_t mib) {
  Setup();
  void* buffer = nullptr;
  CheckCode(aclrtMalloc(&buffer, mib << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  Launch("spin_add_one_u32", {Addr(buffer), 60000000}, 1, stream);  // a minute of work
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;  // a call: the launch has reached acld
  CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "query");
  Check(status == ACL_STREAM_STATUS_NOT_READY, "the kernel is running");
  std::printf("ready\n");
  std::fflush(stdout);
  scenario::NextLine();
  return scenario::ExitCode();
}

// A program that frees memory its queued kernels still use (their pointers
// are opaque on a real device, so nobody but the program can tell).
int FreeUnderKernels() {
  Setup();
  void* buffer = nullptr;
  CheckCode(aclrtMalloc(&buffer, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "aclrtMalloc");
  aclrtStream stream = nullptr;
  CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  Launch("spin_add_one_u32", {Addr(buffer), 60000000}, 1, stream);  // a minute of work
  for (int i = 0; i < 8; ++i) Launch("add_one_u32", {Addr(buffer)}, 1, stream);
  CheckCode(aclrtFree(buffer), ACL_SUCCESS, "aclrtFree under queued kernels");
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;  // a call: all of it has reached acld
  CheckCode(aclrtStreamQuery(stream, &status), ACL_SUCCESS, "query");
  Check(status == ACL_STREAM_STATUS_NOT_READY, "the kernels are queued");
  std::printf("freed\n");
  std::fflush(stdout);
  scenario::NextLine();
  CheckCode(aclrtStreamAbort(stream), ACL_SUCCESS, "aclrtStreamAbort");
  std::printf("aborted\n");
  std::fflush(stdout);
  scenario::NextLine();
  return scenario::ExitCode();
}

int SetDeviceOnly(int32_t device) {
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  const aclError code = aclrtSetDevice(device);
  const char* message = aclGetRecentErrMsg();
  std::printf("set_device %d %s\n", code, code != ACL_SUCCESS && message ? message : "");
  std::fflush(stdout);
  return scenario::Teardown();
}

int HoldStreams(int count) {
  Setup();
  std::vector<aclrtStream> streams(count);
  for (auto& stream : streams) CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  std::printf("ready\n");
  std::fflush(stdout);
  scenario::NextLine();
  return scenario::ExitCode();
}

int StallCopies() {
  Setup();
  constexpr size_t kBytes = 32 << 20;
  void* device = nullptr;
  CheckCode(aclrtMalloc(&device, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  aclrtContext context = nullptr;
  CheckCode(aclrtGetCurrentContext(&context), ACL_SUCCESS, "context");
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      aclrtSetCurrentContext(context);
      aclrtStream stream = nullptr;
      CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
      Launch("spin_add_one_u32", {Addr(device), 500000}, 1, stream);  // reached in 0.5 s
      std::vector<uint8_t> host(kBytes);
      aclrtMemcpyAsync(host.data(), kBytes, device, kBytes, ACL_MEMCPY_DEVICE_TO_HOST, stream);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::printf("stalling\n");
  std::fflush(stdout);
  for (auto& thread : threads) thread.join();
  return scenario::ExitCode();
}

int Workload(int streams, int launches) {
  Setup();
  std::vector<aclrtStream> handles(streams);
  void* counters = nullptr;
  CheckCode(aclrtMalloc(&counters, streams * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtMemset(counters, streams * 4, 0, streams * 4), ACL_SUCCESS, "memset");
  for (auto& stream : handles) CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create stream");
  for (int i = 0; i < launches; ++i) {
    for (int s = 0; s < streams; ++s)
      Launch("add_one_u32", {Addr(counters) + 4 * s}, 1, handles[s]);
  }
  for (auto& stream : handles) CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  const std::vector<uint32_t> values = ReadU32(counters, streams);
  for (int s = 0; s < streams; ++s) {
    Check(values[s] == static_cast<uint32_t>(launches),
          "every launch of stream " + std::to_string(s));
  }
  for (auto& stream : handles) CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  CheckCode(aclrtFree(counters), ACL_SUCCESS, "free");
  std::printf("workload %d streams x %d launches ok\n", streams, launches);
  return Teardown();
}

void CountHostFunc(void* counter) { ++*static_cast<std::atomic<int>*>(counter); }

int Stress(uint64_t seed) {
  std::mt19937_64 random(seed);
  constexpr int kStreams = 16, kRounds = 20, kLaunchesPerRound = 10;
  CheckCode(aclInit(nullptr), ACL_SUCCESS, "aclInit");
  const int extra = static_cast<int>(random() % 4);
  for (int i = 0; i < extra; ++i) {
    CheckCode(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE, "extra aclInit");
  }
  CheckCode(aclrtSetDevice(static_cast<int32_t>(seed % 2)), ACL_SUCCESS, "aclrtSetDevice");
  void* words = nullptr;
  void* scratch = nullptr;
  CheckCode(aclrtMalloc(&words, kStreams * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc");
  CheckCode(aclrtMalloc(&scratch, kStreams * 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS,
            "malloc");
  CheckCode(aclrtMemset(words, kStreams * 4, 0, kStreams * 4), ACL_SUCCESS, "memset");
  std::vector<aclrtStream> streams(kStreams);
  for (auto& stream : streams) CheckCode(aclrtCreateStream(&stream), ACL_SUCCESS, "create");
  std::vector<uint8_t> payload(4096, static_cast<uint8_t>(seed));
  std::atomic<int> host_funcs{0};
  for (int round = 0; round < kRounds; ++round) {
    for (int s = 0; s < kStreams; ++s) {
      for (int i = 0; i < kLaunchesPerRound; ++i) {
        Launch("add_one_u32", {Addr(words) + 4 * s}, 1, streams[s]);
      }
      CheckCode(aclrtMemcpyAsync(reinterpret_cast<void*>(Addr(scratch) + 4096 * s), 4096,
                                 payload.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE, streams[s]),
                ACL_SUCCESS, "copy");
      CheckCode(aclrtLaunchHostFunc(streams[s], CountHostFunc, &host_funcs), ACL_SUCCESS,
                "host func");
    }
  }
  for (auto& stream : streams) CheckCode(aclrtSynchronizeStream(stream), ACL_SUCCESS, "sync");
  const std::vector<uint32_t> values = ReadU32(words, kStreams);
  for (int s = 0; s < kStreams; ++s) {
    Check(values[s] == kRounds * kLaunchesPerRound, "every launch of stream " + std::to_string(s));
  }
  Check(host_funcs == kStreams * kRounds, "every host func ran once");
  std::vector<uint8_t> back(4096);
  CheckCode(aclrtMemcpy(back.data(), 4096, scratch, 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS,
            "read back");
  Check(back == payload, "the copies landed");
  for (auto& stream : streams) CheckCode(aclrtDestroyStream(stream), ACL_SUCCESS, "destroy");
  for (int i = 0; i <= extra; ++i) {
    CheckCode(aclFinalizeReference(nullptr), ACL_SUCCESS, "aclFinalizeReference");
  }
  std::printf("stress %" PRIu64 " ok\n", seed);
  return scenario::ExitCode();
}

void CheckQuotaMessage(const char* what) {
  const char* message = aclGetRecentErrMsg();
  Check(message != nullptr && std::strstr(message, "quota") != nullptr,
        std::string(what) + " names the quota: " + (message ? message : "no message"));
}

int QuotaProbe(uint64_t bytes, int streams) {
  Setup();
  void* too_much = nullptr;
  // The quota is what `bytes` reserve; 64 more bytes reserve more on every
  // backend (the sim rounds to 512, acl to 64 after 32 of padding).
  CheckCode(aclrtMalloc(&too_much, bytes + 64, ACL_MEM_MALLOC_HUGE_FIRST),
            ACL_ERROR_RT_MEMORY_ALLOCATION, "malloc over the quota");
  CheckQuotaMessage("the memory error");
  void* all = nullptr;
  CheckCode(aclrtMalloc(&all, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS, "malloc the quota");
  std::vector<aclrtStream> created;
  aclError code = ACL_SUCCESS;
  while (code == ACL_SUCCESS && created.size() < 100000) {
    aclrtStream stream = nullptr;
    code = aclrtCreateStream(&stream);
    if (code == ACL_SUCCESS) created.push_back(stream);
  }
  CheckCode(code, ACL_ERROR_RT_NO_STREAM_RESOURCE, "stream over the quota");
  CheckQuotaMessage("the stream error");
  Check(static_cast<int>(created.size()) == streams - 1,
        "streams created besides the default one: " + std::to_string(created.size()));
  std::printf("quota_probe ok streams=%zu\n", created.size());
  return Teardown();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto number = [&](int index) -> uint64_t {
    return argc > index ? std::strtoull(argv[index], nullptr, 10) : 0;
  };
  if (mode == "roundtrip") return RoundTrip((number(2) > 0 ? number(2) : 64) << 20);
  if (mode == "roundtrip_bytes") return RoundTrip(number(2));
  if (mode == "ordering") return Ordering();
  if (mode == "failure_modes") return FailureModes();
  if (mode == "timeouts") return Timeouts();
  if (mode == "destroy") return Destroy();
  if (mode == "abort") return Abort();
  if (mode == "stop") return Stop();
  if (mode == "core_limits") return CoreLimits();
  if (mode == "errors") return Errors();
  if (mode == "notify") return Notifies();
  if (mode == "reduce") return Reduce();
  if (mode == "peers") return Peers();
  if (mode == "physical") return Physical(argc > 2 && std::string(argv[2]) == "unsupported");
  if (mode == "values") return Values();
  if (mode == "allocator") return Allocator();
  if (mode == "victim") return Victim();
  if (mode == "attacker" && argc > 3) {
    return Attacker(number(2), number(3), argc > 4 && std::string(argv[4]) == "opaque_kernels");
  }
  if (mode == "hold_memory") return HoldMemory(number(2) > 0 ? number(2) : 16);
  if (mode == "free_under_kernels") return FreeUnderKernels();
  if (mode == "stress") return Stress(number(2));
  if (mode == "hold_streams") return HoldStreams(static_cast<int>(number(2)));
  if (mode == "set_device" && argc > 2) return SetDeviceOnly(static_cast<int32_t>(number(2)));
  if (mode == "stall_copies") return StallCopies();
  if (mode == "quota_probe" && argc > 3) return QuotaProbe(number(2), static_cast<int>(number(3)));
  if (mode == "workload" && argc > 3)
    return Workload(static_cast<int>(number(2)), static_cast<int>(number(3)));
  std::fprintf(stderr, "usage: see the comment at the top of device_client.cc\n");
  return 2;
}
