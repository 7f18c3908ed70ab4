#include "hal/sim/sim_reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "gtest/gtest.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {
namespace {

template <typename T>
std::vector<T> Reduced(std::vector<T> dst, const std::vector<T>& src, int32_t kind,
                       int32_t data_type) {
  const uint64_t count = dst.size() * sizeof(T);
  EXPECT_TRUE(CheckReduction(kind, data_type, count).ok());
  ReduceBytes(reinterpret_cast<uint8_t*>(dst.data()), reinterpret_cast<const uint8_t*>(src.data()),
              count, kind, data_type);
  return dst;
}

constexpr int32_t kSum = ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM;
constexpr int32_t kMax = ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX;
constexpr int32_t kMin = ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN;

TEST(SimReduceTest, IntegersSumWrappingAroundAndCompareSigned) {
  EXPECT_EQ(Reduced<int8_t>({127, -128, 5}, {1, -1, -7}, kSum, ACL_INT8),
            (std::vector<int8_t>{-128, 127, -2}));
  EXPECT_EQ(Reduced<int8_t>({-3, 4}, {2, -9}, kMax, ACL_INT8), (std::vector<int8_t>{2, 4}));
  EXPECT_EQ(Reduced<uint32_t>({0xFFFFFFFFu, 7}, {1, 9}, kSum, ACL_UINT32),
            (std::vector<uint32_t>{0, 16}));
  EXPECT_EQ(Reduced<uint32_t>({0xFFFFFFFFu, 7}, {1, 9}, kMin, ACL_UINT32),
            (std::vector<uint32_t>{1, 7}));
  EXPECT_EQ(Reduced<int32_t>({-1, 3}, {1, -3}, kMin, ACL_INT32), (std::vector<int32_t>{-1, -3}));
}

TEST(SimReduceTest, FloatsFollowIeee) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> maxed = Reduced<float>({nan, 1.0f, -0.5f}, {2.0f, nan, -0.25f}, kMax,
                                                  ACL_FLOAT);
  EXPECT_EQ(maxed, (std::vector<float>{2.0f, 1.0f, -0.25f})) << "a NaN loses to a number";
  EXPECT_EQ(Reduced<float>({0.1f}, {0.2f}, kSum, ACL_FLOAT), (std::vector<float>{0.1f + 0.2f}));
}

TEST(SimReduceTest, NarrowFloatsRoundToNearestEven) {
  // Halves: 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even is 1.
  EXPECT_EQ(Reduced<uint16_t>({0x3C00, 0x3C01}, {0x1000, 0x1000}, kSum, ACL_FLOAT16),
            (std::vector<uint16_t>{0x3C00, 0x3C02}));
  EXPECT_EQ(Reduced<uint16_t>({0xC000, 0x3C00}, {0x4000, 0xBC00}, kMin, ACL_FLOAT16),
            (std::vector<uint16_t>{0xC000, 0xBC00}));
  // bfloat16: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1; from
  // 1 + 2^-7 the tie goes up to 1 + 2^-6.
  EXPECT_EQ(Reduced<uint16_t>({0x3F80, 0x3F81}, {0x3B80, 0x3B80}, kSum, ACL_BF16),
            (std::vector<uint16_t>{0x3F80, 0x3F82}));
  // The largest bfloat16 doubled is infinity.
  EXPECT_EQ(Reduced<uint16_t>({0x7F7F}, {0x7F7F}, kSum, ACL_BF16), (std::vector<uint16_t>{0x7F80}));
}

TEST(SimReduceTest, RefusesWhatItDoesNotReduce) {
  EXPECT_EQ(acld::AclCodeOf(CheckReduction(ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL, ACL_INT32, 4)),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  EXPECT_EQ(acld::AclCodeOf(CheckReduction(kSum, ACL_INT64, 8)), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  EXPECT_EQ(acld::AclCodeOf(CheckReduction(kSum, ACL_INT32, 6)), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(CheckReduction(kSum, ACL_INT8, 3).ok());
  EXPECT_TRUE(CheckReduction(kMax, ACL_BF16, 0).ok());
}

}  // namespace
}  // namespace hal::sim
