// Runtime: streams, events and the tasks that run on streams.
#include <atomic>

#include <cstring>

#include "absl/strings/escaping.h"
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
  absl::Status quota = CheckStreamQuotaLocked(**session, "aclrtCreateStream");
  if (!quota.ok()) return quota;
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
    ++(*session)->closing_streams;
  }
  if (force) {
    // Returns now; the launched work still runs (and counts) until it is done.
    stream->Close([this, id] { StreamDrained(id); });
    return done(absl::OkStatus());
  }
  stream->Close([this, id, done = std::move(done)] {
    StreamDrained(id);
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

absl::StatusOr<std::shared_ptr<QueueBudget>> Runtime::BudgetOf(SessionId id) {
  absl::ReaderMutexLock lock(&mu_);
  absl::StatusOr<Session*> session = FindSession(id);
  if (!session.ok()) return session.status();
  return (*session)->queue_budget;
}

void Runtime::DrainReleased(SessionId id, Released released, Done done) {
  auto events = std::make_shared<std::vector<std::shared_ptr<Event>>>(std::move(released.events));
  auto finish = [events, done = std::move(done)](absl::Status status) {
    for (const auto& event : *events) event->ReleaseWaiters();
    done(std::move(status));
  };
  if (released.streams.empty()) return finish(absl::OkStatus());
  auto each = Countdown(released.streams.size(), std::move(finish));
  for (const auto& stream : released.streams) {
    stream->Close([this, id, each] {
      StreamDrained(id);
      each(absl::OkStatus());
    });
  }
}

void Runtime::DiscardReleased(Released released) {
  const absl::Status ended = AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE, "the session ended; the work it had queued was discarded");
  for (const auto& stream : released.streams) {
    stream->Abort(ended);
    stream->Close([] {});
  }
  for (const auto& event : released.events) event->ReleaseWaiters();
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

absl::StatusOr<uint64_t> Runtime::Enqueue(SessionId id, const std::shared_ptr<Stream>& stream,
                                          uint64_t thread, uint64_t payload_bytes, TaskFn task,
                                          std::function<void()> on_discard,
                                          const char* waits_for) {
  absl::StatusOr<std::shared_ptr<QueueBudget>> budget = BudgetOf(id);
  if (!budget.ok()) return budget.status();
  // May wait for room: no lock is held here.
  absl::StatusOr<std::shared_ptr<void>> charge =
      (*budget)->Charge(QueueBudget::kTaskOverheadBytes + payload_bytes);
  if (!charge.ok()) return charge.status();
  return stream->Enqueue(std::move(task), thread, std::move(on_discard), waits_for,
                         *std::move(charge));
}

namespace {

// The device ranges a kernel launch declared, checked against the launching
// session's allocations and pinned when it was launched. The kernel may
// resolve only inside them.
class PinnedMemory : public hal::MemoryResolver {
 public:
  absl::Status Pin(const MemoryManager& memory, SessionId session,
                   const std::vector<hal::DeviceRange>& ranges) {
    for (const hal::DeviceRange& range : ranges) {
      absl::StatusOr<ResolvedRange> resolved = memory.Resolve(session, range.address, range.bytes);
      if (!resolved.ok()) return resolved.status();
      pins_.push_back(Pin_{range, *std::move(resolved)});
    }
    return absl::OkStatus();
  }

  absl::StatusOr<uint8_t*> Resolve(uint64_t address, uint64_t bytes) override {
    for (const Pin_& pin : pins_) {
      const uint64_t offset = address - pin.range.address;
      if (address >= pin.range.address && offset <= pin.range.bytes &&
          bytes <= pin.range.bytes - offset) {
        return pin.resolved.data + offset;
      }
    }
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     "the kernel touched device memory outside the ranges it declared");
  }

 private:
  struct Pin_ {
    hal::DeviceRange range;
    ResolvedRange resolved;
  };
  std::vector<Pin_> pins_;
};

absl::Status KernelStatus(const std::string& name, absl::Status status) {
  if (status.ok()) return status;
  if (AclCodeOf(status) != ACL_ERROR_INTERNAL_ERROR) return status;  // an address check
  // A failure raised by the kernel itself is an AI core exception, as on a device.
  return AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION,
                   absl::StrCat("kernel ", name, " failed: ", status.message()));
}

// One launched kernel: what it runs, and the memory it pinned at launch.
class KernelLaunch {
 public:
  KernelLaunch(const hal::Kernel* kernel, KernelRequest request,
               std::unique_ptr<PinnedMemory> pinned, absl::Status pinned_status)
      : kernel_(kernel),
        request_(std::move(request)),
        pinned_(std::move(pinned)),
        pinned_status_(std::move(pinned_status)) {}

  absl::Status Run() {
    if (!pinned_status_.ok()) return KernelStatus(request_.name, pinned_status_);
    return KernelStatus(request_.name, kernel_->Run(request_.block_dim, request_.args, *pinned_));
  }
  // Called once the kernel ran, by the only thread that runs it.
  void Unpin() { pinned_.reset(); }

  // A busy kernel's timer, and whether its stream dropped it meanwhile.
  std::atomic<Timer::TimerId> timer{0};
  std::atomic<bool> discarded{false};

 private:
  const hal::Kernel* const kernel_;
  const KernelRequest request_;
  std::unique_ptr<PinnedMemory> pinned_;
  const absl::Status pinned_status_;
};

// Longest busy time a sim kernel may ask for (about 12 days): keeps the
// deadline arithmetic far from overflow.
constexpr uint64_t kMaxBusyMicros = uint64_t{1} << 40;

}  // namespace

