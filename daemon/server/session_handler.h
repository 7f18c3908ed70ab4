// Serves one session's requests: turns each runtime-protocol message into core
// calls and answers it, now or when the work is done.
//
// The only place that knows both the proto messages and the core's API. The
// reader thread calls Handle() for every message in arrival order; replies of
// waiting calls (synchronizations, destroys) come later from whichever thread
// finishes the work, through the thread-safe `write` function.
#ifndef ACLD_DAEMON_SERVER_SESSION_HANDLER_H_
#define ACLD_DAEMON_SERVER_SESSION_HANDLER_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/core/runtime.h"
#include "daemon/server/device_renumbering.h"
#include "daemon/server/peer_credentials.h"
#include "daemon/server/shared_memory.h"
#include "daemon/server/sync_transfers.h"
#include "daemon/server/tenant_waiting_calls.h"
#include "proto/acl/v1/runtime.pb.h"

namespace acld::server {

class SessionHandler : public std::enable_shared_from_this<SessionHandler> {
 public:
  using Writer = std::function<void(const acl::v1::ServerMessage&)>;

  // `uid` and `pid` are the session's (kernel-verified) identity: only the
  // shared memory tickets `desk` issued to that process are redeemable here.
  // Without a desk (unit tests) shared memory registration is refused.
  // `devices` is what the session sees (its quota group's, or the host's).
  // `threads` serve every session (the channel pool's): large synchronous
  // copies and fills run there a slice at a time. `run_long` runs a call
  // that may take long, such as a large binary's load, away from them
  // (LongCalls::Run, in the session's tenant's turn). `tenant_waiting`
  // bounds the calls all sessions of the tenant (limits.tenant) have waiting.
  using LongCallRunner = std::function<void(std::function<void()>)>;
  SessionHandler(Runtime& runtime, SessionId session, uid_t uid, pid_t pid,
                 std::shared_ptr<PeerCredentialDesk> desk, SharedMemoryLimits limits, Writer write,
                 DeviceView devices, SyncTransfers::Threads threads, LongCallRunner run_long,
                 std::shared_ptr<TenantWaitingCalls> tenant_waiting)
      : runtime_(runtime),
        session_(session),
        queue_budget_(runtime.QueueBudgetOf(session)),
        uid_(uid),
        pid_(pid),
        tenant_(limits.tenant),
        desk_(std::move(desk)),
        write_(std::move(write)),
        renumbering_(std::move(devices)),
        shared_memory_(limits, [&runtime](void* data, uint64_t bytes) {
          return runtime.RegisterHostMemory(data, bytes);
        }),
        sync_transfers_(std::make_shared<SyncTransfers>(std::move(threads))),
        run_long_(std::move(run_long)),
        tenant_waiting_(std::move(tenant_waiting)) {}
  // The session ended: drops its synchronous transfers not finished, which
  // nobody waits for (and whose memory may go), and skips its long calls not
  // started. Completions of calls still waiting in the core can keep the
  // handler itself a while longer.
  void Close() {
    closed_.store(true);
    sync_transfers_->Close();
  }
  ~SessionHandler() {
    Close();
    // Calls still waiting are answered no more (their completions find the
    // handler gone): the tenant has them back.
    if (tenant_waiting_ != nullptr && waiting_calls_.load() > 0) {
      tenant_waiting_->Give(tenant_, static_cast<uint64_t>(waiting_calls_.load()));
    }
  }

  SessionId session() const { return session_; }

  void Handle(const acl::v1::ClientMessage& request);
  // Before reading the next request: true when the session's queued work is
  // at its limit; `on_room` then runs once there is room (QueueBudget::AwaitRoom).
  bool AwaitQueueRoom(std::function<void()> on_room) {
    return queue_budget_ != nullptr && queue_budget_->AwaitRoom(std::move(on_room));
  }

  // Replies the SessionOpened of the Hello with `call_id`; `on_ring`: the
  // session goes on over its shared-memory channel.
  void Open(uint64_t call_id, bool on_ring = false);

