#include "hal/timer.h"

#include <atomic>
#include <filesystem>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "hal/testing/fake_clock.h"

namespace hal {
namespace {

class TimerTest : public ::testing::Test {
 protected:
  std::function<void()> Append(int value) {
    return [this, value] {
      absl::MutexLock lock(&mu_);
      order_.push_back(value);
    };
  }

  std::vector<int> order() {
    absl::MutexLock lock(&mu_);
    return order_;
  }

  testing::FakeClock clock_;
  absl::Mutex mu_;
  std::vector<int> order_;
};

TEST_F(TimerTest, RunsCallbacksInTimeOrderWhenTheirTimeComes) {
  Timer timer(clock_);
  const absl::Time start = timer.Now();
  timer.Schedule(start + absl::Milliseconds(30), Append(3));
  timer.Schedule(start + absl::Milliseconds(10), Append(1));
  timer.Schedule(start + absl::Milliseconds(20), Append(2));
  clock_.Advance(absl::Milliseconds(9));
  EXPECT_TRUE(order().empty());
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(order(), std::vector<int>{1});
  clock_.Advance(absl::Milliseconds(25));
  EXPECT_EQ(order(), (std::vector<int>{1, 2, 3}));
}

TEST_F(TimerTest, TiesRunInSchedulingOrder) {
  Timer timer(clock_);
  const absl::Time when = timer.Now() + absl::Milliseconds(5);
  for (int i = 0; i < 5; ++i) timer.Schedule(when, Append(i));
  clock_.Advance(absl::Milliseconds(5));
  EXPECT_EQ(order(), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_F(TimerTest, ScheduleInCountsFromTheTimersClock) {
  Timer timer(clock_);
  timer.ScheduleIn(absl::Seconds(60), Append(1));
  clock_.Advance(absl::Seconds(59));
  EXPECT_TRUE(order().empty());
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(order(), std::vector<int>{1});
}

TEST_F(TimerTest, SoonerCallbacksScheduledWhileWaitingRunFirst) {
  Timer timer(clock_);
  timer.ScheduleIn(absl::Hours(1), Append(2));
  clock_.Advance(absl::Minutes(1));  // the loop now waits for the hour
  timer.ScheduleIn(absl::Milliseconds(10), Append(1));
  clock_.Advance(absl::Milliseconds(10));
  EXPECT_EQ(order(), std::vector<int>{1});
  clock_.Advance(absl::Hours(1));
  EXPECT_EQ(order(), (std::vector<int>{1, 2}));
}

TEST_F(TimerTest, CallbacksScheduledByACallbackForNowRunBeforeAdvanceReturns) {
  // The sim schedules a release at InfinitePast from inside a busy timer's callback.
  Timer timer(clock_);
  timer.ScheduleIn(absl::Milliseconds(1), [&] { timer.Schedule(absl::InfinitePast(), Append(1)); });
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(order(), std::vector<int>{1});
}

TEST_F(TimerTest, CancelledCallbacksDoNotRun) {
  Timer timer(clock_);
  Timer::TimerId id = timer.ScheduleIn(absl::Milliseconds(20), Append(1));
  timer.ScheduleIn(absl::Milliseconds(40), Append(2));
  EXPECT_TRUE(timer.Cancel(id));
  EXPECT_FALSE(timer.Cancel(id));
  clock_.Advance(absl::Milliseconds(40));
  EXPECT_EQ(order(), std::vector<int>{2});
}

TEST_F(TimerTest, RanCallbacksCannotBeCancelled) {
  Timer timer(clock_);
  Timer::TimerId id = timer.ScheduleIn(absl::Milliseconds(1), Append(1));
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(order(), std::vector<int>{1});
  EXPECT_FALSE(timer.Cancel(id));
}

TEST_F(TimerTest, DestroyingDropsPendingCallbacks) {
  {
    Timer timer(clock_);
    timer.ScheduleIn(absl::Milliseconds(1), Append(1));
  }
  clock_.Advance(absl::Milliseconds(1));  // tells no timer: it is gone
  EXPECT_TRUE(order().empty());
}

TEST(HostClockTimerTest, RunsCallbacksAtTheirHostTime) {
  Timer timer;
  absl::Notification done;
  const absl::Time due = timer.Now() + absl::Milliseconds(2);
  std::atomic<bool> early{false};
  timer.Schedule(due, [&] {
    early = absl::Now() < due;
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(early.load());
}

// What the owner of a timer relies on before its other members go: once
// Stop returns, the callback that was running has finished and no other runs.
TEST(HostClockTimerTest, StopWaitsForTheRunningCallbackAndDropsThePending) {
  Timer timer;
  absl::Notification started, release;
  std::atomic<bool> finished{false}, later_ran{false};
  timer.Schedule(absl::InfinitePast(), [&] {
    started.Notify();
    release.WaitForNotification();
    // Stop must come meanwhile (else the loop runs the next, due by then,
    // before Stop): it fails only if this thread stalls 200 ms between
    // release.Notify() and Stop(), where 20 ms once failed under load.
    absl::SleepFor(absl::Milliseconds(200));
    finished = true;
  });
  timer.ScheduleIn(absl::Milliseconds(1), [&] { later_ran = true; });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  release.Notify();
  timer.Stop();
  EXPECT_TRUE(finished.load());
  timer.ScheduleIn(absl::Milliseconds(1), [&] { later_ran = true; });
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(later_ran.load());
  timer.Stop();  // idempotent
}

int ThreadsOfThisProcess() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

TEST(HostClockTimerTest, ATimerStartsItsThreadWithItsFirstCallback) {
  const int before = ThreadsOfThisProcess();
  Timer timer;
  EXPECT_EQ(ThreadsOfThisProcess(), before);  // an unused timer costs no thread
  absl::Notification done;
  timer.ScheduleIn(absl::ZeroDuration(), [&] { done.Notify(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(ThreadsOfThisProcess(), before + 1);
}

}  // namespace
}  // namespace hal
