// Helpers shared by daemon/server's unit tests.
#ifndef ACLD_DAEMON_SERVER_SERVER_TEST_SUPPORT_H_
#define ACLD_DAEMON_SERVER_SERVER_TEST_SUPPORT_H_

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/server/socket_path.h"
#include "daemon/server/uid_owners.h"
#include "gtest/gtest.h"

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

// A blocking Unix socket listening at `path` (whatever was there goes).
inline int Listen(const std::string& path) {
  unlink(path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = UnixSocketAddress(path);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(listen(fd, 128), 0);
  return fd;
}

inline bool Connect(int fd, const std::string& path) {
  sockaddr_un address = UnixSocketAddress(path);
  return connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
}

// Connects to `path` from a child process running as `uid` (the kernel
// records the uid at connect time), which then exits; whether it connected.
// The socket and its directory must let that user in.
inline bool ConnectAsUid(uid_t uid, const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    _exit(Connect(fd, path) ? 0 : 1);
  }
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// `owners` count for the host (uid_owners.h) for as long as it lives.
class ScopedHostUidOwners {
 public:
  explicit ScopedHostUidOwners(UidOwners owners) {
    UidOwners::SetHost(std::make_shared<UidOwners>(std::move(owners)));
  }
  ~ScopedHostUidOwners() { UidOwners::SetHost(nullptr); }
  ScopedHostUidOwners(const ScopedHostUidOwners&) = delete;
  ScopedHostUidOwners& operator=(const ScopedHostUidOwners&) = delete;
};

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
