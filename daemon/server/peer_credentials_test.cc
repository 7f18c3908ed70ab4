#include "daemon/server/peer_credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "daemon/server/server_test_support.h"
#include "daemon/server/uid_owners.h"
#include "daemon/server/socket_path.h"
#include "gtest/gtest.h"

namespace acld::server {
namespace {

// As libascendcl seals its memory (client/sealed_memfd.h); it also allocates it.
constexpr int kSealed = F_SEAL_SHRINK | F_SEAL_GROW;

int Connect(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = UnixSocketAddress(path);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
      << std::strerror(errno);
  return fd;
}

// Sends `request` with `fds` attached.
void Send(int socket_fd, const std::string& request, const std::vector<int>& fds = {}) {
  iovec part{const_cast<char*>(request.data()), request.size()};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<size_t>(fds.size(), 1)));
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  EXPECT_EQ(sendmsg(socket_fd, &message, MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
}

// Everything the desk sends until it closes (at most `timeout`).
std::string ReadAll(int socket_fd, absl::Duration timeout = absl::Seconds(10)) {
  std::string answer;
  const absl::Time deadline = absl::Now() + timeout;
  char buffer[256];
  while (true) {
    pollfd readable{socket_fd, POLLIN, 0};
    const int64_t wait = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (wait <= 0 || poll(&readable, 1, static_cast<int>(wait)) <= 0) {
      ADD_FAILURE() << "the desk did not close the connection in time";
      break;
    }
    const ssize_t n = read(socket_fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  return answer;
}

// One exchange: the answer line without its newline.
std::string Ask(const std::string& path, const std::string& request,
                const std::vector<int>& fds = {}) {
  const int fd = Connect(path);
  Send(fd, request, fds);
  std::string answer = ReadAll(fd);
  close(fd);
  EXPECT_TRUE(absl::EndsWith(answer, "\n")) << answer;
  return answer.substr(0, answer.find('\n'));
}

int Memfd(uint64_t bytes, int seals) {
  const int fd = memfd_create("desk-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (seals != 0) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, seals), 0);
  }
  return fd;
}

// Descriptors of this process that refer to the test's memfds.
int OpenMemfds() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (absl::StartsWith(target, "/memfd:desk-test")) ++count;
  }
  return count;
}

bool IsId(const std::string& answer) {
  return answer.size() == 32 && answer.find_first_not_of("0123456789abcdef") == std::string::npos;
}

absl::Duration CpuTime() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return absl::DurationFromTimeval(usage.ru_utime) + absl::DurationFromTimeval(usage.ru_stime);
}

class PeerDeskTest : public ::testing::Test {
 protected:
  PeerDeskTest() {
    char pattern[] = "/tmp/acld-peer-test-XXXXXX";
    dir_ = mkdtemp(pattern);
    path_ = PeerSocketPath(dir_ + "/acld.sock");
  }
  ~PeerDeskTest() override {
    desk_.reset();
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  PeerCredentialDesk& Start(const PeerDeskOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> desk =
        PeerCredentialDesk::Start(path_, options);
    EXPECT_TRUE(desk.ok()) << desk.status();
    desk_ = *std::move(desk);
    return *desk_;
  }
  // A token the desk gives a child dropped to `uid` (empty if it got none).
  std::string TokenOfUid(uid_t uid) {
    if (chmod(dir_.c_str(), 0711) != 0 || chmod(path_.c_str(), 0777) != 0) return "";
    int answer[2];
    if (pipe(answer) != 0) return "";
    const pid_t child = fork();
    if (child == 0) {
      close(answer[0]);
      if (setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0) _exit(1);
      const std::string token = Ask(path_, "T\n");
      _exit(write(answer[1], token.data(), token.size()) == static_cast<ssize_t>(token.size())
                ? 0
                : 1);
    }
    close(answer[1]);
    const std::string token = ReadAll(answer[0]);
    close(answer[0]);
    int status = 0;
    const bool exited = waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                        WEXITSTATUS(status) == 0;
    return exited ? token : "";
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<PeerCredentialDesk> desk_;
};

TEST_F(PeerDeskTest, TokensCarryTheKernelsIdentityOnce) {
  EXPECT_EQ(path_, dir_ + "/acld.sock.peer");
  absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> started = PeerCredentialDesk::Start(path_);
  ASSERT_TRUE(started.ok()) << started.status();
  desk_ = *std::move(started);

  const std::string token = Ask(path_, "T\n");
  EXPECT_TRUE(IsId(token)) << token;
  EXPECT_NE(Ask(path_, "T\n"), token);  // a new one each time
  std::optional<PeerCredentials> credentials = desk_->Redeem(token);
  ASSERT_TRUE(credentials.has_value());
  EXPECT_EQ(credentials->pid, getpid());
  EXPECT_EQ(credentials->uid, getuid());
  EXPECT_EQ(credentials->gid, getgid());
  EXPECT_FALSE(desk_->Redeem(token).has_value());  // once only
  EXPECT_FALSE(desk_->Redeem("forged").has_value());
  EXPECT_FALSE(desk_->Redeem("").has_value());
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "X\n"), "E "));
  EXPECT_TRUE(absl::StartsWith(Ask(path_, std::string(100, 'T')), "E "));
}

