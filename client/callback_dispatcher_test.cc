#include "client/callback_dispatcher.h"

#include <pthread.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"

namespace acl_client {
namespace {

using Kind = CallbackDispatcher::Kind;

uint64_t Self() { return static_cast<uint64_t>(pthread_self()); }

class CallbackDispatcherTest : public ::testing::Test {
 protected:
  CallbackDispatcherTest() {
    dispatcher_.SetAcknowledge([this](uint64_t id) {
      absl::MutexLock lock(&mu_);
      acknowledged_.push_back(id);
    });
  }

  std::vector<uint64_t> acknowledged() {
    absl::MutexLock lock(&mu_);
    return acknowledged_;
  }

  CallbackDispatcher dispatcher_;
  absl::Mutex mu_;
  std::vector<uint64_t> acknowledged_;
};

TEST_F(CallbackDispatcherTest, SubscriptionRules) {
  EXPECT_TRUE(dispatcher_.Subscribe(Kind::kReport, 1, 10).ok());
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Subscribe(Kind::kReport, 1, 10)),
            ACL_ERROR_REPEAT_SUBSCRIBE);
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Subscribe(Kind::kReport, 2, 10)),
            ACL_ERROR_RT_STREAM_SUBSCRIBE);
  EXPECT_TRUE(dispatcher_.Subscribe(Kind::kHostFunc, 2, 10).ok());  // another kind
  EXPECT_TRUE(dispatcher_.HasSubscriber(Kind::kReport, 10));
  EXPECT_FALSE(dispatcher_.Unsubscribe(Kind::kReport, 2, 10).ok());
  EXPECT_TRUE(dispatcher_.Unsubscribe(Kind::kReport, 1, 10).ok());
  EXPECT_FALSE(dispatcher_.HasSubscriber(Kind::kReport, 10));
  dispatcher_.ForgetStream(10);
  EXPECT_FALSE(dispatcher_.HasSubscriber(Kind::kHostFunc, 10));
}

TEST_F(CallbackDispatcherTest, ProcessChecksItsArgumentsAndTimesOut) {
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Process(Kind::kReport, 0)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Process(Kind::kReport, -5)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Process(Kind::kReport, 10)), ACL_ERROR_RT_THREAD_SUBSCRIBE);
  ASSERT_TRUE(dispatcher_.Subscribe(Kind::kReport, Self(), 3).ok());
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Process(Kind::kReport, 20)), ACL_ERROR_RT_REPORT_TIMEOUT);
}

TEST_F(CallbackDispatcherTest, DueCallbacksRunOnTheSubscribedThreadAndAreAcknowledged) {
  ASSERT_TRUE(dispatcher_.Subscribe(Kind::kReport, Self(), 3).ok());
  std::thread::id ran_on;
  const uint64_t id = dispatcher_.Add(Kind::kReport, 3, /*block=*/true,
                                      [&] { ran_on = std::this_thread::get_id(); });
  dispatcher_.OnCallbackDue(id, 3);
  dispatcher_.OnCallbackDue(id, 3);  // a duplicate is ignored
  ASSERT_TRUE(dispatcher_.Process(Kind::kReport, 1000).ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(acknowledged(), std::vector<uint64_t>{id});
  EXPECT_EQ(acld::AclCodeOf(dispatcher_.Process(Kind::kReport, 20)), ACL_ERROR_RT_REPORT_TIMEOUT);
}

TEST_F(CallbackDispatcherTest, UnsubscribedCallbacksRunOnLibraryThreads) {
  absl::Notification ran;
  std::thread::id ran_on;
  const uint64_t id = dispatcher_.Add(Kind::kHostFunc, 4, /*block=*/true, [&] {
    ran_on = std::this_thread::get_id();
    EXPECT_TRUE(CallbackDispatcher::InCallbackOf(4));
    EXPECT_FALSE(CallbackDispatcher::InCallbackOf(5));
    ran.Notify();
  });
  dispatcher_.OnCallbackDue(id, 4);
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_NE(ran_on, std::this_thread::get_id());
  for (int i = 0; i < 10000 && acknowledged().empty(); ++i) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(acknowledged(), std::vector<uint64_t>{id});
  EXPECT_FALSE(CallbackDispatcher::InCallback());
}

TEST_F(CallbackDispatcherTest, NonBlockingCallbacksAreNotAcknowledged) {
  ASSERT_TRUE(dispatcher_.Subscribe(Kind::kReport, Self(), 3).ok());
  const uint64_t id = dispatcher_.Add(Kind::kReport, 3, /*block=*/false, [] {});
  dispatcher_.OnCallbackDue(id, 3);
  ASSERT_TRUE(dispatcher_.Process(Kind::kReport, 1000).ok());
  EXPECT_TRUE(acknowledged().empty());
}

std::atomic<uint32_t> seen_task{0};
void RecordFailure(aclrtExceptionInfo* info) { seen_task = aclrtGetTaskIdFromExceptionInfo(info); }

TEST_F(CallbackDispatcherTest, FailuresReachTheExceptionCallbackBeforeTheBarrierReturns) {
  dispatcher_.SetExceptionCallback(RecordFailure);
  dispatcher_.OnTaskFailed(FactsOf(42, 7, 1, 0, ACL_ERROR_RT_AICORE_EXCEPTION));
  dispatcher_.WaitForFailureCallbacks();
  EXPECT_EQ(seen_task, 42u);
}

}  // namespace
}  // namespace acl_client
