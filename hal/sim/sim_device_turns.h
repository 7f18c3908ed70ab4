// The sim device's own thread, shared between the owners of its streams (the
// core names each stream's tenant: hal::StreamOptions::owner).
//
// Work a stream leaves to the device's thread (the rest of a backlog or of a
// large copy, a slice at a time; what follows a busy kernel's end or a
// released wait) waits in its owner's queue, and owners take turns, one
// piece of work each. Each turn is put on the device's timer when the last
// one ended, behind the timers already due: a busy kernel's time is up when
// it is (the device's timer marks it), and what follows runs in its turn. Before, each piece was a timer entry of its own,
// first come first served: a tenant with thousands of streams with backlogs
// made every other tenant's next slice wait for thousands of slices.
#ifndef ACLD_HAL_SIM_SIM_DEVICE_TURNS_H_
#define ACLD_HAL_SIM_SIM_DEVICE_TURNS_H_

#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "hal/timer.h"
#include "hal/turn_queue.h"

namespace hal::sim {

class SimDeviceTurns {
 public:
  // `timer`: the device's, which must stop (be destroyed) before this goes.
  explicit SimDeviceTurns(Timer& timer) : timer_(timer) {}

  // Runs `work` on the device's thread in `owner`'s next turn.
  void Schedule(const std::string& owner, std::function<void()> work);

 private:
  void RunOne();

  Timer& timer_;
  absl::Mutex mu_;
  TurnQueue<std::string, std::function<void()>> waiting_ ABSL_GUARDED_BY(mu_);
  bool on_timer_ ABSL_GUARDED_BY(mu_) = false;  // a RunOne is scheduled or running
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_DEVICE_TURNS_H_
