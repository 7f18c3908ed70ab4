// A hal::Transfer as the arguments of aclrtMemcpy / aclrtMemcpyAsync.
#ifndef ACLD_HAL_ACL_VENDOR_COPY_H_
#define ACLD_HAL_ACL_VENDOR_COPY_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "acl/acl.h"
#include "hal/memory.h"

namespace hal::acl {

struct VendorCopy {
  void* dst = nullptr;
  size_t dst_max = 0;
  const void* src = nullptr;
  size_t count = 0;
  aclrtMemcpyKind kind = ACL_MEMCPY_HOST_TO_HOST;
};

// The direction comes from which sides are device spans, never from the
// addresses: the core already told host from device memory.
absl::StatusOr<VendorCopy> ToVendorCopy(const Transfer& transfer);

// A device span as the pointer the vendor takes.
inline void* VendorPointer(const DeviceSpan& span) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(span.address()));
}

// What may be written at `span`: the rest of its buffer.
inline size_t BytesAfter(const DeviceSpan& span) {
  return static_cast<size_t>(span.buffer.size - span.offset);
}

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_VENDOR_COPY_H_
