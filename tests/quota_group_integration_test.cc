// Quota groups (docs/groups.md) with a real acld and real client processes:
// pretend pods (a client in its own mount and pid namespaces with a private
// /dev/shm and the group's directory mounted at /run/acld), limits that hold
// for all of a group's processes together, devices renumbered from 0,
// membership bound to the socket, deletion, and restarts.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "daemon/server/socket_path.h"
#include "proto/acl/v1/admin.pb.h"
#include "tests/acld_fixture.h"
#include "tests/process.h"
#include "tests/raw_session.h"

namespace acld_test {
namespace {

constexpr char kGroupClient[] = "tests/group_client";
constexpr uint64_t kMiB = 1 << 20;

acl::v1::GroupInfo CreateGroup(const AcldDaemon& daemon, std::vector<std::string> args) {
  args.insert(args.begin(), {"--json", "group", "create"});
  const auto [code, json] = daemon.Aclctl(args);
  EXPECT_EQ(code, 0) << json;
  acl::v1::GroupInfo group;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &group).ok()) << json;
  return group;
}

// `aclctl --json group show` of `group`.
acl::v1::GroupInfo Show(const AcldDaemon& daemon, const acl::v1::GroupInfo& group) {
  const auto [code, json] = daemon.Aclctl({"--json", "group", "show", group.id()});
  EXPECT_EQ(code, 0) << json;
  acl::v1::GroupInfo shown;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &shown).ok()) << json;
  return shown;
}

// What messages, logs and metrics call a group (docs/groups.md).
std::string Name(const acl::v1::GroupInfo& group) { return group.id().substr(0, 8); }

std::vector<acl::v1::SessionInfo> SessionsOf(const AcldDaemon& daemon, const std::string& group) {
  std::vector<acl::v1::SessionInfo> sessions;
  const acl::v1::StatusReply status = daemon.Status();
  for (const acl::v1::SessionInfo& session : status.sessions()) {
    if (session.group() == group) sessions.push_back(session);
  }
  return sessions;
}

// A client's environment in a pretend pod: what the device plugin hands a
// container. LeakSanitizer cannot stop the threads of a pid namespace's init
// (see sharing_integration_test.cc); these clients' leaks are checked elsewhere.
std::map<std::string, std::string> PodEnv() {
  return {{"ACLD_ADDRESS", "unix:/run/acld/acld.sock"},
          {"ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1"}};
}

// `command` in a pretend pod of `group`: its own mount and pid namespaces, a
// private /dev/shm and /run, and the group's directory bound at /run/acld.
std::vector<std::string> InPod(const acl::v1::GroupInfo& group, const std::string& command) {
  return {"/usr/bin/unshare", "--mount", "--pid", "--fork", "/bin/sh", "-c",
          absl::StrCat("mount -t tmpfs -o size=1m tmpfs /dev/shm && mount -t tmpfs tmpfs /run && "
                       "mkdir /run/acld && mount --bind ",
                       group.directory(), " /run/acld && exec ", command)};
}

