// The carrier of a process's session: its shared-memory channel
// (client_ring.h) for every message both ways. The session opens on the
// identity socket with the channel (OpenDirect: no gRPC in the process at
// all), or, as a fallback, on a gRPC Session stream to acld (Open), which
// carries the messages until acld takes the channel in its SessionOpened
// (UseRing) and then only says why the session ended.
//
// Calls from any thread are written in order, and replies are matched to
// waiting callers by call id. On the gRPC stream a reader thread reads them.
// On the shared-memory channel reading is a role one thread holds at a
// time: a caller waiting for its reply reads the channel itself when nobody
// else does (the reply then reaches it without a hand-off between threads),
// and passes the role on once answered. Only once the application uses
// callbacks, whose events must be read as they come, do the library's event
// threads read the channel for good: one of them holds the role while the
// others wait for it. The holder that reads a callback the library runs runs
// it itself (it starts without a hand-off between threads) and lends the role
// meanwhile: one waiting event thread watches the channel and takes the role
// when a message comes before the callback returned; otherwise the holder
// takes it back once it told acld that the callback returned (before acld,
// which then goes on with the stream, sends the next event), and reads the
// next event itself. A chain of callbacks on one stream so costs no thread
// switch, and callbacks of several streams still run at once.
//
// Asynchronous operations are appended to a batch that a writer thread
// (started by the first one) sends while the application keeps going, so a
// launch costs no round trip and batches grow under load; any call flushes
// the batch first, which keeps the session's order. Callbacks due and task
// failures the daemon sends go to the CallbackDispatcher.
//
// When the stream breaks, every waiting and later call fails with
// ACL_ERROR_RT_SOCKET_CLOSE; nothing hangs. What the messages mean is
// session_codec.h's business; this class only moves them.
#ifndef ACLD_CLIENT_SESSION_CHANNEL_H_
#define ACLD_CLIENT_SESSION_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/callback_dispatcher.h"
#include "client/client_ring.h"
#include "client/op_batch.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "proto/acl/ring_channel.h"
#include "proto/acl/v1/runtime.grpc.pb.h"

namespace acl_client {

class SessionChannel {
 public:
  // A call on its way: Start returns it, Finish waits for its reply.
  // Its fields are the channel's to touch, under its lock.
  struct PendingCall {
    uint64_t id = 0;
    bool done = false;
    bool taken = false;  // its caller's Finish returned
    acl::v1::Reply reply;
  };

  // Connects to acld's socket and opens the Session stream (the caller says
  // Hello next). Fails when nothing accepts connections within `timeout`.
  static absl::StatusOr<std::unique_ptr<SessionChannel>> Open(const std::string& socket_path,
                                                              CallbackDispatcher* callbacks,
                                                              absl::Duration timeout);
  // Messages written into a new channel before acld has it (OpenDirect).
  // acld reads them as the session opens, so each is spared the wake-up of
  // acld it would cost afterwards, and the call its round trip too
  // (docs/performance.md, session 29).
  struct Opening {
    // The library's own small notices, which want no reply (ClientFeatures).
    std::vector<acl::v1::ClientMessage> posts;
    // Sent when it fits in kMaxOpeningCallBytes (TakeOpeningCall says).
    std::optional<acl::v1::ClientMessage> call;
  };
  static constexpr size_t kMaxOpeningCallBytes = 64 << 10;  // a quarter of a ring

  // Opens the session on the identity socket beside `socket_path`, on a new
  // channel that holds `opening` already; its SessionOpened answers
  // Expect(acld::kSessionOpenedCallId).
  // A refusal (FailedPrecondition) carries acld's "<aclError> <reason>".
  static absl::StatusOr<std::unique_ptr<SessionChannel>> OpenDirect(
      const std::string& socket_path, CallbackDispatcher* callbacks, absl::Duration timeout,
      Opening opening = {});
  // The opening call (OpenDirect), to Finish; null when it was not sent
  // (none, too large, or taken already). Once.
  std::shared_ptr<PendingCall> TakeOpeningCall();
  // A reply acld sends without a request (the SessionOpened of OpenDirect).
  std::shared_ptr<PendingCall> Expect(uint64_t call_id);

  // A child of fork(): the session's connection is its parent's, and must
  // not keep the session open after the parent is gone. Only close(2).
  void ForkedChild();
  ~SessionChannel();

  SessionChannel(const SessionChannel&) = delete;
  SessionChannel& operator=(const SessionChannel&) = delete;

  // Ends the stream and joins the threads, except an event thread inside an
  // application's callback: it ends when the callback returns, so the
  // channel must outlive it (ClientRuntime keeps its channel for good).
  // Later calls fail with SOCKET_CLOSE.
  void Close();

