#include "daemon/core/runtime.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"

namespace acld {

namespace {

std::vector<hal::DeviceObjectLimits> DeviceNumbers(hal::Backend& backend) {
  std::vector<hal::DeviceObjectLimits> numbers;
  for (int32_t id = 0; id < backend.device_count(); ++id) {
    numbers.push_back(backend.device(id).info().objects);
  }
  return numbers;
}

// Adds what `from` holds to what a release lets go of with no lock held.
void AppendTo(std::vector<std::shared_ptr<void>>& to, std::vector<std::shared_ptr<void>> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

Runtime::Runtime(std::unique_ptr<hal::Backend> backend, const RuntimeOptions& options)
    : backend_(std::move(backend)),
      device_objects_(DeviceNumbers(*backend_), options.device_share_per_uid),
      memory_(*backend_),
      broker_(timer_, options.callback_timeout),
      timer_(options.clock != nullptr ? *options.clock : hal::HostClock(), "acld-timer"),
      default_max_streams_(options.default_max_streams),
      default_max_contexts_(options.default_max_contexts),
      default_max_events_(options.default_max_events),
      max_streams_per_tenant_(options.max_streams_per_uid),
      max_contexts_per_tenant_(options.max_contexts_per_uid),
      max_events_per_tenant_(options.max_events_per_uid),
      max_queued_bytes_(options.max_queued_bytes_per_session),
      max_queued_bytes_per_tenant_(options.max_queued_bytes_per_uid),
      binary_charges_(options.max_binary_bytes_per_session, options.max_binary_bytes_per_uid),
      queue_patience_(options.queue_patience),
      readers_await_queue_room_(options.readers_await_queue_room) {
  memory_.SetDefaultQuota(options.default_memory_quota);
  memory_.SetMaxAllocations(options.max_allocations_per_session, options.max_allocations_per_uid);
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    engines_.push_back(std::make_unique<StreamEngine>(options.workers_per_device));
  }
}

Runtime::~Runtime() {
  std::vector<Released> released;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, session] : sessions_.all()) {
      released.push_back(ReleaseSessionResources(*sessions_.Find(id), std::nullopt));
    }
  }
  for (Released& each : released) DiscardReleased(std::move(each));
  // Workers stop before the timer they may schedule on; the timer's remaining
  // callbacks may still make streams ready, which a stopped engine tolerates.
  for (auto& engine : engines_) engine->Stop();
  absl::MutexLock lock(&mu_);
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    if (backend_->device(id).is_up()) backend_->device(id).Release();
  }
}

void Runtime::SetSessionEvents(SessionId id, SessionEvents events) {
  absl::MutexLock lock(&mu_);
  Session* session = sessions_.Find(id);
  if (session != nullptr)
    session->notify = std::make_shared<const SessionEvents>(std::move(events));
}

void Runtime::TakeNoticeOfRevocations(SessionId id) {
  std::shared_ptr<const SessionEvents> events = EventsOf(id);
  if (events == nullptr || !events->import_revoked) return;
  // Told from inside the memory manager's callers, which may hold mu_: the
  // events were taken now, and nothing here takes mu_ again.
  memory_.TellRevocations(id, [this, id, events](uint64_t notice, const std::string& reason) {
    events->import_revoked(ImportRevoked{notice, reason});
    // Held while scheduling, so that the deadline cannot fire before it is
    // recorded (its callback takes the lock too).
    absl::MutexLock lock(&notice_mu_);
    notice_deadlines_[notice] = timer_.ScheduleIn(kRevocationNoticeWait, [this, id, notice] {
      {
        absl::MutexLock lock(&notice_mu_);
        notice_deadlines_.erase(notice);
      }
      memory_.RevocationSeen(id, notice);
    });
  });
}

void Runtime::RevocationSeen(SessionId id, uint64_t notice) {
  // Only the importer's own answer ends its deadline: the notice numbers of
  // others are not a session's to cancel.
  if (!memory_.RevocationSeen(id, notice)) return;
  absl::MutexLock lock(&notice_mu_);
  auto deadline = notice_deadlines_.find(notice);
  if (deadline == notice_deadlines_.end()) return;
  timer_.Cancel(deadline->second);
  notice_deadlines_.erase(deadline);
}

