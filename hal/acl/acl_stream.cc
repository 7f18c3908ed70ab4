#include "hal/acl/acl_stream.h"

#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
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

// A stream's first kernel argument ring: the core keeps at most 64 of a
// session's tasks on an acl device (AclDevice::tasks_per_session), so it
// holds the arguments of all of them up to 128 bytes each. Larger blocks
// grow the ring; a grown ring is kept while idle only within the device's
// IdleBudgets::ring_bytes (ShrinkArgsRing).
constexpr uint64_t kFirstArgsRingBytes = uint64_t{8} << 10;
// Notifies a stream keeps for reuse (within the device's
// IdleBudgets::notifies): more are destroyed when their wait passed.
constexpr size_t kMaxPooledNotifies = 4;
// Failures no item has claimed yet (task ids unknown; or arrived while a
// submission read its task id) are forgotten beyond this many.
constexpr size_t kMaxUnclaimedFailures = 64;

enum class ItemKind : uint8_t {
  kCopy,
  kFill,
  kReduce,
  kRandom,
  kWaitValue,
  kLaunch,
  kRecord,
  kWait,
  kCallbackPoint
};

// What a stream's vendor callbacks tell it (ReportThread signals).
enum Signal : uint8_t {
  kMarker = 1,  // the item before it ran
  kPoint = 2,   // a host-callback point was reached
  kFence = 3,   // an abort's fence (value: its generation)
};

// A submitted item until it is reported or dropped.
struct Item {
  uint64_t sequence = 0;
  ItemKind kind = ItemKind::kCopy;
  bool has_task = false;  // vendor work was enqueued (not a no-op)
  // The vendor's ids of the item's tasks (aclrtGetThreadLastTaskId): its
  // last task's, and a launch's argument copy's. A failure names one.
  std::optional<uint32_t> task_id;
  std::optional<uint32_t> args_copy_task_id;
  // The vendor's code for a failed task of the item (the first one).
  std::optional<int32_t> failure;
  // That failure makes the item done before its marker ran: it was the
  // item's last task's (a stream stopped there never runs the marker), or
  // the stream stops on failure (nothing after the failed task runs). A
  // failure of an earlier task (a launch's argument copy) on a stream that
  // goes on leaves the kernel queued: the item waits for its marker, and
  // keeps what the kernel uses until then.
  bool done_by_failure = false;
  std::shared_ptr<AclEvent> event;  // kRecord
  uint64_t record = 0;
  std::shared_ptr<ArgsRing> args_ring;  // kLaunch
  ArgsRing::Slice args_slice;
  // Rings of launches that failed after their argument copy was queued:
  // kept until this item, submitted after them, ran or was dropped.
  std::vector<std::shared_ptr<ArgsRing>> rings_under_copies;
  // kLaunch: the launch's pins (LaunchParams::memory). The kernel reaches
  // device memory by address until the vendor ran it: freed before that,
  // the vendor could hand the address to another process's allocation.
  std::shared_ptr<MemoryResolver> memory;
  aclrtNotify notify = nullptr;  // kCallbackPoint, kWait held by a notify: what releases it
  // kWait held by a notify: the event whose record releases it, and that
  // release's id there (cancelled when the item is dropped).
  std::shared_ptr<AclEvent> waited;
  uint64_t release_id = 0;
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
                              public ReportThread::Listener,
                              public std::enable_shared_from_this<Core> {
 public:
  Core(StreamDeps deps, StreamOptions options)
      : context_(std::move(deps.context)),
        api_(context_->api()),
        dispatcher_(std::move(deps.dispatcher)),
        router_(std::move(deps.router)),
        reports_(std::move(deps.reports)),
        idle_budgets_(std::move(deps.idle_budgets)),
        options_(std::move(options)),
        task_ids_known_(api_.aclrtGetThreadLastTaskId != nullptr) {}

  absl::Status Start();
  void Shutdown();

  absl::StatusOr<uint64_t> Copy(const Transfer& transfer);
  absl::StatusOr<uint64_t> Fill(const DeviceSpan& dst, uint8_t value, uint64_t count);
  absl::StatusOr<uint64_t> Reduce(const Reduction& reduction);
  absl::StatusOr<uint64_t> GenerateRandom(const RandomNumbers& task);
  absl::StatusOr<uint64_t> WaitValue(const DeviceSpan& address, uint64_t value, uint32_t flag);
  absl::StatusOr<uint64_t> Launch(const Function& function, const LaunchParams& params);
  absl::StatusOr<uint64_t> RecordEvent(Event& event, uint64_t record);
  absl::StatusOr<uint64_t> WaitEvent(Event& event, uint64_t record, bool fail_if_dropped);
  absl::StatusOr<uint64_t> HostCallbackPoint();
  void ResumeCallbackPoint(uint64_t sequence, absl::Status status);
  absl::Status SetStopOnFailure(bool stop);
  bool can_stop_on_failure() const {
    return api_.aclrtSetStreamFailureMode != nullptr && task_ids_known_;
  }
  absl::Status StopTask(uint64_t sequence);
  bool can_stop_tasks() const { return api_.aclrtStreamStop != nullptr; }
  // False when the vendor could not be reached (Quarantine); `in_use` is
  // then kept with the items.
  bool Abort(std::shared_ptr<void> in_use);

  void Dispatch() override;
  void OnTaskFailure(uint32_t task_id, int32_t acl_code) override;
  // The stream's vendor callbacks (on the device's report thread).
  void OnReport(uint8_t signal, uint32_t value) override;

 private:
  void OnMarker();
  void OnPoint();
  void OnFence(uint32_t generation);
  // A notify for a wait the host releases (from the pool, or a new one), and
  // the pool's generation it belongs to.
  absl::StatusOr<std::pair<aclrtNotify, uint64_t>> TakeNotify()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  // A notify whose wait passed (so it is reset) goes back to the pool, or
  // is destroyed when the stream's or the device's pool is full.
  void ReturnNotify(aclrtNotify notify);
  // A notify in use (taken, not yet returned or destroyed) is charged to the
  // stream's owner (options_.charge_notify); these give its charge back.
  // Kept ones are not charged: the device's idle budget bounds them, and a
  // tenant's idle streams would otherwise hold its share.
  void Uncharge(aclrtNotify notify);
  void DestroyNotify(aclrtNotify notify);
  // A notify no wait will reset: destroyed, or kept in stray_notifies_ while
  // `release_pending` (its event's release may still record it).
  void DiscardNotify(aclrtNotify notify, bool release_pending);
  // Records `notify` (on the report thread's control stream) unless an abort
  // retired the notifies of `generation` meanwhile.
  void ReleaseNotify(aclrtNotify notify, uint64_t generation);
  // After the vendor discarded the queued waits: the notifies of unreported
  // items may hold a stray record, so they are destroyed, not reused (only
  // uncharged when the vendor could not be reached: a wait may still hold
  // one).
  void RetireNotifiesLocked(bool vendor) ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);

