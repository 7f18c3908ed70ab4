// Device information and core limits: aclrtGetDeviceInfo, aclrt*DeviceResLimit,
// aclrt*StreamResLimit and the stream a thread takes its limits from
// (aclrtUseStreamResInCurrentThread, aclrtGetResInCurrentThread).
//
// A limit says how many cube or vector cores this process's kernels may use:
// set per device for the process, per stream, and read by a thread from the
// stream it uses, else from its current device (docs/api-compat.md, "Core
// limits"). The default is the device's core count as its backend states it.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::NullArgument;
using acl_client::StreamFacts;
using acl_client::Transport;

namespace {

using Limits = std::array<uint32_t, 2>;  // by aclrtDevResLimitType; 0: not set

// Whether this process ever set a limit: until it does, a launch looks
// nothing up.
std::atomic<bool> any_limit_set{false};

// What aclrtSetDeviceResLimit set, per device, for this process.
class DeviceLimits {
 public:
  static DeviceLimits& Get() {
    static DeviceLimits* limits = new DeviceLimits;
    return *limits;
  }
  Limits Of(int32_t device) {
    absl::MutexLock lock(&mu_);
    auto it = limits_.find(device);
    return it == limits_.end() ? Limits{0, 0} : it->second;
  }
  void Set(int32_t device, int type, uint32_t value) {
    any_limit_set.store(true, std::memory_order_relaxed);
    absl::MutexLock lock(&mu_);
    limits_[device][type] = value;
  }
  void Reset(int32_t device) {
    absl::MutexLock lock(&mu_);
    limits_.erase(device);
  }

 private:
  absl::Mutex mu_;
  std::map<int32_t, Limits> limits_ ABSL_GUARDED_BY(mu_);
};

// The stream whose limits this thread uses (aclrtUseStreamResInCurrentThread).
thread_local std::optional<uint64_t> thread_stream;

absl::StatusOr<int> LimitType(const aclrtDevResLimitType& type, const char* api) {
  const int raw = acl_client::RawEnum(type);
  if (raw != ACL_RT_DEV_RES_CUBE_CORE && raw != ACL_RT_DEV_RES_VECTOR_CORE) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": ", raw, " is not an aclrtDevResLimitType"));
  }
  return raw;
}

// The device's own count of the cores a limit of `type` counts.
absl::StatusOr<uint32_t> DeviceCores(Transport& transport, int32_t device, int type,
                                     const char* api) {
  const int32_t attribute =
      type == ACL_RT_DEV_RES_CUBE_CORE ? ACL_DEV_ATTR_CUBE_CORE_NUM : ACL_DEV_ATTR_VECTOR_CORE_NUM;
  const std::map<int32_t, int64_t> info = transport.Features(device).device_info;
  auto it = info.find(attribute);
  if (it == info.end() || it->second <= 0 || it->second > UINT32_MAX) {
    return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                           absl::StrCat(api, ": device ", device, " does not state its ",
                                        type == ACL_RT_DEV_RES_CUBE_CORE ? "cube" : "vector",
                                        " core count"));
  }
  return static_cast<uint32_t>(it->second);
}

// The process's limit on `device`: what was set, else the device's count.
absl::StatusOr<uint32_t> DeviceLimit(Transport& transport, int32_t device, int type,
                                     const char* api) {
  const uint32_t set = DeviceLimits::Get().Of(device)[type];
  if (set != 0) return set;
  return DeviceCores(transport, device, type, api);
}

absl::StatusOr<uint32_t> StreamLimit(Transport& transport, const StreamFacts& facts, int type,
                                     const char* api) {
  if (facts.core_limits[type] != 0) return facts.core_limits[type];
  return DeviceLimit(transport, facts.device, type, api);
}

// A limit must name at least one core and at most the device's count.
absl::Status CheckLimit(Transport& transport, int32_t device, int type, uint32_t value,
                        const char* api) {
  ACL_ASSIGN_OR_RETURN(uint32_t cores, DeviceCores(transport, device, type, api));
  if (value == 0 || value > cores) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": value ", value, " is not 1 .. ", cores,
                                        ", the cores device ", device, " has"));
  }
  return absl::OkStatus();
}

// Applies `update` to the limits of `stream` (NULL: the default stream).
template <typename Update>
absl::Status UpdateStreamLimits(aclrtStream stream, const char* api, Update update) {
  ACL_ASSIGN_OR_RETURN(uint64_t id, acl_client::ResolveStream(stream, api));
  const bool found = ClientRuntime::Get().handles().UpdateStream(
      id, [&](StreamFacts& facts) { update(facts.core_limits); });
  if (!found) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": the stream is not a live stream of this process"));
  }
  return absl::OkStatus();
}

}  // namespace

namespace acl_client {

acld::CoreLimits CoreLimitsOfStream(uint64_t stream) {
  if (!any_limit_set.load(std::memory_order_relaxed)) return {};
  std::optional<StreamFacts> facts = ClientRuntime::Get().handles().FindStream(stream);
  if (!facts.has_value()) return {};  // the launch itself reports the stream
  const Limits process = DeviceLimits::Get().Of(facts->device);
  auto limit = [&](int type) {
    return facts->core_limits[type] != 0 ? facts->core_limits[type] : process[type];
  };
  return {limit(ACL_RT_DEV_RES_CUBE_CORE), limit(ACL_RT_DEV_RES_VECTOR_CORE)};
}

}  // namespace acl_client

