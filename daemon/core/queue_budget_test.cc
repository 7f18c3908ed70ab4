#include "daemon/core/queue_budget.h"

#include <atomic>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "hal/testing/fake_clock.h"
#include "hal/timer.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

constexpr uint64_t kLimit = 1000;

class QueueBudgetTest : public ::testing::Test {
 protected:
  // Moves the fake clock until `done`, a bounded number of times (the timer
  // runs what is due on its own thread).
  template <typename Done>
  bool AdvanceUntil(Done done) {
    for (int i = 0; i < 200 && !done(); ++i) {
      clock_.Advance(absl::Seconds(1));
      absl::SleepFor(absl::Milliseconds(5));
    }
    return done();
  }

  hal::testing::FakeClock clock_;
  hal::Timer timer_{clock_};
  std::shared_ptr<QueueBudget> budget_ =
      std::make_shared<QueueBudget>(kLimit, absl::Seconds(10), &timer_);
};

TEST_F(QueueBudgetTest, BelowTheLimitNobodyWaits) {
  std::shared_ptr<void> held = *budget_->Charge(kLimit - 1);
  EXPECT_FALSE(budget_->AwaitRoom([] { FAIL() << "called back without waiting"; }));
}

// The reader stops at the limit and is called back (once) when a release
// makes room; charges never block the thread that makes them.
TEST_F(QueueBudgetTest, RoomCallsTheWaitingReaderBackOnce) {
  std::shared_ptr<void> first = *budget_->Charge(kLimit);
  std::shared_ptr<void> second = *budget_->Charge(kLimit / 2);  // over: taken, not waited for
  std::atomic<int> called{0};
  EXPECT_TRUE(budget_->AwaitRoom([&] { ++called; }));
  second.reset();
  EXPECT_EQ(called.load(), 0) << "still at the limit";
  first.reset();
  EXPECT_EQ(called.load(), 1);
  EXPECT_EQ(budget_->used(), 0u);
  EXPECT_FALSE(budget_->AwaitRoom([&] { ++called; }));
  EXPECT_EQ(called.load(), 1);
}

// A workload that cannot drain by itself is let through after the patience,
// up to the hard ceiling of twice the limit.
TEST_F(QueueBudgetTest, AfterThePatienceWorkGoesOnUpToTheCeiling) {
  std::shared_ptr<void> stuck = *budget_->Charge(kLimit);
  std::atomic<int> called{0};
  ASSERT_TRUE(budget_->AwaitRoom([&] { ++called; }));
  ASSERT_TRUE(AdvanceUntil([&] { return called.load() == 1; }));
  EXPECT_FALSE(budget_->AwaitRoom([] {})) << "overdrawn: no more waiting";
  std::shared_ptr<void> more = *budget_->Charge(kLimit - 1);
  absl::Status refused = budget_->Charge(2).status();
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.message().find("--max_queued_bytes_per_session"), std::string::npos);
}

TEST_F(QueueBudgetTest, ClosingCallsTheWaitingReaderBackAndChargesFail) {
  std::shared_ptr<void> held = *budget_->Charge(kLimit);
  std::atomic<int> called{0};
  ASSERT_TRUE(budget_->AwaitRoom([&] { ++called; }));
  budget_->Close();
  EXPECT_EQ(called.load(), 1);
  EXPECT_EQ(AclCodeOf(budget_->Charge(1).status()), ACL_ERROR_RT_SOCKET_CLOSE);
  held.reset();
  EXPECT_EQ(called.load(), 1);
}

