// acld as a process: sockets, refusal to run twice, stale sockets, signals.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <poll.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "daemon/server/socket_path.h"
#include "gtest/gtest.h"
#include "proto/acl/peer_socket.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

// A datagram socket standing in for systemd's NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  }
  ~NotifySocket() {
    close(fd_);
    unlink(path_.c_str());
  }
  // The next notification, or "" after `timeout`.
  std::string Next(absl::Duration timeout) {
    pollfd readable{fd_, POLLIN, 0};
    if (poll(&readable, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) <= 0) return "";
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
  }
  // Waits (at most `timeout`) for a notification containing `what`.
  bool WaitFor(const std::string& what, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (Next(deadline - absl::Now()).find(what) != std::string::npos) return true;
    }
    return false;
  }

 private:
  const std::string path_;
  int fd_ = -1;
};

TEST(DaemonIntegrationTest, TellsSystemdReadyPingsWhileHealthyAndSaysStopping) {
  TempDir dir;
  NotifySocket systemd(dir.path() + "/notify");
  setenv("NOTIFY_SOCKET", (dir.path() + "/notify").c_str(), 1);
  setenv("WATCHDOG_USEC", "200000", 1);  // pings every 100 ms
  auto daemon = std::make_unique<AcldDaemon>();
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");

  const std::string first = systemd.Next(absl::Seconds(20));
  EXPECT_NE(first.find("READY=1"), std::string::npos) << first;
  // Ready means serving: every socket accepts by then.
  EXPECT_TRUE(acld::server::SocketIsLive(daemon->socket()));
  EXPECT_TRUE(acld::server::SocketIsLive(acld::PeerSocketPath(daemon->socket())));
  EXPECT_TRUE(acld::server::SocketIsLive(daemon->admin_socket()));
  int pings = 0;
  for (int i = 0; i < 30 && pings < 3; ++i) {
    if (systemd.Next(absl::Seconds(1)).find("WATCHDOG=1") != std::string::npos) ++pings;
  }
  EXPECT_GE(pings, 3);

  // The admin socket goes away: acld is unhealthy, says so, and stops the pings.
  ASSERT_EQ(unlink(daemon->admin_socket().c_str()), 0);
  EXPECT_TRUE(systemd.WaitFor("STATUS=unhealthy", absl::Seconds(5)));
  EXPECT_FALSE(systemd.WaitFor("WATCHDOG=1", absl::Milliseconds(500))) << "no ping while unhealthy";

  EXPECT_EQ(daemon->Stop(), 0);
  EXPECT_TRUE(systemd.WaitFor("STOPPING=1", absl::Seconds(5)));
}

TEST(DaemonIntegrationTest, AdminSocketIsPrivate) {
  AcldDaemon daemon;
  struct stat info {};
  ASSERT_EQ(stat(daemon.admin_socket().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

TEST(DaemonIntegrationTest, SigtermRemovesSocketsAndExitsZero) {
  AcldDaemon daemon;
  EXPECT_EQ(daemon.Stop(), 0);
  EXPECT_NE(access(daemon.socket().c_str(), F_OK), 0);
  EXPECT_NE(access(daemon.admin_socket().c_str(), F_OK), 0);
  const std::string log = ReadFile(daemon.dir() + "/acld.log");
  EXPECT_NE(log.find("acld stopped"), std::string::npos) << log;
}

TEST(DaemonIntegrationTest, SigtermEndsConnectedSessions) {
  AcldDaemon daemon;
  Process client({kScenarioClient, "hold", "1"}, daemon.client_env());
  ASSERT_TRUE(client.WaitForLine("ready", absl::Seconds(20)));
  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(absl::Seconds(10)), 0);
  const std::string log = ReadFile(daemon.dir() + "/acld.log");
  EXPECT_NE(log.find("ended by acld: acld is shutting down"), std::string::npos) << log;
  // The client's next calls fail at once and say why.
  client.WriteLine("release");
  EXPECT_EQ(client.Wait(absl::Seconds(10)), 0) << client.output();
  EXPECT_NE(client.output().find("released codes=507901"), std::string::npos) << client.output();
  EXPECT_NE(client.output().find("acld is shutting down"), std::string::npos) << client.output();
}

TEST(DaemonIntegrationTest, RefusesToStartWhenAnotherDaemonServesTheSocket) {
  AcldDaemon first;
  const auto [code, output] = RunToCompletion(
      {kAcldBinary, "--socket=" + first.socket(), "--admin_socket=" + first.dir() + "/other.sock"},
      {}, absl::Seconds(20));
  EXPECT_EQ(code, 1);
  // The first daemon is unharmed.
  EXPECT_TRUE(acld::server::SocketIsLive(first.socket()));
  EXPECT_EQ(first.Status().devices_size(), 2);
}

TEST(DaemonIntegrationTest, ReplacesAStaleSocketFile) {
  TempDir dir;
  const std::string path = dir.path() + "/acld.sock";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);  // a dead daemon's leftover
  Process daemon({kAcldBinary, "--socket=" + path, "--admin_socket=" + dir.path() + "/admin.sock"});
  EXPECT_TRUE(WaitUntil([&] { return acld::server::SocketIsLive(path); }, absl::Seconds(20)));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(absl::Seconds(10)), 0);
}

