// Float overflow: the saturation mode of a process's new streams
// (aclrtSetDeviceSatMode), the per-stream detection switch
// (aclrtSetStreamOverflowSwitch) and the process's overflow status on a device
// (aclrtGetOverflowStatus, aclrtResetOverflowStatus). What the device does
// with them: hal/float_overflow.h; what CANN programs see: docs/api-compat.md.
//
// The mode is this process's alone, kept here per device, and travels with
// each stream it creates; the status lives in acld, one per session and
// device, so another tenant's overflows never show in it.
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl.h"
#include "client/api_support.h"
#include "client/client_runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::NullArgument;
using acl_client::Transport;

namespace acl_client {

// The saturation mode this process set per device (INFNAN unless set).
class SaturationModes {
 public:
  static SaturationModes& Get() {
    static SaturationModes* modes = new SaturationModes;
    return *modes;
  }
  bool Saturates(int32_t device) {
    absl::MutexLock lock(&mu_);
    auto it = saturates_.find(device);
    return it != saturates_.end() && it->second;
  }
  void Set(int32_t device, bool saturate) {
    absl::MutexLock lock(&mu_);
    saturates_[device] = saturate;
  }

 private:
  absl::Mutex mu_;
  std::map<int32_t, bool> saturates_ ABSL_GUARDED_BY(mu_);
};

bool SaturatesFloats(int32_t device) { return SaturationModes::Get().Saturates(device); }

}  // namespace acl_client

namespace {

// The current context's device, when its backend detects overflows.
absl::StatusOr<int32_t> OverflowDevice(Transport& transport, const char* api) {
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, ClientRuntime::Get().RequireContext());
  if (!transport.Features(context.device).float_overflow) {
    return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           absl::StrCat(api, ": device ", context.device,
                                        " does not support saturation mode and overflow detection"));
  }
  return context.device;
}

// Enqueues an overflow operation on `stream` (NULL: the default stream).
absl::Status EnqueueOverflow(aclrtStream stream, acld::OverflowRequest request, const char* api) {
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(acl_client::StreamFacts facts, acl_client::StreamFactsOf(stream, api));
  if (!transport->Features(facts.device).float_overflow) {
    return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           absl::StrCat(api, ": device ", facts.device,
                                        " does not detect float overflows"));
  }
  ACL_ASSIGN_OR_RETURN(uint64_t stream_id, acl_client::ResolveStream(stream, api));
  return acl_client::Enqueued(
      transport->OverflowAsync(stream_id, acl_client::CurrentThreadId(), request));
}

absl::Status GetOverflowStatus(void* output, uint64_t size, aclrtStream stream, const char* api) {
  if (output == nullptr) return NullArgument(api, "outputAddr");
  if (size < 64) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": outputSize ", size, " is less than the status's 64 bytes"));
  }
  acld::OverflowRequest request;
  request.kind = acld::OverflowRequest::Kind::kCopyStatus;
  request.device_dst = reinterpret_cast<uintptr_t>(output);
  return EnqueueOverflow(stream, request, api);
}

absl::Status ResetOverflowStatus(aclrtStream stream, const char* api) {
  acld::OverflowRequest request;
  request.kind = acld::OverflowRequest::Kind::kClearStatus;
  return EnqueueOverflow(stream, request, api);
}

}  // namespace

extern "C" {

aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtSetDeviceSatMode";
    const int raw = acl_client::RawEnum(mode);
    if (raw != ACL_RT_OVERFLOW_MODE_SATURATION && raw != ACL_RT_OVERFLOW_MODE_INFNAN) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": mode ", raw,
                                          " is neither ACL_RT_OVERFLOW_MODE_SATURATION nor _INFNAN"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(int32_t device, OverflowDevice(*transport, kApi));
    acl_client::SaturationModes::Get().Set(device, raw == ACL_RT_OVERFLOW_MODE_SATURATION);
    return absl::OkStatus();
  });
}

aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode* mode) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetDeviceSatMode";
    if (mode == nullptr) return NullArgument(kApi, "mode");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(int32_t device, OverflowDevice(*transport, kApi));
    *mode = acl_client::SaturatesFloats(device) ? ACL_RT_OVERFLOW_MODE_SATURATION
                                                : ACL_RT_OVERFLOW_MODE_INFNAN;
    return absl::OkStatus();
  });
}

aclError aclrtSetStreamOverflowSwitch(aclrtStream stream, uint32_t flag) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtSetStreamOverflowSwitch";
    if (flag > 1) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": flag ", flag, " is neither 0 (off) nor 1 (on)"));
    }
    acld::OverflowRequest request;
    request.kind = flag == 1 ? acld::OverflowRequest::Kind::kSwitchOn
                             : acld::OverflowRequest::Kind::kSwitchOff;
    ACL_RETURN_IF_ERROR(EnqueueOverflow(stream, request, kApi));
    ACL_ASSIGN_OR_RETURN(uint64_t id, acl_client::ResolveStream(stream, kApi));
    ClientRuntime::Get().handles().UpdateStream(
        id, [&](acl_client::StreamFacts& facts) { facts.overflow_switch = flag == 1; });
    return absl::OkStatus();
  });
}

aclError aclrtGetStreamOverflowSwitch(aclrtStream stream, uint32_t* flag) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetStreamOverflowSwitch";
    if (flag == nullptr) return NullArgument(kApi, "flag");
    ACL_ASSIGN_OR_RETURN(acl_client::StreamFacts facts, acl_client::StreamFactsOf(stream, kApi));
    *flag = facts.overflow_switch ? 1 : 0;
    return absl::OkStatus();
  });
}

aclError aclrtGetOverflowStatus(void* outputAddr, size_t outputSize, aclrtStream stream) {
  return Api([&] { return GetOverflowStatus(outputAddr, outputSize, stream, "aclrtGetOverflowStatus"); });
}

aclError aclrtResetOverflowStatus(aclrtStream stream) {
  return Api([&] { return ResetOverflowStatus(stream, "aclrtResetOverflowStatus"); });
}

aclError aclrtGetFloatOverflowStatus(void* outputAddr, uint64_t outputSize, aclrtStream stream) {
  return Api([&] {
    return GetOverflowStatus(outputAddr, outputSize, stream, "aclrtGetFloatOverflowStatus");
  });
}

aclError aclrtResetFloatOverflowStatus(aclrtStream stream) {
  return Api([&] { return ResetOverflowStatus(stream, "aclrtResetFloatOverflowStatus"); });
}

}  // extern "C"
