// The session's shared-memory channel (proto/acl/ring_channel.h) against a
// real acld: clients use it by default and the gRPC fallback on request; a
// client of the previous protocol is still served; a client that breaks its
// channel ends its own session and nobody else's.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/acl/protocol.h"
#include "proto/acl/ring_channel.h"
#include "proto/acl/v1/runtime.grpc.pb.h"
#include "tests/acld_fixture.h"
#include "tests/process.h"
#include "tests/raw_session.h"
#include "tests/ring_session.h"

namespace acld_test {
namespace {

using acld::RingChannel;

const acl::v1::SessionInfo* SessionOf(const acl::v1::StatusReply& status, pid_t pid) {
  for (const auto& session : status.sessions()) {
    if (session.pid() == pid) return &session;
  }
  return nullptr;
}

std::string ReadAll(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(ChannelTest, ClientsUseTheSharedMemoryChannelUnlessTheyAskForGrpc) {
  AcldDaemon daemon;
  std::map<std::string, std::string> grpc_env = daemon.client_env();
  grpc_env["ACLD_TRANSPORT"] = "grpc";
  std::map<std::string, std::string> shm_env = daemon.client_env();
  shm_env["ACLD_TRANSPORT"] = "shm";
  Process on_ring({kScenarioClient, "hold", "1"}, shm_env);
  Process on_grpc({kScenarioClient, "hold", "1"}, grpc_env);
  ASSERT_TRUE(on_ring.WaitForLine("ready", absl::Seconds(20))) << on_ring.output();
  ASSERT_TRUE(on_grpc.WaitForLine("ready", absl::Seconds(20))) << on_grpc.output();
  const acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* ring_session = SessionOf(status, on_ring.pid());
  const acl::v1::SessionInfo* grpc_session = SessionOf(status, on_grpc.pid());
  ASSERT_NE(ring_session, nullptr);
  ASSERT_NE(grpc_session, nullptr);
  EXPECT_EQ(ring_session->carrier(), "shm");
  EXPECT_EQ(ring_session->channel_bytes(), RingChannel::RegionBytes());
  EXPECT_EQ(grpc_session->carrier(), "grpc");
  EXPECT_EQ(grpc_session->channel_bytes(), 0u);
  EXPECT_EQ(ring_session->protocol_version(), acld::kProtocolVersion);
  EXPECT_EQ(grpc_session->protocol_version(), acld::kStreamProtocolVersion);
  const auto [code, sessions] = daemon.Aclctl({"sessions"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(sessions.find("VIA"), std::string::npos) << sessions;
  EXPECT_NE(sessions.find(absl::StrCat("shm v", acld::kProtocolVersion)), std::string::npos)
      << sessions;
  for (Process* client : {&on_ring, &on_grpc}) {
    client->WriteLine("go");
    EXPECT_EQ(client->Wait(absl::Seconds(20)), 0) << client->output();
  }
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
}

// A libascendcl of the previous protocol version, as images built before an
// upgrade of acld hold (//client:libascendcl_previous_protocol.so: it says
// the version before and hands its memory over sealed for good, its pages
// not written), runs unchanged against this acld, which fills the holes it
// meets in that memory from the client's own mapping (client_page_filler.h).
TEST(ChannelTest, AClientOfThePreviousProtocolVersionKeepsWorking) {
  AcldDaemon daemon;
  // The client binaries find libascendcl.so by name: this directory's first.
  const std::string libraries = daemon.dir() + "/previous";
  ASSERT_EQ(mkdir(libraries.c_str(), 0755), 0);
  char* library = realpath("client/libascendcl_previous_protocol.so", nullptr);
  ASSERT_NE(library, nullptr);
  ASSERT_EQ(symlink(library, (libraries + "/libascendcl.so").c_str()), 0);
  free(library);
  std::map<std::string, std::string> env = daemon.client_env();
  env["LD_LIBRARY_PATH"] = libraries;
  env["ACLD_TRANSPORT"] = "shm";

  Process older({kScenarioClient, "hold", "1"}, env);
  ASSERT_TRUE(older.WaitForLine("ready", absl::Seconds(20))) << older.output();
  const acl::v1::StatusReply status = daemon.Status();
  const acl::v1::SessionInfo* session = SessionOf(status, older.pid());
  ASSERT_NE(session, nullptr) << older.output() << status.DebugString();
  EXPECT_EQ(session->protocol_version(), acld::kProtocolVersion - 1);
  EXPECT_EQ(session->carrier(), "shm");
  older.WriteLine("go");
  EXPECT_EQ(older.Wait(absl::Seconds(20)), 0) << older.output();
  // Its channel, staging memory and aclrtMallocHost memory, in every copy
  // direction.
  ExpectScenarioPasses({"tests/device_client", "roundtrip", "8"}, env);
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(5)));
}

// The names of `pid`'s threads.
std::vector<std::string> ThreadsOf(pid_t pid) {
  std::vector<std::string> names;
  DIR* dir = opendir(absl::StrCat("/proc/", pid, "/task").c_str());
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::string name = ReadAll(absl::StrCat("/proc/", pid, "/task/", entry->d_name, "/comm"));
    if (!name.empty() && name.back() == '\n') name.pop_back();
    names.push_back(name);
  }
  closedir(dir);
  return names;
}

// Sessions hold no daemon thread, on either carrier: the stream is a gRPC
// callback reactor and the channels share a fixed pool.
TEST(ChannelTest, TheDaemonsThreadsDoNotGrowWithItsClients) {
  AcldDaemon daemon;
  const pid_t acld = daemon.process().pid();
  std::vector<std::unique_ptr<Process>> clients;
  auto connect = [&](size_t count) {
    const size_t first = clients.size();
    for (size_t i = 0; i < count; ++i) {
      std::map<std::string, std::string> env = daemon.client_env();
      env["ACLD_TRANSPORT"] = clients.size() % 2 == 0 ? "shm" : "grpc";
      clients.push_back(
          std::make_unique<Process>(std::vector<std::string>{kScenarioClient, "hold", "1"}, env));
    }
    for (size_t i = first; i < clients.size(); ++i) {
      ASSERT_TRUE(clients[i]->WaitForLine("ready", absl::Seconds(60))) << clients[i]->output();
    }
  };
  connect(2);
  const std::vector<std::string> with_two = ThreadsOf(acld);
  connect(30);
  ASSERT_EQ(daemon.Status().session_count(), 32u);
  const std::vector<std::string> with_thirty_two = ThreadsOf(acld);
  // acld's own threads (named after the process) stay as they were; gRPC's
  // executor may add a few of its own under a burst of connections (its pool
  // has a bound of its own), far fewer than one per client.
  auto own = [](const std::vector<std::string>& names) {
    return static_cast<size_t>(std::count(names.begin(), names.end(), "acld"));
  };
  const std::string both = absl::StrCat("2 clients: ", absl::StrJoin(with_two, ","),
                                        "\n32 clients: ", absl::StrJoin(with_thirty_two, ","));
  EXPECT_EQ(own(with_thirty_two), own(with_two)) << both;
  EXPECT_LE(with_thirty_two.size() - own(with_thirty_two),
            with_two.size() - own(with_two) + 8)
      << both;
  for (auto& client : clients) {
    client->WriteLine("go");
    EXPECT_EQ(client->Wait(absl::Seconds(30)), 0) << client->output();
  }
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(10)));
}

