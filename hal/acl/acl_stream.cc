#include "hal/acl/acl_stream.h"

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "hal/acl/acl_builtin_kernels.h"
#include "hal/acl/acl_event.h"
#include "hal/acl/acl_executable.h"
#include "hal/acl/args_ring.h"
#include "hal/ring_queue.h"
#include "hal/acl/vendor_copy.h"
#include "hal/acl/vendor_status.h"
#include "proto/acl/status_macros.h"

namespace hal::acl {
namespace {

// How long the report thread waits in aclrtProcessReport before it looks at
// its stop flag (a callback wakes it when it is stopped normally).
constexpr int32_t kReportTimeoutMs = 1000;
// After an aclrtProcessReport failure other than a timeout: do not spin.
constexpr absl::Duration kReportRetryDelay = absl::Milliseconds(10);
constexpr uint64_t kFirstArgsRingBytes = uint64_t{64} << 10;
// How long a held host-callback point waits, once an abort or shutdown began,
// for the vendor's abort to land before it lets go anyway (see Abort).
constexpr absl::Duration kHeldPointGrace = absl::Milliseconds(200);
// Failures whose task id matches no item (a task the vendor ran for itself)
// are forgotten beyond this many.
constexpr size_t kMaxPendingFailures = 64;

enum class ItemKind : uint8_t { kCopy, kFill, kLaunch, kRecord, kWait, kCallbackPoint };

// A submitted item until it is reported or dropped.
struct Item {
  uint64_t sequence = 0;
  ItemKind kind = ItemKind::kCopy;
  bool has_task = false;  // vendor work was enqueued (not a no-op)
  bool has_task_id = false;
  uint32_t task_id = 0;
  std::shared_ptr<AclEvent> event;  // kRecord
  uint64_t record = 0;
  std::shared_ptr<ArgsRing> args_ring;  // kLaunch
  ArgsRing::Slice args_slice;
  absl::Status point_status;  // kCallbackPoint: what ResumeCallbackPoint said
};

uint64_t NextPowerOfTwo(uint64_t value) {
  uint64_t power = 1;
  while (power < value) power <<= 1;
  return power;
}

}  // namespace

class AclStream::Core final : public CompletionDispatcher::Client,
                              public FailureSink,
                              public std::enable_shared_from_this<Core> {
 public:
  Core(StreamDeps deps, StreamOptions options)
      : context_(std::move(deps.context)),
        api_(context_->api()),
        dispatcher_(std::move(deps.dispatcher)),
        router_(std::move(deps.router)),
        options_(std::move(options)),
        task_ids_known_(api_.aclrtGetThreadLastTaskId != nullptr) {}

  absl::Status Start();
  void Shutdown();

  absl::StatusOr<uint64_t> Copy(const Transfer& transfer);
  absl::StatusOr<uint64_t> Fill(const DeviceSpan& dst, uint8_t value, uint64_t count);
  absl::StatusOr<uint64_t> Launch(const Function& function, const LaunchParams& params);
  absl::StatusOr<uint64_t> RecordEvent(Event& event);
  absl::StatusOr<uint64_t> WaitEvent(Event& event);
  absl::StatusOr<uint64_t> HostCallbackPoint();
  void ResumeCallbackPoint(uint64_t sequence, absl::Status status);
  absl::Status SetStopOnFailure(bool stop);
  void Abort();

  void Dispatch() override;
  void OnTaskFailure(uint32_t task_id, int32_t acl_code) override;

 private:
  // Vendor callbacks (on the report thread).
  static void MarkerCallback(void* core) { static_cast<Core*>(core)->OnMarker(); }
  static void PointCallback(void* core) { static_cast<Core*>(core)->OnPoint(); }
  static void StopCallback(void* core) {
    static_cast<Core*>(core)->stop_seen_.store(true, std::memory_order_release);
  }
  // The fence's user data is its generation; the stream is the report
  // thread's own (one report thread per stream).
  static void FenceCallback(void* generation);

  void OnMarker();
  void OnPoint();
  void OnFence(uint64_t generation);
  void ReportLoop(std::promise<absl::Status>* subscribed);

  // Runs `op` (the item's vendor calls, which fill in the item) and enqueues
  // the completion marker; the item's sequence number.
  template <typename Op>
  absl::StatusOr<uint64_t> Submit(ItemKind kind, Op op);
  // A slice of the kernel argument ring for `bytes`.
  absl::StatusOr<std::pair<std::shared_ptr<ArgsRing>, ArgsRing::Slice>> TakeArgs(uint64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  absl::Status StatusOfLocked(const Item& item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The vendor reported `item` failed (by its task id): it is done.
  bool FailedLocked(const Item& item) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops reports (abort or shutdown) and waits for a listener call in
  // progress, unless the caller is that listener.
  void StopReportingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The vendor side of an abort or shutdown: discards the queued work
  // (aclrtStreamAbort), lets a held host-callback point go, waits for the
  // rest. False when the device is gone.
  bool AbortVendorStream() ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  // Hands back what unreported items hold; `items` in submission order.
  static void Drop(std::vector<Item>& items);
  std::vector<Item> TakeAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NotSameDevice(int32_t device, const char* what) const;

  const std::shared_ptr<DeviceContext> context_;
  const VendorApi& api_;
  const std::shared_ptr<CompletionDispatcher> dispatcher_;
  const std::shared_ptr<ExceptionRouter> router_;
  const StreamOptions options_;
  const bool task_ids_known_;
  aclrtStream stream_ = nullptr;  // set by Start
  int32_t stream_id_ = -1;        // set by Start
  std::thread report_thread_;
  std::atomic<bool> stop_seen_{false};
  std::atomic<bool> stop_forced_{false};

  // Serializes submissions (an item's vendor calls and its marker must not
  // interleave with another item's) and the vendor side of Abort.
  absl::Mutex submit_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Status broken_ ABSL_GUARDED_BY(submit_mu_);
  std::shared_ptr<ArgsRing> args_ring_ ABSL_GUARDED_BY(submit_mu_);

  absl::Mutex mu_;
  absl::CondVar point_cv_;  // point_resumed_, point_releases_, aborting_, shut_down_
  absl::CondVar idle_cv_;   // dispatching_
  hal::RingQueue<Item> items_ ABSL_GUARDED_BY(mu_);     // reserved, not yet reported
  uint64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;     // last sequence handed out
  uint64_t device_done_ ABSL_GUARDED_BY(mu_) = 0;  // markers counted
  uint64_t reported_ ABSL_GUARDED_BY(mu_) = 0;     // reported or dropped
  bool dispatching_ ABSL_GUARDED_BY(mu_) = false;  // a listener call is running
  int aborting_ ABSL_GUARDED_BY(mu_) = 0;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time stop_started_ ABSL_GUARDED_BY(mu_);  // of the latest abort or shutdown
  // Set once the vendor discarded the queued work: held points let go.
  bool points_released_ ABSL_GUARDED_BY(mu_) = false;
  // Counts releases: a held point lets go when it changes, even if the abort
  // that released it has already cleared points_released_ (no lost wake-up).
  uint64_t point_releases_ ABSL_GUARDED_BY(mu_) = 0;
  // After an abort: markers are stale until the latest fence ran.
  bool ignore_markers_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t fence_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // The host-callback point the device holds at (0: none), whether the
  // listener heard of it, and the last one resumed.
  uint64_t point_reached_ ABSL_GUARDED_BY(mu_) = 0;
  bool point_announced_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t point_resumed_ ABSL_GUARDED_BY(mu_) = 0;
  struct Failure {
    uint32_t task_id;
    int32_t code;
  };
  std::vector<Failure> failures_ ABSL_GUARDED_BY(mu_);
};

namespace {
// The stream whose report thread this is.
thread_local AclStream::Core* report_thread_core = nullptr;
}  // namespace

absl::Status AclStream::Core::Start() {
  absl::Status status = context_->MakeCurrent();
  if (!status.ok()) return status;
  status = CheckVendor(api_.aclrtCreateStream(&stream_), "aclrtCreateStream");
  if (!status.ok()) return status;
  status = CheckVendor(api_.aclrtStreamGetId(stream_, &stream_id_), "aclrtStreamGetId");
  if (!status.ok()) {
    api_.aclrtDestroyStream(stream_);
    return status;
  }
  router_->Add(context_->device(), stream_id_, weak_from_this());
  std::promise<absl::Status> subscribed;
  std::future<absl::Status> result = subscribed.get_future();
  report_thread_ = std::thread(&Core::ReportLoop, this, &subscribed);
  status = result.get();
  if (!status.ok()) {
    report_thread_.join();
    router_->Remove(context_->device(), stream_id_);
    api_.aclrtDestroyStream(stream_);
  }
  return status;
}

void AclStream::Core::ReportLoop(std::promise<absl::Status>* subscribed) {
  report_thread_core = this;
  const auto self = static_cast<uint64_t>(pthread_self());
  absl::Status status = context_->MakeCurrent();
  if (status.ok()) {
    status = CheckVendor(api_.aclrtSubscribeReport(self, stream_), "aclrtSubscribeReport");
  }
  const bool ok = status.ok();
  subscribed->set_value(std::move(status));  // `subscribed` is gone after this
  if (!ok) return;
  while (!stop_seen_.load(std::memory_order_acquire) &&
         !stop_forced_.load(std::memory_order_acquire)) {
    const aclError code = api_.aclrtProcessReport(kReportTimeoutMs);
    if (code != ACL_SUCCESS && !IsReportTimeout(code)) absl::SleepFor(kReportRetryDelay);
  }
  api_.aclrtUnSubscribeReport(self, stream_);
}

void AclStream::Core::StopReportingLocked() {
  stop_started_ = absl::Now();
  point_cv_.SignalAll();  // a held point starts its grace period
  if (dispatcher_->OnDispatcherThread()) return;
  while (dispatching_) idle_cv_.Wait(&mu_);
}

bool AclStream::Core::AbortVendorStream() {
  const bool vendor = context_->MakeCurrent().ok();
  // The queued work is discarded while a held point still holds it back;
  // only then does the point let go (it would run the queue otherwise).
  if (vendor && api_.aclrtStreamAbort != nullptr) api_.aclrtStreamAbort(stream_);
  {
    absl::MutexLock lock(&mu_);
    points_released_ = true;
    ++point_releases_;
    point_cv_.SignalAll();
  }
  // ACL_ERROR_RT_STREAM_ABORT after an abort: expected.
  if (vendor) api_.aclrtSynchronizeStream(stream_);
  return vendor;
}

std::vector<Item> AclStream::Core::TakeAllLocked() {
  std::vector<Item> items;
  items.reserve(items_.size());
  while (!items_.empty()) items.push_back(items_.pop_front());
  return items;
}

void AclStream::Core::Drop(std::vector<Item>& items) {
  for (Item& item : items) {
    if (item.event != nullptr) item.event->OnRecordDropped(item.record);
    if (item.args_ring != nullptr) item.args_ring->Give(item.args_slice);
  }
  items.clear();
}

void AclStream::Core::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    StopReportingLocked();
  }
  std::vector<Item> dropped;
  {
    absl::MutexLock submit(&submit_mu_);
    const bool vendor = AbortVendorStream();
    // The stop callback comes after every callback still due, so the report
    // thread has run them all when it stops.
    if (!vendor || api_.aclrtLaunchCallback(&StopCallback, this, ACL_CALLBACK_NO_BLOCK, stream_) !=
                       ACL_SUCCESS) {
      stop_forced_.store(true, std::memory_order_release);
    }
    report_thread_.join();
    router_->Remove(context_->device(), stream_id_);
    if (vendor) api_.aclrtDestroyStream(stream_);
    absl::MutexLock lock(&mu_);
    dropped = TakeAllLocked();
  }
  Drop(dropped);
}

absl::Status AclStream::Core::NotSameDevice(int32_t device, const char* what) const {
  return BackendError(ACL_ERROR_RT_STREAM_CONTEXT,
                      absl::StrCat(what, " of device ", device, " used on a stream of device ",
                                   context_->device()));
}

template <typename Op>
absl::StatusOr<uint64_t> AclStream::Core::Submit(ItemKind kind, Op op) {
  absl::MutexLock submit(&submit_mu_);
  if (!broken_.ok()) return broken_;
  absl::Status status = context_->MakeCurrent();
  if (!status.ok()) return status;
  uint64_t sequence;
  {
    // Reserved before the vendor sees anything: a host-callback point may be
    // reached (and resumed) before this call returns.
    absl::MutexLock lock(&mu_);
    sequence = ++reserved_;
    Item item;
    item.sequence = sequence;
    item.kind = kind;
    items_.push_back(std::move(item));
  }
  Item filled;
  status = op(filled);
  if (status.ok()) {
    if (filled.has_task && task_ids_known_) {
      uint32_t task_id = 0;
      if (api_.aclrtGetThreadLastTaskId(&task_id) == ACL_SUCCESS) {
        filled.has_task_id = true;
        filled.task_id = task_id;
      }
    }
    bool failed_already;
    {
      // Filled in before the marker exists: the dispatcher reads it then.
      absl::MutexLock lock(&mu_);
      Item& item = items_.back();
      item.has_task = filled.has_task;
      item.has_task_id = filled.has_task_id;
      item.task_id = filled.task_id;
      item.event = filled.event;
      item.record = filled.record;
      item.args_ring = filled.args_ring;
      item.args_slice = filled.args_slice;
      failed_already = FailedLocked(item);
    }
    // Its failure arrived before its task id was known: a stopped stream
    // runs no marker, so the dispatcher must look again.
    if (failed_already) dispatcher_->Notify(shared_from_this());
    status =
        CheckVendor(api_.aclrtLaunchCallback(&MarkerCallback, this, ACL_CALLBACK_NO_BLOCK, stream_),
                    "aclrtLaunchCallback");
    if (!status.ok()) {
      // The item's work is on the device but would never be reported: wait
      // for it, so that nothing it uses is released while it runs, and fail
      // the submission.
      api_.aclrtSynchronizeStream(stream_);
      if (filled.event != nullptr) filled.event->OnRecordDropped(filled.record);
      if (filled.args_ring != nullptr) filled.args_ring->Untake(filled.args_slice);
    }
  }
  if (status.ok()) return sequence;
  Item failed;  // let go of outside the lock (an event's last reference)
  {
    absl::MutexLock lock(&mu_);
    failed = items_.pop_back();
    --reserved_;
  }
  return status;
}

absl::StatusOr<std::pair<std::shared_ptr<ArgsRing>, ArgsRing::Slice>> AclStream::Core::TakeArgs(
    uint64_t bytes) {
  if (args_ring_ != nullptr) {
    if (std::optional<ArgsRing::Slice> slice = args_ring_->Take(bytes)) {
      return std::make_pair(args_ring_, *slice);
    }
  }
  // Full (or none yet): a larger ring; the old one goes with its last slice.
  uint64_t capacity = args_ring_ != nullptr ? args_ring_->capacity() * 2 : kFirstArgsRingBytes;
  capacity = std::max(capacity, NextPowerOfTwo(bytes + 64));
  absl::StatusOr<std::shared_ptr<ArgsRing>> ring = ArgsRing::Create(context_, capacity);
  if (!ring.ok()) return ring.status();
  args_ring_ = *std::move(ring);
  std::optional<ArgsRing::Slice> slice = args_ring_->Take(bytes);
  if (!slice.has_value()) {
    return BackendError(ACL_ERROR_RT_PARAM_INVALID, "kernel arguments too large");
  }
  return std::make_pair(args_ring_, *slice);
}

absl::StatusOr<uint64_t> AclStream::Core::Copy(const Transfer& transfer) {
  absl::StatusOr<VendorCopy> copy = ToVendorCopy(transfer);
  if (!copy.ok()) return copy.status();
  return Submit(ItemKind::kCopy, [&](Item& item) {
    if (copy->count == 0) return absl::OkStatus();
    item.has_task = true;
    return CheckVendor(api_.aclrtMemcpyAsync(copy->dst, copy->dst_max, copy->src, copy->count,
                                             copy->kind, stream_),
                       "aclrtMemcpyAsync");
  });
}

absl::StatusOr<uint64_t> AclStream::Core::Fill(const DeviceSpan& dst, uint8_t value,
                                               uint64_t count) {
  return Submit(ItemKind::kFill, [&](Item& item) {
    if (count == 0) return absl::OkStatus();
    item.has_task = true;
    return CheckVendor(api_.aclrtMemsetAsync(VendorPointer(dst), BytesAfter(dst), value,
                                             static_cast<size_t>(count), stream_),
                       "aclrtMemsetAsync");
  });
}

absl::StatusOr<uint64_t> AclStream::Core::Launch(const Function& function,
                                                 const LaunchParams& params) {
  if (dynamic_cast<const AclBuiltinFunction*>(&function) != nullptr) {
    // The vendor's own built-in kernel (aclsimLaunchKernel): host arguments.
    return Submit(ItemKind::kLaunch, [&](Item& item) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      absl::Status status = CheckVendor(
          api_.aclsimLaunchKernel(function.name().c_str(), params.block_dim, params.args.data(),
                                  params.args.size(), stream_),
          "aclsimLaunchKernel");
      if (status.ok()) item.has_task = true;
      return status;
    });
  }
  const auto* kernel = dynamic_cast<const AclFunction*>(&function);
  if (kernel == nullptr) {
    return BackendError(ACL_ERROR_RT_INVALID_HANDLE,
                        absl::StrCat("kernel ", function.name(), " is not an acl kernel"));
  }
  if (kernel->device() != context_->device()) return NotSameDevice(kernel->device(), "a kernel");
  return Submit(ItemKind::kLaunch, [&](Item& item) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const uint64_t bytes = params.args.size();
    auto args = TakeArgs(bytes);
    if (!args.ok()) return args.status();
    auto& [ring, slice] = *args;
    void* device_args = ring->device(slice.offset);
    absl::Status status;
    if (bytes > 0) {
      std::memcpy(ring->host(slice.offset), params.args.data(), bytes);
      status = CheckVendor(api_.aclrtMemcpyAsync(device_args, bytes, ring->host(slice.offset),
                                                 bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
                           "aclrtMemcpyAsync (kernel arguments)");
    }
    if (status.ok()) {
      status = CheckVendor(
          api_.aclrtLaunchKernel(kernel->handle(), params.block_dim, device_args, bytes, stream_),
          "aclrtLaunchKernel");
    }
    if (!status.ok()) {
      ring->Untake(slice);
      return status;
    }
    item.has_task = true;
    item.args_ring = ring;
    item.args_slice = slice;
    return absl::OkStatus();
  });
}

