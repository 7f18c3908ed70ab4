#include "client/client_runtime.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/embedded_transport.h"
#include "client/remote_transport.h"
#include "daemon/core/acl_status.h"

namespace acl_client {
namespace {

struct CurrentDevice {
  uint64_t generation = 0;  // 0: never set on this thread
  int32_t device_id = 0;
};

thread_local CurrentDevice current;

}  // namespace

ClientRuntime& ClientRuntime::Get() {
  static ClientRuntime* runtime = [] {
    auto* created = new ClientRuntime;
    std::atexit([] { Get().Disconnect(); });
    return created;
  }();
  return *runtime;
}

ClientRuntime::ClientRuntime()
    : lifecycle_([this] { return transport(); },
                 [this] { device_generation_.fetch_add(1, std::memory_order_relaxed); }) {}

absl::StatusOr<std::unique_ptr<Transport>> ClientRuntime::CreateTransport(
    const std::string& address) {
  if (address == "embedded") return std::make_unique<EmbeddedTransport>();
  if (absl::StartsWith(address, "unix:")) {
    absl::StatusOr<std::unique_ptr<RemoteTransport>> remote =
        RemoteTransport::Connect(address.substr(5));
    if (!remote.ok()) return remote.status();
    return std::unique_ptr<Transport>(std::move(*remote));
  }
  return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                         absl::StrCat("ACLD_ADDRESS='", address,
                                      "' is not understood; use unix:<socket path> or embedded"));
}

absl::StatusOr<Transport*> ClientRuntime::transport() {
  Transport* ready = transport_.load(std::memory_order_acquire);
  if (ready != nullptr) return ready;
  absl::MutexLock lock(&connect_mu_);
  if (owned_transport_ == nullptr) {
    const char* env = std::getenv("ACLD_ADDRESS");
    const std::string address = env != nullptr && *env != '\0' ? env : kDefaultAddress;
    absl::StatusOr<std::unique_ptr<Transport>> created = CreateTransport(address);
    if (!created.ok()) return created.status();
    owned_transport_ = *std::move(created);
    transport_.store(owned_transport_.get(), std::memory_order_release);
  }
  return owned_transport_.get();
}

std::optional<int32_t> ClientRuntime::current_device() {
  if (current.generation == device_generation_.load(std::memory_order_relaxed)) {
    return current.device_id;
  }
  return lifecycle_.default_device();
}

void ClientRuntime::set_current_device(int32_t device_id) {
  current = {device_generation_.load(std::memory_order_relaxed), device_id};
}

void ClientRuntime::clear_current_device(int32_t device_id) {
  if (current.device_id == device_id) current.generation = 0;
}

void ClientRuntime::Disconnect() {
  absl::MutexLock lock(&connect_mu_);
  // Other threads may still hold the pointer: end the session, keep the object.
  if (owned_transport_ != nullptr) owned_transport_->Close();
}

}  // namespace acl_client