std::shared_ptr<QueueBudget> Runtime::QueueBudgetOf(SessionId id) const {
  absl::ReaderMutexLock lock(&mu_);
  const Session* session = sessions_.Find(id);
  return session != nullptr ? session->queue_budget : nullptr;
}

std::shared_ptr<const SessionEvents> Runtime::EventsOf(SessionId id) const {
  absl::ReaderMutexLock lock(&mu_);
  const Session* session = sessions_.Find(id);
  return session != nullptr ? session->notify : nullptr;
}

void Runtime::ReportFailure(const TaskFailure& failure) {
  std::shared_ptr<const SessionEvents> events = EventsOf(failure.session);
  if (events && events->task_failed) events->task_failed(failure);
}

void Runtime::ReportOutput(const KernelOutput& output) {
  std::shared_ptr<const SessionEvents> events = EventsOf(output.session);
  if (events && events->kernel_output) events->kernel_output(output);
}

SessionId Runtime::OpenSession(const PeerInfo& peer, std::shared_ptr<QuotaGroup> group) {
  absl::MutexLock lock(&mu_);
  Session& session = sessions_.Open(peer, group, absl::Now());
  session.max_streams = default_max_streams_;
  session.max_contexts = default_max_contexts_;
  session.max_events = default_max_events_;
  const Tenant tenant = TenantOf(session);
  session.queue_budget = std::make_shared<QueueBudget>(
      max_queued_bytes_, queue_patience_, readers_await_queue_room_ ? &timer_ : nullptr,
      TenantQueueLocked(tenant), tenant.ToString());
  for (auto& engine : engines_) engine->SetTenant(session.id, tenant);
  memory_.AddSession(session.id, peer.counted_uid(), std::move(group));
  return session.id;
}

void Runtime::SetSessionCommand(SessionId id, std::string command) {
  absl::MutexLock lock(&mu_);
  if (Session* session = sessions_.Find(id)) session->peer.command = std::move(command);
}

std::shared_ptr<TenantQueue> Runtime::TenantQueueLocked(const Tenant& tenant) {
  if (!readers_await_queue_room_ || max_queued_bytes_per_tenant_ == 0) return nullptr;
  for (auto it = tenant_queues_.begin(); it != tenant_queues_.end();) {
    it = it->second.expired() ? tenant_queues_.erase(it) : std::next(it);
  }
  std::weak_ptr<TenantQueue>& entry = tenant_queues_[tenant];
  std::shared_ptr<TenantQueue> queue = entry.lock();
  if (queue == nullptr) {
    queue = std::make_shared<TenantQueue>(max_queued_bytes_per_tenant_);
    entry = queue;
  }
  return queue;
}

bool Runtime::CloseSession(SessionId id) {
  Released released;
  std::shared_ptr<QueueBudget> budget;
  {
    absl::MutexLock lock(&mu_);
    Session* session = sessions_.Find(id);
    if (session == nullptr) return false;
    // Its exports go first, so that their importers learn why.
    exports_.SessionEnded(id);
    PhysicalMemory::Dropped physical = physical_.SessionEnded(id);
    released = ReleaseSessionResources(*session, std::nullopt);
    AppendTo(released.memory, std::move(physical));
    budget = session->queue_budget;
    broker_.ForgetSession(id);
    memory_.RemoveSession(id);
    init_.RemoveSession(id);
    sessions_.Close(id);
    UpdateDevicePower();
  }
  // Outside the lock: discarding answers waiters, which may write to a client.
  budget->Close();
  DiscardReleased(std::move(released));
  // After the discards, which make its streams ready once more in its
  // tenant's turns (work reported later takes the engine's default
  // tenant's, Tenant()).
  for (auto& engine : engines_) engine->ForgetSession(id);
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
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  return init_.CountOf(id);
}

absl::StatusOr<uint64_t> Runtime::AddInitReference(SessionId id) {
  absl::MutexLock lock(&mu_);
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  return init_.AddReferenceIfInitialized(id);
}

