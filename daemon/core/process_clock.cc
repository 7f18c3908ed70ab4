#include "daemon/core/process_clock.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace acld {

std::optional<uint64_t> ProcessStartTicks(int32_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::stringstream text;
  text << file.rdbuf();
  const std::string stat = text.str();
  // The command (field 2) is in parentheses and may hold anything, ')'
  // included: the fields after it start past the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  const std::vector<std::string> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state); starttime is field 22.
  constexpr size_t kStartTime = 22 - 3;
  uint64_t ticks = 0;
  if (fields.size() <= kStartTime || !absl::SimpleAtoi(fields[kStartTime], &ticks)) {
    return std::nullopt;
  }
  return ticks;
}

uint64_t BootTicksNow() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const uint64_t per_second = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  return static_cast<uint64_t>(now.tv_sec) * per_second +
         static_cast<uint64_t>(now.tv_nsec) * per_second / 1000000000u;
}

}  // namespace acld