// `command` as another process of the pod whose process has host pid `pid`.
std::vector<std::string> JoinPod(int32_t pid, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"/usr/bin/nsenter", "--target", absl::StrCat(pid), "--mount",
                                   "--pid", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// nsenter starts in the target's root: a path it runs must be absolute.
std::string RunfilePath(const std::string& relative) {
  return (std::filesystem::current_path() / relative).string();
}

std::string Hold(int device, uint64_t bytes) {
  return absl::StrCat(kGroupClient, " hold ", device, " ", bytes);
}

TEST(QuotaGroupTest, ThePodsProcessesTogetherAreHeldToItsMemoryWhileAnotherPodIsNot) {
  AcldDaemon daemon;
  const acl::v1::GroupInfo pod_a = CreateGroup(daemon, {"--devices=0", "--memory=3145728"});
  const acl::v1::GroupInfo pod_b = CreateGroup(daemon, {"--devices=0", "--memory=3145728"});

  Process first(InPod(pod_a, Hold(0, 2 * kMiB)), PodEnv());
  ASSERT_TRUE(first.WaitForLine("ready", absl::Seconds(20))) << first.output();
  EXPECT_NE(first.output().find("malloc 0"), std::string::npos) << first.output();
  std::vector<acl::v1::SessionInfo> sessions = SessionsOf(daemon, pod_a.id());
  ASSERT_EQ(sessions.size(), 1u);
  // acld knows it by its host pid, not the 1 it has in its namespace.
  EXPECT_NE(sessions[0].pid(), 1);
  EXPECT_NE(sessions[0].pid(), first.pid()) << "unshare forked: the client is its child";

  // A second process of the same pod (its namespaces joined): 2 + 2 MiB
  // pass the pod's 3 MiB, though each alone fits.
  Process second(JoinPod(sessions[0].pid(),
                         {RunfilePath(kGroupClient), "hold", "0", absl::StrCat(2 * kMiB)}),
                 PodEnv());
  ASSERT_TRUE(second.WaitForLine("ready", absl::Seconds(20))) << second.output();
  EXPECT_NE(second.output().find(absl::StrCat("malloc ", 207001)), std::string::npos)
      << second.output();
  // Named by its public name, never by the id that opens its directory.
  EXPECT_NE(second.output().find("device memory quota of group " + Name(pod_a)),
            std::string::npos)
      << second.output();

  // What it sees of the device is its pod's share: 3 MiB, 1 of them free.
  EXPECT_NE(second.output().find(absl::StrCat("meminfo ", 3 * kMiB - ReservedBytes(2 * kMiB), " ",
                                              3 * kMiB)),
            std::string::npos)
      << second.output();

  // Pod B shares the device but not pod A's quota.
  Process other(InPod(pod_b, Hold(0, 2 * kMiB)), PodEnv());
  ASSERT_TRUE(other.WaitForLine("ready", absl::Seconds(20))) << other.output();
  EXPECT_NE(other.output().find("malloc 0"), std::string::npos) << other.output();

  // What the operator sees: pod A holds 2 MiB of its 3, pod B 2 of its 3.
  const auto [code, json] = daemon.Aclctl({"--json", "group", "list"});
  ASSERT_EQ(code, 0) << json;
  acl::v1::GroupsReply groups;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &groups).ok()) << json;
  ASSERT_EQ(groups.groups_size(), 2);
  for (const acl::v1::GroupInfo& group : groups.groups()) {
    ASSERT_EQ(group.devices_size(), 1);
    EXPECT_EQ(group.devices(0).memory_used(), ReservedBytes(2 * kMiB)) << group.id();
    EXPECT_EQ(group.sessions(), group.id() == pod_a.id() ? 2u : 1u);
  }
  // The joined process first: the end of its namespace's init kills it.
  for (Process* process : {&second, &first, &other}) {
    process->WriteLine("done");
    EXPECT_EQ(process->Wait(absl::Seconds(20)), 0) << process->output();
  }
}

TEST(QuotaGroupTest, APodSeesItsGroupsDevicesFromZeroAndCopiesAndCallsBackThroughThem) {
  AcldDaemon daemon;  // two devices, on either backend
  const acl::v1::GroupInfo group = CreateGroup(daemon, {"--devices=1"});

  Process held(InPod(group, Hold(0, kMiB)), PodEnv());
  ASSERT_TRUE(held.WaitForLine("ready", absl::Seconds(20))) << held.output();
  EXPECT_NE(held.output().find("devices 1"), std::string::npos) << held.output();
  EXPECT_NE(held.output().find("malloc 0"), std::string::npos) << held.output();
  // Its device 0 is the host's device 1.
  const acl::v1::StatusReply status = daemon.Status();
  ASSERT_EQ(status.devices_size(), 2);
  EXPECT_EQ(status.devices(0).used_bytes(), 0u);
  EXPECT_EQ(status.devices(1).used_bytes(), ReservedBytes(kMiB));
  held.WriteLine("done");
  EXPECT_EQ(held.Wait(absl::Seconds(20)), 0) << held.output();

  // Device 1 does not exist for it.
  const auto [outside_code, outside] = RunToCompletion(InPod(group, Hold(1, kMiB)), PodEnv());
  EXPECT_EQ(outside_code, 0) << outside;
  EXPECT_NE(outside.find("set 107001"), std::string::npos) << outside;
  EXPECT_NE(outside.find("quota group has 1 devices"), std::string::npos) << outside;

  // Copies (its channel, host memory and staging are memfds), host memory
  // and callbacks work through the group's sockets.
  const auto [copies_code, copies] =
      RunToCompletion(InPod(group, "tests/device_client roundtrip 8"), PodEnv(), absl::Seconds(60));
  EXPECT_EQ(copies_code, 0) << copies;
  EXPECT_NE(copies.find("roundtrip 8388608 bytes ok"), std::string::npos) << copies;
  const auto [callbacks_code, callbacks] =
      RunToCompletion(InPod(group, "tests/callback_client many 20"), PodEnv(), absl::Seconds(60));
  EXPECT_EQ(callbacks_code, 0) << callbacks;
  EXPECT_NE(callbacks.find("many 20 ok"), std::string::npos) << callbacks;
}

