#include "daemon/server/admin_service.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "daemon/server/client_descriptors.h"
#include "daemon/server/client_page_filler.h"
#include "daemon/server/health.h"
#include "daemon/server/memory_sealer.h"
#include "daemon/server/text_sanitizer.h"
#include "daemon/server/version.h"
#include "proto/acl/grpc_status.h"
#include "spdlog/spdlog.h"

namespace acld::server {
namespace {

// A session's uses beside its limits: the runtime's part from `snapshot`,
// the server's (shared memory, waiting calls) from `usage` (absent: a session
// whose handler has already gone).
void ToProto(const SessionSnapshot& snapshot,
             const std::map<SessionId, RuntimeService::SessionUsage>& usage,
             const SessionLimits& limits, acl::v1::SessionInfo& info) {
  const SessionSummary& session = snapshot.session;
  info.set_streams(static_cast<uint32_t>(session.streams));
  info.set_closing_streams(static_cast<uint32_t>(session.closing_streams));
  info.set_contexts(static_cast<uint32_t>(session.contexts));
  info.set_max_contexts(session.max_contexts);
  info.set_events(static_cast<uint32_t>(session.events));
  info.set_max_events(session.max_events);
  info.set_memory_bytes(snapshot.memory_bytes);
  info.set_memory_quota(snapshot.memory_quota);
  info.set_memory_allocations(snapshot.memory_allocations);
  info.set_max_memory_allocations(snapshot.max_memory_allocations);
  info.set_queued_bytes(snapshot.queued_bytes);
  info.set_queued_bytes_limit(snapshot.queued_bytes_limit);
  info.set_physical_handles(snapshot.physical.handles);
  info.set_address_reservations(snapshot.physical.reservations);
  info.set_address_mappings(snapshot.physical.mappings);
  info.set_reserved_address_bytes(snapshot.physical.reserved_bytes);
  info.set_noticed_revocations(static_cast<uint32_t>(snapshot.noticed_revocations));
  if (session.group != nullptr) info.set_group(session.group->id());
  auto found = usage.find(session.id);
  if (found != usage.end()) {
    info.set_host_memory_bytes(found->second.host_memory_bytes);
    info.set_host_memory_segments(found->second.host_memory_segments);
    info.set_waiting_calls(found->second.waiting_calls);
    info.set_carrier(found->second.channel_bytes > 0 ? "shm" : "grpc");
    info.set_channel_bytes(found->second.channel_bytes);
    info.set_protocol_version(found->second.protocol_version);
    info.set_outbound_bytes(found->second.outbound_bytes);
    info.set_inbound_bytes(found->second.inbound_bytes);
  }
  info.set_max_host_memory_bytes(limits.max_host_memory_per_session);
  info.set_max_host_memory_segments(limits.max_host_segments_per_session);
  info.set_max_waiting_calls(RuntimeService::max_waiting_calls());
  info.set_weight(session.weight);
  info.set_binaries(static_cast<uint32_t>(session.binaries));
  info.set_binary_bytes(snapshot.binary_bytes);
  info.set_max_binary_bytes(snapshot.binary_bytes_limit);
  info.set_pending_callbacks(static_cast<uint32_t>(snapshot.pending_callbacks));
  info.set_callback_timeouts(snapshot.callback_timeouts);
  info.set_id(session.id);
  info.set_pid(session.peer.pid);
  info.set_uid(session.peer.uid);
  info.set_gid(session.peer.gid);
  info.set_max_streams(session.max_streams);
  info.set_command(session.peer.command);
  info.set_refcount(static_cast<uint32_t>(snapshot.init_count));
  info.mutable_device_refs()->insert(session.device_refs.begin(), session.device_refs.end());
  info.set_connected_since_unix_ms(absl::ToUnixMillis(session.connected_since));
  // The client chose every byte of them (the core bounds how many and how long).
  for (const auto& [key, value] : session.config) {
    (*info.mutable_config())[SanitizeText(key)] = SanitizeText(value);
  }
}

// The fields every kind of shared memory shows alike (IPC exports and
// physical shareable handles); the caller adds what only its kind has.
template <typename ExportView>
acl::v1::SharedMemoryExport& AddExport(const ExportView& view, const char* kind,
                                       std::map<SessionId, int32_t>& pids,
                                       acl::v1::SharingReply* reply) {
  acl::v1::SharedMemoryExport& out = *reply->add_exports();
  out.set_kind(kind);
  out.set_key_prefix(view.key_prefix);
  out.set_owner_session(view.owner);
  out.set_owner_pid(pids[view.owner]);
  out.set_device(view.device);
  out.set_bytes(view.size);
  out.set_pid_validation(view.pid_validation);
  for (int32_t pid : view.whitelist) out.add_whitelist(pid);
  for (const auto& imported : view.imports) {
    acl::v1::SharedMemoryImport& in = *out.add_imports();
    in.set_session(imported.session);
    in.set_pid(pids[imported.session]);
  }
  return out;
}

// A group's record, limits and what its sessions hold now.
void ToProto(const GroupView& view, const RuntimeSnapshot& runtime, acl::v1::GroupInfo& info) {
  const GroupRecord& record = view.record;
  info.set_id(record.id);
  for (size_t i = 0; i < record.spec.devices.size(); ++i) {
    acl::v1::GroupDevice& device = *info.add_devices();
    device.set_device(record.spec.devices[i]);
    device.set_memory_limit(record.spec.memory_limits[i]);
    device.set_memory_used(view.group->MemoryUsed(record.spec.devices[i]));
  }
  info.set_max_streams(record.spec.max_streams);
  info.set_max_sessions(record.spec.max_sessions);
  info.mutable_labels()->insert(record.labels.begin(), record.labels.end());
  info.set_directory(view.directory);
  info.set_created_unix_seconds(record.created_unix_seconds);
  info.set_pending_identity_connections(static_cast<uint32_t>(view.pending_identity_connections));
  info.set_identity_busy(view.identity_busy);
  // A group is a tenant of its own (daemon/core/tenant.h).
  if (view.group == nullptr) return;
  const Tenant tenant(0, view.group);
  for (const TenantSnapshot& held : runtime.tenants) {
    if (!(held.tenant == tenant)) continue;
    info.set_sessions(held.sessions);
    info.set_streams(static_cast<uint32_t>(held.streams));
  }
}

grpc::Status NoQuotaGroups() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "acld serves no quota groups");
}

}  // namespace

