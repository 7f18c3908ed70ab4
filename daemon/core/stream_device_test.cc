// The core stream over a device stream (the sim's): device work is submitted
// without waiting for the work before it, completions finish tasks in order,
// host tasks wait for the device work before them, and abort and
// STOP_ON_FAILURE take submitted work back from the device.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "acl/acl_base.h"
#include "daemon/core/stream.h"
#include "daemon/core/stream_engine.h"
#include "gtest/gtest.h"
#include "hal/sim/sim_device.h"
#include "hal/sim/sim_memory.h"
#include "hal/testing/eventually.h"
#include "proto/acl/acl_status.h"

namespace acld {
namespace {

class StreamDeviceTest : public ::testing::Test {
 protected:
  StreamDeviceTest() : device_(0, 1 << 20) { buffer_ = *device_.Allocate(4096); }

  std::shared_ptr<Stream> NewStream(std::shared_ptr<DeviceShare> share = nullptr) {
    Stream::Options options{++streams_, 1, 0, 0, 0};
    options.device_share = std::move(share);
    absl::StatusOr<std::shared_ptr<Stream>> stream = Stream::Create(
        options, engine_, timer_, device_,
        [this](const TaskFailure& failure) {
          absl::MutexLock lock(&mu_);
          failures_.push_back(failure);
        });
    EXPECT_TRUE(stream.ok());
    return *stream;
  }

  static absl::Status Sync(Stream& stream) {
    auto done = std::make_shared<absl::Notification>();
    auto result = std::make_shared<absl::Status>();
    stream.Synchronize(absl::Seconds(10), [done, result](absl::Status status) {
      *result = std::move(status);
      done->Notify();
    });
    if (!done->WaitForNotificationWithTimeout(absl::Seconds(30))) {
      return absl::DeadlineExceededError("the stream did not answer within 30 s");
    }
    return *result;
  }

  // Holds the device stream at a host-callback point until Release().
  DeviceWork Hold() {
    return [this](hal::Stream& device) -> absl::StatusOr<uint64_t> {
      absl::StatusOr<uint64_t> point = device.HostCallbackPoint();
      held_stream_ = &device;
      held_ = point.value_or(0);
      ++holds_;
      return point;
    };
  }
  void Release() {
    ASSERT_TRUE(hal::testing::Eventually([this] { return holds_.load() > 0; }));
    held_stream_->ResumeCallbackPoint(held_, absl::OkStatus());
  }

  // Fills byte `index` of the buffer with `value`; counts its submission.
  DeviceWork Fill(uint64_t index, uint8_t value) {
    return [this, index, value](hal::Stream& device) -> absl::StatusOr<uint64_t> {
      ++submitted_;
      return device.Fill(hal::DeviceSpan{buffer_, index}, value, 1);
    };
  }

  uint8_t Byte(uint64_t index) { return hal::sim::SimBytes(hal::DeviceSpan{buffer_, index})[0]; }

  hal::sim::SimDevice device_;
  hal::DeviceBuffer buffer_;
  hal::Timer timer_;
  StreamEngine engine_{2};
  hal::Stream* held_stream_ = nullptr;
  uint64_t held_ = 0;
  std::atomic<int> submitted_{0};
  std::atomic<int> holds_{0};
  uint64_t streams_ = 0;
  absl::Mutex mu_;
  std::vector<TaskFailure> failures_;
};

TEST_F(StreamDeviceTest, DeviceWorkIsSubmittedWithoutWaitingForTheWorkBeforeIt) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(i, 7), "fill", 0, nullptr, nullptr, nullptr).ok());
  }
  // All of it reaches the device while its first item still holds. (The
  // state says so once the engine's turn that submitted the last is over.)
  ASSERT_TRUE(hal::testing::Eventually([&] {
    return submitted_.load() == 3 && stream->Stats().state == "waiting on hold";
  }));
  EXPECT_FALSE(stream->Idle());
  EXPECT_EQ(Byte(0), 0);
  Release();
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(0), 7);
  EXPECT_EQ(Byte(2), 7);
  EXPECT_EQ(stream->Stats().completed, 4u);
}

// A vendor runtime copies unregistered host memory synchronously, waiting for
// the stream's earlier work: such a copy goes to the device only once that
// work has left it, so that no thread waits in the vendor for work that may
// never end (here: a hold).
TEST_F(StreamDeviceTest, WorkSubmittedAloneWaitsUntilNothingOfTheStreamIsOnTheDevice) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(hal::testing::Eventually([&] { return stream->Stats().state == "waiting on hold"; }));
  DeviceWorkKind alone;
  alone.submitted_alone = true;
  ASSERT_TRUE(
      stream->EnqueueDeviceWork(Fill(0, 7), "copy", 0, nullptr, nullptr, nullptr, alone).ok());
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(1, 8), "fill", 0, nullptr, nullptr, nullptr).ok());
  absl::SleepFor(absl::Milliseconds(50));  // the engine's turn, had it submitted
  EXPECT_EQ(submitted_.load(), 0) << "submitted while the hold was on the device";
  Release();
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(submitted_.load(), 2);
  EXPECT_EQ(Byte(0), 7);
  EXPECT_EQ(Byte(1), 8);
}

TEST_F(StreamDeviceTest, WorkBehindHeldDeviceWorkIsSubmittedByTheEnqueuingThread) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(
      hal::testing::Eventually([&] { return stream->Stats().state == "waiting on hold"; }));
  // Joining the device's queue needs no worker: the caller submits it.
  std::thread::id submitter;
  ASSERT_TRUE(stream
                  ->EnqueueDeviceWork(
                      [&](hal::Stream& device) {
                        submitter = std::this_thread::get_id();
                        return Fill(0, 5)(device);
                      },
                      "fill", 0, nullptr, nullptr, nullptr)
                  .ok());
  EXPECT_EQ(submitter, std::this_thread::get_id());
  EXPECT_EQ(submitted_.load(), 1);
  EXPECT_EQ(Byte(0), 0) << "the fill ran before the work held before it";
  Release();
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(0), 5);
  EXPECT_EQ(stream->Stats().completed, 2u);
}

