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

  // The broker's task for `callback_id` on stream `stream` of session 1.
  CallbackBroker::PointTask MakeTask(uint64_t callback_id, bool block, StreamId stream = 7) {
    return broker_.MakeTask(1, stream, callback_id, block, events_);
  }

  // Runs `task` at its point and returns its immediate result.
  std::optional<absl::Status> Reach(const CallbackBroker::PointTask& task) {
    return task.at_point([this](absl::Status status) {
      absl::MutexLock lock(&mu_);
      resumed_.push_back(status);
      return true;
    });
  }

  std::optional<absl::Status> RunTask(uint64_t callback_id, bool block, StreamId stream = 7) {
    return Reach(MakeTask(callback_id, block, stream));
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

// A blocking callback whose task an abort discarded is not waited for: its
// entry and timer go at once, and no timeout is counted for it.
TEST_F(CallbackBrokerTest, AnAbortedCallbackIsNotWaitedFor) {
  for (uint64_t id = 10; id < 110; ++id) {
    CallbackBroker::PointTask task = MakeTask(id, /*block=*/true);
    EXPECT_FALSE(Reach(task).has_value());
    task.on_discard();
  }
  EXPECT_EQ(broker_.Pending(1), 0u);
  clock_.Advance(absl::Milliseconds(200));
  EXPECT_TRUE(resumed().empty());
  EXPECT_EQ(broker_.Timeouts(1), 0u);
}

// The device reached the point while an abort discarded its task, and the
// abort came first: the callback is neither delivered nor waited for, so
// nothing holds its id until the timeout.
TEST_F(CallbackBrokerTest, ACallbackReachedAfterItsAbortIsNotDeliveredNorWaitedFor) {
  for (bool block : {true, false}) {
    CallbackBroker::PointTask task = MakeTask(6, block);
    task.on_discard();
    std::optional<absl::Status> result = Reach(task);
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(result->ok());
  }
  EXPECT_TRUE(delivered_.empty());
  EXPECT_EQ(broker_.Pending(1), 0u);
  EXPECT_FALSE(RunTask(6, /*block=*/true).has_value());  // the id is free
  EXPECT_EQ(delivered_, std::vector<uint64_t>{6});
  clock_.Advance(absl::Milliseconds(100));
  EXPECT_EQ(broker_.Timeouts(1), 1u);  // only the one that was delivered
}

// A blocking callback whose id already waits (on another stream) fails its
// task instead of taking the first one's place; forgetting the refused one
// leaves the first waiting, and the first is answered as before.
TEST_F(CallbackBrokerTest, ABlockingCallbackWithAnIdAlreadyWaitingIsRefused) {
  EXPECT_FALSE(RunTask(5, /*block=*/true, /*stream=*/7).has_value());
  CallbackBroker::PointTask refused = MakeTask(5, /*block=*/true, /*stream=*/8);
  std::optional<absl::Status> duplicate = Reach(refused);
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_EQ(AclCodeOf(*duplicate), ACL_ERROR_INVALID_PARAM);
  refused.on_discard();
  EXPECT_EQ(broker_.Pending(1), 1u);
  EXPECT_TRUE(broker_.Acknowledge(1, 5).ok());
  ASSERT_EQ(resumed().size(), 1u);
  EXPECT_TRUE(resumed()[0].ok());
  clock_.Advance(absl::Milliseconds(200));  // the first one's timer went with it
  EXPECT_EQ(broker_.Timeouts(1), 0u);
}

}  // namespace
}  // namespace acld
