// One simulated device: its memory is daemon memory, its clock the host's
// monotonic clock, its kernels the built-in ones.
#ifndef ACLD_HAL_SIM_SIM_DEVICE_H_
#define ACLD_HAL_SIM_SIM_DEVICE_H_

#include <atomic>

#include "absl/synchronization/mutex.h"
#include "hal/device.h"

namespace hal::sim {

// Sim device addresses: hal::kDeviceAddressBit, the device id in bits 48..55,
// then a 48-bit offset that only grows, so a freed address is never handed out
// again during the daemon's life.
inline constexpr int kDeviceIdShift = 48;

class SimDevice : public Device {
 public:
  explicit SimDevice(DeviceInfo info) : info_(std::move(info)) {}

  const DeviceInfo& info() const override { return info_; }
  absl::Status BringUp() override;
  void Release() override;
  bool is_up() const override { return up_.load(std::memory_order_acquire); }

  absl::StatusOr<DeviceBuffer> Allocate(uint64_t size) override;
  std::optional<uint64_t> ReservedBytes(uint64_t size) const override;
  void Free(const DeviceBuffer& buffer) override;
  uint64_t used_bytes() const override;

  int64_t NowNanos() const override;
  const Kernel* FindKernel(const std::string& name) const override;
  std::vector<const Kernel*> Kernels() const override;

 private:
  const DeviceInfo info_;
  std::atomic<bool> up_{false};
  mutable absl::Mutex mu_;
  uint64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_offset_ ABSL_GUARDED_BY(mu_) = 0x1000;
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_DEVICE_H_