grpc::Status AdminService::CreateGroup(grpc::ServerContext*,
                                       const acl::v1::CreateGroupRequest* request,
                                       acl::v1::GroupInfo* reply) {
  if (groups_ == nullptr) return NoQuotaGroups();
  QuotaGroupSpec spec;
  spec.devices.assign(request->devices().begin(), request->devices().end());
  // None: no limit; one: every device's; else one per device.
  if (request->memory_bytes_size() <= 1) {
    spec.memory_limits.assign(spec.devices.size(),
                              request->memory_bytes_size() == 1 ? request->memory_bytes(0) : 0);
  } else {
    spec.memory_limits.assign(request->memory_bytes().begin(), request->memory_bytes().end());
  }
  spec.max_streams = request->max_streams();
  spec.max_sessions = request->max_sessions();
  absl::StatusOr<GroupView> created = groups_->Create(
      std::move(spec), GroupLabels(request->labels().begin(), request->labels().end()));
  if (!created.ok()) return ToGrpcStatus(created.status());
  ToProto(*created, runtime_.Snapshot(), *reply);
  return grpc::Status::OK;
}

grpc::Status AdminService::ListGroups(grpc::ServerContext*, const acl::v1::GroupsRequest* request,
                                      acl::v1::GroupsReply* reply) {
  if (groups_ == nullptr) return grpc::Status::OK;
  absl::StatusOr<std::vector<GroupView>> views = groups_->List(request->id());
  if (!views.ok()) return ToGrpcStatus(views.status());
  const RuntimeSnapshot runtime = runtime_.Snapshot();
  for (const GroupView& view : *views) ToProto(view, runtime, *reply->add_groups());
  return grpc::Status::OK;
}

