// A clock for tests that moves only when the test moves it: a Timer on it
// (hal/timer.h) runs a callback only once the test advanced past its time,
// so timeouts, deadlines and kernels' busy time are tested without sleeping.
#ifndef ACLD_HAL_TESTING_FAKE_CLOCK_H_
#define ACLD_HAL_TESTING_FAKE_CLOCK_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/clock.h"

namespace hal::testing {

class FakeClock final : public Clock {
 public:
  // Far from the host's time on purpose: a deadline computed from
  // absl::Now() by mistake never comes due on this clock.
  FakeClock() : nanos_(absl::ToUnixNanos(absl::UnixEpoch() + absl::Hours(24))) {}

  // Read from Timer's lock-held wait conditions: an atomic, never mu_.
  absl::Time Now() const override { return absl::FromUnixNanos(nanos_.load()); }

  // Moves the clock on by `delta`; returns once every timer on it has run
  // the callbacks due by the new time (work they hand to other threads may
  // still be under way). Not to be called from a timer's callback.
  void Advance(absl::Duration delta) {
    nanos_ += absl::ToInt64Nanoseconds(delta);
    absl::MutexLock lock(&mu_);
    for (Listener* listener : listeners_) listener->ClockMoved();
  }

  bool Subscribe(Listener* listener) override {
    absl::MutexLock lock(&mu_);
    listeners_.push_back(listener);
    return true;
  }

  void Unsubscribe(Listener* listener) override {
    absl::MutexLock lock(&mu_);
    listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), listener), listeners_.end());
  }

 private:
  std::atomic<int64_t> nanos_;
  absl::Mutex mu_;
  std::vector<Listener*> listeners_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::testing

#endif  // ACLD_HAL_TESTING_FAKE_CLOCK_H_
