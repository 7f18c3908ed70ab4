#include "hal/settled_records.h"

#include "gtest/gtest.h"

namespace hal {
namespace {

TEST(SettledRecordsTest, RecordsSettleInAnyOrder) {
  SettledRecords settled;
  EXPECT_TRUE(settled.Contains(0));
  EXPECT_FALSE(settled.Add(0));
  EXPECT_TRUE(settled.Add(3));
  EXPECT_FALSE(settled.Add(3));
  EXPECT_TRUE(settled.Contains(3));
  EXPECT_FALSE(settled.Contains(1));
  EXPECT_FALSE(settled.Contains(2));
  EXPECT_FALSE(settled.Contains(4));
  EXPECT_EQ(settled.through(), 0u);
  EXPECT_TRUE(settled.Add(1));
  EXPECT_EQ(settled.through(), 1u);
  EXPECT_TRUE(settled.Add(2));
  EXPECT_EQ(settled.through(), 3u);
  EXPECT_EQ(settled.runs(), 0u);
}

// A million records settling behind one that never does are one run.
TEST(SettledRecordsTest, RecordsBehindAStuckOneAreOneRunWhateverTheirOrder) {
  SettledRecords settled;
  for (uint64_t record = 1000000; record >= 2; --record) {
    if (record % 2 == 0) ASSERT_TRUE(settled.Add(record));
  }
  EXPECT_EQ(settled.runs(), 500000u) << "one per gap";
  for (uint64_t record = 3; record < 1000000; record += 2) ASSERT_TRUE(settled.Add(record));
  EXPECT_EQ(settled.runs(), 1u);
  EXPECT_EQ(settled.through(), 0u);
  EXPECT_FALSE(settled.Contains(1));
  EXPECT_TRUE(settled.Contains(1000000));
  EXPECT_TRUE(settled.Add(1));
  EXPECT_EQ(settled.through(), 1000000u);
  EXPECT_EQ(settled.runs(), 0u);
}

}  // namespace
}  // namespace hal
