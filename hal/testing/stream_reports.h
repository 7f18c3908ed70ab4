// What a hal::Stream reported (completions in order, callback points
// reached), and waiting for it: for the tests of backends.
#ifndef ACLD_HAL_TESTING_STREAM_REPORTS_H_
#define ACLD_HAL_TESTING_STREAM_REPORTS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/stream.h"

namespace hal::testing {

class StreamReports {
 public:
  // Stream options whose listeners record into this object.
  StreamOptions Options() {
    StreamOptions options;
    options.on_complete = [this](uint64_t sequence, const absl::Status& status) {
      absl::MutexLock lock(&mu_);
      completed_.emplace_back(sequence, status);
    };
    options.on_callback_point = [this](uint64_t sequence) {
      absl::MutexLock lock(&mu_);
      reached_.push_back(sequence);
    };
    return options;
  }

  // Waits until `count` items were reported; false after `timeout`.
  bool WaitForCompleted(size_t count, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return completed_.size() >= count;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  // Waits until `count` callback points were reached; false after `timeout`.
  bool WaitForReached(size_t count, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return reached_.size() >= count;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

  std::vector<std::pair<uint64_t, absl::Status>> completed() {
    absl::MutexLock lock(&mu_);
    return completed_;
  }
  std::vector<uint64_t> reached() {
    absl::MutexLock lock(&mu_);
    return reached_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::pair<uint64_t, absl::Status>> completed_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> reached_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::testing

#endif  // ACLD_HAL_TESTING_STREAM_REPORTS_H_
