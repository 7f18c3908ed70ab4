#include "daemon/server/peer_credentials.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <list>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "daemon/core/process_clock.h"
#include "daemon/server/client_descriptors.h"
#include "daemon/server/uid_owners.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"
#include "daemon/server/socket_path.h"
#include "spdlog/spdlog.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

namespace acld::server {
namespace {

constexpr size_t kIdBytes = 16;  // 32 hex characters
// A request line is short ("M 1099511627776"); longer input is refused.
constexpr size_t kMaxLine = 64;
// Descriptors one recvmsg may bring: all one message can carry (the kernel's
// SCM_MAX_FD), so that the kernel never drops one on the desk's thread
// (client_descriptors.h); a request takes at most two.
constexpr size_t kMaxFdsPerRead = 253;
// Accepts per poll round, so that a flood of connects cannot starve the
// connections already accepted.
constexpr int kAcceptsPerRound = 64;
// How long a connection may take to send its whole request, at most
// (Connection::deadline).
constexpr absl::Duration kRequestTimeout = absl::Milliseconds(250);
constexpr absl::Duration kAcceptPause = absl::Milliseconds(100);

// The answer line that refuses a request (without its '\n').
std::string Refusal(absl::string_view reason) { return absl::StrCat(kPeerRefusal, reason); }

// A token or ticket: 128 bits from the kernel's CSPRNG, or nothing when it
// cannot give them (never a weaker fallback).
std::optional<std::string> NewId() {
  char bytes[kIdBytes];
  size_t got = 0;
  while (got < kIdBytes) {
    const ssize_t n = getrandom(bytes + got, kIdBytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(absl::string_view(bytes, kIdBytes));
}

// Entries that all live equally long, in issue order, with O(1) lookup and
// removal: expiry pops from the front, so neither grows with the number
// outstanding.
template <typename Value>
class ExpiringTable {
 public:
  explicit ExpiringTable(size_t capacity) : capacity_(capacity) {}

  size_t size() const { return index_.size(); }
  bool full() const { return index_.size() >= capacity_; }

  void Add(std::string key, Value value, absl::Time expires) {
    order_.push_back(Entry{key, std::move(value), expires});
    index_[std::move(key)] = std::prev(order_.end());
  }
  const Value* Find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->value;
  }
  std::optional<Value> Take(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    std::optional<Value> value(std::move(it->second->value));
    order_.erase(it->second);
    index_.erase(it);
    return value;
  }
  // The oldest entry, removed, when it expired by `now` (or always, with
  // InfiniteFuture).
  std::optional<Value> TakeOldest(absl::Time now) {
    if (order_.empty() || order_.front().expires > now) return std::nullopt;
    return Take(order_.front().key);
  }
  // Removes every entry whose value `dead` says is of no use any more.
  template <typename Predicate>
  void TakeIf(const Predicate& dead, std::vector<Value>& taken) {
    for (auto it = order_.begin(); it != order_.end();) {
      if (!dead(it->value)) {
        ++it;
        continue;
      }
      taken.push_back(std::move(it->value));
      index_.erase(it->key);
      it = order_.erase(it);
    }
  }
  std::optional<absl::Time> next_expiry() const {
    if (order_.empty()) return std::nullopt;
    return order_.front().expires;
  }

 private:
  struct Entry {
    std::string key;
    Value value;
    absl::Time expires;
  };
  const size_t capacity_;
  std::list<Entry> order_;
  absl::flat_hash_map<std::string, typename std::list<Entry>::iterator> index_;
};

struct IssuedMemory {
  ReceivedMemory memory;
  PeerCredentials owner;
};

}  // namespace

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) {
    switch (origin_) {
      case Origin::kOwn:
        close(fd_);
        break;
      case Origin::kReceived:
        CloseReceived(fd_);
        break;
      case Origin::kConnection:
        CloseConnection(fd_);
        break;
    }
  }
  fd_ = fd;
}

