// A stream: tasks that run one after another, in submission order.
//
// Each stream owns one device stream (hal::Stream). Device work — copies,
// fills, kernels, event records and waits — is submitted to it as soon as the
// stream reaches the task, without waiting for earlier device work to finish,
// so the device queue may hold many tasks; the device reports each one done
// by its sequence number. A host callback is a host-callback point of the
// device stream: the device holds there, with the work after it already
// queued, until the callback is done. Host tasks (a notify, an event reset,
// a wait for another device's event) run once the device work before them
// has finished.
//
// Streams do not own threads. A stream with a runnable head task sits in its
// device's StreamEngine ready queue and a worker runs a few of its tasks; a
// host task that must wait parks the stream and resumes it later, holding no
// worker meanwhile.
#ifndef ACLD_DAEMON_CORE_STREAM_H_
#define ACLD_DAEMON_CORE_STREAM_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/core/device_share.h"
#include "daemon/core/kernel_launch.h"
#include "daemon/core/progress_waiters.h"
#include "daemon/core/session_id.h"
#include "hal/device.h"
#include "hal/ring_queue.h"
#include "hal/stream.h"
#include "hal/timer.h"

namespace acld {

class StreamEngine;

using StreamId = uint64_t;

enum class FailureMode { kContinue, kStop };

// Calls back exactly once when a parked task is done. Returns whether the
// task was still waiting for it: false once it was discarded (an abort, a
// stop), when what the resume carried reached nobody and the caller may give
// it to someone else (a notify's record, notify.h). A task at a device's host
// point says true: the device takes the resume, or drops it with the point.
using TaskResume = std::function<bool(absl::Status)>;
// A task's work. Returns its status, or nullopt when it parked the stream; it
// then calls `resume` exactly once (from any thread) when it is done.
using TaskFn = std::function<std::optional<absl::Status>(const TaskResume& resume)>;
// Device work: submits to the device stream and returns the sequence number
// the device will report, or the error that fails the task at once.
using DeviceWork = std::function<absl::StatusOr<uint64_t>(hal::Stream& device)>;
// Runs when the device reports the work done, before anyone waiting for the
// task is released (an event record's completion, a copy's delivery).
using DeviceDone = std::function<void(const absl::Status& status)>;

// What the runtime learns about a failed task (the exception callback's facts).
struct TaskFailure {
  SessionId session = 0;
  StreamId stream = 0;
  int32_t device = 0;
  uint64_t task_id = 0;
  uint64_t submitter_thread = 0;
  absl::Status status;
  // A failed kernel launch's argument block and function handle (0: a
  // built-in kernel); unset for any other task.
  std::optional<std::string> kernel_args;
  uint64_t function_handle = 0;
};
using FailureListener = std::function<void(const TaskFailure&)>;

// Text a kernel of the stream printed (device printf), in the stream's order,
// before the kernel's task finishes.
struct KernelOutput {
  SessionId session = 0;
  StreamId stream = 0;
  std::string text;
};
using OutputListener = std::function<void(const KernelOutput&)>;

struct StreamStats {
  uint64_t queued = 0;     // enqueued, not yet finished
  uint64_t completed = 0;  // ran successfully
  uint64_t failed = 0;     // ran and failed
  uint64_t discarded = 0;  // dropped by STOP_ON_FAILURE or a forced destroy
  FailureMode failure_mode = FailureMode::kContinue;
  std::string state;  // idle, ready, running, waiting on <what>, closing
  // Task slots its queues hold: in use, or kept a moment for the next batch.
  uint64_t storage_slots = 0;
};

// How the device takes a piece of device work (Stream::EnqueueDeviceWork).
struct DeviceWorkKind {
  // The device may hold it for something outside its stream (a wait for an
  // event), which DeviceShare must know.
  bool may_be_held = false;
  // Submitting it blocks the submitter until the stream's earlier device
  // work is done (hal::Device::CopyBlocksSubmitter). It is submitted only
  // once none of the stream's work is on the device: the submitter may be a
  // thread that serves every session, and that work may never end.
  bool submitted_alone = false;
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  struct Options {
    StreamId id = 0;
    SessionId session = 0;
    int32_t device = 0;
    uint32_t priority = 0;  // 0 (highest) .. 7
    uint32_t flags = 0;
    bool saturate_floats = false;  // hal::StreamOptions::saturate_floats
    std::string owner;             // hal::StreamOptions::owner: its tenant's Key()
    // The session's places on the device's queue (null: unbounded).
    std::shared_ptr<DeviceShare> device_share;
    // hal::StreamOptions::charge_memory: charges the session.
    hal::StreamOptions::MemoryCharger charge_memory;
    // hal::StreamOptions::charge_notify: charges its tenant's share.
    hal::StreamOptions::ObjectCharger charge_notify;
    // Its place in its tenant's share of the device's streams
    // (DeviceObjectLedger), held until the stream is destroyed.
    std::shared_ptr<void> device_charge;
  };

