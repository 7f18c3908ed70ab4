// Where the sim keeps device memory: daemon memory, one calloc'd block per
// allocation, held by DeviceBuffer::storage.
#ifndef ACLD_HAL_SIM_SIM_MEMORY_H_
#define ACLD_HAL_SIM_SIM_MEMORY_H_

#include <cstdint>
#include <cstring>

#include "hal/memory.h"
#include "proto/acl/streaming_copy.h"

namespace hal::sim {

// The bytes behind a span of sim device memory.
inline uint8_t* SimBytes(const DeviceSpan& span) {
  return static_cast<uint8_t*>(span.buffer.storage.get()) + span.offset;
}

// Moves a transfer's bytes, as the device's copy engine would: with stores
// that skip the caches (a copy engine writes memory, not the host's caches;
// and the source of a bulk copy is the staging segment, which must stay
// cached for the client's next chunk), except into host memory the host
// reads next (Transfer::host_reads_next), which ordinary stores leave in
// the caches for it (docs/performance.md, session 25).
inline void SimTransfer(const Transfer& transfer) {
  if (transfer.count == 0) return;
  const uint8_t* src = transfer.device_src ? SimBytes(*transfer.device_src)
                                           : static_cast<const uint8_t*>(transfer.host_src);
  if (transfer.host_dst != nullptr && transfer.host_reads_next) {
    acld::CopyForTheReader(transfer.host_dst, src, transfer.count);
    return;
  }
  void* dst = transfer.device_dst ? SimBytes(*transfer.device_dst) : transfer.host_dst;
  acld::StreamingCopy(dst, src, transfer.count);
}

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_MEMORY_H_
