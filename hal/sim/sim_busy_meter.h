// How much of the time a sim device was computing: the share of wall-clock
// time during which at least one of its streams ran a busy kernel
// (hal::DeviceUtilization::compute_percent). Overlapping kernels count once,
// as a real device's utilization saturates at 100%.
#ifndef ACLD_HAL_SIM_SIM_BUSY_METER_H_
#define ACLD_HAL_SIM_SIM_BUSY_METER_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace hal::sim {

class BusyMeter {
 public:
  // The window a percentage covers: the latest full second (the elapsed time
  // so far, before the first second is over).
  static constexpr int64_t kWindowNanos = 1000000000;

  explicit BusyMeter(int64_t now_nanos) : window_start_(now_nanos) {}

  // A busy kernel starts or ends (every Enter is matched by one Leave).
  void Enter(int64_t now_nanos);
  void Leave(int64_t now_nanos);

  // 0..100.
  int32_t Percent(int64_t now_nanos);

 private:
  int64_t BusyThroughLocked(int64_t now_nanos) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t busy_since_ ABSL_GUARDED_BY(mu_) = 0;  // when running_ became > 0
  int64_t busy_total_ ABSL_GUARDED_BY(mu_) = 0;  // closed busy intervals, in ns
  // The current window: where it starts, and the busy total then.
  int64_t window_start_ ABSL_GUARDED_BY(mu_);
  int64_t window_busy_start_ ABSL_GUARDED_BY(mu_) = 0;
  // The last full window's figure (-1: none yet).
  int32_t last_percent_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_BUSY_METER_H_
