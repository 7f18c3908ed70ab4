// The sim's float unit while one task runs: what a result out of range
// becomes and whether one occurred (hal/float_overflow.h).
//
// Like a CPU's float environment it belongs to the thread: the sim stream
// installs one around each task it runs, and the float kernels pass every
// result they store through it. A result is out of range when it is an
// infinity or a NaN. Without an environment (a kernel run by a unit test)
// results stay as IEEE arithmetic made them and nothing is recorded.
#ifndef ACLD_HAL_SIM_SIM_FLOAT_ENVIRONMENT_H_
#define ACLD_HAL_SIM_SIM_FLOAT_ENVIRONMENT_H_

#include <cstdint>

namespace hal::sim {

class FloatEnvironment {
 public:
  // saturate: out-of-range results become the largest finite value of their
  // sign (NaN: 0) instead of staying infinities and NaNs.
  explicit FloatEnvironment(bool saturate);
  ~FloatEnvironment();
  FloatEnvironment(const FloatEnvironment&) = delete;
  FloatEnvironment& operator=(const FloatEnvironment&) = delete;

  // Whether a result out of range passed through since construction.
  bool overflowed() const { return overflowed_; }

  // A result about to be stored, as the current environment leaves it.
  static float Float(float result);
  static uint16_t Half(uint16_t result);  // IEEE binary16 bits
  static uint16_t Bf16(uint16_t result);  // bfloat16 bits

 private:
  // Records an out-of-range result; true when it must saturate.
  static bool OutOfRange();

  const bool saturate_;
  bool overflowed_ = false;
  FloatEnvironment* const outer_;
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_FLOAT_ENVIRONMENT_H_
