#include "daemon/server/socket_path.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// Binds (and optionally listens on) a Unix socket at `path`; returns the fd.
int BindSocket(const std::string& path, bool listening) {
  sockaddr_un address = UnixSocketAddress(path);
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

// A fresh directory of its own under TempDir().
std::string FreshDir(const std::string& name, mode_t mode) {
  const std::string dir = TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  EXPECT_EQ(mkdir(dir.c_str(), 0700), 0);
  EXPECT_EQ(chmod(dir.c_str(), mode), 0);
  return dir;
}

mode_t ModeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(SocketPathTest, RefusesASymlinkWhereTheSocketGoes) {
  const std::string dir = FreshDir("symlink", 0755);
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "secret";
  ASSERT_EQ(chmod(victim.c_str(), 0600), 0);
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/a.sock").c_str()), 0);
  const absl::Status status = PrepareSocketPath(dir + "/a.sock");
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;
  EXPECT_NE(status.message().find("symlink"), absl::string_view::npos) << status;
  EXPECT_FALSE(ListenOnSocketPath(dir + "/a.sock", 0666, -1).ok());
  EXPECT_FALSE(SecureSocket(dir + "/a.sock", 0666, 0).ok());
  EXPECT_EQ(ModeOf(victim), 0600u);
}

TEST(SocketPathTest, RefusesADirectoryOthersMayWrite) {
  const std::string dir = FreshDir("open", 0777);
  absl::Status status = PrepareSocketPath(dir + "/a.sock");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("sticky"), absl::string_view::npos) << status;
  EXPECT_FALSE(ListenOnSocketPath(dir + "/a.sock", 0666, -1).ok());
  EXPECT_EQ(access((dir + "/a.sock").c_str(), F_OK), -1);
  // Sticky (like /tmp): nobody may remove or rename another user's file.
  ASSERT_EQ(chmod(dir.c_str(), 01777), 0);
  EXPECT_TRUE(PrepareSocketPath(dir + "/a.sock").ok());
}

TEST(SocketPathTest, RefusesADirectoryOfAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  const std::string dir = FreshDir("foreign", 0755);
  ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0);
  const absl::Status status = PrepareSocketPath(dir + "/a.sock");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("uid 65534"), absl::string_view::npos) << status;
}

TEST(SocketPathTest, NewSocketsHaveExactlyTheirMode) {
  const std::string dir = FreshDir("modes", 0755);
  const mode_t previous = umask(0);  // whatever the process umask, the mode is exact
  for (mode_t mode : {0666, 0660, 0600, 0640}) {
    const std::string path = dir + "/m" + std::to_string(mode) + ".sock";
    ASSERT_TRUE(PrepareSocketPath(path).ok());
    absl::StatusOr<int> fd = ListenOnSocketPath(path, mode, getegid());
    ASSERT_TRUE(fd.ok()) << fd.status();
    EXPECT_EQ(ModeOf(path), mode) << path;
    EXPECT_TRUE(SocketIsLive(path));
    close(*fd);
  }
  umask(previous);
  EXPECT_EQ(umask(previous), previous);  // restored
}

TEST(SocketPathTest, SecureSocketChecksWhatItFinds) {
  const std::string dir = FreshDir("secure", 0755);
  const std::string path = dir + "/s.sock";
  const int fd = BindSocket(path, /*listening=*/false);
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  EXPECT_TRUE(SecureSocket(path, 0640, getegid()).ok());
  const absl::Status wrong = SecureSocket(path, 0666, -1);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kFailedPrecondition) << wrong;
  close(fd);
}

}  // namespace
}  // namespace acld::server