absl::StatusOr<uint64_t> AclStream::Core::RecordEvent(Event& event) {
  auto* acl_event = dynamic_cast<AclEvent*>(&event);
  if (acl_event == nullptr) {
    return BackendError(ACL_ERROR_RT_INVALID_HANDLE, "the event is not an acl event");
  }
  if (acl_event->device() != context_->device()) {
    return NotSameDevice(acl_event->device(), "an event");
  }
  std::shared_ptr<AclEvent> held = acl_event->shared_from_this();
  return Submit(ItemKind::kRecord, [&](Item& item) -> absl::Status {
    absl::StatusOr<uint64_t> record = held->Record(stream_);
    if (!record.ok()) return record.status();
    item.has_task = true;
    item.event = held;
    item.record = *record;
    return absl::OkStatus();
  });
}

absl::StatusOr<uint64_t> AclStream::Core::WaitEvent(Event& event) {
  auto* acl_event = dynamic_cast<AclEvent*>(&event);
  if (acl_event == nullptr) {
    return BackendError(ACL_ERROR_RT_INVALID_HANDLE, "the event is not an acl event");
  }
  if (acl_event->device() != context_->device()) {
    return NotSameDevice(acl_event->device(), "an event");
  }
  return Submit(ItemKind::kWait, [&](Item& item) {
    // Never recorded: nothing to wait for (the vendor's behaviour on such a
    // wait is not documented).
    if (acl_event->records_submitted() == 0) return absl::OkStatus();
    item.has_task = true;
    return CheckVendor(api_.aclrtStreamWaitEvent(stream_, acl_event->vendor_event()),
                       "aclrtStreamWaitEvent");
  });
}

