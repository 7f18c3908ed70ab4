#include "daemon/server/quota_groups.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "daemon/server/server_test_support.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

int ConnectTo(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// While a group's sessions end, acld may have to cut the connection of a
// member that does not read (RuntimeService::Release): the group is gone
// from the list by then, but its connections are still reached.
TEST(QuotaGroupsTest, AGroupBeingDeletedStillHasItsConnectionsCut) {
  QuotaGroupsOptions options;
  options.socket_path = TempDir() + "/acld.sock";
  options.host_devices = 1;
  absl::Mutex mu;
  std::vector<int> accepted;
  QuotaGroups groups(
      options,
      [](const PeerCredentials&, uint32_t, ReceivedMemory, const Entrance&)
          -> absl::StatusOr<std::function<void(UniqueFd)>> {
        return absl::UnavailableError("no sessions in this test");
      },
      [&](int fd) {
        absl::MutexLock lock(&mu);
        accepted.push_back(fd);
      });
  QuotaGroupSpec spec;
  spec.devices = {0};
  spec.memory_limits = {0};
  absl::StatusOr<GroupView> group = groups.Create(spec, {});
  ASSERT_TRUE(group.ok()) << group.status();
  const int member = ConnectTo(group->directory + "/acld.sock");
  ASSERT_GE(member, 0);
  ASSERT_TRUE(Eventually([&] {
    absl::MutexLock lock(&mu);
    return !accepted.empty();
  }));

  absl::StatusOr<uint32_t> ended = groups.Delete(group->record.id, [&](const QuotaGroup&) {
    EXPECT_FALSE(groups.List(group->record.id).ok()) << "a group being deleted is not listed";
    // Another user's process with this pid (a pid reused since) is not it.
    groups.ShutdownConnections(getpid(), getuid() + 1);
    pollfd still{member, POLLIN, 0};
    EXPECT_EQ(poll(&still, 1, 100), 0) << "cut by pid alone";
    groups.ShutdownConnections(getpid(), getuid());
    return 1u;
  });
  ASSERT_TRUE(ended.ok()) << ended.status();
  // The member's end of the connection sees it shut down.
  pollfd hangup{member, POLLIN, 0};
  ASSERT_EQ(poll(&hangup, 1, 5000), 1) << "the member's connection was not cut";
  char byte;
  EXPECT_EQ(recv(member, &byte, 1, MSG_DONTWAIT), 0);
  close(member);
  absl::MutexLock lock(&mu);
  for (int fd : accepted) close(fd);
}

}  // namespace
}  // namespace acld::server
