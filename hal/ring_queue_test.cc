#include "hal/ring_queue.h"

#include <memory>

#include "gtest/gtest.h"

namespace hal {
namespace {

TEST(RingQueueTest, KeepsOrderAcrossWrapAndGrowth) {
  RingQueue<int> queue;
  int next_in = 0;
  int next_out = 0;
  // Interleave pushes and pops so the head wraps before the queue grows.
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 3; ++i) queue.push_back(next_in++);
    EXPECT_EQ(queue.pop_front(), next_out++);
  }
  EXPECT_EQ(queue.size(), 100u);
  EXPECT_EQ(queue.front(), next_out);
  EXPECT_EQ(queue.back(), next_in - 1);
  EXPECT_EQ(queue.pop_back(), next_in - 1);
  while (!queue.empty()) EXPECT_EQ(queue.pop_front(), next_out++);
  EXPECT_EQ(next_out, next_in - 1);
}

TEST(RingQueueTest, ReserveMakesRoomOnceAndKeepsAWrappedQueuesOrder) {
  RingQueue<int> queue;
  for (int i = 0; i < 4; ++i) queue.push_back(i);
  EXPECT_EQ(queue.pop_front(), 0);
  queue.push_back(4);  // wraps: the head is at slot 1
  queue.reserve(1000);
  EXPECT_EQ(queue.capacity(), 1000u);
  for (int i = 5; i < 1000; ++i) queue.push_back(i);
  EXPECT_EQ(queue.capacity(), 1000u);  // no growth while filling what was reserved
  queue.reserve(10);                    // never shrinks
  EXPECT_EQ(queue.capacity(), 1000u);
  for (int i = 1; i < 1000; ++i) EXPECT_EQ(queue.pop_front(), i);
}

// Batches that each reserve room for what they add grow the storage
// geometrically, not by one batch at a time (which moves the whole queue
// on every batch).
TEST(RingQueueTest, ReservingBatchAfterBatchGrowsGeometrically) {
  RingQueue<int> queue;
  int growths = 0;
  size_t capacity = queue.capacity();
  for (int batch = 0; batch < 1000; ++batch) {
    queue.reserve(queue.size() + 10);
    for (int i = 0; i < 10; ++i) queue.push_back(batch * 10 + i);
    if (queue.capacity() != capacity) {
      ++growths;
      capacity = queue.capacity();
    }
  }
  EXPECT_LE(growths, 12);  // 10 to 10,000 items: about log2(1000) doublings
  for (int i = 0; i < 10000; ++i) EXPECT_EQ(queue.pop_front(), i);
}

TEST(RingQueueTest, PushFrontPutsItemsBackAheadOfTheRest) {
  RingQueue<int> queue;
  queue.push_front(2);  // into an empty queue
  for (int i = 3; i < 6; ++i) queue.push_back(i);
  queue.push_front(1);  // wraps below slot 0
  queue.push_front(0);  // grows
  for (int i = 0; i < 6; ++i) EXPECT_EQ(queue.pop_front(), i);
  EXPECT_TRUE(queue.empty());
}

TEST(RingQueueTest, AnEmptyQueueHoldsNoStorage) {
  RingQueue<int> queue;
  EXPECT_EQ(queue.capacity(), 0u);
}

TEST(RingQueueTest, SteadyTrafficReusesItsStorage) {
  RingQueue<int> queue;
  for (int i = 0; i < 10; ++i) queue.push_back(i);
  const size_t grown = queue.capacity();
  while (!queue.empty()) queue.pop_front();
  EXPECT_EQ(queue.capacity(), grown);
  for (int i = 0; i < 10; ++i) queue.push_back(i);
  EXPECT_EQ(queue.capacity(), grown);
}

TEST(RingQueueTest, ADrainedBurstGivesItsStorageBack) {
  RingQueue<int> queue;
  for (int i = 0; i < 10000; ++i) queue.push_back(i);
  EXPECT_GE(queue.capacity(), 10000u);
  while (queue.size() > 1) queue.pop_front();
  EXPECT_GE(queue.capacity(), 10000u);  // not drained yet
  queue.pop_back();
  EXPECT_EQ(queue.capacity(), 0u);

  for (int i = 0; i < 10000; ++i) queue.push_back(i);
  queue.clear();
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.capacity(), 0u);
}

TEST(RingQueueTest, AKeepingQueueHoldsItsStorageUntilItsOwnerReleasesIt) {
  RingQueue<int> queue(RingQueue<int>::Drained::kKeep);
  for (int i = 0; i < 10000; ++i) queue.push_back(i);
  const size_t grown = queue.capacity();
  while (!queue.empty()) queue.pop_front();
  EXPECT_EQ(queue.capacity(), grown);
  EXPECT_TRUE(queue.holds_spare_storage());
  for (int i = 0; i < 10000; ++i) queue.push_back(i);  // the next batch reuses it
  EXPECT_EQ(queue.capacity(), grown);
  EXPECT_FALSE(queue.holds_spare_storage());
  queue.ReleaseStorage();  // not while it holds items
  EXPECT_EQ(queue.capacity(), grown);
  queue.clear();
  queue.ReleaseStorage();
  EXPECT_EQ(queue.capacity(), 0u);
  EXPECT_FALSE(queue.holds_spare_storage());
}

TEST(RingQueueTest, PoppedSlotsReleaseWhatTheyHeld) {
  RingQueue<std::shared_ptr<int>> queue;
  auto held = std::make_shared<int>(7);
  queue.push_back(held);
  queue.push_back(held);
  queue.push_back(std::make_shared<int>(8));
  EXPECT_EQ(held.use_count(), 3);
  EXPECT_EQ(*queue.pop_front(), 7);
  EXPECT_EQ(held.use_count(), 2);
  queue.clear();
  EXPECT_EQ(held.use_count(), 1);
}

TEST(RingQueueTest, AMovedQueueTakesItsItemsAndADestroyedOneReleasesThem) {
  auto held = std::make_shared<int>(7);
  {
    RingQueue<std::shared_ptr<int>> queue;
    for (int i = 0; i < 5; ++i) queue.push_back(held);  // grown once, wrapped below
    queue.pop_front();
    queue.push_back(held);
    RingQueue<std::shared_ptr<int>> moved;
    std::swap(moved, queue);
    EXPECT_TRUE(queue.empty());
    EXPECT_EQ(moved.size(), 5u);
    EXPECT_EQ(held.use_count(), 6);
    queue = std::move(moved);
    EXPECT_EQ(queue.size(), 5u);
    EXPECT_EQ(held.use_count(), 6);
  }
  EXPECT_EQ(held.use_count(), 1);
}

}  // namespace
}  // namespace hal