namespace {

std::atomic<bool> accepts_unsealable_memory{false};

// Sealed with F_SEAL_SEAL, not against writes: a libascendcl before protocol
// version 5, whose memory acld cannot seal against hole punching.
bool SealedByAnOlderClient(int seals) {
  return (seals & F_SEAL_SEAL) != 0 && (seals & F_SEAL_FUTURE_WRITE) == 0;
}

absl::Status UnsealableRefused() {
  return absl::InvalidArgumentError(
      "shared memory sealed with F_SEAL_SEAL (a libascendcl before protocol version 5) cannot "
      "be sealed against hole punching, and acld would pay for the pages it touched in it; "
      "upgrade libascendcl, or start acld with --map_unsealed_client_memory where every local "
      "user is trusted");
}

}  // namespace

void SetAcceptsUnsealableMemory(bool accepts) { accepts_unsealable_memory.store(accepts); }

bool AcceptsUnsealableMemory() { return accepts_unsealable_memory.load(); }

bool SealedForGood(int fd) {
  const int seals = fcntl(fd, F_GET_SEALS);
  return seals >= 0 && SealedByAnOlderClient(seals);
}

absl::Status SealAgainstHoles(int fd, uint64_t size) {
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return absl::InvalidArgumentError("shared memory must be a sealable memfd");
  if (SealedByAnOlderClient(seals)) {
    return accepts_unsealable_memory.load() ? absl::OkStatus() : UnsealableRefused();
  }
  // No hole can be punched from now on (fallocate and MADV_REMOVE fail with
  // EPERM), and F_SEAL_SHRINK keeps the file from losing pages by truncation.
  if ((seals & F_SEAL_SEAL) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    // EINVAL: a kernel before 5.1, which has no F_SEAL_FUTURE_WRITE.
    if (errno == EINVAL && accepts_unsealable_memory.load()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "shared memory cannot be sealed against hole punching (", std::strerror(errno),
        "; Linux 5.1 or later can, or --map_unsealed_client_memory accepts it anyway)"));
  }
  // No hole where acld maps. A page allocated but never written (fallocate)
  // reads as a hole too, and one swapped out as data; pages beyond the end
  // of the file (fallocate's KEEP_SIZE) are not looked at.
  const off_t hole = lseek(fd, 0, SEEK_HOLE);
  if (hole < 0 || static_cast<uint64_t>(hole) < size) {
    return absl::InvalidArgumentError(
        "shared memory must come with every page written (MADV_POPULATE_WRITE before handing "
        "it over): acld would otherwise allocate its holes, and pay for them");
  }
  return absl::OkStatus();
}

absl::Status CheckSealedMemory(int fd, uint64_t size) {
  if (size == 0 || size > kMaxSharedMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared memory of ", size, " bytes is not within 1..", kMaxSharedMemoryBytes, " bytes"));
  }
  // Seals before size: once F_SEAL_SHRINK is set the size read below can only grow.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return absl::InvalidArgumentError(
        "shared memory must be a sealable memfd (memfd_create with MFD_ALLOW_SEALING)");
  }
  if ((seals & F_SEAL_SHRINK) == 0) {
    return absl::InvalidArgumentError(
        "shared memory must be sealed with F_SEAL_SHRINK, or it could shrink under acld's "
        "mapping");
  }
  if ((seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) != 0) {
    return absl::InvalidArgumentError("shared memory sealed against writing cannot receive copies");
  }
  // Seals exist on tmpfs and hugetlbfs; a hugetlb page that cannot be
  // allocated at fault time is a SIGBUS, so only tmpfs memory is taken.
  struct statfs filesystem {};
  if (fstatfs(fd, &filesystem) != 0 ||
      static_cast<unsigned long>(filesystem.f_type) != TMPFS_MAGIC) {
    return absl::InvalidArgumentError(
        "shared memory must be a memfd on tmpfs (hugetlb memory is refused)");
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError("shared memory must be a regular file");
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDWR) {
    return absl::InvalidArgumentError("shared memory must be open for reading and writing");
  }
  if (static_cast<uint64_t>(info.st_size) < size) {
    return absl::InvalidArgumentError(absl::StrCat("shared memory of ", info.st_size,
                                                   " bytes is smaller than the ", size,
                                                   " bytes announced"));
  }
  return absl::OkStatus();
}

