#include "daemon/core/progress_waiters.h"

#include <algorithm>

namespace acld {

uint64_t ProgressWaiters::Add(uint64_t target, absl::Duration timeout, Done done,
                              std::function<void(uint64_t id)> on_timeout, uint64_t tag) {
  const uint64_t id = next_id_++;
  hal::Timer::TimerId timer = 0;
  if (timeout != absl::InfiniteDuration() && on_timeout) {
    timer =
        timer_.ScheduleIn(timeout, [id, on_timeout = std::move(on_timeout)] { on_timeout(id); });
  }
  waiters_.push_back(Waiter{id, target, std::move(done), timer, tag});
  return id;
}

std::vector<ProgressWaiters::Waiter>::iterator ProgressWaiters::Find(uint64_t id) {
  return std::find_if(waiters_.begin(), waiters_.end(),
                      [id](const Waiter& waiter) { return waiter.id == id; });
}

ProgressWaiters::Done ProgressWaiters::TakeTimedOut(uint64_t id) {
  auto it = Find(id);
  if (it == waiters_.end()) return nullptr;
  Done done = std::move(it->done);
  waiters_.erase(it);
  return done;
}

void ProgressWaiters::Remove(uint64_t id) {
  auto it = Find(id);
  if (it == waiters_.end()) return;
  if (it->timer != 0) timer_.Cancel(it->timer);
  waiters_.erase(it);
}

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeReached(uint64_t reached) {
  return TakeIf([reached](const Waiter& waiter) { return waiter.target <= reached; });
}

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeAll() { return TakeReached(UINT64_MAX); }

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeTagged(uint64_t tag) {
  if (tag == 0) return {};
  return TakeIf([tag](const Waiter& waiter) { return waiter.tag == tag; });
}

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeIf(
    const std::function<bool(const Waiter&)>& taken) {
  // One pass that keeps the rest in order: erasing one by one would make a
  // stream with many waiters quadratic, under its lock.
  // Asked as every task finishes: with nobody taken (a synchronization
  // waiting for the last of many tasks), nothing is rebuilt.
  if (std::none_of(waiters_.begin(), waiters_.end(), taken)) return {};
  std::vector<Done> ready;
  std::vector<Waiter> waiting;
  for (Waiter& waiter : waiters_) {
    if (!taken(waiter)) {
      waiting.push_back(std::move(waiter));
      continue;
    }
    if (waiter.timer != 0) timer_.Cancel(waiter.timer);
    ready.push_back(std::move(waiter.done));
  }
  waiters_ = std::move(waiting);
  return ready;
}

}  // namespace acld
