// A recording fake of the vendor AscendCL runtime, for the acl backend's
// tests: a shared object exporting the acl* functions the backend's table
// needs (hal/acl/vendor_api.h), over a trivial host-memory "device".
//
// It behaves as a CANN runtime does where the backend depends on it, and
// refuses what CANN would not forgive:
//  - calls that need a context fail with ACL_ERROR_RT_CONTEXT_NULL on a thread
//    that has none (aclrtSetDevice, aclrtCreateContext and
//    aclrtSetCurrentContext give a thread one), and with
//    ACL_ERROR_RT_STREAM_CONTEXT when the stream belongs to another device;
//  - aclrtLaunchCallback on a stream no thread subscribed to fails with
//    ACL_ERROR_RT_STREAM_NO_CB_REG; callbacks run only inside
//    aclrtProcessReport on the subscribed thread, in order; a blocking
//    callback holds its stream until it returns;
//  - aclrtMemcpyAsync whose host memory is neither registered
//    (aclrtHostRegister[V2]) nor pinned (aclrtMallocHost) is performed
//    synchronously, as CANN does, and logged with the note "made-synchronous"
//    (recorded rather than refused, because CANN accepts it);
//  - aclrtLaunchKernel takes its argument block in device memory;
//  - aclrtStreamStop stops only a wait at the stream's head (the one task
//    that can be executing), which fails with ACL_ERROR_RT_INTERNAL_ERROR;
//  - aclrtStreamWaitEvent needs an ACL_EVENT_SYNC event and
//    aclrtEventGetTimestamp an ACL_EVENT_TIME_LINE one; host registrations
//    must be page aligned.
// Fresh device memory holds a stale pattern (0xA5), as another tenant's bytes
// would. Async work runs at once unless its stream is held (by a blocking
// callback or an event wait); the device clock is microseconds since a
// made-up boot 5000 s before the host's monotonic clock.
//
// Kernel binaries are text: a first line "FAKEKERNELS", then one kernel per
// line, "<name> increment" (arguments: uint64 address, uint64 count; adds 1
// to each byte) or "<name> fail <code>" (fails with that code, reported
// through the exception callbacks).
//
// Every exported call is logged as "<name> <pthread id> <result>[ <note>]";
// fakeVendorCallLog() copies the log out, fakeVendorClearCallLog() empties it,
// and fakeVendorFailNext(name, code, hold) makes the next call of `name` fail
// (held, if asked, until fakeVendorLetGo()), fakeVendorFailNextCalls(name,
// code, times) the next `times` calls; fakeVendorSetNextTaskId(id)
// makes task ids come round again.
// Compiled with FAKE_VENDOR_LEGACY it lacks the backend's optional symbols
// (an older CANN); with FAKE_VENDOR_WITHOUT_LAUNCH_KERNEL it lacks a required
// one.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

// Only the error codes and base types come from our public headers: the
// runtime's declarations there grow as the client does, and the fake must
// not depend on which of them exist. Enumerations are passed as int, as the
// C ABI does.
#include "acl/acl_base.h"

// aclrtUtilizationInfo as CANN lays it out.
struct aclrtUtilizationInfo {
  int32_t cubeUtilization;
  int32_t vectorUtilization;
  int32_t aicpuUtilization;
  int32_t memoryUtilization;
  void* utilizationExtend;
};

// The vendor's exception info (opaque in the public headers).
struct rtExceptionInfo {
  uint32_t taskid;
  uint32_t streamid;
  uint32_t tid;
  uint32_t deviceid;
  uint32_t retcode;
};

