#include "daemon/server/daemon_server.h"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

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

// Gives the runtime sockets the operator's mode and group.
absl::Status ApplyAccess(const std::string& path, mode_t mode, const std::string& group) {
  if (!group.empty()) {
    struct group* entry = getgrnam(group.c_str());
    if (entry == nullptr) return absl::NotFoundError(absl::StrCat("no group '", group, "'"));
    if (chown(path.c_str(), static_cast<uid_t>(-1), entry->gr_gid) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot give '", path, "' to group ", group, ": ", std::strerror(errno)));
    }
  }
  if (chmod(path.c_str(), mode) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot chmod '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

DaemonServer::DaemonServer(Runtime& runtime, ServerOptions options,
                           std::unique_ptr<PeerCredentialDesk> peers)
    : options_(std::move(options)),
      runtime_(runtime),
      peers_(std::move(peers)),
      runtime_service_(runtime, peers_.get()),
      admin_service_(runtime, runtime_service_, absl::Now()) {}

absl::StatusOr<std::unique_ptr<DaemonServer>> DaemonServer::Start(Runtime& runtime,
                                                                  const ServerOptions& options) {
  const std::string peer_path = PeerSocketPath(options.socket_path);
  for (const std::string& path : {options.socket_path, options.admin_socket_path, peer_path}) {
    absl::Status prepared = PrepareSocketPath(path);
    if (!prepared.ok()) return prepared;
  }
  absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> peers = PeerCredentialDesk::Start(peer_path);
  if (!peers.ok()) return peers.status();
  std::unique_ptr<DaemonServer> server(new DaemonServer(runtime, options, *std::move(peers)));

  // The admin socket is created 0600 from the start (umask), not chmod-ed after.
  const mode_t previous_umask = umask(0177);
  server->admin_server_ = Serve(options.admin_socket_path, server->admin_service_);
  umask(previous_umask);
  if (server->admin_server_ == nullptr) {
    server->Shutdown();
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
  for (const std::string& path : {options.socket_path, peer_path}) {
    absl::Status access = ApplyAccess(path, options.socket_mode, options.socket_group);
    if (!access.ok()) {
      server->Shutdown();
      return access;
    }
  }
  return server;
}

DaemonServer::~DaemonServer() { Shutdown(); }

void DaemonServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  runtime_service_.StopAccepting();
  // Work already queued gets its chance to finish; clients still connected
  // then hear why their session ends, and later calls fail at once.
  const absl::Time deadline = absl::Now() + options_.shutdown_grace;
  while (!runtime_.AllStreamsIdle() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (!runtime_.AllStreamsIdle()) {
    spdlog::warn("shutdown grace of {} ended with work still queued; discarding it",
                 absl::FormatDuration(options_.shutdown_grace));
  }
  runtime_service_.EndAllSessions("acld is shutting down");
  const auto now = std::chrono::system_clock::now() + std::chrono::milliseconds(200);
  if (runtime_server_) runtime_server_->Shutdown(now);
  if (admin_server_) admin_server_->Shutdown(now);
  peers_.reset();
  unlink(options_.socket_path.c_str());
  unlink(options_.admin_socket_path.c_str());
  unlink(PeerSocketPath(options_.socket_path).c_str());
}

}  // namespace acld::server
