// C entry points for streams and kernel launches (SPEC sections 5 and 8).
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_rt.h"
#include "acl/acl_sim.h"
#include "client/allocator_registry.h"
#include "client/api_support.h"
#include "client/stream_state_callbacks.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::CurrentThreadId;
using acl_client::NullArgument;
using acl_client::ResolveEvent;
using acl_client::ResolveStream;
using acl_client::ToHandle;
using acl_client::Transport;

namespace {

// Stream priorities: 0 is the greatest, kLeastPriority the least.
constexpr uint32_t kLeastPriority = 7;

absl::Status CheckPriority(uint64_t priority, const char* api) {
  if (priority <= kLeastPriority) return absl::OkStatus();
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(api, ": priority ", priority,
                                                               " is outside 0..", kLeastPriority));
}

absl::Status CreateStream(aclrtStream* stream, uint32_t priority, uint32_t flags, const char* api) {
  if (stream == nullptr) return NullArgument(api, "stream");
  ACL_RETURN_IF_ERROR(CheckPriority(priority, api));
  ClientRuntime& runtime = ClientRuntime::Get();
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, runtime.RequireContext());
  ACL_ASSIGN_OR_RETURN(uint64_t created,
                       transport->CreateStream(context.context, priority, flags,
                                               acl_client::SaturatesFloats(context.device)));
  runtime.handles().AddStream(created, acl_client::StreamFacts{context.device, priority, flags});
  acl_client::StreamStateCallbacks::Get().Notify({created}, ACL_RT_STREAM_STATE_CREATE_POST);
  *stream = ToHandle(created);
  return absl::OkStatus();
}

absl::Status DestroyStream(aclrtStream stream, bool force, const char* api) {
  if (stream == nullptr) return NullArgument(api, "stream");
  ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, api));
  if (!force) ACL_RETURN_IF_ERROR(acl_client::CheckNotOwnCallback(id, api));
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  acl_client::StreamStateCallbacks::Get().Notify({id}, ACL_RT_STREAM_STATE_DESTROY_PRE);
  ACL_RETURN_IF_ERROR(transport->DestroyStream(id, force));
  ClientRuntime& runtime = ClientRuntime::Get();
  runtime.handles().RemoveStream(id);
  runtime.callbacks().ForgetStream(id);
  acl_client::AllocatorRegistry::Get().Unregister(id);  // a stream takes its allocator along
  return absl::OkStatus();
}

absl::Status SynchronizeStream(aclrtStream stream, int32_t timeout_ms, const char* api) {
  ACL_RETURN_IF_ERROR(acl_client::CheckTimeout(timeout_ms, api));
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, api));
  ACL_RETURN_IF_ERROR(acl_client::CheckNotOwnCallback(id, api));
  return acl_client::Synchronized(transport->SynchronizeStream(id, timeout_ms));
}

// The handles aclrtCreateStreamConfigHandle made and not yet destroyed: only
// those may be destroyed (a stray pointer is refused, not freed).
class StreamConfigHandles {
 public:
  static StreamConfigHandles& Get() {
    static StreamConfigHandles* handles = new StreamConfigHandles;
    return *handles;
  }
  aclrtStreamConfigHandle* Create() {
    auto handle = std::make_unique<aclrtStreamConfigHandle>();
    aclrtStreamConfigHandle* raw = handle.get();
    absl::MutexLock lock(&mu_);
    live_[raw] = std::move(handle);
    return raw;
  }
  bool Destroy(aclrtStreamConfigHandle* handle) {
    absl::MutexLock lock(&mu_);
    return live_.erase(handle) == 1;
  }

 private:
  absl::Mutex mu_;
  std::map<aclrtStreamConfigHandle*, std::unique_ptr<aclrtStreamConfigHandle>> live_
      ABSL_GUARDED_BY(mu_);
};

