// An event: marks a point in a stream; other streams and the host wait for it.
//
// Every aclrtRecordEvent call takes the next record number; the record task
// completes it when its stream reaches it. Waits (aclrtStreamWaitEvent,
// aclrtSynchronizeEvent) target the latest record made before the wait was
// issued, as on a device; a stream's wait is the device's (hal::Stream::
// WaitEvent for that record) when the event is of the stream's device.
#ifndef ACLD_DAEMON_CORE_EVENT_H_
#define ACLD_DAEMON_CORE_EVENT_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/progress_waiters.h"
#include "daemon/core/session_id.h"
#include "hal/event.h"
#include "hal/settled_records.h"
#include "hal/timer.h"

namespace acld {

using EventId = uint64_t;

class Event : public std::enable_shared_from_this<Event> {
 public:
  // `device_charge`: its place in its tenant's share of the device's events
  // (DeviceObjectLedger), held as long as the device event.
  Event(EventId id, SessionId session, int32_t device, uint32_t flags, hal::Timer& timer,
        std::shared_ptr<hal::Event> device_event, std::shared_ptr<void> device_charge = nullptr)
      : id_(id),
        session_(session),
        device_(device),
        flags_(flags),
        device_charge_(std::move(device_charge)),
        device_event_(std::move(device_event)),
        waiters_(timer) {}

  EventId id() const { return id_; }
  int32_t device() const { return device_; }
  SessionId owner() const { return session_; }  // the session that created it
  uint32_t flags() const { return flags_; }
  // The device's event: records are submitted to it, timestamps come from it.
  hal::Event& device_event() const { return *device_event_; }

  // The number the next record task will complete (call when enqueuing it).
  uint64_t TakeRecordNumber();
  // The latest record number handed out (what a wait issued now targets).
  uint64_t latest_record() const;
  // A record task ran: `record` is complete at device time `timestamp_ns`.
  void CompleteRecord(uint64_t record, int64_t timestamp_ns);
  // A record task was dropped before it ran (an abort, a failed submission):
  // it no longer holds anyone back, on the device (hal::Event::ForgetRecord)
  // or here, and stamps nothing.
  void DropRecord(uint64_t record);
  // An aclrtResetEvent task ran: the event reads as never recorded.
  void Reset();
  // Record `record` settled without running (the device's word,
  // hal::Event::Dropped): what another session's wait for it fails with is
  // RecordDroppedError().
  bool RecordDropped(uint64_t record) const { return device_event_->Dropped(record); }
  static absl::Status RecordDroppedError();
  // What another session's wait for `record`, answered, is to report: OK
  // once the record ran; RecordDroppedError() when it never will, or when
  // the owner destroyed the event first (its waits are answered then,
  // whatever is still queued).
  absl::Status OutcomeForOthers(uint64_t record) const;

  // Calls `resume` once record `target` is complete. Returns 0 when it was
  // complete already (and `resume` was not kept); otherwise the wait's id.
  uint64_t WaitFor(uint64_t target, std::function<void()> resume);
  // The wait's task was discarded (an abort, a stop): the wait is forgotten
  // now, not kept until its record settles (which a record held behind a
  // wait that never ends would never do).
  void CancelWait(uint64_t wait_id);
  // Waits registered now (for tests and operators).
  size_t waiting() const;

  // As Stream::Synchronize: done(OK) once the latest record issued before this
  // call completes, or ACL_ERROR_RT_EVENT_SYNC_TIMEOUT after `timeout`.
  // `waiter` is the session that asks when it is not the owner (an imported
  // IPC event): ReleaseWaitersOf(waiter) answers it when that session lets
  // the event go.
  void Synchronize(absl::Duration timeout, std::function<void(absl::Status)> done,
                   SessionId waiter = 0);

  // aclrtQueryEvent: every record issued so far has completed.
  bool Complete() const;
  // aclrtQueryEventStatus: recorded (at least once since reset) and complete.
  bool RecordedAndComplete() const;
  // The device time of the latest completed record; false if none.
  bool Timestamp(int64_t* timestamp_ns) const;

  // The event is destroyed: every waiter is released.
  void ReleaseWaiters();
  // Session `waiter` let its imported handle go (destroyed it, ended): its
  // synchronizations are answered now, not kept in the owner's event until a
  // record that may never come.
  void ReleaseWaitersOf(SessionId waiter);

 private:
  void TimeOutWaiter(uint64_t waiter_id, absl::Duration timeout);
  // Record `record` has settled, by our count or the device's. The device
  // settles a record, and releases the device-level waits for it, before the
  // record task's completion reaches CompleteRecord: a stream it released may
  // report to the client first, and what the client asks next must agree.
  bool SettledLocked(uint64_t record) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // By our count alone.
  bool SettledHereLocked(uint64_t record) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return settled_.Contains(record);
  }
  // Marks `record` settled; returns the waits that settles.
  std::vector<ProgressWaiters::Done> SettleLocked(uint64_t record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The latest record ran on the device; CompleteRecord may not have come yet.
  bool LatestRanOnDeviceLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EventId id_;
  const SessionId session_;
  const int32_t device_;
  const uint32_t flags_;
  // Declared first so that it goes last: the device event is destroyed
  // before its place in the share is given back.
  const std::shared_ptr<void> device_charge_;
  const std::shared_ptr<hal::Event> device_event_;

  mutable absl::Mutex mu_;
  uint64_t issued_ ABSL_GUARDED_BY(mu_) = 0;     // record numbers handed out
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;  // highest completed record
  // Records settled (completed or dropped), each on its own: a wait is for
  // one record, and a later one settling first (another stream, another
  // process holding a shared event) does not settle it.
  hal::SettledRecords settled_ ABSL_GUARDED_BY(mu_);
  bool recorded_ ABSL_GUARDED_BY(mu_) = false;   // a record completed since creation/reset
  int64_t timestamp_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // Streams and synchronizations waiting for a record to settle.
  ProgressWaiters waiters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_EVENT_H_