absl::StatusOr<uint64_t> AclStream::Core::HostCallbackPoint() {
  return Submit(ItemKind::kCallbackPoint, [&](Item& item) {
    item.has_task = true;
    return CheckVendor(api_.aclrtLaunchCallback(&PointCallback, this, ACL_CALLBACK_BLOCK, stream_),
                       "aclrtLaunchCallback");
  });
}

void AclStream::Core::OnMarker() {
  {
    absl::MutexLock lock(&mu_);
    if (ignore_markers_) return;
    ++device_done_;
  }
  dispatcher_->Notify(shared_from_this());
}

void AclStream::Core::OnPoint() {
  absl::MutexLock lock(&mu_);
  if (ignore_markers_ || points_released_) return;
  // Every marker before this point ran already (one thread, in order).
  const uint64_t sequence = device_done_ + 1;
  point_reached_ = sequence;
  point_announced_ = false;
  dispatcher_->Notify(shared_from_this());
  const uint64_t releases = point_releases_;
  while (point_resumed_ != sequence && point_releases_ == releases) {
    if (aborting_ > 0 || shut_down_) {
      // Should the vendor's abort wait for this very callback, it still
      // returns: the point lets go after a grace period.
      const absl::Time deadline = stop_started_ + kHeldPointGrace;
      if (absl::Now() >= deadline) break;
      point_cv_.WaitWithDeadline(&mu_, deadline);
    } else {
      point_cv_.Wait(&mu_);
    }
  }
  point_reached_ = 0;
}

