#include "daemon/core/latency_histogram.h"

#include "gtest/gtest.h"

namespace acld {
namespace {

TEST(LatencyHistogramTest, BucketsAreCumulativeAndTheSlowestCountsOnlyInTheTotal) {
  LatencyHistogram histogram;
  histogram.Record(absl::Microseconds(50));    // <= 100 us
  histogram.Record(absl::Microseconds(100));   // <= 100 us (bounds are inclusive)
  histogram.Record(absl::Milliseconds(3));     // <= 5 ms
  histogram.Record(absl::Seconds(60));         // above every bound
  const LatencyHistogram::Snapshot snapshot = histogram.Read();
  ASSERT_EQ(snapshot.upper_bounds.size(), LatencyHistogram::kBounds.size());
  ASSERT_EQ(snapshot.cumulative_counts.size(), LatencyHistogram::kBounds.size());
  EXPECT_EQ(snapshot.cumulative_counts.front(), 2u);
  EXPECT_EQ(snapshot.cumulative_counts[4], 2u);  // <= 2.5 ms
  EXPECT_EQ(snapshot.cumulative_counts[5], 3u);  // <= 5 ms
  EXPECT_EQ(snapshot.cumulative_counts.back(), 3u);
  EXPECT_EQ(snapshot.count, 4u);
  EXPECT_NEAR(snapshot.sum_seconds, 60.00315, 1e-9);
}

}  // namespace
}  // namespace acld
