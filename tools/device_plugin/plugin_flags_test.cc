#include "tools/device_plugin/plugin_flags.h"

#include "gtest/gtest.h"
#include "tools/device_plugin/device_selection.h"
#include "tools/device_plugin/inventory.h"

namespace acld::device_plugin {
namespace {

const PluginIntervals kIntervals{absl::Seconds(1), absl::Seconds(1), absl::Seconds(10),
                                 absl::Seconds(60)};

TEST(DeviceSelectionTest, OthersAreWholeBesideTheSlicedOnes) {
  absl::StatusOr<DeviceSelection> selection = ParseDeviceSelection("others", "1,2", 1 << 20);
  ASSERT_TRUE(selection.ok()) << selection.status();
  EXPECT_TRUE(selection->IsWhole(0));
  EXPECT_FALSE(selection->IsWhole(1));
  EXPECT_TRUE(selection->IsSliced(2));
  EXPECT_TRUE(selection->IsWhole(7));
}

TEST(DeviceSelectionTest, RefusesADeviceNamedTwice) {
  EXPECT_FALSE(ParseDeviceSelection("0,1", "1", 1 << 20).ok());  // sold twice
  EXPECT_FALSE(ParseDeviceSelection("0,0", "", 1 << 20).ok());
  EXPECT_FALSE(ParseDeviceSelection("none", "2,2", 1 << 20).ok());
}

TEST(DeviceSelectionTest, RefusesBadLists) {
  EXPECT_FALSE(ParseDeviceSelection("-1", "", 1).ok());
  EXPECT_FALSE(ParseDeviceSelection("1024", "", 1).ok());
  EXPECT_FALSE(ParseDeviceSelection("a", "", 1).ok());
  EXPECT_FALSE(ParseDeviceSelection("none", "1", 0).ok());  // slices need a size
  EXPECT_FALSE(ParseDeviceSelection("none", "", 1).ok());   // nothing to sell
}

TEST(PluginFlagsTest, OneResourcePerKindWithItsSocketBesideTheKubelets) {
  absl::StatusOr<PluginSettings> settings =
      ValidatePluginSettings("acld.io", "0", "1", 1 << 20, "/run/acld",
                             "/var/lib/kubelet/device-plugins/kubelet.sock", kIntervals);
  ASSERT_TRUE(settings.ok()) << settings.status();
  ASSERT_EQ(settings->resources.size(), 2u);
  EXPECT_EQ(settings->resources[0].spec.name, "acld.io/npu");
  EXPECT_EQ(settings->resources[0].socket_path, "/var/lib/kubelet/device-plugins/acld-npu.sock");
  EXPECT_EQ(settings->resources[1].spec.name, "acld.io/npu-memory");
  EXPECT_EQ(settings->resources[1].spec.kind, ResourceKind::kMemorySlice);
  EXPECT_EQ(settings->resources[1].socket_path,
            "/var/lib/kubelet/device-plugins/acld-npu-memory.sock");
}

TEST(PluginFlagsTest, RefusesBadPrefixesMountsAndIntervals) {
  const std::string kubelet = "/k/kubelet.sock";
  EXPECT_FALSE(ValidatePluginSettings("Acld.io", "others", "", 1, "/run/acld", kubelet, kIntervals)
                   .ok());
  EXPECT_FALSE(ValidatePluginSettings("acld io", "others", "", 1, "/run/acld", kubelet, kIntervals)
                   .ok());
  EXPECT_FALSE(
      ValidatePluginSettings(std::string(41, 'a'), "others", "", 1, "/run/acld", kubelet,
                             kIntervals)
          .ok());
  EXPECT_FALSE(ValidatePluginSettings("acld.io", "others", "", 1, "run/acld", kubelet, kIntervals)
                   .ok());
  EXPECT_FALSE(
      ValidatePluginSettings("acld.io", "others", "", 1, "/run/../etc", kubelet, kIntervals).ok());
  PluginIntervals spinning = kIntervals;
  spinning.status = absl::ZeroDuration();
  EXPECT_FALSE(
      ValidatePluginSettings("acld.io", "others", "", 1, "/run/acld", kubelet, spinning).ok());
}

TEST(InventoryTest, SlicesFollowTheirDevicesHealthAndAcldsReachability) {
  const DeviceSelection selection = *ParseDeviceSelection("0", "1", 1 << 20);
  DeviceSnapshot snapshot;
  snapshot.acld_reachable = true;
  snapshot.devices[0] = {8 << 20, true};
  snapshot.devices[1] = {(3 << 20) + 5, false};  // 3 whole slices
  snapshot.devices[2] = {8 << 20, true};         // not configured: not advertised
  const std::vector<AdvertisedUnit> whole =
      AdvertisedUnits(selection, ResourceKind::kWholeDevice, snapshot);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(FormatUnitId(whole[0].unit), "npu-0");
  EXPECT_TRUE(whole[0].healthy);
  const std::vector<AdvertisedUnit> slices =
      AdvertisedUnits(selection, ResourceKind::kMemorySlice, snapshot);
  ASSERT_EQ(slices.size(), 3u);
  for (const AdvertisedUnit& unit : slices) EXPECT_FALSE(unit.healthy);
  EXPECT_EQ(FormatUnitId(slices[2].unit), "npu-1-slice-2");

  snapshot.acld_reachable = false;
  EXPECT_FALSE(AdvertisedUnits(selection, ResourceKind::kWholeDevice, snapshot)[0].healthy);
  EXPECT_EQ(SlicesOf(uint64_t{1} << 50, 1), kMaxSlicesPerDevice);  // bounded
}

}  // namespace
}  // namespace acld::device_plugin