// The library's threads start with the first use that needs them: a process
// that only makes synchronous calls on the channel has one (the stream's
// reader, which hears the session end); the first asynchronous operation
// adds the writer that sends batches; the first callback adds the channel's
// event reader and the callback threads.
TEST(ChannelTest, TheClientsThreadsStartOnFirstUse) {
  AcldDaemon daemon;
  std::map<std::string, std::string> env = daemon.client_env();
  env["ACLD_TRANSPORT"] = "shm";
  Process client({kScenarioClient, "stages"}, env);
  auto library_threads = [&] {
    std::map<std::string, int> counts;
    for (const std::string& name : ThreadsOf(client.pid())) {
      if (absl::StartsWith(name, "acl-")) ++counts[name];
    }
    return counts;
  };
  // Every thread of the process beside its main one: ours and gRPC's. The
  // session opens on the identity socket, so gRPC never starts any.
  auto threads = [&] { return ThreadsOf(client.pid()); };
  using Counts = std::map<std::string, int>;
  ASSERT_TRUE(client.WaitForLine("sync", absl::Seconds(20))) << client.output();
  EXPECT_EQ(library_threads(), Counts{});
  EXPECT_LE(threads().size(), 1u + 3u) << absl::StrJoin(threads(), ", ");
  client.WriteLine("go");
  ASSERT_TRUE(client.WaitForLine("async", absl::Seconds(20))) << client.output();
  EXPECT_EQ(library_threads(), (Counts{{"acl-flusher", 1}}));
  EXPECT_LE(threads().size(), 1u + 3u) << absl::StrJoin(threads(), ", ");
  client.WriteLine("go");
  ASSERT_TRUE(client.WaitForLine("callbacks", absl::Seconds(20))) << client.output();
  // Host funcs run on the event threads that read them (at most 4, as many
  // as run at once); the dispatcher's own callback threads never start.
  Counts with_callbacks = library_threads();
  EXPECT_GE(with_callbacks["acl-events"], 1);
  EXPECT_LE(with_callbacks["acl-events"], 4);
  EXPECT_EQ(with_callbacks["acl-callback"], 0);
  client.WriteLine("go");
  EXPECT_EQ(client.Wait(absl::Seconds(20)), 0) << client.output();
}