// Reads an unsigned option of `size` bytes (4 or 8: CANN's samples pass a
// uint32_t for the size_t flag field).
absl::StatusOr<uint64_t> UnsignedOption(const void* value, size_t size, const char* what) {
  if (size == sizeof(uint32_t)) {
    uint32_t narrow;
    std::memcpy(&narrow, value, sizeof(narrow));
    return narrow;
  }
  if (size == sizeof(uint64_t)) {
    uint64_t wide;
    std::memcpy(&wide, value, sizeof(wide));
    return wide;
  }
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat("aclrtSetStreamConfigOpt: ", what, " takes 4 or 8 bytes, not ",
                                      size));
}

// `attr` as an int: a value outside aclrtStreamConfigAttr may not be read as one.
absl::Status SetStreamConfigOpt(aclrtStreamConfigHandle* handle, int attr, const void* value,
                                size_t size) {
  constexpr const char* kApi = "aclrtSetStreamConfigOpt";
  if (handle == nullptr) return NullArgument(kApi, "handle");
  if (value == nullptr) return NullArgument(kApi, "attrValue");
  switch (attr) {
    case ACL_RT_STREAM_WORK_ADDR_PTR:
      if (size != sizeof(void*)) break;
      std::memcpy(&handle->workptr, value, sizeof(void*));
      return absl::OkStatus();
    case ACL_RT_STREAM_WORK_SIZE: {
      ACL_ASSIGN_OR_RETURN(uint64_t work_size, UnsignedOption(value, size, "the work size"));
      handle->workSize = work_size;
      return absl::OkStatus();
    }
    case ACL_RT_STREAM_FLAG: {
      ACL_ASSIGN_OR_RETURN(uint64_t flag, UnsignedOption(value, size, "the flag"));
      handle->flag = flag;
      return absl::OkStatus();
    }
    case ACL_RT_STREAM_PRIORITY: {
      ACL_ASSIGN_OR_RETURN(uint64_t priority, UnsignedOption(value, size, "the priority"));
      ACL_RETURN_IF_ERROR(CheckPriority(priority, kApi));
      handle->priority = static_cast<uint32_t>(priority);
      return absl::OkStatus();
    }
    default:
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": attribute ", attr,
                                          " is not an aclrtStreamConfigAttr"));
  }
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat(kApi, ": the work address takes ", sizeof(void*),
                                      " bytes, not ", size));
}

absl::Status CreateStreamV2(aclrtStream* stream, const aclrtStreamConfigHandle* handle) {
  constexpr const char* kApi = "aclrtCreateStreamV2";
  if (handle == nullptr) return NullArgument(kApi, "handle");
  if (handle->workptr != nullptr || handle->workSize != 0) {
    return acld::AclStatus(ACL_ERROR_API_NOT_SUPPORT,
                           absl::StrCat(kApi, ": a model work area (ACL_RT_STREAM_WORK_ADDR_PTR, "
                                              "ACL_RT_STREAM_WORK_SIZE) is for model streams, "
                                              "which acld does not provide"));
  }
  if (handle->flag > UINT32_MAX) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(kApi, ": flag ", handle->flag, " is not a stream flag"));
  }
  return CreateStream(stream, handle->priority, static_cast<uint32_t>(handle->flag), kApi);
}

}  // namespace

extern "C" {

aclrtStreamConfigHandle* aclrtCreateStreamConfigHandle(void) {
  return StreamConfigHandles::Get().Create();
}

aclError aclrtDestroyStreamConfigHandle(aclrtStreamConfigHandle* handle) {
  return Api([&]() -> absl::Status {
    if (handle == nullptr) return NullArgument("aclrtDestroyStreamConfigHandle", "handle");
    if (!StreamConfigHandles::Get().Destroy(handle)) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             "aclrtDestroyStreamConfigHandle: the handle was not made by "
                             "aclrtCreateStreamConfigHandle, or is already destroyed");
    }
    return absl::OkStatus();
  });
}