TEST_F(PeerDeskTest, TokensExpire) {
  PeerDeskOptions options;
  options.lifetime = absl::Milliseconds(200);
  PeerCredentialDesk& desk = Start(options);
  const std::string token = Ask(path_, "T\n");
  ASSERT_TRUE(IsId(token));
  EXPECT_TRUE(Eventually([&] { return desk.outstanding_tokens() == 0; }));
  EXPECT_FALSE(desk.Redeem(token).has_value());
}

TEST_F(PeerDeskTest, AFloodOfConnectionsKeepsTheTablesBounded) {
  PeerDeskOptions options;
  options.max_tokens = 1000;
  PeerCredentialDesk& desk = Start(options);
  const std::string first = Ask(path_, "T\n");
  std::string last;
  for (int i = 0; i < 10000; ++i) {
    last = Ask(path_, "T\n");
    ASSERT_TRUE(IsId(last)) << "connection " << i << ": " << last;
  }
  // The oldest went; what a lookup searches never grew past the bound.
  EXPECT_EQ(desk.outstanding_tokens(), 1000u);
  EXPECT_FALSE(desk.Redeem(first).has_value());
  EXPECT_TRUE(desk.Redeem(last).has_value());
  EXPECT_TRUE(Eventually([&] { return desk.pending_connections() == 0; }));
}

// One uid's flood of token requests pushes out only its own tokens: another
// user's token, fetched before the flood, is still redeemable after it.
TEST_F(PeerDeskTest, AUidsFloodOfTokensPushesOutOnlyItsOwn) {
  PeerDeskOptions options;
  options.max_tokens = 1000;
  options.max_tokens_per_uid = 100;
  PeerCredentialDesk& desk = Start(options);
  const std::string others = TokenOfUid(65534);  // another user's
  ASSERT_TRUE(IsId(others)) << others;
  const std::string first = Ask(path_, "T\n");
  std::string last;
  for (int i = 0; i < 2000; ++i) {
    last = Ask(path_, "T\n");
    ASSERT_TRUE(IsId(last)) << "connection " << i << ": " << last;
  }
  EXPECT_EQ(desk.outstanding_tokens(), 101u) << "this uid's 100 and the other's";
  EXPECT_FALSE(desk.Redeem(first).has_value());
  EXPECT_TRUE(desk.Redeem(last).has_value());
  const std::optional<PeerCredentials> redeemed = desk.Redeem(others);
  ASSERT_TRUE(redeemed.has_value());
  EXPECT_EQ(redeemed->uid, 65534u);
}

