#include "daemon/server/runtime_service.h"

#include "absl/time/clock.h"
#include "daemon/server/request_dispatcher.h"
#include "spdlog/spdlog.h"

namespace acld::server {

using acl::v1::ClientMessage;
using acl::v1::ServerMessage;

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

  ServerMessage reply;
  reply.set_call_id(request.call_id());
  reply.mutable_reply()->mutable_session_opened()->set_session_id(session);
  bool connected = stream->Write(reply);

  while (connected && stream->Read(&request)) {
    reply.Clear();
    DispatchRequest(runtime_, session, request, *reply.mutable_reply());
    if (reply.reply().acl_error() != 0) {
      spdlog::info("session {}: call failed with {}: {}", session, reply.reply().acl_error(),
                   reply.reply().error_message());
    }
    if (request.call_id() == 0) continue;
    reply.set_call_id(request.call_id());
    connected = stream->Write(reply);
  }

  const absl::Time reap_start = absl::Now();
  runtime_.CloseSession(session);
  spdlog::info("session {} ended (pid {}): its references dropped and resources released in {}",
               session, peer.pid, absl::FormatDuration(absl::Now() - reap_start));
  return grpc::Status::OK;
}

}  // namespace acld::server
