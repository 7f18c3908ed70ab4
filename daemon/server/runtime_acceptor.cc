#include "daemon/server/runtime_acceptor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon/core/process_clock.h"
#include "daemon/server/client_descriptors.h"
#include "daemon/server/uid_owners.h"
#include "spdlog/spdlog.h"

namespace acld::server {

absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> RuntimeAcceptor::Start(
    int listen_fd, std::string name, std::function<void(int)> hand_off, absl::Duration pause,
    size_t max_per_uid, FrameGate* gate, Counting counting) {
  absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> acceptor =
      Create(listen_fd, std::move(name), std::move(hand_off), pause, max_per_uid, gate, counting);
  if (acceptor.ok()) (*acceptor)->StartAccepting();
  return acceptor;
}

absl::StatusOr<std::unique_ptr<RuntimeAcceptor>> RuntimeAcceptor::Create(
    int listen_fd, std::string name, std::function<void(int)> hand_off, absl::Duration pause,
    size_t max_per_uid, FrameGate* gate, Counting counting) {
  const int flags = fcntl(listen_fd, F_GETFL);
  if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    const std::string error = std::strerror(errno);
    close(listen_fd);
    return absl::InternalError(absl::StrCat("cannot make ", name, " non-blocking: ", error));
  }
  // Its connections carry requests, never descriptors (client_descriptors.h);
  // accepted sockets inherit the refusal.
  RefuseDescriptors(listen_fd);
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    const std::string error = std::strerror(errno);
    close(listen_fd);
    return absl::ResourceExhaustedError(absl::StrCat("eventfd: ", error));
  }
  return std::unique_ptr<RuntimeAcceptor>(new RuntimeAcceptor(
      listen_fd, stop_fd, std::move(name), std::move(hand_off), pause, max_per_uid, gate,
      counting));
}

void RuntimeAcceptor::StartAccepting() {
  if (thread_.joinable() || listen_fd_ < 0) return;
  thread_ = std::thread([this] { Loop(); });
}

RuntimeAcceptor::RuntimeAcceptor(int listen_fd, int stop_fd, std::string name,
                                 std::function<void(int)> hand_off, absl::Duration pause,
                                 size_t max_per_uid, FrameGate* gate, Counting counting)
    : listen_fd_(listen_fd),
      stop_fd_(stop_fd),
      name_(std::move(name)),
      hand_off_(std::move(hand_off)),
      pause_(pause),
      gate_(gate),
      max_per_uid_(max_per_uid),
      counting_(counting),
      over_cap_log_(name_, LogLimiter::Options{/*per_second=*/0.1, /*burst=*/3}),
      pause_log_(name_, LogLimiter::Options{/*per_second=*/0.1, /*burst=*/3}) {}

RuntimeAcceptor::~RuntimeAcceptor() {
  Stop();
  for (int end : spare_ends_) {
    if (end >= 0) close(end);
  }
  close(stop_fd_);
}

void RuntimeAcceptor::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

bool RuntimeAcceptor::WaitUnlessStopped(absl::Duration timeout) {
  pollfd stop{stop_fd_, POLLIN, 0};
  const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
  return poll(&stop, 1, ms) == 0 || (stop.revents == 0);
}

void RuntimeAcceptor::Loop() {
  uint64_t failed_in_burst =
      0;  // accepts that failed for lack of resources, since the last success
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("{}: poll failed: {}; accepting stops", name_, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    // Take what is queued (a bounded batch, then look at the stop signal again).
    for (int batch = 0; batch < 256; ++batch) {
      // Through the gate a connection needs two more descriptors: made
      // first, so that a daemon out of them leaves the connection queued,
      // as a failed accept does, rather than accepting and dropping it.
      if (gate_ != nullptr && spare_ends_[0] < 0 && !FrameGate::MakeEnds(spare_ends_)) {
        spare_ends_[0] = spare_ends_[1] = -1;
        if (!PauseAfter(errno, failed_in_burst)) return;
        break;
      }
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        if (failed_in_burst > 0) {
          spdlog::info("{}: accepting again ({} accepts failed for lack of descriptors or memory)",
                       name_, failed_in_burst);
          failed_in_burst = 0;
        }
        accepted_.fetch_add(1, std::memory_order_relaxed);
        Connection connection = PeerOf(fd);
        // Before the gate takes it: a refused connection costs acld nothing more.
        if (!HasRoomFor(connection.counted_uid)) {
          CloseConnection(fd);
          refused_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (gate_ != nullptr) {
          connection.fd = gate_->Interpose(fd, connection.counted_uid, this, spare_ends_);
          spare_ends_[0] = spare_ends_[1] = -1;
          if (connection.fd < 0) continue;  // the gate stopped: dropped
          struct stat info {};
          connection.inode = fstat(connection.fd, &info) == 0 ? info.st_ino : 0;
        }
        Remember(connection);
        hand_off_(connection.fd);
        continue;
      }
      const int error = errno;
      if (error == EAGAIN || error == EWOULDBLOCK) break;
      if (error == EINTR || error == ECONNABORTED || error == EPROTO) continue;
      // EMFILE, ENFILE, ENOMEM, ENOBUFS (or anything unexpected): the
      // connection stays queued, so retrying at once would spin. Pause.
      if (!PauseAfter(error, failed_in_burst)) return;
      break;
    }
  }
}

