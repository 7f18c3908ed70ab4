// Runs the application's stream callbacks in the application's process
// (SPEC section 6): host funcs, report callbacks and the exception callback.
//
// The daemon decides *when* (its stream reached the callback); this decides
// *where*: on the thread subscribed to the stream (inside its
// aclrtProcessReport / aclrtProcessHostFunc), or else on one of the library's
// own callback threads, never on the transport's reader thread. A blocking
// callback is acknowledged when it returns, and the stream goes on.
#ifndef ACLD_CLIENT_CALLBACK_DISPATCHER_H_
#define ACLD_CLIENT_CALLBACK_DISPATCHER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "acl/acl_rt.h"

namespace acl_client {

// The facts of a failed task, as aclrtExceptionInfo carries them.
// A failed kernel launch: the argument block it was launched with and the
// handle of its function (aclrtBinaryGetFunction; 0 for a built-in kernel).
struct KernelFacts {
  std::string args;
  uint64_t function = 0;
};

struct TaskFailureFacts {
  uint32_t task_id = 0;
  uint32_t stream_id = 0;
  uint32_t thread_id = 0;
  uint32_t device_id = 0;
  uint32_t error_code = 0;
  std::optional<KernelFacts> kernel;  // set when the task was a kernel launch
};

// The exception info's fields are 32-bit, as in CANN.
inline TaskFailureFacts FactsOf(uint64_t task_id, uint64_t stream, uint64_t thread, int32_t device,
                                int32_t error_code) {
  return TaskFailureFacts{static_cast<uint32_t>(task_id), static_cast<uint32_t>(stream),
                          static_cast<uint32_t>(thread), static_cast<uint32_t>(device),
                          static_cast<uint32_t>(error_code)};
}

class CallbackDispatcher {
 public:
  enum class Kind { kHostFunc, kReport };
  using Acknowledge = std::function<void(uint64_t callback_id)>;

  CallbackDispatcher();
  // Stops the library's callback threads (the process's dispatcher lives
  // forever; tests make short-lived ones).
  ~CallbackDispatcher();

  // How a finished blocking callback is acknowledged (the transport).
  void SetAcknowledge(Acknowledge acknowledge);

  // Remembers `run` until the daemon says its stream reached it; returns the id.
  uint64_t Add(Kind kind, uint64_t stream, bool block, std::function<void()> run);
  // The launch failed: the callback will never be due.
  void Remove(uint64_t callback_id);

  // Subscriptions (threadId is pthread_self() of the processing thread).
  absl::Status Subscribe(Kind kind, uint64_t thread, uint64_t stream);
  absl::Status Unsubscribe(Kind kind, uint64_t thread, uint64_t stream);
  bool HasSubscriber(Kind kind, uint64_t stream) const;
  // The stream was destroyed: its subscriptions go with it.
  void ForgetStream(uint64_t stream);

  // Runs one callback of `kind` delivered to the calling thread, waiting up to
  // `timeout_ms` (-1 forever).
  absl::Status Process(Kind kind, int32_t timeout_ms);

  // A callback that is due, on its way to the thread that runs it.
  struct Work {
    uint64_t callback_id = 0;  // 0: not a stream callback (exception callback)
    uint64_t stream = 0;
    bool block = false;
    std::function<void()> run;
    // Task failures received before this callback was due: their exception
    // callbacks run first, as the device reported them first.
    uint64_t failures_before = 0;
  };

  // From the transport (reader thread, or a daemon worker in embedded mode):
  // must not block.
  void OnCallbackDue(uint64_t callback_id, uint64_t stream);
  // Like OnCallbackDue, except that a callback bound for the library's own
  // threads (nobody subscribed to its stream) is returned instead of queued:
  // the transport's reader, itself a thread of the library, runs it with
  // RunTaken once it has passed its reading on, so that the callback starts
  // without a hand-off between threads.
  std::optional<Work> TakeCallbackDue(uint64_t callback_id, uint64_t stream);
  // Runs a callback TakeCallbackDue returned, after the exception callbacks
  // of the failures received before it. `after_ack` runs once acld was
  // told that the callback returned (session_channel.h: the event thread
  // takes back the channel it lent for that time).
  void RunTaken(Work work, absl::FunctionRef<void()> after_ack);
  // Queues a callback TakeCallbackDue returned for the library's callback
  // threads (started on first use), as OnCallbackDue does.
  void RunOnPool(Work work);
  void OnTaskFailed(const TaskFailureFacts& facts);

  void SetExceptionCallback(aclrtExceptionInfoCallback callback);

  // The latest task failure this process was told of on `device`, if any
  // (aclrtGetErrorVerbose).
  std::optional<TaskFailureFacts> LastFailureOn(uint32_t device) const;

  // True once the application added a stream callback, subscribed a thread
  // or set an exception callback: from then on the daemon's events must be
  // read as they come, not only when a call waits for its reply.
  bool InUse() const { return in_use_.load(std::memory_order_relaxed); }

  // Waits (a little) until every failure received so far has been handed to
  // the exception callback, so that a synchronization reporting a failure
  // returns after the callback ran. A no-op on callback threads.
  void WaitForFailureCallbacks();

  // True when the calling thread is inside a callback of `stream` (such a
  // callback must not wait for its own stream: that would deadlock).
  static bool InCallbackOf(uint64_t stream);
  // True when the calling thread is inside any stream callback.
  static bool InCallback();

 private:
  struct Entry {
    Kind kind;
    uint64_t stream;
    bool block;
    std::function<void()> run;
  };
  // Waits until the exception callbacks `work` must follow have run.
  void AwaitEarlierFailuresLocked(const Work& work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  using Subscription = std::pair<Kind, uint64_t>;  // (kind, stream)

  void Run(Work work, absl::FunctionRef<void()> after_ack = [] {});
  void PoolLoop();
  void EnsurePoolLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<Subscription, uint64_t> subscribers_ ABSL_GUARDED_BY(mu_);  // -> thread
  std::map<std::pair<Kind, uint64_t>, std::deque<Work>> thread_queues_ ABSL_GUARDED_BY(mu_);
  std::deque<Work> pool_queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> pool_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  aclrtExceptionInfoCallback exception_callback_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t failures_received_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failures_handled_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint32_t, TaskFailureFacts> last_failure_ ABSL_GUARDED_BY(mu_);  // by device
  Acknowledge acknowledge_;
  std::atomic<bool> in_use_{false};
};

}  // namespace acl_client

#endif  // ACLD_CLIENT_CALLBACK_DISPATCHER_H_
