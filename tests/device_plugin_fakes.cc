#include "tests/device_plugin_fakes.h"

#include <unistd.h>

#include <thread>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"

namespace acld_test {
namespace {

// acld's label rules (proto/acl/v1/admin.proto, CreateGroupRequest.labels).
bool ValidLabelText(const std::string& text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes) return false;
  for (char c : text) {
    if (c <= ' ' || c > '~' || c == '=') return false;
  }
  return true;
}

template <typename LabelMap>
grpc::Status CheckLabels(const LabelMap& labels, size_t existing) {
  if (labels.size() + existing > 32) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "more than 32 labels");
  }
  for (const auto& [key, value] : labels) {
    if (!ValidLabelText(key, 63) || !ValidLabelText(value, 255)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "label " + key + " breaks the rules");
    }
  }
  return grpc::Status::OK;
}

}  // namespace

UnixServer::UnixServer(const std::string& socket_path,
                       const std::vector<grpc::Service*>& services) {
  unlink(socket_path.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  for (grpc::Service* service : services) builder.RegisterService(service);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) std::abort();
}

UnixServer::~UnixServer() {
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
}

FakeAdmin::FakeAdmin(int devices, uint64_t memory_bytes, std::string groups_root)
    : memory_bytes_(memory_bytes), groups_root_(std::move(groups_root)), healthy_(devices, true) {}

void FakeAdmin::SetHealthy(int device, bool healthy) {
  absl::MutexLock lock(&mu_);
  healthy_.at(device) = healthy;
}

std::vector<acl::v1::CreateGroupRequest> FakeAdmin::creates() const {
  absl::MutexLock lock(&mu_);
  return creates_;
}

std::map<std::string, acl::v1::GroupInfo> FakeAdmin::groups() const {
  absl::MutexLock lock(&mu_);
  return groups_;
}

bool FakeAdmin::WaitForGroups(
    const std::function<bool(const std::map<std::string, acl::v1::GroupInfo>&)>& condition,
    absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition(groups())) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

grpc::Status FakeAdmin::GetStatus(grpc::ServerContext*, const acl::v1::StatusRequest*,
                                  acl::v1::StatusReply* reply) {
  absl::MutexLock lock(&mu_);
  for (size_t id = 0; id < healthy_.size(); ++id) {
    acl::v1::DeviceInfo* device = reply->add_devices();
    device->set_id(static_cast<int32_t>(id));
    device->set_memory_bytes(memory_bytes_);
    device->set_healthy(healthy_[id]);
    device->set_disabled(!healthy_[id]);
    if (!healthy_[id]) device->set_unhealthy("disabled by the operator");
  }
  return grpc::Status::OK;
}

grpc::Status FakeAdmin::CreateGroup(grpc::ServerContext*,
                                    const acl::v1::CreateGroupRequest* request,
                                    acl::v1::GroupInfo* reply) {
  absl::MutexLock lock(&mu_);
  if (grpc::Status labels = CheckLabels(request->labels(), 0); !labels.ok()) return labels;
  if (request->devices().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no devices");
  }
  if (request->memory_bytes_size() > 1 && request->memory_bytes_size() != request->devices_size()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "memory_bytes per device mismatch");
  }
  creates_.push_back(*request);
  acl::v1::GroupInfo group;
  group.set_id(absl::StrFormat("%032x", next_id_++));
  for (int i = 0; i < request->devices_size(); ++i) {
    acl::v1::GroupDevice* device = group.add_devices();
    device->set_device(request->devices(i));
    if (request->memory_bytes_size() == 1) device->set_memory_limit(request->memory_bytes(0));
    if (request->memory_bytes_size() > 1) device->set_memory_limit(request->memory_bytes(i));
  }
  *group.mutable_labels() = request->labels();
  group.set_directory(groups_root_ + "/groups/" + group.id());
  group.set_created_unix_seconds(absl::ToUnixSeconds(absl::Now()));
  groups_[group.id()] = group;
  *reply = group;
  return grpc::Status::OK;
}

