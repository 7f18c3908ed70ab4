#include "daemon/server/long_calls.h"

#include <utility>
#include <vector>

namespace acld::server {

LongCalls::LongCalls(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

LongCalls::~LongCalls() {
  std::vector<std::function<void()>> dropped;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    while (!queue_.empty()) dropped.push_back(queue_.Pop());
  }
  dropped.clear();  // what they hold goes now, without the lock
  for (std::thread& thread : threads_) thread.join();
}

void LongCalls::Run(const Tenant& tenant, std::function<void()> call) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  queue_.Push(tenant, std::move(call));
}

size_t LongCalls::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void LongCalls::Loop() {
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  };
  for (;;) {
    std::function<void()> call;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) return;
      call = queue_.Pop();
    }
    call();
  }
}

}  // namespace acld::server
