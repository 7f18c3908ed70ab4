#include "daemon/server/admin_service.h"

#include "absl/time/clock.h"
#include "daemon/server/version.h"

namespace acld::server {
namespace {

void ToProto(const SessionSnapshot& snapshot, acl::v1::SessionInfo& info) {
  const Session& session = snapshot.session;
  info.set_id(session.id);
  info.set_pid(session.peer.pid);
  info.set_uid(session.peer.uid);
  info.set_command(session.peer.command);
  info.set_refcount(static_cast<uint32_t>(snapshot.init_count));
  info.mutable_device_refs()->insert(session.device_refs.begin(), session.device_refs.end());
  info.set_connected_since_unix_ms(absl::ToUnixMillis(session.connected_since));
  info.mutable_config()->insert(session.config.begin(), session.config.end());
}

}  // namespace

grpc::Status AdminService::GetStatus(grpc::ServerContext*, const acl::v1::StatusRequest*,
                                     acl::v1::StatusReply* reply) {
  const RuntimeSnapshot snapshot = runtime_.Snapshot();
  reply->set_version(kAcldVersion);
  reply->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
  reply->set_host_refcount(static_cast<uint32_t>(snapshot.host_refcount));
  for (const DeviceSnapshot& device : snapshot.devices) {
    acl::v1::DeviceInfo* info = reply->add_devices();
    info->set_id(device.info.id);
    info->set_name(device.info.name);
    info->set_memory_bytes(device.info.memory_bytes);
    info->set_up(device.up);
    info->set_sessions(device.sessions);
  }
  for (const SessionSnapshot& session : snapshot.sessions) ToProto(session, *reply->add_sessions());
  reply->set_session_count(static_cast<uint32_t>(snapshot.sessions.size()));
  return grpc::Status::OK;
}

grpc::Status AdminService::ListSessions(grpc::ServerContext*, const acl::v1::SessionsRequest*,
                                        acl::v1::SessionsReply* reply) {
  for (const SessionSnapshot& session : runtime_.Snapshot().sessions) {
    ToProto(session, *reply->add_sessions());
  }
  return grpc::Status::OK;
}

}  // namespace acld::server
