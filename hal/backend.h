// The set of devices on this host, as one backend provides them.
#ifndef ACLD_HAL_BACKEND_H_
#define ACLD_HAL_BACKEND_H_

#include <cstdint>
#include <string>

#include "hal/device.h"

namespace hal {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual int32_t device_count() const = 0;
  // `id` must be in [0, device_count()).
  virtual Device& device(int32_t id) = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_BACKEND_H_
