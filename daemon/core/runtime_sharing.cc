// Sharing across processes: the runtime's side of daemon/core/memory_exports.h,
// with the caller's identity taken from its session, never from its request.
#include "acl/acl_base.h"
#include "daemon/core/runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {

// Export and import hold the lock a session's end takes (CloseSession), so
// that neither leaves a key or a grant behind for a session whose exports
// and imports went already.

absl::StatusOr<std::string> Runtime::ExportMemory(SessionId id, uint64_t address, uint64_t size,
                                                  uint64_t flags) {
  absl::ReaderMutexLock lock(&mu_);
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  return exports_.Export(id, address, size, flags);
}

absl::Status Runtime::SetImportPids(SessionId id, const std::string& key,
                                    const std::vector<int32_t>& pids) {
  return exports_.SetImportPids(id, key, pids);
}

absl::Status Runtime::SetExportAttribute(SessionId id, const std::string& key, int32_t type,
                                         uint64_t value) {
  return exports_.SetAttribute(id, key, type, value);
}

absl::StatusOr<uint64_t> Runtime::ImportMemory(SessionId id, const std::string& key) {
  absl::ReaderMutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  return exports_.Import(KernelIdentity{id, session->peer.pid, session->peer.start_ticks}, key);
}

absl::Status Runtime::CloseMemoryKey(SessionId id, const std::string& key) {
  return exports_.Close(id, key);
}

absl::StatusOr<int32_t> Runtime::PeerPid(SessionId id) {
  absl::ReaderMutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  return session->peer.pid;
}

}  // namespace acld
