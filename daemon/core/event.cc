#include "daemon/core/event.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

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
  std::vector<ProgressWaiters::Done> ready;
  {
    absl::MutexLock lock(&mu_);
    if (record > completed_) {  // the latest completed: its time is the event's
      completed_ = record;
      recorded_ = true;
      timestamp_ns_ = timestamp_ns;
    }
    ready = SettleLocked(record);
  }
  for (auto& done : ready) done(absl::OkStatus());
}

void Event::DropRecord(uint64_t record) {
  if (device_event_ != nullptr) device_event_->ForgetRecord(record);
  std::vector<ProgressWaiters::Done> ready;
  {
    absl::MutexLock lock(&mu_);
    ready = SettleLocked(record);
  }
  for (auto& done : ready) done(absl::OkStatus());
}

std::vector<ProgressWaiters::Done> Event::SettleLocked(uint64_t record) {
  if (!settled_.Add(record)) return {};
  std::vector<ProgressWaiters::Done> ready = waiters_.TakeReached(settled_.through());
  if (record > settled_.through()) {
    for (auto& done : waiters_.TakeTarget(record)) ready.push_back(std::move(done));
  }
  return ready;
}

absl::Status Event::RecordDroppedError() {
  return AclStatus(ACL_ERROR_RT_IPC_ERROR,
                   "the event record waited for did not run: the process that owns the event "
                   "ended, aborted its stream or destroyed the event first");
}

absl::Status Event::OutcomeForOthers(uint64_t record) const {
  bool settled;
  {
    absl::MutexLock lock(&mu_);
    settled = SettledLocked(record);
  }
  return !settled || RecordDropped(record) ? RecordDroppedError() : absl::OkStatus();
}

void Event::Reset() {
  absl::MutexLock lock(&mu_);
  recorded_ = false;
}

uint64_t Event::WaitFor(uint64_t target, std::function<void()> resume) {
  absl::MutexLock lock(&mu_);
  if (SettledLocked(target)) return 0;
  return waiters_.Add(
      target, absl::InfiniteDuration(), [resume = std::move(resume)](absl::Status) { resume(); },
      nullptr);
}

void Event::CancelWait(uint64_t wait_id) {
  absl::MutexLock lock(&mu_);
  waiters_.Remove(wait_id);
}

size_t Event::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

void Event::Synchronize(absl::Duration timeout, std::function<void(absl::Status)> done,
                        SessionId waiter) {
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    if (SettledLocked(issued_)) {
      result = absl::OkStatus();
    } else if (timeout <= absl::ZeroDuration()) {
      result = AclStatus(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                         absl::StrCat("event ", id_, " has not completed"));
    } else {
      std::weak_ptr<Event> self = weak_from_this();
      waiters_.Add(
          issued_, timeout, std::move(done),
          [self, timeout](uint64_t id) {
            if (auto event = self.lock()) event->TimeOutWaiter(id, timeout);
          },
          waiter);
      return;
    }
  }
  done(std::move(result));
}

void Event::TimeOutWaiter(uint64_t waiter_id, absl::Duration timeout) {
  ProgressWaiters::Done done;
  {
    absl::MutexLock lock(&mu_);
    done = waiters_.TakeTimedOut(waiter_id);
  }
  if (!done) return;
  done(AclStatus(
      ACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
      absl::StrCat("event ", id_, " did not complete within ", absl::FormatDuration(timeout))));
}

bool Event::SettledLocked(uint64_t record) const {
  return SettledHereLocked(record) || (device_event_ != nullptr && device_event_->Settled(record));
}

bool Event::LatestRanOnDeviceLocked() const {
  return device_event_ != nullptr && device_event_->Settled(issued_) &&
         !device_event_->Dropped(issued_);
}

bool Event::Complete() const {
  absl::MutexLock lock(&mu_);
  return SettledLocked(issued_);
}

bool Event::RecordedAndComplete() const {
  absl::MutexLock lock(&mu_);
  if (SettledHereLocked(issued_)) return recorded_;
  return LatestRanOnDeviceLocked();
}

bool Event::Timestamp(int64_t* timestamp_ns) const {
  absl::MutexLock lock(&mu_);
  if (SettledHereLocked(issued_)) {
    if (!recorded_) return false;
    *timestamp_ns = timestamp_ns_;
    return true;
  }
  if (!LatestRanOnDeviceLocked()) return false;
  *timestamp_ns = device_event_->TimestampNanos().value_or(0);
  return true;
}

void Event::ReleaseWaiters() {
  std::vector<ProgressWaiters::Done> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters = waiters_.TakeAll();
  }
  for (auto& done : waiters) done(absl::OkStatus());
}

void Event::ReleaseWaitersOf(SessionId waiter) {
  std::vector<ProgressWaiters::Done> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters = waiters_.TakeTagged(waiter);
  }
  for (auto& done : waiters) done(absl::OkStatus());
}

}  // namespace acld
