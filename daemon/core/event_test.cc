#include "daemon/core/event.h"

#include <memory>

#include "gtest/gtest.h"
#include "hal/sim/sim_event.h"
#include "hal/testing/fake_clock.h"

namespace acld {
namespace {

class EventTest : public ::testing::Test {
 protected:
  hal::testing::FakeClock clock_;
  hal::Timer timer_{clock_};
  // Waits and records here never reach a device.
  std::shared_ptr<Event> event_ =
      std::make_shared<Event>(7, SessionId{1}, 0, 0, timer_, /*device_event=*/nullptr);
};

TEST_F(EventTest, AWaitIsResumedWhenItsRecordCompletes) {
  const uint64_t record = event_->TakeRecordNumber();
  int resumed = 0;
  const uint64_t wait = event_->WaitFor(record, [&] { ++resumed; });
  EXPECT_NE(wait, 0u);
  EXPECT_EQ(event_->waiting(), 1u);
  event_->CompleteRecord(record, 0);
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(event_->waiting(), 0u);
  EXPECT_EQ(event_->WaitFor(record, [&] { ++resumed; }), 0u);  // complete already
  EXPECT_EQ(resumed, 1);
}

// A wait is for one record: a later record settling first (on another
// stream, or made by another process holding a shared event) does not
// settle it.
TEST_F(EventTest, ALaterRecordSettlingFirstDoesNotSettleAnEarlierOnesWaits) {
  const uint64_t first = event_->TakeRecordNumber();
  int resumed = 0, synchronized = 0;
  ASSERT_NE(event_->WaitFor(first, [&] { ++resumed; }), 0u);
  event_->Synchronize(absl::InfiniteDuration(), [&](absl::Status) { ++synchronized; });
  const uint64_t second = event_->TakeRecordNumber();
  const uint64_t third = event_->TakeRecordNumber();
  int third_resumed = 0;
  ASSERT_NE(event_->WaitFor(third, [&] { ++third_resumed; }), 0u);
  event_->CompleteRecord(second, 20);
  event_->DropRecord(third);
  EXPECT_EQ(third_resumed, 1) << "its own record settled";
  EXPECT_EQ(resumed, 0);
  EXPECT_EQ(synchronized, 0);
  EXPECT_TRUE(event_->Complete()) << "a query is for the latest record, which settled";
  EXPECT_EQ(event_->WaitFor(second, [] {}), 0u) << "the second one has";
  event_->CompleteRecord(first, 10);
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(synchronized, 1);
  EXPECT_TRUE(event_->Complete());
  int64_t timestamp = 0;
  ASSERT_TRUE(event_->Timestamp(&timestamp));
  EXPECT_EQ(timestamp, 20) << "the latest completed record's time";
}

// A wait whose task was discarded (an abort) is forgotten at once, not kept
// until its record settles: a record that never settles would keep every
// aborted wait for it.
TEST_F(EventTest, ACancelledWaitIsForgottenAndNeverResumed) {
  const uint64_t record = event_->TakeRecordNumber();
  int resumed = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t wait = event_->WaitFor(record, [&] { ++resumed; });
    ASSERT_NE(wait, 0u);
    event_->CancelWait(wait);
  }
  EXPECT_EQ(event_->waiting(), 0u);
  event_->CancelWait(0);  // a wait that never registered
  event_->CompleteRecord(record, 0);
  EXPECT_EQ(resumed, 0);
}

// Another session's synchronizations on an opened IPC event go with that
// session's handle: nobody else's, and not the owner's.
TEST_F(EventTest, ReleasingOneSessionsWaitsAnswersThoseAndKeepsTheRest) {
  event_->TakeRecordNumber();
  int answered_2 = 0, answered_3 = 0, answered_owner = 0;
  for (int i = 0; i < 3; ++i) {
    event_->Synchronize(absl::InfiniteDuration(), [&](absl::Status) { ++answered_2; }, 2);
    event_->Synchronize(absl::Seconds(5), [&](absl::Status) { ++answered_3; }, 3);
  }
  event_->Synchronize(absl::InfiniteDuration(), [&](absl::Status) { ++answered_owner; });
  EXPECT_EQ(event_->waiting(), 7u);
  event_->ReleaseWaitersOf(2);
  EXPECT_EQ(answered_2, 3);
  EXPECT_EQ(event_->waiting(), 4u);
  event_->ReleaseWaitersOf(0);  // "nobody in particular" is not a session
  EXPECT_EQ(event_->waiting(), 4u);
  event_->ReleaseWaitersOf(3);
  EXPECT_EQ(answered_3, 3);
  EXPECT_EQ(answered_owner, 0);
  EXPECT_EQ(event_->waiting(), 1u);
}

// The device runs a record, and releases the streams waiting for it there,
// before the record task's completion reaches the event: a client that
// synchronized such a stream and queries the event next must read it
// complete, with the device's timestamp.
TEST_F(EventTest, ARecordTheDeviceRanReadsCompleteBeforeItsTaskReports) {
  auto device_event = std::make_shared<hal::sim::SimEvent>();
  auto event = std::make_shared<Event>(8, SessionId{1}, 0, 0, timer_, device_event);
  int64_t timestamp = 0;
  const uint64_t first = event->TakeRecordNumber();
  device_event->AddRecord(first);
  EXPECT_FALSE(event->Complete());
  EXPECT_FALSE(event->Timestamp(&timestamp));
  device_event->CompleteRecord(first, 1234);
  EXPECT_TRUE(event->Complete());
  EXPECT_TRUE(event->RecordedAndComplete());
  ASSERT_TRUE(event->Timestamp(&timestamp));
  EXPECT_EQ(timestamp, 1234);
  EXPECT_EQ(event->WaitFor(first, [] {}), 0u);
  bool synchronized = false;
  event->Synchronize(absl::ZeroDuration(), [&](absl::Status status) {
    synchronized = status.ok();
  });
  EXPECT_TRUE(synchronized);
  event->CompleteRecord(first, 1234);

  // A record the device dropped settles the event but records nothing.
  event->Reset();
  const uint64_t second = event->TakeRecordNumber();
  device_event->AddRecord(second);
  device_event->ForgetRecord(second);
  EXPECT_TRUE(event->Complete());
  EXPECT_FALSE(event->RecordedAndComplete());
  EXPECT_FALSE(event->Timestamp(&timestamp));
}

}  // namespace
}  // namespace acld
