#include "daemon/core/quota_group.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld {

absl::Status CheckQuotaGroupSpec(const QuotaGroupSpec& spec, int32_t host_devices) {
  if (spec.devices.empty()) return absl::InvalidArgumentError("a group needs at least one device");
  std::set<int32_t> seen;
  for (int32_t device : spec.devices) {
    if (device < 0 || device >= host_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device, " does not exist; this host has ", host_devices));
    }
    if (!seen.insert(device).second) {
      return absl::InvalidArgumentError(absl::StrCat("device ", device, " is named twice"));
    }
  }
  if (spec.memory_limits.size() != spec.devices.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(spec.memory_limits.size(), " memory limits for ", spec.devices.size(),
                     " devices"));
  }
  return absl::OkStatus();
}

std::string QuotaGroupName(const std::string& id) { return id.substr(0, 8); }

QuotaGroup::QuotaGroup(std::string id, QuotaGroupSpec spec)
    : id_(std::move(id)), name_(QuotaGroupName(id_)), spec_(std::move(spec)), view_(DeviceView::Of(spec_.devices)) {}

absl::Status QuotaGroup::ChargeMemory(int32_t device, uint64_t bytes, uint64_t asked,
                                      const char* api) {
  const std::optional<int32_t> own = view_.ToSession(device);
  if (!own.has_value()) {
    // Unreachable through the group's device view; refused all the same.
    return AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                     absl::StrCat(api, ": the device is not in quota group ", name_));
  }
  const uint64_t limit = spec_.memory_limits[*own];
  absl::MutexLock lock(&mu_);
  uint64_t& used = memory_used_[device];
  if (limit != 0 && bytes > limit - std::min(limit, used)) {
    return AclStatus(
        ACL_ERROR_RT_MEMORY_ALLOCATION,
        absl::StrCat(api, ": ", asked, " bytes (", bytes, " reserved on the device) would exceed "
                     "the device memory quota of group ", name_, " on its device ", *own, ": ",
                     limit,
                     " bytes for all of the group's processes together (", used,
                     " in use); the operator sets it with aclctl group create"));
  }
  used += bytes;
  return absl::OkStatus();
}

void QuotaGroup::UnchargeMemory(int32_t device, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  auto it = memory_used_.find(device);
  if (it == memory_used_.end()) return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0) memory_used_.erase(it);
}

uint64_t QuotaGroup::MemoryLimit(int32_t device) const {
  const std::optional<int32_t> own = view_.ToSession(device);
  return own.has_value() ? spec_.memory_limits[*own] : 0;
}

uint64_t QuotaGroup::MemoryUsed(int32_t device) const {
  absl::MutexLock lock(&mu_);
  auto it = memory_used_.find(device);
  return it == memory_used_.end() ? 0 : it->second;
}

}  // namespace acld