absl::Status CheckDoorbell(int fd) {
  // The kernel names an eventfd's anonymous inode so; nothing else is named so.
  char target[64] = {};
  const std::string link = absl::StrCat("/proc/self/fd/", fd);
  const ssize_t length = readlink(link.c_str(), target, sizeof(target) - 1);
  if (length <= 0 || absl::string_view(target, static_cast<size_t>(length)) !=
                         "anon_inode:[eventfd]") {
    return absl::InvalidArgumentError("a session channel's doorbell must be an eventfd");
  }
  return absl::OkStatus();
}

// What the desk has issued. Shared by the desk's thread (which issues) and
// the session threads (which redeem); descriptors of dropped tickets are
// closed after the lock is released.
class PeerCredentialDesk::Tables {
 public:
  explicit Tables(const PeerDeskOptions& options)
      : options_(options), tokens_(options.max_tokens), tickets_(options.max_memory_tickets) {}

  void AddToken(std::string token, const PeerCredentials& peer) {
    std::vector<IssuedMemory> dropped;
    absl::MutexLock lock(&mu_);
    ExpireLocked(absl::Now(), dropped);
    // All tokens live equally long: the oldest is the least likely to be
    // used; a uid at its share loses its own oldest, not another's.
    UidTokens& own = tokens_of_uid_[TenantOf(peer)];
    if (own.live >= options_.max_tokens_per_uid) {
      while (!own.order.empty()) {
        std::optional<PeerCredentials> oldest = tokens_.Take(own.order.front());
        own.order.pop_front();
        if (oldest.has_value()) {
          --own.live;
          break;
        }
      }
    }
    if (tokens_.full()) {
      std::optional<PeerCredentials> oldest = tokens_.TakeOldest(absl::InfiniteFuture());
      if (oldest.has_value()) ForgetToken(TenantOf(*oldest));
    }
    UidTokens& mine = tokens_of_uid_[TenantOf(peer)];  // ForgetToken may have erased another's
    mine.order.push_back(token);
    ++mine.live;
    // Tokens redeemed or dropped elsewhere stay listed until they reach the
    // front: pruned once they are most of the list.
    if (mine.order.size() > 2 * mine.live + 16) {
      std::deque<std::string> kept;
      for (std::string& listed : mine.order) {
        if (tokens_.Find(listed) != nullptr) kept.push_back(std::move(listed));
      }
      mine.order = std::move(kept);
    }
    tokens_.Add(std::move(token), peer, absl::Now() + options_.lifetime);
  }

  std::optional<PeerCredentials> TakeToken(const std::string& token, std::optional<uid_t> uid) {
    std::vector<IssuedMemory> dropped;
    absl::MutexLock lock(&mu_);
    ExpireLocked(absl::Now(), dropped);
    const PeerCredentials* issued = tokens_.Find(token);
    if (issued == nullptr || (uid.has_value() && issued->uid != *uid)) return std::nullopt;
    std::optional<PeerCredentials> taken = tokens_.Take(token);
    if (taken.has_value()) ForgetToken(TenantOf(*taken));
    return taken;
  }

  // Refuses when too many tickets are outstanding (in all or for the owner's user).
  absl::Status AddTicket(std::string ticket, IssuedMemory issued) {
    std::vector<IssuedMemory> dropped;
    absl::MutexLock lock(&mu_);
    ExpireLocked(absl::Now(), dropped);
    size_t& per_uid = tickets_per_uid_[TenantOf(issued.owner)];
    if (tickets_.full() || per_uid >= options_.max_memory_tickets_per_uid) {
      if (per_uid == 0) tickets_per_uid_.erase(TenantOf(issued.owner));
      dropped.push_back(std::move(issued));
      return absl::ResourceExhaustedError(absl::StrCat(
          "too many shared memory tickets outstanding (at most ", options_.max_memory_tickets, ", ",
          options_.max_memory_tickets_per_uid,
          options_.as_one_tenant ? " for the socket's processes together)" : " per user)"));
    }
    ++per_uid;
    tickets_.Add(std::move(ticket), std::move(issued), absl::Now() + options_.lifetime);
    return absl::OkStatus();
  }

