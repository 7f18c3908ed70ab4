#include "client/float16.h"

#include <cmath>
#include <cstring>

namespace acl_client {
namespace {

constexpr uint16_t kSignBit = 0x8000;
constexpr uint16_t kLargestFinite = 0x7BFF;  // 65504
constexpr int kExponentBias = 15;
constexpr int kMantissaBits = 10;
constexpr int kMantissaScale = 1 << kMantissaBits;
constexpr int kSaturatedExponent = 31;  // Inf and NaN on an IEEE machine

}  // namespace

float HalfToFloat(uint16_t half) {
  const int exponent = (half >> kMantissaBits) & 0x1F;
  const int mantissa = half & (kMantissaScale - 1);
  // Every value here is exact in a float: at most 11 significant bits.
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, 1 - kExponentBias - kMantissaBits)
                    : std::ldexp(kMantissaScale + mantissa, exponent - kExponentBias - kMantissaBits);
  return static_cast<float>((half & kSignBit) != 0 ? -magnitude : magnitude);
}

uint16_t FloatToHalf(float value) {
  if (std::isnan(value)) return kLargestFinite;
  const uint16_t sign = std::signbit(value) ? kSignBit : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (std::isinf(value)) return sign | kLargestFinite;
  // Below the smallest normal (2^-14) the spacing is 2^-24 throughout;
  // rounding up to 1024 steps lands exactly on the smallest normal's encoding.
  if (magnitude < std::ldexp(1.0, 1 - kExponentBias)) {
    const double steps = std::nearbyint(std::ldexp(magnitude, kExponentBias - 1 + kMantissaBits));
    return sign | static_cast<uint16_t>(steps);
  }
  int exponent = 0;
  const double fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent
  // fraction is in [0.5, 1): the significand is 2 * fraction, with 2^(exponent - 1).
  int biased = exponent - 1 + kExponentBias;
  // Round to nearest even (the default rounding mode of nearbyint).
  int mantissa = static_cast<int>(std::nearbyint((2 * fraction - 1) * kMantissaScale));
  if (mantissa == kMantissaScale) {
    mantissa = 0;
    ++biased;
  }
  if (biased >= kSaturatedExponent) return sign | kLargestFinite;
  return sign | static_cast<uint16_t>((biased << kMantissaBits) | mantissa);
}

}  // namespace acl_client
