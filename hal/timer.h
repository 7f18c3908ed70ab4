// One thread that runs callbacks at given times, without a thread per waiter
// (started when the first callback is scheduled).
// The core has one for its timeouts (synchronizations, callbacks); each sim
// device has its own for the device's busy time, so device work never runs on
// the thread that serves timeouts.
//
// Times are on the timer's clock (hal/clock.h): the host's, or in tests one
// the test moves itself.
#ifndef ACLD_HAL_TIMER_H_
#define ACLD_HAL_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "hal/clock.h"

namespace hal {

class Timer : private Clock::Listener {
 public:
  using TimerId = uint64_t;

  // `thread_name` (at most 15 characters) names its thread, for ps and tests;
  // empty: it keeps the name of the thread that started it (the first
  // Schedule's, which may be any).
  explicit Timer(Clock& clock = HostClock(), std::string thread_name = {});
  // Runs nothing more; pending callbacks are dropped.
  ~Timer();
  // Runs nothing more: waits for the callback running now, if any, and
  // drops the pending ones. For an owner whose other members the callbacks
  // use, before they go. Idempotent; not from a callback of this timer.
  void Stop();

  // The time on the timer's clock. With the host's clock this is absl::Now()
  // without a virtual call.
  absl::Time Now() const { return host_clock_ ? absl::Now() : clock_.Now(); }

  // Runs `callback` on the timer thread at (or soon after) `when`.
  TimerId Schedule(absl::Time when, std::function<void()> callback);
  // The same at Now() + `delay`.
  TimerId ScheduleIn(absl::Duration delay, std::function<void()> callback) {
    return Schedule(Now() + delay, std::move(callback));
  }
  // True when the callback was still pending (it will not run).
  bool Cancel(TimerId id);

 private:
  void Loop();
  // Clock::Listener, for a clock that moves only when told: wakes the loop
  // and returns once it has run what is due (at most 10 s later). Not to be
  // called from a callback of this timer.
  void ClockMoved() override;

  absl::Mutex mu_;
  // Ordered by (time, id): ties run in scheduling order.
  std::map<std::pair<absl::Time, TimerId>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<TimerId, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a callback runs (mu_ released)
  Clock& clock_;
  // After the state above: a clock may call ClockMoved as soon as this
  // subscribed.
  const bool host_clock_;
  const std::string thread_name_;
  std::thread thread_;  // started (under mu_) by the first Schedule
};

}  // namespace hal

#endif  // ACLD_HAL_TIMER_H_
