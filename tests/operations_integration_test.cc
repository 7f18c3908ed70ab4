// Operating a shared host: identity from the kernel, eviction, quotas, socket
// permissions, graceful shutdown and restart, and aclctl's commands.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/server/socket_path.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/acl/v1/admin.pb.h"
#include "proto/acl/v1/runtime.grpc.pb.h"
#include "tests/acld_fixture.h"
#include "tests/raw_session.h"

namespace acld_test {
namespace {

const acl::v1::SessionInfo* FindSession(const acl::v1::StatusReply& status, int pid) {
  for (const auto& session : status.sessions()) {
    if (session.pid() == pid) return &session;
  }
  return nullptr;
}

const acl::v1::SessionInfo* FindSession(const acl::v1::SessionsReply& sessions, int pid) {
  for (const auto& session : sessions.sessions()) {
    if (session.pid() == pid) return &session;
  }
  return nullptr;
}

// `aclctl --json sessions`, parsed.
acl::v1::SessionsReply Sessions(const AcldDaemon& daemon) {
  const auto [code, json] = daemon.Aclctl({"--json", "sessions"});
  EXPECT_EQ(code, 0) << json;
  acl::v1::SessionsReply sessions;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &sessions).ok()) << json;
  return sessions;
}

// A session spoken over the runtime protocol by this test process, for what
// no client binary holds: events, contexts, shared memory, a waiting call.
class HandSession : public RawSession {
 public:
  explicit HandSession(const AcldDaemon& daemon) : RawSession(daemon.socket()) {}

  // Hands a sealed `bytes` memfd over and registers it; the reply.
  acl::v1::Reply ShareMemory(uint64_t bytes) {
    const int fd = memfd_create("operations", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    EXPECT_TRUE(WriteEveryPage(fd, bytes));
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);  // as libascendcl
    const acl::v1::Reply reply = Share(fd, bytes);
    close(fd);
    return reply;
  }
};

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
  // The quota is what a 1 MiB allocation reserves on the suite's backend.
  const uint64_t quota = ReservedBytes(1 << 20);
  EXPECT_EQ(daemon.Aclctl({"quota", "--default", absl::StrCat("--memory=", quota)}).first, 0);
  const auto [code, output] =
      RunToCompletion({"tests/device_client", "quota_probe", "1048576", "8"}, daemon.client_env());
  EXPECT_EQ(code, 0) << output;

  // Changed at run time, for one live session.
  Process holder({"tests/device_client", "hold_memory", "1"}, daemon.client_env());
  ASSERT_TRUE(holder.WaitForLine("ready", absl::Seconds(20)));
  acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* session = FindSession(status, holder.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->memory_quota(), quota);
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

