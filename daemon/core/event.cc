#include "daemon/core/event.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acld {

uint64_t Event::TakeRecordNumber() {
  absl::MutexLock lock(&mu_);
  return ++issued_;
}

uint64_t Event::latest_record() const {
  absl::MutexLock lock(&mu_);
  return issued_;
}

void Event::CompleteRecord(uint64_t record, int64_t timestamp_ns) {
  std::vector<std::function<void(absl::Status)>> ready;
  {
    absl::MutexLock lock(&mu_);
    if (record <= completed_) return;
    completed_ = record;
    recorded_ = true;
    timestamp_ns_ = timestamp_ns;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->target > completed_) {
        ++it;
        continue;
      }
      if (it->timeout != 0) timer_.Cancel(it->timeout);
      ready.push_back(std::move(it->done));
      it = waiters_.erase(it);
    }
  }
  for (auto& done : ready) done(absl::OkStatus());
}

void Event::Reset() {
  absl::MutexLock lock(&mu_);
  recorded_ = false;
}

bool Event::WaitFor(uint64_t target, std::function<void()> resume) {
  absl::MutexLock lock(&mu_);
  if (completed_ >= target) return true;
  waiters_.push_back(
      Waiter{target, [resume = std::move(resume)](absl::Status) { resume(); }, 0, next_waiter_id_++});
  return false;
}

void Event::Synchronize(absl::Duration timeout, std::function<void(absl::Status)> done) {
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    if (completed_ >= issued_) {
      result = absl::OkStatus();
    } else if (timeout <= absl::ZeroDuration()) {
      result = AclStatus(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                         absl::StrCat("event ", id_, " has not completed"));
    } else {
      const uint64_t waiter_id = next_waiter_id_++;
      Timer::TimerId timer_id = 0;
      if (timeout != absl::InfiniteDuration()) {
        std::weak_ptr<Event> self = weak_from_this();
        timer_id = timer_.Schedule(absl::Now() + timeout, [self, waiter_id, timeout] {
          if (auto event = self.lock()) event->TimeOutWaiter(waiter_id, timeout);
        });
      }
      waiters_.push_back(Waiter{issued_, std::move(done), timer_id, waiter_id});
      return;
    }
  }
  done(std::move(result));
}

void Event::TimeOutWaiter(uint64_t waiter_id, absl::Duration timeout) {
  std::function<void(absl::Status)> done;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [&](const Waiter& waiter) { return waiter.id == waiter_id; });
    if (it == waiters_.end()) return;
    done = std::move(it->done);
    waiters_.erase(it);
  }
  done(AclStatus(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                 absl::StrCat("event ", id_, " did not complete within ",
                              absl::FormatDuration(timeout))));
}

bool Event::Complete() const {
  absl::MutexLock lock(&mu_);
  return completed_ >= issued_;
}

bool Event::RecordedAndComplete() const {
  absl::MutexLock lock(&mu_);
  return recorded_ && completed_ >= issued_;
}

bool Event::Timestamp(int64_t* timestamp_ns) const {
  absl::MutexLock lock(&mu_);
  if (!recorded_ || completed_ < issued_) return false;
  *timestamp_ns = timestamp_ns_;
  return true;
}

void Event::ReleaseWaiters() {
  std::vector<Waiter> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters.swap(waiters_);
  }
  for (Waiter& waiter : waiters) {
    if (waiter.timeout != 0) timer_.Cancel(waiter.timeout);
    waiter.done(absl::OkStatus());
  }
}

}  // namespace acld
