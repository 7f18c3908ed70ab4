// How much of one device's own queue one session may fill.
//
// A stream hands device work to its device stream as soon as it reaches it,
// and a device with queues of its own (an NPU, a vendor runtime) then runs
// that work in its own order, which knows nothing of sessions: a tenant with
// 2,000 busy streams would fill it, and every other tenant's kernel would wait
// behind all of them. The StreamEngine shares the daemon's turns between
// sessions; a DeviceShare shares the device's queue the same way: one session
// has at most `limit` tasks on one device at a time, and when they are all
// there its streams wait for places in the order they asked.
//
// One exception keeps streams that wait on each other going. The device may
// hold a task for something outside its stream (an event wait, a host-callback
// point); if such tasks held every place, the stream that would release them
// could never submit. So while any of the session's tasks on the device may be
// held, a stream with nothing on the device may always put one task there:
// every task before the one a stream waits to submit then runs, and the
// session goes on as it would with an unbounded queue.
#ifndef ACLD_DAEMON_CORE_DEVICE_SHARE_H_
#define ACLD_DAEMON_CORE_DEVICE_SHARE_H_

#include <cstdint>
#include <deque>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace acld {

class DeviceShare {
 public:
  // Offered a place that is already taken for it: true when it keeps it (and
  // later uses it with UseGrant or gives it back with Give), false when it no
  // longer waits (the place goes to the next waiter).
  using Waiter = std::function<bool()>;

  // A session's places on a device when nothing else is said: enough to keep
  // a device busy, few enough that another session's task waits behind at
  // most this many of a session's.
  static constexpr uint32_t kDefaultLimit = 64;

  explicit DeviceShare(uint32_t limit = kDefaultLimit) : limit_(limit) {}

  // Takes a place for a task (`may_be_held`: the device may hold it for
  // something outside its stream; `stream_empty`: its stream has nothing on
  // the device). Without room, queues `waiter` (unless null) and returns false.
  bool TakeOrWait(bool may_be_held, bool stream_empty, Waiter waiter);
  // A granted place is used for a task.
  void UseGrant(bool may_be_held);

  // A place is given back (its task left the device or never got there, or a
  // grant went unused). True when it is held for a waiter: the caller then
  // calls HandOver() once it holds no lock (a waiter takes its stream's).
  bool Give(bool may_be_held);
  void HandOver();

  uint32_t limit() const { return limit_; }
  uint32_t used() const;

 private:
  const uint32_t limit_;
  mutable absl::Mutex mu_;
  uint32_t used_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t may_be_held_ ABSL_GUARDED_BY(mu_) = 0;  // of used_
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_DEVICE_SHARE_H_
