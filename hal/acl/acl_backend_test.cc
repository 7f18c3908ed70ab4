// The acl backend against the recording fake vendor runtime
// (testing/fake_vendor_runtime.cc). The fakes are loaded by the backend from
// the paths the BUILD rule puts in the environment; the test opens the same
// library again (the same instance) to read its call log.
#include "hal/acl/acl_backend.h"

#include <dlfcn.h>
#include <pthread.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "acl/acl.h"
#include "gtest/gtest.h"
#include "hal/acl/acl_device.h"
#include "hal/acl/acl_event.h"
#include "hal/backend_options.h"
#include "hal/testing/eventually.h"
#include "hal/testing/stream_reports.h"
#include "proto/acl/acl_status.h"

namespace hal::acl {
namespace {

using hal::testing::StreamReports;

using acld::AclCodeOf;

constexpr uint64_t kDeviceMemory = uint64_t{64} << 20;  // the fake's default
constexpr absl::Duration kPatience = absl::Seconds(10);

// A fake's path: the BUILD rule gives it relative to the runfiles tree.
std::string LibraryPath(const char* variable) {
  const char* relative = std::getenv(variable);
  if (relative == nullptr) return "";
  const char* root = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (root == nullptr || workspace == nullptr) return relative;
  return std::string(root) + "/" + workspace + "/" + relative;
}

struct Call {
  std::string name;
  uint64_t thread = 0;
  int64_t result = 0;
  std::string note;
};

// The fake's call log and its injected failures, through the fake's own
// exports.
class CallLog {
 public:
  explicit CallLog(const std::string& library) {
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    read_ = reinterpret_cast<size_t (*)(char*, size_t)>(dlsym(handle_, "fakeVendorCallLog"));
    clear_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fakeVendorClearCallLog"));
    fail_next_ = reinterpret_cast<void (*)(const char*, aclError, int)>(
        dlsym(handle_, "fakeVendorFailNext"));
    wait_until_holding_ =
        reinterpret_cast<int (*)(int)>(dlsym(handle_, "fakeVendorWaitUntilHolding"));
    let_go_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fakeVendorLetGo"));
    set_next_task_id_ =
        reinterpret_cast<void (*)(uint32_t)>(dlsym(handle_, "fakeVendorSetNextTaskId"));
    fail_next_calls_ = reinterpret_cast<void (*)(const char*, aclError, int)>(
        dlsym(handle_, "fakeVendorFailNextCalls"));
  }
  bool ok() const {
    return read_ != nullptr && clear_ != nullptr && fail_next_ != nullptr &&
           wait_until_holding_ != nullptr && let_go_ != nullptr && set_next_task_id_ != nullptr &&
           fail_next_calls_ != nullptr;
  }
  void Clear() { clear_(); }
  // The vendor's next call of `name` fails with `code`; with `hold`, it
  // returns only after LetGo.
  void FailNext(const char* name, aclError code, bool hold = false) {
    fail_next_(name, code, hold ? 1 : 0);
  }
  bool WaitUntilHolding() { return wait_until_holding_(10000) != 0; }
  void LetGo() { let_go_(); }
  // Every stream's next task gets id `id` (task ids come round again).
  void SetNextTaskId(uint32_t id) { set_next_task_id_(id); }
  // The next `times` calls of `name` fail with `code`.
  void FailNextCalls(const char* name, aclError code, int times) {
    fail_next_calls_(name, code, times);
  }

  std::vector<Call> Read() const {
    std::string text(read_(nullptr, 0) + 1, '\0');
    read_(text.data(), text.size());
    std::vector<Call> calls;
    std::istringstream lines(text.c_str());
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      Call call;
      fields >> call.name >> call.thread >> call.result;
      std::getline(fields >> std::ws, call.note);
      calls.push_back(call);
    }
    return calls;
  }

 private:
  void* handle_ = nullptr;  // never closed: the backend keeps the library loaded too
  size_t (*read_)(char*, size_t) = nullptr;
  void (*clear_)() = nullptr;
  void (*fail_next_)(const char*, aclError, int) = nullptr;
  int (*wait_until_holding_)(int) = nullptr;
  void (*let_go_)() = nullptr;
  void (*set_next_task_id_)(uint32_t) = nullptr;
  void (*fail_next_calls_)(const char*, aclError, int) = nullptr;
};

int CountCalls(const std::vector<Call>& calls, const std::string& name) {
  int count = 0;
  for (const Call& call : calls) count += call.name == name ? 1 : 0;
  return count;
}

// Page-aligned host memory (what the daemon maps), freed on scope exit.
struct HostPages {
  explicit HostPages(size_t bytes)
      : size(bytes),
        data(static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096))) {
    std::memset(data, 0, size);
  }
  ~HostPages() { std::free(data); }
  size_t size;
  uint8_t* data;
};

DeviceSpan Span(const DeviceBuffer& buffer, uint64_t offset = 0) {
  return DeviceSpan{buffer, offset};
}

// The fake's kernel binary format (see the fake).
constexpr char kKernels[] =
    "FAKEKERNELS\n"
    "increment increment\n"
    "explode fail 507015\n";

// Stands for a launch's pins (LaunchParams::memory): tests watch its lifetime.
class NoMemory : public MemoryResolver {
 public:
  absl::StatusOr<DeviceSpan> Resolve(uint64_t, uint64_t) override {
    return absl::InvalidArgumentError("none");
  }
};

std::string IncrementArgs(const DeviceBuffer& buffer, uint64_t count) {
  uint64_t fields[2] = {buffer.address, count};
  return std::string(reinterpret_cast<const char*>(fields), sizeof(fields));
}

class AclBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(LibraryPath("FAKE_VENDOR_LIBRARY")); }

  void Open(const std::string& library) {
    library_ = library;
    log_ = std::make_unique<CallLog>(library);
    BackendOptions options;
    options.vendor_library = library;
    absl::StatusOr<std::unique_ptr<Backend>> backend = CreateAclBackend(options);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    device_ = dynamic_cast<AclDevice*>(&backend_->device(0));
    ASSERT_NE(device_, nullptr);
    ASSERT_TRUE(log_->ok());
    ASSERT_TRUE(device_->BringUp().ok());
  }

  void TearDown() override {
    kernels_.reset();
    backend_.reset();
  }

  DeviceBuffer Allocate(uint64_t size) {
    absl::StatusOr<DeviceBuffer> buffer = device_->Allocate(size);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    return buffer.ok() ? *buffer : DeviceBuffer{};
  }

  std::vector<uint8_t> Read(const DeviceBuffer& buffer) {
    std::vector<uint8_t> bytes(buffer.size);
    Transfer transfer;
    transfer.device_src = Span(buffer);
    transfer.host_dst = bytes.data();
    transfer.count = buffer.size;
    EXPECT_TRUE(device_->Copy(transfer).ok());
    return bytes;
  }

  std::unique_ptr<Stream> NewStream(StreamReports& reports) {
    absl::StatusOr<std::unique_ptr<Stream>> stream = device_->CreateStream(reports.Options());
    EXPECT_TRUE(stream.ok()) << stream.status();
    return stream.ok() ? *std::move(stream) : nullptr;
  }

  // A stream held at a host-callback point (its item 1), which the test
  // resumes: what it submits meanwhile is all in flight at once. Null when
  // it could not be made so.
  std::unique_ptr<Stream> NewStreamHeldAtAPoint(StreamReports& reports) {
    std::unique_ptr<Stream> stream = NewStream(reports);
    if (stream == nullptr) return nullptr;
    absl::StatusOr<uint64_t> point = stream->HostCallbackPoint();
    EXPECT_TRUE(point.ok() && *point == 1u) << point.status();
    const bool reached = reports.WaitForReached(1);
    EXPECT_TRUE(reached);
    return point.ok() && *point == 1u && reached ? std::move(stream) : nullptr;
  }

  std::shared_ptr<Executable> LoadKernels() {
    absl::StatusOr<std::shared_ptr<Executable>> executable = device_->LoadExecutable(kKernels);
    EXPECT_TRUE(executable.ok()) << executable.status();
    return executable.ok() ? *executable : nullptr;
  }

  // The fake's kernel `name` ("increment", "explode"), its executable kept
  // until the test ends; null when it could not be loaded.
  const Function* Kernel(const char* name) {
    if (kernels_ == nullptr) kernels_ = LoadKernels();
    if (kernels_ == nullptr) return nullptr;
    absl::StatusOr<const Function*> function = kernels_->GetFunction(name);
    return function.ok() ? *function : nullptr;
  }
  const Function* Increment() { return Kernel("increment"); }

  // One block adding one to each of `buffer`'s first `count` bytes.
  static LaunchParams Incrementing(const DeviceBuffer& buffer, uint64_t count) {
    LaunchParams params;
    params.block_dim = 1;
    params.args = IncrementArgs(buffer, count);
    return params;
  }

  std::string library_;
  std::shared_ptr<Executable> kernels_;
  std::unique_ptr<CallLog> log_;
  std::unique_ptr<Backend> backend_;
  AclDevice* device_ = nullptr;
};

bool AllBytes(const std::vector<uint8_t>& bytes, uint8_t value) {
  for (uint8_t byte : bytes) {
    if (byte != value) return false;
  }
  return true;
}

TEST_F(AclBackendTest, CountsAndDescribesTheVendorsDevices) {
  EXPECT_EQ(backend_->name(), "acl");
  EXPECT_EQ(backend_->device_count(), 2);
  const DeviceInfo& info = backend_->device(1).info();
  EXPECT_EQ(info.id, 1);
  EXPECT_EQ(info.name, "Ascend910B-fake");
  EXPECT_EQ(info.memory_bytes, kDeviceMemory);
  // What the vendor has left for acld's clients: the probe's default stream
  // aside, less acld's context's default stream and its control stream.
  EXPECT_EQ(info.objects.streams, 1982u);
  EXPECT_EQ(info.objects.events, 65536u);
  EXPECT_EQ(info.addresses.begin, info.addresses.end);  // nothing handed out yet
  EXPECT_EQ(device_->builtin_kernels(), nullptr);
  EXPECT_TRUE(device_->is_up());
  EXPECT_FALSE(backend_->device(1).is_up());
}