  // For aclctl: calls waiting in the core now (at most max_waiting_calls()),
  // and the shared memory this session has acld map.
  int waiting_calls() const { return std::min(waiting_calls_.load(), kMaxWaitingCalls); }
  static constexpr int max_waiting_calls() { return kMaxWaitingCalls; }
  const SharedMemoryRegistry& shared_memory() const { return shared_memory_; }

 private:
  // Serves `request`, its device ids already the host's.
  void Dispatch(const acl::v1::ClientMessage& request);
  void Answer(uint64_t call_id, acl::v1::Reply reply);
  void AnswerStatus(uint64_t call_id, const absl::Status& status);
  void AnswerHandle(uint64_t call_id, const absl::StatusOr<uint64_t>& handle);
  // A session may have this many calls waiting in the core at once (each
  // holds a completion there); a well-behaved process has one per thread.
  static constexpr int kMaxWaitingCalls = 4096;

  // Counts a call that finishes later; false (the call already answered with
  // ACL_ERROR_RT_OVER_LIMIT) when the session has kMaxWaitingCalls waiting,
  // or its tenant's sessions together their bound (TenantWaitingCalls).
  bool AdmitWaiting(uint64_t call_id);
  // A call AdmitWaiting counted is answered (or dropped).
  void FinishWaiting();
  // A completion for a call that finishes later (AnswerWhenDone); nullptr
  // (the call already answered with ACL_ERROR_RT_OVER_LIMIT) when the
  // session has kMaxWaitingCalls waiting.
  Done Later(uint64_t call_id);
  // What answers a call that waits (AdmitWaiting admitted it), once it is
  // done; nothing once the session's handler is gone.
  Done AnswerWhenDone(uint64_t call_id);
  void ApplyBatch(const acl::v1::AsyncBatch& batch);
  // One asynchronous operation (ApplyBatch gives runs of built-in kernel
  // launches on one stream to Runtime::LaunchKernels together).
  absl::Status ApplyAsync(const acl::v1::AsyncOp& op);
  // Keeps a failed asynchronous operation's error for the next synchronization.
  void DeferIfFailed(absl::Status status);
  // The core copy of a proto copy; `reply_data` receives the bytes of a
  // device-to-host copy that has no shared range.
  absl::StatusOr<CopyRequest> ToCopy(const acl::v1::CopyRequest& copy,
                                     std::shared_ptr<std::string>* reply_data);
  // Runs a synchronous copy or fill and answers `call_id`: here when it is
  // small, else a slice at a time on the pool (sync_transfers_).
  void RunSync(uint64_t call_id, absl::StatusOr<PiecewiseTransfer> transfer);
  // The deferred error of an earlier asynchronous operation, taken once.
  absl::Status TakeDeferredError();
  // aclrtBinaryLoadFromData: a binary larger than kLongLoadBytes is copied
  // and loaded by run_long_, answered from there.
  void LoadBinary(uint64_t call_id, const acl::v1::LoadBinaryRequest& load);
  // The largest binary loaded where its request is read: the size our
  // client sends inline, which the device parses in microseconds.
  static constexpr uint64_t kLongLoadBytes = 64 << 10;

  Runtime& runtime_;
  const SessionId session_;
  // Taken once: asked before every request, without the runtime's lock.
  const std::shared_ptr<QueueBudget> queue_budget_;
  const uid_t uid_;
  const pid_t pid_;
  const Tenant tenant_;
  const std::shared_ptr<PeerCredentialDesk> desk_;
  const Writer write_;
  const DeviceRenumbering renumbering_;
  SharedMemoryRegistry shared_memory_;
  const std::shared_ptr<SyncTransfers> sync_transfers_;
  const LongCallRunner run_long_;
  const std::shared_ptr<TenantWaitingCalls> tenant_waiting_;
  std::atomic<bool> closed_{false};
  std::atomic<int> waiting_calls_{0};
  absl::Mutex mu_;
  absl::Status deferred_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld::server

#endif  // ACLD_DAEMON_SERVER_SESSION_HANDLER_H_
