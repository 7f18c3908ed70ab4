#include "daemon/server/runtime_service.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/server/session_handler.h"
#include "daemon/server/session_writer.h"
#include "spdlog/spdlog.h"

namespace acld::server {

using acl::v1::ClientMessage;
using acl::v1::ServerMessage;

grpc::Status RuntimeService::Session(
    grpc::ServerContext* context, grpc::ServerReaderWriter<ServerMessage, ClientMessage>* stream) {
  ClientMessage request;
  if (!stream->Read(&request) || !request.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session starts with Hello");
  }
  const acl::v1::Hello& hello = request.hello();
  if (hello.protocol_version() != 1) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "unsupported protocol version; this acld speaks version 1");
  }
  PeerInfo peer{hello.pid(), hello.uid(), 0, hello.command()};
  if (peers_ != nullptr) {
    // The kernel's word, not the client's.
    std::optional<PeerCredentials> credentials = peers_->Redeem(hello.peer_token());
    if (!credentials.has_value()) {
      spdlog::warn("refused a session without a valid identity token (claimed pid {})", peer.pid);
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "no valid identity token: connect through libascendcl");
    }
    peer.pid = credentials->pid;
    peer.uid = credentials->uid;
    peer.gid = credentials->gid;
  }

  auto writer = std::make_shared<SessionWriter>(stream);
  SessionId session;
  {
    absl::MutexLock lock(&mu_);
    if (!accepting_) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "acld is shutting down");
    }
    session = runtime_.OpenSession(peer);
    live_[session] = Live{context, writer};
  }
  spdlog::info("session {} opened: pid {} uid {} gid {} '{}'", session, peer.pid, peer.uid,
               peer.gid, peer.command);

  auto handler = std::make_shared<SessionHandler>(
      runtime_, session, peer.uid, peer.pid, peers_, SharedMemoryLimits{},
      [writer](const ServerMessage& message) { writer->Write(message); });
  handler->Open(request.call_id());
  while (stream->Read(&request)) handler->Handle(request);

  const absl::Time reap_start = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    live_.erase(session);
  }
  const bool reaped_here = runtime_.CloseSession(session);
  writer->Close();
  if (reaped_here) {
    spdlog::info("session {} ended (pid {}): its references dropped and resources released in {}",
                 session, peer.pid, absl::FormatDuration(absl::Now() - reap_start));
  }
  return grpc::Status::OK;
}

absl::Status RuntimeService::EndSession(SessionId session, const std::string& reason) {
  // Under the lock the session's handler cannot return, so its context lives.
  absl::MutexLock lock(&mu_);
  auto it = live_.find(session);
  if (it == live_.end()) return absl::NotFoundError(absl::StrCat("no session ", session));
  ServerMessage ended;
  ended.mutable_session_ended()->set_reason(reason);
  it->second.writer->Write(ended);
  // The notice goes out before the stream is cancelled, unless the client
  // does not read at all.
  it->second.writer->Flush(absl::Milliseconds(500));
  // Released now, as if the process had died; its stream ends right after.
  runtime_.CloseSession(session);
  it->second.context->TryCancel();
  spdlog::info("session {} ended by acld: {}", session, reason);
  return absl::OkStatus();
}

void RuntimeService::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

void RuntimeService::EndAllSessions(const std::string& reason) {
  std::vector<SessionId> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, live] : live_) sessions.push_back(id);
  }
  for (SessionId session : sessions) EndSession(session, reason).IgnoreError();
}

}  // namespace acld::server