TEST_F(StreamDeviceTest, ASessionsStreamsPutAtMostItsShareOfTasksOnTheDevice) {
  auto share = std::make_shared<DeviceShare>(4);
  auto first = NewStream(share);
  auto second = NewStream(share);
  ASSERT_TRUE(first->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(first->EnqueueDeviceWork(Fill(i, 7), "fill", 0, nullptr, nullptr, nullptr).ok());
  }
  // The hold and three fills take the four places (a worker submits them:
  // the second stream's work must come after that, or it could take one).
  ASSERT_TRUE(hal::testing::Eventually([&] { return share->used() == 4u; }));
  ASSERT_TRUE(second->EnqueueDeviceWork(Fill(10, 8), "fill", 0, nullptr, nullptr, nullptr).ok());
  // The rest wait on acld's side.
  ASSERT_TRUE(hal::testing::Eventually([&] {
    return second->Stats().state == "waiting for a place on the device (its process has 4 of 4)";
  })) << second->Stats().state;
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(submitted_.load(), 3);
  EXPECT_EQ(share->used(), 4u);
  Release();
  EXPECT_TRUE(Sync(*first).ok());
  EXPECT_TRUE(Sync(*second).ok());
  EXPECT_EQ(submitted_.load(), 6);
  EXPECT_EQ(Byte(4), 7);
  EXPECT_EQ(Byte(10), 8);
  EXPECT_EQ(share->used(), 0u);
}

TEST_F(StreamDeviceTest, AStreamWithNothingOnTheDeviceSubmitsWhileWorkThatMayBeHeldIsThere) {
  auto share = std::make_shared<DeviceShare>(2);
  auto waiting = NewStream(share);
  auto other = NewStream(share);
  // Held until another stream's work is done, as a wait for its event is.
  ASSERT_TRUE(waiting
                  ->EnqueueDeviceWork(Hold(), "event", 0, nullptr, nullptr, nullptr,
                                      {/*may_be_held=*/true})
                  .ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        waiting->EnqueueDeviceWork(Fill(i, 1), "fill", 0, nullptr, nullptr, nullptr).ok());
  }
  ASSERT_TRUE(hal::testing::Eventually([&] { return share->used() == 2u; }));
  ASSERT_TRUE(other->EnqueueDeviceWork(Fill(20, 9), "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(Sync(*other).ok()) << "the work the wait waits for never reached the device";
  EXPECT_EQ(Byte(20), 9);
  EXPECT_EQ(Byte(0), 0);
  Release();
  EXPECT_TRUE(Sync(*waiting).ok());
  EXPECT_EQ(Byte(2), 1);
  EXPECT_EQ(share->used(), 0u);
}

TEST_F(StreamDeviceTest, AnAbortedStreamGivesBackItsPlaces) {
  auto share = std::make_shared<DeviceShare>(2);
  auto stream = NewStream(share);
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(i, 1), "fill", 0, nullptr, nullptr, nullptr).ok());
  }
  ASSERT_TRUE(hal::testing::Eventually([&] {
    return absl::StartsWith(stream->Stats().state, "waiting for a place");
  })) << stream->Stats().state;
  stream->Abort(absl::CancelledError("test"));
  EXPECT_TRUE(hal::testing::Eventually([&] { return share->used() == 0u; }));
  // The stream goes on with places of its own.
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(9, 3), "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(9), 3);
  EXPECT_EQ(Byte(1), 0);
  EXPECT_EQ(share->used(), 0u);
}

TEST_F(StreamDeviceTest, HostTasksWaitForTheDeviceWorkBeforeThem) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(0, 9), "fill", 0, nullptr, nullptr, nullptr).ok());
  std::atomic<int> seen{-1};
  ASSERT_TRUE(stream
                  ->Enqueue(
                      [&](const TaskResume&) -> std::optional<absl::Status> {
                        seen = Byte(0);
                        return absl::OkStatus();
                      },
                      0)
                  .ok());
  // The stream's turn ends at the host task: the fill is on the device and
  // the stream waits for the hold.
  ASSERT_TRUE(hal::testing::Eventually(
      [&] { return submitted_.load() == 1 && stream->Stats().state == "waiting on hold"; }));
  EXPECT_EQ(seen.load(), -1) << "a host task ran before the device work before it";
  Release();
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(seen.load(), 9);
}

TEST_F(StreamDeviceTest, DeviceDoneRunsBeforeSynchronizationsAreReleased) {
  auto stream = NewStream();
  std::atomic<bool> done{false};
  ASSERT_TRUE(stream
                  ->EnqueueDeviceWork(Fill(0, 1), "fill", 0, nullptr,
                                      [&](const absl::Status& status) { done = status.ok(); },
                                      nullptr)
                  .ok());
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_TRUE(done.load());
}

TEST_F(StreamDeviceTest, AbortTakesSubmittedWorkBackFromTheDevice) {
  auto stream = NewStream();
  std::atomic<int> discarded{0};
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(stream
                    ->EnqueueDeviceWork(Fill(i, 5), "fill", 0, [&] { ++discarded; }, nullptr,
                                        nullptr)
                    .ok());
  }
  // Submitted, and the engine's turn that submitted the last is over (or the
  // abort could come between that submit and its bookkeeping).
  ASSERT_TRUE(hal::testing::Eventually([&] {
    return submitted_.load() == 3 && stream->Stats().state == "waiting on hold";
  }));
  absl::Notification synced;
  absl::Status sync_status;
  stream->Synchronize(absl::Seconds(10), [&](absl::Status status) {
    sync_status = status;
    synced.Notify();
  });
  stream->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
  ASSERT_TRUE(synced.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(sync_status), ACL_ERROR_RT_STREAM_ABORT);
  EXPECT_EQ(discarded.load(), 3);
  EXPECT_EQ(Byte(0), 0) << "an aborted fill ran";
  EXPECT_TRUE(stream->Idle());
  // The stream takes new work afterwards.
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(0, 6), "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(0), 6);
}

// An abort from another thread while `work` is being handed to the device:
// the hand-over waits until the abort has begun (it discarded something), then
// checks that the abort does not end before the hand-over does.
class AbortDuringHandOver {
 public:
  AbortDuringHandOver(std::shared_ptr<Stream> stream, DeviceWork work)
      : stream_(std::move(stream)), work_(std::move(work)) {}