namespace {

// CANN's runtime values the fake needs.
enum MemcpyKind : int {
  kHostToHost = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3,
};
constexpr int kCallbackBlock = 1;                      // ACL_CALLBACK_BLOCK
constexpr uint32_t kEventSync = 0x1;                   // ACL_EVENT_SYNC
constexpr uint32_t kEventTimeLine = 0x8;               // ACL_EVENT_TIME_LINE
constexpr int kEventRecordedNotReady = 0;              // ACL_EVENT_RECORDED_STATUS_NOT_READY
constexpr int kEventRecordedComplete = 1;              // ACL_EVENT_RECORDED_STATUS_COMPLETE
using Callback = void (*)(void*);                      // aclrtCallback
using ExceptionCallback = void (*)(rtExceptionInfo*);  // aclrtExceptionInfoCallback

constexpr int64_t kDeviceBootOffsetMicros = 5000LL * 1000 * 1000;
constexpr uintptr_t kHostPageSize = 4096;
constexpr unsigned char kStalePattern = 0xA5;

struct Context {
  int32_t device;
  bool alive = true;
};

struct Event {
  uint32_t flags;
  uint64_t recorded = 0;  // records submitted
  uint64_t executed = 0;  // latest record that ran
  int64_t timestamp_micros = 0;
};

// aclrtCreateNotify: set by a record, taken (and reset) by one wait.
struct Notify {
  bool set = false;
};

struct Kernel {
  std::string name;
  bool fails = false;
  int32_t code = 0;
};

struct Binary {
  std::vector<std::unique_ptr<Kernel>> kernels;
};

struct Stream;

// aclrtReduceKind's SUM, MAX and MIN (acl_rt.h, which this file does not include).
constexpr int kReduceSum = 10, kReduceMax = 11, kReduceMin = 12;

struct Task {
  enum Kind {
    kCopy,
    kMemset,
    kReduce,
    kKernel,
    kRecord,
    kWait,
    kCallback,
    kNotifyRecord,
    kNotifyWait
  } kind;
  uint32_t task_id = 0;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t count = 0;
  int value = 0;
  int reduce_kind = kReduceSum;
  int data_type = ACL_INT32;  // kReduce: ACL_INT32 or ACL_FLOAT
  Kernel* kernel = nullptr;
  const void* args = nullptr;
  size_t args_size = 0;
  Event* event = nullptr;
  uint64_t ordinal = 0;
  Notify* notify = nullptr;
  Callback callback = nullptr;
  void* user_data = nullptr;
  bool block = false;
};

// A reduction of 4-byte elements (the fake reduces int32 and float only).
template <typename T>
void Reduce(const Task& task) {
  for (size_t offset = 0; offset + sizeof(T) <= task.count; offset += sizeof(T)) {
    T a, b;
    std::memcpy(&a, static_cast<uint8_t*>(task.dst) + offset, sizeof(T));
    std::memcpy(&b, static_cast<const uint8_t*>(task.src) + offset, sizeof(T));
    T result = a + b;
    if (task.reduce_kind == kReduceMax) result = a > b ? a : b;
    if (task.reduce_kind == kReduceMin) result = a < b ? a : b;
    if (task.reduce_kind == kReduceSum && !std::is_floating_point<T>::value) {
      result = static_cast<T>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
    }
    std::memcpy(static_cast<uint8_t*>(task.dst) + offset, &result, sizeof(T));
  }
}

struct Stream {
  int32_t device;
  int32_t id;
  uint64_t subscriber = 0;  // 0: none
  std::deque<Task> queue;
  bool held_by_callback = false;
  int32_t sticky_error = ACL_SUCCESS;
  uint64_t aborts = 0;
  uint32_t next_task_id = 1;
  bool destroyed = false;
};

struct Report {
  Callback callback;
  void* user_data;
  Stream* stream;
  bool block;
};

struct Device {
  int32_t set_count = 0;
  uint64_t total = 0;
  uint64_t used = 0;
  int32_t next_stream_id = 0;
  Context* default_context = nullptr;
};

struct State {
  bool initialized = false;
  std::vector<Device> devices;
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Event>> events;
  std::vector<std::unique_ptr<Notify>> notifies;
  std::vector<std::unique_ptr<Binary>> binaries;
  std::map<uintptr_t, std::pair<size_t, int32_t>> allocations;  // address -> size, device
  std::map<uintptr_t, size_t> registered;                       // host registrations
  std::map<uintptr_t, size_t> pinned;                           // aclrtMallocHost
  std::map<uint64_t, std::deque<Report>> reports;               // by subscribed thread
  ExceptionCallback legacy_exception_callback = nullptr;
  std::vector<ExceptionCallback> exception_callbacks;
};

std::mutex state_mu;
std::condition_variable state_cv;
State state;

std::mutex log_mu;
std::vector<std::string> call_log;
std::condition_variable log_cv;  // holding
struct InjectedFailure {
  std::string name;
  aclError code = ACL_SUCCESS;
  bool hold = false;
  int times = 1;  // calls of `name` that fail
};
InjectedFailure injected_failure;  // fakeVendorFailNext's
bool holding = false;              // a failing call waits for fakeVendorLetGo

thread_local Context* current_context = nullptr;
thread_local uint32_t last_task_id = 0;
thread_local const char* call_note = nullptr;

uint64_t ThreadId() { return static_cast<uint64_t>(pthread_self()); }

int64_t DeviceNowMicros() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000 + kDeviceBootOffsetMicros;
}

// The failure fakeVendorFailNext set for the next call of `name`, taken
// (ACL_SUCCESS: none); held until fakeVendorLetGo if it was to be held.
aclError TakeInjectedFailure(const char* name) {
  std::unique_lock<std::mutex> lock(log_mu);
  if (injected_failure.name != name) return ACL_SUCCESS;
  const InjectedFailure taken = injected_failure;
  if (--injected_failure.times <= 0) injected_failure = {};
  if (taken.hold) {
    holding = true;
    log_cv.notify_all();
    log_cv.wait(lock, [] { return !holding; });
  }
  return taken.code;
}

template <typename Fn>
auto Logged(const char* name, Fn fn) -> decltype(fn()) {
  call_note = nullptr;
  decltype(fn()) result{};
  if constexpr (std::is_same_v<decltype(fn()), aclError>) {
    result = TakeInjectedFailure(name);
    if (result != ACL_SUCCESS) call_note = "injected";
  }
  if (call_note == nullptr) result = fn();
  std::ostringstream line;
  line << name << ' ' << ThreadId() << ' ';
  if constexpr (std::is_pointer_v<decltype(result)>) {
    line << 0;
  } else {
    line << static_cast<int64_t>(result);
  }
  if (call_note != nullptr) line << ' ' << call_note;
  std::lock_guard<std::mutex> lock(log_mu);
  call_log.push_back(line.str());
  return result;
}

// The calling thread's live context, or nullptr.
Context* LiveContext() {
  return current_context != nullptr && current_context->alive ? current_context : nullptr;
}

