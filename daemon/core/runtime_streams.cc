// Runtime: streams, events and the tasks that run on streams.
#include <atomic>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "daemon/core/acl_status.h"
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

std::shared_ptr<Stream> Runtime::NewStreamLocked(Session& session, int32_t device_id,
                                                 uint32_t priority, uint32_t flags) {
  Stream::Options options{next_handle_++, session.id, device_id, priority, flags};
  auto stream =
      std::make_shared<Stream>(options, *engines_[device_id], timer_,
                               [this](const TaskFailure& failure) { ReportFailure(failure); });
  session.streams[options.id] = stream;
  return stream;
}

absl::StatusOr<StreamId> Runtime::CreateStream(SessionId id, ContextId context_id,
                                               uint32_t priority, uint32_t flags) {
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
  const uint32_t quota = (*session)->max_streams;
  if (quota != 0 && (*session)->streams.size() >= quota) {
    return AclStatus(ACL_ERROR_RT_NO_STREAM_RESOURCE,
                     absl::StrCat("this process may hold at most ", quota,
                                  " streams (its stream quota, default streams included); ask "
                                  "the operator (aclctl quota)"));
  }
  return NewStreamLocked(**session, context->second.device, priority, flags)->id();
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
  }
  stream->Close(force, [done = std::move(done)] { done(absl::OkStatus()); });
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
  (*stream)->SetFailureMode(mode == ACL_STOP_ON_FAILURE ? FailureMode::kStop
                                                        : FailureMode::kContinue);
  return absl::OkStatus();
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

absl::StatusOr<uint64_t> Runtime::Enqueue(SessionId id, StreamId stream_id, uint64_t thread,
                                          TaskFn task, std::function<void()> on_discard,
                                          const char* waits_for) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  return (*stream)->Enqueue(std::move(task), thread, std::move(on_discard), waits_for);
}

namespace {

// The kernel's view of device memory: the launching session's allocations only.
class SessionMemory : public hal::MemoryResolver {
 public:
  SessionMemory(const MemoryManager& memory, SessionId session)
      : memory_(memory), session_(session) {}
  absl::StatusOr<uint8_t*> Resolve(uint64_t address, uint64_t bytes) override {
    absl::StatusOr<ResolvedRange> range = memory_.Resolve(session_, address, bytes);
    if (!range.ok()) return range.status();
    keepalive_.push_back(range->keepalive);
    return range->data;
  }

 private:
  const MemoryManager& memory_;
  const SessionId session_;
  std::vector<std::shared_ptr<void>> keepalive_;
};

absl::Status KernelStatus(const std::string& name, absl::Status status) {
  if (status.ok()) return status;
  if (AclCodeOf(status) != ACL_ERROR_INTERNAL_ERROR) return status;  // an address check
  // A failure raised by the kernel itself is an AI core exception, as on a device.
  return AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION,
                   absl::StrCat("kernel ", name, " failed: ", status.message()));
}

}  // namespace

absl::StatusOr<uint64_t> Runtime::LaunchKernel(SessionId id, StreamId stream_id, uint64_t thread,
                                               KernelRequest request) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  const hal::Device& device = backend_->device((*stream)->options().device);
  const hal::Kernel* kernel = device.FindKernel(request.name);
  if (kernel == nullptr) {
    return AclStatus(
        ACL_ERROR_INVALID_PARAM,
        absl::StrCat("aclsimLaunchKernel: no built-in kernel named '", request.name, "'"));
  }
  if (request.block_dim == 0) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclsimLaunchKernel: blockDim must be > 0");
  }
  if (request.args.size() != kernel->arg_count()) {
    return AclStatus(
        ACL_ERROR_INVALID_PARAM,
        absl::StrCat("aclsimLaunchKernel: ", request.name, " takes ", kernel->arg_count() * 8,
                     " bytes of arguments, got ", request.args.size() * 8));
  }
  const uint64_t busy_micros = kernel->BusyMicros(request.args);
  auto shared = std::make_shared<const KernelRequest>(std::move(request));
  // A busy kernel dropped by its stream (forced destroy) must not apply its
  // effect when its busy time ends.
  auto discarded = std::make_shared<std::atomic<bool>>(false);
  TaskFn task = [this, id, kernel, shared, busy_micros,
                 discarded](const TaskResume& resume) -> std::optional<absl::Status> {
    auto run = [this, id, kernel, shared] {
      SessionMemory memory(memory_, id);
      return KernelStatus(shared->name, kernel->Run(shared->block_dim, shared->args, memory));
    };
    if (busy_micros == 0) return run();
    // The kernel occupies its stream for its busy time; no worker waits.
    timer_.Schedule(absl::Now() + absl::Microseconds(busy_micros), [run, resume, discarded] {
      if (!discarded->load()) resume(run());
    });
    return std::nullopt;
  };
  return (*stream)->Enqueue(
      std::move(task), thread, [discarded] { discarded->store(true); }, "kernel");
}

