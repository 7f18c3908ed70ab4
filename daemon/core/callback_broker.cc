#include "daemon/core/callback_broker.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

CallbackBroker::PointTask CallbackBroker::MakeTask(SessionId session, StreamId stream,
                                                   uint64_t callback_id, bool block,
                                                   std::shared_ptr<const SessionEvents> events) {
  const Key key{session, callback_id};
  auto point = std::make_shared<Point>();
  PointTask task;
  task.at_point = [this, key, stream, block, point,
                   events = std::move(events)](const TaskResume& resume) {
    return Reach(key, stream, block, point, events.get(), resume);
  };
  task.on_discard = [this, key, point] { Forget(key, point); };
  return task;
}

std::optional<absl::Status> CallbackBroker::Reach(const Key& key, StreamId stream, bool block,
                                                  const std::shared_ptr<Point>& point,
                                                  const SessionEvents* events,
                                                  const TaskResume& resume) {
  {
    absl::MutexLock lock(&mu_);
    // The point and an abort raced and the abort won: the callback is gone.
    if (point->discarded) return absl::OkStatus();
    if (block) {
      // Registered before the process hears of it: its answer may be quick.
      if (waiting_.count(key) != 0) {
        return AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat("callback ", key.second,
                                      " is already waiting for an answer on another stream"));
      }
      Waiting& waiting = waiting_[key];
      waiting.point = point;
      waiting.resume = resume;
      waiting.timer = timer_.ScheduleIn(timeout_, [this, key] { TimeOut(key); });
      waiting.delivered = absl::Now();
    }
  }
  if (events != nullptr && events->callback_due) events->callback_due({key.second, stream});
  if (!block) return absl::OkStatus();
  return std::nullopt;
}

absl::Status CallbackBroker::Acknowledge(SessionId session, uint64_t callback_id) {
  TaskResume resume;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find({session, callback_id});
    if (it == waiting_.end()) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat("callback ", callback_id,
                                    " is not waiting for an answer (timed out or unknown)"));
    }
    timer_.Cancel(it->second.timer);
    resume = std::move(it->second.resume);
    latencies_.Record(absl::Now() - it->second.delivered);
    waiting_.erase(it);
  }
  resume(absl::OkStatus());
  return absl::OkStatus();
}

void CallbackBroker::TimeOut(const Key& key) {
  TaskResume resume;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiting_.find(key);
    if (it == waiting_.end()) return;
    resume = std::move(it->second.resume);
    waiting_.erase(it);
    ++timeouts_[key.first];
  }
  resume(AclStatus(ACL_ERROR_RT_REPORT_TIMEOUT,
                   absl::StrCat("the process did not finish callback ", key.second, " within ",
                                absl::FormatDuration(timeout_), " (--callback_timeout)")));
}

void CallbackBroker::Forget(const Key& key, const std::shared_ptr<Point>& point) {
  absl::MutexLock lock(&mu_);
  point->discarded = true;
  auto it = waiting_.find(key);
  // Another task's callback of that id (refused as a duplicate here) stays.
  if (it == waiting_.end() || it->second.point != point) return;
  timer_.Cancel(it->second.timer);
  waiting_.erase(it);
}

void CallbackBroker::ForgetSession(SessionId session) {
  absl::MutexLock lock(&mu_);
  for (auto it = waiting_.lower_bound({session, 0});
       it != waiting_.end() && it->first.first == session;) {
    timer_.Cancel(it->second.timer);
    it = waiting_.erase(it);
  }
  timeouts_.erase(session);
}

size_t CallbackBroker::Pending(SessionId session) const {
  absl::MutexLock lock(&mu_);
  size_t pending = 0;
  for (auto it = waiting_.lower_bound({session, 0});
       it != waiting_.end() && it->first.first == session; ++it) {
    ++pending;
  }
  return pending;
}

uint64_t CallbackBroker::Timeouts(SessionId session) const {
  absl::MutexLock lock(&mu_);
  auto it = timeouts_.find(session);
  return it == timeouts_.end() ? 0 : it->second;
}

}  // namespace acld
