// aclFloat16 conversions as CANN defines them (docs/api-compat.md, "Data
// types"): both directions treat the FP16 encodings of Inf and NaN as finite
// numbers, as chips that only saturate do.
//   - To float, exponent 31 is an ordinary exponent: +Inf (0x7C00) reads as
//     65536, NaN (0x7E00) as 98304.
//   - From float, rounding is to nearest even; NaN becomes 65504 (0x7BFF),
//     and anything past FP16's range, infinities included, becomes +-65504.
#ifndef ACLD_CLIENT_FLOAT16_H_
#define ACLD_CLIENT_FLOAT16_H_

#include <cstdint>

namespace acl_client {

float HalfToFloat(uint16_t half);
uint16_t FloatToHalf(float value);

}  // namespace acl_client

#endif  // ACLD_CLIENT_FLOAT16_H_
