#include "daemon/core/stream.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "proto/acl/status_macros.h"
#include "daemon/core/stream_engine.h"
#include "proto/acl/spin_budget.h"

namespace acld {
namespace {

// Tasks a worker runs from one stream before giving others a turn.
constexpr int kTasksPerTurn = 64;
// And at most about this long: each task may take up to a piece of device
// work (about a millisecond) or a host task's time, and a device's workers
// serve every tenant's streams.
constexpr absl::Duration kTurnTime = absl::Milliseconds(1);
// How long a drained stream keeps the storage its queues grew to: a stream
// fed batch after batch reuses it, an idle one gives it back.
constexpr absl::Duration kSpareStorageKept = absl::Milliseconds(100);
// A device stream whose host-callback points each hold something scarce
// (hal::Stream::max_callback_points) gets at most that many at once; past
// it, later work waits on acld's side until only a quarter are left, so
// that one worker's turn submits several (a wake-up per callback would cost
// more than the callback).
constexpr int kPointsResumeDivisor = 4;

}  // namespace

Stream::Stream(const Options& options, StreamEngine& engine, hal::Timer& timer,
               FailureListener on_failure)
    : options_(options),
      engine_(engine),
      timer_(timer),
      on_failure_(std::move(on_failure)),
      sync_waiters_(timer) {}

Stream::~Stream() {
  // Places still held go back (a stream is normally drained by then).
  std::vector<std::function<void()>> after;
  std::vector<Task> left;  // let go after the lock (retired_ says why)
  {
    absl::MutexLock lock(&mu_);
    ReturnGrantLocked(after);
    while (!in_flight_.empty()) left.push_back(PopInFlightLocked(/*front=*/true, after));
  }
  for (auto& callback : after) callback();
}

absl::StatusOr<std::shared_ptr<Stream>> Stream::Create(const Options& options,
                                                       StreamEngine& engine, hal::Timer& timer,
                                                       hal::Device& device,
                                                       FailureListener on_failure,
                                                       OutputListener on_output) {
  auto stream = std::make_shared<Stream>(options, engine, timer, std::move(on_failure));
  std::weak_ptr<Stream> self = stream;
  hal::StreamOptions device_options;
  device_options.priority = options.priority;
  device_options.saturate_floats = options.saturate_floats;
  device_options.owner = options.owner;
  device_options.charge_memory = options.charge_memory;
  device_options.charge_notify = options.charge_notify;
  device_options.on_complete = [self](uint64_t sequence, const absl::Status& status) {
    if (auto stream = self.lock()) stream->DeviceCompleted(sequence, status);
  };
  device_options.on_callback_point = [self](uint64_t sequence) {
    if (auto stream = self.lock()) stream->DevicePointReached(sequence);
  };
  if (on_output) {
    device_options.on_output = [on_output = std::move(on_output), session = options.session,
                                id = options.id](uint64_t, std::string text) {
      on_output(KernelOutput{session, id, std::move(text)});
    };
  }
  absl::StatusOr<std::unique_ptr<hal::Stream>> device_stream =
      device.CreateStream(std::move(device_options));
  if (!device_stream.ok()) return device_stream.status();
  stream->device_ = *std::move(device_stream);
  return stream;
}

absl::StatusOr<uint64_t> Stream::Enqueue(TaskFn task, uint64_t submitter_thread,
                                         std::function<void()> on_discard, const char* waits_for,
                                         std::shared_ptr<void> hold) {
  Task::Work work;
  work.fn = std::move(task);
  work.on_discard = std::move(on_discard);
  return Append(WorkTask(std::move(work), waits_for, submitter_thread, std::move(hold)));
}

Stream::Task Stream::WorkTask(Task::Work work, const char* waits_for, uint64_t submitter_thread,
                              std::shared_ptr<void> hold) {
  Task task;
  task.submitter_thread = submitter_thread;
  task.waits_for = waits_for;
  task.hold = std::move(hold);
  task.work = std::make_unique<Task::Work>(std::move(work));
  return task;
}

absl::StatusOr<uint64_t> Stream::EnqueueDeviceWork(DeviceWork work, const char* what,
                                                   uint64_t submitter_thread,
                                                   std::function<void()> on_discard,
                                                   DeviceDone done, std::shared_ptr<void> hold,
                                                   DeviceWorkKind kind) {
  if (device_ == nullptr) {
    return AclStatus(ACL_ERROR_INTERNAL_ERROR, "this stream has no device stream");
  }
  Task::Work device_work;
  device_work.device_work = std::move(work);
  device_work.device_done = std::move(done);
  device_work.on_discard = std::move(on_discard);
  Task task = WorkTask(std::move(device_work), what, submitter_thread, std::move(hold));
  task.may_be_held = kind.may_be_held;
  task.submitted_alone = kind.submitted_alone;
  return Append(std::move(task));
}

Stream::Task Stream::LaunchTask(KernelLaunch launch, uint64_t submitter_thread,
                                std::shared_ptr<void> hold) {
  Task task;
  task.submitter_thread = submitter_thread;
  task.waits_for = "kernel";
  task.hold = std::move(hold);
  task.launch = std::move(launch);
  return task;
}

absl::StatusOr<uint64_t> Stream::EnqueueLaunch(KernelLaunch launch, uint64_t submitter_thread,
                                               std::shared_ptr<void> hold) {
  if (device_ == nullptr) {
    return AclStatus(ACL_ERROR_INTERNAL_ERROR, "this stream has no device stream");
  }
  return Append(LaunchTask(std::move(launch), submitter_thread, std::move(hold)));
}

absl::StatusOr<uint64_t> Stream::EnqueueHostPoint(TaskFn at_point, const char* waits_for,
                                                  uint64_t submitter_thread,
                                                  std::shared_ptr<void> hold,
                                                  std::function<void()> on_discard) {
  if (device_ == nullptr) {
    return AclStatus(ACL_ERROR_INTERNAL_ERROR, "this stream has no device stream");
  }
  Task::Work work;
  work.device_work = [](hal::Stream& device) { return device.HostCallbackPoint(); };
  work.at_point = std::move(at_point);
  work.on_discard = std::move(on_discard);
  Task task = WorkTask(std::move(work), waits_for, submitter_thread, std::move(hold));
  task.may_be_held = true;  // until its callback is done
  return Append(std::move(task));
}

absl::StatusOr<uint64_t> Stream::EnqueueLaunches(std::vector<QueuedLaunch> launches,
                                                 std::shared_ptr<void> hold) {
  if (device_ == nullptr) {
    return AclStatus(ACL_ERROR_INTERNAL_ERROR, "this stream has no device stream");
  }
  return AppendUnderLock([&](std::vector<std::function<void()>>& after) {
    bool make_ready = false;
    queue_.reserve(queue_.size() + launches.size());
    for (QueuedLaunch& queued : launches) {
      make_ready =
          AppendLocked(LaunchTask(std::move(queued.launch), queued.submitter_thread, hold), after) ||
          make_ready;
    }
    return make_ready;
  });
}

absl::StatusOr<uint64_t> Stream::Append(Task task) {
  return AppendUnderLock([&](std::vector<std::function<void()>>& after) {
    return AppendLocked(std::move(task), after);
  });
}

absl::StatusOr<uint64_t> Stream::AppendUnderLock(
    absl::FunctionRef<bool(std::vector<std::function<void()>>&)> append) {
  bool make_ready;
  std::vector<std::function<void()>> after;
  std::vector<Task> retired;
  uint64_t first_id;
  {
    SpinBudget spin;
    if (!mu_.TryLock() && !spin.Poll([this] { return mu_.TryLock(); })) mu_.Lock();
    if (closing_) {
      mu_.Unlock();
      return AclStatus(ACL_ERROR_RT_INVALID_HANDLE,
                       absl::StrCat("stream ", options_.id, " is being destroyed"));
    }
    first_id = next_task_id_;
    make_ready = append(after);
    retired.swap(retired_);
    mu_.Unlock();
  }
  // Before the callbacks: a reply they send finds the work's charges and
  // holds released.
  retired.clear();
  for (auto& callback : after) callback();
  if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
  return first_id;
}

bool Stream::AppendLocked(Task task, std::vector<std::function<void()>>& after) {
  const uint64_t id = task.id = next_task_id_++;
  if (stopped_) {
    // STOP_ON_FAILURE: nothing runs until the failure has been reported.
    CountDiscardedLocked(1);
    AdvanceFinishedLocked(id);
    if (auto discard = task.TakeOnDiscard()) after.push_back(std::move(discard));
    retired_.push_back(std::move(task));
    return false;
  }
  if (state_ == State::kIdle && task.is_device_work() && !in_flight_.empty() &&
      !task.submitted_alone && device_aborts_pending_ == 0 && RoomOnDeviceLocked(task) &&
      TakePlaceLocked(task, after)) {
    // The device stream is busy with earlier work, so this only joins its
    // queue: the caller submits it rather than waking a worker to (a chain
    // of host callbacks queued behind a held one would wake one each).
    ++counters_.queued;
    state_ = State::kRunning;
    SubmitLocked(std::move(task), after);
    return ScheduleNextLocked(after);
  }
  ++counters_.queued;
  queue_.push_back(std::move(task));
  if (state_ != State::kIdle) return false;
  state_ = State::kReady;
  return true;
}

void Stream::SubmitLocked(Task task, std::vector<std::function<void()>>& after) {
  SubmitRunLocked(&task, 1, after);
}

void Stream::SubmitRunLocked(Task* tasks, size_t count, std::vector<std::function<void()>>& after) {
  running_task_id_ = tasks[0].id;
  handing_over_ = true;
  // What they collect is this run's alone (aclrtStreamStop counts them).
  early_device_results_.clear();
  early_point_ = 0;
  mu_.Unlock();
  size_t submitted = 0;
  absl::Status failure;
  bool discarded_meanwhile = false;
  submit_mu_.Lock();
  handing_over_thread_.store(std::this_thread::get_id());
  for (; submitted < count; ++submitted) {
    Task& task = tasks[submitted];
    if (discarded_mark_.load(std::memory_order_acquire) >= task.id) {
      discarded_meanwhile = true;  // an abort came: it and the rest stay off the device
      break;
    }
    absl::StatusOr<uint64_t> sequence =
        task.launch.has_value() ? task.launch->SubmitTo(*device_) : task.work->device_work(*device_);
    if (!sequence.ok()) {
      failure = sequence.status();
      break;
    }
    task.sequence = *sequence;
  }
  handing_over_thread_.store(std::thread::id());
  submit_mu_.Unlock();
  mu_.Lock();
  running_task_id_ = 0;
  handing_over_ = false;
  // aclrtStreamStop came before this run reached the device: it stops the
  // task that was executing then, the first of the run not finished yet.
  // Only that task: one that finished meanwhile (or never got there) is past
  // stopping, and the device must not stop the next instead.
  std::optional<uint64_t> stop_sequence;
  absl::Status stop_why;
  if (stop_task_id_ == tasks[0].id) {
    stop_task_id_ = 0;
    stop_why = std::exchange(stop_why_, absl::OkStatus());
    const size_t index = stop_run_index_;
    if (index < submitted && !tasks[index].is_point() &&
        std::none_of(early_device_results_.begin(), early_device_results_.end(),
                     [&](const auto& result) { return result.first == tasks[index].sequence; })) {
      stop_sequence = tasks[index].sequence;
    }
  }
  const uint64_t early_point = std::exchange(early_point_, 0);
  std::shared_ptr<std::vector<Task>> dropped;
  retired_.reserve(retired_.size() + submitted);
  // Those an abort discarded before they were handed over go as those it
  // discarded while they were (SubmittedLocked sees them discarded).
  const size_t settled = discarded_meanwhile ? count : submitted;
  for (size_t i = 0; i < settled; ++i) {
    SubmittedLocked(std::move(tasks[i]), early_point, dropped, after);
  }
  if (stop_sequence.has_value()) {
    // After the run's earlier results: their failures are told first.
    after.push_back([self = weak_from_this(), sequence = *stop_sequence, why = stop_why] {
      if (auto stream = self.lock()) stream->device_->StopItem(sequence, why).IgnoreError();
    });
  }
  early_device_results_.clear();
  if (settled == count) return;
  // Never reached the device: they wait behind the failure (which may drop
  // them: STOP_ON_FAILURE), holding no place meanwhile.
  for (size_t i = count; i-- > submitted + 1;) {
    ReturnPlaceLocked(tasks[i], after);
    queue_.push_front(std::move(tasks[i]));
  }
  Task& failed = tasks[submitted];
  ReturnPlaceLocked(failed, after);
  FinishLocked(failed, failure, after);
  retired_.push_back(std::move(failed));
}

void Stream::SubmittedLocked(Task task, uint64_t early_point,
                             std::shared_ptr<std::vector<Task>>& dropped,
                             std::vector<std::function<void()>>& after) {
  if (discarded_through_ >= task.id) {
    // Aborted while it was being submitted: the device drops it again before
    // its hold goes.
    --counters_.queued;
    CountDiscardedLocked(1);
    if (auto discard = task.TakeOnDiscard()) after.push_back(std::move(discard));
    ReturnPlaceLocked(task, after);
    if (dropped == nullptr) {
      dropped = std::make_shared<std::vector<Task>>();
      AbortDeviceLocked(after, dropped);
    }
    dropped->push_back(std::move(task));
    AdvanceFinishedLocked(discarded_through_);
    CollectDoneLocked(after);
    return;
  }
  for (auto it = early_device_results_.begin(); it != early_device_results_.end(); ++it) {
    if (it->first != task.sequence) continue;
    const absl::Status status = std::move(it->second);
    ReturnPlaceLocked(task, after);
    if (task.work != nullptr && task.work->device_done) {
      after.push_back([done = task.work->device_done, status] { done(status); });
    }
    FinishLocked(task, status, after);
    retired_.push_back(std::move(task));
    return;
  }
  if (task.is_point()) ++points_in_flight_;
  const uint64_t sequence = task.sequence;
  in_flight_.push_back(std::move(task));
  if (early_point != 0 && early_point == sequence) StartPointLocked(early_point, after);
}

void Stream::DevicePointReached(uint64_t sequence) {
  std::vector<std::function<void()>> after;
  {
    absl::MutexLock lock(&mu_);
    if (in_flight_.empty() || in_flight_.back().sequence < sequence) {
      // Reached before its submit returned (nothing ran before it).
      if (handing_over_) early_point_ = sequence;
    } else {
      StartPointLocked(sequence, after);
    }
    // Otherwise the task was discarded: the device dropped the point.
  }
  for (auto& callback : after) callback();
}

void Stream::StartPointLocked(uint64_t sequence, std::vector<std::function<void()>>& after) {
  if (failures_unpublished_ > 0) {
    point_after_failures_ = sequence;
    return;
  }
  // Everything before the point has completed: it is (nearly always) the front.
  const Task* point = nullptr;
  for (size_t i = 0; i < in_flight_.size() && point == nullptr; ++i) {
    if (in_flight_.at(i).sequence == sequence) point = &in_flight_.at(i);
  }
  if (point == nullptr || !point->is_point()) return;
  std::weak_ptr<Stream> self = weak_from_this();
  after.push_back([self, sequence, at_point = point->work->at_point] {
    TaskResume resume = [self, sequence](absl::Status status) {
      if (auto stream = self.lock()) stream->device_->ResumeCallbackPoint(sequence, status);
      return true;
    };
    std::optional<absl::Status> result = at_point(resume);
    if (result.has_value()) resume(*std::move(result));
  });
}

void Stream::DeviceCompleted(uint64_t sequence, const absl::Status& status) {
  std::vector<std::function<void()>> after;
  bool make_ready = false;
  Task finished;  // destroyed once mu_ is released (retired_ says why)
  {
    absl::MutexLock lock(&mu_);
    if (!in_flight_.empty() && in_flight_.front().sequence == sequence) {
      finished = PopInFlightLocked(/*front=*/true, after);
      if (finished.work != nullptr && finished.work->device_done) {
        after.push_back([done = finished.work->device_done, status] { done(status); });
      }
      FinishLocked(finished, status, after);
      make_ready = EndDrainLocked();
    } else if (handing_over_) {
      // Done before its submit returned (the device ran it at once).
      early_device_results_.emplace_back(sequence, status);
    }
    // Otherwise the task was discarded: nobody waits for it.
  }
  for (auto& callback : after) callback();
  if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
}

bool Stream::RoomOnDeviceLocked(const Task& task) const {
  const int limit = device_->max_callback_points();
  return !task.is_point() || limit <= 0 || points_in_flight_ < limit;
}

Stream::Task Stream::PopInFlightLocked(bool front, std::vector<std::function<void()>>& after) {
  Task task = front ? in_flight_.pop_front() : in_flight_.pop_back();
  if (task.is_point()) --points_in_flight_;
  ReturnPlaceLocked(task, after);
  return task;
}

bool Stream::TakePlaceLocked(Task& task, std::vector<std::function<void()>>& after) {
  const std::shared_ptr<DeviceShare>& share = options_.device_share;
  if (share == nullptr) return true;
  DeviceShare::Taken taken;
  if (place_granted_) {
    place_granted_ = false;
    taken = share->UseGrant(task.may_be_held);
  } else {
    const bool queued = place_waiter_queued_;
    auto waiter_if_full = [this, queued]() -> DeviceShare::Waiter {
      if (queued) return {};
      std::weak_ptr<Stream> self = weak_from_this();
      return {[self](bool granted) {
                auto stream = self.lock();
                return stream != nullptr && stream->GrantPlace(granted);
              },
              [self] { return self.expired(); }};
    };
    taken = share->TakeOrWait(task.may_be_held, in_flight_.empty(), waiter_if_full);
    short_of_place_ = taken == DeviceShare::Taken::kNo;
    if (short_of_place_) {
      place_waiter_queued_ = true;
      return false;
    }
  }
  if (taken == DeviceShare::Taken::kYesAskWaitersAgain) {
    after.push_back([share] { share->AskWaitersAgain(); });
  }
  task.has_place = true;
  return true;
}

void Stream::ReturnPlaceLocked(Task& task, std::vector<std::function<void()>>& after) {
  if (!task.has_place) return;
  task.has_place = false;
  GiveBackLocked(task.may_be_held, after);
}

void Stream::ReturnGrantLocked(std::vector<std::function<void()>>& after) {
  if (!place_granted_) return;
  place_granted_ = false;
  GiveBackLocked(/*may_be_held=*/false, after);
}

void Stream::GiveBackLocked(bool may_be_held, std::vector<std::function<void()>>& after) {
  if (options_.device_share->Give(may_be_held)) {
    after.push_back([share = options_.device_share] { share->HandOver(); });
  }
}

bool Stream::GrantPlace(bool granted) {
  {
    absl::MutexLock lock(&mu_);
    place_waiter_queued_ = false;
    // Only a stream stopped for want of a place takes it: one that found one
    // meanwhile or runs will ask again, and one whose queue went (an abort)
    // needs none.
    if (state_ != State::kDraining || !short_of_place_ || queue_.empty() ||
        !queue_.front().is_device_work()) {
      return false;
    }
    place_granted_ = granted;
    state_ = State::kReady;
  }
  engine_.MakeReady(shared_from_this(), options_.priority);
  return true;
}

bool Stream::EndDrainLocked() {
  if (state_ != State::kDraining || failures_unpublished_ > 0 || device_aborts_pending_ > 0) {
    return false;
  }
  // A stream that waits for room for its next point goes on as soon as
  // there is some; otherwise it waits for the device to finish everything.
  const bool room = draining_for_room_ &&
                    points_in_flight_ <= device_->max_callback_points() / kPointsResumeDivisor;
  if (!in_flight_.empty() && !room) return false;
  draining_for_room_ = false;
  state_ = State::kReady;
  return true;
}

void Stream::AbortDeviceLocked(std::vector<std::function<void()>>& after,
                               std::shared_ptr<std::vector<Task>> dropped) {
  ++device_aborts_pending_;
  after.push_back([this, dropped = std::move(dropped)] {
    // A hand-over under way ends first (unless it is this thread's own: a
    // failure reported inside it), and none starts until this abort has run
    // (device_aborts_pending_). Not held across the abort: on acl, Abort
    // waits for the completion dispatcher, which may be the very thread
    // waiting here for another abort.
    if (handing_over_thread_.load() != std::this_thread::get_id()) {
      absl::MutexLock hand_over_ended(&submit_mu_);
    }
    // The device lets go of the tasks first: a copy may still read host
    // memory that a task's hold keeps mapped.
    const bool ended = device_->AbortKeeping(dropped);
    if (dropped != nullptr) {
      for (Task& task : *dropped) {
        if (auto discard = task.TakeOnDiscard()) discard();
      }
      if (ended) dropped->clear();  // else the device keeps them until its reset
    }
    bool make_ready;
    std::vector<std::function<void()>> done;
    {
      absl::MutexLock lock(&mu_);
      --device_aborts_pending_;
      make_ready = EndDrainLocked();
      // A closing stream may have drained with it. (Only that: the
      // synchronizations answer behind the discards' notices, which the
      // abort's caller runs after this.)
      CollectDrainedLocked(done);
    }
    for (auto& callback : done) callback();
    if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
  });
}

void Stream::FailurePublished() {
  std::vector<std::function<void()>> after;
  bool make_ready;
  {
    absl::MutexLock lock(&mu_);
    --failures_unpublished_;
    make_ready = EndDrainLocked();
    if (failures_unpublished_ == 0 && point_after_failures_ != 0) {
      StartPointLocked(point_after_failures_, after);
      point_after_failures_ = 0;
    }
  }
  for (auto& callback : after) callback();
  if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
}

void Stream::RunSome() {
  std::vector<std::function<void()>> after;
  std::vector<Task> retired;
  bool make_ready = false;
  {
    absl::MutexLock lock(&mu_);
    // A stale entry (the stream was aborted while ready, or another thread
    // took its turn) finds nothing to do: one thread runs a stream at a time.
    if (state_ != State::kReady) return;
    state_ = State::kRunning;
    bool parked = false;
    bool draining = false;
    std::vector<Task> run;  // device tasks submitted together
    if (!queue_.empty() && queue_.front().launch.has_value()) run.reserve(kTasksPerTurn);
    const absl::Time turn_end = absl::Now() + kTurnTime;
    for (int n = 0; n < kTasksPerTurn && !queue_.empty() && (n == 0 || absl::Now() < turn_end);
         ++n) {
      if (queue_.front().is_device_work() && device_aborts_pending_ > 0) {
        // An abort of the device is on its way: work submitted now would be
        // dropped with what it was meant to drop.
        state_ = State::kDraining;
        draining = true;
        break;
      }
      if (queue_.front().is_device_work() && !RoomOnDeviceLocked(queue_.front())) {
        // Resumes when a point leaves the device (DeviceCompleted).
        state_ = State::kDraining;
        draining_for_room_ = true;
        draining = true;
        break;
      }
      if (queue_.front().submitted_alone && !in_flight_.empty()) {
        // Resumes when the stream's last work leaves the device (EndDrainLocked).
        state_ = State::kDraining;
        draining = true;
        break;
      }
      if (queue_.front().is_device_work() && !TakePlaceLocked(queue_.front(), after)) {
        // Resumes when the session's share grants a place (GrantPlace), or
        // when this stream's own work has left the device.
        state_ = State::kDraining;
        draining = true;
        break;
      }
      if (queue_.front().is_device_work()) {
        run.clear();
        run.push_back(queue_.pop_front());
        // A run of kernel launches goes to the device with one release of
        // the lock: the caller appending more launches meanwhile then seldom
        // finds it held.
        while (run.front().launch.has_value() && n + 1 < kTasksPerTurn && !queue_.empty() &&
               queue_.front().launch.has_value() && TakePlaceLocked(queue_.front(), after)) {
          run.push_back(queue_.pop_front());
          ++n;
        }
        SubmitRunLocked(run.data(), run.size(), after);
        if (!after.empty()) {
          // Work the device finished at once is reported now, not at the end
          // of the turn: a copy's bytes go to their client before the next
          // copy stages its own.
          mu_.Unlock();
          for (auto& callback : after) callback();
          after.clear();
          mu_.Lock();
        }
        continue;
      }
      if (!in_flight_.empty() || failures_unpublished_ > 0) {
        // A host task runs after the device work before it, and after the
        // failures before it are published; the last device report (or
        // FailurePublished) makes the stream ready again.
        state_ = State::kDraining;
        draining = true;
        break;
      }
      Task task = queue_.pop_front();
      running_task_id_ = task.id;
      std::weak_ptr<Stream> self = weak_from_this();
      const uint64_t task_id = task.id;
      TaskResume resume = [self, task_id](absl::Status status) {
        auto stream = self.lock();
        return stream != nullptr && stream->Resume(task_id, std::move(status));
      };
      mu_.Unlock();
      std::optional<absl::Status> result = task.work->fn(resume);
      mu_.Lock();
      running_task_id_ = 0;
      if (!result.has_value() && early_result_.has_value()) {
        result = std::move(early_result_);
        early_result_.reset();
      }
      if (!result.has_value() && discarded_through_ >= task.id) {
        // Aborted while it ran: it must not park (nobody would discard it).
        --counters_.queued;
        CountDiscardedLocked(1);
        if (auto discard = task.TakeOnDiscard()) after.push_back(std::move(discard));
        AdvanceFinishedLocked(discarded_through_);
        CollectDoneLocked(after);
        retired_.push_back(std::move(task));
        continue;
      }
      if (!result.has_value()) {
        parked_ = std::move(task);
        state_ = State::kParked;
        parked = true;
        break;
      }
      FinishLocked(task, *std::move(result), after);
      retired_.push_back(std::move(task));
    }
    if (!parked && !draining) make_ready = ScheduleNextLocked(after);
    ReturnGrantLocked(after);  // a grant is for this turn only
    retired.swap(retired_);
  }
  retired.clear();  // before the callbacks, as in AppendUnderLock
  for (auto& callback : after) callback();
  if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
}

bool Stream::Resume(uint64_t task_id, absl::Status status) {
  std::vector<std::function<void()>> after;
  bool make_ready = false;
  bool waited = true;
  Task task;  // let go after the lock (retired_ says why)
  {
    absl::MutexLock lock(&mu_);
    if (parked_.has_value() && parked_->id == task_id) {
      task = std::move(*parked_);
      parked_.reset();
      FinishLocked(task, std::move(status), after);
      make_ready = ScheduleNextLocked(after);
    } else if (state_ == State::kRunning && running_task_id_ == task_id &&
               discarded_through_ < task_id) {
      early_result_ = std::move(status);  // resumed before the worker saw it park
    } else {
      // Discarded (an abort, a stop, a forced destroy), or being discarded:
      // an abort while its work runs discards it once the work returns.
      waited = false;
    }
  }
  for (auto& callback : after) callback();
  if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
  return waited;
}

bool Stream::ScheduleNextLocked(std::vector<std::function<void()>>& after) {
  if (!queue_.empty()) {
    state_ = State::kReady;
    return true;
  }
  state_ = State::kIdle;
  CollectDoneLocked(after);
  return false;
}

void Stream::FinishLocked(const Task& task, absl::Status status,
                          std::vector<std::function<void()>>& after) {
  --counters_.queued;
  if (status.ok()) {
    ++counters_.completed;
    engine_.tally().completed.fetch_add(1, std::memory_order_relaxed);
  } else {
    ++counters_.failed;
    engine_.tally().failed.fetch_add(1, std::memory_order_relaxed);
    if (unreported_error_.ok()) unreported_error_ = status;
    if (on_failure_) {
      // Host tasks after it wait until it is published (RunSome): a client
      // runs its exception callback before the stream's later callbacks.
      ++failures_unpublished_;
      TaskFailure failure{options_.session, options_.id, options_.device, task.id,
                          task.submitter_thread, status};
      if (task.launch.has_value()) {
        failure.kernel_args = task.launch->params.args;
        failure.function_handle = task.launch->function_handle;
      }
      after.push_back([this, failure = std::move(failure)] { on_failure_(failure); });
    }
    if (failure_mode_ == FailureMode::kStop) {
      stopped_ = true;
      // The device stopped itself too (hal::Stream::SetStopOnFailure): it
      // runs again only after an abort, even with nothing left to drop.
      DiscardQueuedLocked(after, task.id, /*abort_device=*/true);
    }
    // Published once the discards' notices are told: until then no
    // synchronization answers (CollectDoneLocked), not even on a worker
    // that the abort made the stream ready for.
    if (on_failure_) after.push_back([this] { FailurePublished(); });
  }
  AdvanceFinishedLocked(std::max(task.id, discarded_through_));
  CollectDoneLocked(after);
  // The synchronizations CollectDoneLocked held back for the failure's
  // notice answer last, as they would have without it: after the notice,
  // the device's abort and the discarded tasks' notices.
  if (!status.ok() && on_failure_) after.push_back([this] { ReleaseHeldSynchronizations(); });
}

void Stream::ReleaseHeldSynchronizations() {
  std::vector<std::function<void()>> after;
  {
    absl::MutexLock lock(&mu_);
    if (failures_unpublished_ == 0) CollectDoneLocked(after);
  }
  for (auto& callback : after) callback();
}

void Stream::AdvanceFinishedLocked(uint64_t id) {
  finished_ahead_ = std::max(finished_ahead_, id);
  // Work still on the device came before: nothing from it on is finished.
  const uint64_t limit = in_flight_.empty() ? finished_ahead_ : in_flight_.front().id - 1;
  finished_through_ = std::max(finished_through_, std::min(finished_ahead_, limit));
}

void Stream::DiscardInFlightLocked(std::vector<std::function<void()>>& after, uint64_t after_id,
                                   bool abort_device) {
  auto dropped = std::make_shared<std::vector<Task>>();
  while (!in_flight_.empty() && in_flight_.back().id > after_id) {
    dropped->push_back(PopInFlightLocked(/*front=*/false, after));
  }
  std::reverse(dropped->begin(), dropped->end());  // in submission order
  if (dropped->empty()) {
    // Work still on the device before the failure means it failed at its
    // submit: the device did not stop, and the earlier work must go on.
    if (abort_device && in_flight_.empty() && device_ != nullptr) AbortDeviceLocked(after, nullptr);
    return;
  }
  CountDiscardedLocked(dropped->size());
  counters_.queued -= dropped->size();
  early_device_results_.clear();
  AbortDeviceLocked(after, std::move(dropped));
  // Its queue is discarded next (DiscardQueuedLocked): nothing is left to wait for.
  if (state_ == State::kDraining) state_ = State::kIdle;
}

void Stream::DiscardQueuedLocked(std::vector<std::function<void()>>& after, uint64_t after_id,
                                 bool abort_device) {
  DiscardInFlightLocked(after, after_id, abort_device);
  ReturnGrantLocked(after);
  CountDiscardedLocked(queue_.size());
  counters_.queued -= queue_.size();
  if (!queue_.empty()) {
    // Let go after the lock (retired_ says why): not every caller hands
    // retired_ on.
    auto discarded = std::make_shared<std::vector<Task>>();
    discarded->reserve(queue_.size());
    while (!queue_.empty()) {
      discarded->push_back(queue_.pop_front());
      if (auto discard = discarded->back().TakeOnDiscard()) after.push_back(std::move(discard));
    }
    after.push_back([discarded] { discarded->clear(); });
  }
  discarded_through_ = next_task_id_ - 1;
  discarded_mark_.store(discarded_through_, std::memory_order_release);
  // A task being handed over may reach the device after this: the device
  // is aborted after that hand-over (see submit_mu_).
  if (handing_over_) AbortDeviceLocked(after, nullptr);
  // A task still running finishes first; otherwise everything is done now.
  // (A worker may be between tasks, reporting what finished: the stream is
  // then kRunning with no task running, and nothing would finish it later.)
  if (running_task_id_ == 0 && !parked_.has_value()) AdvanceFinishedLocked(discarded_through_);
}

absl::Status Stream::TakeErrorLocked() {
  absl::Status error = std::move(unreported_error_);
  unreported_error_ = absl::OkStatus();
  stopped_ = false;
  return error;
}

void Stream::CollectDoneLocked(std::vector<std::function<void()>>& after) {
  // A synchronization answers after the failures before it went out: the
  // client counts them before the answer, and runs their exception callbacks
  // before the synchronization returns (ReleaseHeldSynchronizations
  // collects again).
  if (failures_unpublished_ == 0) {
    for (auto& done : sync_waiters_.TakeReached(finished_through_)) {
      // The first synchronization reports the failure; the others see success.
      after.push_back([done = std::move(done), status = TakeErrorLocked()] { done(status); });
    }
  }
  CollectDrainedLocked(after);
}

void Stream::CollectDrainedLocked(std::vector<std::function<void()>>& after) {
  // Not while the device still aborts what this stream gave it: the device
  // may run it until then.
  const bool drained = queue_.empty() && !parked_.has_value() && in_flight_.empty() &&
                       state_ != State::kRunning && device_aborts_pending_ == 0;
  if (drained) ScheduleSpareStorageReleaseLocked(after);
  if (closing_ && drained) {
    for (auto& done : close_waiters_) after.push_back(std::move(done));
    close_waiters_.clear();
    // Released after the callbacks ran; every caller holds its own reference.
    if (closing_keepalive_) after.push_back([keepalive = std::move(closing_keepalive_)] {});
  }
}

void Stream::ScheduleSpareStorageReleaseLocked(std::vector<std::function<void()>>& after) {
  if (spare_storage_release_scheduled_ ||
      (!queue_.holds_spare_storage() && !in_flight_.holds_spare_storage())) {
    return;
  }
  spare_storage_release_scheduled_ = true;
  // Scheduled outside the stream's lock; the timer holds no reference.
  after.push_back([self = weak_from_this()] {
    std::shared_ptr<Stream> stream = self.lock();
    if (stream == nullptr) return;
    stream->timer_.ScheduleIn(kSpareStorageKept, [self] {
      if (auto stream = self.lock()) stream->ReleaseSpareStorage();
    });
  });
}

void Stream::ReleaseSpareStorage() {
  absl::MutexLock lock(&mu_);
  spare_storage_release_scheduled_ = false;
  // Busy again: its next drain schedules another look.
  queue_.ReleaseStorage();
  in_flight_.ReleaseStorage();
}

uint64_t Stream::LastTaskId() const {
  absl::MutexLock lock(&mu_);
  return next_task_id_ - 1;
}

void Stream::Synchronize(absl::Duration timeout, std::function<void(absl::Status)> done,
                         std::optional<uint64_t> through) {
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t target = std::min(through.value_or(next_task_id_ - 1), next_task_id_ - 1);
    if (finished_through_ >= target && failures_unpublished_ == 0) {
      result = TakeErrorLocked();
    } else if (finished_through_ >= target) {
      // Done, but a failure is still being published (on the thread that
      // finished it, which never waits for a client): answer after it.
      sync_waiters_.Add(target, absl::InfiniteDuration(), std::move(done), [](uint64_t) {});
      return;
    } else if (timeout <= absl::ZeroDuration()) {
      result = AclStatus(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                         absl::StrCat("stream ", options_.id, " has unfinished tasks"));
    } else {
      std::weak_ptr<Stream> self = weak_from_this();
      sync_waiters_.Add(target, timeout, std::move(done), [self, timeout](uint64_t id) {
        if (auto stream = self.lock()) stream->TimeOutWaiter(id, timeout);
      });
      return;
    }
  }
  done(std::move(result));
}

