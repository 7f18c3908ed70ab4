// The bounded worker pool of one device: runs whichever streams have a ready
// head task.
//
// The device's time is shared between tenants (a uid, or a quota group), then
// between a tenant's sessions, not between streams: tenants take turns, and
// each turn is the turn of the tenant's next session, which runs its streams
// w times (its weight, the operator's; 1 by default). A tenant with thousands
// of busy streams, or the 256 sessions one uid may open, thus gets no more of
// the device than a tenant with one. A stream's priority orders it among its
// own session's streams (highest first, streams of one priority in turn),
// never ahead of another session: a priority is the client's choice, and a
// tenant that chose 0 must not starve every tenant that kept the default.
#ifndef ACLD_DAEMON_CORE_STREAM_ENGINE_H_
#define ACLD_DAEMON_CORE_STREAM_ENGINE_H_

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
#include "daemon/core/tenant.h"

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
  // Whose share `session` takes its turns from (by default every session
  // not told is of one tenant, Tenant()).
  void SetTenant(SessionId session, const Tenant& tenant);
  void ForgetSession(SessionId session);

  int worker_count() const { return static_cast<int>(workers_.size()); }

 private:
  // A session's ready streams, by priority (only those it uses: most use one).
  struct SessionQueue {
    std::map<uint32_t, std::deque<std::shared_ptr<Stream>>> streams;
    size_t ready = 0;  // in all of them
    uint32_t turns_left = 0;
    Tenant tenant;  // as when it became ready (the session may be forgotten)
  };

  void WorkerLoop();
  bool HasWorkLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<Stream> NextStreamLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t WeightLocked(SessionId session) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // The sessions with ready streams; by tenant, their turn order; and the
  // tenants' turn order.
  std::map<SessionId, SessionQueue> ready_ ABSL_GUARDED_BY(mu_);
  std::map<Tenant, std::deque<SessionId>> ready_sessions_ ABSL_GUARDED_BY(mu_);
  std::deque<Tenant> tenant_order_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, Tenant> tenants_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, uint32_t> weights_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  TaskTally tally_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_STREAM_ENGINE_H_
