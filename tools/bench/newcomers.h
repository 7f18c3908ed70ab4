// Newcomers: new processes started one after another while a benchmark's
// clients run, each timed up to its first reply. `acld_bench clients` and
// `periodic_floor` time theirs the same way, so that their figures compare;
// acld_bench's are its program executed anew, the floor's forked copies of
// its small program (NewcomerStart).
#ifndef ACLD_TOOLS_BENCH_NEWCOMERS_H_
#define ACLD_TOOLS_BENCH_NEWCOMERS_H_

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace acld::bench {

// In a benchmark's forked child: the child never outlives the benchmark
// (`benchmark`, its pid), and ends at once if the benchmark died before it
// asked for the signal (which survives an exec).
inline void DieWithBenchmark(pid_t benchmark) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != benchmark) _exit(1);
}

// How many newcomers a run times: enough for a p99 that is the worst of 40.
constexpr int kNewcomers = 40;

// Where a newcomer runs. In the benchmark's session it is one more process of
// the clients' scheduling group (an autogroup), and waits for a core among a
// thousand of them; a program a user starts from a shell, or a container's,
// is a group of its own (docs/performance.md, session 24).
enum class NewcomerPlace { kClientsSession, kOwnSession };

// Whether `word` is among a benchmark's arguments from `index` on.
inline bool HasArgument(int argc, char** argv, int index, const char* word) {
  for (int i = index; i < argc; ++i) {
    if (std::strcmp(argv[i], word) == 0) return true;
  }
  return false;
}

// "own-session" among a benchmark's last arguments: newcomers in sessions of
// their own.
inline NewcomerPlace NewcomerPlaceOf(int argc, char** argv, int index) {
  return HasArgument(argc, argv, index, "own-session") ? NewcomerPlace::kOwnSession
                                                       : NewcomerPlace::kClientsSession;
}

inline const char* NewcomerPlaceName(NewcomerPlace place) {
  return place == NewcomerPlace::kOwnSession ? "each in a session of its own"
                                             : "in the clients' session";
}

// How a newcomer's process starts. A program a user starts is executed anew:
// its libraries are loaded and its memory first written by its own start,
// before it calls aclInit. A forked copy of the benchmark's process instead
// shares the benchmark's pages until it writes them, and each page it writes
// first (the heap's, the libraries' data) is copied at a fault, 16 us each
// on this project's VMs: a scratch program's aclInit and first call took
// 2.9 ms of CPU forked, 1.2 ms executed (docs/performance.md, session 48).
enum class NewcomerStart { kExecuted, kForked };

// "forked" among a benchmark's last arguments: newcomers forked from it.
inline NewcomerStart NewcomerStartOf(int argc, char** argv, int index) {
  return HasArgument(argc, argv, index, "forked") ? NewcomerStart::kForked
                                                  : NewcomerStart::kExecuted;
}

