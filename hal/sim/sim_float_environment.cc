#include "hal/sim/sim_float_environment.h"

#include <cmath>
#include <limits>

namespace hal::sim {
namespace {

thread_local FloatEnvironment* current_environment = nullptr;

// Sign bit, all-ones exponent and largest finite magnitude of the narrow
// floats' bit patterns.
constexpr uint16_t kSign16 = 0x8000;
constexpr uint16_t kHalfExponent = 0x7C00;
constexpr uint16_t kHalfMax = 0x7BFF;  // 65504
constexpr uint16_t kBf16Exponent = 0x7F80;
constexpr uint16_t kBf16Max = 0x7F7F;

// Infinity keeps its sign at the largest magnitude; NaN becomes +0.
uint16_t SaturateNarrow(uint16_t bits, uint16_t exponent_mask, uint16_t max) {
  const bool nan = (bits & static_cast<uint16_t>(~kSign16 & ~exponent_mask)) != 0;
  if (nan) return 0;
  return static_cast<uint16_t>((bits & kSign16) | max);
}

}  // namespace

FloatEnvironment::FloatEnvironment(bool saturate)
    : saturate_(saturate), outer_(current_environment) {
  current_environment = this;
}

FloatEnvironment::~FloatEnvironment() { current_environment = outer_; }

bool FloatEnvironment::OutOfRange() {
  if (current_environment == nullptr) return false;
  current_environment->overflowed_ = true;
  return current_environment->saturate_;
}

float FloatEnvironment::Float(float result) {
  if (std::isfinite(result) || !OutOfRange()) return result;
  if (std::isnan(result)) return 0.0f;
  return std::copysign(std::numeric_limits<float>::max(), result);
}

uint16_t FloatEnvironment::Half(uint16_t result) {
  if ((result & kHalfExponent) != kHalfExponent || !OutOfRange()) return result;
  return SaturateNarrow(result, kHalfExponent, kHalfMax);
}

uint16_t FloatEnvironment::Bf16(uint16_t result) {
  if ((result & kBf16Exponent) != kBf16Exponent || !OutOfRange()) return result;
  return SaturateNarrow(result, kBf16Exponent, kBf16Max);
}

}  // namespace hal::sim
