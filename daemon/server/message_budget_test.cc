#include "daemon/server/message_budget.h"

#include <memory>

#include "acl/acl_base.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"

namespace acld::server {
namespace {

TEST(MessageBudgetTest, ATenantsHoldsTogetherStayWithinItsLimitAndOthersAreNotCharged) {
  auto budget = std::make_shared<MessageBudget>(/*per_tenant=*/100);
  const Tenant alice(1000, nullptr);
  const Tenant bob(1001, nullptr);
  MessageBudget::Hold request(budget, alice);
  MessageBudget::Hold replies(budget, alice);
  MessageBudget::Hold bobs(budget, bob);

  ASSERT_TRUE(request.Resize(60).ok());
  ASSERT_TRUE(replies.Resize(40).ok());
  const absl::Status refused = replies.Resize(41);
  EXPECT_EQ(AclCodeOf(refused), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_NE(refused.message().find("uid 1000"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("--max_message_bytes_per_uid"), std::string::npos);
  EXPECT_EQ(replies.bytes(), 40u) << "a refused resize keeps what was held";
  // Another tenant is not charged for the first one's bytes.
  EXPECT_TRUE(bobs.Resize(100).ok());

  ASSERT_TRUE(request.Resize(0).ok());
  EXPECT_TRUE(replies.Resize(100).ok()) << "what was given back is room again";
  EXPECT_EQ(budget->ByTenant().at(alice), 100u);
}

TEST(MessageBudgetTest, AHoldGivesEverythingBackWhenDestroyedAndOverflowIsRefused) {
  auto budget = std::make_shared<MessageBudget>(/*per_tenant=*/1000);
  const Tenant alice(1000, nullptr);
  {
    MessageBudget::Hold hold(budget, alice);
    ASSERT_TRUE(hold.Resize(900).ok());
    MessageBudget::Hold other(budget, alice);
    EXPECT_FALSE(other.Resize(UINT64_MAX).ok()) << "no wrap-around past the limit";
  }
  EXPECT_TRUE(budget->ByTenant().empty());
}

// Each hold's first bytes are counted but not charged: a tenant whose other
// sessions hold its whole budget still gets its small messages through.
TEST(MessageBudgetTest, AHoldsAllowanceIsNeverRefusedNorCharged) {
  auto budget = std::make_shared<MessageBudget>(/*per_tenant=*/100, /*allowance=*/50);
  const Tenant alice(1000, nullptr);
  MessageBudget::Hold hog(budget, alice);
  MessageBudget::Hold small(budget, alice);
  ASSERT_TRUE(hog.Resize(150).ok());  // charged 100: the whole budget
  EXPECT_FALSE(hog.Resize(151).ok());
  EXPECT_TRUE(small.Resize(50).ok()) << "within its allowance";
  EXPECT_EQ(small.bytes(), 50u);
  EXPECT_FALSE(small.Resize(51).ok()) << "beyond it, charged as any";
  EXPECT_EQ(budget->ByTenant().at(alice), 100u);
  ASSERT_TRUE(hog.Resize(40).ok());
  EXPECT_TRUE(budget->ByTenant().empty()) << "nothing charged within the allowances";
}

TEST(MessageBudgetTest, NoLimitChargesWithoutRefusing) {
  auto budget = std::make_shared<MessageBudget>(/*per_tenant=*/0);
  MessageBudget::Hold hold(budget, Tenant(7, nullptr));
  EXPECT_TRUE(hold.Resize(uint64_t{1} << 40).ok());
  EXPECT_EQ(budget->ByTenant().at(Tenant(7, nullptr)), uint64_t{1} << 40);
  EXPECT_EQ(budget->per_tenant_limit(), 0u);
}

}  // namespace
}  // namespace acld::server
