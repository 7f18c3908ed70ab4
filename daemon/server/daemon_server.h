// acld's two gRPC servers: the runtime socket (clients) and the admin socket (aclctl).
#ifndef ACLD_DAEMON_SERVER_DAEMON_SERVER_H_
#define ACLD_DAEMON_SERVER_DAEMON_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/core/runtime.h"
#include "daemon/server/admin_service.h"
#include "daemon/server/runtime_service.h"
#include "grpcpp/server.h"

namespace acld::server {

struct ServerOptions {
  std::string socket_path;
  std::string admin_socket_path;
};

class DaemonServer {
 public:
  // Prepares both socket paths and starts serving; the admin socket is mode 0600.
  static absl::StatusOr<std::unique_ptr<DaemonServer>> Start(Runtime& runtime,
                                                             const ServerOptions& options);
  ~DaemonServer();

  // Stops accepting, ends every session (reaping it in the core) and removes
  // the socket files. Idempotent.
  void Shutdown();

 private:
  DaemonServer(Runtime& runtime, ServerOptions options);

  const ServerOptions options_;
  RuntimeService runtime_service_;
  AdminService admin_service_;
  std::unique_ptr<grpc::Server> runtime_server_;
  std::unique_ptr<grpc::Server> admin_server_;
  bool shut_down_ = false;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_DAEMON_SERVER_H_