absl::Status Runtime::Initialize(SessionId id, const InitSettings& settings) {
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  if (settings.default_device.has_value() &&
      (*settings.default_device < 0 || *settings.default_device >= backend_->device_count())) {
    return AclStatus(
        ACL_ERROR_INVALID_PARAM,
        absl::StrCat("aclInit: defaultDevice.default_device ", *settings.default_device,
                     " is out of range; this host has ", backend_->device_count(),
                     " devices (valid ids 0..", backend_->device_count() - 1, ")"));
  }
  if (settings.config_content.size() > kMaxInitConfigBytes) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclInit: the config is ", settings.config_content.size(),
                                  " bytes, more than the maximum of ", kMaxInitConfigBytes));
  }
  ACL_RETURN_IF_ERROR(init_.Initialize(id, settings.config_content));
  session->config = ShownInitSettings(settings.settings);  // a client chose every byte
  session->has_default_device = settings.default_device.has_value();
  session->default_device = settings.default_device.value_or(0);
  UpdateDevicePower();
  return absl::OkStatus();
}

absl::Status Runtime::AbortInit(SessionId id) {
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  absl::Status status = init_.AbortInitialize(id);
  if (status.ok()) {
    session->config.clear();
    session->has_default_device = false;
  }
  UpdateDevicePower();
  return status;
}

absl::StatusOr<uint64_t> Runtime::DropInitReference(SessionId id) {
  absl::MutexLock lock(&mu_);
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  return init_.DropReference(id);
}

void Runtime::Finalize(SessionId id, Done done) {
  Released released;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    status = session.ok() ? init_.Finalize(id) : session.status();
    if (status.ok()) {
      released = ReleaseSessionResources(**session, std::nullopt);
      (*session)->device_refs.clear();
      (*session)->config.clear();
      (*session)->has_default_device = false;
      UpdateDevicePower();
    }
  }
  if (!status.ok()) return done(status);
  DrainReleased(id, std::move(released), std::move(done));
}

int32_t Runtime::DeviceCount() const { return backend_->device_count(); }

std::string Runtime::BackendName() const { return backend_->name(); }

absl::Status Runtime::BackendHealth() const { return backend_->Health(); }

std::string Runtime::SocName() const { return backend_->device(0).info().name; }

hal::DeviceFeatures Runtime::Features(int32_t device_id) const {
  const hal::Device& device = backend_->device(device_id);
  hal::DeviceFeatures features = device.features();
  for (int32_t peer = 0; peer < backend_->device_count(); ++peer) {
    if (peer != device_id && device.CanAccessPeer(backend_->device(peer))) {
      features.peers.push_back(peer);
    }
  }
  return features;
}

std::vector<std::pair<std::string, size_t>> Runtime::Kernels() const {
  std::vector<std::pair<std::string, size_t>> kernels;
  const hal::Executable* builtin = backend_->device(0).builtin_kernels();
  if (builtin == nullptr) return kernels;
  for (const hal::Function* function : builtin->Functions()) {
    kernels.emplace_back(function->name(), function->args_size().value_or(0) / 8);
  }
  return kernels;
}

std::vector<hal::AddressRange> Runtime::DeviceAddressRanges() const {
  std::vector<hal::AddressRange> ranges;
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    ranges.push_back(backend_->device(id).info().addresses);
  }
  return ranges;
}

absl::Status Runtime::CheckDeviceId(int32_t device_id) const {
  if (device_id < 0 || device_id >= backend_->device_count()) {
    return AclStatus(ACL_ERROR_RT_INVALID_DEVICEID,
                     absl::StrCat("device id ", device_id, " is invalid; this host has ",
                                  backend_->device_count(), " devices"));
  }
  return absl::OkStatus();
}

absl::Status Runtime::SetDeviceEnabled(int32_t device_id, bool enabled) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  absl::MutexLock lock(&mu_);
  if (enabled) {
    disabled_devices_.erase(device_id);
  } else {
    disabled_devices_.insert(device_id);
  }
  return absl::OkStatus();
}

absl::Status Runtime::CheckNewDeviceReferenceLocked(const Session& session,
                                                    int32_t device_id) const {
  // A session that already holds the device goes on with it: taking a device
  // out stops new users, not the work of those there.
  if (disabled_devices_.count(device_id) == 0 || session.device_refs.count(device_id) != 0) {
    return absl::OkStatus();
  }
  // A quota group's process knows the device by another number: only a
  // host session is told the host's, which the operator's command takes.
  return AclStatus(ACL_ERROR_RT_NO_DEVICE,
                   absl::StrCat("the device is disabled by the operator (aclctl device enable ",
                                session.group == nullptr ? absl::StrCat(device_id) : "<device>",
                                " brings it back)"));
}