  DeviceWork HandOver() {
    return [this](hal::Stream& device) {
      submitting_.Notify();
      EXPECT_TRUE(hal::testing::Eventually([&] { return stream_->Stats().discarded >= 1; }));
      EXPECT_FALSE(aborted_.WaitForNotificationWithTimeout(absl::Milliseconds(50)))
          << "aclrtStreamAbort returned while a task was being handed over";
      return work_(device);
    };
  }
  void WaitUntilHandingOver() {
    ASSERT_TRUE(submitting_.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
  void Abort() {
    std::thread aborter([this] {
      stream_->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
      aborted_.Notify();
    });
    aborter.join();
  }

 private:
  std::shared_ptr<Stream> stream_;
  DeviceWork work_;
  absl::Notification submitting_, aborted_;
};

// An abort that comes while a task is being handed to the device (the
// stream's lock is not held meanwhile) waits for the hand-over, then takes
// the task back: it never runs, and its owner hears it was discarded. (The
// abort used to empty the device first; the task then ran there, after
// aclrtStreamAbort had returned.)
TEST_F(StreamDeviceTest, WorkAbortedWhileItIsBeingSubmittedNeverRuns) {
  auto stream = NewStream();
  std::atomic<int> discarded{0};
  // The hold on the device on its own, so that the abort finds it there.
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(hal::testing::Eventually([&] { return stream->Stats().state == "waiting on hold"; }));
  AbortDuringHandOver abort(stream, Fill(0, 5));
  // Handed over by whichever thread submits it (the enqueuing one, here).
  std::thread enqueuer([&] {
    EXPECT_TRUE(stream
                    ->EnqueueDeviceWork(abort.HandOver(), "fill", 0, [&] { ++discarded; },
                                        nullptr, nullptr)
                    .ok());
  });
  abort.WaitUntilHandingOver();
  abort.Abort();
  enqueuer.join();
  EXPECT_TRUE(hal::testing::Eventually([&] { return discarded.load() == 1 && stream->Idle(); }))
      << "discarded " << discarded.load() << ", state " << stream->Stats().state;
  EXPECT_EQ(submitted_.load(), 1) << "the fill did reach the device";
  EXPECT_EQ(Byte(0), 0) << "the aborted fill ran";
  // The stream takes new work afterwards.
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(0, 6), "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(0), 6);
}

// The same with nothing on the device to abort: the abort still waits for
// the hand-over and takes back what it handed over, and nothing queued
// behind it ever reaches the device.
TEST_F(StreamDeviceTest, AnAbortWithNothingOnTheDeviceStillWaitsForAHandOver) {
  auto stream = NewStream();
  AbortDuringHandOver abort(stream, Fill(0, 5));
  ASSERT_TRUE(stream->EnqueueDeviceWork(abort.HandOver(), "fill", 0, nullptr, nullptr, nullptr).ok());
  abort.WaitUntilHandingOver();
  // Queued behind: the abort discards it, which shows it has begun.
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(1, 7), "fill", 0, nullptr, nullptr, nullptr).ok());
  abort.Abort();
  EXPECT_TRUE(hal::testing::Eventually([&] { return stream->Idle(); })) << stream->Stats().state;
  EXPECT_EQ(submitted_.load(), 1) << "work queued behind the hand-over reached the device";
  EXPECT_EQ(Byte(1), 0);
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(1, 6), "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(1), 6);
}

TEST_F(StreamDeviceTest, AnAbortWhileTheWorkerReportsBetweenTasksStillFinishesTheStream) {
  auto stream = NewStream();
  // Shared with the worker: it may still be leaving the report when the test ends.
  auto reporting = std::make_shared<absl::Notification>();
  auto go_on = std::make_shared<absl::Notification>();
  // The fill completes at once; its report runs on the worker with no task
  // running, and holds the worker there.
  ASSERT_TRUE(stream
                  ->EnqueueDeviceWork(Fill(0, 1), "fill", 0, nullptr,
                                      [reporting, go_on](const absl::Status&) {
                                        reporting->Notify();
                                        go_on->WaitForNotification();
                                      },
                                      nullptr)
                  .ok());
  auto ran = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(stream
                  ->Enqueue(
                      [ran](const TaskResume&) -> std::optional<absl::Status> {
                        *ran = true;
                        return absl::OkStatus();
                      },
                      0)
                  .ok());
  const bool reported = reporting->WaitForNotificationWithTimeout(absl::Seconds(10));
  if (reported) stream->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
  go_on->Notify();
  ASSERT_TRUE(reported);
  EXPECT_TRUE(hal::testing::Eventually([&] { return stream->Idle(); }, absl::Seconds(5)))
      << "the discarded task never counted as finished: a synchronization would wait forever";
  EXPECT_FALSE(ran->load());
  EXPECT_EQ(stream->Stats().discarded, 1u);
}

TEST_F(StreamDeviceTest, StopOnFailureAtSubmitKeepsEarlierDeviceWorkAndDropsLaterWork) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->SetFailureMode(FailureMode::kStop).ok());
  ASSERT_TRUE(stream->EnqueueDeviceWork(Hold(), "hold", 0, nullptr, nullptr, nullptr).ok());
  const hal::Executable* builtin = device_.builtin_kernels();
  const hal::Function* trap = *builtin->GetFunction("trap");
  ASSERT_TRUE(stream
                  ->EnqueueDeviceWork(
                      [trap](hal::Stream& device) {
                        return device.Launch(*trap, hal::LaunchParams{1, "", nullptr});
                      },
                      "kernel", 0, nullptr, nullptr, nullptr)
                  .ok());
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(0, 4), "fill", 0, nullptr, nullptr, nullptr).ok());
  // The launch fails as it is submitted (a sim kernel needs its checked
  // memory), behind work still on the device: that work is kept, what
  // follows the failure is dropped, and the stream is not done before the
  // held work is.
  ASSERT_TRUE(hal::testing::Eventually([&] {
    const StreamStats stats = stream->Stats();
    return stats.failed == 1 && stats.discarded == 1;
  }));
  EXPECT_FALSE(stream->Idle());
  Release();
  EXPECT_NE(AclCodeOf(Sync(*stream)), ACL_SUCCESS);
  EXPECT_EQ(submitted_.load(), 0) << "work after a failure reached the device under STOP_ON_FAILURE";
  EXPECT_EQ(stream->Stats().completed, 1u);  // the held work
  EXPECT_EQ(stream->Stats().failed, 1u);
  EXPECT_EQ(stream->Stats().discarded, 1u);
}

// Resolves addresses inside one device buffer (what a launch's pins do).
class BufferResolver : public hal::MemoryResolver {
 public:
  explicit BufferResolver(hal::DeviceBuffer buffer) : buffer_(buffer) {}
  absl::StatusOr<hal::DeviceSpan> Resolve(uint64_t address, uint64_t bytes) override {
    const uint64_t offset = address - buffer_.address;
    if (address < buffer_.address || offset > buffer_.size || bytes > buffer_.size - offset) {
      return absl::InvalidArgumentError("outside the buffer");
    }
    return hal::DeviceSpan{buffer_, offset};
  }

