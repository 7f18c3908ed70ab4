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

}  // namespace
}  // namespace hal
