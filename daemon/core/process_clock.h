// When a process started, and the time now, on one clock: clock ticks since
// boot (/proc/<pid>/stat's starttime; CLOCK_BOOTTIME). The whitelists of
// shared memory use it to tell a process from a later one that reused its pid.
#ifndef ACLD_DAEMON_CORE_PROCESS_CLOCK_H_
#define ACLD_DAEMON_CORE_PROCESS_CLOCK_H_

#include <cstdint>
#include <optional>

namespace acld {

// Nullopt when the process is gone or its stat cannot be read.
std::optional<uint64_t> ProcessStartTicks(int32_t pid);
uint64_t BootTicksNow();

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_PROCESS_CLOCK_H_
