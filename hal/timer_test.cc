#include "hal/timer.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace hal {
namespace {

TEST(TimerTest, RunsCallbacksInTimeOrder) {
  Timer timer;
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  const absl::Time now = absl::Now();
  timer.Schedule(now + absl::Milliseconds(30), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(3);
    done.Notify();
  });
  timer.Schedule(now + absl::Milliseconds(10), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(1);
  });
  timer.Schedule(now + absl::Milliseconds(20), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(TimerTest, CancelledCallbacksDoNotRun) {
  Timer timer;
  std::atomic<int> runs{0};
  Timer::TimerId id = timer.Schedule(absl::Now() + absl::Milliseconds(20), [&] { ++runs; });
  EXPECT_TRUE(timer.Cancel(id));
  EXPECT_FALSE(timer.Cancel(id));
  absl::Notification later;
  timer.Schedule(absl::Now() + absl::Milliseconds(40), [&] { later.Notify(); });
  ASSERT_TRUE(later.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(runs, 0);
}

TEST(TimerTest, DestroyingDropsPendingCallbacks) {
  std::atomic<int> runs{0};
  {
    Timer timer;
    timer.Schedule(absl::Now() + absl::Hours(1), [&] { ++runs; });
  }
  EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace hal
