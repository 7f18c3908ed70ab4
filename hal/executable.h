// Kernels: executables loaded from a binary, functions found by name, and the
// device memory a launch may touch.
#ifndef ACLD_HAL_EXECUTABLE_H_
#define ACLD_HAL_EXECUTABLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/memory.h"

namespace hal {

// Bytes of device memory a launch touches.
struct DeviceRange {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

// Turns a device address range of a launch into memory the kernel may touch.
// The core implements it with its ownership checks and pins what it returns:
// a range outside the launching session's own allocations is refused, so a
// kernel that the backend can inspect never reaches anyone else's memory.
class MemoryResolver {
 public:
  virtual ~MemoryResolver() = default;
  virtual absl::StatusOr<DeviceSpan> Resolve(uint64_t device_address, uint64_t bytes) = 0;
};

// One kernel entry of an executable.
class Function {
 public:
  virtual ~Function() = default;

  virtual const std::string& name() const = 0;
  // The size of the argument block the function takes, when the backend
  // knows it (the sim does; a real device's binary does not say).
  virtual std::optional<uint64_t> args_size() const = 0;
  // Every device range a launch with these arguments touches, so the core can
  // check and pin them at launch. Unimplemented when the backend cannot tell
  // (arguments are opaque pointers on a real device: see docs/security.md).
  virtual absl::StatusOr<std::vector<DeviceRange>> Ranges(uint32_t block_dim,
                                                          absl::string_view args) const = 0;
};

// A loaded binary. Functions stay valid while the executable lives.
class Executable {
 public:
  virtual ~Executable() = default;

  // The function called `name`, or NotFound.
  virtual absl::StatusOr<const Function*> GetFunction(absl::string_view name) const = 0;
  virtual std::vector<const Function*> Functions() const = 0;
};

// What a launch needs besides its function.
// How many cores of each kind a launch may use (at most the device's count);
// 0: all the device has.
struct CoreLimits {
  uint32_t cube = 0;
  uint32_t vector = 0;
};

struct LaunchParams {
  uint32_t block_dim = 0;
  std::string args;  // the argument block, as the application built it
  // How the kernel reaches device memory (for a kernel whose ranges are
  // unknown, it resolves only its placeholder data). It holds the launch's
  // memory (the core's pins): a backend keeps it until the launch is
  // reported or dropped, since the device may touch that memory until then.
  std::shared_ptr<MemoryResolver> memory;
  CoreLimits core_limits;
};

}  // namespace hal

#endif  // ACLD_HAL_EXECUTABLE_H_
