#include "daemon/core/memory_manager.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acld {

bool MemoryManager::IsDeviceAddress(uint64_t address) {
  return (address & hal::kDeviceAddressBit) != 0;
}

absl::StatusOr<uint64_t> MemoryManager::Allocate(SessionId session, int32_t device, uint64_t size) {
  if (size == 0) return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size must be > 0");
  {
    absl::MutexLock lock(&mu_);
    auto [usage, inserted] = usage_.try_emplace(session);
    if (inserted) usage->second.quota = default_quota_;
    const uint64_t quota = usage->second.quota;
    if (quota != 0 && size > quota - std::min(quota, usage->second.bytes)) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat("aclrtMalloc: ", size,
                                    " bytes would exceed this session's "
                                    "device memory quota of ",
                                    quota, " bytes (", usage->second.bytes,
                                    " in use); ask the operator "
                                    "(aclctl quota)"));
    }
  }
  absl::StatusOr<hal::DeviceBuffer> buffer = backend_.device(device).Allocate(size);
  if (!buffer.ok()) {
    return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                     absl::StrCat("aclrtMalloc: ", buffer.status().message()));
  }
  absl::MutexLock lock(&mu_);
  SessionUsage& usage = usage_[session];
  usage.bytes += buffer->size;
  ++usage.allocations;
  const uint64_t address = buffer->address;
  allocations_.emplace(address, Allocation{session, device, *std::move(buffer)});
  return address;
}

void MemoryManager::FreeLocked(std::map<uint64_t, Allocation>::iterator it) {
  const Allocation& allocation = it->second;
  backend_.device(allocation.device).Free(allocation.buffer);
  SessionUsage& usage = usage_[allocation.session];
  usage.bytes -= allocation.buffer.size;
  --usage.allocations;
  allocations_.erase(it);
}

absl::Status MemoryManager::Free(SessionId session, uint64_t address) {
  absl::MutexLock lock(&mu_);
  auto it = allocations_.find(address);
  if (it == allocations_.end() || it->second.session != session) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrFormat("aclrtFree: 0x%x is not the start of a live allocation of "
                                     "this process (freed already, or never allocated here)",
                                     address));
  }
  FreeLocked(it);
  return absl::OkStatus();
}

absl::StatusOr<ResolvedRange> MemoryManager::Resolve(SessionId session, uint64_t address,
                                                     uint64_t bytes) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = allocations_.upper_bound(address);
  if (it != allocations_.begin()) {
    --it;
    const Allocation& allocation = it->second;
    const uint64_t offset = address - allocation.buffer.address;
    if (allocation.session == session && offset < allocation.buffer.size &&
        bytes <= allocation.buffer.size - offset) {
      return ResolvedRange{allocation.buffer.host + offset, allocation.device,
                           allocation.buffer.storage};
    }
  }
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrFormat("device range [0x%x, +%u) is not inside a live allocation of "
                                   "this process",
                                   address, bytes));
}

void MemoryManager::ReleaseSession(SessionId session, std::optional<int32_t> device) {
  absl::MutexLock lock(&mu_);
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    auto next = std::next(it);
    if (it->second.session == session && (!device || it->second.device == *device)) {
      FreeLocked(it);
    }
    it = next;
  }
}

void MemoryManager::RemoveSession(SessionId session) {
  ReleaseSession(session);
  absl::MutexLock lock(&mu_);
  usage_.erase(session);
}

void MemoryManager::SetQuota(SessionId session, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  usage_[session].quota = bytes;
}

void MemoryManager::SetDefaultQuota(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  default_quota_ = bytes;
}

MemoryManager::SessionUsage MemoryManager::UsageOf(SessionId session) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = usage_.find(session);
  if (it != usage_.end()) return it->second;
  SessionUsage usage;
  usage.quota = default_quota_;
  return usage;
}

}  // namespace acld