// acld never writes its log through a symlink: in a directory others can
// write, one planted there would have root append to its target.
TEST(OperationsTest, ALogFileThatIsASymlinkIsRefused) {
  TempDir dir;
  const std::string target = dir.path() + "/target", link = dir.path() + "/acld.log";
  std::ofstream(target) << "untouched\n";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(
      RunToCompletion({kAcldBinary, "--socket=" + dir.path() + "/s", "--log_file=" + link}).first,
      2);
  std::ifstream read(target);
  const std::string content((std::istreambuf_iterator<char>(read)),
                            std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "untouched\n");
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

TEST(OperationsTest, SessionsShowEachUseBesideItsLimit) {
  AcldDaemon daemon({"--max_streams_per_session=16", "--max_contexts_per_session=4",
                     "--max_events_per_session=8", "--max_host_memory_per_session=8388608",
                     "--max_queued_bytes_per_session=4194304", "--default_memory_quota=4194304"});
  Process streams({"tests/device_client", "hold_streams", "3"}, daemon.client_env());
  Process memory({"tests/device_client", "hold_memory", "1"}, daemon.client_env());
  ASSERT_TRUE(streams.WaitForLine("ready", absl::Seconds(20)));
  ASSERT_TRUE(memory.WaitForLine("ready", absl::Seconds(20)));

  // By hand: a device, two contexts, three events, device and shared memory,
  // two busy kernels on a stream whose destroy then waits for them.
  HandSession hand(daemon);
  ASSERT_TRUE(hand.opened());
  acl::v1::ClientMessage message;
  message.mutable_set_device()->set_device_id(0);
  ASSERT_EQ(hand.Call(message).acl_error(), 0);
  uint64_t context = 0;
  for (int i = 0; i < 2; ++i) {
    message.Clear();
    message.mutable_create_context()->set_device_id(0);
    const acl::v1::Reply reply = hand.Call(message);
    ASSERT_EQ(reply.acl_error(), 0) << reply.error_message();
    context = reply.context().context();
  }
  for (int i = 0; i < 3; ++i) {
    message.Clear();
    message.mutable_create_event()->set_device_id(0);
    ASSERT_EQ(hand.Call(message).acl_error(), 0);
  }
  message.Clear();
  message.mutable_malloc()->set_device_id(0);
  message.mutable_malloc()->set_size(4096);
  const acl::v1::Reply allocated = hand.Call(message);
  ASSERT_EQ(allocated.acl_error(), 0) << allocated.error_message();
  const acl::v1::Reply shared = hand.ShareMemory(1 << 20);
  ASSERT_EQ(shared.acl_error(), 0) << shared.error_message();
  message.Clear();
  message.mutable_create_stream()->set_context(context);
  const acl::v1::Reply created = hand.Call(message);
  ASSERT_EQ(created.acl_error(), 0) << created.error_message();
  const uint64_t busy = created.handle().handle();
  message.Clear();
  for (int i = 0; i < 2; ++i) {
    acl::v1::AsyncOp& op = *message.mutable_async_batch()->add_ops();
    op.set_stream(busy);
    op.mutable_launch_kernel()->set_name("spin_add_one_u32");
    op.mutable_launch_kernel()->set_block_dim(1);
    op.mutable_launch_kernel()->add_args(allocated.device_address().address());
    op.mutable_launch_kernel()->add_args(60000000);  // a minute
  }
  hand.Send(message);
  message.Clear();
  message.mutable_destroy_stream()->set_stream(busy);
  hand.Send(message);  // answered when the kernels are done: a waiting call

  const acl::v1::SessionInfo* session = nullptr;
  acl::v1::SessionsReply sessions;
  ASSERT_TRUE(WaitUntil(
      [&] {
        sessions = Sessions(daemon);
        session = FindSession(sessions, getpid());
        return session != nullptr && session->waiting_calls() == 1;
      },
      absl::Seconds(10)))
      << daemon.Aclctl({"--json", "sessions"}).second;
  // Open streams: the device's default context's and each context's default
  // stream; the destroyed one still runs its kernels.
  EXPECT_EQ(session->streams(), 3u);
  EXPECT_EQ(session->closing_streams(), 1u);
  EXPECT_EQ(session->max_streams(), 16u);
  EXPECT_EQ(session->contexts(), 2u);
  EXPECT_EQ(session->max_contexts(), 4u);
  EXPECT_EQ(session->events(), 3u);
  EXPECT_EQ(session->max_events(), 8u);
  EXPECT_EQ(session->memory_bytes(), ReservedBytes(4096));
  EXPECT_EQ(session->memory_quota(), 4194304u);
  EXPECT_EQ(session->host_memory_bytes(), 1u << 20);
  EXPECT_EQ(session->host_memory_segments(), 1u);
  EXPECT_EQ(session->max_host_memory_bytes(), 8388608u);
  EXPECT_EQ(session->max_host_memory_segments(), 4096u);
  EXPECT_GT(session->queued_bytes(), 0u);  // the second kernel waits behind the first
  EXPECT_EQ(session->queued_bytes_limit(), 4194304u);
  EXPECT_EQ(session->max_waiting_calls(), 4096u);
  EXPECT_EQ(session->weight(), 1u);
  const uint64_t hand_id = session->id();

  // The real clients: streams (the default one included) and memory.
  session = FindSession(sessions, streams.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->streams(), 4u);
  EXPECT_EQ(session->closing_streams(), 0u);
  EXPECT_EQ(session->contexts(), 0u);
  EXPECT_EQ(session->events(), 0u);
  EXPECT_EQ(session->waiting_calls(), 0u);
  session = FindSession(sessions, memory.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->memory_bytes(), ReservedBytes(1 << 20));
  EXPECT_EQ(session->memory_quota(), 4194304u);
  const uint64_t memory_id = session->id();

  // `status --json` carries the same fields.
  const acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* in_status = FindSession(status, getpid());
  ASSERT_NE(in_status, nullptr);
  EXPECT_EQ(in_status->events(), 3u);
  EXPECT_EQ(in_status->host_memory_bytes(), 1u << 20);
  EXPECT_EQ(in_status->max_host_memory_bytes(), 8388608u);

  // The table shows each use beside its limit.
  const auto [table_code, table] = daemon.Aclctl({"sessions"});
  EXPECT_EQ(table_code, 0);
  // 4 KiB reserves 4160 bytes on acl (ReservedBytes).
  const char* small = OnAclBackend() ? "4.1 KiB/4.0 MiB" : "4.0 KiB/4.0 MiB";
  for (const char* cell : {"3+1/16", "2/4", "3/8", small, "1.0 MiB/8.0 MiB", "1/4096", "4/16",
                           "1.0 MiB/4.0 MiB"}) {
    EXPECT_NE(table.find(cell), std::string::npos) << cell << "\n" << table;
  }

  // Weights: set, shown, logged; 0, 1001 and unknown sessions are refused.
  const auto [code, output] = daemon.Aclctl({"weight", absl::StrCat(memory_id), "5"});
  EXPECT_EQ(code, 0) << output;
  EXPECT_EQ(daemon.Aclctl({"weight", absl::StrCat(hand_id), "0"}).first, 1);
  EXPECT_EQ(daemon.Aclctl({"weight", absl::StrCat(hand_id), "1001"}).first, 1);
  EXPECT_EQ(daemon.Aclctl({"weight", "999", "3"}).first, 1);
  EXPECT_EQ(daemon.Aclctl({"weight", absl::StrCat(hand_id), "x"}).first, 2);
  EXPECT_EQ(daemon.Aclctl({"weight", absl::StrCat(hand_id)}).first, 2);
  sessions = Sessions(daemon);
  session = FindSession(sessions, memory.pid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->weight(), 5u);
  session = FindSession(sessions, getpid());
  ASSERT_NE(session, nullptr);
  EXPECT_EQ(session->weight(), 1u);

  streams.WriteLine("release");
  memory.WriteLine("release");
  EXPECT_EQ(streams.Wait(absl::Seconds(20)), 0) << streams.output();
  EXPECT_EQ(memory.Wait(absl::Seconds(20)), 0) << memory.output();
}

std::string ReadWhole(const std::string& path) {
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  return content.str();
}

// GET /metrics from 127.0.0.1:`port` (with `authorization`, a header's
// value, if not empty): the status line and the body.
struct Scraped {
  std::string status;
  std::string body;
};
Scraped ScrapeWith(int port, const std::string& authorization) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return {};
  }
  const std::string request =
      absl::StrCat("GET /metrics HTTP/1.0\r\nHost: localhost\r\n",
                   authorization.empty() ? "" : "Authorization: " + authorization + "\r\n", "\r\n");
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (int i = 0; i < 1000; ++i) {
    pollfd readable{fd, POLLIN, 0};
    if (poll(&readable, 1, 5000) <= 0) break;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return {};
  return Scraped{response.substr(0, response.find("\r\n")), response.substr(body + 4)};
}

