#include "daemon/server/socket_path.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/acl/status_macros.h"

namespace acld::server {
namespace {

struct SplitPath {
  std::string directory;
  std::string name;
};

absl::StatusOr<SplitPath> Split(const std::string& path) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path '", path,
                                                   "' is empty or longer than ",
                                                   sizeof(sockaddr_un::sun_path) - 1, " bytes"));
  }
  const std::filesystem::path parsed(path);
  SplitPath split{parsed.parent_path().string(), parsed.filename().string()};
  if (split.name.empty() || split.name == "." || split.name == "..") {
    return absl::InvalidArgumentError(absl::StrCat("socket path '", path, "' names no file"));
  }
  if (split.directory.empty()) split.directory = ".";
  return split;
}

std::string Mode(mode_t mode) { return absl::StrFormat("%04o", mode & 07777); }

// Sets the group of `name` in `directory` (never through a symlink) and
// checks that it is acld's socket with exactly `mode`.
absl::Status SecureSocketAt(const SocketDirectory& directory, const std::string& name, mode_t mode,
                            gid_t gid) {
  const std::string path = directory.path() + "/" + name;
  if (gid != static_cast<gid_t>(-1) &&
      fchownat(directory.fd(), name.c_str(), static_cast<uid_t>(-1), gid, AT_SYMLINK_NOFOLLOW) !=
          0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot give '", path, "' to group ", gid, ": ", std::strerror(errno)));
  }
  struct stat info {};
  if (fstatat(directory.fd(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket '", path, "' vanished after acld created it: ", std::strerror(errno)));
  }
  if (!S_ISSOCK(info.st_mode) || info.st_uid != geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", path, "' is not the socket acld created (something replaced it); refusing to serve"));
  }
  if ((info.st_mode & 07777) != (mode & 07777)) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket '", path, "' has mode ", Mode(info.st_mode), ", not ", Mode(mode)));
  }
  if (gid != static_cast<gid_t>(-1) && info.st_gid != gid) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket '", path, "' has group ", info.st_gid, ", not ", gid));
  }
  return absl::OkStatus();
}

}  // namespace

sockaddr_un UnixSocketAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), std::min(path.size(), sizeof(address.sun_path) - 1));
  return address;
}

absl::StatusOr<SocketDirectory> SocketDirectory::Open(const std::string& path, Links links) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create socket directory '", path, "': ", error.message()));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC |
                                        (links == Links::kRefuse ? O_NOFOLLOW : 0));
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open socket directory '", path, "': ", std::strerror(errno)));
  }
  SocketDirectory directory(fd, path);
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot stat socket directory '", path, "': ", std::strerror(errno)));
  }
  if (info.st_uid != 0 && info.st_uid != geteuid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("socket directory '", path, "' belongs to uid ", info.st_uid,
                     ", neither root nor acld's user (uid ", geteuid(),
                     "): its owner could replace acld's sockets; use a directory of root or acld "
                     "(e.g. /run/acld)"));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "socket directory '", path, "' (mode ", Mode(info.st_mode),
        ") is writable by group or others without the sticky bit: another user could replace "
        "acld's sockets; make it writable by its owner only (e.g. chmod 0755) or sticky"));
  }
  return directory;
}

SocketDirectory::SocketDirectory(SocketDirectory&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

SocketDirectory& SocketDirectory::operator=(SocketDirectory&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

SocketDirectory::~SocketDirectory() {
  if (fd_ >= 0) close(fd_);
}

bool SocketIsLive(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) return false;
  sockaddr_un address = UnixSocketAddress(path);
  // Non-blocking, so that the asker (the admin status, the watchdog) never
  // waits on a listener whose backlog is full; that one is live all the same
  // (EAGAIN): it listens, and a stale-socket check must not remove it.
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // Out of descriptors (a burst of connections took them all): the listener
  // cannot be asked and is there all the same; its acceptor pauses and
  // recovers. Calling it dead made acld's readiness check fail and acld
  // stop under exactly the burst it rides out (tenant_limits_test).
  if (fd < 0) return errno == EMFILE || errno == ENFILE;
  const bool live = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 ||
                    errno == EAGAIN;
  close(fd);
  return live;
}

absl::Status PrepareSocketPath(const std::string& path) {
  ACL_ASSIGN_OR_RETURN(SplitPath split, Split(path));
  ACL_ASSIGN_OR_RETURN(SocketDirectory directory, SocketDirectory::Open(split.directory));
  struct stat info {};
  if (fstatat(directory.fd(), split.name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return absl::OkStatus();  // nothing there
    return absl::PermissionDeniedError(
        absl::StrCat("cannot inspect '", path, "': ", std::strerror(errno)));
  }
  if (!S_ISSOCK(info.st_mode)) {
    return absl::AlreadyExistsError(absl::StrCat("'", path, "' exists and is not a socket",
                                                 S_ISLNK(info.st_mode) ? " (a symlink)" : "",
                                                 "; refusing to replace it"));
  }
  if (SocketIsLive(path)) {
    return absl::AlreadyExistsError(
        absl::StrCat("another daemon is serving '", path, "'; stop it first or choose --socket"));
  }
  if (unlinkat(directory.fd(), split.name.c_str(), 0) != 0 && errno != ENOENT) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot remove stale socket '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ListenOnSocketPath(const std::string& path, mode_t mode, gid_t gid) {
  ACL_ASSIGN_OR_RETURN(SplitPath split, Split(path));
  ACL_ASSIGN_OR_RETURN(SocketDirectory directory, SocketDirectory::Open(split.directory));
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::ResourceExhaustedError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  sockaddr_un address = UnixSocketAddress(path);
  int bound;
  {
    // The socket is born with its mode: there is no moment it is wider, and
    // no chmod that a symlink could redirect.
    ScopedUmask mask(UmaskFor(mode));
    bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  }
  if (bound != 0 || listen(fd, SOMAXCONN) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot listen on '", path, "': ", error));
  }
  absl::Status secured = SecureSocketAt(directory, split.name, mode, gid);
  if (!secured.ok()) {
    close(fd);
    return secured;
  }
  return fd;
}

absl::Status SecureSocket(const std::string& path, mode_t mode, gid_t gid) {
  ACL_ASSIGN_OR_RETURN(SplitPath split, Split(path));
  ACL_ASSIGN_OR_RETURN(SocketDirectory directory, SocketDirectory::Open(split.directory));
  return SecureSocketAt(directory, split.name, mode, gid);
}

void RemoveSocket(const std::string& path) {
  absl::StatusOr<SplitPath> split = Split(path);
  if (!split.ok()) return;
  const std::string directory = split->directory;
  const int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat info {};
  if (fstatat(fd, split->name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(info.st_mode) &&
      info.st_uid == geteuid()) {
    unlinkat(fd, split->name.c_str(), 0);
  }
  close(fd);
}

}  // namespace acld::server
