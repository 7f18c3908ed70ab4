// The time a Timer (hal/timer.h) runs its callbacks by. Production uses the
// host's clock; a test passes a clock it moves itself (hal/testing/fake_clock.h)
// so that timeouts, deadlines and kernels' busy time pass without sleeping.
#ifndef ACLD_HAL_CLOCK_H_
#define ACLD_HAL_CLOCK_H_

#include "absl/time/time.h"

namespace hal {

class Clock {
 public:
  // What waits for a clock that moves only when told (a Timer).
  class Listener {
   public:
    // The clock moved on. Returns once what was due by the new time has been
    // done (or after a bounded wait), so a test that moved the clock knows
    // the callbacks due by then have run.
    virtual void ClockMoved() = 0;

   protected:
    ~Listener() = default;
  };

  virtual ~Clock() = default;

  virtual absl::Time Now() const = 0;

  // False for the host's clock: its time passes by itself, so a waiter
  // sleeps until its deadline and needs no telling. Otherwise the clock calls
  // `listener->ClockMoved()` whenever it moves, until Unsubscribe.
  virtual bool Subscribe(Listener* listener) = 0;
  virtual void Unsubscribe(Listener* listener) = 0;
};

// absl::Now(); subscribing is a no-op.
Clock& HostClock();

}  // namespace hal

#endif  // ACLD_HAL_CLOCK_H_
