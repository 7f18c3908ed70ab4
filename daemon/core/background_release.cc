#include "daemon/core/background_release.h"

#include <system_error>
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
    if (!stopping_ && running_) {
      queued_ += memory.size();
      queue_.push_back(std::move(memory));
      return;
    }
    if (!stopping_) {
      // The last thread left Loop (it takes mu_ no more): joined at once.
      if (thread_.joinable()) thread_.join();
      try {
        thread_ = std::thread([this] { Loop(); });
        running_ = true;
        queued_ += memory.size();
        queue_.push_back(std::move(memory));
        return;
      } catch (const std::system_error&) {
        // No thread to be had: released here.
      }
    }
  }
  memory.clear();  // here, without the lock
}

size_t BackgroundRelease::queued() const {
  absl::MutexLock lock(&mu_);
  return queued_;
}

void BackgroundRelease::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (queue_.empty()) {  // nothing left: the next release starts a thread again
      running_ = false;
      return;
    }
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
