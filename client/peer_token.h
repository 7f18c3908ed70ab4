// The identity socket's client half. Before opening its session the client
// connects to the daemon's side socket (acld::PeerSocketPath, see
// daemon/server/peer_credentials.h), where the daemon reads its pid and uid
// from the kernel. The client says what it wants in one line and gets one
// line back: a one-time token for the Hello ("T"), or a ticket for shared
// memory it hands over as a sealed memfd ("M <bytes>"); the words are
// proto/acl/peer_socket.h's.
#ifndef ACLD_CLIENT_PEER_TOKEN_H_
#define ACLD_CLIENT_PEER_TOKEN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace acl_client {

// Connects to `path` and returns the identity token it is given.
absl::StatusOr<std::string> FetchPeerToken(const std::string& path, absl::Duration timeout);

// Hands the memfd `fd` (sealed with F_SEAL_SHRINK | F_SEAL_SEAL, at least
// `size` bytes) to the daemon at `path` and returns the ticket that registers
// it in this process's session. `doorbell` (a session channel's, -1: none)
// is an eventfd sent along, which the daemon waits on. The caller keeps (and
// may close) its descriptors.
absl::StatusOr<std::string> SendSharedMemory(const std::string& path, int fd, uint64_t size,
                                             absl::Duration timeout, int doorbell = -1);

}  // namespace acl_client

#endif  // ACLD_CLIENT_PEER_TOKEN_H_
