// The set of devices on this host, as one backend provides them.
#ifndef ACLD_HAL_BACKEND_H_
#define ACLD_HAL_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "hal/device.h"

namespace hal {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual int32_t device_count() const = 0;
  // `id` must be in [0, device_count()).
  virtual Device& device(int32_t id) = 0;

  // Host memory the daemon mapped (a client's shared memory): a backend whose
  // devices copy asynchronously only from registered memory registers it
  // (CANN's aclrtHostRegister; otherwise its async copies quietly become
  // synchronous). The handle unregisters it when the last copy of it goes;
  // null when there was nothing to register or no device could take it yet
  // (copies still work).
  virtual std::shared_ptr<void> RegisterHostMemory(void* data, uint64_t bytes) = 0;

  // Whether the devices can be driven now (acld's health, daemon/server/
  // health.h): a backend that can lose its driver or vendor runtime says so;
  // by default, and on the sim, always.
  virtual absl::Status Health() const { return absl::OkStatus(); }
};

}  // namespace hal

#endif  // ACLD_HAL_BACKEND_H_
