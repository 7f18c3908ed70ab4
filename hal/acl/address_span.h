// The DeviceInfo of an acl device, whose address window grows as the vendor
// hands out memory.
//
// A real device's addresses are not known in advance: aclrtMalloc returns
// pointers of the vendor's choosing. A window such as [1, 2^64 - 1) would make
// every pointer a device pointer, so the window is instead the span of the
// allocations aclrtMalloc has returned so far, widened (in 64 MiB steps) as
// new ones fall outside it, and never narrowed (a stale pointer into freed
// device memory must still read as a device pointer, to be refused as such).
// The core infers ACL_MEMCPY_DEFAULT directions with it, so on this backend
// that inference is only as good as the span: a pointer inside it reads as a
// device pointer even if the host happens to have memory there, and a device
// pointer of an allocation made after a client learnt the window reads as
// host memory to that client. (AclDevice::IsDeviceAddress is exact for live
// allocations.) Before the first allocation the window is empty.
//
// Device::info() hands out a reference, so a widened window is a new
// immutable snapshot; older snapshots stay valid (and are kept) until the
// device goes, which costs a few dozen small objects over a device's life.
#ifndef ACLD_HAL_ACL_ADDRESS_SPAN_H_
#define ACLD_HAL_ACL_ADDRESS_SPAN_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "hal/device.h"

namespace hal::acl {

class AddressSpan {
 public:
  explicit AddressSpan(DeviceInfo info);

  // The latest snapshot.
  const DeviceInfo& info() const { return *current_.load(std::memory_order_acquire); }

  // Widens the window to cover [begin, end).
  void Cover(uint64_t begin, uint64_t end);

 private:
  absl::Mutex mu_;
  std::vector<std::unique_ptr<const DeviceInfo>> snapshots_ ABSL_GUARDED_BY(mu_);
  std::atomic<const DeviceInfo*> current_;
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ADDRESS_SPAN_H_
