// Who a client really is: the kernel's word (SO_PEERCRED), not the client's.
//
// gRPC does not expose the peer credentials of a Unix socket, so a client
// first connects to a small side socket (<runtime socket>.peer). The daemon
// reads the connecting process's pid, uid and gid from the kernel. The client
// speaks first, one line; the daemon answers one line and closes:
//
//   "T\n"                       -> "<token>\n": a one-time identity token for the Hello
//   "M <bytes>\n" + one memfd   -> "<ticket>\n": shared memory handed to acld (SCM_RIGHTS);
//                                 a session channel's memfd comes with its
//                                 doorbell, an eventfd, as a second descriptor
//   "S <bytes> <version>\n" + a session channel's memfd and doorbell
//                               -> "O\n": the process's session is open on that
//                                 channel (SessionOpener); the connection stays
//                                 open for the session's life, and its end ends it
//   anything refused            -> "E <reason>\n"
//
// The socket's path and these words are the contract's (proto/acl/peer_socket.h).
//
// Shared memory travels as a file descriptor, never by name: a name works only
// where client and daemon share /dev/shm, and an object opened by name can be
// truncated under the daemon's mapping (SIGBUS). The memfd must be sealed
// against shrinking (F_SEAL_SHRINK), so it can never become smaller than what
// acld maps, and come with its pages written: once acld mapped it, acld seals
// it against hole punching (SealAgainstHoles) and checks that what it maps
// has none, so that acld never allocates a page of a client's file (its own
// memory cgroup would pay for it, for as long as the client keeps the file).
// A ticket is redeemable only by a session of the process (pid and uid) that
// sent the memfd.
//
// Tokens and tickets are valid once, for 30 s. The desk is one thread with a
// poll() loop: a client that connects and says nothing costs a slot until its
// deadline and nothing else, and running out of file descriptors pauses
// accepting instead of spinning.
#ifndef ACLD_DAEMON_SERVER_PEER_CREDENTIALS_H_
#define ACLD_DAEMON_SERVER_PEER_CREDENTIALS_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/acl/peer_socket.h"  // PeerSocketPath and the words below

namespace acld::server {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  // When the process with that pid started, read as it connected
  // (daemon/core/process_clock.h); 0 if unknown. Read later (at a Hello up to
  // a token's lifetime after), it could be another process's that took the pid.
  uint64_t start_ticks = 0;
  // For a subordinate uid, the user who owns its range, read as it
  // connected (uid_owners.h): whom its per-uid counts charge.
  std::optional<uid_t> range_owner;
  uid_t counted_uid() const { return range_owner.value_or(uid); }
};

// Whether a connection `connected` made came from `process`: the same pid
// and uid and, where both are known, the same start time (a pid that
// another process took since is not the process; in pods every process may
// be uid 0).
inline bool SameProcess(const PeerCredentials& connected, const PeerCredentials& process) {
  return connected.pid == process.pid && connected.uid == process.uid &&
         (connected.start_ticks == 0 || process.start_ticks == 0 ||
          connected.start_ticks == process.start_ticks);
}

// A file descriptor with exactly one owner; closed when the owner goes. One
// a client handed over, or a client's connection, is closed the way
// client_descriptors.h says (never waiting on what the client controls).
class UniqueFd {
 public:
  enum class Origin { kOwn, kReceived, kConnection };
  UniqueFd() = default;
  explicit UniqueFd(int fd, Origin origin = Origin::kOwn) : fd_(fd), origin_(origin) {}
  UniqueFd(UniqueFd&& other) noexcept : origin_(other.origin_) { fd_ = other.release(); }
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    const Origin origin = other.origin_;
    reset(other.release());
    origin_ = origin;
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes what it holds, then holds `fd` (of the same origin).
  void reset(int fd = -1);

 private:
  int fd_ = -1;
  Origin origin_ = Origin::kOwn;
};

