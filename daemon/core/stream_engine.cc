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
  SessionQueue& queue = ready_[session];
  if (queue.ready++ == 0) order_.push_back(session);
  queue.streams[std::min<uint32_t>(priority, kPriorities - 1)].push_back(std::move(stream));
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
  return !posted_.empty() || !order_.empty();
}

std::shared_ptr<Stream> StreamEngine::NextStreamLocked() {
  if (order_.empty()) return nullptr;
  const SessionId session = order_.front();
  SessionQueue& queue = ready_[session];
  auto& streams = *std::find_if(queue.streams.begin(), queue.streams.end(),
                                [](const auto& level) { return !level.empty(); });
  std::shared_ptr<Stream> stream = std::move(streams.front());
  streams.pop_front();
  if (queue.turns_left == 0) queue.turns_left = WeightLocked(session);
  --queue.turns_left;
  if (--queue.ready == 0) {
    order_.pop_front();
    ready_.erase(session);
  } else if (queue.turns_left == 0) {
    order_.pop_front();
    order_.push_back(session);  // its round is over: the next session's turn
  }
  return stream;
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