// As AUidsFloodOfTokensPushesOutOnlyItsOwn, with the other uid inside this
// uid's subordinate range: its token is this user's, and goes with the flood.
TEST_F(PeerDeskTest, ASubordinateUidsTokensCountAsItsOwners) {
  const ScopedHostUidOwners owners(UidOwners::Parse(
      absl::StrCat(getuid(), ":65530:8\n"), [](const std::string&) { return std::nullopt; },
      /*first_user_uid=*/0));  // root stands for a user here
  PeerDeskOptions options;
  options.max_tokens = 1000;
  options.max_tokens_per_uid = 100;
  PeerCredentialDesk& desk = Start(options);
  const std::string subordinate = TokenOfUid(65534);
  ASSERT_TRUE(IsId(subordinate)) << subordinate;
  std::optional<PeerCredentials> early = desk.Redeem(Ask(path_, "T\n"));
  ASSERT_TRUE(early.has_value());
  EXPECT_FALSE(early->range_owner.has_value()) << "this uid is in no range";
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(IsId(Ask(path_, "T\n")));
  EXPECT_EQ(desk.outstanding_tokens(), 100u) << "one user's 100, its subordinate's among them";
  EXPECT_FALSE(desk.Redeem(subordinate).has_value());
}

// A quota group's desk counts its processes as one tenant whatever their
// uids (a pod's root can take any): another uid's token goes with the flood,
// and another uid's connection finds the tenant's pending places taken.
TEST_F(PeerDeskTest, ADeskOfOneTenantCountsEveryUidTogether) {
  PeerDeskOptions options;
  options.max_tokens = 1000;
  options.max_tokens_per_uid = 100;
  options.max_pending_connections_per_uid = 2;
  options.as_one_tenant = true;
  PeerCredentialDesk& desk = Start(options);
  const std::string others = TokenOfUid(65534);
  ASSERT_TRUE(IsId(others)) << others;
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(IsId(Ask(path_, "T\n")));
  EXPECT_EQ(desk.outstanding_tokens(), 100u) << "one tenant's 100, the other uid's among them";
  EXPECT_FALSE(desk.Redeem(others).has_value());

  const int first = Connect(path_), second = Connect(path_);
  ASSERT_TRUE(Eventually([&] { return desk.pending_connections() == 2; }));
  const std::string refused = TokenOfUid(65534);
  EXPECT_TRUE(absl::StartsWith(refused, std::string(kPeerBusy) + "acld is serving 2 identity "
                                                                 "requests of this socket's"))
      << refused;
  close(first);
  close(second);
}

TEST_F(PeerDeskTest, ASilentPeerIsDroppedAtItsDeadline) {
  PeerDeskOptions options;
  options.request_timeout = absl::Milliseconds(200);
  PeerCredentialDesk& desk = Start(options);
  const int silent = Connect(path_);
  EXPECT_TRUE(Eventually([&] { return desk.pending_connections() == 1; }));
  // Meanwhile others are served.
  EXPECT_TRUE(IsId(Ask(path_, "T\n")));
  // Nothing given; told to come back (a client sends at once: one that did
  // not is asked to, and holds no place meanwhile).
  EXPECT_EQ(ReadAll(silent), std::string(kPeerBusy) + "it sent nothing\n");
  close(silent);
  EXPECT_TRUE(Eventually([&] { return desk.pending_connections() == 0; }));
  EXPECT_EQ(desk.outstanding_tokens(), 1u);
}

// A byte does not buy a connection the whole deadline: a request that has not
// come whole in its first moment is told to come back, like a silent one.
TEST_F(PeerDeskTest, ARequestThatDoesNotComeWholeAtOnceIsToldToComeBack) {
  PeerDeskOptions options;
  options.request_timeout = absl::Seconds(30);
  PeerCredentialDesk& desk = Start(options);
  const int partial = Connect(path_);
  ASSERT_EQ(write(partial, "T", 1), 1);
  const absl::Time start = absl::Now();
  EXPECT_EQ(ReadAll(partial),
            std::string(kPeerBusy) + "its request did not come whole in time\n");
  EXPECT_LT(absl::Now() - start, absl::Seconds(15)) << "it kept its place for the deadline";
  close(partial);
  EXPECT_TRUE(Eventually([&] { return desk.pending_connections() == 0; }));
}