void Stream::TimeOutWaiter(uint64_t waiter_id, absl::Duration timeout) {
  ProgressWaiters::Done done;
  {
    absl::MutexLock lock(&mu_);
    done = sync_waiters_.TakeTimedOut(waiter_id);
  }
  if (!done) return;
  done(AclStatus(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                 absl::StrCat("stream ", options_.id, " did not finish within ",
                              absl::FormatDuration(timeout))));
}

bool Stream::Idle() const {
  absl::MutexLock lock(&mu_);
  return finished_through_ >= next_task_id_ - 1;
}

absl::Status Stream::SetFailureMode(FailureMode mode) {
  // The device stops itself too: it may run ahead of the failure's report,
  // and the work after a failure must not run (hal/stream.h). A device that
  // stopped must hear the core's abort, or the work behind the failure waits
  // for ever: so the core stops before the device does (a failure between
  // the two is aborted), and goes on after it does (a device turned to
  // CONTINUE while stopped for a failure should go on by itself:
  // hal/stream.h).
  // Calls are serialized, so the two never end up disagreeing.
  const bool stop = mode == FailureMode::kStop;
  if (stop && device_ != nullptr && !device_->can_stop_on_failure()) {
    // Asked before the core stops: a failure meanwhile must not be handled
    // as STOP by a call that then fails. Its refusal names what it lacks.
    ACL_RETURN_IF_ERROR(device_->SetStopOnFailure(true));
  }
  absl::MutexLock serialized(&failure_mode_mu_);
  auto set_core_mode = [this](FailureMode to) {
    absl::MutexLock lock(&mu_);
    return std::exchange(failure_mode_, to);
  };
  if (!stop) {
    if (device_ != nullptr) ACL_RETURN_IF_ERROR(device_->SetStopOnFailure(false));
    set_core_mode(mode);
    return absl::OkStatus();
  }
  const FailureMode before = set_core_mode(mode);
  absl::Status status = device_ != nullptr ? device_->SetStopOnFailure(true) : absl::OkStatus();
  if (!status.ok()) set_core_mode(before);  // the device kept its mode
  return status;
}

