// IPC events and notifies: one session's ACL_EVENT_IPC event or notify,
// opened by others through a capability key (daemon/core/capability_key.h);
// a notify's also through the kernel's whitelist (kernel_whitelist.h). Every
// opener's handle names the owner's Event or Notify, so a record in any of
// them releases waits in all.
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "daemon/core/capability_key.h"
#include "daemon/core/runtime.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"

namespace acld {

absl::StatusOr<std::string> Runtime::ShareEvent(SessionId id, EventId event_id) {
  constexpr const char* kApi = "aclrtIpcGetEventHandle";
  ACL_ASSIGN_OR_RETURN(std::string key, NewCapabilityKey());
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = session->events.find(event_id);
  if (it == session->events.end()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(kApi, ": the event is not an event of this process"));
  }
  const std::shared_ptr<Event>& event = it->second;
  if (event->owner() != id || (event->flags() & ACL_EVENT_IPC) == 0) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(kApi, ": only an event this process created with "
                                        "ACL_EVENT_IPC (aclrtCreateEventExWithFlag) is shared"));
  }
  auto existing = shared_keys_.find(event.get());
  if (existing != shared_keys_.end()) return existing->second;  // one key per event
  shared_events_[key].event = event;
  shared_keys_[event.get()] = key;
  return key;
}

absl::StatusOr<Runtime::OpenedEvent> Runtime::OpenSharedEvent(SessionId id,
                                                              const std::string& key) {
  constexpr const char* kApi = "aclrtIpcOpenEventHandle";
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = shared_events_.find(key);
  if (it == shared_events_.end()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(kApi, ": no IPC event has this handle (never made, or its "
                                        "process destroyed it or ended)"));
  }
  SharedEvent& shared = it->second;
  const Event& event = *shared.event;
  if (event.owner() == id) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(kApi, ": the event is this process's own"));
  }
  auto opened = shared.openers.find(id);
  if (opened != shared.openers.end()) {
    return OpenedEvent{opened->second, event.device(), event.flags()};
  }
  ACL_RETURN_IF_ERROR(CheckGroupSees(*session, event.device(), kApi));
  ACL_RETURN_IF_ERROR(CheckEventQuotaLocked(*session, kApi, ACL_ERROR_RT_NO_EVENT_RESOURCE));
  const EventId handle = next_handle_++;
  session->events[handle] = shared.event;
  shared.openers[id] = handle;
  return OpenedEvent{handle, event.device(), event.flags()};
}

absl::Status Runtime::CheckGroupSees(const Session& session, int32_t device, const char* call) {
  if (session.group == nullptr || session.group->view().ToSession(device).has_value()) {
    return absl::OkStatus();
  }
  return AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                   absl::StrCat(call, ": it lives on a device outside this process's quota "
                                "group"));
}

void Runtime::RevokeHandleLocked(SessionId opener, uint64_t handle) {
  Session* session = sessions_.Find(opener);
  if (session == nullptr) return;
  session->events.erase(handle);
  session->notifies.erase(handle);
  if (session->revoked_handles.size() < Session::kMaxRevokedHandles) {
    session->revoked_handles.insert(handle);
  }
}

bool Runtime::ForgetEventLocked(SessionId id, const std::shared_ptr<Event>& event) {
  const bool owned = event->owner() == id;
  auto key = shared_keys_.find(event.get());
  if (key == shared_keys_.end()) return owned;
  auto it = shared_events_.find(key->second);
  if (!owned) {
    it->second.openers.erase(id);
    return false;
  }
  for (const auto& [opener, handle] : it->second.openers) RevokeHandleLocked(opener, handle);
  shared_events_.erase(it);
  shared_keys_.erase(key);
  return true;
}

absl::StatusOr<std::string> Runtime::ShareNotify(SessionId id, NotifyId notify_id,
                                                 bool pid_validation) {
  constexpr const char* kApi = "aclrtNotifyGetExportKey";
  ACL_ASSIGN_OR_RETURN(std::string key, NewCapabilityKey());
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = session->notifies.find(notify_id);
  if (it == session->notifies.end()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(kApi, ": the notify is not a notify of this process"));
  }
  auto existing = shared_keys_.find(it->second.get());
  if (existing != shared_keys_.end()) {  // one key per notify
    SharedNotify& shared = shared_notifies_[existing->second];
    if (shared.owner != id) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat(kApi, ": an imported notify is shared by its owner only"));
    }
    shared.pid_validation = pid_validation;
    return existing->second;
  }
  it->second->MarkShared();
  SharedNotify& shared = shared_notifies_[key];
  shared.notify = it->second;
  shared.owner = id;
  shared.pid_validation = pid_validation;
  shared_keys_[it->second.get()] = key;
  return key;
}

