#include "daemon/server/quota_groups.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
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

// A quota group with one member connected to its runtime socket (no sessions:
// the connection is all there is).
class QuotaGroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    QuotaGroupSpec spec;
    spec.devices = {0};
    spec.memory_limits = {0};
    absl::StatusOr<GroupView> created = groups_.Create(spec, {});
    ASSERT_TRUE(created.ok()) << created.status();
    group_ = *created;
    member_ = ConnectTo(group_.directory + "/acld.sock");
    ASSERT_GE(member_, 0);
    ASSERT_TRUE(Eventually([&] {
      absl::MutexLock lock(&mu_);
      return !accepted_.empty();
    }));
  }
  void TearDown() override {
    if (member_ >= 0) close(member_);
    absl::MutexLock lock(&mu_);
    for (int fd : accepted_) close(fd);
  }
  static QuotaGroupsOptions Options() {
    QuotaGroupsOptions options;
    options.socket_path = TempDir() + "/acld.sock";
    options.host_devices = 1;
    return options;
  }
  // Whether the member's end of its connection sees it shut down (within 5 s).
  bool MemberCut() {
    pollfd hangup{member_, POLLIN, 0};
    char byte;
    return poll(&hangup, 1, 5000) == 1 && recv(member_, &byte, 1, MSG_DONTWAIT) == 0;
  }

  absl::Mutex mu_;
  std::vector<int> accepted_;
  QuotaGroups groups_{Options(),
                      [](const PeerCredentials&, uint32_t, ReceivedMemory, const Entrance&)
                          -> absl::StatusOr<std::function<void(UniqueFd)>> {
                        return absl::UnavailableError("no sessions in this test");
                      },
                      [this](int fd) {
                        absl::MutexLock lock(&mu_);
                        accepted_.push_back(fd);
                      }};
  GroupView group_;
  int member_ = -1;
};

// While a group's sessions end, acld may have to cut the connection of a
// member that does not read (RuntimeService::Release): the group is gone
// from the list by then, but its connections are still reached.
TEST_F(QuotaGroupsTest, AGroupBeingDeletedStillHasItsConnectionsCut) {
  absl::StatusOr<uint32_t> ended = groups_.Delete(group_.record.id, [&](const QuotaGroup&) {
    EXPECT_FALSE(groups_.List(group_.record.id).ok()) << "a group being deleted is not listed";
    // Another user's process with this pid (a pid reused since) is not it.
    groups_.ShutdownConnections(PeerCredentials{getpid(), getuid() + 1});
    pollfd still{member_, POLLIN, 0};
    EXPECT_EQ(poll(&still, 1, 100), 0) << "cut by pid alone";
    groups_.ShutdownConnections(PeerCredentials{getpid(), getuid()});
    // Cut now, while its sessions end: not only when Delete closes all.
    EXPECT_TRUE(MemberCut()) << "the member's connection was not cut";
    return 1u;
  });
  ASSERT_TRUE(ended.ok()) << ended.status();
}

// A connection the group's socket accepted (a session or not) does not
// outlive the group: nothing would count or show it any more.
TEST_F(QuotaGroupsTest, DeletingAGroupClosesItsConnections) {
  ASSERT_TRUE(groups_.Delete(group_.record.id, [](const QuotaGroup&) { return 0u; }).ok());
  EXPECT_TRUE(MemberCut()) << "the member's connection outlived its group";
}

// acld's socket directory may be sticky and writable by all, as /tmp: a user
// who put a symlink where acld makes its groups directory made acld chmod
// the symlink's target (and put the groups there).
TEST(QuotaGroupsPlaceTest, AGroupsDirectoryThatIsASymlinkIsRefused) {
  const std::string sticky = TempDir() + "/sticky";
  const std::string victim = TempDir() + "/victim";
  ASSERT_EQ(mkdir(sticky.c_str(), 0755), 0);
  ASSERT_EQ(chmod(sticky.c_str(), 01777), 0);
  ASSERT_EQ(mkdir(victim.c_str(), 0700), 0);
  ASSERT_EQ(symlink(victim.c_str(), (sticky + "/groups").c_str()), 0);
  QuotaGroupsOptions options;
  options.socket_path = sticky + "/acld.sock";
  options.host_devices = 1;
  QuotaGroups groups(
      options,
      [](const PeerCredentials&, uint32_t, ReceivedMemory, const Entrance&)
          -> absl::StatusOr<std::function<void(UniqueFd)>> {
        return absl::UnavailableError("no sessions in this test");
      },
      [](int fd) { close(fd); });
  QuotaGroupSpec spec;
  spec.devices = {0};
  spec.memory_limits = {0};
  const absl::StatusOr<GroupView> created = groups.Create(spec, {});
  EXPECT_FALSE(created.ok());
  struct stat info {};
  ASSERT_EQ(stat(victim.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0700u) << "the symlink's target was changed";
  EXPECT_TRUE(std::filesystem::is_empty(victim));
}

}  // namespace
}  // namespace acld::server
