// The daemon's end of a session's shared-memory channel
// (proto/acl/ring_channel.h): the client's memfd mapped here, requests read
// from its ring and every outgoing message written to the other.
//
// The memfd is the client's: it was sealed against shrinking and checked
// when the identity socket received it, and acld maps exactly the size the
// channel needs, so nothing the client does can make a byte of it fault.
// What the client writes in it is read once, validated and copied out
// (message_ring.h); a client that corrupts it ends its own session.
#ifndef ACLD_DAEMON_SERVER_SESSION_RING_H_
#define ACLD_DAEMON_SERVER_SESSION_RING_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "daemon/server/peer_credentials.h"
#include "proto/acl/ring_channel.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

class SessionRing {
 public:
  // Maps the channel the client handed over (its size must be the channel's).
  static absl::StatusOr<std::shared_ptr<SessionRing>> Map(ReceivedMemory memory);
  ~SessionRing();
  SessionRing(const SessionRing&) = delete;
  SessionRing& operator=(const SessionRing&) = delete;

  // The next request; nullopt once `gone` says the session is over (or
  // Stop() was called). An error: the client broke the channel.
  absl::StatusOr<std::optional<acl::v1::ClientMessage>> Read(const std::function<bool()>& gone);

  // Writes `message` after everything written before it, waiting while the
  // client is behind; false once stopped or once `gone` says the session is
  // over (a client that died with its ring full must not hold the writer).
  // One writer at a time.
  bool Write(const acl::v1::ServerMessage& message, const std::function<bool()>& gone);

  // Ends every wait (a read or a write waiting for room) within a moment.
  void Stop();

 private:
  SessionRing(void* base, size_t size);

  void* const base_;
  const size_t size_;
  RingChannel channel_;
  std::atomic<bool> stopped_{false};
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SESSION_RING_H_
