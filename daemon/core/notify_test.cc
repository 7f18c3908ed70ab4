#include "daemon/core/notify.h"

#include <memory>
#include <vector>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "hal/testing/fake_clock.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

class NotifyTest : public ::testing::Test {
 protected:
  // A wait whose outcome lands in outcomes_[index] (nullopt until it runs).
  // True when it passed at once.
  // `discarded`: its task is gone by the time a record comes (an abort that
  // raced the record), so it refuses what it is offered.
  bool Wait(absl::Duration timeout = absl::InfiniteDuration(), bool discarded = false) {
    const size_t index = outcomes_.size();
    outcomes_.emplace_back();
    last_wait_ = notify_->WaitAndReset(timeout, [this, index, discarded](absl::Status status) {
      outcomes_[index] = status;
      return !discarded;
    });
    return last_wait_ == 0;
  }

  hal::testing::FakeClock clock_;
  hal::Timer timer_{clock_};
  std::shared_ptr<Notify> notify_ = std::make_shared<Notify>(3, 0, timer_);
  std::vector<std::optional<absl::Status>> outcomes_;
  uint64_t last_wait_ = 0;
};

TEST_F(NotifyTest, AWaitBeforeTheRecordHoldsUntilTheRecord) {
  EXPECT_FALSE(Wait());
  EXPECT_EQ(notify_->waiting(), 1u);
  EXPECT_FALSE(outcomes_[0].has_value());
  notify_->Record();
  ASSERT_TRUE(outcomes_[0].has_value());
  EXPECT_TRUE(outcomes_[0]->ok());
  EXPECT_EQ(notify_->waiting(), 0u);
  // The record was consumed: the next wait holds again.
  EXPECT_FALSE(Wait());
}

TEST_F(NotifyTest, ARecordBeforeTheWaitPassesOneWaitOnly) {
  notify_->Record();
  notify_->Record();  // still one: a notify is set or not
  EXPECT_TRUE(Wait());
  EXPECT_FALSE(Wait());
}

TEST_F(NotifyTest, ARecordReleasesTheOldestWaitOnly) {
  EXPECT_FALSE(Wait());
  EXPECT_FALSE(Wait());
  notify_->Record();
  EXPECT_TRUE(outcomes_[0].has_value());
  EXPECT_FALSE(outcomes_[1].has_value());
  notify_->Record();
  EXPECT_TRUE(outcomes_[1].has_value());
}

TEST_F(NotifyTest, AWaitTimesOutWithWaitTimeoutAndLaterRecordsStaySet) {
  EXPECT_FALSE(Wait(absl::Seconds(2)));
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(outcomes_[0].has_value());
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(outcomes_[0].has_value());
  EXPECT_EQ(AclCodeOf(*outcomes_[0]), ACL_ERROR_RT_WAIT_TIMEOUT);
  EXPECT_EQ(notify_->waiting(), 0u);
  notify_->Record();  // nobody waits: it stays set for the next wait
  EXPECT_TRUE(Wait(absl::Seconds(2)));
}

TEST_F(NotifyTest, ARecordedWaitDoesNotTimeOutLater) {
  EXPECT_FALSE(Wait(absl::Seconds(1)));
  notify_->Record();
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(outcomes_[0].has_value());
  EXPECT_TRUE(outcomes_[0]->ok());
}

TEST_F(NotifyTest, ACancelledWaitTakesNoRecord) {
  EXPECT_FALSE(Wait(absl::Seconds(1)));
  notify_->Cancel(last_wait_);
  EXPECT_EQ(notify_->waiting(), 0u);
  notify_->Record();
  clock_.Advance(absl::Seconds(2));
  EXPECT_FALSE(outcomes_[0].has_value());  // neither released nor timed out
  EXPECT_TRUE(Wait());                     // the record is still there
}

// A record that reaches a wait whose task an abort discarded meanwhile (after
// the record took it out, before its Cancel) is not lost: it goes to the next
// wait, or stays set for a later one.
TEST_F(NotifyTest, ARecordADiscardedWaitRefusesGoesToTheNextOrStaysSet) {
  EXPECT_FALSE(Wait(absl::InfiniteDuration(), /*discarded=*/true));
  EXPECT_FALSE(Wait());
  notify_->Record();
  EXPECT_TRUE(outcomes_[0].has_value());  // offered, refused
  ASSERT_TRUE(outcomes_[1].has_value());
  EXPECT_TRUE(outcomes_[1]->ok());

  EXPECT_FALSE(Wait(absl::Seconds(1), /*discarded=*/true));
  notify_->Record();
  EXPECT_TRUE(outcomes_[2].has_value());
  EXPECT_EQ(notify_->waiting(), 0u);
  EXPECT_TRUE(Wait());  // the record is still there
  EXPECT_FALSE(Wait());
}

TEST_F(NotifyTest, DestroyingTheNotifyReleasesItsWaits) {
  EXPECT_FALSE(Wait());
  EXPECT_FALSE(Wait(absl::Seconds(1)));
  notify_->ReleaseWaiters();
  EXPECT_TRUE(outcomes_[0].has_value() && outcomes_[0]->ok());
  EXPECT_TRUE(outcomes_[1].has_value() && outcomes_[1]->ok());
  clock_.Advance(absl::Seconds(2));  // the cancelled timeout does not run
  EXPECT_TRUE(outcomes_[1]->ok());
}

}  // namespace
}  // namespace acld
