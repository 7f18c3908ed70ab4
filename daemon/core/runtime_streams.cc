// Runtime: streams, events and the tasks that run on streams.
#include <atomic>

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"
#include "daemon/core/pinned_memory.h"
#include "daemon/core/runtime.h"

namespace acld {
namespace {

absl::Status UnknownStream(StreamId stream) {
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrCat("stream ", stream,
                                " is not a live stream of this process (destroyed, or another "
                                "process's handle)"));
}

absl::Status UnknownEvent(EventId event) {
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrCat("event ", event,
                                " is not a live event of this process (destroyed, or another "
                                "process's handle)"));
}

absl::Status UnknownNotify(NotifyId notify) {
  return AclStatus(ACL_ERROR_INVALID_PARAM,
                   absl::StrCat("notify ", notify,
                                " is not a live notify of this process (destroyed, or another "
                                "process's handle)"));
}

// A device's streams synchronized one after another (Runtime::SynchronizeDevice).
struct DeviceSync {
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> streams;  // and its last task
  size_t next = 0;
  absl::Time deadline;
  absl::Status first_error;
  Done done;
};

// Synchronizes `sync`'s next streams; a stream that is done at once does not
// nest a call (a session may have 4096 streams), one that is not goes on
// from its completion.
void SynchronizeNext(std::shared_ptr<DeviceSync> sync) {
  while (sync->next < sync->streams.size()) {
    const auto& [stream, through] = sync->streams[sync->next++];
    // 0: waiting; 1: answered before Synchronize returned; 2: answered later.
    auto answered = std::make_shared<std::atomic<int>>(0);
    stream->Synchronize(
        std::max(sync->deadline - absl::Now(), absl::ZeroDuration()),
        [sync, answered](absl::Status status) {
          if (!status.ok() && sync->first_error.ok()) sync->first_error = std::move(status);
          int waiting = 0;
          if (!answered->compare_exchange_strong(waiting, 1)) SynchronizeNext(sync);
        },
        through);
    int waiting = 0;
    if (answered->compare_exchange_strong(waiting, 2)) return;  // goes on from the answer
  }
  Done done = std::move(sync->done);
  done(sync->first_error);
}

// Calls `done` once, with the first error, after `count` calls of the returned function.
std::function<void(absl::Status)> Countdown(size_t count, Done done) {
  struct State {
    std::atomic<size_t> remaining;
    absl::Mutex mu;
    absl::Status first_error;
    Done done;
  };
  auto state = std::make_shared<State>();
  state->remaining = count;
  state->done = std::move(done);
  return [state](absl::Status status) {
    if (!status.ok()) {
      absl::MutexLock lock(&state->mu);
      if (state->first_error.ok()) state->first_error = std::move(status);
    }
    if (state->remaining.fetch_sub(1) == 1) {
      absl::Status result;
      {
        absl::MutexLock lock(&state->mu);
        result = state->first_error;
      }
      state->done(std::move(result));
    }
  };
}

}  // namespace

absl::StatusOr<std::shared_ptr<Stream>> Runtime::FindStream(SessionId id, StreamId stream) {
  absl::ReaderMutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  auto it = (*session)->streams.find(stream);
  if (it == (*session)->streams.end()) return UnknownStream(stream);
  return it->second;
}

absl::StatusOr<std::shared_ptr<Event>> Runtime::FindEvent(SessionId id, EventId event) {
  absl::ReaderMutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  auto it = (*session)->events.find(event);
  if (it == (*session)->events.end()) return UnknownEvent(event);
  return it->second;
}

absl::StatusOr<std::shared_ptr<Notify>> Runtime::FindNotify(SessionId id, NotifyId notify) {
  absl::ReaderMutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  auto it = (*session)->notifies.find(notify);
  if (it == (*session)->notifies.end()) return UnknownNotify(notify);
  return it->second;
}

absl::StatusOr<std::shared_ptr<Stream>> Runtime::NewStreamLocked(Session& session,
                                                                 int32_t device_id,
                                                                 uint32_t priority,
                                                                 uint32_t flags, const char* call,
                                                                 bool saturate_floats) {
  // Every stream, a context's default one included, is one of the device's.
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> device_charge,
                       device_objects_.Charge(TenantOf(session), device_id,
                                              DeviceObjectLedger::kStream, call));
  Stream::Options options{next_handle_++, session.id, device_id, priority, flags};
  options.device_charge = std::move(device_charge);
  options.saturate_floats = saturate_floats;
  options.owner = TenantOf(session).Key();
  options.charge_notify = [this, tenant = TenantOf(session), device_id] {
    return device_objects_.Charge(tenant, device_id, DeviceObjectLedger::kNotify,
                                  "a host-callback point or a wait the host releases");
  };
  options.charge_memory = [this, session = session.id, device_id](uint64_t bytes) {
    return memory_.ChargeBackendMemory(session, device_id, bytes,
                                       "aclrtLaunchKernel (the stream's kernel argument ring)");
  };
  const uint32_t places = backend_->device(device_id).tasks_per_session();
  if (places > 0) {
    std::shared_ptr<DeviceShare>& share = session.device_shares[device_id];
    if (share == nullptr) share = std::make_shared<DeviceShare>(places);
    options.device_share = share;
  }
  ACL_ASSIGN_OR_RETURN(
      std::shared_ptr<Stream> stream,
      Stream::Create(options, *engines_[device_id], timer_, backend_->device(device_id),
                     [this](const TaskFailure& failure) { ReportFailure(failure); },
                     [this](const KernelOutput& output) { ReportOutput(output); }));
  session.streams[options.id] = stream;
  return stream;
}

