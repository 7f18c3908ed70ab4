// aclrtRandomNumAsync's task: numbers of one distribution written to device
// memory, drawn from a seed and a 128-bit counter so that the same seed and
// counter give the same numbers (how the sim draws them: docs/api-compat.md).
#ifndef ACLD_HAL_RANDOM_NUMBERS_H_
#define ACLD_HAL_RANDOM_NUMBERS_H_

#include <cstdint>
#include <optional>

#include "hal/memory.h"

namespace hal {

// One of the task's inputs: a value the host gave, or device memory read when
// the task runs (CANN's isAddr). Either way `size` bytes, little-endian.
struct RandomParameter {
  std::optional<DeviceSpan> at;
  uint64_t value = 0;
  uint8_t size = 0;
};

struct RandomNumbers {
  int32_t function = 0;   // aclrtRandomNumFuncType
  int32_t data_type = 0;  // aclDataType of the numbers (of the ratio, for a dropout bitmask)
  // Where the numbers go: checked for the count when the count is a value;
  // a count read from device memory is checked against result_room when the
  // task runs.
  DeviceSpan result;
  // Bytes from `result` the task may write: what the caller may touch there
  // (the rest of its allocation, or of the range it imported).
  uint64_t result_room = 0;
  DeviceSpan counter;  // 16 bytes: the counter, two little-endian uint64, low first
  RandomParameter seed;
  RandomParameter count;
  // min and max (uniform), mean and stddev (normal, truncated normal), the
  // ratio (dropout bitmask; `second` unused).
  RandomParameter first;
  RandomParameter second;
};

}  // namespace hal

#endif  // ACLD_HAL_RANDOM_NUMBERS_H_