absl::StatusOr<ContextInfo> Runtime::SetDevice(SessionId id, int32_t device_id) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  ACL_RETURN_IF_ERROR(CheckNewDeviceReferenceLocked(*session, device_id));
  ++session->device_refs[device_id];
  UpdateDevicePower();
  absl::StatusOr<ContextInfo> context = DefaultContextLocked(*session, device_id);
  if (!context.ok()) DropDeviceReferenceLocked(*session, device_id);
  return context;
}

void Runtime::DropDeviceReferenceLocked(Session& session, int32_t device_id) {
  auto it = session.device_refs.find(device_id);
  if (it != session.device_refs.end() && --it->second == 0) session.device_refs.erase(it);
  UpdateDevicePower();
}

void Runtime::ResetDevice(SessionId id, int32_t device_id, bool force, Done done) {
  absl::Status status = CheckDeviceId(device_id);
  Released released;
  if (status.ok()) {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    status = session.status();
    if (status.ok()) {
      auto& refs = (*session)->device_refs;
      auto it = refs.find(device_id);
      // As in CANN, resetting a device the process never set is harmless.
      if (it != refs.end() && (force || --it->second == 0)) {
        refs.erase(it);
        released = ReleaseSessionResources(**session, device_id);
      }
      UpdateDevicePower();
    }
  }
  if (!status.ok()) return done(status);
  DrainReleased(id, std::move(released), std::move(done));
}

namespace {

// A session's handles as its quotas count them.
size_t StreamsHeld(const Session& session) {
  return session.streams.size() + session.closing_streams.size();
}
size_t EventsHeld(const Session& session) {
  return session.events.size() + session.notifies.size();
}
size_t ContextsCreated(const Session& session) {
  return session.contexts.size() - session.default_contexts.size();
}

// One kind of handle, as all sessions of a tenant hold it together.
struct TenantHandles {
  const char* what;                 // "streams"
  const char* flag;                 // its per-uid limit's flag
  size_t (*held)(const Session&);   // a session's, as its quota counts them
  uint32_t limit;                   // 0: none
};

// Refuses with `code` when the sessions of `session`'s tenant hold
// `handles.limit` already.
absl::Status CheckTenantHandles(const SessionTable& sessions, const Session& session,
                                const TenantHandles& handles, int32_t code, const char* call) {
  if (handles.limit == 0) return absl::OkStatus();
  const Tenant tenant = TenantOf(session);
  const size_t held = sessions.SumOverTenant(tenant, handles.held);
  if (held < handles.limit) return absl::OkStatus();
  return AclStatus(code, absl::StrCat(call, ": the processes of ", tenant.ToString(),
                                      " may hold at most ", handles.limit, " ", handles.what,
                                      " together (", handles.flag, "); they hold ", held));
}

}  // namespace

absl::StatusOr<ObjectsAvailable> Runtime::GetObjectsAvailable(SessionId id, int32_t device_id) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  absl::ReaderMutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(const Session* session, FindSession(id));
  const Tenant tenant = TenantOf(*session);
  // The tightest of (limit, held) pairs; a limit of 0 holds nothing back.
  auto tightest = [](std::initializer_list<std::pair<uint64_t, uint64_t>> limits) {
    uint64_t left = UINT32_MAX;
    for (const auto& [limit, held] : limits) {
      if (limit != 0) left = std::min(left, limit > held ? limit - held : 0);
    }
    return static_cast<uint32_t>(left);
  };
  using Ledger = DeviceObjectLedger;
  const bool group_streams = session->group != nullptr && session->group->spec().max_streams != 0;
  ObjectsAvailable available;
  available.streams = tightest(
      {{session->max_streams, StreamsHeld(*session)},
       {group_streams ? session->group->spec().max_streams : max_streams_per_tenant_,
        sessions_.SumOverTenant(tenant, StreamsHeld)},
       {device_objects_.Share(device_id, Ledger::kStream),
        device_objects_.Held(tenant, device_id, Ledger::kStream)},
       {device_objects_.DeviceNumber(device_id, Ledger::kStream),
        device_objects_.HeldOnDevice(device_id, Ledger::kStream)}});
  available.events = tightest(
      {{session->max_events, EventsHeld(*session)},
       {max_events_per_tenant_, sessions_.SumOverTenant(tenant, EventsHeld)},
       {device_objects_.Share(device_id, Ledger::kEvent),
        device_objects_.Held(tenant, device_id, Ledger::kEvent)},
       {device_objects_.DeviceNumber(device_id, Ledger::kEvent),
        device_objects_.HeldOnDevice(device_id, Ledger::kEvent)}});
  return available;
}

