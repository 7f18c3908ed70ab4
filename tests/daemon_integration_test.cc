// acld as a process: sockets, refusal to run twice, stale sockets, signals.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/server/socket_path.h"
#include "gtest/gtest.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
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
  EXPECT_NE(status.sessions(0).command().find("scenario_client hold 2"), std::string::npos);

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
