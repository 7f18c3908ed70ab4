#include "daemon/core/release_fence.h"

#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace acld {
namespace {

// Memory let go, watched.
struct Watched {
  std::shared_ptr<void> memory = std::make_shared<int>(1);
  std::weak_ptr<void> watch = memory;

  // The fence's is the only reference left.
  void LetGo(ReleaseFence& fence) {
    fence.Defer(memory);
    memory.reset();
  }
  bool released() const { return watch.expired(); }
};

TEST(ReleaseFenceTest, MemoryLetGoWithNoHoldIsNotKept) {
  ReleaseFence fence;
  Watched memory;
  memory.LetGo(fence);
  EXPECT_TRUE(memory.released());
  EXPECT_EQ(fence.kept(), 0u);
}

TEST(ReleaseFenceTest, MemoryWaitsForEveryHoldTakenBeforeItInAnyOrder) {
  ReleaseFence fence;
  std::shared_ptr<void> first = fence.Hold();
  std::shared_ptr<void> second = fence.Hold();
  Watched memory;
  memory.LetGo(fence);
  EXPECT_EQ(fence.kept(), 1u);
  second.reset();
  EXPECT_FALSE(memory.released());
  first.reset();
  EXPECT_TRUE(memory.released());
  EXPECT_EQ(fence.kept(), 0u);
}

TEST(ReleaseFenceTest, LaterHoldsDoNotKeepMemoryLetGoBeforeThem) {
  ReleaseFence fence;
  std::shared_ptr<void> before = fence.Hold();
  Watched memory;
  memory.LetGo(fence);
  std::shared_ptr<void> after = fence.Hold();
  before.reset();
  EXPECT_TRUE(memory.released());
}

TEST(ReleaseFenceTest, MemoryLetGoTwiceIsKeptOnceUntilTheLaterHoldsAreLetGo) {
  ReleaseFence fence;
  std::shared_ptr<void> first = fence.Hold();
  Watched memory;
  fence.Defer(memory.memory);
  std::shared_ptr<void> second = fence.Hold();
  memory.LetGo(fence);
  EXPECT_EQ(fence.kept(), 1u);
  first.reset();
  EXPECT_FALSE(memory.released());
  second.reset();
  EXPECT_TRUE(memory.released());
}

// An import taken and given up again and again, with a launch each time,
// while an old launch stays queued: what the fence keeps does not grow.
TEST(ReleaseFenceTest, RepeatedLetGoOfTheSameMemoryBehindAStuckHoldKeepsOneEntry) {
  ReleaseFence fence;
  std::shared_ptr<void> stuck = fence.Hold();
  Watched memory;
  for (int i = 0; i < 100000; ++i) {
    std::shared_ptr<void> launch = fence.Hold();
    fence.Defer(memory.memory);
  }
  memory.memory.reset();
  EXPECT_EQ(fence.kept(), 1u);
  EXPECT_FALSE(memory.released());
  stuck.reset();
  EXPECT_TRUE(memory.released());
}

TEST(ReleaseFenceTest, HoldsLetGoOnOtherThreadsReleaseEverything) {
  ReleaseFence fence;
  std::vector<std::weak_ptr<void>> watches;
  std::vector<std::thread> launchers;
  for (int t = 0; t < 4; ++t) {
    launchers.emplace_back([&fence] {
      for (int i = 0; i < 20000; ++i) fence.Hold().reset();
    });
  }
  for (int i = 0; i < 20000; ++i) {
    auto memory = std::make_shared<int>(i);
    watches.push_back(memory);
    fence.Defer(memory);
  }
  for (std::thread& launcher : launchers) launcher.join();
  fence.Hold().reset();  // the last hold's release finds the rest
  for (const auto& watch : watches) ASSERT_TRUE(watch.expired());
  EXPECT_EQ(fence.kept(), 0u);
}

}  // namespace
}  // namespace acld
