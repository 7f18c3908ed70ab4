// The sim's narrow floats: IEEE 754 binary16 ("half", ACL_FLOAT16) and
// bfloat16 (ACL_BF16), converted exactly and rounded to nearest, ties to even,
// as an NPU's vector unit rounds its results.
#ifndef ACLD_HAL_SIM_SIM_FLOATS_H_
#define ACLD_HAL_SIM_SIM_FLOATS_H_

#include <cstdint>

namespace hal::sim {

// The exact value of a half.
double HalfToDouble(uint16_t h);
// The half nearest to `value` (overflow to infinity; NaN stays NaN).
uint16_t DoubleToHalf(double value);

// The exact value of a bfloat16 (the high half of a float).
float Bf16ToFloat(uint16_t b);
// The bfloat16 nearest to `value` (overflow to infinity; NaN stays NaN).
uint16_t FloatToBf16(float value);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_FLOATS_H_
