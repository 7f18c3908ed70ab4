#include "daemon/core/device_share.h"

#include <vector>

#include "gtest/gtest.h"

namespace acld {
namespace {

TEST(DeviceShareTest, PlacesAreTakenUpToTheLimitThenWaitedForInOrder) {
  DeviceShare share(2);
  EXPECT_TRUE(share.TakeOrWait(false, false, nullptr));
  EXPECT_TRUE(share.TakeOrWait(false, false, nullptr));
  std::vector<int> granted;
  EXPECT_FALSE(share.TakeOrWait(false, false, [&] {
    granted.push_back(1);
    return true;
  }));
  EXPECT_FALSE(share.TakeOrWait(false, false, [&] {
    granted.push_back(2);
    return true;
  }));
  EXPECT_EQ(share.used(), 2u);
  // A place that comes back goes to the oldest waiter, not to whoever asks.
  ASSERT_TRUE(share.Give(false));
  EXPECT_FALSE(share.TakeOrWait(false, false, nullptr));
  share.HandOver();
  EXPECT_EQ(granted, std::vector<int>{1});
  EXPECT_EQ(share.used(), 2u);
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  EXPECT_EQ(granted, (std::vector<int>{1, 2}));
  // Nobody waits any more: places come back free.
  EXPECT_FALSE(share.Give(false));
  EXPECT_FALSE(share.Give(false));
  EXPECT_EQ(share.used(), 0u);
}

TEST(DeviceShareTest, AWaiterThatNoLongerWaitsPassesItsPlaceOn) {
  DeviceShare share(1);
  ASSERT_TRUE(share.TakeOrWait(false, false, nullptr));
  int asked = 0;
  ASSERT_FALSE(share.TakeOrWait(false, false, [&] {
    ++asked;
    return false;
  }));
  ASSERT_FALSE(share.TakeOrWait(false, false, [&] {
    ++asked;
    return false;
  }));
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(share.used(), 0u) << "the place was lost with the waiters that declined it";
  EXPECT_TRUE(share.TakeOrWait(false, false, nullptr));
}

TEST(DeviceShareTest, AnEmptyStreamGetsAPlaceOnlyWhileWorkThatMayBeHeldFillsThem) {
  DeviceShare share(2);
  ASSERT_TRUE(share.TakeOrWait(false, false, nullptr));
  ASSERT_TRUE(share.TakeOrWait(false, false, nullptr));
  // Full of work that finishes by itself: an empty stream waits like anyone.
  EXPECT_FALSE(share.TakeOrWait(false, /*stream_empty=*/true, nullptr));
  EXPECT_FALSE(share.Give(false));
  ASSERT_TRUE(share.TakeOrWait(/*may_be_held=*/true, false, nullptr));
  // Now a wait or a host point holds a place: it may wait for a stream that
  // has nothing on the device, which must be able to submit.
  EXPECT_TRUE(share.TakeOrWait(false, /*stream_empty=*/true, nullptr));
  EXPECT_FALSE(share.TakeOrWait(false, /*stream_empty=*/false, nullptr));
  EXPECT_EQ(share.used(), 3u);
  EXPECT_FALSE(share.Give(/*may_be_held=*/true));
  EXPECT_FALSE(share.TakeOrWait(false, /*stream_empty=*/true, nullptr));
}

TEST(DeviceShareTest, AGrantUsedForWorkThatMayBeHeldCountsAsSuch) {
  DeviceShare share(1);
  ASSERT_TRUE(share.TakeOrWait(false, false, nullptr));
  bool granted = false;
  ASSERT_FALSE(share.TakeOrWait(false, false, [&] { return granted = true; }));
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  ASSERT_TRUE(granted);
  share.UseGrant(/*may_be_held=*/true);
  EXPECT_TRUE(share.TakeOrWait(false, /*stream_empty=*/true, nullptr));
}

}  // namespace
}  // namespace acld
