// Who may take a shared thing (an export of device memory, an IPC notify):
// pids its owner named, judged by the kernel's word on who is asking.
//
// An entry names a pid; a session passes only if the kernel gave it that pid
// and its process already ran when the entry was made — a process that took
// the pid over later, after the intended one exited, started later. The first
// session to pass binds the entry, which dies with that session.
#ifndef ACLD_DAEMON_CORE_KERNEL_WHITELIST_H_
#define ACLD_DAEMON_CORE_KERNEL_WHITELIST_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "daemon/core/session_id.h"

namespace acld {

// Who is asking, as the kernel told the daemon at session open.
struct KernelIdentity {
  SessionId session = 0;
  int32_t pid = 0;
  uint64_t start_ticks = 0;  // the process's start time (process_clock.h), 0 if unknown
};

class KernelWhitelist {
 public:
  static constexpr size_t kMaxEntries = 1024;
  // Entries one owner's whitelists of one kind (memory keys, shareable
  // handles, notifies) hold together. A whitelist alone is bounded, but one
  // process may have a thousand exports: without this, one user's sessions
  // made acld hold gigabytes of entries.
  static constexpr size_t kMaxEntriesPerOwner = 4096;

  // Adds `pids` (each > 0), made at `now_ticks`, and counts them in
  // `owner_entries` (what the owner's whitelists of this kind hold). `api`
  // names the call in errors: INVALID_PARAM for no pids or one ≤ 0,
  // ACL_ERROR_RT_OVER_LIMIT past kMaxEntries or kMaxEntriesPerOwner.
  absl::Status Add(const std::vector<int32_t>& pids, uint64_t now_ticks, const char* api,
                   size_t& owner_entries);
  // Whether `asking` passes; binds the entry it passes by.
  bool Admits(const KernelIdentity& asking);
  // The session ended: the entries it bound go. Answers how many.
  size_t SessionEnded(SessionId session);
  // `gone` entries left an owner's whitelists (an importer's end, or the
  // whole whitelist with its export): they count no more in `owner_entries`.
  static void Uncount(size_t& owner_entries, size_t gone) {
    owner_entries -= std::min(owner_entries, gone);
  }
  size_t size() const { return entries_.size(); }
  // The sessions entries are bound to (at most kMaxEntries).
  std::vector<SessionId> BoundSessions() const;
  std::vector<int32_t> Pids() const;

 private:
  struct Entry {
    int32_t pid = 0;
    uint64_t made_at_ticks = 0;
    SessionId bound = 0;  // 0: not yet used
  };
  std::vector<Entry> entries_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_KERNEL_WHITELIST_H_