// What a container is to acld: a client in its own mount and pid namespaces
// with a private /dev/shm. Its channel, host memory and staging are memfds
// handed over the identity socket, so nothing needs a shared /dev/shm; the
// pid acld knows it by is the host's.
TEST(ChannelTest, AClientInItsOwnNamespacesWithAPrivateDevShmIsServed) {
  AcldDaemon daemon;
  std::map<std::string, std::string> env = daemon.client_env();
  // LeakSanitizer cannot stop the threads of a pid namespace's init (see
  // sharing_integration_test.cc); this client's leaks are checked elsewhere.
  env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1";
  auto in_container = [&](const std::string& command) {
    return RunToCompletion({"/usr/bin/unshare", "--mount", "--pid", "--fork", "/bin/sh", "-c",
                            "mount -t tmpfs -o size=1m tmpfs /dev/shm && echo pid $$ && " +
                                command},
                           env, absl::Seconds(60));
  };
  const auto [copies_code, copies] = in_container("exec tests/device_client roundtrip 8");
  EXPECT_EQ(copies_code, 0) << copies;
  EXPECT_NE(copies.find("pid 1"), std::string::npos) << "the shell is its namespace's init";
  EXPECT_NE(copies.find("roundtrip 8388608 bytes ok"), std::string::npos) << copies;
  const auto [callbacks_code, callbacks] = in_container("exec tests/callback_client many 20");
  EXPECT_EQ(callbacks_code, 0) << callbacks;

  // While one runs, acld shows it by its host pid, not the 1 it has inside.
  Process held({"/usr/bin/unshare", "--mount", "--pid", "--fork", "/bin/sh", "-c",
                "mount -t tmpfs tmpfs /dev/shm && exec tests/scenario_client hold 1"},
               env);
  ASSERT_TRUE(held.WaitForLine("ready", absl::Seconds(20))) << held.output();
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_NE(status.sessions(0).pid(), 1);
  EXPECT_NE(status.sessions(0).pid(), held.pid()) << "unshare forked: the client is its child";
  held.WriteLine("release");
  EXPECT_EQ(held.Wait(absl::Seconds(20)), 0) << held.output();
}

TEST(ChannelTest, AnUnknownCarrierIsAClearError) {
  AcldDaemon daemon;
  std::map<std::string, std::string> env = daemon.client_env();
  env["ACLD_TRANSPORT"] = "pigeon";
  const auto [code, output] = RunToCompletion({kScenarioClient, "hold", "1"}, env);
  EXPECT_NE(code, 0);
  EXPECT_NE(output.find("ACLD_TRANSPORT='pigeon' is not understood"), std::string::npos) << output;
}

TEST(ChannelTest, APreviousProtocolClientIsServedOnTheStream) {
  AcldDaemon daemon;
  RawSession old_client(daemon.socket());  // speaks protocol 1: no channel
  ASSERT_TRUE(old_client.opened());
  acl::v1::ClientMessage request;
  request.mutable_init_count();
  const acl::v1::Reply reply = old_client.Call(request);
  EXPECT_EQ(reply.acl_error(), 0);
  EXPECT_TRUE(reply.has_init_count());
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_EQ(status.sessions(0).carrier(), "grpc");
}