 private:
  const hal::DeviceBuffer buffer_;
};

// Launches of add_one_u32 on the buffer's first word; launch `failing` fails
// as it is submitted (a range that failed its check).
std::vector<Stream::QueuedLaunch> AddOneLaunches(const hal::Device& device,
                                                 hal::DeviceBuffer buffer, int count,
                                                 int failing) {
  const hal::Function* add_one = *device.builtin_kernels()->GetFunction("add_one_u32");
  auto memory = std::make_shared<BufferResolver>(buffer);
  std::string args(8, '\0');
  std::memcpy(args.data(), &buffer.address, 8);
  std::vector<Stream::QueuedLaunch> launches;
  for (int i = 0; i < count; ++i) {
    KernelLaunch launch;
    launch.function = add_one;
    launch.params = hal::LaunchParams{1, args, memory};
    if (i == failing) {
      launch.pinned_status = AclStatus(ACL_ERROR_INVALID_PARAM, "a range outside the session");
    }
    launches.push_back({std::move(launch), 0});
  }
  return launches;
}

uint32_t Word(hal::DeviceBuffer buffer) {
  uint32_t value = 0;
  std::memcpy(&value, hal::sim::SimBytes(hal::DeviceSpan{buffer, 0}), 4);
  return value;
}

// A worker submits a run of launches with one release of the stream's lock;
// a launch that fails at its submit ends the run there, and the launches
// after it go on as the failure mode says: dropped under STOP_ON_FAILURE ...
TEST_F(StreamDeviceTest, ARunOfLaunchesStopsAtASubmitFailureUnderStopOnFailure) {
  auto stream = NewStream();
  ASSERT_TRUE(stream->SetFailureMode(FailureMode::kStop).ok());
  std::memset(hal::sim::SimBytes(hal::DeviceSpan{buffer_, 0}), 0, 4);
  ASSERT_TRUE(
      stream->EnqueueLaunches(AddOneLaunches(device_, buffer_, 7, /*failing=*/3), nullptr).ok());
  EXPECT_EQ(AclCodeOf(Sync(*stream)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Word(buffer_), 3u) << "launches after the failure ran under STOP_ON_FAILURE";
  const StreamStats stats = stream->Stats();
  EXPECT_EQ(stats.completed, 3u);
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.discarded, 3u);
  EXPECT_EQ(stats.queued, 0u);
}

// ... and run, in order, under CONTINUE_ON_FAILURE.
TEST_F(StreamDeviceTest, ARunOfLaunchesGoesOnAfterASubmitFailureUnderContinueOnFailure) {
  auto stream = NewStream();
  std::memset(hal::sim::SimBytes(hal::DeviceSpan{buffer_, 0}), 0, 4);
  ASSERT_TRUE(
      stream->EnqueueLaunches(AddOneLaunches(device_, buffer_, 200, /*failing=*/100), nullptr)
          .ok());
  EXPECT_EQ(AclCodeOf(Sync(*stream)), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(Word(buffer_), 199u);
  const StreamStats stats = stream->Stats();
  EXPECT_EQ(stats.completed, 199u);
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.discarded, 0u);
  EXPECT_EQ(stats.queued, 0u);
  ASSERT_EQ(failures_.size(), 1u);
  EXPECT_EQ(failures_[0].task_id, 101u);  // ids from 1: the 101st launch
}

// Resolves as BufferResolver does, and runs `first_use` the first time (the
// sim resolves an instant launch's memory as it is submitted).
class ResolverWithHook : public BufferResolver {
 public:
  ResolverWithHook(hal::DeviceBuffer buffer, std::function<void()> first_use)
      : BufferResolver(buffer), first_use_(std::move(first_use)) {}
  absl::StatusOr<hal::DeviceSpan> Resolve(uint64_t address, uint64_t bytes) override {
    if (auto hook = std::exchange(first_use_, nullptr)) hook();
    return BufferResolver::Resolve(address, bytes);
  }

 private:
  std::function<void()> first_use_;
};

