#include "daemon/server/runtime_service.h"

#include <malloc.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/server/process_command.h"
#include "daemon/server/session_handler.h"
#include "daemon/server/session_ring.h"
#include "daemon/server/session_writer.h"
#include "daemon/server/text_sanitizer.h"
#include "proto/acl/protocol.h"
#include "spdlog/spdlog.h"

namespace acld::server {

using acl::v1::ClientMessage;
using acl::v1::ServerMessage;

RuntimeService::RuntimeService(Runtime& runtime, PeerCredentialDesk* peers, SessionLimits limits)
    : runtime_(runtime), peers_(peers), limits_(limits) {}

void RuntimeService::Live::Cancel() {
  if (ring != nullptr) ring->Stop();
  absl::MutexLock lock(&mu);
  if (!context_gone) context->TryCancel();
}

grpc::Status RuntimeService::Refuse(grpc::StatusCode code, const std::string& message) {
  {
    absl::MutexLock lock(&mu_);
    ++refused_;
  }
  refusals_.Warn("{}", message);
  return grpc::Status(code, message);
}

grpc::Status RuntimeService::Session(
    grpc::ServerContext* context, grpc::ServerReaderWriter<ServerMessage, ClientMessage>* stream) {
  // Until its Hello a stream is pending: few at a time, each for a bounded time.
  bool admitted;
  {
    absl::MutexLock lock(&mu_);
    admitted = pending_ < limits_.max_pending_hellos;
    if (admitted) ++pending_;
  }
  if (!admitted) {
    return Refuse(grpc::StatusCode::RESOURCE_EXHAUSTED,
                  absl::StrCat("acld already has ", limits_.max_pending_hellos,
                               " connections waiting to say Hello (--max_pending_hellos); "
                               "try again"));
  }
  const uint64_t deadline = hello_deadlines_.Arm(context, absl::Now() + limits_.hello_timeout);
  ClientMessage request;
  const bool read = stream->Read(&request);
  const bool in_time = hello_deadlines_.Disarm(deadline);
  {
    absl::MutexLock lock(&mu_);
    --pending_;
  }
  if (!in_time) {
    refusals_.Info("a connection sent no Hello within {}; its stream was cancelled",
                   absl::FormatDuration(limits_.hello_timeout));
    return grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("no Hello within ", absl::FormatDuration(limits_.hello_timeout),
                     " (--hello_timeout)"));
  }
  if (!read || !request.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session starts with Hello");
  }
  const acl::v1::Hello& hello = request.hello();
  if (hello.protocol_version() < kOldestProtocolVersion ||
      hello.protocol_version() > kProtocolVersion) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("unsupported protocol version: the client speaks version ",
                     hello.protocol_version(), ", this acld speaks versions ",
                     kOldestProtocolVersion, " to ", kProtocolVersion));
  }
  PeerInfo peer{hello.pid(), hello.uid(), 0, ""};
  if (peers_ != nullptr) {
    // The kernel's word, not the client's.
    std::optional<PeerCredentials> credentials = peers_->Redeem(hello.peer_token());
    if (!credentials.has_value()) {
      return Refuse(grpc::StatusCode::PERMISSION_DENIED,
                    "no valid identity token: connect through libascendcl");
    }
    peer.pid = credentials->pid;
    peer.uid = credentials->uid;
    peer.gid = credentials->gid;
    // What the operator sees comes from the kernel too, bounded and escaped.
    peer.command = ProcessCommand(peer.pid);
  } else {
    peer.command = SanitizeText(hello.command(), kMaxCommandBytes);
  }

  // The shared-memory channel (protocol 2), if the client handed one over;
  // a channel that cannot be used leaves the session on the gRPC stream.
  std::shared_ptr<SessionRing> ring;
  if (peers_ != nullptr && hello.protocol_version() >= 2 && !hello.ring_ticket().empty()) {
    absl::StatusOr<ReceivedMemory> memory =
        peers_->RedeemMemory(hello.ring_ticket(), peer.pid, peer.uid);
    absl::StatusOr<std::shared_ptr<SessionRing>> mapped =
        memory.ok() ? SessionRing::Map(*std::move(memory))
                    : absl::StatusOr<std::shared_ptr<SessionRing>>(memory.status());
    if (mapped.ok()) {
      ring = *std::move(mapped);
    } else {
      channel_faults_.Info("pid {}: its session channel is not usable ({}); the session stays "
                           "on gRPC", peer.pid, std::string(mapped.status().message()));
    }
  }

  auto live = std::make_shared<Live>();
  live->ring = ring;
  live->uid = peer.uid;
  live->pid = peer.pid;
  live->context = context;
  SessionId session = 0;
  std::string refusal;
  grpc::StatusCode code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  {
    absl::MutexLock lock(&mu_);
    auto of_uid = sessions_per_uid_.find(peer.uid);
    if (!accepting_) {
      code = grpc::StatusCode::UNAVAILABLE;
      refusal = "acld is shutting down";
    } else if (live_.size() >= limits_.max_sessions) {
      refusal =
          absl::StrCat("acld already serves ", limits_.max_sessions, " sessions (--max_sessions)");
    } else if (of_uid != sessions_per_uid_.end() &&
               of_uid->second >= limits_.max_sessions_per_uid) {
      refusal = absl::StrCat("acld already serves ", limits_.max_sessions_per_uid,
                             " sessions of uid ", peer.uid, " (--max_sessions_per_uid)");
    }
    if (refusal.empty()) {
      session = runtime_.OpenSession(peer);
      live->id = session;
      // A client that stops reading while its queue passes the bound is ended:
      // cancelled, and its connection cut (a write to it never ends otherwise).
      std::weak_ptr<Live> weak = live;
      live->writer = std::make_shared<SessionWriter>(
          [stream](const ServerMessage& message) { stream->Write(message); },
          limits_.max_queued_bytes_per_session, [this, weak] {
            if (auto ended = weak.lock()) CutOff(*ended);
          });
      live_[session] = live;
      ++sessions_per_uid_[peer.uid];
      ++handlers_;
    }
  }
  if (!refusal.empty()) return Refuse(code, refusal);
  const std::shared_ptr<SessionWriter> writer = live->writer;
  SessionLog::Open(session);
  spdlog::info("session {} opened: pid {} uid {} gid {} '{}'", session, peer.pid, peer.uid,
               peer.gid, peer.command);

  const SharedMemoryLimits shared_memory_limits{limits_.max_host_memory_per_session,
                                                 limits_.max_host_segments_per_session};
  auto handler = std::make_shared<SessionHandler>(
      runtime_, session, peer.uid, peer.pid, peers_, shared_memory_limits,
      [writer](const ServerMessage& message) { writer->Write(message); });
  {
    absl::MutexLock lock(&live->mu);
    live->handler = handler;
  }
  handler->Open(request.call_id(), ring != nullptr);
  if (ring == nullptr) {
    while (stream->Read(&request)) handler->Handle(request);
  } else {
    ServeRing(*context, *ring, *writer, *handler);
  }

  const absl::Time reap_start = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    Forget(session);
  }
  const bool reaped_here = runtime_.CloseSession(session);
  // Nothing more goes to the client: a write stuck on a process that stopped
  // reading ends now, and the writer thread can be joined.
  live->Cancel();
  writer->Close();
  {
    absl::MutexLock lock(&live->mu);
    live->context_gone = true;
  }
  bool last_session;
  {
    absl::MutexLock lock(&mu_);
    --handlers_;
    last_session = live_.empty();
  }
  SessionLog::Close(session);
  handler.reset();
  // glibc keeps what sessions freed in its arenas; when the last one is
  // gone, give that memory back so an idle acld is as small as it started.
  if (last_session) malloc_trim(0);
  if (reaped_here) {
    spdlog::info("session {} ended (pid {}): its references dropped and resources released in {}",
                 session, peer.pid, absl::FormatDuration(absl::Now() - reap_start));
  }
  return grpc::Status::OK;
}