aclError aclrtSetStreamConfigOpt(aclrtStreamConfigHandle* handle, aclrtStreamConfigAttr attr,
                                 const void* attrValue, size_t valueSize) {
  return Api([&] {
    return SetStreamConfigOpt(handle, acl_client::RawEnum(attr), attrValue, valueSize);
  });
}

aclError aclrtCreateStreamV2(aclrtStream* stream, const aclrtStreamConfigHandle* handle) {
  return Api([&] { return CreateStreamV2(stream, handle); });
}

aclError aclrtRegStreamStateCallback(const char* regName, aclrtStreamStateCallback callback,
                                     void* args) {
  return Api([&] { return acl_client::StreamStateCallbacks::Get().Register(regName, callback, args); });
}

aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t* priority) {
  return Api([&]() -> absl::Status {
    if (priority == nullptr) return NullArgument("aclrtStreamGetPriority", "priority");
    ACL_ASSIGN_OR_RETURN(acl_client::StreamFacts facts,
                         acl_client::StreamFactsOf(stream, "aclrtStreamGetPriority"));
    *priority = facts.priority;
    return absl::OkStatus();
  });
}

aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t* flags) {
  return Api([&]() -> absl::Status {
    if (flags == nullptr) return NullArgument("aclrtStreamGetFlags", "flags");
    ACL_ASSIGN_OR_RETURN(acl_client::StreamFacts facts, acl_client::StreamFactsOf(stream, "aclrtStreamGetFlags"));
    *flags = facts.flags;
    return absl::OkStatus();
  });
}

aclError aclrtDeviceGetStreamPriorityRange(int32_t* leastPriority, int32_t* greatestPriority) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtDeviceGetStreamPriorityRange";
    if (leastPriority == nullptr) return NullArgument(kApi, "leastPriority");
    if (greatestPriority == nullptr) return NullArgument(kApi, "greatestPriority");
    *leastPriority = static_cast<int32_t>(kLeastPriority);
    *greatestPriority = 0;
    return absl::OkStatus();
  });
}

aclError aclrtCreateStream(aclrtStream* stream) {
  return Api([&] { return CreateStream(stream, 0, 0, "aclrtCreateStream"); });
}

aclError aclrtCreateStreamWithConfig(aclrtStream* stream, uint32_t priority, uint32_t flag) {
  return Api([&] { return CreateStream(stream, priority, flag, "aclrtCreateStreamWithConfig"); });
}

aclError aclrtDestroyStream(aclrtStream stream) {
  return Api([&] { return DestroyStream(stream, /*force=*/false, "aclrtDestroyStream"); });
}

aclError aclrtDestroyStreamForce(aclrtStream stream) {
  return Api([&] { return DestroyStream(stream, /*force=*/true, "aclrtDestroyStreamForce"); });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return Api([&] { return SynchronizeStream(stream, -1, "aclrtSynchronizeStream"); });
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  return Api(
      [&] { return SynchronizeStream(stream, timeout, "aclrtSynchronizeStreamWithTimeout"); });
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  return Api([&]() -> absl::Status {
    if (status == nullptr) return NullArgument("aclrtStreamQuery", "status");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, "aclrtStreamQuery"));
    ACL_ASSIGN_OR_RETURN(bool idle, transport->StreamIdle(id));
    *status = idle ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
    return absl::OkStatus();
  });
}

aclError aclrtStreamGetId(aclrtStream stream, int32_t* streamId) {
  return Api([&]() -> absl::Status {
    if (streamId == nullptr) return NullArgument("aclrtStreamGetId", "streamId");
    ACL_RETURN_IF_ERROR(Connected().status());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, "aclrtStreamGetId"));
    *streamId = static_cast<int32_t>(id);
    return absl::OkStatus();
  });
}

aclError aclrtStreamAbort(aclrtStream stream) {
  return Api([&]() -> absl::Status {
    // CANN: the stream to abort cannot be null (not "the default stream").
    if (stream == nullptr) return NullArgument("aclrtStreamAbort", "stream");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, "aclrtStreamAbort"));
    return transport->AbortStream(id);
  });
}

