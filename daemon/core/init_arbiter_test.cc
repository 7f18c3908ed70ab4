#include "daemon/core/init_arbiter.h"

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"

namespace acld {
namespace {

TEST(InitArbiterTest, FirstInitTakesOneReference) {
  InitArbiter arbiter;
  EXPECT_EQ(arbiter.AddReferenceIfInitialized(1), 0u);
  ASSERT_TRUE(arbiter.Initialize(1, "{}").ok());
  EXPECT_EQ(arbiter.CountOf(1), 1u);
  EXPECT_EQ(arbiter.host_count(), 1u);
}

TEST(InitArbiterTest, RepeatedInitAddsReferences) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "").ok());
  EXPECT_EQ(arbiter.AddReferenceIfInitialized(1), 2u);
  EXPECT_EQ(arbiter.AddReferenceIfInitialized(1), 3u);
  EXPECT_EQ(arbiter.host_count(), 3u);
  EXPECT_EQ(AclCodeOf(arbiter.Initialize(1, "")), ACL_ERROR_REPEAT_INITIALIZE);
}

TEST(InitArbiterTest, HostCountIsTheSumOfSessions) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "").ok());
  ASSERT_TRUE(arbiter.Initialize(2, "").ok());
  arbiter.AddReferenceIfInitialized(2);
  arbiter.AddReferenceIfInitialized(2);
  EXPECT_EQ(arbiter.host_count(), 4u);
  EXPECT_EQ(arbiter.RemoveSession(2), 3u);
  EXPECT_EQ(arbiter.host_count(), 1u);
  EXPECT_EQ(arbiter.RemoveSession(2), 0u);
}

TEST(InitArbiterTest, DropReferenceNeedsMoreThanOne) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "").ok());
  EXPECT_FALSE(arbiter.DropReference(1).ok());
  arbiter.AddReferenceIfInitialized(1);
  absl::StatusOr<uint64_t> count = arbiter.DropReference(1);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 1u);
  EXPECT_EQ(arbiter.host_count(), 1u);
}

TEST(InitArbiterTest, FinalizeDropsEveryReference) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "").ok());
  arbiter.AddReferenceIfInitialized(1);
  ASSERT_TRUE(arbiter.Finalize(1).ok());
  EXPECT_EQ(arbiter.CountOf(1), 0u);
  EXPECT_EQ(arbiter.host_count(), 0u);
  EXPECT_EQ(AclCodeOf(arbiter.Finalize(1)), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_EQ(AclCodeOf(arbiter.Finalize(42)), ACL_ERROR_REPEAT_FINALIZE);
}

TEST(InitArbiterTest, FirstConfigStaysAuthoritativeAcrossReinit) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "{\"a\":1}").ok());
  ASSERT_TRUE(arbiter.Finalize(1).ok());
  EXPECT_EQ(AclCodeOf(arbiter.Initialize(1, "{\"a\":2}")), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(arbiter.CountOf(1), 0u);
  EXPECT_EQ(arbiter.host_count(), 0u);
  EXPECT_TRUE(arbiter.Initialize(1, "{\"a\":1}").ok());
}

TEST(InitArbiterTest, AbortedFirstInitLeavesNoConfigBehind) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "first").ok());
  ASSERT_TRUE(arbiter.AbortInitialize(1).ok());
  EXPECT_EQ(arbiter.CountOf(1), 0u);
  EXPECT_EQ(arbiter.host_count(), 0u);
  // The aborted init was not a successful one: another config is fine now.
  EXPECT_TRUE(arbiter.Initialize(1, "second").ok());
}

TEST(InitArbiterTest, AbortedReinitKeepsTheFirstConfig) {
  InitArbiter arbiter;
  ASSERT_TRUE(arbiter.Initialize(1, "first").ok());
  ASSERT_TRUE(arbiter.Finalize(1).ok());
  ASSERT_TRUE(arbiter.Initialize(1, "first").ok());
  ASSERT_TRUE(arbiter.AbortInitialize(1).ok());
  EXPECT_EQ(AclCodeOf(arbiter.Initialize(1, "second")), ACL_ERROR_INVALID_PARAM);
}

TEST(InitArbiterTest, AbortNeedsAFreshInit) {
  InitArbiter arbiter;
  EXPECT_FALSE(arbiter.AbortInitialize(1).ok());
  ASSERT_TRUE(arbiter.Initialize(1, "").ok());
  arbiter.AddReferenceIfInitialized(1);
  EXPECT_FALSE(arbiter.AbortInitialize(1).ok());
  EXPECT_EQ(arbiter.CountOf(1), 2u);
}

}  // namespace
}  // namespace acld
