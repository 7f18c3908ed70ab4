#include "hal/acl/device_clock.h"

#include <time.h>

#include <algorithm>

namespace hal::acl {

int64_t DeviceClock::HostNowNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

std::shared_ptr<const DeviceClock> DeviceClock::Uncalibrated() {
  return std::shared_ptr<const DeviceClock>(new DeviceClock(false, 0));
}

std::shared_ptr<const DeviceClock> DeviceClock::Calibrate(const DeviceContext& context) {
  const VendorApi& api = context.api();
  if (api.aclrtEventGetTimestamp == nullptr || !context.MakeCurrent().ok()) return Uncalibrated();
  aclrtStream stream = nullptr;
  if (api.aclrtCreateStream(&stream) != ACL_SUCCESS) return Uncalibrated();
  aclrtEvent event = nullptr;
  std::shared_ptr<const DeviceClock> clock;
  if (api.aclrtCreateEventWithFlag(&event, ACL_EVENT_TIME_LINE) == ACL_SUCCESS) {
    const int64_t before = HostNowNanos();
    uint64_t device_micros = 0;
    if (api.aclrtRecordEvent(event, stream) == ACL_SUCCESS &&
        api.aclrtSynchronizeStream(stream) == ACL_SUCCESS &&
        api.aclrtEventGetTimestamp(event, &device_micros) == ACL_SUCCESS) {
      const int64_t after = HostNowNanos();
      const int64_t middle = before + (after - before) / 2;
      clock.reset(new DeviceClock(true, middle - static_cast<int64_t>(device_micros) * 1000));
    }
    api.aclrtDestroyEvent(event);
  }
  api.aclrtDestroyStream(stream);
  return clock != nullptr ? clock : Uncalibrated();
}

int64_t DeviceClock::ToHostNanos(uint64_t device_micros) const {
  const int64_t now = HostNowNanos();
  if (!calibrated_) return now;
  // The calibration's error must not put a completion in the future.
  return std::min(now, static_cast<int64_t>(device_micros) * 1000 + offset_nanos_);
}

}  // namespace hal::acl
