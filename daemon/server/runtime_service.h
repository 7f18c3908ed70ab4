// The runtime socket's gRPC service: one Session stream per client process.
#ifndef ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_
#define ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_

#include "daemon/core/runtime.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acld::server {

class RuntimeService final : public acl::v1::Runtime::Service {
 public:
  explicit RuntimeService(Runtime& runtime) : runtime_(runtime) {}

  // Opens a session on the client's Hello, serves its calls in order, and
  // reaps the session when the stream ends for any reason.
  grpc::Status Session(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<acl::v1::ServerMessage, acl::v1::ClientMessage>* stream) override;

 private:
  Runtime& runtime_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_