  // Runs `op` (the item's vendor calls, which fill in the item) and enqueues
  // the completion marker; the item's sequence number.
  template <typename Op>
  absl::StatusOr<uint64_t> Submit(ItemKind kind, Op op);
  // Gives the vendor stream `limits` (aclrtSetStreamResLimit) unless it has
  // them already: they hold for the launches after it.
  absl::Status ApplyCoreLimitsLocked(const CoreLimits& limits)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  // A slice of the kernel argument ring for `bytes`.
  absl::StatusOr<std::pair<std::shared_ptr<ArgsRing>, ArgsRing::Slice>> TakeArgs(uint64_t bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  // Hands back the slice of a launch that was reported or dropped; a grown
  // ring then idle may go (ShrinkArgsRing). A launch that failed to submit
  // only untakes its slice (ArgsRing::Untake): its argument copy may still
  // be queued, so its ring must stay.
  void GiveArgs(const std::shared_ptr<ArgsRing>& ring, const ArgsRing::Slice& slice);
  // A grown ring that no launch uses stops being the stream's (it goes with
  // its last holder) unless it is within the device's idle budget: what a
  // burst of large argument blocks grew is not kept, nor charged, for the
  // stream's whole life.
  void ShrinkArgsRing(const std::shared_ptr<ArgsRing>& ring) ABSL_LOCKS_EXCLUDED(args_mu_);
  // Makes `ring` the stream's; the ring it replaces, to be let go of outside
  // args_mu_.
  std::shared_ptr<ArgsRing> ReplaceArgsRingLocked(std::shared_ptr<ArgsRing> ring)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(args_mu_);
  absl::Status StatusOfLocked(const Item& item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The unreported item a failure of task `task_id` belongs to: the one of
  // that task id, else (`or_unknown`) the oldest whose task id is unknown
  // (the vendor did not tell it).
  // Null for a task of no item (one the vendor ran for itself, or of work
  // an abort discarded). A failure is never kept for a later item: task ids
  // come round again, and a stale failure would report a later item of the
  // same id done before it ran, letting go of what the device still uses.
  Item* ItemOfFailureLocked(uint32_t task_id, bool or_unknown) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The failures that arrived while the item at the back was being
  // submitted go to their items now that its task ids are known.
  void ClaimFailuresLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `item`'s task `task_id` failed with `code`.
  void RecordFailureLocked(Item& item, uint32_t task_id, int32_t code)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops reports (abort or shutdown) and waits for a listener call in
  // progress, unless the caller is that listener.
  void StopReportingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The vendor side of an abort or shutdown: discards the queued work
  // (aclrtStreamAbort) with a held host-callback point's wait, waits for the
  // rest, and retires the points' notify (a record may be left in it). False
  // when the vendor could not be reached (the device is gone, or setting its
  // context failed twice).
  bool AbortVendorStream() ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_);
  // Hands back what unreported items hold; `items` in submission order.
  void Drop(std::vector<Item>& items);
  // After an abort that could not reach the vendor of a device still up: the
  // device may still run the items, so what it may read or write (their
  // memory, argument slices and rings, and `rings_under_copies`) is kept
  // with the device's context until its reset (DeviceContext::
  // HoldUntilDestroyed), never handed back to be reused by another session.
  // Their events and waits learn that they are gone, as in Drop.
  void Quarantine(std::vector<Item>& items,
                  std::vector<std::shared_ptr<ArgsRing>> rings_under_copies);
  // What Drop and Quarantine both tell of `item`: its record will not happen,
  // its wait is no longer released.
  static void ForgetRecordAndWait(Item& item);
  std::vector<Item> TakeAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where item `sequence` is in items_; nullopt when it is not there
  // (reported already, or never reserved).
  std::optional<size_t> IndexLocked(uint64_t sequence) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NotSameDevice(int32_t device, const char* what) const;
  // The id of the task the calling thread enqueued last; nullopt when the
  // vendor does not tell (no aclrtGetThreadLastTaskId, or it failed).
  std::optional<uint32_t> LastTaskId() const;
  absl::StatusOr<std::shared_ptr<AclEvent>> EventOfThisDevice(Event& event) const;

  const std::shared_ptr<DeviceContext> context_;
  const VendorApi& api_;
  const std::shared_ptr<CompletionDispatcher> dispatcher_;
  const std::shared_ptr<ExceptionRouter> router_;
  const std::shared_ptr<ReportThread> reports_;
  const std::shared_ptr<IdleBudgets> idle_budgets_;
  const StreamOptions options_;
  const bool task_ids_known_;
  aclrtStream stream_ = nullptr;  // set by Start
  int32_t stream_id_ = -1;        // set by Start
  uint32_t report_token_ = 0;     // set by Start

  // Serializes submissions (an item's vendor calls and its marker must not
  // interleave with another item's) and the vendor side of Abort.
  absl::Mutex submit_mu_ ABSL_ACQUIRED_BEFORE(notify_mu_);
  CoreLimits applied_limits_ ABSL_GUARDED_BY(submit_mu_);  // what the vendor stream has
  absl::Status broken_ ABSL_GUARDED_BY(submit_mu_);
  // The ring launches take slices of. Its own lock, held for no vendor
  // call: reports shrink it without the submission lock.
  absl::Mutex args_mu_;
  std::shared_ptr<ArgsRing> args_ring_ ABSL_GUARDED_BY(args_mu_);
  // args_ring_ is grown and counted in idle_budgets_->ring_bytes: kept when idle.
  bool args_ring_budgeted_ ABSL_GUARDED_BY(args_mu_) = false;
  // Rings of failed launches whose argument copy may still be queued (the
  // copy into the ring's device half, from its pinned host half): kept
  // until an item submitted after them ran or was dropped, or the stream
  // synchronized at its end, so that no ring is freed under its copy.
  std::vector<std::shared_ptr<ArgsRing>> rings_under_copies_ ABSL_GUARDED_BY(submit_mu_);

  // Notifies for waits the host releases (host-callback points, event waits
  // the vendor event cannot express). Never held by a submission across a
  // vendor call that may block: a resume must get it while a submission
  // waits in the vendor for room.
  absl::Mutex notify_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<aclrtNotify> free_notifies_ ABSL_GUARDED_BY(notify_mu_);
  // Grows when an abort retires the notifies in use: a late release of one
  // of them is ignored.
  uint64_t notify_generation_ ABSL_GUARDED_BY(notify_mu_) = 0;
  // Notifies of waits that never reached the vendor (a refused wait, a failed
  // submission) whose event's release may still record them: destroyed when
  // the next abort makes such releases ignored, never reused.
  std::vector<aclrtNotify> stray_notifies_ ABSL_GUARDED_BY(notify_mu_);
  // The owner's charge of each notify in use (in flight or stray); a leaf
  // lock, never held while a charge is given back.
  absl::Mutex charges_mu_;
  std::map<aclrtNotify, std::shared_ptr<void>> notify_charges_ ABSL_GUARDED_BY(charges_mu_);

  absl::Mutex mu_;
  absl::CondVar idle_cv_;   // dispatching_
  hal::RingQueue<Item> items_ ABSL_GUARDED_BY(mu_);     // reserved, not yet reported
  uint64_t reserved_ ABSL_GUARDED_BY(mu_) = 0;     // last sequence handed out
  uint64_t device_done_ ABSL_GUARDED_BY(mu_) = 0;  // markers counted
  uint64_t reported_ ABSL_GUARDED_BY(mu_) = 0;     // reported or dropped
  bool dispatching_ ABSL_GUARDED_BY(mu_) = false;  // a listener call is running
  int aborting_ ABSL_GUARDED_BY(mu_) = 0;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // After an abort: markers are stale until the latest fence ran.
  bool ignore_markers_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t fence_generation_ ABSL_GUARDED_BY(mu_) = 0;  // < ReportThread::kMaxValue
  // The host-callback point the device holds at (0: none) and whether the
  // listener heard of it.
  uint64_t point_reached_ ABSL_GUARDED_BY(mu_) = 0;
  bool point_announced_ ABSL_GUARDED_BY(mu_) = false;
  // An item is reserved and its vendor calls are under way (Submit).
  bool submitting_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_on_failure_ ABSL_GUARDED_BY(mu_) = false;  // the vendor stream's mode
  struct Failure {
    uint32_t task_id;
    int32_t code;
  };
  // Failures no item has claimed yet: with task ids, those that arrived
  // during a submission (claimed when it ends); without, every failure, for
  // the next item reported.
  std::vector<Failure> unclaimed_failures_ ABSL_GUARDED_BY(mu_);
};

absl::Status AclStream::Core::Start() {
  ACL_RETURN_IF_ERROR(context_->MakeCurrent());
  ACL_RETURN_IF_ERROR(CheckVendor(api_.aclrtCreateStream(&stream_), "aclrtCreateStream"));
  absl::Status status = CheckVendor(api_.aclrtStreamGetId(stream_, &stream_id_), "aclrtStreamGetId");
  if (status.ok()) {
    absl::StatusOr<uint32_t> token = reports_->Subscribe(stream_, weak_from_this());
    if (token.ok()) report_token_ = *token;
    status = token.status();
  }
  if (!status.ok()) {
    api_.aclrtDestroyStream(stream_);
    return status;
  }
  router_->Add(context_->device(), stream_id_, weak_from_this());
  return absl::OkStatus();
}

void AclStream::Core::OnReport(uint8_t signal, uint32_t value) {
  switch (signal) {
    case kMarker:
      return OnMarker();
    case kPoint:
      return OnPoint();
    case kFence:
      return OnFence(value);
    default:
      return;
  }
}

void AclStream::Core::StopReportingLocked() {
  if (dispatcher_->OnDispatcherThread()) return;
  while (dispatching_) idle_cv_.Wait(&mu_);
}

bool AclStream::Core::AbortVendorStream() {
  // A vendor that refused once may not refuse again; without it, the work
  // queued may still run, and must keep what it uses (Quarantine).
  const bool vendor = context_->MakeCurrent().ok() || context_->MakeCurrent().ok();
  // A held point's wait is discarded with the rest of the queue.
  if (vendor && api_.aclrtStreamAbort != nullptr) api_.aclrtStreamAbort(stream_);
  // ACL_ERROR_RT_STREAM_ABORT after an abort: expected.
  if (vendor) api_.aclrtSynchronizeStream(stream_);
  RetireNotifiesLocked(vendor);
  return vendor;
}

void AclStream::Core::RetireNotifiesLocked(bool vendor) {
  std::vector<aclrtNotify> retired;
  {
    absl::MutexLock notify_lock(&notify_mu_);
    ++notify_generation_;
    retired.swap(stray_notifies_);
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < items_.size(); ++i) {
      Item& item = items_.at(i);
      if (item.notify != nullptr) retired.push_back(std::exchange(item.notify, nullptr));
    }
    point_reached_ = 0;
    point_announced_ = false;
  }
  for (aclrtNotify notify : retired) {
    if (vendor) {
      DestroyNotify(notify);
    } else {
      Uncharge(notify);  // left to the device's reset: a wait may hold it still
    }
  }
}