// An IPC event on a host device outside the group is not opened by a pod's
// process, and leaves it no handle: before, only the reply was refused (for
// its device id) while the handle stayed in the session, its number
// guessable, usable for waits and records.
TEST(QuotaGroupTest, AnIpcEventOfADeviceOutsideTheGroupIsNotOpened) {
  AcldDaemon daemon;  // two devices, on either backend
  const acl::v1::GroupInfo group = CreateGroup(daemon, {"--devices=1"});
  Process owner({"tests/sharing_client", "event_owner"}, daemon.client_env());  // host device 0
  ASSERT_TRUE(owner.WaitForLine("handle", absl::Seconds(20))) << owner.output();
  const size_t at = owner.output().find("handle ");
  ASSERT_NE(at, std::string::npos);
  const std::string handle = owner.output().substr(at + 7, 64);
  Process opener(InPod(group, "tests/sharing_client event_opener"), PodEnv());
  opener.WriteLine("handle " + handle);
  ASSERT_TRUE(opener.WaitForLine("opened", absl::Seconds(20))) << opener.output();
  EXPECT_NE(opener.output().find("opened 107001"), std::string::npos) << opener.output();
  const auto [code, json] = daemon.Aclctl({"--json", "sharing"});
  ASSERT_EQ(code, 0) << json;
  acl::v1::SharingReply sharing;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &sharing).ok()) << json;
  ASSERT_EQ(sharing.events_size(), 1) << json;
  EXPECT_EQ(sharing.events(0).openers_size(), 0) << json;
  opener.WriteLine("exit");
  EXPECT_EQ(opener.Wait(absl::Seconds(20)), 0) << opener.output();
  owner.WriteLine("exit");
  EXPECT_EQ(owner.Wait(absl::Seconds(20)), 0) << owner.output();
}