extern "C" {

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t* value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetDeviceInfo";
    if (value == nullptr) return NullArgument(kApi, "value");
    if (deviceId > static_cast<uint32_t>(INT32_MAX)) {
      return acld::AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                             absl::StrCat(kApi, ": there is no device ", deviceId));
    }
    const int32_t device = static_cast<int32_t>(deviceId);
    const int attribute = acl_client::RawEnum(attr);
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, device, kApi));
    const std::map<int32_t, int64_t> info = transport->Features(device).device_info;
    auto it = info.find(attribute);
    if (it == info.end()) {
      return acld::AclStatus(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                             absl::StrCat(kApi, ": device ", device, " does not state attribute ",
                                          attribute));
    }
    *value = it->second;
    return absl::OkStatus();
  });
}

aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t* value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetDeviceResLimit";
    if (value == nullptr) return NullArgument(kApi, "value");
    ACL_ASSIGN_OR_RETURN(int kind, LimitType(type, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, kApi));
    ACL_ASSIGN_OR_RETURN(*value, DeviceLimit(*transport, deviceId, kind, kApi));
    return absl::OkStatus();
  });
}

aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtSetDeviceResLimit";
    ACL_ASSIGN_OR_RETURN(int kind, LimitType(type, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, kApi));
    ACL_RETURN_IF_ERROR(CheckLimit(*transport, deviceId, kind, value, kApi));
    DeviceLimits::Get().Set(deviceId, kind, value);
    return absl::OkStatus();
  });
}

aclError aclrtResetDeviceResLimit(int32_t deviceId) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtResetDeviceResLimit";
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_RETURN_IF_ERROR(acl_client::CheckDeviceExists(*transport, deviceId, kApi));
    DeviceLimits::Get().Reset(deviceId);
    return absl::OkStatus();
  });
}

aclError aclrtGetStreamResLimit(aclrtStream stream, aclrtDevResLimitType type, uint32_t* value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetStreamResLimit";
    if (value == nullptr) return NullArgument(kApi, "value");
    ACL_ASSIGN_OR_RETURN(int kind, LimitType(type, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(StreamFacts facts, acl_client::StreamFactsOf(stream, kApi));
    ACL_ASSIGN_OR_RETURN(*value, StreamLimit(*transport, facts, kind, kApi));
    return absl::OkStatus();
  });
}

aclError aclrtSetStreamResLimit(aclrtStream stream, aclrtDevResLimitType type, uint32_t value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtSetStreamResLimit";
    ACL_ASSIGN_OR_RETURN(int kind, LimitType(type, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(StreamFacts facts, acl_client::StreamFactsOf(stream, kApi));
    ACL_RETURN_IF_ERROR(CheckLimit(*transport, facts.device, kind, value, kApi));
    any_limit_set.store(true, std::memory_order_relaxed);
    return UpdateStreamLimits(stream, kApi, [&](Limits& limits) { limits[kind] = value; });
  });
}

aclError aclrtResetStreamResLimit(aclrtStream stream) {
  return Api([&]() -> absl::Status {
    ACL_RETURN_IF_ERROR(Connected().status());
    return UpdateStreamLimits(stream, "aclrtResetStreamResLimit",
                              [](Limits& limits) { limits = {0, 0}; });
  });
}

aclError aclrtUseStreamResInCurrentThread(aclrtStream stream) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtUseStreamResInCurrentThread";
    ACL_RETURN_IF_ERROR(Connected().status());
    ACL_ASSIGN_OR_RETURN(uint64_t id, acl_client::ResolveStream(stream, kApi));
    thread_stream = id;
    return absl::OkStatus();
  });
}

aclError aclrtUnuseStreamResInCurrentThread(aclrtStream stream) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtUnuseStreamResInCurrentThread";
    ACL_RETURN_IF_ERROR(Connected().status());
    ACL_ASSIGN_OR_RETURN(uint64_t id, acl_client::ResolveStream(stream, kApi));
    if (thread_stream != id) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": this thread does not use that stream's limits"));
    }
    thread_stream.reset();
    return absl::OkStatus();
  });
}

aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, uint32_t* value) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtGetResInCurrentThread";
    if (value == nullptr) return NullArgument(kApi, "value");
    ACL_ASSIGN_OR_RETURN(int kind, LimitType(type, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ClientRuntime& runtime = ClientRuntime::Get();
    // A stream destroyed since the thread chose it no longer counts.
    std::optional<StreamFacts> facts;
    if (thread_stream.has_value()) facts = runtime.handles().FindStream(*thread_stream);
    if (facts.has_value()) {
      ACL_ASSIGN_OR_RETURN(*value, StreamLimit(*transport, *facts, kind, kApi));
      return absl::OkStatus();
    }
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, runtime.RequireContext());
    ACL_ASSIGN_OR_RETURN(*value, DeviceLimit(*transport, context.device, kind, kApi));
    return absl::OkStatus();
  });
}

}  // extern "C"
