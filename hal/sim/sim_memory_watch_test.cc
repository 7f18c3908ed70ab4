#include "hal/sim/sim_memory_watch.h"

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace hal::sim {
namespace {

// Counts wake-ups per watcher, and those on the writing thread.
class Wakes {
 public:
  std::function<void()> Of(int watcher) {
    return [this, watcher, writer = std::this_thread::get_id()] {
      absl::MutexLock lock(&mu_);
      ++woken_[watcher];
      on_writer_ += std::this_thread::get_id() == writer;
    };
  }
  // Waits for `total` wake-ups in all, then a little longer for any extra.
  std::map<int, int> AfterAtLeast(int total) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      int sum = 0;
      for (const auto& [watcher, count] : woken_) sum += count;
      return sum >= total;
    };
    EXPECT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(30)));
    mu_.Unlock();
    absl::SleepFor(absl::Milliseconds(50));  // a wake-up too many would have come by now
    mu_.Lock();
    return woken_;
  }
  int on_writer() {
    absl::MutexLock lock(&mu_);
    return on_writer_;
  }

 private:
  absl::Mutex mu_;
  std::map<int, int> woken_ ABSL_GUARDED_BY(mu_);
  int on_writer_ ABSL_GUARDED_BY(mu_) = 0;
};

// Thousands of parked waits (one tenant's) are woken on the watch's thread:
// the thread that wrote (any tenant's, often one serving every session) only
// hands them over. Each watcher is woken once per Watch.
TEST(MemoryWatchTest, WatchersWakeOnceOnTheWatchsThreadNotTheWriters) {
  constexpr int kWatchers = 10000;
  std::vector<uint8_t> memory(8 * kWatchers);
  std::vector<int> owners(kWatchers);
  MemoryWatch watch;
  Wakes wakes;
  for (int i = 0; i < kWatchers; ++i) watch.Watch(&owners[i], &memory[8 * i], wakes.Of(i));
  EXPECT_TRUE(watch.watched());
  watch.Written(memory.data(), memory.size());
  watch.Written(memory.data(), memory.size());  // nobody watches any more: wakes nothing twice
  EXPECT_FALSE(watch.watched());
  const std::map<int, int> woken = wakes.AfterAtLeast(kWatchers);
  ASSERT_EQ(woken.size(), static_cast<size_t>(kWatchers));
  for (const auto& [watcher, count] : woken) EXPECT_EQ(count, 1) << watcher;
  EXPECT_EQ(wakes.on_writer(), 0);
}

// A write wakes the watchers of the words it overlaps, and no others: the
// parked waits of one tenant cost nothing to the writes of another.
TEST(MemoryWatchTest, AWriteWakesOnlyTheWatchersOfWhatItWrote) {
  uint8_t memory[128] = {};
  int owners[3];
  MemoryWatch watch;
  Wakes wakes;
  watch.Watch(&owners[0], &memory[0], wakes.Of(0));
  watch.Watch(&owners[1], &memory[8], wakes.Of(1));
  watch.Watch(&owners[2], &memory[64], wakes.Of(2));
  watch.Written(&memory[16], 48);  // [16, 64): between the words
  watch.Written(&memory[72], 56);  // after the last
  EXPECT_EQ(watch.watches(), 3u);
  watch.Written(&memory[15], 1);  // the last byte of the word at 8
  EXPECT_EQ(wakes.AfterAtLeast(1), (std::map<int, int>{{1, 1}}));
  watch.Written(&memory[60], 5);  // [60, 65): the first byte of the word at 64
  EXPECT_EQ(wakes.AfterAtLeast(2), (std::map<int, int>{{1, 1}, {2, 1}}));
  EXPECT_EQ(watch.watches(), 1u);
}

// A stream holds one watch at most: a new one replaces its last, and Unwatch
// ends it, so streams that wait again and again, or go, leave nothing behind.
TEST(MemoryWatchTest, AnOwnersNewWatchReplacesItsLastAndUnwatchEndsIt) {
  uint8_t memory[64] = {};
  int owner = 0, other = 0;
  MemoryWatch watch;
  Wakes wakes;
  for (int i = 0; i < 1000; ++i) watch.Watch(&owner, &memory[8 * (i % 8)], wakes.Of(i));
  EXPECT_EQ(watch.watches(), 1u);
  watch.Watch(&other, &memory[0], wakes.Of(-1));
  watch.Unwatch(&other);
  watch.Unwatch(&other);  // nothing left to end
  watch.Written(memory, sizeof(memory));
  EXPECT_EQ(wakes.AfterAtLeast(1), (std::map<int, int>{{999, 1}}));
  EXPECT_EQ(watch.watches(), 0u);
  EXPECT_FALSE(watch.watched());
}

}  // namespace
}  // namespace hal::sim
