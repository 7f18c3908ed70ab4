#include "client/op_batch.h"

#include <string>

#include "gtest/gtest.h"

namespace acl_client {
namespace {

acl::v1::AsyncOp LaunchOf(uint64_t stream, const std::string& name) {
  acl::v1::AsyncOp op;
  op.set_stream(stream);
  op.mutable_launch_kernel()->set_name(name);
  op.mutable_launch_kernel()->add_args(stream * 10);
  return op;
}

TEST(OpBatchTest, HoldsCopiesOfTheOperationsInOrder) {
  OpBatch batch;
  EXPECT_EQ(batch.ops(), 0);
  {
    acl::v1::AsyncOp op = LaunchOf(1, "add_one_u32");
    batch.Add([&](acl::v1::AsyncOp& slot) { slot = op; }, 8);
  }  // the batch does not refer to the caller's op
  batch.Add([](acl::v1::AsyncOp& slot) { slot = LaunchOf(2, "fill_u32"); }, 16);
  EXPECT_EQ(batch.ops(), 2);
  EXPECT_EQ(batch.payload_bytes(), 24u);
  const acl::v1::AsyncBatch& ops = batch.message().async_batch();
  EXPECT_EQ(ops.ops(0).stream(), 1u);
  EXPECT_EQ(ops.ops(0).launch_kernel().name(), "add_one_u32");
  EXPECT_EQ(ops.ops(1).launch_kernel().name(), "fill_u32");
  EXPECT_EQ(ops.ops(1).launch_kernel().args(0), 20u);
}

TEST(OpBatchTest, AClearedBatchStartsEmptyAndTakesMore) {
  OpBatch batch;
  // More than the first block holds, so that the arena grows and is reset.
  const std::string long_name(1000, 'k');
  for (int round = 0; round < 3; ++round) {
    for (uint64_t i = 0; i < 1000; ++i) {
      batch.Add(
          [&](acl::v1::AsyncOp& slot) {
            slot.set_stream(i);
            slot.mutable_launch_kernel()->set_name(long_name);
            slot.mutable_launch_kernel()->add_args(i * 10);
          },
          1);
    }
    ASSERT_EQ(batch.ops(), 1000);
    EXPECT_EQ(batch.message().async_batch().ops(999).launch_kernel().args(0), 9990u);
    std::string wire;
    ASSERT_TRUE(batch.message().SerializeToString(&wire));
    acl::v1::ClientMessage parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire));
    EXPECT_EQ(parsed.async_batch().ops_size(), 1000);
    batch.Clear();
    EXPECT_EQ(batch.ops(), 0);
    EXPECT_EQ(batch.payload_bytes(), 0u);
    EXPECT_TRUE(batch.message().has_async_batch());
  }
}

}  // namespace
}  // namespace acl_client
