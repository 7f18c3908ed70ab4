// C entry points for devices and contexts (SPEC section 5).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "client/stream_state_callbacks.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::HandleId;
using acl_client::NullArgument;
using acl_client::StreamStateCallbacks;
using acl_client::ToHandle;
using acl_client::Transport;

namespace {

absl::Status ResetDevice(int32_t device_id, bool force) {
  ClientRuntime& runtime = ClientRuntime::Get();
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  StreamStateCallbacks::Get().Notify(runtime.handles().StreamsGoneWithReference(device_id, force),
                                     ACL_RT_STREAM_STATE_DESTROY_PRE);
  ACL_RETURN_IF_ERROR(transport->ResetDevice(device_id, force));
  runtime.handles().DropDeviceReference(device_id, force);
  return absl::OkStatus();
}

absl::Status SynchronizeCurrentDevice(int32_t timeout_ms, const char* api) {
  ACL_RETURN_IF_ERROR(acl_client::CheckTimeout(timeout_ms, api));
  ACL_RETURN_IF_ERROR(acl_client::CheckNotOwnCallback(0, api));
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  return acl_client::Synchronized(transport->SynchronizeDevice(context.device, timeout_ms));
}

// How many more streams and events this process may make on its current
// device: acld's limits and the device's own number (acld::ObjectsAvailable).
absl::StatusOr<acld::ObjectsAvailable> ObjectsAvailableOnCurrentDevice() {
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
  return transport->GetObjectsAvailable(context.device);
}

}  // namespace

extern "C" {

aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion, int32_t* patchVersion) {
  return Api([&]() -> absl::Status {
    if (majorVersion == nullptr || minorVersion == nullptr || patchVersion == nullptr) {
      return NullArgument("aclrtGetVersion", "every version pointer");
    }
    *majorVersion = ACL_MAJOR_VERSION;
    *minorVersion = ACL_MINOR_VERSION;
    *patchVersion = ACL_PATCH_VERSION;
    return absl::OkStatus();
  });
}

aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  return Api([&]() -> absl::Status {
    if (runMode == nullptr) return NullArgument("aclrtGetRunMode", "runMode");
    *runMode = ACL_HOST;  // the application always runs on the host, beside acld
    return absl::OkStatus();
  });
}

const char* aclrtGetSocName(void) {
  absl::StatusOr<Transport*> transport = Connected();
  if (!transport.ok()) {
    acl_client::ReportStatus(transport.status());
    return nullptr;
  }
  // Fixed for the daemon's life: one copy serves the process.
  static const std::string* name = new std::string((*transport)->SocName());
  return name->c_str();
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  return Api([&]() -> absl::Status {
    if (count == nullptr) return NullArgument("aclrtGetDeviceCount", "count");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    *count = static_cast<uint32_t>(transport->DeviceCount());
    return absl::OkStatus();
  });
}

aclError aclrtSetDevice(int32_t deviceId) {
  return Api([&] { return ClientRuntime::Get().SetDevice(deviceId).status(); });
}

aclError aclrtGetDevice(int32_t* deviceId) {
  return Api([&]() -> absl::Status {
    if (deviceId == nullptr) return NullArgument("aclrtGetDevice", "deviceId");
    ClientRuntime& runtime = ClientRuntime::Get();
    // No RPC: the current device is thread-local state. Reaching the runtime
    // once still matters, so that a missing daemon is reported as such.
    ACL_RETURN_IF_ERROR(Connected().status());
    std::optional<acld::ContextInfo> context = runtime.current_context();
    if (context.has_value()) {
      *deviceId = context->device;
      return absl::OkStatus();
    }
    std::optional<int32_t> default_device = runtime.lifecycle().default_device();
    if (default_device.has_value()) {
      *deviceId = *default_device;
      return absl::OkStatus();
    }
    return acld::AclStatus(
        ACL_ERROR_RT_CONTEXT_NULL,
        "aclrtGetDevice: this thread has no current device; call aclrtSetDevice first");
  });
}