TEST_F(AclBackendTest, ReservesWhatTheVendorRoundsTo) {
  EXPECT_EQ(device_->ReservedBytes(0), std::nullopt);
  EXPECT_EQ(device_->ReservedBytes(1), 64u);     // 32 + 32
  EXPECT_EQ(device_->ReservedBytes(100), 192u);  // 128 + 32, on 64
  EXPECT_EQ(device_->ReservedBytes(4096), 4160u);
  EXPECT_EQ(device_->ReservedBytes(kDeviceMemory - 64), kDeviceMemory);
  EXPECT_EQ(device_->ReservedBytes(kDeviceMemory), std::nullopt);  // rounds past the device
  EXPECT_EQ(device_->ReservedBytes(kDeviceMemory + 1), std::nullopt);
  EXPECT_EQ(device_->ReservedBytes(~uint64_t{0}), std::nullopt);
  EXPECT_EQ(device_->ReservedBytes(~uint64_t{0} - 40), std::nullopt);
}

TEST_F(AclBackendTest, AllocationsAreScrubbedCountedAndFreed) {
  std::optional<DeviceBuffer> buffer = Allocate(1000);
  ASSERT_NE(buffer->address, 0u);
  EXPECT_EQ(buffer->size, 1000u);
  EXPECT_EQ(buffer->reserved, *device_->ReservedBytes(1000));
  EXPECT_EQ(device_->used_bytes(), buffer->reserved);
  // The fake hands out memory full of a stale pattern: the backend zeroed it.
  EXPECT_TRUE(AllBytes(Read(*buffer), 0));
  EXPECT_TRUE(device_->info().addresses.Contains(buffer->address));
  EXPECT_TRUE(device_->info().addresses.Contains(buffer->address + 999));
  EXPECT_FALSE(device_->info().addresses.Contains(0));
  EXPECT_TRUE(device_->IsDeviceAddress(buffer->address + 999));

  const uint64_t address = buffer->address;
  device_->Free(*buffer);
  EXPECT_EQ(device_->used_bytes(), 0u);
  EXPECT_FALSE(device_->IsDeviceAddress(address));
  EXPECT_TRUE(device_->info().addresses.Contains(address));  // the window never narrows
  log_->Clear();
  buffer.reset();  // the last copy: the vendor memory goes
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtFree"), 1);

  absl::StatusOr<DeviceBuffer> too_big = device_->Allocate(kDeviceMemory);
  EXPECT_EQ(AclCodeOf(too_big.status()), ACL_ERROR_RT_MEMORY_ALLOCATION);
}

TEST_F(AclBackendTest, CopiesInEveryDirection) {
  DeviceBuffer first = Allocate(256);
  DeviceBuffer second = Allocate(256);
  std::vector<uint8_t> source(256);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i);

  Transfer to_device;
  to_device.host_src = source.data();
  to_device.device_dst = Span(first);
  to_device.count = 256;
  ASSERT_TRUE(device_->Copy(to_device).ok());

  Transfer across;
  across.device_src = Span(first, 16);
  across.device_dst = Span(second, 32);
  across.count = 100;
  ASSERT_TRUE(device_->Copy(across).ok());

  std::vector<uint8_t> back = Read(second);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(back[32 + i], source[16 + i]) << i;
  EXPECT_EQ(back[0], 0);
  EXPECT_EQ(back[132], 0);

  std::vector<uint8_t> copy(256);
  Transfer host_to_host;
  host_to_host.host_src = source.data();
  host_to_host.host_dst = copy.data();
  host_to_host.count = 256;
  ASSERT_TRUE(device_->Copy(host_to_host).ok());
  EXPECT_EQ(copy, source);

  Transfer both;  // two destinations
  both.host_src = source.data();
  both.host_dst = copy.data();
  both.device_dst = Span(first);
  both.count = 1;
  EXPECT_EQ(AclCodeOf(device_->Copy(both)), ACL_ERROR_INVALID_PARAM);
}

TEST_F(AclBackendTest, FillsSynchronously) {
  DeviceBuffer buffer = Allocate(64);
  ASSERT_TRUE(device_->Fill(Span(buffer, 8), 0x5A, 16).ok());
  std::vector<uint8_t> bytes = Read(buffer);
  for (size_t i = 0; i < bytes.size(); ++i) {
    EXPECT_EQ(bytes[i], i >= 8 && i < 24 ? 0x5A : 0) << i;
  }
}

