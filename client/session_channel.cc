#include "client/session_channel.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "acl/acl_base.h"
#include "client/kernel_output.h"
#include "client/session_codec.h"
#include "client/thread_name.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/message_ring.h"
#include "proto/acl/peer_socket.h"
#include "proto/acl/protocol.h"
#include "proto/acl/status_macros.h"

namespace acl_client {
namespace {

using acl::v1::AsyncOp;
using acl::v1::ClientMessage;
using acl::v1::Reply;
using acl::v1::ServerMessage;

// How long a caller that read other callers' replies before its own waits
// for them to take theirs first (Finish).
constexpr absl::Duration kEarlierRepliesWait = absl::Milliseconds(1);
// Then how long it lets them run ahead (a return through the library and a
// line of output take a few microseconds).
constexpr absl::Duration kEarlierCallersHeadStart = absl::Microseconds(50);

}  // namespace

SessionChannel::SessionChannel(std::string socket_path, CallbackDispatcher* callbacks)
    : socket_path_(std::move(socket_path)), callbacks_(callbacks) {}

absl::StatusOr<std::unique_ptr<SessionChannel>> SessionChannel::Open(const std::string& socket_path,
                                                                     CallbackDispatcher* callbacks,
                                                                     absl::Duration timeout) {
  std::unique_ptr<SessionChannel> channel(new SessionChannel(socket_path, callbacks));
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(acld::kMaxMessageBytes);
  channel->channel_ = grpc::CreateCustomChannel("unix:" + socket_path,
                                                grpc::InsecureChannelCredentials(), arguments);
  if (!channel->channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + timeout))) {
    return absl::UnavailableError("nothing accepts connections there");
  }
  channel->stub_ = acl::v1::Runtime::NewStub(channel->channel_);
  channel->context_ = std::make_unique<grpc::ClientContext>();
  channel->stream_ = channel->stub_->Session(channel->context_.get());
  channel->reader_ = std::thread([c = channel.get()] { c->ReadReplies(); });
  NameThread(channel->reader_, "acl-stream");
  return channel;
}

absl::StatusOr<std::unique_ptr<SessionChannel>> SessionChannel::OpenDirect(
    const std::string& socket_path, CallbackDispatcher* callbacks, absl::Duration timeout,
    Opening opening) {
  uint64_t next_call_id = acld::kSessionOpenedCallId + 1;
  std::vector<std::string> early;
  for (const ClientMessage& post : opening.posts) early.push_back(post.SerializeAsString());
  std::shared_ptr<PendingCall> call;
  if (opening.call.has_value() && opening.call->ByteSizeLong() <= kMaxOpeningCallBytes) {
    call = std::make_shared<PendingCall>();
    call->id = next_call_id++;
    opening.call->set_call_id(call->id);
    early.push_back(opening.call->SerializeAsString());
  }
  ACL_ASSIGN_OR_RETURN(std::unique_ptr<ClientRing> ring,
                       ClientRing::OpenSession(acld::PeerSocketPath(socket_path), timeout, early));
  std::unique_ptr<SessionChannel> channel(new SessionChannel(socket_path, callbacks));
  channel->next_call_id_.store(next_call_id);
  absl::MutexLock write_lock(&channel->write_mu_);
  channel->ring_ = std::move(ring);
  channel->write_on_ring_ = true;
  absl::MutexLock lock(&channel->mu_);
  channel->on_ring_ = true;
  if (call != nullptr) channel->pending_[call->id] = call;
  channel->opening_call_ = std::move(call);
  return channel;
}

std::shared_ptr<SessionChannel::PendingCall> SessionChannel::TakeOpeningCall() {
  absl::MutexLock lock(&mu_);
  return std::exchange(opening_call_, nullptr);
}

std::shared_ptr<SessionChannel::PendingCall> SessionChannel::Expect(uint64_t call_id) {
  auto call = std::make_shared<PendingCall>();
  call->id = call_id;
  absl::MutexLock lock(&mu_);
  if (!broken_) pending_[call_id] = call;
  return call;
}

