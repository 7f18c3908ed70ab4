#include "daemon/core/release_fence.h"

#include <chrono>
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

// Memory that records the thread that let it go.
std::shared_ptr<void> ReleasedOnThread(std::thread::id* thread) {
  return std::shared_ptr<void>(new int(0), [thread](void* memory) {
    *thread = std::this_thread::get_id();
    delete static_cast<int*>(memory);
  });
}

// The last hold may release a whole session's kept memory: a few pieces go
// in place, many go on the background thread, not on the thread that let
// the hold go (on acl, often the device's completion dispatcher).
TEST(ReleaseFenceTest, ManyPiecesReleasedAtOnceGoInTheBackground) {
  auto background = std::make_shared<BackgroundRelease>();
  ReleaseFence fence(background);
  const std::thread::id here = std::this_thread::get_id();

  std::shared_ptr<void> hold = fence.Hold();
  std::vector<std::thread::id> few(ReleaseFence::kReleasedInPlace);
  for (std::thread::id& thread : few) fence.Defer(ReleasedOnThread(&thread));
  hold.reset();
  for (const std::thread::id& thread : few) EXPECT_EQ(thread, here);

  // Twice: the release thread goes once nothing is queued, and comes back.
  for (int round = 0; round < 2; ++round) {
    hold = fence.Hold();
    std::vector<std::thread::id> many(ReleaseFence::kReleasedInPlace + 1);
    for (std::thread::id& thread : many) fence.Defer(ReleasedOnThread(&thread));
    hold.reset();
    EXPECT_EQ(fence.kept(), 0u);
    for (int i = 0; i < 1000 && background->queued() > 0; ++i) {  // 10 s at most
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(background->queued(), 0u);
    for (const std::thread::id& thread : many) {
      EXPECT_NE(thread, std::thread::id());
      EXPECT_NE(thread, here);
    }
  }
}

// What is still queued when the background goes is let go of then.
TEST(ReleaseFenceTest, TheBackgroundLetsGoOfEverythingQueuedWhenItGoes) {
  auto background = std::make_shared<BackgroundRelease>();
  std::vector<std::weak_ptr<void>> watches;
  for (int batch = 0; batch < 8; ++batch) {
    std::vector<std::shared_ptr<void>> memory;
    for (int i = 0; i < 100; ++i) {
      memory.push_back(std::make_shared<int>(i));
      watches.push_back(memory.back());
    }
    background->Release(std::move(memory));
  }
  background.reset();
  for (const std::weak_ptr<void>& watch : watches) EXPECT_TRUE(watch.expired());
}

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
