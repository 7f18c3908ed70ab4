// Test helpers: what a hostile client sends along to make a close wait
// (client_descriptors.h). Shared by the unit tests here and the multi-user
// integration tests in tests/.
#ifndef ACLD_DAEMON_SERVER_DESCRIPTOR_TRAPS_H_
#define ACLD_DAEMON_SERVER_DESCRIPTOR_TRAPS_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace acld::server {

// A loopback TCP connection whose peer never reads, its send buffer full,
// set to linger for `seconds`: its last close waits that long (a plain
// close() or recv() of a Unix socket it was sent in did).
class LingeringSocket {
 public:
  explicit LingeringSocket(int seconds = 60) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listener_, 1) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return;
    std::vector<char> bytes(1 << 16, 'x');
    for (int i = 0; i < 4096; ++i) {  // bounded: a few MiB fill any buffer
      if (send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) break;
    }
    const linger long_linger{1, seconds};
    armed_ = setsockopt(fd_, SOL_SOCKET, SO_LINGER, &long_linger, sizeof(long_linger)) == 0;
  }
  ~LingeringSocket() {
    if (fd_ >= 0) close(fd_);
    close(listener_);  // the accepted end is never taken: the peer never reads
  }
  LingeringSocket(const LingeringSocket&) = delete;
  LingeringSocket& operator=(const LingeringSocket&) = delete;

  bool armed() const { return armed_; }
  // The caller's copy goes: whoever holds the one sent along closes it last.
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int listener_ = -1;
  int fd_ = -1;
  bool armed_ = false;
};

// Sends `fds` (one SCM_RIGHTS message, at most 253) with `bytes` on
// `socket`; returns as sendmsg does.
inline ssize_t SendDescriptors(int socket, const std::vector<int>& fds,
                               const std::string& bytes = "x") {
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  std::string data = bytes;
  iovec part{data.data(), data.size()};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  return sendmsg(socket, &message, MSG_NOSIGNAL);
}

inline ssize_t SendDescriptor(int socket, int fd, const std::string& bytes = "x") {
  return SendDescriptors(socket, {fd}, bytes);
}

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_DESCRIPTOR_TRAPS_H_
