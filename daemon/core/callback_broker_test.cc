#include "daemon/core/callback_broker.h"

#include <memory>
#include <vector>

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"
#include "hal/testing/fake_clock.h"

namespace acld {
namespace {

class CallbackBrokerTest : public ::testing::Test {
 protected:
  CallbackBrokerTest() : broker_(timer_, absl::Milliseconds(100)) {
    auto events = std::make_shared<SessionEvents>();
    events->callback_due = [this](const CallbackDue& due) {
      absl::MutexLock lock(&mu_);
      delivered_.push_back(due.callback_id);
    };
    events_ = events;
  }

  // Runs the broker's task for `callback_id` and returns its immediate result.
  std::optional<absl::Status> RunTask(uint64_t callback_id, bool block) {
    TaskFn task = broker_.MakeTask(1, 7, callback_id, block, events_);
    return task([this](absl::Status status) {
      absl::MutexLock lock(&mu_);
      resumed_.push_back(status);
      return true;
    });
  }

  std::vector<absl::Status> resumed() {
    absl::MutexLock lock(&mu_);
    return resumed_;
  }

  hal::testing::FakeClock clock_;
  hal::Timer timer_{clock_};
  CallbackBroker broker_;
  std::shared_ptr<const SessionEvents> events_;
  absl::Mutex mu_;
  std::vector<uint64_t> delivered_;
  std::vector<absl::Status> resumed_;
};

TEST_F(CallbackBrokerTest, NonBlockingCallbacksAreDeliveredAndDoNotHoldTheStream) {
  std::optional<absl::Status> result = RunTask(5, /*block=*/false);
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->ok());
  EXPECT_EQ(delivered_, std::vector<uint64_t>{5});
  EXPECT_EQ(broker_.Pending(1), 0u);
  EXPECT_FALSE(broker_.Acknowledge(1, 5).ok());  // nothing waits for it
}

TEST_F(CallbackBrokerTest, BlockingCallbacksHoldTheStreamUntilAcknowledged) {
  EXPECT_FALSE(RunTask(9, /*block=*/true).has_value());
  EXPECT_EQ(delivered_, std::vector<uint64_t>{9});
  EXPECT_EQ(broker_.Pending(1), 1u);
  EXPECT_TRUE(resumed().empty());
  EXPECT_FALSE(broker_.Acknowledge(2, 9).ok());  // another session's answer is refused
  ASSERT_TRUE(broker_.Acknowledge(1, 9).ok());
  ASSERT_EQ(resumed().size(), 1u);
  EXPECT_TRUE(resumed()[0].ok());
  EXPECT_EQ(broker_.Pending(1), 0u);
  EXPECT_FALSE(broker_.Acknowledge(1, 9).ok());  // once only
}

TEST_F(CallbackBrokerTest, UnansweredCallbacksTimeOut) {
  EXPECT_FALSE(RunTask(3, /*block=*/true).has_value());
  clock_.Advance(absl::Milliseconds(99));
  EXPECT_TRUE(resumed().empty());
  EXPECT_EQ(broker_.Pending(1), 1u);
  clock_.Advance(absl::Milliseconds(1));  // runs the timeout before it returns
  ASSERT_EQ(resumed().size(), 1u);
  EXPECT_EQ(AclCodeOf(resumed()[0]), ACL_ERROR_RT_REPORT_TIMEOUT);
  EXPECT_EQ(broker_.Timeouts(1), 1u);
  EXPECT_FALSE(broker_.Acknowledge(1, 3).ok());  // too late
}

TEST_F(CallbackBrokerTest, ForgottenSessionsAreNotWaitedFor) {
  EXPECT_FALSE(RunTask(4, /*block=*/true).has_value());
  broker_.ForgetSession(1);
  EXPECT_EQ(broker_.Pending(1), 0u);
  clock_.Advance(absl::Milliseconds(200));  // past the timeout: nothing resumes
  EXPECT_TRUE(resumed().empty());
  EXPECT_EQ(broker_.Timeouts(1), 0u);
}

}  // namespace
}  // namespace acld
