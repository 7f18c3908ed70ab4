// The simulated NPU backend: N identical devices whose memory is daemon memory.
#ifndef ACLD_HAL_SIM_SIM_BACKEND_H_
#define ACLD_HAL_SIM_SIM_BACKEND_H_

#include <cstdint>
#include <memory>

#include "hal/backend.h"
#include "hal/clock.h"
#include "hal/device.h"

namespace hal::sim {

struct SimOptions {
  int32_t device_count = 2;
  uint64_t device_memory_bytes = 4ull << 30;  // committed lazily
  // The clock of the devices' busy time (nullptr: the host's); tests pass a
  // hal::testing::FakeClock.
  Clock* clock = nullptr;
  // How many streams and events each device has (0: no fixed number).
  DeviceObjectLimits device_objects;
};

// The SoC name every sim device reports (stable, so tests can rely on it).
inline constexpr char kSimSocName[] = "AcldSim910";

std::unique_ptr<Backend> CreateSimBackend(const SimOptions& options);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_BACKEND_H_