std::string Scrape(int port) { return ScrapeWith(port, "").body; }

// The value of the sample `series` (name and labels, as exposed), or -1.
double Sample(const std::string& metrics, const std::string& series) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) != 0) continue;
    double value = -1;
    return absl::SimpleAtod(line.substr(series.size() + 1), &value) ? value : -1;
  }
  return -1;
}

// The port acld picked for its metrics, from its log (0: none within 10 s).
int MetricsPort(const AcldDaemon& daemon) {
  int port = 0;
  WaitUntil(
      [&] {
        const std::string text = ReadWhole(daemon.dir() + "/acld.log");
        const size_t at = text.find("(port ");
        return at != std::string::npos &&
               absl::SimpleAtoi(text.substr(at + 6, text.find(')', at) - at - 6), &port);
      },
      absl::Seconds(10));
  return port;
}

// Connections that send nothing hold the exporter's workers only a moment:
// before, two of them, renewed every half minute, kept every scrape out.
TEST(OperationsTest, IdleConnectionsDoNotKeepScrapesOut) {
  AcldDaemon daemon({"--metrics_address=127.0.0.1:0"});
  const int port = MetricsPort(daemon);
  ASSERT_NE(port, 0);
  std::vector<int> idle;
  for (int i = 0; i < 6; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    idle.push_back(fd);
  }
  absl::SleepFor(absl::Milliseconds(200));  // taken by the workers
  const Scraped scraped = ScrapeWith(port, "");
  EXPECT_NE(scraped.status.find("200"), std::string::npos) << "the scrape was kept out";
  for (int fd : idle) close(fd);
}

