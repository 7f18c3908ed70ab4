// The device memory a kernel launch may touch: the ranges it declared,
// checked against the launching session's allocations and pinned when it was
// launched, plus its placeholder data. The kernel resolves only inside them.
// A kernel whose ranges the backend cannot tell pins its session's memory as
// a whole instead (MemoryManager::HoldForOpaqueWork).
#ifndef ACLD_DAEMON_CORE_PINNED_MEMORY_H_
#define ACLD_DAEMON_CORE_PINNED_MEMORY_H_

#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "daemon/core/memory_manager.h"
#include "hal/executable.h"

namespace acld {

class PinnedMemory : public hal::MemoryResolver {
 public:
  // Checks each range not pinned yet against the session's allocations and
  // pins it.
  absl::Status Pin(const MemoryManager& memory, SessionId session,
                   const std::vector<hal::DeviceRange>& ranges);
  // Adds a range already resolved (a launch's placeholder data).
  void Add(const hal::DeviceRange& range, ResolvedRange resolved);
  // For a kernel whose ranges are unknown: keeps what its session lets go
  // until the launch is done (a launch may hold two: see LaunchWithDeviceArgs).
  void HoldOpaque(std::shared_ptr<void> hold) { opaque_holds_.push_back(std::move(hold)); }

  absl::StatusOr<hal::DeviceSpan> Resolve(uint64_t address, uint64_t bytes) override;

 private:
  struct Pinned {
    hal::DeviceRange range;
    ResolvedRange resolved;
  };
  // The pin holding [address, address + bytes), or null: a miss builds no
  // status (Pin probes every range of every launch).
  const Pinned* Find(uint64_t address, uint64_t bytes) const;

  // Inline: a launch pins a range or two, and its pins are dropped on the
  // device's thread, so a heap vector would cost a cross-thread free each.
  absl::InlinedVector<Pinned, 2> pins_;
  absl::InlinedVector<std::shared_ptr<void>, 1> opaque_holds_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_PINNED_MEMORY_H_