  absl::StatusOr<ReceivedMemory> TakeTicket(const std::string& ticket, pid_t pid, uid_t uid) {
    std::vector<IssuedMemory> dropped;
    absl::MutexLock lock(&mu_);
    ExpireLocked(absl::Now(), dropped);
    const IssuedMemory* issued = tickets_.Find(ticket);
    if (issued == nullptr) {
      return AclStatus(ACL_ERROR_INVALID_PARAM, "unknown or expired shared memory ticket");
    }
    if (issued->owner.pid != pid || issued->owner.uid != uid) {
      return AclStatus(ACL_ERROR_RT_NO_PERMISSION,
                       "the shared memory ticket was issued to another process");
    }
    std::optional<IssuedMemory> taken = tickets_.Take(ticket);
    Forget(TenantOf(taken->owner));
    return std::move(taken->memory);
  }

  void Revoke(const std::string& ticket) {
    std::vector<IssuedMemory> dropped;
    absl::MutexLock lock(&mu_);
    std::optional<IssuedMemory> taken = tickets_.Take(ticket);
    if (!taken.has_value()) return;
    Forget(TenantOf(taken->owner));
    dropped.push_back(*std::move(taken));
  }

  void RevokeToken(const std::string& token) {
    absl::MutexLock lock(&mu_);
    std::optional<PeerCredentials> taken = tokens_.Take(token);
    if (taken.has_value()) ForgetToken(TenantOf(*taken));
  }

  // Drops what expired, and the tickets of processes that are gone (a client
  // killed between handing memory over and redeeming it must not leave acld
  // holding it until expiry); returns when to look again.
  std::optional<absl::Time> Expire() {
    std::vector<IssuedMemory> dropped;
    std::vector<IssuedMemory> orphaned;  // both closed after the lock is released
    absl::MutexLock lock(&mu_);
    ExpireLocked(absl::Now(), dropped);
    tickets_.TakeIf(
        [](const IssuedMemory& issued) {
          return kill(issued.owner.pid, 0) != 0 && errno == ESRCH;
        },
        orphaned);
    for (const IssuedMemory& gone : orphaned) Forget(TenantOf(gone.owner));
    std::optional<absl::Time> next = tokens_.next_expiry();
    std::optional<absl::Time> next_ticket = tickets_.next_expiry();
    if (next_ticket.has_value()) next_ticket = std::min(*next_ticket, absl::Now() + kOwnerCheck);
    if (!next.has_value() || (next_ticket.has_value() && *next_ticket < *next)) next = next_ticket;
    return next;
  }
  // How often outstanding tickets are checked for owners that died.
  static constexpr absl::Duration kOwnerCheck = absl::Milliseconds(500);

  size_t tokens() const {
    absl::MutexLock lock(&mu_);
    return tokens_.size();
  }
  size_t tickets() const {
    absl::MutexLock lock(&mu_);
    return tickets_.size();
  }

 private:
  uid_t TenantOf(const PeerCredentials& peer) const { return options_.TenantOf(peer); }
  void ExpireLocked(absl::Time now, std::vector<IssuedMemory>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (std::optional<PeerCredentials> expired = tokens_.TakeOldest(now)) {
      ForgetToken(TenantOf(*expired));
    }
    while (std::optional<IssuedMemory> expired = tickets_.TakeOldest(now)) {
      Forget(TenantOf(expired->owner));
      dropped.push_back(*std::move(expired));
    }
  }
  void ForgetToken(uid_t uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = tokens_of_uid_.find(uid);
    if (it != tokens_of_uid_.end() && --it->second.live == 0) tokens_of_uid_.erase(it);
  }
  void Forget(uid_t uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = tickets_per_uid_.find(uid);
    if (it != tickets_per_uid_.end() && --it->second == 0) tickets_per_uid_.erase(it);
  }