void SessionChannel::ForkedChild() {
  if (ring_ != nullptr) ring_->ForkedChild();
}

SessionChannel::~SessionChannel() {
  // The reader thread took the stream's final status (Finish) before it ended.
  Close();
}

void SessionChannel::Close() {
  {
    absl::MutexLock lock(&batch_mu_);
    stopping_ = true;
  }
  if (context_ != nullptr) {
    context_->TryCancel();
  } else if (ring_ != nullptr) {
    ring_->Hangup();  // acld ends the session; our readers stop
  }
  absl::MutexLock lock(&close_mu_);
  closed_ = true;
  if (flusher_.joinable()) flusher_.join();
  if (reader_.joinable()) reader_.join();
  std::vector<std::thread> event_threads;
  {
    absl::MutexLock threads_lock(&event_threads_mu_);
    event_threads_closing_ = true;  // no more start: the list is complete
    event_threads.swap(event_threads_);
  }
  // An event thread inside an application's callback is not waited for (the
  // callback may wait for the very thread closing the session, or never
  // return): it ends when the callback returns. The others run no callback
  // from now on, and end with the channel.
  std::set<std::thread::id> in_callback;
  {
    absl::MutexLock lock(&mu_);
    events_closing_ = true;
    in_callback = in_callback_;
  }
  for (std::thread& thread : event_threads) {
    if (in_callback.count(thread.get_id()) > 0) {
      thread.detach();
    } else {
      thread.join();
    }
  }
}

void SessionChannel::UseRing(std::unique_ptr<ClientRing> ring) {
  absl::MutexLock write_lock(&write_mu_);
  if (ring_ != nullptr) return;
  ring_ = std::move(ring);  // before on_ring_, which tells the stream's reader it is there
  {
    absl::MutexLock lock(&mu_);
    // The stream already ended: the session is over, the channel unused.
    if (stream_ended_) return;
    on_ring_ = true;
  }
  write_on_ring_ = true;
}

absl::Status SessionChannel::BrokenStatus() const {
  if (!ended_reason_.empty()) {
    return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE,
                           absl::StrCat("acld at unix:", socket_path_,
                                        " ended this process's session: ", ended_reason_,
                                        "; restart the application to open a new one"));
  }
  const grpc::StatusCode code = end_status_.error_code();
  const std::string& message = end_status_.error_message();
  if (code == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // Refused (or ended) over one of acld's caps; the daemon's message names it.
    return acld::AclStatus(
        ACL_ERROR_RT_OVER_LIMIT,
        absl::StrCat("acld at unix:", socket_path_, " refused this process's session: ",
                     message.empty() ? "over a limit" : message));
  }
  // Statuses acld itself returns: the refusal (identity, protocol) or the shutdown.
  const bool from_acld =
      code == grpc::StatusCode::PERMISSION_DENIED ||
      code == grpc::StatusCode::FAILED_PRECONDITION || code == grpc::StatusCode::INVALID_ARGUMENT ||
      (code == grpc::StatusCode::UNAVAILABLE && message.find("shutting down") != std::string::npos);
  if (from_acld && !message.empty()) {
    return acld::AclStatus(
        ACL_ERROR_RT_SOCKET_CLOSE,
        absl::StrCat("acld at unix:", socket_path_, " ended this process's session: ", message,
                     "; restart the application to open a new one"));
  }
  return acld::AclStatus(
      ACL_ERROR_RT_SOCKET_CLOSE,
      absl::StrCat("the connection to acld at unix:", socket_path_,
                   " was lost (the daemon stopped or crashed); this process's session is "
                   "gone, restart the application"));
}

void SessionChannel::MarkBroken() {
  // A write failed: the stream is over, and the reader is about to learn why
  // (its Read fails, Finish gives the status). Waiting for it a moment lets
  // callers see the real reason instead of "lost".
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&broken_), absl::Seconds(1));
  broken_ = true;
  pending_.clear();
}

