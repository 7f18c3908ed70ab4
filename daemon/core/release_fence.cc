#include "daemon/core/release_fence.h"

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace acld {

class ReleaseFence::State {
 public:
  explicit State(std::shared_ptr<BackgroundRelease> background)
      : background_(std::move(background)) {}

  BackgroundRelease* background() const { return background_.get(); }

  uint64_t Issue() {
    absl::MutexLock lock(&mu_);
    const uint64_t number = ++issued_;
    live_.insert(number);
    return number;
  }

  void Keep(const std::shared_ptr<void>& memory) {
    absl::MutexLock lock(&mu_);
    if (live_.empty()) return;
    auto [it, added] = kept_.try_emplace(memory.get());
    if (!added) by_ticket_.erase(it->second.until);
    it->second.memory = memory;
    it->second.until = by_ticket_.emplace(issued_, memory.get());
  }

  // Ticket `number` was let go: what waited for it alone goes back to the
  // caller, to be released without the lock.
  std::vector<std::shared_ptr<void>> Return(uint64_t number) {
    std::vector<std::shared_ptr<void>> released;
    absl::MutexLock lock(&mu_);
    live_.erase(number);
    const uint64_t oldest = live_.empty() ? UINT64_MAX : *live_.begin();
    while (!by_ticket_.empty() && by_ticket_.begin()->first < oldest) {
      auto entry = kept_.find(by_ticket_.begin()->second);
      released.push_back(std::move(entry->second.memory));
      kept_.erase(entry);
      by_ticket_.erase(by_ticket_.begin());
    }
    return released;
  }

  size_t kept() const {
    absl::MutexLock lock(&mu_);
    return kept_.size();
  }

 private:
  struct Kept {
    std::shared_ptr<void> memory;
    std::multimap<uint64_t, const void*>::iterator until;  // in by_ticket_
  };

  const std::shared_ptr<BackgroundRelease> background_;
  mutable absl::Mutex mu_;
  uint64_t issued_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<uint64_t> live_ ABSL_GUARDED_BY(mu_);  // tickets not yet let go
  // By the memory's address, and by the last ticket it waits for.
  absl::flat_hash_map<const void*, Kept> kept_ ABSL_GUARDED_BY(mu_);
  std::multimap<uint64_t, const void*> by_ticket_ ABSL_GUARDED_BY(mu_);
};

class ReleaseFence::Ticket {
 public:
  explicit Ticket(std::shared_ptr<State> state)
      : state_(std::move(state)), number_(state_->Issue()) {}
  ~Ticket() {
    // Released here, on whichever thread let the launch go, with no lock
    // held; many at once, in the background.
    std::vector<std::shared_ptr<void>> released = state_->Return(number_);
    if (released.size() > kReleasedInPlace && state_->background() != nullptr) {
      state_->background()->Release(std::move(released));
    }
  }
  Ticket(const Ticket&) = delete;
  Ticket& operator=(const Ticket&) = delete;

 private:
  const std::shared_ptr<State> state_;
  const uint64_t number_;
};

ReleaseFence::ReleaseFence(std::shared_ptr<BackgroundRelease> background)
    : state_(std::make_shared<State>(std::move(background))) {}

std::shared_ptr<void> ReleaseFence::Hold() const { return std::make_shared<Ticket>(state_); }

void ReleaseFence::Defer(const std::shared_ptr<void>& memory) { state_->Keep(memory); }

size_t ReleaseFence::kept() const { return state_->kept(); }

}  // namespace acld