  const PeerDeskOptions options_;
  mutable absl::Mutex mu_;
  ExpiringTable<PeerCredentials> tokens_ ABSL_GUARDED_BY(mu_);
  ExpiringTable<IssuedMemory> tickets_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uid_t, size_t> tickets_per_uid_ ABSL_GUARDED_BY(mu_);
  // A uid's live tokens, and its tokens oldest first (some perhaps gone).
  struct UidTokens {
    size_t live = 0;
    std::deque<std::string> order;
  };
  absl::flat_hash_map<uid_t, UidTokens> tokens_of_uid_ ABSL_GUARDED_BY(mu_);
};

// A client being served: its request line so far and what it sent along.
struct PeerCredentialDesk::Connection {
  UniqueFd socket;
  PeerCredentials peer;
  // A client sends its whole request, in one message, right after it
  // connects: one whose request has not come whole by kRequestTimeout (or
  // the desk's shorter request_timeout) is told to come back ("E busy"), so
  // that a connection holds a place for a moment. Before, one byte bought
  // 5 s: a few users renewing connections that sent a byte held every place.
  absl::Time deadline;
  bool Heard() const { return !line.empty() || fds_received > 0; }
  std::string line;
  UniqueFd memory;          // the first descriptor received
  UniqueFd doorbell;        // the second
  size_t fds_received = 0;  // all of them (the others are closed at once)
  bool truncated = false;   // the kernel dropped control data (MSG_CTRUNC)
};

absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> PeerCredentialDesk::Start(
    const std::string& path, absl::Duration request_timeout, size_t max_pending_connections) {
  PeerDeskOptions options;
  options.request_timeout = request_timeout;
  options.max_pending_connections = max_pending_connections;
  return Start(path, options);
}

absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> PeerCredentialDesk::Start(
    const std::string& path, const PeerDeskOptions& options) {
  ACL_ASSIGN_OR_RETURN(std::unique_ptr<PeerCredentialDesk> desk, Listen(path, options));
  desk->Serve(nullptr);
  return desk;
}

absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> PeerCredentialDesk::Listen(
    const std::string& path, const PeerDeskOptions& options) {
  if (options.max_pending_connections == 0 || options.max_tokens == 0 ||
      options.max_tokens_per_uid == 0 ||
      options.request_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("identity socket: limits and timeout must be positive");
  }
  // Non-blocking: a connection that goes away between poll() and accept4()
  // must not block the desk.
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un address = UnixSocketAddress(path);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on '", path, "': ", error));
  }
  const int stop_fd = eventfd(0, EFD_CLOEXEC);
  if (stop_fd < 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("identity socket: eventfd: ", error));
  }
  return std::unique_ptr<PeerCredentialDesk>(new PeerCredentialDesk(fd, stop_fd, options));
}

void PeerCredentialDesk::Serve(SessionOpener opener) {
  opener_ = std::move(opener);
  thread_ = std::thread([this] { Run(); });
}

PeerCredentialDesk::PeerCredentialDesk(int listen_fd, int stop_fd, const PeerDeskOptions& options)
    : listen_fd_(listen_fd),
      stop_fd_(stop_fd),
      options_(options),
      tables_(std::make_unique<Tables>(options)) {}

PeerCredentialDesk::~PeerCredentialDesk() {
  Stop();
  close(stop_fd_);
}

void PeerCredentialDesk::Stop() {
  if (listen_fd_ < 0) return;
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof(one)) < 0) {
    // Cannot happen for an eventfd far from overflow; the join below would hang.
    spdlog::error("identity socket: cannot stop its thread: {}", std::strerror(errno));
  }
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  listen_fd_ = -1;
}

