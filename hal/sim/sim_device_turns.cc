#include "hal/sim/sim_device_turns.h"

#include <utility>

namespace hal::sim {

void SimDeviceTurns::Schedule(const std::string& owner, std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  waiting_.Push(owner, std::move(work));
  if (on_timer_) return;
  on_timer_ = true;
  timer_.Schedule(timer_.Now(), [this] { RunOne(); });
}

void SimDeviceTurns::RunOne() {
  std::function<void()> work;
  {
    absl::MutexLock lock(&mu_);
    work = waiting_.Pop();
  }
  work();
  absl::MutexLock lock(&mu_);
  if (waiting_.empty()) {
    on_timer_ = false;
    return;
  }
  timer_.Schedule(timer_.Now(), [this] { RunOne(); });
}

}  // namespace hal::sim
