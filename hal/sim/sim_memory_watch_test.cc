#include "hal/sim/sim_memory_watch.h"

#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace hal::sim {
namespace {

// Thousands of parked waits (one tenant's) are woken on the watch's thread:
// the thread that wrote (any tenant's, often one serving every session) only
// hands them over. Each watcher is woken once per Watch.
TEST(MemoryWatchTest, WatchersWakeOnceOnTheWatchsThreadNotTheWriters) {
  constexpr int kWatchers = 10000;
  MemoryWatch watch;
  absl::Mutex mu;
  int woken = 0;
  int on_writer = 0;
  const std::thread::id writer = std::this_thread::get_id();
  for (int i = 0; i < kWatchers; ++i) {
    watch.Watch([&] {
      absl::MutexLock lock(&mu);
      ++woken;
      on_writer += std::this_thread::get_id() == writer;
    });
  }
  watch.Written();
  watch.Written();  // nobody watches any more: wakes nothing twice
  {
    absl::MutexLock lock(&mu);
    auto all_woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return woken >= kWatchers; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_woken), absl::Seconds(30)));
  }
  absl::SleepFor(absl::Milliseconds(50));  // a second wake-up would have come by now
  absl::MutexLock lock(&mu);
  EXPECT_EQ(woken, kWatchers);
  EXPECT_EQ(on_writer, 0);
}

}  // namespace
}  // namespace hal::sim
