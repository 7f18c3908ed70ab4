// Sessions opened on the identity socket (protocol 4): the process hands its
// channel over with "S" (peer_credentials.h) and never speaks gRPC. Its
// connection to the identity socket stays open and plays the part of the
// gRPC stream: the process closing it, or exiting, ends the session, and
// acld closes it once the session is over (after the end notice went into
// the channel), which is how the process learns that acld is gone.
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/server/client_descriptors.h"
#include "daemon/server/runtime_service.h"
#include "daemon/server/session_handler.h"
#include "daemon/server/session_ring.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/protocol.h"
#include "spdlog/spdlog.h"

namespace acld::server {

// Watches a direct session's connection in the channel pool: its end (or
// anything the process sends on it, which it must not) ends the session.
class RuntimeService::HangupWatch : public ChannelPool::Member {
 public:
  HangupWatch(RuntimeService& service, std::weak_ptr<Live> live,
              std::shared_ptr<const UniqueFd> connection)
      : service_(service), live_(std::move(live)), connection_(std::move(connection)) {}

  bool Serve() override {
    char byte;
    // Not recv(): a descriptor sent along would be dropped on this pool
    // thread, which serves other sessions (client_descriptors.h).
    const ssize_t n = ReceiveBytes(connection_->get(), &byte, 1, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    if (auto live = live_.lock()) service_.EndDirect(live);
    return false;
  }

 private:
  RuntimeService& service_;
  const std::weak_ptr<Live> live_;
  // Shared with the Live: a turn that runs after the session ended still
  // looks at this socket, never at a descriptor reused since.
  const std::shared_ptr<const UniqueFd> connection_;
};

absl::StatusOr<std::function<void(UniqueFd)>> RuntimeService::OpenDirect(
    const PeerCredentials& credentials, uint32_t protocol_version, ReceivedMemory channel,
    const Entrance* entrance) {
  if (protocol_version < kDirectSessionProtocolVersion || protocol_version > kProtocolVersion) {
    return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                     absl::StrCat("unsupported protocol version: the client speaks version ",
                                  protocol_version, ", this acld opens sessions on the identity "
                                  "socket for versions ", kDirectSessionProtocolVersion, " to ",
                                  kProtocolVersion, " (and on gRPC for versions ",
                                  kOldestProtocolVersion, " to ", kProtocolVersion, ")"));
  }
  absl::StatusOr<std::shared_ptr<SessionRing>> ring = SessionRing::Map(std::move(channel));
  if (!ring.ok()) {
    return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                     absl::StrCat("the session channel is not usable: ", ring.status().message()));
  }
  const PeerInfo peer = PeerFromKernel(credentials);
  absl::StatusOr<Opened> opened =
      Admit(peer, protocol_version, entrance != nullptr ? *entrance : HostEntrance(), *ring,
            /*context=*/nullptr, *ring);
  if (!opened.ok()) {
    return AclStatus(opened.status().code() == absl::StatusCode::kResourceExhausted
                         ? ACL_ERROR_RT_OVER_LIMIT
                         : ACL_ERROR_RT_SOCKET_CLOSE,
                     opened.status().message());
  }
  std::shared_ptr<Live> live = std::move(opened->live);
  ShowCommandLineOnceRead(*live, peer);
  std::weak_ptr<Live> weak = live;
  {
    absl::MutexLock lock(&live->mu);
    live->direct_handler = opened->handler;
    live->end_direct = [this, weak, tenant = live->tenant] {
      pool_.Post(
          [this, weak] {
            if (auto ending = weak.lock()) EndDirect(ending);
          },
          tenant);
    };
  }
  opened->handler->Open(kSessionOpenedCallId, /*on_ring=*/true);
  ServeChannel(live, std::move(opened->handler));
  return [this, live](UniqueFd connection) { AttachConnection(live, std::move(connection)); };
}

void RuntimeService::AttachConnection(const std::shared_ptr<Live>& live, UniqueFd connection) {
  absl::MutexLock lock(&live->mu);
  // Ended before its "O" went out: the connection closes here, which tells
  // the process.
  if (live->direct_ended) return;
  live->connection = std::make_shared<const UniqueFd>(std::move(connection));
  // Cancelled meanwhile (acld ended it before it had a connection): it ends now.
  if (live->cancelled) {
    live->end_direct();
    return;
  }
  absl::StatusOr<uint64_t> id =
      pool_.Add(live->connection->get(),
                std::make_shared<HangupWatch>(*this, live, live->connection),
                live->tenant);
  if (id.ok()) {
    live->hangup_id = *id;
  } else {
    spdlog::warn("session {}: cannot watch its connection ({}); the session ends", live->id,
                 std::string(id.status().message()));
    live->end_direct();
  }
}

void RuntimeService::EndDirect(const std::shared_ptr<Live>& live) {
  std::shared_ptr<SessionHandler> handler;
  std::shared_ptr<const UniqueFd> connection;
  {
    absl::MutexLock lock(&live->mu);
    if (live->direct_ended) return;
    live->direct_ended = true;
    handler = std::move(live->direct_handler);
    connection = std::move(live->connection);
    if (live->hangup_id != 0) pool_.Remove(live->hangup_id);
    live->hangup_id = 0;
  }
  // The connection ends once the runtime released the session and the
  // writer is done: the process has every message acld sent it by then. (It
  // closes when its watch lets go of it too.)
  Reap(live, std::move(handler), [this, live, connection] {
    if (connection != nullptr) shutdown(connection->get(), SHUT_RDWR);
    CallDone(live);
  });
}

}  // namespace acld::server