absl::StatusOr<StreamId> Runtime::CreateStream(SessionId id, ContextId context_id,
                                               uint32_t priority, uint32_t flags,
                                               bool saturate_floats) {
  if (priority >= StreamEngine::kPriorities) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("stream priority ", priority, " is outside 0..7"));
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  auto context = (*session)->contexts.find(context_id);
  if (context == (*session)->contexts.end()) {
    return AclStatus(ACL_ERROR_RT_CONTEXT_NULL,
                     absl::StrCat("context ", context_id,
                                  " is not a context of this process; call aclrtSetDevice"));
  }
  absl::Status quota = CheckStreamQuotaLocked(**session, "aclrtCreateStream");
  if (!quota.ok()) return quota;
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream,
                       NewStreamLocked(**session, context->second.device, priority, flags,
                                       "aclrtCreateStream", saturate_floats));
  return stream->id();
}

void Runtime::DestroyStream(SessionId id, StreamId stream_id, bool force, Done done) {
  std::shared_ptr<Stream> stream;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return done(session.status());
    auto it = (*session)->streams.find(stream_id);
    if (it == (*session)->streams.end()) return done(UnknownStream(stream_id));
    for (const auto& [context_id, context] : (*session)->contexts) {
      if (context.default_stream == stream_id) {
        return done(
            AclStatus(ACL_ERROR_INVALID_PARAM, "a context's default stream cannot be destroyed"));
      }
    }
    stream = it->second;
    (*session)->streams.erase(it);
    (*session)->streams_with_allocator.erase(stream_id);
    (*session)->closing_streams[stream_id] = stream;
  }
  if (force) {
    // Returns now; the launched work still runs (and counts) until it is
    // done, and a reset of the device waits for it.
    stream->Close([this, id, stream_id] { StreamDrained(id, stream_id); });
    return done(absl::OkStatus());
  }
  stream->Close([this, id, stream_id, done = std::move(done)] {
    StreamDrained(id, stream_id);
    done(absl::OkStatus());
  });
}

absl::Status Runtime::AbortStream(SessionId id, StreamId stream_id) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  (*stream)->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT,
                             absl::StrCat("stream ", stream_id, " was aborted (aclrtStreamAbort); "
                                          "its queued work was discarded")));
  return absl::OkStatus();
}

absl::Status Runtime::StopStream(SessionId id, StreamId stream_id) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  return stream->StopRunningTask(
      AclStatus(ACL_ERROR_RT_INTERNAL_ERROR,
                absl::StrCat("stream ", stream_id, ": its running task was stopped by "
                             "aclrtStreamStop before it finished")));
}

absl::StatusOr<std::shared_ptr<void>> Runtime::ChargeTasks(SessionId id, uint64_t tasks,
                                                           uint64_t payload_bytes) {
  std::shared_ptr<QueueBudget> budget;
  {
    absl::ReaderMutexLock lock(&mu_);
    ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
    budget = session->queue_budget;
  }
  // May wait for room: no lock is held here.
  return budget->Charge(tasks * QueueBudget::kTaskOverheadBytes + payload_bytes);
}

void Runtime::DrainReleased(SessionId id, Released released, Done done) {
  // Given back before anyone hears the release is done (a reset's answer):
  // the process may allocate all of it again at once.
  released.memory.clear();
  auto handles = std::make_shared<ReleasedHandles>(std::move(released.handles));
  auto finish = [handles, done = std::move(done)](absl::Status status) {
    handles->ReleaseWaiters();
    done(std::move(status));
  };
  const size_t streams = released.streams.size() + released.finishing.size();
  if (streams == 0) return finish(absl::OkStatus());
  auto each = Countdown(streams, std::move(finish));
  for (const auto& stream : released.streams) {
    stream->Close([this, id, stream_id = stream->options().id, each] {
      StreamDrained(id, stream_id);
      each(absl::OkStatus());
    });
  }
  // Closing already: one more waiter for the same drain.
  for (const auto& stream : released.finishing) {
    stream->Close([each] { each(absl::OkStatus()); });
  }
}

