// Float overflow detection (aclrtGetOverflowStatus and its switches).
//
// A float result out of range is an overflow. What the device writes then
// depends on the stream's saturation mode, fixed when the stream is made
// (StreamOptions::saturate_floats): infinities and NaNs (CANN's INFNAN mode),
// or the largest finite value of the result's sign, NaN becoming 0
// (SATURATION). A stream whose overflow report is on (Stream::ReportOverflows)
// also raises an OverflowStatus for each task that overflowed; the core keeps
// one status per session and device, since CANN's status belongs to a process.
#ifndef ACLD_HAL_FLOAT_OVERFLOW_H_
#define ACLD_HAL_FLOAT_OVERFLOW_H_

#include <atomic>
#include <cstdint>

namespace hal {

class OverflowStatus {
 public:
  // CANN's status is a 64-byte block whose first uint32 is the flag.
  static constexpr uint64_t kBytes = 64;

  void Raise() { flag_.store(1, std::memory_order_relaxed); }
  void Clear() { flag_.store(0, std::memory_order_relaxed); }
  uint32_t flag() const { return flag_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> flag_{0};
};

}  // namespace hal

#endif  // ACLD_HAL_FLOAT_OVERFLOW_H_
