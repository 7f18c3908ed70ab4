// The client's end of its session's shared-memory channel
// (proto/acl/ring_channel.h): a sealed memfd it creates, maps and hands to
// acld on the identity socket, then requests written to one ring and
// replies and events read from the other.
//
// acld serves channels from a few threads that wait in epoll, so the client
// hands over an eventfd with the memfd: its doorbell, rung when acld sleeps.
//
// The mapping is not inherited by fork() (MADV_DONTFORK): a child has no
// session of its own (client_runtime.h says what its calls return), and it
// must not scribble on its parent's channel.
#ifndef ACLD_CLIENT_CLIENT_RING_H_
#define ACLD_CLIENT_CLIENT_RING_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/acl/ring_channel.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acl_client {

class ClientRing {
 public:
  // Creates the channel and hands it to the daemon whose identity socket is
  // `peer_socket`; ticket() names it in the Hello.
  static absl::StatusOr<std::unique_ptr<ClientRing>> Create(const std::string& peer_socket,
                                                            absl::Duration timeout);
  // Creates the channel and opens this process's session on it at the
  // identity socket (protocol 4: no gRPC). The connection stays with the
  // channel: closing it (the destructor) ends the session, and its end on
  // acld's side stops the channel (acld is gone, or ended the session).
  // `early` (serialized requests) is in the channel before acld has it; it
  // must fit in a ring at once.
  static absl::StatusOr<std::unique_ptr<ClientRing>> OpenSession(
      const std::string& peer_socket, absl::Duration timeout,
      const std::vector<std::string>& early = {});
  ~ClientRing();
  ClientRing(const ClientRing&) = delete;
  ClientRing& operator=(const ClientRing&) = delete;

  const std::string& ticket() const { return ticket_; }

  // Writes `message` after everything written before; false once stopped or
  // broken. One writer at a time.
  bool Write(const acl::v1::ClientMessage& message);
  // Whether acld has read everything written (asked by the writer).
  bool AllRead() { return channel_.SentAllRead(); }
  // The next message from acld; nullopt once stopped and drained, or when
  // nothing came by `deadline`. An error: the channel broke. One reader at a
  // time.
  absl::StatusOr<std::optional<acl::v1::ServerMessage>> Read(
      absl::Time deadline = absl::InfiniteFuture());
  // Whether Stop was called.
  bool stopped() const { return stopped_.load(); }
  // The ring Read reads, for a thread watching it while the reader is away
  // (MessageRing::Consumer's watcher calls only; session_channel.h).
  acld::MessageRing::Consumer& incoming() { return channel_.incoming(); }

  // The session is over: waits end now, Read drains what is left.
  void Stop();
  // Stop, and (a session opened on the identity socket) end it: acld sees
  // its connection end.
  void Hangup();
  // In a child of fork(): closes the inherited connection (only close(2)),
  // so that the parent's end still ends its session.
  void ForkedChild();

 private:
  // Owns `base` (mapped) and `doorbell` from now on.
  ClientRing(void* base, int doorbell);
  // The channel and its doorbell, formatted and mapped; `handover(ring, fd,
  // size)` gives them to acld, setting the ring's ticket or connection.
  template <typename Handover>
  static absl::StatusOr<std::unique_ptr<ClientRing>> Make(Handover handover);
  // Whether waits must end: stopped, or (looked at no more than every
  // kConnectionCheck) acld closed the session's connection.
  bool ShouldStop();
  static constexpr absl::Duration kConnectionCheck = absl::Milliseconds(100);

  void* const base_;
  // The eventfd acld waits on for this channel (in epoll): written when acld
  // sleeps and this side published a request or freed room.
  const int doorbell_;
  std::string ticket_;  // set by Make's handover (Create)
  acld::RingChannel channel_;
  std::atomic<bool> stopped_{false};
  // The session's connection to the identity socket (-1: the session is on gRPC).
  std::atomic<int> connection_;
  std::atomic<int64_t> next_connection_check_ns_{0};
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_CLIENT_RING_H_
