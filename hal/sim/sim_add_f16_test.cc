// The add_f16_2048 built-in kernel (sim_kernels.h): the 0_launch_kernel
// sample's add_custom(x, y, z).
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hal/sim/sim_kernels.h"

namespace hal::sim {
namespace {

constexpr uint64_t kBase = 0x100000;  // device address of host_[0]
constexpr uint64_t kBlockBytes = 4096;

// Device memory [kBase, kBase + size) backed by a host vector; records what
// was resolved so tests can compare it with Ranges.
class FakeMemory : public MemoryResolver {
 public:
  explicit FakeMemory(size_t size) : host_(size, 0xEE) {}
  absl::StatusOr<uint8_t*> Resolve(uint64_t address, uint64_t bytes) override {
    if (address < kBase || address - kBase > host_.size() ||
        bytes > host_.size() - (address - kBase)) {
      return absl::OutOfRangeError("outside the fake memory");
    }
    resolved_.push_back({address, bytes});
    return host_.data() + (address - kBase);
  }
  void SetHalf(uint64_t address, uint16_t value) {
    host_[address - kBase] = value & 0xFF;
    host_[address - kBase + 1] = value >> 8;
  }
  uint16_t Half(uint64_t address) const {
    return static_cast<uint16_t>(host_[address - kBase] | (host_[address - kBase + 1] << 8));
  }
  const std::vector<DeviceRange>& resolved() const { return resolved_; }

 private:
  std::vector<uint8_t> host_;
  std::vector<DeviceRange> resolved_;
};

const Kernel& AddF16() {
  auto it = BuiltinKernels().find("add_f16_2048");
  EXPECT_NE(it, BuiltinKernels().end());
  return *it->second;
}

// x, y, z of `blocks` blocks each, one after another.
struct Buffers {
  explicit Buffers(uint32_t blocks)
      : memory(3 * blocks * kBlockBytes),
        x(kBase),
        y(kBase + blocks * kBlockBytes),
        z(kBase + 2 * blocks * kBlockBytes) {}
  FakeMemory memory;
  uint64_t x, y, z;
};

uint16_t AddOne(uint16_t a, uint16_t b) {
  Buffers buffers(1);
  buffers.memory.SetHalf(buffers.x, a);
  buffers.memory.SetHalf(buffers.y, b);
  EXPECT_TRUE(AddF16().Run(1, {buffers.x, buffers.y, buffers.z}, buffers.memory).ok());
  return buffers.memory.Half(buffers.z);
}

TEST(AddF16Test, IsABuiltinKernelWithThreePointerArgs) {
  EXPECT_EQ(AddF16().name(), "add_f16_2048");
  EXPECT_EQ(AddF16().arg_count(), 3u);
  EXPECT_EQ(AddF16().BusyMicros({1, 2, 3}), 0u);
  // The existing kernels are still there.
  for (const char* name : {"add_one_u32", "spin_add_one_u32", "fill_u32", "write_i32", "trap"}) {
    EXPECT_NE(BuiltinKernels().find(name), BuiltinKernels().end()) << name;
  }
}

TEST(AddF16Test, RangesAreBlockDimTimes4096BytesOfEachBuffer) {
  absl::StatusOr<std::vector<DeviceRange>> ranges = AddF16().Ranges(8, {0x1000, 0x20000, 0x40000});
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 3u);
  EXPECT_EQ((*ranges)[0].address, 0x1000u);
  EXPECT_EQ((*ranges)[1].address, 0x20000u);
  EXPECT_EQ((*ranges)[2].address, 0x40000u);
  for (const DeviceRange& range : *ranges) EXPECT_EQ(range.bytes, 8u * 4096);  // the sample's 32768

