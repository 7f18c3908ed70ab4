// The device plugin against a real acld (its admin socket, its quota groups)
// with the kubelet faked (tests/device_plugin_fakes.h): aclctl's device
// disable reaches ListAndWatch, Allocate makes a group acld serves, the
// kubelet's PodResources labels it and its container's end retires it
// (docs/kubernetes.md).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "daemon/server/socket_path.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/acl/v1/admin.grpc.pb.h"
#include "tests/acld_fixture.h"
#include "tests/device_plugin_fakes.h"
#include "tests/process.h"

namespace acld_test {
namespace {

using ::testing::ElementsAre;

constexpr char kPluginBinary[] = "tools/device_plugin/acld_device_plugin";
constexpr uint64_t kSlice = 1ull << 30;  // the sim's devices have 4 GiB: 4 slices each
constexpr absl::Duration kPatience = absl::Seconds(20);

class DevicePluginAcldTest : public ::testing::Test {
 protected:
  DevicePluginAcldTest()
      : kubelet_dir_(dir_.path() + "/device-plugins"),
        kubelet_socket_(kubelet_dir_ + "/kubelet.sock"),
        pods_socket_(dir_.path() + "/pod-resources.sock") {
    std::filesystem::create_directory(kubelet_dir_);
    kubelet_server_ =
        std::make_unique<UnixServer>(kubelet_socket_, std::vector<grpc::Service*>{&kubelet_});
    pods_server_ = std::make_unique<UnixServer>(pods_socket_, std::vector<grpc::Service*>{&pods_});
    admin_ = acl::v1::Admin::NewStub(grpc::CreateChannel("unix:" + acld_.admin_socket(),
                                                         grpc::InsecureChannelCredentials()));
    plugin_ = std::make_unique<Process>(std::vector<std::string>{
        kPluginBinary, "--admin_socket=" + acld_.admin_socket(),
        "--kubelet_socket=" + kubelet_socket_, "--pod_resources_socket=" + pods_socket_,
        "--whole_devices=0", "--sliced_devices=1", "--slice_bytes=" + std::to_string(kSlice),
        "--status_interval=50ms", "--watch_interval=100ms", "--reconcile_interval=100ms",
        "--retire_grace=1s"});
  }

  std::vector<acl::v1::GroupInfo> Groups() {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    acl::v1::GroupsReply reply;
    EXPECT_TRUE(admin_->ListGroups(&context, acl::v1::GroupsRequest(), &reply).ok());
    return {reply.groups().begin(), reply.groups().end()};
  }

  AcldDaemon acld_;
  TempDir dir_;
  const std::string kubelet_dir_;
  const std::string kubelet_socket_;
  const std::string pods_socket_;
  FakeKubelet kubelet_;
  FakePodResources pods_;
  std::unique_ptr<UnixServer> kubelet_server_;
  std::unique_ptr<UnixServer> pods_server_;
  std::unique_ptr<acl::v1::Admin::Stub> admin_;
  std::unique_ptr<Process> plugin_;
};

TEST_F(DevicePluginAcldTest, AclctlDeviceDisableReachesListAndWatch) {
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kPatience));
  auto slices = DialPlugin(kubelet_dir_ + "/acld-npu-memory.sock");
  auto whole = DialPlugin(kubelet_dir_ + "/acld-npu.sock");
  DeviceWatch slice_watch(*slices);
  DeviceWatch whole_watch(*whole);
  auto counts = [](int devices, size_t healthy) {
    return [=](const v1beta1::ListAndWatchResponse& response) {
      return response.devices_size() == devices && HealthyCount(response) == healthy;
    };
  };
  ASSERT_TRUE(slice_watch.WaitFor(counts(4, 4), kPatience));
  ASSERT_TRUE(whole_watch.WaitFor(counts(1, 1), kPatience));

  ASSERT_EQ(acld_.Aclctl({"device", "disable", "1"}).first, 0);
  ASSERT_TRUE(slice_watch.WaitFor(counts(4, 0), kPatience));
  ASSERT_EQ(acld_.Aclctl({"device", "enable", "1"}).first, 0);
  ASSERT_TRUE(slice_watch.WaitFor(counts(4, 4), kPatience));

  ASSERT_EQ(acld_.Aclctl({"device", "disable", "0"}).first, 0);
  ASSERT_TRUE(whole_watch.WaitFor(counts(1, 0), kPatience));
}

TEST_F(DevicePluginAcldTest, AllocateMakesAGroupThatIsLabelledThenRetired) {
  ASSERT_TRUE(kubelet_.WaitForRegistrations(2, kPatience));
  auto slices = DialPlugin(kubelet_dir_ + "/acld-npu-memory.sock");
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("npu-1-slice-0");
  request.mutable_container_requests(0)->add_devices_ids("npu-1-slice-3");
  grpc::ClientContext context;
  v1beta1::AllocateResponse response;
  const grpc::Status status = slices->Allocate(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  std::vector<acl::v1::GroupInfo> groups = Groups();
  ASSERT_EQ(groups.size(), 1u);
  const acl::v1::GroupInfo group = groups[0];
  ASSERT_EQ(group.devices_size(), 1);
  EXPECT_EQ(group.devices(0).device(), 1);
  EXPECT_EQ(group.devices(0).memory_limit(), 2 * kSlice);
  EXPECT_EQ(group.labels().at("acld.io/resource"), "acld.io/npu-memory");
  EXPECT_EQ(group.labels().at("acld.io/device-ids"), "1:0.3");
  // The mount is the group's directory, where acld serves the group's socket.
  ASSERT_EQ(response.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& answer = response.container_responses(0);
  ASSERT_EQ(answer.mounts_size(), 1);
  EXPECT_EQ(answer.mounts(0).host_path(), group.directory());
  EXPECT_EQ(answer.mounts(0).container_path(), "/run/acld");
  EXPECT_EQ(answer.envs().at("ACLD_ADDRESS"), "unix:/run/acld/acld.sock");
  EXPECT_TRUE(acld::server::SocketIsLive(group.directory() + "/acld.sock"));
  EXPECT_TRUE(acld::server::SocketIsLive(group.directory() + "/acld.sock.peer"));

  pods_.AddContainer("trainer", "team-a", "main", "acld.io/npu-memory",
                     {"npu-1-slice-3", "npu-1-slice-0"});
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::vector<acl::v1::GroupInfo> now = Groups();
        return now.size() == 1 && now[0].labels().count("pod") != 0 &&
               now[0].labels().at("pod") == "trainer" &&
               now[0].labels().at("namespace") == "team-a" &&
               now[0].labels().at("container") == "main";
      },
      kPatience));
  // aclctl shows them.
  const auto [code, listing] = acld_.Aclctl({"--json", "group", "list"});
  EXPECT_EQ(code, 0);
  EXPECT_NE(listing.find("trainer"), std::string::npos) << listing;

  // The container ends: the kubelet no longer lists it, and the group goes,
  // directory and all. acld lists a group no more once it is retired, a
  // moment before its sessions end and its directory is removed
  // (QuotaGroups::Delete), so the test waits for both.
  pods_.Set(v1::ListPodResourcesResponse());
  ASSERT_TRUE(WaitUntil(
      [&] { return Groups().empty() && !std::filesystem::exists(group.directory()); },
      kPatience));
}

}  // namespace
}  // namespace acld_test
