#include "daemon/core/quota_group.h"

#include <cstdint>
#include <limits>
#include <string>

#include "acl/acl_base.h"
#include "daemon/core/device_view.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

constexpr char kGroupId[] = "0123456789abcdef0123456789abcdef";

int Code(const absl::Status& status) { return AclCodeOf(status); }

bool Mentions(const absl::Status& status, const std::string& text) {
  return status.message().find(text) != absl::string_view::npos;
}

QuotaGroupSpec Spec(std::vector<int32_t> devices, std::vector<uint64_t> limits) {
  QuotaGroupSpec spec;
  spec.devices = std::move(devices);
  spec.memory_limits = std::move(limits);
  return spec;
}

// --- CheckQuotaGroupSpec --------------------------------------------------

TEST(CheckQuotaGroupSpecTest, AGroupNeedsAtLeastOneDevice) {
  absl::Status status = CheckQuotaGroupSpec(Spec({}, {}), 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

TEST(CheckQuotaGroupSpecTest, DevicesOutsideTheHostAreRefused) {
  absl::Status past_end = CheckQuotaGroupSpec(Spec({4}, {0}), 4);
  EXPECT_EQ(past_end.code(), absl::StatusCode::kInvalidArgument) << past_end;
  EXPECT_TRUE(Mentions(past_end, "4")) << past_end;
  EXPECT_EQ(CheckQuotaGroupSpec(Spec({0, 7}, {0, 0}), 4).code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status negative = CheckQuotaGroupSpec(Spec({-1}, {0}), 4);
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument) << negative;
  EXPECT_TRUE(Mentions(negative, "-1")) << negative;
  EXPECT_EQ(CheckQuotaGroupSpec(Spec({std::numeric_limits<int32_t>::min()}, {0}), 4).code(),
            absl::StatusCode::kInvalidArgument);
  // A host without devices has room for no group.
  EXPECT_EQ(CheckQuotaGroupSpec(Spec({0}, {0}), 0).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckQuotaGroupSpecTest, ADeviceNamedTwiceIsRefused) {
  absl::Status status = CheckQuotaGroupSpec(Spec({1, 2, 1}, {0, 0, 0}), 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(Mentions(status, "twice")) << status;
}

TEST(CheckQuotaGroupSpecTest, OneMemoryLimitPerDevice) {
  EXPECT_EQ(CheckQuotaGroupSpec(Spec({0, 1}, {100}), 4).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckQuotaGroupSpec(Spec({0}, {100, 200}), 4).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckQuotaGroupSpec(Spec({0}, {}), 4).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckQuotaGroupSpecTest, AValidSpecPasses) {
  EXPECT_TRUE(CheckQuotaGroupSpec(Spec({0}, {0}), 1).ok());
  EXPECT_TRUE(CheckQuotaGroupSpec(Spec({3, 0, 2}, {1 << 20, 0, 4096}), 4).ok());
  QuotaGroupSpec all = Spec({0, 1, 2, 3}, {1, 2, 3, 4});
  all.max_streams = 8;
  all.max_sessions = 2;
  EXPECT_TRUE(CheckQuotaGroupSpec(all, 4).ok());
}

// --- QuotaGroup memory ----------------------------------------------------

TEST(QuotaGroupTest, KeepsItsIdSpecAndView) {
  QuotaGroup group(kGroupId, Spec({2, 0}, {100, 200}));
  EXPECT_EQ(group.id(), kGroupId);
  EXPECT_EQ(group.spec().devices, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(group.view().count(), 2);
  EXPECT_FALSE(group.view().is_host());
  EXPECT_EQ(*group.view().ToHost(0), 2);
  EXPECT_EQ(*group.view().ToHost(1), 0);
}

TEST(QuotaGroupTest, ChargesWithinTheLimitOfEachDeviceIndependently) {
  QuotaGroup group(kGroupId, Spec({2, 0}, {1000, 500}));
  EXPECT_TRUE(group.ChargeMemory(2, 600, 600, "aclrtMalloc").ok());
  EXPECT_TRUE(group.ChargeMemory(2, 400, 400, "aclrtMalloc").ok());  // exactly the limit
  EXPECT_EQ(group.MemoryUsed(2), 1000u);
  EXPECT_EQ(Code(group.ChargeMemory(2, 1, 1, "aclrtMalloc")), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(group.MemoryUsed(2), 1000u) << "a refused charge is not kept";
  // Device 0 has its own limit, untouched by what device 2 holds.
  EXPECT_EQ(group.MemoryUsed(0), 0u);
  EXPECT_TRUE(group.ChargeMemory(0, 500, 500, "aclrtMalloc").ok());
  EXPECT_EQ(Code(group.ChargeMemory(0, 1, 1, "aclrtMalloc")), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(group.MemoryUsed(0), 500u);
  EXPECT_EQ(group.MemoryUsed(2), 1000u);
}

TEST(QuotaGroupTest, ASingleChargeOverTheLimitIsRefused) {
  QuotaGroup group(kGroupId, Spec({1}, {4096}));
  EXPECT_EQ(Code(group.ChargeMemory(1, 4097, 4097, "aclrtMalloc")),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(Code(group.ChargeMemory(1, std::numeric_limits<uint64_t>::max(), 1, "aclrtMalloc")),
            ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(group.MemoryUsed(1), 0u);
}

TEST(QuotaGroupTest, ALimitOfZeroIsNoLimit) {
  QuotaGroup group(kGroupId, Spec({0, 1}, {0, 100}));
  EXPECT_TRUE(group.ChargeMemory(0, uint64_t{1} << 40, 1, "aclrtMalloc").ok());
  EXPECT_TRUE(group.ChargeMemory(0, uint64_t{1} << 40, 1, "aclrtMalloc").ok());
  EXPECT_EQ(group.MemoryUsed(0), uint64_t{1} << 41);
  EXPECT_EQ(Code(group.ChargeMemory(1, 101, 101, "aclrtMalloc")), ACL_ERROR_RT_MEMORY_ALLOCATION);
}

TEST(QuotaGroupTest, TheRefusalIsAMemoryErrorNamingTheGroupAndTheCall) {
  QuotaGroup group(kGroupId, Spec({3}, {1024}));
  ASSERT_TRUE(group.ChargeMemory(3, 1024, 1000, "aclrtMalloc").ok());
  absl::Status refused = group.ChargeMemory(3, 512, 7, "aclrtMallocPhysical");
  EXPECT_EQ(Code(refused), ACL_ERROR_RT_MEMORY_ALLOCATION) << refused;
  EXPECT_EQ(Code(refused), 207001);
  // Its public name, never the id that opens its directory (messages are logged).
  EXPECT_TRUE(Mentions(refused, QuotaGroupName(kGroupId))) << refused;
  EXPECT_FALSE(Mentions(refused, kGroupId)) << refused;
  EXPECT_TRUE(Mentions(refused, "aclrtMallocPhysical")) << refused;
  EXPECT_TRUE(Mentions(refused, "1024")) << refused;  // the limit
}

TEST(QuotaGroupTest, UnchargingGivesTheRoomBack) {
  QuotaGroup group(kGroupId, Spec({0}, {1000}));
  ASSERT_TRUE(group.ChargeMemory(0, 1000, 1000, "aclrtMalloc").ok());
  EXPECT_FALSE(group.ChargeMemory(0, 300, 300, "aclrtMalloc").ok());
  group.UnchargeMemory(0, 300);
  EXPECT_EQ(group.MemoryUsed(0), 700u);
  EXPECT_TRUE(group.ChargeMemory(0, 300, 300, "aclrtMalloc").ok());
  EXPECT_FALSE(group.ChargeMemory(0, 1, 1, "aclrtMalloc").ok());
  group.UnchargeMemory(0, 1000);
  EXPECT_EQ(group.MemoryUsed(0), 0u);
  EXPECT_TRUE(group.ChargeMemory(0, 1000, 1000, "aclrtMalloc").ok());
}

TEST(QuotaGroupTest, UnchargingMoreThanChargedDoesNotUnderflow) {
  QuotaGroup group(kGroupId, Spec({0, 1}, {1000, 1000}));
  ASSERT_TRUE(group.ChargeMemory(0, 100, 100, "aclrtMalloc").ok());
  group.UnchargeMemory(0, 5000);
  EXPECT_EQ(group.MemoryUsed(0), 0u);
  group.UnchargeMemory(1, 5000);  // never charged
  EXPECT_EQ(group.MemoryUsed(1), 0u);
  group.UnchargeMemory(7, 5000);  // not even the group's
  EXPECT_EQ(group.MemoryUsed(7), 0u);
  // Had it wrapped, "used" would be near 2^64 and everything refused.
  EXPECT_TRUE(group.ChargeMemory(0, 1000, 1000, "aclrtMalloc").ok());
  EXPECT_TRUE(group.ChargeMemory(1, 1000, 1000, "aclrtMalloc").ok());
  EXPECT_FALSE(group.ChargeMemory(0, 1, 1, "aclrtMalloc").ok());
}

TEST(QuotaGroupTest, ADeviceOutsideTheGroupIsRefused) {
  QuotaGroup group(kGroupId, Spec({2, 0}, {0, 0}));  // no limits: only membership counts
  absl::Status refused = group.ChargeMemory(1, 1, 1, "aclrtMalloc");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(Code(refused), ACL_ERROR_RT_INVALID_DEVICEID) << refused;
  EXPECT_TRUE(Mentions(refused, QuotaGroupName(kGroupId))) << refused;
  EXPECT_FALSE(group.ChargeMemory(-1, 1, 1, "aclrtMalloc").ok());
  EXPECT_EQ(group.MemoryUsed(1), 0u);
}

TEST(QuotaGroupTest, RetireMarksTheGroupRetired) {
  QuotaGroup group(kGroupId, Spec({0}, {0}));
  EXPECT_FALSE(group.retired());
  group.Retire();
  EXPECT_TRUE(group.retired());
  group.Retire();
  EXPECT_TRUE(group.retired());
}

// --- DeviceView -----------------------------------------------------------

TEST(DeviceViewTest, TheHostViewPassesEveryIdThrough) {
  const DeviceView view = DeviceView::Host(4);
  EXPECT_TRUE(view.is_host());
  EXPECT_EQ(view.count(), 4);
  for (int32_t device : {0, 1, 3}) {
    EXPECT_EQ(*view.ToHost(device), device);
    EXPECT_EQ(*view.ToSession(device), device);
  }
  // Invalid ids too: the runtime checks them and answers as it always did.
  for (int32_t device : {4, 1000, -1, std::numeric_limits<int32_t>::min()}) {
    absl::StatusOr<int32_t> host = view.ToHost(device);
    ASSERT_TRUE(host.ok()) << device << ": " << host.status();
    EXPECT_EQ(*host, device);
    ASSERT_TRUE(view.ToSession(device).has_value()) << device;
    EXPECT_EQ(*view.ToSession(device), device);
  }
  EXPECT_TRUE(DeviceView::Host(0).is_host());
  EXPECT_EQ(*DeviceView::Host(0).ToHost(0), 0);
}

TEST(DeviceViewTest, AGroupViewMapsBothWays) {
  const DeviceView view = DeviceView::Of({2, 0, 5});
  EXPECT_FALSE(view.is_host());
  EXPECT_EQ(view.count(), 3);
  EXPECT_EQ(*view.ToHost(0), 2);
  EXPECT_EQ(*view.ToHost(1), 0);
  EXPECT_EQ(*view.ToHost(2), 5);
  EXPECT_EQ(view.ToSession(2), std::optional<int32_t>(0));
  EXPECT_EQ(view.ToSession(0), std::optional<int32_t>(1));
  EXPECT_EQ(view.ToSession(5), std::optional<int32_t>(2));
  for (int32_t device = 0; device < view.count(); ++device) {
    EXPECT_EQ(view.ToSession(*view.ToHost(device)), std::optional<int32_t>(device));
  }
}

TEST(DeviceViewTest, IdsOutsideAGroupViewAreInvalidDeviceIds) {
  const DeviceView view = DeviceView::Of({2, 0});
  for (int32_t device : {2, 3, 100, -1, std::numeric_limits<int32_t>::min(),
                         std::numeric_limits<int32_t>::max()}) {
    absl::StatusOr<int32_t> host = view.ToHost(device);
    ASSERT_FALSE(host.ok()) << device << " -> " << *host;
    EXPECT_EQ(Code(host.status()), ACL_ERROR_RT_INVALID_DEVICEID) << host.status();
    EXPECT_EQ(Code(host.status()), 107001);
    EXPECT_TRUE(Mentions(host.status(), "2 devices")) << host.status();
    EXPECT_TRUE(Mentions(host.status(), std::to_string(device))) << host.status();
  }
}

TEST(DeviceViewTest, AHostDeviceOutsideTheViewHasNoSessionId) {
  const DeviceView view = DeviceView::Of({2, 0});
  EXPECT_EQ(view.ToSession(1), std::nullopt);
  EXPECT_EQ(view.ToSession(3), std::nullopt);
  EXPECT_EQ(view.ToSession(-1), std::nullopt);
}

}  // namespace
}  // namespace acld
