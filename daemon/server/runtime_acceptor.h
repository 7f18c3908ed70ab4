// Accepts connections on a listening Unix socket and hands each one to gRPC.
//
// gRPC's own listener (1.51) stops accepting for good after one accept4()
// failure such as EMFILE, so acld keeps its listening sockets to itself. On
// EMFILE, ENFILE, ENOMEM or ENOBUFS this acceptor logs once per burst and
// pauses for a moment (the pending connection stays queued, so a poll would
// only spin), then tries again: it always recovers once descriptors are free.
#ifndef ACLD_DAEMON_SERVER_RUNTIME_ACCEPTOR_H_
#define ACLD_DAEMON_SERVER_RUNTIME_ACCEPTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace acld::server {

class RuntimeAcceptor {
 public:
  // Takes ownership of `listen_fd` (a listening socket). `hand_off` receives
  // every accepted connection (non-blocking, close-on-exec) and owns it.
  // `name` names the socket in log lines.
  static absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> Start(
      int listen_fd, std::string name, std::function<void(int)> hand_off,
      absl::Duration pause = absl::Milliseconds(100));
  // Stops accepting and closes the listening socket.
  ~RuntimeAcceptor();

  // Stops accepting (idempotent); connections waiting in the backlog are
  // refused when the socket closes.
  void Stop();

  // Shuts down (SHUT_RDWR) the accepted connections still open whose peer
  // `which` selects (by pid and uid at connect time); returns how many. A
  // descriptor gRPC closed meanwhile, or reused for another socket, is left
  // alone (its inode tells).
  size_t ShutdownConnections(const std::function<bool(pid_t pid, uid_t uid)>& which);

  // Accepted connections still open (gRPC closes them).
  size_t OpenConnections();

  // Whether `fd` is a connection this acceptor accepted and is still that
  // socket (not closed, not a descriptor reused since).
  bool Holds(int fd);
  // The uid that connected `fd` (the kernel's word, at connect time), if `fd`
  // is a connection this acceptor holds.
  std::optional<uid_t> PeerUid(int fd);

  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  // Times accepting paused because the daemon ran out of descriptors or memory.
  uint64_t pauses() const { return pauses_.load(std::memory_order_relaxed); }

 private:
  RuntimeAcceptor(int listen_fd, int stop_fd, std::string name, std::function<void(int)> hand_off,
                  absl::Duration pause);
  void Loop();
  // Sleeps for `timeout` unless stopped; false once stopped.
  bool WaitUnlessStopped(absl::Duration timeout);

  int listen_fd_;
  const int stop_fd_;  // an eventfd that wakes Loop() to stop
  const std::string name_;
  const std::function<void(int)> hand_off_;
  const absl::Duration pause_;
  struct Connection {
    int fd;
    ino_t inode;
    pid_t pid;
    uid_t uid;
  };
  void Remember(int fd);
  // Whether `connection` still is the socket it was (not closed, not reused).
  static bool StillOpen(const Connection& connection);

  absl::Mutex mu_;
  std::vector<Connection> connections_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> pauses_{0};
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_RUNTIME_ACCEPTOR_H_
