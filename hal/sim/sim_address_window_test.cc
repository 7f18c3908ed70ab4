#include "hal/sim/sim_address_window.h"

#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace hal::sim {
namespace {

TEST(SimAddressWindowTest, TakingAndGivingBackInALoopNeverUsesTheWindowUp) {
  SimAddressWindow window(0x1000, 0x1000 + (1 << 20));
  for (int round = 0; round < 100000; ++round) {
    const std::optional<uint64_t> whole = window.Take(1 << 20, 512);
    ASSERT_TRUE(whole.has_value()) << "round " << round;
    EXPECT_EQ(*whole, 0x1000u);
    EXPECT_FALSE(window.Take(512, 512).has_value()) << "all of it is taken";
    window.Give(*whole, 1 << 20);
  }
  EXPECT_EQ(window.free_ranges(), 1u);
}

TEST(SimAddressWindowTest, RangesNeverOverlapAndFreedNeighboursJoin) {
  SimAddressWindow window(0, 64 << 10);
  std::vector<uint64_t> taken;
  for (int i = 0; i < 16; ++i) {
    std::optional<uint64_t> start = window.Take(4096, 512);
    ASSERT_TRUE(start.has_value());
    for (uint64_t other : taken) EXPECT_TRUE(*start + 4096 <= other || other + 4096 <= *start);
    taken.push_back(*start);
  }
  EXPECT_FALSE(window.Take(512, 512).has_value());
  // Every other one back: eight holes of 4 KiB, none of 8 KiB.
  for (int i = 0; i < 16; i += 2) window.Give(taken[i], 4096);
  EXPECT_EQ(window.free_ranges(), 8u);
  EXPECT_FALSE(window.Take(8192, 512).has_value());
  // The rest back: one range again, which holds all of it.
  for (int i = 1; i < 16; i += 2) window.Give(taken[i], 4096);
  EXPECT_EQ(window.free_ranges(), 1u);
  EXPECT_EQ(window.Take(64 << 10, 512), std::optional<uint64_t>(0));
}

TEST(SimAddressWindowTest, TakesTheSmallestRangeThatHoldsItAligned) {
  SimAddressWindow window(0, 16 << 20);
  const uint64_t a = *window.Take(3 << 20, 512);        // [0, 3 MiB)
  const uint64_t b = *window.Take(512, 512);            // [3 MiB, +512)
  const uint64_t c = *window.Take(2 << 20, 2 << 20);    // at 4 MiB: aligned
  EXPECT_EQ(c, 4u << 20);
  window.Give(a, 3 << 20);
  // 3 MiB free at 0 holds 2 MiB aligned to 2 MiB (at 0); the hole before c
  // (3 MiB + 512 to 4 MiB) is too small for it.
  EXPECT_EQ(window.Take(2 << 20, 2 << 20), std::optional<uint64_t>(0));
  // 1 MiB aligned to 1 MiB: the 1 MiB left at 2 MiB.
  EXPECT_EQ(window.Take(1 << 20, 1 << 20), std::optional<uint64_t>(2 << 20));
  (void)b;
}

TEST(SimAddressWindowTest, RefusesWhatNoRangeHoldsAndIgnoresAGiftTwice) {
  SimAddressWindow window(0, 8192);
  EXPECT_FALSE(window.Take(0, 512).has_value());
  EXPECT_FALSE(window.Take(512, 3).has_value()) << "not a power of two";
  EXPECT_FALSE(window.Take(16384, 512).has_value());
  EXPECT_FALSE(window.Take(~uint64_t{0}, uint64_t{1} << 63).has_value()) << "overflow";
  const uint64_t a = *window.Take(4096, 512);
  window.Give(a, 4096);
  window.Give(a, 4096);  // twice: ignored, never taken twice
  window.Give(a + 512, 512);
  EXPECT_EQ(window.free_ranges(), 1u);
  EXPECT_TRUE(window.Take(8192, 512).has_value());
  EXPECT_FALSE(window.Take(512, 512).has_value());
}

}  // namespace
}  // namespace hal::sim