void AclStream::Core::Uncharge(aclrtNotify notify) {
  std::shared_ptr<void> charge;  // given back after the lock
  absl::MutexLock lock(&charges_mu_);
  auto it = notify_charges_.find(notify);
  if (it == notify_charges_.end()) return;
  charge = std::move(it->second);
  notify_charges_.erase(it);
}

void AclStream::Core::DestroyNotify(aclrtNotify notify) {
  // Uncharged first: once destroyed, the vendor may hand the same handle to
  // another stream's new notify.
  Uncharge(notify);
  api_.aclrtDestroyNotify(notify);
}

absl::StatusOr<std::pair<aclrtNotify, uint64_t>> AclStream::Core::TakeNotify() {
  if (api_.aclrtCreateNotify == nullptr || api_.aclrtDestroyNotify == nullptr ||
      api_.aclrtRecordNotify == nullptr || api_.aclrtWaitAndResetNotify == nullptr ||
      api_.aclrtStreamAbort == nullptr) {
    return BackendError(ACL_ERROR_API_NOT_SUPPORT,
                        absl::StrCat(api_.library,
                                     " lacks aclrtCreateNotify, aclrtRecordNotify, "
                                     "aclrtWaitAndResetNotify or aclrtStreamAbort: a stream "
                                     "cannot hold for the host"));
  }
  std::shared_ptr<void> charge;
  if (options_.charge_notify) {
    ACL_ASSIGN_OR_RETURN(charge, options_.charge_notify());
  }
  absl::MutexLock notify_lock(&notify_mu_);
  aclrtNotify notify = nullptr;
  if (!free_notifies_.empty()) {
    notify = free_notifies_.back();
    free_notifies_.pop_back();
    idle_budgets_->notifies.Give(1);
  } else {
    ACL_RETURN_IF_ERROR(CheckVendor(api_.aclrtCreateNotify(&notify, 0), "aclrtCreateNotify"));
  }
  absl::MutexLock lock(&charges_mu_);
  notify_charges_[notify] = std::move(charge);
  return std::make_pair(notify, notify_generation_);
}

