// The numbers both ends of the runtime protocol (proto/acl/v1/runtime.proto)
// must agree on. The client library and acld each read them from here, so
// changing one changes both sides.
#ifndef ACLD_PROTO_ACL_PROTOCOL_H_
#define ACLD_PROTO_ACL_PROTOCOL_H_

#include <cstdint>

namespace acld {

// Hello.protocol_version. Version 2 added the shared-memory channel
// (Hello.ring_ticket); version 3 hands the channel's doorbell (an eventfd)
// over with it, since acld serves channels from threads waiting in epoll.
// acld still serves version 1 and 2 clients, on the gRPC stream (a version 2
// channel without a doorbell is declined), and refuses any other version
// naming both.
inline constexpr uint32_t kProtocolVersion = 3;
inline constexpr uint32_t kOldestProtocolVersion = 1;

// The largest gRPC message either side (and aclctl) accepts. Bulk bytes go
// through shared memory, so messages stay far below it; the slack lets a
// batch of inline chunks, or a large status snapshot, through.
inline constexpr int kMaxMessageBytes = 64 << 20;

// A device-to-host copy into memory acld cannot map (not shared with it)
// comes back in replies of at most this many bytes each: the client asks in
// pieces this size, the daemon refuses larger ones.
inline constexpr uint64_t kMaxReplyCopyBytes = 32 << 20;
static_assert(kMaxReplyCopyBytes < static_cast<uint64_t>(kMaxMessageBytes),
              "a reply carrying copied bytes must fit a message");

}  // namespace acld

#endif  // ACLD_PROTO_ACL_PROTOCOL_H_