TEST(OperationsTest, PrometheusMetricsAreWhatAclctlShows) {
  AcldDaemon daemon({"--metrics_address=127.0.0.1:0", "--metrics_per_session"});
  const int port = MetricsPort(daemon);
  ASSERT_NE(port, 0);
  // Work that completes (kernels, copies and events on streams), then a
  // session that stays.
  const auto [ordering_code, ordering] =
      RunToCompletion({"tests/device_client", "ordering"}, daemon.client_env());
  ASSERT_EQ(ordering_code, 0) << ordering;
  const auto [callbacks_code, callbacks] =
      RunToCompletion({"tests/callback_client", "many", "20"}, daemon.client_env());
  ASSERT_EQ(callbacks_code, 0) << callbacks;
  Process holder({"tests/device_client", "hold_memory", "3"}, daemon.client_env());
  ASSERT_TRUE(holder.WaitForLine("ready", absl::Seconds(20))) << holder.output();
  // A quota group with the labels the device plugin attaches, and a member.
  const auto [group_code, group_json] =
      daemon.Aclctl({"--json", "group", "create", "--devices=0", "--memory=4194304", "--label",
                     "pod=p1", "--label", "namespace=ns1", "--label", "container=c1"});
  ASSERT_EQ(group_code, 0) << group_json;
  acl::v1::GroupInfo group;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(group_json, &group).ok()) << group_json;
  Process member({"tests/group_client", "hold", "0", "1048576"},
                 {{"ACLD_ADDRESS", "unix:" + group.directory() + "/acld.sock"}});
  ASSERT_TRUE(member.WaitForLine("ready", absl::Seconds(20))) << member.output();

  const acl::v1::StatusReply status = daemon.Status();
  const std::string metrics = Scrape(port);
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(Sample(metrics, "acld_sessions"), status.session_count()) << metrics;
  ASSERT_GE(status.devices_size(), 1);
  EXPECT_GT(status.devices(0).used_bytes(), 0u);
  EXPECT_EQ(Sample(metrics, "acld_device_memory_used_bytes{device=\"0\"}"),
            static_cast<double>(status.devices(0).used_bytes()))
      << metrics;
  EXPECT_EQ(Sample(metrics, "acld_device_memory_bytes{device=\"0\"}"),
            static_cast<double>(status.devices(0).memory_bytes()));
  EXPECT_TRUE(status.devices(0).healthy()) << status.devices(0).unhealthy();
  EXPECT_EQ(Sample(metrics, "acld_device_healthy{device=\"0\"}"), 1) << metrics;
  EXPECT_NE(metrics.find("# TYPE acld_sessions_refused_total counter"), std::string::npos);
  EXPECT_GT(status.devices(0).tasks_completed(), 0u);
  EXPECT_GE(status.callback_latency().count(), 20u) << "the host funcs were timed";
  EXPECT_EQ(Sample(metrics, "acld_host_callback_seconds_count"),
            static_cast<double>(status.callback_latency().count()))
      << metrics;
  EXPECT_EQ(Sample(metrics, "acld_host_callback_seconds_bucket{le=\"+Inf\"}"),
            static_cast<double>(status.callback_latency().count()));
  EXPECT_EQ(Sample(metrics, "acld_tasks_total{device=\"0\",result=\"completed\"}"),
            static_cast<double>(status.devices(0).tasks_completed()))
      << metrics;
  const acl::v1::SessionInfo* held = FindSession(status, holder.pid());
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(Sample(metrics, absl::StrCat("acld_session_memory_bytes{session=\"", held->id(),
                                         "\",pid=\"", holder.pid(), "\",uid=\"", getuid(),
                                         "\"}")),
            static_cast<double>(held->memory_bytes()))
      << "per-session series, as asked\n" << metrics;
  // Per group, with the pod's labels: what aclctl group shows.
  const auto [list_code, list_json] = daemon.Aclctl({"--json", "group", "show", group.id()});
  ASSERT_EQ(list_code, 0) << list_json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(list_json, &group).ok()) << list_json;
  ASSERT_EQ(group.devices_size(), 1);
  EXPECT_GT(group.devices(0).memory_used(), 0u);
  // The group's public name (the first 8 digits), never its id.
  const std::string group_labels = absl::StrCat("group=\"", group.id().substr(0, 8),
                                                "\",pod=\"p1\",namespace=\"ns1\",container=\"c1\"");
  EXPECT_EQ(Sample(metrics, absl::StrCat("acld_group_memory_used_bytes{", group_labels,
                                         ",device=\"0\"}")),
            static_cast<double>(group.devices(0).memory_used()))
      << metrics;
  EXPECT_EQ(Sample(metrics, absl::StrCat("acld_group_memory_limit_bytes{", group_labels,
                                         ",device=\"0\"}")),
            4194304.0)
      << metrics;
  EXPECT_EQ(Sample(metrics, absl::StrCat("acld_group_sessions{", group_labels, "}")), 1)
      << metrics;

  // Well-formed for Prometheus itself (promtool, from Debian's prometheus).
  const std::string scraped = daemon.dir() + "/metrics.txt";
  std::ofstream(scraped) << metrics;
  EXPECT_EQ(std::system(("promtool check metrics < " + scraped + " > " + scraped + ".out 2>&1")
                            .c_str()),
            0)
      << ReadWhole(scraped + ".out");

  holder.WriteLine("done");
  holder.Wait(absl::Seconds(20));
  member.WriteLine("done");
  member.Wait(absl::Seconds(20));
  EXPECT_TRUE(WaitUntil([&] { return Sample(Scrape(port), "acld_sessions") == 0; },
                        absl::Seconds(10)));
}