  // A stream with its own device stream on `device`.
  static absl::StatusOr<std::shared_ptr<Stream>> Create(const Options& options,
                                                        StreamEngine& engine, hal::Timer& timer,
                                                        hal::Device& device,
                                                        FailureListener on_failure,
                                                        OutputListener on_output = nullptr);
  Stream(const Options& options, StreamEngine& engine, hal::Timer& timer,
         FailureListener on_failure);
  ~Stream();

  const Options& options() const { return options_; }
  StreamId id() const { return options_.id; }

  // Appends a task and returns its task id (ids start at 1 and grow by one).
  // `on_discard` (optional) runs instead of the task if the task is dropped
  // (STOP_ON_FAILURE, Abort), so that nobody waits for it forever.
  // `waits_for` names what the task may park on, for operators ("callback").
  // `hold` (optional) is kept until the task has finished or been dropped
  // (what the task is charged, memory it pinned).
  absl::StatusOr<uint64_t> Enqueue(TaskFn task, uint64_t submitter_thread,
                                   std::function<void()> on_discard = nullptr,
                                   const char* waits_for = "work",
                                   std::shared_ptr<void> hold = nullptr);
  // Appends device work; `done` (optional) runs when the device reports it.
  // `what` names the work for operators ("kernel", "copy").
  absl::StatusOr<uint64_t> EnqueueDeviceWork(DeviceWork work, const char* what,
                                             uint64_t submitter_thread,
                                             std::function<void()> on_discard, DeviceDone done,
                                             std::shared_ptr<void> hold,
                                             DeviceWorkKind kind = {});

  // Appends a kernel launch (device work kept as a record, not a closure).
  absl::StatusOr<uint64_t> EnqueueLaunch(KernelLaunch launch, uint64_t submitter_thread,
                                         std::shared_ptr<void> hold);
  // Appends launches in order, taking the stream's lock once: a batch of
  // launches from a client. Each task holds `hold`. Returns the first's task
  // id (the others follow it one by one).
  struct QueuedLaunch {
    KernelLaunch launch;
    uint64_t submitter_thread = 0;
  };
  absl::StatusOr<uint64_t> EnqueueLaunches(std::vector<QueuedLaunch> launches,
                                           std::shared_ptr<void> hold);

  // Appends a host-callback point (hal::Stream::HostCallbackPoint). When the
  // device reaches it — and the failures before it have been handed to
  // on_failure, so that a client hears of them first — `at_point` runs; its
  // result, returned or passed to its resume, lets the device stream go on
  // and is the task's status. `waits_for` names it for operators.
  // `on_discard` runs if the task is discarded (an abort), reached or not.
  absl::StatusOr<uint64_t> EnqueueHostPoint(TaskFn at_point, const char* waits_for,
                                            uint64_t submitter_thread,
                                            std::shared_ptr<void> hold,
                                            std::function<void()> on_discard = nullptr);

  // Calls `done` once every task enqueued before this call (or through
  // `through`, a LastTaskId taken earlier) has finished or been discarded,
  // with the stream's first unreported failure (reported once), or with
  // ACL_ERROR_RT_STREAM_SYNC_TIMEOUT after `timeout`.
  void Synchronize(absl::Duration timeout, std::function<void(absl::Status)> done,
                   std::optional<uint64_t> through = std::nullopt);
  // The id of the last task enqueued so far.
  uint64_t LastTaskId() const;

  // True when every enqueued task has finished.
  bool Idle() const;

  absl::Status SetFailureMode(FailureMode mode);

  // Drops every queued task and a parked one (a task running on a worker
  // finishes); synchronizations waiting now complete with `why`. Launched work
  // is discarded only by aclrtStreamAbort and by the end of its session.
  void Abort(const absl::Status& why);