grpc::Status FakeAdmin::ListGroups(grpc::ServerContext*, const acl::v1::GroupsRequest* request,
                                   acl::v1::GroupsReply* reply) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, group] : groups_) {
    if (request->id().empty() || request->id() == id) *reply->add_groups() = group;
  }
  return grpc::Status::OK;
}

grpc::Status FakeAdmin::DeleteGroup(grpc::ServerContext*,
                                    const acl::v1::DeleteGroupRequest* request,
                                    acl::v1::DeleteGroupReply*) {
  absl::MutexLock lock(&mu_);
  if (groups_.erase(request->id()) == 0) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no group " + request->id());
  }
  return grpc::Status::OK;
}

grpc::Status FakeAdmin::LabelGroup(grpc::ServerContext*, const acl::v1::LabelGroupRequest* request,
                                   acl::v1::GroupInfo* reply) {
  absl::MutexLock lock(&mu_);
  auto group = groups_.find(request->id());
  if (group == groups_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no group " + request->id());
  }
  if (grpc::Status labels = CheckLabels(request->set(), group->second.labels_size());
      !labels.ok()) {
    return labels;
  }
  for (const std::string& key : request->remove()) group->second.mutable_labels()->erase(key);
  for (const auto& [key, value] : request->set()) (*group->second.mutable_labels())[key] = value;
  *reply = group->second;
  return grpc::Status::OK;
}

grpc::Status FakeKubelet::Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                                   v1beta1::Empty*) {
  absl::MutexLock lock(&mu_);
  registrations_.push_back(*request);
  return grpc::Status::OK;
}

std::vector<v1beta1::RegisterRequest> FakeKubelet::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

bool FakeKubelet::WaitForRegistrations(size_t count, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto arrived = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return registrations_.size() >= count;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
}

void FakePodResources::Set(v1::ListPodResourcesResponse response) {
  absl::MutexLock lock(&mu_);
  response_ = std::move(response);
}

void FakePodResources::AddContainer(const std::string& pod, const std::string& namespace_name,
                                    const std::string& container, const std::string& resource,
                                    const std::vector<std::string>& ids) {
  absl::MutexLock lock(&mu_);
  v1::PodResources* entry = response_.add_pod_resources();
  entry->set_name(pod);
  entry->set_namespace_(namespace_name);
  v1::ContainerResources* resources = entry->add_containers();
  resources->set_name(container);
  v1::ContainerDevices* devices = resources->add_devices();
  devices->set_resource_name(resource);
  for (const std::string& id : ids) devices->add_device_ids(id);
}

grpc::Status FakePodResources::List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                                    v1::ListPodResourcesResponse* reply) {
  absl::MutexLock lock(&mu_);
  *reply = response_;
  return grpc::Status::OK;
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> DialPlugin(const std::string& socket_path) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials()));
}

DeviceWatch::DeviceWatch(v1beta1::DevicePlugin::Stub& plugin) {
  reader_ = plugin.ListAndWatch(&context_, v1beta1::Empty());
  thread_ = std::thread([this] {
    v1beta1::ListAndWatchResponse response;
    while (reader_->Read(&response)) {
      absl::MutexLock lock(&mu_);
      received_.push_back(response);
    }
    absl::MutexLock lock(&mu_);
    ended_ = true;
  });
}

DeviceWatch::~DeviceWatch() {
  context_.TryCancel();
  thread_.join();
  reader_->Finish();
}

bool DeviceWatch::WaitFor(
    const std::function<bool(const v1beta1::ListAndWatchResponse&)>& condition,
    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (!received_.empty() && condition(received_.back())) return true;
      if (ended_) return false;
    }
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
}

size_t DeviceWatch::updates() const {
  absl::MutexLock lock(&mu_);
  return received_.size();
}

size_t HealthyCount(const v1beta1::ListAndWatchResponse& response) {
  size_t healthy = 0;
  for (const v1beta1::Device& device : response.devices()) healthy += device.health() == "Healthy";
  return healthy;
}

}  // namespace acld_test