bool RuntimeAcceptor::PauseAfter(int error, uint64_t& failed_in_burst) {
  // Once per burst, and a few a minute at most: closed connections free
  // their descriptors a moment later (three each through the gate), so a
  // long backlog makes burst after burst.
  if (failed_in_burst++ == 0) {
    pause_log_.Warn(
        "cannot accept a connection: {}; pausing accepts for {} at a time until it succeeds "
        "again (logged once per burst)",
        std::strerror(error), absl::FormatDuration(pause_));
  }
  pauses_.fetch_add(1, std::memory_order_relaxed);
  return WaitUnlessStopped(pause_);
}

bool RuntimeAcceptor::StillOpen(const Connection& connection) {
  struct stat info {};
  return fstat(connection.fd, &info) == 0 && S_ISSOCK(info.st_mode) &&
         info.st_ino == connection.inode;
}

RuntimeAcceptor::Connection RuntimeAcceptor::PeerOf(int fd) const {
  Connection connection{fd, 0, 0, static_cast<uid_t>(-1), 0, static_cast<uid_t>(-1)};
  struct stat info {};
  if (fstat(fd, &info) == 0) connection.inode = info.st_ino;
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    connection.pid = credentials.pid;
    connection.uid = credentials.uid;
    connection.counted_uid =
        counting_ == Counting::kAsOneTenant ? 0 : UidOwners::HostCountedAs(credentials.uid);
    connection.start_ticks = ProcessStartTicks(credentials.pid).value_or(0);
  }
  return connection;
}

bool RuntimeAcceptor::HasRoomFor(uid_t counted_uid) {
  absl::MutexLock lock(&mu_);
  if (max_per_uid_ == 0) return true;
  auto count = per_uid_.find(counted_uid);
  if (count == per_uid_.end() || count->second.open < max_per_uid_) return true;
  // Only its own connections are looked at again (at most max_per_uid).
  const absl::Time now = absl::Now();
  if (now - count->second.counted >= kRecountEvery) {
    ForgetClosedLocked(counted_uid);
    count = per_uid_.find(counted_uid);
    if (count == per_uid_.end()) return true;
    count->second.counted = now;
  }
  if (count->second.open < max_per_uid_) return true;
  over_cap_log_.Warn(
      "{} {} connections, the most one tenant may (--max_connections_per_uid); its next ones "
      "are closed at once",
      counting_ == Counting::kAsOneTenant ? std::string("its processes hold")
                                          : absl::StrCat("uid ", counted_uid, " holds"),
      max_per_uid_);
  return false;
}

void RuntimeAcceptor::Remember(const Connection& connection) {
  if (connection.inode == 0) return;  // not a socket fstat can see: not kept
  absl::MutexLock lock(&mu_);
  // Forget connections gRPC closed since (a bounded list: pruned as it doubles).
  if (connections_.size() >= 64 && connections_.size() == connections_.capacity()) {
    ForgetClosedLocked();
  }
  connections_.push_back(connection);
  ++per_uid_[connection.counted_uid].open;
}

void RuntimeAcceptor::ForgetClosedLocked(std::optional<uid_t> counted_uid) {
  connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                    [&](const Connection& c) {
                                      if (counted_uid.has_value() && c.counted_uid != *counted_uid) {
                                        return false;
                                      }
                                      if (StillOpen(c)) return false;
                                      auto count = per_uid_.find(c.counted_uid);
                                      if (count != per_uid_.end() && --count->second.open == 0) {
                                        per_uid_.erase(count);
                                      }
                                      return true;
                                    }),
                     connections_.end());
}

size_t RuntimeAcceptor::OpenConnections() {
  absl::MutexLock lock(&mu_);
  ForgetClosedLocked();
  return connections_.size();
}

bool RuntimeAcceptor::Holds(int fd) { return PeerUid(fd).has_value(); }

std::optional<uid_t> RuntimeAcceptor::PeerUid(int fd) {
  absl::MutexLock lock(&mu_);
  for (const Connection& connection : connections_) {
    if (connection.fd == fd && StillOpen(connection)) return connection.uid;
  }
  return std::nullopt;
}

size_t RuntimeAcceptor::ShutdownConnections(
    const std::function<bool(const PeerCredentials& peer)>& which) {
  size_t shut = 0;
  absl::MutexLock lock(&mu_);
  ForgetClosedLocked();
  for (const Connection& connection : connections_) {
    if (which(PeerCredentials{connection.pid, connection.uid, 0, connection.start_ticks})) {
      shutdown(connection.fd, SHUT_RDWR);  // gRPC still owns and closes the descriptor
      ++shut;
    }
  }
  return shut;
}

}  // namespace acld::server
