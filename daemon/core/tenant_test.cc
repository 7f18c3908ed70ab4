#include "daemon/core/tenant.h"

#include <cstdint>
#include <memory>

#include "gtest/gtest.h"

namespace acld {
namespace {

std::shared_ptr<QuotaGroup> Group(const std::string& id) {
  QuotaGroupSpec spec;
  spec.devices = {0};
  spec.memory_limits = {0};
  return std::make_shared<QuotaGroup>(id, spec);
}

TEST(TenantTest, AGroupsSessionsAreOneTenantWhateverTheirUids) {
  const auto group = Group("0123456789abcdef");
  EXPECT_EQ(Tenant(0, group), Tenant(1000, group));
  EXPECT_EQ(Tenant(1000, group).ToString(), "quota group 01234567");
  EXPECT_FALSE(Tenant(0, group) == Tenant(0, nullptr));
  EXPECT_FALSE(Tenant(0, group) == Tenant(0, Group("fedcba9876543210")));
  EXPECT_EQ(Tenant(1000, nullptr).ToString(), "uid 1000");
  EXPECT_FALSE(Tenant(1000, nullptr) == Tenant(1001, nullptr));
}

TEST(TenantTest, ATallyHoldsEachTenantToTheLimitAndForgetsOneAtZero) {
  TenantTally tally(10);
  const Tenant alice(1000, nullptr), bob(1001, nullptr);
  EXPECT_TRUE(tally.Fits(alice, 10));
  EXPECT_FALSE(tally.Fits(alice, 11));
  tally.Add(alice, 7);
  EXPECT_TRUE(tally.Fits(alice, 3));
  EXPECT_FALSE(tally.Fits(alice, 4));
  EXPECT_FALSE(tally.Fits(alice, UINT64_MAX)) << "an amount that would wrap must not fit";
  EXPECT_TRUE(tally.Fits(bob, 10)) << "one tenant's use is not another's";
  tally.Subtract(alice, 7);
  EXPECT_EQ(tally.Of(alice), 0u);
  EXPECT_TRUE(tally.all().empty());
  tally.Add(bob, 2);
  tally.Subtract(bob, 5);  // more than was charged: clamps, never wraps
  EXPECT_EQ(tally.Of(bob), 0u);
}

TEST(TenantTest, ATallyWithoutALimitFitsAnything) {
  TenantTally tally;
  tally.Add(Tenant(1, nullptr), UINT64_MAX - 1);
  EXPECT_TRUE(tally.Fits(Tenant(1, nullptr), UINT64_MAX));
}

}  // namespace
}  // namespace acld
