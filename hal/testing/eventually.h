// Waiting in tests for state of other threads that offers nothing to wait on
// (a stream's stats, a device's used bytes): polled, within a bound.
#ifndef ACLD_HAL_TESTING_EVENTUALLY_H_
#define ACLD_HAL_TESTING_EVENTUALLY_H_

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hal::testing {

// True once `condition` holds; false if it still does not after `limit`.
inline bool Eventually(const std::function<bool()>& condition,
                       absl::Duration limit = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + limit;
  while (!condition()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

}  // namespace hal::testing

#endif  // ACLD_HAL_TESTING_EVENTUALLY_H_
