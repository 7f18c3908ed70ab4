#include "daemon/server/health.h"

#include "absl/strings/str_cat.h"
#include "daemon/server/socket_path.h"

namespace acld::server {

absl::Status CheckHealth(const std::vector<std::string>& sockets, const Runtime& runtime) {
  for (const std::string& socket : sockets) {
    if (!SocketIsLive(socket)) {
      return absl::UnavailableError(absl::StrCat(socket, " accepts no connection"));
    }
  }
  absl::Status backend = runtime.BackendHealth();
  if (!backend.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the ", runtime.BackendName(), " backend: ", backend.message()));
  }
  return absl::OkStatus();
}

absl::Status DeviceHealth(const absl::Status& serving, int32_t device, bool disabled) {
  if (!serving.ok()) return serving;
  if (disabled) {
    return absl::UnavailableError(
        absl::StrCat("device ", device, " is disabled by the operator (aclctl device enable ",
                     device, ")"));
  }
  return absl::OkStatus();
}

}  // namespace acld::server