  // aclrtStreamStop: the task executing now ends with `why`: on the device
  // (hal::Stream::StopItem; one on its way there once it gets there), or a
  // wait the stream holds on the host. It fails as any failed task does, and
  // the tasks after it are kept and run. A host callback, or any host task
  // running on a worker, is not stopped. A device that cannot stop tasks:
  // ACL_ERROR_API_NOT_SUPPORT.
  absl::Status StopRunningTask(const absl::Status& why);

  // Stops accepting tasks; the queued ones still run. `drained` is called once
  // nothing is left (at once if nothing is).
  void Close(std::function<void()> drained);

  StreamStats Stats() const;

  // For the engine: runs a batch of ready tasks on the calling worker.
  void RunSome();

 private:
  struct Task {
    // What a task other than a kernel launch runs. Out of line: every launch
    // moves its task through the queues, so the task's size is on the launch
    // path.
    struct Work {
      TaskFn fn;                // a host task; empty for device work
      DeviceWork device_work;  // device work other than a kernel launch
      DeviceDone device_done;
      TaskFn at_point;  // a host-callback point's work (device_work submits the point)
      std::function<void()> on_discard;
    };

    uint64_t id = 0;
    uint64_t submitter_thread = 0;
    const char* waits_for = "work";
    std::shared_ptr<void> hold;
    uint64_t sequence = 0;  // the device's number for submitted device work
    bool may_be_held = false;  // by something outside the stream (DeviceShare)
    bool submitted_alone = false;  // DeviceWorkKind::submitted_alone
    bool has_place = false;    // holds one of the session's places on the device
    std::optional<KernelLaunch> launch;  // a kernel launch, the one device work kept as a record
    std::unique_ptr<Work> work;          // set for every other task

    bool is_device_work() const {
      return launch.has_value() || (work != nullptr && work->device_work != nullptr);
    }
    bool is_point() const { return work != nullptr && work->at_point != nullptr; }
    std::function<void()> TakeOnDiscard() {
      return work != nullptr ? std::move(work->on_discard) : nullptr;
    }
  };
  // kDraining: a host task waits for the device work before it.
  enum class State { kIdle, kReady, kRunning, kParked, kDraining };

