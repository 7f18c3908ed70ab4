// The arbiter of host callbacks (aclrtLaunchHostFunc, aclrtLaunchCallback).
//
// A callback is a host-callback point of its device stream
// (Stream::EnqueueHostPoint). When the device reaches it, the broker tells the
// session's process (SessionEvents::callback_due) and, for a blocking
// callback, keeps the device stream held until the process acknowledges. The
// broker, not a worker, waits: a held stream holds no thread. A process that never answers
// fails the task with ACL_ERROR_RT_REPORT_TIMEOUT after the callback timeout;
// a process that dies is forgotten with its session.
#ifndef ACLD_DAEMON_CORE_CALLBACK_BROKER_H_
#define ACLD_DAEMON_CORE_CALLBACK_BROKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/latency_histogram.h"
#include "daemon/core/session_events.h"
#include "daemon/core/stream.h"
#include "hal/timer.h"

namespace acld {

class CallbackBroker {
 public:
  CallbackBroker(hal::Timer& timer, absl::Duration timeout) : timer_(timer), timeout_(timeout) {}

  // A callback's stream task (Stream::EnqueueHostPoint): what runs when the
  // device reaches its point, and what runs instead if an abort discards it.
  struct PointTask {
    TaskFn at_point;
    std::function<void()> on_discard;
  };

  // The stream task for callback `callback_id` of `session`. `events` is
  // where the session hears of it. A non-blocking callback lets the stream go
  // on at once; a blocking one holds it until Acknowledge (or the timeout).
  // A blocking callback whose id is already waiting fails the task (a
  // client's ids are its own to keep apart). Once discarded, the callback is
  // not waited for and its timeout does not count; if the discard came before
  // the point registered it (the two raced), it is not delivered either (one
  // registered first may still be: its answer is then refused).
  PointTask MakeTask(SessionId session, StreamId stream, uint64_t callback_id, bool block,
                     std::shared_ptr<const SessionEvents> events);

  // The process finished callback `callback_id`: its stream goes on. Unknown
  // ids (timed out, or never blocking) are refused.
  absl::Status Acknowledge(SessionId session, uint64_t callback_id);

  // The session is gone: nothing of it is waited for any more.
  void ForgetSession(SessionId session);

  // Blocking callbacks delivered and not yet acknowledged.
  size_t Pending(SessionId session) const;
  // Callbacks of the session that timed out.
  uint64_t Timeouts(SessionId session) const;
  // How long blocking callbacks took, from their delivery to the process's
  // answer, since acld started.
  LatencyHistogram::Snapshot Latencies() const { return latencies_.Read(); }

 private:
  // One callback task's fate, shared by its at_point and its on_discard.
  struct Point {
    bool discarded = false;  // guarded by mu_
  };
  struct Waiting {
    std::shared_ptr<const Point> point;  // whose wait this is (ids may repeat)
    TaskResume resume;
    hal::Timer::TimerId timer = 0;
    absl::Time delivered;
  };
  using Key = std::pair<SessionId, uint64_t>;

  // Runs callback `key`'s task at its point (see MakeTask).
  std::optional<absl::Status> Reach(const Key& key, StreamId stream, bool block,
                                    const std::shared_ptr<Point>& point,
                                    const SessionEvents* events, const TaskResume& resume);
  // The task of `point` was discarded: it is not waited for any more.
  void Forget(const Key& key, const std::shared_ptr<Point>& point);
  void TimeOut(const Key& key);

  hal::Timer& timer_;
  const absl::Duration timeout_;
  mutable absl::Mutex mu_;
  std::map<Key, Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, uint64_t> timeouts_ ABSL_GUARDED_BY(mu_);
  LatencyHistogram latencies_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_CALLBACK_BROKER_H_
