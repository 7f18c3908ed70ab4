// acld's two gRPC servers: the runtime socket (clients) and the admin socket (aclctl).
//
// acld owns both listening sockets and accepts on them itself
// (runtime_acceptor.h), handing every connection to gRPC: gRPC's own
// listener gives up for good after a single EMFILE.
#ifndef ACLD_DAEMON_SERVER_DAEMON_SERVER_H_
#define ACLD_DAEMON_SERVER_DAEMON_SERVER_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/runtime.h"
#include "daemon/server/admin_service.h"
#include "daemon/server/metrics_exporter.h"
#include "daemon/server/frame_gate.h"
#include "daemon/server/quota_groups.h"
#include "daemon/server/runtime_acceptor.h"
#include "daemon/server/runtime_service.h"
#include "grpcpp/server.h"

namespace acld::server {

struct ServerOptions {
  std::string socket_path;
  std::string admin_socket_path;
  mode_t socket_mode = 0666;  // runtime socket (and its identity side socket)
  std::string socket_group;   // empty: the daemon's group
  // How long a shutdown waits for streams to finish their work.
  absl::Duration shutdown_grace = absl::Seconds(10);
  // Session caps, the hello timeout, mapped host memory per session.
  SessionLimits limits;
  // The Prometheus endpoint, HOST:PORT (empty: none), and whether it has
  // per-session series (metrics_exporter.h).
  std::string metrics_address;
  bool metrics_per_session = false;
  std::string metrics_credentials;  // "USER:PASSWORD" a scrape presents; empty: none
  // Where quota groups persist (quota_groups.h); empty: they last as long
  // as acld does.
  std::string state_dir;
};

class DaemonServer {
 public:
  // Checks the socket directories, creates the sockets with their final modes
  // (the admin socket 0600) and starts serving.
  static absl::StatusOr<std::unique_ptr<DaemonServer>> Start(Runtime& runtime,
                                                             const ServerOptions& options);
  ~DaemonServer();

  // Stops accepting sessions, waits (up to the grace) for streams to drain,
  // tells every client and ends its session (500 ms for all the notices
  // together), and removes the socket files. Idempotent.
  void Shutdown();

  // acld's health (health.h): its sockets accept and the backend serves.
  // Probed at most once a second (each probe connects to every socket):
  // status calls and scrapes at any rate cost acld no stream of connections.
  absl::Status Health() const;

 private:
  DaemonServer(Runtime& runtime, ServerOptions options, std::unique_ptr<PeerCredentialDesk> peers);
  // The group whose runtime socket accepted the connection gRPC calls
  // `peer`; none: the host's.
  std::optional<Entrance> GroupEntranceOf(const std::string& peer) const;

  mutable absl::Mutex health_mu_;
  mutable absl::Status health_ ABSL_GUARDED_BY(health_mu_);
  mutable absl::Time health_checked_ ABSL_GUARDED_BY(health_mu_) = absl::InfinitePast();
  const ServerOptions options_;
  Runtime& runtime_;
  std::unique_ptr<PeerCredentialDesk> peers_;
  RuntimeService runtime_service_;
  // Between the runtime sockets' clients and gRPC (frame_gate.h); outlives
  // the acceptors that hand it connections.
  std::unique_ptr<FrameGate> gate_;
  std::unique_ptr<QuotaGroups> groups_;
  AdminService admin_service_;
  std::shared_ptr<MetricsExporter> metrics_;
  std::unique_ptr<grpc::Server> runtime_server_;
  std::unique_ptr<grpc::Server> admin_server_;
  std::unique_ptr<RuntimeAcceptor> runtime_acceptor_;
  std::unique_ptr<RuntimeAcceptor> admin_acceptor_;
  // runtime_acceptor_ once it runs, for RuntimeService's connection cutter.
  std::atomic<RuntimeAcceptor*> cutter_{nullptr};
  bool shut_down_ = false;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_DAEMON_SERVER_H_
