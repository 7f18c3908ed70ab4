#include "daemon/core/release_fence.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace acld {
namespace {

// The fence's callers drop what it lets go after their lock; these tests
// hold none, so at once.
std::shared_ptr<void> Hold(ReleaseFence& fence) {
  ReleaseFence::LetGo let_go;
  return fence.Hold(let_go);
}

void Defer(ReleaseFence& fence, const std::shared_ptr<void>& memory) {
  ReleaseFence::LetGo let_go;
  fence.Defer(memory, let_go);
}

TEST(ReleaseFenceTest, MemoryLetGoWithNoHoldIsNotKept) {
  ReleaseFence fence;
  auto memory = std::make_shared<int>(1);
  std::weak_ptr<int> watch = memory;
  Defer(fence, memory);
  memory.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(ReleaseFenceTest, MemoryWaitsForEveryHoldTakenBeforeIt) {
  ReleaseFence fence;
  std::shared_ptr<void> first = Hold(fence);
  std::shared_ptr<void> second = Hold(fence);
  auto memory = std::make_shared<int>(1);
  std::weak_ptr<int> watch = memory;
  Defer(fence, memory);
  memory.reset();
  first.reset();
  EXPECT_FALSE(watch.expired());
  second.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(ReleaseFenceTest, LaterHoldsDoNotKeepMemoryLetGoBeforeThem) {
  ReleaseFence fence;
  std::shared_ptr<void> before = Hold(fence);
  auto memory = std::make_shared<int>(1);
  std::weak_ptr<int> watch = memory;
  Defer(fence, memory);
  memory.reset();
  std::shared_ptr<void> after = Hold(fence);
  before.reset();
  EXPECT_TRUE(watch.expired());
  EXPECT_NE(after, nullptr);
}

TEST(ReleaseFenceTest, MemoryAlsoWaitsForTheEpochsBeforeItsOwn) {
  ReleaseFence fence;
  std::shared_ptr<void> oldest = Hold(fence);
  auto early = std::make_shared<int>(1);
  std::weak_ptr<int> early_watch = early;
  Defer(fence, early);
  early.reset();
  std::shared_ptr<void> newer = Hold(fence);  // a new epoch
  auto late = std::make_shared<int>(2);
  std::weak_ptr<int> late_watch = late;
  Defer(fence, late);
  late.reset();
  newer.reset();  // its own launches are done, the oldest is not
  EXPECT_FALSE(early_watch.expired());
  EXPECT_FALSE(late_watch.expired());
  oldest.reset();
  EXPECT_TRUE(early_watch.expired());
  EXPECT_TRUE(late_watch.expired());
}

TEST(ReleaseFenceTest, MemoryLetGoWhileOnlyAnEarlierEpochIsHeldWaitsForIt) {
  ReleaseFence fence;
  std::shared_ptr<void> oldest = Hold(fence);
  Defer(fence, std::make_shared<int>(0));
  Hold(fence).reset();  // opens a new epoch, held only by the oldest
  auto memory = std::make_shared<int>(1);
  std::weak_ptr<int> watch = memory;
  Defer(fence, memory);
  memory.reset();
  EXPECT_FALSE(watch.expired());
  oldest.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(ReleaseFenceTest, ALongChainIsLetGoWithoutDeepRecursion) {
  ReleaseFence fence;
  std::shared_ptr<void> oldest = Hold(fence);
  auto last = std::make_shared<int>(1);
  std::weak_ptr<int> watch = last;
  // One epoch per free between launches; a recursive release of 500,000
  // epochs would overflow the stack.
  for (int i = 0; i < 500000; ++i) {
    Defer(fence, last);
    Hold(fence).reset();
  }
  last.reset();
  EXPECT_FALSE(watch.expired());
  oldest.reset();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace acld
