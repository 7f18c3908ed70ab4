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

// Hands the memfd `fd` (sealed_memfd.h: at least `size` bytes, allocated,
// sealed against shrinking) to the daemon at `path` and returns the ticket that registers
// it in this process's session. `doorbell` (a session channel's, -1: none)
// is an eventfd sent along, which the daemon waits on. The caller keeps (and
// may close) its descriptors.
absl::StatusOr<std::string> SendSharedMemory(const std::string& path, int fd, uint64_t size,
                                             absl::Duration timeout, int doorbell = -1);

// Opens this process's session on the identity socket at `path` ("S"), on
// the session channel `channel` (a sealed memfd of `size` bytes) with its
// `doorbell`. Returns the connection, which the caller keeps open for the
// session's life. A refusal (FailedPrecondition) carries the daemon's
// "<aclError> <reason>"; a daemon older than protocol 4 refuses with
// "request not understood".
absl::StatusOr<int> OpenSessionOnIdentitySocket(const std::string& path, int channel,
                                                uint64_t size, int doorbell,
                                                absl::Duration timeout);

}  // namespace acl_client

#endif  // ACLD_CLIENT_PEER_TOKEN_H_
