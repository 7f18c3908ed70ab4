#include "daemon/core/init_arbiter.h"

#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

uint64_t InitArbiter::CountOf(SessionId session) const {
  auto it = entries_.find(session);
  return it == entries_.end() ? 0 : it->second.count;
}

uint64_t InitArbiter::AddReferenceIfInitialized(SessionId session) {
  auto it = entries_.find(session);
  if (it == entries_.end() || it->second.count == 0) return 0;
  ++host_count_;
  return ++it->second.count;
}

absl::Status InitArbiter::Initialize(SessionId session, const std::string& config_content) {
  Entry& entry = entries_[session];
  if (entry.count != 0) {
    return AclStatus(ACL_ERROR_REPEAT_INITIALIZE, "the process is already initialized");
  }
  if (entry.first_config.has_value() && *entry.first_config != config_content) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     "aclInit: the config content differs from the first successful aclInit of "
                     "this process; the first config stays in force until the process exits");
  }
  entry.first_config_set_by_current_init = !entry.first_config.has_value();
  if (entry.first_config_set_by_current_init) entry.first_config = config_content;
  entry.count = 1;
  ++host_count_;
  return absl::OkStatus();
}

absl::Status InitArbiter::AbortInitialize(SessionId session) {
  auto it = entries_.find(session);
  if (it == entries_.end() || it->second.count != 1) {
    return AclStatus(ACL_ERROR_INTERNAL_ERROR, "no initialization to abort");
  }
  Entry& entry = it->second;
  entry.count = 0;
  --host_count_;
  if (entry.first_config_set_by_current_init) entry.first_config.reset();
  entry.first_config_set_by_current_init = false;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> InitArbiter::DropReference(SessionId session) {
  auto it = entries_.find(session);
  if (it == entries_.end() || it->second.count < 2) {
    return AclStatus(ACL_ERROR_INTERNAL_ERROR,
                     "dropping a reference needs a count above 1; use finalize for the last one");
  }
  --host_count_;
  return --it->second.count;
}

absl::Status InitArbiter::Finalize(SessionId session) {
  auto it = entries_.find(session);
  if (it == entries_.end() || it->second.count == 0) {
    return AclStatus(ACL_ERROR_REPEAT_FINALIZE, "the process is not initialized");
  }
  host_count_ -= it->second.count;
  it->second.count = 0;
  it->second.first_config_set_by_current_init = false;
  return absl::OkStatus();
}

uint64_t InitArbiter::RemoveSession(SessionId session) {
  auto it = entries_.find(session);
  if (it == entries_.end()) return 0;
  const uint64_t held = it->second.count;
  host_count_ -= held;
  entries_.erase(it);
  return held;
}

}  // namespace acld
