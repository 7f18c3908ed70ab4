#include "daemon/core/callback_broker.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

TaskFn CallbackBroker::MakeTask(SessionId session, StreamId stream, uint64_t callback_id,
                                bool block, std::shared_ptr<const SessionEvents> events) {
  return [this, session, stream, callback_id, block,
          events = std::move(events)](const TaskResume& resume) -> std::optional<absl::Status> {
    const CallbackDue due{callback_id, stream};
    if (!block) {
      if (events && events->callback_due) events->callback_due(due);
      return absl::OkStatus();
    }
    const Key key{session, callback_id};
    {
      // Registered before the process hears of it: its answer may be quick.
      absl::MutexLock lock(&mu_);
      if (waiting_.count(key) != 0) {
        return AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat("callback ", callback_id,
                                      " is already waiting for an answer on another stream"));
      }
      Waiting& waiting = waiting_[key];
      waiting.stream = stream;
      waiting.resume = resume;
      waiting.timer = timer_.ScheduleIn(timeout_, [this, key] { TimeOut(key); });
      waiting.delivered = absl::Now();
    }
    if (events && events->callback_due) events->callback_due(due);
    return std::nullopt;
  };
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

void CallbackBroker::Forget(SessionId session, StreamId stream, uint64_t callback_id) {
  absl::MutexLock lock(&mu_);
  auto it = waiting_.find({session, callback_id});
  // Another stream's callback of that id (refused as a duplicate here) stays.
  if (it == waiting_.end() || it->second.stream != stream) return;
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