TEST_F(AclBackendTest, StreamRunsItemsInOrderAndReportsEachSequence) {
  HostPages input(8192);
  HostPages output(8192);
  for (size_t i = 0; i < input.size; ++i) input.data[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(device_->RegisterHostMemory(input.data, input.size).ok());
  ASSERT_TRUE(device_->RegisterHostMemory(output.data, output.size).ok());
  EXPECT_TRUE(device_->IsHostMemoryRegistered(input.data + 100, 1000));
  DeviceBuffer first = Allocate(8192);
  DeviceBuffer second = Allocate(8192);

  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  Transfer in;
  in.host_src = input.data;
  in.device_dst = Span(first);
  in.count = 8192;
  Transfer across;
  across.device_src = Span(first);
  across.device_dst = Span(second);
  across.count = 8192;
  Transfer out;
  out.device_src = Span(second);
  out.host_dst = output.data;
  out.count = 8192;
  EXPECT_EQ(*stream->Copy(in), 1u);
  EXPECT_EQ(*stream->Fill(Span(first, 4096), 0xEE, 1024), 2u);
  EXPECT_EQ(*stream->Copy(across), 3u);
  EXPECT_EQ(*stream->Copy(out), 4u);
  EXPECT_EQ(*stream->Fill(Span(first), 0, 0), 5u);  // nothing to do, still reported
  ASSERT_TRUE(reports.WaitForCompleted(5));

  std::vector<std::pair<uint64_t, absl::Status>> completed = reports.completed();
  for (size_t i = 0; i < completed.size(); ++i) {
    EXPECT_EQ(completed[i].first, i + 1);
    EXPECT_TRUE(completed[i].second.ok()) << completed[i].second;
  }
  for (size_t i = 0; i < 8192; ++i) {
    const uint8_t expected = i >= 4096 && i < 5120 ? 0xEE : static_cast<uint8_t>(i * 7);
    ASSERT_EQ(output.data[i], expected) << i;
  }
  stream.reset();
  EXPECT_TRUE(device_->UnregisterHostMemory(input.data).ok());
  EXPECT_TRUE(device_->UnregisterHostMemory(output.data).ok());
  EXPECT_FALSE(device_->IsHostMemoryRegistered(input.data, 1));
}

TEST_F(AclBackendTest, LaunchesKernelsWithTheirArguments) {
  std::shared_ptr<Executable> executable = LoadKernels();
  ASSERT_NE(executable, nullptr);
  absl::StatusOr<const Function*> increment = executable->GetFunction("increment");
  ASSERT_TRUE(increment.ok()) << increment.status();
  EXPECT_EQ((*increment)->name(), "increment");
  EXPECT_EQ((*increment)->args_size(), std::nullopt);
  EXPECT_EQ((*increment)->Ranges(1, "").status().code(), absl::StatusCode::kUnimplemented);
  absl::StatusOr<const Function*> missing = executable->GetFunction("missing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(AclCodeOf(missing.status()), ACL_ERROR_RT_KERNEL_LOOKUP);
  EXPECT_EQ(executable->Functions().size(), 1u);

  DeviceBuffer buffer = Allocate(64);
  StreamReports reports;
  // Held at a host-callback point, so that every launch (and its argument
  // slice) is in flight at once: the argument ring must grow, not overwrite.
  std::unique_ptr<Stream> stream = NewStreamHeldAtAPoint(reports);
  ASSERT_NE(stream, nullptr);
  constexpr int kLaunches = 3000;
  for (int i = 0; i < kLaunches; ++i) {
    LaunchParams params;
    params.block_dim = 1;
    params.args = IncrementArgs(buffer, 8 + i % 8);
    ASSERT_TRUE(stream->Launch(**increment, params).ok());
  }
  stream->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(reports.WaitForCompleted(kLaunches + 1));
  std::vector<uint8_t> bytes = Read(buffer);
  for (int byte = 0; byte < 16; ++byte) {
    int expected = 0;
    for (int i = 0; i < kLaunches; ++i) expected += byte < 8 + i % 8 ? 1 : 0;
    EXPECT_EQ(bytes[byte], static_cast<uint8_t>(expected)) << byte;
  }
}

// What a stream's charge hook was asked for (the core's is the session's
// ledger, MemoryManager::ChargeBackendMemory).
class ChargeBook {
 public:
  StreamOptions::MemoryCharger Charger() {
    return [this](uint64_t bytes) -> absl::StatusOr<std::shared_ptr<void>> {
      absl::MutexLock lock(&mu_);
      if (!refusal_.ok()) return refusal_;
      charged_ += bytes;
      return std::shared_ptr<void>(this, [this, bytes](void*) {
        absl::MutexLock lock(&mu_);
        charged_ -= bytes;
      });
    };
  }
  // The same hook for objects (StreamOptions::charge_notify), one unit each.
  StreamOptions::ObjectCharger OneAtATime() {
    return [charge = Charger()] { return charge(1); };
  }
  void Refuse(absl::Status refusal) {
    absl::MutexLock lock(&mu_);
    refusal_ = std::move(refusal);
  }
  uint64_t charged() const {
    absl::MutexLock lock(&mu_);
    return charged_;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Status refusal_ ABSL_GUARDED_BY(mu_);
  uint64_t charged_ ABSL_GUARDED_BY(mu_) = 0;
};

// Launches `count` kernels with `args_bytes` of arguments each on `stream`
// after its `done` items, all in flight at once behind a host-callback
// point, and waits until they ran; nullopt, or the most `charged` showed
// while they were in flight.
std::optional<uint64_t> LaunchBurst(Stream& stream, StreamReports& reports, uint64_t done,
                                    const Function& function, const DeviceBuffer& buffer,
                                    int count, size_t args_bytes, const ChargeBook& book) {
  const size_t points = reports.reached().size();
  if (*stream.HostCallbackPoint() != done + 1 || !reports.WaitForReached(points + 1)) {
    return std::nullopt;
  }
  LaunchParams params;
  params.block_dim = 1;
  params.args = IncrementArgs(buffer, 1);
  params.args.resize(args_bytes);
  for (int i = 0; i < count; ++i) {
    if (!stream.Launch(function, params).ok()) return std::nullopt;
  }
  const uint64_t in_flight = book.charged();
  stream.ResumeCallbackPoint(done + 1, absl::OkStatus());
  if (!reports.WaitForCompleted(done + 1 + count)) return std::nullopt;
  return in_flight;
}

// A stream's kernel argument ring is charged to its owner while it lives. A
// ring grown by a burst of launches is kept, for the next burst, within the
// device's idle budget (1 MiB for the fake's 64 MiB device); one past it goes
// once its launches ran, so that what a burst needed is not kept, nor
// charged, for the stream's whole life.
TEST_F(AclBackendTest, ArgumentRingsAreChargedAndKeptGrownOnlyWithinTheIdleBudget) {
  constexpr uint64_t kFirstRing = uint64_t{8} << 10;
  const Function* kernel = Increment();
  ASSERT_NE(kernel, nullptr);
  const Function& increment = *kernel;
  DeviceBuffer buffer = Allocate(64);
  ChargeBook book;
  StreamReports reports;
  StreamOptions options = reports.Options();
  options.charge_memory = book.Charger();
  absl::StatusOr<std::unique_ptr<Stream>> created = device_->CreateStream(std::move(options));
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Stream> stream = *std::move(created);
  EXPECT_EQ(book.charged(), 0u) << "a stream that never launched holds no ring";

  LaunchParams small;
  small.block_dim = 1;
  small.args = IncrementArgs(buffer, 1);
  ASSERT_EQ(*stream->Launch(increment, small), 1u);
  ASSERT_TRUE(reports.WaitForCompleted(1));
  EXPECT_EQ(book.charged(), kFirstRing) << "the first ring is kept";

  // 64 launches of 1 KiB each grow the ring to 64 KiB; within the budget, it
  // stays (the smaller rings it replaced go).
  std::optional<uint64_t> in_flight = LaunchBurst(*stream, reports, 1, increment, buffer, 64,
                                                  1 << 10, book);
  ASSERT_TRUE(in_flight.has_value());
  EXPECT_GE(*in_flight, uint64_t{64} << 10) << "the ring did not grow";
  EXPECT_TRUE(hal::testing::Eventually([&] { return book.charged() == uint64_t{64} << 10; }))
      << book.charged();
  log_->Clear();
  ASSERT_TRUE(LaunchBurst(*stream, reports, 66, increment, buffer, 64, 1 << 10, book).has_value());
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtMalloc"), 0) << "the next burst made a new ring";

  // 32 launches of 64 KiB each grow it past the budget: it goes once idle.
  in_flight = LaunchBurst(*stream, reports, 131, increment, buffer, 32, 64 << 10, book);
  ASSERT_TRUE(in_flight.has_value());
  EXPECT_GE(*in_flight, uint64_t{2} << 20);
  EXPECT_TRUE(hal::testing::Eventually([&] { return book.charged() == 0; }))
      << "idle, a ring past the budget is still charged: " << book.charged();
  EXPECT_EQ(Read(buffer)[0], 1 + 64 + 64 + 32);

  ASSERT_EQ(*stream->Launch(increment, small), 165u);
  ASSERT_TRUE(reports.WaitForCompleted(165));
  EXPECT_EQ(book.charged(), kFirstRing);
  stream.reset();
  EXPECT_EQ(book.charged(), 0u) << "a destroyed stream's ring is still charged";
}

// A launch that failed in the vendor may have queued the copy of its
// arguments into the ring already: the ring is not freed under it, even a
// ring past the idle budget that this launch alone used, nor when a larger
// ring replaces it, until the stream's next item ran.
TEST_F(AclBackendTest, AFailedLaunchLeavesItsRingToItsQueuedArgumentCopy) {
  const Function* kernel = Increment();
  ASSERT_NE(kernel, nullptr);
  const Function& increment = *kernel;
  DeviceBuffer buffer = Allocate(64);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStreamHeldAtAPoint(reports);
  ASSERT_NE(stream, nullptr);
  LaunchParams params;
  params.block_dim = 1;
  params.args = IncrementArgs(buffer, 1);
  params.args.resize(2 << 20);  // a 4 MiB ring: past the fake device's 1 MiB budget
  log_->Clear();
  log_->FailNext("aclrtLaunchKernel", ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(AclCodeOf(stream->Launch(increment, params).status()), ACL_ERROR_RT_PARAM_INVALID);
  std::vector<Call> calls = log_->Read();
  EXPECT_EQ(CountCalls(calls, "aclrtMemcpyAsync"), 1);
  EXPECT_EQ(CountCalls(calls, "aclrtFree"), 0) << "the ring was freed under its queued copy";
  params.args.resize((4 << 20) + 1024);  // more than the 4 MiB ring: an 8 MiB one replaces it
  ASSERT_EQ(*stream->Launch(increment, params), 2u);
  calls = log_->Read();
  EXPECT_EQ(CountCalls(calls, "aclrtMalloc"), 2);
  EXPECT_EQ(CountCalls(calls, "aclrtFree"), 0) << "the replaced ring was freed under its copy";
  stream->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(reports.WaitForCompleted(2));
  // Both rings go: the replaced one with the item, the 8 MiB one (past the
  // budget) once idle.
  EXPECT_TRUE(hal::testing::Eventually([&] { return CountCalls(log_->Read(), "aclrtFree") == 2; }))
      << "the replaced ring was kept after the next item ran";
  params.args.resize(16);
  ASSERT_EQ(*stream->Launch(increment, params), 3u);
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_EQ(Read(buffer)[0], 2);
}

// A charge refused (the owner's quota) fails the launch with the refusal, and
// nothing is allocated for it.
TEST_F(AclBackendTest, ALaunchWhoseRingIsRefusedFailsWithTheRefusal) {
  const Function* kernel = Increment();
  ASSERT_NE(kernel, nullptr);
  const Function& increment = *kernel;
  DeviceBuffer buffer = Allocate(64);
  ChargeBook book;
  book.Refuse(acld::AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION, "over the quota"));
  StreamReports reports;
  StreamOptions options = reports.Options();
  options.charge_memory = book.Charger();
  absl::StatusOr<std::unique_ptr<Stream>> created = device_->CreateStream(std::move(options));
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Stream> stream = *std::move(created);
  LaunchParams params;
  params.block_dim = 1;
  params.args = IncrementArgs(buffer, 1);
  log_->Clear();
  absl::StatusOr<uint64_t> refused = stream->Launch(increment, params);
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "over the quota")) << refused.status();
  std::vector<Call> calls = log_->Read();
  EXPECT_EQ(CountCalls(calls, "aclrtMalloc"), 0);
  EXPECT_EQ(CountCalls(calls, "aclrtLaunchKernel"), 0);
  EXPECT_EQ(book.charged(), 0u);

  book.Refuse(absl::OkStatus());
  absl::StatusOr<uint64_t> launched = stream->Launch(increment, params);
  ASSERT_TRUE(launched.ok()) << launched.status();
  ASSERT_TRUE(reports.WaitForCompleted(1));
  EXPECT_EQ(Read(buffer)[0], 1);
}

// Queues `count` host-callback points on `stream` after its `done` items
// (all in flight at once: each holds the stream until resumed) and resumes
// them one by one.
void PassPoints(Stream& stream, StreamReports& reports, uint64_t done, uint64_t count) {
  for (uint64_t point = done + 1; point <= done + count; ++point) {
    ASSERT_EQ(*stream.HostCallbackPoint(), point);
  }
  for (uint64_t point = done + 1; point <= done + count; ++point) {
    ASSERT_TRUE(reports.WaitForReached(point)) << point;
    stream.ResumeCallbackPoint(point, absl::OkStatus());
  }
  ASSERT_TRUE(reports.WaitForCompleted(done + count));
}

// Streams keep a few notifies for reuse, not every one they ever needed at
// once: a vendor's notifies are few and shared by every tenant. At most 4 a
// stream, and 256 for all streams of a device together.
TEST_F(AclBackendTest, StreamsKeepAFewNotifiesOnceTheirWaitsPassed) {
  constexpr int kPoints = 12;
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  log_->Clear();
  PassPoints(*stream, reports, 0, kPoints);
  std::vector<Call> calls = log_->Read();
  EXPECT_EQ(CountCalls(calls, "aclrtCreateNotify"), kPoints);
  EXPECT_EQ(CountCalls(calls, "aclrtDestroyNotify"), kPoints - 4);
  // The kept ones are reused.
  log_->Clear();
  PassPoints(*stream, reports, kPoints, 4);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtCreateNotify"), 0);

  // 63 more streams keep 4 each: the device's 256 in all.
  std::vector<StreamReports> others_reports(64);
  std::vector<std::unique_ptr<Stream>> others;
  for (int i = 0; i < 63; ++i) {
    others.push_back(NewStream(others_reports[i]));
    ASSERT_NE(others.back(), nullptr);
    PassPoints(*others.back(), others_reports[i], 0, 4);
  }
  log_->Clear();
  others.push_back(NewStream(others_reports[63]));
  ASSERT_NE(others.back(), nullptr);
  PassPoints(*others.back(), others_reports[63], 0, 4);
  calls = log_->Read();
  EXPECT_EQ(CountCalls(calls, "aclrtCreateNotify"), 4);
  EXPECT_EQ(CountCalls(calls, "aclrtDestroyNotify"), 4) << "the device keeps more than 256";
  // A destroyed stream's places are free again.
  stream.reset();
  log_->Clear();
  PassPoints(*others.back(), others_reports[63], 4, 4);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtDestroyNotify"), 0);
}

// The notifies a stream takes (one per host-callback point or host-released
// wait) are charged to its owner while in use: a device has few of them for
// all its tenants (DeviceObjectLimits::notifies). Those kept for reuse are
// not (the device's idle budget bounds them; charged, a tenant's idle
// streams could hold its whole share). A refused one fails the point with
// the refusal, and the stream goes on; an abort gives back what it retires.
TEST_F(AclBackendTest, TheNotifiesAStreamUsesAreChargedToItsOwner) {
  // The fake's SoC name is no product's: the fewest (device_numbers_test.cc).
  EXPECT_EQ(device_->info().objects.notifies, 1024u);
  ChargeBook book;
  StreamReports reports;
  StreamOptions options = reports.Options();
  options.charge_notify = book.OneAtATime();
  absl::StatusOr<std::unique_ptr<Stream>> created = device_->CreateStream(std::move(options));
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<Stream> stream = *std::move(created);
  for (uint64_t point = 1; point <= 6; ++point) ASSERT_EQ(*stream->HostCallbackPoint(), point);
  ASSERT_TRUE(reports.WaitForReached(1));
  EXPECT_EQ(book.charged(), 6u) << "one per point in flight";
  for (uint64_t point = 1; point <= 6; ++point) {
    ASSERT_TRUE(reports.WaitForReached(point));
    stream->ResumeCallbackPoint(point, absl::OkStatus());
  }
  ASSERT_TRUE(reports.WaitForCompleted(6));
  EXPECT_EQ(book.charged(), 0u) << "the 4 kept for reuse are not charged";

  // Refused even with kept notifies at hand.
  book.Refuse(acld::AclStatus(ACL_ERROR_RT_NO_NOTIFY_RESOURCE, "over the share"));
  log_->Clear();
  absl::StatusOr<uint64_t> refused = stream->HostCallbackPoint();
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_RT_NO_NOTIFY_RESOURCE) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "over the share"));
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtWaitAndResetNotify"), 0);
  book.Refuse(absl::OkStatus());
  absl::StatusOr<uint64_t> point = stream->HostCallbackPoint();
  ASSERT_TRUE(point.ok()) << "the stream goes on: " << point.status();
  ASSERT_TRUE(reports.WaitForReached(7));
  EXPECT_EQ(book.charged(), 1u);
  // An abort retires (destroys) the notify of the held point.
  stream->Abort();
  EXPECT_EQ(book.charged(), 0u);
  // A point after it: charged while held, given back once it passed.
  absl::StatusOr<uint64_t> again = stream->HostCallbackPoint();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(reports.WaitForReached(8));
  EXPECT_EQ(book.charged(), 1u);
  stream->ResumeCallbackPoint(*again, absl::OkStatus());
  ASSERT_TRUE(reports.WaitForCompleted(7));
  EXPECT_EQ(book.charged(), 0u);
  stream.reset();
  EXPECT_EQ(book.charged(), 0u);
}

