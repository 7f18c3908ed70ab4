// Completions waiting for a counter that only grows (a stream's finished
// tasks, an event's completed records) to reach a target, each with an
// optional timeout.
//
// Not synchronized: the owner calls every method under its own lock and runs
// the completions it gets back after unlocking.
#ifndef ACLD_DAEMON_CORE_PROGRESS_WAITERS_H_
#define ACLD_DAEMON_CORE_PROGRESS_WAITERS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hal/timer.h"

namespace acld {

class ProgressWaiters {
 public:
  using Done = std::function<void(absl::Status)>;

  explicit ProgressWaiters(hal::Timer& timer) : timer_(timer) {}

  // Waits for `target`. With a finite `timeout`, `on_timeout(id)` runs on the
  // timer thread when it expires; the owner then takes the waiter back with
  // TakeTimedOut(id) under its lock (it may have been reached meanwhile).
  void Add(uint64_t target, absl::Duration timeout, Done done,
           std::function<void(uint64_t id)> on_timeout);

  // The waiter `id`, if it is still waiting; nullptr otherwise.
  Done TakeTimedOut(uint64_t id);

  // Every waiter whose target is at most `reached`, in the order they came.
  std::vector<Done> TakeReached(uint64_t reached);

  // Every waiter.
  std::vector<Done> TakeAll();

 private:
  struct Waiter {
    uint64_t id;
    uint64_t target;
    Done done;
    hal::Timer::TimerId timer;  // 0: none
  };

  hal::Timer& timer_;
  std::vector<Waiter> waiters_;
  uint64_t next_id_ = 1;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_PROGRESS_WAITERS_H_