void Runtime::DiscardReleased(Released released) {
  released.memory.clear();
  const absl::Status ended = AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE, "the session ended; the work it had queued was discarded");
  for (const auto& stream : released.streams) {
    // Closed first: a call of the session still in flight can no longer
    // append to the stream once its work is discarded.
    stream->Close([] {});
    stream->Abort(ended);
  }
  for (const auto& stream : released.finishing) stream->Abort(ended);
  released.handles.ReleaseWaiters();
}

void Runtime::ReleasedHandles::ReleaseWaiters() const {
  for (const auto& event : events) event->ReleaseWaiters();
  for (const auto& event : opened_events) event->ReleaseWaitersOf(session);
  for (const auto& notify : notifies) notify->ReleaseWaiters();
}

void Runtime::SynchronizeStream(SessionId id, StreamId stream_id, absl::Duration timeout,
                                Done done) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return done(stream.status());
  (*stream)->Synchronize(timeout, std::move(done));
}

absl::StatusOr<bool> Runtime::StreamIdle(SessionId id, StreamId stream_id) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  return (*stream)->Idle();
}

absl::Status Runtime::SetStreamFailureMode(SessionId id, StreamId stream_id, uint64_t mode) {
  if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("failure mode ", mode,
                                  " is neither ACL_CONTINUE_ON_FAILURE nor ACL_STOP_ON_FAILURE"));
  }
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  return (*stream)->SetFailureMode(mode == ACL_STOP_ON_FAILURE ? FailureMode::kStop
                                                               : FailureMode::kContinue);
}

absl::Status Runtime::SetStreamAllocator(SessionId id, StreamId stream_id, bool registered) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  if ((*session)->streams.count(stream_id) == 0) return UnknownStream(stream_id);
  if (registered) {
    (*session)->streams_with_allocator.insert(stream_id);
  } else {
    (*session)->streams_with_allocator.erase(stream_id);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Runtime::Enqueue(SessionId id, const std::shared_ptr<Stream>& stream,
                                          uint64_t thread, uint64_t payload_bytes, TaskFn task,
                                          std::function<void()> on_discard,
                                          const char* waits_for) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> charge, ChargeTask(id, payload_bytes));
  return stream->Enqueue(std::move(task), thread, std::move(on_discard), waits_for,
                         std::move(charge));
}

absl::StatusOr<uint64_t> Runtime::EnqueueDeviceWork(SessionId id,
                                                    const std::shared_ptr<Stream>& stream,
                                                    uint64_t thread, uint64_t payload_bytes,
                                                    const char* what, DeviceWork work,
                                                    DeviceDone done,
                                                    std::function<void()> on_discard,
                                                    DeviceWorkKind kind) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> charge, ChargeTask(id, payload_bytes));
  return stream->EnqueueDeviceWork(std::move(work), what, thread, std::move(on_discard),
                                   std::move(done), std::move(charge), kind);
}

absl::StatusOr<const hal::Function*> Runtime::BuiltinKernel(const Stream& stream,
                                                            const std::string& name) const {
  const hal::Executable* builtin = backend_->device(stream.options().device).builtin_kernels();
  absl::StatusOr<const hal::Function*> function =
      builtin == nullptr ? absl::StatusOr<const hal::Function*>(absl::NotFoundError(""))
                         : builtin->GetFunction(name);
  if (!function.ok()) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclsimLaunchKernel: no built-in kernel named '",
                                  absl::CHexEscape(name.substr(0, 64)), "'"));
  }
  return function;
}

namespace {

// A built-in kernel's argument block: its 64-bit arguments, in order.
std::string ArgumentBlock(const std::vector<uint64_t>& args) {
  std::string block(args.size() * 8, '\0');
  if (!block.empty()) std::memcpy(block.data(), args.data(), block.size());
  return block;
}

bool SameLaunch(const KernelRequest& a, const KernelRequest& b) {
  return a.name == b.name && a.block_dim == b.block_dim && a.args == b.args &&
         a.core_limits.cube == b.core_limits.cube && a.core_limits.vector == b.core_limits.vector;
}

}  // namespace

absl::StatusOr<uint64_t> Runtime::LaunchKernel(SessionId id, StreamId stream_id, uint64_t thread,
                                               KernelRequest request) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  ACL_ASSIGN_OR_RETURN(const hal::Function* function, BuiltinKernel(*stream, request.name));
  return Launch(id, stream, thread, *function, nullptr, request.block_dim, request.core_limits,
                ArgumentBlock(request.args));
}

