// A device as the runtime core sees it, whatever backs it.
//
// The HAL is the one place that knows how a device works: its memory and
// address layout, its clock, its streams, events and executables. The core
// owns sessions, reference counts, handles, ownership checks and ordering
// across a session, and submits device work to HAL streams. Backends live in
// one folder each (hal/sim is the simulated NPU, hal/acl drives a vendor
// AscendCL runtime) and are chosen by name (hal/registry.h).
//
// Errors a backend returns carry exact ACL codes (proto/acl/acl_status.h),
// each backend mapping its own failures in one place.
#ifndef ACLD_HAL_DEVICE_H_
#define ACLD_HAL_DEVICE_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hal/event.h"
#include "hal/executable.h"
#include "hal/memory.h"
#include "hal/stream.h"

namespace hal {

// How many streams and events a device has for all its users together, as
// CANN states them per product (an Atlas A2 has 1984 streams and 65536
// events, for example); 0: no fixed number. A device refuses more, so acld
// gives each user a share of them (--device_share_per_uid).
struct DeviceObjectLimits {
  uint32_t streams = 0;
  uint32_t events = 0;
  // Notifies the backend takes itself for work that waits on the host (the
  // acl backend: one per host-callback point or host-released wait).
  uint32_t notifies = 0;
};

struct DeviceInfo {
  int32_t id = 0;
  std::string name;           // SoC name reported by aclrtGetSocName
  uint64_t memory_bytes = 0;  // device memory capacity
  AddressRange addresses;     // every address Allocate can return lies inside
  // The largest binary LoadExecutable accepts (0: no limit of its own), so
  // that acld refuses a larger one before copying it out of a process.
  uint64_t max_executable_bytes = 0;
  DeviceObjectLimits objects;
};

// How busy a device is (the figures of aclrtGetDeviceUtilizationRate).
struct DeviceUtilization {
  // Percent (0..100) of the recent past the device spent computing; -1 when
  // the backend cannot tell.
  int32_t compute_percent = -1;
  // Percent (0..100) of the device's memory in use.
  int32_t memory_percent = 0;
};

// What a device supports, in CANN's terms: the aclCannAttr values
// (aclGetCannAttribute) and aclrtDevFeatureType values
// (aclrtGetDeviceCapability) it has.
struct DeviceFeatures {
  std::vector<int32_t> cann_attributes;
  std::vector<int32_t> capabilities;
  // aclrtGetDeviceInfo's answers: aclrtDevAttr value -> what the device
  // states (its core counts are the default core limits, aclrtGetDeviceResLimit).
  std::map<int32_t, int64_t> device_info;
  // The devices whose memory this one reaches (aclrtDeviceCanAccessPeer).
  std::vector<int32_t> peers;
  // Saturation mode and overflow status (hal/float_overflow.h; the stream
  // operations refuse without it).
  bool float_overflow = false;
  // Virtual address management (aclrtReserveMemAddress, aclrtMapMem): the
  // granularity of physical allocations, reservations and mappings, in
  // bytes (aclrtMemGetAllocationGranularity); 0: the device has none, and
  // ReserveAddresses refuses.
  uint64_t address_granularity = 0;
};

// `used` as a percent (0..100) of `capacity` (0 when there is no capacity).
inline int32_t PercentOf(uint64_t used, uint64_t capacity) {
  if (capacity == 0) return 0;
  const unsigned __int128 percent =
      static_cast<unsigned __int128>(std::min(used, capacity)) * 100 / capacity;
  return static_cast<int32_t>(percent);
}

class Device {
 public:
  virtual ~Device() = default;

  virtual const DeviceInfo& info() const = 0;
  // What the device supports (none unless the backend says); the runtime
  // fills in `peers` from CanAccessPeer.
  virtual DeviceFeatures features() const { return {}; }
  // Whether this device reaches `peer`'s memory (copies between the two).
  virtual bool CanAccessPeer(const Device& peer) const = 0;

  // Makes the device usable. Called when the runtime first needs it.
  virtual absl::Status BringUp() = 0;
  // Returns the device to its idle state.
  virtual void Release() = 0;
  virtual bool is_up() const = 0;

  // Device memory. Allocate fails with ACL_ERROR_RT_MEMORY_ALLOCATION when the
  // device is full. Fresh memory reads as zeros: no bytes cross from one owner
  // to the next (a backend whose device does not zero scrubs it itself).
  virtual absl::StatusOr<DeviceBuffer> Allocate(uint64_t size) = 0;
  // What an allocation of `size` bytes reserves; nullopt when no allocation of
  // that size can exist (larger than the device, or overflowing when rounded).
  // Allocate(size) reserves exactly this much (buffer.reserved).
  virtual std::optional<uint64_t> ReservedBytes(uint64_t size) const = 0;
  virtual void Free(const DeviceBuffer& buffer) = 0;
  virtual uint64_t used_bytes() const = 0;

  // Virtual address management (features().address_granularity). A
  // reservation is `size` addresses inside info().addresses, aligned to
  // `alignment` (a power of two, at least the granularity), that neither an
  // allocation nor another reservation ever shares, backed by nothing. The
  // core maps allocations into it (daemon/core/memory_manager.h): device
  // work is handed the spans of the allocations, so a backend that resolves
  // spans needs nothing else. One whose kernels take raw device addresses
  // must map them on the device before it offers this. By default:
  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
  virtual absl::StatusOr<uint64_t> ReserveAddresses(uint64_t size, uint64_t alignment);
  virtual void ReleaseAddresses(uint64_t address, uint64_t size) {}

  // Whether submitting a stream's copy to or from host memory
  // [host, host + bytes) blocks the submitter until the stream's earlier
  // work is done (a vendor runtime copies unregistered host memory
  // synchronously). `host` null: memory allocated only at submission.
  virtual bool CopyBlocksSubmitter(const void* host, uint64_t bytes) const { return false; }

  // Synchronous copy and fill (aclrtMemcpy, aclrtMemset).
  virtual absl::Status Copy(const Transfer& transfer) = 0;
  virtual absl::Status Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) = 0;

  // The device's clock, in nanoseconds (event timestamps).
  virtual int64_t NowNanos() const = 0;

  // Utilization counters, for operators (aclctl devices).
  virtual DeviceUtilization Utilization() const = 0;

  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream(StreamOptions options) = 0;
  // How many tasks of one session the core lets the device hold at once
  // (daemon/core/device_share.h). A device with queues of its own runs what
  // it holds in its own order, which knows nothing of sessions; 0: no bound,
  // the device runs work as it is submitted (the sim).
  virtual uint32_t tasks_per_session() const { return 0; }
  virtual absl::StatusOr<std::shared_ptr<Event>> CreateEvent() = 0;
  // Loads a kernel binary (bytes the application supplied: hostile input).
  virtual absl::StatusOr<std::shared_ptr<Executable>> LoadExecutable(absl::string_view binary) = 0;
  // Kernels the device offers without a binary (the sim's aclsimLaunchKernel
  // kernels); nullptr when it has none.
  virtual const Executable* builtin_kernels() const = 0;
};

}  // namespace hal

#endif  // ACLD_HAL_DEVICE_H_