absl::Status Stream::StopRunningTask(const absl::Status& why) {
  if (device_ == nullptr || !device_->can_stop_items()) {
    return AclStatus(ACL_ERROR_API_NOT_SUPPORT,
                     "the stream's device cannot stop a running task");
  }
  std::vector<std::function<void()>> after;
  bool make_ready = false;
  uint64_t sequence = 0;
  Task stopped;  // let go after the lock (retired_ says why)
  {
    absl::MutexLock lock(&mu_);
    if (!in_flight_.empty()) {
      // The oldest on the device is the one executing; the device leaves it
      // alone if it finishes before the stop gets there. A host-callback
      // point is a callback running on the host: nothing stops it.
      if (!in_flight_.front().is_point()) sequence = in_flight_.front().sequence;
    } else if (parked_.has_value()) {
      // A wait the stream holds on the host (a notify, another device's
      // event) is executing: it ends as a stopped device wait would.
      stopped = std::move(*parked_);
      Task& task = stopped;
      parked_.reset();
      if (auto cancel = task.TakeOnDiscard()) after.push_back(std::move(cancel));
      FinishLocked(task, why, after);
      make_ready = ScheduleNextLocked(after);
    } else if (handing_over_) {
      // A run being handed to the device: the task executing is the first
      // of it not finished yet (the device reports in order), stopped once
      // the run is on the device (SubmitRunLocked).
      stop_task_id_ = running_task_id_;
      stop_run_index_ = early_device_results_.size();
      stop_why_ = why;
    } else if (running_task_id_ != 0) {
      // A host task running on a worker: nothing stops it (and the device
      // task behind it is not executing).
    } else if (!queue_.empty() && queue_.front().is_device_work()) {
      // About to go to the device: stopped as soon as it gets there.
      stop_task_id_ = queue_.front().id;
      stop_run_index_ = 0;
      stop_why_ = why;
    }
    // Otherwise nothing is executing.
  }
  for (auto& callback : after) callback();
  if (make_ready) engine_.MakeReady(shared_from_this(), options_.priority);
  // Unlocked: the device reports the stopped task (DeviceCompleted) from
  // inside the call.
  return sequence == 0 ? absl::OkStatus() : device_->StopItem(sequence, why);
}