aclError aclrtStreamStop(aclrtStream stream) {
  return Api([&]() -> absl::Status {
    // CANN: not the default stream.
    if (stream == nullptr) return NullArgument("aclrtStreamStop", "stream");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, "aclrtStreamStop"));
    return transport->StopStream(id);
  });
}

aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode) {
  return Api([&]() -> absl::Status {
    if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat("aclrtSetStreamFailureMode: mode ", mode,
                                          " is neither ACL_CONTINUE_ON_FAILURE nor "
                                          "ACL_STOP_ON_FAILURE"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, "aclrtSetStreamFailureMode"));
    return transport->SetStreamFailureMode(id, mode);
  });
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, "aclrtStreamWaitEvent"));
    ACL_ASSIGN_OR_RETURN(uint64_t event_id, ResolveEvent(event, "aclrtStreamWaitEvent"));
    ACL_RETURN_IF_ERROR(acl_client::CheckEventUse(event_id, acl_client::EventUse::kWait,
                                                  "aclrtStreamWaitEvent"));
    return acl_client::Enqueued(transport->StreamWaitEvent(stream_id, event_id, CurrentThreadId()));
  });
}

aclError aclsimLaunchKernel(const char* kernelName, uint32_t blockDim, const void* args,
                            size_t argsSize, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    if (kernelName == nullptr) return NullArgument("aclsimLaunchKernel", "kernelName");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    const std::vector<std::pair<std::string, size_t>>& kernels = transport->Kernels();
    auto kernel = std::find_if(kernels.begin(), kernels.end(),
                               [&](const auto& entry) { return entry.first == kernelName; });
    if (kernel == kernels.end()) {
      return acld::AclStatus(
          ACL_ERROR_INVALID_PARAM,
          absl::StrCat("aclsimLaunchKernel: no built-in kernel named '", kernelName, "'"));
    }
    if (blockDim == 0) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM, "aclsimLaunchKernel: blockDim must be > 0");
    }
    if (argsSize != kernel->second * sizeof(uint64_t) || (argsSize > 0 && args == nullptr)) {
      return acld::AclStatus(
          ACL_ERROR_INVALID_PARAM,
          absl::StrCat("aclsimLaunchKernel: ", kernelName, " takes ",
                       kernel->second * sizeof(uint64_t), " bytes of arguments, got ", argsSize));
    }
    ACL_ASSIGN_OR_RETURN(uint64_t stream_id, ResolveStream(stream, "aclsimLaunchKernel"));
    acld::KernelRequest request{kernelName, blockDim, std::vector<uint64_t>(kernel->second),
                                acl_client::CoreLimitsOfStream(stream_id)};
    if (argsSize > 0) std::memcpy(request.args.data(), args, argsSize);
    return acl_client::Enqueued(transport->LaunchKernel(stream_id, CurrentThreadId(), request));
  });
}

aclError aclsimGetKernelCount(uint32_t* count) {
  return Api([&]() -> absl::Status {
    if (count == nullptr) return NullArgument("aclsimGetKernelCount", "count");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    *count = static_cast<uint32_t>(transport->Kernels().size());
    return absl::OkStatus();
  });
}

aclError aclsimGetKernel(uint32_t index, const char** name, uint32_t* argCount) {
  return Api([&]() -> absl::Status {
    if (name == nullptr) return NullArgument("aclsimGetKernel", "name");
    if (argCount == nullptr) return NullArgument("aclsimGetKernel", "argCount");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    const std::vector<std::pair<std::string, size_t>>& kernels = transport->Kernels();
    if (index >= kernels.size()) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat("aclsimGetKernel: index ", index, " is not below ",
                                          kernels.size()));
    }
    *name = kernels[index].first.c_str();
    *argCount = static_cast<uint32_t>(kernels[index].second);
    return absl::OkStatus();
  });
}

}  // extern "C"
