// The shared memory segments one session registered: its aclrtMallocHost
// blocks and its staging area, mapped into the daemon so that a copy from or
// to them costs one memcpy here and no bytes on the socket.
//
// Each segment is a memfd the client handed over on the identity socket
// (peer_credentials.h), sealed so that it can never shrink: acld maps exactly
// the verified size and no client action can make a byte of it fault.
#ifndef ACLD_DAEMON_SERVER_SHARED_MEMORY_H_
#define ACLD_DAEMON_SERVER_SHARED_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/runtime.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/segment_budget.h"

namespace acld::server {

// What one session may keep mapped in acld. A segment unregistered while a
// copy still uses it counts until the copy ends, so that in-flight copies
// cannot be used to pile up mappings.
struct SharedMemoryLimits {
  uint64_t max_bytes = 16ull << 30;  // acld --max_host_memory_per_session
  uint32_t max_segments = 4096;
  // Segments of all sessions of the tenant, and of all tenants (none: only
  // the session's own limits).
  std::shared_ptr<SegmentBudget> shared;
  Tenant tenant;
  // Ends the session, without waiting: acld gave up filling the holes of
  // one of its older client's segments (client_page_filler.h), and its work
  // queued on that memory must not run.
  std::function<void()> end_session;
};

// Registers a new mapping with the devices (Runtime::RegisterHostMemory); the
// handle it returns is kept until the mapping goes.
using HostMemoryRegistrar = std::function<std::shared_ptr<void>(void* data, uint64_t bytes)>;

class SharedMemoryRegistry {
 public:
  explicit SharedMemoryRegistry(SharedMemoryLimits limits = {},
                                HostMemoryRegistrar registrar = nullptr);
  ~SharedMemoryRegistry();
  SharedMemoryRegistry(const SharedMemoryRegistry&) = delete;
  SharedMemoryRegistry& operator=(const SharedMemoryRegistry&) = delete;

  // Maps `memory` (its verified size, read-write, shared) and returns its
  // segment id; the descriptor is closed. ACL_ERROR_RT_MEMORY_ALLOCATION
  // beyond the limits. The session's one `staging` segment (its pageable
  // copies' area) is never refused by the tenant's or the host's segment
  // caps (SegmentBudget::Take); a second one while the first is mapped is an
  // ordinary segment.
  absl::StatusOr<uint64_t> Register(ReceivedMemory memory, bool staging = false);
  // Forgets `segment`; its mapping goes when the last copy using it ends.
  absl::Status Unregister(uint64_t segment);

  // [offset, offset + count) of `segment`, kept mapped while the span lives.
  absl::StatusOr<HostSpan> Resolve(uint64_t segment, uint64_t offset, uint64_t count) const;

  // What this session has mapped in acld, including unregistered segments
  // that an in-flight copy still uses: the quantities the limits apply to.
  uint64_t mapped_bytes() const;
  size_t segment_count() const;

 private:
  struct Mapping;
  struct Usage;

  const SharedMemoryLimits limits_;
  const HostMemoryRegistrar registrar_;
  // Shared with every mapping, which gives its share back when unmapped.
  const std::shared_ptr<Usage> usage_;
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<Mapping>> segments_ ABSL_GUARDED_BY(mu_);
  uint64_t next_segment_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SHARED_MEMORY_H_
