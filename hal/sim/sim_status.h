// The sim's one error mapping: how its failures become ACL codes.
#ifndef ACLD_HAL_SIM_SIM_STATUS_H_
#define ACLD_HAL_SIM_SIM_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace hal::sim {

// A kernel's result as its stream reports it. A failure raised by the kernel
// itself (the trap kernel, an argument it cannot use) is an AI core
// exception, as on a device; a failed address check keeps the code the core
// gave it.
absl::Status KernelStatus(absl::string_view function, const absl::Status& status);

// The device has no room for an allocation (ACL_ERROR_RT_MEMORY_ALLOCATION).
absl::Status OutOfDeviceMemory(absl::string_view why);

// A request the core should have refused (ACL_ERROR_INVALID_PARAM).
absl::Status InvalidArgument(absl::string_view what);

// A wait for another process's record that was dropped (ACL_ERROR_RT_IPC_ERROR).
absl::Status DroppedRecord();

// A binary the sim cannot load (ACL_ERROR_INVALID_PARAM, with the reason).
absl::Status BadBinary(const absl::Status& parse_error);

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_STATUS_H_