// ACL_SUCCESS when the thread has a context on the stream's device.
aclError CheckStream(Stream* stream) {
  Context* context = LiveContext();
  if (context == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
  if (stream == nullptr || stream->destroyed) return ACL_ERROR_RT_PARAM_INVALID;
  if (stream->device != context->device) return ACL_ERROR_RT_STREAM_CONTEXT;
  return ACL_SUCCESS;
}

// The device allocation holding [address, address + count), or end().
std::map<uintptr_t, std::pair<size_t, int32_t>>::iterator DeviceRange(const void* address,
                                                                      size_t count) {
  const auto start = reinterpret_cast<uintptr_t>(address);
  auto it = state.allocations.upper_bound(start);
  if (it == state.allocations.begin()) return state.allocations.end();
  --it;
  if (start - it->first >= it->second.first || count > it->second.first - (start - it->first)) {
    return state.allocations.end();
  }
  return it;
}

bool IsDevice(const void* address) { return DeviceRange(address, 1) != state.allocations.end(); }

bool InRanges(const std::map<uintptr_t, size_t>& ranges, const void* address, size_t count) {
  const auto start = reinterpret_cast<uintptr_t>(address);
  auto it = ranges.upper_bound(start);
  if (it == ranges.begin()) return false;
  --it;
  return start - it->first < it->second && count <= it->second - (start - it->first);
}

bool IsPinned(const void* address, size_t count) {
  return InRanges(state.registered, address, count) || InRanges(state.pinned, address, count);
}

// Checks a copy's pointers against its kind.
aclError CheckCopy(void* dst, size_t dst_max, const void* src, size_t count, int kind) {
  if (dst == nullptr || src == nullptr || count > dst_max) return ACL_ERROR_RT_PARAM_INVALID;
  const bool device_dst = DeviceRange(dst, count) != state.allocations.end();
  const bool device_src = DeviceRange(src, count) != state.allocations.end();
  bool ok = false;
  switch (kind) {
    case kHostToDevice:
      ok = device_dst && !IsDevice(src);
      break;
    case kDeviceToHost:
      ok = device_src && !IsDevice(dst);
      break;
    case kDeviceToDevice:
      ok = device_dst && device_src;
      break;
    case kHostToHost:
      ok = !IsDevice(dst) && !IsDevice(src);
      break;
    default:
      ok = false;
  }
  return ok ? ACL_SUCCESS : ACL_ERROR_RT_PARAM_INVALID;
}

void ReportFailure(Stream* stream, const Task& task, int32_t code) {
  if (stream->sticky_error == ACL_SUCCESS) stream->sticky_error = code;
  rtExceptionInfo info{task.task_id, static_cast<uint32_t>(stream->id),
                       static_cast<uint32_t>(ThreadId()), static_cast<uint32_t>(stream->device),
                       static_cast<uint32_t>(code)};
  // Called before anything after the failed task runs, as CANN does.
  if (state.legacy_exception_callback != nullptr) state.legacy_exception_callback(&info);
  for (ExceptionCallback callback : state.exception_callbacks) callback(&info);
}

// Runs a kernel's task; its error code.
int32_t RunKernel(const Task& task) {
  if (task.kernel->fails) return task.kernel->code;
  uint64_t fields[2] = {0, 0};
  if (task.args_size < sizeof(fields)) return ACL_ERROR_RT_AICORE_EXCEPTION;
  std::memcpy(fields, task.args, sizeof(fields));
  auto* bytes = reinterpret_cast<unsigned char*>(static_cast<uintptr_t>(fields[0]));
  if (fields[1] > 0 && DeviceRange(bytes, fields[1]) == state.allocations.end()) {
    return ACL_ERROR_RT_AICORE_EXCEPTION;
  }
  for (uint64_t i = 0; i < fields[1]; ++i) ++bytes[i];
  return ACL_SUCCESS;
}

// Runs `stream`'s tasks until it is empty or held. True when it ran any.
bool RunStream(Stream* stream) {
  bool ran = false;
  while (!stream->queue.empty() && !stream->held_by_callback) {
    Task& task = stream->queue.front();
    if (task.kind == Task::kWait && task.event->executed < task.ordinal) break;
    if (task.kind == Task::kNotifyWait && !task.notify->set) break;
    ran = true;
    switch (task.kind) {
      case Task::kCopy:
        std::memmove(task.dst, task.src, task.count);
        break;
      case Task::kMemset:
        std::memset(task.dst, task.value, task.count);
        break;
      case Task::kReduce:
        if (task.data_type == ACL_FLOAT) {
          Reduce<float>(task);
        } else {
          Reduce<int32_t>(task);
        }
        break;
      case Task::kKernel: {
        const int32_t code = RunKernel(task);
        if (code != ACL_SUCCESS) ReportFailure(stream, task, code);
        break;
      }
      case Task::kRecord:
        task.event->executed = std::max(task.event->executed, task.ordinal);
        task.event->timestamp_micros = DeviceNowMicros();
        break;
      case Task::kWait:
        break;
      case Task::kNotifyRecord:
        task.notify->set = true;
        break;
      case Task::kNotifyWait:
        task.notify->set = false;
        break;
      case Task::kCallback:
        state.reports[stream->subscriber].push_back(
            Report{task.callback, task.user_data, stream, task.block});
        if (task.block) stream->held_by_callback = true;
        break;
    }
    stream->queue.pop_front();
  }
  return ran;
}

// Runs every stream that can make progress (a record may release a wait).
void RunAll() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (auto& stream : state.streams) {
      if (!stream->destroyed && RunStream(stream.get())) progress = true;
    }
  }
  state_cv.notify_all();
}

// Appends a task to `stream` and runs what can run.
void Enqueue(Stream* stream, Task task) {
  task.task_id = stream->next_task_id++;
  last_task_id = task.task_id;
  stream->queue.push_back(task);
  RunAll();
}

bool Idle(const Stream* stream) { return stream->queue.empty() && !stream->held_by_callback; }

const char* EnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

}  // namespace

