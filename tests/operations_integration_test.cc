// Operating a shared host: identity from the kernel, eviction, quotas, socket
// permissions, graceful shutdown and restart, and aclctl's commands.
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/server/socket_path.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/acl/v1/runtime.grpc.pb.h"
#include "tests/acld_fixture.h"

namespace acld_test {
namespace {

const acl::v1::SessionInfo* FindSession(const acl::v1::StatusReply& status, int pid) {
  for (const auto& session : status.sessions()) {
    if (session.pid() == pid) return &session;
  }
  return nullptr;
}

TEST(OperationsTest, IdentityComesFromTheKernel) {
  AcldDaemon daemon;
  Process client({kScenarioClient, "hold", "1"}, daemon.client_env());
  ASSERT_TRUE(client.WaitForLine("ready", absl::Seconds(20)));
  const acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* session = FindSession(status, client.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->uid(), getuid());
  EXPECT_EQ(session->gid(), getgid());

  // A Hello without the side socket's token is refused, whatever it claims.
  auto channel = grpc::CreateChannel("unix:" + daemon.socket(), grpc::InsecureChannelCredentials());
  auto stub = acl::v1::Runtime::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Session(&context);
  acl::v1::ClientMessage hello;
  hello.set_call_id(1);
  hello.mutable_hello()->set_protocol_version(1);
  hello.mutable_hello()->set_pid(1);
  hello.mutable_hello()->set_peer_token("forged");
  ASSERT_TRUE(stream->Write(hello));
  stream->WritesDone();
  acl::v1::ServerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(daemon.Status().session_count(), 1u);
}

TEST(OperationsTest, EvictReleasesASessionAndTellsTheClient) {
  AcldDaemon daemon;
  Process victim({kScenarioClient, "hold", "3"}, daemon.client_env());
  Process bystander({kScenarioClient, "hold", "1"}, daemon.client_env());
  ASSERT_TRUE(victim.WaitForLine("ready", absl::Seconds(20)));
  ASSERT_TRUE(bystander.WaitForLine("ready", absl::Seconds(20)));
  acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* session = FindSession(status, victim.pid());
  ASSERT_NE(session, nullptr);
  const auto [code, output] = daemon.Aclctl({"evict", absl::StrCat(session->id())});
  EXPECT_EQ(code, 0) << output;
  status = daemon.Status();
  EXPECT_EQ(status.host_refcount(), 1u);
  EXPECT_EQ(FindSession(status, victim.pid()), nullptr);
  victim.WriteLine("release");
  EXPECT_EQ(victim.Wait(absl::Seconds(20)), 0) << victim.output();
  EXPECT_NE(victim.output().find("released codes=507901,507901,507901"), std::string::npos)
      << victim.output();
  EXPECT_NE(victim.output().find("evicted by the operator"), std::string::npos) << victim.output();
  bystander.WriteLine("release");
  EXPECT_EQ(bystander.Wait(absl::Seconds(20)), 0) << bystander.output();
  EXPECT_NE(bystander.output().find("released codes=0"), std::string::npos);
  EXPECT_EQ(daemon.Aclctl({"evict", "999"}).first, 1);
}

TEST(OperationsTest, QuotasLimitMemoryAndStreams) {
  AcldDaemon daemon({"--max_streams_per_session=8"});
  EXPECT_EQ(daemon.Aclctl({"quota", "--default", "--memory=1048576"}).first, 0);
  const auto [code, output] =
      RunToCompletion({"tests/device_client", "quota_probe", "1048576", "8"}, daemon.client_env());
  EXPECT_EQ(code, 0) << output;

  // Changed at run time, for one live session.
  Process holder({"tests/device_client", "hold_memory", "1"}, daemon.client_env());
  ASSERT_TRUE(holder.WaitForLine("ready", absl::Seconds(20)));
  acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* session = FindSession(status, holder.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->memory_quota(), 1048576u);
  EXPECT_EQ(
      daemon.Aclctl({"quota", absl::StrCat(session->id()), "--memory=0", "--streams=100"}).first,
      0);
  status = daemon.Status();
  session = FindSession(status, holder.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->memory_quota(), 0u);
  EXPECT_EQ(session->max_streams(), 100u);
  EXPECT_EQ(daemon.Aclctl({"quota", "999", "--memory=1"}).first, 1);
  EXPECT_EQ(daemon.Aclctl({"quota", "--default"}).first, 2);
}

TEST(OperationsTest, SocketModeAndGroup) {
  struct group* daemon_group = getgrnam("daemon");
  if (daemon_group == nullptr) GTEST_SKIP() << "no 'daemon' group here";
  AcldDaemon daemon({"--socket_mode=0660", "--socket_group=daemon"});
  for (const std::string& path : {daemon.socket(), daemon.socket() + ".peer"}) {
    struct stat info {};
    ASSERT_EQ(stat(path.c_str(), &info), 0) << path;
    EXPECT_EQ(info.st_mode & 0777, 0660u) << path;
    EXPECT_EQ(info.st_gid, daemon_group->gr_gid) << path;
  }
  EXPECT_EQ(RunToCompletion({kAcldBinary, "--socket_mode=999"}).first, 2);
}

TEST(OperationsTest, ShutdownDrainsQueuedWorkAndARestartServesAtOnce) {
  auto daemon = std::make_unique<AcldDaemon>(std::vector<std::string>{"--shutdown_grace=5"});
  const std::string socket = daemon->socket();
  Process busy({"tests/device_client", "hold_memory", "1"}, daemon->client_env());
  ASSERT_TRUE(busy.WaitForLine("ready", absl::Seconds(20)));
  // hold_memory's stream runs a one-minute kernel: the grace (5 s) ends first.
  const absl::Time start = absl::Now();
  EXPECT_EQ(daemon->Stop(), 0);
  EXPECT_GE(absl::Now() - start, absl::Seconds(4));
  EXPECT_FALSE(acld::server::SocketIsLive(socket));

  // A new daemon on the same socket serves a new client right away.
  AcldDaemon restarted;
  const auto [code, output] =
      RunToCompletion({kScenarioClient, "seed_lifecycle"}, restarted.client_env());
  EXPECT_EQ(code, 0) << output;
}

TEST(OperationsTest, EveryReadCommandHasJson) {
  AcldDaemon daemon;
  Process holder({"tests/device_client", "hold_memory", "1"}, daemon.client_env());
  ASSERT_TRUE(holder.WaitForLine("ready", absl::Seconds(20)));
  for (const char* command : {"status", "sessions", "streams", "memory", "devices"}) {
    const auto [code, json] = daemon.Aclctl({"--json", command});
    EXPECT_EQ(code, 0) << command;
    EXPECT_EQ(json.front(), '{') << command << ": " << json;
    const auto [table_code, table] = daemon.Aclctl({command});
    EXPECT_EQ(table_code, 0) << command;
    EXPECT_FALSE(table.empty()) << command;
  }
  const auto [code, frames] = daemon.Aclctl({"watch", "--count=2", "--interval=0.05"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(std::count(frames.begin(), frames.end(), '\033'), 4) << frames;  // 2 clears
}

}  // namespace
}  // namespace acld_test
