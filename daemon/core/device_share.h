// How much of one device's own queue one session may fill.
//
// A stream hands device work to its device stream as soon as it reaches it,
// and a device with queues of its own (an NPU, a vendor runtime) then runs
// that work in its own order, which knows nothing of sessions: a tenant with
// 2,000 busy streams would fill it, and every other tenant's kernel would wait
// behind all of them. The StreamEngine shares the daemon's turns between
// sessions; a DeviceShare shares the device's queue: one session has at most
// `limit` tasks on one device at a time, and when they are all there its
// streams wait for places in the order they asked.
//
// Two rules keep that from costing progress or speed:
//   - The device may hold a task for something outside its stream (an event
//     wait, a host-callback point); if such tasks held every place, the
//     stream that would release them could never submit. So while any of the
//     session's tasks on the device may be held, a stream with nothing on the
//     device may always put one task there, and streams that waited when
//     there was none are asked again when the first arrives. Every stream's
//     next task then reaches the device once the work before it in its stream
//     is done, as with an unbounded queue.
//   - Places go back to waiters once half of them are free, not one by one:
//     a waiting stream then submits many tasks in one turn of a worker,
//     instead of waking one for every task that finishes.
#ifndef ACLD_DAEMON_CORE_DEVICE_SHARE_H_
#define ACLD_DAEMON_CORE_DEVICE_SHARE_H_

#include <cstdint>
#include <deque>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"

namespace acld {

class DeviceShare {
 public:
  struct Waiter {
    // Called with `granted`: a place is already taken for the waiter, which
    // returns true when it keeps it (and gives it back with Give), false when
    // it no longer waits (the place goes to the next waiter). Without
    // `granted`, the waiter is only asked to try again (its result is
    // ignored).
    std::function<bool(bool granted)> call;
    // True once the waiter is gone (its stream destroyed): it is dropped
    // when the next waiter comes, not kept until a place frees up (a full
    // share would keep every destroyed stream's). Null: never.
    std::function<bool()> gone;
  };

  // `limit`: hal::Device::tasks_per_session() (the acl backend's 64: enough to
  // keep a device busy, few enough that another session's task waits behind
  // at most that many of a session's).
  explicit DeviceShare(uint32_t limit) : limit_(limit) {}

  enum class Taken {
    kNo,  // no room: the waiter was queued
    kYes,
    // Yes, and it is the first task that may be held: the caller calls
    // AskWaitersAgain() once it holds no lock.
    kYesAskWaitersAgain,
  };
  // Takes a place for a task (`may_be_held`: the device may hold it for
  // something outside its stream; `stream_empty`: its stream has nothing on
  // the device). Without room, queues what `waiter_if_full` returns (nothing
  // if empty); it is called only then, so that taking a place allocates nothing.
  Taken TakeOrWait(bool may_be_held, bool stream_empty,
                   absl::FunctionRef<Waiter()> waiter_if_full);
  // A granted place is used for a task; as TakeOrWait's result.
  Taken UseGrant(bool may_be_held);

  // A place is given back (its task left the device or never got there, or a
  // grant went unused). True when waiters are due places: the caller then
  // calls HandOver() once it holds no lock (a waiter takes its stream's).
  bool Give(bool may_be_held);
  void HandOver();
  void AskWaitersAgain();

  uint32_t limit() const { return limit_; }
  uint32_t used() const;
  size_t waiting() const;

 private:
  Taken CountLocked(bool may_be_held) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t limit_;
  mutable absl::Mutex mu_;
  uint32_t used_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t may_be_held_ ABSL_GUARDED_BY(mu_) = 0;  // of used_
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_DEVICE_SHARE_H_
