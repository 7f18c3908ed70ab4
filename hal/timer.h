// One thread that runs callbacks at given times, without a thread per waiter.
// The core has one for its timeouts (synchronizations, callbacks); each sim
// device has its own for the device's busy time, so device work never runs on
// the thread that serves timeouts.
#ifndef ACLD_HAL_TIMER_H_
#define ACLD_HAL_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace hal {

class Timer {
 public:
  using TimerId = uint64_t;

  Timer();
  // Runs nothing more; pending callbacks are dropped.
  ~Timer();

  // Runs `callback` on the timer thread at (or soon after) `when`.
  TimerId Schedule(absl::Time when, std::function<void()> callback);
  // True when the callback was still pending (it will not run).
  bool Cancel(TimerId id);

 private:
  void Loop();

  absl::Mutex mu_;
  // Ordered by (time, id): ties run in scheduling order.
  std::map<std::pair<absl::Time, TimerId>, std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  std::map<TimerId, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace hal

#endif  // ACLD_HAL_TIMER_H_