aclError aclrtResetDevice(int32_t deviceId) {
  return Api([&] { return ResetDevice(deviceId, /*force=*/false); });
}

aclError aclrtResetDeviceForce(int32_t deviceId) {
  return Api([&] { return ResetDevice(deviceId, /*force=*/true); });
}

aclError aclrtSynchronizeDevice(void) {
  return Api([&] { return SynchronizeCurrentDevice(-1, "aclrtSynchronizeDevice"); });
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
  return Api(
      [&] { return SynchronizeCurrentDevice(timeout, "aclrtSynchronizeDeviceWithTimeout"); });
}

aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus* deviceStatus) {
  return Api([&]() -> absl::Status {
    if (deviceStatus == nullptr) return NullArgument("aclrtQueryDeviceStatus", "deviceStatus");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(
        acl_client::CheckDeviceExists(*transport, deviceId, "aclrtQueryDeviceStatus"));
    // A sim device never becomes abnormal; the daemon answering is the check.
    *deviceStatus = ACL_RT_DEVICE_STATUS_NORMAL;
    return absl::OkStatus();
  });
}

aclError aclrtGetDeviceUtilizationRate(int32_t deviceId, aclrtUtilizationInfo* utilizationInfo) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetDeviceUtilizationRate";
    if (utilizationInfo == nullptr) return NullArgument(kApi, "utilizationInfo");
    if (utilizationInfo->utilizationExtend != nullptr) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": utilizationExtend is reserved and must be NULL"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, kApi));
    ACL_ASSIGN_OR_RETURN(acld::Utilization measured, transport->GetUtilization(deviceId));
    // The backends measure one compute figure: cube and vector both report it.
    utilizationInfo->cubeUtilization = measured.compute_percent;
    utilizationInfo->vectorUtilization = measured.compute_percent;
    utilizationInfo->aicpuUtilization = 0;  // no AI CPU kernels run through acld
    utilizationInfo->memoryUtilization = measured.memory_percent;
    return absl::OkStatus();
  });
}

aclError aclrtGetStreamAvailableNum(uint32_t* streamCount) {
  return Api([&]() -> absl::Status {
    if (streamCount == nullptr) return NullArgument("aclrtGetStreamAvailableNum", "streamCount");
    ACL_ASSIGN_OR_RETURN(acld::ObjectsAvailable available, ObjectsAvailableOnCurrentDevice());
    *streamCount = available.streams;
    return absl::OkStatus();
  });
}

aclError aclrtGetEventAvailNum(uint32_t* eventCount) {
  return Api([&]() -> absl::Status {
    if (eventCount == nullptr) return NullArgument("aclrtGetEventAvailNum", "eventCount");
    ACL_ASSIGN_OR_RETURN(acld::ObjectsAvailable available, ObjectsAvailableOnCurrentDevice());
    *eventCount = available.events;
    return absl::OkStatus();
  });
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  return Api([&]() -> absl::Status {
    if (context == nullptr) return NullArgument("aclrtCreateContext", "context");
    ClientRuntime& runtime = ClientRuntime::Get();
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo created, transport->CreateContext(deviceId));
    runtime.handles().AddDeviceReference(deviceId);
    if (runtime.handles().AddContext(created)) {
      StreamStateCallbacks::Get().Notify({created.default_stream}, ACL_RT_STREAM_STATE_CREATE_POST);
    }
    runtime.set_current_context(created);
    *context = ToHandle(created.context);
    return absl::OkStatus();
  });
}

