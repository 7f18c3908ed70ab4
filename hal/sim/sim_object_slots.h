// The live streams (or events) of one sim device, against the number the
// device states (DeviceObjectLimits): like a real device, it refuses the one
// past it, whoever asks, until one goes.
#ifndef ACLD_HAL_SIM_SIM_OBJECT_SLOTS_H_
#define ACLD_HAL_SIM_SIM_OBJECT_SLOTS_H_

#include <atomic>
#include <cstdint>
#include <memory>

namespace hal::sim {

class SimObjectSlots {
 public:
  // `limit` 0: no fixed number.
  explicit SimObjectSlots(uint32_t limit) : limit_(limit) {}

  // A slot that the object holds for its life (it gives itself back when
  // destroyed, on any thread), or null when `limit` are live.
  std::shared_ptr<void> Take() {
    uint32_t live = live_->load(std::memory_order_relaxed);
    do {
      if (limit_ != 0 && live >= limit_) return nullptr;
    } while (!live_->compare_exchange_weak(live, live + 1, std::memory_order_relaxed));
    // Not null, so that a slot tells itself from a refusal; the count
    // outlives the device if an object does.
    return std::shared_ptr<void>(live_.get(), [live = live_](void*) {
      live->fetch_sub(1, std::memory_order_relaxed);
    });
  }
  uint32_t live() const { return live_->load(std::memory_order_relaxed); }

 private:
  const uint32_t limit_;
  const std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
};

}  // namespace hal::sim

#endif  // ACLD_HAL_SIM_SIM_OBJECT_SLOTS_H_
