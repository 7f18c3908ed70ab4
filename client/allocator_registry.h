// Custom allocators per stream (SPEC section 7): descriptors the application
// fills in, and which stream carries which copy of a descriptor. Function
// pointers live in the process; the daemon only learns which streams carry an
// allocator (aclctl shows it).
#ifndef ACLD_CLIENT_ALLOCATOR_REGISTRY_H_
#define ACLD_CLIENT_ALLOCATOR_REGISTRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_rt_allocator.h"

namespace acl_client {

struct AllocatorDesc {
  aclrtAllocator obj = nullptr;
  aclrtAllocatorAllocFunc alloc = nullptr;
  aclrtAllocatorFreeFunc free = nullptr;
  aclrtAllocatorAllocAdviseFunc alloc_advise = nullptr;
  aclrtAllocatorGetAddrFromBlockFunc get_addr_from_block = nullptr;
};

class AllocatorRegistry {
 public:
  static AllocatorRegistry& Get();

  AllocatorDesc* CreateDesc();
  absl::Status DestroyDesc(aclrtAllocatorDesc desc);
  // Applies `update` to a live descriptor, or fails for a NULL or unknown one.
  absl::Status UpdateDesc(aclrtAllocatorDesc desc, const char* api,
                          const std::function<void(AllocatorDesc&)>& update);

  // Copies `desc` for `stream` (replacing an earlier registration).
  absl::Status Register(uint64_t stream, aclrtAllocatorDesc desc);
  // The registration's copy, and the descriptor handle it was registered from.
  struct Registration {
    aclrtAllocatorDesc desc_handle = nullptr;
    AllocatorDesc copy;
  };
  absl::StatusOr<Registration> Find(uint64_t stream) const;
  // True when `stream` had a registration.
  bool Unregister(uint64_t stream);

 private:
  mutable absl::Mutex mu_;
  std::set<AllocatorDesc*> descs_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Registration> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_ALLOCATOR_REGISTRY_H_
