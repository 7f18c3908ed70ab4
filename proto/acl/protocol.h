// The numbers both ends of the runtime protocol (proto/acl/v1/runtime.proto)
// must agree on. The client library and acld each read them from here, so
// changing one changes both sides.
#ifndef ACLD_PROTO_ACL_PROTOCOL_H_
#define ACLD_PROTO_ACL_PROTOCOL_H_

#include <cstdint>

namespace acld {

// The runtime protocol's version. Version 2 added the shared-memory channel
// (Hello.ring_ticket); version 3 hands the channel's doorbell (an eventfd)
// over with it, since acld serves channels from threads waiting in epoll;
// version 4 opens the session on the identity socket with its channel
// (proto/acl/peer_socket.h, "S"), so that a client needs no gRPC at all;
// version 5 hands memory over allocated and not sealed with F_SEAL_SEAL, so
// that acld can seal it against hole punching (a hole acld's fault filled
// would be paid for by acld's memory cgroup, not the client's). acld still
// serves version 1 to 4 clients (version 1 to 3 on the gRPC stream; a version
// 2 channel without a doorbell is declined), filling the holes it meets in
// their memory from the client's own mapping
// (daemon/server/client_page_filler.h), and refuses any other version naming
// both.
inline constexpr uint32_t kProtocolVersion = 5;
inline constexpr uint32_t kOldestProtocolVersion = 1;
// What a client says in the Hello of a session on the gRPC stream (the
// fallback): the newest such version, which acld 3 serves as well.
inline constexpr uint32_t kStreamProtocolVersion = 3;
// The first version whose sessions open on the identity socket.
inline constexpr uint32_t kDirectSessionProtocolVersion = 4;
// A session opened on the identity socket finds its SessionOpened in its
// channel, answering this call id (its first call uses the next).
inline constexpr uint64_t kSessionOpenedCallId = 1;
// In acld's refusal of a gRPC session stream over its caps of streams
// waiting for their Hello (--max_pending_hellos, --max_pending_hellos_per_uid):
// the client asks again a moment later.
inline constexpr char kWaitingForHello[] = "waiting to say Hello";

// The client sends an AsyncBatch once it holds kMaxBatchOps operations;
// threads submitting meanwhile add theirs before it goes, one each. acld
// refuses a batch of more than kMaxBatchOpsAccepted unapplied: a client of
// ours never makes one, and applying one costs acld what a hostile client
// chose.
inline constexpr int kMaxBatchOps = 1024;
inline constexpr int kMaxBatchOpsAccepted = 16 * kMaxBatchOps;

// The largest gRPC message either side (and aclctl) accepts. Bulk bytes go
// through shared memory, so messages stay far below it; the slack lets a
// batch of inline chunks, or a large status snapshot, through.
inline constexpr int kMaxMessageBytes = 64 << 20;

// The largest request acld accepts, whole, on the gRPC stream and on the
// channel (where it is also charged as it arrives); what
// gRPC holds of requests still arriving is bounded by
// --max_grpc_memory_bytes (docs/security.md). Our clients' largest requests
// are a batch (kMaxBatchBytes of payload and the operation that crosses it,
// at most a 4 MiB chunk) and aclInit's config file (at most 10 MiB).
inline constexpr int kMaxRequestBytes = 16 << 20;

// The largest aclInit config file: the client refuses a larger file, acld a
// larger config_content (another client could send anything up to a message).
inline constexpr uint64_t kMaxInitConfigBytes = 10ull << 20;

// A device-to-host copy into memory acld cannot map (not shared with it)
// comes back in replies of at most this many bytes each: the client asks in
// pieces this size, the daemon refuses larger ones.
inline constexpr uint64_t kMaxReplyCopyBytes = 32 << 20;
static_assert(kMaxReplyCopyBytes < static_cast<uint64_t>(kMaxMessageBytes),
              "a reply carrying copied bytes must fit a message");

}  // namespace acld

#endif  // ACLD_PROTO_ACL_PROTOCOL_H_