grpc::Status AdminService::DeleteGroup(grpc::ServerContext*,
                                       const acl::v1::DeleteGroupRequest* request,
                                       acl::v1::DeleteGroupReply* reply) {
  if (groups_ == nullptr) return NoQuotaGroups();
  absl::StatusOr<uint32_t> evicted =
      groups_->Delete(request->id(), [this](const QuotaGroup& group) {
        return sessions_.EndGroupSessions(group,
                                          "the operator deleted this process's quota group");
      });
  if (!evicted.ok()) return ToGrpcStatus(evicted.status());
  reply->set_evicted_sessions(*evicted);
  return grpc::Status::OK;
}

grpc::Status AdminService::LabelGroup(grpc::ServerContext*,
                                      const acl::v1::LabelGroupRequest* request,
                                      acl::v1::GroupInfo* reply) {
  if (groups_ == nullptr) return NoQuotaGroups();
  absl::StatusOr<GroupView> labelled =
      groups_->Label(request->id(), GroupLabels(request->set().begin(), request->set().end()),
                     {request->remove().begin(), request->remove().end()});
  if (!labelled.ok()) return ToGrpcStatus(labelled.status());
  ToProto(*labelled, runtime_.Snapshot(), *reply);
  return grpc::Status::OK;
}

grpc::Status AdminService::GetStatus(grpc::ServerContext*, const acl::v1::StatusRequest* request,
                                     acl::v1::StatusReply* reply) {
  const RuntimeSnapshot snapshot = runtime_.Snapshot();
  reply->set_version(kAcldVersion);
  reply->set_backend(snapshot.backend);
  reply->set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
  acl::v1::Histogram& latency = *reply->mutable_callback_latency();
  for (double bound : snapshot.callback_latency.upper_bounds) latency.add_upper_bounds(bound);
  for (uint64_t count : snapshot.callback_latency.cumulative_counts) {
    latency.add_cumulative_counts(count);
  }
  latency.set_count(snapshot.callback_latency.count);
  latency.set_sum(snapshot.callback_latency.sum_seconds);
  reply->set_host_refcount(static_cast<uint32_t>(snapshot.host_refcount));
  const absl::Status serving = health_ ? health_() : absl::OkStatus();
  for (const DeviceSnapshot& device : snapshot.devices) {
    acl::v1::DeviceInfo* info = reply->add_devices();
    info->set_id(device.info.id);
    info->set_name(device.info.name);
    info->set_memory_bytes(device.info.memory_bytes);
    info->set_up(device.up);
    info->set_sessions(device.sessions);
    info->set_used_bytes(device.used_bytes);
    info->set_compute_percent(device.utilization.compute_percent);
    info->set_memory_percent(device.utilization.memory_percent);
    info->set_disabled(device.disabled);
    info->set_tasks_completed(device.tasks.completed);
    info->set_tasks_failed(device.tasks.failed);
    info->set_tasks_discarded(device.tasks.discarded);
    const absl::Status health = DeviceHealth(serving, device.info.id, device.disabled);
    info->set_healthy(health.ok());
    info->set_unhealthy(std::string(health.message()));
    info->set_max_streams(device.info.objects.streams);
    info->set_max_events(device.info.objects.events);
    info->set_streams_per_uid(device.tenant_share.streams);
    info->set_events_per_uid(device.tenant_share.events);
    info->set_max_notifies(device.info.objects.notifies);
    info->set_notifies_per_uid(device.tenant_share.notifies);
  }
  const SessionLimits& limits = sessions_.limits();
  const std::map<SessionId, RuntimeService::SessionUsage> usage = sessions_.usage();
  if (!request->without_sessions()) {
    for (const SessionSnapshot& session : snapshot.sessions) {
      ToProto(session, usage, limits, *reply->add_sessions());
    }
  }
  reply->set_session_count(static_cast<uint32_t>(snapshot.sessions.size()));
  // The runtime's tenants, with the segments this layer maps for them, the
  // messages it holds for them and their streams not past Hello yet (a
  // tenant holding only those, its sessions just gone or not yet open, is
  // listed too).
  std::map<Tenant, uint64_t> segments = sessions_.segments().ByTenant();
  std::map<Tenant, uint64_t> messages = sessions_.messages().ByTenant();
  const RuntimeService::Counts counts = sessions_.counts();
  std::map<Tenant, uint64_t> pending = counts.pending_by_tenant;
  auto add_tenant = [&](const Tenant& tenant) {
    acl::v1::TenantUsage& usage_of = *reply->add_tenants();
    usage_of.set_uid(tenant.uid());
    usage_of.set_group(tenant.group_name());
    auto mapped = segments.find(tenant);
    if (mapped != segments.end()) {
      usage_of.set_host_segments(mapped->second);
      segments.erase(mapped);
    }
    auto held = messages.find(tenant);
    if (held != messages.end()) {
      usage_of.set_message_bytes(held->second);
      messages.erase(held);
    }
    auto waiting = pending.find(tenant);
    if (waiting != pending.end()) {
      usage_of.set_pending_sessions(static_cast<uint32_t>(waiting->second));
      pending.erase(waiting);
    }
    return &usage_of;
  };
  for (const TenantSnapshot& tenant : snapshot.tenants) {
    acl::v1::TenantUsage& usage_of = *add_tenant(tenant.tenant);
    usage_of.set_sessions(tenant.sessions);
    usage_of.set_memory_allocations(tenant.memory_allocations);
    usage_of.set_binary_bytes(tenant.binary_bytes);
    usage_of.set_queued_bytes(tenant.queued_bytes);
    usage_of.set_streams(static_cast<uint32_t>(tenant.streams));
    usage_of.set_contexts(static_cast<uint32_t>(tenant.contexts));
    usage_of.set_events(static_cast<uint32_t>(tenant.events));
    for (const auto& [device, streams] : tenant.streams_on_device) {
      (*usage_of.mutable_streams_on_device())[device] = static_cast<uint32_t>(streams);
    }
    for (const auto& [device, events] : tenant.events_on_device) {
      (*usage_of.mutable_events_on_device())[device] = static_cast<uint32_t>(events);
    }
    for (const auto& [device, notifies] : tenant.notifies_on_device) {
      (*usage_of.mutable_notifies_on_device())[device] = static_cast<uint32_t>(notifies);
    }
  }
  while (!segments.empty()) add_tenant(segments.begin()->first);
  while (!pending.empty()) add_tenant(pending.begin()->first);
  while (!messages.empty()) add_tenant(messages.begin()->first);
  reply->set_host_segments(sessions_.segments().total());
  reply->set_max_host_segments(sessions_.segments().total_limit());
  reply->set_max_host_segments_per_uid(sessions_.segments().per_tenant_limit());
  reply->set_max_message_bytes_per_uid(sessions_.messages().per_tenant_limit());
  reply->set_max_allocations_per_uid(snapshot.max_allocations_per_tenant);
  reply->set_max_binary_bytes_per_uid(snapshot.max_binary_bytes_per_tenant);
  reply->set_max_queued_bytes_per_uid(snapshot.max_queued_bytes_per_tenant);
  reply->set_max_streams_per_uid(snapshot.max_streams_per_tenant);
  reply->set_max_contexts_per_uid(snapshot.max_contexts_per_tenant);
  reply->set_max_events_per_uid(snapshot.max_events_per_tenant);
  reply->set_device_share_per_uid(snapshot.device_share_per_tenant);
  reply->set_pending_sessions(counts.pending);
  reply->set_max_pending_sessions(limits.max_pending_hellos);
  reply->set_max_pending_sessions_per_uid(limits.max_pending_hellos_per_uid);
  reply->set_max_connections_per_uid(limits.max_connections_per_uid);
  reply->set_max_grpc_memory_bytes(limits.max_grpc_memory_bytes);
  reply->set_max_grpc_arriving_bytes_per_uid(limits.max_grpc_arriving_bytes_per_uid);
  reply->set_sessions_closing(counts.closing);
  reply->set_max_sessions(limits.max_sessions);
  reply->set_max_sessions_per_uid(limits.max_sessions_per_uid);
  reply->set_sessions_refused(counts.refused);
  reply->set_hello_timeouts(counts.hello_timeouts);
  reply->set_command_lines_waiting(counts.command_lines_waiting);
  if (listener_stats_) {
    const ListenerStats listener = listener_stats_();
    reply->set_connections_accepted(listener.connections_accepted);
    reply->set_connections_open(listener.connections_open);
    reply->set_accept_pauses(listener.accept_pauses);
    reply->set_connections_refused(listener.connections_refused);
    reply->set_connections_cut(listener.connections_cut);
    reply->set_streams_delayed(listener.streams_delayed);
    reply->set_requests_delayed(listener.requests_delayed);
    for (const auto& [uid, bytes] : listener.grpc_arriving_bytes) {
      (*reply->mutable_grpc_arriving_bytes())[uid] = bytes;
    }
    reply->set_identity_pending(listener.identity_pending);
    reply->set_identity_busy(listener.identity_busy);
  }
  const SlowCloses slow = SlowCloseCounts();
  reply->set_slow_closes_waiting(slow.waiting);
  reply->set_slow_closes_done(slow.closed);
  reply->set_descriptors_kept_open(slow.kept_open);
  const MemoryWorkCounts memory_work = CountMemoryWork();
  reply->set_memory_work_running(memory_work.running);
  reply->set_memory_work_late(memory_work.late);
  reply->set_memory_work_refused_senders(memory_work.refused_senders);
  const FillingCounts filling = CountFilling();
  reply->set_filled_mappings(filling.regions);
  reply->set_filled_processes(filling.client_memories);
  return grpc::Status::OK;
}

