// The identity handshake's client half: before opening its session, the
// client connects to the daemon's side socket (<runtime socket>.peer, see
// daemon/server/peer_credentials.h), where the daemon reads its pid and uid
// from the kernel and answers with a one-time token for the Hello.
#ifndef ACLD_CLIENT_PEER_TOKEN_H_
#define ACLD_CLIENT_PEER_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace acl_client {

std::string PeerSocketPath(const std::string& runtime_socket);

// Connects to `path` and returns the token it is given.
absl::StatusOr<std::string> FetchPeerToken(const std::string& path, absl::Duration timeout);

}  // namespace acl_client

#endif  // ACLD_CLIENT_PEER_TOKEN_H_
