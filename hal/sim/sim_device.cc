#include "hal/sim/sim_device.h"

namespace hal::sim {

absl::Status SimDevice::BringUp() {
  up_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void SimDevice::Release() { up_.store(false, std::memory_order_release); }

}  // namespace hal::sim
