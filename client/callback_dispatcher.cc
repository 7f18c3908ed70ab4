#include "client/callback_dispatcher.h"

#include <pthread.h>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/exception_info.h"
#include "client/thread_name.h"
#include "proto/acl/acl_status.h"

namespace acl_client {
namespace {

// Library-owned callback threads. Callbacks of one stream never overlap
// (the daemon holds a blocking callback's stream until it is acknowledged), so
// a few threads let several streams' callbacks run at once.
constexpr int kPoolThreads = 4;

struct RunningCallback {
  bool active = false;
  bool on_dispatcher_thread = false;
  uint64_t stream = 0;
};
thread_local RunningCallback running;

uint64_t ThisThread() { return static_cast<uint64_t>(pthread_self()); }

}  // namespace

CallbackDispatcher::CallbackDispatcher() = default;

CallbackDispatcher::~CallbackDispatcher() {
  std::vector<std::thread> pool;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    pool.swap(pool_);
  }
  for (std::thread& thread : pool) thread.join();
}

void CallbackDispatcher::SetAcknowledge(Acknowledge acknowledge) {
  acknowledge_ = std::move(acknowledge);
}

uint64_t CallbackDispatcher::Add(Kind kind, uint64_t stream, bool block,
                                 std::function<void()> run) {
  in_use_.store(true, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  entries_[id] = Entry{kind, stream, block, std::move(run)};
  return id;
}

void CallbackDispatcher::Remove(uint64_t callback_id) {
  absl::MutexLock lock(&mu_);
  entries_.erase(callback_id);
}

absl::Status CallbackDispatcher::Subscribe(Kind kind, uint64_t thread, uint64_t stream) {
  absl::MutexLock lock(&mu_);
  auto it = subscribers_.find({kind, stream});
  if (it != subscribers_.end()) {
    if (it->second == thread) {
      return acld::AclStatus(ACL_ERROR_REPEAT_SUBSCRIBE,
                             "this thread is already subscribed to the stream");
    }
    return acld::AclStatus(ACL_ERROR_RT_STREAM_SUBSCRIBE,
                           "another thread is already subscribed to the stream");
  }
  subscribers_[{kind, stream}] = thread;
  thread_queues_[{kind, thread}];  // the thread may now process
  return absl::OkStatus();
}

absl::Status CallbackDispatcher::Unsubscribe(Kind kind, uint64_t thread, uint64_t stream) {
  absl::MutexLock lock(&mu_);
  auto it = subscribers_.find({kind, stream});
  if (it == subscribers_.end() || it->second != thread) {
    return acld::AclStatus(ACL_ERROR_RT_STREAM_SUBSCRIBE,
                           "the thread is not subscribed to the stream");
  }
  subscribers_.erase(it);
  return absl::OkStatus();
}

bool CallbackDispatcher::HasSubscriber(Kind kind, uint64_t stream) const {
  absl::MutexLock lock(&mu_);
  return subscribers_.count({kind, stream}) > 0;
}

void CallbackDispatcher::ForgetStream(uint64_t stream) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase({Kind::kHostFunc, stream});
  subscribers_.erase({Kind::kReport, stream});
}

void CallbackDispatcher::EnsurePoolLocked() {
  if (!pool_.empty()) return;
  for (int i = 0; i < kPoolThreads; ++i) {
    pool_.emplace_back([this] { PoolLoop(); });
    NameThread(pool_.back(), "acl-callback");
  }
}

void CallbackDispatcher::OnCallbackDue(uint64_t callback_id, uint64_t stream) {
  std::optional<Work> work = TakeCallbackDue(callback_id, stream);
  if (work.has_value()) RunOnPool(std::move(*work));
}

void CallbackDispatcher::RunOnPool(Work work) {
  absl::MutexLock lock(&mu_);
  EnsurePoolLocked();
  pool_queue_.push_back(std::move(work));
}

std::optional<CallbackDispatcher::Work> CallbackDispatcher::TakeCallbackDue(uint64_t callback_id,
                                                                            uint64_t stream) {
  absl::MutexLock lock(&mu_);
  auto entry = entries_.find(callback_id);
  if (entry == entries_.end()) return std::nullopt;  // not ours, or already run
  Work work{callback_id, stream, entry->second.block, std::move(entry->second.run),
            failures_received_};
  const Kind kind = entry->second.kind;
  entries_.erase(entry);
  auto subscriber = subscribers_.find({kind, stream});
  if (subscriber != subscribers_.end()) {
    thread_queues_[{kind, subscriber->second}].push_back(std::move(work));
    return std::nullopt;
  }
  return work;
}

