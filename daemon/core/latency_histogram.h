// A histogram of durations with fixed bounds (Prometheus's cumulative
// buckets), safe to record into from any thread and bounded in size.
#ifndef ACLD_DAEMON_CORE_LATENCY_HISTOGRAM_H_
#define ACLD_DAEMON_CORE_LATENCY_HISTOGRAM_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace acld {

class LatencyHistogram {
 public:
  // Upper bounds in seconds: 100 µs to 10 s, then everything above.
  static constexpr std::array<double, 15> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};

  void Record(absl::Duration latency) {
    const double seconds = absl::ToDoubleSeconds(latency);
    size_t bucket = 0;
    while (bucket < kBounds.size() && seconds > kBounds[bucket]) ++bucket;
    counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    nanos_.fetch_add(static_cast<uint64_t>(absl::ToInt64Nanoseconds(latency)),
                     std::memory_order_relaxed);
  }

  struct Snapshot {
    std::vector<double> upper_bounds;         // kBounds
    std::vector<uint64_t> cumulative_counts;  // one per bound: samples <= it
    uint64_t count = 0;                       // every sample, the slowest included
    double sum_seconds = 0;
  };
  Snapshot Read() const {
    Snapshot snapshot;
    uint64_t running = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
      running += counts_[i].load(std::memory_order_relaxed);
      snapshot.upper_bounds.push_back(kBounds[i]);
      snapshot.cumulative_counts.push_back(running);
    }
    snapshot.count = running + counts_[kBounds.size()].load(std::memory_order_relaxed);
    snapshot.sum_seconds = static_cast<double>(nanos_.load(std::memory_order_relaxed)) / 1e9;
    return snapshot;
  }

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};  // the last: above every bound
  std::atomic<uint64_t> nanos_{0};
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_LATENCY_HISTOGRAM_H_
