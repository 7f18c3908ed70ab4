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
// holds at most kMaxMessageBytes of fragments, so a peer cannot make it
// buffer without bound. Every wait is cut into slices so that `stop` (the
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
  RingChannel(void* region, Side side);

  // True while nothing more is to be done: checked between wait slices.
  using StopFn = std::function<bool()>;

  // Sends one message, waiting for room while the peer is behind. One thread
  // sends at a time (the caller serializes). Fails when `stop` says so before
  // the whole message went, or when the peer corrupted the ring.
  absl::Status Send(absl::string_view message, const StopFn& stop);

  // The next whole message; nullopt once `stop` says so and nothing is left.
  // One thread receives at a time. An error means the peer broke the
  // protocol (corrupt ring, oversized message): the session must end.
  absl::StatusOr<std::optional<std::string>> Receive(const StopFn& stop);

  // Ends both directions' waits now and later (the session is over): a
  // Send or Receive waiting returns within a moment, once it asks `stop`.
  void Interrupt();

  // How long one wait lasts before `stop` is asked again.
  static constexpr absl::Duration kWaitSlice = absl::Milliseconds(200);

 private:
  MessageRing::Producer out_;
  MessageRing::Consumer in_;
};

}  // namespace acld

#endif  // ACLD_PROTO_ACL_RING_CHANNEL_H_
