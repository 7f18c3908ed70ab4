#include "tools/device_plugin/device_ids.h"

#include "gtest/gtest.h"

namespace acld::device_plugin {
namespace {

TEST(DeviceIdsTest, FormatsAndParsesBothKinds) {
  EXPECT_EQ(FormatUnitId({3, std::nullopt}), "npu-3");
  EXPECT_EQ(FormatUnitId({3, 17}), "npu-3-slice-17");
  EXPECT_EQ(ParseUnitId("npu-3", ResourceKind::kWholeDevice), (UnitId{3, std::nullopt}));
  EXPECT_EQ(ParseUnitId("npu-3-slice-17", ResourceKind::kMemorySlice), (UnitId{3, 17}));
}

TEST(DeviceIdsTest, RefusesOtherKindsAndMalformedIds) {
  EXPECT_FALSE(ParseUnitId("npu-3-slice-1", ResourceKind::kWholeDevice).has_value());
  EXPECT_FALSE(ParseUnitId("npu-3", ResourceKind::kMemorySlice).has_value());
  for (const char* bad : {"", "npu-", "npu-03", "npu--1", "npu-1x", "gpu-1", "npu-1024",
                          "npu-99999999999", "npu-+1"}) {
    EXPECT_FALSE(ParseUnitId(bad, ResourceKind::kWholeDevice).has_value()) << bad;
  }
  for (const char* bad : {"npu-1-slice-", "npu-1-slice-01", "npu-1-slice-1024",
                          "npu-1-slice-2-slice-3", "npu--slice-1"}) {
    EXPECT_FALSE(ParseUnitId(bad, ResourceKind::kMemorySlice).has_value()) << bad;
  }
}

TEST(DeviceIdsTest, EncodesRangesCompactlyAndDecodesThem) {
  const std::vector<UnitId> slices = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 7}, {1, 2}, {1, 4},
                                      {1, 5}};
  EXPECT_EQ(EncodeUnits(slices), "0:0-3.7,1:2.4-5");
  EXPECT_EQ(*DecodeUnits("0:0-3.7,1:2.4-5", ResourceKind::kMemorySlice, 100), slices);
  const std::vector<UnitId> whole = {{0, std::nullopt}, {3, std::nullopt}};
  EXPECT_EQ(EncodeUnits(whole), "0,3");
  EXPECT_EQ(*DecodeUnits("0,3", ResourceKind::kWholeDevice, 100), whole);
}

TEST(DeviceIdsTest, DecodeRefusesMalformedLabels) {
  for (const char* bad : {"0:", "0:3-1", "0:1.1", "x:1", "0:1-", ":1", "0:1,0:1", "0:0-1024",
                          "0:1:2"}) {
    EXPECT_FALSE(DecodeUnits(bad, ResourceKind::kMemorySlice, 100000).ok()) << bad;
  }
  EXPECT_FALSE(DecodeUnits("1,1", ResourceKind::kWholeDevice, 100).ok());
  EXPECT_FALSE(DecodeUnits("1,,2", ResourceKind::kWholeDevice, 100).ok());
  // More units than allowed: refused before they are made.
  EXPECT_FALSE(DecodeUnits("0:0-1023", ResourceKind::kMemorySlice, 10).ok());
}

}  // namespace
}  // namespace acld::device_plugin
