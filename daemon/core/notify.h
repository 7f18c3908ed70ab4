// A notify: one stream tells another that it reached a point, once.
//
// aclrtRecordNotify sets it when its stream reaches the record;
// aclrtWaitAndResetNotify holds its stream until the notify is set, then
// resets it. Unlike an event, a record releases one wait only, and a wait
// issued before any record waits for the next one (docs/api-compat.md,
// "Notify"). A record finding several waits releases the oldest; a record
// finding none leaves the notify set (a second record adds nothing). A wait
// whose task was discarded meanwhile (an abort racing the record) refuses
// the record, which goes to the next wait, or sets the notify.
#ifndef ACLD_DAEMON_CORE_NOTIFY_H_
#define ACLD_DAEMON_CORE_NOTIFY_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hal/timer.h"

namespace acld {

using NotifyId = uint64_t;

class Notify : public std::enable_shared_from_this<Notify> {
 public:
  // Returns whether the wait still wanted it (false: its task was discarded).
  using Done = std::function<bool(absl::Status)>;

  Notify(NotifyId id, int32_t device, hal::Timer& timer)
      : id_(id), device_(device), timer_(timer) {}

  NotifyId id() const { return id_; }
  int32_t device() const { return device_; }

  // A record task ran: releases the oldest wait that takes it, or sets the
  // notify.
  void Record();
  // A wait task ran. Returns 0 when the notify was set (it is reset now).
  // Otherwise keeps `done` and returns the wait's id; `done` runs once: OK
  // when a record releases the wait or the notify is destroyed,
  // ACL_ERROR_RT_WAIT_TIMEOUT once a finite `timeout` passed.
  uint64_t WaitAndReset(absl::Duration timeout, Done done);
  // The wait's task was discarded (an abort): it no longer takes a record.
  void Cancel(uint64_t wait_id);
  // The notify is destroyed: every wait is released, with OK, or with
  // ACL_ERROR_RT_IPC_ERROR once it was shared (its importers' waits end with
  // an error when its owner destroys it or ends).
  void ReleaseWaiters();
  // It has a key (aclrtNotifyGetExportKey).
  void MarkShared();

  // Waits now holding their streams (for tests and operators).
  size_t waiting() const;

 private:
  struct Waiter {
    uint64_t id;
    Done done;
    hal::Timer::TimerId timer;  // 0: none
  };

  void TimeOut(uint64_t waiter_id, absl::Duration timeout);

  const NotifyId id_;
  const int32_t device_;
  hal::Timer& timer_;

  mutable absl::Mutex mu_;
  bool set_ ABSL_GUARDED_BY(mu_) = false;
  bool shared_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Waiter> waiters_ ABSL_GUARDED_BY(mu_);  // oldest first
  uint64_t next_waiter_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_NOTIFY_H_
