// What makes an aclrtRandomNumAsync task well formed, judged alike by the
// client (at the call), the daemon (on every request) and a backend: the
// function and data type, the sizes of its inputs, the bytes its numbers take.
// Values (min < max, stddev >= 0, the ratio) are judged by the backend that
// reads them, since CANN lets them live in device memory.
#ifndef ACLD_PROTO_ACL_RANDOM_TASK_SHAPE_H_
#define ACLD_PROTO_ACL_RANDOM_TASK_SHAPE_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace acld {

// The bytes of one number of `data_type` (0: not a type CANN draws: int32,
// int64, uint32, uint64, fp16, bf16, fp32).
uint64_t RandomElementBytes(int32_t data_type);

// The bytes `count` numbers take: count elements, or one bit each for a
// dropout bitmask (rounded up to whole bytes). Nullopt when the data type is
// not drawn or the product overflows.
std::optional<uint64_t> RandomResultBytes(int32_t function, int32_t data_type, uint64_t count);

struct RandomTaskShape {
  int32_t function = 0;   // aclrtRandomNumFuncType
  int32_t data_type = 0;  // aclDataType
  uint32_t seed_size = 0, count_size = 0, first_size = 0, second_size = 0;
};

// ACL_ERROR_INVALID_PARAM with a message naming what is wrong: an unknown
// function, a type CANN does not draw (normal distributions and dropout
// ratios are floats), a seed or count not 1..8 bytes, a distribution
// parameter not one element (the second is unused by a dropout bitmask).
absl::Status CheckRandomTaskShape(const RandomTaskShape& shape);

}  // namespace acld

#endif  // ACLD_PROTO_ACL_RANDOM_TASK_SHAPE_H_
