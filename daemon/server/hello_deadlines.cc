#include "daemon/server/hello_deadlines.h"

#include "absl/time/clock.h"

namespace acld::server {

HelloDeadlines::HelloDeadlines() : thread_([this] { Loop(); }) {}

HelloDeadlines::~HelloDeadlines() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_.Signal();
  }
  thread_.join();
}

uint64_t HelloDeadlines::Arm(grpc::ServerContextBase* context, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  armed_[id] = {deadline, context};
  const bool earliest = order_.empty() || deadline < order_.begin()->first;
  order_.insert({deadline, id});
  if (earliest) changed_.Signal();
  return id;
}

bool HelloDeadlines::Disarm(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = armed_.find(id);
  if (it == armed_.end()) return false;  // fired
  order_.erase({it->second.first, id});
  armed_.erase(it);
  return true;
}

uint64_t HelloDeadlines::fired() const {
  absl::MutexLock lock(&mu_);
  return fired_;
}

void HelloDeadlines::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (order_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    const auto [deadline, id] = *order_.begin();
    if (absl::Now() < deadline) {
      changed_.WaitWithDeadline(&mu_, deadline);
      continue;
    }
    order_.erase(order_.begin());
    auto it = armed_.find(id);
    // Cancelled under the lock: Disarm (before the handler returns and its
    // context goes away) cannot pass this point meanwhile. TryCancel does
    // not block.
    it->second.second->TryCancel();
    armed_.erase(it);
    ++fired_;
  }
}

}  // namespace acld::server
