#include "daemon/server/client_descriptors.h"

#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/server/log_limiter.h"

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83  // Linux 6.16 (asm-generic/socket.h); Debian 12's headers predate it
#endif
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04  // Linux 6.5 (linux/socket.h)
#endif

namespace acld::server {
namespace {

// What one message can carry (the kernel's SCM_MAX_FD): with room for all of
// them, the kernel never drops a descriptor on acld's thread.
constexpr size_t kMaxFdsPerMessage = 253;
// Room for every control message a read can bring: a received socket's
// options are its sender's, who may have asked for credentials, a security
// label and a pidfd beside the descriptors. Without room for all, the kernel
// drops the descriptors that did not fit, on the reading thread.
constexpr size_t kControlBytes = 16 << 10;
// A socket passed inside a socket inside...: the kernel refuses to nest
// in-flight sockets deeper than 4, so this bounds the emptying.
constexpr int kMaxDepth = 6;
// Reads that empty a shut socket: its queue cannot grow any more, and is
// bounded by its sender's buffer; past these, the rest goes with the close.
constexpr int kMaxDrainReads = 1024;

void CloseReceivedAt(int fd, int depth);

ssize_t ReceiveAt(int socket, void* buffer, size_t size, int flags, int depth) {
  static_assert(kControlBytes >= CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage));
  alignas(cmsghdr) char control[kControlBytes];
  iovec part{buffer, size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(socket, &message, flags | MSG_CMSG_CLOEXEC);
  const int error = errno;
  if (n >= 0) {
    TakeCarried(message, [depth](int fd) { CloseReceivedAt(fd, depth + 1); });
    // A pidfd the sender's options asked for: acld's to close (never waits).
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_PIDFD ||
          header->cmsg_len < CMSG_LEN(sizeof(int))) {
        continue;
      }
      int pidfd;
      std::memcpy(&pidfd, CMSG_DATA(header), sizeof(pidfd));
      close(pidfd);
    }
  }
  errno = error;
  return n;
}

// Shuts `socket` and takes what is still queued in it, closing every
// descriptor that came along.
void Empty(int socket, int depth) {
  shutdown(socket, SHUT_RDWR);  // nothing more can arrive
  char bytes[16 << 10];
  for (int i = 0; i < kMaxDrainReads; ++i) {
    if (ReceiveAt(socket, bytes, sizeof(bytes), MSG_DONTWAIT, depth) <= 0) break;
  }
}

// Files whose close never waits on anyone: what our clients hand over, a
// memfd (a regular file of tmpfs or hugetlbfs) and an eventfd. Nothing else:
// a pipe's or FIFO's last close takes the pipe's lock, which its sender can
// hold for ever (a splice() from it into a socket nobody reads); other
// anonymous inodes (epoll, io_uring, userfaultfd...) have locks of their own;
// a device node's close may wait for its output to drain (/dev is tmpfs too).
// (fstatfs and fstat of a file on another user's FUSE mount are answered by
// the kernel, not by that mount's server, unless it allows others in.)
bool ClosesAtOnce(int fd, mode_t mode) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case TMPFS_MAGIC:
    case HUGETLBFS_MAGIC:
      return S_ISREG(mode);
    case ANON_INODE_FS_MAGIC: {
      // Which anonymous inode it is shows only in its name.
      char link[64] = {};
      const std::string path = "/proc/self/fd/" + std::to_string(fd);
      const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
      return n > 0 && std::strcmp(link, "anon_inode:[eventfd]") == 0;
    }
    default:
      return false;
  }
}

