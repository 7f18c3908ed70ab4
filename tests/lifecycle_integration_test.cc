// Init/finalize arbitrated across real client processes by a real acld.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "proto/acl/peer_socket.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

const acl::v1::SessionInfo* FindSession(const acl::v1::StatusReply& status, int pid) {
  for (const auto& session : status.sessions()) {
    if (session.pid() == pid) return &session;
  }
  return nullptr;
}

TEST(LifecycleIntegrationTest, SeedPluginLifecycle) {
  AcldDaemon daemon;
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "seed_lifecycle"}, daemon.client_env());
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("init_valid=1 init_cancelled=0 finalize_valid=1 finalize_cancelled=0 "
                        "ref_count=0"),
            std::string::npos)
      << output;
  ASSERT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
  EXPECT_EQ(daemon.Status().host_refcount(), 0u);
}

TEST(LifecycleIntegrationTest, SeedPluginLifecycleEmbedded) {
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "seed_lifecycle"}, EmbeddedEnv());
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("ref_count=0"), std::string::npos) << output;
}

TEST(LifecycleIntegrationTest, HostRefcountIsTheSumAndKilledProcessesLoseTheirShare) {
  AcldDaemon daemon;
  std::vector<std::unique_ptr<Process>> clients;
  std::map<int, int> references_by_pid;
  int total = 0;
  for (int references = 1; references <= 8; ++references) {
    clients.push_back(std::make_unique<Process>(
        std::vector<std::string>{kScenarioClient, "hold", std::to_string(references)},
        daemon.client_env()));
    references_by_pid[clients.back()->pid()] = references;
    total += references;
  }
  for (auto& client : clients) ASSERT_TRUE(client->WaitForLine("ready", absl::Seconds(20)));

  acl::v1::StatusReply status = daemon.Status();
  EXPECT_EQ(status.host_refcount(), static_cast<uint32_t>(total));
  ASSERT_EQ(status.session_count(), 8u);
  for (const auto& [pid, references] : references_by_pid) {
    const acl::v1::SessionInfo* session = FindSession(status, pid);
    ASSERT_NE(session, nullptr) << "pid " << pid;
    EXPECT_EQ(session->refcount(), static_cast<uint32_t>(references));
    EXPECT_EQ(session->device_refs().at(0), 1u);
  }

  // kill -9 the holders of 3 and 5 references.
  clients[2]->Signal(SIGKILL);
  clients[4]->Signal(SIGKILL);
  const int expected = total - 3 - 5;
  const auto reaped = WaitUntil(
      [&] {
        acl::v1::StatusReply now = daemon.Status();
        return now.host_refcount() == static_cast<uint32_t>(expected) && now.session_count() == 6;
      },
      absl::Seconds(1));
  ASSERT_TRUE(reaped.has_value()) << "the killed sessions were not reaped within one second";
  std::printf("reaped two killed sessions in %s\n", absl::FormatDuration(*reaped).c_str());

  status = daemon.Status();
  for (size_t i = 0; i < clients.size(); ++i) {
    const acl::v1::SessionInfo* session = FindSession(status, clients[i]->pid());
    if (i == 2 || i == 4) {
      EXPECT_EQ(session, nullptr);
      continue;
    }
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->refcount(), static_cast<uint32_t>(i + 1));
  }

  // The survivors finalize normally.
  for (size_t i = 0; i < clients.size(); ++i) {
    if (i == 2 || i == 4) continue;
    clients[i]->WriteLine("release");
    EXPECT_EQ(clients[i]->Wait(absl::Seconds(20)), 0) << clients[i]->output();
    const std::string zeros(2 * (i + 1) - 1, '0');
    EXPECT_NE(clients[i]->output().find("ref_count=0"), std::string::npos) << clients[i]->output();
  }
  ASSERT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
  status = daemon.Status();
  EXPECT_EQ(status.host_refcount(), 0u);
  for (const auto& device : status.devices()) EXPECT_FALSE(device.up()) << device.id();
}

// A process's first aclInit writes its Initialize into the session channel
// before acld has it, when it fits (SessionChannel::kMaxOpeningCallBytes);
// a larger one goes as a call once the session is open. Either way acld
// applies the config the process read.
TEST(LifecycleIntegrationTest, AConfigReachesAcldWhetherItFitsTheSessionsOpeningOrNot) {
  AcldDaemon daemon;
  TempDir dir;
  // The largest config a process may have (10 MiB), mostly one setting:
  // the setting goes cut, the config whole, under acld's 16 MiB a request.
  for (const size_t padding : {size_t{16}, size_t{100} << 10, (size_t{10} << 20) - 100}) {
    SCOPED_TRACE(padding);
    const std::string value(padding, 'x');
    const std::string path = dir.path() + "/config-" + std::to_string(padding) + ".json";
    FILE* file = std::fopen(path.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fprintf(file, "{\"acldTestPadding\": \"%s\", \"acldTestText\": \"\u00e9\"}",
                 value.c_str());
    std::fclose(file);
    Process client({kScenarioClient, "hold", "1", path}, daemon.client_env());
    ASSERT_TRUE(client.WaitForLine("ready", absl::Seconds(20))) << client.output();
    const acl::v1::StatusReply status = daemon.Status();
    const acl::v1::SessionInfo* session = FindSession(status, client.pid());
    ASSERT_NE(session, nullptr);
    EXPECT_EQ(session->refcount(), 1u);
    ASSERT_EQ(session->config().count("acldTestPadding"), 1u);
    // Operators see at most 256 bytes of a setting.
    const std::string shown = "\"" + value + "\"";
    EXPECT_EQ(session->config().at("acldTestPadding"),
              shown.size() <= 256 ? shown : shown.substr(0, 253) + "...");
    // Every byte a client chose reaches operators as printable ASCII.
    EXPECT_EQ(session->config().at("acldTestText"), "\"\\xc3\\xa9\"");
    client.WriteLine("release");
    EXPECT_EQ(client.Wait(absl::Seconds(20)), 0) << client.output();
  }
}

TEST(LifecycleIntegrationTest, ConcurrentInitAndFinalizeReferenceFrom16Threads) {
  AcldDaemon daemon;
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "concurrent", "16"}, daemon.client_env());
  EXPECT_EQ(code, 0) << output;
  EXPECT_EQ(daemon.Status().host_refcount(), 0u);
}