// A launch's memory (the core's pins, LaunchParams::memory) is held until
// the launch is reported or dropped: the kernel reaches it by address until
// the vendor ran it, and memory freed before that could be handed to another
// process's allocation at the same address.
TEST_F(AclBackendTest, ALaunchHoldsItsMemoryUntilItIsReportedOrDropped) {
  const Function* kernel = Increment();
  ASSERT_NE(kernel, nullptr);
  const Function& increment = *kernel;
  DeviceBuffer buffer = Allocate(64);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStreamHeldAtAPoint(reports);
  ASSERT_NE(stream, nullptr);
  auto ran = std::make_shared<NoMemory>();
  auto dropped = std::make_shared<NoMemory>();
  std::weak_ptr<MemoryResolver> ran_pins = ran, dropped_pins = dropped;
  LaunchParams params;
  params.block_dim = 1;
  params.args = IncrementArgs(buffer, 8);
  params.memory = std::move(ran);
  ASSERT_EQ(*stream->Launch(increment, params), 2u);
  params.memory.reset();
  EXPECT_FALSE(ran_pins.expired()) << "queued behind the point, the launch let its memory go";
  stream->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(reports.WaitForCompleted(2));
  EXPECT_TRUE(hal::testing::Eventually([&] { return ran_pins.expired(); }))
      << "reported, the launch still holds its memory";

  ASSERT_EQ(*stream->HostCallbackPoint(), 3u);
  ASSERT_TRUE(reports.WaitForReached(2));
  params.memory = std::move(dropped);
  ASSERT_EQ(*stream->Launch(increment, params), 4u);
  params.memory.reset();
  EXPECT_FALSE(dropped_pins.expired());
  stream->Abort();
  EXPECT_TRUE(dropped_pins.expired()) << "aborted, the launch still holds its memory";
}

// An abort that cannot reach the vendor (setting the context fails) cannot
// discard or wait for the device work: what that work uses is kept until the
// device is reset, not handed back for another session to reuse. One
// failure is retried.
TEST_F(AclBackendTest, AnAbortThatCannotReachTheVendorKeepsWhatTheDeviceMayUse) {
  const Function* kernel = Increment();
  ASSERT_NE(kernel, nullptr);
  DeviceBuffer buffer = Allocate(64);
  LaunchParams params;
  params.block_dim = 1;
  params.args = IncrementArgs(buffer, 8);
  for (const int failures : {1, 2}) {
    StreamReports reports;
    std::unique_ptr<Stream> stream = NewStreamHeldAtAPoint(reports);
    ASSERT_NE(stream, nullptr);
    auto pins = std::make_shared<NoMemory>();
    std::weak_ptr<MemoryResolver> held = pins;
    params.memory = std::move(pins);
    ASSERT_EQ(*stream->Launch(*kernel, params), 2u);
    params.memory.reset();
    log_->Clear();
    log_->FailNextCalls("aclrtSetCurrentContext", ACL_ERROR_RT_CONTEXT_NULL, failures);
    // The caller's own holds (the core's tasks: copies' host and device
    // memory) are kept with the launch's.
    auto callers = std::make_shared<int>(0);
    std::weak_ptr<int> callers_held = callers;
    bool ended = false;
    // A thread of its own: no context is current there yet.
    std::thread([&] { ended = stream->AbortKeeping(std::move(callers)); }).join();
    const std::vector<Call> calls = log_->Read();
    if (failures == 1) {
      EXPECT_TRUE(ended);
      EXPECT_EQ(CountCalls(calls, "aclrtStreamAbort"), 1) << "retried";
      EXPECT_TRUE(held.expired()) << "discarded by the vendor, the launch still holds its memory";
      EXPECT_TRUE(callers_held.expired());
      continue;
    }
    EXPECT_FALSE(ended);
    EXPECT_FALSE(callers_held.expired()) << "the caller's holds were let go of";
    EXPECT_EQ(CountCalls(calls, "aclrtStreamAbort"), 0);
    EXPECT_EQ(CountCalls(calls, "aclrtDestroyNotify"), 0) << "a wait may still hold it";
    EXPECT_FALSE(held.expired()) << "let go of while the device may still run the launch";
    EXPECT_FALSE(stream->Launch(*kernel, params).ok()) << "the stream takes no more work";
    stream.reset();
    EXPECT_FALSE(held.expired()) << "let go of with the stream";
    // What is kept holds the context: released, the device is reset at
    // once (it would otherwise stay up until acld ends).
    device_->Release();
    EXPECT_TRUE(held.expired()) << "the device's reset ended the work";
    EXPECT_TRUE(callers_held.expired());
  }
}

// A launch's core limits become the vendor stream's before the launch, once
// per change.
TEST_F(AclBackendTest, CoreLimitsReachTheVendorStreamWhenTheyChange) {
  std::shared_ptr<Executable> executable = LoadKernels();
  ASSERT_NE(executable, nullptr);
  absl::StatusOr<const Function*> increment = executable->GetFunction("increment");
  ASSERT_TRUE(increment.ok()) << increment.status();
  DeviceBuffer buffer = Allocate(64);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  auto launch = [&](CoreLimits limits) {
    LaunchParams params;
    params.block_dim = 1;
    params.args = IncrementArgs(buffer, 1);
    params.core_limits = limits;
    ASSERT_TRUE(stream->Launch(**increment, params).ok());
  };
  log_->Clear();
  launch({});
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtResetStreamResLimit"), 0) << "no limit, no call";
  launch({0, 2});
  launch({0, 2});
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtResetStreamResLimit"), 1);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtSetStreamResLimit"), 1);
  launch({3, 4});
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtSetStreamResLimit"), 3);
  launch({});
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtResetStreamResLimit"), 3);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtSetStreamResLimit"), 3);
  ASSERT_TRUE(reports.WaitForCompleted(5));
  for (const auto& [sequence, status] : reports.completed()) EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(Read(buffer)[0], 5);
}

