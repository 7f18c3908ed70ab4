#include "client/api_support.h"

#include "absl/strings/str_cat.h"
#include "proto/acl/acl_status.h"

namespace acl_client {

absl::Status NullArgument(const char* api, const char* argument) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat(api, ": ", argument, " must not be NULL"));
}

absl::StatusOr<Transport*> Connected() { return ClientRuntime::Get().transport(); }

absl::StatusOr<uint64_t> ResolveStream(const void* stream, const char* api) {
  ClientRuntime& runtime = ClientRuntime::Get();
  if (stream == nullptr) {
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, runtime.RequireContext());
    return context.default_stream;
  }
  if (!runtime.handles().StreamDevice(HandleId(stream)).has_value()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api,
                                        ": the stream handle is not a live stream of this "
                                        "process"));
  }
  return HandleId(stream);
}

absl::StatusOr<uint64_t> ResolveEvent(const void* event, const char* api) {
  if (event == nullptr) return NullArgument(api, "event");
  if (!ClientRuntime::Get().handles().HasEvent(HandleId(event))) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api,
                                        ": the event handle is not a live event of this "
                                        "process"));
  }
  return HandleId(event);
}

absl::StatusOr<uint64_t> ResolveNotify(const void* notify, const char* api) {
  if (notify == nullptr) return NullArgument(api, "notify");
  if (!ClientRuntime::Get().handles().HasNotify(HandleId(notify))) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api,
                                        ": the notify handle is not a live notify of this "
                                        "process"));
  }
  return HandleId(notify);
}

absl::Status CheckEventUse(uint64_t event, EventUse use, const char* api) {
  std::optional<EventFacts> facts = ClientRuntime::Get().handles().FindEvent(event);
  if (!facts.has_value() || !facts->ex) return absl::OkStatus();
  if (use == EventUse::kWait) {
    // Another process's record is what an IPC event is waited for.
    if (facts->flags & (ACL_EVENT_SYNC | ACL_EVENT_IPC)) return absl::OkStatus();
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": an event made by aclrtCreateEventExWithFlag "
                                             "without ACL_EVENT_SYNC or ACL_EVENT_IPC cannot be "
                                             "waited for"));
  }
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                         absl::StrCat(api, ": an event made by aclrtCreateEventExWithFlag cannot "
                                           "be used here"));
}

absl::Status CheckDeviceExists(Transport& transport, int32_t device_id, const char* api) {
  if (device_id >= 0 && device_id < transport.DeviceCount()) return absl::OkStatus();
  return acld::AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                         absl::StrCat(api, ": device ", device_id, " does not exist"));
}

absl::Status CheckTimeout(int32_t timeout_ms, const char* api) {
  if (timeout_ms < -1) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": timeout ", timeout_ms,
                                        " is invalid (-1 waits forever, 0 polls, > 0 ms)"));
  }
  return absl::OkStatus();
}

absl::Status Enqueued(const absl::StatusOr<uint64_t>& task_id) {
  if (task_id.ok()) SetThreadLastTaskId(*task_id);
  return task_id.status();
}

absl::Status CheckNotOwnCallback(uint64_t stream, const char* api) {
  const bool own =
      stream == 0 ? CallbackDispatcher::InCallback() : CallbackDispatcher::InCallbackOf(stream);
  if (!own) return absl::OkStatus();
  return acld::AclStatus(ACL_ERROR_RT_NO_PERMISSION,
                         absl::StrCat(api,
                                      ": a callback cannot wait for its own stream (the "
                                      "stream is waiting for the callback)"));
}

absl::Status Synchronized(absl::Status status) {
  if (!status.ok()) ClientRuntime::Get().callbacks().WaitForFailureCallbacks();
  return status;
}

absl::StatusOr<StreamFacts> StreamFactsOf(const void* stream, const char* api) {
  ACL_RETURN_IF_ERROR(Connected().status());
  ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveStream(stream, api));
  std::optional<StreamFacts> facts = ClientRuntime::Get().handles().FindStream(id);
  if (!facts.has_value()) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat(api, ": the stream is not a live stream of this process"));
  }
  return *facts;
}

}  // namespace acl_client
