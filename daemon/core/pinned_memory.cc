#include "daemon/core/pinned_memory.h"

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {

absl::Status PinnedMemory::Pin(const MemoryManager& memory, SessionId session,
                               const std::vector<hal::DeviceRange>& ranges) {
  pins_.reserve(pins_.size() + ranges.size());
  for (const hal::DeviceRange& range : ranges) {
    // Placeholder data is pinned already (and no longer the session's).
    if (Find(range.address, range.bytes) != nullptr) continue;
    ACL_ASSIGN_OR_RETURN(ResolvedRange resolved,
                         memory.Resolve(session, range.address, range.bytes));
    Add(range, std::move(resolved));
  }
  return absl::OkStatus();
}

void PinnedMemory::Add(const hal::DeviceRange& range, ResolvedRange resolved) {
  pins_.push_back(Pinned{range, std::move(resolved)});
}

const PinnedMemory::Pinned* PinnedMemory::Find(uint64_t address, uint64_t bytes) const {
  for (const Pinned& pin : pins_) {
    const uint64_t offset = address - pin.range.address;
    if (address >= pin.range.address && offset <= pin.range.bytes &&
        bytes <= pin.range.bytes - offset) {
      return &pin;
    }
  }
  return nullptr;
}

absl::StatusOr<hal::DeviceSpan> PinnedMemory::Resolve(uint64_t address, uint64_t bytes) {
  const Pinned* pin = Find(address, bytes);
  if (pin == nullptr) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     "the kernel touched device memory outside the ranges it declared");
  }
  hal::DeviceSpan span = pin->resolved.span;
  span.offset += address - pin->range.address;
  return span;
}

}  // namespace acld