void Stream::Abort(const absl::Status& why) {
  std::vector<std::function<void()>> after;
  Task parked;  // let go after the lock (retired_ says why)
  {
    absl::MutexLock lock(&mu_);
    if (parked_.has_value()) {
      CountDiscardedLocked(1);
      --counters_.queued;
      if (auto discard = parked_->TakeOnDiscard()) after.push_back(std::move(discard));
      parked = std::move(*parked_);
      parked_.reset();
      state_ = queue_.empty() ? State::kIdle : State::kReady;
    }
    DiscardQueuedLocked(after);
    if (state_ == State::kReady) state_ = State::kIdle;  // a stale ready entry finds nothing
    // Whoever waits for the discarded work learns that it never ran.
    for (auto& done : sync_waiters_.TakeAll()) {
      after.push_back([done = std::move(done), why] { done(why); });
    }
    CollectDoneLocked(after);
  }
  for (auto& callback : after) callback();
}

void Stream::Close(std::function<void()> drained) {
  std::vector<std::function<void()>> after;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    close_waiters_.push_back(std::move(drained));
    // Nobody else may hold the stream now (its handle is gone): it keeps
    // itself alive until its remaining work has drained.
    closing_keepalive_ = shared_from_this();
    CollectDoneLocked(after);
  }
  for (auto& callback : after) callback();
}