TEST(OperationsTest, ADisabledDeviceRefusesNewUsersAndKeepsThoseItHas) {
  AcldDaemon daemon;
  Process holder({"tests/device_client", "hold_memory", "1"}, daemon.client_env());
  ASSERT_TRUE(holder.WaitForLine("ready", absl::Seconds(20))) << holder.output();
  EXPECT_EQ(daemon.Aclctl({"device", "disable", "0"}).first, 0);
  EXPECT_NE(daemon.Aclctl({"device", "disable", "9"}).first, 0) << "no device 9";
  EXPECT_NE(daemon.Aclctl({"device", "off", "0"}).first, 0);
  acl::v1::StatusReply status = daemon.Status();
  ASSERT_GE(status.devices_size(), 2);
  EXPECT_TRUE(status.devices(0).disabled());
  EXPECT_FALSE(status.devices(1).disabled());
  // Health (what the device plugin will advertise): the disabled device is
  // unhealthy, saying why; the others are healthy.
  EXPECT_FALSE(status.devices(0).healthy());
  EXPECT_NE(status.devices(0).unhealthy().find("disabled by the operator"), std::string::npos)
      << status.devices(0).unhealthy();
  EXPECT_TRUE(status.devices(1).healthy()) << status.devices(1).unhealthy();
  const std::string devices = daemon.Aclctl({"devices"}).second;
  EXPECT_NE(devices.find("disabled"), std::string::npos) << devices;
  EXPECT_NE(devices.find("unhealthy"), std::string::npos) << devices;
  // Devices are asked for without the sessions (a tenant chooses how much its
  // session shows; the device plugin asks the same way every second).
  ASSERT_GE(status.sessions_size(), 1);
  const std::string devices_json = daemon.Aclctl({"--json", "devices"}).second;
  acl::v1::StatusReply devices_only;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(devices_json, &devices_only).ok())
      << devices_json;
  EXPECT_EQ(devices_only.sessions_size(), 0);
  EXPECT_EQ(devices_only.session_count(), static_cast<uint32_t>(status.sessions_size()));
  EXPECT_EQ(devices_only.devices_size(), status.devices_size());

  auto set_device = [&](const std::string& device) {
    return RunToCompletion({"tests/device_client", "set_device", device}, daemon.client_env())
        .second;
  };
  const std::string refused = set_device("0");
  EXPECT_NE(refused.find("set_device 207004"), std::string::npos) << refused;
  EXPECT_NE(refused.find("disabled by the operator"), std::string::npos) << refused;
  EXPECT_NE(set_device("1").find("set_device 0"), std::string::npos) << "other devices serve";
  // The session that held device 0 keeps it: its kernel and memory stay.
  EXPECT_EQ(daemon.Status().devices(0).sessions(), 1u);
  holder.WriteLine("done");
  EXPECT_EQ(holder.Wait(absl::Seconds(20)), 0) << holder.output();

  EXPECT_EQ(daemon.Aclctl({"device", "enable", "0"}).first, 0);
  EXPECT_TRUE(daemon.Status().devices(0).healthy());
  EXPECT_NE(set_device("0").find("set_device 0"), std::string::npos) << "back in";
}