  ranges = AddF16().Ranges(0xFFFFFFFFu, {0, 0, 0});
  ASSERT_TRUE(ranges.ok());
  EXPECT_EQ((*ranges)[0].bytes, uint64_t{0xFFFFFFFFu} * 4096);
}

TEST(AddF16Test, RangesRejectWrappingAddresses) {
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  EXPECT_FALSE(AddF16().Ranges(1, {top - 4094, 0, 0}).ok());
  EXPECT_FALSE(AddF16().Ranges(1, {0, top, 0}).ok());
  EXPECT_FALSE(AddF16().Ranges(2, {0, 0, top - 4096}).ok());
  EXPECT_FALSE(AddF16().Ranges(1, {top - 4095, 0, 0}).ok());  // ends at 2^64
  EXPECT_TRUE(AddF16().Ranges(1, {top - 4096, top - 4096, top - 4096}).ok());
}

TEST(AddF16Test, AddsEachBlocksSliceAndResolvesOnlyItsRanges) {
  constexpr uint32_t kBlocks = 8;
  Buffers buffers(kBlocks);
  const uint64_t elements = kBlocks * 2048;
  for (uint64_t i = 0; i < elements; ++i) {
    buffers.memory.SetHalf(buffers.x + 2 * i, 0x3C00);                 // 1.0
    buffers.memory.SetHalf(buffers.y + 2 * i, static_cast<uint16_t>(0x4000 + (i % 512)));  // [2, 4)
  }
  const std::vector<uint64_t> args = {buffers.x, buffers.y, buffers.z};
  ASSERT_TRUE(AddF16().Run(kBlocks, args, buffers.memory).ok());

  // 1 + (2 + k/512) = 3 + k/512: exact in half (same exponent as 2) for k < 512.
  for (uint64_t i = 0; i < elements; ++i) {
    ASSERT_EQ(buffers.memory.Half(buffers.z + 2 * i), 0x4200 + (i % 512)) << i;
  }
  absl::StatusOr<std::vector<DeviceRange>> ranges = AddF16().Ranges(kBlocks, args);
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(buffers.memory.resolved().size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(buffers.memory.resolved()[i].address, (*ranges)[i].address);
    EXPECT_EQ(buffers.memory.resolved()[i].bytes, (*ranges)[i].bytes);
  }
}

TEST(AddF16Test, FewerBlocksTouchLess) {
  Buffers buffers(2);
  ASSERT_TRUE(AddF16().Run(1, {buffers.x, buffers.y, buffers.z}, buffers.memory).ok());
  EXPECT_EQ(buffers.memory.Half(buffers.z + kBlockBytes - 2), 0xF2EE);   // 0xEEEE + 0xEEEE = 2 * 0xEEEE
  EXPECT_EQ(buffers.memory.Half(buffers.z + kBlockBytes), 0xEEEE);       // block 1 untouched
  EXPECT_TRUE(AddF16().Run(0, {buffers.x, buffers.y, buffers.z}, buffers.memory).ok());
}

TEST(AddF16Test, FailsWhenMemoryDoesNotResolve) {
  Buffers buffers(1);
  // z's single block fits, two blocks do not.
  EXPECT_FALSE(AddF16().Run(2, {buffers.x, buffers.y, buffers.z}, buffers.memory).ok());
  EXPECT_FALSE(AddF16().Run(1, {0, buffers.y, buffers.z}, buffers.memory).ok());
}

TEST(AddF16Test, AddsInPlace) {
  Buffers buffers(1);
  for (uint64_t i = 0; i < 2048; ++i) {
    buffers.memory.SetHalf(buffers.x + 2 * i, 0x3C00);  // 1.0
    buffers.memory.SetHalf(buffers.y + 2 * i, 0x4000);  // 2.0
  }
  ASSERT_TRUE(AddF16().Run(1, {buffers.x, buffers.y, buffers.x}, buffers.memory).ok());
  ASSERT_TRUE(AddF16().Run(1, {buffers.x, buffers.x, buffers.x}, buffers.memory).ok());
  for (uint64_t i = 0; i < 2048; ++i) ASSERT_EQ(buffers.memory.Half(buffers.x + 2 * i), 0x4600);  // 6.0
}

TEST(AddF16Test, RoundsLikeIeeeHalf) {
  EXPECT_EQ(AddOne(0x3C00, 0x3C00), 0x4000);  // 1 + 1 = 2
  EXPECT_EQ(AddOne(0x3C00, 0xBC00), 0x0000);  // 1 + -1 = +0
  EXPECT_EQ(AddOne(0x8000, 0x8000), 0x8000);  // -0 + -0 = -0
  EXPECT_EQ(AddOne(0x0000, 0x8000), 0x0000);  // +0 + -0 = +0
  EXPECT_EQ(AddOne(0x3C00, 0x1000), 0x3C00);  // 1 + 2^-11: a tie, to even (1)
  EXPECT_EQ(AddOne(0x3C01, 0x1000), 0x3C02);  // (1 + 2^-10) + 2^-11: a tie, to even
  EXPECT_EQ(AddOne(0x3C00, 0x1001), 0x3C01);  // just above the tie rounds up
  EXPECT_EQ(AddOne(0x0001, 0x0001), 0x0002);  // subnormals
  EXPECT_EQ(AddOne(0x03FF, 0x0001), 0x0400);  // into the smallest normal
  EXPECT_EQ(AddOne(0x7BFF, 0x4800), 0x7BFF);  // 65504 + 8 rounds down
  EXPECT_EQ(AddOne(0x7BFF, 0x4C00), 0x7C00);  // 65504 + 16 = 65520: a tie, to infinity
  EXPECT_EQ(AddOne(0xFBFF, 0xCC00), 0xFC00);  // and to -infinity
  EXPECT_EQ(AddOne(0x7C00, 0x3C00), 0x7C00);  // inf + 1
  EXPECT_EQ(AddOne(0x7C00, 0xFC00) & 0x7FFF, 0x7E00);  // inf - inf = NaN
  EXPECT_EQ(AddOne(0x7E01, 0x3C00) & 0x7C00, 0x7C00);  // NaN stays NaN
  EXPECT_NE(AddOne(0x7E01, 0x3C00) & 0x03FF, 0);
}

// x + 0 over all 65536 halves: every half survives the round trip (a NaN
// stays a NaN, -0 + +0 is +0).
TEST(AddF16Test, EveryHalfPlusZeroIsItself) {
  constexpr uint32_t kBlocks = 32;  // 32 * 2048 = 65536 elements
  Buffers buffers(kBlocks);
  for (uint32_t h = 0; h < 65536; ++h) {
    buffers.memory.SetHalf(buffers.x + 2 * h, static_cast<uint16_t>(h));
    buffers.memory.SetHalf(buffers.y + 2 * h, 0);
  }
  ASSERT_TRUE(AddF16().Run(kBlocks, {buffers.x, buffers.y, buffers.z}, buffers.memory).ok());
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t got = buffers.memory.Half(buffers.z + 2 * h);
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
    if (nan) {
      ASSERT_EQ(got & 0x7C00, 0x7C00) << h;
      ASSERT_NE(got & 0x03FF, 0) << h;
    } else if (h == 0x8000) {
      ASSERT_EQ(got, 0x0000);
    } else {
      ASSERT_EQ(got, h) << h;
    }
  }
}

