// The client library's process-wide state: the connection to the runtime
// (chosen by ACLD_ADDRESS), the lifecycle, and each thread's current device.
#ifndef ACLD_CLIENT_CLIENT_RUNTIME_H_
#define ACLD_CLIENT_CLIENT_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/lifecycle.h"
#include "client/transport.h"

namespace acl_client {

// Where the client looks for acld when ACLD_ADDRESS is not set.
inline constexpr char kDefaultAddress[] = "unix:/run/acld/acld.sock";

class ClientRuntime {
 public:
  // The process's instance. Never destroyed: application threads may still
  // call the API while static destructors run.
  static ClientRuntime& Get();

  // The session's transport, connecting on first use. Until a session opens,
  // each call tries again (acld may have been started meanwhile); a session
  // that was lost stays lost (every call then fails with SOCKET_CLOSE).
  absl::StatusOr<Transport*> transport();

  Lifecycle& lifecycle() { return lifecycle_; }

  // The calling thread's current device (aclrtSetDevice), falling back to the
  // config's default device.
  std::optional<int32_t> current_device();
  void set_current_device(int32_t device_id);
  // Forgets the calling thread's current device if it is `device_id`.
  void clear_current_device(int32_t device_id);

  // Closes the session now (process exit): the daemon reaps it at once.
  void Disconnect();

 private:
  ClientRuntime();

  absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(const std::string& address);

  absl::Mutex connect_mu_;
  std::unique_ptr<Transport> owned_transport_ ABSL_GUARDED_BY(connect_mu_);
  std::atomic<Transport*> transport_{nullptr};
  Lifecycle lifecycle_;
  // Bumped by every full finalize: thread-local current devices set before it
  // are stale (their device references were released).
  std::atomic<uint64_t> device_generation_{1};
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_CLIENT_RUNTIME_H_
