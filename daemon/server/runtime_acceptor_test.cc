#include "daemon/server/runtime_acceptor.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "daemon/core/process_clock.h"
#include "daemon/server/server_test_support.h"
#include "daemon/server/socket_path.h"
#include "daemon/server/uid_owners.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// Keeps what the acceptor hands over.
struct Accepted {
  absl::Mutex mu;
  std::vector<int> fds ABSL_GUARDED_BY(mu);
  void Keep(int fd) {
    absl::MutexLock lock(&mu);
    fds.push_back(fd);
  }
  size_t count() {
    absl::MutexLock lock(&mu);
    return fds.size();
  }
  ~Accepted() {
    for (int fd : fds) close(fd);
  }
};

TEST(RuntimeAcceptorTest, HandsEveryConnectionOver) {
  const std::string path = TempDir() + "/plain.sock";
  Accepted accepted;
  auto acceptor = RuntimeAcceptor::Start(Listen(path), "test socket", [&](int fd) {
    EXPECT_NE(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    accepted.Keep(fd);
  });
  ASSERT_TRUE(acceptor.ok());
  std::vector<int> clients;
  for (int i = 0; i < 20; ++i) {
    clients.push_back(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(Connect(clients.back(), path));
  }
  EXPECT_TRUE(Eventually([&] { return accepted.count() == 20; }));
  EXPECT_EQ((*acceptor)->accepted(), 20u);
  EXPECT_EQ((*acceptor)->pauses(), 0u);
  (*acceptor)->Stop();
  // Stopped: the listening socket is closed, nothing accepts any more.
  const int late = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_FALSE(Connect(late, path));
  close(late);
  for (int fd : clients) close(fd);
}

// Created, an acceptor accepts nothing until told to, so that whatever looks
// its connections up is in place first; from then on each connection's uid
// is known by the time it is handed over (acld counts a stream's pending
// Hello under that uid as soon as gRPC sees it).
TEST(RuntimeAcceptorTest, AcceptsOnlyOnceStartedAndKnowsEachUidByTheHandOver) {
  const std::string path = TempDir() + "/created.sock";
  Accepted accepted;
  std::atomic<int> uid_unknown{0};
  RuntimeAcceptor* looked_up = nullptr;
  auto acceptor = RuntimeAcceptor::Create(Listen(path), "test socket", [&](int fd) {
    const std::optional<uid_t> uid = looked_up->PeerUid(fd);
    if (!uid.has_value() || *uid != getuid()) ++uid_unknown;
    accepted.Keep(fd);
  });
  ASSERT_TRUE(acceptor.ok());
  looked_up = acceptor->get();
  const int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(Connect(client, path));  // queued: the socket listens
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(accepted.count(), 0u);
  EXPECT_EQ((*acceptor)->accepted(), 0u);
  (*acceptor)->StartAccepting();
  (*acceptor)->StartAccepting();  // once only
  EXPECT_TRUE(Eventually([&] { return accepted.count() == 1; }));
  EXPECT_EQ(uid_unknown.load(), 0);
  (*acceptor)->Stop();
  close(client);
}

// Never started, an acceptor still closes its socket.
TEST(RuntimeAcceptorTest, ANeverStartedAcceptorClosesItsSocket) {
  const std::string path = TempDir() + "/unstarted.sock";
  auto acceptor = RuntimeAcceptor::Create(Listen(path), "test socket", [](int fd) { close(fd); });
  ASSERT_TRUE(acceptor.ok());
  acceptor->reset();
  const int late = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_FALSE(Connect(late, path));
  close(late);
}

// A uid holds at most max_per_uid connections: the next ones are closed at
// once, never handed over; one that closes (the server side closed by its
// owner, as gRPC does) makes room again.
// A session acld ends for not reading has its process's connections cut, by
// pid and uid and the process's start time: a process that took the pid
// since (in pods every process may be uid 0) keeps its connections.
TEST(RuntimeAcceptorTest, CutsTheConnectionsOfThatProcessOnly) {
  const std::string path = TempDir() + "/cut.sock";
  Accepted accepted;
  auto acceptor = RuntimeAcceptor::Start(Listen(path), "test socket",
                                         [&](int fd) { accepted.Keep(fd); });
  ASSERT_TRUE(acceptor.ok());
  const int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_TRUE(Connect(client, path));
  ASSERT_TRUE(Eventually([&] { return accepted.count() == 1; }));
  const uint64_t started = *ProcessStartTicks(getpid());
  auto cut = [&](const PeerCredentials& process) {
    return (*acceptor)->ShutdownConnections(
        [&](const PeerCredentials& peer) { return SameProcess(peer, process); });
  };
  EXPECT_EQ(cut(PeerCredentials{getpid(), getuid() + 1, 0, started}), 0u) << "another uid";
  EXPECT_EQ(cut(PeerCredentials{getpid(), getuid(), 0, started - 1}), 0u)
      << "an earlier process with this pid";
  EXPECT_EQ(cut(PeerCredentials{getpid(), getuid(), 0, started}), 1u);
  char byte;
  EXPECT_EQ(recv(client, &byte, 1, 0), 0) << "cut: the client sees its end";
  close(client);
}

TEST(RuntimeAcceptorTest, AUidHoldsAtMostItsConnections) {
  const std::string path = TempDir() + "/capped.sock";
  Accepted accepted;
  auto acceptor = RuntimeAcceptor::Start(
      Listen(path), "test socket",
      [&](int fd) { accepted.Keep(fd); },
      absl::Milliseconds(100), /*max_per_uid=*/3);
  ASSERT_TRUE(acceptor.ok());
  std::vector<int> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(Connect(clients.back(), path));
  }
  EXPECT_TRUE(Eventually([&] { return (*acceptor)->refused() == 2; }));
  EXPECT_EQ(accepted.count(), 3u);
  EXPECT_EQ((*acceptor)->OpenConnections(), 3u);
  // The server side of one handed-over connection closes: room for one more.
  {
    absl::MutexLock lock(&accepted.mu);
    close(accepted.fds.front());
    accepted.fds.erase(accepted.fds.begin());
  }
  absl::SleepFor(absl::Milliseconds(150));  // past the recount's pace
  clients.push_back(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(Connect(clients.back(), path));
  EXPECT_TRUE(Eventually([&] { return accepted.count() == 3; }));
  EXPECT_TRUE(Eventually([&] { return (*acceptor)->accepted() == 6; }));
  EXPECT_EQ((*acceptor)->refused(), 2u);
  EXPECT_EQ((*acceptor)->max_per_uid(), 3u);
  (*acceptor)->Stop();
  for (int fd : clients) close(fd);
}

// A subordinate uid's connections count as its range owner's; on a quota
// group's socket every connection counts alike, whatever uid a pod's root
// process takes.
TEST(RuntimeAcceptorTest, CountsASubordinateUidAsItsOwnerAndAGroupsSocketAsOne) {
  if (geteuid() != 0) GTEST_SKIP() << "connects as other uids";
  ASSERT_EQ(chmod(TempDir().c_str(), 0711), 0);
  const ScopedHostUidOwners owners(UidOwners::Parse(
      absl::StrCat(getuid(), ":65530:8\n"), [](const std::string&) { return std::nullopt; },
      /*first_user_uid=*/0));  // root stands for a user here
  for (const auto counting :
       {RuntimeAcceptor::Counting::kPerUid, RuntimeAcceptor::Counting::kAsOneTenant}) {
    const std::string path = TempDir() + "/counted.sock";
    Accepted accepted;
    auto acceptor = RuntimeAcceptor::Start(
        Listen(path), "test socket", [&](int fd) { accepted.Keep(fd); }, absl::Milliseconds(100),
        /*max_per_uid=*/2, /*gate=*/nullptr, counting);
    ASSERT_TRUE(acceptor.ok());
    ASSERT_EQ(chmod(path.c_str(), 0777), 0);
    std::vector<int> clients;
    for (int i = 0; i < 2; ++i) {
      clients.push_back(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
      ASSERT_TRUE(Connect(clients.back(), path));
    }
    ASSERT_TRUE(Eventually([&] { return accepted.count() == 2; }));
    // 65534 is in this uid's range: its connection finds no room.
    ASSERT_TRUE(ConnectAsUid(65534, path));
    EXPECT_TRUE(Eventually([&] { return (*acceptor)->refused() == 1; }));
    // 65520 is in no range: a tenant of its own, unless the socket is a group's.
    ASSERT_TRUE(ConnectAsUid(65520, path));
    if (counting == RuntimeAcceptor::Counting::kPerUid) {
      EXPECT_TRUE(Eventually([&] { return accepted.count() == 3; }));
      EXPECT_EQ((*acceptor)->refused(), 1u);
    } else {
      EXPECT_TRUE(Eventually([&] { return (*acceptor)->refused() == 2; }));
      EXPECT_EQ(accepted.count(), 2u);
    }
    (*acceptor)->Stop();
    for (int fd : clients) close(fd);
  }
}

TEST(RuntimeAcceptorTest, OutOfDescriptorsPausesWithoutSpinningAndRecovers) {
  const std::string path = TempDir() + "/emfile.sock";
  Accepted accepted;
  auto acceptor = RuntimeAcceptor::Start(
      Listen(path), "test socket",
      [&](int fd) { accepted.Keep(fd); },
      absl::Milliseconds(100));
  ASSERT_TRUE(acceptor.ok());
  // Client sockets first: after the limit drops, only the acceptor needs new ones.
  constexpr int kClients = 40;
  std::vector<int> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(socket(AF_UNIX, SOCK_STREAM, 0));
  int highest = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::stoi(entry.path().filename().string()));
  }
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(highest + 1 + 5);  // room for about 5 more
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd : clients) ASSERT_TRUE(Connect(fd, path));

  absl::SleepFor(absl::Seconds(1));
  const size_t during = accepted.count();
  const uint64_t pauses = (*acceptor)->pauses();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_LT(during, static_cast<size_t>(kClients));
  // About one attempt per 100 ms pause: no spinning.
  EXPECT_GE(pauses, 3u);
  EXPECT_LE(pauses, 15u);
  // Descriptors are back: everything queued is accepted.
  EXPECT_TRUE(Eventually([&] { return accepted.count() == kClients; }));
  for (int fd : clients) close(fd);
}

}  // namespace
}  // namespace acld::server
