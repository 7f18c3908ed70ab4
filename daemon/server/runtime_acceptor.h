// Accepts connections on a listening Unix socket and hands each one to gRPC.
//
// gRPC's own listener (1.51) stops accepting for good after one accept4()
// failure such as EMFILE, so acld keeps its listening sockets to itself. On
// EMFILE, ENFILE, ENOMEM or ENOBUFS this acceptor logs once per burst and
// pauses for a moment (the pending connection stays queued, so a poll would
// only spin), then tries again: it always recovers once descriptors are free.
//
// Each connection held open is one of acld's descriptors, and a connection
// without a session lives up to --hello_timeout: one user reconnecting fast
// enough held every descriptor acld had, and everyone's aclInit waited
// seconds (docs/performance.md, session 25). So a uid may hold at most
// `max_per_uid` connections on one socket (--max_connections_per_uid); its
// next ones are closed at once.
#ifndef ACLD_DAEMON_SERVER_RUNTIME_ACCEPTOR_H_
#define ACLD_DAEMON_SERVER_RUNTIME_ACCEPTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/server/frame_gate.h"
#include "daemon/server/log_limiter.h"
#include "daemon/server/peer_credentials.h"

namespace acld::server {

class RuntimeAcceptor {
 public:
  // Takes ownership of `listen_fd` (a listening socket). `hand_off` receives
  // every accepted connection (non-blocking, close-on-exec) and owns it.
  // `name` names the socket in log lines.
  // `max_per_uid`: 0 for no limit. With a `gate` (which must outlive the
  // acceptor), `hand_off` receives the gate's end for each connection
  // instead (frame_gate.h).
  // `counting`: whom max_per_uid and the gate's per-uid bounds count.
  enum class Counting {
    kPerUid,  // each uid (a subordinate one as its range's owner, uid_owners.h)
    // Every connection alike, as uid 0: a quota group's socket, whose
    // processes are one tenant and, root in a pod, may take any uid they
    // like (counted per uid, one pod's setuid children held a uid's share
    // each of acld's descriptors).
    kAsOneTenant,
  };
  static absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> Start(
      int listen_fd, std::string name, std::function<void(int)> hand_off,
      absl::Duration pause = absl::Milliseconds(100), size_t max_per_uid = 0,
      FrameGate* gate = nullptr, Counting counting = Counting::kPerUid);
  // As Start, but nothing is accepted before StartAccepting(): whatever looks
  // connections up here (PeerUid, Holds) can be in place before the first
  // one. A client may connect as soon as the socket listens, before acld
  // is ready; one accepted before acld could find its uid was counted as
  // nobody's (uid -1), outside its user's limits.
  static absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> Create(
      int listen_fd, std::string name, std::function<void(int)> hand_off,
      absl::Duration pause = absl::Milliseconds(100), size_t max_per_uid = 0,
      FrameGate* gate = nullptr, Counting counting = Counting::kPerUid);
  // Starts accepting (once).
  void StartAccepting();
  // Stops accepting and closes the listening socket.
  ~RuntimeAcceptor();

  // Stops accepting (idempotent); connections waiting in the backlog are
  // refused when the socket closes.
  void Stop();

  // Shuts down (SHUT_RDWR) the accepted connections still open whose peer
  // `which` selects (pid, uid and start time at connect time); returns how
  // many. A descriptor gRPC closed meanwhile, or reused for another socket,
  // is left alone (its inode tells).
  size_t ShutdownConnections(const std::function<bool(const PeerCredentials& peer)>& which);

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
  // Connections closed at once because their uid held max_per_uid already.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  size_t max_per_uid() const { return max_per_uid_; }

 private:
  RuntimeAcceptor(int listen_fd, int stop_fd, std::string name, std::function<void(int)> hand_off,
                  absl::Duration pause, size_t max_per_uid, FrameGate* gate, Counting counting);
  void Loop();
  // Sleeps for `timeout` unless stopped; false once stopped.
  bool WaitUnlessStopped(absl::Duration timeout);
  // Out of descriptors or memory (`error`): logged once per burst (counted
  // in `failed_in_burst`), then a pause; false once stopped.
  bool PauseAfter(int error, uint64_t& failed_in_burst);

  int listen_fd_;
  const int stop_fd_;  // an eventfd that wakes Loop() to stop
  const std::string name_;
  const std::function<void(int)> hand_off_;
  const absl::Duration pause_;
  FrameGate* const gate_;  // null: connections go to gRPC as accepted
  int spare_ends_[2] = {-1, -1};  // the gate's ends for the next connection
  struct Connection {
    int fd;
    ino_t inode;
    pid_t pid;
    uid_t uid;
    uint64_t start_ticks;  // the process's, read at accept (0: unknown)
    // Whom its per-uid counts charge: `uid`, or the owner of the subordinate
    // range it is in (uid_owners.h), as read at accept.
    uid_t counted_uid;
  };
  // The peer of connection `fd` (the kernel's word), to be kept once it is
  // handed off (Remember).
  Connection PeerOf(int fd) const;
  // Whether `counted_uid` may open one more connection (it holds fewer than
  // max_per_uid).
  bool HasRoomFor(uid_t counted_uid);
  // Keeps `connection`, whose fd is the one handed off, for the counts and
  // the cuts (the accepting thread alone adds: the room it checked stays).
  void Remember(const Connection& connection);
  // Whether `connection` still is the socket it was (not closed, not reused).
  static bool StillOpen(const Connection& connection);
  // Forgets the connections gRPC closed (of `counted_uid` only, if given).
  void ForgetClosedLocked(std::optional<uid_t> counted_uid = std::nullopt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_per_uid_;
  const Counting counting_;
  absl::Mutex mu_;
  std::vector<Connection> connections_ ABSL_GUARDED_BY(mu_);
  struct UidConnections {
    size_t open = 0;  // in connections_
    // When its closed ones were last looked for: at most every kRecountEvery
    // while it is at the limit, so that a uid refused in a loop costs acld
    // one accept each, not a look at all of its connections.
    absl::Time counted = absl::InfinitePast();
  };
  static constexpr absl::Duration kRecountEvery = absl::Milliseconds(100);
  std::map<uid_t, UidConnections> per_uid_ ABSL_GUARDED_BY(mu_);  // by counted uid
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> pauses_{0};
  std::atomic<uint64_t> refused_{0};
  // What a uid over its cap makes acld log, a few lines a minute at most.
  RateLimitedLog over_cap_log_;
  // What running out of descriptors makes acld log, as rarely.
  RateLimitedLog pause_log_;
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_RUNTIME_ACCEPTOR_H_