std::vector<absl::Status> Runtime::LaunchKernels(SessionId id, StreamId stream_id,
                                                 std::vector<ThreadKernel> kernels) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return std::vector<absl::Status>(kernels.size(), stream.status());
  std::vector<absl::Status> statuses(kernels.size());
  std::vector<Stream::QueuedLaunch> launches;
  std::vector<size_t> launched;  // the index in `kernels` of each of `launches`
  launches.reserve(kernels.size());
  launched.reserve(kernels.size());
  uint64_t payload = 0;
  const std::string* last_name = nullptr;
  absl::StatusOr<const hal::Function*> function = nullptr;
  for (size_t i = 0; i < kernels.size(); ++i) {
    KernelRequest& kernel = kernels[i].kernel;
    // A batch launches the same few kernels over and over: look each up once.
    if (last_name == nullptr || *last_name != kernel.name) {
      function = BuiltinKernel(**stream, kernel.name);
      last_name = &kernel.name;
    }
    if (!function.ok()) {
      statuses[i] = function.status();
      continue;
    }
    payload += kernel.args.size() * 8 + (*function)->name().size();
    if (!launched.empty() && SameLaunch(kernels[launched.back()].kernel, kernel) &&
        launches.back().launch.function == *function) {
      // The same kernel on the same arguments as the launch before it: the
      // same ranges, checked and pinned a moment ago, with nothing in
      // between that could free them (a run of launches holds no other
      // operation). The pins are shared rather than made again.
      launches.push_back({launches.back().launch, kernels[i].thread});
      launched.push_back(i);
      continue;
    }
    absl::StatusOr<KernelLaunch> launch =
        PrepareLaunch(id, (*stream)->options().device, **function, nullptr, kernel.block_dim,
                      kernel.core_limits, ArgumentBlock(kernel.args), {});
    if (!launch.ok()) {
      statuses[i] = launch.status();
      continue;
    }
    launches.push_back({*std::move(launch), kernels[i].thread});
    launched.push_back(i);
  }
  if (launches.empty()) return statuses;
  absl::Status appended = [&]() -> absl::Status {
    ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> charge, ChargeTasks(id, launches.size(), payload));
    return (*stream)->EnqueueLaunches(std::move(launches), std::move(charge)).status();
  }();
  if (!appended.ok()) {
    for (size_t i : launched) statuses[i] = appended;
  }
  return statuses;
}

absl::StatusOr<hal::CoreLimits> Runtime::CheckCoreLimits(int32_t device_id,
                                                         const CoreLimits& limits) const {
  if (limits.cube == 0 && limits.vector == 0) return hal::CoreLimits{};
  const hal::DeviceFeatures features = backend_->device(device_id).features();
  const std::map<int32_t, int64_t>& info = features.device_info;
  // A limit names 1 .. the device's count of that kind (the client checked
  // when it was set; a session's launch is checked again here).
  for (const auto& [value, attribute, kind] :
       {std::tuple{limits.cube, ACL_DEV_ATTR_CUBE_CORE_NUM, "cube"},
        std::tuple{limits.vector, ACL_DEV_ATTR_VECTOR_CORE_NUM, "vector"}}) {
    if (value == 0) continue;
    auto count = info.find(attribute);
    if (count == info.end() || value > count->second) {
      return AclStatus(ACL_ERROR_INVALID_PARAM,
                       absl::StrCat("kernel launch: a limit of ", value, " ", kind,
                                    " cores; the device has ",
                                    count == info.end() ? 0 : count->second));
    }
  }
  return hal::CoreLimits{limits.cube, limits.vector};
}

absl::StatusOr<KernelLaunch> Runtime::PrepareLaunch(
    SessionId id, int32_t device_id, const hal::Function& function,
    std::shared_ptr<const void> executable, uint32_t block_dim, const CoreLimits& limits,
    std::string args, std::vector<Placeholder> placeholders) {
  if (block_dim == 0) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "kernel launch: blockDim must be > 0");
  }
  ACL_ASSIGN_OR_RETURN(hal::CoreLimits core_limits, CheckCoreLimits(device_id, limits));
  // The memory the kernel will touch is checked and pinned now, as a device
  // would fault on it. A backend that cannot tell the ranges gets no resolver
  // (docs/security.md), and the launch holds all of the session's memory
  // instead: the kernel may reach any of it until the device ran it.
  KernelLaunch launch{&function, std::move(executable), {block_dim, {}, nullptr, core_limits},
                      std::make_shared<PinnedMemory>(), absl::OkStatus()};
  PinnedMemory* pinned = launch.pinned.get();
  if (!placeholders.empty()) {
    ACL_RETURN_IF_ERROR(
        PlacePlaceholders(id, device_id, std::move(placeholders), args, *pinned));
  }
  const std::optional<uint64_t> args_size = function.args_size();
  if (args_size.has_value() && args.size() != *args_size) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("kernel launch: ", function.name(), " takes ", *args_size,
                                  " bytes of arguments, got ", args.size()));
  }
  absl::StatusOr<std::vector<hal::DeviceRange>> ranges = function.Ranges(block_dim, args);
  if (ranges.ok()) {
    launch.pinned_status = pinned->Pin(memory_, id, *ranges);
  } else if (absl::IsUnimplemented(ranges.status())) {
    std::shared_ptr<void> hold = memory_.HoldForOpaqueWork(id);
    // A call still in flight as its session ended: that memory is gone.
    if (hold == nullptr) {
      return AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "kernel launch: the session ended");
    }
    pinned->HoldOpaque(std::move(hold));
  } else {
    launch.pinned_status = ranges.status();
  }
  // The backend's item holds it too, until the device ran or dropped the
  // launch: the core's task may go first (a stream destroyed with work on
  // the device).
  launch.params.memory = launch.pinned;
  launch.params.args = std::move(args);
  return launch;
}

