#include "hal/acl/acl_event.h"

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

absl::StatusOr<uint64_t> AclEvent::Record(aclrtStream stream) {
  absl::MutexLock lock(&mu_);
  absl::Status status =
      CheckVendor(context_->api().aclrtRecordEvent(event_, stream), "aclrtRecordEvent");
  if (!status.ok()) return status;
  latest_resolved_ = false;
  return ++submitted_;
}

uint64_t AclEvent::records_submitted() const {
  absl::MutexLock lock(&mu_);
  return submitted_;
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

void AclEvent::ResolveLocked(uint64_t ordinal, std::optional<int64_t> timestamp) const {
  ++resolved_;
  if (ordinal == submitted_) latest_resolved_ = true;
  if (timestamp.has_value() && ordinal > stamped_ordinal_) {
    stamped_ordinal_ = ordinal;
    timestamp_ = timestamp;
  }
}

void AclEvent::RefreshLocked() const {
  if (resolved_ + 1 != submitted_ || latest_resolved_) return;
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  if (!context_->MakeCurrent().ok() ||
      context_->api().aclrtQueryEventStatus(event_, &status) != ACL_SUCCESS ||
      status != ACL_EVENT_RECORDED_STATUS_COMPLETE) {
    return;
  }
  counted_early_ = submitted_;
  ResolveLocked(submitted_, LatestTimestampLocked());
}

void AclEvent::OnRecordComplete(uint64_t ordinal) {
  absl::MutexLock lock(&mu_);
  if (ordinal == counted_early_) {
    counted_early_ = 0;
    return;
  }
  ResolveLocked(ordinal,
                ordinal == submitted_ ? LatestTimestampLocked() : DeviceClock::HostNowNanos());
}

void AclEvent::OnRecordDropped(uint64_t ordinal) {
  absl::MutexLock lock(&mu_);
  if (ordinal == counted_early_) {
    counted_early_ = 0;
    return;
  }
  ResolveLocked(ordinal, std::nullopt);
}

std::optional<int64_t> AclEvent::TimestampNanos() const {
  absl::MutexLock lock(&mu_);
  RefreshLocked();
  return timestamp_;
}

bool AclEvent::Complete() const {
  absl::MutexLock lock(&mu_);
  RefreshLocked();
  return resolved_ == submitted_;
}

}  // namespace hal::acl