TEST_F(PeerDeskTest, PendingConnectionsAreBoundedWithoutSpinning) {
  PeerDeskOptions options;
  options.request_timeout = absl::Milliseconds(600);
  options.max_pending_connections = 4;
  PeerCredentialDesk& desk = Start(options);
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(Connect(path_));
  ASSERT_TRUE(Eventually([&] { return desk.pending_connections() == 4; }));
  // Full: the listener is not polled, so waiting costs no CPU.
  const absl::Duration cpu_before = CpuTime();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_LE(desk.pending_connections(), 4u);
  EXPECT_LT(CpuTime() - cpu_before, absl::Milliseconds(100));
  // The silent ones are told to come back in turn; then a client is served.
  EXPECT_TRUE(IsId(Ask(path_, "T\n")));
  for (int fd : silent) {
    EXPECT_TRUE(absl::StartsWith(ReadAll(fd), kPeerBusy));
    close(fd);
  }
}

// One user's connections beyond its share are told to come back at once: its
// silent ones cannot fill the desk for everyone.
TEST_F(PeerDeskTest, AUidsConnectionsBeyondItsShareAreToldToComeBack) {
  PeerDeskOptions options;
  options.max_pending_connections_per_uid = 2;
  PeerCredentialDesk& desk = Start(options);
  const int first = Connect(path_), second = Connect(path_);
  ASSERT_TRUE(Eventually([&] { return desk.pending_connections() == 2; }));
  const absl::Time start = absl::Now();
  // Answered before it says anything (a send after the answer would find the
  // connection closed: libascendcl reads the answer then too).
  const int third_fd = Connect(path_);
  const std::string third = ReadAll(third_fd);
  close(third_fd);
  EXPECT_TRUE(absl::StartsWith(third, std::string(kPeerBusy) + "acld is serving 2 identity "
                                                               "requests of uid"))
      << third;
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(200)) << "not at once";
  EXPECT_GE(desk.busy_refusals(), 1u);
  close(first);
  close(second);
}

TEST_F(PeerDeskTest, OnlySealedMemfdsOfTheAnnouncedSizeGetATicket) {
  PeerCredentialDesk& desk = Start();
  const int unsealed = Memfd(8192, 0);
  const int shrinkable = Memfd(8192, F_SEAL_GROW | F_SEAL_SEAL);
  const int sealed = Memfd(8192, kSealed);
  const int write_sealed = Memfd(8192, F_SEAL_SHRINK | F_SEAL_WRITE | F_SEAL_SEAL);

  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 8192\n", {unsealed}), "E ")) << "unsealed";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 8192\n", {shrinkable}), "E ")) << "shrinkable";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 8192\n", {write_sealed}), "E ")) << "write-sealed";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 8193\n", {sealed}), "E ")) << "too small";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 0\n", {sealed}), "E ")) << "empty";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 8192\n"), "E ")) << "no descriptor";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 8192\n", {sealed, sealed}), "E ")) << "two";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M -1\n", {sealed}), "E ")) << "negative";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "T\n", {sealed}), "E ")) << "token with fd";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 1\n", {pipe_fds[0]}), "E ")) << "a pipe";
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  EXPECT_EQ(desk.outstanding_memory_tickets(), 0u);
  // Refused descriptors are not kept.
  EXPECT_TRUE(Eventually([] { return OpenMemfds() == 4; }));

  const std::string ticket = Ask(path_, "M 4096\n", {sealed});
  ASSERT_TRUE(IsId(ticket)) << ticket;
  EXPECT_EQ(desk.outstanding_memory_tickets(), 1u);
  EXPECT_FALSE(desk.Redeem(ticket).has_value());  // a ticket is not a token

  // Useless to another process or user, and leaves the ticket to its owner.
  EXPECT_EQ(AclCodeOf(desk.RedeemMemory(ticket, getpid() + 1, getuid()).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  EXPECT_EQ(AclCodeOf(desk.RedeemMemory(ticket, getpid(), getuid() + 1).status()),
            ACL_ERROR_RT_NO_PERMISSION);
  absl::StatusOr<ReceivedMemory> memory = desk.RedeemMemory(ticket, getpid(), getuid());
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->size, 4096u);
  EXPECT_TRUE(CheckSealedMemory(memory->fd.get(), 4096).ok());
  EXPECT_FALSE(desk.RedeemMemory(ticket, getpid(), getuid()).ok());  // once
  EXPECT_EQ(desk.outstanding_memory_tickets(), 0u);

  for (int fd : {unsealed, shrinkable, sealed, write_sealed}) close(fd);
}