TEST_F(AclBackendTest, VendorErrorsKeepTheirExactCodes) {
  absl::StatusOr<std::shared_ptr<Executable>> garbage = device_->LoadExecutable("not a binary");
  EXPECT_EQ(AclCodeOf(garbage.status()), ACL_ERROR_RT_PARAM_INVALID);

  const Function* explode = Kernel("explode");
  const Function* increment = Kernel("increment");
  ASSERT_TRUE(explode != nullptr && increment != nullptr);
  DeviceBuffer buffer = Allocate(16);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  const LaunchParams params = Incrementing(buffer, 16);
  ASSERT_TRUE(stream->Launch(*increment, params).ok());
  ASSERT_TRUE(stream->Launch(*explode, params).ok());
  ASSERT_TRUE(stream->Launch(*increment, params).ok());
  ASSERT_TRUE(reports.WaitForCompleted(3));
  std::vector<std::pair<uint64_t, absl::Status>> completed = reports.completed();
  EXPECT_TRUE(completed[0].second.ok());
  EXPECT_EQ(completed[1].first, 2u);
  EXPECT_EQ(AclCodeOf(completed[1].second), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_TRUE(completed[2].second.ok()) << completed[2].second;  // CANN continues on failure
  EXPECT_TRUE(AllBytes(Read(buffer), 2));

  // A copy the vendor refuses (to an address it never handed out) carries
  // the vendor's code.
  Transfer stray;
  stray.device_src = Span(buffer);
  stray.device_dst = DeviceSpan{DeviceBuffer{64, 16, 64, nullptr}, 0};
  stray.count = 16;
  EXPECT_EQ(AclCodeOf(stream->Copy(stray).status()), ACL_ERROR_RT_PARAM_INVALID);
}

// A failure goes to its own item, never to a later one: task ids come round
// again, and a failure left over would report a later item of the same id
// failed (or done before it ran). A kernel whose task id the vendor did not
// tell still gets its failure.
TEST_F(AclBackendTest, AFailureIsItsItemsEvenWhenItsTaskIdIsUnknownOrComesRoundAgain) {
  const Function* explode = Kernel("explode");
  const Function* increment = Kernel("increment");
  ASSERT_TRUE(explode != nullptr && increment != nullptr);
  DeviceBuffer buffer = Allocate(16);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  const LaunchParams params = Incrementing(buffer, 16);
  log_->SetNextTaskId(100);
  // Neither the argument copy's task id nor the kernel's is told.
  log_->FailNextCalls("aclrtGetThreadLastTaskId", ACL_ERROR_RT_INTERNAL_ERROR, 2);
  ASSERT_EQ(*stream->Launch(*explode, params), 1u);
  EXPECT_GE(CountCalls(log_->Read(), "aclrtGetThreadLastTaskId"), 2);
  ASSERT_TRUE(reports.WaitForCompleted(1));
  EXPECT_EQ(AclCodeOf(reports.completed()[0].second), ACL_ERROR_RT_AICORE_EXCEPTION)
      << "its task id unknown, the failed kernel was reported "
      << reports.completed()[0].second;

  // The same task ids again: the increment is reported for what it did.
  log_->SetNextTaskId(100);
  ASSERT_EQ(*stream->Launch(*increment, params), 2u);
  ASSERT_TRUE(reports.WaitForCompleted(2));
  EXPECT_TRUE(reports.completed()[1].second.ok()) << reports.completed()[1].second;
  EXPECT_TRUE(AllBytes(Read(buffer), 1));
}

TEST_F(AclBackendTest, EventsCompleteAndCarryDeviceTimestamps) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok()) << event.status();
  EXPECT_TRUE((*event)->Complete());
  EXPECT_EQ((*event)->TimestampNanos(), std::nullopt);

  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  const int64_t before = device_->NowNanos();
  ASSERT_EQ(*stream->RecordEvent(**event, 1), 1u);
  ASSERT_TRUE(reports.WaitForCompleted(1));
  const int64_t after = device_->NowNanos();
  EXPECT_TRUE((*event)->Complete());
  std::optional<int64_t> stamp = (*event)->TimestampNanos();
  ASSERT_TRUE(stamp.has_value());
  // The device's clock (another epoch) mapped onto the host's, to within the
  // calibration's bracket.
  EXPECT_GE(*stamp, before - 2000000);
  EXPECT_LE(*stamp, after);

  absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(*stream->RecordEvent(**event, 2), 2u);
  ASSERT_TRUE(reports.WaitForCompleted(2));
  EXPECT_GT(*(*event)->TimestampNanos(), *stamp);
}

TEST_F(AclBackendTest, StreamsWaitForEventsOfOtherStreams) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(32);
  StreamReports first_reports;
  StreamReports second_reports;
  std::unique_ptr<Stream> first = NewStream(first_reports);
  std::unique_ptr<Stream> second = NewStream(second_reports);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);

  ASSERT_EQ(*first->HostCallbackPoint(), 1u);
  ASSERT_EQ(*first->RecordEvent(**event, 1), 2u);
  log_->Clear();
  ASSERT_EQ(*second->WaitEvent(**event, 1, false), 1u);
  // The record is the vendor event's latest: the vendor waits for it.
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtStreamWaitEvent"), 1);
  ASSERT_EQ(*second->Fill(Span(buffer), 7, 32), 2u);
  ASSERT_TRUE(first_reports.WaitForReached(1));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE((*event)->Complete());
  EXPECT_TRUE(second_reports.completed().empty());
  EXPECT_TRUE(AllBytes(Read(buffer), 0));

  first->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(second_reports.WaitForCompleted(2));
  ASSERT_TRUE(first_reports.WaitForCompleted(2));
  EXPECT_TRUE((*event)->Complete());
  EXPECT_TRUE(AllBytes(Read(buffer), 7));
}

// A record superseded by a later one is not the vendor event's any more: the
// wait for it holds on a notify that the backend records once it ran.
TEST_F(AclBackendTest, AWaitForASupersededRecordHoldsOnANotify) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(32);
  StreamReports first_reports, second_reports, third_reports;
  std::unique_ptr<Stream> first = NewStream(first_reports);
  std::unique_ptr<Stream> second = NewStream(second_reports);
  std::unique_ptr<Stream> third = NewStream(third_reports);
  ASSERT_EQ(*first->HostCallbackPoint(), 1u);
  ASSERT_EQ(*first->RecordEvent(**event, 1), 2u);
  ASSERT_EQ(*third->RecordEvent(**event, 2), 1u);  // runs at once
  ASSERT_TRUE(third_reports.WaitForCompleted(1));
  ASSERT_TRUE(first_reports.WaitForReached(1));
  log_->Clear();
  ASSERT_EQ(*second->WaitEvent(**event, 1, false), 1u);
  ASSERT_EQ(*second->Fill(Span(buffer), 7, 32), 2u);
  std::vector<Call> calls = log_->Read();
  EXPECT_EQ(CountCalls(calls, "aclrtStreamWaitEvent"), 0);
  EXPECT_EQ(CountCalls(calls, "aclrtWaitAndResetNotify"), 1);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(second_reports.completed().empty()) << "the wait passed before record 1 ran";
  EXPECT_TRUE(AllBytes(Read(buffer), 0));

  first->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(second_reports.WaitForCompleted(2));
  EXPECT_TRUE(AllBytes(Read(buffer), 7));
  EXPECT_TRUE((*event)->Complete());
}

// Waits for a superseded record that an abort drops leave nothing in the
// event: a record that never runs would otherwise keep every aborted wait.
TEST_F(AclBackendTest, AnAbortedWaitForASupersededRecordIsForgottenByTheEvent) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  const auto& acl_event = static_cast<const AclEvent&>(**event);
  StreamReports first_reports, second_reports, third_reports;
  std::unique_ptr<Stream> first = NewStream(first_reports);
  std::unique_ptr<Stream> second = NewStream(second_reports);
  std::unique_ptr<Stream> third = NewStream(third_reports);
  ASSERT_EQ(*first->HostCallbackPoint(), 1u);  // holds record 1
  ASSERT_EQ(*first->RecordEvent(**event, 1), 2u);
  ASSERT_EQ(*third->RecordEvent(**event, 2), 1u);
  ASSERT_TRUE(third_reports.WaitForCompleted(1));
  ASSERT_TRUE(first_reports.WaitForReached(1));
  for (uint64_t wait = 1; wait <= 3; ++wait) {
    ASSERT_EQ(*second->WaitEvent(**event, 1, false), wait);
  }
  EXPECT_EQ(acl_event.waiting(), 3u);
  second->Abort();
  EXPECT_EQ(acl_event.waiting(), 0u);

  // The stream goes on; record 1, when it runs, releases nobody stale.
  DeviceBuffer buffer = Allocate(32);
  ASSERT_EQ(*second->WaitEvent(**event, 1, false), 4u);
  ASSERT_EQ(*second->Fill(Span(buffer), 5, 32), 5u);
  EXPECT_EQ(acl_event.waiting(), 1u);
  first->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(second_reports.WaitForCompleted(2));
  EXPECT_TRUE(AllBytes(Read(buffer), 5));
  EXPECT_EQ(acl_event.waiting(), 0u);
}