void PeerCredentialDesk::Run() {
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  absl::Time paused_until = absl::InfinitePast();
  // Connections answered (or given up on) leave the list.
  auto drop_finished = [&] {
    connections.erase(std::remove_if(connections.begin(), connections.end(),
                                     [](const Connection& c) { return !c.socket.valid(); }),
                      connections.end());
    pending_.store(connections.size(), std::memory_order_relaxed);
  };
  while (true) {
    const absl::Time now = absl::Now();
    // A client that did not send its whole request in time is told to come
    // back. What came while this thread was busy elsewhere (sealing memory,
    // another's request) is read first: it came in time.
    for (Connection& c : connections) {
      if (c.deadline > now) continue;
      if (!ReadFrom(c)) {
        TellBusy(c.socket.get(),
                 c.Heard() ? "its request did not come whole in time" : "it sent nothing");
      }
      c.socket.reset();
    }
    drop_finished();
    const bool room = connections.size() < options_.max_pending_connections;
    const bool listening = room && now >= paused_until;

    absl::Time wake = absl::InfiniteFuture();
    for (const Connection& c : connections) wake = std::min(wake, c.deadline);
    if (room && !listening) wake = std::min(wake, paused_until);
    // Expired tickets close their descriptors on time, not at the next request.
    if (std::optional<absl::Time> expiry = tables_->Expire()) wake = std::min(wake, *expiry);
    int timeout_ms = -1;
    if (wake != absl::InfiniteFuture()) {
      const absl::Duration wait = std::max(absl::ZeroDuration(), wake - now);
      timeout_ms = static_cast<int>(std::min<int64_t>(
          absl::ToInt64Milliseconds(absl::Ceil(wait, absl::Milliseconds(1))), INT_MAX));
    }

    fds.clear();
    fds.push_back({stop_fd_, POLLIN, 0});
    // When full or paused the listener is not polled at all (fd -1 is
    // ignored): a readable listener we do not accept from would spin.
    fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});
    for (const Connection& c : connections) fds.push_back({c.socket.get(), POLLIN, 0});
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::warn("identity socket: poll failed: {}", std::strerror(errno));
      absl::SleepFor(kAcceptPause);
      continue;
    }
    if (fds[0].revents != 0) return;

    for (size_t i = 0; i < connections.size(); ++i) {
      if (fds[i + 2].revents == 0 || !ReadFrom(connections[i])) continue;
      connections[i].socket.reset();
    }
    // Before accepting: what was answered counts against no one's places.
    drop_finished();
    if (listening && fds[1].revents != 0 && !AcceptSome(connections)) {
      paused_until = absl::Now() + kAcceptPause;
    }
    pending_.store(connections.size(), std::memory_order_relaxed);
  }
}

