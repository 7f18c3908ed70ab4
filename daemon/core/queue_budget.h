// How many bytes of queued work one session may make the daemon hold: tasks
// waiting on its streams (their records, inline data, kernel arguments).
//
// Over the limit an asynchronous call waits for room, as a launch into a full
// device queue does; nothing fails. In embedded mode the application's thread
// blocks in Charge. In acld no thread may: the threads that read requests
// serve every session, and one session's full queue must not freeze the
// others. There the reader asks first (AwaitRoom) and, while the budget is
// full, reads none of the session's requests until called back; the client
// then waits for room in its own channel, which stalls only itself. A
// workload that cannot make room by itself (its streams wait on work it has
// not sent yet) would wait forever, so after `patience` without room calls
// go ahead anyway up to a hard ceiling of twice the limit; only past it do
// they fail.
//
// In acld the sessions of one tenant (tenant.h) also share a TenantQueue:
// per session alone, one user's 256 sessions could make acld hold 256 times
// the limit. A session whose tenant is at the shared limit waits for room as
// if its own budget were full, and is woken when any of the tenant's queued
// work drains; the same patience and twice-the-limit ceiling apply.
#ifndef ACLD_DAEMON_CORE_QUEUE_BUDGET_H_
#define ACLD_DAEMON_CORE_QUEUE_BUDGET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/timer.h"

namespace acld {

class QueueBudget;

// What all sessions of one tenant have queued, against their shared limit.
class TenantQueue {
 public:
  // `limit` 0: no limit.
  explicit TenantQueue(uint64_t limit) : limit_(limit) {}

  bool Full() const;
  // Charges `bytes` unless that passes twice the limit (the error says whose).
  absl::Status Charge(uint64_t bytes, const std::string& tenant);
  // Gives `bytes` back; below the limit, every budget that waits for room
  // hears of it.
  void Release(uint64_t bytes);
  // While full: `budget` hears of the next room (once). False when not full.
  bool WaitIfFull(std::weak_ptr<QueueBudget> budget);

  uint64_t used() const;
  uint64_t limit() const { return limit_; }
  // Budgets listed to hear of room (ended sessions' until the next wait).
  size_t listed_waiters() const;

 private:
  const uint64_t limit_;
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::weak_ptr<QueueBudget>> waiting_ ABSL_GUARDED_BY(mu_);
};

class QueueBudget : public std::enable_shared_from_this<QueueBudget> {
 public:
  // What a queued task costs beyond its payload: its record, closures,
  // bookkeeping (a kernel launch measured about 450 bytes in acld).
  static constexpr uint64_t kTaskOverheadBytes = 512;

  // `limit` 0: no limit. `timer` (acld's) times the patience of AwaitRoom;
  // without one Charge waits for room itself (embedded mode).
  // `tenant` (acld only, with a timer): the limit this session shares with
  // its tenant's other sessions, `tenant_name` saying whose it is.
  explicit QueueBudget(uint64_t limit, absl::Duration patience = absl::Seconds(10),
                       hal::Timer* timer = nullptr, std::shared_ptr<TenantQueue> tenant = nullptr,
                       std::string tenant_name = "")
      : limit_(limit),
        patience_(patience),
        timer_(timer),
        tenant_(timer == nullptr ? nullptr : std::move(tenant)),
        tenant_name_(std::move(tenant_name)) {}

  // Charges `bytes`; the charge is given back when the returned hold is
  // destroyed. Without a timer it first waits for room (see the top).
  // ACL_ERROR_RT_MEMORY_ALLOCATION past the ceiling; ACL_ERROR_RT_SOCKET_CLOSE
  // once the budget is closed.
  absl::StatusOr<std::shared_ptr<void>> Charge(uint64_t bytes);

  // Without waiting: false when work may be taken now. True when the budget
  // is full: `on_room` then runs once, on another thread, when there is room,
  // when the patience ran out (later charges go on, as Charge's wait does),
  // or when the budget is closed. One caller at a time (a session's reader);
  // a later call replaces an earlier `on_room` not yet run. Only with a timer.
  bool AwaitRoom(std::function<void()> on_room);

  // The session ended: waiters and later charges fail at once.
  void Close();

  uint64_t used() const;
  uint64_t limit() const { return limit_; }

  // The tenant's queue has room again (TenantQueue::Release).
  void TenantRoom();

 private:
  void Release(uint64_t bytes);
  bool FullLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return limit_ != 0 && used_ >= limit_ && !overdrawn_ && !closed_;
  }
  // AwaitRoom's patience ran out.
  void PatienceEnded(uint64_t waiter);
  // The waiting reader's callback, taken to be run outside the lock.
  std::function<void()> TakeWaiterLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t limit_;
  const absl::Duration patience_;
  hal::Timer* const timer_;
  const std::shared_ptr<TenantQueue> tenant_;  // none: only this session's limit
  const std::string tenant_name_;
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool overdrawn_ ABSL_GUARDED_BY(mu_) = false;  // waited in vain; cleared below the limit
  std::function<void()> on_room_ ABSL_GUARDED_BY(mu_);  // AwaitRoom's, not run yet
  uint64_t waiter_ ABSL_GUARDED_BY(mu_) = 0;  // numbers AwaitRoom's waits
  hal::Timer::TimerId patience_timer_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_QUEUE_BUDGET_H_
