// What the daemon knows about one client process's session.
#ifndef ACLD_DAEMON_CORE_SESSION_H_
#define ACLD_DAEMON_CORE_SESSION_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "daemon/core/session_id.h"

namespace acld {

// Who is on the other end of a session.
struct PeerInfo {
  int32_t pid = 0;
  uint32_t uid = 0;
  std::string command;
};

struct Session {
  SessionId id = 0;
  PeerInfo peer;
  absl::Time connected_since;
  // aclrtSetDevice references per device id (aclrtResetDevice drops one).
  std::map<int32_t, uint32_t> device_refs;
  // The validated aclInit config keys of the current initialization.
  std::map<std::string, std::string> config;
  bool has_default_device = false;
  int32_t default_device = 0;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_SESSION_H_