TEST(LifecycleIntegrationTest, ConcurrentInitAndFinalizeReferenceEmbedded) {
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "concurrent", "16"}, EmbeddedEnv());
  EXPECT_EQ(code, 0) << output;
}

TEST(LifecycleIntegrationTest, AForkedChildGetsAClearErrorAndItsParentKeepsItsSession) {
  AcldDaemon daemon;
  const auto [code, output] = RunToCompletion({kScenarioClient, "fork"}, daemon.client_env());
  EXPECT_EQ(code, 0) << output;
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
  EXPECT_EQ(daemon.Status().host_refcount(), 0u);
}

TEST(LifecycleIntegrationTest, AProcessKilledWhileItsForkedChildLivesLosesItsSession) {
  AcldDaemon daemon;
  Process parent({kScenarioClient, "fork_and_stay"}, daemon.client_env());
  ASSERT_TRUE(parent.WaitForLine("child", absl::Seconds(20))) << parent.output();
  const size_t at = parent.output().find("child ");
  const pid_t child = std::atoi(parent.output().c_str() + at + 6);
  ASSERT_GT(child, 0);
  EXPECT_EQ(daemon.Status().session_count(), 1u);
  parent.Signal(SIGKILL);
  parent.Wait(absl::Seconds(20));
  // The child inherited the parent's descriptors, its session connection
  // among them; it let go of that one, so the parent's death ends the session.
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
  EXPECT_EQ(kill(child, 0), 0) << "the child still lives";
  kill(child, SIGKILL);
}

TEST(LifecycleIntegrationTest, AForkedChildGetsAClearErrorEmbedded) {
  const auto [code, output] = RunToCompletion({kScenarioClient, "fork"}, EmbeddedEnv());
  EXPECT_EQ(code, 0) << output;
}

TEST(LifecycleIntegrationTest, NoDaemonFailsFastWithSocketClose) {
  TempDir dir;
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "no_daemon"},
                      {{"ACLD_ADDRESS", "unix:" + dir.path() + "/absent.sock"}}, absl::Seconds(20));
  EXPECT_EQ(code, 0) << output;
}

TEST(LifecycleIntegrationTest, AStaleSocketFileFailsFastToo) {
  // What a killed acld leaves: the socket files (the runtime socket, and its
  // identity socket beside it), and nothing listening on them.
  TempDir dir;
  const std::string path = dir.path() + "/stale.sock";
  for (const bool with_identity_socket : {false, true}) {
    SCOPED_TRACE(with_identity_socket);
    for (const std::string& file :
         with_identity_socket ? std::vector<std::string>{acld::PeerSocketPath(path)}
                              : std::vector<std::string>{path}) {
      const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", file.c_str());
      ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
      close(fd);
    }
    const auto [code, output] = RunToCompletion(
        {kScenarioClient, "no_daemon"}, {{"ACLD_ADDRESS", "unix:" + path}}, absl::Seconds(20));
    EXPECT_EQ(code, 0) << output;
  }
}

TEST(LifecycleIntegrationTest, NoDaemonAtTheDefaultAddress) {
  // With ACLD_ADDRESS unset the client looks at /run/acld/acld.sock; the test
  // only runs where nothing serves there.
  if (access("/run/acld/acld.sock", F_OK) == 0) GTEST_SKIP() << "a daemon may be running";
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "no_daemon"}, {{"ACLD_ADDRESS", ""}}, absl::Seconds(20));
  EXPECT_EQ(code, 0) << output;
}

TEST(LifecycleIntegrationTest, DaemonStoppingMidSessionFailsLaterCalls) {
  auto daemon = std::make_unique<AcldDaemon>();
  Process client({kScenarioClient, "hold", "2"}, daemon->client_env());
  ASSERT_TRUE(client.WaitForLine("ready", absl::Seconds(20)));
  EXPECT_EQ(daemon->Stop(), 0);
  client.WriteLine("release");
  EXPECT_EQ(client.Wait(absl::Seconds(20)), 0) << client.output();
  EXPECT_NE(client.output().find("released codes=507901,507901"), std::string::npos)
      << client.output();
}

TEST(LifecycleIntegrationTest, AKilledDaemonFailsTheNextCallsAtOnce) {
  AcldDaemon daemon;
  Process client({kScenarioClient, "hold", "2"}, daemon.client_env());
  ASSERT_TRUE(client.WaitForLine("ready", absl::Seconds(20)));
  daemon.process().Signal(SIGKILL);
  daemon.process().Wait(absl::Seconds(20));
  // Nobody says the session ended: the client learns it from its connection.
  client.WriteLine("release");
  EXPECT_EQ(client.Wait(absl::Seconds(20)), 0) << client.output();
  EXPECT_NE(client.output().find("released codes=507901,507901"), std::string::npos)
      << client.output();
}

}  // namespace
}  // namespace acld_test
