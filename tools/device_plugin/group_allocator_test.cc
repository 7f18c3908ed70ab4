#include "tools/device_plugin/group_allocator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace acld::device_plugin {
namespace {

using ::testing::ElementsAre;

class GroupRequestTest : public ::testing::Test {
 protected:
  GroupRequestTest() : selection_(*ParseDeviceSelection("0", "1,2", 1 << 20)) {
    DeviceSnapshot snapshot;
    snapshot.acld_reachable = true;
    snapshot.devices[0] = {4 << 20, true};
    snapshot.devices[1] = {4 << 20, true};
    snapshot.devices[2] = {4 << 20, true};
    slices_ = AdvertisedUnits(selection_, ResourceKind::kMemorySlice, snapshot);
    whole_ = AdvertisedUnits(selection_, ResourceKind::kWholeDevice, snapshot);
  }

  const ResourceSpec slice_resource_{"acld.io/npu-memory", ResourceKind::kMemorySlice};
  const ResourceSpec whole_resource_{"acld.io/npu", ResourceKind::kWholeDevice};
  const GroupLabels labels_{"acld.io"};
  DeviceSelection selection_;
  std::vector<AdvertisedUnit> slices_;
  std::vector<AdvertisedUnit> whole_;
};

TEST_F(GroupRequestTest, SlicesBecomeMemoryPerDeviceInHostOrder) {
  absl::StatusOr<acl::v1::CreateGroupRequest> request = GroupRequestFor(
      slice_resource_, selection_, labels_, slices_,
      {"npu-2-slice-0", "npu-1-slice-3", "npu-2-slice-1", "npu-2-slice-3"});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->devices(), ElementsAre(1, 2));
  EXPECT_THAT(request->memory_bytes(), ElementsAre(1u << 20, 3u << 20));
  EXPECT_EQ(request->labels().at("acld.io/resource"), "acld.io/npu-memory");
  EXPECT_EQ(request->labels().at("acld.io/device-ids"), "1:3,2:0-1.3");
}

TEST_F(GroupRequestTest, WholeDevicesHaveNoMemoryLimit) {
  absl::StatusOr<acl::v1::CreateGroupRequest> request =
      GroupRequestFor(whole_resource_, selection_, labels_, whole_, {"npu-0"});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_THAT(request->devices(), ElementsAre(0));
  EXPECT_TRUE(request->memory_bytes().empty());
  EXPECT_EQ(request->labels().at("acld.io/device-ids"), "0");
}

TEST_F(GroupRequestTest, RefusesUnknownDuplicateAndForeignIds) {
  auto refused = [&](const ResourceSpec& resource, const std::vector<AdvertisedUnit>& units,
                     std::vector<std::string> ids) {
    const absl::StatusOr<acl::v1::CreateGroupRequest> request =
        GroupRequestFor(resource, selection_, labels_, units, ids);
    return absl::IsInvalidArgument(request.status());
  };
  EXPECT_TRUE(refused(slice_resource_, slices_, {"npu-1-slice-0", "npu-1-slice-0"}));
  EXPECT_TRUE(refused(slice_resource_, slices_, {"npu-1-slice-4"}));  // past the device's memory
  EXPECT_TRUE(refused(slice_resource_, slices_, {"npu-0-slice-0"}));  // device 0 is whole
  EXPECT_TRUE(refused(slice_resource_, slices_, {"npu-1"}));
  EXPECT_TRUE(refused(whole_resource_, whole_, {"npu-1"}));           // sliced, not whole
  EXPECT_TRUE(refused(whole_resource_, whole_, {}));
}

TEST(GroupLabelsTest, LongIdListsContinueInNumberedLabelsAndReadBack) {
  const GroupLabels labels("acld.io");
  std::vector<UnitId> units;
  for (int32_t device = 0; device < 200; ++device) {
    for (int32_t slice = 0; slice < 8; slice += 2) units.push_back({device, slice});
  }
  absl::StatusOr<std::map<std::string, std::string>> made =
      labels.ForNewGroup("acld.io/npu-memory", units);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_GT(made->size(), 2u);
  for (const auto& [key, value] : *made) {
    EXPECT_TRUE(IsValidLabelText(key, kMaxLabelKeyBytes)) << key;
    EXPECT_TRUE(IsValidLabelText(value, kMaxLabelValueBytes)) << value;
  }
  absl::StatusOr<std::optional<std::vector<UnitId>>> held =
      labels.HeldUnits(*made, "acld.io/npu-memory", ResourceKind::kMemorySlice);
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_TRUE(held->has_value());
  EXPECT_EQ(**held, units);
  // Another resource's group (or nobody's) is not ours.
  EXPECT_FALSE(labels.HeldUnits(*made, "acld.io/npu", ResourceKind::kWholeDevice)->has_value());
  EXPECT_FALSE(labels.HeldUnits({}, "acld.io/npu", ResourceKind::kWholeDevice)->has_value());
}

TEST(ContainerResponseTest, MountsTheGroupDirectoryAndPointsAcldAddressIntoIt) {
  acl::v1::GroupInfo group;
  group.set_id("0123456789abcdef0123456789abcdef");
  group.set_directory("/run/acld/groups/0123456789abcdef0123456789abcdef");
  absl::StatusOr<v1beta1::ContainerAllocateResponse> response =
      ContainerResponseFor(group, "/run/acld");
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->mounts_size(), 1);
  EXPECT_EQ(response->mounts(0).host_path(), group.directory());
  EXPECT_EQ(response->mounts(0).container_path(), "/run/acld");
  EXPECT_TRUE(response->mounts(0).read_only());
  EXPECT_EQ(response->envs().at("ACLD_ADDRESS"), "unix:/run/acld/acld.sock");
}

TEST(ContainerResponseTest, RefusesADirectoryThatIsNotACleanAbsolutePath) {
  acl::v1::GroupInfo group;
  group.set_id("0123456789abcdef0123456789abcdef");
  for (const char* bad : {"", "relative/dir", "/run/acld/../../etc", "/run//acld", "/",
                          "/run/acld/./x", "/run/\nacld"}) {
    group.set_directory(bad);
    const absl::Status refused = ContainerResponseFor(group, "/run/acld").status();
    EXPECT_FALSE(refused.ok()) << bad;
    // The id lets whoever knows it into the group: the kubelet's events, and
    // the plugin's log, get its public name only.
    EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("group 01234567 "));
    EXPECT_THAT(std::string(refused.message()), ::testing::Not(::testing::HasSubstr("012345678")));
  }
}

}  // namespace
}  // namespace acld::device_plugin
