// The device plugin binary against a fake kubelet (Registration and
// PodResources) and a fake acld admin service, all on Unix sockets in a
// temporary directory: registration, kubelet restarts, ListAndWatch health,
// GetPreferredAllocation, Allocate into groups, pod labels and retirement
// (docs/kubernetes.md). tests/device_plugin_acld_test.cc runs it against a
// real acld.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/acld_fixture.h"
#include "tests/device_plugin_fakes.h"
#include "tests/process.h"

namespace acld_test {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr char kPluginBinary[] = "tools/device_plugin/acld_device_plugin";
constexpr uint64_t kSlice = 1 << 20;
constexpr absl::Duration kPatience = absl::Seconds(20);

class DevicePluginTest : public ::testing::Test {
 protected:
  DevicePluginTest()
      : kubelet_dir_(dir_.path() + "/device-plugins"),
        kubelet_socket_(kubelet_dir_ + "/kubelet.sock"),
        admin_socket_(dir_.path() + "/admin.sock"),
        pods_socket_(dir_.path() + "/pod-resources.sock"),
        // Two devices of 4 slices each.
        admin_(2, 4 * kSlice, dir_.path()) {
    std::filesystem::create_directory(kubelet_dir_);
    admin_server_ = std::make_unique<UnixServer>(admin_socket_, std::vector<grpc::Service*>{&admin_});
    pods_server_ = std::make_unique<UnixServer>(pods_socket_, std::vector<grpc::Service*>{&pods_});
    kubelet_ = std::make_unique<FakeKubelet>();
    kubelet_server_ =
        std::make_unique<UnixServer>(kubelet_socket_, std::vector<grpc::Service*>{kubelet_.get()});
  }