absl::StatusOr<uint64_t> Runtime::Launch(SessionId id, const std::shared_ptr<Stream>& stream,
                                         uint64_t thread, const hal::Function& function,
                                         std::shared_ptr<const void> executable,
                                         uint32_t block_dim, const CoreLimits& limits,
                                         std::string args,
                                         std::vector<Placeholder> placeholders,
                                         FunctionId function_handle) {
  const uint64_t payload = args.size() + function.name().size();
  ACL_ASSIGN_OR_RETURN(KernelLaunch launch,
                       PrepareLaunch(id, stream->options().device, function,
                                     std::move(executable), block_dim, limits, std::move(args),
                                     std::move(placeholders)));
  launch.function_handle = function_handle;
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> charge, ChargeTask(id, payload));
  return stream->EnqueueLaunch(std::move(launch), thread, std::move(charge));
}

absl::StatusOr<uint64_t> Runtime::EnqueueCopy(SessionId id, StreamId stream_id, uint64_t thread,
                                              const CopyRequest& copy) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  // Inline bytes (a request's buffer) are held by the task: charge them.
  const uint64_t payload = copy.host.owned_bytes;
  auto prepared = std::make_shared<absl::StatusOr<PreparedCopy>>(PrepareCopy(id, copy));
  DeviceWorkKind kind;
  if (prepared->ok()) {
    const hal::Transfer& transfer = (*prepared)->transfer;
    const void* host = transfer.host_src != nullptr ? transfer.host_src : transfer.host_dst;
    kind.submitted_alone = host != nullptr && transfer.count != 0 &&
                           backend_->device(stream->options().device)
                               .CopyBlocksSubmitter(host, transfer.count);
  }
  return EnqueueDeviceWork(id, stream, thread, payload, "copy",
                           [prepared](hal::Stream& device) -> absl::StatusOr<uint64_t> {
                             if (!prepared->ok()) return prepared->status();
                             return device.Copy((*prepared)->transfer);
                           },
                           nullptr, nullptr, kind);
}

absl::StatusOr<uint64_t> Runtime::EnqueueCopyToClient(SessionId id, StreamId stream_id,
                                                      uint64_t thread, uint64_t device_src,
                                                      uint64_t count, Deliver deliver) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  struct ToClient {
    absl::StatusOr<ResolvedRange> source;
    std::string bytes;  // exists only from when the stream reaches the copy until it is sent
  };
  auto copy = std::make_shared<ToClient>(
      ToClient{count == 0 ? absl::StatusOr<ResolvedRange>(ResolvedRange{})
                          : memory_.Resolve(id, device_src, count),
               {}});
  auto on_discard = [deliver] {
    deliver(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "the copy was discarded by its stream"));
  };
  // The staging bytes live from the submit to the delivery: charged. They
  // are allocated at the submit (host null).
  DeviceWorkKind kind;
  kind.submitted_alone =
      count != 0 && backend_->device(stream->options().device).CopyBlocksSubmitter(nullptr, count);
  return EnqueueDeviceWork(
      id, stream, thread, count, "copy",
      [copy, count](hal::Stream& device) -> absl::StatusOr<uint64_t> {
        if (!copy->source.ok()) return copy->source.status();
        copy->bytes.resize(count);
        hal::Transfer transfer;
        if (count != 0) transfer.device_src = copy->source->span;
        else transfer.host_src = copy->bytes.data();
        transfer.host_dst = copy->bytes.data();
        transfer.host_reads_next = true;  // delivered at once
        transfer.count = count;
        return device.Copy(transfer);
      },
      [copy, deliver](const absl::Status& status) {
        if (!status.ok()) return deliver(status);
        deliver(std::move(copy->bytes));
      },
      std::move(on_discard), kind);
}

absl::StatusOr<uint64_t> Runtime::EnqueueMemset(SessionId id, StreamId stream_id, uint64_t thread,
                                                const MemsetRequest& memset) {
  if (memset.count > memset.max_count) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: count is larger than maxCount");
  }
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  auto target = std::make_shared<absl::StatusOr<ResolvedRange>>(ResolveFill(id, memset));
  const uint8_t value = static_cast<uint8_t>(memset.value);
  const uint64_t count = memset.count;
  return EnqueueDeviceWork(id, stream, thread, 0, "fill",
                           [target, value, count](hal::Stream& device) -> absl::StatusOr<uint64_t> {
                             if (!target->ok()) return target->status();
                             return device.Fill((*target)->span, value, count);
                           });
}