TEST_F(PeerDeskTest, ASessionRequestGoesToTheOpenerWhichKeepsTheConnection) {
  Start();
  const int sealed = Memfd(8192, kSealed);
  const int doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(doorbell, 0);
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "S 8192 4\n", {sealed, doorbell}), "E "))
      << "no opener: sessions open on gRPC";

  desk_.reset();
  unlink(path_.c_str());

  std::atomic<int> kept{-1};
  PeerCredentials seen;
  uint32_t seen_version = 0;
  absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> listening = PeerCredentialDesk::Listen(path_);
  ASSERT_TRUE(listening.ok()) << listening.status();
  desk_ = *std::move(listening);
  // A client that comes while acld is still starting waits for the opener.
  const int early = Connect(path_);
  Send(early, "S 8192 9\n", {sealed, doorbell});
  desk_->Serve([&](const PeerCredentials& peer, uint32_t version,
                   ReceivedMemory channel) -> absl::StatusOr<std::function<void(UniqueFd)>> {
    seen = peer;
    seen_version = version;
    EXPECT_EQ(channel.size, 8192u);
    EXPECT_TRUE(channel.doorbell.valid());
    if (version != 4) return AclStatus(ACL_ERROR_RT_OVER_LIMIT, "refused for the test");
    return [&](UniqueFd connection) { kept = connection.release(); };
  });
  EXPECT_EQ(ReadAll(early), absl::StrCat("E ", ACL_ERROR_RT_OVER_LIMIT, " refused for the test\n"))
      << "answered by the opener, not refused for want of one";
  close(early);
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "S 8192\n", {sealed, doorbell}), "E ")) << "no version";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "S 8192 4\n", {sealed}), "E ")) << "no doorbell";
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "S 8193 4\n", {sealed, doorbell}), "E "))
      << "too small";
  EXPECT_EQ(Ask(path_, "S 8192 9\n", {sealed, doorbell}),
            absl::StrCat("E ", ACL_ERROR_RT_OVER_LIMIT, " refused for the test"))
      << "a refusal names the opener's code";
  EXPECT_EQ(seen_version, 9u);
  EXPECT_EQ(kept.load(), -1);

  const int client = Connect(path_);
  Send(client, "S 8192 4\n", {sealed, doorbell});
  char answer[3] = {};
  ASSERT_EQ(read(client, answer, 2), 2);
  EXPECT_EQ(std::string(answer, 2), "O\n");
  ASSERT_TRUE(Eventually([&] { return kept.load() >= 0; }));
  EXPECT_EQ(seen.pid, getpid());
  EXPECT_EQ(seen.uid, getuid());
  // The connection is the session's now: the desk left it open, and its
  // end is seen at the other side.
  close(client);
  char byte;
  EXPECT_EQ(recv(kept.load(), &byte, 1, 0), 0);
  close(kept.load());
  for (int fd : {sealed, doorbell}) close(fd);
}

