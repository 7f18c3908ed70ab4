// One simulated device: its memory is daemon memory, its clock the host's
// monotonic clock, its kernels the built-in ones.
#ifndef ACLD_HAL_SIM_SIM_DEVICE_H_
#define ACLD_HAL_SIM_SIM_DEVICE_H_

#include <atomic>

#include "absl/synchronization/mutex.h"
#include "acl/acl_rt.h"
#include "hal/device.h"
#include "hal/sim/sim_address_window.h"
#include "hal/sim/sim_busy_meter.h"
#include "hal/sim/sim_device_turns.h"
#include "hal/sim/sim_memory_watch.h"
#include "hal/sim/sim_object_slots.h"
#include "hal/timer.h"

namespace hal::sim {

// Sim device addresses: bit 62 (never a user-space host address on Linux, so
// a device pointer is never mistaken for host memory), the device id in bits
// 48..55, then a 48-bit offset from the device's address window, which
// takes freed ranges back once the memory behind them is released
// (sim_address_window.h). The core and the client learn the window from
// DeviceInfo::addresses.
inline constexpr uint64_t kAddressBit = uint64_t{1} << 62;
inline constexpr int kDeviceIdShift = 48;

inline constexpr int64_t kSimCubeCores = 24;
inline constexpr int64_t kSimVectorCores = 48;

class SimDevice : public Device {
 public:
  // `clock`: the clock of kernels' busy time.
  // `memory_watch`: shared by the devices of one backend (value waits).
  // `objects`: how many streams and events it has (none past them).
  SimDevice(int32_t id, uint64_t memory_bytes, Clock& clock = HostClock(),
            std::shared_ptr<MemoryWatch> memory_watch = std::make_shared<MemoryWatch>(),
            DeviceObjectLimits objects = {});

  const DeviceInfo& info() const override { return info_; }
  // Its float kernels compute in IEEE arithmetic, infinities and NaNs
  // included (ACL_CANN_ATTR_INF_NAN); no BF16 kernels, no compiler, none of
  // aclrtGetDeviceCapability's features. It states the core counts of the
  // NPU it stands for (docs/sim-binary.md) and its memory.
  DeviceFeatures features() const override;
  // Every sim device reaches every other: they share the host's memory.
  bool CanAccessPeer(const Device& peer) const override {
    return &peer != this && dynamic_cast<const SimDevice*>(&peer) != nullptr;
  }
  absl::Status BringUp() override;
  void Release() override;
  bool is_up() const override { return up_.load(std::memory_order_acquire); }

  absl::StatusOr<DeviceBuffer> Allocate(uint64_t size) override;
  std::optional<uint64_t> ReservedBytes(uint64_t size) const override;
  void Free(const DeviceBuffer& buffer) override;
  uint64_t used_bytes() const override;
  // Addresses come from the same sequence as allocations'; a released range
  // is handed out again to a reservation of its size.
  absl::StatusOr<uint64_t> ReserveAddresses(uint64_t size, uint64_t alignment) override;
  void ReleaseAddresses(uint64_t address, uint64_t size) override;

  absl::Status Copy(const Transfer& transfer) override;
  absl::Status Fill(const DeviceSpan& dst, uint8_t value, uint64_t count) override;

  int64_t NowNanos() const override;
  DeviceUtilization Utilization() const override;
  // A busy kernel of one of its streams starts or ends (SimStream).
  void BusyKernelStarted() const { busy_meter_.Enter(BusyClockNanos()); }
  void BusyKernelEnded() const { busy_meter_.Leave(BusyClockNanos()); }
  // Streams waiting for a value in the device's memory (SimStream).
  MemoryWatch& memory_watch() const { return *memory_watch_; }

  // Stops the device's thread first: what it runs (a stream's items) uses
  // the members below it.
  ~SimDevice() override;

  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(StreamOptions options) override;
  absl::StatusOr<std::shared_ptr<Event>> CreateEvent() override;
  absl::StatusOr<std::shared_ptr<Executable>> LoadExecutable(absl::string_view binary) override;
  const Executable* builtin_kernels() const override;

 private:
  const DeviceInfo info_;
  // The device's own thread: kernels' busy time and what follows it.
  Timer timer_;
  // Its thread's time between streams' owners. The destructor stops the
  // timer first: nothing scheduled runs after.
  SimDeviceTurns turns_{timer_};
  std::atomic<bool> up_{false};
  // Busy time is measured on the clock it is scheduled on (the timer's: a
  // FakeClock in tests), not on the event clock.
  int64_t BusyClockNanos() const { return absl::ToUnixNanos(timer_.Now()); }
  mutable BusyMeter busy_meter_{BusyClockNanos()};
  const std::shared_ptr<MemoryWatch> memory_watch_;
  SimObjectSlots stream_slots_;
  SimObjectSlots event_slots_;
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  // Offsets in info_.addresses: allocations' and reservations' alike.
  SimAddressWindow window_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_DEVICE_H_