void Stream::CountDiscardedLocked(uint64_t count) {
  counters_.discarded += count;
  engine_.tally().discarded.fetch_add(count, std::memory_order_relaxed);
}

StreamStats Stream::Stats() const {
  absl::MutexLock lock(&mu_);
  StreamStats stats = counters_;
  stats.failure_mode = failure_mode_;
  stats.storage_slots = queue_.capacity() + in_flight_.capacity();
  switch (state_) {
    case State::kIdle:
      stats.state = "idle";
      break;
    case State::kReady:
      stats.state = "ready";
      break;
    case State::kRunning:
      stats.state = "running";
      break;
    case State::kParked:
      stats.state = absl::StrCat("waiting on ", parked_.has_value() ? parked_->waits_for : "work");
      break;
    case State::kDraining:
      stats.state = "waiting on device";  // replaced below by what it waits for
      break;
  }
  // Submitted work is on the device: the stream waits for the oldest.
  if ((state_ == State::kIdle || state_ == State::kDraining) && !in_flight_.empty()) {
    stats.state = absl::StrCat("waiting on ", in_flight_.front().waits_for);
  }
  if (state_ == State::kDraining && short_of_place_) {
    stats.state = absl::StrCat("waiting for a place on the device (its process has ",
                               options_.device_share->used(), " of ",
                               options_.device_share->limit(), ")");
  }
  if (closing_) stats.state = "closing";
  return stats;
}

}  // namespace acld