void RuntimeService::ServeRing(grpc::ServerContext& context, SessionRing& ring,
                               SessionWriter& writer, SessionHandler& handler) {
  // Everything after the SessionOpened goes over the channel. The stream
  // stays open: its end (the process exited or closed it) ends the session.
  writer.Flush(absl::Seconds(1));
  // The process went away (its stream ended): every wait on the channel ends.
  // The writer drops this sink (Close) before the handler returns.
  auto gone = [&context] { return context.IsCancelled(); };
  writer.SetSink([&ring, gone](const ServerMessage& message) { ring.Write(message, gone); });
  while (true) {
    absl::StatusOr<std::optional<ClientMessage>> request = ring.Read(gone);
    if (!request.ok()) {
      channel_faults_.Warn("session {}: its channel broke the protocol ({}); the session ends",
                           handler.session(), std::string(request.status().message()));
      context.TryCancel();
      return;
    }
    if (!request->has_value()) return;
    handler.Handle(**request);
  }
}

std::shared_ptr<RuntimeService::Live> RuntimeService::Forget(SessionId session) {
  auto it = live_.find(session);
  if (it == live_.end()) return nullptr;
  std::shared_ptr<Live> live = std::move(it->second);
  live_.erase(it);
  auto count = sessions_per_uid_.find(live->uid);
  if (count != sessions_per_uid_.end() && --count->second == 0) sessions_per_uid_.erase(count);
  return live;
}

