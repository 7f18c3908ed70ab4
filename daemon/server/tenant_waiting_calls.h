// The calls all sessions of one tenant have waiting in acld at once
// (synchronizations, event waits, deferred copies and loads: each holds a
// completion in acld until it is answered).
//
// A session may have SessionHandler::kMaxWaitingCalls waiting, but a uid may
// have hundreds of sessions: without a bound of its own, one user's sessions
// parked a million waits on one IPC event, all answered at once on the
// thread that completed its record, which every tenant of that device
// shares. Shared by every session's handler.
#ifndef ACLD_DAEMON_SERVER_TENANT_WAITING_CALLS_H_
#define ACLD_DAEMON_SERVER_TENANT_WAITING_CALLS_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/tenant.h"

namespace acld::server {

class TenantWaitingCalls {
 public:
  // A tenant's sessions together: four sessions' worth of the per-session
  // bound (a well-behaved process has one waiting call per thread).
  static constexpr uint64_t kDefaultPerTenant = 16384;

  explicit TenantWaitingCalls(uint64_t per_tenant = kDefaultPerTenant) : tally_(per_tenant) {}

  // Counts one more waiting call of `tenant`; false (nothing counted) at
  // the bound.
  bool Take(const Tenant& tenant) {
    absl::MutexLock lock(&mu_);
    if (!tally_.Fits(tenant, 1)) return false;
    tally_.Add(tenant, 1);
    return true;
  }
  // Gives back `count` calls Take counted.
  void Give(const Tenant& tenant, uint64_t count = 1) {
    absl::MutexLock lock(&mu_);
    tally_.Subtract(tenant, count);
  }
  uint64_t Of(const Tenant& tenant) const {
    absl::MutexLock lock(&mu_);
    return tally_.Of(tenant);
  }
  uint64_t per_tenant() const { return tally_.limit(); }

 private:
  mutable absl::Mutex mu_;
  TenantTally tally_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_TENANT_WAITING_CALLS_H_
