// Maps a client's memory and makes it safe for acld to touch: no fault of
// acld's in it may allocate a page that acld's memory cgroup would pay for
// (docs/security.md, "Make acld pay for a client's memory").
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

// acld's mapping of a client's memory (its first `size` bytes, read-write,
// shared), out of acld's core dumps and never made of huge pages (acld's
// cgroup would pay for one); unmapped when dropped.
class MappedClientMemory {
 public:
  // An InvalidArgument error: the memory is the client's mistake (holes);
  // others: acld could not map it or make it safe (not in time, or no way to
  // fill an older client's holes here). `on_given_up`: as FillFromClient's.
  static absl::StatusOr<std::unique_ptr<MappedClientMemory>> Map(
      const ReceivedMemory& memory, uint64_t size, std::function<void()> on_given_up = nullptr,
      absl::Duration wait = kSealWait);
  ~MappedClientMemory();
  MappedClientMemory(const MappedClientMemory&) = delete;
  MappedClientMemory& operator=(const MappedClientMemory&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  // acld gave up filling this older client's memory (client_page_filler.h):
  // it is refused from now on.
  bool given_up() const { return filled_ != nullptr && filled_->given_up(); }

 private:
  MappedClientMemory(uint8_t* base, uint64_t size, std::unique_ptr<FilledFromClient> filled)
      : base_(base), size_(size), filled_(std::move(filled)) {}

  uint8_t* const base_;
  const uint64_t size_;
  std::unique_ptr<FilledFromClient> filled_;  // an older client's memory; null if sealed
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_CLIENT_MEMORY_H_
