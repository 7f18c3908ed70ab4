#include "daemon/core/progress_waiters.h"

#include <atomic>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hal/testing/eventually.h"
#include "hal/testing/fake_clock.h"
#include "hal/timer.h"

namespace acld {
namespace {

// Runs every completion.
void RunAll(const std::vector<ProgressWaiters::Done>& done) {
  for (const ProgressWaiters::Done& d : done) d(absl::OkStatus());
}

class ProgressWaitersTest : public ::testing::Test {
 protected:
  ProgressWaiters::Done Named(int name) {
    return [this, name](absl::Status) { ran_.push_back(name); };
  }
  hal::testing::FakeClock clock_;
  hal::Timer timer_{clock_};
  ProgressWaiters waiters_{timer_};
  std::vector<int> ran_;
};

TEST_F(ProgressWaitersTest, ReachedWaitersGoInTheOrderTheyCame) {
  waiters_.Add(5, absl::InfiniteDuration(), Named(1), nullptr);
  waiters_.Add(3, absl::InfiniteDuration(), Named(2), nullptr);
  waiters_.Add(5, absl::InfiniteDuration(), Named(3), nullptr);
  waiters_.Add(9, absl::InfiniteDuration(), Named(4), nullptr);
  EXPECT_TRUE(waiters_.TakeReached(2).empty());
  RunAll(waiters_.TakeReached(5));
  EXPECT_EQ(ran_, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(waiters_.size(), 1u);
  RunAll(waiters_.TakeAll());
  EXPECT_EQ(ran_, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(waiters_.size(), 0u);
}

TEST_F(ProgressWaitersTest, ATimedOutOrRemovedWaiterIsTakenOnce) {
  std::atomic<uint64_t> timed_out{0};
  const uint64_t a = waiters_.Add(7, absl::Seconds(1), Named(1),
                                  [&](uint64_t id) { timed_out = id; });
  const uint64_t b = waiters_.Add(7, absl::Seconds(5), Named(2), [](uint64_t) {});
  waiters_.Add(7, absl::InfiniteDuration(), Named(3), nullptr, /*tag=*/42);
  clock_.Advance(absl::Seconds(2));
  ASSERT_TRUE(hal::testing::Eventually([&] { return timed_out.load() == a; }));
  ProgressWaiters::Done done = waiters_.TakeTimedOut(a);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(waiters_.TakeTimedOut(a), nullptr) << "taken once";
  waiters_.Remove(b);
  EXPECT_EQ(waiters_.TakeTimedOut(b), nullptr) << "removed";
  RunAll(waiters_.TakeTagged(7));
  EXPECT_TRUE(ran_.empty()) << "no waiter has tag 7";
  RunAll(waiters_.TakeTagged(42));
  EXPECT_EQ(ran_, (std::vector<int>{3}));
  EXPECT_EQ(waiters_.size(), 0u);
  EXPECT_TRUE(waiters_.TakeReached(100).empty());
}

// Many waiters on one target (a million waits on one shared event are
// possible): taking them one at a time, as their timeouts do, leaves the
// others waiting and in order.
TEST_F(ProgressWaitersTest, ManyWaitersOnOneTargetAreTakenOneByOne) {
  constexpr int kWaiters = 100000;
  std::vector<uint64_t> ids;
  for (int i = 0; i < kWaiters; ++i) {
    ids.push_back(waiters_.Add(1, absl::InfiniteDuration(), Named(i), nullptr));
  }
  for (int i = 0; i < kWaiters; i += 2) ASSERT_NE(waiters_.TakeTimedOut(ids[i]), nullptr);
  EXPECT_EQ(waiters_.size(), static_cast<size_t>(kWaiters / 2));
  RunAll(waiters_.TakeReached(1));
  ASSERT_EQ(ran_.size(), static_cast<size_t>(kWaiters / 2));
  for (size_t i = 0; i < ran_.size(); ++i) ASSERT_EQ(ran_[i], static_cast<int>(2 * i + 1));
}

}  // namespace
}  // namespace acld
