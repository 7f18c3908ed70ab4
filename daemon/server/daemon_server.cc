#include "daemon/server/daemon_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/server/socket_path.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

std::unique_ptr<grpc::Server> Serve(const std::string& path, grpc::Service& service) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  // Large copies travel in shared memory; messages stay small but allow slack.
  builder.SetMaxReceiveMessageSize(64 << 20);
  return builder.BuildAndStart();
}

}  // namespace

DaemonServer::DaemonServer(Runtime& runtime, ServerOptions options)
    : options_(std::move(options)), runtime_service_(runtime), admin_service_(runtime, absl::Now()) {}

absl::StatusOr<std::unique_ptr<DaemonServer>> DaemonServer::Start(Runtime& runtime,
                                                                  const ServerOptions& options) {
  for (const std::string* path : {&options.socket_path, &options.admin_socket_path}) {
    absl::Status prepared = PrepareSocketPath(*path);
    if (!prepared.ok()) return prepared;
  }
  std::unique_ptr<DaemonServer> server(new DaemonServer(runtime, options));

  // The admin socket is created 0600 from the start (umask), not chmod-ed after.
  const mode_t previous_umask = umask(0177);
  server->admin_server_ = Serve(options.admin_socket_path, server->admin_service_);
  umask(previous_umask);
  if (server->admin_server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on admin socket '", options.admin_socket_path, "'"));
  }
  chmod(options.admin_socket_path.c_str(), 0600);

  server->runtime_server_ = Serve(options.socket_path, server->runtime_service_);
  if (server->runtime_server_ == nullptr) {
    server->Shutdown();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on runtime socket '", options.socket_path, "'"));
  }
  return server;
}

DaemonServer::~DaemonServer() { Shutdown(); }

void DaemonServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Session streams never finish on their own; the deadline cancels them, and
  // each handler then reaps its session.
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(200);
  if (runtime_server_) runtime_server_->Shutdown(deadline);
  if (admin_server_) admin_server_->Shutdown(deadline);
  unlink(options_.socket_path.c_str());
  unlink(options_.admin_socket_path.c_str());
}

}  // namespace acld::server