TEST(QuotaGroupTest, ATokenIsRedeemableOnlyOnTheRuntimeSocketOfTheDeskThatIssuedIt) {
  AcldDaemon daemon;
  const acl::v1::GroupInfo group = CreateGroup(daemon, {"--devices=0"});
  const std::string group_socket = group.directory() + "/acld.sock";
  {
    RawSession host_token_at_group(group_socket, true, daemon.socket() + ".peer");
    EXPECT_FALSE(host_token_at_group.opened());
    RawSession group_token_at_host(daemon.socket(), true, group_socket + ".peer");
    EXPECT_FALSE(group_token_at_host.opened());
    EXPECT_TRUE(daemon.Status().sessions().empty());
  }
  // A connection to its identity socket that starts a request and never ends
  // it is told to come back by the group's desk, which aclctl counts there,
  // not on the host's.
  {
    const uint64_t host_busy = daemon.Status().identity_busy();
    const int partial = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un address = acld::server::UnixSocketAddress(group_socket + ".peer");
    ASSERT_EQ(connect(partial, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    ASSERT_EQ(write(partial, "T", 1), 1);
    char answer[256];
    EXPECT_GT(read(partial, answer, sizeof(answer)), 0) << "never told to come back";
    close(partial);
    EXPECT_EQ(Show(daemon, group).identity_busy(), 1u);
    EXPECT_EQ(daemon.Status().identity_busy(), host_busy);
    EXPECT_TRUE(WaitUntil([&] { return Show(daemon, group).pending_identity_connections() == 0; },
                          absl::Seconds(5)));
  }
  RawSession member(group_socket);
  ASSERT_TRUE(member.opened());
  RawSession outsider(daemon.socket());
  ASSERT_TRUE(outsider.opened());
  EXPECT_EQ(SessionsOf(daemon, group.id()).size(), 1u);
  EXPECT_EQ(SessionsOf(daemon, "").size(), 1u);
}

TEST(QuotaGroupTest, ItsCapsHoldForAllOfItsProcessesTogether) {
  AcldDaemon daemon;
  const acl::v1::GroupInfo group =
      CreateGroup(daemon, {"--devices=0", "--sessions=2", "--streams=3"});
  const std::map<std::string, std::string> env = {
      {"ACLD_ADDRESS", "unix:" + group.directory() + "/acld.sock"}};
  // The first holds two of the group's three streams (its device's default
  // stream and one it creates); the second's default stream is the third,
  // and the one it creates is refused, though its own quota allows 4096.
  Process first({kGroupClient, "hold", "0", "4096", "1"}, env);
  ASSERT_TRUE(first.WaitForLine("ready", absl::Seconds(20))) << first.output();
  EXPECT_NE(first.output().find("stream 0"), std::string::npos) << first.output();
  Process second({kGroupClient, "hold", "0", "4096", "1"}, env);
  ASSERT_TRUE(second.WaitForLine("ready", absl::Seconds(20))) << second.output();
  EXPECT_EQ(second.output().find("stream 0"), std::string::npos) << second.output();
  EXPECT_NE(second.output().find("processes of quota group " + Name(group)), std::string::npos)
      << second.output();
  // Two sessions are all it may have, whatever their uid.
  const auto [third_code, third] = RunToCompletion({kGroupClient, "hold", "0", "4096"}, env);
  EXPECT_NE(third_code, 0) << third;
  EXPECT_NE(third.find("sessions of quota group " + Name(group)), std::string::npos) << third;
  // Outside the group, the host's caps apply as before.
  Process outside({kGroupClient, "hold", "0", "4096"}, daemon.client_env());
  ASSERT_TRUE(outside.WaitForLine("ready", absl::Seconds(20))) << outside.output();
  EXPECT_NE(outside.output().find("malloc 0"), std::string::npos) << outside.output();
  for (Process* process : {&first, &second, &outside}) {
    process->WriteLine("done");
    EXPECT_EQ(process->Wait(absl::Seconds(20)), 0) << process->output();
  }
}

TEST(QuotaGroupTest, DeletingAGroupEvictsItsSessionsAndRemovesItsDirectory) {
  AcldDaemon daemon;
  const acl::v1::GroupInfo group = CreateGroup(daemon, {"--devices=0"});
  Process member({kGroupClient, "hold", "0", "4096"},
                 {{"ACLD_ADDRESS", "unix:" + group.directory() + "/acld.sock"}});
  ASSERT_TRUE(member.WaitForLine("ready", absl::Seconds(20))) << member.output();
  const auto [code, output] = daemon.Aclctl({"group", "delete", group.id()});
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("1 sessions evicted"), std::string::npos) << output;
  struct stat info {};
  EXPECT_NE(stat(group.directory().c_str(), &info), 0) << "its directory is gone";
  EXPECT_TRUE(daemon.Status().sessions().empty());
  EXPECT_NE(daemon.Aclctl({"group", "show", group.id()}).first, 0);
  member.WriteLine("done");
  EXPECT_TRUE(member.Wait(absl::Seconds(20)).has_value()) << member.output();
}

TEST(QuotaGroupTest, AGroupSurvivesARestartOfAcldInTheDirectoryContainersMounted) {
  TempDir sockets;
  TempDir state;
  const std::vector<std::string> flags = {"--state_dir=" + state.path() + "/acld"};
  acl::v1::GroupInfo group;
  struct stat before {};
  {
    AcldDaemon daemon(flags, sockets.path());
    group = CreateGroup(daemon, {"--devices=0", "--memory=1048576", "--label", "pod=p1"});
    ASSERT_EQ(stat(group.directory().c_str(), &before), 0);
    EXPECT_EQ(daemon.Stop(), 0);
    struct stat stopped {};
    ASSERT_EQ(stat(group.directory().c_str(), &stopped), 0) << "the directory stays";
    EXPECT_NE(stat((group.directory() + "/acld.sock").c_str(), &stopped), 0) << "its socket goes";
  }
  AcldDaemon restarted(flags, sockets.path());
  const acl::v1::GroupInfo shown = Show(restarted, group);
  ASSERT_EQ(shown.labels().count("pod"), 1u);
  EXPECT_EQ(shown.labels().at("pod"), "p1");
  ASSERT_EQ(shown.devices_size(), 1);
  EXPECT_EQ(shown.devices(0).memory_limit(), kMiB);
  struct stat after {};
  ASSERT_EQ(stat(group.directory().c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the same directory, not one made anew";
  // Its limit holds again for processes connecting there.
  const auto [client_code, client] =
      RunToCompletion({kGroupClient, "hold", "0", absl::StrCat(2 * kMiB)},
                      {{"ACLD_ADDRESS", "unix:" + group.directory() + "/acld.sock"}});
  EXPECT_EQ(client_code, 0) << client;
  EXPECT_NE(client.find("malloc 207001"), std::string::npos) << client;
}

}  // namespace
}  // namespace acld_test
