// What an acl device has handed out: the bytes it reserved and the live
// allocations, by address.
//
// Reserved bytes follow the rounding CANN states for aclrtMalloc: the size is
// rounded up to 32 bytes and 32 bytes are added, and every allocation starts 64-byte aligned, so an
// allocation of `size` takes ALIGN_UP(ALIGN_UP(size, 32) + 32, 64) bytes of
// the device. (Ascend 950 omits the extra 32 bytes; the ledger uses the larger
// rule everywhere, overstating those allocations by at most 64 bytes.)
// Capacity is the device's HBM as aclrtGetMemInfo reports it; the vendor keeps
// some of it for itself, so aclrtMalloc may refuse before the ledger is full.
#ifndef ACLD_HAL_ACL_ALLOCATION_LEDGER_H_
#define ACLD_HAL_ACL_ALLOCATION_LEDGER_H_

#include <cstdint>
#include <map>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace hal::acl {

class AllocationLedger {
 public:
  explicit AllocationLedger(uint64_t capacity) : capacity_(capacity) {}

  uint64_t capacity() const { return capacity_; }

  // nullopt for 0 (aclrtMalloc refuses it), for sizes whose rounding
  // overflows and for sizes the device could never hold.
  std::optional<uint64_t> ReservedBytes(uint64_t size) const;

  // Sets `reserved` bytes aside, or false when they do not fit.
  bool TryReserve(uint64_t reserved);
  void Unreserve(uint64_t reserved);

  void AddLive(uint64_t address, uint64_t reserved);
  // The reserved bytes of the live allocation at `address`, forgotten; nullopt
  // when there is none (a double or foreign free).
  std::optional<uint64_t> RemoveLive(uint64_t address);
  // True when `address` lies inside a live allocation's reserved bytes.
  bool IsLive(uint64_t address) const;

  uint64_t used() const;

 private:
  const uint64_t capacity_;
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint64_t> live_ ABSL_GUARDED_BY(mu_);  // address -> reserved
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_ALLOCATION_LEDGER_H_
