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
  waiters_.emplace(id, Waiter{target, std::move(done), timer, tag});
  by_target_.emplace(target, id);
  return id;
}

ProgressWaiters::Done ProgressWaiters::TakeTimedOut(uint64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return nullptr;
  Done done = std::move(it->second.done);
  by_target_.erase({it->second.target, id});
  waiters_.erase(it);
  return done;
}

void ProgressWaiters::Remove(uint64_t id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  if (it->second.timer != 0) timer_.Cancel(it->second.timer);
  by_target_.erase({it->second.target, id});
  waiters_.erase(it);
}

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeReached(uint64_t reached) {
  // Asked as every task finishes: with nobody reached (a synchronization
  // waiting for the last of many tasks), one look at the lowest target.
  std::vector<uint64_t> ids;
  for (auto it = by_target_.begin(); it != by_target_.end() && it->first <= reached; ++it) {
    ids.push_back(it->second);
  }
  std::sort(ids.begin(), ids.end());
  return Take(ids);
}

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeTarget(uint64_t target) {
  std::vector<uint64_t> ids;
  for (auto it = by_target_.lower_bound({target, 0}); it != by_target_.end() && it->first == target;
       ++it) {
    ids.push_back(it->second);
  }
  return Take(ids);  // ids of one target come sorted
}

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeAll() { return TakeReached(UINT64_MAX); }

std::vector<ProgressWaiters::Done> ProgressWaiters::TakeTagged(uint64_t tag) {
  if (tag == 0) return {};
  std::vector<uint64_t> ids;
  for (const auto& [id, waiter] : waiters_) {
    if (waiter.tag == tag) ids.push_back(id);
  }
  return Take(ids);
}

std::vector<ProgressWaiters::Done> ProgressWaiters::Take(const std::vector<uint64_t>& ids) {
  std::vector<Done> taken;
  taken.reserve(ids.size());
  for (uint64_t id : ids) {
    auto it = waiters_.find(id);
    if (it->second.timer != 0) timer_.Cancel(it->second.timer);
    by_target_.erase({it->second.target, id});
    taken.push_back(std::move(it->second.done));
    waiters_.erase(it);
  }
  return taken;
}

}  // namespace acld
