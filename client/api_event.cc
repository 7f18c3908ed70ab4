// C entry points for events (SPEC section 5).
#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::CurrentThreadId;
using acl_client::NullArgument;
using acl_client::ResolveEvent;
using acl_client::ToHandle;
using acl_client::Transport;

namespace {

absl::Status CreateEvent(aclrtEvent* event, uint32_t flags, const char* api, bool ex = false) {
  if (event == nullptr) return NullArgument(api, "event");
  ClientRuntime& runtime = ClientRuntime::Get();
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, runtime.RequireContext());
  ACL_ASSIGN_OR_RETURN(uint64_t created, transport->CreateEvent(context.device, flags));
  runtime.handles().AddEvent(created, acl_client::EventFacts{context.device, flags, ex});
  *event = ToHandle(created);
  return absl::OkStatus();
}

absl::Status SynchronizeEvent(aclrtEvent event, int32_t timeout_ms, const char* api) {
  ACL_RETURN_IF_ERROR(acl_client::CheckTimeout(timeout_ms, api));
  ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
  ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveEvent(event, api));
  return acl_client::Synchronized(transport->SynchronizeEvent(id, timeout_ms));
}

}  // namespace

extern "C" {

aclError aclrtCreateEvent(aclrtEvent* event) {
  return Api([&] { return CreateEvent(event, ACL_EVENT_SYNC, "aclrtCreateEvent"); });
}

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  return Api([&] { return CreateEvent(event, flag, "aclrtCreateEventWithFlag"); });
}

aclError aclrtCreateEventExWithFlag(aclrtEvent* event, uint32_t flag) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtCreateEventExWithFlag";
    constexpr uint32_t kKnown = ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC |
                                ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_IPC;
    if ((flag & ~kKnown) != 0) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat(kApi, ": flag 0x", absl::Hex(flag),
                                          " has bits that are no ACL_EVENT_* of this call"));
    }
    return CreateEvent(event, flag, kApi, /*ex=*/true);
  });
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveEvent(event, "aclrtDestroyEvent"));
    ACL_RETURN_IF_ERROR(transport->DestroyEvent(id));
    ClientRuntime::Get().handles().RemoveEvent(id);
    return absl::OkStatus();
  });
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    ACL_RETURN_IF_ERROR(acl_client::EnqueueOnStream(
        event, stream, "aclrtRecordEvent", ResolveEvent,
        [](Transport& transport, uint64_t event_id, uint64_t stream_id) {
          return transport.RecordEvent(event_id, stream_id, CurrentThreadId());
        }));
    // Another process may learn of an IPC event's record from this one at
    // once (a file, a pipe) and wait for it: the record must be in acld,
    // not still in this process's channel, when the call returns. A query
    // answered after it guarantees that.
    const uint64_t id = acl_client::HandleId(event);
    std::optional<acl_client::EventFacts> facts = ClientRuntime::Get().handles().FindEvent(id);
    if (facts.has_value() && (facts->flags & ACL_EVENT_IPC) != 0) {
      ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
      ACL_RETURN_IF_ERROR(transport->QueryEvent(id).status());
    }
    return absl::OkStatus();
  });
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  return Api([&]() -> absl::Status {
    if (event != nullptr) {
      ACL_RETURN_IF_ERROR(acl_client::CheckEventUse(acl_client::HandleId(event),
                                                    acl_client::EventUse::kReset,
                                                    "aclrtResetEvent"));
    }
    return acl_client::EnqueueOnStream(
        event, stream, "aclrtResetEvent", ResolveEvent,
        [](Transport& transport, uint64_t event_id, uint64_t stream_id) {
          return transport.ResetEvent(event_id, stream_id, CurrentThreadId());
        });
  });
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return Api([&] { return SynchronizeEvent(event, -1, "aclrtSynchronizeEvent"); });
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
  return Api([&] { return SynchronizeEvent(event, timeout, "aclrtSynchronizeEventWithTimeout"); });
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  return Api([&]() -> absl::Status {
    if (status == nullptr) return NullArgument("aclrtQueryEvent", "status");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveEvent(event, "aclrtQueryEvent"));
    ACL_RETURN_IF_ERROR(
        acl_client::CheckEventUse(id, acl_client::EventUse::kQuery, "aclrtQueryEvent"));
    ACL_ASSIGN_OR_RETURN(acld::EventStatus result, transport->QueryEvent(id));
    *status = result.complete ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return absl::OkStatus();
  });
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  return Api([&]() -> absl::Status {
    if (status == nullptr) return NullArgument("aclrtQueryEventStatus", "status");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveEvent(event, "aclrtQueryEventStatus"));
    ACL_ASSIGN_OR_RETURN(acld::EventStatus result, transport->QueryEvent(id));
    *status = result.recorded_and_complete ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                                           : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return absl::OkStatus();
  });
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  return Api([&]() -> absl::Status {
    if (ms == nullptr) return NullArgument("aclrtEventElapsedTime", "ms");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t start, ResolveEvent(startEvent, "aclrtEventElapsedTime"));
    ACL_ASSIGN_OR_RETURN(uint64_t end, ResolveEvent(endEvent, "aclrtEventElapsedTime"));
    ACL_ASSIGN_OR_RETURN(*ms, transport->EventElapsedMs(start, end));
    return absl::OkStatus();
  });
}

aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t* timestamp) {
  return Api([&]() -> absl::Status {
    if (timestamp == nullptr) return NullArgument("aclrtEventGetTimestamp", "timestamp");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveEvent(event, "aclrtEventGetTimestamp"));
    ACL_ASSIGN_OR_RETURN(*timestamp, transport->EventTimestampUs(id));
    return absl::OkStatus();
  });
}

}  // extern "C"
