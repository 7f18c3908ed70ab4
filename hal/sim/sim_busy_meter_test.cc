#include "hal/sim/sim_busy_meter.h"

#include "gtest/gtest.h"

namespace hal::sim {
namespace {

constexpr int64_t kMs = 1000000;

TEST(BusyMeterTest, IdleIsZeroAndBusyHalfTheWindowIsFifty) {
  BusyMeter meter(0);
  EXPECT_EQ(meter.Percent(100 * kMs), 0);
  meter.Enter(500 * kMs);
  EXPECT_EQ(meter.Percent(1000 * kMs), 50);  // the first full window
  meter.Leave(1500 * kMs);
  EXPECT_EQ(meter.Percent(1700 * kMs), 50);  // the window is not over: the last figure
  EXPECT_EQ(meter.Percent(2000 * kMs), 50);  // busy 1000..1500 of 1000..2000
  EXPECT_EQ(meter.Percent(3000 * kMs), 0);
}

TEST(BusyMeterTest, OverlappingKernelsCountOnceAndNeverPastAHundred) {
  BusyMeter meter(0);
  meter.Enter(0);
  meter.Enter(100 * kMs);
  meter.Leave(900 * kMs);
  EXPECT_EQ(meter.Percent(1000 * kMs), 100);
  meter.Leave(1250 * kMs);
  EXPECT_EQ(meter.Percent(2000 * kMs), 25);
  meter.Leave(2100 * kMs);  // unmatched: ignored
  EXPECT_EQ(meter.Percent(3000 * kMs), 0);
}

TEST(BusyMeterTest, AFigureIsTheLatestSecondsHoweverLongSinceTheLastQuestion) {
  BusyMeter meter(0);
  EXPECT_EQ(meter.Percent(100 * kMs), 0);
  meter.Enter(4000 * kMs);  // idle for 4 s, nobody asking, then busy 2.5 s
  meter.Leave(6500 * kMs);
  EXPECT_EQ(meter.Percent(6510 * kMs), 100);  // 5000..6000, not 100..6510
  EXPECT_EQ(meter.Percent(7200 * kMs), 50);   // 6000..7000
}

}  // namespace
}  // namespace hal::sim
