#include "client/peer_token.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace acl_client {

std::string PeerSocketPath(const std::string& runtime_socket) { return runtime_socket + ".peer"; }

absl::StatusOr<std::string> FetchPeerToken(const std::string& path, absl::Duration timeout) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const std::string error = std::strerror(errno);
    if (fd >= 0) close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", path, ": ", error));
  }
  std::string token;
  char buffer[64];
  const absl::Time deadline = absl::Now() + timeout;
  while (token.find('\n') == std::string::npos) {
    pollfd readable{fd, POLLIN, 0};
    const int wait_ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (wait_ms <= 0 || poll(&readable, 1, wait_ms) <= 0) break;
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    token.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (token.find('\n') == std::string::npos) {
    return absl::UnavailableError(absl::StrCat("no identity token from ", path));
  }
  token.resize(token.find('\n'));
  return token;
}

}  // namespace acl_client