// aclrtStreamStop reaches the vendor for a wait the vendor holds; the stopped
// item fails and the items behind it run. A held host-callback point and a
// wait held on a notify (a superseded record) are never stopped: the vendor
// cannot stop the one, and the other would leave its notify to be recorded
// for a later wait.
TEST_F(AclBackendTest, StopEndsAVendorWaitButNeitherAHeldPointNorANotifyWait) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(32);
  StreamReports first_reports, second_reports, third_reports;
  std::unique_ptr<Stream> first = NewStream(first_reports);
  std::unique_ptr<Stream> second = NewStream(second_reports);
  std::unique_ptr<Stream> third = NewStream(third_reports);
  ASSERT_TRUE(second->can_stop_items());
  const absl::Status why = acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped");
  ASSERT_EQ(*first->HostCallbackPoint(), 1u);  // holds record 1
  ASSERT_EQ(*first->RecordEvent(**event, 1), 2u);
  ASSERT_TRUE(first_reports.WaitForReached(1));
  ASSERT_EQ(*second->WaitEvent(**event, 1, false), 1u);  // the vendor waits
  ASSERT_EQ(*second->Fill(Span(buffer), 7, 32), 2u);

  log_->Clear();
  ASSERT_TRUE(first->StopItem(1, why).ok());
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtStreamStop"), 0);
  ASSERT_TRUE(second->StopItem(1, why).ok());
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtStreamStop"), 1);
  ASSERT_TRUE(second_reports.WaitForCompleted(2));
  std::vector<std::pair<uint64_t, absl::Status>> completed = second_reports.completed();
  EXPECT_EQ(completed[0].first, 1u);
  EXPECT_EQ(AclCodeOf(completed[0].second), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_TRUE(completed[1].second.ok());
  EXPECT_TRUE(AllBytes(Read(buffer), 7));
  EXPECT_TRUE(first_reports.completed().empty()) << "the held point was stopped";
  EXPECT_FALSE((*event)->Complete());

  // A vendor wait at the head with a notify wait behind it is not stopped
  // either: the vendor may be past the one, at the other.
  absl::StatusOr<std::shared_ptr<Event>> other = device_->CreateEvent();
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(*first->RecordEvent(**other, 1), 3u);  // held too
  ASSERT_EQ(*third->RecordEvent(**event, 2), 1u);  // supersedes record 1
  ASSERT_TRUE(third_reports.WaitForCompleted(1));
  log_->Clear();
  ASSERT_EQ(*second->WaitEvent(**other, 1, false), 3u);
  ASSERT_EQ(*second->WaitEvent(**event, 1, false), 4u);
  ASSERT_EQ(*second->Fill(Span(buffer), 9, 32), 5u);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtStreamWaitEvent"), 1);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtWaitAndResetNotify"), 1);
  ASSERT_TRUE(second->StopItem(3, why).ok());
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtStreamStop"), 0);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(second_reports.completed().size(), 2u);

  first->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(second_reports.WaitForCompleted(5));
  completed = second_reports.completed();
  for (size_t i = 2; i < 5; ++i) EXPECT_TRUE(completed[i].second.ok()) << i;
  EXPECT_TRUE(AllBytes(Read(buffer), 9));
}

// The vendor refused a wait held on a notify: the event forgets its release
// and the stream goes on (before, the release stayed in the event and
// would record a notify nobody waited on, so the stream refused all work).
TEST_F(AclBackendTest, ARefusedNotifyWaitLeavesNothingBehind) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  const auto& acl_event = static_cast<const AclEvent&>(**event);
  DeviceBuffer buffer = Allocate(32);
  StreamReports first_reports, second_reports, third_reports;
  std::unique_ptr<Stream> first = NewStream(first_reports);
  std::unique_ptr<Stream> second = NewStream(second_reports);
  std::unique_ptr<Stream> third = NewStream(third_reports);
  ASSERT_EQ(*first->HostCallbackPoint(), 1u);  // holds record 1
  ASSERT_EQ(*first->RecordEvent(**event, 1), 2u);
  ASSERT_EQ(*third->RecordEvent(**event, 2), 1u);  // supersedes it
  ASSERT_TRUE(third_reports.WaitForCompleted(1));
  ASSERT_TRUE(first_reports.WaitForReached(1));

  log_->FailNext("aclrtWaitAndResetNotify", ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(AclCodeOf(second->WaitEvent(**event, 1, false).status()), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(acl_event.waiting(), 0u);
  absl::StatusOr<uint64_t> fill = second->Fill(Span(buffer), 3, 32);
  ASSERT_TRUE(fill.ok()) << fill.status();
  EXPECT_EQ(*fill, 1u);
  ASSERT_TRUE(second_reports.WaitForCompleted(1));
  EXPECT_TRUE(AllBytes(Read(buffer), 3));

  // A wait made again holds until record 1 ran, as any.
  ASSERT_EQ(*second->WaitEvent(**event, 1, false), 2u);
  ASSERT_EQ(*second->Fill(Span(buffer), 9, 32), 3u);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(second_reports.completed().size(), 1u);
  first->ResumeCallbackPoint(1, absl::OkStatus());
  ASSERT_TRUE(second_reports.WaitForCompleted(3));
  EXPECT_TRUE(AllBytes(Read(buffer), 9));
  EXPECT_EQ(acl_event.waiting(), 0u);
}

// The record a refused notify wait waited for ran while the vendor refused
// it: the release records the notify anyway. The stream goes on, and that
// notify is never handed to another wait; the next abort destroys it.
TEST_F(AclBackendTest, ANotifyWaitRefusedAsItsRecordRanKeepsItsNotifyOutOfUse) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(32);
  StreamReports first_reports, second_reports, third_reports;
  std::unique_ptr<Stream> first = NewStream(first_reports);
  std::unique_ptr<Stream> second = NewStream(second_reports);
  std::unique_ptr<Stream> third = NewStream(third_reports);
  const auto& acl_event = static_cast<const AclEvent&>(**event);
  ASSERT_EQ(*first->HostCallbackPoint(), 1u);  // holds record 1
  ASSERT_EQ(*first->RecordEvent(**event, 1), 2u);
  ASSERT_EQ(*first->HostCallbackPoint(), 3u);  // holds record 2
  ASSERT_EQ(*first->RecordEvent(**event, 2), 4u);
  ASSERT_EQ(*third->RecordEvent(**event, 3), 1u);  // supersedes both
  ASSERT_TRUE(third_reports.WaitForCompleted(1));
  ASSERT_TRUE(first_reports.WaitForReached(1));

  log_->FailNext("aclrtWaitAndResetNotify", ACL_ERROR_RT_PARAM_INVALID, /*hold=*/true);
  absl::StatusOr<uint64_t> refused;
  std::thread waiter([&] { refused = second->WaitEvent(**event, 1, false); });
  const bool held = log_->WaitUntilHolding();
  bool released = false;
  if (held) {
    // Record 1 runs while the vendor is refusing the wait: its release is
    // handed out (the event keeps no wait any more).
    first->ResumeCallbackPoint(1, absl::OkStatus());
    for (int i = 0; i < 1000 && !released; ++i) {
      released = acl_event.waiting() == 0;
      if (!released) absl::SleepFor(absl::Milliseconds(10));
    }
  }
  log_->LetGo();
  waiter.join();
  ASSERT_TRUE(held);
  ASSERT_TRUE(released);
  EXPECT_EQ(AclCodeOf(refused.status()), ACL_ERROR_RT_PARAM_INVALID);

  // A wait made next must not take the record that release left: it holds
  // until record 2 ran.
  log_->Clear();
  absl::StatusOr<uint64_t> wait = second->WaitEvent(**event, 2, false);
  ASSERT_TRUE(wait.ok()) << wait.status();
  EXPECT_EQ(*wait, 1u);
  ASSERT_EQ(*second->Fill(Span(buffer), 4, 32), 2u);
  ASSERT_TRUE(first_reports.WaitForCompleted(2));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(second_reports.completed().empty()) << "a wait took a stray record";
  EXPECT_TRUE(AllBytes(Read(buffer), 0));
  first->ResumeCallbackPoint(3, absl::OkStatus());
  ASSERT_TRUE(second_reports.WaitForCompleted(2));
  EXPECT_TRUE(AllBytes(Read(buffer), 4));
  const int created = CountCalls(log_->Read(), "aclrtCreateNotify");
  second->Abort();
  EXPECT_GE(CountCalls(log_->Read(), "aclrtDestroyNotify"), 1);
  EXPECT_EQ(created, 1) << "the stray notify went back to the pool";
}

TEST_F(AclBackendTest, HostCallbackPointHoldsTheStreamUntilResumed) {
  DeviceBuffer buffer = Allocate(32);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(*stream->Fill(Span(buffer), 1, 32), 1u);
  ASSERT_EQ(*stream->HostCallbackPoint(), 2u);
  ASSERT_EQ(*stream->Fill(Span(buffer), 9, 32), 3u);
  ASSERT_TRUE(reports.WaitForReached(1));
  EXPECT_EQ(reports.reached(), std::vector<uint64_t>{2});
  // The work before the point was reported before the point.
  ASSERT_EQ(reports.completed().size(), 1u);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(reports.completed().size(), 1u);
  EXPECT_TRUE(AllBytes(Read(buffer), 1));

  const absl::Status callback_failed = acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "callback");
  stream->ResumeCallbackPoint(2, callback_failed);
  ASSERT_TRUE(reports.WaitForCompleted(3));
  std::vector<std::pair<uint64_t, absl::Status>> completed = reports.completed();
  EXPECT_EQ(completed[1].first, 2u);
  EXPECT_EQ(AclCodeOf(completed[1].second), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_EQ(completed[2].first, 3u);
  EXPECT_TRUE(completed[2].second.ok());
  EXPECT_TRUE(AllBytes(Read(buffer), 9));
}

