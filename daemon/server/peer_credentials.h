// Who a client really is: the kernel's word (SO_PEERCRED), not the client's.
//
// gRPC does not expose the peer credentials of a Unix socket, so a client
// first connects to a small side socket (<runtime socket>.peer). The daemon
// reads the connecting process's pid, uid and gid from the kernel and hands it
// a one-time token; the client presents the token in its Hello, and the
// session gets that identity. A token is valid once, for a few seconds.
#ifndef ACLD_DAEMON_SERVER_PEER_CREDENTIALS_H_
#define ACLD_DAEMON_SERVER_PEER_CREDENTIALS_H_

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace acld::server {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// The side socket's path for a runtime socket (client/peer_token.cc agrees).
std::string PeerSocketPath(const std::string& runtime_socket);

class PeerCredentialDesk {
 public:
  // Listens on `path` (prepared by the caller) and serves tokens on a thread.
  static absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> Start(const std::string& path);
  ~PeerCredentialDesk();

  // The identity behind `token`, once.
  std::optional<PeerCredentials> Redeem(const std::string& token);

 private:
  PeerCredentialDesk(int listen_fd, int stop_fd);
  void Serve();
  void Expire() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int listen_fd_;
  const int stop_fd_;  // an eventfd that wakes Serve() to stop
  std::thread thread_;
  absl::Mutex mu_;
  struct Issued {
    PeerCredentials credentials;
    absl::Time expires;
  };
  std::map<std::string, Issued> tokens_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_PEER_CREDENTIALS_H_
