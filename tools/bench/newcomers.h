// Newcomers: new processes started one after another while a benchmark's
// clients run, each timed up to its first reply. `acld_bench clients` and
// `periodic_floor` time theirs the same way, so that their figures compare.
#ifndef ACLD_TOOLS_BENCH_NEWCOMERS_H_
#define ACLD_TOOLS_BENCH_NEWCOMERS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace acld::bench {

// How many newcomers a run times: enough for a p99 that is the worst of 40.
constexpr int kNewcomers = 40;

// Where a newcomer runs. In the benchmark's session it is one more process of
// the clients' scheduling group (an autogroup), and waits for a core among a
// thousand of them; a program a user starts from a shell, or a container's,
// is a group of its own (docs/performance.md, session 24).
enum class NewcomerPlace { kClientsSession, kOwnSession };

// "own-session" as a benchmark's last argument: newcomers in sessions of
// their own.
inline NewcomerPlace NewcomerPlaceOf(int argc, char** argv, int index) {
  return argc > index && std::string(argv[index]) == "own-session" ? NewcomerPlace::kOwnSession
                                                                  : NewcomerPlace::kClientsSession;
}

inline const char* NewcomerPlaceName(NewcomerPlace place) {
  return place == NewcomerPlace::kOwnSession ? "each in a session of its own"
                                             : "in the clients' session";
}

// When client `index` of `count`, calling every `period_ms`, makes its first
// call after the start: the clients' calls spread evenly over the period, as
// independent processes' do. Started at one signal and not spread, all of
// them would call within the same moment every period, a burst that queues
// the last ones behind a thousand others (docs/performance.md, session 28).
inline std::chrono::steady_clock::duration PeriodicPhase(int index, int count, int period_ms) {
  if (period_ms <= 0 || count <= 0) return std::chrono::steady_clock::duration::zero();
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::microseconds(int64_t{period_ms} * 1000 * index / count));
}

// The `p` quantile (0..1) of `sorted`; 0 when it is empty.
inline double Percentile(const std::vector<float>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// Starts kNewcomers processes, one at a time, `spacing` apart, in `place`.
// Each runs `newcomer` with a pipe's write end, to which it writes
// `times_each` times (floats, microseconds: to its first reply, its second,
// ...), and must end the process (exit status 0). Returns the times by
// position, each sorted; empty if one failed. Bounded as long as each
// newcomer is.
inline std::vector<std::vector<float>> TimeNewcomersEach(
    std::chrono::steady_clock::duration spacing, NewcomerPlace place,
    const std::function<void(int report_fd)>& newcomer, int times_each) {
  std::vector<std::vector<float>> times(static_cast<size_t>(times_each));
  for (int i = 0; i < kNewcomers; ++i) {
    const auto next = std::chrono::steady_clock::now() + spacing;
    int report[2];
    if (pipe(report) != 0) return {};
    const pid_t child = fork();
    if (child < 0) return {};
    if (child == 0) {
      close(report[0]);
      // Before the newcomer starts its clock: the move is the launcher's.
      if (place == NewcomerPlace::kOwnSession && setsid() < 0) _exit(1);
      newcomer(report[1]);
      _exit(1);  // a newcomer that returned did not end itself
    }
    close(report[1]);
    std::vector<float> micros(times.size());
    const size_t bytes = micros.size() * sizeof(float);
    const bool reported = read(report[0], micros.data(), bytes) == static_cast<ssize_t>(bytes);
    close(report[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
    for (size_t k = 0; k < times.size(); ++k) times[k].push_back(micros[k]);
    std::this_thread::sleep_until(next);
  }
  for (std::vector<float>& position : times) std::sort(position.begin(), position.end());
  return times;
}

// The same, for newcomers that write one time each.
inline std::vector<float> TimeNewcomers(std::chrono::steady_clock::duration spacing,
                                        NewcomerPlace place,
                                        const std::function<void(int report_fd)>& newcomer) {
  std::vector<std::vector<float>> times = TimeNewcomersEach(spacing, place, newcomer, 1);
  return times.empty() ? std::vector<float>() : std::move(times[0]);
}

}  // namespace acld::bench

#endif  // ACLD_TOOLS_BENCH_NEWCOMERS_H_
