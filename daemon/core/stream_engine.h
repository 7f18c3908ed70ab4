// The bounded worker pool of one device: runs whichever streams have a ready
// head task.
//
// The device's time is shared between sessions, not streams: sessions take
// turns (a session of weight w gets w turns per round). A tenant with
// thousands of busy streams thus gets no more of the device than a tenant
// with one. A stream's priority orders it among its own session's streams
// (highest first, streams of one priority in turn), never ahead of another
// session: a priority is the client's choice, and a tenant that chose 0 must
// not starve every tenant that kept the default. The operator's weights are
// what rank sessions.
#ifndef ACLD_DAEMON_CORE_STREAM_ENGINE_H_
#define ACLD_DAEMON_CORE_STREAM_ENGINE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/task_tally.h"
#include "daemon/core/session_id.h"

namespace acld {

class Stream;

class StreamEngine {
 public:
  static constexpr int kPriorities = 8;

  explicit StreamEngine(int workers);
  ~StreamEngine() { Stop(); }

  // Stops and joins the workers; streams still queued are not run, and
  // MakeReady stays safe to call. Idempotent.
  void Stop();

  // How the device's tasks ended (its streams count into it).
  TaskTally& tally() { return tally_; }
  const TaskTally& tally() const { return tally_; }

  // Queues `stream` to have RunSome() called on a worker.
  void MakeReady(std::shared_ptr<Stream> stream, uint32_t priority);

  // Runs `work` on a worker, before any stream (device work that became due
  // elsewhere, e.g. a busy kernel whose time is up: never on the timer thread).
  void Post(std::function<void()> work);

  // Turns per round of `session` (at least 1; 1 by default).
  void SetWeight(SessionId session, uint32_t weight);
  void ForgetSession(SessionId session);

  int worker_count() const { return static_cast<int>(workers_.size()); }

 private:
  // A session's ready streams, by priority.
  struct SessionQueue {
    std::array<std::deque<std::shared_ptr<Stream>>, kPriorities> streams;
    size_t ready = 0;  // in all of them
    uint32_t turns_left = 0;
  };

  void WorkerLoop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<Stream> NextStreamLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t WeightLocked(SessionId session) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // The sessions with ready streams, and their turn order.
  std::map<SessionId, SessionQueue> ready_ ABSL_GUARDED_BY(mu_);
  std::deque<SessionId> order_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, uint32_t> weights_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  TaskTally tally_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_STREAM_ENGINE_H_
