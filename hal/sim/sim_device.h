// One simulated device.
#ifndef ACLD_HAL_SIM_SIM_DEVICE_H_
#define ACLD_HAL_SIM_SIM_DEVICE_H_

#include <atomic>

#include "hal/device.h"

namespace hal::sim {

class SimDevice : public Device {
 public:
  explicit SimDevice(DeviceInfo info) : info_(std::move(info)) {}

  const DeviceInfo& info() const override { return info_; }
  absl::Status BringUp() override;
  void Release() override;
  bool is_up() const override { return up_.load(std::memory_order_acquire); }

 private:
  const DeviceInfo info_;
  std::atomic<bool> up_{false};
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_DEVICE_H_
