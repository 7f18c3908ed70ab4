// A device as the runtime core sees it, whatever backs it.
//
// The core owns sessions, reference counts, handles and address checks; a
// Device provides memory, a clock and built-in kernels. Backends live in
// subfolders (hal/sim is the simulated NPU).
#ifndef ACLD_HAL_DEVICE_H_
#define ACLD_HAL_DEVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hal/kernel.h"

namespace hal {

// Device addresses have bit 62 set: never a user-space host address on Linux,
// so the client can tell device from host pointers (ACL_MEMCPY_DEFAULT) and a
// device pointer is never mistaken for host memory.
inline constexpr uint64_t kDeviceAddressBit = uint64_t{1} << 62;

struct DeviceInfo {
  int32_t id = 0;
  std::string name;           // SoC name reported by aclrtGetSocName
  uint64_t memory_bytes = 0;  // device memory capacity
};

// One allocation of device memory. `address` is the opaque device address the
// application sees; `host` is where the bytes live for a backend that can
// reach them from the daemon (the sim), nullptr otherwise. The storage stays
// valid while any copy of `storage` lives, so a task that resolved an address
// can finish even if the application frees it meanwhile.
struct DeviceBuffer {
  uint64_t address = 0;
  uint64_t size = 0;      // what the application asked for
  uint64_t reserved = 0;  // what the device set aside (size rounded to its granularity)
  uint8_t* host = nullptr;
  std::shared_ptr<void> storage;
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceInfo& info() const = 0;

  // Makes the device usable. Called when the runtime first needs it.
  virtual absl::Status BringUp() = 0;
  // Returns the device to its idle state.
  virtual void Release() = 0;
  virtual bool is_up() const = 0;

  // Device memory. Allocate fails with ResourceExhausted when the device is
  // full; fresh memory reads as zeros (no bytes cross from one owner to the next).
  virtual absl::StatusOr<DeviceBuffer> Allocate(uint64_t size) = 0;
  // What an allocation of `size` bytes reserves; nullopt when no allocation of
  // that size can exist (larger than the device, or overflowing when rounded).
  // Allocate(size) reserves exactly this much (buffer.reserved).
  virtual std::optional<uint64_t> ReservedBytes(uint64_t size) const = 0;
  virtual void Free(const DeviceBuffer& buffer) = 0;
  virtual uint64_t used_bytes() const = 0;

  // The device's clock, in nanoseconds (event timestamps).
  virtual int64_t NowNanos() const = 0;

  // The built-in kernel called `name`, or nullptr.
  virtual const Kernel* FindKernel(const std::string& name) const = 0;
  virtual std::vector<const Kernel*> Kernels() const = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_DEVICE_H_
