#include "daemon/core/pinned_memory.h"

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {

absl::Status PinnedMemory::Pin(const MemoryManager& memory, SessionId session,
                               const std::vector<hal::DeviceRange>& ranges) {
  for (const hal::DeviceRange& range : ranges) {
    // Placeholder data is pinned already (and no longer the session's).
    if (Resolve(range.address, range.bytes).ok()) continue;
    ACL_ASSIGN_OR_RETURN(ResolvedRange resolved,
                         memory.Resolve(session, range.address, range.bytes));
    Add(range, std::move(resolved));
  }
  return absl::OkStatus();
}

void PinnedMemory::Add(const hal::DeviceRange& range, ResolvedRange resolved) {
  pins_.push_back(Pinned{range, std::move(resolved)});
}

absl::StatusOr<hal::DeviceSpan> PinnedMemory::Resolve(uint64_t address, uint64_t bytes) {
  for (const Pinned& pin : pins_) {
    const uint64_t offset = address - pin.range.address;
    if (address >= pin.range.address && offset <= pin.range.bytes &&
        bytes <= pin.range.bytes - offset) {
      hal::DeviceSpan span = pin.resolved.span;
      span.offset += offset;
      return span;
    }
  }
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   "the kernel touched device memory outside the ranges it declared");
}

}  // namespace acld