void AclStream::Core::FenceCallback(void* generation) {
  if (report_thread_core != nullptr) {
    report_thread_core->OnFence(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(generation)));
  }
}

void AclStream::Core::OnFence(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  if (generation == fence_generation_) ignore_markers_ = false;
}

void AclStream::Core::OnTaskFailure(uint32_t task_id, int32_t acl_code) {
  {
    absl::MutexLock lock(&mu_);
    failures_.push_back(Failure{task_id, acl_code});
    if (failures_.size() > kMaxPendingFailures) failures_.erase(failures_.begin());
  }
  // The failed item may be done without its marker (FailedLocked).
  dispatcher_->Notify(shared_from_this());
}

bool AclStream::Core::FailedLocked(const Item& item) const {
  if (!task_ids_known_ || !item.has_task_id) return false;
  for (const Failure& failure : failures_) {
    if (failure.task_id == item.task_id) return true;
  }
  return false;
}

absl::Status AclStream::Core::SetStopOnFailure(bool stop) {
  absl::MutexLock submit(&submit_mu_);
  if (api_.aclrtSetStreamFailureMode == nullptr || !task_ids_known_) {
    if (!stop) return absl::OkStatus();
    return BackendError(ACL_ERROR_API_NOT_SUPPORT,
                        absl::StrCat(api_.library,
                                     " lacks aclrtSetStreamFailureMode or "
                                     "aclrtGetThreadLastTaskId: streams cannot stop on failure"));
  }
  ACL_RETURN_IF_ERROR(context_->MakeCurrent());
  return CheckVendor(api_.aclrtSetStreamFailureMode(
                         stream_, stop ? ACL_STOP_ON_FAILURE : ACL_CONTINUE_ON_FAILURE),
                     "aclrtSetStreamFailureMode");
}

