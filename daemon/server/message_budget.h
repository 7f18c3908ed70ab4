// How many bytes of messages acld holds for all sessions of each tenant
// (daemon/core/tenant.h): requests still arriving in fragments on their
// channels, and replies and events waiting for their processes to read them.
//
// Each session's are bounded on their own (a request of at most
// kMaxRequestBytes in fragments, --max_queued_bytes_per_session waiting to
// go out, the message being sent), but one user opens up to
// --max_sessions_per_uid sessions: 256 of them, each holding an unfinished
// 64 MiB request (then the bound) and 96 MiB its process does not read, held 40 GiB of
// acld's memory. So a tenant's sessions hold at most
// --max_message_bytes_per_uid together beyond a small allowance each; the
// session whose message would pass it ends, and the tenant's others go on.
//
// The allowance (the first bytes of each hold, counted but never refused)
// keeps a tenant's other sessions going while some of its sessions hold the
// whole budget: their replies and ordinary requests fit in it, so only a
// session that itself holds more can be ended. It also spares the budget's
// lock on the common path (a hold that stays within its allowance).
#ifndef ACLD_DAEMON_SERVER_MESSAGE_BUDGET_H_
#define ACLD_DAEMON_SERVER_MESSAGE_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/tenant.h"

namespace acld::server {

class MessageBudget {
 public:
  // `per_tenant` 0: no limit. `allowance`: bytes of each hold not charged.
  explicit MessageBudget(uint64_t per_tenant, uint64_t allowance = 0)
      : allowance_(allowance), by_tenant_(per_tenant) {}

  // The bytes one session holds for one purpose (its request arriving, its
  // messages going out). All of them are given back when it is destroyed;
  // it keeps its budget alive meanwhile.
  class Hold {
   public:
    Hold(std::shared_ptr<MessageBudget> budget, Tenant tenant);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

    // Holds `bytes` from now on instead of what it held. More is refused
    // (ACL_ERROR_RT_MEMORY_ALLOCATION naming the limit and the tenant) when
    // what it holds beyond the allowance would take the tenant's sessions
    // past the limit together; it then holds what it held. One thread
    // resizes a hold at a time.
    absl::Status Resize(uint64_t bytes);
    // What it holds, its allowance included (any thread may ask).
    uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

   private:
    uint64_t Charged(uint64_t bytes) const {
      return bytes > budget_->allowance_ ? bytes - budget_->allowance_ : 0;
    }

    const std::shared_ptr<MessageBudget> budget_;
    const Tenant tenant_;
    std::atomic<uint64_t> bytes_{0};
  };

  uint64_t per_tenant_limit() const;
  uint64_t allowance() const { return allowance_; }
  // What each tenant's holds are charged (beyond their allowances).
  std::map<Tenant, uint64_t> ByTenant() const;

 private:
  const uint64_t allowance_;
  mutable absl::Mutex mu_;
  TenantTally by_tenant_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_MESSAGE_BUDGET_H_
