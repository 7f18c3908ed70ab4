// The live sessions, by id. Not internally synchronized: Runtime serializes access.
#ifndef ACLD_DAEMON_CORE_SESSION_TABLE_H_
#define ACLD_DAEMON_CORE_SESSION_TABLE_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "daemon/core/session.h"
#include "daemon/core/tenant.h"

namespace acld {

class SessionTable {
 public:
  // Registers a new session of `peer` (in `group`, if any) and returns it;
  // ids start at 1 and are never reused.
  Session& Open(const PeerInfo& peer, std::shared_ptr<QuotaGroup> group, absl::Time now);
  // nullptr when `id` is not (or no longer) a live session.
  Session* Find(SessionId id);
  const Session* Find(SessionId id) const;
  // Forgets the session. Returns false when it was not live.
  bool Close(SessionId id);

  size_t size() const { return sessions_.size(); }
  const std::map<SessionId, Session>& all() const { return sessions_; }

  // The sum of `count` over the live sessions of `tenant` (TenantOf): what
  // they hold together, visiting only theirs.
  size_t SumOverTenant(const Tenant& tenant,
                       const std::function<size_t(const Session&)>& count) const;

 private:
  std::map<SessionId, Session> sessions_;
  std::map<Tenant, std::set<SessionId>> by_tenant_;
  SessionId next_id_ = 1;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_SESSION_TABLE_H_
