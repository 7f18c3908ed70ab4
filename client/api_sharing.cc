// Sharing with other processes: device memory by key (aclrtIpcMem*), events
// (aclrtIpc*EventHandle), notifies (aclrtNotify*Key, *ImportPid) and the pid a
// whitelist names (aclrtDeviceGetBareTgid). acld holds the exports and
// checks every import against the kernel's word on who is asking
// (daemon/core/memory_exports.h); docs/api-compat.md says what programs see.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "acl/acl.h"
#include "client/api_support.h"
#include "client/client_runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

using acl_client::Api;
using acl_client::Connected;
using acl_client::NullArgument;
using acl_client::Transport;

namespace {

// CANN's key: 64 characters and the terminating NUL.
constexpr size_t kKeyBytes = 65;

absl::Status Invalid(const std::string& message) {
  return acld::AclStatus(ACL_ERROR_INVALID_PARAM, message);
}

// A key the caller passed: a C string of at most 64 characters.
absl::StatusOr<std::string> KeyOf(const char* key, const char* api) {
  if (key == nullptr) return NullArgument(api, "key");
  const size_t length = strnlen(key, kKeyBytes);
  if (length == 0 || length == kKeyBytes) {
    return Invalid(absl::StrCat(api, ": key is not a key of aclrtIpcMemGetExportKey (",
                                length == 0 ? "empty" : "longer than 64 characters", ")"));
  }
  return std::string(key, length);
}

// The caller's buffer for a key: not NULL and room for CANN's 65 bytes.
absl::Status CheckKeyBuffer(const char* key, size_t len, const char* api) {
  if (key == nullptr) return NullArgument(api, "key");
  if (len < kKeyBytes) {
    return Invalid(absl::StrCat(api, ": len ", len, " is less than a key's ", kKeyBytes, " bytes"));
  }
  return absl::OkStatus();
}

// Copies a key from acld, with its NUL, into a buffer CheckKeyBuffer passed.
absl::Status WriteKey(const std::string& exported, char* key, const char* api) {
  if (exported.size() >= kKeyBytes) {
    return acld::AclStatus(ACL_ERROR_INTERNAL_ERROR, absl::StrCat(api, ": malformed key"));
  }
  std::memcpy(key, exported.c_str(), exported.size() + 1);
  return absl::OkStatus();
}

}  // namespace

extern "C" {

aclError aclrtIpcMemGetExportKey(void* devPtr, size_t size, char* key, size_t len,
                                 uint64_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcMemGetExportKey";
    if (devPtr == nullptr) return NullArgument(kApi, "devPtr");
    ACL_RETURN_IF_ERROR(CheckKeyBuffer(key, len, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(std::string exported,
                         transport->ExportMemory(acl_client::HandleId(devPtr), size, flags));
    return WriteKey(exported, key, kApi);
  });
}

aclError aclrtIpcMemSetImportPid(const char* key, int32_t* pid, size_t num) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcMemSetImportPid";
    ACL_ASSIGN_OR_RETURN(std::string name, KeyOf(key, kApi));
    if (pid == nullptr) return NullArgument(kApi, "pid");
    if (num == 0) return Invalid(absl::StrCat(kApi, ": num must be > 0"));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->SetImportPids(name, std::vector<int32_t>(pid, pid + num));
  });
}

aclError aclrtIpcMemSetAttr(const char* key, aclrtIpcMemAttrType type, uint64_t attr) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcMemSetAttr";
    ACL_ASSIGN_OR_RETURN(std::string name, KeyOf(key, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->SetExportAttribute(name, acl_client::RawEnum(type), attr);
  });
}

aclError aclrtIpcMemImportByKey(void** devPtr, const char* key, uint64_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcMemImportByKey";
    if (devPtr == nullptr) return NullArgument(kApi, "devPtr");
    ACL_ASSIGN_OR_RETURN(std::string name, KeyOf(key, kApi));
    if (flags > ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS) {
      return Invalid(absl::StrCat(kApi, ": flags ", flags,
                                  " is not ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT or "
                                  "_ENABLE_PEER_ACCESS"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(uint64_t address, transport->ImportMemory(name));
    *devPtr = acl_client::ToHandle(address);
    return absl::OkStatus();
  });
}

aclError aclrtIpcMemClose(const char* key) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcMemClose";
    ACL_ASSIGN_OR_RETURN(std::string name, KeyOf(key, kApi));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->CloseMemoryKey(name);
  });
}

