#include "daemon/core/session_table.h"

namespace acld {

Session& SessionTable::Open(const PeerInfo& peer, std::shared_ptr<QuotaGroup> group,
                           absl::Time now) {
  const SessionId id = next_id_++;
  Session& session = sessions_[id];
  session.id = id;
  session.peer = peer;
  session.group = std::move(group);
  session.connected_since = now;
  by_tenant_[TenantOf(session)].insert(id);
  return session;
}

Session* SessionTable::Find(SessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

const Session* SessionTable::Find(SessionId id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

bool SessionTable::Close(SessionId id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  // Open filed it under its tenant; nothing changes a session's uid or group.
  auto tenant = by_tenant_.find(TenantOf(it->second));
  if (tenant != by_tenant_.end()) {
    tenant->second.erase(id);
    if (tenant->second.empty()) by_tenant_.erase(tenant);
  }
  sessions_.erase(it);
  return true;
}

size_t SessionTable::SumOverTenant(const Tenant& tenant,
                                   const std::function<size_t(const Session&)>& count) const {
  auto ids = by_tenant_.find(tenant);
  if (ids == by_tenant_.end()) return 0;
  size_t sum = 0;
  for (SessionId id : ids->second) sum += count(sessions_.at(id));
  return sum;
}

}  // namespace acld