absl::StatusOr<uint64_t> Runtime::EnqueueReduce(SessionId id, StreamId stream_id, uint64_t thread,
                                                const ReduceRequest& reduce) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  struct Operands {
    ResolvedRange dst, src;
  };
  auto operands = std::make_shared<Operands>();
  if (reduce.count != 0) {
    ACL_ASSIGN_OR_RETURN(operands->dst, ResolveForStream(id, *stream, reduce.device_dst,
                                                         reduce.count, "aclrtReduceAsync: dst"));
    ACL_ASSIGN_OR_RETURN(operands->src, ResolveForStream(id, *stream, reduce.device_src,
                                                         reduce.count, "aclrtReduceAsync: src"));
  }
  const ReduceRequest request = reduce;
  return EnqueueDeviceWork(id, stream, thread, 0, "reduce",
                           [operands, request](hal::Stream& device) -> absl::StatusOr<uint64_t> {
                             return device.Reduce(hal::Reduction{
                                 operands->dst.span, operands->src.span, request.count,
                                 request.kind, request.data_type});
                           });
}

absl::StatusOr<uint64_t> Runtime::EnqueueValueWait(SessionId id, StreamId stream_id,
                                                   uint64_t thread, const ValueWaitRequest& wait) {
  if (wait.flag > ACL_STREAM_WAIT_VALUE_NOR) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclrtValueWait: flag ", wait.flag,
                                  " is not one of ACL_STREAM_WAIT_VALUE_GEQ, _EQ, _AND, _NOR"));
  }
  if (wait.address % 8 != 0) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtValueWait: devAddr must be 8-byte aligned");
  }
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  ACL_ASSIGN_OR_RETURN(ResolvedRange word,
                       ResolveForStream(id, *stream, wait.address, 8, "aclrtValueWait: devAddr"));
  auto held = std::make_shared<ResolvedRange>(std::move(word));
  const uint64_t value = wait.value;
  const uint32_t flag = wait.flag;
  return EnqueueDeviceWork(
      id, stream, thread, 0, "value",
      [held, value, flag](hal::Stream& device) { return device.WaitValue(held->span, value, flag); },
      nullptr, nullptr, {/*may_be_held=*/true});
}

absl::StatusOr<uint64_t> Runtime::RecordEvent(SessionId id, EventId event_id, StreamId stream_id,
                                              uint64_t thread) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Event> event, FindEvent(id, event_id));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  // Charged before the record number is taken: a record that never gets
  // enqueued must not leave the event waiting for it.
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> charge, ChargeTask(id, 0));
  const uint64_t record = event->TakeRecordNumber();
  absl::StatusOr<uint64_t> task = stream->EnqueueDeviceWork(
      [event, record](hal::Stream& device) -> absl::StatusOr<uint64_t> {
        absl::StatusOr<uint64_t> submitted = device.RecordEvent(event->device_event(), record);
        if (!submitted.ok()) event->DropRecord(record);
        return submitted;
      },
      "event record", thread,
      // Dropped before it ran: waits for it must not wait for ever.
      [event, record] { event->DropRecord(record); },
      [event, record](const absl::Status&) {
        event->CompleteRecord(record, event->device_event().TimestampNanos().value_or(0));
      },
      std::move(charge));
  // Refused (the stream is being destroyed): the number is never recorded.
  if (!task.ok()) event->DropRecord(record);
  return task;
}

absl::StatusOr<uint64_t> Runtime::ResetEvent(SessionId id, EventId event_id, StreamId stream_id,
                                             uint64_t thread) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  return Enqueue(id, *stream, thread, 0,
                 [event = *event](const TaskResume&) -> std::optional<absl::Status> {
                   event->Reset();
                   return absl::OkStatus();
                 });
}

