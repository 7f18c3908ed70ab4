#include "hal/sim/sim_float_environment.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace hal::sim {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FloatEnvironmentTest, WithoutOneResultsStayIeee) {
  EXPECT_EQ(FloatEnvironment::Float(kInf), kInf);
  EXPECT_EQ(FloatEnvironment::Half(0x7C00), 0x7C00);
}

TEST(FloatEnvironmentTest, InfNanModeKeepsInfinitiesAndRecordsTheOverflow) {
  FloatEnvironment environment(/*saturate=*/false);
  EXPECT_EQ(FloatEnvironment::Float(1.5f), 1.5f);
  EXPECT_FALSE(environment.overflowed());
  EXPECT_EQ(FloatEnvironment::Float(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(FloatEnvironment::Float(NAN)));
  EXPECT_TRUE(environment.overflowed());
}

TEST(FloatEnvironmentTest, SaturationClampsToTheLargestFiniteValueAndNanToZero) {
  FloatEnvironment environment(/*saturate=*/true);
  EXPECT_EQ(FloatEnvironment::Float(FLT_MAX), FLT_MAX);
  EXPECT_FALSE(environment.overflowed()) << "the largest finite value is in range";
  EXPECT_EQ(FloatEnvironment::Float(kInf), FLT_MAX);
  EXPECT_EQ(FloatEnvironment::Float(-kInf), -FLT_MAX);
  EXPECT_EQ(FloatEnvironment::Float(NAN), 0.0f);
  EXPECT_EQ(FloatEnvironment::Half(0x7C00), 0x7BFF);  // +inf -> 65504
  EXPECT_EQ(FloatEnvironment::Half(0xFC00), 0xFBFF);  // -inf -> -65504
  EXPECT_EQ(FloatEnvironment::Half(0x7E00), 0x0000);  // NaN -> 0
  EXPECT_EQ(FloatEnvironment::Half(0x3C00), 0x3C00);
  EXPECT_EQ(FloatEnvironment::Bf16(0xFF80), 0xFF7F);  // -inf
  EXPECT_EQ(FloatEnvironment::Bf16(0x7FC0), 0x0000);  // NaN
  EXPECT_TRUE(environment.overflowed());
}

TEST(FloatEnvironmentTest, AnInnerEnvironmentRestoresTheOuterOne) {
  FloatEnvironment outer(/*saturate=*/true);
  {
    FloatEnvironment inner(/*saturate=*/false);
    EXPECT_EQ(FloatEnvironment::Float(kInf), kInf);
    EXPECT_TRUE(inner.overflowed());
  }
  EXPECT_FALSE(outer.overflowed());
  EXPECT_EQ(FloatEnvironment::Float(kInf), FLT_MAX);
}

}  // namespace
}  // namespace hal::sim