bool PeerCredentialDesk::AcceptSome(std::vector<Connection>& connections) {
  for (int i = 0; i < kAcceptsPerRound && connections.size() < options_.max_pending_connections;
       ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) return true;
      if (error == EINTR || error == ECONNABORTED || error == EPROTO || error == EPERM) continue;
      // Out of descriptors or kernel memory (EMFILE, ENFILE, ENOBUFS, ENOMEM)
      // or worse: the connection stays in the backlog and the listener stays
      // readable, so polling it again now would spin. Pause instead.
      if (!accept_failing_) {
        spdlog::warn("identity socket: cannot accept connections ({}); retrying every {}",
                     std::strerror(error), absl::FormatDuration(kAcceptPause));
      }
      accept_failing_ = true;
      return false;
    }
    if (accept_failing_) {
      spdlog::info("identity socket: accepting connections again");
      accept_failing_ = false;
    }
    UniqueFd socket(fd, UniqueFd::Origin::kConnection);
    ucred credentials{};
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) continue;
    PeerCredentials peer{credentials.pid, credentials.uid, credentials.gid};
    const uid_t counted_uid = UidOwners::HostCountedAs(credentials.uid);
    if (counted_uid != credentials.uid) peer.range_owner = counted_uid;
    const uid_t tenant = options_.TenantOf(peer);
    const size_t of_tenant = std::count_if(
        connections.begin(), connections.end(),
        [&](const Connection& c) { return options_.TenantOf(c.peer) == tenant; });
    if (of_tenant >= options_.max_pending_connections_per_uid) {
      TellBusy(fd, options_.as_one_tenant
                       ? absl::StrCat("acld is serving ", of_tenant,
                                      " identity requests of this socket's processes already")
                       : absl::StrCat("acld is serving ", of_tenant,
                                      " identity requests of uid ", counted_uid, " already"));
      continue;
    }
    // Read only for a connection that is served (it reads /proc).
    peer.start_ticks = ProcessStartTicks(credentials.pid).value_or(0);
    Connection connection;
    connection.socket = std::move(socket);
    connection.peer = std::move(peer);
    const absl::Time accepted = absl::Now();
    connection.deadline = accepted + std::min(options_.request_timeout, kRequestTimeout);
    connections.push_back(std::move(connection));
    // A client sends its request as it connects, so it is usually here
    // already: answered now, a newcomer does not wait for another round of
    // poll() (its session's opening is on a new process's path).
    if (ReadFrom(connections.back())) connections.pop_back();
  }
  return true;
}

void PeerCredentialDesk::TellBusy(int fd, const std::string& why) {
  const std::string busy = absl::StrCat(kPeerBusy, why, "\n");
  // Into an empty socket buffer: it fits; a client that left loses nothing.
  (void)send(fd, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  busy_refusals_.fetch_add(1, std::memory_order_relaxed);
}

bool PeerCredentialDesk::ReadFrom(Connection& c) {
  char buffer[kMaxLine];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerRead)];
  // Never more than the line may still hold: what follows the line is not read.
  iovec part{buffer, kMaxLine - c.line.size()};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(c.socket.get(), &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  TakeCarried(message, [&c](int fd) {
    UniqueFd received(fd, UniqueFd::Origin::kReceived);  // closed here unless kept
    const size_t index = c.fds_received++;
    if (index == 0) c.memory = std::move(received);
    if (index == 1) c.doorbell = std::move(received);
  });
  if ((message.msg_flags & MSG_CTRUNC) != 0) c.truncated = true;
  if (n == 0) return true;  // gone before finishing its line
  c.line.append(buffer, static_cast<size_t>(n));
  const size_t end = c.line.find('\n');
  if (end == std::string::npos) {
    if (c.line.size() < kMaxLine) return false;
    c.line = "?";  // answered as not understood
  } else {
    c.line.resize(end);
  }
  Respond(c);
  return true;
}

