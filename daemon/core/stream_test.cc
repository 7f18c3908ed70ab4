#include "daemon/core/stream.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "proto/acl/acl_status.h"
#include "daemon/core/stream_engine.h"
#include "gtest/gtest.h"
#include "hal/testing/eventually.h"
#include "hal/testing/fake_clock.h"

namespace acld {
namespace {

class StreamTest : public ::testing::Test {
 protected:
  std::shared_ptr<Stream> NewStream(StreamId id = 1) {
    return std::make_shared<Stream>(Stream::Options{id, 1, 0, 0, 0}, engine_, timer_,
                                    [this](const TaskFailure& failure) {
                                      absl::MutexLock lock(&mu_);
                                      failures_.push_back(failure);
                                    });
  }

  struct Answer {
    absl::Notification done;
    absl::Status status;
  };
  // Starts Stream::Synchronize; its answer lands in the Answer, which lives
  // as long as the stream may still give it.
  static std::shared_ptr<Answer> StartSync(Stream& stream, absl::Duration timeout) {
    auto answer = std::make_shared<Answer>();
    stream.Synchronize(timeout, [answer](absl::Status status) {
      answer->status = std::move(status);
      answer->done.Notify();
    });
    return answer;
  }

  // Waits (at most 30 s) for Stream::Synchronize's answer. `timeout` is on
  // the fake clock: it passes only when the test advances the clock.
  static absl::Status Sync(Stream& stream, absl::Duration timeout = absl::InfiniteDuration()) {
    std::shared_ptr<Answer> answer = StartSync(stream, timeout);
    if (!answer->done.WaitForNotificationWithTimeout(absl::Seconds(30))) {
      return absl::DeadlineExceededError("the stream did not answer within 30 s");
    }
    return answer->status;
  }

  TaskFn Append(int value) {
    return [this, value](const TaskResume&) -> std::optional<absl::Status> {
      absl::MutexLock lock(&mu_);
      order_.push_back(value);
      return absl::OkStatus();
    };
  }

  static TaskFn Fail() {
    return [](const TaskResume&) -> std::optional<absl::Status> {
      return AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION, "boom");
    };
  }

  std::vector<int> order() {
    absl::MutexLock lock(&mu_);
    return order_;
  }

  hal::testing::FakeClock clock_;
  hal::Timer timer_{clock_};
  StreamEngine engine_{2};
  absl::Mutex mu_;
  std::vector<int> order_;
  std::vector<TaskFailure> failures_;
};

TEST_F(StreamTest, TasksRunInSubmissionOrderWithIncreasingIds) {
  auto stream = NewStream();
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<uint64_t> id = stream->Enqueue(Append(i), 7);
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, static_cast<uint64_t>(i + 1));
  }
  ASSERT_TRUE(Sync(*stream).ok());
  std::vector<int> expected(1000);
  for (int i = 0; i < 1000; ++i) expected[i] = i;
  EXPECT_EQ(order(), expected);
  EXPECT_TRUE(stream->Idle());
  EXPECT_EQ(stream->Stats().completed, 1000u);
}