// aclrtStreamStop while a run of launches is being handed over stops the
// run's first task once it is on the device, and only that one: here it
// finishes as it is submitted, so nothing is stopped. (The stop used to go to
// whatever the device executed after the hand-over: the busy kernel behind,
// which then failed with 507000.)
TEST_F(StreamDeviceTest, AStopThatFindsItsTaskFinishedStopsNothingElse) {
  auto stream = NewStream();
  std::memset(hal::sim::SimBytes(hal::DeviceSpan{buffer_, 0}), 0, 4);
  const hal::Executable* builtin = device_.builtin_kernels();
  absl::Status stop_status = absl::UnknownError("the stop never came");
  std::vector<Stream::QueuedLaunch> launches(2);
  launches[0].launch.function = *builtin->GetFunction("add_one_u32");
  std::string address(8, '\0');
  std::memcpy(address.data(), &buffer_.address, 8);
  launches[0].launch.params = hal::LaunchParams{
      1, address, std::make_shared<ResolverWithHook>(buffer_, [&] {
        stop_status = stream->StopRunningTask(AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped"));
      })};
  launches[1].launch.function = *builtin->GetFunction("spin_add_one_u32");
  const uint64_t busy_micros = 100000;
  std::string spin_args = address + std::string(8, '\0');
  std::memcpy(spin_args.data() + 8, &busy_micros, 8);
  launches[1].launch.params =
      hal::LaunchParams{1, spin_args, std::make_shared<BufferResolver>(buffer_)};
  ASSERT_TRUE(stream->EnqueueLaunches(std::move(launches), nullptr).ok());
  EXPECT_TRUE(Sync(*stream).ok()) << "the busy kernel behind the stopped task was stopped";
  EXPECT_TRUE(stop_status.ok()) << stop_status;
  EXPECT_EQ(Word(buffer_), 2u);
  EXPECT_EQ(stream->Stats().failed, 0u);
}

// A host task running on a worker is executing: nothing stops it, and a
// stop then leaves alone the device task queued behind it (here a busy
// kernel). (The stop used to be kept for that task and stopped it on the
// device.)
TEST_F(StreamDeviceTest, AStopWhileAHostTaskRunsStopsNothing) {
  auto stream = NewStream();
  std::memset(hal::sim::SimBytes(hal::DeviceSpan{buffer_, 0}), 0, 4);
  absl::Notification running, release;
  ASSERT_TRUE(stream
                  ->Enqueue(
                      [&](const TaskResume&) -> std::optional<absl::Status> {
                        running.Notify();
                        release.WaitForNotification();
                        return absl::OkStatus();
                      },
                      0)
                  .ok());
  KernelLaunch spin;
  spin.function = *device_.builtin_kernels()->GetFunction("spin_add_one_u32");
  std::string args(16, '\0');
  const uint64_t busy_micros = 50000;
  std::memcpy(args.data(), &buffer_.address, 8);
  std::memcpy(args.data() + 8, &busy_micros, 8);
  spin.params = hal::LaunchParams{1, args, std::make_shared<BufferResolver>(buffer_)};
  ASSERT_TRUE(stream->EnqueueLaunch(std::move(spin), 0, nullptr).ok());
  ASSERT_TRUE(running.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(stream->StopRunningTask(AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped")).ok());
  release.Notify();
  EXPECT_TRUE(Sync(*stream).ok()) << "the kernel behind the host task was stopped";
  EXPECT_EQ(Word(buffer_), 1u);
  EXPECT_EQ(stream->Stats().failed, 0u);
}

// A wait the stream holds on the host (here a task parked until resumed, as
// a notify wait is) is what executes while it waits: a stop ends it with the
// stop's error, runs its cancellation, and the work behind it runs. (The
// stop used to be kept for the device task behind the wait, which was not
// executing.)
TEST_F(StreamDeviceTest, AStopEndsAWaitTheStreamHoldsOnTheHost) {
  auto stream = NewStream();
  std::atomic<int> cancelled{0};
  std::atomic<int> parked{0};
  TaskResume resume;
  ASSERT_TRUE(stream
                  ->Enqueue(
                      [&](const TaskResume& resume_later) -> std::optional<absl::Status> {
                        resume = resume_later;
                        ++parked;
                        return std::nullopt;
                      },
                      0, [&] { ++cancelled; }, "notify")
                  .ok());
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(0, 9), "fill", 0, nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(hal::testing::Eventually(
      [&] { return parked.load() == 1 && stream->Stats().state == "waiting on notify"; }))
      << stream->Stats().state;
  ASSERT_TRUE(stream->StopRunningTask(AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped")).ok());
  EXPECT_EQ(AclCodeOf(Sync(*stream)), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_EQ(cancelled.load(), 1);
  EXPECT_EQ(Byte(0), 9) << "the work behind the stopped wait did not run";
  // The wait's own end, coming late, changes nothing.
  resume(absl::OkStatus());
  EXPECT_EQ(stream->Stats().failed, 1u);
  EXPECT_EQ(stream->Stats().completed, 1u);
  EXPECT_TRUE(stream->Idle());
}

// A host callback is a host-callback point of the device stream: the work
// after it is on the device already, held until the callback is done.
TEST_F(StreamDeviceTest, AHostPointHoldsTheWorkAfterItOnTheDeviceUntilItsWorkIsDone) {
  auto stream = NewStream();
  absl::Mutex resume_mu;
  TaskResume resume_point;
  std::atomic<int> runs{0};
  ASSERT_TRUE(stream
                  ->EnqueueHostPoint(
                      [&](const TaskResume& resume) -> std::optional<absl::Status> {
                        ++runs;
                        absl::MutexLock lock(&resume_mu);
                        resume_point = resume;
                        return std::nullopt;
                      },
                      "callback", 0, nullptr)
                  .ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(i, 4), "fill", 0, nullptr, nullptr, nullptr).ok());
  }
  ASSERT_TRUE(hal::testing::Eventually([&] {
    return submitted_.load() == 2 && runs.load() == 1 &&
           stream->Stats().state == "waiting on callback";
  }));
  EXPECT_EQ(Byte(0), 0);
  {
    absl::MutexLock lock(&resume_mu);
    resume_point(absl::OkStatus());
  }
  EXPECT_TRUE(Sync(*stream).ok());
  EXPECT_EQ(Byte(1), 4);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(stream->Stats().completed, 3u);
}

TEST_F(StreamDeviceTest, AHostPointsResultIsItsTasksStatus) {
  auto stream = NewStream();
  ASSERT_TRUE(stream
                  ->EnqueueHostPoint(
                      [](const TaskResume&) -> std::optional<absl::Status> {
                        return AclStatus(ACL_ERROR_RT_REPORT_TIMEOUT, "callback timed out");
                      },
                      "callback", 0, nullptr)
                  .ok());
  ASSERT_TRUE(stream->EnqueueDeviceWork(Fill(0, 6), "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_EQ(AclCodeOf(Sync(*stream)), ACL_ERROR_RT_REPORT_TIMEOUT);
  EXPECT_EQ(Byte(0), 6);  // CONTINUE_ON_FAILURE: the work after it ran
  absl::MutexLock lock(&mu_);
  ASSERT_EQ(failures_.size(), 1u);
  EXPECT_EQ(failures_[0].task_id, 1u);
}

// A device stream whose reports the test makes, from the threads it chooses.
class ScriptedDeviceStream final : public hal::Stream {
 public:
  absl::StatusOr<uint64_t> Copy(const hal::Transfer&) override { return Next(); }
  absl::StatusOr<uint64_t> Fill(const hal::DeviceSpan&, uint8_t, uint64_t) override {
    return Next();
  }
  absl::StatusOr<uint64_t> Launch(const hal::Function&, const hal::LaunchParams&) override {
    return Next();
  }
  absl::StatusOr<uint64_t> Reduce(const hal::Reduction&) override { return Next(); }
  absl::StatusOr<uint64_t> WaitValue(const hal::DeviceSpan&, uint64_t, uint32_t) override {
    return Next();
  }
  absl::StatusOr<uint64_t> RecordEvent(hal::Event&, uint64_t) override { return Next(); }
  absl::StatusOr<uint64_t> WaitEvent(hal::Event&, uint64_t, bool) override { return Next(); }
  absl::StatusOr<uint64_t> HostCallbackPoint() override { return Next(); }
  bool can_stop_items() const override { return true; }
  absl::Status StopItem(uint64_t sequence, const absl::Status&) override {
    absl::MutexLock lock(&mu_);
    log_.push_back("stop " + std::to_string(sequence));
    return absl::OkStatus();
  }
  int max_callback_points() const override { return 8; }
  void ResumeCallbackPoint(uint64_t sequence, absl::Status status) override {
    absl::MutexLock lock(&mu_);
    resumed_.emplace_back(sequence, std::move(status));
  }
  absl::Status SetStopOnFailure(bool stop) override {
    if (on_set_stop_on_failure) on_set_stop_on_failure(stop);
    return absl::OkStatus();
  }
  // Runs inside SetStopOnFailure: what the device does as its mode changes.
  std::function<void(bool)> on_set_stop_on_failure;
  // Runs as item `sequence` is submitted, before its submit returns.
  std::function<void(uint64_t sequence)> on_submit;
  void Abort() override {
    absl::MutexLock lock(&mu_);
    log_.push_back("abort");
  }
  // With `unreachable`, an abort cannot reach the device, and keeps what the
  // caller handed it (hal/stream.h).
  bool AbortKeeping(std::shared_ptr<void> in_use) override {
    Abort();
    absl::MutexLock lock(&mu_);
    if (!unreachable_) return true;
    kept_ = std::move(in_use);
    return false;
  }
  void MakeUnreachable() {
    absl::MutexLock lock(&mu_);
    unreachable_ = true;
  }
  // What an abort that could not reach the device kept; the device's reset
  // lets go of it.
  void Reset() {
    std::shared_ptr<void> kept;
    absl::MutexLock lock(&mu_);
    kept = std::move(kept_);
  }

  uint64_t submitted() {
    absl::MutexLock lock(&mu_);
    return next_ - 1;
  }
  std::vector<std::pair<uint64_t, absl::Status>> resumed() {
    absl::MutexLock lock(&mu_);
    return resumed_;
  }
  // "submit N", "stop N" and "abort", in the order they came.
  std::vector<std::string> log() {
    absl::MutexLock lock(&mu_);
    return log_;
  }

 private:
  uint64_t Next() {
    uint64_t sequence;
    {
      absl::MutexLock lock(&mu_);
      log_.push_back("submit " + std::to_string(next_));
      sequence = next_++;
    }
    if (on_submit) on_submit(sequence);
    return sequence;
  }

  absl::Mutex mu_;
  uint64_t next_ = 1;
  std::vector<std::string> log_;
  std::vector<std::pair<uint64_t, absl::Status>> resumed_;
  bool unreachable_ = false;
  std::shared_ptr<void> kept_;
};

// A sim device whose streams are scripted; keeps their listeners.
class ScriptedDevice final : public hal::sim::SimDevice {
 public:
  ScriptedDevice() : SimDevice(0, 1 << 20) {}
  absl::StatusOr<std::unique_ptr<hal::Stream>> CreateStream(hal::StreamOptions options) override {
    options_ = std::move(options);
    auto stream = std::make_unique<ScriptedDeviceStream>();
    stream_ = stream.get();
    return std::unique_ptr<hal::Stream>(std::move(stream));
  }
  hal::StreamOptions options_;
  ScriptedDeviceStream* stream_ = nullptr;
};

// A device may report an earlier task's failure on the thread that is
// handing it the next (the sim does, when that thread pumps its queue).
// Under STOP_ON_FAILURE the stream then aborts the device from inside its
// own hand-over: it must not wait for that hand-over to end.
class ScriptedStreamTest : public ::testing::Test {
 protected:
  ScriptedDevice device;
  hal::Timer timer;
  StreamEngine engine{2};
  // Made last, so that it goes first.
  absl::StatusOr<std::shared_ptr<Stream>> stream = Stream::Create(
      Stream::Options{1, 1, 0, 0, 0}, engine, timer, device, [](const TaskFailure&) {});

  // A fill on the device (item 1), and the engine's turn that put it there
  // over.
  void PutAFillOnTheDevice() {
    ASSERT_TRUE((*stream)
                    ->EnqueueDeviceWork([](hal::Stream& d) { return d.Fill({}, 0, 1); }, "fill",
                                        0, nullptr, nullptr, nullptr)
                    .ok());
    ASSERT_TRUE(hal::testing::Eventually([&] {
      return device.stream_->submitted() == 1 && (*stream)->Stats().state == "waiting on fill";
    }));
  }
};

// An abort the device could not take (the vendor unreachable) leaves the
// dropped work possibly running: its holds (the memory it reads and writes)
// stay with the device stream until the device's reset, and its owner still
// hears it was discarded.
TEST_F(ScriptedStreamTest, WorkAnAbortCouldNotEndKeepsItsHoldsUntilTheDevicesReset) {
  PutAFillOnTheDevice();
  device.stream_->MakeUnreachable();
  auto hold = std::make_shared<int>(0);
  std::weak_ptr<int> held = hold;
  std::atomic<int> discarded{0};
  ASSERT_TRUE((*stream)
                  ->EnqueueDeviceWork([](hal::Stream& d) { return d.Fill({}, 0, 1); }, "fill", 0,
                                      [&] { ++discarded; }, nullptr, std::move(hold))
                  .ok());
  ASSERT_TRUE(hal::testing::Eventually([&] { return device.stream_->submitted() == 2; }));
  (*stream)->Abort(AclStatus(ACL_ERROR_RT_STREAM_ABORT, "aborted"));
  EXPECT_TRUE(hal::testing::Eventually([&] { return discarded.load() == 1; }));
  EXPECT_FALSE(held.expired()) << "let go of while the device may still run it";
  device.stream_->Reset();
  EXPECT_TRUE(held.expired());
}

TEST_F(ScriptedStreamTest, AFailureReportedInsideAHandOverAbortsTheDeviceThere) {
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->SetFailureMode(FailureMode::kStop).ok());
  ASSERT_NO_FATAL_FAILURE(PutAFillOnTheDevice());
  std::atomic<int> discarded{0};
  std::atomic<bool> aborted_inside{false};
  absl::Notification enqueued;
  std::thread enqueuer([&] {
    EXPECT_TRUE((*stream)
                    ->EnqueueDeviceWork(
                        [&](hal::Stream& d) {
                          absl::StatusOr<uint64_t> sequence = d.Fill({}, 0, 1);
                          device.options_.on_complete(
                              1, AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION, "failed"));
                          const std::vector<std::string> log = device.stream_->log();
                          aborted_inside = !log.empty() && log.back() == "abort";
                          return sequence;
                        },
                        "fill", 0, [&] { ++discarded; }, nullptr, nullptr)
                    .ok());
    enqueued.Notify();
  });
  if (!enqueued.WaitForNotificationWithTimeout(absl::Seconds(10))) {
    ADD_FAILURE() << "the hand-over deadlocked on its own device abort";
    std::_Exit(1);  // the enqueuer cannot be joined
  }
  enqueuer.join();
  EXPECT_TRUE(hal::testing::Eventually([&] { return discarded.load() == 1; }))
      << "the work after the failure was not discarded";
  EXPECT_TRUE(aborted_inside.load()) << "the device was not aborted inside the hand-over";
  const std::vector<std::string> log = device.stream_->log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "abort") << "the device was not aborted after the last submit";
  EXPECT_TRUE(hal::testing::Eventually([&] { return (*stream)->Idle(); }));
}

// aclrtStreamStop while a run of launches is being handed over, when the
// run's first task has finished and its second is executing: the second is
// stopped once the run is on the device, and only it. (The stop used to go
// to the run's first task, past stopping, and was lost.)
TEST_F(ScriptedStreamTest, AStopDuringAHandOverStopsTheTaskExecutingThen) {
  ASSERT_TRUE(stream.ok());
  const hal::Function* add_one = *device.builtin_kernels()->GetFunction("add_one_u32");
  std::vector<Stream::QueuedLaunch> launches(3);
  for (Stream::QueuedLaunch& queued : launches) {
    queued.launch.function = add_one;
    queued.launch.params = hal::LaunchParams{1, std::string(8, '\0'), nullptr};
  }
  absl::Status stop_status = absl::UnknownError("the stop never came");
  device.stream_->on_submit = [&](uint64_t sequence) {
    if (sequence != 2) return;
    device.options_.on_complete(1, absl::OkStatus());
    stop_status = (*stream)->StopRunningTask(AclStatus(ACL_ERROR_RT_INTERNAL_ERROR, "stopped"));
  };
  ASSERT_TRUE((*stream)->EnqueueLaunches(std::move(launches), nullptr).ok());
  EXPECT_TRUE(hal::testing::Eventually([&] {
    const std::vector<std::string> log = device.stream_->log();
    return !log.empty() && log.back() == "stop 2";
  })) << "the task executing when the stop came was not stopped";
  EXPECT_TRUE(stop_status.ok()) << stop_status;
  const std::vector<std::string> log = device.stream_->log();
  EXPECT_EQ(log, (std::vector<std::string>{"submit 1", "submit 2", "submit 3", "stop 2"}));
}

// ACL_STOP_ON_FAILURE set while work runs: a failure the device reports as
// it changes its mode (already stopped) still finds the core stopping, which
// aborts the device; a device left stopped without that abort would hold the
// work behind the failure for ever. (The device's mode used to change first.)
TEST_F(ScriptedStreamTest, AFailureAsTheDeviceStartsStoppingIsAborted) {
  ASSERT_TRUE(stream.ok());
  ASSERT_NO_FATAL_FAILURE(PutAFillOnTheDevice());
  device.stream_->on_set_stop_on_failure = [&](bool stop) {
    if (stop) device.options_.on_complete(1, AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION, "failed"));
  };
  ASSERT_TRUE((*stream)->SetFailureMode(FailureMode::kStop).ok());
  EXPECT_TRUE(hal::testing::Eventually([&] {
    const std::vector<std::string> log = device.stream_->log();
    return !log.empty() && log.back() == "abort";
  })) << "the device stopped at the failure and nobody aborted it";
  EXPECT_EQ((*stream)->Stats().failed, 1u);
  EXPECT_TRUE(hal::testing::Eventually([&] { return (*stream)->Idle(); }));
}

// The point is reached while a failure before it is being published on
// another thread: its work waits for the publication, so the client hears of
// the failure before the callback runs.
TEST(StreamPointOrderTest, AHostPointRunsOnlyOnceTheFailureBeforeItIsPublished) {
  ScriptedDevice device;
  hal::Timer timer;
  StreamEngine engine{2};
  absl::Notification publishing, publish;
  std::atomic<int> order{0};
  std::atomic<int> failure_published_at{0};
  std::atomic<int> point_ran_at{0};
  absl::StatusOr<std::shared_ptr<Stream>> stream =
      Stream::Create(Stream::Options{1, 1, 0, 0, 0}, engine, timer, device,
                     [&](const TaskFailure&) {
                       publishing.Notify();
                       publish.WaitForNotification();
                       failure_published_at = ++order;
                     });
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)
                  ->EnqueueDeviceWork([](hal::Stream& d) { return d.Fill({}, 0, 1); }, "fill", 0,
                                      nullptr, nullptr, nullptr)
                  .ok());
  ASSERT_TRUE((*stream)
                  ->EnqueueHostPoint(
                      [&](const TaskResume&) -> std::optional<absl::Status> {
                        point_ran_at = ++order;
                        return absl::OkStatus();
                      },
                      "callback", 0, nullptr)
                  .ok());
  // Both on the device, and the engine's turn that submitted them over: a
  // point reached before then runs later, on the engine's thread.
  ASSERT_TRUE(hal::testing::Eventually([&] {
    return device.stream_->submitted() == 2 && (*stream)->Stats().state == "waiting on fill";
  }));

  std::thread reporter([&] {
    device.options_.on_complete(1, AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION, "failed"));
  });
  publishing.WaitForNotification();
  device.options_.on_callback_point(2);  // on this thread, while the failure is being published
  EXPECT_EQ(point_ran_at.load(), 0) << "the callback ran before its failure notice was handed on";
  EXPECT_TRUE(device.stream_->resumed().empty());
  publish.Notify();
  reporter.join();
  EXPECT_EQ(failure_published_at.load(), 1);
  EXPECT_EQ(point_ran_at.load(), 2);
  ASSERT_EQ(device.stream_->resumed().size(), 1u);
  EXPECT_EQ(device.stream_->resumed()[0].first, 2u);
  device.options_.on_complete(2, absl::OkStatus());
  EXPECT_TRUE((*stream)->Idle());
}

