#include "hal/acl/acl_event.h"

#include <utility>

#include "hal/acl/vendor_status.h"

namespace hal::acl {

absl::StatusOr<std::shared_ptr<AclEvent>> AclEvent::Create(
    std::shared_ptr<DeviceContext> context, std::shared_ptr<const DeviceClock> clock) {
  absl::Status status = context->MakeCurrent();
  if (!status.ok()) return status;
  aclrtEvent event = nullptr;
  status = CheckVendor(
      context->api().aclrtCreateEventWithFlag(&event, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC),
      "aclrtCreateEventWithFlag");
  if (!status.ok()) return status;
  return std::shared_ptr<AclEvent>(new AclEvent(std::move(context), std::move(clock), event));
}

AclEvent::~AclEvent() {
  if (context_->MakeCurrent().ok()) context_->api().aclrtDestroyEvent(event_);
}

absl::Status AclEvent::Record(aclrtStream stream, uint64_t record) {
  absl::MutexLock lock(&mu_);
  absl::Status status =
      CheckVendor(context_->api().aclrtRecordEvent(event_, stream), "aclrtRecordEvent");
  if (!status.ok()) return status;
  ledger_.Submitted(record);
  latest_ = record;
  return absl::OkStatus();
}

absl::StatusOr<AclEvent::Waiting> AclEvent::Wait(aclrtStream stream, uint64_t record,
                                                 std::function<void()> release) {
  absl::MutexLock lock(&mu_);
  if (ledger_.Settled(record) || record == 0) return Waiting{WaitKind::kPassed};
  if (record == latest_) {
    // Under the lock: no record can supersede it before the vendor sees the wait.
    absl::Status status =
        CheckVendor(context_->api().aclrtStreamWaitEvent(stream, event_), "aclrtStreamWaitEvent");
    if (!status.ok()) return status;
    return Waiting{WaitKind::kVendorWait};
  }
  return Waiting{WaitKind::kRelease, ledger_.WaitFor(record, std::move(release))};
}

bool AclEvent::CancelWait(uint64_t release_id) {
  absl::MutexLock lock(&mu_);
  return ledger_.CancelWait(release_id);
}

size_t AclEvent::waiting() const {
  absl::MutexLock lock(&mu_);
  return ledger_.waiting();
}

int64_t AclEvent::LatestTimestampLocked() const {
  uint64_t device_micros = 0;
  const VendorApi& api = context_->api();
  if (clock_->calibrated() && api.aclrtEventGetTimestamp != nullptr &&
      context_->MakeCurrent().ok() &&
      api.aclrtEventGetTimestamp(event_, &device_micros) == ACL_SUCCESS) {
    return clock_->ToHostNanos(device_micros);
  }
  return DeviceClock::HostNowNanos();
}

void AclEvent::SettleLocked(uint64_t record, std::optional<int64_t> timestamp,
                            std::vector<RecordLedger::Wake>& woken) const {
  // Counted early (RefreshLocked) or not.
  if (!ledger_.Settle(record, timestamp.has_value(), woken)) return;
  if (timestamp.has_value() && record > stamped_record_) {
    stamped_record_ = record;
    timestamp_ = timestamp;
  }
}

void AclEvent::Settle(uint64_t record, bool ran) {
  std::vector<RecordLedger::Wake> woken;
  {
    absl::MutexLock lock(&mu_);
    std::optional<int64_t> timestamp;
    if (ran) timestamp = record == latest_ ? LatestTimestampLocked() : DeviceClock::HostNowNanos();
    SettleLocked(record, timestamp, woken);
  }
  for (auto& wake : woken) wake();
}

bool AclEvent::LatestRanLocked() const {
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return latest_ != 0 && context_->MakeCurrent().ok() &&
         context_->api().aclrtQueryEventStatus(event_, &status) == ACL_SUCCESS &&
         status == ACL_EVENT_RECORDED_STATUS_COMPLETE;
}

void AclEvent::RefreshLocked(std::vector<RecordLedger::Wake>& woken) const {
  const std::set<uint64_t>& pending = ledger_.pending();
  if (pending.size() != 1 || *pending.begin() != latest_ || !LatestRanLocked()) return;
  SettleLocked(latest_, LatestTimestampLocked(), woken);
}

void AclEvent::OnRecordComplete(uint64_t record) { Settle(record, /*ran=*/true); }

void AclEvent::OnRecordDropped(uint64_t record) { Settle(record, /*ran=*/false); }

void AclEvent::ForgetRecord(uint64_t record) { Settle(record, /*ran=*/false); }

bool AclEvent::Dropped(uint64_t record) const {
  absl::MutexLock lock(&mu_);
  return ledger_.Dropped(record);
}

// The ledger's word, or the vendor's for the latest record: a stream the
// device released from a wait for it (aclrtStreamWaitEvent) may be
// synchronized before the record's own report arrives. Only read: settling
// here (as Complete does) would run wake-ups, and callers may hold their
// own locks.
bool AclEvent::Settled(uint64_t record) const {
  absl::MutexLock lock(&mu_);
  return ledger_.Settled(record) || (record == latest_ && LatestRanLocked());
}

std::optional<int64_t> AclEvent::TimestampNanos() const {
  std::vector<RecordLedger::Wake> woken;
  std::optional<int64_t> timestamp;
  {
    absl::MutexLock lock(&mu_);
    RefreshLocked(woken);
    timestamp = timestamp_;
  }
  for (auto& wake : woken) wake();
  return timestamp;
}

bool AclEvent::Complete() const {
  std::vector<RecordLedger::Wake> woken;
  bool complete;
  {
    absl::MutexLock lock(&mu_);
    RefreshLocked(woken);
    complete = ledger_.AllSubmittedSettled();
  }
  for (auto& wake : woken) wake();
  return complete;
}

}  // namespace hal::acl