void AclStream::Core::ReturnNotify(aclrtNotify notify) {
  Uncharge(notify);  // a kept notify counts against the device's idle budget instead
  {
    absl::MutexLock notify_lock(&notify_mu_);
    if (free_notifies_.size() < kMaxPooledNotifies && idle_budgets_->notifies.TryTake(1)) {
      free_notifies_.push_back(notify);
      return;
    }
  }
  if (context_->MakeCurrent().ok()) DestroyNotify(notify);
}

void AclStream::Core::DiscardNotify(aclrtNotify notify, bool release_pending) {
  if (release_pending) {
    absl::MutexLock notify_lock(&notify_mu_);
    stray_notifies_.push_back(notify);
    return;
  }
  DestroyNotify(notify);
}

void AclStream::Core::ReleaseNotify(aclrtNotify notify, uint64_t generation) {
  absl::MutexLock notify_lock(&notify_mu_);
  if (generation != notify_generation_ || !context_->MakeCurrent().ok()) return;
  // Fails only with a broken vendor; the wait then holds until an abort.
  reports_->RecordNotify(notify).IgnoreError();
}

std::optional<size_t> AclStream::Core::IndexLocked(uint64_t sequence) const {
  if (items_.empty() || sequence < items_.front().sequence ||
      sequence - items_.front().sequence >= items_.size()) {
    return std::nullopt;
  }
  return sequence - items_.front().sequence;
}

std::vector<Item> AclStream::Core::TakeAllLocked() {
  std::vector<Item> items;
  items.reserve(items_.size());
  while (!items_.empty()) items.push_back(items_.pop_front());
  return items;
}

void AclStream::Core::ForgetRecordAndWait(Item& item) {
  if (item.event != nullptr) item.event->OnRecordDropped(item.record);
  if (item.waited != nullptr) item.waited->CancelWait(item.release_id);
}

void AclStream::Core::Drop(std::vector<Item>& items) {
  for (Item& item : items) {
    ForgetRecordAndWait(item);
    if (item.args_ring != nullptr) GiveArgs(item.args_ring, item.args_slice);
  }
  items.clear();
}

void AclStream::Core::Quarantine(std::vector<Item>& items,
                                 std::vector<std::shared_ptr<ArgsRing>> rings_under_copies) {
  struct Kept {
    std::vector<Item> items;
    std::vector<std::shared_ptr<ArgsRing>> rings;
  };
  // Nothing to keep adds nothing: a broken stream's owner may abort it
  // again and again, and the context's list would grow with every call.
  if (items.empty() && rings_under_copies.empty()) return;
  for (Item& item : items) ForgetRecordAndWait(item);
  context_->HoldUntilDestroyed(
      std::make_shared<Kept>(Kept{std::move(items), std::move(rings_under_copies)}));
  items.clear();
}

void AclStream::Core::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    StopReportingLocked();
  }
  std::vector<Item> dropped;
  // The abort synchronized (or the device is reset): free to go.
  std::vector<std::shared_ptr<ArgsRing>> under_copies;
  bool unreachable;  // the device is up, and may still run the dropped items
  {
    absl::MutexLock submit(&submit_mu_);
    const bool vendor = AbortVendorStream();
    unreachable = !vendor && context_->alive();
    under_copies.swap(rings_under_copies_);
    // Callbacks of this stream still due find no listener from now on.
    reports_->Unsubscribe(stream_, report_token_);
    router_->Remove(context_->device(), stream_id_);
    if (vendor) api_.aclrtDestroyStream(stream_);
    std::vector<aclrtNotify> pool;
    {
      absl::MutexLock notify_lock(&notify_mu_);
      pool.swap(free_notifies_);
      idle_budgets_->notifies.Give(pool.size());
    }
    if (vendor) {
      for (aclrtNotify notify : pool) DestroyNotify(notify);
    }
    absl::MutexLock lock(&mu_);
    dropped = TakeAllLocked();
  }
  if (unreachable) {
    Quarantine(dropped, std::move(under_copies));
  } else {
    Drop(dropped);
  }
  std::shared_ptr<ArgsRing> ring;  // freed (and uncharged) now, not with the last reference
  {
    absl::MutexLock lock(&args_mu_);
    ring = ReplaceArgsRingLocked(nullptr);
  }
}

absl::Status AclStream::Core::NotSameDevice(int32_t device, const char* what) const {
  return BackendError(ACL_ERROR_RT_STREAM_CONTEXT,
                      absl::StrCat(what, " of device ", device, " used on a stream of device ",
                                   context_->device()));
}

std::optional<uint32_t> AclStream::Core::LastTaskId() const {
  uint32_t task_id = 0;
  if (!task_ids_known_ || api_.aclrtGetThreadLastTaskId(&task_id) != ACL_SUCCESS) {
    return std::nullopt;
  }
  return task_id;
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
    submitting_ = true;
    Item item;
    item.sequence = sequence;
    item.kind = kind;
    items_.push_back(std::move(item));
  }
  Item filled;
  Item taken_back;  // a failed submission's item, let go of outside the lock
  status = op(filled);
  if (status.ok()) {
    if (filled.has_task) filled.task_id = LastTaskId();
    bool failed_already;
    {
      // Filled in before the marker exists: the dispatcher reads it then.
      absl::MutexLock lock(&mu_);
      Item& item = items_.back();
      item.has_task = filled.has_task;
      item.task_id = filled.task_id;
      item.args_copy_task_id = filled.args_copy_task_id;
      item.event = filled.event;
      item.record = filled.record;
      item.waited = filled.waited;
      item.release_id = filled.release_id;
      item.args_ring = filled.args_ring;
      item.args_slice = filled.args_slice;
      item.rings_under_copies = std::move(rings_under_copies_);
      rings_under_copies_.clear();
      item.memory = std::move(filled.memory);
      if (filled.notify != nullptr) item.notify = filled.notify;
      ClaimFailuresLocked();
      failed_already = item.done_by_failure;
    }
    // Its failure arrived before its task id was known: a stopped stream
    // runs no marker, so the dispatcher must look again.
    if (failed_already) dispatcher_->Notify(shared_from_this());
    status = reports_->Launch(stream_, report_token_, kMarker, 0);
    if (!status.ok()) {
      {
        // Taken back before the dispatcher can report it; one it reported
        // already (its failure made it done) has nothing left to undo.
        absl::MutexLock lock(&mu_);
        if (items_.empty() || items_.back().sequence != sequence) return sequence;
        taken_back = items_.pop_back();
        --reserved_;
      }
      // The item's work is on the device but would never be reported: wait
      // for it, so that nothing it uses is released while it runs, and fail
      // the submission.
      // A notify wait of it is let go first (the host was to release it),
      // and its event forgets the release unless it is under way.
      const bool release_pending =
          filled.waited != nullptr && !filled.waited->CancelWait(filled.release_id);
      if (filled.notify != nullptr) reports_->RecordNotify(filled.notify).IgnoreError();
      api_.aclrtSynchronizeStream(stream_);
      // It may hold a stray record now: not reused.
      if (filled.notify != nullptr) DiscardNotify(filled.notify, release_pending);
      if (filled.event != nullptr) filled.event->OnRecordDropped(filled.record);
      if (filled.args_ring != nullptr) filled.args_ring->Untake(filled.args_slice);
    }
  }
  if (status.ok()) return sequence;
  {
    absl::MutexLock lock(&mu_);
    if (taken_back.sequence == 0) {
      taken_back = items_.pop_back();
      --reserved_;
    }
    ClaimFailuresLocked();  // a failure of its argument copy has no item left
  }
  return status;
}