void CallbackDispatcher::RunTaken(Work work, absl::FunctionRef<void()> after_ack) {
  {
    absl::MutexLock lock(&mu_);
    AwaitEarlierFailuresLocked(work);
  }
  Run(std::move(work), after_ack);
}

void CallbackDispatcher::OnTaskFailed(const TaskFailureFacts& facts) {
  absl::MutexLock lock(&mu_);
  ++failures_received_;
  last_failure_[facts.device_id] = facts;
  aclrtExceptionInfoCallback callback = exception_callback_;
  if (callback == nullptr) {
    // Nothing to run: no callback thread is started for it.
    ++failures_handled_;
    return;
  }
  Work work;
  work.run = [this, callback, facts] {
    rtExceptionInfo info{facts};
    callback(&info);
    absl::MutexLock lock(&mu_);
    ++failures_handled_;
  };
  EnsurePoolLocked();
  pool_queue_.push_back(std::move(work));
}

std::optional<TaskFailureFacts> CallbackDispatcher::LastFailureOn(uint32_t device) const {
  absl::MutexLock lock(&mu_);
  auto it = last_failure_.find(device);
  if (it == last_failure_.end()) return std::nullopt;
  return it->second;
}

void CallbackDispatcher::SetExceptionCallback(aclrtExceptionInfoCallback callback) {
  if (callback != nullptr) in_use_.store(true, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  exception_callback_ = callback;
}

void CallbackDispatcher::WaitForFailureCallbacks() {
  if (running.on_dispatcher_thread || running.active) return;
  absl::MutexLock lock(&mu_);
  const uint64_t target = failures_received_;
  auto handled = [this, target]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return failures_handled_ >= target; };
  mu_.AwaitWithTimeout(absl::Condition(&handled), absl::Seconds(2));
}

bool CallbackDispatcher::InCallbackOf(uint64_t stream) {
  return running.active && running.stream == stream;
}

bool CallbackDispatcher::InCallback() { return running.active; }

void CallbackDispatcher::AwaitEarlierFailuresLocked(const Work& work) {
  struct Goal {
    const uint64_t* handled;
    const bool* stopping;
    uint64_t target;
  } goal{&failures_handled_, &stopping_, work.failures_before};
  mu_.Await(absl::Condition(
      +[](Goal* goal) { return *goal->stopping || *goal->handled >= goal->target; }, &goal));
}

void CallbackDispatcher::Run(Work work, absl::FunctionRef<void()> after_ack) {
  const RunningCallback saved = running;
  running.active = work.callback_id != 0;
  running.stream = work.stream;
  work.run();
  running = saved;
  if (work.block && acknowledge_) acknowledge_(work.callback_id);
  after_ack();
}

void CallbackDispatcher::PoolLoop() {
  running.on_dispatcher_thread = true;
  while (true) {
    Work work;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](CallbackDispatcher* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->pool_queue_.empty();
          },
          this));
      if (stopping_) return;
      work = std::move(pool_queue_.front());
      pool_queue_.pop_front();
      AwaitEarlierFailuresLocked(work);
    }
    Run(std::move(work));
  }
}

absl::Status CallbackDispatcher::Process(Kind kind, int32_t timeout_ms) {
  if (timeout_ms != -1 && timeout_ms <= 0) {
    return acld::AclStatus(ACL_ERROR_INVALID_PARAM,
                           absl::StrCat("timeout ", timeout_ms, " must be -1 or > 0"));
  }
  const std::pair<Kind, uint64_t> key{kind, ThisThread()};
  Work work;
  {
    absl::MutexLock lock(&mu_);
    bool subscribed = false;
    for (const auto& [subscription, thread] : subscribers_) {
      subscribed = subscribed || (subscription.first == kind && thread == key.second);
    }
    if (!subscribed) {
      return acld::AclStatus(ACL_ERROR_RT_THREAD_SUBSCRIBE,
                             "the calling thread is not subscribed to any stream");
    }
    std::deque<Work>* queue = &thread_queues_[key];
    const absl::Duration timeout =
        timeout_ms < 0 ? absl::InfiniteDuration() : absl::Milliseconds(timeout_ms);
    if (!mu_.AwaitWithTimeout(absl::Condition(
                                  +[](std::deque<Work>* q) { return !q->empty(); }, queue),
                              timeout)) {
      return acld::AclStatus(ACL_ERROR_RT_REPORT_TIMEOUT,
                             absl::StrCat("no callback arrived within ", timeout_ms, " ms"));
    }
    work = std::move(queue->front());
    queue->pop_front();
    AwaitEarlierFailuresLocked(work);
  }
  Run(std::move(work));
  return absl::OkStatus();
}

}  // namespace acl_client