// Shared memory a client handed over: a memfd verified (CheckSealedMemory) to
// hold at least `size` bytes for as long as it exists.
struct ReceivedMemory {
  UniqueFd fd;
  uint64_t size = 0;
  // An eventfd (CheckDoorbell) sent along, or none: a session channel's
  // doorbell, which acld waits on in epoll and never reads or writes.
  UniqueFd doorbell;
  // Who handed it over (its desk and counted uid; never shown): whose
  // memory SealClientMemory refuses for a while once it could not be sealed.
  std::string sender;
  // The process that handed it over, and when it started (0: unknown):
  // where acld fills the holes of an older client's memory from
  // (client_memory.h).
  pid_t sender_pid = 0;
  uint64_t sender_start_ticks = 0;
};

// The largest shared memory segment acld accepts.
inline constexpr uint64_t kMaxSharedMemoryBytes = uint64_t{1} << 40;

// OK when `fd` is a memfd that acld can map read-write for `size` bytes and
// that can never shrink below that (0 < size <= kMaxSharedMemoryBytes);
// otherwise an error whose message says what is wrong with it.
absl::Status CheckSealedMemory(int fd, uint64_t size);

// For a memfd acld has just mapped (its first `size` bytes): seals it against
// hole punching (F_SEAL_FUTURE_WRITE | F_SEAL_SEAL; acld's mapping and the
// client's stay writable) and checks that no page of what acld maps is a
// hole. Then no fault of acld's on it allocates a page. Memory a libascendcl before protocol
// version 5 sealed with F_SEAL_SEAL cannot be sealed so: refused unless
// acld accepts it (SetAcceptsUnsealableMemory).
absl::Status SealAgainstHoles(int fd, uint64_t size);

// Whether `fd` was sealed with F_SEAL_SEAL and not against writing: memory of
// a libascendcl before protocol version 5, which acld cannot seal against
// hole punching (client_memory.h fills its holes from the client instead).
bool SealedForGood(int fd);

// --map_unsealed_client_memory: whether acld maps memory it cannot seal
// against hole punching (older clients') as it comes, paying for the pages
// it touches in it, rather than filling its holes from the client. For hosts
// whose local users are all trusted. Process-wide; off by default.
void SetAcceptsUnsealableMemory(bool accepts);
bool AcceptsUnsealableMemory();

// OK when `fd` is an eventfd (what a doorbell must be: epoll can wait on it
// and nothing in it can block acld); otherwise an error saying so.
absl::Status CheckDoorbell(int fd);

struct PeerDeskOptions {
  // How long a connected client has to send its request line; the desk
  // never waits more than 250 ms (peer_credentials.cc, kRequestTimeout).
  absl::Duration request_timeout = absl::Seconds(5);
  // Connections being served at once; beyond, new ones wait in the backlog.
  size_t max_pending_connections = 256;
  // ... of one uid: beyond, a new one is answered "E busy" at once (its
  // client asks again), so that one user's idle connections cannot fill the
  // desk and make everyone else wait in the backlog.
  size_t max_pending_connections_per_uid = 32;
  // How long a token or ticket stays redeemable.
  absl::Duration lifetime = absl::Seconds(30);
  // Outstanding tokens; the oldest is dropped beyond. Of one uid: beyond,
  // that uid's own oldest is dropped, so that one user's flood of token
  // requests cannot push out other users' tokens before their Hello (a
  // process that waited for CPU past the flood failed its aclInit).
  size_t max_tokens = 65536;
  size_t max_tokens_per_uid = 4096;
  // Outstanding shared memory tickets (each holds a descriptor), in all and
  // per user; beyond, requests are refused ("E too many").
  size_t max_memory_tickets = 1024;
  size_t max_memory_tickets_per_uid = 64;
  // Whether the per-uid bounds above count every connection as one tenant:
  // a quota group's desk, whose pod's root can take any uid (each uid its
  // own share would let one pod hold the desk's every place), and whose
  // group is the tenant. Otherwise a peer counts as its counted uid.
  bool as_one_tenant = false;
  uid_t TenantOf(const PeerCredentials& peer) const {
    return as_one_tenant ? 0 : peer.counted_uid();
  }
};

// Opens a session on the channel a process handed over with "S" (its
// identity is the kernel's). On success it returns what takes the
// connection once "O" was sent: the session's life is the connection's.
using SessionOpener = std::function<absl::StatusOr<std::function<void(UniqueFd connection)>>(
    const PeerCredentials& peer, uint32_t protocol_version, ReceivedMemory channel)>;

