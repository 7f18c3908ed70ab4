#include "daemon/server/runtime_service.h"

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "daemon/server/session_handler.h"
#include "spdlog/spdlog.h"

namespace acld::server {

using acl::v1::ClientMessage;
using acl::v1::ServerMessage;

namespace {

// Serializes writes on the stream (gRPC allows one writer at a time) and
// refuses them once the call handler has returned.
class StreamWriter {
 public:
  explicit StreamWriter(grpc::ServerReaderWriter<ServerMessage, ClientMessage>* stream)
      : stream_(stream) {}

  void Write(const ServerMessage& message) {
    absl::MutexLock lock(&mu_);
    if (stream_ != nullptr) stream_->Write(message);
  }

  void Close() {
    absl::MutexLock lock(&mu_);
    stream_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  grpc::ServerReaderWriter<ServerMessage, ClientMessage>* stream_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::Status RuntimeService::Session(
    grpc::ServerContext* /*context*/, grpc::ServerReaderWriter<ServerMessage, ClientMessage>* stream) {
  ClientMessage request;
  if (!stream->Read(&request) || !request.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session starts with Hello");
  }
  const acl::v1::Hello& hello = request.hello();
  if (hello.protocol_version() != 1) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "unsupported protocol version; this acld speaks version 1");
  }
  PeerInfo peer{hello.pid(), hello.uid(), hello.command()};
  const SessionId session = runtime_.OpenSession(peer);
  spdlog::info("session {} opened: pid {} uid {} '{}'", session, peer.pid, peer.uid, peer.command);

  auto writer = std::make_shared<StreamWriter>(stream);
  auto handler = std::make_shared<SessionHandler>(
      runtime_, session, [writer](const ServerMessage& message) { writer->Write(message); });
  handler->Open(request.call_id());
  while (stream->Read(&request)) handler->Handle(request);

  const absl::Time reap_start = absl::Now();
  runtime_.CloseSession(session);
  writer->Close();
  spdlog::info("session {} ended (pid {}): its references dropped and resources released in {}",
               session, peer.pid, absl::FormatDuration(absl::Now() - reap_start));
  return grpc::Status::OK;
}

}  // namespace acld::server
