#include "daemon/server/socket_path.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace acld::server {
namespace {

// Bazel's TEST_TMPDIR is too long for sun_path, so each test binary makes a short one.
std::string TempDir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/acld-socket-test-XXXXXX";
    return std::string(mkdtemp(pattern));
  }();
  return dir;
}

// Binds (and optionally listens on) a Unix socket at `path`; returns the fd.
int BindSocket(const std::string& path, bool listening) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  if (listening) {
    EXPECT_EQ(listen(fd, 1), 0);
  }
  return fd;
}

TEST(SocketPathTest, CreatesTheDirectory) {
  const std::string path = TempDir() + "/nested/dir/a.sock";
  ASSERT_TRUE(PrepareSocketPath(path).ok());
  EXPECT_EQ(access((TempDir() + "/nested/dir").c_str(), F_OK), 0);
}

TEST(SocketPathTest, RemovesAStaleSocket) {
  const std::string path = TempDir() + "/stale.sock";
  close(BindSocket(path, /*listening=*/false));  // the file stays, nobody listens
  EXPECT_FALSE(SocketIsLive(path));
  ASSERT_TRUE(PrepareSocketPath(path).ok());
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(SocketPathTest, RefusesALiveSocket) {
  const std::string path = TempDir() + "/live.sock";
  unlink(path.c_str());
  const int fd = BindSocket(path, /*listening=*/true);
  EXPECT_TRUE(SocketIsLive(path));
  absl::Status status = PrepareSocketPath(path);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  close(fd);
}

TEST(SocketPathTest, RefusesToReplaceARegularFile) {
  const std::string path = TempDir() + "/regular-file";
  std::ofstream(path) << "data";
  EXPECT_FALSE(PrepareSocketPath(path).ok());
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
}

TEST(SocketPathTest, RefusesOverlongPaths) {
  EXPECT_FALSE(PrepareSocketPath("/tmp/" + std::string(200, 'x')).ok());
  EXPECT_FALSE(PrepareSocketPath("").ok());
}

}  // namespace
}  // namespace acld::server
