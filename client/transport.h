// How the client library reaches the runtime core: over the daemon's socket
// (RemoteTransport) or in-process (EmbeddedTransport, ACLD_ADDRESS=embedded).
//
// Every method acts for this process's session. Errors carry the exact
// aclError (daemon/core/acl_status.h); a lost daemon is ACL_ERROR_RT_SOCKET_CLOSE.
#ifndef ACLD_CLIENT_TRANSPORT_H_
#define ACLD_CLIENT_TRANSPORT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/core/runtime.h"

namespace acl_client {

class Transport {
 public:
  virtual ~Transport() = default;

  // Ends the session now (process exit). Later calls fail with SOCKET_CLOSE.
  virtual void Close() = 0;

  virtual absl::StatusOr<uint64_t> InitCount() = 0;
  // New count when the process was initialized (one more reference), else 0.
  virtual absl::StatusOr<uint64_t> AddInitReference() = 0;
  virtual absl::Status Initialize(const acld::InitSettings& settings) = 0;
  virtual absl::Status AbortInit() = 0;
  virtual absl::StatusOr<uint64_t> DropInitReference() = 0;
  virtual absl::Status Finalize() = 0;

  virtual absl::StatusOr<int32_t> DeviceCount() = 0;
  virtual absl::Status SetDevice(int32_t device_id) = 0;
  virtual absl::Status ResetDevice(int32_t device_id, bool force) = 0;
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_TRANSPORT_H_