absl::Status Runtime::CheckStreamQuotaLocked(const Session& session, const char* call) {
  const uint32_t quota = session.max_streams;
  if (quota != 0 && StreamsHeld(session) >= quota) {
    return AclStatus(
        ACL_ERROR_RT_NO_STREAM_RESOURCE,
        absl::StrCat(call, ": this process may hold at most ", quota,
                     " streams (default streams and streams still finishing their work "
                     "included; --max_streams_per_session, or aclctl quota); it holds ",
                     session.streams.size(), " and ", session.closing_streams.size(),
                     " are finishing"));
  }
  // A group's sessions are its tenant's (tenant.h); a group's own stream
  // cap replaces the per-uid one, as its session cap does.
  if (session.group != nullptr && session.group->spec().max_streams != 0) {
    const uint32_t group_quota = session.group->spec().max_streams;
    const size_t held = sessions_.SumOverTenant(TenantOf(session), StreamsHeld);
    if (held >= group_quota) {
      return AclStatus(
          ACL_ERROR_RT_NO_STREAM_RESOURCE,
          absl::StrCat(call, ": the processes of quota group ", session.group->name(),
                       " may hold at most ", group_quota, " streams together (default streams "
                       "and streams still finishing their work included; aclctl group create "
                       "--streams); they hold ", held));
    }
    return absl::OkStatus();
  }
  return CheckTenantHandles(
      sessions_, session,
      {"streams", "--max_streams_per_uid", StreamsHeld, max_streams_per_tenant_},
      ACL_ERROR_RT_NO_STREAM_RESOURCE, call);
}

absl::Status Runtime::CheckEventQuotaLocked(const Session& session, const char* call,
                                            int32_t code) {
  const uint32_t quota = session.max_events;
  if (quota != 0 && EventsHeld(session) >= quota) {
    return AclStatus(code, absl::StrCat(call, ": this process may hold at most ", quota,
                                        " events and notifies (--max_events_per_session)"));
  }
  return CheckTenantHandles(
      sessions_, session,
      {"events and notifies", "--max_events_per_uid", EventsHeld, max_events_per_tenant_}, code,
      call);
}

absl::Status Runtime::CheckContextQuotaLocked(const Session& session, const char* call) {
  if (session.max_contexts != 0 && ContextsCreated(session) >= session.max_contexts) {
    return AclStatus(ACL_ERROR_RT_OVER_LIMIT,
                     absl::StrCat(call, ": this process may hold at most ", session.max_contexts,
                                  " contexts (--max_contexts_per_session)"));
  }
  return CheckTenantHandles(
      sessions_, session,
      {"contexts", "--max_contexts_per_uid", ContextsCreated, max_contexts_per_tenant_},
      ACL_ERROR_RT_OVER_LIMIT, call);
}

absl::StatusOr<ContextInfo> Runtime::NewContextLocked(Session& session, int32_t device_id,
                                                      bool device_default) {
  Context context;
  context.id = next_handle_++;
  context.device = device_id;
  context.is_device_default = device_default;
  // A device's default context comes with aclrtSetDevice, any other with
  // aclrtCreateContext.
  ACL_ASSIGN_OR_RETURN(
      std::shared_ptr<Stream> stream,
      NewStreamLocked(session, device_id, 0, 0,
                      device_default ? "aclrtSetDevice" : "aclrtCreateContext"));
  context.default_stream = stream->id();
  session.contexts[context.id] = context;
  return ContextInfo{context.id, device_id, context.default_stream};
}

absl::StatusOr<ContextInfo> Runtime::DefaultContextLocked(Session& session, int32_t device_id) {
  auto it = session.default_contexts.find(device_id);
  if (it != session.default_contexts.end()) {
    const Context& context = session.contexts.at(it->second);
    return ContextInfo{context.id, context.device, context.default_stream};
  }
  ACL_ASSIGN_OR_RETURN(ContextInfo info,
                       NewContextLocked(session, device_id, /*device_default=*/true));
  session.default_contexts[device_id] = info.context;
  return info;
}

