#include "client/callback_registry.h"

#include <thread>
#include <vector>

#include "proto/acl/acl_status.h"
#include "gtest/gtest.h"

namespace acl_client {
namespace {

aclError First(void*) { return ACL_SUCCESS; }
aclError Second(void*) { return ACL_SUCCESS; }
aclError Third(void*) { return ACL_SUCCESS; }

std::vector<aclFinalizeCallbackFunc> Callbacks(
    const FinalizeCallbackRegistry& registry,
    std::initializer_list<aclRegisterCallbackType> order) {
  std::vector<aclFinalizeCallbackFunc> callbacks;
  for (const auto& entry : registry.InOrder(order)) callbacks.push_back(entry.callback);
  return callbacks;
}

TEST(CallbackRegistryTest, NullCallbackIsInvalid) {
  FinalizeCallbackRegistry registry;
  EXPECT_EQ(acld::AclCodeOf(registry.Register(ACL_REG_TYPE_OTHER, nullptr, nullptr)),
            ACL_ERROR_INVALID_PARAM);
}

TEST(CallbackRegistryTest, OneCallbackPerTypeExceptOther) {
  FinalizeCallbackRegistry registry;
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_ACL_MODEL, First, nullptr).ok());
  EXPECT_EQ(acld::AclCodeOf(registry.Register(ACL_REG_TYPE_ACL_MODEL, Second, nullptr)),
            ACL_ERROR_INTERNAL_ERROR);
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_OTHER, First, nullptr).ok());
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_OTHER, Second, nullptr).ok());
}

TEST(CallbackRegistryTest, NotifiesInTypeOrderThenOtherInRegistrationOrder) {
  FinalizeCallbackRegistry registry;
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_OTHER, Third, nullptr).ok());
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_ACL_DVPP, Second, nullptr).ok());
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_OTHER, First, nullptr).ok());
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_ACL_OP_COMPILER, First, nullptr).ok());
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_ACL_TDT_CHANNEL, Second, nullptr).ok());
  EXPECT_EQ(Callbacks(registry, kFinalizeNotifyOrder),
            (std::vector<aclFinalizeCallbackFunc>{First, Second, Third, First}));
  // TDT_CHANNEL is kept but not part of the finalize order.
  EXPECT_EQ(Callbacks(registry, {ACL_REG_TYPE_ACL_TDT_CHANNEL}),
            std::vector<aclFinalizeCallbackFunc>{Second});
}

TEST(CallbackRegistryTest, UnregisterNeedsTheSameTypeAndFunction) {
  FinalizeCallbackRegistry registry;
  EXPECT_EQ(acld::AclCodeOf(registry.Unregister(ACL_REG_TYPE_OTHER, First)),
            ACL_ERROR_INTERNAL_ERROR);
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_ACL_MODEL, First, nullptr).ok());
  EXPECT_EQ(acld::AclCodeOf(registry.Unregister(ACL_REG_TYPE_ACL_MODEL, Second)),
            ACL_ERROR_INTERNAL_ERROR);
  EXPECT_EQ(acld::AclCodeOf(registry.Unregister(ACL_REG_TYPE_OTHER, First)),
            ACL_ERROR_INTERNAL_ERROR);
  EXPECT_TRUE(registry.Unregister(ACL_REG_TYPE_ACL_MODEL, First).ok());
  EXPECT_TRUE(registry.InOrder(kFinalizeNotifyOrder).empty());
  // The type is free again.
  EXPECT_TRUE(registry.Register(ACL_REG_TYPE_ACL_MODEL, Second, nullptr).ok());
}

TEST(CallbackRegistryTest, UnregisterRemovesOneOfSeveralOtherCallbacks) {
  FinalizeCallbackRegistry registry;
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_OTHER, First, nullptr).ok());
  ASSERT_TRUE(registry.Register(ACL_REG_TYPE_OTHER, Second, nullptr).ok());
  ASSERT_TRUE(registry.Unregister(ACL_REG_TYPE_OTHER, First).ok());
  EXPECT_EQ(Callbacks(registry, kFinalizeNotifyOrder),
            std::vector<aclFinalizeCallbackFunc>{Second});
}

TEST(CallbackRegistryTest, ConcurrentRegistrationKeepsEveryCallback) {
  FinalizeCallbackRegistry registry;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&registry, t] {
      for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(registry
                        .Register(ACL_REG_TYPE_OTHER, First,
                                  reinterpret_cast<void*>(static_cast<intptr_t>(t)))
                        .ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(registry.InOrder({ACL_REG_TYPE_OTHER}).size(), 800u);
}

}  // namespace
}  // namespace acl_client
