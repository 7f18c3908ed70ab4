// Runtime: device memory and copies. Every device access goes through
// MemoryManager::Resolve, which only sees the calling session's allocations.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"
#include "daemon/core/runtime.h"

namespace acld {

void PreparedCopy::Run() const {
  if (count != 0) std::memmove(dst, src, count);
}

absl::StatusOr<uint64_t> Runtime::Malloc(SessionId id, int32_t device_id, uint64_t size) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return valid;
  // Held (shared) across the allocation: an eviction cannot slip in between
  // the check and the allocation and leave memory owned by a dead session.
  absl::ReaderMutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  return memory_.Allocate(id, device_id, size);
}

absl::Status Runtime::Free(SessionId id, uint64_t address) { return memory_.Free(id, address); }

absl::StatusOr<PreparedCopy> Runtime::PrepareCopy(SessionId id, const CopyRequest& copy) const {
  PreparedCopy prepared;
  prepared.count = copy.count;
  if (copy.count == 0) return prepared;
  const bool device_src = copy.direction != CopyRequest::Direction::kHostToDevice;
  const bool device_dst = copy.direction != CopyRequest::Direction::kDeviceToHost;
  if (device_src) {
    absl::StatusOr<ResolvedRange> src = memory_.Resolve(id, copy.device_src, copy.count);
    if (!src.ok()) return src.status();
    prepared.src = src->data;
    prepared.src_keepalive = std::move(src->keepalive);
  } else {
    prepared.src = copy.host.data;
    prepared.src_keepalive = copy.host.keepalive;
  }
  if (device_dst) {
    absl::StatusOr<ResolvedRange> dst = memory_.Resolve(id, copy.device_dst, copy.count);
    if (!dst.ok()) return dst.status();
    prepared.dst = dst->data;
    prepared.dst_keepalive = std::move(dst->keepalive);
  } else {
    prepared.dst = copy.host.data;
    prepared.dst_keepalive = copy.host.keepalive;
  }
  return prepared;
}

absl::StatusOr<ResolvedRange> Runtime::ResolveFill(SessionId id,
                                                   const MemsetRequest& memset) const {
  if (memset.count == 0) return ResolvedRange{};
  return memory_.Resolve(id, memset.device_dst, memset.count);
}

absl::Status Runtime::Copy(SessionId id, const CopyRequest& copy) {
  absl::StatusOr<PreparedCopy> prepared = PrepareCopy(id, copy);
  if (!prepared.ok()) return prepared.status();
  prepared->Run();
  return absl::OkStatus();
}

absl::Status Runtime::Memset(SessionId id, const MemsetRequest& memset) {
  if (memset.count > memset.max_count) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count is larger than maxCount");
  }
  absl::StatusOr<ResolvedRange> target = ResolveFill(id, memset);
  if (!target.ok()) return target.status();
  if (memset.count != 0) std::memset(target->data, memset.value, memset.count);
  return absl::OkStatus();
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
