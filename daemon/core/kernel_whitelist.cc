#include "daemon/core/kernel_whitelist.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

absl::Status KernelWhitelist::Add(const std::vector<int32_t>& pids, uint64_t now_ticks,
                                  const char* api, size_t& owner_entries) {
  if (pids.empty()) return AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(api, ": num must be > 0"));
  for (int32_t pid : pids) {
    if (pid <= 0) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat(api, ": pid ", pid, " is not a process id"));
    }
  }
  if (pids.size() > kMaxEntries - entries_.size()) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(api, ": a whitelist holds at most ", kMaxEntries, " pids"));
  }
  if (pids.size() > kMaxEntriesPerOwner - std::min(owner_entries, kMaxEntriesPerOwner)) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(api, ": this process's whitelists hold ", owner_entries,
                                  " pids; together they may hold at most ", kMaxEntriesPerOwner));
  }
  for (int32_t pid : pids) entries_.push_back(Entry{pid, now_ticks, 0});
  owner_entries += pids.size();
  return absl::OkStatus();
}

bool KernelWhitelist::Admits(const KernelIdentity& asking) {
  for (Entry& entry : entries_) {
    if (entry.pid != asking.pid) continue;
    if (entry.bound == asking.session) return true;
    if (entry.bound == 0 && asking.start_ticks != 0 && asking.start_ticks <= entry.made_at_ticks) {
      entry.bound = asking.session;
      return true;
    }
  }
  return false;
}

size_t KernelWhitelist::SessionEnded(SessionId session) {
  const size_t before = entries_.size();
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [session](const Entry& entry) { return entry.bound == session; }),
                 entries_.end());
  return before - entries_.size();
}

std::vector<SessionId> KernelWhitelist::BoundSessions() const {
  std::vector<SessionId> sessions;
  for (const Entry& entry : entries_) {
    if (entry.bound != 0) sessions.push_back(entry.bound);
  }
  return sessions;
}

std::vector<int32_t> KernelWhitelist::Pids() const {
  std::vector<int32_t> pids;
  for (const Entry& entry : entries_) pids.push_back(entry.pid);
  return pids;
}

}  // namespace acld
