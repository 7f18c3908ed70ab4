// Completions waiting for a counter that only grows (a stream's finished
// tasks, an event's completed records) to reach a target, each with an
// optional timeout.
//
// Not synchronized: the owner calls every method under its own lock and runs
// the completions it gets back after unlocking. Every operation costs
// O(log n) per waiter it touches: one user's sessions may park a million
// waits on one shared event, and each timeout or finished task must not
// scan them all.
#ifndef ACLD_DAEMON_CORE_PROGRESS_WAITERS_H_
#define ACLD_DAEMON_CORE_PROGRESS_WAITERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hal/timer.h"

namespace acld {

class ProgressWaiters {
 public:
  using Done = std::function<void(absl::Status)>;

  explicit ProgressWaiters(hal::Timer& timer) : timer_(timer) {}

  // Waits for `target`; returns the waiter's id. With a finite `timeout`,
  // `on_timeout(id)` runs on the timer thread when it expires; the owner then
  // takes the waiter back with TakeTimedOut(id) under its lock (it may have
  // been reached meanwhile). `tag` names who waits, for TakeTagged (0: nobody
  // in particular).
  uint64_t Add(uint64_t target, absl::Duration timeout, Done done,
               std::function<void(uint64_t id)> on_timeout, uint64_t tag = 0);

  // The waiter `id`, if it is still waiting; nullptr otherwise.
  Done TakeTimedOut(uint64_t id);
  // The waiter `id` is not wanted any more (its task was discarded): it and
  // its timer, if it is still waiting, are forgotten.
  void Remove(uint64_t id);

  size_t size() const { return waiters_.size(); }

  // Every waiter whose target is at most `reached`, in the order they came.
  std::vector<Done> TakeReached(uint64_t reached);

  // Every waiter whose target is exactly `target`, in the order they came.
  std::vector<Done> TakeTarget(uint64_t target);

  // Every waiter.
  std::vector<Done> TakeAll();

  // Every waiter added with `tag` (nonzero), in the order they came.
  std::vector<Done> TakeTagged(uint64_t tag);

 private:
  struct Waiter {
    uint64_t target;
    Done done;
    hal::Timer::TimerId timer;  // 0: none
    uint64_t tag;
  };
  // Takes the waiters `ids` (sorted: the order they came), cancelling their timers.
  std::vector<Done> Take(const std::vector<uint64_t>& ids);

  hal::Timer& timer_;
  std::map<uint64_t, Waiter> waiters_;           // by id: the order they came
  std::set<std::pair<uint64_t, uint64_t>> by_target_;  // (target, id)
  uint64_t next_id_ = 1;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_PROGRESS_WAITERS_H_