absl::StatusOr<std::pair<std::shared_ptr<ArgsRing>, ArgsRing::Slice>> AclStream::Core::TakeArgs(
    uint64_t bytes) {
  uint64_t capacity = kFirstArgsRingBytes;
  {
    absl::MutexLock lock(&args_mu_);
    if (args_ring_ != nullptr) {
      if (std::optional<ArgsRing::Slice> slice = args_ring_->Take(bytes)) {
        return std::make_pair(args_ring_, *slice);
      }
      capacity = args_ring_->capacity() * 2;
    }
  }
  // Full (or none yet): a larger ring, made outside args_mu_ (vendor calls;
  // submit_mu_ keeps other launches out); the old one goes with its last
  // slice.
  capacity = std::max(capacity, NextPowerOfTwo(bytes + 64));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<ArgsRing> ring,
                       ArgsRing::Create(context_, capacity, options_.charge_memory));
  std::optional<ArgsRing::Slice> slice = ring->Take(bytes);
  if (!slice.has_value()) {
    return BackendError(ACL_ERROR_RT_PARAM_INVALID, "kernel arguments too large");
  }
  std::shared_ptr<ArgsRing> replaced;  // goes outside args_mu_ (vendor frees)
  {
    absl::MutexLock lock(&args_mu_);
    replaced = ReplaceArgsRingLocked(ring);
  }
  return std::make_pair(std::move(ring), *slice);
}

std::shared_ptr<ArgsRing> AclStream::Core::ReplaceArgsRingLocked(std::shared_ptr<ArgsRing> ring) {
  if (args_ring_budgeted_) idle_budgets_->ring_bytes.Give(args_ring_->capacity());
  args_ring_budgeted_ = ring != nullptr && ring->capacity() > kFirstArgsRingBytes &&
                        idle_budgets_->ring_bytes.TryTake(ring->capacity());
  return std::exchange(args_ring_, std::move(ring));
}

void AclStream::Core::GiveArgs(const std::shared_ptr<ArgsRing>& ring,
                               const ArgsRing::Slice& slice) {
  ring->Give(slice);
  ShrinkArgsRing(ring);
}

void AclStream::Core::ShrinkArgsRing(const std::shared_ptr<ArgsRing>& ring) {
  if (ring->capacity() <= kFirstArgsRingBytes) return;
  std::shared_ptr<ArgsRing> idle;  // the caller's reference outlives the lock
  absl::MutexLock lock(&args_mu_);
  // A Take happens under args_mu_: idle now means no launch holds a slice.
  if (args_ring_ == ring && !args_ring_budgeted_ && ring->idle()) {
    idle = ReplaceArgsRingLocked(nullptr);
  }
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

absl::StatusOr<uint64_t> AclStream::Core::Reduce(const Reduction& reduction) {
  if (api_.aclrtReduceAsync == nullptr) {
    return BackendError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        "the vendor runtime has no aclrtReduceAsync");
  }
  return Submit(ItemKind::kReduce, [&](Item& item) {
    if (reduction.count == 0) return absl::OkStatus();
    item.has_task = true;
    return CheckVendor(
        api_.aclrtReduceAsync(VendorPointer(reduction.dst), VendorPointer(reduction.src),
                              reduction.count, static_cast<aclrtReduceKind>(reduction.kind),
                              static_cast<aclDataType>(reduction.data_type), stream_, nullptr),
        "aclrtReduceAsync");
  });
}

namespace {

// A task input as CANN's aclrtRandomParaInfo: the value's bytes, or the
// vendor's address of the device memory holding it.
aclrtRandomParaInfo VendorRandomParameter(const RandomParameter& parameter) {
  aclrtRandomParaInfo info{};
  info.size = parameter.size;
  uint64_t bits = parameter.value;
  if (parameter.at.has_value()) {
    info.isAddr = 1;
    bits = reinterpret_cast<uintptr_t>(VendorPointer(*parameter.at));
  }
  std::memcpy(info.valueOrAddr, &bits, sizeof(info.valueOrAddr));
  return info;
}

}  // namespace

absl::StatusOr<uint64_t> AclStream::Core::GenerateRandom(const RandomNumbers& task) {
  if (api_.aclrtRandomNumAsync == nullptr) {
    return BackendError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        "the vendor runtime has no aclrtRandomNumAsync");
  }
  aclrtRandomNumTaskInfo info{};
  info.dataType = static_cast<aclDataType>(task.data_type);
  info.randomNumFuncParaInfo.funcType = static_cast<aclrtRandomNumFuncType>(task.function);
  if (task.function == ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK) {
    info.randomNumFuncParaInfo.paramInfo.dropoutBitmaskInfo.dropoutRation =
        VendorRandomParameter(task.first);
  } else {
    // uniformDisInfo and normalDisInfo share one layout: two parameters.
    info.randomNumFuncParaInfo.paramInfo.normalDisInfo.mean = VendorRandomParameter(task.first);
    info.randomNumFuncParaInfo.paramInfo.normalDisInfo.stddev = VendorRandomParameter(task.second);
  }
  info.randomResultAddr = VendorPointer(task.result);
  info.randomCounterAddr = VendorPointer(task.counter);
  info.randomSeed = VendorRandomParameter(task.seed);
  info.randomNum = VendorRandomParameter(task.count);
  return Submit(ItemKind::kRandom, [&](Item& item) {
    item.has_task = true;
    return CheckVendor(api_.aclrtRandomNumAsync(&info, stream_, nullptr), "aclrtRandomNumAsync");
  });
}