std::shared_ptr<SessionChannel::PendingCall> SessionChannel::Dispatch(
    ServerMessage& message, std::optional<CallbackDispatcher::Work>* run_here) {
  if (message.has_callback_due()) {
    const acl::v1::CallbackDue& due = message.callback_due();
    if (run_here != nullptr) {
      *run_here = callbacks_->TakeCallbackDue(due.callback_id(), due.stream());
      return nullptr;
    }
    std::optional<CallbackDispatcher::Work> work =
        callbacks_->TakeCallbackDue(due.callback_id(), due.stream());
    if (!work.has_value()) return nullptr;
    // Read by a caller or the flusher: while the process has event threads,
    // one of them runs it — a waiting one, or one more if all are in
    // callbacks. Past that (kMaxEventThreads callbacks running at once),
    // the dispatcher's threads run it, so that a host func another one
    // waits for still runs.
    bool start_another = false;
    {
      absl::MutexLock lock(&mu_);
      // Waiting threads not yet spoken for by what was handed over before
      // (they may still be polling for the role).
      const bool one_free =
          event_threads_waiting_ > static_cast<int>(handed_over_.size());
      if (event_threads_count_ > 0 && !events_closing_ &&
          (one_free || (start_another = CountAnotherEventThreadLocked()))) {
        handed_over_.push_back(std::move(*work));
        work.reset();
        if (watcher_present_) ring_->incoming().WakeWatchers();
      }
    }
    if (start_another) StartEventThread();
    if (work.has_value()) callbacks_->RunOnPool(std::move(*work));
    return nullptr;
  }
  if (message.has_session_ended()) {
    absl::MutexLock lock(&mu_);
    ended_reason_ = message.session_ended().reason();
    return nullptr;
  }
  if (message.has_kernel_output()) {
    PrintKernelOutput(message.kernel_output().text());
    return nullptr;
  }
  if (message.has_import_revoked()) {
    // Answered after every operation launched so far (WriteBatchLocked
    // sends the batch first): acld lets those reach the revoked memory, and
    // refuses what comes later. Not written here: this thread may hold the
    // reading role, and a write can wait for room that only acld makes once
    // its replies are read. The flusher (ReadBeforeCalls started it), or
    // the next call, writes it.
    absl::MutexLock lock(&batch_mu_);
    notices_seen_.push_back(message.import_revoked().notice());
    return nullptr;
  }
  if (message.has_task_failed()) {
    const acl::v1::TaskFailed& failed = message.task_failed();
    TaskFailureFacts facts = FactsOf(failed.task_id(), failed.stream(), failed.thread(),
                                     failed.device_id(), failed.acl_error());
    if (failed.kernel()) facts.kernel = KernelFacts{failed.kernel_args(), failed.function()};
    callbacks_->OnTaskFailed(std::move(facts));
    return nullptr;
  }
  if (!message.has_reply()) return nullptr;
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(message.call_id());
  if (it == pending_.end()) return nullptr;  // the caller gave up (timeout)
  std::shared_ptr<PendingCall> call = std::move(it->second);
  pending_.erase(it);
  call->reply = std::move(*message.mutable_reply());
  call->done = true;
  return call;
}

void SessionChannel::EndReplies() {
  broken_ = true;
  pending_.clear();
}

void SessionChannel::ReadReplies() {
  ServerMessage message;
  while (stream_->Read(&message)) Dispatch(message);
  // The stream is over: its status says why (refused over a cap, shut down, lost).
  grpc::Status status = stream_->Finish();
  bool on_ring;
  {
    absl::MutexLock lock(&mu_);
    end_status_ = std::move(status);
    stream_ended_ = true;
    on_ring = on_ring_;
    // On the channel, replies already sent may still wait in it: its reader
    // ends the replies once it has drained them.
    if (!on_ring) EndReplies();
  }
  if (on_ring) {
    // Replies and the reason the session ended may wait in the channel:
    // whoever reads it now drains it, or this thread does.
    ring_->Stop();
    ReadUntilOver();
  }
}