  // Moves the session to its shared-memory channel (acld said so in its
  // SessionOpened): every later message goes over it, both ways.
  void UseRing(std::unique_ptr<ClientRing> ring);

  // Sends `request` (after every batched asynchronous operation) and returns
  // the handle to wait on.
  std::shared_ptr<PendingCall> Start(acl::v1::ClientMessage request);
  // Waits for the reply (at most `timeout`); a non-zero acl_error becomes that error.
  absl::StatusOr<acl::v1::Reply> Finish(const std::shared_ptr<PendingCall>& call,
                                        absl::Duration timeout = absl::InfiniteDuration());
  absl::StatusOr<acl::v1::Reply> Call(acl::v1::ClientMessage request,
                                      absl::Duration timeout = absl::InfiniteDuration());
  // Sends `message`, which wants no reply, after every batched operation.
  void Post(const acl::v1::ClientMessage& message);

  // The batch is written once its payload reaches this many bytes (the
  // operation that crosses it included).
  static constexpr size_t kMaxBatchBytes = 4 << 20;

  // Appends an asynchronous operation to the batch; returns its task id.
  uint64_t Submit(const acl::v1::AsyncOp& op, size_t payload_bytes = 0);
  // The same for an operation on `stream` that `build` writes in place.
  uint64_t Submit(uint64_t stream, absl::FunctionRef<void(acl::v1::AsyncOp&)> build,
                  size_t payload_bytes = 0);
  // The id of a task enqueued outside the batch.
  uint64_t TakeTaskId(uint64_t stream);

  // The process imports shared memory: from now on each call first reads
  // what acld sent (Start), so that a revocation notice is answered before
  // it; and the flusher runs, which answers notices whoever read them.
  void ReadBeforeCalls();

 private:
  SessionChannel(std::string socket_path, CallbackDispatcher* callbacks);

