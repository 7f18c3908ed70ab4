// The sim's random numbers (aclrtRandomNumAsync, hal/random_numbers.h).
//
// Number i comes from one Philox4x32-10 block: key = the seed, counter = the
// task's 128-bit counter + i, so the same seed and counter give the same
// numbers and the numbers do not depend on how many are drawn. The counter in
// device memory is read, never advanced. From the block's four 32-bit words
// w0..w3:
//   uniform, integers  min + floor(w * (max - min) / 2^64), w = w1:w0: [min, max)
//   uniform, floats    min + u * (max - min), u = (w0 >> 8) / 2^24 in [0, 1),
//                      rounded to the type (rounding may reach max)
//   normal             mean + stddev * z, z by Box-Muller from w0, w1
//   truncated normal   as normal, with the first of the four Box-Muller values
//                      from (w0, w1), (w2, w3) within 2 of 0 (else ±2): within
//                      two standard deviations of the mean
//   dropout bitmask    bit i (byte i / 8, bit i % 8) is 1 (kept) when
//                      u >= ratio; the last byte's unused bits are 0
#ifndef ACLD_HAL_SIM_SIM_RANDOM_H_
#define ACLD_HAL_SIM_SIM_RANDOM_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hal/random_numbers.h"

namespace hal::sim {

// One Philox4x32-10 block.
std::array<uint32_t, 4> Philox(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// What can be judged before the task is queued: ACL_ERROR_RT_FEATURE_NOT_SUPPORT
// for a function or data type the sim does not draw, ACL_ERROR_INVALID_PARAM
// for a parameter of the wrong size or a value given now that is out of range.
absl::Status CheckRandomNumbers(const RandomNumbers& task);

// A task the stream reached: its parameters read from device memory once and
// judged, its numbers then written a range at a time (number i depends on i
// alone), so that a draw of any size runs in pieces.
class RandomDraw {
 public:
  // Reads the parameters held in device memory and judges them as
  // CheckRandomNumbers does.
  static absl::StatusOr<RandomDraw> Start(const RandomNumbers& task);
  uint64_t count() const { return count_; }
  // Writes numbers [first, end) (clipped to count()). For the dropout
  // bitmask, `first` is a multiple of 8: a range owns its bytes.
  void Generate(uint64_t first, uint64_t end) const;

 private:
  RandomNumbers task_;
  uint64_t seed_ = 0, count_ = 0, first_ = 0, second_ = 0;
  uint64_t counter_[2] = {0, 0};
};

// Runs the whole task on sim memory (Start, then Generate of every number).
absl::Status GenerateRandomNumbers(const RandomNumbers& task);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_RANDOM_H_
