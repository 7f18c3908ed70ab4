#include "daemon/server/process_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"

namespace acld::server {

namespace {

// Up to `max_bytes` of /proc/<pid>/<file>; empty when it cannot be read.
std::string ReadProcFile(pid_t pid, const char* file, size_t max_bytes) {
  if (pid <= 0) return "";
  const std::string path = absl::StrCat("/proc/", pid, "/", file);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  std::string raw(max_bytes, '\0');
  size_t got = 0;
  while (got < raw.size()) {
    const ssize_t n = read(fd, raw.data() + got, raw.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  raw.resize(got);
  return raw;
}

}  // namespace

std::string ProcessCommand(pid_t pid, size_t max_bytes) {
  // One byte more than kept, to know whether the line was cut.
  std::string raw = ReadProcFile(pid, "cmdline", max_bytes + 1);
  // Arguments are NUL-terminated; the last terminator is no separator.
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  std::replace(raw.begin(), raw.end(), '\0', ' ');
  return SanitizeText(raw, max_bytes);
}

std::string ProcessName(pid_t pid) {
  std::string name = ReadProcFile(pid, "comm", 64);  // the kernel keeps 16 bytes
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return SanitizeText(name, kMaxCommandBytes);
}

}  // namespace acld::server
