// The runtime socket's gRPC service: one Session stream per client process.
#ifndef ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_
#define ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/runtime.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/session_writer.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acld::server {

class RuntimeService final : public acl::v1::Runtime::Service {
 public:
  // `peers` vouches for client identities (may be null in tests: the client's
  // own word is taken then).
  RuntimeService(Runtime& runtime, PeerCredentialDesk* peers) : runtime_(runtime), peers_(peers) {}

  // Opens a session on the client's Hello, serves its calls in order, and
  // reaps the session when the stream ends for any reason.
  grpc::Status Session(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<acl::v1::ServerMessage, acl::v1::ClientMessage>* stream) override;

  // Ends `session` now: its process is told `reason`, its stream is cancelled
  // and the runtime releases everything it held. NotFound when not live.
  absl::Status EndSession(SessionId session, const std::string& reason);

  // Refuses new sessions from now on.
  void StopAccepting();
  // Ends every live session with `reason`.
  void EndAllSessions(const std::string& reason);

 private:
  struct Live {
    grpc::ServerContext* context;
    std::shared_ptr<SessionWriter> writer;
  };

  Runtime& runtime_;
  PeerCredentialDesk* const peers_;
  absl::Mutex mu_;
  std::map<SessionId, Live> live_ ABSL_GUARDED_BY(mu_);
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_RUNTIME_SERVICE_H_