// A stream fed batch after batch drains between them: it keeps the storage
// its queue grew to for the next batch, and gives it back once it has stayed
// drained a while (on the stream's timer, whose clock the test moves).
TEST_F(StreamTest, ADrainedStreamKeepsItsStorageAMomentThenGivesItBack) {
  auto stream = NewStream();
  absl::Notification gate;
  ASSERT_TRUE(stream
                  ->Enqueue(
                      [&gate](const TaskResume&) -> std::optional<absl::Status> {
                        gate.WaitForNotification();
                        return absl::OkStatus();
                      },
                      0)
                  .ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(stream->Enqueue(Append(i), 0).ok());
  EXPECT_GE(stream->Stats().storage_slots, 1000u);
  gate.Notify();
  ASSERT_TRUE(Sync(*stream).ok());
  EXPECT_GE(stream->Stats().storage_slots, 1000u) << "given back as soon as it drained";
  // The release is scheduled just after the stream drained (on its worker):
  // the clock moves until it has run, a bounded number of times.
  for (int i = 0; i < 200 && stream->Stats().storage_slots > 0; ++i) {
    clock_.Advance(absl::Milliseconds(100));
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(stream->Stats().storage_slots, 0u);
  EXPECT_EQ(order().size(), 1000u);
}

TEST_F(StreamTest, ContinueOnFailureRunsLaterTasksAndReportsTheErrorOnce) {
  auto stream = NewStream();
  stream->Enqueue(Append(1), 0).IgnoreError();
  stream->Enqueue(Fail(), 42).IgnoreError();
  stream->Enqueue(Append(3), 0).IgnoreError();
  EXPECT_EQ(AclCodeOf(Sync(*stream)), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_EQ(order(), (std::vector<int>{1, 3}));
  EXPECT_TRUE(Sync(*stream).ok());  // reported once
  absl::MutexLock lock(&mu_);
  ASSERT_EQ(failures_.size(), 1u);
  EXPECT_EQ(failures_[0].task_id, 2u);
  EXPECT_EQ(failures_[0].submitter_thread, 42u);
  EXPECT_EQ(failures_[0].stream, 1u);
}

// A synchronization that comes while a failure is still being published
// (its report runs on the thread that finished the task, after the stream's
// lock) answers only after that report: the client hears of the failure,
// and runs its exception callback, before the synchronization returns.
TEST_F(StreamTest, ASynchronizationAnswersAfterTheFailureBeforeItWasReported) {
  absl::Notification reporting;
  absl::Notification release;
  std::atomic<bool> reported{false};
  auto stream = std::make_shared<Stream>(Stream::Options{1, 1, 0, 0, 0}, engine_, timer_,
                                         [&](const TaskFailure&) {
                                           reporting.Notify();
                                           release.WaitForNotification();
                                           reported = true;
                                         });
  stream->Enqueue(Fail(), 0).IgnoreError();
  ASSERT_TRUE(reporting.WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::shared_ptr<Answer> answer = StartSync(*stream, absl::InfiniteDuration());
  EXPECT_FALSE(answer->done.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  release.Notify();
  ASSERT_TRUE(answer->done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(reported);
  EXPECT_EQ(AclCodeOf(answer->status), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_TRUE(Sync(*stream).ok());  // reported once
}

TEST_F(StreamTest, StopOnFailureDiscardsUntilReported) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->SetFailureMode(FailureMode::kStop).ok());
  // Park the stream so that the failure and the following tasks are queued together.
  TaskResume release;
  absl::Notification parked;
  stream
      ->Enqueue(
          [&](const TaskResume& resume) -> std::optional<absl::Status> {
            release = resume;
            parked.Notify();
            return std::nullopt;
          },
          0)
      .IgnoreError();
  stream->Enqueue(Fail(), 0).IgnoreError();
  stream->Enqueue(Append(3), 0).IgnoreError();
  stream->Enqueue(Append(4), 0).IgnoreError();
  ASSERT_TRUE(parked.WaitForNotificationWithTimeout(absl::Seconds(10)));
  release(absl::OkStatus());
  EXPECT_EQ(AclCodeOf(Sync(*stream)), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_TRUE(order().empty());
  EXPECT_EQ(stream->Stats().discarded, 2u);
  // Reported: the stream runs again.
  stream->Enqueue(Append(5), 0).IgnoreError();
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(order(), std::vector<int>{5});
}

TEST_F(StreamTest, SynchronizeTimesOutAndPollsWithZero) {
  auto stream = NewStream();
  TaskResume release;
  absl::Notification parked;
  stream
      ->Enqueue(
          [&](const TaskResume& resume) -> std::optional<absl::Status> {
            release = resume;
            parked.Notify();
            return std::nullopt;
          },
          0)
      .IgnoreError();
  ASSERT_TRUE(parked.WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::shared_ptr<Answer> timed = StartSync(*stream, absl::Milliseconds(20));
  clock_.Advance(absl::Milliseconds(19));
  EXPECT_FALSE(timed->done.HasBeenNotified());
  clock_.Advance(absl::Milliseconds(1));  // runs the timeout before it returns
  ASSERT_TRUE(timed->done.HasBeenNotified());
  EXPECT_EQ(AclCodeOf(timed->status), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  EXPECT_EQ(AclCodeOf(Sync(*stream, absl::ZeroDuration())), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  EXPECT_FALSE(stream->Idle());
  // Parked once the task's function has returned to the worker.
  EXPECT_TRUE(
      hal::testing::Eventually([&] { return stream->Stats().state == "waiting on work"; }));
  release(absl::OkStatus());
  EXPECT_TRUE(Sync(*stream, absl::Seconds(10)).ok());
}

TEST_F(StreamTest, ParkedStreamsHoldNoWorker) {
  // 64 streams wait at once; a 65th still runs on the engine's 2 workers.
  std::vector<std::shared_ptr<Stream>> waiting;
  std::vector<TaskResume> releases(64);
  absl::Mutex releases_mu;
  for (int i = 0; i < 64; ++i) {
    waiting.push_back(NewStream(100 + i));
    waiting.back()
        ->Enqueue(
            [&, i](const TaskResume& resume) -> std::optional<absl::Status> {
              absl::MutexLock lock(&releases_mu);
              releases[i] = resume;
              return std::nullopt;
            },
            0)
        .IgnoreError();
  }
  auto runner = NewStream(2);
  runner->Enqueue(Append(1), 0).IgnoreError();
  EXPECT_TRUE(Sync(*runner, absl::Seconds(10)).ok());
  EXPECT_EQ(order(), std::vector<int>{1});
  for (int i = 0; i < 64; ++i) {
    TaskResume release;
    {
      absl::MutexLock lock(&releases_mu);
      auto parked = [&releases, i] { return static_cast<bool>(releases[i]); };
      ASSERT_TRUE(releases_mu.AwaitWithTimeout(absl::Condition(&parked), absl::Seconds(10)));
      release = releases[i];
    }
    release(absl::OkStatus());
    EXPECT_TRUE(Sync(*waiting[i], absl::Seconds(10)).ok());
  }
}

TEST_F(StreamTest, AbortDiscardsQueuedAndParkedWorkAndTellsItsWaiters) {
  auto stream = NewStream();
  absl::Notification parked;
  stream
      ->Enqueue(
          [&](const TaskResume&) -> std::optional<absl::Status> {
            parked.Notify();
            return std::nullopt;  // never resumed
          },
          0)
      .IgnoreError();
  stream->Enqueue(Append(2), 0).IgnoreError();
  ASSERT_TRUE(parked.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::Notification synchronized;
  absl::Status sync_status;
  stream->Synchronize(absl::InfiniteDuration(), [&](absl::Status status) {
    sync_status = status;
    synchronized.Notify();
  });
  stream->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
  // A waiter of discarded work never hears success.
  ASSERT_TRUE(synchronized.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(sync_status), ACL_ERROR_RT_STREAM_ABORT);
  absl::Notification closed;
  stream->Close([&] { closed.Notify(); });
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(order().empty());
  EXPECT_EQ(AclCodeOf(stream->Enqueue(Append(3), 0).status()), ACL_ERROR_RT_INVALID_HANDLE);
}

// A parked task's resume says whether the task still waited for it: after
// an abort discarded it, what the resume carries reaches nobody, and the
// caller learns so (a notify then keeps its record for the next wait).
TEST_F(StreamTest, AResumeSaysWhetherItsTaskStillWaited) {
  auto stream = NewStream();
  TaskResume resumes[2];
  absl::Notification parked[2];
  for (int i = 0; i < 2; ++i) {
    stream
        ->Enqueue(
            [&, i](const TaskResume& resume) -> std::optional<absl::Status> {
              resumes[i] = resume;
              parked[i].Notify();
              return std::nullopt;
            },
            0)
        .IgnoreError();
  }
  // The first parks; its resume lets the second run and park.
  ASSERT_TRUE(parked[0].WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(resumes[0](absl::OkStatus()));
  ASSERT_TRUE(parked[1].WaitForNotificationWithTimeout(absl::Seconds(10)));
  stream->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
  EXPECT_FALSE(resumes[1](absl::OkStatus()));
  EXPECT_FALSE(resumes[0](absl::OkStatus()));  // long done
}

// A task an abort discards while its work still runs takes no resume from
// then on: what the resume carried goes back to its sender (a notify's
// record to the next wait), and the task ends discarded, not done.
TEST_F(StreamTest, AResumeDuringAnAbortOfItsRunningTaskIsRefused) {
  auto stream = NewStream();
  absl::Notification running;
  absl::Notification aborted;
  std::atomic<int> taken{-1};
  stream
      ->Enqueue(
          [&](const TaskResume& resume) -> std::optional<absl::Status> {
            running.Notify();
            aborted.WaitForNotificationWithTimeout(absl::Seconds(10));
            taken.store(resume(absl::OkStatus()) ? 1 : 0);
            return std::nullopt;
          },
          0)
      .IgnoreError();
  ASSERT_TRUE(running.WaitForNotificationWithTimeout(absl::Seconds(10)));
  stream->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
  aborted.Notify();
  ASSERT_TRUE(hal::testing::Eventually([&] { return taken.load() >= 0; }));
  EXPECT_EQ(taken.load(), 0);
  EXPECT_TRUE(hal::testing::Eventually([&] { return stream->Stats().discarded == 1u; }));
}

TEST_F(StreamTest, CloseWaitsForQueuedWork) {
  auto stream = NewStream();
  for (int i = 0; i < 100; ++i) stream->Enqueue(Append(i), 0).IgnoreError();
  absl::Notification closed;
  stream->Close([&] { closed.Notify(); });
  EXPECT_TRUE(closed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(order().size(), 100u);
}

TEST_F(StreamTest, ResumeBeforeTheWorkerSeesThePark) {
  auto stream = NewStream();
  for (int i = 0; i < 100; ++i) {
    stream
        ->Enqueue(
            [](const TaskResume& resume) -> std::optional<absl::Status> {
              resume(absl::OkStatus());  // done at once, from inside the task
              return std::nullopt;
            },
            0)
        .IgnoreError();
  }
  EXPECT_TRUE(Sync(*stream, absl::Seconds(10)).ok());
  EXPECT_EQ(stream->Stats().completed, 100u);
}

TEST_F(StreamTest, AStaleReadyEntryRunsNothingBesideTheCurrentTurn) {
  // Both workers wait at a gate, so the stream's ready entries pile up.
  absl::Notification gate;
  for (int i = 0; i < 2; ++i) engine_.Post([&gate] { gate.WaitForNotification(); });
  auto stream = NewStream();
  ASSERT_TRUE(stream->Enqueue(Append(0), 0).ok());  // ready: entry one
  stream->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "abort"));  // entry one is stale now
  absl::Notification first_running;
  absl::Notification finish_first;
  ASSERT_TRUE(stream
                  ->Enqueue(
                      [&](const TaskResume&) -> std::optional<absl::Status> {
                        first_running.Notify();
                        finish_first.WaitForNotification();
                        absl::MutexLock lock(&mu_);
                        order_.push_back(1);
                        return absl::OkStatus();
                      },
                      0)
                  .ok());  // ready again: entry two
  ASSERT_TRUE(stream->Enqueue(Append(2), 0).ok());
  gate.Notify();
  // One worker runs task 1 from one entry; the other entry must not start
  // task 2 beside it.
  ASSERT_TRUE(first_running.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_TRUE(order().empty()) << "task 2 ran while task 1 was still running";
  finish_first.Notify();
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(order(), (std::vector<int>{1, 2}));
}

// Holds the engine's worker in a task of `stream` (returns once it does)
// until `release` is notified: what is queued meanwhile waits to be chosen.
void HoldTheWorker(Stream& stream, absl::Notification& release) {
  auto holding = std::make_shared<absl::Notification>();
  stream
      .Enqueue(
          [holding, &release](const TaskResume&) -> std::optional<absl::Status> {
            holding->Notify();
            release.WaitForNotificationWithTimeout(absl::Seconds(30));
            return absl::OkStatus();
          },
          0)
      .IgnoreError();
  ASSERT_TRUE(holding->WaitForNotificationWithTimeout(absl::Seconds(10)));
}

// Where `value` last is in `values` (0 when nowhere).
template <typename T>
size_t LastIndexOf(const std::vector<T>& values, const T& value) {
  size_t last = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == value) last = i;
  }
  return last;
}

TEST(StreamEngineTest, DeviceTimeIsSharedBetweenSessionsNotStreams) {
  hal::Timer timer;
  StreamEngine engine(1);
  absl::Mutex mu;
  std::vector<SessionId> ran;  // which session each finished task belonged to
  auto task = [&](SessionId session) -> TaskFn {
    return [&, session](const TaskResume&) -> std::optional<absl::Status> {
      absl::MutexLock lock(&mu);
      ran.push_back(session);
      return absl::OkStatus();
    };
  };
  std::vector<std::shared_ptr<Stream>> streams;
  // Session 1 floods with 200 streams; session 2 has one stream of 5 tasks.
  for (int i = 0; i < 200; ++i) {
    streams.push_back(std::make_shared<Stream>(Stream::Options{StreamId(i + 1), 1, 0, 0, 0},
                                               engine, timer, nullptr));
  }
  auto victim =
      std::make_shared<Stream>(Stream::Options{1000, 2, 0, 0, 0}, engine, timer, nullptr);
  // The single worker is held until everything is queued.
  absl::Notification release;
  HoldTheWorker(*streams[0], release);
  for (auto& stream : streams) {
    for (int t = 0; t < 5; ++t) stream->Enqueue(task(1), 0).IgnoreError();
  }
  for (int t = 0; t < 5; ++t) victim->Enqueue(task(2), 0).IgnoreError();
  release.Notify();
  absl::MutexLock lock(&mu);
  auto all_ran = [&ran] { return ran.size() == 1005u; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_ran), absl::Seconds(30)));
  // The victim's stream got a turn right after the flooding session's first:
  // all 5 of its tasks are done within the first turn or two of the other
  // session's streams, not after all 200 of them.
  EXPECT_LT(LastIndexOf(ran, SessionId{2}), 20u);
}

// A priority ranks a session's own streams only: a tenant that made every
// stream priority 0 does not starve a tenant whose stream kept priority 7,
// and within a session priority 0 still goes first.
TEST(StreamEngineTest, APriorityRanksOnlyItsOwnSessionsStreams) {
  hal::Timer timer;
  StreamEngine engine(1);
  absl::Mutex mu;
  std::vector<std::pair<SessionId, uint32_t>> ran;  // session and priority of each task
  auto task = [&](SessionId session, uint32_t priority) -> TaskFn {
    return [&, session, priority](const TaskResume&) -> std::optional<absl::Status> {
      absl::MutexLock lock(&mu);
      ran.emplace_back(session, priority);
      return absl::OkStatus();
    };
  };
  auto stream = [&](StreamId id, SessionId session, uint32_t priority) {
    return std::make_shared<Stream>(Stream::Options{id, session, 0, priority, 0}, engine, timer,
                                    nullptr);
  };
  std::vector<std::shared_ptr<Stream>> urgent;
  for (int i = 0; i < 100; ++i) urgent.push_back(stream(StreamId(i + 1), 1, 0));
  auto victim = stream(1000, 2, 7);
  auto victims_urgent = stream(1001, 2, 0);
  absl::Notification release;
  HoldTheWorker(*urgent[0], release);
  for (int t = 0; t < 5; ++t) victim->Enqueue(task(2, 7), 0).IgnoreError();
  for (auto& flooding : urgent) {
    for (int t = 0; t < 5; ++t) flooding->Enqueue(task(1, 0), 0).IgnoreError();
  }
  for (int t = 0; t < 5; ++t) victims_urgent->Enqueue(task(2, 0), 0).IgnoreError();
  release.Notify();
  absl::MutexLock lock(&mu);
  auto all_ran = [&ran] { return ran.size() == 510u; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_ran), absl::Seconds(30)));
  const size_t victim_done_at = LastIndexOf(ran, std::make_pair(SessionId{2}, 7u));
  const size_t victims_urgent_done_at = LastIndexOf(ran, std::make_pair(SessionId{2}, 0u));
  EXPECT_LT(victim_done_at, 40u) << "behind the other session's 500 priority-0 tasks";
  EXPECT_LT(victims_urgent_done_at, victim_done_at)
      << "its own priority-0 stream, made ready last, ran first";
}

// One uid may open 256 sessions: its sessions share its turns, and another
// tenant's one session gets as many as all of them together.
TEST(StreamEngineTest, DeviceTimeIsSharedBetweenTenantsThenSessions) {
  hal::Timer timer;
  StreamEngine engine(1);
  absl::Mutex mu;
  std::vector<SessionId> ran;
  auto task = [&](SessionId session) -> TaskFn {
    return [&, session](const TaskResume&) -> std::optional<absl::Status> {
      absl::MutexLock lock(&mu);
      ran.push_back(session);
      return absl::OkStatus();
    };
  };
  constexpr SessionId kVictim = 1000;
  engine.SetTenant(kVictim, Tenant(2000, nullptr));
  std::vector<std::shared_ptr<Stream>> streams;
  for (SessionId session = 1; session <= 50; ++session) {
    engine.SetTenant(session, Tenant(1000, nullptr));
    streams.push_back(std::make_shared<Stream>(Stream::Options{StreamId(session), session, 0, 0, 0},
                                               engine, timer, nullptr));
  }
  auto victim =
      std::make_shared<Stream>(Stream::Options{1000, kVictim, 0, 0, 0}, engine, timer, nullptr);
  absl::Notification release;
  HoldTheWorker(*streams[0], release);
  for (auto& stream : streams) {
    for (int t = 0; t < 5; ++t) stream->Enqueue(task(stream->options().session), 0).IgnoreError();
  }
  for (int t = 0; t < 5; ++t) victim->Enqueue(task(kVictim), 0).IgnoreError();
  release.Notify();
  absl::MutexLock lock(&mu);
  auto all_ran = [&ran] { return ran.size() == 255u; };
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_ran), absl::Seconds(30)));
  EXPECT_LT(LastIndexOf(ran, kVictim), 30u)
      << "it waited for the other tenant's sessions one by one";
}

}  // namespace
}  // namespace acld