absl::StatusOr<ContextInfo> Runtime::CreateContext(SessionId id, int32_t device_id) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  const Session& current = *session;
  ACL_RETURN_IF_ERROR(CheckContextQuotaLocked(current, "aclrtCreateContext"));
  ACL_RETURN_IF_ERROR(CheckStreamQuotaLocked(current, "aclrtCreateContext"));
  ACL_RETURN_IF_ERROR(CheckNewDeviceReferenceLocked(current, device_id));
  // A context holds its device like aclrtSetDevice does (CANN: rtCtxCreate).
  ++session->device_refs[device_id];
  UpdateDevicePower();
  absl::StatusOr<ContextInfo> context =
      NewContextLocked(*session, device_id, /*device_default=*/false);
  if (!context.ok()) DropDeviceReferenceLocked(*session, device_id);
  return context;
}

void Runtime::DestroyContext(SessionId id, ContextId context_id, Done done) {
  Released released;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = DetachContextLocked(id, context_id, released);
  }
  if (!status.ok()) return done(status);
  DrainReleased(id, std::move(released), std::move(done));
}

absl::Status Runtime::DetachContextLocked(SessionId id, ContextId context_id, Released& released) {
  ACL_ASSIGN_OR_RETURN(Session * found, FindSession(id));
  Session& session = *found;
  auto it = session.contexts.find(context_id);
  if (it == session.contexts.end() || it->second.is_device_default) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclrtDestroyContext: context ", context_id,
                                  " is not a context this process created"));
  }
  const Context context = it->second;
  session.contexts.erase(it);
  auto stream = session.streams.find(context.default_stream);
  if (stream != session.streams.end()) {
    session.closing_streams[stream->first] = stream->second;
    released.streams.push_back(std::move(stream->second));
    session.streams.erase(stream);
  }
  auto refs = session.device_refs.find(context.device);
  if (refs != session.device_refs.end() && --refs->second == 0) {
    session.device_refs.erase(refs);
    Released device = ReleaseSessionResources(session, context.device);
    for (auto& each : device.streams) released.streams.push_back(std::move(each));
    for (auto& each : device.finishing) released.finishing.push_back(std::move(each));
    released.handles = std::move(device.handles);
    released.binaries = std::move(device.binaries);
    released.memory = std::move(device.memory);
  }
  UpdateDevicePower();
  return absl::OkStatus();
}

Runtime::Released Runtime::ReleaseSessionResources(Session& session,
                                                    std::optional<int32_t> device) {
  auto on_device = [&](int32_t d) { return !device.has_value() || *device == d; };
  Released released;
  released.handles.session = session.id;
  // Streams given up earlier whose work still runs: releasing the device
  // waits for them as well.
  for (const auto& [stream_id, stream] : session.closing_streams) {
    if (on_device(stream->options().device)) released.finishing.push_back(stream);
  }
  for (auto it = session.streams.begin(); it != session.streams.end();) {
    if (!on_device(it->second->options().device)) {
      ++it;
      continue;
    }
    session.closing_streams[it->first] = it->second;
    released.streams.push_back(std::move(it->second));
    session.streams_with_allocator.erase(it->first);
    it = session.streams.erase(it);
  }
  for (auto it = session.events.begin(); it != session.events.end();) {
    if (!on_device(it->second->device())) {
      ++it;
      continue;
    }
    // Another session's IPC event: only this handle goes.
    auto& handles = ForgetEventLocked(session.id, it->second) ? released.handles.events
                                                              : released.handles.opened_events;
    handles.push_back(std::move(it->second));
    it = session.events.erase(it);
  }
  for (auto it = session.notifies.begin(); it != session.notifies.end();) {
    if (!on_device(it->second->device())) {
      ++it;
      continue;
    }
    if (ForgetNotifyLocked(session.id, it->second)) {
      released.handles.notifies.push_back(std::move(it->second));
    }
    it = session.notifies.erase(it);
  }
  for (auto it = session.contexts.begin(); it != session.contexts.end();) {
    it = on_device(it->second.device) ? session.contexts.erase(it) : std::next(it);
  }
  for (auto it = session.default_contexts.begin(); it != session.default_contexts.end();) {
    it = on_device(it->first) ? session.default_contexts.erase(it) : std::next(it);
  }
  for (auto it = session.binaries.begin(); it != session.binaries.end();) {
    if (!on_device(it->second.device)) {
      ++it;
      continue;
    }
    for (const auto& [name, function] : it->second.functions) session.functions.erase(function);
    // Launches already made keep the executable, and its charge, until they ran.
    released.binaries.push_back(std::move(it->second.executable));
    it = session.binaries.erase(it);
  }
  PhysicalMemory::Dropped physical = physical_.Released(session.id, device);
  released.memory = memory_.ReleaseSession(session.id, device);
  AppendTo(released.memory, std::move(physical));
  return released;
}