absl::StatusOr<uint64_t> Runtime::LaunchKernel(SessionId id, StreamId stream_id, uint64_t thread,
                                               KernelRequest request) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  const int32_t device_id = (*stream)->options().device;
  const hal::Device& device = backend_->device(device_id);
  const hal::Kernel* kernel = device.FindKernel(request.name);
  if (kernel == nullptr) {
    return AclStatus(ACL_ERROR_INVALID_PARAM,
                     absl::StrCat("aclsimLaunchKernel: no built-in kernel named '",
                                  absl::CHexEscape(request.name.substr(0, 64)), "'"));
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
  // The memory the kernel will touch is checked and pinned now; a bad range
  // fails the task when the stream reaches it, as a device would.
  auto pinned = std::make_unique<PinnedMemory>();
  absl::StatusOr<std::vector<hal::DeviceRange>> ranges =
      kernel->Ranges(request.block_dim, request.args);
  absl::Status pinned_status = ranges.ok() ? pinned->Pin(memory_, id, *ranges) : ranges.status();
  const uint64_t busy_micros = std::min(kernel->BusyMicros(request.args), kMaxBusyMicros);
  const uint64_t payload = request.args.size() * 8 + request.name.size();
  auto launch = std::make_shared<KernelLaunch>(kernel, std::move(request), std::move(pinned),
                                               std::move(pinned_status));
  if (busy_micros == 0) {
    return Enqueue(id, *stream, thread, payload,
                   [launch](const TaskResume&) -> std::optional<absl::Status> {
                     return launch->Run();
                   });
  }
  // The kernel occupies its stream for its busy time without holding a
  // worker; when the time is up its effect runs on one of the device's
  // workers (never on the timer thread, which every device shares).
  StreamEngine* engine = engines_[device_id].get();
  TaskFn task = [this, launch, busy_micros,
                 engine](const TaskResume& resume) -> std::optional<absl::Status> {
    launch->timer = timer_.Schedule(
        absl::Now() + absl::Microseconds(static_cast<int64_t>(busy_micros)),
        [engine, launch, resume] {
          engine->Post([launch, resume] {
            if (launch->discarded.load()) return;
            const absl::Status status = launch->Run();
            // Its memory goes back before its stream moves on: a reset or
            // free waiting for this kernel then finds the memory released.
            launch->Unpin();
            resume(status);
          });
        });
    return std::nullopt;
  };
  // Dropped (abort, end of session): no effect, and the timer lets go of it now.
  auto on_discard = [this, launch] {
    launch->discarded.store(true);
    timer_.Cancel(launch->timer.load());
  };
  return Enqueue(id, *stream, thread, payload, std::move(task), std::move(on_discard), "kernel");
}

