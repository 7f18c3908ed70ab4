#include "tools/device_plugin/preferred_allocation.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace acld::device_plugin {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Slices(int device, int first, int last) {
  std::vector<std::string> ids;
  for (int slice = first; slice <= last; ++slice) {
    ids.push_back(absl::StrCat("npu-", device, "-slice-", slice));
  }
  return ids;
}

std::vector<std::string> Join(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> all;
  for (auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

TEST(PreferredAllocationTest, PacksSlicesOntoTheDeviceThatFitsBest) {
  // Device 0 has 6 free slices, device 1 has 3: 3 slices fit device 1 exactly.
  const auto available = Join({Slices(0, 0, 5), Slices(1, 4, 6)});
  EXPECT_THAT(*PreferredAllocation(ResourceKind::kMemorySlice, available, {}, 3),
              ElementsAre("npu-1-slice-4", "npu-1-slice-5", "npu-1-slice-6"));
  // 5 fit only device 0.
  EXPECT_EQ(*PreferredAllocation(ResourceKind::kMemorySlice, available, {}, 5), Slices(0, 0, 4));
}

TEST(PreferredAllocationTest, SpillsOntoTheFewestDevices) {
  // 7 slices: the 5 of device 2 (the largest), then the 2 left fit device 0
  // exactly: two devices, never three.
  const auto available = Join({Slices(0, 0, 1), Slices(1, 0, 2), Slices(2, 0, 4)});
  const std::vector<std::string> chosen =
      *PreferredAllocation(ResourceKind::kMemorySlice, available, {}, 7);
  EXPECT_EQ(chosen, Join({Slices(0, 0, 1), Slices(2, 0, 4)}));
}

TEST(PreferredAllocationTest, HonoursMustIncludeAndFillsItsDeviceFirst) {
  const auto available = Join({Slices(0, 0, 3), Slices(1, 0, 3)});
  const std::vector<std::string> chosen = *PreferredAllocation(
      ResourceKind::kMemorySlice, available, {"npu-1-slice-2"}, 3);
  EXPECT_THAT(chosen, ElementsAre("npu-1-slice-0", "npu-1-slice-1", "npu-1-slice-2"));
}

TEST(PreferredAllocationTest, ChoosesOnlyAvailableIdsAndAtMostTheSize) {
  const auto available = Slices(0, 0, 1);
  // Too few available: what there is (the kubelet completes it itself).
  EXPECT_EQ(*PreferredAllocation(ResourceKind::kMemorySlice, available, {}, 4), available);
  EXPECT_TRUE(PreferredAllocation(ResourceKind::kMemorySlice, available, {}, 0)->empty());
}

TEST(PreferredAllocationTest, WholeDevicesTakeTheLowestIds) {
  EXPECT_THAT(*PreferredAllocation(ResourceKind::kWholeDevice, {"npu-3", "npu-1", "npu-2"},
                                   {"npu-3"}, 2),
              ElementsAre("npu-1", "npu-3"));
}

TEST(PreferredAllocationTest, RefusesMalformedRequests) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      PreferredAllocation(ResourceKind::kMemorySlice, {"npu-0"}, {}, 1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      PreferredAllocation(ResourceKind::kWholeDevice, {"npu-0"}, {}, -1).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      PreferredAllocation(ResourceKind::kWholeDevice, {"npu-0", "npu-1"}, {"npu-0", "npu-1"}, 1)
          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      PreferredAllocation(ResourceKind::kWholeDevice,
                          std::vector<std::string>(kMaxIdsPerContainer + 1, "npu-0"), {}, 1)
          .status()));
}

}  // namespace
}  // namespace acld::device_plugin
