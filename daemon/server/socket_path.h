// Filesystem care for the daemon's Unix sockets.
//
// A socket is created with its final mode (under a umask, never chmod-ed
// afterwards), its group is set through the directory with
// AT_SYMLINK_NOFOLLOW, and the result is verified: nothing a local user
// plants in the way (a symlink, a file, a directory they own) makes acld
// change the mode or owner of anything else.
#ifndef ACLD_DAEMON_SERVER_SOCKET_PATH_H_
#define ACLD_DAEMON_SERVER_SOCKET_PATH_H_

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace acld::server {

// Sets the process umask for its lifetime (the umask is process-wide: use
// it only while no other thread creates files).
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(umask(mask)) {}
  ~ScopedUmask() { umask(previous_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  const mode_t previous_;
};

// The umask under which a new socket gets exactly `mode`.
inline mode_t UmaskFor(mode_t mode) { return ~mode & 0777; }

// An open directory that may hold acld's sockets: owned by root or by acld's
// user, and not writable by group or others unless sticky (like /tmp).
class SocketDirectory {
 public:
  // Opens (creating it, mode 0755, when missing) and checks the directory.
  // kRefuse: a symlink at `path` itself is refused, not followed (a
  // directory acld makes inside a sticky one such as /tmp, where another
  // user may have put a symlink first: acld would chmod its target).
  enum class Links { kFollow, kRefuse };
  static absl::StatusOr<SocketDirectory> Open(const std::string& path,
                                              Links links = Links::kFollow);
  SocketDirectory(SocketDirectory&& other) noexcept;
  SocketDirectory& operator=(SocketDirectory&& other) noexcept;
  ~SocketDirectory();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  SocketDirectory(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

// Makes `path` ready for a new listening socket: checks (and creates) its
// directory, fails when something other than a socket is there (a symlink
// included) or when a live process accepts connections there (another acld),
// and removes a stale socket left by a daemon that died.
absl::Status PrepareSocketPath(const std::string& path);

// The address of the Unix socket at `path` (cut to fit: PrepareSocketPath
// refuses a path too long for it).
sockaddr_un UnixSocketAddress(const std::string& path);

// Binds and listens on a new Unix socket at `path` (prepared) that has
// exactly `mode` from its creation, gives it group `gid` (-1: acld's) and
// verifies it (SecureSocket). Returns the listening descriptor (close-on-exec).
absl::StatusOr<int> ListenOnSocketPath(const std::string& path, mode_t mode, gid_t gid);

// For a socket someone else created at `path` (under UmaskFor(mode)): sets
// its group without following symlinks and checks that it is a socket owned
// by acld with exactly `mode` (and `gid` unless -1).
absl::Status SecureSocket(const std::string& path, mode_t mode, gid_t gid);

// Removes the socket at `path` if it is acld's (a socket owned by acld's
// user); never anything else.
void RemoveSocket(const std::string& path);

// True when something accepts connections on the Unix socket at `path`.
bool SocketIsLive(const std::string& path);

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SOCKET_PATH_H_