absl::Status AclStream::Core::StatusOfLocked(const Item& item) {
  if (item.kind == ItemKind::kCallbackPoint) return item.point_status;
  if (failures_.empty() || !item.has_task) return absl::OkStatus();
  auto failure = failures_.begin();
  if (task_ids_known_) {
    if (!item.has_task_id) return absl::OkStatus();
    while (failure != failures_.end() && failure->task_id != item.task_id) ++failure;
    if (failure == failures_.end()) return absl::OkStatus();
  }
  const int32_t code = failure->code;
  failures_.erase(failure);
  return BackendError(code,
                      absl::StrCat("device ", context_->device(), " stream ", stream_id_, ": item ",
                                   item.sequence, " failed on the device with ", code));
}

void AclStream::Core::Dispatch() {
  absl::MutexLock lock(&mu_);
  while (aborting_ == 0 && !shut_down_) {
    if (!items_.empty() &&
        (items_.front().sequence <= device_done_ || FailedLocked(items_.front()))) {
      Item item = items_.pop_front();
      const uint64_t sequence = item.sequence;
      const absl::Status status = StatusOfLocked(item);
      dispatching_ = true;
      mu_.Unlock();
      if (item.event != nullptr) item.event->OnRecordComplete(item.record);
      if (item.args_ring != nullptr) item.args_ring->Give(item.args_slice);
      if (options_.on_complete) options_.on_complete(sequence, status);
      item = Item();  // lets go of the event and the ring outside the lock
      mu_.Lock();
      dispatching_ = false;
      idle_cv_.SignalAll();
      // An abort during the call has already counted it.
      reported_ = std::max(reported_, sequence);
      continue;
    }
    if (point_reached_ != 0 && !point_announced_ && reported_ + 1 == point_reached_) {
      point_announced_ = true;
      const uint64_t sequence = point_reached_;
      dispatching_ = true;
      mu_.Unlock();
      if (options_.on_callback_point) {
        options_.on_callback_point(sequence);
      } else {
        ResumeCallbackPoint(sequence, absl::OkStatus());
      }
      mu_.Lock();
      dispatching_ = false;
      idle_cv_.SignalAll();
      continue;
    }
    return;
  }
}

