#include "daemon/server/daemon_server.h"

#include <grp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/server/health.h"
#include "daemon/server/socket_path.h"
#include "grpc/grpc.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/server_posix.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

// Closes a descriptor unless released.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) close(fd_);
  }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

int ClampToInt(int64_t value) { return static_cast<int>(std::min<int64_t>(value, INT_MAX)); }

// The descriptor of a connection acld handed to gRPC: gRPC names its peer
// "fd:<n>".
std::optional<int> HandedOffFd(const std::string& peer) {
  int fd = -1;
  if (!absl::StartsWith(peer, "fd:") || !absl::SimpleAtoi(peer.substr(3), &fd)) return std::nullopt;
  return fd;
}

// A gRPC server without a listening port: connections come from an acceptor.
// `memory_bytes` (0: none) bounds the memory gRPC takes for its connections.
std::unique_ptr<grpc::Server> Build(grpc::Service& service,
                                    const std::vector<std::pair<std::string, int>>& arguments,
                                    uint64_t memory_bytes = 0) {
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  // Large copies travel in shared memory; requests stay small but allow
  // slack. A larger one fails its stream once it has arrived, unparsed.
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  // gRPC keeps what arrives of a request until its last byte, before acld
  // sees any of it, and the request size above does not bound that: one
  // connection's unfinished request of 600 MiB took acld to 640 MiB. gRPC's
  // resource quota does: under it gRPC stops granting room to send, and
  // resets a stream whose request cannot fit (docs/security.md).
  if (memory_bytes > 0) {
    grpc::ResourceQuota quota("acld runtime connections");
    quota.Resize(static_cast<size_t>(memory_bytes));
    builder.SetResourceQuota(quota);  // the server keeps its own reference
  }
  for (const auto& [name, value] : arguments) builder.AddChannelArgument(name, value);
  // Synchronous services (admin): one idle thread waits for new calls
  // (gRPC's default keeps one or two, varying with past load); a call's
  // handler thread ends with the call. The runtime service is a callback
  // service: its sessions hold no thread.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 1);
  return builder.BuildAndStart();
}

}  // namespace

DaemonServer::DaemonServer(Runtime& runtime, ServerOptions options,
                           std::unique_ptr<PeerCredentialDesk> peers)
    : options_(std::move(options)),
      runtime_(runtime),
      peers_(std::move(peers)),
      runtime_service_(runtime, peers_.get(), options_.limits),
      admin_service_(runtime, runtime_service_, absl::Now(), [this] {
        ListenerStats stats;
        if (runtime_acceptor_ != nullptr) {
          stats.connections_accepted = runtime_acceptor_->accepted();
          stats.connections_open = static_cast<uint32_t>(runtime_acceptor_->OpenConnections());
          stats.accept_pauses = runtime_acceptor_->pauses();
          stats.connections_refused = runtime_acceptor_->refused();
        }
        if (gate_ != nullptr) {
          stats.connections_cut = gate_->connections_cut();
          stats.streams_delayed = gate_->streams_delayed();
          stats.requests_delayed = gate_->requests_delayed();
          stats.grpc_arriving_bytes = gate_->ArrivingBytes();
        }
        if (peers_ != nullptr) {
          stats.identity_pending = static_cast<uint32_t>(peers_->pending_connections());
          stats.identity_busy = peers_->busy_refusals();
        }
        return stats;
      },
      [this] { return Health(); }) {}

absl::Status DaemonServer::Health() const {
  absl::MutexLock lock(&health_mu_);  // held across the probe: one at a time
  const absl::Time now = absl::Now();
  if (now - health_checked_ >= absl::Seconds(1)) {
    health_ = CheckHealth(
        {options_.socket_path, PeerSocketPath(options_.socket_path), options_.admin_socket_path},
        runtime_);
    health_checked_ = now;
  }
  return health_;
}

