#include "daemon/core/device_share.h"

#include <functional>
#include <vector>

#include "gtest/gtest.h"

namespace acld {
namespace {

using Taken = DeviceShare::Taken;
using Waiter = DeviceShare::Waiter;

// For TakeOrWait: `call` is queued if there is no room.
auto Queue(std::function<bool(bool)> call, std::function<bool()> gone = nullptr) {
  return [waiter = Waiter{std::move(call), std::move(gone)}] { return waiter; };
}
const auto kNoWaiter = Queue(nullptr);

TEST(DeviceShareTest, PlacesAreTakenUpToTheLimitThenHandedToWaitersInOrder) {
  DeviceShare share(4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
  std::vector<int> granted;
  for (int id : {1, 2}) {
    EXPECT_EQ(share.TakeOrWait(false, false, Queue([&granted, id](bool with_place) {
                                 if (with_place) granted.push_back(id);
                                 return true;
                               })),
              Taken::kNo);
  }
  EXPECT_EQ(share.used(), 4u);
  // A place that comes back while more than half are taken stays free:
  // waiters get places once half are free, so that each submits several.
  EXPECT_FALSE(share.Give(false));
  EXPECT_TRUE(granted.empty());
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  EXPECT_EQ(granted, std::vector<int>{1});
  EXPECT_EQ(share.used(), 3u);  // two tasks and the first waiter's grant
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  EXPECT_EQ(granted, (std::vector<int>{1, 2}));
  // Nobody waits any more: places come back free.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(share.Give(false));
  EXPECT_EQ(share.used(), 0u);
}

TEST(DeviceShareTest, AWaiterThatNoLongerWaitsPassesItsPlaceOn) {
  DeviceShare share(1);
  ASSERT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
  int asked = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(share.TakeOrWait(false, false, Queue([&](bool) {
                                 ++asked;
                                 return false;
                               })),
              Taken::kNo);
  }
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(share.used(), 0u) << "the place was lost with the waiters that declined it";
  EXPECT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
}

TEST(DeviceShareTest, AnEmptyStreamGetsAPlaceOnlyWhileWorkThatMayBeHeldIsThere) {
  DeviceShare share(4);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
  // Full of work that finishes by itself: an empty stream waits like anyone.
  int asked_again = 0;
  EXPECT_EQ(share.TakeOrWait(false, /*stream_empty=*/true, Queue([&](bool granted) {
                               if (!granted) ++asked_again;
                               return false;
                             })),
            Taken::kNo);
  EXPECT_FALSE(share.Give(false));
  // The first task that may be held (a wait, a host point) arrives: it may
  // wait for the stream that waits, which is asked again.
  EXPECT_EQ(share.TakeOrWait(/*may_be_held=*/true, false, kNoWaiter), Taken::kYesAskWaitersAgain);
  share.AskWaitersAgain();
  EXPECT_EQ(asked_again, 1);
  EXPECT_EQ(share.TakeOrWait(false, /*stream_empty=*/true, kNoWaiter), Taken::kYes);
  EXPECT_EQ(share.TakeOrWait(false, /*stream_empty=*/false, kNoWaiter), Taken::kNo);
  EXPECT_EQ(share.used(), 5u);
  EXPECT_FALSE(share.Give(/*may_be_held=*/true));
  EXPECT_EQ(share.TakeOrWait(false, /*stream_empty=*/true, kNoWaiter), Taken::kNo);
}

TEST(DeviceShareTest, AGrantUsedForWorkThatMayBeHeldCountsAsSuch) {
  DeviceShare share(2);
  ASSERT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
  ASSERT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
  bool granted = false;
  ASSERT_EQ(
      share.TakeOrWait(false, false, Queue([&](bool with_place) { return granted = with_place; })),
      Taken::kNo);
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  ASSERT_TRUE(granted);
  EXPECT_EQ(share.UseGrant(/*may_be_held=*/true), Taken::kYes);
  EXPECT_EQ(share.TakeOrWait(false, /*stream_empty=*/true, kNoWaiter), Taken::kYes);
}

// Waiters that are gone (their streams destroyed while the share was full)
// are dropped when the next waiter comes, not kept until a place frees up;
// those still there keep their turn.
TEST(DeviceShareTest, WaitersThatAreGoneAreDroppedWhenTheNextComes) {
  DeviceShare share(1);
  ASSERT_EQ(share.TakeOrWait(false, false, kNoWaiter), Taken::kYes);
  bool first_granted = false;
  ASSERT_EQ(share.TakeOrWait(false, false, Queue([&](bool granted) {
                               first_granted = granted;
                               return true;
                             })),
            Taken::kNo);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(share.TakeOrWait(false, false,
                               Queue([](bool) -> bool {
                                 ADD_FAILURE() << "a waiter that is gone was asked";
                                 return false;
                               },
                                     [] { return true; })),
              Taken::kNo);
  }
  EXPECT_EQ(share.waiting(), 2u);  // the first, and the last gone one
  ASSERT_TRUE(share.Give(false));
  share.HandOver();
  EXPECT_TRUE(first_granted);
}

}  // namespace
}  // namespace acld
