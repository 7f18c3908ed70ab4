// A vendor event (aclrtCreateEventWithFlag) as a hal::Event.
//
// The event is created with ACL_EVENT_TIME_LINE (CANN records timestamps only
// for such events) and ACL_EVENT_SYNC (without it CANN refuses
// aclrtStreamWaitEvent on the event). CANN limits such events per device
// (65536 on current parts, 1023 on some inference parts).
//
// The backend counts the records it submitted and the ones its streams
// reported, so Complete() means "every record submitted so far has run" even
// across streams; when only the latest record is outstanding it asks the
// vendor (aclrtQueryEventStatus), whose status describes exactly that record.
// Timestamps come from aclrtEventGetTimestamp mapped onto the host clock
// (device_clock.h); a record that is no longer the event's latest when it is
// reported (the vendor event then describes a later one) is stamped with the
// host clock at its report.
#ifndef ACLD_HAL_ACL_ACL_EVENT_H_
#define ACLD_HAL_ACL_ACL_EVENT_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/device_clock.h"
#include "hal/acl/device_context.h"
#include "hal/event.h"

namespace hal::acl {

class AclEvent : public Event, public std::enable_shared_from_this<AclEvent> {
 public:
  static absl::StatusOr<std::shared_ptr<AclEvent>> Create(std::shared_ptr<DeviceContext> context,
                                                          std::shared_ptr<const DeviceClock> clock);
  ~AclEvent() override;

  std::optional<int64_t> TimestampNanos() const override;
  bool Complete() const override;

  int32_t device() const { return context_->device(); }
  aclrtEvent vendor_event() const { return event_; }

  // For streams (the context is current on the calling thread).
  // aclrtRecordEvent on `stream`; the record's number (1, 2, ...) or the
  // vendor's error.
  absl::StatusOr<uint64_t> Record(aclrtStream stream);
  uint64_t records_submitted() const;
  // Record `ordinal` ran (called in each stream's report order).
  void OnRecordComplete(uint64_t ordinal);
  // Record `ordinal` was dropped by an abort: it no longer keeps the event
  // incomplete, and stamps nothing.
  void OnRecordDropped(uint64_t ordinal);

 private:
  AclEvent(std::shared_ptr<DeviceContext> context, std::shared_ptr<const DeviceClock> clock,
           aclrtEvent event)
      : context_(std::move(context)), clock_(std::move(clock)), event_(event) {}

  // When the latest record is the only one outstanding and the vendor says it
  // ran, counts it now.
  void RefreshLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The latest record's timestamp, from the vendor.
  int64_t LatestTimestampLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResolveLocked(uint64_t ordinal, std::optional<int64_t> timestamp) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<DeviceContext> context_;
  const std::shared_ptr<const DeviceClock> clock_;
  const aclrtEvent event_;

  mutable absl::Mutex mu_;
  uint64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  mutable uint64_t resolved_ ABSL_GUARDED_BY(mu_) = 0;  // records that ran or were dropped
  mutable bool latest_resolved_ ABSL_GUARDED_BY(mu_) = true;
  // A latest record counted early (RefreshLocked); its report is then a no-op.
  mutable uint64_t counted_early_ ABSL_GUARDED_BY(mu_) = 0;
  mutable uint64_t stamped_ordinal_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::optional<int64_t> timestamp_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ACL_EVENT_H_
