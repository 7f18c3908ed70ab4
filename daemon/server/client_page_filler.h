// Memory a libascendcl before protocol version 5 handed over: a memfd it
// sealed with F_SEAL_SEAL, so that acld cannot seal it against hole punching
// (peer_credentials.h, SealAgainstHoles), and whose pages the client only
// allocates as it first touches them.
//
// A fault of acld's in a hole of such memory would allocate the page, and
// acld's memory cgroup would pay for it, not the client's; a client that
// punched the page out again, after keeping it (vmsplice into a pipe), could
// so make acld hold any amount of memory. So acld never fills a hole itself:
// its mapping is registered with a userfaultfd (missing pages), and each
// fault in a hole is served by reading that part of the file through the
// client's own mapping (/proc/<pid>/mem), which allocates it in the client's
// memory map and charges the client's cgroup. acld's faulting thread then
// finds the page there.
//
// If the client's mapping is gone (it unmapped it, or exited), or it keeps
// punching holes (acld faults in it more than twice per chunk, and a few
// more), or
// the fill does not come in time (memory_sealer.h), acld gives up on that
// memory: its mapping becomes memory of acld's own (a sparse memfd nobody
// else has), the access under way ends there, and the memory's owner
// (given_up(), on_given_up) refuses the memory from then on and ends the
// session. acld pays for what that access writes, until the mapping goes:
// pages no client can keep.
#ifndef ACLD_DAEMON_SERVER_CLIENT_PAGE_FILLER_H_
#define ACLD_DAEMON_SERVER_CLIENT_PAGE_FILLER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/server/peer_credentials.h"

namespace acld::server {

// Where the process that handed a memfd over maps it.
struct ClientMapping {
  // Its /proc/<pid>/mem, opened while it was that process: it reaches that
  // process's memory map and no other, whoever takes the pid later. One for
  // all the process's regions.
  std::shared_ptr<const UniqueFd> memory;
  uint64_t address = 0;  // of the memfd's first byte
};

// Looks for a shared, readable mapping of `fd`'s first `size` bytes in
// process `pid` (which started at `start_ticks`, process_clock.h; 0, unknown,
// is refused). Reads the process's memory map: run it where the process may
// make it wait (RunForSender).
absl::StatusOr<ClientMapping> FindClientMapping(pid_t pid, uint64_t start_ticks, int fd,
                                                uint64_t size);

// Bytes filled at once: a chunk of the client's memory around the hole.
inline constexpr uint64_t kFillBytes = 2 << 20;

// acld's mapping of a client's memory whose holes are filled from the client.
// Dropped before the mapping is unmapped.
class FilledFromClient {
 public:
  ~FilledFromClient();
  FilledFromClient(const FilledFromClient&) = delete;
  FilledFromClient& operator=(const FilledFromClient&) = delete;

  // acld gave up on this memory (above): it is refused from now on.
  bool given_up() const;
  // Fills tried so far (one per hole met, whatever became of it).
  uint64_t fills() const;

  struct Region;

 private:
  friend absl::StatusOr<std::unique_ptr<FilledFromClient>> FillFromClient(
      void*, uint64_t, ClientMapping, std::string, std::function<void()>);
  explicit FilledFromClient(std::shared_ptr<Region> region) : region_(std::move(region)) {}
  std::shared_ptr<Region> region_;
};

// Starts filling the holes acld's mapping [base, base + size) of a client's
// memfd meets from `client`'s mapping of it; `sender` as in
// ReceivedMemory::sender. `on_given_up` runs once if acld gives up on it, on
// the thread that serves every older client's faults: it must not wait.
// Fails when this kernel or acld's privileges allow no userfaultfd.
absl::StatusOr<std::unique_ptr<FilledFromClient>> FillFromClient(
    void* base, uint64_t size, ClientMapping client, std::string sender,
    std::function<void()> on_given_up = nullptr);

// OK when acld can fill older clients' holes (it has a userfaultfd).
absl::Status CanFillFromClients();

// What filling holds now, for aclctl's status: older clients' memories acld
// fills (regions watched and not given up), and client processes whose
// /proc/<pid>/mem it keeps open for them.
struct FillingCounts {
  uint32_t regions = 0;
  uint32_t client_memories = 0;
};
FillingCounts CountFilling();

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_CLIENT_PAGE_FILLER_H_
