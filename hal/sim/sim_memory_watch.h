// Who waits for sim device memory to change: streams held by a value wait
// (hal::Stream::WaitValue) until the value they wait for is there. Every
// write to the memory (an item of any stream, a synchronous copy or fill)
// calls Written() with the bytes it may have written, which wakes, once,
// each watcher of a word among them; a watcher whose value is still not
// there watches again. The devices of a backend share one: a copy on one
// device may write another's memory. Words are told apart by where their
// bytes are (SimBytes), so a physical allocation mapped at two addresses is
// one word.
//
// A write wakes only the watchers of what it wrote: before, every write
// (any tenant's launch) woke every parked wait, and 16,000 of them (four
// processes of one user) made another process's kernel round trips 17
// times slower. Each stream holds at most one watch (a new one replaces
// it), which it drops when it stops waiting (Unwatch), so the watches are
// bounded by the streams.
//
// The watchers are woken on the watch's own thread, not on the writer's:
// a write is any tenant's item, finished on whatever thread ran it (often one
// that serves every session). The writer's share is a look-up per write
// while anyone watches, and one hand-over per write that finds watchers.
#ifndef ACLD_HAL_SIM_SIM_MEMORY_WATCH_H_
#define ACLD_HAL_SIM_SIM_MEMORY_WATCH_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/timer.h"

namespace hal::sim {

class MemoryWatch {
 public:
  // Calls `on_write` once, on the watch's thread with no lock held, after
  // the next write that may change the 8 bytes at `word`. Replaces
  // `owner`'s earlier watch, if any. The caller reads the word after this
  // returns: a write it does not see then wakes it.
  void Watch(const void* owner, const uint8_t* word, std::function<void()> on_write);
  // Ends `owner`'s watch, if any (its on_write is not called).
  void Unwatch(const void* owner);
  // Whether anyone watches: a writer that must work out what it wrote asks
  // first, after its writes. The fence orders those plain stores before
  // this load, as Watch's orders its store before the waiter reads its word:
  // without both, each side could miss the other's (a store buffer).
  bool watched() const {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return watching_.load(std::memory_order_relaxed);
  }
  // [begin, begin + bytes) may have changed.
  void Written(const uint8_t* begin, uint64_t bytes);
  size_t watches() const;

 private:
  struct Entry {
    uintptr_t word;
    std::function<void()> on_write;
  };
  void EraseLocked(const void* owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<const void*, Entry> by_owner_ ABSL_GUARDED_BY(mu_);
  std::multimap<uintptr_t, const void*> by_word_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> watching_{false};
  // Its thread starts with the first write that finds watchers; named, or it
  // would take the name of whichever thread started it.
  Timer waker_{HostClock(), "sim-mem-watch"};
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_MEMORY_WATCH_H_
