// Whom a session's limits also hold for together with its other sessions.
//
// Limits per session multiply by the sessions one user may open
// (--max_sessions_per_uid, 256 by default): 256 sessions each holding the
// binaries or allocations one session may hold would take tens of GiB of
// acld's memory. So what a session holds in acld's own memory is also
// bounded for all sessions of its tenant together (docs/security.md): its
// quota group if it connected through one (docs/groups.md; in pods everyone is
// uid 0, and neither a pod nor the host's processes of that uid may use up the
// other's share), else its uid.
#ifndef ACLD_DAEMON_CORE_TENANT_H_
#define ACLD_DAEMON_CORE_TENANT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "daemon/core/quota_group.h"

namespace acld {

class Tenant {
 public:
  Tenant() = default;  // uid 0
  Tenant(uint32_t uid, const std::shared_ptr<QuotaGroup>& group)
      : uid_(group == nullptr ? uid : 0), group_id_(group == nullptr ? "" : group->id()) {}

  bool in_group() const { return !group_id_.empty(); }
  uint32_t uid() const { return uid_; }  // 0 for a group
  // The group's public name (QuotaGroupName); empty for a uid.
  std::string group_name() const { return in_group() ? QuotaGroupName(group_id_) : ""; }
  // "uid 1000" or "quota group 1a2b3c4d", for messages.
  std::string ToString() const;
  // Unique, unlike ToString (two groups may share a public name); kept in
  // acld (hal::StreamOptions::owner), never shown.
  std::string Key() const { return in_group() ? "group " + group_id_ : ToString(); }

  bool operator<(const Tenant& other) const {
    return std::tie(group_id_, uid_) < std::tie(other.group_id_, other.uid_);
  }
  bool operator==(const Tenant& other) const {
    return group_id_ == other.group_id_ && uid_ == other.uid_;
  }

 private:
  uint32_t uid_ = 0;
  std::string group_id_;  // the key; its name is what operators see
};

// An amount per tenant and the limit it may reach. Not synchronized: its
// owner's lock guards it.
class TenantTally {
 public:
  // 0: no limit.
  explicit TenantTally(uint64_t limit = 0) : limit_(limit) {}

  void set_limit(uint64_t limit) { limit_ = limit; }
  uint64_t limit() const { return limit_; }

  // Whether `tenant` may hold `amount` more (overflow-safe).
  bool Fits(const Tenant& tenant, uint64_t amount) const {
    const uint64_t held = Of(tenant);
    return limit_ == 0 || (held <= limit_ && amount <= limit_ - held);
  }
  uint64_t Of(const Tenant& tenant) const {
    auto it = amounts_.find(tenant);
    return it == amounts_.end() ? 0 : it->second;
  }
  void Add(const Tenant& tenant, uint64_t amount) {
    if (amount != 0) amounts_[tenant] += amount;
  }
  // Gives back what Add charged; a tenant at zero is forgotten.
  void Subtract(const Tenant& tenant, uint64_t amount);
  const std::map<Tenant, uint64_t>& all() const { return amounts_; }

 private:
  uint64_t limit_;
  std::map<Tenant, uint64_t> amounts_;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_TENANT_H_