bool SessionChannel::RoleFreeLocked() const { return !reading_ || lent_; }

void SessionChannel::TakeTheRoleLocked() {
  if (lent_) {
    lent_ = false;
    ring_->incoming().Return();
  }
  reading_ = true;
}

void SessionChannel::ReleaseTheRoleLocked() {
  reading_ = false;
  if (watcher_present_) ring_->incoming().WakeWatchers();
}

void SessionChannel::LendTheRoleLocked() {
  // Declared away before the lend shows: from here on every message acld
  // publishes wakes the watcher, and one already there is seen now.
  const bool unread = ring_->incoming().LeaveToWatcher();
  lent_ = true;
  // Stopped: nothing more may be published, and the channel must be read to
  // its end without waiting for the callback.
  if ((unread || ring_->stopped()) && watcher_present_) ring_->incoming().WakeWatchers();
}

bool SessionChannel::TakeBackTheRole() {
  absl::MutexLock lock(&mu_);
  if (!lent_) return false;  // a waiting thread, or a caller, took it meanwhile
  TakeTheRoleLocked();
  return true;
}

void SessionChannel::AwaitTheRoleLocked() {
  auto go_on = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ring_over_ || !handed_over_.empty() || !reading_;
  };
  auto go_on_or_watch = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return go_on() || !watcher_present_;
  };
  acld::MessageRing::Consumer& incoming = ring_->incoming();
  while (!go_on()) {
    if (watcher_present_) {
      mu_.Await(absl::Condition(&go_on_or_watch));
      continue;
    }
    // Read before looking (an eventcount): a message published after this
    // read changes the word, and the wait below returns.
    const uint32_t seen = incoming.PublishSeq();
    if (lent_ && (incoming.Unread() || ring_->stopped())) return;
    watcher_present_ = true;
    mu_.Unlock();
    const absl::Time deadline = absl::Now() + kWatchSlice;
    incoming.WaitForPublishAfter(seen, deadline);
    const bool slice_over = absl::Now() >= deadline;
    mu_.Lock();
    watcher_present_ = false;
    // A callback that runs this long: its channel is read on its behalf
    // (which also notices a session that ended meanwhile).
    if (lent_ && slice_over) return;
  }
}

bool SessionChannel::MayReadLocked() const {
  return on_ring_ && RoleFreeLocked() && !ring_over_ && event_threads_waiting_ == 0;
}

SessionChannel::ReadOutcome SessionChannel::ReadOne(
    absl::Time deadline, std::shared_ptr<PendingCall>* answered,
    std::optional<CallbackDispatcher::Work>* run_here) {
  // Stopped before this read: an empty channel now is the end of it (a
  // message sent before the stop is in it by then).
  const bool stopped = ring_->stopped();
  absl::StatusOr<std::optional<ServerMessage>> message = ring_->Read(deadline);
  if (message.ok() && message->has_value()) {
    std::shared_ptr<PendingCall> call = Dispatch(**message, run_here);
    if (answered != nullptr) *answered = std::move(call);
    return ReadOutcome::kDispatched;
  }
  if (message.ok() && !stopped) return ReadOutcome::kNothing;
  // acld broke the channel (the session cannot go on), or it is drained.
  if (!message.ok()) {
    if (context_ != nullptr) context_->TryCancel();
    ring_->Hangup();
  }
  absl::MutexLock lock(&mu_);
  ring_over_ = true;
  EndReplies();
  if (watcher_present_) ring_->incoming().WakeWatchers();
  return ReadOutcome::kOver;
}

void SessionChannel::ReadUntilOver() {
  {
    absl::MutexLock lock(&mu_);
    auto free_or_over = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return RoleFreeLocked() || ring_over_;
    };
    mu_.Await(absl::Condition(&free_or_over));
    if (ring_over_) return;
    TakeTheRoleLocked();
  }
  while (ReadOne(absl::InfiniteFuture(), nullptr) != ReadOutcome::kOver) {
  }
  absl::MutexLock lock(&mu_);
  ReleaseTheRoleLocked();
}