void PeerCredentialDesk::Respond(Connection& c) {
  std::string answer;
  std::string token;
  std::string ticket;
  std::function<void(UniqueFd)> attach;
  if (c.line == kPeerTokenRequest) {
    std::optional<std::string> id = NewId();
    if (c.fds_received > 0 || c.truncated) {
      answer = Refusal("a token request carries no file descriptor");
    } else if (!id.has_value()) {
      answer = Refusal("no randomness for a token");
    } else {
      token = *id;
      tables_->AddToken(token, c.peer);
      answer = token;
    }
  } else if (absl::StartsWith(c.line, kPeerMemoryRequest)) {
    answer = IssueTicket(c, c.line.substr(std::strlen(kPeerMemoryRequest)), &ticket);
  } else if (absl::StartsWith(c.line, kPeerSessionRequest)) {
    answer = OpenSession(c, c.line.substr(std::strlen(kPeerSessionRequest)), &attach);
  } else {
    answer = Refusal(
        "request not understood (expected \"T\", \"M <bytes>\" or \"S <bytes> <version>\")");
  }
  answer.push_back('\n');
  // The answer fits an empty socket buffer; a client that made it not fit
  // (or left) loses what was issued to it.
  const ssize_t sent =
      send(c.socket.get(), answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  // An open session takes its connection whatever became of the answer: a
  // client that left is seen leaving there, and its session ends.
  if (attach) {
    RefuseDescriptors(c.socket.get());  // a session's connection carries none
    attach(std::move(c.socket));
  }
  if (sent == static_cast<ssize_t>(answer.size())) return;
  if (!token.empty()) tables_->RevokeToken(token);
  if (!ticket.empty()) tables_->Revoke(ticket);
}

absl::StatusOr<ReceivedMemory> PeerCredentialDesk::TakeMemory(Connection& c,
                                                              const std::string& bytes) {
  uint64_t size = 0;
  if (!absl::SimpleAtoi(bytes, &size)) return absl::InvalidArgumentError("the size is not a number");
  if (c.truncated || c.fds_received < 1 || c.fds_received > 2 || !c.memory.valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a memfd and at most a doorbell, received ", c.truncated ? "more than " : "",
        c.fds_received, " file descriptors"));
  }
  ACL_RETURN_IF_ERROR(CheckSealedMemory(c.memory.get(), size));
  if (c.doorbell.valid()) ACL_RETURN_IF_ERROR(CheckDoorbell(c.doorbell.get()));
  return ReceivedMemory{std::move(c.memory), size, std::move(c.doorbell),
                        absl::StrCat("desk ", serial_, " uid ", c.peer.counted_uid()),
                        c.peer.pid, c.peer.start_ticks};
}

std::string PeerCredentialDesk::IssueTicket(Connection& c, const std::string& bytes,
                                            std::string* ticket) {
  absl::StatusOr<ReceivedMemory> memory = TakeMemory(c, bytes);
  if (!memory.ok()) return Refusal(memory.status().message());
  std::optional<std::string> id = NewId();
  if (!id.has_value()) return Refusal("no randomness for a ticket");
  absl::Status added = tables_->AddTicket(*id, IssuedMemory{*std::move(memory), c.peer});
  if (!added.ok()) return Refusal(added.message());
  *ticket = *id;
  return *id;
}

std::string PeerCredentialDesk::OpenSession(Connection& c, const std::string& request,
                                            std::function<void(UniqueFd)>* attach) {
  const std::vector<std::string> words = absl::StrSplit(request, ' ');
  uint32_t version = 0;
  if (words.size() != 2 || !absl::SimpleAtoi(words[1], &version)) {
    return Refusal("expected \"S <bytes> <protocol version>\"");
  }
  absl::StatusOr<ReceivedMemory> channel = TakeMemory(c, words[0]);
  if (!channel.ok()) return Refusal(channel.status().message());
  if (!channel->doorbell.valid()) return Refusal("a session channel comes with its doorbell");
  if (!opener_) return Refusal("sessions open on the runtime socket here");
  absl::StatusOr<std::function<void(UniqueFd)>> opened =
      opener_(c.peer, version, *std::move(channel));
  // The code first, so that the client reports what its application expects
  // (ACL_ERROR_RT_OVER_LIMIT over a cap).
  if (!opened.ok()) {
    return Refusal(absl::StrCat(AclCodeOf(opened.status()), " ", opened.status().message()));
  }
  *attach = *std::move(opened);
  return kPeerSessionOpened;
}

std::optional<PeerCredentials> PeerCredentialDesk::Redeem(const std::string& token,
                                                          std::optional<uid_t> uid) {
  return tables_->TakeToken(token, uid);
}

absl::StatusOr<ReceivedMemory> PeerCredentialDesk::RedeemMemory(const std::string& ticket,
                                                                pid_t pid, uid_t uid) {
  return tables_->TakeTicket(ticket, pid, uid);
}

size_t PeerCredentialDesk::pending_connections() const {
  return pending_.load(std::memory_order_relaxed);
}

size_t PeerCredentialDesk::outstanding_tokens() const { return tables_->tokens(); }

size_t PeerCredentialDesk::outstanding_memory_tickets() const { return tables_->tickets(); }

}  // namespace acld::server
