// Host memory registered with the vendor, so that async copies to and from it
// stay asynchronous.
//
// A CANN runtime performs aclrtMemcpyAsync with unregistered (pageable) host
// memory synchronously: the submitting thread waits for the copy. The daemon
// registers the host memory its copies use (a client's shared memory) once,
// when it maps it. Registration is per process in the vendor, so one registry
// serves all devices of a backend; it works in whole pages (CANN requires
// page-aligned registrations) and counts references, so that the same pages
// registered twice are registered with the vendor once.
//
// aclrtHostRegisterV2(ACL_HOST_REG_PINNED) page-locks ordinary memory, which is
// what async copies need; older CANN only has aclrtHostRegister, whose mapped
// registration also pins the pages.
#ifndef ACLD_HAL_ACL_HOST_REGISTRY_H_
#define ACLD_HAL_ACL_HOST_REGISTRY_H_

#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "hal/acl/device_context.h"

namespace hal::acl {

class HostRegistry {
 public:
  // Registers the pages of [address, address + bytes) through `context`.
  absl::Status Register(const DeviceContext& context, void* address, uint64_t bytes);
  // Undoes one Register of the same `address`.
  absl::Status Unregister(const DeviceContext& context, void* address);
  // True when [address, address + bytes) lies in registered pages.
  bool Covers(const void* address, uint64_t bytes) const;

 private:
  struct Pages {
    uint64_t end = 0;
    uint64_t references = 0;
  };

  mutable absl::Mutex mu_;
  std::map<uint64_t, Pages> pages_ ABSL_GUARDED_BY(mu_);  // first page -> pages
  // What each Register address registered (its first page), with a count.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> callers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_HOST_REGISTRY_H_