void SessionChannel::ReadEventsAsTheyCome() {
  absl::MutexLock close_lock(&close_mu_);
  if (closed_ || event_threads_started_.load()) return;
  event_threads_started_.store(true);
  {
    absl::MutexLock lock(&mu_);
    if (!on_ring_) return;  // the stream's reader reads everything
    // Counted as waiting from now: callers leave the role to it.
    CountAnotherEventThreadLocked();
  }
  StartEventThread();
}

bool SessionChannel::CountAnotherEventThreadLocked() {
  if (event_threads_count_ >= kMaxEventThreads) return false;
  ++event_threads_count_;
  ++event_threads_waiting_;
  return true;
}

void SessionChannel::StartEventThread() {
  absl::MutexLock lock(&event_threads_mu_);
  if (event_threads_closing_) return;
  event_threads_.emplace_back([this] { ReadAndRunEvents(); });
  NameThread(event_threads_.back(), "acl-events");
}

void SessionChannel::ReadAndRunEvents() {
  absl::MutexLock lock(&mu_);
  // Whether this thread has the role: taken when free or lent, and taken
  // back after each callback it read unless another thread took it.
  bool reading = false;
  while (true) {
    std::optional<CallbackDispatcher::Work> callback;
    if (!reading) {
      // Counted as waiting (by the thread that started this one, or below).
      AwaitTheRoleLocked();
      --event_threads_waiting_;
      if (ring_over_) return;
      if (!handed_over_.empty()) {
        callback = std::move(handed_over_.front());
        handed_over_.pop_front();
      } else {
        TakeTheRoleLocked();
        reading = true;
      }
    }
    if (reading) {
      mu_.Unlock();
      ReadOutcome outcome;
      do {
        outcome = ReadOne(absl::InfiniteFuture(), nullptr, &callback);
      } while (outcome != ReadOutcome::kOver && !callback.has_value());
      mu_.Lock();
      if (outcome == ReadOutcome::kOver) {
        ReleaseTheRoleLocked();
        return;
      }
    }
    // Closing: the session is over, and its callbacks run no more.
    if (events_closing_) {
      if (reading) ReleaseTheRoleLocked();
      return;
    }
    const bool start_another = event_threads_waiting_ == 0 && CountAnotherEventThreadLocked();
    in_callback_.insert(std::this_thread::get_id());
    const bool lent = reading;
    if (lent) LendTheRoleLocked();
    reading = false;
    mu_.Unlock();
    if (start_another) StartEventThread();
    // Taken back once the acknowledgement went: its write may wait for room
    // that only reading the channel makes (acld stops reading a client whose
    // replies it cannot send), and the role stays lent meanwhile.
    callbacks_->RunTaken(std::move(*callback), [&] { reading = lent && TakeBackTheRole(); });
    mu_.Lock();
    in_callback_.erase(std::this_thread::get_id());
    if (events_closing_) {  // Close let this thread go
      if (reading) ReleaseTheRoleLocked();
      return;
    }
    if (!reading) ++event_threads_waiting_;
  }
}

void SessionChannel::DrainIfNobodyReads() {
  {
    absl::MutexLock lock(&mu_);
    if (!MayReadLocked()) return;
    TakeTheRoleLocked();
  }
  while (ReadOne(absl::InfinitePast(), nullptr) == ReadOutcome::kDispatched) {
  }
  absl::MutexLock lock(&mu_);
  ReleaseTheRoleLocked();
}

bool SessionChannel::WriteLocked(const ClientMessage& message) {
  return write_on_ring_ ? ring_->Write(message) : stream_->Write(message);
}