#ifdef __FLT16_MAX__
// Against the compiler's _Float16: a float sum of two halves rounded to half
// is correctly rounded (24 >= 2 * 11 + 2 bits), so it is an independent
// reference. Deterministic seed.
TEST(AddF16Test, MatchesFloat16ReferenceOnRandomPairs) {
  constexpr uint32_t kBlocks = 64;
  constexpr uint64_t kElements = kBlocks * 2048;
  Buffers buffers(kBlocks);
  std::mt19937 rng(20240611u);
  std::vector<uint16_t> x(kElements), y(kElements);
  for (uint64_t i = 0; i < kElements; ++i) {
    x[i] = static_cast<uint16_t>(rng());
    y[i] = static_cast<uint16_t>(rng());
    if (i % 4 == 0) y[i] = static_cast<uint16_t>((x[i] & 0x8000) | (rng() % 0x7C00));  // same sign
    buffers.memory.SetHalf(buffers.x + 2 * i, x[i]);
    buffers.memory.SetHalf(buffers.y + 2 * i, y[i]);
  }
  ASSERT_TRUE(AddF16().Run(kBlocks, {buffers.x, buffers.y, buffers.z}, buffers.memory).ok());
  for (uint64_t i = 0; i < kElements; ++i) {
    _Float16 a, b;
    std::memcpy(&a, &x[i], 2);
    std::memcpy(&b, &y[i], 2);
    const _Float16 sum = static_cast<_Float16>(static_cast<float>(a) + static_cast<float>(b));
    uint16_t want;
    std::memcpy(&want, &sum, 2);
    const uint16_t got = buffers.memory.Half(buffers.z + 2 * i);
    if ((want & 0x7C00) == 0x7C00 && (want & 0x03FF) != 0) {  // NaN: payloads may differ
      ASSERT_EQ(got & 0x7C00, 0x7C00) << i;
      ASSERT_NE(got & 0x03FF, 0) << i;
    } else {
      ASSERT_EQ(got, want) << std::hex << x[i] << " + " << y[i];
    }
  }
}
#endif

}  // namespace
}  // namespace hal::sim
