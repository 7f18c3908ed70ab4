#include "daemon/core/device_share.h"

#include <utility>

namespace acld {

bool DeviceShare::TakeOrWait(bool may_be_held, bool stream_empty, Waiter waiter) {
  absl::MutexLock lock(&mu_);
  if (used_ < limit_ || (stream_empty && may_be_held_ > 0)) {
    ++used_;
    if (may_be_held) ++may_be_held_;
    return true;
  }
  if (waiter) waiters_.push_back(std::move(waiter));
  return false;
}

void DeviceShare::UseGrant(bool may_be_held) {
  if (!may_be_held) return;
  absl::MutexLock lock(&mu_);
  ++may_be_held_;
}

bool DeviceShare::Give(bool may_be_held) {
  absl::MutexLock lock(&mu_);
  if (may_be_held) --may_be_held_;
  if (waiters_.empty()) {
    --used_;
    return false;
  }
  return true;  // still taken, for the waiter HandOver finds
}

void DeviceShare::HandOver() {
  while (true) {
    Waiter waiter;
    {
      absl::MutexLock lock(&mu_);
      if (waiters_.empty()) {
        --used_;
        return;
      }
      waiter = std::move(waiters_.front());
      waiters_.pop_front();
    }
    if (waiter()) return;
  }
}

uint32_t DeviceShare::used() const {
  absl::MutexLock lock(&mu_);
  return used_;
}

}  // namespace acld