  void StartPlugin(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {kPluginBinary,
                                     "--admin_socket=" + admin_socket_,
                                     "--kubelet_socket=" + kubelet_socket_,
                                     "--pod_resources_socket=" + pods_socket_,
                                     "--whole_devices=0",
                                     "--sliced_devices=1",
                                     "--slice_bytes=" + std::to_string(kSlice),
                                     "--status_interval=50ms",
                                     "--watch_interval=100ms",
                                     "--reconcile_interval=100ms"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    plugin_ = std::make_unique<Process>(argv);
  }

  std::string PluginSocket(const std::string& name) const { return kubelet_dir_ + "/" + name; }

  // Starts the plugin and waits for both registrations.
  void StartRegistered(const std::vector<std::string>& extra = {}) {
    StartPlugin(extra);
    ASSERT_TRUE(kubelet_->WaitForRegistrations(2, kPatience));
  }

  TempDir dir_;
  const std::string kubelet_dir_;
  const std::string kubelet_socket_;
  const std::string admin_socket_;
  const std::string pods_socket_;
  FakeAdmin admin_;
  FakePodResources pods_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<UnixServer> admin_server_;
  std::unique_ptr<UnixServer> pods_server_;
  std::unique_ptr<UnixServer> kubelet_server_;
  std::unique_ptr<Process> plugin_;
};

std::vector<std::string> Names(const std::vector<v1beta1::RegisterRequest>& registrations) {
  std::vector<std::string> names;
  for (const auto& request : registrations) names.push_back(request.resource_name());
  return names;
}

TEST_F(DevicePluginTest, RegistersEachResourceNameWithItsOwnSocket) {
  StartRegistered();
  const std::vector<v1beta1::RegisterRequest> registrations = kubelet_->registrations();
  ASSERT_EQ(registrations.size(), 2u);
  EXPECT_THAT(Names(registrations), UnorderedElementsAre("acld.io/npu", "acld.io/npu-memory"));
  for (const v1beta1::RegisterRequest& request : registrations) {
    EXPECT_EQ(request.version(), "v1beta1");
    EXPECT_TRUE(request.options().get_preferred_allocation_available());
    EXPECT_FALSE(request.options().pre_start_required());
    const std::string expected = request.resource_name() == "acld.io/npu"
                                     ? "acld-npu.sock"
                                     : "acld-npu-memory.sock";
    EXPECT_EQ(request.endpoint(), expected);
    // The endpoint serves the DevicePlugin service, as the kubelet will call it.
    auto plugin = DialPlugin(PluginSocket(request.endpoint()));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1beta1::DevicePluginOptions options;
    ASSERT_TRUE(plugin->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
    EXPECT_TRUE(options.get_preferred_allocation_available());
    grpc::ClientContext prestart_context;
    v1beta1::PreStartContainerResponse prestart;
    EXPECT_TRUE(
        plugin->PreStartContainer(&prestart_context, v1beta1::PreStartContainerRequest(), &prestart)
            .ok());
  }
}

TEST_F(DevicePluginTest, RefusesADeviceConfiguredWholeAndSliced) {
  StartPlugin({"--whole_devices=0,1"});  // --sliced_devices=1 too
  EXPECT_EQ(plugin_->Wait(absl::Seconds(10)), 2);
  EXPECT_TRUE(kubelet_->registrations().empty());
}

TEST_F(DevicePluginTest, SigtermEndsStreamsAndRemovesItsSockets) {
  StartRegistered();
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  DeviceWatch watch(*slices);
  ASSERT_TRUE(watch.WaitFor(
      [](const v1beta1::ListAndWatchResponse& response) { return response.devices_size() == 4; },
      kPatience));
  plugin_->Signal(SIGTERM);
  EXPECT_EQ(plugin_->Wait(absl::Seconds(10)), 0);
  EXPECT_FALSE(std::filesystem::exists(PluginSocket("acld-npu.sock")));
  EXPECT_FALSE(std::filesystem::exists(PluginSocket("acld-npu-memory.sock")));
  EXPECT_TRUE(std::filesystem::exists(kubelet_socket_));  // the kubelet's stays
}

TEST_F(DevicePluginTest, ListAndWatchFollowsAcldsDeviceHealth) {
  StartRegistered();
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  auto whole = DialPlugin(PluginSocket("acld-npu.sock"));
  DeviceWatch slice_watch(*slices);
  DeviceWatch whole_watch(*whole);
  auto all_healthy = [](size_t count) {
    return [count](const v1beta1::ListAndWatchResponse& response) {
      return static_cast<size_t>(response.devices_size()) == count &&
             HealthyCount(response) == count;
    };
  };
  ASSERT_TRUE(slice_watch.WaitFor(all_healthy(4), kPatience));
  ASSERT_TRUE(whole_watch.WaitFor(all_healthy(1), kPatience));

  // Device 1 (sliced) goes out: each of its slices turns unhealthy; device 0
  // is untouched.
  admin_.SetHealthy(1, false);
  ASSERT_TRUE(slice_watch.WaitFor(
      [](const v1beta1::ListAndWatchResponse& response) {
        return response.devices_size() == 4 && HealthyCount(response) == 0;
      },
      kPatience));
  EXPECT_EQ(whole_watch.updates(), 1u);
  admin_.SetHealthy(1, true);
  ASSERT_TRUE(slice_watch.WaitFor(all_healthy(4), kPatience));

  // acld gone: every device is unhealthy, still listed.
  admin_server_.reset();
  ASSERT_TRUE(whole_watch.WaitFor(
      [](const v1beta1::ListAndWatchResponse& response) {
        return response.devices_size() == 1 && HealthyCount(response) == 0;
      },
      kPatience));
  admin_server_ = std::make_unique<UnixServer>(admin_socket_, std::vector<grpc::Service*>{&admin_});
  ASSERT_TRUE(whole_watch.WaitFor(all_healthy(1), kPatience));
}

TEST_F(DevicePluginTest, ReRegistersWhenTheKubeletRestarts) {
  StartRegistered();
  // The kubelet restarts: it wipes its directory (the plugin's sockets with
  // it) and serves a new registration socket.
  kubelet_server_.reset();
  for (const auto& entry : std::filesystem::directory_iterator(kubelet_dir_)) {
    std::filesystem::remove(entry.path());
  }
  kubelet_ = std::make_unique<FakeKubelet>();
  kubelet_server_ =
      std::make_unique<UnixServer>(kubelet_socket_, std::vector<grpc::Service*>{kubelet_.get()});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(2, kPatience));
  EXPECT_THAT(Names(kubelet_->registrations()),
              UnorderedElementsAre("acld.io/npu", "acld.io/npu-memory"));
  // Its sockets are back and serve.
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  DeviceWatch watch(*slices);
  EXPECT_TRUE(watch.WaitFor(
      [](const v1beta1::ListAndWatchResponse& response) { return response.devices_size() == 4; },
      kPatience));
}

TEST_F(DevicePluginTest, PreferredAllocationPacksSlicesOntoOneDevice) {
  StartPlugin({"--sliced_devices=0,1", "--whole_devices=none"});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, kPatience));
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  v1beta1::PreferredAllocationRequest request;
  v1beta1::ContainerPreferredAllocationRequest* container = request.add_container_requests();
  // Device 0 has 2 slices free, device 1 all 4: 3 slices fit device 1 alone.
  for (const char* id : {"npu-0-slice-1", "npu-0-slice-3", "npu-1-slice-0", "npu-1-slice-1",
                         "npu-1-slice-2", "npu-1-slice-3"}) {
    container->add_available_deviceids(id);
  }
  container->set_allocation_size(3);
  grpc::ClientContext context;
  v1beta1::PreferredAllocationResponse response;
  ASSERT_TRUE(slices->GetPreferredAllocation(&context, request, &response).ok());
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_THAT(response.container_responses(0).deviceids(),
              ElementsAre("npu-1-slice-0", "npu-1-slice-1", "npu-1-slice-2"));

