#include "hal/sim/sim_busy_meter.h"

#include <algorithm>

namespace hal::sim {

void BusyMeter::Enter(int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  if (running_++ == 0) busy_since_ = now_nanos;
}

void BusyMeter::Leave(int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  if (running_ == 0) return;
  if (--running_ == 0) busy_total_ += std::max<int64_t>(0, now_nanos - busy_since_);
}

int64_t BusyMeter::BusyThroughLocked(int64_t now_nanos) const {
  return busy_total_ + (running_ > 0 ? std::max<int64_t>(0, now_nanos - busy_since_) : 0);
}

int32_t BusyMeter::Percent(int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  const int64_t busy = BusyThroughLocked(now_nanos);
  const int64_t elapsed = now_nanos - window_start_;
  if (elapsed >= kWindowNanos) {
    last_percent_ = static_cast<int32_t>(
        std::min<int64_t>(100, (busy - window_busy_start_) * 100 / elapsed));
    window_start_ = now_nanos;
    window_busy_start_ = busy;
    return last_percent_;
  }
  if (last_percent_ >= 0) return last_percent_;
  if (elapsed <= 0) return 0;
  return static_cast<int32_t>(std::min<int64_t>(100, (busy - window_busy_start_) * 100 / elapsed));
}

}  // namespace hal::sim
