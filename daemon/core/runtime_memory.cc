// Runtime: device memory and copies. Every device access goes through
// MemoryManager::Resolve, which only sees the calling session's allocations.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"
#include "daemon/core/runtime.h"

namespace acld {

absl::StatusOr<uint64_t> Runtime::Malloc(SessionId id, int32_t device_id, uint64_t size) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return valid;
  {
    absl::ReaderMutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return session.status();
  }
  return memory_.Allocate(id, device_id, size);
}

absl::Status Runtime::Free(SessionId id, uint64_t address) { return memory_.Free(id, address); }

absl::Status Runtime::RunCopy(SessionId id, const CopyRequest& copy) const {
  if (copy.count == 0) return absl::OkStatus();
  switch (copy.direction) {
    case CopyRequest::Direction::kHostToDevice: {
      absl::StatusOr<ResolvedRange> dst = memory_.Resolve(id, copy.device_dst, copy.count);
      if (!dst.ok()) return dst.status();
      std::memcpy(dst->data, copy.host.data, copy.count);
      return absl::OkStatus();
    }
    case CopyRequest::Direction::kDeviceToHost: {
      absl::StatusOr<ResolvedRange> src = memory_.Resolve(id, copy.device_src, copy.count);
      if (!src.ok()) return src.status();
      std::memcpy(copy.host.data, src->data, copy.count);
      return absl::OkStatus();
    }
    case CopyRequest::Direction::kDeviceToDevice: {
      absl::StatusOr<ResolvedRange> src = memory_.Resolve(id, copy.device_src, copy.count);
      if (!src.ok()) return src.status();
      absl::StatusOr<ResolvedRange> dst = memory_.Resolve(id, copy.device_dst, copy.count);
      if (!dst.ok()) return dst.status();
      std::memmove(dst->data, src->data, copy.count);
      return absl::OkStatus();
    }
  }
  return AclStatus(ACL_ERROR_INVALID_PARAM, "unknown copy direction");
}

absl::Status Runtime::RunMemset(SessionId id, const MemsetRequest& memset) const {
  if (memset.count == 0) return absl::OkStatus();
  absl::StatusOr<ResolvedRange> dst = memory_.Resolve(id, memset.device_dst, memset.count);
  if (!dst.ok()) return dst.status();
  std::memset(dst->data, memset.value, memset.count);
  return absl::OkStatus();
}

absl::Status Runtime::Copy(SessionId id, const CopyRequest& copy) { return RunCopy(id, copy); }

absl::Status Runtime::Memset(SessionId id, const MemsetRequest& memset) {
  if (memset.count > memset.max_count) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count is larger than maxCount");
  }
  return RunMemset(id, memset);
}

absl::StatusOr<MemInfo> Runtime::GetMemInfo(SessionId id, int32_t device_id) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return valid;
  const hal::Device& device = backend_->device(device_id);
  MemInfo info;
  info.total = device.info().memory_bytes;
  info.free = info.total - std::min(info.total, device.used_bytes());
  // A quota is the session's own ceiling: report the smaller of the two.
  const MemoryManager::SessionUsage usage = memory_.UsageOf(id);
  if (usage.quota != 0) {
    info.free = std::min(info.free, usage.quota - std::min(usage.quota, usage.bytes));
  }
  return info;
}

}  // namespace acld