TEST_F(PeerDeskTest, ExpiredTicketsCloseTheirDescriptors) {
  PeerDeskOptions options;
  options.lifetime = absl::Milliseconds(200);
  PeerCredentialDesk& desk = Start(options);
  const int fd = Memfd(4096, kSealed);
  const std::string ticket = Ask(path_, "M 4096\n", {fd});
  ASSERT_TRUE(IsId(ticket)) << ticket;
  close(fd);
  EXPECT_EQ(OpenMemfds(), 1);  // the desk's
  // Without any further request: the desk's own timer drops it.
  EXPECT_TRUE(Eventually([] { return OpenMemfds() == 0; }));
  EXPECT_EQ(desk.outstanding_memory_tickets(), 0u);
  EXPECT_FALSE(desk.RedeemMemory(ticket, getpid(), getuid()).ok());
}

TEST_F(PeerDeskTest, TicketsOfAProcessThatDiedAreDroppedBeforeTheyExpire) {
  PeerCredentialDesk& desk = Start();  // tickets live 30 s
  const int fd = Memfd(4096, kSealed);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(IsId(Ask(path_, "M 4096\n", {fd})) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(fd);
  // The child never redeemed it and is gone: nobody can.
  EXPECT_TRUE(Eventually([&] { return desk.outstanding_memory_tickets() == 0; }));
  EXPECT_TRUE(Eventually([] { return OpenMemfds() == 0; }));
}

TEST_F(PeerDeskTest, OutstandingTicketsAreBoundedPerUser) {
  PeerDeskOptions options;
  options.max_memory_tickets_per_uid = 3;
  PeerCredentialDesk& desk = Start(options);
  const int fd = Memfd(4096, kSealed);
  std::vector<std::string> tickets;
  for (int i = 0; i < 3; ++i) {
    tickets.push_back(Ask(path_, "M 4096\n", {fd}));
    ASSERT_TRUE(IsId(tickets.back())) << tickets.back();
  }
  EXPECT_TRUE(absl::StartsWith(Ask(path_, "M 4096\n", {fd}), "E too many"));
  EXPECT_TRUE(Eventually([] { return OpenMemfds() == 4; }));  // ours and the three tickets'
  ASSERT_TRUE(desk.RedeemMemory(tickets[0], getpid(), getuid()).ok());
  EXPECT_TRUE(IsId(Ask(path_, "M 4096\n", {fd})));
  close(fd);
}

TEST_F(PeerDeskTest, RecoversFromRunningOutOfDescriptors) {
  PeerCredentialDesk& desk = Start();
  // Clients' sockets exist before the process runs out.
  std::vector<int> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));

  rlimit original{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &original), 0);
  rlimit lowered = original;
  lowered.rlim_cur = std::min<rlim_t>(original.rlim_cur, 256);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  std::vector<int> hogs;
  while (true) {
    const int fd = dup(null_fd);
    if (fd < 0) break;
    hogs.push_back(fd);
  }
  ASSERT_EQ(errno, EMFILE);
  sockaddr_un address = UnixSocketAddress(path_);
  for (int fd : clients) {
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    Send(fd, "T\n");
  }
  // accept4 fails with EMFILE: the desk pauses instead of spinning.
  const absl::Duration cpu_before = CpuTime();
  absl::SleepFor(absl::Milliseconds(500));
  const absl::Duration cpu = CpuTime() - cpu_before;
  EXPECT_EQ(desk.pending_connections(), 0u);

  for (int fd : hogs) close(fd);
  close(null_fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &original), 0);
  EXPECT_LT(cpu, absl::Milliseconds(150));
  for (int fd : clients) {
    std::string token = ReadAll(fd);
    close(fd);
    ASSERT_TRUE(absl::EndsWith(token, "\n")) << token;
    token.pop_back();
    EXPECT_TRUE(desk.Redeem(token).has_value());
  }
  EXPECT_TRUE(IsId(Ask(path_, "T\n")));
}

}  // namespace
}  // namespace acld::server
