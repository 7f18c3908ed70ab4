#include "daemon/server/request_dispatcher.h"

#include <string>

#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acld::server {
namespace {

using acl::v1::ClientMessage;
using acl::v1::Reply;

void SetStatus(const absl::Status& status, Reply& reply) {
  reply.set_acl_error(AclCodeOf(status));
  if (!status.ok()) reply.set_error_message(std::string(status.message()));
}

void SetInitCount(const absl::StatusOr<uint64_t>& count, Reply& reply) {
  SetStatus(count.status(), reply);
  if (count.ok()) reply.mutable_init_count()->set_count(*count);
}

InitSettings ToInitSettings(const acl::v1::InitializeRequest& request) {
  InitSettings settings;
  settings.config_content = request.config_content();
  if (request.has_default_device()) settings.default_device = request.default_device();
  settings.settings.insert(request.settings().begin(), request.settings().end());
  return settings;
}

}  // namespace

void DispatchRequest(Runtime& runtime, SessionId session, const ClientMessage& request,
                     Reply& reply) {
  switch (request.body_case()) {
    case ClientMessage::kInitCount:
      SetInitCount(runtime.InitCount(session), reply);
      return;
    case ClientMessage::kAddInitReference:
      SetInitCount(runtime.AddInitReference(session), reply);
      return;
    case ClientMessage::kInitialize:
      SetStatus(runtime.Initialize(session, ToInitSettings(request.initialize())), reply);
      return;
    case ClientMessage::kAbortInit:
      SetStatus(runtime.AbortInit(session), reply);
      return;
    case ClientMessage::kDropInitReference:
      SetInitCount(runtime.DropInitReference(session), reply);
      return;
    case ClientMessage::kFinalize:
      SetStatus(runtime.Finalize(session), reply);
      return;
    case ClientMessage::kGetDeviceCount:
      reply.mutable_device_count()->set_count(runtime.DeviceCount());
      return;
    case ClientMessage::kSetDevice:
      SetStatus(runtime.SetDevice(session, request.set_device().device_id()), reply);
      return;
    case ClientMessage::kResetDevice:
      SetStatus(runtime.ResetDevice(session, request.reset_device().device_id(),
                                    request.reset_device().force()),
                reply);
      return;
    case ClientMessage::kHello:
      SetStatus(AclStatus(ACL_ERROR_INVALID_PARAM, "the session is already open"), reply);
      return;
    case ClientMessage::BODY_NOT_SET:
      break;
  }
  SetStatus(AclStatus(ACL_ERROR_API_NOT_SUPPORT,
                      "request not understood by this acld (is the client newer than the daemon?)"),
            reply);
}

}  // namespace acld::server
