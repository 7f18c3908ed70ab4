#include "hal/record_ledger.h"

#include <vector>

#include "gtest/gtest.h"

namespace hal {
namespace {

TEST(RecordLedgerTest, RecordsSettleInAnyOrderAndOnce) {
  RecordLedger ledger;
  std::vector<RecordLedger::Wake> woken;
  ledger.Submitted(2);
  ledger.Submitted(1);
  EXPECT_FALSE(ledger.AllSubmittedSettled());
  EXPECT_TRUE(ledger.Settle(2, true, woken));
  EXPECT_FALSE(ledger.Settle(2, true, woken));  // once
  EXPECT_TRUE(ledger.Settled(2));
  EXPECT_FALSE(ledger.Settled(1));
  EXPECT_TRUE(ledger.Settle(1, true, woken));
  EXPECT_TRUE(ledger.AllSubmittedSettled());
  EXPECT_TRUE(ledger.Settled(1));
  EXPECT_FALSE(ledger.Settled(3));
}

TEST(RecordLedgerTest, AWaitIsForItsRecordOnlyEvenBeforeItIsSubmitted) {
  RecordLedger ledger;
  int woken_for_two = 0;
  EXPECT_EQ(ledger.WaitFor(0, [] {}), 0u);
  EXPECT_NE(ledger.WaitFor(2, [&] { ++woken_for_two; }), 0u);
  std::vector<RecordLedger::Wake> woken;
  ledger.Submitted(3);
  ledger.Settle(3, true, woken);  // a later record does not release it
  ledger.Settle(1, true, woken);
  EXPECT_TRUE(woken.empty());
  ledger.Settle(2, true, woken);  // forgotten or ran: the same
  ASSERT_EQ(woken.size(), 1u);
  woken[0]();
  EXPECT_EQ(woken_for_two, 1);
  EXPECT_EQ(ledger.WaitFor(2, [] {}), 0u);
}

TEST(RecordLedgerTest, ASettledRecordIsNotPendingWhenSubmittedLate) {
  RecordLedger ledger;
  std::vector<RecordLedger::Wake> woken;
  ledger.Settle(1, true, woken);
  ledger.Submitted(1);
  EXPECT_TRUE(ledger.AllSubmittedSettled());
}

TEST(RecordLedgerTest, RemembersWhichOfTheLatestRecordsSettledWithoutRunning) {
  RecordLedger ledger;
  std::vector<RecordLedger::Wake> woken;
  ledger.Settle(1, /*ran=*/true, woken);
  ledger.Settle(2, /*ran=*/false, woken);
  EXPECT_FALSE(ledger.Dropped(1));
  EXPECT_TRUE(ledger.Dropped(2));
  EXPECT_FALSE(ledger.Settle(2, /*ran=*/true, woken)) << "settles once";
  EXPECT_TRUE(ledger.Dropped(2));
  for (uint64_t record = 3; record < 3 + RecordLedger::kDroppedKept; ++record) {
    ledger.Settle(record, /*ran=*/false, woken);
  }
  EXPECT_FALSE(ledger.Dropped(2)) << "only the latest are kept";
  EXPECT_TRUE(ledger.Dropped(2 + RecordLedger::kDroppedKept));
}

// A cancelled wait is forgotten: nothing is kept for it, and its record's
// settling wakes only the waits still there.
TEST(RecordLedgerTest, ACancelledWaitIsForgotten) {
  RecordLedger ledger;
  ledger.Submitted(1);
  int woken_kept = 0;
  const uint64_t cancelled = ledger.WaitFor(1, [] { FAIL() << "a cancelled wait woke"; });
  ASSERT_NE(cancelled, 0u);
  ASSERT_NE(ledger.WaitFor(1, [&] { ++woken_kept; }), 0u);
  EXPECT_EQ(ledger.waiting(), 2u);
  ledger.CancelWait(cancelled);
  ledger.CancelWait(cancelled);  // twice: nothing more
  EXPECT_EQ(ledger.waiting(), 1u);
  std::vector<RecordLedger::Wake> woken;
  ledger.Settle(1, true, woken);
  for (auto& wake : woken) wake();
  EXPECT_EQ(woken_kept, 1);
  EXPECT_EQ(ledger.waiting(), 0u);
}

}  // namespace
}  // namespace hal