void RuntimeService::Release(Live& live, const std::string& reason) {
  // Released now, as if the process had died; its stream ends right after.
  runtime_.CloseSession(live.id);
  live.Cancel();
  spdlog::info("session {} ended by acld: {}", live.id, reason);
}

void RuntimeService::CutOff(Live& live) {
  live.Cancel();
  if (cut_connections_) cut_connections_(live.pid);
}

void RuntimeService::CutStuck(const std::vector<std::shared_ptr<Live>>& ended,
                              absl::Time deadline) {
  for (const auto& live : ended) {
    bool returned;
    {
      absl::MutexLock lock(&live->mu);
      live->mu.AwaitWithDeadline(absl::Condition(&live->context_gone), deadline);
      returned = live->context_gone;
    }
    if (returned || !cut_connections_) continue;
    spdlog::info("session {}: its process does not read; closing its connection", live->id);
    cut_connections_(live->pid);
  }
}

absl::Status RuntimeService::EndSession(SessionId session, const std::string& reason) {
  std::shared_ptr<Live> live;
  {
    absl::MutexLock lock(&mu_);
    live = Forget(session);
  }
  if (live == nullptr) return absl::NotFoundError(absl::StrCat("no session ", session));
  ServerMessage ended;
  ended.mutable_session_ended()->set_reason(reason);
  live->writer->Write(ended);
  // The notice goes out before the stream is cancelled, unless the client
  // does not read at all. No lock is held meanwhile.
  live->writer->Flush(absl::Milliseconds(500));
  Release(*live, reason);
  CutStuck({live}, absl::Now() + absl::Milliseconds(200));
  return absl::OkStatus();
}

void RuntimeService::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

void RuntimeService::EndAllSessions(const std::string& reason, absl::Duration flush) {
  std::vector<std::shared_ptr<Live>> ending;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, live] : live_) ending.push_back(std::move(live));
    live_.clear();
    sessions_per_uid_.clear();
  }
  ServerMessage ended;
  ended.mutable_session_ended()->set_reason(reason);
  for (const auto& live : ending) live->writer->Write(ended);
  // One deadline for all: clients that do not read cost the shutdown `flush`
  // once, not once each.
  const absl::Time deadline = absl::Now() + flush;
  for (const auto& live : ending) {
    live->writer->Flush(std::max(absl::ZeroDuration(), deadline - absl::Now()));
  }
  for (const auto& live : ending) Release(*live, reason);
  CutStuck(ending, absl::Now() + absl::Milliseconds(200));
}

std::map<SessionId, RuntimeService::SessionUsage> RuntimeService::usage() const {
  std::vector<std::shared_ptr<Live>> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, live] : live_) sessions.push_back(live);
  }
  std::map<SessionId, SessionUsage> usage;
  for (const auto& live : sessions) {
    std::shared_ptr<const SessionHandler> handler;
    {
      absl::MutexLock lock(&live->mu);
      handler = live->handler.lock();
    }
    if (handler == nullptr) continue;
    SessionUsage& entry = usage[live->id];
    entry.host_memory_bytes = handler->shared_memory().mapped_bytes();
    entry.host_memory_segments = static_cast<uint32_t>(handler->shared_memory().segment_count());
    entry.waiting_calls = static_cast<uint32_t>(handler->waiting_calls());
    if (live->ring != nullptr) entry.channel_bytes = RingChannel::RegionBytes();
  }
  return usage;
}

uint32_t RuntimeService::max_waiting_calls() { return SessionHandler::max_waiting_calls(); }

RuntimeService::Counts RuntimeService::counts() const {
  Counts counts;
  counts.hello_timeouts = hello_deadlines_.fired();
  absl::MutexLock lock(&mu_);
  counts.sessions = static_cast<uint32_t>(live_.size());
  counts.pending = pending_;
  counts.closing = handlers_ - std::min<uint32_t>(handlers_, counts.sessions);
  counts.refused = refused_;
  return counts;
}

}  // namespace acld::server