inline const char* NewcomerStartName(NewcomerStart start) {
  return start == NewcomerStart::kForked ? "forked from the benchmark" : "each a program executed";
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

// Where a newcomer's time went, from its start to its report: on a CPU
// (getrusage, its threads' that ended too) and runnable but waiting for one
// (/proc/<pid>/task/*/schedstat, its threads' still running). The rest of
// its time it slept (for a reply). On a full machine a slow newcomer is
// mostly the second: it waited for a CPU, not for its replies
// (docs/performance.md, session 46).
struct SchedTimes {
  float on_cpu_us = 0;
  float runnable_us = 0;
};

// Time a thread was runnable but waited for a CPU, in microseconds, from its
// schedstat file; 0 where there is none. No stdio, no allocation: read
// before a newcomer's clock starts, they would take its first touches of
// memory out of its time.
inline float RunnableMicros(const char* schedstat) {
  const int fd = open(schedstat, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[96] = {};
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  unsigned long long on_cpu_ns = 0, runnable_ns = 0;  // NOLINT(runtime/int): sscanf's
  if (n <= 0 || std::sscanf(text, "%llu %llu", &on_cpu_ns, &runnable_ns) != 2) return 0;
  return static_cast<float>(runnable_ns / 1e3);
}

// The process's, since it started; `all_threads`: summed over its threads
// (a newcomer before its start has only the one).
inline SchedTimes OwnSchedTimes(bool all_threads) {
  SchedTimes times;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    times.on_cpu_us = static_cast<float>(
        (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
        usage.ru_stime.tv_usec);
  }
  if (!all_threads) {
    times.runnable_us = RunnableMicros("/proc/thread-self/schedstat");
    return times;
  }
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return times;
  while (const dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    char path[sizeof("/proc/self/task/") + sizeof(task->d_name) + sizeof("/schedstat")];
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", task->d_name);
    times.runnable_us += RunnableMicros(path);
  }
  closedir(tasks);
  return times;
}

// A newcomer's SchedTimes when it started (set in the newcomer's process,
// just before it runs): a forked process may wait for a CPU before it runs
// at all, which is not the newcomer's time.
inline SchedTimes& NewcomerStartSchedTimes() {
  static SchedTimes start;
  return start;
}

// A newcomer's report: its times to each reply (microseconds from its
// start), then its SchedTimes since it started. True when all of it was
// written.
inline bool WriteNewcomerReport(int report_fd, const std::vector<float>& replies_us) {
  std::vector<float> report = replies_us;
  const SchedTimes now = OwnSchedTimes(/*all_threads=*/true);
  report.push_back(now.on_cpu_us - NewcomerStartSchedTimes().on_cpu_us);
  report.push_back(now.runnable_us - NewcomerStartSchedTimes().runnable_us);
  const size_t bytes = report.size() * sizeof(float);
  return write(report_fd, report.data(), bytes) == static_cast<ssize_t>(bytes);
}

// One newcomer's figures, as it reported them.
struct Newcomer {
  std::vector<float> replies_us;  // to each reply, from its start
  SchedTimes sched;
  // Its CPU twin's, when the run had twins (TimeNewcomers): from the twin's
  // start to the end of its work.
  float twin_us = 0;
  SchedTimes twin_sched;
};

// A CPU twin: a process that needs as much CPU as the newcomer before it
// did, started right after it in the same place, and neither calls nor waits
// for anyone. Its time is roughly what the machine's scheduler alone gives a
// new process of that CPU need (roughly: it is one thread, touches no fresh
// memory and never sleeps), the baseline that tells a newcomer's wait for
// acld from its wait for a CPU (docs/performance.md, session 47).
// Burns `on_cpu_us` of the process's CPU, then writes its time and
// SchedTimes since its start to `report_fd`, and ends the process.
[[noreturn]] inline void RunCpuTwin(float on_cpu_us, int report_fd) {
  const SchedTimes start = OwnSchedTimes(/*all_threads=*/false);
  const auto started = std::chrono::steady_clock::now();
  auto cpu_us = [] {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
  };
  const double burnt_from = cpu_us();
  while (cpu_us() - burnt_from < on_cpu_us) {
  }
  const SchedTimes end = OwnSchedTimes(/*all_threads=*/false);
  const float report[3] = {
      std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - started).count(),
      end.on_cpu_us - start.on_cpu_us, end.runnable_us - start.runnable_us};
  _exit(write(report_fd, report, sizeof(report)) == sizeof(report) ? 0 : 1);
}

// The first argument of a benchmark's program that it executed as a
// newcomer or a CPU twin (TimeNewcomers with NewcomerStart::kExecuted).
constexpr char kExecutedNewcomer[] = "executed-newcomer";
// The descriptor an executed newcomer or twin reports on: the only one it
// inherits besides 0-2, as a program a user starts has few.
constexpr int kExecutedReportFd = 3;

// Runs `newcomer` in a newcomer's process, its clock started here, and ends
// the process if `newcomer` returned (it must end it).
[[noreturn]] inline void RunTimedNewcomer(const std::function<void(int report_fd)>& newcomer,
                                          int report_fd) {
  NewcomerStartSchedTimes() = OwnSchedTimes(/*all_threads=*/false);
  newcomer(report_fd);
  _exit(1);
}

// Set by RunIfExecutedNewcomer: this program's main runs what it executes.
inline bool& ExecutedNewcomersHandled() {
  static bool handled = false;
  return handled;
}

// Ends a forked child by executing the benchmark's own program as a
// newcomer (`role` "newcomer") or a CPU twin ("twin", burning `twin_cpu_us`)
// that reports to `report_fd` (RunIfExecutedNewcomer). No allocation: the
// benchmark may have threads.
[[noreturn]] inline void ExecuteAsNewcomer(const char* role, int report_fd, float twin_cpu_us) {
  char fd[16], cpu_us[32];
  std::snprintf(fd, sizeof(fd), "%d", kExecutedReportFd);
  std::snprintf(cpu_us, sizeof(cpu_us), "%.1f", twin_cpu_us);
  if ((report_fd == kExecutedReportFd || dup2(report_fd, kExecutedReportFd) >= 0) &&
      close_range(kExecutedReportFd + 1, ~0U, 0) == 0) {
    execl("/proc/self/exe", "acld-bench-newcomer", kExecutedNewcomer, role, fd, cpu_us,
          static_cast<char*>(nullptr));
  }
  char line[128];
  const int n = std::snprintf(line, sizeof(line), "newcomers: cannot execute a %s: %s\n", role,
                              std::strerror(errno));
  if (write(STDERR_FILENO, line, static_cast<size_t>(n)) < 0) {
  }
  _exit(127);
}

// First thing in the main of a benchmark whose newcomers are executed: a
// process it executed as a newcomer runs `newcomer` (which ends it), one it
// executed as a CPU twin runs RunCpuTwin; any other process returns. Both
// end with exit status 2 when their arguments are not what ExecuteAsNewcomer
// passes.
inline void RunIfExecutedNewcomer(int argc, char** argv,
                                  const std::function<void(int report_fd)>& newcomer) {
  ExecutedNewcomersHandled() = true;
  if (argc < 2 || std::strcmp(argv[1], kExecutedNewcomer) != 0) return;
  char* parsed = nullptr;
  const float twin_cpu_us = argc == 5 ? std::strtof(argv[4], &parsed) : 0;
  const bool twin = argc == 5 && std::strcmp(argv[2], "twin") == 0;
  if (argc != 5 || (!twin && std::strcmp(argv[2], "newcomer") != 0) ||
      argv[3] != std::to_string(kExecutedReportFd) || fcntl(kExecutedReportFd, F_GETFD) < 0 ||
      parsed == argv[4] || *parsed != '\0' || twin_cpu_us < 0) {
    std::fprintf(stderr, "%s: not a newcomer's arguments\n", argv[1]);
    _exit(2);
  }
  if (twin) RunCpuTwin(twin_cpu_us, kExecutedReportFd);
  // Its clock starts here, in main: what the program's start took before it
  // is not the newcomer's time, as it is not a user's program's.
  RunTimedNewcomer(newcomer, kExecutedReportFd);
}

// Runs `process` in a child in `place`, with a pipe's write end to which it
// writes `floats` floats and ends itself (exit status 0). The figures, or
// empty when it failed. Bounded as long as `process` is.
inline std::vector<float> RunReporting(NewcomerPlace place,
                                       const std::function<void(int report_fd)>& process,
                                       size_t floats) {
  int report[2];
  if (pipe(report) != 0) return {};
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    close(report[0]);
    close(report[1]);
    return {};
  }
  if (child == 0) {
    close(report[0]);
    DieWithBenchmark(parent);
    // Before the process starts its clock: the move is the launcher's.
    if (place == NewcomerPlace::kOwnSession && setsid() < 0) _exit(1);
    process(report[1]);
    _exit(1);  // a process that returned did not end itself
  }
  close(report[1]);
  std::vector<float> figures(floats);
  const size_t bytes = floats * sizeof(float);
  const bool reported = read(report[0], figures.data(), bytes) == static_cast<ssize_t>(bytes);
  close(report[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return figures;
}

// Starts up to kNewcomers processes, one at a time, `spacing` apart, in
// `place`, started as `start` says (executed ones run the `newcomer` given
// to RunIfExecutedNewcomer, which must be this one; without that call in
// main they do not start at all). The i-th starts at i spacings from the
// first, or as soon as the one before it ended. Each runs `newcomer` with
// a pipe's write end, to which it writes
// its report (WriteNewcomerReport, `replies` times), and must end the
// process (exit status 0); with `cpu_twins`, each is followed by its CPU
// twin (RunCpuTwin; a twin that fails leaves twin_us 0). None starts after
// kNewcomers spacings from the first: slow ones must not push the last past
// the clients' run, onto a machine gone quiet. Returns the reports in order;
// empty if a newcomer failed. Bounded as long as each newcomer is.
inline std::vector<Newcomer> TimeNewcomers(std::chrono::steady_clock::duration spacing,
                                           NewcomerPlace place, NewcomerStart start,
                                           const std::function<void(int report_fd)>& newcomer,
                                           int replies, bool cpu_twins = false) {
  std::vector<Newcomer> newcomers;
  if (start == NewcomerStart::kExecuted && !ExecutedNewcomersHandled()) {
    std::fprintf(stderr, "newcomers: executed, but main does not call RunIfExecutedNewcomer\n");
    return {};
  }
  const auto first = std::chrono::steady_clock::now();
  const auto end = first + kNewcomers * spacing;
  for (int i = 0; i < kNewcomers && std::chrono::steady_clock::now() < end; ++i) {
    const auto next = first + (i + 1) * spacing;
    const std::vector<float> figures = RunReporting(
        place,
        [&newcomer, start](int report_fd) {
          if (start == NewcomerStart::kExecuted) ExecuteAsNewcomer("newcomer", report_fd, 0);
          RunTimedNewcomer(newcomer, report_fd);
        },
        static_cast<size_t>(replies) + 2);
    if (figures.empty()) return {};
    Newcomer timed;
    timed.replies_us.assign(figures.begin(), figures.begin() + replies);
    timed.sched = {figures[replies], figures[replies + 1]};
    if (cpu_twins && std::chrono::steady_clock::now() < end) {
      const float need = timed.sched.on_cpu_us;
      const std::vector<float> twin = RunReporting(
          place,
          [need, start](int report_fd) {
            if (start == NewcomerStart::kExecuted) ExecuteAsNewcomer("twin", report_fd, need);
            RunCpuTwin(need, report_fd);
          },
          3);
      if (!twin.empty()) {
        timed.twin_us = twin[0];
        timed.twin_sched = {twin[1], twin[2]};
      }
    }
    newcomers.push_back(std::move(timed));
    std::this_thread::sleep_until(next);
  }
  return newcomers;
}

// The newcomers' times to reply `reply` (0: the first), sorted.
inline std::vector<float> SortedReplies(const std::vector<Newcomer>& newcomers, size_t reply) {
  std::vector<float> sorted;
  for (const Newcomer& n : newcomers) {
    if (reply < n.replies_us.size()) sorted.push_back(n.replies_us[reply]);
  }
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// Where the slowest newcomer's time to reply `reply` went, and the median
// newcomer's CPU: "the slowest, 61.2 ms: 3.1 ms on a CPU, 52.0 ms runnable
// waiting for one; median 2.9 ms on a CPU".
inline std::string SlowestNewcomer(const std::vector<Newcomer>& newcomers, size_t reply) {
  if (newcomers.empty()) return "";
  const Newcomer* slowest = &newcomers[0];
  std::vector<float> on_cpu;
  for (const Newcomer& n : newcomers) {
    on_cpu.push_back(n.sched.on_cpu_us);
    if (n.replies_us[reply] > slowest->replies_us[reply]) slowest = &n;
  }
  std::sort(on_cpu.begin(), on_cpu.end());
  char line[160];
  std::snprintf(line, sizeof(line),
                "the slowest, %.1f ms: %.1f ms on a CPU, %.1f ms runnable waiting for one; median "
                "%.1f ms on a CPU",
                slowest->replies_us[reply] / 1000.0, slowest->sched.on_cpu_us / 1000.0,
                slowest->sched.runnable_us / 1000.0, Percentile(on_cpu, 0.5) / 1000.0);
  return line;
}

// The CPU twins' times (TimeNewcomers with twins): "; their 40 CPU twins
// (as much CPU each, no acld): p50 3.1 ms, p99 14.2 ms (the slowest: 4.0 ms
// on a CPU, 10.1 ms runnable waiting for one)"; empty when the run had none.
inline std::string CpuTwins(const std::vector<Newcomer>& newcomers) {
  std::vector<float> sorted;
  const Newcomer* slowest = nullptr;
  for (const Newcomer& n : newcomers) {
    if (n.twin_us <= 0) continue;
    sorted.push_back(n.twin_us);
    if (slowest == nullptr || n.twin_us > slowest->twin_us) slowest = &n;
  }
  if (slowest == nullptr) return "";
  std::sort(sorted.begin(), sorted.end());
  char line[200];
  std::snprintf(line, sizeof(line),
                "; their %zu CPU twins (as much CPU each, no acld): p50 %.1f ms, p99 %.1f ms (the "
                "slowest: %.1f ms on a CPU, %.1f ms runnable waiting for one)",
                sorted.size(), Percentile(sorted, 0.5) / 1000.0, Percentile(sorted, 0.99) / 1000.0,
                slowest->twin_sched.on_cpu_us / 1000.0, slowest->twin_sched.runnable_us / 1000.0);
  return line;
}

}  // namespace acld::bench

#endif  // ACLD_TOOLS_BENCH_NEWCOMERS_H_
