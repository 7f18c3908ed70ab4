#include "hal/sim/sim_random.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_floats.h"
#include "proto/acl/acl_status.h"

namespace hal::sim {
namespace {

// Philox4x32-10's published known-answer vectors (Salmon et al., SC'11).
TEST(PhiloxTest, MatchesTheReferenceBlocks) {
  EXPECT_EQ(Philox({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// Sim device memory for a task: a buffer the spans point into.
class RandomTask {
 public:
  explicit RandomTask(uint64_t result_bytes) : result_bytes_(result_bytes) {
    storage_ = std::shared_ptr<uint8_t>(new uint8_t[result_bytes + 64](), [](uint8_t* p) { delete[] p; });
    buffer_.address = 0x1000;
    buffer_.size = result_bytes + 64;
    buffer_.storage = storage_;
    task.result = DeviceSpan{buffer_, 0};
    task.result_room = buffer_.size;  // as for the caller's own allocation
    task.counter = DeviceSpan{buffer_, result_bytes};  // 16 bytes, zero
    task.seed = {std::nullopt, 7, 8};
    task.count = {std::nullopt, 0, 8};
  }
  uint8_t* bytes() { return storage_.get(); }
  void SetCounter(uint64_t low, uint64_t high) {
    std::memcpy(bytes() + result_bytes_, &low, 8);
    std::memcpy(bytes() + result_bytes_ + 8, &high, 8);
  }
  // A parameter held in device memory, after the counter.
  RandomParameter AtDevice(uint64_t value, uint8_t size, uint64_t slot) {
    std::memcpy(bytes() + result_bytes_ + 16 + 8 * slot, &value, size);
    return RandomParameter{DeviceSpan{buffer_, result_bytes_ + 16 + 8 * slot}, 0, size};
  }
  template <typename T>
  std::vector<T> Values(size_t count) {
    std::vector<T> values(count);
    std::memcpy(values.data(), bytes(), count * sizeof(T));
    return values;
  }

  RandomNumbers task;

 private:
  uint64_t result_bytes_;
  std::shared_ptr<uint8_t> storage_;
  DeviceBuffer buffer_;
};

uint64_t FloatBitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

RandomNumbers Uniform(RandomTask& t, int32_t type, uint64_t min, uint64_t max, uint8_t size,
                      uint64_t count) {
  t.task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS;
  t.task.data_type = type;
  t.task.first = {std::nullopt, min, size};
  t.task.second = {std::nullopt, max, size};
  t.task.count.value = count;
  return t.task;
}

TEST(SimRandomTest, UniformIntegersStayInTheirRangeAndRepeatForTheSameSeedAndCounter) {
  RandomTask t(4 * 1000);
  const RandomNumbers task =
      Uniform(t, ACL_INT32, static_cast<uint32_t>(-5), 100, 4, 1000);
  ASSERT_TRUE(CheckRandomNumbers(task).ok());
  ASSERT_TRUE(GenerateRandomNumbers(task).ok());
  const std::vector<int32_t> first = t.Values<int32_t>(1000);
  bool low = false, high = false;
  for (int32_t v : first) {
    ASSERT_GE(v, -5);
    ASSERT_LT(v, 100);
    low |= v < 10;
    high |= v > 85;
  }
  EXPECT_TRUE(low && high) << "spread over the range";
  ASSERT_TRUE(GenerateRandomNumbers(task).ok());
  EXPECT_EQ(t.Values<int32_t>(1000), first) << "same seed and counter, same numbers";
  t.SetCounter(1, 0);
  ASSERT_TRUE(GenerateRandomNumbers(task).ok());
  const std::vector<int32_t> shifted = t.Values<int32_t>(1000);
  EXPECT_EQ(std::vector<int32_t>(shifted.begin(), shifted.end() - 1),
            std::vector<int32_t>(first.begin() + 1, first.end()))
      << "number i comes from counter + i";
}

TEST(SimRandomTest, UnsignedAnd64BitRanges) {
  RandomTask t(8 * 200);
  ASSERT_TRUE(GenerateRandomNumbers(Uniform(t, ACL_UINT32, 0xFFFFFF00u, 0xFFFFFFFFu, 4, 200)).ok());
  for (uint32_t v : t.Values<uint32_t>(200)) EXPECT_GE(v, 0xFFFFFF00u);
  ASSERT_TRUE(GenerateRandomNumbers(
                  Uniform(t, ACL_INT64, static_cast<uint64_t>(INT64_MIN), INT64_MAX, 8, 200))
                  .ok());
  bool negative = false, positive = false;
  for (int64_t v : t.Values<int64_t>(200)) {
    negative |= v < 0;
    positive |= v > 0;
    EXPECT_LT(v, INT64_MAX);
  }
  EXPECT_TRUE(negative && positive);
}

TEST(SimRandomTest, FloatsHalvesAndBf16) {
  RandomTask t(4 * 500);
  ASSERT_TRUE(
      GenerateRandomNumbers(Uniform(t, ACL_FLOAT, FloatBitsOf(-2), FloatBitsOf(3), 4, 500)).ok());
  for (float v : t.Values<float>(500)) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LE(v, 3.0f);
  }
  ASSERT_TRUE(GenerateRandomNumbers(Uniform(t, ACL_FLOAT16, 0x3C00, 0x4000, 2, 500)).ok());
  for (uint16_t h : t.Values<uint16_t>(500)) {
    EXPECT_GE(HalfToDouble(h), 1.0);
    EXPECT_LE(HalfToDouble(h), 2.0);
  }
  // Normal: mean 3, stddev 2 over 500 numbers; truncated: within 2 stddev.
  t.task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS;
  t.task.data_type = ACL_FLOAT;
  t.task.first = {std::nullopt, FloatBitsOf(3), 4};
  t.task.second = {std::nullopt, FloatBitsOf(2), 4};
  ASSERT_TRUE(GenerateRandomNumbers(t.task).ok());
  double sum = 0, squares = 0;
  for (float v : t.Values<float>(500)) {
    sum += v;
    squares += v * v;
  }
  const double mean = sum / 500, variance = squares / 500 - mean * mean;
  EXPECT_NEAR(mean, 3.0, 0.4);
  EXPECT_NEAR(std::sqrt(variance), 2.0, 0.4);
  t.task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS;
  t.task.data_type = ACL_BF16;
  t.task.first = {std::nullopt, 0x3F80, 2};   // 1.0
  t.task.second = {std::nullopt, 0x4000, 2};  // 2.0
  ASSERT_TRUE(GenerateRandomNumbers(t.task).ok());
  for (uint16_t b : t.Values<uint16_t>(500)) {
    EXPECT_GE(Bf16ToFloat(b), -3.0f);
    EXPECT_LE(Bf16ToFloat(b), 5.0f);
  }
}

TEST(SimRandomTest, DropoutBitmaskKeepsOneMinusTheRatio) {
  RandomTask t(1000 / 8 + 1);
  t.task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK;
  t.task.data_type = ACL_FLOAT;
  t.task.count.value = 1001;  // 126 bytes, the last with one bit
  t.task.first = {std::nullopt, FloatBitsOf(0.25f), 4};
  ASSERT_TRUE(CheckRandomNumbers(t.task).ok());
  std::memset(t.bytes(), 0xFF, 126);
  ASSERT_TRUE(GenerateRandomNumbers(t.task).ok());
  int kept = 0;
  for (uint8_t byte : t.Values<uint8_t>(126)) kept += __builtin_popcount(byte);
  EXPECT_NEAR(kept, 750, 60);
  EXPECT_EQ(t.Values<uint8_t>(126)[125] & 0xFE, 0) << "the last byte's unused bits are 0";
  t.task.first.value = FloatBitsOf(0.0f);
  ASSERT_TRUE(GenerateRandomNumbers(t.task).ok());
  EXPECT_EQ(t.Values<uint8_t>(1)[0], 0xFF) << "ratio 0 keeps everything";
  t.task.first.value = FloatBitsOf(1.0f);
  ASSERT_TRUE(GenerateRandomNumbers(t.task).ok());
  EXPECT_EQ(t.Values<uint8_t>(1)[0], 0) << "ratio 1 drops everything";
}

// A draw written a range at a time (as a stream runs it, in pieces) is the
// draw written whole, numbers and dropout bits alike.
TEST(SimRandomTest, ADrawInRangesWritesWhatTheWholeDrawWrites) {
  struct Case {
    int32_t function;
    int32_t type;
    uint64_t first, second;
    uint8_t size;
  };
  for (const Case& c : {Case{ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS, ACL_INT32, 5, 1000, 4},
                        Case{ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS, ACL_FLOAT, FloatBitsOf(1.0f),
                             FloatBitsOf(2.0f), 4},
                        Case{ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK, ACL_FLOAT,
                             FloatBitsOf(0.5f), 0, 4}}) {
    constexpr uint64_t kCount = 1001;
    RandomTask whole(kCount * 4), ranges(kCount * 4);
    for (RandomTask* t : {&whole, &ranges}) {
      t->task.function = c.function;
      t->task.data_type = c.type;
      t->task.first = {std::nullopt, c.first, c.size};
      t->task.second = {std::nullopt, c.second, c.size};
      t->task.count.value = kCount;
      t->SetCounter(12345, 6);
      std::memset(t->bytes(), 0xA5, kCount * 4);
    }
    ASSERT_TRUE(GenerateRandomNumbers(whole.task).ok());
    absl::StatusOr<RandomDraw> draw = RandomDraw::Start(ranges.task);
    ASSERT_TRUE(draw.ok()) << draw.status();
    ASSERT_EQ(draw->count(), kCount);
    // Out of order, of several sizes; the last one past count() is clipped.
    const std::pair<uint64_t, uint64_t> parts[] = {{64, 72}, {0, 8}, {72, 1000}, {8, 64},
                                                   {1000, 2000}};
    for (const auto& [first, end] : parts) draw->Generate(first, end);
    EXPECT_EQ(whole.Values<uint8_t>(kCount * 4), ranges.Values<uint8_t>(kCount * 4))
        << "function " << c.function;
  }
}

TEST(SimRandomTest, ParametersHeldInDeviceMemoryAreReadAndJudgedWhenTheTaskRuns) {
  RandomTask t(4 * 16);
  Uniform(t, ACL_INT32, 0, 0, 4, 0);
  t.task.first = t.AtDevice(10, 4, 0);
  t.task.second = t.AtDevice(20, 4, 1);
  t.task.count = t.AtDevice(16, 8, 2);
  ASSERT_TRUE(CheckRandomNumbers(t.task).ok());
  ASSERT_TRUE(GenerateRandomNumbers(t.task).ok());
  for (int32_t v : t.Values<int32_t>(16)) {
    EXPECT_GE(v, 10);
    EXPECT_LT(v, 20);
  }
  t.task.second = t.AtDevice(10, 4, 1);  // max == min
  EXPECT_EQ(acld::AclCodeOf(GenerateRandomNumbers(t.task)), ACL_ERROR_INVALID_PARAM);
  t.task.second = t.AtDevice(20, 4, 1);
  // More numbers than the caller may write past the result address: 128
  // bytes, room for 32 (a count read from the device is checked against the
  // whole rest of the caller's allocation, as a kernel's writes would be).
  t.task.count = t.AtDevice(33, 8, 2);
  EXPECT_EQ(acld::AclCodeOf(GenerateRandomNumbers(t.task)), ACL_ERROR_INVALID_PARAM);
  t.task.count = t.AtDevice(32, 8, 2);
  EXPECT_TRUE(GenerateRandomNumbers(t.task).ok());
  // A range imported from another process ends where the grant ends, not
  // where the exporter's allocation does: the numbers must fit the grant.
  t.task.result_room = 64;
  t.task.count = t.AtDevice(17, 8, 2);
  EXPECT_EQ(acld::AclCodeOf(GenerateRandomNumbers(t.task)), ACL_ERROR_INVALID_PARAM);
  t.task.count = t.AtDevice(16, 8, 2);
  EXPECT_TRUE(GenerateRandomNumbers(t.task).ok());
}

TEST(SimRandomTest, CheckRefusesMalformedTasksAndValuesGivenNow) {
  RandomTask t(64);
  auto code = [](const RandomNumbers& task) { return acld::AclCodeOf(CheckRandomNumbers(task)); };
  RandomNumbers task = Uniform(t, ACL_INT32, 1, 100, 4, 4);
  EXPECT_EQ(code(task), ACL_SUCCESS);
  task.function = 4;
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "no such function";
  task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS;
  task.data_type = ACL_INT8;
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "int8 is not drawn";
  task.data_type = ACL_INT32;
  task.first.size = 8;
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "an int32 parameter of 8 bytes";
  task.first.size = 4;
  task.seed.size = 9;
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "a 9-byte seed";
  task.seed.size = 8;
  task.first.value = 100;
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "min == max";
  task.first.value = 1;
  task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS;
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "a normal distribution of integers";
  task.data_type = ACL_FLOAT;
  task.first = {std::nullopt, FloatBitsOf(0), 4};
  task.second = {std::nullopt, FloatBitsOf(-1), 4};
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "a negative stddev";
  task.second.value = FloatBitsOf(NAN);
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "a NaN stddev";
  task.function = ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK;
  task.first.value = FloatBitsOf(1.5f);
  EXPECT_EQ(code(task), ACL_ERROR_INVALID_PARAM) << "a ratio above 1";
}

}  // namespace
}  // namespace hal::sim
