// A fixed set of threads that serves every session's shared-memory channel
// (and runs the work sessions hand it), however many sessions there are.
//
// A thread cannot sleep on many futex words at once, so each channel comes
// with a doorbell (an eventfd its client writes when acld sleeps,
// proto/acl/message_ring.h) and the pool's threads wait in one epoll set for
// all of them. The pool never reads or writes a doorbell: it is registered
// edge-triggered, so each ring of it is one event and a client cannot make a
// thread block on it (it could only make it wake, which it can do anyway by
// sending requests).
//
// A member's turns never overlap: a doorbell that rings during a turn makes
// the turn run once more instead (a few times at most). A turn does a
// bounded amount of work; a member with more left, or still rung, goes to
// the back of the run queue, so a busy client cannot keep a thread from the
// others. The run queue takes turns between tenants (hal::TurnQueue): a
// uid's hundreds of sessions share its turns. A new member's first few
// turns go ahead instead: a process that just opened its session (aclInit,
// then its first calls) is not made to wait a whole round of a busy host's
// sessions per call. But at most
// kAheadInARow turns go ahead before one from the queue: a tenant opening
// session after session slows everyone else's turns (to a fifth at worst)
// but cannot keep them waiting.
#ifndef ACLD_DAEMON_SERVER_CHANNEL_POOL_H_
#define ACLD_DAEMON_SERVER_CHANNEL_POOL_H_

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/tenant.h"
#include "hal/turn_queue.h"

namespace acld::server {

class ChannelPool {
 public:
  // What the pool serves.
  class Member {
   public:
    virtual ~Member() = default;
    // One turn: does what is to be done now, within a bound. True when more
    // is left (the member goes back in the queue); false when it sleeps until
    // its doorbell rings (or Wake).
    virtual bool Serve() = 0;
  };

  // `threads` >= 1.
  explicit ChannelPool(int threads);
  // The default size: one thread per CPU this process may run on (its
  // affinity, and its cgroup's CPU quota when it has one), from 2 to 4.
  // Threads beyond the CPUs only add wake-ups: each doorbell may wake a
  // different sleeping thread. On 2 vCPUs, 2 threads served 1,024 clients'
  // calls with a fifth less of acld's CPU than 4, and 64 clients calling back
  // to back 40 % faster (docs/performance.md, session 27). A busy session
  // cannot hold a thread from the others (bounded turns, above), so even
  // one thread serves everyone; more than 4 is not measured.
  static int DefaultThreads();
  // Joins the threads; turns and tasks not started yet are dropped.
  ~ChannelPool();
  ChannelPool(const ChannelPool&) = delete;
  ChannelPool& operator=(const ChannelPool&) = delete;

  // Serves `member` once now and whenever `doorbell` rings, until Remove.
  // The caller keeps `doorbell` open until then. An error when epoll
  // refuses the descriptor.
  absl::StatusOr<uint64_t> Add(int doorbell, std::shared_ptr<Member> member,
                               const Tenant& tenant);
  // Serves it no more; its doorbell leaves the epoll set (the caller may
  // close it now). A turn running or queued now may still run (it holds the
  // member).
  void Remove(uint64_t id);
  // Runs a turn of `id` soon, as if its doorbell had rung.
  void Wake(uint64_t id);
  // Runs `task` on a pool thread soon (work that must not run where it
  // arises, e.g. in a gRPC reaction), in `tenant`'s turn (Tenant(): acld's
  // own work, in uid 0's). Tasks must not block for long.
  void Post(std::function<void()> task, const Tenant& tenant = Tenant());

  // How many of a member's first turns go ahead of the run queue.
  static constexpr int kTurnsAhead = 8;
  // Turns taken ahead of the run queue in a row, at most, before one from it.
  static constexpr int kAheadInARow = 4;
  // How many times a turn serves a member whose doorbell rang during it
  // before it goes to the back of the run queue: a client ringing without
  // pause must not keep its turn for ever.
  static constexpr int kServesPerTurn = 4;

  size_t members() const;
  int threads() const { return static_cast<int>(threads_.size()); }

  // Whether turns or tasks wait for a thread now. A member polls for its
  // client's next request only when none do: a client cannot make a pool
  // thread spin for it while others wait (message_ring.h's polls last up to
  // 50 µs).
  bool OthersWaiting() const { return waiting_.load(std::memory_order_relaxed) > 0; }
  // OthersWaiting, after collecting the doorbells that rang since this pool
  // thread last looked (a member that keeps its turn for one more request
  // asks this: a thread in a turn does not see new doorbells otherwise).
  bool OthersRang();

 private:
  struct Entry {
    std::shared_ptr<Member> member;
    int doorbell = -1;
    // Set while a turn runs or is queued; `again` asks the turn to run once
    // more (its doorbell rang meanwhile).
    std::atomic<bool> scheduled{false};
    std::atomic<bool> again{false};
    // Turns run so far (counted up to kTurnsAhead).
    std::atomic<int> turns{0};
    Tenant tenant;
  };

  void Loop();
  // Queues a turn of `entry` unless one is queued or running already;
  // `on_pool_thread`: the caller is a pool thread about to take a task.
  void Schedule(const std::shared_ptr<Entry>& entry, bool on_pool_thread);
  void RunTurn(const std::shared_ptr<Entry>& entry);
  // Schedules the members whose doorbells `events` reported.
  void ScheduleRung(const epoll_event* events, int ready);
  // Puts a turn of `entry` in the run queue (a new member's ahead of it).
  void QueueTurnLocked(const std::shared_ptr<Entry>& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next turn or task to run (empty when none waits).
  std::function<void()> TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  size_t QueuedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ahead_.size() + runnable_.size();
  }
  // Wakes a thread sleeping in epoll (the run queue got work).
  void Poke();
  // Whether a pool thread sleeps in epoll, or is about to: only then does
  // new work need a Poke (each one is a system call, and under load every
  // thread is busy and takes the next turn from the queue anyway).
  bool AnyoneSleepsLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return sleeping_ > 0; }

  const int epoll_fd_;
  const int poke_fd_;  // an eventfd in the epoll set, for Poke
  const int stop_fd_;  // rung once, at destruction
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  hal::TurnQueue<Tenant, std::function<void()>> runnable_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> ahead_ ABSL_GUARDED_BY(mu_);  // new members' turns
  int ahead_in_a_row_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<size_t> waiting_{0};  // QueuedLocked(), read without the lock
  // Pool threads that found the run queue empty and sleep in epoll.
  int sleeping_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_CHANNEL_POOL_H_