absl::StatusOr<uint64_t> AclStream::Core::WaitValue(const DeviceSpan& address, uint64_t value,
                                                    uint32_t flag) {
  if (api_.aclrtValueWait == nullptr) {
    return BackendError(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "the vendor runtime has no aclrtValueWait");
  }
  // A wait on a value nothing writes holds the stream for good: without a
  // way to discard it, the session's end would wait on it forever (and hold
  // the thread ending it).
  if (api_.aclrtStreamAbort == nullptr) {
    return BackendError(ACL_ERROR_API_NOT_SUPPORT,
                        absl::StrCat(api_.library, " lacks aclrtStreamAbort: a stream waiting on "
                                                   "a value could not be ended"));
  }
  return Submit(ItemKind::kWaitValue, [&](Item& item) {
    item.has_task = true;
    return CheckVendor(api_.aclrtValueWait(VendorPointer(address), value, flag, stream_),
                       "aclrtValueWait");
  });
}

absl::Status AclStream::Core::ApplyCoreLimitsLocked(const CoreLimits& limits) {
  if (limits.cube == applied_limits_.cube && limits.vector == applied_limits_.vector) {
    return absl::OkStatus();
  }
  if (api_.aclrtSetStreamResLimit == nullptr || api_.aclrtResetStreamResLimit == nullptr) {
    return BackendError(ACL_ERROR_API_NOT_SUPPORT,
                        absl::StrCat(api_.library,
                                     " lacks aclrtSetStreamResLimit: a kernel cannot be "
                                     "confined to fewer cores"));
  }
  // Back to the device's counts, then each limit that is set.
  ACL_RETURN_IF_ERROR(
      CheckVendor(api_.aclrtResetStreamResLimit(stream_), "aclrtResetStreamResLimit"));
  applied_limits_ = CoreLimits{};
  for (const auto& [type, value] : {std::pair{ACL_RT_DEV_RES_CUBE_CORE, limits.cube},
                                    std::pair{ACL_RT_DEV_RES_VECTOR_CORE, limits.vector}}) {
    if (value == 0) continue;
    ACL_RETURN_IF_ERROR(CheckVendor(api_.aclrtSetStreamResLimit(stream_, type, value),
                                    "aclrtSetStreamResLimit"));
  }
  applied_limits_ = limits;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> AclStream::Core::Launch(const Function& function,
                                                 const LaunchParams& params) {
  if (dynamic_cast<const AclBuiltinFunction*>(&function) != nullptr) {
    // The vendor's own built-in kernel (aclsimLaunchKernel): host arguments.
    return Submit(ItemKind::kLaunch, [&](Item& item) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      ACL_RETURN_IF_ERROR(ApplyCoreLimitsLocked(params.core_limits));
      absl::Status status = CheckVendor(
          api_.aclsimLaunchKernel(function.name().c_str(), params.block_dim, params.args.data(),
                                  params.args.size(), stream_),
          "aclsimLaunchKernel");
      if (status.ok()) {
        item.has_task = true;
        item.memory = params.memory;
      }
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
    ACL_RETURN_IF_ERROR(ApplyCoreLimitsLocked(params.core_limits));
    const uint64_t bytes = params.args.size();
    auto args = TakeArgs(bytes);
    if (!args.ok()) return args.status();
    auto& [ring, slice] = *args;
    void* device_args = ring->device(slice.offset);
    absl::Status status;
    bool copy_queued = false;
    if (bytes > 0) {
      std::memcpy(ring->host(slice.offset), params.args.data(), bytes);
      status = CheckVendor(api_.aclrtMemcpyAsync(device_args, bytes, ring->host(slice.offset),
                                                 bytes, ACL_MEMCPY_HOST_TO_DEVICE, stream_),
                           "aclrtMemcpyAsync (kernel arguments)");
      copy_queued = status.ok();
      if (copy_queued) item.args_copy_task_id = LastTaskId();
    }
    if (status.ok()) {
      status = CheckVendor(
          api_.aclrtLaunchKernel(kernel->handle(), params.block_dim, device_args, bytes, stream_),
          "aclrtLaunchKernel");
    }
    if (!status.ok()) {
      // Its region may be taken again at once (a later copy into it runs
      // after this one), but the ring must outlive the copy.
      if (copy_queued &&
          (rings_under_copies_.empty() || rings_under_copies_.back() != ring)) {
        rings_under_copies_.push_back(ring);
      }
      ring->Untake(slice);
      return status;
    }
    item.has_task = true;
    item.args_ring = ring;
    item.args_slice = slice;
    item.memory = params.memory;
    return absl::OkStatus();
  });
}

absl::StatusOr<std::shared_ptr<AclEvent>> AclStream::Core::EventOfThisDevice(Event& event) const {
  auto* acl_event = dynamic_cast<AclEvent*>(&event);
  if (acl_event == nullptr) {
    return BackendError(ACL_ERROR_RT_INVALID_HANDLE, "the event is not an acl event");
  }
  if (acl_event->device() != context_->device()) {
    return NotSameDevice(acl_event->device(), "an event");
  }
  return acl_event->shared_from_this();
}

absl::StatusOr<uint64_t> AclStream::Core::RecordEvent(Event& event, uint64_t record) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<AclEvent> held, EventOfThisDevice(event));
  return Submit(ItemKind::kRecord, [&](Item& item) -> absl::Status {
    ACL_RETURN_IF_ERROR(held->Record(stream_, record));
    item.has_task = true;
    item.event = held;
    item.record = record;
    return absl::OkStatus();
  });
}

