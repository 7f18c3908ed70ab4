// Sharing across processes: the runtime's side of daemon/core/memory_exports.h,
// with the caller's identity taken from its session, never from its request.
#include "acl/acl_base.h"
#include "daemon/core/runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {

absl::StatusOr<std::string> Runtime::ExportMemory(SessionId id, uint64_t address, uint64_t size,
                                                  uint64_t flags) {
  absl::StatusOr<std::string> key = exports_.Export(id, address, size, flags);
  ForgetSharingIfEnded(id);
  return key;
}

absl::Status Runtime::SetImportPids(SessionId id, const std::string& key,
                                    const std::vector<int32_t>& pids) {
  return exports_.SetImportPids(id, key, pids);
}

absl::Status Runtime::SetExportAttribute(SessionId id, const std::string& key, int32_t type,
                                         uint64_t value) {
  return exports_.SetAttribute(id, key, type, value);
}

absl::StatusOr<KernelIdentity> Runtime::WhitelistIdentity(SessionId id) {
  KernelIdentity identity;
  {
    absl::ReaderMutexLock lock(&mu_);
    ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
    identity = KernelIdentity{id, session->peer.pid, session->peer.start_ticks};
  }
  if (identity.start_ticks != 0 &&
      ProcessStartTicks(identity.pid).value_or(0) != identity.start_ticks) {
    identity.start_ticks = 0;  // passes no whitelist
  }
  return identity;
}

absl::StatusOr<uint64_t> Runtime::ImportMemory(SessionId id, const std::string& key) {
  ACL_ASSIGN_OR_RETURN(const KernelIdentity importer, WhitelistIdentity(id));
  absl::StatusOr<uint64_t> imported = exports_.Import(importer, key);
  ForgetSharingIfEnded(id);
  return imported;
}

absl::Status Runtime::CloseMemoryKey(SessionId id, const std::string& key) {
  return exports_.Close(id, key);
}

void Runtime::ForgetSharingIfEnded(SessionId id) {
  // Its end (CloseSession) ran before this look: what the call made after
  // that goes now. Otherwise the end, still to come, takes it. Not under the
  // lock: the call may let go of the last reference to device memory, which
  // is freed outside the lock.
  if (Ended(id)) exports_.SessionEnded(id);
}

bool Runtime::Ended(SessionId id) {
  absl::ReaderMutexLock lock(&mu_);
  return sessions_.Find(id) == nullptr;
}

absl::StatusOr<int32_t> Runtime::PeerPid(SessionId id) {
  absl::ReaderMutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  return session->peer.pid;
}

}  // namespace acld