// STOP_ON_FAILURE aborts the device after a failure. Work enqueued once the
// failure was reported (which may be before that abort ran) reaches the device
// only after it, or the abort would drop it. The report waits for the failure
// notice to go out (the client counts it first).
TEST(StreamPointOrderTest, WorkAfterAReportedStopFailureIsNotDroppedByItsAbort) {
  ScriptedDevice device;
  hal::Timer timer;
  StreamEngine engine{2};
  absl::Notification publishing, publish;
  absl::StatusOr<std::shared_ptr<Stream>> stream =
      Stream::Create(Stream::Options{1, 1, 0, 0, 0}, engine, timer, device,
                     [&](const TaskFailure&) {
                       publishing.Notify();
                       publish.WaitForNotification();
                     });
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->SetFailureMode(FailureMode::kStop).ok());
  DeviceWork fill = [](hal::Stream& d) { return d.Fill({}, 0, 1); };
  ASSERT_TRUE((*stream)->EnqueueDeviceWork(fill, "fill", 0, nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(hal::testing::Eventually([&] { return device.stream_->submitted() == 1; }));

  // The failure is being published (the device abort comes after it).
  std::thread reporter([&] {
    device.options_.on_complete(1, AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION, "failed"));
  });
  publishing.WaitForNotification();
  auto synced = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::Status>();
  (*stream)->Synchronize(absl::Seconds(10), [synced, result](absl::Status status) {
    *result = status;
    synced->Notify();
  });
  EXPECT_FALSE(synced->WaitForNotificationWithTimeout(absl::Milliseconds(50)))
      << "the synchronization answered before the failure notice went out";
  publish.Notify();
  ASSERT_TRUE(synced->WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(AclCodeOf(*result), ACL_ERROR_RT_AICORE_EXCEPTION);
  ASSERT_TRUE((*stream)->EnqueueDeviceWork(fill, "fill", 0, nullptr, nullptr, nullptr).ok());
  reporter.join();
  ASSERT_TRUE(hal::testing::Eventually([&] { return device.stream_->submitted() == 2; }));
  EXPECT_EQ(device.stream_->log(), (std::vector<std::string>{"submit 1", "abort", "submit 2"}));
}

// Under STOP_ON_FAILURE a synchronization waiting for the stream answers
// last: after the failure's notice and after the notices of the work the
// failure discarded (a copy's caller hears "discarded" before its stream's
// synchronization returns).
// What a stream under STOP_ON_FAILURE tells, in order, when its first fill
// fails with a second one behind it (`second`: how that one goes to the
// device) and a synchronization waiting.
std::vector<std::string> OrderAfterAStopFailure(DeviceWorkKind second) {
  ScriptedDevice device;
  hal::Timer timer;
  StreamEngine engine{2};
  absl::Mutex mu;
  std::vector<std::string> order;
  auto note = [&](const std::string& what) {
    absl::MutexLock lock(&mu);
    order.push_back(what);
  };
  absl::StatusOr<std::shared_ptr<Stream>> stream =
      Stream::Create(Stream::Options{1, 1, 0, 0, 0}, engine, timer, device,
                     [&](const TaskFailure&) { note("failure"); });
  EXPECT_TRUE(stream.ok());
  if (!stream.ok()) return {};
  EXPECT_TRUE((*stream)->SetFailureMode(FailureMode::kStop).ok());
  DeviceWork fill = [](hal::Stream& d) { return d.Fill({}, 0, 1); };
  EXPECT_TRUE((*stream)->EnqueueDeviceWork(fill, "fill", 0, nullptr, nullptr, nullptr).ok());
  EXPECT_TRUE(hal::testing::Eventually([&] { return device.stream_->submitted() == 1; }));
  EXPECT_TRUE((*stream)
                  ->EnqueueDeviceWork(fill, "fill", 0, [&] { note("discarded"); }, nullptr,
                                      nullptr, second)
                  .ok());
  absl::Notification synced;
  (*stream)->Synchronize(absl::Seconds(10), [&](absl::Status status) {
    note(absl::StrCat("sync ", AclCodeOf(status)));
    synced.Notify();
  });
  device.options_.on_complete(1, AclStatus(ACL_ERROR_RT_AICORE_EXCEPTION, "failed"));
  EXPECT_TRUE(synced.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::MutexLock lock(&mu);
  return order;
}

const std::vector<std::string> kFailureDiscardsThenSync = {
    "failure", "discarded", absl::StrCat("sync ", int{ACL_ERROR_RT_AICORE_EXCEPTION})};

// The second fill reaches the device before the failure (its discard comes
// with the device's abort).
TEST(StreamPointOrderTest, ASynchronizationAnswersAfterTheDiscardsOfAStopFailure) {
  EXPECT_EQ(OrderAfterAStopFailure({}), kFailureDiscardsThenSync);
}

// The second fill is still queued (a copy submitted alone waits for the
// first): its discard is told before the answer too, not only the device's
// abort.
TEST(StreamPointOrderTest, ASynchronizationAnswersAfterTheDiscardsOfQueuedWorkToo) {
  DeviceWorkKind alone;
  alone.submitted_alone = true;
  EXPECT_EQ(OrderAfterAStopFailure(alone), kFailureDiscardsThenSync);
}

// A device whose host-callback points each hold something scarce says how
// many a stream may hold (8 here): the rest follow as the device drains.
TEST(StreamPointOrderTest, AStreamPutsAtMostEightHostPointsOnTheDevice) {
  ScriptedDevice device;
  hal::Timer timer;
  StreamEngine engine{2};
  absl::StatusOr<std::shared_ptr<Stream>> stream = Stream::Create(
      Stream::Options{1, 1, 0, 0, 0}, engine, timer, device, [](const TaskFailure&) {});
  ASSERT_TRUE(stream.ok());
  constexpr int kPoints = 20;
  std::atomic<int> ran{0};
  for (int i = 0; i < kPoints; ++i) {
    ASSERT_TRUE((*stream)
                    ->EnqueueHostPoint(
                        [&](const TaskResume&) -> std::optional<absl::Status> {
                          ++ran;
                          return absl::OkStatus();
                        },
                        "callback", 0, nullptr)
                    .ok());
  }
  ASSERT_TRUE(hal::testing::Eventually([&] { return device.stream_->submitted() == 8; }));
  absl::SleepFor(absl::Milliseconds(50));  // a ninth would have come by now
  EXPECT_EQ(device.stream_->submitted(), 8u);
  // The device reaches and completes them in order; the rest follow.
  for (uint64_t sequence = 1; sequence <= kPoints; ++sequence) {
    ASSERT_TRUE(hal::testing::Eventually([&] { return device.stream_->submitted() >= sequence; }))
        << "point " << sequence << " never reached the device";
    EXPECT_LE(device.stream_->submitted(), sequence + 7);
    device.options_.on_callback_point(sequence);
    // As a device does, the point completes once its host function resumed
    // it: a point reached before its submit returned runs on the engine's
    // thread, after on_callback_point returns.
    ASSERT_TRUE(hal::testing::Eventually([&] { return ran.load() == static_cast<int>(sequence); }))
        << "point " << sequence << "'s host function never ran";
    device.options_.on_complete(sequence, absl::OkStatus());
  }
  EXPECT_EQ(ran.load(), kPoints);
  EXPECT_TRUE(hal::testing::Eventually([&] { return (*stream)->Idle(); }));
}

}  // namespace
}  // namespace acld