absl::StatusOr<uint64_t> AclStream::Core::WaitEvent(Event& event, uint64_t record,
                                                    bool fail_if_dropped) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<AclEvent> held, EventOfThisDevice(event));
  // Only a record dropped before the wait is submitted is told apart here: the
  // vendor's wait and the release of a later one cannot say how it settled.
  if (fail_if_dropped && held->Dropped(record)) {
    return BackendError(ACL_ERROR_RT_IPC_ERROR,
                        "the event record this stream waits for never ran: the process that "
                        "owns the event ended or aborted its stream");
  }
  return Submit(ItemKind::kWait, [&](Item& item) ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    ACL_ASSIGN_OR_RETURN(auto taken, TakeNotify());
    const auto [notify, generation] = taken;
    std::weak_ptr<Core> self = weak_from_this();
    ACL_ASSIGN_OR_RETURN(
        AclEvent::Waiting waiting,
        held->Wait(stream_, record, [self, notify = notify, generation = generation] {
          if (auto core = self.lock()) core->ReleaseNotify(notify, generation);
        }));
    if (waiting.kind != AclEvent::WaitKind::kRelease) {
      ReturnNotify(notify);
      item.has_task = waiting.kind == AclEvent::WaitKind::kVendorWait;
      return absl::OkStatus();
    }
    absl::Status status = CheckVendor(api_.aclrtWaitAndResetNotify(notify, stream_, 0),
                                      "aclrtWaitAndResetNotify");
    if (!status.ok()) {
      if (held->CancelWait(waiting.release_id)) {
        // Nothing recorded the notify nor waits on it: it is as it was.
        ReturnNotify(notify);
      } else {
        // The release records it, now or soon: a later wait must not take that.
        DiscardNotify(notify, /*release_pending=*/true);
      }
      return status;
    }
    item.waited = held;
    item.release_id = waiting.release_id;
    item.has_task = true;
    item.notify = notify;
    return absl::OkStatus();
  });
}