grpc::Status AdminService::ListSessions(grpc::ServerContext*, const acl::v1::SessionsRequest*,
                                        acl::v1::SessionsReply* reply) {
  const RuntimeSnapshot snapshot = runtime_.Snapshot();
  const std::map<SessionId, RuntimeService::SessionUsage> usage = sessions_.usage();
  for (const SessionSnapshot& session : snapshot.sessions) {
    ToProto(session, usage, sessions_.limits(), *reply->add_sessions());
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::ListStreams(grpc::ServerContext*, const acl::v1::StreamsRequest* request,
                                       acl::v1::StreamsReply* reply) {
  for (const StreamSnapshot& stream : runtime_.StreamsSnapshot(request->session())) {
    acl::v1::StreamInfo& info = *reply->add_streams();
    info.set_id(stream.id);
    info.set_session(stream.session);
    info.set_device(stream.device);
    info.set_priority(stream.priority);
    info.set_queued(stream.stats.queued);
    info.set_completed(stream.stats.completed);
    info.set_failed(stream.stats.failed);
    info.set_discarded(stream.stats.discarded);
    info.set_failure_mode(stream.stats.failure_mode == FailureMode::kStop ? "stop" : "continue");
    info.set_custom_allocator(stream.custom_allocator);
    info.set_state(stream.stats.state);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetMemory(grpc::ServerContext*, const acl::v1::MemoryRequest*,
                                     acl::v1::MemoryReply* reply) {
  const RuntimeSnapshot snapshot = runtime_.Snapshot();
  for (const DeviceSnapshot& device : snapshot.devices) {
    acl::v1::DeviceMemory& memory = *reply->add_devices();
    memory.set_device(device.info.id);
    memory.set_total_bytes(device.info.memory_bytes);
    memory.set_used_bytes(device.used_bytes);
  }
  for (const SessionSnapshot& session : snapshot.sessions) {
    acl::v1::SessionMemory& memory = *reply->add_sessions();
    memory.set_session(session.session.id);
    memory.set_pid(session.session.peer.pid);
    memory.set_bytes(session.memory_bytes);
    memory.set_quota(session.memory_quota);
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetSharing(grpc::ServerContext*, const acl::v1::SharingRequest*,
                                      acl::v1::SharingReply* reply) {
  std::map<SessionId, int32_t> pids;
  for (const SessionSnapshot& session : runtime_.Snapshot().sessions) {
    pids[session.session.id] = session.session.peer.pid;
  }
  // Entries past kMaxSharingReplyBytes are counted, not listed: one user's
  // sessions may hold thousands of exports with whitelists of thousands.
  // Exports and events have half each, so that either is listed.
  size_t export_bytes = 0, event_bytes = 0;
  auto fits = [&](const google::protobuf::Message& added, size_t& bytes) {
    bytes += added.ByteSizeLong();
    if (bytes <= kMaxSharingReplyBytes / 2) return true;
    reply->set_left_out(reply->left_out() + 1);
    return false;
  };
  for (const MemoryExports::ExportView& view : runtime_.SharingSnapshot()) {
    acl::v1::SharedMemoryExport& out = AddExport(view, "ipc", pids, reply);
    out.set_address(view.address);
    for (size_t i = 0; i < view.imports.size(); ++i) {
      out.mutable_imports(static_cast<int>(i))->set_address(view.imports[i].address);
    }
    if (!fits(out, export_bytes)) reply->mutable_exports()->RemoveLast();
  }
  for (const PhysicalMemory::ExportView& view : runtime_.PhysicalSharingSnapshot()) {
    if (!fits(AddExport(view, "physical", pids, reply), export_bytes)) {
      reply->mutable_exports()->RemoveLast();
    }
  }
  for (const Runtime::SharedEventView& view : runtime_.SharedEventsSnapshot()) {
    acl::v1::SharedEvent& out = *reply->add_events();
    out.set_kind(view.kind);
    out.set_key_prefix(view.key_prefix);
    out.set_owner_session(view.owner);
    out.set_owner_pid(pids[view.owner]);
    out.set_device(view.device);
    for (SessionId opener : view.openers) {
      acl::v1::SharedMemoryImport& in = *out.add_openers();
      in.set_session(opener);
      in.set_pid(pids[opener]);
    }
    if (!fits(out, event_bytes)) reply->mutable_events()->RemoveLast();
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Evict(grpc::ServerContext*, const acl::v1::EvictRequest* request,
                                 acl::v1::EvictReply*) {
  spdlog::info("admin: evict session {}", request->session());
  // Waits (at most 500 ms) for the client to take the notice; no lock is held.
  absl::Status ended = sessions_.EndSession(
      request->session(), "evicted by the operator (aclctl evict); its resources were released");
  if (!ended.ok()) return grpc::Status(grpc::StatusCode::NOT_FOUND, std::string(ended.message()));
  return grpc::Status::OK;
}

grpc::Status AdminService::SetQuota(grpc::ServerContext*, const acl::v1::QuotaRequest* request,
                                    acl::v1::QuotaReply*) {
  const SessionId session = request->session();
  spdlog::info("admin: quota for {}: memory {} streams {}",
               session == 0 ? std::string("new sessions") : absl::StrCat("session ", session),
               request->set_memory() ? absl::StrCat(request->memory_bytes()) : "unchanged",
               request->set_streams() ? absl::StrCat(request->max_streams()) : "unchanged");
  if (session == 0) {
    if (request->set_memory()) runtime_.SetDefaultMemoryQuota(request->memory_bytes());
    if (request->set_streams()) runtime_.SetDefaultStreamQuota(request->max_streams());
    return grpc::Status::OK;
  }
  absl::Status status;
  if (request->set_memory()) status = runtime_.SetMemoryQuota(session, request->memory_bytes());
  if (status.ok() && request->set_streams()) {
    status = runtime_.SetStreamQuota(session, request->max_streams());
  }
  if (!status.ok()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no session ", session));
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::SetDeviceEnabled(grpc::ServerContext*,
                                            const acl::v1::DeviceEnabledRequest* request,
                                            acl::v1::DeviceEnabledReply*) {
  spdlog::info("admin: device {} {}", request->device(),
               request->enabled() ? "enabled" : "disabled");
  const absl::Status status = runtime_.SetDeviceEnabled(request->device(), request->enabled());
  if (!status.ok()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, std::string(status.message()));
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::SetWeight(grpc::ServerContext*, const acl::v1::WeightRequest* request,
                                     acl::v1::WeightReply*) {
  const SessionId session = request->session();
  spdlog::info("admin: weight of session {}: {}", session, request->weight());
  if (request->weight() < kMinWeight || request->weight() > kMaxWeight) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("a session's weight is ", kMinWeight, "..", kMaxWeight,
                                     ", not ", request->weight()));
  }
  const absl::Status status = runtime_.SetWeight(session, request->weight());
  if (!status.ok()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no session ", session));
  }
  return grpc::Status::OK;
}

}  // namespace acld::server
