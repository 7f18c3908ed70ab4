// The sim's reductions (aclrtReduceAsync, hal::Reduction): dst[i] becomes
// dst[i] <op> src[i] for SUM, MAX or MIN over int8, int16, int32, uint32,
// fp16, fp32 and bf16, the types CANN's NPUs reduce (docs/api-compat.md).
// Integer sums wrap around; float sums round to nearest, ties to even; MAX
// and MIN of floats return the number when one operand is a NaN (IEEE maxNum).
#ifndef ACLD_HAL_SIM_SIM_REDUCE_H_
#define ACLD_HAL_SIM_SIM_REDUCE_H_

#include <cstdint>

#include "absl/status/status.h"

namespace hal::sim {

// ACL_ERROR_RT_FEATURE_NOT_SUPPORT for a kind or type the sim does not
// reduce; ACL_ERROR_INVALID_PARAM for a count that is not a whole number of
// elements.
absl::Status CheckReduction(int32_t kind, int32_t data_type, uint64_t count);

// Reduces `count` bytes of `src` into `dst` (checked by CheckReduction).
void ReduceBytes(uint8_t* dst, const uint8_t* src, uint64_t count, int32_t kind,
                 int32_t data_type);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_REDUCE_H_
