// Runtime: device memory and copies. Every device access goes through
// MemoryManager::Resolve, which only sees the calling session's allocations.
#include <algorithm>
#include <optional>

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"
#include "daemon/core/runtime.h"

namespace acld {

absl::StatusOr<uint64_t> Runtime::Malloc(SessionId id, int32_t device_id, uint64_t size) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  {
    absl::ReaderMutexLock lock(&mu_);
    ACL_RETURN_IF_ERROR(FindSession(id).status());
  }
  // With no lock of the runtime held: the device clears what it hands out,
  // which for a large allocation takes long, and a writer waiting on the
  // lock meanwhile would hold every other session's calls back behind it.
  ACL_ASSIGN_OR_RETURN(const uint64_t address, memory_.Allocate(id, device_id, size));
  absl::Status ended;
  {
    absl::ReaderMutexLock lock(&mu_);
    ended = FindSession(id).status();
  }
  if (!ended.ok()) {
    // Ended (or evicted) meanwhile, after its memory was released: what was
    // just allocated for it goes too (no lock held: the device frees it),
    // rather than stay owned by no one.
    (void)memory_.Free(id, address);
    return ended;
  }
  return address;
}

absl::Status Runtime::Free(SessionId id, uint64_t address) { return memory_.Free(id, address); }

absl::StatusOr<PreparedCopy> Runtime::PrepareCopy(SessionId id, const CopyRequest& copy) const {
  PreparedCopy prepared;
  prepared.transfer.count = copy.count;
  const bool device_src = copy.direction != CopyRequest::Direction::kHostToDevice;
  const bool device_dst = copy.direction != CopyRequest::Direction::kDeviceToHost;
  // A zero-byte copy checks nothing and touches nothing.
  std::optional<int32_t> device;
  if (device_src) {
    absl::StatusOr<ResolvedRange> src =
        copy.count == 0 ? absl::StatusOr<ResolvedRange>(ResolvedRange{})
                        : memory_.Resolve(id, copy.device_src, copy.count);
    if (!src.ok()) return src.status();
    prepared.transfer.device_src = src->span;
    prepared.src_keepalive = std::move(src->keepalive);
    device = src->device;
  } else {
    prepared.transfer.host_src = copy.host.data;
    prepared.src_keepalive = copy.host.keepalive;
  }
  if (device_dst) {
    absl::StatusOr<ResolvedRange> dst =
        copy.count == 0 ? absl::StatusOr<ResolvedRange>(ResolvedRange{})
                        : memory_.Resolve(id, copy.device_dst, copy.count);
    if (!dst.ok()) return dst.status();
    prepared.transfer.device_dst = dst->span;
    prepared.dst_keepalive = std::move(dst->keepalive);
    if (!device.has_value()) device = dst->device;
  } else {
    prepared.transfer.host_dst = copy.host.data;
    prepared.transfer.host_reads_next =
        copy.host.read_next || copy.count <= hal::kHostCachedCopyBytes;
    prepared.dst_keepalive = copy.host.keepalive;
  }
  prepared.device = device.value_or(0);
  return prepared;
}

absl::StatusOr<ResolvedRange> Runtime::ResolveFill(SessionId id,
                                                   const MemsetRequest& memset) const {
  if (memset.count == 0) return ResolvedRange{};
  return memory_.Resolve(id, memset.device_dst, memset.count);
}

absl::StatusOr<PiecewiseTransfer> Runtime::PrepareSyncCopy(SessionId id, const CopyRequest& copy) {
  ACL_ASSIGN_OR_RETURN(PreparedCopy prepared, PrepareCopy(id, copy));
  auto keepalives = std::make_shared<PreparedCopy>(prepared);
  return PiecewiseTransfer::Copy(backend_->device(prepared.device), prepared.transfer,
                                 std::move(keepalives));
}

absl::StatusOr<PiecewiseTransfer> Runtime::PrepareSyncMemset(SessionId id,
                                                             const MemsetRequest& memset) {
  if (memset.count > memset.max_count) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count is larger than maxCount");
  }
  ACL_ASSIGN_OR_RETURN(ResolvedRange target, ResolveFill(id, memset));
  return PiecewiseTransfer::Fill(backend_->device(target.device), target.span,
                                 static_cast<uint8_t>(memset.value), memset.count,
                                 std::move(target.keepalive));
}

absl::Status Runtime::Copy(SessionId id, const CopyRequest& copy) {
  ACL_ASSIGN_OR_RETURN(PiecewiseTransfer transfer, PrepareSyncCopy(id, copy));
  return transfer.RunFor(absl::InfiniteDuration());
}

absl::Status Runtime::Memset(SessionId id, const MemsetRequest& memset) {
  ACL_ASSIGN_OR_RETURN(PiecewiseTransfer transfer, PrepareSyncMemset(id, memset));
  return transfer.RunFor(absl::InfiniteDuration());
}

absl::StatusOr<MemInfo> Runtime::GetMemInfo(SessionId id, int32_t device_id) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  const hal::Device& device = backend_->device(device_id);
  MemInfo info;
  info.total = device.info().memory_bytes;
  info.free = info.total - std::min(info.total, device.used_bytes());
  // A quota is the session's own ceiling: report the smaller of the two.
  const MemoryManager::SessionUsage usage = memory_.UsageOf(id);
  if (usage.quota != 0) {
    info.free = std::min(info.free, usage.quota - std::min(usage.quota, usage.bytes));
  }
  // So is its quota group's limit there, for all of the group's processes:
  // a program that sizes its buffers by aclrtGetMemInfo fits its container.
  std::shared_ptr<QuotaGroup> group;
  {
    absl::MutexLock lock(&mu_);
    if (const Session* session = sessions_.Find(id)) group = session->group;
  }
  const uint64_t limit = group != nullptr ? group->MemoryLimit(device_id) : 0;
  if (limit != 0) {
    info.total = std::min(info.total, limit);
    info.free = std::min(info.free, limit - std::min(limit, group->MemoryUsed(device_id)));
  }
  return info;
}

absl::StatusOr<Utilization> Runtime::GetUtilization(int32_t device_id) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  const hal::DeviceUtilization measured = backend_->device(device_id).Utilization();
  return Utilization{measured.compute_percent, measured.memory_percent};
}

absl::StatusOr<ResolvedRange> Runtime::ResolveForStream(SessionId id, const Stream& stream,
                                                        uint64_t address, uint64_t bytes,
                                                        absl::string_view what) const {
  ACL_ASSIGN_OR_RETURN(ResolvedRange range, memory_.Resolve(id, address, bytes));
  if (range.device != stream.options().device) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(what, " is not memory of the stream's device"));
  }
  return range;
}

}  // namespace acld
