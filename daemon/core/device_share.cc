#include "daemon/core/device_share.h"

#include <algorithm>
#include <utility>

namespace acld {

DeviceShare::Taken DeviceShare::CountLocked(bool may_be_held) {
  if (!may_be_held) return Taken::kYes;
  ++may_be_held_;
  return may_be_held_ == 1 && !waiters_.empty() ? Taken::kYesAskWaitersAgain : Taken::kYes;
}

DeviceShare::Taken DeviceShare::TakeOrWait(bool may_be_held, bool stream_empty,
                                           absl::FunctionRef<Waiter()> waiter_if_full) {
  absl::MutexLock lock(&mu_);
  if (used_ < limit_ || (stream_empty && may_be_held_ > 0)) {
    ++used_;
    return CountLocked(may_be_held);
  }
  Waiter waiter = waiter_if_full();
  if (waiter.call) {
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [](const Waiter& queued) { return queued.gone && queued.gone(); }),
                   waiters_.end());
    waiters_.push_back(std::move(waiter));
  }
  return Taken::kNo;
}

DeviceShare::Taken DeviceShare::UseGrant(bool may_be_held) {
  absl::MutexLock lock(&mu_);
  return CountLocked(may_be_held);
}

bool DeviceShare::Give(bool may_be_held) {
  absl::MutexLock lock(&mu_);
  --used_;
  if (may_be_held) --may_be_held_;
  return !waiters_.empty() && used_ <= limit_ / 2;
}

void DeviceShare::HandOver() {
  while (true) {
    Waiter waiter;
    {
      absl::MutexLock lock(&mu_);
      if (waiters_.empty()) return;
      waiter = std::move(waiters_.front());
      waiters_.pop_front();
      ++used_;  // the waiter's, if it keeps it
    }
    if (waiter.call(/*granted=*/true)) return;
    absl::MutexLock lock(&mu_);
    --used_;
  }
}

void DeviceShare::AskWaitersAgain() {
  std::deque<Waiter> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters.swap(waiters_);
  }
  for (Waiter& waiter : waiters) waiter.call(/*granted=*/false);
}

uint32_t DeviceShare::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

size_t DeviceShare::waiting() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

}  // namespace acld
