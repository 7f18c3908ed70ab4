#include "client/float16.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace acl_client {
namespace {

TEST(Float16Test, OrdinaryValuesConvertExactlyBothWays) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(0.5f), 0x3800);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  // Every finite half survives the round trip.
  for (uint32_t half = 0; half <= 0xFFFF; ++half) {
    if (((half >> 10) & 0x1F) == 31) continue;
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(half))), half) << std::hex << half;
  }
}

TEST(Float16Test, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): even is 1.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // 1 - 2^-12 is halfway between 1 - 2^-11 (odd) and 1: it rounds up into
  // the next binade.
  EXPECT_EQ(FloatToHalf(1.0f - std::ldexp(1.0f, -11)), 0x3BFF);
  EXPECT_EQ(FloatToHalf(1.0f - std::ldexp(1.0f, -12)), 0x3C00);
  // Half the smallest subnormal ties to zero; a little more rounds up.
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001);
}

TEST(Float16Test, SpecialValuesFollowCannsSaturatingRules) {
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7BFF);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::infinity()), 0xFBFF);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::quiet_NaN()), 0x7BFF);
  EXPECT_EQ(FloatToHalf(-std::numeric_limits<float>::quiet_NaN()), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7BFF);  // would round to Inf
  EXPECT_EQ(FloatToHalf(-1e9f), 0xFBFF);
  EXPECT_EQ(HalfToFloat(0x7C00), 65536.0f);   // +Inf's encoding
  EXPECT_EQ(HalfToFloat(0xFC00), -65536.0f);  // -Inf's
  EXPECT_EQ(HalfToFloat(0x7E00), 98304.0f);   // a NaN's
}

}  // namespace
}  // namespace acl_client
