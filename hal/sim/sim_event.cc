#include "hal/sim/sim_event.h"

#include <vector>

namespace hal::sim {

std::optional<int64_t> SimEvent::TimestampNanos() const {
  absl::MutexLock lock(&mu_);
  return timestamp_;
}

bool SimEvent::Complete() const {
  absl::MutexLock lock(&mu_);
  return done_through_ >= submitted_;
}

uint64_t SimEvent::AddRecord() {
  absl::MutexLock lock(&mu_);
  return ++submitted_;
}

uint64_t SimEvent::latest_record() const {
  absl::MutexLock lock(&mu_);
  return submitted_;
}

void SimEvent::CompleteRecord(uint64_t record, std::optional<int64_t> now_nanos) {
  std::vector<std::function<void()>> woken;
  {
    absl::MutexLock lock(&mu_);
    if (now_nanos.has_value()) timestamp_ = now_nanos;
    if (record <= done_through_) return;
    done_early_[record] = true;
    while (!done_early_.empty() && done_early_.begin()->first == done_through_ + 1) {
      done_early_.erase(done_early_.begin());
      ++done_through_;
    }
    auto end = waiters_.upper_bound(done_through_);
    for (auto it = waiters_.begin(); it != end; ++it) woken.push_back(std::move(it->second));
    waiters_.erase(waiters_.begin(), end);
  }
  for (auto& wake : woken) wake();
}

bool SimEvent::WaitFor(uint64_t target, std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  if (done_through_ >= target) return true;
  waiters_.emplace(target, std::move(wake));
  return false;
}

}  // namespace hal::sim
