// A device as the runtime core sees it, whatever backs it.
//
// The core owns sessions, reference counts and handles; a Device only knows how
// to come up, go down and describe itself. Backends live in subfolders
// (hal/sim is the simulated NPU).
#ifndef ACLD_HAL_DEVICE_H_
#define ACLD_HAL_DEVICE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace hal {

struct DeviceInfo {
  int32_t id = 0;
  std::string name;           // SoC name reported by aclrtGetSocName
  uint64_t memory_bytes = 0;  // device memory capacity
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceInfo& info() const = 0;

  // Makes the device usable. Called when the runtime first needs it.
  virtual absl::Status BringUp() = 0;
  // Returns the device to its idle state; everything on it is gone.
  virtual void Release() = 0;
  virtual bool is_up() const = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_DEVICE_H_