void Runtime::StreamDrained(SessionId id, StreamId stream) {
  absl::MutexLock lock(&mu_);
  Session* session = sessions_.Find(id);
  if (session != nullptr) session->closing_streams.erase(stream);
}

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

absl::Status Runtime::SetMemoryQuota(SessionId id, uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  ACL_RETURN_IF_ERROR(FindSession(id).status());
  memory_.SetQuota(id, bytes);
  return absl::OkStatus();
}

absl::Status Runtime::SetStreamQuota(SessionId id, uint32_t max_streams) {
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  session->max_streams = max_streams;
  return absl::OkStatus();
}

void Runtime::SetDefaultMemoryQuota(uint64_t bytes) { memory_.SetDefaultQuota(bytes); }

absl::Status Runtime::SetWeight(SessionId id, uint32_t weight) {
  if (weight == 0 || weight > 1000) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("a session's weight is 1..1000, not ", weight));
  }
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  session->weight = weight;
  // Under the lock: the session's end, which forgets its weights after it,
  // cannot come in between and leave one behind.
  for (auto& engine : engines_) engine->SetWeight(id, weight);
  return absl::OkStatus();
}

void Runtime::SetDefaultStreamQuota(uint32_t max_streams) {
  absl::MutexLock lock(&mu_);
  default_max_streams_ = max_streams;
}

bool Runtime::AllStreamsIdle() const {
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [id, session] : sessions_.all()) {
    for (const auto& [stream_id, stream] : session.streams) {
      if (!stream->Idle()) return false;
    }
  }
  return true;
}

std::vector<TenantSnapshot> Runtime::TenantsLocked() const {
  std::map<Tenant, TenantSnapshot> tenants;
  auto entry = [&](const Tenant& tenant) -> TenantSnapshot& {
    TenantSnapshot& found = tenants[tenant];
    found.tenant = tenant;
    return found;
  };
  for (const auto& [id, session] : sessions_.all()) {
    TenantSnapshot& of = entry(TenantOf(session));
    ++of.sessions;
    of.streams += StreamsHeld(session);
    of.contexts += ContextsCreated(session);
    of.events += EventsHeld(session);
  }
  // Streams still draining and events still used by tasks count too, after
  // their sessions ended.
  for (const auto& [tenant, devices] : device_objects_.All()) {
    TenantSnapshot& of = entry(tenant);
    for (const auto& [device, counts] : devices) {
      if (counts[DeviceObjectLedger::kStream] > 0) {
        of.streams_on_device[device] = counts[DeviceObjectLedger::kStream];
      }
      if (counts[DeviceObjectLedger::kEvent] > 0) {
        of.events_on_device[device] = counts[DeviceObjectLedger::kEvent];
      }
      if (counts[DeviceObjectLedger::kNotify] > 0) {
        of.notifies_on_device[device] = counts[DeviceObjectLedger::kNotify];
      }
    }
  }
  for (const auto& [tenant, count] : memory_.AllocationsByTenant()) {
    entry(tenant).memory_allocations = count;
  }
  for (const auto& [tenant, bytes] : binary_charges_.ByTenant()) entry(tenant).binary_bytes = bytes;
  for (const auto& [tenant, weak] : tenant_queues_) {
    const std::shared_ptr<TenantQueue> queue = weak.lock();
    if (queue != nullptr && queue->used() > 0) entry(tenant).queued_bytes = queue->used();
  }
  std::vector<TenantSnapshot> all;
  for (auto& [tenant, snapshot] : tenants) all.push_back(std::move(snapshot));
  return all;
}