  // Writes the batch (and `then`, if any) while holding the write lock.
  bool WriteBatchLocked(const acl::v1::ClientMessage* then)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Writes one message to the session's carrier.
  bool WriteLocked(const acl::v1::ClientMessage& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Starts the writer thread (the first asynchronous operation does).
  void StartFlusher();
  void FlushLoop();
  // After the flusher wrote a batch on the ring: waits (a little) until acld
  // has read it, so that the next batch carries more than one launch.
  void LetTheBatchGrow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Reads until the stream ends, then takes its final status (Finish).
  void ReadReplies();

  // The channel's reading role (on the shared-memory channel only).
  // Whether a caller may take it now: nobody has it (or it is lent), the
  // channel is not over, and no library thread waits to read for good.
  bool MayReadLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Nobody has the role, or its holder lent it.
  bool RoleFreeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the role, free or lent.
  void TakeTheRoleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseTheRoleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The holder is about to run a callback: the role is lent until it takes
  // it back (TakeBackTheRole; false when another thread took it).
  void LendTheRoleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool TakeBackTheRole();
  // An event thread without the role: returns when the channel is over,
  // a callback was handed over, the role is free, or it is lent and a
  // message came (or its holder has been away for kWatchSlice). One waiting
  // thread watches the channel meanwhile (asleep on its futex word), the
  // others wait for their turn to watch.
  void AwaitTheRoleLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static constexpr absl::Duration kWatchSlice = acld::RingChannel::kWaitSlice;
  enum class ReadOutcome { kDispatched, kNothing, kOver };
  // With the role: reads one message (waiting until `deadline`) and
  // dispatches it; `answered` (if set) receives the call it answered (null
  // for an event). A callback the library runs goes to `run_here`
  // if set (an event thread's read), else to the dispatcher's threads.
  // kOver: the channel broke, or the session is over and the channel
  // drained; every waiting call has failed then.
  ReadOutcome ReadOne(absl::Time deadline, std::shared_ptr<PendingCall>* answered,
                      std::optional<CallbackDispatcher::Work>* run_here = nullptr);
  // Takes the role when it is free and reads until the channel is over
  // (the library's reader, and the stream's reader once the session ended).
  void ReadUntilOver();
  // The application uses callbacks: the library's event threads read for good.
  void ReadEventsAsTheyCome();
  // An event thread: waits for the reading role, reads until a callback the
  // library runs comes, lends the role while it runs it and takes it back;
  // until the channel is over.
  void ReadAndRunEvents();
  // Counts one more event thread, waiting for the role, unless the process
  // has kMaxEventThreads; the caller starts it (StartEventThread) once mu_ is
  // released.
  bool CountAnotherEventThreadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts one more event thread (none once the channel is closing).
  void StartEventThread();
  // Takes the role if it is free and reads what is there without waiting,
  // so that events nobody waits for do not pile up in the channel.
  void DrainIfNobodyReads();

  // A reply to its caller (returns its call), or an event to the
  // dispatcher (returns null).
  std::shared_ptr<PendingCall> Dispatch(acl::v1::ServerMessage& message,
                                        std::optional<CallbackDispatcher::Work>* run_here = nullptr);
  // No more replies will come: every waiting and later call fails.
  void EndReplies() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a failed write: waits (briefly) for the reader to learn why.
  void MarkBroken();
  absl::Status BrokenStatus() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string socket_path_;
  CallbackDispatcher* const callbacks_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<acl::v1::Runtime::Stub> stub_;
  // The stream's (null for a session opened on the identity socket: nothing
  // of gRPC is made, so it starts none of its threads).
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<acl::v1::ClientMessage, acl::v1::ServerMessage>> stream_;
  std::thread reader_;
  std::unique_ptr<ClientRing> ring_;  // set once, by UseRing

  absl::Mutex close_mu_;  // serializes starting and joining the threads below
  bool closed_ ABSL_GUARDED_BY(close_mu_) = false;
  std::thread flusher_ ABSL_GUARDED_BY(close_mu_);
  std::atomic<bool> flusher_started_{false};
  std::atomic<bool> event_threads_started_{false};
  // Event threads start one another (an event thread about to run a
  // callback when no other waits for the role), so not under close_mu_,
  // which Close holds while it joins them.
  absl::Mutex event_threads_mu_;
  std::vector<std::thread> event_threads_ ABSL_GUARDED_BY(event_threads_mu_);
  bool event_threads_closing_ ABSL_GUARDED_BY(event_threads_mu_) = false;
  // At most this many: as many callbacks run at once (the dispatcher's own
  // pool has as many threads).
  static constexpr int kMaxEventThreads = 4;

  // Lock order: write_mu_, then batch_mu_, then mu_.
  absl::Mutex write_mu_;  // one writer at a time (gRPC, the ring); also orders batches
  bool write_on_ring_ ABSL_GUARDED_BY(write_mu_) = false;
  absl::Mutex batch_mu_;
  // Made by the first operation: a process that only calls never pays for
  // one (its 256 KiB block and arena are a newcomer's faults, each costly
  // where page faults are: docs/performance.md, session 46).
  std::unique_ptr<OpBatch> batch_ ABSL_GUARDED_BY(batch_mu_);
  // The batch written last, emptied, for the next (its memory kept).
  std::unique_ptr<OpBatch> spare_batch_ ABSL_GUARDED_BY(write_mu_);
  bool stopping_ ABSL_GUARDED_BY(batch_mu_) = false;
  // The daemon numbers each stream's tasks 1, 2, ...; so does the client, in
  // submission order, without asking (aclrtGetThreadLastTaskId).
  std::map<uint64_t, uint64_t> task_ids_ ABSL_GUARDED_BY(batch_mu_);
  // Revocation notices read and not yet answered (RevocationSeen): the
  // next write sends them, after the batch.
  std::vector<uint64_t> notices_seen_ ABSL_GUARDED_BY(batch_mu_);

  mutable absl::Mutex mu_;
  std::map<uint64_t, std::shared_ptr<PendingCall>> pending_ ABSL_GUARDED_BY(mu_);
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool on_ring_ ABSL_GUARDED_BY(mu_) = false;        // replies come over the channel
  bool reading_ ABSL_GUARDED_BY(mu_) = false;        // a thread has the reading role
  bool lent_ ABSL_GUARDED_BY(mu_) = false;  // its holder runs a callback meanwhile
  bool watcher_present_ ABSL_GUARDED_BY(mu_) = false;  // a waiting thread watches the channel
  int event_threads_count_ ABSL_GUARDED_BY(mu_) = 0;  // started
  int event_threads_waiting_ ABSL_GUARDED_BY(mu_) = 0;  // waiting for the role
  std::set<std::thread::id> in_callback_ ABSL_GUARDED_BY(mu_);  // event threads in a callback
  // Host funcs a caller or the flusher read while event threads exist: the
  // next free event thread runs them (without the reading role, which the
  // reader may keep while it waits for a reply that needs the host func).
  std::deque<CallbackDispatcher::Work> handed_over_ ABSL_GUARDED_BY(mu_);
  bool events_closing_ ABSL_GUARDED_BY(mu_) = false;  // Close: no more callbacks run
  bool ring_over_ ABSL_GUARDED_BY(mu_) = false;      // the channel is drained and done
  bool stream_ended_ ABSL_GUARDED_BY(mu_) = false;   // the gRPC stream is over
  std::string ended_reason_ ABSL_GUARDED_BY(mu_);  // why the daemon ended the session
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);   // the stream's final status, once over
  std::atomic<uint64_t> next_call_id_{1};
  std::atomic<bool> read_before_calls_{false};
  std::shared_ptr<PendingCall> opening_call_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_SESSION_CHANNEL_H_
