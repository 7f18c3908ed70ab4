#include "hal/record_ledger.h"

#include <algorithm>
#include <random>
#include <set>
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
  const uint64_t kept = ledger.WaitFor(1, [&] { ++woken_kept; });
  ASSERT_NE(kept, 0u);
  EXPECT_EQ(ledger.waiting(), 2u);
  EXPECT_TRUE(ledger.CancelWait(cancelled));
  EXPECT_FALSE(ledger.CancelWait(cancelled));  // twice: nothing more
  EXPECT_EQ(ledger.waiting(), 1u);
  std::vector<RecordLedger::Wake> woken;
  ledger.Settle(1, true, woken);
  for (auto& wake : woken) wake();
  EXPECT_EQ(woken_kept, 1);
  EXPECT_EQ(ledger.waiting(), 0u);
  EXPECT_FALSE(ledger.CancelWait(kept));  // woken already: nothing to cancel
  EXPECT_EQ(ledger.waiting(), 0u);
}

// Records that settle behind one that does not are kept as runs: a client
// recording an event again and again while one of its records is held
// forever costs the ledger one run, not one entry a record.
TEST(RecordLedgerTest, RecordsSettledBehindAStuckOneAreKeptAsOneRun) {
  RecordLedger ledger;
  std::vector<RecordLedger::Wake> woken;
  ledger.Submitted(1);  // never settles until the end
  for (uint64_t record = 2; record <= 10001; ++record) {
    ledger.Submitted(record);
    ledger.Settle(record, true, woken);
  }
  EXPECT_EQ(ledger.settled_runs(), 1u);
  EXPECT_FALSE(ledger.Settled(1));
  EXPECT_TRUE(ledger.Settled(5000));
  EXPECT_TRUE(ledger.Settled(10001));
  EXPECT_FALSE(ledger.Settled(10002));
  ledger.Settle(1, false, woken);
  EXPECT_EQ(ledger.settled_runs(), 0u);
  EXPECT_TRUE(ledger.Settled(10001));
  EXPECT_TRUE(ledger.AllSubmittedSettled());
}

// Records settling in any order: the ledger says what a plain set of the
// settled records says, after every one.
TEST(RecordLedgerTest, RecordsSettlingInAnyOrderAreTrackedExactly) {
  constexpr uint64_t kRecords = 300;
  std::vector<uint64_t> order;
  for (uint64_t record = 1; record <= kRecords; ++record) order.push_back(record);
  std::mt19937 random(7);
  std::shuffle(order.begin(), order.end(), random);
  RecordLedger ledger;
  std::set<uint64_t> settled;
  std::vector<RecordLedger::Wake> woken;
  for (uint64_t record : order) {
    EXPECT_TRUE(ledger.Settle(record, true, woken));
    EXPECT_FALSE(ledger.Settle(record, true, woken));  // once only
    settled.insert(record);
    for (uint64_t probe = 1; probe <= kRecords + 1; ++probe) {
      ASSERT_EQ(ledger.Settled(probe), settled.count(probe) > 0) << "record " << probe;
    }
  }
  EXPECT_EQ(ledger.settled_runs(), 0u);
}

}  // namespace
}  // namespace hal
