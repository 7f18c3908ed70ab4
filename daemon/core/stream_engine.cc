#include "daemon/core/stream_engine.h"

#include <algorithm>

#include "daemon/core/stream.h"

namespace acld {

StreamEngine::StreamEngine(int workers) {
  for (int i = 0; i < std::max(1, workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void StreamEngine::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void StreamEngine::MakeReady(std::shared_ptr<Stream> stream, uint32_t priority) {
  absl::MutexLock lock(&mu_);
  ready_[std::min<uint32_t>(priority, kPriorities - 1)].push_back(std::move(stream));
}

bool StreamEngine::HasWorkLocked() const {
  for (const auto& queue : ready_) {
    if (!queue.empty()) return true;
  }
  return false;
}

void StreamEngine::WorkerLoop() {
  while (true) {
    std::shared_ptr<Stream> stream;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](StreamEngine* engine) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine->mu_) {
            return engine->stopping_ || engine->HasWorkLocked();
          },
          this));
      if (stopping_) return;
      for (auto& queue : ready_) {
        if (queue.empty()) continue;
        stream = std::move(queue.front());
        queue.pop_front();
        break;
      }
    }
    stream->RunSome();
  }
}

}  // namespace acld