TEST(ChannelTest, AnUnknownProtocolVersionIsRefusedNamingBoth) {
  AcldDaemon daemon;
  auto channel = grpc::CreateChannel("unix:" + daemon.socket(), grpc::InsecureChannelCredentials());
  auto stub = acl::v1::Runtime::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  auto stream = stub->Session(&context);
  acl::v1::ClientMessage hello;
  hello.set_call_id(1);
  hello.mutable_hello()->set_protocol_version(acld::kProtocolVersion + 1);
  hello.mutable_hello()->set_peer_token(FetchToken(daemon.socket() + ".peer"));
  ASSERT_TRUE(stream->Write(hello));
  acl::v1::ServerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find(
                absl::StrCat("the client speaks version ", acld::kProtocolVersion + 1)),
            std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find(absl::StrCat("versions ", acld::kOldestProtocolVersion,
                                                     " to ", acld::kProtocolVersion)),
            std::string::npos)
      << status.error_message();
}

TEST(ChannelTest, ACallGoesBothWaysOnTheChannel) {
  AcldDaemon daemon;
  RingSession session(daemon.socket());
  ASSERT_TRUE(session.opened());
  ASSERT_TRUE(session.on_ring());
  EXPECT_EQ(session.InitCountOverRing(), 0);
}

TEST(ChannelTest, AChannelOfTheWrongSizeLeavesTheSessionOnTheStream) {
  AcldDaemon daemon;
  RingSession session(daemon.socket(), RingChannel::RegionBytes() / 2);
  ASSERT_TRUE(session.opened());
  EXPECT_FALSE(session.on_ring());
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_EQ(status.sessions(0).carrier(), "grpc");
}

TEST(ChannelTest, APreviousProtocolChannelWithoutADoorbellIsServedOnTheStream) {
  AcldDaemon daemon;
  RingSession session(daemon.socket(), RingChannel::RegionBytes(), /*protocol=*/2);
  ASSERT_TRUE(session.opened());
  EXPECT_FALSE(session.on_ring());
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_EQ(status.sessions(0).carrier(), "grpc");
  EXPECT_NE(ReadAll(daemon.dir() + "/acld.log").find("came without"), std::string::npos);
}

TEST(ChannelTest, AClientThatDiesWithItsRingFullIsReaped) {
  AcldDaemon daemon;
  auto hoarder = std::make_unique<RingSession>(daemon.socket());
  ASSERT_TRUE(hoarder->on_ring());
  // Far more replies than the daemon-to-client ring holds: once it is full,
  // acld serves the session's requests no more (it stalls only itself), so
  // the client's own ring fills too.
  const int sent = hoarder->Flood(1000000);
  EXPECT_LT(sent, 1000000) << "acld kept answering into a ring nobody reads";
  ASSERT_EQ(daemon.Status().session_count(), 1u);
  hoarder.reset();  // its stream ends, as when the process dies
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 0; }, absl::Seconds(10)))
      << "a session whose writes wait on a full ring was never released";
  EXPECT_EQ(daemon.Status().sessions_closing(), 0u);
}

// Launches that print 64 KiB each (a 256-byte format, 1,000 blocks) on
// `stream`, in one batch.
acl::v1::ClientMessage PrintingLaunches(uint64_t stream, int launches) {
  acl::v1::ClientMessage batch;
  for (int i = 0; i < launches; ++i) {
    acl::v1::AsyncOp& op = *batch.mutable_async_batch()->add_ops();
    op.set_stream(stream);
    acl::v1::LaunchKernel& launch = *op.mutable_launch_kernel();
    launch.set_name("printf_i32");
    launch.set_block_dim(1000);
    launch.add_args(0);  // no values
    for (int field = 0; field < 32; ++field) launch.add_args(0x7878787878787878ull);  // 'x'
  }
  return batch;
}

// A session on the channel with device 0 set: its default stream (0 if that failed).
uint64_t SetDeviceOver(RingSession& session) {
  acl::v1::ClientMessage set_device;
  set_device.set_call_id(2);
  set_device.mutable_set_device()->set_device_id(0);
  if (!session.Send(set_device)) return 0;
  std::optional<acl::v1::ServerMessage> reply = session.Next(absl::Seconds(20));
  if (!reply.has_value() || reply->call_id() != 2) return 0;
  return reply->reply().context().default_stream();
}

// What acld holds for this test's uid, as aclctl shows it.
uint64_t MessageBytesOfThisUid(const acl::v1::StatusReply& status) {
  for (const acl::v1::TenantUsage& tenant : status.tenants()) {
    if (tenant.group().empty() && tenant.uid() == getuid()) return tenant.message_bytes();
  }
  return 0;
}