absl::StatusOr<uint64_t> Runtime::StreamWaitEvent(SessionId id, StreamId stream_id,
                                                  EventId event_id, uint64_t thread) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Event> event, FindEvent(id, event_id));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  // The latest record made before this call, as on a device.
  const uint64_t target = event->latest_record();
  // Another session's IPC event: a record its owner's end or abort dropped
  // fails the wait instead of passing it (docs/security.md).
  const bool fail_if_dropped = event->owner() != id;
  if (event->device() == stream->options().device) {
    // The device holds the stream until that record ran (or was dropped):
    // the work after the wait is queued on the device meanwhile.
    return EnqueueDeviceWork(
        id, stream, thread, 0, "event",
        [event, target, fail_if_dropped](hal::Stream& device) {
          return device.WaitEvent(event->device_event(), target, fail_if_dropped);
        },
        nullptr, nullptr, {/*may_be_held=*/true});
  }
  // Another device's event: its records are not the device's to see. A wait
  // discarded before its record settles is forgotten at once: a client that
  // aborted such waits in a loop would otherwise pile them up in the event.
  auto wait_id = std::make_shared<std::atomic<uint64_t>>(0);
  return Enqueue(
      id, stream, thread, 0,
      [event, target, fail_if_dropped,
       wait_id](const TaskResume& resume) -> std::optional<absl::Status> {
        auto outcome = [event, target, fail_if_dropped] {
          return fail_if_dropped ? event->OutcomeForOthers(target) : absl::OkStatus();
        };
        const uint64_t waiting = event->WaitFor(target, [resume, outcome] { resume(outcome()); });
        if (waiting == 0) return outcome();
        wait_id->store(waiting);
        return std::nullopt;
      },
      [event, wait_id] { event->CancelWait(wait_id->load()); }, "event");
}

absl::StatusOr<uint64_t> Runtime::RecordNotify(SessionId id, NotifyId notify_id,
                                               StreamId stream_id, uint64_t thread) {
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Notify> notify, FindNotify(id, notify_id));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  return Enqueue(id, stream, thread, 0,
                 [notify](const TaskResume&) -> std::optional<absl::Status> {
                   notify->Record();
                   return absl::OkStatus();
                 });
}

absl::StatusOr<uint64_t> Runtime::WaitAndResetNotify(SessionId id, NotifyId notify_id,
                                                     StreamId stream_id, uint32_t timeout_s,
                                                     uint64_t thread) {
  const absl::Duration timeout =
      timeout_s == 0 ? absl::InfiniteDuration() : absl::Seconds(timeout_s);
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Notify> notify, FindNotify(id, notify_id));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, FindStream(id, stream_id));
  // An aborted wait must not take the record meant for the next one.
  auto wait_id = std::make_shared<std::atomic<uint64_t>>(0);
  return Enqueue(
      id, stream, thread, 0,
      [notify, timeout, wait_id](const TaskResume& resume) -> std::optional<absl::Status> {
        const uint64_t waiting = notify->WaitAndReset(timeout, resume);
        if (waiting == 0) return absl::OkStatus();
        wait_id->store(waiting);
        return std::nullopt;
      },
      [notify, wait_id] { notify->Cancel(wait_id->load()); }, "notify");
}

absl::StatusOr<uint64_t> Runtime::EnqueueCallback(SessionId id, StreamId stream_id,
                                                  uint64_t thread, uint64_t callback_id,
                                                  bool block) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  std::shared_ptr<const SessionEvents> events;
  {
    absl::ReaderMutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return session.status();
    events = (*session)->notify;
  }
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> charge, ChargeTask(id, 0));
  CallbackBroker::PointTask task = broker_.MakeTask(id, stream_id, callback_id, block, events);
  return (*stream)->EnqueueHostPoint(std::move(task.at_point), "callback", thread,
                                     std::move(charge), std::move(task.on_discard));
}

absl::Status Runtime::AcknowledgeCallback(SessionId id, uint64_t callback_id) {
  return broker_.Acknowledge(id, callback_id);
}

absl::StatusOr<EventId> Runtime::CreateEvent(SessionId id, int32_t device_id, uint32_t flags) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return valid;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  absl::Status room =
      CheckEventQuotaLocked(**session, "aclrtCreateEvent", ACL_ERROR_RT_NO_EVENT_RESOURCE);
  if (!room.ok()) return room;
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<void> device_charge,
                       device_objects_.Charge(TenantOf(**session), device_id,
                                              DeviceObjectLedger::kEvent, "aclrtCreateEvent"));
  ACL_ASSIGN_OR_RETURN(std::shared_ptr<hal::Event> device_event,
                       backend_->device(device_id).CreateEvent());
  const EventId event_id = next_handle_++;
  (*session)->events[event_id] =
      std::make_shared<Event>(event_id, id, device_id, flags, timer_, std::move(device_event),
                              std::move(device_charge));
  return event_id;
}

absl::Status Runtime::DestroyEvent(SessionId id, EventId event_id) {
  std::shared_ptr<Event> event;
  bool owned = false;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return session.status();
    auto it = (*session)->events.find(event_id);
    if (it == (*session)->events.end()) {
      if ((*session)->revoked_handles.erase(event_id) != 0) return absl::OkStatus();
      return UnknownEvent(event_id);
    }
    event = std::move(it->second);
    (*session)->events.erase(it);
    // An opener's handle of another session's IPC event: the event stays,
    // this session's synchronizations on it go (below).
    owned = ForgetEventLocked(id, event);
  }
  // Record tasks still queued keep the event alive and complete harmlessly.
  if (owned) {
    event->ReleaseWaiters();
  } else {
    event->ReleaseWaitersOf(id);
  }
  return absl::OkStatus();
}

