// The init reference counts: one per session (process) and their host-wide sum.
//
// The per-session rules are CANN's (aclInit / aclFinalize / aclFinalizeReference);
// the host-wide count is what acld adds: devices stay up while it is non-zero.
// Not internally synchronized: Runtime serializes every call under its lifecycle lock.
#ifndef ACLD_DAEMON_CORE_INIT_ARBITER_H_
#define ACLD_DAEMON_CORE_INIT_ARBITER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/core/session_id.h"

namespace acld {

class InitArbiter {
 public:
  uint64_t CountOf(SessionId session) const;
  uint64_t host_count() const { return host_count_; }

  // When `session` is initialized, takes one more reference and returns the new
  // count; otherwise returns 0 and changes nothing (the caller then reads the
  // config and calls Initialize).
  uint64_t AddReferenceIfInitialized(SessionId session);

  // Count 0 -> 1. The first successful init's config content stays authoritative
  // for the session's life: a later init with other content is refused.
  absl::Status Initialize(SessionId session, const std::string& config_content);

  // Undoes the Initialize just made (an init callback failed): count back to 0,
  // and a first init leaves no remembered content behind.
  absl::Status AbortInitialize(SessionId session);

  // Count > 1 -> count - 1. Returns the new count.
  absl::StatusOr<uint64_t> DropReference(SessionId session);

  // Count >= 1 -> 0 (full finalize).
  absl::Status Finalize(SessionId session);

  // The session is gone: its references leave the host count. Returns how many it held.
  uint64_t RemoveSession(SessionId session);

 private:
  struct Entry {
    uint64_t count = 0;
    std::optional<std::string> first_config;
    bool first_config_set_by_current_init = false;
  };

  std::map<SessionId, Entry> entries_;
  uint64_t host_count_ = 0;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_INIT_ARBITER_H_
