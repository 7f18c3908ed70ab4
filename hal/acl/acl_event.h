// A vendor event (aclrtCreateEventWithFlag) as a hal::Event.
//
// The event is created with ACL_EVENT_TIME_LINE (CANN records timestamps only
// for such events) and ACL_EVENT_SYNC (without it CANN refuses
// aclrtStreamWaitEvent on the event). CANN limits such events per device
// (65536 on current parts, 1023 on some inference parts).
//
// The vendor event describes only its latest record, while the HAL numbers
// every record and waits for one (hal/event.h). So the backend keeps the
// records' ledger (hal/record_ledger.h): a record settles when its stream
// reports it or drops it, or when it is forgotten. A wait for the record the
// vendor event describes now is the vendor's own aclrtStreamWaitEvent; a wait
// for any other record (not submitted yet, or superseded by a later one) is a
// vendor notify wait that the backend releases when the record settles
// (acl_stream.h). Complete() means "every record submitted so far has run",
// across streams; when only the latest record is outstanding it asks the
// vendor (aclrtQueryEventStatus), whose status describes exactly that record.
// Timestamps come from aclrtEventGetTimestamp mapped onto the host clock
// (device_clock.h); a record that is no longer the event's latest when it is
// reported is stamped with the host clock at its report.
#ifndef ACLD_HAL_ACL_ACL_EVENT_H_
#define ACLD_HAL_ACL_ACL_EVENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/device_clock.h"
#include "hal/acl/device_context.h"
#include "hal/event.h"
#include "hal/record_ledger.h"

namespace hal::acl {

class AclEvent : public Event, public std::enable_shared_from_this<AclEvent> {
 public:
  static absl::StatusOr<std::shared_ptr<AclEvent>> Create(std::shared_ptr<DeviceContext> context,
                                                          std::shared_ptr<const DeviceClock> clock);
  ~AclEvent() override;

  std::optional<int64_t> TimestampNanos() const override;
  bool Complete() const override;
  void ForgetRecord(uint64_t record) override;
  bool Dropped(uint64_t record) const override;
  bool Settled(uint64_t record) const override;

  int32_t device() const { return context_->device(); }

  // For streams (the context is current on the calling thread).
  // aclrtRecordEvent on `stream` as record `record`.
  absl::Status Record(aclrtStream stream, uint64_t record);
  enum class WaitKind {
    kPassed,      // the record has settled: nothing to wait for
    kVendorWait,  // aclrtStreamWaitEvent on `stream` was submitted
    kRelease,     // `release` runs (once, no lock held) when the record settles
  };
  struct Waiting {
    WaitKind kind = WaitKind::kPassed;
    uint64_t release_id = 0;  // kRelease: what CancelWait takes
  };
  // How `stream` waits for `record`; see the comment at the top.
  absl::StatusOr<Waiting> Wait(aclrtStream stream, uint64_t record, std::function<void()> release);
  // The stream dropped a kRelease wait (an abort, a failed submission): its
  // `release` is forgotten now, not kept until a record that may never settle.
  // False when the record settled first: the release runs, or ran.
  bool CancelWait(uint64_t release_id);
  // kRelease waits kept now (for tests and operators).
  size_t waiting() const;
  // Record `record` ran (called in each stream's report order).
  void OnRecordComplete(uint64_t record);
  // Record `record` was dropped by an abort: it no longer keeps the event
  // incomplete, and stamps nothing.
  void OnRecordDropped(uint64_t record);

 private:
  AclEvent(std::shared_ptr<DeviceContext> context, std::shared_ptr<const DeviceClock> clock,
           aclrtEvent event)
      : context_(std::move(context)), clock_(std::move(clock)), event_(event) {}

  // Whether the vendor says the latest record ran.
  bool LatestRanLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the latest record is the only one outstanding and the vendor says it
  // ran, settles it now.
  void RefreshLocked(std::vector<RecordLedger::Wake>& woken) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The latest record's timestamp, from the vendor.
  int64_t LatestTimestampLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles `record`; `timestamp` when it ran.
  void SettleLocked(uint64_t record, std::optional<int64_t> timestamp,
                    std::vector<RecordLedger::Wake>& woken) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Settle(uint64_t record, bool ran);

  const std::shared_ptr<DeviceContext> context_;
  const std::shared_ptr<const DeviceClock> clock_;
  const aclrtEvent event_;

  mutable absl::Mutex mu_;
  mutable RecordLedger ledger_ ABSL_GUARDED_BY(mu_);
  uint64_t latest_ ABSL_GUARDED_BY(mu_) = 0;  // the record the vendor event describes
  mutable uint64_t stamped_record_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::optional<int64_t> timestamp_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_EVENT_H_
