#include "daemon/server/socket_path.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace acld::server {

bool SocketIsLive(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return false;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool live = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return live;
}

absl::Status PrepareSocketPath(const std::string& path) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("socket path '", path,
                                                   "' is empty or longer than ",
                                                   sizeof(sockaddr_un::sun_path) - 1, " bytes"));
  }
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!directory.empty()) std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create socket directory '",
                                                    directory.string(), "': ", error.message()));
  }
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return absl::OkStatus();  // nothing there
  if (!S_ISSOCK(info.st_mode)) {
    return absl::AlreadyExistsError(
        absl::StrCat("'", path, "' exists and is not a socket; refusing to replace it"));
  }
  if (SocketIsLive(path)) {
    return absl::AlreadyExistsError(
        absl::StrCat("another daemon is serving '", path, "'; stop it first or choose --socket"));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot remove stale socket '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace acld::server