absl::StatusOr<uint64_t> Runtime::EnqueueCopy(SessionId id, StreamId stream_id, uint64_t thread,
                                              const CopyRequest& copy) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  // Inline bytes (a request's buffer) are held by the task: charge them.
  const uint64_t payload = copy.host.owned_bytes;
  auto prepared = std::make_shared<absl::StatusOr<PreparedCopy>>(PrepareCopy(id, copy));
  return Enqueue(id, *stream, thread, payload,
                 [prepared](const TaskResume&) -> std::optional<absl::Status> {
                   if (!prepared->ok()) return prepared->status();
                   (*prepared)->Run();
                   return absl::OkStatus();
                 });
}

absl::StatusOr<uint64_t> Runtime::EnqueueCopyToClient(SessionId id, StreamId stream_id,
                                                      uint64_t thread, uint64_t device_src,
                                                      uint64_t count, Deliver deliver) {
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  auto source = std::make_shared<absl::StatusOr<ResolvedRange>>(
      count == 0 ? absl::StatusOr<ResolvedRange>(ResolvedRange{})
                 : memory_.Resolve(id, device_src, count));
  auto on_discard = [deliver] {
    deliver(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "the copy was discarded by its stream"));
  };
  return Enqueue(
      id, *stream, thread, 0,
      [source, count, deliver](const TaskResume&) -> std::optional<absl::Status> {
        if (!source->ok()) {
          deliver(source->status());
          return source->status();
        }
        // The bytes exist only from now until they are sent.
        deliver(std::string(reinterpret_cast<const char*>((*source)->data), count));
        return absl::OkStatus();
      },
      std::move(on_discard));
}

absl::StatusOr<uint64_t> Runtime::EnqueueMemset(SessionId id, StreamId stream_id, uint64_t thread,
                                                const MemsetRequest& memset) {
  if (memset.count > memset.max_count) {
    return AclStatus(ACL_ERROR_INVALID_PARAM, "aclrtMemsetAsync: count is larger than maxCount");
  }
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  auto target = std::make_shared<absl::StatusOr<ResolvedRange>>(ResolveFill(id, memset));
  const int32_t value = memset.value;
  const uint64_t count = memset.count;
  return Enqueue(id, *stream, thread, 0,
                 [target, value, count](const TaskResume&) -> std::optional<absl::Status> {
                   if (!target->ok()) return target->status();
                   if (count != 0) std::memset((*target)->data, value, count);
                   return absl::OkStatus();
                 });
}

absl::StatusOr<uint64_t> Runtime::RecordEvent(SessionId id, EventId event_id, StreamId stream_id,
                                              uint64_t thread) {
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  hal::Device* device = &backend_->device((*stream)->options().device);
  absl::StatusOr<std::shared_ptr<QueueBudget>> budget = BudgetOf(id);
  if (!budget.ok()) return budget.status();
  // Charged before the record number is taken: a record that never gets
  // enqueued must not leave the event waiting for it.
  absl::StatusOr<std::shared_ptr<void>> charge = (*budget)->Charge(QueueBudget::kTaskOverheadBytes);
  if (!charge.ok()) return charge.status();
  const uint64_t record = (*event)->TakeRecordNumber();
  return (*stream)->Enqueue(
      [event = *event, record, device](const TaskResume&) -> std::optional<absl::Status> {
        event->CompleteRecord(record, device->NowNanos());
        return absl::OkStatus();
      },
      thread, nullptr, "work", *std::move(charge));
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
  absl::StatusOr<std::shared_ptr<Event>> event = FindEvent(id, event_id);
  if (!event.ok()) return event.status();
  absl::StatusOr<std::shared_ptr<Stream>> stream = FindStream(id, stream_id);
  if (!stream.ok()) return stream.status();
  const uint64_t target = (*event)->latest_record();
  return Enqueue(
      id, *stream, thread, 0,
      [event = *event, target](const TaskResume& resume) -> std::optional<absl::Status> {
        if (event->WaitFor(target, [resume] { resume(absl::OkStatus()); })) {
          return absl::OkStatus();
        }
        return std::nullopt;
      },
      nullptr, "event");
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
  return Enqueue(id, *stream, thread, 0,
                 broker_.MakeTask(id, stream_id, callback_id, block, events), nullptr, "callback");
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
  const uint32_t quota = (*session)->max_events;
  if (quota != 0 && (*session)->events.size() >= quota) {
    return AclStatus(ACL_ERROR_RT_NO_EVENT_RESOURCE,
                     absl::StrCat("aclrtCreateEvent: this process may hold at most ", quota,
                                  " events (--max_events_per_session)"));
  }
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
