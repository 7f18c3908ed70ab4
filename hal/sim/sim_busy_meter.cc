#include "hal/sim/sim_busy_meter.h"

#include <algorithm>

namespace hal::sim {

namespace {

// How much of [begin, end) lies within [low, high).
int64_t Overlap(int64_t begin, int64_t end, int64_t low, int64_t high) {
  return std::max<int64_t>(0, std::min(end, high) - std::max(begin, low));
}

}  // namespace

void BusyMeter::AdvanceLocked(int64_t now_nanos) {
  const int64_t second = now_nanos / kWindowNanos;
  if (second <= second_) return;  // the same second (or a clock that stepped back)
  busy_previous_second_ = second == second_ + 1 ? busy_this_second_ : 0;
  busy_this_second_ = 0;
  second_ = second;
}

void BusyMeter::Enter(int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  if (running_++ == 0) busy_since_ = now_nanos;
}

void BusyMeter::Leave(int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  if (running_ == 0) return;
  if (--running_ > 0) return;
  AdvanceLocked(now_nanos);
  const int64_t start = second_ * kWindowNanos;
  busy_this_second_ += Overlap(busy_since_, now_nanos, start, start + kWindowNanos);
  busy_previous_second_ += Overlap(busy_since_, now_nanos, start - kWindowNanos, start);
}

int32_t BusyMeter::Percent(int64_t now_nanos) {
  absl::MutexLock lock(&mu_);
  AdvanceLocked(now_nanos);
  const int64_t start = second_ * kWindowNanos;
  const int64_t running_since = running_ > 0 ? busy_since_ : now_nanos;
  int64_t busy, elapsed;
  if (created_ <= start - kWindowNanos) {  // the previous second is a full one
    busy = busy_previous_second_ + Overlap(running_since, now_nanos, start - kWindowNanos, start);
    elapsed = kWindowNanos;
  } else {  // the meter is younger: all it saw lies in these two seconds
    busy = busy_previous_second_ + busy_this_second_ +
           Overlap(running_since, now_nanos, created_, now_nanos);
    elapsed = now_nanos - created_;
  }
  if (elapsed <= 0) return 0;
  return static_cast<int32_t>(std::min<int64_t>(100, busy * 100 / elapsed));
}

}  // namespace hal::sim
