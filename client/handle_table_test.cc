#include "client/handle_table.h"

#include "acl/acl_rt.h"
#include "client/host_blocks.h"
#include "gtest/gtest.h"

namespace acl_client {
namespace {

TEST(HandleTableTest, ContextsBringTheirDefaultStream) {
  HandleTable table;
  table.AddContext({10, 1, 11});
  ASSERT_TRUE(table.FindContext(10).has_value());
  EXPECT_EQ(table.FindContext(10)->device, 1);
  EXPECT_EQ(table.StreamDevice(11), 1);
  table.RemoveContext(10);
  EXPECT_FALSE(table.FindContext(10).has_value());
  EXPECT_FALSE(table.StreamDevice(11).has_value());
}

TEST(HandleTableTest, TheLastDeviceReferenceForgetsTheDevicesHandles) {
  HandleTable table;
  table.AddDeviceReference(0);
  table.AddDeviceReference(0);
  table.AddDeviceReference(1);
  table.AddContext({10, 0, 11});
  table.AddStream(12, StreamFacts{0});
  table.AddEvent(13, EventFacts{0});
  table.AddStream(22, StreamFacts{1, 3, ACL_STREAM_FAST_LAUNCH});
  table.DropDeviceReference(0, /*all=*/false);
  EXPECT_TRUE(table.HasEvent(13));
  table.DropDeviceReference(0, /*all=*/false);
  EXPECT_FALSE(table.HasEvent(13));
  EXPECT_FALSE(table.StreamDevice(12).has_value());
  EXPECT_FALSE(table.FindContext(10).has_value());
  EXPECT_EQ(table.StreamDevice(22), 1);  // other devices keep theirs
  ASSERT_TRUE(table.FindStream(22).has_value());
  EXPECT_EQ(table.FindStream(22)->priority, 3u);
  EXPECT_EQ(table.FindStream(22)->flags, ACL_STREAM_FAST_LAUNCH);
  table.DropDeviceReference(1, /*all=*/true);
  EXPECT_FALSE(table.StreamDevice(22).has_value());
}

TEST(HandleTableTest, ClearForgetsEverything) {
  HandleTable table;
  table.AddStream(1, StreamFacts{0});
  table.AddEvent(2, EventFacts{0, ACL_EVENT_SYNC, /*ex=*/true});
  ASSERT_TRUE(table.FindEvent(2).has_value());
  EXPECT_TRUE(table.FindEvent(2)->ex);
  table.Clear();
  EXPECT_FALSE(table.StreamDevice(1).has_value());
  EXPECT_FALSE(table.HasEvent(2));
}

// aclrtFree takes its entry out before acld frees the address (another
// thread may get the address next) and puts it back if the free failed.
TEST(HandleTableTest, AnAllocationTakenOutIsGivenBackWhole) {
  HandleTable table;
  table.AddAllocation(0x1000, 512, 1);
  std::optional<HandleTable::Allocation> removed = table.RemoveAllocation(0x1000);
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(removed->size, 512u);
  EXPECT_EQ(removed->device, 1);
  EXPECT_FALSE(table.InAllocation(0x1100));
  EXPECT_FALSE(table.RemoveAllocation(0x1000).has_value()) << "taken once";
  table.AddAllocation(0x1000, removed->size, removed->device);
  EXPECT_EQ(table.AllocationDevice(0x11ff), std::optional<int32_t>(1));
}

TEST(HostBlocksTest, FindsRangesInsideOneBlock) {
  HostBlocks blocks;
  char memory[256];
  blocks.Add(memory, {128, 7});
  ASSERT_TRUE(blocks.Find(memory + 10, 100).has_value());
  EXPECT_EQ(blocks.Find(memory + 10, 100)->tag, 7u);
  EXPECT_EQ(blocks.Find(memory + 10, 100)->offset, 10u);
  EXPECT_FALSE(blocks.Find(memory + 10, 119).has_value());  // past the end
  EXPECT_FALSE(blocks.Find(memory + 128, 1).has_value());
  EXPECT_FALSE(blocks.Find(memory - 1, 1).has_value());
  EXPECT_TRUE(blocks.Remove(memory).has_value());
  EXPECT_FALSE(blocks.Remove(memory).has_value());
  EXPECT_FALSE(blocks.Find(memory, 1).has_value());
}

}  // namespace
}  // namespace acl_client
