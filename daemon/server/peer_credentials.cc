#include "daemon/server/peer_credentials.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace acld::server {
namespace {

constexpr absl::Duration kTokenLifetime = absl::Seconds(30);
constexpr size_t kTokenBytes = 16;

sockaddr_un Address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  return address;
}

std::string NewToken() {
  static thread_local std::random_device device;
  std::string token;
  for (size_t i = 0; i < kTokenBytes; ++i) {
    absl::StrAppendFormat(&token, "%02x", static_cast<unsigned>(device() & 0xff));
  }
  return token;
}

}  // namespace

std::string PeerSocketPath(const std::string& runtime_socket) { return runtime_socket + ".peer"; }

absl::StatusOr<std::unique_ptr<PeerCredentialDesk>> PeerCredentialDesk::Start(
    const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = Address(path);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, 128) != 0) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on '", path, "': ", error));
  }
  const int stop_fd = eventfd(0, EFD_CLOEXEC);
  std::unique_ptr<PeerCredentialDesk> desk(new PeerCredentialDesk(fd, stop_fd));
  desk->thread_ = std::thread([raw = desk.get()] { raw->Serve(); });
  return desk;
}

PeerCredentialDesk::PeerCredentialDesk(int listen_fd, int stop_fd)
    : listen_fd_(listen_fd), stop_fd_(stop_fd) {}

PeerCredentialDesk::~PeerCredentialDesk() {
  const uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof(one)) < 0) {
    // The thread also stops when the listening socket closes below.
  }
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(stop_fd_);
}

void PeerCredentialDesk::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ucred credentials{};
    socklen_t length = sizeof(credentials);
    if (getsockopt(client, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
      const std::string token = NewToken();
      {
        absl::MutexLock lock(&mu_);
        Expire();
        tokens_[token] = Issued{{credentials.pid, credentials.uid, credentials.gid},
                                absl::Now() + kTokenLifetime};
      }
      const std::string line = token + "\n";
      // A client that does not read its token simply never uses it.
      (void)!send(client, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(client);
  }
}

void PeerCredentialDesk::Expire() {
  const absl::Time now = absl::Now();
  for (auto it = tokens_.begin(); it != tokens_.end();) {
    it = it->second.expires < now ? tokens_.erase(it) : std::next(it);
  }
}

std::optional<PeerCredentials> PeerCredentialDesk::Redeem(const std::string& token) {
  absl::MutexLock lock(&mu_);
  Expire();
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return std::nullopt;
  PeerCredentials credentials = it->second.credentials;
  tokens_.erase(it);
  return credentials;
}

}  // namespace acld::server