void AclStream::Core::ResumeCallbackPoint(uint64_t sequence, absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (sequence == 0 || point_reached_ != sequence) return;
  if (!items_.empty() && sequence >= items_.front().sequence &&
      sequence - items_.front().sequence < items_.size()) {
    items_.at(sequence - items_.front().sequence).point_status = std::move(status);
  }
  point_resumed_ = sequence;
  point_cv_.SignalAll();
}

void AclStream::Core::Abort() {
  {
    absl::MutexLock lock(&mu_);
    ++aborting_;
    StopReportingLocked();
  }
  std::vector<Item> dropped;
  {
    absl::MutexLock submit(&submit_mu_);
    const bool vendor = AbortVendorStream();
    uint64_t generation;
    {
      absl::MutexLock lock(&mu_);
      points_released_ = false;
      dropped = TakeAllLocked();
      reported_ = device_done_ = reserved_;
      failures_.clear();
      point_reached_ = 0;
      point_announced_ = false;
      ignore_markers_ = true;
      generation = ++fence_generation_;
    }
    if (!vendor || api_.aclrtLaunchCallback(
                       &FenceCallback, reinterpret_cast<void*>(static_cast<uintptr_t>(generation)),
                       ACL_CALLBACK_NO_BLOCK, stream_) != ACL_SUCCESS) {
      // Without its fence the stream cannot tell new markers from stale ones.
      broken_ = BackendError(ACL_ERROR_RT_STREAM_ABORT,
                             "the stream cannot take work after its abort failed");
    }
    absl::MutexLock lock(&mu_);
    --aborting_;
  }
  Drop(dropped);
}

