#include "daemon/core/notify.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

void Notify::Record() {
  // Bounded: each turn takes one waiter out for good.
  while (true) {
    Waiter released;
    {
      absl::MutexLock lock(&mu_);
      if (waiters_.empty()) {
        set_ = true;
        return;
      }
      released = std::move(waiters_.front());
      waiters_.pop_front();
    }
    if (released.timer != 0) timer_.Cancel(released.timer);
    // Outside the lock: it resumes a stream. A wait discarded after it was
    // taken out here (its Cancel found nothing) gives the record back.
    if (released.done(absl::OkStatus())) return;
  }
}

uint64_t Notify::WaitAndReset(absl::Duration timeout, Done done) {
  absl::MutexLock lock(&mu_);
  if (set_) {
    set_ = false;
    return 0;
  }
  const uint64_t waiter_id = next_waiter_++;
  hal::Timer::TimerId timer = 0;
  if (timeout != absl::InfiniteDuration()) {
    std::weak_ptr<Notify> self = weak_from_this();
    timer = timer_.ScheduleIn(timeout, [self, waiter_id, timeout] {
      if (auto notify = self.lock()) notify->TimeOut(waiter_id, timeout);
    });
  }
  waiters_.push_back(Waiter{waiter_id, std::move(done), timer});
  return waiter_id;
}

void Notify::Cancel(uint64_t wait_id) {
  Done dropped;  // let go of outside the lock
  hal::Timer::TimerId timer = 0;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->id != wait_id) continue;
      dropped = std::move(it->done);
      timer = it->timer;
      waiters_.erase(it);
      break;
    }
  }
  if (timer != 0) timer_.Cancel(timer);
}

void Notify::TimeOut(uint64_t waiter_id, absl::Duration timeout) {
  Done done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->id != waiter_id) continue;
      done = std::move(it->done);
      waiters_.erase(it);
      break;
    }
  }
  if (!done) return;  // released meanwhile
  done(AclStatus(ACL_ERROR_RT_WAIT_TIMEOUT,
                 absl::StrCat("aclrtWaitAndResetNotify: notify ", id_, " was not recorded within ",
                              absl::FormatDuration(timeout))));
}

void Notify::MarkShared() {
  absl::MutexLock lock(&mu_);
  shared_ = true;
}

void Notify::ReleaseWaiters() {
  std::deque<Waiter> released;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    released.swap(waiters_);
    if (shared_) {
      status = AclStatus(ACL_ERROR_RT_IPC_ERROR,
                         absl::StrCat("notify ", id_, " was destroyed, or its owner ended, while "
                                      "this stream waited for it"));
    }
  }
  for (Waiter& waiter : released) {
    if (waiter.timer != 0) timer_.Cancel(waiter.timer);
    waiter.done(status);
  }
}

size_t Notify::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace acld