absl::StatusOr<NotifyId> Runtime::CreateNotify(SessionId id, int32_t device_id) {
  ACL_RETURN_IF_ERROR(CheckDeviceId(device_id));
  absl::MutexLock lock(&mu_);
  ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
  ACL_RETURN_IF_ERROR(
      CheckEventQuotaLocked(*session, "aclrtCreateNotify", ACL_ERROR_RT_NO_NOTIFY_RESOURCE));
  const NotifyId notify_id = next_handle_++;
  session->notifies[notify_id] = std::make_shared<Notify>(notify_id, device_id, timer_);
  return notify_id;
}

absl::Status Runtime::DestroyNotify(SessionId id, NotifyId notify_id) {
  std::shared_ptr<Notify> notify;
  {
    absl::MutexLock lock(&mu_);
    ACL_ASSIGN_OR_RETURN(Session * session, FindSession(id));
    auto it = session->notifies.find(notify_id);
    if (it == session->notifies.end()) {
      if (session->revoked_handles.erase(notify_id) != 0) return absl::OkStatus();
      return UnknownNotify(notify_id);
    }
    notify = std::move(it->second);
    session->notifies.erase(it);
    // An imported handle of another session's IPC notify: the notify stays.
    if (!ForgetNotifyLocked(id, notify)) return absl::OkStatus();
  }
  // Record tasks still queued keep the notify alive and run harmlessly.
  notify->ReleaseWaiters();
  return absl::OkStatus();
}

void Runtime::SynchronizeEvent(SessionId id, EventId event_id, absl::Duration timeout, Done done) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return done(event.status());
  if ((*event)->owner() == id) return (*event)->Synchronize(timeout, std::move(done));
  // Another session's IPC event: as its stream waits (StreamWaitEvent).
  const uint64_t target = (*event)->latest_record();
  // Tagged with this session: its end answers the wait, which the event's
  // owner might otherwise keep (with the event, which it holds) forever.
  (*event)->Synchronize(
      timeout,
      [event = *event, target, done = std::move(done)](absl::Status status) {
        if (status.ok()) status = event->OutcomeForOthers(target);
        done(std::move(status));
      },
      id);
  // Its end may have answered this session's waits in the event before
  // this one was added, which the owner would keep.
  if (Ended(id)) (*event)->ReleaseWaitersOf(id);
}

absl::StatusOr<EventStatus> Runtime::QueryEvent(SessionId id, EventId event_id) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  return EventStatus{(*event)->Complete(), (*event)->RecordedAndComplete()};
}

absl::StatusOr<float> Runtime::EventElapsedMs(SessionId id, EventId start_id, EventId end_id) {
  absl::StatusOr<std::shared_ptr<Event>> start = FindEvent(id, start_id);
  if (!start.ok()) return start.status();
  absl::StatusOr<std::shared_ptr<Event>> end = FindEvent(id, end_id);
  if (!end.ok()) return end.status();
  int64_t start_ns = 0, end_ns = 0;
  if (!(*start)->Timestamp(&start_ns) || !(*end)->Timestamp(&end_ns)) {
    return AclStatus(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                     "aclrtEventElapsedTime: both events must be recorded and complete");
  }
  return static_cast<float>(static_cast<double>(end_ns - start_ns) / 1e6);
}

absl::StatusOr<uint64_t> Runtime::EventTimestampUs(SessionId id, EventId event_id) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  int64_t timestamp_ns = 0;
  if (!(*event)->Timestamp(&timestamp_ns)) {
    return AclStatus(ACL_ERROR_RT_EVENT_NOT_COMPLETE,
                     "aclrtEventGetTimestamp: the event has no completed record (record it, then "
                     "synchronize its stream)");
  }
  return static_cast<uint64_t>(timestamp_ns) / 1000;
}

void Runtime::SynchronizeDevice(SessionId id, int32_t device_id, absl::Duration timeout,
                                Done done) {
  absl::Status valid = CheckDeviceId(device_id);
  if (!valid.ok()) return done(valid);
  std::vector<std::shared_ptr<Stream>> streams;
  {
    absl::ReaderMutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return done(session.status());
    for (const auto& [stream_id, stream] : (*session)->streams) {
      if (stream->options().device == device_id) streams.push_back(stream);
    }
  }
  if (streams.empty()) return done(absl::OkStatus());
  // One stream after another, each through the tasks it had now, so that a
  // call holds one waiter at a time: fanned out, a session's 4096 waiting
  // calls over its 4096 streams held 16 M waiters in acld.
  auto sync = std::make_shared<DeviceSync>();
  for (const auto& stream : streams) sync->streams.emplace_back(stream, stream->LastTaskId());
  sync->deadline = timeout == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                                       : absl::Now() + timeout;
  sync->done = std::move(done);
  SynchronizeNext(std::move(sync));
}

}  // namespace acld
