// Backends by name: `acld --backend=sim|acl`, ACLD_BACKEND in embedded mode.
//
// Adding a backend means a new hal/<name>/ folder and one entry in
// registry.cc; nothing in the core or the client changes.
#ifndef ACLD_HAL_REGISTRY_H_
#define ACLD_HAL_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/backend.h"
#include "hal/backend_options.h"

namespace hal {

// The backend called `name`, or InvalidArgument naming the known ones.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name,
                                                       const BackendOptions& options);
std::vector<std::string> BackendNames();

}  // namespace hal

#endif  // ACLD_HAL_REGISTRY_H_