absl::StatusOr<uint64_t> Runtime::EnqueueCopy(SessionId id, StreamId stream, uint64_t thread,
                                              CopyRequest copy, Done finished) {
  std::function<void()> on_discard;
  if (finished) {
    on_discard = [finished] {
      finished(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "the copy was discarded by its stream"));
    };
  }
  return Enqueue(
      id, stream, thread,
      [this, id, copy = std::move(copy),
       finished](const TaskResume&) -> std::optional<absl::Status> {
        absl::Status status = RunCopy(id, copy);
        if (finished) finished(status);
        return status;
      },
      std::move(on_discard));
}

absl::StatusOr<uint64_t> Runtime::EnqueueMemset(SessionId id, StreamId stream, uint64_t thread,
                                                const MemsetRequest& memset) {
  if (memset.count > memset.max_count) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: count is larger than maxCount");
  }
  return Enqueue(id, stream, thread,
                 [this, id, memset](const TaskResume&) -> std::optional<absl::Status> {
                   return RunMemset(id, memset);
                 });
}

absl::StatusOr<uint64_t> Runtime::RecordEvent(SessionId id, EventId event_id, StreamId stream_id,
                                              uint64_t thread) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  const uint64_t record = (*event)->TakeRecordNumber();
  hal::Device* device = &backend_->device((*stream)->options().device);
  return (*stream)->Enqueue(
      [event = *event, record, device](const TaskResume&) -> std::optional<absl::Status> {
        event->CompleteRecord(record, device->NowNanos());
        return absl::OkStatus();
      },
      thread);
}

absl::StatusOr<uint64_t> Runtime::ResetEvent(SessionId id, EventId event_id, StreamId stream,
                                             uint64_t thread) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  return Enqueue(id, stream, thread,
                 [event = *event](const TaskResume&) -> std::optional<absl::Status> {
                   event->Reset();
                   return absl::OkStatus();
                 });
}

absl::StatusOr<uint64_t> Runtime::StreamWaitEvent(SessionId id, StreamId stream, EventId event_id,
                                                  uint64_t thread) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  const uint64_t target = (*event)->latest_record();
  return Enqueue(
      id, stream, thread,
      [event = *event, target](const TaskResume& resume) -> std::optional<absl::Status> {
        if (event->WaitFor(target, [resume] { resume(absl::OkStatus()); })) {
          return absl::OkStatus();
        }
        return std::nullopt;
      },
      nullptr, "event");
}

absl::StatusOr<uint64_t> Runtime::EnqueueCallback(SessionId id, StreamId stream, uint64_t thread,
                                                  uint64_t callback_id, bool block) {
  std::shared_ptr<const SessionEvents> events;
  {
    absl::ReaderMutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return session.status();
    events = (*session)->notify;
  }
  return Enqueue(id, stream, thread, broker_.MakeTask(id, stream, callback_id, block, events),
                 nullptr, "callback");
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
  const EventId event_id = next_handle_++;
  (*session)->events[event_id] = std::make_shared<Event>(event_id, id, device_id, flags, timer_);
  return event_id;
}

absl::Status Runtime::DestroyEvent(SessionId id, EventId event_id) {
  std::shared_ptr<Event> event;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Session*> session = FindSession(id);
    if (!session.ok()) return session.status();
    auto it = (*session)->events.find(event_id);
    if (it == (*session)->events.end()) return UnknownEvent(event_id);
    event = std::move(it->second);
    (*session)->events.erase(it);
  }
  // Record tasks still queued keep the event alive and complete harmlessly.
  event->ReleaseWaiters();
  return absl::OkStatus();
}

void Runtime::SynchronizeEvent(SessionId id, EventId event_id, absl::Duration timeout, Done done) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return done(event.status());
  (*event)->Synchronize(timeout, std::move(done));
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
  auto each = Countdown(streams.size(), std::move(done));
  for (const auto& stream : streams) stream->Synchronize(timeout, each);
}

}  // namespace acld