class PeerCredentialDesk {
 public:
  // Listens on `path` (prepared by the caller) and serves on a thread, with
  // no SessionOpener ("S" is refused).
  static absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> Start(
      const std::string& path, absl::Duration request_timeout = absl::Seconds(5),
      size_t max_pending_connections = 256);
  static absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> Start(const std::string& path,
                                                                   const PeerDeskOptions& options);
  // Listens on `path` but answers nobody until Serve: connections wait in the
  // kernel's queue. acld needs the desk before the service that opens
  // sessions exists, and no client may be refused in between.
  static absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> Listen(
      const std::string& path, const PeerDeskOptions& options = {});
  // Serves on a thread from now on; `opener` opens the sessions asked for
  // with "S" (none: "S" is refused). Once.
  void Serve(SessionOpener opener);
  // Stops serving and closes the listening socket (idempotent; not from the
  // desk's own opener). Tokens and tickets issued stay redeemable: sessions
  // it opened may still redeem their memory tickets.
  void Stop();
  ~PeerCredentialDesk();

  // The identity behind `token`, once. With `uid`, only a token of that
  // user is redeemed (another's stays for its owner).
  std::optional<PeerCredentials> Redeem(const std::string& token,
                                        std::optional<uid_t> uid = std::nullopt);

  // The memory behind `ticket`, once, and only for the process that sent it
  // (`pid` and `uid` are the redeeming session's kernel-verified identity).
  absl::StatusOr<ReceivedMemory> RedeemMemory(const std::string& ticket, pid_t pid, uid_t uid);

  // Connections accepted and not yet answered (for `aclctl status`).
  size_t pending_connections() const;
  // Connections answered "E busy" (their uid was at its pending cap, or their
  // whole request had not come in their first 250 ms).
  uint64_t busy_refusals() const { return busy_refusals_.load(std::memory_order_relaxed); }
  // Tokens and tickets issued, not yet redeemed or expired.
  size_t outstanding_tokens() const;
  size_t outstanding_memory_tickets() const;

 private:
  struct Connection;
  class Tables;

  PeerCredentialDesk(int listen_fd, int stop_fd, const PeerDeskOptions& options);
  void Run();
  // Accepts what the listener has; false when it must not be polled for a while.
  bool AcceptSome(std::vector<Connection>& connections);
  // Answers "E busy <why>" (the client asks again) on `fd`, which then closes.
  void TellBusy(int fd, const std::string& why);
  // Reads from `connection`; true when it is finished (answered or dropped).
  bool ReadFrom(Connection& connection);
  // Answers `connection`'s complete request line (issuing what it asks for) and
  // takes back what was issued when the answer cannot be sent.
  void Respond(Connection& connection);
  // The answer to "M <bytes>"; `ticket` receives the ticket issued, if any.
  std::string IssueTicket(Connection& connection, const std::string& bytes, std::string* ticket);
  // The memfd (and doorbell) `connection` sent, checked to hold `bytes`.
  absl::StatusOr<ReceivedMemory> TakeMemory(Connection& connection, const std::string& bytes);
  // The answer to "S <bytes> <version>"; `attach` receives what takes the
  // connection once the answer went out.
  std::string OpenSession(Connection& connection, const std::string& request,
                          std::function<void(UniqueFd)>* attach);

  int listen_fd_;      // -1 once stopped
  const int stop_fd_;  // an eventfd that wakes Run() to stop
  const PeerDeskOptions options_;
  std::unique_ptr<Tables> tables_;
  std::atomic<size_t> pending_{0};
  std::atomic<uint64_t> busy_refusals_{0};
  // Tells this desk's senders from another desk's (ReceivedMemory::sender),
  // never reused, unlike an address.
  const uint64_t serial_ = next_serial_.fetch_add(1);
  static inline std::atomic<uint64_t> next_serial_{1};
  bool accept_failing_ = false;  // Run() only: one warning per burst
  SessionOpener opener_;  // set before the thread starts, then only read by it
  std::thread thread_;
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_PEER_CREDENTIALS_H_