bool SessionChannel::WriteBatchLocked(const ClientMessage* then) {
  std::unique_ptr<OpBatch> batch;
  std::vector<uint64_t> notices;
  {
    absl::MutexLock lock(&batch_mu_);
    if (batch_ != nullptr && batch_->ops() > 0) {
      batch = std::exchange(batch_, std::move(spare_batch_));
    }
    notices.swap(notices_seen_);
  }
  bool written = true;
  if (batch != nullptr) {
    written = WriteLocked(batch->message());
    batch->Clear();
    spare_batch_ = std::move(batch);
  }
  for (uint64_t notice : notices) {
    if (written) written = WriteLocked(codec::RevocationSeen(notice));
  }
  if (written && then != nullptr) written = WriteLocked(*then);
  if (!written) MarkBroken();
  return written;
}

void SessionChannel::FlushLoop() {
  while (true) {
    {
      absl::MutexLock lock(&batch_mu_);
      batch_mu_.Await(absl::Condition(
          +[](SessionChannel* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->batch_mu_) {
            return t->stopping_ || (t->batch_ != nullptr && t->batch_->ops() > 0) ||
                   !t->notices_seen_.empty();
          },
          this));
      if (stopping_) return;
    }
    {
      absl::MutexLock lock(&write_mu_);
      WriteBatchLocked(nullptr);
      if (write_on_ring_) LetTheBatchGrow();
    }
    // Task failures of the operations sent come back whether or not a call
    // waits: while nobody reads the channel, they are read here, so that a
    // process that only launches does not fill it.
    DrainIfNobodyReads();
  }
}

void SessionChannel::StartFlusher() {
  absl::MutexLock close_lock(&close_mu_);
  if (closed_ || flusher_started_.load()) return;
  flusher_ = std::thread([this] { FlushLoop(); });
  NameThread(flusher_, "acl-flusher");
  flusher_started_.store(true);
}

void SessionChannel::ReadBeforeCalls() {
  read_before_calls_.store(true, std::memory_order_relaxed);
  // Started here, on the application's thread: Dispatch, which finds the
  // notices, may run on a thread that Close joins under close_mu_.
  if (!flusher_started_.load(std::memory_order_relaxed)) StartFlusher();
}

void SessionChannel::LetTheBatchGrow() {
  // A ring write costs the flusher next to nothing, so it would send one
  // launch per batch and acld would pay a message per launch. While acld has
  // not read the last batch yet, launches gather into the next one instead
  // (as they do behind a gRPC write). Calls do not wait for this: each sends
  // the batch itself before its request.
  constexpr int kMaxPolls = 100;
  for (int i = 0; i < kMaxPolls && !ring_->AllRead(); ++i) {
    write_mu_.Unlock();
    absl::SleepFor(absl::Microseconds(20));
    write_mu_.Lock();
    if (!write_on_ring_) return;
  }
}

uint64_t SessionChannel::TakeTaskId(uint64_t stream) {
  absl::MutexLock lock(&batch_mu_);
  return ++task_ids_[stream];
}

uint64_t SessionChannel::Submit(const AsyncOp& op, size_t payload_bytes) {
  return Submit(op.stream(), [&](AsyncOp& slot) { slot = op; }, payload_bytes);
}

uint64_t SessionChannel::Submit(uint64_t stream, absl::FunctionRef<void(AsyncOp&)> build,
                                size_t payload_bytes) {
  // Before the operation can reach acld: the callback it may carry is then
  // read by an event thread, not by the flusher or a caller.
  if (!event_threads_started_.load(std::memory_order_relaxed) && callbacks_->InUse()) {
    ReadEventsAsTheyCome();  // the first call or operation since callbacks came into use
  }
  bool full;
  uint64_t task_id;
  {
    absl::MutexLock lock(&batch_mu_);
    task_id = ++task_ids_[stream];
    if (batch_ == nullptr) batch_ = std::make_unique<OpBatch>();
    batch_->Add(build, payload_bytes);
    // Sent when it holds the most one batch may (or kMaxBatchBytes of payload),
    // or when the writer is idle.
    full = batch_->ops() >= acld::kMaxBatchOps || batch_->payload_bytes() >= kMaxBatchBytes;
  }
  if (!flusher_started_.load(std::memory_order_relaxed)) StartFlusher();
  if (full) {
    // Applies back-pressure: the submitting thread writes the batch itself.
    absl::MutexLock lock(&write_mu_);
    WriteBatchLocked(nullptr);
  }
  return task_id;
}