absl::StatusOr<std::unique_ptr<DaemonServer>> DaemonServer::Start(Runtime& runtime,
                                                                  const ServerOptions& options) {
  // gRPC's global shutdown (when the last server object goes) joins its
  // executor threads, one of which may sit in a poll for up to 10 s after a
  // write to a client that stopped reading. acld keeps gRPC initialized for
  // the life of the process and exits without that shutdown.
  static const bool grpc_kept = (grpc_init(), true);
  (void)grpc_kept;
  gid_t group = static_cast<gid_t>(-1);
  if (!options.socket_group.empty()) {
    struct group* entry = getgrnam(options.socket_group.c_str());
    if (entry == nullptr) {
      return absl::NotFoundError(absl::StrCat("no group '", options.socket_group, "'"));
    }
    group = entry->gr_gid;
  }
  const std::string peer_path = PeerSocketPath(options.socket_path);
  for (const std::string& path : {options.socket_path, options.admin_socket_path, peer_path}) {
    ACL_RETURN_IF_ERROR(PrepareSocketPath(path));
  }
  // Every socket is created with its final mode (under a umask) and checked;
  // none is chmod-ed or chown-ed through a path that could be a symlink.
  ACL_ASSIGN_OR_RETURN(int runtime_fd,
                       ListenOnSocketPath(options.socket_path, options.socket_mode, group));
  FdGuard runtime_guard(runtime_fd);
  absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> peers;
  {
    ScopedUmask mask(UmaskFor(options.socket_mode));
    peers = PeerCredentialDesk::Listen(peer_path);  // served once sessions can open
  }
  if (!peers.ok()) {
    RemoveSocket(options.socket_path);
    return peers.status();
  }
  std::unique_ptr<DaemonServer> server(new DaemonServer(runtime, options, *std::move(peers)));
  absl::Status peer_access = SecureSocket(peer_path, options.socket_mode, group);
  if (!peer_access.ok()) {
    server->Shutdown();
    return peer_access;
  }
  absl::StatusOr<int> admin_fd = ListenOnSocketPath(options.admin_socket_path, 0600, -1);
  if (!admin_fd.ok()) {
    server->Shutdown();
    return admin_fd.status();
  }
  FdGuard admin_guard(*admin_fd);

  // The runtime socket: one Session stream per connection (a client needs no
  // more), connections without a session dropped after the hello timeout.
  const SessionLimits& limits = options.limits;
  const int idle_ms =
      ClampToInt(std::max<int64_t>(1, absl::ToInt64Milliseconds(limits.hello_timeout)));
  server->runtime_server_ =
      Build(server->runtime_service_,
            {{GRPC_ARG_MAX_CONCURRENT_STREAMS, 1}, {GRPC_ARG_MAX_CONNECTION_IDLE_MS, idle_ms}},
            limits.max_grpc_memory_bytes);
  server->admin_server_ = Build(server->admin_service_, {});
  if (server->runtime_server_ == nullptr || server->admin_server_ == nullptr) {
    server->Shutdown();
    return absl::UnavailableError("cannot start the gRPC servers");
  }
  FrameGate::Options gate_options;
  gate_options.max_request_bytes = kMaxRequestBytes;  // gRPC's own check waits for the last byte
  gate_options.max_arriving_bytes_per_uid = limits.max_grpc_arriving_bytes_per_uid;
  absl::StatusOr<std::unique_ptr<FrameGate>> gate = FrameGate::Start(gate_options);
  if (!gate.ok()) {
    server->Shutdown();
    return gate.status();
  }
  server->gate_ = *std::move(gate);
  // Quota groups: their sockets hand connections to the same servers.
  QuotaGroupsOptions group_options;
  group_options.socket_path = options.socket_path;
  group_options.socket_mode = options.socket_mode;
  group_options.socket_gid = group;
  group_options.state_dir = options.state_dir;
  group_options.host_devices = runtime.DeviceCount();
  group_options.max_connections_per_uid = options.limits.max_connections_per_uid;
  group_options.gate = server->gate_.get();
  server->groups_ = std::make_unique<QuotaGroups>(
      group_options,
      [service = &server->runtime_service_](const PeerCredentials& peer, uint32_t version,
                                            ReceivedMemory channel, const Entrance& entrance) {
        return service->OpenDirect(peer, version, std::move(channel), &entrance);
      },
      [runtime_server = server->runtime_server_.get()](int fd) {
        grpc::AddInsecureChannelFromFd(runtime_server, fd);
      });
  server->admin_service_.SetQuotaGroups(server->groups_.get());
  // Before any session can start: how acld cuts a process's connections,
  // and where a gRPC connection came in.
  server->runtime_service_.SetConnectionCutter([raw = server.get()](
                                                    const PeerCredentials& process) {
    RuntimeAcceptor* acceptor = raw->cutter_.load();
    if (acceptor != nullptr) {
      // Not by pid alone: the pid may be another process's by now.
      acceptor->ShutdownConnections(
          [&process](const PeerCredentials& peer) { return SameProcess(peer, process); });
    }
    raw->groups_->ShutdownConnections(process);
  });
  server->runtime_service_.SetEntranceFinder(
      [raw = server.get()](grpc::CallbackServerContext* context) {
        return raw->GroupEntranceOf(context->peer());
      });
  server->runtime_service_.SetPeerUidFinder(
      [raw = server.get()](grpc::CallbackServerContext* context) -> std::optional<uint32_t> {
        const std::optional<int> fd = HandedOffFd(context->peer());
        if (!fd.has_value()) return std::nullopt;
        // Groups' sockets serve from Restore() on, before the host's acceptor.
        RuntimeAcceptor* acceptor = raw->cutter_.load();
        std::optional<uid_t> uid =
            acceptor != nullptr ? acceptor->PeerUid(*fd) : std::optional<uid_t>();
        return uid.has_value() ? uid : raw->groups_->PeerUid(*fd);
      });
  absl::Status restored = server->groups_->Restore();
  if (!restored.ok()) {
    server->Shutdown();
    return restored;
  }
  // Sessions of protocol 4 open on the identity socket, without gRPC; until
  // now its connections waited in the kernel's queue.
  if (server->peers_ != nullptr) {
    server->peers_->Serve(
        [service = &server->runtime_service_](const PeerCredentials& peer, uint32_t version,
                                              ReceivedMemory channel) {
          return service->OpenDirect(peer, version, std::move(channel));
        });
  }
  grpc::Server* runtime_server = server->runtime_server_.get();
  absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> runtime_acceptor = RuntimeAcceptor::Create(
      runtime_guard.release(), absl::StrCat("runtime socket ", options.socket_path),
      [runtime_server](int fd) { grpc::AddInsecureChannelFromFd(runtime_server, fd); },
      absl::Milliseconds(100), options.limits.max_connections_per_uid, server->gate_.get());
  if (!runtime_acceptor.ok()) {
    server->Shutdown();
    return runtime_acceptor.status();
  }
  server->runtime_acceptor_ = *std::move(runtime_acceptor);
  // Before the first accept: a stream's uid is found through it.
  server->cutter_.store(server->runtime_acceptor_.get());
  server->runtime_acceptor_->StartAccepting();
  grpc::Server* admin_server = server->admin_server_.get();
  absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> admin_acceptor = RuntimeAcceptor::Start(
      admin_guard.release(), absl::StrCat("admin socket ", options.admin_socket_path),
      [admin_server](int fd) { grpc::AddInsecureChannelFromFd(admin_server, fd); });
  if (!admin_acceptor.ok()) {
    server->Shutdown();
    return admin_acceptor.status();
  }
  server->admin_acceptor_ = *std::move(admin_acceptor);
  if (!options.metrics_address.empty()) {
    absl::StatusOr<std::shared_ptr<MetricsExporter>> metrics = MetricsExporter::Start(
        options.metrics_address, server->admin_service_, options.metrics_per_session,
        options.metrics_credentials);
    if (!metrics.ok()) {
      server->Shutdown();
      return metrics.status();
    }
    server->metrics_ = *std::move(metrics);
    spdlog::info("metrics at http://{} (port {})/metrics", options.metrics_address,
                 server->metrics_->port());
  }
  return server;
}

