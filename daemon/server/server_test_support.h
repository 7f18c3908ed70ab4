// Helpers shared by daemon/server's unit tests.
#ifndef ACLD_DAEMON_SERVER_SERVER_TEST_SUPPORT_H_
#define ACLD_DAEMON_SERVER_SERVER_TEST_SUPPORT_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace acld::server {

// A short directory under /tmp, made once per test binary and removed with
// its contents when it exits (Bazel's TEST_TMPDIR is too long for sun_path).
inline std::string TempDir() {
  struct ShortTempDir {
    ShortTempDir() {
      char pattern[] = "/tmp/acld-server-test-XXXXXX";
      path = mkdtemp(pattern);
    }
    ~ShortTempDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    std::string path;
  };
  static const ShortTempDir dir;
  return dir.path;
}

// Polls `condition` every 5 ms until it holds (true) or `timeout` passes (false).
template <typename Condition>
bool Eventually(Condition condition, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SERVER_TEST_SUPPORT_H_
