// Backends by name: `acld --backend=sim|acl`, ACLD_BACKEND in embedded mode.
//
// Adding a backend means a new hal/<name>/ folder and one entry in
// registry.cc; nothing in the core or the client changes.
#ifndef ACLD_HAL_REGISTRY_H_
#define ACLD_HAL_REGISTRY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/backend.h"

namespace hal {

struct BackendOptions {
  // sim: the devices it simulates.
  int32_t sim_device_count = 2;
  uint64_t sim_device_memory_bytes = 4ull << 30;
  // acl: the vendor AscendCL runtime to load (dlopen path).
  std::string vendor_library;
  // acl: load the vendor library with RTLD_DEEPBIND, so its own acl* calls
  // bind inside it rather than to an acl* of the loading process (embedded
  // mode, where the process is our libascendcl.so).
  bool deep_bind = false;
};

// The backend called `name`, or InvalidArgument naming the known ones.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name,
                                                       const BackendOptions& options);
std::vector<std::string> BackendNames();

}  // namespace hal

#endif  // ACLD_HAL_REGISTRY_H_
