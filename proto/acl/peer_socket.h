// The identity side socket's address and words, as both its ends speak them
// (the daemon's desk: daemon/server/peer_credentials.h, which describes the
// exchange; the client's half: client/peer_token.h). Each request and answer
// is one line ending in '\n'.
#ifndef ACLD_PROTO_ACL_PEER_SOCKET_H_
#define ACLD_PROTO_ACL_PEER_SOCKET_H_

#include <string>

namespace acld {

// The side socket lives beside the runtime socket, under this suffix.
inline constexpr char kPeerSocketSuffix[] = ".peer";

inline std::string PeerSocketPath(const std::string& runtime_socket) {
  return runtime_socket + kPeerSocketSuffix;
}

// "T": a one-time identity token for the Hello.
inline constexpr char kPeerTokenRequest[] = "T";
// "M <bytes>" with one sealed memfd attached: a ticket for shared memory.
inline constexpr char kPeerMemoryRequest[] = "M ";
// "S <bytes> <protocol version>" with a session channel's memfd and doorbell
// attached: opens the process's session on that channel, without gRPC. The
// answer "O" says it is open (its SessionOpened waits in the channel, for
// call id kSessionOpenedCallId), and the connection then stays open for the
// session's life: the process closing it (or exiting) ends the session, and
// acld closing it says the session is over. A refusal reads "E <aclError>
// <reason>" (ACL_ERROR_RT_OVER_LIMIT over a cap). A daemon older than protocol 4
// answers "E request not understood ..." (the client opens on gRPC then).
inline constexpr char kPeerSessionRequest[] = "S ";
inline constexpr char kPeerSessionOpened[] = "O";
// "E <reason>": the desk refused the request.
inline constexpr char kPeerRefusal[] = "E ";
// "E busy <reason>": the connection came while the process's user already had
// the most connections the desk serves for one user at once; the client asks
// again a moment later (until its own deadline).
inline constexpr char kPeerBusy[] = "E busy ";

}  // namespace acld

#endif  // ACLD_PROTO_ACL_PEER_SOCKET_H_
