#include "tools/device_plugin/plugin_endpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "proto/k8s/deviceplugin/v1beta1/api.grpc.pb.h"
#include "spdlog/spdlog.h"

namespace acld::device_plugin {
namespace {

constexpr absl::Duration kRegisterTimeout = absl::Seconds(5);
constexpr absl::Duration kMaxRegisterBackoff = absl::Seconds(5);
// ListAndWatch streams end within DevicePluginService's step once stopped;
// calls still running past this are cancelled.
constexpr absl::Duration kShutdownGrace = absl::Seconds(1);

}  // namespace

std::optional<FileIdentity> IdentityOf(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) return std::nullopt;
  return FileIdentity{info.st_dev, info.st_ino};
}

PluginEndpoint::PluginEndpoint(ResourceSpec resource, const DeviceSelection& selection,
                               StatusPoller& poller, GroupAllocator& allocator,
                               std::string socket_path, std::string kubelet_socket)
    : resource_(std::move(resource)),
      selection_(selection),
      poller_(poller),
      allocator_(allocator),
      socket_path_(std::move(socket_path)),
      kubelet_socket_(std::move(kubelet_socket)) {}

PluginEndpoint::~PluginEndpoint() { Stop(); }

absl::Status PluginEndpoint::Serve() {
  StopServer();
  if (unlink(socket_path_.c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(
        absl::StrCat("cannot remove the old ", socket_path_, ": ", std::strerror(errno)));
  }
  // A fresh service per server: gRPC binds a service to one server.
  service_ = std::make_unique<DevicePluginService>(resource_, selection_, poller_, allocator_);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  served_socket_ = IdentityOf(socket_path_);
  if (server_ == nullptr || !served_socket_.has_value()) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot serve ", socket_path_));
  }
  spdlog::info("{}: serving {}", resource_.name, socket_path_);
  return absl::OkStatus();
}

absl::Status PluginEndpoint::Register() {
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + kubelet_socket_, grpc::InsecureChannelCredentials()));
  v1beta1::RegisterRequest request;
  request.set_version(kDevicePluginApiVersion);
  request.set_endpoint(std::filesystem::path(socket_path_).filename().string());
  request.set_resource_name(resource_.name);
  *request.mutable_options() = DevicePluginService::Options();
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRegisterTimeout));
  v1beta1::Empty reply;
  const grpc::Status status = stub->Register(&context, request, &reply);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat("Register with ", kubelet_socket_, ": ",
                                               status.error_message()));
  }
  return absl::OkStatus();
}

void PluginEndpoint::Tick() {
  const std::optional<FileIdentity> socket = IdentityOf(socket_path_);
  if (server_ == nullptr || !socket.has_value() || !(*socket == *served_socket_)) {
    if (server_ != nullptr) {
      spdlog::warn("{}: {} was removed (the kubelet restarted?); serving it again",
                   resource_.name, socket_path_);
    }
    registered_ = false;
    if (absl::Status served = Serve(); !served.ok()) {
      spdlog::error("{}: {}", resource_.name, served.ToString());
      return;
    }
  }
  const std::optional<FileIdentity> kubelet = IdentityOf(kubelet_socket_);
  if (registered_ && kubelet.has_value() && registered_with_.has_value() &&
      *kubelet == *registered_with_) {
    return;
  }
  if (registered_) {
    spdlog::warn("{}: the kubelet's socket changed; registering again", resource_.name);
    registered_ = false;
  }
  if (!kubelet.has_value() || absl::Now() < next_register_attempt_) return;
  if (absl::Status status = Register(); !status.ok()) {
    spdlog::warn("{}: {} (retrying in {})", resource_.name, status.ToString(),
                 absl::FormatDuration(register_backoff_));
    next_register_attempt_ = absl::Now() + register_backoff_;
    register_backoff_ = std::min(register_backoff_ * 2, kMaxRegisterBackoff);
    return;
  }
  registered_ = true;
  registered_with_ = kubelet;
  register_backoff_ = absl::Milliseconds(100);
  spdlog::info("{}: registered with the kubelet at {} as endpoint {}", resource_.name,
               kubelet_socket_, std::filesystem::path(socket_path_).filename().string());
}

void PluginEndpoint::StopServer() {
  if (server_ == nullptr) return;
  service_->Stop();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  server_->Wait();
  server_.reset();
  service_.reset();
}

void PluginEndpoint::Stop() {
  StopServer();
  // Only our own socket: after a kubelet restart another file may be there.
  const std::optional<FileIdentity> socket = IdentityOf(socket_path_);
  if (socket.has_value() && served_socket_.has_value() && *socket == *served_socket_) {
    unlink(socket_path_.c_str());
  }
  served_socket_.reset();
  registered_ = false;
}

}  // namespace acld::device_plugin
