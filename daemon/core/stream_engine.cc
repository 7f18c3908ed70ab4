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
  const SessionId session = stream->options().session;
  absl::MutexLock lock(&mu_);
  Level& level = levels_[std::min<uint32_t>(priority, kPriorities - 1)];
  SessionQueue& queue = level.sessions[session];
  if (queue.streams.empty()) level.order.push_back(session);
  queue.streams.push_back(std::move(stream));
}

void StreamEngine::Post(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  posted_.push_back(std::move(work));
}

void StreamEngine::SetWeight(SessionId session, uint32_t weight) {
  absl::MutexLock lock(&mu_);
  weights_[session] = std::max<uint32_t>(weight, 1);
}

void StreamEngine::ForgetSession(SessionId session) {
  absl::MutexLock lock(&mu_);
  weights_.erase(session);
}

uint32_t StreamEngine::WeightLocked(SessionId session) const {
  auto it = weights_.find(session);
  return it == weights_.end() ? 1 : it->second;
}

bool StreamEngine::HasWorkLocked() const {
  if (!posted_.empty()) return true;
  for (const Level& level : levels_) {
    if (!level.order.empty()) return true;
  }
  return false;
}

std::shared_ptr<Stream> StreamEngine::NextStreamLocked() {
  for (Level& level : levels_) {
    if (level.order.empty()) continue;
    const SessionId session = level.order.front();
    SessionQueue& queue = level.sessions[session];
    std::shared_ptr<Stream> stream = std::move(queue.streams.front());
    queue.streams.pop_front();
    if (queue.turns_left == 0) queue.turns_left = WeightLocked(session);
    --queue.turns_left;
    if (queue.streams.empty()) {
      level.order.pop_front();
      level.sessions.erase(session);
    } else if (queue.turns_left == 0) {
      level.order.pop_front();
      level.order.push_back(session);  // its round is over: the next session's turn
    }
    return stream;
  }
  return nullptr;
}

void StreamEngine::WorkerLoop() {
  while (true) {
    std::shared_ptr<Stream> stream;
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](StreamEngine* engine) ABSL_EXCLUSIVE_LOCKS_REQUIRED(engine->mu_) {
            return engine->stopping_ || engine->HasWorkLocked();
          },
          this));
      if (stopping_) return;
      if (!posted_.empty()) {
        work = std::move(posted_.front());
        posted_.pop_front();
      } else {
        stream = NextStreamLocked();
      }
    }
    if (work) {
      work();
    } else {
      stream->RunSome();
    }
  }
}

}  // namespace acld
