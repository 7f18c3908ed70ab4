#include "daemon/server/peer_credentials.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace acld::server {
namespace {

std::string ReadToken(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  std::string token;
  char buffer[64];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) token.append(buffer, n);
  close(fd);
  return token.substr(0, token.find('\n'));
}

TEST(PeerCredentialsTest, TokensCarryTheKernelsIdentityOnce) {
  char pattern[] = "/tmp/acld-peer-test-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const std::string path = PeerSocketPath(dir + "/acld.sock");
  EXPECT_EQ(path, dir + "/acld.sock.peer");
  absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> desk = PeerCredentialDesk::Start(path);
  ASSERT_TRUE(desk.ok()) << desk.status();

  const std::string token = ReadToken(path);
  EXPECT_EQ(token.size(), 32u);
  EXPECT_NE(ReadToken(path), token);  // a new one each time
  std::optional<PeerCredentials> credentials = (*desk)->Redeem(token);
  ASSERT_TRUE(credentials.has_value());
  EXPECT_EQ(credentials->pid, getpid());
  EXPECT_EQ(credentials->uid, getuid());
  EXPECT_EQ(credentials->gid, getgid());
  EXPECT_FALSE((*desk)->Redeem(token).has_value());  // once only
  EXPECT_FALSE((*desk)->Redeem("forged").has_value());
  EXPECT_FALSE((*desk)->Redeem("").has_value());
  desk->reset();
  unlink(path.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace acld::server
