// The runtime core: everything acld owns, with no transport in sight.
//
// Both the gRPC server (daemon/server) and the client library's embedded
// transport call this class; every method is keyed by the calling session and
// is thread-safe. Errors are absl::Status values carrying the exact aclError
// (see acl_status.h).
#ifndef ACLD_DAEMON_CORE_RUNTIME_H_
#define ACLD_DAEMON_CORE_RUNTIME_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/init_arbiter.h"
#include "daemon/core/runtime_snapshot.h"
#include "daemon/core/session_table.h"
#include "hal/backend.h"

namespace acld {

// What aclInit hands the core once the client has read and validated the config.
struct InitSettings {
  std::string config_content;
  std::optional<int32_t> default_device;
  std::map<std::string, std::string> settings;  // normalised keys, for operators
};

class Runtime {
 public:
  explicit Runtime(std::unique_ptr<hal::Backend> backend);
  ~Runtime();

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Sessions.
  SessionId OpenSession(const PeerInfo& peer);
  // Ends a session as if its process exited: drops its init references and
  // releases everything it held. Returns false when it was not live.
  bool CloseSession(SessionId session);

  // Init reference counting (SPEC section 4; the client runs the callbacks).
  absl::StatusOr<uint64_t> InitCount(SessionId session);
  // When initialized, takes one more reference and returns the new count;
  // returns 0 when not initialized.
  absl::StatusOr<uint64_t> AddInitReference(SessionId session);
  absl::Status Initialize(SessionId session, const InitSettings& settings);
  absl::Status AbortInit(SessionId session);
  absl::StatusOr<uint64_t> DropInitReference(SessionId session);
  // Full finalize: count -> 0, every resource of the session released.
  absl::Status Finalize(SessionId session);

  // Devices.
  int32_t DeviceCount() const;
  absl::Status SetDevice(SessionId session, int32_t device_id);
  absl::Status ResetDevice(SessionId session, int32_t device_id, bool force);

  RuntimeSnapshot Snapshot() const;

 private:
  absl::StatusOr<Session*> FindSession(SessionId session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckDeviceId(int32_t device_id) const;
  void ReleaseSessionResources(Session& session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Brings each device up or down to match who needs it: all devices while the
  // host-wide init count is non-zero, otherwise those a session set.
  void UpdateDevicePower() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::unique_ptr<hal::Backend> backend_;
  mutable absl::Mutex mu_;
  SessionTable sessions_ ABSL_GUARDED_BY(mu_);
  InitArbiter init_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_RUNTIME_H_