absl::StatusOr<uint64_t> AclStream::Core::HostCallbackPoint() {
  return Submit(ItemKind::kCallbackPoint, [&](Item& item) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    ACL_ASSIGN_OR_RETURN(auto taken, TakeNotify());
    const aclrtNotify notify = taken.first;
    {
      // Known before the point can be announced: its resume records it.
      absl::MutexLock lock(&mu_);
      items_.back().notify = notify;
    }
    item.notify = notify;
    // The point is announced when the stream reaches it; the wait then holds
    // the stream until ResumeCallbackPoint records the notify.
    absl::Status status = reports_->Launch(stream_, report_token_, kPoint, 0);
    if (status.ok()) {
      status = CheckVendor(api_.aclrtWaitAndResetNotify(notify, stream_, 0),
                           "aclrtWaitAndResetNotify");
    }
    if (!status.ok()) {
      // An announcement may be queued already: the stream cannot tell which
      // item it belongs to any more. Its notify is kept (and charged) until
      // the abort that a broken stream ends with.
      broken_ = BackendError(ACL_ERROR_RT_STREAM_ABORT,
                             "the stream cannot take work after a host-callback point failed");
      DiscardNotify(notify, /*release_pending=*/true);
      return status;
    }
    item.has_task = true;
    return absl::OkStatus();
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
  {
    absl::MutexLock lock(&mu_);
    if (ignore_markers_) return;
    // Every marker before this point ran already (one thread, in order).
    point_reached_ = device_done_ + 1;
    point_announced_ = false;
  }
  dispatcher_->Notify(shared_from_this());
}

void AclStream::Core::OnFence(uint32_t generation) {
  absl::MutexLock lock(&mu_);
  if (generation == fence_generation_) ignore_markers_ = false;
}

void AclStream::Core::OnTaskFailure(uint32_t task_id, int32_t acl_code) {
  {
    absl::MutexLock lock(&mu_);
    // During a submission, an id no item has yet may be the submitted one's.
    Item* failed =
        task_ids_known_ ? ItemOfFailureLocked(task_id, /*or_unknown=*/!submitting_) : nullptr;
    if (failed != nullptr) {
      RecordFailureLocked(*failed, task_id, acl_code);
    } else if (!task_ids_known_ || submitting_) {
      unclaimed_failures_.push_back(Failure{task_id, acl_code});
      if (unclaimed_failures_.size() > kMaxUnclaimedFailures) {
        unclaimed_failures_.erase(unclaimed_failures_.begin());
      }
    }
  }
  // The failed item may be done without its marker (Dispatch).
  dispatcher_->Notify(shared_from_this());
}

Item* AclStream::Core::ItemOfFailureLocked(uint32_t task_id, bool or_unknown) {
  Item* unknown = nullptr;
  for (size_t i = 0; i < items_.size(); ++i) {
    Item& item = items_.at(i);
    // A point's status is the host's (ResumeCallbackPoint).
    if (!item.has_task || item.kind == ItemKind::kCallbackPoint) continue;
    if (item.task_id == task_id || item.args_copy_task_id == task_id) return &item;
    if (!item.task_id.has_value() && unknown == nullptr) unknown = &item;
  }
  return or_unknown ? unknown : nullptr;
}

void AclStream::Core::RecordFailureLocked(Item& item, uint32_t task_id, int32_t code) {
  if (!item.failure.has_value()) item.failure = code;
  if (item.task_id == task_id || stop_on_failure_) item.done_by_failure = true;
}

void AclStream::Core::ClaimFailuresLocked() {
  submitting_ = false;
  if (!task_ids_known_) return;
  for (const Failure& unclaimed : unclaimed_failures_) {
    Item* failed = ItemOfFailureLocked(unclaimed.task_id, /*or_unknown=*/true);
    if (failed != nullptr) RecordFailureLocked(*failed, unclaimed.task_id, unclaimed.code);
  }
  unclaimed_failures_.clear();
}

absl::Status AclStream::Core::SetStopOnFailure(bool stop) {
  absl::MutexLock submit(&submit_mu_);
  if (!can_stop_on_failure()) {
    if (!stop) return absl::OkStatus();
    return BackendError(ACL_ERROR_API_NOT_SUPPORT,
                        absl::StrCat(api_.library,
                                     " lacks aclrtSetStreamFailureMode or "
                                     "aclrtGetThreadLastTaskId: streams cannot stop on failure"));
  }
  ACL_RETURN_IF_ERROR(context_->MakeCurrent());
  ACL_RETURN_IF_ERROR(CheckVendor(api_.aclrtSetStreamFailureMode(
                                      stream_, stop ? ACL_STOP_ON_FAILURE : ACL_CONTINUE_ON_FAILURE),
                                  "aclrtSetStreamFailureMode"));
  absl::MutexLock lock(&mu_);
  stop_on_failure_ = stop;
  return absl::OkStatus();
}

absl::Status AclStream::Core::StopTask(uint64_t sequence) {
  if (api_.aclrtStreamStop == nullptr) {
    return BackendError(ACL_ERROR_API_NOT_SUPPORT,
                        absl::StrCat(api_.library, " lacks aclrtStreamStop"));
  }
  {
    // The vendor stops whatever the stream executes. Best effort: markers
    // run without blocking the stream (report_thread.h), so the count of
    // those seen lags the device. It tells only that `sequence` has not
    // been seen done; the vendor may have finished it and be executing a
    // later item, which its stop then ends (docs/api-compat.md).
    absl::MutexLock lock(&mu_);
    const std::optional<size_t> index = IndexLocked(sequence);
    if (sequence != device_done_ + 1 || !index.has_value()) return absl::OkStatus();
    // A wait acld releases with a notify (a host-callback point, another
    // stream's event) is left alone: a stopped wait would leave its notify
    // to be recorded later, and the next wait that took it would pass. The
    // vendor may be past `sequence` already, so none may be queued after it
    // either.
    for (size_t i = *index; i < items_.size(); ++i) {
      const Item& item = items_.at(i);
      if (item.kind == ItemKind::kCallbackPoint || item.notify != nullptr) {
        return absl::OkStatus();
      }
    }
  }
  // The vendor reports the stopped task's failure as any other (through the
  // exception callback), and the item that holds it is reported so.
  ACL_RETURN_IF_ERROR(context_->MakeCurrent());
  return CheckVendor(api_.aclrtStreamStop(stream_), "aclrtStreamStop");
}

absl::Status AclStream::Core::StatusOfLocked(const Item& item) {
  if (item.kind == ItemKind::kCallbackPoint) return item.point_status;
  if (!item.has_task) return absl::OkStatus();
  std::optional<int32_t> failure = item.failure;
  if (!task_ids_known_ && !unclaimed_failures_.empty()) {
    failure = unclaimed_failures_.front().code;
    unclaimed_failures_.erase(unclaimed_failures_.begin());
  }
  if (!failure.has_value()) return absl::OkStatus();
  const int32_t code = *failure;
  return BackendError(code,
                      absl::StrCat("device ", context_->device(), " stream ", stream_id_, ": item ",
                                   item.sequence, " failed on the device with ", code));
}

void AclStream::Core::Dispatch() {
  absl::MutexLock lock(&mu_);
  while (aborting_ == 0 && !shut_down_) {
    if (!items_.empty() &&
        (items_.front().sequence <= device_done_ || items_.front().done_by_failure)) {
      Item item = items_.pop_front();
      const uint64_t sequence = item.sequence;
      const absl::Status status = StatusOfLocked(item);
      dispatching_ = true;
      mu_.Unlock();
      if (item.event != nullptr) item.event->OnRecordComplete(item.record);
      if (item.args_ring != nullptr) GiveArgs(item.args_ring, item.args_slice);
      if (item.notify != nullptr) ReturnNotify(item.notify);  // its wait passed: reset
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
  // notify_mu_ keeps an abort from retiring the notify under the record.
  absl::MutexLock notify_lock(&notify_mu_);
  aclrtNotify notify = nullptr;
  {
    absl::MutexLock lock(&mu_);
    const std::optional<size_t> index = IndexLocked(sequence);
    if (sequence == 0 || point_reached_ != sequence || !index.has_value()) return;
    Item& item = items_.at(*index);
    item.point_status = std::move(status);
    notify = item.notify;
    point_reached_ = 0;
  }
  if (notify == nullptr || !context_->MakeCurrent().ok()) return;
  // Fails only with a broken vendor; the point then holds until an abort.
  reports_->RecordNotify(notify).IgnoreError();
}

bool AclStream::Core::Abort(std::shared_ptr<void> in_use) {
  {
    absl::MutexLock lock(&mu_);
    ++aborting_;
    StopReportingLocked();
  }
  std::vector<Item> dropped;
  std::vector<std::shared_ptr<ArgsRing>> under_copies;  // synchronized (or reset): free to go
  bool unreachable;  // the device is up, and may still run the dropped items
  {
    absl::MutexLock submit(&submit_mu_);
    const bool vendor = AbortVendorStream();
    unreachable = !vendor && context_->alive();
    if (vendor || unreachable) under_copies.swap(rings_under_copies_);
    uint32_t generation;
    {
      absl::MutexLock lock(&mu_);
      dropped = TakeAllLocked();
      reported_ = device_done_ = reserved_;
      unclaimed_failures_.clear();
      ignore_markers_ = true;
      fence_generation_ = (fence_generation_ + 1) & ReportThread::kMaxValue;
      generation = fence_generation_;
    }
    if (!vendor || !reports_->Launch(stream_, report_token_, kFence, generation).ok()) {
      // Without its fence the stream cannot tell new markers from stale ones.
      broken_ = BackendError(ACL_ERROR_RT_STREAM_ABORT,
                             "the stream cannot take work after its abort failed");
    }
    absl::MutexLock lock(&mu_);
    --aborting_;
  }
  if (!unreachable) {
    Drop(dropped);
    return true;
  }
  Quarantine(dropped, std::move(under_copies));
  if (in_use != nullptr) context_->HoldUntilDestroyed(std::move(in_use));
  return false;
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

absl::StatusOr<uint64_t> AclStream::Reduce(const Reduction& reduction) {
  return core_->Reduce(reduction);
}

absl::StatusOr<uint64_t> AclStream::GenerateRandom(const RandomNumbers& task) {
  return core_->GenerateRandom(task);
}

absl::StatusOr<uint64_t> AclStream::WaitValue(const DeviceSpan& address, uint64_t value,
                                              uint32_t flag) {
  return core_->WaitValue(address, value, flag);
}

absl::StatusOr<uint64_t> AclStream::Launch(const Function& function, const LaunchParams& params) {
  return core_->Launch(function, params);
}

absl::StatusOr<uint64_t> AclStream::RecordEvent(Event& event, uint64_t record) {
  return core_->RecordEvent(event, record);
}

absl::StatusOr<uint64_t> AclStream::WaitEvent(Event& event, uint64_t record,
                                              bool fail_if_dropped) {
  return core_->WaitEvent(event, record, fail_if_dropped);
}

absl::StatusOr<uint64_t> AclStream::HostCallbackPoint() { return core_->HostCallbackPoint(); }

void AclStream::ResumeCallbackPoint(uint64_t sequence, absl::Status status) {
  core_->ResumeCallbackPoint(sequence, std::move(status));
}

absl::Status AclStream::SetStopOnFailure(bool stop) { return core_->SetStopOnFailure(stop); }

bool AclStream::can_stop_on_failure() const { return core_->can_stop_on_failure(); }

bool AclStream::can_stop_items() const { return core_->can_stop_tasks(); }

absl::Status AclStream::StopItem(uint64_t sequence, const absl::Status& why) {
  (void)why;  // the vendor gives the stopped task its own code
  return core_->StopTask(sequence);
}

void AclStream::Abort() { core_->Abort(nullptr); }

bool AclStream::AbortKeeping(std::shared_ptr<void> in_use) {
  return core_->Abort(std::move(in_use));
}

}  // namespace hal::acl
