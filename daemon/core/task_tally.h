// How a device's tasks ended, counted since acld started (for operators:
// `aclctl --json status` and the metrics). Streams come and go; these only
// grow.
#ifndef ACLD_DAEMON_CORE_TASK_TALLY_H_
#define ACLD_DAEMON_CORE_TASK_TALLY_H_

#include <atomic>
#include <cstdint>

namespace acld {

struct TaskTally {
  std::atomic<uint64_t> completed{0};  // ran successfully
  std::atomic<uint64_t> failed{0};     // ran and failed
  std::atomic<uint64_t> discarded{0};  // dropped before they ran (abort, stop on failure, end)

  struct Counts {
    uint64_t completed = 0;
    uint64_t failed = 0;
    uint64_t discarded = 0;
  };
  Counts Read() const {
    return Counts{completed.load(std::memory_order_relaxed), failed.load(std::memory_order_relaxed),
                  discarded.load(std::memory_order_relaxed)};
  }
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_TASK_TALLY_H_
