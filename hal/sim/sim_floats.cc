#include "hal/sim/sim_floats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace hal::sim {
namespace {

// Rounds a non-negative double (below 2^32) to the nearest integer, ties to
// even, independent of the floating-point environment's rounding mode.
uint32_t RoundHalfEven(double x) {
  const double floor = std::floor(x);
  const double fraction = x - floor;
  uint32_t result = static_cast<uint32_t>(floor);
  if (fraction > 0.5 || (fraction == 0.5 && (result & 1) != 0)) ++result;
  return result;
}

}  // namespace

double HalfToDouble(uint16_t h) {
  const bool negative = (h & 0x8000) != 0;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);  // zero or subnormal
  } else if (exponent == 0x1F) {
    value = mantissa == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  } else {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return negative ? -value : value;
}

uint16_t DoubleToHalf(double value) {
  if (std::isnan(value)) return 0x7E00;
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(value);
  if (magnitude >= 65520.0) return sign | 0x7C00;  // 65520 is the tie above 65504
  if (magnitude < std::ldexp(1.0, -14)) {
    // Subnormal range: units of 2^-24. A result of 1024 is the smallest
    // normal, which the encoding below gets right by itself.
    return sign | static_cast<uint16_t>(RoundHalfEven(std::ldexp(magnitude, 24)));
  }
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  const int unbiased = exponent - 1;  // magnitude = 1.f * 2^unbiased, -14..15
  const uint32_t significand = RoundHalfEven(std::ldexp(magnitude, 10 - unbiased));  // 1024..2048
  // A significand of 2048 carries into the exponent field, as it should.
  return sign | static_cast<uint16_t>(((unbiased + 15) << 10) + (significand - 1024));
}

float Bf16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t FloatToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stays a NaN
  // Ties to even: add 0x7FFF plus the lowest kept bit, then drop the low half.
  // A carry out of the significand moves into the exponent, as it should, and
  // past the largest finite value gives infinity.
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace hal::sim