// Threads that close received descriptors whose close may wait (a file on a
// client's FUSE mount, a pipe whose lock its sender holds): if one waits
// forever, only it does. A new one starts while none is free, up to
// kMaxSlowCloserThreads: one close its sender holds must not keep every
// later one waiting (and, past kMaxSlowCloses waiting, open).
class SlowCloser {
 public:
  void Add(int fd) {
    {
      absl::MutexLock lock(&mu_);
      if (queue_.size() < kMaxSlowCloses) {
        queue_.push_back(fd);
        // Idle threads take one each (woken ones count as idle until they
        // took it): more waiting than that wants another thread.
        if (queue_.size() > static_cast<size_t>(idle_) && threads_ < kMaxSlowCloserThreads) {
          ++threads_;
          std::thread([this] { Run(); }).detach();
        }
        return;
      }
      ++kept_open_;
    }
    // Kept open: closing it here could hold a thread that serves everyone.
    log_.Warn("{} received descriptors wait to be closed, the most acld lets wait ({} closes "
              "hang: files of a client's FUSE mount that does not answer, or pipes their "
              "sender holds); this one (fd {}) is kept open",
              kMaxSlowCloses, kMaxSlowCloserThreads, fd);
  }

  SlowCloses Counts() {
    absl::MutexLock lock(&mu_);
    return SlowCloses{queue_.size() + closing_, closed_, kept_open_};
  }

 private:
  void Run() {
    while (true) {
      int fd;
      {
        absl::MutexLock lock(&mu_);
        ++idle_;
        mu_.Await(absl::Condition(
            +[](std::deque<int>* queue) { return !queue->empty(); }, &queue_));
        --idle_;
        fd = queue_.front();
        queue_.pop_front();
        ++closing_;
      }
      close(fd);
      absl::MutexLock lock(&mu_);
      --closing_;
      ++closed_;
    }
  }

  absl::Mutex mu_;
  std::deque<int> queue_ ABSL_GUARDED_BY(mu_);
  int threads_ ABSL_GUARDED_BY(mu_) = 0;
  int idle_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting for a descriptor
  // Taken from the queue and not closed yet: a close that hangs waits here,
  // and counts as waiting.
  size_t closing_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t closed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t kept_open_ ABSL_GUARDED_BY(mu_) = 0;
  RateLimitedLog log_{"received descriptors", LogLimiter::Options{/*per_second=*/0.1, /*burst=*/3}};
};

SlowCloser& TheSlowCloser() {
  static SlowCloser* closer = new SlowCloser;  // its threads outlive every other object
  return *closer;
}

void CloseReceivedAt(int fd, int depth) {
  struct stat info {};
  const bool known = fstat(fd, &info) == 0;
  if (known && S_ISSOCK(info.st_mode)) {
    int domain = 0;
    int listening = 0;
    socklen_t length = sizeof(domain);
    const bool unix_socket =
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 && domain == AF_UNIX;
    length = sizeof(listening);
    if (unix_socket &&
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 && listening) {
      // Its waiting connections, and what they carry, go with its close;
      // taking them would mean an accept() on a socket its sender controls
      // (and may keep blocking). Closed where only that close waits.
      TheSlowCloser().Add(fd);
      return;
    }
    if (unix_socket) {
      // What it carries would be released by its close, on this thread.
      if (depth < kMaxDepth) Empty(fd, depth);
    } else {
      // No lingering: a reset now rather than a close that waits for a
      // peer the client controls.
      const linger abort_now{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_now, sizeof(abort_now));
    }
    close(fd);
    return;
  }
  if (known && ClosesAtOnce(fd, info.st_mode)) {
    close(fd);
    return;
  }
  TheSlowCloser().Add(fd);
}

}  // namespace

void TakeCarried(msghdr& message, const std::function<void(int fd)>& take) {
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(fd));
      take(fd);
    }
  }
}

void RefuseDescriptors(int socket) {
  const int off = 0;
  (void)setsockopt(socket, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off));  // ENOPROTOOPT before 6.16
}

ssize_t ReceiveBytes(int socket, void* buffer, size_t size, int flags) {
  return ReceiveAt(socket, buffer, size, flags, /*depth=*/0);
}

void CloseReceived(int fd) {
  if (fd >= 0) CloseReceivedAt(fd, /*depth=*/0);
}

void CloseConnection(int fd) {
  if (fd < 0) return;
  Empty(fd, /*depth=*/0);
  close(fd);
}

SlowCloses SlowCloseCounts() { return TheSlowCloser().Counts(); }

}  // namespace acld::server
