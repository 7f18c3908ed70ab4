// Who waits for sim device memory to change: streams held by a value wait
// (hal::Stream::WaitValue) until the value they wait for is there. Every
// write to the memory (an item of any stream, a synchronous copy or fill)
// calls Written(), which wakes each watcher once; a watcher whose value is
// still not there watches again. The devices of a backend share one: a copy
// on one device may write another's memory.
//
// The watchers are woken on the watch's own thread, not on the writer's:
// a write is any tenant's item, finished on whatever thread ran it (often one
// that serves every session), while the watchers may be thousands of one
// tenant's parked waits. The writer's share is one hand-over per write that
// finds watchers, however many there are.
#ifndef ACLD_HAL_SIM_SIM_MEMORY_WATCH_H_
#define ACLD_HAL_SIM_SIM_MEMORY_WATCH_H_

#include <atomic>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/timer.h"

namespace hal::sim {

class MemoryWatch {
 public:
  // Calls `on_write` once, on the watch's thread with no lock held, after the
  // next write.
  void Watch(std::function<void()> on_write) {
    absl::MutexLock lock(&mu_);
    watchers_.push_back(std::move(on_write));
    watching_.store(true, std::memory_order_release);
  }

  void Written() {
    if (!watching_.load(std::memory_order_acquire)) return;  // the common case: nobody waits
    auto woken = std::make_shared<std::vector<std::function<void()>>>();
    {
      absl::MutexLock lock(&mu_);
      woken->swap(watchers_);
      watching_.store(false, std::memory_order_release);
    }
    if (woken->empty()) return;
    waker_.Schedule(absl::InfinitePast(), [woken] {
      for (auto& wake : *woken) wake();
    });
  }

 private:
  absl::Mutex mu_;
  std::vector<std::function<void()>> watchers_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> watching_{false};
  // Its thread starts with the first write that finds watchers; named, or it
  // would take the name of whichever thread started it.
  Timer waker_{HostClock(), "sim-mem-watch"};
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_MEMORY_WATCH_H_
