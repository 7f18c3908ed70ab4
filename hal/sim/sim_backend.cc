#include "hal/sim/sim_backend.h"

#include <vector>

#include "hal/sim/sim_device.h"

namespace hal::sim {
namespace {

class SimBackend : public Backend {
 public:
  explicit SimBackend(const SimOptions& options) {
    // One watch for all: a copy on one device writes another's memory.
    auto memory_watch = std::make_shared<MemoryWatch>();
    for (int32_t id = 0; id < options.device_count; ++id) {
      devices_.push_back(std::make_unique<SimDevice>(
          id, options.device_memory_bytes,
          options.clock != nullptr ? *options.clock : HostClock(), memory_watch,
          options.device_objects));
    }
  }

  std::string name() const override { return "sim"; }
  int32_t device_count() const override { return static_cast<int32_t>(devices_.size()); }
  Device& device(int32_t id) override { return *devices_.at(id); }
  // A sim copy is a memcpy from wherever the bytes are.
  std::shared_ptr<void> RegisterHostMemory(void*, uint64_t) override { return nullptr; }

 private:
  std::vector<std::unique_ptr<SimDevice>> devices_;
};

}  // namespace

std::unique_ptr<Backend> CreateSimBackend(const SimOptions& options) {
  return std::make_unique<SimBackend>(options);
}

}  // namespace hal::sim
