#include "daemon/server/channel_pool.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "hal/testing/eventually.h"

namespace acld::server {
namespace {

// A member whose first turn holds its pool thread until released.
class HoldingMember : public ChannelPool::Member {
 public:
  bool Serve() override {
    if (turns_.fetch_add(1) == 0) {
      started_.Notify();
      release_.WaitForNotification();
    }
    return false;
  }
  absl::Notification started_;
  absl::Notification release_;
  std::atomic<int> turns_{0};
};

// Whether others wait for a thread is what lets a member poll for its
// client: a member that holds the only thread sees the work queued behind it.
TEST(ChannelPoolTest, TellsWhetherOthersWaitForAThread) {
  ChannelPool pool(/*threads=*/1);
  const int doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(doorbell, 0);
  auto member = std::make_shared<HoldingMember>();
  absl::StatusOr<uint64_t> id = pool.Add(doorbell, member);
  ASSERT_TRUE(id.ok()) << id.status();
  member->started_.WaitForNotification();
  EXPECT_FALSE(pool.OthersWaiting());
  std::atomic<bool> ran{false};
  pool.Post([&ran] { ran.store(true); });
  EXPECT_TRUE(pool.OthersWaiting());
  member->release_.Notify();
  EXPECT_TRUE(hal::testing::Eventually([&] { return ran.load(); }));
  EXPECT_TRUE(hal::testing::Eventually([&] { return !pool.OthersWaiting(); }));
  pool.Remove(*id);
  close(doorbell);
}

}  // namespace
}  // namespace acld::server
