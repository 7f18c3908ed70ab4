#include "daemon/core/runtime.h"

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "daemon/core/acl_status.h"

namespace acld {

Runtime::Runtime(std::unique_ptr<hal::Backend> backend) : backend_(std::move(backend)) {}

Runtime::~Runtime() {
  absl::MutexLock lock(&mu_);
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    if (backend_->device(id).is_up()) backend_->device(id).Release();
  }
}

SessionId Runtime::OpenSession(const PeerInfo& peer) {
  absl::MutexLock lock(&mu_);
  return sessions_.Open(peer, absl::Now()).id;
}

bool Runtime::CloseSession(SessionId id) {
  absl::MutexLock lock(&mu_);
  Session* session = sessions_.Find(id);
  if (session == nullptr) return false;
  ReleaseSessionResources(*session);
  init_.RemoveSession(id);
  sessions_.Close(id);
  UpdateDevicePower();
  return true;
}

absl::StatusOr<Session*> Runtime::FindSession(SessionId id) {
  Session* session = sessions_.Find(id);
  if (session == nullptr) {
    return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                     absl::StrCat("session ", id, " is not open in the runtime"));
  }
  return session;
}

absl::StatusOr<uint64_t> Runtime::InitCount(SessionId id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  return init_.CountOf(id);
}

absl::StatusOr<uint64_t> Runtime::AddInitReference(SessionId id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  return init_.AddReferenceIfInitialized(id);
}

absl::Status Runtime::Initialize(SessionId id, const InitSettings& settings) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  if (settings.default_device.has_value() &&
      (*settings.default_device < 0 || *settings.default_device >= backend_->device_count())) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclInit: defaultDevice.default_device ", *settings.default_device,
                                  " is out of range; this host has ", backend_->device_count(),
                                  " devices (valid ids 0..", backend_->device_count() - 1, ")"));
  }
  absl::Status status = init_.Initialize(id, settings.config_content);
  if (!status.ok()) return status;
  (*session)->config = settings.settings;
  (*session)->has_default_device = settings.default_device.has_value();
  (*session)->default_device = settings.default_device.value_or(0);
  UpdateDevicePower();
  return absl::OkStatus();
}

absl::Status Runtime::AbortInit(SessionId id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  absl::Status status = init_.AbortInitialize(id);
  if (status.ok()) {
    (*session)->config.clear();
    (*session)->has_default_device = false;
  }
  UpdateDevicePower();
  return status;
}

absl::StatusOr<uint64_t> Runtime::DropInitReference(SessionId id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  return init_.DropReference(id);
}

absl::Status Runtime::Finalize(SessionId id) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  absl::Status status = init_.Finalize(id);
  if (!status.ok()) return status;
  ReleaseSessionResources(**session);
  (*session)->config.clear();
  (*session)->has_default_device = false;
  UpdateDevicePower();
  return absl::OkStatus();
}

int32_t Runtime::DeviceCount() const { return backend_->device_count(); }

absl::Status Runtime::CheckDeviceId(int32_t device_id) const {
  if (device_id < 0 || device_id >= backend_->device_count()) {
    return AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                     absl::StrCat("device id ", device_id, " is invalid; this host has ",
                                  backend_->device_count(), " devices"));
  }
  return absl::OkStatus();
}

absl::Status Runtime::SetDevice(SessionId id, int32_t device_id) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return valid;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  ++(*session)->device_refs[device_id];
  UpdateDevicePower();
  return absl::OkStatus();
}

absl::Status Runtime::ResetDevice(SessionId id, int32_t device_id, bool force) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return valid;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  auto& refs = (*session)->device_refs;
  auto it = refs.find(device_id);
  // As in CANN, resetting a device the process never set is harmless.
  if (it == refs.end()) return absl::OkStatus();
  if (force || --it->second == 0) refs.erase(it);
  UpdateDevicePower();
  return absl::OkStatus();
}

void Runtime::ReleaseSessionResources(Session& session) { session.device_refs.clear(); }

void Runtime::UpdateDevicePower() {
  const bool host_initialized = init_.host_count() > 0;
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    bool needed = host_initialized;
    for (const auto& [session_id, session] : sessions_.all()) {
      if (needed) break;
      needed = session.device_refs.count(id) > 0;
    }
    hal::Device& device = backend_->device(id);
    if (needed && !device.is_up()) {
      // The sim device cannot fail to come up; a real backend's failure would
      // surface at the first call that needs the device.
      device.BringUp().IgnoreError();
    } else if (!needed && device.is_up()) {
      device.Release();
    }
  }
}

RuntimeSnapshot Runtime::Snapshot() const {
  absl::MutexLock lock(&mu_);
  RuntimeSnapshot snapshot;
  snapshot.host_refcount = init_.host_count();
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    DeviceSnapshot device{backend_->device(id).info(), backend_->device(id).is_up(), 0};
    for (const auto& [session_id, session] : sessions_.all()) {
      device.sessions += session.device_refs.count(id) ? 1 : 0;
    }
    snapshot.devices.push_back(device);
  }
  for (const auto& [session_id, session] : sessions_.all()) {
    snapshot.sessions.push_back({session, init_.CountOf(session_id)});
  }
  return snapshot;
}

}  // namespace acld