// The most any one session of `status` holds one way: `bytes` is
// SessionInfo::inbound_bytes or outbound_bytes.
uint64_t MostHeld(const acl::v1::StatusReply& status,
                  uint64_t (acl::v1::SessionInfo::*bytes)() const) {
  uint64_t most = 0;
  for (const acl::v1::SessionInfo& session : status.sessions()) {
    most = std::max(most, (session.*bytes)());
  }
  return most;
}

// Requests that never finish arriving hold acld's memory, as do messages a
// client does not read: all sessions of a uid hold at most
// --max_message_bytes_per_uid of them together, beyond 1 MiB each way per
// session. The session that would pass it ends; the uid's other sessions go
// on, and aclctl shows what is held.
TEST(ChannelTest, UnfinishedRequestsOfOneUidHoldNoMoreThanItsMessageBudget) {
  AcldDaemon daemon({"--max_message_bytes_per_uid=4194304"});
  auto first = std::make_unique<RingSession>(daemon.socket());
  RingSession second(daemon.socket());
  RingSession bystander(daemon.socket());
  ASSERT_TRUE(first->on_ring() && second.on_ring() && bystander.on_ring());
  constexpr uint64_t kFragment = acld::RingChannel::kMaxFrameBytes - 1;
  // 2.5 MiB of a request whose last piece never comes, kept in a 4 MiB
  // buffer: 3 MiB of it charged, and shown.
  ASSERT_EQ(first->SendUnfinished(40), 40);
  EXPECT_TRUE(WaitUntil([&] { return MessageBytesOfThisUid(daemon.Status()) > (2u << 20); },
                        absl::Seconds(10)))
      << MessageBytesOfThisUid(daemon.Status());
  acl::v1::StatusReply status = daemon.Status();
  EXPECT_EQ(status.max_message_bytes_per_uid(), 4194304u);
  EXPECT_GE(MostHeld(status, &acl::v1::SessionInfo::inbound_bytes), 40 * kFragment);
  const auto [code, tenants] = daemon.Aclctl({"status"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(tenants.find("MSGS"), std::string::npos) << tenants;

  // As much on another session would pass the budget: that session ends.
  (void)second.SendUnfinished(40);  // acld stops reading it part way
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 2; }, absl::Seconds(10)))
      << daemon.Status().session_count() << " sessions";
  EXPECT_NE(ReadAll(daemon.dir() + "/acld.log").find("--max_message_bytes_per_uid"),
            std::string::npos);
  EXPECT_LE(MessageBytesOfThisUid(daemon.Status()), uint64_t{4194304});
  EXPECT_EQ(bystander.InitCountOverRing(), 0) << "the uid's other sessions are served";

  // Its end gives everything back.
  first.reset();
  EXPECT_TRUE(WaitUntil([&] { return MessageBytesOfThisUid(daemon.Status()) == 0; },
                        absl::Seconds(10)))
      << MessageBytesOfThisUid(daemon.Status());
}

// The same budget holds what waits for clients that do not read: kernel
// output beyond their rings, in two sessions of one uid. The session that
// passes it ends, with its process's other sessions (acld cuts the
// connections of a process that does not read); the uid's other processes
// go on.
TEST(ChannelTest, WhatWaitsForOneUidsClientsIsBoundedTogether) {
  if (OnAclBackend()) {
    GTEST_SKIP() << "a vendor runtime prints its kernels' output itself, in acld";
  }
  AcldDaemon daemon({"--max_message_bytes_per_uid=1048576"});
  Process bystander({kScenarioClient, "hold", "1"}, daemon.client_env());
  ASSERT_TRUE(bystander.WaitForLine("ready", absl::Seconds(20))) << bystander.output();
  RingSession first(daemon.socket());
  RingSession second(daemon.socket());
  ASSERT_TRUE(first.on_ring() && second.on_ring());
  const uint64_t first_stream = SetDeviceOver(first);
  const uint64_t second_stream = SetDeviceOver(second);
  ASSERT_NE(first_stream, 0u);
  ASSERT_NE(second_stream, 0u);
  // 2 MiB of output, all but the ring's 256 KiB held by acld (29 messages):
  // 0.8 MiB charged beyond the session's allowance, of the uid's 1 MiB.
  ASSERT_TRUE(first.Send(PrintingLaunches(first_stream, 32)));
  constexpr uint64_t kFirstHolds = 28 * (64 << 10);
  const auto most_outbound = [&] {
    return MostHeld(daemon.Status(), &acl::v1::SessionInfo::outbound_bytes);
  };
  EXPECT_TRUE(WaitUntil([&] { return most_outbound() > kFirstHolds; }, absl::Seconds(10)))
      << most_outbound();
  ASSERT_EQ(daemon.Status().session_count(), 3u);
  ASSERT_TRUE(second.Send(PrintingLaunches(second_stream, 32)));
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 1; }, absl::Seconds(10)))
      << "the session whose output passed the uid's budget did not end";
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_EQ(status.sessions(0).pid(), bystander.pid());
  EXPECT_EQ(MessageBytesOfThisUid(status), 0u) << "the ended ones hold nothing";
  EXPECT_NE(ReadAll(daemon.dir() + "/acld.log").find("--max_message_bytes_per_uid"),
            std::string::npos);
  bystander.WriteLine("go");
  EXPECT_EQ(bystander.Wait(absl::Seconds(20)), 0) << bystander.output();
  EXPECT_NE(bystander.output().find("released codes=0 "), std::string::npos)
      << bystander.output();
}

