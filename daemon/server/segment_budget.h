// How many shared memory segments acld maps for all sessions of each tenant
// (daemon/core/tenant.h), and for all sessions together.
//
// Each segment is one mapping in acld, and a process has at most
// vm.max_map_count of them (65,530 by default). Per session alone (4096
// each), 16 processes of one user took them all: acld could then map nothing,
// not a new session's channel, not a thread's stack. So a tenant may hold
// --max_host_segments_per_uid, and all tenants together --max_host_segments
// (by default half of vm.max_map_count, the rest being acld's own).
#ifndef ACLD_DAEMON_SERVER_SEGMENT_BUDGET_H_
#define ACLD_DAEMON_SERVER_SEGMENT_BUDGET_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/tenant.h"

namespace acld::server {

class SegmentBudget : public std::enable_shared_from_this<SegmentBudget> {
 public:
  // Limits: 0 means none.
  SegmentBudget(uint64_t per_tenant, uint64_t total) : capped_{TenantTally(per_tenant)}, limit_(total) {}

  // Half of this host's vm.max_map_count (32,768 if it cannot be read).
  static uint64_t DefaultTotal();

  // One segment for `tenant`, given back when the hold is destroyed (it may
  // outlive the budget). ACL_ERROR_RT_MEMORY_ALLOCATION naming the limit.
  // A `reserved` segment (a session's staging area: one per session, so
  // bounded by --max_sessions like its channel) counts but is never refused:
  // tenants at their caps must not stop everyone else's pageable copies.
  absl::StatusOr<std::shared_ptr<void>> Take(const Tenant& tenant, bool reserved = false);

  uint64_t total() const;
  uint64_t total_limit() const { return limit_; }
  uint64_t per_tenant_limit() const;
  std::map<Tenant, uint64_t> ByTenant() const;

 private:
  void Give(const Tenant& tenant, bool reserved);

  struct Counts {
    TenantTally by_tenant;
    uint64_t total = 0;
  };
  // The segments the limits apply to, and the reserved ones beside them;
  // aclctl shows both together.
  Counts& CountsOf(bool reserved) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return reserved ? reserved_ : capped_;
  }

  mutable absl::Mutex mu_;
  Counts capped_ ABSL_GUARDED_BY(mu_);
  Counts reserved_ ABSL_GUARDED_BY(mu_);
  const uint64_t limit_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SEGMENT_BUDGET_H_
