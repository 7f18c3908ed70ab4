#include "hal/timer.h"

#include <pthread.h>

#include <utility>

namespace hal {

Timer::Timer(Clock& clock, std::string thread_name)
    : clock_(clock), host_clock_(!clock.Subscribe(this)), thread_name_(std::move(thread_name)) {}

Timer::~Timer() {
  // First, so that the clock never tells a timer that is going away.
  clock_.Unsubscribe(this);
  Stop();
}

void Timer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

Timer::TimerId Timer::Schedule(absl::Time when, std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  // The thread starts with the first callback: a timer that never gets one
  // (a sim device whose kernels never wait) costs no thread.
  if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Loop(); });
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

void Timer::ClockMoved() {
  absl::MutexLock lock(&mu_);
  // Releasing mu_ in the wait re-evaluates the loop's wait, which reads the
  // clock: that is what wakes it.
  auto caught_up = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ ||
           (!running_ && (pending_.empty() || pending_.begin()->first.first > clock_.Now()));
  };
  mu_.AwaitWithTimeout(absl::Condition(&caught_up), absl::Seconds(10));
}

void Timer::Loop() {
  if (!thread_name_.empty()) pthread_setname_np(pthread_self(), thread_name_.substr(0, 15).c_str());
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
    if (Now() < next) {
      // Wake at `next`, or earlier when something sooner is scheduled or we
      // stop. Not when a later one is scheduled or one is cancelled: a user
      // that schedules a timeout per operation and cancels it (callbacks
      // waiting for their answer) would wake this thread twice per operation.
      auto changed = [this, next]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || (!pending_.empty() && pending_.begin()->first.first < next);
      };
      if (host_clock_) {
        mu_.AwaitWithDeadline(absl::Condition(&changed), next);
      } else {
        // The clock moves only when told; ClockMoved wakes this wait.
        auto due_or_changed = [this, next, &changed]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return changed() || clock_.Now() >= next;
        };
        mu_.Await(absl::Condition(&due_or_changed));
      }
      continue;
    }
    auto due = pending_.begin();
    std::function<void()> callback = std::move(due->second);
    when_.erase(due->first.second);
    pending_.erase(due);
    running_ = true;
    mu_.Unlock();
    callback();
    mu_.Lock();
    running_ = false;
  }
}

}  // namespace hal
