#include "daemon/server/segment_budget.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld::server {

uint64_t SegmentBudget::DefaultTotal() {
  std::ifstream file("/proc/sys/vm/max_map_count");
  uint64_t max_map_count = 0;
  if (!(file >> max_map_count) || max_map_count == 0) return 32768;
  return max_map_count / 2;
}

absl::StatusOr<std::shared_ptr<void>> SegmentBudget::Take(const Tenant& tenant, bool reserved) {
  {
    absl::MutexLock lock(&mu_);
    // A reserved segment is counted (and shown), never refused, and takes
    // no room the caps give the others.
    if (!reserved && limit_ != 0 && capped_.total >= limit_) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat("acld maps ", capped_.total,
                                    " shared memory segments for all processes (besides their "
                                    "staging areas), the most it allows (--max_host_segments); "
                                    "free some host memory (aclrtFreeHost) and try again"));
    }
    if (!reserved && !capped_.by_tenant.Fits(tenant, 1)) {
      return AclStatus(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       absl::StrCat("acld maps ", capped_.by_tenant.Of(tenant),
                                    " shared memory segments for the processes of ",
                                    tenant.ToString(), ", the most it allows one user "
                                    "(--max_host_segments_per_uid); free some first"));
    }
    Counts& counts = CountsOf(reserved);
    counts.by_tenant.Add(tenant, 1);
    ++counts.total;
  }
  std::weak_ptr<SegmentBudget> self = weak_from_this();
  return std::shared_ptr<void>(nullptr, [self, tenant, reserved](void*) {
    if (auto budget = self.lock()) budget->Give(tenant, reserved);
  });
}

void SegmentBudget::Give(const Tenant& tenant, bool reserved) {
  absl::MutexLock lock(&mu_);
  Counts& counts = CountsOf(reserved);
  counts.by_tenant.Subtract(tenant, 1);
  --counts.total;
}

uint64_t SegmentBudget::total() const {
  absl::MutexLock lock(&mu_);
  return capped_.total + reserved_.total;
}

uint64_t SegmentBudget::per_tenant_limit() const {
  absl::MutexLock lock(&mu_);
  return capped_.by_tenant.limit();
}

std::map<Tenant, uint64_t> SegmentBudget::ByTenant() const {
  absl::MutexLock lock(&mu_);
  std::map<Tenant, uint64_t> all = capped_.by_tenant.all();
  for (const auto& [tenant, count] : reserved_.by_tenant.all()) all[tenant] += count;
  return all;
}

}  // namespace acld::server