std::shared_ptr<SessionChannel::PendingCall> SessionChannel::Start(ClientMessage request) {
  if (!event_threads_started_.load(std::memory_order_relaxed) && callbacks_->InUse()) {
    ReadEventsAsTheyCome();  // the first call or operation since callbacks came into use
  }
  // In a process that imports shared memory, what acld sent meanwhile is
  // read first: a call made after a revocation notice arrived goes after its
  // answer (Dispatch), and so fails as a later use of the revoked memory.
  if (read_before_calls_.load(std::memory_order_relaxed)) DrainIfNobodyReads();
  auto call = std::make_shared<PendingCall>();
  const uint64_t call_id = next_call_id_.fetch_add(1, std::memory_order_relaxed);
  call->id = call_id;
  request.set_call_id(call_id);
  {
    absl::MutexLock lock(&mu_);
    if (broken_) return call;  // Finish reports the broken connection
    pending_[call_id] = call;
  }
  absl::MutexLock lock(&write_mu_);
  WriteBatchLocked(&request);
  return call;
}

absl::StatusOr<Reply> SessionChannel::Finish(const std::shared_ptr<PendingCall>& call,
                                             absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  auto finished_or_may_read = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return call->done || broken_ || MayReadLocked();
  };
  // Replies this thread handed to other callers before its own came.
  std::vector<std::shared_ptr<PendingCall>> earlier;
  while (!call->done && !broken_ &&
         mu_.AwaitWithDeadline(absl::Condition(&finished_or_may_read), deadline) &&
         !call->done && !broken_ && absl::Now() < deadline) {
    // Nobody reads the channel: this thread reads until its own reply came
    // (dispatching whatever comes before it), then passes the role on.
    TakeTheRoleLocked();
    mu_.Unlock();
    std::shared_ptr<PendingCall> answered;
    while (ReadOne(deadline, &answered) == ReadOutcome::kDispatched && answered != call) {
      if (answered != nullptr) earlier.push_back(std::move(answered));
    }
    mu_.Lock();
    ReleaseTheRoleLocked();
  }
  if (call->done && !earlier.empty()) {
    // Callers return in the order acld answered them, as threads woken by a
    // device would: the reader, already running, would otherwise return
    // before the callers it woke (whose work finished first) are scheduled.
    // Bounded: a caller may be busy before it collects its reply.
    auto earlier_taken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const auto& other : earlier) {
        if (!other->taken) return broken_;
      }
      return true;
    };
    if (mu_.AwaitWithTimeout(absl::Condition(&earlier_taken), kEarlierRepliesWait)) {
      // Taken is not yet returned: a moment more lets them leave the
      // library, so that what their threads do next (print that their work
      // finished) also comes first, as it would after a device woke them.
      mu_.Unlock();
      absl::SleepFor(kEarlierCallersHeadStart);
      mu_.Lock();
    }
  }
  call->taken = true;
  if (!call->done) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second == call) {
        pending_.erase(it);
        break;
      }
    }
    if (broken_) return BrokenStatus();
    return acld::AclStatus(ACL_ERROR_RT_SOCKET_CLOSE, "acld did not answer in time");
  }
  ACL_RETURN_IF_ERROR(codec::ErrorOf(call->reply));
  return std::move(call->reply);
}

absl::StatusOr<Reply> SessionChannel::Call(ClientMessage request, absl::Duration timeout) {
  return Finish(Start(std::move(request)), timeout);
}

void SessionChannel::Post(const ClientMessage& message) {
  absl::MutexLock lock(&write_mu_);
  WriteBatchLocked(&message);
}

}  // namespace acl_client
