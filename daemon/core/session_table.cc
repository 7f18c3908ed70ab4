#include "daemon/core/session_table.h"

namespace acld {

Session& SessionTable::Open(const PeerInfo& peer, absl::Time now) {
  const SessionId id = next_id_++;
  Session& session = sessions_[id];
  session.id = id;
  session.peer = peer;
  session.connected_since = now;
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

bool SessionTable::Close(SessionId id) { return sessions_.erase(id) > 0; }

}  // namespace acld
