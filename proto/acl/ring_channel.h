// A session's shared-memory channel: two message rings (message_ring.h) in
// one memfd, client to daemon and daemon to client, carrying the runtime
// protocol's messages (proto/acl/v1/runtime.proto) serialized exactly as the
// gRPC stream carries them — one codec for both carriers.
//
// The client creates the memfd, formats it, seals it against shrinking and
// hands it to acld on the identity socket; its Hello names the ticket. From
// the SessionOpened on, both sides speak over the rings; the gRPC stream only
// tells acld that the process went away and the client why its session ended.
//
// A message larger than one ring frame travels as several fragments: each
// frame starts with one byte, kMoreFragments or kLastFragment. A receiver
// holds at most one message's worth of fragments, so a peer cannot make it
// buffer without bound: the daemon kMaxRequestBytes (the most a client
// sends, as on the gRPC stream), the client kMaxMessageBytes. Every wait is cut into slices so that `stop` (the
// session ended, the peer died) is seen within one slice.
#ifndef ACLD_PROTO_ACL_RING_CHANNEL_H_
#define ACLD_PROTO_ACL_RING_CHANNEL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/acl/message_ring.h"

namespace acld {

class RingChannel {
 public:
  enum class Side { kClient, kDaemon };

  // Each direction's ring: room for several frames, small enough that a
  // thousand sessions cost the host little memory.
  static constexpr size_t kRingCapacity = 256 << 10;
  // The largest frame: a fragment marker and up to this many message bytes.
  static constexpr size_t kMaxFrameBytes = 64 << 10;
  static constexpr uint8_t kLastFragment = 0;
  static constexpr uint8_t kMoreFragments = 1;

  // The memfd's size: both rings.
  static size_t RegionBytes();
  // Formats both rings in a fresh region of RegionBytes() (the client, once).
  static void Format(void* region);

  // `region` (RegionBytes() long) stays mapped while this object lives.
  // `daemon_doorbell` (client side): the eventfd the daemon waits on in
  // epoll; the client writes it instead of waking a futex word.
  RingChannel(void* region, Side side, int daemon_doorbell = -1);

  // True while nothing more is to be done: checked between wait slices.
  using StopFn = std::function<bool()>;

  // Sends one message, waiting for room while the peer is behind. One thread
  // sends at a time (the caller serializes). Fails when `stop` says so before
  // the whole message went, or when the peer corrupted the ring.
  absl::Status Send(absl::string_view message, const StopFn& stop);

  // The next whole message; nullopt once `stop` says so or `deadline` has
  // passed and nothing is there (fragments of a message still arriving are
  // kept for the next call). One thread receives at a time. An error means
  // the peer broke the protocol (corrupt ring, oversized message): the
  // session must end.
  absl::StatusOr<std::optional<std::string>> Receive(
      const StopFn& stop, absl::Time deadline = absl::InfiniteFuture());

  // Whether the peer has read everything sent (one sender at a time, as Send).
  bool SentAllRead() { return out_.Drained(); }

  // Ends both directions' waits now and later (the session is over): a
  // Send or Receive waiting returns within a moment, once it asks `stop`.
  void Interrupt();

  // How long one wait lasts before `stop` is asked again.
  static constexpr absl::Duration kWaitSlice = absl::Milliseconds(200);

  // The daemon's side never blocks: it serves many channels from a few
  // threads that wait in epoll on each channel's doorbell. Receiving and
  // sending are each one thread's at a time (two different threads may do
  // one each).
  //
  // The next whole message, if it has arrived; fragments of a message that
  // has not are kept for the next call. The same errors as Receive.
  absl::StatusOr<std::optional<std::string>> TryReceive();
  // Asked before the buffer keeping the fragments of a message still
  // arriving grows to `bytes`, and told (0) when they have become its whole
  // message: an error refuses the fragment, and the receive returns it. acld charges them to
  // the session's user (daemon/server/message_budget.h). Set before the
  // first receive.
  using KeepFn = std::function<absl::Status(size_t bytes)>;
  void OnKeepingFragments(KeepFn keep) { keep_ = std::move(keep); }
  // Before going back to epoll: declares the receiver asleep (the client
  // rings the doorbell when it publishes). True when a message is there
  // already (the caller receives on instead).
  absl::StatusOr<bool> ArmReceive();
  // Awake (the doorbell rang): the client need not ring it for every message.
  void DisarmReceive();
  // Polls for a moment for the client's next frame (message_ring.h's
  // adaptive spin): true when one arrived.
  absl::StatusOr<bool> SpinForFrame();
  // Takes `message` unless an earlier one is still being sent (false). A
  // message taken goes out as far as there is room now; the rest goes out in
  // later PushPending calls.
  absl::StatusOr<bool> Offer(std::string message);
  // Sends what is left of the message Offer took. True when nothing is left;
  // false when the ring is full: then the sender is declared asleep and the
  // client rings the doorbell when it frees room.
  absl::StatusOr<bool> PushPending();
  bool sending() const { return sending_; }

  // The receiving ring, for a thread that watches it while the receiving
  // thread is away (MessageRing::Consumer's watcher calls only).
  MessageRing::Consumer& incoming() { return in_; }

 private:
  MessageRing::Producer out_;
  MessageRing::Consumer in_;
  // A message that arrives in fragments, until its last one.
  // The largest message it receives (its side's).
  const size_t max_in_;
  std::string partial_;
  KeepFn keep_;
  // The message being sent and how much of it went (Offer, PushPending).
  std::string pending_;
  size_t pending_offset_ = 0;
  bool sending_ = false;  // frames of pending_ are still to go (an empty message has one)
  // One frame's buffer, kept to spare an allocation per frame.
  std::string frame_;
};

}  // namespace acld

#endif  // ACLD_PROTO_ACL_RING_CHANNEL_H_
