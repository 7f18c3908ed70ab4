#include "daemon/core/tenant.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace acld {

std::string Tenant::ToString() const {
  return in_group() ? absl::StrCat("quota group ", group_name()) : absl::StrCat("uid ", uid_);
}

void TenantTally::Subtract(const Tenant& tenant, uint64_t amount) {
  auto it = amounts_.find(tenant);
  if (it == amounts_.end()) return;
  // Never below zero: a give-back larger than the charge is a bug, not a wrap.
  it->second -= std::min(it->second, amount);
  if (it->second == 0) amounts_.erase(it);
}

}  // namespace acld
