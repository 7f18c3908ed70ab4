// The daemon's end of a session's shared-memory channel
// (proto/acl/ring_channel.h): the client's memfd mapped here, requests read
// from its ring and every outgoing message written to the other, never
// blocking — the channel pool (channel_pool.h) serves it when its doorbell
// rings.
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
#include "daemon/server/client_memory.h"
#include "daemon/server/message_budget.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/session_writer.h"
#include "proto/acl/ring_channel.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

class SessionRing : public SessionWriter::Carrier {
 public:
  // Maps the channel the client handed over (its size must be the
  // channel's, and its doorbell must have come with it).
  static absl::StatusOr<std::shared_ptr<SessionRing>> Map(ReceivedMemory memory);
  ~SessionRing() override;
  SessionRing(const SessionRing&) = delete;
  SessionRing& operator=(const SessionRing&) = delete;

  // What the channel keeps of a request still arriving in fragments is
  // charged to `hold` (its session's user's budget); past the budget the
  // read fails and the session ends. Before the first read.
  void ChargeFragmentsTo(std::unique_ptr<MessageBudget::Hold> hold);
  // Bytes kept of a request still arriving (any thread may ask).
  uint64_t inbound_bytes() const { return fragments_ != nullptr ? fragments_->bytes() : 0; }

  // The eventfd the client rings (for the channel pool's epoll set).
  int doorbell() const { return doorbell_.get(); }

  // Reading: one thread at a time (the session's turn in the pool).
  // The next request if one has arrived (null if none), parsed into `arena`:
  // a batch of launches becomes a few arena blocks rather than allocations
  // per operation. It lives until the arena is reset. An error: the client
  // broke the channel (its session is to end).
  absl::StatusOr<const acl::v1::ClientMessage*> TryRead(google::protobuf::Arena& arena);
  // Polls for a moment for the next request: true when one is there.
  absl::StatusOr<bool> SpinForRequest() { return channel_.SpinForFrame(); }
  // Going back to the pool: true when a request is there already (read on).
  absl::StatusOr<bool> ArmRead() { return channel_.ArmReceive(); }
  // The doorbell rang: no need to ring it for every request meanwhile.
  void DisarmRead() { channel_.DisarmReceive(); }

  // Writing (SessionWriter's carrier). A client that breaks its end calls
  // `on_broken` once (set before the first write); then messages are dropped.
  void OnBroken(std::function<void(const absl::Status&)> on_broken) {
    on_broken_ = std::move(on_broken);
  }
  // `on_drained` runs when a Push sent the last of a message that did not
  // fit at once (set before the first write). The session's turn stops
  // reading requests while a message waits to go out; the Push that finishes
  // it may run on any writing thread, and must bring the turn back.
  void OnDrained(std::function<void()> on_drained) { on_drained_ = std::move(on_drained); }
  bool Push() override;
  void Take(const acl::v1::ServerMessage& message) override;
  bool Idle() const override { return !sending_.load(); }

 private:
  SessionRing(std::unique_ptr<MappedClientMemory> memory, UniqueFd doorbell);
  void Broke(const absl::Status& status);
  // An error once acld gave up filling an older client's channel
  // (client_page_filler.h): its session is to end.
  absl::Status GivenUp() const;

  const std::unique_ptr<MappedClientMemory> memory_;  // outlives channel_, which reads it
  const UniqueFd doorbell_;
  RingChannel channel_;
  std::unique_ptr<MessageBudget::Hold> fragments_;
  std::function<void(const absl::Status&)> on_broken_;
  std::function<void()> on_drained_;
  std::atomic<bool> sending_{false};
  bool broken_ = false;  // the writing side's
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SESSION_RING_H_
