// Where the sim keeps device memory: daemon memory, one calloc'd block per
// allocation, held by DeviceBuffer::storage.
#ifndef ACLD_HAL_SIM_SIM_MEMORY_H_
#define ACLD_HAL_SIM_SIM_MEMORY_H_

#include <cstdint>

#include "hal/memory.h"

namespace hal::sim {

// The bytes behind a span of sim device memory.
inline uint8_t* SimBytes(const DeviceSpan& span) {
  return static_cast<uint8_t*>(span.buffer.storage.get()) + span.offset;
}

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_MEMORY_H_