std::optional<Entrance> DaemonServer::GroupEntranceOf(const std::string& peer) const {
  const std::optional<int> fd = HandedOffFd(peer);
  if (!fd.has_value()) return std::nullopt;
  return groups_->EntranceOf(*fd);
}

DaemonServer::~DaemonServer() {
  Shutdown();
  cutter_.store(nullptr);
}

void DaemonServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  runtime_service_.StopAccepting();
  if (metrics_ != nullptr) metrics_->Stop();
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
  // Every client gets the notice at once; 500 ms for all of them together.
  runtime_service_.EndAllSessions("acld is shutting down", absl::Milliseconds(500));
  if (runtime_acceptor_) {
    runtime_acceptor_->Stop();
    // Whatever is still connected goes now: gRPC would wait forever for a
    // write to a process that stopped reading.
    runtime_acceptor_->ShutdownConnections([](const PeerCredentials&) { return true; });
  }
  if (admin_acceptor_) admin_acceptor_->Stop();
  // Group sockets go; their directories stay for the containers that mount them.
  if (groups_) groups_->Close();
  // Calls still open after 200 ms (streams that never said Hello, a stuck
  // admin call) are cancelled.
  const auto now = std::chrono::system_clock::now() + std::chrono::milliseconds(200);
  if (runtime_server_) runtime_server_->Shutdown(now);
  if (admin_server_) admin_server_->Shutdown(now);
  peers_.reset();
  RemoveSocket(options_.socket_path);
  RemoveSocket(options_.admin_socket_path);
  RemoveSocket(PeerSocketPath(options_.socket_path));
}

}  // namespace acld::server