// Embedded mode (no timer): the caller's own thread waits in Charge, and
// AwaitRoom never asks anyone to wait.
// The sessions of one tenant share a limit: a session under its own limit
// waits while the tenant's work is at the shared one, any of the tenant's
// sessions draining wakes it, and past twice the shared limit charges fail
// naming the flag. A session's end (its budget gone) still gives the
// tenant's share back.
TEST_F(QueueBudgetTest, ATenantsSessionsShareOneLimit) {
  auto tenant = std::make_shared<TenantQueue>(kLimit);
  auto make = [&] {
    return std::make_shared<QueueBudget>(kLimit, absl::Seconds(10), &timer_, tenant, "uid 7");
  };
  std::shared_ptr<QueueBudget> one = make(), two = make();
  std::shared_ptr<void> first = *one->Charge(kLimit / 2);
  std::shared_ptr<void> second = *two->Charge(kLimit / 2);
  EXPECT_TRUE(tenant->Full());
  EXPECT_EQ(tenant->used(), kLimit);
  std::atomic<int> called{0};
  EXPECT_TRUE(one->AwaitRoom([&] { ++called; })) << "the tenant is at its limit";
  EXPECT_TRUE(two->AwaitRoom([&] { ++called; }));
  EXPECT_TRUE(one->AwaitRoom([&] { ++called; })) << "asking again replaces, never adds";
  second.reset();  // the other session's work drains: both hear of it, once each
  EXPECT_EQ(called.load(), 2);
  EXPECT_FALSE(one->AwaitRoom([&] { ++called; }));
  // The hard ceiling: twice the shared limit, whoever charges it.
  std::shared_ptr<void> big = *two->Charge(kLimit);
  absl::StatusOr<std::shared_ptr<void>> over = one->Charge(kLimit / 2 + 1);
  EXPECT_EQ(AclCodeOf(over.status()), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(over.status().message().find("--max_queued_bytes_per_uid"), std::string::npos);
  EXPECT_NE(over.status().message().find("uid 7"), std::string::npos);
  EXPECT_EQ(one->used(), kLimit / 2) << "a refused charge takes nothing";
  two.reset();
  big.reset();
  EXPECT_EQ(tenant->used(), kLimit / 2);
  first.reset();
  EXPECT_EQ(tenant->used(), 0u);
}

// Stalled tenant work is let through after the session's patience too.
TEST_F(QueueBudgetTest, AfterThePatienceATenantsSessionGoesOn) {
  auto tenant = std::make_shared<TenantQueue>(kLimit);
  auto waiting = std::make_shared<QueueBudget>(kLimit, absl::Seconds(10), &timer_, tenant, "uid 7");
  ASSERT_TRUE(tenant->Charge(kLimit, "uid 7").ok());  // another session's, not draining
  std::atomic<int> called{0};
  ASSERT_TRUE(waiting->AwaitRoom([&] { ++called; }));
  EXPECT_TRUE(AdvanceUntil([&] { return called.load() == 1; }));
  EXPECT_FALSE(waiting->AwaitRoom([&] { ++called; }));
  tenant->Release(kLimit);
}

// A tenant that stays full while its processes come and go: each session
// that waited and ended leaves the list of waiters at the next wait, so it
// cannot grow with the sessions opened.
TEST_F(QueueBudgetTest, EndedSessionsDoNotPileUpAsATenantsWaiters) {
  auto tenant = std::make_shared<TenantQueue>(kLimit);
  ASSERT_TRUE(tenant->Charge(kLimit, "uid 7").ok());  // stalled work
  for (int i = 0; i < 1000; ++i) {
    auto session = std::make_shared<QueueBudget>(kLimit, absl::Seconds(10), &timer_, tenant, "");
    ASSERT_TRUE(session->AwaitRoom([] {}));
    session->Close();
  }
  EXPECT_LE(tenant->listed_waiters(), 1u);
  tenant->Release(kLimit);
}

// Without a limit of its own, a session that went on after waiting in vain
// for its tenant's room waits for it again once its own work drains.
TEST_F(QueueBudgetTest, WithoutALimitOfItsOwnASessionWaitsForItsTenantAgain) {
  auto tenant = std::make_shared<TenantQueue>(kLimit);
  auto session = std::make_shared<QueueBudget>(0, absl::Seconds(10), &timer_, tenant, "uid 7");
  std::shared_ptr<void> held = *session->Charge(kLimit);
  std::atomic<int> called{0};
  ASSERT_TRUE(session->AwaitRoom([&] { ++called; }));
  ASSERT_TRUE(AdvanceUntil([&] { return called.load() == 1; }));
  EXPECT_FALSE(session->AwaitRoom([&] { ++called; })) << "overdrawn: goes on";
  std::shared_ptr<void> more = *session->Charge(kLimit / 2);
  more.reset();  // some of its work drains; the tenant is still over
  EXPECT_TRUE(session->AwaitRoom([&] { ++called; }));
  held.reset();
  EXPECT_EQ(called.load(), 2);
}

TEST(QueueBudgetWithoutTimerTest, ChargeWaitsForRoom) {
  auto budget = std::make_shared<QueueBudget>(kLimit, absl::Seconds(30));
  std::shared_ptr<void> held = *budget->Charge(kLimit);
  EXPECT_FALSE(budget->AwaitRoom([] {}));
  std::atomic<bool> charged{false};
  std::thread waiter([&] {
    std::shared_ptr<void> next = *budget->Charge(1);
    charged = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(charged.load());
  held.reset();
  waiter.join();
  EXPECT_TRUE(charged.load());
}

}  // namespace
}  // namespace acld