std::vector<StreamSnapshot> Runtime::StreamsSnapshot(SessionId only) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<StreamSnapshot> streams;
  for (const auto& [session_id, session] : sessions_.all()) {
    if (only != 0 && session_id != only) continue;
    for (const auto& [stream_id, stream] : session.streams) {
      StreamSnapshot stream_info;
      stream_info.id = stream_id;
      stream_info.session = session_id;
      stream_info.device = stream->options().device;
      stream_info.priority = stream->options().priority;
      stream_info.stats = stream->Stats();
      stream_info.custom_allocator = session.streams_with_allocator.count(stream_id) > 0;
      streams.push_back(stream_info);
    }
  }
  return streams;
}

RuntimeSnapshot Runtime::Snapshot() const {
  // Asked before the lock: a backend may ask its vendor (the devices
  // themselves never change).
  std::vector<hal::DeviceUtilization> utilization;
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    utilization.push_back(backend_->device(id).Utilization());
  }
  absl::ReaderMutexLock lock(&mu_);
  RuntimeSnapshot snapshot;
  snapshot.backend = backend_->name();
  snapshot.callback_latency = broker_.Latencies();
  snapshot.host_refcount = init_.host_count();
  for (int32_t id = 0; id < backend_->device_count(); ++id) {
    const hal::Device& device = backend_->device(id);
    DeviceSnapshot info{device.info(), device.is_up(), 0, device.used_bytes(), utilization[id],
                        disabled_devices_.count(id) != 0, engines_[id]->tally().Read()};
    info.tenant_share = {device_objects_.Share(id, DeviceObjectLedger::kStream),
                         device_objects_.Share(id, DeviceObjectLedger::kEvent),
                         device_objects_.Share(id, DeviceObjectLedger::kNotify)};
    for (const auto& [session_id, session] : sessions_.all()) {
      info.sessions += session.device_refs.count(id) ? 1 : 0;
    }
    snapshot.devices.push_back(info);
  }
  for (const auto& [session_id, session] : sessions_.all()) {
    SessionSnapshot entry;
    entry.session = SessionSummary{session.id,
                                   session.peer,
                                   session.connected_since,
                                   session.group,
                                   session.device_refs,
                                   session.config,
                                   session.max_streams,
                                   session.max_contexts,
                                   session.max_events,
                                   session.weight,
                                   session.streams.size(),
                                   session.closing_streams.size(),
                                   ContextsCreated(session),
                                   EventsHeld(session),
                                   session.binaries.size()};
    entry.init_count = init_.CountOf(session_id);
    const MemoryManager::SessionUsage usage = memory_.UsageOf(session_id);
    entry.memory_bytes = usage.bytes;
    entry.memory_quota = usage.quota;
    entry.memory_allocations = usage.allocations;
    entry.max_memory_allocations = usage.max_allocations;
    entry.pending_callbacks = broker_.Pending(session_id);
    entry.callback_timeouts = broker_.Timeouts(session_id);
    entry.queued_bytes = session.queue_budget->used();
    entry.queued_bytes_limit = session.queue_budget->limit();
    entry.binary_bytes = binary_charges_.OfSession(session_id);
    entry.binary_bytes_limit = binary_charges_.max_per_session();
    entry.physical = physical_.UsageOf(session_id);
    entry.noticed_revocations = memory_.NoticedRangesOf(session_id);
    snapshot.sessions.push_back(std::move(entry));
  }
  snapshot.tenants = TenantsLocked();
  snapshot.max_allocations_per_tenant = memory_.MaxAllocationsPerTenant();
  snapshot.max_binary_bytes_per_tenant = binary_charges_.max_per_tenant();
  snapshot.max_streams_per_tenant = max_streams_per_tenant_;
  snapshot.max_contexts_per_tenant = max_contexts_per_tenant_;
  snapshot.max_events_per_tenant = max_events_per_tenant_;
  snapshot.device_share_per_tenant = device_objects_.percent();
  snapshot.max_queued_bytes_per_tenant = readers_await_queue_room_ ? max_queued_bytes_per_tenant_ : 0;
  return snapshot;
}

}  // namespace acld