aclError aclrtDestroyContext(aclrtContext context) {
  return Api([&]() -> absl::Status {
    if (context == nullptr) return NullArgument("aclrtDestroyContext", "context");
    ClientRuntime& runtime = ClientRuntime::Get();
    std::optional<acld::ContextInfo> known = runtime.handles().FindContext(HandleId(context));
    if (!known.has_value()) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             "aclrtDestroyContext: not a live context of this process");
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    // Its default stream goes; with the device's last reference, every stream
    // of the device (the default one among them) goes.
    std::vector<uint64_t> gone =
        runtime.handles().StreamsGoneWithReference(known->device, /*all=*/false);
    if (gone.empty()) gone.push_back(known->default_stream);
    StreamStateCallbacks::Get().Notify(gone, ACL_RT_STREAM_STATE_DESTROY_PRE);
    ACL_RETURN_IF_ERROR(transport->DestroyContext(known->context));
    runtime.handles().RemoveContext(known->context);
    runtime.handles().DropDeviceReference(known->device, /*all=*/false);
    return absl::OkStatus();
  });
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  return Api([&]() -> absl::Status {
    if (context == nullptr) return NullArgument("aclrtSetCurrentContext", "context");
    ACL_RETURN_IF_ERROR(Connected().status());
    ClientRuntime& runtime = ClientRuntime::Get();
    std::optional<acld::ContextInfo> known = runtime.handles().FindContext(HandleId(context));
    if (!known.has_value()) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             "aclrtSetCurrentContext: not a live context of this process");
    }
    runtime.set_current_context(*known);
    return absl::OkStatus();
  });
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  return Api([&]() -> absl::Status {
    if (context == nullptr) return NullArgument("aclrtGetCurrentContext", "context");
    ACL_RETURN_IF_ERROR(Connected().status());
    std::optional<acld::ContextInfo> current = ClientRuntime::Get().current_context();
    if (!current.has_value()) {
      return acld::AclStatus(ACL_ERROR_RT_CONTEXT_NULL,
                             "aclrtGetCurrentContext: this thread has no current context");
    }
    *context = ToHandle(current->context);
    return absl::OkStatus();
  });
}

aclError aclrtCtxGetCurrentDefaultStream(aclrtStream* stream) {
  return Api([&]() -> absl::Status {
    if (stream == nullptr) return NullArgument("aclrtCtxGetCurrentDefaultStream", "stream");
    ACL_RETURN_IF_ERROR(Connected().status());
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
    *stream = ToHandle(context.default_stream);
    return absl::OkStatus();
  });
}

// --- peer access: which other devices' memory copies on a device may reach ---

aclError aclrtDeviceCanAccessPeer(int32_t* canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtDeviceCanAccessPeer";
    if (canAccessPeer == nullptr) return NullArgument(kApi, "canAccessPeer");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, kApi));
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, peerDeviceId, kApi));
    if (deviceId == peerDeviceId) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": deviceId and peerDeviceId are both ", deviceId));
    }
    const std::vector<int32_t> peers = transport->Features(deviceId).peers;
    *canAccessPeer = std::find(peers.begin(), peers.end(), peerDeviceId) != peers.end() ? 1 : 0;
    return absl::OkStatus();
  });
}

namespace {

// The current device, and `peer` checked as another existing device.
absl::StatusOr<int32_t> CurrentDeviceBesides(int32_t peer, const char* api) {
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, peer, api));
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
  if (context.device == peer) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": peerDeviceId ", peer, " is the current device"));
  }
  return context.device;
}

}  // namespace

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtDeviceEnablePeerAccess";
    if (flags != 0) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(kApi, ": flags must be 0"));
    }
    ACL_ASSIGN_OR_RETURN(int32_t device, CurrentDeviceBesides(peerDeviceId, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    const std::vector<int32_t> peers = transport->Features(device).peers;
    if (std::find(peers.begin(), peers.end(), peerDeviceId) == peers.end()) {
      return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                             absl::StrCat(kApi, ": device ", device, " cannot reach device ",
                                          peerDeviceId, " (aclrtDeviceCanAccessPeer)"));
    }
    ClientRuntime::Get().handles().EnablePeer(device, peerDeviceId);
    return absl::OkStatus();
  });
}

aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtDeviceDisablePeerAccess";
    ACL_ASSIGN_OR_RETURN(int32_t device, CurrentDeviceBesides(peerDeviceId, kApi));
    if (!ClientRuntime::Get().handles().DisablePeer(device, peerDeviceId)) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": peer access from device ", device,
                                          " to device ", peerDeviceId, " is not enabled"));
    }
    return absl::OkStatus();
  });
}

}  // extern "C"
