// A sim kernel: a function the sim runs on its simulated device memory
// (a built-in kernel of aclsimLaunchKernel, or one a sim binary names).
#ifndef ACLD_HAL_SIM_SIM_KERNEL_H_
#define ACLD_HAL_SIM_SIM_KERNEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hal/executable.h"

namespace hal::sim {

// Turns a device address range into the sim's bytes, through the core's
// hal::MemoryResolver: a range outside the launching session's own
// allocations is refused, so a kernel never reaches anyone else's memory.
class MemoryResolver {
 public:
  virtual ~MemoryResolver() = default;
  virtual absl::StatusOr<uint8_t*> Resolve(uint64_t device_address, uint64_t bytes) = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;

  virtual const std::string& name() const = 0;
  // Number of 64-bit argument fields the kernel takes.
  virtual size_t arg_count() const = 0;
  // How long each wave of the kernel's blocks occupies its stream before its
  // effect, in microseconds (0 for instant kernels; sim_stream.cc says what a
  // wave is). The stream engine waits without holding a worker thread.
  virtual uint64_t BusyMicros(absl::Span<const uint64_t> args) const = 0;
  // Every device range the launch may touch. The runtime checks and pins them
  // when the work is launched (so a later free cannot pull memory from under
  // it) and Run may then resolve only inside them. An error when the arguments
  // describe no valid range (an overflowing count).
  virtual absl::StatusOr<std::vector<DeviceRange>> Ranges(
      uint32_t block_dim, absl::Span<const uint64_t> args) const = 0;
  // Applies the kernel's effect for blocks [0, block_dim).
  virtual absl::Status Run(uint32_t block_dim, absl::Span<const uint64_t> args,
                           MemoryResolver& memory) const = 0;

  // A launch's work in independent elements applied in order, so that the
  // stream runs a launch of any size a piece at a time: the device's threads
  // serve every stream of every process, and one launch must not hold them
  // for seconds. 1: the kernel runs whole (its work is small or bounded).
  virtual uint64_t Elements(uint32_t block_dim, absl::Span<const uint64_t> args) const {
    (void)block_dim;
    (void)args;
    return 1;
  }
  // About a millisecond's worth of elements: what one piece runs.
  virtual uint64_t ElementsPerPiece() const { return 1; }
  // Applies the effect of elements [first, end) of Elements() (all of them
  // is Run). Only a kernel with more than one element is asked for a part.
  virtual absl::Status RunElements(uint32_t block_dim, absl::Span<const uint64_t> args,
                                   MemoryResolver& memory, uint64_t first, uint64_t end) const {
    (void)first;
    (void)end;
    return Run(block_dim, args, memory);
  }
  // As Run, for a kernel that prints (device printf): appends what it printed
  // to `printed`, at most kMaxPrintedBytes per launch.
  virtual absl::Status RunAndPrint(uint32_t block_dim, absl::Span<const uint64_t> args,
                                   MemoryResolver& memory, std::string& printed) const {
    (void)printed;
    return Run(block_dim, args, memory);
  }
  static constexpr size_t kMaxPrintedBytes = 64 << 10;
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_KERNEL_H_
