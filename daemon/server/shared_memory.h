// The shared memory segments one session registered: its aclrtMallocHost
// blocks and its staging area, mapped into the daemon so that a copy from or
// to them costs one memcpy here and no bytes on the socket.
#ifndef ACLD_DAEMON_SERVER_SHARED_MEMORY_H_
#define ACLD_DAEMON_SERVER_SHARED_MEMORY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/runtime.h"

namespace acld::server {

class SharedMemoryRegistry {
 public:
  // Maps the POSIX shared memory object `name` (created by the client, at
  // least `size` bytes, owned by `owner_uid`: a session may only map its own
  // user's objects) and returns its segment id.
  absl::StatusOr<uint64_t> Register(const std::string& name, uint64_t size, uid_t owner_uid);
  absl::Status Unregister(uint64_t segment);

  // [offset, offset + count) of `segment`, kept mapped while the span lives.
  absl::StatusOr<HostSpan> Resolve(uint64_t segment, uint64_t offset, uint64_t count) const;

  uint64_t mapped_bytes() const;

 private:
  struct Mapping;

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<Mapping>> segments_ ABSL_GUARDED_BY(mu_);
  uint64_t next_segment_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SHARED_MEMORY_H_
