// Stand-ins for what the device plugin talks to, for tests without a
// cluster: acld's admin service, the kubelet's Registration service and its
// PodResources service, each served by this test process on a Unix socket in
// a temporary directory; and a client for the plugin's own socket, playing
// the kubelet's side of the DevicePlugin service.
#ifndef ACLD_TESTS_DEVICE_PLUGIN_FAKES_H_
#define ACLD_TESTS_DEVICE_PLUGIN_FAKES_H_

#include <map>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "proto/acl/v1/admin.grpc.pb.h"
#include "proto/k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "proto/k8s/podresources/v1/api.grpc.pb.h"

namespace acld_test {

// A gRPC server on `socket_path` with `services`; shut down when destroyed.
class UnixServer {
 public:
  UnixServer(const std::string& socket_path, const std::vector<grpc::Service*>& services);
  ~UnixServer();

 private:
  std::unique_ptr<grpc::Server> server_;
};

// acld's admin service, as far as the plugin uses it: GetStatus with devices
// whose health a test flips, and the group RPCs over an in-memory table that
// checks labels by acld's rules (proto/acl/v1/admin.proto).
class FakeAdmin final : public acl::v1::Admin::Service {
 public:
  // `groups_root`: GroupInfo.directory is <groups_root>/groups/<id>.
  FakeAdmin(int devices, uint64_t memory_bytes, std::string groups_root);

  void SetHealthy(int device, bool healthy);
  std::vector<acl::v1::CreateGroupRequest> creates() const;
  std::map<std::string, acl::v1::GroupInfo> groups() const;
  // Waits until `condition(groups)` holds; false after `timeout`.
  bool WaitForGroups(const std::function<bool(const std::map<std::string, acl::v1::GroupInfo>&)>&
                         condition,
                     absl::Duration timeout) const;

  grpc::Status GetStatus(grpc::ServerContext*, const acl::v1::StatusRequest*,
                         acl::v1::StatusReply* reply) override;
  grpc::Status CreateGroup(grpc::ServerContext*, const acl::v1::CreateGroupRequest* request,
                           acl::v1::GroupInfo* reply) override;
  grpc::Status ListGroups(grpc::ServerContext*, const acl::v1::GroupsRequest* request,
                          acl::v1::GroupsReply* reply) override;
  grpc::Status DeleteGroup(grpc::ServerContext*, const acl::v1::DeleteGroupRequest* request,
                           acl::v1::DeleteGroupReply* reply) override;
  grpc::Status LabelGroup(grpc::ServerContext*, const acl::v1::LabelGroupRequest* request,
                          acl::v1::GroupInfo* reply) override;

 private:
  const uint64_t memory_bytes_;
  const std::string groups_root_;
  mutable absl::Mutex mu_;
  std::vector<bool> healthy_ ABSL_GUARDED_BY(mu_);
  std::vector<acl::v1::CreateGroupRequest> creates_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, acl::v1::GroupInfo> groups_ ABSL_GUARDED_BY(mu_);
  int next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

// The kubelet's Registration service: records every Register.
class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override;
  std::vector<v1beta1::RegisterRequest> registrations() const;
  // Waits until `count` registrations arrived; false after `timeout`.
  bool WaitForRegistrations(size_t count, absl::Duration timeout) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<v1beta1::RegisterRequest> registrations_ ABSL_GUARDED_BY(mu_);
};

// The kubelet's PodResources service: List answers what the test set.
class FakePodResources final : public v1::PodResourcesLister::Service {
 public:
  void Set(v1::ListPodResourcesResponse response);
  // Adds one pod with one container holding `ids` of `resource`.
  void AddContainer(const std::string& pod, const std::string& namespace_name,
                    const std::string& container, const std::string& resource,
                    const std::vector<std::string>& ids);
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* reply) override;

 private:
  absl::Mutex mu_;
  v1::ListPodResourcesResponse response_ ABSL_GUARDED_BY(mu_);
};

// The kubelet's side of a plugin socket.
std::unique_ptr<v1beta1::DevicePlugin::Stub> DialPlugin(const std::string& socket_path);

// A ListAndWatch stream, read on a thread of its own so that a test can wait
// for an update with a deadline.
class DeviceWatch {
 public:
  explicit DeviceWatch(v1beta1::DevicePlugin::Stub& plugin);
  ~DeviceWatch();  // cancels the stream and joins the reader

  // Waits for an update for which `condition` holds (the last one received
  // counts); false after `timeout`.
  bool WaitFor(const std::function<bool(const v1beta1::ListAndWatchResponse&)>& condition,
               absl::Duration timeout);
  size_t updates() const;

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader_;
  mutable absl::Mutex mu_;
  std::vector<v1beta1::ListAndWatchResponse> received_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// "Healthy" devices of a ListAndWatch update, and all of them.
size_t HealthyCount(const v1beta1::ListAndWatchResponse& response);

}  // namespace acld_test

#endif  // ACLD_TESTS_DEVICE_PLUGIN_FAKES_H_
