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
  // What a percentage covers: the latest full wall-clock second before now
  // (before the meter's first full second is over: the time since it began).
  // Asked rarely or often, the figure is that second's: it does not average
  // over the time since the last question.
  static constexpr int64_t kWindowNanos = 1000000000;

  explicit BusyMeter(int64_t now_nanos) : created_(now_nanos), second_(now_nanos / kWindowNanos) {}

  // A busy kernel starts or ends (every Enter is matched by one Leave).
  void Enter(int64_t now_nanos);
  void Leave(int64_t now_nanos);

  // 0..100.
  int32_t Percent(int64_t now_nanos);

 private:
  // Moves the current second to now's: what the current one held becomes
  // the previous one's, if it is the second just before.
  void AdvanceLocked(int64_t now_nanos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const int64_t created_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t busy_since_ ABSL_GUARDED_BY(mu_) = 0;  // when running_ became > 0
  // Busy time of closed intervals within the current second (`second_`,
  // counted in seconds since the clock's epoch) and within the one before.
  int64_t second_ ABSL_GUARDED_BY(mu_);
  int64_t busy_this_second_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t busy_previous_second_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_BUSY_METER_H_
