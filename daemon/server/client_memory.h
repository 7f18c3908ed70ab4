// Makes a client's memory that acld has just mapped safe for acld to touch:
// no fault of acld's in it may allocate a page that acld's memory cgroup
// would pay for (docs/security.md, "Make acld pay for a client's memory").
//
// Memory of a libascendcl of protocol version 5 or later is sealed against
// hole punching (SealAgainstHoles, on a thread of its own: memory_sealer.h).
// Memory an older libascendcl sealed for good (F_SEAL_SEAL) cannot be; its
// holes are filled from the client's own mapping instead, charged to the
// client (client_page_filler.h), unless acld was started with
// --map_unsealed_client_memory, which maps it as it comes.
#ifndef ACLD_DAEMON_SERVER_CLIENT_MEMORY_H_
#define ACLD_DAEMON_SERVER_CLIENT_MEMORY_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/server/client_page_filler.h"
#include "daemon/server/memory_sealer.h"
#include "daemon/server/peer_credentials.h"

namespace acld::server {

// For `memory` mapped at `base` (its first `size` bytes). What it returns
// must be dropped before the unmap: null for sealed memory, the filling of an
// older client's memory otherwise. An InvalidArgument error: the memory is
// the client's mistake (holes); others: acld could not make it safe (not in
// time, or no way to fill an older client's holes here).
// `on_given_up`: as FillFromClient's.
absl::StatusOr<std::unique_ptr<FilledFromClient>> PrepareClientMemory(
    const ReceivedMemory& memory, void* base, uint64_t size,
    std::function<void()> on_given_up = nullptr, absl::Duration wait = kSealWait);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_CLIENT_MEMORY_H_
