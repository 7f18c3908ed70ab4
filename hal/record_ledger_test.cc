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
  EXPECT_TRUE(ledger.Settle(2, woken));
  EXPECT_FALSE(ledger.Settle(2, woken));  // once
  EXPECT_TRUE(ledger.Settled(2));
  EXPECT_FALSE(ledger.Settled(1));
  EXPECT_TRUE(ledger.Settle(1, woken));
  EXPECT_TRUE(ledger.AllSubmittedSettled());
  EXPECT_TRUE(ledger.Settled(1));
  EXPECT_FALSE(ledger.Settled(3));
}

TEST(RecordLedgerTest, AWaitIsForItsRecordOnlyEvenBeforeItIsSubmitted) {
  RecordLedger ledger;
  int woken_for_two = 0;
  EXPECT_TRUE(ledger.WaitFor(0, [] {}));
  EXPECT_FALSE(ledger.WaitFor(2, [&] { ++woken_for_two; }));
  std::vector<RecordLedger::Wake> woken;
  ledger.Submitted(3);
  ledger.Settle(3, woken);  // a later record does not release it
  ledger.Settle(1, woken);
  EXPECT_TRUE(woken.empty());
  ledger.Settle(2, woken);  // forgotten or ran: the same
  ASSERT_EQ(woken.size(), 1u);
  woken[0]();
  EXPECT_EQ(woken_for_two, 1);
  EXPECT_TRUE(ledger.WaitFor(2, [] {}));
}

TEST(RecordLedgerTest, ASettledRecordIsNotPendingWhenSubmittedLate) {
  RecordLedger ledger;
  std::vector<RecordLedger::Wake> woken;
  ledger.Settle(1, woken);
  ledger.Submitted(1);
  EXPECT_TRUE(ledger.AllSubmittedSettled());
}

}  // namespace
}  // namespace hal
