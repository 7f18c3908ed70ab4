// What creating a backend may need, for every backend (hal/registry.h).
#ifndef ACLD_HAL_BACKEND_OPTIONS_H_
#define ACLD_HAL_BACKEND_OPTIONS_H_

#include <cstdint>
#include <string>

namespace hal {

struct BackendOptions {
  // sim: the devices it simulates.
  int32_t sim_device_count = 2;
  uint64_t sim_device_memory_bytes = 4ull << 30;
  // sim: how many streams and events each device has (0: no fixed number).
  uint32_t sim_device_streams = 0;
  uint32_t sim_device_events = 0;
  // acl: the vendor AscendCL runtime to load (dlopen path).
  std::string vendor_library;
  // acl: load the vendor library with RTLD_DEEPBIND, so its own acl* calls
  // bind inside it rather than to an acl* of the loading process (embedded
  // mode, where the process is our libascendcl.so).
  bool deep_bind = false;
};

}  // namespace hal

#endif  // ACLD_HAL_BACKEND_OPTIONS_H_