// Kernel output (and every other event) waits in acld for a client that does
// not read: it is shown in aclctl (OUT). It is bounded: once the client's
// ring is full acld takes no more of its requests (it stalls only itself),
// and --max_queued_bytes_per_session bounds what its queued work adds.
TEST(ChannelTest, WhatWaitsForAClientThatDoesNotReadIsShownAndBounded) {
  if (OnAclBackend()) {
    GTEST_SKIP() << "a vendor runtime prints its kernels' output itself, in acld";
  }
  AcldDaemon daemon({"--max_queued_bytes_per_session=4194304"});
  RingSession hoarder(daemon.socket());
  ASSERT_TRUE(hoarder.on_ring());
  const uint64_t stream = SetDeviceOver(hoarder);
  ASSERT_NE(stream, 0u);
  // The client reads nothing more.
  ASSERT_TRUE(hoarder.Send(PrintingLaunches(stream, 32)));  // 2 MiB: past the ring, under the bound
  const auto outbound = [&]() -> uint64_t {
    const acl::v1::StatusReply status = daemon.Status();
    return status.sessions_size() == 1 ? status.sessions(0).outbound_bytes() : 0;
  };
  EXPECT_TRUE(WaitUntil([&] { return outbound() > (1u << 20); }, absl::Seconds(10)))
      << outbound();
  const auto [code, sessions] = daemon.Aclctl({"sessions"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(sessions.find("OUT"), std::string::npos) << sessions;
  // Others are served meanwhile (copies of 1 MiB: the flag above bounds
  // their queued work too).
  ExpectScenarioPasses({"tests/device_client", "roundtrip", "1"}, daemon.client_env());
  EXPECT_EQ(daemon.Status().session_count(), 1u) << "the hoarder stalls only itself";
}

TEST(ChannelTest, AClientThatBreaksItsChannelEndsOnlyItsOwnSession) {
  AcldDaemon daemon;
  Process bystander({kScenarioClient, "hold", "1"}, daemon.client_env());
  ASSERT_TRUE(bystander.WaitForLine("ready", absl::Seconds(20))) << bystander.output();
  RingSession attacker(daemon.socket());
  ASSERT_TRUE(attacker.on_ring());
  ASSERT_EQ(attacker.InitCountOverRing(), 0);
  ASSERT_EQ(daemon.Status().session_count(), 2u);
  attacker.BreakRing();
  EXPECT_TRUE(WaitUntil([&] { return daemon.Status().session_count() == 1; }, absl::Seconds(10)));
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.sessions_size(), 1);
  EXPECT_EQ(status.sessions(0).pid(), bystander.pid());
  EXPECT_NE(ReadAll(daemon.dir() + "/acld.log").find("its channel is unusable"), std::string::npos);
  // The bystander's session is untouched: it releases its references normally.
  bystander.WriteLine("go");
  EXPECT_EQ(bystander.Wait(absl::Seconds(20)), 0) << bystander.output();
  EXPECT_NE(bystander.output().find("released codes=0 "), std::string::npos)
      << bystander.output();
}

}  // namespace
}  // namespace acld_test