absl::Status Runtime::SetNotifyImportPids(SessionId id, NotifyId notify_id,
                                          const std::vector<int32_t>& pids) {
  constexpr const char* kApi = "aclrtNotifySetImportPid";
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = session->notifies.find(notify_id);
  if (it != session->notifies.end()) {
    auto key = shared_keys_.find(it->second.get());
    if (key != shared_keys_.end()) {
      SharedNotify& shared = shared_notifies_[key->second];
      if (shared.owner == id) {
        return shared.whitelist.Add(pids, BootTicksNow(), kApi,
                                    session->notify_whitelist_entries);
      }
    }
  }
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrCat(kApi, ": the notify is not one this process exported "
                                      "(aclrtNotifyGetExportKey)"));
}

absl::StatusOr<Runtime::OpenedNotify> Runtime::ImportNotify(SessionId id, const std::string& key) {
  constexpr const char* kApi = "aclrtNotifyImportByKey";
  ACL_ASSIGN_OR_RETURN(const KernelIdentity importer, WhitelistIdentity(id));
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  auto it = shared_notifies_.find(key);
  if (it == shared_notifies_.end()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat(kApi, ": no notify has this key (never made, or its process "
                                        "destroyed it or ended)"));
  }
  SharedNotify& shared = it->second;
  if (shared.owner == id) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, absl::StrCat(kApi, ": the notify is this process's own"));
  }
  auto opened = shared.openers.find(id);
  if (opened != shared.openers.end()) return OpenedNotify{opened->second, shared.notify->device()};
  // The device and the quota first: passing the whitelist binds its entry to
  // this session, which must then hold the notify (its end unbinds the entry).
  ACL_RETURN_IF_ERROR(CheckGroupSees(*session, shared.notify->device(), kApi));
  ACL_RETURN_IF_ERROR(CheckEventQuotaLocked(*session, kApi, ACL_ERROR_RT_NO_NOTIFY_RESOURCE));
  if (shared.pid_validation && !shared.whitelist.Admits(importer)) {
    return AclStatus(ACL_ERROR_RT_NO_PERMISSION,
                     absl::StrCat(kApi, ": process ", importer.pid,
                                  " is not on the notify's whitelist (the exporter adds it with "
                                  "aclrtNotifySetImportPid and the pid of aclrtDeviceGetBareTgid)"));
  }
  const NotifyId handle = next_handle_++;
  session->notifies[handle] = shared.notify;
  shared.openers[id] = handle;
  return OpenedNotify{handle, shared.notify->device()};
}

bool Runtime::ForgetNotifyLocked(SessionId id, const std::shared_ptr<Notify>& notify) {
  auto key = shared_keys_.find(notify.get());
  if (key == shared_keys_.end()) return true;  // not shared: the caller's own
  auto it = shared_notifies_.find(key->second);
  SharedNotify& shared = it->second;
  Session* owner = sessions_.Find(shared.owner);
  if (shared.owner != id) {
    shared.openers.erase(id);
    const size_t unbound = shared.whitelist.SessionEnded(id);
    if (owner != nullptr) KernelWhitelist::Uncount(owner->notify_whitelist_entries, unbound);
    return false;
  }
  if (owner != nullptr) {
    KernelWhitelist::Uncount(owner->notify_whitelist_entries, shared.whitelist.size());
  }
  for (const auto& [opener, handle] : shared.openers) RevokeHandleLocked(opener, handle);
  shared_notifies_.erase(it);
  shared_keys_.erase(key);
  return true;
}

std::vector<Runtime::SharedEventView> Runtime::SharedEventsSnapshot() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<SharedEventView> views;
  for (const auto& [key, shared] : shared_events_) {
    SharedEventView view{"event", key.substr(0, 8), shared.event->owner(),
                         shared.event->device(), {}};
    for (const auto& [opener, handle] : shared.openers) view.openers.push_back(opener);
    views.push_back(std::move(view));
  }
  for (const auto& [key, shared] : shared_notifies_) {
    SharedEventView view{"notify", key.substr(0, 8), shared.owner, shared.notify->device(), {}};
    for (const auto& [opener, handle] : shared.openers) view.openers.push_back(opener);
    views.push_back(std::move(view));
  }
  return views;
}

}  // namespace acld