TEST(DaemonIntegrationTest, CreatesTheSocketDirectory) {
  TempDir dir;
  const std::string path = dir.path() + "/run/acld/acld.sock";
  Process daemon(
      {kAcldBinary, "--socket=" + path, "--admin_socket=" + dir.path() + "/run/acld/admin.sock"});
  EXPECT_TRUE(WaitUntil([&] { return acld::server::SocketIsLive(path); }, absl::Seconds(20)));
  daemon.Signal(SIGTERM);
  EXPECT_EQ(daemon.Wait(absl::Seconds(10)), 0);
}

TEST(DaemonIntegrationTest, StatusShowsDevicesAndSessions) {
  AcldDaemon daemon({"--sim_devices=3", "--sim_device_memory=1048576"});
  acl::v1::StatusReply status = daemon.Status();
  // On the acl backend the vendor has its own devices (the stand-in: 2).
  const bool sim = AclBackendLibrary().empty();
  const int last = sim ? 2 : 1;
  EXPECT_EQ(status.backend(), sim ? "sim" : "acl");
  ASSERT_EQ(status.devices_size(), last + 1);
  if (sim) {
    EXPECT_EQ(status.devices(2).memory_bytes(), 1048576u);
  }
  EXPECT_FALSE(status.devices(0).up());
  Process client({kScenarioClient, "hold", "2"}, daemon.client_env());
  ASSERT_TRUE(client.WaitForLine("ready", absl::Seconds(20)));
  status = daemon.Status();
  EXPECT_EQ(status.host_refcount(), 2u);
  EXPECT_TRUE(status.devices(0).up());
  EXPECT_TRUE(status.devices(last).up());
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_EQ(status.sessions(0).pid(), client.pid());
  // The command line replaces the process's name once acld has read it.
  for (int i = 0; i < 3000 && status.sessions(0).command().find("scenario_client hold 2") ==
                                 std::string::npos; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    status = daemon.Status();
    ASSERT_EQ(status.sessions_size(), 1);
  }
  EXPECT_NE(status.sessions(0).command().find("scenario_client hold 2"), std::string::npos)
      << status.sessions(0).command();

  const auto [code, table] = daemon.Aclctl({"sessions"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(table.find("REF"), std::string::npos) << table;
  EXPECT_NE(table.find(std::to_string(client.pid())), std::string::npos) << table;
  const auto [status_code, status_table] = daemon.Aclctl({"status"});
  EXPECT_EQ(status_code, 0);
  EXPECT_NE(status_table.find("host refcount: 2"), std::string::npos) << status_table;
}

TEST(DaemonIntegrationTest, AclctlFailsClearlyWithoutADaemon) {
  TempDir dir;
  const auto [code, output] =
      RunToCompletion({kAclctlBinary, "--admin_socket=" + dir.path() + "/absent.sock", "status"});
  EXPECT_EQ(code, 1);
  const auto [usage_code, usage] = RunToCompletion({kAclctlBinary, "frobnicate"});
  EXPECT_EQ(usage_code, 2);
}

TEST(DaemonIntegrationTest, RejectsBadFlags) {
  EXPECT_EQ(RunToCompletion({kAcldBinary, "--sim_devices=0"}).first, 2);
  EXPECT_EQ(RunToCompletion({kAcldBinary, "--log_level=loud"}).first, 2);
}

}  // namespace
}  // namespace acld_test
