// Quota group records (quota_groups.h) and where they persist: one JSON file,
// <--state_dir>/groups.json, replaced atomically on every change so that a
// crash leaves the old version or the new one, never half of either.
#ifndef ACLD_DAEMON_SERVER_GROUP_STORE_H_
#define ACLD_DAEMON_SERVER_GROUP_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/core/quota_group.h"

namespace acld::server {

using GroupLabels = std::map<std::string, std::string>;

struct GroupRecord {
  std::string id;
  QuotaGroupSpec spec;
  GroupLabels labels;
  int64_t created_unix_seconds = 0;
};

// Labels an operator or the device plugin may set: at most 32; keys of 1 to
// 63 bytes and values of up to 255, both printable ASCII without spaces or
// '=' (they end up in metrics, logs and aclctl's tables).
inline constexpr size_t kMaxGroupLabels = 32;
absl::Status CheckGroupLabels(const GroupLabels& labels);

// Whether `id` has the form acld gives group ids (32 lowercase hex digits).
bool IsGroupId(const std::string& id);
// A new group id from the kernel's random source.
absl::StatusOr<std::string> NewGroupId();

// The records in `state_dir`'s file; none when there is no file yet.
absl::StatusOr<std::vector<GroupRecord>> LoadGroups(const std::string& state_dir);
absl::Status SaveGroups(const std::string& state_dir, const std::vector<GroupRecord>& groups);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_GROUP_STORE_H_
