// Newcomers: new processes started one after another while a benchmark's
// clients run, each timed up to its first reply. `acld_bench clients` and
// `periodic_floor` time theirs the same way, so that their figures compare.
#ifndef ACLD_TOOLS_BENCH_NEWCOMERS_H_
#define ACLD_TOOLS_BENCH_NEWCOMERS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace acld::bench {

// How many newcomers a run times: enough for a p99 that is the worst of 40.
constexpr int kNewcomers = 40;

// The `p` quantile (0..1) of `sorted`; 0 when it is empty.
inline double Percentile(const std::vector<float>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// Starts kNewcomers processes, one at a time, `spacing` apart. Each runs
// `newcomer` with a pipe's write end, to which it writes its time (one
// float, microseconds), and must end the process (exit status 0). Returns
// the times, sorted; empty if one failed. Bounded as long as each newcomer is.
inline std::vector<float> TimeNewcomers(std::chrono::steady_clock::duration spacing,
                                        const std::function<void(int report_fd)>& newcomer) {
  std::vector<float> times;
  for (int i = 0; i < kNewcomers; ++i) {
    const auto next = std::chrono::steady_clock::now() + spacing;
    int report[2];
    if (pipe(report) != 0) return {};
    const pid_t child = fork();
    if (child < 0) return {};
    if (child == 0) {
      close(report[0]);
      newcomer(report[1]);
      _exit(1);  // a newcomer that returned did not end itself
    }
    close(report[1]);
    float micros = 0;
    const bool reported = read(report[0], &micros, sizeof(micros)) == sizeof(micros);
    close(report[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
    times.push_back(micros);
    std::this_thread::sleep_until(next);
  }
  std::sort(times.begin(), times.end());
  return times;
}

}  // namespace acld::bench

#endif  // ACLD_TOOLS_BENCH_NEWCOMERS_H_
