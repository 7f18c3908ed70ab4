// Filesystem care for the daemon's Unix sockets.
#ifndef ACLD_DAEMON_SERVER_SOCKET_PATH_H_
#define ACLD_DAEMON_SERVER_SOCKET_PATH_H_

#include <string>

#include "absl/status/status.h"

namespace acld::server {

// Makes `path` ready for a new listening socket: creates its directory, fails
// when a live process accepts connections there (another acld), and removes a
// stale socket file left by a daemon that died.
absl::Status PrepareSocketPath(const std::string& path);

// True when something accepts connections on the Unix socket at `path`.
bool SocketIsLive(const std::string& path);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SOCKET_PATH_H_
