#include "client/peer_token.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/busy_retry.h"
#include "client/spoken_protocol.h"
#include "proto/acl/peer_socket.h"
#include "proto/acl/protocol.h"

namespace acl_client {
namespace {

// Sends `request` (with `fds`, at most two, attached) to the identity socket
// at `path` and returns the answer line and the connection (the caller owns
// it). "E <reason>" answers become errors (the connection closed); an "E busy"
// one is Unavailable with a message starting "busy".
absl::StatusOr<std::pair<std::string, int>> AskOnce(const std::string& path,
                                                    const std::string& request,
                                                    const std::vector<int>& fds,
                                                    absl::Time deadline) {
  const absl::Duration timeout = std::max(absl::Milliseconds(1), deadline - absl::Now());
  const int socket_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot create a socket: ", std::strerror(errno)));
  }
  // Bounds connect() too, which waits while the daemon's backlog is full.
  const timeval limit = absl::ToTimeval(timeout);
  setsockopt(socket_fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const std::string error = std::strerror(errno);
    close(socket_fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", path, ": ", error));
  }

  iovec part{const_cast<char*>(request.data()), request.size()};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(header), fds.data(), fds.size() * sizeof(int));
  }
  // The request is a few bytes into an empty socket: one sendmsg sends it all.
  // A desk that answered "busy" before the request went has closed the
  // connection (EPIPE, ECONNRESET): its answer is still there to read.
  std::string send_error;
  if (sendmsg(socket_fd, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    const int error = errno;
    send_error = absl::StrCat("cannot send to ", path, ": ", std::strerror(error));
    if (error != EPIPE && error != ECONNRESET) {
      close(socket_fd);
      return absl::UnavailableError(send_error);
    }
  }

  // Read a byte at a time: nothing after the answer's line may be consumed.
  std::string answer;
  while (answer.find('\n') == std::string::npos && answer.size() < 4096) {
    pollfd readable{socket_fd, POLLIN, 0};
    const int64_t wait_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (wait_ms <= 0) break;
    const int ready = poll(&readable, 1, static_cast<int>(wait_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char byte;
    const ssize_t n = read(socket_fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.push_back(byte);
  }
  if (answer.find('\n') == std::string::npos) {
    close(socket_fd);
    return absl::UnavailableError(
        !send_error.empty() ? send_error : absl::StrCat("no answer from ", path));
  }
  answer.resize(answer.find('\n'));
  absl::string_view reason = answer;
  if (absl::StartsWith(reason, acld::kPeerBusy)) {
    close(socket_fd);
    return absl::UnavailableError(absl::StrCat("busy: ", path, ": ", reason));
  }
  if (absl::ConsumePrefix(&reason, acld::kPeerRefusal)) {
    close(socket_fd);
    return absl::FailedPreconditionError(absl::StrCat(path, " refused: ", reason));
  }
  if (!send_error.empty()) {  // an answer to a request it never got
    close(socket_fd);
    return absl::UnavailableError(send_error);
  }
  return std::make_pair(std::move(answer), socket_fd);
}

// AskOnce, asked again a moment later while the desk is busy with this
// user's other connections (many processes of one user starting at once),
// until `timeout` has passed.
absl::StatusOr<std::pair<std::string, int>> Ask(const std::string& path,
                                                const std::string& request,
                                                const std::vector<int>& fds,
                                                absl::Duration timeout) {
  return RetryWhileBusy<std::pair<std::string, int>>(
      timeout,
      [](const absl::Status& status) { return absl::StartsWith(status.message(), "busy"); },
      [&](absl::Time deadline) { return AskOnce(path, request, fds, deadline); });
}

// Ask, for a one-line answer: the connection closes.
absl::StatusOr<std::string> Exchange(const std::string& path, const std::string& request,
                                     const std::vector<int>& fds, absl::Duration timeout) {
  absl::StatusOr<std::pair<std::string, int>> answered = Ask(path, request, fds, timeout);
  if (!answered.ok()) return answered.status();
  close(answered->second);
  return std::move(answered->first);
}

}  // namespace

absl::StatusOr<std::string> FetchPeerToken(const std::string& path, absl::Duration timeout) {
  absl::StatusOr<std::string> token =
      Exchange(path, absl::StrCat(acld::kPeerTokenRequest, "\n"), {}, timeout);
  if (!token.ok()) {
    return absl::UnavailableError(
        absl::StrCat("no identity token from ", path, ": ", token.status().message()));
  }
  return token;
}

absl::StatusOr<std::string> SendSharedMemory(const std::string& path, int fd, uint64_t size,
                                             absl::Duration timeout, int doorbell) {
  if (fd < 0) return absl::InvalidArgumentError("no file descriptor to send");
  std::vector<int> fds{fd};
  if (doorbell >= 0) fds.push_back(doorbell);
  return Exchange(path, absl::StrCat(acld::kPeerMemoryRequest, size, "\n"), fds, timeout);
}

absl::StatusOr<int> OpenSessionOnIdentitySocket(const std::string& path, int channel,
                                                uint64_t size, int doorbell,
                                                absl::Duration timeout) {
  absl::StatusOr<std::pair<std::string, int>> answered =
      Ask(path, absl::StrCat(acld::kPeerSessionRequest, size, " ", kSpokenProtocolVersion, "\n"),
          {channel, doorbell}, timeout);
  if (!answered.ok()) return answered.status();
  if (answered->first != acld::kPeerSessionOpened) {
    close(answered->second);
    return absl::UnavailableError(
        absl::StrCat(path, " answered \"", answered->first, "\" to a session request"));
  }
  return answered->second;
}

}  // namespace acl_client
