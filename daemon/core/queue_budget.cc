#include "daemon/core/queue_budget.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

absl::StatusOr<std::shared_ptr<void>> QueueBudget::Charge(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (limit_ != 0 && used_ >= limit_ && !overdrawn_ && !closed_) {
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || used_ < limit_; };
    // Still over after waiting: the work cannot drain by itself; later calls
    // go on without waiting until it drops below the limit again.
    if (!mu_.AwaitWithTimeout(absl::Condition(&room), patience_)) overdrawn_ = true;
  }
  if (closed_) return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "the session has ended");
  if (limit_ != 0 && (used_ >= 2 * limit_ || bytes > 2 * limit_ - used_)) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat("this process has ", used_, " bytes of work queued in acld that is not "
                     "draining; at most ", limit_, " bytes may wait (--max_queued_bytes_per_session)"
                     ", twice that while stalled"));
  }
  used_ += bytes;
  std::weak_ptr<QueueBudget> self = weak_from_this();
  return std::shared_ptr<void>(nullptr, [self, bytes](void*) {
    if (auto budget = self.lock()) budget->Release(bytes);
  });
}

void QueueBudget::Release(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  used_ -= bytes;
  if (used_ < limit_) overdrawn_ = false;
}

void QueueBudget::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

uint64_t QueueBudget::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

}  // namespace acld
