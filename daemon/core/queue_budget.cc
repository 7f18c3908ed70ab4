#include "daemon/core/queue_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {
namespace {

// Whether `bytes` more pass the hard ceiling of twice `limit` (0: none),
// `used` being charged already; a limit near 2^64 saturates, never wraps.
bool PassesCeiling(uint64_t limit, uint64_t used, uint64_t bytes) {
  if (limit == 0) return false;
  const uint64_t ceiling = limit > UINT64_MAX / 2 ? UINT64_MAX : 2 * limit;
  return used >= ceiling || bytes > ceiling - used;
}

}  // namespace

bool TenantQueue::Full() const {
  absl::MutexLock lock(&mu_);
  return limit_ != 0 && used_ >= limit_;
}

absl::Status TenantQueue::Charge(uint64_t bytes, const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  if (PassesCeiling(limit_, used_, bytes)) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat("the processes of ", tenant, " have ", used_, " bytes of work queued in acld "
                     "together that is not draining; at most ", limit_, " bytes may wait "
                     "(--max_queued_bytes_per_uid), twice that while stalled"));
  }
  used_ += bytes;
  return absl::OkStatus();
}

void TenantQueue::Release(uint64_t bytes) {
  std::vector<std::weak_ptr<QueueBudget>> waiting;
  {
    absl::MutexLock lock(&mu_);
    used_ -= std::min(used_, bytes);
    if (limit_ == 0 || used_ < limit_) waiting.swap(waiting_);
  }
  // Outside the lock: each budget takes its own, and its reader's callback
  // may read (and charge) at once.
  for (const std::weak_ptr<QueueBudget>& budget : waiting) {
    if (auto waiter = budget.lock()) waiter->TenantRoom();
  }
}

bool TenantQueue::WaitIfFull(std::weak_ptr<QueueBudget> budget) {
  absl::MutexLock lock(&mu_);
  if (limit_ == 0 || used_ < limit_) return false;
  // One entry per live waiting session: ended sessions' go here (a tenant
  // that stays full while its processes come and go must not grow the list),
  // and a session asking again is already in it.
  bool listed = false;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->expired()) {
      it = waiting_.erase(it);
      continue;
    }
    listed = listed || (!it->owner_before(budget) && !budget.owner_before(*it));
    ++it;
  }
  if (!listed) waiting_.push_back(std::move(budget));
  return true;
}

size_t TenantQueue::listed_waiters() const {
  absl::MutexLock lock(&mu_);
  return waiting_.size();
}

uint64_t TenantQueue::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

absl::StatusOr<std::shared_ptr<void>> QueueBudget::Charge(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (timer_ == nullptr && FullLocked()) {
    auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || used_ < limit_; };
    // Still over after waiting: the work cannot drain by itself; later calls
    // go on without waiting until it drops below the limit again.
    if (!mu_.AwaitWithTimeout(absl::Condition(&room), patience_)) overdrawn_ = true;
  }
  if (closed_) return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "the session has ended");
  if (PassesCeiling(limit_, used_, bytes)) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat("this process has ", used_, " bytes of work queued in acld that is not "
                     "draining; at most ", limit_, " bytes may wait (--max_queued_bytes_per_session)"
                     ", twice that while stalled"));
  }
  if (tenant_ != nullptr) ACL_RETURN_IF_ERROR(tenant_->Charge(bytes, tenant_name_));
  used_ += bytes;
  std::weak_ptr<QueueBudget> self = weak_from_this();
  // The tenant's charge goes back even when the session's budget is gone.
  return std::shared_ptr<void>(nullptr, [self, tenant = tenant_, bytes](void*) {
    if (auto budget = self.lock()) budget->Release(bytes);
    if (tenant != nullptr) tenant->Release(bytes);
  });
}

bool QueueBudget::AwaitRoom(std::function<void()> on_room) {
  absl::MutexLock lock(&mu_);
  if (timer_ == nullptr) return false;
  // Its own budget first; else its tenant's, which then tells it of room.
  if (!FullLocked() && (overdrawn_ || closed_ || tenant_ == nullptr ||
                        !tenant_->WaitIfFull(weak_from_this()))) {
    return false;
  }
  on_room_ = std::move(on_room);
  if (patience_timer_ == 0) {
    // The patience runs from the first wait until there is room.
    const uint64_t waiter = ++waiter_;
    std::weak_ptr<QueueBudget> self = weak_from_this();
    patience_timer_ = timer_->ScheduleIn(patience_, [self, waiter] {
      if (auto budget = self.lock()) budget->PatienceEnded(waiter);
    });
  }
  return true;
}

std::function<void()> QueueBudget::TakeWaiterLocked() {
  if (patience_timer_ != 0) {
    timer_->Cancel(patience_timer_);
    patience_timer_ = 0;
  }
  return std::exchange(on_room_, nullptr);
}

void QueueBudget::PatienceEnded(uint64_t waiter) {
  std::function<void()> on_room;
  {
    absl::MutexLock lock(&mu_);
    if (waiter != waiter_ || patience_timer_ == 0) return;  // room came meanwhile
    patience_timer_ = 0;
    overdrawn_ = true;
    on_room = std::exchange(on_room_, nullptr);
  }
  if (on_room) on_room();
}

void QueueBudget::Release(uint64_t bytes) {
  std::function<void()> on_room;
  {
    absl::MutexLock lock(&mu_);
    used_ -= bytes;
    if (limit_ == 0 || used_ < limit_) {  // (a wait for the tenant's room overdraws too)
      overdrawn_ = false;
      on_room = TakeWaiterLocked();
    }
  }
  if (on_room) on_room();
}

void QueueBudget::TenantRoom() {
  std::function<void()> on_room;
  {
    absl::MutexLock lock(&mu_);
    if (FullLocked()) return;  // its own room wakes it
    on_room = TakeWaiterLocked();
  }
  if (on_room) on_room();
}

void QueueBudget::Close() {
  std::function<void()> on_room;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    on_room = TakeWaiterLocked();
  }
  if (on_room) on_room();
}

uint64_t QueueBudget::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

}  // namespace acld