aclError aclrtIpcGetEventHandle(aclrtEvent event, aclrtIpcEventHandle* handle) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcGetEventHandle";
    if (event == nullptr) return NullArgument(kApi, "event");
    if (handle == nullptr) return NullArgument(kApi, "handle");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(std::string key, transport->ShareEvent(acl_client::HandleId(event)));
    if (key.size() != sizeof(handle->reserved)) {
      return acld::AclStatus(ACL_ERROR_INTERNAL_ERROR, absl::StrCat(kApi, ": malformed key"));
    }
    std::memcpy(handle->reserved, key.data(), key.size());  // the key is the whole handle
    return absl::OkStatus();
  });
}

aclError aclrtIpcOpenEventHandle(aclrtIpcEventHandle handle, aclrtEvent* event) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtIpcOpenEventHandle";
    if (event == nullptr) return NullArgument(kApi, "event");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(
        acld::SharedEventInfo opened,
        transport->OpenSharedEvent(std::string(handle.reserved, sizeof(handle.reserved))));
    // Used as an event of aclrtCreateEventExWithFlag, as its owner made it.
    acl_client::ClientRuntime::Get().handles().AddEvent(
        opened.event, acl_client::EventFacts{opened.device, opened.flags, /*ex=*/true});
    *event = acl_client::ToHandle(opened.event);
    return absl::OkStatus();
  });
}

aclError aclrtNotifyGetExportKey(aclrtNotify notify, char* key, size_t len, uint64_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtNotifyGetExportKey";
    if (notify == nullptr) return NullArgument(kApi, "notify");
    ACL_RETURN_IF_ERROR(CheckKeyBuffer(key, len, kApi));
    if (flags != ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT &&
        flags != ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION) {
      return Invalid(absl::StrCat(kApi, ": flags ", flags,
                                  " is not ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT or "
                                  "_DISABLE_PID_VALIDATION"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(std::string exported,
                         transport->ShareNotify(acl_client::HandleId(notify),
                                                flags == ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT));
    return WriteKey(exported, key, kApi);
  });
}

aclError aclrtNotifySetImportPid(aclrtNotify notify, int32_t* pid, size_t num) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtNotifySetImportPid";
    if (notify == nullptr) return NullArgument(kApi, "notify");
    if (pid == nullptr) return NullArgument(kApi, "pid");
    if (num == 0) return Invalid(absl::StrCat(kApi, ": num must be > 0"));
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    return transport->SetNotifyImportPids(acl_client::HandleId(notify),
                                          std::vector<int32_t>(pid, pid + num));
  });
}

aclError aclrtNotifyImportByKey(aclrtNotify* notify, const char* key, uint64_t flags) {
  return Api([&]() -> absl::Status {
    constexpr const char* kApi = "aclrtNotifyImportByKey";
    if (notify == nullptr) return NullArgument(kApi, "notify");
    ACL_ASSIGN_OR_RETURN(std::string name, KeyOf(key, kApi));
    if (flags != ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT &&
        flags != ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS) {
      return Invalid(absl::StrCat(kApi, ": flags ", flags,
                                  " is not ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT or "
                                  "_ENABLE_PEER_ACCESS"));
    }
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(acld::SharedNotifyInfo imported, transport->ImportNotify(name));
    acl_client::ClientRuntime::Get().handles().AddNotify(imported.notify, imported.device);
    *notify = acl_client::ToHandle(imported.notify);
    return absl::OkStatus();
  });
}

aclError aclrtDeviceGetBareTgid(int32_t* pid) {
  return Api([&]() -> absl::Status {
    if (pid == nullptr) return NullArgument("aclrtDeviceGetBareTgid", "pid");
    ACL_ASSIGN_OR_RETURN(Transport * transport, Connected());
    ACL_ASSIGN_OR_RETURN(*pid, transport->PeerPid());
    return absl::OkStatus();
  });
}

}  // extern "C"