extern "C" {

// ---- Extra exports for the tests ----

size_t fakeVendorCallLog(char* buffer, size_t capacity) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(log_mu);
    for (const std::string& line : call_log) text += line + "\n";
  }
  if (buffer != nullptr && capacity > 0) {
    const size_t copied = std::min(capacity - 1, text.size());
    std::memcpy(buffer, text.data(), copied);
    buffer[copied] = '\0';
  }
  return text.size();
}

void fakeVendorClearCallLog() {
  std::lock_guard<std::mutex> lock(log_mu);
  call_log.clear();
}

// The next call of `name` fails with `code` and does nothing else; with
// `hold`, it returns only after fakeVendorLetGo.
void fakeVendorFailNext(const char* name, aclError code, int hold) {
  std::lock_guard<std::mutex> lock(log_mu);
  injected_failure = {name, code, hold != 0};
}

// The next `times` calls of `name` fail with `code`.
void fakeVendorFailNextCalls(const char* name, aclError code, int times) {
  std::lock_guard<std::mutex> lock(log_mu);
  injected_failure = {name, code, false, times};
}

// Waits up to `timeout_ms` for a held failing call to be under way; 1 if it is.
int fakeVendorWaitUntilHolding(int timeout_ms) {
  std::unique_lock<std::mutex> lock(log_mu);
  return log_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [] { return holding; }) ? 1
                                                                                               : 0;
}

// Every stream's next task gets id `id`: a vendor's task ids come round again.
void fakeVendorSetNextTaskId(uint32_t id) {
  std::lock_guard<std::mutex> lock(state_mu);
  for (auto& stream : state.streams) stream->next_task_id = id;
}

void fakeVendorLetGo() {
  std::lock_guard<std::mutex> lock(log_mu);
  holding = false;
  log_cv.notify_all();
}

// ---- Lifecycle and devices ----

aclError aclInit(const char*) {
  return Logged("aclInit", [] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (state.initialized) return ACL_ERROR_REPEAT_INITIALIZE;
    // Contexts outlive a finalize: threads may still point at them.
    std::vector<std::unique_ptr<Context>> contexts = std::move(state.contexts);
    state = State();
    state.contexts = std::move(contexts);
    state.initialized = true;
    const int count = std::atoi(EnvOr("FAKE_ACL_DEVICE_COUNT", "2"));
    const uint64_t memory = std::strtoull(EnvOr("FAKE_ACL_DEVICE_MEMORY", "67108864"), nullptr, 10);
    state.devices.resize(count);
    for (Device& device : state.devices) device.total = memory;
    return ACL_SUCCESS;
  });
}

aclError aclFinalize() {
  return Logged("aclFinalize", [] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (!state.initialized) return ACL_ERROR_REPEAT_FINALIZE;
    for (auto& [address, size] : state.allocations) std::free(reinterpret_cast<void*>(address));
    for (auto& [address, size] : state.pinned) std::free(reinterpret_cast<void*>(address));
    for (auto& context : state.contexts) context->alive = false;
    std::vector<std::unique_ptr<Context>> contexts = std::move(state.contexts);
    state = State();
    state.contexts = std::move(contexts);
    return ACL_SUCCESS;
  });
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  return Logged("aclrtGetDeviceCount", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (!state.initialized) return ACL_ERROR_UNINITIALIZE;
    if (count == nullptr) return ACL_ERROR_INVALID_PARAM;
    *count = static_cast<uint32_t>(state.devices.size());
    return ACL_SUCCESS;
  });
}

aclError aclrtSetDevice(int32_t id) {
  return Logged("aclrtSetDevice", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (!state.initialized) return ACL_ERROR_UNINITIALIZE;
    if (id < 0 || id >= static_cast<int32_t>(state.devices.size())) {
      return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    Device& device = state.devices[id];
    if (device.set_count++ == 0) {
      state.contexts.push_back(std::make_unique<Context>(Context{id}));
      device.default_context = state.contexts.back().get();
    }
    current_context = device.default_context;
    return ACL_SUCCESS;
  });
}

aclError aclrtResetDevice(int32_t id) {
  return Logged("aclrtResetDevice", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (id < 0 || id >= static_cast<int32_t>(state.devices.size())) {
      return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    Device& device = state.devices[id];
    if (device.set_count > 0 && --device.set_count == 0) {
      for (auto& context : state.contexts) {
        if (context->device == id) context->alive = false;
      }
      device.default_context = nullptr;
    }
    if (current_context != nullptr && current_context->device == id) current_context = nullptr;
    return ACL_SUCCESS;
  });
}

const char* aclrtGetSocName() {
  return Logged("aclrtGetSocName", [] { return "Ascend910B-fake"; });
}

// ---- Contexts ----

aclError aclrtCreateContext(aclrtContext* context, int32_t id) {
  return Logged("aclrtCreateContext", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (context == nullptr || id < 0 || id >= static_cast<int32_t>(state.devices.size())) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    ++state.devices[id].set_count;
    state.contexts.push_back(std::make_unique<Context>(Context{id}));
    current_context = state.contexts.back().get();
    *context = current_context;
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyContext(aclrtContext context) {
  return Logged("aclrtDestroyContext", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* fake = static_cast<Context*>(context);
    if (fake == nullptr || !fake->alive) return ACL_ERROR_RT_CONTEXT_NULL;
    fake->alive = false;
    Device& device = state.devices[fake->device];
    if (device.set_count > 0) --device.set_count;
    if (current_context == fake) current_context = nullptr;
    return ACL_SUCCESS;
  });
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  return Logged("aclrtSetCurrentContext", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* fake = static_cast<Context*>(context);
    if (fake == nullptr || !fake->alive) return ACL_ERROR_RT_CONTEXT_NULL;
    current_context = fake;
    return ACL_SUCCESS;
  });
}