  absl::StatusOr<uint64_t> Append(Task task);
  // A task that runs `work`.
  static Task WorkTask(Task::Work work, const char* waits_for, uint64_t submitter_thread,
                       std::shared_ptr<void> hold);
  // The task that holds a kernel launch.
  static Task LaunchTask(KernelLaunch launch, uint64_t submitter_thread,
                         std::shared_ptr<void> hold);
  // Runs `append` (which appends with AppendLocked, collecting what to run
  // unlocked in `after`, and says whether the stream became ready) under the
  // stream's lock, then the rest unlocked; returns the first new task's id.
  // ACL_ERROR_RT_INVALID_HANDLE once the stream is being destroyed.
  absl::StatusOr<uint64_t> AppendUnderLock(
      absl::FunctionRef<bool(std::vector<std::function<void()>>&)> append);
  // Gives `task` its id and queues (or submits) it; true when the stream
  // became ready for a worker. A discarded task's on_discard joins `after`.
  bool AppendLocked(Task task, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The device finished the item numbered `sequence`.
  void DeviceCompleted(uint64_t sequence, const absl::Status& status);
  // The device reached the host-callback point numbered `sequence`.
  void DevicePointReached(uint64_t sequence);
  // Runs the point's work unless failures before it are still unpublished
  // (FailurePublished runs it then).
  void StartPointLocked(uint64_t sequence, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Submits a device task popped from the queue (mu_ released around the
  // submit).
  void SubmitLocked(Task task, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Submits `count` device tasks popped from the queue, in order, releasing
  // mu_ once around them all. A task whose submit fails ends there; the ones
  // after it go back to the front of the queue.
  void SubmitRunLocked(Task* tasks, size_t count, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What follows a task's successful submit: it joins in_flight_, or ends
  // at once (its report came during the submit, or it was discarded
  // meanwhile; discarded tasks join `dropped`, which the device lets go of
  // first).
  void SubmittedLocked(Task task, uint64_t early_point, std::shared_ptr<std::vector<Task>>& dropped,
                       std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes submitted tasks off the device: the device drops them before their
  // holds go.
  // `abort_device`: aborts the device stream even when none of its work is
  // dropped, unless earlier work is still on it.
  void DiscardInFlightLocked(std::vector<std::function<void()>>& after, uint64_t after_id,
                             bool abort_device = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Aborts the device stream from `after`, then runs the discards of
  // `dropped` (may be null) and lets go of the tasks, unless the device could
  // not be reached: it keeps them until its reset then (hal/stream.h,
  // AbortKeeping). Until it has, no device work is submitted, or it would be
  // dropped with the old work.
  void AbortDeviceLocked(std::vector<std::function<void()>>& after,
                         std::shared_ptr<std::vector<Task>> dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the end of the current task; collects callbacks to run unlocked.
  void FinishLocked(const Task& task, absl::Status status,
                    std::vector<std::function<void()>>& after) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the queue and the submitted work after task `after_id` (all of it
  // with 0).
  void DiscardQueuedLocked(std::vector<std::function<void()>>& after, uint64_t after_id = 0,
                           bool abort_device = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Task `id` (and every task before it not on the device) is done.
  void AdvanceFinishedLocked(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `count` tasks were dropped: the stream's counter and its device's tally.
  void CountDiscardedLocked(uint64_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CollectDoneLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The part of CollectDoneLocked that ends a drain: spare storage goes, and
  // a closing stream's waiters run once nothing of it is left.
  void CollectDrainedLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A draining stream whose device work is done and whose failures are
  // published becomes ready: true when the caller must MakeReady it.
  bool EndDrainLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `task` may go to the device now (a host-callback point waits
  // while the device stream holds max_callback_points()).
  bool RoomOnDeviceLocked(const Task& task) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the first (or last) task off the device's list, and gives back
  // its place.
  Task PopInFlightLocked(bool front, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives `task` one of the session's places on the device (the one granted
  // to the stream, or a free one); false when the stream must wait for one
  // (it is then woken by GrantPlace).
  bool TakePlaceLocked(Task& task, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back the place of a task that left the device or never got there.
  void ReturnPlaceLocked(Task& task, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives back a place granted to the stream that it did not use.
  void ReturnGrantLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Both: the share is told, and waiters due a place get it from `after`.
  void GiveBackLocked(bool may_be_held, std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DeviceShare hands this waiting stream a place (`granted`), or asks it to
  // try again: true when it takes the place.
  bool GrantPlace(bool granted);
  // A failure's listener returned (called without mu_).
  void FailurePublished();
  // After a failure's notice and what followed it (FinishLocked): answers
  // the synchronizations held back while notices were unpublished.
  void ReleaseHeldSynchronizations();
  // After a task ends: back in the ready queue, or idle.
  bool ScheduleNextLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // False when the task no longer waits (TaskResume).
  bool Resume(uint64_t task_id, absl::Status status);
  // The stream drained with more storage than an empty queue keeps: it goes
  // back unless work came again meanwhile.
  void ScheduleSpareStorageReleaseLocked(std::vector<std::function<void()>>& after)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseSpareStorage();
  void TimeOutWaiter(uint64_t waiter_id, absl::Duration timeout);
  absl::Status TakeErrorLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  StreamEngine& engine_;
  hal::Timer& timer_;
  const FailureListener on_failure_;
  std::unique_ptr<hal::Stream> device_;  // set once by Create

  mutable absl::Mutex mu_;
  // Tasks are handed to the device with mu_ let go of (SubmitRunLocked). An
  // abort that comes meanwhile must not empty the device before a task it
  // discards gets there, or the task runs after aclrtStreamAbort returned,
  // reported as discarded. So the hand-over holds submit_mu_ (never with
  // mu_) and hands over no task that discarded_mark_ says is discarded; a
  // device abort first waits for submit_mu_ (the hand-over under way ends),
  // and a discard that finds a hand-over under way (handing_over_) always
  // aborts the device after it. A device abort on the hand-over's own
  // thread (a failure the device reports inside a submit, under
  // STOP_ON_FAILURE) does not wait for itself: handing_over_thread_.
  absl::Mutex submit_mu_;
  std::atomic<uint64_t> discarded_mark_{0};  // discarded_through_, for the hand-over
  std::atomic<std::thread::id> handing_over_thread_{};
  // Both keep their storage when they drain (a stream fed batch after batch
  // drains between them); a stream that stays drained for kSpareStorageKept
  // gives it back (ReleaseSpareStorage).
  hal::RingQueue<Task> queue_ ABSL_GUARDED_BY(mu_){hal::RingQueue<Task>::Drained::kKeep};
  std::optional<Task> parked_ ABSL_GUARDED_BY(mu_);
  // Submitted to the device, in submission order (the order it reports them).
  hal::RingQueue<Task> in_flight_ ABSL_GUARDED_BY(mu_){hal::RingQueue<Task>::Drained::kKeep};
  bool spare_storage_release_scheduled_ ABSL_GUARDED_BY(mu_) = false;
  int points_in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // host-callback points among them
  // kDraining only because the device holds all the points it may.
  bool draining_for_room_ ABSL_GUARDED_BY(mu_) = false;
  // Its waiter is in options_.device_share's queue, until the share calls it
  // (GrantPlace): at most one entry per stream, whatever it asks meanwhile.
  bool place_waiter_queued_ ABSL_GUARDED_BY(mu_) = false;
  // Its last request for a place found none (it waits for one).
  bool short_of_place_ ABSL_GUARDED_BY(mu_) = false;
  // A place DeviceShare handed over, for the next device task.
  bool place_granted_ ABSL_GUARDED_BY(mu_) = false;
  // Tasks done with, destroyed only once mu_ is released (by the turn or the
  // append that hands them on): dropping a task's hold and pins frees memory
  // (a session's whole release fence, release_fence.h) and takes the
  // session's budget lock, which must not lengthen mu_'s holds (the thread
  // appending the next launch would wait for them).
  std::vector<Task> retired_ ABSL_GUARDED_BY(mu_);
  // Reports that arrived while their task was still being submitted.
  std::vector<std::pair<uint64_t, absl::Status>> early_device_results_ ABSL_GUARDED_BY(mu_);
  // A host-callback point reached while its task was still being submitted.
  uint64_t early_point_ ABSL_GUARDED_BY(mu_) = 0;
  // A host-callback point reached while failures before it were unpublished.
  uint64_t point_after_failures_ ABSL_GUARDED_BY(mu_) = 0;
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  uint64_t next_task_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t finished_through_ ABSL_GUARDED_BY(mu_) = 0;  // every task id <= this is done
  // The highest task id done; tasks after work still on the device finish
  // ahead of it, and count once that work is done.
  uint64_t finished_ahead_ ABSL_GUARDED_BY(mu_) = 0;
  // Discarded while a task was still running: done once that task finishes.
  uint64_t discarded_through_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t running_task_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool handing_over_ ABSL_GUARDED_BY(mu_) = false;
  // aclrtStreamStop before the task executing reached the device: the first
  // task of the run that stop_task_id_ begins, stop_run_index_ into it, and
  // why. The device stops it once the run is submitted, if it is still
  // executing then.
  uint64_t stop_task_id_ ABSL_GUARDED_BY(mu_) = 0;
  size_t stop_run_index_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status stop_why_ ABSL_GUARDED_BY(mu_);
  // A parked task's result that arrived before its worker saw it park.
  std::optional<absl::Status> early_result_ ABSL_GUARDED_BY(mu_);
  FailureMode failure_mode_ ABSL_GUARDED_BY(mu_) = FailureMode::kContinue;
  // Held by SetFailureMode across the device's mode and the core's, never
  // with mu_ (the device may report from inside the call).
  absl::Mutex failure_mode_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The first failure not yet reported by a synchronization.
  absl::Status unreported_error_ ABSL_GUARDED_BY(mu_);
  // Failures handed to `after` whose listener has not returned yet.
  int failures_unpublished_ ABSL_GUARDED_BY(mu_) = 0;
  // Device aborts handed to `after` that have not returned yet.
  int device_aborts_pending_ ABSL_GUARDED_BY(mu_) = 0;
  // STOP_ON_FAILURE after a failure: tasks are discarded until it is reported.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::function<void()>> close_waiters_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Stream> closing_keepalive_ ABSL_GUARDED_BY(mu_);
  // Synchronizations, waiting for finished_through_.
  ProgressWaiters sync_waiters_ ABSL_GUARDED_BY(mu_);
  StreamStats counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace acld

#endif  // ACLD_DAEMON_CORE_STREAM_H_
