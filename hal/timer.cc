#include "hal/timer.h"

#include "absl/time/clock.h"

namespace hal {

Timer::Timer() : thread_([this] { Loop(); }) {}

Timer::~Timer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

Timer::TimerId Timer::Schedule(absl::Time when, std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  const TimerId id = next_id_++;
  pending_.emplace(std::make_pair(when, id), std::move(callback));
  when_.emplace(id, when);
  return id;
}

bool Timer::Cancel(TimerId id) {
  absl::MutexLock lock(&mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return false;
  pending_.erase({it->second, id});
  when_.erase(it);
  return true;
}

void Timer::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      mu_.Await(absl::Condition(
          +[](Timer* timer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(timer->mu_) {
            return timer->stopping_ || !timer->pending_.empty();
          },
          this));
      continue;
    }
    const absl::Time next = pending_.begin()->first.first;
    if (absl::Now() < next) {
      // Wake at `next`, or earlier when something sooner is scheduled or we stop.
      const size_t count = pending_.size();
      auto changed = [this, next, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || pending_.size() != count ||
               (!pending_.empty() && pending_.begin()->first.first < next);
      };
      mu_.AwaitWithDeadline(absl::Condition(&changed), next);
      continue;
    }
    auto due = pending_.begin();
    std::function<void()> callback = std::move(due->second);
    when_.erase(due->first.second);
    pending_.erase(due);
    mu_.Unlock();
    callback();
    mu_.Lock();
  }
}

}  // namespace hal