// ---- Memory ----

aclError aclrtGetMemInfo(int /* aclrtMemAttr */, size_t* free, size_t* total) {
  return Logged("aclrtGetMemInfo", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    Context* context = LiveContext();
    if (context == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    const Device& device = state.devices[context->device];
    *free = device.total - device.used;
    *total = device.total;
    return ACL_SUCCESS;
  });
}

aclError aclrtMalloc(void** pointer, size_t size, int /* aclrtMemMallocPolicy */) {
  return Logged("aclrtMalloc", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    Context* context = LiveContext();
    if (context == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (pointer == nullptr || size == 0) return ACL_ERROR_RT_PARAM_INVALID;
    Device& device = state.devices[context->device];
    if (size > device.total - device.used) return ACL_ERROR_RT_MEMORY_ALLOCATION;
    void* memory = std::malloc(size);
    if (memory == nullptr) return ACL_ERROR_RT_MEMORY_ALLOCATION;
    std::memset(memory, kStalePattern, size);
    device.used += size;
    state.allocations[reinterpret_cast<uintptr_t>(memory)] = {size, context->device};
    *pointer = memory;
    return ACL_SUCCESS;
  });
}

aclError aclrtFree(void* pointer) {
  return Logged("aclrtFree", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    auto it = state.allocations.find(reinterpret_cast<uintptr_t>(pointer));
    if (it == state.allocations.end()) return ACL_ERROR_RT_MEMORY_FREE;
    state.devices[it->second.second].used -= it->second.first;
    std::free(pointer);
    state.allocations.erase(it);
    return ACL_SUCCESS;
  });
}

aclError aclrtMallocHost(void** pointer, size_t size) {
  return Logged("aclrtMallocHost", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (pointer == nullptr || size == 0) return ACL_ERROR_RT_PARAM_INVALID;
    void* memory = std::aligned_alloc(64, (size + 63) / 64 * 64);
    if (memory == nullptr) return ACL_ERROR_RT_MEMORY_ALLOCATION;
    state.pinned[reinterpret_cast<uintptr_t>(memory)] = size;
    *pointer = memory;
    return ACL_SUCCESS;
  });
}

