#include "hal/sim/sim_memory_watch.h"

#include <memory>
#include <utility>
#include <vector>

namespace hal::sim {
namespace {

constexpr uintptr_t kWordBytes = 8;

}  // namespace

void MemoryWatch::Watch(const void* owner, const uint8_t* word, std::function<void()> on_write) {
  absl::MutexLock lock(&mu_);
  EraseLocked(owner);
  const uintptr_t at = reinterpret_cast<uintptr_t>(word);
  by_owner_.emplace(owner, Entry{at, std::move(on_write)});
  by_word_.emplace(at, owner);
  watching_.store(true, std::memory_order_relaxed);
  // Before the caller reads the word (see watched()).
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void MemoryWatch::Unwatch(const void* owner) {
  std::function<void()> dropped;  // destroyed after the lock: it may hold a stream
  absl::MutexLock lock(&mu_);
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return;
  dropped = std::move(it->second.on_write);
  EraseLocked(owner);
}

void MemoryWatch::EraseLocked(const void* owner) {
  auto it = by_owner_.find(owner);
  if (it == by_owner_.end()) return;
  auto [first, last] = by_word_.equal_range(it->second.word);
  for (auto entry = first; entry != last; ++entry) {
    if (entry->second == owner) {
      by_word_.erase(entry);
      break;
    }
  }
  by_owner_.erase(it);
  if (by_owner_.empty()) watching_.store(false, std::memory_order_relaxed);
}

void MemoryWatch::Written(const uint8_t* begin, uint64_t bytes) {
  if (bytes == 0 || !watched()) return;  // the common case: nobody waits
  const uintptr_t start = reinterpret_cast<uintptr_t>(begin);
  // A word overlaps the write when it starts before its end and ends after
  // its start (words need not be aligned to anything here).
  const uintptr_t from = start >= kWordBytes - 1 ? start - (kWordBytes - 1) : 0;
  const uintptr_t end = bytes > UINTPTR_MAX - start ? UINTPTR_MAX : start + bytes;
  auto woken = std::make_shared<std::vector<std::function<void()>>>();
  {
    absl::MutexLock lock(&mu_);
    for (auto it = by_word_.lower_bound(from); it != by_word_.end() && it->first < end;) {
      auto owner = by_owner_.find(it->second);
      woken->push_back(std::move(owner->second.on_write));
      by_owner_.erase(owner);
      it = by_word_.erase(it);
    }
    if (by_owner_.empty()) watching_.store(false, std::memory_order_relaxed);
  }
  if (woken->empty()) return;
  waker_.Schedule(absl::InfinitePast(), [woken] {
    for (auto& wake : *woken) wake();
  });
}

size_t MemoryWatch::watches() const {
  absl::MutexLock lock(&mu_);
  return by_owner_.size();
}

}  // namespace hal::sim
