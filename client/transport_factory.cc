#include "client/transport_factory.h"

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/embedded_transport.h"
#include "client/remote_transport.h"
#include "proto/acl/acl_status.h"

namespace acl_client {

absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(CallbackDispatcher* callbacks,
                                                           const acld::InitSettings* initialize) {
  const char* env = std::getenv("ACLD_ADDRESS");
  const std::string address = env != nullptr && *env != '\0' ? env : kDefaultAddress;
  if (address == "embedded") {
    absl::StatusOr<std::unique_ptr<EmbeddedTransport>> embedded =
        EmbeddedTransport::Create(callbacks);
    if (!embedded.ok()) return embedded.status();
    return std::unique_ptr<Transport>(std::move(*embedded));
  }
  if (absl::StartsWith(address, "unix:")) {
    const char* carrier_env = std::getenv("ACLD_TRANSPORT");
    const std::string carrier = carrier_env != nullptr ? carrier_env : "";
    if (carrier != "" && carrier != "shm" && carrier != "grpc") {
      return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                             absl::StrCat("ACLD_TRANSPORT='", carrier,
                                          "' is not understood; use shm (the default) or grpc"));
    }
    absl::StatusOr<std::unique_ptr<RemoteTransport>> remote = RemoteTransport::Connect(
        address.substr(5),
        carrier == "grpc" ? RemoteTransport::Carrier::kGrpc
                          : RemoteTransport::Carrier::kSharedMemory,
        callbacks, initialize);
    if (!remote.ok()) return remote.status();
    return std::unique_ptr<Transport>(std::move(*remote));
  }
  return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                         absl::StrCat("ACLD_ADDRESS='", address,
                                      "' is not understood; use unix:<socket path> or embedded"));
}

}  // namespace acl_client
