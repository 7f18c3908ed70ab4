// A stream: tasks that run one after another, in submission order.
//
// Streams do not own threads. A stream with a runnable head task sits in its
// device's StreamEngine ready queue and a worker runs a few of its tasks; a
// task that must wait (an event, a kernel's busy time, a host callback) parks
// the stream and resumes it later, holding no worker meanwhile.
#ifndef ACLD_DAEMON_CORE_STREAM_H_
#define ACLD_DAEMON_CORE_STREAM_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/progress_waiters.h"
#include "daemon/core/session_id.h"
#include "daemon/core/timer.h"

namespace acld {

class StreamEngine;

using StreamId = uint64_t;

enum class FailureMode { kContinue, kStop };

// Calls back exactly once when a parked task is done.
using TaskResume = std::function<void(absl::Status)>;
// A task's work. Returns its status, or nullopt when it parked the stream; it
// then calls `resume` exactly once (from any thread) when it is done.
using TaskFn = std::function<std::optional<absl::Status>(const TaskResume& resume)>;

// What the runtime learns about a failed task (the exception callback's facts).
struct TaskFailure {
  SessionId session = 0;
  StreamId stream = 0;
  int32_t device = 0;
  uint64_t task_id = 0;
  uint64_t submitter_thread = 0;
  absl::Status status;
};
using FailureListener = std::function<void(const TaskFailure&)>;

struct StreamStats {
  uint64_t queued = 0;     // enqueued, not yet finished
  uint64_t completed = 0;  // ran successfully
  uint64_t failed = 0;     // ran and failed
  uint64_t discarded = 0;  // dropped by STOP_ON_FAILURE or a forced destroy
  FailureMode failure_mode = FailureMode::kContinue;
  std::string state;  // idle, ready, running, waiting on <what>, closing
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  struct Options {
    StreamId id = 0;
    SessionId session = 0;
    int32_t device = 0;
    uint32_t priority = 0;  // 0 (highest) .. 7
    uint32_t flags = 0;
  };

  Stream(const Options& options, StreamEngine& engine, Timer& timer, FailureListener on_failure);
  ~Stream();

  const Options& options() const { return options_; }
  StreamId id() const { return options_.id; }

  // Appends a task and returns its task id (ids start at 1 and grow by one).
  // `on_discard` (optional) runs instead of the task if the task is dropped
  // (STOP_ON_FAILURE, Abort), so that nobody waits for it forever.
  // `waits_for` names what the task may park on, for operators ("callback").
  // `hold` (optional) is kept until the task has finished or been dropped
  // (what the task is charged, memory it pinned).
  absl::StatusOr<uint64_t> Enqueue(TaskFn task, uint64_t submitter_thread,
                                   std::function<void()> on_discard = nullptr,
                                   const char* waits_for = "work",
                                   std::shared_ptr<void> hold = nullptr);

  // Calls `done` once every task enqueued before this call has finished or
  // been discarded, with the stream's first unreported failure (reported once),
  // or with ACL_ERROR_RT_STREAM_SYNC_TIMEOUT after `timeout`.
  void Synchronize(absl::Duration timeout, std::function<void(absl::Status)> done);

  // True when every enqueued task has finished.
  bool Idle() const;

  void SetFailureMode(FailureMode mode);

  // Drops every queued task and a parked one (a task running on a worker
  // finishes); synchronizations waiting now complete with `why`. Launched work
  // is discarded only by aclrtStreamAbort and by the end of its session.
  void Abort(const absl::Status& why);

  // Stops accepting tasks; the queued ones still run. `drained` is called once
  // nothing is left (at once if nothing is).
  void Close(std::function<void()> drained);

  StreamStats Stats() const;

  // For the engine: runs a batch of ready tasks on the calling worker.
  void RunSome();

  // While one lives, a stream resumed on this thread runs its next ready tasks
  // on this thread instead of queueing them for a worker.
  class ContinueInline {
   public:
    ContinueInline();
    ~ContinueInline();

   private:
    const bool previous_;
  };

 private:
  struct Task {
    uint64_t id;
    uint64_t submitter_thread;
    TaskFn fn;
    std::function<void()> on_discard;
    const char* waits_for;
    std::shared_ptr<void> hold;
  };
  enum class State { kIdle, kReady, kRunning, kParked };

  // Records the end of the current task; collects callbacks to run unlocked.
  void FinishLocked(const Task& task, absl::Status status,
                    std::vector<std::function<void()>>& after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DiscardQueuedLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CollectDoneLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a task ends: back in the ready queue, or idle.
  bool ScheduleNextLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Resume(uint64_t task_id, absl::Status status);
  void TimeOutWaiter(uint64_t waiter_id, absl::Duration timeout);
  absl::Status TakeErrorLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  StreamEngine& engine_;
  const FailureListener on_failure_;

  mutable absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  std::optional<Task> parked_ ABSL_GUARDED_BY(mu_);
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  uint64_t next_task_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t finished_through_ ABSL_GUARDED_BY(mu_) = 0;  // every task id <= this is done
  // Discarded while a task was still running: done once that task finishes.
  uint64_t discarded_through_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t running_task_id_ ABSL_GUARDED_BY(mu_) = 0;
  // A parked task's result that arrived before its worker saw it park.
  std::optional<absl::Status> early_result_ ABSL_GUARDED_BY(mu_);
  FailureMode failure_mode_ ABSL_GUARDED_BY(mu_) = FailureMode::kContinue;
  // The first failure not yet reported by a synchronization.
  absl::Status unreported_error_ ABSL_GUARDED_BY(mu_);
  // STOP_ON_FAILURE after a failure: tasks are discarded until it is reported.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::function<void()>> close_waiters_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Stream> closing_keepalive_ ABSL_GUARDED_BY(mu_);
  // Synchronizations, waiting for finished_through_.
  ProgressWaiters sync_waiters_ ABSL_GUARDED_BY(mu_);
  StreamStats counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_STREAM_H_
