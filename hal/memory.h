// Device memory as the HAL hands it out and takes it back in device work.
#ifndef ACLD_HAL_MEMORY_H_
#define ACLD_HAL_MEMORY_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "proto/acl/address_range.h"

namespace hal {

// The window of addresses a device hands out. The core tells device pointers
// from host pointers with it (ACL_MEMCPY_DEFAULT) and the client learns it at
// session open; nothing outside a backend knows how addresses are laid out.
// The client holds these windows too, without the HAL: the type is the
// contract's (proto/acl/address_range.h).
using AddressRange = acld::AddressRange;

// One allocation of device memory. `address` is the opaque device address the
// application sees. `storage` is the backend's own handle on the allocation; a
// backend keeps the memory valid while any copy of it lives, so device work
// that holds a buffer can finish even if the application freed it meanwhile.
struct DeviceBuffer {
  uint64_t address = 0;
  uint64_t size = 0;      // what the application asked for
  uint64_t reserved = 0;  // what the device set aside (size rounded to its granularity)
  std::shared_ptr<void> storage;
};

// `offset` bytes into `buffer`: where device work reads or writes. The core
// builds spans only from ranges it checked (MemoryManager::Resolve), so a
// backend may trust that [offset, offset + count) lies inside the buffer.
struct DeviceSpan {
  DeviceBuffer buffer;
  uint64_t offset = 0;

  uint64_t address() const { return buffer.address + offset; }
};

// A copy in any direction: exactly one source and one destination are set.
// Host memory is memory the daemon mapped (a client's shared memory, a
// request's buffer); device memory is a checked span.
struct Transfer {
  std::optional<DeviceSpan> device_dst;
  void* host_dst = nullptr;
  std::optional<DeviceSpan> device_src;
  const void* host_src = nullptr;
  uint64_t count = 0;
  // The host reads `host_dst` as soon as the copy is done (a staging slot
  // the client copies out of, a reply's buffer): a backend whose copies go
  // through the host's caches (the sim) keeps it there; one that copies by
  // DMA ignores it.
  bool host_reads_next = false;
};

// A copy into host memory up to this size is most likely read from the
// caches next (its destination fits them): Transfer::host_reads_next.
inline constexpr uint64_t kHostCachedCopyBytes = uint64_t{16} << 20;

// The most of a copy or fill that runs in one go on a thread others share
// (acld's synchronous transfers, a sim stream's items): small enough that a
// piece of memory the device has never touched (page faults on the sim) still
// takes milliseconds, and as large as a bulk copy's chunk (the sim's
// streaming copy is made for those): pieces of 1 MiB cost a 256 MiB copy
// from pinned memory a third of its speed, of 4 MiB a quarter
// (docs/performance.md, session 22).
inline constexpr uint64_t kTransferPieceBytes = uint64_t{4} << 20;

// `span` moved `bytes` further into its buffer.
inline DeviceSpan Advanced(const DeviceSpan& span, uint64_t bytes) {
  DeviceSpan advanced = span;
  advanced.offset += bytes;
  return advanced;
}

// The `count` bytes of `transfer` from its byte `offset` on (the caller keeps
// them within it).
inline Transfer PartOf(const Transfer& transfer, uint64_t offset, uint64_t count) {
  Transfer part;
  part.count = count;
  part.host_reads_next = transfer.host_reads_next;
  if (transfer.device_dst) part.device_dst = Advanced(*transfer.device_dst, offset);
  if (transfer.host_dst != nullptr) part.host_dst = static_cast<uint8_t*>(transfer.host_dst) + offset;
  if (transfer.device_src) part.device_src = Advanced(*transfer.device_src, offset);
  if (transfer.host_src != nullptr) {
    part.host_src = static_cast<const uint8_t*>(transfer.host_src) + offset;
  }
  return part;
}

}  // namespace hal

#endif  // ACLD_HAL_MEMORY_H_
