// C entry points for notifies (docs/api-compat.md, "Notify").
#include <limits>

#include "absl/strings/str_cat.h"
#include "acl/acl_rt.h"
#include "client/api_support.h"
#include "proto/acl/acl_status.h"

using acl_client::Api;
using acl_client::ClientRuntime;
using acl_client::Connected;
using acl_client::CurrentThreadId;
using acl_client::NullArgument;
using acl_client::ResolveNotify;
using acl_client::ToHandle;
using acl_client::Transport;

extern "C" {

aclError aclrtCreateNotify(aclrtNotify* notify, uint64_t flag) {
  return Api([&]() -> absl::Status {
    if (notify == nullptr) return NullArgument("aclrtCreateNotify", "notify");
    if (flag != ACL_NOTIFY_DEFAULT && flag != ACL_NOTIFY_DEVICE_USE_ONLY) {
      return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                             absl::StrCat("aclrtCreateNotify: unknown flag ", flag,
                                          " (ACL_NOTIFY_DEFAULT or ACL_NOTIFY_DEVICE_USE_ONLY)"));
    }
    ClientRuntime& runtime = ClientRuntime::Get();
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::ContextInfo context, runtime.RequireContext());
    ACL_ASSIGN_OR_RETURN(uint64_t created, transport->CreateNotify(context.device));
    runtime.handles().AddNotify(created, context.device);
    *notify = ToHandle(created);
    return absl::OkStatus();
  });
}

aclError aclrtDestroyNotify(aclrtNotify notify) {
  return Api([&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveNotify(notify, "aclrtDestroyNotify"));
    ACL_RETURN_IF_ERROR(transport->DestroyNotify(id));
    ClientRuntime::Get().handles().RemoveNotify(id);
    return absl::OkStatus();
  });
}

aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream) {
  return Api([&] {
    return acl_client::EnqueueOnStream(
        notify, stream, "aclrtRecordNotify", ResolveNotify,
        [](Transport& transport, uint64_t notify_id, uint64_t stream_id) {
          return transport.RecordNotify(notify_id, stream_id, CurrentThreadId());
        });
  });
}

aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout) {
  return Api([&] {
    return acl_client::EnqueueOnStream(
        notify, stream, "aclrtWaitAndResetNotify", ResolveNotify,
        [timeout](Transport& transport, uint64_t notify_id, uint64_t stream_id) {
          return transport.WaitAndResetNotify(notify_id, stream_id, timeout, CurrentThreadId());
        });
  });
}

aclError aclrtGetNotifyId(aclrtNotify notify, uint32_t* notifyId) {
  return Api([&]() -> absl::Status {
    if (notifyId == nullptr) return NullArgument("aclrtGetNotifyId", "notifyId");
    ACL_ASSIGN_OR_RETURN(uint64_t id, ResolveNotify(notify, "aclrtGetNotifyId"));
    if (id > std::numeric_limits<uint32_t>::max()) {
      return acld::AclStatus(ACL_ERROR_RT_NO_NOTIFY_RESOURCE,
                             absl::StrCat("aclrtGetNotifyId: notify ", id, " has no 32-bit id"));
    }
    *notifyId = static_cast<uint32_t>(id);
    return absl::OkStatus();
  });
}

}  // extern "C"
