#include "hal/turn_queue.h"

#include <string>

#include "gtest/gtest.h"

namespace hal {
namespace {

TEST(TurnQueueTest, KeysTakeTurnsAndEachKeepsItsOrder) {
  TurnQueue<std::string, int> queue;
  for (int i = 0; i < 100; ++i) queue.Push("busy", i);
  queue.Push("other", 1000);
  queue.Push("other", 1001);
  EXPECT_EQ(queue.size(), 102u);
  EXPECT_EQ(queue.Pop(), 0);
  EXPECT_EQ(queue.Pop(), 1000);
  EXPECT_EQ(queue.Pop(), 1);
  EXPECT_EQ(queue.Pop(), 1001);
  for (int i = 2; i < 100; ++i) ASSERT_EQ(queue.Pop(), i);
  EXPECT_TRUE(queue.empty());
  // A key that comes back after its queue emptied waits its turn again.
  queue.Push("other", 7);
  queue.Push("busy", 8);
  EXPECT_EQ(queue.Pop(), 7);
  EXPECT_EQ(queue.Pop(), 8);
}

// Thousands of keys come and go (past kIdleKept, emptied queues are erased
// while others' stay in the turn order): each is still served in turn.
TEST(TurnQueueTest, KeysComingAndGoingPastTheIdleKeptAreServedInTurn) {
  TurnQueue<int, int> queue;
  for (int key = 0; key < 10000; ++key) {
    queue.Push(key, key);
    ASSERT_EQ(queue.Pop(), key);
  }
  for (int key = 0; key < 3; ++key) queue.Push(key, key);
  for (int key = 0; key < 3; ++key) EXPECT_EQ(queue.Pop(), key);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace hal
