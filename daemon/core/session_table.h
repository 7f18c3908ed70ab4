// The live sessions, by id. Not internally synchronized: Runtime serializes access.
#ifndef ACLD_DAEMON_CORE_SESSION_TABLE_H_
#define ACLD_DAEMON_CORE_SESSION_TABLE_H_

#include <map>

#include "daemon/core/session.h"

namespace acld {

class SessionTable {
 public:
  // Registers a new session and returns it; ids start at 1 and are never reused.
  Session& Open(const PeerInfo& peer, absl::Time now);
  // nullptr when `id` is not (or no longer) a live session.
  Session* Find(SessionId id);
  const Session* Find(SessionId id) const;
  // Forgets the session. Returns false when it was not live.
  bool Close(SessionId id);

  size_t size() const { return sessions_.size(); }
  const std::map<SessionId, Session>& all() const { return sessions_; }

 private:
  std::map<SessionId, Session> sessions_;
  SessionId next_id_ = 1;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_SESSION_TABLE_H_