TEST_F(AclBackendTest, StreamsShareOneReportThreadAndHeldPointsHoldNoThread) {
  DeviceBuffer buffer = Allocate(64);
  constexpr int kStreams = 40;
  std::vector<StreamReports> reports(kStreams);
  std::vector<std::unique_ptr<Stream>> streams;
  log_->Clear();
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(NewStream(reports[i]));
    ASSERT_NE(streams.back(), nullptr);
    ASSERT_EQ(*streams.back()->HostCallbackPoint(), 1u);
  }
  // Every stream is held at its point, and yet the next stream's work runs:
  // no thread is held by a point.
  for (int i = 0; i < kStreams; ++i) ASSERT_TRUE(reports[i].WaitForReached(1)) << i;
  StreamReports free_reports;
  std::unique_ptr<Stream> free_stream = NewStream(free_reports);
  ASSERT_EQ(*free_stream->Fill(Span(buffer), 3, 64), 1u);
  ASSERT_TRUE(free_reports.WaitForCompleted(1));
  for (int i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(reports[i].completed().empty()) << i;
    streams[i]->ResumeCallbackPoint(1, absl::OkStatus());
  }
  for (int i = 0; i < kStreams; ++i) ASSERT_TRUE(reports[i].WaitForCompleted(1)) << i;

  // One thread processed the reports of all of them.
  std::set<uint64_t> processing;
  for (const Call& call : log_->Read()) {
    if (call.name == "aclrtProcessReport") processing.insert(call.thread);
  }
  EXPECT_EQ(processing.size(), 1u);
}

TEST_F(AclBackendTest, AbortDropsQueuedItemsAndTheStreamGoesOn) {
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  DeviceBuffer buffer = Allocate(32);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(*stream->Fill(Span(buffer), 1, 32), 1u);
  ASSERT_TRUE(reports.WaitForCompleted(1));
  ASSERT_EQ(*stream->HostCallbackPoint(), 2u);
  ASSERT_EQ(*stream->Fill(Span(buffer), 2, 32), 3u);
  ASSERT_EQ(*stream->RecordEvent(**event, 1), 4u);
  ASSERT_TRUE(reports.WaitForReached(1));

  log_->Clear();
  stream->Abort();
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtStreamAbort"), 1);
  EXPECT_TRUE((*event)->Complete());  // its record was dropped
  ASSERT_EQ(*stream->Fill(Span(buffer), 3, 16), 5u);
  ASSERT_TRUE(reports.WaitForCompleted(2));
  absl::SleepFor(absl::Milliseconds(50));
  std::vector<std::pair<uint64_t, absl::Status>> completed = reports.completed();
  ASSERT_EQ(completed.size(), 2u);
  EXPECT_EQ(completed[0].first, 1u);
  EXPECT_EQ(completed[1].first, 5u);
  std::vector<uint8_t> bytes = Read(buffer);
  for (size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(bytes[i], i < 16 ? 3 : 1) << i;
}

TEST_F(AclBackendTest, ListenersMaySubmitAndAbort) {
  DeviceBuffer buffer = Allocate(16);
  Stream* stream_pointer = nullptr;
  absl::Mutex mu;
  std::vector<uint64_t> completed;
  uint64_t follow_up = 0;  // what the listener submitted
  StreamOptions options;
  options.on_complete = [&](uint64_t sequence, const absl::Status& status) {
    EXPECT_TRUE(status.ok()) << status;
    absl::MutexLock lock(&mu);
    completed.push_back(sequence);
    // Both of the test's fills were submitted before the second completes.
    if (sequence == 2) {
      absl::StatusOr<uint64_t> submitted = stream_pointer->Fill(Span(buffer), 4, 16);
      ASSERT_TRUE(submitted.ok()) << submitted.status();
      follow_up = *submitted;
    }
    if (sequence == follow_up) stream_pointer->Abort();
  };
  absl::StatusOr<std::unique_ptr<Stream>> stream = device_->CreateStream(options);
  ASSERT_TRUE(stream.ok());
  stream_pointer = stream->get();
  ASSERT_EQ(*(*stream)->Fill(Span(buffer), 1, 16), 1u);
  ASSERT_TRUE((*stream)->Fill(Span(buffer), 2, 16).ok());
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(mu.AwaitWithTimeout(
      absl::Condition(
          +[](std::vector<uint64_t>* done) { return done->size() >= 3; }, &completed),
      kPatience));
  EXPECT_EQ(completed, (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(AclBackendTest, DestroyingAHeldStreamReturns) {
  DeviceBuffer buffer = Allocate(16);
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(*stream->HostCallbackPoint(), 1u);
  ASSERT_EQ(*stream->Fill(Span(buffer), 5, 16), 2u);
  ASSERT_TRUE(reports.WaitForReached(1));
  stream.reset();
  EXPECT_TRUE(reports.completed().empty());
  EXPECT_TRUE(AllBytes(Read(buffer), 0));  // the queued fill was discarded
}

TEST_F(AclBackendTest, UtilizationComesFromTheVendor) {
  DeviceBuffer buffer = Allocate(kDeviceMemory / 4);
  const DeviceUtilization utilization = device_->Utilization();
  EXPECT_EQ(utilization.compute_percent, 37);  // the busier of cube (37) and vector (12)
  EXPECT_EQ(utilization.memory_percent, 25);
  device_->Free(buffer);
  // A device that is not up is not asked.
  EXPECT_EQ(backend_->device(1).Utilization().compute_percent, -1);
}

TEST_F(AclBackendTest, TheBackendRegistersMappedHostMemoryUntilItsHandleGoes) {
  HostPages host(8192);
  log_->Clear();
  std::shared_ptr<void> registration = backend_->RegisterHostMemory(host.data, host.size);
  ASSERT_NE(registration, nullptr);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtHostRegisterV2"), 1);
  EXPECT_TRUE(device_->IsHostMemoryRegistered(host.data, host.size));
  // A stream's copy with it stays asynchronous; with memory allocated at the
  // submission (null), the vendor waits for the stream's earlier work.
  EXPECT_FALSE(device_->CopyBlocksSubmitter(host.data, host.size));
  EXPECT_TRUE(device_->CopyBlocksSubmitter(nullptr, 64));
  registration.reset();
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtHostUnregister"), 1);
  EXPECT_FALSE(device_->IsHostMemoryRegistered(host.data, host.size));
  EXPECT_TRUE(device_->CopyBlocksSubmitter(host.data, host.size));
  // No device up: nothing to register with (copies still work, synchronously).
  device_->Release();
  EXPECT_EQ(backend_->RegisterHostMemory(host.data, host.size), nullptr);
}

TEST_F(AclBackendTest, ReleaseAndBringUpAgain) {
  device_->Release();
  EXPECT_FALSE(device_->is_up());
  EXPECT_EQ(AclCodeOf(device_->Allocate(16).status()), ACL_ERROR_RT_CONTEXT_NULL);
  ASSERT_TRUE(device_->BringUp().ok());
  DeviceBuffer buffer = Allocate(16);
  EXPECT_TRUE(AllBytes(Read(buffer), 0));
}

TEST_F(AclBackendTest, OneBackendPerVendorLibrary) {
  BackendOptions options;
  options.vendor_library = library_;
  EXPECT_EQ(AclCodeOf(CreateAclBackend(options).status()), ACL_ERROR_REPEAT_INITIALIZE);
}

TEST(AclBackendLoadTest, MissingSymbolsAndLibrariesAreClearErrors) {
  BackendOptions options;
  options.vendor_library = LibraryPath("FAKE_VENDOR_INCOMPLETE_LIBRARY");
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateAclBackend(options);
  EXPECT_EQ(AclCodeOf(backend.status()), ACL_ERROR_API_NOT_SUPPORT);
  EXPECT_TRUE(absl::StrContains(backend.status().message(), "aclrtLaunchKernel"))
      << backend.status();
  EXPECT_TRUE(absl::StrContains(backend.status().message(), options.vendor_library));

  options.vendor_library = "/nonexistent/libascendcl.so";
  backend = CreateAclBackend(options);
  EXPECT_EQ(AclCodeOf(backend.status()), ACL_ERROR_INVALID_FILE);
  EXPECT_TRUE(absl::StrContains(backend.status().message(), "/nonexistent/libascendcl.so"));

  options.vendor_library.clear();
  EXPECT_EQ(AclCodeOf(CreateAclBackend(options).status()), ACL_ERROR_INVALID_PARAM);
}

// The fake refuses what a CANN runtime would not forgive, so that the call
// log below means something.
TEST_F(AclBackendTest, FakeRefusesWhatCannWouldNot) {
  void* fake = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr);
  auto malloc_on_device =
      reinterpret_cast<aclError (*)(void**, size_t, int)>(dlsym(fake, "aclrtMalloc"));
  auto create_stream =
      reinterpret_cast<aclError (*)(aclrtStream*)>(dlsym(fake, "aclrtCreateStream"));
  auto destroy_stream =
      reinterpret_cast<aclError (*)(aclrtStream)>(dlsym(fake, "aclrtDestroyStream"));
  auto launch_callback = reinterpret_cast<aclError (*)(void (*)(void*), void*, int, aclrtStream)>(
      dlsym(fake, "aclrtLaunchCallback"));
  ASSERT_TRUE(malloc_on_device && create_stream && destroy_stream && launch_callback);

  std::thread([&] {
    void* memory = nullptr;
    EXPECT_EQ(malloc_on_device(&memory, 64, 0), ACL_ERROR_RT_CONTEXT_NULL);
  }).join();
  // This thread has the device's context (the backend set it).
  aclrtStream stream = nullptr;
  ASSERT_EQ(create_stream(&stream), ACL_SUCCESS);
  EXPECT_EQ(launch_callback(
                +[](void*) {}, nullptr, 0, stream),
            ACL_ERROR_RT_STREAM_NO_CB_REG);
  EXPECT_EQ(destroy_stream(stream), ACL_SUCCESS);
}

// The calls the backend made, checked against what a CANN runtime requires.
TEST_F(AclBackendTest, CallLogShowsTheRequiredSequences) {
  // Everything from the backend's creation on.
  backend_.reset();
  log_->Clear();
  Open(library_);

  HostPages registered(4096);
  HostPages pageable(4096);
  ASSERT_TRUE(device_->RegisterHostMemory(registered.data + 64, 1000).ok());  // unaligned
  DeviceBuffer buffer = Allocate(4096);
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  std::shared_ptr<Executable> executable = LoadKernels();
  ASSERT_NE(executable, nullptr);
  {
    StreamReports reports;
    std::unique_ptr<Stream> stream = NewStream(reports);
    ASSERT_NE(stream, nullptr);
    Transfer in;
    in.host_src = registered.data + 64;
    in.device_dst = Span(buffer);
    in.count = 1000;
    ASSERT_TRUE(stream->Copy(in).ok());
    ASSERT_TRUE(stream->HostCallbackPoint().ok());
    ASSERT_TRUE(reports.WaitForReached(1));
    stream->ResumeCallbackPoint(2, absl::OkStatus());
    LaunchParams params;
    params.block_dim = 1;
    params.args = IncrementArgs(buffer, 8);
    ASSERT_TRUE(stream->Launch(**executable->GetFunction("increment"), params).ok());
    ASSERT_TRUE(stream->RecordEvent(**event, 1).ok());
    Transfer unregistered;  // the one copy CANN would make synchronous
    unregistered.device_src = Span(buffer);
    unregistered.host_dst = pageable.data;
    unregistered.count = 100;
    ASSERT_TRUE(stream->Copy(unregistered).ok());
    ASSERT_TRUE(reports.WaitForCompleted(5));
    // Another thread of the daemon using the device (while the report thread
    // lives, so that their thread ids differ).
    std::thread([&] {
      DeviceBuffer other = Allocate(64);
      EXPECT_TRUE(AllBytes(Read(other), 0));
    }).join();
  }
  executable.reset();
  event->reset();
  buffer = DeviceBuffer{};
  ASSERT_TRUE(device_->UnregisterHostMemory(registered.data + 64).ok());
  backend_.reset();

  const std::vector<Call> calls = log_->Read();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front().name, "aclInit");
  EXPECT_EQ(calls.back().name, "aclFinalize");

  // Nothing the vendor refused for want of a context or a report thread.
  const std::set<int64_t> refusals = {ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_STREAM_CONTEXT,
                                      ACL_ERROR_RT_STREAM_NO_CB_REG, ACL_ERROR_RT_THREAD_SUBSCRIBE};
  for (const Call& call : calls) {
    EXPECT_EQ(refusals.count(call.result), 0u) << call.name << " returned " << call.result;
  }

  // Every thread set a context before any call that needs one.
  const std::set<std::string> no_context_needed = {"aclInit",
                                                   "aclFinalize",
                                                   "aclrtGetDeviceCount",
                                                   "aclrtSetDevice",
                                                   "aclrtResetDevice",
                                                   "aclrtGetSocName",
                                                   "aclrtCreateContext",
                                                   "aclrtDestroyContext",
                                                   "aclrtSetCurrentContext",
                                                   "aclrtSetExceptionInfoCallback",
                                                   "aclrtExceptionInfoCallbackRegister",
                                                   "aclrtExceptionInfoCallbackUnregister",
                                                   "aclrtGetThreadLastTaskId"};
  const std::set<std::string> gives_context = {"aclrtSetDevice", "aclrtCreateContext",
                                               "aclrtSetCurrentContext"};
  std::set<uint64_t> threads_with_context;
  std::set<uint64_t> calling_threads;
  for (const Call& call : calls) {
    calling_threads.insert(call.thread);
    if (gives_context.count(call.name) > 0 && call.result == ACL_SUCCESS) {
      threads_with_context.insert(call.thread);
    } else if (no_context_needed.count(call.name) == 0) {
      EXPECT_EQ(threads_with_context.count(call.thread), 1u)
          << call.name << " on a thread without a context";
    }
  }
  // The test thread, a report thread, the dispatcher and the other thread.
  EXPECT_GE(calling_threads.size(), 4u);

  // Callbacks only once a report thread subscribed; report threads process
  // only after subscribing.
  std::set<uint64_t> subscribed;
  bool any_subscription = false;
  for (const Call& call : calls) {
    if (call.name == "aclrtSubscribeReport") {
      subscribed.insert(call.thread);
      any_subscription = true;
    }
    if (call.name == "aclrtLaunchCallback") {
      EXPECT_TRUE(any_subscription) << "a callback before any subscription";
    }
    if (call.name == "aclrtProcessReport") {
      EXPECT_EQ(subscribed.count(call.thread), 1u) << "processing without a subscription";
    }
  }

  // Host memory registered (whole pages) before the async copy from it, and
  // only the copy with unregistered memory made synchronous.
  int registration = -1;
  int first_async_copy = -1;
  int synchronous = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].name == "aclrtHostRegisterV2" && registration < 0) registration = i;
    if (calls[i].name == "aclrtMemcpyAsync" && first_async_copy < 0) first_async_copy = i;
    if (calls[i].note == "made-synchronous") ++synchronous;
  }
  EXPECT_GE(registration, 0);
  EXPECT_LT(registration, first_async_copy);
  EXPECT_EQ(synchronous, 1);
  EXPECT_EQ(CountCalls(calls, "aclrtHostUnregister"), 1);

  // Streams and events are gone before the device is reset, and the device
  // before the runtime is finalized.
  int last_destroy = -1;
  int reset = -1;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].name == "aclrtDestroyStream" || calls[i].name == "aclrtDestroyEvent") {
      last_destroy = i;
    }
    if (calls[i].name == "aclrtResetDevice") reset = i;
  }
  EXPECT_LT(last_destroy, reset);
}

