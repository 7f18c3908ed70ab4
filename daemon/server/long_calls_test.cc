#include "daemon/server/long_calls.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// What the calls did, in the order they ran.
class Trace {
 public:
  void Add(const std::string& what) {
    absl::MutexLock lock(&mu_);
    ran_.push_back(what);
  }
  // Waits (bounded) until `count` calls ran; what ran then.
  std::vector<std::string> WaitFor(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ran_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(20));
    return ran_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> ran_ ABSL_GUARDED_BY(mu_);
};

TEST(LongCallsTest, CallsTakeTurnsBetweenTenants) {
  LongCalls calls(/*threads=*/1);
  Trace trace;
  absl::Notification running, release;
  const Tenant busy(1000, nullptr), other(1001, nullptr);
  // The thread is held by a first call while both tenants queue theirs.
  calls.Run(busy, [&] {
    running.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(20));
    trace.Add("busy 0");
  });
  ASSERT_TRUE(running.WaitForNotificationWithTimeout(absl::Seconds(20)));
  for (const char* name : {"busy 1", "busy 2", "busy 3"}) {
    calls.Run(busy, [&trace, name] { trace.Add(name); });
  }
  calls.Run(other, [&] { trace.Add("other 1"); });
  EXPECT_EQ(calls.queued(), 4u);
  release.Notify();
  EXPECT_EQ(trace.WaitFor(5),
            (std::vector<std::string>{"busy 0", "busy 1", "other 1", "busy 2", "busy 3"}))
      << "a tenant's queued calls held another's back by more than one";
  EXPECT_EQ(calls.queued(), 0u);
}

TEST(LongCallsTest, ACallThatHangsHoldsOneThreadNotTheOthers) {
  LongCalls calls(/*threads=*/2);
  absl::Notification running, release, other_ran;
  calls.Run(Tenant(1000, nullptr), [&] {
    running.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(20));
  });
  ASSERT_TRUE(running.WaitForNotificationWithTimeout(absl::Seconds(20)));
  calls.Run(Tenant(1001, nullptr), [&] { other_ran.Notify(); });
  EXPECT_TRUE(other_ran.WaitForNotificationWithTimeout(absl::Seconds(10)))
      << "a hanging call held every other";
  release.Notify();
}

TEST(LongCallsTest, CallsNotStartedAreDroppedWithWhatTheyHold) {
  auto calls = std::make_unique<LongCalls>(/*threads=*/1);
  absl::Notification running, release;
  calls->Run(Tenant(), [&] {
    running.Notify();
    release.WaitForNotificationWithTimeout(absl::Seconds(20));
  });
  ASSERT_TRUE(running.WaitForNotificationWithTimeout(absl::Seconds(20)));
  auto held = std::make_shared<int>(0);
  std::weak_ptr<int> watch = held;
  std::atomic<bool> ran_queued{false};
  calls->Run(Tenant(), [&ran_queued, held = std::move(held)] { ran_queued = true; });
  // The runner goes while its thread still runs the first call: the queued
  // one lets go of what it holds at once and never runs.
  std::thread destroying([&] { calls.reset(); });
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!watch.expired() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_TRUE(watch.expired()) << "a queued call's memory waited for the running call";
  release.Notify();
  destroying.join();
  EXPECT_FALSE(ran_queued.load()) << "a call queued when the runner went still ran";
}

}  // namespace
}  // namespace acld::server
