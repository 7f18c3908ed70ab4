#ifndef ACLD_DAEMON_CORE_SESSION_ID_H_
#define ACLD_DAEMON_CORE_SESSION_ID_H_

#include <cstdint>

namespace acld {

// Identifies one client process's connection. Never reused within a daemon's life.
using SessionId = uint64_t;

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_SESSION_ID_H_
