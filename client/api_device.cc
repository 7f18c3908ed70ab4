// C entry points for devices (the part of SPEC section 5 the foundation needs).
#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/client_runtime.h"
#include "client/error_state.h"
#include "daemon/core/acl_status.h"

using acl_client::ClientRuntime;
using acl_client::ReportStatus;

namespace {

absl::Status NullArgument(const char* api, const char* argument) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat(api, ": ", argument, " must not be NULL"));
}

}  // namespace

extern "C" {

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  if (majorVersion == nullptr || minorVersion == nullptr || patchVersion == nullptr) {
    return ReportStatus(NullArgument("aclrtGetVersion", "every version pointer"));
  }
  *majorVersion = ACL_MAJOR_VERSION;
  *minorVersion = ACL_MINOR_VERSION;
  *patchVersion = ACL_PATCH_VERSION;
  return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return ReportStatus(NullArgument("aclrtGetRunMode", "runMode"));
  *runMode = ACL_HOST;  // the application always runs on the host, beside acld
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return ReportStatus(NullArgument("aclrtGetDeviceCount", "count"));
  absl::StatusOr<acl_client::Transport*> transport = ClientRuntime::Get().transport();
  if (!transport.ok()) return ReportStatus(transport.status());
  absl::StatusOr<int32_t> devices = (*transport)->DeviceCount();
  if (!devices.ok()) return ReportStatus(devices.status());
  *count = static_cast<uint32_t>(*devices);
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  ClientRuntime& runtime = ClientRuntime::Get();
  absl::StatusOr<acl_client::Transport*> transport = runtime.transport();
  if (!transport.ok()) return ReportStatus(transport.status());
  absl::Status status = (*transport)->SetDevice(deviceId);
  if (status.ok()) runtime.set_current_device(deviceId);
  return ReportStatus(status);
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return ReportStatus(NullArgument("aclrtGetDevice", "deviceId"));
  ClientRuntime& runtime = ClientRuntime::Get();
  // No RPC: the current device is thread-local state. Reaching the runtime
  // once still matters, so that a missing daemon is reported as such.
  absl::StatusOr<acl_client::Transport*> transport = runtime.transport();
  if (!transport.ok()) return ReportStatus(transport.status());
  std::optional<int32_t> current = runtime.current_device();
  if (!current.has_value()) {
    return ReportStatus(acld::AclStatus(
        ACL_ERROR_RT_CONTEXT_NULL,
        "aclrtGetDevice: this thread has no current device; call aclrtSetDevice first"));
  }
  *deviceId = *current;
  return ACL_SUCCESS;
}

static aclError ResetDevice(int32_t deviceId, bool force) {
  ClientRuntime& runtime = ClientRuntime::Get();
  absl::StatusOr<acl_client::Transport*> transport = runtime.transport();
  if (!transport.ok()) return ReportStatus(transport.status());
  absl::Status status = (*transport)->ResetDevice(deviceId, force);
  if (status.ok()) runtime.clear_current_device(deviceId);
  return ReportStatus(status);
}

aclError aclrtResetDevice(int32_t deviceId) { return ResetDevice(deviceId, /*force=*/false); }

aclError aclrtResetDeviceForce(int32_t deviceId) { return ResetDevice(deviceId, /*force=*/true); }

}  // extern "C"
