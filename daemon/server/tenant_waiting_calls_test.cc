#include "daemon/server/tenant_waiting_calls.h"

#include "gtest/gtest.h"

namespace acld::server {
namespace {

TEST(TenantWaitingCallsTest, EachTenantsSessionsTogetherWaitABoundedNumberOfCalls) {
  TenantWaitingCalls waiting(3);
  const Tenant busy(1000, nullptr), other(1001, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(waiting.Take(busy));
  EXPECT_FALSE(waiting.Take(busy));
  EXPECT_EQ(waiting.Of(busy), 3u);
  EXPECT_TRUE(waiting.Take(other)) << "another tenant was held to the first's bound";
  waiting.Give(busy);
  EXPECT_TRUE(waiting.Take(busy));
  waiting.Give(busy, 3);
  EXPECT_EQ(waiting.Of(busy), 0u);
}

}  // namespace
}  // namespace acld::server
