#include "daemon/core/queue_budget.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acld {

absl::StatusOr<std::shared_ptr<void>> QueueBudget::Charge(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (limit_ != 0 && used_ >= limit_ && !closed_) {
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || used_ < limit_; };
    mu_.AwaitWithTimeout(absl::Condition(&room), patience_);
  }
  if (closed_) return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "the session has ended");
  if (limit_ != 0 && (used_ >= 2 * limit_ || bytes > 2 * limit_ - used_)) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat("this process has ", used_, " bytes of work queued in acld and none of it "
                     "finished for ", absl::FormatDuration(patience_), "; the limit is ", limit_,
                     " bytes (--max_queued_bytes_per_session)"));
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