// With credentials, only a scrape that presents them is answered: the
// series name every NPU pod, and a network policy cannot keep the users of
// acld's own node from its port.
TEST(OperationsTest, MetricsWithCredentialsAnswerOnlyThoseWhoPresentThem) {
  TempDir secret;
  const std::string file = secret.path() + "/credentials";
  std::ofstream(file) << "prometheus:s3cret\n";
  // Others may read it, or it is empty (no authentication at all): acld
  // does not start, as ssh refuses a key others may read.
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);
  const std::string empty = secret.path() + "/empty";
  std::ofstream(empty) << "\n";
  ASSERT_EQ(chmod(empty.c_str(), 0600), 0);
  for (const std::string& refused : {file, empty}) {
    EXPECT_EQ(RunToCompletion({kAcldBinary, "--socket=" + secret.path() + "/s",
                               "--metrics_address=127.0.0.1:0",
                               "--metrics_credentials_file=" + refused})
                  .first,
              2)
        << refused;
  }
  ASSERT_EQ(chmod(file.c_str(), 0600), 0);
  AcldDaemon daemon({"--metrics_address=127.0.0.1:0", "--metrics_credentials_file=" + file});
  const int port = MetricsPort(daemon);
  ASSERT_NE(port, 0);
  auto basic = [](const std::string& pair) { return "Basic " + absl::Base64Escape(pair); };
  const Scraped anonymous = ScrapeWith(port, "");
  EXPECT_NE(anonymous.status.find("401"), std::string::npos) << anonymous.status;
  EXPECT_EQ(anonymous.body.find("acld_sessions"), std::string::npos) << anonymous.body;
  for (const std::string wrong : {"prometheus:s3cre", "prometheus:s3creT", "Prometheus:s3cret"}) {
    const Scraped refused = ScrapeWith(port, basic(wrong));
    EXPECT_NE(refused.status.find("401"), std::string::npos) << wrong << ": " << refused.status;
  }
  const Scraped allowed = ScrapeWith(port, basic("prometheus:s3cret"));
  EXPECT_NE(allowed.status.find("200"), std::string::npos) << allowed.status;
  EXPECT_NE(allowed.body.find("acld_sessions"), std::string::npos) << allowed.body;
}

}  // namespace
}  // namespace acld_test
