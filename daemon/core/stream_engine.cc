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
  if (queue.ready++ == 0) {
    auto tenant = tenants_.find(session);
    queue.tenant = tenant == tenants_.end() ? Tenant() : tenant->second;
    std::deque<SessionId>& sessions = ready_sessions_[queue.tenant];
    if (sessions.empty()) tenant_order_.push_back(queue.tenant);
    sessions.push_back(session);
  }
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

void StreamEngine::SetTenant(SessionId session, const Tenant& tenant) {
  absl::MutexLock lock(&mu_);
  tenants_[session] = tenant;
}

void StreamEngine::ForgetSession(SessionId session) {
  absl::MutexLock lock(&mu_);
  weights_.erase(session);
  tenants_.erase(session);
}

uint32_t StreamEngine::WeightLocked(SessionId session) const {
  auto it = weights_.find(session);
  return it == weights_.end() ? 1 : it->second;
}

bool StreamEngine::HasWorkLocked() const {
  return !posted_.empty() || !tenant_order_.empty();
}

std::shared_ptr<Stream> StreamEngine::NextStreamLocked() {
  if (tenant_order_.empty()) return nullptr;
  auto tenant = ready_sessions_.find(tenant_order_.front());
  std::deque<SessionId>& sessions = tenant->second;
  const SessionId session = sessions.front();
  auto queued = ready_.find(session);
  SessionQueue& queue = queued->second;
  auto highest = queue.streams.begin();
  std::shared_ptr<Stream> stream = std::move(highest->second.front());
  highest->second.pop_front();
  if (highest->second.empty()) queue.streams.erase(highest);
  if (queue.turns_left == 0) queue.turns_left = WeightLocked(session);
  --queue.turns_left;
  if (--queue.ready == 0) {
    sessions.pop_front();
    ready_.erase(queued);
  } else if (queue.turns_left == 0) {
    sessions.pop_front();
    sessions.push_back(session);
  } else {
    return stream;  // the session's turn, and so its tenant's, goes on
  }
  // The session's turn is over, and with it its tenant's: the next tenant's.
  tenant_order_.pop_front();
  if (sessions.empty()) {
    ready_sessions_.erase(tenant);
  } else {
    tenant_order_.push_back(tenant->first);
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