// An older CANN without the optional symbols: the fallbacks.
class AclLegacyVendorTest : public AclBackendTest {
 protected:
  void SetUp() override { Open(LibraryPath("FAKE_VENDOR_LEGACY_LIBRARY")); }
};

TEST_F(AclLegacyVendorTest, FallsBackWhereTheVendorIsOlder) {
  // Without the vendor's counts: the fewest CANN documents for any product.
  EXPECT_EQ(device_->info().objects.streams, 510u);
  EXPECT_EQ(device_->info().objects.events, 1023u);
  // No aclrtGetDeviceUtilizationRate: compute unknown, memory from the ledger.
  EXPECT_EQ(device_->Utilization().compute_percent, -1);
  EXPECT_EQ(device_->Utilization().memory_percent, 0);

  HostPages host(4096);
  log_->Clear();
  ASSERT_TRUE(device_->RegisterHostMemory(host.data, host.size).ok());
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtHostRegister"), 1);

  // Timestamps from the host clock when the report came.
  absl::StatusOr<std::shared_ptr<Event>> event = device_->CreateEvent();
  ASSERT_TRUE(event.ok());
  StreamReports reports;
  std::unique_ptr<Stream> stream = NewStream(reports);
  ASSERT_NE(stream, nullptr);
  const int64_t before = device_->NowNanos();
  ASSERT_EQ(*stream->RecordEvent(**event, 1), 1u);
  ASSERT_TRUE(reports.WaitForCompleted(1));
  ASSERT_TRUE((*event)->TimestampNanos().has_value());
  EXPECT_GE(*(*event)->TimestampNanos(), before);
  EXPECT_LE(*(*event)->TimestampNanos(), device_->NowNanos());

  // Failures without task ids: the next item reported takes it.
  std::shared_ptr<Executable> executable = LoadKernels();
  ASSERT_NE(executable, nullptr);
  DeviceBuffer buffer = Allocate(16);
  LaunchParams params;
  params.block_dim = 1;
  params.args = IncrementArgs(buffer, 16);
  ASSERT_EQ(*stream->Launch(**executable->GetFunction("explode"), params), 2u);
  ASSERT_EQ(*stream->Launch(**executable->GetFunction("increment"), params), 3u);
  ASSERT_TRUE(reports.WaitForCompleted(3));
  EXPECT_EQ(AclCodeOf(reports.completed()[1].second), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_TRUE(reports.completed()[2].second.ok());

  // No notify functions or aclrtStreamAbort: a stream cannot hold for the host.
  EXPECT_EQ(AclCodeOf(stream->HostCallbackPoint().status()), ACL_ERROR_API_NOT_SUPPORT);
  // Nor wait on a value (nothing could end a wait nothing satisfies), refused
  // before the vendor is asked.
  log_->Clear();
  EXPECT_EQ(AclCodeOf(stream->WaitValue(Span(buffer), 1, 0).status()), ACL_ERROR_API_NOT_SUPPORT);
  EXPECT_EQ(CountCalls(log_->Read(), "aclrtValueWait"), 0);
  // Nor stop a task.
  EXPECT_FALSE(stream->can_stop_items());
  EXPECT_EQ(AclCodeOf(stream->StopItem(3, acld::AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stop"))),
            ACL_ERROR_API_NOT_SUPPORT);

  // Abort without aclrtStreamAbort: the queued work still ran when it returns;
  // the stream goes on numbering and reporting.
  ASSERT_EQ(*stream->Fill(Span(buffer), 6, 16), 4u);
  stream->Abort();
  EXPECT_TRUE(AllBytes(Read(buffer), 6));
  const size_t reported_before = reports.completed().size();
  ASSERT_EQ(*stream->Fill(Span(buffer), 8, 16), 5u);
  ASSERT_TRUE(reports.WaitForCompleted(reported_before + 1));
  EXPECT_EQ(reports.completed().back().first, 5u);
  EXPECT_TRUE(AllBytes(Read(buffer), 8));
  stream.reset();
  EXPECT_TRUE(device_->UnregisterHostMemory(host.data).ok());
}

}  // namespace
}  // namespace hal::acl