  // A must-include slice on device 0 keeps the rest there while it lasts.
  container->add_must_include_deviceids("npu-0-slice-3");
  container->set_allocation_size(2);
  grpc::ClientContext must_context;
  ASSERT_TRUE(slices->GetPreferredAllocation(&must_context, request, &response).ok());
  EXPECT_THAT(response.container_responses(0).deviceids(),
              ElementsAre("npu-0-slice-1", "npu-0-slice-3"));

  container->add_available_deviceids("npu-0");  // not a slice
  grpc::ClientContext bad_context;
  EXPECT_EQ(slices->GetPreferredAllocation(&bad_context, request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(DevicePluginTest, AllocateOfSlicesCreatesAGroupAndMountsIt) {
  StartRegistered();
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  v1beta1::AllocateRequest request;
  v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
  container->add_devices_ids("npu-1-slice-3");
  container->add_devices_ids("npu-1-slice-0");
  container->add_devices_ids("npu-1-slice-1");
  grpc::ClientContext context;
  v1beta1::AllocateResponse response;
  const grpc::Status status = slices->Allocate(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const std::vector<acl::v1::CreateGroupRequest> creates = admin_.creates();
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_THAT(creates[0].devices(), ElementsAre(1));
  EXPECT_THAT(creates[0].memory_bytes(), ElementsAre(3 * kSlice));
  EXPECT_EQ(creates[0].labels().at("acld.io/resource"), "acld.io/npu-memory");
  EXPECT_EQ(creates[0].labels().at("acld.io/device-ids"), "1:0-1.3");

  const std::map<std::string, acl::v1::GroupInfo> groups = admin_.groups();
  ASSERT_EQ(groups.size(), 1u);
  const acl::v1::GroupInfo& group = groups.begin()->second;
  ASSERT_EQ(response.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& answer = response.container_responses(0);
  ASSERT_EQ(answer.mounts_size(), 1);
  EXPECT_EQ(answer.mounts(0).host_path(), group.directory());
  EXPECT_EQ(answer.mounts(0).container_path(), "/run/acld");
  EXPECT_TRUE(answer.mounts(0).read_only());
  EXPECT_EQ(answer.envs().at("ACLD_ADDRESS"), "unix:/run/acld/acld.sock");

  // Whole devices: no memory limit.
  auto whole = DialPlugin(PluginSocket("acld-npu.sock"));
  v1beta1::AllocateRequest whole_request;
  whole_request.add_container_requests()->add_devices_ids("npu-0");
  grpc::ClientContext whole_context;
  ASSERT_TRUE(whole->Allocate(&whole_context, whole_request, &response).ok());
  ASSERT_EQ(admin_.creates().size(), 2u);
  EXPECT_THAT(admin_.creates()[1].devices(), ElementsAre(0));
  EXPECT_TRUE(admin_.creates()[1].memory_bytes().empty());
}

TEST_F(DevicePluginTest, AllocateRefusesUnknownAndDuplicateIdsWithoutCreatingGroups) {
  StartRegistered();
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  auto refused = [&](std::vector<std::vector<std::string>> containers) {
    v1beta1::AllocateRequest request;
    for (const auto& ids : containers) {
      v1beta1::ContainerAllocateRequest* container = request.add_container_requests();
      for (const std::string& id : ids) container->add_devices_ids(id);
    }
    grpc::ClientContext context;
    v1beta1::AllocateResponse response;
    const grpc::Status status = slices->Allocate(&context, request, &response);
    return status.error_code() == grpc::StatusCode::INVALID_ARGUMENT;
  };
  EXPECT_TRUE(refused({{"npu-1-slice-9"}}));                    // past the device's memory
  EXPECT_TRUE(refused({{"npu-0-slice-0"}}));                    // device 0 is sold whole
  EXPECT_TRUE(refused({{"npu-1-slice-0", "npu-1-slice-0"}}));  // twice in one container
  EXPECT_TRUE(refused({{"npu-1-slice-0"}, {"npu-1-slice-0"}}));  // in two containers
  EXPECT_TRUE(refused({{"npu-1-slice-0"}, {"garbage"}}));        // all or nothing
  EXPECT_TRUE(refused({}));
  EXPECT_TRUE(admin_.creates().empty());
  EXPECT_TRUE(admin_.groups().empty());
}

TEST_F(DevicePluginTest, LabelsGroupsWithTheirPodsAndRetiresThoseOfGoneContainers) {
  StartRegistered({"--retire_grace=1s"});
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("npu-1-slice-2");
  request.add_container_requests()->add_devices_ids("npu-1-slice-3");
  grpc::ClientContext context;
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(slices->Allocate(&context, request, &response).ok());
  ASSERT_EQ(admin_.groups().size(), 2u);
  // The kubelet lists the pod's two containers.
  pods_.AddContainer("trainer-0", "team-a", "worker", "acld.io/npu-memory", {"npu-1-slice-2"});
  pods_.AddContainer("trainer-1", "team-a", "worker", "acld.io/npu-memory", {"npu-1-slice-3"});
  auto labelled = [](const std::map<std::string, acl::v1::GroupInfo>& groups) {
    std::set<std::string> pods;
    for (const auto& [id, group] : groups) {
      const auto& labels = group.labels();
      if (labels.count("pod") == 0 || labels.at("namespace") != "team-a" ||
          labels.at("container") != "worker") {
        return false;
      }
      const std::string expected =
          labels.at("acld.io/device-ids") == "1:2" ? "trainer-0" : "trainer-1";
      if (labels.at("pod") != expected) return false;
      pods.insert(labels.at("pod"));
    }
    return pods.size() == 2;
  };
  ASSERT_TRUE(admin_.WaitForGroups(labelled, kPatience));

  // A restarted plugin carries on from the labels: trainer-1 goes away, and
  // the new plugin retires its group, not trainer-0's.
  plugin_.reset();
  StartPlugin({"--retire_grace=1s"});
  v1::ListPodResourcesResponse remaining;
  v1::PodResources* pod = remaining.add_pod_resources();
  pod->set_name("trainer-0");
  pod->set_namespace_("team-a");
  v1::ContainerResources* container = pod->add_containers();
  container->set_name("worker");
  v1::ContainerDevices* devices = container->add_devices();
  devices->set_resource_name("acld.io/npu-memory");
  devices->add_device_ids("npu-1-slice-2");
  pods_.Set(remaining);
  ASSERT_TRUE(admin_.WaitForGroups(
      [](const std::map<std::string, acl::v1::GroupInfo>& groups) {
        return groups.size() == 1 && groups.begin()->second.labels().at("pod") == "trainer-0";
      },
      kPatience));

}

TEST_F(DevicePluginTest, AllocateRetiresTheStaleGroupOfIdsTheKubeletGivesAgain) {
  // A long grace: only Allocate can retire the first group here.
  StartRegistered({"--retire_grace=1h"});
  auto slices = DialPlugin(PluginSocket("acld-npu-memory.sock"));
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("npu-1-slice-2");
  v1beta1::AllocateResponse response;
  grpc::ClientContext first;
  ASSERT_TRUE(slices->Allocate(&first, request, &response).ok());
  const std::string stale = admin_.groups().begin()->first;
  // The container never started (or is gone): the kubelet gives the slice to
  // another one.
  grpc::ClientContext second;
  ASSERT_TRUE(slices->Allocate(&second, request, &response).ok());
  const std::map<std::string, acl::v1::GroupInfo> groups = admin_.groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_NE(groups.begin()->first, stale);
  EXPECT_EQ(response.container_responses(0).mounts(0).host_path(),
            groups.begin()->second.directory());
}

}  // namespace
}  // namespace acld_test
