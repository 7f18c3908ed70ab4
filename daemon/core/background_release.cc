#include "daemon/core/background_release.h"

#include <utility>

namespace acld {

BackgroundRelease::~BackgroundRelease() {
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

void BackgroundRelease::Release(std::vector<std::shared_ptr<void>> memory) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      queued_ += memory.size();
      queue_.push_back(std::move(memory));
      if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
      return;
    }
  }
  memory.clear();  // stopping: here, without the lock
}

size_t BackgroundRelease::queued() const {
  absl::MutexLock lock(&mu_);
  return queued_;
}

void BackgroundRelease::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(
        +[](BackgroundRelease* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return self->stopping_ || !self->queue_.empty();
        },
        this));
    if (queue_.empty()) return;  // stopping, and nothing left
    std::vector<std::shared_ptr<void>> memory = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    const size_t pieces = memory.size();
    memory.clear();  // each piece's release may take other locks: not under mu_
    mu_.Lock();
    queued_ -= pieces;
  }
}

}  // namespace acld