aclError aclrtFreeHost(void* pointer) {
  return Logged("aclrtFreeHost", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (state.pinned.erase(reinterpret_cast<uintptr_t>(pointer)) == 0) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    std::free(pointer);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemcpy(void* dst, size_t dst_max, const void* src, size_t count, int kind) {
  return Logged("aclrtMemcpy", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    const aclError code = CheckCopy(dst, dst_max, src, count, kind);
    if (code != ACL_SUCCESS) return code;
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemset(void* dst, size_t max_count, int32_t value, size_t count) {
  return Logged("aclrtMemset", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (count > max_count || DeviceRange(dst, count) == state.allocations.end()) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    std::memset(dst, value, count);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemcpyAsync(void* dst, size_t dst_max, const void* src, size_t count, int kind,
                          aclrtStream handle) {
  return Logged("aclrtMemcpyAsync", [&] {
    std::unique_lock<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code == ACL_SUCCESS) code = CheckCopy(dst, dst_max, src, count, kind);
    if (code != ACL_SUCCESS) return code;
    const void* host = kind == kHostToDevice   ? src
                       : kind == kDeviceToHost ? static_cast<const void*>(dst)
                                               : nullptr;
    if (host != nullptr && !IsPinned(host, count)) {
      // Pageable host memory: CANN copies synchronously, after the stream's
      // earlier work.
      call_note = "made-synchronous";
      state_cv.wait(lock, [&] { return Idle(stream); });
      std::memmove(dst, src, count);
      last_task_id = stream->next_task_id++;
      return ACL_SUCCESS;
    }
    Task task{Task::kCopy};
    task.dst = dst;
    task.src = src;
    task.count = count;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

aclError aclrtMemsetAsync(void* dst, size_t max_count, int32_t value, size_t count,
                          aclrtStream handle) {
  return Logged("aclrtMemsetAsync", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (count > max_count || DeviceRange(dst, count) == state.allocations.end()) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    Task task{Task::kMemset};
    task.dst = dst;
    task.value = value;
    task.count = count;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

aclError aclrtHostRegister(void* pointer, uint64_t size, int /* aclrtHostRegisterType */,
                           void** device_pointer) {
  return Logged("aclrtHostRegister", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    const auto start = reinterpret_cast<uintptr_t>(pointer);
    if (pointer == nullptr || size == 0 || start % kHostPageSize != 0 ||
        device_pointer == nullptr) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    if (!state.registered.emplace(start, size).second) return ACL_ERROR_RT_PARAM_INVALID;
    *device_pointer = pointer;
    return ACL_SUCCESS;
  });
}

#ifndef FAKE_VENDOR_LEGACY
aclError aclrtHostRegisterV2(void* pointer, uint64_t size, uint32_t flag) {
  return Logged("aclrtHostRegisterV2", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    const auto start = reinterpret_cast<uintptr_t>(pointer);
    if (pointer == nullptr || size == 0 || start % kHostPageSize != 0 || flag == 0) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    if (!state.registered.emplace(start, size).second) return ACL_ERROR_RT_PARAM_INVALID;
    return ACL_SUCCESS;
  });
}
#endif

aclError aclrtHostUnregister(void* pointer) {
  return Logged("aclrtHostUnregister", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (state.registered.erase(reinterpret_cast<uintptr_t>(pointer)) == 0) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    return ACL_SUCCESS;
  });
}

// ---- Streams and callbacks ----

aclError aclrtCreateStream(aclrtStream* handle) {
  return Logged("aclrtCreateStream", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    Context* context = LiveContext();
    if (context == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (handle == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    auto stream = std::make_unique<Stream>();
    stream->device = context->device;
    stream->id = state.devices[context->device].next_stream_id++;
    *handle = stream.get();
    state.streams.push_back(std::move(stream));
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyStream(aclrtStream handle) {
  return Logged("aclrtDestroyStream", [&] {
    std::unique_lock<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    // As CANN: the stream's work finishes first.
    state_cv.wait(lock, [&] { return Idle(stream); });
    stream->destroyed = true;  // kept: undelivered reports may point at it
    return ACL_SUCCESS;
  });
}

aclError aclrtSynchronizeStream(aclrtStream handle) {
  return Logged("aclrtSynchronizeStream", [&] {
    std::unique_lock<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    const uint64_t aborts = stream->aborts;
    state_cv.wait(lock, [&] { return Idle(stream) || stream->aborts != aborts; });
    if (stream->aborts != aborts) return ACL_ERROR_RT_STREAM_ABORT;
    code = stream->sticky_error;
    stream->sticky_error = ACL_SUCCESS;
    return code;
  });
}

aclError aclrtStreamGetId(aclrtStream handle, int32_t* id) {
  return Logged("aclrtStreamGetId", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    *id = stream->id;
    return ACL_SUCCESS;
  });
}

#ifndef FAKE_VENDOR_LEGACY
// The numbers of an Atlas A2 (1984 streams, 65536 events), less the current
// device's live streams; events are not counted (the fake keeps them all).
constexpr uint32_t kFakeDeviceStreams = 1984;
constexpr uint32_t kFakeDeviceEvents = 65536;

aclError aclrtGetStreamAvailableNum(uint32_t* count) {
  return Logged("aclrtGetStreamAvailableNum", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    Context* context = LiveContext();
    if (context == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (count == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    const auto live = std::count_if(state.streams.begin(), state.streams.end(),
                                    [&](const auto& stream) { return stream->device == context->device; });
    *count = kFakeDeviceStreams - static_cast<uint32_t>(live);
    return ACL_SUCCESS;
  });
}

aclError aclrtGetEventAvailNum(uint32_t* count) {
  return Logged("aclrtGetEventAvailNum", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (count == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    *count = kFakeDeviceEvents;
    return ACL_SUCCESS;
  });
}

// Core limits are only checked and logged: the fake has no cores to share.
aclError aclrtSetStreamResLimit(aclrtStream handle, int type, uint32_t value) {
  return Logged("aclrtSetStreamResLimit", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    aclError code = CheckStream(static_cast<Stream*>(handle));
    if (code != ACL_SUCCESS) return code;
    if (type < 0 || type > 1 || value == 0) {  // ACL_RT_DEV_RES_CUBE_CORE, _VECTOR_CORE
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    return ACL_SUCCESS;
  });
}

aclError aclrtResetStreamResLimit(aclrtStream handle) {
  return Logged("aclrtResetStreamResLimit", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    return CheckStream(static_cast<Stream*>(handle));
  });
}

#else
// An older CANN with aclrtValueWait and no aclrtStreamAbort: the backend must
// refuse value waits before it gets here (a wait nothing ends could not be
// discarded), so this only says it was called.
aclError aclrtValueWait(void* /*address*/, uint64_t /*value*/, uint32_t /*flag*/,
                        aclrtStream /*handle*/) {
  return Logged("aclrtValueWait", [] { return ACL_ERROR_RT_INTERNAL_ERROR; });
}
#endif

#ifndef FAKE_VENDOR_LEGACY
aclError aclrtStreamAbort(aclrtStream handle) {
  return Logged("aclrtStreamAbort", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    // Queued tasks are dropped; reports of tasks that ran stay due. A
    // blocking callback already running holds the stream until it returns.
    stream->queue.clear();
    ++stream->aborts;
    state_cv.notify_all();
    return ACL_SUCCESS;
  });
}

aclError aclrtStreamStop(aclrtStream handle) {
  return Logged("aclrtStreamStop", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    // Only a task the stream is executing stops: here, a wait at the head
    // (anything else ran at once). It fails as a failed kernel does; the
    // tasks behind it stay and run. A blocking callback is not stopped.
    if (stream->held_by_callback || stream->queue.empty()) return ACL_SUCCESS;
    const Task stopped = stream->queue.front();
    stream->queue.pop_front();
    ReportFailure(stream, stopped, ACL_ERROR_RT_INTERNAL_ERROR);
    RunAll();
    return ACL_SUCCESS;
  });
}
#endif

aclError aclrtSubscribeReport(uint64_t thread, aclrtStream handle) {
  return Logged("aclrtSubscribeReport", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (stream->subscriber != 0 || thread == 0) return ACL_ERROR_RT_THREAD_SUBSCRIBE;
    stream->subscriber = thread;
    state.reports[thread];
    return ACL_SUCCESS;
  });
}

aclError aclrtUnSubscribeReport(uint64_t thread, aclrtStream handle) {
  return Logged("aclrtUnSubscribeReport", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (stream->subscriber != thread) return ACL_ERROR_RT_THREAD_SUBSCRIBE;
    stream->subscriber = 0;
    return ACL_SUCCESS;
  });
}

aclError aclrtLaunchCallback(Callback callback, void* user_data, int block, aclrtStream handle) {
  return Logged("aclrtLaunchCallback", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (stream->subscriber == 0) return ACL_ERROR_RT_STREAM_NO_CB_REG;
    if (callback == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    Task task{Task::kCallback};
    task.callback = callback;
    task.user_data = user_data;
    task.block = block == kCallbackBlock;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

aclError aclrtProcessReport(int32_t timeout) {
  return Logged("aclrtProcessReport", [&] {
    std::unique_lock<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    // Entries of `reports` are never erased while the runtime is up.
    auto queue = state.reports.find(ThreadId());
    if (queue == state.reports.end()) return ACL_ERROR_RT_THREAD_SUBSCRIBE;
    const auto due = [&] { return !queue->second.empty(); };
    if (timeout < 0) {
      state_cv.wait(lock, due);
    } else if (!state_cv.wait_for(lock, std::chrono::milliseconds(timeout), due)) {
      return ACL_ERROR_RT_REPORT_TIMEOUT;
    }
    const Report report = queue->second.front();
    queue->second.pop_front();
    lock.unlock();
    report.callback(report.user_data);
    lock.lock();
    if (report.block) {
      report.stream->held_by_callback = false;
      RunAll();
    }
    state_cv.notify_all();
    return ACL_SUCCESS;
  });
}

// ---- Events ----

aclError aclrtCreateEventWithFlag(aclrtEvent* handle, uint32_t flags) {
  return Logged("aclrtCreateEventWithFlag", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (handle == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    state.events.push_back(std::make_unique<Event>(Event{flags}));
    *handle = state.events.back().get();
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyEvent(aclrtEvent) {
  return Logged("aclrtDestroyEvent", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    // Kept allocated: a queued wait may still point at it.
    return LiveContext() == nullptr ? ACL_ERROR_RT_CONTEXT_NULL : ACL_SUCCESS;
  });
}

aclError aclrtRecordEvent(aclrtEvent handle, aclrtStream stream_handle) {
  return Logged("aclrtRecordEvent", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(stream_handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    auto* event = static_cast<Event*>(handle);
    if (event == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    Task task{Task::kRecord};
    task.event = event;
    task.ordinal = ++event->recorded;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

aclError aclrtStreamWaitEvent(aclrtStream stream_handle, aclrtEvent handle) {
  return Logged("aclrtStreamWaitEvent", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(stream_handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    auto* event = static_cast<Event*>(handle);
    if (event == nullptr || (event->flags & kEventSync) == 0) return ACL_ERROR_RT_PARAM_INVALID;
    Task task{Task::kWait};
    task.event = event;
    task.ordinal = event->recorded;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

// ---- Notifies ----

#ifndef FAKE_VENDOR_LEGACY
aclError aclrtCreateNotify(void** handle, uint64_t flags) {
  return Logged("aclrtCreateNotify", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (handle == nullptr || flags > 1) return ACL_ERROR_RT_PARAM_INVALID;
    state.notifies.push_back(std::make_unique<Notify>());
    *handle = state.notifies.back().get();
    return ACL_SUCCESS;
  });
}

aclError aclrtDestroyNotify(void* handle) {
  return Logged("aclrtDestroyNotify", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    // Kept allocated: a queued wait may still point at it.
    return handle == nullptr ? ACL_ERROR_RT_PARAM_INVALID : ACL_SUCCESS;
  });
}

aclError aclrtRecordNotify(void* handle, aclrtStream stream_handle) {
  return Logged("aclrtRecordNotify", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(stream_handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (handle == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    Task task{Task::kNotifyRecord};
    task.notify = static_cast<Notify*>(handle);
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

aclError aclrtWaitAndResetNotify(void* handle, aclrtStream stream_handle, uint32_t) {
  return Logged("aclrtWaitAndResetNotify", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(stream_handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (handle == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    Task task{Task::kNotifyWait};
    task.notify = static_cast<Notify*>(handle);
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}
#endif

aclError aclrtQueryEventStatus(aclrtEvent handle, int* /* aclrtEventRecordedStatus */ status) {
  return Logged("aclrtQueryEventStatus", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    auto* event = static_cast<Event*>(handle);
    if (event == nullptr || status == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    *status = event->executed >= event->recorded ? kEventRecordedComplete : kEventRecordedNotReady;
    return ACL_SUCCESS;
  });
}

#ifndef FAKE_VENDOR_LEGACY
aclError aclrtReduceAsync(void* dst, const void* src, uint64_t count, int kind, int type,
                          aclrtStream handle, void* reserve) {
  return Logged("aclrtReduceAsync", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    if (reserve != nullptr || (type != ACL_INT32 && type != ACL_FLOAT) || count % 4 != 0 ||
        kind < kReduceSum || kind > kReduceMin ||
        DeviceRange(dst, count) == state.allocations.end() ||
        DeviceRange(src, count) == state.allocations.end()) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    Task task{Task::kReduce};
    task.dst = dst;
    task.src = src;
    task.count = count;
    task.reduce_kind = kind;
    task.data_type = type;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}

aclError aclrtEventGetTimestamp(aclrtEvent handle, uint64_t* timestamp) {
  return Logged("aclrtEventGetTimestamp", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    auto* event = static_cast<Event*>(handle);
    if (event == nullptr || timestamp == nullptr || (event->flags & kEventTimeLine) == 0) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    if (event->executed == 0 || event->executed < event->recorded) {
      return ACL_ERROR_RT_EVENT_NOT_COMPLETE;
    }
    *timestamp = static_cast<uint64_t>(event->timestamp_micros);
    return ACL_SUCCESS;
  });
}
#endif

// ---- Kernels ----

aclError aclrtBinaryLoadFromData(const void* data, size_t length, const void* /* options */,
                                 void** handle) {
  return Logged("aclrtBinaryLoadFromData", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    if (data == nullptr || handle == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    std::istringstream text(std::string(static_cast<const char*>(data), length));
    std::string line;
    if (!std::getline(text, line) || line != "FAKEKERNELS") return ACL_ERROR_RT_PARAM_INVALID;
    auto binary = std::make_unique<Binary>();
    while (std::getline(text, line)) {
      std::istringstream fields(line);
      auto kernel = std::make_unique<Kernel>();
      std::string kind;
      if (!(fields >> kernel->name >> kind)) continue;
      if (kind == "fail") {
        kernel->fails = true;
        if (!(fields >> kernel->code) || kernel->code == 0) return ACL_ERROR_RT_PARAM_INVALID;
      } else if (kind != "increment") {
        return ACL_ERROR_RT_PARAM_INVALID;
      }
      binary->kernels.push_back(std::move(kernel));
    }
    *handle = binary.get();
    state.binaries.push_back(std::move(binary));
    return ACL_SUCCESS;
  });
}

aclError aclrtBinaryGetFunction(void* handle, const char* name, void** function) {
  return Logged("aclrtBinaryGetFunction", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    auto* binary = static_cast<Binary*>(handle);
    if (binary == nullptr || name == nullptr || function == nullptr) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    for (auto& kernel : binary->kernels) {
      if (kernel->name == name) {
        *function = kernel.get();
        return ACL_SUCCESS;
      }
    }
    return ACL_ERROR_RT_KERNEL_LOOKUP;
  });
}

aclError aclrtBinaryUnLoad(void* handle) {
  return Logged("aclrtBinaryUnLoad", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (LiveContext() == nullptr) return ACL_ERROR_RT_CONTEXT_NULL;
    // Kept allocated: queued launches may still point at its kernels.
    return handle == nullptr ? ACL_ERROR_RT_PARAM_INVALID : ACL_SUCCESS;
  });
}

#ifndef FAKE_VENDOR_WITHOUT_LAUNCH_KERNEL
aclError aclrtLaunchKernel(void* function, uint32_t blocks, const void* args, size_t args_size,
                           aclrtStream handle) {
  return Logged("aclrtLaunchKernel", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto* stream = static_cast<Stream*>(handle);
    aclError code = CheckStream(stream);
    if (code != ACL_SUCCESS) return code;
    // The argument block lives in device memory.
    if (function == nullptr || blocks == 0 || args == nullptr ||
        DeviceRange(args, std::max<size_t>(args_size, 1)) == state.allocations.end()) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    Task task{Task::kKernel};
    task.kernel = static_cast<Kernel*>(function);
    task.args = args;
    task.args_size = args_size;
    Enqueue(stream, task);
    return ACL_SUCCESS;
  });
}
#endif

#ifndef FAKE_VENDOR_LEGACY
// Fixed compute figures (a real device measures them); memory as allocated.
aclError aclrtGetDeviceUtilizationRate(int32_t device_id, aclrtUtilizationInfo* info) {
  return Logged("aclrtGetDeviceUtilizationRate", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (info == nullptr || device_id < 0 || device_id >= static_cast<int32_t>(state.devices.size())) {
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    const Device& device = state.devices[device_id];
    info->cubeUtilization = 37;
    info->vectorUtilization = 12;
    info->aicpuUtilization = 0;
    info->memoryUtilization = static_cast<int32_t>(device.used * 100 / device.total);
    return ACL_SUCCESS;
  });
}

aclError aclrtGetThreadLastTaskId(uint32_t* task_id) {
  return Logged("aclrtGetThreadLastTaskId", [&] {
    if (task_id == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    *task_id = last_task_id;
    return ACL_SUCCESS;
  });
}
#endif

// ---- Exceptions ----

aclError aclrtSetExceptionInfoCallback(ExceptionCallback callback) {
  return Logged("aclrtSetExceptionInfoCallback", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    state.legacy_exception_callback = callback;
    return ACL_SUCCESS;
  });
}

#ifndef FAKE_VENDOR_LEGACY
aclError aclrtExceptionInfoCallbackRegister(ExceptionCallback callback) {
  return Logged("aclrtExceptionInfoCallbackRegister", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    if (callback == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
    state.exception_callbacks.push_back(callback);
    return ACL_SUCCESS;
  });
}

aclError aclrtExceptionInfoCallbackUnregister(ExceptionCallback callback) {
  return Logged("aclrtExceptionInfoCallbackUnregister", [&] {
    std::lock_guard<std::mutex> lock(state_mu);
    auto& callbacks = state.exception_callbacks;
    auto it = std::find(callbacks.begin(), callbacks.end(), callback);
    if (it == callbacks.end()) return ACL_ERROR_RT_PARAM_INVALID;
    callbacks.erase(it);
    return ACL_SUCCESS;
  });
}
#endif

uint32_t aclrtGetDeviceIdFromExceptionInfo(const rtExceptionInfo* info) {
  return info != nullptr ? info->deviceid : 0xFFFFFFFFU;
}

uint32_t aclrtGetStreamIdFromExceptionInfo(const rtExceptionInfo* info) {
  return info != nullptr ? info->streamid : 0xFFFFFFFFU;
}

uint32_t aclrtGetTaskIdFromExceptionInfo(const rtExceptionInfo* info) {
  return info != nullptr ? info->taskid : 0xFFFFFFFFU;
}

uint32_t aclrtGetErrorCodeFromExceptionInfo(const rtExceptionInfo* info) {
  return info != nullptr ? info->retcode : 0xFFFFFFFFU;
}

}  // extern "C"
