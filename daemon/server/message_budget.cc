#include "daemon/server/message_budget.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"

namespace acld::server {

MessageBudget::Hold::Hold(std::shared_ptr<MessageBudget> budget, Tenant tenant)
    : budget_(std::move(budget)), tenant_(std::move(tenant)) {}

MessageBudget::Hold::~Hold() { Resize(0).IgnoreError(); }  // giving back never fails

absl::Status MessageBudget::Hold::Resize(uint64_t bytes) {
  const uint64_t was_charged = Charged(bytes_.load(std::memory_order_relaxed));
  const uint64_t charged = Charged(bytes);
  if (charged != was_charged) {
    absl::MutexLock lock(&budget_->mu_);
    TenantTally& tally = budget_->by_tenant_;
    if (charged < was_charged) {
      tally.Subtract(tenant_, was_charged - charged);
    } else if (tally.Fits(tenant_, charged - was_charged)) {
      tally.Add(tenant_, charged - was_charged);
    } else {
      return AclStatus(
          ACL_ERROR_RT_MEMORY_ALLOCATION,
          absl::StrCat("the sessions of ", tenant_.ToString(), " hold ", tally.Of(tenant_),
                       " bytes of messages in acld (requests arriving, replies not read; beyond ",
                       budget_->allowance_, " each way per session), and ", charged - was_charged,
                       " more would pass the most one user may hold, ", tally.limit(),
                       " (--max_message_bytes_per_uid)"));
    }
  }
  bytes_.store(bytes, std::memory_order_relaxed);
  return absl::OkStatus();
}

uint64_t MessageBudget::per_tenant_limit() const {
  absl::MutexLock lock(&mu_);
  return by_tenant_.limit();
}

std::map<Tenant, uint64_t> MessageBudget::ByTenant() const {
  absl::MutexLock lock(&mu_);
  return by_tenant_.all();
}

}  // namespace acld::server
