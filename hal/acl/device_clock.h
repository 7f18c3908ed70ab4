// The acl devices' clock: the host's CLOCK_MONOTONIC (Device::NowNanos), and
// the mapping of the vendor's event timestamps onto it.
//
// aclrtEventGetTimestamp reports when the device passed an event, in
// microseconds since the device started: another clock than the host's. At
// bring-up the backend records one timestamped event and brackets it with the
// host clock; the offset between the two maps every later device timestamp
// onto the host clock (to within half the bracket, typically microseconds).
// Without aclrtEventGetTimestamp (older CANN), or if calibration fails, event
// timestamps are the host clock when the backend learned of the completion.
#ifndef ACLD_HAL_ACL_DEVICE_CLOCK_H_
#define ACLD_HAL_ACL_DEVICE_CLOCK_H_

#include <cstdint>
#include <memory>

#include "hal/acl/device_context.h"

namespace hal::acl {

class DeviceClock {
 public:
  // CLOCK_MONOTONIC in nanoseconds.
  static int64_t HostNowNanos();

  // Measures the offset on `context`'s device; an uncalibrated clock when the
  // vendor cannot tell event timestamps.
  static std::shared_ptr<const DeviceClock> Calibrate(const DeviceContext& context);
  static std::shared_ptr<const DeviceClock> Uncalibrated();

  bool calibrated() const { return calibrated_; }
  // A device timestamp (microseconds) on the host clock, never later than now.
  int64_t ToHostNanos(uint64_t device_micros) const;

 private:
  DeviceClock(bool calibrated, int64_t offset_nanos)
      : calibrated_(calibrated), offset_nanos_(offset_nanos) {}

  const bool calibrated_;
  const int64_t offset_nanos_;  // host nanos = device micros * 1000 + offset
};

}  // namespace hal::acl

#endif  // ACLD_HAL_ACL_DEVICE_CLOCK_H_