AclStream::~AclStream() { core_->Shutdown(); }

absl::StatusOr<std::unique_ptr<AclStream>> AclStream::Create(StreamDeps deps,
                                                             StreamOptions options) {
  auto core = std::make_shared<Core>(std::move(deps), std::move(options));
  absl::Status status = core->Start();
  if (!status.ok()) return status;
  return std::unique_ptr<AclStream>(new AclStream(std::move(core)));
}

absl::StatusOr<uint64_t> AclStream::Copy(const Transfer& transfer) { return core_->Copy(transfer); }

absl::StatusOr<uint64_t> AclStream::Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) {
  return core_->Fill(dst, value, count);
}

absl::StatusOr<uint64_t> AclStream::Launch(const Function& function, LaunchParams params) {
  return core_->Launch(function, params);
}

absl::StatusOr<uint64_t> AclStream::RecordEvent(Event& event) { return core_->RecordEvent(event); }

absl::StatusOr<uint64_t> AclStream::WaitEvent(Event& event) { return core_->WaitEvent(event); }

absl::StatusOr<uint64_t> AclStream::HostCallbackPoint() { return core_->HostCallbackPoint(); }

void AclStream::ResumeCallbackPoint(uint64_t sequence, absl::Status status) {
  core_->ResumeCallbackPoint(sequence, std::move(status));
}

absl::Status AclStream::SetStopOnFailure(bool stop) { return core_->SetStopOnFailure(stop); }

void AclStream::Abort() { core_->Abort(); }

}  // namespace hal::acl
